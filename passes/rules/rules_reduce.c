/* rules_reduce: `reduce_stride`, the grid-stride accumulation in front of a
 * block reduction.
 *
 * The classic first reduction kernel loads one element per thread into the
 * block's reduction (`partial[tid] = (i < n) ? in[i] : 0;`), reduces the
 * block, and folds the block's sum into the result with one atomicAdd. At
 * tens of millions of elements it launches a block per 256 elements and is
 * bound by the per-block work, not by memory. The rewrite makes each thread
 * first add up its share of the whole input in a register, striding by the
 * grid, and caps the grid at PARAM blocks per SM:
 *
 *     float ks_acc = 0;
 *     for (T j = i; j < n; j += gridDim.x * B)
 *         ks_acc += in[j];
 *     partial[tid] = ks_acc;
 *
 * It is sound when the block's only way out is atomicAdd to an address the
 * block index does not choose (so fewer blocks fold the same total), the
 * block index appears nowhere but in the element index, that index is used
 * only by the load, the kernel's reduction is a sum (no other compound
 * assignment than +=, no min/max, no other atomic), and the original launch
 * covers every element the bound admits (a `requires` guard). Float sums
 * come out in another order: the spec's tolerance decides, as the judge
 * checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules_int.h"
#include "rules_tree.h"

static const int reduce_stride_choices[] = {2, 4, 8, 16, 32};

/* threadIdx.x, or a local initialized with it and never changed. */
static bool is_thread_x(const ks_rule_input *in, const ks_anode *n) {
  n = ks_rt_strip(n, true);
  if (ks_anode_is_builtin(n, "threadIdx", 'x'))
    return true;
  if (!n || n->kind != KS_AK_DECL_REF || !n->decl || n->decl->kind != KS_AK_VAR)
    return false;
  const ks_anode *init = ks_rt_var_init(n->decl);
  return init && ks_anode_is_builtin(init, "threadIdx", 'x') && !ks_rt_modified(in->ast->body, n->decl);
}

typedef struct scan {
  const ks_rule_input *in;
  ks_arena *arena;
  unsigned block_idx, grid_dim, other_dims;
  const char *not_sum;       /* what says the reduction is not a sum */
  const char *global_write;  /* a store to a pointer parameter */
  unsigned atomics;
} scan;

/* The pointer parameter an lvalue is rooted at, or NULL. */
static const ks_anode *rooted_param(const ks_anode *n) {
  for (n = ks_rt_strip(n, true); n;) {
    if (n->kind == KS_AK_SUBSCRIPT || (n->kind == KS_AK_UNARY && n->op && !strcmp(n->op, "*")) ||
        (n->kind == KS_AK_MEMBER && n->arrow)) {
      n = n->nkids ? ks_rt_strip(n->kids[0], true) : NULL;
      continue;
    }
    if (n->kind == KS_AK_BINARY && n->op && (!strcmp(n->op, "+") || !strcmp(n->op, "-"))) {
      n = ks_rt_strip(n->kids[0], true);
      continue;
    }
    if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_PARAM && n->decl->is_pointer)
      return n->decl;
    return NULL;
  }
  return NULL;
}

static bool scan_visit(ks_anode *n, void *arg) {
  scan *s = arg;
  if (ks_anode_is_builtin(n, "blockIdx", 'x'))
    s->block_idx++;
  else if (ks_anode_is_builtin(n, "gridDim", 0))
    s->grid_dim++;
  else if (ks_anode_is_builtin(n, "blockIdx", 'y') || ks_anode_is_builtin(n, "blockIdx", 'z') ||
           ks_anode_is_builtin(n, "threadIdx", 'y') || ks_anode_is_builtin(n, "threadIdx", 'z'))
    s->other_dims++;
  /* A compound assignment to data (an array element, a floating-point
   * value) other than +=; loop counters (s *= 2) are not data. */
  if (n->kind == KS_AK_COMPOUND_ASSIGN && n->op && strcmp(n->op, "+=") && !s->not_sum &&
      n->nkids) {
    const ks_anode *lhs = ks_rt_strip(n->kids[0], true);
    if (lhs && (lhs->kind == KS_AK_SUBSCRIPT ||
                (lhs->type && (strstr(lhs->type, "float") || strstr(lhs->type, "double") ||
                               strstr(lhs->type, "half")))))
      s->not_sum = n->op;
  }
  if (n->kind == KS_AK_CALL && n->name) {
    if (!strncmp(n->name, "atomic", 6)) {
      if (strcmp(n->name, "atomicAdd") && !s->not_sum)
        s->not_sum = n->name;
      s->atomics++;
    } else if ((strstr(n->name, "max") || strstr(n->name, "min")) && !s->not_sum) {
      s->not_sum = n->name;
    }
  }
  bool write = (n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) ||
               n->kind == KS_AK_COMPOUND_ASSIGN ||
               (n->kind == KS_AK_UNARY && n->op && (!strcmp(n->op, "++") || !strcmp(n->op, "--")));
  if (write && n->nkids && rooted_param(n->kids[0]) && !s->global_write)
    s->global_write = ks_rt_text_of(s->arena, s->in, n->kids[0]);
  return true;
}

