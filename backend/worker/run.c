/* run: one run request from start to end, and the ceilings measurement.
 *
 * Load both kernels (attributes read, shared memory opted in) and the fp64
 * reference when there is one, allocate the workload's buffers once (and
 * the reference's, widened), verify every seed, then time on the first seed's
 * inputs and (unless the timing is warm) recheck: fresh inputs from recheck_seed, the candidate run
 * right after its timed launches, then the original, compared. A candidate
 * that caches results or skips work once it has been called a few times
 * passes the seeds and fails there. A replay runs the original alone on a
 * captured workload instead of verifying, and compares its outputs with
 * the capture's. Everything is released on the one way out, whatever
 * failed. */
#include "worker.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double wk_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Inputs for timing when the request verifies nothing: some fixed seed. */
enum { TIMING_SEED = 0x7133 };

static int check_workload(ks_arena *arena, const ks_workload *work, wk_outcome *oc) {
  for (size_t i = 0; i < work->args.len; i++) {
    const ks_warg *a = &work->args.items[i];
    const char *why = NULL;
    if (a->kind == KS_ARG_BUFFER && a->buffer >= work->buffers.len) {
      why = ks_arena_printf(arena, "argument %zu names buffer %zu of %zu", i, a->buffer,
                            work->buffers.len);
    } else if (a->kind == KS_ARG_BUFFER) {
      /* A pointer one past the end is a valid C pointer; beyond, it is not
       * into this buffer at all. */
      const ks_wbuffer *b = &work->buffers.items[a->buffer];
      unsigned long long esize = ks_wire_dtype_size(b->dtype);
      if (esize && b->count <= ULLONG_MAX / esize && a->offset > b->count * esize)
        why = ks_arena_printf(arena, "argument %zu points %llu bytes into buffer %s of %llu "
                                     "elements of %s", i, a->offset, b->name ? b->name : "?",
                              b->count, ks_wire_dtype_name(b->dtype));
    } else if (a->kind == KS_ARG_BYTES && (!a->bytes || !a->size)) {
      why = ks_arena_printf(arena, "argument %zu passes no bytes", i);
    }
    if (why) {
      oc->status = KS_RUN_LAUNCH_FAILED;
      oc->error = why;
      return -1;
    }
  }
  return 0;
}

/* The 4 KiB pages in which two copies differ (the profile's account of a
 * compare that took long). */
static size_t pages_differing(const unsigned char *a, const unsigned char *b, size_t bytes) {
  size_t n = 0;
  for (size_t k = 0; k < bytes; k += 4096)
    n += memcmp(a + k, b + k, bytes - k < 4096 ? bytes - k : 4096) != 0;
  return n;
}

/* The candidate's last run sees fresh inputs but its outputs as the timing
 * loop left them, as in an application that reuses its buffers: a variant
 * that skips work when its output already looks computed leaves it stale
 * here. (Poisoning first would let such a variant compute, pass, and keep
 * its skipped timed launches.) */
