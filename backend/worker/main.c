/* kernelsmith-worker: runs, verifies and times kernels on one GPU for
 * kernelsmith-cc, which starts it (backend/worker_client.c).
 *
 * It reads request frames on file descriptor 3 and writes one reply frame
 * per request on descriptor 4 (docs/worker-protocol.md); stdout and stderr
 * stay free for the driver's and sanitizers' own words, which therefore can
 * never corrupt the protocol. The device is opened on the first request and
 * kept. After a CUDA error that poisons the context the worker replies and
 * exits with status 3, since nothing can be run in that process any more.
 * EOF on descriptor 3 or an exit request ends it with status 0; a frame it
 * cannot read ends it with status 2 after an error reply.
 *
 * Usage: kernelsmith-worker [--device N] */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

enum { FD_IN = 3, FD_OUT = 4, EXIT_BAD_FRAME = 2, EXIT_DEAD_CONTEXT = 3 };

static int usage(const char *prog, const char *why) {
  fprintf(stderr, "%s: %s\nusage: %s [--device N]\n"
                  "Started by kernelsmith-cc: requests on fd 3, replies on fd 4.\n",
          prog, why, prog);
  return 2;
}

/* The process that started us. If it dies while a kernel spins, nobody
 * reads our EOF and the GPU stays busy: a watchdog thread ends the worker
 * once its parent is gone. (PR_SET_PDEATHSIG would fire when the *thread*
 * that spawned us exits, which a multi-threaded caller may well do.) */
static pid_t parent;

static void *watchdog(void *unused) {
  for (;;) {
    sleep(1);
    if (getppid() != parent)
      _exit(4);
  }
  return NULL;
}

static void start_watchdog(void) {
  parent = getppid();
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&thread, &attr, watchdog, NULL) != 0)
    fprintf(stderr, "kernelsmith-worker: no watchdog thread; an orphaned worker may linger\n");
  pthread_attr_destroy(&attr);
}

/* Sends `msg`; false when the main process is gone. */
static bool reply(ks_ctx *ctx, const ks_wire_msg *msg, ks_buf *frame) {
  ks_buf_reset(frame);
  if (ks_wire_encode(ctx, msg, frame)) {
    /* A reply we cannot encode (over the caps) becomes an error reply,
     * which always fits. */
    ks_wire_msg err = {.type = KS_WIRE_ERROR, .error = ctx->error};
    ks_buf_reset(frame);
    if (ks_wire_encode(ctx, &err, frame))
      return false;
  }
  return ks_wire_write(ctx, FD_OUT, frame->data, frame->len, -1) == KS_WIRE_IO_OK;
}

/* Serves one decoded request; fills `rep` (type unset: no reply). */
static void serve(wk_state *w, ks_arena *arena, const ks_wire_msg *req, ks_wire_msg *rep) {
  if (!w->tried)
    wk_open(w);
  if (!w->ready) {
    rep->type = KS_WIRE_ERROR;
    rep->error = w->open_error;
    rep->no_device = w->no_device;
    return;
  }
  switch (req->type) {
  case KS_WIRE_HELLO:
    rep->type = KS_WIRE_HELLO_REPLY;
    rep->device = w->info;
    return;
  case KS_WIRE_RUN:
    rep->type = KS_WIRE_RUN_REPLY;
    wk_run(w, arena, &req->run, &rep->result);
    return;
  case KS_WIRE_CEILINGS: {
    wk_outcome oc = {KS_RUN_OK, NULL, NULL};
    if (wk_ceilings(w, arena, &req->copy, &req->fma, req->fma_flops_per_iter, &rep->ceilings,
                    &oc)) {
      rep->type = KS_WIRE_ERROR;
      rep->error = ks_arena_printf(arena, "ceilings: %s", oc.error ? oc.error : "failed");
      return;
    }
    rep->type = KS_WIRE_CEILINGS_REPLY;
    return;
  }
  default:
    rep->type = KS_WIRE_ERROR;
    rep->error = ks_arena_printf(arena, "a %s message is not a request",
                                 ks_wire_type_name(req->type));
    return;
  }
}

int main(int argc, char **argv) {
  int device = 0;
  for (int i = 1; i < argc; i++) {
    const char *value = NULL;
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      value = argv[++i];
    else if (strncmp(argv[i], "--device=", 9) == 0)
      value = argv[i] + 9;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: %s [--device N]\nRuns, verifies and times kernels for kernelsmith-cc, "
             "which starts it: requests on fd 3, replies on fd 4.\n", argv[0]);
      return 0;
    } else
      return usage(argv[0], "unknown argument");
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (*end || errno || v < 0 || v > 1024)
      return usage(argv[0], "--device wants a device ordinal");
    device = (int)v;
  }
  if (fcntl(FD_IN, F_GETFD) < 0 || fcntl(FD_OUT, F_GETFD) < 0)
    return usage(argv[0], "file descriptors 3 and 4 are not open");
  start_watchdog();

  ks_ctx ctx;
  ks_ctx_init(&ctx, "kernelsmith-worker");
  const char *prof = getenv("KS_WORKER_PROFILE");
  wk_state w = {.ctx = &ctx, .ordinal = device, .profile = prof && *prof && strcmp(prof, "0")};
  ks_buf in = KS_BUF_INIT, out = KS_BUF_INIT;
  int status = 0;
  for (;;) {
    ks_wire_io io = ks_wire_read(&ctx, FD_IN, -1, &in);
    if (io == KS_WIRE_IO_EOF && in.len == 0)
      break;
    ks_arena arena = KS_ARENA_INIT;
    ks_wire_msg req, rep = {0};
    if (io != KS_WIRE_IO_OK || ks_wire_decode(&ctx, in.data, in.len, &arena, &req)) {
      /* The stream is out of step: say why, then stop. */
      rep.type = KS_WIRE_ERROR;
      rep.error = ks_arena_strdup(&arena, ctx.error);
      reply(&ctx, &rep, &out);
      ks_arena_release(&arena);
      status = EXIT_BAD_FRAME;
      break;
    }
    bool stop = req.type == KS_WIRE_EXIT;
    if (!stop) {
      serve(&w, &arena, &req, &rep);
      stop = !reply(&ctx, &rep, &out);
    }
    ks_arena_release(&arena);
    if (w.dead) {
      status = EXIT_DEAD_CONTEXT;
      break;
    }
    if (stop)
      break;
  }
  wk_fill_cache_release(&w);
  if (!w.dead)
    wk_pool_clear(&w);
  wk_close(&w);
  ks_buf_release(&in);
  ks_buf_release(&out);
  ks_ctx_release(&ctx);
  return status;
}
