/* launcher: kernelsmith-cc as a compiler launcher (docs/apply.md).
 *
 *     kernelsmith-cc nvcc ARGS...
 *     CMAKE_CUDA_COMPILER_LAUNCHER=kernelsmith-cc          (or "kernelsmith-cc;ccache")
 *
 * For a compile (-c, -dc) of one .cu file, or a build of a program from .cu
 * files in one command (`nvcc -o app a.cu b.cu`), each .cu file that has
 * verified winners in the nearest results store, built for the
 * architecture they were verified on, gets a rewritten copy beside the
 * output (never in the source tree), with #line directives that keep every original line's number and
 * file, and compiles that copy instead, with the source's directory on the
 * include path. Everything else is passed through untouched (exec of the
 * same arguments: byte-identical objects). A problem inside the tool, or a
 * rewritten copy that does not compile, falls back to the plain command
 * with a one-line warning; the compiler's exit code is returned. No LLM
 * call and no GPU work happens here. What each compile did is appended to
 * the store's launcher.log, which `kernelsmith-cc stats` counts. */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"
#include "ks_buf.h"
#include "ks_cuda.h"
#include "ks_emit.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_safe_write.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_specs.h"
#include "ks_store.h"
#include "ks_pipeline.h"

extern const char ks_runtime_header[];

bool ks_launcher_wanted(const char *word) {
  if (strchr(word, '/'))
    return true;
  static const char *const compilers[] = {"nvcc", "ccache", "sccache", "clang", "clang++"};
  for (size_t i = 0; i < sizeof compilers / sizeof *compilers; i++)
    if (!strcmp(word, compilers[i]))
      return true;
  return false;
}

