/* ks_pipeline: the main job as a list of named stages, for `optimize`,
 * `tune`, `apply` and the compiler launcher, with no printing of its own
 * (what the user sees goes through ks_pipeline_hooks to cli/).
 *
 *   optimize (ks_pipeline_optimize, pipeline.c):
 *     scan -> captures opened -> targets (a kernel with a spec or captured
 *     launches made ready to judge) -> prepare (the GPU opened, captured
 *     launches replayed; without one, every slice compiled) -> run (the
 *     store, its lock, the run row) -> search per kernel, the budget
 *     shared (pipeline_search.c) -> finish (the run's status)
 *   winners and emit (pipeline_emit.c): the store's winners resolved
 *     against a scan (ks_pipeline_winners), each file's planned text with
 *     the variants and dispatched sites (ks_pipeline_emit), as a patch
 *     (ks_pipeline_patch); the launcher's copy of one file
 *     (ks_pipeline_rewrite_file)
 *   tune (ks_tune_*, tune.c): profile -> pick -> capture -> optimize ->
 *     patch -> verify, each phase recorded in the store.
 *
 * Errors are values: a stage returns -1 with ctx->error set for what stops
 * the job; a kernel that fails is its outcome's status and note, and the
 * job goes on.
 *
 * Ownership: a ks_pipeline owns its scan, targets, judge, store and
 * everything its outcomes point to until ks_pipeline_release; the job's
 * options are borrowed. */
#ifndef KS_PIPELINE_H
#define KS_PIPELINE_H

#include <stdbool.h>
#include <stdio.h>

#include "ks_buf.h"
#include "ks_capture.h"
#include "ks_insight.h"
#include "ks_judge.h"
#include "ks_llm.h"
#include "ks_llm_text.h"
#include "ks_propose_llm.h"
#include "ks_scan.h"
#include "ks_search.h"
#include "ks_store.h"
#include "ks_winners.h"

typedef enum ks_proposer_kind {
  KS_PROPOSER_RULES,
  KS_PROPOSER_TUNING,
  KS_PROPOSER_LLM,
  KS_PROPOSER_ALL,   /* rules and llm */
} ks_proposer_kind;

/* "rules", "tuning", "llm", "all". */
const char *ks_proposer_kind_name(ks_proposer_kind k);

/* What the model did for one kernel. */
typedef struct ks_outcome_llm {
  unsigned plans, plans_rejected, children, retries, insights, cached, failed;
  unsigned rejected[KS_REPLY_NREASONS]; /* executor replies, by reason */
  bool budget_hit;
  const char *last_error;
  ks_llm_tally tally;      /* requests, tokens, cost of this kernel */
} ks_outcome_llm;

/* One kernel's outcome. */
typedef struct ks_outcome {
  const char *kernel;
  const char *file;
  unsigned line;
  const char *inputs;      /* "spec", "capture" or "spec+capture"; NULL: none */
  unsigned captured;       /* captured launches among the size sets */
  const char *status;      /* "optimized", "no faster variant", "skipped",
                              "failed", "interrupted", "not searched" */
  const char *note;        /* why skipped or failed */
  double baseline_ms;
  double best_ms;          /* = baseline when nothing won */
  double speedup;          /* 1 when nothing won */
  double speedup_low, speedup_high;
  double bw_fraction;      /* of the measured device bandwidth, the winner's
                              (or the original's) */
  const char *techniques;  /* the winner's chain, "" when none */
  const char *verdict;     /* the winner's confirmed verdict, or "-" */
  const char *winner_file; /* where the winner was written, or NULL */
  unsigned evaluated, correct, wrong, refused, duplicates, rounds;
  unsigned same_code;      /* of `evaluated`: verdicts reused for machine code
                              judged before, not run on the GPU again */
  double seconds;
  long long variant_id;
  bool budget_hit;         /* stopped by --max-seconds: --resume gives it
                              more time */
  bool resumed;            /* finished by an earlier invocation: read back
                              from the store, not searched again */
  const char *stopped_by;  /* "rounds", "patience", "exhausted" (nothing new
                              to propose) or "budget"; NULL: not searched */
  ks_proposer_count proposers[KS_PROPOSER_COUNTS];
  bool has_llm;
  ks_outcome_llm llm;
  ks_insight insight;      /* what the judge learned about the original: a
                              race, what bounds it (passes/insight) */
} ks_outcome;
typedef KS_ARRAY(ks_outcome) ks_outcomes;

