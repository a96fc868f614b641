/* compile_nvcc: one unit compiled by nvcc, as the user's build compiles the
 * kernel's file, so that the judge times the machine code the program
 * runs (docs/judge.md, "Which compiler": NVRTC addresses __shared__ arrays
 * with 64-bit pointers where nvcc uses 32-bit ones, and ptxas then
 * allocates registers differently).
 *
 * The unit goes to a private directory (mkdtemp, mode 0700) as unit.cu,
 * with `void *ks_nvcc_keep_N = (void *)&EXPR;` appended for each name
 * expression: host code that refers to the instance makes nvcc emit it, as
 * a launch in the program does. nvcc runs through posix_spawn with its
 * output on a close-on-exec pipe (other threads spawning at the same time
 * inherit nothing), and the directory is removed whatever happened. */
#define _GNU_SOURCE /* pipe2 */
#include "compile_nvcc.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_fs.h"
#include "ks_nvrtc.h"

extern char **environ;

/* Runs argv[0] with argv, stdout and stderr into `out` (up to its limit;
 * the rest is read and dropped, so the child never blocks). Returns the
 * exit status, or -1 when it could not run or died of a signal. */
static int run_captured(const char *const *argv, ks_buf *out) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC))
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int err = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    return -1;
  }
  char chunk[8192];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    (void)ks_buf_add(out, chunk, (size_t)n); /* cut at the limit */
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ks_nvcc_find(ks_compiler *c, const char *toolkit_root) {
  c->nvcc[0] = c->nvcc_version[0] = '\0';
  const char *env = getenv("KERNELSMITH_NVCC");
  char path[sizeof c->nvcc];
  if (env && *env)
    snprintf(path, sizeof path, "%s", env);
  else if (toolkit_root)
    snprintf(path, sizeof path, "%s/bin/nvcc", toolkit_root);
  else
    return;
  if (access(path, X_OK))
    return;
  ks_buf out = KS_BUF_INIT;
  out.limit = 1u << 16;
  const char *argv[] = {path, "--version", NULL};
  /* "Cuda compilation tools, release 13.0, V13.0.88" */
  const char *v = run_captured(argv, &out) == 0 ? strstr(out.data, ", V") : NULL;
  if (v) {
    v += 3;
    snprintf(c->nvcc_version, sizeof c->nvcc_version, "%.*s", (int)strcspn(v, " \t\r\n"), v);
    snprintf(c->nvcc, sizeof c->nvcc, "%s", path);
  }
  ks_buf_release(&out);
}

char *ks_nvcc_mangled_key(const char *mangled) {
  ks_buf b = KS_BUF_INIT;
  const char *p = mangled;
  for (;;) {
    const char *anon = strstr(p, "_GLOBAL__N_");
    if (!anon)
      break;
    /* The length prefix before it says how long the name is. */
    const char *digits = anon;
    while (digits > p && digits[-1] >= '0' && digits[-1] <= '9')
      digits--;
    size_t len = digits < anon ? strtoul(digits, NULL, 10) : 0;
    if (!len || len > strlen(anon)) {
      ks_buf_add(&b, p, (size_t)(anon - p) + 1);
      p = anon + 1;
      continue;
    }
    ks_buf_add(&b, p, (size_t)(digits - p));
    ks_buf_addc(&b, '@');
    p = anon + len;
  }
  ks_buf_adds(&b, p);
  return ks_buf_detach(&b);
}

/* The first line of nvcc's output that says "error", for one line. */
static void first_error(const char *log, char *out, size_t size) {
  const char *line = strstr(log, "error");
  if (!line) {
    snprintf(out, size, "%s", *log ? "see the compile log" : "no output");
    return;
  }
  while (line > log && line[-1] != '\n')
    line--;
  snprintf(out, size, "%.*s", (int)strcspn(line, "\n"), line);
}

static int write_text(const char *path, const char *a, const char *b) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return -1;
  }
  bool ok = fputs(a, f) >= 0 && fputs(b, f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* The lowered names: NVRTC's for the same expressions (its front end, or a
 * whole compile when the front end alone fails), each looked up among the
 * cubin's kernels, exactly or with anonymous namespaces compared as one. */
