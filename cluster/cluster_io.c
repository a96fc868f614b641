/* cluster_io.c: blobs on the wire, and gather and bcast on top of them.
 *
 * A blob travels as a header message (its tag and length) followed by its
 * payload in data messages of at most `chunk` bytes (MPI counts are int).
 * MPI keeps the order of one sender's messages to one receiver, so the
 * receiver knows which blob a data message belongs to: the last one that
 * sender announced. Every send is nonblocking and kept until the thread's
 * MPI_Test says it is done, so that a dead receiver never blocks anyone;
 * the payload is copied first, so the caller's buffer is free at once.
 * Data messages are matched (MPI_Improbe) and received without blocking
 * (MPI_Imrecv) for the same reason: a sender that dies mid-transfer leaves
 * a request that never completes, not a thread stuck in MPI_Recv. */
#include "cluster_int.h"

#include <string.h>

enum { CL_SMALL = 64 }; /* headers and empty messages: received at once */

static void *cl_grow(void *items, size_t *cap, size_t len, size_t size) {
  if (len < *cap)
    return items;
  *cap = *cap ? *cap * 2 : 16;
  return ks_xrealloc(items, *cap * size);
}

static void cl_put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t cl_get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void cl_in_free(cl_in *in) {
  free(in->data);
  free(in);
}

/* ---- sending ---- */

static cl_out *cl_out_new(unsigned tag, ks_blob blob) {
  cl_out *out = ks_xmalloc(sizeof *out + blob.len);
  out->refs = 0;
  out->len = blob.len;
  memset(out->head, 0, sizeof out->head);
  cl_put_le(out->head, tag, 4);
  cl_put_le(out->head + 8, blob.len, 8);
  if (blob.len)
    memcpy(out->data, blob.data, blob.len);
  return out;
}

static void cl_out_release(cl_out *out) {
  if (out && --out->refs == 0)
    free(out);
}

/* Starts one send and keeps its request; returns MPI's code. */
static int cl_isend(ks_cluster *c, int dest, int tag, const void *buf, size_t n, cl_out *out) {
  MPI_Request req;
  int rc = MPI_Isend(buf, (int)n, MPI_BYTE, dest, tag, c->comm, &req);
  if (rc)
    return rc;
  c->sends = cl_grow(c->sends, &c->capsends, c->nsends, sizeof *c->sends);
  c->sends[c->nsends++] = (cl_send){req, dest, out};
  if (out)
    out->refs++;
  return 0;
}

/* A send that fails at once means the way to `dest` is gone (Open MPI
 * returns an error for a peer whose connection broke): it is lost. */
void cl_send_empty(ks_cluster *c, int dest, int tag) {
  static const unsigned char nothing = 0;
  if (cl_isend(c, dest, tag, &nothing, 0, NULL))
    cl_lose(c, dest);
}

static void cl_send_blob(ks_cluster *c, int dest, cl_out *out) {
  if (cl_isend(c, dest, CL_TAG_HEAD, out->head, CL_HEAD_BYTES, out)) {
    cl_lose(c, dest);
    return;
  }
  for (size_t off = 0; off < out->len; off += c->chunk) {
    size_t n = out->len - off < c->chunk ? out->len - off : c->chunk;
    if (cl_isend(c, dest, CL_TAG_DATA, out->data + off, n, out)) {
      cl_lose(c, dest);
      return;
    }
  }
}

/* ---- receiving ---- */

/* Posts the receive of a matched message into `buf`. */
static void cl_post(ks_cluster *c, MPI_Message *msg, cl_in *in, unsigned char *buf, int count) {
  MPI_Request req;
  int rc = MPI_Imrecv(buf, count, MPI_BYTE, msg, &req);
  if (rc) {
    cl_fatal_mpi(c, "MPI_Imrecv", rc);
    return;
  }
  c->recvs = cl_grow(c->recvs, &c->caprecvs, c->nrecvs, sizeof *c->recvs);
  c->recvs[c->nrecvs++] = (cl_recv){req, in};
  in->pending++;
}

