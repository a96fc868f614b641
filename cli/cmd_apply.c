/* kernelsmith-cc apply: the winners of the newest optimize run put into the
 * user's sources: each variant beside its original under a derived name,
 * every launch site dispatched (backend/emit_*.c, docs/apply.md), the
 * runtime header added once at the project root. By default a unified diff
 * on stdout; with --write the files are replaced safely (hash checked, temp
 * file, fsync, rename: support/ks_safe_write.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
#include "optimize_run.h"

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
    "      --variant FILE   apply this variant of the one --kernel instead of a\n"
    "                       stored winner, once the judge calls it FAST on this\n"
    "                       GPU (as 'check --variant' does)\n"
    "      --write          edit the files in place: each one only if it is still\n"
    "                       what was read, through a temporary file and a rename;\n"
    "                       'kernelsmith-cc revert' undoes it\n"
    "      --export-fixes FILE  also write the edits as clang-tidy's replacements\n"
    "                       YAML (clang-apply-replacements reads it); the\n"
    "                       dispatch header is then written at the project root\n"
    "      --store DIR      the results store (default: .kernelsmith in the\n"
    "                       project root, as for optimize)\n"
    KS_SOURCE_HELP
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 when everything asked for was applied (or there was nothing\n"
    "to apply), 1 on failure, 2 on a usage error.\n";

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


typedef struct winner {
  const ks_kernel *k;
  ks_spec spec;
  ks_variant v;
  double speedup;
  const char *techniques;
  const char *note;        /* the comment's first line: where the speedup
                              was measured */
} winner;
typedef KS_ARRAY(winner) winners;

/* "sm_90" in the run's device text ("NVIDIA H200, sm_90, driver ...") as 90. */
static int run_arch(const ks_run_row *r) {
  const char *sm = r->device ? strstr(r->device, "sm_") : NULL;
  return sm ? atoi(sm + 3) : 0;
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

static bool wanted(const char *const *names, size_t n, const char *kernel) {
  if (!n)
    return true;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], kernel))
      return true;
  return false;
}

/* The winners of the newest run in the store. */

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

