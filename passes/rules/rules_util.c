/* rules_util: what the search calls to start and feed the rules (the seed,
 * a prepared rule input) and the helpers every rule shares (text edits,
 * launch policies, guards). See ks_rules.h. */
#include "ks_rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_judge.h"
#include "rules_int.h"
#include "ks_variant_file.h"

/* ---- the seed and the prepared input ------------------------------------ */

/* Where the judge says the variant's lines come from when it has no file. */
static const char *variant_file_name(const ks_variant *v) {
  return v->file ? v->file : "variant.cu";
}

int ks_rules_seed(ks_ctx *ctx, const ks_target *t, ks_arena *arena, ks_variant *out,
                  bool *is_template) {
  memset(out, 0, sizeof *out);
  *is_template = false;
  const ks_kernel *k = t->kernel;
  ks_kast ast;
  ks_kast_options opts = {.name = k->qualified_name};
  const char *path = ks_arena_printf(arena, "%s.slice.cu", k->name);
  if (ks_kast_parse(ctx, path, t->slice.source, &opts, arena, &ast)) {
    ks_fail_prefix(ctx, "cannot read the kernel's definition from its slice");
    return -1;
  }
  /* The definition as the slice has it: template header, attributes and
   * body, so macros and formatting survive. */
  unsigned begin = ast.decl_begin, end = ast.root->end;
  if (ast.body && ast.body->end > end)
    end = ast.body->end;
  if (begin >= end || end > ast.source_len)
    return ks_fail(ctx, "%s: the kernel's definition has no extent in its slice", k->qualified_name);

  ks_buf b = KS_BUF_INIT;
  /* The slice defines the kernel inside its namespaces; the variant follows
   * the slice at file scope, so it sees their names through a using
   * directive. */
  const char *last_colons = NULL;
  for (const char *p = strstr(k->qualified_name, "::"); p; p = strstr(p + 2, "::"))
    last_colons = p;
  if (last_colons && !strstr(k->qualified_name, "(anonymous"))
    ks_buf_addf(&b, "using namespace %.*s;\n", (int)(last_colons - k->qualified_name),
                k->qualified_name);
  ks_buf_add(&b, t->slice.source + begin, end - begin);
  ks_buf_addc(&b, '\n');
  const char *file = ks_arena_printf(arena, "%s_ks_variant.cu", k->name);
  int rc = ks_variant_parse(ctx, file, b.data, k->name, arena, out, is_template);
  ks_buf_release(&b);
  if (rc)
    return -1;
  if (!out->kernel_name || strcmp(out->kernel_name, ks_arena_printf(arena, "%s_ks_variant", k->name)))
    return ks_fail(ctx, "%s: the seed's kernel is '%s', not the original renamed", k->qualified_name,
                   out->kernel_name ? out->kernel_name : "(none)");
  *is_template = *is_template || k->is_template;
  return 0;
}

const char *ks_rules_unit(ks_arena *arena, const ks_target *t, const ks_variant *v,
                          size_t *variant_offset) {
  /* The judge's own text: the variant's source closes it, before a final
   * newline. */
  const char *unit = ks_judge_variant_unit(arena, t->slice.source, v);
  if (variant_offset)
    *variant_offset = strlen(unit) - strlen(v->source) - 1;
  return unit;
}

/* One intermediate child: `first` applied to the prepared parent. */
typedef struct memo_entry {
  const ks_rule *first;
  int first_param;
  ks_rule_result result;  /* applied or not, with the reason */
  bool prepared;          /* result.child parsed into `in` */
  const char *problem;    /* why it could not be parsed */
  ks_rule_input in;
} memo_entry;

struct ks_rule_memo {
  ks_arena *arena;        /* the parent's prepare arena: entries live as long as it */
  KS_ARRAY(memo_entry) entries;
};