/* Receives a matched message only to throw it away. */
static void cl_drop(ks_cluster *c, MPI_Message *msg, int src, int count) {
  cl_in *in = ks_xcalloc(1, sizeof *in);
  in->src = src;
  in->drop = true;
  in->len = in->posted = (size_t)count;
  in->data = ks_xmalloc(count ? (size_t)count : 1);
  cl_post(c, msg, in, in->data, count);
  if (!in->pending)
    cl_in_free(in);
}

static void cl_complete(ks_cluster *c, cl_in *in) {
  if (in->drop || atomic_load(&c->lost[in->src])) {
    cl_in_free(in);
    return;
  }
  cl_in **tail = &c->queue;
  while (*tail)
    tail = &(*tail)->next;
  in->next = NULL;
  *tail = in;
  pthread_cond_broadcast(&c->changed);
}

static void cl_take_head(ks_cluster *c, MPI_Message *msg, int src, int count) {
  unsigned char head[CL_SMALL];
  int rc = MPI_Mrecv(head, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
  if (rc) {
    cl_fatal_mpi(c, "MPI_Mrecv of a header", rc);
    return;
  }
  if (count != CL_HEAD_BYTES || c->peers[src].incoming) {
    cl_fatal(c, "rank %d sent a blob header %s", src,
             count != CL_HEAD_BYTES ? "of the wrong size" : "before the end of its last blob");
    return;
  }
  uint64_t len = cl_get_le(head + 8, 8);
  if (len > SIZE_MAX) {
    cl_fatal(c, "rank %d announced a blob of %llu bytes", src, (unsigned long long)len);
    return;
  }
  cl_in *in = ks_xcalloc(1, sizeof *in);
  in->src = src;
  in->tag = (unsigned)cl_get_le(head, 4);
  in->len = (size_t)len;
  if (in->len) {
    in->data = ks_xmalloc(in->len);
    c->peers[src].incoming = in;
  } else {
    cl_complete(c, in);
  }
}

static void cl_take_data(ks_cluster *c, MPI_Message *msg, int src, int count) {
  cl_in *in = c->peers[src].incoming;
  if (!in || (size_t)count > in->len - in->posted) {
    cl_fatal(c, "rank %d sent %d bytes of data no header announced", src, count);
    cl_drop(c, msg, src, count);
    return;
  }
  unsigned char *at = in->data + in->posted;
  in->posted += (size_t)count;
  if (in->posted == in->len)
    c->peers[src].incoming = NULL; /* the next data message starts another blob */
  cl_post(c, msg, in, at, count);
  if (in->pending == 0 && c->peers[src].incoming != in)
    cl_in_free(in); /* its last receive could not be posted (fatal): nothing holds it */
}

static void cl_take_message(ks_cluster *c, MPI_Message *msg, const MPI_Status *st) {
  int src = st->MPI_SOURCE;
  int count = 0;
  MPI_Get_count(st, MPI_BYTE, &count);
  /* Any message is a sign of life, except from a rank lost already:
   * that is for good, and what it sends is dropped. */
  if (!atomic_load(&c->lost[src]))
    c->peers[src].last_heard = cl_now();
  switch (st->MPI_TAG) {
  case CL_TAG_HEAD:
    if (count <= CL_SMALL) {
      cl_take_head(c, msg, src, count);
      return;
    }
    break;
  case CL_TAG_DATA:
    cl_take_data(c, msg, src, count);
    return;
  case CL_TAG_HEARTBEAT:
  case CL_TAG_BYE:
    if (count == 0) {
      unsigned char none;
      int rc = MPI_Mrecv(&none, 0, MPI_BYTE, msg, MPI_STATUS_IGNORE);
      if (rc) {
        cl_fatal_mpi(c, "MPI_Mrecv", rc);
        return;
      }
      if (st->MPI_TAG == CL_TAG_BYE) {
        c->peers[src].bye_in = true;
        pthread_cond_broadcast(&c->changed);
      }
      return;
    }
    break;
  }
  cl_fatal(c, "rank %d sent a message of tag %d and %d bytes, not of this protocol", src,
           st->MPI_TAG, count);
  cl_drop(c, msg, src, count);
}

int cl_receive(ks_cluster *c, int max) {
  int n = 0;
  for (; n < max && !c->fatal[0]; n++) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, &msg, &st);
    if (rc) {
      cl_fatal_mpi(c, "MPI_Improbe", rc);
      break;
    }
    if (!flag)
      break;
    cl_take_message(c, &msg, &st);
  }
  return n;
}

