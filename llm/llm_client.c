/* The transport: one curl multi handle drives up to cfg->jobs requests at
 * once from the caller's thread, inside ks_llm_poll.
 *
 * A request (a "job") is QUEUED until a slot is free and the budget allows
 * it, RUNNING while an attempt is on the wire, WAITING between attempts (it
 * keeps its slot: a server that asked us to slow down should not see the
 * next request take its place), DONE until ks_llm_poll hands it back.
 *
 * Retried: connection errors, timeouts, truncated bodies, 408, 409, 429 and
 * 5xx (529 included), with exponential backoff and full jitter, or the
 * server's retry-after (capped). Not retried: other 4xx, redirects, bodies
 * over the cap, malformed JSON in a 2xx. Redirects are never followed, so
 * the key is only ever sent to the configured URL.
 *
 * Timeouts: a connect timeout and a low-speed limit, not a short total
 * limit, because a reasoning model may think for minutes before its first
 * byte; the total limit is optional. */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "llm_internal.h"

typedef enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_WAITING, JOB_DONE } job_state;

typedef struct llm_job {
  unsigned long long id;
  void *user;
  char *account;          /* NULL: none */
  char *body;             /* the request's JSON */
  job_state state;
  int attempts;
  double first_start;     /* monotonic seconds */
  double next_start;      /* WAITING: when the next attempt may start */
  unsigned long long done_seq; /* DONE: finishing order */
  /* the attempt on the wire */
  CURL *easy;
  struct curl_slist *headers; /* hold the key: freed when the attempt ends */
  ks_buf response;
  size_t max_bytes;       /* the config's reply cap */
  bool over_cap;
  ks_buf content_type, location;
  char curl_error[CURL_ERROR_SIZE];
  /* the result; strings in `arena` until handed back */
  ks_arena arena;
  ks_llm_reply reply;
} llm_job;

struct ks_llm_client {
  const ks_llm_config *cfg;
  ks_llm_totals *totals;
  CURLM *multi;
  llm_job **jobs; /* not yet handed back, in submission order */
  size_t njobs, cap;
  unsigned long long next_id, next_done_seq;
  uint64_t rng;
  char *url;      /* the endpoint */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: seeded for reproducible tests, good enough for jitter. */
static double rng_unit(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int ks_llm_client_new(ks_ctx *ctx, const ks_llm_config *cfg, ks_llm_totals *totals,
                      ks_llm_client **out) {
  *out = NULL;
  if (cfg->api == KS_LLM_API_UNSET || !cfg->url || !cfg->model || cfg->jobs < 1 ||
      cfg->max_attempts < 1 || !cfg->max_reply_bytes || cfg->max_tokens < 1)
    return ks_fail(ctx, "the LLM configuration is not resolved (ks_llm_config_resolve)");
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc)
    return ks_fail(ctx, "libcurl: %s", curl_easy_strerror(curl_init_rc));
  ks_llm_client *c = ks_xcalloc(1, sizeof *c);
  c->multi = curl_multi_init();
  if (!c->multi) {
    free(c);
    return ks_fail(ctx, "libcurl: cannot create a multi handle");
  }
  c->cfg = cfg;
  c->totals = totals;
  c->next_id = 1;
  c->rng = cfg->seed ? cfg->seed : (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)c << 16);
  ks_buf url = KS_BUF_INIT;
  llm_endpoint_url(cfg, &url);
  c->url = ks_buf_detach(&url);
  *out = c;
  return 0;
}

static void end_attempt(ks_llm_client *c, llm_job *j) {
  if (j->easy) {
    curl_multi_remove_handle(c->multi, j->easy);
    curl_easy_cleanup(j->easy);
    j->easy = NULL;
  }
  curl_slist_free_all(j->headers);
  j->headers = NULL;
}

static void job_free(ks_llm_client *c, llm_job *j) {
  end_attempt(c, j);
  ks_buf_release(&j->response);
  ks_buf_release(&j->content_type);
  ks_buf_release(&j->location);
  ks_arena_release(&j->arena);
  free(j->account);
  free(j->body);
  free(j);
}

void ks_llm_client_free(ks_llm_client *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->njobs; i++)
    job_free(c, c->jobs[i]);
  free(c->jobs);
  curl_multi_cleanup(c->multi);
  free(c->url);
  free(c);
}

