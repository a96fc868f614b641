/* kernelsmith-cc's entry point: global options, then one subcommand from the
 * table below. Logic lives in the libraries; this file only dispatches. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "launcher.h"
#include "ks_version.h"

static const ks_command *const commands[] = {
    &ks_cmd_tune,
    &ks_cmd_profile,
    &ks_cmd_replay,
    &ks_cmd_optimize,
    &ks_cmd_status,
    &ks_cmd_apply,
    &ks_cmd_revert,
    &ks_cmd_verify,
    &ks_cmd_stats,
    &ks_cmd_export,
    &ks_cmd_scan,
    &ks_cmd_extract,
    &ks_cmd_doctor,
    &ks_cmd_spec,
    &ks_cmd_check,
    &ks_cmd_bench,
    &ks_cmd_rewrite,
};

static const char program_help[] =
    "usage: kernelsmith-cc [global options] <command> [options]\n"
    "\n"
    "Finds the CUDA kernels of a source tree, searches for faster variants,\n"
    "proves them equal on the GPU and writes them back as guarded patches.\n"
    "\n"
    "global options:\n"
    "  -h, --help          show this help (or a command's: <command> --help)\n"
    "      --version       print the version and exit\n"
    "  -v, --verbose       more messages (repeat for debug output)\n"
    "  -q, --quiet         errors only\n"
    "      --color=WHEN    colour diagnostics: auto (default), always, never;\n"
    "                      NO_COLOR in the environment turns colour off\n"
    "\n"
    "commands:\n";

static void print_program_help(FILE *out) {
  fputs(program_help, out);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(out, "  %-10s  %s\n", commands[i]->name, commands[i]->summary);
  fputs("\nexit status: 0 success, 1 failure, 2 usage error\n", out);
}

int ks_usage_error(ks_ctx *ctx, const ks_command *cmd, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (cmd)
    fprintf(stderr, "%s %s: %s (see '%s %s --help')\n", ctx->prog, cmd->name, msg, ctx->prog,
            cmd->name);
  else
    fprintf(stderr, "%s: %s (see '%s --help')\n", ctx->prog, msg, ctx->prog);
  return KS_EXIT_USAGE;
}

int ks_print_help(const ks_command *cmd) {
  fputs(cmd->usage, stdout);
  return KS_EXIT_OK;
}

long ks_parse_count(const char *text) {
  char *end;
  long v = strtol(text, &end, 10);
  if (!*text || *end || v < 0)
    return -1;
  return v;
}

int ks_parse_devices(const char *text, int *out, size_t *n, bool *all) {
  *n = 0;
  *all = !strcmp(text, "all");
  if (*all)
    return 0;
  const char *p = text;
  for (;;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || *p == '-' || *p == '+' || v > 255 || *n == KS_MAX_WORKERS ||
        (*end && *end != ','))
      return -1;
    out[(*n)++] = (int)v;
    if (!*end)
      return 0;
    p = end + 1;
  }
}

long long ks_parse_bytes(const char *text) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (!*text || end == text || v < 0 || errno)
    return -1;
  int shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M')
    shift = 20;
  else if (*end == 'G')
    shift = 30;
  if (shift) {
    end++;
    if (!strcmp(end, "iB") || !strcmp(end, "B"))
      end += strlen(end);
    if (v > (LLONG_MAX >> shift))
      return -1;
    v <<= shift;
  }
  return *end ? -1 : v;
}

int main(int argc, char **argv) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "kernelsmith-cc");
  int verbosity = KS_LOG_WARN;
  const char *color = "auto";

  enum { OPT_VERSION = 256, OPT_COLOR };
  static const struct option opts[] = {
      {"help", no_argument, NULL, 'h'},       {"version", no_argument, NULL, OPT_VERSION},
      {"verbose", no_argument, NULL, 'v'},    {"quiet", no_argument, NULL, 'q'},
      {"color", required_argument, NULL, OPT_COLOR}, {NULL, 0, NULL, 0}};
  /* '+': stop at the first non-option, which is the command. */
  int c, rc = KS_EXIT_OK;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+hvq", opts, NULL)) != -1) {
    switch (c) {
    case 'h':
      print_program_help(stdout);
      goto out;
    case OPT_VERSION:
      printf("kernelsmith-cc %s\n", KS_VERSION);
      goto out;
    case 'v':
      verbosity++;
      break;
    case 'q':
      verbosity = KS_LOG_ERROR;
      break;
    case OPT_COLOR:
      color = optarg;
      break;
    default:
      rc = ks_usage_error(&ctx, NULL, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (!strcmp(color, "always"))
    ctx.color = true;
  else if (!strcmp(color, "never"))
    ctx.color = false;
  else if (strcmp(color, "auto")) {
    rc = ks_usage_error(&ctx, NULL, "--color takes auto, always or never, not '%s'", color);
    goto out;
  }
  ctx.verbosity = verbosity > KS_LOG_DEBUG ? KS_LOG_DEBUG : (ks_log_level)verbosity;

  if (optind >= argc) {
    print_program_help(stderr);
    rc = KS_EXIT_USAGE;
    goto out;
  }
  const char *name = argv[optind];
  if (!strcmp(name, "help")) {
    /* "help CMD" is "CMD --help". */
    if (optind + 1 < argc) {
      for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(commands[i]->name, argv[optind + 1])) {
          rc = ks_print_help(commands[i]);
          goto out;
        }
      rc = ks_usage_error(&ctx, NULL, "no command '%s'", argv[optind + 1]);
      goto out;
    }
    print_program_help(stdout);
    goto out;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
    if (!strcmp(commands[i]->name, name)) {
      int first = optind;
      optind = 0; /* reset getopt for the command's own parse (GNU) */
      /* The command sees argv starting at its own name, as argv[0]. */
      rc = commands[i]->run(&ctx, argc - first, argv + first);
      goto out;
    }
  }
  /* A compiler command: kernelsmith-cc as CMAKE_CUDA_COMPILER_LAUNCHER, or
   * `kernelsmith-cc nvcc ARGS...`. */
  if (ks_launcher_wanted(name)) {
    rc = ks_launcher_run(&ctx, argc - optind, argv + optind);
    goto out;
  }
  rc = ks_usage_error(&ctx, NULL, "no command '%s'", name);
out:
  ks_ctx_release(&ctx);
  return rc;
}
