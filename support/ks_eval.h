/* ks_eval: what one evaluation of a variant found, and its verdict: the
 * record the judge (backend/) fills, the search (passes/) reads, and the
 * results store (store/) keeps. It lives here so that the store needs
 * nothing of the backend to keep or read one back (ks_eval_json.h). */
#ifndef KS_EVAL_H
#define KS_EVAL_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_spec.h"

typedef enum ks_verdict {
  KS_VERDICT_FAST,          /* same result, faster beyond the noise */
  KS_VERDICT_SAME,          /* same result, no difference beyond the noise */
  KS_VERDICT_SLOW,          /* same result, slower beyond the noise */
  KS_VERDICT_WRONG,         /* a different result: the reason says how */
  KS_VERDICT_SUSPICIOUS,    /* faster than the memory system allows */
  KS_VERDICT_REFUSED,       /* broke a candidate rule; not compiled */
  KS_VERDICT_COMPILE_ERROR, /* NVRTC rejected it */
  KS_VERDICT_CRASH,         /* illegal address, trap, launch refused */
  KS_VERDICT_TIMEOUT,       /* exceeded the wall-clock limit */
  KS_VERDICT_INAPPLICABLE,  /* its guards exclude the timed size, or every
                               size it could be checked on */
  KS_VERDICT_BASELINE,      /* no variant: the original timed alone */
} ks_verdict;

const char *ks_verdict_name(ks_verdict v); /* "FAST", "WRONG", ... */

/* Comparison of one output buffer of the candidate against the original. */
typedef struct ks_output_check {
  const char *buffer;        /* parameter name */
  unsigned long long count;
  unsigned long long mismatches; /* beyond tolerance */
  unsigned long long unwritten;  /* still holding the poison value where the
                                    original wrote a value */
  double max_abs_error;
  double max_rel_error;
  long long first_mismatch;  /* index, -1 when none */
  double expected;           /* at first_mismatch */
  double got;
  /* Against the fp64 reference, when the request had one and the output is
   * floating point (has_ref); errors over the elements where the reference
   * is finite, non-finite results left out of the maxima, relative errors
   * where |ref| > atol (the tolerance against the reference): */
  bool has_ref;
  double ref_base_max_abs, ref_base_max_rel; /* the original's error */
  double ref_cand_max_abs, ref_cand_max_rel; /* the candidate's */
  unsigned long long ref_mismatches; /* elements where the candidate's error
                                        exceeds atol + rtol*|ref| and twice the
                                        original's error there plus atol */
  long long ref_first_mismatch;      /* index, -1 when none */
  double ref_value, ref_got, ref_base; /* at ref_first_mismatch: the
                                        reference, the candidate, the original */
  unsigned long long ref_excused;    /* elements beyond the tolerance against
                                        the original where the candidate is no
                                        less accurate than allowed against the
                                        reference: accepted, and left out of
                                        `mismatches` (first_mismatch, expected
                                        and got are the first one left) */
  /* Against what a capture recorded after the launch (the buffer has an
   * expect_file), in a replay request: the original's output compared bit
   * for bit, and with the tolerance. */
  bool has_capture;
  unsigned long long capture_bit_diffs;  /* elements whose bytes differ */
  unsigned long long capture_mismatches; /* of those, beyond tolerance */
  long long capture_first_diff;          /* index, -1 when none */
  double capture_expected, capture_got;  /* at capture_first_diff */
} ks_output_check;
typedef KS_ARRAY(ks_output_check) ks_output_checks;

/* What one seed's verification found. */
typedef struct ks_seed_check {
  unsigned long long seed;
  ks_output_checks outputs;      /* cand vs base, NaN-poisoned run */
  bool race;                     /* the second run (other sentinel) differed
                                    from the first beyond tolerance */
  const char *race_buffer;
  bool base_nondeterministic;    /* the original itself differed between its
                                    two runs (float atomics): tolerance used */
  const char *canary_buffer;     /* a buffer whose guard zone was written, or
                                    NULL */
  bool canary_before;            /* below the buffer (else after it) */
  const char *base_canary_buffer; /* the original itself wrote outside a
                                    buffer (a spec whose lengths are too
                                    short?), or NULL */
  bool base_canary_before;
  const char *changed_input;     /* an input buffer the candidate modified
                                    though the original leaves it alone, or NULL */
} ks_seed_check;
typedef KS_ARRAY(ks_seed_check) ks_seed_checks;

