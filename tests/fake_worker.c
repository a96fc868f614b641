/* fake_worker: a stand-in for kernelsmith-worker that needs no GPU, for
 * test_worker_client. It speaks the real protocol (ks_wire) on fds 3 and 4
 * and misbehaves on demand, as a worker with a broken kernel or driver
 * would.
 *
 * What a run request does is chosen by the candidate's function name (the
 * original's when there is no candidate), so that one test can sequence
 * failures and successes through the same worker:
 *   ok        a plain OK result, one seed check per seed
 *   crash     raise SIGSEGV (a driver crash)
 *   hang      sleep for ever (a kernel that never ends)
 *   exit      exit(1) without replying
 *   garbage   write bytes that are not a frame, then wait
 *   sticky    reply CRASHED like a poisoned context, then exit(3)
 *   wrongtype answer with a hello reply
 *   slow      sleep 200 ms, then ok
 *   replaydiff in a replay, every captured output differs from its capture
 *             in 3 elements, 1 of them beyond tolerance (else: no diffs)
 *   env       write the environment, one variable a line, to the file
 *             $KS_FAKE_WORKER_ENV names, then ok
 * A replay request (which has no candidate) answers as the real worker
 * does: per seed, one output per out/inout buffer, the capture fields set
 * for those with an expect_file.
 * Every OK result carries the process id in base_registers, so that a test
 * can see whether a restart happened. KS_FAKE_WORKER in the environment
 * changes the process as a whole: "nodevice" answers every request with a
 * no-device error; "die" exits at once, before reading anything. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ks_wire.h"

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int send_msg(ks_ctx *ctx, const ks_wire_msg *m) {
  ks_buf frame = KS_BUF_INIT;
  int rc = ks_wire_encode(ctx, m, &frame) ? -1 : 0;
  if (!rc && ks_wire_write(ctx, 4, frame.data, frame.len, -1) != KS_WIRE_IO_OK)
    rc = -1;
  ks_buf_release(&frame);
  return rc;
}

static void replay(ks_arena *arena, const ks_run_request *req, bool diff, ks_run_result *r) {
  for (size_t i = 0; i < req->nseeds; i++) {
    ks_seed_check *s = ks_array_push(arena, &r->seeds);
    s->seed = req->seeds[i];
    for (size_t k = 0; k < req->work->buffers.len; k++) {
      const ks_wbuffer *b = &req->work->buffers.items[k];
      if (b->role == KS_ROLE_IN)
        continue;
      ks_output_check *c = ks_array_push(arena, &s->outputs);
      c->buffer = b->name;
      c->count = b->count;
      c->first_mismatch = c->ref_first_mismatch = c->capture_first_diff = -1;
      c->has_capture = b->expect_file != NULL;
      if (c->has_capture && diff) {
        c->capture_bit_diffs = 3;
        c->capture_mismatches = 1;
        c->capture_first_diff = 0;
        c->capture_expected = 1;
        c->capture_got = 2;
      }
    }
  }
}

static void run(ks_ctx *ctx, ks_arena *arena, const ks_run_request *req, ks_wire_msg *rep) {
  const char *mode = req->cand.cubin ? req->cand.function : req->base.function;
  if (strcmp(mode, "crash") == 0) {
    signal(SIGSEGV, SIG_DFL); /* past a sanitizer's handler: a real signal death */
    raise(SIGSEGV);
  }
  if (strcmp(mode, "hang") == 0)
    for (;;)
      sleep_ms(1000);
  if (strcmp(mode, "exit") == 0)
    exit(1);
  if (strcmp(mode, "garbage") == 0) {
    static const char junk[] = "Segmentation fault (core dumped) -- not a frame at all";
    if (write(4, junk, sizeof junk) < 0)
      exit(1);
    for (;;)
      sleep_ms(1000);
  }
  if (strcmp(mode, "wrongtype") == 0) {
    rep->type = KS_WIRE_HELLO_REPLY;
    return;
  }
  if (strcmp(mode, "slow") == 0)
    sleep_ms(200);
  if (strcmp(mode, "env") == 0) {
    extern char **environ;
    const char *path = getenv("KS_FAKE_WORKER_ENV");
    FILE *f = path ? fopen(path, "w") : NULL;
    for (char **e = environ; f && *e; e++)
      fprintf(f, "%s\n", *e);
    if (f)
      fclose(f);
  }
  rep->type = KS_WIRE_RUN_REPLY;
  ks_run_result *r = &rep->result;
  if (strcmp(mode, "sticky") == 0) {
    r->status = KS_RUN_CRASHED;
    r->error = "cand: kernel execution: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
               "was encountered";
    r->error_kernel = "cand";
    send_msg(ctx, rep);
    exit(3);
  }
  r->base_registers = (int)getpid();
  if (req->replay) {
    replay(arena, req, strcmp(mode, "replaydiff") == 0, r);
    return;
  }
  for (size_t i = 0; i < req->nseeds; i++) {
    ks_seed_check *s = ks_array_push(arena, &r->seeds);
    s->seed = req->seeds[i];
    ks_output_check *c = ks_array_push(arena, &s->outputs);
    c->buffer = "out";
    c->count = req->work->buffers.len ? req->work->buffers.items[0].count : 0;
    c->first_mismatch = -1;
  }
}

int main(void) {
  const char *env = getenv("KS_FAKE_WORKER");
  if (env && strcmp(env, "die") == 0)
    return 1;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "fake_worker");
  ks_buf in = KS_BUF_INIT;
  int status = 0;
  for (;;) {
    ks_wire_io io = ks_wire_read(&ctx, 3, -1, &in);
    if (io != KS_WIRE_IO_OK) {
      status = io == KS_WIRE_IO_EOF ? 0 : 2;
      break;
    }
    ks_arena arena = KS_ARENA_INIT;
    ks_wire_msg req, rep = {0};
    if (ks_wire_decode(&ctx, in.data, in.len, &arena, &req)) {
      ks_arena_release(&arena);
      status = 2;
      break;
    }
    bool stop = req.type == KS_WIRE_EXIT;
    if (!stop) {
      if (env && strcmp(env, "nodevice") == 0) {
        rep.type = KS_WIRE_ERROR;
        rep.error = "no NVIDIA driver found (fake)";
        rep.no_device = true;
      } else if (req.type == KS_WIRE_HELLO) {
        rep.type = KS_WIRE_HELLO_REPLY;
        snprintf(rep.device.name, sizeof rep.device.name, "fake GPU %d", (int)getpid());
        rep.device.cc_major = 9;
      } else if (req.type == KS_WIRE_CEILINGS) {
        rep.type = KS_WIRE_CEILINGS_REPLY;
        rep.ceilings = (ks_ceilings){1e12, 2e13};
      } else {
        run(&ctx, &arena, &req.run, &rep);
      }
      stop = send_msg(&ctx, &rep) != 0;
    }
    ks_arena_release(&arena);
    if (stop)
      break;
  }
  ks_buf_release(&in);
  ks_ctx_release(&ctx);
  return status;
}
