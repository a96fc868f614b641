/* rules_split_cols: split_cols, the rewrite that spreads one output's long
 * loop over several threads of a 2-D block.
 *
 *   split_cols   a 1-D kernel with one thread per output j (column access:
 *                consecutive threads read consecutive addresses, coalesced,
 *                but there are few threads and each loops long) becomes X
 *                outputs per block times S slices along y: thread (tx, ty)
 *                sums the iterations ty, ty + S, ... of the loop into a
 *                register, the S partial sums meet in shared memory and are
 *                added in a fixed order (the same bits on every run), and
 *                the thread of slice 0 does what the original did after
 *                its loop. PARAM = X * 100 + S.
 *
 *                With G * 10000 added (G 16 or 32), a launch whose X-wide
 *                blocks cannot fill the device (a few thousand outputs on
 *                132 SMs) also splits the loop over up to G blocks along
 *                the grid's y, as many as bring it to two blocks per SM:
 *                block (bx, by) sums the iterations by * S + ty, stepping
 *                S * gridDim.y, and adds its partial sum to out[j] with
 *                atomicAdd. Only for a loop that sums straight into out[j]
 *                (`y[j] += e`, nothing stored before or after it): the
 *                original's `y[j] = y[j] + sum` is then the same sum in
 *                another order, which the judge's tolerance decides; an
 *                integer sum is exact in any order.
 *
 * The shape it reads, in any of the loop spellings rules_meaning.h knows:
 *
 *   int j = blockIdx.x * blockDim.x + threadIdx.x;  declarations
 *   if (j < n) {                  (or: if (j >= n) return; and the rest)
 *     declarations, y[j] = v;     (pure initializers; stores to y[j])
 *     for (i = a; i < b; i++)  acc += e;   or  y[j] += e;
 *     what follows the loop       (stores to y[j], local assignments)
 *   }
 *
 * The kernel body is written anew from those pieces, so that every thread
 * of the block reaches the one __syncthreads (the bounds check is taken
 * twice, around the loop and around the epilogue). docs/rules.md gives the
 * conditions and the reasoning. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_meaning.h"
#include "rules_tree.h"

typedef struct split {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_kast *k;
  ks_meaning *meaning;
  const ks_anode *jvar, *jinit;
  ks_rt_nodes top;           /* declarations before the bounds check */
  const char *cond;          /* the bounds check's text, true for in-range */
  ks_rt_nodes pre_decls;     /* declarations before the loop (hoisted) */
  ks_rt_nodes pre_stores;    /* y[j] = v before the loop (moved after it) */
  const ks_anode *loop;
  ks_loop_view view;
  const ks_anode *update;    /* the loop's one statement */
  const ks_anode *acc;       /* the local it sums into, or NULL: into out[j] */
  const ks_anode *target;    /* out[j] of the update (global form) */
  const ks_anode *term;      /* e */
  const ks_anode *out;       /* the output buffer's PARAM */
  ks_rt_nodes post;          /* statements after the loop */
  const char *why;
} split;

/* The first reason it does not apply is kept. */
#define split_fail(s, ...) ks_rt_why((s)->arena, &(s)->why, __VA_ARGS__)

static bool is_memory(const ks_anode *n) {
  return n && (n->kind == KS_AK_SUBSCRIPT || ks_rt_is_op(n, KS_AK_UNARY, "*") ||
               (n->kind == KS_AK_MEMBER && n->arrow));
}

/* A statement's text with its semicolon. */
static const char *stmt_text(split *s, const ks_anode *n) {
  unsigned end = ks_rt_stmt_end(s->in->unit, n);
  return ks_arena_strndup(s->arena, s->in->unit + n->begin, end - n->begin);
}

/* What an expression may contain: no assignments, no calls but pure ones,
 * no memory reads when `reads` is false. */
static bool check_expr(split *s, const ks_anode *e, bool reads, const char *where) {
  if (!e)
    return true;
  ks_rt_nodes all = ks_rt_collect(s->arena, e);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind == KS_AK_CALL && !ks_rt_is_pure_call(ks_rt_callee(s->arena, n)))
      return split_fail(s, "it calls '%s' %s", ks_rt_callee(s->arena, n), where);
    if (ks_rt_is_assignment(n) || ks_rt_is_op(n, KS_AK_UNARY, "++") ||
        ks_rt_is_op(n, KS_AK_UNARY, "--"))
      return split_fail(s, "it assigns inside an expression %s ('%s')", where,
                        ks_rt_text_of(s->arena, s->in, n));
    if (!reads && is_memory(n))
      return split_fail(s, "it reads memory %s ('%s'), which threads outside the bounds would "
                           "then read too",
                        where, ks_rt_text_of(s->arena, s->in, n));
  }
  return true;
}

