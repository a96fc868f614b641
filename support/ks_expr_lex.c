/* ks_expr_lex: the tokens of the expression language (numbers with C's
 * suffixes and bases, names, punctuators) and the C types that casts and
 * sizeof name. Numbers are converted with overflow checks: a literal that
 * does not fit 64 bits is an error, never a wrapped value. */
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_expr_int.h"

static unsigned column(const ks_expr_parser *ps, const char *at) {
  return (unsigned)(at - ps->text) + 1;
}

/* "at column N", or "at the end" when the error is past the last token. */
static const char *where(const ks_expr_parser *ps, const char *at, char *buf, size_t n) {
  if (at >= ps->end)
    return "at the end of the expression";
  snprintf(buf, n, "at column %u", column(ps, at));
  return buf;
}

int ks_expr_fail_at(ks_expr_parser *ps, const char *at, const char *what) {
  char buf[32];
  return ks_fail(ps->ctx, "%s %s", what, where(ps, at, buf, sizeof buf));
}

/* ---- lexer ------------------------------------------------------------ */

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static int lex_number(ks_expr_parser *ps, const char *s) {
  const char *p = s;
  ks_expr_token *t = &ps->tok;
  bool is_float = false;
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
    while (p < ps->end && isxdigit((unsigned char)*p))
      p++;
  } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
    base = 2;
    p += 2;
    while (p < ps->end && (*p == '0' || *p == '1'))
      p++;
  } else {
    while (p < ps->end && isdigit((unsigned char)*p))
      p++;
    if (p < ps->end && *p == '.') {
      is_float = true;
      p++;
      while (p < ps->end && isdigit((unsigned char)*p))
        p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
      const char *e = p + 1;
      if (e < ps->end && (*e == '+' || *e == '-'))
        e++;
      if (e < ps->end && isdigit((unsigned char)*e)) {
        is_float = true;
        p = e;
        while (p < ps->end && isdigit((unsigned char)*p))
          p++;
      }
    }
    if (!is_float && s[0] == '0' && p - s > 1)
      base = 8;
  }
  const char *digits_end = p;
  /* Suffixes: u, l, ll, ul, ull (any case) for integers; f or l for floats. */
  if (is_float) {
    if (p < ps->end && strchr("fFlL", *p))
      p++;
  } else {
    while (p < ps->end && strchr("uUlLzZ", *p) && p - digits_end < 3)
      p++;
  }
  t->kind = T_NUM;
  t->begin = s;
  t->len = (size_t)(p - s);
  if ((p < ps->end && (ident_char(*p) || *p == '.')) ||
      (base != 10 && base != 8 && digits_end == s + 2)) {
    while (p < ps->end && (ident_char(*p) || *p == '.'))
      p++;
    char msg[MAX_TOKEN + 40];
    snprintf(msg, sizeof msg, "bad number '%.*s'", (int)(p - s > MAX_TOKEN ? MAX_TOKEN : p - s), s);
    return ks_expr_fail_at(ps, s, msg);
  }
  char buf[MAX_TOKEN];
  size_t n = (size_t)(digits_end - s);
  if (n >= sizeof buf)
    return ks_expr_fail_at(ps, s, "number too long");
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (is_float) {
    double f = strtod(buf, NULL);
    if (!isfinite(f)) {
      char msg[MAX_TOKEN + 40];
      snprintf(msg, sizeof msg, "floating literal '%s' is out of range", buf);
      return ks_expr_fail_at(ps, s, msg);
    }
    t->num = ks_expr_float(f);
  } else {
    unsigned long long v = 0;
    const char *d = buf + (base == 16 || base == 2 ? 2 : 0);
    for (; *d; d++) {
      int digit = isdigit((unsigned char)*d) ? *d - '0' : tolower((unsigned char)*d) - 'a' + 10;
      if (digit >= base) {
        char msg[MAX_TOKEN + 40];
        snprintf(msg, sizeof msg, "bad digit '%c' in '%s'", *d, buf);
        return ks_expr_fail_at(ps, s, msg);
      }
      if (v > (ULLONG_MAX - (unsigned)digit) / (unsigned)base) {
        v = ULLONG_MAX;
        break;
      }
      v = v * (unsigned)base + (unsigned)digit;
    }
    if (v > (unsigned long long)LLONG_MAX) {
      char msg[MAX_TOKEN + 60];
      snprintf(msg, sizeof msg, "integer literal '%s' is too large", buf);
      return ks_expr_fail_at(ps, s, msg);
    }
    t->num = ks_expr_int((long long)v);
  }
  ps->p = p;
  return 0;
}

