/* eval_judge: the GPU judge behind the search's evaluator table. */
#include <string.h>

#include "ks_search.h"

static int candidate(ks_ctx *ctx, ks_judge_evaluator *je, const ks_node *node, ks_arena *arena,
                     ks_candidate *out, const char **why) {
  if (ks_target_candidate(ctx, je->target, &node->variant, node->is_template, arena, out)) {
    *why = ks_arena_printf(arena, "its launch policy or guards cannot be evaluated: %s",
                           ctx->error);
    return -1;
  }
  return 0;
}

static int judge_precompile(void *self, ks_ctx *ctx, const ks_node *const *nodes, size_t n,
                            ks_arena *arena) {
  ks_judge_evaluator *je = self;
  ks_candidate *c = ks_arena_alloc(arena, (n + 1) * sizeof *c);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *why;
    if (!candidate(ctx, je, nodes[i], arena, &c[m], &why))
      m++;
  }
  return ks_judge_precompile(ctx, je->judge, &je->target->subject, c, m, arena);
}

static int judge_eval(void *self, ks_ctx *ctx, const ks_node *node, unsigned recheck,
                      ks_arena *arena, ks_eval *out) {
  ks_judge_evaluator *je = self;
  if (!node)
    return ks_judge_eval(ctx, je->judge, &je->target->subject, NULL, arena, out);
  ks_candidate c;
  const char *why;
  if (candidate(ctx, je, node, arena, &c, &why)) {
    memset(out, 0, sizeof *out);
    out->verdict = KS_VERDICT_INAPPLICABLE;
    out->reason = why;
    return 0;
  }
  /* A recheck draws fresh inputs: another base seed. */
  /* A recheck (of the search's winner) is the full protocol: a longer
   * timing loop than the search's quick one. */
  unsigned long long seed = je->judge->opts.seed;
  double cap = je->judge->opts.timing.max_seconds;
  bool screen = je->judge->opts.screen;
  if (recheck) {
    je->judge->opts.screen = false;
    je->judge->opts.seed = seed ^ (0x9e3779b97f4a7c15ULL * (recheck + 1));
    if (cap < 5)
      je->judge->opts.timing.max_seconds = 5;
  }
  int rc = ks_judge_eval(ctx, je->judge, &je->target->subject, &c, arena, out);
  je->judge->opts.seed = seed;
  je->judge->opts.timing.max_seconds = cap;
  je->judge->opts.screen = screen;
  return rc;
}

ks_evaluator ks_judge_evaluator_make(ks_judge_evaluator *self) {
  return (ks_evaluator){.self = self, .measured = true, .precompile = judge_precompile,
                        .eval = judge_eval};
}
