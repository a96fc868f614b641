/* fill: deterministic inputs, and the conversions between element types and
 * doubles that filling and comparing need.
 *
 * Each buffer draws from its own generator (xoshiro256**), seeded from the
 * request's seed and the buffer's index through splitmix64, so that the same
 * (seed, index) gives the same bytes on any machine and a buffer's values do
 * not depend on the others' lengths. A buffer over a million elements is
 * made of million-element chunks, each with a stream of its own, filled in
 * parallel: its bytes do not depend on the number of cores either. Half and bfloat16 are written as bit
 * patterns (round to nearest even); integers saturate at their type's range
 * instead of overflowing.
 *
 * A captured workload's buffers hold a capture file's bytes instead
 * (KS_DIST_FILE): the worker reads them itself, at an offset, since a
 * snapshot can be gigabytes and has no business in a frame. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Chunk c of a large buffer has a stream of its own (chunk 0's is the
 * buffer's), so that chunks can be generated in parallel and the bytes do
 * not depend on how many threads did it. */
static void rng_seed_chunk(rng *r, unsigned long long seed, size_t index, size_t chunk) {
  uint64_t x = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(index + 1)) ^
               (0x8CB92BA72F3D8DD7ull * (uint64_t)chunk);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

static void rng_seed(rng *r, unsigned long long seed, size_t index) {
  rng_seed_chunk(r, seed, index, 0);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* Uniform in [0, 1). */
static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [lo, hi] (lo <= hi). The modulo bias is below 2^-40
 * for any range a spec uses, which is no concern for test inputs. */
static long long rng_int(rng *r, long long lo, long long hi) {
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  uint64_t v = span ? rng_next(r) % span : rng_next(r);
  return (long long)((uint64_t)lo + v);
}

static double rng_normal(rng *r, double mean, double std) {
  double u1 = 1.0 - rng_unit(r), u2 = rng_unit(r); /* u1 in (0, 1] */
  return mean + std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

unsigned short wk_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff)
    return (unsigned short)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31)
    return (unsigned short)(sign | 0x7c00);
  if (e <= 0) { /* subnormal half, or zero */
    if (e < -10)
      return (unsigned short)sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1)))
      h++;
    return (unsigned short)(sign | h);
  }
  uint32_t h = sign | (uint32_t)e << 10 | mant >> 13, rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    h++; /* a carry into the exponent is the correct rounding, up to inf */
  return (unsigned short)h;
}

float wk_f16_to_f32(unsigned short h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = ldexpf((float)mant, -24);
    return sign ? -f : f;
  }
  uint32_t x = exp == 31 ? sign | 0x7f800000 | mant << 13 : sign | (exp + 112) << 23 | mant << 13;
  memcpy(&f, &x, 4);
  return f;
}