/* `out[j]`, with out a pointer parameter and j the global index itself. */
static const ks_anode *output_param(split *s, const ks_anode *m) {
  m = ks_rt_strip(m, false);
  if (!m || m->kind != KS_AK_SUBSCRIPT || m->nkids != 2)
    return NULL;
  const ks_anode *b = ks_rt_strip(m->kids[0], true), *i = ks_rt_strip(m->kids[1], true);
  if (!b || b->kind != KS_AK_DECL_REF || !b->decl || b->decl->kind != KS_AK_PARAM ||
      !b->decl->is_pointer)
    return NULL;
  if (!i || i->kind != KS_AK_DECL_REF || i->decl != s->jvar)
    return NULL;
  return b->decl;
}

/* A store outside the loop: to out[j] of the one output buffer. */
static bool check_store(split *s, const ks_anode *lhs) {
  const ks_anode *p = output_param(s, lhs);
  if (!p)
    return split_fail(s, "it writes '%s', which is not its output at the global index",
                      ks_rt_text_of(s->arena, s->in, lhs));
  if (s->out && s->out != p)
    return split_fail(s, "it writes two buffers ('%s' and '%s')", s->out->name, p->name);
  s->out = p;
  return true;
}

/* The global index j, declared at the top of the body. */
static bool find_index(split *s) {
  const ks_anode *body = s->k->body;
  size_t i = 0;
  for (; body && i < body->nkids; i++) {
    const ks_anode *st = body->kids[i];
    if (st->kind != KS_AK_DECL_STMT)
      break;
    for (size_t v = 0; v < st->nkids; v++) {
      const ks_anode *init = ks_rt_var_init(st->kids[v]);
      if (!s->jvar && init && ks_rt_global_index(init, 'x', NULL)) {
        s->jvar = st->kids[v];
        s->jinit = init;
      } else if (!check_expr(s, init, true, "in a declaration")) {
        return false;
      }
    }
    *ks_array_push(s->arena, &s->top) = st;
  }
  if (!s->jvar)
    return split_fail(s, "it computes no index 'blockIdx.x * blockDim.x + threadIdx.x' at the top "
                         "of its body");
  if (s->jvar->from_macro || s->jinit->from_macro)
    return split_fail(s, "its index comes from a macro");
  if (ks_rt_modified(body, s->jvar))
    return split_fail(s, "it changes its index");
  unsigned allowed[2] = {s->jinit->begin, s->jinit->end};
  const char *problem = ks_rt_mapping_problem(s->arena, s->in, allowed, 1);
  if (problem)
    return split_fail(s, "it %s", problem);
  ks_rt_nodes all = ks_rt_collect(s->arena, body);
  for (size_t n = 0; n < all.len; n++) {
    const ks_anode *d = all.items[n];
    if (d->kind == KS_AK_DECL_REF && !d->decl && d->name && !strcmp(d->name, "blockDim") &&
        !(d->begin >= s->jinit->begin && d->end <= s->jinit->end))
      return split_fail(s, "it reads blockDim outside its index");
  }
  return true;
}

/* Does comparison `c` bound j (j < b, j <= b, b > j, ...)? */
static bool bounds_j(split *s, const ks_anode *c, bool in_range) {
  c = ks_rt_strip(c, false);
  if (!c || c->kind != KS_AK_BINARY || c->nkids != 2)
    return false;
  if (!strcmp(c->op, "&&") && in_range)
    return bounds_j(s, c->kids[0], true) || bounds_j(s, c->kids[1], true);
  if (!strcmp(c->op, "||") && !in_range)
    return bounds_j(s, c->kids[0], false) || bounds_j(s, c->kids[1], false);
  static const char *const ops[] = {"<", "<=", ">", ">="};
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(c->op, ops[i]))
      return ks_rt_refers_to(ks_rt_strip(c->kids[0], true), s->jvar) ||
             ks_rt_refers_to(ks_rt_strip(c->kids[1], true), s->jvar);
  return false;
}

static bool read_loop(split *s, const ks_anode *f);
static bool check_columns(split *s);

/* The statements of the bounds-checked region: declarations and stores to
 * out[j], the loop, then the epilogue. */
