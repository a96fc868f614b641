/* footprint_eval: the range of an integer expression at a point of the
 * kernel, and the facts that conditions and loops establish.
 *
 * Values are intervals of symbolic bounds (footprint_sym.c). Names resolve
 * through the facts of the path (footprint_int.h): a loop variable to its
 * loop's range, a local assigned once to its value re-evaluated where it is
 * used (so that `int idx = i * N + j; if (i < NI && j < NJ) a[idx]` sees
 * the narrowed i and j), narrowed by the conditions on the path. A value is
 * re-evaluated only if every loop variable it reads is still in the same
 * iteration as at the definition (`cut`); facts about values that never
 * change after their definition hold wherever they are reached, which is
 * what makes this sound without a dataflow fixpoint.
 *
 * C's integer rules are respected where they change values: a node of an
 * unsigned type must be proved non-negative (else it may wrap), a
 * comparison mixing signedness narrows only when both sides are proved
 * non-negative, division and remainder need a positive divisor (and, in
 * unsigned arithmetic, a non-negative dividend). Overflow of the kernel's
 * own arithmetic is taken not to happen (such a kernel is already broken). */
#include <limits.h>
#include <string.h>

#include "footprint_int.h"

/* ---- types ---- */

static const char *const signed_types[] = {
    "int",       "signed",       "signed int",    "long",          "long int",
    "signed long", "long long",  "long long int", "signed long long", "long signed int",
    "ptrdiff_t", "ssize_t",      "intptr_t",      "int32_t",       "int64_t",
    "__int64_t", "__int32_t",    "long long signed int",
};
static const char *const unsigned_types[] = {
    "unsigned",           "unsigned int",           "unsigned long",  "unsigned long int",
    "unsigned long long", "unsigned long long int", "size_t",         "uintptr_t",
    "uint32_t",           "uint64_t",               "uint",           "__uint32_t",
    "__uint64_t",         "long unsigned int",      "long long unsigned int",
    "unsigned long long int", "<pseudo-object type>",
};
static const char *const narrow_types[] = {
    "char",  "signed char", "unsigned char", "short", "short int", "unsigned short",
    "unsigned short int", "int8_t", "uint8_t", "int16_t", "uint16_t", "bool",
};

static bool in_list(const char *t, size_t n, const char *const *list, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (strlen(list[i]) == n && !strncmp(list[i], t, n))
      return true;
  return false;
}

fp_sign fp_int_type(const char *type) {
  if (!type)
    return FP_NOT_INT;
  const char *t = type;
  for (bool again = true; again;) {
    again = false;
    static const char *const quals[] = {"const ", "volatile ", "std::", "::"};
    for (size_t i = 0; i < 4; i++)
      if (!strncmp(t, quals[i], strlen(quals[i]))) {
        t += strlen(quals[i]);
        again = true;
      }
  }
  size_t n = strlen(t);
  while (n > 6 && !strncmp(t + n - 6, " const", 6))
    n -= 6;
  if (memchr(t, '*', n) || memchr(t, '&', n) || memchr(t, '[', n))
    return FP_NOT_INT;
#define COUNT(a) (sizeof a / sizeof *a)
  if (in_list(t, n, signed_types, COUNT(signed_types)))
    return FP_SIGNED;
  if (in_list(t, n, unsigned_types, COUNT(unsigned_types)))
    return FP_UNSIGNED;
  if (in_list(t, n, narrow_types, COUNT(narrow_types)))
    return FP_NARROW;
#undef COUNT
  return FP_NOT_INT;
}

/* ---- facts ---- */

const fp_fact *fp_push(fp_state *st, const fp_fact *env, fp_fact f) {
  fp_fact *n = ks_arena_alloc(st->arena, sizeof *n);
  *n = f;
  n->next = env;
  return n;
}

bool fp_in_chain(const fp_fact *chain, const fp_fact *f) {
  for (; chain; chain = chain->next)
    if (chain == f)
      return true;
  return false;
}

const char *fp_op_of(fp_state *st, const ks_anode *n) {
  if (!n->op)
    return "";
  if (strcmp(n->op, "?"))
    return n->op;
  const char *op = fp_macro_op(st, n);
  return op ? op : "?";
}

