/* pipeline: optimize's stages (ks_pipeline.h): scan -> targets -> prepare
 * -> begin -> search per kernel -> finish. Each stage takes the pipeline
 * and returns 0 or -1 with ctx->error set; a kernel that fails is recorded
 * in its outcome and the others go on. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ks_compile.h"
#include "ks_hash.h"
#include "ks_specs.h"
#include "pipeline_int.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What the store keeps as the kernel's spec: where the user's is, or the
 * capture it came from (apply makes the same spec from it again). */
static const char *spec_text(ks_arena *a, const ks_target *t) {
  if (!t->have_spec)
    return ks_arena_printf(a, "capture:%s", t->capture_path);
  return ks_arena_printf(a, "%s:%u", t->spec.file, t->spec.line);
}

/* The digests of the kernel's launch sites, one per line: apply dispatches
 * only the sites that still launch it as they did when it was judged. */
static const char *site_digests(ks_arena *a, const ks_scan *scan, const ks_kernel *k) {
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < scan->launches.len; i++) {
    const ks_launch *l = &scan->launches.items[i];
    bool runs = l->kernel_usr && k->usr && !strcmp(l->kernel_usr, k->usr);
    /* a launch through a function pointer it was assigned (apply
     * dispatches it when the pointer holds this kernel) */
    for (size_t c = 0; !runs && k->usr && c < l->candidates.len; c++)
      runs = l->candidates.items[c].kernel_usr && !strcmp(l->candidates.items[c].kernel_usr, k->usr);
    if (!runs)
      continue;
    char d[KS_HASH_HEX];
    ks_launch_digest(l, d);
    ks_buf_addf(&b, "%s%s", b.len ? "\n" : "", d);
  }
  const char *r = b.len ? ks_arena_strdup(a, b.data) : NULL;
  ks_buf_release(&b);
  return r;
}

static unsigned long long output_bytes(const ks_workload *w) {
  unsigned long long n = 0;
  for (size_t i = 0; i < w->buffers.len; i++)
    if (w->buffers.items[i].role != KS_ROLE_IN)
      n += w->buffers.items[i].count * ks_dtype_size(w->buffers.items[i].dtype);
  return n;
}

/* What a capture may have missed, most likely first: the device
 * variables the slice names (the program sets them; a capture holds only
 * the launch's buffers), else the general causes. */
static const char *not_captured(ks_arena *a, const ks_slice *slice) {
  if (!slice->variables.len)
    return "constant memory, a texture, pointers stored in a buffer";
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < slice->variables.len; i++)
    ks_buf_addf(&b, "%s'%s'", i ? ", " : "", slice->variables.items[i]);
  const char *r = ks_arena_printf(a, "it reads the __constant__ or __device__ variable%s %s, which "
                                     "the program sets (cudaMemcpyToSymbol) and a capture does "
                                     "not hold",
                                  slice->variables.len == 1 ? "" : "s", b.data);
  ks_buf_release(&b);
  return r;
}

/* Each captured launch replayed with the original before it serves as a
 * test input: one whose outputs the original does not reproduce (within
 * tolerance) missed something the kernel reads, and is left out. */
