/* tune: from a program to a verified patch, as a list of phases
 * (ks_pipeline.h):
 *
 *   profile  the program run under the injection library, every kernel
 *            timed (ks_profile_run.h), its kernels mapped to the sources
 *   pick     the hot kernels: --top, --min-share, else those holding 90%
 *            of the GPU time, at most 5
 *   capture  the program run again, the first launches of each captured
 *            (how many: the most launch configurations one of them ran
 *            with in the profile, at most 3)
 *   optimize the pipeline's optimize stages on those kernels and the
 *            capture, under one budget
 *   patch    the run's winners as a patch (what apply prints)
 *   verify   the program run with and without the variants (ks_verify.h)
 *
 * Every phase is recorded in the store's phases table when it ends, with
 * what the later phases need of it as JSON: the store is the one source
 * of truth for --resume; the files tune leaves under .kernelsmith/
 * (profile.json, tune-capture.kscap, tune.patch, verify.json) are exports,
 * except the capture, whose bytes are checked against the hash the store
 * recorded before they are used again. */
#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_profile_run.h"
#include "ks_safe_write.h"
#include "ks_verify.h"
#include "pipeline_int.h"

const char *ks_tune_phase_name(ks_tune_phase p) {
  static const char *const names[] = {"profile", "pick", "capture", "optimize", "patch", "verify"};
  return p < KS_TUNE_NPHASES ? names[p] : "?";
}

/* A kernel of the profile, as the pick and capture phases need it. */
typedef struct hot {
  const char *mangled, *name, *signature, *qualified, *file;
  unsigned line;
  double share, total_ms;
  unsigned configs;          /* distinct launch configurations seen */
} hot;
typedef KS_ARRAY(hot) hots;

/* What the later phases read back of an earlier one, parsed from the
 * store's JSON. */
typedef struct tune {
  ks_ctx *ctx;
  ks_tune_options *o;
  ks_arena *a;
  ks_tune_result *r;
  ks_store *store;
  const char *store_dir;     /* absolute */
  int lock_fd;
  long long run;
  hots profile;              /* every kernel of the profile (the hottest 64) */
  hots picks;                /* the chosen ones */
  bool captured;             /* the capture file holds launches */
  ks_strings optimized;      /* kernels with a winner */
  bool stop;                 /* a phase failed: the rest is not run */
} tune;

enum { TUNE_PROFILE_KEEP = 64 };

static const char *json_str(ks_arena *a, const cJSON *o, const char *key) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
  return s ? ks_arena_strdup(a, s) : NULL;
}

static double json_num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Adds a JSON string, or null. */
static void add_str(cJSON *o, const char *key, const char *s) {
  if (s)
    cJSON_AddStringToObject(o, key, s);
  else
    cJSON_AddNullToObject(o, key);
}

/* `root` printed into the arena and freed. */
static const char *json_text(ks_arena *a, cJSON *root) {
  char *t = cJSON_PrintUnformatted(root);
  const char *r = t ? ks_arena_strdup(a, t) : NULL;
  free(t);
  cJSON_Delete(root);
  return r;
}

static int phase_get(tune *t, ks_tune_phase ph, const char **data, bool *done) {
  const char *status = NULL;
  if (ks_store_phase_get(t->ctx, t->store, t->run, ks_tune_phase_name(ph), t->a, &status, data))
    return -1;
  *done = status && !strcmp(status, "done");
  return 0;
}

static int phase_put(tune *t, ks_tune_phase ph, const char *status, const char *data) {
  if (!strcmp(status, "done"))
    t->r->phase_done[ph] = true;
  return ks_store_phase_put(t->ctx, t->store, t->run, ks_tune_phase_name(ph), status, data);
}

static void phase_begin(tune *t, ks_tune_phase ph, bool done) {
  if (done) {
    t->r->phase_done[ph] = t->r->phase_resumed[ph] = true;
  }
  if (t->o->phase)
    t->o->phase(t->o->phase_arg, ph, done);
}

/* The program once, under the injection library; its profile in `out`
 * (release it) unless it failed, which t->r->failure then says. */
