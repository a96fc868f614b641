/* fuzz_capture: the capture reader (backend/capture.c, ks_capture_open and
 * ks_capture_read_blob) on any file (docs/capture-format.md). The reader
 * takes a path, so the input is written to a file in a private temporary
 * directory first.
 *
 * Input: one flags byte, then the file's bytes. Flag 1: before writing,
 * each record's CRC-32 is recomputed over its payload (where the record's
 * header and length fit), so that mutations reach the metadata checks
 * behind the CRC instead of stopping at it; without it the CRC checks
 * themselves are fuzzed.
 *
 * Invariants: every failure leaves a message; an accepted file's
 * parameters lie inside their allocations (span within the allocation,
 * the pointer within the span), each snapshot a parameter names exists
 * and holds the span's bytes, and every blob reads back with its CRC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ks_capture.h"

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void put32(unsigned char *p, unsigned v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* Recomputes each record's CRC in place, as far as the records parse. */
static void fix_crcs(unsigned char *f, size_t n) {
  size_t pos = KS_CAPTURE_MAGIC_LEN;
  while (pos + 20 <= n) {
    uint64_t len = get64(f + pos + 8);
    if (len > n - pos - 20)
      return;
    put32(f + pos + 16 + len, ks_capture_crc32(0, f + pos + 16, (size_t)len));
    pos += 20 + (size_t)len;
  }
}

static void check_capture(ks_ctx *ctx, ks_capture *c) {
  for (size_t i = 0; i < c->launches.len; i++) {
    const ks_capture_launch *l = &c->launches.items[i];
    fuzz_check(l->kernel);
    for (size_t k = 0; k < l->params.len; k++) {
      const ks_capture_param *p = &l->params.items[k];
      fuzz_check(p->value || p->kind == KS_CAPTURE_UNKNOWN);
      if (p->kind != KS_CAPTURE_POINTER)
        continue;
      fuzz_check(p->memory);
      fuzz_check(p->span_lo <= p->ptr_offset && p->ptr_offset <= p->span_hi);
      fuzz_check(p->span_hi <= p->alloc_size);
      fuzz_check(ks_capture_reach(p) <= p->alloc_size);
      const unsigned long long ids[2] = {p->before, p->after};
      for (int b = 0; b < 2; b++) {
        if (!ids[b])
          continue;
        const ks_capture_blob *blob = ks_capture_blob_find(c, ids[b]);
        fuzz_check(blob && blob->size == p->span_hi - p->span_lo);
      }
    }
  }
  for (size_t i = 0; i < c->blobs.len; i++) {
    unsigned char *bytes;
    size_t len;
    int rc = ks_capture_read_blob(ctx, c, c->blobs.items[i].id, &bytes, &len);
    fuzz_check(!rc && len == c->blobs.items[i].size);
    free(bytes);
  }
  static FILE *null;
  if (!null && !(null = fopen("/dev/null", "w")))
    abort();
  ks_capture_print(null, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[4200];
  if (!path[0])
    snprintf(path, sizeof path, "%s/input.kscap", fuzz_tmpdir());
  if (!size)
    return 0;
  size_t n = size - 1;
  unsigned char *file = malloc(n ? n : 1);
  if (n)
    memcpy(file, data + 1, n);
  if (data[0] & 1)
    fix_crcs(file, n);
  fuzz_write_file(path, file, n);
  free(file);

  ks_ctx ctx;
  fuzz_ctx(&ctx);
  ks_capture c;
  if (ks_capture_open(&ctx, path, &c)) {
    fuzz_check_error(&ctx);
  } else {
    check_capture(&ctx, &c);
    ks_capture_close(&c);
  }
  ks_ctx_release(&ctx);
  return 0;
}