/* Per size set, what verification saw. */
typedef struct ks_size_report {
  const char *size;       /* size set name */
  bool timed;
  bool guards_hold;       /* false: the original alone runs there */
  bool screened;          /* verified only by the post-timing recheck
                             (ks_judge_options.screen) */
  ks_launch_cfg launch;   /* the variant's */
  ks_seed_checks seeds;
} ks_size_report;
typedef KS_ARRAY(ks_size_report) ks_size_reports;

typedef struct ks_eval {
  ks_verdict verdict;
  const char *reason;          /* one line; for FAST/SAME/SLOW the numbers */
  /* compile */
  const char *compiler;        /* "nvcc" or "nvrtc": what compiled the original
                                  and the variant (the same for both) */
  const char *compiler_note;   /* why NVRTC where nvcc was asked for; NULL */
  const char *machine_code_note; /* ks_subject.machine_code_note */
  const char *compile_log;     /* the compiler's log, for the terminal only */
  double compile_ms;
  bool compile_cached;
  int base_registers, cand_registers, base_spills, cand_spills;
  int base_smem, cand_smem;
  /* correctness */
  ks_size_reports sizes;
  double max_abs_error, max_rel_error;
  /* accuracy against the fp64 reference, the largest errors over every
   * size set, seed and floating-point output (has_ref: it ran) */
  bool has_ref;
  double ref_base_max_abs, ref_base_max_rel;   /* the original's */
  double ref_cand_max_abs, ref_cand_max_rel;   /* the variant's */
  unsigned long long ref_excused; /* elements beyond the tolerance against
                                     the original, accepted as no less
                                     accurate against the reference (summed) */
  /* timing, on the timed size */
  bool timed;
  unsigned base_samples, cand_samples, dropped_low_clock;
  double base_median_ms, cand_median_ms;
  double base_iqr_ms, cand_iqr_ms;
  double base_rsd, cand_rsd;   /* relative standard deviations */
  double speedup;              /* base median / cand median */
  double speedup_low, speedup_high; /* 95% bootstrap interval */
  double sm_clock_min_mhz, sm_clock_max_mhz;
  double timing_seconds;
  bool recheck_screened;       /* timed without the recheck (screening, a
                                  large timed size, a variant not FAST) */
  /* warm timing (ks_judge_options.warm): no L2 flush between samples, when
   * the timed size's buffers (warm_bytes together) fit in the L2 */
  bool warm_timed;
  unsigned long long warm_bytes;
  unsigned base_warm_samples, cand_warm_samples;
  double base_warm_median_ms, cand_warm_median_ms;
  double warm_speedup, warm_speedup_low, warm_speedup_high; /* 95% interval */
  /* against the device's ceilings */
  unsigned long long bytes_min;
  double floor_ms;             /* bytes_min over the measured bandwidth */
  double base_bandwidth, cand_bandwidth;     /* bytes/s achieved */
  double base_bw_fraction, cand_bw_fraction; /* of the measured ceiling */
  double flops, base_flop_rate, cand_flop_rate, cand_flop_fraction;
  double wall_seconds;         /* the whole evaluation */
  /* who judged it: the CUDA device (the stand-in's: the one it stands in
   * for) and the worker, the place in --devices (0 with one device); the
   * store keeps both as columns (not in the JSON) */
  int device, worker;
  /* and the MPI rank and its host name that judged it (--mpi: rank 0
   * stores what every rank judged, so the store must say where each verdict
   * came from); host NULL: not an --mpi run, rank 0 then. The store keeps
   * them in eval_ranks (not in the JSON either) */
  int rank;
  const char *host;
} ks_eval;

#endif