static int run_program(tune *t, const char *what, ks_inject_options *co, ks_profile *out,
                       bool *ok) {
  ks_ctx *ctx = t->ctx;
  *ok = false;
  const char *lines = ks_profile_lines_file(ctx, t->a, t->store_dir);
  if (!lines)
    return -1;
  co->stdout_to_stderr = true; /* stdout is the table's */
  int status = 0;
  t->r->program_runs++;
  if (ks_profile_run_app(ctx, t->o->cmd, t->o->inject_lib, lines, co, &status)) {
    unlink(lines);
    t->r->failure = ks_arena_strdup(t->a, ctx->error);
    return 0;
  }
  int code = ks_profile_exit_code(status);
  if (ks_profile_read_run(ctx, lines, t->o->cmd, t->o->ncmd, status, out)) {
    t->r->failure = ks_arena_printf(t->a, "the %s run's records cannot be read: %s", what,
                                    ctx->error);
    return 0;
  }
  unlink(lines);
  if (code) {
    t->r->failure = ks_arena_printf(t->a, "the program failed in the %s run (exit status %d)",
                                    what, code);
    ks_profile_release(out);
    return 0;
  }
  *ok = true;
  return 0;
}

static hots parse_hots(ks_arena *a, const cJSON *arr) {
  hots h = {0};
  const cJSON *k;
  cJSON_ArrayForEach(k, arr) {
    hot *x = ks_array_push(a, &h);
    x->mangled = json_str(a, k, "mangled");
    x->name = json_str(a, k, "name");
    x->signature = json_str(a, k, "signature");
    x->qualified = json_str(a, k, "qualified");
    x->file = json_str(a, k, "file");
    x->line = (unsigned)json_num(k, "line");
    x->share = json_num(k, "share");
    x->total_ms = json_num(k, "total_ms");
    x->configs = (unsigned)json_num(k, "configs");
  }
  return h;
}

static cJSON *hots_json(const hots *h) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < h->len; i++) {
    const hot *x = &h->items[i];
    cJSON *k = cJSON_CreateObject();
    add_str(k, "mangled", x->mangled);
    add_str(k, "name", x->name);
    add_str(k, "signature", x->signature);
    add_str(k, "qualified", x->qualified);
    add_str(k, "file", x->file);
    cJSON_AddNumberToObject(k, "line", x->line);
    cJSON_AddNumberToObject(k, "share", x->share);
    cJSON_AddNumberToObject(k, "total_ms", x->total_ms);
    cJSON_AddNumberToObject(k, "configs", x->configs);
    cJSON_AddItemToArray(arr, k);
  }
  return arr;
}

/* profile: the program run once, every kernel timed; the hottest kept in
 * the store with their definitions. */
static int tune_profile(tune *t) {
  ks_ctx *ctx = t->ctx;
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_PROFILE, &data, &done))
    return -1;
  phase_begin(t, KS_TUNE_PROFILE, done);
  if (!done) {
    ks_inject_options co = KS_INJECT_OPTIONS_INIT;
    ks_profile p;
    bool ok;
    if (run_program(t, "profile", &co, &p, &ok))
      return -1;
    if (!ok) {
      t->stop = true;
      return phase_put(t, KS_TUNE_PROFILE, "failed", NULL);
    }
    ks_scan scan;
    if (ks_scan_run(ctx, t->o->job.scan, &scan))
      ks_warn(ctx, "the sources could not be scanned (%s); no kernel is mapped to its definition",
              ctx->error);
    else
      ks_profile_map(&p, &scan.kernels);
    ks_scan_release(&scan);
    const char *export = ks_arena_printf(t->a, "%s/profile.json", t->store_dir);
    if (ks_profile_save(ctx, export, &p))
      ks_warn(ctx, "%s", ctx->error); /* an export: the store has what counts */
    hots h = {0};
    for (size_t i = 0; i < p.kernels.len && i < TUNE_PROFILE_KEEP; i++) {
      const ks_profile_kernel *k = &p.kernels.items[i];
      hot *x = ks_array_push(t->a, &h);
      x->mangled = ks_arena_strdup(t->a, k->mangled);
      /* a library's kernel by its qualified name (the mangled one is kept too) */
      x->name = k->source ? ks_arena_strdup(t->a, k->source->qualified_name)
                          : ks_profile_base_name(t->a, k->demangled);
      if (k->source) {
        x->signature = ks_arena_strdup(t->a, k->source->signature);
        x->qualified = ks_arena_strdup(t->a, k->source->qualified_name);
        x->file = k->source->file ? ks_arena_strdup(t->a, k->source->file) : NULL;
        x->line = k->source->line;
      }
      x->share = k->share;
      x->total_ms = k->total_ms;
      x->configs = k->distinct_configs ? k->distinct_configs : 1;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "total_ms", p.total_ms);
    cJSON_AddNumberToObject(root, "launches", (double)p.launches);
    cJSON_AddNumberToObject(root, "kernels_seen", (double)p.kernels.len);
    cJSON_AddItemToObject(root, "kernels", hots_json(&h));
    ks_profile_release(&p);
    data = json_text(t->a, root);
    if (phase_put(t, KS_TUNE_PROFILE, "done", data))
      return -1;
  }
  cJSON *root = cJSON_Parse(data ? data : "");
  if (!root)
    return ks_fail(ctx, "%s: run %lld: the profile phase's record is not JSON",
                   ks_store_path(t->store), t->run);
  t->r->program_ms = json_num(root, "total_ms");
  t->r->launches = (unsigned long long)json_num(root, "launches");
  t->profile = parse_hots(t->a, cJSON_GetObjectItem(root, "kernels"));
  size_t seen = (size_t)json_num(root, "kernels_seen");
  cJSON_Delete(root);
  if (!t->profile.len) {
    t->r->failure = "the program ran no kernel on the GPU: nothing to tune";
    t->stop = true;
  }
  t->r->not_picked = seen;
  return 0;
}

