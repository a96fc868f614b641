/* Locating the CUDA toolkit. */
#include "ks_toolkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_fs.h"

static bool looks_like_toolkit(const char *root) {
  char *h = ks_path_join(root, "include/cuda.h");
  bool ok = ks_is_file(h);
  free(h);
  return ok;
}

/* Directory above the `bin/` that holds the first nvcc on PATH. */
static char *toolkit_from_path(void) {
  const char *path = getenv("PATH");
  if (!path)
    return NULL;
  char *copy = ks_xstrdup(path), *save = NULL, *found = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
    char *nvcc = ks_path_join(dir, "nvcc");
    char *real = ks_is_file(nvcc) ? ks_realpath(nvcc) : NULL;
    if (real) {
      char *bin = ks_path_dirname(real);
      found = ks_path_dirname(bin);
      free(bin);
      free(real);
    }
    free(nvcc);
  }
  free(copy);
  return found;
}

static int read_version(ks_ctx *ctx, ks_toolkit *tk) {
  char *header = ks_path_join(tk->root, "include/cuda.h");
  ks_buf text = KS_BUF_INIT;
  int rc = ks_read_file(ctx, header, 16u << 20, &text);
  if (!rc) {
    const char *p = strstr(text.data, "#define CUDA_VERSION ");
    tk->version = p ? atoi(p + strlen("#define CUDA_VERSION ")) : 0;
    if (!tk->version)
      rc = ks_fail(ctx, "%s: no CUDA_VERSION definition", header);
    snprintf(tk->version_text, sizeof tk->version_text, "%d.%d", tk->version / 1000,
             tk->version % 1000 / 10);
  }
  ks_buf_release(&text);
  free(header);
  return rc;
}

int ks_toolkit_find(ks_ctx *ctx, ks_toolkit *out) {
  memset(out, 0, sizeof *out);
  const char *candidates[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
  char *root = NULL;
  for (size_t i = 0; i < sizeof candidates / sizeof *candidates && !root; i++)
    if (candidates[i] && *candidates[i] && looks_like_toolkit(candidates[i]))
      root = ks_realpath(candidates[i]);
  if (!root) {
    char *guess = toolkit_from_path();
    if (guess && looks_like_toolkit(guess))
      root = guess;
    else
      free(guess);
  }
  if (!root)
    return ks_fail(ctx, "no CUDA toolkit found (looked at $CUDA_HOME, $CUDA_PATH, "
                        "/usr/local/cuda and nvcc on PATH); install it or set CUDA_HOME");
  snprintf(out->root, sizeof out->root, "%s", root);
  snprintf(out->include, sizeof out->include, "%s/include", root);
  free(root);
  return read_version(ctx, out);
}

bool ks_toolkit_header_allowed(const char *header) {
  static const char *const exact[] = {
      "cuda_fp16.h",    "cuda_fp16.hpp",   "cuda_bf16.h",         "cuda_bf16.hpp",
      "cuda_fp8.h",     "cuda_fp8.hpp",    "cuda_fp6.h",          "cuda_fp4.h",
      "mma.h",          "cuda_pipeline.h", "cuda_pipeline_primitives.h",
      "cuda_awbarrier.h", "cuda_awbarrier_primitives.h", "cooperative_groups.h",
      "curand_kernel.h", "sm_32_intrinsics.h", "sm_60_atomic_functions.h",
      "sm_61_intrinsics.h", "vector_types.h", "vector_functions.h", "math_constants.h",
  };
  static const char *const prefixes[] = {"cooperative_groups/", "cub/", "cuda/", "nv/"};
  if (!header || strstr(header, ".."))
    return false;
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    if (!strcmp(header, exact[i]))
      return true;
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(header, prefixes[i], strlen(prefixes[i])))
      return true;
  return false;
}
