/* ks_capture: the capture file of `kernelsmith-cc profile --capture`
 * (docs/capture-format.md): the arguments of chosen kernel launches, with
 * the allocations their pointers point into copied before and after each
 * launch.
 *
 * The injection library writes the file (runtime/inject/capture_file.c, its
 * own writer: it links nothing of ours); this module reads it, checking the
 * magic, every record's length against the file's size, every CRC and the
 * metadata, and writes it too (for tests, and for tools that want to make
 * one). Snapshots ("blobs") are not kept in memory: their place in the file
 * is, and ks_capture_read_blob fetches one on demand.
 *
 * Ownership: a ks_capture owns everything inside it (its arena and the open
 * file); ks_capture_close frees it. The bytes ks_capture_read_blob returns
 * are malloc'd and belong to the caller. A ks_capture_writer owns its file
 * until ks_capture_writer_close; launches passed to it are borrowed. */
#ifndef KS_CAPTURE_H
#define KS_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ks_alloc.h"
#include "ks_ctx.h"

/* The magic's last two bytes are the format version, 1. */
#define KS_CAPTURE_MAGIC "KSCAP\0\1\0"
#define KS_CAPTURE_MAGIC_LEN 8
enum { KS_CAPTURE_REC_LAUNCH = 1, KS_CAPTURE_REC_BLOB = 2, KS_CAPTURE_REC_END = 3 };
/* A launch's metadata larger than this is not believed (a corrupt length
 * that happens to fit in the file). */
#define KS_CAPTURE_MAX_JSON (64u << 20)

typedef enum ks_capture_kind {
  KS_CAPTURE_SCALAR,  /* bytes by value */
  KS_CAPTURE_POINTER, /* the driver knows it as memory */
  KS_CAPTURE_UNKNOWN, /* the launch did not let the bytes be read */
} ks_capture_kind;

typedef struct ks_capture_param {
  unsigned index;
  unsigned long long offset, size; /* in the kernel's parameter buffer */
  ks_capture_kind kind;
  const unsigned char *value;      /* `size` bytes as passed; NULL when unknown */
  /* pointers only */
  const char *memory;              /* "device", "managed" or "host" */
  unsigned long long base;         /* the allocation's start */
  unsigned long long alloc_size;   /* and size, bytes */
  unsigned long long ptr_offset;   /* the pointer minus base */
  unsigned long long span_lo, span_hi; /* the part of the allocation the
                                      snapshots hold, [span_lo, span_hi):
                                      all of it, unless profile
                                      --capture-window made it a span */
  unsigned long long before, after;/* blob ids of the snapshots; 0: none */
  const char *not_captured;        /* why a snapshot is missing; NULL */
} ks_capture_param;
typedef KS_ARRAY(ks_capture_param) ks_capture_params;

/* The bytes of its snapshot a pointer parameter can reach: to the end of
 * the allocation, or of the span a capture window kept. */
static inline unsigned long long ks_capture_reach(const ks_capture_param *p) {
  return p->span_hi > p->ptr_offset ? p->span_hi - p->ptr_offset : 0;
}
/* A capture window kept only part of the parameter's allocation. */
static inline bool ks_capture_windowed(const ks_capture_param *p) {
  return p->span_lo != 0 || p->span_hi != p->alloc_size;
}

typedef struct ks_capture_launch {
  const char *kernel;              /* mangled name */
  unsigned long long launch;       /* 0: the kernel's first launch */
  unsigned grid[3], block[3];
  unsigned smem;                   /* dynamic shared memory, bytes */
  unsigned long long stream;       /* the CUstream handle's value */
  int device;                      /* -1: unknown */
  const char *api;                 /* "cuLaunchKernel", "cuLaunchKernelEx" */
  bool over_limit;                 /* allocations past --capture-limit: no snapshots */
  unsigned long long bytes_needed; /* the distinct allocations' sizes */
  unsigned long long bytes;        /* snapshot bytes in the file */
  const char *error;               /* the launch failed: why; NULL */
  ks_capture_params params;
} ks_capture_launch;
typedef KS_ARRAY(ks_capture_launch) ks_capture_launches;

typedef struct ks_capture_blob {
  unsigned long long id;
  unsigned long long size;         /* bytes */
  unsigned crc32;                  /* of the bytes (zlib's CRC-32) */
  unsigned long long offset;       /* of the bytes in the file */
} ks_capture_blob;
typedef KS_ARRAY(ks_capture_blob) ks_capture_blobs;

typedef struct ks_capture {
  ks_arena arena;                  /* owns everything below but `file` */
  const char *path;
  FILE *file;                      /* open for ks_capture_read_blob */
  ks_capture_launches launches;    /* in file order */
  ks_capture_blobs blobs;          /* in file order */
  bool complete;                   /* the end record is there: the program exited normally */
  unsigned long long end_launches; /* the end record's count */
} ks_capture;

/* Reads and checks the whole file (blobs are read to check their CRC, not
 * kept). A file that is not what the format says fails with one line:
 * "PATH: record N at byte OFFSET: what". On failure nothing needs closing. */
int ks_capture_open(ks_ctx *ctx, const char *path, ks_capture *out);

/* The blob with `id`, or NULL. */
const ks_capture_blob *ks_capture_blob_find(const ks_capture *c, unsigned long long id);

/* The blob's bytes, read now and checked against its CRC; `*out` is
 * malloc'd (the caller frees it), `*len` its size. */
int ks_capture_read_blob(ks_ctx *ctx, ks_capture *c, unsigned long long id, unsigned char **out,
                         size_t *len);

void ks_capture_close(ks_capture *c);

/* zlib's CRC-32; chains as zlib's crc32 does (start from 0). */
unsigned ks_capture_crc32(unsigned crc, const void *p, size_t n);

/* --- writing --- */

typedef struct ks_capture_writer {
  ks_arena arena;                  /* owns blobs */
  const char *path;                /* borrowed */
  FILE *file;
  ks_capture_blobs blobs;          /* written so far, for the launches' JSON */
  unsigned long long next_id;
  unsigned long long launches;
} ks_capture_writer;

int ks_capture_writer_open(ks_ctx *ctx, const char *path, ks_capture_writer *w);
/* One snapshot; `*id` gets its id. */
int ks_capture_write_blob(ks_ctx *ctx, ks_capture_writer *w, const void *bytes, size_t len,
                          unsigned long long *id);
/* The launch's metadata; the blobs it refers to must be written already. */
int ks_capture_write_launch(ks_ctx *ctx, ks_capture_writer *w, const ks_capture_launch *l);
/* Closes the file; with `end`, after the end record (a program that exited
 * normally). The writer is released either way. */
int ks_capture_writer_close(ks_ctx *ctx, ks_capture_writer *w, bool end);

/* A one-line summary per launch, for profile's report:
 * "  _Z5scalePfi launch 0: 3 parameters, 2 pointers, 8.0 MiB captured". */
void ks_capture_print(FILE *out, const ks_capture *c);

#endif