/* pick: what the options say, else the kernels holding 90% of the GPU
 * time, at most 5 of them in the sources (a library's kernels are listed,
 * not counted). */
static int tune_pick(tune *t) {
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_PICK, &data, &done))
    return -1;
  phase_begin(t, KS_TUNE_PICK, done);
  const ks_tune_options *o = t->o;
  if (!done) {
    hots h = {0};
    /* --min-share alone takes every kernel that has the share */
    unsigned top = o->top ? o->top : o->min_share > 0 ? UINT_MAX : 5, in_sources = 0;
    double sum = 0;
    for (size_t i = 0; i < t->profile.len && in_sources < top; i++) {
      const hot *x = &t->profile.items[i];
      if (o->min_share > 0 && 100 * x->share < o->min_share)
        break; /* most time first */
      if (!o->top && o->min_share <= 0 && sum >= 0.9)
        break;
      sum += x->share;
      *ks_array_push(t->a, &h) = *x;
      in_sources += x->signature != NULL;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "kernels", hots_json(&h));
    data = json_text(t->a, root);
    if (phase_put(t, KS_TUNE_PICK, "done", data))
      return -1;
  }
  cJSON *root = cJSON_Parse(data ? data : "");
  t->picks = parse_hots(t->a, cJSON_GetObjectItem(root, "kernels"));
  cJSON_Delete(root);
  t->r->not_picked = t->r->not_picked > t->picks.len ? t->r->not_picked - t->picks.len : 0;
  size_t in_sources = 0;
  for (size_t i = 0; i < t->picks.len; i++)
    in_sources += t->picks.items[i].signature != NULL;
  if (!t->picks.len) {
    t->r->failure = ks_arena_printf(t->a, "no kernel has %g%% of the GPU time or more",
                                    o->min_share);
    t->stop = true;
  } else if (!in_sources) {
    t->r->failure = "none of the hot kernels is in the sources (a library's kernels are not "
                    "tuned)";
    t->stop = true;
  }
  return 0;
}

static const char *bytes_text(ks_arena *a, long long n) {
  if (n >= (1LL << 30) && n % (1LL << 30) == 0)
    return ks_arena_printf(a, "%lld GiB", n >> 30);
  if (n >= (1LL << 20) && n % (1LL << 20) == 0)
    return ks_arena_printf(a, "%lld MiB", n >> 20);
  return ks_arena_printf(a, "%lld bytes", n);
}

/* Counts the capture's launches of each pick that can serve (snapshots
 * taken, the launch did not fail). */
static int count_captured(tune *t, const char *path) {
  ks_capture c;
  if (ks_capture_open(t->ctx, path, &c)) {
    ks_warn(t->ctx, "no capture: %s", t->ctx->error);
    return 0;
  }
  for (size_t i = 0; i < c.launches.len; i++) {
    const ks_capture_launch *l = &c.launches.items[i];
    if (l->over_limit || l->error)
      continue;
    t->captured = true;
    for (size_t k = 0; k < t->r->kernels.len; k++)
      if (t->r->kernels.items[k].mangled && !strcmp(t->r->kernels.items[k].mangled, l->kernel))
        t->r->kernels.items[k].captured++;
  }
  ks_capture_close(&c);
  return 0;
}

