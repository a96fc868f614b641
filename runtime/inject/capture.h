/* Argument capture of `kernelsmith-cc profile --capture` inside the user's
 * process (docs/capture-format.md).
 *
 * Two halves:
 *   capture_file.c: the file's records (magic, CRC-32, blobs, the launch
 *     metadata as JSON, the end record), plain C over a file descriptor, so
 *     that tests can drive it without CUDA;
 *   capture.c: the driver side: which launches to capture, their parameters
 *     (cuFuncGetParamInfo), the allocations behind pointer parameters
 *     (cuPointerGetAttribute, cuMemGetAddressRange) copied to the host before
 *     and after the launch. The driver is reached through dlsym, never
 *     linked.
 *
 * Like the rest of the injection library it links nothing of ours, and any
 * failure prints one "kernelsmith-inject: capture: ..." line on stderr and
 * stops capturing; the program is never changed.
 *
 * Ownership: every pointer passed in is borrowed for the call; buffers a
 * function fills (ksrt_jbuf) belong to the caller. */
#ifndef KSRT_INJECT_CAPTURE_H
#define KSRT_INJECT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "inject_json.h"

#define KSRT_CAP_MAGIC "KSCAP\0\1\0"
#define KSRT_CAP_MAGIC_LEN 8
enum { KSRT_CAP_LAUNCH = 1, KSRT_CAP_BLOB = 2, KSRT_CAP_END = 3 };

/* zlib's CRC-32 (reflected polynomial 0xEDB88320): ksrt_crc32(0, p, n) is
 * zlib's crc32(0, p, n), and calls chain the same way. */
uint32_t ksrt_crc32(uint32_t crc, const void *p, size_t n);

/* The 8-byte magic. 0, or -1 with errno. */
int ksrt_cap_write_magic(int fd);

/* One record whose payload is `head` (may be empty) followed by `data`:
 * header, payload, CRC of the payload. 0, or -1 with errno. */
int ksrt_cap_write_record(int fd, uint32_t type, const void *head, size_t head_len,
                          const void *data, size_t len);

/* A blob record: u64 id, then `len` bytes. `*crc` gets the CRC of the bytes
 * alone (what the launch's JSON names the blob by). */
int ksrt_cap_write_blob(int fd, uint64_t id, const void *data, size_t len, uint32_t *crc);

/* The end record: the launches captured. */
int ksrt_cap_write_end(int fd, uint64_t launches);

/* A kernel parameter as the launch's JSON describes it. */
typedef struct ksrt_cap_param {
  uint32_t index;
  uint64_t offset, size;        /* cuFuncGetParamInfo's */
  const char *kind;             /* "scalar", "pointer" or "unknown" */
  const unsigned char *value;   /* `size` bytes as passed; NULL: unknown */
  /* pointers only */
  const char *memory;           /* "device", "managed", "host" */
  uint64_t base, alloc_size;    /* the allocation it points into */
  uint64_t ptr_offset;          /* the pointer minus base */
  uint64_t before, after;       /* blob ids of the snapshots; 0: none */
  uint64_t span_lo, span_hi;    /* with KERNELSMITH_CAPTURE_WINDOW, the part
                                   of the allocation snapshotted; both 0:
                                   all of it */
  const char *not_captured;     /* why there is no snapshot, or NULL */
} ksrt_cap_param;

/* A snapshot the launch refers to. */
typedef struct ksrt_cap_blob {
  uint64_t id, size;
  uint32_t crc32; /* of the bytes */
} ksrt_cap_blob;

typedef struct ksrt_cap_launch {
  const char *kernel;           /* mangled, as cuFuncGetName gives it */
  uint64_t launch;              /* 0 for the kernel's first launch */
  uint32_t grid[3], block[3];
  uint32_t smem;                /* dynamic shared memory, bytes */
  uint64_t stream;              /* the CUstream handle's value */
  int32_t device;               /* CUdevice ordinal, -1 unknown */
  const char *api;              /* "cuLaunchKernel", "cuLaunchKernelEx" */
  int over_limit;               /* allocations larger than the limit: no snapshot */
  uint64_t bytes_needed;        /* sum of the distinct allocations' sizes */
  uint64_t bytes;               /* bytes of the snapshots written */
  const ksrt_cap_param *params;
  size_t nparams;
  const ksrt_cap_blob *blobs;
  size_t nblobs;
  const char *error;            /* why the launch is incomplete, or NULL */
} ksrt_cap_launch;

/* The launch as one JSON object (no newline), appended to `b`. 0, or -1
 * out of memory (then `b` is as it was). */
int ksrt_cap_launch_json(ksrt_jbuf *b, const ksrt_cap_launch *l);

/* Whether the kernel `mangled`, whose demangled form (NULL when not known)
 * is `demangled`, is one of `wanted`: a comma list split at top-level commas
 * (template arguments have commas). An entry matches the mangled name, the
 * demangled name without parameter list and return type, or that without
 * its last template argument list. */
int ksrt_cap_name_matches(const char *wanted, const char *mangled, const char *demangled);

/* --- the driver side (capture.c) --- */

/* Reads KERNELSMITH_CAPTURE*; nothing to do when KERNELSMITH_CAPTURE is
 * unset. Called once from InitializeInjection. */
void ksrt_capture_init(void);

/* Every driver-domain launch callback (a const CUpti_CallbackData *). */
void ksrt_capture_on_driver(uint32_t cbid, const void *callback_data);

/* At exit: the end record. */
void ksrt_capture_finish(void);

#endif
