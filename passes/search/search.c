/* search: what both strategies share: nodes, deduplication, persistence,
 * resume, budgets, evaluation of a batch, and the choice of the winner.
 * The strategies (search_evolve.c, search_beam.c) only choose parents and
 * place children. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ks_hash.h"
#include "search_int.h"

const char *ks_strategy_name(ks_strategy s) { return s == KS_STRATEGY_BEAM ? "beam" : "evolve"; }

void ks_search_options_defaults(ks_search_options *o) {
  memset(o, 0, sizeof *o);
  o->rounds = 40;
  o->islands = 4;
  o->population = 8;
  o->children = 3;
  o->migrate_every = 5;
  o->inspirations = 2;
  o->beam_width = 6;
  o->proposals = 4;
  o->confirm = true;
}

/* splitmix64: small, fast, and good enough to draw parents and rules. */
void ks_rng_seed(ks_rng *r, unsigned long long seed, unsigned long long a, unsigned long long b) {
  r->state = seed ^ (a * 0x9e3779b97f4a7c15ULL) ^ (b * 0xc2b2ae3d27d4eb4fULL);
  ks_rng_next(r);
}

unsigned long long ks_rng_next(ks_rng *r) {
  unsigned long long z = (r->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

size_t ks_rng_below(ks_rng *r, size_t n) { return n ? (size_t)(ks_rng_next(r) % n) : 0; }

double ks_rng_unit(ks_rng *r) { return (double)(ks_rng_next(r) >> 11) / 9007199254740992.0; }

double ks_search_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Comments dropped, whitespace runs made one space, so a variant that
 * differs from another only in layout is not judged twice. */
static void normalize(ks_buf *b, const char *s) {
  bool space = false;
  while (*s) {
    if (s[0] == '/' && s[1] == '/') {
      while (*s && *s != '\n')
        s++;
      continue;
    }
    if (s[0] == '/' && s[1] == '*') {
      const char *e = strstr(s + 2, "*/");
      s = e ? e + 2 : s + strlen(s);
      space = true;
      continue;
    }
    if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
      space = true;
      s++;
      continue;
    }
    if (space && b->len)
      ks_buf_addc(b, ' ');
    space = false;
    ks_buf_addc(b, *s++);
  }
}

const char *ks_variant_hash(ks_arena *arena, const ks_variant *v) {
  ks_buf b = KS_BUF_INIT;
  normalize(&b, v->source ? v->source : "");
  ks_buf_addf(&b, "\n#grid %s\n#block %s\n#smem %s\n", v->grid ? v->grid : "-",
              v->block ? v->block : "-", v->smem ? v->smem : "-");
  for (size_t i = 0; i < v->requires.len; i++)
    ks_buf_addf(&b, "#requires %s\n", v->requires.items[i]);
  char hex[KS_HASH_HEX];
  ks_sha256_hex(b.data, b.len, hex);
  ks_buf_release(&b);
  return ks_arena_strdup(arena, hex);
}

bool ks_node_correct(const ks_node *n) {
  return n->evaluated && (n->verdict == KS_VERDICT_FAST || n->verdict == KS_VERDICT_SAME ||
                          n->verdict == KS_VERDICT_SLOW);
}

void ks_count_proposers(const ks_nodes *nodes, ks_proposer_count *out) {
  memset(out, 0, KS_PROPOSER_COUNTS * sizeof *out);
  for (size_t i = 0; i < nodes->len; i++) {
    const ks_node *n = nodes->items[i];
    if (!n->proposer || !strcmp(n->proposer, "seed"))
      continue;
    size_t k = 0;
    while (k < KS_PROPOSER_COUNTS && out[k].name && strcmp(out[k].name, n->proposer))
      k++;
    if (k == KS_PROPOSER_COUNTS)
      continue;
    out[k].name = n->proposer;
    out[k].candidates++;
    out[k].evaluated += n->evaluated;
    out[k].correct += ks_node_correct(n);
    out[k].faster += n->evaluated && n->verdict == KS_VERDICT_FAST;
  }
}

double ks_node_fitness(const ks_node *n) { return ks_node_correct(n) ? n->speedup : -1; }

ks_node *ks_search_find(search_state *st, const char *hash) {
  for (size_t i = 0; i < st->res->nodes.len; i++)
    if (!strcmp(st->res->nodes.items[i]->hash, hash))
      return st->res->nodes.items[i];
  return NULL;
}

const char *ks_chain_last_step(const char *chain) {
  const char *s = chain ? strrchr(chain, '>') : NULL;
  return s ? s + 2 : chain ? chain : "";
}

/* A new node, written to the store at once (a kill after this point finds
 * it unevaluated and judges it again on resume). */
ks_node *ks_search_add(search_state *st, const ks_node *parent, const ks_variant *v,
                       bool is_template, const char *proposer, const char *technique,
                       const char *plan, int round, int island) {
  ks_search *s = st->s;
  ks_node *n = ks_arena_alloc(st->arena, sizeof *n);
  n->variant = *v;
  n->is_template = is_template;
  n->proposer = proposer;
  n->plan = plan;
  n->parent = parent ? parent->id : 0;
  if (!parent || !parent->techniques || !*parent->techniques)
    n->techniques = technique ? technique : "";
  else
    n->techniques = ks_arena_printf(st->arena, "%s > %s", parent->techniques, technique);
  n->hash = ks_variant_hash(st->arena, v);
  n->round = round;
  n->island = island;
  n->id = -(long long)(st->res->nodes.len + 1); /* until the store gives one */
  if (s->store) {
    ks_variant_row row = {.kernel = s->store_kernel,
                          .parent = n->parent > 0 ? n->parent : 0,
                          .hash = n->hash,
                          .source = v->source,
                          .kernel_name = v->kernel_name,
                          .is_template = is_template,
                          .grid = v->grid,
                          .block = v->block,
                          .smem = v->smem,
                          .requires = ks_store_requires_join(st->arena, &v->requires),
                          .proposer = proposer,
                          .techniques = n->techniques,
                          .plan = plan,
                          .round = round,
                          .island = island};
    bool existed = false;
    if (ks_store_variant_put(s->ctx, s->store, &row, &n->id, &existed))
      return NULL;
  }
  *ks_array_push(st->arena, &st->res->nodes) = n;
  return n;
}

void ks_search_note(search_state *st, ks_node *n, const ks_eval *e) {
  n->evaluated = true;
  n->verdict = e->verdict;
  n->reason = e->reason ? ks_arena_strdup(st->arena, e->reason) : NULL;
  n->compile_log = e->verdict == KS_VERDICT_COMPILE_ERROR && e->compile_log
                       ? ks_arena_strdup(st->arena, e->compile_log)
                       : NULL;
  n->speedup = e->speedup;
  n->speedup_low = e->speedup_low;
  n->median_ms = e->cand_median_ms;
  n->registers = e->cand_registers;
  n->bw_fraction = e->cand_bw_fraction;
  n->flop_fraction = e->cand_flop_fraction;
  ks_search_result *r = st->res;
  if (ks_node_correct(n)) {
    r->correct++;
    if (n->verdict == KS_VERDICT_FAST && n->speedup > st->best_speedup) {
      st->best_speedup = n->speedup;
      st->best_techniques = n->techniques;
    }
  } else if (n->verdict == KS_VERDICT_REFUSED || n->verdict == KS_VERDICT_COMPILE_ERROR ||
             n->verdict == KS_VERDICT_INAPPLICABLE) {
    r->refused++;
  } else {
    r->wrong++;
  }
}

void ks_search_report(search_state *st, bool round_done) {
  ks_search *s = st->s;
  if (!s->progress)
    return;
  double elapsed = ks_search_now() - st->t0;
  ks_search_progress p = {.kernel = s->kernel,
                          .round = st->round,
                          .rounds = s->opts.rounds,
                          .evaluated = st->res->evaluated,
                          .correct = st->res->correct,
                          .best_speedup = st->best_speedup,
                          .best_techniques = st->best_techniques,
                          .elapsed_seconds = elapsed,
                          .round_done = round_done,
                          .seconds_left = -1};
  unsigned here = st->res->evaluated - st->evaluated_before;
  if (elapsed > 0 && here)
    p.evals_per_minute = here * 60.0 / elapsed;
  double left = -1;
  if (s->opts.max_seconds > 0)
    left = s->opts.max_seconds - elapsed;
  if (st->round > st->first_round && s->opts.rounds) {
    double per_round = elapsed / (st->round - st->first_round);
    double by_rounds = per_round * (s->opts.rounds - st->round);
    if (left < 0 || by_rounds < left)
      left = by_rounds;
  }
  p.seconds_left = left < 0 ? -1 : left;
  ks_count_proposers(&st->res->nodes, p.proposers);
  s->progress(s->progress_arg, &p);
}

bool ks_search_budget_left(search_state *st) {
  ks_search *s = st->s;
  if (s->interrupted && *s->interrupted)
    return false;
  if (s->opts.max_evals && st->res->evaluated >= s->opts.max_evals) {
    st->res->budget_hit = true;
    return false;
  }
  if (s->opts.max_seconds > 0 && ks_search_now() - st->t0 >= s->opts.max_seconds) {
    st->res->budget_hit = true;
    st->res->time_budget_hit = true;
    return false;
  }
  return true;
}

bool ks_search_converged(search_state *st) {
  unsigned patience = st->s->opts.patience;
  /* Better by more than noise: the judge's own minimum effect. */
  if (st->best_speedup > st->patience_best * 1.01) {
    st->patience_best = st->best_speedup;
    st->patience_rounds = 0;
    return false;
  }
  if (!patience || ++st->patience_rounds < patience)
    return false;
  st->res->converged = true;
  return true;
}

static ks_node *node_by_id(search_state *st, long long id) {
  for (size_t i = 0; id && i < st->res->nodes.len; i++)
    if (st->res->nodes.items[i]->id == id)
      return st->res->nodes.items[i];
  return NULL;
}

size_t ks_search_first_live(const search_state *st) {
  size_t n = st->s->nevaluators > 1 ? st->s->nevaluators : 1;
  for (size_t w = 0; w < n; w++)
    if (!st->retired || !st->retired[w])
      return w;
  return 0;
}

int ks_search_judge(search_state *st, size_t w, ks_ctx *ctx, const ks_node *node,
                    unsigned recheck, ks_arena *arena, ks_eval *out) {
  const ks_evaluator *ev = &st->s->evaluator[w];
  if (ev->eval(ev->self, ctx, node, recheck, arena, out))
    return -1;
  out->device = ev->device;
  out->worker = (int)w;
  if (st->ranks) { /* --mpi: the store says which rank and host judged it */
    out->rank = st->ranks->rank;
    out->host = st->ranks->host ? st->ranks->host(st->ranks->self, out->rank) : NULL;
  }
  return 0;
}

int ks_search_judge_alone(search_state *st, const ks_node *node, unsigned recheck,
                          ks_arena *arena, ks_eval *out) {
  ks_search *s = st->s;
  for (;;) {
    size_t w = ks_search_first_live(st);
    if (!ks_search_judge(st, w, s->ctx, node, recheck, arena, out))
      return 0;
    size_t live = 0;
    for (size_t i = 0; st->retired && i < s->nevaluators; i++)
      live += !st->retired[i];
    if (live < 2)
      return -1; /* the only (or last) worker: the search's failure */
    st->retired[w] = true;
    ks_warn(s->ctx, "%s: worker %zu (device %d) failed and left the pool: %s; %zu worker%s on",
            s->kernel, w, s->evaluator[w].device, s->ctx->error, live - 1,
            live - 1 == 1 ? " goes" : "s go");
  }
}

int ks_search_commit(search_state *st, ks_node *node, const ks_eval *e) {
  ks_search *s = st->s;
  if (st->share)
    return ks_search_ranks_keep(st, node, e); /* a rank's share: sent, then committed */
  if (s->store && ks_store_eval_put(s->ctx, s->store, s->store_kernel, node->id, e))
    return -1;
  st->res->evaluated++;
  ks_search_note(st, node, e);
  if (s->proposer->observe &&
      s->proposer->observe(s->proposer->self, s->ctx, node, node_by_id(st, node->parent)))
    return -1;
  ks_search_report(st, false);
  return 0;
}

/* Judges the nodes of a batch that are not judged yet: compiles them all in
 * parallel first, then one by one on the device, each evaluation stored as
 * soon as it is known. Stops early (leaving nodes unevaluated, to be judged
 * on resume) when a budget runs out. Several workers: search_pool.c. */
int ks_search_eval_batch(search_state *st, ks_node **nodes, size_t n) {
  ks_search *s = st->s;
  if (s->nevaluators > 1)
    return ks_search_eval_pool(st, nodes, n);
  const ks_evaluator *ev = s->evaluator;
  ks_arena scratch = KS_ARENA_INIT;
  int rc = 0;
  if (ev->precompile && n > 1) {
    const ks_node **todo = ks_arena_alloc(&scratch, n * sizeof *todo);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!nodes[i]->evaluated)
        todo[m++] = nodes[i];
    double t0 = ks_search_now();
    if (m > 1 && ev->precompile(ev->self, s->ctx, todo, m, &scratch)) {
      rc = -1;
      goto out;
    }
    st->t_precompile += ks_search_now() - t0;
  }
  for (size_t i = 0; i < n; i++) {
    ks_node *node = nodes[i];
    if (node->evaluated)
      continue;
    if (!ks_search_budget_left(st))
      break;
    ks_eval e;
    double t0 = ks_search_now();
    if (ks_search_judge(st, 0, s->ctx, node, 0, &scratch, &e)) {
      rc = -1;
      goto out;
    }
    st->t_eval += ks_search_now() - t0;
    if (ks_search_commit(st, node, &e)) {
      rc = -1;
      goto out;
    }
  }
out:
  ks_arena_release(&scratch);
  return rc;
}

