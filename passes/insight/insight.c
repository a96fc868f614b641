/* insight: what runs showed about a race, what bounds a kernel, the lines
 * that say so and their JSON (ks_insight.h). cJSON stays in this file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ks_eval.h"
#include "ks_insight.h"
#include "ks_judge.h"

/* ---- what runs showed ------------------------------------------------------- */

bool ks_race_scheduling_only(const char *techniques) {
  /* Rewrites after which every element is computed by the same operations
   * in the same order as in the original (a different thread, a register
   * instead of memory, another block shape): a race-free kernel gives the
   * same bits, so a difference beyond tolerance is the original's. */
  static const char *const exact[] = {"block", "grid_stride", "launch_bounds", "restrict",
                                      "unroll", "coarsen", "scalar_replace", "hoist_invariant",
                                      "vec"};
  if (!techniques || !*techniques)
    return false;
  const char *t = techniques;
  while (*t) {
    const char *end = strstr(t, " > ");
    size_t len = end ? (size_t)(end - t) : strlen(t);
    bool ok = false;
    for (size_t i = 0; i < sizeof exact / sizeof *exact && !ok; i++) {
      size_t k = strlen(exact[i]);
      ok = len >= k && !strncmp(t, exact[i], k) &&
           (len == k || strchr("=_+", t[k]) || (t[k] >= '0' && t[k] <= '9'));
    }
    if (!ok)
      return false;
    t += len + (end ? 3 : 0);
  }
  return true;
}

static bool output_differs(const ks_eval *e) {
  for (size_t i = 0; i < e->sizes.len; i++)
    for (size_t k = 0; k < e->sizes.items[i].seeds.len; k++) {
      const ks_seed_check *sc = &e->sizes.items[i].seeds.items[k];
      if (sc->race)
        return true;
      for (size_t o = 0; o < sc->outputs.len; o++)
        if (sc->outputs.items[o].mismatches)
          return true;
    }
  return e->reason && strstr(e->reason, " differs ");
}

void ks_race_add_eval(ks_race *race, const ks_eval *e, const char *techniques) {
  for (size_t i = 0; i < e->sizes.len; i++)
    for (size_t k = 0; k < e->sizes.items[i].seeds.len; k++) {
      race->seeds_checked++;
      race->original_differed += e->sizes.items[i].seeds.items[k].base_nondeterministic;
    }
  if (e->verdict == KS_VERDICT_BASELINE)
    return;
  race->evaluated++;
  if (e->verdict == KS_VERDICT_WRONG && output_differs(e)) {
    race->wrong++;
    /* The seed (no technique) is the original renamed: a difference there
     * is the original disagreeing with itself. */
    race->wrong_scheduling +=
        !techniques || !*techniques || ks_race_scheduling_only(techniques);
  }
  race->shown_by_runs = (race->original_differed && !race->atomics) || race->wrong_scheduling;
  race->found = race->shown_by_code || race->shown_by_runs;
}

int ks_race_observe(ks_ctx *ctx, ks_store *store, long long kernel, ks_arena *arena,
                    ks_race *race) {
  ks_variant_rows vars = {0};
  if (ks_store_variants(ctx, store, kernel, arena, &vars))
    return -1;
  for (size_t i = 0; i < vars.len; i++) {
    const ks_variant_row *v = &vars.items[i];
    if (!v->evaluated)
      continue;
    ks_eval e;
    bool found = false;
    if (ks_store_eval_get(ctx, store, kernel, v->id, arena, &e, &found))
      return -1;
    if (found)
      ks_race_add_eval(race, &e, v->techniques);
  }
  return 0;
}

static const char *dim_name(ks_arena *a, const ks_race *r, bool size) {
  return ks_arena_printf(a, "%s.%c", r->blocks ? size ? "gridDim" : "blockIdx"
                                              : size ? "blockDim" : "threadIdx",
                         r->dim);
}

