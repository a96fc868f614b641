/* ks_search: the search for faster variants of one kernel.
 *
 *   seed (the original, renamed) -> rounds of: choose parents -> proposers
 *   make children -> drop near-duplicates -> compile the round in parallel ->
 *   judge each child -> place it (population, archive, beam) -> persist
 *   -> until a budget (rounds, evaluations, wall time) is spent.
 *
 * Two strategies share everything but the choice of parents and the
 * placement of children:
 *  - evolve (default, in the manner of Kernel-Smith): islands, each with a
 *    population; an archive of MAP-Elites cells over (technique families,
 *    registers) that keeps the fastest variant of each cell; parents drawn
 *    by tournament from the island, inspirations from the archive; the best
 *    of each island migrates to the next every few rounds.
 *  - beam (in the manner of AccelOpt): the best B variants, N proposals from
 *    each, per iteration.
 *
 * What is swapped behind function-pointer tables (as QBE's targets): the
 * proposer (rules; an LLM later) and the evaluator (the GPU judge, or a
 * deterministic stand-in that lets CI test the search logic on a CPU; the
 * stand-in's numbers are never a measurement).
 *
 * Every variant and evaluation is written to the store as soon as it exists
 * (ks_store.h), so a search killed at any moment continues with resume =
 * true where it stopped: finished evaluations are read back, never redone.
 * Random choices are drawn from generators seeded by (seed, round, island),
 * so a resumed search makes the same choices an uninterrupted one would.
 *
 * Ownership: a search's nodes live in the arena the caller passes. */
#ifndef KS_SEARCH_H
#define KS_SEARCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "ks_judge.h"
#include "ks_spec.h"
#include "ks_store.h"
#include "ks_target.h"

typedef enum ks_strategy { KS_STRATEGY_EVOLVE, KS_STRATEGY_BEAM } ks_strategy;
const char *ks_strategy_name(ks_strategy s);

/* A variant the search knows: made, maybe evaluated. */
typedef struct ks_node {
  long long id;            /* the store's variant id */
  long long parent;        /* 0: the seed's parent is the original */
  ks_variant variant;
  bool is_template;
  const char *proposer;    /* "seed", "rules", "tuning", "llm" */
  const char *techniques;  /* the chain, "block=128 > vectorize"; "" for the seed */
  const char *plan;        /* the plan an LLM step followed; NULL otherwise */
  const char *hash;        /* of the normalized source and policy */
  int round, island;
  bool evaluated;
  ks_verdict verdict;
  const char *reason;
  const char *compile_log; /* NVRTC's log of a COMPILE_ERROR (this search only) */
  double speedup, speedup_low; /* vs the original, interleaved timing */
  double median_ms;
  int registers;
  double bw_fraction;
  double flop_fraction;    /* of the measured FP32 ceiling; 0: unknown (this
                              search's evaluations only, not the store's) */
} ks_node;
typedef KS_ARRAY(ks_node *) ks_nodes;

/* A child a proposer made: a variant, and the step that made it. */
typedef struct ks_proposal {
  ks_variant variant;
  bool is_template;
  const char *technique;   /* this step's tag, appended to the parent's chain */
  const char *proposer;    /* who made it ("rules", "llm"); NULL: the
                              proposer's own name */
  const char *plan;        /* the plan it implements (an LLM's); NULL: none */
  const ks_node *parent;   /* what it was made from, when not the parent the
                              proposer was asked about (an LLM's second try at
                              an earlier child that did not compile); NULL:
                              that parent */
} ks_proposal;
typedef KS_ARRAY(ks_proposal) ks_proposals;

typedef struct ks_rng {
  unsigned long long state;
} ks_rng;
void ks_rng_seed(ks_rng *r, unsigned long long seed, unsigned long long a, unsigned long long b);
unsigned long long ks_rng_next(ks_rng *r);
/* Uniform in [0, n). */
size_t ks_rng_below(ks_rng *r, size_t n);
double ks_rng_unit(ks_rng *r);

typedef struct ks_proposer {
  const char *name;        /* "rules", "tuning" */
  void *self;
  /* Up to `want` children of `parent`; `inspirations` are other good
   * variants (an LLM reads them; rules ignore them). Fewer (or none) is not
   * an error: it means nothing more applies to this parent. */
  int (*propose)(void *self, ks_ctx *ctx, const ks_node *parent, const ks_node *const *inspirations,
                 size_t ninspirations, ks_rng *rng, unsigned want, ks_arena *arena,
                 ks_proposals *out);
  /* Optional: told about each evaluated node of the search with its parent
   * (NULL for the seed), so that a proposer can learn from what was
   * measured (the LLM proposer's summarizer and memory). Returns -1 only
   * when the tool cannot go on. */
  int (*observe)(void *self, ks_ctx *ctx, const ks_node *node, const ks_node *parent);
} ks_proposer;

