/* ks_cluster: the ranks of one `mpirun -np N kernelsmith-cc optimize --mpi`
 * job exchanging byte blobs in a star (every message goes between rank 0
 * and another rank), and noticing a rank that died so the others go on.
 * This is the only module of the project that includes <mpi.h>.
 *
 * Open MPI 4.1 has no fault tolerance (ULFM) of its own, so death is seen
 * by silence: a thread per rank sends a heartbeat every heartbeat_s (rank
 * r > 0 to rank 0, rank 0 to every live rank) and does all receiving; any
 * message counts as life. A rank silent longer than timeout_s is lost for
 * good: never sent to again, its later messages dropped. Only under
 * `mpirun --enable-recovery` do the others survive a rank's death; without
 * it mpirun ends the whole job.
 *
 * What Open MPI 4.1 leaves open (seen in tests/cluster_mpi.sh): over TCP,
 * a rank that dies while a survivor is writing to its socket (in the
 * middle of a large blob, say) can take that survivor along: the write
 * raises SIGPIPE, and with SIGPIPE blocked or ignored the TCP transport
 * instead spins for good in its failure path, which is worse, so the
 * cluster leaves SIGPIPE alone. A rank that dies between messages, and
 * any death over shared memory (one host), leave the others going.
 *
 * Tags are the caller's sequence: every rank calls gather and bcast in the
 * same order with increasing tags (e.g. round * 4 + phase). A blob that
 * comes before anyone waits for its tag is queued, so ranks may run ahead
 * of each other.
 *
 * Ownership: ks_cluster_open returns a cluster that ks_cluster_close frees
 * (after MPI_Finalize). Blobs received by gather and bcast live in the
 * caller's arena; blobs passed in are borrowed (copied before the call
 * returns, so the caller may reuse them at once). Host names belong to the
 * cluster. One thread at a time may call gather and bcast; the queries
 * (rank, size, host, lost) may be called from any thread. */
#ifndef KS_CLUSTER_H
#define KS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"

typedef struct ks_cluster ks_cluster;

typedef struct ks_cluster_options {
  double timeout_s;   /* a rank silent this long is lost; <= 0: 60 */
  double heartbeat_s; /* how often each rank says it lives; <= 0: timeout_s / 10 */
  size_t chunk_bytes; /* the largest single MPI message (MPI counts are int);
                         0: 1 GiB. Tests make it small so that the
                         splitting of large blobs runs. */
} ks_cluster_options;

/* data NULL: from a lost rank (or one that closed without sending it). */
typedef struct ks_blob {
  const void *data;
  size_t len;
} ks_blob;

/* MPI_Init_thread with MPI_THREAD_MULTIPLE (fails with a clear message
 * otherwise, after MPI_Finalize), MPI_ERRORS_RETURN, every rank's host name
 * exchanged, and the heartbeat/receiver thread started. `o` may be NULL
 * (defaults). Collective: every rank of the job calls it, once per process
 * (MPI cannot start again), early in main: under Open MPI it sets
 * OMPI_MCA_async_mpi_finalize=1 in the environment unless set already
 * (ks_cluster_close says why), and setenv is unsafe while other threads
 * read the environment. */
int ks_cluster_open(ks_ctx *ctx, int *argc, char ***argv, const ks_cluster_options *o,
                    ks_cluster **out);
int ks_cluster_rank(const ks_cluster *c);
int ks_cluster_size(const ks_cluster *c);
/* Each rank's host name (MPI's processor name), known to all after open;
 * NULL for a rank out of range. */
const char *ks_cluster_host(const ks_cluster *c, int rank);
/* Whether `rank` is lost, in this rank's view: rank 0 knows of every rank;
 * another rank knows only of rank 0 and itself (never lost), and says false
 * for the rest. */
bool ks_cluster_lost(const ks_cluster *c, int rank);

/* Rank r > 0: sends `mine` to rank 0 and returns 0 (`arena` and `all` are
 * not used and may be NULL); when rank 0 is lost nothing is sent, and the
 * next bcast returns 1. Rank 0: `all` gets size() entries, all[0] = mine
 * (borrowed, not copied), all[r] = rank r's blob of this `tag` (copied into
 * `arena`), or data NULL for a rank lost before it arrived or one that
 * closed without sending it; lost ranks are not waited for. Returns -1 with
 * ks_fail when MPI fails. */
int ks_cluster_gather(ks_cluster *c, ks_ctx *ctx, unsigned tag, ks_blob mine, ks_arena *arena,
                      ks_blob *all);
/* Rank 0: sends *blob to every rank not lost (nor closed) and returns 0.
 * Other ranks: *blob gets rank 0's blob of this tag (copied into `arena`;
 * data never NULL, an empty blob included) and 0 is returned; 1 (not -1)
 * when rank 0 is lost (or closed) before it arrived: the caller stops and
 * says so. -1 with ks_fail when MPI fails. */
int ks_cluster_bcast(ks_cluster *c, ks_ctx *ctx, unsigned tag, ks_blob *blob, ks_arena *arena);
/* The ranks lost since the last call (on rank 0 any rank, elsewhere rank 0
 * only), so that the caller says so once: returns how many and fills `out`
 * (room for size() entries) in increasing order. */
size_t ks_cluster_take_lost(ks_cluster *c, int *out);
/* Says goodbye: a rank > 0 tells rank 0 and waits for rank 0's goodbye;
 * rank 0 waits until every rank not lost has closed too, then answers. So
 * no message between live ranks is left in flight, which is what Open
 * MPI's fence at the start of MPI_Finalize is for; that fence is skipped
 * (async_mpi_finalize) because survivors of a SIGKILLed rank were seen to
 * hang in it. Then the thread stops, the requests to and from lost ranks
 * are cancelled and MPI_Finalize runs. NULL is a no-op. */
void ks_cluster_close(ks_cluster *c);

#endif
