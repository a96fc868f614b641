/* kernelsmith-cc check and bench: the judge as commands. Both prepare the
 * kernel the same way (scan, spec, slice, size sets); check judges a variant
 * against it, bench times it alone. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_cli.h"
#include "ks_source_args.h"
#include "ks_eval_report.h"
#include "ks_target.h"
#include "ks_variant_file.h"

static const char check_usage[] =
    "usage: kernelsmith-cc check KERNEL --variant FILE [options] [PATH...]\n"
    "\n"
    "Judges a variant of KERNEL on the GPU: the original and the variant run on\n"
    "fresh random inputs (from KERNEL's spec) at every size set, with NaN-poisoned\n"
    "outputs, a second run with another sentinel, guard zones around every buffer\n"
    "and input checksums; then both are timed interleaved on the timed size with\n"
    "an L2 flush before every sample, and the last timed output is checked again.\n"
    "Verdict: FAST, SAME or SLOW (outside the noise or not), or what went wrong:\n"
    "WRONG, SUSPICIOUS, REFUSED, COMPILE_ERROR, CRASH, TIMEOUT, INAPPLICABLE.\n"
    "\n"
    "FILE holds the variant kernel (same parameter list) and the device code it\n"
    "adds; a 'kernelsmith-variant:' comment may give its launch policy and\n"
    "'requires' guards (docs/judge.md).\n"
    "\n"
    "options:\n"
    "      --variant FILE   the variant to judge\n"
    KS_SOURCE_HELP
    "      --seeds N        fresh input sets per size set (default: the spec's, or 3)\n"
    "      --seed S         base seed, to reproduce a run (printed in --json)\n"
    "      --no-time        verify only\n"
    "      --max-seconds S  wall-clock cap of the timing loop (default 5)\n"
    "      --device N       CUDA device (default 0)\n"
    "      --timeout S      wall-clock limit per GPU request before the worker is\n"
    "                       killed and restarted (default 60)\n"
    "      --cache-dir DIR  compiled cubins (default .kernelsmith/cache)\n"
    "      --compiler C     what compiles the original and the variant: nvcc (as the\n"
    "                       program is built), nvrtc, or auto (default: nvcc when\n"
    "                       compile_commands.json has the kernel's file and nvcc is\n"
    "                       found, else NVRTC)\n"
    "      --warm           when the timed size's data fit in L2, also time both\n"
    "                       without flushing it, as a program launching the kernel\n"
    "                       back to back runs it (reported; the verdict stays the\n"
    "                       flushed timing's)\n"
    "      --json           everything, as JSON (schema: docs/judge.md)\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 when the variant computes the same result (FAST, SAME or\n"
    "SLOW), 1 otherwise or on failure, 2 on a usage error.\n";

static const char bench_usage[] =
    "usage: kernelsmith-cc bench KERNEL [options] [PATH...]\n"
    "\n"
    "Times KERNEL on the timed size of its spec: warm-up, an L2 flush before\n"
    "every sample, CUDA events, samples until the relative standard deviation is\n"
    "under 0.5% (at least 10), samples at low SM clock dropped; median and IQR,\n"
    "achieved bandwidth and FLOP rate against the device's measured ceilings.\n"
    "\n"
    "options: as for check, without --variant, --seeds and --no-time.\n";

const ks_command ks_cmd_check;
const ks_command ks_cmd_bench;

static int run_judge(ks_ctx *ctx, const ks_command *cmd, bool check, int argc, char **argv) {
  enum { OPT_JSON = 256, OPT_VARIANT, OPT_SEEDS, OPT_SEED, OPT_NO_TIME, OPT_DEVICE, OPT_CACHE,
         OPT_MAX_SECONDS, OPT_TIMEOUT, OPT_COMPILER, OPT_WARM };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"json", no_argument, NULL, OPT_JSON},
      {"variant", required_argument, NULL, OPT_VARIANT}, {"seeds", required_argument, NULL, OPT_SEEDS},
      {"seed", required_argument, NULL, OPT_SEED}, {"no-time", no_argument, NULL, OPT_NO_TIME},
      {"device", required_argument, NULL, OPT_DEVICE}, {"cache-dir", required_argument, NULL, OPT_CACHE},
      {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"compiler", required_argument, NULL, OPT_COMPILER}, {"warm", no_argument, NULL, OPT_WARM},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  ks_judge_options jo = {.cache_dir = ".kernelsmith/cache"};
  const char *variant_file = NULL;
  bool json = false;
  int rc = KS_EXIT_OK, c;
  ks_arena arena = KS_ARENA_INIT;
  ks_target target = {0};
  ks_judge judge;
  bool judge_open = false;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    long n;
    switch (c) {
    case OPT_JSON:
      json = true;
      break;
    case OPT_VARIANT:
      variant_file = optarg;
      break;
    case OPT_SEEDS:
      if ((n = ks_parse_count(optarg)) < 1 || n > 64) {
        rc = ks_usage_error(ctx, cmd, "--seeds takes a number from 1 to 64, not '%s'", optarg);
        goto out;
      }
      jo.seeds = (unsigned)n;
      break;
    case OPT_SEED:
      jo.seed = strtoull(optarg, NULL, 0);
      break;
    case OPT_NO_TIME:
      jo.no_time = true;
      break;
    case OPT_DEVICE:
      if ((n = ks_parse_count(optarg)) < 0) {
        rc = ks_usage_error(ctx, cmd, "--device takes a device number, not '%s'", optarg);
        goto out;
      }
      jo.device = (int)n;
      break;
    case OPT_CACHE:
      jo.cache_dir = optarg;
      break;
    case OPT_MAX_SECONDS:
      jo.timing.max_seconds = atof(optarg);
      if (jo.timing.max_seconds <= 0) {
        rc = ks_usage_error(ctx, cmd, "--max-seconds takes a positive number, not '%s'", optarg);
        goto out;
      }
      break;
    case OPT_TIMEOUT: {
      double secs = atof(optarg);
      if (secs <= 0 || secs > 3600) {
        rc = ks_usage_error(ctx, cmd, "--timeout takes seconds (0 to 3600], not '%s'", optarg);
        goto out;
      }
      jo.timeout_ms = (unsigned)(secs * 1000);
      break;
    }
    case OPT_COMPILER:
      if (ks_compiler_kind_parse(optarg, &jo.compiler)) {
        rc = ks_usage_error(ctx, cmd, "--compiler takes auto, nvrtc or nvcc, not '%s'", optarg);
        goto out;
      }
      break;
    case OPT_WARM:
      jo.warm = KS_WARM_ON;
      break;
    case 'h':
      rc = ks_print_help(cmd);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, cmd, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, cmd, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind >= argc) {
    rc = ks_usage_error(ctx, cmd, "which kernel? (kernelsmith-cc scan lists them)");
    goto out;
  }
  if (check && !variant_file) {
    rc = ks_usage_error(ctx, cmd, "--variant FILE is required");
    goto out;
  }
  if (!check && variant_file) {
    rc = ks_usage_error(ctx, cmd, "--variant is for check; bench times the original");
    goto out;
  }
  const char *name = argv[optind++];
  ks_source_args_paths(&src, argc, argv, optind);

  if (ks_target_open(ctx, &src.scan, name, &arena, &target))
    goto fail;
  ks_variant variant;
  bool is_template = false;
  ks_candidate cand, *candp = NULL;
  if (check) {
    if (ks_variant_load(ctx, variant_file, target.kernel->name, &arena, &variant, &is_template) ||
        ks_target_candidate(ctx, &target, &variant, is_template, &arena, &cand))
      goto fail;
    candp = &cand;
  }
  if (ks_judge_open(ctx, &judge, &jo))
    goto fail;
  judge_open = true;
  if (ks_judge_prepare(ctx, &judge, &target.subject, &arena))
    goto fail;
  ks_eval eval;
  if (ks_judge_eval(ctx, &judge, &target.subject, candp, &arena, &eval))
    goto fail;
  /* The compiler's log is for the terminal only. */
  if (eval.compile_log && *eval.compile_log &&
      (eval.verdict == KS_VERDICT_COMPILE_ERROR || ctx->verbosity >= KS_LOG_INFO))
    fprintf(stderr, "%s", eval.compile_log);
  if (json) {
    if (ks_eval_json(ctx, stdout, &judge, &target, candp, &eval))
      goto fail;
  } else {
    ks_eval_print(stdout, &judge, &target, candp, &eval, ks_color_wanted(stdout) && ctx->color);
  }
  if (check && eval.verdict != KS_VERDICT_FAST && eval.verdict != KS_VERDICT_SAME &&
      eval.verdict != KS_VERDICT_SLOW)
    rc = KS_EXIT_FAILURE;
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  if (judge_open)
    ks_judge_close(&judge);
  ks_target_close(&target);
  ks_arena_release(&arena);
  ks_source_args_release(&src);
  return rc;
}

static int run_check(ks_ctx *ctx, int argc, char **argv) {
  return run_judge(ctx, &ks_cmd_check, true, argc, argv);
}

static int run_bench(ks_ctx *ctx, int argc, char **argv) {
  return run_judge(ctx, &ks_cmd_bench, false, argc, argv);
}

const ks_command ks_cmd_check = {"check", "judge a variant of a kernel on the GPU: verify and time",
                                 check_usage, run_check};
const ks_command ks_cmd_bench = {"bench", "time a kernel on the GPU under the judge's protocol",
                                 bench_usage, run_bench};
