/* cluster.c: a job's ranks joined (MPI_Init_thread, host names), the
 * thread that keeps them in touch (heartbeats out, everything received,
 * silence turned into loss), and the goodbye at close.
 *
 * The thread's loop: receive what arrived, test the requests in flight,
 * send the heartbeats that are due, lose the ranks silent too long; sleep
 * a millisecond when nothing happened. It takes the lock for one pass at
 * a time, never while sleeping, so gather and bcast get in between. */
#include "cluster_int.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CL_RECEIVE_PER_PASS = 64 }; /* then the lock is let go for a moment */

double cl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cl_mpi_message(int rc, char *buf, size_t size) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    len = snprintf(text, sizeof text, "MPI error %d", rc);
  snprintf(buf, size, "%.*s", len, text);
}

void cl_fatal(ks_cluster *c, const char *fmt, ...) {
  if (c->fatal[0])
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->fatal, sizeof c->fatal, fmt, ap);
  va_end(ap);
  pthread_cond_broadcast(&c->changed);
}

void cl_fatal_mpi(ks_cluster *c, const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  cl_mpi_message(rc, text, sizeof text);
  cl_fatal(c, "%s: %s", what, text);
}

void cl_lose(ks_cluster *c, int rank) {
  if (atomic_load(&c->lost[rank]))
    return;
  atomic_store(&c->lost[rank], true);
  pthread_cond_broadcast(&c->changed);
}

/* The ranks this rank watches and heartbeats: rank 0 all others, the
 * others rank 0 alone (the star). */
static bool cl_watches(const ks_cluster *c, int r) {
  return r != c->rank && (c->rank == 0 || r == 0);
}

static void cl_heartbeat(ks_cluster *c, double now) {
  if (now < c->next_heartbeat)
    return;
  for (int r = 0; r < c->size; r++)
    if (cl_watches(c, r) && !atomic_load(&c->lost[r]) && !c->peers[r].bye_out)
      cl_send_empty(c, r, CL_TAG_HEARTBEAT);
  c->next_heartbeat = now + c->heartbeat_s;
}

static void cl_check_silence(ks_cluster *c, double now) {
  for (int r = 0; r < c->size; r++)
    if (cl_watches(c, r) && !c->peers[r].bye_in && now - c->peers[r].last_heard > c->timeout_s)
      cl_lose(c, r);
}