static int recheck(wk_state *w, ks_arena *arena, const ks_workload *work, wk_buffers *b,
                   wk_kernel *base, wk_kernel *cand, wk_reference *ref, unsigned long long seed,
                   ks_output_checks *out, wk_outcome *oc) {
  double t0;
  if (wk_buffers_fill(w, arena, b, seed, oc) || wk_buffers_prepare(w, arena, b, 0, oc) ||
      wk_launch(w, arena, cand, b->params, true, oc) || wk_buffers_download(w, arena, b, 2, oc) ||
      wk_buffers_prepare(w, arena, b, 1, oc) || wk_launch(w, arena, base, b->params, true, oc) ||
      wk_buffers_download(w, arena, b, 0, oc))
    return -1;
  t0 = wk_now();
  wk_compare_outputs(arena, b, 0, 2, -1, out);
  w->t_compare += wk_now() - t0;
  /* With the reference (a request that has one), the recheck excuses what
   * verification excuses: a reordered sum differs from the original here
   * as it did there (captured inputs are the same for every seed). Only a
   * mismatch can be excused, so the reference runs only where there is
   * one: on a large workload its widened buffers, its fill and its
   * element-by-element comparison cost more than the two runs above. It
   * reads the host copies of this seed's inputs, which the runs left as
   * they were. */
  bool mismatch = false;
  for (size_t i = 0; i < out->len; i++)
    mismatch = mismatch || out->items[i].mismatches;
  if (ref && mismatch) {
    if (!ref->allocated) {
      if (wk_buffers_alloc(w, arena, wk_ref_workload(arena, work), &ref->bufs, oc)) {
        oc->kernel = "ref";
        return -1;
      }
      ref->allocated = true;
    }
    if (wk_ref_run(w, arena, b, ref, oc))
      return -1;
    t0 = wk_now();
    wk_ref_compare(b, 0, 2, &ref->bufs, out);
    w->t_compare += wk_now() - t0;
  }
  if (w->profile)
    for (size_t i = 0; i < b->len; i++) {
      const wk_buffer *x = &b->items[i];
      if (!x->slot[0] || !x->slot[2])
        continue;
      double t1 = wk_now();
      bool same = memcmp(x->slot[0], x->slot[2], x->bytes) == 0;
      double t2 = wk_now();
      fprintf(stderr,
              "kernelsmith-worker: profile: recheck buffer %s: %zu bytes, dtype %d, role %d, "
              "same %d (memcmp %.1f ms), pages differing %zu, from the input %zu\n",
              wk_name(x), x->bytes, (int)x->spec->dtype, (int)x->spec->role, same,
              1e3 * (t2 - t1), pages_differing(x->slot[0], x->slot[2], x->bytes),
              x->input ? pages_differing(x->slot[0], x->input, x->bytes) : 0);
    }
  return 0;
}

