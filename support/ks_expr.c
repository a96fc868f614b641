/* ks_expr: a recursive-descent evaluator for the C-like expressions of
 * specs, launch policies and guards (grammar in ks_expr.h).
 *
 * The parser evaluates as it parses; the untaken side of && || and ?: is
 * parsed with evaluation off, so "n > 0 && 1024 % n == 0" cannot divide by
 * zero, yet a typo on that side is still reported. Integer arithmetic is
 * signed 64-bit and every operation is checked, because these numbers size
 * GPU buffers: a silent wrap-around would allocate the wrong amount.
 * Errors name the column (1-based, in bytes) of the offending token. */
#include "ks_expr.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_expr_int.h"

static int parse_expr(ks_expr_parser *ps, bool eval, ks_value *out);
static int parse_cond(ks_expr_parser *ps, bool eval, ks_value *out);
static int parse_unary(ks_expr_parser *ps, bool eval, ks_value *out);

double ks_value_as_double(ks_value v) { return v.is_int ? (double)v.i : v.f; }

static bool truthy(ks_value v) { return v.is_int ? v.i != 0 : v.f != 0.0; }

/* ---- binary operators --------------------------------------------------- */

static int prec_of(const ks_expr_token *t) {
  if (t->kind != T_PUNCT)
    return 0;
  switch (t->punct) {
  case P_OR:
    return 1;
  case P_AND:
    return 2;
  case '|':
    return 3;
  case '^':
    return 4;
  case '&':
    return 5;
  case P_EQ:
  case P_NE:
    return 6;
  case '<':
  case '>':
  case P_LE:
  case P_GE:
    return 7;
  case P_SHL:
  case P_SHR:
    return 8;
  case '+':
  case '-':
    return 9;
  case '*':
  case '/':
  case '%':
    return 10;
  default:
    return 0;
  }
}

static const char *op_name(int op) {
  static char one[2];
  switch (op) {
  case P_SHL:
    return "<<";
  case P_SHR:
    return ">>";
  case P_LE:
    return "<=";
  case P_GE:
    return ">=";
  case P_EQ:
    return "==";
  case P_NE:
    return "!=";
  case P_AND:
    return "&&";
  case P_OR:
    return "||";
  default:
    one[0] = (char)op;
    one[1] = '\0';
    return one;
  }
}

static int overflow(ks_expr_parser *ps, const char *at, int op) {
  char msg[48];
  snprintf(msg, sizeof msg, "integer overflow in '%s'", op_name(op));
  return ks_expr_fail_at(ps, at, msg);
}

static int float_binop(ks_expr_parser *ps, const char *at, int op, double a, double b,
                       ks_value *out) {
  switch (op) {
  case '+':
    *out = ks_expr_float(a + b);
    break;
  case '-':
    *out = ks_expr_float(a - b);
    break;
  case '*':
    *out = ks_expr_float(a * b);
    break;
  case '/':
    if (b == 0.0)
      return ks_expr_fail_at(ps, at, "division by zero");
    *out = ks_expr_float(a / b);
    break;
  case '<':
    *out = ks_expr_int(a < b);
    break;
  case '>':
    *out = ks_expr_int(a > b);
    break;
  case P_LE:
    *out = ks_expr_int(a <= b);
    break;
  case P_GE:
    *out = ks_expr_int(a >= b);
    break;
  case P_EQ:
    *out = ks_expr_int(a == b);
    break;
  case P_NE:
    *out = ks_expr_int(a != b);
    break;
  default: {
    char msg[48];
    snprintf(msg, sizeof msg, "'%s' needs integer operands", op_name(op));
    return ks_expr_fail_at(ps, at, msg);
  }
  }
  if (!out->is_int && !isfinite(out->f))
    return ks_expr_fail_at(ps, at, "floating-point overflow");
  return 0;
}

