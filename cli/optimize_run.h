/* optimize_run: the pipeline of `optimize` once its options are known
 * (cmd_optimize.c parses them, or reads them back for --resume). */
#ifndef KS_OPTIMIZE_RUN_H
#define KS_OPTIMIZE_RUN_H

#include <stdbool.h>

#include "ks_judge.h"
#include "ks_llm.h"
#include "ks_propose_llm.h"
#include "ks_scan.h"
#include "ks_search.h"
#include "ks_store.h"

typedef enum ks_proposer_kind {
  KS_PROPOSER_RULES,
  KS_PROPOSER_TUNING,
  KS_PROPOSER_LLM,
  KS_PROPOSER_ALL,   /* rules and llm */
} ks_proposer_kind;

typedef struct optimize_job {
  ks_ctx *ctx;
  const ks_scan_options *scan;
  const ks_strings *kernels;   /* --kernel names; empty: every kernel with a spec
                                  or captured launches */
  const ks_strings *captures;  /* capture files (profile --capture); may be empty */
  ks_search_options search;    /* max_seconds is the whole run's */
  bool tuning, json, standin;
  ks_proposer_kind proposer;
  const ks_llm_config *llm;    /* the flags' LLM settings (resolved in the run) */
  ks_llm_cache_mode llm_cache;
  unsigned llm_plans;          /* 0: the proposer's default */
  const char *store_dir;
  ks_store *store;             /* open (resume), or NULL: opened here; closed here */
  ks_judge_options judge;
  double max_seconds;
  long long resume_run;        /* 0: a new run */
  volatile int *interrupted;
  const char *argv_json;       /* the command line to store with a new run */
} optimize_job;

/* Returns the exit status. */
int optimize_run(optimize_job *job);

#endif
