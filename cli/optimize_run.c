/* optimize_run: scan -> targets -> compile -> (GPU) search per kernel ->
 * winners and the report. See cmd_optimize.c for the command line. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_cli.h"
#include "ks_compile.h"
#include "ks_hash.h"
#include "ks_optimize_report.h"
#include "ks_rules.h"
#include "ks_specs.h"
#include "ks_target.h"
#include "ks_variant_file.h"
#include "ks_winners.h"
#include "optimize_run.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct kjob {
  const ks_kernel *kernel;
  ks_target target;
  bool ready;              /* sliced, spec resolved, compiled */
  ks_outcome *outcome;     /* set once every kernel is listed (the array grows) */
  long long store_id;
} kjob;

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
    if (!l->kernel_usr || !k->usr || strcmp(l->kernel_usr, k->usr))
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

/* Each captured launch replayed with the original before it serves as a
 * test input: one whose outputs the original does not reproduce (within
 * tolerance) missed something the kernel reads, and is left out. */
static int replay_captures(ks_ctx *ctx, ks_judge *judge, kjob *kj, ks_arena *a) {
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
                                   "the kernel reads something the capture does not hold "
                                   "(constant memory, a texture, pointers stored in a buffer)",
                                o->buffer, o->capture_mismatches, o->count,
                                o->capture_first_diff, o->capture_expected, o->capture_got);
      }
    if (why) {
      ks_warn(ctx, "%s: captured %s left out: %s%s", t->subject.kernel, wl->size_name, why,
              ks_capture_window_hint(wl));
      lost_timed |= wl->timed;
      continue;
    }
    /* Said by default: it is what makes a captured input trustworthy. */
    if (ctx->verbosity >= KS_LOG_WARN)
      fprintf(stderr, "%s: %s: captured %s replayed %s (%zu output%s, %.1f MiB)\n", ctx->prog,
              t->subject.kernel, wl->size_name,
              r.bit_for_bit ? "bit for bit" : "within tolerance", r.compared,
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

static bool selected(const optimize_job *job, const ks_kernel *k) {
  if (!job->kernels->len)
    return true;
  for (size_t i = 0; i < job->kernels->len; i++)
    if (ks_spec_names_kernel(job->kernels->items[i], k))
      return true;
  return false;
}

/* The kernel's winner named in the store and exported from it: what the
 * store holds is what apply reads; the file is a copy for the user. */
static const char *record_winner(ks_ctx *ctx, const optimize_job *job, long long kernel_id,
                                 long long variant_id, const char *kernel, ks_arena *a) {
  if (ks_store_kernel_set_winner(ctx, job->store, kernel_id, variant_id)) {
    ks_warn(ctx, "%s", ctx->error);
    return NULL;
  }
  if (!variant_id)
    return NULL;
  ks_winners ws;
  const char *names[] = {kernel};
  ks_winners_query q = {.store_dir = job->store_dir, .kernels = names, .nkernels = 1,
                        .any_device = true};
  if (ks_winners_load(ctx, &q, a, &ws) || ks_winners_export(ctx, &ws, job->store_dir, a)) {
    ks_warn(ctx, "%s: the winner is in the store, but its file is not written: %s", kernel,
            ctx->error);
    return NULL;
  }
  return ks_winner_path(a, job->store_dir, kernel);
}

/* Compiles every ready kernel's slice with NVRTC (no GPU needed): what a
 * machine without one can still check. */
static void compile_without_gpu(optimize_job *job, kjob *kj, size_t n, ks_arena *a) {
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
      kjob *k = &kj[which[i]];
      k->ready = false;
      k->outcome->status = "failed";
      k->outcome->note = ks_arena_printf(a, "the original does not compile with NVRTC: %s",
                                         r[i].reason);
    }
  ks_compiler_release(&comp);
}