static int binop(ks_expr_parser *ps, const char *at, int op, ks_value a, ks_value b,
                 ks_value *out) {
  if (!a.is_int || !b.is_int)
    return float_binop(ps, at, op, ks_value_as_double(a), ks_value_as_double(b), out);
  long long x = a.i, y = b.i, r = 0;
  switch (op) {
  case '+':
    if (__builtin_add_overflow(x, y, &r))
      return overflow(ps, at, op);
    break;
  case '-':
    if (__builtin_sub_overflow(x, y, &r))
      return overflow(ps, at, op);
    break;
  case '*':
    if (__builtin_mul_overflow(x, y, &r))
      return overflow(ps, at, op);
    break;
  case '/':
  case '%':
    if (y == 0)
      return ks_expr_fail_at(ps, at, op == '/' ? "division by zero" : "remainder by zero");
    if (x == LLONG_MIN && y == -1)
      return overflow(ps, at, op);
    r = op == '/' ? x / y : x % y;
    break;
  case P_SHL:
  case P_SHR:
    if (y < 0 || y > 63) {
      char msg[64];
      snprintf(msg, sizeof msg, "shift count %lld out of range", y);
      return ks_expr_fail_at(ps, at, msg);
    }
    if (op == P_SHR) {
      r = x >> y;
      break;
    }
    if (x < 0)
      return ks_expr_fail_at(ps, at, "left shift of a negative value");
    if (y && x > (LLONG_MAX >> y))
      return overflow(ps, at, op);
    r = (long long)((unsigned long long)x << y);
    break;
  case '<':
    r = x < y;
    break;
  case '>':
    r = x > y;
    break;
  case P_LE:
    r = x <= y;
    break;
  case P_GE:
    r = x >= y;
    break;
  case P_EQ:
    r = x == y;
    break;
  case P_NE:
    r = x != y;
    break;
  case '&':
    r = x & y;
    break;
  case '^':
    r = x ^ y;
    break;
  case '|':
    r = x | y;
    break;
  default:
    return ks_expr_fail_at(ps, at, "unknown operator");
  }
  *out = ks_expr_int(r);
  return 0;
}

/* Precedence climbing over the binary operators, left-associative. */
static int parse_binary(ks_expr_parser *ps, int min_prec, bool eval, ks_value *out) {
  ks_value lhs = ks_expr_int(0);
  if (parse_unary(ps, eval, &lhs))
    return -1;
  for (;;) {
    int prec = prec_of(&ps->tok);
    if (!prec || prec < min_prec)
      break;
    int op = ps->tok.punct;
    const char *at = ps->tok.begin;
    if (ks_expr_next(ps))
      return -1;
    bool rhs_eval = eval;
    if (op == P_AND)
      rhs_eval = eval && truthy(lhs);
    else if (op == P_OR)
      rhs_eval = eval && !truthy(lhs);
    ks_value rhs = ks_expr_int(0);
    if (parse_binary(ps, prec + 1, rhs_eval, &rhs))
      return -1;
    if (!eval)
      continue;
    if (op == P_AND)
      lhs = ks_expr_int(truthy(lhs) && truthy(rhs));
    else if (op == P_OR)
      lhs = ks_expr_int(truthy(lhs) || truthy(rhs));
    else if (binop(ps, at, op, lhs, rhs, &lhs))
      return -1;
  }
  *out = lhs;
  return 0;
}

static int parse_cond(ks_expr_parser *ps, bool eval, ks_value *out) {
  /* Every nested expression passes here, ?: branches included, so the depth
   * is held until the branches are parsed. */
  if (++ps->depth > MAX_DEPTH)
    return ks_expr_fail_at(ps, ps->tok.begin, "expression nested too deeply");
  ks_value c = ks_expr_int(0), a = ks_expr_int(0), b = ks_expr_int(0);
  int rc = parse_binary(ps, 1, eval, &c);
  if (rc || !ks_expr_is_punct(ps, '?')) {
    *out = c;
    goto out;
  }
  rc = -1;
  if (ks_expr_next(ps) || parse_expr(ps, eval && truthy(c), &a) || ks_expr_expect(ps, ':') ||
      parse_cond(ps, eval && !truthy(c), &b))
    goto out;
  rc = 0;
  *out = truthy(c) ? a : b;
out:
  ps->depth--;
  return rc;
}

