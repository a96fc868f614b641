/* The JSON lines of the profile file (docs/profile-format.md), written by the
 * CUPTI injection library into the user's process. Stands alone: no CUPTI,
 * no cJSON, nothing of ours, so that it can be tested without a GPU and
 * loaded into any program.
 *
 * Ownership: a ksrt_jbuf owns its bytes (malloc); ksrt_jbuf_release frees
 * them. Every ksrt_json_* call appends exactly one whole line ending in '\n',
 * or nothing at all: when memory runs out it returns -1 and leaves the
 * buffer as it was, so a reader never sees half a line. Strings passed in
 * are borrowed. */
#ifndef KSRT_INJECT_JSON_H
#define KSRT_INJECT_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Version of the line format, the "version" of the start line. */
#define KSRT_PROFILE_VERSION 1

/* A growable byte buffer; not NUL-terminated (it is written with write()). */
typedef struct ksrt_jbuf {
  char *data;  /* malloc'd, NULL while empty */
  size_t len;  /* bytes in use */
  size_t cap;  /* bytes allocated */
} ksrt_jbuf;

#define KSRT_JBUF_INIT {NULL, 0, 0}

void ksrt_jbuf_release(ksrt_jbuf *b);

/* One kernel execution as the "kernel" line carries it. */
typedef struct ksrt_kernel_line {
  const char *name;        /* mangled name; NULL is written as "" */
  int32_t grid[3];         /* gridDim x, y, z */
  int32_t block[3];        /* blockDim x, y, z */
  int32_t smem_static;     /* bytes of static shared memory */
  int32_t smem_dynamic;    /* bytes of dynamic shared memory */
  uint32_t stream;         /* CUPTI's stream id */
  uint32_t device;         /* CUPTI's device id */
  uint32_t context;        /* CUPTI's context id */
  uint32_t correlation;    /* the launch's correlation id */
  uint64_t start_ns;       /* CUPTI timestamps, ns */
  uint64_t end_ns;
  const char *api;         /* "runtime", "driver" or "unknown" */
} ksrt_kernel_line;

/* `s` as a JSON string with its quotes. Quotes, backslashes and control
 * characters are escaped; bytes that are not valid UTF-8 become U+FFFD, so
 * the line is always valid UTF-8 whatever the name holds. */
int ksrt_json_string(ksrt_jbuf *b, const char *s);

int ksrt_json_start(ksrt_jbuf *b, long pid, uint32_t cupti_version, uint64_t time_ns);
int ksrt_json_kernel(ksrt_jbuf *b, const ksrt_kernel_line *k);
int ksrt_json_dropped(ksrt_jbuf *b, uint64_t records);
/* Sampling (KERNELSMITH_PROFILE_SAMPLE): kernels are timed `percent` of
 * each period (after every launch was timed for `after_ms` from the first),
 * and every launch is counted by name: "count" lines carry a
 * kernel's launches so far in process `pid` (a reader keeps the last). */
int ksrt_json_sample(ksrt_jbuf *b, unsigned percent, unsigned period_ms, unsigned after_ms);
int ksrt_json_count(ksrt_jbuf *b, long pid, const char *name, uint64_t launches);
int ksrt_json_end(ksrt_jbuf *b, uint64_t kernels, uint64_t time_ns);

#endif
