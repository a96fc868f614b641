/* rules_hoist: hoist_invariant, a call of a pure math function whose
 * operands a loop does not change (and the arithmetic around it) computed
 * once before the loop into a const local:
 *
 *   for (k = 0; k < W; k++)                const float ks_inv = logf((float)cnt);
 *     h += p[k] * (logf(p[k]) -            for (k = 0; k < W; k++)
 *                  logf((float)cnt));        h += p[k] * (logf(p[k]) - ks_inv);
 *
 * Conservative on purpose: only calls of the math functions listed below
 * (no memory, no side effects), arithmetic, casts, literals and names the
 * loop leaves alone (rules_invariant.c); no memory read is moved, integer
 * division is left where a guard may protect it, and an expression of
 * literals alone is the compiler's to fold. */
#include <string.h>

#include "ks_buf.h"
#include "rules_invariant.h"

static bool integer_type(const char *t) {
  return t && !strstr(t, "float") && !strstr(t, "double") && !strstr(t, "half") &&
         !strstr(t, "bfloat");
}

typedef struct hoist_walk {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *loop;
  const ks_anode *why; /* the first operand that made an expression vary */
  bool saw_math;       /* a pure math call in the loop */
  const char *reason;  /* why the first math call seen stays in the loop */
} hoist_walk;

/* Is `n` an expression the loop does not change and that may be evaluated
 * before it? *calls counts the pure calls, *names the names in it. */
static bool invariant_rec(hoist_walk *w, const ks_anode *n, unsigned *calls, unsigned *names);

static bool invariant(hoist_walk *w, const ks_anode *n, unsigned *calls, unsigned *names) {
  bool ok = invariant_rec(w, n, calls, names);
  if (!ok && !w->why)
    w->why = n;
  return ok;
}

static bool invariant_rec(hoist_walk *w, const ks_anode *n, unsigned *calls, unsigned *names) {
  if (!n)
    return false;
  switch (n->kind) {
  case KS_AK_INT_LITERAL:
  case KS_AK_FLOAT_LITERAL:
    return true;
  case KS_AK_DECL_REF:
    if (n->decl && (n->decl->is_pointer || (n->decl->type && strchr(n->decl->type, '['))))
      return false;
    (*names)++;
    return ks_inv_ref_invariant(w->loop, n);
  case KS_AK_MEMBER:
    /* threadIdx.x and friends only */
    return !n->arrow && (ks_anode_is_builtin(n, "threadIdx", 0) ||
                         ks_anode_is_builtin(n, "blockIdx", 0) ||
                         ks_anode_is_builtin(n, "blockDim", 0) ||
                         ks_anode_is_builtin(n, "gridDim", 0));
  case KS_AK_PAREN:
  case KS_AK_CAST:
    break;
  case KS_AK_CALL: {
    const char *name = ks_rt_callee(w->arena, n);
    if (!ks_inv_pure_math(name) || n->from_macro)
      return false;
    (*calls)++;
    break;
  }
  case KS_AK_UNARY:
    if (!n->op || (strcmp(n->op, "-") && strcmp(n->op, "+") && strcmp(n->op, "~") &&
                   strcmp(n->op, "!")))
      return false;
    break;
  case KS_AK_BINARY: {
    /* no shifts: a count past the width, kept from happening by a guard in
     * the loop, is undefined before it */
    static const char *const ops[] = {"+", "-", "*", "/", "%", "&", "|", "^"};
    bool ok = false;
    for (size_t k = 0; k < sizeof ops / sizeof *ops && !ok; k++)
      ok = n->op && !strcmp(n->op, ops[k]);
    if (!ok)
      return false;
    /* x / 0 on integers is undefined: a guard in the loop may prevent it */
    if ((!strcmp(n->op, "/") || !strcmp(n->op, "%")) && integer_type(n->type))
      return false;
    break;
  }
  default:
    if (!ks_rt_is_wrapper(n))
      return false;
  }
  for (size_t k = 0; k < n->nkids; k++)
    if (!ks_rt_is_ref_node(n->kids[k]) && !invariant(w, n->kids[k], calls, names))
      return false;
  return true;
}

/* The type the const local is declared with: the expression's when it is
 * a plain name ("float", "double", "T"), else auto. */