static int parse_expr(ks_expr_parser *ps, bool eval, ks_value *out) {
  return parse_cond(ps, eval, out);
}

/* ---- calls, casts and primaries -------------------------------------- */

static int as_int_arg(ks_expr_parser *ps, const char *at, const char *fn, ks_value v,
                      long long *out) {
  if (v.is_int) {
    *out = v.i;
    return 0;
  }
  if (v.f == floor(v.f) && fabs(v.f) < 9.2e18) {
    *out = (long long)v.f;
    return 0;
  }
  char msg[192];
  snprintf(msg, sizeof msg, "%s needs integer arguments", fn);
  return ks_expr_fail_at(ps, at, msg);
}

static int call_builtin(ks_expr_parser *ps, const char *at, const char *fn, const ks_value *args,
                        size_t n, ks_value *out) {
  char msg[224];
  if (!strcmp(fn, "ceil") || !strcmp(fn, "floor")) { /* C's, in double */
    double v = ks_value_as_double(args[0]);
    *out = ks_expr_float(fn[0] == 'c' ? ceil(v) : floor(v));
    return 0;
  }
  if (!strcmp(fn, "min") || !strcmp(fn, "max")) {
    bool is_max = fn[1] == 'a', all_int = true;
    for (size_t i = 0; i < n; i++)
      all_int = all_int && args[i].is_int;
    ks_value best = all_int ? args[0] : ks_expr_float(ks_value_as_double(args[0]));
    for (size_t i = 1; i < n; i++) {
      if (all_int) {
        if (is_max ? args[i].i > best.i : args[i].i < best.i)
          best = args[i];
      } else {
        double v = ks_value_as_double(args[i]);
        if (is_max ? v > best.f : v < best.f)
          best = ks_expr_float(v); /* mixed arguments give a double, as in C */
      }
    }
    *out = best;
    return 0;
  }
  if (!strcmp(fn, "abs")) {
    if (!args[0].is_int) {
      *out = ks_expr_float(fabs(args[0].f));
      return 0;
    }
    if (args[0].i == LLONG_MIN)
      return ks_expr_fail_at(ps, at, "integer overflow in abs");
    *out = ks_expr_int(args[0].i < 0 ? -args[0].i : args[0].i);
    return 0;
  }
  long long a = 0, b = 0;
  if (as_int_arg(ps, at, fn, args[0], &a) || (n > 1 && as_int_arg(ps, at, fn, args[1], &b)))
    return -1;
  if (!strcmp(fn, "ceil_div") || !strcmp(fn, "round_up")) {
    if (b <= 0) {
      snprintf(msg, sizeof msg, "%s needs a positive divisor, not %lld", fn, b);
      return ks_expr_fail_at(ps, at, msg);
    }
    long long q = a / b + (a % b != 0 && a > 0);
    if (fn[0] == 'r' && __builtin_mul_overflow(q, b, &q))
      return ks_expr_fail_at(ps, at, "integer overflow in round_up");
    *out = ks_expr_int(q);
    return 0;
  }
  if (!strcmp(fn, "log2")) {
    if (a <= 0) {
      snprintf(msg, sizeof msg, "log2 needs a positive argument, not %lld", a);
      return ks_expr_fail_at(ps, at, msg);
    }
    long long r = 0;
    while (a >>= 1)
      r++;
    *out = ks_expr_int(r);
    return 0;
  }
  /* is_pow2 */
  *out = ks_expr_int(a > 0 && (a & (a - 1)) == 0);
  return 0;
}

