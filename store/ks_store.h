/* ks_store: the results store, `.kernelsmith/kernelsmith.db` at the project
 * root: one SQLite database in WAL mode (SQLite lives in this module only).
 *
 * What it keeps: runs (options, seed, device, status), kernels (name, file,
 * hash of the source they were read from, slice, spec), variants (source,
 * launch policy, guards, parent, proposer, technique tags, round, island,
 * a hash of their normalized text for deduplication), evaluations (every
 * field of the judge's verdict: the main numbers as columns, everything as
 * JSON too), the optimization memory, and LLM calls (prompt and answer
 * hashes, tokens, cost; never a key).
 *
 * Crash safety: every write is its own transaction, committed before the
 * call returns; a process killed at any moment (kill -9) leaves the database
 * as of its last committed write, so `optimize --resume` loses no finished
 * evaluation. A variant written without its evaluation (killed in between)
 * is found by ks_store_variants and evaluated again.
 *
 * Several processes: `status` may read (ks_store_open_readonly) while
 * `optimize` writes; two writers take turns (each write waits up to 10 s
 * for the other's) and never corrupt the file. docs/store.md has the
 * tables, the crash-safety argument and example queries.
 *
 * Ownership: a ks_store is opened and closed by its caller; rows returned by
 * queries live in the arena the caller passes. A store is used from one
 * thread. */
#ifndef KS_STORE_H
#define KS_STORE_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_eval.h"

typedef struct ks_store ks_store;

/* Opens (creating when absent) DIR/kernelsmith.db, DIR usually being
 * `<project root>/.kernelsmith`; the directory is created too. Migrates an
 * older schema; refuses a newer one with a sentence saying so. A locked or
 * corrupt database fails naming the file; so does a damaged one (PRAGMA
 * quick_check), in one line saying what to do, so that nothing is added to
 * a file readers cannot read. */
int ks_store_open(ks_ctx *ctx, const char *dir, ks_store **out);
/* Where the store is by default: `.kernelsmith` in the project root, the
 * nearest directory at or above the current one that holds .kernelsmith or
 * .git (the first one found going up); else in the current directory. */
const char *ks_store_default_dir(ks_arena *arena);
/* Opens an existing store read-only (for `status`); fails when absent.
 * Works where the user may not write the directory (WAL's shared memory
 * cannot be made there): the file is then read as immutable when it holds
 * every commit, and refused with a sentence when its log holds some
 * (docs/store.md, "Several processes at once"). */
int ks_store_open_readonly(ks_ctx *ctx, const char *dir, ks_store **out);
void ks_store_close(ks_store *s);
const char *ks_store_path(const ks_store *s);

/* The schema version this code writes (PRAGMA user_version; docs/store.md). */
enum { KS_STORE_SCHEMA_VERSION = 6 };

/* Checks the whole file: SQLite's integrity check, every foreign key, and
 * every evaluation's JSON parsing. *problem is NULL when all is well, else
 * the first problem found (in `a`); -1 only when the check cannot run. */
int ks_store_check(ks_ctx *ctx, ks_store *s, ks_arena *a, const char **problem);

/* ---- runs ---- */
typedef struct ks_run_row {
  long long id;
  const char *started;    /* ISO 8601 UTC, set by the store */
  const char *finished;   /* NULL while running */
  const char *status;     /* "running", "done", "stopped" (by a budget),
                             "interrupted", "failed" */
  const char *command;    /* "optimize" */
  const char *strategy;   /* "evolve", "beam" */
  const char *proposer;   /* "rules", "tuning", "llm" */
  unsigned long long seed;
  const char *options;    /* the run's options as JSON (what --resume reuses) */
  const char *device;     /* "NVIDIA H200, driver 580.159.04", or NULL */
} ks_run_row;
typedef KS_ARRAY(ks_run_row) ks_run_rows;

/* Adds a run: r's id, started, finished and status are set by the store
 * (status "running"). */
int ks_store_run_begin(ks_ctx *ctx, ks_store *s, const ks_run_row *r, long long *id);
/* status NULL: "done". */
int ks_store_run_finish(ks_ctx *ctx, ks_store *s, long long run, const char *status);
/* Marks a run running again (resume). */
int ks_store_run_reopen(ks_ctx *ctx, ks_store *s, long long run);
int ks_store_run_get(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a, ks_run_row *out);
/* The newest run, whatever its status; *found false when there is none. */
int ks_store_run_latest(ks_ctx *ctx, ks_store *s, ks_arena *a, ks_run_row *out, bool *found);
int ks_store_runs(ks_ctx *ctx, ks_store *s, ks_arena *a, ks_run_rows *out);
/* Sets a run's device text (a run begun before its judge was open: tune). */
int ks_store_run_set_device(ks_ctx *ctx, ks_store *s, long long run, const char *device);