/* capture: the program again, the picks' first launches snapshot. */
static int tune_capture(tune *t) {
  ks_ctx *ctx = t->ctx;
  const ks_tune_options *o = t->o;
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_CAPTURE, &data, &done))
    return -1;
  const char *path = ks_arena_printf(t->a, "%s/tune-capture.kscap", t->store_dir);
  if (done) {
    /* The file is used again only as the store recorded it. */
    cJSON *root = cJSON_Parse(data ? data : "");
    const char *want = root ? json_str(t->a, root, "sha256") : NULL;
    const char *choice = root ? json_str(t->a, root, "choice") : NULL;
    cJSON_Delete(root);
    char sha[KS_HASH_HEX];
    ks_ctx quiet;
    ks_ctx_init(&quiet, ctx->prog);
    bool same = want && !ks_file_sha256(&quiet, path, sha) && !strcmp(sha, want);
    ks_ctx_release(&quiet);
    if (same) {
      t->r->capture_choice = choice;
    } else {
      ks_warn(ctx, "%s is not the capture the store recorded; capturing again", path);
      done = false;
    }
  }
  phase_begin(t, KS_TUNE_CAPTURE, done);
  unsigned launches = 1;
  ks_buf names = KS_BUF_INIT;
  size_t nkernels = 0;
  for (size_t i = 0; i < t->picks.len; i++) {
    const hot *x = &t->picks.items[i];
    if (!x->signature)
      continue;
    ks_buf_addf(&names, "%s%s", names.len ? "," : "", x->mangled);
    nkernels++;
    unsigned want = x->configs < 3 ? x->configs : 3;
    if (want > launches)
      launches = want;
  }
  if (!done) {
    long long limit = o->capture_limit ? o->capture_limit : 1LL << 30;
    t->r->capture_choice = ks_arena_printf(
        t->a, "capturing the first %u launch%s of %zu kernel%s (%s: the most launch "
              "configurations one of them ran with, at most 3), up to %s per launch, %s",
        launches, launches == 1 ? "" : "es", nkernels, nkernels == 1 ? "" : "s",
        launches == 1 ? "one configuration each" : "to cover their sizes", bytes_text(t->a, limit),
        o->capture_window ? ks_arena_printf(t->a, "allocations over %s snapshot only where used",
                                            bytes_text(t->a, o->capture_window))
                          : "whole allocations");
    if (o->job.hooks.say)
      o->job.hooks.say(o->job.hooks.arg, t->r->capture_choice);
    unlink(path);
    ks_inject_options co = KS_INJECT_OPTIONS_INIT;
    co.capture = names.data;
    co.capture_launches = launches;
    co.capture_limit = limit;
    co.capture_window = o->capture_window;
    co.capture_path = path;
    co.sample_percent = 100; /* only the capture matters here */
    ks_profile p;
    bool ok;
    int rc = run_program(t, "capture", &co, &p, &ok);
    ks_buf_release(&names);
    if (rc)
      return -1;
    if (!ok) {
      t->stop = true;
      return phase_put(t, KS_TUNE_CAPTURE, "failed", NULL);
    }
    ks_profile_release(&p);
    char sha[KS_HASH_HEX] = "";
    ks_ctx quiet;
    ks_ctx_init(&quiet, ctx->prog);
    bool have = !ks_file_sha256(&quiet, path, sha);
    ks_ctx_release(&quiet);
    cJSON *root = cJSON_CreateObject();
    add_str(root, "path", path);
    add_str(root, "sha256", have ? sha : NULL);
    add_str(root, "choice", t->r->capture_choice);
    if (phase_put(t, KS_TUNE_CAPTURE, "done", json_text(t->a, root)))
      return -1;
  } else {
    ks_buf_release(&names);
  }
  t->r->capture_path = path;
  if (ks_is_file(path))
    count_captured(t, path);
  return 0;
}

/* The table's line of a kernel, from an optimize outcome (copied: the
 * pipeline's arena goes with it). */
static void line_from_outcome(tune *t, ks_tune_kernel *k, const ks_outcome *o) {
  k->evaluated = o->evaluated;
  k->resumed = o->resumed;
  k->techniques = ks_arena_strdup(t->a, o->techniques ? o->techniques : "");
  if (!strcmp(o->status, "optimized")) {
    k->search_speedup = o->speedup;
    k->verdict = "optimized"; /* until verify says */
    *ks_array_push(t->a, &t->optimized) = k->name;
  } else {
    k->verdict = ks_arena_strdup(t->a, o->status);
    k->reason = o->note ? ks_arena_strdup(t->a, o->note) : NULL;
  }
}