static int parse_call(ks_expr_parser *ps, const char *name, const char *at, bool eval,
                      ks_value *out) {
  static const struct {
    const char *name;
    unsigned min, max;
  } fns[] = {{"min", 2, 16},     {"max", 2, 16}, {"abs", 1, 1},    {"ceil_div", 2, 2},
             {"round_up", 2, 2}, {"log2", 1, 1}, {"is_pow2", 1, 1}, {"ceil", 1, 1},
             {"floor", 1, 1}};
  size_t f = 0;
  while (f < sizeof fns / sizeof *fns && strcmp(fns[f].name, name))
    f++;
  if (f == sizeof fns / sizeof *fns) {
    char msg[MAX_TOKEN + 40];
    snprintf(msg, sizeof msg, "unknown function '%s'", name);
    return ks_expr_fail_at(ps, at, msg);
  }
  ks_value args[16];
  unsigned n = 0;
  if (ks_expr_next(ps)) /* the '(' */
    return -1;
  if (!ks_expr_is_punct(ps, ')')) {
    for (;;) {
      if (n == 16)
        return ks_expr_fail_at(ps, ps->tok.begin, "too many arguments");
      args[n] = ks_expr_int(0);
      if (parse_expr(ps, eval, &args[n++]))
        return -1;
      if (!ks_expr_is_punct(ps, ','))
        break;
      if (ks_expr_next(ps))
        return -1;
    }
  }
  if (ks_expr_expect(ps, ')'))
    return -1;
  if (n < fns[f].min || n > fns[f].max) {
    char msg[224];
    if (fns[f].min == fns[f].max)
      snprintf(msg, sizeof msg, "%s takes %u argument%s, not %u", name, fns[f].min,
               fns[f].min == 1 ? "" : "s", n);
    else
      snprintf(msg, sizeof msg, "%s takes at least %u arguments, not %u", name, fns[f].min, n);
    return ks_expr_fail_at(ps, at, msg);
  }
  if (!eval) {
    *out = ks_expr_int(0);
    return 0;
  }
  return call_builtin(ps, at, name, args, n, out);
}

/* sizeof(T); sizeof of an expression is not supported (nothing has a
 * storage type here). */
static int parse_sizeof(ks_expr_parser *ps, ks_value *out) {
  if (ks_expr_next(ps) || ks_expr_expect(ps, '('))
    return -1;
  ks_expr_ctype t;
  int is_type = ks_expr_parse_type(ps, &t);
  if (is_type < 0)
    return -1;
  if (!is_type) {
    char msg[MAX_TOKEN + 40];
    if (ps->tok.kind == T_IDENT)
      snprintf(msg, sizeof msg, "sizeof: unknown type '%.*s'", (int)ps->tok.len, ps->tok.begin);
    else
      snprintf(msg, sizeof msg, "sizeof needs a type");
    return ks_expr_fail_at(ps, ps->tok.kind == T_END ? ps->end : ps->tok.begin, msg);
  }
  if (ks_expr_expect(ps, ')'))
    return -1;
  *out = ks_expr_int(t.size);
  return 0;
}

/* static_cast<T>(e), as C++ launch code writes conversions. */
static int parse_static_cast(ks_expr_parser *ps, bool eval, ks_value *out) {
  const char *at = ps->tok.begin;
  if (ks_expr_next(ps) || ks_expr_expect(ps, '<'))
    return -1;
  ks_expr_ctype t;
  int is_type = ks_expr_parse_type(ps, &t);
  if (is_type < 0)
    return -1;
  if (!is_type)
    return ks_expr_fail_at(ps, ps->tok.begin, "static_cast needs an arithmetic type");
  if (ks_expr_expect(ps, '>') || ks_expr_expect(ps, '('))
    return -1;
  ks_value v = ks_expr_int(0);
  if (parse_expr(ps, eval, &v) || ks_expr_expect(ps, ')'))
    return -1;
  if (!eval) {
    *out = ks_expr_int(0);
    return 0;
  }
  return ks_expr_convert(ps, at, t, v, out);
}

