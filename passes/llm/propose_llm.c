/* propose_llm: the LLM proposer (ks_propose_llm.h): planner, executor and
 * summarizer requests through the store's cache and the client, replies
 * made into children, measured pairs made into the optimization memory. */
#include "ks_propose_llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_hash.h"
#include "ks_insight.h"

enum { PENDING_MAX = 4, SUMMARIES_PER_DRAW = 2 };

#define REPLAY_MISS "not in the store (--llm-cache replay asks no server)"

typedef struct pair {
  const ks_node *first, *second; /* parent, then the child measured against it */
} pair;

/* How often a prompt was asked in this search. */
typedef struct asked {
  char key[KS_HASH_HEX];
  unsigned n;
} asked;

/* A child that did not compile, to be written again with the compiler's
 * diagnostics about its own lines. */
typedef struct retry {
  const ks_node *parent;
  const char *plan, *technique, *feedback;
} retry;

typedef struct llm_state {
  KS_ARRAY(asked) asked;
  KS_ARRAY(pair) pending;
  KS_ARRAY(retry) retries;
} llm_state;

/* One request through the cache and the client. */
typedef struct call {
  const char *role;
  ks_llm_message msg;
  ks_llm_request req;
  char key[KS_HASH_HEX];
  const char *text;   /* the reply's text; NULL: none */
  ks_llm_reply reply;
  bool cached;
} call;

int ks_llm_cache_mode_parse(const char *s) {
  static const char *const names[] = {"rw", "ro", "off", "replay"};
  for (int i = 0; i < 4; i++)
    if (s && !strcmp(s, names[i]))
      return i;
  return -1;
}

const char *ks_llm_cache_mode_name(ks_llm_cache_mode m) {
  static const char *const names[] = {"rw", "ro", "off", "replay"};
  return (unsigned)m < 4 ? names[m] : "?";
}

static llm_state *state_of(ks_llm_proposer *p) {
  if (!p->state)
    p->state = ks_arena_alloc(&p->arena, sizeof(llm_state));
  return p->state;
}

/* A prompt asked again (the same parent drawn by two islands, or in a
 * later round) is a new sample, not the cached answer: the n-th asking
 * says so in its text, which makes its cache key its own. The count
 * depends only on the order of the search's draws, so a replay asks the
 * same texts in the same order. */
static void call_init(ks_llm_proposer *p, ks_arena *a, call *c, const char *role,
                      const ks_prompt *prompt, const char *account) {
  memset(c, 0, sizeof *c);
  c->role = role;
  c->msg = (ks_llm_message){.role = "user", .text = prompt->user};
  c->req = (ks_llm_request){.system = prompt->system, .messages = &c->msg, .nmessages = 1,
                            .account = account};
  char key[KS_HASH_HEX];
  ks_llm_cache_key(p->cfg, &c->req, key);
  llm_state *s = state_of(p);
  asked *seen = NULL;
  for (size_t i = 0; i < s->asked.len && !seen; i++)
    if (!strcmp(s->asked.items[i].key, key))
      seen = &s->asked.items[i];
  if (!seen) {
    seen = ks_array_push(&p->arena, &s->asked);
    memcpy(seen->key, key, sizeof key);
  }
  if (seen->n++)
    c->msg.text = ks_arena_printf(a, "%s\n(Sample %u of this request: answer independently.)\n",
                                  prompt->user, seen->n);
}

static void record(ks_ctx *ctx, ks_llm_proposer *p, call *c, ks_arena *a) {
  if (!p->store || p->cache == KS_LLM_CACHE_RO || c->cached)
    return;
  ks_buf body = KS_BUF_INIT;
  ks_ctx quiet;
  ks_ctx_init(&quiet, "kernelsmith-cc");
  const char *request = NULL;
  if (!ks_llm_request_body(&quiet, p->cfg, &c->req, &body))
    request = ks_llm_redact(p->cfg, ks_arena_strdup(a, body.data), a);
  ks_buf_release(&body);
  ks_ctx_release(&quiet);
  /* The key in no stored byte, whatever a prompt or a server quoted (the
   * client has scrubbed replies already; this holds for every column). */
  const char *response = ks_llm_redact(p->cfg, c->text, a);
  char rhash[KS_HASH_HEX] = "";
  if (response)
    ks_sha256_hex(response, strlen(response), rhash);
  const char *status =
      c->reply.status == KS_LLM_OK
          ? "ok"
          : ks_arena_printf(a, "error: %s",
                            c->reply.error ? c->reply.error : ks_llm_status_name(c->reply.status));
  ks_llm_call_row row = {
      .run = p->run, .kernel = p->kernel, .role = c->role, .model = p->cfg->model,
      .prompt_hash = c->key, .response_hash = response ? rhash : NULL, .request = request,
      .response = response, .prompt_tokens = c->reply.input_tokens,
      .response_tokens = c->reply.output_tokens, .seconds = c->reply.seconds,
      .cost = c->reply.cost, .status = ks_llm_redact(p->cfg, status, a)};
  /* A store that cannot take the row does not stop the search: the reply
   * is still used; the failure is said once per call. */
  if (ks_store_llm_call_put(ctx, p->store, &row))
    ks_warn(ctx, "llm: the call was not recorded: %s", ctx->error);
}