/* Several proposers as one: each draw asks them in turn for a share of the
 * children wanted (the first gets the remainder), each child keeps its
 * proposer's name, and every proposer observes every evaluation. The table
 * and `parts` must outlive the search. */
typedef struct ks_mixed_proposer {
  const ks_proposer *const *parts;
  size_t nparts;
} ks_mixed_proposer;
ks_proposer ks_mixed_proposer_make(ks_mixed_proposer *self);

typedef struct ks_evaluator {
  void *self;
  bool measured;           /* false for the stand-in: its numbers are not
                              measurements, and reports say so */
  int device;              /* the CUDA device it judges on (the stand-in's:
                              the one it stands in for), recorded with each
                              evaluation */
  /* Optional: compile a batch ahead of evaluation (in parallel). */
  int (*precompile)(void *self, ks_ctx *ctx, const ks_node *const *nodes, size_t n,
                    ks_arena *arena);
  /* Judges one variant (node == NULL: times the original, BASELINE).
   * `recheck` > 0 asks for a judgement on fresh inputs (another seed) of a
   * variant judged before. Returns -1 only when the tool cannot go on. */
  int (*eval)(void *self, ks_ctx *ctx, const ks_node *node, unsigned recheck, ks_arena *arena,
              ks_eval *out);
} ks_evaluator;

typedef struct ks_search_options {
  ks_strategy strategy;
  unsigned long long seed;
  unsigned rounds;          /* default 40 */
  unsigned max_evals;       /* 0: no limit */
  double max_seconds;       /* 0: no limit */
  unsigned patience;        /* stop after this many rounds in a row found
                               nothing faster; 0: never */
  /* evolve */
  unsigned islands;         /* default 4 */
  unsigned population;      /* per island; default 8 */
  unsigned children;        /* per island and round; default 3 */
  unsigned migrate_every;   /* rounds; default 5 */
  unsigned inspirations;    /* per parent; default 2 */
  /* beam */
  unsigned beam_width;      /* default 6 */
  unsigned proposals;       /* per beam member; default 4 */
  /* the final check */
  bool confirm;             /* re-judge the best with fresh inputs before
                               calling it the winner (default on via CLI) */
} ks_search_options;

void ks_search_options_defaults(ks_search_options *o);

/* What one proposer's candidates came to. */
typedef struct ks_proposer_count {
  const char *name;        /* "rules", "tuning", "llm"; NULL: an unused slot */
  unsigned candidates, evaluated, correct, faster;
} ks_proposer_count;
enum { KS_PROPOSER_COUNTS = 4 };

/* Judged FAST, SAME or SLOW: the same result as the original. */
bool ks_node_correct(const ks_node *n);
/* Each proposer's candidates among `nodes` (the seed left out), in the
 * order they first appear; `out` has KS_PROPOSER_COUNTS slots. */
void ks_count_proposers(const ks_nodes *nodes, ks_proposer_count *out);

/* Progress, once per evaluation and once per round. */
typedef struct ks_search_progress {
  const char *kernel;
  unsigned round, rounds;
  unsigned evaluated;      /* this search, including resumed ones */
  unsigned correct;        /* FAST, SAME or SLOW */
  double best_speedup;     /* 1 until something beats the original */
  const char *best_techniques;
  double elapsed_seconds;
  double evals_per_minute;
  double seconds_left;     /* estimate from the budgets; < 0: unknown */
  bool round_done;
  ks_proposer_count proposers[KS_PROPOSER_COUNTS]; /* name NULL: unused */
} ks_search_progress;

typedef struct ks_search_result {
  ks_node *best;           /* the winner, or NULL: nothing beats the original */
  ks_eval best_eval;       /* its (confirmed) evaluation */
  double baseline_ms;
  ks_eval baseline;
  unsigned evaluated, correct, wrong, refused, duplicates;
  unsigned rounds_done;
  bool budget_hit;         /* stopped by --max-evals or --max-seconds */
  bool time_budget_hit;    /* by --max-seconds: a resumed run gets more time
                              (--max-evals counts the resumed evaluations) */
  bool exhausted;          /* stopped because nothing new could be proposed */
  bool converged;          /* stopped by the patience option */
  ks_nodes nodes;          /* every node, in the order made */
} ks_search_result;

