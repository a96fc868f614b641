/* kernelsmith-cc profile: which kernels of an application take the GPU's
 * time.
 *
 *   the injection library found -> the application run with it
 *   (CUDA_INJECTION64_PATH), its streams and exit status untouched -> the
 *   JSON lines it left added up (backend/profile.c) -> the sources scanned
 *   and each kernel mapped to its definition -> the profile written as
 *   JSON, and a table on stderr.
 *
 * The table goes to stderr, and only after the application has finished,
 * so that what the application prints stays exactly its own. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_capture.h"
#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_profile.h"
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

/* The injection library: $KERNELSMITH_INJECT_LIB, else where a build tree
 * or an installation puts it relative to this executable. NULL with a
 * message when absent. */
static const char *find_inject_lib(ks_ctx *ctx, ks_arena *a) {
  const char *env = getenv("KERNELSMITH_INJECT_LIB");
  if (env && *env) {
    char *real = ks_realpath(env);
    if (!real || !ks_is_file(real)) {
      free(real);
      ks_fail(ctx, "KERNELSMITH_INJECT_LIB=%s: no such file", env);
      return NULL;
    }
    const char *r = ks_arena_strdup(a, real);
    free(real);
    return r;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    ks_fail(ctx, "cannot find the injection library: /proc/self/exe: %s; set "
                 "KERNELSMITH_INJECT_LIB", strerror(errno));
    return NULL;
  }
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  *slash = 0;
  const char *build = ks_arena_printf(a, "%s/../runtime/inject/libkernelsmith_inject.so", exe);
  const char *installed = ks_arena_printf(a, "%s/../lib/kernelsmith/libkernelsmith_inject.so", exe);
  const char *const tries[] = {build, installed};
  for (size_t i = 0; i < 2; i++) {
    char *real = ks_realpath(tries[i]);
    if (real && ks_is_file(real)) {
      const char *r = ks_arena_strdup(a, real);
      free(real);
      return r;
    }
    free(real);
  }
  ks_fail(ctx, "the injection library libkernelsmith_inject.so is not built (looked in %s/../"
               "runtime/inject and %s/../lib/kernelsmith): build the kernelsmith_inject target "
               "(it needs CUPTI) or set KERNELSMITH_INJECT_LIB",
          exe, exe);
  return NULL;
}

/* What the injection library is asked for beyond the profile: --capture
 * (NULL names: no capture) and --sample. */
typedef struct inject_opts {
  const char *names;
  long launches;
  long long limit;
  const char *path; /* the capture file */
  long long window; /* --capture-window: 0, whole allocations */
  unsigned sample;  /* percent of the time kernels are timed; 100: all */
  long after_ms;    /* every launch timed this long from the first */
} inject_opts;

static void inject_env(const inject_opts *co) {
  if (co->sample < 100) {
    char p[24];
    snprintf(p, sizeof p, "%u", co->sample);
    setenv("KERNELSMITH_PROFILE_SAMPLE", p, 1);
    snprintf(p, sizeof p, "%ld", co->after_ms);
    setenv("KERNELSMITH_PROFILE_SAMPLE_AFTER_MS", p, 1);
  }
  if (!co->names)
    return;
  char n[32];
  setenv("KERNELSMITH_CAPTURE", co->names, 1);
  setenv("KERNELSMITH_CAPTURE_OUT", co->path, 1);
  snprintf(n, sizeof n, "%ld", co->launches);
  setenv("KERNELSMITH_CAPTURE_LAUNCHES", n, 1);
  snprintf(n, sizeof n, "%lld", co->limit);
  setenv("KERNELSMITH_CAPTURE_LIMIT", n, 1);
  if (co->window) {
    snprintf(n, sizeof n, "%lld", co->window);
    setenv("KERNELSMITH_CAPTURE_WINDOW", n, 1);
  }
}

/* After the run: one line per captured launch, or why there is none. */
static void capture_report(ks_ctx *ctx, const inject_opts *co) {
  if (!co->names)
    return;
  ks_capture c;
  if (ks_capture_open(ctx, co->path, &c)) {
    ks_warn(ctx, "no capture: %s", ctx->error);
    return;
  }
  if (!c.launches.len)
    ks_warn(ctx, "no launch of %s was captured (%s)", co->names, co->path);
  else
    fprintf(stderr, "captured %zu launches to %s:\n", c.launches.len, co->path);
  ks_capture_print(stderr, &c);
  ks_capture_close(&c);
}

