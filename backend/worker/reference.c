/* reference: the fp64 reference of a run request (docs/worker-protocol.md,
 * docs/judge.md "The fp64 reference").
 *
 * The request's `ref` module is the original kernel computed in double (the
 * main process made it from the slice). It gets buffers of its own, where
 * every f32 buffer is f64 and the others are as they were, filled by
 * widening the exact values the original and the candidate read for the
 * same seed: regenerating inputs in double would hand the reference
 * different numbers, and measure the inputs' rounding instead of the
 * kernels' arithmetic. Float scalars are widened the same way, through the
 * float the original receives. It runs with the original's grid and block;
 * its dynamic shared memory is doubled, since what held floats in the
 * original holds doubles in the twin.
 *
 * For every floating-point output, the original's and the candidate's
 * errors against it are measured element by element. An element counts
 * against the candidate when its error exceeds both atol + rtol*|ref| and
 * twice the original's error there plus atol: a variant may be as
 * inaccurate as the original, or within the type's tolerance of the exact
 * result, but no worse. The tolerance is the tighter of the buffer's and
 * the type's default, so a loosened tolerance against the original (which
 * lets a different order of operations pass) does not also let a variant
 * lower the precision. An element beyond the tolerance against the
 * original that does not count against the candidate here is excused
 * (ref_excused) and taken out of the output's mismatches: the candidate is
 * no less accurate there, only rounded otherwise (a reordered sum where it
 * cancels, which a capture's type-default tolerance cannot allow for).
 *
 * Captured inputs (KS_DIST_FILE) are widened like generated ones, from the
 * original's host copy of the file's bytes; a pointer into a widened
 * buffer moves with it (its byte offset doubled). */
#include "worker.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *wk_ref_refusal(const ks_workload *work) {
  /* A captured buffer's bytes are read from the file into the original's
   * host copy and widened from there like generated ones. What has no
   * widened form: raw bytes the twin may read otherwise (a struct holding
   * floats is laid out anew with doubles), unless the main process marked
   * them the same in the twin (a null pointer); an offset into an f32
   * buffer that is not a whole number of floats. */
  for (size_t i = 0; i < work->args.len; i++) {
    const ks_warg *a = &work->args.items[i];
    if (a->kind == KS_ARG_BYTES && !a->ref_same)
      return "the fp64 reference does not run on raw-byte arguments (a struct or a "
             "half-precision value by value): they have no widened form";
    if (a->kind == KS_ARG_BUFFER && a->offset && a->buffer < work->buffers.len &&
        work->buffers.items[a->buffer].dtype == KS_DT_F32 && a->offset % sizeof(float))
      return "the fp64 reference does not run on a pointer into the middle of a float";
  }
  return NULL;
}

void wk_widen_f64(ks_dtype t, const void *src, size_t count, void *dst) {
  const unsigned char *p = src;
  unsigned char *q = dst;
  size_t es = ks_wire_dtype_size(t);
  for (size_t i = 0; i < count; i++, p += es, q += 8) {
    /* The bits, not a conversion through the FPU: a build or a thread
     * with denormals-are-zero would flush subnormals, and converting a
     * signalling NaN quiets it. Sign, exponent rebiased, fraction shifted
     * left; a subnormal is normalized; infinities and NaNs keep their
     * sign and payload. */
    uint64_t sign, frac;
    int exp, ebits, fbits;
    switch (t) {
    case KS_DT_F16: {
      uint16_t h;
      memcpy(&h, p, 2);
      sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff, ebits = 5, fbits = 10;
      break;
    }
    case KS_DT_BF16: {
      uint16_t h;
      memcpy(&h, p, 2);
      sign = h >> 15, exp = (h >> 7) & 0xff, frac = h & 0x7f, ebits = 8, fbits = 7;
      break;
    }
    case KS_DT_F32: {
      uint32_t x;
      memcpy(&x, p, 4);
      sign = x >> 31, exp = (int)((x >> 23) & 0xff), frac = x & 0x7fffff, ebits = 8, fbits = 23;
      break;
    }
    case KS_DT_F64:
      memcpy(q, p, 8);
      continue;
    default: {
      double v = wk_elem_double(t, p, 0);
      memcpy(q, &v, 8);
      continue;
    }
    }
    int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
    uint64_t bits;
    if (exp == emax) {
      bits = sign << 63 | 0x7ffull << 52 | frac << (52 - fbits);
    } else if (exp == 0 && frac == 0) {
      bits = sign << 63;
    } else {
      if (exp == 0) { /* subnormal: 0.frac * 2^(1 - bias), normalized */
        exp = 1;
        while (!(frac >> fbits)) {
          frac <<= 1;
          exp--;
        }
        frac &= ((uint64_t)1 << fbits) - 1;
      }
      bits = sign << 63 | (uint64_t)(exp - bias + 1023) << 52 | frac << (52 - fbits);
    }
    memcpy(q, &bits, 8);
  }
}

