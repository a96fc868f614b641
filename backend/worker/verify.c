/* verify: one seed of the correctness protocol (docs/worker-protocol.md,
 * "What a run does").
 *
 * Four runs on the same inputs: the original with outputs poisoned by
 * pattern 1, again with pattern 2, then the candidate the same two ways.
 * Host slots: 0 = original run 1, 2 = candidate run 1, 1 = the second run
 * of whichever ran last (the original's, then the candidate's).
 *
 *  - outputs: candidate run 1 against original run 1, element by element,
 *    |got - expected| <= atol + rtol * |expected| (floats; NaN matches only
 *    NaN), exact for integers unless the spec gave a tolerance;
 *  - unwritten: an `out` element that holds pattern 1 in the candidate's
 *    first run and pattern 2 in its second, where the original wrote a
 *    value; an `inout` element still equal to its input where the original
 *    changed it;
 *  - the original's determinism: its two runs bitwise (elements both runs
 *    left unwritten skipped); if they differ (float atomics), tolerance is
 *    used for the candidate's race check of that buffer;
 *  - race: the candidate's two runs must agree the same way (within
 *    tolerance for floating-point outputs, bitwise for integers unless the
 *    original itself varied);
 *  - guard zones after every run, the original's and the candidate's
 *    reported apart;
 *  - inputs: an `in` buffer the candidate changed, where the original
 *    leaves it as it was;
 *  - with an fp64 reference (reference.c), run first on the same inputs
 *    widened: both kernels' errors against it.
 *
 * A replay (a captured workload) runs the original alone, once, and
 * compares its outputs with what the capture recorded after the launch:
 * bit for bit, and with the tolerance (a GPU of another model, or another
 * order of float atomics, may round differently). */
#include "worker.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void wk_tolerance(const ks_wbuffer *b, double *atol, double *rtol) {
  double a, r;
  ks_dtype_tolerance(b->dtype, &a, &r);
  *atol = b->atol >= 0 ? b->atol : a;
  *rtol = b->rtol >= 0 ? b->rtol : r;
}

bool wk_element_ok(double want, double got, double atol, double rtol, double *abs_err,
                   double *rel_err) {
  *abs_err = *rel_err = 0;
  if (isnan(want) || isnan(got))
    return isnan(want) && isnan(got);
  if (want == got)
    return true; /* also equal infinities, and -0 against +0 */
  if (isinf(want) || isinf(got))
    return false;
  *abs_err = fabs(got - want);
  *rel_err = want != 0 ? *abs_err / fabs(want) : 0;
  return *abs_err <= atol + rtol * fabs(want);
}

static bool same(const unsigned char *a, const unsigned char *b, size_t n) {
  return memcmp(a, b, n) == 0;
}

/* wk_compare_outputs' loop for f32, the common case, on whole words: a
 * large output that differs everywhere within tolerance (fast math, another
 * summation order) is compared at memory speed. Same rules as the general
 * loop below. */
static void compare_f32(const wk_buffer *x, int want, int got, int second, double atol,
                        double rtol, const unsigned char p1b[8], const unsigned char p2b[8],
                        ks_output_check *c) {
  uint32_t p1, p2;
  memcpy(&p1, p1b, 4);
  memcpy(&p2, p2b, 4);
  const uint32_t *E = (const uint32_t *)(const void *)x->slot[want];
  const uint32_t *G = (const uint32_t *)(const void *)x->slot[got];
  const uint32_t *S = second >= 0 ? (const uint32_t *)(const void *)x->slot[second] : NULL;
  const uint32_t *I = (const uint32_t *)(const void *)x->input;
  bool out_role = x->spec->role == KS_ROLE_OUT;
  size_t n = (size_t)x->spec->count;
  for (size_t i = 0; i < n; i++) {
    uint32_t e = E[i], g = G[i];
    if (e == g)
      continue;
    if (out_role ? g == p1 && (!S || S[i] == p2) : g == I[i] && e != I[i])
      c->unwritten++;
    float fe, fg;
    memcpy(&fe, &e, 4);
    memcpy(&fg, &g, 4);
    double abs_err, rel_err;
    bool ok = wk_element_ok(fe, fg, atol, rtol, &abs_err, &rel_err);
    if (abs_err > c->max_abs_error)
      c->max_abs_error = abs_err;
    if (rel_err > c->max_rel_error)
      c->max_rel_error = rel_err;
    if (ok)
      continue;
    if (c->mismatches++ == 0) {
      c->first_mismatch = (long long)i;
      c->expected = fe;
      c->got = fg;
    }
  }
}

