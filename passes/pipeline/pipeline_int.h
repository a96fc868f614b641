/* pipeline_int: what pipeline.c and pipeline_search.c share (internal to
 * passes/pipeline/). */
#ifndef KS_PIPELINE_INT_H
#define KS_PIPELINE_INT_H

#include "ks_pipeline.h"
#include "ks_target.h"

struct ks_pipeline_kernel {
  const ks_kernel *kernel;
  ks_target target;
  bool ready;              /* sliced, spec resolved, compiled */
  ks_outcome *outcome;     /* set once every kernel is listed (the array grows) */
  long long store_id;
};

/* The model's side of a run, shared by its kernels. */
struct ks_pipeline_llm {
  bool on;
  ks_llm_config cfg;         /* resolved */
  ks_llm_totals totals;
  ks_llm_client *client;     /* NULL in replay mode */
  ks_llm_memory memory;      /* the run's insights, shared by its kernels */
  long long run;
};

/* A line for the user through the hooks (printf-style). */
void pipeline_say(const ks_pipeline *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* pipeline_search.c */
bool pipeline_uses_llm(const ks_pipeline_job *job);
int pipeline_llm_open(ks_pipeline *p);
void pipeline_llm_release(ks_pipeline *p);
int pipeline_search_kernel(ks_pipeline *p, ks_pipeline_kernel *k, double seconds);
int pipeline_outcome_from_store(ks_pipeline *p, ks_pipeline_kernel *k, const ks_kernel_row *row);

#endif