static int store_winners(ks_ctx *ctx, ks_arena *a, const char *dir, const ks_scan *scan,
                         const char *const *names, size_t nnames, double min_speedup,
                         winners *wins, int *arch) {
  ks_store *store = NULL;
  int rc = -1;
  if (ks_store_open_readonly(ctx, dir, &store))
    return -1;
  ks_run_row run;
  bool found = false;
  if (ks_store_run_latest(ctx, store, a, &run, &found))
    goto out;
  if (!found) {
    ks_fail(ctx, "%s holds no optimize run: run 'kernelsmith-cc optimize' first",
            ks_store_path(store));
    goto out;
  }
  *arch = run_arch(&run);
  if (!*arch) {
    ks_fail(ctx, "run %lld was not judged on a GPU (%s): there is nothing verified to apply",
            run.id, run.device ? run.device : "no device");
    goto out;
  }
  ks_kernel_rows rows = {0};
  if (ks_store_kernels(ctx, store, run.id, a, &rows))
    goto out;
  for (size_t i = 0; i < rows.len; i++) {
    const ks_kernel_row *r = &rows.items[i];
    if (!wanted(names, nnames, r->name))
      continue;
    const char *path = ks_winner_path(a, dir, r->name);
    struct stat st;
    if (stat(path, &st) != 0)
      continue; /* no faster variant */
    winner w = {0};
    if (ks_scan_lookup(ctx, scan, r->name, &w.k)) {
      ks_warn(ctx, "%s: not found under the paths scanned: %s", r->name, ctx->error);
      continue;
    }
    int spec_found = ks_spec_find(ctx, scan, w.k, a, &w.spec);
    if (spec_found > 0 && r->spec && !strncmp(r->spec, "capture:", 8) &&
        capture_spec(ctx, r->spec + 8, scan, w.k, a, &w.spec)) {
      ks_warn(ctx, "%s: it was optimized from captured launches: %s", r->name, ctx->error);
      continue;
    }
    if (spec_found < 0 || (spec_found > 0 && !w.spec.file)) {
      ks_warn(ctx, "%s: its spec cannot be read: %s", r->name,
              spec_found < 0 ? ctx->error : "it has none now");
      continue;
    }
    bool is_template = false;
    if (ks_variant_load(ctx, path, w.k->name, a, &w.v, &is_template))
      goto out;
    /* The kernel must be the one the run optimized. */
    if (r->source_hash && w.k->source_hash && strcmp(w.k->source_hash, r->source_hash)) {
      ks_warn(ctx, "%s: its definition in %s changed since run %lld optimized it; run optimize "
                   "again", r->name, w.k->loc.file, run.id);
      continue;
    }
    /* Its measured speedup: the best FAST evaluation of that technique
     * chain. */
    w.techniques = ks_variant_techniques(a, &w.v);
    ks_variant_rows vars = {0};
    if (ks_store_variants(ctx, store, r->id, a, &vars))
      goto out;
    for (size_t k = 0; k < vars.len; k++) {
      const ks_variant_row *vr = &vars.items[k];
      if (vr->evaluated && vr->verdict == KS_VERDICT_FAST && vr->techniques && w.techniques &&
          !strcmp(vr->techniques, w.techniques) && vr->speedup > w.speedup)
        w.speedup = vr->speedup;
    }
    if (w.speedup < min_speedup)
      continue;
    w.note = ks_arena_printf(a, "%.2fx faster than %s on %s, verified %.10s (run %lld, %s: %s)",
                             w.speedup, w.k->name, run.device, run.started ? run.started : "",
                             run.id, run.proposer ? run.proposer : "rules",
                             w.techniques ? w.techniques : "");
    *ks_array_push(a, wins) = w;
  }
  if (!wins->len)
    ks_info(ctx, "nothing to apply: run %lld has no verified winner%s", run.id,
            min_speedup > 1 ? " that fast" : "");
  rc = 0;
out:
  ks_store_close(store);
  return rc;
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
  if (ks_target_open(ctx, &src->scan, name, a, &target))
    return -1;
  winner w = {0};
  bool is_template = false;
  ks_candidate cand;
  if (ks_variant_load(ctx, file, target.kernel->name, a, &w.v, &is_template) ||
      ks_target_candidate(ctx, &target, &w.v, is_template, a, &cand))
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
  *arch = judge.device.cc_major * 10 + judge.device.cc_minor;
  w.speedup = e.speedup;
  w.techniques = ks_variant_techniques(a, &w.v);
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
  enum { OPT_MIN = 300, OPT_WRITE, OPT_STORE, OPT_FIXES, OPT_VARIANT };
  static const struct option opts[] = {{"kernel", required_argument, NULL, 'k'},
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
  const char *dir = NULL, *fixes_path = NULL, *variant_file = NULL;
  ks_buf fixes_buf = KS_BUF_INIT;
  ks_buf *fixes = NULL;
  int c, rc = KS_EXIT_OK;
  ks_scan scan = {0};
  bool scanned = false;
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
  if (ks_scan_run(ctx, &src.scan, &scan))
    goto fail;
  scanned = true;
  winners wins = {0};
  int arch = 0;
  if (variant_file ? judge_variant(ctx, &a, &src, &scan, names[0], variant_file, min_speedup,
                                   &wins, &arch)
                   : store_winners(ctx, &a, dir, &scan, names, nnames, min_speedup, &wins, &arch))
    goto fail;
  if (!wins.len)
    goto out;

  /* apply --write keeps its record in the store directory (applied.h),
   * which a --variant apply may be the first to need. */
  if (write && mkdir(dir, 0777) && errno != EEXIST) {
    ks_fail(ctx, "cannot create %s: %s", dir, strerror(errno));
    goto fail;
  }
  /* The runtime header at the project root (the store's parent). */
  char *store_abs = ks_realpath(dir);
  char *root = ks_path_dirname(store_abs ? store_abs : dir);
  free(store_abs);
  char *header_path = ks_path_join(root, "kernelsmith_dispatch.h");
  const char *header = ks_arena_strdup(&a, header_path);
  free(header_path);
  ks_buf patch = KS_BUF_INIT;
  ks_strings notes = {0};
  int archs[] = {arch};
  bool need_header = false;
  /* File by file, in the scan's order. */
  for (size_t i = 0; i < wins.len; i++) {
    const char *file = wins.items[i].k->loc.file;
    bool first = true;
    for (size_t j = 0; j < i; j++)
      first = first && strcmp(wins.items[j].k->loc.file, file);
    if (!first)
      continue;
    KS_ARRAY(ks_emit_kernel) eks = {0};
    for (size_t j = i; j < wins.len; j++) {
      winner *w = &wins.items[j];
      if (strcmp(w->k->loc.file, file))
        continue;
      const char *comment = ks_arena_printf(
          &a, "// kernelsmith-cc: %s.\n"
              "// Launches use it only where its guards hold; KERNELSMITH_DISABLE=%s turns it off.",
          w->note, w->k->name);
      *ks_array_push(&a, &eks) = (ks_emit_kernel){
          .k = w->k, .spec = &w->spec, .v = &w->v,
          .variant_name = ks_arena_printf(&a, "%s_ks", w->k->name), .comment = comment,
          .archs = archs, .narchs = 1};
    }
    ks_buf text = KS_BUF_INIT;
    char sha[KS_HASH_HEX];
    if (read_hashed(ctx, file, (size_t)64 << 20, &text, sha))
      goto fail_patch;
    char *fdir = ks_path_dirname(file);
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
    if (updated) {
      need_header = need_header || strstr(updated, "kernelsmith_dispatch.h");
      const char *rel = relative(&a, root, file);
      if (write) {
        if (ks_safe_write(ctx, file, sha, updated, strlen(updated)) ||
            ks_applied_record(ctx, dir, file, text.data, text.len, updated, strlen(updated))) {
          ks_buf_release(&text);
          goto fail_patch;
        }
        unsigned nsites = 0;
        for (const char *q = strstr(updated, "if (!ks_site.take("); q;
             q = strstr(q + 1, "if (!ks_site.take("))
          nsites++;
        printf("patched %s: %zu variant%s, %u launch site%s dispatched\n", rel, eks.len,
               eks.len == 1 ? "" : "s", nsites, nsites == 1 ? "" : "s");
      } else if (ks_patch_diff(ctx, rel, text.data, text.len, updated, strlen(updated), 3,
                               &patch)) {
        ks_buf_release(&text);
        goto fail_patch;
      }
    }
    ks_buf_release(&text);
  }
  struct stat st;
  if (need_header && stat(header, &st) != 0) {
    /* Replacements cannot create a file: with --export-fixes the header is
     * written (a new file, nothing of the user's is touched). */
    if (write || fixes) {
      if (ks_safe_write(ctx, header, NULL, ks_runtime_header, strlen(ks_runtime_header)) ||
          ks_applied_record(ctx, dir, header, NULL, 0, ks_runtime_header,
                            strlen(ks_runtime_header)))
        goto fail_patch;
      /* On stdout only when no patch goes there. */
      fprintf(write ? stdout : stderr, "added %s\n", relative(&a, root, header));
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
    int hrc;
    if (write || fixes) {
      hrc = ks_safe_write(ctx, header, sha, ks_runtime_header, strlen(ks_runtime_header)) ||
            ks_applied_record(ctx, dir, header, old.data, old.len, ks_runtime_header,
                              strlen(ks_runtime_header));
      if (!hrc)
        fprintf(write ? stdout : stderr, "updated %s to this version's\n",
                relative(&a, root, header));
    } else {
      hrc = ks_patch_diff(ctx, "kernelsmith_dispatch.h", old.data, old.len, ks_runtime_header,
                          strlen(ks_runtime_header), 3, &patch);
    }
    ks_buf_release(&old);
    if (hrc)
      goto fail_patch;
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
  ks_buf_release(&patch);
  free(root);
  goto out;
fail_patch:
  ks_buf_release(&patch);
  free(root);
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  ks_buf_release(&fixes_buf);
  if (scanned)
    ks_scan_release(&scan);
  ks_source_args_release(&src);
  ks_arena_release(&a);
  return rc;
}

const ks_command ks_cmd_apply = {"apply", "write the verified winners into the sources (a patch, or --write)",
                                 usage, run_apply};