static cJSON *outcomes_json(const ks_tune_kernels *ks) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < ks->len; i++) {
    const ks_tune_kernel *k = &ks->items[i];
    if (!k->signature)
      continue;
    cJSON *o = cJSON_CreateObject();
    add_str(o, "kernel", k->name);
    add_str(o, "verdict", k->verdict);
    add_str(o, "reason", k->reason);
    add_str(o, "techniques", k->techniques);
    cJSON_AddNumberToObject(o, "search_speedup", k->search_speedup);
    cJSON_AddNumberToObject(o, "evaluated", k->evaluated);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static ks_tune_kernel *line_of(tune *t, const char *name) {
  for (size_t i = 0; i < t->r->kernels.len; i++)
    if (t->r->kernels.items[i].name && !strcmp(t->r->kernels.items[i].name, name))
      return &t->r->kernels.items[i];
  return NULL;
}

/* optimize: the pipeline's stages on the picks, with the capture. */
/* tune --mpi: the other ranks are sent the search's command line (the
 * follow options, the hot kernels, the capture) and the files it reads;
 * then they follow each search this rank starts. */
static int share_search(tune *t, ks_pipeline_job *job) {
  ks_tune_options *o = t->o;
  cJSON *root = cJSON_CreateObject();
  cJSON *argv = cJSON_AddArrayToObject(root, "argv");
  for (size_t i = 0; i < o->follow_argc; i++)
    cJSON_AddItemToArray(argv, cJSON_CreateString(o->follow_argv[i]));
  for (size_t i = 0; i < job->kernels->len; i++) {
    cJSON_AddItemToArray(argv, cJSON_CreateString("--kernel"));
    cJSON_AddItemToArray(argv, cJSON_CreateString(job->kernels->items[i]));
  }
  for (size_t i = 0; i < job->captures->len; i++)
    cJSON_AddItemToArray(argv, cJSON_CreateString(ks_arena_printf(t->a, "--capture=%s",
                                                                 job->captures->items[i])));
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd))
    cJSON_AddStringToObject(root, "cwd", cwd);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  const char *ignored;
  int rc = ks_pipeline_ranks_argv(o->ranks, t->ctx, text, t->a, &ignored);
  free(text);
  /* Rank 0 only reads the scan options and the captures (copies: the
   * others' are rewritten to their copy of the files). */
  ks_scan_options scan = *job->scan;
  ks_strings caps = *job->captures;
  if (rc || ks_pipeline_ranks_inputs(o->ranks, t->ctx, &scan, &caps, t->a))
    return -1;
  job->ranks = ks_pipeline_ranks_search(o->ranks);
  return 0;
}

static int tune_optimize(tune *t) {
  ks_ctx *ctx = t->ctx;
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_OPTIMIZE, &data, &done))
    return -1;
  phase_begin(t, KS_TUNE_OPTIMIZE, done);
  if (done) {
    ks_run_row row;
    if (!ks_store_run_get(ctx, t->store, t->run, t->a, &row))
      t->r->device = row.device;
    cJSON *root = cJSON_Parse(data ? data : "");
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(root, "kernels")) {
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(k, "kernel"));
      ks_tune_kernel *line = name ? line_of(t, name) : NULL;
      if (!line)
        continue;
      line->verdict = json_str(t->a, k, "verdict");
      line->reason = json_str(t->a, k, "reason");
      line->techniques = json_str(t->a, k, "techniques");
      line->search_speedup = json_num(k, "search_speedup");
      line->evaluated = (unsigned)json_num(k, "evaluated");
      line->resumed = true;
      if (line->verdict && !strcmp(line->verdict, "optimized"))
        *ks_array_push(t->a, &t->optimized) = line->name;
      t->r->kernel_failed |= line->verdict && !strcmp(line->verdict, "failed");
    }
    cJSON_Delete(root);
    return 0;
  }
  ks_pipeline_job job = t->o->job;
  ks_strings names = {0}, caps = {0};
  for (size_t i = 0; i < t->picks.len; i++)
    if (t->picks.items[i].signature)
      *ks_array_push(t->a, &names) = t->picks.items[i].signature;
  if (t->captured)
    *ks_array_push(t->a, &caps) = t->r->capture_path;
  job.kernels = &names;
  job.captures = &caps;
  job.store = t->store;
  job.store_borrowed = true;
  job.locked = true;
  job.run_borrowed = true;
  job.resume_run = t->run;
  job.command = "tune";
  job.resume_hint = "kernelsmith-cc tune --resume";
  if (t->o->ranks && share_search(t, &job)) {
    t->r->failure = ks_arena_strdup(t->a, t->ctx->error);
    t->stop = true;
    return 0;
  }
  ks_pipeline p;
  ks_pipeline_init(&p, &job);
  int rc = 0;
  if (ks_pipeline_scan(&p) || ks_pipeline_targets(&p)) {
    t->r->failure = ks_arena_strdup(t->a, ctx->error);
    t->stop = true;
    goto out;
  }
  bool prepared = !ks_pipeline_prepare(&p);
  if (p.no_gpu) {
    t->r->no_gpu = ks_arena_strdup(t->a, p.no_gpu);
    t->r->compiled = p.ready;
    t->stop = true;
  } else if (prepared) {
    const char *device = p.judge_open ? ks_pipeline_device_text(&p.arena, &p.judge)
                                      : "stand-in judge (no GPU)";
    if (p.nworkers > 1)
      device = pipeline_workers_text(&p, device);
    if (ks_store_run_set_device(ctx, t->store, t->run, device) ||
        ks_pipeline_begin(&p) || ks_pipeline_search(&p) || ks_pipeline_finish(&p)) {
      rc = -1;
      goto out;
    }
    t->r->interrupted = p.interrupted;
  }
  t->r->kernel_failed |= p.kernel_failed;
  t->r->device = p.device ? ks_arena_strdup(t->a, p.device) : NULL;
  for (size_t i = 0; i < p.kernels.len; i++) {
    const ks_outcome *o = p.kernels.items[i].outcome;
    ks_tune_kernel *line = NULL;
    for (size_t j = 0; j < t->r->kernels.len && !line; j++)
      if (t->r->kernels.items[j].signature &&
          !strcmp(t->r->kernels.items[j].name, o->kernel))
        line = &t->r->kernels.items[j];
    if (line) {
      line_from_outcome(t, line, o);
      if (p.no_gpu)
        line->verdict = strcmp(o->status, "failed") ? "no GPU" : "failed";
      if (p.no_gpu && !line->reason)
        line->reason = "scanned, sliced and compiled; the search needs an NVIDIA GPU";
    }
  }
  if (!prepared && !p.no_gpu) {
    /* no kernel could be judged: each line says why */
    ks_warn(ctx, "%s", ctx->error);
    t->stop = true;
  }
  if (!p.no_gpu && !t->r->interrupted && prepared) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "kernels", outcomes_json(&t->r->kernels));
    if (phase_put(t, KS_TUNE_OPTIMIZE, "done", json_text(t->a, root)))
      rc = -1;
  }
  if (t->r->interrupted)
    t->stop = true;
