/* rules_stream_z: register streaming for stencils, stream_z along z in 3-D
 * and stream_y along y in 2-D (one implementation, an sz_axis apart).
 *
 *   stream_z   a kernel with one output per thread at (x, y, z) that reads
 *              its own column (x, y) at z - 1, z, z + 1 (or a wider window)
 *              from global memory walks a run of Z consecutive planes per
 *              thread instead; the column values live in registers that
 *              shift by one plane per step, so each is read from global
 *              memory once instead of three times. PARAM = Z (0: all the
 *              planes in one run).
 *   stream_y   the same for a 2-D kernel with one output per thread at
 *              (x, y), walking a run of R consecutive rows (y) of its
 *              column x. PARAM = R.
 *
 * Two shapes each, read as the compiler reads them (rules_meaning.h):
 *
 *   grid       int z = blockIdx.z * blockDim.z + threadIdx.z;  with a
 *              bounds check on the indexes (an early return or a block);
 *              grid z becomes ceil_div(grid_z, Z) (stream_y: the y index,
 *              grid y, and no z index);
 *   loop       a counted loop over z inside the x/y bounds check
 *              (`int k; for (k = 1; k <= NZ - 2; k++)`); the grid gets a
 *              z dimension of ceil_div(count, Z) runs (stream_y: an x index
 *              alone and a loop over the rows; the grid gets a y dimension).
 *
 * An access p[E] reads the column when E, expanded into a polynomial over
 * the indexes, the scalar parameters and constants (through casts and the
 * never-assigned integer locals it names), differs from the output's index
 * C by d times C's coefficient of z plus an offset that does not depend on
 * z (none for the own column, `- 1` for the column beside it): then it is
 * that column's element at z + d, the value loaded at step z + d - dmax as
 * its window's newest plane.
 *
 * The body is written anew: the declarations that do not depend on z, the
 * run's bounds clamped by the bounds check's z terms, the x/y terms as one
 * condition, the windows preloaded at the run's first plane, then one step
 * per plane: the newest planes' loads, the original work with its column
 * reads replaced by the registers, the shift. docs/rules.md gives the
 * conditions and the guards. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_meaning.h"
#include "rules_shape.h"
#include "rules_tree.h"

#define SZ_MAXD 4       /* |d| of a column read */
#define SZ_ATOMS 4      /* factors of one monomial */
#define SZ_TERMS 32     /* monomials of one polynomial */

/* ---- polynomials over the index variables and parameters ---------------- */

typedef struct mono {
  long long coef;
  const ks_anode *atoms[SZ_ATOMS]; /* sorted by address */
  int n;
} mono;
typedef KS_ARRAY(mono) poly;

typedef struct zbound {
  const char *text;  /* in C, as written */
  const char *fold;  /* guard text over parameters and constants */
  int add;           /* 1 for <= (hi) or > (lo) */
} zbound;
typedef KS_ARRAY(zbound) zbounds;

typedef struct site {
  const ks_anode *node;  /* p[E], or the __ldg(&p[E]) around it */
  size_t buf;
  int d;                 /* the plane z + d of the column */
} site;

/* One register window: the reads of `param` at C + d * (C's coefficient of
 * the streamed index) + lat, for consecutive d; lat is empty for the
 * thread's own column, a neighbouring column's offset otherwise. */
typedef struct sbuf {
  const ks_anode *param;
  poly lat;              /* the offset across, free of the streamed index */
  int lat_no;            /* 0 for the own column, else 1, 2, ... per param */
  unsigned offsets;      /* bit d + SZ_MAXD */
  int dmin, dmax;
  bool streamed;
  const char *reg[2 * SZ_MAXD + 1];
  const ks_anode *rep[2 * SZ_MAXD + 1]; /* one read of each plane */
} sbuf;

/* What differs between streaming along z (3-D stencils) and along y (2-D
 * ones): the dimension walked, the names in the code written and the words
 * of the refusals. */
typedef struct sz_axis {
  const char *rule;     /* the rule's name, its tag's prefix */
  int dim;              /* the launch dimension: 2 (z) or 1 (y) */
  char name;            /* 'z', 'y' */
  const char *plane;    /* one step of the walk */
  const char *planes;   /* its plural, with the axis */
  const char *steps;    /* its plural, short */
  const char *own;      /* the thread's coordinates across the walk */
  const char *across;   /* the bounds check's other terms */
} sz_axis;

static const sz_axis axis_z = {"stream_z", 2, 'z', "z plane", "z planes", "planes", "(x, y)", "x/y"};
static const sz_axis axis_y = {"stream_y", 1, 'y', "row", "rows", "rows", "x", "x"};

typedef struct sz {
  const sz_axis *ax;
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_kast *k;
  ks_meaning *meaning;
  const ks_anode *idx[3];  /* the global indexes along x, y, z found at the top */
  const ks_anode *svar;    /* the index streamed (idx[ax->dim]), or the loop's counter */
  const ks_anode *sdecl;   /* grid form: the streamed index's declaration statement */
  bool loop_form;
  ks_rt_nodes top;        /* top-level declarations (and assignments) kept before the run */
  ks_rt_nodes moved;      /* grid form: top-level declarations that depend on svar */
  ks_rt_nodes pre;        /* loop form: declarations before the loop */
  ks_strings xy;          /* the x/y terms, each true in range */
  zbounds lo, hi;
  ks_loop_view view;
  const ks_anode *const *work;
  size_t nwork;
  ks_rt_nodes writes;     /* the p[E] written */
  ks_rt_nodes reads;      /* the reads of parameters: p[E] or __ldg(&p[E]) */
  poly c;                 /* the output's index */
  KS_ARRAY(sbuf) bufs;
  KS_ARRAY(site) sites;
  const char *why;
} sz;

static bool sz_fail(sz *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool sz_fail(sz *s, const char *fmt, ...) {
  if (!s->why) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one line: quoted code that spans lines is joined */
    char *w = msg;
    for (const char *r = msg; *r; r++) {
      if (*r == '\n') {
        while (w > msg && (w[-1] == ' ' || w[-1] == '\t'))
          w--;
        while (r[1] == ' ' || r[1] == '\t')
          r++;
        *w++ = ' ';
      } else {
        *w++ = *r;
      }
    }
    *w = '\0';
    s->why = ks_arena_strdup(s->arena, msg);
  }
  return false;
}

static const char *text(sz *s, const ks_anode *n) { return ks_rt_text_of(s->arena, s->in, n); }

static bool integer_type(const char *t) {
  return t && !strstr(t, "float") && !strstr(t, "double") && !strstr(t, "half") &&
         !strstr(t, "bfloat") && !strstr(t, "bool") && !strchr(t, '*') && !strchr(t, '&') &&
         !strchr(t, '[');
}

static bool is_pure_call(const char *name) {
  static const char *const names[] = {
      "fabs", "fabsf", "sqrt", "sqrtf", "exp",  "expf", "log",   "logf",   "sin",  "sinf",
      "cos",  "cosf",  "fmin", "fminf", "fmax", "fmaxf", "min",  "max",    "abs",  "pow",
      "powf", "fma",   "fmaf", "rsqrt", "rsqrtf", "tanh", "tanhf", "__expf", "__logf",
      "__fdividef", "__powf", "__sinf", "__cosf", "exp2f", "log2f"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (name && !strcmp(name, names[i]))
      return true;
  return false;
}

static bool is_memory(const ks_anode *n) {
  return n && (n->kind == KS_AK_SUBSCRIPT || ks_rt_is_op(n, KS_AK_UNARY, "*") ||
               (n->kind == KS_AK_MEMBER && n->arrow));
}

/* No assignment, no call but pure ones, no memory read unless `reads`. */
static bool check_pure(sz *s, const ks_anode *e, bool reads, const char *where) {
  if (!e)
    return true;
  ks_rt_nodes all = ks_rt_collect(s->arena, e);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind == KS_AK_CALL && !is_pure_call(ks_rt_callee(s->arena, n)) &&
        !(reads && !strcmp(ks_rt_callee(s->arena, n), "__ldg")))
      return sz_fail(s, "it calls '%s' %s", ks_rt_callee(s->arena, n), where);
    if (ks_rt_is_assignment(n))
      return sz_fail(s, "it assigns %s ('%s')", where, text(s, n));
    if (!reads && (is_memory(n) || (n->kind == KS_AK_CALL)))
      if (n->kind != KS_AK_CALL || !strcmp(ks_rt_callee(s->arena, n), "__ldg"))
        return sz_fail(s, "it reads memory %s ('%s')", where, text(s, n));
  }
  return true;
}