static int replay_captures(ks_pipeline *p, ks_pipeline_kernel *kj) {
  ks_ctx *ctx = p->job->ctx;
  ks_judge *judge = &p->judge;
  ks_arena *a = &p->arena;
  ks_target *t = &kj->target;
  size_t first = t->nworkloads - t->ncaptured, keep = first;
  bool lost_timed = false;
  for (size_t w = first; w < t->nworkloads; w++) {
    ks_workload *wl = &t->workloads[w];
    ks_replay r;
    if (ks_judge_replay(ctx, judge, &t->subject, w, a, &r))
      return -1;
    const char *why = NULL;
    if (r.status != KS_RUN_OK)
      why = ks_arena_printf(a, "the original fails on it: %s", r.error ? r.error : "failed");
    else if (!r.within_tolerance)
      for (size_t i = 0; i < r.outputs.len && !why; i++) {
        const ks_output_check *o = &r.outputs.items[i];
        if (o->has_capture && o->capture_mismatches)
          why = ks_arena_printf(a, "the original does not reproduce it ('%s' differs at %llu of "
                                   "%llu elements, first at %lld: %g captured, %g replayed): "
                                   "the kernel reads something the capture does not hold (%s)",
                                o->buffer, o->capture_mismatches, o->count,
                                o->capture_first_diff, o->capture_expected, o->capture_got,
                                not_captured(a, &t->slice));
      }
    if (why) {
      ks_warn(ctx, "%s: captured %s left out: %s%s", t->subject.kernel, wl->size_name, why,
              ks_capture_window_hint(wl));
      lost_timed |= wl->timed;
      continue;
    }
    /* Said by default: it is what makes a captured input trustworthy. */
    if (ctx->verbosity >= KS_LOG_WARN)
      pipeline_say(p, "%s: captured %s replayed %s (%zu output%s, %.1f MiB)", t->subject.kernel,
                   wl->size_name, r.bit_for_bit ? "bit for bit" : "within tolerance", r.compared,
                   r.compared == 1 ? "" : "s", (double)output_bytes(wl) / (1 << 20));
    t->workloads[keep++] = *wl;
  }
  t->ncaptured -= t->nworkloads - keep;
  t->nworkloads = keep;
  t->subject.nworkloads = keep;
  kj->outcome->captured = (unsigned)t->ncaptured;
  if (!keep)
    return ks_fail(ctx, "none of its captured launches can serve as inputs (the warnings above "
                        "say why)");
  if (lost_timed) {
    t->workloads[first].timed = true;
    for (size_t w = first + 1; w < keep; w++)
      if (output_bytes(&t->workloads[w]) > output_bytes(&t->workloads[first])) {
        t->workloads[first].timed = false;
        t->workloads[w].timed = true;
        first = w;
      }
  }
  return 0;
}

static bool selected(const ks_pipeline_job *job, const ks_kernel *k) {
  if (!job->kernels->len)
    return true;
  for (size_t i = 0; i < job->kernels->len; i++)
    if (ks_spec_names_kernel(job->kernels->items[i], k))
      return true;
  return false;
}


/* Compiles every ready kernel's slice with NVRTC (no GPU needed): what a
 * machine without one can still check. */
static void compile_without_gpu(ks_pipeline_job *job, ks_pipeline_kernel *kj, size_t n, ks_arena *a) {
  ks_compiler comp;
  const char *cache = ks_arena_printf(a, "%s/cache", job->store_dir);
  if (ks_compiler_init(job->ctx, &comp, "sm_90", cache)) {
    for (size_t i = 0; i < n; i++)
      if (kj[i].ready) {
        kj[i].ready = false;
        kj[i].outcome->status = "failed";
        kj[i].outcome->note = ks_arena_strdup(a, job->ctx->error);
      }
    return;
  }
  ks_compile_unit *units = ks_arena_alloc(a, (n + 1) * sizeof *units);
  size_t *which = ks_arena_alloc(a, (n + 1) * sizeof *which);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (!kj[i].ready)
      continue;
    ks_subject *s = &kj[i].target.subject;
    units[m] = (ks_compile_unit){.name = ks_arena_printf(a, "%s.cu", s->kernel),
                                 .source = s->slice_source,
                                 .name_expressions = &s->name_expression,
                                 .nnames = 1,
                                 .extra_options = s->options,
                                 .nextra = s->noptions};
    which[m++] = i;
  }
  ks_compile_result *r = ks_arena_alloc(a, (m + 1) * sizeof *r);
  if (m && ks_compile(job->ctx, &comp, units, m, a, r)) {
    ks_compiler_release(&comp);
    return;
  }
  for (size_t i = 0; i < m; i++)
    if (r[i].status != KS_COMPILE_OK) {
      ks_pipeline_kernel *k = &kj[which[i]];
      k->ready = false;
      k->outcome->status = "failed";
      k->outcome->note = ks_arena_printf(a, "the original does not compile with NVRTC: %s",
                                         r[i].reason);
    }
  ks_compiler_release(&comp);
}

const char *ks_pipeline_device_text(ks_arena *a, const ks_judge *j) {
  /* The architecture is what `apply` dispatches on. */
  return ks_arena_printf(a, "%s, sm_%d%d, driver %s", j->device.name, j->device.cc_major,
                         j->device.cc_minor, *j->device.driver ? j->device.driver : "?");
}