void wk_run(wk_state *w, ks_arena *arena, const ks_run_request *req, ks_run_result *res) {
  memset(res, 0, sizeof *res);
  wk_outcome oc = {KS_RUN_OK, NULL, NULL};
  wk_kernel base = {0}, cand = {0};
  wk_buffers *bufs = NULL;
  wk_reference ref = {0};
  const ks_workload *work = req->work;
  bool have_cand = req->cand.cubin != NULL;
  /* The reference serves verification and the recheck after a flushed
   * timing; a replay verifies nothing. */
  bool have_ref = req->ref.cubin != NULL && have_cand && !req->replay &&
                  ((req->verify && req->nseeds) ||
                   (req->time && !req->timing.warm && !req->no_recheck));
  /* A zeroed launch means "the original's" (a variant with no policy). */
  ks_launch_cfg cand_launch = req->cand_launch;
  double t_start = wk_now(), t_load = 0, t_alloc = 0, t_verify = 0, t_time = 0, t_recheck = 0;
  w->t_fill = w->t_download = w->t_compare = 0;
  if (!cand_launch.grid[0] && !cand_launch.block[0])
    cand_launch = work->launch;

  if (check_workload(arena, work, &oc) ||
      wk_kernel_load(w, arena, &req->base, "base", &work->launch, &base, &oc))
    goto out;
  res->base_registers = base.registers;
  res->base_spill_bytes = base.local_bytes;
  res->base_static_smem = base.static_smem;
  if (have_cand) {
    if (wk_kernel_load(w, arena, &req->cand, "cand", &cand_launch, &cand, &oc))
      goto out;
    res->cand_registers = cand.registers;
    res->cand_spill_bytes = cand.local_bytes;
    res->cand_static_smem = cand.static_smem;
  }
  if (have_ref && wk_ref_refusal(work)) {
    const char *why = ks_arena_printf(arena, "ref: %s", wk_ref_refusal(work));
    oc = (wk_outcome){KS_RUN_LAUNCH_FAILED, why, "ref"};
    goto out;
  }
  if (have_ref) {
    ks_launch_cfg ref_launch = wk_ref_launch(&work->launch);
    if (wk_kernel_load(w, arena, &req->ref, "ref", &ref_launch, &ref.kernel, &oc))
      goto out;
  }
  t_load = wk_now();
  if (wk_pool_acquire(w, arena, work, &bufs, &oc))
    goto out;
  t_alloc = wk_now();
  /* Verification needs the reference's buffers on every seed; the recheck
   * allocates them only when it needs them (below). */
  ref.allocated = have_ref && req->verify && req->nseeds;
  if (ref.allocated && wk_buffers_alloc(w, arena, wk_ref_workload(arena, work), &ref.bufs, &oc)) {
    oc.kernel = "ref";
    goto out;
  }

  if (req->replay)
    for (size_t i = 0; i < req->nseeds; i++)
      if (wk_replay_seed(w, arena, bufs, &base, req->seeds[i], res, &oc))
        goto out;
  if (req->verify && have_cand && !req->replay)
    for (size_t i = 0; i < req->nseeds; i++)
      if (wk_verify_seed(w, arena, bufs, &base, &cand, have_ref ? &ref : NULL, req->seeds[i],
                         res, &oc))
        goto out;

  t_verify = wk_now();
  if (req->time) {
    unsigned long long seed = req->nseeds ? req->seeds[0] : TIMING_SEED;
    if (wk_buffers_fill(w, arena, bufs, seed, &oc) ||
        wk_time(w, arena, bufs, &base, have_cand ? &cand : NULL, &req->timing, &res->timing, &oc))
      goto out;
    res->timed = true;
    t_time = wk_now();
    /* A warm timing follows a flushed one, whose recheck stands for it. */
    if (have_cand && !req->timing.warm && !req->no_recheck &&
        recheck(w, arena, work, bufs, &base, &cand, have_ref ? &ref : NULL, req->recheck_seed,
                &res->timing.recheck, &oc))
      goto out;
    t_recheck = wk_now();
  }
out:
  wk_buffers_free(w, &ref.bufs);
  wk_kernel_unload(w, &ref.kernel);
  wk_pool_release(w, bufs, oc.status == KS_RUN_OK && !w->dead);
  wk_kernel_unload(w, &cand);
  wk_kernel_unload(w, &base);
  res->status = oc.status;
  res->error = oc.error;
  res->error_kernel = oc.kernel;
  if (w->profile) {
    /* Phases that did not run show 0; fill, download and compare are
     * totals across the phases they happen in. */
    double end = wk_now();
#define SPAN(a, b) ((a) > 0 && (b) > 0 ? 1e3 * ((b) - (a)) : 0.0)
    fprintf(stderr,
            "kernelsmith-worker: profile: %s%s%s %llu elements: load %.1f alloc %.1f verify %.1f "
            "time %.1f (%zu+%zu samples) recheck %.1f | fill %.1f download %.1f compare %.1f | "
            "total %.1f ms\n",
            req->replay ? "replay " : "", req->verify ? "verify" : "", req->time ? " time" : "",
            work->buffers.len ? work->buffers.items[0].count : 0ull, SPAN(t_start, t_load),
            SPAN(t_load, t_alloc), SPAN(t_alloc, t_verify), SPAN(t_verify, t_time),
            res->timing.base_ms.len, res->timing.cand_ms.len, SPAN(t_time, t_recheck),
            1e3 * w->t_fill, 1e3 * w->t_download, 1e3 * w->t_compare, 1e3 * (end - t_start));
#undef SPAN
  }
}

/* Times `runs` launches of `k` with events and returns the median in ms. */
static int median_ms(wk_state *w, ks_arena *arena, wk_kernel *k, void **params, unsigned warmup,
                     unsigned runs, double *out, wk_outcome *oc) {
  CUevent start = NULL, stop = NULL;
  double samples[32];
  int rc = -1;
  if (runs > 32)
    runs = 32;
  if (wk_cuda(w, arena, oc, w->cu.EventCreate(&start, CU_EVENT_DEFAULT), KS_RUN_LAUNCH_FAILED,
              NULL, "cuEventCreate") ||
      wk_cuda(w, arena, oc, w->cu.EventCreate(&stop, CU_EVENT_DEFAULT), KS_RUN_LAUNCH_FAILED,
              NULL, "cuEventCreate"))
    goto out;
  for (unsigned i = 0; i < warmup; i++)
    if (wk_launch(w, arena, k, params, true, oc))
      goto out;
  for (unsigned i = 0; i < runs; i++) {
    float ms = 0;
    if (wk_cuda(w, arena, oc, w->cu.EventRecord(start, NULL), KS_RUN_LAUNCH_FAILED, NULL,
                "cuEventRecord") ||
        wk_launch(w, arena, k, params, false, oc) ||
        wk_cuda(w, arena, oc, w->cu.EventRecord(stop, NULL), KS_RUN_LAUNCH_FAILED, NULL,
                "cuEventRecord") ||
        wk_cuda(w, arena, oc, w->cu.EventSynchronize(stop), KS_RUN_CRASHED, k->label,
                "kernel execution") ||
        wk_cuda(w, arena, oc, w->cu.EventElapsedTime(&ms, start, stop), KS_RUN_CRASHED, NULL,
                "cuEventElapsedTime"))
      goto out;
    samples[i] = ms;
  }
  *out = wk_median(samples, runs);
  rc = 0;
out:
  if (start)
    w->cu.EventDestroy(start);
  if (stop)
    w->cu.EventDestroy(stop);
  return rc;
}