static int parse_primary(ks_expr_parser *ps, bool eval, ks_value *out) {
  ks_expr_token t = ps->tok;
  if (t.kind == T_NUM) {
    *out = t.num;
    return ks_expr_next(ps);
  }
  if (ks_expr_is_punct(ps, '(')) {
    if (ks_expr_next(ps) || parse_expr(ps, eval, out))
      return -1;
    return ks_expr_expect(ps, ')');
  }
  if (t.kind != T_IDENT) {
    if (t.kind == T_END)
      return ks_expr_fail_at(ps, ps->end,
                             t.begin == ps->text ? "empty expression" : "expected a value");
    char msg[48];
    snprintf(msg, sizeof msg, "unexpected '%s'", op_name(t.punct));
    return ks_expr_fail_at(ps, t.begin, msg);
  }
  char name[MAX_TOKEN + 1];
  if (t.len > MAX_TOKEN)
    return ks_expr_fail_at(ps, t.begin, "name too long");
  memcpy(name, t.begin, t.len);
  name[t.len] = '\0';
  if (!strcmp(name, "sizeof"))
    return parse_sizeof(ps, out);
  if (!strcmp(name, "static_cast"))
    return parse_static_cast(ps, eval, out);
  if (!strcmp(name, "true") || !strcmp(name, "false")) {
    *out = ks_expr_int(name[0] == 't');
    return ks_expr_next(ps);
  }
  /* Functional cast: int(x), size_t(x), float(x). */
  ks_expr_ctype ty;
  int is_type = ks_expr_parse_type(ps, &ty);
  if (is_type < 0)
    return -1;
  if (is_type) {
    if (!ks_expr_is_punct(ps, '('))
      return ks_expr_fail_at(ps, t.begin, "a type name is not a value");
    ks_value v = ks_expr_int(0);
    if (ks_expr_next(ps) || parse_expr(ps, eval, &v) || ks_expr_expect(ps, ')'))
      return -1;
    if (!eval) {
      *out = ks_expr_int(0);
      return 0;
    }
    return ks_expr_convert(ps, t.begin, ty, v, out);
  }
  if (ks_expr_next(ps))
    return -1;
  if (ks_expr_is_punct(ps, '('))
    return parse_call(ps, name, t.begin, eval, out);
  ks_value v = ks_expr_int(0);
  if (ps->env && ps->env->lookup && ps->env->lookup(ps->env->data, t.begin, t.len, &v)) {
    *out = v;
    return 0;
  }
  if (ps->syntax_only) {
    *out = ks_expr_int(0);
    return 0;
  }
  char msg[MAX_TOKEN + 40];
  snprintf(msg, sizeof msg, "unknown name '%s'", name);
  return ks_expr_fail_at(ps, t.begin, msg);
}

static int parse_unary(ks_expr_parser *ps, bool eval, ks_value *out) {
  if (++ps->depth > MAX_DEPTH)
    return ks_expr_fail_at(ps, ps->tok.begin, "expression nested too deeply");
  int rc = 0;
  const char *at = ps->tok.begin;
  if (ps->tok.kind == T_PUNCT && ps->tok.punct < 256 && strchr("+-!~", ps->tok.punct)) {
    int op = ps->tok.punct;
    ks_value v = ks_expr_int(0);
    if (ks_expr_next(ps) || parse_unary(ps, eval, &v)) {
      rc = -1;
      goto out;
    }
    if (!eval) {
      *out = ks_expr_int(0);
      goto out;
    }
    if (op == '+') {
      *out = v;
    } else if (op == '-') {
      if (!v.is_int)
        *out = ks_expr_float(-v.f);
      else if (v.i == LLONG_MIN)
        rc = overflow(ps, at, '-');
      else
        *out = ks_expr_int(-v.i);
    } else if (op == '!') {
      *out = ks_expr_int(!truthy(v));
    } else if (!v.is_int) {
      rc = ks_expr_fail_at(ps, at, "'~' needs an integer operand");
    } else {
      *out = ks_expr_int(~v.i);
    }
    goto out;
  }
  if (ks_expr_is_punct(ps, '(')) {
    /* A cast, when a type name follows: (int)x, (size_t)n. */
    ks_expr_parser saved = *ps;
    ks_expr_ctype t;
    int is_type = 0;
    if (ks_expr_next(ps) || (is_type = ks_expr_parse_type(ps, &t)) < 0) {
      rc = -1;
      goto out;
    }
    if (is_type && ks_expr_is_punct(ps, ')')) {
      ks_value v = ks_expr_int(0);
      if (ks_expr_next(ps) || parse_unary(ps, eval, &v)) {
        rc = -1;
        goto out;
      }
      *out = ks_expr_int(0);
      if (eval)
        rc = ks_expr_convert(ps, at, t, v, out);
      goto out;
    }
    *ps = saved;
  }
  rc = parse_primary(ps, eval, out);
out:
  ps->depth--;
  return rc;
}

