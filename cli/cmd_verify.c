/* kernelsmith-cc verify: whether the winners are faster inside the
 * user's patched program. Options parsed here; the runs, the numbers and
 * the verdicts are passes/verify.c's (ks_verify.h). The report goes to
 * stdout (the program's own stdout goes to stderr meanwhile), and always
 * to a JSON file too. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_profile_run.h"
#include "ks_store.h"
#include "ks_verify.h"

static const char usage[] =
    "usage: kernelsmith-cc verify [options] -- CMD [ARGS...]\n"
    "\n"
    "Runs the program CMD, built from the sources `apply --write` patched, under\n"
    "kernelsmith-cc's injection library (CUPTI, every launch timed): once with\n"
    "KERNELSMITH_DISABLE=1, where every launch site runs the original kernel, and\n"
    "once without, where each runs its variant KERNEL_ks when the guards hold.\n"
    "Then prints, per winner of the store's run: its GPU time in the program\n"
    "before and after, the launches, the speedup in the program beside the\n"
    "search's, the path each launch site took, and a verdict: faster, not faster\n"
    "(with its likely cause), short of the search (faster, by more than a tenth\n"
    "less than the search said; its likely cause), failed (a run did not exit 0)\n"
    "or not run.\n"
    "\n"
    "The program's exit status both times comes first. Its stdout goes to stderr\n"
    "while it runs, so that stdout holds only the report.\n"
    "\n"
    "options:\n"
    "      --repeat N       run the pair N times, alternating (default 1)\n"
    "      --store DIR      the results store (default: .kernelsmith in the\n"
    "                       project root)\n"
    "      --run N          the store's run whose winners are verified (default:\n"
    "                       the newest)\n"
    "  -o, --output FILE    the JSON report, always written (default: verify.json\n"
    "                       in the store directory)\n"
    "      --json           the JSON report on stdout instead of the table\n"
    "  -h, --help           show this help\n"
    "\n"
    "environment:\n"
    "  KERNELSMITH_INJECT_LIB  the injection library (as for profile)\n"
    "\n"
    "exit status: 0 when every run of the program exited 0 (a winner that is not\n"
    "faster is reported, not an error), 1 when a run failed or nothing could be\n"
    "measured, 2 usage error. `apply --from-verify FILE` leaves out the winners\n"
    "the report names not faster. See docs/verify.md.\n";

const ks_command ks_cmd_verify;

static int run_verify(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_REPEAT = 1000, OPT_STORE, OPT_RUN, OPT_JSON };
  static const struct option opts[] = {{"repeat", required_argument, NULL, OPT_REPEAT},
                                       {"store", required_argument, NULL, OPT_STORE},
                                       {"run", required_argument, NULL, OPT_RUN},
                                       {"output", required_argument, NULL, 'o'},
                                       {"json", no_argument, NULL, OPT_JSON},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  /* Options stop at "--"; without one, at the first word that is not an
   * option, which starts the command. */
  int dashes = 0;
  for (int i = 1; i < argc && !dashes; i++)
    if (!strcmp(argv[i], "--"))
      dashes = i;
  int opt_argc = dashes ? dashes : argc;
  ks_arena arena = KS_ARENA_INIT;
  ks_verify_options vo = {.repeat = 1};
  const char *output = NULL, *store = NULL;
  bool json = false;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(opt_argc, argv, "+:o:h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_REPEAT: {
      long v = ks_parse_count(optarg);
      if (v < 1 || v > 1000) {
        rc = ks_usage_error(ctx, &ks_cmd_verify, "--repeat takes 1 to 1000 pairs, not '%s'",
                            optarg);
        goto out;
      }
      vo.repeat = (unsigned)v;
      break;
    }
    case OPT_STORE:
      store = optarg;
      break;
    case OPT_RUN: {
      long v = ks_parse_count(optarg);
      if (v < 1) {
        rc = ks_usage_error(ctx, &ks_cmd_verify, "--run takes a run number, not '%s'", optarg);
        goto out;
      }
      vo.run = v;
      break;
    }
    case 'o':
      output = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_verify);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_verify, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_verify, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  char **cmd = dashes ? argv + dashes + 1 : argv + optind;
  int ncmd = dashes ? argc - dashes - 1 : argc - optind;
  if (ncmd <= 0) {
    rc = ks_usage_error(ctx, &ks_cmd_verify, "no command to run: give it after '--'");
    goto out;
  }
  if (dashes && optind < dashes) {
    rc = ks_usage_error(ctx, &ks_cmd_verify, "'%s' before '--' is not an option",
                        argv[optind]);
    goto out;
  }
  vo.cmd = cmd;
  vo.ncmd = ncmd;
  vo.store_dir = store ? store : ks_store_default_dir(&arena);
  if (!ks_is_dir(vo.store_dir)) {
    ks_error(ctx, "%s: no results store here; run kernelsmith-cc optimize first (or give "
                  "--store DIR)", vo.store_dir);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  if (!output)
    output = ks_arena_printf(&arena, "%s/verify.json", vo.store_dir);
  char *odir = ks_path_dirname(output);
  vo.work_parent = ks_arena_strdup(&arena, odir);
  free(odir);
  if (!ks_is_dir(vo.work_parent)) {
    ks_error(ctx, "%s: no such directory", vo.work_parent);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  vo.inject_lib = ks_inject_lib_find(ctx, &arena);
  if (!vo.inject_lib) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  ks_verify_report r;
  if (ks_verify_run(ctx, &vo, &arena, &r)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  if (r.failed)
    ks_error(ctx, "%s", r.failure); /* first, on stderr too, after the program's output */
  int saved = ks_verify_save(ctx, output, &r);
  if (saved)
    ks_error(ctx, "%s", ctx->error);
  if (json) {
    if (ks_verify_write_json(ctx, stdout, &r))
      saved = -1;
  } else {
    ks_verify_print_options po = {.color = ks_color_wanted(stdout) && ctx->color};
    ks_verify_print(stdout, &r, &po);
    size_t not_faster = 0;
    for (size_t i = 0; i < r.kernels.len; i++)
      not_faster += r.kernels.items[i].verdict == KS_VERIFY_NOT_FASTER;
    if (!saved && not_faster)
      printf("report written to %s; kernelsmith-cc apply --from-verify %s leaves out the %zu "
             "winner%s not faster\n", output, output, not_faster, not_faster == 1 ? "" : "s");
    else if (!saved)
      printf("report written to %s\n", output);
  }
  rc = r.failed || saved ? KS_EXIT_FAILURE : KS_EXIT_OK;
out:
  ks_arena_release(&arena);
  return rc;
}

const ks_command ks_cmd_verify = {
    "verify", "run the patched program with and without the variants: the speedup in it",
    usage, run_verify};
