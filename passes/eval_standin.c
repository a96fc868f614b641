/* eval_standin: a deterministic stand-in for the GPU judge, so that CI can
 * test the search on a machine without a GPU. Its "speedups" are a fixed
 * function of the technique chain and a hash of the text: they exercise
 * the search's logic (selection, placement, budgets, resume) and mean
 * nothing about any device. Reports made with it say so.
 *
 * KS_STANDIN_SLOW=TEXT:MS makes each evaluation of a variant whose source
 * contains TEXT take MS milliseconds, so the tests can give the budgets a
 * slow kernel as the GPU would.
 *
 * KS_STANDIN_RACE=TEXT makes a variant whose source contains TEXT behave as
 * a variant of a racing original does: on its one seed the original's two
 * runs on the same inputs differ (as the worker reports it,
 * base_nondeterministic), and about half the variants (by a hash of the
 * text) come out WRONG, their output differing as the original's own runs
 * do (the seed, the original renamed, is not among them, so the search
 * goes on).
 *
 * Several stand-ins (ks_standin_evaluator_make, one per worker of
 * --devices) give the same numbers: only the device and worker recorded
 * differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ks_hash.h"
#include "ks_search.h"

static double factor(const char *t, size_t n) {
  if (n > 4 && !strncmp(t, "llm:", 4)) { /* a model's step is rated by its technique */
    t += 4;
    n -= 4;
  }
  static const struct {
    const char *tag;
    double f;
  } table[] = {
      {"block=64", 0.95},     {"block=128", 1.02},   {"block=256", 1.04},
      {"block=512", 0.98},    {"block=1024", 0.9},   {"vec", 1.25},
      {"restrict", 1.05},     {"coarsen=2", 1.03},   {"coarsen=4", 1.06},
      {"coarsen=8", 0.97},    {"unroll", 1.02},      {"launch_bounds", 1.01},
      {"grid_stride", 1.03},  {"fast_math", 1.1},    {"warp_", 2.0},
      {"smem_", 3.0},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    size_t k = strlen(table[i].tag);
    if (n >= k && !strncmp(t, table[i].tag, k))
      return table[i].f;
  }
  char hex[KS_HASH_HEX];
  ks_sha256_hex(t, n, hex);
  return 0.9 + (double)(hex[0] % 16) * 0.02;
}