bool fp_is_op(fp_state *st, const ks_anode *n, ks_akind kind, const char *op) {
  return n && n->kind == kind && n->nkids == (kind == KS_AK_UNARY ? 1u : 2u) &&
         !strcmp(fp_op_of(st, n), op);
}

/* ---- interval arithmetic ---- */

static fp_range point(const fp_poly *p) { return (fp_range){p, p}; }

bool fp_const_point(fp_range r, long long *c) {
  return r.lo && r.hi && fp_equal(r.lo, r.hi) && fp_is_const(r.lo, c);
}

/* An upper bound <= 0. */
static bool nonpos(fp_state *st, const fp_poly *p, const fp_fact *env) {
  return p && fp_nonneg(st, fp_scale(st, p, -1), env);
}

static const fp_poly *opt_add(fp_state *st, const fp_poly *a, const fp_poly *b) {
  return a && b ? fp_add(st, a, b) : NULL;
}

static const fp_poly *opt_mul(fp_state *st, const fp_poly *a, const fp_poly *b) {
  return a && b ? fp_mul(st, a, b) : NULL;
}

static fp_range r_scale(fp_state *st, fp_range r, long long c) {
  const fp_poly *lo = r.lo ? fp_scale(st, r.lo, c) : NULL;
  const fp_poly *hi = r.hi ? fp_scale(st, r.hi, c) : NULL;
  if (c == 0)
    return point(fp_num(st, 0));
  return c > 0 ? (fp_range){lo, hi} : (fp_range){hi, lo};
}

static bool r_mul(fp_state *st, const ks_anode *n, fp_range a, fp_range b, const fp_fact *env,
                  fp_range *out) {
  long long c;
  if (fp_const_point(a, &c)) {
    *out = r_scale(st, b, c);
    return true;
  }
  if (fp_const_point(b, &c)) {
    *out = r_scale(st, a, c);
    return true;
  }
  bool an = fp_nonneg(st, a.lo, env), bn = fp_nonneg(st, b.lo, env);
  bool ap = nonpos(st, a.hi, env), bp = nonpos(st, b.hi, env);
  if (an && bn)
    *out = (fp_range){fp_mul(st, a.lo, b.lo), opt_mul(st, a.hi, b.hi)};
  else if (an && bp)
    *out = (fp_range){opt_mul(st, a.hi, b.lo), fp_mul(st, a.lo, b.hi)};
  else if (ap && bn)
    *out = (fp_range){opt_mul(st, a.lo, b.hi), fp_mul(st, a.hi, b.lo)};
  else if (ap && bp)
    *out = (fp_range){fp_mul(st, a.hi, b.hi), opt_mul(st, a.lo, b.lo)};
  else
    return fp_fail(st, "the sign of '%s' is not known in '%s'",
                   fp_text(st, !(an || ap) ? n->kids[0] : n->kids[1]), fp_text(st, n));
  return true;
}

static bool r_div(fp_state *st, const ks_anode *n, fp_range a, fp_range b, const fp_fact *env,
                  fp_range *out) {
  long long c;
  if (fp_const_point(b, &c) && c != 0) {
    /* Truncation is monotone in the dividend for a fixed divisor. */
    const fp_poly *d = fp_num(st, c > 0 ? c : -c);
    const fp_poly *lo = a.lo ? fp_div(st, a.lo, d) : NULL, *hi = a.hi ? fp_div(st, a.hi, d) : NULL;
    *out = c > 0 ? (fp_range){lo, hi}
                 : (fp_range){hi ? fp_scale(st, hi, -1) : NULL, lo ? fp_scale(st, lo, -1) : NULL};
    return true;
  }
  if (!b.lo || fp_lower(st, b.lo, env) < 1)
    return fp_fail(st, "it divides by '%s', not known to be positive", fp_text(st, n->kids[1]));
  if (!fp_nonneg(st, a.lo, env))
    return fp_fail(st, "'%s' may be negative in '%s'", fp_text(st, n->kids[0]), fp_text(st, n));
  *out = (fp_range){fp_num(st, 0), a.hi ? fp_div(st, a.hi, b.lo) : NULL};
  return true;
}