/* Reads the next token into ps->tok. */
int ks_expr_next(ks_expr_parser *ps) {
  const char *p = ps->p;
  while (p < ps->end && isspace((unsigned char)*p))
    p++;
  ks_expr_token *t = &ps->tok;
  memset(t, 0, sizeof *t);
  t->begin = p;
  if (p >= ps->end) {
    t->kind = T_END;
    ps->p = p;
    return 0;
  }
  if (isdigit((unsigned char)*p) || (*p == '.' && p + 1 < ps->end && isdigit((unsigned char)p[1])))
    return lex_number(ps, p);
  if (ident_start(*p) || (p[0] == ':' && p + 2 < ps->end && p[1] == ':' && ident_start(p[2]))) {
    /* Qualified names (std::size_t) and member paths (block.x) are one
     * token, so that an unknown one is reported whole. */
    const char *s = p;
    for (;;) {
      while (p < ps->end && ident_char(*p))
        p++;
      if (p + 2 < ps->end && p[0] == ':' && p[1] == ':' && ident_start(p[2]))
        p += 2;
      else if (p + 1 < ps->end && p[0] == '.' && ident_start(p[1]))
        p += 1;
      else
        break;
    }
    t->kind = T_IDENT;
    t->len = (size_t)(p - s);
    ps->p = p;
    return 0;
  }
  static const struct {
    char a, b;
    int code;
  } two[] = {{'<', '<', P_SHL}, {'>', '>', P_SHR}, {'<', '=', P_LE},  {'>', '=', P_GE},
             {'=', '=', P_EQ},  {'!', '=', P_NE},  {'&', '&', P_AND}, {'|', '|', P_OR}};
  t->kind = T_PUNCT;
  for (size_t i = 0; i < sizeof two / sizeof *two; i++)
    if (p + 1 < ps->end && p[0] == two[i].a && p[1] == two[i].b) {
      t->punct = two[i].code;
      t->len = 2;
      ps->p = p + 2;
      return 0;
    }
  if (!strchr("+-*/%<>!~&|^?:(),{}", *p)) {
    char msg[40];
    if (isprint((unsigned char)*p))
      snprintf(msg, sizeof msg, "unexpected '%c'", *p);
    else
      snprintf(msg, sizeof msg, "unexpected byte 0x%02x", (unsigned char)*p);
    return ks_expr_fail_at(ps, p, msg);
  }
  t->punct = *p;
  t->len = 1;
  ps->p = p + 1;
  return 0;
}

int ks_expr_expect(ks_expr_parser *ps, int c) {
  if (ks_expr_is_punct(ps, c))
    return ks_expr_next(ps);
  char msg[48];
  snprintf(msg, sizeof msg, "expected '%c'", c);
  return ks_expr_fail_at(ps, ps->tok.begin, msg);
}

/* ---- types (casts and sizeof) ------------------------------------------ */

static bool named_type(const char *s, size_t n, ks_expr_ctype *out) {
  static const struct {
    const char *name;
    unsigned size;
    bool is_float, is_unsigned;
  } names[] = {
      {"size_t", 8, false, true},        {"ssize_t", 8, false, false},
      {"ptrdiff_t", 8, false, false},    {"intptr_t", 8, false, false},
      {"uintptr_t", 8, false, true},     {"int8_t", 1, false, false},
      {"uint8_t", 1, false, true},       {"int16_t", 2, false, false},
      {"uint16_t", 2, false, true},      {"int32_t", 4, false, false},
      {"uint32_t", 4, false, true},      {"int64_t", 8, false, false},
      {"uint64_t", 8, false, true},      {"uint", 4, false, true},
      {"__half", 2, true, false},        {"half", 2, true, false},
      {"__nv_bfloat16", 2, true, false}, {"nv_bfloat16", 2, true, false},
  };
  if (n > 5 && !memcmp(s, "std::", 5)) {
    s += 5;
    n -= 5;
  }
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strlen(names[i].name) == n && !memcmp(names[i].name, s, n)) {
      *out = (ks_expr_ctype){names[i].size, names[i].is_float, names[i].is_unsigned, false, false};
      return true;
    }
  /* CUDA vector types: float4, uint2, longlong3, __half2, ... */
  static const struct {
    const char *base;
    unsigned size;
  } vec[] = {{"char", 1},  {"uchar", 1},  {"short", 2},  {"ushort", 2},       {"int", 4},
             {"uint", 4},  {"long", 8},   {"ulong", 8},  {"longlong", 8},     {"ulonglong", 8},
             {"float", 4}, {"double", 8}, {"__half", 2}, {"__nv_bfloat16", 2}};
  if (n >= 2 && s[n - 1] >= '1' && s[n - 1] <= '4')
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++)
      if (strlen(vec[i].base) == n - 1 && !memcmp(vec[i].base, s, n - 1)) {
        bool half_pair = vec[i].size == 2 && vec[i].base[0] == '_';
        if (half_pair && s[n - 1] != '2')
          return false; /* only __half2 and __nv_bfloat162 exist */
        *out = (ks_expr_ctype){vec[i].size * (unsigned)(s[n - 1] - '0'), false, false, true, false};
        return true;
      }
  return false;
}

