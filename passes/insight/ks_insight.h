/* ks_insight: what the judge learned about a kernel besides its variants'
 * speed, told to the user (docs/judge.md, "What the judge learned").
 *
 *  - A race in the original. Where the code shows it (ks_race_static): a
 *    store to global memory whose index does not depend on a thread (or
 *    block) dimension the launch uses, outside atomics and without a guard
 *    on that dimension, read from the kernel's tree; 8 threads of a 32x8
 *    block then read, add to and write every `y[i] += ...`. Where runs show
 *    it (ks_race_observe, over the evaluations the store keeps): the
 *    original run twice on the same inputs gave different outputs, and
 *    variants that change only scheduling disagreed with it.
 *  - Whether the kernel is memory-, compute- or latency-bound
 *    (ks_bound_classify): from its measured time, the bytes it must move,
 *    its FLOPs, its launch and the device's ceilings.
 *
 * The findings go to the optimize table and JSON, the planner's prompt,
 * and the store's kernel row (as the JSON ks_insight_json makes, read back
 * by ks_insight_parse), which is where a resumed run reads them again.
 *
 * Ownership: every string lives in the arena the caller passes; inputs are
 * borrowed for the call. */
#ifndef KS_INSIGHT_H
#define KS_INSIGHT_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_kast.h"
#include "ks_spec.h"
#include "ks_store.h"
#include "ks_target.h"

/* ---- races ---------------------------------------------------------------- */

typedef struct ks_race {
  bool found;              /* static or dynamic evidence, or both */
  /* What the code shows (ks_race_static); shown_by_code false: nothing */
  bool shown_by_code;
  const char *buffer;      /* the parameter stored to, "y" */
  const char *store;       /* the store's target as written, "y[i]" */
  const char *op;          /* "+=", "=", "++", ... */
  bool read_modify_write;  /* the store reads what it overwrites (+=, x = x + ..) */
  char dim;                /* 'x', 'y' or 'z': the dimension it ignores */
  bool blocks;             /* the dimension is the grid's (blockIdx), not the
                              block's (threadIdx) */
  unsigned writers;        /* threads (blocks) writing each index at once */
  ks_launch_cfg launch;    /* the launch it was judged with */
  /* What runs showed (ks_race_observe) */
  unsigned seeds_checked;  /* verification seeds the original ran twice on */
  unsigned original_differed; /* of them, seeds where its two runs differed */
  bool atomics;            /* the kernel calls atomics: differing runs may be
                              float atomics landing in another order */
  unsigned evaluated;      /* variants judged */
  unsigned wrong;          /* of them, WRONG because an output differs */
  unsigned wrong_scheduling; /* of those, variants whose techniques change
                              only scheduling (block shape, unrolling,
                              registers, ...), which a race-free kernel's
                              results do not depend on */
  bool shown_by_runs;      /* original_differed (without atomics), or
                              wrong_scheduling */
} ks_race;

/* The race the kernel's code shows for `launch` (the timed size's), if
 * any: fills the static part of `out` (found and shown_by_code true) and
 * returns 0 whether or not one was found; -1 only for a tree it cannot
 * read. The first racing store in source order is reported. */
int ks_race_static(ks_ctx *ctx, const ks_kast *kast, const ks_launch_cfg *launch, ks_arena *arena,
                   ks_race *out);
/* The same from the kernel's unit (its slice), parsed for `name`. */
int ks_race_static_unit(ks_ctx *ctx, const char *path, const char *unit, const char *name,
                        const ks_launch_cfg *launch, ks_arena *arena, ks_race *out);

/* Whether a technique chain ("block=128 > unroll=4") changes only
 * scheduling: every step one whose result a race-free kernel computes
 * bit for bit as the original does. */
bool ks_race_scheduling_only(const char *techniques);

/* Adds what the runs of the store's kernel `kernel` showed: every stored
 * evaluation's seeds (the original run twice), and its WRONG verdicts. */
int ks_race_observe(ks_ctx *ctx, ks_store *store, long long kernel, ks_arena *arena,
                    ks_race *race);
/* The same from one evaluation (tests, and what ks_race_observe does per
 * evaluation); `techniques` is the variant's chain. */
void ks_race_add_eval(ks_race *race, const ks_eval *e, const char *techniques);

/* "y[i] written by 8 threads per index (blockDim.y = 8, index independent of
 * threadIdx.y)", or for runs alone "the original's two runs on the same
 * inputs differed on 2 of 3 seeds"; NULL when nothing was found. */
