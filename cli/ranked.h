/* ranked: what optimize --mpi and tune --mpi share on the command line.
 * Which rank of the mpirun job this process is must be known before
 * anything is read, since only rank 0 reads its command line, its store
 * and the project: rank 0 leads (the command itself, with the job's
 * ranks), every other rank follows the searches rank 0 starts, as
 * optimize's follower, whichever command rank 0 runs. */
#ifndef KS_CLI_RANKED_H
#define KS_CLI_RANKED_H

#include "ks_ctx.h"
#include "ks_pipeline.h"

/* The command as rank 0 (or alone, ranks NULL, without --mpi). */
typedef int (*ks_ranked_lead)(ks_ctx *ctx, int argc, char **argv, ks_pipeline_ranks *ranks);

/* Runs `lead` alone without --mpi in argv (before "--"); with it, opens
 * the job's ranks and runs `lead` on rank 0 and ks_optimize_follow on the
 * others. Returns the exit status. */
int ks_ranked_run(ks_ctx *ctx, int argc, char **argv, ks_ranked_lead lead);

/* A rank > 0 (cmd_optimize.c): rank 0's optimize command line, its files,
 * a store of its own that nobody reads, and no table at the end. */
int ks_optimize_follow(ks_ctx *ctx, ks_pipeline_ranks *ranks);

#endif
