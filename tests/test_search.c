/* The search's logic on the CPU: evolve and beam against the deterministic
 * stand-in for the GPU judge (eval_standin.c; its numbers are not
 * measurements) and a scripted proposer, so every run is reproducible.
 * Checked: the winner, that an incorrect variant never wins, determinism
 * under a seed, deduplication, each budget, and resume from the store
 * after an interruption without judging anything twice; several workers
 * (--devices) making the same search as one, the store naming who judged,
 * and a worker dying mid-run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_search.h"
#include "ks_store.h"

/* The scripted proposer: a child appends one technique the parent's chain
 * does not have yet. "wrong" children are judged WRONG by the stand-in,
 * "warp_rows" is the best step, "fast_math" only helps after "vectorize"
 * (the stand-in does not know that; it only multiplies factors). */
static const char *const techniques[] = {"block=128", "block=256", "vectorize", "restrict",
                                         "unroll=4",  "warp_rows", "wrong",     "coarsen=4",
                                         "fast_math", "block=1024"};
enum { NTECH = sizeof techniques / sizeof *techniques };

static unsigned proposals_made;

static int scripted_propose(void *self, ks_ctx *ctx, const ks_node *parent,
                            const ks_node *const *insp, size_t ninsp, ks_rng *rng, unsigned want,
                            ks_arena *arena, ks_proposals *out) {
  (void)self;
  (void)ctx;
  (void)insp;
  (void)ninsp;
  for (unsigned k = 0; k < want * 2 && out->len < want; k++) {
    const char *t = techniques[ks_rng_below(rng, NTECH)];
    if (parent->techniques && strstr(parent->techniques, t))
      continue;
    ks_proposal *p = ks_array_push(arena, out);
    p->variant = parent->variant;
    p->variant.requires = (ks_strings){0};
    p->variant.source = ks_arena_printf(arena, "%s t_%s", parent->variant.source, t);
    for (char *c = (char *)p->variant.source; *c; c++)
      if (*c == '=')
        *c = '_';
    p->technique = t;
    proposals_made++;
  }
  return 0;
}

static const ks_proposer scripted = {.name = "rules", .propose = scripted_propose};

static const ks_variant seed_variant = {.source = "__global__ void k_ks_variant(float *x) {}",
                                        .kernel_name = "k_ks_variant"};

typedef struct run {
  ks_ctx ctx;
  ks_arena arena;
  ks_evaluator ev;
  ks_search s;
  ks_search_result r;
  int rc;
} run;

static void run_search(run *x, ks_strategy strategy, unsigned long long seed, unsigned rounds,
                       unsigned max_evals, ks_store *store, long long kernel) {
  memset(x, 0, sizeof *x);
  ks_ctx_init(&x->ctx, "test_search");
  x->ev = ks_standin_evaluator();
  x->s = (ks_search){.ctx = &x->ctx, .kernel = "k", .proposer = &scripted, .evaluator = &x->ev,
                     .store = store, .store_kernel = kernel, .seed = &seed_variant};
  ks_search_options_defaults(&x->s.opts);
  x->s.opts.strategy = strategy;
  x->s.opts.seed = seed;
  x->s.opts.rounds = rounds;
  x->s.opts.max_evals = max_evals;
  x->rc = ks_search_run(&x->s, &x->arena, &x->r);
  if (x->rc)
    fail_msg("search failed: %s", x->ctx.error);
}

static void run_release(run *x) {
  ks_arena_release(&x->arena);
  ks_ctx_release(&x->ctx);
}

static void assert_sound(const run *x) {
  /* No two nodes with one hash; nothing incorrect ever wins. */
  for (size_t i = 0; i < x->r.nodes.len; i++)
    for (size_t j = i + 1; j < x->r.nodes.len; j++)
      assert_string_not_equal(x->r.nodes.items[i]->hash, x->r.nodes.items[j]->hash);
  if (x->r.best) {
    assert_int_equal(x->r.best->verdict, KS_VERDICT_FAST);
    assert_null(strstr(x->r.best->techniques, "wrong"));
    assert_true(x->r.best->speedup > 1.01);
  }
}

