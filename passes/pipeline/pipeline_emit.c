/* pipeline_emit: the winners back into the code. The store's winners
 * resolved against a scan (ks_pipeline_winners), each file's new text with
 * the variants beside the originals and their launches dispatched
 * (ks_pipeline_emit, backend/emit_*.c), the patch (ks_pipeline_patch), and
 * the compiler launcher's copy of one file (ks_pipeline_rewrite_file). The
 * writing itself (apply --write, revert's record) stays in cli/. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_patch.h"
#include "ks_safe_write.h"
#include "ks_pipeline.h"

/* A file's text and its SHA-256, which the safe write checks the file
 * against (nothing is overwritten that changed since it was read). */
static int read_hashed(ks_ctx *ctx, const char *path, size_t max, ks_buf *out,
                       char sha[KS_HASH_HEX]) {
  if (ks_read_file(ctx, path, max, out)) {
    ks_buf_release(out);
    return -1;
  }
  ks_sha256_hex(out->data, out->len, sha);
  return 0;
}

/* The version a dispatch header's text declares (KSRT_VERSION_MAJOR and
 * _MINOR); -1 when it declares none. */
static int header_version(const char *text, int *major, int *minor) {
  const char *ma = strstr(text, "#define KSRT_VERSION_MAJOR ");
  const char *mi = strstr(text, "#define KSRT_VERSION_MINOR ");
  if (!ma || !mi)
    return -1;
  *major = atoi(ma + strlen("#define KSRT_VERSION_MAJOR "));
  *minor = atoi(mi + strlen("#define KSRT_VERSION_MINOR "));
  return 0;
}

/* The header at `path` is an older version than this build's; false when
 * it cannot be read or declares none (then it is left alone). */
static bool header_older(const char *path, const char *runtime_header) {
  ks_ctx scratch;
  ks_ctx_init(&scratch, "kernelsmith-cc");
  ks_buf text = KS_BUF_INIT;
  int ma, mi, cma, cmi;
  bool older = !ks_read_file(&scratch, path, (size_t)1 << 20, &text) &&
               !header_version(text.data ? text.data : "", &ma, &mi) &&
               !header_version(runtime_header, &cma, &cmi) &&
               (ma < cma || (ma == cma && mi < cmi));
  ks_buf_release(&text);
  ks_ctx_release(&scratch);
  return older;
}


/* The path of `target` relative to the directory `from`, both absolute
 * and free of symbolic links. */
static const char *relative(ks_arena *a, const char *from, const char *target) {
  size_t i = 0, common = 0;
  while (from[i] && target[i] && from[i] == target[i]) {
    if (from[i] == '/')
      common = i;
    i++;
  }
  if (!from[i] && target[i] == '/')
    common = i;
  ks_buf b = KS_BUF_INIT;
  for (const char *p = from + common; *p; p++)
    if (*p == '/' && p[1])
      ks_buf_adds(&b, "../");
  ks_buf_adds(&b, target + common + (target[common] == '/'));
  const char *r = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return r;
}

static bool is_below(const char *root, const char *path) {
  size_t n = strlen(root);
  while (n && root[n - 1] == '/')
    n--;
  return !strncmp(path, root, n) && path[n] == '/' && path[n + 1];
}

/* `path` absolute, its "." and ".." folded as written (arena): the name a
 * walk gave, not where its links lead. */
static const char *lexical_abs(ks_arena *a, const char *path) {
  ks_buf in = KS_BUF_INIT, out = KS_BUF_INIT;
  if (path[0] != '/') {
    char *cwd = getcwd(NULL, 0);
    ks_buf_addf(&in, "%s/", cwd ? cwd : "");
    free(cwd);
  }
  ks_buf_adds(&in, path);
  for (const char *p = in.data; *p;) {
    while (*p == '/')
      p++;
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && !strncmp(p, "..", 2)) {
      while (out.len && out.data[--out.len] != '/')
        continue;
      if (out.data)
        out.data[out.len] = '\0';
    } else if (n && !(n == 1 && *p == '.')) {
      ks_buf_addc(&out, '/');
      ks_buf_add(&out, p, n);
    }
    p += n;
  }
  const char *r = ks_arena_strdup(a, out.len ? out.data : "/");
  ks_buf_release(&in);
  ks_buf_release(&out);
  return r;
}

