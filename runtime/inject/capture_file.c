/* The capture file's records (docs/capture-format.md), written by the
 * injection library. The CRC is our own: the library may not link zlib
 * (it links nothing but CUPTI and libc), and this one gives the same values.
 * See capture.h. */
#include "capture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint32_t ksrt_crc32(uint32_t crc, const void *p, size_t n) {
  static uint32_t table[256];
  static int ready; /* a race only computes the same table twice */
  if (!ready) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
  }
  const unsigned char *s = p;
  crc = ~crc;
  while (n--)
    crc = table[(crc ^ *s++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static void le32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

int ksrt_cap_write_magic(int fd) { return write_all(fd, KSRT_CAP_MAGIC, KSRT_CAP_MAGIC_LEN); }

int ksrt_cap_write_record(int fd, uint32_t type, const void *head, size_t head_len,
                          const void *data, size_t len) {
  unsigned char h[16], tail[4];
  le32(h, type);
  le32(h + 4, 0);
  le64(h + 8, (uint64_t)head_len + len);
  uint32_t crc = ksrt_crc32(ksrt_crc32(0, head, head_len), data, len);
  le32(tail, crc);
  if (write_all(fd, h, sizeof h) || write_all(fd, head, head_len) || write_all(fd, data, len) ||
      write_all(fd, tail, sizeof tail))
    return -1;
  return 0;
}

int ksrt_cap_write_blob(int fd, uint64_t id, const void *data, size_t len, uint32_t *crc) {
  unsigned char head[8];
  le64(head, id);
  *crc = ksrt_crc32(0, data, len);
  return ksrt_cap_write_record(fd, KSRT_CAP_BLOB, head, sizeof head, data, len);
}

int ksrt_cap_write_end(int fd, uint64_t launches) {
  unsigned char p[8];
  le64(p, launches);
  return ksrt_cap_write_record(fd, KSRT_CAP_END, p, sizeof p, NULL, 0);
}

/* --- the launch as JSON --- */

/* Appends with a sticky failure, like inject_json.c's lines. */
typedef struct out {
  ksrt_jbuf *b;
  int failed;
} out;

static void put(out *o, const char *s, size_t n) {
  ksrt_jbuf *b = o->b;
  if (o->failed)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + n)
      cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) {
      o->failed = 1;
      return;
    }
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static void putf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out *o, const char *fmt, ...) {
  char tmp[160];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp)
    o->failed = 1;
  else
    put(o, tmp, (size_t)n);
}

static void put_string(out *o, const char *s) {
  if (!o->failed && ksrt_json_string(o->b, s) != 0)
    o->failed = 1;
}

