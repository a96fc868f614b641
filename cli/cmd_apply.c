/* kernelsmith-cc apply: the winners of the newest optimize run put into the
 * user's sources: each variant beside its original under a derived name,
 * every launch site dispatched (backend/emit_*.c, docs/apply.md), the
 * runtime header added once at the project root. By default a unified diff
 * on stdout; with --write the files are replaced safely (hash checked, temp
 * file, fsync, rename: support/ks_safe_write.h), recorded before and after
 * (applied.h) so that revert undoes even an interrupted apply, and confined
 * to the project root. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "applied.h"
#include "ks_buf.h"
#include "ks_cli.h"
#include "ks_emit.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_judge.h"
#include "ks_patch.h"
#include "ks_safe_write.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_source_args.h"
#include "ks_specs.h"
#include "ks_store.h"
#include "ks_target.h"
#include "ks_variant_file.h"
#include "ks_verify.h"
#include "ks_winners.h"

static const char usage[] =
    "usage: kernelsmith-cc apply [options] [PATH...]\n"
    "\n"
    "Puts the winners of the newest optimize run into the sources under PATH\n"
    "(default: the current directory): each kernel's verified variant is added\n"
    "beside the original under the name KERNEL_ks, with a comment giving its\n"
    "speedup, device, date and technique chain; every launch of the kernel\n"
    "becomes a dispatch that runs the variant only on an architecture it was\n"
    "verified on and when its guards hold for the arguments, and the original\n"
    "launch, as written, otherwise (docs/apply.md). The dispatch header,\n"
    "kernelsmith_dispatch.h, is added once at the project root.\n"
    "\n"
    "By default prints a unified diff (git apply and patch -p1 accept it) and\n"
    "changes nothing. A launch site that cannot be dispatched is left as\n"
    "written, with a line on stderr saying why.\n"
    "\n"
    "options:\n"
    "  -k, --kernel NAME    only this kernel (repeat for more)\n"
    "      --min-speedup X  only winners at least X times faster (default 1.0)\n"
    "      --from-verify FILE  leave out the winners that 'kernelsmith-cc verify'\n"
    "                       found not faster inside the program (its JSON report,\n"
    "                       .kernelsmith/verify.json by default there)\n"
    "      --variant FILE   apply this variant of the one --kernel instead of a\n"
    "                       stored winner, once the judge calls it FAST on this\n"
    "                       GPU (as 'check --variant' does)\n"
    "      --write          edit the files in place: each one only if it is still\n"
    "                       what was read, through a temporary file and a rename,\n"
    "                       recorded first; 'kernelsmith-cc revert' undoes it, also\n"
    "                       when it was interrupted. Only files inside the project\n"
    "                       (the directory holding the store) are written, never\n"
    "                       through a symbolic link that leads out of it\n"
    "      --export-fixes FILE  also write the edits as clang-tidy's replacements\n"
    "                       YAML (clang-apply-replacements reads it); the\n"
    "                       dispatch header is then written at the project root\n"
    "      --store DIR      the results store (default: .kernelsmith in the\n"
    "                       project root, as for optimize)\n"
    KS_SOURCE_HELP
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 when everything asked for was applied (or there was nothing\n"
    "to apply, which a line says), 1 on failure, when a kernel asked for with -k\n"
    "is not applied (refused, or without a winner) or a file is not written, 2 on\n"
    "a usage error.\n";

const ks_command ks_cmd_apply;

extern const char ks_runtime_header[];

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
static bool header_older(const char *path) {
  ks_ctx scratch;
  ks_ctx_init(&scratch, "apply");
  ks_buf text = KS_BUF_INIT;
  int ma, mi, cma, cmi;
  bool older = !ks_read_file(&scratch, path, (size_t)1 << 20, &text) &&
               !header_version(text.data ? text.data : "", &ma, &mi) &&
               !header_version(ks_runtime_header, &cma, &cmi) &&
               (ma < cma || (ma == cma && mi < cmi));
  ks_buf_release(&text);
  ks_ctx_release(&scratch);
  return older;
}


typedef KS_ARRAY(ks_winner) winners;

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
  ks_ctx_init(&quiet, "apply");
  quiet.verbosity = KS_LOG_ERROR;
  for (size_t i = 0; i < so->npaths && !s.found; i++)
    ks_walk(&quiet, so->paths[i], find_link, &s);
  ks_ctx_release(&quiet);
  return s.found;
}

/* apply --write (and --export-fixes' header): the changes written and
 * recorded (applied.h), each said on `says_to` once made. A failure says
 * which file was not written and what was changed before it. */