int ks_rules_prepare(ks_ctx *ctx, const ks_target *t, const ks_variant *parent, bool is_template,
                     ks_arena *arena, ks_rule_input *out) {
  memset(out, 0, sizeof *out);
  out->parent = parent;
  out->is_template = is_template;
  out->unit = ks_rules_unit(arena, t, parent, &out->variant_offset);
  ks_kast *ast = ks_arena_alloc(arena, sizeof *ast);
  ks_kast_options opts = {.name = parent->kernel_name};
  const char *path = ks_arena_printf(arena, "%s.variant.cu", t->kernel->name);
  if (ks_kast_parse(ctx, path, out->unit, &opts, arena, ast))
    return -1;
  if (ast->decl_begin < out->variant_offset)
    return ks_fail(ctx, "%s: kernel '%s' is not defined in the variant", variant_file_name(parent),
                   parent->kernel_name);
  out->ast = ast;
  out->spec = &t->spec;
  for (size_t i = 0; i < t->nworkloads; i++)
    if (t->workloads[i].timed)
      out->timed = &t->workloads[i];
  if (!out->timed && t->nworkloads)
    out->timed = &t->workloads[0];
  if (!out->timed)
    return ks_fail(ctx, "%s: no size set to rewrite for", t->kernel->qualified_name);
  out->original_launch = &out->timed->launch;
  out->no_sizes = t->sites_only;
  for (int i = 0; i < 3; i++)
    out->unknown_launch[i] = t->launch_unknown[i];
  out->sm_count = KS_RULES_DEFAULT_SM_COUNT;
  out->max_smem_per_block = KS_RULES_DEFAULT_MAX_SMEM;
  out->target = t;
  out->memo = ks_arena_alloc(arena, sizeof *out->memo);
  memset(out->memo, 0, sizeof *out->memo);
  out->memo->arena = arena;
  return 0;
}

/* ---- composition ---------------------------------------------------------- */

static memo_entry *memo_get(ks_ctx *ctx, const ks_rule_input *in, const ks_rule *first,
                            int first_param) {
  ks_rule_memo *m = in->memo;
  for (size_t i = 0; i < m->entries.len; i++)
    if (m->entries.items[i].first == first && m->entries.items[i].first_param == first_param)
      return &m->entries.items[i];
  memo_entry *e = ks_array_push(m->arena, &m->entries);
  memset(e, 0, sizeof *e);
  e->first = first;
  e->first_param = first_param;
  ks_rule_input parent = *in;
  parent.composed = true;  /* `first` itself must not compose */
  if (first->apply(ctx, &parent, first_param, m->arena, &e->result)) {
    e->result.applied = false;
    e->result.reason = ks_arena_strdup(m->arena, ctx->error);
    return e;
  }
  if (!e->result.applied)
    return e;
  ks_variant *child = ks_arena_alloc(m->arena, sizeof *child);
  *child = e->result.child;
  if (ks_rules_prepare(ctx, in->target, child, in->is_template, m->arena, &e->in)) {
    e->problem = ks_arena_strdup(m->arena, ctx->error);
    return e;
  }
  e->in.sm_count = in->sm_count;
  e->in.max_smem_per_block = in->max_smem_per_block;
  e->in.composed = true;
  e->prepared = true;
  return e;
}

int ks_rule_then(ks_ctx *ctx, const ks_rule_input *in, const ks_rule *first, int first_param,
                 const ks_rule *second, int param, ks_arena *arena, ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (!in->target || !in->memo || in->composed) {
    out->reason = ks_arena_printf(arena, "%s cannot be applied before it here", first->name);
    return 0;
  }
  memo_entry *e = memo_get(ctx, in, first, first_param);
  if (!e->result.applied) {
    out->reason = ks_arena_printf(arena, "%s does not apply: %s", first->name,
                                  e->result.reason ? e->result.reason : "?");
    return 0;
  }
  if (!e->prepared) {
    out->reason = ks_arena_printf(arena, "%s's variant cannot be read: %s", first->name,
                                  e->problem ? e->problem : "?");
    return 0;
  }
  if (second->apply(ctx, &e->in, param, arena, out))
    return -1;
  if (!out->applied) {
    out->reason = ks_arena_printf(arena, "after %s: %s", e->result.technique ? e->result.technique
                                                                            : first->name,
                                  out->reason ? out->reason : "?");
    return 0;
  }
  const char *t1 = e->result.technique ? e->result.technique : first->name;
  const char *t2 = out->technique ? out->technique
                   : second->nchoices ? ks_arena_printf(arena, "%s=%d", second->name, param)
                                      : second->name;
  /* A first step that changes no performance (declare_index) is no
   * technique of its own. */
  out->technique = *t1 ? ks_arena_printf(arena, "%s > %s", t1, t2) : t2;
  return 0;
}

