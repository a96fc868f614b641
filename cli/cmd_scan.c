/* kernelsmith-cc scan: every kernel and launch site of a source tree. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "ks_report.h"
#include "ks_scan.h"
#include "ks_source_args.h"

static const char usage[] =
    "usage: kernelsmith-cc scan [options] [PATH...]\n"
    "\n"
    "Parses the .cu files under each PATH (default: the current directory) as a\n"
    "compiler does, then the .cuh files none of them included, and reports every\n"
    "kernel (parameters, template parameters, attributes, shared memory, the device\n"
    "functions it calls) and every launch site (configuration and arguments as\n"
    "written, the kernel and overload it resolves to, the enclosing function).\n"
    "\n"
    "options:\n" KS_SOURCE_HELP
    "  -j, --jobs N         parser threads (default: one per CPU)\n"
    "      --no-pch         parse CUDA's headers anew for each file (slower)\n"
    "  -l, --long           every detail of every kernel and launch site\n"
    "      --json           machine-readable output (schema: docs/scan-json.md)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Files with errors are reported on stderr with file:line and scanned as far\n"
    "as they parse; the exit status is 1 when a file could not be parsed at all\n"
    "or a PATH does not exist.\n";

const ks_command ks_cmd_scan;

static int run_scan(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_JSON = 256, OPT_NO_PCH };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"jobs", required_argument, NULL, 'j'}, {"long", no_argument, NULL, 'l'},
      {"json", no_argument, NULL, OPT_JSON},  {"no-pch", no_argument, NULL, OPT_NO_PCH},
      {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  ks_scan_options *so = &src.scan;
  bool json = false, long_form = false;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "j:lh", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case 'j': {
      long n = ks_parse_count(optarg);
      if (n <= 0 || n > 1024) {
        rc = ks_usage_error(ctx, &ks_cmd_scan, "--jobs takes a number from 1 to 1024, not '%s'", optarg);
        goto out;
      }
      so->jobs = (unsigned)n;
      break;
    }
    case 'l':
      long_form = true;
      break;
    case OPT_JSON:
      json = true;
      break;
    case OPT_NO_PCH:
      so->no_pch = true;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_scan);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_scan, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_scan, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  ks_source_args_paths(&src, argc, argv, optind);

  ks_scan scan;
  if (ks_scan_run(ctx, so, &scan)) {
    ks_error(ctx, "%s", ctx->error);
    ks_scan_release(&scan);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  ks_report_diagnostics(ctx, &scan);
  if (json) {
    if (ks_report_json(ctx, stdout, &scan)) {
      ks_error(ctx, "%s", ctx->error);
      rc = KS_EXIT_FAILURE;
    }
  } else {
    ks_report_options ro = {ks_color_wanted(stdout) && ctx->color, long_form};
    ks_report_table(stdout, &scan, &ro);
  }
  ks_report_summary(ctx, &scan);
  for (size_t i = 0; i < scan.files.len; i++)
    if (scan.files.items[i].status == KS_FILE_FAILED)
      rc = KS_EXIT_FAILURE;
  if (!scan.files.len)
    ks_warn(ctx, "no .cu or .cuh files under the given paths");
  ks_scan_release(&scan);
out:
  ks_source_args_release(&src);
  return rc;
}

const ks_command ks_cmd_scan = {"scan", "find every kernel and launch site in a CUDA source tree",
                                usage, run_scan};
