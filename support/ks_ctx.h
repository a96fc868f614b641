/* ks_ctx: the state every call receives, instead of globals.
 *
 * It holds what all modules share: how to report (verbosity, colour, the
 * stream diagnostics go to), the message of the last failure, and fault
 * injection. Library code reports a failure by recording a message with
 * ks_fail() and returning -1 (or NULL); only the CLI's top level decides what
 * to print and which exit code to use.
 *
 * Logging is thread-safe (parser threads share one context); ks_fail is not:
 * threads record their failures in their own results instead, or in a
 * context of their own made by ks_ctx_init_thread, whose messages and fault
 * injection are its parent's.
 *
 * Fault injection, for testing error paths: KERNELSMITH_FAULTS="site:N,..."
 * makes the Nth call of ks_fault(ctx, "site") return true (N=0: every call;
 * a site listed twice fails at both counts). */
#ifndef KS_CTX_H
#define KS_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

typedef enum ks_log_level {
  KS_LOG_ERROR,
  KS_LOG_WARN,
  KS_LOG_INFO,
  KS_LOG_DEBUG,
} ks_log_level;

enum { KS_MAX_FAULTS = 8 };

typedef struct ks_fault_site {
  char name[32];  /* site name as written in KERNELSMITH_FAULTS */
  unsigned nth;   /* fail on this call (1-based); 0 fails every call */
  unsigned calls; /* calls seen so far */
} ks_fault_site;

typedef struct ks_ctx {
  const char *prog;         /* prefix of every message */
  ks_log_level verbosity;   /* messages above this level are dropped */
  bool color;               /* use colour escapes in diagnostics */
  FILE *diag;               /* diagnostics stream: stderr unless a test swaps it */
  pthread_mutex_t lock;     /* keeps diagnostics from threads whole */
  char error[2048];         /* message recorded by the last ks_fail */
  ks_fault_site faults[KS_MAX_FAULTS]; /* parsed from KERNELSMITH_FAULTS */
  unsigned nfaults;
  struct ks_ctx *parent;    /* a thread's context (ks_ctx_init_thread): its
                               failures are its own; messages and faults go
                               to the parent; NULL otherwise */
} ks_ctx;

void ks_ctx_init(ks_ctx *ctx, const char *prog);
void ks_ctx_release(ks_ctx *ctx);
/* A context for one thread of `parent`'s work: ks_fail writes its own
 * error, while logging and ks_fault go through `parent` (one verbosity, one
 * stream, one count per fault site). Released with ks_ctx_release. */
void ks_ctx_init_thread(ks_ctx *ctx, ks_ctx *parent);

/* Records a failure message (printf-style) and returns -1. */
int ks_fail(ks_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the recorded message with "<prefix>: ", keeping the rest. */
void ks_fail_prefix(ks_ctx *ctx, const char *prefix);

void ks_log(ks_ctx *ctx, ks_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define ks_error(ctx, ...) ks_log((ctx), KS_LOG_ERROR, __VA_ARGS__)
#define ks_warn(ctx, ...) ks_log((ctx), KS_LOG_WARN, __VA_ARGS__)
#define ks_info(ctx, ...) ks_log((ctx), KS_LOG_INFO, __VA_ARGS__)
#define ks_debug(ctx, ...) ks_log((ctx), KS_LOG_DEBUG, __VA_ARGS__)

/* True when this call of `site` should fail (see KERNELSMITH_FAULTS). */
bool ks_fault(ks_ctx *ctx, const char *site);
/* Parses a fault specification; returns -1 with ks_fail on a bad one. */
int ks_ctx_set_faults(ks_ctx *ctx, const char *spec);

/* Colour for a stream: only on a terminal, never with NO_COLOR or TERM=dumb. */
bool ks_color_wanted(FILE *stream);

#endif
