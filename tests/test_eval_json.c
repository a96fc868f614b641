/* An evaluation's JSON (backend/eval_json.c) with the judge's compiler and
 * warm timing: what the store keeps (the complete form) reads back field
 * for field, and `check --json`'s short form leaves out what did not
 * happen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ks_eval_json.h"

static ks_eval warm_eval(void) {
  return (ks_eval){.verdict = KS_VERDICT_FAST, .reason = "1.18x",
                   .compiler = "nvcc",
                   .compiler_note = "the variant: nvcc rejected it (x): compiled with NVRTC",
                   .machine_code_note = "NVRTC's machine code for the original differs",
                   .timed = true, .base_median_ms = 0.118, .cand_median_ms = 0.1,
                   .speedup = 1.18, .speedup_low = 1.15, .speedup_high = 1.2,
                   .warm_timed = true, .warm_bytes = (1ull << 54) + 3,
                   .base_warm_samples = 40, .cand_warm_samples = 41,
                   .base_warm_median_ms = 0.0495, .cand_warm_median_ms = 0.05,
                   .warm_speedup = 0.99, .warm_speedup_low = 0.97, .warm_speedup_high = 1.01};
}

static void complete_round_trip(void **state) {
  (void)state;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_eval e = warm_eval();
  char *text = ks_eval_json_text(&e, KS_EVAL_JSON_COMPLETE);
  assert_non_null(text);
  ks_eval g;
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_string_equal(g.compiler, "nvcc");
  assert_string_equal(g.compiler_note, e.compiler_note);
  assert_string_equal(g.machine_code_note, e.machine_code_note);
  assert_true(g.warm_timed);
  assert_true(g.warm_bytes == (1ull << 54) + 3); /* beyond a double's integers */
  assert_int_equal(g.base_warm_samples, 40);
  assert_int_equal(g.cand_warm_samples, 41);
  assert_true(g.base_warm_median_ms == 0.0495);
  assert_true(g.cand_warm_median_ms == 0.05);
  assert_true(g.warm_speedup == 0.99);
  assert_true(g.warm_speedup_low == 0.97 && g.warm_speedup_high == 1.01);
  /* The flushed timing, which the verdict comes from, is untouched. */
  assert_true(g.speedup == 1.18 && g.cand_median_ms == 0.1);
  free(text);

  /* Not timed warm: the complete form says so, and the numbers stay. */
  e.warm_timed = false;
  e.compiler = "nvrtc";
  e.compiler_note = e.machine_code_note = NULL;
  text = ks_eval_json_text(&e, KS_EVAL_JSON_COMPLETE);
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_false(g.warm_timed);
  assert_true(g.base_warm_median_ms == 0.0495);
  assert_string_equal(g.compiler, "nvrtc");
  assert_null(g.compiler_note);
  assert_null(g.machine_code_note);
  free(text);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void short_form(void **state) {
  (void)state;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_eval e = warm_eval();
  char *text = ks_eval_json_text(&e, KS_EVAL_JSON_VARIANT);
  assert_non_null(strstr(text, "\"compiler\":\"nvcc\""));
  assert_non_null(strstr(text, "\"warm\":{"));
  assert_non_null(strstr(text, "\"variant_median_ms\":0.05"));
  ks_eval g;
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_true(g.warm_timed && g.warm_speedup == 0.99);
  free(text);
  /* A baseline timed warm has the original's numbers only. */
  ks_eval base = {.verdict = KS_VERDICT_BASELINE, .compiler = "nvrtc", .timed = true,
                  .base_median_ms = 0.2, .warm_timed = true, .warm_bytes = 1000,
                  .base_warm_median_ms = 0.1, .base_warm_samples = 12, .cand_warm_median_ms = 7};
  text = ks_eval_json_text(&base, 0);
  assert_non_null(strstr(text, "\"original_median_ms\":0.1"));
  assert_null(strstr(text, "\"speedup\":"));
  assert_null(strstr(text, "compiler_note"));
  free(text);
  /* Not timed warm: "warm" is null; no compiler recorded: null. */
  ks_eval plain = {.verdict = KS_VERDICT_SAME, .timed = true, .base_median_ms = 1};
  text = ks_eval_json_text(&plain, KS_EVAL_JSON_VARIANT);
  assert_non_null(strstr(text, "\"warm\":null"));
  assert_non_null(strstr(text, "\"compiler\":null"));
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_false(g.warm_timed);
  assert_null(g.compiler);
  free(text);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(complete_round_trip),
      cmocka_unit_test(short_form),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