/* ---- phases of a run (tune) ---- */
/* Records phase `name` of `run` with its status ("running", "done",
 * "failed") and data (JSON, or NULL), replacing what it had. */
int ks_store_phase_put(ks_ctx *ctx, ks_store *s, long long run, const char *name,
                       const char *status, const char *data);
/* The phase's status and data (in `a`); *status NULL when it was never
 * recorded. */
int ks_store_phase_get(ks_ctx *ctx, ks_store *s, long long run, const char *name, ks_arena *a,
                       const char **status, const char **data);

/* ---- kernels of a run ---- */
typedef struct ks_kernel_row {
  long long id, run;
  const char *name;        /* qualified, as the user typed or scan gave */
  const char *file;        /* where it is defined */
  unsigned line;
  const char *source_hash; /* SHA-256 of the defining file's text */
  const char *slice;       /* the unit the judge compiles against */
  const char *spec;        /* the spec, as text (annotation or sidecar) */
  const char *status;      /* "pending", "searching", "done", "skipped",
                              "failed" */
  const char *note;        /* why skipped or failed; NULL otherwise */
  double baseline_ms;      /* the original's median at the timed size; 0 */
  long long winner;        /* the variant the search confirmed on fresh
                              inputs; 0: none was; -1: not recorded (a
                              run from before the column: ks_winners.h
                              derives it then) */
  const char *sites;       /* the digests of the kernel's launch sites when
                              it was optimized, one per line
                              (ks_launch_digest); NULL: not recorded */
  const char *insight;     /* what the judge learned about the original (a
                              race, what bounds it) as JSON (passes/insight,
                              ks_insight_json); NULL: not recorded */
} ks_kernel_row;
typedef KS_ARRAY(ks_kernel_row) ks_kernel_rows;

/* Adds a kernel to a run, or returns the id it already has in that run
 * (same name): resume finds its kernels again. */
int ks_store_kernel_put(ks_ctx *ctx, ks_store *s, const ks_kernel_row *k, long long *id);
/* status NULL keeps the current one; baseline_ms 0 keeps the current one;
 * note is set as given (NULL clears it). */
int ks_store_kernel_update(ks_ctx *ctx, ks_store *s, long long kernel, const char *status,
                           const char *note, double baseline_ms);
int ks_store_kernels(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a, ks_kernel_rows *out);
/* Names the kernel's winner (variant 0: none was confirmed). */
int ks_store_kernel_set_winner(ks_ctx *ctx, ks_store *s, long long kernel, long long variant);
/* Records what the judge learned about the kernel (JSON text; NULL clears
 * it). A store before schema 4 cannot: ks_store_kernel_set_insight is then
 * a no-op (a writer has migrated already). */
int ks_store_kernel_set_insight(ks_ctx *ctx, ks_store *s, long long kernel, const char *json);
/* Whether the store has the winner column (a read-only store of schema 2
 * does not). */
bool ks_store_has_winners(const ks_store *s);

/* ---- variants ---- */
typedef struct ks_variant_row {
  long long id, kernel, parent; /* parent 0: made from the original */
  const char *hash;        /* of the normalized source and policy (dedupe) */
  const char *source;
  const char *kernel_name;
  bool is_template;
  const char *grid, *block, *smem; /* launch policy; NULL: the original's */
  const char *requires;    /* guards, one per line; NULL: none */
  const char *proposer;    /* "rules", "tuning", "llm", "user" */
  const char *techniques;  /* technique chain, "block=128 > vectorize" */
  const char *plan;        /* the plan an LLM step followed; NULL: none */
  int round, island;
  /* Filled by ks_store_variants from the variant's evaluation, if any: */
  bool evaluated;
  ks_verdict verdict;
  double speedup;          /* 0 unless FAST/SAME/SLOW */
  double speedup_low;      /* its 95% interval's low end; 0 likewise */
  const char *reason;      /* the verdict's one line */
  double median_ms;
  int registers;
  double bw_fraction;
} ks_variant_row;
typedef KS_ARRAY(ks_variant_row) ks_variant_rows;

/* A variant's guards as the store keeps them (ks_variant_row.requires: one
 * per line) and back; NULL for none. */
const char *ks_store_requires_join(ks_arena *a, const ks_strings *requires);
void ks_store_requires_split(ks_arena *a, const char *text, ks_strings *out);

/* Adds a variant; when the kernel already has one with this hash, returns
 * that one's id and *existed = true (nothing written). */
