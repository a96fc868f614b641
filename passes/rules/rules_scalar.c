/* rules_scalar: scalar_replace, an element of global memory that a loop
 * reads and writes at an index the loop does not change, kept in a
 * register across the loop and written once after it:
 *
 *   for (k = 0; k < NK; k++)            T ks_acc = c[i * NJ + j];
 *     c[i * NJ + j] += a[..] * b[..];   for (k = 0; k < NK; k++)
 *                                         ks_acc += a[..] * b[..];
 *                                       c[i * NJ + j] = ks_acc;
 *
 * Where the statement right before the loop sets or scales the same
 * element (`c[idx] *= beta;`), that statement becomes the register's
 * initialization: one load and one store in all.
 *
 * Without __restrict__ the compiler must reload and store the element on
 * every iteration, since any store through another pointer might change
 * it; the rewrite needs the same promise, as a disjoint() guard with each
 * other pointer parameter the loop touches (none where one of the two is
 * __restrict__ already). It refuses where the buffer is reached in the
 * loop any other way than at that one index, where the index uses a name
 * the loop changes, and where the loop synchronizes, uses atomics or calls
 * the code's own functions (rules_invariant.c). */
#include <string.h>

#include "ks_buf.h"
#include "rules_invariant.h"
#include "rules_shape.h"

/* One element the rewrite keeps in a register. */
typedef struct scalar_elem {
  const ks_anode *param;   /* the buffer */
  const char *index;       /* its index as written, whitespace removed */
  const ks_anode *first;   /* the first access c[idx] in the loop */
  ks_rt_nodes accesses;    /* every c[idx] in the loop */
  bool written;
  const char *problem;     /* why it cannot be kept (NULL: it can) */
} scalar_elem;

typedef KS_ARRAY(scalar_elem) scalar_elems;

/* The pointer parameter `n` refers to (through wrappers), or NULL. */
static const ks_anode *param_of(const ks_anode *n) {
  n = ks_rt_strip(n, false);
  if (!n || n->kind != KS_AK_DECL_REF || !n->decl || n->decl->kind != KS_AK_PARAM ||
      !n->decl->is_pointer)
    return NULL;
  return n->decl;
}

/* An index the loop does not change: names that keep their values,
 * literals and arithmetic; no memory read, call or assignment. */
static const char *index_problem(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop,
                                 const ks_anode *sub) {
  const char *elem = ks_rt_text_of(arena, in, sub);
  ks_rt_nodes all = ks_rt_collect(arena, sub->kids[1]);
  for (size_t k = 0; k < all.len; k++) {
    const ks_anode *n = all.items[k];
    if (n->kind == KS_AK_DECL_REF && !ks_inv_ref_invariant(loop, n))
      return ks_arena_printf(arena, "%s: its index uses '%s', %s", elem, n->name ? n->name : "?",
                             n->decl ? "which the loop changes" : "not a parameter or local");
    if (n->kind == KS_AK_SUBSCRIPT || n->kind == KS_AK_CALL || ks_rt_is_assignment(n) ||
        ks_rt_is_op(n, KS_AK_UNARY, "*"))
      return ks_arena_printf(arena, "%s: its index reads memory, calls a function or assigns",
                             elem);
  }
  return NULL;
}

/* The first store in the loop through a local pointer (`y[c] = ...` with
 * `float *y = out + ...`), as text, or NULL. */
static const char *local_pointer_store(ks_arena *arena, const ks_rule_input *in,
                                       const ks_anode *loop) {
  ks_rt_nodes all = ks_rt_collect(arena, loop);
  for (size_t k = 0; k < all.len; k++) {
    const ks_anode *n = all.items[k];
    if (!ks_rt_is_assignment(n))
      continue;
    const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
    if (!lhs || (lhs->kind != KS_AK_SUBSCRIPT && !ks_rt_is_op(lhs, KS_AK_UNARY, "*")))
      continue;
    const ks_anode *base = ks_rt_strip(lhs->kids[0], false);
    if (base && base->kind == KS_AK_DECL_REF && base->decl && base->decl->kind == KS_AK_VAR &&
        base->decl->is_pointer && !base->decl->shared_space)
      return ks_arena_printf(arena, "%s (through the local pointer '%s')",
                             ks_rt_text_of(arena, in, lhs), base->name);
  }
  return NULL;
}

/* Is the subscript `sub` (an access to the buffer) written? */
static bool sub_written(const ks_anode *sub) {
  const ks_anode *c, *p = ks_rt_up(sub, &c);
  if (!p)
    return false;
  if (ks_rt_is_assignment(p))
    return p->kind == KS_AK_UNARY || c == p->kids[0];
  if (p->kind == KS_AK_MEMBER && !p->arrow)
    return sub_written(p);
  return false;
}

static scalar_elem *elem_of(ks_arena *arena, scalar_elems *es, const ks_anode *param) {
  for (size_t k = 0; k < es->len; k++)
    if (es->items[k].param == param)
      return &es->items[k];
  scalar_elem *e = ks_array_push(arena, es);
  memset(e, 0, sizeof *e);
  e->param = param;
  return e;
}