out:
  ks_pipeline_release(&p);
  return rc;
}

/* Writes `path` whole (an export: an earlier tune's file is replaced). */
static int put_file(ks_ctx *ctx, const char *path, const char *text, size_t len) {
  char sha[KS_HASH_HEX];
  if (!ks_is_file(path))
    return ks_safe_write(ctx, path, NULL, text, len);
  return ks_file_sha256(ctx, path, sha) || ks_safe_write(ctx, path, sha, text, len);
}

/* patch: the run's winners as one diff, under .kernelsmith/. */
static int tune_patch(tune *t) {
  ks_ctx *ctx = t->ctx;
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_PATCH, &data, &done))
    return -1;
  const char *path = ks_arena_printf(t->a, "%s/tune.patch", t->store_dir);
  if (done) {
    /* An export: made again when it is not what the store recorded. */
    cJSON *root = cJSON_Parse(data ? data : "");
    const char *want = root ? json_str(t->a, root, "sha256") : NULL;
    size_t files = root ? (size_t)json_num(root, "files") : 0;
    cJSON_Delete(root);
    char sha[KS_HASH_HEX];
    ks_ctx quiet;
    ks_ctx_init(&quiet, ctx->prog);
    if (!want)
      files = 0;
    else if (!ks_file_sha256(&quiet, path, sha) && !strcmp(sha, want))
      t->r->patch_path = path;
    else
      done = false;
    ks_ctx_release(&quiet);
    t->r->patch_files = files;
  }
  phase_begin(t, KS_TUNE_PATCH, done);
  if (done)
    return 0;
  t->r->patch_path = NULL;
  t->r->patch_files = 0;
  cJSON *root = cJSON_CreateObject();
  if (!t->optimized.len) {
    add_str(root, "sha256", NULL);
    return phase_put(t, KS_TUNE_PATCH, "done", json_text(t->a, root));
  }
  ks_scan scan;
  ks_winner_list wins = {0};
  int arch = 0, rc = 0;
  bool refused = false, incomplete = false;
  if (ks_scan_run(ctx, t->o->job.scan, &scan)) {
    ks_scan_release(&scan);
    cJSON_Delete(root);
    t->r->failure = ks_arena_printf(t->a, "no patch: %s", ctx->error);
    return 0;
  }
  char *root_dir = ks_path_dirname(t->store_dir);
  ks_pipeline_winners_query q = {.store_dir = t->store_dir, .run = t->run,
                                 .any_device = t->o->job.standin};
  ks_emit_plan plan;
  ks_buf patch = KS_BUF_INIT;
  ks_emit_request er = {.scan = &scan, .so = t->o->job.scan, .arch = 0, .root = root_dir,
                        .runtime_header = t->o->runtime_header};
  if (ks_pipeline_winners(ctx, &q, &scan, t->a, &wins, &arch, &refused) ||
      (er.wins = wins.items, er.nwins = wins.len, er.arch = arch,
       ks_pipeline_emit(ctx, &er, t->a, &plan, &incomplete)) ||
      ks_pipeline_patch(ctx, &plan, &patch)) {
    t->r->failure = ks_arena_printf(t->a, "no patch: %s", ctx->error);
    cJSON_Delete(root);
    goto out;
  }
  for (size_t i = 0; i < plan.notes.len; i++)
    ks_warn(ctx, "%s", plan.notes.items[i]);
  if (patch.len) {
    if (put_file(ctx, path, patch.data, patch.len)) {
      t->r->failure = ks_arena_printf(t->a, "the patch cannot be written: %s", ctx->error);
      cJSON_Delete(root);
      goto out;
    }
    char sha[KS_HASH_HEX];
    ks_sha256_hex(patch.data, patch.len, sha);
    add_str(root, "sha256", sha);
    t->r->patch_path = path;
    t->r->patch_files = plan.files.len + plan.have_header;
  } else {
    add_str(root, "sha256", NULL);
  }
  cJSON_AddNumberToObject(root, "files", (double)t->r->patch_files);
  rc = phase_put(t, KS_TUNE_PATCH, "done", json_text(t->a, root));