bool cl_test_requests(ks_cluster *c) {
  bool any = false;
  for (size_t i = 0; i < c->nsends;) {
    int done = 0;
    cl_send s = c->sends[i];
    int rc = MPI_Test(&s.req, &done, MPI_STATUS_IGNORE);
    if (!rc && !done) {
      i++;
      continue;
    }
    /* A send that fails is a way to its receiver that broke. */
    if (rc)
      cl_lose(c, s.dest);
    c->sends[i] = c->sends[--c->nsends];
    cl_out_release(s.out);
    any = true;
  }
  for (size_t i = 0; i < c->nrecvs;) {
    int done = 0;
    cl_recv r = c->recvs[i];
    int rc = MPI_Test(&r.req, &done, MPI_STATUS_IGNORE);
    if (!rc && !done) {
      i++;
      continue;
    }
    cl_in *in = r.in;
    if (rc)
      cl_lose(c, in->src);
    else if (!atomic_load(&c->lost[in->src]))
      c->peers[in->src].last_heard = cl_now();
    c->recvs[i] = c->recvs[--c->nrecvs];
    if (--in->pending == 0 && in->posted == in->len)
      cl_complete(c, in);
    any = true;
  }
  if (any)
    pthread_cond_broadcast(&c->changed);
  return any;
}

bool cl_pending_live(const ks_cluster *c) {
  for (size_t i = 0; i < c->nsends; i++)
    if (!atomic_load(&c->lost[c->sends[i].dest]))
      return true;
  for (size_t i = 0; i < c->nrecvs; i++)
    if (!atomic_load(&c->lost[c->recvs[i].in->src]))
      return true;
  return false;
}

void cl_abandon_requests(ks_cluster *c) {
  /* A send to a dead rank may never complete, and Open MPI cannot cancel
   * a send once started; freeing the request leaves it to MPI_Finalize.
   * The buffers stay until cl_free_io, after MPI_Finalize. */
  for (size_t i = 0; i < c->nsends; i++) {
    MPI_Cancel(&c->sends[i].req);
    MPI_Request_free(&c->sends[i].req);
  }
  for (size_t i = 0; i < c->nrecvs; i++) {
    MPI_Cancel(&c->recvs[i].req);
    MPI_Request_free(&c->recvs[i].req);
  }
}

void cl_free_io(ks_cluster *c) {
  for (size_t i = 0; i < c->nsends; i++)
    cl_out_release(c->sends[i].out);
  /* A blob still receiving is referenced by its receives and, until all
   * its data was matched, by its sender's `incoming`: freed by the last. */
  for (size_t i = 0; i < c->nrecvs; i++) {
    cl_in *in = c->recvs[i].in;
    if (--in->pending == 0 && (in->drop || c->peers[in->src].incoming != in))
      cl_in_free(in);
  }
  for (int r = 0; r < c->size; r++)
    if (c->peers[r].incoming)
      cl_in_free(c->peers[r].incoming);
  while (c->queue) {
    cl_in *in = c->queue;
    c->queue = in->next;
    cl_in_free(in);
  }
  free(c->sends);
  free(c->recvs);
}

/* ---- gather and bcast ---- */

/* Removes and returns src's blob of `tag` from the queue. Blobs of earlier
 * tags from src will never be asked for (tags only grow) and go too. */
static cl_in *cl_take(ks_cluster *c, int src, unsigned tag) {
  for (cl_in **p = &c->queue; *p;) {
    cl_in *in = *p;
    if (in->src == src && in->tag <= tag) {
      *p = in->next;
      if (in->tag == tag)
        return in;
      cl_in_free(in);
      continue;
    }
    p = &in->next;
  }
  return NULL;
}

