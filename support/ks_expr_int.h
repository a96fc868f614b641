/* ks_expr_int: what the two files of the expression evaluator share
 * (ks_expr_lex.c: tokens and C types; ks_expr.c: the grammar and the
 * arithmetic). Internal to support/. */
#ifndef KS_EXPR_INT_H
#define KS_EXPR_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <string.h>

#include "ks_expr.h"

/* Nesting deeper than MAX_DEPTH (parentheses, unary operators, ?: branches)
 * is refused rather than allowed to exhaust the stack. */
enum { MAX_DEPTH = 200, MAX_TOKEN = 128 };

/* Punctuators of two characters get codes above the byte range. */
enum { P_SHL = 256, P_SHR, P_LE, P_GE, P_EQ, P_NE, P_AND, P_OR };

typedef enum ks_expr_tok_kind { T_END, T_NUM, T_IDENT, T_PUNCT } ks_expr_tok_kind;

typedef struct ks_expr_token {
  ks_expr_tok_kind kind;
  const char *begin; /* where it starts in the text */
  size_t len;
  int punct;    /* T_PUNCT: the character or a P_ code */
  ks_value num; /* T_NUM */
} ks_expr_token;

typedef struct ks_expr_parser {
  ks_ctx *ctx;
  const char *text; /* the whole text, for columns */
  const char *p;    /* next unread byte */
  const char *end;  /* end of the range being parsed */
  const ks_expr_env *env;
  bool syntax_only;  /* ks_expr_check: names need no binding */
  ks_expr_token tok; /* current token */
  unsigned depth;
} ks_expr_parser;

/* A C type as casts and sizeof need it. */
typedef struct ks_expr_ctype {
  unsigned size;
  bool is_float;
  bool is_unsigned;
  bool is_vector; /* float4 and friends: sizeof only */
  bool is_pointer;
} ks_expr_ctype;

/* Records "<what> at column N" (or "at the end of the expression"); -1. */
int ks_expr_fail_at(ks_expr_parser *ps, const char *at, const char *what);
/* Reads the next token into ps->tok. */
int ks_expr_next(ks_expr_parser *ps);
/* Consumes punctuator `c` or fails with "expected 'c'". */
int ks_expr_expect(ks_expr_parser *ps, int c);
/* A type name at the current token (see ks_expr_lex.c): 1 and consumed,
 * 0 when the tokens are not a type (nothing consumed), -1 on a lexing error. */
int ks_expr_parse_type(ks_expr_parser *ps, ks_expr_ctype *out);
/* A value converted as a C cast to `t` does it (checked). */
int ks_expr_convert(ks_expr_parser *ps, const char *at, ks_expr_ctype t, ks_value v, ks_value *out);

static inline bool ks_expr_is_punct(const ks_expr_parser *ps, int c) {
  return ps->tok.kind == T_PUNCT && ps->tok.punct == c;
}
static inline bool ks_expr_is_ident(const ks_expr_parser *ps, const char *name) {
  return ps->tok.kind == T_IDENT && strlen(name) == ps->tok.len &&
         !memcmp(ps->tok.begin, name, ps->tok.len);
}
static inline ks_value ks_expr_int(long long i) { return (ks_value){.is_int = true, .i = i}; }
static inline ks_value ks_expr_float(double f) { return (ks_value){.is_int = false, .f = f}; }

#endif