static bool r_mod(fp_state *st, const ks_anode *n, fp_range a, fp_range b, const fp_fact *env,
                  fp_range *out) {
  if (!fp_nonneg(st, a.lo, env))
    return fp_fail(st, "'%s' may be negative in '%s'", fp_text(st, n->kids[0]), fp_text(st, n));
  long long c;
  if (fp_const_point(b, &c) && c < 0)
    c = -c;
  if ((fp_const_point(b, &c) && c > 0) || (b.lo && fp_lower(st, b.lo, env) >= 1)) {
    const fp_poly *top = fp_const_point(b, &c) ? fp_num(st, (c < 0 ? -c : c) - 1)
                                           : (b.hi ? fp_addc(st, b.hi, -1) : NULL);
    /* x % m == x while x < m. */
    if (a.hi && (!top || fp_le(st, a.hi, top, env))) {
      *out = a;
      return true;
    }
    *out = (fp_range){fp_num(st, 0), top ? top : a.hi};
    return true;
  }
  return fp_fail(st, "it takes a remainder by '%s', not known to be positive",
                 fp_text(st, n->kids[1]));
}

static fp_range hull(fp_state *st, fp_range a, fp_range b, const fp_fact *env) {
  return (fp_range){a.lo && b.lo ? fp_min(st, a.lo, b.lo, env) : NULL,
                    a.hi && b.hi ? fp_max(st, a.hi, b.hi, env) : NULL};
}

static bool r_shift(fp_state *st, const ks_anode *n, bool left, fp_range a, fp_range b,
                    const fp_fact *env, fp_range *out) {
  long long k;
  if (!fp_const_point(b, &k) || k < 0 || k > 62)
    return fp_fail(st, "it shifts by '%s', not a known constant", fp_text(st, n->kids[1]));
  if (left) {
    *out = r_scale(st, a, 1LL << k);
    return true;
  }
  if (!fp_nonneg(st, a.lo, env))
    return fp_fail(st, "'%s' may be negative in '%s'", fp_text(st, n->kids[0]), fp_text(st, n));
  const fp_poly *d = fp_num(st, 1LL << k);
  *out = (fp_range){fp_div(st, a.lo, d), a.hi ? fp_div(st, a.hi, d) : NULL};
  return true;
}

static bool r_bits(fp_state *st, const ks_anode *n, const char *op, fp_range a, fp_range b,
                   const fp_fact *env, fp_range *out) {
  bool an = fp_nonneg(st, a.lo, env), bn = fp_nonneg(st, b.lo, env);
  if (!strcmp(op, "&")) {
    /* x & m lies in [0, m] for any x when m >= 0. */
    const fp_poly *hi = NULL;
    if (an && bn)
      hi = a.hi && b.hi ? fp_min(st, a.hi, b.hi, env) : a.hi ? a.hi : b.hi;
    else if (an)
      hi = a.hi;
    else if (bn)
      hi = b.hi;
    if (an || bn) {
      *out = (fp_range){fp_num(st, 0), hi};
      return true;
    }
  } else if (an && bn) {
    /* x | y and x ^ y are at most x + y for non-negative x, y. */
    *out = (fp_range){fp_num(st, 0), opt_add(st, a.hi, b.hi)};
    return true;
  }
  return fp_fail(st, "'%s' may be negative in '%s'", fp_text(st, an ? n->kids[1] : n->kids[0]),
                 fp_text(st, n));
}

/* ---- names ---- */

static const fp_param *param_of(fp_state *st, const ks_anode *decl) {
  for (size_t i = 0; i < st->nparams; i++)
    if (st->params[i].decl == decl)
      return &st->params[i];
  return NULL;
}

/* Applies a narrowing fact: a condition's upper bound replaces the
 * current one unless the current one is provably tighter (the condition is
 * usually the bound the user meant); of two lower bounds, which serve the
 * sign proofs, the one with the larger constant bound wins. */
