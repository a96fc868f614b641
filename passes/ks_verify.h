/* ks_verify: whether the search's speedups hold inside the user's program.
 *
 *   the run's winners (ks_winners.h, the store's facts alone) -> the patched
 *   program run under the injection library (ks_profile_run.h), in pairs:
 *   once with KERNELSMITH_DISABLE=1 (every site runs the original), once
 *   without, every launch timed, each run's dispatch statistics written to
 *   a private KERNELSMITH_STATS_FILE -> per winner: its GPU time before
 *   (KERNEL) and after (KERNEL_ks, or KERNEL_ks<...>, counted with any
 *   launches of KERNEL that still ran), the in-program speedup beside the
 *   search's, the path each launch site took -> a verdict and, for a winner
 *   not faster, its likely cause -> the report as text and as JSON
 *   (schema `kernelsmith-cc.verify`, version 1; docs/verify.md).
 *
 * The collecting steps (ks_verify_begin, _add_profile, _add_stats,
 * _add_exit, _finish) are separate from the runs (ks_verify_run) so that
 * they can be tested on profiles and statistics made by hand.
 *
 * Ownership: a report and everything in it lives in the arena passed to
 * ks_verify_begin or ks_verify_run; profiles and winners passed in are
 * borrowed during the call only (what is kept is copied). */
#ifndef KS_VERIFY_H
#define KS_VERIFY_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_profile.h"
#include "ks_spec.h"
#include "ks_winners.h"

#define KS_VERIFY_SCHEMA "kernelsmith-cc.verify"
#define KS_VERIFY_VERSION 1

/* The paths of runtime/kernelsmith_dispatch.h's ksrt::site, in the order
 * its statistics line prints them. */
typedef enum ks_site_path {
  KS_PATH_VARIANT,
  KS_PATH_OFF,
  KS_PATH_OTHER_ARCH,
  KS_PATH_GUARDS,
  KS_PATH_NO_DEVICE,
  KS_NPATHS
} ks_site_path;

/* "variant", "off", "other architecture", "guards failed", "no device". */
const char *ks_site_path_name(ks_site_path p);

/* One launch site's counts, from its lines
 * "kernelsmith: KERNEL at FILE:LINE: variant N, off N, other architecture N,
 *  guards failed N, no device N" (added up over runs and processes). */
typedef struct ks_site_stats {
  const char *kernel; /* as the site names it: the kernel's unqualified name */
  const char *where;  /* "saxpy.cu:41" */
  unsigned long long counts[KS_NPATHS];
} ks_site_stats;
typedef KS_ARRAY(ks_site_stats) ks_site_stats_list;

/* Parses one statistics line (with or without its newline) into `out`,
 * strings in `a`. False when the line is not one (other output is skipped). */
bool ks_site_stats_parse(ks_arena *a, const char *line, ks_site_stats *out);
/* Adds the statistics lines of `path` to `list` (a site already there gets
 * the counts added). A file that does not exist adds nothing: no patched
 * site ran. */
int ks_site_stats_read(ks_ctx *ctx, const char *path, ks_arena *a, ks_site_stats_list *list);

/* One side of the comparison: a kernel in the runs without the variants
 * (before) or with them (after), every run of that side added up. */
typedef struct ks_verify_side {
  double ms;                           /* GPU time of KERNEL and KERNEL_ks */
  unsigned long long launches;         /* of both */
  unsigned long long variant_launches; /* of KERNEL_ks */
  unsigned long long timed;            /* launches CUPTI timed */
  unsigned long long back_to_back;     /* launches right after one of the same kernel */
  double mean_ms;                      /* ms / timed; 0 when none */
  /* The launch configuration with the most launches: of KERNEL_ks when the
   * variant ran on this side, else of KERNEL. */
  ks_profile_config config;
  bool have_config;
  /* Every configuration the profiles kept, merged over the runs. */
  ks_profile_configs variant_configs, original_configs;
} ks_verify_side;

typedef enum ks_verify_verdict {
  KS_VERIFY_FASTER,     /* faster in the program, within 10% of the search's */
  KS_VERIFY_NOT_FASTER, /* below 1.0, or the variant never ran */
  KS_VERIFY_SHORT,      /* faster in the program, but more than 10% under
                           the search's: kept, and why is said */
  KS_VERIFY_FAILED,     /* a run of the program did not exit 0 */
  KS_VERIFY_NOT_RUN,    /* the program never launched the kernel */
} ks_verify_verdict;

/* "faster", "not faster", "short of the search", "failed", "not run". */
const char *ks_verify_verdict_name(ks_verify_verdict v);

/* What a cause is, for machines; the sentence is ks_verify_kernel.cause. */
typedef enum ks_verify_cause_kind {
  KS_CAUSE_NONE,
  KS_CAUSE_GUARDS,      /* the variant did not run: guards failed */
  KS_CAUSE_OFF,         /* switched off */
  KS_CAUSE_OTHER_ARCH,  /* another architecture */
  KS_CAUSE_NO_DEVICE,   /* no device */
  KS_CAUSE_NO_DISPATCH, /* no patched site reported: not rebuilt? */
  KS_CAUSE_LAUNCH,      /* a different launch from the search's */
  KS_CAUSE_WARM,        /* warm cache */
  KS_CAUSE_SIZE,        /* a different size */
  KS_CAUSE_FEW,         /* launched too few times for a median */
  KS_CAUSE_PROGRAM,     /* the program failed (verdict failed) */
  KS_CAUSE_UNKNOWN,
} ks_verify_cause_kind;

/* "guards failed", "switched off", "another architecture", "no device",
 * "no dispatch", "a different launch", "warm cache", "a different size",
 * "few launches", "program failed", "unknown"; NULL for none. */
