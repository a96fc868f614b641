/* wire_io: frames on file descriptors: building and splitting the byte
 * layout (wire_internal.h), and reading or writing one whole frame through a
 * pipe under a deadline.
 *
 * Both processes use these: the worker with blocking descriptors and no
 * deadline, the main process with non-blocking ones and the request's
 * wall-clock limit, so that a worker stuck in a kernel cannot stall the
 * search. The reader checks the header before it allocates anything. */
#include "wire_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void put_le(unsigned char *p, unsigned long long v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static unsigned long long get_le(const unsigned char *p, int bytes) {
  unsigned long long v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

int ks_wire_frame_build(ks_ctx *ctx, const char *json, size_t json_len, const void *const *attach,
                        const size_t *attach_size, unsigned nattach, ks_buf *out) {
  if (nattach > KS_WIRE_MAX_ATTACHMENTS)
    return ks_fail(ctx, "worker protocol: %u attachments (the cap is %d)", nattach,
                   KS_WIRE_MAX_ATTACHMENTS);
  if (json_len > KS_WIRE_MAX_JSON)
    return ks_fail(ctx, "worker protocol: a %zu-byte message (the cap is %llu bytes)", json_len,
                   KS_WIRE_MAX_JSON);
  unsigned long long total = KS_WIRE_HEADER_BYTES + 8ull * nattach + json_len;
  for (unsigned i = 0; i < nattach; i++) {
    if (attach_size[i] > KS_WIRE_MAX_ATTACHMENT)
      return ks_fail(ctx, "worker protocol: a %zu-byte attachment (the cap is %llu bytes)",
                     attach_size[i], KS_WIRE_MAX_ATTACHMENT);
    total += attach_size[i];
  }
  if (total > KS_WIRE_MAX_FRAME)
    return ks_fail(ctx, "worker protocol: a %llu-byte frame (the cap is %llu bytes)", total,
                   KS_WIRE_MAX_FRAME);
  unsigned char head[KS_WIRE_HEADER_BYTES + 8 * KS_WIRE_MAX_ATTACHMENTS] = {0};
  memcpy(head, KS_WIRE_MAGIC, 4);
  put_le(head + 4, KS_WIRE_VERSION, 2);
  put_le(head + 6, nattach, 2);
  put_le(head + 8, json_len, 4);
  for (unsigned i = 0; i < nattach; i++)
    put_le(head + KS_WIRE_HEADER_BYTES + 8 * i, attach_size[i], 8);
  ks_buf_grow(out, (size_t)total);
  ks_buf_add(out, head, KS_WIRE_HEADER_BYTES + 8 * nattach);
  ks_buf_add(out, json, json_len);
  for (unsigned i = 0; i < nattach; i++)
    ks_buf_add(out, attach[i], attach_size[i]);
  return 0;
}

int ks_wire_frame_size(ks_ctx *ctx, const void *bytes, size_t len, size_t *out) {
  const unsigned char *p = bytes;
  if (len < KS_WIRE_HEADER_BYTES) {
    *out = KS_WIRE_HEADER_BYTES;
    return 1;
  }
  if (memcmp(p, KS_WIRE_MAGIC, 4) != 0)
    return ks_fail(ctx, "worker protocol: not a frame (bad magic %02x %02x %02x %02x)", p[0], p[1],
                   p[2], p[3]);
  unsigned version = (unsigned)get_le(p + 4, 2);
  if (version != KS_WIRE_VERSION)
    return ks_fail(ctx, "worker protocol: version %u, expected %d (mismatched kernelsmith-cc "
                        "and kernelsmith-worker?)", version, KS_WIRE_VERSION);
  unsigned nattach = (unsigned)get_le(p + 6, 2);
  unsigned long long json_len = get_le(p + 8, 4);
  if (nattach > KS_WIRE_MAX_ATTACHMENTS)
    return ks_fail(ctx, "worker protocol: a frame with %u attachments (the cap is %d)", nattach,
                   KS_WIRE_MAX_ATTACHMENTS);
  if (json_len > KS_WIRE_MAX_JSON)
    return ks_fail(ctx, "worker protocol: a frame declaring %llu bytes of JSON (the cap is %llu)",
                   json_len, KS_WIRE_MAX_JSON);
  if (get_le(p + 12, 4) != 0)
    return ks_fail(ctx, "worker protocol: reserved header bytes are not zero");
  size_t head = KS_WIRE_HEADER_BYTES + 8 * (size_t)nattach;
  if (len < head) {
    *out = head;
    return 1;
  }
  unsigned long long total = head + json_len;
  for (unsigned i = 0; i < nattach; i++) {
    unsigned long long size = get_le(p + KS_WIRE_HEADER_BYTES + 8 * i, 8);
    if (size > KS_WIRE_MAX_ATTACHMENT)
      return ks_fail(ctx, "worker protocol: a frame declaring a %llu-byte attachment (the cap "
                          "is %llu)", size, KS_WIRE_MAX_ATTACHMENT);
    total += size;
  }
  if (total > KS_WIRE_MAX_FRAME)
    return ks_fail(ctx, "worker protocol: a frame declaring %llu bytes (the cap is %llu)", total,
                   KS_WIRE_MAX_FRAME);
  *out = (size_t)total;
  return 0;
}