/* The searches the time budget stopped before their last round. */
static size_t budget_stopped_count(const ks_pipeline_kernel *jobs, size_t n) {
  size_t stopped = 0;
  for (size_t i = 0; i < n; i++)
    stopped += jobs[i].ready && jobs[i].outcome->budget_hit;
  return stopped;
}

void pipeline_say(const ks_pipeline *p, const char *fmt, ...) {
  const ks_pipeline_hooks *h = &p->job->hooks;
  if (!h->say)
    return;
  va_list ap;
  va_start(ap, fmt);
  ks_buf b = KS_BUF_INIT;
  ks_buf_vaddf(&b, fmt, ap);
  va_end(ap);
  h->say(h->arg, b.data ? b.data : "");
  ks_buf_release(&b);
}

void ks_pipeline_init(ks_pipeline *p, ks_pipeline_job *job) {
  memset(p, 0, sizeof *p);
  p->job = job;
  p->arena = (ks_arena)KS_ARENA_INIT;
  p->lock_fd = -1;
  p->llm = ks_arena_alloc(&p->arena, sizeof *p->llm);
}

void ks_pipeline_release(ks_pipeline *p) {
  for (size_t i = 0; i < p->kernels.len; i++)
    ks_target_close(&p->kernels.items[i].target);
  if (p->judge_open)
    ks_judge_close(&p->judge);
  for (size_t i = 0; i < p->nmore_judges; i++)
    ks_judge_close(&p->more_judges[i]);
  pipeline_llm_release(p);
  if (p->job->store && !p->job->store_borrowed) {
    ks_store_close(p->job->store);
    p->job->store = NULL;
  }
  if (p->lock_fd >= 0)
    close(p->lock_fd);
  if (p->have_scan)
    ks_scan_release(&p->scan);
  for (size_t c = 0; c < p->opened_caps; c++)
    ks_capture_close(&p->caps[c]);
  ks_arena_release(&p->arena);
  memset(p, 0, sizeof *p);
  p->lock_fd = -1;
}

/* One scan of the paths, and the captured launches, every file checked
 * whole before anything is searched. */
int ks_pipeline_scan(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  if (ks_scan_run(ctx, job->scan, &p->scan))
    return -1;
  p->have_scan = true;
  p->ncaps = job->captures ? job->captures->len : 0;
  p->caps = ks_arena_alloc(&p->arena, (p->ncaps + 1) * sizeof *p->caps);
  for (size_t c = 0; c < p->ncaps; c++) {
    char *abs = realpath(job->captures->items[c], NULL);
    int rc = ks_capture_open(ctx, abs ? abs : job->captures->items[c], &p->caps[c]);
    free(abs);
    if (rc)
      return -1;
    p->opened_caps++;
    ks_capture_warn_unmatched(ctx, &p->caps[c], &p->scan, &p->arena);
  }
  return 0;
}

/* The kernels: every one with a spec or captured launches, or the ones
 * named, each made ready to judge. */