const char *ks_verify_cause_name(ks_verify_cause_kind c);

typedef struct ks_verify_kernel {
  const char *name;          /* qualified, as the store has it */
  const char *base;          /* the name without template arguments */
  const char *variant;       /* the variant's qualified name: ns::k_ks */
  const char *site_name;     /* what its sites call it: the unqualified name */
  const char *file;          /* where the run found it */
  ks_verify_side before, after;
  double speedup;            /* before's mean over after's; 0: not both ran */
  /* The search's numbers (the confirming evaluation). */
  double search_speedup, search_low, search_high;
  double search_baseline_ms; /* the original's median, flushed L2 */
  bool search_warm;          /* the evaluation has a warm-L2 timing */
  double search_warm_speedup;
  bool have_judge_launch;    /* the variant's launch on the timed size */
  ks_launch_cfg judge_launch;
  ks_site_stats_list sites;  /* its launch sites in the runs with the variants */
  ks_verify_verdict verdict;
  ks_verify_cause_kind cause_kind;
  const char *cause;         /* one sentence; NULL when faster */
} ks_verify_kernel;
typedef KS_ARRAY(ks_verify_kernel) ks_verify_kernels;

/* One run of the program. */
typedef struct ks_verify_run_status {
  bool variants;             /* false: KERNELSMITH_DISABLE=1 */
  int exit_code;             /* the shell's: 128+N for signal N */
  int signal;                /* 0: it exited */
  unsigned processes;        /* that loaded the injection library */
} ks_verify_run_status;
typedef KS_ARRAY(ks_verify_run_status) ks_verify_run_statuses;

typedef struct ks_verify_report {
  ks_arena *arena;
  ks_strings command;
  unsigned repeat;           /* pairs asked for */
  const char *store_dir;
  long long run;             /* the store's run the winners are from */
  const char *device;        /* that run's device */
  ks_verify_run_statuses runs; /* in the order they ran */
  bool failed;               /* some run did not exit 0 */
  const char *failure;       /* the sentence saying so, first thing shown */
  ks_verify_kernels kernels; /* the winners, in the store's order */
  size_t unlisted;           /* kernels the profiles saw with no winner */
  ks_strings unlisted_names; /* their names (internal, for counting) */
  unsigned long long dropped;/* records CUPTI dropped, all runs */
  unsigned truncated;        /* runs whose last line was cut off */
} ks_verify_report;

/* A report for these winners, with no run yet. */
void ks_verify_begin(ks_verify_report *r, const ks_winners *w, ks_arena *a);
/* Adds one run's profile to the side it ran on. */
void ks_verify_add_profile(ks_verify_report *r, const ks_profile *p, bool variants);
/* Adds a run's statistics lines (with the variants; those of the runs
 * without say "off" everywhere and are not added). */
int ks_verify_add_stats(ks_ctx *ctx, ks_verify_report *r, const char *path);
/* Records how a run ended (waitpid's status). */
void ks_verify_add_exit(ks_verify_report *r, bool variants, int wait_status, unsigned processes);
/* The speedups, verdicts and causes, and the failure sentence. */
void ks_verify_finish(ks_verify_report *r);

/* The verdict of one kernel and, when not faster, its cause (sets verdict,
 * cause_kind and cause): the variant did not run (guards failed, switched
 * off, another architecture, no device, no dispatch), a different launch,
 * warm cache, a different size, else unknown; the first that applies. */
void ks_verify_judge(ks_arena *a, ks_verify_kernel *k, bool program_failed);

/* The path a kernel's sites took, for people: "variant 200/200",
 * "guards failed 200", "variant 150/200, guards failed 50". */
const char *ks_verify_site_paths(ks_arena *a, const ks_site_stats *s);

typedef struct ks_verify_options {
  const char *store_dir;     /* the .kernelsmith directory */
  long long run;             /* 0: the newest */
  char *const *cmd;          /* NULL-terminated */
  int ncmd;
  unsigned repeat;           /* pairs; 0 is 1 */
  const char *inject_lib;    /* ks_inject_lib_find's */
  const char *work_parent;   /* where the private directory of lines and
                                statistics files is made */
  bool any_device;           /* a stand-in's run too (tune --stand-in-judge) */
} ks_verify_options;

/* Loads the winners, runs the program 2 * repeat times (off, on, off, ...;
 * after a run that failed, only the pair is finished) and fills `out`.
 * A run that did not exit 0 is in the report (failed), not an error.
 * Fails when the winners cannot be loaded or there are none, the program
 * cannot be started, its lines cannot be read (they are kept, and named),
 * or no run loaded the injection library. */
int ks_verify_run(ks_ctx *ctx, const ks_verify_options *o, ks_arena *a, ks_verify_report *out);

/* The report as JSON (docs/verify.md), and written to `path` through a
 * temporary file and a rename. */
int ks_verify_write_json(ks_ctx *ctx, FILE *out, const ks_verify_report *r);
int ks_verify_save(ks_ctx *ctx, const char *path, const ks_verify_report *r);

typedef struct ks_verify_print_options {
  bool color;
} ks_verify_print_options;

/* The report for people: the program's exit statuses first, then a row
 * per winner with its sites and, when not faster, the cause. */
void ks_verify_print(FILE *out, const ks_verify_report *r, const ks_verify_print_options *o);

/* The kernels (names as stored) that the verify report at `path` names
 * "not faster", for `apply --from-verify`, appended to `out_kernel_names`
 * (strings in `a`). A file that is not such a report fails with one line
 * naming the file and the field ("FILE: kernels[2].verdict: not a string"). */
int ks_verify_not_faster(ks_ctx *ctx, const char *path, ks_arena *a, ks_strings *out_kernel_names);

#endif
