/* ks_wire: the protocol between kernelsmith-cc and kernelsmith-worker.
 *
 * Both sides include this header: the main process encodes requests and
 * decodes replies, the worker the other way round. A frame is a fixed
 * 16-byte header (magic "KSWP", version, attachment count, JSON length),
 * the attachments' lengths, a JSON document, then the attachments (cubins)
 * as raw bytes. Everything a request needs travels inside it: no shared
 * files, no pointers. The format, every field and the size caps are in
 * docs/worker-protocol.md.
 *
 * cJSON stays inside wire.c: callers see only ks_wire_msg, which reuses the
 * ks_worker.h structs (ks_run_request, ks_run_result, ...).
 *
 * Ownership: ks_wire_encode appends to a buffer the caller owns. Everything
 * ks_wire_decode fills in (strings, arrays, the workload, copies of the
 * cubins) lives in the arena the caller passes; nothing points into the
 * frame, which may be reused at once. */
#ifndef KS_WIRE_H
#define KS_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_worker.h"

enum {
  KS_WIRE_VERSION = 1,
  KS_WIRE_HEADER_BYTES = 16,   /* magic[4] u16 version, u16 attachments, u32 json, u32 0 */
  KS_WIRE_MAX_ATTACHMENTS = 4,
};
#define KS_WIRE_MAGIC "KSWP"
/* Caps, checked by the encoder and by the reader before it allocates: a
 * corrupt length cannot make either side allocate gigabytes. */
#define KS_WIRE_MAX_JSON (16ull << 20)        /* results with every sample fit easily */
#define KS_WIRE_MAX_ATTACHMENT (256ull << 20) /* one cubin */
#define KS_WIRE_MAX_FRAME (512ull << 20)      /* header + JSON + attachments */

/* The FMA ceiling kernel (backend/ceilings.c) runs this many independent
 * fmaf chains per loop iteration; a ceilings request carries the FLOP count
 * per thread and iteration so that the worker needs no copy of the source. */
#define KS_CEILING_FMA_CHAINS 8

typedef enum ks_wire_type {
  KS_WIRE_HELLO,          /* main -> worker: who are you? */
  KS_WIRE_HELLO_REPLY,    /* device facts */
  KS_WIRE_RUN,            /* a ks_run_request with its cubins */
  KS_WIRE_RUN_REPLY,      /* its ks_run_result */
  KS_WIRE_CEILINGS,       /* measure copy bandwidth and FMA rate */
  KS_WIRE_CEILINGS_REPLY,
  KS_WIRE_EXIT,           /* main -> worker: release everything and exit */
  KS_WIRE_ERROR,          /* worker -> main: the request could not be served */
} ks_wire_type;

const char *ks_wire_type_name(ks_wire_type t); /* "hello", "run_reply", ... */

/* One message; which fields count depends on `type`. */
typedef struct ks_wire_msg {
  ks_wire_type type;
  ks_device_info device;   /* HELLO_REPLY */
  ks_run_request run;      /* RUN: run.work is arena-owned after decoding */
  ks_run_result result;    /* RUN_REPLY */
  ks_module copy, fma;     /* CEILINGS: the two ceiling kernels */
  int fma_flops_per_iter;  /* CEILINGS: FLOPs per thread per loop iteration */
  ks_ceilings ceilings;    /* CEILINGS_REPLY */
  const char *error;       /* ERROR: one sentence */
  bool no_device;          /* ERROR: no driver or no usable GPU */
} ks_wire_msg;

/* Appends one frame for `msg` to `out`. Fails (ks_fail) on a message over
 * the caps or one that cannot be represented. */
int ks_wire_encode(ks_ctx *ctx, const ks_wire_msg *msg, ks_buf *out);
/* Decodes one whole frame (as ks_wire_read returns it). Fails with a message
 * saying what is wrong: bad magic, other version, truncated, JSON error,
 * missing or mistyped field. */
int ks_wire_decode(ks_ctx *ctx, const void *frame, size_t len, ks_arena *arena,
                   ks_wire_msg *out);

/* How reading or writing a frame ended. */
typedef enum ks_wire_io {
  KS_WIRE_IO_OK,
  KS_WIRE_IO_EOF,     /* the peer closed its end (or died): EOF, EPIPE */
  KS_WIRE_IO_TIMEOUT, /* the deadline passed first */
  KS_WIRE_IO_BAD,     /* a header that is not ours, or over the caps */
  KS_WIRE_IO_ERROR,   /* the system call failed */
} ks_wire_io;

/* Milliseconds on the monotonic clock, for deadlines. */
long long ks_wire_now_ms(void);

/* Reads exactly one frame from `fd` into `frame` (reset first), validating
 * the header before reading the rest. deadline_ms is a ks_wire_now_ms()
 * value, or -1 to wait for ever. Anything but OK also records a message
 * (ks_fail). Works on blocking and non-blocking descriptors. */
ks_wire_io ks_wire_read(ks_ctx *ctx, int fd, long long deadline_ms, ks_buf *frame);
/* Writes the whole frame. SIGPIPE is blocked in the calling thread during
 * the write (and a SIGPIPE it raised is consumed), so a dead peer is
 * KS_WIRE_IO_EOF, never a killed process. */
ks_wire_io ks_wire_write(ks_ctx *ctx, int fd, const void *frame, size_t len,
                         long long deadline_ms);

/* The short names used on the wire for enums, shared with the worker's
 * messages ("f32", "uniform", "inout"). NULL or false for unknown values. */
const char *ks_wire_dtype_name(ks_dtype t);
bool ks_wire_dtype_parse(const char *name, ks_dtype *out);
size_t ks_wire_dtype_size(ks_dtype t);
bool ks_wire_dtype_is_float(ks_dtype t);
const char *ks_wire_status_name(ks_run_status s); /* "ok", "crashed", ... */

#endif