static bool read_region(split *s, const ks_anode *const *st, size_t n) {
  size_t i = 0;
  bool any = false;
  for (size_t k = 0; k < n; k++)
    any |= st[k]->kind == KS_AK_FOR;
  if (!any)
    return split_fail(s, "it has no loop at the top of its bounds-checked code");
  for (; i < n && st[i]->kind != KS_AK_FOR; i++) {
    const ks_anode *x = st[i];
    if (x->kind == KS_AK_DECL_STMT) {
      for (size_t v = 0; v < x->nkids; v++)
        if (!check_expr(s, ks_rt_var_init(x->kids[v]), false, "in a declaration before its loop"))
          return false;
      *ks_array_push(s->arena, &s->pre_decls) = x;
      continue;
    }
    const ks_anode *e = ks_rt_strip(x, false);
    if (ks_rt_is_bin(e, "=") && e->nkids == 2 && !is_memory(ks_rt_strip(e->kids[0], false)))
      return split_fail(s, "before its loop it assigns '%s' (a declaration with its value is what "
                           "the rule reads)",
                        ks_rt_text_of(s->arena, s->in, e->kids[0]));
    if (ks_rt_is_bin(e, "=") && e->nkids == 2 && ks_rt_is_expr_stmt(e)) {
      if (!check_store(s, e->kids[0]) || !check_expr(s, e->kids[1], false, "in a store before its loop"))
        return false;
      *ks_array_push(s->arena, &s->pre_stores) = x;
      continue;
    }
    return split_fail(s, "before its loop it has '%s', which is neither a declaration nor a store "
                         "to its output",
                      ks_rt_text_of(s->arena, s->in, x));
  }
  if (!read_loop(s, st[i]))
    return false;
  for (i++; i < n; i++) {
    const ks_anode *x = st[i];
    ks_rt_nodes all = ks_rt_collect(s->arena, x);
    for (size_t a = 0; a < all.len; a++) {
      const ks_anode *m = all.items[a];
      switch (m->kind) {
      case KS_AK_FOR:
      case KS_AK_WHILE:
      case KS_AK_DO:
        return split_fail(s, "it has a second loop");
      case KS_AK_RETURN:
      case KS_AK_BREAK:
      case KS_AK_CONTINUE:
        return split_fail(s, "it returns or breaks after its loop");
      case KS_AK_CALL:
        if (!ks_rt_is_pure_call(ks_rt_callee(s->arena, m)))
          return split_fail(s, "it calls '%s' after its loop", ks_rt_callee(s->arena, m));
        break;
      default:
        break;
      }
      if (ks_rt_is_assignment(m)) {
        const ks_anode *lhs = ks_rt_strip(m->kids[0], false);
        if (is_memory(lhs) && !check_store(s, lhs))
          return false;
      }
      if (m->kind == KS_AK_OTHER && m->kind_name &&
          (strstr(m->kind_name, "Goto") || strstr(m->kind_name, "Switch") ||
           strstr(m->kind_name, "Asm")))
        return split_fail(s, "it has a %s after its loop", m->kind_name);
    }
    *ks_array_push(s->arena, &s->post) = x;
  }
  return true;
}

/* An expression of literals, operators and unmodified scalar parameters
 * only, as the compiler sees it after macro expansion: the same value in
 * every thread, also where the folding of rules_meaning.h cannot name it
 * (a macro the analysis does not follow, as PolyBench's _PB_N). */
static bool uniform(split *s, const ks_anode *e) {
  ks_rt_nodes all = ks_rt_collect(s->arena, e);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    switch (n->kind) {
    case KS_AK_DECL_REF:
      if (!n->decl || n->decl->kind != KS_AK_PARAM || n->decl->is_pointer ||
          ks_rt_modified(s->k->body, n->decl))
        return false;
      break;
    case KS_AK_INT_LITERAL:
    case KS_AK_BINARY:
    case KS_AK_UNARY:
      if (ks_rt_is_assignment(n) || ks_rt_is_op(n, KS_AK_UNARY, "*") ||
          ks_rt_is_op(n, KS_AK_UNARY, "++") || ks_rt_is_op(n, KS_AK_UNARY, "--"))
        return false;
      break;
    default:
      if (!ks_rt_is_wrapper(n) && n->kind != KS_AK_PAREN)
        return false;
    }
  }
  return true;
}

/* The loop: counted, step 1, a single statement `acc += e`, `acc = acc + e`
 * (or e + acc), or the same into out[j]. */
