/* ks_judge: one evaluation of a kernel variant, under the protocol users
 * must be able to trust (docs/judge.md):
 *
 *   compile (nvcc or NVRTC, candidate rules) -> for every size set and several fresh
 *   seeds: run original and variant on the same inputs, NaN-poisoned outputs,
 *   a second run with another sentinel, guard zones, input checksums ->
 *   on the timed size: interleaved timing with L2 flushes, clock filtering,
 *   the last timed output rechecked on fresh inputs -> verdict (-> warm
 *   timing, reported beside it, when asked and the data fit in L2).
 *
 * Verdicts: FAST, SAME or SLOW when the variant computes the same result and
 * the difference is (or is not) outside the noise; otherwise a verdict that
 * says what went wrong, with a one-line reason.
 *
 * Ownership: a ks_judge holds the compiler and the worker for a run and is
 * released with ks_judge_close. Evaluations are allocated in the arena the
 * caller passes. */
#ifndef KS_JUDGE_H
#define KS_JUDGE_H

#include <stdbool.h>

#include "ks_compile.h"
#include "ks_spec.h"
#include "ks_eval.h"
#include "ks_worker.h"

/* When an evaluation also times both kernels warm (docs/judge.md, "Warm
 * timing"): without L2 flushes, as a program that launches the kernel back
 * to back runs it, if the timed size's buffers together fit in the L2.
 * The verdict stays the flushed timing's. */
typedef enum ks_warm_mode {
  KS_WARM_OFF,
  KS_WARM_ON,         /* every timed evaluation */
  KS_WARM_UNSCREENED, /* only evaluations run with `screen` off: in a search,
                         the winner's recheck (the search's speed is kept) */
} ks_warm_mode;

typedef struct ks_judge_options {
  const char *arch;        /* NULL: the device's (sm_XY) */
  const char *cache_dir;   /* compiled cubins; NULL: none */
  int device;
  unsigned seeds;          /* per size set; 0: the spec's, else 3 */
  unsigned long long seed; /* base of all input seeds (reproducible runs) */
  bool no_time;            /* verify only */
  ks_timing_options timing;
  double min_effect;       /* a speedup below 1 + this is SAME; default 0.01 */
  unsigned timeout_ms;     /* per worker request; 0: 60 s */
  bool screen;             /* the search's quick judgement: the timed size is
                              verified only by the recheck after timing (one
                              fresh input set), other sizes in full; the
                              search's winner is judged again without it */
  ks_compiler_kind compiler; /* which compiler makes the cubins (docs/judge.md,
                              "Which compiler"); AUTO: nvcc when the kernel's
                              build command is known (ks_subject.build_known)
                              and nvcc is found, else NVRTC */
  ks_warm_mode warm;       /* also time warm when the data fit in L2 */
} ks_judge_options;

typedef struct ks_judge {
  ks_judge_options opts;
  ks_compiler compiler;
  ks_worker *worker;
  ks_device_info device;
  ks_ceilings ceilings;    /* measured once per device, cached on disk */
  bool have_ceilings;
} ks_judge;

/* Starts the worker and reads the device; measures (or loads) its ceilings.
 * Fails with one sentence when there is no usable GPU. */
int ks_judge_open(ks_ctx *ctx, ks_judge *j, const ks_judge_options *opts);
void ks_judge_close(ks_judge *j);

/* What is judged: the original kernel (its slice), its workloads (the spec
 * resolved for every size set) and the name expression of the instance;
 * with `reference fp64` in the spec, also the slice's double-precision twin
 * (docs/judge.md, "The fp64 reference"). */
typedef struct ks_subject {
  const char *kernel;            /* qualified name, for reports */
  const char *slice_source;      /* from ks_slice_kernel */
  const char *name_expression;   /* the original's instance */
  const char *const *options;    /* NVRTC options for the original, its
                                    variants and its twin: the user's build's
                                    code generation (ks_slice.codegen) */
  size_t noptions;
  const ks_workload *workloads;  /* one per size set */
  size_t nworkloads;
  bool fp64_reference;           /* the spec's `reference fp64` */
  bool capture_reference;        /* captured workloads are judged against the
                                    twin too, by default (docs/judge.md,
                                    "Captured workloads"): a twin that cannot
                                    be made or compiled is a note, said once,
                                    and they go on without it */
  const char *ref_refusal;       /* capture_reference: why the slice has no
                                    twin (ref_source NULL); NULL */
  const char *ref_source;        /* the slice's fp64 twin (ks_slice_to_fp64) */
  const char *ref_name_expression; /* the instance in the twin ("k<double>") */
  bool build_known;              /* the user's build compiles the kernel's file
                                    by a known command (compile_commands.json):
                                    KS_COMPILER_AUTO compiles with nvcc */
  /* filled by ks_judge_prepare: */
  ks_module base;
  ks_module ref;                 /* the twin, compiled; cubin NULL: none */
  int base_registers;
  bool nvcc;                     /* nvcc compiled the original, and compiles
                                    every variant */
  ks_module base_nvrtc;          /* with nvcc: NVRTC's original, judged against
                                    a variant nvcc rejects (one compiler per
                                    evaluation) */
  const char *compiler_note;     /* why NVRTC where nvcc was asked for; NULL */
  const char *machine_code_note; /* judged with NVRTC, the build's command known:
                                    how the original's machine code differs
                                    from nvcc's (registers, SASS digest); NULL
                                    when it is the same */
} ks_subject;

