/* race: a store to global memory that several threads make to one index at
 * once, read from the kernel's tree (ks_insight.h, ks_race_static).
 *
 * Each expression gets the set of thread and block dimensions its value can
 * depend on: threadIdx.y gives ty; a local takes the union over its
 * initializer, every assignment to it and the conditions those run under
 * (flow-insensitive, to a fixed point, so `for (k = threadIdx.y; ...; k +=
 * blockDim.y)` makes k depend on ty); a read takes its index's; a call to
 * anything but plain arithmetic may depend on every dimension (a helper
 * that computes the global index). Overestimating a set only hides a race,
 * never invents one.
 *
 * A store `p[e] op= v` through a pointer parameter (or a local pointer made
 * from one) then races on dimension d when the launch has more than one
 * thread (block) along d, e's set lacks d, no enclosing `if` singles out one
 * value along d (an equality on an expression that depends on d, or an
 * early return on an inequality), and the threads do not all store the
 * same value (a plain `=` of a value that does not depend on d either is
 * left alone: harmless, whatever it costs). Atomics are calls, not stores,
 * and are never reported. */
#include <string.h>

#include "ks_insight.h"

enum {
  DEP_TX = 1, DEP_TY = 2, DEP_TZ = 4, DEP_BX = 8, DEP_BY = 16, DEP_BZ = 32,
  DEP_ALL = 63
};

static unsigned dim_bit(char d, bool blocks) {
  unsigned b = d == 'x' ? DEP_TX : d == 'y' ? DEP_TY : DEP_TZ;
  return blocks ? b << 3 : b;
}

/* Calls whose value depends on their arguments alone. */
static bool pure_call(const char *name) {
  static const char *const names[] = {
      "min", "max", "fminf", "fmaxf", "fmin", "fmax", "abs", "fabs", "fabsf", "sqrt", "sqrtf",
      "rsqrt", "rsqrtf", "exp", "expf", "exp2f", "log", "logf", "log2f", "pow", "powf", "tanh",
      "tanhf", "sin", "sinf", "cos", "cosf", "floor", "floorf", "ceil", "ceilf", "fma", "fmaf",
      "erf", "erff", "__expf", "__logf", "__fdividef", "__ldg", "__fmul_rn", "__fadd_rn",
      "__float2int_rn", "__int2float_rn", "static_cast", "ceil_div", "umin", "umax", "llmin",
      "llmax", "__saturatef", "__powf", "__sinf", "__cosf", "__tanf", "rintf", "roundf", "truncf"};
  if (!name)
    return false;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(name, names[i]))
      return true;
  return false;
}

typedef struct var_dep {
  const ks_anode *var;
  unsigned deps;
} var_dep;

typedef struct walk {
  const ks_kast *kast;
  ks_arena *arena;
  KS_ARRAY(var_dep) vars;
  bool changed;
  bool atomics;
} walk;

static var_dep *find_var(walk *w, const ks_anode *v) {
  for (size_t i = 0; i < w->vars.len; i++)
    if (w->vars.items[i].var == v)
      return &w->vars.items[i];
  return NULL;
}

static unsigned deps_of(walk *w, const ks_anode *n);

static unsigned kids_deps(walk *w, const ks_anode *n) {
  unsigned d = 0;
  for (size_t i = 0; i < n->nkids; i++)
    if (n->kids[i])
      d |= deps_of(w, n->kids[i]);
  return d;
}

static unsigned deps_of(walk *w, const ks_anode *n) {
  if (!n)
    return 0;
  static const char dims[] = "xyz";
  for (int i = 0; i < 3; i++) {
    if (ks_anode_is_builtin(n, "threadIdx", dims[i]))
      return dim_bit(dims[i], false);
    if (ks_anode_is_builtin(n, "blockIdx", dims[i]))
      return dim_bit(dims[i], true);
    if (ks_anode_is_builtin(n, "blockDim", dims[i]) || ks_anode_is_builtin(n, "gridDim", dims[i]))
      return 0;
  }
  switch (n->kind) {
  case KS_AK_DECL_REF:
    if (n->decl && n->decl->kind == KS_AK_VAR) {
      var_dep *v = find_var(w, n->decl);
      return v ? v->deps : DEP_ALL;
    }
    if (!n->decl && n->name && !strcmp(n->name, "threadIdx"))
      return DEP_TX | DEP_TY | DEP_TZ;
    if (!n->decl && n->name && !strcmp(n->name, "blockIdx"))
      return DEP_BX | DEP_BY | DEP_BZ;
    return 0; /* parameters, constants, globals */
  case KS_AK_CALL:
    return kids_deps(w, n) | (pure_call(n->name) && n->nkids ? 0 : DEP_ALL);
  default:
    return kids_deps(w, n);
  }
}