/* What the pipeline tells the user, through cli/. Every member may be
 * NULL. */
typedef struct ks_pipeline_hooks {
  void *arg;
  /* A kernel's search starts; `llm` is the run's model usage so far (NULL
   * without a model), to show beside the progress. */
  void (*search_begin)(void *arg, const ks_llm_tally *llm);
  /* ks_search's progress callback. */
  void (*search_progress)(void *arg, const ks_search_progress *s);
  /* The search stopped (a live line ends here). */
  void (*search_end)(void *arg);
  /* A kernel's first search pass is over and stored. */
  void (*kernel_done)(void *arg, const ks_outcome *o);
  /* One line for the user, without the program's name or a newline. */
  void (*say)(void *arg, const char *line);
} ks_pipeline_hooks;

/* A job: the options of `optimize` once parsed (cmd_optimize.c), or
 * those tune chose. */
typedef struct ks_pipeline_job {
  ks_ctx *ctx;
  const ks_scan_options *scan;
  const ks_strings *kernels;   /* --kernel names; empty: every kernel with a spec
                                  or captured launches */
  const ks_strings *captures;  /* capture files (profile --capture); may be empty */
  ks_search_options search;    /* max_seconds is the whole run's */
  bool tuning, standin;
  ks_proposer_kind proposer;
  const ks_llm_config *llm;    /* the flags' LLM settings (resolved in the run) */
  ks_llm_cache_mode llm_cache;
  unsigned llm_plans;          /* 0: the proposer's default */
  const char *store_dir;
  ks_store *store;             /* open (resume, tune), or NULL: opened here;
                                  closed by ks_pipeline_release */
  ks_judge_options judge;
  const int *devices;          /* --devices: one worker (judge, process) per
                                  entry, in this order; an ordinal may repeat
                                  (two workers on one GPU); NULL: judge.device
                                  alone, as without the option */
  size_t ndevices;
  bool all_devices;            /* --devices all: every device the driver lists */
  int local_rank;              /* --mpi without --device or --devices: this
                                  rank's place among the ranks of its host;
                                  it judges on device local_rank modulo the
                                  devices the driver lists (one GPU a rank
                                  with as many ranks as GPUs); 0 (the first
                                  rank of a host, or no --mpi): --device */
  double max_seconds;
  long long resume_run;        /* 0: a new run; else the run row to go on
                                  with (tune makes its own row first) */
  volatile int *interrupted;
  const char *argv_json;       /* the command line to store with a new run */
  const char *command;         /* the run row's command; NULL: "optimize" */
  const char *resume_hint;     /* how to continue, for the messages; NULL:
                                  "kernelsmith-cc optimize --resume" */
  bool store_borrowed;         /* `store` is the caller's: not closed here */
  bool locked;                 /* the caller holds the store's optimize.lock */
  bool run_borrowed;           /* resume_run is the caller's to finish (tune:
                                  its phases go on after the search) */
  ks_pipeline_hooks hooks;
  /* optimize --mpi: this process's part in the job (ks_pipeline_ranks_open);
   * NULL: alone. Rank 0 runs the stages as ever and its searches take the
   * others along; another rank, with a store of its own that nobody reads,
   * follows rank 0's searches (ks_pipeline_follow) instead of making its
   * own. */
  ks_search_ranks *ranks;
} ks_pipeline_job;

typedef struct ks_pipeline_kernel ks_pipeline_kernel; /* pipeline.c's */
typedef struct ks_pipeline_llm ks_pipeline_llm;       /* pipeline_search.c's */