static bool is_index_var(sz *s, const ks_anode *d) {
  return d && (d == s->idx[0] || d == s->idx[1] || d == s->idx[2] || d == s->svar);
}

static bool mono_same_atoms(const mono *a, const mono *b) {
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (a->atoms[i] != b->atoms[i])
      return false;
  return true;
}

/* p += sign * m, merging like terms. */
static bool poly_add(sz *s, poly *p, const mono *m, long long sign) {
  long long c;
  if (__builtin_mul_overflow(m->coef, sign, &c))
    return false;
  for (size_t i = 0; i < p->len; i++)
    if (mono_same_atoms(&p->items[i], m))
      return !__builtin_add_overflow(p->items[i].coef, c, &p->items[i].coef);
  if (p->len >= SZ_TERMS)
    return false;
  mono *n = ks_array_push(s->arena, p);
  *n = *m;
  n->coef = c;
  return true;
}

static void poly_clean(poly *p) {
  size_t w = 0;
  for (size_t i = 0; i < p->len; i++)
    if (p->items[i].coef)
      p->items[w++] = p->items[i];
  p->len = w;
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const ks_anode *const *)a, y = (uintptr_t) * (const ks_anode *const *)b;
  return x < y ? -1 : x > y;
}

static bool poly_mul(sz *s, const poly *a, const poly *b, poly *out) {
  out->len = 0;
  for (size_t i = 0; i < a->len; i++)
    for (size_t j = 0; j < b->len; j++) {
      mono m = {0};
      if (a->items[i].n + b->items[j].n > SZ_ATOMS ||
          __builtin_mul_overflow(a->items[i].coef, b->items[j].coef, &m.coef))
        return false;
      for (int k = 0; k < a->items[i].n; k++)
        m.atoms[m.n++] = a->items[i].atoms[k];
      for (int k = 0; k < b->items[j].n; k++)
        m.atoms[m.n++] = b->items[j].atoms[k];
      qsort(m.atoms, (size_t)m.n, sizeof *m.atoms, cmp_ptr);
      if (!poly_add(s, out, &m, 1))
        return false;
    }
  poly_clean(out);
  return true;
}

/* Expands integer expression `n`; false (with *bad, the term it could not
 * read) when it is not a polynomial over what the rule can name. */
static bool expand(sz *s, const ks_anode *n, int depth, poly *out, const ks_anode **bad) {
  out->len = 0;
  const ks_anode *e = ks_rt_strip(n, true);
  if (!e || depth > 24) {
    *bad = n;
    return false;
  }
  long long v;
  if (e->kind == KS_AK_INT_LITERAL || (e->kind != KS_AK_DECL_REF && ks_meaning_int(s->meaning, e, &v))) {
    mono m = {.coef = e->kind == KS_AK_INT_LITERAL ? e->int_value : v};
    if (m.coef)
      *ks_array_push(s->arena, out) = m;
    return true;
  }
  if (ks_rt_is_bin(e, "+") || ks_rt_is_bin(e, "-") || ks_rt_is_bin(e, "*")) {
    poly a = {0}, b = {0};
    if (!expand(s, e->kids[0], depth + 1, &a, bad) || !expand(s, e->kids[1], depth + 1, &b, bad))
      return false;
    if (e->op[0] == '*')
      return poly_mul(s, &a, &b, out) || (*bad = e, false);
    *out = a;
    for (size_t i = 0; i < b.len; i++)
      if (!poly_add(s, out, &b.items[i], e->op[0] == '-' ? -1 : 1))
        return (*bad = e, false);
    poly_clean(out);
    return true;
  }
  if ((ks_rt_is_op(e, KS_AK_UNARY, "-") || ks_rt_is_op(e, KS_AK_UNARY, "+")) && !e->postfix) {
    poly a = {0};
    if (!expand(s, e->kids[0], depth + 1, &a, bad))
      return false;
    for (size_t i = 0; i < a.len; i++)
      if (!poly_add(s, out, &a.items[i], e->op[0] == '-' ? -1 : 1))
        return (*bad = e, false);
    return true;
  }
  if (e->kind == KS_AK_DECL_REF && e->decl) {
    const ks_anode *d = e->decl;
    if (is_index_var(s, d) ||
        (d->kind == KS_AK_PARAM && !d->is_pointer && integer_type(d->type) &&
         !ks_rt_modified(s->k->body, d))) {
      mono m = {.coef = 1, .n = 1};
      m.atoms[0] = d;
      *ks_array_push(s->arena, out) = m;
      return true;
    }
    if (ks_meaning_int(s->meaning, e, &v)) {
      mono m = {.coef = v};
      if (m.coef)
        *ks_array_push(s->arena, out) = m;
      return true;
    }
    const ks_anode *init = ks_rt_var_init(d);
    bool impure = false;
    if (init)
      ks_anode_walk((ks_anode *)init, ks_shape_visit_impure, &impure);
    if (d->kind == KS_AK_VAR && init && !impure && !d->is_pointer && integer_type(d->type) &&
        !ks_rt_modified(s->k->body, d))
      return expand(s, init, depth + 1, out, bad);
  }
  *bad = e;
  return false;
}

/* d such that p == d * q (q not zero), or false. */
static bool poly_ratio(const poly *p, const poly *q, long long *d) {
  if (!p->len) {
    *d = 0;
    return true;
  }
  if (!q->len || p->len != q->len)
    return false;
  const mono *first = &p->items[0];
  long long r = 0;
  bool found = false;
  for (size_t i = 0; i < q->len; i++)
    if (mono_same_atoms(&q->items[i], first) && q->items[i].coef && first->coef % q->items[i].coef == 0) {
      r = first->coef / q->items[i].coef;
      found = true;
    }
  if (!found)
    return false;
  for (size_t i = 0; i < p->len; i++) {
    bool ok = false;
    for (size_t j = 0; j < q->len; j++)
      ok |= mono_same_atoms(&p->items[i], &q->items[j]) && p->items[i].coef == r * q->items[j].coef;
    if (!ok)
      return false;
  }
  *d = r;
  return true;
}

/* ---- the bounds check ----------------------------------------------------- */

static bool refs_var(sz *s, const ks_anode *e, const ks_anode *var) {
  return var && ks_rt_count_refs(s->arena, e, var) > 0;
}

