/* rules_vec2d_index: the straight-line work of `vectorize_2d` read as
 * accesses (rules_vec2d.h).
 *
 * An index E is expanded through +, -, unary minus, casts, parentheses and
 * the initializers of unmodified local declarations that only compute
 * values, into a sum of terms: x once with coefficient 1, integer literals
 * (their sum is k) and terms free of x. Each term free of x must be a
 * scalar parameter P or a product with P (or a literal multiple of 4) as a
 * factor, and may read only parameters and values computed once per
 * thread: then B = E - k at lane 0 is a multiple of 4 wherever the guards
 * `P % 4 == 0` hold, and it can be computed before the lanes run. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_tree.h"
#include "rules_vec2d.h"

void ks_v2_refuse(ks_v2 *s, const char *fmt, ...) {
  if (s->why)
    return;
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

bool ks_v2_listed(const ks_node_list *l, const ks_anode *n) {
  for (size_t k = 0; k < l->len; k++)
    if (l->items[k] == n)
      return true;
  return false;
}

static const char *text(ks_v2 *s, const ks_anode *n) {
  return ks_rt_text_of(s->arena, s->in, n);
}

/* Element types with a CUDA vector type of 4 lanes of 4 bytes. */
static const struct {
  const char *c, *vec;
} elem_types[] = {
    {"float", "float4"}, {"int", "int4"}, {"unsigned int", "uint4"}, {"unsigned", "uint4"}};

static bool integer_type(const char *t) {
  return t && !strstr(t, "float") && !strstr(t, "double") && !strstr(t, "half") &&
         !strstr(t, "bfloat") && !strstr(t, "bool") && !strchr(t, '*') && !strchr(t, '&') &&
         !strchr(t, '[');
}

/* ---- the expansion of an index ------------------------------------------ */

typedef struct term {
  const ks_anode *node;  /* as written (parentheses stripped) */
  int sign;
  bool is_x;
} term;
typedef KS_ARRAY(term) terms;

static void expand(ks_v2 *s, const ks_anode *n, int sign, int depth, terms *out, long long *k) {
  if (s->why)
    return;
  const ks_anode *e = ks_rt_strip(n, true);
  if (!e || depth > 24) {
    ks_v2_refuse(s, "an index is too deep to expand");
    return;
  }
  if (e->from_macro) {
    ks_v2_refuse(s, "the index term '%s' comes from a macro", text(s, e));
    return;
  }
  if (ks_rt_is_bin(e, "+") || ks_rt_is_bin(e, "-")) {
    expand(s, e->kids[0], sign, depth + 1, out, k);
    expand(s, e->kids[1], e->op[0] == '-' ? -sign : sign, depth + 1, out, k);
    return;
  }
  if ((ks_rt_is_op(e, KS_AK_UNARY, "-") || ks_rt_is_op(e, KS_AK_UNARY, "+")) && !e->postfix) {
    expand(s, e->kids[0], e->op[0] == '-' ? -sign : sign, depth + 1, out, k);
    return;
  }
  if (e->kind == KS_AK_INT_LITERAL) {
    if (e->int_value > 1 << 20) {
      ks_v2_refuse(s, "the index has the large constant '%s'", text(s, e));
      return;
    }
    *k += sign * e->int_value;
    return;
  }
  term *t = ks_array_push(s->arena, out);
  t->node = ks_rt_strip(n, false);
  t->sign = sign;
  if (e->kind != KS_AK_DECL_REF || !e->decl)
    return;
  if (e->decl == s->x) {
    t->is_x = true;
    return;
  }
  /* a local that only computes a value: its initializer instead */
  const ks_anode *var = e->decl, *init = ks_rt_var_init(var);
  bool impure = false;
  if (init)
    ks_anode_walk((ks_anode *)init, ks_shape_visit_impure, &impure);
  if (var->kind == KS_AK_VAR && init && !impure && !var->is_pointer && integer_type(var->type) &&
      !ks_rt_modified(s->body, var)) {
    out->len--;
    expand(s, init, sign, depth + 1, out, k);
  }
}

typedef struct term_refs {
  ks_v2 *s;
  const ks_anode *bad;   /* the first name the term may not read */
  bool impure;
} term_refs;