/* Resume: the store's variants of this kernel become nodes again, with
 * their evaluations. */
static int load(search_state *st) {
  ks_search *s = st->s;
  if (!s->store)
    return 0;
  ks_variant_rows rows = {0};
  if (ks_store_variants(s->ctx, s->store, s->store_kernel, st->arena, &rows))
    return -1;
  for (size_t i = 0; i < rows.len; i++) {
    const ks_variant_row *r = &rows.items[i];
    ks_node *n = ks_arena_alloc(st->arena, sizeof *n);
    n->id = r->id;
    n->parent = r->parent;
    n->variant = (ks_variant){.source = r->source, .kernel_name = r->kernel_name,
                              .grid = r->grid, .block = r->block, .smem = r->smem,
                              .file = ks_arena_printf(st->arena, "%s.variant-%lld.cu",
                                                      s->kernel, r->id)};
    ks_store_requires_split(st->arena, r->requires, &n->variant.requires);
    n->is_template = r->is_template;
    n->proposer = r->proposer;
    n->techniques = r->techniques ? r->techniques : "";
    n->plan = r->plan;
    n->hash = r->hash;
    n->round = r->round;
    n->island = r->island;
    *ks_array_push(st->arena, &st->res->nodes) = n;
    if (r->round > (int)st->first_round)
      st->first_round = (unsigned)r->round;
    if (r->evaluated) {
      ks_eval e = {.verdict = r->verdict, .speedup = r->speedup, .speedup_low = r->speedup_low,
                   .cand_median_ms = r->median_ms, .cand_registers = r->registers,
                   .cand_bw_fraction = r->bw_fraction, .reason = r->reason};
      st->res->evaluated++;
      ks_search_note(st, n, &e);
    }
  }
  st->evaluated_before = st->res->evaluated;
  st->resumed = rows.len > 0;
  return 0;
}

