/* footprint: the extent of every buffer a kernel touches (ks_footprint.h).
 *
 * One walk over the kernel's statements carries the facts of the path
 * (footprint_int.h): conditions of `if`s, `&&`, `?:` and early exits
 * (`if (i >= n) return;` narrows the rest of its block), loop variables'
 * ranges, and the definitions of locals assigned once. Each use of a
 * pointer parameter (or of a local alias of one) is classified where the
 * walk meets it: an element access records 1 + the upper bound of its
 * index, anything the analysis cannot follow records why. Nothing is
 * guessed: a use that is not understood leaves the extent unproved.
 *
 * What the tree does not show is checked too: an object of a member call
 * (`p[i].add(v)`: the tree keeps only the arguments) counts as a use not
 * understood (footprint_change.c says what counts as a change). */
#include <stdio.h>
#include <string.h>

#include "footprint_int.h"
#include "ks_ctext.h"
#include "ks_expr.h"

const char *fp_text(fp_state *st, const ks_anode *n) {
  const char *t = ks_anode_text(st->arena, st->k, n);
  char buf[80];
  size_t o = 0;
  bool space = false;
  for (const char *p = t; *p && o < 64; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
      space = o > 0;
      continue;
    }
    if (space)
      buf[o++] = ' ';
    space = false;
    buf[o++] = *p;
  }
  if (o >= 64)
    memcpy(buf + (o = 61), "...", 3), o += 3;
  buf[o] = '\0';
  return ks_arena_strdup(st->arena, buf);
}

/* ---- parameters and aliases ---- */

static fp_param *param_of(fp_state *st, const ks_anode *decl) {
  for (size_t i = 0; i < st->nparams; i++)
    if (st->params[i].decl == decl)
      return &st->params[i];
  return NULL;
}

static const fp_alias *alias_of(fp_state *st, const ks_anode *var) {
  for (size_t i = 0; i < st->aliases.len; i++)
    if (st->aliases.items[i].var == var)
      return &st->aliases.items[i];
  return NULL;
}

/* The kernel's parameter (a pointer) a DECL_REF's declaration stands for. */
static fp_param *pointer_root(fp_state *st, const ks_anode *decl) {
  if (!decl)
    return NULL;
  if (decl->kind == KS_AK_PARAM) {
    fp_param *p = param_of(st, decl);
    return p && p->pointer ? p : NULL;
  }
  const fp_alias *a = alias_of(st, decl);
  return a ? a->root : NULL;
}

static const ks_anode *pointer_ref(fp_state *st, const ks_anode *e) {
  e = ks_rt_strip(e, false);
  return e && e->kind == KS_AK_DECL_REF && pointer_root(st, e->decl) ? e->decl : NULL;
}

static const char *unqualified_pointee(const char *t) {
  if (!t)
    return "";
  while (!strncmp(t, "const ", 6) || !strncmp(t, "volatile ", 9))
    t += t[0] == 'c' ? 6 : 9;
  return t;
}