static fp_range narrowed(fp_state *st, fp_range base, fp_range by, const fp_fact *env) {
  if (by.hi && !(base.hi && fp_le(st, base.hi, by.hi, env)))
    base.hi = by.hi;
  if (by.lo && !(base.lo && fp_le(st, by.lo, base.lo, env))) {
    long long now = base.lo ? fp_lower(st, base.lo, env) : FP_NO_LOWER;
    if (fp_le(st, base.lo, by.lo, env) || fp_lower(st, by.lo, env) >= now)
      base.lo = by.lo;
  }
  return base;
}

bool fp_eval_var(fp_state *st, const ks_anode *ref, const ks_anode *d, const fp_fact *env,
                 const fp_fact *cut, fp_range *out) {
  if (d->is_pointer)
    return fp_fail(st, "it does arithmetic on the pointer '%s'", d->name);
  fp_sign sign = fp_int_type(d->type);
  if (sign == FP_NOT_INT)
    return fp_fail(st, "'%s' has type '%s', not an integer type the analysis knows", d->name,
                   d->type ? d->type : "?");
  const fp_fact *f = env;
  for (; f; f = f->next)
    if (f->decl == d && (f->kind == FP_FACT_LOOP || f->kind == FP_FACT_DEF))
      break;
  if (!f)
    return fp_fail(st, fp_modified(st, st->k->body, d)
                           ? "'%s' changes in a way the analysis does not follow"
                           : "'%s' has no known value where it is used",
                   d->name);
  if (cut && !fp_in_chain(cut, f))
    return fp_fail(st, "'%s' is not the value it had where '%s' was computed", d->name,
                   fp_text(st, ref));
  fp_range base;
  if (f->kind == FP_FACT_LOOP) {
    if (f->why)
      return fp_fail(st, "%s", f->why);
    base = f->r;
  } else if (!fp_eval(st, f->value, env, f->at, &base)) {
    return false;
  }
  for (const fp_fact *g = env; g != f; g = g->next)
    if (g->kind == FP_FACT_RANGE && g->decl == d)
      base = narrowed(st, base, g->r, env);
  if (sign == FP_NARROW) {
    long long lo, hi;
    if (!base.lo || !base.hi || !fp_is_const(base.lo, &lo) || !fp_is_const(base.hi, &hi) ||
        lo < 0 || hi > 127)
      return fp_fail(st, "'%s' is a narrow integer ('%s') that may not hold its value", d->name,
                     d->type);
  }
  *out = base;
  return true;
}

static bool eval_ref(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
                     fp_range *out) {
  const ks_anode *d = n->decl;
  long long v;
  if (!d) {
    if (n->name && !strcmp(n->name, "warpSize")) {
      *out = point(fp_num(st, 32));
      return true;
    }
    if (!fp_named_constant(st, n, &v))
      return false;
    *out = point(fp_num(st, v));
    return true;
  }
  if (d->kind == KS_AK_TEMPLATE_PARAM)
    return fp_fail(st, "its index depends on the template parameter '%s'", d->name);
  if (d->kind == KS_AK_PARAM) {
    const fp_param *p = param_of(st, d);
    if (!p)
      return fp_fail(st, "its index depends on '%s', not a parameter of the kernel", d->name);
    if (p->pointer)
      return fp_fail(st, "it does arithmetic on the pointer '%s'", d->name);
    if (!p->sym)
      return fp_fail(st, "%s", p->sym_why);
    *out = point(fp_atom_poly(st, p->sym));
    return true;
  }
  if (d->kind == KS_AK_VAR)
    return fp_eval_var(st, n, d, env, cut, out);
  return fp_fail(st, "its index depends on '%s'", fp_text(st, n));
}

static const char *const builtins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};

/* threadIdx.D and blockIdx.D as keys of their facts (0: not one). */
static int builtin_key(const ks_anode *n) {
  for (int b = 0; b < 2; b++)
    if (ks_anode_is_builtin(n, builtins[b], 0))
      return 1 + 3 * b + (ks_anode_strip(n, false)->name[0] - 'x');
  return 0;
}

static fp_range narrowed(fp_state *st, fp_range base, fp_range by, const fp_fact *env);

