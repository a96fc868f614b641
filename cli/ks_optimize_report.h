/* ks_optimize_report: what `optimize` shows: a live line per kernel on a
 * terminal (one plain line per round otherwise), and at the end a table or
 * JSON of every kernel's outcome. */
#ifndef KS_OPTIMIZE_REPORT_H
#define KS_OPTIMIZE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_insight.h"
#include "ks_llm.h"
#include "ks_llm_text.h"
#include "ks_search.h"

/* What the model did for one kernel. */
typedef struct ks_outcome_llm {
  unsigned plans, plans_rejected, children, retries, insights, cached, failed;
  unsigned rejected[KS_REPLY_NREASONS]; /* executor replies, by reason */
  bool budget_hit;
  const char *last_error;
  ks_llm_tally tally;      /* requests, tokens, cost of this kernel */
} ks_outcome_llm;

/* One kernel's outcome. */
typedef struct ks_outcome {
  const char *kernel;
  const char *file;
  unsigned line;
  const char *inputs;      /* "spec", "capture" or "spec+capture"; NULL: none */
  unsigned captured;       /* captured launches among the size sets */
  const char *status;      /* "optimized", "no faster variant", "skipped",
                              "failed", "interrupted", "not searched" */
  const char *note;        /* why skipped or failed */
  double baseline_ms;
  double best_ms;          /* = baseline when nothing won */
  double speedup;          /* 1 when nothing won */
  double speedup_low, speedup_high;
  double bw_fraction;      /* of the measured device bandwidth, the winner's
                              (or the original's) */
  const char *techniques;  /* the winner's chain, "" when none */
  const char *verdict;     /* the winner's confirmed verdict, or "-" */
  const char *winner_file; /* where the winner was written, or NULL */
  unsigned evaluated, correct, wrong, refused, duplicates, rounds;
  unsigned same_code;      /* of `evaluated`: verdicts reused for machine code
                              judged before, not run on the GPU again */
  double seconds;
  long long variant_id;
  bool budget_hit;         /* stopped by --max-seconds: --resume gives it
                              more time */
  const char *stopped_by;  /* "rounds", "patience", "exhausted" (nothing new
                              to propose) or "budget"; NULL: not searched */
  ks_proposer_count proposers[KS_PROPOSER_COUNTS];
  bool has_llm;
  ks_outcome_llm llm;
  ks_insight insight;      /* what the judge learned about the original: a
                              race, what bounds it (passes/insight) */
} ks_outcome;
typedef KS_ARRAY(ks_outcome) ks_outcomes;

typedef struct ks_progress_line {
  FILE *out;
  bool live;               /* a terminal: one line rewritten in place */
  bool color;
  size_t width;            /* columns of the terminal */
  bool dirty;              /* a live line is showing */
  const ks_llm_tally *llm; /* the run's model usage, shown when set */
} ks_progress_line;

void ks_progress_init(ks_progress_line *p, FILE *out, bool color);
/* The ks_search progress callback; `arg` is a ks_progress_line. */
void ks_progress_update(void *arg, const ks_search_progress *s);
/* Ends the live line (before any other output). */
void ks_progress_end(ks_progress_line *p);

void ks_outcomes_print(FILE *out, const ks_outcomes *o, bool measured, bool color);
/* `run` and `device` may be NULL. */
int ks_outcomes_json(ks_ctx *ctx, FILE *out, const ks_outcomes *o, long long run,
                     const char *strategy, const char *proposer, unsigned long long seed,
                     const char *device, bool measured);

#endif