static void find_aliases(fp_state *st) {
  ks_rt_nodes all = ks_rt_collect(st->arena, st->k->body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *v = all.items[i];
    const ks_anode *init = v->kind == KS_AK_VAR && v->is_pointer ? ks_rt_var_init(v) : NULL;
    if (!init)
      continue;
    const ks_anode *e = ks_rt_strip(init, false), *base = NULL, *offset = NULL;
    int sign = 1;
    if ((base = pointer_ref(st, e))) {
    } else if (e->kind == KS_AK_BINARY && e->nkids == 2 && !strcmp(fp_op_of(st, e), "+")) {
      if ((base = pointer_ref(st, e->kids[0])))
        offset = e->kids[1];
      else if ((base = pointer_ref(st, e->kids[1])))
        offset = e->kids[0];
    } else if (e->kind == KS_AK_BINARY && e->nkids == 2 && !strcmp(fp_op_of(st, e), "-")) {
      if ((base = pointer_ref(st, e->kids[0]))) {
        offset = e->kids[1];
        sign = -1;
      }
    } else if (e->kind == KS_AK_UNARY && e->nkids == 1 && !strcmp(fp_op_of(st, e), "&")) {
      const ks_anode *s = ks_rt_strip(e->kids[0], false);
      if (s && s->kind == KS_AK_SUBSCRIPT && s->nkids == 2 && (base = pointer_ref(st, s->kids[0])))
        offset = s->kids[1];
    }
    if (!base || fp_modified(st, st->k->body, v))
      continue;
    /* Same element type, or indices would count other elements. */
    const ks_anode *bd = base->kind == KS_AK_PARAM ? base : alias_of(st, base)->var;
    if (strcmp(unqualified_pointee(v->pointee), unqualified_pointee(bd->pointee)))
      continue;
    *ks_array_push(st->arena, &st->aliases) =
        (fp_alias){v, base, offset, sign, pointer_root(st, base)};
  }
}

/* ---- uses of pointers ---- */

static void fail_param(fp_param *p, const char *why) {
  if (!p->why)
    p->why = why ? why : "a use of it is not understood";
}

static fp_range r_add(fp_state *st, fp_range a, fp_range b, int sign) {
  if (sign > 0)
    return (fp_range){a.lo && b.lo ? fp_add(st, a.lo, b.lo) : NULL,
                      a.hi && b.hi ? fp_add(st, a.hi, b.hi) : NULL};
  return (fp_range){a.lo && b.hi ? fp_sub(st, a.lo, b.hi) : NULL,
                    a.hi && b.lo ? fp_sub(st, a.hi, b.lo) : NULL};
}

/* The range of an alias's offset from its parameter, as of `env`. */
static bool offset_of(fp_state *st, const ks_anode *decl, const fp_fact *env, const fp_fact *cut,
                      fp_range *out) {
  if (decl->kind == KS_AK_PARAM) {
    *out = (fp_range){fp_num(st, 0), fp_num(st, 0)};
    return true;
  }
  const fp_alias *a = alias_of(st, decl);
  const fp_fact *f = env;
  while (f && !(f->kind == FP_FACT_DEF && f->decl == decl))
    f = f->next;
  if (!f || (cut && !fp_in_chain(cut, f)))
    return fp_fail(st, "'%s' is used where its definition is not known", decl->name);
  fp_range b, o;
  if (!offset_of(st, a->base, env, f->at, &b))
    return false;
  if (!a->offset) {
    *out = b;
    return true;
  }
  if (!fp_eval(st, a->offset, env, f->at, &o))
    return false;
  *out = r_add(st, b, o, a->sign);
  return true;
}

static void record(fp_state *st, fp_param *p, const ks_anode *at, fp_range idx, int how,
                   const fp_fact *env) {
  if (!fp_nonneg(st, idx.lo, env)) {
    fail_param(p, ks_arena_printf(st->arena, "'%s' may index below the pointer", fp_text(st, at)));
    return;
  }
  if (!idx.hi) {
    fail_param(p, ks_arena_printf(st->arena, "the index of '%s' has no upper bound the analysis "
                                             "can prove",
                                  fp_text(st, at)));
    return;
  }
  const fp_poly *end = fp_addc(st, idx.hi, 1);
  if (!end) {
    fail_param(p, st->why);
    return;
  }
  *ks_array_push(st->arena, &p->ends) = (fp_end){end, env};
  p->read |= how & 1;
  p->written |= (how & 2) != 0;
}

/* How an element (p[i], *p, p->m) is used: 1 read, 2 written, 3 both;
 * 0: its address goes somewhere the analysis does not follow. */
