/* The JSON lines of the profile file: a tiny writer with its own escaping,
 * because the injection library may not bring cJSON (or anything else of
 * ours) into the user's process. A line is built with a sticky error so
 * that a failed allocation anywhere rolls the whole line back. */
#include "inject_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ksrt_jbuf_release(ksrt_jbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* A line being appended: where it began, and whether anything failed. */
typedef struct line {
  ksrt_jbuf *b;
  size_t mark;
  int failed;
} line;

static line line_begin(ksrt_jbuf *b) {
  line l = {b, b->len, 0};
  return l;
}

static void put(line *l, const char *s, size_t n) {
  ksrt_jbuf *b = l->b;
  if (l->failed)
    return;
  if (n > SIZE_MAX / 2 - b->len) {
    l->failed = 1;
    return;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) {
      l->failed = 1;
      return;
    }
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static void puts_(line *l, const char *s) { put(l, s, strlen(s)); }

static void put_u64(line *l, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
  put(l, tmp, (size_t)n);
}

static void put_i64(line *l, int64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
  put(l, tmp, (size_t)n);
}

static int line_end(line *l) {
  put(l, "\n", 1);
  if (l->failed) {
    l->b->len = l->mark;
    return -1;
  }
  return 0;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0 if there is none. */
static size_t utf8_len(const unsigned char *p) {
  unsigned char c = p[0];
  unsigned char lo = 0x80, hi = 0xBF;
  size_t n;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (p[1] < lo || p[1] > hi)
    return 0;
  /* A NUL ends the string, and it fails this test before we read past it. */
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

static void put_string(line *l, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  put(l, "\"", 1);
  while (*p) {
    const unsigned char *run = p;
    size_t n;
    /* Copy the longest stretch that needs no escaping in one go. */
    while (*p >= 0x20 && *p != '"' && *p != '\\' && (n = utf8_len(p)) != 0)
      p += n;
    put(l, (const char *)run, (size_t)(p - run));
    if (!*p)
      break;
    char esc[8];
    switch (*p) {
    case '"': puts_(l, "\\\""); break;
    case '\\': puts_(l, "\\\\"); break;
    case '\b': puts_(l, "\\b"); break;
    case '\f': puts_(l, "\\f"); break;
    case '\n': puts_(l, "\\n"); break;
    case '\r': puts_(l, "\\r"); break;
    case '\t': puts_(l, "\\t"); break;
    default:
      if (*p < 0x20) {
        snprintf(esc, sizeof esc, "\\u%04x", *p);
        puts_(l, esc);
      } else {
        puts_(l, "\\ufffd"); /* a byte that starts no valid sequence */
      }
    }
    p++;
  }
  put(l, "\"", 1);
}

int ksrt_json_string(ksrt_jbuf *b, const char *s) {
  line l = line_begin(b);
  put_string(&l, s);
  if (l.failed) {
    b->len = l.mark;
    return -1;
  }
  return 0;
}

static void put_dim3(line *l, const int32_t v[3]) {
  put(l, "[", 1);
  for (int i = 0; i < 3; i++) {
    if (i)
      put(l, ",", 1);
    put_i64(l, v[i]);
  }
  put(l, "]", 1);
}

int ksrt_json_start(ksrt_jbuf *b, long pid, uint32_t cupti_version, uint64_t time_ns) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"start\",\"version\":");
  put_u64(&l, KSRT_PROFILE_VERSION);
  puts_(&l, ",\"pid\":");
  put_i64(&l, pid);
  puts_(&l, ",\"cupti_version\":");
  put_u64(&l, cupti_version);
  puts_(&l, ",\"time_ns\":");
  put_u64(&l, time_ns);
  puts_(&l, "}");
  return line_end(&l);
}

int ksrt_json_kernel(ksrt_jbuf *b, const ksrt_kernel_line *k) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"kernel\",\"name\":");
  put_string(&l, k->name);
  puts_(&l, ",\"grid\":");
  put_dim3(&l, k->grid);
  puts_(&l, ",\"block\":");
  put_dim3(&l, k->block);
  puts_(&l, ",\"smem_static\":");
  put_i64(&l, k->smem_static);
  puts_(&l, ",\"smem_dynamic\":");
  put_i64(&l, k->smem_dynamic);
  puts_(&l, ",\"stream\":");
  put_u64(&l, k->stream);
  puts_(&l, ",\"device\":");
  put_u64(&l, k->device);
  puts_(&l, ",\"context\":");
  put_u64(&l, k->context);
  puts_(&l, ",\"correlation\":");
  put_u64(&l, k->correlation);
  puts_(&l, ",\"start_ns\":");
  put_u64(&l, k->start_ns);
  puts_(&l, ",\"end_ns\":");
  put_u64(&l, k->end_ns);
  puts_(&l, ",\"api\":");
  put_string(&l, k->api ? k->api : "unknown");
  puts_(&l, "}");
  return line_end(&l);
}

int ksrt_json_dropped(ksrt_jbuf *b, uint64_t records) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"dropped\",\"records\":");
  put_u64(&l, records);
  puts_(&l, "}");
  return line_end(&l);
}

int ksrt_json_sample(ksrt_jbuf *b, unsigned percent, unsigned period_ms, unsigned after_ms) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"sample\",\"percent\":");
  put_u64(&l, percent);
  puts_(&l, ",\"period_ms\":");
  put_u64(&l, period_ms);
  puts_(&l, ",\"after_ms\":");
  put_u64(&l, after_ms);
  puts_(&l, "}");
  return line_end(&l);
}

int ksrt_json_count(ksrt_jbuf *b, long pid, const char *name, uint64_t launches) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"count\",\"pid\":");
  put_i64(&l, pid);
  puts_(&l, ",\"name\":");
  put_string(&l, name);
  puts_(&l, ",\"launches\":");
  put_u64(&l, launches);
  puts_(&l, "}");
  return line_end(&l);
}

int ksrt_json_end(ksrt_jbuf *b, uint64_t kernels, uint64_t time_ns) {
  line l = line_begin(b);
  puts_(&l, "{\"type\":\"end\",\"kernels\":");
  put_u64(&l, kernels);
  puts_(&l, ",\"time_ns\":");
  put_u64(&l, time_ns);
  puts_(&l, "}");
  return line_end(&l);
}
