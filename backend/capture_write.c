/* capture_write: a capture file written from ks_capture_launch structs (for
 * tests, and for tools that make captures), and the one-line-per-launch
 * summary `profile --capture` prints. The injection library has its own
 * writer (runtime/inject/capture_file.c) of the same format; the tests read
 * both back with ks_capture_open. See ks_capture.h. */
#include "ks_capture.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static int write_bytes(ks_ctx *ctx, ks_capture_writer *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->file) != n)
    return ks_fail(ctx, "%s: write: %s", w->path, strerror(errno));
  return 0;
}

/* A record whose payload is `head` then `data`. */
static int write_record(ks_ctx *ctx, ks_capture_writer *w, uint32_t type, const void *head,
                        size_t head_len, const void *data, size_t len) {
  unsigned char h[16], tail[4];
  put32(h, type);
  put32(h + 4, 0);
  put64(h + 8, (uint64_t)head_len + len);
  put32(tail, ks_capture_crc32(ks_capture_crc32(0, head, head_len), data, len));
  if (write_bytes(ctx, w, h, sizeof h) || write_bytes(ctx, w, head, head_len) ||
      write_bytes(ctx, w, data, len) || write_bytes(ctx, w, tail, sizeof tail))
    return -1;
  return 0;
}

int ks_capture_writer_open(ks_ctx *ctx, const char *path, ks_capture_writer *w) {
  memset(w, 0, sizeof *w);
  w->path = path;
  w->next_id = 1;
  w->file = fopen(path, "wb");
  if (!w->file)
    return ks_fail(ctx, "cannot create %s: %s", path, strerror(errno));
  if (write_bytes(ctx, w, KS_CAPTURE_MAGIC, KS_CAPTURE_MAGIC_LEN)) {
    fclose(w->file);
    w->file = NULL;
    return -1;
  }
  return 0;
}

int ks_capture_write_blob(ks_ctx *ctx, ks_capture_writer *w, const void *bytes, size_t len,
                          unsigned long long *id) {
  unsigned char head[8];
  put64(head, w->next_id);
  if (write_record(ctx, w, KS_CAPTURE_REC_BLOB, head, sizeof head, bytes, len))
    return -1;
  ks_capture_blob *b = ks_array_push(&w->arena, &w->blobs);
  *b = (ks_capture_blob){.id = w->next_id, .size = len, .crc32 = ks_capture_crc32(0, bytes, len)};
  *id = w->next_id++;
  return 0;
}

/* Numbers JSON's doubles cannot hold exactly go as "0x..." strings, which
 * the reader accepts wherever it takes an integer. */
static void add_u64(cJSON *o, const char *key, unsigned long long v, bool hex) {
  if (hex || v > 9007199254740992ull) {
    char s[24];
    snprintf(s, sizeof s, "0x%llx", v);
    cJSON_AddStringToObject(o, key, s);
  } else {
    cJSON_AddNumberToObject(o, key, (double)v);
  }
}

static void add_dims(cJSON *o, const char *key, const unsigned d[3]) {
  cJSON *a = cJSON_AddArrayToObject(o, key);
  for (int i = 0; i < 3; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(d[i]));
}

static void add_blob_id(cJSON *o, const char *key, unsigned long long id) {
  if (id)
    add_u64(o, key, id, false);
  else
    cJSON_AddNullToObject(o, key);
}

static const char *const kinds[] = {"scalar", "pointer", "unknown"};

static cJSON *param_json(const ks_capture_param *p) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "index", p->index);
  add_u64(o, "offset", p->offset, false);
  add_u64(o, "size", p->size, false);
  cJSON_AddStringToObject(o, "kind", kinds[p->kind]);
  if (p->value) {
    char *hex = ks_xmalloc(2 * p->size + 1);
    for (unsigned long long i = 0; i < p->size; i++)
      snprintf(hex + 2 * i, 3, "%02x", p->value[i]);
    hex[2 * p->size] = 0;
    cJSON_AddStringToObject(o, "value", hex);
    free(hex);
  }
  if (p->kind == KS_CAPTURE_POINTER) {
    cJSON_AddStringToObject(o, "memory", p->memory ? p->memory : "device");
    add_u64(o, "base", p->base, true);
    add_u64(o, "alloc_size", p->alloc_size, false);
    add_u64(o, "ptr_offset", p->ptr_offset, false);
    if (p->span_hi && (p->span_lo || p->span_hi != p->alloc_size)) {
      cJSON *span = cJSON_AddArrayToObject(o, "span");
      cJSON_AddItemToArray(span, cJSON_CreateNumber((double)p->span_lo));
      cJSON_AddItemToArray(span, cJSON_CreateNumber((double)p->span_hi));
    }
    add_blob_id(o, "before", p->before);
    add_blob_id(o, "after", p->after);
  }
  if (p->not_captured)
    cJSON_AddStringToObject(o, "not_captured", p->not_captured);
  return o;
}

static const ks_capture_blob *written(const ks_capture_writer *w, unsigned long long id) {
  for (size_t i = 0; i < w->blobs.len; i++)
    if (w->blobs.items[i].id == id)
      return &w->blobs.items[i];
  return NULL;
}