/* Serves what the cache has, asks the client for the rest (all at once,
 * `jobs` at a time), records the new ones. Failures are per call. */
static int run_calls(ks_ctx *ctx, ks_llm_proposer *p, call *calls, size_t n, ks_arena *a) {
  size_t nmiss = 0;
  call **miss = ks_arena_alloc(a, (n + 1) * sizeof *miss);
  for (size_t i = 0; i < n; i++) {
    call *c = &calls[i];
    ks_llm_cache_key(p->cfg, &c->req, c->key);
    if (p->store && p->cache != KS_LLM_CACHE_OFF) {
      ks_llm_call_row hit;
      bool found = false;
      if (ks_store_llm_cached(ctx, p->store, c->key, a, &hit, &found))
        return -1;
      if (found) {
        /* A store written before replies were scrubbed may hold the key. */
        c->text = ks_llm_redact(p->cfg, hit.response, a);
        c->cached = true;
        c->reply.status = KS_LLM_OK;
        p->stats.cached++;
        continue;
      }
    }
    if (p->cache == KS_LLM_CACHE_REPLAY || !p->client) {
      c->reply.status = KS_LLM_BAD_REPLY;
      c->reply.error = REPLAY_MISS;
      p->stats.failed++;
      p->stats.last_error = c->reply.error;
      continue;
    }
    miss[nmiss++] = c;
  }
  if (!nmiss)
    return 0;
  ks_llm_request *reqs = ks_arena_alloc(a, nmiss * sizeof *reqs);
  ks_llm_reply *replies = ks_arena_alloc(a, nmiss * sizeof *replies);
  for (size_t i = 0; i < nmiss; i++)
    reqs[i] = miss[i]->req;
  if (ks_llm_run(ctx, p->client, reqs, nmiss, a, replies))
    return -1;
  for (size_t i = 0; i < nmiss; i++) {
    call *c = miss[i];
    c->reply = replies[i];
    if (c->reply.status == KS_LLM_OK) {
      c->text = c->reply.text;
    } else {
      p->stats.failed++;
      p->stats.last_error = c->reply.error ? ks_arena_strdup(&p->arena, c->reply.error) : NULL;
      if (c->reply.status == KS_LLM_OVER_BUDGET)
        p->stats.budget_hit = true;
      ks_info(ctx, "llm: %s request failed: %s", c->role,
              c->reply.error ? c->reply.error : ks_llm_status_name(c->reply.status));
    }
    record(ctx, p, c, a);
  }
  return 0;
}

/* ---- the optimization memory --------------------------------------------- */

