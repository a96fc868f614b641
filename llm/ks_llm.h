/* ks_llm: the LLM client. libcurl and the HTTP/JSON of the two chat APIs live
 * here and nowhere else; callers see plain ks_ structs (docs/llm.md).
 *
 * What it owns:
 *  - configuration: explicit values, then the environment, then the
 *    project's config file (model, temperature, prices, limits only), then
 *    the user's config file; key files must be private (mode & 077 == 0);
 *  - request bodies for the OpenAI-compatible chat completions API and the
 *    Anthropic Messages API, and the cache key of a request;
 *  - the transport: up to `jobs` requests at once over one curl multi
 *    handle, retries with exponential backoff and full jitter, retry-after,
 *    timeouts, a reply size cap, no redirects followed;
 *  - reply parsing: text, finish reason, usage tokens, the server's error;
 *  - accounting: tokens and cost per run and per account (a kernel name),
 *    and budgets that stop new requests from starting.
 *
 * Secrets: the key lives in ks_llm_config.key and in the request headers of
 * an attempt, nowhere else. It never enters an error message, a diagnostic,
 * the cache key or its material; a server that echoes it gets it replaced by
 * "[key]" in the error sentence and in a reply's text, finish reason and
 * model (a server may quote the Authorization header in a normal answer),
 * so that nothing a reply becomes (plans, variants, insights, the store's
 * rows) can hold it. ks_llm_redact does the same for callers' own text.
 *
 * Errors: setup errors (bad configuration, a key file others can read, an
 * invalid request) return -1 after ks_fail(ctx, ...). A request that fails on
 * the wire is not an error of the call: its reply has status != KS_LLM_OK and
 * `error` holds one sentence; other requests of the batch go on.
 *
 * Ownership: `const T *` arguments are borrowed for the duration of the call,
 * except where a comment says the client keeps them (the config and the
 * totals passed to ks_llm_client_new must outlive the client). Strings of a
 * resolved config and of replies live in the arena the caller passes; the
 * client itself is freed with ks_llm_client_free. Everything is used from one
 * thread: the client runs its transfers inside ks_llm_poll / ks_llm_run. */
#ifndef KS_LLM_H
#define KS_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_hash.h"

/* ---- configuration (llm_config.c) ---- */

typedef enum ks_llm_api {
  KS_LLM_API_UNSET,
  KS_LLM_OPENAI,    /* POST {url}/chat/completions, Authorization: Bearer */
  KS_LLM_ANTHROPIC, /* POST {url}/v1/messages, x-api-key, anthropic-version */
} ks_llm_api;

/* USD per million tokens; `set` distinguishes "free" (a local server, 0)
 * from "unknown". Unknown prices make every cost 0. */
typedef struct ks_llm_prices {
  double input_per_mtok;
  double output_per_mtok;
  bool set;
} ks_llm_prices;

/* Budgets; 0 means no limit (and, in given values, "not given"). */
typedef struct ks_llm_limits {
  double max_cost;        /* USD */
  long long max_tokens;   /* input + output */
  long long max_requests; /* requests started */
} ks_llm_limits;

/* One struct serves as the caller's explicit values (NULL / 0 = not given)
 * and as the resolved configuration (every field filled, defaults applied). */
typedef struct ks_llm_config {
  ks_llm_api api;
  const char *url;       /* base URL: "https://api.openai.com/v1", "http://localhost:8000/v1" */
  const char *model;
  const char *key;       /* the secret; NULL when the server needs none */
  const char *key_file;  /* given: read the key from this file (private mode) */
  double temperature;    /* used when temperature_set */
  bool temperature_set;
  int max_tokens;        /* a request's default max_tokens (default 8192) */
  ks_llm_prices prices;
  ks_llm_limits limits;
  /* transport; 0 = default */
  int jobs;                   /* requests at once (default 4) */
  int max_attempts;           /* per request, retries included (default 5) */
  double connect_timeout_s;   /* default 30 */
  long low_speed_bytes;       /* abort below this many bytes/s ... (default 1) */
  long low_speed_time_s;      /* ... for this many seconds (default 120) */
  double total_timeout_s;     /* one attempt's limit; 0: none */
  size_t max_reply_bytes;     /* default 16 MiB */
  double backoff_base_s;      /* first retry waits up to this (default 1) */
  double backoff_max_s;       /* no wait is longer (default 60) */
  double retry_after_max_s;   /* cap on a server's retry-after (default 120) */
  uint64_t seed;              /* jitter's RNG; 0: from the clock */
  /* resolved only: where each came from ("flag", "KERNELSMITH_LLM_URL",
   * "/home/u/.config/kernelsmith/config.json", "default", ...) */
  const char *api_from, *url_from, *model_from, *key_from;
} ks_llm_config;

/* Returns the variable's value or NULL. Tests pass their own. */
typedef const char *(*ks_llm_getenv_fn)(const char *name, void *data);

