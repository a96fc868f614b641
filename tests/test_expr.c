/* Unit tests of support/ks_expr (the expressions of specs, launch policies
 * and guards) and of the element types of support/ks_spec. Every error case
 * checks the message, column included: that is what a user reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ks_expr.h"
#include "ks_spec.h"

static ks_ctx ctx;

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_expr");
  return 0;
}

static int teardown(void **state) {
  ks_ctx_release(&ctx);
  return 0;
}

/* n = 1000, m = 7, big = 2^62, x = 2.5, zero = 0 */
static const char *const names[] = {"n", "m", "big", "x", "zero"};
static const ks_value values[] = {{.is_int = true, .i = 1000},
                                  {.is_int = true, .i = 7},
                                  {.is_int = true, .i = 1LL << 62},
                                  {.is_int = false, .f = 2.5},
                                  {.is_int = true, .i = 0}};
static const ks_expr_table table = {names, values, 5, NULL};
static const ks_expr_env env = {ks_expr_table_lookup, (void *)&table};

static long long ival(const char *text) {
  ks_value v;
  if (ks_expr_eval(&ctx, text, &env, &v))
    fail_msg("'%s' failed: %s", text, ctx.error);
  if (!v.is_int)
    fail_msg("'%s' gave a double %g", text, v.f);
  return v.i;
}

static double fval(const char *text) {
  ks_value v;
  if (ks_expr_eval(&ctx, text, &env, &v))
    fail_msg("'%s' failed: %s", text, ctx.error);
  if (v.is_int)
    fail_msg("'%s' gave an integer %lld", text, v.i);
  return v.f;
}

/* Evaluation fails and the message is exactly `msg`. */
static void fails(const char *text, const char *msg) {
  ks_value v;
  if (!ks_expr_eval(&ctx, text, &env, &v))
    fail_msg("'%s' should fail (%s)", text, msg);
  if (strcmp(ctx.error, msg))
    fail_msg("'%s': got \"%s\", want \"%s\"", text, ctx.error, msg);
}

static void precedence_as_in_c(void **state) {
  assert_int_equal(ival("1 + 2 * 3"), 7);
  assert_int_equal(ival("(1 + 2) * 3"), 9);
  assert_int_equal(ival("1 << 2 + 1"), 8);     /* + binds tighter than << */
  assert_int_equal(ival("1 < 2 == 1"), 1);     /* < before == */
  assert_int_equal(ival("6 & 3 ^ 1 | 8"), 11); /* & then ^ then | */
  assert_int_equal(ival("1 || 0 && 0"), 1);    /* && before || */
  assert_int_equal(ival("-2 * -3"), 6);
  assert_int_equal(ival("!0 + ~0"), 0);
  assert_int_equal(ival("(n + 255) / 256"), 4);
  assert_int_equal(ival("n % 4 == 0"), 1);
  assert_int_equal(ival("n > 5 ? n : 5"), 1000);
  assert_int_equal(ival("0 ? 1 : 0 ? 2 : 3"), 3); /* ?: is right-associative */
  assert_int_equal(ival("1 << 26"), 67108864);
  assert_int_equal(ival("  n  "), 1000);
}

static void associativity_left(void **state) {
  assert_int_equal(ival("100 / 10 / 5"), 2);
  assert_int_equal(ival("10 - 3 - 2"), 5);
  assert_int_equal(ival("2 * 3 % 4"), 2);
  assert_int_equal(ival("256 >> 2 >> 1"), 32);
  assert_int_equal(ival("-7 / 2"), -3); /* truncation toward zero, as C */
  assert_int_equal(ival("-7 % 2"), -1);
}

static void literals(void **state) {
  assert_int_equal(ival("0x1F"), 31);
  assert_int_equal(ival("0b101"), 5);
  assert_int_equal(ival("010"), 8);
  assert_int_equal(ival("256u"), 256);
  assert_int_equal(ival("1ULL << 40"), 1LL << 40);
  assert_int_equal(ival("9223372036854775807"), LLONG_MAX);
  assert_int_equal(ival("true + false"), 1);
  assert_true(fabs(fval("2.0f") - 2.0) < 1e-12);
  assert_true(fabs(fval("1e-3") - 1e-3) < 1e-15);
  assert_true(fabs(fval(".5") - 0.5) < 1e-15);
  fails("99999999999999999999", "integer literal '99999999999999999999' is too large at column 1");
  fails("n + 9223372036854775808",
        "integer literal '9223372036854775808' is too large at column 5");
  fails("12abc", "bad number '12abc' at column 1");
  fails("0x", "bad number '0x' at column 1");
  fails("09", "bad digit '9' in '09' at column 1");
  fails("1e999", "floating literal '1e999' is out of range at column 1");
}

