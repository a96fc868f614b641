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
 * lower the precision. */
#include "worker.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *wk_ref_refusal(const ks_workload *work) {
  /* Offsets are in bytes of the original's types, raw bytes may hold floats
   * that the twin reads as doubles: neither has a widened form. */
  for (size_t i = 0; i < work->buffers.len; i++)
    if (work->buffers.items[i].dist == KS_DIST_FILE)
      return "the fp64 reference does not run on captured inputs";
  for (size_t i = 0; i < work->args.len; i++) {
    const ks_warg *a = &work->args.items[i];
    if (a->kind == KS_ARG_BYTES || (a->kind == KS_ARG_BUFFER && a->offset))
      return "the fp64 reference does not run on raw-byte arguments or pointers into a buffer";
  }
  return NULL;
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
  if (x->spec->dtype == y->spec->dtype) {
    memcpy(y->input, x->input, x->bytes);
    return;
  }
  for (size_t i = 0; i < (size_t)x->spec->count; i++) {
    double v = wk_elem_double(x->spec->dtype, x->input, i); /* exact: f32 -> double */
    memcpy(y->input + i * sizeof v, &v, sizeof v);
  }
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

/* One output: the fields of `c` from the two runs' slots of `x` and the
 * reference's slot 0 of `y`. */
static void compare_one(const wk_buffer *x, int base, int cand, const wk_buffer *y,
                        ks_output_check *c) {
  double atol, rtol;
  wk_ref_tolerance(x->spec, &atol, &rtol);
  c->has_ref = true;
  c->ref_first_mismatch = -1;
  for (size_t i = 0; i < (size_t)x->spec->count; i++) {
    double r = wk_elem_double(y->spec->dtype, y->slot[0], i);
    if (!isfinite(r))
      continue; /* nothing exact to measure against (or the twin did not write it) */
    double b = wk_elem_double(x->spec->dtype, x->slot[base], i);
    double g = wk_elem_double(x->spec->dtype, x->slot[cand], i);
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
    if (!(ec > atol + rtol * mag && ec > 2 * eb + atol))
      continue;
    if (c->ref_mismatches++ == 0) {
      c->ref_first_mismatch = (long long)i;
      c->ref_value = r;
      c->ref_got = g;
      c->ref_base = b;
    }
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
