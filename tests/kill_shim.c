/* kill_shim: an LD_PRELOAD library for crash tests. It counts the calls of
 * the functions that change files (write, rename, link, unlink, fsync and
 * their *at and data-only forms) and kills the process with SIGKILL at the
 * KS_KILL_AT-th one, before it happens: what a kill -9, a power cut of the
 * process or an out-of-memory kill does at that point. Without KS_KILL_AT
 * (or 0) it only counts. revert_cli.sh loops N from 1 until the command
 * completes, so that every such point of it is tried once.
 *
 * glibc's stdio writes through its internal alias, so only the program's
 * own calls (and its libraries': SQLite's) are counted, not printf's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static atomic_long calls;

/* With KS_KILL_LOG=FILE, each call is logged there as "N name" (the test
 * shows where a kill it could not undo came), written with the real
 * write so that the log itself is not counted. */
static void point(const char *name) {
  static long at = -1;
  if (at < 0) {
    const char *s = getenv("KS_KILL_AT");
    at = s ? atol(s) : 0;
  }
  long n = atomic_fetch_add(&calls, 1) + 1;
  const char *log = getenv("KS_KILL_LOG");
  if (log) {
    FILE *f = fopen(log, "a");
    if (f) {
      fprintf(f, "%ld %s%s\n", n, name, n == at ? " (killed here)" : "");
      fclose(f);
    }
  }
  if (n == at)
    kill(getpid(), SIGKILL);
}

ssize_t write(int fd, const void *buf, size_t n) {
  point("write");
  return REAL(write)(fd, buf, n);
}
int rename(const char *from, const char *to) {
  point("rename");
  return REAL(rename)(from, to);
}
int renameat(int fromdir, const char *from, int todir, const char *to) {
  point("renameat");
  return REAL(renameat)(fromdir, from, todir, to);
}
int link(const char *from, const char *to) {
  point("link");
  return REAL(link)(from, to);
}
int linkat(int fromdir, const char *from, int todir, const char *to, int flags) {
  point("linkat");
  return REAL(linkat)(fromdir, from, todir, to, flags);
}
int unlink(const char *path) {
  point("unlink");
  return REAL(unlink)(path);
}
int unlinkat(int dir, const char *path, int flags) {
  point("unlinkat");
  return REAL(unlinkat)(dir, path, flags);
}
int fsync(int fd) {
  point("fsync");
  return REAL(fsync)(fd);
}
int fdatasync(int fd) {
  point("fdatasync");
  return REAL(fdatasync)(fd);
}