/* The conditions `n` runs under, up to the kernel's body. */
static unsigned control_deps(walk *w, const ks_anode *n) {
  unsigned d = 0;
  for (const ks_anode *c = n, *p = n->parent; p; c = p, p = p->parent) {
    if ((p->kind == KS_AK_IF || p->kind == KS_AK_WHILE) && p->nkids && p->kids[0] != c)
      d |= deps_of(w, p->kids[0]);
    else if (p->kind == KS_AK_DO && p->nkids > 1 && p->kids[1] != c)
      d |= deps_of(w, p->kids[1]);
    else if (p->kind == KS_AK_FOR && p->nkids == 4 && c == p->kids[3])
      d |= deps_of(w, p->kids[1]) | deps_of(w, p->kids[2]);
    else if (p->kind == KS_AK_CONDITIONAL && p->nkids == 3 && c != p->kids[0])
      d |= deps_of(w, p->kids[0]);
  }
  return d;
}

/* The local an assignment's left side names, or NULL. */
static const ks_anode *assigned_var(const ks_anode *lhs) {
  lhs = ks_anode_strip(lhs, false);
  if (lhs && lhs->kind == KS_AK_DECL_REF && lhs->decl && lhs->decl->kind == KS_AK_VAR)
    return lhs->decl;
  return NULL;
}

static void raise_var(walk *w, const ks_anode *var, unsigned deps) {
  var_dep *v = find_var(w, var);
  if (v && (v->deps | deps) != v->deps) {
    v->deps |= deps;
    w->changed = true;
  }
}

static bool collect_vars(ks_anode *n, void *arg) {
  walk *w = arg;
  if (n->kind == KS_AK_VAR && !find_var(w, n))
    *ks_array_push(w->arena, &w->vars) = (var_dep){.var = n, .deps = 0};
  if (n->kind == KS_AK_CALL && n->name && strstr(n->name, "atomic"))
    w->atomics = true;
  return true;
}

static bool propagate(ks_anode *n, void *arg) {
  walk *w = arg;
  if (n->kind == KS_AK_VAR) {
    unsigned d = control_deps(w, n);
    for (size_t i = 0; i < n->nkids; i++)
      d |= deps_of(w, n->kids[i]);
    /* A loop variable also changes under its loop's increment. */
    raise_var(w, n, d);
  } else if ((n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) ||
             n->kind == KS_AK_COMPOUND_ASSIGN) {
    const ks_anode *v = n->nkids == 2 ? assigned_var(n->kids[0]) : NULL;
    if (v)
      raise_var(w, v, deps_of(w, n->kids[1]) | control_deps(w, n));
  } else if (n->kind == KS_AK_UNARY && n->op && (!strcmp(n->op, "++") || !strcmp(n->op, "--"))) {
    const ks_anode *v = n->nkids == 1 ? assigned_var(n->kids[0]) : NULL;
    if (v)
      raise_var(w, v, control_deps(w, n));
  } else if (n->kind == KS_AK_UNARY && n->op && !strcmp(n->op, "&") && n->nkids == 1) {
    /* Its address taken: anything may write it. */
    const ks_anode *v = assigned_var(n->kids[0]);
    if (v)
      raise_var(w, v, DEP_ALL);
  }
  return true;
}

/* ---- stores ----------------------------------------------------------------- */

static bool names_pointer_param(const ks_anode *n) {
  n = ks_anode_strip(n, true);
  return n && n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_PARAM &&
         n->decl->is_pointer;
}

static bool contains_pointer_param(const ks_anode *n) {
  if (!n)
    return false;
  if (names_pointer_param(n))
    return true;
  for (size_t i = 0; i < n->nkids; i++)
    if (contains_pointer_param(n->kids[i]))
      return true;
  return false;
}

/* Whether `base` points into global memory through a parameter: the
 * parameter itself, or a local pointer initialized from one. *alias: the
 * local. */
