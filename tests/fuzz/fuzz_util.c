/* fuzz_util: the helpers of fuzz.h, linked into every harness. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s)
    abort();
  if (size)
    memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

static FILE *null_stream(void) {
  static FILE *f;
  if (!f && !(f = fopen("/dev/null", "w")))
    abort();
  return f;
}

void fuzz_ctx(ks_ctx *ctx) {
  ks_ctx_init(ctx, "fuzz");
  ctx->diag = null_stream();
  ctx->verbosity = KS_LOG_ERROR;
}

static char tmpdir[4096];

/* The harnesses write plain files there, no directories. */
static void remove_tmpdir(void) {
  DIR *d = tmpdir[0] ? opendir(tmpdir) : NULL;
  if (!d)
    return;
  char path[sizeof tmpdir + 256];
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
      remove(path);
    }
  closedir(d);
  rmdir(tmpdir);
}

const char *fuzz_tmpdir(void) {
  if (!tmpdir[0]) {
    /* Memory-backed where there is one: a harness writes a file per input. */
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
      base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
    snprintf(tmpdir, sizeof tmpdir, "%s/ks-fuzz-XXXXXX", base);
    if (!mkdtemp(tmpdir))
      abort();
    atexit(remove_tmpdir);
  }
  return tmpdir;
}

void fuzz_write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(bytes, 1, n, f) != n) || fclose(f))
    abort();
}

void fuzz_fail_(const char *what, const char *file, int line) {
  fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, what);
  abort();
}

void fuzz_check_error(const ks_ctx *ctx) {
  fuzz_check(ctx->error[0] != '\0');
  fuzz_check(strlen(ctx->error) < sizeof ctx->error);
}
