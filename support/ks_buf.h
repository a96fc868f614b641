/* ks_buf: the one growable string type of the project.
 *
 * Invariants: `data` is never NULL and always NUL-terminated, also when empty
 * (it then points at a shared static empty string). `len` excludes the NUL.
 * A buffer with a non-zero `limit` never grows past `limit` bytes: appends are
 * cut there and `truncated` is set, so network replies and compiler logs
 * cannot exhaust memory.
 *
 * Ownership: the buffer owns `data`; ks_buf_release frees it and resets the
 * buffer; ks_buf_detach hands `data` to the caller (free() it) and resets. */
#ifndef KS_BUF_H
#define KS_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

extern char ks_buf_empty[];

typedef struct ks_buf {
  char *data;     /* contents, NUL-terminated */
  size_t len;     /* bytes used, excluding the NUL */
  size_t cap;     /* bytes allocated; 0 while data is ks_buf_empty */
  size_t limit;   /* most bytes the buffer may hold; 0 for no limit */
  bool truncated; /* an append was cut at `limit` */
} ks_buf;

#define KS_BUF_INIT {ks_buf_empty, 0, 0, 0, false}

void ks_buf_init(ks_buf *buf, size_t limit);
void ks_buf_release(ks_buf *buf);
char *ks_buf_detach(ks_buf *buf);
void ks_buf_reset(ks_buf *buf); /* len = 0, keeps the allocation */

/* Appends; return 0, or -1 when the append was cut at `limit`. */
int ks_buf_add(ks_buf *buf, const void *bytes, size_t n);
int ks_buf_adds(ks_buf *buf, const char *s);
int ks_buf_addc(ks_buf *buf, char c);
int ks_buf_addf(ks_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ks_buf_vaddf(ks_buf *buf, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Makes room for `extra` more bytes (plus the NUL) without changing len. */
void ks_buf_grow(ks_buf *buf, size_t extra);
/* Removes trailing whitespace. */
void ks_buf_rtrim(ks_buf *buf);

#endif
