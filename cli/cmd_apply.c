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
#include "ks_pipeline.h"
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

/* --variant: the user's variant of one kernel, judged now on this GPU as
 * `check` judges it; applied only when the judge calls it FAST. */
static int judge_variant(ks_ctx *ctx, ks_arena *a, ks_source_args *src, const ks_scan *scan,
                         const char *name, const char *file, double min_speedup, ks_winner_list *wins,
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
  w.footprints =
      ks_footprints_or_none(ctx->prog, "slice.cu", target.slice.source, w.k->qualified_name, a);
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
  ks_winner_list wins = {0};
  int arch = 0;
  ks_pipeline_winners_query wq = {.store_dir = dir, .kernels = names, .nkernels = nnames,
                                  .min_speedup = min_speedup, .not_faster = &not_faster};
  if (variant_file ? judge_variant(ctx, &a, &src, &scan, names[0], variant_file, min_speedup,
                                   &wins, &arch)
                   : ks_pipeline_winners(ctx, &wq, &scan, &a, &wins, &arch, &incomplete))
    goto fail;
  if (!wins.len)
    goto out;

  char *root_m = ks_applied_root(ctx, dir);
  if (!root_m)
    goto fail;
  const char *root = ks_arena_strdup(&a, root_m);
  free(root_m);
  ks_buf patch = KS_BUF_INIT;
  ks_emit_request er = {.scan = &scan, .so = &src.scan, .wins = wins.items, .nwins = wins.len,
                        .arch = arch, .root = root, .runtime_header = ks_runtime_header,
                        .confine = write, .want_edits = fixes != NULL};
  ks_emit_plan plan;
  if (ks_pipeline_emit(ctx, &er, &a, &plan, &incomplete))
    goto fail_patch;
  for (size_t i = 0; fixes && i < plan.files.len; i++)
    fixes_add(fixes, plan.files.items[i].file, &plan.files.items[i].edits);
  if (!write) {
    /* With --export-fixes the header is written, not in the diff. */
    ks_emit_plan diffed = plan;
    diffed.have_header = plan.have_header && !fixes;
    if (ks_pipeline_patch(ctx, &diffed, &patch))
      goto fail_patch;
  }
  /* The header: written before the files that include it (a kill between
   * them leaves no file that does not compile). Replacements cannot create
   * a file: with --export-fixes it is written too (a new file, nothing of
   * the user's is touched). */
  const char *hsaid = NULL;
  if (plan.have_header && (write || fixes)) {
    hsaid = plan.header.original ? "updated kernelsmith_dispatch.h to this version's"
                                 : "added kernelsmith_dispatch.h";
    if (ks_safe_write_check_within(ctx, root, plan.header.path, NULL)) {
      ks_fail_prefix(ctx, "the dispatch header cannot be written (so nothing is)");
      goto fail_patch;
    }
  }
  size_t nchanges = write ? plan.files.len : 0;
  if (hsaid || nchanges) {
    size_t n = nchanges + (hsaid != NULL);
    ks_applied_change *all = ks_arena_alloc(&a, n * sizeof *all);
    const char **said = ks_arena_alloc(&a, (n + 1) * sizeof *said);
    size_t at = 0;
    if (hsaid)
      all[at++] = (ks_applied_change){.path = plan.header.path, .rel = plan.header.rel,
                                      .original = plan.header.original,
                                      .original_len = plan.header.original_len,
                                      .text = plan.header.text, .len = strlen(plan.header.text)};
    for (size_t i = 0; i < nchanges; i++) {
      const ks_file_change *f = &plan.files.items[i];
      said[i] = ks_arena_printf(&a, "patched %s: %zu variant%s, %u launch site%s dispatched",
                                f->rel, f->nvariants, f->nvariants == 1 ? "" : "s", f->nsites,
                                f->nsites == 1 ? "" : "s");
      all[at++] = (ks_applied_change){.path = f->path, .rel = f->rel, .original = f->original,
                                      .original_len = f->original_len, .text = f->text,
                                      .len = strlen(f->text)};
    }
    if (write_changes(ctx, &a, dir, all, n, hsaid, said, write ? stdout : stderr))
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
  for (size_t i = 0; i < plan.notes.len; i++)
    ks_warn(ctx, "%s", plan.notes.items[i]);
  if (!write)
    fputs(patch.data ? patch.data : "", stdout);
  if (!patch.len && !nchanges && !hsaid)
    ks_warn(ctx, "nothing to apply: %s", plan.notes.len || incomplete
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
