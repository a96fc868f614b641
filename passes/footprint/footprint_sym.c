/* footprint_sym: the symbolic bounds of the footprint analysis.
 *
 * A bound is a polynomial with 64-bit integer coefficients over atoms:
 * scalar parameters and launch dimensions (FP_SYM), and opaque quotients,
 * minima and maxima of other polynomials. Keeping bounds in this normal
 * form is what folds `(NI - 1) * NK + (NK - 1) + 1` to a number and
 * `(rows - 1) * cols + cols` to `rows * cols`, and what makes two bounds
 * comparable: a <= b when b - a has a constant lower bound >= 0, every
 * atom's lower bound coming from the facts on the path (`i < n` with
 * i >= 0 gives n >= 1) or from what always holds (launch dimensions >= 1,
 * unsigned parameters >= 0). Every coefficient operation is checked; an
 * overflow fails the bound rather than wrapping. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "footprint_int.h"
#include "ks_buf.h"

bool fp_fail(fp_state *st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[512];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  st->why = ks_arena_strdup(st->arena, buf);
  return false;
}

static const fp_poly *too_big(fp_state *st) {
  fp_fail(st, "its bound does not fit in 64 bits");
  return NULL;
}

/* ---- atoms ---- */

static const fp_atom *intern(fp_state *st, fp_atom a) {
  for (size_t i = 0; i < st->atoms.len; i++)
    if (!strcmp(st->atoms.items[i]->text, a.text))
      return st->atoms.items[i];
  fp_atom *n = ks_arena_alloc(st->arena, sizeof *n);
  *n = a;
  *ks_array_push(st->arena, &st->atoms) = n;
  return n;
}

const fp_atom *fp_sym(fp_state *st, const char *name, int rank, long long static_lo) {
  return intern(st, (fp_atom){.kind = FP_SYM, .text = name, .rank = rank, .static_lo = static_lo});
}

/* ---- polynomials ---- */

static int term_cmp(const fp_term *a, const fp_term *b) {
  if (a->deg != b->deg)
    return a->deg > b->deg ? -1 : 1;
  for (unsigned i = 0; i < a->deg; i++)
    if (a->f[i] != b->f[i])
      return a->f[i]->rank < b->f[i]->rank ? -1 : 1;
  return 0;
}

static int term_qcmp(const void *a, const void *b) { return term_cmp(a, b); }

/* Sorts, merges equal monomials and drops zeros; `t` is the caller's
 * scratch and is copied. */
static const fp_poly *normalize(fp_state *st, fp_term *t, size_t n) {
  qsort(t, n, sizeof *t, term_qcmp);
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (out && !term_cmp(&t[out - 1], &t[i])) {
      long long s;
      if (__builtin_add_overflow(t[out - 1].coef, t[i].coef, &s) || s == LLONG_MIN)
        return too_big(st);
      t[out - 1].coef = s;
    } else {
      t[out++] = t[i];
    }
    if (!t[out - 1].coef)
      out--;
  }
  if (out > FP_MAXTERMS) {
    fp_fail(st, "its bound grows too large to follow");
    return NULL;
  }
  fp_poly *p = ks_arena_alloc(st->arena, sizeof *p);
  fp_term *copy = ks_arena_alloc(st->arena, (out ? out : 1) * sizeof *copy);
  memcpy(copy, t, out * sizeof *copy);
  p->n = out;
  p->t = copy;
  return p;
}

const fp_poly *fp_num(fp_state *st, long long v) {
  fp_term t = {.coef = v};
  return normalize(st, &t, v ? 1 : 0);
}

const fp_poly *fp_atom_poly(fp_state *st, const fp_atom *a) {
  fp_term t = {.coef = 1, .deg = 1, .f = {a}};
  return normalize(st, &t, 1);
}

