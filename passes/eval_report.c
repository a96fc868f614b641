/* Evaluations as text and as JSON; see ks_eval_report.h. cJSON stays here. */
#include "ks_eval_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *size_vars(ks_arena *a, const ks_target *t, size_t i) {
  const ks_size_set *s = &t->spec.sizes.items[i];
  const char *out = "";
  for (size_t k = 0; k < s->vars.len; k++)
    out = ks_arena_printf(a, "%s%s%s = %s", out, k ? ", " : "", s->vars.items[k].name,
                          s->vars.items[k].value);
  return out;
}

static void print_launch(FILE *out, const ks_launch_cfg *l) {
  fprintf(out, "<<<(%u, %u, %u), (%u, %u, %u), %llu>>>", l->grid[0], l->grid[1], l->grid[2],
          l->block[0], l->block[1], l->block[2], l->smem);
}

void ks_eval_print(FILE *out, const ks_judge *j, const ks_target *t, const ks_candidate *c,
                   const ks_eval *e, bool color) {
  ks_arena a = KS_ARENA_INIT;
  const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";
  const char *verdict_color = !color ? ""
                              : e->verdict == KS_VERDICT_FAST ? "\033[1;32m"
                              : e->verdict == KS_VERDICT_SAME || e->verdict == KS_VERDICT_BASELINE
                                  ? "\033[1m"
                                  : "\033[1;31m";
  const ks_kernel *k = t->kernel;
  fprintf(out, "kernel    %s (%s:%u), instance %s\n", k->qualified_name, k->loc.file, k->loc.line,
          t->subject.name_expression);
  fprintf(out, "device    %s (sm_%d%d, %d SMs), driver %s", j->device.name, j->device.cc_major,
          j->device.cc_minor, j->device.sm_count, *j->device.driver ? j->device.driver : "?");
  if (j->have_ceilings)
    fprintf(out, "; measured %.2f TB/s copy, %.1f TFLOP/s fp32", j->ceilings.bandwidth / 1e12,
            j->ceilings.flops_fp32 / 1e12);
  fputc('\n', out);
  if (c) {
    const ks_variant *v = c->variant;
    fprintf(out, "variant   %s: %s", v->file ? v->file : "?", c->name_expression);
    if (v->grid || v->block || v->smem)
      fprintf(out, " (launch%s%s%s%s%s%s)", v->grid ? " grid " : "", v->grid ? v->grid : "",
              v->block ? " block " : "", v->block ? v->block : "", v->smem ? " smem " : "",
              v->smem ? v->smem : "");
    for (size_t i = 0; i < v->requires.len; i++)
      fprintf(out, "%s%s", i ? ", " : " requires ", v->requires.items[i]);
    fputc('\n', out);
    if (e->verdict != KS_VERDICT_REFUSED)
      fprintf(out, "compile   %s in %.0f ms%s; registers %d (original %d), spills %d bytes\n",
              e->verdict == KS_VERDICT_COMPILE_ERROR ? "failed" : "ok", e->compile_ms,
              e->compile_cached ? " (cached)" : "", e->cand_registers, e->base_registers,
              e->cand_spills);
    for (size_t i = 0; i < e->sizes.len; i++) {
      const ks_size_report *s = &e->sizes.items[i];
      fprintf(out, "%s %-10s %s: ", i ? "         " : "verify   ", s->size, size_vars(&a, t, i));
      if (!s->guards_hold)
        fprintf(out, "guards do not hold (the original runs)\n");
      else if (!s->seeds.len)
        fprintf(out, "not reached\n");
      else {
        fprintf(out, "%zu seed%s ", s->seeds.len, s->seeds.len == 1 ? "" : "s");
        print_launch(out, &s->launch);
        fputc('\n', out);
      }
    }
    if (e->has_ref)
      fprintf(out, "accuracy  vs fp64: original max rel %.3g (abs %.3g), variant max rel %.3g "
                   "(abs %.3g)\n",
              e->ref_base_max_rel, e->ref_base_max_abs, e->ref_cand_max_rel, e->ref_cand_max_abs);
  }
  if (e->timed) {
    fprintf(out, "time      original %.4f ms (IQR %.4f, %u samples", e->base_median_ms,
            e->base_iqr_ms, e->base_samples);
    if (e->dropped_low_clock)
      fprintf(out, ", %u dropped at low clock", e->dropped_low_clock);
    fprintf(out, ")\n");
    if (c)
      fprintf(out, "          variant  %.4f ms (IQR %.4f, %u samples): %.3fx, 95%% interval "
                   "%.3f-%.3f\n",
              e->cand_median_ms, e->cand_iqr_ms, e->cand_samples, e->speedup, e->speedup_low,
              e->speedup_high);
    if (e->bytes_min && j->have_ceilings)
      fprintf(out, "roofline  %llu bytes: original %.0f GB/s (%.0f%%)%s%.0f GB/s (%.0f%%) of the "
                   "measured %.0f GB/s; floor %.4f ms\n",
              e->bytes_min, e->base_bandwidth / 1e9, 100 * e->base_bw_fraction,
              c ? ", variant " : "", c ? e->cand_bandwidth / 1e9 : 0.0,
              c ? 100 * e->cand_bw_fraction : 0.0, j->ceilings.bandwidth / 1e9, e->floor_ms);
    if (e->flops > 0)
      fprintf(out, "flops     %.3g per launch: original %.2f TFLOP/s%s%.2f TFLOP/s\n", e->flops,
              e->base_flop_rate / 1e12, c ? ", variant " : "", c ? e->cand_flop_rate / 1e12 : 0.0);
    if (e->sm_clock_max_mhz > 0)
      fprintf(out, "clocks    SM %.0f-%.0f MHz over the kept samples\n", e->sm_clock_min_mhz,
              e->sm_clock_max_mhz);
  }
  fprintf(out, "%sverdict%s   %s%s%s  %s\n", bold, reset, verdict_color, ks_verdict_name(e->verdict),
          reset, e->reason ? e->reason : "");
  ks_arena_release(&a);
}

