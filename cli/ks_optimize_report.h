/* ks_optimize_report: what `optimize` shows: a live line per kernel on a
 * terminal (one plain line per round otherwise), and at the end a table or
 * JSON of every kernel's outcome. */
#ifndef KS_OPTIMIZE_REPORT_H
#define KS_OPTIMIZE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_ctx.h"
#include "ks_pipeline.h"

typedef struct ks_progress_line {
  FILE *out;
  bool live;               /* a terminal: one line rewritten in place */
  bool color;
  size_t width;            /* columns of the terminal */
  bool dirty;              /* a live line is showing */
  const ks_llm_tally *llm; /* the run's model usage, shown when set */
  ks_ctx *ctx;             /* for the hooks' lines */
  bool quiet_done;         /* no plain line per kernel (--json) */
} ks_progress_line;

void ks_progress_init(ks_progress_line *p, FILE *out, bool color);
/* The ks_search progress callback; `arg` is a ks_progress_line. */
void ks_progress_update(void *arg, const ks_search_progress *s);
/* Ends the live line (before any other output). */
void ks_progress_end(ks_progress_line *p);
/* The pipeline's hooks printing through `p` (lines on stderr prefixed
 * with the program's name; a plain line per kernel when not live). */
ks_pipeline_hooks ks_progress_hooks(ks_progress_line *p, ks_ctx *ctx, bool quiet_done);

void ks_outcomes_print(FILE *out, const ks_outcomes *o, bool measured, bool color);
/* `run` and `device` may be NULL. */
int ks_outcomes_json(ks_ctx *ctx, FILE *out, const ks_outcomes *o, long long run,
                     const char *strategy, const char *proposer, unsigned long long seed,
                     const char *device, bool measured);

#endif
