/* worker_client: the main process's side of kernelsmith-worker (ks_worker.h).
 *
 * The worker is started with posix_spawn, with the request pipe as its fd 3
 * and the reply pipe as its fd 4; its stdin is /dev/null and its stdout goes
 * to our stderr, so nothing it or the driver prints can mix with either the
 * protocol or our own stdout (which may be JSON). Every other descriptor is
 * closed in the child: our pipes are close-on-exec, and descriptors others
 * opened without that flag are closed explicitly where glibc can.
 *
 * Every request has a wall-clock deadline; our ends of the pipes are
 * non-blocking and polled against it. When the worker dies (EOF, EPIPE, a
 * signal), answers garbage, runs past the deadline (then it gets SIGKILL),
 * or reports a CUDA error that poisoned its context (it exits by itself),
 * the request ends with a status saying so and a fresh worker is started at
 * once, so the next request runs normally. SIGPIPE never reaches the
 * process: ks_wire_write blocks it around each write.
 *
 * The worker gets only the environment it needs (worker_env): the search,
 * the dynamic loader's and the CUDA driver's variables, our own KS_* knobs,
 * the sanitizers' options. API keys and whatever else the user's shell
 * holds stay in this process: the worker runs code a model wrote. */
/* pipe2 and posix_spawn_file_actions_addclosefrom_np are GNU extensions. */
#define _GNU_SOURCE
#include "ks_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_wire.h"

extern char **environ;

enum {
  DEFAULT_TIMEOUT_MS = 60000,
  EXIT_GRACE_MS = 5000, /* for a worker that said it is exiting */
  STOP_GRACE_MS = 2000, /* for ks_worker_stop */
  FD_MIN_PARENT = 10,   /* our pipe ends sit above the child's 0..4 */
};

struct ks_worker {
  char *executable;
  int device;
  unsigned timeout_ms;
  pid_t pid;        /* 0: no worker running */
  int to_worker;    /* requests (our end), -1 when closed */
  int from_worker;  /* replies (our end) */
  ks_buf frame;     /* reused for every frame */
  unsigned starts;  /* processes started, for messages */
};

static bool executable(const char *path) { return path && *path && access(path, X_OK) == 0; }

/* Where the worker is: the option, $KERNELSMITH_WORKER, beside the running
 * program (an installed tree), or the build tree (tests, a build used in
 * place). An explicit choice that does not exist is an error, not a hint. */
static int find_executable(ks_ctx *ctx, const ks_worker_options *opts, char **out) {
  const char *explicit = opts && opts->executable ? opts->executable : getenv("KERNELSMITH_WORKER");
  if (explicit && *explicit) {
    if (!executable(explicit))
      return ks_fail(ctx, "the GPU worker %s is not an executable file", explicit);
    *out = ks_xstrdup(explicit);
    return 0;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      char beside[PATH_MAX + 32];
      snprintf(beside, sizeof beside, "%.*s/kernelsmith-worker", (int)(slash - self), self);
      if (executable(beside)) {
        *out = ks_xstrdup(beside);
        return 0;
      }
    }
  }
#ifdef KS_WORKER_BUILD_PATH
  if (executable(KS_WORKER_BUILD_PATH)) {
    *out = ks_xstrdup(KS_WORKER_BUILD_PATH);
    return 0;
  }
#endif
  return ks_fail(ctx, "kernelsmith-worker not found beside %s; install it there or set "
                      "KERNELSMITH_WORKER", n > 0 ? self : "this program");
}

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* A close-on-exec copy of `fd` at FD_MIN_PARENT or above; closes `fd`. */
static int lift(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_MIN_PARENT);
  close(fd);
  return high;
}

/* What the worker reads, and nothing else: the names below and the
 * prefixes (CUDA_*: the driver's own settings, CUDA_VISIBLE_DEVICES and
 * CUDA_INJECTION64_PATH included; KS_*: the worker's and the test
 * stand-ins' knobs; LC_*: the locale). LD_PRELOAD stays so that a profiler
 * or a fault shim that follows children still sees the worker. A name that
 * matches yet looks like a credential is dropped all the same. */