/* Every access to a pointer parameter inside the loop, grouped by buffer;
 * each group says whether it can be kept in a register. */
static scalar_elems read_elems(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop) {
  scalar_elems es = {0};
  ks_rt_nodes all = ks_rt_collect(arena, loop);
  for (size_t k = 0; k < all.len; k++) {
    const ks_anode *n = all.items[k];
    if (n->kind != KS_AK_DECL_REF || !n->decl || n->decl->kind != KS_AK_PARAM ||
        !n->decl->is_pointer)
      continue;
    scalar_elem *e = elem_of(arena, &es, n->decl);
    if (e->problem)
      continue;
    const ks_anode *c, *sub = ks_rt_up(n, &c);
    if (!sub || sub->kind != KS_AK_SUBSCRIPT || c != sub->kids[0] ||
        ks_rt_strip(sub->kids[0], false) != n) {
      e->problem = ks_arena_printf(arena, "'%s' is used in the loop other than as %s[index] (%s)",
                                   n->name, n->name,
                                   ks_rt_text_of(arena, in, sub ? sub : n));
      continue;
    }
    if (sub->from_macro) {
      e->problem = ks_arena_printf(arena, "an access to '%s' comes from a macro", n->name);
      continue;
    }
    const ks_anode *c2, *ctx = ks_rt_up(sub, &c2);
    if (ctx && ks_rt_is_op(ctx, KS_AK_UNARY, "&")) {
      e->problem = ks_arena_printf(arena, "the loop takes the address of an element of '%s'",
                                   n->name);
      continue;
    }
    const char *index = ks_inv_squeezed(arena, in, sub->kids[1]);
    if (e->index && strcmp(e->index, index)) {
      e->problem = ks_arena_printf(arena, "the loop reaches '%s' at two indices (%s and %s)",
                                   n->name, e->index, index);
      continue;
    }
    if (!e->index) {
      e->index = index;
      e->first = sub;
      e->problem = index_problem(arena, in, loop, sub);
    }
    e->written |= sub_written(sub);
    *ks_array_push(arena, &e->accesses) = sub;
  }
  return es;
}

/* The element type: the buffer's pointee without const; NULL for a
 * volatile one. */
static const char *elem_type(ks_arena *arena, const ks_anode *param) {
  const char *t = param->pointee ? param->pointee : "";
  if (strstr(t, "volatile") || !*t)
    return NULL;
  if (!strncmp(t, "const ", 6))
    t += 6;
  return ks_arena_strdup(arena, t);
}

/* `c[idx] = e;` or `c[idx] op= e;` right before the loop statement, in
 * the same block, with `e` free of assignments and calls of the user's:
 * its initializer text for the register, or NULL. *stmt is set to it. */
static const char *set_before(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop,
                              const scalar_elem *e, const ks_anode **stmt) {
  const ks_anode *s = ks_inv_loop_stmt(loop), *block = s->parent;
  if (!block || block->kind != KS_AK_COMPOUND)
    return NULL;
  size_t at = 0;
  while (at < block->nkids && block->kids[at] != s)
    at++;
  if (at == 0 || at == block->nkids)
    return NULL;
  const ks_anode *prev = block->kids[at - 1];
  bool assign = ks_rt_is_bin(prev, "=") ||
                (prev->kind == KS_AK_COMPOUND_ASSIGN && prev->nkids == 2 && prev->op &&
                 strlen(prev->op) >= 2);
  if (!assign || prev->from_macro)
    return NULL;
  const ks_anode *lhs = ks_rt_strip(prev->kids[0], false);
  if (!lhs || lhs->kind != KS_AK_SUBSCRIPT || lhs->from_macro ||
      param_of(lhs->kids[0]) != e->param ||
      strcmp(ks_inv_squeezed(arena, in, lhs->kids[1]), e->index))
    return NULL;
  ks_rt_nodes rhs = ks_rt_collect(arena, prev->kids[1]);
  for (size_t k = 0; k < rhs.len; k++) {
    const ks_anode *n = rhs.items[k];
    if (ks_rt_is_assignment(n) ||
        (n->kind == KS_AK_CALL && (!n->name || ks_shape_user_function(in, n->name))))
      return NULL;
  }
  *stmt = prev;
  const char *value = ks_rt_text_of(arena, in, prev->kids[1]);
  if (ks_rt_is_bin(prev, "="))
    return value;
  const char *op = ks_arena_strndup(arena, prev->op, strlen(prev->op) - 1);
  return ks_arena_printf(arena, "%s %s %s", ks_rt_text_of(arena, in, lhs), op,
                         ks_rt_paren(arena, value));
}