static void evolve_finds_the_best_steps(void **state) {
  (void)state;
  run x;
  run_search(&x, KS_STRATEGY_EVOLVE, 7, 40, 0, NULL, 0);
  assert_sound(&x);
  assert_non_null(x.r.best);
  /* warp_rows (2x) and vectorize (1.25x) are the big steps. */
  assert_non_null(strstr(x.r.best->techniques, "warp_rows"));
  assert_non_null(strstr(x.r.best->techniques, "vectorize"));
  assert_true(x.r.best->speedup > 2.5);
  assert_true(x.r.wrong > 0); /* "wrong" children were judged and dropped */
  assert_true(x.r.evaluated > 20);
  assert_int_equal(x.r.baseline.verdict, KS_VERDICT_BASELINE);
  run_release(&x);
}

static void beam_finds_the_best_steps(void **state) {
  (void)state;
  run x;
  run_search(&x, KS_STRATEGY_BEAM, 7, 12, 0, NULL, 0);
  assert_sound(&x);
  assert_non_null(x.r.best);
  assert_non_null(strstr(x.r.best->techniques, "warp_rows"));
  assert_true(x.r.best->speedup > 2.5);
  run_release(&x);
}

static void same_seed_same_search(void **state) {
  (void)state;
  for (int strategy = 0; strategy < 2; strategy++) {
    run a, b, c;
    run_search(&a, (ks_strategy)strategy, 11, 15, 0, NULL, 0);
    run_search(&b, (ks_strategy)strategy, 11, 15, 0, NULL, 0);
    run_search(&c, (ks_strategy)strategy, 12, 15, 0, NULL, 0);
    assert_int_equal(a.r.nodes.len, b.r.nodes.len);
    for (size_t i = 0; i < a.r.nodes.len; i++)
      assert_string_equal(a.r.nodes.items[i]->hash, b.r.nodes.items[i]->hash);
    /* Another seed explores in another order. */
    bool differs = a.r.nodes.len != c.r.nodes.len;
    for (size_t i = 0; !differs && i < a.r.nodes.len; i++)
      differs = strcmp(a.r.nodes.items[i]->hash, c.r.nodes.items[i]->hash) != 0;
    assert_true(differs);
    run_release(&a);
    run_release(&b);
    run_release(&c);
  }
}

static void duplicates_are_not_judged_twice(void **state) {
  (void)state;
  run x;
  run_search(&x, KS_STRATEGY_EVOLVE, 3, 40, 0, NULL, 0);
  /* The scripted proposer has 10 techniques: the space is small, so the
   * search meets the same variants again and again. */
  assert_true(x.r.duplicates > 0);
  /* Every evaluation is of a distinct node (the seed included). */
  assert_true(x.r.evaluated <= x.r.nodes.len);
  run_release(&x);
}