static bool read_loop(split *s, const ks_anode *f) {
  ks_loop_view *v = &s->view;
  s->loop = f;
  if (f->from_macro)
    return split_fail(s, "its loop comes from a macro");
  if (!ks_meaning_loop(s->meaning, f, v))
    return split_fail(s, "its loop is not a counted loop 'for (i = a; i < b; i++)': %s", v->why);
  if (v->step != 1)
    return split_fail(s, "its loop's step is not 1");
  if (v->modified_in_body)
    return split_fail(s, "its loop assigns its counter in its body");
  if (v->used_after)
    return split_fail(s, "'%s' is read after its loop", v->var->name);
  const char *why = NULL;
  if ((!ks_meaning_value(s->meaning, v->start, &why) && !uniform(s, v->start)) ||
      (!ks_meaning_loop_end(s->meaning, v, &why) && !uniform(s, v->bound)))
    return split_fail(s, "its loop's count is not one value for every thread of a block (%s)",
                      why ? why : "its bounds do not fold to parameters and constants");
  const ks_anode *body = f->kids[3];
  ks_rt_nodes inner = ks_rt_collect(s->arena, body);
  for (size_t i = 0; i < inner.len; i++) {
    const ks_anode *n = inner.items[i];
    if (n->kind == KS_AK_RETURN || n->kind == KS_AK_BREAK || n->kind == KS_AK_CONTINUE)
      return split_fail(s, "its loop ends early or skips (%s)",
                        n->kind == KS_AK_RETURN ? "return" : n->kind == KS_AK_BREAK ? "break" : "continue");
    if (n->kind == KS_AK_CALL && ks_rt_has_prefix(ks_rt_callee(s->arena, n), "atomic"))
      return split_fail(s, "its loop calls %s", ks_rt_callee(s->arena, n));
  }
  while (body && body->kind == KS_AK_COMPOUND && body->nkids == 1)
    body = body->kids[0];
  if (!body || body->kind == KS_AK_COMPOUND)
    return split_fail(s, "its loop's body is not one accumulating statement");
  const ks_anode *e = ks_rt_strip(body, false);
  const ks_anode *lhs = NULL, *term = NULL;
  if (e && e->kind == KS_AK_COMPOUND_ASSIGN && !strcmp(e->op, "+=")) {
    lhs = e->kids[0];
    term = e->kids[1];
  } else if (e && ks_rt_is_bin(e, "=")) {
    const ks_anode *r = ks_rt_strip(e->kids[1], false);
    if (ks_rt_is_bin(r, "+")) {
      const char *l = ks_rt_text_of(s->arena, s->in, e->kids[0]);
      if (!strcmp(l, ks_rt_text_of(s->arena, s->in, r->kids[0])))
        term = r->kids[1];
      else if (!strcmp(l, ks_rt_text_of(s->arena, s->in, r->kids[1])))
        term = r->kids[0];
      lhs = term ? e->kids[0] : NULL;
    }
  }
  if (!lhs)
    return split_fail(s, "its loop's body is not a sum 'acc += e' or 'y[j] += e' ('%s')",
                      ks_rt_text_of(s->arena, s->in, body));
  s->update = body;
  s->term = term;
  const ks_anode *l = ks_rt_strip(lhs, false);
  if (l->kind == KS_AK_DECL_REF && l->decl && l->decl->kind == KS_AK_VAR) {
    s->acc = l->decl;
    const char *t = s->acc->canon_type ? s->acc->canon_type : s->acc->type;
    if (!t || (strcmp(t, "float") && strcmp(t, "double") && strcmp(t, "int") &&
               strcmp(t, "long long") && strcmp(t, "unsigned int")))
      return split_fail(s, "the sum '%s' is a %s, not float, double or an integer",
                        s->acc->name, s->acc->type ? s->acc->type : "(unknown type)");
    bool declared = false;
    for (size_t i = 0; i < s->top.len + s->pre_decls.len; i++) {
      const ks_anode *d = i < s->top.len ? s->top.items[i] : s->pre_decls.items[i - s->top.len];
      declared |= s->acc->parent == d;
    }
    if (!declared)
      return split_fail(s, "the sum '%s' is not declared before its loop in the kernel's body",
                        s->acc->name);
    if (ks_rt_count_refs(s->arena, term, s->acc))
      return split_fail(s, "'%s' is read in its loop while it accumulates", s->acc->name);
  } else if (is_memory(l)) {
    if (!check_store(s, l))
      return false;
    s->target = l;
  } else {
    return split_fail(s, "its loop assigns '%s'", ks_rt_text_of(s->arena, s->in, lhs));
  }
  return check_expr(s, term, true, "in its loop") && check_columns(s);
}