static const char *local_type(ks_arena *arena, const ks_anode *e) {
  const char *t = e->type;
  if (!t || !*t || strstr(t, "dependent") || strstr(t, "const"))
    return "auto";
  for (const char *p = t; *p; p++)
    if (!(*p == '_' || *p == ' ' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9')))
      return "auto";
  return ks_arena_strdup(arena, t);
}

typedef struct found_expr {
  const ks_anode *node;
  const char *text; /* squeezed, to share one local among equal ones */
  const char *name;
} found_expr;

typedef KS_ARRAY(found_expr) found_exprs;

/* The largest invariant expressions holding a pure call, below `n`. */
static void find_exprs(hoist_walk *w, const ks_anode *n, found_exprs *out) {
  if (!n)
    return;
  if (n->kind == KS_AK_CALL || n->kind == KS_AK_BINARY || n->kind == KS_AK_UNARY ||
      n->kind == KS_AK_PAREN || n->kind == KS_AK_CAST) {
    unsigned calls = 0, names = 0;
    w->why = NULL;
    bool inv = !n->from_macro && invariant(w, n, &calls, &names);
    bool math = n->kind == KS_AK_CALL && ks_inv_pure_math(ks_rt_callee(w->arena, n));
    if (math && !w->saw_math) {
      w->saw_math = true;
      const char *call = ks_rt_text_of(w->arena, w->in, n);
      const ks_anode *why = w->why ? ks_rt_strip(w->why, false) : NULL;
      if (n->from_macro)
        w->reason = ks_arena_printf(w->arena, "%s comes from a macro", call);
      else if (inv && !names)
        w->reason = ks_arena_printf(w->arena, "%s has only literals (the compiler folds it)", call);
      else if (why && why->kind == KS_AK_DECL_REF && why->decl && !why->decl->is_pointer)
        w->reason = ks_arena_printf(w->arena, "%s uses '%s', which the loop changes", call,
                                    why->name);
      else if (why && why->kind == KS_AK_BINARY && why->op &&
               (!strcmp(why->op, "/") || !strcmp(why->op, "%")))
        w->reason = ks_arena_printf(w->arena, "%s holds the integer division %s, which a guard "
                                              "in the loop may protect", call,
                                    ks_rt_text_of(w->arena, w->in, why));
      else if (why)
        w->reason = ks_arena_printf(w->arena, "%s depends on %s, %s", call,
                                    ks_rt_text_of(w->arena, w->in, why),
                                    why->kind == KS_AK_SUBSCRIPT || why->kind == KS_AK_UNARY ||
                                            why->kind == KS_AK_DECL_REF
                                        ? "a read of memory (not hoisted)"
                                        : "which is not known to be pure");
    }
    if (inv && calls && names && n->kind != KS_AK_PAREN) {
      found_expr *f = ks_array_push(w->arena, out);
      f->node = n;
      f->text = ks_inv_squeezed(w->arena, w->in, n);
      f->name = NULL;
      return;
    }
  }
  for (size_t k = 0; k < n->nkids; k++)
    find_exprs(w, n->kids[k], out);
}

typedef struct loop_walk {
  ks_arena *arena;
  const ks_rule_input *in;
  ks_edits *edits;
  const char *names_text;
  size_t loops, done;
  bool saw_math;
  const char *reason;
} loop_walk;

static bool visit_loop(ks_anode *n, void *arg) {
  loop_walk *lw = arg;
  if (!ks_inv_is_loop(n) || n->from_macro)
    return true;
  lw->loops++;
  hoist_walk w = {.arena = lw->arena, .in = lw->in, .loop = n};
  found_exprs found = {0};
  ks_rt_nodes parts = ks_inv_loop_parts(lw->arena, n);
  for (size_t k = 0; k < parts.len; k++)
    find_exprs(&w, parts.items[k], &found);
  if (!lw->reason && w.reason)
    lw->reason = w.reason;
  lw->saw_math |= w.saw_math;
  if (!found.len)
    return true;
  ks_buf before = KS_BUF_INIT;
  for (size_t k = 0; k < found.len; k++) {
    found_expr *f = &found.items[k];
    for (size_t j = 0; j < k && !f->name; j++)
      if (!strcmp(found.items[j].text, f->text))
        f->name = found.items[j].name;
    if (!f->name) {
      f->name = ks_rt_fresh(lw->arena, lw->names_text, "ks_inv");
      lw->names_text = ks_arena_printf(lw->arena, "%s %s", lw->names_text, f->name);
      const ks_anode *e = ks_rt_strip(f->node, false);
      ks_buf_addf(&before, "const %s %s = %s;\n", local_type(lw->arena, e ? e : f->node), f->name,
                  ks_rt_text_of(lw->arena, lw->in, f->node));
      lw->done++;
    }
    ks_edits_add(lw->arena, lw->edits, ks_rt_src_at(lw->in, f->node->begin),
                 ks_rt_src_at(lw->in, f->node->end), f->name);
  }
  ks_inv_around(lw->arena, lw->in, n, before.data, "", lw->edits);
  ks_buf_release(&before);
  return false; /* loops inside: the next application */
}

static int apply_hoist_invariant(ks_ctx *ctx, const ks_rule_input *in, int param,
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
        !w.saw_math ? "no math function is called inside a loop"
        : w.reason  ? ks_arena_printf(arena, "no math call in a loop is loop-invariant: %s",
                                      w.reason)
                    : "no math call in a loop is loop-invariant");
  return ks_rt_finish(ctx, in, arena, &edits,
                      ks_arena_printf(arena, "hoist_invariant=%zu", w.done), out);
}

const ks_rule ks_rule_hoist_invariant = {
    "hoist_invariant",
    "calls of pure math functions (and the arithmetic around them) on values a loop does not "
    "change computed once before the loop into const locals",
    false,
    NULL,
    0,
    apply_hoist_invariant};