/* One term of the check on z: z OP E (either order). */
static bool read_z_term(sz *s, const ks_anode *c, bool in_range) {
  const ks_anode *e = ks_rt_strip(c, false);
  static const char *const ops[] = {"<", "<=", ">", ">="};
  int op = -1;
  for (int i = 0; e && e->kind == KS_AK_BINARY && i < 4; i++)
    if (!strcmp(e->op, ops[i]))
      op = i;
  if (op < 0)
    return sz_fail(s, "its bounds check tests '%s', which is not %c compared with a bound",
                   text(s, c), s->ax->name);
  const ks_anode *l = ks_rt_strip(e->kids[0], true), *r = ks_rt_strip(e->kids[1], true), *b;
  if (l && l->kind == KS_AK_DECL_REF && l->decl == s->svar && !refs_var(s, r, s->svar)) {
    b = e->kids[1];
  } else if (r && r->kind == KS_AK_DECL_REF && r->decl == s->svar && !refs_var(s, l, s->svar)) {
    b = e->kids[0];
    op = op ^ 2; /* mirrored: < becomes >, <= becomes >= */
  } else {
    return sz_fail(s, "its bounds check tests '%s', which is not %c compared with a bound",
                   text(s, c), s->ax->name);
  }
  if (!in_range)
    op = (op ^ 2) ^ 1; /* negated: < becomes >=, <= becomes > */
  const char *why = NULL;
  const char *fold = ks_meaning_value(s->meaning, b, &why);
  if (!fold)
    return sz_fail(s, "its bound on %c '%s' does not fold to parameters and constants (%s)",
                   s->ax->name, text(s, b), why ? why : "?");
  zbound zb = {b->from_macro ? ks_arena_printf(s->arena, "(%s)", text(s, b))
                             : ks_rt_paren(s->arena, text(s, b)),
               fold, op == 1 || op == 2};
  *ks_array_push(s->arena, op < 2 ? &s->hi : &s->lo) = zb;
  return true;
}

/* Splits the check into terms; in_range: true when the condition holds in
 * range (a && chain), false for an early return (a || chain). */
static bool read_check(sz *s, const ks_anode *c, bool in_range) {
  const ks_anode *e = ks_rt_strip(c, false);
  if (e && e->kind == KS_AK_BINARY && !strcmp(e->op, in_range ? "&&" : "||"))
    return read_check(s, e->kids[0], in_range) && read_check(s, e->kids[1], in_range);
  if (!check_pure(s, e, false, "in its bounds check"))
    return false;
  if (s->loop_form && refs_var(s, e, s->svar))
    return sz_fail(s, "its bounds check reads the loop's counter '%s'", s->svar->name);
  if (!s->loop_form && refs_var(s, e, s->svar))
    return read_z_term(s, e, in_range);
  for (size_t m = 0; m < s->moved.len; m++)
    for (size_t v = 0; v < s->moved.items[m]->nkids; v++)
      if (refs_var(s, e, s->moved.items[m]->kids[v]))
        return sz_fail(s, "its bounds check tests '%s', which depends on %c through '%s'",
                       text(s, e), s->ax->name, s->moved.items[m]->kids[v]->name);
  const char *t = text(s, e);
  *ks_array_push(s->arena, &s->xy) =
      in_range ? ks_rt_paren(s->arena, t) : ks_arena_printf(s->arena, "!(%s)", t);
  return true;
}

/* ---- the work of one plane ------------------------------------------------ */

static bool declared_in(const ks_anode *var, const ks_anode *const *st, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (var->parent == st[i])
      return true;
  return false;
}

static const ks_anode *param_base(const ks_anode *sub) {
  const ks_anode *b = ks_rt_strip(sub->kids[0], true);
  if (b && b->kind == KS_AK_DECL_REF && b->decl && b->decl->kind == KS_AK_PARAM &&
      b->decl->is_pointer)
    return b->decl;
  return NULL;
}

static bool listed(const ks_rt_nodes *l, const ks_anode *n) {
  for (size_t i = 0; i < l->len; i++)
    if (l->items[i] == n)
      return true;
  return false;
}

static bool read_work(sz *s) {
  if (!s->nwork)
    return sz_fail(s, "it does nothing per %s", s->ax->plane);
  for (size_t i = 0; i < s->nwork; i++) {
    const ks_anode *st = s->work[i];
    if (st->from_macro)
      return sz_fail(s, "its work per %s comes from a macro ('%s')", s->ax->plane, text(s, st));
    ks_rt_nodes all = ks_rt_collect(s->arena, st);
    for (size_t a = 0; a < all.len; a++) {
      const ks_anode *n = all.items[a];
      switch (n->kind) {
      case KS_AK_IF:
      case KS_AK_FOR:
      case KS_AK_WHILE:
      case KS_AK_DO:
      case KS_AK_RETURN:
      case KS_AK_BREAK:
      case KS_AK_CONTINUE:
      case KS_AK_COMPOUND:
        return sz_fail(s, "its work per %s is not straight-line code (it has '%.40s')",
                       s->ax->plane, text(s, n));
      case KS_AK_OTHER:
        if (n->kind_name && (strstr(n->kind_name, "Stmt") || strstr(n->kind_name, "Asm")))
          return sz_fail(s, "its work per %s has a %s", s->ax->plane, n->kind_name);
        break;
      case KS_AK_VAR:
        if (n->shared_space)
          return sz_fail(s, "it declares the shared '%s'", n->name);
        break;
      case KS_AK_CONDITIONAL:
        for (size_t b = 0; b < all.len; b++)
          if (ks_rt_is_within(all.items[b], n) && is_memory(all.items[b]))
            return sz_fail(s, "it reads memory under '?:' ('%s')", text(s, n));
        break;
      case KS_AK_BINARY:
        if (!strcmp(n->op, "&&") || !strcmp(n->op, "||"))
          for (size_t b = 0; b < all.len; b++)
            if (ks_rt_is_within(all.items[b], n) && is_memory(all.items[b]))
              return sz_fail(s, "it reads memory under '%s' ('%s')", n->op, text(s, n));
        break;
      case KS_AK_CALL: {
        const char *c = ks_rt_callee(s->arena, n);
        if (c && !strcmp(c, "__ldg") && n->nkids == 1) {
          const ks_anode *arg = ks_rt_strip(n->kids[0], false);
          const ks_anode *sub = ks_rt_is_op(arg, KS_AK_UNARY, "&") ? ks_rt_strip(arg->kids[0], false) : NULL;
          if (sub && sub->kind == KS_AK_SUBSCRIPT && param_base(sub)) {
            *ks_array_push(s->arena, &s->reads) = n;
            break;
          }
        }
        if (!is_pure_call(c))
          return sz_fail(s, "its work per %s calls '%s'", s->ax->plane, c ? c : "?");
        break;
      }
      case KS_AK_MEMBER:
        if (n->arrow)
          return sz_fail(s, "it reads through '->' ('%s')", text(s, n));
        break;
      case KS_AK_SUBSCRIPT: {
        const ks_anode *p = param_base(n);
        if (!p)
          return sz_fail(s, "it indexes '%s', which is not a pointer parameter",
                         text(s, n->kids[0]));
        const ks_anode *child = NULL, *up = ks_rt_up(n, &child);
        if (up && ks_rt_is_bin(up, "=") && child == up->kids[0]) {
          *ks_array_push(s->arena, &s->writes) = n;
        } else if (up && ks_rt_is_assignment(up) && child == up->kids[0]) {
          return sz_fail(s, "it updates '%s' in place", text(s, n));
        } else {
          const ks_anode *call = up && ks_rt_is_op(up, KS_AK_UNARY, "&") ? ks_rt_up(up, NULL) : NULL;
          if (call && call->kind == KS_AK_CALL && listed(&s->reads, call))
            break;
          if (up && ks_rt_is_op(up, KS_AK_UNARY, "&"))
            return sz_fail(s, "it takes the address '%s'", text(s, up));
          *ks_array_push(s->arena, &s->reads) = n;
        }
        break;
      }
      default:
        if (ks_rt_is_op(n, KS_AK_UNARY, "*"))
          return sz_fail(s, "it reads through '*' ('%s')", text(s, n));
        if (ks_rt_is_assignment(n)) {
          const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
          if (lhs && lhs->kind == KS_AK_SUBSCRIPT)
            break;
          if (!lhs || lhs->kind != KS_AK_DECL_REF || !lhs->decl || lhs->decl->kind != KS_AK_VAR ||
              !declared_in(lhs->decl, s->work, s->nwork))
            return sz_fail(s, "its work per %s assigns '%s', which it does not declare there",
                           s->ax->plane, text(s, n->kids[0]));
        }
        break;
      }
    }
  }
  if (!s->writes.len)
    return sz_fail(s, "it writes no buffer per %s", s->ax->plane);
  return true;
}