/* The whole match. */
static bool split_match(split *s) {
  if (!find_index(s))
    return false;
  const ks_anode *body = s->k->body;
  size_t first = s->top.len;
  if (first >= body->nkids)
    return split_fail(s, "it has nothing after its declarations");
  const ks_anode *g = body->kids[first];
  if (g->kind != KS_AK_IF)
    return split_fail(s, "its first statement after the declarations is no bounds check on '%s'",
                      s->jvar->name);
  const ks_anode *then = g->kids[1];
  bool early = then && (then->kind == KS_AK_RETURN ||
                        (then->kind == KS_AK_COMPOUND && then->nkids == 1 &&
                         then->kids[0]->kind == KS_AK_RETURN));
  if (g->nkids > 2 && g->kids[2])
    return split_fail(s, "its bounds check has an else branch");
  if (!bounds_j(s, g->kids[0], !early))
    return split_fail(s, "its first statement after the declarations is no bounds check on '%s'",
                      s->jvar->name);
  if (!check_expr(s, g->kids[0], true, "in its bounds check"))
    return false;
  const char *c = ks_rt_text_of(s->arena, s->in, g->kids[0]);
  if (early) {
    s->cond = ks_arena_printf(s->arena, "!(%s)", c);
    return read_region(s, (const ks_anode *const *)body->kids + first + 1,
                       body->nkids - first - 1);
  }
  if (first + 1 != body->nkids)
    return split_fail(s, "it has statements after its bounds-checked block");
  s->cond = ks_arena_printf(s->arena, "(%s)", c);
  if (then->kind == KS_AK_COMPOUND)
    return read_region(s, (const ks_anode *const *)then->kids, then->nkids);
  return read_region(s, &then, 1);
}

/* The element type of the output buffer, without const/restrict. */
static const char *elem_type(split *s, const ks_anode *p) {
  const char *t = p->type ? p->type : "";
  if (strstr(t, "const") || strstr(t, "volatile"))
    return NULL;
  const char *star = strrchr(t, '*');
  if (!star || strchr(t, '*') != star)
    return NULL;
  while (star > t && (star[-1] == ' ' || star[-1] == '\t'))
    star--;
  return ks_arena_strndup(s->arena, t, (size_t)(star - t));
}

/* Is `idx` the global index plus terms without it (j, i * n + j, j + 1)?
 * Then neighbouring threads read neighbouring elements: column access. */
static bool column_index(split *s, const ks_anode *idx) {
  idx = ks_rt_strip(idx, true);
  if (!idx)
    return false;
  if (idx->kind == KS_AK_DECL_REF && idx->decl == s->jvar)
    return true;
  if (ks_rt_is_bin(idx, "+") || ks_rt_is_bin(idx, "-")) {
    unsigned l = ks_rt_count_refs(s->arena, idx->kids[0], s->jvar),
             r = ks_rt_count_refs(s->arena, idx->kids[1], s->jvar);
    if (l && !r)
      return column_index(s, idx->kids[0]);
    if (r && !l && !strcmp(idx->op, "+"))
      return column_index(s, idx->kids[1]);
  }
  return false;
}

/* Every read of the loop that depends on j must be column access; a read
 * like a[j * n + i] (row access) would leave each slice's loads strided
 * (warp_rows is the rule for rows). */
static bool check_columns(split *s) {
  ks_rt_nodes all = ks_rt_collect(s->arena, s->term);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_SUBSCRIPT || n->nkids != 2 || !ks_rt_count_refs(s->arena, n->kids[1], s->jvar))
      continue;
    if (!column_index(s, n->kids[1]))
      return split_fail(s, "its loop reads '%s', not a column (the index '%s' is not '%s' plus "
                           "terms without it; warp_rows is the rule for rows)",
                        ks_rt_text_of(s->arena, s->in, n), s->jvar->name, s->jvar->name);
  }
  return true;
}

/* Every other buffer the loop reads must not reach the output (the sum
 * reads out[j] once now, before the loop's reads were done); the guard
 * says so, as scalar_replace's does. */
