/* capture: the capture file of `profile --capture` read, checked and written
 * (docs/capture-format.md). See ks_capture.h.
 *
 * The CRC-32 is zlib's. The injection library has its own copy
 * (runtime/inject/capture_file.c): it links nothing into the user's
 * program; the tests check one against the other. */
#include "ks_capture.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

unsigned ks_capture_crc32(unsigned crc, const void *p, size_t n) {
  /* zlib answers a NULL buffer with the initial value, which would break a
   * chain through an empty piece. */
  return n ? (unsigned)crc32_z(crc, p, n) : crc;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* ---- reading ------------------------------------------------------------- */

/* Where the reader is, for its messages. */
typedef struct reader {
  ks_ctx *ctx;
  ks_capture *c;
  unsigned long long record; /* 1-based */
  unsigned long long at;     /* byte offset of the record */
} reader;

static int bad(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(reader *r, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ks_fail(r->ctx, "%s: record %llu at byte %llu: %s", r->c->path, r->record, r->at, msg);
}

/* Reads `n` bytes at the current position, into `dst` (may be NULL: then
 * only the CRC), chaining `*crc` and `*crc2` (may be NULL). */
static int read_crc2(reader *r, unsigned char *dst, uint64_t n, unsigned *crc, unsigned *crc2) {
  unsigned char chunk[1 << 16];
  while (n) {
    size_t want = n < sizeof chunk ? (size_t)n : sizeof chunk;
    unsigned char *into = dst ? dst : chunk;
    if (fread(into, 1, want, r->c->file) != want)
      return bad(r, "the file ends inside the record (%s)",
                 ferror(r->c->file) ? strerror(errno) : "truncated");
    *crc = ks_capture_crc32(*crc, into, want);
    if (crc2)
      *crc2 = ks_capture_crc32(*crc2, into, want);
    if (dst)
      dst += want;
    n -= want;
  }
  return 0;
}

static int read_crc(reader *r, unsigned char *dst, uint64_t n, unsigned *crc) {
  return read_crc2(r, dst, n, crc, NULL);
}

static const cJSON *field(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A JSON number that is a whole number in [lo, hi]. */
static bool whole_in(const cJSON *v, double lo, double hi) {
  return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi &&
         v->valuedouble == (double)(long long)v->valuedouble;
}

/* A non-negative integer field; numbers past 2^53 come as "0x..." strings. */
static int get_u64(reader *r, const cJSON *o, const char *key, unsigned long long *out) {
  const cJSON *v = field(o, key);
  if (whole_in(v, 0, 9007199254740992.0)) {
    *out = (unsigned long long)v->valuedouble;
    return 0;
  }
  if (cJSON_IsString(v) && !strncmp(v->valuestring, "0x", 2) && v->valuestring[2]) {
    char *end;
    errno = 0;
    *out = strtoull(v->valuestring + 2, &end, 16);
    if (!errno && !*end)
      return 0;
  }
  return bad(r, "launch metadata: '%s' is missing or not a non-negative integer", key);
}

/* A launch dimension within CUDA's limits, which every launch that ran
 * obeys: each component at least 1 and at most `max`, the product at most
 * `total` (0: no limit). */
static int get_dims(reader *r, const cJSON *o, const char *key, const unsigned max[3],
                    unsigned long long total, unsigned out[3]) {
  const cJSON *a = field(o, key);
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
    return bad(r, "launch metadata: '%s' is not [x,y,z]", key);
  for (int i = 0; i < 3; i++) {
    const cJSON *v = cJSON_GetArrayItem(a, i);
    if (!whole_in(v, 0, 4294967295.0))
      return bad(r, "launch metadata: '%s' is not [x,y,z] of whole numbers", key);
    out[i] = (unsigned)v->valuedouble;
  }
  for (int i = 0; i < 3; i++)
    if (!out[i] || out[i] > max[i])
      return bad(r, "launch metadata: '%s' [%u,%u,%u]: %c must be from 1 to %u", key, out[0],
                 out[1], out[2], "xyz"[i], max[i]);
  if (total && (unsigned long long)out[0] * out[1] * out[2] > total)
    return bad(r, "launch metadata: '%s' [%u,%u,%u]: %llu threads, more than a block can have "
                  "(%llu)", key, out[0], out[1], out[2],
               (unsigned long long)out[0] * out[1] * out[2], total);
  return 0;
}

static const char *get_str(reader *r, const cJSON *o, const char *key, bool required) {
  const cJSON *v = field(o, key);
  if (cJSON_IsString(v))
    return ks_arena_strdup(&r->c->arena, v->valuestring);
  if (required)
    bad(r, "launch metadata: '%s' is missing or not a string", key);
  return NULL;
}

/* 0 for null or absent, else the blob id. */
static int get_blob_id(reader *r, const cJSON *o, const char *key, unsigned long long *id) {
  const cJSON *v = field(o, key);
  *id = 0;
  if (!v || cJSON_IsNull(v))
    return 0;
  if (get_u64(r, o, key, id))
    return -1;
  if (!*id)
    return bad(r, "launch metadata: blob id 0 is not an id");
  return 0;
}

static int hex_value(const char *s, unsigned long long size, ks_arena *a,
                     const unsigned char **out) {
  /* Not 2 * size: a size of 2^63 + 2 would wrap to 4 and ask the arena
   * for 2^63 bytes. */
  size_t n = strlen(s);
  if (n % 2 || n / 2 != size)
    return -1;
  unsigned char *v = ks_arena_alloc(a, size ? size : 1);
  for (unsigned long long i = 0; i < size; i++) {
    unsigned hi, lo;
    char pair[3] = {s[2 * i], s[2 * i + 1], 0};
    if (sscanf(pair, "%1x%1x", &hi, &lo) != 2)
      return -1;
    v[i] = (unsigned char)(hi << 4 | lo);
  }
  *out = v;
  return 0;
}

/* Parameter number `position` (from 0) of its launch; `prev` is the one
 * before it, or NULL. Parameters come as cuFuncGetParamInfo lists them:
 * index = position, each at an offset past the end of the one before. */
static int read_param(reader *r, const cJSON *j, size_t position, const ks_capture_param *prev,
                      ks_capture_param *p) {
  unsigned long long index;
  if (get_u64(r, j, "index", &index) || get_u64(r, j, "offset", &p->offset) ||
      get_u64(r, j, "size", &p->size))
    return -1;
  if (index != position)
    return bad(r, "launch metadata: parameter %zu: 'index' is %llu (parameters are listed in "
                  "order, from 0, each once)", position, index);
  p->index = (unsigned)index;
  if (p->offset > UINT64_MAX - p->size)
    return bad(r, "launch metadata: parameter %u: 'offset' %llu plus 'size' %llu overflows",
               p->index, p->offset, p->size);
  if (prev && p->offset < prev->offset + prev->size)
    return bad(r, "launch metadata: parameter %u: 'offset' %llu overlaps parameter %u (bytes "
                  "%llu to %llu)", p->index, p->offset, prev->index, prev->offset,
               prev->offset + prev->size);
  const char *kind = get_str(r, j, "kind", true);
  if (!kind)
    return -1;
  if (!strcmp(kind, "scalar"))
    p->kind = KS_CAPTURE_SCALAR;
  else if (!strcmp(kind, "pointer"))
    p->kind = KS_CAPTURE_POINTER;
  else if (!strcmp(kind, "unknown"))
    p->kind = KS_CAPTURE_UNKNOWN;
  else
    return bad(r, "launch metadata: parameter %u has kind '%s'", p->index, kind);
  const cJSON *v = field(j, "value");
  if (v && (!cJSON_IsString(v) || hex_value(v->valuestring, p->size, &r->c->arena, &p->value)))
    return bad(r, "launch metadata: parameter %u: 'value' is not %llu bytes of hex", p->index,
               p->size);
  if (!v && p->kind != KS_CAPTURE_UNKNOWN)
    return bad(r, "launch metadata: parameter %u has no value", p->index);
  p->not_captured = get_str(r, j, "not_captured", false);
  if (p->kind != KS_CAPTURE_POINTER)
    return 0;
  p->memory = get_str(r, j, "memory", true);
  if (!p->memory || get_u64(r, j, "base", &p->base) ||
      get_u64(r, j, "alloc_size", &p->alloc_size) ||
      get_u64(r, j, "ptr_offset", &p->ptr_offset) || get_blob_id(r, j, "before", &p->before) ||
      get_blob_id(r, j, "after", &p->after))
    return -1;
  if (p->ptr_offset > p->alloc_size)
    return bad(r, "launch metadata: parameter %u: 'ptr_offset' %llu is past the end of its "
                  "allocation (%llu bytes)", p->index, p->ptr_offset, p->alloc_size);
  p->span_lo = 0;
  p->span_hi = p->alloc_size;
  const cJSON *span = field(j, "span");
  if (span) {
    const cJSON *lo = cJSON_GetArrayItem(span, 0), *hi = cJSON_GetArrayItem(span, 1);
    if (!cJSON_IsArray(span) || cJSON_GetArraySize(span) != 2 ||
        !whole_in(lo, 0, 9007199254740992.0) || !whole_in(hi, 0, 9007199254740992.0) ||
        hi->valuedouble <= lo->valuedouble ||
        hi->valuedouble > (double)p->alloc_size ||
        (double)p->ptr_offset < lo->valuedouble || (double)p->ptr_offset > hi->valuedouble)
      return bad(r, "launch metadata: parameter %u: 'span' is not [lo, hi] within its "
                    "allocation around its pointer", p->index);
    p->span_lo = (unsigned long long)lo->valuedouble;
    p->span_hi = (unsigned long long)hi->valuedouble;
  }
  return 0;
}

/* The blob must exist already (blobs precede the launch that names them)
 * and agree with what the launch says of it. */
static int check_blob_ref(reader *r, const cJSON *blobs, unsigned long long id,
                          unsigned long long span) {
  if (!id)
    return 0;
  const ks_capture_blob *b = ks_capture_blob_find(r->c, id);
  if (!b)
    return bad(r, "launch metadata names blob %llu, which no earlier record holds", id);
  if (b->size != span)
    return bad(r, "blob %llu holds %llu bytes, the allocation (or its span) has %llu", id,
               b->size, span);
  const cJSON *e;
  cJSON_ArrayForEach(e, blobs) {
    unsigned long long eid, size, crc;
    if (get_u64(r, e, "id", &eid) || get_u64(r, e, "size", &size) ||
        get_u64(r, e, "crc32", &crc))
      return -1;
    if (eid != id)
      continue;
    if (size != b->size || crc != b->crc32)
      return bad(r, "blob %llu: the launch metadata's size or crc32 differs from the blob's", id);
    return 0;
  }
  return bad(r, "launch metadata: blob %llu is not in its 'blobs' list", id);
}

/* CUDA's launch limits (any device of compute capability 3.0 or later). */
static const unsigned GRID_MAX[3] = {2147483647u, 65535, 65535};
static const unsigned BLOCK_MAX[3] = {1024, 1024, 64};
enum { BLOCK_THREADS_MAX = 1024 };

static int read_launch(reader *r, const char *text, size_t len) {
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return bad(r, "launch metadata is not a JSON object");
  }
  if (end != text + len) { /* one object and nothing else, not even a newline */
    cJSON_Delete(j);
    size_t extra = (size_t)(text + len - end);
    return bad(r, "launch metadata: %zu byte%s after the JSON object", extra,
               extra == 1 ? "" : "s");
  }
  ks_capture_launch *l = ks_array_push(&r->c->arena, &r->c->launches);
  unsigned long long smem = 0;
  const cJSON *dev = field(j, "device"), *params = field(j, "params"), *blobs = field(j, "blobs");
  int rc = -1;
  if (!(l->kernel = get_str(r, j, "kernel", true)) || get_u64(r, j, "launch", &l->launch) ||
      get_dims(r, j, "grid", GRID_MAX, 0, l->grid) ||
      get_dims(r, j, "block", BLOCK_MAX, BLOCK_THREADS_MAX, l->block) ||
      get_u64(r, j, "smem", &smem) || get_u64(r, j, "stream", &l->stream) ||
      get_u64(r, j, "bytes_needed", &l->bytes_needed) || get_u64(r, j, "bytes", &l->bytes))
    goto out;
  if (smem > 0xffffffffULL) {
    bad(r, "launch metadata: 'smem' %llu does not fit 32 bits", smem);
    goto out;
  }
  if (!whole_in(dev, -1, 2147483647.0)) {
    bad(r, "launch metadata: 'device' is missing or not a device number");
    goto out;
  }
  l->device = (int)dev->valuedouble;
  l->smem = (unsigned)smem;
  l->api = get_str(r, j, "api", false);
  l->error = get_str(r, j, "error", false);
  l->over_limit = cJSON_IsTrue(field(j, "over_limit"));
  if (!cJSON_IsArray(params) || !cJSON_IsArray(blobs)) {
    bad(r, "launch metadata: 'params' or 'blobs' is not an array");
    goto out;
  }
  const cJSON *pj;
  cJSON_ArrayForEach(pj, params) {
    ks_capture_param *p = ks_array_push(&r->c->arena, &l->params);
    size_t position = l->params.len - 1;
    if (read_param(r, pj, position, position ? &l->params.items[position - 1] : NULL, p) ||
        check_blob_ref(r, blobs, p->before, p->span_hi - p->span_lo) ||
        check_blob_ref(r, blobs, p->after, p->span_hi - p->span_lo))
      goto out;
  }
  rc = 0;
out:
  cJSON_Delete(j);
  return rc;
}

static int read_records(reader *r, unsigned long long file_size) {
  ks_capture *c = r->c;
  unsigned long long pos = KS_CAPTURE_MAGIC_LEN;
  while (pos < file_size) {
    r->record++;
    r->at = pos;
    if (c->complete)
      return bad(r, "data after the end record");
    unsigned char h[16];
    if (file_size - pos < sizeof h + 4)
      return bad(r, "the file ends inside the record header (%llu bytes left)",
                 file_size - pos);
    if (fread(h, 1, sizeof h, c->file) != sizeof h)
      return bad(r, "cannot read the record header: %s", strerror(errno));
    uint32_t type = get32(h), reserved = get32(h + 4);
    uint64_t len = get64(h + 8);
    if (reserved)
      return bad(r, "the header's reserved field is %" PRIu32 ", not 0", reserved);
    if (len > file_size - pos - sizeof h - 4)
      return bad(r, "length %" PRIu64 " runs past the end of the file (%llu bytes)", len,
                 file_size);
    unsigned crc = 0;
    unsigned char *payload = NULL;
    if (type == KS_CAPTURE_REC_LAUNCH || type == KS_CAPTURE_REC_END) {
      if (len > KS_CAPTURE_MAX_JSON || (type == KS_CAPTURE_REC_END && len != 8))
        return bad(r, "a type %" PRIu32 " record of %" PRIu64 " bytes", type, len);
      payload = ks_xmalloc(len + 1);
      if (read_crc(r, payload, len, &crc)) {
        free(payload);
        return -1;
      }
    } else if (type == KS_CAPTURE_REC_BLOB) {
      if (len < 8)
        return bad(r, "a blob record of %" PRIu64 " bytes has no id", len);
      unsigned char id[8];
      if (read_crc(r, id, 8, &crc))
        return -1;
      unsigned blob_crc = 0;
      long here = ftell(c->file);
      if (here < 0 || read_crc2(r, NULL, len - 8, &crc, &blob_crc))
        return -1;
      if (ks_capture_blob_find(c, get64(id)))
        return bad(r, "blob %" PRIu64 " appears twice", get64(id));
      ks_capture_blob *b = ks_array_push(&c->arena, &c->blobs);
      *b = (ks_capture_blob){get64(id), len - 8, blob_crc, (unsigned long long)here};
    } else {
      if (read_crc(r, NULL, len, &crc))
        return -1; /* a later version's record: checked, skipped */
    }
    unsigned char tail[4];
    if (fread(tail, 1, 4, c->file) != 4) {
      free(payload);
      return bad(r, "the file ends before the record's CRC");
    }
    if (get32(tail) != crc) {
      free(payload);
      return bad(r, "CRC mismatch (stored %08" PRIx32 ", computed %08x): the record is corrupt",
                 get32(tail), crc);
    }
    int rc = 0;
    if (type == KS_CAPTURE_REC_LAUNCH)
      rc = read_launch(r, (const char *)payload, len);
    else if (type == KS_CAPTURE_REC_END) {
      c->complete = true;
      c->end_launches = get64(payload);
      if (c->end_launches != c->launches.len)
        rc = bad(r, "the end record counts %llu launches, the file holds %zu", c->end_launches,
                 c->launches.len);
    }
    free(payload);
    if (rc)
      return -1;
    pos += sizeof h + len + 4;
  }
  return 0;
}

int ks_capture_open(ks_ctx *ctx, const char *path, ks_capture *out) {
  memset(out, 0, sizeof *out);
  out->path = ks_arena_strdup(&out->arena, path);
  out->file = fopen(path, "rb");
  if (!out->file) {
    ks_fail(ctx, "cannot open %s: %s", path, strerror(errno));
    ks_capture_close(out);
    return -1;
  }
  struct stat st;
  unsigned char magic[KS_CAPTURE_MAGIC_LEN];
  int rc = -1;
  if (fstat(fileno(out->file), &st)) {
    ks_fail(ctx, "%s: %s", path, strerror(errno));
  } else if (st.st_size < KS_CAPTURE_MAGIC_LEN ||
             fread(magic, 1, sizeof magic, out->file) != sizeof magic ||
             memcmp(magic, KS_CAPTURE_MAGIC, 6)) {
    ks_fail(ctx, "%s: not a capture file (no KSCAP magic at byte 0)", path);
  } else if (memcmp(magic, KS_CAPTURE_MAGIC, sizeof magic)) {
    ks_fail(ctx, "%s: capture format version %u, this kernelsmith-cc reads version 1", path,
            magic[6] | magic[7] << 8);
  } else {
    reader r = {ctx, out, 0, 0};
    rc = read_records(&r, (unsigned long long)st.st_size);
  }
  if (rc)
    ks_capture_close(out);
  return rc;
}

const ks_capture_blob *ks_capture_blob_find(const ks_capture *c, unsigned long long id) {
  for (size_t i = 0; i < c->blobs.len; i++)
    if (c->blobs.items[i].id == id)
      return &c->blobs.items[i];
  return NULL;
}

int ks_capture_read_blob(ks_ctx *ctx, ks_capture *c, unsigned long long id, unsigned char **out,
                         size_t *len) {
  *out = NULL;
  *len = 0;
  const ks_capture_blob *b = ks_capture_blob_find(c, id);
  if (!b)
    return ks_fail(ctx, "%s: no blob %llu", c->path, id);
  if (b->size > SIZE_MAX - 1)
    return ks_fail(ctx, "%s: blob %llu is too large for this machine", c->path, id);
  unsigned char *bytes = malloc(b->size ? b->size : 1);
  if (!bytes)
    return ks_fail(ctx, "%s: no memory for blob %llu (%llu bytes)", c->path, id, b->size);
  if (fseek(c->file, (long)b->offset, SEEK_SET) ||
      fread(bytes, 1, b->size, c->file) != b->size) {
    free(bytes);
    return ks_fail(ctx, "%s: cannot read blob %llu at byte %llu", c->path, id, b->offset);
  }
  if (ks_capture_crc32(0, bytes, b->size) != b->crc32) {
    free(bytes);
    return ks_fail(ctx, "%s: blob %llu at byte %llu changed since the file was opened (CRC)",
                   c->path, id, b->offset);
  }
  *out = bytes;
  *len = b->size;
  return 0;
}

void ks_capture_close(ks_capture *c) {
  if (c->file)
    fclose(c->file);
  ks_arena_release(&c->arena);
  memset(c, 0, sizeof *c);
}