static bool worker_needs(const char *entry) {
  static const char *const names[] = {
      "PATH", "HOME", "TMPDIR", "LANG", "TZ", "TERM", "NO_COLOR", "LD_LIBRARY_PATH",
      "LD_PRELOAD", "KERNELSMITH_FAULTS", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
      "MSAN_OPTIONS", "TSAN_OPTIONS", "ASAN_SYMBOLIZER_PATH", "LLVM_SYMBOLIZER_PATH",
      "LLVM_PROFILE_FILE", "GCOV_PREFIX", "GCOV_PREFIX_STRIP"};
  static const char *const prefixes[] = {"CUDA_", "KS_", "LC_"};
  static const char *const secret[] = {"KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL"};
  const char *eq = strchr(entry, '=');
  if (!eq)
    return false;
  size_t n = (size_t)(eq - entry);
  bool wanted = false;
  for (size_t i = 0; !wanted && i < sizeof names / sizeof *names; i++)
    wanted = strlen(names[i]) == n && !strncmp(entry, names[i], n);
  for (size_t i = 0; !wanted && i < sizeof prefixes / sizeof *prefixes; i++)
    wanted = !strncmp(entry, prefixes[i], strlen(prefixes[i]));
  if (!wanted)
    return false;
  char name[256];
  if (n >= sizeof name)
    return false;
  for (size_t i = 0; i < n; i++)
    name[i] = (char)(entry[i] >= 'a' && entry[i] <= 'z' ? entry[i] - 32 : entry[i]);
  name[n] = '\0';
  for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
    if (strstr(name, secret[i]))
      return false;
  return true;
}

/* The worker's environment: pointers into ours (posix_spawn copies them),
 * in a NULL-terminated array the caller frees. */
static char **worker_env(void) {
  size_t n = 0;
  while (environ && environ[n])
    n++;
  char **env = ks_xcalloc(n + 1, sizeof *env);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (worker_needs(environ[i]))
      env[kept++] = environ[i];
  env[kept] = NULL;
  return env;
}

static int spawn(ks_ctx *ctx, ks_worker *w) {
  int req[2] = {-1, -1}, rep[2] = {-1, -1}, rc = -1, err;
  bool have_actions = false, have_attr = false;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
    rc = ks_fail(ctx, "cannot create pipes for the GPU worker: %s", strerror(errno));
    goto out;
  }
  /* Above the child's 0..4, the dup2s below cannot overwrite one another. */
  req[0] = lift(req[0]);
  rep[1] = lift(rep[1]);
  if (req[0] < 0 || rep[1] < 0) {
    rc = ks_fail(ctx, "cannot create pipes for the GPU worker: %s", strerror(errno));
    goto out;
  }
  posix_spawn_file_actions_init(&actions);
  have_actions = true;
  posix_spawn_file_actions_adddup2(&actions, req[0], 3);
  posix_spawn_file_actions_adddup2(&actions, rep[1], 4);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 5);
#endif
  posix_spawnattr_init(&attr);
  have_attr = true;
  sigset_t none, pipe_only;
  sigemptyset(&none);
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &pipe_only);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char device[16];
  snprintf(device, sizeof device, "%d", w->device);
  char *argv[] = {w->executable, "--device", device, NULL};
  pid_t pid;
  char **env = worker_env();
  err = posix_spawn(&pid, w->executable, &actions, &attr, argv, env);
  free(env);
  if (err) {
    rc = ks_fail(ctx, "cannot start the GPU worker %s: %s", w->executable, strerror(err));
    goto out;
  }
  w->pid = pid;
  w->to_worker = req[1];
  w->from_worker = rep[0];
  req[1] = rep[0] = -1; /* handed over */
  fcntl(w->to_worker, F_SETFL, O_NONBLOCK);
  fcntl(w->from_worker, F_SETFL, O_NONBLOCK);
  w->starts++;
  rc = 0;
out:
  if (have_actions)
    posix_spawn_file_actions_destroy(&actions);
  if (have_attr)
    posix_spawnattr_destroy(&attr);
  for (int i = 0; i < 2; i++) {
    close_fd(&req[i]);
    close_fd(&rep[i]);
  }
  return rc;
}

