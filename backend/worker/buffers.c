/* buffers: the workload's device memory, laid out to catch what a wrong
 * kernel does to memory it does not own.
 *
 * Each buffer is one allocation: WK_GUARD bytes of guard zone, the data
 * (starting 256-byte aligned, as cudaMalloc's would), and after it the
 * padding up to the next 256 bytes plus another WK_GUARD, so that a write
 * even one element past the end lands in a guard. Guards hold the canary
 * byte and are rewritten before every run; after a run a guard that changed
 * names the buffer and the side.
 *
 * Inputs are generated on the host, kept there (to tell whether a kernel
 * modified an input) and in a pristine device copy (to restore inputs before
 * every run, and in-place buffers before every timed launch, without a trip
 * over PCIe). Outputs are poisoned before each run with one of two patterns,
 * so that an element the kernel never wrote shows the pattern. A captured
 * buffer's inputs are a file's bytes, the same for every seed: they are
 * kept under the file's identity and offset instead of a seed.
 *
 * The kernel parameters point into one block of storage, each value at a
 * 16-byte aligned place: device pointers (a buffer's data plus the
 * argument's offset into it), scalars, and raw bytes of any size. */
#include "worker.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { SCRATCH = 4 << 20, PARAM_ALIGN = 16 };

/* Poison patterns, little-endian element bytes as 64-bit values. Pattern 1:
 * a quiet NaN with a payload of our own (floats), 0xCD bytes (integers).
 * Pattern 2: a large negative finite number (floats), 0xA5 bytes. The 8-byte
 * patterns have equal halves so that one 32-bit memset writes them. */
void wk_poison_bytes(ks_dtype t, int which, unsigned char out[8]) {
  unsigned long long v;
  switch (t) {
  case KS_DT_F16:
    v = which == 1 ? 0x7E6D : 0xFBA5; /* NaN; -62624 */
    break;
  case KS_DT_BF16:
    v = which == 1 ? 0x7FCD : 0xFF25; /* NaN; about -2.2e38 */
    break;
  case KS_DT_F32:
    v = which == 1 ? 0x7FE5CDCDull : 0xFF7FA5A5ull; /* NaN; about -3.4e38 */
    break;
  case KS_DT_F64:
    v = which == 1 ? 0x7FF8CDCD7FF8CDCDull : 0xC7EFA5A5C7EFA5A5ull; /* NaN; about -3.3e38 */
    break;
  default:
    v = which == 1 ? 0xCDCDCDCDCDCDCDCDull : 0xA5A5A5A5A5A5A5A5ull;
    break;
  }
  for (int i = 0; i < 8; i++)
    out[i] = (unsigned char)(v >> (8 * (i % (int)ks_wire_dtype_size(t))));
}

/* Writes `bytes` of a repeating pattern (period 1, 2 or 4 bytes, or 8 with
 * equal halves) at `ptr`: cuMemsetD32 needs a 4-byte aligned start, so an
 * unaligned head (the guard zone after an odd-sized buffer) and the tail go
 * through small copies, with the word rotated to keep the pattern's phase. */