static void budgets_stop_the_search(void **state) {
  (void)state;
  run x;
  run_search(&x, KS_STRATEGY_EVOLVE, 5, 40, 9, NULL, 0);
  assert_int_equal(x.r.evaluated, 9);
  assert_true(x.r.budget_hit);
  run_release(&x);

  run_search(&x, KS_STRATEGY_BEAM, 5, 2, 0, NULL, 0);
  assert_int_equal(x.r.rounds_done, 2);
  assert_false(x.r.budget_hit);
  run_release(&x);

  /* Wall time: a budget of zero seconds left lets nothing but the seed run. */
  memset(&x, 0, sizeof x);
  ks_ctx_init(&x.ctx, "test_search");
  x.ev = ks_standin_evaluator();
  x.s = (ks_search){.ctx = &x.ctx, .kernel = "k", .proposer = &scripted, .evaluator = &x.ev,
                    .seed = &seed_variant};
  ks_search_options_defaults(&x.s.opts);
  x.s.opts.max_seconds = 1e-9;
  assert_int_equal(ks_search_run(&x.s, &x.arena, &x.r), 0);
  assert_true(x.r.budget_hit);
  assert_true(x.r.evaluated <= 1);
  run_release(&x);

  /* Patience: a search that stops improving stops early, after the best
   * it would have found anyway, and says why. */
  for (int strategy = 0; strategy < 2; strategy++) {
    ks_strategy st = strategy ? KS_STRATEGY_BEAM : KS_STRATEGY_EVOLVE;
    run full;
    run_search(&full, st, 7, 40, 0, NULL, 0);
    memset(&x, 0, sizeof x);
    ks_ctx_init(&x.ctx, "test_search");
    x.ev = ks_standin_evaluator();
    x.s = (ks_search){.ctx = &x.ctx, .kernel = "k", .proposer = &scripted, .evaluator = &x.ev,
                      .seed = &seed_variant};
    ks_search_options_defaults(&x.s.opts);
    x.s.opts.strategy = st;
    x.s.opts.seed = 7;
    x.s.opts.patience = 2;
    assert_int_equal(ks_search_run(&x.s, &x.arena, &x.r), 0);
    assert_true(x.r.converged || x.r.exhausted);
    assert_true(x.r.rounds_done < 40);
    assert_true(x.r.evaluated <= full.r.evaluated);
    assert_sound(&x);
    run_release(&x);
    run_release(&full);
  }

  /* An interruption (a signal handler's flag) stops it too. */
  volatile int stop = 1;
  memset(&x, 0, sizeof x);
  ks_ctx_init(&x.ctx, "test_search");
  x.ev = ks_standin_evaluator();
  x.s = (ks_search){.ctx = &x.ctx, .kernel = "k", .proposer = &scripted, .evaluator = &x.ev,
                    .seed = &seed_variant, .interrupted = &stop};
  ks_search_options_defaults(&x.s.opts);
  assert_int_equal(ks_search_run(&x.s, &x.arena, &x.r), 0);
  assert_int_equal(x.r.evaluated, 0);
  run_release(&x);
}

/* An interrupted search (here: stopped by an evaluation budget, the same
 * state a kill leaves, since every evaluation is committed when made)
 * continues from the store: nothing judged twice, and it ends as well as an
 * uninterrupted one. */
