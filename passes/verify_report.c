/* verify_report: a verify report as JSON (schema kernelsmith-cc.verify,
 * version 1; docs/verify.md) and as text, and the reader `apply
 * --from-verify` uses. See ks_verify.h. cJSON stays in this file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_verify.h"

/* ---- JSON --------------------------------------------------------------- */

static void num(cJSON *o, const char *key, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

/* A number that is 0 when it is not known. */
static void num_or_null(cJSON *o, const char *key, double v) {
  if (v > 0)
    num(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static void str_or_null(cJSON *o, const char *key, const char *v) {
  if (v)
    cJSON_AddStringToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static cJSON *dims_json(const unsigned d[3]) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < 3; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(d[i]));
  return a;
}

static cJSON *launch_json(const unsigned grid[3], const unsigned block[3],
                          unsigned long long smem, const unsigned long long *launches) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "grid", dims_json(grid));
  cJSON_AddItemToObject(o, "block", dims_json(block));
  num(o, "smem_dynamic", (double)smem);
  if (launches)
    num(o, "launches", (double)*launches);
  return o;
}

static cJSON *side_json(const ks_verify_side *s, bool after) {
  cJSON *o = cJSON_CreateObject();
  num(o, "ms", s->ms);
  num(o, "launches", (double)s->launches);
  if (after) {
    num(o, "variant_launches", (double)s->variant_launches);
    num(o, "original_launches", (double)(s->launches - s->variant_launches));
  }
  num(o, "timed_launches", (double)s->timed);
  num_or_null(o, "mean_ms", s->mean_ms);
  num(o, "back_to_back", (double)s->back_to_back);
  if (s->have_config)
    cJSON_AddItemToObject(o, "config", launch_json(s->config.grid, s->config.block,
                                                   s->config.smem_dynamic, &s->config.launches));
  else
    cJSON_AddNullToObject(o, "config");
  return o;
}

static cJSON *kernel_json(ks_arena *a, const ks_verify_kernel *k) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kernel", k->name);
  cJSON_AddStringToObject(o, "variant", k->variant);
  str_or_null(o, "file", k->file);
  cJSON_AddStringToObject(o, "verdict", ks_verify_verdict_name(k->verdict));
  str_or_null(o, "cause", ks_verify_cause_name(k->cause_kind));
  str_or_null(o, "cause_detail", k->cause);
  num_or_null(o, "speedup", k->speedup);
  num_or_null(o, "search_speedup", k->search_speedup);
  num_or_null(o, "search_speedup_low", k->search_low);
  num_or_null(o, "search_speedup_high", k->search_high);
  num_or_null(o, "search_baseline_ms", k->search_baseline_ms);
  if (k->search_warm)
    num(o, "search_warm_speedup", k->search_warm_speedup);
  else
    cJSON_AddNullToObject(o, "search_warm_speedup");
  if (k->have_judge_launch)
    cJSON_AddItemToObject(o, "search_launch",
                          launch_json(k->judge_launch.grid, k->judge_launch.block,
                                      k->judge_launch.smem, NULL));
  else
    cJSON_AddNullToObject(o, "search_launch");
  cJSON_AddItemToObject(o, "before", side_json(&k->before, false));
  cJSON_AddItemToObject(o, "after", side_json(&k->after, true));
  cJSON *sites = cJSON_AddArrayToObject(o, "sites");
  static const char *const keys[KS_NPATHS] = {"variant", "off", "other_architecture",
                                              "guards_failed", "no_device"};
  for (size_t i = 0; i < k->sites.len; i++) {
    const ks_site_stats *s = &k->sites.items[i];
    cJSON *so = cJSON_CreateObject();
    cJSON_AddStringToObject(so, "where", s->where);
    for (int p = 0; p < KS_NPATHS; p++)
      num(so, keys[p], (double)s->counts[p]);
    cJSON_AddStringToObject(so, "paths", ks_verify_site_paths(a, s));
    cJSON_AddItemToArray(sites, so);
  }
  return o;
}