static bool visit_term_refs(ks_anode *n, void *arg) {
  term_refs *r = arg;
  ks_shape_visit_impure(n, &r->impure);
  if (n->kind == KS_AK_DECL_REF && !r->bad) {
    const ks_anode *d = n->decl;
    bool ok = d && ((d->kind == KS_AK_PARAM && !d->is_pointer) ||
                    (d->kind == KS_AK_VAR && ks_v2_listed(&r->s->hoisted, d)) ||
                    d->kind == KS_AK_TEMPLATE_PARAM);
    if (!ok)
      r->bad = n;
  }
  return !r->impure && !r->bad;
}

/* A factor of the product `n` that makes it a multiple of 4: a literal
 * multiple of 4 (*param NULL), or an unmodified integer scalar parameter. */
static bool multiple_of_4(ks_v2 *s, const ks_anode *n, const char **param) {
  n = ks_rt_strip(n, true);
  if (!n)
    return false;
  if (n->kind == KS_AK_INT_LITERAL && n->int_value % KS_V2_LANES == 0) {
    *param = NULL;
    return true;
  }
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_PARAM &&
      !n->decl->is_pointer && n->decl->name && integer_type(n->decl->type) &&
      !ks_rt_modified(s->body, n->decl)) {
    *param = n->decl->name;
    return true;
  }
  if (ks_rt_is_bin(n, "*"))
    return multiple_of_4(s, n->kids[0], param) || multiple_of_4(s, n->kids[1], param);
  return false;
}