/* The sub-expression p[E] of a read (through __ldg). */
static const ks_anode *read_subscript(const ks_anode *r) {
  if (r->kind == KS_AK_SUBSCRIPT)
    return r;
  const ks_anode *arg = ks_rt_strip(r->kids[0], false);
  return ks_rt_strip(arg->kids[0], false);
}

static bool poly_same(sz *s, const poly *a, const poly *b) {
  poly diff = {0};
  for (size_t t = 0; t < a->len; t++)
    if (!poly_add(s, &diff, &a->items[t], 1))
      return false;
  for (size_t t = 0; t < b->len; t++)
    if (!poly_add(s, &diff, &b->items[t], -1))
      return false;
  poly_clean(&diff);
  return !diff.len;
}

static bool written(sz *s, const ks_anode *p) {
  for (size_t w = 0; w < s->writes.len; w++)
    if (param_base(s->writes.items[w]) == p)
      return true;
  return false;
}

/* A written buffer may be read at its own element alone (out[C] = out[C]
 * - ...: the thread's own value, read before its store as the original
 * reads it); a read anywhere else could see another step's store. */
static bool reads_own_only(sz *s, const ks_anode *p, const ks_anode *w, unsigned nw) {
  unsigned own = 0;
  poly c = {0};
  const ks_anode *bad = NULL;
  bool known = false;
  for (size_t r = 0; r < s->reads.len; r++) {
    const ks_anode *sub = read_subscript(s->reads.items[r]);
    if (param_base(sub) != p)
      continue;
    if (!known && !expand(s, w->kids[1], 0, &c, &bad))
      return false;
    known = true;
    poly e = {0};
    if (!expand(s, sub->kids[1], 0, &e, &bad) || !poly_same(s, &e, &c))
      return false;
    own++;
  }
  return ks_rt_count_refs(s->arena, s->k->body, p) == nw + own;
}

/* Splits diff = E - C into d steps along the walk (d times zc, C's
 * coefficient of the streamed index) and an offset across it that does not
 * depend on the streamed index (a neighbouring column: x - 1); false when
 * it is not such a sum. With sizes that fold to constants (zc = 4096 from
 * a macro) the constant part is split at the nearest multiple of zc. */
static bool split_offset(sz *s, const poly *diff, const poly *zc, long long *d, poly *lat) {
  poly along = {0};
  lat->len = 0;
  for (size_t i = 0; i < diff->len; i++) {
    const mono *m = &diff->items[i];
    bool in_zc = false;
    for (size_t j = 0; j < zc->len; j++)
      in_zc |= mono_same_atoms(&zc->items[j], m);
    for (int a = 0; a < m->n && !in_zc; a++)
      if (m->atoms[a] == s->svar)
        return false;
    *ks_array_push(s->arena, in_zc ? &along : lat) = *m;
  }
  if (zc->len == 1 && zc->items[0].n == 0 && along.len == 1) {
    long long z = zc->items[0].coef, c = along.items[0].coef, q = c / z, r = c % z;
    if (r && (r > 0 ? r : -r) * 2 > (z > 0 ? z : -z)) {
      q += (r < 0) == (z < 0) ? 1 : -1;
      r = c - q * z;
    }
    *d = q;
    if (r)
      *ks_array_push(s->arena, lat) = (mono){.coef = r};
    return true;
  }
  return poly_ratio(&along, zc, d);
}

static bool read_accesses(sz *s) {
  /* the written buffers: read at their own element alone, all at one index C */
  for (size_t i = 0; i < s->writes.len; i++) {
    const ks_anode *w = s->writes.items[i], *p = param_base(w);
    unsigned nw = 0;
    for (size_t j = 0; j < s->writes.len; j++)
      nw += param_base(s->writes.items[j]) == p;
    if (!reads_own_only(s, p, w, nw))
      return sz_fail(s, "it reads '%s', which it writes", p->name);
    poly c = {0};
    const ks_anode *bad = NULL;
    if (!expand(s, w->kids[1], 0, &c, &bad))
      return sz_fail(s, "its output index '%s' is not a sum of products of its indexes, "
                        "parameters and constants ('%s')",
                     text(s, w->kids[1]), bad ? text(s, bad) : "?");
    if (!i) {
      s->c = c;
    } else {
      long long d;
      poly diff = {0};
      for (size_t t = 0; t < s->c.len; t++)
        poly_add(s, &diff, &s->c.items[t], 1);
      for (size_t t = 0; t < c.len; t++)
        poly_add(s, &diff, &c.items[t], -1);
      poly_clean(&diff);
      poly none = {0};
      if (!poly_ratio(&diff, &none, &d))
        return sz_fail(s, "it writes at two indexes ('%s' and '%s')",
                       text(s, s->writes.items[0]), text(s, w));
    }
  }
  /* C's coefficient of z */
  poly zc = {0};
  for (size_t i = 0; i < s->c.len; i++) {
    const mono *m = &s->c.items[i];
    int nz = 0;
    for (int a = 0; a < m->n; a++)
      nz += m->atoms[a] == s->svar;
    if (nz > 1)
      return sz_fail(s, "its output index '%s' is not linear in '%s'",
                     text(s, s->writes.items[0]->kids[1]), s->svar->name);
    if (!nz)
      continue;
    mono r = {.coef = m->coef};
    for (int a = 0; a < m->n; a++)
      if (m->atoms[a] != s->svar) {
        if (is_index_var(s, m->atoms[a]))
          return sz_fail(s, "its output index '%s' multiplies '%s' by another index",
                         text(s, s->writes.items[0]->kids[1]), s->svar->name);
        r.atoms[r.n++] = m->atoms[a];
      }
    *ks_array_push(s->arena, &zc) = r;
  }
  if (!zc.len)
    return sz_fail(s, "its output index '%s' does not depend on '%s'",
                   text(s, s->writes.items[0]->kids[1]), s->svar->name);
  /* the reads of the column and of the columns beside it */
  for (size_t i = 0; i < s->reads.len; i++) {
    const ks_anode *r = s->reads.items[i], *sub = read_subscript(r), *p = param_base(sub);
    poly e = {0};
    const ks_anode *bad = NULL;
    if (written(s, p) || !expand(s, sub->kids[1], 0, &e, &bad))
      continue; /* not a column read: it stays a load */
    poly diff = {0}, lat = {0};
    for (size_t t = 0; t < e.len; t++)
      poly_add(s, &diff, &e.items[t], 1);
    for (size_t t = 0; t < s->c.len; t++)
      poly_add(s, &diff, &s->c.items[t], -1);
    poly_clean(&diff);
    long long d;
    if (!split_offset(s, &diff, &zc, &d, &lat) || d < -SZ_MAXD || d > SZ_MAXD)
      continue;
    if (r->from_macro)
      return sz_fail(s, "its read '%s' comes from a macro", text(s, r));
    size_t b = 0;
    int lat_no = 0;
    for (; b < s->bufs.len; b++) {
      const sbuf *o = &s->bufs.items[b];
      if (o->param == p && poly_same(s, &o->lat, &lat))
        break;
      lat_no += o->param == p && o->lat.len;
    }
    if (b == s->bufs.len) {
      sbuf *nb = ks_array_push(s->arena, &s->bufs);
      memset(nb, 0, sizeof *nb);
      nb->param = p;
      nb->lat = lat;
      nb->lat_no = lat.len ? lat_no + 1 : 0;
      nb->dmin = SZ_MAXD;
      nb->dmax = -SZ_MAXD;
    }
    sbuf *sb = &s->bufs.items[b];
    sb->offsets |= 1u << (d + SZ_MAXD);
    if (!sb->rep[d + SZ_MAXD])
      sb->rep[d + SZ_MAXD] = r;
    sb->dmin = (int)d < sb->dmin ? (int)d : sb->dmin;
    sb->dmax = (int)d > sb->dmax ? (int)d : sb->dmax;
    *ks_array_push(s->arena, &s->sites) = (site){r, b, (int)d};
  }
  bool any = false;
  const sbuf *own = NULL; /* the first buffer read at the own column, for the refusal */
  for (size_t b = 0; b < s->bufs.len; b++) {
    sbuf *sb = &s->bufs.items[b];
    unsigned want = 0;
    for (int d = sb->dmin; d <= sb->dmax; d++)
      want |= 1u << (d + SZ_MAXD);
    sb->streamed = sb->dmax > sb->dmin && want == sb->offsets;
    if (sb->streamed && (!sb->param->pointee || strstr(sb->param->pointee, "volatile")))
      sb->streamed = false;
    any |= sb->streamed;
    if (!own && !sb->lat.len)
      own = sb;
  }
  if (!any) {
    const sz_axis *ax = s->ax;
    if (own && own->dmax == own->dmin)
      return sz_fail(s, "it reads no buffer at its own %s on two neighbouring %s "
                        "('%s' only at %s%+d): nothing to keep in registers",
                     ax->own, ax->planes, own->param->name, s->svar->name, own->dmin);
    if (own)
      return sz_fail(s, "it reads '%s' at its own %s on %s that are not consecutive "
                        "(a window with a gap)",
                     own->param->name, ax->own, ax->steps);
    return sz_fail(s, "it reads no buffer at its own %s on another %s: nothing to "
                      "keep in registers", ax->own, ax->plane);
  }
  return true;
}