typedef struct ks_llm_sources {
  ks_llm_getenv_fn getenv; /* NULL: the process environment */
  void *getenv_data;
  /* NULL: $XDG_CONFIG_HOME/kernelsmith/config.json or
   * $HOME/.config/kernelsmith/config.json (from getenv); "": none. */
  const char *user_config;
  /* A project's config file (e.g. ".kernelsmith/config.json"), or NULL.
   * A missing file is no error; one that sets url, key, key_file, api or
   * anything but model, temperature, prices and limits is refused. */
  const char *project_config;
} ks_llm_sources;

/* Resolves every field, first found wins: `given`, the environment, the
 * project's file, the user's file, defaults. Strings live in `arena`.
 * Returns -1 with ks_fail when nothing names a server or a model, when a
 * file is malformed or sets a field it may not, or a key file is not
 * private. */
int ks_llm_config_resolve(ks_ctx *ctx, const ks_llm_config *given, const ks_llm_sources *src,
                          ks_arena *arena, ks_llm_config *out);

/* The configuration as text for `--verbose` and bug reports: the key is
 * shown as "set (from X)" or "none", never its value. */
void ks_llm_config_describe(const ks_llm_config *cfg, ks_buf *out);

const char *ks_llm_api_name(ks_llm_api api); /* "openai", "anthropic", "unset" */

/* Keys shorter than this are not looked for in replies and stored text:
 * such a key ("EMPTY", "ollama", "x": what local servers take) is no
 * secret, and replacing it everywhere would rewrite the kernels a model
 * writes. Error sentences are scrubbed of a key of any length. */
enum { KS_LLM_REDACT_MIN = 8 };

/* `text` with every occurrence of the configured key replaced by "[key]",
 * copied into `arena`; `text` itself when it holds no key, when no key is
 * set or it is shorter than KS_LLM_REDACT_MIN. NULL stays NULL. */
const char *ks_llm_redact(const ks_llm_config *cfg, const char *text, ks_arena *arena);

/* ---- requests (llm_request.c) ---- */

typedef struct ks_llm_message {
  const char *role; /* "user" or "assistant" */
  const char *text;
} ks_llm_message;

typedef struct ks_llm_request {
  const char *system;              /* may be NULL */
  const ks_llm_message *messages;
  size_t nmessages;                /* at least 1 */
  const char *model;               /* NULL: the config's */
  int max_tokens;                  /* 0: the config's */
  double temperature;              /* used when temperature_set, else the config's */
  bool temperature_set;
  long long seed;                  /* sent when seed_set, OpenAI API only */
  bool seed_set;
  const char *account;             /* per-account totals (a kernel name); NULL: none */
  void *user;                      /* the caller's tag, handed back in the reply */
} ks_llm_request;

/* The JSON body the API expects (what ks_llm_submit sends). -1 with
 * ks_fail for a request without messages or with an unknown role. */
int ks_llm_request_body(ks_ctx *ctx, const ks_llm_config *cfg, const ks_llm_request *req,
                        ks_buf *out);

/* The cache key: SHA-256, hex, of ks_llm_cache_material, which is a
 * canonical, length-prefixed text of the API, the endpoint's path, the model,
 * the system prompt, the messages and the effective parameters. The host and
 * the key are not part of it. */
void ks_llm_cache_key(const ks_llm_config *cfg, const ks_llm_request *req,
                      char out[KS_HASH_HEX]);
void ks_llm_cache_material(const ks_llm_config *cfg, const ks_llm_request *req, ks_buf *out);

/* ---- replies (llm_reply.c) ---- */

typedef enum ks_llm_status {
  KS_LLM_OK,
  KS_LLM_HTTP_ERROR,  /* the server answered with an error status */
  KS_LLM_TRANSPORT,   /* connection, timeout, truncated body, TLS */
  KS_LLM_BAD_REPLY,   /* 2xx, but not the JSON the API promises */
  KS_LLM_TOO_LARGE,   /* the body passed max_reply_bytes */
  KS_LLM_REDIRECT,    /* a 3xx: never followed (credentials stay put) */
  KS_LLM_OVER_BUDGET, /* not started: a budget was reached */
} ks_llm_status;

typedef struct ks_llm_reply {
  ks_llm_status status;
  const char *text;          /* the answer ("" when none) */
  const char *finish_reason; /* as the server said: "stop", "length", "end_turn", ...; "" */
  const char *model;         /* the model the server says answered; "" */
  long long input_tokens, output_tokens; /* usage, 0 when unknown */
  long http_status;          /* the last attempt's, 0 when there was no answer */
  int attempts;
  double seconds;            /* from the first attempt's start to the end, waits included */
  double cost;               /* USD by the config's prices */
  const char *error;         /* one sentence when status != KS_LLM_OK, else NULL */
  unsigned long long id;     /* as ks_llm_submit returned it */
  void *user;                /* the request's tag */
} ks_llm_reply;

const char *ks_llm_status_name(ks_llm_status status); /* "ok", "http error", ... */