int ks_store_variant_put(ks_ctx *ctx, ks_store *s, const ks_variant_row *v, long long *id,
                         bool *existed);
/* Every variant of a kernel, in insertion order, with its evaluation's main
 * numbers when it has one. */
int ks_store_variants(ks_ctx *ctx, ks_store *s, long long kernel, ks_arena *a,
                      ks_variant_rows *out);

/* ---- evaluations ---- */
/* Records the judge's verdict for a variant (variant 0: the baseline of
 * `kernel`), every field of ks_eval: the main ones as columns, the whole
 * (with per-size reports) as JSON, the device and worker that judged it
 * in eval_devices, and (host not NULL: --mpi) its rank and host in
 * eval_ranks. The compile log is not stored (it can
 * quote the user's source; it goes to the terminal only). */
int ks_store_eval_put(ks_ctx *ctx, ks_store *s, long long kernel, long long variant,
                      const ks_eval *e);
/* The evaluation's JSON document (the newest, when a variant was judged
 * again; ks_eval_json.h's members, complete), or NULL when the variant has
 * none. */
int ks_store_eval_json(ks_ctx *ctx, ks_store *s, long long variant, ks_arena *a,
                       const char **out);
/* The whole evaluation back (every field but compile_log; strings and
 * arrays in `a`): the newest of `variant`, or with variant 0 the newest
 * baseline of `kernel`. *found false when there is none. */
int ks_store_eval_get(ks_ctx *ctx, ks_store *s, long long kernel, long long variant,
                      ks_arena *a, ks_eval *out, bool *found);
/* Counts for status and budgets: the evaluations of variants in a run
 * (baselines are not counted). */
int ks_store_eval_count(ks_ctx *ctx, ks_store *s, long long run, long long *out);
/* Who judged a run's evaluations of variants (schema 5; ks_eval.device and
 * .worker, and from schema 6 .rank and .host, recorded by
 * ks_store_eval_put): one row per rank, host, worker and device, in that
 * order (rank 0 with no host first). Empty for a store before schema 5 and
 * for evaluations written by an older kernelsmith-cc; rank 0 and host NULL
 * for an evaluation not made by --mpi (or in a store before schema 6). */
typedef struct ks_eval_worker_count {
  int rank;         /* the MPI rank; 0 without --mpi */
  const char *host; /* its host name (in the arena); NULL: not an --mpi run */
  int worker, device;
  long long evaluations;
} ks_eval_worker_count;
typedef KS_ARRAY(ks_eval_worker_count) ks_eval_worker_counts;
int ks_store_eval_workers(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a,
                          ks_eval_worker_counts *out);

/* ---- optimization memory (used by the LLM proposer) ---- */
/* Notes of a kind ("lesson", "summary", ...) about a kernel; kernel 0: about
 * every kernel. ks_store_memory returns them oldest first; kind NULL: every
 * kind. */
int ks_store_memory_put(ks_ctx *ctx, ks_store *s, long long kernel, const char *kind,
                        const char *text);
int ks_store_memory(ks_ctx *ctx, ks_store *s, long long kernel, const char *kind, ks_arena *a,
                    ks_strings *out);

/* ---- LLM calls ---- */
/* Every request and its reply. The request is stored as sent less its
 * credentials (they are headers, never part of it), keyed by prompt_hash,
 * the hash of that text: the LLM cache. */
typedef struct ks_llm_call_row {
  long long run, kernel;
  const char *role;        /* "planner", "executor", "summarizer", ... */
  const char *model;
  const char *prompt_hash, *response_hash;
  const char *request;     /* the request body; NULL: not kept */
  const char *response;    /* the reply's text; NULL: none (an error) */
  long long prompt_tokens, response_tokens;
  double seconds, cost;
  const char *status;      /* "ok", "cached", "error: ..." (no key, ever) */
} ks_llm_call_row;
int ks_store_llm_call_put(ks_ctx *ctx, ks_store *s, const ks_llm_call_row *c);
/* The reply of the latest successful call with this prompt hash, from any
 * run (*found false: none). The row's strings live in `a`. */
int ks_store_llm_cached(ks_ctx *ctx, ks_store *s, const char *prompt_hash, ks_arena *a,
                        ks_llm_call_row *out, bool *found);
/* What a run's LLM calls added up to (for status and a cost budget);
 * kernel 0: every kernel of the run. */
typedef struct ks_llm_usage {
  long long calls, prompt_tokens, response_tokens;
  double seconds, cost;
} ks_llm_usage;
int ks_store_llm_usage(ks_ctx *ctx, ks_store *s, long long run, long long kernel,
                       ks_llm_usage *out);

#endif