static int find_names(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *u,
                      const ks_buf *cubin, char **lowered) {
  size_t nopt = c->options.len + u->nextra;
  const char **options = ks_xcalloc(nopt ? nopt : 1, sizeof *options);
  for (size_t i = 0; i < c->options.len; i++)
    options[i] = c->options.items[i];
  for (size_t i = 0; i < u->nextra; i++)
    options[c->options.len + i] = u->extra_options[i];
  ks_nvrtc_unit nu = {.source = u->source, .name = u->name, .options = options,
                      .noptions = nopt, .name_expressions = u->name_expressions,
                      .nnames = u->nnames};
  char **nvrtc = ks_xcalloc(u->nnames ? u->nnames : 1, sizeof *nvrtc);
  int rc = ks_nvrtc_lowered_names(ctx, &nu, nvrtc);
  if (rc) {
    ks_buf ignored = KS_BUF_INIT;
    rc = ks_nvrtc_compile_named(ctx, &nu, &ignored, NULL, nvrtc);
    ks_buf_release(&ignored);
  }
  free(options);
  ks_arena a = KS_ARENA_INIT;
  const char **entries;
  size_t n = rc ? 0 : ks_cubin_entries(&a, cubin->data, cubin->len, &entries);
  for (size_t i = 0; !rc && i < u->nnames; i++) {
    const char *found = NULL;
    for (size_t k = 0; k < n && !found; k++)
      if (!strcmp(entries[k], nvrtc[i]))
        found = entries[k];
    char *want = found ? NULL : ks_nvcc_mangled_key(nvrtc[i]);
    for (size_t k = 0; k < n && !found; k++) {
      char *have = ks_nvcc_mangled_key(entries[k]);
      if (!strcmp(have, want))
        found = entries[k];
      free(have);
    }
    free(want);
    if (!found)
      rc = ks_fail(ctx, "%s: nvcc's cubin has no kernel '%s' (%s)", u->name,
                   u->name_expressions[i], nvrtc[i]);
    else
      lowered[i] = ks_xstrdup(found);
  }
  for (size_t i = 0; i < u->nnames; i++)
    free(nvrtc[i]);
  free(nvrtc);
  ks_arena_release(&a);
  return rc;
}

int ks_nvcc_compile(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *u, ks_buf *cubin,
                    ks_buf *log, char **lowered, bool *rejected) {
  *rejected = false;
  for (size_t i = 0; i < u->nnames; i++)
    lowered[i] = NULL;
  if (!*c->nvcc)
    return ks_fail(ctx, "%s: no nvcc", u->name);
  if (ks_fault(ctx, "nvcc_compile"))
    return ks_fail(ctx, "%s: nvcc failed: fault injected", u->name);
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/kernelsmith-nvcc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return ks_fail(ctx, "%s: cannot create a directory for nvcc in %s: %s", u->name,
                   tmp && *tmp ? tmp : "/tmp", strerror(errno));
  char *source = ks_path_join(dir, "unit.cu"), *output = ks_path_join(dir, "unit.cubin");
  ks_buf keep = KS_BUF_INIT;
  ks_buf_adds(&keep, "\n#line 1 \"kernelsmith-instances\"\n");
  for (size_t i = 0; i < u->nnames; i++)
    ks_buf_addf(&keep, "void *ks_nvcc_keep_%zu = (void *)&%s;\n", i, u->name_expressions[i]);
  int rc = 0;
  if (write_text(source, u->source, keep.data)) {
    rc = ks_fail(ctx, "%s: cannot write %s: %s", u->name, source, strerror(errno));
    goto out;
  }
  size_t nargv = 0;
  const char **argv = ks_xcalloc(u->nextra + 8, sizeof *argv);
  char arch[32];
  snprintf(arch, sizeof arch, "-arch=%s", c->arch);
  argv[nargv++] = c->nvcc;
  argv[nargv++] = "-cubin";
  argv[nargv++] = arch;
  for (size_t i = 0; i < u->nextra; i++)
    argv[nargv++] = u->extra_options[i];
  argv[nargv++] = "-o";
  argv[nargv++] = output;
  argv[nargv++] = source;
  argv[nargv] = NULL;
  ks_buf text = KS_BUF_INIT;
  text.limit = 1u << 20;
  int status = run_captured(argv, &text);
  free(argv);
  if (log)
    ks_buf_add(log, text.data, text.len);
  if (status != 0) {
    char line[512];
    first_error(text.data, line, sizeof line);
    rc = status < 0 ? ks_fail(ctx, "%s: nvcc (%s) could not run or was killed", u->name, c->nvcc)
                    : ks_fail(ctx, "%s: nvcc failed (exit %d): %s", u->name, status, line);
    *rejected = status > 0;
  } else {
    ks_ctx quiet;
    ks_ctx_init(&quiet, "nvcc");
    ks_buf made = KS_BUF_INIT;
    if (ks_read_file(&quiet, output, 256u << 20, &made) || !made.len)
      rc = ks_fail(ctx, "%s: nvcc made no cubin", u->name);
    ks_ctx_release(&quiet);
    if (!rc && (rc = find_names(ctx, c, u, &made, lowered)))
      *rejected = true;
    if (!rc && ks_buf_add(cubin, made.data, made.len))
      rc = ks_fail(ctx, "%s: the cubin (%zu bytes) exceeds the limit", u->name, made.len);
    ks_buf_release(&made);
  }
  ks_buf_release(&text);
out:
  for (size_t i = 0; rc && i < u->nnames; i++) {
    free(lowered[i]);
    lowered[i] = NULL;
  }
  unlink(output);
  unlink(source);
  rmdir(dir);
  free(source);
  free(output);
  ks_buf_release(&keep);
  return rc;
}