size_t ks_llm_pending(const ks_llm_client *c) { return c->njobs; }

int ks_llm_submit(ks_ctx *ctx, ks_llm_client *c, const ks_llm_request *req,
                  unsigned long long *id_out) {
  ks_buf body = KS_BUF_INIT;
  if (ks_llm_request_body(ctx, c->cfg, req, &body)) {
    ks_buf_release(&body);
    return -1;
  }
  llm_job *j = ks_xcalloc(1, sizeof *j);
  j->id = c->next_id++;
  j->user = req->user;
  j->account = req->account ? ks_xstrdup(req->account) : NULL;
  j->body = ks_buf_detach(&body);
  ks_buf_init(&j->response, 0);
  ks_buf_init(&j->content_type, 256);
  ks_buf_init(&j->location, 2048);
  j->state = JOB_QUEUED;
  if (c->njobs == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 16;
    c->jobs = ks_xrealloc(c->jobs, c->cap * sizeof *c->jobs);
  }
  c->jobs[c->njobs++] = j;
  if (id_out)
    *id_out = j->id;
  return 0;
}

/* ---- one attempt ---- */

static size_t on_body(char *data, size_t size, size_t n, void *userp) {
  llm_job *j = userp;
  size_t bytes = size * n;
  if (j->response.len + bytes > j->max_bytes) {
    j->over_cap = true;
    return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
  }
  ks_buf_add(&j->response, data, bytes);
  return bytes;
}

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen) {
  size_t n = strlen(name);
  if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
    return false;
  const char *v = line + n + 1, *end = line + len;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
    end--;
  *value = v;
  *vlen = (size_t)(end - v);
  return true;
}

static size_t on_header(char *line, size_t size, size_t n, void *userp) {
  llm_job *j = userp;
  size_t len = size * n;
  const char *v;
  size_t vlen;
  if (len >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new response (after 100 Continue) */
    ks_buf_reset(&j->content_type);
    ks_buf_reset(&j->location);
  } else if (header_is(line, len, "content-type", &v, &vlen)) {
    ks_buf_reset(&j->content_type);
    ks_buf_add(&j->content_type, v, vlen);
  } else if (header_is(line, len, "location", &v, &vlen)) {
    ks_buf_reset(&j->location);
    ks_buf_add(&j->location, v, vlen);
  }
  return len;
}

static struct curl_slist *make_headers(const ks_llm_config *cfg) {
  struct curl_slist *h = NULL;
  h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "Accept: application/json");
  h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip for large prompts */
  if (cfg->api == KS_LLM_ANTHROPIC)
    h = curl_slist_append(h, "anthropic-version: 2023-06-01");
  if (cfg->key) {
    ks_buf auth = KS_BUF_INIT;
    if (cfg->api == KS_LLM_ANTHROPIC)
      ks_buf_addf(&auth, "x-api-key: %s", cfg->key);
    else
      ks_buf_addf(&auth, "Authorization: Bearer %s", cfg->key);
    h = curl_slist_append(h, auth.data);
    memset(auth.data, 0, auth.len);
    ks_buf_release(&auth);
  }
  return h;
}

static int start_attempt(ks_ctx *ctx, ks_llm_client *c, llm_job *j) {
  const ks_llm_config *cfg = c->cfg;
  ks_buf_reset(&j->response);
  ks_buf_reset(&j->content_type);
  ks_buf_reset(&j->location);
  j->over_cap = false;
  j->curl_error[0] = '\0';
  j->max_bytes = cfg->max_reply_bytes;
  j->headers = make_headers(cfg);
  j->easy = curl_easy_init();
  if (!j->easy || !j->headers)
    return -1;
  CURL *e = j->easy;
  curl_easy_setopt(e, CURLOPT_URL, c->url);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(j->body));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->headers);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "kernelsmith-cc");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_VERBOSE, 0L); /* verbose output would print the key */
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(cfg->connect_timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, cfg->low_speed_bytes);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, cfg->low_speed_time_s);
  if (cfg->total_timeout_s > 0)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(cfg->total_timeout_s * 1000));
  /* Refuses at once when the server announces a larger body; the write
   * callback catches bodies of unannounced length. */
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cfg->max_reply_bytes);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->curl_error);
  curl_easy_setopt(e, CURLOPT_PRIVATE, j);
  if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
    return -1;
  j->attempts++;
  j->state = JOB_RUNNING;
  ks_debug(ctx, "llm: request %llu, attempt %d of %d: POST %s", j->id, j->attempts,
           cfg->max_attempts, c->url);
  return 0;
}