const char *ks_race_line(ks_arena *a, const ks_race *r) {
  if (!r->found)
    return NULL;
  const char *runs = NULL;
  if (r->original_differed)
    runs = ks_arena_printf(a, "the original's two runs on the same inputs differed on %u of %u "
                              "seed%s%s",
                           r->original_differed, r->seeds_checked, r->seeds_checked == 1 ? "" : "s",
                           r->atomics ? " (it uses atomics, which may land in another order)" : "");
  else if (r->wrong_scheduling)
    runs = ks_arena_printf(a, "%u variant%s that change only scheduling disagree%s with the "
                              "original",
                           r->wrong_scheduling, r->wrong_scheduling == 1 ? "" : "s",
                           r->wrong_scheduling == 1 ? "s" : "");
  if (!r->shown_by_code)
    return runs;
  const char *code = ks_arena_printf(a, "%s written by %u %s per index (%s = %u, index independent "
                                        "of %s)",
                                     r->store, r->writers, r->blocks ? "blocks" : "threads",
                                     dim_name(a, r, true), r->writers, dim_name(a, r, false));
  return runs ? ks_arena_printf(a, "%s; %s", code, runs) : code;
}

const char *ks_race_search_line(ks_arena *a, const ks_race *r) {
  if (!r->found || !r->evaluated)
    return NULL;
  if (!r->wrong)
    return ks_arena_printf(a, "none of %u variants was refused for a different result",
                           r->evaluated);
  return ks_arena_printf(a, "%u of %u variant%s refused WRONG: their results differ as the "
                            "racing original's do",
                         r->wrong, r->evaluated, r->evaluated == 1 ? "" : "s");
}

/* ---- what bounds a kernel --------------------------------------------------- */

const char *ks_bound_name(ks_bound_kind k) {
  switch (k) {
  case KS_BOUND_MEMORY: return "memory";
  case KS_BOUND_COMPUTE: return "compute";
  case KS_BOUND_LATENCY: return "latency";
  default: return "unknown";
  }
}

void ks_bound_classify(ks_arena *a, const ks_bound_input *in, ks_bound *out) {
  memset(out, 0, sizeof *out);
  double seconds = in->median_ms / 1e3;
  if (seconds > 0 && in->bytes && in->bandwidth > 0)
    out->bw_fraction = (double)in->bytes / seconds / in->bandwidth;
  if (seconds > 0 && in->flops > 0 && in->flops_peak > 0)
    out->flop_fraction = in->flops / seconds / in->flops_peak;
  const ks_launch_cfg *l = &in->launch;
  out->blocks = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
  out->threads = out->blocks * ((unsigned long long)l->block[0] * l->block[1] * l->block[2]);
  unsigned per_sm = in->max_threads_per_sm ? in->max_threads_per_sm : 2048;
  if (in->sm_count && out->threads)
    out->fill = (double)out->threads / ((double)in->sm_count * per_sm);
  double top = fmax(out->bw_fraction, out->flop_fraction);
  /* Too few threads to hide the memory system's latency or fill the
   * pipelines, and far from both ceilings: more work per launch, not less
   * per element, is what would help. */
  bool small = out->threads && in->sm_count &&
               (out->blocks < in->sm_count || out->fill < 0.25);
  if (small && top < 0.5) {
    out->kind = KS_BOUND_LATENCY;
    out->why = out->blocks < in->sm_count
                   ? ks_arena_printf(a, "%llu block%s for %u SMs", out->blocks,
                                     out->blocks == 1 ? "" : "s", in->sm_count)
                   : ks_arena_printf(a, "%llu threads fill %.0f%% of what %u SMs hold",
                                     out->threads, 100 * out->fill, in->sm_count);
    return;
  }
  if (out->bw_fraction <= 0 && out->flop_fraction <= 0)
    return; /* nothing measured against a ceiling */
  /* Under the roofline: the ceiling its arithmetic intensity meets first. */
  bool compute = in->flops > 0 && in->bytes && in->bandwidth > 0 && in->flops_peak > 0 &&
                 in->flops / (double)in->bytes >= in->flops_peak / in->bandwidth;
  if (!in->bytes || in->bandwidth <= 0)
    compute = out->flop_fraction > 0;
  out->kind = compute ? KS_BOUND_COMPUTE : KS_BOUND_MEMORY;
  out->why = compute ? ks_arena_printf(a, "%.0f%% of the fp32 peak, %.0f%% of the measured "
                                          "bandwidth",
                                       100 * out->flop_fraction, 100 * out->bw_fraction)
                     : out->flop_fraction > 0
                         ? ks_arena_printf(a, "%.0f%% of the measured bandwidth, %.0f%% of the "
                                              "fp32 peak",
                                           100 * out->bw_fraction, 100 * out->flop_fraction)
                         : ks_arena_printf(a, "%.0f%% of the measured bandwidth",
                                           100 * out->bw_fraction);
}

/* ---- a kernel's findings together ------------------------------------------ */

