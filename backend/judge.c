/* The judge: compile, verify on every size set with fresh seeds, time on the
 * timed size, decide. See ks_judge.h and docs/judge.md. */
#include "ks_judge.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_hash.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- ceilings, measured once per device and cached ------------------------ */

static char *ceilings_path(const ks_device_info *d) {
  const char *base = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  char dir[4096];
  if (base && *base)
    snprintf(dir, sizeof dir, "%s/kernelsmith-cc", base);
  else if (home && *home)
    snprintf(dir, sizeof dir, "%s/.cache/kernelsmith-cc", home);
  else
    return NULL;
  char name[256];
  snprintf(name, sizeof name, "ceilings-%s-%d.txt", *d->uuid ? d->uuid : d->pci_bus_id,
           d->driver_version);
  for (char *p = name; *p; p++)
    if (*p == '/' || *p == ' ')
      *p = '_';
  return ks_path_join(dir, name);
}

static bool load_ceilings(const ks_device_info *d, ks_ceilings *out) {
  char *path = ceilings_path(d);
  FILE *f = path ? fopen(path, "r") : NULL;
  bool ok = f &&
            fscanf(f, "bandwidth %lf flops_fp32 %lf", &out->bandwidth, &out->flops_fp32) == 2 &&
            out->bandwidth > 0 && out->flops_fp32 > 0;
  if (f)
    fclose(f);
  free(path);
  return ok;
}

static void store_ceilings(const ks_device_info *d, const ks_ceilings *c) {
  char *path = ceilings_path(d);
  if (!path)
    return;
  char *dir = ks_path_dirname(path);
  char *parent = ks_path_dirname(dir);
  (void)mkdir(parent, 0755);
  (void)mkdir(dir, 0755);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (f) {
    fprintf(f, "bandwidth %.6e\nflops_fp32 %.6e\n", c->bandwidth, c->flops_fp32);
    if (fclose(f) == 0 && rename(tmp, path) == 0)
      f = NULL;
    remove(tmp);
  }
  free(parent);
  free(dir);
  free(path);
}

static int measure_ceilings(ks_ctx *ctx, ks_judge *j) {
  if (load_ceilings(&j->device, &j->ceilings)) {
    j->have_ceilings = true;
    return 0;
  }
  ks_arena arena = KS_ARENA_INIT;
  static const char *const names[] = {"ks_copy", "ks_fma"};
  ks_compile_unit unit = {.name = "ks_ceilings.cu",
                          .source = ks_ceiling_kernels,
                          .name_expressions = names,
                          .nnames = 2};
  ks_compile_result r;
  int rc = ks_compile(ctx, &j->compiler, &unit, 1, &arena, &r);
  if (!rc && r.status != KS_COMPILE_OK)
    rc = ks_fail(ctx, "cannot compile the ceiling kernels: %s", r.reason);
  if (!rc) {
    ks_module copy = {r.cubin, r.cubin_size, r.lowered[0]};
    ks_module fma = {r.cubin, r.cubin_size, r.lowered[1]};
    rc = ks_worker_ceilings(ctx, j->worker, &copy, &fma, &j->ceilings);
  }
  if (!rc) {
    j->have_ceilings = true;
    store_ceilings(&j->device, &j->ceilings);
  }
  ks_arena_release(&arena);
  return rc;
}

/* ---- opening ---------------------------------------------------------------- */

int ks_judge_open(ks_ctx *ctx, ks_judge *j, const ks_judge_options *opts) {
  memset(j, 0, sizeof *j);
  j->opts = *opts;
  if (!j->opts.seed)
    j->opts.seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
  if (!j->opts.min_effect)
    j->opts.min_effect = 0.01;
  ks_worker_options wo = {.device = opts->device, .timeout_ms = opts->timeout_ms};
  if (ks_worker_start(ctx, &wo, &j->worker))
    return -1;
  if (ks_worker_hello(ctx, j->worker, &j->device))
    goto fail;
  char arch[16];
  if (opts->arch)
    snprintf(arch, sizeof arch, "%s", opts->arch);
  else
    snprintf(arch, sizeof arch, "sm_%d%d", j->device.cc_major, j->device.cc_minor);
  if (ks_compiler_init(ctx, &j->compiler, arch, opts->cache_dir))
    goto fail;
  if (measure_ceilings(ctx, j)) {
    /* The verdicts still stand without ceilings; only the roofline report
     * and the physical-floor check need them. */
    ks_warn(ctx, "device ceilings not measured: %s", ctx->error);
  }
  return 0;
fail:
  ks_worker_stop(j->worker);
  j->worker = NULL;
  return -1;
}

void ks_judge_close(ks_judge *j) {
  if (j->worker)
    ks_worker_stop(j->worker);
  ks_compiler_release(&j->compiler);
  memset(j, 0, sizeof *j);
}

/* Whether the subject's kernels go to nvcc (docs/judge.md, "Which
 * compiler"). */