/* ---- finishing ---- */

static void job_done(ks_ctx *ctx, ks_llm_client *c, llm_job *j, ks_llm_status status,
                     ks_buf *error) {
  ks_llm_reply *r = &j->reply;
  r->status = status;
  r->id = j->id;
  r->user = j->user;
  r->attempts = j->attempts;
  r->seconds = j->attempts ? now_s() - j->first_start : 0;
  r->cost = ks_llm_cost(&c->cfg->prices, r->input_tokens, r->output_tokens);
  if (!r->text)
    r->text = r->finish_reason = r->model = "";
  /* A server may quote what it was sent in a normal answer. */
  r->text = ks_llm_redact(c->cfg, r->text, &j->arena);
  r->finish_reason = ks_llm_redact(c->cfg, r->finish_reason, &j->arena);
  r->model = ks_llm_redact(c->cfg, r->model, &j->arena);
  if (status != KS_LLM_OK) {
    if (j->attempts > 1)
      ks_buf_addf(error, " (after %d attempts)", j->attempts);
    llm_scrub(error, c->cfg->key);
    r->error = ks_arena_strndup(&j->arena, error->data, error->len);
    ks_debug(ctx, "llm: request %llu failed: %s", j->id, r->error);
  } else {
    ks_debug(ctx, "llm: request %llu done in %.2f s: %lld tokens in, %lld out", j->id,
             r->seconds, r->input_tokens, r->output_tokens);
  }
  j->state = JOB_DONE;
  j->done_seq = c->next_done_seq++;
  if (c->totals)
    ks_llm_totals_add(c->totals, j->account, r);
}

static bool retryable_status(long s) {
  return s == 408 || s == 409 || s == 429 || (s >= 500 && s <= 599);
}

static bool retryable_curl(CURLcode rc) {
  switch (rc) {
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_PARTIAL_FILE:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return true;
  default:
    return false;
  }
}

/* Full jitter: uniform in [0, min(max, base * 2^(attempt-1))]; a server's
 * retry-after wins, capped. */
static double retry_delay(ks_llm_client *c, const llm_job *j, curl_off_t retry_after) {
  const ks_llm_config *cfg = c->cfg;
  if (retry_after > 0)
    return fmin((double)retry_after, cfg->retry_after_max_s);
  double ceiling = fmin(cfg->backoff_max_s, cfg->backoff_base_s * ldexp(1.0, j->attempts - 1));
  return ceiling * rng_unit(&c->rng);
}