static void *cl_thread(void *arg) {
  ks_cluster *c = arg;
  const struct timespec idle = {0, 1000000};
  pthread_mutex_lock(&c->lock);
  while (!c->stop) {
    bool busy = false;
    if (!c->fatal[0]) {
      int received = cl_receive(c, CL_RECEIVE_PER_PASS);
      busy = cl_test_requests(c) || received > 0;
      double now = cl_now();
      cl_heartbeat(c, now);
      /* Silence is judged only once everything that arrived was read, so
       * that a backlog of messages (a thread that was not scheduled for a
       * while) is not mistaken for it. */
      if (received < CL_RECEIVE_PER_PASS)
        cl_check_silence(c, now);
    }
    pthread_mutex_unlock(&c->lock);
    if (busy)
      sched_yield();
    else
      nanosleep(&idle, NULL);
    pthread_mutex_lock(&c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static int cl_options(ks_ctx *ctx, const ks_cluster_options *o, ks_cluster *c) {
  ks_cluster_options d = {0};
  if (o)
    d = *o;
  if (!(d.timeout_s > 0) || !isfinite(d.timeout_s))
    d.timeout_s = 60;
  if (!(d.heartbeat_s > 0) || !isfinite(d.heartbeat_s))
    d.heartbeat_s = d.timeout_s / 10;
  if (d.heartbeat_s >= d.timeout_s)
    return ks_fail(ctx, "cluster: the heartbeat (%g s) must be shorter than the timeout (%g s)",
                   d.heartbeat_s, d.timeout_s);
  if (d.chunk_bytes == 0)
    d.chunk_bytes = (size_t)1 << 30;
  if (d.chunk_bytes > INT32_MAX)
    return ks_fail(ctx, "cluster: chunk of %zu bytes: MPI counts are int", d.chunk_bytes);
  c->timeout_s = d.timeout_s;
  c->heartbeat_s = d.heartbeat_s;
  c->chunk = d.chunk_bytes;
  return 0;
}

/* Everything MPI after MPI_Init_thread, for ks_cluster_open: the error
 * handler, the communicator, rank, size, every rank's host name. */
static int cl_join(ks_ctx *ctx, ks_cluster *c) {
  /* Errors are returned from here on, not fatal to the process: a dead
   * rank must not take the others along. */
  const char *what = "MPI_Comm_set_errhandler";
  int rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rc == 0) {
    what = "MPI_Comm_dup";
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  }
  if (rc == 0)
    rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  if (rc == 0) {
    what = "MPI_Comm_rank";
    rc = MPI_Comm_rank(c->comm, &c->rank);
  }
  if (rc == 0)
    rc = MPI_Comm_size(c->comm, &c->size);
  char *names = NULL;
  char mine[MPI_MAX_PROCESSOR_NAME];
  memset(mine, 0, sizeof mine);
  int len = 0;
  if (rc == 0) {
    what = "MPI_Get_processor_name";
    rc = MPI_Get_processor_name(mine, &len);
  }
  if (rc == 0) {
    names = ks_xcalloc((size_t)c->size, MPI_MAX_PROCESSOR_NAME);
    what = "MPI_Allgather of the host names";
    rc = MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                       MPI_CHAR, c->comm);
  }
  if (rc) {
    free(names);
    char text[MPI_MAX_ERROR_STRING];
    cl_mpi_message(rc, text, sizeof text);
    return ks_fail(ctx, "cluster: %s: %s", what, text);
  }
  /* The names and the pointers to them in one allocation. */
  c->hosts = ks_xmalloc((size_t)c->size * (sizeof(char *) + MPI_MAX_PROCESSOR_NAME));
  char *text = (char *)(c->hosts + c->size);
  memcpy(text, names, (size_t)c->size * MPI_MAX_PROCESSOR_NAME);
  free(names);
  for (int r = 0; r < c->size; r++) {
    c->hosts[r] = text + (size_t)r * MPI_MAX_PROCESSOR_NAME;
    c->hosts[r][MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  }
  return 0;
}

static const char *cl_level_name(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
  default: return "MPI_THREAD_MULTIPLE";
  }
}

/* Frees what open made; MPI stays as it is. */
static void cl_free(ks_cluster *c) {
  pthread_cond_destroy(&c->changed);
  pthread_mutex_destroy(&c->lock);
  free(c->hosts);
  free(c->peers);
  free(c->lost);
  free(c);
}

/* ks_cluster_open's MPI part: MPI_Init_thread, the communicator, the host
 * names, the thread. */
static int cl_start(ks_ctx *ctx, int *argc, char ***argv, ks_cluster *c) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized)
    return ks_fail(ctx, "cluster: MPI was initialized before (the cluster starts it, once)");
#ifdef OPEN_MPI
  /* Open MPI's MPI_Finalize begins with a PMIx fence of every rank, which
   * a rank SIGKILLed under --enable-recovery sometimes never leaves: the
   * survivors hung there in about one run in ten under load. The goodbye
   * of ks_cluster_close does the fence's work among the live ranks (no
   * message left in flight), so the fence is skipped; a setting made
   * before (environment, mpirun --mca) is kept. */
  setenv("OMPI_MCA_async_mpi_finalize", "1", 0);
#endif
  int provided = MPI_THREAD_SINGLE;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc) {
    char text[MPI_MAX_ERROR_STRING];
    cl_mpi_message(rc, text, sizeof text);
    return ks_fail(ctx, "cluster: MPI_Init_thread: %s", text);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    return ks_fail(ctx,
                   "cluster: this MPI gives %s, and the heartbeat thread needs "
                   "MPI_THREAD_MULTIPLE: use an MPI built with thread support "
                   "(Debian's Open MPI 4.1 is)",
                   cl_level_name(provided));
  }
  if (cl_join(ctx, c)) {
    if (c->comm != MPI_COMM_NULL)
      MPI_Comm_free(&c->comm);
    MPI_Finalize();
    return -1;
  }
  c->peers = ks_xcalloc((size_t)c->size, sizeof *c->peers);
  c->lost = ks_xcalloc((size_t)c->size, sizeof *c->lost);
  double now = cl_now();
  for (int r = 0; r < c->size; r++) {
    atomic_init(&c->lost[r], false);
    c->peers[r].last_heard = now;
  }
  c->next_heartbeat = now;
  int err = pthread_create(&c->thread, NULL, cl_thread, c);
  if (err) {
    MPI_Comm_free(&c->comm);
    MPI_Finalize();
    return ks_fail(ctx, "cluster: starting the heartbeat thread: %s", strerror(err));
  }
  return 0;
}