static void checked_integer_arithmetic(void **state) {
  fails("n / zero", "division by zero at column 3");
  fails("n % (m - 7)", "remainder by zero at column 3");
  fails("big * 2", "integer overflow in '*' at column 5");
  fails("big + big", "integer overflow in '+' at column 5");
  fails("-big - big - big", "integer overflow in '-' at column 12");
  fails("1 << 64", "shift count 64 out of range at column 3");
  fails("1 << -1", "shift count -1 out of range at column 3");
  fails("-1 << 2", "left shift of a negative value at column 4");
  fails("big << 2", "integer overflow in '<<' at column 5");
  fails("-9223372036854775807 - 1 - 0 + (-(-9223372036854775807 - 1))",
        "integer overflow in '-' at column 33");
  assert_int_equal(ival("1 << 62"), 1LL << 62);
  assert_int_equal(ival("-8 >> 1"), -4);
}

static void short_circuit_skips_errors(void **state) {
  assert_int_equal(ival("zero != 0 && n / zero > 1"), 0);
  assert_int_equal(ival("zero == 0 || n / zero > 1"), 1);
  assert_int_equal(ival("zero ? n / zero : 5"), 5);
  /* An unknown name is reported even where it is not evaluated. */
  fails("zero && nope", "unknown name 'nope' at column 9");
}

static void floats_mix_as_in_c(void **state) {
  assert_true(fabs(fval("x * 2") - 5.0) < 1e-12);
  assert_true(fabs(fval("n / 8.0") - 125.0) < 1e-12);
  assert_int_equal(ival("x > 2"), 1);
  assert_int_equal(ival("(int)x"), 2);
  assert_int_equal(ival("(int)-x"), -2);
  assert_int_equal(ival("int(x * 3)"), 7);
  assert_int_equal(ival("static_cast<int>(x)"), 2);
  assert_true(fabs(fval("(float)n / 3") - 1000.0f / 3.0f) < 1e-4);
  assert_true(fabs(fval("(double)1 / 4") - 0.25) < 1e-15);
  fails("x % 2", "'%' needs integer operands at column 3");
  fails("x << 1", "'<<' needs integer operands at column 3");
  fails("~x", "'~' needs an integer operand at column 1");
  fails("x / 0.0", "division by zero at column 3");
  assert_int_equal(ival("(unsigned char)300"), 44);
  assert_int_equal(ival("(signed char)200"), -56);
  assert_int_equal(ival("(unsigned)-1"), 4294967295LL);
  assert_int_equal(ival("(short)70000"), 4464);
  fails("(size_t)-1", "negative value cast to a 64-bit unsigned type at column 1");
  fails("(float)1e300", "value out of range of float at column 1");
  assert_true(fval("(double)1e300") == 1e300);
}

static void sizeof_types(void **state) {
  assert_int_equal(ival("sizeof(float)"), 4);
  assert_int_equal(ival("sizeof(double)"), 8);
  assert_int_equal(ival("sizeof(char)"), 1);
  assert_int_equal(ival("sizeof(unsigned long long)"), 8);
  assert_int_equal(ival("sizeof(long)"), 8);
  assert_int_equal(ival("sizeof(size_t)"), 8);
  assert_int_equal(ival("sizeof(std::size_t)"), 8);
  assert_int_equal(ival("sizeof(int64_t)"), 8);
  assert_int_equal(ival("sizeof(float4)"), 16);
  assert_int_equal(ival("sizeof(float3)"), 12);
  assert_int_equal(ival("sizeof(int2)"), 8);
  assert_int_equal(ival("sizeof(uchar4)"), 4);
  assert_int_equal(ival("sizeof(double2)"), 16);
  assert_int_equal(ival("sizeof(__half)"), 2);
  assert_int_equal(ival("sizeof(__half2)"), 4);
  assert_int_equal(ival("sizeof(__nv_bfloat16)"), 2);
  assert_int_equal(ival("sizeof(const float)"), 4);
  assert_int_equal(ival("sizeof(float *)"), 8);
  assert_int_equal(ival("256 * sizeof(float)"), 1024);
  fails("sizeof(Foo)", "sizeof: unknown type 'Foo' at column 8");
  fails("sizeof(n)", "sizeof: unknown type 'n' at column 8");
  fails("sizeof(float", "expected ')' at the end of the expression");
}

