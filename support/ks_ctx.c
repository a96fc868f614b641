/* The shared context: failures as values, diagnostics, fault injection. */
#include "ks_ctx.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ks_ctx_init(ks_ctx *ctx, const char *prog) {
  memset(ctx, 0, sizeof *ctx);
  ctx->prog = prog ? prog : "kernelsmith-cc";
  ctx->verbosity = KS_LOG_WARN;
  ctx->diag = stderr;
  ctx->color = ks_color_wanted(stderr);
  pthread_mutex_init(&ctx->lock, NULL);
  const char *faults = getenv("KERNELSMITH_FAULTS");
  if (faults && ks_ctx_set_faults(ctx, faults))
    ks_warn(ctx, "ignoring KERNELSMITH_FAULTS: %s", ctx->error);
}

void ks_ctx_init_thread(ks_ctx *ctx, ks_ctx *parent) {
  memset(ctx, 0, sizeof *ctx);
  ctx->prog = parent->prog;
  ctx->verbosity = parent->verbosity;
  ctx->color = parent->color;
  ctx->diag = parent->diag;
  ctx->parent = parent;
  pthread_mutex_init(&ctx->lock, NULL);
}

void ks_ctx_release(ks_ctx *ctx) { pthread_mutex_destroy(&ctx->lock); }

/* A message longer than the error buffer keeps its start and its end, the
 * middle replaced by " ... ": what failed is said first and why last, and a
 * quoted 10 KB expression in between must not push the why out. Cuts fall
 * on UTF-8 character boundaries. */
enum { KEEP_HEAD = 600 };
static const char CUT[] = " ... ";

static void keep_ends(char *out, size_t cap, const char *whole, size_t len) {
  size_t head = KEEP_HEAD, tail = cap - 1 - head - (sizeof CUT - 1);
  while (head > 0 && ((unsigned char)whole[head] & 0xC0) == 0x80)
    head--;
  size_t from = len - tail;
  while (from < len && ((unsigned char)whole[from] & 0xC0) == 0x80)
    from++;
  memcpy(out, whole, head);
  memcpy(out + head, CUT, sizeof CUT - 1);
  memcpy(out + head + sizeof CUT - 1, whole + from, len - from);
  out[head + sizeof CUT - 1 + len - from] = '\0';
}

int ks_fail(ks_ctx *ctx, const char *fmt, ...) {
  /* Formatted aside first: callers wrap the previous error
   * (ks_fail(ctx, "guard '%s': %s", g, ctx->error)), which vsnprintf
   * straight into ctx->error would read while overwriting it. */
  char msg[sizeof ctx->error];
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof msg) {
    char *whole = malloc((size_t)n + 1);
    if (whole) { /* else the message stays cut at its end */
      vsnprintf(whole, (size_t)n + 1, fmt, again);
      keep_ends(msg, sizeof msg, whole, (size_t)n);
      free(whole);
    }
  }
  va_end(again);
  memcpy(ctx->error, msg, sizeof msg);
  return -1;
}

void ks_fail_prefix(ks_ctx *ctx, const char *prefix) {
  size_t p = strlen(prefix), keep = strnlen(ctx->error, sizeof ctx->error - 1);
  char *whole = malloc(p + 2 + keep + 1);
  if (!whole)
    return;
  memcpy(whole, prefix, p);
  memcpy(whole + p, ": ", 2);
  memcpy(whole + p + 2, ctx->error, keep);
  whole[p + 2 + keep] = '\0';
  ks_fail(ctx, "%s", whole);
  free(whole);
}

bool ks_color_wanted(FILE *stream) {
  const char *no_color = getenv("NO_COLOR");
  if (no_color && *no_color)
    return false;
  const char *term = getenv("TERM");
  if (term && !strcmp(term, "dumb"))
    return false;
  return isatty(fileno(stream));
}

void ks_log(ks_ctx *ctx, ks_log_level level, const char *fmt, ...) {
  while (ctx->parent)
    ctx = ctx->parent;
  if (level > ctx->verbosity)
    return;
  static const char *const names[] = {"error", "warning", "note", "debug"};
  static const char *const colors[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m", "\033[2m"};
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&ctx->lock);
  if (ctx->color)
    fprintf(ctx->diag, "%s: %s%s:\033[0m %s\n", ctx->prog, colors[level], names[level], msg);
  else
    fprintf(ctx->diag, "%s: %s: %s\n", ctx->prog, names[level], msg);
  fflush(ctx->diag);
  pthread_mutex_unlock(&ctx->lock);
}

int ks_ctx_set_faults(ks_ctx *ctx, const char *spec) {
  ctx->nfaults = 0;
  const char *p = spec;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *colon = memchr(p, ':', len);
    size_t name_len = colon ? (size_t)(colon - p) : len;
    if (!name_len || name_len >= sizeof ctx->faults[0].name)
      return ks_fail(ctx, "bad fault site in '%s'", spec);
    if (ctx->nfaults == KS_MAX_FAULTS)
      return ks_fail(ctx, "more than %d fault sites in '%s'", KS_MAX_FAULTS, spec);
    ks_fault_site *site = &ctx->faults[ctx->nfaults];
    memcpy(site->name, p, name_len);
    site->name[name_len] = '\0';
    site->nth = 1;
    site->calls = 0;
    if (colon) {
      char *num_end;
      unsigned long nth = strtoul(colon + 1, &num_end, 10);
      if (num_end != p + len || num_end == colon + 1)
        return ks_fail(ctx, "bad fault count for '%s' in '%s'", site->name, spec);
      site->nth = (unsigned)nth;
    }
    ctx->nfaults++;
    p += len;
    if (*p == ',')
      p++;
  }
  return 0;
}

bool ks_fault(ks_ctx *ctx, const char *site) {
  while (ctx->parent)
    ctx = ctx->parent;
  if (!ctx->nfaults)
    return false;
  bool hit = false;
  pthread_mutex_lock(&ctx->lock);
  for (unsigned i = 0; i < ctx->nfaults; i++) {
    ks_fault_site *f = &ctx->faults[i];
    if (strcmp(f->name, site))
      continue;
    f->calls++;
    hit |= f->nth == 0 || f->calls == f->nth; /* a site may be listed twice */
  }
  pthread_mutex_unlock(&ctx->lock);
  return hit;
}