static int element_use(fp_state *st, const ks_anode *x, const char **why) {
  const ks_anode *c = x, *cc, *p;
  for (;;) {
    p = ks_rt_up(c, &cc);
    if (p && ((p->kind == KS_AK_MEMBER && !p->arrow) || p->kind == KS_AK_SUBSCRIPT) &&
        p->nkids && p->kids[0] == cc) {
      c = p;
      continue;
    }
    break;
  }
  if (!p)
    return 1;
  const char *op = fp_op_of(st, p);
  if (p->kind == KS_AK_BINARY && p->kids[0] == cc && !strcmp(op, "="))
    return 2;
  if (p->kind == KS_AK_COMPOUND_ASSIGN && p->kids[0] == cc)
    return 3;
  if (p->kind == KS_AK_UNARY && (!strcmp(op, "++") || !strcmp(op, "--")))
    return 3;
  if (p->kind == KS_AK_BINARY && !strcmp(op, "?"))
    return 3; /* an assignment, perhaps */
  if (p->kind == KS_AK_UNARY && !strcmp(op, "?")) {
    *why = ks_arena_printf(st->arena, "an operator on '%s' inside a macro could not be read",
                           fp_text(st, c)); /* `&` perhaps */
    return 0;
  }
  if (p->kind == KS_AK_UNARY && !strcmp(op, "&")) {
    const ks_anode *c2, *call = ks_rt_up(p, &c2);
    int k = call && call->kind == KS_AK_CALL && call->nkids && call->kids[0] == c2
                ? fp_call_kind(st, call)
                : 0;
    if (!k)
      *why = ks_arena_printf(st->arena, "the address of '%s' is passed on", fp_text(st, c));
    return k;
  }
  if (p->kind == KS_AK_CALL) {
    for (size_t a = 0; a < p->nkids; a++)
      if (p->kids[a] == cc)
        return fp_by_value(st, p, a) ? 1 : 3;
    return 3;
  }
  if (p->kind == KS_AK_VAR && p->type && strchr(p->type, '&'))
    return 3;
  return 1;
}

/* An element `x` of the buffer at index range `idx`. */
static void element(fp_state *st, fp_param *ps, const ks_anode *x, fp_range idx,
                    const fp_fact *env) {
  const ks_anode *c, *pp = ks_rt_up(x, &c);
  if (pp && pp->kind == KS_AK_UNARY && !strcmp(fp_op_of(st, pp), "&")) {
    const ks_anode *c2, *ppp = ks_rt_up(pp, &c2);
    int k = ppp && ppp->kind == KS_AK_CALL && ppp->nkids && ppp->kids[0] == c2
                ? fp_call_kind(st, ppp)
                : 0;
    if (k) {
      record(st, ps, x, idx, k, env);
      return;
    }
    if (ppp && ppp->kind == KS_AK_VAR && alias_of(st, ppp))
      return; /* `T *row = &p[off];`: the alias's own uses are the accesses */
    fail_param(ps, ks_arena_printf(st->arena, "the address of '%s' is passed on", fp_text(st, x)));
    return;
  }
  const char *why = NULL;
  int how = element_use(st, x, &why);
  if (!how) {
    fail_param(ps, why);
    return;
  }
  record(st, ps, x, idx, how, env);
}

static bool is_null(const ks_anode *n) {
  n = ks_rt_strip(n, true);
  if (!n)
    return false;
  if (n->kind == KS_AK_INT_LITERAL)
    return n->int_value == 0;
  return n->kind == KS_AK_OTHER && n->kind_name &&
         (!strcmp(n->kind_name, "CXXNullPtrLiteralExpr") || !strcmp(n->kind_name, "GNUNullExpr"));
}

/* Uses that read no element: `if (p)`, `!p`, `p && ...`, `p != nullptr`. */
static bool null_test(fp_state *st, const ks_anode *p, const ks_anode *child) {
  const char *op = fp_op_of(st, p);
  switch (p->kind) {
  case KS_AK_IF:
  case KS_AK_WHILE:
  case KS_AK_CONDITIONAL:
    return p->kids[0] == child;
  case KS_AK_FOR:
    return p->kids[1] == child;
  case KS_AK_DO:
    return p->nkids > 1 && p->kids[1] == child;
  case KS_AK_UNARY:
    return !strcmp(op, "!");
  case KS_AK_BINARY:
    if (!strcmp(op, "&&") || !strcmp(op, "||"))
      return true;
    if (!strcmp(op, "==") || !strcmp(op, "!="))
      return is_null(p->kids[p->kids[0] == child ? 1 : 0]);
    return false;
  default:
    return false;
  }
}