static bool wants_nvcc(const ks_judge *j, const ks_subject *s) {
  return j->opts.compiler == KS_COMPILER_NVCC ||
         (j->opts.compiler == KS_COMPILER_AUTO && s->build_known && *j->compiler.nvcc);
}

static const char *short_digest(ks_arena *a, const char *hex) {
  return ks_arena_printf(a, "%.12s", *hex ? hex : "?");
}

/* How NVRTC's original differs from nvcc's, or NULL when they run the
 * same instructions. */
static const char *machine_code_diff(ks_arena *a, const ks_compile_result *nvrtc,
                                     const ks_compile_result *nvcc) {
  ks_cubin_function x, y;
  if (ks_cubin_function_info(nvrtc->cubin, nvrtc->cubin_size, nvrtc->lowered[0], &x) ||
      ks_cubin_function_info(nvcc->cubin, nvcc->cubin_size, nvcc->lowered[0], &y) ||
      !strcmp(x.text_sha256, y.text_sha256))
    return NULL;
  const char *regs = x.registers == y.registers
                         ? ks_arena_printf(a, "the same %d registers", x.registers)
                         : ks_arena_printf(a, "%d registers (nvcc: %d)", x.registers, y.registers);
  return ks_arena_printf(a, "NVRTC's machine code for the original differs from nvcc's (the "
                            "build's compiler): %s, %zu bytes of code (nvcc: %zu), SASS digest "
                            "%s (nvcc: %s); the judge times NVRTC's (--compiler nvcc times "
                            "the program's)",
                         regs, x.text_bytes, y.text_bytes, short_digest(a, x.text_sha256),
                         short_digest(a, y.text_sha256));
}

/* The twin workload `w` runs with: the spec's `reference fp64` gives it to
 * every workload, capture_reference to the captured ones; none where the
 * workload has no widened form (no_ref). */
static ks_module workload_ref(const ks_subject *s, const ks_workload *w) {
  if (w->no_ref || (!s->fp64_reference && !(s->capture_reference && w->captured)))
    return (ks_module){0};
  return s->ref;
}

/* Captured workloads that go without the reference, said in one line:
 * `why` for all of them, else the ones whose inputs have no widened form. */
static void capture_ref_note(ks_ctx *ctx, const ks_subject *s, const char *why) {
  size_t ncap = 0, nout = 0;
  const ks_workload *first = NULL;
  for (size_t i = 0; i < s->nworkloads; i++) {
    const ks_workload *w = &s->workloads[i];
    ncap += w->captured;
    if (w->captured && w->no_ref && !nout++)
      first = w;
  }
  if (!ncap)
    return;
  if (why)
    ks_warn(ctx, "%s: captured inputs are judged against the original alone, without the fp64 "
                 "reference: %s", s->kernel, why);
  else if (nout)
    ks_warn(ctx, "%s: %zu of %zu captured launches are judged without the fp64 reference ('%s': "
                 "%s)", s->kernel, nout, ncap, first->size_name, first->no_ref);
}

int ks_judge_prepare(ks_ctx *ctx, ks_judge *j, ks_subject *s, ks_arena *arena) {
  if (s->fp64_reference && (!s->ref_source || !s->ref_name_expression))
    return ks_fail(ctx, "kernel '%s': the spec asks for an fp64 reference, and there is no "
                        "fp64 twin of its slice", s->kernel);
  bool nvcc = wants_nvcc(j, s);
  /* With nvcc, NVRTC's original too: the one a variant nvcc rejects is
   * judged against. Judged with NVRTC and the build's command known,
   * nvcc's original too: is NVRTC's what the program runs? */
  bool other = nvcc || (s->build_known && *j->compiler.nvcc);
  ks_compile_unit units[3] = {{.name = ks_arena_printf(arena, "%s.cu", s->kernel),
                               .source = s->slice_source,
                               .name_expressions = &s->name_expression,
                               .nnames = 1,
                               .extra_options = s->options,
                               .nextra = s->noptions,
                               .nvcc = nvcc},
                              {.name = ks_arena_printf(arena, "%s.cu", s->kernel),
                               .source = s->slice_source,
                               .name_expressions = &s->name_expression,
                               .nnames = 1,
                               .extra_options = s->options,
                               .nextra = s->noptions,
                               .nvcc = !nvcc},
                              {.name = ks_arena_printf(arena, "%s.fp64.cu", s->kernel),
                               .source = s->ref_source,
                               .name_expressions = &s->ref_name_expression,
                               .nnames = 1,
                               .extra_options = s->options,
                               .nextra = s->noptions,
                               .nvcc = nvcc}};
  size_t n = other ? 2 : 1;
  bool have_captured = false;
  for (size_t i = 0; i < s->nworkloads; i++)
    have_captured |= s->workloads[i].captured && !s->workloads[i].no_ref;
  bool twin = s->fp64_reference ||
              (s->capture_reference && have_captured && s->ref_source && s->ref_name_expression);
  if (twin)
    units[n++] = units[2];
  ks_compile_result r[3];
  if (ks_compile(ctx, &j->compiler, units, n, arena, r))
    return -1;
  if (r[0].status != KS_COMPILE_OK)
    return ks_fail(ctx, "the original kernel does not compile with %s: %s",
                   nvcc ? "nvcc or NVRTC" : "NVRTC", r[0].reason);
  s->base = (ks_module){r[0].cubin, r[0].cubin_size, r[0].lowered[0]};
  s->nvcc = r[0].nvcc;
  s->base_nvrtc = (ks_module){0};
  s->compiler_note = s->machine_code_note = NULL;
  if (nvcc && !s->nvcc) {
    s->compiler_note = r[0].note;
    ks_warn(ctx, "%s: the original: %s", s->kernel, r[0].note ? r[0].note : "not nvcc's");
  }
  if (s->nvcc && other && r[1].status == KS_COMPILE_OK)
    s->base_nvrtc = (ks_module){r[1].cubin, r[1].cubin_size, r[1].lowered[0]};
  if (!s->nvcc && other && r[1].status == KS_COMPILE_OK && r[1].nvcc &&
      (s->machine_code_note = machine_code_diff(arena, &r[0], &r[1])))
    ks_warn(ctx, "%s: %s", s->kernel, s->machine_code_note);
  s->ref = (ks_module){0};
  if (!twin) {
    if (s->capture_reference && !s->fp64_reference)
      capture_ref_note(ctx, s, s->ref_refusal ? s->ref_refusal : NULL);
    return 0;
  }
  const ks_compile_result *tr = &r[n - 1];
  if (tr->status != KS_COMPILE_OK && s->fp64_reference)
    return ks_fail(ctx, "kernel '%s': its fp64 twin (the fp64 reference the spec asks for) does "
                        "not compile: %s",
                   s->kernel, tr->reason);
  if (tr->status != KS_COMPILE_OK) {
    capture_ref_note(ctx, s, ks_arena_printf(arena, "its fp64 twin does not compile: %s",
                                             tr->reason ? tr->reason : "?"));
    return 0;
  }
  s->ref = (ks_module){tr->cubin, tr->cubin_size, tr->lowered[0]};
  capture_ref_note(ctx, s, NULL);
  return 0;
}

