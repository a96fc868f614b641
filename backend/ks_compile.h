/* ks_compile: the compile service. Compiles device code with NVRTC in
 * parallel threads, with a cache keyed by the source, the options, the
 * architecture and NVRTC's version, and applies the rules every candidate
 * must pass before it is compiled at all.
 *
 * Candidate rules (ks_candidate_check): device code only. Refused: host
 * functions, device-side launches (<<<>>>, cudaLaunchKernel, cudaLaunchDevice),
 * mutable __device__ or __managed__ globals (state that survives between
 * launches could fake a speedup), and #include of anything outside the
 * toolkit allow-list (ks_toolkit_header_allowed). Options come from us, never
 * from the candidate, so -rdc cannot be asked for.
 *
 * Compiler logs are returned to the caller, who shows them on the terminal;
 * they are never written to the cache or anywhere else.
 *
 * Ownership: results live in the arena the caller passes; the compiler
 * (ks_compiler_release) owns its options. */
#ifndef KS_COMPILE_H
#define KS_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"

typedef struct ks_compiler {
  char arch[16];          /* "sm_90" */
  ks_arena arena;         /* owns the options */
  ks_strings options;     /* NVRTC options every compile gets */
  const char *cache_dir;  /* cubins by key; NULL: no cache */
  unsigned threads;       /* 0: one per CPU */
  int nvrtc_major, nvrtc_minor;
} ks_compiler;

/* arch "sm_90"; cache_dir may be NULL. Adds -arch, -std=c++17, the toolkit's
 * include directories and -lineinfo. (Not --no-source-include: it also
 * hides the headers the toolkit's own headers include by relative path; the
 * candidate rules keep a candidate to the toolkit's headers instead.) */
int ks_compiler_init(ks_ctx *ctx, ks_compiler *c, const char *arch, const char *cache_dir);
void ks_compiler_release(ks_compiler *c);

typedef struct ks_compile_unit {
  const char *name;      /* for messages: "saxpy_kernel.variant-3.cu" */
  const char *source;
  const char *const *name_expressions; /* functions whose lowered names are wanted */
  size_t nnames;
  const char *candidate; /* the part of `source` written by a proposer, which
                            the candidate rules are applied to; NULL: none */
  const char *const *extra_options; /* e.g. "-use_fast_math" */
  size_t nextra;
} ks_compile_unit;

typedef enum ks_compile_status {
  KS_COMPILE_OK,
  KS_COMPILE_REFUSED, /* broke a candidate rule; not compiled */
  KS_COMPILE_FAILED,  /* NVRTC rejected it */
} ks_compile_status;

typedef struct ks_compile_result {
  ks_compile_status status;
  const char *reason;    /* refusal, or the first error line */
  const char *log;       /* NVRTC's whole log ("" from the cache) */
  const void *cubin;
  size_t cubin_size;
  const char **lowered;  /* one per name expression */
  double ms;             /* compile time (0 when cached) */
  bool cached;
} ks_compile_result;

/* Compiles `n` units in parallel; fills out[0..n). Returns -1 only when the
 * tool cannot go on (NVRTC missing); a unit that does not compile is a
 * result, not an error. */
int ks_compile(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *units, size_t n,
               ks_arena *arena, ks_compile_result *out);

/* The candidate rules on `source`; NULL when it passes, else the reason, as
 * "line 12: host function 'helper' (device code only)". */
const char *ks_candidate_check(ks_arena *arena, const char *source);
/* Which rule a refused candidate broke (the LLM proposer counts its
 * rejections by kind). */
typedef enum ks_candidate_rule {
  KS_CANDIDATE_OK,
  KS_CANDIDATE_INCLUDE,       /* #include of a header that is not the toolkit's device headers */
  KS_CANDIDATE_LAUNCH,        /* a device-side launch or allocation */
  KS_CANDIDATE_HOST_FUNCTION, /* a function neither __device__ nor __global__ */
  KS_CANDIDATE_STATE,         /* a __managed__ or mutable __device__ variable */
  KS_CANDIDATE_MALFORMED,     /* unbalanced braces */
} ks_candidate_rule;
const char *ks_candidate_check_rule(ks_arena *arena, const char *source,
                                    ks_candidate_rule *rule);

#endif