/* Compiles the original, and its fp64 twin when the subject asks for the
 * reference (a twin that does not compile is an error: the spec asks for
 * what cannot be given) or has captured workloads to give it to (there a
 * twin that cannot be had is one warning line, and the workloads are
 * judged against the original alone). */
int ks_judge_prepare(ks_ctx *ctx, ks_judge *j, ks_subject *s, ks_arena *arena);

/* A variant ready to judge: its source, the name expression of its kernel,
 * and for every workload of the subject its launch (the launch policy
 * evaluated) and whether its `requires` guards hold there. The caller
 * evaluates those (ks_variant_resolve in the frontend): the judge only runs. */
typedef struct ks_candidate {
  const ks_variant *variant;
  const char *name_expression;   /* "saxpy_v2" or "reduce_v<256>" */
  const ks_launch_cfg *launches; /* one per workload */
  const bool *guards_hold;       /* one per workload */
} ks_candidate;

/* Judges `c` against the original. c == NULL times the original alone
 * (verdict BASELINE). Returns -1 only when the tool cannot go on; every
 * failure of the candidate is a verdict. */
int ks_judge_eval(ks_ctx *ctx, ks_judge *j, ks_subject *s, const ks_candidate *c,
                  ks_arena *arena, ks_eval *out);

/* A captured launch replayed: the original run alone on workload `w`
 * (captured: its buffers carry the snapshots), and every output compared
 * with what the capture recorded after the launch. A capture the original
 * does not reproduce within tolerance missed something the kernel reads
 * (constant memory, a texture, pointers stored inside a buffer) and must
 * not serve as a test input. */
typedef struct ks_replay {
  ks_run_status status;        /* KS_RUN_OK: it ran; see below */
  const char *error;
  ks_output_checks outputs;    /* the capture fields set where compared */
  size_t compared;             /* outputs with a snapshot to compare */
  bool bit_for_bit;            /* every compared output identical */
  bool within_tolerance;       /* every compared output within tolerance */
} ks_replay;
int ks_judge_replay(ks_ctx *ctx, ks_judge *j, const ks_subject *s, size_t w, ks_arena *arena,
                    ks_replay *out);

/* Compiles `n` candidates in parallel ahead of their evaluations, so that
 * ks_judge_eval finds them in the cubin cache (a judge without a cache
 * directory gains nothing). A candidate that does not compile is left for
 * ks_judge_eval to report. */
int ks_judge_precompile(ks_ctx *ctx, ks_judge *j, const ks_subject *s, const ks_candidate *c,
                        size_t n, ks_arena *arena);
/* What decides a candidate's behaviour: the SHA-256 (hex) of its machine
 * code (compiled, or found in the cubin cache), its launch on every size
 * set and whether its guards hold there. Two candidates with the same
 * digest run the same instructions the same way: a search judges only the
 * first. Fails (no digest) when the candidate does not compile. */
int ks_judge_digest(ks_ctx *ctx, ks_judge *j, const ks_subject *s, const ks_candidate *c,
                    ks_arena *arena, char out[65]);
/* The unit a variant is compiled as: the slice, then the variant's source
 * after a #line naming its file. Rules parse exactly this text. */
const char *ks_judge_variant_unit(ks_arena *arena, const char *slice_source, const ks_variant *v);

/* Statistics used by the verdict (exposed for tests). */
double ks_stats_median(const double *x, size_t n);
double ks_stats_iqr(const double *x, size_t n);
double ks_stats_rsd(const double *x, size_t n);
/* 95% interval of median(a) / median(b) by a seeded bootstrap. */
void ks_stats_ratio_interval(const double *a, size_t na, const double *b, size_t nb,
                             unsigned long long seed, double *low, double *high);

#endif