/* Runs argv; returns its exit status (127 when it cannot start). */
static int run_command(char **argv) {
  pid_t pid = fork();
  if (pid < 0)
    return 127;
  if (pid == 0) {
    execvp(argv[0], argv);
    fprintf(stderr, "kernelsmith-cc: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void log_line(const char *store_dir, const char *what, const char *file, const char *why) {
  if (!store_dir)
    return;
  char path[4096];
  snprintf(path, sizeof path, "%s/launcher.log", store_dir);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  char line[8192];
  int n = snprintf(line, sizeof line, "%lld\t%s\t%s\t%s\n", (long long)time(NULL), what, file,
                   why ? why : "");
  if (n > 0)
    (void)!write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  close(fd);
}

/* The nearest directory at or above `dir` holding .kernelsmith/kernelsmith.db. */
static char *find_store(const char *dir) {
  char *d = strdup(dir);
  while (d) {
    char *store = ks_path_join(d, ".kernelsmith");
    char *db = ks_path_join(store, "kernelsmith.db");
    bool found = ks_is_file(db);
    free(db);
    if (found) {
      free(d);
      return store;
    }
    free(store);
    if (!strcmp(d, "/") || !strcmp(d, ".")) {
      free(d);
      return NULL;
    }
    char *up = ks_path_dirname(d);
    free(d);
    d = up;
  }
  return NULL;
}

/* Whether a visible GPU is sm_<arch> (what nvcc's -arch=native builds
 * for). Asks the driver for attributes only: no GPU work at build time. */
static bool native_is(int arch) {
  ks_ctx quiet; /* a missing driver only means "no" here */
  ks_ctx_init(&quiet, "kernelsmith-cc");
  ks_cuda cu;
  if (ks_cuda_load(&quiet, &cu)) {
    ks_ctx_release(&quiet);
    return false;
  }
  ks_gpu_info gpus[16];
  int n = ks_cuda_devices(&quiet, &cu, gpus, 16);
  bool found = false;
  for (int i = 0; i < n && i < 16; i++)
    found = found || 10 * gpus[i].cc_major + gpus[i].cc_minor == arch;
  ks_cuda_unload(&cu);
  ks_ctx_release(&quiet);
  return found;
}

/* Whether the command line builds code for sm_<arch>: the sm_NN and
 * compute_NN values of -arch, --gpu-architecture, -code, -gencode and
 * --generate-code, and nvcc's all, all-major and native (CMake passes
 * -arch=native for CMAKE_CUDA_ARCHITECTURES=native). */
static bool targets_arch(char **argv, int argc, int arch) {
  static const char *const flags[] = {"-arch", "--gpu-architecture", "-gencode",
                                      "--generate-code", "--gpu-code", "-code"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    for (size_t f = 0; f < sizeof flags / sizeof *flags && !v; f++) {
      size_t n = strlen(flags[f]);
      if (!strncmp(a, flags[f], n) && (a[n] == '=' || a[n] == '\0'))
        v = a[n] == '=' ? a + n + 1 : (i + 1 < argc ? argv[i + 1] : "");
    }
    if (!v)
      continue;
    if (!strcmp(v, "all") || (!strcmp(v, "all-major") && arch % 10 == 0))
      return true;
    if (!strcmp(v, "native") && native_is(arch))
      return true;
    for (const char *p = v; *p; p++) {
      const char *num = !strncmp(p, "sm_", 3) ? p + 3 : !strncmp(p, "compute_", 8) ? p + 8 : NULL;
      if (num && atoi(num) == arch)
        return true;
    }
  }
  return false;
}

enum { MAX_SOURCES = 64 };

typedef struct plan {
  int src[MAX_SOURCES]; /* indexes of the .cu arguments */
  int nsrc;
  const char *output;   /* the -o value, or NULL */
  bool compile;         /* -c or -dc: an object per source */
} plan;

/* Modes whose output is not an object or a program (preprocessing,
 * dependencies, PTX, cubins, device links): passed through. */
static bool other_mode(const char *a) {
  static const char *const modes[] = {"-E", "-M", "-MM", "-ptx", "-cubin", "-fatbin", "-lib",
                                      "-dlink", "-run", "--preprocess", "--generate-dependencies",
                                      "--ptx", "--cubin", "--fatbin", "--lib", "--device-link",
                                      "--run", "-optix-ir", "--optix-ir", "-dryrun", "--dryrun"};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (!strcmp(a, modes[i]))
      return true;
  return false;
}

/* A compile of one .cu file (-c, -dc), or a build of a program from one or
 * more .cu files (compile and link in one command, as `nvcc -o app a.cu
 * b.cu` does): the .cu arguments are rewritten, everything else kept. */
static bool read_plan(char **argv, int argc, plan *p) {
  memset(p, 0, sizeof *p);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-c") || !strcmp(a, "--compile") || !strcmp(a, "-dc") ||
        !strcmp(a, "--device-c"))
      p->compile = true;
    else if (other_mode(a))
      return false;
    else if (!strcmp(a, "-o") && i + 1 < argc)
      p->output = argv[++i];
    else if (!strncmp(a, "--output-file=", 14))
      p->output = a + 14;
    else if (a[0] != '-' && ks_path_has_ext(a, ".cu") && ks_is_file(a)) {
      if (p->nsrc == MAX_SOURCES)
        return false;
      p->src[p->nsrc++] = i;
    }
  }
  /* -c with several sources makes an object per source, named after each:
   * a rewritten copy would change the names. Passed through. */
  return p->nsrc == 1 || (p->nsrc > 1 && !p->compile);
}

/* What the pipeline asks of the command line: does it build for sm_<arch>? */
typedef struct arch_query {
  char **argv;
  int argc;
} arch_query;

static bool builds_for(void *arg, int arch) {
  arch_query *q = arg;
  return targets_arch(q->argv, q->argc, arch);
}

/* The rewritten copy's text, or NULL with *why when there is nothing to do
 * (no error) or something is wrong (ctx->error set, returns -1): the
 * pipeline's stage, on the file as this command line compiles it. */
static int rewrite(ks_ctx *ctx, ks_arena *a, const char *store_dir, const char *src, char **argv,
                   int argc, const char **out, const char **why) {
  char *dir = ks_path_dirname(src);
  ks_strings flags = {0};
  ks_flags_translate(a, (const char *const *)argv, (size_t)argc, dir, &flags);
  free(dir);
  arch_query q = {argv, argc};
  return ks_pipeline_rewrite_file(ctx, a, store_dir, src, &flags, builds_for, &q, out, why);
}

/* Writes `text` to `path` unless it already holds exactly that. */
static int put_file(ks_ctx *ctx, const char *path, const char *text) {
  char sha[KS_HASH_HEX];
  if (ks_is_file(path)) {
    char want[KS_HASH_HEX];
    ks_sha256_hex(text, strlen(text), want);
    if (ks_file_sha256(ctx, path, sha))
      return -1;
    if (!strcmp(sha, want))
      return 0;
    return ks_safe_write(ctx, path, sha, text, strlen(text));
  }
  return ks_safe_write(ctx, path, NULL, text, strlen(text));
}

