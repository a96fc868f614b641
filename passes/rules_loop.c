/* rules_loop: not written yet. */
#include "rules_int.h"

static int not_yet(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena, ks_rule_result *out) {
  (void)ctx; (void)in; (void)param; (void)arena;
  out->applied = false;
  out->reason = "not written yet";
  return 0;
}
const ks_rule ks_rule_unroll = {"unroll", "(not written yet)", false, NULL, 0, not_yet};
const ks_rule ks_rule_fast_math = {"fast_math", "(not written yet)", false, NULL, 0, not_yet};