static int fill_pattern(wk_state *w, ks_arena *arena, CUdeviceptr ptr, size_t bytes,
                        const unsigned char pattern[8], wk_outcome *out) {
  unsigned char run[8];
  for (int i = 0; i < 8; i++)
    run[i] = pattern[i % 4];
  size_t head = (4 - ptr % 4) % 4;
  if (head > bytes)
    head = bytes;
  if (head && wk_cuda(w, arena, out, w->cu.MemcpyHtoD(ptr, run, head), KS_RUN_LAUNCH_FAILED, NULL,
                      "cuMemcpyHtoD (pattern)"))
    return -1;
  const unsigned char *p = run + head; /* the pattern as seen from ptr + head */
  unsigned word = (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
                  (unsigned)p[3] << 24;
  size_t words = (bytes - head) / 4, tail = (bytes - head) % 4;
  if (words && wk_cuda(w, arena, out, w->cu.MemsetD32(ptr + head, word, words),
                       KS_RUN_LAUNCH_FAILED, NULL, "cuMemsetD32 (pattern)"))
    return -1;
  if (tail && wk_cuda(w, arena, out, w->cu.MemcpyHtoD(ptr + head + 4 * words, p, tail),
                      KS_RUN_LAUNCH_FAILED, NULL, "cuMemcpyHtoD (pattern)"))
    return -1;
  return 0;
}

static bool has_input(const ks_wbuffer *s) { return s->role != KS_ROLE_OUT; }
static bool has_output(const ks_wbuffer *s) { return s->role != KS_ROLE_IN; }

/* Room for a parameter's value: 8 bytes hold a pointer or any scalar. */
static size_t param_room(const ks_warg *a) {
  size_t n = a->kind == KS_ARG_BYTES ? a->size : 8;
  return (n + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
}

void wk_buffers_bind(wk_buffers *out, const ks_workload *work) {
  for (size_t i = 0; i < out->len && i < work->buffers.len; i++)
    out->items[i].spec = &work->buffers.items[i];
  free(out->params);
  free(out->storage);
  size_t nargs = work->args.len, total = 0;
  for (size_t i = 0; i < nargs; i++)
    total += param_room(&work->args.items[i]);
  out->params = ks_xcalloc(nargs ? nargs : 1, sizeof *out->params);
  out->storage = ks_xcalloc(total ? total : 1, 1);
  unsigned char *p = out->storage;
  for (size_t i = 0; i < nargs; i++) {
    const ks_warg *a = &work->args.items[i];
    /* Arguments were checked against the buffers (run.c); a bad one is
     * left zero rather than read out of bounds here. */
    if (a->kind == KS_ARG_BUFFER && a->buffer < out->len) {
      CUdeviceptr ptr = out->items[a->buffer].ptr + a->offset;
      memcpy(p, &ptr, sizeof ptr);
    } else if (a->kind == KS_ARG_SCALAR) {
      wk_scalar_bytes(a->dtype, a->value, p);
    } else if (a->kind == KS_ARG_BYTES && a->bytes) {
      memcpy(p, a->bytes, a->size);
    }
    out->params[i] = p;
    p += param_room(a);
  }
}

int wk_buffers_alloc(wk_state *w, ks_arena *arena, const ks_workload *work, wk_buffers *out,
                     wk_outcome *outcome) {
  memset(out, 0, sizeof *out);
  size_t n = work->buffers.len;
  out->items = ks_xcalloc(n ? n : 1, sizeof *out->items);
  out->len = n;
  out->scratch_bytes = SCRATCH;
  out->scratch = ks_xmalloc(SCRATCH);
  for (size_t i = 0; i < n; i++) {
    wk_buffer *b = &out->items[i];
    b->spec = &work->buffers.items[i];
    b->esize = ks_wire_dtype_size(b->spec->dtype);
    if (!b->esize || b->spec->count > (SIZE_MAX / 2 - 2 * WK_GUARD) / b->esize) {
      outcome->status = KS_RUN_LAUNCH_FAILED;
      outcome->error = ks_arena_printf(arena, "buffer %s: %llu elements of %s cannot be allocated",
                                       wk_name(b), b->spec->count,
                                       ks_wire_dtype_name(b->spec->dtype));
      return -1;
    }
    b->bytes = (size_t)b->spec->count * b->esize;
    size_t padded = (b->bytes + WK_ALIGN - 1) / WK_ALIGN * WK_ALIGN;
    b->after = padded - b->bytes + WK_GUARD;
    const char *what = ks_arena_printf(arena, "cuMemAlloc (buffer %s, %zu bytes)", wk_name(b),
                                       b->bytes);
    if (wk_cuda(w, arena, outcome, w->cu.MemAlloc(&b->alloc, WK_GUARD + padded + WK_GUARD),
                KS_RUN_LAUNCH_FAILED, NULL, what))
      return -1;
    b->ptr = b->alloc + WK_GUARD;
    if (has_input(b->spec) &&
        wk_cuda(w, arena, outcome, w->cu.MemAlloc(&b->pristine, b->bytes ? b->bytes : 1),
                KS_RUN_LAUNCH_FAILED, NULL, what))
      return -1;
    /* Host copies with plain malloc: a workload too big for this machine's
     * memory is the request's failure, not an abort of the worker. */
    bool host_ok = true;
    if (has_input(b->spec))
      host_ok = (b->input = malloc(b->bytes ? b->bytes : 1)) != NULL;
    for (int s = 0; s < 3 && host_ok && has_output(b->spec); s++)
      host_ok = (b->slot[s] = malloc(b->bytes ? b->bytes : 1)) != NULL;
    if (!host_ok) {
      outcome->status = KS_RUN_LAUNCH_FAILED;
      outcome->error = ks_arena_printf(arena, "buffer %s: no host memory for copies of %zu bytes",
                                       wk_name(b), b->bytes);
      return -1;
    }
  }
  wk_buffers_bind(out, work);
  return 0;
}

void wk_buffers_free(wk_state *w, wk_buffers *b) {
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (x->alloc)
      w->cu.MemFree(x->alloc);
    if (x->pristine)
      w->cu.MemFree(x->pristine);
    if (x->alt_pristine)
      w->cu.MemFree(x->alt_pristine);
    free(x->input);
    free(x->alt_input);
    free(x->file_key);
    for (int s = 0; s < 3; s++)
      free(x->slot[s]);
  }
  free(b->items);
  free(b->params);
  free(b->storage);
  free(b->scratch);
  memset(b, 0, sizeof *b);
}

/* Generating inputs on the host dominates the cost of a large size set
 * (tens of millions of normal deviates), and a search judges every
 * candidate of a kernel with the same seeds: the worker keeps the most
 * recent inputs, keyed by everything that determines their bytes, within a
 * memory cap, the oldest dropped first. */
enum { FILL_CACHE_ENTRIES = 64 };
static const size_t fill_cache_cap = (size_t)2 << 30;

typedef struct fill_entry {
  ks_dtype dtype;
  ks_dist_kind dist;
  double a, b;
  unsigned long long count, seed;
  size_t index, bytes;
  unsigned long long used;
  void *data;
} fill_entry;

typedef struct wk_fill_cache {
  fill_entry e[FILL_CACHE_ENTRIES];
  size_t bytes;
  unsigned long long clock;
} wk_fill_cache;

static bool same_fill(const fill_entry *e, const ks_wbuffer *s, unsigned long long seed,
                      size_t index) {
  return e->data && e->dtype == s->dtype && e->dist == s->dist && e->a == s->a && e->b == s->b &&
         e->count == s->count && e->seed == seed && e->index == index;
}

static void fill_cached(wk_state *w, const ks_wbuffer *s, unsigned long long seed, size_t index,
                        void *host, size_t bytes) {
  if (!w->fills)
    w->fills = calloc(1, sizeof *w->fills);
  wk_fill_cache *c = w->fills;
  if (!c || bytes > fill_cache_cap / 4) {
    wk_fill(s, seed, index, host);
    return;
  }
  c->clock++;
  for (int i = 0; i < FILL_CACHE_ENTRIES; i++)
    if (same_fill(&c->e[i], s, seed, index)) {
      memcpy(host, c->e[i].data, bytes);
      c->e[i].used = c->clock;
      return;
    }
  wk_fill(s, seed, index, host);
  /* Make room: a free slot, else the least recently used, until under cap. */
  for (;;) {
    int victim = -1, empty = -1;
    for (int i = 0; i < FILL_CACHE_ENTRIES; i++) {
      if (!c->e[i].data) {
        if (empty < 0)
          empty = i;
      } else if (victim < 0 || c->e[i].used < c->e[victim].used) {
        victim = i;
      }
    }
    if (empty >= 0 && c->bytes + bytes <= fill_cache_cap) {
      void *copy = malloc(bytes);
      if (!copy)
        return;
      memcpy(copy, host, bytes);
      c->e[empty] = (fill_entry){s->dtype, s->dist, s->a, s->b, s->count, seed, index, bytes,
                                 c->clock, copy};
      c->bytes += bytes;
      return;
    }
    if (victim < 0)
      return;
    c->bytes -= c->e[victim].bytes;
    free(c->e[victim].data);
    c->e[victim] = (fill_entry){0};
  }
}

void wk_fill_cache_release(wk_state *w) {
  if (!w->fills)
    return;
  for (int i = 0; i < FILL_CACHE_ENTRIES; i++)
    free(w->fills->e[i].data);
  free(w->fills);
  w->fills = NULL;
}

static void swap_alt(wk_buffer *x) {
  CUdeviceptr p = x->pristine;
  x->pristine = x->alt_pristine;
  x->alt_pristine = p;
  unsigned char *in = x->input;
  x->input = x->alt_input;
  x->alt_input = in;
  bool f = x->filled;
  x->filled = x->alt_filled;
  x->alt_filled = f;
  unsigned long long seed = x->filled_seed;
  x->filled_seed = x->alt_seed;
  x->alt_seed = seed;
}

/* What a KS_DIST_FILE buffer's inputs are read from: the file's identity
 * (a capture written again under the same name is another file), its path
 * and the offset. malloc'ed; NULL when the file cannot be looked at. */
static char *file_key(const ks_wbuffer *s) {
  struct stat st;
  if (!s->file || stat(s->file, &st) != 0)
    return NULL;
  char head[160];
  int n = snprintf(head, sizeof head, "%llu:%llu:%lld:%lld.%09ld:%llu:",
                   (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                   (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
                   s->file_offset);
  size_t len = strlen(s->file);
  char *key = malloc((size_t)n + len + 1);
  if (key) {
    memcpy(key, head, (size_t)n);
    memcpy(key + n, s->file, len + 1);
  }
  return key;
}

/* A captured buffer's inputs: read once, kept while the file and offset
 * stay the same, whatever the seed. */
static int fill_from_file(wk_state *w, ks_arena *arena, wk_buffer *x, wk_outcome *out) {
  char *key = file_key(x->spec);
  if (x->filled && key && x->file_key && strcmp(key, x->file_key) == 0) {
    free(key);
    return 0;
  }
  double t0 = wk_now();
  x->filled = false;
  free(x->file_key);
  x->file_key = NULL;
  const char *why = wk_read_file(arena, x->spec->file, x->spec->file_offset, x->input, x->bytes);
  if (why) {
    free(key);
    if (out->status == KS_RUN_OK) {
      out->status = KS_RUN_LAUNCH_FAILED;
      out->error = ks_arena_printf(arena, "buffer %s: cannot read %zu bytes at offset %llu of %s: "
                                          "%s", wk_name(x), x->bytes, x->spec->file_offset,
                                   x->spec->file ? x->spec->file : "(no file)", why);
    }
    return -1;
  }
  if (wk_cuda(w, arena, out, w->cu.MemcpyHtoD(x->pristine, x->input, x->bytes),
              KS_RUN_LAUNCH_FAILED, NULL, "cuMemcpyHtoD (inputs)")) {
    free(key);
    return -1;
  }
  x->filled = true;
  x->file_key = key; /* NULL (the file went away meanwhile): read again next time */
  w->t_fill += wk_now() - t0;
  return 0;
}

/* Inputs stay where they were uploaded: the current seed's and the one
 * before it (kept buffers, pool.c), so that a search moving between its
 * timing and recheck seeds uploads nothing. A third seed replaces the older
 * of the two; generating it again is the fill cache's business. */
int wk_buffers_fill(wk_state *w, ks_arena *arena, wk_buffers *b, unsigned long long seed,
                    wk_outcome *out) {
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (!x->input || !x->bytes)
      continue;
    if (x->spec->dist == KS_DIST_FILE) {
      if (fill_from_file(w, arena, x, out))
        return -1;
      continue;
    }
    if (x->filled && x->filled_seed == seed)
      continue;
    if (x->alt_filled && x->alt_seed == seed) {
      swap_alt(x);
      continue;
    }
    double t0 = wk_now();
    if (x->filled) {
      /* Keep the current seed's inputs as the alternate; fill the other
       * pair, allocated on first use. */
      if (!x->alt_input && !(x->alt_input = malloc(x->bytes)))
        goto in_place;
      if (!x->alt_pristine && w->cu.MemAlloc(&x->alt_pristine, x->bytes) != CUDA_SUCCESS) {
        x->alt_pristine = 0;
        goto in_place;
      }
      swap_alt(x);
    }
  in_place:
    x->filled = false;
    fill_cached(w, x->spec, seed, i, x->input, x->bytes);
    if (wk_cuda(w, arena, out, w->cu.MemcpyHtoD(x->pristine, x->input, x->bytes),
                KS_RUN_LAUNCH_FAILED, NULL, "cuMemcpyHtoD (inputs)"))
      return -1;
    x->filled = true;
    x->filled_seed = seed;
    w->t_fill += wk_now() - t0;
  }
  return 0;
}

int wk_buffers_restore(wk_state *w, ks_arena *arena, wk_buffers *b, bool inout_only,
                       wk_outcome *out) {
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (!x->input || !x->bytes || (inout_only && x->spec->role != KS_ROLE_INOUT))
      continue;
    if (wk_cuda(w, arena, out, w->cu.MemcpyDtoDAsync(x->ptr, x->pristine, x->bytes, NULL),
                KS_RUN_LAUNCH_FAILED, NULL, "cuMemcpyDtoD (restore inputs)"))
      return -1;
  }
  return 0;
}

int wk_buffers_prepare(wk_state *w, ks_arena *arena, wk_buffers *b, int which, wk_outcome *out) {
  if (wk_buffers_restore(w, arena, b, false, out))
    return -1;
  unsigned char canary[8], poison[8];
  memset(canary, WK_CANARY_BYTE, sizeof canary);
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (fill_pattern(w, arena, x->alloc, WK_GUARD, canary, out) ||
        fill_pattern(w, arena, x->ptr + x->bytes, x->after, canary, out))
      return -1;
    if (x->spec->role != KS_ROLE_OUT || which == 0)
      continue;
    wk_poison_bytes(x->spec->dtype, which, poison);
    if (fill_pattern(w, arena, x->ptr, x->bytes, poison, out))
      return -1;
  }
  /* Memsets and copies on the legacy stream are ordered before the launch;
   * a synchronize here keeps an error in them from being blamed on it. */
  return wk_cuda(w, arena, out, w->cu.CtxSynchronize(), KS_RUN_LAUNCH_FAILED, NULL,
                 "preparing buffers");
}