/* A term free of x: its guard parameter pushed to `params`. */
static void check_term(ks_v2 *s, const char *where, const term *t, ks_strings *params) {
  term_refs r = {s, NULL, false};
  ks_anode_walk((ks_anode *)t->node, visit_term_refs, &r);
  if (r.impure) {
    ks_v2_refuse(s, "%s: the index term '%s' reads memory or calls", where, text(s, t->node));
    return;
  }
  if (r.bad && r.bad->decl == s->x) {
    ks_v2_refuse(s, "%s: x is not a term of its own (x's coefficient must be 1): '%s'", where,
                 text(s, t->node));
    return;
  }
  if (r.bad) {
    ks_v2_refuse(s, "%s: the index term '%s' reads '%s', which is computed per element", where,
                 text(s, t->node), r.bad->name ? r.bad->name : "?");
    return;
  }
  const char *param = NULL;
  if (!multiple_of_4(s, t->node, &param)) {
    ks_v2_refuse(s,
                 "%s: the index term '%s' is not a multiple of a scalar parameter (or of 4)",
                 where, text(s, t->node));
    return;
  }
  if (!param)
    return;
  for (size_t k = 0; k < params->len; k++)
    if (!strcmp(params->items[k], param))
      return;
  *ks_array_push(s->arena, params) = param;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The base of the terms: found or added. */
static size_t base_of(ks_v2 *s, const terms *t, const ks_strings *params, const char *type) {
  const char **keys = ks_arena_alloc(s->arena, (t->len + 1) * sizeof *keys);
  ks_buf b = KS_BUF_INIT;
  for (size_t k = 0; k < t->len; k++) {
    const term *m = &t->items[k];
    const char *tx = m->is_x ? s->x0 : text(s, m->node);
    keys[k] = ks_arena_printf(s->arena, "%c%s", m->sign > 0 ? '+' : '-', tx);
    if (k == 0)
      ks_buf_addf(&b, "%s%s", m->sign > 0 ? "" : "-", tx);
    else
      ks_buf_addf(&b, " %c %s", m->sign > 0 ? '+' : '-', tx);
  }
  qsort(keys, t->len, sizeof *keys, cmp_str);
  ks_buf key = KS_BUF_INIT;
  for (size_t k = 0; k < t->len; k++)
    ks_buf_addf(&key, "%s\n", keys[k]);
  size_t found = s->bases.len;
  for (size_t k = 0; k < s->bases.len && found == s->bases.len; k++)
    if (!strcmp(s->bases.items[k].key, key.data))
      found = k;
  if (found == s->bases.len) {
    ks_v2_base *nb = ks_array_push(s->arena, &s->bases);
    nb->key = ks_arena_strdup(s->arena, key.data);
    nb->text = ks_arena_strdup(s->arena, b.data);
    nb->type = type;
  }
  ks_v2_base *base = &s->bases.items[found];
  for (size_t k = 0; k < params->len; k++) {
    bool have = false;
    for (size_t j = 0; j < base->params.len; j++)
      have |= !strcmp(base->params.items[j], params->items[k]);
    if (!have)
      *ks_array_push(s->arena, &base->params) = params->items[k];
  }
  ks_buf_release(&b);
  ks_buf_release(&key);
  return found;
}

/* The type B is kept in: the index's own, when it is a plain integer type. */
static const char *index_type(const ks_anode *index) {
  static const char *const known[] = {"int", "unsigned int", "unsigned", "long", "unsigned long",
                                      "long long", "unsigned long long", "size_t", "ptrdiff_t",
                                      "int64_t", "uint64_t", "int32_t", "uint32_t"};
  const char *t = index->type ? index->type : "";
  if (!strncmp(t, "const ", 6))
    t += 6;
  for (size_t k = 0; k < sizeof known / sizeof *known; k++)
    if (!strcmp(t, known[k]))
      return known[k];
  return "long long";
}

static size_t buf_of(ks_v2 *s, const ks_anode *param) {
  for (size_t k = 0; k < s->bufs.len; k++)
    if (s->bufs.items[k].param == param)
      return k;
  ks_v2_buf *b = ks_array_push(s->arena, &s->bufs);
  b->param = param;
  const char *elem = ks_shape_without_const(param->pointee ? param->pointee : "");
  for (size_t k = 0; k < sizeof elem_types / sizeof *elem_types; k++)
    if (!strcmp(elem, elem_types[k].c)) {
      b->elem = elem_types[k].c;
      b->vec = elem_types[k].vec;
    }
  if (!b->vec || strstr(param->pointee ? param->pointee : "", "volatile"))
    ks_v2_refuse(s, "%s: element type '%s' is not float, int or unsigned (4 bytes, 4 lanes)",
                 param->name, elem);
  return s->bufs.len - 1;
}

/* Is the read `node` executed whenever its statement is (not behind ?:,
 * && or ||)? */
static bool always_run(ks_v2 *s, const ks_anode *node) {
  const ks_anode *child = node;
  while (child != s->stmt) {
    const ks_anode *c, *p = ks_rt_up(child, &c);
    if (!p)
      break;
    if (p->kind == KS_AK_CONDITIONAL && p->nkids == 3 && c != p->kids[0])
      return false;
    if ((ks_rt_is_bin(p, "&&") || ks_rt_is_bin(p, "||")) && c == p->kids[1])
      return false;
    child = p;
  }
  return true;
}

static void add_site(ks_v2 *s, const ks_anode *node, const ks_anode *sub, bool write) {
  const ks_anode *param = ks_rt_strip(sub->kids[0], false)->decl;
  const char *where = text(s, sub);
  for (const ks_anode *a = node; a && a != s->stmt->parent; a = a->parent)
    if (a->from_macro) {
      ks_v2_refuse(s, "%s comes from a macro", where);
      return;
    }
  if (!write && !always_run(s, node)) {
    ks_v2_refuse(s, "%s is read only under a condition (its element may not exist)", where);
    return;
  }
  size_t bi = buf_of(s, param);
  terms t = {0};
  long long k = 0;
  expand(s, sub->kids[1], 1, 0, &t, &k);
  if (s->why)
    return;
  int nx = 0, coef = 0;
  for (size_t j = 0; j < t.len; j++)
    if (t.items[j].is_x) {
      nx++;
      coef += t.items[j].sign;
    }
  if (nx != 1 || coef != 1) {
    ks_v2_refuse(s, "%s: the index is not x plus a constant plus multiples of scalar "
                 "parameters (x's coefficient must be 1)", where);
    return;
  }
  ks_strings params = {0};
  for (size_t j = 0; j < t.len && !s->why; j++)
    if (!t.items[j].is_x)
      check_term(s, where, &t.items[j], &params);
  if (s->why)
    return;
  if (k < -KS_V2_LANES || k > KS_V2_LANES) {
    ks_v2_refuse(s, "%s: the element is %lld from x (at most 4)", where, k);
    return;
  }
  if (write && k) {
    ks_v2_refuse(s, "%s: written %lld from x (a lane's element must be its own x)", where, k);
    return;
  }
  ks_v2_site *st = ks_array_push(s->arena, &s->sites);
  st->node = node;
  st->buf = bi;
  st->base = base_of(s, &t, &params, index_type(sub->kids[1]));
  st->k = k;
  st->write = write;
  if (write)
    s->bufs.items[bi].written = true;
  else
    s->bufs.items[bi].read = true;
}

/* ---- the statements of the straight-line work ---------------------------- */

static bool buffer_subscript(const ks_anode *sub) {
  if (!sub || sub->kind != KS_AK_SUBSCRIPT || sub->nkids != 2)
    return false;
  const ks_anode *b = ks_rt_strip(sub->kids[0], false);
  return b && b->kind == KS_AK_DECL_REF && b->decl && b->decl->kind == KS_AK_PARAM &&
         b->decl->is_pointer;
}

/* Functions of values only: CUDA's math functions and intrinsics, and the
 * ones fast_math adds. */
static bool pure_math(ks_v2 *s, const char *name) {
  static const char *const known[] = {
      "min",   "max",   "abs",    "fabs",  "fmin",  "fmax",     "fma",   "sqrt",   "rsqrt",
      "cbrt",  "rcbrt", "exp",    "exp2",  "exp10", "expm1",    "log",   "log2",   "log10",
      "log1p", "sin",   "cos",    "tan",   "asin",  "acos",     "atan",  "atan2",  "sinh",
      "cosh",  "tanh",  "asinh",  "acosh", "atanh", "pow",      "floor", "ceil",   "trunc",
      "round", "rint",  "fmod",   "hypot", "erf",   "erfc",     "copysign", "fdim", "sinpi",
      "cospi", "fadd",  "fsub",   "fmul",  "fdiv",  "fdivide",  "frcp",  "fsqrt",  "frsqrt",
      "dadd",  "dsub",  "dmul",   "ddiv",  "saturate", "mul24", "umul24", "mulhi", "umulhi"};
  if (!name)
    return false;
  if (ks_rt_has_prefix(name, "ks_fast_"))
    return true;
  if (ks_shape_user_function(s->in, name))
    return false;
  char n[64];
  snprintf(n, sizeof n, "%s", ks_rt_has_prefix(name, "__") ? name + 2 : name);
  size_t len = strlen(n);
  if (len > 3 && n[len - 3] == '_' && n[len - 2] == 'r')
    n[len -= 3] = '\0'; /* _rn, _rz, _ru, _rd */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
      if (!strcmp(n, known[k]))
        return true;
    if (len > 1 && n[len - 1] == 'f')
      n[--len] = '\0';
    else
      break;
  }
  return ks_rt_has_prefix(name, "__float2") || ks_rt_has_prefix(name, "__int2float") ||
         ks_rt_has_prefix(name, "__uint2float");
}