/* Fills the answer fields of `out` (text, finish_reason, model, tokens) from a
 * 2xx body, or returns -1 and writes a sentence into `why`. Exposed for tests
 * and for replaying recorded bodies. */
int ks_llm_reply_parse(ks_llm_api api, const char *body, size_t len, ks_arena *arena,
                       ks_llm_reply *out, ks_buf *why);
/* One sentence for an error status: the server's own message when its body
 * is the API's JSON error (cut to 300 bytes, on one line), else the status
 * and the content type. */
void ks_llm_error_sentence(long http_status, const char *content_type, const char *body,
                           size_t len, ks_buf *out);

/* ---- accounting and budgets (llm_cost.c) ---- */

typedef struct ks_llm_tally {
  long long requests;   /* started (refused ones are not) */
  long long failed;     /* finished with status != OK (refusals included) */
  long long refused;    /* not started: over budget */
  long long input_tokens, output_tokens;
  double cost;          /* USD */
  double seconds;       /* sum of replies' seconds */
} ks_llm_tally;

typedef struct ks_llm_account {
  const char *name;
  ks_llm_tally tally;
} ks_llm_account;

/* One kind of failure, a status and the HTTP status (0: no answer), as
 * the replies of a client met it. */
typedef struct ks_llm_failure {
  ks_llm_status status;
  long http_status;
  long long count;
  const char *error; /* the first such reply's sentence (the key scrubbed) */
} ks_llm_failure;

/* Owned by the caller. A resumed run may start `run` from the store's
 * numbers so that budgets span the whole run; `answered` and `failures`
 * count this process's replies only. */
typedef struct ks_llm_totals {
  ks_llm_tally run;
  KS_ARRAY(ks_llm_account) accounts;
  long long answered;                /* replies with status OK */
  KS_ARRAY(ks_llm_failure) failures; /* by kind, in the order first met */
  ks_arena *arena; /* account names, errors and the arrays */
} ks_llm_totals;

void ks_llm_totals_init(ks_llm_totals *t, ks_arena *arena);
/* The account's tally, created when `create`; NULL when absent. */
ks_llm_tally *ks_llm_totals_account(ks_llm_totals *t, const char *name, bool create);
/* Adds a finished reply to the run's and its account's tallies, and to
 * `answered` or its kind of failure. */
void ks_llm_totals_add(ks_llm_totals *t, const char *account, const ks_llm_reply *r);

double ks_llm_cost(const ks_llm_prices *prices, long long input_tokens, long long output_tokens);

/* Whether another request may start under `limits` given what `run` has
 * spent; when not, `why` (may be NULL) gets one sentence. */
bool ks_llm_budget_allows(const ks_llm_limits *limits, const ks_llm_tally *run, ks_buf *why);

/* ---- the client (llm_client.c) ----
 *
 * Submit/poll: ks_llm_submit queues a request (its body is built at once, so
 * the request's strings need not outlive the call); ks_llm_poll runs the
 * transfers and hands back one finished reply at a time, in the order they
 * finish. At most cfg->jobs requests are in progress; a request waiting to
 * retry keeps its place. A request is started only while
 * ks_llm_budget_allows; otherwise it finishes at once as KS_LLM_OVER_BUDGET.
 * Retries of a started request are allowed past a budget (in-flight requests
 * finish). ks_llm_run is the batch form. */

typedef struct ks_llm_client ks_llm_client;

/* `cfg` (resolved) and `totals` are kept by the client and must outlive it;
 * the client adds every finished reply to `totals`. `totals` may be NULL:
 * then nothing is counted and no budget applies. */
int ks_llm_client_new(ks_ctx *ctx, const ks_llm_config *cfg, ks_llm_totals *totals,
                      ks_llm_client **out);
void ks_llm_client_free(ks_llm_client *c);

/* Queues a request; `id_out` (may be NULL) gets its id. -1 with ks_fail for
 * an invalid request. */
int ks_llm_submit(ks_ctx *ctx, ks_llm_client *c, const ks_llm_request *req,
                  unsigned long long *id_out);
/* Waits up to timeout_ms (< 0: until one finishes) for a finished request.
 * Returns 1 with `out` filled (strings in `arena`), 0 when none finished in
 * time or nothing is pending, -1 with ks_fail when the transport itself
 * broke (curl could not be driven). */
int ks_llm_poll(ks_ctx *ctx, ks_llm_client *c, int timeout_ms, ks_arena *arena,
                ks_llm_reply *out);
/* Requests submitted and not yet handed back by ks_llm_poll. */
size_t ks_llm_pending(const ks_llm_client *c);

/* Runs `n` requests (jobs at a time) and fills replies[i] for reqs[i].
 * Returns 0 when every request has a reply (failed ones included). */
int ks_llm_run(ks_ctx *ctx, ks_llm_client *c, const ks_llm_request *reqs, size_t n,
               ks_arena *arena, ks_llm_reply *replies);

#endif