static const ks_anode *global_base(const ks_anode *base, const ks_anode **alias) {
  base = ks_anode_strip(base, true);
  *alias = NULL;
  if (names_pointer_param(base))
    return base->decl;
  if (base && base->kind == KS_AK_DECL_REF && base->decl && base->decl->kind == KS_AK_VAR &&
      base->decl->is_pointer && !base->decl->shared_space && base->decl->nkids == 1 &&
      contains_pointer_param(base->decl->kids[0])) {
    *alias = base->decl;
    const ks_anode *p = base->decl->kids[0];
    while (p && !names_pointer_param(p)) {
      const ks_anode *next = NULL;
      for (size_t i = 0; i < p->nkids && !next; i++)
        if (contains_pointer_param(p->kids[i]))
          next = p->kids[i];
      p = next;
    }
    return p ? ks_anode_strip(p, true)->decl : NULL;
  }
  return NULL;
}

/* An equality on `d` (or an inequality for an else branch): does `cond`
 * single out one value of the dimension? */
static bool singles_out(walk *w, const ks_anode *cond, unsigned bit, bool negated) {
  cond = ks_anode_strip(cond, true);
  if (!cond)
    return false;
  if (cond->kind == KS_AK_BINARY && cond->op && cond->nkids == 2) {
    const char *eq = negated ? "!=" : "==";
    if (!strcmp(cond->op, eq) &&
        ((deps_of(w, cond->kids[0]) | deps_of(w, cond->kids[1])) & bit))
      return true;
    /* a && b holds only where both do; under negation a || b */
    if (!strcmp(cond->op, negated ? "||" : "&&"))
      return singles_out(w, cond->kids[0], bit, negated) ||
             singles_out(w, cond->kids[1], bit, negated);
    /* an early return on `ty > 0` (or `ty >= 1`) leaves ty == 0 */
    if (negated && (!strcmp(cond->op, ">") || !strcmp(cond->op, ">=")) &&
        (deps_of(w, cond->kids[0]) & bit))
      return true;
    return false;
  }
  if (cond->kind == KS_AK_UNARY && cond->op && !strcmp(cond->op, "!") && cond->nkids == 1)
    return singles_out(w, cond->kids[0], bit, !negated) ||
           (!negated && (deps_of(w, cond->kids[0]) & bit));
  /* `if (threadIdx.y) return;` */
  return negated && (deps_of(w, cond) & bit) && cond->kind != KS_AK_CALL;
}

static bool only_returns(const ks_anode *s) {
  s = ks_anode_strip(s, false);
  if (!s)
    return false;
  if (s->kind == KS_AK_RETURN)
    return true;
  if (s->kind == KS_AK_COMPOUND && s->nkids >= 1)
    return ks_anode_strip(s->kids[s->nkids - 1], false)->kind == KS_AK_RETURN;
  return false;
}

/* Whether an enclosing `if`, or an early return before the store in one of
 * its blocks, lets one thread (block) along the dimension through. */
static bool guarded(walk *w, const ks_anode *store, unsigned bit) {
  for (const ks_anode *c = store, *p = store->parent; p; c = p, p = p->parent) {
    if (p->kind == KS_AK_IF && p->nkids >= 2) {
      if (c == p->kids[1] && singles_out(w, p->kids[0], bit, false))
        return true;
      if (p->nkids == 3 && c == p->kids[2] && singles_out(w, p->kids[0], bit, true))
        return true;
    }
    if (p->kind == KS_AK_COMPOUND)
      for (size_t i = 0; i < p->nkids && p->kids[i] != c; i++) {
        const ks_anode *s = p->kids[i];
        if (s && s->kind == KS_AK_IF && s->nkids == 2 && only_returns(s->kids[1]) &&
            singles_out(w, s->kids[0], bit, true))
          return true;
      }
  }
  return false;
}

static bool same_text(const ks_kast *k, const ks_anode *a, const ks_anode *b) {
  return a->end - a->begin == b->end - b->begin &&
         !memcmp(k->source + a->begin, k->source + b->begin, a->end - a->begin);
}

static bool reads_target(const ks_kast *k, const ks_anode *n, const ks_anode *target) {
  if (!n)
    return false;
  if (n->kind == KS_AK_SUBSCRIPT && same_text(k, n, target))
    return true;
  for (size_t i = 0; i < n->nkids; i++)
    if (reads_target(k, n->kids[i], target))
      return true;
  return false;
}

typedef struct finder {
  walk *w;
  const ks_launch_cfg *launch;
  ks_race *out;
} finder;

