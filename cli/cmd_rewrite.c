/* kernelsmith-cc rewrite: not written yet. */
#include "ks_cli.h"

static int run(ks_ctx *ctx, int argc, char **argv) {
  (void)argc;
  (void)argv;
  ks_error(ctx, "rewrite is not written yet");
  return KS_EXIT_FAILURE;
}

const ks_command ks_cmd_rewrite = {"rewrite", "(not written yet)", "usage: kernelsmith-cc rewrite\n", run};