out:
  ks_buf_release(&patch);
  free(root_dir);
  ks_scan_release(&scan);
  return rc;
}

/* The verify report's facts the table needs, from its JSON. */
static void lines_from_verify(tune *t, const char *json) {
  cJSON *root = cJSON_Parse(json ? json : "");
  if (cJSON_IsTrue(cJSON_GetObjectItem(root, "failed")))
    t->r->failure = json_str(t->a, root, "failure");
  const cJSON *k;
  cJSON_ArrayForEach(k, cJSON_GetObjectItem(root, "kernels")) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(k, "kernel"));
    ks_tune_kernel *line = name ? line_of(t, name) : NULL;
    if (!line)
      continue;
    line->program_speedup = json_num(k, "speedup");
    line->verdict = json_str(t->a, k, "verdict");
    line->reason = json_str(t->a, k, "cause_detail");
    if (line->verdict && !strcmp(line->verdict, "failed") && !line->reason)
      line->reason = t->r->failure;
  }
  cJSON_Delete(root);
}

/* verify: the program with and without the variants (ks_verify.h). */
static int tune_verify(tune *t) {
  ks_ctx *ctx = t->ctx;
  const char *data = NULL;
  bool done = false;
  if (phase_get(t, KS_TUNE_VERIFY, &data, &done))
    return -1;
  phase_begin(t, KS_TUNE_VERIFY, done);
  t->r->verify_path = ks_arena_printf(t->a, "%s/verify.json", t->store_dir);
  if (!done && !t->optimized.len)
    return phase_put(t, KS_TUNE_VERIFY, "done", NULL);
  if (!done) {
    ks_verify_options vo = {.store_dir = t->store_dir, .run = t->run, .cmd = t->o->cmd,
                            .ncmd = t->o->ncmd, .repeat = 1, .inject_lib = t->o->inject_lib,
                            .work_parent = t->store_dir, .any_device = t->o->job.standin};
    ks_verify_report vr;
    t->r->program_runs += 2;
    if (ks_verify_run(ctx, &vo, t->a, &vr)) {
      t->r->failure = ks_arena_printf(t->a, "the program could not be verified: %s", ctx->error);
      return phase_put(t, KS_TUNE_VERIFY, "failed", NULL);
    }
    if (ks_verify_save(ctx, t->r->verify_path, &vr))
      ks_warn(ctx, "%s", ctx->error); /* an export */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int rc = !mem || ks_verify_write_json(ctx, mem, &vr);
    if (mem)
      fclose(mem);
    data = rc ? NULL : ks_arena_strdup(t->a, text);
    free(text);
    if (rc)
      return ks_fail(ctx, "the verify report cannot be kept");
    if (phase_put(t, KS_TUNE_VERIFY, vr.failed ? "failed" : "done", data))
      return -1;
  }
  if (data)
    lines_from_verify(t, data);
  return 0;
}