/* Classifies the attempt that just ended: done, or retried later. */
static void attempt_ended(ks_ctx *ctx, ks_llm_client *c, llm_job *j, CURLcode rc) {
  long status = 0;
  curl_off_t retry_after = 0;
  curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(j->easy, CURLINFO_RETRY_AFTER, &retry_after);
  end_attempt(c, j);
  j->reply.http_status = status;
  ks_buf err = KS_BUF_INIT;
  ks_llm_status result = KS_LLM_OK;
  bool retry = false;
  if (rc == CURLE_OK && status >= 200 && status < 300) {
    if (ks_llm_reply_parse(c->cfg->api, j->response.data, j->response.len, &j->arena, &j->reply,
                           &err)) {
      result = KS_LLM_BAD_REPLY;
      ks_buf msg = KS_BUF_INIT;
      llm_one_line(&msg, err.data, err.len, 400);
      ks_buf_reset(&err);
      ks_buf_addf(&err, "HTTP %ld: %s", status, msg.data);
      ks_buf_release(&msg);
    }
  } else if (rc == CURLE_OK && status >= 300 && status < 400) {
    result = KS_LLM_REDIRECT;
    ks_buf_addf(&err, "HTTP %ld: the server redirects to ", status);
    if (j->location.len)
      llm_one_line(&err, j->location.data, j->location.len, 300);
    else
      ks_buf_adds(&err, "(no Location)");
    ks_buf_adds(&err, "; redirects are not followed, so that the key goes nowhere else: "
                      "configure that URL instead");
  } else if (rc == CURLE_OK) {
    result = KS_LLM_HTTP_ERROR;
    ks_llm_error_sentence(status, j->content_type.data, j->response.data, j->response.len, &err);
    retry = retryable_status(status);
  } else if (j->over_cap || rc == CURLE_FILESIZE_EXCEEDED) {
    result = KS_LLM_TOO_LARGE;
    ks_buf_addf(&err, "the reply is larger than the limit of %zu bytes", c->cfg->max_reply_bytes);
    if (status)
      ks_buf_addf(&err, " (HTTP %ld)", status);
  } else {
    result = KS_LLM_TRANSPORT;
    if (rc == CURLE_PARTIAL_FILE)
      ks_buf_adds(&err, "the reply was cut short: the connection closed before the body ended");
    else if (rc == CURLE_OPERATION_TIMEDOUT)
      ks_buf_adds(&err, "timed out");
    else
      ks_buf_adds(&err, curl_easy_strerror(rc));
    if (j->curl_error[0]) {
      ks_buf_adds(&err, " (");
      llm_one_line(&err, j->curl_error, strlen(j->curl_error), 300);
      ks_buf_adds(&err, ")");
    }
    if (status)
      ks_buf_addf(&err, ", HTTP %ld", status);
    retry = retryable_curl(rc);
  }
  if (retry && j->attempts < c->cfg->max_attempts) {
    double delay = retry_delay(c, j, retry_after);
    llm_scrub(&err, c->cfg->key);
    ks_debug(ctx, "llm: request %llu, attempt %d: %s; retrying in %.2f s", j->id, j->attempts,
             err.data, delay);
    j->state = JOB_WAITING;
    j->next_start = now_s() + delay;
  } else {
    job_done(ctx, c, j, result, &err);
  }
  ks_buf_release(&err);
}

/* Starts what may start: waiting retries whose time has come, then queued
 * requests in submission order while slots are free and the budget allows. */
static void start_ready(ks_ctx *ctx, ks_llm_client *c) {
  size_t busy = 0;
  double now = now_s();
  for (size_t i = 0; i < c->njobs; i++) {
    llm_job *j = c->jobs[i];
    if (j->state == JOB_WAITING && j->next_start <= now && start_attempt(ctx, c, j)) {
      ks_buf err = KS_BUF_INIT;
      ks_buf_adds(&err, "libcurl could not start a transfer");
      job_done(ctx, c, j, KS_LLM_TRANSPORT, &err);
      ks_buf_release(&err);
    }
    busy += j->state == JOB_RUNNING || j->state == JOB_WAITING;
  }
  for (size_t i = 0; i < c->njobs && busy < (size_t)c->cfg->jobs; i++) {
    llm_job *j = c->jobs[i];
    if (j->state != JOB_QUEUED)
      continue;
    ks_buf why = KS_BUF_INIT;
    if (c->totals && !ks_llm_budget_allows(&c->cfg->limits, &c->totals->run, &why)) {
      ks_buf err = KS_BUF_INIT;
      ks_buf_addf(&err, "not started: %s", why.data);
      job_done(ctx, c, j, KS_LLM_OVER_BUDGET, &err);
      ks_buf_release(&err);
      ks_buf_release(&why);
      continue;
    }
    ks_buf_release(&why);
    j->first_start = now_s();
    if (c->totals) {
      c->totals->run.requests++;
      ks_llm_tally *acc = ks_llm_totals_account(c->totals, j->account, true);
      if (acc)
        acc->requests++;
    }
    if (start_attempt(ctx, c, j)) {
      ks_buf err = KS_BUF_INIT;
      ks_buf_adds(&err, "libcurl could not start a transfer");
      job_done(ctx, c, j, KS_LLM_TRANSPORT, &err);
      ks_buf_release(&err);
      continue;
    }
    busy++;
  }
}