typedef struct ks_pipeline {
  ks_pipeline_job *job;
  ks_arena arena;
  ks_scan scan;
  bool have_scan;
  ks_capture *caps;
  size_t ncaps, opened_caps;
  KS_ARRAY(ks_pipeline_kernel) kernels;
  ks_judge judge;              /* the first worker's */
  bool judge_open;
  ks_judge *more_judges;       /* the other workers' (--devices), each open */
  size_t nmore_judges;
  int *workers;                /* after prepare: each worker's device, the
                                  first one's first */
  size_t nworkers;
  bool *retired;               /* the workers that left the pool, for the
                                  rest of the run (ks_search.retired) */
  ks_pipeline_llm *llm;
  int lock_fd;
  long long run;               /* the store's run row, once begun */
  const char *device;          /* its device text */
  /* After ks_pipeline_prepare: why no GPU can judge (NULL: one is open, or
   * the stand-in judges); the kernels ready and failed so far. */
  const char *no_gpu;
  size_t ready, failed;
  bool kernel_failed;          /* a kernel failed, or the model never
                                  answered: the exit status is 1 */
  bool interrupted;
  bool budget_stopped;         /* --max-seconds stopped a search before its
                                  last round */
  ks_outcomes outcomes;        /* after finish: one per kernel listed */
} ks_pipeline;

void ks_pipeline_init(ks_pipeline *p, ks_pipeline_job *job);
void ks_pipeline_release(ks_pipeline *p);

/* The stages, in order. ks_pipeline_optimize runs them all: up to prepare
 * when there is no GPU (p->no_gpu says why), every one otherwise. */
int ks_pipeline_scan(ks_pipeline *p);
int ks_pipeline_targets(ks_pipeline *p);
int ks_pipeline_prepare(ks_pipeline *p);
int ks_pipeline_begin(ks_pipeline *p);
int ks_pipeline_search(ks_pipeline *p);
int ks_pipeline_finish(ks_pipeline *p);
int ks_pipeline_optimize(ks_pipeline *p);
/* optimize --mpi (pipeline_ranks.c): this process's rank in the mpirun job,
 * over the cluster (MPI; a rank silent for timeout_s seconds is lost). */
typedef struct ks_pipeline_ranks ks_pipeline_ranks;
int ks_pipeline_ranks_open(ks_ctx *ctx, double timeout_s, ks_pipeline_ranks **out);
int ks_pipeline_ranks_rank(const ks_pipeline_ranks *r);
int ks_pipeline_ranks_size(const ks_pipeline_ranks *r);
const char *ks_pipeline_ranks_host(const ks_pipeline_ranks *r, int rank);
ks_search_ranks *ks_pipeline_ranks_search(ks_pipeline_ranks *r);
/* The command line every rank runs: rank 0's (`mine`, as text), received by
 * the others in *out; fails on a rank > 0 when rank 0 stopped first. */
int ks_pipeline_ranks_argv(ks_pipeline_ranks *r, ks_ctx *ctx, const char *mine, ks_arena *a,
                           const char **out);
/* The files the run reads: rank 0 sends those under the deepest directory
 * that holds the paths scanned, the captures and compile_commands.json;
 * another rank finds them in place (same path, same contents) or recreates
 * them in a private directory, maps `scan`'s paths, build directory and -I
 * arguments and the captures to them, and works there. */
int ks_pipeline_ranks_inputs(ks_pipeline_ranks *r, ks_ctx *ctx, ks_scan_options *scan,
                             ks_strings *captures, ks_arena *a);
/* Rank 0 tells the others there is no more (if it has not); a private copy
 * of the files is removed; MPI is finalized. */
void ks_pipeline_ranks_close(ks_pipeline_ranks *r, ks_ctx *ctx);

/* A rank > 0 of optimize --mpi, after begin: each search rank 0 starts, on
 * this rank's kernel of that name (or declined, saying why, when it has
 * none ready), until rank 0 says there are no more. */
int ks_pipeline_follow(ks_pipeline *p);

/* The store's optimize.lock, held while `*fd` is open: one search per
 * store at a time (the lock dies with its process, kill -9 included). */
int ks_pipeline_lock(ks_ctx *ctx, const char *store_dir, ks_arena *a, int *fd);

/* The judge's device as the run row keeps it ("NAME, sm_90, driver D"). */
const char *ks_pipeline_device_text(ks_arena *a, const ks_judge *j);

