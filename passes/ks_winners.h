/* ks_winners: the verified winners of a run, as the results store holds
 * them. The one way `apply`, the compiler launcher, `status`, `verify` and
 * `export` learn what was won and what it needs at a launch site; the
 * files under .kernelsmith/winners/ are an export of this (ks_winners_export),
 * never read back.
 *
 * A kernel's winner is the variant the search confirmed on fresh inputs
 * (the store's kernels.winner; a store written before that column existed:
 * the fastest variant whose newest evaluation is FAST after a recheck). Its
 * source, launch policy and guards are the store's row, checked against the
 * row's hash, so nothing edited on disk is applied.
 *
 * With a scan (ks_winners_query.scan), each winner is also resolved against
 * the sources: the kernel found by name and its definition's hash compared
 * with the one the run optimized; its spec: the user's (annotation or
 * sidecar) or, for a kernel optimized from captured launches, made again
 * from the capture file the store names; the static footprints of its
 * buffers (ks_footprint.h) from the slice the run judged, for guards that
 * need a buffer's extent where no spec gives one. A winner that cannot be
 * applied keeps `skip`, one sentence saying why.
 *
 * Ownership: everything lives in the arena passed to ks_winners_load; the
 * scan is borrowed. */
#ifndef KS_WINNERS_H
#define KS_WINNERS_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_emit.h"
#include "ks_footprint.h"
#include "ks_scan.h"
#include "ks_spec.h"
#include "ks_store.h"

typedef struct ks_winner {
  /* From the store. */
  long long kernel_id;       /* the kernel's row in the run */
  const char *name;          /* the kernel's name as the run stored it */
  const char *file;          /* where the run found its definition */
  const char *source_hash;   /* of that file's text when it was optimized */
  long long variant_id;
  ks_variant variant;        /* source, kernel_name, launch policy, guards */
  bool is_template;
  double speedup;            /* the confirming evaluation's */
  double speedup_low, speedup_high; /* its 95% interval */
  double baseline_ms, median_ms;
  double bw_fraction;        /* the variant's, of the measured bandwidth */
  const char *techniques;    /* "block=128 > vectorize" */
  const char *proposer;      /* "rules", "llm", ... */
  const char *inputs;        /* "spec" or "capture" */
  const char *capture;       /* the capture file the inputs came from, or NULL */
  ks_strings sites;          /* the digests of the launch sites it was
                                optimized with (ks_launch_digest); none: a
                                run from before they were kept */
  ks_eval eval;              /* the confirming evaluation, whole (warm
                                timing, compiler, registers ...) */
  bool have_eval;
  /* Resolved against the scan (NULL / unset without one). */
  const ks_kernel *k;
  ks_spec spec;              /* the user's, or remade from the capture */
  bool have_spec;
  ks_footprints footprints;  /* one per parameter of the kernel */
  const char *variant_name;  /* its name in the user's code: KERNEL_ks */
  const char *note;          /* where the speedup was measured, one line */
  const char *skip;          /* why it cannot be applied; NULL: it can */
} ks_winner;
typedef KS_ARRAY(ks_winner) ks_winner_list;

typedef struct ks_winners {
  ks_run_row run;
  int arch;                  /* 90 for sm_90, the architecture the run
                                judged on; 0: not judged on a GPU */
  ks_winner_list items;      /* kernels with a winner, in the store's order */
} ks_winners;

typedef struct ks_winners_query {
  const char *store_dir;     /* the .kernelsmith directory */
  long long run;             /* 0: the newest */
  const ks_scan *scan;       /* NULL: the store's facts alone */
  const char *const *kernels;/* only these (names as stored); n 0: all */
  size_t nkernels;
  const char *file;          /* only kernels the run found in this file
                                (same path, or the same file name: a store
                                from another checkout), else NULL */
  double min_speedup;        /* leave out slower winners (0: any FAST) */
  bool any_device;           /* also a run the stand-in judged (status,
                                export); else such a run is refused */
} ks_winners_query;

/* The winners of the run. A store without the run, or a run not judged on
 * a GPU (unless any_device), fails with the sentence the user needs. Kernels without a winner
 * are simply absent. */
int ks_winners_load(ks_ctx *ctx, const ks_winners_query *q, ks_arena *arena, ks_winners *out);

/* The winners as files under `dir` (.kernelsmith/winners/KERNEL.cu, the
 * variant file format of ks_variant_file.h), each written whole through a
 * temporary file and a rename: an export for reading, never read back. */
int ks_winners_export(ks_ctx *ctx, const ks_winners *w, const char *dir, ks_arena *arena);

/* What the emitter needs of a resolved winner (k, spec, variant, name,
 * footprints as extents), verified on `archs`; `comment` goes above the
 * variant (NULL: none). */
void ks_winner_emit(ks_arena *arena, const ks_winner *w, const int *archs, size_t narchs,
                    const char *comment, ks_emit_kernel *out);

/* The path of a kernel's winner file under `store_dir`. */
const char *ks_winner_path(ks_arena *arena, const char *store_dir, const char *kernel);

#endif