/* ---- verdict helpers ---------------------------------------------------------- */

const char *ks_judge_variant_unit(ks_arena *a, const char *slice_source, const ks_variant *v) {
  /* The variant is compiled beside the original's unit, so it can use the
   * same helpers and types. */
  return ks_arena_printf(a, "%s\n// ---- variant ----\n#line 1 \"%s\"\n%s\n", slice_source,
                         v->file ? v->file : "variant.cu", v->source);
}

/* With the original's compiler (ks_judge_prepare). */
static void variant_unit(ks_arena *a, const ks_subject *s, const ks_candidate *c,
                         ks_compile_unit *unit) {
  *unit = (ks_compile_unit){.name = ks_arena_printf(a, "%s.variant.cu", s->kernel),
                            .source = ks_judge_variant_unit(a, s->slice_source, c->variant),
                            .name_expressions = &c->name_expression,
                            .nnames = 1,
                            .candidate = c->variant->source,
                            .extra_options = s->options,
                            .nextra = s->noptions,
                            .nvcc = s->nvcc};
}

int ks_judge_precompile(ks_ctx *ctx, ks_judge *j, const ks_subject *s, const ks_candidate *c,
                        size_t n, ks_arena *a) {
  if (!n)
    return 0;
  ks_compile_unit *units = ks_arena_alloc(a, n * sizeof *units);
  ks_compile_result *r = ks_arena_alloc(a, n * sizeof *r);
  for (size_t i = 0; i < n; i++)
    variant_unit(a, s, &c[i], &units[i]);
  return ks_compile(ctx, &j->compiler, units, n, a, r);
}

int ks_judge_digest(ks_ctx *ctx, ks_judge *j, const ks_subject *s, const ks_candidate *c,
                    ks_arena *a, char out[65]) {
  ks_compile_unit unit;
  variant_unit(a, s, c, &unit);
  ks_compile_result cr;
  if (ks_compile(ctx, &j->compiler, &unit, 1, a, &cr))
    return -1;
  if (cr.status != KS_COMPILE_OK)
    return ks_fail(ctx, "does not compile");
  ks_buf b = KS_BUF_INIT;
  ks_buf_add(&b, cr.cubin, cr.cubin_size);
  ks_buf_addf(&b, "\n%s\n", cr.lowered[0]);
  for (size_t i = 0; i < s->nworkloads; i++) {
    const ks_launch_cfg *l = &c->launches[i];
    ks_buf_addf(&b, "%u %u %u %u %u %u %llu %d\n", l->grid[0], l->grid[1], l->grid[2],
                l->block[0], l->block[1], l->block[2], l->smem, c->guards_hold[i]);
  }
  ks_sha256_hex(b.data, b.len, out);
  ks_buf_release(&b);
  return 0;
}

static size_t timed_index(const ks_subject *s) {
  for (size_t i = 0; i < s->nworkloads; i++)
    if (s->workloads[i].timed)
      return i;
  return 0;
}