unsigned short wk_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return (unsigned short)((x >> 16) | 0x40); /* NaN stays a quiet NaN */
  return (unsigned short)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float wk_bf16_to_f32(unsigned short h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* Saturating conversion of an integer to a type's range. */
static long long clamp_ll(long long v, long long lo, long long hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static void store_int(ks_dtype t, void *data, size_t i, long long v) {
  unsigned char *p = (unsigned char *)data + i * ks_wire_dtype_size(t);
  switch (t) {
  case KS_DT_I8: { int8_t x = (int8_t)clamp_ll(v, INT8_MIN, INT8_MAX); memcpy(p, &x, 1); break; }
  case KS_DT_U8: { uint8_t x = (uint8_t)clamp_ll(v, 0, UINT8_MAX); memcpy(p, &x, 1); break; }
  case KS_DT_I16: { int16_t x = (int16_t)clamp_ll(v, INT16_MIN, INT16_MAX); memcpy(p, &x, 2); break; }
  case KS_DT_U16: { uint16_t x = (uint16_t)clamp_ll(v, 0, UINT16_MAX); memcpy(p, &x, 2); break; }
  case KS_DT_I32: { int32_t x = (int32_t)clamp_ll(v, INT32_MIN, INT32_MAX); memcpy(p, &x, 4); break; }
  case KS_DT_U32: { uint32_t x = (uint32_t)clamp_ll(v, 0, UINT32_MAX); memcpy(p, &x, 4); break; }
  case KS_DT_I64: memcpy(p, &v, 8); break;
  case KS_DT_U64: { uint64_t x = (uint64_t)(v < 0 ? 0 : v); memcpy(p, &x, 8); break; }
  default: break;
  }
}

/* A double as the nearest integer, saturated to long long (NaN: 0). */
static long long to_ll(double v) {
  if (isnan(v))
    return 0;
  if (v >= 9.2e18)
    return LLONG_MAX;
  if (v <= -9.2e18)
    return LLONG_MIN;
  return llround(v);
}

/* A double as a float without C's undefined behaviour past FLT_MAX: what
 * IEEE 754 overflow gives, an infinity of the value's sign. The spec check
 * refuses every distribution and scalar that could get here with such a
 * value (frontend/spec_resolve.c), so no value a spec let through is
 * changed: this only keeps a corrupt or hand-made request defined. */
static float to_float(double v) {
  if (isnan(v) || fabs(v) <= FLT_MAX)
    return (float)v;
  return v > 0 ? INFINITY : -INFINITY;
}

static void store_double(ks_dtype t, void *data, size_t i, double v) {
  unsigned char *p = (unsigned char *)data + i * ks_wire_dtype_size(t);
  switch (t) {
  case KS_DT_F16: { unsigned short h = wk_f32_to_f16(to_float(v)); memcpy(p, &h, 2); break; }
  case KS_DT_BF16: { unsigned short h = wk_f32_to_bf16(to_float(v)); memcpy(p, &h, 2); break; }
  case KS_DT_F32: { float f = to_float(v); memcpy(p, &f, 4); break; }
  case KS_DT_F64: memcpy(p, &v, 8); break;
  default: store_int(t, data, i, to_ll(v)); break;
  }
}

/* An integer-valued element, whatever the type. */
static void store_count(ks_dtype t, void *data, size_t i, long long v) {
  if (ks_wire_dtype_is_float(t))
    store_double(t, data, i, (double)v);
  else
    store_int(t, data, i, v);
}

double wk_elem_double(ks_dtype t, const void *data, size_t i) {
  const unsigned char *p = (const unsigned char *)data + i * ks_wire_dtype_size(t);
  switch (t) {
  case KS_DT_F16: { unsigned short h; memcpy(&h, p, 2); return wk_f16_to_f32(h); }
  case KS_DT_BF16: { unsigned short h; memcpy(&h, p, 2); return wk_bf16_to_f32(h); }
  case KS_DT_F32: { float f; memcpy(&f, p, 4); return f; }
  case KS_DT_F64: { double d; memcpy(&d, p, 8); return d; }
  case KS_DT_I8: { int8_t x; memcpy(&x, p, 1); return x; }
  case KS_DT_U8: { uint8_t x; memcpy(&x, p, 1); return x; }
  case KS_DT_I16: { int16_t x; memcpy(&x, p, 2); return x; }
  case KS_DT_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
  case KS_DT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
  case KS_DT_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
  case KS_DT_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
  case KS_DT_U64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
  default: return 0;
  }
}

const char *wk_read_file(ks_arena *arena, const char *path, unsigned long long offset, void *dst,
                         size_t bytes) {
  if (!path)
    return "no file named";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ks_arena_printf(arena, "%s", strerror(errno));
  const char *why = NULL;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (offset > (unsigned long long)st.st_size || bytes > (unsigned long long)st.st_size - offset))
    why = ks_arena_printf(arena, "the file has %lld bytes", (long long)st.st_size);
  /* pread moves at most about 2 GiB at a time, and a snapshot can be more. */
  for (size_t done = 0; !why && done < bytes;) {
    size_t chunk = bytes - done < ((size_t)1 << 30) ? bytes - done : (size_t)1 << 30;
    ssize_t n = pread(fd, (unsigned char *)dst + done, chunk, (off_t)(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      why = ks_arena_printf(arena, "%s", strerror(errno));
    else if (n == 0)
      why = ks_arena_printf(arena, "the file ends at byte %llu", offset + done);
    else
      done += (size_t)n;
  }
  close(fd);
  return why;
}

void wk_scalar_bytes(ks_dtype t, ks_value v, unsigned char out[8]) {
  memset(out, 0, 8);
  if (ks_wire_dtype_is_float(t)) {
    store_double(t, out, 0, v.is_int ? (double)v.i : v.f);
    return;
  }
  /* An integer parameter takes the value modulo its width, as a C
   * conversion to an unsigned type of that width would. */
  unsigned long long x = v.is_int ? (unsigned long long)v.i : (unsigned long long)to_ll(v.f);
  size_t n = ks_wire_dtype_size(t);
  for (size_t i = 0; i < n; i++)
    out[i] = (unsigned char)(x >> (8 * i));
}

/* Non-decreasing integers in [lo, hi], first lo and last hi, in one pass
 * per half: sorted uniform order statistics from cumulative exponential
 * spacings (no sort, O(n)). */
static void fill_sorted(const ks_wbuffer *b, rng *r, unsigned long long seed, size_t index,
                        void *host) {
  size_t n = (size_t)b->count;
  long long lo = to_ll(b->a), hi = to_ll(b->b);
  if (hi < lo)
    hi = lo;
  if (n == 0)
    return;
  store_count(b->dtype, host, 0, lo);
  if (n == 1)
    return;
  double total = 0;
  for (size_t i = 0; i < n - 1; i++)
    total += -log(1.0 - rng_unit(r));
  rng_seed(r, seed, index); /* the same spacings again */
  double sum = 0, span = (double)hi - (double)lo + 1;
  for (size_t i = 1; i < n - 1; i++) {
    sum += -log(1.0 - rng_unit(r));
    long long v = lo + (long long)floor(sum / total * span);
    store_count(b->dtype, host, i, clamp_ll(v, lo, hi));
  }
  store_count(b->dtype, host, n - 1, hi);
}

/* Elements [from, to) of an element-wise distribution, from chunk
 * `chunk`'s stream. */
static void fill_range(const ks_wbuffer *b, unsigned long long seed, size_t index, size_t chunk,
                       size_t from, size_t to, void *host) {
  rng r;
  rng_seed_chunk(&r, seed, index, chunk);
  bool is_float = ks_wire_dtype_is_float(b->dtype);
  switch (b->dist) {
  case KS_DIST_UNIFORM:
    for (size_t i = from; i < to; i++) {
      if (is_float)
        store_double(b->dtype, host, i, b->a + (b->b - b->a) * rng_unit(&r));
      else
        store_int(b->dtype, host, i, rng_int(&r, to_ll(ceil(b->a)), to_ll(floor(b->b))));
    }
    break;
  case KS_DIST_NORMAL:
    for (size_t i = from; i < to; i++)
      store_double(b->dtype, host, i, rng_normal(&r, b->a, b->b));
    break;
  case KS_DIST_INT: {
    long long lo = to_ll(b->a), hi = to_ll(b->b);
    if (hi < lo)
      hi = lo;
    for (size_t i = from; i < to; i++)
      store_count(b->dtype, host, i, rng_int(&r, lo, hi));
    break;
  }
  case KS_DIST_IOTA:
    for (size_t i = from; i < to; i++) {
      if (is_float)
        store_double(b->dtype, host, i, b->a + (double)i);
      else
        store_int(b->dtype, host, i, to_ll(b->a) + (long long)i);
    }
    break;
  case KS_DIST_CONSTANT:
    for (size_t i = from; i < to; i++)
      store_double(b->dtype, host, i, b->a);
    break;
  default:
    break;
  }
}

enum { CHUNK = 1 << 20, MAX_THREADS = 32 };

typedef struct fill_job {
  const ks_wbuffer *b;
  unsigned long long seed;
  size_t index, chunks, next_first; /* thread t does chunks t, t + nthreads, ... */
  size_t stride;
  void *host;
} fill_job;

static void *fill_worker(void *arg) {
  fill_job *j = arg;
  size_t n = (size_t)j->b->count;
  for (size_t c = j->next_first; c < j->chunks; c += j->stride) {
    size_t to = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
    fill_range(j->b, j->seed, j->index, c, c * CHUNK, to, j->host);
  }
  return NULL;
}

/* Millions of normal deviates take a second on one core: a large buffer is
 * filled chunk by chunk on every core. */
static void fill_parallel(const ks_wbuffer *b, unsigned long long seed, size_t index,
                          void *host) {
  size_t n = (size_t)b->count, chunks = (n + CHUNK - 1) / CHUNK;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nthreads = cores > 1 ? (size_t)cores : 1;
  if (nthreads > MAX_THREADS)
    nthreads = MAX_THREADS;
  if (nthreads > chunks)
    nthreads = chunks;
  fill_job jobs[MAX_THREADS];
  pthread_t threads[MAX_THREADS];
  bool started[MAX_THREADS] = {false};
  for (size_t t = 0; t < nthreads; t++) {
    jobs[t] = (fill_job){b, seed, index, chunks, t, nthreads, host};
    /* A thread that cannot start leaves its chunks to this one. */
    started[t] = t > 0 && pthread_create(&threads[t], NULL, fill_worker, &jobs[t]) == 0;
  }
  for (size_t t = 0; t < nthreads; t++)
    if (!started[t])
      fill_worker(&jobs[t]);
  for (size_t t = 0; t < nthreads; t++)
    if (started[t])
      pthread_join(threads[t], NULL);
}

void wk_fill(const ks_wbuffer *b, unsigned long long seed, size_t index, void *host) {
  size_t n = (size_t)b->count, esize = ks_wire_dtype_size(b->dtype);
  rng r;
  rng_seed(&r, seed, index);
  switch (b->dist) {
  case KS_DIST_PERMUTATION: {
    /* Fisher-Yates on the typed elements: no temporary array. */
    unsigned char tmp[8];
    for (size_t i = 0; i < n; i++)
      store_count(b->dtype, host, i, (long long)i);
    for (size_t i = n; i > 1; i--) {
      size_t j = (size_t)rng_int(&r, 0, (long long)i - 1);
      unsigned char *x = (unsigned char *)host + (i - 1) * esize, *y = (unsigned char *)host + j * esize;
      memcpy(tmp, x, esize);
      memcpy(x, y, esize);
      memcpy(y, tmp, esize);
    }
    break;
  }
  case KS_DIST_SORTED_INT:
    fill_sorted(b, &r, seed, index, host);
    break;
  default:
    if (n <= CHUNK)
      fill_range(b, seed, index, 0, 0, n, host);
    else
      fill_parallel(b, seed, index, host);
    break;
  }
}
