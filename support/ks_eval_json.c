/* An evaluation as JSON members and back; see ks_eval_json.h. The member
 * names are those of docs/judge.md ("JSON"), written by `check --json` and
 * kept by the store, so one reader understands both. */
#include "ks_eval_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *ks_verdict_name(ks_verdict v) {
  static const char *const names[] = {"FAST",       "SAME",         "SLOW",    "WRONG",
                                      "SUSPICIOUS", "REFUSED",      "COMPILE_ERROR",
                                      "CRASH",      "TIMEOUT",      "INAPPLICABLE",
                                      "BASELINE"};
  return (size_t)v < sizeof names / sizeof *names ? names[v] : "?";
}

/* ---- writing ------------------------------------------------------------- */

/* JSON has no NaN or infinity: they are written as null. */
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

void ks_json_add_u64(cJSON *obj, const char *key, unsigned long long v) {
  if (v <= (1ull << 53)) {
    cJSON_AddNumberToObject(obj, key, (double)v);
  } else {
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", v);
    cJSON_AddStringToObject(obj, key, digits);
  }
}

static cJSON *launch_json(const ks_launch_cfg *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON *g = cJSON_AddArrayToObject(o, "grid"), *b = cJSON_AddArrayToObject(o, "block");
  for (int i = 0; i < 3; i++) {
    cJSON_AddItemToArray(g, cJSON_CreateNumber(l->grid[i]));
    cJSON_AddItemToArray(b, cJSON_CreateNumber(l->block[i]));
  }
  ks_json_add_u64(o, "smem", l->smem);
  return o;
}

static void output_ref_json(cJSON *j, const ks_output_check *o, bool complete) {
  if (!o->has_ref && !complete) {
    cJSON_AddNullToObject(j, "fp64_reference");
    return;
  }
  cJSON *r = cJSON_AddObjectToObject(j, "fp64_reference");
  if (complete)
    cJSON_AddBoolToObject(r, "ran", o->has_ref);
  num(r, "original_max_abs_error", o->ref_base_max_abs);
  num(r, "original_max_rel_error", o->ref_base_max_rel);
  num(r, "variant_max_abs_error", o->ref_cand_max_abs);
  num(r, "variant_max_rel_error", o->ref_cand_max_rel);
  ks_json_add_u64(r, "mismatches", o->ref_mismatches);
  ks_json_add_u64(r, "excused", o->ref_excused);
  num(r, "first_mismatch", (double)o->ref_first_mismatch);
  if (o->ref_first_mismatch >= 0 || complete) {
    num(r, "reference", o->ref_value);
    num(r, "got", o->ref_got);
    num(r, "original", o->ref_base);
  }
}

static cJSON *checks_json(const ks_output_checks *c, bool complete) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < c->len; i++) {
    const ks_output_check *o = &c->items[i];
    cJSON *j = cJSON_CreateObject();
    str(j, "buffer", o->buffer);
    ks_json_add_u64(j, "count", o->count);
    ks_json_add_u64(j, "mismatches", o->mismatches);
    ks_json_add_u64(j, "unwritten", o->unwritten);
    num(j, "max_abs_error", o->max_abs_error);
    num(j, "max_rel_error", o->max_rel_error);
    num(j, "first_mismatch", (double)o->first_mismatch);
    if (o->first_mismatch >= 0 || complete) {
      num(j, "expected", o->expected);
      num(j, "got", o->got);
    }
    output_ref_json(j, o, complete);
    cJSON_AddItemToArray(a, j);
  }
  return a;
}

static cJSON *seed_json(const ks_seed_check *sc, bool complete) {
  cJSON *x = cJSON_CreateObject();
  ks_json_add_u64(x, "seed", sc->seed);
  cJSON_AddItemToObject(x, "outputs", checks_json(&sc->outputs, complete));
  cJSON_AddBoolToObject(x, "race", sc->race);
  str(x, "race_buffer", sc->race_buffer);
  cJSON_AddBoolToObject(x, "original_nondeterministic", sc->base_nondeterministic);
  str(x, "out_of_bounds_buffer", sc->canary_buffer);
  cJSON_AddBoolToObject(x, "out_of_bounds_before", sc->canary_before);
  str(x, "original_out_of_bounds_buffer", sc->base_canary_buffer);
  cJSON_AddBoolToObject(x, "original_out_of_bounds_before", sc->base_canary_before);
  str(x, "changed_input", sc->changed_input);
  return x;
}