/* ---- matching the two shapes ---------------------------------------------- */

/* The top-level declarations: the indexes and what else the kernel
 * computes before its check. */
/* `v = E;` at the top, v a local declared above without being an index
 * (PolyBench's `c11 = +0.2;` after `DATA_TYPE c11, ...;`). */
static bool top_assignment(const ks_anode *const *kids, size_t i) {
  const ks_anode *st = kids[i];
  if (!ks_rt_is_bin(st, "="))
    return false;
  const ks_anode *lhs = ks_rt_strip(st->kids[0], false);
  if (!lhs || lhs->kind != KS_AK_DECL_REF || !lhs->decl || lhs->decl->kind != KS_AK_VAR)
    return false;
  return declared_in(lhs->decl, kids, i);
}

static size_t read_top(sz *s) {
  const ks_anode *body = s->k->body;
  const ks_anode *const *kids = (const ks_anode *const *)body->kids;
  size_t i = 0;
  for (; i < body->nkids && (kids[i]->kind == KS_AK_DECL_STMT || top_assignment(kids, i)); i++) {
    const ks_anode *st = body->kids[i];
    if (st->kind != KS_AK_DECL_STMT)
      continue;
    for (size_t v = 0; v < st->nkids; v++) {
      const ks_anode *var = st->kids[v], *init = ks_rt_var_init(var);
      if (var->kind != KS_AK_VAR || !init)
        continue;
      char dims[] = "xyz";
      for (int d = 0; d < 3; d++)
        if (!s->idx[d] && ks_rt_global_index(init, dims[d], NULL)) {
          s->idx[d] = var;
          if (d == s->ax->dim)
            s->sdecl = st;
        }
    }
  }
  return i;
}

static bool depends_on(sz *s, const ks_anode *st, const ks_anode *var) {
  if (refs_var(s, st, var))
    return true;
  for (size_t m = 0; m < s->moved.len; m++)
    for (size_t v = 0; v < s->moved.items[m]->nkids; v++)
      if (refs_var(s, st, s->moved.items[m]->kids[v]))
        return true;
  return false;
}