/* ---- JSON ------------------------------------------------------------------- */

static void num(cJSON *o, const char *key, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static void str(cJSON *o, const char *key, const char *v) {
  if (v)
    cJSON_AddStringToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static cJSON *launch_json(const ks_launch_cfg *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON *g = cJSON_AddArrayToObject(o, "grid"), *b = cJSON_AddArrayToObject(o, "block");
  for (int i = 0; i < 3; i++) {
    cJSON_AddItemToArray(g, cJSON_CreateNumber(l->grid[i]));
    cJSON_AddItemToArray(b, cJSON_CreateNumber(l->block[i]));
  }
  num(o, "smem", (double)l->smem);
  return o;
}

static cJSON *checks_json(const ks_output_checks *c) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < c->len; i++) {
    const ks_output_check *o = &c->items[i];
    cJSON *j = cJSON_CreateObject();
    str(j, "buffer", o->buffer);
    num(j, "count", (double)o->count);
    num(j, "mismatches", (double)o->mismatches);
    num(j, "unwritten", (double)o->unwritten);
    num(j, "max_abs_error", o->max_abs_error);
    num(j, "max_rel_error", o->max_rel_error);
    num(j, "first_mismatch", (double)o->first_mismatch);
    if (o->first_mismatch >= 0) {
      num(j, "expected", o->expected);
      num(j, "got", o->got);
    }
    if (o->has_ref) {
      cJSON *r = cJSON_AddObjectToObject(j, "fp64_reference");
      num(r, "original_max_abs_error", o->ref_base_max_abs);
      num(r, "original_max_rel_error", o->ref_base_max_rel);
      num(r, "variant_max_abs_error", o->ref_cand_max_abs);
      num(r, "variant_max_rel_error", o->ref_cand_max_rel);
      num(r, "mismatches", (double)o->ref_mismatches);
      num(r, "first_mismatch", (double)o->ref_first_mismatch);
      if (o->ref_first_mismatch >= 0) {
        num(r, "reference", o->ref_value);
        num(r, "got", o->ref_got);
        num(r, "original", o->ref_base);
      }
    } else {
      cJSON_AddNullToObject(j, "fp64_reference");
    }
    cJSON_AddItemToArray(a, j);
  }
  return a;
}

