/* ks_toolkit: where the CUDA toolkit is and which version it is.
 *
 * Looked up in order: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, then the
 * directory above the first `nvcc` on PATH. The frontend needs it for CUDA's
 * headers, the backend for NVRTC. */
#ifndef KS_TOOLKIT_H
#define KS_TOOLKIT_H

#include <stdbool.h>

#include "ks_ctx.h"

typedef struct ks_toolkit {
  char root[4096];    /* e.g. /usr/local/cuda-13.0 (symlinks resolved) */
  char include[4096]; /* root/include: cuda.h, cuda_runtime.h */
  int version;        /* CUDA_VERSION from cuda.h, e.g. 13000 */
  char version_text[32]; /* "13.0" */
} ks_toolkit;

/* Fills `out`; fails with one sentence saying where it looked. */
int ks_toolkit_find(ks_ctx *ctx, ks_toolkit *out);

/* Whether device code compiled by NVRTC may #include `header` (as written
 * between <> or "", e.g. "cuda_fp16.h", "cub/block/block_reduce.cuh"): the
 * toolkit's device headers, and nothing of the user's or the host's. The one
 * allow-list the slicer and the candidate rules share. */
bool ks_toolkit_header_allowed(const char *header);

#endif
