/* test_cluster: the cluster transport under mpirun (tests/cluster_mpi.sh).
 *
 *   mpirun -np N test_cluster MODE [TIMEOUT_S]
 *
 * Every mode runs ROUNDS rounds of gather (tag 4r), bcast (4r + 1) and a
 * second gather (4r + 2), every blob a pattern of its sender, round and
 * phase, checked byte for byte by its receiver: small ones, a 5 MB one
 * (split into 1 MiB messages), empty ones. A rank that changes each round
 * sleeps before it starts, so ranks run ahead of each other and blobs wait
 * in the queue.
 *
 *   exchange     every rank to the end; nobody lost
 *   kill-worker  the last rank SIGKILLs itself in round KILL_ROUND right
 *                after starting the send of its first gather's 5 MB blob:
 *                rank 0 gets NULL for it from then on (its receives of the
 *                blob usually never complete: abandoned at close), take_lost
 *                reports it once, the others go on to the end
 *   kill-worker-quiet  the same, but the last rank dies before its first
 *                gather of KILL_ROUND, while rank 0 waits for it and sends
 *                it heartbeats alone (over TCP a rank that dies while rank
 *                0 writes to it can take rank 0 along: ks_cluster.h)
 *   kill-root    rank 0 SIGKILLs itself in round KILL_ROUND before its
 *                bcast (of 5 MB, sent to nobody): the others' bcast
 *                returns 1 and they stop cleanly
 *
 * Each surviving rank prints "rank R: done ..." or "rank R: rank 0 lost
 * ..." and exits 0; any check that fails prints "rank R: FAIL ..." and
 * exits 1. */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ks_cluster.h"

enum { ROUNDS = 24, KILL_ROUND = 10, BIG_GATHER_ROUND = 5, BIG_BCAST_ROUND = KILL_ROUND,
       EMPTY_ROUND = 8 };
#define BIG ((size_t)5 * 1000 * 1000)

static int my_rank = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("rank %d: ", my_rank);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    say("FAIL " __VA_ARGS__);                                                                      \
    exit(1);                                                                                       \
  } while (0)

static unsigned char pattern_byte(unsigned seed, size_t i) {
  return (unsigned char)(seed * 131u + i * 7u + (i >> 9) + (i >> 17));
}

/* The blob `sender` sends with `tag`: its length and bytes. */
static size_t blob_len(int sender, int round, int phase) {
  if (round == EMPTY_ROUND)
    return 0;
  /* In KILL_ROUND the worker dies right after starting the send of such a
   * blob, and rank 0 after receiving them. */
  if (phase == 0 && (round == BIG_GATHER_ROUND || round == KILL_ROUND))
    return BIG + (size_t)sender; /* a last chunk that is not full */
  if (phase == 1 && round == BIG_BCAST_ROUND)
    return BIG;
  return ((size_t)sender * 37 + (size_t)round * 101 + (size_t)phase * 53) % 3000 + 1;
}

static ks_blob make_blob(ks_arena *arena, int sender, int round, int phase) {
  size_t len = blob_len(sender, round, phase);
  unsigned char *p = ks_arena_alloc(arena, len ? len : 1);
  unsigned seed = (unsigned)(sender * 1000 + round * 4 + phase);
  for (size_t i = 0; i < len; i++)
    p[i] = pattern_byte(seed, i);
  return (ks_blob){p, len};
}