static int cmp_fitness(const void *a, const void *b) {
  const ks_node *x = *(ks_node *const *)a, *y = *(ks_node *const *)b;
  double fx = ks_node_fitness(x), fy = ks_node_fitness(y);
  if (fx != fy)
    return fx < fy ? 1 : -1;
  return x->id < y->id ? -1 : x->id > y->id;
}

void ks_nodes_sort_by_fitness(ks_node **nodes, size_t n) {
  qsort(nodes, n, sizeof *nodes, cmp_fitness);
}

/* The winner: the fastest FAST variant, judged once more on fresh inputs
 * (a new seed) so that one lucky evaluation cannot win; if the recheck does
 * not confirm it, the next one is tried. */
static int choose_winner(search_state *st) {
  ks_search *s = st->s;
  ks_search_result *r = st->res;
  size_t n = r->nodes.len;
  ks_node **sorted = ks_arena_alloc(st->arena, (n + 1) * sizeof *sorted);
  memcpy(sorted, r->nodes.items, n * sizeof *sorted);
  ks_nodes_sort_by_fitness(sorted, n);
  unsigned tries = 0;
  for (size_t i = 0; i < n && tries < 3; i++) {
    ks_node *c = sorted[i];
    if (!c->evaluated || c->verdict != KS_VERDICT_FAST)
      break;
    if (!s->opts.confirm) {
      r->best = c;
      return 0;
    }
    if (s->interrupted && *s->interrupted)
      return 0;
    tries++;
    ks_eval e;
    if (ks_search_judge_alone(st, c, tries, st->arena, &e))
      return -1;
    if (s->store && ks_store_eval_put(s->ctx, s->store, s->store_kernel, c->id, &e))
      return -1;
    if (e.verdict == KS_VERDICT_FAST) {
      r->best = c;
      r->best_eval = e;
      c->speedup = e.speedup;
      c->speedup_low = e.speedup_low;
      c->median_ms = e.cand_median_ms;
      c->bw_fraction = e.cand_bw_fraction;
      return 0;
    }
    ks_info(s->ctx, "%s: %s did not confirm on fresh inputs (%s): %s", s->kernel,
            c->techniques, ks_verdict_name(e.verdict), e.reason ? e.reason : "");
    c->verdict = e.verdict;
    c->speedup = e.speedup;
  }
  return 0;
}