/* `=`, `op=`, ++ and -- only as the statement itself, on an element (=
 * only) or on a value declared per element. */
static void check_assignment(ks_v2 *s, const ks_anode *n) {
  if (n != s->stmt) {
    ks_v2_refuse(s, "an assignment inside an expression: '%s'", text(s, n));
    return;
  }
  const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
  if (buffer_subscript(lhs)) {
    if (!ks_rt_is_bin(n, "="))
      ks_v2_refuse(s, "'%s' updates an element (a read and a write)", text(s, n));
    return;
  }
  if (!lhs || lhs->kind != KS_AK_DECL_REF || !ks_v2_listed(&s->lane_vars, lhs->decl))
    ks_v2_refuse(s, "'%s' assigns what is not an element or a value declared per element",
                 text(s, n));
}

static bool visit_work(ks_anode *n, void *arg) {
  ks_v2 *s = arg;
  if (s->why)
    return false;
  switch (n->kind) {
  case KS_AK_CALL:
    if (n->name && !strcmp(n->name, "__ldg") && n->nkids == 1) {
      const ks_anode *a = ks_rt_strip(n->kids[0], false);
      const ks_anode *sub = ks_rt_is_op(a, KS_AK_UNARY, "&") ? ks_rt_strip(a->kids[0], false) : NULL;
      if (buffer_subscript(sub)) {
        add_site(s, n, sub, false);
        return false;
      }
    }
    if (!pure_math(s, n->name))
      ks_v2_refuse(s, "the element's work calls '%s'", n->name ? n->name : "?");
    return true;
  case KS_AK_SUBSCRIPT: {
    if (!buffer_subscript(n)) {
      ks_v2_refuse(s, "'%s' reads memory other than a pointer parameter's elements", text(s, n));
      return false;
    }
    const ks_anode *child, *up = ks_rt_up(n, &child);
    bool lhs = up && up->nkids && child == up->kids[0];
    if (ks_rt_is_bin(up, "=") && lhs)
      add_site(s, n, n, true);
    else if ((up && up->kind == KS_AK_COMPOUND_ASSIGN && lhs) || ks_rt_is_op(up, KS_AK_UNARY, "++") ||
             ks_rt_is_op(up, KS_AK_UNARY, "--"))
      ks_v2_refuse(s, "'%s' updates an element (a read and a write)", text(s, up));
    else if (ks_rt_is_op(up, KS_AK_UNARY, "&") || (up && up->kind == KS_AK_MEMBER))
      ks_v2_refuse(s, "'%s' uses an element other than by its value", text(s, up));
    else
      add_site(s, n, n, false);
    return false;
  }
  case KS_AK_DECL_REF:
    if (n->decl && n->decl->kind == KS_AK_PARAM && n->decl->is_pointer)
      ks_v2_refuse(s, "uses %s other than through %s[...]", n->name, n->name);
    return true;
  case KS_AK_BINARY:
    if (n->op && !strcmp(n->op, "="))
      check_assignment(s, n);
    return true;
  case KS_AK_COMPOUND_ASSIGN:
    check_assignment(s, n);
    return true;
  case KS_AK_UNARY:
    if (ks_rt_is_op(n, KS_AK_UNARY, "++") || ks_rt_is_op(n, KS_AK_UNARY, "--"))
      check_assignment(s, n);
    else if (ks_rt_is_op(n, KS_AK_UNARY, "*") || ks_rt_is_op(n, KS_AK_UNARY, "&"))
      ks_v2_refuse(s, "'%s' reads memory through a pointer or takes an address", text(s, n));
    return true;
  case KS_AK_MEMBER:
    if (n->arrow)
      ks_v2_refuse(s, "'%s' reads memory through a pointer", text(s, n));
    return true;
  case KS_AK_VAR:
    if (n->shared_space || (n->type && (strchr(n->type, '[') || strchr(n->type, '&'))))
      ks_v2_refuse(s, "declares '%s', an array, a reference or shared", n->name ? n->name : "?");
    return true;
  default:
    return true;
  }
}