static const fp_poly *combine(fp_state *st, const fp_poly *a, const fp_poly *b, long long sb) {
  if (!a || !b)
    return NULL;
  size_t n = a->n + b->n;
  fp_term *t = ks_arena_alloc(st->arena, (n ? n : 1) * sizeof *t);
  memcpy(t, a->t, a->n * sizeof *t);
  for (size_t i = 0; i < b->n; i++) {
    t[a->n + i] = b->t[i];
    if (__builtin_mul_overflow(b->t[i].coef, sb, &t[a->n + i].coef))
      return too_big(st);
  }
  return normalize(st, t, n);
}

const fp_poly *fp_add(fp_state *st, const fp_poly *a, const fp_poly *b) {
  return combine(st, a, b, 1);
}

const fp_poly *fp_sub(fp_state *st, const fp_poly *a, const fp_poly *b) {
  return combine(st, a, b, -1);
}

const fp_poly *fp_addc(fp_state *st, const fp_poly *a, long long c) {
  return fp_add(st, a, fp_num(st, c));
}

const fp_poly *fp_scale(fp_state *st, const fp_poly *a, long long c) {
  if (!a)
    return NULL;
  return combine(st, fp_num(st, 0), a, c);
}

const fp_poly *fp_mul(fp_state *st, const fp_poly *a, const fp_poly *b) {
  if (!a || !b)
    return NULL;
  size_t n = a->n * b->n;
  if (n > 4 * FP_MAXTERMS) {
    fp_fail(st, "its bound grows too large to follow");
    return NULL;
  }
  fp_term *t = ks_arena_alloc(st->arena, (n ? n : 1) * sizeof *t);
  size_t k = 0;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = 0; j < b->n; j++) {
      const fp_term *x = &a->t[i], *y = &b->t[j];
      fp_term *r = &t[k++];
      if (x->deg + y->deg > FP_MAXDEG) {
        fp_fail(st, "its bound has a product of more than %d factors", FP_MAXDEG);
        return NULL;
      }
      if (__builtin_mul_overflow(x->coef, y->coef, &r->coef) || r->coef == LLONG_MIN)
        return too_big(st);
      /* Merge the two sorted factor lists. */
      unsigned p = 0, q = 0;
      r->deg = 0;
      while (p < x->deg || q < y->deg) {
        bool from_x = q == y->deg || (p < x->deg && x->f[p]->rank <= y->f[q]->rank);
        r->f[r->deg++] = from_x ? x->f[p++] : y->f[q++];
      }
    }
  return normalize(st, t, k);
}

bool fp_is_const(const fp_poly *a, long long *v) {
  if (!a || a->n > 1 || (a->n == 1 && a->t[0].deg))
    return false;
  *v = a->n ? a->t[0].coef : 0;
  return true;
}

bool fp_equal(const fp_poly *a, const fp_poly *b) {
  if (!a || !b || a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++)
    if (a->t[i].coef != b->t[i].coef || term_cmp(&a->t[i], &b->t[i]))
      return false;
  return true;
}

bool fp_linear_in_one(const fp_poly *a, const fp_atom **s, long long *k, long long *c) {
  if (!a || !a->n || a->n > 2)
    return false;
  const fp_term *lin = &a->t[0];
  if (lin->deg != 1 || lin->coef <= 0 || lin->f[0]->kind != FP_SYM)
    return false;
  if (a->n == 2 && a->t[1].deg)
    return false;
  *s = lin->f[0];
  *k = lin->coef;
  *c = a->n == 2 ? a->t[1].coef : 0;
  return true;
}

/* ---- printing ---- */

static void print_poly(ks_buf *b, const fp_poly *a);

/* A polynomial as an operand of * or /: in parentheses unless it is one
 * name or a non-negative number. */
static void print_operand(ks_buf *b, const fp_poly *a) {
  long long v;
  bool simple = (fp_is_const(a, &v) && v >= 0) ||
                (a->n == 1 && a->t[0].deg == 1 && a->t[0].coef == 1 && a->t[0].f[0]->kind != FP_DIV);
  if (!simple)
    ks_buf_adds(b, "(");
  print_poly(b, a);
  if (!simple)
    ks_buf_adds(b, ")");
}