static void timing_json(cJSON *root, const ks_eval *e, bool variant, bool complete) {
  cJSON *tm = cJSON_AddObjectToObject(root, "timing");
  if (complete)
    cJSON_AddBoolToObject(tm, "timed", e->timed);
  num(tm, "original_median_ms", e->base_median_ms);
  num(tm, "original_iqr_ms", e->base_iqr_ms);
  num(tm, "original_rsd", e->base_rsd);
  num(tm, "original_samples", e->base_samples);
  if (variant) {
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
  if (e->recheck_screened)
    cJSON_AddBoolToObject(tm, "recheck_screened", true);
  cJSON *rf = cJSON_AddObjectToObject(root, "roofline");
  ks_json_add_u64(rf, "bytes_min", e->bytes_min);
  num(rf, "floor_ms", e->floor_ms);
  num(rf, "original_bandwidth", e->base_bandwidth);
  num(rf, "original_bandwidth_fraction", e->base_bw_fraction);
  num(rf, "flops", e->flops);
  num(rf, "original_flop_rate", e->base_flop_rate);
  if (variant) {
    num(rf, "variant_bandwidth", e->cand_bandwidth);
    num(rf, "variant_bandwidth_fraction", e->cand_bw_fraction);
    num(rf, "variant_flop_rate", e->cand_flop_rate);
    num(rf, "variant_flop_fraction", e->cand_flop_fraction);
  }
}

/* Warm timing: null when it did not run (the data did not fit in L2, or
 * it was not asked for). */
static void warm_json(cJSON *root, const ks_eval *e, bool variant, bool complete) {
  if (!e->warm_timed && !complete) {
    cJSON_AddNullToObject(root, "warm");
    return;
  }
  cJSON *w = cJSON_AddObjectToObject(root, "warm");
  if (complete)
    cJSON_AddBoolToObject(w, "timed", e->warm_timed);
  ks_json_add_u64(w, "bytes", e->warm_bytes);
  num(w, "original_median_ms", e->base_warm_median_ms);
  num(w, "original_samples", e->base_warm_samples);
  if (variant) {
    num(w, "variant_median_ms", e->cand_warm_median_ms);
    num(w, "variant_samples", e->cand_warm_samples);
    num(w, "speedup", e->warm_speedup);
    num(w, "speedup_low", e->warm_speedup_low);
    num(w, "speedup_high", e->warm_speedup_high);
  }
}

void ks_eval_json_add(cJSON *root, const ks_eval *e, unsigned flags) {
  bool complete = flags & KS_EVAL_JSON_COMPLETE;
  bool variant = complete || (flags & KS_EVAL_JSON_VARIANT);
  str(root, "verdict", ks_verdict_name(e->verdict));
  str(root, "reason", e->reason);
  cJSON *comp = cJSON_AddObjectToObject(root, "compile");
  str(comp, "compiler", e->compiler);
  if (e->compiler_note || complete)
    str(comp, "compiler_note", e->compiler_note);
  if (e->machine_code_note || complete)
    str(comp, "machine_code_note", e->machine_code_note);
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
    if (s->screened)
      cJSON_AddBoolToObject(o, "screened", true);
    cJSON_AddItemToObject(o, "launch", launch_json(&s->launch));
    cJSON *seeds = cJSON_AddArrayToObject(o, "seeds");
    for (size_t k = 0; k < s->seeds.len; k++)
      cJSON_AddItemToArray(seeds, seed_json(&s->seeds.items[k], complete));
    cJSON_AddItemToArray(sizes, o);
  }
  num(root, "max_abs_error", e->max_abs_error);
  num(root, "max_rel_error", e->max_rel_error);
  if (e->has_ref || complete) {
    cJSON *r = cJSON_AddObjectToObject(root, "fp64_reference");
    if (complete)
      cJSON_AddBoolToObject(r, "ran", e->has_ref);
    num(r, "original_max_abs_error", e->ref_base_max_abs);
    num(r, "original_max_rel_error", e->ref_base_max_rel);
    num(r, "variant_max_abs_error", e->ref_cand_max_abs);
    num(r, "variant_max_rel_error", e->ref_cand_max_rel);
    ks_json_add_u64(r, "excused", e->ref_excused);
  } else {
    cJSON_AddNullToObject(root, "fp64_reference");
  }
  if (e->timed || complete)
    timing_json(root, e, variant, complete);
  warm_json(root, e, variant, complete);
  num(root, "wall_seconds", e->wall_seconds);
}

char *ks_eval_json_text(const ks_eval *e, unsigned flags) {
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  ks_eval_json_add(root, e, flags);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

/* ---- reading ------------------------------------------------------------- */

int ks_verdict_from_name(const char *name) {
  for (int v = KS_VERDICT_FAST; v <= KS_VERDICT_BASELINE; v++)
    if (name && !strcmp(ks_verdict_name((ks_verdict)v), name))
      return v;
  return -1;
}

static double get_num(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(x))
    return x->valuedouble;
  if (cJSON_IsString(x))
    return strtod(x->valuestring, NULL);
  return cJSON_IsNull(x) ? NAN : 0;
}

/* Integers through a double: a NaN or out-of-range value (a hand-edited
 * document) becomes 0 instead of undefined behaviour. */