/* ---- entry points -------------------------------------------------------- */

/* Evaluates [begin, end) of `text` (columns count from `text`). */
static int eval_range(ks_ctx *ctx, const char *text, const char *begin, const char *end,
                      const ks_expr_env *env, bool syntax_only, ks_value *out) {
  ks_expr_parser ps = {
      .ctx = ctx, .text = text, .p = begin, .end = end, .env = env, .syntax_only = syntax_only};
  ks_value v = ks_expr_int(0);
  if (ks_expr_next(&ps))
    return -1;
  if (ps.tok.kind == T_END)
    return ks_fail(ctx, "empty expression");
  if (parse_expr(&ps, !syntax_only, &v))
    return -1;
  if (ps.tok.kind != T_END) {
    char msg[MAX_TOKEN + 40];
    snprintf(msg, sizeof msg, "unexpected '%.*s'", (int)(ps.tok.len > 32 ? 32 : ps.tok.len),
             ps.tok.begin);
    return ks_expr_fail_at(&ps, ps.tok.begin, msg);
  }
  *out = v;
  return 0;
}

int ks_expr_eval(ks_ctx *ctx, const char *text, const ks_expr_env *env, ks_value *out) {
  if (!text)
    return ks_fail(ctx, "empty expression");
  return eval_range(ctx, text, text, text + strlen(text), env, false, out);
}

int ks_expr_check(ks_ctx *ctx, const char *text) {
  ks_value v;
  if (!text)
    return ks_fail(ctx, "empty expression");
  return eval_range(ctx, text, text, text + strlen(text), NULL, true, &v);
}

/* The value as a count (see ks_expr_eval_count). */
static int to_count(ks_ctx *ctx, ks_value v, unsigned long long max, unsigned long long *out) {
  if (!v.is_int) {
    if (v.f != floor(v.f))
      return ks_fail(ctx, "value %g is not a whole number", v.f);
    if (v.f < 0)
      return ks_fail(ctx, "value %g is negative", v.f);
    if (v.f > (double)max)
      return ks_fail(ctx, "value %g exceeds the limit %llu", v.f, max);
    *out = (unsigned long long)v.f;
    return 0;
  }
  if (v.i < 0)
    return ks_fail(ctx, "value %lld is negative", v.i);
  if ((unsigned long long)v.i > max)
    return ks_fail(ctx, "value %lld exceeds the limit %llu", v.i, max);
  *out = (unsigned long long)v.i;
  return 0;
}

int ks_expr_eval_count(ks_ctx *ctx, const char *text, const ks_expr_env *env,
                       unsigned long long max, unsigned long long *out) {
  ks_value v;
  if (ks_expr_eval(ctx, text, env, &v))
    return -1;
  return to_count(ctx, v, max, out);
}