static void print_term(ks_buf *b, const fp_term *t, bool first) {
  long long c = t->coef;
  unsigned long long mag = c < 0 ? (unsigned long long)0 - (unsigned long long)c : (unsigned long long)c;
  if (first)
    ks_buf_adds(b, c < 0 ? "-" : "");
  else
    ks_buf_adds(b, c < 0 ? " - " : " + ");
  if (!t->deg) {
    ks_buf_addf(b, "%llu", mag);
    return;
  }
  bool lone = mag == 1 && t->deg == 1;
  if (mag != 1)
    ks_buf_addf(b, "%llu * ", mag);
  for (unsigned i = 0; i < t->deg; i++) {
    if (i)
      ks_buf_adds(b, " * ");
    const fp_atom *f = t->f[i];
    /* A quotient among other factors needs its parentheses:
     * 2 * (n / 4) is not 2 * n / 4. */
    bool wrap = f->kind == FP_DIV && !lone;
    if (wrap)
      ks_buf_adds(b, "(");
    ks_buf_adds(b, f->text);
    if (wrap)
      ks_buf_adds(b, ")");
  }
}

static void print_poly(ks_buf *b, const fp_poly *a) {
  if (!a->n) {
    ks_buf_adds(b, "0");
    return;
  }
  for (size_t i = 0; i < a->n; i++)
    print_term(b, &a->t[i], i == 0);
}

const char *fp_print(fp_state *st, const fp_poly *a) {
  ks_buf b = KS_BUF_INIT;
  print_poly(&b, a);
  const char *s = ks_arena_strdup(st->arena, b.data ? b.data : "");
  ks_buf_release(&b);
  return s;
}

static const fp_atom *compound(fp_state *st, fp_atom_kind kind, const fp_poly *a,
                               const fp_poly *b) {
  ks_buf t = KS_BUF_INIT;
  if (kind == FP_DIV) {
    print_operand(&t, a);
    ks_buf_adds(&t, " / ");
    print_operand(&t, b);
  } else {
    ks_buf_adds(&t, kind == FP_MIN ? "min(" : "max(");
    print_poly(&t, a);
    ks_buf_adds(&t, ", ");
    print_poly(&t, b);
    ks_buf_adds(&t, ")");
  }
  fp_atom at = {.kind = kind, .text = ks_arena_strdup(st->arena, t.data), .a = a, .b = b,
                .static_lo = FP_NO_LOWER};
  ks_buf_release(&t);
  for (size_t i = 0; i < st->atoms.len; i++)
    if (!strcmp(st->atoms.items[i]->text, at.text))
      return st->atoms.items[i];
  at.rank = 1 << 20 | st->compound_rank++;
  return intern(st, at);
}

/* ---- division, min, max ---- */

const fp_poly *fp_div(fp_state *st, const fp_poly *a, const fp_poly *b) {
  if (!a || !b)
    return NULL;
  long long c, v;
  if (fp_is_const(b, &c)) {
    if (c <= 0) {
      fp_fail(st, "it divides by a value that is not positive");
      return NULL;
    }
    if (c == 1)
      return a;
    if (fp_is_const(a, &v))
      return fp_num(st, v / c);
    bool exact = true;
    for (size_t i = 0; i < a->n && exact; i++)
      exact = a->t[i].coef % c == 0;
    if (exact) {
      fp_term *t = ks_arena_alloc(st->arena, (a->n ? a->n : 1) * sizeof *t);
      for (size_t i = 0; i < a->n; i++) {
        t[i] = a->t[i];
        t[i].coef /= c;
      }
      return normalize(st, t, a->n);
    }
  }
  if (!a->n)
    return a;
  return fp_atom_poly(st, compound(st, FP_DIV, a, b));
}

static const fp_poly *minmax(fp_state *st, bool is_max, const fp_poly *a, const fp_poly *b,
                             const fp_fact *env) {
  if (!a || !b)
    return NULL;
  if (fp_le(st, a, b, env))
    return is_max ? b : a;
  if (fp_le(st, b, a, env))
    return is_max ? a : b;
  const char *ta = fp_print(st, a), *tb = fp_print(st, b);
  if (strcmp(ta, tb) > 0) {
    const fp_poly *s = a;
    a = b;
    b = s;
  }
  return fp_atom_poly(st, compound(st, is_max ? FP_MAX : FP_MIN, a, b));
}

