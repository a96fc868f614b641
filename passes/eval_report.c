/* Evaluations as text and as JSON; see ks_eval_report.h. cJSON stays here. */
#include "ks_eval_report.h"
#include "ks_eval_json.h"

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

static const char *compiler_name(const char *compiler) {
  return !strcmp(compiler, "nvrtc") ? "NVRTC" : compiler;
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
      fprintf(out, "compile   %s%s%s in %.0f ms%s; registers %d (original %d), spills %d bytes\n",
              e->verdict == KS_VERDICT_COMPILE_ERROR ? "failed" : "ok",
              e->compiler ? " by " : "", e->compiler ? compiler_name(e->compiler) : "",
              e->compile_ms, e->compile_cached ? " (cached)" : "", e->cand_registers,
              e->base_registers, e->cand_spills);
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
    if (e->has_ref && e->ref_excused)
      fprintf(out, "          %llu element%s beyond the tolerance against the original, no less "
                   "accurate against fp64: accepted\n",
              e->ref_excused, e->ref_excused == 1 ? "" : "s");
  }
  if (!c && e->compiler)
    fprintf(out, "compile   the original by %s\n", compiler_name(e->compiler));
  if (e->compiler_note)
    fprintf(out, "note      %s\n", e->compiler_note);
  if (e->machine_code_note)
    fprintf(out, "note      %s\n", e->machine_code_note);
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
  if (e->warm_timed) {
    /* The program's view when it launches the kernel back to back; the
     * verdict stays the flushed timing's. */
    fprintf(out, "warm      (data fit in L2: %.1f of %.1f MB, no flush between samples): ",
            (double)e->warm_bytes / 1e6, (double)j->device.l2_bytes / 1e6);
    if (c)
      fprintf(out, "%.3fx, 95%% interval %.3f-%.3f; original %.4f ms, variant %.4f ms\n",
              e->warm_speedup, e->warm_speedup_low, e->warm_speedup_high, e->base_warm_median_ms,
              e->cand_warm_median_ms);
    else
      fprintf(out, "original %.4f ms (%u samples)\n", e->base_warm_median_ms, e->base_warm_samples);
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
  ks_json_add_u64(root, "seed", j->opts.seed);
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
  ks_eval_json_add(root, e, c ? KS_EVAL_JSON_VARIANT : 0);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return ks_fail(ctx, "out of memory while writing JSON");
  int rc = fputs(text, out) < 0 || fputc('\n', out) == EOF ? ks_fail(ctx, "cannot write JSON") : 0;
  free(text);
  return rc;
}