static void functions(void **state) {
  assert_int_equal(ival("min(n, 3)"), 3);
  assert_int_equal(ival("max(1, n, 7)"), 1000);
  assert_true(fabs(fval("max(1, x)") - 2.5) < 1e-12);
  assert_int_equal(ival("abs(-5)"), 5);
  assert_true(fabs(fval("abs(-x)") - 2.5) < 1e-12);
  assert_int_equal(ival("ceil_div(n, 256)"), 4);
  assert_int_equal(ival("ceil_div(1024, 256)"), 4);
  assert_int_equal(ival("ceil_div(0, 256)"), 0);
  assert_int_equal(ival("round_up(n, 256)"), 1024);
  assert_int_equal(ival("log2(1024)"), 10);
  assert_int_equal(ival("log2(n)"), 9);
  assert_int_equal(ival("is_pow2(256)"), 1);
  assert_int_equal(ival("is_pow2(n)"), 0);
  assert_int_equal(ival("is_pow2(0)"), 0);
  fails("ceil_div(n, 0)", "ceil_div needs a positive divisor, not 0 at column 1");
  fails("log2(0)", "log2 needs a positive argument, not 0 at column 1");
  fails("min(n)", "min takes at least 2 arguments, not 1 at column 1");
  fails("abs(1, 2)", "abs takes 1 argument, not 2 at column 1");
  fails("ceil_div(x, 2)", "ceil_div needs integer arguments at column 1");
  fails("foo(n)", "unknown function 'foo' at column 1");
  fails("round_up(9223372036854775807, 2)", "integer overflow in round_up at column 1");
}

static void syntax_errors_name_the_column(void **state) {
  fails("n + m2", "unknown name 'm2' at column 5");
  fails("(n + 1", "expected ')' at the end of the expression");
  fails("n + 1)", "unexpected ')' at column 6");
  fails("((n)", "expected ')' at the end of the expression");
  fails("n +", "expected a value at the end of the expression");
  fails("", "empty expression");
  fails("   ", "empty expression");
  fails("n @ 2", "unexpected '@' at column 3");
  fails("n m", "unexpected 'm' at column 3");
  fails("block.x + 1", "unknown name 'block.x' at column 1");
  fails("* 3", "unexpected '*' at column 1");
  fails("1 ? 2", "expected ':' at the end of the expression");
  fails("int", "a type name is not a value at column 1");
  /* Deep nesting is refused, not a stack overflow. */
  char deep[2048];
  size_t k = 0;
  for (int i = 0; i < 500; i++)
    deep[k++] = '(';
  deep[k++] = '1';
  for (int i = 0; i < 500; i++)
    deep[k++] = ')';
  deep[k] = '\0';
  ks_value v;
  assert_int_equal(ks_expr_eval(&ctx, deep, &env, &v), -1);
  assert_non_null(strstr(ctx.error, "nested too deeply"));
  for (k = 0; k < 300; k++)
    deep[k] = '-';
  strcpy(deep + k, "1");
  assert_int_equal(ks_expr_eval(&ctx, deep, &env, &v), -1);
  assert_non_null(strstr(ctx.error, "nested too deeply"));
  assert_int_equal(ks_expr_eval(&ctx, "((((((((((1))))))))))", &env, &v), 0);
  /* ?: chains nest too. */
  k = 0;
  for (int i = 0; i < 400; i++)
    k += (size_t)snprintf(deep + k, sizeof deep - k, "1?");
  strcpy(deep + k, "1");
  for (int i = 0; i < 400; i++)
    strcat(deep, ":0");
  assert_int_equal(ks_expr_eval(&ctx, deep, &env, &v), -1);
  assert_non_null(strstr(ctx.error, "nested too deeply"));
  assert_int_equal(ks_expr_eval(&ctx, "0 ? 1 : 0 ? 2 : 1 ? 3 : 4", &env, &v), 0);
  assert_int_equal(v.i, 3);
}

static void check_is_syntax_only(void **state) {
  assert_int_equal(ks_expr_check(&ctx, "(anything + 255) / 256"), 0);
  assert_int_equal(ks_expr_check(&ctx, "n / 0"), 0); /* not evaluated */
  assert_int_equal(ks_expr_check(&ctx, "n +"), -1);
  assert_string_equal(ctx.error, "expected a value at the end of the expression");
  assert_int_equal(ks_expr_check(&ctx, "nope(n)"), -1);
  assert_string_equal(ctx.error, "unknown function 'nope' at column 1");
}