typedef struct link_search {
  ks_arena *a;
  const char *root, *want, *found;
} link_search;

static int find_link(const char *path, void *data) {
  link_search *s = data;
  char *real = ks_realpath(path);
  if (real && !strcmp(real, s->want)) {
    const char *named = lexical_abs(s->a, path);
    if (is_below(s->root, named))
      s->found = named;
  }
  free(real);
  return s->found != NULL;
}

/* The name a scanned file (its links resolved) has inside the project:
 * itself when it lies below the root, else the path, found by walking the
 * scanned paths again, of a link below the root that leads to it; NULL when
 * there is none. */
static const char *project_path(ks_arena *a, const char *root, const ks_scan_options *so,
                                const char *file) {
  if (is_below(root, file))
    return file;
  link_search s = {a, root, file, NULL};
  ks_ctx quiet;
  ks_ctx_init(&quiet, "kernelsmith-cc");
  quiet.verbosity = KS_LOG_ERROR;
  for (size_t i = 0; i < so->npaths && !s.found; i++)
    ks_walk(&quiet, so->paths[i], find_link, &s);
  ks_ctx_release(&quiet);
  return s.found;
}

static bool named(const ks_strings *names, const char *name) {
  for (size_t i = 0; names && i < names->len; i++)
    if (!strcmp(names->items[i], name))
      return true;
  return false;
}

int ks_pipeline_winners(ks_ctx *ctx, const ks_pipeline_winners_query *pq, const ks_scan *scan,
                        ks_arena *a, ks_winner_list *wins, int *arch, bool *refused) {
  ks_winners ws;
  const char *const *names = pq->kernels;
  size_t nnames = pq->nkernels;
  double min_speedup = pq->min_speedup;
  ks_winners_query q = {.store_dir = pq->store_dir, .run = pq->run, .scan = scan,
                        .kernels = names, .nkernels = nnames, .min_speedup = min_speedup,
                        .any_device = pq->any_device};
  if (ks_winners_load(ctx, &q, a, &ws))
    return -1;
  /* A stand-in's run (tune --stand-in-judge, for tests) dispatches on
   * sm_90, the architecture its slices were compiled for. */
  *arch = ws.arch ? ws.arch : pq->any_device ? 90 : 0;
  for (size_t i = 0; i < ws.items.len; i++) {
    const ks_winner *w = &ws.items.items[i];
    if (w->skip)
      ks_warn(ctx, "%s: not applied: %s", w->name, w->skip);
    else if (named(pq->not_faster, w->name))
      ks_warn(ctx, "%s: not applied: verify found it not faster inside the program", w->name);
    else
      *ks_array_push(a, wins) = *w;
  }
  for (size_t i = 0; i < nnames; i++) {
    bool found = false, applied = false;
    for (size_t j = 0; j < ws.items.len; j++)
      found = found || !strcmp(ws.items.items[j].name, names[i]);
    for (size_t j = 0; j < wins->len; j++)
      applied = applied || !strcmp(wins->items[j].name, names[i]);
    if (!found)
      ks_warn(ctx, "%s: not applied: run %lld has no verified winner of that name%s", names[i],
              ws.run.id, min_speedup > 1 ? " that fast" : "");
    *refused = *refused || !applied;
  }
  if (!wins->len)
    ks_warn(ctx, "nothing to apply: %s", ws.items.len
                                             ? "no winner of the run can be applied (see above)"
                                             : ks_arena_printf(a, "run %lld has no verified "
                                                                  "winner%s",
                                                               ws.run.id,
                                                               min_speedup > 1 ? " that fast"
                                                                               : ""));
  return 0;
}