static bool builtin_range(fp_state *st, const ks_anode *n, const fp_fact *env, fp_range *out) {
  const char *const *names = builtins;
  int key = builtin_key(n);
  for (int b = 0; b < 4; b++) {
    if (!ks_anode_is_builtin(n, names[b], 0))
      continue;
    int dim = n->name[0] - 'x';
    const fp_poly *grid = fp_atom_poly(st, st->launch[dim]);
    const fp_poly *block = fp_atom_poly(st, st->launch[3 + dim]);
    switch (b) {
    case 0:
      *out = (fp_range){fp_num(st, 0), fp_addc(st, block, -1)};
      break;
    case 1:
      *out = (fp_range){fp_num(st, 0), fp_addc(st, grid, -1)};
      break;
    case 2:
      *out = point(block);
      break;
    default:
      *out = point(grid);
      break;
    }
    /* Conditions on them hold everywhere after: they never change. */
    for (const fp_fact *f = env; key && f; f = f->next)
      if (f->kind == FP_FACT_RANGE && f->builtin == key)
        *out = narrowed(st, *out, f->r, env);
    return true;
  }
  return fp_fail(st, "its index depends on '%s', which the analysis does not follow",
                 fp_text(st, n));
}

static bool minmax_call(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
                        fp_range *out) {
  const char *name = ks_rt_callee(st->arena, n);
  static const char *const mins[] = {"min", "umin", "llmin", "ullmin"};
  static const char *const maxs[] = {"max", "umax", "llmax", "ullmax"};
  int which = 0;
  for (size_t i = 0; i < 4; i++) {
    if (!strcmp(name, mins[i]))
      which = -1;
    if (!strcmp(name, maxs[i]))
      which = 1;
  }
  if (st->user_minmax < 0) {
    const char *src = st->k->source, *end = src + st->k->source_len, *b, *e;
    st->user_minmax = 0;
    for (size_t i = 0; i < 4; i++)
      if (ks_rt_find_definition(src, end, mins[i], &b, &e, NULL, NULL) ||
          ks_rt_find_definition(src, end, maxs[i], &b, &e, NULL, NULL))
        st->user_minmax = 1;
  }
  if (!which || n->nkids != 2 || st->user_minmax)
    return fp_fail(st, "its index depends on the result of '%s'", fp_text(st, n));
  fp_range a, b;
  if (!fp_eval(st, n->kids[0], env, cut, &a) || !fp_eval(st, n->kids[1], env, cut, &b))
    return false;
  if (which < 0)
    *out = (fp_range){a.lo && b.lo ? fp_min(st, a.lo, b.lo, env) : NULL,
                      a.hi && b.hi ? fp_min(st, a.hi, b.hi, env) : a.hi ? a.hi : b.hi};
  else
    *out = (fp_range){a.lo && b.lo ? fp_max(st, a.lo, b.lo, env) : a.lo ? a.lo : b.lo,
                      a.hi && b.hi ? fp_max(st, a.hi, b.hi, env) : NULL};
  return true;
}

static bool cast_range(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
                       fp_range *out) {
  fp_sign to = fp_int_type(n->type);
  if (to == FP_NOT_INT)
    return fp_fail(st, "its index goes through a conversion to '%s'", n->type ? n->type : "?");
  if (to == FP_NARROW && n->type && strstr(n->type, "bool")) {
    *out = (fp_range){fp_num(st, 0), fp_num(st, 1)};
    return true;
  }
  if (!fp_eval(st, n->kids[n->nkids - 1], env, cut, out))
    return false;
  if (to == FP_UNSIGNED && !fp_nonneg(st, out->lo, env))
    return fp_fail(st, "'%s' may be negative when converted to '%s'",
                   fp_text(st, n->kids[n->nkids - 1]), n->type);
  if (to == FP_NARROW) {
    long long lo, hi;
    if (!out->lo || !out->hi || !fp_is_const(out->lo, &lo) || !fp_is_const(out->hi, &hi) ||
        lo < 0 || hi > 127)
      return fp_fail(st, "'%s' may not fit in '%s'", fp_text(st, n->kids[n->nkids - 1]),
                     n->type);
  }
  return true;
}