int ks_eval_json(ks_ctx *ctx, FILE *out, const ks_judge *j, const ks_target *t,
                 const ks_candidate *c, const ks_eval *e) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.eval");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON *k = cJSON_AddObjectToObject(root, "kernel");
  str(k, "name", t->kernel->qualified_name);
  str(k, "file", t->kernel->loc.file);
  num(k, "line", t->kernel->loc.line);
  str(k, "instance", t->subject.name_expression);
  str(k, "source_hash", t->kernel->source_hash);
  cJSON *d = cJSON_AddObjectToObject(root, "device");
  str(d, "name", j->device.name);
  str(d, "arch", j->compiler.arch);
  num(d, "sm_count", j->device.sm_count);
  num(d, "memory_bytes", (double)j->device.memory_bytes);
  num(d, "l2_bytes", (double)j->device.l2_bytes);
  str(d, "driver", j->device.driver);
  num(d, "cuda_driver_version", j->device.driver_version);
  str(d, "uuid", j->device.uuid);
  num(d, "sm_clock_max_mhz", j->device.sm_clock_max_mhz);
  if (j->have_ceilings) {
    num(d, "measured_bandwidth", j->ceilings.bandwidth);
    num(d, "measured_flops_fp32", j->ceilings.flops_fp32);
  }
  num(root, "seed", (double)j->opts.seed);
  if (c) {
    cJSON *v = cJSON_AddObjectToObject(root, "variant");
    str(v, "file", c->variant->file);
    str(v, "kernel", c->name_expression);
    str(v, "grid", c->variant->grid);
    str(v, "block", c->variant->block);
    str(v, "smem", c->variant->smem);
    cJSON *req = cJSON_AddArrayToObject(v, "requires");
    for (size_t i = 0; i < c->variant->requires.len; i++)
      cJSON_AddItemToArray(req, cJSON_CreateString(c->variant->requires.items[i]));
  }
  str(root, "verdict", ks_verdict_name(e->verdict));
  str(root, "reason", e->reason);
  cJSON *comp = cJSON_AddObjectToObject(root, "compile");
  num(comp, "ms", e->compile_ms);
  cJSON_AddBoolToObject(comp, "cached", e->compile_cached);
  num(comp, "original_registers", e->base_registers);
  num(comp, "variant_registers", e->cand_registers);
  num(comp, "original_spill_bytes", e->base_spills);
  num(comp, "variant_spill_bytes", e->cand_spills);
  num(comp, "original_static_smem", e->base_smem);
  num(comp, "variant_static_smem", e->cand_smem);
  cJSON *sizes = cJSON_AddArrayToObject(root, "sizes");
  for (size_t i = 0; i < e->sizes.len; i++) {
    const ks_size_report *s = &e->sizes.items[i];
    cJSON *o = cJSON_CreateObject();
    str(o, "name", s->size);
    cJSON_AddBoolToObject(o, "timed", s->timed);
    cJSON_AddBoolToObject(o, "guards_hold", s->guards_hold);
    cJSON_AddItemToObject(o, "launch", launch_json(&s->launch));
    cJSON *seeds = cJSON_AddArrayToObject(o, "seeds");
    for (size_t k2 = 0; k2 < s->seeds.len; k2++) {
      const ks_seed_check *sc = &s->seeds.items[k2];
      cJSON *x = cJSON_CreateObject();
      num(x, "seed", (double)sc->seed);
      cJSON_AddItemToObject(x, "outputs", checks_json(&sc->outputs));
      cJSON_AddBoolToObject(x, "race", sc->race);
      cJSON_AddBoolToObject(x, "original_nondeterministic", sc->base_nondeterministic);
      str(x, "out_of_bounds_buffer", sc->canary_buffer);
      str(x, "changed_input", sc->changed_input);
      cJSON_AddItemToArray(seeds, x);
    }
    cJSON_AddItemToArray(sizes, o);
  }
  num(root, "max_abs_error", e->max_abs_error);
  num(root, "max_rel_error", e->max_rel_error);
  if (e->has_ref) {
    cJSON *r = cJSON_AddObjectToObject(root, "fp64_reference");
    num(r, "original_max_abs_error", e->ref_base_max_abs);
    num(r, "original_max_rel_error", e->ref_base_max_rel);
    num(r, "variant_max_abs_error", e->ref_cand_max_abs);
    num(r, "variant_max_rel_error", e->ref_cand_max_rel);
  } else {
    cJSON_AddNullToObject(root, "fp64_reference");
  }
  if (e->timed) {
    cJSON *tm = cJSON_AddObjectToObject(root, "timing");
    num(tm, "original_median_ms", e->base_median_ms);
    num(tm, "original_iqr_ms", e->base_iqr_ms);
    num(tm, "original_rsd", e->base_rsd);
    num(tm, "original_samples", e->base_samples);
    if (c) {
      num(tm, "variant_median_ms", e->cand_median_ms);
      num(tm, "variant_iqr_ms", e->cand_iqr_ms);
      num(tm, "variant_rsd", e->cand_rsd);
      num(tm, "variant_samples", e->cand_samples);
      num(tm, "speedup", e->speedup);
      num(tm, "speedup_low", e->speedup_low);
      num(tm, "speedup_high", e->speedup_high);
    }
    num(tm, "dropped_low_clock", e->dropped_low_clock);
    num(tm, "sm_clock_min_mhz", e->sm_clock_min_mhz);
    num(tm, "sm_clock_max_mhz", e->sm_clock_max_mhz);
    num(tm, "seconds", e->timing_seconds);
    cJSON *rf = cJSON_AddObjectToObject(root, "roofline");
    num(rf, "bytes_min", (double)e->bytes_min);
    num(rf, "floor_ms", e->floor_ms);
    num(rf, "original_bandwidth", e->base_bandwidth);
    num(rf, "original_bandwidth_fraction", e->base_bw_fraction);
    num(rf, "flops", e->flops);
    num(rf, "original_flop_rate", e->base_flop_rate);
    if (c) {
      num(rf, "variant_bandwidth", e->cand_bandwidth);
      num(rf, "variant_bandwidth_fraction", e->cand_bw_fraction);
      num(rf, "variant_flop_rate", e->cand_flop_rate);
      num(rf, "variant_flop_fraction", e->cand_flop_fraction);
    }
  }
  num(root, "wall_seconds", e->wall_seconds);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return ks_fail(ctx, "out of memory while writing JSON");
  int rc = fputs(text, out) < 0 || fputc('\n', out) == EOF ? ks_fail(ctx, "cannot write JSON") : 0;
  free(text);
  return rc;
}