ks_insight_device ks_insight_device_of(const ks_judge *j) {
  ks_insight_device d = {0};
  if (!j)
    return d;
  d.sm_count = j->device.sm_count > 0 ? (unsigned)j->device.sm_count : 0;
  /* The worker does not report the threads an SM holds: 2048 on every
   * architecture since Volta but Turing's 1024 (ks_bound_classify's
   * default). */
  if (j->have_ceilings) {
    d.bandwidth = j->ceilings.bandwidth;
    d.flops_peak = j->ceilings.flops_fp32;
  }
  return d;
}

int ks_insight_finish(ks_ctx *ctx, const ks_target *t, const ks_eval *baseline,
                      const ks_insight_device *dev, ks_store *store, long long kernel,
                      ks_arena *a, ks_insight *in) {
  ks_race *r = &in->race;
  r->seeds_checked = r->original_differed = r->evaluated = r->wrong = r->wrong_scheduling = 0;
  r->shown_by_runs = false;
  r->found = r->shown_by_code;
  if (store && kernel > 0 && ks_race_observe(ctx, store, kernel, a, r))
    return -1;
  const ks_launch_cfg *launch = ks_insight_launch(t);
  if (baseline && baseline->timed) {
    ks_bound_input bi = {.median_ms = baseline->base_median_ms, .bytes = baseline->bytes_min,
                         .flops = baseline->flops};
    if (launch)
      bi.launch = *launch;
    if (dev) {
      bi.sm_count = dev->sm_count;
      bi.max_threads_per_sm = dev->max_threads_per_sm;
      bi.bandwidth = dev->bandwidth;
      bi.flops_peak = dev->flops_peak;
    }
    ks_bound_classify(a, &bi, &in->bound);
    bool captured = false;
    for (size_t i = 0; i < t->nworkloads; i++)
      if (t->workloads[i].timed)
        captured = t->workloads[i].captured;
    in->bytes_from = !baseline->bytes_min ? NULL : captured ? "capture" : "spec";
  }
  if (store && kernel > 0 &&
      ks_store_kernel_set_insight(ctx, store, kernel, ks_insight_json(a, in)))
    return -1;
  return 0;
}

/* ---- JSON ------------------------------------------------------------------- */

static void add_launch(cJSON *o, const ks_launch_cfg *l) {
  cJSON *j = cJSON_AddObjectToObject(o, "launch");
  int g[3] = {(int)l->grid[0], (int)l->grid[1], (int)l->grid[2]};
  int b[3] = {(int)l->block[0], (int)l->block[1], (int)l->block[2]};
  cJSON_AddItemToObject(j, "grid", cJSON_CreateIntArray(g, 3));
  cJSON_AddItemToObject(j, "block", cJSON_CreateIntArray(b, 3));
}

