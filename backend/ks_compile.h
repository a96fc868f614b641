/* ks_compile: the compile service. Compiles device code with NVRTC, or
 * with nvcc (the compiler the user's program is built with), in parallel
 * threads, with a cache keyed by the source, the options, the architecture
 * and the compiler and its version, and applies the rules every candidate
 * must pass before it is compiled at all.
 *
 * nvcc (docs/judge.md, "Which compiler"): the unit, with a reference to
 * each name expression appended (so that a template instance is
 * instantiated), is written to a private temporary directory and compiled
 * by `nvcc -cubin -arch=sm_XX <the unit's options> -o unit.cubin unit.cu`;
 * the lowered names are NVRTC's for the same expressions (its front end
 * only), found among the cubin's kernels (anonymous namespaces, which each
 * compiler names after the file, compared as one). A unit nvcc rejects is
 * compiled by NVRTC instead, with a note; the rejection is cached too.
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

/* Which compiler makes the judge's cubins (ks_judge_options.compiler). */
typedef enum ks_compiler_kind {
  KS_COMPILER_AUTO,  /* nvcc when the kernel's build command is known and nvcc
                        is found, else NVRTC */
  KS_COMPILER_NVRTC,
  KS_COMPILER_NVCC,  /* nvcc whenever it is found */
} ks_compiler_kind;
const char *ks_compiler_kind_name(ks_compiler_kind k); /* "auto", "nvrtc", "nvcc" */
/* 0 and *out for "auto", "nvrtc" or "nvcc"; -1 for anything else. */
int ks_compiler_kind_parse(const char *name, ks_compiler_kind *out);

typedef struct ks_compiler {
  char arch[16];          /* "sm_90" */
  ks_arena arena;         /* owns the options */
  ks_strings options;     /* NVRTC options every compile gets */
  const char *cache_dir;  /* cubins by key; NULL: no cache */
  unsigned threads;       /* 0: one per CPU */
  int nvrtc_major, nvrtc_minor;
  char nvcc[4096];        /* $KERNELSMITH_NVCC, else the toolkit's bin/nvcc;
                             "" when there is none that answers --version */
  char nvcc_version[64];  /* "13.0.88" (nvcc --version), part of the cache key */
} ks_compiler;

/* arch "sm_90"; cache_dir may be NULL. Adds -arch, -std=c++17, the toolkit's
 * include directories and -lineinfo (NVRTC's options), and finds nvcc. (Not --no-source-include: it also
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
  const char *const *extra_options; /* e.g. "-use_fast_math" (NVRTC's spelling,
                                       which nvcc accepts too) */
  size_t nextra;
  bool nvcc;             /* compile with nvcc (ks_compiler.nvcc must be set);
                            NVRTC when nvcc rejects it */
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
  bool nvcc;             /* nvcc made the cubin (false: NVRTC, also after a
                            fallback) */
  const char *note;      /* a unit meant for nvcc that NVRTC compiled: why
                            ("nvcc rejected it: <first error line>"); NULL */
} ks_compile_result;

/* Compiles `n` units in parallel; fills out[0..n). Returns -1 only when the
 * tool cannot go on (NVRTC missing); a unit that does not compile is a
 * result, not an error. */
int ks_compile(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *units, size_t n,
               ks_arena *arena, ks_compile_result *out);

/* What a cubin says about one of its functions, without a GPU. */
typedef struct ks_cubin_function {
  int registers;          /* EIATTR_REGCOUNT (cuobjdump -res-usage's REG); -1
                             when the cubin does not say */
  char text_sha256[65];   /* SHA-256 (hex) of its .text section: the same
                             digest, the same instructions */
  size_t text_bytes;
} ks_cubin_function;
/* Fills `out` for `function` (a lowered name); -1 when the cubin is not an
 * ELF file or has no such function. */
int ks_cubin_function_info(const void *cubin, size_t size, const char *function,
                           ks_cubin_function *out);
/* The cubin's entry functions (kernels), in symbol-table order, as a
 * NULL-terminated array in `arena`; returns how many. */
size_t ks_cubin_entries(ks_arena *arena, const void *cubin, size_t size, const char ***out);

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