int ks_search_run(ks_search *s, ks_arena *arena, ks_search_result *out) {
  memset(out, 0, sizeof *out);
  search_state st = {.s = s, .arena = arena, .res = out, .best_speedup = 1,
                     .best_techniques = "", .t0 = ks_search_now(), .patience_best = 1};
  if (!s->opts.rounds)
    return ks_fail(s->ctx, "the search needs at least one round");
  if (s->nevaluators > 1)
    st.retired = s->retired ? s->retired
                            : ks_arena_alloc(arena, s->nevaluators * sizeof *st.retired);
  st.ranks = s->ranks && s->ranks->size > 1 ? s->ranks : NULL;
  if (st.ranks && st.ranks->rank > 0) {
    /* Rank 0 timed the original and judged the seed; the state comes from
     * it, and so does every decision on budgets. */
    if (ks_search_ranks_begin(&st))
      return -1;
    int rc = s->opts.strategy == KS_STRATEGY_BEAM ? ks_search_beam(&st) : ks_search_evolve(&st);
    out->rounds_done = st.rounds_done;
    return rc;
  }
  if (load(&st))
    return -1;

  /* The baseline, unless a resumed run measured it already. */
  if (s->baseline_ms > 0) {
    out->baseline_ms = s->baseline_ms;
  } else {
    if (ks_search_judge_alone(&st, NULL, 0, arena, &out->baseline))
      return -1;
    if (out->baseline.verdict != KS_VERDICT_BASELINE)
      return ks_fail(s->ctx, "%s: the original could not be timed: %s", s->kernel,
                     out->baseline.reason ? out->baseline.reason : "(no reason)");
    out->baseline_ms = out->baseline.base_median_ms;
    if (s->store && ks_store_eval_put(s->ctx, s->store, s->store_kernel, 0, &out->baseline))
      return -1;
  }

  /* The seed: the original, renamed. It must judge SAME against itself, or
   * the kernel is not deterministic enough to be searched. */
  const char *seed_hash = ks_variant_hash(arena, s->seed);
  st.seed = ks_search_find(&st, seed_hash);
  if (!st.seed && !(st.seed = ks_search_add(&st, NULL, s->seed, s->seed_is_template, "seed", "", NULL,
                                            0, -1)))
    return -1;
  ks_node *batch[1] = {st.seed};
  if (ks_search_eval_batch(&st, batch, 1))
    return -1;
  if (st.seed->evaluated && !ks_node_correct(st.seed))
    return ks_fail(s->ctx, "%s: the original, judged against itself, is %s (%s); it cannot be "
                           "searched",
                   s->kernel, ks_verdict_name(st.seed->verdict),
                   st.seed->reason ? st.seed->reason : "no reason given");

  /* Whatever a killed run left unjudged. */
  if (st.resumed) {
    size_t n = out->nodes.len;
    ks_node **todo = ks_arena_alloc(arena, (n + 1) * sizeof *todo);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!out->nodes.items[i]->evaluated)
        todo[m++] = out->nodes.items[i];
    if (m && ks_search_eval_batch(&st, todo, m))
      return -1;
  }

  if (st.ranks && ks_search_ranks_begin(&st))
    return -1;
  int rc = s->opts.strategy == KS_STRATEGY_BEAM ? ks_search_beam(&st) : ks_search_evolve(&st);
  if (rc) {
    if (st.ranks)
      ks_search_ranks_abort(&st);
    return -1;
  }
  out->rounds_done = st.rounds_done;
  double t_search = ks_search_now();
  rc = choose_winner(&st);
  const char *prof = getenv("KS_PROFILE");
  if (prof && *prof && strcmp(prof, "0"))
    fprintf(stderr,
            "kernelsmith-cc: profile: %s: %u evaluations in %.1f s: proposing %.1f s, "
            "compiling ahead %.1f s, judging %.1f s, the winner's rechecks %.1f s\n",
            s->kernel, out->evaluated - st.evaluated_before, ks_search_now() - st.t0,
            st.t_propose, st.t_precompile, st.t_eval, ks_search_now() - t_search);
  return rc;
}

