/* ks_target: a kernel made ready to judge, and variants made ready to run.
 *
 * This is the glue between the frontend (scan, spec, slice) and the backend
 * (compile, worker, judge) that `check`, `bench` and the search share:
 *   scan the paths -> find the kernel -> its spec, checked -> its slice ->
 *   the spec resolved for every size set -> a ks_subject for the judge.
 *
 * Ownership: everything lives in the arena passed to ks_target_open, except
 * the scan, which ks_target_close releases. */
#ifndef KS_TARGET_H
#define KS_TARGET_H

#include <stdbool.h>

#include "ks_judge.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_spec.h"

typedef struct ks_target {
  ks_scan scan;
  bool have_scan;
  const ks_kernel *kernel;
  const ks_launch *site;   /* the first launch site, or NULL */
  ks_spec spec;
  ks_slice slice;
  ks_workload *workloads;  /* one per size set */
  size_t nworkloads;
  ks_subject subject;
} ks_target;

/* `name`: a kernel name or signature (ks_scan_lookup). Fails with a message
 * that says what is missing (no such kernel, no spec and how to write one,
 * a kernel that cannot be sliced). */
int ks_target_open(ks_ctx *ctx, const ks_scan_options *opts, const char *name, ks_arena *arena,
                   ks_target *out);
/* The same for a kernel of a scan the caller made (and keeps: the target
 * borrows it, and ks_target_close leaves it alone), so that many kernels of
 * one tree are made ready with one scan. */
int ks_target_open_kernel(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                          const ks_kernel *k, ks_arena *arena, ks_target *out);
void ks_target_close(ks_target *t);

/* Evaluates a variant's launch policy and guards for every workload. */
int ks_target_candidate(ks_ctx *ctx, const ks_target *t, const ks_variant *v, bool is_template,
                        ks_arena *arena, ks_candidate *out);

#endif