int ks_pipeline_emit(ks_ctx *ctx, const ks_emit_request *r, ks_arena *a, ks_emit_plan *out,
                     bool *incomplete) {
  memset(out, 0, sizeof *out);
  const ks_winner *wins = r->wins;
  const char *root = r->root;
  /* The runtime header at the project root (the store's parent). */
  const char *header = ks_arena_printf(a, "%s/kernelsmith_dispatch.h", root);
  int *archs = ks_arena_alloc(a, sizeof *archs);
  archs[0] = r->arch;
  bool need_header = false;
  /* File by file, in the scan's order. */
  for (size_t i = 0; i < r->nwins; i++) {
    const char *file = wins[i].k->loc.file;
    bool first = true;
    for (size_t j = 0; j < i; j++)
      first = first && strcmp(wins[j].k->loc.file, file);
    if (!first)
      continue;
    /* The scan resolves links: the name the file has inside the project. */
    const char *path = project_path(a, root, r->so, file);
    if (!path) {
      ks_warn(ctx, "%s: outside the project %s (the directory holding the store); not applied",
              file, root);
      *incomplete = true;
      continue;
    }
    const char *rel = relative(a, root, path);
    KS_ARRAY(ks_emit_kernel) eks = {0};
    for (size_t j = i; j < r->nwins; j++) {
      const ks_winner *w = &wins[j];
      if (strcmp(w->k->loc.file, file))
        continue;
      const char *comment = ks_arena_printf(
          a, "// kernelsmith-cc: %s.\n"
             "// Launches use it only where its guards hold; KERNELSMITH_DISABLE=%s turns it off.",
          w->note, w->k->name);
      ks_winner_emit(a, w, archs, 1, comment, ks_array_push(a, &eks));
    }
    ks_buf text = KS_BUF_INIT;
    char sha[KS_HASH_HEX];
    if (read_hashed(ctx, file, (size_t)64 << 20, &text, sha))
      return -1;
    char *fdir = ks_path_dirname(path);
    const char *include = relative(a, fdir, header);
    free(fdir);
    const char *updated = NULL;
    ks_emit_edits edits = {0};
    if (ks_emit_file(ctx, a, file, text.data, eks.items, eks.len, r->scan->launches.items,
                     r->scan->launches.len, include, &updated, &out->notes,
                     r->want_edits ? &edits : NULL)) {
      ks_buf_release(&text);
      return -1;
    }
    if (updated && r->confine && ks_safe_write_check_within(ctx, root, path, NULL)) {
      /* a link out of the project is not written through */
      ks_warn(ctx, "%s; not written", ctx->error);
      *incomplete = true;
      updated = NULL;
    }
    if (updated) {
      need_header = need_header || strstr(updated, "kernelsmith_dispatch.h");
      unsigned nsites = 0;
      for (const char *q = strstr(updated, "if (!ks_site.take("); q;
           q = strstr(q + 1, "if (!ks_site.take("))
        nsites++;
      /* The variants added: emit leaves out one that no launch dispatches. */
      size_t nvariants = 0;
      for (size_t k = 0; k < eks.len; k++)
        nvariants += strstr(updated, eks.items[k].variant_name) &&
                     !(text.data && strstr(text.data, eks.items[k].variant_name));
      *ks_array_push(a, &out->files) = (ks_file_change){
          .file = file, .path = path, .rel = rel,
          .original = ks_arena_strndup(a, text.data ? text.data : "", text.len),
          .original_len = text.len, .text = updated, .nvariants = nvariants, .nsites = nsites,
          .edits = edits};
    }
    ks_buf_release(&text);
  }
  /* The header, when a file includes it: new, or an earlier apply's that
   * lacks what this patch uses (newer output kinds, includes): it is ours,
   * so it is brought up to date. */
  struct stat st;
  if (need_header && stat(header, &st) != 0) {
    out->header = (ks_file_change){.path = header, .rel = "kernelsmith_dispatch.h",
                                   .text = r->runtime_header};
    out->have_header = true;
  } else if (need_header && header_older(header, r->runtime_header)) {
    ks_buf old = KS_BUF_INIT;
    char sha[KS_HASH_HEX];
    if (read_hashed(ctx, header, (size_t)1 << 20, &old, sha))
      return -1;
    out->header = (ks_file_change){.path = header, .rel = "kernelsmith_dispatch.h",
                                   .original = ks_arena_strndup(a, old.data, old.len),
                                   .original_len = old.len, .text = r->runtime_header};
    out->have_header = true;
    ks_buf_release(&old);
  }
  return 0;
}