static void put_hex(out *o, const unsigned char *p, uint64_t n) {
  static const char digits[] = "0123456789abcdef";
  put(o, "\"", 1);
  for (uint64_t i = 0; i < n && !o->failed; i++) {
    char pair[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
    put(o, pair, 2);
  }
  put(o, "\"", 1);
}

static void put_blob_id(out *o, const char *key, uint64_t id) {
  if (id)
    putf(o, ",\"%s\":%" PRIu64, key, id);
  else
    putf(o, ",\"%s\":null", key);
}

static void put_param(out *o, const ksrt_cap_param *p) {
  putf(o, "{\"index\":%" PRIu32 ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"kind\":",
       p->index, p->offset, p->size);
  put_string(o, p->kind);
  if (p->value) {
    put(o, ",\"value\":", 9);
    put_hex(o, p->value, p->size);
  }
  if (!strcmp(p->kind, "pointer")) {
    put(o, ",\"memory\":", 10);
    put_string(o, p->memory ? p->memory : "unknown");
    putf(o, ",\"base\":\"0x%" PRIx64 "\",\"alloc_size\":%" PRIu64 ",\"ptr_offset\":%" PRIu64,
         p->base, p->alloc_size, p->ptr_offset);
    if (p->span_hi)
      putf(o, ",\"span\":[%" PRIu64 ",%" PRIu64 "]", p->span_lo, p->span_hi);
    put_blob_id(o, "before", p->before);
    put_blob_id(o, "after", p->after);
  }
  if (p->not_captured) {
    put(o, ",\"not_captured\":", 16);
    put_string(o, p->not_captured);
  }
  put(o, "}", 1);
}

int ksrt_cap_launch_json(ksrt_jbuf *b, const ksrt_cap_launch *l) {
  out o = {b, 0};
  size_t mark = b->len;
  put(&o, "{\"kernel\":", 10);
  put_string(&o, l->kernel);
  putf(&o, ",\"launch\":%" PRIu64 ",\"grid\":[%" PRIu32 ",%" PRIu32 ",%" PRIu32 "]", l->launch,
       l->grid[0], l->grid[1], l->grid[2]);
  putf(&o, ",\"block\":[%" PRIu32 ",%" PRIu32 ",%" PRIu32 "],\"smem\":%" PRIu32, l->block[0],
       l->block[1], l->block[2], l->smem);
  putf(&o, ",\"stream\":\"0x%" PRIx64 "\",\"device\":%" PRId32 ",\"api\":", l->stream, l->device);
  put_string(&o, l->api ? l->api : "unknown");
  putf(&o, ",\"over_limit\":%s,\"bytes_needed\":%" PRIu64 ",\"bytes\":%" PRIu64,
       l->over_limit ? "true" : "false", l->bytes_needed, l->bytes);
  if (l->error) {
    put(&o, ",\"error\":", 9);
    put_string(&o, l->error);
  }
  put(&o, ",\"params\":[", 11);
  for (size_t i = 0; i < l->nparams; i++) {
    if (i)
      put(&o, ",", 1);
    put_param(&o, &l->params[i]);
  }
  put(&o, "],\"blobs\":[", 11);
  for (size_t i = 0; i < l->nblobs; i++)
    putf(&o, "%s{\"id\":%" PRIu64 ",\"size\":%" PRIu64 ",\"crc32\":%" PRIu32 "}", i ? "," : "",
         l->blobs[i].id, l->blobs[i].size, l->blobs[i].crc32);
  put(&o, "]}", 2);
  if (o.failed) {
    b->len = mark;
    return -1;
  }
  return 0;
}

/* --- which kernels --- */

/* [s, e) with the spaces dropped equals [t, t_end)'s, so that "k<float,4>"
 * matches the demangler's "k<float, 4>". */
static int same_text(const char *s, const char *e, const char *t, const char *t_end) {
  for (;;) {
    while (s < e && *s == ' ')
      s++;
    while (t < t_end && *t == ' ')
      t++;
    if (s == e || t == t_end)
      return s == e && t == t_end;
    if (*s++ != *t++)
      return 0;
  }
}

/* The demangled name reduced to the qualified name: "void ns::k<int>(int*)"
 * gives [b, e) = "ns::k<int>". */
static void base_name(const char *d, const char **b, const char **e) {
  const char *end = d + strlen(d);
  if (end > d && end[-1] == ')') {
    int depth = 0;
    for (const char *p = end - 1; p >= d; p--) {
      depth += *p == ')';
      depth -= *p == '(';
      if (!depth) {
        end = p;
        break;
      }
    }
  }
  const char *start = d;
  int depth = 0;
  for (const char *p = d; p < end; p++) {
    depth += *p == '<' || *p == '(';
    depth -= *p == '>' || *p == ')';
    if (!depth && *p == ' ')
      start = p + 1; /* after the return type of a template */
  }
  *b = start;
  *e = end;
}

static int entry_matches(const char *s, const char *e, const char *mangled, const char *demangled) {
  if (same_text(s, e, mangled, mangled + strlen(mangled)))
    return 1;
  if (!demangled)
    return 0;
  const char *b, *end;
  base_name(demangled, &b, &end);
  if (same_text(s, e, b, end))
    return 1;
  if (end > b && end[-1] == '>') {
    int depth = 0;
    for (const char *p = end - 1; p > b; p--) {
      depth += *p == '>';
      depth -= *p == '<';
      if (!depth)
        return same_text(s, e, b, p);
    }
  }
  return 0;
}

int ksrt_cap_name_matches(const char *wanted, const char *mangled, const char *demangled) {
  if (!wanted || !mangled)
    return 0;
  const char *s = wanted;
  int depth = 0;
  for (const char *p = wanted;; p++) {
    if (*p == '<' || *p == '(')
      depth++;
    else if ((*p == '>' || *p == ')') && depth)
      depth--;
    if (*p == '\0' || (*p == ',' && !depth)) {
      const char *e = p;
      while (s < e && *s == ' ')
        s++;
      if (s < e && entry_matches(s, e, mangled, demangled))
        return 1;
      if (!*p)
        return 0;
      s = p + 1;
    }
  }
}