/* The ranks of an mpirun job searching together (optimize --mpi), through
 * an exchange of byte blobs in a star that the caller provides (the
 * cluster module: passes/ knows nothing of MPI). Every rank holds the whole
 * search (the same nodes, in the same order) and plays each round in step:
 * the proposals of a round are made by the ranks that own them (job j by
 * the j-th live rank, cyclically), sent to rank 0 and from it to all, and
 * every rank keeps the same new children in the same order; the children
 * are judged likewise, each by one rank on its own workers, and their
 * evaluations gathered by rank 0, which writes them to its store (the only
 * one) and sends them to all, so that every rank places them alike. The
 * search is the one a single process makes with the same seed: the choices
 * are drawn per round and island, and only rank 0 decides on budgets.
 * A rank that goes silent is lost: rank 0 makes its proposals and judges
 * its children itself from then on and says so; when rank 0 is lost the
 * others stop (optimize --resume on rank 0 goes on). */
typedef struct ks_search_ranks {
  void *self;
  int rank, size;
  /* Rank > 0: sends `data` to rank 0. Rank 0: datas[r] and lens[r] for
   * every rank (datas[0] its own), datas[r] NULL for a lost one. */
  int (*gather)(void *self, ks_ctx *ctx, unsigned tag, const void *data, size_t len,
                ks_arena *arena, const void **datas, size_t *lens);
  /* Rank 0: sends `*data` to every rank not lost. Rank > 0: `*data` gets
   * rank 0's; returns 1 when rank 0 is lost. */
  int (*bcast)(void *self, ks_ctx *ctx, unsigned tag, const void **data, size_t *len,
               ks_arena *arena);
  /* Rank 0: the ranks lost since the last call; returns how many. */
  size_t (*take_lost)(void *self, int *out);
  const char *(*host)(void *self, int rank);
  /* Kept by the search across the searches of a run (zero them once). */
  unsigned controls;       /* control messages sent (rank 0) or taken */
  bool *lost;              /* rank 0: size entries, lost for the rest of the run */
  bool ended;              /* rank 0 sent the end */
  const char *pending;     /* rank > 0: the control message taken by
                              ks_search_ranks_next, for the search to use */
  size_t pending_len;
  ks_arena arena;          /* what outlives one search (pending) */
} ks_search_ranks;

/* Rank > 0, between searches: waits for rank 0's next search. *kernel gets
 * its kernel's name (in `arena`), or NULL when rank 0 has no more. The
 * caller then runs ks_search_run on that kernel with `ranks` set (which
 * joins it) or, when it has no such kernel, ks_search_ranks_decline. */
int ks_search_ranks_next(ks_search_ranks *r, ks_ctx *ctx, ks_arena *arena, const char **kernel);
int ks_search_ranks_decline(ks_search_ranks *r, ks_ctx *ctx, const char *why);
/* A rank that cannot search at all (no GPU, a stage that failed): declines
 * every search rank 0 starts, saying why, so that rank 0 goes on without
 * waiting for its silence. */
int ks_search_ranks_decline_all(ks_search_ranks *r, ks_ctx *ctx, ks_arena *arena,
                                const char *why);
/* Rank 0: no more searches (idempotent): the others' ks_search_ranks_next
 * gives NULL. */
int ks_search_ranks_end(ks_search_ranks *r, ks_ctx *ctx);
void ks_search_ranks_release(ks_search_ranks *r);