/* ---- winners and emit (pipeline_emit.c) ---- */

/* Which winners, from where. */
typedef struct ks_pipeline_winners_query {
  const char *store_dir;
  long long run;               /* 0: the newest */
  const char *const *kernels;  /* names as stored; n 0: every winner */
  size_t nkernels;
  double min_speedup;
  const ks_strings *not_faster;/* left out: verify found them not faster */
  bool any_device;             /* a stand-in's run too (tune --stand-in-judge:
                                  its patch dispatches on sm_90) */
} ks_pipeline_winners_query;

/* The winners that can be applied, resolved against `scan`; each one that
 * cannot is said in one ks_warn line. `*refused`: a kernel asked for by
 * name is not applied (or has no winner). */
int ks_pipeline_winners(ks_ctx *ctx, const ks_pipeline_winners_query *q, const ks_scan *scan,
                        ks_arena *a, ks_winner_list *out, int *arch, bool *refused);

/* One file the winners change. */
typedef struct ks_file_change {
  const char *file;            /* the scanned file (links resolved) */
  const char *path;            /* absolute, inside the project */
  const char *rel;             /* relative to the project root */
  const char *original;        /* NULL: a new file */
  size_t original_len;
  const char *text;            /* the new text */
  size_t nvariants;
  unsigned nsites;             /* launch sites dispatched */
  ks_emit_edits edits;         /* byte-range edits of the original (when
                                  asked for) */
} ks_file_change;
typedef KS_ARRAY(ks_file_change) ks_file_changes;

/* What the winners make of the sources: every file's new text, in the
 * scan's order, and the dispatch header when a file needs it and the
 * project has none, or an older one. */
typedef struct ks_emit_plan {
  ks_file_changes files;
  ks_file_change header;
  bool have_header;            /* header is set */
  ks_strings notes;            /* sites left as written, and why */
} ks_emit_plan;

typedef struct ks_emit_request {
  const ks_scan *scan;
  const ks_scan_options *so;   /* the scanned paths (links into the project) */
  const ks_winner *wins;
  size_t nwins;
  int arch;                    /* the architecture the dispatch checks */
  const char *root;            /* the project: the store's parent, absolute */
  const char *runtime_header;  /* kernelsmith_dispatch.h's text */
  bool confine;                /* leave a file reached through a link out of
                                  the project alone (apply --write) */
  bool want_edits;             /* fill each change's byte-range edits */
} ks_emit_request;

/* A file outside the project, or confined and reached through a link out
 * of it, is left alone with a warning and `*incomplete` set. */
int ks_pipeline_emit(ks_ctx *ctx, const ks_emit_request *r, ks_arena *a, ks_emit_plan *out,
                     bool *incomplete);

/* The plan as one unified diff relative to the root (git apply, patch -p1). */
int ks_pipeline_patch(ks_ctx *ctx, const ks_emit_plan *plan, ks_buf *out);

/* The launcher's stage: the rewritten copy of the one file `src` (its
 * text in `*out`, with #line directives; NULL with `*why` when there is
 * nothing to do), scanned with `flags` (translated from its command line).
 * `targets_arch(arg, arch)` says whether the command line builds for the
 * architecture the winners were verified on; it is asked only when the
 * store has winners of the file. */
int ks_pipeline_rewrite_file(ks_ctx *ctx, ks_arena *a, const char *store_dir, const char *src,
                             const ks_strings *flags,
                             bool (*targets_arch)(void *arg, int arch), void *arg,
                             const char **out, const char **why);

/* ---- tune (tune.c): from a program to a verified patch ---- */

typedef enum ks_tune_phase {
  KS_TUNE_PROFILE,   /* the program run, every kernel timed */
  KS_TUNE_PICK,      /* the hot kernels chosen */
  KS_TUNE_CAPTURE,   /* the program run again, their launches captured */
  KS_TUNE_OPTIMIZE,  /* the search of each, one budget */
  KS_TUNE_PATCH,     /* the winners as a patch */
  KS_TUNE_VERIFY,    /* the program run with and without them */
  KS_TUNE_NPHASES
} ks_tune_phase;