static unsigned long long mix(unsigned long long a, unsigned long long b) {
  unsigned long long z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 27);
}

static const char *fmt_value(ks_arena *a, double v) { return ks_arena_printf(a, "%.9g", v); }

/* The first thing a seed's checks say is wrong, or NULL. */
static const char *seed_problem(ks_arena *a, const ks_seed_check *sc, const char *size) {
  if (sc->canary_buffer)
    return ks_arena_printf(a, "writes out of bounds: %s buffer '%s' (guard zone changed; size "
                              "'%s')",
                           sc->canary_before ? "before" : "past the end of", sc->canary_buffer,
                           size);
  if (sc->changed_input)
    return ks_arena_printf(a, "modifies its input '%s', which the original leaves alone "
                              "(size '%s')",
                           sc->changed_input, size);
  for (size_t i = 0; i < sc->outputs.len; i++) {
    const ks_output_check *o = &sc->outputs.items[i];
    if (o->unwritten)
      return ks_arena_printf(a, "output '%s' not written at %llu of %llu elements (still the "
                                "NaN poison; first at index %lld; size '%s')",
                             o->buffer, o->unwritten, o->count, o->first_mismatch, size);
    if (o->mismatches)
      return ks_arena_printf(a, "output '%s' differs at %llu of %llu elements; first at index "
                                "%lld: expected %s, got %s (max abs error %.3g, max rel error "
                                "%.3g; size '%s', seed %llu)",
                             o->buffer, o->mismatches, o->count, o->first_mismatch,
                             fmt_value(a, o->expected), fmt_value(a, o->got), o->max_abs_error,
                             o->max_rel_error, size, sc->seed);
  }
  for (size_t i = 0; i < sc->outputs.len; i++) {
    const ks_output_check *o = &sc->outputs.items[i];
    if (o->has_ref && o->ref_mismatches)
      return ks_arena_printf(a, "lowers precision: output '%s' is further from the fp64 "
                                "reference than the original at %llu of %llu elements: max rel "
                                "error vs the fp64 reference %.3g (original's %.3g), max abs "
                                "%.3g (original's %.3g); first at index %lld: reference %s, got "
                                "%s, original %s (size '%s', seed %llu)",
                             o->buffer, o->ref_mismatches, o->count, o->ref_cand_max_rel,
                             o->ref_base_max_rel, o->ref_cand_max_abs, o->ref_base_max_abs,
                             o->ref_first_mismatch, fmt_value(a, o->ref_value),
                             fmt_value(a, o->ref_got), fmt_value(a, o->ref_base), size, sc->seed);
  }
  if (sc->race)
    return ks_arena_printf(a, "a race: a second run with another sentinel gave a different "
                              "'%s' (size '%s')",
                           sc->race_buffer ? sc->race_buffer : "output", size);
  return NULL;
}

static ks_verdict status_verdict(ks_run_status st) {
  return st == KS_RUN_TIMEOUT ? KS_VERDICT_TIMEOUT : KS_VERDICT_CRASH;
}

static void fill_errors(ks_eval *e, const ks_seed_check *sc) {
  for (size_t i = 0; i < sc->outputs.len; i++) {
    const ks_output_check *o = &sc->outputs.items[i];
    e->max_abs_error = fmax(e->max_abs_error, o->max_abs_error);
    e->max_rel_error = fmax(e->max_rel_error, o->max_rel_error);
    if (!o->has_ref)
      continue;
    e->has_ref = true;
    e->ref_base_max_abs = fmax(e->ref_base_max_abs, o->ref_base_max_abs);
    e->ref_base_max_rel = fmax(e->ref_base_max_rel, o->ref_base_max_rel);
    e->ref_cand_max_abs = fmax(e->ref_cand_max_abs, o->ref_cand_max_abs);
    e->ref_cand_max_rel = fmax(e->ref_cand_max_rel, o->ref_cand_max_rel);
    e->ref_excused += o->ref_excused;
  }
}