static bool is_op_node(fp_state *st, const ks_anode *n, const char *op) {
  return n->kind == KS_AK_UNARY && n->nkids == 1 && !strcmp(fp_op_of(st, n), op);
}

static bool in_lambda(const ks_anode *n) {
  for (; n; n = n->parent)
    if (n->kind == KS_AK_OTHER && n->kind_name && !strcmp(n->kind_name, "LambdaExpr"))
      return true;
  return false;
}

static bool is_pointer_expr(const ks_anode *n) {
  return n->type && (strchr(n->type, '*') || strchr(n->type, '['));
}

static void use_pointer(fp_state *st, const ks_anode *ref, const fp_fact *env) {
  fp_param *ps = pointer_root(st, ref->decl);
  if (in_lambda(ref)) {
    fail_param(ps, "it is used inside a lambda");
    return;
  }
  /* Where the pointer goes, through p + i, i + p and p - i. */
  ks_rt_nodes steps = {0};
  const ks_anode *child, *p = ks_rt_up(ref, &child);
  while (p && p->kind == KS_AK_BINARY && p->nkids == 2) {
    const char *op = fp_op_of(st, p);
    bool plus = !strcmp(op, "+"), minus = !strcmp(op, "-") && p->kids[0] == child;
    const ks_anode *other = p->kids[0] == child ? p->kids[1] : p->kids[0];
    if (!(plus || minus) || is_pointer_expr(other))
      break;
    *ks_array_push(st->arena, &steps) = p;
    p = ks_rt_up(p, &child);
  }
  if (!p) {
    fail_param(ps, "a use of it is not understood");
    return;
  }
  /* An alias's definition (`T *row = p + off;`, `= &p[off]`): the alias's
   * own uses are the accesses. */
  if (p->kind == KS_AK_VAR && alias_of(st, p))
    return;
  if (p->kind == KS_AK_SUBSCRIPT && p->kids[0] == child) {
    const ks_anode *c2, *c3, *amp = ks_rt_up(p, &c2);
    const ks_anode *v = amp && is_op_node(st, amp, "&") ? ks_rt_up(amp, &c3) : NULL;
    if (v && v->kind == KS_AK_VAR && alias_of(st, v))
      return;
  }
  fp_range off;
  if (!offset_of(st, ref->decl, env, NULL, &off)) {
    fail_param(ps, st->why);
    return;
  }
  const ks_anode *prev = ref;
  for (size_t k = 0; k < steps.len; k++) {
    const ks_anode *b = steps.items[k];
    const ks_anode *mine = ks_rt_is_within(prev, b->kids[0]) ? b->kids[0] : b->kids[1];
    const ks_anode *other = mine == b->kids[0] ? b->kids[1] : b->kids[0];
    fp_range r;
    if (!fp_eval(st, other, env, NULL, &r)) {
      fail_param(ps, st->why);
      return;
    }
    off = r_add(st, off, r, !strcmp(fp_op_of(st, b), "+") ? 1 : -1);
    prev = b;
  }
  bool moved = steps.len > 0;
  if (p->kind == KS_AK_SUBSCRIPT && p->nkids == 2 && p->kids[0] == child) {
    fp_range i;
    if (!fp_eval(st, p->kids[1], env, NULL, &i)) {
      fail_param(ps, st->why);
      return;
    }
    element(st, ps, p, r_add(st, off, i, 1), env);
    return;
  }
  if ((p->kind == KS_AK_UNARY && !strcmp(fp_op_of(st, p), "*")) ||
      (p->kind == KS_AK_MEMBER && p->arrow && p->kids[0] == child)) {
    element(st, ps, p, off, env);
    return;
  }
  if (p->kind == KS_AK_CALL && p->nkids && p->kids[0] == child && fp_call_kind(st, p)) {
    record(st, ps, p, off, fp_call_kind(st, p), env);
    return;
  }
  if (!moved && null_test(st, p, child))
    return;
  if (p->kind == KS_AK_CAST)
    fail_param(ps, ks_arena_printf(st->arena, "it is cast to '%s'", p->type ? p->type : "?"));
  else if (p->kind == KS_AK_CALL)
    fail_param(ps, ks_arena_printf(st->arena, "it is passed to '%s'", ks_rt_callee(st->arena, p)));
  else if (p->kind == KS_AK_VAR || (p->kind == KS_AK_BINARY && !strcmp(fp_op_of(st, p), "=")))
    fail_param(ps, ks_arena_printf(st->arena, "it is stored in '%s'", fp_text(st, p)));
  else
    fail_param(ps, ks_arena_printf(st->arena, "it is used in '%s', which the analysis does not "
                                              "follow",
                                   fp_text(st, p)));
}

