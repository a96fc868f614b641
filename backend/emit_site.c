/* emit_site: one launch site rewritten to the guarded dispatch (ks_emit.h).
 *
 * The translation of guard-language expressions is one pass over the
 * expression's tokens: every identifier is looked up in the guard
 * language's vocabulary and replaced by C++ over the site's expressions;
 * the user's text that comes in (arguments, the grid) is never scanned
 * again, so an argument that happens to be called `n` or `grid_x` cannot be
 * substituted twice. */
#include "ks_emit.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"

typedef struct site_ctx {
  ks_ctx *ctx;
  ks_arena *arena;
  const ks_launch *site;
  const ks_kernel *k;
  const ks_spec *spec;
  /* size variables bound to argument texts, for a buffer length */
  bool size_vars;
  const ks_emit_variant *ev;  /* the footprints */
  bool in_extent;             /* translating a footprint: a parameter is the
                                 value the kernel sees, its argument
                                 converted to the parameter's type, and
                                 every value is widened to 64 bits (the
                                 extent must not wrap where the kernel's
                                 own indices do not) */
  unsigned alias_slots;       /* run-time disjointness checks written */
  int depth;
  const char *used[64]; /* the site's expressions the translation read */
  size_t nused;
} site_ctx;

static const char *const functions[] = {"min", "max", "ceil_div", "round_up", "is_pow2",
                                        "log2", "abs"};
/* Words that stay as they are: types of casts and sizeof, dim3. */
static const char *const keep[] = {"sizeof",   "dim3",   "int",    "unsigned", "long",
                                   "short",    "char",   "float",  "double",   "size_t",
                                   "signed",   "bool",   "int8_t", "int16_t",  "int32_t",
                                   "int64_t",  "uint8_t", "uint16_t", "uint32_t", "uint64_t",
                                   "ptrdiff_t", "float2", "float4", "int2", "int4", "uint4",
                                   "double2", "__half", "__nv_bfloat16", "true", "false"};

static bool in_list(const char *const *list, size_t n, const char *s, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) == len && !strncmp(list[i], s, len))
      return true;
  return false;
}

static const char *paren(ks_arena *a, const char *e) {
  return ks_arena_printf(a, "(%s)", e);
}

static void note_used(site_ctx *c, const char *text) {
  if (c->nused < sizeof c->used / sizeof *c->used)
    c->used[c->nused++] = text;
}

/* The index of parameter `name` of the kernel, or -1. */
static int param_index(const ks_kernel *k, const char *name, size_t len) {
  for (size_t i = 0; i < k->params.len; i++) {
    const char *p = k->params.items[i].name;
    if (p && strlen(p) == len && !strncmp(p, name, len))
      return (int)i;
  }
  return -1;
}

static const char *arg_of(site_ctx *c, int i) {
  if (i < 0 || (size_t)i >= c->site->args.len)
    return NULL;
  const char *a = c->site->args.items[i];
  note_used(c, a);
  return a;
}

static int translate(site_ctx *c, const char *text, const char *end, ks_buf *out);

static const ks_spec_buffer *spec_buffer(site_ctx *c, const char *name, size_t len) {
  for (size_t i = 0; c->spec && i < c->spec->buffers.len; i++)
    if (strlen(c->spec->buffers.items[i].param) == len &&
        !strncmp(c->spec->buffers.items[i].param, name, len))
      return &c->spec->buffers.items[i];
  return NULL;
}

/* The footprint the kernel's code proves for parameter `name`, or NULL
 * (*why then says why, when known). */
static const char *extent_of(site_ctx *c, const char *name, size_t len, const char **why) {
  int i = param_index(c->k, name, len);
  *why = NULL;
  if (!c->ev || i < 0 || (size_t)i >= c->ev->nextents)
    return NULL;
  if (c->ev->extent_why)
    *why = c->ev->extent_why[i];
  return c->ev->extents ? c->ev->extents[i] : NULL;
}

/* What the user can write so that the length is known. */
static const char *spec_hint(site_ctx *c, const char *name, size_t len) {
  int i = param_index(c->k, name, len);
  bool in = i >= 0 && c->k->params.items[i].pointee_const;
  return ks_arena_printf(c->arena, "a spec line such as '%s %.*s[LENGTH]' above the kernel gives "
                                   "it (docs/spec.md)",
                         in ? "in" : "inout", (int)len, name);
}