static void timing_report(ks_judge *j, const ks_workload *w, const ks_run_result *r, ks_eval *e) {
  const ks_timing *t = &r->timing;
  e->timed = true;
  e->base_samples = (unsigned)t->base_ms.len;
  e->cand_samples = (unsigned)t->cand_ms.len;
  e->dropped_low_clock = t->dropped_low_clock;
  e->sm_clock_min_mhz = t->sm_clock_min_mhz;
  e->sm_clock_max_mhz = t->sm_clock_max_mhz;
  e->timing_seconds = t->seconds;
  e->base_median_ms = ks_stats_median(t->base_ms.items, t->base_ms.len);
  e->base_iqr_ms = ks_stats_iqr(t->base_ms.items, t->base_ms.len);
  e->base_rsd = ks_stats_rsd(t->base_ms.items, t->base_ms.len);
  e->bytes_min = w->bytes_min;
  e->flops = w->flops;
  if (e->base_median_ms > 0) {
    e->base_bandwidth = (double)w->bytes_min / (e->base_median_ms / 1e3);
    e->base_flop_rate = w->flops / (e->base_median_ms / 1e3);
  }
  if (j->have_ceilings) {
    e->floor_ms = (double)w->bytes_min / j->ceilings.bandwidth * 1e3;
    e->base_bw_fraction = e->base_bandwidth / j->ceilings.bandwidth;
  }
  if (!t->cand_ms.len)
    return;
  e->cand_median_ms = ks_stats_median(t->cand_ms.items, t->cand_ms.len);
  e->cand_iqr_ms = ks_stats_iqr(t->cand_ms.items, t->cand_ms.len);
  e->cand_rsd = ks_stats_rsd(t->cand_ms.items, t->cand_ms.len);
  e->speedup = e->base_median_ms / e->cand_median_ms;
  ks_stats_ratio_interval(t->base_ms.items, t->base_ms.len, t->cand_ms.items, t->cand_ms.len,
                          j->opts.seed, &e->speedup_low, &e->speedup_high);
  if (e->cand_median_ms > 0) {
    e->cand_bandwidth = (double)w->bytes_min / (e->cand_median_ms / 1e3);
    e->cand_flop_rate = w->flops / (e->cand_median_ms / 1e3);
  }
  if (j->have_ceilings) {
    e->cand_bw_fraction = e->cand_bandwidth / j->ceilings.bandwidth;
    e->cand_flop_fraction = e->cand_flop_rate / j->ceilings.flops_fp32;
  }
}

/* FAST, SAME or SLOW from the interval; SUSPICIOUS below the floor. */
static void decide(ks_judge *j, ks_arena *a, ks_eval *e) {
  /* Below 85% of the time the bytes it must move take at the measured
   * bandwidth, when the original is not: it skipped work the check could
   * not see, or the spec understates the data. */
  if (e->floor_ms > 0 && e->cand_median_ms < 0.85 * e->floor_ms &&
      e->base_median_ms >= 0.85 * e->floor_ms) {
    e->verdict = KS_VERDICT_SUSPICIOUS;
    e->reason = ks_arena_printf(a, "%.4f ms is below the physical floor of %.4f ms (%llu bytes "
                                   "at the measured %.0f GB/s)",
                                e->cand_median_ms, e->floor_ms, e->bytes_min,
                                j->ceilings.bandwidth / 1e9);
    return;
  }
  double lo = e->speedup_low, hi = e->speedup_high, m = j->opts.min_effect;
  if (lo > 1 + m)
    e->verdict = KS_VERDICT_FAST;
  else if (hi < 1 / (1 + m))
    e->verdict = KS_VERDICT_SLOW;
  else
    e->verdict = KS_VERDICT_SAME;
  e->reason = ks_arena_printf(a, "%.3fx (95%% interval %.3f-%.3f): %.4f ms -> %.4f ms", e->speedup,
                              lo, hi, e->base_median_ms, e->cand_median_ms);
}

/* ---- one evaluation ---------------------------------------------------------- */

static int run(ks_ctx *ctx, ks_judge *j, const ks_run_request *req, ks_arena *a, ks_run_result *r) {
  memset(r, 0, sizeof *r);
  return ks_worker_run(ctx, j->worker, req, a, r);
}

/* The bytes of a workload's buffers together (what must fit in L2 for a
 * back-to-back launch to find its data there). */
static unsigned long long workload_bytes(const ks_workload *w) {
  unsigned long long total = 0;
  for (size_t i = 0; i < w->buffers.len; i++) {
    unsigned long long size = ks_dtype_size(w->buffers.items[i].dtype);
    unsigned long long count = w->buffers.items[i].count;
    if (size && count > ULLONG_MAX / size)
      return ULLONG_MAX;
    total = count * size > ULLONG_MAX - total ? ULLONG_MAX : total + count * size;
  }
  return total;
}

/* Warm timing (docs/judge.md): the flushed request again with no flush and
 * no restore between samples, when asked and the timed size's data fit in
 * the L2. Reported beside the verdict, which it never changes; a failure
 * here leaves warm_timed false. */
