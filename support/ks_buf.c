/* Growable strings; see ks_buf.h for the invariants. */
#include "ks_buf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ks_alloc.h"

char ks_buf_empty[1];

void ks_buf_init(ks_buf *buf, size_t limit) {
  *buf = (ks_buf)KS_BUF_INIT;
  buf->limit = limit;
}

void ks_buf_release(ks_buf *buf) {
  size_t limit = buf->limit;
  if (buf->cap)
    free(buf->data);
  ks_buf_init(buf, limit);
}

char *ks_buf_detach(ks_buf *buf) {
  char *out = buf->cap ? buf->data : ks_xstrdup("");
  size_t limit = buf->limit;
  ks_buf_init(buf, limit);
  return out;
}

void ks_buf_reset(ks_buf *buf) {
  buf->len = 0;
  buf->truncated = false;
  buf->data[0] = '\0';
}

void ks_buf_grow(ks_buf *buf, size_t extra) {
  size_t need = buf->len + extra + 1;
  if (need <= buf->cap)
    return;
  size_t cap = buf->cap ? buf->cap : 64;
  while (cap < need)
    cap *= 2;
  if (buf->cap) {
    buf->data = ks_xrealloc(buf->data, cap);
  } else {
    buf->data = ks_xmalloc(cap);
    buf->data[0] = '\0';
  }
  buf->cap = cap;
}

int ks_buf_add(ks_buf *buf, const void *bytes, size_t n) {
  int rc = 0;
  if (buf->limit && buf->len + n > buf->limit) {
    n = buf->limit > buf->len ? buf->limit - buf->len : 0;
    buf->truncated = true;
    rc = -1;
  }
  ks_buf_grow(buf, n);
  if (n)
    memcpy(buf->data + buf->len, bytes, n);
  buf->len += n;
  if (buf->cap)
    buf->data[buf->len] = '\0';
  return rc;
}

int ks_buf_adds(ks_buf *buf, const char *s) { return ks_buf_add(buf, s, strlen(s)); }

int ks_buf_addc(ks_buf *buf, char c) { return ks_buf_add(buf, &c, 1); }

int ks_buf_vaddf(ks_buf *buf, const char *fmt, va_list ap) {
  char small[256];
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0)
    return -1;
  if ((size_t)n < sizeof small)
    return ks_buf_add(buf, small, (size_t)n);
  char *big = ks_xmalloc((size_t)n + 1);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  int rc = ks_buf_add(buf, big, (size_t)n);
  free(big);
  return rc;
}

int ks_buf_addf(ks_buf *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = ks_buf_vaddf(buf, fmt, ap);
  va_end(ap);
  return rc;
}

void ks_buf_rtrim(ks_buf *buf) {
  while (buf->len && isspace((unsigned char)buf->data[buf->len - 1]))
    buf->len--;
  if (buf->cap)
    buf->data[buf->len] = '\0';
}
