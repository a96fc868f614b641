/* profile_run: an application run under the injection library (see
 * ks_profile_run.h): the library found, the environment it reads, fork and
 * exec, the exit status, the lines read back. Shared by `profile` and
 * `verify`. */
#include "ks_profile_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_cuda.h"
#include "ks_fs.h"

const char *ks_inject_lib_find(ks_ctx *ctx, ks_arena *a) {
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

bool ks_profile_driver_ready(ks_ctx *ctx) {
  /* cuInit here costs the application nothing: it runs in its own process
   * (exec'd), and cuInit makes no context, so an exclusive-process GPU
   * stays free for it. */
  ks_cuda cu;
  if (ks_cuda_load(ctx, &cu))
    return false;
  ks_cuda_unload(&cu);
  return true;
}

const char *ks_profile_lines_file(ks_ctx *ctx, ks_arena *a, const char *dir) {
  char *abs_dir = ks_realpath(dir);
  char *lines = ks_arena_printf(a, "%s/.profile-lines-XXXXXX", abs_dir ? abs_dir : dir);
  free(abs_dir);
  int fd = mkstemp(lines);
  if (fd < 0) {
    ks_fail(ctx, "cannot create a file in %s: %s", dir, strerror(errno));
    return NULL;
  }
  close(fd);
  return lines;
}

/* In the child, before exec: what the library reads, then the caller's
 * additions. */
static void child_env(const char *lib, const char *lines, const ks_inject_options *o) {
  setenv("CUDA_INJECTION64_PATH", lib, 1);
  setenv("KERNELSMITH_PROFILE_OUT", lines, 1);
  char n[32];
  if (o->sample_percent < 100) {
    snprintf(n, sizeof n, "%u", o->sample_percent);
    setenv("KERNELSMITH_PROFILE_SAMPLE", n, 1);
    snprintf(n, sizeof n, "%ld", o->sample_after_ms);
    setenv("KERNELSMITH_PROFILE_SAMPLE_AFTER_MS", n, 1);
  }
  if (o->capture) {
    setenv("KERNELSMITH_CAPTURE", o->capture, 1);
    setenv("KERNELSMITH_CAPTURE_OUT", o->capture_path, 1);
    snprintf(n, sizeof n, "%ld", o->capture_launches);
    setenv("KERNELSMITH_CAPTURE_LAUNCHES", n, 1);
    snprintf(n, sizeof n, "%lld", o->capture_limit);
    setenv("KERNELSMITH_CAPTURE_LIMIT", n, 1);
    if (o->capture_window) {
      snprintf(n, sizeof n, "%lld", o->capture_window);
      setenv("KERNELSMITH_CAPTURE_WINDOW", n, 1);
    }
  }
  for (const char *const *e = o->env; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) {
      unsetenv(*e);
      continue;
    }
    char name[256];
    size_t len = (size_t)(eq - *e);
    if (len && len < sizeof name) {
      memcpy(name, *e, len);
      name[len] = 0;
      setenv(name, eq + 1, 1);
    }
  }
}

int ks_profile_run_app(ks_ctx *ctx, char *const *cmd, const char *lib, const char *lines,
                       const ks_inject_options *o, int *wait_status) {
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
    child_env(lib, lines, o);
    if (o->stdout_to_stderr)
      dup2(STDERR_FILENO, STDOUT_FILENO);
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

int ks_profile_exit_code(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status)
         : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : 1;
}

int ks_profile_read_run(ks_ctx *ctx, const char *lines, char *const *cmd, int ncmd,
                        int wait_status, ks_profile *out) {
  if (ks_profile_read_lines(ctx, lines, out))
    return -1;
  for (int i = 0; i < ncmd; i++)
    *ks_array_push(&out->arena, &out->command) = ks_arena_strdup(&out->arena, cmd[i]);
  out->exit_status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  out->signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  return 0;
}