int ks_cluster_open(ks_ctx *ctx, int *argc, char ***argv, const ks_cluster_options *o,
                    ks_cluster **out) {
  *out = NULL;
  ks_cluster *c = ks_xcalloc(1, sizeof *c);
  c->comm = MPI_COMM_NULL;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  /* Waits are measured on the clock the heartbeats use: a wall clock set
   * back must not stretch them. */
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->changed, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&c->lock, NULL);
  if (cl_options(ctx, o, c)) {
    cl_free(c);
    return -1;
  }
  if (cl_start(ctx, argc, argv, c)) {
    cl_free(c);
    return -1;
  }
  *out = c;
  return 0;
}

int ks_cluster_rank(const ks_cluster *c) { return c->rank; }
int ks_cluster_size(const ks_cluster *c) { return c->size; }

const char *ks_cluster_host(const ks_cluster *c, int rank) {
  return rank >= 0 && rank < c->size ? c->hosts[rank] : NULL;
}

bool ks_cluster_lost(const ks_cluster *c, int rank) {
  return rank >= 0 && rank < c->size && atomic_load(&c->lost[rank]);
}

size_t ks_cluster_take_lost(ks_cluster *c, int *out) {
  size_t n = 0;
  pthread_mutex_lock(&c->lock);
  for (int r = 0; r < c->size; r++)
    if (atomic_load(&c->lost[r]) && !c->peers[r].reported) {
      c->peers[r].reported = true;
      out[n++] = r;
    }
  pthread_mutex_unlock(&c->lock);
  return n;
}

/* A tenth of a second at most: the callers recheck their conditions
 * either way, so a missed wakeup costs no more than that. */
void cl_wait(ks_cluster *c) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += 100000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  int err = pthread_cond_timedwait(&c->changed, &c->lock, &ts);
  (void)err; /* ETIMEDOUT is the usual way out */
}

/* The goodbye: a rank > 0 says bye and waits for rank 0's; rank 0 waits
 * until every rank not lost said bye, then says its own. As MPI keeps the
 * order of one sender's messages, a bye arrives after everything its
 * sender sent before, so nothing is left in flight between live ranks
 * once the receives and sends already matched are done. Lock held. */
static void cl_goodbye(ks_cluster *c) {
  if (c->rank == 0) {
    for (;;) {
      bool waiting = false;
      for (int r = 1; r < c->size; r++)
        waiting |= !atomic_load(&c->lost[r]) && !c->peers[r].bye_in;
      if (!waiting || c->fatal[0])
        break;
      cl_wait(c);
    }
    for (int r = 1; r < c->size; r++)
      if (!atomic_load(&c->lost[r]) && !c->fatal[0]) {
        cl_send_empty(c, r, CL_TAG_BYE);
        c->peers[r].bye_out = true;
      }
  } else if (c->size > 1) {
    if (!atomic_load(&c->lost[0]) && !c->fatal[0]) {
      cl_send_empty(c, 0, CL_TAG_BYE);
      c->peers[0].bye_out = true;
    }
    while (!atomic_load(&c->lost[0]) && !c->peers[0].bye_in && !c->fatal[0])
      cl_wait(c);
  }
  /* What was matched before the byes completes as both sides progress;
   * a peer that dies meanwhile must not hold us beyond the timeout. */
  double deadline = cl_now() + c->timeout_s;
  while (cl_pending_live(c) && !c->fatal[0] && cl_now() < deadline)
    cl_wait(c);
}

void ks_cluster_close(ks_cluster *c) {
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  cl_goodbye(c);
  c->stop = true;
  pthread_mutex_unlock(&c->lock);
  pthread_join(c->thread, NULL);
  /* The thread is gone: MPI is ours alone now, no lock needed. */
  bool abandoned = c->nsends || c->nrecvs;
  cl_abandon_requests(c);
  /* A communicator with requests left to dead ranks is left to
   * MPI_Finalize rather than freed under them. */
  if (!abandoned)
    MPI_Comm_free(&c->comm);
  MPI_Finalize();
  cl_free_io(c);
  cl_free(c);
}