const ks_workload *wk_ref_workload(ks_arena *arena, const ks_workload *work) {
  ks_workload *twin = ks_arena_alloc(arena, sizeof *twin);
  *twin = *work;
  memset(&twin->buffers, 0, sizeof twin->buffers);
  memset(&twin->args, 0, sizeof twin->args);
  for (size_t i = 0; i < work->buffers.len; i++) {
    ks_wbuffer *b = ks_array_push(arena, &twin->buffers);
    *b = work->buffers.items[i];
    if (b->dtype == KS_DT_F32)
      b->dtype = KS_DT_F64;
  }
  for (size_t i = 0; i < work->args.len; i++) {
    ks_warg *a = ks_array_push(arena, &twin->args);
    *a = work->args.items[i];
    /* A pointer into a widened buffer (a captured allocation that several
     * parameters share): as many doubles in as it was floats. */
    if (a->kind == KS_ARG_BUFFER && a->buffer < work->buffers.len &&
        work->buffers.items[a->buffer].dtype == KS_DT_F32)
      a->offset *= 2;
    if (a->kind != KS_ARG_SCALAR || a->dtype != KS_DT_F32)
      continue;
    /* The value the original receives, exactly. */
    float f = (float)(a->value.is_int ? (double)a->value.i : a->value.f);
    a->dtype = KS_DT_F64;
    a->value.is_int = false;
    a->value.f = f;
  }
  return twin;
}

ks_launch_cfg wk_ref_launch(const ks_launch_cfg *original) {
  ks_launch_cfg l = *original;
  l.smem *= 2;
  return l;
}

/* Buffer `x`'s inputs, widened into its twin `y`'s host copy. */
static void widen(const wk_buffer *x, wk_buffer *y) {
  if (x->spec->dtype == y->spec->dtype)
    memcpy(y->input, x->input, x->bytes);
  else
    wk_widen_f64(x->spec->dtype, x->input, (size_t)x->spec->count, y->input);
}

int wk_ref_run(wk_state *w, ks_arena *arena, const wk_buffers *b, wk_reference *ref,
               wk_outcome *out) {
  wk_buffers *rb = &ref->bufs;
  int rc = -1;
  for (size_t i = 0; i < b->len && i < rb->len; i++) {
    wk_buffer *y = &rb->items[i];
    if (!y->input || !y->bytes)
      continue;
    widen(&b->items[i], y);
    if (wk_cuda(w, arena, out, w->cu.MemcpyHtoD(y->pristine, y->input, y->bytes),
                KS_RUN_LAUNCH_FAILED, "ref", "cuMemcpyHtoD (reference inputs)"))
      goto done;
  }
  bool before = false;
  if (wk_buffers_prepare(w, arena, rb, 1, out) ||
      wk_launch(w, arena, &ref->kernel, rb->params, true, out))
    goto done;
  int canary = wk_buffers_canary(w, arena, rb, &before, out);
  if (canary == -2)
    goto done;
  if (canary >= 0) {
    /* The twin is not the original: a cast the rewrite could not see. */
    out->status = KS_RUN_LAUNCH_FAILED;
    out->error = ks_arena_printf(arena, "ref: the fp64 reference writes out of bounds %s buffer "
                                        "'%s'",
                                 before ? "before" : "past the end of",
                                 wk_name(&rb->items[canary]));
    goto done;
  }
  rc = wk_buffers_download(w, arena, rb, 0, out);
done:
  if (rc && !out->kernel)
    out->kernel = "ref";
  return rc;
}

void wk_ref_tolerance(const ks_wbuffer *b, double *atol, double *rtol) {
  ks_wbuffer by_type = *b;
  by_type.atol = by_type.rtol = -1;
  double ta, tr;
  wk_tolerance(&by_type, &ta, &tr);
  wk_tolerance(b, atol, rtol);
  *atol = fmin(*atol, ta);
  *rtol = fmin(*rtol, tr);
}

/* |v - ref|, infinite when v is not a finite number. */
static double error_of(double v, double ref) {
  return isfinite(v) ? fabs(v - ref) : INFINITY;
}

/* Element i as a double: f32 and f64, the common types, read in place
 * (this runs over every element of every output), others through
 * wk_elem_double. */
static inline double value_at(ks_dtype t, const void *data, size_t i) {
  if (t == KS_DT_F32)
    return ((const float *)data)[i];
  if (t == KS_DT_F64)
    return ((const double *)data)[i];
  return wk_elem_double(t, data, i);
}