/* A kernel a resumed run had finished: its outcome from the store. */
static int outcome_from_store(optimize_job *job, kjob *k, const ks_kernel_row *row,
                              ks_arena *a) {
  ks_variant_rows vars = {0};
  if (ks_store_variants(job->ctx, job->store, k->store_id, a, &vars))
    return -1;
  ks_outcome *o = k->outcome;
  o->baseline_ms = o->best_ms = row->baseline_ms;
  ks_insight_parse(a, row->insight, &o->insight);
  o->speedup = 1;
  o->verdict = "-";
  o->techniques = "";
  o->status = "no faster variant";
  for (size_t i = 0; i < vars.len; i++) {
    const ks_variant_row *v = &vars.items[i];
    o->evaluated += v->evaluated;
    /* The winner the store names (a run from before the column: the
     * fastest FAST one). */
    bool may_win = row->winner < 0 || v->id == row->winner;
    if (may_win && v->evaluated && v->verdict == KS_VERDICT_FAST && v->speedup > o->speedup) {
      o->speedup = v->speedup;
      o->best_ms = v->median_ms;
      o->bw_fraction = v->bw_fraction;
      o->techniques = v->techniques;
      o->verdict = "FAST";
      o->variant_id = v->id;
      o->status = "optimized";
    }
  }
  return 0;
}

static const char *device_text(ks_arena *a, const ks_judge *j) {
  /* The architecture is what `apply` dispatches on. */
  return ks_arena_printf(a, "%s, sm_%d%d, driver %s", j->device.name, j->device.cc_major,
                         j->device.cc_minor, *j->device.driver ? j->device.driver : "?");
}

/* The model's side of a run, shared by its kernels. */
typedef struct llm_side {
  bool on;
  ks_llm_config cfg;         /* resolved */
  ks_llm_totals totals;
  ks_llm_client *client;     /* NULL in replay mode */
  ks_llm_memory memory;      /* the run's insights, shared by its kernels */
  long long run;
} llm_side;

static bool uses_llm(const optimize_job *job) {
  return job->proposer == KS_PROPOSER_LLM || job->proposer == KS_PROPOSER_ALL;
}

static const char *proposer_name(const optimize_job *job) {
  static const char *const names[] = {"rules", "tuning", "llm", "all"};
  return names[job->proposer];
}

/* Resolves the configuration (flags, environment, the project's and the
 * user's files) and opens the client; a replay needs no server. */
static int llm_open(optimize_job *job, llm_side *l, ks_arena *a) {
  ks_ctx *ctx = job->ctx;
  ks_llm_sources src = {.project_config = ks_arena_printf(a, "%s/config.json", job->store_dir)};
  if (ks_llm_config_resolve(ctx, job->llm, &src, a, &l->cfg)) {
    ks_fail_prefix(ctx, "--proposer llm");
    return -1;
  }
  ks_llm_totals_init(&l->totals, a);
  if (job->llm_cache != KS_LLM_CACHE_REPLAY && ks_llm_client_new(ctx, &l->cfg, &l->totals, &l->client))
    return -1;
  l->on = true;
  ks_buf d = KS_BUF_INIT;
  ks_llm_config_describe(&l->cfg, &d);
  ks_debug(ctx, "llm: %s", d.data);
  ks_buf_release(&d);
  return 0;
}

/* The searches the time budget stopped before their last round. */
static size_t budget_stopped_count(const kjob *jobs, size_t n) {
  size_t stopped = 0;
  for (size_t i = 0; i < n; i++)
    stopped += jobs[i].ready && jobs[i].outcome->budget_hit;
  return stopped;
}

