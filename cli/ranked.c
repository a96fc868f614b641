/* ranked: a process's part in an mpirun job of optimize --mpi or tune
 * --mpi (ranked.h). */
#include "ranked.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"

int ks_ranked_run(ks_ctx *ctx, int argc, char **argv, ks_ranked_lead lead) {
  bool mpi = false;
  double timeout = 0;
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    if (!strcmp(argv[i], "--mpi"))
      mpi = true;
    else if (!strcmp(argv[i], "--mpi-timeout") && i + 1 < argc)
      timeout = strtod(argv[i + 1], NULL);
    else if (!strncmp(argv[i], "--mpi-timeout=", 14))
      timeout = strtod(argv[i] + 14, NULL);
  }
  if (!mpi)
    return lead(ctx, argc, argv, NULL);
  ks_pipeline_ranks *ranks;
  if (ks_pipeline_ranks_open(ctx, timeout, &ranks)) {
    ks_error(ctx, "%s", ctx->error);
    return KS_EXIT_FAILURE;
  }
  int rank = ks_pipeline_ranks_rank(ranks), rc;
  if (rank > 0) {
    /* Its messages say which rank and host they come from. */
    char prog[256];
    snprintf(prog, sizeof prog, "%s (rank %d on %s)", ctx->prog, rank,
             ks_pipeline_ranks_host(ranks, rank));
    const char *was = ctx->prog;
    ctx->prog = prog;
    rc = ks_optimize_follow(ctx, ranks);
    ctx->prog = was;
  } else {
    rc = lead(ctx, argc, argv, ranks);
  }
  ks_pipeline_ranks_close(ranks, ctx);
  return rc;
}