static void resume_continues_from_the_store(void **state) {
  (void)state;
  for (int strategy = 0; strategy < 2; strategy++) {
    char dir[] = "/tmp/ks-search-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ks_ctx ctx;
    ks_ctx_init(&ctx, "test_search");
    ks_store *store;
    if (ks_store_open(&ctx, dir, &store))
      fail_msg("%s", ctx.error);
    long long runid, kid;
    ks_run_row rr = {.status = "running", .command = "optimize", .strategy = "evolve",
                     .proposer = "rules", .seed = 21, .options = "{}"};
    assert_int_equal(ks_store_run_begin(&ctx, store, &rr, &runid), 0);
    ks_kernel_row kr = {.run = runid, .name = "k", .file = "k.cu", .line = 1,
                        .source_hash = "0", .slice = "", .spec = "", .status = "searching"};
    assert_int_equal(ks_store_kernel_put(&ctx, store, &kr, &kid), 0);

    run first;
    run_search(&first, (ks_strategy)strategy, 21, 20, 12, store, kid);
    assert_true(first.r.budget_hit);
    unsigned judged_first = first.r.evaluated;

    run second;
    memset(&second, 0, sizeof second);
    run_search(&second, (ks_strategy)strategy, 21, 20, 0, store, kid);
    assert_sound(&second);
    /* Everything the first run judged came back from the store. */
    assert_true(second.r.evaluated >= judged_first);
    for (size_t i = 0; i < second.r.nodes.len; i++)
      for (size_t j = i + 1; j < second.r.nodes.len; j++)
        assert_true(second.r.nodes.items[i]->id != second.r.nodes.items[j]->id);

    run whole;
    run_search(&whole, (ks_strategy)strategy, 21, 20, 0, NULL, 0);
    assert_non_null(second.r.best);
    assert_non_null(whole.r.best);
    assert_true(second.r.best->speedup > 0.9 * whole.r.best->speedup);

    /* The store holds one evaluation per variant, plus the baseline and
     * the winner's rechecks. */
    long long evals = 0;
    assert_int_equal(ks_store_eval_count(&ctx, store, runid, &evals), 0);
    assert_true(evals <= (long long)second.r.nodes.len + 2 + 3 + 3);

    run_release(&first);
    run_release(&second);
    run_release(&whole);
    ks_store_close(store);
    ks_ctx_release(&ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
  }
}

static void hash_ignores_layout(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_variant x = {.source = "__global__ void k(float *x) { x[0] = 1; }"};
  ks_variant y = {.source = "__global__ void k(float *x)\n{\n  // set\n  x[0] = 1; /* one */\n}\n"};
  ks_variant z = {.source = "__global__ void k(float *x) { x[0] = 2; }"};
  assert_string_equal(ks_variant_hash(&a, &x), ks_variant_hash(&a, &y));
  assert_string_not_equal(ks_variant_hash(&a, &x), ks_variant_hash(&a, &z));
  /* The launch policy and the guards are part of a variant. */
  ks_variant w = x;
  w.block = "128";
  assert_string_not_equal(ks_variant_hash(&a, &x), ks_variant_hash(&a, &w));
  ks_arena_release(&a);
}

/* A second proposer for the mixed test: children tagged "llm_step", and a
 * record of what it observed. */
typedef struct observer {
  unsigned observed, with_parent, parent_mismatch;
} observer;

static int other_propose(void *self, ks_ctx *ctx, const ks_node *parent, const ks_node *const *insp,
                         size_t ninsp, ks_rng *rng, unsigned want, ks_arena *arena,
                         ks_proposals *out) {
  (void)self, (void)ctx, (void)insp, (void)ninsp;
  for (unsigned k = 0; k < want; k++) {
    ks_proposal *p = ks_array_push(arena, out);
    p->variant = parent->variant;
    p->variant.requires = (ks_strings){0};
    p->variant.source = ks_arena_printf(arena, "%s llm_%llu", parent->variant.source,
                                        ks_rng_next(rng) % 1000);
    p->technique = "llm_step";
  }
  return 0;
}

static int other_observe(void *self, ks_ctx *ctx, const ks_node *node, const ks_node *parent) {
  (void)ctx;
  observer *o = self;
  o->observed++;
  if (parent) {
    o->with_parent++;
    if (parent->id != node->parent)
      o->parent_mismatch++;
  }
  return 0;
}

static void mixed_proposers_share_rounds(void **state) {
  (void)state;
  observer ob = {0};
  ks_proposer other = {.name = "llm", .self = &ob, .propose = other_propose,
                       .observe = other_observe};
  const ks_proposer *parts[] = {&scripted, &other};
  ks_mixed_proposer mp = {.parts = parts, .nparts = 2};
  ks_proposer mixed = ks_mixed_proposer_make(&mp);
  run x;
  memset(&x, 0, sizeof x);
  ks_ctx_init(&x.ctx, "test_search");
  x.ev = ks_standin_evaluator();
  x.s = (ks_search){.ctx = &x.ctx, .kernel = "k", .proposer = &mixed, .evaluator = &x.ev,
                    .seed = &seed_variant};
  ks_search_options_defaults(&x.s.opts);
  x.s.opts.seed = 3;
  x.s.opts.rounds = 6;
  assert_int_equal(ks_search_run(&x.s, &x.arena, &x.r), 0);
  assert_sound(&x);
  unsigned rules = 0, llm = 0, evaluated = 0;
  for (size_t i = 0; i < x.r.nodes.len; i++) {
    const ks_node *n = x.r.nodes.items[i];
    rules += !strcmp(n->proposer, "rules");
    llm += !strcmp(n->proposer, "llm");
    evaluated += n->evaluated;
    if (!strcmp(n->proposer, "llm"))
      assert_non_null(strstr(n->techniques, "llm_step"));
  }
  assert_true(rules > 0 && llm > 0);
  /* Every evaluation was observed, each child with its own parent. */
  assert_true(ob.observed >= evaluated);
  assert_true(ob.with_parent > 0);
  assert_int_equal(ob.parent_mismatch, 0);
  run_release(&x);
}

/* Several workers (--devices): stand-ins as the workers, each judged
 * evaluation placed in the order of the children whatever finished first. */
typedef struct pool_run {
  run x;
  ks_standin standins[4];
  ks_evaluator evs[4];
} pool_run;

static void run_pool(pool_run *p, size_t workers, ks_strategy strategy, unsigned long long seed,
                     unsigned rounds, unsigned max_evals, const char *faults, ks_store *store,
                     long long kernel) {
  memset(p, 0, sizeof *p);
  run *x = &p->x;
  ks_ctx_init(&x->ctx, "test_search");
  if (faults)
    assert_int_equal(ks_ctx_set_faults(&x->ctx, faults), 0);
  for (size_t i = 0; i < workers; i++) {
    p->standins[i] = (ks_standin){.device = (int)i, .worker = (unsigned)i};
    p->evs[i] = ks_standin_evaluator_make(&p->standins[i]);
  }
  x->s = (ks_search){.ctx = &x->ctx, .kernel = "k", .proposer = &scripted, .evaluator = p->evs,
                     .nevaluators = workers, .store = store, .store_kernel = kernel,
                     .seed = &seed_variant};
  ks_search_options_defaults(&x->s.opts);
  x->s.opts.strategy = strategy;
  x->s.opts.seed = seed;
  x->s.opts.rounds = rounds;
  x->s.opts.max_evals = max_evals;
  x->rc = ks_search_run(&x->s, &x->arena, &x->r);
}

static void assert_same_search(const run *a, const run *b) {
  assert_int_equal(a->r.nodes.len, b->r.nodes.len);
  assert_int_equal(a->r.evaluated, b->r.evaluated);
  for (size_t i = 0; i < a->r.nodes.len; i++) {
    const ks_node *x = a->r.nodes.items[i], *y = b->r.nodes.items[i];
    assert_string_equal(x->hash, y->hash);
    assert_int_equal(x->evaluated, y->evaluated);
    assert_int_equal(x->verdict, y->verdict);
    assert_true(x->speedup == y->speedup);
  }
  assert_int_equal(a->r.best != NULL, b->r.best != NULL);
  if (a->r.best)
    assert_string_equal(a->r.best->hash, b->r.best->hash);
}

static void several_workers_same_search(void **state) {
  (void)state;
  /* Some children take longer, so later ones finish first. */
  setenv("KS_STANDIN_SLOW", "t_vectorize:15", 1);
  for (int strategy = 0; strategy < 2; strategy++)
    for (unsigned max_evals = 0; max_evals <= 17; max_evals += 17) {
      run one;
      run_search(&one, (ks_strategy)strategy, 11, 6, max_evals, NULL, 0);
      for (size_t workers = 2; workers <= 3; workers++) {
        pool_run p;
        run_pool(&p, workers, (ks_strategy)strategy, 11, 6, max_evals, NULL, NULL, 0);
        if (p.x.rc)
          fail_msg("search failed: %s", p.x.ctx.error);
        assert_sound(&p.x);
        assert_same_search(&one, &p.x);
        assert_int_equal(p.x.r.budget_hit, one.r.budget_hit);
        run_release(&p.x);
      }
      run_release(&one);
    }
  unsetenv("KS_STANDIN_SLOW");
}

/* The store says who judged each evaluation, and the work was shared. */
static void workers_are_recorded(void **state) {
  (void)state;
  char dir[] = "/tmp/ks-search-XXXXXX";
  assert_non_null(mkdtemp(dir));
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_search");
  ks_store *store;
  if (ks_store_open(&ctx, dir, &store))
    fail_msg("%s", ctx.error);
  long long runid, kid;
  ks_run_row rr = {.status = "running", .command = "optimize", .strategy = "evolve",
                   .proposer = "rules", .seed = 5, .options = "{}"};
  assert_int_equal(ks_store_run_begin(&ctx, store, &rr, &runid), 0);
  ks_kernel_row kr = {.run = runid, .name = "k", .file = "k.cu", .line = 1, .source_hash = "0",
                      .slice = "", .spec = "", .status = "searching"};
  assert_int_equal(ks_store_kernel_put(&ctx, store, &kr, &kid), 0);
  setenv("KS_STANDIN_SLOW", "t_:2", 1); /* every child: the workers take turns */
  pool_run p;
  run_pool(&p, 3, KS_STRATEGY_EVOLVE, 5, 5, 0, NULL, store, kid);
  unsetenv("KS_STANDIN_SLOW");
  if (p.x.rc)
    fail_msg("search failed: %s", p.x.ctx.error);
  ks_arena a = KS_ARENA_INIT;
  ks_eval_worker_counts w;
  assert_int_equal(ks_store_eval_workers(&ctx, store, runid, &a, &w), 0);
  assert_true(w.len >= 2);
  long long total = 0, evals = 0;
  for (size_t i = 0; i < w.len; i++) {
    assert_int_equal(w.items[i].device, w.items[i].worker); /* devices 0, 1, 2 */
    total += w.items[i].evaluations;
  }
  assert_int_equal(ks_store_eval_count(&ctx, store, runid, &evals), 0);
  assert_int_equal(total, evals);
  ks_arena_release(&a);
  run_release(&p.x);
  ks_store_close(store);
  ks_ctx_release(&ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A worker that dies costs its candidate; the others go on. With one
 * worker its death is the search's, as it always was; the last of several
 * too. */
static void a_dead_worker_costs_its_candidate(void **state) {
  (void)state;
  pool_run p;
  run_pool(&p, 3, KS_STRATEGY_EVOLVE, 7, 8, 0, "standin_worker:6", NULL, 0);
  if (p.x.rc)
    fail_msg("search failed: %s", p.x.ctx.error);
  unsigned crashed = 0;
  size_t lost = 0;
  for (size_t i = 0; i < p.x.r.nodes.len; i++) {
    const ks_node *n = p.x.r.nodes.items[i];
    if (n->evaluated && n->verdict == KS_VERDICT_CRASH) {
      crashed++;
      lost = i;
      assert_non_null(strstr(n->reason, "left the pool"));
      assert_non_null(strstr(n->reason, "injected fault standin_worker"));
    }
  }
  assert_int_equal(crashed, 1);
  /* The others went on: children after the lost one were judged. */
  size_t after = 0;
  for (size_t i = lost + 1; i < p.x.r.nodes.len; i++)
    after += p.x.r.nodes.items[i]->evaluated;
  assert_true(after > 5);
  assert_non_null(p.x.r.best);
  assert_sound(&p.x);
  run_release(&p.x);

  run_pool(&p, 1, KS_STRATEGY_EVOLVE, 7, 8, 0, "standin_worker:6", NULL, 0);
  assert_int_equal(p.x.rc, -1);
  assert_non_null(strstr(p.x.ctx.error, "died"));
  run_release(&p.x);

  run_pool(&p, 2, KS_STRATEGY_EVOLVE, 7, 8, 0, "standin_worker:4,standin_worker:7", NULL, 0);
  assert_int_equal(p.x.rc, -1);
  assert_non_null(strstr(p.x.ctx.error, "the last one"));
  run_release(&p.x);
  /* The winner's recheck (the 13th evaluation here, after a budget of 12):
   * a worker that fails it leaves the pool and the next one rechecks. */
  run_pool(&p, 2, KS_STRATEGY_EVOLVE, 7, 8, 12, "standin_worker:13", NULL, 0);
  if (p.x.rc)
    fail_msg("search failed: %s", p.x.ctx.error);
  assert_int_equal(p.x.r.evaluated, 12);
  assert_non_null(p.x.r.best);
  run_release(&p.x);
  run_pool(&p, 1, KS_STRATEGY_EVOLVE, 7, 8, 12, "standin_worker:13", NULL, 0);
  assert_int_equal(p.x.rc, -1);
  run_release(&p.x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mixed_proposers_share_rounds),
      cmocka_unit_test(hash_ignores_layout),
      cmocka_unit_test(evolve_finds_the_best_steps),
      cmocka_unit_test(beam_finds_the_best_steps),
      cmocka_unit_test(same_seed_same_search),
      cmocka_unit_test(duplicates_are_not_judged_twice),
      cmocka_unit_test(budgets_stop_the_search),
      cmocka_unit_test(resume_continues_from_the_store),
      cmocka_unit_test(several_workers_same_search),
      cmocka_unit_test(workers_are_recorded),
      cmocka_unit_test(a_dead_worker_costs_its_candidate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