/* `i = blockIdx.x * S + threadIdx.x` (any order; threadIdx.x possibly
 * through a local): *stride is S. */
static bool block_index(const ks_rule_input *in, const ks_anode *e, const ks_anode **stride) {
  e = ks_rt_strip(e, true);
  if (!e || e->kind != KS_AK_BINARY || !e->op || strcmp(e->op, "+") || e->nkids != 2)
    return false;
  for (int t = 0; t < 2; t++) {
    const ks_anode *p = ks_rt_strip(e->kids[1 - t], true);
    if (!is_thread_x(in, e->kids[t]) || !p || p->kind != KS_AK_BINARY || !p->op ||
        strcmp(p->op, "*") || p->nkids != 2)
      continue;
    for (int u = 0; u < 2; u++)
      if (ks_anode_is_builtin(p->kids[u], "blockIdx", 'x')) {
        *stride = p->kids[1 - u];
        return true;
      }
  }
  return false;
}

static bool is_zero(ks_arena *arena, const ks_rule_input *in, const ks_anode *n) {
  n = ks_rt_strip(n, true);
  if (!n)
    return false;
  if (n->kind == KS_AK_INT_LITERAL)
    return n->int_value == 0;
  if (n->kind != KS_AK_FLOAT_LITERAL)
    return false;
  char *end;
  double v = strtod(ks_rt_text_of(arena, in, n), &end);
  return v == 0 && end && (!*end || strchr("fFlL", *end));
}

/* The load: `(i < bound) ? A[i] : 0` (or `bound > i`). */
typedef struct load {
  const ks_rule_input *in;
  ks_arena *arena;
  const ks_anode *var;
  const ks_anode *cond, *bound, *array; /* the conditional, its bound, A */
} load;

static bool find_load(ks_anode *n, void *arg) {
  load *l = arg;
  if (l->cond || n->kind != KS_AK_CONDITIONAL || n->nkids != 3)
    return !l->cond;
  const ks_anode *c = ks_rt_strip(n->kids[0], true);
  const ks_anode *a = ks_rt_strip(n->kids[1], true);
  if (!c || c->kind != KS_AK_BINARY || !c->op || c->nkids != 2 || !is_zero(l->arena, l->in, n->kids[2]) || !a ||
      a->kind != KS_AK_SUBSCRIPT || a->nkids != 2 || !ks_rt_refers_to(a->kids[1], l->var))
    return true;
  const ks_anode *bound = NULL;
  if (!strcmp(c->op, "<") && ks_rt_refers_to(c->kids[0], l->var))
    bound = c->kids[1];
  else if (!strcmp(c->op, ">") && ks_rt_refers_to(c->kids[1], l->var))
    bound = c->kids[0];
  const ks_anode *base = ks_rt_strip(a->kids[0], true);
  if (!bound || !base || base->kind != KS_AK_DECL_REF || !base->decl ||
      base->decl->kind != KS_AK_PARAM || !base->decl->is_pointer)
    return true;
  l->cond = n;
  l->bound = bound;
  l->array = base;
  return false;
}