static bool binary_range(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
                         fp_range *out) {
  const char *op = fp_op_of(st, n);
  static const char *const tests[] = {"<", ">", "<=", ">=", "==", "!=", "&&", "||"};
  for (size_t i = 0; i < 8; i++)
    if (!strcmp(op, tests[i])) {
      *out = (fp_range){fp_num(st, 0), fp_num(st, 1)};
      return true;
    }
  if (!strcmp(op, ","))
    return fp_eval(st, n->kids[1], env, cut, out);
  if (!strcmp(op, "?"))
    return false; /* fp_macro_op said why */
  fp_range a, b;
  if (!fp_eval(st, n->kids[0], env, cut, &a) || !fp_eval(st, n->kids[1], env, cut, &b))
    return false;
  /* In unsigned arithmetic the operands of these are converted first: a
   * negative one would not keep its value. */
  bool order_matters = strcmp(op, "+") && strcmp(op, "-") && strcmp(op, "*");
  if (order_matters && fp_int_type(n->type) == FP_UNSIGNED &&
      !(fp_nonneg(st, a.lo, env) && fp_nonneg(st, b.lo, env)))
    return fp_fail(st, "an operand of '%s' may be negative in unsigned arithmetic",
                   fp_text(st, n));
  if (!strcmp(op, "+")) {
    *out = (fp_range){opt_add(st, a.lo, b.lo), opt_add(st, a.hi, b.hi)};
    return true;
  }
  if (!strcmp(op, "-")) {
    *out = (fp_range){a.lo && b.hi ? fp_sub(st, a.lo, b.hi) : NULL,
                      a.hi && b.lo ? fp_sub(st, a.hi, b.lo) : NULL};
    return true;
  }
  if (!strcmp(op, "*"))
    return r_mul(st, n, a, b, env, out);
  if (!strcmp(op, "/"))
    return r_div(st, n, a, b, env, out);
  if (!strcmp(op, "%"))
    return r_mod(st, n, a, b, env, out);
  if (!strcmp(op, "<<") || !strcmp(op, ">>"))
    return r_shift(st, n, op[0] == '<', a, b, env, out);
  if (!strcmp(op, "&") || !strcmp(op, "|") || !strcmp(op, "^"))
    return r_bits(st, n, op, a, b, env, out);
  return fp_fail(st, "its index uses '%s', which the analysis does not follow", fp_text(st, n));
}

static bool eval_node(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
                      fp_range *out) {
  switch (n->kind) {
  case KS_AK_PAREN:
    if (n->nkids == 1)
      return fp_eval(st, n->kids[0], env, cut, out);
    break;
  case KS_AK_INT_LITERAL:
    *out = point(fp_num(st, n->int_value));
    return true;
  case KS_AK_CAST:
    if (n->nkids >= 1)
      return cast_range(st, n, env, cut, out);
    break;
  case KS_AK_DECL_REF:
    return eval_ref(st, n, env, cut, out);
  case KS_AK_MEMBER:
    return builtin_range(st, n, env, out);
  case KS_AK_BINARY:
    if (n->nkids == 2)
      return binary_range(st, n, env, cut, out);
    break;
  case KS_AK_UNARY: {
    const char *op = fp_op_of(st, n);
    if (n->nkids != 1 || !strcmp(op, "?"))
      break;
    if (!strcmp(op, "!")) {
      *out = (fp_range){fp_num(st, 0), fp_num(st, 1)};
      return true;
    }
    if (!strcmp(op, "*"))
      return fp_fail(st, "its index depends on '%s', read from memory", fp_text(st, n));
    if (strcmp(op, "-") && strcmp(op, "+"))
      break;
    if (!fp_eval(st, n->kids[0], env, cut, out))
      return false;
    if (op[0] == '-')
      *out = r_scale(st, *out, -1);
    return true;
  }
  case KS_AK_CONDITIONAL: {
    if (n->nkids != 3)
      break;
    fp_range a, b;
    if (!fp_eval(st, n->kids[1], fp_assume(st, n->kids[0], true, env), cut, &a) ||
        !fp_eval(st, n->kids[2], fp_assume(st, n->kids[0], false, env), cut, &b))
      return false;
    *out = hull(st, a, b, env);
    return true;
  }
  case KS_AK_CALL:
    return minmax_call(st, n, env, cut, out);
  case KS_AK_SUBSCRIPT:
    return fp_fail(st, "its index depends on '%s', read from memory", fp_text(st, n));
  case KS_AK_OTHER: {
    if (ks_rt_is_wrapper(n) ||
        (n->nkids == 1 && n->kind_name && !strcmp(n->kind_name, "UnexposedExpr")))
      return fp_eval(st, n->kids[0], env, cut, out);
    long long v;
    if (n->kind_name && !strcmp(n->kind_name, "UnaryExpr")) {
      if (!fp_sizeof(st, n, &v))
        return false;
      *out = point(fp_num(st, v));
      return true;
    }
    if (n->kind_name && !strcmp(n->kind_name, "CXXBoolLiteralExpr")) {
      const char *t = fp_text(st, n);
      *out = point(fp_num(st, !strcmp(t, "true")));
      return strcmp(t, "true") == 0 || strcmp(t, "false") == 0 ||
             fp_fail(st, "its index uses '%s'", t);
    }
    break;
  }
  default:
    break;
  }
  return fp_fail(st, "its index uses '%s', which the analysis does not follow", fp_text(st, n));
}