/* ---- the walk ---- */

static void walk_expr(fp_state *st, const ks_anode *n, const fp_fact *env) {
  if (!n)
    return;
  if (n->kind == KS_AK_BINARY && n->nkids == 2) {
    const char *op = fp_op_of(st, n);
    if (!strcmp(op, "&&") || !strcmp(op, "||")) {
      walk_expr(st, n->kids[0], env);
      walk_expr(st, n->kids[1], fp_assume(st, n->kids[0], op[0] == '&', env));
      return;
    }
  }
  if (n->kind == KS_AK_CONDITIONAL && n->nkids == 3) {
    walk_expr(st, n->kids[0], env);
    walk_expr(st, n->kids[1], fp_assume(st, n->kids[0], true, env));
    walk_expr(st, n->kids[2], fp_assume(st, n->kids[0], false, env));
    return;
  }
  if (n->kind == KS_AK_DECL_REF && pointer_root(st, n->decl)) {
    use_pointer(st, n, env);
    return;
  }
  for (size_t i = 0; i < n->nkids; i++)
    walk_expr(st, n->kids[i], env);
}

static const fp_fact *walk(fp_state *st, const ks_anode *n, const fp_fact *env);

static bool jumps_out(const ks_anode *s) {
  while (s && s->kind == KS_AK_OTHER && s->nkids == 1 && s->kind_name && strstr(s->kind_name, "Stmt"))
    s = s->kids[0];
  if (!s)
    return false;
  if (s->kind == KS_AK_RETURN || s->kind == KS_AK_BREAK || s->kind == KS_AK_CONTINUE)
    return true;
  return s->kind == KS_AK_COMPOUND && s->nkids && jumps_out(s->kids[s->nkids - 1]);
}

static bool is_kind(const ks_anode *n, const char *kind_name) {
  return n && n->kind == KS_AK_OTHER && n->kind_name && !strcmp(n->kind_name, kind_name);
}

static const fp_fact *def(fp_state *st, const fp_fact *env, const ks_anode *var,
                          const ks_anode *value) {
  return fp_push(st, env, (fp_fact){.kind = FP_FACT_DEF, .decl = var, .value = value, .at = env});
}

/* `v = e;` as a statement: the only assignment of a local declared
 * without an initializer. */
static const fp_fact *assignment(fp_state *st, const ks_anode *n, const fp_fact *env) {
  if (n->kind != KS_AK_BINARY || n->nkids != 2 || strcmp(fp_op_of(st, n), "="))
    return env;
  const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
  if (!lhs || lhs->kind != KS_AK_DECL_REF || !lhs->decl || lhs->decl->kind != KS_AK_VAR ||
      ks_rt_var_init(lhs->decl))
    return env;
  const ks_anode *v = lhs->decl;
  if (fp_modified_except(st, st->k->body, v, n))
    return env;
  return def(st, env, v, n->kids[1]);
}

