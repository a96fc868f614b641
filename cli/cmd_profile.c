/* kernelsmith-cc profile: which kernels of an application take the GPU's
 * time.
 *
 *   the injection library found -> the driver checked (without one the
 *   application runs all the same, after a warning) -> the application run
 *   with it
 *   (CUDA_INJECTION64_PATH; backend/profile_run.c), its streams and exit
 *   status untouched -> the
 *   JSON lines it left added up (backend/profile.c) -> the sources scanned
 *   and each kernel mapped to its definition -> the profile written as
 *   JSON, and a table on stderr.
 *
 * The table goes to stderr, and only after the application has finished,
 * so that what the application prints stays exactly its own. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_capture.h"
#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_profile.h"
#include "ks_profile_run.h"
#include "ks_scan.h"
#include "ks_source_args.h"
#include "ks_store.h"

static const char usage[] =
    "usage: kernelsmith-cc profile [options] [PATH...] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD once with the CUDA driver loading kernelsmith-cc's injection library\n"
    "(CUPTI), which records every kernel the application runs on the GPU. Then\n"
    "it adds the records up per kernel, finds each kernel's definition among the\n"
    "sources under PATH (default: the current directory), writes the profile as\n"
    "JSON and prints the kernels by GPU time on stderr. `optimize --profile FILE`\n"
    "searches the hottest ones.\n"
    "\n"
    "CMD's standard streams are its own; the exit status is CMD's (128+N when a\n"
    "signal N ended it). A CMD that crashed still leaves a profile of what ran\n"
    "before.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE    the profile (default: .kernelsmith/profile.json in the\n"
    "                       project root: the nearest directory above holding .git\n"
    "                       or .kernelsmith, else the current directory)\n"
    "  -n, --rows N         kernels in the table (default 20; 0: all)\n"
    "      --capture K[,K...]  also snapshot every argument of the first launches\n"
    "                       of these kernels (qualified names as scan shows them,\n"
    "                       with or without template arguments, or mangled names),\n"
    "                       device memory copied before and after each launch;\n"
    "                       written beside the profile as capture.kscap\n"
    "      --launches N     launches captured per kernel (default 1)\n"
    "      --capture-limit BYTES  the most allocation bytes one launch may capture\n"
    "                       (default 1G); a larger launch is recorded as over\n"
    "                       the limit, without snapshots. BYTES here and below\n"
    "                       may end in K, M or G (powers of 1024)\n"
    "      --capture-window BYTES  snapshot an allocation larger than this only\n"
    "                       from its lowest pointer to its highest plus BYTES\n"
    "                       (pooled memory: one allocation for many tensors)\n"
    "      --sample P       after the first --sample-after ms, time kernels only\n"
    "                       P% of the time (1-100, default 20; 100: every\n"
    "                       launch) and count every launch: a kernel's total is\n"
    "                       then its timed launches' mean times its launches.\n"
    "                       Cuts the cost CUPTI adds to every kernel on the GPU\n"
    "      --sample-after MS  time every launch for this long from the first\n"
    "                       (default 2000: shorter runs are timed whole)\n"
    KS_SOURCE_HELP
    "  -h, --help           show this help\n"
    "\n"
    "environment:\n"
    "  KERNELSMITH_INJECT_LIB  the injection library (default: found beside the\n"
    "                       executable, in a build tree or installed)\n"
    "\n"
    "The formats are in docs/profile.md and docs/profile-format.md.\n";

const ks_command ks_cmd_profile;

/* After the run: one line per captured launch, or why there is none. */
static void capture_report(ks_ctx *ctx, const ks_inject_options *co) {
  if (!co->capture)
    return;
  ks_capture c;
  if (ks_capture_open(ctx, co->capture_path, &c)) {
    ks_warn(ctx, "no capture: %s", ctx->error);
    return;
  }
  if (!c.launches.len)
    ks_warn(ctx, "no launch of %s was captured (%s)", co->capture, co->capture_path);
  else
    fprintf(stderr, "captured %zu launches to %s:\n", c.launches.len, co->capture_path);
  ks_capture_print(stderr, &c);
  ks_capture_close(&c);
}

/* Maps the profile's kernels to the sources; a scan that fails leaves them
 * unmapped, with a warning: the measurement is still worth keeping. */