static void counts(void **state) {
  unsigned long long c;
  assert_int_equal(ks_expr_eval_count(&ctx, "n * 4", &env, 1ULL << 40, &c), 0);
  assert_int_equal(c, 4000);
  assert_int_equal(ks_expr_eval_count(&ctx, "x * 2", &env, 100, &c), 0);
  assert_int_equal(c, 5);
  assert_int_equal(ks_expr_eval_count(&ctx, "x", &env, 100, &c), -1);
  assert_string_equal(ctx.error, "value 2.5 is not a whole number");
  assert_int_equal(ks_expr_eval_count(&ctx, "m - n", &env, 100, &c), -1);
  assert_string_equal(ctx.error, "value -993 is negative");
  assert_int_equal(ks_expr_eval_count(&ctx, "n", &env, 100, &c), -1);
  assert_string_equal(ctx.error, "value 1000 exceeds the limit 100");
}

static void dim3_forms(void **state) {
  unsigned d[3];
  assert_int_equal(ks_expr_eval_dim3(&ctx, "256", &env, d), 0);
  assert_true(d[0] == 256 && d[1] == 1 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "(n + 255) / 256", &env, d), 0);
  assert_true(d[0] == 4 && d[1] == 1 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3(n / 16, m)", &env, d), 0);
  assert_true(d[0] == 62 && d[1] == 7 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "(32, 8)", &env, d), 0);
  assert_true(d[0] == 32 && d[1] == 8 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "{2, 3, 4}", &env, d), 0);
  assert_true(d[0] == 2 && d[1] == 3 && d[2] == 4);
  assert_int_equal(ks_expr_eval_dim3(&ctx, " dim3{min(n, 5), (m + 1) * 2} ", &env, d), 0);
  assert_true(d[0] == 5 && d[1] == 16 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3(132 * 4)", &env, d), 0);
  assert_true(d[0] == 528 && d[1] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3()", &env, d), 0);
  assert_true(d[0] == 1 && d[1] == 1 && d[2] == 1);
  assert_int_equal(ks_expr_eval_dim3(&ctx, "((n))", &env, d), 0);
  assert_int_equal(d[0], 1000);
  /* Errors keep the column in the whole text. */
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3(n, q)", &env, d), -1);
  assert_string_equal(ctx.error, "unknown name 'q' at column 9");
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3(1, 2, 3, 4)", &env, d), -1);
  assert_string_equal(ctx.error, "a dim3 has at most 3 components at column 13");
  assert_int_equal(ks_expr_eval_dim3(&ctx, "(1, m - n)", &env, d), -1);
  assert_string_equal(ctx.error, "component y: value -993 is negative");
  assert_int_equal(ks_expr_eval_dim3(&ctx, "dim3(1, 2", &env, d), -1);
  assert_string_equal(ctx.error, "unbalanced brackets in dim3 at column 5");
  assert_int_equal(ks_expr_eval_dim3(&ctx, "big", &env, d), -1);
  assert_string_equal(ctx.error, "value 4611686018427387904 exceeds the limit 4294967295");
}

static void tables_chain(void **state) {
  const char *const inner_names[] = {"n", "k"};
  const ks_value inner_values[] = {{.is_int = true, .i = 5}, {.is_int = true, .i = 9}};
  ks_expr_table inner = {inner_names, inner_values, 2, &env};
  ks_expr_env e = {ks_expr_table_lookup, &inner};
  ks_value v;
  assert_int_equal(ks_expr_eval(&ctx, "n + k + m", &e, &v), 0); /* n shadowed, m from parent */
  assert_int_equal(v.i, 5 + 9 + 7);
  assert_int_equal(ks_expr_eval(&ctx, "n", NULL, &v), -1);
  assert_string_equal(ctx.error, "unknown name 'n' at column 1");
}

/* Random token soup: every result is a value or a message, never a crash
 * or undefined behaviour (the build runs under UBSan). */
static void fuzzed_expressions_never_crash(void **state) {
  static const char *const pieces[] = {
      "n", "m", "big", "x", "zero", "1", "0", "-", "+", "*", "/", "%", "<<", ">>", "(", ")",
      "?", ":", "&&", "||", "!", "~", "<", ">=", "==", "&", "|", "^", ",", "min(", "max(",
      "ceil_div(", "log2(", "is_pow2(", "abs(", "round_up(", "sizeof(", "float", "int", "(int)",
      "static_cast<long>(", "9223372036854775807", "0x7fffffffffffffff", "1e308", "2.5f", "63",
      "64", "dim3(", "{", "}", " ", "@", "1e", "0b", "08", "unsigned", "char", "size_t"};
  unsigned long long rng = 0x2545F4914F6CDD1DULL;
  char text[400];
  unsigned ok = 0;
  for (int round = 0; round < 20000; round++) {
    size_t len = 0;
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int n = 1 + (int)((rng >> 33) % 16);
    for (int i = 0; i < n && len < sizeof text - 40; i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      len += (size_t)snprintf(text + len, sizeof text - len, "%s ",
                              pieces[(rng >> 33) % (sizeof pieces / sizeof *pieces)]);
    }
    ks_value v;
    unsigned d[3];
    unsigned long long c;
    if (!ks_expr_eval(&ctx, text, &env, &v))
      ok++;
    else if (!strstr(ctx.error, "column") && !strstr(ctx.error, "end of the expression") &&
             !strstr(ctx.error, "empty expression"))
      fail_msg("'%s': no position in \"%s\"", text, ctx.error);
    (void)ks_expr_check(&ctx, text);
    (void)ks_expr_eval_dim3(&ctx, text, &env, d);
    (void)ks_expr_eval_count(&ctx, text, &env, 1000, &c);
  }
  assert_true(ok > 100);
}

static void dtypes_from_c_and_names(void **state) {
  static const struct {
    const char *c;
    ks_dtype t;
  } ok[] = {{"float", KS_DT_F32},
            {"const float", KS_DT_F32},
            {"double", KS_DT_F64},
            {"int", KS_DT_I32},
            {"const int", KS_DT_I32},
            {"unsigned int", KS_DT_U32},
            {"unsigned", KS_DT_U32},
            {"unsigned char", KS_DT_U8},
            {"char", KS_DT_I8},
            {"signed char", KS_DT_I8},
            {"short", KS_DT_I16},
            {"unsigned short int", KS_DT_U16},
            {"long", KS_DT_I64},
            {"long long", KS_DT_I64},
            {"unsigned long long", KS_DT_U64},
            {"long unsigned int", KS_DT_U64},
            {"size_t", KS_DT_U64},
            {"std::size_t", KS_DT_U64},
            {"int64_t", KS_DT_I64},
            {"uint8_t", KS_DT_U8},
            {"__half", KS_DT_F16},
            {"half", KS_DT_F16},
            {"__nv_bfloat16", KS_DT_BF16},
            {"volatile int", KS_DT_I32}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    ks_dtype t = KS_DT_NONE;
    if (!ks_dtype_from_c(ok[i].c, &t) || t != ok[i].t)
      fail_msg("'%s' gave %s", ok[i].c, ks_dtype_name(t));
  }
  static const char *const bad[] = {"T",      "float *", "bool",    "long double",
                                    "Params", "float4",  "int int", "unsigned float",
                                    "",       "const"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ks_dtype t;
    if (ks_dtype_from_c(bad[i], &t))
      fail_msg("'%s' should not be an element type", bad[i]);
  }
  ks_dtype t;
  assert_true(ks_dtype_parse("f32", &t) && t == KS_DT_F32);
  assert_true(ks_dtype_parse("bf16", &t) && t == KS_DT_BF16);
  assert_true(ks_dtype_parse("u8", &t) && t == KS_DT_U8);
  assert_true(ks_dtype_parse("unsigned int", &t) && t == KS_DT_U32);
  assert_false(ks_dtype_parse("flaot", &t));
  assert_int_equal(ks_dtype_size(KS_DT_F16), 2);
  assert_int_equal(ks_dtype_size(KS_DT_U64), 8);
  assert_int_equal(ks_dtype_size(KS_DT_NONE), 0);
  assert_string_equal(ks_dtype_name(KS_DT_I32), "i32");
  assert_true(ks_dtype_is_float(KS_DT_BF16));
  assert_false(ks_dtype_is_float(KS_DT_U8));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(precedence_as_in_c),
      cmocka_unit_test(associativity_left),
      cmocka_unit_test(literals),
      cmocka_unit_test(checked_integer_arithmetic),
      cmocka_unit_test(short_circuit_skips_errors),
      cmocka_unit_test(floats_mix_as_in_c),
      cmocka_unit_test(sizeof_types),
      cmocka_unit_test(functions),
      cmocka_unit_test(syntax_errors_name_the_column),
      cmocka_unit_test(check_is_syntax_only),
      cmocka_unit_test(counts),
      cmocka_unit_test(dim3_forms),
      cmocka_unit_test(tables_chain),
      cmocka_unit_test(fuzzed_expressions_never_crash),
      cmocka_unit_test(dtypes_from_c_and_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