static void time_warm(ks_ctx *ctx, ks_judge *j, const ks_subject *s, const ks_run_request *flushed,
                      ks_arena *a, ks_eval *e) {
  bool wanted = j->opts.warm == KS_WARM_ON || (j->opts.warm == KS_WARM_UNSCREENED && !j->opts.screen);
  unsigned long long bytes = workload_bytes(flushed->work);
  if (!wanted || !j->device.l2_bytes || bytes > j->device.l2_bytes)
    return;
  ks_run_request req = *flushed;
  req.timing.warm = true;
  req.ref = (ks_module){0}; /* no recheck follows a warm timing */
  ks_run_result r;
  ks_ctx quiet;
  ks_ctx_init(&quiet, ctx->prog);
  int rc = run(&quiet, j, &req, a, &r);
  if (rc || r.status != KS_RUN_OK || !r.timing.base_ms.len ||
      (req.cand.cubin && !r.timing.cand_ms.len)) {
    ks_debug(ctx, "%s: warm timing failed: %s", s->kernel,
             rc ? quiet.error : r.error ? r.error : "no samples");
    ks_ctx_release(&quiet);
    return;
  }
  ks_ctx_release(&quiet);
  e->warm_timed = true;
  e->warm_bytes = bytes;
  e->base_warm_samples = (unsigned)r.timing.base_ms.len;
  e->base_warm_median_ms = ks_stats_median(r.timing.base_ms.items, r.timing.base_ms.len);
  if (!req.cand.cubin)
    return;
  e->cand_warm_samples = (unsigned)r.timing.cand_ms.len;
  e->cand_warm_median_ms = ks_stats_median(r.timing.cand_ms.items, r.timing.cand_ms.len);
  e->warm_speedup = e->cand_warm_median_ms > 0 ? e->base_warm_median_ms / e->cand_warm_median_ms
                                               : 0;
  ks_stats_ratio_interval(r.timing.base_ms.items, r.timing.base_ms.len, r.timing.cand_ms.items,
                          r.timing.cand_ms.len, j->opts.seed ^ 0x5741524Dull,
                          &e->warm_speedup_low, &e->warm_speedup_high);
}

static void set_timing_defaults(ks_timing_options *t) {
  if (!t->min_samples)
    t->min_samples = 10;
  if (!t->max_samples)
    t->max_samples = 200;
  if (!t->target_rsd)
    t->target_rsd = 0.005;
  if (!t->max_seconds)
    t->max_seconds = 5;
  if (!t->warmup)
    t->warmup = 3;
  if (!t->min_clock_fraction)
    t->min_clock_fraction = 0.75;
}

/* Screening puts off verifying a size this large (docs/judge.md,
 * "Screening"). */
enum { SCREEN_DEFER_BYTES = 64u << 20 };

static bool deferrable(const ks_subject *s, size_t i) {
  return workload_bytes(&s->workloads[i]) >= SCREEN_DEFER_BYTES;
}

/* One size set verified: `nseeds` fresh seeds (one for captured inputs,
 * which are the same for every seed). -1: the judge itself failed; 1: the
 * size decided the verdict (WRONG, a crash: e->verdict and e->reason set);
 * 0: verified. */
static int verify_size(ks_ctx *ctx, ks_judge *j, ks_subject *s, size_t i, ks_module base,
                       ks_module cand, ks_launch_cfg launch, unsigned nseeds, ks_arena *a,
                       ks_eval *e, ks_size_report *sr) {
  bool captured = s->workloads[i].captured;
  unsigned n = captured ? 1 : nseeds;
  unsigned long long *seeds = ks_arena_alloc(a, n * sizeof *seeds);
  for (unsigned k = 0; k < n; k++)
    seeds[k] = mix(mix(j->opts.seed, i + 1), k + 1);
  ks_run_request req = {.base = base, .cand = cand, .ref = workload_ref(s, &s->workloads[i]),
                        .work = &s->workloads[i], .cand_launch = launch, .seeds = seeds,
                        .nseeds = n, .verify = true};
  ks_run_result vr;
  if (run(ctx, j, &req, a, &vr))
    return -1;
  ks_run_result *rr = &vr;
  e->base_registers = rr->base_registers;
  e->cand_registers = rr->cand_registers;
  e->base_spills = rr->base_spill_bytes;
  e->cand_spills = rr->cand_spill_bytes;
  e->base_smem = rr->base_static_smem;
  e->cand_smem = rr->cand_static_smem;
  /* The reference is the original's, not the candidate's: its failure
   * leaves nothing to judge against. */
  bool ref_failed = rr->status != KS_RUN_OK && rr->error_kernel && !strcmp(rr->error_kernel, "ref");
  if (ref_failed && !s->fp64_reference) {
    /* The reference captured inputs get by default, not one the spec
     * asks for: dropped, said once, and the size run again without it. */
    ks_warn(ctx, "%s: the fp64 reference failed on captured size '%s' (%s): captured inputs "
                 "are judged against the original alone", s->kernel, sr->size,
            rr->error ? rr->error : "failed");
    s->ref = (ks_module){0};
    req.ref = s->ref;
    if (run(ctx, j, &req, a, &vr))
      return -1;
    ref_failed = false;
  }
  if (ref_failed)
    return ks_fail(ctx, "kernel '%s': its fp64 reference failed on size '%s': %s", s->kernel,
                   sr->size, rr->error ? rr->error : "failed");
  if (rr->status != KS_RUN_OK) {
    const char *who = !rr->error_kernel                 ? ""
                      : !strcmp(rr->error_kernel, "base") ? ", in the original"
                                                         : ", in the variant";
    e->verdict = status_verdict(rr->status);
    e->reason = ks_arena_printf(a, "%s (size '%s'%s)", rr->error ? rr->error : "failed",
                                sr->size, who);
    return 1;
  }
  sr->seeds = rr->seeds;
  for (size_t k = 0; k < rr->seeds.len; k++) {
    fill_errors(e, &rr->seeds.items[k]);
    const char *why = seed_problem(a, &rr->seeds.items[k], sr->size);
    if (why) {
      e->verdict = KS_VERDICT_WRONG;
      e->reason = why;
      return 1;
    }
  }
  return 0;
}