int ks_pipeline_targets(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *arena = &p->arena;
  ks_scan *scan = &p->scan;
  size_t ncaps = p->ncaps;
  ks_capture *caps = p->caps;
  unsigned without_spec = 0;
  for (size_t i = 0; i < scan->kernels.len; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    if (!selected(job, k))
      continue;
    ks_spec spec;
    int found = ks_spec_find(ctx, scan, k, arena, &spec);
    /* The first file with launches of the kernel opens it; the others add
     * theirs. */
    size_t *idx, primary = 0;
    while (primary < ncaps &&
           !ks_capture_launches_of(arena, &caps[primary], scan, k, NULL, &idx, NULL))
      primary++;
    bool captured = found > 0 && primary < ncaps;
    if (found > 0 && !captured && !job->kernels->len) {
      without_spec++;
      continue;
    }
    ks_pipeline_kernel *kj = ks_array_push(arena, &p->kernels);
    kj->kernel = k;
    kj->outcome = ks_arena_alloc(arena, sizeof *kj->outcome);
    kj->outcome->kernel = k->qualified_name;
    kj->outcome->file = k->loc.file;
    kj->outcome->line = k->loc.line;
    kj->outcome->status = "not searched";
    if (found < 0 || (found > 0 && !captured)) {
      /* a kernel asked for by name or by --profile */
      if (found > 0)
        ks_warn(ctx, "%s has neither a spec nor captured launches, so it is not searched: write "
                     "a spec (docs/spec.md) or capture its inputs with kernelsmith-cc profile "
                     "--capture %s -- YOUR_APP, then optimize --capture capture.kscap",
                k->qualified_name, k->name);
      kj->outcome->status = found > 0 ? "skipped" : "failed";
      kj->outcome->note = found > 0 ? "no spec (docs/spec.md) and no capture (docs/profile.md)"
                                    : ks_arena_strdup(arena, ctx->error);
      continue;
    }
    bool opened = !ks_target_open_captured(ctx, job->scan, scan, k,
                                           primary < ncaps ? &caps[primary] : NULL, false,
                                           arena, &kj->target);
    for (size_t c = 0; opened && c < ncaps; c++)
      if (c != primary &&
          ks_target_add_captures(ctx, &kj->target, &caps[c], kj->target.capture_instance, arena))
        opened = false;
    if (!opened) {
      kj->outcome->status = "failed";
      kj->outcome->note = ks_arena_strdup(arena, ctx->error);
      continue;
    }
    kj->outcome->inputs = !kj->target.have_spec ? "capture"
                          : kj->target.ncaptured ? "spec+capture" : "spec";
    kj->outcome->captured = (unsigned)kj->target.ncaptured;
    kj->ready = true;
  }
  for (size_t i = 0; i < job->kernels->len; i++) {
    bool any = false;
    for (size_t k = 0; k < scan->kernels.len && !any; k++)
      any = ks_spec_names_kernel(job->kernels->items[i], &scan->kernels.items[k]);
    if (!any)
      return ks_fail(ctx, "no kernel named '%s' under the given paths (kernelsmith-cc scan lists "
                          "them)", job->kernels->items[i]);
  }
  if (without_spec)
    ks_info(ctx, "%u kernel%s with neither a spec nor captured launches left out (docs/spec.md, "
                 "docs/profile.md)", without_spec, without_spec == 1 ? "" : "s");
  return 0;
}

/* The GPU, unless the stand-in judges: each kernel prepared and its
 * captured launches replayed; without one, every slice compiled with
 * NVRTC (p->no_gpu says why there is none). */
int ks_pipeline_prepare(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *arena = &p->arena;
  if (pipeline_workers(p))
    return -1;
  if (!job->standin && !p->no_gpu) {
    job->judge.cache_dir = ks_arena_printf(arena, "%s/cache", job->store_dir);
    job->judge.screen = true;
    /* Warm timing (data that fit in L2, no flush) for the winner's
     * recheck only, which runs unscreened: the search's pace is kept. */
    if (!job->judge.warm)
      job->judge.warm = KS_WARM_UNSCREENED;
    job->judge.device = p->workers[0];
    if (ks_judge_open(ctx, &p->judge, &job->judge))
      p->no_gpu = ks_arena_strdup(arena, ctx->error);
    else
      p->judge_open = true;
    if (p->judge_open && pipeline_open_more_judges(p))
      return -1;
  }
  if (p->judge_open) {
    for (size_t i = 0; i < p->kernels.len; i++) {
      ks_pipeline_kernel *k = &p->kernels.items[i];
      if (k->ready && (ks_judge_prepare(ctx, &p->judge, &k->target.subject, arena) ||
                       (k->target.ncaptured && replay_captures(p, k)))) {
        k->ready = false;
        k->outcome->status = "failed";
        k->outcome->note = ks_arena_strdup(arena, ctx->error);
      }
    }
  } else {
    compile_without_gpu(job, p->kernels.items, p->kernels.len, arena);
  }
  p->ready = p->failed = 0;
  for (size_t i = 0; i < p->kernels.len; i++) {
    const ks_outcome *o = p->kernels.items[i].outcome;
    p->ready += p->kernels.items[i].ready;
    p->failed += !strcmp(o->status, "failed");
    if (!strcmp(o->status, "failed"))
      ks_error(ctx, "%s: %s", o->kernel, o->note);
  }
  if (p->failed)
    p->kernel_failed = true;
  if (!p->no_gpu && !p->ready)
    return ks_fail(ctx, "no kernel to optimize: none under the given paths has a spec "
                        "(docs/spec.md)%s",
                   p->ncaps ? " or a usable captured launch" : " or captured launches (--capture)");
  return 0;
}

