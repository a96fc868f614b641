/* rules_smem: not written yet. */
#include "rules_int.h"

static int not_yet(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena, ks_rule_result *out) {
  (void)ctx; (void)in; (void)param; (void)arena;
  out->applied = false;
  out->reason = "not written yet";
  return 0;
}
const ks_rule ks_rule_smem_histogram = {"smem_histogram", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_smem_transpose = {"smem_transpose", "(not written yet)", false, NULL, 0, not_yet};
