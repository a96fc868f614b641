/* ks_nvrtc: what the backend asks of NVRTC, CUDA's runtime compiler.
 *
 * NVRTC is linked from the toolkit (unlike the driver, which is opened at
 * run time): compiling needs no GPU, so kernelsmith-cc compiles variants on
 * any machine that has the toolkit, and doctor proves it by compiling a
 * trivial kernel to a cubin.
 *
 * Ownership: ks_nvrtc_compile appends into buffers the caller owns (and
 * releases with ks_buf_release). Every function is safe to call from
 * several threads at once: each compile has its own nvrtcProgram. */
#ifndef KS_NVRTC_H
#define KS_NVRTC_H

#include <stddef.h>

#include "ks_buf.h"
#include "ks_ctx.h"

/* NVRTC's version, e.g. 13 and 0; -1 when NVRTC cannot say. */
int ks_nvrtc_version(int *major, int *minor);

/* Writes up to `max` of the SM versions NVRTC can compile for (90 for
 * sm_90), ascending, into `out`; returns how many there are (which may
 * exceed `max`), or -1 with ks_fail. */
int ks_nvrtc_archs(ks_ctx *ctx, int *out, int max);

/* One compilation. `name` appears in diagnostics ("ks_variant_12.cu").
 * `options` are NVRTC's own ("-arch=sm_90", "-std=c++17"; NVRTC rejects
 * -O3). With an sm_XX arch the result is a cubin; with compute_XX only PTX
 * exists and ks_nvrtc_compile fails. */
typedef struct ks_nvrtc_unit {
  const char *source;
  const char *name;
  const char *const *options;
  size_t noptions;
  const char *const *name_expressions; /* "ns::k<float, 256>": instantiated,
                                          and their lowered names returned */
  size_t nnames;
  const char *const *header_names;    /* in-memory headers #include can see */
  const char *const *header_sources;
  size_t nheaders;
} ks_nvrtc_unit;

/* Compiles `unit`; appends the cubin to `cubin` and NVRTC's log (warnings
 * too) to `log`, which may be NULL. A source that does not compile fails
 * with a message holding the log's first error line. Fault site
 * "nvrtc_compile" makes the compile fail. */
int ks_nvrtc_compile(ks_ctx *ctx, const ks_nvrtc_unit *unit, ks_buf *cubin, ks_buf *log);
/* The same, and the lowered (mangled) name of each name expression into
 * lowered[0..nnames), malloc'd strings the caller frees. */
int ks_nvrtc_compile_named(ks_ctx *ctx, const ks_nvrtc_unit *unit, ks_buf *cubin, ks_buf *log,
                           char **lowered);

/* The lowered names of `unit`'s name expressions from NVRTC's front end
 * alone (-fdevice-syntax-only: parsed and instantiated, no code made), in
 * a tenth of a compile's time: what the compile service needs to find the
 * same functions in a cubin another compiler (nvcc) made. lowered[0..nnames)
 * are malloc'd strings the caller frees. */
int ks_nvrtc_lowered_names(ks_ctx *ctx, const ks_nvrtc_unit *unit, char **lowered);

/* Compiles a trivial kernel for `arch` ("sm_90") and reports the cubin's
 * size: proof that NVRTC and its builtins library load and work, with no
 * GPU needed. */
int ks_nvrtc_smoke(ks_ctx *ctx, const char *arch, size_t *cubin_bytes);

#endif
