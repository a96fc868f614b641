/* winners: the verified winners of a run, read from the store and
 * resolved against a scan (ks_winners.h). */
#include "ks_winners.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_capture.h"
#include "ks_fs.h"
#include "ks_search.h"
#include "ks_slice.h"
#include "ks_specs.h"
#include "ks_target.h"
#include "ks_variant_file.h"

/* "sm_90" in the run's device text ("NVIDIA H200, sm_90, driver ...") as 90. */
static int run_arch(const ks_run_row *r) {
  const char *sm = r->device ? strstr(r->device, "sm_") : NULL;
  return sm ? atoi(sm + 3) : 0;
}

static bool wanted(const ks_winners_query *q, const char *name) {
  if (!q->nkernels)
    return true;
  for (size_t i = 0; i < q->nkernels; i++)
    if (!strcmp(q->kernels[i], name))
      return true;
  return false;
}

/* The same file, or one of the same name: a store may come from another
 * checkout, where the definition's hash decides. */
static bool same_file(const char *stored, const char *file) {
  if (!file)
    return true;
  if (!stored)
    return false;
  if (!strcmp(stored, file))
    return true;
  const char *a = strrchr(stored, '/'), *b = strrchr(file, '/');
  return !strcmp(a ? a + 1 : stored, b ? b + 1 : file);
}

static bool confirmed_fast(const ks_variant_row *v) {
  return v->evaluated && v->verdict == KS_VERDICT_FAST;
}

/* The winner's row: the one the store names, or for a run from before the
 * column the fastest variant whose newest evaluation is FAST. */
static const ks_variant_row *winner_row(const ks_kernel_row *k, const ks_variant_rows *vars) {
  const ks_variant_row *best = NULL;
  for (size_t i = 0; i < vars->len; i++) {
    const ks_variant_row *v = &vars->items[i];
    if (k->winner > 0) {
      if (v->id == k->winner)
        return confirmed_fast(v) ? v : NULL;
      continue;
    }
    if (k->winner < 0 && confirmed_fast(v) && (!best || v->speedup > best->speedup))
      best = v;
  }
  return best;
}

/* The kernel's unqualified name without template arguments ("ns::k<float>"
 * -> "k"): what the variant is named after without a scan. */
static const char *plain_name(ks_arena *a, const char *name) {
  const char *lt = strchr(name, '<');
  size_t n = lt ? (size_t)(lt - name) : strlen(name);
  const char *start = name;
  for (size_t i = 0; i + 1 < n; i++)
    if (name[i] == ':' && name[i + 1] == ':')
      start = name + i + 2;
  return ks_arena_strndup(a, start, n - (size_t)(start - name));
}

/* The spec a kernel optimized from captured launches had: made again from
 * the capture file the store names. */
static int capture_spec(ks_ctx *ctx, const char *path, const ks_scan *scan, const ks_kernel *k,
                        ks_arena *a, ks_spec *out) {
  ks_capture cap;
  if (ks_capture_open(ctx, path, &cap))
    return -1;
  int rc = ks_capture_spec(ctx, &cap, scan, k, a, out);
  if (!rc) /* the only string of the capture's own arena */
    out->file = ks_arena_strdup(a, path);
  ks_capture_close(&cap);
  return rc;
}

