/* rules_meaning: loops, values and aliases as the compiler reads them
 * (rules_meaning.h).
 *
 * Values are the footprint analysis's: an fp_state set up as
 * ks_footprints_of does (integer scalar parameters that the kernel never
 * modifies become symbols), with one definition fact per local that is
 * initialized once and never assigned, in source order, so that fp_eval
 * folds macros, enumerators, constants and those locals; an expression is
 * a value when its range is one point. */
#include <string.h>

#include "footprint_int.h"
#include "ks_expr.h"
#include "rules_meaning.h"

struct ks_meaning {
  fp_state st;
  const fp_fact *defs; /* definition facts of the locals, built on first need */
  bool defs_built;
};

ks_meaning *ks_meaning_open(ks_ctx *ctx, const ks_kast *k, ks_arena *arena) {
  ks_meaning *m = ks_arena_alloc(arena, sizeof *m);
  fp_state *st = &m->st;
  st->ctx = ctx;
  st->arena = arena;
  st->k = k;
  st->user_minmax = -1;
  fp_setup_params(st); /* the footprint analysis's symbols, the same way */
  return m;
}

void ks_meaning_close(ks_meaning *m) {
  if (m)
    fp_consts_release(&m->st);
}

/* ---- values ---- */

/* Locals initialized once and never assigned, as definitions in source
 * order (each one's `at` is the list before it, so a definition only sees
 * those above it). */
static const fp_fact *defs(ks_meaning *m) {
  if (m->defs_built)
    return m->defs;
  m->defs_built = true;
  fp_state *st = &m->st;
  const fp_fact *env = fp_push(st, NULL, (fp_fact){.kind = FP_FACT_SYM_LO});
  if (!st->k->body)
    return m->defs = env;
  ks_rt_nodes all = ks_rt_collect(st->arena, st->k->body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *v = all.items[i];
    if (v->kind != KS_AK_VAR || v->is_pointer || v->shared_space ||
        fp_int_type(v->type) == FP_NOT_INT)
      continue;
    const ks_anode *init = ks_rt_var_init(v);
    const char *keep = st->why;
    if (!init || fp_modified(st, st->k->body, v)) {
      st->why = keep;
      continue;
    }
    env = fp_push(st, env, (fp_fact){.kind = FP_FACT_DEF, .decl = v, .value = init, .at = env});
  }
  return m->defs = env;
}

static bool fp_point(ks_meaning *m, const ks_anode *e, const fp_poly **out, const char **why) {
  fp_state *st = &m->st;
  st->why = NULL;
  fp_range r;
  if (!fp_eval(st, e, defs(m), NULL, &r)) {
    if (why)
      *why = st->why ? st->why : "it cannot be computed";
    return false;
  }
  if (!r.lo || !r.hi || !fp_equal(r.lo, r.hi)) {
    if (why)
      *why = ks_arena_printf(st->arena, "'%s' is not one value for the whole launch", fp_text(st, e));
    return false;
  }
  *out = r.lo;
  return true;
}

/* A never-assigned integer local's initializer, or NULL. */
static const ks_anode *def_of(ks_meaning *m, const ks_anode *ref) {
  for (const fp_fact *f = defs(m); f; f = f->next)
    if (f->kind == FP_FACT_DEF && f->decl == ref->decl)
      return f->value;
  return NULL;
}

/* Sums, differences and products of values are values whatever their
 * signs (the range analysis underneath needs signs to bound a product of
 * ranges, not of points); the rest is the range analysis's. */