static bool match(sz *s) {
  const ks_anode *body = s->k->body;
  const sz_axis *ax = s->ax;
  size_t first = read_top(s);
  s->svar = s->idx[ax->dim];
  if (!s->idx[0])
    return sz_fail(s, "it computes no index 'blockIdx.x * blockDim.x + threadIdx.x' at the top "
                      "of its body");
  unsigned allowed[6];
  size_t na = 0;
  const ks_anode *const *vars = s->idx;
  for (int d = 0; d < 3; d++)
    if (vars[d]) {
      const ks_anode *init = ks_rt_var_init(vars[d]);
      if (vars[d]->from_macro || init->from_macro)
        return sz_fail(s, "its index '%s' comes from a macro", vars[d]->name);
      if (ks_rt_modified(body, vars[d]))
        return sz_fail(s, "it changes its index '%s'", vars[d]->name);
      allowed[na * 2] = init->begin;
      allowed[na * 2 + 1] = init->end;
      na++;
    }
  const char *problem = ks_rt_mapping_problem(s->arena, s->in, allowed, na);
  if (problem)
    return sz_fail(s, "it %s", problem);
  s->loop_form = !s->svar;
  if (ax->dim == 2 && s->loop_form && !s->idx[1])
    return sz_fail(s, "it is not a 3-D kernel: no z index 'blockIdx.z * blockDim.z + "
                      "threadIdx.z', and no y index for a 2-D grid with a loop over z");
  if (ax->dim == 1 && s->idx[2])
    return sz_fail(s, "it is a 3-D kernel (its z index '%s'): stream_z walks it along z",
                   s->idx[2]->name);
  if (s->sdecl && s->sdecl->nkids != 1)
    return sz_fail(s, "it declares '%s' with other variables", s->svar->name);
  for (size_t i = 0; i < first; i++) {
    const ks_anode *st = body->kids[i];
    if (st == s->sdecl)
      continue;
    if (st->kind != KS_AK_DECL_STMT) { /* a top_assignment */
      const ks_anode *var = ks_rt_strip(st->kids[0], false)->decl;
      if (!listed(&s->top, var->parent))
        return sz_fail(s, "it assigns '%s' before its bounds check, declared with a value that "
                          "depends on %c", var->name, ax->name);
      if (!check_pure(s, st->kids[1], true, "before its bounds check"))
        return false;
      if (s->svar && depends_on(s, st->kids[1], s->svar))
        return sz_fail(s, "it assigns '%s' from %c before its bounds check", var->name, ax->name);
      *ks_array_push(s->arena, &s->top) = st;
      continue;
    }
    for (size_t v = 0; v < st->nkids; v++) {
      const ks_anode *init = ks_rt_var_init(st->kids[v]);
      if (st->kids[v]->kind == KS_AK_VAR && st->kids[v]->shared_space)
        return sz_fail(s, "it declares the shared '%s'", st->kids[v]->name);
      if (!check_pure(s, init, true, "before its bounds check"))
        return false;
    }
    if (s->svar && depends_on(s, st, s->svar)) {
      for (size_t v = 0; v < st->nkids; v++)
        if (!check_pure(s, ks_rt_var_init(st->kids[v]), false,
                        ks_arena_printf(s->arena, "in a declaration that depends on %c before "
                                                  "its bounds check", ax->name)))
          return false;
      *ks_array_push(s->arena, &s->moved) = st;
    } else {
      *ks_array_push(s->arena, &s->top) = st;
    }
  }
  if (first >= body->nkids)
    return sz_fail(s, "it has nothing after its declarations");
  const ks_anode *const *rest = (const ks_anode *const *)body->kids + first;
  size_t nrest = body->nkids - first;
  const ks_anode *g = rest[0];
  const ks_anode *const *region = rest;
  size_t nregion = nrest;
  if (g->kind == KS_AK_IF) {
    if (g->nkids > 2 && g->kids[2])
      return sz_fail(s, "its bounds check has an else branch");
    const ks_anode *then = g->kids[1];
    bool early = then && (then->kind == KS_AK_RETURN ||
                          (then->kind == KS_AK_COMPOUND && then->nkids == 1 &&
                           then->kids[0]->kind == KS_AK_RETURN));
    if (early) {
      region = rest + 1;
      nregion = nrest - 1;
    } else if (nrest != 1) {
      return sz_fail(s, "it has statements after its bounds-checked block");
    } else if (then->kind == KS_AK_COMPOUND) {
      region = (const ks_anode *const *)then->kids;
      nregion = then->nkids;
    } else {
      region = (const ks_anode *const *)g->kids + 1;
      nregion = 1;
    }
    if (s->loop_form) {
      /* the check may not read the loop's counter: find it first */
      for (size_t i = 0; i < nregion; i++)
        if (region[i]->kind == KS_AK_FOR && region[i]->kids[0]) {
          ks_loop_view v;
          if (ks_meaning_loop(s->meaning, region[i], &v))
            s->svar = v.var;
        }
    }
    if (!read_check(s, g->kids[0], !early))
      return false;
  } else if (!s->loop_form) {
    return sz_fail(s, "its first statement after the declarations is no bounds check on '%s'",
                   s->svar->name);
  }
  if (!s->loop_form) {
    if (!s->hi.len)
      return sz_fail(s, "its bounds check does not bound '%s' from above", s->svar->name);
    s->work = region;
    s->nwork = nregion;
    return read_work(s) && read_accesses(s);
  }
  /* the loop form: declarations, then the loop over z, as the region's end */
  size_t i = 0;
  for (; i < nregion && region[i]->kind == KS_AK_DECL_STMT; i++) {
    for (size_t v = 0; v < region[i]->nkids; v++)
      if (!check_pure(s, ks_rt_var_init(region[i]->kids[v]), true, "before its loop"))
        return false;
    *ks_array_push(s->arena, &s->pre) = region[i];
  }
  if (i >= nregion || region[i]->kind != KS_AK_FOR)
    return sz_fail(s, "it has no %c index 'blockIdx.%c * blockDim.%c + threadIdx.%c' and no loop "
                      "(over %c) after its %s bounds check",
                   ax->name, ax->name, ax->name, ax->name, ax->name, ax->across);
  if (i + 1 != nregion)
    return sz_fail(s, "it has statements after its loop (a loop over %c must end the kernel)",
                   ax->name);
  const ks_anode *f = region[i];
  ks_loop_view *v = &s->view;
  if (f->from_macro)
    return sz_fail(s, "its loop comes from a macro");
  if (!ks_meaning_loop(s->meaning, f, v))
    return sz_fail(s, "its loop is not a counted loop 'for (k = a; k < b; k++)': %s", v->why);
  if (v->step != 1)
    return sz_fail(s, "its loop's step is not 1");
  if (v->modified_in_body)
    return sz_fail(s, "its loop assigns its counter in its body");
  if (v->used_after)
    return sz_fail(s, "'%s' is read after its loop", v->var->name);
  s->svar = v->var;
  const char *why = NULL;
  const char *sfold = ks_meaning_value(s->meaning, v->start, &why);
  const char *efold = sfold ? ks_meaning_loop_end(s->meaning, v, &why) : NULL;
  if (!sfold || !efold)
    return sz_fail(s, "its loop's bounds do not fold to parameters and constants (%s)",
                   why ? why : "?");
  if (!integer_type(v->var->type))
    return sz_fail(s, "its loop's counter is a %s", v->var->type ? v->var->type : "?");
  const char *bound = text(s, v->bound);
  bound = v->bound->from_macro ? ks_arena_printf(s->arena, "(%s)", bound) : ks_rt_paren(s->arena, bound);
  if (v->end_add)
    bound = ks_arena_printf(s->arena, "%s + %lld", bound, v->end_add);
  *ks_array_push(s->arena, &s->hi) = (zbound){bound, efold, 0};
  const char *start = ks_rt_paren(s->arena, text(s, v->start));
  if (v->start->from_macro)
    start = ks_arena_printf(s->arena, "(%s)", text(s, v->start));
  *ks_array_push(s->arena, &s->lo) = (zbound){start, sfold, 0};
  const ks_anode *lb = f->kids[3];
  if (!lb)
    return sz_fail(s, "its loop has no body");
  if (lb->kind == KS_AK_COMPOUND) {
    s->work = (const ks_anode *const *)lb->kids;
    s->nwork = lb->nkids;
  } else {
    s->work = (const ks_anode *const *)f->kids + 3;
    s->nwork = 1;
  }
  return read_work(s) && read_accesses(s);
}

/* ---- the new body ----------------------------------------------------------- */

typedef struct emit {
  sz *s;
  ks_buf b;
  const char *step;   /* one level of indentation */
} emit;

static const char *replace_site(const ks_anode *n, void *arg) {
  sz *s = arg;
  for (size_t i = 0; i < s->sites.len; i++)
    if (s->sites.items[i].node == n && s->bufs.items[s->sites.items[i].buf].streamed)
      return s->bufs.items[s->sites.items[i].buf].reg[s->sites.items[i].d + SZ_MAXD];
  return NULL;
}

static const char *indent(emit *e, int depth) {
  ks_buf b = KS_BUF_INIT;
  for (int i = 0; i < depth; i++)
    ks_buf_adds(&b, e->step);
  const char *r = ks_arena_strdup(e->s->arena, b.len ? b.data : "");
  ks_buf_release(&b);
  return r;
}

/* A statement as written (its ';' too), the sites replaced, re-indented
 * at `depth`. */
static void emit_stmt(emit *e, const ks_anode *st, int depth, bool replace) {
  sz *s = e->s;
  ks_buf b = KS_BUF_INIT;
  ks_rt_render(&b, s->in->unit, st, replace ? replace_site : NULL, s);
  unsigned end = ks_rt_stmt_end(s->in->unit, st);
  if (end > st->end)
    ks_buf_add(&b, s->in->unit + st->end, end - st->end);
  const char *was = ks_rt_line_indent(s->arena, s->in->unit, st->begin);
  const char *now = indent(e, depth);
  const char *t = b.data ? b.data : "";
  size_t n = strlen(was);
  if (strlen(now) >= n && !strncmp(now, was, n))
    t = ks_rt_indent_more(s->arena, t, now + n);
  ks_buf_addf(&e->b, "%s%s\n", now, t);
  ks_buf_release(&b);
}

/* The declarations a read's index needs that are computed per plane, in
 * the order of the source. */
static bool needed_decls(sz *s, const ks_anode *n, ks_rt_nodes *out) {
  ks_rt_nodes all = ks_rt_collect(s->arena, n);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *r = all.items[i];
    if (r->kind != KS_AK_DECL_REF || !r->decl || r->decl->kind != KS_AK_VAR || is_index_var(s, r->decl))
      continue;
    const ks_anode *st = r->decl->parent;
    if (listed(&s->top, st) || listed(&s->pre, st) || listed(out, st))
      continue;
    if (!declared_in(r->decl, s->work, s->nwork) && !listed(&s->moved, st))
      return sz_fail(s, "the index of '%s' reads '%s', which the rule cannot recompute",
                     text(s, n), r->decl->name);
    for (size_t v = 0; v < st->nkids; v++) {
      const ks_anode *init = ks_rt_var_init(st->kids[v]);
      bool impure = false;
      if (init)
        ks_anode_walk((ks_anode *)init, ks_shape_visit_impure, &impure);
      if (impure)
        return sz_fail(s, "the index of '%s' needs '%s', declared with a memory read",
                       text(s, n), r->decl->name);
    }
    *ks_array_push(s->arena, out) = st;
    if (!needed_decls(s, st, out))
      return false;
  }
  return true;
}