void wk_compare_outputs(ks_arena *arena, const wk_buffers *b, int want, int got, int second,
                        ks_output_checks *out) {
  for (size_t bi = 0; bi < b->len; bi++) {
    const wk_buffer *x = &b->items[bi];
    if (x->spec->role == KS_ROLE_IN)
      continue;
    ks_output_check *c = ks_array_push(arena, out);
    c->buffer = wk_name(x);
    c->count = x->spec->count;
    c->first_mismatch = -1;
    c->ref_first_mismatch = -1;
    double atol, rtol;
    wk_tolerance(x->spec, &atol, &rtol);
    bool is_float = ks_wire_dtype_is_float(x->spec->dtype);
    bool exact = !is_float && atol == 0 && rtol == 0;
    /* Identical bytes: no mismatch, and nothing unwritten that the
     * original wrote. The common case, decided at memcmp speed. */
    if (memcmp(x->slot[want], x->slot[got], x->bytes) == 0)
      continue;
    unsigned char p1[8], p2[8];
    wk_poison_bytes(x->spec->dtype, 1, p1);
    wk_poison_bytes(x->spec->dtype, 2, p2);
    if (x->spec->dtype == KS_DT_F32) {
      compare_f32(x, want, got, second, atol, rtol, p1, p2, c);
      continue;
    }
    size_t es = x->esize;
    for (size_t i = 0; i < (size_t)x->spec->count; i++) {
      const unsigned char *e = x->slot[want] + i * es, *g = x->slot[got] + i * es;
      if (x->spec->role == KS_ROLE_OUT) {
        if (same(g, p1, es) && (second < 0 || same(x->slot[second] + i * es, p2, es)) &&
            !same(e, p1, es))
          c->unwritten++;
      } else if (same(g, x->input + i * es, es) && !same(e, x->input + i * es, es)) {
        c->unwritten++;
      }
      if (same(e, g, es))
        continue;
      double de = wk_elem_double(x->spec->dtype, x->slot[want], i);
      double dg = wk_elem_double(x->spec->dtype, x->slot[got], i);
      double abs_err = 0, rel_err = 0;
      bool ok = !exact && wk_element_ok(de, dg, atol, rtol, &abs_err, &rel_err);
      if (exact)
        abs_err = fabs(dg - de), rel_err = de != 0 ? abs_err / fabs(de) : 0;
      if (abs_err > c->max_abs_error)
        c->max_abs_error = abs_err;
      if (rel_err > c->max_rel_error)
        c->max_rel_error = rel_err;
      if (ok)
        continue;
      if (c->mismatches++ == 0) {
        c->first_mismatch = (long long)i;
        c->expected = de;
        c->got = dg;
      }
    }
  }
}

/* Whether two runs of one kernel (slot a with pattern 1, slot b with
 * pattern 2) agree: bitwise, or within tolerance when `tolerant`. Elements
 * both runs left unwritten differ by design and are skipped. */