int ks_rule_apply(ks_ctx *ctx, const ks_rule *rule, const ks_rule_input *in, int param,
                  ks_arena *arena, ks_rule_result *out) {
  if (rule->apply(ctx, in, param, arena, out))
    return -1;
  if (out->applied || in->composed || !in->target || !in->memo)
    return 0;
  /* Refused as written: once more with C89 indices declared where they
   * are set (int i, j; ... j = blockIdx.x * ...), which the rules read. */
  ks_rule_result both;
  if (ks_rule_then(ctx, in, &ks_rule_declare_index, 0, rule, param, arena, &both))
    return -1;
  if (both.applied)
    *out = both;
  return 0;
}

/* ---- edits --------------------------------------------------------------- */

void ks_edits_add(ks_arena *arena, ks_edits *e, size_t begin, size_t end, const char *text) {
  ks_edit *x = ks_array_push(arena, e);
  x->begin = begin;
  x->end = end;
  x->text = text ? text : "";
}

typedef struct ordered_edit {
  const ks_edit *edit;
  size_t order;
} ordered_edit;

/* By offset; at one offset insertions come first, in the order they were
 * added, so "insert before a replacement that starts here" works. */
static int edit_cmp(const void *a, const void *b) {
  const ordered_edit *x = a, *y = b;
  if (x->edit->begin != y->edit->begin)
    return x->edit->begin < y->edit->begin ? -1 : 1;
  bool xi = x->edit->begin == x->edit->end, yi = y->edit->begin == y->edit->end;
  if (xi != yi)
    return xi ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

const char *ks_edits_apply(ks_ctx *ctx, ks_arena *arena, const char *text, const ks_edits *e) {
  size_t len = strlen(text);
  ordered_edit *sorted = ks_arena_alloc(arena, (e->len + 1) * sizeof *sorted);
  for (size_t i = 0; i < e->len; i++) {
    const ks_edit *x = &e->items[i];
    if (x->begin > x->end || x->end > len) {
      ks_fail(ctx, "edit [%zu, %zu) falls outside the text (%zu bytes)", x->begin, x->end, len);
      return NULL;
    }
    sorted[i] = (ordered_edit){x, i};
  }
  qsort(sorted, e->len, sizeof *sorted, edit_cmp);
  for (size_t i = 1; i < e->len; i++) {
    const ks_edit *a = sorted[i - 1].edit, *b = sorted[i].edit;
    if (b->begin < a->end || (b->begin == a->begin && a->begin != a->end && b->begin != b->end)) {
      ks_fail(ctx, "edits [%zu, %zu) and [%zu, %zu) overlap", a->begin, a->end, b->begin, b->end);
      return NULL;
    }
  }
  ks_buf b = KS_BUF_INIT;
  size_t at = 0;
  for (size_t i = 0; i < e->len; i++) {
    const ks_edit *x = sorted[i].edit;
    ks_buf_add(&b, text + at, x->begin - at);
    ks_buf_adds(&b, x->text);
    at = x->end;
  }
  ks_buf_add(&b, text + at, len - at);
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

/* ---- launch policies ------------------------------------------------------ */

/* One dim3-like text into up to three component expressions; missing ones
 * are "1" (as ks_expr_eval_dim3 reads them). */
static int read_dim3(ks_ctx *ctx, ks_arena *arena, const char *what, const char *text,
                     const char *out[3]) {
  const char *p = text, *end = text + strlen(text);
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
    p++;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
    end--;
  const char *inner = NULL, *inner_end = NULL;
  bool is_dim3 = false;
  if (end - p > 4 && !strncmp(p, "dim3", 4)) {
    const char *q = p + 4;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    if (q < end && (*q == '(' || *q == '{') && ks_ctext_matching(q, end) == end - 1) {
      inner = q + 1;
      inner_end = end - 1;
      is_dim3 = true;
    }
  } else if (p < end && (*p == '(' || *p == '{') && ks_ctext_matching(p, end) == end - 1) {
    inner = p + 1;
    inner_end = end - 1;
  }
  ks_strings parts = {0};
  if (inner)
    ks_ctext_split(arena, inner, inner_end, &parts);
  /* "(n + 1)" is a scalar in parentheses, not a one-element tuple. */
  if (!inner || (parts.len == 1 && !is_dim3)) {
    parts.len = 0;
    *ks_array_push(arena, &parts) = ks_ctext_trim(arena, p, end);
  }
  if (parts.len == 0 || parts.len > 3)
    return ks_fail(ctx, "%s '%s': a dim3 has one to three components", what, text);
  for (size_t i = 0; i < 3; i++) {
    out[i] = i < parts.len ? parts.items[i] : "1";
    if (!*out[i])
      return ks_fail(ctx, "%s '%s': empty component", what, text);
  }
  return 0;
}

int ks_rule_policy_read(ks_ctx *ctx, ks_arena *arena, const ks_variant *v, ks_rule_policy *out) {
  static const char *const grid[3] = {"grid_x", "grid_y", "grid_z"};
  static const char *const block[3] = {"block_x", "block_y", "block_z"};
  for (int i = 0; i < 3; i++) {
    out->grid[i] = grid[i];
    out->block[i] = block[i];
  }
  out->smem = "smem";
  if (v->grid && read_dim3(ctx, arena, "grid", v->grid, out->grid))
    return -1;
  if (v->block && read_dim3(ctx, arena, "block", v->block, out->block))
    return -1;
  if (v->smem) {
    out->smem = ks_ctext_trim(arena, v->smem, v->smem + strlen(v->smem));
    if (!*out->smem)
      return ks_fail(ctx, "smem: empty expression");
  }
  return 0;
}

static const char *write_dim3(ks_arena *arena, const char *const d[3], const char *const same[3]) {
  if (!strcmp(d[0], same[0]) && !strcmp(d[1], same[1]) && !strcmp(d[2], same[2]))
    return NULL;
  bool z1 = !strcmp(d[2], "1");
  if (z1 && !strcmp(d[1], "1"))
    return ks_arena_strdup(arena, d[0]);
  if (z1)
    return ks_arena_printf(arena, "dim3(%s, %s)", d[0], d[1]);
  return ks_arena_printf(arena, "dim3(%s, %s, %s)", d[0], d[1], d[2]);
}

void ks_rule_policy_write(ks_arena *arena, const ks_rule_policy *p, ks_variant *v) {
  static const char *const grid[3] = {"grid_x", "grid_y", "grid_z"};
  static const char *const block[3] = {"block_x", "block_y", "block_z"};
  v->grid = write_dim3(arena, p->grid, grid);
  v->block = write_dim3(arena, p->block, block);
  v->smem = p->smem && strcmp(p->smem, "smem") ? ks_arena_strdup(arena, p->smem) : NULL;
}

/* ---- children and guards ------------------------------------------------- */

static const char *dup_or_null(ks_arena *arena, const char *s) {
  return s ? ks_arena_strdup(arena, s) : NULL;
}

void ks_rule_child_init(ks_arena *arena, const ks_rule_input *in, ks_variant *child) {
  const ks_variant *p = in->parent;
  memset(child, 0, sizeof *child);
  child->source = dup_or_null(arena, p->source);
  child->kernel_name = dup_or_null(arena, p->kernel_name);
  child->grid = dup_or_null(arena, p->grid);
  child->block = dup_or_null(arena, p->block);
  child->smem = dup_or_null(arena, p->smem);
  child->file = dup_or_null(arena, p->file);
  for (size_t i = 0; i < p->requires.len; i++)
    *ks_array_push(arena, &child->requires) = ks_arena_strdup(arena, p->requires.items[i]);
}

/* Equal but for white space: "n%4==0" is "n % 4 == 0". */
static bool same_text(const char *a, const char *b) {
  for (;;) {
    while (*a == ' ' || *a == '\t')
      a++;
    while (*b == ' ' || *b == '\t')
      b++;
    if (*a != *b)
      return false;
    if (!*a)
      return true;
    a++;
    b++;
  }
}

void ks_rule_require(ks_arena *arena, ks_variant *child, const char *guard) {
  for (size_t i = 0; i < child->requires.len; i++)
    if (same_text(child->requires.items[i], guard))
      return;
  *ks_array_push(arena, &child->requires) = ks_arena_strdup(arena, guard);
}

/* ---- evaluating at the timed size ---------------------------------------- */

static unsigned long long warg_len(const ks_workload *w, const ks_warg *a) {
  unsigned long long n = 0;
  ks_warg_length(w, a, &n);
  return n;
}

/* Rewrites the error of an evaluation that met a name with no value
 * because there are no sizes: which name, and why it has none. */
static void no_size(ks_ctx *ctx, const ks_rule_input *in, const char *expr) {
  static const char tag[] = "unknown name '";
  const char *p = strstr(ctx->error, tag), *q = p ? strchr(p + sizeof tag - 1, '\'') : NULL;
  if (!q)
    return;
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(q - p - (sizeof tag - 1)), p + sizeof tag - 1);
  static const char *const parts[3] = {"grid", "block", "smem"};
  for (int i = 0; i < 3; i++)
    if (in->unknown_launch[i] && !strncmp(name, parts[i], strlen(parts[i]))) {
      char why[sizeof ctx->error];
      snprintf(why, sizeof why, "%s", in->unknown_launch[i]);
      if (strcmp(expr, name))
        ks_fail(ctx, "'%s' needs %s, which is not known without a spec or capture (%s)", expr,
                name, why);
      else
        ks_fail(ctx, "%s is not known without a spec or capture (%s)", name, why);
      return;
    }
  if (strcmp(expr, name))
    ks_fail(ctx, "'%s' needs the value of %s, which is not known without a spec or capture "
                 "(--capture FILE gives the sizes)",
            expr, name);
  else
    ks_fail(ctx, "the value of %s is not known without a spec or capture (--capture FILE gives "
                 "the sizes)",
            name);
}

int ks_rule_eval(ks_ctx *ctx, const ks_rule_input *in, const char *expr, long long *out) {
  const ks_kast *ast = in->ast;
  const ks_workload *w = in->timed;
  const ks_launch_cfg *l = in->original_launch;
  size_t cap = ast->nparams + 7;
  const char **names = ks_xcalloc(cap, sizeof *names);
  ks_value *values = ks_xcalloc(cap, sizeof *values);
  char **owned = ks_xcalloc(cap, sizeof *owned);
  size_t n = 0;
  static const char *const dims[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"};
  for (int d = 0; d < 3; d++) {
    if (!in->unknown_launch[0]) {
      names[n] = dims[d];
      values[n++] = (ks_value){.is_int = true, .i = l->grid[d]};
    }
    if (!in->unknown_launch[1]) {
      names[n] = dims[d + 3];
      values[n++] = (ks_value){.is_int = true, .i = l->block[d]};
    }
  }
  if (!in->unknown_launch[2]) {
    names[n] = "smem";
    values[n++] = (ks_value){.is_int = true, .i = (long long)l->smem};
  }
  for (size_t i = 0; i < ast->nparams && i < w->args.len; i++) {
    const ks_warg *a = &w->args.items[i];
    if (!ast->params[i]->name)
      continue;
    if (a->kind == KS_ARG_SCALAR) {
      names[n] = ast->params[i]->name;
      values[n++] = a->value;
    } else if (a->kind == KS_ARG_BUFFER && ks_warg_length(w, a, &(unsigned long long){0})) {
      size_t len = strlen(ast->params[i]->name) + 5;
      owned[i] = ks_xmalloc(len);
      memcpy(owned[i], "len_", 4);
      memcpy(owned[i] + 4, ast->params[i]->name, len - 4);
      names[n] = owned[i];
      values[n++] = (ks_value){.is_int = true,
                               .i = (long long)warg_len(w, a)};
    }
  }
  ks_expr_table table = {names, values, n, NULL};
  ks_expr_env env = {ks_expr_table_lookup, &table};
  ks_value v;
  int rc = ks_expr_eval(ctx, expr, &env, &v);
  if (rc && in->no_sizes)
    no_size(ctx, in, expr);
  if (!rc) {
    if (v.is_int)
      *out = v.i;
    else if (v.f >= (double)INT64_MIN && v.f <= (double)INT64_MAX && v.f == (double)(long long)v.f)
      *out = (long long)v.f;
    else
      rc = ks_fail(ctx, "'%s' is not an integer (%g)", expr, v.f);
  }
  for (size_t i = 0; i < cap; i++)
    free(owned[i]);
  free(owned);
  free(names);
  free(values);
  return rc;
}