static unsigned long long text_hash(const char *s, unsigned salt) {
  unsigned long long h = 1469598103934665603ULL ^ salt;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void slow_down(const char *src) {
  const char *spec = getenv("KS_STANDIN_SLOW");
  const char *colon = spec ? strrchr(spec, ':') : NULL;
  if (!colon || colon == spec)
    return;
  char text[128];
  size_t n = (size_t)(colon - spec) < sizeof text - 1 ? (size_t)(colon - spec) : sizeof text - 1;
  memcpy(text, spec, n);
  text[n] = '\0';
  long ms = strtol(colon + 1, NULL, 10);
  if (ms > 0 && strstr(src, text)) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* KS_STANDIN_RACE: a seed check in which the original's runs differed,
 * and the variant's output too when `differs`. */
static void racing_original(ks_arena *arena, const char *src, bool differs, ks_eval *out) {
  ks_size_report *sr = ks_array_push(arena, &out->sizes);
  sr->size = "timed";
  sr->timed = true;
  sr->guards_hold = true;
  ks_seed_check *sc = ks_array_push(arena, &sr->seeds);
  sc->seed = 1;
  sc->base_nondeterministic = true;
  ks_output_check *o = ks_array_push(arena, &sc->outputs);
  o->buffer = "y";
  o->count = 2048;
  o->first_mismatch = -1;
  o->ref_first_mismatch = o->capture_first_diff = -1;
  if (differs) {
    o->mismatches = 1 + text_hash(src, 7) % 64;
    o->first_mismatch = (long long)(text_hash(src, 8) % 2048);
    o->expected = 1.0;
    o->got = 1.02;
    o->max_abs_error = 0.02;
    o->max_rel_error = 0.02;
    out->verdict = KS_VERDICT_WRONG;
    out->reason = ks_arena_printf(arena, "output 'y' differs at %llu of 2048 elements; first at "
                                         "index %lld (stand-in judge: the original races)",
                                  o->mismatches, o->first_mismatch);
  }
}

static int standin_eval(void *self, ks_ctx *ctx, const ks_node *node, unsigned recheck,
                        ks_arena *arena, ks_eval *out) {
  const ks_standin *me = self;
  memset(out, 0, sizeof *out);
  out->device = me ? me->device : 0;
  out->worker = me ? (int)me->worker : 0;
  /* A worker killed mid-run, as a judge whose worker process cannot be
   * started again (the search costs it this candidate). */
  if (node && ks_fault(ctx, "standin_worker"))
    return ks_fail(ctx, "stand-in worker %u (device %d) died (injected fault standin_worker)",
                   me ? me->worker : 0, out->device);
  out->timed = true;
  out->base_median_ms = 1.0;
  if (!node) {
    out->verdict = KS_VERDICT_BASELINE;
    out->reason = "stand-in judge: not a measurement";
    return 0;
  }
  const char *src = node->variant.source ? node->variant.source : "";
  slow_down(src);
  const char *chain = node->techniques ? node->techniques : "";
  if (strstr(src, "KS_STANDIN_NOCOMPILE")) {
    /* As NVRTC would say it, about the variant's own file. */
    const char *file = node->variant.file ? node->variant.file : "variant.cu";
    out->verdict = KS_VERDICT_COMPILE_ERROR;
    out->reason = "stand-in judge: does not compile";
    out->compile_log = ks_arena_printf(arena,
                                       "%s(3): error: identifier \"KS_STANDIN_NOCOMPILE\" is "
                                       "undefined\n\n1 error detected in the compilation of "
                                       "\"unit.cu\".\n",
                                       file);
    return 0;
  }
  const char *race = getenv("KS_STANDIN_RACE");
  if (race && *race && strstr(src, race)) {
    /* The seed passes, as the racing original of a public program passed
     * its own check: the search goes on. */
    bool differs = *chain && text_hash(src, 5) % 2;
    racing_original(arena, src, differs, out);
    if (differs)
      return 0;
  }
  if (strstr(src, "KS_STANDIN_WRONG") || strstr(chain, "wrong")) {
    out->verdict = KS_VERDICT_WRONG;
    out->reason = "stand-in judge: marked wrong";
    return 0;
  }
  double speedup = 1;
  const char *t = chain;
  while (*t) {
    const char *end = strstr(t, " > ");
    size_t len = end ? (size_t)(end - t) : strlen(t);
    speedup *= factor(t, len);
    t += len + (end ? 3 : 0);
  }
  /* A little noise, different per recheck, as a real judge would see. */
  unsigned long long h = text_hash(src, recheck);
  speedup *= 1 + ((double)(h % 1001) - 500) * 1e-5;
  out->speedup = speedup;
  out->speedup_low = speedup * 0.995;
  out->speedup_high = speedup * 1.005;
  out->cand_median_ms = 1.0 / speedup;
  out->cand_registers = 16 + (int)(h % 96);
  out->base_registers = 32;
  out->cand_bw_fraction = speedup * 0.45 < 0.95 ? speedup * 0.45 : 0.95;
  out->verdict = speedup > 1.01 ? KS_VERDICT_FAST : speedup < 0.99 ? KS_VERDICT_SLOW
                                                                     : KS_VERDICT_SAME;
  out->reason = ks_arena_printf(arena, "stand-in judge: %.3fx (not a measurement)", speedup);
  return 0;
}

ks_evaluator ks_standin_evaluator(void) {
  return (ks_evaluator){.self = NULL, .measured = false, .precompile = NULL,
                        .eval = standin_eval};
}

ks_evaluator ks_standin_evaluator_make(ks_standin *self) {
  return (ks_evaluator){.self = self, .measured = false, .device = self->device,
                        .precompile = NULL, .eval = standin_eval};
}