/* Kernel, spec and footprints from the scan; `skip` says why not. */
static void resolve(ks_ctx *ctx, const ks_winners_query *q, const ks_kernel_row *row,
                    ks_arena *a, ks_winner *w) {
  if (ks_scan_lookup(ctx, q->scan, row->name, &w->k)) {
    w->k = NULL;
    w->skip = ks_arena_printf(a, "not found under the paths scanned (%s)", ctx->error);
    return;
  }
  w->variant_name = ks_arena_printf(a, "%s_ks", w->k->name);
  if (row->source_hash && w->k->source_hash && strcmp(w->k->source_hash, row->source_hash)) {
    w->skip = ks_arena_printf(a, "its definition in %s changed since run %lld optimized it; run "
                                 "optimize again",
                              w->k->loc.file, row->run);
    return;
  }
  int found = ks_spec_find(ctx, q->scan, w->k, a, &w->spec);
  if (found < 0) {
    w->skip = ks_arena_printf(a, "its spec cannot be read: %s", ctx->error);
    return;
  }
  if (found > 0 && w->capture) {
    if (capture_spec(ctx, w->capture, q->scan, w->k, a, &w->spec)) {
      w->skip = ks_arena_printf(a, "it was optimized from captured launches, whose file cannot "
                                   "be read now: %s",
                                ctx->error);
      return;
    }
    found = 0;
  }
  if (found > 0) {
    w->skip = ks_arena_strdup(a, "it was optimized with a spec it no longer has");
    return;
  }
  w->have_spec = true;
  /* Footprints only help: a slice that does not parse leaves them out. */
  if (row->slice)
    w->footprints = ks_footprints_or_none(
        ctx->prog, ks_arena_printf(a, "%s.slice.cu", w->variant_name), row->slice, row->name, a);
}

static int load_kernel(ks_ctx *ctx, ks_store *store, const ks_winners_query *q,
                       const ks_winners *ws, const ks_kernel_row *row, ks_arena *a,
                       bool *have, ks_winner *w) {
  *have = false;
  ks_variant_rows vars = {0};
  if (ks_store_variants(ctx, store, row->id, a, &vars))
    return -1;
  const ks_variant_row *vr = winner_row(row, &vars);
  if (!vr)
    return 0;
  memset(w, 0, sizeof *w);
  w->kernel_id = row->id;
  w->name = row->name;
  w->file = row->file;
  w->source_hash = row->source_hash;
  w->variant_id = vr->id;
  w->variant = (ks_variant){.source = vr->source, .kernel_name = vr->kernel_name,
                            .grid = vr->grid, .block = vr->block, .smem = vr->smem,
                            .file = ks_arena_printf(a, "%s (variant %lld of run %lld)", row->name,
                                                    vr->id, row->run)};
  ks_store_requires_split(a, vr->requires, &w->variant.requires);
  /* What the store judged is what is applied: the row must be whole. */
  const char *hash = ks_variant_hash(a, &w->variant);
  if (!vr->hash || strcmp(hash, vr->hash))
    return ks_fail(ctx, "%s: variant %lld of %s does not match its hash; the store was edited",
                   ks_store_path(store), vr->id, row->name);
  w->is_template = vr->is_template;
  w->speedup = vr->speedup;
  w->speedup_low = vr->speedup_low;
  w->median_ms = vr->median_ms;
  w->baseline_ms = row->baseline_ms;
  w->bw_fraction = vr->bw_fraction;
  w->techniques = vr->techniques ? vr->techniques : "";
  w->proposer = vr->proposer;
  bool capture = row->spec && !strncmp(row->spec, "capture:", 8);
  w->inputs = capture ? "capture" : "spec";
  w->capture = capture ? row->spec + 8 : NULL;
  ks_store_requires_split(a, row->sites, &w->sites); /* one per line, as guards are */
  if (ks_store_eval_get(ctx, store, row->id, vr->id, a, &w->eval, &w->have_eval))
    return -1;
  if (w->have_eval)
    w->speedup_high = w->eval.speedup_high;
  if (q->min_speedup > 0 && w->speedup < q->min_speedup)
    return 0;
  w->variant_name = ks_arena_printf(a, "%s_ks", plain_name(a, row->name));
  w->note = ks_arena_printf(a, "%.2fx faster than %s on %s, verified %.10s (run %lld, %s: %s)",
                            w->speedup, plain_name(a, row->name), ws->run.device,
                            ws->run.started ? ws->run.started : "", ws->run.id,
                            ws->run.proposer ? ws->run.proposer : "rules", w->techniques);
  if (q->scan)
    resolve(ctx, q, row, a, w);
  *have = true;
  return 0;
}