static void check_blob(ks_blob b, int sender, int round, int phase) {
  size_t len = blob_len(sender, round, phase);
  if (!b.data)
    FAIL("round %d phase %d: no blob from rank %d", round, phase, sender);
  if (b.len != len)
    FAIL("round %d phase %d: %zu bytes from rank %d, expected %zu", round, phase, b.len, sender,
         len);
  const unsigned char *p = b.data;
  unsigned seed = (unsigned)(sender * 1000 + round * 4 + phase);
  for (size_t i = 0; i < len; i++)
    if (p[i] != pattern_byte(seed, i))
      FAIL("round %d phase %d: byte %zu from rank %d differs", round, phase, i, sender);
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct run {
  ks_cluster *c;
  ks_ctx *ctx;
  const char *mode;
  int size;
  int victim;          /* the rank kill-worker kills; -1 none */
  int lost_reported;   /* rank 0: how many take_lost reported */
} run;

/* Rank 0's side of one gather: every rank's blob checked, the victim's
 * NULL once it is dead. */
static void gather_root(run *t, ks_arena *arena, int round, int phase) {
  ks_blob all[64];
  ks_blob mine = make_blob(arena, 0, round, phase);
  if (ks_cluster_gather(t->c, t->ctx, (unsigned)(round * 4 + phase), mine, arena, all))
    FAIL("gather: %s", t->ctx->error);
  if (all[0].data != mine.data)
    FAIL("gather: all[0] is not mine");
  for (int r = 1; r < t->size; r++) {
    if (r == t->victim && round > KILL_ROUND) {
      if (all[r].data)
        FAIL("round %d phase %d: a blob from rank %d, killed in round %d", round, phase, r,
             KILL_ROUND);
      continue;
    }
    /* In the round it dies the victim's first blob may be in or not. */
    if (r == t->victim && round == KILL_ROUND && (phase == 2 || !all[r].data))
      continue;
    check_blob(all[r], r, round, phase);
  }
  int lost[64];
  size_t n = ks_cluster_take_lost(t->c, lost);
  for (size_t i = 0; i < n; i++) {
    if (lost[i] != t->victim)
      FAIL("round %d: rank %d reported lost", round, lost[i]);
    say("lost rank %d (round %d)", lost[i], round);
    t->lost_reported++;
  }
}

static void root(run *t) {
  for (int round = 0; round < ROUNDS; round++) {
    ks_arena arena = KS_ARENA_INIT;
    if (round % t->size == 0)
      pause_ms(40);
    if (round == 3)
      pause_ms(400); /* the others run ahead: their blobs wait in the queue */
    gather_root(t, &arena, round, 0);
    if (strcmp(t->mode, "kill-root") == 0 && round == KILL_ROUND) {
      say("killing myself in round %d", round);
      raise(SIGKILL);
    }
    ks_blob b = make_blob(&arena, 0, round, 1);
    if (ks_cluster_bcast(t->c, t->ctx, (unsigned)(round * 4 + 1), &b, &arena))
      FAIL("bcast: %s", t->ctx->error);
    gather_root(t, &arena, round, 2);
    ks_arena_release(&arena);
  }
  if (t->victim > 0) {
    if (t->lost_reported != 1)
      FAIL("take_lost reported %d ranks, expected the victim once", t->lost_reported);
    if (!ks_cluster_lost(t->c, t->victim))
      FAIL("rank %d not lost at the end", t->victim);
  }
  for (int r = 0; r < t->size; r++)
    if (r != t->victim && ks_cluster_lost(t->c, r))
      FAIL("rank %d lost", r);
  say("done %d rounds, lost %d", ROUNDS, t->lost_reported);
}

static void worker(run *t) {
  int me = ks_cluster_rank(t->c);
  for (int round = 0; round < ROUNDS; round++) {
    ks_arena arena = KS_ARENA_INIT;
    if (round % t->size == me)
      pause_ms(40);
    if (me == 1 && round == 12)
      pause_ms(400); /* rank 0's bcast waits in this rank's queue */
    if (me == t->victim && round == KILL_ROUND && strcmp(t->mode, "kill-worker-quiet") == 0) {
      say("killing myself in round %d", round);
      raise(SIGKILL);
    }
    ks_blob mine = make_blob(&arena, me, round, 0);
    if (ks_cluster_gather(t->c, t->ctx, (unsigned)(round * 4), mine, NULL, NULL))
      FAIL("gather: %s", t->ctx->error);
    /* Overwritten at once: gather copied it. */
    memset((void *)mine.data, 0xee, mine.len);
    if (me == t->victim && round == KILL_ROUND) { /* kill-worker */
      say("killing myself in round %d", round);
      raise(SIGKILL);
    }
    ks_blob b = {NULL, 0};
    int rc = ks_cluster_bcast(t->c, t->ctx, (unsigned)(round * 4 + 1), &b, &arena);
    if (rc < 0)
      FAIL("bcast: %s", t->ctx->error);
    if (rc == 1) {
      int lost[64];
      size_t n = ks_cluster_take_lost(t->c, lost);
      if (strcmp(t->mode, "kill-root") != 0 || round != KILL_ROUND)
        FAIL("round %d: bcast says rank 0 is lost", round);
      if (n != 1 || lost[0] != 0 || !ks_cluster_lost(t->c, 0))
        FAIL("bcast returned 1 but take_lost says %zu ranks", n);
      if (ks_cluster_take_lost(t->c, lost) != 0)
        FAIL("take_lost reported rank 0 twice");
      say("rank 0 lost in round %d", round);
      ks_arena_release(&arena);
      return;
    }
    check_blob(b, 0, round, 1);
    mine = make_blob(&arena, me, round, 2);
    if (ks_cluster_gather(t->c, t->ctx, (unsigned)(round * 4 + 2), mine, NULL, NULL))
      FAIL("gather: %s", t->ctx->error);
    ks_arena_release(&arena);
  }
  if (ks_cluster_lost(t->c, 0))
    FAIL("rank 0 lost");
  say("done %d rounds", ROUNDS);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: test_cluster exchange|kill-worker|kill-worker-quiet|kill-root [TIMEOUT_S]\n");
    return 2;
  }
  const char *mode = argv[1];
  if (strcmp(mode, "exchange") && strcmp(mode, "kill-worker") &&
      strcmp(mode, "kill-worker-quiet") && strcmp(mode, "kill-root")) {
    fprintf(stderr, "test_cluster: unknown mode %s\n", mode);
    return 2;
  }
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_cluster");
  ks_cluster_options o = {.timeout_s = argc > 2 ? atof(argv[2]) : 2, .chunk_bytes = 1 << 20};
  ks_cluster *c = NULL;
  if (ks_cluster_open(&ctx, &argc, &argv, &o, &c)) {
    fprintf(stderr, "test_cluster: %s\n", ctx.error);
    ks_ctx_release(&ctx);
    return 1;
  }
  run t = {.c = c, .ctx = &ctx, .mode = mode, .size = ks_cluster_size(c), .victim = -1};
  my_rank = ks_cluster_rank(c);
  if (t.size > 64)
    FAIL("at most 64 ranks");
  if (strncmp(mode, "kill-worker", 11) == 0 && t.size > 1)
    t.victim = t.size - 1;
  for (int r = 0; r < t.size; r++)
    if (!ks_cluster_host(c, r) || !ks_cluster_host(c, r)[0])
      FAIL("no host name for rank %d", r);
  if (ks_cluster_host(c, t.size) || ks_cluster_host(c, -1))
    FAIL("a host name for a rank out of range");
  say("of %d on %s", t.size, ks_cluster_host(c, my_rank));
  if (my_rank == 0)
    root(&t);
  else
    worker(&t);
  ks_cluster_close(c);
  say("closed");
  ks_ctx_release(&ctx);
  return 0;
}
