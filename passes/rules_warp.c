/* rules_warp: not written yet. */
#include "rules_int.h"

static int not_yet(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena, ks_rule_result *out) {
  (void)ctx; (void)in; (void)param; (void)arena;
  out->applied = false;
  out->reason = "not written yet";
  return 0;
}
const ks_rule ks_rule_warp_reduce = {"warp_reduce", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_warp_atomic = {"warp_atomic", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_warp_rows = {"warp_rows", "(not written yet)", false, NULL, 0, not_yet};
