/* Making a kernel ready to judge; see ks_target.h. */
#include "ks_target.h"

#include <string.h>

#include "ks_ctext.h"
#include "ks_specs.h"
#include "ks_variant_file.h"

int ks_target_open(ks_ctx *ctx, const ks_scan_options *opts, const char *name, ks_arena *arena,
                   ks_target *t) {
  memset(t, 0, sizeof *t);
  if (ks_scan_run(ctx, opts, &t->scan)) {
    ks_scan_release(&t->scan);
    return -1;
  }
  t->have_scan = true;
  const ks_kernel *k;
  if (ks_scan_lookup(ctx, &t->scan, name, &k))
    return -1;
  return ks_target_open_kernel(ctx, opts, NULL, k, arena, t);
}

int ks_target_open_kernel(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                          const ks_kernel *k, ks_arena *arena, ks_target *t) {
  return ks_target_open_captured(ctx, opts, scan, k, NULL, false, arena, t);
}

/* The slice of instance `instance`, checked for what the judge can run. */
static int slice(ks_ctx *ctx, const ks_scan_options *opts, const ks_kernel *k,
                 const char *instance, ks_arena *arena, ks_target *t) {
  if (ks_slice_kernel(ctx, opts, &t->scan, k, instance, arena, &t->slice)) {
    ks_fail_prefix(ctx, "cannot slice the kernel");
    return -1;
  }
  if (!t->slice.name_expressions.len)
    return ks_fail(ctx, "kernel '%s' is a template with no known instance: give one with an "
                        "'instance' line in its spec",
                   k->qualified_name);
  if (t->slice.options.len)
    return ks_fail(ctx, "kernel '%s' needs %s to compile (it launches kernels from the device); "
                        "the judge cannot run such kernels yet",
                   k->qualified_name, t->slice.options.items[0]);
  return 0;
}

/* The judge's view of a target that is sliced and has its workloads. */
static void fill_subject(ks_target *t) {
  const ks_kernel *k = t->kernel;
  if (!t->site && k->launches.len)
    t->site = &t->scan.launches.items[k->launches.items[0]];
  t->subject.kernel = k->qualified_name;
  t->subject.slice_source = t->slice.source;
  t->subject.name_expression = t->slice.name_expressions.items[0];
  t->subject.options = (const char *const *)t->slice.codegen.items;
  t->subject.noptions = t->slice.codegen.len;
  t->subject.build_known = t->slice.compile_command;
  t->subject.workloads = t->workloads;
  t->subject.nworkloads = t->nworkloads;
}

/* A kernel with no spec, from its captured launches alone. */
static int open_from_capture(ks_ctx *ctx, const ks_scan_options *opts, const ks_kernel *k,
                             ks_capture *cap, const char *instance, ks_arena *arena,
                             ks_target *t) {
  size_t *idx;
  const char *targs;
  if (!ks_capture_launches_of(arena, cap, &t->scan, k, instance, &idx, &targs))
    return ks_fail(ctx, "%s:%u: kernel '%s' has no spec and %s holds no launch of it: write a "
                        "spec (docs/spec.md) or capture one with kernelsmith-cc profile "
                        "--capture %s -- YOUR_APP",
                   k->loc.file, k->loc.line, k->qualified_name, cap->path, k->name);
  if (slice(ctx, opts, k, k->is_template ? targs : NULL, arena, t))
    return -1;
  t->spec.kernel = k->qualified_name;
  t->spec.file = cap->path;
  t->spec.instance = targs;
  t->spec.atol = t->spec.rtol = -1;
  t->spec.seeds = 1;
  if (ks_target_add_captures(ctx, t, cap, targs, arena))
    return -1;
  if (!t->nworkloads)
    return ks_fail(ctx, "kernel '%s': none of its launches in %s can serve as inputs (the "
                        "warnings above say why)",
                   k->qualified_name, cap->path);
  return 0;
}