static bool runs_agree(const wk_buffer *x, int a, int b, bool tolerant) {
  unsigned char p1[8], p2[8];
  wk_poison_bytes(x->spec->dtype, 1, p1);
  wk_poison_bytes(x->spec->dtype, 2, p2);
  if (memcmp(x->slot[a], x->slot[b], x->bytes) == 0)
    return true;
  double atol, rtol, abs_err, rel_err;
  wk_tolerance(x->spec, &atol, &rtol);
  size_t es = x->esize;
  for (size_t i = 0; i < (size_t)x->spec->count; i++) {
    const unsigned char *u = x->slot[a] + i * es, *v = x->slot[b] + i * es;
    if (same(u, v, es))
      continue;
    if (x->spec->role == KS_ROLE_OUT && same(u, p1, es) && same(v, p2, es))
      continue;
    if (!tolerant ||
        !wk_element_ok(wk_elem_double(x->spec->dtype, x->slot[a], i),
                    wk_elem_double(x->spec->dtype, x->slot[b], i), atol, rtol, &abs_err, &rel_err))
      return false;
  }
  return true;
}

/* One run: prepare with `pattern`, launch, check the guards, download into
 * `slot`. *canary is the buffer index whose guard broke, or -1. */
static int one_run(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *k, int pattern,
                   int slot, int *canary, bool *before, wk_outcome *out) {
  if (wk_buffers_prepare(w, arena, b, pattern, out) ||
      wk_launch(w, arena, k, b->params, true, out))
    return -1;
  *canary = wk_buffers_canary(w, arena, b, before, out);
  if (*canary == -2)
    return -1;
  return wk_buffers_download(w, arena, b, slot, out);
}

int wk_verify_seed(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base, wk_kernel *cand,
                   wk_reference *ref, unsigned long long seed, ks_run_result *res,
                   wk_outcome *out) {
  ks_seed_check s = {.seed = seed};
  bool *changed = ks_xcalloc(b->len ? b->len : 1, sizeof *changed);
  bool *base_nondet = ks_xcalloc(b->len ? b->len : 1, sizeof *base_nondet);
  int rc = -1, canary;
  bool before = false;
  if (wk_buffers_fill(w, arena, b, seed, out))
    goto done;
  /* The reference first: it reads the same inputs, on buffers of its own. */
  if (ref && wk_ref_run(w, arena, b, ref, out))
    goto done;

  /* The original, twice. */
  if (one_run(w, arena, b, base, 1, 0, &canary, &before, out) ||
      wk_buffers_inputs_changed(w, arena, b, changed, out))
    goto done;
  for (size_t i = 0; i < b->len; i++)
    b->items[i].base_changes = changed[i];
  if (canary >= 0)
    s.base_canary_buffer = wk_name(&b->items[canary]), s.base_canary_before = before;
  if (one_run(w, arena, b, base, 2, 1, &canary, &before, out))
    goto done;
  if (canary >= 0 && !s.base_canary_buffer)
    s.base_canary_buffer = wk_name(&b->items[canary]), s.base_canary_before = before;
  for (size_t i = 0; i < b->len; i++)
    if (b->items[i].slot[0] && !runs_agree(&b->items[i], 0, 1, false))
      base_nondet[i] = s.base_nondeterministic = true;

  /* The candidate, twice. */
  if (one_run(w, arena, b, cand, 1, 2, &canary, &before, out) ||
      wk_buffers_inputs_changed(w, arena, b, changed, out))
    goto done;
  if (canary >= 0)
    s.canary_buffer = wk_name(&b->items[canary]), s.canary_before = before;
  for (size_t i = 0; i < b->len && !s.changed_input; i++)
    if (changed[i] && !b->items[i].base_changes)
      s.changed_input = wk_name(&b->items[i]);
  if (one_run(w, arena, b, cand, 2, 1, &canary, &before, out))
    goto done;
  if (canary >= 0 && !s.canary_buffer)
    s.canary_buffer = wk_name(&b->items[canary]), s.canary_before = before;
  /* Floating-point outputs: the candidate's two runs must agree within the
   * tolerance it must meet against the original. Bitwise agreement would
   * fail a correct variant whose float atomics happened to land in another
   * order while the original's, on this seed, happened not to (seen on
   * reduce_sum: the original's nondeterminism shows on some seeds only). A
   * race that matters still differs beyond tolerance. */
  double t0 = wk_now();
  for (size_t i = 0; i < b->len && !s.race; i++)
    if (b->items[i].slot[0] &&
        !runs_agree(&b->items[i], 2, 1,
                    base_nondet[i] || ks_dtype_is_float(b->items[i].spec->dtype))) {
      s.race = true;
      s.race_buffer = wk_name(&b->items[i]);
    }

  wk_compare_outputs(arena, b, 0, 2, 1, &s.outputs);
  if (ref)
    wk_ref_compare(b, 0, 2, &ref->bufs, &s.outputs);
  w->t_compare += wk_now() - t0;
  *ks_array_push(arena, &res->seeds) = s;
  rc = 0;
done:
  free(changed);
  free(base_nondet);
  return rc;
}

