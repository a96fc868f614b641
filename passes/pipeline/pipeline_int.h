/* pipeline_int: what pipeline.c and pipeline_search.c share (internal to
 * passes/pipeline/). */
#ifndef KS_PIPELINE_INT_H
#define KS_PIPELINE_INT_H

#include "ks_pipeline.h"
#include "ks_search.h"
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

/* pipeline_devices.c: the workers of --devices. */
int pipeline_workers(ks_pipeline *p);           /* p->workers from the job */
int pipeline_open_more_judges(ks_pipeline *p);  /* a judge per worker after the first */
/* The run's device text with its workers: "..., 2 workers on devices 0,1". */
const char *pipeline_workers_text(ks_pipeline *p, const char *device);
/* One evaluator per worker for a kernel's search (in p's arena). */
typedef struct pipeline_evaluators {
  ks_evaluator *table;
  size_t n;
  ks_judge_evaluator *judges;  /* the GPU's; NULL with the stand-in */
  ks_standin *standins;
} pipeline_evaluators;
void pipeline_evaluators_make(ks_pipeline *p, ks_target *target, pipeline_evaluators *out);
/* Releases them; returns the verdicts they reused (same machine code). */
unsigned pipeline_evaluators_release(pipeline_evaluators *e);

#endif
