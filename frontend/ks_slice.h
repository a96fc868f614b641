/* ks_slice: a kernel as a standalone compilation unit for NVRTC.
 *
 * The unit holds the kernel and everything it needs, in dependency order:
 * the device functions it calls, the types, typedefs and aliases it uses,
 * __constant__ and __device__ variables, the macros its text expands, and the
 * templates it instantiates, each inside its namespaces; CUDA headers it needs
 * (cuda_fp16.h, cooperative_groups.h, cub/...) stay as #include lines. No host
 * code, no host headers. Template kernels come with the template arguments
 * seen at their launch sites (or given by the spec) as NVRTC name
 * expressions, which give the lowered names.
 *
 * Ownership: strings and arrays live in the arena the caller passes. */
#ifndef KS_SLICE_H
#define KS_SLICE_H

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_model.h"
#include "ks_scan.h"

typedef struct ks_slice {
  const char *kernel;            /* qualified name */
  const char *source;            /* the unit, ready for NVRTC */
  ks_strings name_expressions;   /* what to pass to nvrtcAddNameExpression:
                                    "ns::k" or "ns::k<float, 256>", one per
                                    instantiation */
  ks_strings includes;           /* toolkit headers it #includes */
  ks_strings dependencies;       /* qualified names of what it pulled in, in
                                    order, for reports and tests */
  ks_strings variables;           /* the __constant__ and __device__ variables
                                    it reads or writes (qualified names):
                                    state the program may set, which a
                                    capture does not hold */
  ks_strings options;            /* NVRTC options the unit needs besides the
                                    architecture and standard: "-rdc=true"
                                    when device code launches kernels */
  const char *file;              /* the file that was re-parsed */
  ks_strings codegen;            /* the code-generation options the user's
                                    build compiles that file with, in NVRTC's
                                    spelling ("--use_fast_math", "--ftz=true"):
                                    the judge compiles the original and every
                                    variant with them */
  bool compile_command;          /* the build's command for that file is known
                                    (compile_commands.json): the judge can
                                    compile as the build does (nvcc) */
} ks_slice;

/* Slices `k`, found by `scan` (run with `opts`): re-parses the file that
 * defines it (or, for a header, a file that uses it) with the same flags.
 * `instances` overrides the template arguments ("float, 256"; NULL: those
 * at the launch sites, and those clang deduced in the unit). A template
 * with no known instance gets no name expression (the caller says what to
 * do). Fails with a one-line reason, without the kernel's name ("it calls
 * host function 'helper' (util.cu:12)"): callers say which kernel. */
int ks_slice_kernel(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                    const ks_kernel *k, const char *instances, ks_arena *arena, ks_slice *out);

/* The kernel that `name` designates in `scan`: a qualified or plain name, or
 * a signature ("fill(float *, float, int)") to pick one overload. Fails with
 * a message listing the candidates when it is ambiguous or unknown. */
int ks_scan_lookup(ks_ctx *ctx, const ks_scan *scan, const char *name, const ks_kernel **out);

/* The double-precision twin of a slice's source, for the judge's fp64
 * reference (slice_fp64.c, docs/judge.md): float and its vector types
 * become double, single-precision math and intrinsics their double
 * versions, f-suffixed literals lose the suffix. Also works on a name
 * expression ("gemv<float>" gives "gemv<double>"). NULL, with the reason
 * (ks_fail), for code that has no faithful twin: half, bfloat16 or fp8
 * types, inline PTX, tensor-core fragments, textures, float bit
 * reinterpretations. */
const char *ks_slice_to_fp64(ks_ctx *ctx, ks_arena *arena, const char *source);

#endif
