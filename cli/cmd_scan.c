/* kernelsmith-cc scan: every kernel and launch site of a source tree. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "ks_report.h"
#include "ks_scan.h"

static const char usage[] =
    "usage: kernelsmith-cc scan [options] [PATH...]\n"
    "\n"
    "Parses the .cu files under each PATH (default: the current directory) as a\n"
    "compiler does, then the .cuh files none of them included, and reports every\n"
    "kernel (parameters, template parameters, attributes, shared memory, the device\n"
    "functions it calls) and every launch site (configuration and arguments as\n"
    "written, the kernel and overload it resolves to, the enclosing function).\n"
    "\n"
    "options:\n"
    "  -p, --build-dir DIR  read compile flags from DIR/compile_commands.json\n"
    "                       (default: look beside and above each PATH, and in build/)\n"
    "      --no-compdb      ignore any compile_commands.json\n"
    "  -I DIR               add an include directory for every file\n"
    "  -D NAME[=VALUE]      define a macro for every file\n"
    "      --extra-arg ARG  pass ARG to the parser (e.g. --extra-arg=-std=c++20)\n"
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
  enum { OPT_JSON = 256, OPT_NO_PCH, OPT_NO_COMPDB, OPT_EXTRA };
  static const struct option opts[] = {
      {"build-dir", required_argument, NULL, 'p'}, {"jobs", required_argument, NULL, 'j'},
      {"long", no_argument, NULL, 'l'},            {"json", no_argument, NULL, OPT_JSON},
      {"no-pch", no_argument, NULL, OPT_NO_PCH},   {"no-compdb", no_argument, NULL, OPT_NO_COMPDB},
      {"extra-arg", required_argument, NULL, OPT_EXTRA}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_scan_options so = {0};
  bool json = false, long_form = false;
  const char **extra = calloc((size_t)argc + 1, sizeof *extra);
  size_t nextra = 0;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":p:j:lhI:D:", opts, NULL)) != -1) {
    switch (c) {
    case 'p':
      so.build_dir = optarg;
      break;
    case 'j': {
      long n = ks_parse_count(optarg);
      if (n <= 0 || n > 1024) {
        rc = ks_usage_error(ctx, &ks_cmd_scan, "--jobs takes a number from 1 to 1024, not '%s'", optarg);
        goto out;
      }
      so.jobs = (unsigned)n;
      break;
    }
    case 'l':
      long_form = true;
      break;
    case 'I':
    case 'D': {
      /* Kept as one argument: "-Ipath", "-DNAME=1". */
      size_t n = strlen(optarg) + 3;
      char *arg = malloc(n);
      snprintf(arg, n, "-%c%s", c, optarg);
      extra[nextra++] = arg;
      break;
    }
    case OPT_EXTRA:
      extra[nextra++] = strdup(optarg);
      break;
    case OPT_JSON:
      json = true;
      break;
    case OPT_NO_PCH:
      so.no_pch = true;
      break;
    case OPT_NO_COMPDB:
      so.no_compdb = true;
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
  static const char *const here[] = {"."};
  so.paths = optind < argc ? (const char *const *)argv + optind : here;
  so.npaths = optind < argc ? (size_t)(argc - optind) : 1;
  so.extra_args = extra;
  so.nextra = nextra;

  ks_scan scan;
  if (ks_scan_run(ctx, &so, &scan)) {
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
  for (size_t i = 0; i < nextra; i++)
    free((char *)extra[i]);
  free(extra);
  return rc;
}

const ks_command ks_cmd_scan = {"scan", "find every kernel and launch site in a CUDA source tree",
                                usage, run_scan};