/* Parses a type name at the current token: keyword combinations
 * ("unsigned long long", "const float") or one named type, then any '*'.
 * Returns 1 and consumes it when the tokens form a type, 0 (consuming
 * nothing) when they do not. */
int ks_expr_parse_type(ks_expr_parser *ps, ks_expr_ctype *out) {
  static const char *const words[] = {"const", "volatile", "unsigned", "signed", "char", "short",
                                      "int",   "long",     "float",    "double", "bool"};
  unsigned count[sizeof words / sizeof *words] = {0};
  bool any_word = false, named = false;
  ks_expr_ctype t = {0};
  ks_expr_parser saved = *ps;
  while (ps->tok.kind == T_IDENT) {
    size_t w = 0;
    while (w < sizeof words / sizeof *words && !ks_expr_is_ident(ps, words[w]))
      w++;
    if (w < sizeof words / sizeof *words) {
      if (named && w > 1)
        break;
      count[w]++;
      any_word = true;
    } else if (!named &&
               !(any_word && (count[2] + count[3] + count[4] + count[5] + count[6] + count[7] +
                              count[8] + count[9] + count[10])) &&
               named_type(ps->tok.begin, ps->tok.len, &t)) {
      named = true;
    } else {
      break;
    }
    if (ks_expr_next(ps))
      return -1;
  }
  bool base = named || count[2] || count[3] || count[4] || count[5] || count[6] || count[7] ||
              count[8] || count[9] || count[10];
  if (!base) {
    *ps = saved;
    return 0;
  }
  if (!named) {
    t.is_unsigned = count[2] > 0;
    if (count[8] || count[9]) {
      t.is_float = true;
      t.size = count[8] ? 4 : 8;
    } else if (count[10]) {
      t.size = 1;
      t.is_unsigned = true;
    } else if (count[4]) {
      t.size = 1;
    } else if (count[5]) {
      t.size = 2;
    } else if (count[7]) {
      t.size = 8;
    } else {
      t.size = 4;
    }
  }
  while (ks_expr_is_punct(ps, '*')) {
    t.is_pointer = true;
    if (ks_expr_next(ps))
      return -1;
  }
  if (t.is_pointer)
    t.size = 8;
  *out = t;
  return 1;
}

int ks_expr_convert(ks_expr_parser *ps, const char *at, ks_expr_ctype t, ks_value v,
                    ks_value *out) {
  if (t.is_pointer || t.is_vector)
    return ks_expr_fail_at(ps, at, "cannot cast to a pointer or vector type");
  if (t.is_float) {
    double f = ks_value_as_double(v);
    /* Converting a double beyond FLT_MAX to float is undefined in C. */
    if (t.size == 4 && fabs(f) > FLT_MAX)
      return ks_expr_fail_at(ps, at, "value out of range of float");
    *out = ks_expr_float(t.size == 4 ? (double)(float)f : f);
    return 0;
  }
  long long i;
  if (v.is_int) {
    i = v.i;
  } else {
    if (!isfinite(v.f) || v.f >= 9223372036854775808.0 || v.f < -9223372036854775808.0)
      return ks_expr_fail_at(ps, at, "value out of range of the integer cast");
    i = (long long)v.f; /* C truncates toward zero */
  }
  if (t.size == 8) {
    if (t.is_unsigned && i < 0)
      return ks_expr_fail_at(ps, at, "negative value cast to a 64-bit unsigned type");
  } else {
    /* Narrower types wrap, as C's conversions do on every CUDA platform. */
    unsigned bits = t.size * 8;
    unsigned long long mask = (1ULL << bits) - 1, u = (unsigned long long)i & mask;
    if (!t.is_unsigned && (u >> (bits - 1)))
      i = (long long)u - (long long)(1ULL << bits);
    else
      i = (long long)u;
  }
  *out = ks_expr_int(i);
  return 0;
}