static void add_str(cJSON *o, const char *k, const char *v) {
  if (v)
    cJSON_AddStringToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

const char *ks_insight_json(ks_arena *a, const ks_insight *in) {
  cJSON *root = cJSON_CreateObject();
  const ks_race *r = &in->race;
  if (r->found) {
    cJSON *j = cJSON_AddObjectToObject(root, "race");
    cJSON_AddStringToObject(j, "summary", ks_race_line(a, r));
    add_str(j, "search", ks_race_search_line(a, r));
    cJSON_AddBoolToObject(j, "shown_by_code", r->shown_by_code);
    cJSON_AddBoolToObject(j, "shown_by_runs", r->shown_by_runs);
    if (r->shown_by_code) {
      cJSON_AddStringToObject(j, "buffer", r->buffer);
      cJSON_AddStringToObject(j, "store", r->store);
      add_str(j, "op", r->op);
      cJSON_AddBoolToObject(j, "read_modify_write", r->read_modify_write);
      cJSON_AddStringToObject(j, "independent_of", dim_name(a, r, false));
      cJSON_AddNumberToObject(j, "writers_per_index", r->writers);
      add_launch(j, &r->launch);
    }
    cJSON_AddNumberToObject(j, "seeds_checked", r->seeds_checked);
    cJSON_AddNumberToObject(j, "original_runs_differed", r->original_differed);
    cJSON_AddBoolToObject(j, "atomics", r->atomics);
    cJSON_AddNumberToObject(j, "variants_evaluated", r->evaluated);
    cJSON_AddNumberToObject(j, "variants_wrong", r->wrong);
    cJSON_AddNumberToObject(j, "variants_wrong_scheduling_only", r->wrong_scheduling);
  } else {
    cJSON_AddNullToObject(root, "race");
  }
  const ks_bound *b = &in->bound;
  if (b->kind != KS_BOUND_UNKNOWN) {
    cJSON *j = cJSON_AddObjectToObject(root, "bound");
    cJSON_AddStringToObject(j, "kind", ks_bound_name(b->kind));
    add_str(j, "why", b->why);
    if (b->bw_fraction > 0)
      cJSON_AddNumberToObject(j, "bandwidth_fraction", b->bw_fraction);
    else
      cJSON_AddNullToObject(j, "bandwidth_fraction");
    if (b->flop_fraction > 0)
      cJSON_AddNumberToObject(j, "flop_fraction", b->flop_fraction);
    else
      cJSON_AddNullToObject(j, "flop_fraction");
    cJSON_AddNumberToObject(j, "blocks", (double)b->blocks);
    cJSON_AddNumberToObject(j, "threads", (double)b->threads);
    if (b->fill > 0)
      cJSON_AddNumberToObject(j, "fill", b->fill);
    add_str(j, "bytes_from", in->bytes_from);
  } else {
    cJSON_AddNullToObject(root, "bound");
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  const char *out = text ? ks_arena_strdup(a, text) : "{}";
  free(text);
  return out;
}

static const char *get_str(ks_arena *a, const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? ks_arena_strdup(a, v->valuestring) : NULL;
}

static double get_num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool get_bool(const cJSON *o, const char *k) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void get_dims(const cJSON *o, const char *k, unsigned out[3]) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, k);
  for (int i = 0; i < 3; i++) {
    const cJSON *v = cJSON_GetArrayItem(arr, i);
    out[i] = cJSON_IsNumber(v) && v->valuedouble >= 0 ? (unsigned)v->valuedouble : 0;
  }
}

void ks_insight_parse(ks_arena *a, const char *json, ks_insight *out) {
  memset(out, 0, sizeof *out);
  cJSON *root = json ? cJSON_Parse(json) : NULL;
  if (!root)
    return;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "race");
  if (cJSON_IsObject(r)) {
    ks_race *x = &out->race;
    x->found = true;
    x->shown_by_code = get_bool(r, "shown_by_code");
    x->shown_by_runs = get_bool(r, "shown_by_runs");
    x->buffer = get_str(a, r, "buffer");
    x->store = get_str(a, r, "store");
    x->op = get_str(a, r, "op");
    x->read_modify_write = get_bool(r, "read_modify_write");
    const char *dim = get_str(a, r, "independent_of");
    if (dim && strlen(dim) > 2) {
      x->blocks = !strncmp(dim, "blockIdx", 8);
      x->dim = dim[strlen(dim) - 1];
    }
    x->writers = (unsigned)get_num(r, "writers_per_index");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(r, "launch");
    get_dims(l, "grid", x->launch.grid);
    get_dims(l, "block", x->launch.block);
    x->seeds_checked = (unsigned)get_num(r, "seeds_checked");
    x->original_differed = (unsigned)get_num(r, "original_runs_differed");
    x->atomics = get_bool(r, "atomics");
    x->evaluated = (unsigned)get_num(r, "variants_evaluated");
    x->wrong = (unsigned)get_num(r, "variants_wrong");
    x->wrong_scheduling = (unsigned)get_num(r, "variants_wrong_scheduling_only");
    /* a store with no race found: nothing was shown either way */
    x->found = x->shown_by_code || x->shown_by_runs;
  }
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "bound");
  if (cJSON_IsObject(b)) {
    const char *kind = get_str(a, b, "kind");
    ks_bound *y = &out->bound;
    y->kind = !kind                      ? KS_BOUND_UNKNOWN
              : !strcmp(kind, "memory")  ? KS_BOUND_MEMORY
              : !strcmp(kind, "compute") ? KS_BOUND_COMPUTE
              : !strcmp(kind, "latency") ? KS_BOUND_LATENCY
                                         : KS_BOUND_UNKNOWN;
    y->why = get_str(a, b, "why");
    y->bw_fraction = get_num(b, "bandwidth_fraction");
    y->flop_fraction = get_num(b, "flop_fraction");
    y->blocks = (unsigned long long)get_num(b, "blocks");
    y->threads = (unsigned long long)get_num(b, "threads");
    y->fill = get_num(b, "fill");
    out->bytes_from = get_str(a, b, "bytes_from");
  }
  cJSON_Delete(root);
}