static bool point_at(ks_meaning *m, const ks_anode *e, const fp_poly **out, const char **why,
                     unsigned depth) {
  fp_state *st = &m->st;
  const ks_anode *s = ks_rt_strip(e, false);
  if (s && depth < 64) {
    if (s->kind == KS_AK_DECL_REF && s->decl && s->decl->kind == KS_AK_VAR) {
      const ks_anode *init = def_of(m, s);
      if (init && fp_int_type(s->decl->type) == FP_SIGNED)
        return point_at(m, init, out, why, depth + 1);
    }
    const char *op = s->kind == KS_AK_BINARY && s->nkids == 2 ? fp_op_of(st, s) : "";
    if ((!strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*")) &&
        fp_int_type(s->type) == FP_SIGNED) {
      const fp_poly *a, *b;
      if (!point_at(m, s->kids[0], &a, why, depth + 1) || !point_at(m, s->kids[1], &b, why, depth + 1))
        return false;
      *out = op[0] == '+' ? fp_add(st, a, b) : op[0] == '-' ? fp_sub(st, a, b) : fp_mul(st, a, b);
      if (!*out && why)
        *why = st->why ? st->why : "it grows too large";
      return *out != NULL;
    }
  }
  return fp_point(m, e, out, why);
}

static bool point_of(ks_meaning *m, const ks_anode *e, const fp_poly **out, const char **why) {
  if (!e) {
    if (why)
      *why = "there is no expression";
    return false;
  }
  return point_at(m, e, out, why, 0);
}

const char *ks_meaning_value(ks_meaning *m, const ks_anode *e, const char **why) {
  const fp_poly *p;
  if (!point_of(m, e, &p, why))
    return NULL;
  const char *text = fp_print(&m->st, p);
  /* only names guards know: the parameters (launch dimensions have no
   * point value, so they never appear) */
  ks_ctx scratch;
  ks_ctx_init(&scratch, "meaning");
  scratch.verbosity = KS_LOG_ERROR;
  bool ok = !ks_expr_check(&scratch, text);
  if (!ok && why)
    *why = ks_arena_printf(m->st.arena, "'%s' is not a guard expression (%s)", text, scratch.error);
  ks_ctx_release(&scratch);
  return ok ? text : NULL;
}

bool ks_meaning_int(ks_meaning *m, const ks_anode *e, long long *out) {
  const fp_poly *p;
  return point_of(m, e, &p, NULL) && fp_is_const(p, out);
}

/* ---- aliases ---- */

const ks_anode *ks_meaning_through_alias(ks_meaning *m, const ks_anode *e) {
  fp_state *st = &m->st;
  for (int depth = 0; depth < 16; depth++) {
    const ks_anode *s = ks_rt_strip(e, false);
    if (!s || s->kind != KS_AK_DECL_REF || !s->decl || s->decl->kind != KS_AK_VAR ||
        s->decl->shared_space)
      return s ? s : e;
    const ks_anode *init = ks_rt_var_init(s->decl);
    const char *keep = st->why;
    bool changed = !init || fp_modified(st, st->k->body, s->decl);
    st->why = keep;
    if (changed)
      return s;
    e = init;
  }
  return ks_rt_strip(e, false);
}

/* ---- loops ---- */

static bool view_fail(ks_loop_view *v, const char *why) {
  const ks_anode *loop = v->loop;
  memset(v, 0, sizeof *v);
  v->loop = loop;
  v->why = why;
  return false;
}

/* The variable and step of an increment: ++v, v++, v += c, v = v + c,
 * v = c + v. */
static const ks_anode *loop_step(ks_meaning *m, const ks_anode *inc, const ks_anode **by,
                                 const char **why) {
  fp_state *st = &m->st;
  inc = ks_rt_strip(inc, false);
  *by = NULL;
  if (!inc || !inc->nkids) {
    *why = "its step is not 'j++', 'j += c' or 'j = j + c'";
    return NULL;
  }
  const ks_anode *v = ks_rt_strip(inc->kids[0], false);
  if (!v || v->kind != KS_AK_DECL_REF || !v->decl) {
    *why = "its step does not change a variable";
    return NULL;
  }
  const char *op = fp_op_of(st, inc);
  if (inc->kind == KS_AK_UNARY && !strcmp(op, "++"))
    return v->decl;
  if (inc->kind == KS_AK_UNARY && !strcmp(op, "--")) {
    *why = "it counts down";
    return NULL;
  }
  if (inc->kind == KS_AK_COMPOUND_ASSIGN && inc->nkids == 2 && !strcmp(op, "+=")) {
    *by = inc->kids[1];
    return v->decl;
  }
  if (fp_is_op(st, inc, KS_AK_BINARY, "=")) {
    const ks_anode *r = ks_rt_strip(inc->kids[1], false);
    if (fp_is_op(st, r, KS_AK_BINARY, "+")) {
      if (ks_rt_refers_to(r->kids[0], v->decl) && !ks_rt_refers_to(r->kids[1], v->decl)) {
        *by = r->kids[1];
        return v->decl;
      }
      if (ks_rt_refers_to(r->kids[1], v->decl) && !ks_rt_refers_to(r->kids[0], v->decl)) {
        *by = r->kids[0];
        return v->decl;
      }
    }
  }
  *why = ks_arena_printf(st->arena, "its step '%s' is not 'j++', 'j += c' or 'j = j + c'",
                         fp_text(st, inc));
  return NULL;
}

static bool is_loop(const ks_anode *n) {
  return n && (n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO);
}

/* `n` is `var = e` (e not reading var) as a whole statement: directly in a
 * block that holds `loop`, or a FOR's init. */
static bool is_kill(ks_meaning *m, const ks_anode *ref, const ks_anode *var, const ks_anode *loop) {
  const ks_anode *child;
  const ks_anode *a = ks_rt_up(ref, &child);
  if (!a || !fp_is_op(&m->st, a, KS_AK_BINARY, "=") || child != a->kids[0] ||
      ks_rt_refers_to(a->kids[1], var) || ks_rt_count_refs(m->st.arena, a->kids[1], var))
    return false;
  const ks_anode *stmt = a;
  while (stmt->parent && ks_rt_is_wrapper(stmt->parent))
    stmt = stmt->parent;
  const ks_anode *p = stmt->parent;
  if (p && p->kind == KS_AK_FOR && p->kids[0] == stmt)
    return true;
  return p && p->kind == KS_AK_COMPOUND && ks_rt_is_within(loop, p);
}

/* A variable declared outside the loop whose value after the loop is read
 * before it is assigned again (in source order; within an enclosing loop,
 * any use outside this one counts, since the next iteration reads it). */
static bool used_after(ks_meaning *m, const ks_anode *loop, const ks_anode *var) {
  const ks_anode *body = m->st.k->body;
  ks_rt_nodes all = ks_rt_collect(m->st.arena, body);
  const ks_anode *outer = NULL;
  for (const ks_anode *p = loop->parent; p && p != body; p = p->parent)
    if (is_loop(p))
      outer = p;
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_DECL_REF || n->decl != var || ks_rt_is_within(n, loop))
      continue;
    if (outer && ks_rt_is_within(n, outer) && !is_kill(m, n, var, loop))
      return true;
    if (n->begin >= loop->end)
      return !is_kill(m, n, var, loop);
  }
  return false;
}

