/* search_int: the state the strategies share with search.c. Internal to
 * passes/. */
#ifndef KS_SEARCH_INT_H
#define KS_SEARCH_INT_H

#include "ks_buf.h"
#include "ks_search.h"

typedef struct search_state {
  ks_search *s;
  ks_arena *arena;
  ks_search_result *res;
  ks_node *seed;
  unsigned round;          /* the round in progress */
  unsigned rounds_done;    /* the last round finished */
  unsigned first_round;    /* where this invocation started (resume) */
  unsigned evaluated_before; /* evaluations read back from the store */
  bool resumed;
  double t0;
  double best_speedup;
  const char *best_techniques;
  /* Where the time goes (KS_PROFILE=1 prints it per kernel): proposing,
   * compiling ahead, judging. */
  double t_propose, t_precompile, t_eval;
  double patience_best;    /* the best speedup when it last improved */
  unsigned patience_rounds; /* rounds since */
  /* Several workers (ks_search.nevaluators > 1): those that left the pool
   * (their evaluator failed), ks_search.retired or the search's own; NULL
   * with one. */
  bool *retired;
  /* optimize --mpi (search_ranks.c): the ranks taking part in this search,
   * in rank order, the same list on every rank (rank 0 sends it); the
   * exchanges made so far (they number the messages); while a rank judges
   * its share of a round, `share` collects the evaluations instead of
   * committing them. */
  ks_search_ranks *ranks;
  int *live;
  size_t nlive;
  unsigned control, step;
  struct rank_share *share;
} search_state;

typedef KS_ARRAY(int) search_ints;

/* One request for children: what a strategy decided for an island (or a
 * beam member) before the proposer is asked. */
typedef struct ks_search_job {
  ks_node *parent;
  const ks_node *insp[8];
  size_t ninsp;
  ks_rng rng;              /* as the strategy left it */
  unsigned want;
  int island;
} ks_search_job;

double ks_search_now(void);
/* Speedup for correct variants, -1 for the rest. */
double ks_node_fitness(const ks_node *n);
void ks_nodes_sort_by_fitness(ks_node **nodes, size_t n);
ks_node *ks_search_find(search_state *st, const char *hash);
ks_node *ks_search_add(search_state *st, const ks_node *parent, const ks_variant *v,
                       bool is_template, const char *proposer, const char *technique,
                       const char *plan, int round, int island);
int ks_search_eval_batch(search_state *st, ks_node **nodes, size_t n);
/* The same with several workers (search_pool.c). */
int ks_search_eval_pool(search_state *st, ks_node **nodes, size_t n);
/* The first worker still in the pool (0 with one): it times the baseline
 * and rechecks the winner. */
size_t ks_search_first_live(const search_state *st);
/* Worker w's evaluator judges `node`; the evaluation says who judged it. */
int ks_search_judge(search_state *st, size_t w, ks_ctx *ctx, const ks_node *node,
                    unsigned recheck, ks_arena *arena, ks_eval *out);
/* The baseline or a recheck, by the first worker in the pool; with several,
 * one that fails leaves the pool and the next one judges. */
int ks_search_judge_alone(search_state *st, const ks_node *node, unsigned recheck,
                          ks_arena *arena, ks_eval *out);
/* A finished evaluation of `node` stored, noted, shown to the proposer and
 * reported: in the order of the batch, from the search's thread. */
int ks_search_commit(search_state *st, ks_node *node, const ks_eval *e);
bool ks_search_budget_left(search_state *st);
/* At the end of a round: whether the patience option says to stop (sets
 * res->converged). */
bool ks_search_converged(search_state *st);
void ks_search_report(search_state *st, bool round_done);

/* A job's children, in two halves: what the proposer makes of it (asked
 * for more than wanted; the ranks of --mpi exchange these), and the new
 * ones kept, in order, up to job->want (adds the new ones, not seen
 * before, to `out`; returns the number added, -1 on a failure). */
int ks_search_raw(search_state *st, ks_search_job *job, ks_proposals *props);
int ks_search_select(search_state *st, const ks_search_job *job, ks_proposals *props,
                     ks_nodes *out);

/* A round's children from its jobs, in job order (owners[k]: the island of
 * job that made child k). Returns 1 when a budget (or an interrupt) says
 * the search stops before this round, 0 otherwise, -1 on a failure. */
int ks_search_round(search_state *st, ks_search_job *jobs, size_t njobs, ks_nodes *out,
                    search_ints *owners);
/* The round's children judged: ks_search_eval_batch, or over the ranks. */
int ks_search_judge_round(search_state *st, ks_node **nodes, size_t n);
/* note_eval: a node's evaluation noted (counts, best). */
void ks_search_note(search_state *st, ks_node *n, const ks_eval *e);

/* search_ranks.c */
/* Rank 0, once the seed is judged: the search's state to the others; they
 * say whether they take part. Rank > 0: the state received in its place
 * (the nodes, their evaluations, the round to go on from). */
int ks_search_ranks_begin(search_state *st);
int ks_search_ranks_round(search_state *st, ks_search_job *jobs, size_t njobs, ks_nodes *out,
                          search_ints *owners);
int ks_search_ranks_judge(search_state *st, ks_node **nodes, size_t n);
/* Rank 0, when its search failed after begin: the others are told. */
void ks_search_ranks_abort(search_state *st);
/* ks_search_commit while a rank judges its share: keeps the evaluation. */
int ks_search_ranks_keep(search_state *st, ks_node *node, const ks_eval *e);

int ks_search_evolve(search_state *st);
int ks_search_beam(search_state *st);

#endif