/* The model, the store and the run. One optimize per store at a time: two
 * would judge the same variants twice. The lock dies with its process,
 * kill -9 included, so a killed run never blocks its own --resume. */
int ks_pipeline_begin(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *arena = &p->arena;
  if (pipeline_uses_llm(job) && pipeline_llm_open(p))
    return -1;
  if (!job->store && ks_store_open(ctx, job->store_dir, &job->store))
    return -1;
  if (!job->locked && ks_pipeline_lock(ctx, job->store_dir, arena, &p->lock_fd))
    return -1;
  p->run = job->resume_run;
  p->device = p->judge_open ? ks_pipeline_device_text(arena, &p->judge) : "stand-in judge (no GPU)";
  if (p->nworkers > 1)
    p->device = pipeline_workers_text(p, p->device);
  if (p->run) {
    if (ks_store_run_reopen(ctx, job->store, p->run))
      return -1;
  } else {
    ks_run_row row = {.status = "running", .command = job->command ? job->command : "optimize",
                      .strategy = ks_strategy_name(job->search.strategy),
                      .proposer = ks_proposer_kind_name(job->proposer), .seed = job->search.seed,
                      .options = job->argv_json, .device = p->device};
    if (ks_store_run_begin(ctx, job->store, &row, &p->run))
      return -1;
  }
  p->llm->run = p->run;
  if (p->llm->on && job->resume_run) {
    /* Budgets span the whole run, resumed parts included. */
    ks_llm_usage u;
    if (ks_store_llm_usage(ctx, job->store, p->run, 0, &u))
      return -1;
    p->llm->totals.run.requests = u.calls;
    p->llm->totals.run.input_tokens = u.prompt_tokens;
    p->llm->totals.run.output_tokens = u.response_tokens;
    p->llm->totals.run.cost = u.cost;
  }
  return 0;
}

int ks_pipeline_lock(ks_ctx *ctx, const char *store_dir, ks_arena *a, int *fd) {
  const char *lock_path = ks_arena_printf(a, "%s/optimize.lock", store_dir);
  *fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (*fd < 0 || flock(*fd, LOCK_EX | LOCK_NB))
    return ks_fail(ctx, "%s: %s", lock_path,
                   errno == EWOULDBLOCK ? "another optimize is running with this store; wait for "
                                          "it, or give this one its own with --store"
                                        : strerror(errno));
  return 0;
}

/* A failed search: its outcome says so, the store too, the others go on. */
static int search_failed(ks_pipeline *p, ks_pipeline_kernel *k) {
  ks_ctx *ctx = p->job->ctx;
  k->outcome->status = "failed";
  k->outcome->note = ks_arena_strdup(&p->arena, ctx->error);
  ks_error(ctx, "%s: %s", k->outcome->kernel, ctx->error);
  p->kernel_failed = true;
  return ks_store_kernel_update(ctx, p->job->store, k->store_id, "failed", k->outcome->note, 0);
}

static int pipeline_search_more(ks_pipeline *p, double t0);

/* Per kernel, the search, under the shared budget; a kernel a resumed run
 * had finished is read back from the store. */