static const char *skip_space(const char *p, const char *end) {
  while (p < end && isspace((unsigned char)*p))
    p++;
  return p;
}

/* The bracket matching the one at `open`, counting only brackets of the
 * same kind. */
static const char *closing(const char *open, const char *end) {
  char o = *open, c = o == '(' ? ')' : '}';
  int depth = 0;
  for (const char *p = open; p < end; p++) {
    if (*p == o)
      depth++;
    else if (*p == c && --depth == 0)
      return p;
  }
  return NULL;
}

int ks_expr_eval_dim3(ks_ctx *ctx, const char *text, const ks_expr_env *env, unsigned out[3]) {
  if (!text)
    return ks_fail(ctx, "empty expression");
  const char *end = text + strlen(text);
  while (end > text && isspace((unsigned char)end[-1]))
    end--;
  const char *p = skip_space(text, end), *inner = NULL, *inner_end = NULL;
  bool is_dim3 = false;
  if (end - p > 4 && !strncmp(p, "dim3", 4)) {
    const char *q = skip_space(p + 4, end);
    if (q < end && (*q == '(' || *q == '{')) {
      if (closing(q, end) != end - 1) {
        ks_expr_parser ps = {.ctx = ctx, .text = text, .end = end};
        return ks_expr_fail_at(&ps, q, "unbalanced brackets in dim3");
      }
      inner = q + 1;
      inner_end = end - 1;
      is_dim3 = true;
    }
  } else if (p < end && (*p == '(' || *p == '{') && closing(p, end) == end - 1) {
    inner = p + 1;
    inner_end = end - 1;
  }
  /* Split the inside at top-level commas; "(n + 1)" with no comma is a
   * scalar in parentheses, not a one-element tuple. */
  const char *parts[4], *part_ends[4];
  unsigned n = 0;
  if (inner) {
    int depth = 0;
    const char *start = inner;
    for (const char *q = inner; q <= inner_end; q++) {
      if (q < inner_end && (*q == '(' || *q == '{'))
        depth++;
      else if (q < inner_end && (*q == ')' || *q == '}'))
        depth--;
      else if (q == inner_end || (*q == ',' && depth == 0)) {
        if (q < inner_end && n == 2) {
          ks_expr_parser ps = {.ctx = ctx, .text = text, .end = end};
          return ks_expr_fail_at(&ps, q, "a dim3 has at most 3 components");
        }
        parts[n] = start;
        part_ends[n++] = q;
        start = q + 1;
      }
    }
    if (n == 1 && !is_dim3)
      inner = NULL;
  }
  if (!inner) {
    parts[0] = p;
    part_ends[0] = end;
    n = 1;
  }
  out[0] = out[1] = out[2] = 1;
  for (unsigned i = 0; i < n; i++) {
    ks_value v;
    unsigned long long c = 0;
    if (skip_space(parts[i], part_ends[i]) == part_ends[i] && is_dim3 && n == 1)
      break; /* dim3() is (1, 1, 1) */
    if (eval_range(ctx, text, parts[i], part_ends[i], env, false, &v))
      return -1;
    if (to_count(ctx, v, UINT_MAX, &c)) {
      if (n > 1) {
        static const char xyz[] = "xyz";
        char prefix[32];
        snprintf(prefix, sizeof prefix, "component %c", xyz[i]);
        ks_fail_prefix(ctx, prefix);
      }
      return -1;
    }
    out[i] = (unsigned)c;
  }
  return 0;
}

bool ks_expr_table_lookup(void *data, const char *name, size_t len, ks_value *out) {
  const ks_expr_table *table = data;
  /* From the end, so a later binding of a name shadows an earlier one. */
  for (size_t i = table->n; i-- > 0;)
    if (strlen(table->names[i]) == len && !memcmp(table->names[i], name, len)) {
      *out = table->values[i];
      return true;
    }
  if (table->parent && table->parent->lookup)
    return table->parent->lookup(table->parent->data, name, len, out);
  return false;
}