bool fp_eval(fp_state *st, const ks_anode *n, const fp_fact *env, const fp_fact *cut,
             fp_range *out) {
  if (!n)
    return fp_fail(st, "its index is missing");
  if (st->depth > 256)
    return fp_fail(st, "its index is too deeply nested to follow");
  st->depth++;
  bool ok = eval_node(st, n, env, cut, out);
  st->depth--;
  if (ok && fp_int_type(n->type) == FP_UNSIGNED && n->kind != KS_AK_MEMBER &&
      !fp_nonneg(st, out->lo, env))
    return fp_fail(st, "'%s' may wrap below zero in unsigned arithmetic", fp_text(st, n));
  return ok;
}

/* ---- conditions ---- */

static const char *negated(const char *op) {
  static const char *const pairs[][2] = {{"<", ">="}, {">", "<="}, {"<=", ">"},
                                         {">=", "<"}, {"==", "!="}, {"!=", "=="}};
  for (size_t i = 0; i < 6; i++)
    if (!strcmp(op, pairs[i][0]))
      return pairs[i][1];
  return NULL;
}

static bool is_comparison(const char *op) { return negated(op) != NULL; }

/* The node a condition's bound applies to: through parentheses and
 * conversions that keep the value (a value proved >= 0 keeps it when made
 * unsigned; a wider or equal signed type keeps it). */
static const ks_anode *narrow_target(fp_state *st, const ks_anode *t, const fp_fact *env) {
  for (;;) {
    t = ks_rt_strip(t, false);
    if (!t || t->kind != KS_AK_CAST || !t->nkids)
      return t;
    fp_sign to = fp_int_type(t->type);
    fp_range r;
    if (to == FP_SIGNED ||
        (to == FP_UNSIGNED && fp_eval(st, t->kids[t->nkids - 1], env, NULL, &r) &&
         fp_nonneg(st, r.lo, env)))
      t = t->kids[t->nkids - 1];
    else
      return t;
  }
}