/* `path` made absolute against the current directory (its directory
 * resolved when it exists), malloc'd: the name that tells one output's
 * copy from another's. */
static char *out_path_of(const char *path) {
  char *dir = ks_path_dirname(path);
  char *real = ks_realpath(dir);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char *res = NULL;
  if (real) {
    res = ks_path_join(real, base);
  } else if (path[0] == '/') {
    res = strdup(path);
  } else {
    char cwd[4096];
    res = ks_path_join(getcwd(cwd, sizeof cwd) ? cwd : ".", path);
  }
  free(real);
  free(dir);
  return res;
}

/* What nvcc names its output when there is no -o: SRC's base name with
 * .o for a compile (in the current directory), a.out for a program. */
static const char *default_output(ks_arena *a, const char *src, bool compile) {
  if (!compile)
    return "a.out";
  const char *base = strrchr(src, '/');
  base = base ? base + 1 : src;
  size_t n = strlen(base);
  return ks_arena_printf(a, "%.*s.o", (int)(n > 3 ? n - 3 : n), base);
}

/* One source of the command: its rewritten copy, or NULL when it is to be
 * compiled as written (no store, nothing to do: logged as passed). -1: a
 * problem, said in a warning and logged (the whole command then falls back). */
static int rewrite_source(ks_ctx *ctx, ks_arena *a, char **argv, int argc, const char *arg,
                          const char *copy, const char **out, char **store_out) {
  *out = NULL;
  *store_out = NULL;
  char *src = ks_realpath(arg);
  if (!src)
    return 0;
  char *dir = ks_path_dirname(src);
  char *store_dir = find_store(dir);
  free(dir);
  if (!store_dir) {
    free(src);
    return 0;
  }
  *store_out = store_dir;
  const char *text = NULL, *why = NULL;
  ctx->error[0] = '\0';
  int rc = 0;
  if (rewrite(ctx, a, store_dir, src, argv, argc, &text, &why)) {
    if (!ctx->error[0]) /* every failure says why; this one did not */
      ks_fail(ctx, "the rewrite failed without a reason (a bug: please report it)");
    rc = -1;
  } else if (!text) {
    log_line(store_dir, "passed", src, why);
  } else {
    /* In the store's build/<digest of the copy's absolute name>/ (the
     * name says which output it belongs to): one directory per copy, so
     * parallel compiles never share one, and nothing lands in the user's
     * tree when the build writes its outputs there. */
    char *path = out_path_of(copy);
    char digest[KS_HASH_HEX];
    ks_sha256_hex(path, strlen(path), digest);
    const char *base = strrchr(path, '/');
    const char *cdir = ks_arena_printf(a, "%s/build/%.16s", store_dir, digest);
    const char *to = ks_arena_printf(a, "%s/%s", cdir, base ? base + 1 : path);
    char *header = ks_path_join(cdir, "kernelsmith_dispatch.h");
    free(path);
    if (ks_mkdir_p(cdir))
      rc = ks_fail(ctx, "%s: cannot create the directory: %s", cdir, strerror(errno));
    else if (put_file(ctx, to, text) || put_file(ctx, header, ks_runtime_header))
      rc = -1;
    free(header);
    if (!rc)
      *out = to;
  }
  if (rc) {
    ks_warn(ctx, "%s: compiled as written: %s", arg, ctx->error);
    log_line(store_dir, "fell back", src, ctx->error);
  }
  free(src);
  return rc;
}