/* The original's errors against the reference, into both the original's
 * and the candidate's fields: the candidate's bytes are the original's, so
 * its errors are the same, nothing is worse and nothing is excused. */
static void same_bytes(const wk_buffer *x, int base, const wk_buffer *y, double atol,
                       ks_output_check *c) {
  double max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < (size_t)x->spec->count; i++) {
    double r = value_at(y->spec->dtype, y->slot[0], i);
    double e = error_of(value_at(x->spec->dtype, x->slot[base], i), r), mag = fabs(r);
    if (!isfinite(r) || !isfinite(e))
      continue;
    max_abs = fmax(max_abs, e);
    if (mag > atol && mag > 0)
      max_rel = fmax(max_rel, e / mag);
  }
  c->ref_base_max_abs = c->ref_cand_max_abs = fmax(c->ref_base_max_abs, max_abs);
  c->ref_base_max_rel = c->ref_cand_max_rel = fmax(c->ref_base_max_rel, max_rel);
}

/* One output: the fields of `c` from the two runs' slots of `x` and the
 * reference's slot 0 of `y`. An element beyond the tolerance against the
 * original that the reference shows is no less accurate than allowed (a
 * sum in another order, where it cancels) is excused: taken out of
 * c->mismatches, which then starts at the first element left. */
static void compare_one(const wk_buffer *x, int base, int cand, const wk_buffer *y,
                        ks_output_check *c) {
  double atol, rtol, oatol, ortol;
  wk_ref_tolerance(x->spec, &atol, &rtol);
  wk_tolerance(x->spec, &oatol, &ortol); /* against the original, as verify.c */
  c->has_ref = true;
  c->ref_first_mismatch = -1;
  c->ref_excused = 0;
  if (!memcmp(x->slot[base], x->slot[cand], x->bytes)) {
    same_bytes(x, base, y, atol, c);
    return;
  }
  unsigned long long left = 0; /* mismatches against the original not excused */
  long long first_left = -1;
  double first_want = 0, first_got = 0;
  for (size_t i = 0; i < (size_t)x->spec->count; i++) {
    double r = value_at(y->spec->dtype, y->slot[0], i);
    double b = value_at(x->spec->dtype, x->slot[base], i);
    double g = value_at(x->spec->dtype, x->slot[cand], i);
    double ae, re;
    bool differs = c->mismatches && !wk_element_ok(b, g, oatol, ortol, &ae, &re);
    bool worse = false;
    if (isfinite(r)) {
      double eb = error_of(b, r), ec = error_of(g, r), mag = fabs(r);
      /* Relative errors where the reference exceeds atol: below it the
       * absolute tolerance rules, and a relative error of a value that
       * cancelled to almost nothing says nothing about the arithmetic. */
      bool relative = mag > atol && mag > 0;
      if (isfinite(eb)) {
        c->ref_base_max_abs = fmax(c->ref_base_max_abs, eb);
        if (relative)
          c->ref_base_max_rel = fmax(c->ref_base_max_rel, eb / mag);
      }
      if (isfinite(ec)) {
        c->ref_cand_max_abs = fmax(c->ref_cand_max_abs, ec);
        if (relative)
          c->ref_cand_max_rel = fmax(c->ref_cand_max_rel, ec / mag);
      }
      /* Both not finite: infinity is not above twice infinity, as it should
       * not be (the candidate is no worse than the original there). */
      worse = ec > atol + rtol * mag && ec > 2 * eb + atol;
      if (worse && c->ref_mismatches++ == 0) {
        c->ref_first_mismatch = (long long)i;
        c->ref_value = r;
        c->ref_got = g;
        c->ref_base = b;
      }
      /* Excused only with a finite result: NaN against a NaN original is
       * the original's comparison's business. */
      if (differs && !worse && isfinite(g)) {
        c->ref_excused++;
        continue;
      }
    }
    if (differs && left++ == 0) {
      first_left = (long long)i;
      first_want = b;
      first_got = g;
    }
  }
  if (c->ref_excused) {
    c->mismatches = left;
    c->first_mismatch = first_left;
    c->expected = first_want;
    c->got = first_got;
  }
}

void wk_ref_compare(const wk_buffers *b, int base, int cand, const wk_buffers *ref,
                    ks_output_checks *checks) {
  size_t k = 0;
  for (size_t i = 0; i < b->len && i < ref->len; i++) {
    const wk_buffer *x = &b->items[i];
    if (x->spec->role == KS_ROLE_IN)
      continue;
    ks_output_check *c = k < checks->len ? &checks->items[k++] : NULL;
    if (c && ks_wire_dtype_is_float(x->spec->dtype) && ref->items[i].slot[0])
      compare_one(x, base, cand, &ref->items[i], c);
  }
}
