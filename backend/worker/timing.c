/* timing: how long a kernel takes, measured so that the search does not
 * chase noise (DESIGN.md, "Evaluation protocol").
 *
 * Each sample: in-place buffers restored from their pristine copies (a
 * kernel that accumulates into its output, or whose work depends on the
 * data, sees the same data every time), the L2 flushed by a memset of a
 * buffer twice its size, then events around the launch alone. Original and
 * candidate samples alternate, and which of the two goes first swaps every
 * round (A B B A A B ...), so that drift in clocks or temperature falls on
 * both alike. The SM clock is read from NVML while the sample runs and
 * after it; a sample taken below min_clock_fraction of the maximum clock or
 * while the GPU reports thermal or hardware slowdown is dropped and counted.
 * The loop stops when both kept series have at least min_samples and a
 * relative standard deviation under target_rsd, when either reaches
 * max_samples, or after max_seconds.
 *
 * Warm (ks_timing_options.warm): no restore and no flush before a sample,
 * so the data stay in L2 and as the last launch left them, the way a
 * program that launches the kernel back to back runs it; the warm-up
 * launches (without restores either) bring the data into L2 first. A
 * sample there is a batch: one launch untimed, so that the GPU is busy
 * while the start event and the timed launches are queued behind it, then
 * `batch` launches between the events, the time divided by `batch`.
 * Without that, a kernel of a few microseconds would be timed with the
 * host's launch latency in it (the flush's memset hides it in the cold
 * samples; on an NVIDIA H200 a 6 us transpose timed one launch at a time
 * came out 20% slower warm than flushed). `batch` makes a batch of the
 * faster kernel last about WARM_BATCH_MS, from one launch of each timed
 * after the warm-up, and is the same for both kernels. */
#include "worker.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void wk_timing_defaults(ks_timing_options *t) {
  if (!t->min_samples)
    t->min_samples = 10;
  if (!t->max_samples)
    t->max_samples = 200;
  if (t->max_samples < t->min_samples)
    t->max_samples = t->min_samples;
  if (!(t->target_rsd > 0))
    t->target_rsd = 0.005;
  if (!(t->max_seconds > 0))
    t->max_seconds = 5;
  if (!t->warmup)
    t->warmup = 3;
  if (!(t->min_clock_fraction > 0))
    t->min_clock_fraction = 0.75;
}