/* "profile", "pick", "capture", "optimize", "patch", "verify". */
const char *ks_tune_phase_name(ks_tune_phase p);

typedef struct ks_tune_options {
  /* The optimize job tune runs: scan options, search, proposer, stand-in,
   * store_dir, judge, max_seconds, interrupted, hooks. Its kernels,
   * captures, run and store are tune's to set. */
  ks_pipeline_job job;
  char *const *cmd;          /* the program, NULL-terminated */
  int ncmd;
  unsigned top;              /* --top; 0: not given */
  double min_share;          /* --min-share, percent; 0: not given */
  long long capture_limit;   /* bytes; 0: chosen (1 GiB) */
  long long capture_window;  /* bytes; 0: whole allocations */
  const char *inject_lib;    /* ks_inject_lib_find's */
  const char *runtime_header;/* kernelsmith_dispatch.h's text, for the patch */
  long long resume_run;      /* 0: a new tune (argv_json stored with it) */
  /* A phase starts (ran false) or is skipped because the store says it is
   * done (ran false, done true); may be NULL. */
  void (*phase)(void *arg, ks_tune_phase p, bool done);
  void *phase_arg;
  /* tune --mpi: the job's ranks (NULL: alone; this is rank 0) and the
   * optimize options the other ranks search with, as rank 0 does; the
   * search phase sends them with the hot kernels and the capture added
   * (the others run optimize's follower, which parses them). Every other
   * phase runs here alone. */
  ks_pipeline_ranks *ranks;
  const char *const *follow_argv;
  size_t follow_argc;
} ks_tune_options;

/* One hot kernel's line in tune's table. */
typedef struct ks_tune_kernel {
  const char *name;          /* qualified, or demangled when not in the sources */
  const char *signature;     /* the scan's, NULL when not in the sources */
  const char *mangled;
  const char *file;
  unsigned line;
  double share;              /* of the program's GPU time, 0..1 */
  double total_ms;           /* in the profile run */
  unsigned captured;         /* launches captured */
  double search_speedup;     /* 0: no winner */
  double program_speedup;    /* 0: not measured in the program */
  const char *techniques;    /* the winner's chain, "" when none */
  const char *verdict;       /* "faster", "not faster", "no faster variant",
                                "failed", "skipped", "not run", "not searched",
                                "no GPU" */
  const char *reason;        /* one line; NULL when faster */
  unsigned evaluated;
  bool resumed;              /* its search was finished before this call */
} ks_tune_kernel;
typedef KS_ARRAY(ks_tune_kernel) ks_tune_kernels;

typedef struct ks_tune_result {
  long long run;
  const char *device;
  double program_ms;         /* the profile run's kernel time */
  unsigned long long launches;
  const char *capture_choice;/* what the capture was asked for, one line */
  const char *capture_path;
  ks_tune_kernels kernels;   /* the picks, hottest first */
  size_t not_picked;         /* kernels of the profile left out */
  const char *patch_path;    /* NULL: no patch (no winner) */
  size_t patch_files;
  const char *verify_path;   /* the verify report's export */
  const char *failure;       /* the program failed, or a phase could not
                                finish: one line; NULL otherwise */
  const char *no_gpu;        /* why the search needs a GPU: scanned, sliced
                                and compiled only */
  size_t compiled;           /* with no_gpu: kernels that compile */
  bool phase_done[KS_TUNE_NPHASES];    /* finished, now or before */
  bool phase_resumed[KS_TUNE_NPHASES]; /* finished before this call */
  unsigned program_runs;     /* the program's runs this call */
  bool kernel_failed;        /* some kernel failed: exit status 1 */
  bool interrupted;
} ks_tune_result;

/* The stages, in order: profile -> pick -> capture -> optimize -> patch ->
 * verify, each phase recorded in the store's phases table as it ends (a
 * resumed tune skips those done and the kernels whose search is).
 * Returns -1 with ctx->error only for what stops the whole tune (the
 * store, the command); a failing program, a kernel that cannot be
 * captured, replayed or judged is in the result. */
int ks_tune_run(ks_ctx *ctx, ks_tune_options *o, ks_arena *a, ks_tune_result *out);

#endif