int wk_buffers_download(wk_state *w, ks_arena *arena, wk_buffers *b, int slot, wk_outcome *out) {
  double t0 = wk_now();
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (!x->slot[slot] || !x->bytes)
      continue;
    if (wk_cuda(w, arena, out, w->cu.MemcpyDtoH(x->slot[slot], x->ptr, x->bytes),
                KS_RUN_CRASHED, NULL, "cuMemcpyDtoH (outputs)"))
      return -1;
  }
  w->t_download += wk_now() - t0;
  return 0;
}

/* Whether `bytes` at `ptr` all equal `byte`. */
static int zone_intact(wk_state *w, ks_arena *arena, wk_buffers *b, CUdeviceptr ptr, size_t bytes,
                       bool *intact, wk_outcome *out) {
  *intact = true;
  for (size_t done = 0; done < bytes && *intact;) {
    size_t n = bytes - done < b->scratch_bytes ? bytes - done : b->scratch_bytes;
    if (wk_cuda(w, arena, out, w->cu.MemcpyDtoH(b->scratch, ptr + done, n), KS_RUN_CRASHED, NULL,
                "cuMemcpyDtoH (guard zones)"))
      return -1;
    for (size_t i = 0; i < n; i++)
      if (b->scratch[i] != WK_CANARY_BYTE) {
        *intact = false;
        break;
      }
    done += n;
  }
  return 0;
}