int ks_winners_load(ks_ctx *ctx, const ks_winners_query *q, ks_arena *a, ks_winners *out) {
  memset(out, 0, sizeof *out);
  ks_store *store = NULL;
  int rc = -1;
  if (ks_store_open_readonly(ctx, q->store_dir, &store))
    return -1;
  bool found = false;
  if (q->run) {
    ks_run_rows runs = {0};
    if (ks_store_runs(ctx, store, a, &runs))
      goto out;
    for (size_t i = 0; i < runs.len && !found; i++)
      if (runs.items[i].id == q->run) {
        out->run = runs.items[i];
        found = true;
      }
    if (!found) {
      ks_fail(ctx, "%s has no run %lld", ks_store_path(store), q->run);
      goto out;
    }
  } else {
    if (ks_store_run_latest(ctx, store, a, &out->run, &found))
      goto out;
    if (!found) {
      ks_fail(ctx, "%s holds no optimize run: run 'kernelsmith-cc optimize' first",
              ks_store_path(store));
      goto out;
    }
  }
  out->arch = run_arch(&out->run);
  if (!out->arch && !q->any_device) {
    ks_fail(ctx, "run %lld was not judged on a GPU (%s): there is nothing verified to apply",
            out->run.id, out->run.device ? out->run.device : "no device");
    goto out;
  }
  ks_kernel_rows rows = {0};
  if (ks_store_kernels(ctx, store, out->run.id, a, &rows))
    goto out;
  for (size_t i = 0; i < rows.len; i++) {
    const ks_kernel_row *row = &rows.items[i];
    if (!wanted(q, row->name) || !same_file(row->file, q->file))
      continue;
    ks_winner w;
    bool have;
    if (load_kernel(ctx, store, q, out, row, a, &have, &w))
      goto out;
    if (have)
      *ks_array_push(a, &out->items) = w;
  }
  rc = 0;
out:
  ks_store_close(store);
  return rc;
}

void ks_winner_emit(ks_arena *a, const ks_winner *w, const int *archs, size_t narchs,
                    const char *comment, ks_emit_kernel *out) {
  size_t n = w->footprints.len;
  const char **ext = ks_arena_alloc(a, (n + 1) * sizeof *ext);
  const char **why = ks_arena_alloc(a, (n + 1) * sizeof *why);
  for (size_t i = 0; i < n; i++) {
    ext[i] = w->footprints.items[i].extent;
    why[i] = w->footprints.items[i].why;
  }
  *out = (ks_emit_kernel){.k = w->k, .spec = w->have_spec ? &w->spec : NULL, .v = &w->variant,
                          .variant_name = w->variant_name, .comment = comment, .archs = archs,
                          .narchs = narchs, .extents = ext, .extent_why = why, .nextents = n,
                          .sites = w->sites.len ? (const char *const *)w->sites.items : NULL,
                          .nsites = w->sites.len};
}

static const char *safe_name(ks_arena *a, const char *name) {
  char *s = ks_arena_strdup(a, name);
  for (char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-' || *p == '.'))
      *p = '_';
  return s;
}

const char *ks_winner_path(ks_arena *a, const char *store_dir, const char *kernel) {
  return ks_arena_printf(a, "%s/winners/%s.cu", store_dir, safe_name(a, kernel));
}

static int write_text(ks_ctx *ctx, FILE *out, const void *text) {
  return fputs(text, out) < 0 ? ks_fail(ctx, "cannot write: %s", strerror(errno)) : 0;
}

int ks_winners_export(ks_ctx *ctx, const ks_winners *ws, const char *dir, ks_arena *a) {
  const char *wdir = ks_arena_printf(a, "%s/winners", dir);
  if (ws->items.len && mkdir(wdir, 0777) && errno != EEXIST)
    return ks_fail(ctx, "cannot create %s: %s", wdir, strerror(errno));
  for (size_t i = 0; i < ws->items.len; i++) {
    const ks_winner *w = &ws->items.items[i];
    /* Nothing of the run (ids, paths) in it: the same variant exports to
     * the same bytes. */
    const char *head = ks_arena_printf(
        a, "%s\n// An export of the results store: apply reads the store, not this file.",
        w->techniques);
    const char *text = ks_variant_format(a, &w->variant, head);
    if (ks_write_file_whole(ctx, ks_winner_path(a, dir, w->name), write_text, text))
      return -1;
  }
  return 0;
}