/* The run: a new one with tune's command line, or the one resumed. */
static int tune_open(tune *t) {
  ks_ctx *ctx = t->ctx;
  const ks_pipeline_job *job = &t->o->job;
  if (ks_store_open(ctx, job->store_dir, &t->store))
    return -1;
  char *abs = ks_realpath(job->store_dir);
  t->store_dir = ks_arena_strdup(t->a, abs ? abs : job->store_dir);
  free(abs);
  if (ks_pipeline_lock(ctx, t->store_dir, t->a, &t->lock_fd))
    return -1;
  t->run = t->o->resume_run;
  if (t->run)
    return ks_store_run_reopen(ctx, t->store, t->run);
  ks_run_row row = {.status = "running", .command = "tune",
                    .strategy = ks_strategy_name(job->search.strategy),
                    .proposer = ks_proposer_kind_name(job->proposer), .seed = job->search.seed,
                    .options = job->argv_json,
                    .device = job->standin ? "stand-in judge (no GPU)" : NULL};
  return ks_store_run_begin(ctx, t->store, &row, &t->run);
}

/* Every pick gets its line, hottest first. */
static void tune_lines(tune *t) {
  for (size_t i = 0; i < t->picks.len; i++) {
    const hot *x = &t->picks.items[i];
    ks_tune_kernel *k = ks_array_push(t->a, &t->r->kernels);
    *k = (ks_tune_kernel){.name = x->qualified ? x->qualified : x->name,
                          .signature = x->signature, .mangled = x->mangled, .file = x->file,
                          .line = x->line, .share = x->share, .total_ms = x->total_ms,
                          .techniques = "", .verdict = "not searched"};
    if (!x->signature) {
      k->verdict = "skipped";
      k->reason = "not in the sources (a library's kernel, or one outside the paths given)";
    }
  }
}

/* Lines the capture left without inputs: said before the search. */
static void capture_notes(tune *t) {
  for (size_t i = 0; i < t->r->kernels.len; i++) {
    ks_tune_kernel *k = &t->r->kernels.items[i];
    if (k->signature && !k->captured)
      ks_warn(t->ctx, "%s: no launch of it was captured (over the capture limit, or it did "
                      "not run the second time); its spec alone, if it has one, gives inputs",
              k->name);
  }
}

/* No NVIDIA driver: the program's kernels cannot run, so it is not run;
 * every kernel with a spec is scanned, sliced and compiled, as optimize
 * does without a GPU. */
static int tune_without_gpu(tune *t, const char *why) {
  ks_pipeline_job job = t->o->job;
  ks_strings none = {0}, caps = {0};
  job.kernels = &none;
  job.captures = &caps;
  job.store = NULL;
  ks_pipeline p;
  ks_pipeline_init(&p, &job);
  int rc = 0;
  if (ks_pipeline_scan(&p) || ks_pipeline_targets(&p)) {
    rc = -1;
  } else {
    ks_pipeline_prepare(&p);
    t->r->compiled = p.ready;
    t->r->kernel_failed = p.failed > 0;
    t->r->no_gpu = ks_arena_strdup(t->a, p.no_gpu ? p.no_gpu : why);
  }
  ks_pipeline_release(&p);
  return rc;
}

int ks_tune_run(ks_ctx *ctx, ks_tune_options *o, ks_arena *a, ks_tune_result *out) {
  memset(out, 0, sizeof *out);
  tune t = {.ctx = ctx, .o = o, .a = a, .r = out, .lock_fd = -1};
  if (!o->job.standin && !ks_profile_driver_ready(ctx)) {
    const char *why = ks_arena_strdup(a, ctx->error);
    return tune_without_gpu(&t, why);
  }
  int rc = tune_open(&t);
  if (!rc) {
    out->run = t.run;
    rc = tune_profile(&t);
  }
  if (!rc && !t.stop)
    rc = tune_pick(&t);
  if (!rc && !t.stop) {
    tune_lines(&t);
    rc = tune_capture(&t);
  }
  if (!rc && !t.stop) {
    if (!t.r->phase_resumed[KS_TUNE_CAPTURE] || !t.r->phase_resumed[KS_TUNE_OPTIMIZE])
      capture_notes(&t);
    rc = tune_optimize(&t);
  }
  if (!rc && !t.stop)
    rc = tune_patch(&t);
  if (!rc && !t.stop)
    rc = tune_verify(&t);
  if (!rc && t.store) {
    bool all = true;
    for (int p = 0; p < KS_TUNE_NPHASES; p++)
      all = all && out->phase_done[p];
    /* Without a GPU nothing past the compiles ran: "stopped", as a
     * budget leaves a run. */
    const char *status = out->interrupted                                  ? "interrupted"
                         : out->no_gpu                                     ? "stopped"
                         : all && !out->failure && !out->kernel_failed ? "done"
                                                                        : "failed";
    rc = ks_store_run_finish(ctx, t.store, t.run, status);
  }
  if (t.store)
    ks_store_close(t.store);
  if (t.lock_fd >= 0)
    close(t.lock_fd);
  return rc;
}