/* The length of buffer parameter `name` in elements, in C++ at the site:
 * the spec's, else the footprint of the kernel's code. */
static int buffer_length(site_ctx *c, const char *name, size_t len, ks_buf *out) {
  const ks_spec_buffer *b = spec_buffer(c, name, len);
  const char *why = NULL, *ext = b && b->length ? NULL : extent_of(c, name, len, &why);
  if ((!b || !b->length) && !ext)
    return ks_fail(c->ctx, "the length of buffer '%.*s' is not known: no spec gives it, and the "
                           "kernel's code does not bound it%s%s%s; %s",
                   (int)len, name, why ? " (" : "", why ? why : "", why ? ")" : "",
                   spec_hint(c, name, len));
  if (c->depth > 4)
    return ks_fail(c->ctx, "buffer lengths refer to each other too deeply");
  bool saved = c->size_vars, saved_extent = c->in_extent;
  /* A spec's length is over its size variables, a footprint over the
   * kernel's parameters and the launch. */
  c->size_vars = ext == NULL;
  c->in_extent = ext != NULL;
  c->depth++;
  ks_buf_addc(out, '(');
  const char *text = ext ? ext : b->length;
  int rc = translate(c, text, text + strlen(text), out);
  ks_buf_addc(out, ')');
  c->depth--;
  c->size_vars = saved;
  c->in_extent = saved_extent;
  return rc;
}

/* The byte length of buffer `name` for disjoint(): "ksrt::unknown" when
 * no length is known at this site (the run-time check then asks the
 * driver), else the length, which ksrt::bytes_of turns into bytes (a
 * negative or overflowing count is unknown too). */
static int buffer_bytes(site_ctx *c, const char *name, size_t len, const char *ptr, ks_buf *out,
                        bool *known) {
  ks_buf l = KS_BUF_INIT;
  ks_ctx scratch;
  ks_ctx_init(&scratch, "emit");
  ks_ctx *saved = c->ctx;
  size_t nused = c->nused;
  c->ctx = &scratch;
  int rc = buffer_length(c, name, len, &l);
  c->ctx = saved;
  ks_ctx_release(&scratch);
  *known = rc == 0;
  if (*known)
    ks_buf_addf(out, "ksrt::bytes_of(%s, sizeof(*%s))", l.data, paren(c->arena, ptr));
  else {
    c->nused = nused; /* what the failed translation read is not used */
    ks_buf_adds(out, "ksrt::unknown");
  }
  ks_buf_release(&l);
  return 0;
}

/* A size variable of the spec as the argument that carries it: the
 * parameter the spec binds to exactly this variable, else the parameter of
 * the same name that the spec does not bind. */
static const char *size_var_arg(site_ctx *c, const char *name, size_t len) {
  for (size_t i = 0; c->spec && i < c->spec->scalars.len; i++) {
    const ks_binding *s = &c->spec->scalars.items[i];
    if (strlen(s->value) == len && !strncmp(s->value, name, len))
      return arg_of(c, param_index(c->k, s->name, strlen(s->name)));
  }
  for (size_t i = 0; c->spec && i < c->spec->scalars.len; i++)
    if (strlen(c->spec->scalars.items[i].name) == len &&
        !strncmp(c->spec->scalars.items[i].name, name, len))
      return NULL; /* bound to something else */
  int p = param_index(c->k, name, len);
  return p >= 0 && c->k->params.items[p].kind != KS_PARAM_POINTER ? arg_of(c, p) : NULL;
}