static bool add_disjoint(split *s, ks_strings *guards) {
  ks_rt_nodes all = ks_rt_collect(s->arena, s->term);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_DECL_REF || !n->decl)
      continue;
    const ks_anode *d = n->decl;
    if (d == s->out)
      return split_fail(s, "its loop reads '%s', the buffer it sums into", d->name);
    if (d->kind == KS_AK_VAR && d->is_pointer)
      return split_fail(s, "its loop reads through the local pointer '%s', which a disjoint() "
                           "guard cannot name",
                        d->name);
    if (d->kind != KS_AK_PARAM || !d->is_pointer || d->is_restrict || s->out->is_restrict)
      continue;
    const char *g = ks_arena_printf(s->arena, "disjoint(%s, %s)", s->out->name, d->name);
    bool have = false;
    for (size_t k = 0; k < guards->len; k++)
      have |= !strcmp(guards->items[k], g);
    if (!have)
      *ks_array_push(s->arena, guards) = g;
  }
  return true;
}

static const int split_cols_choices[] = {3208, 3216, 3232, 3204, 6408, 6416, 6404, 166416, 163208, 326408};

/* Whether atomicAdd takes a `type` (canonical spelling). */
static bool atomic_type(const char *type) {
  static const char *const types[] = {"float", "double", "int", "unsigned int",
                                      "unsigned long long", "unsigned long long int"};
  for (size_t i = 0; type && i < sizeof types / sizeof *types; i++)
    if (!strcmp(type, types[i]))
      return true;
  return false;
}

/* Why the loop cannot be split over blocks with atomicAdd, or NULL. */
static const char *atomic_problem(split *s, const char *type, const char *canon) {
  if (s->acc)
    return ks_arena_printf(s->arena, "it sums into the local '%s', not straight into %s[%s]",
                           s->acc->name, s->out->name, s->jvar->name);
  if (s->pre_stores.len || s->post.len)
    return ks_arena_printf(s->arena, "it does more with %s[%s] than sum into it (%s)",
                           s->out->name, s->jvar->name,
                           stmt_text(s, s->pre_stores.len ? s->pre_stores.items[0]
                                                          : s->post.items[0]));
  if (!atomic_type(canon))
    return ks_arena_printf(s->arena, "its output is a %s, which atomicAdd does not take", type);
  return NULL;
}