void ks_v2_scan_statement(ks_v2 *s, const ks_anode *stmt) {
  if (s->why)
    return;
  s->stmt = stmt;
  if (stmt->kind != KS_AK_DECL_STMT && !ks_rt_is_assignment(stmt)) {
    const char *t = text(s, stmt);
    const char *nl = strchr(t, '\n');
    ks_v2_refuse(s, "'%.*s%s' is not straight-line work (after the edge branches only "
                 "declarations and assignments may follow)",
                 nl ? (int)(nl - t) : (int)strlen(t), t, nl ? " ..." : "");
    return;
  }
  ks_anode_walk((ks_anode *)stmt, visit_work, s);
}

/* ---- buffers the kernel only reads --------------------------------------- */

typedef struct only_read_walk {
  const ks_anode *param;
  bool written;
} only_read_walk;

static bool visit_only_read(ks_anode *n, void *arg) {
  only_read_walk *w = arg;
  if (w->written || n->kind != KS_AK_DECL_REF || n->decl != w->param)
    return !w->written;
  const ks_anode *child, *sub = ks_rt_up(n, &child);
  if (!sub || sub->kind != KS_AK_SUBSCRIPT || child != sub->kids[0]) {
    w->written = true; /* a pointer handed on: assume the worst */
    return false;
  }
  const ks_anode *up = ks_rt_up(sub, &child);
  if (!up)
    return true;
  bool lhs = up->nkids && child == up->kids[0];
  if ((ks_rt_is_bin(up, "=") && lhs) || (up->kind == KS_AK_COMPOUND_ASSIGN && lhs) ||
      ks_rt_is_op(up, KS_AK_UNARY, "++") || ks_rt_is_op(up, KS_AK_UNARY, "--") ||
      up->kind == KS_AK_MEMBER)
    w->written = true;
  if (ks_rt_is_op(up, KS_AK_UNARY, "&")) {
    const ks_anode *call = ks_rt_up(up, NULL);
    w->written |= !(call && call->kind == KS_AK_CALL && call->name && !strcmp(call->name, "__ldg"));
  }
  return !w->written;
}

bool ks_v2_only_read(const ks_v2 *s, const ks_anode *param) {
  if (param->is_const)
    return true;
  only_read_walk w = {param, false};
  ks_anode_walk((ks_anode *)s->body, visit_only_read, &w);
  return !w.written;
}