static void map_to_sources(ks_ctx *ctx, const ks_scan_options *so, ks_profile *p) {
  if (!p->kernels.len)
    return;
  ks_scan scan;
  if (ks_scan_run(ctx, so, &scan)) {
    ks_warn(ctx, "the sources could not be scanned (%s); the profile names no definitions",
            ctx->error);
  } else {
    size_t mapped = ks_profile_map(p, &scan.kernels);
    if (!scan.files.len)
      ks_warn(ctx, "no .cu or .cuh files under the given paths: no kernel is mapped to its "
                   "definition");
    else
      ks_info(ctx, "%zu of %zu kernels found in %zu source files", mapped, p->kernels.len,
              scan.files.len);
  }
  ks_scan_release(&scan);
}

/* Where the profile goes; the default directory is created. */
static const char *output_path(ks_ctx *ctx, const char *option, ks_arena *a, const char **dir) {
  if (option) {
    char *d = ks_path_dirname(option);
    *dir = ks_arena_strdup(a, d);
    free(d);
    if (!ks_is_dir(*dir)) {
      ks_fail(ctx, "%s: no such directory", *dir);
      return NULL;
    }
    return option;
  }
  *dir = ks_store_default_dir(a);
  if (mkdir(*dir, 0777) && errno != EEXIST) {
    ks_fail(ctx, "cannot create %s: %s", *dir, strerror(errno));
    return NULL;
  }
  return ks_arena_printf(a, "%s/profile.json", *dir);
}

