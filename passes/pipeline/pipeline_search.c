/* pipeline_search: one kernel's search (the proposers, the evaluator, the
 * model's side of the run) and what the store then says of it: the winner
 * named and exported, or a finished kernel's outcome read back on resume. */
#include <string.h>

#include "pipeline_int.h"
#include "ks_rules.h"
#include "ks_specs.h"
#include "ks_variant_file.h"

/* The kernel's winner named in the store and exported from it: what the
 * store holds is what apply reads; the file is a copy for the user. */
static const char *record_winner(ks_ctx *ctx, const ks_pipeline_job *job, long long kernel_id,
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

/* A kernel a resumed run had finished: its outcome from the store. */
int pipeline_outcome_from_store(ks_pipeline *p, ks_pipeline_kernel *k, const ks_kernel_row *row) {
  ks_pipeline_job *job = p->job;
  ks_arena *a = &p->arena;
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
  o->resumed = true;
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

bool pipeline_uses_llm(const ks_pipeline_job *job) {
  return job->proposer == KS_PROPOSER_LLM || job->proposer == KS_PROPOSER_ALL;
}

const char *ks_proposer_kind_name(ks_proposer_kind k) {
  static const char *const names[] = {"rules", "tuning", "llm", "all"};
  return names[k];
}

/* Resolves the configuration (flags, environment, the project's and the
 * user's files) and opens the client; a replay needs no server. */
int pipeline_llm_open(ks_pipeline *p) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *a = &p->arena;
  ks_pipeline_llm *l = p->llm;
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

void pipeline_llm_release(ks_pipeline *p) {
  if (!p->llm)
    return;
  if (p->llm->client)
    ks_llm_client_free(p->llm->client);
  ks_llm_memory_release(&p->llm->memory);
}

/* Does nothing: a hook the caller left out. */
static void no_progress(void *arg, const ks_search_progress *s) {
  (void)arg;
  (void)s;
}

int pipeline_search_kernel(ks_pipeline *p, ks_pipeline_kernel *k, double seconds) {
  ks_pipeline_job *job = p->job;
  ks_ctx *ctx = job->ctx;
  ks_arena *a = &p->arena;
  ks_judge *judge = p->judge_open ? &p->judge : NULL;
  ks_pipeline_llm *llm = p->llm;
  const ks_pipeline_hooks *h = &job->hooks;
  ks_outcome *o = k->outcome;
  ks_variant seed;
  bool is_template = false;
  if (ks_rules_seed(ctx, &k->target, a, &seed, &is_template))
    return -1;
  seed.file = ks_arena_printf(a, "%s.variant.cu", k->target.subject.kernel);

  ks_insight_begin(ctx, &k->target, a, &o->insight);
  ks_rules_proposer rp = {.target = &k->target, .tuning_only = job->tuning};
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
  pipeline_evaluators evs;
  pipeline_evaluators_make(p, &k->target, &evs);
  if (judge) {
    rp.sm_count = (unsigned)judge->device.sm_count;
  }
  ks_search s = {.ctx = ctx, .kernel = k->target.subject.kernel, .opts = job->search,
                 .proposer = &proposer, .evaluator = evs.table, .nevaluators = evs.n,
                 .retired = p->retired,
                 .store = job->ranks && job->ranks->rank > 0 ? NULL : job->store,
                 .ranks = job->ranks,
                 .store_kernel = k->store_id, .seed = &seed, .seed_is_template = is_template,
                 .progress = h->search_progress ? h->search_progress : no_progress,
                 .progress_arg = h->arg,
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
  if (h->search_begin)
    h->search_begin(h->arg, llm->on ? &llm->totals.run : NULL);
  int rc = ks_search_run(&s, a, &r);
  if (h->search_end)
    h->search_end(h->arg);
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
  o->same_code += pipeline_evaluators_release(&evs);
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