/* A recheck after timing that found the variant's output wrong: WRONG,
 * with the reason, and true. */
static bool recheck_problem(ks_arena *a, const ks_run_result *r, ks_eval *e) {
  for (size_t i = 0; i < r->timing.recheck.len; i++) {
    const ks_output_check *o = &r->timing.recheck.items[i];
    if (o->mismatches || o->unwritten) {
      e->verdict = KS_VERDICT_WRONG;
      e->reason = ks_arena_printf(a, "the output of the last timed run is wrong on fresh inputs "
                                     "('%s' differs at %llu of %llu elements): it skips work on "
                                     "later calls or keeps results between them",
                                  o->buffer, o->mismatches + o->unwritten, o->count);
      return true;
    }
  }
  return false;
}

int ks_judge_eval(ks_ctx *ctx, ks_judge *j, ks_subject *s, const ks_candidate *c,
                  ks_arena *a, ks_eval *e) {
  memset(e, 0, sizeof *e);
  e->device = j->opts.device;
  double t0 = now_s();
  size_t timed = timed_index(s);
  unsigned nseeds = j->opts.seeds ? j->opts.seeds : 3;
  ks_timing_options timing = j->opts.timing;
  set_timing_defaults(&timing);
  ks_module cand = {0}, base = s->base;
  size_t other = 0, ndeferred = 0;
  e->compiler = s->nvcc ? "nvcc" : "nvrtc";
  e->compiler_note = s->compiler_note;
  e->machine_code_note = s->machine_code_note;

  if (c) {
    ks_compile_unit unit;
    variant_unit(a, s, c, &unit);
    ks_compile_result cr;
    if (ks_compile(ctx, &j->compiler, &unit, 1, a, &cr))
      return -1;
    if (s->nvcc && !cr.nvcc) {
      /* nvcc rejected the variant: both judged as NVRTC compiles them. */
      e->compiler = "nvrtc";
      e->compiler_note = ks_arena_printf(a, "the variant: %s; the original is judged as NVRTC "
                                            "compiles it too",
                                         cr.note ? cr.note : "not compiled by nvcc");
      base = s->base_nvrtc;
      if (!base.cubin && cr.status == KS_COMPILE_OK)
        return ks_fail(ctx, "kernel '%s': nvcc rejected a variant and there is no NVRTC "
                            "compile of the original to judge it against", s->kernel);
    }
    e->compile_log = cr.log;
    e->compile_ms = cr.ms;
    e->compile_cached = cr.cached;
    if (cr.status != KS_COMPILE_OK) {
      e->verdict = cr.status == KS_COMPILE_REFUSED ? KS_VERDICT_REFUSED : KS_VERDICT_COMPILE_ERROR;
      e->reason = cr.reason;
      goto out;
    }
    cand = (ks_module){cr.cubin, cr.cubin_size, cr.lowered[0]};

    /* Guards: the variant must run on the timed size and be checkable on
     * at least one other size, or a variant special-cased to the timed size
     * could pass. */
    if (!c->guards_hold[timed]) {
      e->verdict = KS_VERDICT_INAPPLICABLE;
      e->reason = ks_arena_printf(a, "its requires guards exclude the timed size '%s'",
                                  s->workloads[timed].size_name);
      goto out;
    }
    for (size_t i = 0; i < s->nworkloads; i++)
      other += i != timed && c->guards_hold[i];
    if (s->nworkloads > 1 && !other) {
      e->verdict = KS_VERDICT_INAPPLICABLE;
      e->reason = "its requires guards hold only on the timed size, so it cannot be checked on "
                  "any other size";
      goto out;
    }

    /* Verification: every size set its guards allow, several fresh seeds.
     * Screening (the search's quick judgement) leaves out two kinds:
     *  - the timed size, the largest and slowest to verify, when another
     *    size is checked: only the recheck of the last timed output below
     *    verifies it, on one fresh input set;
     *  - any other size whose buffers hold SCREEN_DEFER_BYTES or more (a
     *    large captured launch: 64M floats took 3-5 s to verify, nearly
     *    all of an evaluation): verified after timing, and only when the
     *    timing made the variant FAST, since nothing slower is kept as a
     *    result. Its report says 'screened' when it was not verified.
     * A winner is judged again in full. */
    for (size_t i = 0; i < s->nworkloads; i++) {
      ks_size_report *sr = ks_array_push(a, &e->sizes);
      sr->size = s->workloads[i].size_name;
      sr->timed = s->workloads[i].timed;
      sr->guards_hold = c->guards_hold[i];
      sr->launch = c->launches[i];
      if (!sr->guards_hold)
        continue;
      if (j->opts.screen && i == timed && other) {
        sr->screened = true;
        continue;
      }
      if (j->opts.screen && !j->opts.no_time && deferrable(s, i)) {
        sr->screened = true;
        ndeferred++;
        continue;
      }
      int vs = verify_size(ctx, j, s, i, base, cand, c->launches[i], nseeds, a, e, sr);
      if (vs < 0)
        return -1;
      if (vs > 0)
        goto out;
    }
  }
  if (j->opts.no_time) {
    e->verdict = c ? KS_VERDICT_SAME : KS_VERDICT_BASELINE;
    e->reason = c ? "verified on every size set; not timed (--no-time)" : "not timed (--no-time)";
    goto out;
  }

  /* Timing on the timed size, interleaved, then the last timed output
   * rechecked on fresh inputs. */
  ks_run_request req = {.base = base, .cand = cand, .work = &s->workloads[timed],
                        .ref = c ? workload_ref(s, &s->workloads[timed]) : (ks_module){0},
                        .cand_launch = c ? c->launches[timed] : s->workloads[timed].launch,
                        .time = true, .timing = timing,
                        .recheck_seed = mix(j->opts.seed, 0xC0FFEE),
                        .no_recheck = c && j->opts.screen && deferrable(s, timed)};
  ks_run_result r;
  if (run(ctx, j, &req, a, &r))
    return -1;
  if (!c) {
    e->base_registers = r.base_registers;
    e->base_spills = r.base_spill_bytes;
    e->base_smem = r.base_static_smem;
  }
  if (r.status != KS_RUN_OK) {
    e->verdict = c ? status_verdict(r.status) : KS_VERDICT_CRASH;
    e->reason = ks_arena_printf(a, "%s (while timing)", r.error ? r.error : "failed");
    if (!c)
      return ks_fail(ctx, "the original kernel failed while timing: %s", e->reason);
    goto out;
  }
  timing_report(j, &s->workloads[timed], &r, e);
  if (!c) {
    e->verdict = KS_VERDICT_BASELINE;
    e->reason = ks_arena_printf(a, "%.4f ms (IQR %.4f ms, %u samples)", e->base_median_ms,
                                e->base_iqr_ms, e->base_samples);
    time_warm(ctx, j, s, &req, a, e);
    goto out;
  }
  if (recheck_problem(a, &r, e))
    goto out;
  decide(j, a, e);
  e->recheck_screened = req.no_recheck && e->verdict != KS_VERDICT_FAST;
  if (req.no_recheck && e->verdict == KS_VERDICT_FAST) {
    /* Screening timed a large size without the recheck (downloading and
     * comparing every output twice cost most of an evaluation): now that
     * the variant is FAST, timed again with it, so that the recheck
     * follows timed launches as always. The first timing stands. */
    req.no_recheck = false;
    ks_run_result r2;
    if (run(ctx, j, &req, a, &r2))
      return -1;
    if (r2.status != KS_RUN_OK) {
      e->verdict = status_verdict(r2.status);
      e->reason = ks_arena_printf(a, "%s (while timing)", r2.error ? r2.error : "failed");
      goto out;
    }
    if (recheck_problem(a, &r2, e))
      goto out;
  }
  if (ndeferred && e->verdict == KS_VERDICT_FAST) {
    /* The large sizes screening put off, now that they matter. */
    for (size_t i = 0; i < s->nworkloads; i++) {
      ks_size_report *sr = &e->sizes.items[i];
      if (!sr->guards_hold || !sr->screened || (i == timed && other))
        continue;
      sr->screened = false;
      const char *reason = e->reason;
      int vs = verify_size(ctx, j, s, i, base, cand, c->launches[i], nseeds, a, e, sr);
      if (vs < 0)
        return -1;
      if (vs > 0)
        goto out; /* WRONG, a crash: the timing no longer matters */
      e->reason = reason;
    }
  }
  if (e->verdict == KS_VERDICT_FAST || e->verdict == KS_VERDICT_SAME ||
      e->verdict == KS_VERDICT_SLOW)
    time_warm(ctx, j, s, &req, a, e);
out:
  e->wall_seconds = now_s() - t0;
  return 0;
}

int ks_judge_replay(ks_ctx *ctx, ks_judge *j, const ks_subject *s, size_t w, ks_arena *a,
                    ks_replay *out) {
  memset(out, 0, sizeof *out);
  unsigned long long seed = mix(j->opts.seed, w + 1);
  ks_run_request req = {.base = s->base, .work = &s->workloads[w], .seeds = &seed, .nseeds = 1,
                        .replay = true};
  ks_run_result r;
  if (run(ctx, j, &req, a, &r))
    return -1;
  out->status = r.status;
  out->error = r.error;
  if (r.status != KS_RUN_OK)
    return 0;
  if (r.seeds.len)
    out->outputs = r.seeds.items[0].outputs;
  out->bit_for_bit = out->within_tolerance = true;
  for (size_t i = 0; i < out->outputs.len; i++) {
    const ks_output_check *o = &out->outputs.items[i];
    if (!o->has_capture)
      continue;
    out->compared++;
    out->bit_for_bit &= !o->capture_bit_diffs;
    out->within_tolerance &= !o->capture_mismatches;
  }
  return 0;
}
