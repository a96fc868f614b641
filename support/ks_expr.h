/* ks_expr: evaluating the small C-like expressions of specs, launch policies
 * and `requires` guards: "(n + 255) / 256", "rows * cols", "n % 4 == 0",
 * "ceil_div(n, 4 * 256)", "256 * sizeof(float)", "1 << 26".
 *
 * Grammar (C precedence and associativity): integer literals (decimal, hex,
 * with u/l suffixes), floating literals (1.5, 1e-3, 2.0f); identifiers bound
 * by the environment; unary + - ! ~; * / %; + -; << >>; < <= > >=; == !=;
 * &; ^; |; &&; ||; ?:; parentheses; sizeof(T) for the C arithmetic types and
 * the CUDA vector types (float4, int2, ...), __half and __nv_bfloat16; casts
 * (int), (float), (size_t) ...; the functions min, max, abs, ceil_div,
 * round_up, log2 (integer), is_pow2, ceil and floor (C's, in double). Integer arithmetic is 64-bit and checked:
 * division by zero and overflow are errors, not undefined behaviour. An
 * operation with a floating operand is done in double.
 *
 * Errors are returned with ks_fail: "unknown name 'm' at column 5". */
#ifndef KS_EXPR_H
#define KS_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_ctx.h"

typedef struct ks_value {
  bool is_int;
  long long i; /* when is_int */
  double f;    /* otherwise */
} ks_value;

/* Looks a name up; returns true and sets *out when it is bound. */
typedef bool (*ks_expr_lookup)(void *data, const char *name, size_t len, ks_value *out);

typedef struct ks_expr_env {
  ks_expr_lookup lookup;
  void *data;
} ks_expr_env;

int ks_expr_eval(ks_ctx *ctx, const char *text, const ks_expr_env *env, ks_value *out);
/* Syntax only: names need no binding and nothing is computed, but
 * functions, types and the grammar are checked (a spec's expressions are
 * checked this way when it is parsed, before any size is known). */
int ks_expr_check(ks_ctx *ctx, const char *text);
/* The value as a non-negative integer that fits `max`; fails otherwise
 * (a float with a fraction, a negative count). */
int ks_expr_eval_count(ks_ctx *ctx, const char *text, const ks_expr_env *env,
                       unsigned long long max, unsigned long long *out);
/* A launch dimension: "dim3(a, b, c)", "(a, b)", "{a, b, c}" or a scalar;
 * missing components are 1. */
int ks_expr_eval_dim3(ks_ctx *ctx, const char *text, const ks_expr_env *env, unsigned out[3]);
double ks_value_as_double(ks_value v);

/* A simple environment: parallel arrays of names and values. */
typedef struct ks_expr_table {
  const char *const *names;
  const ks_value *values;
  size_t n;
  const ks_expr_env *parent; /* consulted when a name is not here; may be NULL */
} ks_expr_table;
bool ks_expr_table_lookup(void *table, const char *name, size_t len, ks_value *out);

#endif