static int search_kernel(optimize_job *job, kjob *k, ks_judge *judge, llm_side *llm,
                         double seconds, ks_progress_line *progress, ks_arena *a) {
  ks_ctx *ctx = job->ctx;
  ks_outcome *o = k->outcome;
  ks_variant seed;
  bool is_template = false;
  if (ks_rules_seed(ctx, &k->target, a, &seed, &is_template))
    return -1;
  seed.file = ks_arena_printf(a, "%s.variant.cu", k->target.subject.kernel);

  ks_insight_begin(ctx, &k->target, a, &o->insight);
  ks_rules_proposer rp = {.target = &k->target, .tuning_only = job->tuning};
  ks_judge_evaluator je = {.judge = judge, .target = &k->target};
  ks_proposer rules = ks_rules_proposer_make(&rp);
  ks_llm_proposer lp = {0};
  ks_proposer lprop = {0};
  if (llm->on) {
    lp = (ks_llm_proposer){.client = llm->client, .cfg = &llm->cfg, .cache = job->llm_cache,
                           .store = job->store, .run = llm->run, .kernel = k->store_id,
                           .memory = &llm->memory,
                           .target = &k->target,
                           .evolve = job->search.strategy == KS_STRATEGY_EVOLVE,
                           .per_parent = job->llm_plans, .insight = &o->insight};
    if (judge) {
      lp.device = (ks_prompt_device){
          .name = judge->device.name,
          .arch = ks_arena_printf(a, "sm_%d%d", judge->device.cc_major, judge->device.cc_minor),
          .sm_count = (unsigned)judge->device.sm_count,
          .copy_gbps = judge->have_ceilings ? judge->ceilings.bandwidth / 1e9 : 0,
          .peak_gflops = judge->have_ceilings ? judge->ceilings.flops_fp32 / 1e9 : 0};
    }
    lprop = ks_llm_proposer_make(&lp);
  }
  const ks_proposer *parts[] = {&rules, &lprop};
  ks_mixed_proposer mp = {.parts = parts, .nparts = 2};
  ks_proposer proposer = job->proposer == KS_PROPOSER_LLM   ? lprop
                         : job->proposer == KS_PROPOSER_ALL ? ks_mixed_proposer_make(&mp)
                                                            : rules;
  ks_evaluator evaluator = job->standin ? ks_standin_evaluator() : ks_judge_evaluator_make(&je);
  if (judge) {
    rp.sm_count = (unsigned)judge->device.sm_count;
  }
  ks_search s = {.ctx = ctx, .kernel = k->target.subject.kernel, .opts = job->search,
                 .proposer = &proposer, .evaluator = &evaluator, .store = job->store,
                 .store_kernel = k->store_id, .seed = &seed, .seed_is_template = is_template,
                 .progress = ks_progress_update, .progress_arg = progress,
                 .interrupted = job->interrupted};
  s.opts.max_seconds = seconds;
  if (o->baseline_ms > 0) {
    s.baseline_ms = o->baseline_ms; /* measured by this run's first pass */
  } else if (job->resume_run) {
    ks_kernel_rows rows = {0};
    if (ks_store_kernels(ctx, job->store, job->resume_run, a, &rows))
      return -1;
    for (size_t i = 0; i < rows.len; i++)
      if (rows.items[i].id == k->store_id)
        s.baseline_ms = rows.items[i].baseline_ms;
  }
  ks_search_result r;
  progress->llm = llm->on ? &llm->totals.run : NULL;
  int rc = ks_search_run(&s, a, &r);
  ks_progress_end(progress);
  ks_rules_proposer_release(&rp);
  if (llm->on) {
    const ks_llm_proposer_stats *st = &lp.stats;
    o->has_llm = true;
    o->llm.plans += st->plans;
    o->llm.plans_rejected += st->plans_rejected;
    o->llm.children += st->children;
    o->llm.retries += st->retries;
    o->llm.insights += st->insights;
    o->llm.cached += st->cached;
    o->llm.failed += st->failed;
    o->llm.budget_hit |= st->budget_hit;
    for (int i = 0; i < KS_REPLY_NREASONS; i++)
      o->llm.rejected[i] += st->executor.rejected[i];
    if (st->last_error)
      o->llm.last_error = ks_arena_strdup(a, st->last_error);
    const ks_llm_tally *t = ks_llm_totals_account(&llm->totals, k->target.subject.kernel, false);
    if (t)
      o->llm.tally = *t;
    ks_llm_proposer_release(&lp);
  }
  o->same_code += je.reused;
  ks_judge_evaluator_release(&je);
  /* What the judge learned, also when the search failed (a racing
   * original may fail its own seed). */
  ks_insight_device dev = ks_insight_device_of(judge);
  ks_ctx quiet; /* keeps the search's own error, if any, in ctx */
  ks_ctx_init(&quiet, ctx->prog);
  if (ks_insight_finish(&quiet, &k->target, rc ? NULL : &r.baseline, &dev, job->store,
                        k->store_id, a, &o->insight))
    ks_warn(ctx, "%s: what the judge learned is not recorded: %s", k->target.subject.kernel,
            quiet.error);
  ks_ctx_release(&quiet);
  if (rc)
    return -1;
  ks_count_proposers(&r.nodes, o->proposers);
  o->baseline_ms = r.baseline_ms;
  o->best_ms = r.baseline_ms;
  o->speedup = 1;
  o->verdict = "-";
  o->techniques = "";
  o->evaluated = r.evaluated;
  o->correct = r.correct;
  o->wrong = r.wrong;
  o->refused = r.refused;
  o->duplicates = r.duplicates;
  o->rounds = r.rounds_done;
  o->budget_hit = r.time_budget_hit;
  o->stopped_by = r.budget_hit ? "budget" : r.converged ? "patience" : r.exhausted ? "exhausted"
                                                                                  : "rounds";
  o->bw_fraction = r.baseline.base_bw_fraction;
  if (r.best) {
    o->status = "optimized";
    o->speedup = r.best->speedup;
    o->speedup_low = r.best_eval.speedup_low;
    o->speedup_high = r.best_eval.speedup_high;
    o->best_ms = r.best->median_ms > 0 ? r.best->median_ms : r.baseline_ms / r.best->speedup;
    o->bw_fraction = r.best->bw_fraction;
    o->techniques = r.best->techniques;
    o->verdict = ks_verdict_name(r.best->verdict);
    o->variant_id = r.best->id;
    o->winner_file = record_winner(ctx, job, k->store_id, r.best->id, k->target.subject.kernel, a);
  } else {
    o->status = "no faster variant";
    record_winner(ctx, job, k->store_id, 0, k->target.subject.kernel, a);
  }
  if (*job->interrupted)
    o->status = "interrupted";
  return 0;
}