typedef struct ks_search {
  ks_ctx *ctx;
  const char *kernel;              /* for messages and progress */
  ks_search_options opts;
  const ks_proposer *proposer;
  /* One evaluator per worker (--devices): evaluator[0..nevaluators), each
   * used by one thread at a time; nevaluators 0 or 1: evaluator alone,
   * judging in the search's thread as it always did. With several, a
   * round's children are handed out in order to whichever worker is free,
   * and placed, stored and observed in the order of the children, so the
   * search makes the same choices whatever finished first. A worker whose
   * evaluator fails (-1: its process cannot be started again) costs its
   * candidate (CRASH, the reason naming it) and leaves the pool; the others
   * go on, and only the last one's failure stops the search. */
  const ks_evaluator *evaluator;
  size_t nevaluators;
  bool *retired;                   /* several workers: those that left the pool,
                                      nevaluators entries kept across the
                                      run's searches; NULL: this search's own */
  ks_store *store;                 /* NULL: nothing persisted (tests) */
  long long store_kernel;          /* the store's kernel id */
  double baseline_ms;              /* known from a resumed run; 0: measure */
  const ks_variant *seed;          /* the original as a variant */
  bool seed_is_template;
  void (*progress)(void *arg, const ks_search_progress *p);
  void *progress_arg;
  volatile int *interrupted;       /* set by a signal handler: stop cleanly */
  /* optimize --mpi: this rank's part in a search of several; NULL: alone.
   * On a rank > 0, store is NULL (rank 0 owns it), no baseline is timed and
   * no winner confirmed: the result holds the nodes and best NULL. */
  ks_search_ranks *ranks;
} ks_search;

/* Runs (or, when the store already holds variants of this kernel, resumes)
 * the search. */
int ks_search_run(ks_search *s, ks_arena *arena, ks_search_result *out);

/* The last step of a technique chain: "block=128 > vec4" -> "vec4"; "" for
 * NULL. */
const char *ks_chain_last_step(const char *chain);

/* The hash that decides whether two variants are the same: the source with
 * comments and whitespace runs normalized, the policy and the guards. */
const char *ks_variant_hash(ks_arena *arena, const ks_variant *v);

/* The GPU judge as an evaluator: each node's policy and guards resolved
 * for the target's size sets (a policy that cannot be evaluated is the
 * variant's failure, INAPPLICABLE), then ks_judge_eval. */
/* A candidate whose machine code and launch equal an earlier one's (the
 * rewrites differ only in text, or in hints the compiler ignored) gets that
 * one's verdict instead of being run again. */
typedef struct ks_judged_code {
  char digest[65];
  ks_verdict verdict;
  double speedup, speedup_low, speedup_high, base_ms, cand_ms, bw_fraction;
  int registers;
  long long node;
  bool pending;            /* several devices: another worker is judging it */
  bool failed;             /* that judgement failed: nothing to reuse */
} ks_judged_code;

typedef struct ks_judge_evaluator {
  ks_judge *judge;
  ks_target *target;
  ks_arena arena;                  /* owns `judged`: ks_judge_evaluator_release */
  KS_ARRAY(ks_judged_code) judged;
  unsigned reused;                 /* verdicts reused so far (by this one) */
  /* Several devices: each worker's evaluator has its own judge and points
   * here to the first one, whose `judged` table (behind its `lock`) they
   * all share; NULL: this one's own, used from one thread. */
  struct ks_judge_evaluator *shared;
  pthread_mutex_t lock;            /* ks_judge_evaluator_make inits them */
  pthread_cond_t judged_done;      /* a pending entry of `judged` is done */
} ks_judge_evaluator;
ks_evaluator ks_judge_evaluator_make(ks_judge_evaluator *self);
void ks_judge_evaluator_release(ks_judge_evaluator *self);

/* The rules proposer: draws (rule, parameter) pairs at random and applies
 * them to the parent until it has enough children. `tuning_only` keeps to
 * the rules a classic autotuner has (launch configuration, unroll). */
typedef struct ks_rules_proposer {
  const ks_target *target;
  bool tuning_only;
  unsigned sm_count, max_smem_per_block; /* 0: the rules' defaults */
  ks_arena arena;          /* parsed parents, kept for later draws */
  void *parsed;            /* internal cache (propose_rules.c) */
} ks_rules_proposer;
ks_proposer ks_rules_proposer_make(ks_rules_proposer *self);
void ks_rules_proposer_release(ks_rules_proposer *self);

/* The stand-in for the GPU judge used by CI: a deterministic function of the
 * variant's text and technique chain (faster for some techniques, WRONG for
 * a marker), with no GPU. Never a measurement. */
ks_evaluator ks_standin_evaluator(void);
/* One stand-in per worker of --devices: the same numbers on every one (so
 * that several give the winners one gives), recorded as judged on
 * `device`. Fault site "standin_worker" (KERNELSMITH_FAULTS, counted over
 * every stand-in of the process) makes that evaluation's worker die: -1,
 * as a judge whose worker cannot be started again. */
typedef struct ks_standin {
  int device;
  unsigned worker;
} ks_standin;
ks_evaluator ks_standin_evaluator_make(ks_standin *self);

#endif