static const char *dim_of(site_ctx *c, const char *name, size_t len) {
  static const char *const dims[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"};
  for (int d = 0; d < 6; d++)
    if (strlen(dims[d]) == len && !strncmp(dims[d], name, len)) {
      const char *e = d < 3 ? c->site->grid : c->site->block;
      note_used(c, e);
      return ks_arena_printf(c->arena, "dim3(%s).%c", e, "xyz"[d % 3]);
    }
  return NULL;
}

/* aligned(p, N) and disjoint(p, q): the pointer arguments are parameters
 * of the kernel, whose arguments at the site are the addresses checked. */
static int guard_function(site_ctx *c, const char *name, size_t len, const char *open,
                          const char *end, const char **next, ks_buf *out) {
  const char *close = ks_ctext_matching(open, end);
  if (!close)
    return ks_fail(c->ctx, "unbalanced parentheses after '%.*s'", (int)len, name);
  ks_strings args = {0};
  ks_ctext_split(c->arena, open + 1, close, &args);
  bool is_aligned = len >= 7 && !strncmp(name + len - 7, "aligned", 7);
  if (args.len != 2)
    return ks_fail(c->ctx, "%.*s() takes two arguments", (int)len, name);
  const char *ptr[2] = {NULL, NULL};
  for (size_t a = 0; a < (is_aligned ? 1u : 2u); a++) {
    int i = param_index(c->k, args.items[a], strlen(args.items[a]));
    if (i < 0 || c->k->params.items[i].kind != KS_PARAM_POINTER)
      return ks_fail(c->ctx, "%.*s(): '%s' is not a pointer parameter", (int)len, name,
                     args.items[a]);
    if (!(ptr[a] = arg_of(c, i)))
      return ks_fail(c->ctx, "the launch passes no argument for '%s'", args.items[a]);
  }
  if (is_aligned) {
    ks_buf_addf(out, "ksrt::aligned(%s, ", paren(c->arena, ptr[0]));
    if (translate(c, args.items[1], args.items[1] + strlen(args.items[1]), out))
      return -1;
    ks_buf_addc(out, ')');
  } else {
    ks_buf call = KS_BUF_INIT;
    bool known[2];
    for (int a = 0; a < 2; a++) {
      ks_buf_addf(&call, "%s%s, ", a ? ", " : "", paren(c->arena, ptr[a]));
      buffer_bytes(c, args.items[a], strlen(args.items[a]), ptr[a], &call, &known[a]);
    }
    /* Both lengths known: an interval test. Otherwise the allocations
     * decide, through the site's cache (one slot per guard). */
    if (known[0] && known[1])
      ks_buf_addf(out, "ksrt::disjoint(%s)", call.data);
    else
      ks_buf_addf(out, "ks_alias.disjoint(%u, %s)", c->alias_slots++, call.data);
    ks_buf_release(&call);
  }
  *next = close + 1;
  return 0;
}

static int translate(site_ctx *c, const char *p, const char *end, ks_buf *out) {
  while (p < end) {
    if (isdigit((unsigned char)*p) || (*p == '.' && p + 1 < end && isdigit((unsigned char)p[1]))) {
      /* a number with its suffixes and exponent */
      const char *q = p;
      while (q < end && (isalnum((unsigned char)*q) || *q == '.' ||
                         ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'))))
        q++;
      ks_buf_add(out, p, (size_t)(q - p));
      p = q;
      continue;
    }
    if (!isalpha((unsigned char)*p) && *p != '_') {
      ks_buf_addc(out, *p++);
      continue;
    }
    const char *q = p;
    while (q < end && ks_ctext_is_ident_char(*q))
      q++;
    size_t len = (size_t)(q - p);
    const char *after = q;
    while (after < end && (*after == ' ' || *after == '\t'))
      after++;
    bool call = after < end && *after == '(';
    const char *name = !strncmp(p, "ks_", 3) && len > 3 ? p + 3 : p;
    size_t nlen = len - (size_t)(name - p);
    const char *text;
    if (call && ((nlen == 7 && !strncmp(name, "aligned", 7)) ||
                 (nlen == 8 && !strncmp(name, "disjoint", 8)))) {
      if (guard_function(c, p, len, after, end, &p, out))
        return -1;
      continue;
    }
    if (call && in_list(functions, sizeof functions / sizeof *functions, p, len)) {
      ks_buf_addf(out, "(ksrt::%.*s)", (int)len, p);
    } else if (in_list(keep, sizeof keep / sizeof *keep, p, len)) {
      ks_buf_add(out, p, len);
    } else if (!c->size_vars && (text = dim_of(c, p, len))) {
      if (c->in_extent)
        ks_buf_addf(out, "((long long)%s)", text);
      else
        ks_buf_adds(out, text);
    } else if (!c->size_vars && len == 4 && !strncmp(p, "smem", 4)) {
      ks_buf_adds(out, c->site->smem ? paren(c->arena, c->site->smem) : "0");
      if (c->site->smem)
        note_used(c, c->site->smem);
    } else if (!c->size_vars && len > 4 && !strncmp(p, "len_", 4)) {
      if (buffer_length(c, p + 4, len - 4, out))
        return -1;
    } else if (c->size_vars) {
      const char *a = size_var_arg(c, p, len);
      if (!a)
        return ks_fail(c->ctx, "the size variable '%.*s' is carried by no argument of the launch",
                       (int)len, p);
      /* In 64 bits: a length must not wrap where the kernel's indices
       * do not (n * m of two int arguments). */
      ks_buf_addf(out, "((long long)%s)", paren(c->arena, a));
    } else {
      int i = param_index(c->k, p, len);
      const char *a = i >= 0 && c->k->params.items[i].kind != KS_PARAM_POINTER ? arg_of(c, i)
                                                                              : NULL;
      if (!a)
        return ks_fail(c->ctx, "'%.*s' is not a launch variable, a scalar parameter or a buffer "
                               "length", (int)len, p);
      if (c->in_extent && c->k->params.items[i].type)
        ks_buf_addf(out, "((long long)(%s)%s)", c->k->params.items[i].type, paren(c->arena, a));
      else
        ks_buf_adds(out, paren(c->arena, a));
    }
    p = q;
  }
  return 0;
}

/* Operators with side effects: ++, --, and assignments (= not part of ==,
 * !=, <=, >=). Literals are not told apart: a '=' in a string refuses too,
 * which only costs the site. */
static bool has_side_effects(const char *e) {
  for (const char *p = e; *p; p++) {
    if ((p[0] == '+' && p[1] == '+') || (p[0] == '-' && p[1] == '-'))
      return true;
    if (*p == '=' && p[1] != '=' && !(p > e && strchr("=!<>", p[-1])))
      return true;
    if (*p == '=' && p[1] == '=')
      p++;
  }
  return false;
}

static int expr(site_ctx *c, const char *text, const char **out) {
  ks_buf b = KS_BUF_INIT;
  int rc = translate(c, text, text + strlen(text), &b);
  *out = rc ? NULL : ks_arena_strdup(c->arena, b.data);
  ks_buf_release(&b);
  return rc;
}

int ks_emit_expr(ks_ctx *ctx, ks_arena *arena, const ks_launch *site, const ks_kernel *k,
                 const ks_spec *spec, const char *text, const char **out) {
  site_ctx c = {.ctx = ctx, .arena = arena, .site = site, .k = k, .spec = spec};
  if (expr(&c, text, out))
    return -1;
  if (c.alias_slots) /* its cache is declared by ks_emit_launch */
    return ks_fail(ctx, "disjoint() of buffers whose lengths are not known needs the whole launch");
  return 0;
}

/* The launch's outputs for shadow mode (KERNELSMITH_VERIFY=1): each out or
 * inout buffer of the spec as {pointer, bytes, kind, atol, rtol}; NULL when
 * one cannot be written at this site (its length needs a size variable no
 * argument carries): the site then has no shadow mode. */
static const char *shadow_outputs(site_ctx *c) {
  if (!c->spec)
    return NULL;
  ks_buf b = KS_BUF_INIT;
  const char *r = NULL;
  size_t n = 0;
  for (size_t i = 0; i < c->spec->buffers.len; i++) {
    const ks_spec_buffer *sb = &c->spec->buffers.items[i];
    if (sb->role == KS_ROLE_IN)
      continue;
    int p = param_index(c->k, sb->param, strlen(sb->param));
    const char *arg = p >= 0 ? arg_of(c, p) : NULL;
    if (!arg)
      goto out;
    ks_buf len = KS_BUF_INIT;
    ks_ctx scratch;
    ks_ctx_init(&scratch, "emit");
    ks_ctx *saved = c->ctx;
    c->ctx = &scratch;
    int rc = buffer_length(c, sb->param, strlen(sb->param), &len);
    c->ctx = saved;
    ks_ctx_release(&scratch);
    if (rc) {
      ks_buf_release(&len);
      goto out;
    }
    ks_dtype t = sb->dtype;
    if (t == KS_DT_NONE && !ks_dtype_from_param(c->k->params.items[p].pointee
                                                    ? c->k->params.items[p].pointee : "",
                                                c->k->params.items[p].canon_pointee, &t))
      t = KS_DT_NONE;
    double atol = sb->atol, rtol = sb->rtol, da = 0, dr = 0;
    if (t != KS_DT_NONE)
      ks_dtype_tolerance(t, &da, &dr);
    if (atol < 0)
      atol = c->spec->atol >= 0 ? c->spec->atol : da;
    if (rtol < 0)
      rtol = c->spec->rtol >= 0 ? c->spec->rtol : dr;
    const char *kind = t == KS_DT_F32    ? "kind_f32"
                       : t == KS_DT_F64  ? "kind_f64"
                       : t == KS_DT_F16  ? "kind_f16"
                       : t == KS_DT_BF16 ? "kind_bf16"
                                         : "kind_bytes";
    ks_buf_addf(&b, "%s{(void *)(%s), (%s) * sizeof(*(%s)), ksrt::output::%s, %.9g, %.9g}",
                n++ ? ", " : "", arg, len.data, arg, kind, atol, rtol);
    ks_buf_release(&len);
  }
  r = n ? ks_arena_strdup(c->arena, b.data) : NULL;
out:
  ks_buf_release(&b);
  return r;
}

const char *ks_emit_c_string(ks_arena *a, const char *s) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addc(&b, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      ks_buf_addc(&b, '\\');
    ks_buf_addc(&b, *s);
  }
  ks_buf_addc(&b, '"');
  const char *r = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return r;
}

/* A template kernel's variant was verified on one instance (spec->instance:
 * the spec's, or the one captured). The guard compares the site's template
 * arguments with it: a type through std::is_same, a value by ==, constant
 * either way. A site whose arguments are deduced, or an instance that is
 * not C++ (an anonymous namespace), is refused: the variant would run on
 * instances nobody verified. */
static int instance_guard(site_ctx *c, const char **out) {
  *out = NULL;
  const ks_kernel *k = c->k;
  if (!c->spec || !c->spec->instance || !k->tparams.len)
    return 0;
  const char *inst = c->spec->instance;
  if (strstr(inst, "(anonymous"))
    return ks_fail(c->ctx, "it was verified for %s<%s> only, which cannot be named here", k->name,
                   inst);
  if (!c->site->template_args.len)
    return ks_fail(c->ctx, "it was verified for %s<%s> only, and this launch's template "
                           "arguments are deduced",
                   k->name, inst);
  ks_strings vals = {0};
  ks_ctext_split(c->arena, inst, inst + strlen(inst), &vals);
  ks_buf b = KS_BUF_INIT;
  int rc = 0;
  for (size_t i = 0; i < c->site->template_args.len && i < vals.len && i < k->tparams.len; i++) {
    const char *arg = c->site->template_args.items[i].value;
    const ks_tparam *tp = &k->tparams.items[i];
    if (!arg || tp->kind == KS_TPARAM_TEMPLATE || tp->is_pack) {
      rc = ks_fail(c->ctx, "it was verified for %s<%s> only, and template argument %zu cannot "
                           "be compared",
                   k->name, inst, i + 1);
      break;
    }
    if (tp->kind == KS_TPARAM_TYPE)
      ks_buf_addf(&b, "%sstd::is_same<%s, %s>::value", b.len ? " && " : "", arg, vals.items[i]);
    else
      ks_buf_addf(&b, "%s(%s) == (%s)", b.len ? " && " : "", arg, vals.items[i]);
  }
  if (!rc && b.len)
    *out = ks_arena_strdup(c->arena, b.data);
  ks_buf_release(&b);
  return rc;
}

int ks_emit_launch(ks_ctx *ctx, ks_arena *arena, const ks_launch *site, const char *launch_text,
                   const ks_kernel *k, const ks_spec *spec, const ks_emit_variant *ev,
                   const char **out) {
  if (site->kind != KS_LAUNCH_CHEVRON)
    return ks_fail(ctx, "only <<<>>> launches are dispatched, not %s", site->api ? site->api : "this one");
  if (site->device_side)
    return ks_fail(ctx, "a launch from device code is not dispatched");
  if (site->macro)
    return ks_fail(ctx, "the launch is inside the macro '%s'", site->macro);
  if (!site->callee || !site->grid || !site->block)
    return ks_fail(ctx, "the launch's callee or configuration is not known");
  site_ctx c = {.ctx = ctx, .arena = arena, .site = site, .k = k, .spec = spec, .ev = ev};
  const ks_variant *v = ev->v;
  ks_buf guards = KS_BUF_INIT;
  const char *grid = site->grid, *block = site->block;
  const char *smem = site->smem ? site->smem : "0", *stream = site->stream ? site->stream : "0";
  int rc = 0;
  if ((v->grid && expr(&c, v->grid, &grid)) || (v->block && expr(&c, v->block, &block)) ||
      (v->smem && expr(&c, v->smem, &smem))) {
    rc = ks_fail(ctx, "its launch policy: %s", ctx->error);
    goto done;
  }
  for (size_t i = 0; i < v->requires.len; i++) {
    const char *g;
    if (expr(&c, v->requires.items[i], &g)) {
      rc = ks_fail(ctx, "its guard '%s' cannot be checked here: %s", v->requires.items[i],
                   ctx->error);
      goto done;
    }
    ks_buf_addf(&guards, "%s%s", guards.len ? " &&\n                     " : "",
                paren(arena, g));
  }
  const char *same;
  if (instance_guard(&c, &same)) {
    rc = -1;
    goto done;
  }
  if (same)
    ks_buf_addf(&guards, "%s(%s)", guards.len ? " &&\n                     " : "", same);
  for (size_t i = 0; i < c.nused; i++)
    if (has_side_effects(c.used[i])) {
      rc = ks_fail(ctx, "'%s' has side effects, and the dispatch would evaluate it twice",
                   c.used[i]);
      goto done;
    }
  const char *names[] = {k->name};
  const char *values[] = {ev->variant_name};
  const char *callee = ks_ctext_substitute(arena, site->callee, names, values, 1);
  if (!strcmp(callee, site->callee)) {
    rc = ks_fail(ctx, "the callee '%s' does not name '%s'", site->callee, k->name);
    goto done;
  }
  ks_buf archs = KS_BUF_INIT;
  for (size_t i = 0; i < ev->narchs; i++)
    ks_buf_addf(&archs, "%s%d", i ? ", " : "", ev->archs[i]);
  ks_buf args = KS_BUF_INIT;
  for (size_t i = 0; i < site->args.len; i++)
    ks_buf_addf(&args, "%s%s", i ? ", " : "", site->args.items[i]);
  const char *original = launch_text ? launch_text : ks_arena_printf(arena, "%s<<<%s, %s%s%s%s%s>>>(%s)", site->callee,
                                         site->grid, site->block, site->smem ? ", " : "",
                                         site->smem ? site->smem : "", site->stream ? ", " : "",
                                         site->stream ? site->stream : "", args.data);
  const char *variant = ks_arena_printf(arena, "%s<<<%s, %s, %s, %s>>>(%s)", callee, grid, block,
                                        smem, stream, args.data);
  const char *outputs = shadow_outputs(&c);
  const char *verify =
      outputs ? ks_arena_printf(arena,
                                "   } else if (ksrt::verify_on()) {\n"
                                "     ksrt::shadow ks_shadow(ks_site, {%s}, %s);\n"
                                "     %s;\n"
                                "     ks_shadow.between();\n"
                                "     %s;\n"
                                "     ks_shadow.finish();\n",
                                outputs, stream, variant, original)
              : "";
  *out = ks_arena_printf(
      arena,
      "[&] {\n"
      "   static ksrt::site ks_site(%s, %s, {%s});\n"
      "%s"
      "   if (!ks_site.take(%s)) {\n"
      "     %s;\n"
      "%s"
      "   } else {\n"
      "     %s;\n"
      "   }\n"
      " }()",
      ks_emit_c_string(arena, k->name), ks_emit_c_string(arena, ev->where ? ev->where : ""), archs.data,
      c.alias_slots ? "   static thread_local ksrt::alias_cache ks_alias;\n" : "",
      guards.len ? guards.data : "true", original, verify, variant);
  ks_buf_release(&archs);
  ks_buf_release(&args);
done:
  ks_buf_release(&guards);
  return rc;
}