static const fp_fact *walk_compound(fp_state *st, const ks_anode *n, const fp_fact *env) {
  /* In a switch the statements are not a sequence: a case label jumps in. */
  bool sequence = !is_kind(n->parent, "SwitchStmt");
  const fp_fact *e = env;
  for (size_t i = 0; i < n->nkids; i++) {
    const fp_fact *after = walk(st, n->kids[i], sequence ? e : env);
    if (sequence)
      e = after;
  }
  return env;
}

static const fp_fact *walk_decl(fp_state *st, const ks_anode *n, const fp_fact *env) {
  for (size_t i = 0; i < n->nkids; i++) {
    const ks_anode *v = n->kids[i];
    if (!v || v->kind != KS_AK_VAR) {
      walk_expr(st, v, env);
      continue;
    }
    const ks_anode *init = ks_rt_var_init(v);
    if (!init)
      continue;
    walk_expr(st, init, env);
    if (!fp_modified(st, st->k->body, v))
      env = def(st, env, v, init);
  }
  return env;
}

static const fp_fact *walk_if(fp_state *st, const ks_anode *n, const fp_fact *env) {
  if (n->nkids < 2 || (n->kids[0] && (n->kids[0]->kind == KS_AK_VAR ||
                                       n->kids[0]->kind == KS_AK_DECL_STMT))) {
    for (size_t i = 0; i < n->nkids; i++)
      walk(st, n->kids[i], env); /* `if (T x = ...)`: no narrowing */
    return env;
  }
  const ks_anode *cond = n->kids[0];
  walk_expr(st, cond, env);
  walk(st, n->kids[1], fp_assume(st, cond, true, env));
  bool has_else = n->nkids > 2 && n->kids[2];
  if (has_else)
    walk(st, n->kids[2], fp_assume(st, cond, false, env));
  bool then_jumps = jumps_out(n->kids[1]), else_jumps = has_else && jumps_out(n->kids[2]);
  /* What follows runs only where the branch that jumps out did not. */
  if (then_jumps && !else_jumps)
    return fp_assume(st, cond, false, env);
  if (else_jumps && !then_jumps)
    return fp_assume(st, cond, true, env);
  return env;
}

static const fp_fact *walk(fp_state *st, const ks_anode *n, const fp_fact *env) {
  if (!n)
    return env;
  switch (n->kind) {
  case KS_AK_COMPOUND:
    return walk_compound(st, n, env);
  case KS_AK_DECL_STMT:
    return walk_decl(st, n, env);
  case KS_AK_IF:
    return walk_if(st, n, env);
  case KS_AK_FOR: {
    walk(st, n->kids[0], env);
    const fp_fact *in_loop, *in_body;
    fp_for_facts(st, n, env, &in_loop, &in_body);
    walk_expr(st, n->kids[1], in_loop);
    walk(st, n->kids[3], in_body);
    walk_expr(st, n->kids[2], in_loop);
    return env;
  }
  case KS_AK_WHILE:
    if (n->nkids == 2) {
      walk_expr(st, n->kids[0], env);
      walk(st, n->kids[1], fp_assume(st, n->kids[0], true, env));
      return env;
    }
    break;
  case KS_AK_DO:
  case KS_AK_RETURN:
  case KS_AK_BREAK:
  case KS_AK_CONTINUE:
    for (size_t i = 0; i < n->nkids; i++)
      walk(st, n->kids[i], env);
    return env;
  default:
    break;
  }
  if (n->kind == KS_AK_OTHER && n->kind_name && strstr(n->kind_name, "Stmt")) {
    for (size_t i = 0; i < n->nkids; i++)
      walk(st, n->kids[i], env);
    return env;
  }
  walk_expr(st, n, env);
  return assignment(st, n, env);
}