int wk_ceilings(wk_state *w, ks_arena *arena, const ks_module *copy, const ks_module *fma,
                int fma_flops_per_iter, ks_ceilings *out, wk_outcome *oc) {
  memset(out, 0, sizeof *out);
  wk_kernel kc = {0}, kf = {0};
  CUdeviceptr src = 0, dst = 0, sink = 0;
  int rc = -1;
  /* Enough blocks to fill every SM (2048 threads each on current GPUs). */
  unsigned blocks = (unsigned)(w->info.sm_count > 0 ? w->info.sm_count : 1) * 8;
  ks_launch_cfg launch = {{blocks, 1, 1}, {256, 1, 1}, 0};

  /* Copy: 1 GiB each way (far beyond any L2), less on a small device. */
  size_t free_bytes = 0, total = 0;
  if (wk_cuda(w, arena, oc, w->cu.MemGetInfo(&free_bytes, &total), KS_RUN_LAUNCH_FAILED, NULL,
              "cuMemGetInfo"))
    goto out;
  size_t bytes = (size_t)1 << 30;
  if (bytes > free_bytes / 4)
    bytes = free_bytes / 4 / 16 * 16;
  size_t n = bytes / 16;
  if (wk_kernel_load(w, arena, copy, "copy", &launch, &kc, oc) ||
      wk_kernel_load(w, arena, fma, "fma", &launch, &kf, oc) ||
      wk_cuda(w, arena, oc, w->cu.MemAlloc(&src, bytes), KS_RUN_LAUNCH_FAILED, NULL, "cuMemAlloc") ||
      wk_cuda(w, arena, oc, w->cu.MemAlloc(&dst, bytes), KS_RUN_LAUNCH_FAILED, NULL, "cuMemAlloc") ||
      wk_cuda(w, arena, oc, w->cu.MemsetD32(src, 0x3f800000u, bytes / 4), KS_RUN_LAUNCH_FAILED,
              NULL, "cuMemsetD32"))
    goto out;
  void *copy_params[] = {&src, &dst, &n};
  double ms = 0;
  if (median_ms(w, arena, &kc, copy_params, 3, 15, &ms, oc))
    goto out;
  out->bandwidth = ms > 0 ? 2.0 * (double)bytes / (ms / 1e3) : 0;

  /* FMA: calibrate the trip count to about 5 ms per launch, then measure. */
  if (wk_cuda(w, arena, oc, w->cu.MemAlloc(&sink, (size_t)blocks * 256 * sizeof(float)),
              KS_RUN_LAUNCH_FAILED, NULL, "cuMemAlloc"))
    goto out;
  int iters = 4096;
  void *fma_params[] = {&sink, &iters};
  if (median_ms(w, arena, &kf, fma_params, 1, 3, &ms, oc))
    goto out;
  double scale = ms > 0 ? 5.0 / ms : 64;
  iters = (int)(iters * (scale < 1 ? 1 : scale > 4096 ? 4096 : scale));
  if (median_ms(w, arena, &kf, fma_params, 2, 10, &ms, oc))
    goto out;
  out->flops_fp32 =
      ms > 0 ? (double)blocks * 256 * (double)iters * fma_flops_per_iter / (ms / 1e3) : 0;
  rc = 0;
out:
  if (src)
    w->cu.MemFree(src);
  if (dst)
    w->cu.MemFree(dst);
  if (sink)
    w->cu.MemFree(sink);
  wk_kernel_unload(w, &kc);
  wk_kernel_unload(w, &kf);
  return rc;
}