int ks_pipeline_patch(ks_ctx *ctx, const ks_emit_plan *plan, ks_buf *out) {
  for (size_t i = 0; i < plan->files.len; i++) {
    const ks_file_change *f = &plan->files.items[i];
    if (ks_patch_diff(ctx, f->rel, f->original, f->original_len, f->text, strlen(f->text), 3, out))
      return -1;
  }
  if (plan->have_header) {
    const ks_file_change *h = &plan->header;
    if (ks_patch_diff(ctx, h->rel, h->original, h->original_len, h->text, strlen(h->text), 3,
                      out))
      return -1;
  }
  return 0;
}

/* The winners come from ks_winners_load, as apply's do; only a file with
 * winners costs a scan. */
int ks_pipeline_rewrite_file(ks_ctx *ctx, ks_arena *a, const char *store_dir, const char *src,
                             const ks_strings *flags,
                             bool (*targets_arch)(void *arg, int arch), void *arg,
                             const char **out, const char **why) {
  *out = NULL;
  ks_scan scan = {0};
  bool scanned = false;
  int rc = -1;
  /* The store first, without the file: only a file with winners costs a
   * scan. */
  ks_winners all;
  ks_winners_query q = {.store_dir = store_dir, .file = src, .any_device = true};
  if (ks_winners_load(ctx, &q, a, &all))
    return -1;
  if (!all.arch) {
    *why = "no run judged on a GPU";
    return 0;
  }
  q.any_device = false;
  if (!all.items.len) {
    *why = "no verified variant of a kernel of this file";
    return 0;
  }
  if (!targets_arch(arg, all.arch)) {
    *why = ks_arena_printf(a, "not built for sm_%d, where its variants were verified", all.arch);
    return 0;
  }
  /* The file as its command line compiles it. */
  const char *paths[] = {src};
  ks_scan_options so = {.paths = paths, .npaths = 1, .extra_args = (const char *const *)flags->items,
                        .nextra = flags->len, .no_compdb = true, .jobs = 1};
  if (ks_scan_run(ctx, &so, &scan))
    goto out;
  scanned = true;
  ks_winners ws;
  q.scan = &scan;
  if (ks_winners_load(ctx, &q, a, &ws))
    goto out;
  KS_ARRAY(ks_emit_kernel) eks = {0};
  int *archs = ks_arena_alloc(a, sizeof *archs);
  archs[0] = ws.arch;
  ks_buf skipped = KS_BUF_INIT;
  for (size_t i = 0; i < ws.items.len; i++) {
    const ks_winner *w = &ws.items.items[i];
    if (w->skip) {
      ks_buf_addf(&skipped, "%s%s: %s", skipped.len ? "; " : "", w->name, w->skip);
      continue;
    }
    ks_winner_emit(a, w, archs, 1, NULL, ks_array_push(a, &eks));
  }
  if (!eks.len) {
    *why = ks_arena_strdup(a, skipped.data ? skipped.data : "no winner can be applied");
    ks_buf_release(&skipped);
    rc = 0;
    goto out;
  }
  if (skipped.len)
    ks_warn(ctx, "%s: left as written: %s", src, skipped.data);
  ks_buf_release(&skipped);
  ks_buf text = KS_BUF_INIT;
  if (ks_read_file(ctx, src, (size_t)64 << 20, &text)) {
    ks_buf_release(&text);
    goto out;
  }
  ks_strings notes = {0};
  rc = ks_emit_file_lines(ctx, a, src, text.data, eks.items, eks.len, scan.launches.items,
                          scan.launches.len, "kernelsmith_dispatch.h", src, out, &notes);
  ks_buf_release(&text);
  for (size_t i = 0; i < notes.len; i++)
    ks_warn(ctx, "%s", notes.items[i]);
  if (!rc && !*out)
    *why = notes.len ? ks_arena_strdup(a, notes.items[0]) : "nothing to change";
out:
  if (scanned)
    ks_scan_release(&scan);
  return rc;
}