int ks_pipeline_search(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *arena = &p->arena;
  const ks_pipeline_hooks *h = &job->hooks;
  ks_kernel_rows stored = {0};
  if (job->resume_run && ks_store_kernels(ctx, job->store, p->run, arena, &stored))
    return -1;
  /* --max-seconds is the searches' wall time, counted from here: the scan,
   * the slices, the compiles and the baselines before take what the
   * project and the machine make them take, and counting them would leave
   * the searches less the slower the machine (a loaded one gave a budget's
   * second pass no time at all). */
  double t0 = now_seconds();
  size_t left = p->ready;
  for (size_t i = 0; i < p->kernels.len; i++) {
    ks_pipeline_kernel *k = &p->kernels.items[i];
    if (!k->ready)
      continue;
    ks_kernel_row row = {.run = p->run, .name = k->target.subject.kernel,
                         .file = k->kernel->loc.file, .line = k->kernel->loc.line,
                         .source_hash = k->kernel->source_hash,
                         .slice = k->target.slice.source,
                         .spec = spec_text(arena, &k->target),
                         .sites = site_digests(arena, &p->scan, k->kernel),
                         .status = "searching"};
    if (ks_store_kernel_put(ctx, job->store, &row, &k->store_id))
      return -1;
    const ks_kernel_row *done = NULL;
    for (size_t s = 0; s < stored.len; s++)
      if (stored.items[s].id == k->store_id && !strcmp(stored.items[s].status, "done"))
        done = &stored.items[s];
    if (done) {
      if (pipeline_outcome_from_store(p, k, done))
        return -1;
      left--;
      continue;
    }
    if (*job->interrupted)
      break;
    double share = 0;
    if (job->max_seconds > 0) {
      share = (job->max_seconds - (now_seconds() - t0)) / (double)left;
      if (share < 1)
        share = 1;
    }
    left--;
    double k0 = now_seconds();
    if (pipeline_search_kernel(p, k, share)) {
      if (search_failed(p, k))
        return -1;
      continue;
    }
    k->outcome->seconds = now_seconds() - k0;
    /* A search its budget stopped is not done: --resume goes on with it. */
    const char *st = *job->interrupted || k->outcome->budget_hit ? "searching" : "done";
    if (ks_store_kernel_update(ctx, job->store, k->store_id, st, NULL, k->outcome->baseline_ms))
      return -1;
    if (h->kernel_done)
      h->kernel_done(h->arg, k->outcome);
  }
  if (pipeline_search_more(p, t0))
    return -1;
  return ks_search_ranks_end(job->ranks, ctx);
}

/* Time the fast searches left over goes to the kernels the budget
   * stopped (slow kernels early in the order got only an equal share),
   * as many passes as the time allows (each search gets at least 5 s). */
static int pipeline_search_more(ks_pipeline *p, double t0) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  while (job->max_seconds > 0 && !*job->interrupted && !p->kernel_failed) {
    size_t stopped = budget_stopped_count(p->kernels.items, p->kernels.len);
    if (!stopped || job->max_seconds - (now_seconds() - t0) < 5.0 * (double)stopped)
      break;
    for (size_t i = 0; i < p->kernels.len && !*job->interrupted; i++) {
      ks_pipeline_kernel *k = &p->kernels.items[i];
      if (!k->ready || !k->outcome->budget_hit)
        continue;
      double share = (job->max_seconds - (now_seconds() - t0)) / (double)stopped--;
      double k0 = now_seconds();
      if (pipeline_search_kernel(p, k, share)) {
        /* The first pass's outcome and store rows stand; --resume can go on. */
        ks_warn(ctx, "%s: continuing its search failed: %s", k->outcome->kernel, ctx->error);
        return 0;
      }
      k->outcome->seconds += now_seconds() - k0;
      const char *st = *job->interrupted || k->outcome->budget_hit ? "searching" : "done";
      if (ks_store_kernel_update(ctx, job->store, k->store_id, st, NULL, k->outcome->baseline_ms))
        return -1;
    }
  }
  return 0;
}

/* The run's status, what stopped the model or the searches, and the
 * outcomes in the scan's order. */