void wk_compare_capture(const ks_wbuffer *b, const void *want, const void *got,
                        ks_output_check *c) {
  c->has_capture = true;
  c->capture_bit_diffs = c->capture_mismatches = 0;
  c->capture_first_diff = -1;
  c->capture_expected = c->capture_got = 0;
  size_t es = ks_wire_dtype_size(b->dtype), n = (size_t)b->count;
  if (!es || memcmp(want, got, n * es) == 0)
    return;
  double atol, rtol, abs_err, rel_err;
  wk_tolerance(b, &atol, &rtol);
  bool is_float = ks_wire_dtype_is_float(b->dtype);
  const unsigned char *e = want, *g = got;
  for (size_t i = 0; i < n; i++) {
    if (same(e + i * es, g + i * es, es))
      continue;
    double de = wk_elem_double(b->dtype, want, i), dg = wk_elem_double(b->dtype, got, i);
    if (c->capture_bit_diffs++ == 0) {
      c->capture_first_diff = (long long)i;
      c->capture_expected = de;
      c->capture_got = dg;
    }
    /* Integers: the capture is the application's own result, exact. */
    if (!is_float || !wk_element_ok(de, dg, atol, rtol, &abs_err, &rel_err))
      c->capture_mismatches++;
  }
}

int wk_replay_seed(wk_state *w, ks_arena *arena, wk_buffers *b, wk_kernel *base,
                   unsigned long long seed, ks_run_result *res, wk_outcome *out) {
  ks_seed_check s = {.seed = seed};
  int canary;
  bool before = false;
  if (wk_buffers_fill(w, arena, b, seed, out) ||
      one_run(w, arena, b, base, 1, 0, &canary, &before, out))
    return -1;
  if (canary >= 0)
    s.base_canary_buffer = wk_name(&b->items[canary]), s.base_canary_before = before;
  double t0 = wk_now();
  for (size_t i = 0; i < b->len; i++) {
    wk_buffer *x = &b->items[i];
    if (x->spec->role == KS_ROLE_IN)
      continue;
    ks_output_check *c = ks_array_push(arena, &s.outputs);
    c->buffer = wk_name(x);
    c->count = x->spec->count;
    c->first_mismatch = c->ref_first_mismatch = c->capture_first_diff = -1;
    if (!x->spec->expect_file)
      continue;
    /* Slot 1 is free in a replay: the expected bytes go there. */
    const char *why = wk_read_file(arena, x->spec->expect_file, x->spec->expect_offset,
                                   x->slot[1], x->bytes);
    if (why) {
      out->status = KS_RUN_LAUNCH_FAILED;
      out->error = ks_arena_printf(arena, "buffer %s: cannot read %zu expected bytes at offset "
                                          "%llu of %s: %s", wk_name(x), x->bytes,
                                   x->spec->expect_offset, x->spec->expect_file, why);
      return -1;
    }
    wk_compare_capture(x->spec, x->slot[1], x->slot[0], c);
  }
  w->t_compare += wk_now() - t0;
  *ks_array_push(arena, &res->seeds) = s;
  return 0;
}