static double rsd(const ks_samples *s) {
  if (s->len < 2)
    return INFINITY;
  double mean = 0, var = 0;
  for (size_t i = 0; i < s->len; i++)
    mean += s->items[i];
  mean /= (double)s->len;
  for (size_t i = 0; i < s->len; i++)
    var += (s->items[i] - mean) * (s->items[i] - mean);
  var /= (double)(s->len - 1);
  return mean > 0 ? sqrt(var) / mean : INFINITY;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double wk_median(double *x, size_t n) {
  if (!n)
    return 0;
  qsort(x, n, sizeof *x, cmp_double);
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* The SM clock now, and whether it is fit for a sample; with no NVML every
 * sample is fit and the clock is 0. */
static bool clock_fit(wk_state *w, double fraction, int *mhz) {
  *mhz = 0;
  if (!w->have_nvml)
    return true;
  ks_nvml_sample s = {.sm_clock_mhz = -1, .sm_clock_max_mhz = w->info.sm_clock_max_mhz};
  unsigned v = 0;
  enum { NVML_CLOCK_SM = 1 };
  /* Only the two readings the filter needs: a full ks_nvml_sample_device
   * costs several calls per sample. */
  if (w->nvml.DeviceGetClockInfo(w->nvml_dev, NVML_CLOCK_SM, &v) == 0)
    s.sm_clock_mhz = (int)v;
  if (w->nvml.DeviceGetClocksEventReasons)
    s.has_reasons = w->nvml.DeviceGetClocksEventReasons(w->nvml_dev, &s.reasons) == 0;
  *mhz = s.sm_clock_mhz > 0 ? s.sm_clock_mhz : 0;
  return !ks_nvml_sample_throttled(&s, fraction);
}

typedef struct series {
  wk_kernel *kernel;
  ks_samples *kept;
} series;

typedef struct timer {
  wk_state *w;
  ks_arena *arena;
  wk_buffers *b;
  CUevent start, stop;
  const ks_timing_options *opts;
  ks_timing *out;
  unsigned round;
  unsigned batch;     /* launches per sample (warm); 1 otherwise */
} timer;

enum { WARM_MAX_BATCH = 100 };
static const double WARM_BATCH_MS = 0.1;

/* One sample of one kernel; appends it to its series unless the clock
 * filter drops it. */
static int sample(timer *t, series *s, wk_outcome *oc) {
  wk_state *w = t->w;
  ks_arena *arena = t->arena;
  bool cold = !t->opts->warm;
  if ((cold && wk_buffers_restore(w, arena, t->b, true, oc)) ||
      (cold && wk_cuda(w, arena, oc,
                       w->cu.MemsetD8Async(w->flush, (unsigned char)t->round, w->flush_bytes, NULL),
                       KS_RUN_LAUNCH_FAILED, NULL, "cuMemsetD8 (L2 flush)")) ||
      (!cold && wk_launch(w, arena, s->kernel, t->b->params, false, oc)) ||
      wk_cuda(w, arena, oc, w->cu.EventRecord(t->start, NULL), KS_RUN_LAUNCH_FAILED, NULL,
              "cuEventRecord"))
    return -1;
  for (unsigned i = 0; i < t->batch; i++)
    if (wk_launch(w, arena, s->kernel, t->b->params, false, oc))
      return -1;
  if (wk_cuda(w, arena, oc, w->cu.EventRecord(t->stop, NULL), KS_RUN_LAUNCH_FAILED, NULL,
              "cuEventRecord"))
    return -1;
  int mhz_during, mhz_after;
  bool fit = clock_fit(w, t->opts->min_clock_fraction, &mhz_during);
  if (wk_cuda(w, arena, oc, w->cu.EventSynchronize(t->stop), KS_RUN_CRASHED, s->kernel->label,
              "kernel execution"))
    return -1;
  fit = clock_fit(w, t->opts->min_clock_fraction, &mhz_after) && fit;
  float ms = 0;
  if (wk_cuda(w, arena, oc, w->cu.EventElapsedTime(&ms, t->start, t->stop), KS_RUN_CRASHED, NULL,
              "cuEventElapsedTime"))
    return -1;
  if (!fit) {
    t->out->dropped_low_clock++;
    return 0;
  }
  *ks_array_push(arena, s->kept) = ms / t->batch;
  for (int i = 0; i < 2; i++) {
    double mhz = i ? mhz_after : mhz_during;
    if (mhz <= 0)
      continue;
    if (t->out->sm_clock_min_mhz == 0 || mhz < t->out->sm_clock_min_mhz)
      t->out->sm_clock_min_mhz = mhz;
    if (mhz > t->out->sm_clock_max_mhz)
      t->out->sm_clock_max_mhz = mhz;
  }
  return 0;
}

/* Makes w->flush hold `bytes`, reusing the last request's when it fits. */
static int flush_buffer(wk_state *w, ks_arena *arena, size_t bytes, wk_outcome *oc) {
  if (w->flush && w->flush_bytes == bytes)
    return 0;
  if (w->flush)
    w->cu.MemFree(w->flush);
  w->flush = 0;
  w->flush_bytes = 0;
  if (wk_cuda(w, arena, oc, w->cu.MemAlloc(&w->flush, bytes), KS_RUN_LAUNCH_FAILED, NULL,
              "cuMemAlloc (L2 flush buffer)"))
    return -1;
  w->flush_bytes = bytes;
  return 0;
}

/* t->batch for warm samples: one launch of each kernel timed (after an
 * untimed one, as in a sample), the faster one's batch made to last about
 * WARM_BATCH_MS. */
static int warm_batch(timer *t, series *all, size_t n, wk_outcome *oc) {
  wk_state *w = t->w;
  double fastest = 0;
  for (size_t k = 0; k < n; k++) {
    float ms = 0;
    if (wk_launch(w, t->arena, all[k].kernel, t->b->params, false, oc) ||
        wk_cuda(w, t->arena, oc, w->cu.EventRecord(t->start, NULL), KS_RUN_LAUNCH_FAILED, NULL,
                "cuEventRecord") ||
        wk_launch(w, t->arena, all[k].kernel, t->b->params, false, oc) ||
        wk_cuda(w, t->arena, oc, w->cu.EventRecord(t->stop, NULL), KS_RUN_LAUNCH_FAILED, NULL,
                "cuEventRecord") ||
        wk_cuda(w, t->arena, oc, w->cu.EventSynchronize(t->stop), KS_RUN_CRASHED,
                all[k].kernel->label, "kernel execution") ||
        wk_cuda(w, t->arena, oc, w->cu.EventElapsedTime(&ms, t->start, t->stop), KS_RUN_CRASHED,
                NULL, "cuEventElapsedTime"))
      return -1;
    if (ms > 0 && (fastest == 0 || ms < fastest))
      fastest = ms;
  }
  double batch = fastest > 0 ? ceil(WARM_BATCH_MS / fastest) : 1;
  t->batch = batch < 1 ? 1 : batch > WARM_MAX_BATCH ? WARM_MAX_BATCH : (unsigned)batch;
  return 0;
}

int wk_time(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base, wk_kernel *cand,
            const ks_timing_options *opts, ks_timing *out, wk_outcome *oc) {
  ks_timing_options o = *opts;
  wk_timing_defaults(&o);
  size_t flush = o.flush_bytes ? (size_t)o.flush_bytes
                 : w->info.l2_bytes ? (size_t)(2 * w->info.l2_bytes)
                                    : (size_t)128 << 20;
  timer t = {w, arena, b, NULL, NULL, &o, out, 0, 1};
  series all[2] = {{base, &out->base_ms}, {cand, &out->cand_ms}};
  size_t nseries = cand ? 2 : 1;
  int rc = -1;
  long long t0 = ks_wire_now_ms();

  if ((!o.warm && flush_buffer(w, arena, flush, oc)) ||
      wk_cuda(w, arena, oc, w->cu.EventCreate(&t.start, CU_EVENT_DEFAULT), KS_RUN_LAUNCH_FAILED,
              NULL, "cuEventCreate") ||
      wk_cuda(w, arena, oc, w->cu.EventCreate(&t.stop, CU_EVENT_DEFAULT), KS_RUN_LAUNCH_FAILED,
              NULL, "cuEventCreate") ||
      wk_buffers_prepare(w, arena, b, 1, oc))
    goto out;
  /* Warm-up: first-launch costs (module upload, instruction cache) and the
   * GPU's climb from idle clocks stay out of the samples. */
  for (unsigned i = 0; i < o.warmup; i++)
    for (size_t k = 0; k < nseries; k++)
      if ((!o.warm && wk_buffers_restore(w, arena, b, true, oc)) ||
          wk_launch(w, arena, all[k].kernel, b->params, true, oc))
        goto out;

  if (o.warm && warm_batch(&t, all, nseries, oc))
    goto out;
  for (;;) {
    for (size_t k = 0; k < nseries; k++)
      if (sample(&t, &all[(t.round + k) % nseries], oc))
        goto out;
    t.round++;
    bool steady = true, full = false;
    for (size_t k = 0; k < nseries; k++) {
      steady = steady && all[k].kept->len >= o.min_samples && rsd(all[k].kept) < o.target_rsd;
      full = full || all[k].kept->len >= o.max_samples;
    }
    double seconds = (double)(ks_wire_now_ms() - t0) / 1e3;
    /* The round cap only matters when nearly every sample is dropped and
     * the time cap is large. */
    if (steady || full || seconds >= o.max_seconds || t.round >= 20 * o.max_samples)
      break;
  }
  rc = 0;
out:
  out->seconds = (double)(ks_wire_now_ms() - t0) / 1e3;
  if (t.start)
    w->cu.EventDestroy(t.start);
  if (t.stop)
    w->cu.EventDestroy(t.stop);
  return rc;
}