static int write_changes(ks_ctx *ctx, ks_arena *a, const char *dir, ks_applied_change *all,
                         size_t n, const char *hsaid, const char *const *said, FILE *says_to) {
  ks_applied_log log;
  if (ks_applied_open(ctx, dir, true, a, &log)) {
    ks_error(ctx, "%s (nothing was changed)", ctx->error);
    ks_applied_close(&log);
    return -1;
  }
  int rc = ks_applied_write(ctx, &log, all, n, a);
  ks_applied_close(&log);
  size_t written = 0;
  ks_buf names = KS_BUF_INIT;
  for (size_t i = 0; i < n; i++) {
    if (!all[i].written)
      continue;
    fprintf(says_to, "%s\n", hsaid && i == 0 ? hsaid : said[i - (hsaid != NULL)]);
    ks_buf_addf(&names, "%s%s", written++ ? ", " : "", all[i].rel);
  }
  fflush(says_to);
  if (rc) {
    ks_error(ctx, "%s", ctx->error);
    if (written)
      ks_error(ctx, "apply stopped after changing %zu of %zu files (%s): 'kernelsmith-cc "
                    "revert' undoes %s",
               written, n, names.data, written == 1 ? "it" : "them");
    else
      ks_error(ctx, "apply stopped: nothing was changed");
  }
  ks_buf_release(&names);
  return rc;
}

/* A YAML double-quoted scalar. */
static void yaml_string(ks_buf *b, const char *s, size_t n) {
  ks_buf_addc(b, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      ks_buf_addf(b, "\\%c", ch);
    else if (ch == '\n')
      ks_buf_adds(b, "\\n");
    else if (ch == '\r')
      ks_buf_adds(b, "\\r");
    else if (ch == '\t')
      ks_buf_adds(b, "\\t");
    else if (ch < 0x20)
      ks_buf_addf(b, "\\x%02x", ch);
    else
      ks_buf_addc(b, (char)ch);
  }
  ks_buf_addc(b, '"');
}

/* One file's edits as a clang-tidy diagnostic with its replacements (the
 * --export-fixes format clang-apply-replacements reads). */
static void fixes_add(ks_buf *y, const char *file, const ks_emit_edits *edits) {
  ks_buf_adds(y, "  - DiagnosticName:  kernelsmith-cc-apply\n    DiagnosticMessage:\n");
  ks_buf_adds(y, "      Message:         \"verified variants and guarded dispatch\"\n");
  ks_buf_adds(y, "      FilePath:        ");
  yaml_string(y, file, strlen(file));
  ks_buf_addf(y, "\n      FileOffset:      %zu\n      Replacements:\n",
              edits->len ? edits->items[0].offset : 0);
  for (size_t i = 0; i < edits->len; i++) {
    ks_buf_adds(y, "        - FilePath:        ");
    yaml_string(y, file, strlen(file));
    ks_buf_addf(y, "\n          Offset:          %zu\n          Length:          %zu\n"
                   "          ReplacementText: ",
                edits->items[i].offset, edits->items[i].length);
    yaml_string(y, edits->items[i].text, strlen(edits->items[i].text));
    ks_buf_addc(y, '\n');
  }
  ks_buf_adds(y, "    Level:           Warning\n");
}

