/* cluster_int.h: the cluster's insides, shared by cluster.c (open, close,
 * the heartbeat/receiver thread, liveness) and cluster_io.c (blobs on the
 * wire: sending, receiving, the queue, gather and bcast). Internal to
 * cluster/.
 *
 * One mutex (`lock`) guards every MPI call after MPI_Init_thread and every
 * field below it: MPI_THREAD_MULTIPLE would allow concurrent calls, but one
 * lock keeps the bookkeeping of requests and queues simple and correct, and
 * no MPI call made under it blocks (sends and large receives are
 * nonblocking and tested by the thread). */
#ifndef KS_CLUSTER_INT_H
#define KS_CLUSTER_INT_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ks_cluster.h"

/* MPI tags on the cluster's own communicator. */
enum {
  CL_TAG_HEARTBEAT = 1, /* empty: "I live" */
  CL_TAG_HEAD = 2,      /* a blob's header: its tag and length */
  CL_TAG_DATA = 3,      /* a piece of the blob announced last by this sender */
  CL_TAG_BYE = 4,       /* empty: the sender is closing, its silence is no loss */
};
enum { CL_HEAD_BYTES = 16 }; /* tag (u32 LE), zero (u32), length (u64 LE) */

/* A blob on its way out: the header and a copy of the payload, shared by
 * every send of it (bcast sends one to each rank). */
typedef struct cl_out {
  int refs;       /* sends of it not yet complete */
  size_t len;     /* payload bytes */
  unsigned char head[CL_HEAD_BYTES];
  unsigned char data[]; /* the payload */
} cl_out;

typedef struct cl_send {
  MPI_Request req;
  int dest;
  cl_out *out; /* NULL for heartbeats and byes (nothing to free) */
} cl_send;

/* A blob coming in: allocated at its header, filled by the receives of its
 * data messages, queued when complete. */
typedef struct cl_in {
  struct cl_in *next;  /* in the queue */
  int src;
  bool drop;           /* a message received only to be thrown away */
  unsigned tag;
  size_t len;
  size_t posted;       /* bytes of data messages matched to receives so far */
  size_t pending;      /* receives posted and not complete */
  unsigned char *data; /* len bytes (NULL when empty) */
} cl_in;

typedef struct cl_recv {
  MPI_Request req;
  cl_in *in;
} cl_recv;

typedef struct cl_peer {
  double last_heard; /* monotonic seconds of its last message */
  bool reported;     /* lost, and ks_cluster_take_lost said so */
  bool bye_in;       /* it is closing: its silence is no longer a loss */
  bool bye_out;      /* we said bye to it: no more heartbeats to it */
  cl_in *incoming;   /* the blob its data messages belong to, until complete */
} cl_peer;

struct ks_cluster {
  int rank, size;
  MPI_Comm comm;       /* a duplicate of MPI_COMM_WORLD: nothing else matches our tags */
  double timeout_s, heartbeat_s;
  size_t chunk;        /* the largest single message */
  char **hosts;        /* size names, one allocation */
  atomic_bool *lost;   /* written under lock, read anywhere (ks_cluster_lost) */

  pthread_mutex_t lock;
  pthread_cond_t changed; /* a blob queued, a rank lost or closing, a request done */
  pthread_t thread;
  bool stop;              /* the thread leaves its loop */
  char fatal[256];        /* the first MPI failure the thread met; "" none */
  double next_heartbeat;
  cl_peer *peers;
  cl_in *queue;           /* complete blobs nobody took yet, oldest first */
  cl_send *sends;         /* requests not yet complete */
  size_t nsends, capsends;
  cl_recv *recvs;
  size_t nrecvs, caprecvs;
};

double cl_now(void);
/* Waits for a change, a tenth of a second at most. Lock held. */
void cl_wait(ks_cluster *c);
/* Marks `rank` lost for good and wakes the waiters. Lock held. */
void cl_lose(ks_cluster *c, int rank);
/* Records the first failure that stops the cluster (an MPI call's, or a
 * message that breaks the protocol) and wakes the waiters, who fail with
 * it. Lock held. */
void cl_fatal(ks_cluster *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cl_fatal_mpi(ks_cluster *c, const char *what, int rc);
/* MPI's text for an error code. */
void cl_mpi_message(int rc, char *buf, size_t size);

/* cluster_io.c. Each runs with the lock held. */
/* Receives what has arrived, at most `max` messages; returns how many. */
int cl_receive(ks_cluster *c, int max);
/* Tests the requests in flight; true when any completed. */
bool cl_test_requests(ks_cluster *c);
/* An empty message (heartbeat, bye) to `dest`; a failure loses `dest`. */
void cl_send_empty(ks_cluster *c, int dest, int tag);
/* Whether requests to or from ranks not lost are still in flight. */
bool cl_pending_live(const ks_cluster *c);
/* At close, with the thread stopped: cancels and frees the requests left
 * (their buffers stay until cl_free_io, after MPI_Finalize). */
void cl_abandon_requests(ks_cluster *c);
void cl_free_io(ks_cluster *c);

#endif