/* Runs `cmd` with the injection library and waits. `*wait_status` is
 * waitpid's. Fails only when CMD could not be started. */
static int run_app(ks_ctx *ctx, char **cmd, const char *lib, const char *lines,
                   const inject_opts *co, int *wait_status) {
  int report[2];
  /* Close-on-exec: a successful exec closes it, and the read sees EOF. */
  if (pipe(report))
    return ks_fail(ctx, "pipe: %s", strerror(errno));
  if (fcntl(report[0], F_SETFD, FD_CLOEXEC) || fcntl(report[1], F_SETFD, FD_CLOEXEC)) {
    ks_fail(ctx, "pipe: %s", strerror(errno));
    close(report[0]);
    close(report[1]);
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return ks_fail(ctx, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(report[0]);
    setenv("CUDA_INJECTION64_PATH", lib, 1);
    setenv("KERNELSMITH_PROFILE_OUT", lines, 1);
    inject_env(co);
    execvp(cmd[0], cmd);
    /* The parent says it, once the pipe shows exec failed. */
    int e = errno;
    ssize_t w = write(report[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  close(report[1]);
  /* A ^C reaches the application (same process group); this process
   * outlives it to write what it ran, as system() does. */
  struct sigaction ignore = {0}, old_int, old_quit;
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
    ;
  close(report[0]);
  int rc = 0;
  while (waitpid(pid, wait_status, 0) < 0) {
    if (errno != EINTR) {
      rc = ks_fail(ctx, "waitpid: %s", strerror(errno));
      break;
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  if (got == (ssize_t)sizeof exec_errno)
    return ks_fail(ctx, "cannot run '%s': %s", cmd[0], strerror(exec_errno));
  return rc;
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
  inject_opts co = {NULL, 1, 1LL << 30, NULL, 0, 20, 2000};
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
      co.names = optarg;
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
        co.launches = (long)v;
      else if (c == 1003)
        co.limit = v;
      else
        co.window = v;
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
      co.sample = (unsigned)v;
      break;
    }
    case 1006: {
      long v = ks_parse_count(optarg);
      if (v < 0 || v > 3600000) {
        rc = ks_usage_error(ctx, &ks_cmd_profile,
                            "--sample-after takes milliseconds, 0 to 3600000, not '%s'", optarg);
        goto out;
      }
      co.after_ms = v;
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
  if (!co.names && capture_tuned) {
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

  const char *lib = find_inject_lib(ctx, &arena);
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
  char *abs_dir = ks_realpath(dir);
  char *lines = ks_arena_printf(&arena, "%s/.profile-lines-XXXXXX", abs_dir ? abs_dir : dir);
  free(abs_dir);
  int fd = mkstemp(lines);
  if (fd < 0) {
    ks_error(ctx, "cannot create a file in %s: %s", dir, strerror(errno));
    rc = KS_EXIT_FAILURE;
    goto out;
  }
  close(fd);

  if (co.names) {
    char *abs = ks_realpath(dir); /* absolute, as the lines are */
    co.path = ks_arena_printf(&arena, "%s/capture.kscap", abs ? abs : dir);
    free(abs);
  }
  int status = 0;
  if (run_app(ctx, cmd, lib, lines, &co, &status)) {
    ks_error(ctx, "%s", ctx->error);
    unlink(lines);
    rc = 127; /* as a shell says "command not found" */
    goto out;
  }
  int app_rc = WIFEXITED(status) ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : KS_EXIT_FAILURE;
  rc = app_rc;

  ks_profile p;
  if (ks_profile_read_lines(ctx, lines, &p)) {
    ks_error(ctx, "%s (the records are kept there)", ctx->error);
    rc = app_rc ? app_rc : KS_EXIT_FAILURE;
    goto out;
  }
  for (int i = 0; i < ncmd; i++)
    *ks_array_push(&p.arena, &p.command) = ks_arena_strdup(&p.arena, cmd[i]);
  p.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  p.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
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
  fprintf(stderr, "profile written to %s; search the hottest kernels with: kernelsmith-cc "
                  "optimize --profile %s\n",
          out_path, out_path);
  ks_profile_release(&p);
out:
  ks_source_args_release(&src);
  ks_arena_release(&arena);
  return rc;
}

const ks_command ks_cmd_profile = {
    "profile", "run an application and find the kernels that take its GPU time", usage,
    run_profile};