int optimize_run(optimize_job *job) {
  ks_ctx *ctx = job->ctx;
  ks_arena arena = KS_ARENA_INIT;
  ks_scan scan = {0};
  bool have_scan = false, judge_open = false;
  ks_capture *caps = NULL;
  size_t opened_caps = 0;
  ks_judge judge;
  llm_side llm = {0};
  int exit_code = KS_EXIT_OK;
  ks_outcomes outcomes = {0};
  KS_ARRAY(kjob) jobs = {0};
  int lock_fd = -1;
  bool budget_stopped = false;
  double t0 = 0; /* when the searches start: what --max-seconds counts from */

  if (ks_scan_run(ctx, job->scan, &scan))
    goto fail;
  have_scan = true;

  /* Captured launches, every file checked whole before anything is
   * searched. */
  size_t ncaps = job->captures ? job->captures->len : 0;
  caps = ks_arena_alloc(&arena, (ncaps + 1) * sizeof *caps);
  for (size_t c = 0; c < ncaps; c++) {
    char *abs = realpath(job->captures->items[c], NULL);
    int rc = ks_capture_open(ctx, abs ? abs : job->captures->items[c], &caps[c]);
    free(abs);
    if (rc)
      goto fail;
    opened_caps++;
    ks_capture_warn_unmatched(ctx, &caps[c], &scan, &arena);
  }
  bool have_capture = ncaps > 0;

  /* The kernels: every one with a spec or captured launches, or the ones
   * named. */
  unsigned without_spec = 0;
  for (size_t i = 0; i < scan.kernels.len; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    if (!selected(job, k))
      continue;
    ks_spec spec;
    int found = ks_spec_find(ctx, &scan, k, &arena, &spec);
    /* The first file with launches of the kernel opens it; the others add
     * theirs. */
    size_t *idx, primary = 0;
    while (primary < ncaps &&
           !ks_capture_launches_of(&arena, &caps[primary], &scan, k, NULL, &idx, NULL))
      primary++;
    bool captured = found > 0 && primary < ncaps;
    if (found > 0 && !captured && !job->kernels->len) {
      without_spec++;
      continue;
    }
    kjob *kj = ks_array_push(&arena, &jobs);
    kj->kernel = k;
    kj->outcome = ks_arena_alloc(&arena, sizeof *kj->outcome);
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
                                    : ks_arena_strdup(&arena, ctx->error);
      continue;
    }
    bool opened = !ks_target_open_captured(ctx, job->scan, &scan, k,
                                           primary < ncaps ? &caps[primary] : NULL, false,
                                           &arena, &kj->target);
    for (size_t c = 0; opened && c < ncaps; c++)
      if (c != primary &&
          ks_target_add_captures(ctx, &kj->target, &caps[c], kj->target.capture_instance, &arena))
        opened = false;
    if (!opened) {
      kj->outcome->status = "failed";
      kj->outcome->note = ks_arena_strdup(&arena, ctx->error);
      continue;
    }
    kj->outcome->inputs = !kj->target.have_spec ? "capture"
                          : kj->target.ncaptured ? "spec+capture" : "spec";
    kj->outcome->captured = (unsigned)kj->target.ncaptured;
    kj->ready = true;
  }
  for (size_t i = 0; i < job->kernels->len; i++) {
    bool any = false;
    for (size_t k = 0; k < scan.kernels.len && !any; k++)
      any = ks_spec_names_kernel(job->kernels->items[i], &scan.kernels.items[k]);
    if (!any) {
      ks_fail(ctx, "no kernel named '%s' under the given paths (kernelsmith-cc scan lists them)",
              job->kernels->items[i]);
      goto fail;
    }
  }
  if (without_spec)
    ks_info(ctx, "%u kernel%s with neither a spec nor captured launches left out (docs/spec.md, "
                 "docs/profile.md)", without_spec, without_spec == 1 ? "" : "s");

  /* The GPU, unless the stand-in judges. */
  const char *no_gpu = NULL;
  if (!job->standin) {
    job->judge.cache_dir = ks_arena_printf(&arena, "%s/cache", job->store_dir);
    job->judge.screen = true;
    /* Warm timing (data that fit in L2, no flush) for the winner's
     * recheck only, which runs unscreened: the search's pace is kept. */
    if (!job->judge.warm)
      job->judge.warm = KS_WARM_UNSCREENED;
    if (ks_judge_open(ctx, &judge, &job->judge))
      no_gpu = ks_arena_strdup(&arena, ctx->error);
    else
      judge_open = true;
  }
  if (judge_open) {
    for (size_t i = 0; i < jobs.len; i++)
      if (jobs.items[i].ready &&
          (ks_judge_prepare(ctx, &judge, &jobs.items[i].target.subject, &arena) ||
           (jobs.items[i].target.ncaptured &&
            replay_captures(ctx, &judge, &jobs.items[i], &arena)))) {
        jobs.items[i].ready = false;
        jobs.items[i].outcome->status = "failed";
        jobs.items[i].outcome->note = ks_arena_strdup(&arena, ctx->error);
      }
  } else {
    compile_without_gpu(job, jobs.items, jobs.len, &arena);
  }
  size_t ready = 0, failed = 0;
  for (size_t i = 0; i < jobs.len; i++) {
    ready += jobs.items[i].ready;
    failed += !strcmp(jobs.items[i].outcome->status, "failed");
    if (!strcmp(jobs.items[i].outcome->status, "failed"))
      ks_error(ctx, "%s: %s", jobs.items[i].outcome->kernel, jobs.items[i].outcome->note);
  }
  if (failed)
    exit_code = KS_EXIT_FAILURE;
  if (no_gpu) {
    fprintf(stderr,
            "%s: %zu kernel%s scanned, sliced and compiled for sm_90%s; the search needs an "
            "NVIDIA GPU (%s)\n",
            ctx->prog, ready, ready == 1 ? "" : "s",
            failed ? ks_arena_printf(&arena, " (%zu failed)", failed) : "", no_gpu);
    goto out;
  }
  if (!ready) {
    ks_fail(ctx, "no kernel to optimize: none under the given paths has a spec (docs/spec.md)%s",
            have_capture ? " or a usable captured launch" : " or captured launches (--capture)");
    goto fail;
  }

  if (uses_llm(job) && llm_open(job, &llm, &arena))
    goto fail;

  /* The store, and the run. One optimize per store at a time: two would
   * judge the same variants twice. The lock dies with its process, kill -9
   * included, so a killed run never blocks its own --resume. */
  if (!job->store && ks_store_open(ctx, job->store_dir, &job->store))
    goto fail;
  const char *lock_path = ks_arena_printf(&arena, "%s/optimize.lock", job->store_dir);
  lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB)) {
    ks_fail(ctx, "%s: %s", lock_path,
            errno == EWOULDBLOCK ? "another optimize is running with this store; wait for it, "
                                   "or give this one its own with --store"
                                 : strerror(errno));
    goto fail;
  }
  long long runid = job->resume_run;
  const char *device = judge_open ? device_text(&arena, &judge) : "stand-in judge (no GPU)";
  if (runid) {
    if (ks_store_run_reopen(ctx, job->store, runid))
      goto fail;
  } else {
    ks_run_row row = {.status = "running", .command = "optimize",
                      .strategy = ks_strategy_name(job->search.strategy),
                      .proposer = proposer_name(job), .seed = job->search.seed,
                      .options = job->argv_json, .device = device};
    if (ks_store_run_begin(ctx, job->store, &row, &runid))
      goto fail;
  }
  ks_kernel_rows stored = {0};
  if (job->resume_run && ks_store_kernels(ctx, job->store, runid, &arena, &stored))
    goto fail;
  llm.run = runid;
  if (llm.on && job->resume_run) {
    /* Budgets span the whole run, resumed parts included. */
    ks_llm_usage u;
    if (ks_store_llm_usage(ctx, job->store, runid, 0, &u))
      goto fail;
    llm.totals.run.requests = u.calls;
    llm.totals.run.input_tokens = u.prompt_tokens;
    llm.totals.run.output_tokens = u.response_tokens;
    llm.totals.run.cost = u.cost;
  }

  /* --max-seconds is the searches' wall time, counted from here: the scan,
   * the slices, the compiles and the baselines before take what the
   * project and the machine make them take, and counting them would leave
   * the searches less the slower the machine (a loaded one gave a budget's
   * second pass no time at all). */
  t0 = now_seconds();
  ks_progress_line progress;
  ks_progress_init(&progress, stderr, ctx->color);
  size_t left = ready;
  for (size_t i = 0; i < jobs.len; i++) {
    kjob *k = &jobs.items[i];
    if (!k->ready)
      continue;
    ks_kernel_row row = {.run = runid, .name = k->target.subject.kernel,
                         .file = k->kernel->loc.file, .line = k->kernel->loc.line,
                         .source_hash = k->kernel->source_hash,
                         .slice = k->target.slice.source,
                         .spec = spec_text(&arena, &k->target),
                         .sites = site_digests(&arena, &scan, k->kernel),
                         .status = "searching"};
    if (ks_store_kernel_put(ctx, job->store, &row, &k->store_id))
      goto fail;
    const ks_kernel_row *done = NULL;
    for (size_t s = 0; s < stored.len; s++)
      if (stored.items[s].id == k->store_id && !strcmp(stored.items[s].status, "done"))
        done = &stored.items[s];
    if (done) {
      if (outcome_from_store(job, k, done, &arena))
        goto fail;
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
    if (search_kernel(job, k, judge_open ? &judge : NULL, &llm, share, &progress, &arena)) {
      k->outcome->status = "failed";
      k->outcome->note = ks_arena_strdup(&arena, ctx->error);
      ks_error(ctx, "%s: %s", k->outcome->kernel, ctx->error);
      exit_code = KS_EXIT_FAILURE;
      if (ks_store_kernel_update(ctx, job->store, k->store_id, "failed", k->outcome->note, 0))
        goto fail;
      continue;
    }
    k->outcome->seconds = now_seconds() - k0;
    /* A search its budget stopped is not done: --resume goes on with it. */
    const char *st = *job->interrupted || k->outcome->budget_hit ? "searching" : "done";
    if (ks_store_kernel_update(ctx, job->store, k->store_id, st, NULL, k->outcome->baseline_ms))
      goto fail;
    if (!progress.live && !job->json)
      fprintf(stderr, "%s: %s, %.2fx\n", k->outcome->kernel, k->outcome->status,
              k->outcome->speedup);
  }
  /* Time the fast searches left over goes to the kernels the budget
   * stopped (slow kernels early in the order got only an equal share),
   * as many passes as the time allows (each search gets at least 5 s). */
  while (job->max_seconds > 0 && !*job->interrupted && exit_code == KS_EXIT_OK) {
    size_t stopped = budget_stopped_count(jobs.items, jobs.len);
    if (!stopped || job->max_seconds - (now_seconds() - t0) < 5.0 * (double)stopped)
      break;
    for (size_t i = 0; i < jobs.len && !*job->interrupted; i++) {
      kjob *k = &jobs.items[i];
      if (!k->ready || !k->outcome->budget_hit)
        continue;
      double share = (job->max_seconds - (now_seconds() - t0)) / (double)stopped--;
      double k0 = now_seconds();
      if (search_kernel(job, k, judge_open ? &judge : NULL, &llm, share, &progress, &arena)) {
        /* The first pass's outcome and store rows stand; --resume can go on. */
        ks_warn(ctx, "%s: continuing its search failed: %s", k->outcome->kernel, ctx->error);
        goto passes_done;
      }
      k->outcome->seconds += now_seconds() - k0;
      const char *st = *job->interrupted || k->outcome->budget_hit ? "searching" : "done";
      if (ks_store_kernel_update(ctx, job->store, k->store_id, st, NULL, k->outcome->baseline_ms))
        goto fail;
    }
  }
passes_done:
  budget_stopped = budget_stopped_count(jobs.items, jobs.len) > 0;
  if (*job->interrupted) {
    ks_store_run_finish(ctx, job->store, runid, "interrupted");
    fprintf(stderr, "%s: interrupted; every finished evaluation is stored. Continue with: "
                    "kernelsmith-cc optimize --resume\n",
            ctx->prog);
    exit_code = KS_EXIT_FAILURE;
  } else if (ks_store_run_finish(ctx, job->store, runid,
                                 exit_code ? "failed" : budget_stopped ? "stopped" : "done")) {
    goto fail;
  }
  for (size_t i = 0; llm.on && i < jobs.len; i++)
    if (jobs.items[i].outcome->llm.budget_hit) {
      fprintf(stderr, "%s: an LLM budget (--max-cost, --max-tokens, --max-requests) stopped the "
                      "model's requests: %.4f USD, %lld tokens, %lld requests\n",
              ctx->prog, llm.totals.run.cost,
              llm.totals.run.input_tokens + llm.totals.run.output_tokens, llm.totals.run.requests);
      break;
    }
  /* Failed model requests, one line per kind; a model that never answered
   * fails the run (what the rules found is stored and shown all the same). */
  unsigned llm_cached = 0, llm_failed = 0;
  for (size_t i = 0; llm.on && i < jobs.len; i++) {
    llm_cached += jobs.items[i].outcome->llm.cached;
    llm_failed += jobs.items[i].outcome->llm.failed;
  }
  if (llm.on && !*job->interrupted &&
      ks_llm_report_failures(ctx, &llm.totals, llm_cached, llm_failed))
    exit_code = KS_EXIT_FAILURE;
  if (budget_stopped && !*job->interrupted)
    fprintf(stderr, "%s: the budget stopped the search before its last round; continue with: "
                    "kernelsmith-cc optimize --resume\n",
            ctx->prog);
  for (size_t i = 0; i < jobs.len; i++)
    *ks_array_push(&arena, &outcomes) = *jobs.items[i].outcome;
  if (job->json) {
    if (ks_outcomes_json(ctx, stdout, &outcomes, runid, ks_strategy_name(job->search.strategy),
                         proposer_name(job), job->search.seed, device, !job->standin))
      goto fail;
  } else {
    ks_outcomes_print(stdout, &outcomes, !job->standin, ks_color_wanted(stdout) && ctx->color);
  }
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  exit_code = KS_EXIT_FAILURE;
out:
  for (size_t i = 0; i < jobs.len; i++)
    ks_target_close(&jobs.items[i].target);
  if (judge_open)
    ks_judge_close(&judge);
  if (llm.client)
    ks_llm_client_free(llm.client);
  ks_llm_memory_release(&llm.memory);
  if (job->store)
    ks_store_close(job->store);
  job->store = NULL;
  if (lock_fd >= 0)
    close(lock_fd);
  if (have_scan)
    ks_scan_release(&scan);
  for (size_t c = 0; c < opened_caps; c++)
    ks_capture_close(&caps[c]);
  ks_arena_release(&arena);
  return exit_code;
}
