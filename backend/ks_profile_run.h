/* ks_profile_run: an application run under the injection library, as
 * `profile` and `verify` both do it.
 *
 *   the library found (ks_inject_lib_find) -> the driver checked
 *   (ks_profile_driver_ready: without one nothing can be recorded) -> an
 *   empty file for its lines
 *   (ks_profile_lines_file) -> the application started with
 *   CUDA_INJECTION64_PATH, KERNELSMITH_PROFILE_OUT and the asked-for
 *   environment, its streams and exit status untouched, a ^C left to it
 *   (ks_profile_run_app) -> the lines read back into a ks_profile with the
 *   command and how it ended (ks_profile_read_run).
 *
 * The lines' format is docs/profile-format.md; the aggregate is ks_profile.h.
 * This module owns the process side only: it parses nothing.
 *
 * Ownership: paths come back in the caller's arena; the ks_profile of
 * ks_profile_read_run is the caller's to release. */
#ifndef KS_PROFILE_RUN_H
#define KS_PROFILE_RUN_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_profile.h"

/* What the injection library is asked for beyond the profile, and what
 * else the application's environment gets. */
typedef struct ks_inject_options {
  const char *capture;        /* KERNELSMITH_CAPTURE: kernel names; NULL: no capture */
  long capture_launches;      /* per kernel */
  long long capture_limit;    /* bytes one launch may capture */
  const char *capture_path;   /* the capture file (absolute) */
  long long capture_window;   /* 0: whole allocations */
  unsigned sample_percent;    /* of the time kernels are timed; 100: every launch
                                 (the library is then not asked to sample) */
  long sample_after_ms;       /* every launch timed this long from the first */
  /* More of the application's environment, applied last: "NAME=VALUE"
   * sets, a bare "NAME" unsets. NULL-terminated; NULL: none. */
  const char *const *env;
  /* The application's stdout goes to this process's stderr (verify: its
   * stdout is the report's). */
  bool stdout_to_stderr;
} ks_inject_options;

/* The defaults of `profile`: no capture, 1 launch, a 1 GiB limit, 20% of
 * the time after 2 s. */
#define KS_INJECT_OPTIONS_INIT {NULL, 1, 1LL << 30, NULL, 0, 20, 2000, NULL, false}

/* The injection library: $KERNELSMITH_INJECT_LIB, else where a build tree
 * (../runtime/inject/) or an installation (../lib/kernelsmith/) puts it
 * relative to this executable. NULL with the sentence the user needs. */
const char *ks_inject_lib_find(ks_ctx *ctx, ks_arena *a);

/* Whether CUDA can run the application's kernels here, so that the library
 * has something to record: the NVIDIA driver loads and starts
 * (ks_cuda_load, released at once). false with the reason in ctx->error
 * ("no NVIDIA driver found ..."). Fault site "cuda_load" answers false. */
bool ks_profile_driver_ready(ks_ctx *ctx);

/* A new empty file `dir`/.profile-lines-XXXXXX for the lines, its path
 * absolute (the application may change its directory before CUDA loads the
 * library). */
const char *ks_profile_lines_file(ks_ctx *ctx, ks_arena *a, const char *dir);

/* Runs `cmd` (NULL-terminated, cmd[0] looked up in PATH) with the library
 * writing to `lines`, and waits; `*wait_status` is waitpid's. SIGINT and
 * SIGQUIT are ignored here meanwhile: a ^C reaches the application, and
 * this process outlives it, as system() does. Fails only when CMD could
 * not be started ("cannot run 'CMD': ..."). */
int ks_profile_run_app(ks_ctx *ctx, char *const *cmd, const char *lib, const char *lines,
                       const ks_inject_options *o, int *wait_status);

/* The shell's exit status for waitpid's: the code, or 128+N for signal N. */
int ks_profile_exit_code(int wait_status);

/* The lines read back (ks_profile_read_lines) with the command's `ncmd`
 * words and how it ended (exit_status, signal) filled in. */
int ks_profile_read_run(ks_ctx *ctx, const char *lines, char *const *cmd, int ncmd,
                        int wait_status, ks_profile *out);

#endif