int wk_buffers_canary(wk_state *w, ks_arena *arena, wk_buffers *b, bool *before, wk_outcome *out) {
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    bool intact;
    if (zone_intact(w, arena, b, x->alloc, WK_GUARD, &intact, out))
      return -2;
    if (!intact) {
      *before = true;
      return (int)i;
    }
    if (zone_intact(w, arena, b, x->ptr + x->bytes, x->after, &intact, out))
      return -2;
    if (!intact) {
      *before = false;
      return (int)i;
    }
  }
  return -1;
}

int wk_buffers_inputs_changed(wk_state *w, ks_arena *arena, wk_buffers *b, bool *changed,
                              wk_outcome *out) {
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    changed[i] = false;
    if (x->spec->role != KS_ROLE_IN)
      continue;
    for (size_t done = 0; done < x->bytes && !changed[i];) {
      size_t n = x->bytes - done < b->scratch_bytes ? x->bytes - done : b->scratch_bytes;
      if (wk_cuda(w, arena, out, w->cu.MemcpyDtoH(b->scratch, x->ptr + done, n), KS_RUN_CRASHED,
                  NULL, "cuMemcpyDtoH (inputs)"))
        return -1;
      changed[i] = memcmp(b->scratch, x->input + done, n) != 0;
      done += n;
    }
  }
  return 0;
}