/* The winners of the newest run (passes/ks_winners.h), resolved against
 * the scan; each one that cannot be applied is said, in one line. */
static bool named(const ks_strings *names, const char *name) {
  for (size_t i = 0; names && i < names->len; i++)
    if (!strcmp(names->items[i], name))
      return true;
  return false;
}

/* `*refused` is set when a kernel asked for by name is not applied (or
 * has no winner): apply then exits 1. */
static int store_winners(ks_ctx *ctx, ks_arena *a, const char *dir, const ks_scan *scan,
                         const char *const *names, size_t nnames, double min_speedup,
                         const ks_strings *not_faster, winners *wins, int *arch,
                         bool *refused) {
  ks_winners ws;
  ks_winners_query q = {.store_dir = dir, .scan = scan, .kernels = names, .nkernels = nnames,
                        .min_speedup = min_speedup};
  if (ks_winners_load(ctx, &q, a, &ws))
    return -1;
  *arch = ws.arch;
  for (size_t i = 0; i < ws.items.len; i++) {
    const ks_winner *w = &ws.items.items[i];
    if (w->skip)
      ks_warn(ctx, "%s: not applied: %s", w->name, w->skip);
    else if (named(not_faster, w->name))
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

/* --variant: the user's variant of one kernel, judged now on this GPU as
 * `check` judges it; applied only when the judge calls it FAST. */
static int judge_variant(ks_ctx *ctx, ks_arena *a, ks_source_args *src, const ks_scan *scan,
                         const char *name, const char *file, double min_speedup, winners *wins,
                         int *arch) {
  ks_target target;
  ks_judge judge;
  bool judge_open = false;
  int rc = -1;
  if (ks_target_open(ctx, &src->scan, name, a, &target)) {
    ks_target_close(&target); /* the scan it made before the lookup failed */
    return -1;
  }
  ks_winner w = {0};
  ks_candidate cand;
  if (ks_variant_load(ctx, file, target.kernel->name, a, &w.variant, &w.is_template) ||
      ks_target_candidate(ctx, &target, &w.variant, w.is_template, a, &cand))
    goto out;
  ks_judge_options jo = {.cache_dir = ".kernelsmith/cache"};
  if (ks_judge_open(ctx, &judge, &jo))
    goto out;
  judge_open = true;
  ks_eval e;
  if (ks_judge_prepare(ctx, &judge, &target.subject, a) ||
      ks_judge_eval(ctx, &judge, &target.subject, &cand, a, &e))
    goto out;
  if (e.verdict != KS_VERDICT_FAST || e.speedup < min_speedup) {
    ks_fail(ctx, "%s: the judge calls %s %s (%s); not applied", name, file,
            ks_verdict_name(e.verdict), e.reason ? e.reason : "no reason");
    goto out;
  }
  if (ks_scan_lookup(ctx, scan, name, &w.k) || ks_spec_find(ctx, scan, w.k, a, &w.spec) != 0)
    goto out;
  w.have_spec = true;
  w.name = w.k->qualified_name;
  w.variant_name = ks_arena_printf(a, "%s_ks", w.k->name);
  ks_ctx quiet;
  ks_ctx_init(&quiet, ctx->prog);
  if (ks_footprints_from_unit(&quiet, "slice.cu", target.slice.source, w.k->qualified_name, a,
                              &w.footprints))
    w.footprints = (ks_footprints){0};
  ks_ctx_release(&quiet);
  *arch = judge.device.cc_major * 10 + judge.device.cc_minor;
  w.speedup = e.speedup;
  w.techniques = ks_variant_techniques(a, &w.variant);
  w.note = ks_arena_printf(a, "%.2fx faster than %s on %s, sm_%d (95%% interval %.3f-%.3f), "
                              "judged when applied (the variant in %s)",
                           e.speedup, w.k->name, judge.device.name, *arch, e.speedup_low,
                           e.speedup_high, file);
  *ks_array_push(a, wins) = w;
  rc = 0;
out:
  if (judge_open)
    ks_judge_close(&judge);
  ks_target_close(&target);
  return rc;
}

static int run_apply(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_MIN = 300, OPT_WRITE, OPT_STORE, OPT_FIXES, OPT_VARIANT, OPT_FROM_VERIFY };
  static const struct option opts[] = {{"kernel", required_argument, NULL, 'k'},
                                       {"from-verify", required_argument, NULL, OPT_FROM_VERIFY},
                                       {"min-speedup", required_argument, NULL, OPT_MIN},
                                       {"write", no_argument, NULL, OPT_WRITE},
                                       {"store", required_argument, NULL, OPT_STORE},
                                       {"export-fixes", required_argument, NULL, OPT_FIXES},
                                       {"variant", required_argument, NULL, OPT_VARIANT},
                                       {"help", no_argument, NULL, 'h'},
                                       KS_SOURCE_LONG,
                                       {NULL, 0, NULL, 0}};
  ks_arena a = KS_ARENA_INIT;
  ks_source_args src;
  ks_source_args_init(&src, argc);
  const char **names = ks_arena_alloc(&a, (size_t)(argc + 1) * sizeof *names);
  size_t nnames = 0;
  double min_speedup = 1.0;
  bool write = false;
  const char *dir = NULL, *fixes_path = NULL, *variant_file = NULL, *from_verify = NULL;
  ks_buf fixes_buf = KS_BUF_INIT;
  ks_buf *fixes = NULL;
  int c, rc = KS_EXIT_OK;
  ks_scan scan = {0};
  bool scanned = false;
  bool incomplete = false; /* something asked for is not applied: exit 1 */
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":hk:" KS_SOURCE_SHORT, opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case 'k':
      names[nnames++] = optarg;
      break;
    case OPT_MIN: {
      char *end;
      errno = 0;
      min_speedup = strtod(optarg, &end);
      if (end == optarg || *end || errno || min_speedup < 1.0) {
        rc = ks_usage_error(ctx, &ks_cmd_apply, "--min-speedup takes a number >= 1, not '%s'",
                            optarg);
        goto out;
      }
      break;
    }
    case OPT_WRITE:
      write = true;
      break;
    case OPT_STORE:
      dir = optarg;
      break;
    case OPT_VARIANT:
      variant_file = optarg;
      break;
    case OPT_FROM_VERIFY:
      from_verify = optarg;
      break;
    case OPT_FIXES:
      fixes_path = optarg;
      fixes = &fixes_buf;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_apply);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_apply, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_apply, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  ks_source_args_paths(&src, argc, argv, optind);
  if (variant_file && nnames != 1) {
    rc = ks_usage_error(ctx, &ks_cmd_apply, "--variant FILE needs exactly one --kernel");
    goto out;
  }

  if (!dir)
    dir = ks_store_default_dir(&a);
  ks_strings not_faster = {0};
  if (from_verify && ks_verify_not_faster(ctx, from_verify, &a, &not_faster))
    goto fail;
  if (ks_scan_run(ctx, &src.scan, &scan))
    goto fail;
  scanned = true;
  winners wins = {0};
  int arch = 0;
  if (variant_file ? judge_variant(ctx, &a, &src, &scan, names[0], variant_file, min_speedup,
                                   &wins, &arch)
                   : store_winners(ctx, &a, dir, &scan, names, nnames, min_speedup, &not_faster,
                                   &wins, &arch, &incomplete))
    goto fail;
  if (!wins.len)
    goto out;

  char *root_m = ks_applied_root(ctx, dir);
  if (!root_m)
    goto fail;
  const char *root = ks_arena_strdup(&a, root_m);
  free(root_m);
  /* The runtime header at the project root (the store's parent). */
  const char *header = ks_arena_printf(&a, "%s/kernelsmith_dispatch.h", root);
  ks_buf patch = KS_BUF_INIT;
  ks_strings notes = {0};
  int archs[] = {arch};
  bool need_header = false;
  KS_ARRAY(ks_applied_change) changes = {0};
  ks_strings said = {0}; /* what apply --write prints for each change it made */
  /* File by file, in the scan's order. */
  for (size_t i = 0; i < wins.len; i++) {
    const char *file = wins.items[i].k->loc.file;
    bool first = true;
    for (size_t j = 0; j < i; j++)
      first = first && strcmp(wins.items[j].k->loc.file, file);
    if (!first)
      continue;
    /* The scan resolves links: the name the file has inside the project. */
    const char *path = project_path(&a, root, &src.scan, file);
    if (!path) {
      ks_warn(ctx, "%s: outside the project %s (the directory holding the store); not applied",
              file, root);
      incomplete = true;
      continue;
    }
    const char *rel = relative(&a, root, path);
    KS_ARRAY(ks_emit_kernel) eks = {0};
    for (size_t j = i; j < wins.len; j++) {
      const ks_winner *w = &wins.items[j];
      if (strcmp(w->k->loc.file, file))
        continue;
      const char *comment = ks_arena_printf(
          &a, "// kernelsmith-cc: %s.\n"
              "// Launches use it only where its guards hold; KERNELSMITH_DISABLE=%s turns it off.",
          w->note, w->k->name);
      ks_winner_emit(&a, w, archs, 1, comment, ks_array_push(&a, &eks));
    }
    ks_buf text = KS_BUF_INIT;
    char sha[KS_HASH_HEX];
    if (read_hashed(ctx, file, (size_t)64 << 20, &text, sha))
      goto fail_patch;
    char *fdir = ks_path_dirname(path);
    const char *include = relative(&a, fdir, header);
    free(fdir);
    const char *updated = NULL;
    ks_emit_edits edits = {0};
    if (ks_emit_file(ctx, &a, file, text.data, eks.items, eks.len, scan.launches.items,
                     scan.launches.len, include, &updated, &notes, fixes ? &edits : NULL)) {
      ks_buf_release(&text);
      goto fail_patch;
    }
    if (updated && fixes)
      fixes_add(fixes, file, &edits);
    if (updated && write && ks_safe_write_check_within(ctx, root, path, NULL)) {
      /* a link out of the project is not written through */
      ks_warn(ctx, "%s; not written", ctx->error);
      incomplete = true;
      updated = NULL;
    }
    if (updated) {
      need_header = need_header || strstr(updated, "kernelsmith_dispatch.h");
      if (write) {
        unsigned nsites = 0;
        for (const char *q = strstr(updated, "if (!ks_site.take("); q;
             q = strstr(q + 1, "if (!ks_site.take("))
          nsites++;
        *ks_array_push(&a, &changes) = (ks_applied_change){
            .path = path, .rel = rel, .original = ks_arena_strndup(&a, text.data, text.len),
            .original_len = text.len, .text = updated, .len = strlen(updated)};
        *ks_array_push(&a, &said) =
            ks_arena_printf(&a, "patched %s: %zu variant%s, %u launch site%s dispatched", rel,
                            eks.len, eks.len == 1 ? "" : "s", nsites, nsites == 1 ? "" : "s");
      } else if (ks_patch_diff(ctx, rel, text.data, text.len, updated, strlen(updated), 3,
                               &patch)) {
        ks_buf_release(&text);
        goto fail_patch;
      }
    }
    ks_buf_release(&text);
  }
  /* The header: written before the files that include it (a kill between
   * them leaves no file that does not compile). Replacements cannot create
   * a file: with --export-fixes it is written too (a new file, nothing of
   * the user's is touched). */
  ks_applied_change hc = {0};
  const char *hsaid = NULL;
  struct stat st;
  if (need_header && stat(header, &st) != 0) {
    if (write || fixes) {
      hc = (ks_applied_change){.path = header, .rel = "kernelsmith_dispatch.h",
                               .text = ks_runtime_header, .len = strlen(ks_runtime_header)};
      hsaid = "added kernelsmith_dispatch.h";
    } else if (ks_patch_diff(ctx, "kernelsmith_dispatch.h", NULL, 0, ks_runtime_header,
                             strlen(ks_runtime_header), 3, &patch)) {
      goto fail_patch;
    }
  } else if (need_header && header_older(header)) {
    /* An earlier apply's header lacks what this patch uses (newer output
     * kinds, includes): it is ours, so it is brought up to date. */
    ks_buf old = KS_BUF_INIT;
    char sha[KS_HASH_HEX];
    if (read_hashed(ctx, header, (size_t)1 << 20, &old, sha))
      goto fail_patch;
    int hrc = 0;
    if (write || fixes) {
      hc = (ks_applied_change){.path = header, .rel = "kernelsmith_dispatch.h",
                               .original = ks_arena_strndup(&a, old.data, old.len),
                               .original_len = old.len, .text = ks_runtime_header,
                               .len = strlen(ks_runtime_header)};
      hsaid = "updated kernelsmith_dispatch.h to this version's";
    } else {
      hrc = ks_patch_diff(ctx, "kernelsmith_dispatch.h", old.data, old.len, ks_runtime_header,
                          strlen(ks_runtime_header), 3, &patch);
    }
    ks_buf_release(&old);
    if (hrc)
      goto fail_patch;
  }
  if (hsaid && ks_safe_write_check_within(ctx, root, header, NULL)) {
    ks_fail_prefix(ctx, "the dispatch header cannot be written (so nothing is)");
    goto fail_patch;
  }
  if (hsaid || changes.len) {
    size_t n = changes.len + (hsaid != NULL);
    ks_applied_change *all = ks_arena_alloc(&a, n * sizeof *all);
    if (hsaid)
      all[0] = hc;
    if (changes.len)
      memcpy(all + (hsaid != NULL), changes.items, changes.len * sizeof *all);
    if (write_changes(ctx, &a, dir, all, n, hsaid, said.items, write ? stdout : stderr))
      goto fail_patch_quiet;
  }
  if (fixes) {
    ks_buf y = KS_BUF_INIT;
    ks_buf_adds(&y, "---\nMainSourceFile:  \"\"\nDiagnostics:\n");
    ks_buf_add(&y, fixes->data ? fixes->data : "", fixes->len);
    ks_buf_adds(&y, "...\n");
    FILE *f = fopen(fixes_path, "w");
    bool ok = f && fwrite(y.data, 1, y.len, f) == y.len;
    if (f && fclose(f))
      ok = false;
    ks_buf_release(&y);
    if (!ok) {
      ks_fail(ctx, "%s: cannot write: %s", fixes_path, strerror(errno));
      goto fail_patch;
    }
  }
  for (size_t i = 0; i < notes.len; i++)
    ks_warn(ctx, "%s", notes.items[i]);
  if (!write)
    fputs(patch.data ? patch.data : "", stdout);
  if (!patch.len && !changes.len && !hsaid)
    ks_warn(ctx, "nothing to apply: %s", notes.len || incomplete
                                             ? "no file changes (see above)"
                                             : "no file changes");
  ks_buf_release(&patch);
  if (incomplete)
    rc = KS_EXIT_FAILURE;
  goto out;
fail_patch:
  ks_buf_release(&patch);
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
  goto out;
fail_patch_quiet: /* said already */
  ks_buf_release(&patch);
  rc = KS_EXIT_FAILURE;
out:
  ks_buf_release(&fixes_buf);
  if (scanned)
    ks_scan_release(&scan);
  ks_source_args_release(&src);
  ks_arena_release(&a);
  if (rc == KS_EXIT_OK && incomplete)
    rc = KS_EXIT_FAILURE;
  return rc;
}

const ks_command ks_cmd_apply = {"apply", "write the verified winners into the sources (a patch, or --write)",
                                 usage, run_apply};
