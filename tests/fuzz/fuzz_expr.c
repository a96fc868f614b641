/* fuzz_expr: the expression evaluator of specs, launch policies and guards
 * (support/ks_expr.h) on any text: evaluated as a value, as a count, as a
 * launch dimension, and checked for syntax alone. The names bound are a
 * spec's usual ones, with values at the edges of 64-bit arithmetic, so that
 * the checked operations meet their limits.
 *
 * Invariants: every failure leaves a message; what evaluates also passes
 * the syntax check (a spec is checked before its sizes are known, so a
 * check stricter than evaluation would refuse a good spec, and a looser one
 * only defers the error); a count fits its maximum. */
#include <limits.h>
#include <stdlib.h>

#include "fuzz.h"
#include "ks_expr.h"

static const char *const names[] = {"n", "m", "rows", "cols", "big", "small", "x", "zero",
                                    "neg", "grid_x", "block_x", "smem", "len_x"};
static const ks_value values[] = {
    {.is_int = true, .i = 1000},      {.is_int = true, .i = 7},
    {.is_int = true, .i = 4096},      {.is_int = true, .i = 1 << 20},
    {.is_int = true, .i = LLONG_MAX}, {.is_int = true, .i = LLONG_MIN},
    {.is_int = false, .f = 2.5},      {.is_int = true, .i = 0},
    {.is_int = true, .i = -1},        {.is_int = true, .i = 65535},
    {.is_int = true, .i = 256},       {.is_int = true, .i = 49152},
    {.is_int = true, .i = 1ll << 40},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  const ks_expr_table table = {names, values, sizeof names / sizeof *names, NULL};
  const ks_expr_env env = {ks_expr_table_lookup, (void *)&table};
  ks_ctx ctx;
  fuzz_ctx(&ctx);

  ks_value v;
  int evaluated = ks_expr_eval(&ctx, text, &env, &v);
  if (evaluated)
    fuzz_check_error(&ctx);
  int checked = ks_expr_check(&ctx, text);
  if (checked)
    fuzz_check_error(&ctx);
  fuzz_check(evaluated || !checked);

  unsigned long long count;
  const unsigned long long max = 1ull << 32;
  if (ks_expr_eval_count(&ctx, text, &env, max, &count))
    fuzz_check_error(&ctx);
  else
    fuzz_check(count <= max);

  unsigned dim[3];
  if (ks_expr_eval_dim3(&ctx, text, &env, dim))
    fuzz_check_error(&ctx);

  ks_ctx_release(&ctx);
  free(text);
  return 0;
}