static int apply_reduce_stride(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                               ks_rule_result *out) {
  const ks_kast *k = in->ast;
  const ks_anode *body = k->body;
  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return ks_rt_not_applicable(arena, out, "its launch policy: %s", ctx->error);
  long long grid[3], block[3];
  for (int d = 0; d < 3; d++)
    if (ks_rule_eval(ctx, in, p.grid[d], &grid[d]) || ks_rule_eval(ctx, in, p.block[d], &block[d]))
      return ks_rt_not_applicable(arena, out, "its launch does not evaluate at the timed size: %s",
                                  ctx->error);
  if (grid[1] * grid[2] * block[1] * block[2] != 1)
    return ks_rt_not_applicable(arena, out, "its launch is not 1-D");
  if (grid[0] <= (long long)in->sm_count * param)
    return ks_rt_not_applicable(arena, out, "its grid (%lld blocks) is no larger than %u SMs x %d",
                                grid[0], in->sm_count, param);

  scan s = {.in = in, .arena = arena};
  ks_anode_walk((ks_anode *)body, scan_visit, &s);
  if (!s.atomics)
    return ks_rt_not_applicable(arena, out, "no atomicAdd folds the blocks' results together");
  if (s.not_sum)
    return ks_rt_not_applicable(arena, out, "its reduction is not only a sum ('%s')", s.not_sum);
  if (s.global_write)
    return ks_rt_not_applicable(arena, out, "it stores to global memory ('%s'), not only through "
                                "atomicAdd", s.global_write);
  if (s.block_idx != 1 || s.grid_dim || s.other_dims)
    return ks_rt_not_applicable(arena, out, "it uses blockIdx.x, gridDim or other dimensions "
                                "besides one element index");

  /* The element index: a local `i = blockIdx.x * S + threadIdx.x`. */
  const ks_anode *var = NULL, *stride = NULL, *stmt = NULL;
  for (size_t i = 0; body && i < body->nkids && !var; i++) {
    const ks_anode *st = body->kids[i];
    if (st->kind != KS_AK_DECL_STMT || st->nkids != 1)
      continue;
    const ks_anode *init = ks_rt_var_init(st->kids[0]);
    if (init && block_index(in, init, &stride))
      var = st->kids[0];
  }
  if (!var)
    return ks_rt_not_applicable(arena, out, "it computes no 'i = blockIdx.x * B + threadIdx.x' at "
                                "the top of its body");
  if (ks_rt_modified(body, var))
    return ks_rt_not_applicable(arena, out, "it changes '%s'", var->name);
  load l = {.in = in, .arena = arena, .var = var};
  ks_anode_walk((ks_anode *)body, find_load, &l);
  if (!l.cond)
    return ks_rt_not_applicable(arena, out, "it has no load '(%s < n) ? a[%s] : 0' of one element "
                                "per thread", var->name, var->name);
  if (ks_rt_count_refs(arena, body, var) != 2)
    return ks_rt_not_applicable(arena, out, "it uses '%s' besides its one load", var->name);
  /* The statement holding the load, at the top level of the body, so that
   * the loop can go before it. */
  for (const ks_anode *n = l.cond; n && n != body; n = n->parent)
    if (n->parent == body)
      stmt = n;
  if (!stmt || stmt->from_macro || l.cond->from_macro || stmt->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its load is not a statement of the kernel's body "
                                "written outside macros");
  const ks_anode *bound = ks_rt_strip(l.bound, true);
  const char *bound_text = ks_rt_text_of(arena, in, bound);
  const char *value_type = l.cond->type ? l.cond->type : NULL;
  if (value_type && !strncmp(value_type, "const ", 6))
    value_type += 6;
  if (!value_type || strchr(value_type, '<'))
    return ks_rt_not_applicable(arena, out, "the loaded value's type is not known");

  /* The original must have covered every element the bound admits. */
  const char *cover = ks_arena_printf(arena, "%s <= %s * %s", ks_rt_paren(arena, bound_text),
                                      ks_rt_paren(arena, p.grid[0]), ks_rt_paren(arena, p.block[0]));
  if (!ks_rt_guard_evaluates(in, cover))
    return ks_rt_not_applicable(arena, out, "its bound '%s' is not an expression of the launch "
                                "and the scalar parameters", bound_text);
  const char *new_grid = ks_arena_printf(arena, "min(%s, %u * %d)", p.grid[0], in->sm_count, param);
  const char *itype = var->type ? var->type : "int";
  if (!strncmp(itype, "const ", 6))
    itype += 6;
  const char *stride_text = ks_rt_text_of(arena, in, stride);
  const char *no_wrap = NULL;
  if (!ks_rt_is_64bit_type(itype)) {
    const char *limit = strstr(itype, "unsigned") || strstr(itype, "uint") ? "4294967296"
                                                                          : "2147483648";
    no_wrap = ks_arena_printf(arena, "%s + %s * %s <= %s", ks_rt_paren(arena, bound_text),
                              new_grid, ks_rt_paren(arena, p.block[0]), limit);
  }

  const char *text = in->parent->source;
  const char *acc = ks_rt_fresh(arena, text, "ks_acc");
  const char *j = ks_rt_fresh(arena, text, "ks_j");
  const char *indent = ks_rt_line_indent(arena, in->unit, stmt->begin);
  const char *array = ks_rt_text_of(arena, in, l.array);
  const char *loop = ks_arena_printf(
      arena,
      "// Each thread first adds up its share of the input, striding by the grid.\n"
      "%s%s %s = 0;\n"
      "%sfor (%s %s = %s; %s < %s; %s += gridDim.x * %s)\n"
      "%s    %s += %s[%s];\n%s",
      indent, value_type, acc, indent, itype, j, var->name, j,
      ks_rt_paren(arena, ks_rt_text_of(arena, in, l.bound)), j, ks_rt_paren(arena, stride_text),
      indent, acc, array, j, indent);
  ks_edits e = {0};
  size_t at = ks_rt_src_at(in, stmt->begin);
  ks_edits_add(arena, &e, at, at, loop);
  ks_edits_add(arena, &e, ks_rt_src_at(in, l.cond->begin), ks_rt_src_at(in, l.cond->end), acc);
  if (ks_rt_finish(ctx, in, arena, &e, ks_arena_printf(arena, "reduce_stride=%d", param), out))
    return -1;
  p.grid[0] = new_grid;
  ks_rule_policy_write(arena, &p, &out->child);
  ks_rule_require(arena, &out->child, cover);
  if (no_wrap)
    ks_rule_require(arena, &out->child, no_wrap);
  return 0;
}

const ks_rule ks_rule_reduce_stride = {
    "reduce_stride",
    "one element per thread into a block reduction folded by atomicAdd becomes a grid-stride "
    "sum in a register first, over a grid capped at PARAM blocks per SM",
    false,
    reduce_stride_choices,
    sizeof reduce_stride_choices / sizeof *reduce_stride_choices,
    apply_reduce_stride};