static int cmp_begin(const void *a, const void *b) {
  unsigned x = (*(const ks_anode *const *)a)->begin, y = (*(const ks_anode *const *)b)->begin;
  return x < y ? -1 : x > y;
}

/* A block that computes plane reads at z = `zat`: the per-plane
 * declarations they need, then reg = read. */
static bool emit_loads(emit *e, int depth, const char *zat, bool first) {
  sz *s = e->s;
  ks_rt_nodes decls = {0};
  for (size_t b = 0; b < s->bufs.len; b++) {
    sbuf *sb = &s->bufs.items[b];
    if (!sb->streamed)
      continue;
    for (int d = first ? sb->dmin : sb->dmax; d <= (first ? sb->dmax - 1 : sb->dmax); d++)
      if (!needed_decls(s, sb->rep[d + SZ_MAXD], &decls))
        return false;
  }
  if (decls.len > 1)
    qsort(decls.items, decls.len, sizeof *decls.items, cmp_begin);
  /* a block of its own only where it declares something */
  bool block = zat || decls.len;
  const char *ind = indent(e, depth);
  if (block)
    ks_buf_addf(&e->b, "%s{\n", ind);
  else
    ind = indent(e, depth - 1);
  if (zat) {
    const char *zt = s->svar->type;
    if (ks_rt_has_prefix(zt, "const "))
      zt += 6;
    ks_buf_addf(&e->b, "%s%s%s %s = %s;\n", ind, e->step, zt, s->svar->name, zat);
  }
  for (size_t i = 0; i < decls.len; i++)
    emit_stmt(e, decls.items[i], depth + 1, false);
  for (size_t b = 0; b < s->bufs.len; b++) {
    sbuf *sb = &s->bufs.items[b];
    if (!sb->streamed)
      continue;
    for (int d = first ? sb->dmin : sb->dmax; d <= (first ? sb->dmax - 1 : sb->dmax); d++)
      ks_buf_addf(&e->b, "%s%s%s = %s;\n", ind, e->step, sb->reg[d + SZ_MAXD],
                  text(s, sb->rep[d + SZ_MAXD]));
  }
  if (block)
    ks_buf_addf(&e->b, "%s}\n", ind);
  return true;
}

static const char *signed_name(sz *s, long long v) {
  return ks_arena_printf(s->arena, "%s%lld", v < 0 ? "m" : v > 0 ? "p" : "", v < 0 ? -v : v);
}

/* ks_in_m1: `in` one step back on the own column; ks_A_m1_p1: the column
 * one to the right; ks_A_0_l1: the first column across whose offset is
 * not a constant. */
static const char *reg_name(sz *s, const sbuf *sb, int d) {
  const char *base = ks_arena_printf(s->arena, "ks_%s_%s", sb->param->name, signed_name(s, d));
  if (sb->lat.len == 1 && !sb->lat.items[0].n)
    base = ks_arena_printf(s->arena, "%s_%s", base, signed_name(s, sb->lat.items[0].coef));
  else if (sb->lat.len)
    base = ks_arena_printf(s->arena, "%s_l%d", base, sb->lat_no);
  return ks_rt_fresh(s->arena, s->in->parent->source, base);
}

static bool emit_body(sz *s, int z, const char **body) {
  emit e = {.s = s, .b = KS_BUF_INIT, .step = ks_rt_indent_step(s->arena, s->in)};
  const char *src = s->in->parent->source;
  const char *kz = ks_rt_fresh(s->arena, src, ks_arena_printf(s->arena, "ks_%c", s->ax->name));
  const char *kend = ks_rt_fresh(s->arena, src, ks_arena_printf(s->arena, "ks_%cend", s->ax->name));
  const char *zt = s->svar->type ? s->svar->type : "int";
  if (ks_rt_has_prefix(zt, "const "))
    zt += 6;
  for (size_t b = 0; b < s->bufs.len; b++)
    if (s->bufs.items[b].streamed)
      for (int d = s->bufs.items[b].dmin; d <= s->bufs.items[b].dmax; d++)
        s->bufs.items[b].reg[d + SZ_MAXD] = reg_name(s, &s->bufs.items[b], d);
  ks_buf_adds(&e.b, "{\n");
  for (size_t i = 0; i < s->top.len; i++)
    emit_stmt(&e, s->top.items[i], 1, false);
  const char *ind = e.step;
  ks_buf_addf(&e.b, "%s// %s: each thread walks %s %s, its own column in registers\n", ind,
              s->ax->rule, z ? ks_arena_printf(s->arena, "a run of %d", z) : "all the", s->ax->planes);
  if (!s->loop_form) {
    const char *zinit = ks_rt_text_of(s->arena, s->in, ks_rt_var_init(s->svar));
    if (z) {
      ks_buf_addf(&e.b, "%s%s %s = (%s) * %d;\n", ind, zt, kz, zinit, z);
      ks_buf_addf(&e.b, "%s%s %s = %s + %d;\n", ind, zt, kend, kz, z);
    } else {
      ks_buf_addf(&e.b, "%s%s %s = 0;\n", ind, zt, kz);
      ks_buf_addf(&e.b, "%s%s %s = %s%s;\n", ind, zt, kend, s->hi.items[0].text,
                  s->hi.items[0].add ? " + 1" : "");
    }
    for (size_t i = 0; i < s->lo.len; i++)
      ks_buf_addf(&e.b, "%sif (%s < %s%s)\n%s%s%s = %s%s;\n", ind, kz, s->lo.items[i].text,
                  s->lo.items[i].add ? " + 1" : "", ind, e.step, kz, s->lo.items[i].text,
                  s->lo.items[i].add ? " + 1" : "");
  } else {
    if (z) {
      ks_buf_addf(&e.b, "%s%s %s = %s + (%s)blockIdx.%c * %d;\n", ind, zt, kz, s->lo.items[0].text,
                  zt, s->ax->name, z);
      ks_buf_addf(&e.b, "%s%s %s = %s + %d;\n", ind, zt, kend, kz, z);
    } else {
      ks_buf_addf(&e.b, "%s%s %s = %s;\n", ind, zt, kz, s->lo.items[0].text);
      ks_buf_addf(&e.b, "%s%s %s = %s;\n", ind, zt, kend, s->hi.items[0].text);
    }
  }
  for (size_t i = 0; i < s->hi.len; i++)
    if (z || i > 0) /* with all, hi[0] is already the end */
      ks_buf_addf(&e.b, "%sif (%s > %s%s)\n%s%s%s = %s%s;\n", ind, kend, s->hi.items[i].text,
                  s->hi.items[i].add ? " + 1" : "", ind, e.step, kend, s->hi.items[i].text,
                  s->hi.items[i].add ? " + 1" : "");
  ks_buf adds = KS_BUF_INIT;
  ks_buf_adds(&adds, kz);
  ks_buf_addf(&adds, " < %s", kend);
  for (size_t i = 0; i < s->xy.len; i++)
    ks_buf_addf(&adds, " && %s", s->xy.items[i]);
  ks_buf_addf(&e.b, "%sif (%s) {\n", ind, adds.data);
  ks_buf_release(&adds);
  for (size_t i = 0; i < s->pre.len; i++)
    emit_stmt(&e, s->pre.items[i], 2, false);
  for (size_t b = 0; b < s->bufs.len; b++) {
    sbuf *sb = &s->bufs.items[b];
    if (!sb->streamed)
      continue;
    const char *t = sb->param->pointee;
    if (ks_rt_has_prefix(t, "const "))
      t += 6;
    ks_buf_addf(&e.b, "%s%s%s", ind, e.step, t);
    for (int d = sb->dmin; d <= sb->dmax; d++)
      ks_buf_addf(&e.b, "%s %s", d == sb->dmin ? "" : ",", sb->reg[d + SZ_MAXD]);
    ks_buf_adds(&e.b, ";\n");
  }
  bool ok = emit_loads(&e, 2, kz, true);
  const char *zn = s->svar->name;
  const char *decl = s->loop_form && s->view.declared_outside ? "" : ks_arena_printf(s->arena, "%s ", zt);
  ks_buf_addf(&e.b, "%s%sfor (%s%s = %s; %s < %s; %s++) {\n", ind, e.step, decl, zn, kz, zn, kend, zn);
  for (size_t i = 0; i < s->moved.len; i++)
    emit_stmt(&e, s->moved.items[i], 3, false);
  ok = ok && emit_loads(&e, 3, NULL, false);
  for (size_t i = 0; i < s->nwork; i++)
    emit_stmt(&e, s->work[i], 3, true);
  for (size_t b = 0; b < s->bufs.len; b++) {
    sbuf *sb = &s->bufs.items[b];
    if (!sb->streamed)
      continue;
    for (int d = sb->dmin; d < sb->dmax; d++)
      ks_buf_addf(&e.b, "%s%s%s%s = %s;\n", ind, e.step, e.step, sb->reg[d + SZ_MAXD],
                  sb->reg[d + 1 + SZ_MAXD]);
  }
  ks_buf_addf(&e.b, "%s%s}\n%s}\n}", ind, e.step, ind);
  *body = ks_arena_strdup(s->arena, e.b.data);
  ks_buf_release(&e.b);
  return ok;
}

