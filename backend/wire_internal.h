/* wire_internal: what the wire module's files share (wire.c: names and
 * encoding, wire_decode.c, wire_io.c: framing and I/O). Not for other
 * modules.
 *
 * A frame, all integers little-endian:
 *   0  magic "KSWP"
 *   4  u16 version (KS_WIRE_VERSION)
 *   6  u16 number of attachments (<= KS_WIRE_MAX_ATTACHMENTS)
 *   8  u32 length of the JSON document (<= KS_WIRE_MAX_JSON)
 *   12 u32 reserved, 0
 *   16 u64 length of each attachment
 *   then the JSON (UTF-8, no NUL), then the attachments back to back. */
#ifndef KS_WIRE_INTERNAL_H
#define KS_WIRE_INTERNAL_H

#include <stddef.h>

#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_wire.h"

/* The most bytes a raw-bytes argument (KS_ARG_BYTES) may carry: a kernel's
 * whole parameter block was 4 KiB before Volta, and a struct passed by value
 * beyond that is no kernel this tool rewrites. Both sides refuse more. */
enum { KS_WIRE_MAX_ARG_BYTES = 4096 };

/* The names of an enum on the wire, indexed by value (wire.c). */
typedef struct ks_wire_names {
  const char *const *names;
  size_t count;
} ks_wire_names;
extern const ks_wire_names ks_wire_types, ks_wire_statuses, ks_wire_roles, ks_wire_dists;
/* The value whose name is `name`, or -1. */
int ks_wire_name_index(const ks_wire_names *t, const char *name);

/* A parsed frame; every pointer points into the frame's bytes. */
typedef struct ks_wire_frame {
  const char *json;
  size_t json_len;
  unsigned nattach;
  const void *attach[KS_WIRE_MAX_ATTACHMENTS];
  size_t attach_size[KS_WIRE_MAX_ATTACHMENTS];
} ks_wire_frame;

/* Appends a frame holding `json` and the attachments to `out`. */
int ks_wire_frame_build(ks_ctx *ctx, const char *json, size_t json_len, const void *const *attach,
                        const size_t *attach_size, unsigned nattach, ks_buf *out);
/* Splits a whole frame; fails on anything but exactly one valid frame. */
int ks_wire_frame_parse(ks_ctx *ctx, const void *bytes, size_t len, ks_wire_frame *out);
/* From the first `len` bytes of a frame: 0 with *out = the whole frame's
 * size once the header and attachment lengths are there; 1 with *out = the
 * bytes needed to know it; -1 (ks_fail) when the header is not ours or
 * declares more than the caps. */
int ks_wire_frame_size(ks_ctx *ctx, const void *bytes, size_t len, size_t *out);

#endif