static bool find_store(ks_anode *n, void *arg) {
  finder *f = arg;
  if (f->out->shown_by_code)
    return false;
  const ks_anode *target = NULL, *value = NULL;
  const char *op = NULL;
  if (((n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) ||
       n->kind == KS_AK_COMPOUND_ASSIGN) && n->nkids == 2) {
    target = n->kids[0];
    value = n->kids[1];
    op = n->op;
  } else if (n->kind == KS_AK_UNARY && n->op && n->nkids == 1 &&
             (!strcmp(n->op, "++") || !strcmp(n->op, "--"))) {
    target = n->kids[0];
    op = n->op;
  }
  target = ks_anode_strip(target, false);
  /* p[i].m = v stores into p[i] */
  while (target && target->kind == KS_AK_MEMBER && !target->arrow && target->nkids == 1)
    target = ks_anode_strip(target->kids[0], false);
  if (!target || target->kind != KS_AK_SUBSCRIPT || target->nkids != 2)
    return true;
  const ks_anode *alias;
  const ks_anode *param = global_base(target->kids[0], &alias);
  if (!param)
    return true;
  walk *w = f->w;
  unsigned index = deps_of(w, target->kids[1]) | deps_of(w, target->kids[0]);
  bool rmw = n->kind != KS_AK_BINARY || reads_target(w->kast, value, target);
  unsigned value_deps = value ? deps_of(w, value) | control_deps(w, n) : 0;
  static const char dims[] = "xyz";
  for (int blocks = 0; blocks < 2; blocks++)
    for (int d = 0; d < 3; d++) {
      unsigned bit = dim_bit(dims[d], blocks);
      unsigned count = blocks ? f->launch->grid[d] : f->launch->block[d];
      if (count <= 1 || (index & bit) || guarded(w, n, bit))
        continue;
      if (!rmw && !(value_deps & bit))
        continue; /* every thread stores the same value */
      ks_race *r = f->out;
      r->found = r->shown_by_code = true;
      r->buffer = param->name;
      r->store = ks_anode_text(w->arena, w->kast, target);
      r->op = op;
      r->read_modify_write = rmw;
      r->dim = dims[d];
      r->blocks = blocks;
      r->writers = count;
      r->launch = *f->launch;
      return false;
    }
  return true;
}

int ks_race_static(ks_ctx *ctx, const ks_kast *kast, const ks_launch_cfg *launch, ks_arena *arena,
                   ks_race *out) {
  if (!kast || !kast->body)
    return ks_fail(ctx, "no kernel body to read");
  walk w = {.kast = kast, .arena = arena};
  ks_anode_walk(kast->root, collect_vars, &w);
  out->atomics |= w.atomics;
  for (int round = 0; round < 32; round++) {
    w.changed = false;
    ks_anode_walk(kast->body, propagate, &w);
    if (!w.changed)
      break;
  }
  finder f = {.w = &w, .launch = launch, .out = out};
  ks_anode_walk(kast->body, find_store, &f);
  return 0;
}

int ks_race_static_unit(ks_ctx *ctx, const char *path, const char *unit, const char *name,
                        const ks_launch_cfg *launch, ks_arena *arena, ks_race *out) {
  ks_kast k;
  ks_kast_options o = {.name = name};
  if (ks_kast_parse(ctx, path, unit, &o, arena, &k))
    return -1;
  return ks_race_static(ctx, &k, launch, arena, out);
}

/* ---- a target ---------------------------------------------------------------- */

const ks_launch_cfg *ks_insight_launch(const ks_target *t) {
  for (size_t i = 0; i < t->nworkloads; i++)
    if (t->workloads[i].timed)
      return &t->workloads[i].launch;
  return t->nworkloads ? &t->workloads[0].launch : NULL;
}

void ks_insight_begin(ks_ctx *ctx, const ks_target *t, ks_arena *arena, ks_insight *out) {
  memset(out, 0, sizeof *out);
  const ks_launch_cfg *launch = ks_insight_launch(t);
  if (!launch || !t->slice.source)
    return;
  ks_kast k;
  ks_kast_options o = {.name = t->kernel->qualified_name};
  const char *path = ks_arena_printf(arena, "%s.slice.cu", t->kernel->name);
  ks_ctx quiet;
  ks_ctx_init(&quiet, ctx->prog);
  if (ks_kast_parse(&quiet, path, t->slice.source, &o, arena, &k) ||
      ks_race_static(&quiet, &k, launch, arena, &out->race))
    ks_debug(ctx, "%s: no race analysis: %s", t->kernel->qualified_name, quiet.error);
  ks_ctx_release(&quiet);
}