const char *ks_race_line(ks_arena *arena, const ks_race *race);
/* What the search did for the kernel: "8 of 26 variants refused WRONG:
 * their results differ as the racing original's do"; NULL: nothing to say. */
const char *ks_race_search_line(ks_arena *arena, const ks_race *race);

/* ---- what bounds a kernel ------------------------------------------------- */

typedef enum ks_bound_kind {
  KS_BOUND_UNKNOWN,        /* not enough numbers to say */
  KS_BOUND_MEMORY,
  KS_BOUND_COMPUTE,
  KS_BOUND_LATENCY,        /* too few threads for the device */
} ks_bound_kind;

const char *ks_bound_name(ks_bound_kind k); /* "memory", "compute", "latency", "unknown" */

typedef struct ks_bound_input {
  double median_ms;        /* measured; 0: unknown */
  unsigned long long bytes;/* it must move at least; 0: unknown */
  double flops;            /* per launch; 0: unknown (taken as none) */
  ks_launch_cfg launch;    /* all zero: unknown */
  unsigned sm_count;       /* 0: unknown */
  unsigned max_threads_per_sm; /* 0: 2048 */
  double bandwidth;        /* bytes/s the device copies at; 0: unknown */
  double flops_peak;       /* fp32 FLOP/s; 0: unknown */
} ks_bound_input;

typedef struct ks_bound {
  ks_bound_kind kind;
  double bw_fraction;      /* of the bandwidth; 0: unknown */
  double flop_fraction;    /* of the FLOP ceiling; 0: unknown */
  unsigned long long blocks, threads; /* of the launch; 0: unknown */
  double fill;             /* threads over what the SMs hold at once; 0: unknown */
  const char *why;         /* one clause: "62% of the measured bandwidth",
                              "16 blocks for 132 SMs" */
} ks_bound;

/* The roofline's reading: a launch that fills less than the SMs (fewer
 * blocks than SMs, or threads for under a quarter of what they hold) and
 * reaches under half of either ceiling is latency-bound; otherwise the
 * ceiling its arithmetic intensity (FLOPs per byte against the device's
 * ridge point) puts it under. */
void ks_bound_classify(ks_arena *arena, const ks_bound_input *in, ks_bound *out);

/* ---- a kernel's findings together ----------------------------------------- */

typedef struct ks_insight {
  ks_race race;
  ks_bound bound;
  /* Where the roofline's bytes came from: "spec" or "capture"; NULL: none. */
  const char *bytes_from;
} ks_insight;

/* The device's side of the bound. */
typedef struct ks_insight_device {
  unsigned sm_count;           /* 0: unknown (the stand-in judge) */
  unsigned max_threads_per_sm; /* 0: 2048 */
  double bandwidth;            /* measured copy bandwidth, bytes/s; 0: unknown */
  double flops_peak;           /* measured fp32 FLOP/s; 0: unknown */
} ks_insight_device;

/* The device's ceilings as the judge measured them (NULL: the stand-in's,
 * all unknown). */
struct ks_judge;
ks_insight_device ks_insight_device_of(const struct ks_judge *judge);

/* The timed size's launch of a target (what the race and the bound are
 * judged with). */
const ks_launch_cfg *ks_insight_launch(const ks_target *t);

/* Before a search: what the kernel's code shows (ks_race_static on the
 * target's slice and timed launch). A kernel whose tree cannot be read is
 * not an error: nothing is found, and a debug line says why. */
void ks_insight_begin(ks_ctx *ctx, const ks_target *t, ks_arena *arena, ks_insight *out);

/* After it (or after a search that failed): what the store's evaluations
 * of the kernel showed (counted afresh, so a resumed search counts every
 * evaluation once), the original's bound from its baseline (NULL or
 * untimed: unknown), and the findings written to the store's kernel row
 * (store NULL: not written). */
int ks_insight_finish(ks_ctx *ctx, const ks_target *t, const ks_eval *baseline,
                      const ks_insight_device *dev, ks_store *store, long long kernel,
                      ks_arena *arena, ks_insight *in);

/* JSON text of the findings, for the store's kernel row (the members the
 * optimize JSON has: "race" and "bound", each null when nothing is known). */
const char *ks_insight_json(ks_arena *arena, const ks_insight *in);
/* Back from that text; an unreadable text gives empty findings. */
void ks_insight_parse(ks_arena *arena, const char *json, ks_insight *out);

#endif