int ks_pipeline_finish(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_pipeline_llm *llm = p->llm;
  const char *hint = job->resume_hint ? job->resume_hint : "kernelsmith-cc optimize --resume";
  p->budget_stopped = budget_stopped_count(p->kernels.items, p->kernels.len) > 0;
  p->interrupted = *job->interrupted != 0;
  if (p->interrupted) {
    if (!job->run_borrowed)
      ks_store_run_finish(ctx, job->store, p->run, "interrupted");
    pipeline_say(p, "interrupted; every finished evaluation is stored. Continue with: %s", hint);
    p->kernel_failed = true;
  } else if (!job->run_borrowed && ks_store_run_finish(ctx, job->store, p->run,
                                 p->kernel_failed    ? "failed"
                                 : p->budget_stopped ? "stopped"
                                                     : "done")) {
    return -1;
  }
  for (size_t i = 0; llm->on && i < p->kernels.len; i++)
    if (p->kernels.items[i].outcome->llm.budget_hit) {
      pipeline_say(p, "an LLM budget (--max-cost, --max-tokens, --max-requests) stopped the "
                      "model's requests: %.4f USD, %lld tokens, %lld requests",
                   llm->totals.run.cost,
                   llm->totals.run.input_tokens + llm->totals.run.output_tokens,
                   llm->totals.run.requests);
      break;
    }
  /* Failed model requests, one line per kind; a model that never answered
   * fails the run (what the rules found is stored and shown all the same). */
  unsigned llm_cached = 0, llm_failed = 0;
  for (size_t i = 0; llm->on && i < p->kernels.len; i++) {
    llm_cached += p->kernels.items[i].outcome->llm.cached;
    llm_failed += p->kernels.items[i].outcome->llm.failed;
  }
  if (llm->on && !p->interrupted &&
      ks_llm_report_failures(ctx, &llm->totals, llm_cached, llm_failed))
    p->kernel_failed = true;
  if (p->budget_stopped && !p->interrupted)
    pipeline_say(p, "the budget stopped the search before its last round; continue with: %s",
                 hint);
  for (size_t i = 0; i < p->kernels.len; i++)
    *ks_array_push(&p->arena, &p->outcomes) = *p->kernels.items[i].outcome;
  return 0;
}

int ks_pipeline_follow(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *arena = &p->arena;
  for (;;) {
    const char *name;
    if (ks_search_ranks_next(job->ranks, ctx, arena, &name))
      return -1;
    if (!name)
      return 0;
    ks_pipeline_kernel *k = NULL;
    const char *why = "it has no kernel of that name";
    for (size_t i = 0; i < p->kernels.len && !k; i++) {
      ks_pipeline_kernel *c = &p->kernels.items[i];
      if (strcmp(c->target.subject.kernel ? c->target.subject.kernel : "", name))
        continue;
      if (c->ready)
        k = c;
      else
        why = c->outcome && c->outcome->note ? c->outcome->note : "it could not prepare it";
    }
    if (!k) {
      if (ks_search_ranks_decline(job->ranks, ctx, why))
        return -1;
      continue;
    }
    if (!k->store_id) {
      ks_kernel_row row = {.run = p->run, .name = name, .file = k->kernel->loc.file,
                           .line = k->kernel->loc.line, .source_hash = k->kernel->source_hash,
                           .slice = k->target.slice.source, .status = "searching"};
      if (ks_store_kernel_put(ctx, job->store, &row, &k->store_id))
        return -1;
    }
    if (pipeline_search_kernel(p, k, 0)) {
      /* This rank's failure: rank 0 judges its share from now on. */
      ks_error(ctx, "%s: %s", name, ctx->error);
      p->kernel_failed = true;
    }
    if (*job->interrupted)
      return 0;
  }
}

/* A rank > 0 that cannot search: it says why to every search rank 0 starts. */
static int decline_all(ks_pipeline *p, const char *why) {
  ks_ctx *ctx = p->job->ctx;
  const char *line = ks_arena_strdup(&p->arena, why);
  if (ks_search_ranks_decline_all(p->job->ranks, ctx, &p->arena, line))
    return -1;
  return ks_fail(ctx, "%s; this rank took part in no search", line);
}

int ks_pipeline_optimize(ks_pipeline *p) {
  bool follower = p->job->ranks && p->job->ranks->rank > 0;
  if (ks_pipeline_scan(p) || ks_pipeline_targets(p) || ks_pipeline_prepare(p))
    return follower ? decline_all(p, p->job->ctx->error) : -1;
  if (p->no_gpu)
    return follower ? decline_all(p, ks_arena_printf(&p->arena, "the search needs an NVIDIA GPU "
                                                                 "(%s)", p->no_gpu))
                    : 0;
  if (ks_pipeline_begin(p))
    return follower ? decline_all(p, p->job->ctx->error) : -1;
  if (follower)
    return ks_pipeline_follow(p);
  if (ks_pipeline_search(p) || ks_pipeline_finish(p))
    return -1;
  return 0;
}