/* The oldest finished job's index, or -1. */
static long first_done(const ks_llm_client *c) {
  long best = -1;
  for (size_t i = 0; i < c->njobs; i++)
    if (c->jobs[i]->state == JOB_DONE &&
        (best < 0 || c->jobs[i]->done_seq < c->jobs[best]->done_seq))
      best = (long)i;
  return best;
}

static const char *dup_or_empty(ks_arena *a, const char *s) {
  return s && *s ? ks_arena_strdup(a, s) : "";
}

static void hand_back(ks_llm_client *c, size_t i, ks_arena *arena, ks_llm_reply *out) {
  llm_job *j = c->jobs[i];
  *out = j->reply;
  out->text = dup_or_empty(arena, j->reply.text);
  out->finish_reason = dup_or_empty(arena, j->reply.finish_reason);
  out->model = dup_or_empty(arena, j->reply.model);
  out->error = j->reply.error ? ks_arena_strdup(arena, j->reply.error) : NULL;
  memmove(&c->jobs[i], &c->jobs[i + 1], (c->njobs - i - 1) * sizeof *c->jobs);
  c->njobs--;
  job_free(c, j);
}

/* Milliseconds until the next waiting retry may start, capped at `cap`. */
static long next_wake_ms(const ks_llm_client *c, long cap) {
  double now = now_s();
  long best = cap;
  for (size_t i = 0; i < c->njobs; i++)
    if (c->jobs[i]->state == JOB_WAITING) {
      double ms = ceil((c->jobs[i]->next_start - now) * 1000);
      if (ms < best)
        best = ms < 0 ? 0 : (long)ms;
    }
  return best;
}

/* Drives the transfers without blocking and classifies those that ended. */
static int drive(ks_ctx *ctx, ks_llm_client *c) {
  int running = 0;
  CURLMcode mc = curl_multi_perform(c->multi, &running);
  if (mc != CURLM_OK)
    return ks_fail(ctx, "libcurl: %s", curl_multi_strerror(mc));
  CURLMsg *msg;
  int left_msgs;
  while ((msg = curl_multi_info_read(c->multi, &left_msgs))) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    llm_job *j = NULL;
    CURLcode rc = msg->data.result; /* read before the handle goes away */
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
    attempt_ended(ctx, c, j, rc);
  }
  return 0;
}

int ks_llm_poll(ks_ctx *ctx, ks_llm_client *c, int timeout_ms, ks_arena *arena,
                ks_llm_reply *out) {
  double deadline = timeout_ms < 0 ? INFINITY : now_s() + timeout_ms / 1000.0;
  for (;;) {
    start_ready(ctx, c);
    if (drive(ctx, c))
      return -1;
    start_ready(ctx, c); /* refusals and failed starts finish at once */
    long i = first_done(c);
    if (i >= 0) {
      hand_back(c, (size_t)i, arena, out);
      return 1;
    }
    double left = deadline - now_s();
    if (!c->njobs || left <= 0)
      return 0;
    long wait = next_wake_ms(c, isinf(left) ? 1000 : (long)ceil(left * 1000));
    if (wait > 1000)
      wait = 1000;
    CURLMcode mc = curl_multi_poll(c->multi, NULL, 0, (int)wait, NULL);
    if (mc != CURLM_OK)
      return ks_fail(ctx, "libcurl: %s", curl_multi_strerror(mc));
  }
}

int ks_llm_run(ks_ctx *ctx, ks_llm_client *c, const ks_llm_request *reqs, size_t n,
               ks_arena *arena, ks_llm_reply *replies) {
  if (c->njobs)
    return ks_fail(ctx, "ks_llm_run needs a client with no pending requests");
  unsigned long long first = c->next_id;
  for (size_t i = 0; i < n; i++)
    if (ks_llm_submit(ctx, c, &reqs[i], NULL)) {
      ks_fail_prefix(ctx, "LLM request");
      for (size_t k = 0; k < c->njobs; k++)
        job_free(c, c->jobs[k]);
      c->njobs = 0;
      return -1;
    }
  for (size_t got = 0; got < n;) {
    ks_llm_reply r;
    int rc = ks_llm_poll(ctx, c, -1, arena, &r);
    if (rc < 0)
      return -1;
    if (rc == 0)
      continue;
    replies[r.id - first] = r;
    got++;
  }
  return 0;
}
