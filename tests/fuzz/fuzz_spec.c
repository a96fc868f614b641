/* fuzz_spec: the spec parser (frontend/spec_parse.c, ks_spec_parse) on any
 * text, and what it accepts checked, resolved and used as the kernel's
 * inputs, as `optimize` would (spec_resolve.c).
 *
 * Input: a spec's text (comment markers allowed, as in an annotation),
 * optionally followed by a line "----" and a variant's launch policy and
 * guards, one per line: "grid EXPR", "block EXPR", "smem EXPR",
 * "requires EXPR" (what a variant file or an LLM's JSON block gives).
 *
 * The kernel is made up from the spec, since the parser's part is
 * libclang-free: a pointer parameter per buffer (of its element type),
 * a scalar per `scalar` line (of a type chosen by its name) and per size
 * variable of the first size set, template parameters when there is an
 * `instance`. Each size set (at most 8) is then resolved; where that works,
 * the variant's policy and guards are evaluated on the workload.
 *
 * Invariants: every failure leaves a message; a resolved workload has one
 * argument per parameter, each buffer argument naming a buffer; a launch
 * has no zero dimension. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ks_specs.h"

/* The C spelling of an element type, as clang would give a parameter. */
static const char *c_type(ks_dtype t) {
  switch (t) {
  case KS_DT_F16: return "__half";
  case KS_DT_BF16: return "__nv_bfloat16";
  case KS_DT_F64: return "double";
  case KS_DT_I8: return "signed char";
  case KS_DT_U8: return "unsigned char";
  case KS_DT_I16: return "short";
  case KS_DT_U16: return "unsigned short";
  case KS_DT_I32: return "int";
  case KS_DT_U32: return "unsigned int";
  case KS_DT_I64: return "long long";
  case KS_DT_U64: return "unsigned long long";
  default: return "float";
  }
}

static bool has_param(const ks_kernel *k, const char *name) {
  for (size_t i = 0; i < k->params.len; i++)
    if (!strcmp(k->params.items[i].name, name))
      return true;
  return false;
}

static void add_scalar(ks_arena *a, ks_kernel *k, const char *name) {
  static const char *const types[] = {"int", "float", "long long", "unsigned int", "double",
                                      "size_t", "__half", "short"};
  if (has_param(k, name))
    return;
  ks_param *p = ks_array_push(a, &k->params);
  p->name = name;
  p->type = types[(unsigned char)name[0] % (sizeof types / sizeof *types)];
  p->kind = KS_PARAM_SCALAR;
}

static void make_kernel(ks_arena *a, const ks_spec *spec, ks_kernel *k) {
  memset(k, 0, sizeof *k);
  k->name = k->qualified_name = "fuzz_kernel";
  k->signature = "fuzz_kernel(...)";
  for (size_t i = 0; i < spec->buffers.len; i++) {
    const ks_spec_buffer *b = &spec->buffers.items[i];
    if (has_param(k, b->param))
      continue;
    ks_param *p = ks_array_push(a, &k->params);
    p->name = b->param;
    p->kind = KS_PARAM_POINTER;
    p->pointee = c_type(b->dtype);
    p->pointee_const = b->role == KS_ROLE_IN;
    p->type = ks_arena_printf(a, "%s%s *", p->pointee_const ? "const " : "", p->pointee);
  }
  for (size_t i = 0; i < spec->scalars.len; i++)
    add_scalar(a, k, spec->scalars.items[i].name);
  if (spec->sizes.len)
    for (size_t i = 0; i < spec->sizes.items[0].vars.len; i++)
      add_scalar(a, k, spec->sizes.items[0].vars.items[i].name);
  if (spec->instance) {
    /* as many template parameters as the instance has commas and one */
    size_t n = 1;
    for (const char *c = spec->instance; *c; c++)
      n += *c == ',';
    k->is_template = true;
    for (size_t i = 0; i < n && i < 4; i++) {
      ks_tparam *t = ks_array_push(a, &k->tparams);
      t->kind = i % 2 ? KS_TPARAM_VALUE : KS_TPARAM_TYPE;
      t->name = ks_arena_printf(a, "T%zu", i);
      t->type = i % 2 ? "int" : NULL;
      t->default_arg = i ? "T0" : NULL;
    }
  }
}

/* The variant part of the input: "grid EXPR" ... one per line. */
static void read_variant(ks_arena *a, char *text, ks_variant *v) {
  memset(v, 0, sizeof *v);
  v->kernel_name = "fuzz_kernel_ks_variant";
  v->file = "fuzz.variant";
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "grid ", 5))
      v->grid = ks_arena_strdup(a, line + 5);
    else if (!strncmp(line, "block ", 6))
      v->block = ks_arena_strdup(a, line + 6);
    else if (!strncmp(line, "smem ", 5))
      v->smem = ks_arena_strdup(a, line + 5);
    else if (!strncmp(line, "requires ", 9))
      *ks_array_push(a, &v->requires) = ks_arena_strdup(a, line + 9);
  }
}

static void check_workload(const ks_kernel *k, const ks_workload *w) {
  fuzz_check(w->args.len == k->params.len);
  for (size_t i = 0; i < w->args.len; i++)
    if (w->args.items[i].kind == KS_ARG_BUFFER)
      fuzz_check(w->args.items[i].buffer < w->buffers.len);
}

static void check_launch(const ks_launch_cfg *c) {
  for (int d = 0; d < 3; d++)
    fuzz_check(c->grid[d] && c->block[d]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  char *variant_text = strstr(text, "\n----\n");
  if (variant_text) {
    *variant_text = '\0';
    variant_text += 6;
  }
  ks_ctx ctx;
  fuzz_ctx(&ctx);
  ks_arena arena = KS_ARENA_INIT;
  ks_spec spec;
  if (ks_spec_parse(&ctx, "fuzz.cu", 1, text, &arena, &spec)) {
    fuzz_check_error(&ctx);
    goto out;
  }
  ks_kernel k;
  make_kernel(&arena, &spec, &k);
  if (ks_spec_check(&ctx, &spec, &k)) {
    fuzz_check_error(&ctx);
    goto out;
  }
  if (k.tparams.len && !ks_spec_instance(&ctx, &spec, &k, &arena))
    fuzz_check_error(&ctx);
  ks_variant v;
  read_variant(&arena, variant_text ? variant_text : (char[]){""}, &v);
  for (size_t s = 0; s < spec.sizes.len && s < 8; s++) {
    ks_workload w;
    if (ks_spec_resolve(&ctx, &spec, &k, NULL, s, &arena, &w)) {
      fuzz_check_error(&ctx);
      continue;
    }
    check_workload(&k, &w);
    check_launch(&w.launch);
    ks_launch_cfg cfg;
    bool hold;
    if (ks_variant_resolve(&ctx, &v, &k, &w, &cfg, &hold))
      fuzz_check_error(&ctx);
    else if (hold)
      check_launch(&cfg);
  }
out:
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  free(text);
  return 0;
}
