/* footprint_loop: the facts of a `for` loop.
 *
 * The variable and its step come from the increment (v++, ++v, v += e,
 * v = v + e, v -= e, v *= e, v <<= e, v /= e, v >>= e), the start from the
 * init (`int v = S` or `v = S`). Going up, v is >= the start's lower bound
 * in every iteration; going down, <= its upper bound; the condition (each
 * part of an && chain) bounds the other side in the body. `v != B` counts
 * as `v < B` only for a unit step from a start provably <= B. The loop is
 * not understood (and its variable has no range) when the body changes v,
 * when the step is not provably in its direction (a positive e, a factor
 * from a start >= 1), or when an unsigned v going down could pass 0. */
#include <string.h>

#include "footprint_int.h"

typedef enum step_kind { STEP_ADD, STEP_SUB, STEP_MUL, STEP_SHL, STEP_DIV, STEP_SHR } step_kind;

/* The loop's variable and step from its increment. */
static const ks_anode *loop_step(fp_state *st, const ks_anode *inc, step_kind *kind,
                                 const ks_anode **by) {
  inc = ks_anode_strip(inc, false);
  *by = NULL;
  if (!inc || !inc->nkids)
    return NULL;
  const ks_anode *v = ks_rt_strip(inc->kids[0], false);
  if (!v || v->kind != KS_AK_DECL_REF || !v->decl || v->decl->kind != KS_AK_VAR)
    return NULL;
  const char *op = fp_op_of(st, inc);
  if (inc->kind == KS_AK_UNARY && (!strcmp(op, "++") || !strcmp(op, "--"))) {
    *kind = op[0] == '+' ? STEP_ADD : STEP_SUB;
    return v->decl;
  }
  if (inc->kind == KS_AK_COMPOUND_ASSIGN && inc->nkids == 2) {
    static const struct {
      const char *op;
      step_kind kind;
    } ops[] = {{"+=", STEP_ADD}, {"-=", STEP_SUB}, {"*=", STEP_MUL},
               {"<<=", STEP_SHL}, {"/=", STEP_DIV}, {">>=", STEP_SHR}};
    for (size_t i = 0; i < 6; i++)
      if (!strcmp(op, ops[i].op)) {
        *kind = ops[i].kind;
        *by = inc->kids[1];
        return v->decl;
      }
    return NULL;
  }
  /* v = v + e, v = e + v, v = v - e */
  if (fp_is_op(st, inc, KS_AK_BINARY, "=")) {
    const ks_anode *r = ks_anode_strip(inc->kids[1], false);
    if (fp_is_op(st, r, KS_AK_BINARY, "+") || fp_is_op(st, r, KS_AK_BINARY, "-")) {
      bool plus = !strcmp(fp_op_of(st, r), "+");
      if (ks_rt_refers_to(r->kids[0], v->decl)) {
        *kind = plus ? STEP_ADD : STEP_SUB;
        *by = r->kids[1];
        return v->decl;
      }
      if (plus && ks_rt_refers_to(r->kids[1], v->decl)) {
        *kind = STEP_ADD;
        *by = r->kids[0];
        return v->decl;
      }
    }
  }
  return NULL;
}

/* The loop's start: `int v = S` or `v = S` in its init. */
static const ks_anode *loop_start(fp_state *st, const ks_anode *init, const ks_anode *v) {
  init = ks_anode_strip(init, false);
  if (!init)
    return NULL;
  if (init->kind == KS_AK_DECL_STMT) {
    const ks_anode *var = ks_rt_single_var(init);
    return var == v ? ks_rt_var_init(var) : NULL;
  }
  if (fp_is_op(st, init, KS_AK_BINARY, "=") && ks_rt_refers_to(init->kids[0], v))
    return init->kids[1];
  return NULL;
}

static bool step_ok(fp_state *st, const ks_anode *v, step_kind kind, const ks_anode *by,
                    fp_range start, const fp_fact *env) {
  fp_range r = {fp_num(st, 1), fp_num(st, 1)};
  if (by && !fp_eval(st, by, env, NULL, &r))
    return false;
  /* An unsigned variable stepped down must not pass 0 (it would wrap to
   * the top): its smallest value in the body is at least the step. */
  fp_range in_body;
  if (kind == STEP_SUB && fp_int_type(v->type) == FP_UNSIGNED &&
      !(r.hi && fp_eval_var(st, v, v, env, NULL, &in_body) && fp_le(st, r.hi, in_body.lo, env)))
    return false;
  long long need = kind == STEP_SHL || kind == STEP_SHR ? 0 : kind == STEP_DIV ? 2 : 1;
  if (!r.lo || fp_lower(st, r.lo, env) < need)
    return false;
  if (kind == STEP_MUL || kind == STEP_SHL) /* grows only from >= 1 */
    return start.lo && fp_lower(st, start.lo, env) >= 1;
  if (kind == STEP_DIV || kind == STEP_SHR) /* shrinks toward 0: stays <= a start >= 0 */
    return fp_nonneg(st, start.hi, env);
  return true;
}