static int run_profile(ks_ctx *ctx, int argc, char **argv) {
  static const struct option opts[] = {KS_SOURCE_LONG,
                                       {"output", required_argument, NULL, 'o'},
                                       {"rows", required_argument, NULL, 'n'},
                                       {"capture", required_argument, NULL, 1001},
                                       {"launches", required_argument, NULL, 1002},
                                       {"capture-limit", required_argument, NULL, 1003},
                                       {"sample", required_argument, NULL, 1004},
                                       {"capture-window", required_argument, NULL, 1005},
                                       {"sample-after", required_argument, NULL, 1006},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  /* Options and paths stop at "--"; without one, at the first word that is
   * not an option, which starts the command. */
  int dashes = 0;
  for (int i = 1; i < argc && !dashes; i++)
    if (!strcmp(argv[i], "--"))
      dashes = i;
  int opt_argc = dashes ? dashes : argc;
  ks_source_args src;
  ks_source_args_init(&src, argc);
  ks_arena arena = KS_ARENA_INIT;
  const char *output = NULL;
  long rows = 20;
  ks_inject_options co = KS_INJECT_OPTIONS_INIT;
  bool capture_tuned = false;                   /* --launches or --capture-limit given */
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(opt_argc, argv, "+:" KS_SOURCE_SHORT "o:n:h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case 'o':
      output = optarg;
      break;
    case 'n':
      rows = ks_parse_count(optarg);
      if (rows < 0) {
        rc = ks_usage_error(ctx, &ks_cmd_profile, "--rows takes a number, not '%s'", optarg);
        goto out;
      }
      break;
    case 1001:
      if (!*optarg) {
        rc = ks_usage_error(ctx, &ks_cmd_profile, "--capture needs kernel names");
        goto out;
      }
      co.capture = optarg;
      break;
    case 1002:
    case 1003:
    case 1005: {
      long long v = c == 1002 ? ks_parse_count(optarg) : ks_parse_bytes(optarg);
      if (v <= 0) {
        rc = ks_usage_error(ctx, &ks_cmd_profile, "%s takes a positive number, not '%s'",
                            c == 1002 ? "--launches"
                            : c == 1003 ? "--capture-limit" : "--capture-window", optarg);
        goto out;
      }
      capture_tuned = true;
      if (c == 1002)
        co.capture_launches = (long)v;
      else if (c == 1003)
        co.capture_limit = v;
      else
        co.capture_window = v;
      break;
    }
    case 1004: {
      long v = ks_parse_count(optarg);
      if (v < 1 || v > 100) {
        rc = ks_usage_error(ctx, &ks_cmd_profile,
                            "--sample takes the percent of the time kernels are timed, 1 to 100, "
                            "not '%s'", optarg);
        goto out;
      }
      co.sample_percent = (unsigned)v;
      break;
    }
    case 1006: {
      long v = ks_parse_count(optarg);
      if (v < 0 || v > 3600000) {
        rc = ks_usage_error(ctx, &ks_cmd_profile,
                            "--sample-after takes milliseconds, 0 to 3600000, not '%s'", optarg);
        goto out;
      }
      co.sample_after_ms = v;
      break;
    }
    case 'h':
      rc = ks_print_help(&ks_cmd_profile);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_profile, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_profile, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (!co.capture && capture_tuned) {
    rc = ks_usage_error(ctx, &ks_cmd_profile,
                        "--launches, --capture-limit and --capture-window go with --capture "
                        "KERNEL[,KERNEL...]");
    goto out;
  }
  char **cmd = dashes ? argv + dashes + 1 : argv + optind;
  int ncmd = dashes ? argc - dashes - 1 : argc - optind;
  if (ncmd <= 0) {
    rc = ks_usage_error(ctx, &ks_cmd_profile, "no command to profile: give it after '--'");
    goto out;
  }
  ks_source_args_paths(&src, dashes ? dashes : optind, argv, optind);

  const char *lib = ks_inject_lib_find(ctx, &arena);
  const char *dir = NULL;
  const char *out_path = lib ? output_path(ctx, output, &arena, &dir) : NULL;
  if (!out_path) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  /* The lines go beside the profile: same file system, and a directory
   * the user chose to write to. Absolute, since the application may change
   * its directory before CUDA loads the library. */
  const char *lines = ks_profile_lines_file(ctx, &arena, dir);
  if (!lines) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
    goto out;
  }

  if (co.capture) {
    char *abs = ks_realpath(dir); /* absolute, as the lines are */
    co.capture_path = ks_arena_printf(&arena, "%s/capture.kscap", abs ? abs : dir);
    free(abs);
  }
  /* Without a driver the application still runs (the user asked for it),
   * but CUDA neither loads the library nor runs a kernel: said first, so
   * that an empty profile is not a surprise. */
  bool driver = ks_profile_driver_ready(ctx);
  if (!driver)
    ks_warn(ctx, "%s; %s runs all the same, but no kernel of it can be recorded", ctx->error,
            cmd[0]);
  int status = 0;
  if (ks_profile_run_app(ctx, cmd, lib, lines, &co, &status)) {
    ks_error(ctx, "%s", ctx->error);
    unlink(lines);
    rc = 127; /* as a shell says "command not found" */
    goto out;
  }
  int app_rc = ks_profile_exit_code(status);
  rc = app_rc;

  ks_profile p;
  if (ks_profile_read_run(ctx, lines, cmd, ncmd, status, &p)) {
    ks_error(ctx, "%s (the records are kept there)", ctx->error);
    rc = app_rc ? app_rc : KS_EXIT_FAILURE;
    goto out;
  }
  map_to_sources(ctx, &src.scan, &p);
  if (ks_profile_save(ctx, out_path, &p)) {
    ks_error(ctx, "%s (the records are kept in %s)", ctx->error, lines);
    ks_profile_release(&p);
    rc = app_rc ? app_rc : KS_EXIT_FAILURE;
    goto out;
  }
  unlink(lines);
  char cwd[PATH_MAX];
  ks_profile_print_options po = {.color = ks_color_wanted(stderr) && ctx->color,
                                 .relative_to = getcwd(cwd, sizeof cwd),
                                 .max_rows = (size_t)rows};
  ks_profile_print(stderr, &p, &po);
  capture_report(ctx, &co);
  if (p.kernels.len)
    fprintf(stderr, "profile written to %s; search the hottest kernels with: kernelsmith-cc "
                    "optimize --profile %s\n",
            out_path, out_path);
  else /* nothing to optimize from it */
    fprintf(stderr, "profile written to %s; it holds no kernel%s\n", out_path,
            driver ? "" : " (no working NVIDIA driver: see above)");
  ks_profile_release(&p);
out:
  ks_source_args_release(&src);
  ks_arena_release(&arena);
  return rc;
}

const ks_command ks_cmd_profile = {
    "profile", "run an application and find the kernels that take its GPU time", usage,
    run_profile};