int ks_wire_frame_parse(ks_ctx *ctx, const void *bytes, size_t len, ks_wire_frame *out) {
  memset(out, 0, sizeof *out);
  size_t total = 0;
  int rc = ks_wire_frame_size(ctx, bytes, len, &total);
  if (rc < 0)
    return -1;
  if (rc > 0 || len < total)
    return ks_fail(ctx, "worker protocol: truncated frame (%zu bytes, at least %zu expected)", len,
                   total);
  if (len > total)
    return ks_fail(ctx, "worker protocol: %zu stray bytes after the frame", len - total);
  const unsigned char *p = bytes;
  out->nattach = (unsigned)get_le(p + 6, 2);
  out->json_len = (size_t)get_le(p + 8, 4);
  size_t at = KS_WIRE_HEADER_BYTES + 8 * (size_t)out->nattach;
  out->json = (const char *)p + at;
  at += out->json_len;
  for (unsigned i = 0; i < out->nattach; i++) {
    out->attach_size[i] = (size_t)get_le(p + KS_WIRE_HEADER_BYTES + 8 * i, 8);
    out->attach[i] = p + at;
    at += out->attach_size[i];
  }
  return 0;
}

long long ks_wire_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits until `fd` is ready for `events` or the deadline passes. */
static ks_wire_io wait_ready(ks_ctx *ctx, int fd, short events, long long deadline_ms) {
  for (;;) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      long long left = deadline_ms - ks_wire_now_ms();
      if (left <= 0) {
        ks_fail(ctx, "worker protocol: timed out");
        return KS_WIRE_IO_TIMEOUT;
      }
      timeout = left > INT32_MAX ? INT32_MAX : (int)left;
    }
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, timeout);
    if (n > 0)
      return KS_WIRE_IO_OK; /* readable, writable, or hung up: the I/O call says which */
    if (n < 0 && errno != EINTR) {
      ks_fail(ctx, "worker protocol: poll: %s", strerror(errno));
      return KS_WIRE_IO_ERROR;
    }
  }
}

/* Reads until `frame` holds `want` bytes. */
static ks_wire_io read_to(ks_ctx *ctx, int fd, long long deadline_ms, ks_buf *frame, size_t want) {
  ks_buf_grow(frame, want - frame->len);
  while (frame->len < want) {
    ks_wire_io io = wait_ready(ctx, fd, POLLIN, deadline_ms);
    if (io != KS_WIRE_IO_OK)
      return io;
    ssize_t n = read(fd, frame->data + frame->len, want - frame->len);
    if (n > 0) {
      frame->len += (size_t)n;
      frame->data[frame->len] = '\0';
    } else if (n == 0) {
      if (frame->len)
        ks_fail(ctx, "worker protocol: the peer closed the pipe in the middle of a frame "
                     "(%zu of %zu bytes)", frame->len, want);
      else
        ks_fail(ctx, "worker protocol: the peer closed the pipe");
      return KS_WIRE_IO_EOF;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      ks_fail(ctx, "worker protocol: read: %s", strerror(errno));
      return KS_WIRE_IO_ERROR;
    }
  }
  return KS_WIRE_IO_OK;
}

ks_wire_io ks_wire_read(ks_ctx *ctx, int fd, long long deadline_ms, ks_buf *frame) {
  ks_buf_reset(frame);
  size_t want = KS_WIRE_HEADER_BYTES;
  for (;;) {
    ks_wire_io io = read_to(ctx, fd, deadline_ms, frame, want);
    if (io != KS_WIRE_IO_OK)
      return io;
    int rc = ks_wire_frame_size(ctx, frame->data, frame->len, &want);
    if (rc < 0)
      return KS_WIRE_IO_BAD;
    if (rc == 0)
      return read_to(ctx, fd, deadline_ms, frame, want);
  }
}

ks_wire_io ks_wire_write(ks_ctx *ctx, int fd, const void *frame, size_t len,
                         long long deadline_ms) {
  /* Block SIGPIPE in this thread only (no process-wide disposition is
   * changed behind the caller's back); a SIGPIPE our write raises stays
   * pending and is consumed below, one already pending is left alone. */
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  ks_wire_io io = KS_WIRE_IO_OK;
  size_t done = 0;
  bool broken = false;
  while (done < len) {
    io = wait_ready(ctx, fd, POLLOUT, deadline_ms);
    if (io != KS_WIRE_IO_OK)
      break;
    ssize_t n = write(fd, (const char *)frame + done, len - done);
    if (n >= 0) {
      done += (size_t)n;
    } else if (errno == EPIPE) {
      broken = true;
      ks_fail(ctx, "worker protocol: the peer closed the pipe");
      io = KS_WIRE_IO_EOF;
      break;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      ks_fail(ctx, "worker protocol: write: %s", strerror(errno));
      io = KS_WIRE_IO_ERROR;
      break;
    }
  }
  if (broken && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return io;
}