int ks_launcher_run(ks_ctx *ctx, int argc, char **argv) {
  plan p;
  /* ccache and sccache: the compiler is their first argument. */
  int skip = (!strcmp(argv[0], "ccache") || !strcmp(argv[0], "sccache") ||
              strstr(argv[0], "/ccache") || strstr(argv[0], "/sccache")) ? 1 : 0;
  if (!read_plan(argv + skip, argc - skip, &p))
    goto pass;
  ks_arena a = KS_ARENA_INIT;
  const char *out = p.output ? p.output : default_output(&a, argv[p.src[0] + skip], p.compile);
  const char *copies[MAX_SOURCES] = {0};
  char *stores[MAX_SOURCES] = {0};
  int nrewritten = 0, failed = 0, rc;
  for (int k = 0; k < p.nsrc && !failed; k++) {
    /* OUT.ks.cu for one source, OUT.ks.N.BASE for each of several, in
     * the store (rewrite_source says where). */
    const char *arg = argv[p.src[k] + skip], *base = strrchr(arg, '/');
    const char *copy = p.nsrc == 1 ? ks_arena_printf(&a, "%s.ks.cu", out)
                                   : ks_arena_printf(&a, "%s.ks.%d.%s", out, k, base ? base + 1 : arg);
    failed = rewrite_source(ctx, &a, argv + skip, argc - skip, arg, copy, &copies[k], &stores[k]);
    nrewritten += copies[k] != NULL;
  }
  if (failed || !nrewritten)
    goto plain;
  /* Each copy instead of its source, the source's directory first on the
   * include path for its quoted includes; the output named as the plain
   * command names it. */
  char **args = ks_arena_alloc(&a, (size_t)(argc + 2 * p.nsrc + 3) * sizeof *args);
  int n = 0;
  for (int i = 0; i < argc; i++) {
    int k = -1;
    for (int j = 0; j < p.nsrc; j++)
      if (p.src[j] + skip == i)
        k = j;
    if (k >= 0 && copies[k]) {
      char *src = ks_realpath(argv[i]);
      char *srcdir = src ? ks_path_dirname(src) : NULL;
      args[n++] = ks_arena_printf(&a, "-I%s", srcdir ? srcdir : ".");
      args[n++] = (char *)copies[k];
      free(srcdir);
      free(src);
    } else {
      args[n++] = argv[i];
    }
  }
  if (!p.output) {
    args[n++] = "-o";
    args[n++] = (char *)out;
  }
  args[n] = NULL;
  rc = run_command(args);
  for (int k = 0; k < p.nsrc; k++) {
    if (!copies[k])
      continue;
    char *src = ks_realpath(argv[p.src[k] + skip]);
    if (rc == 0)
      log_line(stores[k], "rewritten", src ? src : argv[p.src[k] + skip], NULL);
    else
      log_line(stores[k], "fell back", src ? src : argv[p.src[k] + skip],
               "the rewritten copy did not compile");
    free(src);
  }
  if (rc == 0)
    goto done;
  ks_warn(ctx, "%s: the rewritten cop%s did not compile; compiling as written",
          argv[p.src[0] + skip], nrewritten > 1 ? "ies" : "y");
plain:
  rc = run_command(argv);
done:
  for (int k = 0; k < p.nsrc; k++)
    free(stores[k]);
  ks_arena_release(&a);
  return rc;
pass:
  execvp(argv[0], argv);
  fprintf(stderr, "kernelsmith-cc: cannot run %s: %s\n", argv[0], strerror(errno));
  return 127;
}

static const char stats_usage[] =
    "usage: kernelsmith-cc stats [--store DIR]\n"
    "\n"
    "How many compilations the compiler launcher rewrote, passed through, or\n"
    "compiled as written after a problem (with the reasons), from the store's\n"
    "launcher.log.\n";

static int run_stats(ks_ctx *ctx, int argc, char **argv) {
  ks_arena a = KS_ARENA_INIT;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--store") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
      return ks_print_help(&ks_cmd_stats);
    else
      return ks_usage_error(ctx, &ks_cmd_stats, "unexpected argument '%s'", argv[i]);
  }
  if (!dir)
    dir = ks_store_default_dir(&a);
  const char *path = ks_arena_printf(&a, "%s/launcher.log", dir);
  ks_buf text = KS_BUF_INIT;
  unsigned rewritten = 0, passed = 0, fell = 0;
  if (ks_is_file(path) && ks_read_file(ctx, path, (size_t)256 << 20, &text)) {
    ks_error(ctx, "%s", ctx->error);
    ks_buf_release(&text);
    ks_arena_release(&a);
    return KS_EXIT_FAILURE;
  }
  for (char *l = text.data; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl)
      *nl = '\0';
    char *what = strchr(l, '\t');
    if (what) {
      what++;
      if (!strncmp(what, "rewritten", 9))
        rewritten++;
      else if (!strncmp(what, "passed", 6))
        passed++;
      else if (!strncmp(what, "fell back", 9)) {
        fell++;
        printf("fell back: %s\n", what + 10);
      }
    }
    l = nl ? nl + 1 : NULL;
  }
  printf("rewritten %u, passed through %u, fell back %u\n", rewritten, passed, fell);
  ks_buf_release(&text);
  ks_arena_release(&a);
  return KS_EXIT_OK;
}

const ks_command ks_cmd_stats = {"stats", "what the compiler launcher did", stats_usage, run_stats};