const fp_poly *fp_min(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env) {
  return minmax(st, false, a, b, env);
}

const fp_poly *fp_max(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env) {
  return minmax(st, true, a, b, env);
}

/* ---- lower bounds ---- */

static long long atom_lower(fp_state *st, const fp_atom *a, const fp_fact *env, unsigned depth) ;

static long long poly_lower(fp_state *st, const fp_poly *p, const fp_fact *env, unsigned depth) {
  if (!p || depth > 16)
    return FP_NO_LOWER;
  __int128 sum = 0;
  for (size_t i = 0; i < p->n; i++) {
    const fp_term *t = &p->t[i];
    if (!t->deg) {
      sum += t->coef;
      continue;
    }
    /* c * x * y with c > 0 and every factor >= its lower bound >= 0 is at
     * least c * lx * ly; a negative coefficient has no lower bound without
     * upper bounds, which are not tracked. */
    if (t->coef < 0)
      return FP_NO_LOWER;
    __int128 prod = t->coef;
    for (unsigned f = 0; f < t->deg; f++) {
      long long l = atom_lower(st, t->f[f], env, depth + 1);
      if (l == FP_NO_LOWER || l < 0)
        return FP_NO_LOWER;
      prod *= l;
      if (prod > LLONG_MAX)
        prod = LLONG_MAX; /* a smaller lower bound stays a lower bound */
    }
    sum += prod;
    if (sum > LLONG_MAX)
      sum = LLONG_MAX;
  }
  if (sum <= LLONG_MIN)
    return FP_NO_LOWER;
  return (long long)sum;
}

static long long atom_lower(fp_state *st, const fp_atom *a, const fp_fact *env, unsigned depth) {
  switch (a->kind) {
  case FP_SYM: {
    long long lo = a->static_lo;
    for (const fp_fact *f = env; f; f = f->next)
      if (f->kind == FP_FACT_SYM_LO && f->sym == a && (lo == FP_NO_LOWER || f->lo > lo))
        lo = f->lo;
    return lo;
  }
  case FP_DIV: {
    long long la = poly_lower(st, a->a, env, depth), c;
    if (la == FP_NO_LOWER)
      return FP_NO_LOWER;
    if (fp_is_const(a->b, &c) && c > 0)
      return la / c; /* truncation is monotone */
    return la >= 0 && poly_lower(st, a->b, env, depth) >= 1 ? 0 : FP_NO_LOWER;
  }
  case FP_MIN: {
    long long x = poly_lower(st, a->a, env, depth), y = poly_lower(st, a->b, env, depth);
    return x == FP_NO_LOWER || y == FP_NO_LOWER ? FP_NO_LOWER : x < y ? x : y;
  }
  case FP_MAX: {
    long long x = poly_lower(st, a->a, env, depth), y = poly_lower(st, a->b, env, depth);
    return x > y ? x : y; /* FP_NO_LOWER is the smallest value */
  }
  }
  return FP_NO_LOWER;
}

long long fp_lower(fp_state *st, const fp_poly *a, const fp_fact *env) {
  return poly_lower(st, a, env, 0);
}

bool fp_nonneg(fp_state *st, const fp_poly *a, const fp_fact *env) {
  if (!a)
    return false;
  long long l = fp_lower(st, a, env);
  return l != FP_NO_LOWER && l >= 0;
}

bool fp_le(fp_state *st, const fp_poly *a, const fp_poly *b, const fp_fact *env) {
  if (!a || !b)
    return false;
  if (fp_equal(a, b))
    return true;
  const char *keep = st->why;
  const fp_poly *d = fp_sub(st, b, a);
  st->why = keep; /* a failed comparison is not a failure */
  return d && fp_nonneg(st, d, env);
}