/* ---- the result ---- */

/* The ends that are kept: an access's end is dropped when a kept one is
 * provably at least as large wherever that access runs (its own path's
 * facts). Kept ends are never dropped later, so every dropped end has a
 * kept one above it; ends covering many others are tried first. */
static const char *extent_of(fp_state *st, fp_param *p) {
  size_t n = p->ends.len;
  if (!n)
    return "0";
  const fp_end *e = p->ends.items;
  size_t *order = ks_arena_alloc(st->arena, n * sizeof *order);
  size_t *covers = ks_arena_alloc(st->arena, n * sizeof *covers);
  for (size_t i = 0; i < n; i++) {
    order[i] = i;
    for (size_t j = 0; j < n; j++)
      covers[i] += j != i && fp_le(st, e[j].end, e[i].end, e[j].env);
  }
  for (size_t i = 1; i < n; i++) /* stable: most covering first */
    for (size_t j = i; j > 0 && covers[order[j]] > covers[order[j - 1]]; j--) {
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  KS_ARRAY(const fp_poly *) keep = {0};
  for (size_t k = 0; k < n; k++) {
    const fp_end *x = &e[order[k]];
    bool covered = false;
    for (size_t j = 0; j < keep.len && !covered; j++)
      covered = fp_le(st, x->end, keep.items[j], x->env);
    if (!covered)
      *ks_array_push(st->arena, &keep) = x->end;
  }
  if (keep.len > 16) {
    p->why = "it is accessed in too many ways to bound";
    return NULL;
  }
  if (keep.len == 1)
    return fp_print(st, keep.items[0]);
  char *s = ks_arena_strdup(st->arena, "max(");
  for (size_t i = 0; i < keep.len; i++)
    s = ks_arena_printf(st->arena, "%s%s%s", s, i ? ", " : "", fp_print(st, keep.items[i]));
  return ks_arena_printf(st->arena, "%s)", s);
}

static bool reserved(const char *name) {
  static const char *const words[] = {"grid_x", "grid_y",   "grid_z",   "block_x", "block_y",
                                      "block_z", "min",     "max",      "abs",     "ceil_div",
                                      "round_up", "log2",   "is_pow2",  "sizeof"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (!strcmp(name, words[i]))
      return true;
  return false;
}

void fp_setup_params(fp_state *st) {
  const ks_kast *k = st->k;
  st->nparams = k->nparams;
  st->params = ks_arena_alloc(st->arena, (k->nparams ? k->nparams : 1) * sizeof *st->params);
  for (size_t i = 0; i < k->nparams; i++) {
    fp_param *p = &st->params[i];
    const ks_anode *d = k->params[i];
    p->decl = d;
    p->pointer = d->is_pointer;
    if (p->pointer || !d->name || !*d->name)
      continue;
    fp_sign s = fp_int_type(d->type);
    if (s == FP_NOT_INT)
      p->sym_why = ks_arena_printf(st->arena, "its index depends on '%s', of type '%s'", d->name,
                                   d->type ? d->type : "?");
    else if (reserved(d->name))
      p->sym_why = ks_arena_printf(st->arena, "its bound would name the parameter '%s', which "
                                              "guards cannot name",
                                   d->name);
    else if (fp_modified(st, k->body, d))
      p->sym_why = ks_arena_printf(st->arena, "its index depends on '%s', which the kernel "
                                              "modifies",
                                   d->name);
    else
      p->sym = fp_sym(st, d->name, (int)i,
                      s == FP_UNSIGNED || (s == FP_NARROW && d->type &&
                                           (strstr(d->type, "unsigned") || strstr(d->type, "uint")))
                          ? 0
                          : FP_NO_LOWER);
  }
  static const char *const launch[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"};
  for (int d = 0; d < 6; d++)
    st->launch[d] = fp_sym(st, launch[d], 1000 + d, 1);
}

/* Control flow the walk does not model, uses the tree does not show
 * (footprint_hidden.c), pointers changed. */
static void precheck(fp_state *st) {
  ks_rt_nodes all = ks_rt_collect(st->arena, st->k->body);
  bool jumps = false;
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    jumps |= is_kind(n, "GotoStmt") || is_kind(n, "IndirectGotoStmt") || is_kind(n, "LabelStmt");
  }
  for (size_t j = 0; j < st->nparams; j++) {
    fp_param *p = &st->params[j];
    if (!p->pointer)
      continue;
    if (jumps)
      fail_param(p, "the kernel uses goto");
    if (fp_modified(st, st->k->body, p->decl))
      fail_param(p, "it is reassigned in the kernel");
  }
  fp_hidden_uses(st);
}

/* A reason for a one-line message: whitespace runs made one space, at
 * most 200 bytes. */
static const char *one_line(ks_arena *arena, const char *why) {
  char buf[204];
  size_t o = 0;
  bool space = false;
  for (const char *p = why; *p && o < 200; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
      space = o > 0;
      continue;
    }
    if (space)
      buf[o++] = ' ';
    space = false;
    if (o < 200)
      buf[o++] = *p;
  }
  if (o >= 200)
    memcpy(buf + (o = 197), "...", 3), o += 3;
  buf[o] = '\0';
  return ks_arena_strdup(arena, buf);
}

int ks_footprints_of(ks_ctx *ctx, const ks_kast *kast, ks_arena *arena, ks_footprints *out) {
  memset(out, 0, sizeof *out);
  if (!kast || !kast->body || kast->body->kind != KS_AK_COMPOUND)
    return ks_fail(ctx, "footprint: the kernel has no body");
  fp_state st = {.ctx = ctx, .arena = arena, .k = kast, .user_minmax = -1};
  fp_setup_params(&st);
  find_aliases(&st);
  precheck(&st);
  /* The facts start with a root, so that a definition's facts are never
   * the empty list (an empty `cut` means no restriction). */
  walk(&st, kast->body, fp_push(&st, NULL, (fp_fact){.kind = FP_FACT_SYM_LO}));
  ks_ctx scratch;
  ks_ctx_init(&scratch, "footprint");
  for (size_t i = 0; i < st.nparams; i++) {
    fp_param *p = &st.params[i];
    ks_footprint *f = ks_array_push(arena, out);
    f->param = p->decl->name ? p->decl->name : "";
    f->read = p->read;
    f->written = p->written;
    if (!p->pointer) {
      f->why = "not a pointer";
      continue;
    }
    const char *extent = p->why ? NULL : extent_of(&st, p);
    if (extent && ks_expr_check(&scratch, extent)) {
      p->why = ks_arena_printf(arena, "its bound '%s' is not a valid guard expression (%s)",
                               extent, scratch.error);
      extent = NULL;
    }
    f->extent = extent;
    f->why = extent ? NULL : one_line(arena, p->why ? p->why : "not proved");
    if (!extent)
      f->read = f->written = true; /* a use not understood may do either */
  }
  ks_ctx_release(&scratch);
  fp_consts_release(&st);
  return 0;
}

int ks_footprints_from_unit(ks_ctx *ctx, const char *path, const char *unit, const char *name,
                            ks_arena *arena, ks_footprints *out) {
  memset(out, 0, sizeof *out);
  ks_kast k;
  ks_kast_options o = {.name = name};
  if (ks_kast_parse(ctx, path, unit, &o, arena, &k))
    return -1;
  return ks_footprints_of(ctx, &k, arena, out);
}

ks_footprints ks_footprints_or_none(const char *prog, const char *path, const char *unit,
                                    const char *name, ks_arena *arena) {
  ks_footprints fps = {0};
  ks_ctx quiet;
  ks_ctx_init(&quiet, prog);
  if (ks_footprints_from_unit(&quiet, path, unit, name, arena, &fps))
    fps = (ks_footprints){0};
  ks_ctx_release(&quiet);
  return fps;
}