static long long floor_div(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* The value of `t` is within `r` from here on. */
static const fp_fact *bound(fp_state *st, const ks_anode *t, fp_range r, const fp_fact *env) {
  if (!r.lo && !r.hi)
    return env;
  t = narrow_target(st, t, env);
  if (!t)
    return env;
  if (t->kind == KS_AK_DECL_REF && t->decl && t->decl->kind == KS_AK_VAR)
    return fp_push(st, env, (fp_fact){.kind = FP_FACT_RANGE, .decl = t->decl, .r = r});
  if (builtin_key(t))
    return fp_push(st, env, (fp_fact){.kind = FP_FACT_RANGE, .builtin = builtin_key(t), .r = r});
  /* k * s + c >= L for a parameter s: s >= ceil((L - c) / k). */
  fp_range v;
  const fp_atom *s;
  long long k, c, l, need;
  if (r.lo && fp_eval(st, t, env, NULL, &v) && v.lo && v.hi && fp_equal(v.lo, v.hi) &&
      fp_linear_in_one(v.lo, &s, &k, &c) && (l = fp_lower(st, r.lo, env)) != FP_NO_LOWER &&
      !__builtin_sub_overflow(l, c, &need) && need != LLONG_MIN) {
    long long lo = -floor_div(-need, k);
    return fp_push(st, env, (fp_fact){.kind = FP_FACT_SYM_LO, .sym = s, .lo = lo});
  }
  return env;
}

static bool sign_class(const ks_anode *n, int *cls) {
  fp_sign s = fp_int_type(n ? n->type : NULL);
  if (n && n->kind == KS_AK_MEMBER)
    s = FP_UNSIGNED;
  *cls = s == FP_UNSIGNED ? 2 : s == FP_NOT_INT ? 0 : 1;
  return *cls != 0;
}

const fp_fact *fp_compare(fp_state *st, const ks_anode *a, const char *op, const ks_anode *b,
                          const fp_fact *env) {
  if (op[0] == '>') { /* a > b is b < a */
    const ks_anode *s = a;
    a = b;
    b = s;
    op = op[1] ? "<=" : "<";
  }
  fp_range ra = {0}, rb = {0};
  if (!fp_eval(st, a, env, NULL, &ra))
    ra = (fp_range){0};
  if (!fp_eval(st, b, env, NULL, &rb))
    rb = (fp_range){0};
  int ca, cb;
  bool known_a = sign_class(a, &ca), known_b = sign_class(b, &cb);
  bool same = known_a && known_b && ca == cb;
  /* A negative side would be converted before comparing; a side of an
   * unsigned type is never negative. */
  if (!same && !((ca == 2 || fp_nonneg(st, ra.lo, env)) && (cb == 2 || fp_nonneg(st, rb.lo, env))))
    return env;
  if (!strcmp(op, "<") || !strcmp(op, "<=")) {
    long long d = op[1] ? 0 : 1;
    env = bound(st, a, (fp_range){NULL, rb.hi ? fp_addc(st, rb.hi, -d) : NULL}, env);
    return bound(st, b, (fp_range){ra.lo ? fp_addc(st, ra.lo, d) : NULL, NULL}, env);
  }
  if (!strcmp(op, "==")) {
    env = bound(st, a, rb, env);
    return bound(st, b, ra, env);
  }
  if (!strcmp(op, "!=")) {
    /* x != v with v the end of x's range moves that end by one. */
    for (int side = 0; side < 2; side++) {
      const ks_anode *x = side ? b : a;
      fp_range rx = side ? rb : ra, rv = side ? ra : rb;
      if (!rv.lo || !fp_equal(rv.lo, rv.hi))
        continue;
      if (rx.lo && fp_equal(rx.lo, rv.lo))
        env = bound(st, x, (fp_range){fp_addc(st, rv.lo, 1), NULL}, env);
      else if (rx.hi && fp_equal(rx.hi, rv.lo))
        env = bound(st, x, (fp_range){NULL, fp_addc(st, rv.lo, -1)}, env);
    }
  }
  return env;
}

const fp_fact *fp_assume(fp_state *st, const ks_anode *cond, bool truth, const fp_fact *env) {
  const char *keep = st->why;
  const ks_anode *c = ks_anode_strip(cond, false);
  const fp_fact *out = env;
  if (!c) {
  } else if (fp_is_op(st, c, KS_AK_UNARY, "!")) {
    out = fp_assume(st, c->kids[0], !truth, env);
  } else if (c->kind == KS_AK_BINARY && c->nkids == 2) {
    const char *op = fp_op_of(st, c);
    if (!strcmp(op, "&&") && truth)
      out = fp_assume(st, c->kids[1], true, fp_assume(st, c->kids[0], true, env));
    else if (!strcmp(op, "||") && !truth)
      out = fp_assume(st, c->kids[1], false, fp_assume(st, c->kids[0], false, env));
    else if (is_comparison(op))
      out = fp_compare(st, c->kids[0], truth ? op : negated(op), c->kids[1], env);
  }
  st->why = keep; /* a condition not understood narrows nothing */
  return out;
}