static long long get_ll(const cJSON *o, const char *key) {
  double v = get_num(o, key);
  return isfinite(v) && fabs(v) < 9.2e18 ? (long long)v : 0;
}

static int get_int(const cJSON *o, const char *key) {
  double v = get_num(o, key);
  return isfinite(v) && fabs(v) < 2.1e9 ? (int)v : 0;
}

static unsigned long long get_u64(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsString(x))
    return strtoull(x->valuestring, NULL, 10);
  double v = cJSON_IsNumber(x) ? x->valuedouble : 0;
  return v >= 0 && v < 1.8e19 ? (unsigned long long)v : 0;
}

static bool get_bool(const cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *get_str(ks_arena *a, const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(x) ? ks_arena_strdup(a, x->valuestring) : NULL;
}

/* An object member that says whether its numbers apply: present and, in a
 * complete document, with `flag` true. */
static const cJSON *applies(const cJSON *o, const char *key, const char *flag) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsObject(x))
    return NULL;
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(x, flag);
  return !f || cJSON_IsTrue(f) ? x : NULL;
}

static void read_launch(const cJSON *o, ks_launch_cfg *l) {
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "grid");
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "block");
  for (int i = 0; i < 3; i++) {
    const cJSON *gi = cJSON_GetArrayItem(g, i), *bi = cJSON_GetArrayItem(b, i);
    l->grid[i] = cJSON_IsNumber(gi) && gi->valuedouble >= 0 ? (unsigned)gi->valuedouble : 0;
    l->block[i] = cJSON_IsNumber(bi) && bi->valuedouble >= 0 ? (unsigned)bi->valuedouble : 0;
  }
  l->smem = get_u64(o, "smem");
}

static void read_check(ks_arena *a, const cJSON *j, ks_output_check *o) {
  o->buffer = get_str(a, j, "buffer");
  o->count = get_u64(j, "count");
  o->mismatches = get_u64(j, "mismatches");
  o->unwritten = get_u64(j, "unwritten");
  o->max_abs_error = get_num(j, "max_abs_error");
  o->max_rel_error = get_num(j, "max_rel_error");
  o->first_mismatch = get_ll(j, "first_mismatch");
  o->expected = get_num(j, "expected");
  o->got = get_num(j, "got");
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "fp64_reference");
  if (!cJSON_IsObject(r))
    return;
  o->has_ref = applies(j, "fp64_reference", "ran") != NULL;
  o->ref_base_max_abs = get_num(r, "original_max_abs_error");
  o->ref_base_max_rel = get_num(r, "original_max_rel_error");
  o->ref_cand_max_abs = get_num(r, "variant_max_abs_error");
  o->ref_cand_max_rel = get_num(r, "variant_max_rel_error");
  o->ref_mismatches = get_u64(r, "mismatches");
  o->ref_excused = get_u64(r, "excused");
  o->ref_first_mismatch = get_ll(r, "first_mismatch");
  o->ref_value = get_num(r, "reference");
  o->ref_got = get_num(r, "got");
  o->ref_base = get_num(r, "original");
}

static void read_seed(ks_arena *a, const cJSON *x, ks_seed_check *sc) {
  sc->seed = get_u64(x, "seed");
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(x, "outputs"), *j;
  cJSON_ArrayForEach(j, outs) read_check(a, j, ks_array_push(a, &sc->outputs));
  sc->race = get_bool(x, "race");
  sc->race_buffer = get_str(a, x, "race_buffer");
  sc->base_nondeterministic = get_bool(x, "original_nondeterministic");
  sc->canary_buffer = get_str(a, x, "out_of_bounds_buffer");
  sc->canary_before = get_bool(x, "out_of_bounds_before");
  sc->base_canary_buffer = get_str(a, x, "original_out_of_bounds_buffer");
  sc->base_canary_before = get_bool(x, "original_out_of_bounds_before");
  sc->changed_input = get_str(a, x, "changed_input");
}

static void read_sizes(ks_arena *a, const cJSON *root, ks_eval *e) {
  const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(root, "sizes"), *o;
  cJSON_ArrayForEach(o, sizes) {
    ks_size_report *s = ks_array_push(a, &e->sizes);
    s->size = get_str(a, o, "name");
    s->timed = get_bool(o, "timed");
    s->guards_hold = get_bool(o, "guards_hold");
    s->screened = get_bool(o, "screened");
    read_launch(cJSON_GetObjectItemCaseSensitive(o, "launch"), &s->launch);
    const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(o, "seeds"), *x;
    cJSON_ArrayForEach(x, seeds) read_seed(a, x, ks_array_push(a, &s->seeds));
  }
}