/* "exit status 3", "signal 11 (Segmentation fault)". */
static void describe_status(int status, char *out, size_t size) {
  if (WIFEXITED(status))
    snprintf(out, size, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(out, size, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(out, size, "status 0x%x", (unsigned)status);
}

/* Ends the worker process: closes its request pipe (a reading worker then
 * sees EOF), waits up to `grace_ms` for it to exit, then SIGKILL. `how`
 * receives how it ended. */
static void end_process(ks_worker *w, unsigned grace_ms, char *how, size_t size) {
  snprintf(how, size, "unknown status");
  close_fd(&w->to_worker);
  if (w->pid > 0) {
    long long deadline = ks_wire_now_ms() + grace_ms;
    int status = 0;
    pid_t r;
    while ((r = waitpid(w->pid, &status, WNOHANG)) == 0 && ks_wire_now_ms() < deadline) {
      struct timespec pause = {0, 5 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
    if (r == 0) {
      kill(w->pid, SIGKILL);
      while ((r = waitpid(w->pid, &status, 0)) < 0 && errno == EINTR) {
      }
    }
    if (r == w->pid)
      describe_status(status, how, size);
  }
  w->pid = 0;
  close_fd(&w->from_worker);
}

/* Kills the worker now and starts another one. */
static int restart(ks_ctx *ctx, ks_worker *w, unsigned grace_ms, char *how, size_t size) {
  if (grace_ms == 0 && w->pid > 0)
    kill(w->pid, SIGKILL);
  end_process(w, grace_ms, how, size);
  char saved[sizeof ctx->error];
  snprintf(saved, sizeof saved, "%s", ctx->error);
  if (spawn(ctx, w)) {
    ks_fail_prefix(ctx, "the GPU worker could not be restarted");
    return -1;
  }
  snprintf(ctx->error, sizeof ctx->error, "%s", saved);
  return 0;
}

int ks_worker_start(ks_ctx *ctx, const ks_worker_options *opts, ks_worker **out) {
  *out = NULL;
  ks_worker *w = ks_xcalloc(1, sizeof *w);
  w->device = opts ? opts->device : 0;
  w->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
  w->to_worker = w->from_worker = -1;
  ks_buf_init(&w->frame, 0);
  if (find_executable(ctx, opts, &w->executable) || spawn(ctx, w)) {
    ks_worker_stop(w);
    return -1;
  }
  *out = w;
  return 0;
}

void ks_worker_stop(ks_worker *w) {
  if (!w)
    return;
  if (w->pid > 0) {
    /* Politely first: an exit request lets it release the GPU context. */
    ks_ctx quiet;
    ks_ctx_init(&quiet, "kernelsmith-cc");
    ks_wire_msg bye = {.type = KS_WIRE_EXIT};
    ks_buf_reset(&w->frame);
    if (ks_wire_encode(&quiet, &bye, &w->frame) == 0)
      ks_wire_write(&quiet, w->to_worker, w->frame.data, w->frame.len,
                    ks_wire_now_ms() + STOP_GRACE_MS);
    ks_ctx_release(&quiet);
    char how[96];
    end_process(w, STOP_GRACE_MS, how, sizeof how);
  }
  close_fd(&w->to_worker);
  close_fd(&w->from_worker);
  ks_buf_release(&w->frame);
  free(w->executable);
  free(w);
}

/* How one exchange ended. */
typedef enum exchange {
  EX_OK,       /* a reply, decoded */
  EX_TIMEOUT,  /* killed at the deadline; restarted */
  EX_DIED,     /* the worker died or the pipes broke; restarted */
  EX_GARBAGE,  /* not a reply; killed and restarted */
  EX_FATAL,    /* the request cannot be sent, or no worker can be started */
} exchange;

/* Sends `msg` and waits for one reply, within the worker's time limit. On
 * anything but EX_OK and EX_FATAL, `why` says what happened and a new
 * worker is already running. */
static exchange exchange_msg(ks_ctx *ctx, ks_worker *w, const ks_wire_msg *msg, ks_arena *arena,
                             ks_wire_msg *reply, char *why, size_t size) {
  if (w->pid <= 0 && spawn(ctx, w))
    return EX_FATAL;
  ks_buf_reset(&w->frame);
  if (ks_wire_encode(ctx, msg, &w->frame))
    return EX_FATAL;
  long long deadline = ks_wire_now_ms() + w->timeout_ms;
  ks_wire_io io = ks_wire_write(ctx, w->to_worker, w->frame.data, w->frame.len, deadline);
  if (io == KS_WIRE_IO_OK)
    io = ks_wire_read(ctx, w->from_worker, deadline, &w->frame);
  exchange ex = EX_OK;
  if (io == KS_WIRE_IO_OK && ks_wire_decode(ctx, w->frame.data, w->frame.len, arena, reply))
    io = KS_WIRE_IO_BAD;
  char detail[sizeof ctx->error];
  snprintf(detail, sizeof detail, "%s", ctx->error);
  char how[96];
  switch (io) {
  case KS_WIRE_IO_OK:
    return EX_OK;
  case KS_WIRE_IO_TIMEOUT:
    ex = EX_TIMEOUT;
    if (restart(ctx, w, 0, how, sizeof how))
      return EX_FATAL;
    snprintf(why, size, "the %s request ran past its %u ms limit; the worker was killed and "
                        "restarted", ks_wire_type_name(msg->type), w->timeout_ms);
    return ex;
  case KS_WIRE_IO_BAD:
    ex = EX_GARBAGE;
    if (restart(ctx, w, 0, how, sizeof how))
      return EX_FATAL;
    snprintf(why, size, "the worker's reply was not readable (%.700s); it was killed and "
                        "restarted", detail);
    return ex;
  default:
    /* EOF or a broken pipe: it is exiting or gone; reap it to learn how. */
    ex = EX_DIED;
    if (restart(ctx, w, EXIT_GRACE_MS, how, sizeof how))
      return EX_FATAL;
    snprintf(why, size, "the worker died (%s) and was restarted", how);
    return ex;
  }
}

int ks_worker_run(ks_ctx *ctx, ks_worker *w, const ks_run_request *req, ks_arena *arena,
                  ks_run_result *out) {
  memset(out, 0, sizeof *out);
  ks_wire_msg msg = {.type = KS_WIRE_RUN, .run = *req}, reply;
  char why[1024];
  char how[96];
  switch (exchange_msg(ctx, w, &msg, arena, &reply, why, sizeof why)) {
  case EX_FATAL:
    return -1;
  case EX_TIMEOUT:
    out->status = KS_RUN_TIMEOUT;
    out->error = ks_arena_strdup(arena, why);
    return 0;
  case EX_DIED:
  case EX_GARBAGE:
    out->status = KS_RUN_CRASHED;
    out->error = ks_arena_strdup(arena, why);
    return 0;
  case EX_OK:
    break;
  }
  if (reply.type == KS_WIRE_RUN_REPLY) {
    *out = reply.result;
    /* A poisoned context: the worker exits after this reply. */
    if (out->status == KS_RUN_CRASHED && restart(ctx, w, EXIT_GRACE_MS, how, sizeof how))
      return -1;
    return 0;
  }
  if (reply.type == KS_WIRE_ERROR && reply.no_device) {
    out->status = KS_RUN_NO_DEVICE;
    out->error = reply.error;
    return 0;
  }
  /* Any other answer means the two sides disagree about the protocol. */
  out->status = KS_RUN_CRASHED;
  out->error = ks_arena_printf(arena, "the worker answered a run request with %s%s%s",
                               ks_wire_type_name(reply.type), reply.error ? ": " : "",
                               reply.error ? reply.error : "");
  if (restart(ctx, w, EXIT_GRACE_MS, how, sizeof how))
    return -1;
  return 0;
}

/* A request whose only useful reply is `want`; anything else is an error
 * with a message. */
static int simple_request(ks_ctx *ctx, ks_worker *w, const ks_wire_msg *msg, ks_wire_type want,
                          ks_arena *arena, ks_wire_msg *reply) {
  char why[1024];
  exchange ex = exchange_msg(ctx, w, msg, arena, reply, why, sizeof why);
  if (ex == EX_FATAL)
    return -1;
  if (ex != EX_OK)
    return ks_fail(ctx, "%s", why);
  if (reply->type == KS_WIRE_ERROR)
    return ks_fail(ctx, "%s", reply->error ? reply->error : "the GPU worker failed");
  if (reply->type != want) {
    char how[96];
    ks_fail(ctx, "the worker answered a %s request with %s", ks_wire_type_name(msg->type),
            ks_wire_type_name(reply->type));
    restart(ctx, w, 0, how, sizeof how);
    return -1;
  }
  return 0;
}

int ks_worker_hello(ks_ctx *ctx, ks_worker *w, ks_device_info *out) {
  ks_arena arena = KS_ARENA_INIT;
  ks_wire_msg msg = {.type = KS_WIRE_HELLO}, reply;
  int rc = simple_request(ctx, w, &msg, KS_WIRE_HELLO_REPLY, &arena, &reply);
  if (rc == 0)
    *out = reply.device;
  ks_arena_release(&arena);
  return rc;
}

int ks_worker_ceilings(ks_ctx *ctx, ks_worker *w, const ks_module *copy, const ks_module *fma,
                       ks_ceilings *out) {
  ks_arena arena = KS_ARENA_INIT;
  ks_wire_msg msg = {.type = KS_WIRE_CEILINGS, .copy = *copy, .fma = *fma,
                     .fma_flops_per_iter = 2 * KS_CEILING_FMA_CHAINS},
              reply;
  int rc = simple_request(ctx, w, &msg, KS_WIRE_CEILINGS_REPLY, &arena, &reply);
  if (rc == 0)
    *out = reply.ceilings;
  ks_arena_release(&arena);
  return rc;
}
