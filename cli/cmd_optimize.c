/* kernelsmith-cc optimize: not written yet. */
#include "ks_cli.h"

static int run(ks_ctx *ctx, int argc, char **argv) {
  (void)argc;
  (void)argv;
  ks_error(ctx, "optimize is not written yet");
  return KS_EXIT_FAILURE;
}

const ks_command ks_cmd_optimize = {"optimize", "(not written yet)", "usage: kernelsmith-cc optimize\n", run};