int ks_search_raw(search_state *st, ks_search_job *job, ks_proposals *props) {
  ks_search *s = st->s;
  if (!job->parent)
    return 0;
  /* Ask for more than wanted: some will be variants judged before. */
  double t0 = ks_search_now();
  if (s->proposer->propose(s->proposer->self, s->ctx, job->parent, job->insp, job->ninsp,
                           &job->rng, job->want * 3, st->arena, props))
    return -1;
  st->t_propose += ks_search_now() - t0;
  return 0;
}

int ks_search_select(search_state *st, const ks_search_job *job, ks_proposals *props,
                     ks_nodes *out) {
  ks_search *s = st->s;
  int added = 0;
  for (size_t i = 0; i < props->len && (unsigned)added < job->want; i++) {
    ks_proposal *p = &props->items[i];
    const char *hash = ks_variant_hash(st->arena, &p->variant);
    ks_node *known = ks_search_find(st, hash);
    if (known) {
      st->res->duplicates++;
      /* A node a killed run made in this round is this round's again. */
      if (!known->evaluated || known->round == (int)st->round) {
        bool listed = false;
        for (size_t k = 0; k < out->len; k++)
          listed |= out->items[k] == known;
        if (!listed) {
          *ks_array_push(st->arena, out) = known;
          added++;
        }
      }
      continue;
    }
    if (!p->variant.file)
      p->variant.file = ks_arena_printf(st->arena, "%s.variant.cu", s->kernel);
    ks_node *n = ks_search_add(st, p->parent ? p->parent : job->parent, &p->variant,
                               p->is_template, p->proposer ? p->proposer : s->proposer->name,
                               p->technique, p->plan, (int)st->round, job->island);
    if (!n)
      return -1;
    *ks_array_push(st->arena, out) = n;
    added++;
  }
  return added;
}

int ks_search_round(search_state *st, ks_search_job *jobs, size_t njobs, ks_nodes *out,
                    search_ints *owners) {
  if (st->ranks)
    return ks_search_ranks_round(st, jobs, njobs, out, owners);
  if (!ks_search_budget_left(st))
    return 1;
  for (size_t j = 0; j < njobs; j++) {
    ks_proposals props = {0};
    size_t before = out->len;
    if (ks_search_raw(st, &jobs[j], &props) || ks_search_select(st, &jobs[j], &props, out) < 0)
      return -1;
    for (size_t k = before; k < out->len; k++)
      *ks_array_push(st->arena, owners) = jobs[j].island;
  }
  return 0;
}

int ks_search_judge_round(search_state *st, ks_node **nodes, size_t n) {
  return st->ranks ? ks_search_ranks_judge(st, nodes, n) : ks_search_eval_batch(st, nodes, n);
}