/* A 2-D kernel's blocks are seldom one thread tall, which one run of all
 * the rows would need: stream_y has no 0. */
static const int stream_choices[] = {8, 4, 16, 32, 0};
#define STREAM_Y_NCHOICES 4

static int apply_stream(const sz_axis *ax, ks_ctx *ctx, const ks_rule_input *in, int param,
                        ks_arena *arena, ks_rule_result *out) {
  bool all = ax->dim == 2;
  if ((param != 0 || !all) && param != 4 && param != 8 && param != 16 && param != 32)
    return ks_rt_not_applicable(arena, out,
                                "its parameter is the run of %s per thread, 4, 8, 16%s, not %d",
                                ax->planes, all ? ", 32 or 0 (all)" : " or 32", param);
  sz s = {.ax = ax, .arena = arena, .in = in, .k = in->ast};
  s.meaning = ks_meaning_open(ctx, in->ast, arena);
  bool matched = match(&s);
  const char *body = NULL;
  if (matched)
    matched = emit_body(&s, param, &body);
  ks_meaning_close(s.meaning);
  if (!matched)
    return ks_rt_not_applicable(arena, out, "%s", s.why);
  if (s.k->body->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its code is outside the variant");

  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return ks_rt_not_applicable(arena, out, "its launch policy: %s", ctx->error);
  const int dim = ax->dim;
  const char *gz = ks_rt_paren(arena, p.grid[dim]), *bz = ks_rt_paren(arena, p.block[dim]);
  ks_strings guards = {0};
  if (s.loop_form) {
    /* one thread per column: the launch has no extent of its own along the walk */
    long long g = 0, b = 0;
    bool ge = !ks_rule_eval(ctx, in, p.grid[dim], &g), be = !ks_rule_eval(ctx, in, p.block[dim], &b);
    if (ge && be && g * b != 1)
      return ks_rt_not_applicable(arena, out, "its launch already has a %c dimension (%lld)",
                                  ax->name, g * b);
    if (!ge || !be)
      *ks_array_push(arena, &guards) = ks_arena_printf(arena, "%s * %s == 1", gz, bz);
    if (param) {
      const char *count = ks_arena_printf(arena, "ceil_div(%s - %s, %d)",
                                          ks_rt_paren(arena, s.hi.items[0].fold),
                                          ks_rt_paren(arena, s.lo.items[0].fold), param);
      p.grid[dim] = ks_arena_printf(arena, "max(%s, 1)", count);
      *ks_array_push(arena, &guards) = ks_arena_printf(arena, "%s <= 65535", count);
    }
  } else {
    /* every plane the bounds check admits had a thread: the runs cover
     * them, and no plane the original left out is computed */
    for (size_t i = 0; i < s.hi.len; i++)
      *ks_array_push(arena, &guards) =
          ks_arena_printf(arena, "%s * %s >= %s%s", gz, bz, ks_rt_paren(arena, s.hi.items[i].fold),
                          s.hi.items[i].add ? " + 1" : "");
    if (param) {
      p.grid[dim] = ks_arena_printf(arena, "ceil_div(%s, %d)", gz, param);
    } else {
      long long b = 0;
      if (!ks_rule_eval(ctx, in, p.block[dim], &b) && b != 1)
        return ks_rt_not_applicable(arena, out, "its block has %lld threads along %c; one run of "
                                                "all %s needs 1", b, ax->name, ax->steps);
      if (ks_rule_eval(ctx, in, p.block[dim], &b))
        *ks_array_push(arena, &guards) = ks_arena_printf(arena, "%s == 1", bz);
      p.grid[dim] = "1";
    }
  }
  /* the registers hold values read before the stores of earlier planes */
  for (size_t w = 0; w < s.writes.len; w++) {
    const ks_anode *wp = param_base(s.writes.items[w]);
    for (size_t b = 0; b < s.bufs.len; b++) {
      const ks_anode *rp = s.bufs.items[b].param;
      if (!s.bufs.items[b].streamed || wp->is_restrict || rp->is_restrict)
        continue;
      const char *g = ks_arena_printf(arena, "disjoint(%s, %s)", wp->name, rp->name);
      bool have = false;
      for (size_t k = 0; k < guards.len; k++)
        have |= !strcmp(guards.items[k], g);
      if (!have)
        *ks_array_push(arena, &guards) = g;
    }
  }
  ks_edits e = {0};
  ks_edits_add(arena, &e, ks_rt_src_at(in, s.k->body->begin), ks_rt_src_at(in, s.k->body->end),
               body);
  const char *tag = param ? ks_arena_printf(arena, "%s=%d", ax->rule, param)
                          : ks_arena_printf(arena, "%s=all", ax->rule);
  if (ks_rt_finish(ctx, in, arena, &e, tag, out))
    return -1;
  ks_rule_policy_write(arena, &p, &out->child);
  for (size_t i = 0; i < guards.len; i++)
    ks_rule_require(arena, &out->child, guards.items[i]);
  return 0;
}

static int apply_stream_z(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                          ks_rule_result *out) {
  return apply_stream(&axis_z, ctx, in, param, arena, out);
}

static int apply_stream_y(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                          ks_rule_result *out) {
  return apply_stream(&axis_y, ctx, in, param, arena, out);
}

const ks_rule ks_rule_stream_z = {
    "stream_z",
    "3-D stencils: each thread walks a run of Z planes along z with its own column's z-1/z/z+1 "
    "values in registers, each read once (param: Z, 0 = all)",
    false,
    stream_choices,
    sizeof stream_choices / sizeof *stream_choices,
    apply_stream_z};

const ks_rule ks_rule_stream_y = {
    "stream_y",
    "2-D stencils: each thread walks a run of R rows along y with its column's y-1/y/y+1 values "
    "in registers, each read once (param: R)",
    false,
    stream_choices,
    STREAM_Y_NCHOICES,
    apply_stream_y};
