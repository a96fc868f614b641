/* rules_launch: not written yet. */
#include "rules_int.h"

static int not_yet(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena, ks_rule_result *out) {
  (void)ctx; (void)in; (void)param; (void)arena;
  out->applied = false;
  out->reason = "not written yet";
  return 0;
}
const ks_rule ks_rule_block = {"block", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_grid_stride = {"grid_stride", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_launch_bounds = {"launch_bounds", "(not written yet)", false, NULL, 0, not_yet};