int ks_target_open_captured(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                            const ks_kernel *k, ks_capture *cap, bool capture_only,
                            ks_arena *arena, ks_target *t) {
  if (scan) {
    memset(t, 0, sizeof *t);
    t->scan = *scan; /* borrowed: have_scan stays false */
  }
  t->kernel = k;
  int found = capture_only && cap ? 1 : ks_spec_find(ctx, &t->scan, k, arena, &t->spec);
  if (found < 0)
    return -1;
  if (found > 0 && cap) {
    memset(&t->spec, 0, sizeof t->spec);
    if (open_from_capture(ctx, opts, k, cap, NULL, arena, t))
      return -1;
    goto subject;
  }
  if (found > 0)
    return ks_fail(ctx, "%s:%u: kernel '%s' has no spec: add a 'kernelsmith:' comment above it "
                        "or a %s.kspec file beside it (docs/spec.md), or capture its inputs "
                        "with kernelsmith-cc profile --capture %s -- YOUR_APP",
                   k->loc.file, k->loc.line, k->qualified_name, k->loc.file, k->name);
  t->have_spec = true;
  if (ks_spec_check(ctx, &t->spec, k))
    return -1;

  /* The instance the spec runs: its `instance` line, or the kernel's one
   * instantiation at its launch sites. */
  const char *instance = NULL;
  if (k->is_template && !(instance = ks_spec_instance(ctx, &t->spec, k, arena)))
    return -1;
  if (slice(ctx, opts, k, instance, arena, t))
    return -1;

  /* The launch configuration comes from the spec or from the first launch
   * site whose expressions evaluate; the first site's error is the one
   * reported when none does. */
  t->nworkloads = t->spec.sizes.len;
  t->workloads = ks_arena_alloc(arena, (t->nworkloads ? t->nworkloads : 1) * sizeof *t->workloads);
  size_t nsites = k->launches.len ? k->launches.len : 1;
  char first_error[sizeof ctx->error] = "";
  for (size_t s = 0; s < nsites; s++) {
    t->site = k->launches.len ? &t->scan.launches.items[k->launches.items[s]] : NULL;
    size_t i = 0;
    while (i < t->nworkloads && !ks_spec_resolve(ctx, &t->spec, k, t->site, i, arena, &t->workloads[i]))
      i++;
    if (i == t->nworkloads) {
      first_error[0] = '\0';
      break;
    }
    if (!first_error[0])
      memcpy(first_error, ctx->error, sizeof first_error);
  }
  if (first_error[0]) {
    memcpy(ctx->error, first_error, sizeof first_error);
    return -1;
  }
  if (cap && ks_target_add_captures(ctx, t, cap, instance, arena))
    return -1;

subject:
  fill_subject(t);

  /* `reference fp64`: the slice's double twin, made here where the slice
   * is; a kernel that has none makes the spec wrong, and says why. */
  if (t->spec.fp64_reference) {
    t->subject.fp64_reference = true;
    t->subject.ref_source = ks_slice_to_fp64(ctx, arena, t->slice.source);
    if (t->subject.ref_source)
      t->subject.ref_name_expression =
          ks_slice_to_fp64(ctx, arena, t->subject.name_expression);
    if (!t->subject.ref_name_expression) {
      const char *why = ks_arena_strdup(arena, ctx->error);
      return ks_fail(ctx, "%s:%u: kernel '%s': 'reference fp64' cannot be honoured: %s (remove "
                          "the line to compare with the original alone)",
                     t->spec.file, t->spec.line, k->qualified_name, why);
    }
    return 0;
  }
  if (!t->spec.native_reference)
    ks_target_capture_reference(ctx, t, arena);
  return 0;
}

void ks_target_capture_reference(ks_ctx *ctx, ks_target *t, ks_arena *arena) {
  /* Captured inputs get the twin by default (docs/judge.md, "Captured
   * workloads"): made now, for captures added later too; compiled only
   * where there are captured workloads (ks_judge_prepare). Without one,
   * the reason, which the judge says once. */
  ks_subject *s = &t->subject;
  s->capture_reference = true;
  s->ref_refusal = NULL;
  char saved[sizeof ctx->error];
  memcpy(saved, ctx->error, sizeof saved);
  s->ref_source = ks_slice_to_fp64(ctx, arena, t->slice.source);
  s->ref_name_expression =
      s->ref_source ? ks_slice_to_fp64(ctx, arena, s->name_expression) : NULL;
  if (!s->ref_name_expression) {
    s->ref_source = NULL;
    s->ref_refusal = ks_arena_strdup(arena, ctx->error);
  }
  memcpy(ctx->error, saved, sizeof saved); /* a note, not this call's failure */
}

int ks_target_open_capture_instance(ks_ctx *ctx, const ks_scan_options *opts,
                                    const ks_scan *scan, const ks_kernel *k, ks_capture *cap,
                                    const char *instance, ks_arena *arena, ks_target *t) {
  memset(t, 0, sizeof *t);
  t->scan = *scan;
  t->kernel = k;
  if (open_from_capture(ctx, opts, k, cap, instance, arena, t))
    return -1;
  fill_subject(t);
  return 0;
}

/* ---- from the launch sites alone (rewrite with neither spec nor capture) */

/* The stand-in workload's parameters: a buffer per pointer with its
 * pointee's type and a role from its const (the rules read types and
 * roles: fast_math's outputs, smem_histogram's bins), no length; scalars
 * with no value. */
