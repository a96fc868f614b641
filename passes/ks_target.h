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

#include "ks_capture.h"
#include "ks_judge.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_spec.h"

typedef struct ks_target {
  ks_scan scan;
  bool have_scan;
  const ks_kernel *kernel;
  const ks_launch *site;   /* the first launch site, or NULL */
  ks_spec spec;            /* the kernel's; without one, made from the capture
                              (buffers, roles, inferred lengths) */
  bool have_spec;          /* the spec is the user's */
  ks_slice slice;
  ks_workload *workloads;  /* one per size set */
  size_t nworkloads;
  ks_subject subject;
  /* captured launches (ks_target_open_captured) */
  const char *capture_path;     /* NULL: none */
  const char *capture_instance; /* the template arguments captured, or NULL */
  size_t ncaptured;             /* the last ncaptured workloads are captured */
  unsigned ncapture_files;      /* capture files added (ks_target_add_captures) */
  /* Opened from the launch sites alone (ks_target_open_sites): the one
   * workload is a stand-in with no sizes (buffers with types and roles but
   * no lengths, scalars with no values) and the launch parts that evaluated;
   * launch_unknown[i] says why part i (grid, block, smem) did not, NULL
   * where it did. Such a target can be rewritten, never judged. */
  bool sites_only;
  const char *launch_unknown[3];
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
/* The same, with the launches of the kernel that `cap` holds (NULL: none)
 * as workloads too: after the spec's size sets, or, for a kernel with no
 * spec, as its only ones (the timed one the launch that moves the most
 * bytes), with a spec made from the capture. A kernel with neither fails
 * with the line that says how to get one. With `capture_only`, the
 * kernel's spec is not read: the captured launches are all there is. */
int ks_target_open_captured(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                            const ks_kernel *k, ks_capture *cap, bool capture_only,
                            ks_arena *arena, ks_target *out);
/* The fp64 twin that captured workloads get by default (docs/judge.md,
 * "Captured workloads"), unless the spec says `reference native`: sets
 * t->subject's capture_reference, and its ref_source and
 * ref_name_expression, or ref_refusal (why the slice has no twin) when it
 * cannot be made. Never fails; ks_target_open_captured calls it. */
void ks_target_capture_reference(ks_ctx *ctx, ks_target *t, ks_arena *arena);
/* A kernel from its captured launches alone, of template instance
 * `instance` ("float, 128"; NULL: the first captured): what replay runs
 * for each instance a capture holds. */
int ks_target_open_capture_instance(ks_ctx *ctx, const ks_scan_options *opts,
                                    const ks_scan *scan, const ks_kernel *k, ks_capture *cap,
                                    const char *instance, ks_arena *arena, ks_target *out);
/* A kernel with neither spec nor capture, for `rewrite` alone: sliced (a
 * template at the one instance its launch sites use), with the stand-in
 * workload described at sites_only. Expects t->scan filled (the caller's
 * scan, as ks_target_open leaves it); `k` is one of its kernels. */
int ks_target_open_sites(ks_ctx *ctx, const ks_scan_options *opts, const ks_kernel *k,
                         ks_arena *arena, ks_target *t);
void ks_target_close(ks_target *t);

/* ---- Captured launches (target_capture.c) ----
 * A captured launch as a workload: one buffer per allocation its pointers
 * point into, filled from the snapshot before the launch and expected to
 * end as the one after (KS_DIST_FILE, expect_file), scalars by value, the
 * launch as captured; len_<param> from the spec, else inferred from the
 * scalars, else unknown. */

/* Indices into cap->launches of the launches of scan kernel `k` of the one
 * instance `instance` (NULL: the first captured); `*targs` gets that
 * instance's template arguments (NULL for a kernel that is no template). */
size_t ks_capture_launches_of(ks_arena *a, const ks_capture *cap, const ks_scan *scan,
                              const ks_kernel *k, const char *instance, size_t **out,
                              const char **targs);
/* Appends the usable captured launches of t->kernel as workloads (a launch
 * that cannot serve is left out with a warning saying why); without a
 * user's spec (t->have_spec false) the first call also fills t->spec's
 * buffers, whose lengths later calls (more capture files) then use.
 * `instance`: NULL for the first call; later ones pass t->capture_instance. */
int ks_target_add_captures(ks_ctx *ctx, ks_target *t, ks_capture *cap, const char *instance,
                           ks_arena *arena);
/* What to add when the original fails on, or does not reproduce, captured
 * workload `w`: a hint when a capture window kept only part of an
 * allocation (the kernel may reach beyond it), else "". */
const char *ks_capture_window_hint(const ks_workload *w);
/* One warning per captured kernel that is not under the paths scanned
 * (the usual cause: a path that misses the sources). */
void ks_capture_warn_unmatched(ks_ctx *ctx, const ks_capture *cap, const ks_scan *scan,
                               ks_arena *arena);
/* The spec a kernel with no spec of its own gets from `cap` (what apply
 * needs of it: buffers, roles, lengths), as ks_target_open_captured makes
 * it. */
int ks_capture_spec(ks_ctx *ctx, ks_capture *cap, const ks_scan *scan, const ks_kernel *k,
                    ks_arena *arena, ks_spec *out);
/* A spec for the user to paste above the kernel, drafted from its captured
 * launches (capture_spec.c): an annotation comment with the timed size as
 * captured and smaller ones, the scalars, and the buffers with roles,
 * lengths and distributions read off the captured data. */
int ks_capture_spec_text(ks_ctx *ctx, ks_capture *cap, const ks_scan *scan, const ks_kernel *k,
                         ks_arena *arena, const char **out);

/* Evaluates a variant's launch policy and guards for every workload. */
int ks_target_candidate(ks_ctx *ctx, const ks_target *t, const ks_variant *v, bool is_template,
                        ks_arena *arena, ks_candidate *out);

#endif