/* Stored as "speedup<TAB>techniques<TAB>insight", one line. */
static char *one_line(ks_arena *a, const char *text) {
  char *s = ks_arena_strdup(a, text ? text : "");
  for (char *c = s; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t')
      *c = ' ';
  return s;
}

static const char *memory_line(ks_arena *a, const ks_llm_config *cfg, const ks_prompt_memory *m) {
  return ks_llm_redact(cfg,
                       ks_arena_printf(a, "%.4f\t%s\t%s", m->speedup, one_line(a, m->techniques),
                                       one_line(a, m->insight)),
                       a);
}

static bool memory_parse(ks_arena *a, const char *line, ks_prompt_memory *out) {
  const char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
  if (!t2)
    return false;
  out->speedup = strtod(line, NULL);
  out->techniques = ks_arena_strndup(a, t1 + 1, (size_t)(t2 - t1 - 1));
  out->insight = ks_arena_strdup(a, t2 + 1);
  return out->speedup > 0 && *out->insight;
}

void ks_llm_memory_release(ks_llm_memory *m) {
  ks_arena_release(&m->arena);
  memset(m, 0, sizeof *m);
}

/* Copies the entry's strings into the memory's arena. */
static void memory_push(ks_llm_memory *mem, const ks_prompt_memory *m) {
  unsigned cap = mem->cap ? mem->cap : 32;
  if (mem->entries.len >= cap) {
    memmove(mem->entries.items, mem->entries.items + 1,
            (mem->entries.len - 1) * sizeof *mem->entries.items);
    mem->entries.len--;
  }
  *ks_array_push(&mem->arena, &mem->entries) = (ks_prompt_memory){
      .insight = ks_arena_strdup(&mem->arena, m->insight),
      .techniques = ks_arena_strdup(&mem->arena, m->techniques ? m->techniques : ""),
      .speedup = m->speedup};
}

static int memory_load(ks_ctx *ctx, ks_llm_proposer *p) {
  ks_llm_memory *mem = p->memory;
  if (mem->loaded)
    return 0;
  mem->loaded = true;
  /* A replay builds its memory from the replayed run's own insights, so
   * that its prompts are the ones recorded. */
  if (!p->store || p->cache == KS_LLM_CACHE_REPLAY)
    return 0;
  ks_arena scratch = KS_ARENA_INIT;
  ks_strings lines = {0};
  int rc = ks_store_memory(ctx, p->store, 0, "insight", &scratch, &lines);
  for (size_t i = 0; !rc && i < lines.len; i++) {
    ks_prompt_memory m;
    if (memory_parse(&scratch, lines.items[i], &m))
      memory_push(mem, &m);
  }
  ks_arena_release(&scratch);
  return rc;
}

static double speed(const ks_node *n) { return n->speedup > 0 ? n->speedup : 1; }

static bool is_retry(const ks_node *n) {
  const char *step = ks_chain_last_step(n->techniques);
  size_t len = strlen(step);
  return len >= 4 && !strcmp(step + len - 4, "+fix");
}

/* One second try per child that did not compile (never a try of a try):
 * the compiler's messages about the variant's own lines go back to the
 * executor, nothing about the slice or the toolkit. */
static void queue_retry(ks_llm_proposer *p, const ks_node *node, const ks_node *parent) {
  llm_state *s = state_of(p);
  if (!parent || !node->plan || is_retry(node) || s->retries.len >= PENDING_MAX)
    return;
  const char *diag = ks_prompt_diagnostics(&p->arena, node->compile_log ? node->compile_log : "",
                                           node->variant.file, 0);
  if (!diag || !*diag)
    diag = node->reason ? node->reason : "the variant did not compile";
  *ks_array_push(&p->arena, &s->retries) =
      (retry){.parent = parent, .plan = ks_arena_strdup(&p->arena, node->plan),
              .technique = ks_arena_strdup(&p->arena, ks_chain_last_step(node->techniques)),
              .feedback = ks_arena_printf(&p->arena,
                                          "Your last implementation of this plan did not "
                                          "compile. The compiler said, about your code:\n%s",
                                          diag)};
}

static int llm_observe(void *self, ks_ctx *ctx, const ks_node *node, const ks_node *parent) {
  (void)ctx;
  ks_llm_proposer *p = self;
  if (!node->proposer || strcmp(node->proposer, "llm"))
    return 0;
  if (node->evaluated && node->verdict == KS_VERDICT_COMPILE_ERROR) {
    queue_retry(p, node, parent);
    return 0;
  }
  if (!parent || !ks_node_correct(node) || !ks_node_correct(parent))
    return 0;
  double ratio = speed(node) / speed(parent);
  if (ratio < 1.03 && ratio > 0.97)
    return 0; /* no lesson in noise */
  llm_state *s = state_of(p);
  if (s->pending.len >= PENDING_MAX) {
    memmove(s->pending.items, s->pending.items + 1, (s->pending.len - 1) * sizeof(pair));
    s->pending.len--;
  }
  *ks_array_push(&p->arena, &s->pending) = (pair){parent, node};
  return 0;
}

/* What bounds the parent, from its measured fractions and, when it keeps
 * the original's launch, that launch (ks_bound_classify); NULL: unknown. */
static const char *parent_bound(ks_arena *a, const ks_llm_proposer *p, const ks_node *parent) {
  if (!parent->evaluated || parent->median_ms <= 0)
    return NULL;
  double seconds = parent->median_ms / 1e3;
  ks_bound_input in = {.median_ms = parent->median_ms, .sm_count = p->device.sm_count,
                       .bandwidth = p->device.copy_gbps * 1e9,
                       .flops_peak = p->device.peak_gflops * 1e9};
  in.bytes = (unsigned long long)(parent->bw_fraction * in.bandwidth * seconds);
  in.flops = parent->flop_fraction * in.flops_peak * seconds;
  const ks_launch_cfg *l = p->target ? ks_insight_launch(p->target) : NULL;
  if (l && !parent->variant.grid && !parent->variant.block)
    in.launch = *l;
  ks_bound b;
  ks_bound_classify(a, &in, &b);
  return b.kind == KS_BOUND_UNKNOWN ? NULL
                                    : ks_arena_printf(a, "%s-bound, %s", ks_bound_name(b.kind), b.why);
}

static ks_prompt_variant prompt_variant(const ks_node *n, bool with_source) {
  return (ks_prompt_variant){.source = with_source ? n->variant.source : NULL,
                             .techniques = n->techniques, .speedup = speed(n)};
}

/* The pairs measured since the last draw, summarized into the memory. */
static int summarize(ks_ctx *ctx, ks_llm_proposer *p, ks_arena *a) {
  llm_state *s = state_of(p);
  size_t n = s->pending.len < SUMMARIES_PER_DRAW ? s->pending.len : SUMMARIES_PER_DRAW;
  if (!n)
    return 0;
  call *calls = ks_arena_alloc(a, n * sizeof *calls);
  ks_prompt_variant *vs = ks_arena_alloc(a, 2 * n * sizeof *vs);
  for (size_t i = 0; i < n; i++) {
    const pair *pr = &s->pending.items[s->pending.len - n + i];
    vs[2 * i] = prompt_variant(pr->first, true);
    vs[2 * i + 1] = prompt_variant(pr->second, true);
    ks_summarizer_input in = {.kernel = p->target->subject.kernel, .slow = &vs[2 * i],
                              .fast = &vs[2 * i + 1], .plan = pr->second->plan};
    ks_prompt prompt;
    ks_prompt_summarizer(a, &in, &prompt);
    call_init(p, a, &calls[i], "summarizer", &prompt, p->target->subject.kernel);
  }
  if (run_calls(ctx, p, calls, n, a))
    return -1;
  for (size_t i = 0; i < n; i++) {
    const pair *pr = &s->pending.items[s->pending.len - n + i];
    if (!calls[i].text)
      continue;
    ks_reply_result r;
    if (ks_reply_insight(ctx, calls[i].text, a, NULL, &r))
      return -1;
    if (r.reason != KS_REPLY_OK) {
      p->stats.insights_rejected++;
      continue;
    }
    p->stats.insights++;
    ks_prompt_memory m = {.insight = r.text,
                          .techniques = ks_chain_last_step(pr->second->techniques),
                          .speedup = speed(pr->second) / speed(pr->first)};
    memory_push(p->memory, &m);
    /* A replay reproduces what was learned: nothing new to store. */
    if (p->store && p->cache != KS_LLM_CACHE_RO && p->cache != KS_LLM_CACHE_REPLAY &&
        ks_store_memory_put(ctx, p->store, 0, "insight", memory_line(a, p->cfg, &m)))
      ks_warn(ctx, "llm: the insight was not stored: %s", ctx->error);
  }
  s->pending.len = 0;
  return 0;
}

/* ---- proposing ------------------------------------------------------------ */

static int llm_propose(void *self, ks_ctx *ctx, const ks_node *parent,
                       const ks_node *const *insp, size_t ninsp, ks_rng *rng, unsigned want,
                       ks_arena *arena, ks_proposals *out) {
  (void)rng;
  ks_llm_proposer *p = self;
  if (!want)
    return 0;
  if (p->stats.budget_hit)
    return 0; /* a budget stopped the requests: nothing more from here */
  ks_arena scratch = KS_ARENA_INIT;
  int rc = -1;
  if (memory_load(ctx, p) || summarize(ctx, p, &scratch))
    goto out;

  unsigned n = p->per_parent ? p->per_parent : 2;
  if (n > want)
    n = want;
  const char *kernel = p->target->subject.kernel;
  const ks_llm_memory *mem = p->memory;
  const ks_workload *timed = NULL;
  for (size_t w = 0; w < p->target->nworkloads; w++)
    if (p->target->workloads[w].timed)
      timed = &p->target->workloads[w];

  /* Second tries first: they take this draw's first slots. */
  llm_state *s = state_of(p);
  if (s->retries.len) {
    size_t nr = s->retries.len < n ? s->retries.len : n;
    call *fix = ks_arena_alloc(&scratch, nr * sizeof *fix);
    for (size_t i = 0; i < nr; i++) {
      const retry *r = &s->retries.items[i];
      ks_executor_input in = {.kernel = kernel, .parent = &r->parent->variant, .plan = r->plan,
                              .spec = &p->target->spec,
                              .timed_launch = timed ? &timed->launch : NULL,
                              .feedback = r->feedback};
      ks_prompt prompt;
      ks_prompt_executor(&scratch, &in, &prompt);
      call_init(p, &scratch, &fix[i], "executor", &prompt, kernel);
    }
    if (run_calls(ctx, p, fix, nr, &scratch))
      goto out;
    for (size_t i = 0; i < nr; i++) {
      const retry *r = &s->retries.items[i];
      p->stats.retries++;
      if (!fix[i].text)
        continue;
      ks_reply_result child;
      if (ks_reply_child(ctx, fix[i].text, &r->parent->variant, r->parent->variant.file, arena,
                         &p->stats.executor, &child))
        goto out;
      if (child.reason != KS_REPLY_OK)
        continue;
      p->stats.children++;
      ks_proposal *prop = ks_array_push(arena, out);
      prop->variant = child.child;
      prop->is_template = r->parent->is_template;
      prop->technique = ks_arena_printf(arena, "%s+fix", r->technique);
      prop->proposer = "llm";
      prop->plan = ks_arena_strdup(arena, r->plan);
      prop->parent = r->parent;
    }
    memmove(s->retries.items, s->retries.items + nr, (s->retries.len - nr) * sizeof(retry));
    s->retries.len -= nr;
    n -= (unsigned)nr;
  }
  if (!n) {
    rc = 0;
    goto out;
  }

  /* The planner: one request per child, each told which slot it fills so
   * that the plans (and the cache keys) differ. */
  ks_prompt_variant pv = prompt_variant(parent, true);
  ks_prompt_profile prof = {.time_ms = parent->median_ms, .bw_fraction = parent->bw_fraction,
                            .flop_fraction = parent->flop_fraction,
                            .registers = parent->registers};
  const char *bound = parent_bound(&scratch, p, parent);
  const char *race = p->insight && p->insight->race.shown_by_code
                         ? ks_arena_printf(&scratch, "%s; variants are compared with its outputs, "
                                                     "which may differ from run to run",
                                           ks_race_line(&scratch, &p->insight->race))
                         : NULL;
  ks_prompt_variant *best = ks_arena_alloc(&scratch, (ninsp + 1) * sizeof *best);
  for (size_t i = 0; i < ninsp; i++)
    best[i] = prompt_variant(insp[i], true);
  call *plans = ks_arena_alloc(&scratch, n * sizeof *plans);
  for (unsigned i = 0; i < n; i++) {
    ks_planner_input in = {.kernel = kernel, .parent = &pv, .device = &p->device,
                           .profile = parent->evaluated ? &prof : NULL, .best = best,
                           .nbest = ninsp, .memory = mem->entries.items, .nmemory = mem->entries.len,
                           .evolve = p->evolve, .inspirations = best, .ninspirations = ninsp,
                           .bound = bound, .race = race};
    ks_prompt prompt;
    ks_prompt_planner(&scratch, &in, &prompt);
    if (n > 1)
      prompt.user = ks_arena_printf(&scratch,
                                    "%s\n\nThis is plan %u of %u for this parent: each plan "
                                    "should try a different optimization.\n",
                                    prompt.user, i + 1, n);
    call_init(p, &scratch, &plans[i], "planner", &prompt, kernel);
  }
  if (run_calls(ctx, p, plans, n, &scratch))
    goto out;

  /* The executor, for each plan that parsed. */
  ks_reply_result *planned = ks_arena_alloc(&scratch, n * sizeof *planned);
  call *execs = ks_arena_alloc(&scratch, n * sizeof *execs);
  unsigned nexec = 0;
  unsigned *which = ks_arena_alloc(&scratch, n * sizeof *which);
  for (unsigned i = 0; i < n; i++) {
    if (!plans[i].text)
      continue;
    if (ks_reply_plan(ctx, plans[i].text, &scratch, NULL, &planned[i]))
      goto out;
    if (planned[i].reason != KS_REPLY_OK) {
      p->stats.plans_rejected++;
      ks_info(ctx, "llm: %s: a plan was rejected (%s): %s", kernel,
              ks_reply_reason_name(planned[i].reason), planned[i].message);
      continue;
    }
    p->stats.plans++;
    ks_executor_input in = {.kernel = kernel, .parent = &parent->variant,
                            .plan = planned[i].text, .spec = &p->target->spec,
                            .timed_launch = timed ? &timed->launch : NULL};
    ks_prompt prompt;
    ks_prompt_executor(&scratch, &in, &prompt);
    call_init(p, &scratch, &execs[nexec], "executor", &prompt, kernel);
    which[nexec++] = i;
  }
  if (nexec && run_calls(ctx, p, execs, nexec, &scratch))
    goto out;

  for (unsigned e = 0; e < nexec; e++) {
    if (!execs[e].text)
      continue;
    ks_reply_result child;
    if (ks_reply_child(ctx, execs[e].text, &parent->variant, parent->variant.file, arena,
                       &p->stats.executor, &child))
      goto out;
    if (child.reason != KS_REPLY_OK) {
      ks_info(ctx, "llm: %s: a variant was rejected (%s): %s", kernel,
              ks_reply_reason_name(child.reason), child.message);
      continue;
    }
    p->stats.children++;
    const ks_reply_result *plan = &planned[which[e]];
    ks_proposal *prop = ks_array_push(arena, out);
    prop->variant = child.child;
    prop->is_template = parent->is_template;
    prop->technique = ks_arena_printf(arena, "llm:%s", plan->technique);
    prop->proposer = "llm";
    prop->plan = ks_arena_strdup(arena, plan->text);
  }
  rc = 0;
out:
  ks_arena_release(&scratch);
  return rc;
}

/* ---- the run's account of failures --------------------------------------- */

bool ks_llm_report_failures(ks_ctx *ctx, const ks_llm_totals *totals, unsigned cached,
                            unsigned failed) {
  long long client_failed = 0, hard = 0;
  for (size_t i = 0; i < totals->failures.len; i++) {
    const ks_llm_failure *f = &totals->failures.items[i];
    client_failed += f->count;
    if (f->status != KS_LLM_OVER_BUDGET)
      hard += f->count;
  }
  long long misses = (long long)failed > client_failed ? (long long)failed - client_failed : 0;
  long long requests = totals->answered + hard + misses;
  bool never = requests > 0 && totals->answered == 0 && cached == 0;
  size_t kinds = misses > 0;
  for (size_t i = 0; i < totals->failures.len; i++)
    kinds += totals->failures.items[i].status != KS_LLM_OVER_BUDGET;
  /* Quiet runs (-q) show errors only: a model that never answered is one. */
  ks_log_level level = never ? KS_LOG_ERROR : KS_LOG_WARN;
  if (never && kinds == 1) {
    const char *why = REPLAY_MISS;
    for (size_t i = 0; misses == 0 && i < totals->failures.len; i++)
      if (totals->failures.items[i].status != KS_LLM_OVER_BUDGET)
        why = totals->failures.items[i].error;
    ks_log(ctx, level, "llm: the model answered none of this run's %lld requests: %s", requests,
           why);
    return true;
  }
  for (size_t i = 0; i < totals->failures.len; i++) {
    const ks_llm_failure *f = &totals->failures.items[i];
    if (f->status != KS_LLM_OVER_BUDGET) /* the budget has its own line */
      ks_log(ctx, level, "llm: %lld of %lld model requests failed (%s): %s", f->count, requests,
             ks_llm_status_name(f->status), f->error);
  }
  if (misses)
    ks_log(ctx, level, "llm: %lld of %lld model requests failed: %s", misses, requests,
           REPLAY_MISS);
  if (never)
    ks_log(ctx, level, "llm: the model answered none of this run's %lld requests", requests);
  return never;
}

ks_proposer ks_llm_proposer_make(ks_llm_proposer *self) {
  return (ks_proposer){.name = "llm", .self = self, .propose = llm_propose,
                       .observe = llm_observe};
}

void ks_llm_proposer_release(ks_llm_proposer *self) {
  ks_arena_release(&self->arena);
  self->state = NULL;
}