static void stand_in_args(ks_arena *a, const ks_kernel *k, const char *targs, ks_workload *w) {
  ks_strings vals = {0};
  if (targs)
    ks_ctext_split(a, targs, targs + strlen(targs), &vals);
  const char **names = ks_arena_alloc(a, (k->tparams.len + 1) * sizeof *names);
  const char **values = ks_arena_alloc(a, (k->tparams.len + 1) * sizeof *values);
  size_t nt = 0;
  for (size_t i = 0; i < k->tparams.len && i < vals.len; i++) {
    names[nt] = k->tparams.items[i].name;
    values[nt++] = vals.items[i];
  }
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    ks_warg *arg = ks_array_push(a, &w->args);
    memset(arg, 0, sizeof *arg);
    if (p->kind != KS_PARAM_POINTER) {
      arg->kind = KS_ARG_BYTES; /* no value: ks_rule_eval leaves it unbound */
      continue;
    }
    const char *c = p->pointee;
    if (c && nt)
      c = ks_ctext_substitute(a, c, names, values, nt);
    ks_wbuffer *b = ks_array_push(a, &w->buffers);
    memset(b, 0, sizeof *b);
    b->name = p->name;
    if (!c || !ks_dtype_from_param(c, p->canon_pointee, &b->dtype))
      b->dtype = KS_DT_NONE;
    bool is_const = p->pointee_const || (c && !strncmp(c, "const ", 6));
    b->role = is_const ? KS_ROLE_IN : KS_ROLE_INOUT;
    b->atol = b->rtol = -1;
    if (b->dtype != KS_DT_NONE) /* the judge's defaults by type */
      ks_dtype_tolerance(b->dtype, &b->atol, &b->rtol);
    arg->kind = KS_ARG_BUFFER;
    arg->buffer = w->buffers.len - 1;
    arg->length_unknown = true;
  }
}

int ks_target_open_sites(ks_ctx *ctx, const ks_scan_options *opts, const ks_kernel *k,
                         ks_arena *arena, ks_target *t) {
  t->kernel = k;
  memset(&t->spec, 0, sizeof t->spec);
  t->spec.kernel = k->qualified_name;
  t->spec.file = k->loc.file;
  t->spec.line = k->loc.line;
  t->spec.atol = t->spec.rtol = -1;
  t->spec.seeds = 1;
  const char *instance = NULL;
  if (k->is_template && !(instance = ks_spec_instance(ctx, &t->spec, k, arena)))
    return -1;
  t->spec.instance = instance;
  if (slice(ctx, opts, k, instance, arena, t))
    return -1;

  ks_workload *w = ks_arena_alloc(arena, sizeof *w);
  memset(w, 0, sizeof *w);
  w->size_name = "launch site";
  w->timed = true;
  stand_in_args(arena, k, instance, w);
  /* The launch: the site where most of grid, block and smem evaluate (the
   * first of those), each part that does not said why. */
  int best = 4;
  for (size_t s = 0; s < k->launches.len && best; s++) {
    const ks_launch *site = &t->scan.launches.items[k->launches.items[s]];
    ks_launch_cfg cfg;
    const char *why[3];
    memset(&cfg, 0, sizeof cfg);
    int failed = ks_spec_site_launch_parts(ctx, k, site, arena, &cfg, why);
    if (failed >= best)
      continue;
    best = failed;
    t->site = site;
    w->launch = cfg;
    for (int i = 0; i < 3; i++)
      t->launch_unknown[i] = why[i];
  }
  if (best == 4)
    for (int i = 0; i < 3; i++)
      t->launch_unknown[i] = "the kernel has no launch site under the paths scanned";
  for (int d = 0; d < 3; d++) {
    if (t->launch_unknown[0])
      w->launch.grid[d] = 1;
    if (t->launch_unknown[1])
      w->launch.block[d] = 1;
  }
  if (t->launch_unknown[2])
    w->launch.smem = 0;
  t->workloads = w;
  t->nworkloads = 1;
  t->sites_only = true;
  fill_subject(t);
  return 0;
}

void ks_target_close(ks_target *t) {
  if (t->have_scan)
    ks_scan_release(&t->scan);
  memset(t, 0, sizeof *t);
}

int ks_target_candidate(ks_ctx *ctx, const ks_target *t, const ks_variant *v, bool is_template,
                        ks_arena *arena, ks_candidate *out) {
  memset(out, 0, sizeof *out);
  out->variant = v;
  out->name_expression =
      ks_variant_name_expression(arena, v, is_template, t->subject.name_expression);
  ks_launch_cfg *launches = ks_arena_alloc(arena, (t->nworkloads + 1) * sizeof *launches);
  bool *hold = ks_arena_alloc(arena, (t->nworkloads + 1) * sizeof *hold);
  for (size_t i = 0; i < t->nworkloads; i++)
    if (ks_variant_resolve(ctx, v, t->kernel, &t->workloads[i], &launches[i], &hold[i])) {
      ks_fail_prefix(ctx, v->file ? v->file : "variant");
      return -1;
    }
  out->launches = launches;
  out->guards_hold = hold;
  return 0;
}