/* Rewrites the loop's elements that qualify; returns how many. */
static size_t rewrite_loop(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop,
                           ks_edits *edits, ks_strings *guards, const char **names_text,
                           const char **reason) {
  scalar_elems es = read_elems(arena, in, loop);
  size_t written = 0;
  for (size_t k = 0; k < es.len; k++)
    written += es.items[k].written;
  if (!written) {
    const char *store = local_pointer_store(arena, in, loop);
    if (store && !*reason)
      *reason = ks_arena_printf(arena, "the loop stores to %s, which a disjoint() guard cannot "
                                       "name", store);
    return 0;
  }
  const char *problem = ks_inv_body_problem(arena, in, loop);
  ks_rt_nodes all = ks_rt_collect(arena, loop);
  for (size_t k = 0; k < all.len && !problem; k++) {
    const ks_anode *n = all.items[k];
    if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR &&
        (n->decl->is_pointer || (n->decl->type && strchr(n->decl->type, '&'))) &&
        !n->decl->shared_space)
      problem = ks_arena_printf(arena, "the loop reaches memory through the local '%s', which "
                                       "a disjoint() guard cannot name", n->name);
  }
  if (problem) {
    *reason = problem;
    return 0;
  }
  ks_buf before = KS_BUF_INIT, after = KS_BUF_INIT;
  size_t done = 0;
  for (size_t k = 0; k < es.len; k++) {
    scalar_elem *e = &es.items[k];
    if (!e->written)
      continue;
    const char *type = elem_type(arena, e->param);
    if (e->problem || !type) {
      *reason = e->problem ? e->problem
                           : ks_arena_printf(arena, "'%s' is volatile", e->param->name);
      continue;
    }
    const char *name = ks_rt_fresh(arena, *names_text, "ks_acc");
    *names_text = ks_arena_printf(arena, "%s %s", *names_text, name);
    const char *elem = ks_rt_text_of(arena, in, e->first);
    const ks_anode *prev = NULL;
    const char *init = set_before(arena, in, loop, e, &prev);
    if (init) {
      ks_edits_add(arena, edits, ks_rt_src_at(in, prev->begin),
                   ks_rt_src_at(in, ks_rt_stmt_end(in->unit, prev)),
                   ks_arena_printf(arena, "%s %s = %s;", type, name, init));
    } else {
      ks_buf_addf(&before, "%s %s = %s;\n", type, name, elem);
    }
    for (size_t a = 0; a < e->accesses.len; a++) {
      const ks_anode *sub = e->accesses.items[a];
      ks_edits_add(arena, edits, ks_rt_src_at(in, sub->begin), ks_rt_src_at(in, sub->end), name);
    }
    ks_buf_addf(&after, "\n%s = %s;", elem, name);
    /* every other buffer the loop touches must not reach the element */
    for (size_t o = 0; o < es.len; o++) {
      const ks_anode *q = es.items[o].param;
      if (q == e->param || e->param->is_restrict || q->is_restrict)
        continue;
      *ks_array_push(arena, guards) =
          ks_arena_printf(arena, "disjoint(%s, %s)", e->param->name, q->name);
    }
    done++;
  }
  if (done)
    ks_inv_around(arena, in, loop, before.data, after.data, edits);
  ks_buf_release(&before);
  ks_buf_release(&after);
  return done;
}

typedef struct loop_walk {
  ks_arena *arena;
  const ks_rule_input *in;
  ks_edits *edits;
  ks_strings guards;
  const char *names_text;
  const char *reason;
  size_t loops, done;
} loop_walk;

/* Pre-order: the outermost loop across which an element stays put gets
 * the register; loops inside a rewritten one are left alone. */
static bool visit_loop(ks_anode *n, void *arg) {
  loop_walk *w = arg;
  if (!ks_inv_is_loop(n) || n->from_macro)
    return true;
  w->loops++;
  size_t done = rewrite_loop(w->arena, w->in, n, w->edits, &w->guards,
                             &w->names_text, &w->reason);
  w->done += done;
  return done == 0;
}

static int apply_scalar_replace(ks_ctx *ctx, const ks_rule_input *in, int param,
                                ks_arena *arena, ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  ks_edits edits = {0};
  loop_walk w = {.arena = arena, .in = in, .edits = &edits,
                 .names_text = in->unit + in->variant_offset};
  ks_anode_walk(in->ast->body, visit_loop, &w);
  if (!w.loops)
    return ks_rt_not_applicable(arena, out, "no for or while loop");
  if (!w.done)
    return ks_rt_not_applicable(
        arena, out, "%s",
        w.reason ? ks_arena_printf(arena, "no element can stay in a register: %s", w.reason)
                 : w.loops == 1
                     ? "its loop writes no global memory (its results go to locals or shared "
                       "memory)"
                     : ks_arena_printf(arena, "none of its %zu loops writes global memory (their "
                                              "results go to locals or shared memory)",
                                       w.loops));
  if (ks_rt_finish(ctx, in, arena, &edits, ks_arena_printf(arena, "scalar_replace=%zu", w.done),
                   out))
    return -1;
  for (size_t k = 0; k < w.guards.len; k++)
    ks_rule_require(arena, &out->child, w.guards.items[k]);
  return 0;
}

const ks_rule ks_rule_scalar_replace = {
    "scalar_replace",
    "an element of global memory a loop reads and writes at a fixed index kept in a register, "
    "stored once after the loop; guarded by disjoint()",
    false,
    NULL,
    0,
    apply_scalar_replace};