/* Each blob the launch names, once. */
static int add_blobs(ks_ctx *ctx, const ks_capture_writer *w, const ks_capture_launch *l,
                     cJSON *blobs) {
  for (size_t i = 0; i < l->params.len; i++) {
    const unsigned long long ids[2] = {l->params.items[i].before, l->params.items[i].after};
    for (int k = 0; k < 2; k++) {
      if (!ids[k])
        continue;
      const ks_capture_blob *b = written(w, ids[k]);
      if (!b)
        return ks_fail(ctx, "%s: the launch of %s names blob %llu, not written yet", w->path,
                       l->kernel, ids[k]);
      bool seen = false;
      const cJSON *e;
      cJSON_ArrayForEach(e, blobs) seen |= cJSON_GetObjectItem(e, "id")->valuedouble == (double)b->id;
      if (seen)
        continue;
      cJSON *o = cJSON_CreateObject();
      add_u64(o, "id", b->id, false);
      add_u64(o, "size", b->size, false);
      cJSON_AddNumberToObject(o, "crc32", b->crc32);
      cJSON_AddItemToArray(blobs, o);
    }
  }
  return 0;
}

int ks_capture_write_launch(ks_ctx *ctx, ks_capture_writer *w, const ks_capture_launch *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kernel", l->kernel);
  add_u64(o, "launch", l->launch, false);
  add_dims(o, "grid", l->grid);
  add_dims(o, "block", l->block);
  cJSON_AddNumberToObject(o, "smem", l->smem);
  add_u64(o, "stream", l->stream, true);
  cJSON_AddNumberToObject(o, "device", l->device);
  cJSON_AddStringToObject(o, "api", l->api ? l->api : "unknown");
  cJSON_AddBoolToObject(o, "over_limit", l->over_limit);
  add_u64(o, "bytes_needed", l->bytes_needed, false);
  add_u64(o, "bytes", l->bytes, false);
  if (l->error)
    cJSON_AddStringToObject(o, "error", l->error);
  cJSON *params = cJSON_AddArrayToObject(o, "params");
  for (size_t i = 0; i < l->params.len; i++)
    cJSON_AddItemToArray(params, param_json(&l->params.items[i]));
  int rc = add_blobs(ctx, w, l, cJSON_AddArrayToObject(o, "blobs"));
  char *text = rc ? NULL : cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (rc)
    return -1;
  if (!text)
    return ks_fail(ctx, "%s: out of memory", w->path);
  rc = write_record(ctx, w, KS_CAPTURE_REC_LAUNCH, NULL, 0, text, strlen(text));
  free(text);
  if (!rc)
    w->launches++;
  return rc;
}

int ks_capture_writer_close(ks_ctx *ctx, ks_capture_writer *w, bool end) {
  int rc = 0;
  if (w->file) {
    unsigned char n[8];
    put64(n, w->launches);
    if (end)
      rc = write_record(ctx, w, KS_CAPTURE_REC_END, n, sizeof n, NULL, 0);
    if (fclose(w->file) && !rc)
      rc = ks_fail(ctx, "%s: %s", w->path, strerror(errno));
  }
  ks_arena_release(&w->arena);
  memset(w, 0, sizeof *w);
  return rc;
}

/* ---- the summary --------------------------------------------------------- */

static void print_bytes(FILE *out, unsigned long long n) {
  if (n < 1024)
    fprintf(out, "%llu B", n);
  else if (n < 1024ull * 1024)
    fprintf(out, "%.1f KiB", n / 1024.0);
  else if (n < 1024ull * 1024 * 1024)
    fprintf(out, "%.1f MiB", n / (1024.0 * 1024));
  else
    fprintf(out, "%.2f GiB", n / (1024.0 * 1024 * 1024));
}

void ks_capture_print(FILE *out, const ks_capture *c) {
  for (size_t i = 0; i < c->launches.len; i++) {
    const ks_capture_launch *l = &c->launches.items[i];
    size_t pointers = 0, missing = 0;
    for (size_t k = 0; k < l->params.len; k++) {
      const ks_capture_param *p = &l->params.items[k];
      pointers += p->kind == KS_CAPTURE_POINTER;
      missing += p->kind == KS_CAPTURE_UNKNOWN || (p->kind == KS_CAPTURE_POINTER && !p->after);
    }
    fprintf(out, "  %s launch %llu: %zu parameters, %zu pointers, ", l->kernel, l->launch,
            l->params.len, pointers);
    print_bytes(out, l->bytes);
    fprintf(out, " captured");
    if (l->over_limit) {
      fprintf(out, " (over the limit: ");
      print_bytes(out, l->bytes_needed);
      fprintf(out, " needed)");
    } else if (l->error) {
      fprintf(out, " (the launch failed: %s)", l->error);
    } else if (missing) {
      fprintf(out, " (%zu parameters not captured)", missing);
    }
    fputc('\n', out);
  }
  if (!c->complete)
    fprintf(out, "  (the program did not exit normally: the capture may lack launches)\n");
}