static void read_timing(const cJSON *root, ks_eval *e) {
  const cJSON *tm = cJSON_GetObjectItemCaseSensitive(root, "timing");
  const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "roofline");
  e->timed = applies(root, "timing", "timed") != NULL;
  e->base_median_ms = get_num(tm, "original_median_ms");
  e->base_iqr_ms = get_num(tm, "original_iqr_ms");
  e->base_rsd = get_num(tm, "original_rsd");
  e->base_samples = (unsigned)get_u64(tm, "original_samples");
  e->cand_median_ms = get_num(tm, "variant_median_ms");
  e->cand_iqr_ms = get_num(tm, "variant_iqr_ms");
  e->cand_rsd = get_num(tm, "variant_rsd");
  e->cand_samples = (unsigned)get_u64(tm, "variant_samples");
  e->speedup = get_num(tm, "speedup");
  e->speedup_low = get_num(tm, "speedup_low");
  e->speedup_high = get_num(tm, "speedup_high");
  e->dropped_low_clock = (unsigned)get_u64(tm, "dropped_low_clock");
  e->sm_clock_min_mhz = get_num(tm, "sm_clock_min_mhz");
  e->sm_clock_max_mhz = get_num(tm, "sm_clock_max_mhz");
  e->timing_seconds = get_num(tm, "seconds");
  e->recheck_screened = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tm, "recheck_screened"));
  e->bytes_min = get_u64(rf, "bytes_min");
  e->floor_ms = get_num(rf, "floor_ms");
  e->base_bandwidth = get_num(rf, "original_bandwidth");
  e->base_bw_fraction = get_num(rf, "original_bandwidth_fraction");
  e->flops = get_num(rf, "flops");
  e->base_flop_rate = get_num(rf, "original_flop_rate");
  e->cand_bandwidth = get_num(rf, "variant_bandwidth");
  e->cand_bw_fraction = get_num(rf, "variant_bandwidth_fraction");
  e->cand_flop_rate = get_num(rf, "variant_flop_rate");
  e->cand_flop_fraction = get_num(rf, "variant_flop_fraction");
}

int ks_eval_from_json(ks_ctx *ctx, const char *text, ks_arena *a, ks_eval *out) {
  memset(out, 0, sizeof *out);
  cJSON *root = cJSON_Parse(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ks_fail(ctx, "an evaluation's JSON does not parse");
  }
  const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(root, "verdict");
  int v = ks_verdict_from_name(cJSON_IsString(verdict) ? verdict->valuestring : NULL);
  if (v < 0) {
    cJSON_Delete(root);
    return ks_fail(ctx, "an evaluation's JSON has no known verdict");
  }
  out->verdict = (ks_verdict)v;
  out->reason = get_str(a, root, "reason");
  const cJSON *comp = cJSON_GetObjectItemCaseSensitive(root, "compile");
  out->compiler = get_str(a, comp, "compiler");
  out->compiler_note = get_str(a, comp, "compiler_note");
  out->machine_code_note = get_str(a, comp, "machine_code_note");
  out->compile_ms = get_num(comp, "ms");
  out->compile_cached = get_bool(comp, "cached");
  out->base_registers = get_int(comp, "original_registers");
  out->cand_registers = get_int(comp, "variant_registers");
  out->base_spills = get_int(comp, "original_spill_bytes");
  out->cand_spills = get_int(comp, "variant_spill_bytes");
  out->base_smem = get_int(comp, "original_static_smem");
  out->cand_smem = get_int(comp, "variant_static_smem");
  read_sizes(a, root, out);
  out->max_abs_error = get_num(root, "max_abs_error");
  out->max_rel_error = get_num(root, "max_rel_error");
  const cJSON *ref = applies(root, "fp64_reference", "ran");
  out->has_ref = ref != NULL;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "fp64_reference");
  out->ref_base_max_abs = get_num(r, "original_max_abs_error");
  out->ref_base_max_rel = get_num(r, "original_max_rel_error");
  out->ref_cand_max_abs = get_num(r, "variant_max_abs_error");
  out->ref_cand_max_rel = get_num(r, "variant_max_rel_error");
  out->ref_excused = get_u64(r, "excused");
  read_timing(root, out);
  out->warm_timed = applies(root, "warm", "timed") != NULL;
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "warm");
  out->warm_bytes = get_u64(w, "bytes");
  out->base_warm_median_ms = get_num(w, "original_median_ms");
  out->base_warm_samples = (unsigned)get_u64(w, "original_samples");
  out->cand_warm_median_ms = get_num(w, "variant_median_ms");
  out->cand_warm_samples = (unsigned)get_u64(w, "variant_samples");
  out->warm_speedup = get_num(w, "speedup");
  out->warm_speedup_low = get_num(w, "speedup_low");
  out->warm_speedup_high = get_num(w, "speedup_high");
  out->wall_seconds = get_num(root, "wall_seconds");
  cJSON_Delete(root);
  return 0;
}
