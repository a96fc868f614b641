/* eval_judge: the GPU judge behind the search's evaluator table. */
#include <pthread.h>
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
  /* Machine code judged before: its verdict again, not a second run. */
  char digest[65];
  bool have_digest = false;
  if (!recheck) {
    ks_ctx scratch;
    ks_ctx_init(&scratch, "search");
    scratch.verbosity = KS_LOG_ERROR;
    have_digest = !ks_judge_digest(&scratch, je->judge, &je->target->subject, &c, arena, digest);
    ks_ctx_release(&scratch);
  }
  /* With several devices the table is the pool's, shared behind a lock,
   * and a candidate whose machine code another worker is judging right now
   * waits for that verdict instead of running it a second time: the same
   * measurements serve both, as with one worker. */
  ks_judge_evaluator *tab = je->shared ? je->shared : je;
  size_t mine = 0;
  bool registered = false;
  if (je->shared)
    pthread_mutex_lock(&tab->lock);
  for (size_t i = 0; have_digest && i < tab->judged.len; i++) {
    const ks_judged_code *j = &tab->judged.items[i];
    if (strcmp(j->digest, digest) || j->failed)
      continue;
    while (tab->judged.items[i].pending)
      pthread_cond_wait(&tab->judged_done, &tab->lock);
    j = &tab->judged.items[i]; /* the table may have grown meanwhile */
    if (j->failed)
      continue;
    memset(out, 0, sizeof *out);
    out->verdict = j->verdict;
    out->speedup = j->speedup;
    out->speedup_low = j->speedup_low;
    out->speedup_high = j->speedup_high;
    out->base_median_ms = j->base_ms;
    out->cand_median_ms = j->cand_ms;
    out->cand_bw_fraction = j->bw_fraction;
    out->cand_registers = j->registers;
    out->reason = ks_arena_printf(arena, "the same machine code and launch as variant %lld "
                                         "(%s, %.3fx): not run again",
                                  j->node, ks_verdict_name(j->verdict), j->speedup);
    out->device = je->judge->opts.device;
    je->reused++;
    if (je->shared)
      pthread_mutex_unlock(&tab->lock);
    return 0;
  }
  if (je->shared && have_digest) {
    ks_judged_code jc = {.pending = true, .node = node->id};
    memcpy(jc.digest, digest, sizeof jc.digest);
    mine = tab->judged.len;
    *ks_array_push(&tab->arena, &tab->judged) = jc;
    registered = true;
  }
  if (je->shared)
    pthread_mutex_unlock(&tab->lock);
  /* A recheck (of the search's winner) draws fresh inputs (another base
   * seed) and runs the full protocol: a longer timing loop than the
   * search's quick one. */
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
  if ((!rc && have_digest) || registered) {
    ks_judged_code jc = {.verdict = out->verdict, .speedup = out->speedup,
                         .speedup_low = out->speedup_low, .speedup_high = out->speedup_high,
                         .base_ms = out->base_median_ms, .cand_ms = out->cand_median_ms,
                         .bw_fraction = out->cand_bw_fraction, .registers = out->cand_registers,
                         .node = node->id, .failed = rc != 0};
    memcpy(jc.digest, digest, sizeof jc.digest);
    if (je->shared)
      pthread_mutex_lock(&tab->lock);
    if (registered)
      tab->judged.items[mine] = jc; /* no longer pending: wake who waits */
    else
      *ks_array_push(&tab->arena, &tab->judged) = jc;
    if (je->shared) {
      pthread_cond_broadcast(&tab->judged_done);
      pthread_mutex_unlock(&tab->lock);
    }
  }
  return rc;
}

void ks_judge_evaluator_release(ks_judge_evaluator *self) {
  ks_arena_release(&self->arena);
  memset(&self->judged, 0, sizeof self->judged);
  pthread_cond_destroy(&self->judged_done);
  pthread_mutex_destroy(&self->lock);
}

ks_evaluator ks_judge_evaluator_make(ks_judge_evaluator *self) {
  pthread_mutex_init(&self->lock, NULL);
  pthread_cond_init(&self->judged_done, NULL);
  return (ks_evaluator){.self = self, .measured = true,
                        .device = self->judge ? self->judge->opts.device : 0,
                        .precompile = judge_precompile, .eval = judge_eval};
}