/* A received blob into the caller's arena (never NULL, even when empty). */
static ks_blob cl_into_arena(ks_arena *arena, cl_in *in) {
  void *data = ks_arena_alloc(arena, in->len ? in->len : 1);
  if (in->len)
    memcpy(data, in->data, in->len);
  return (ks_blob){data, in->len};
}

/* Whether rank r will send nothing more: lost, or closing. Lock held. */
static bool cl_gone(const ks_cluster *c, int r) {
  return atomic_load(&c->lost[r]) || c->peers[r].bye_in;
}

static int cl_fail_fatal(ks_cluster *c, ks_ctx *ctx, const char *op) {
  char text[sizeof c->fatal];
  memcpy(text, c->fatal, sizeof text);
  pthread_mutex_unlock(&c->lock);
  return ks_fail(ctx, "cluster: %s: %s", op, text);
}

/* Rank 0 sends `blob` to `dest` (-1: every rank not gone). */
static int cl_send_to(ks_cluster *c, ks_ctx *ctx, const char *op, int dest, unsigned tag,
                      ks_blob blob) {
  if (blob.len && !blob.data)
    return ks_fail(ctx, "cluster: %s: a blob of %zu bytes without data", op, blob.len);
  cl_out *out = cl_out_new(tag, blob);
  pthread_mutex_lock(&c->lock);
  int rc = 0;
  if (c->fatal[0]) {
    free(out);
    rc = cl_fail_fatal(c, ctx, op);
  } else {
    for (int r = 0; r < c->size; r++)
      if (r != c->rank && (dest < 0 || r == dest) && !cl_gone(c, r))
        cl_send_blob(c, r, out);
    /* Sent to nobody: no request holds the copy, which goes now (once
     * sent, the thread frees it with the last send's completion). */
    if (out->refs == 0)
      free(out);
    pthread_mutex_unlock(&c->lock);
  }
  return rc;
}

int ks_cluster_gather(ks_cluster *c, ks_ctx *ctx, unsigned tag, ks_blob mine, ks_arena *arena,
                      ks_blob *all) {
  if (c->rank != 0)
    return cl_send_to(c, ctx, "gather", 0, tag, mine);
  if (!all || !arena)
    return ks_fail(ctx, "cluster: gather on rank 0 needs an arena and room for every rank");
  all[0] = mine;
  cl_in **got = ks_xcalloc((size_t)c->size, sizeof *got);
  bool *done = ks_xcalloc((size_t)c->size, sizeof *done);
  int rc = 0;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    bool waiting = false;
    for (int r = 1; r < c->size; r++) {
      if (done[r])
        continue;
      /* What came before a rank was lost still counts. */
      got[r] = cl_take(c, r, tag);
      done[r] = got[r] || cl_gone(c, r);
      waiting |= !done[r];
    }
    if (!waiting)
      break;
    if (c->fatal[0]) {
      rc = cl_fail_fatal(c, ctx, "gather");
      break;
    }
    cl_wait(c);
  }
  if (rc == 0)
    pthread_mutex_unlock(&c->lock);
  /* The copies are made outside the lock: the thread goes on meanwhile. */
  for (int r = 1; r < c->size; r++) {
    all[r] = (ks_blob){NULL, 0};
    if (got[r]) {
      if (rc == 0)
        all[r] = cl_into_arena(arena, got[r]);
      cl_in_free(got[r]);
    }
  }
  free(got);
  free(done);
  return rc;
}

int ks_cluster_bcast(ks_cluster *c, ks_ctx *ctx, unsigned tag, ks_blob *blob, ks_arena *arena) {
  if (c->rank == 0)
    return cl_send_to(c, ctx, "bcast", -1, tag, *blob);
  if (!arena)
    return ks_fail(ctx, "cluster: bcast needs an arena for the blob it receives");
  cl_in *in = NULL;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    if ((in = cl_take(c, 0, tag)) != NULL)
      break;
    if (cl_gone(c, 0)) {
      pthread_mutex_unlock(&c->lock);
      return 1;
    }
    if (c->fatal[0])
      return cl_fail_fatal(c, ctx, "bcast");
    cl_wait(c);
  }
  pthread_mutex_unlock(&c->lock);
  *blob = cl_into_arena(arena, in);
  cl_in_free(in);
  return 0;
}