int ks_verify_write_json(ks_ctx *ctx, FILE *out, const ks_verify_report *r) {
  ks_arena a = KS_ARENA_INIT;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", KS_VERIFY_SCHEMA);
  cJSON_AddNumberToObject(root, "version", KS_VERIFY_VERSION);
  cJSON *cmd = cJSON_AddArrayToObject(root, "command");
  for (size_t i = 0; i < r->command.len; i++)
    cJSON_AddItemToArray(cmd, cJSON_CreateString(r->command.items[i]));
  num(root, "repeat", r->repeat);
  str_or_null(root, "store", r->store_dir);
  num(root, "run", (double)r->run);
  str_or_null(root, "device", r->device);
  cJSON *runs = cJSON_AddArrayToObject(root, "runs");
  for (size_t i = 0; i < r->runs.len; i++) {
    const ks_verify_run_status *s = &r->runs.items[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "variants", s->variants);
    if (s->signal) {
      cJSON_AddNullToObject(o, "exit_status");
      num(o, "signal", s->signal);
    } else {
      num(o, "exit_status", s->exit_code);
      cJSON_AddNullToObject(o, "signal");
    }
    num(o, "processes", s->processes);
    cJSON_AddItemToArray(runs, o);
  }
  cJSON_AddBoolToObject(root, "failed", r->failed);
  str_or_null(root, "failure", r->failure);
  num(root, "unlisted_kernels", (double)r->unlisted);
  num(root, "dropped_records", (double)r->dropped);
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (size_t i = 0; i < r->kernels.len; i++)
    cJSON_AddItemToArray(ks, kernel_json(&a, &r->kernels.items[i]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  ks_arena_release(&a);
  if (!text)
    return ks_fail(ctx, "out of memory writing the verify report");
  int rc = fputs(text, out) < 0 || fputc('\n', out) < 0
               ? ks_fail(ctx, "cannot write the verify report: %s", strerror(errno))
               : 0;
  free(text);
  return rc;
}

static int write_report(ks_ctx *ctx, FILE *out, const void *r) {
  return ks_verify_write_json(ctx, out, r);
}

int ks_verify_save(ks_ctx *ctx, const char *path, const ks_verify_report *r) {
  return ks_write_file_whole(ctx, path, write_report, r);
}

/* ---- text --------------------------------------------------------------- */

static const char *paint(const ks_verify_print_options *o, ks_verify_verdict v) {
  if (!o || !o->color)
    return "";
  return v == KS_VERIFY_FASTER    ? "\033[32m"
         : v == KS_VERIFY_SHORT   ? "\033[33m"
         : v == KS_VERIFY_NOT_RUN ? "\033[2m"
                                  : "\033[1;31m";
}

static void print_runs(FILE *out, const ks_verify_report *r, const ks_verify_print_options *o) {
  if (r->failed) {
    fprintf(out, "%sFAILED%s: %s\n", o && o->color ? "\033[1;31m" : "",
            o && o->color ? "\033[0m" : "", r->failure);
    for (size_t i = 0; i < r->runs.len; i++) {
      const ks_verify_run_status *s = &r->runs.items[i];
      if (s->signal)
        fprintf(out, "  run %zu, %s the variants: killed by signal %d\n", i + 1,
                s->variants ? "with" : "without", s->signal);
      else
        fprintf(out, "  run %zu, %s the variants: exit status %d\n", i + 1,
                s->variants ? "with" : "without", s->exit_code);
    }
    return;
  }
  size_t with = 0;
  for (size_t i = 0; i < r->runs.len; i++)
    with += r->runs.items[i].variants;
  fprintf(out, "the program exited 0 in every run: %zu without the variants, %zu with them\n",
          r->runs.len - with, with);
}

void ks_verify_print(FILE *out, const ks_verify_report *r, const ks_verify_print_options *o) {
  ks_arena a = KS_ARENA_INIT;
  print_runs(out, r, o);
  int width = 6;
  size_t shown = 0, not_run = 0;
  for (size_t i = 0; i < r->kernels.len; i++) {
    if (r->kernels.items[i].verdict == KS_VERIFY_NOT_RUN) {
      not_run++;
      continue;
    }
    int n = (int)strlen(r->kernels.items[i].name);
    width = n > width ? (n < 48 ? n : 48) : width;
    shown++;
  }
  if (shown)
    fprintf(out, "\n%-*s  %10s  %10s  %11s  %10s  %7s  %s\n", width, "kernel", "before ms",
            "after ms", "launches", "in program", "search", "verdict");
  for (size_t i = 0; i < r->kernels.len; i++) {
    const ks_verify_kernel *k = &r->kernels.items[i];
    if (k->verdict == KS_VERIFY_NOT_RUN)
      continue; /* one line below names them all */
    const char *launches = ks_arena_printf(&a, "%llu/%llu", k->before.launches, k->after.launches);
    const char *in_program = k->speedup > 0 ? ks_arena_printf(&a, "%.2fx", k->speedup) : "-";
    const char *search = k->search_speedup > 0 ? ks_arena_printf(&a, "%.2fx", k->search_speedup)
                                               : "-";
    fprintf(out, "%-*s  %10.3f  %10.3f  %11s  %10s  %7s  %s%s%s\n", width, k->name, k->before.ms,
            k->after.ms, launches, in_program, search, paint(o, k->verdict),
            ks_verify_verdict_name(k->verdict), o && o->color ? "\033[0m" : "");
    for (size_t s = 0; s < k->sites.len; s++)
      fprintf(out, "    %s: %s\n", k->sites.items[s].where,
              ks_verify_site_paths(&a, &k->sites.items[s]));
    if (k->verdict == KS_VERIFY_NOT_FASTER || k->verdict == KS_VERIFY_SHORT)
      fprintf(out, "    %s: %s\n", ks_verify_verdict_name(k->verdict), k->cause);
    else if (k->verdict == KS_VERIFY_FASTER && k->cause)
      fprintf(out, "    %s\n", k->cause);
  }
  if (not_run) {
    fprintf(out, "%zu winner%s never ran in the program:", not_run, not_run == 1 ? "" : "s");
    size_t named = 0;
    for (size_t i = 0; i < r->kernels.len; i++)
      if (r->kernels.items[i].verdict == KS_VERIFY_NOT_RUN && named++ < 8)
        fprintf(out, "%s %s", named > 1 ? "," : "", r->kernels.items[i].name);
    fputs(named > 8 ? ", ...\n" : "\n", out);
  }
  if (r->unlisted)
    fprintf(out, "%zu kernel%s the profile saw %s no winner and %s not listed\n", r->unlisted,
            r->unlisted == 1 ? "" : "s", r->unlisted == 1 ? "has" : "have",
            r->unlisted == 1 ? "is" : "are");
  if (r->dropped)
    fprintf(out, "note: CUPTI dropped %llu records: the totals are short\n", r->dropped);
  if (r->truncated)
    fprintf(out, "note: %u run%s ended while writing a record: the totals are short\n",
            r->truncated, r->truncated == 1 ? "" : "s");
  ks_arena_release(&a);
}

/* ---- reading it back ---------------------------------------------------- */

int ks_verify_not_faster(ks_ctx *ctx, const char *path, ks_arena *a, ks_strings *out) {
  ks_buf text = KS_BUF_INIT;
  if (ks_read_file(ctx, path, 64u << 20, &text)) {
    ks_buf_release(&text);
    return -1;
  }
  cJSON *root = cJSON_ParseWithLength(text.data, text.len);
  ks_buf_release(&text);
  int rc = 0;
  const cJSON *v;
  if (!cJSON_IsObject(root)) {
    rc = ks_fail(ctx, "%s: not a JSON object (a verify report is JSON, schema %s)", path,
                 KS_VERIFY_SCHEMA);
    goto out;
  }
  v = cJSON_GetObjectItemCaseSensitive(root, "schema");
  if (!cJSON_IsString(v) || strcmp(v->valuestring, KS_VERIFY_SCHEMA)) {
    rc = ks_fail(ctx, "%s: schema: not %s (not a verify report)", path, KS_VERIFY_SCHEMA);
    goto out;
  }
  v = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!cJSON_IsNumber(v) || v->valuedouble != KS_VERIFY_VERSION) {
    rc = ks_fail(ctx, "%s: version: not %d (a report of another kernelsmith-cc?)", path,
                 KS_VERIFY_VERSION);
    goto out;
  }
  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels"), *k;
  if (!cJSON_IsArray(kernels)) {
    rc = ks_fail(ctx, "%s: kernels: not an array", path);
    goto out;
  }
  int i = 0;
  cJSON_ArrayForEach(k, kernels) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(k, "kernel");
    const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(k, "verdict");
    if (!cJSON_IsString(name) || !*name->valuestring) {
      rc = ks_fail(ctx, "%s: kernels[%d].kernel: not a name", path, i);
      goto out;
    }
    if (!cJSON_IsString(verdict)) {
      rc = ks_fail(ctx, "%s: kernels[%d].verdict: not a string", path, i);
      goto out;
    }
    const char *vs = verdict->valuestring;
    if (strcmp(vs, "faster") && strcmp(vs, "not faster") && strcmp(vs, "short of the search") &&
        strcmp(vs, "failed") && strcmp(vs, "not run")) {
      rc = ks_fail(ctx, "%s: kernels[%d].verdict: '%s' is none of faster, not faster, short of "
                        "the search, failed, not run", path, i, vs);
      goto out;
    }
    if (!strcmp(vs, "not faster"))
      *ks_array_push(a, out) = ks_arena_strdup(a, name->valuestring);
    i++;
  }
out:
  cJSON_Delete(root);
  return rc;
}