void fp_for_facts(fp_state *st, const ks_anode *loop, const fp_fact *env, const fp_fact **in_loop,
                  const fp_fact **in_body) {
  const char *keep = st->why;
  *in_loop = *in_body = env;
  const ks_anode *init = loop->kids[0], *cond = loop->kids[1], *inc = loop->kids[2],
                 *body = loop->kids[3];
  step_kind kind;
  const ks_anode *by;
  const ks_anode *v = loop_step(st, inc, &kind, &by);
  if (!v)
    return; /* its variables have no facts: their uses say why */
  const char *why = NULL;
  fp_range start = {0};
  bool up = kind == STEP_ADD || kind == STEP_MUL || kind == STEP_SHL;
  const ks_anode *s = loop_start(st, init, v);
  fp_sign sign = fp_int_type(v->type);
  if (sign != FP_SIGNED && sign != FP_UNSIGNED)
    why = ks_arena_printf(st->arena, "the loop variable '%s' has type '%s'", v->name,
                          v->type ? v->type : "?");
  else if ((body && fp_modified(st, body, v)) || (cond && fp_modified(st, cond, v)))
    why = ks_arena_printf(st->arena, "'%s' is modified in the body of its loop", v->name);
  else if (!s)
    why = ks_arena_printf(st->arena, "the start of the loop over '%s' is not understood",
                          v->name);
  else if (!fp_eval(st, s, env, NULL, &start))
    why = st->why;
  else if (up ? !start.lo : !start.hi)
    why = ks_arena_printf(st->arena, "the start of the loop over '%s' is not bounded", v->name);
  fp_fact lf = {.kind = FP_FACT_LOOP, .decl = v, .why = why};
  /* An unsigned variable going down is >= 0 as long as it does not wrap,
   * which step_ok checks on the body. */
  if (!why)
    lf.r = up ? (fp_range){start.lo, NULL}
              : (fp_range){sign == FP_UNSIGNED ? fp_num(st, 0) : NULL, start.hi};
  const fp_fact *loop_env = fp_push(st, env, lf);
  *in_loop = *in_body = loop_env;
  if (why) {
    st->why = keep;
    return;
  }
  /* The body runs only where the condition held. `v != B` is `v < B` for
   * a unit step starting at or below B (above, for a downward loop). */
  ks_rt_nodes parts = {0};
  ks_rt_split_chain(st->arena, cond, "&&", &parts);
  const fp_fact *b = loop_env;
  bool unit = !by && (kind == STEP_ADD || kind == STEP_SUB);
  fp_range one;
  long long c1;
  if (by && (kind == STEP_ADD || kind == STEP_SUB) && fp_eval(st, by, env, NULL, &one))
    unit = fp_const_point(one, &c1) && c1 == 1;
  for (size_t i = 0; i < parts.len; i++) {
    const ks_anode *c = parts.items[i];
    if (fp_is_op(st, c, KS_AK_BINARY, "!=") && unit) {
      int side = ks_rt_refers_to(c->kids[0], v) ? 0 : ks_rt_refers_to(c->kids[1], v) ? 1 : -1;
      fp_range rb;
      if (side >= 0 && fp_eval(st, c->kids[1 - side], env, NULL, &rb) &&
          (up ? fp_le(st, start.hi, rb.lo, env) : fp_le(st, rb.hi, start.lo, env)))
        b = fp_compare(st, c->kids[side], up ? "<" : ">", c->kids[1 - side], b);
      continue;
    }
    b = fp_assume(st, c, true, b);
  }
  if (!step_ok(st, v, kind, by, start, b)) {
    lf.why = ks_arena_printf(st->arena, "the step of the loop over '%s' ('%s') is not understood",
                             v->name, fp_text(st, inc));
    lf.r = (fp_range){0};
    *in_loop = *in_body = fp_push(st, env, lf);
    st->why = keep;
    return;
  }
  *in_body = b;
  st->why = keep;
}