bool ks_meaning_loop(ks_meaning *m, const ks_anode *loop, ks_loop_view *out) {
  fp_state *st = &m->st;
  memset(out, 0, sizeof *out);
  out->loop = loop;
  if (!loop || loop->kind != KS_AK_FOR || loop->nkids != 4)
    return view_fail(out, "it is not a for loop");
  const ks_anode *init = loop->kids[0], *cond = ks_rt_strip(loop->kids[1], false),
                 *inc = loop->kids[2], *body = loop->kids[3];
  if (!init || !cond || !inc || !body)
    return view_fail(out, "its init, condition or step is missing");
  const char *why = NULL;
  const ks_anode *by;
  const ks_anode *var = loop_step(m, inc, &by, &why);
  if (!var)
    return view_fail(out, why);
  if (var->kind != KS_AK_VAR)
    return view_fail(out, ks_arena_printf(st->arena, "its variable '%s' is not a local",
                                          var->name ? var->name : "?"));
  if (var->is_pointer || fp_int_type(var->type) == FP_NOT_INT)
    return view_fail(out, ks_arena_printf(st->arena, "its variable '%s' is not an integer",
                                          var->name ? var->name : "?"));
  out->var = var;
  const ks_anode *i = ks_rt_strip(init, false);
  if (i->kind == KS_AK_DECL_STMT) {
    if (ks_rt_single_var(i) != var || !ks_rt_var_init(var))
      return view_fail(out, "its init does not declare just its variable with a start");
    out->start = ks_rt_var_init(var);
  } else if (fp_is_op(st, i, KS_AK_BINARY, "=") && ks_rt_refers_to(i->kids[0], var)) {
    out->start = i->kids[1];
    out->declared_outside = true;
  } else {
    return view_fail(out, "its init does not set its variable");
  }
  if (ks_rt_count_refs(st->arena, out->start, var))
    return view_fail(out, "its start reads its own variable");
  if (by) {
    long long s;
    out->step_expr = by;
    out->step = ks_meaning_int(m, by, &s) && s > 0 ? s : 0;
    if (ks_meaning_int(m, by, &s) && s <= 0)
      return view_fail(out, "its step is not positive");
  } else {
    out->step = 1;
  }
  /* the condition: var OP bound, or bound OP' var */
  static const struct {
    const char *op, *left, *right; /* var on the left / on the right */
  } cmps[] = {{"<", "<", NULL}, {"<=", "<=", NULL}, {"!=", "!=", "!="}, {">", NULL, "<"},
              {">=", NULL, "<="}};
  const char *op = cond->kind == KS_AK_BINARY && cond->nkids == 2 ? fp_op_of(st, cond) : "";
  for (size_t k = 0; k < sizeof cmps / sizeof *cmps && !out->bound; k++) {
    if (strcmp(op, cmps[k].op))
      continue;
    if (cmps[k].left && ks_rt_refers_to(ks_rt_strip(cond->kids[0], true), var)) {
      out->bound = cond->kids[1];
      out->cmp = cmps[k].left;
    } else if (cmps[k].right && ks_rt_refers_to(ks_rt_strip(cond->kids[1], true), var)) {
      out->bound = cond->kids[0];
      out->cmp = cmps[k].right;
    }
  }
  if (!out->bound)
    return view_fail(out, ks_arena_printf(st->arena, "its condition '%s' is not 'j < end'",
                                          fp_text(st, cond)));
  if (ks_rt_count_refs(st->arena, out->bound, var))
    return view_fail(out, "its bound reads its own variable");
  if (!strcmp(out->cmp, "!=") && out->step != 1)
    return view_fail(out, "it tests 'j != end' with a step other than 1");
  out->cond = cond;
  out->end_add = !strcmp(out->cmp, "<=") ? 1 : 0;
  const char *keep = st->why;
  out->modified_in_body = fp_modified(st, body, var);
  st->why = keep;
  out->used_after = out->declared_outside && used_after(m, loop, var);
  return true;
}

const char *ks_meaning_loop_end(ks_meaning *m, const ks_loop_view *v, const char **why) {
  if (v->why || !v->bound) {
    if (why)
      *why = v->why ? v->why : "the loop is not canonical";
    return NULL;
  }
  const fp_poly *p;
  if (!point_of(m, v->bound, &p, why))
    return NULL;
  if (v->end_add && !(p = fp_addc(&m->st, p, v->end_add))) {
    if (why)
      *why = "its bound + 1 overflows";
    return NULL;
  }
  return fp_print(&m->st, p);
}