static int apply_split_cols(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                            ks_rule_result *out) {
  int x = param / 100 % 100, sl = param % 100, gmax = param / 10000;
  if ((x != 32 && x != 64) || (sl != 4 && sl != 8 && sl != 16 && sl != 32) || x * sl > 1024 ||
      (gmax && gmax != 16 && gmax != 32))
    return ks_rt_not_applicable(arena, out,
                                "its parameter must be [G * 10000 +] X * 100 + S with X 32 or 64, "
                                "S 4, 8, 16 or 32, X * S at most 1024 and G 16 or 32, not %d",
                                param);
  split s = {.arena = arena, .in = in, .k = in->ast};
  s.meaning = ks_meaning_open(ctx, in->ast, arena);
  bool matched = split_match(&s);
  ks_meaning_close(s.meaning);
  if (!matched)
    return ks_rt_not_applicable(arena, out, "%s", s.why);
  if (!s.out)
    return ks_rt_not_applicable(arena, out, "it writes no output '...[%s]'", s.jvar->name);
  if (s.k->body->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its code is outside the variant");
  const ks_anode *fn = in->ast->fn;
  for (size_t i = 0; fn && i < fn->nkids; i++)
    if (fn->kids[i]->kind == KS_AK_ATTR && fn->kids[i]->name &&
        !strcmp(fn->kids[i]->name, "__launch_bounds__"))
      return ks_rt_not_applicable(arena, out, "it has __launch_bounds__, which the new block "
                                              "may exceed");
  ks_strings guards = {0};
  if (!s.acc && !add_disjoint(&s, &guards))
    return ks_rt_not_applicable(arena, out, "%s", s.why);
  if (s.acc) {
    ks_rt_nodes all = ks_rt_collect(arena, s.term);
    for (size_t i = 0; i < all.len; i++)
      if (all.items[i]->kind == KS_AK_DECL_REF && all.items[i]->decl == s.out)
        return ks_rt_not_applicable(arena, out, "its loop reads '%s', the buffer it writes",
                                    s.out->name);
  }
  const char *type = s.acc ? s.acc->type : elem_type(&s, s.out);
  if (!type)
    return ks_rt_not_applicable(arena, out, "its output '%s' is a %s, not a plain pointer",
                                s.out->name, s.out->type ? s.out->type : "(unknown type)");
  if (gmax) {
    const char *canon = s.out->canon_pointee ? s.out->canon_pointee : type;
    const char *why = atomic_problem(&s, type, canon);
    if (why)
      return ks_rt_not_applicable(arena, out, "%s: no split over blocks", why);
  }

  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return ks_rt_not_applicable(arena, out, "its launch policy: %s", ctx->error);
  /* A grid whose y and z cannot be evaluated (no sizes) is taken as 1-D
   * under a guard the judge checks; the block must be known to be 1-D. */
  long long dims[4];
  const char *yz[4] = {p.block[1], p.block[2], p.grid[1], p.grid[2]};
  const char *grid_guard = NULL;
  for (int d = 0; d < 4; d++) {
    if (!ks_rule_eval(ctx, in, yz[d], &dims[d]))
      continue;
    if (d < 2)
      return ks_rt_not_applicable(arena, out, "its block does not evaluate at the timed size: %s",
                                  ctx->error);
    dims[d] = 1;
    grid_guard = ks_arena_printf(arena, "%s * %s == 1", ks_rt_paren(arena, p.grid[1]),
                                 ks_rt_paren(arena, p.grid[2]));
  }
  if (dims[0] * dims[1] * dims[2] * dims[3] != 1)
    return ks_rt_not_applicable(arena, out, "its launch is not 1-D");
  /* Blocks of X outputs at the timed size: a grid that fills the device
   * (two blocks per SM) gains nothing from a split over blocks. */
  const char *gx = ks_rt_paren(arena, p.grid[0]), *bx0 = ks_rt_paren(arena, p.block[0]);
  const char *xblocks = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", gx, bx0, x);
  const char *slabs = NULL;
  if (gmax) {
    long long nb;
    if (!ks_rule_eval(ctx, in, xblocks, &nb) && nb >= 2LL * in->sm_count)
      return ks_rt_not_applicable(arena, out,
                                  "its %lld blocks of %d outputs fill %u SMs already: no split "
                                  "over blocks",
                                  nb, x, in->sm_count);
    slabs = ks_arena_printf(arena, "max(1, min(%d, ceil_div(%u, %s)))", gmax, 2 * in->sm_count,
                            xblocks);
  }

  /* the new body */
  const char *src = in->parent->source;
  const char *part = ks_rt_fresh(arena, src, "ks_part");
  const char *sum = ks_rt_fresh(arena, src, "ks_sum");
  const char *sv = ks_rt_fresh(arena, src, "ks_s");
  const char *ind = ks_rt_indent_step(arena, in);
  const char *ind2 = ks_arena_printf(arena, "%s%s", ind, ind);
  const ks_loop_view *v = &s.view;
  const char *bound = ks_rt_text_of(arena, in, v->bound);
  if (v->bound->from_macro)
    bound = ks_arena_printf(arena, "(%s)", bound);
  else
    bound = ks_rt_paren(arena, bound);
  if (v->end_add)
    bound = ks_arena_printf(arena, "%s + %lld", bound, v->end_add);
  const char *first = gmax ? ks_arena_printf(arena, "blockIdx.y * %d + threadIdx.y", sl)
                          : "threadIdx.y";
  const char *start = ks_rt_is_int(v->start, 0)
                          ? first
                          : ks_arena_printf(arena, "(%s) + %s",
                                            ks_rt_text_of(arena, in, v->start), first);
  const char *step = gmax ? ks_arena_printf(arena, "%d * gridDim.y", sl)
                          : ks_arena_printf(arena, "%d", sl);
  const char *ivar = v->var->name;
  ks_buf b = KS_BUF_INIT;
  ks_buf_adds(&b, "{\n");
  for (size_t i = 0; i < s.top.len; i++)
    ks_buf_addf(&b, "%s%s\n", ind, stmt_text(&s, s.top.items[i]));
  if (gmax)
    ks_buf_addf(&b, "%s// split_cols: %d outputs per block, %d slices of the loop along y, "
                    "gridDim.y blocks summing into each output with atomicAdd\n",
                ind, x, sl);
  else
    ks_buf_addf(&b, "%s// split_cols: %d outputs per block, %d slices of the loop along y\n", ind,
                x, sl);
  for (size_t i = 0; i < s.pre_decls.len; i++)
    ks_buf_addf(&b, "%s%s\n", ind, stmt_text(&s, s.pre_decls.items[i]));
  ks_buf_addf(&b, "%s__shared__ %s %s[%d][%d];\n", ind, type, part, sl, x);
  ks_buf_addf(&b, "%s%s %s = 0;\n", ind, type, sum);
  ks_buf_addf(&b, "%sif %s {\n", ind, s.cond[0] == '(' ? s.cond : ks_arena_printf(arena, "(%s)", s.cond));
  ks_buf_addf(&b, "%sfor (%s%s = %s; %s < %s; %s += %s)\n", ind2,
              v->declared_outside ? "" : ks_arena_printf(arena, "%s ", v->var->type), ivar, start,
              ivar, bound, ivar, step);
  ks_buf_addf(&b, "%s%s%s += %s;\n", ind2, ind, sum,
              ks_rt_paren(arena, ks_rt_text_of(arena, in, s.term)));
  ks_buf_addf(&b, "%s}\n", ind);
  ks_buf_addf(&b, "%s%s[threadIdx.y][threadIdx.x] = %s;\n", ind, part, sum);
  ks_buf_addf(&b, "%s__syncthreads();\n", ind);
  ks_buf_addf(&b, "%sif (%s && threadIdx.y == 0) {\n", ind, s.cond);
  ks_buf_addf(&b, "%s%s = %s[0][threadIdx.x];\n", ind2, sum, part);
  ks_buf_addf(&b, "%sfor (int %s = 1; %s < %d; %s++)\n%s%s%s += %s[%s][threadIdx.x];\n", ind2, sv,
              sv, sl, sv, ind2, ind, sum, part, sv);
  for (size_t i = 0; i < s.pre_stores.len; i++)
    ks_buf_addf(&b, "%s%s\n", ind2, stmt_text(&s, s.pre_stores.items[i]));
  if (gmax) {
    ks_buf_addf(&b, "%satomicAdd(&%s, %s);\n", ind2, ks_rt_text_of(arena, in, s.target), sum);
  } else if (s.acc) {
    ks_buf_addf(&b, "%s%s += %s;\n", ind2, s.acc->name, sum);
  } else {
    const char *t = ks_rt_text_of(arena, in, s.target);
    ks_buf_addf(&b, "%s%s = %s + %s;\n", ind2, t, t, sum);
  }
  for (size_t i = 0; i < s.post.len; i++) {
    const ks_anode *st = s.post.items[i];
    const char *text = st->kind == KS_AK_COMPOUND || st->kind == KS_AK_IF
                           ? ks_rt_text_of(arena, in, st)
                           : stmt_text(&s, st);
    ks_buf_addf(&b, "%s%s\n", ind2, text);
  }
  ks_buf_addf(&b, "%s}\n}", ind);
  ks_edits e = {0};
  ks_edits_add(arena, &e, ks_rt_src_at(in, s.k->body->begin), ks_rt_src_at(in, s.k->body->end),
               ks_arena_strdup(arena, b.data));
  ks_buf_release(&b);
  const char *tag = gmax ? ks_arena_printf(arena, "split_cols=%dx%d/atomic%d", x, sl, gmax)
                         : ks_arena_printf(arena, "split_cols=%dx%d", x, sl);
  if (ks_rt_finish(ctx, in, arena, &e, tag, out))
    return -1;

  /* X outputs per block where there were blockDim.x: the same outputs, so
   * the grid must cover them exactly (a whole number of X). */
  p.grid[0] = xblocks;
  p.block[0] = ks_arena_printf(arena, "%d", x);
  p.block[1] = ks_arena_printf(arena, "%d", sl);
  p.grid[1] = slabs ? slabs : "1";
  p.grid[2] = p.block[2] = "1";
  ks_rule_policy_write(arena, &p, &out->child);
  ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s * %s %% %d == 0", gx, bx0, x));
  if (grid_guard)
    ks_rule_require(arena, &out->child, grid_guard);
  for (size_t i = 0; i < guards.len; i++)
    ks_rule_require(arena, &out->child, guards.items[i]);
  return 0;
}

const ks_rule ks_rule_split_cols = {
    "split_cols",
    "one output's long loop split over S threads along y (X outputs per block), the partial sums "
    "added in shared memory in a fixed order (param: X * 100 + S); with G * 10000 added, also "
    "over up to G blocks along the grid's y that atomicAdd their sums, where the grid is too "
    "small for the device",
    false,
    split_cols_choices,
    sizeof split_cols_choices / sizeof *split_cols_choices,
    apply_split_cols};
