/* Configuration resolution: explicit values, the environment, the project's
 * config file, the user's config file, defaults; first found wins per field.
 *
 * The project's file is written by whoever wrote the project, so it may not
 * say where requests go or with which key (url, key, key_file, api): a
 * cloned repository must not be able to send the user's key to its own
 * server. Vendor keys (OPENAI_API_KEY, ANTHROPIC_API_KEY) are sent only to
 * their vendor's host, or for OPENAI_API_KEY to OPENAI_BASE_URL, which the
 * OpenAI tools pair it with; any other server gets KERNELSMITH_LLM_KEY or a
 * key file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_fs.h"
#include "llm_internal.h"

static const char openai_origin[] = "https://api.openai.com";
static const char anthropic_origin[] = "https://api.anthropic.com";

enum { KEY_FILE_MAX = 16384, CONFIG_FILE_MAX = 1 << 20 };

/* What one source says; NULL / unset fields say nothing. */
typedef struct layer {
  const char *from; /* the source's name for *_from */
  ks_llm_api api;
  const char *url, *model, *key, *key_file;
  const char *url_from, *key_from; /* when a field's source differs from `from` */
  bool temperature_set;
  double temperature;
  ks_llm_prices prices;
  ks_llm_limits limits;
} layer;

static const char *process_getenv(const char *name, void *data) {
  (void)data;
  return getenv(name);
}

static const char *env(const ks_llm_sources *src, const char *name) {
  ks_llm_getenv_fn get = src && src->getenv ? src->getenv : process_getenv;
  const char *v = get(name, src ? src->getenv_data : NULL);
  return v && *v ? v : NULL;
}

const char *ks_llm_api_name(ks_llm_api api) {
  switch (api) {
  case KS_LLM_OPENAI: return "openai";
  case KS_LLM_ANTHROPIC: return "anthropic";
  default: return "unset";
  }
}

static int parse_api(ks_ctx *ctx, const char *where, const char *s, ks_llm_api *out) {
  if (!strcmp(s, "openai"))
    *out = KS_LLM_OPENAI;
  else if (!strcmp(s, "anthropic"))
    *out = KS_LLM_ANTHROPIC;
  else
    return ks_fail(ctx, "%s: api '%s' is neither openai nor anthropic", where, s);
  return 0;
}

/* A header value must not carry CR or LF (they would start a new header);
 * the message never shows the key itself. */
static int check_key_text(ks_ctx *ctx, const char *where, const char *key) {
  for (const char *p = key; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return ks_fail(ctx, "%s: the key contains a control character", where);
  return 0;
}

/* "~/x" from $HOME; a relative path from the config file's directory. */
static const char *expand_path(const ks_llm_sources *src, const char *path, const char *base_file,
                               ks_arena *a) {
  if (path[0] == '~' && path[1] == '/') {
    const char *home = env(src, "HOME");
    return ks_arena_printf(a, "%s/%s", home ? home : "", path + 2);
  }
  if (path[0] == '/' || !base_file)
    return ks_arena_strdup(a, path);
  char *dir = ks_path_dirname(base_file);
  const char *out = ks_arena_printf(a, "%s/%s", dir, path);
  free(dir);
  return out;
}

/* Reads a key file: private to its owner, one line, not empty. The check
 * is on the open descriptor, so the file cannot be swapped in between. */
static int read_key_file(ks_ctx *ctx, const char *path, ks_arena *a, const char **out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ks_fail(ctx, "key file %s: %s", path, strerror(errno));
  int rc = 0;
  struct stat st;
  char buf[KEY_FILE_MAX + 1];
  size_t len = 0;
  if (fstat(fd, &st) < 0) {
    rc = ks_fail(ctx, "key file %s: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = ks_fail(ctx, "key file %s is not a regular file", path);
    goto out;
  }
  if (st.st_mode & 077) {
    rc = ks_fail(ctx, "key file %s can be read or written by group or others (mode %04o); "
                 "run chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
    goto out;
  }
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof buf - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = ks_fail(ctx, "key file %s: %s", path, strerror(errno));
      goto out;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (len == sizeof buf) {
      rc = ks_fail(ctx, "key file %s is larger than %d bytes", path, KEY_FILE_MAX);
      goto out;
    }
  }
  size_t start = 0;
  while (start < len && (buf[start] == ' ' || buf[start] == '\t' || buf[start] == '\n' ||
                         buf[start] == '\r'))
    start++;
  while (len > start && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n' ||
                         buf[len - 1] == '\r'))
    len--;
  if (len == start) {
    rc = ks_fail(ctx, "key file %s is empty", path);
    goto out;
  }
  if (memchr(buf + start, '\0', len - start)) {
    rc = ks_fail(ctx, "key file %s holds a NUL byte", path);
    goto out;
  }
  *out = ks_arena_strndup(a, buf + start, len - start);
  if (check_key_text(ctx, path, *out))
    rc = ks_fail(ctx, "key file %s holds more than one line or a control character", path);
out:
  memset(buf, 0, sizeof buf);
  close(fd);
  return rc;
}

/* ---- config files ---- */

static int json_number(ks_ctx *ctx, const char *file, const char *field, const cJSON *v,
                       double min, double *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min)
    return ks_fail(ctx, "%s: '%s' must be a number of at least %g", file, field, min);
  *out = v->valuedouble;
  return 0;
}

static int json_string(ks_ctx *ctx, const char *file, const char *field, const cJSON *v,
                       ks_arena *a, const char **out) {
  if (!cJSON_IsString(v) || !*v->valuestring)
    return ks_fail(ctx, "%s: '%s' must be a non-empty string", file, field);
  *out = ks_arena_strdup(a, v->valuestring);
  return 0;
}

static int read_prices(ks_ctx *ctx, const char *file, const cJSON *o, ks_llm_prices *out) {
  if (!cJSON_IsObject(o))
    return ks_fail(ctx, "%s: 'prices' must be an object {\"input\": USD, \"output\": USD} "
                   "per million tokens", file);
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    double *dst = !strcmp(it->string, "input")    ? &out->input_per_mtok
                  : !strcmp(it->string, "output") ? &out->output_per_mtok
                                                  : NULL;
    if (!dst)
      return ks_fail(ctx, "%s: unknown field 'prices.%s' (input, output)", file, it->string);
    if (json_number(ctx, file, it->string, it, 0, dst))
      return -1;
  }
  out->set = true;
  return 0;
}

static int read_limits(ks_ctx *ctx, const char *file, const cJSON *o, ks_llm_limits *out) {
  if (!cJSON_IsObject(o))
    return ks_fail(ctx, "%s: 'limits' must be an object", file);
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    double v = 0;
    if (json_number(ctx, file, it->string, it, 0, &v))
      return -1;
    if (!strcmp(it->string, "max_cost"))
      out->max_cost = v;
    else if (!strcmp(it->string, "max_tokens"))
      out->max_tokens = (long long)v;
    else if (!strcmp(it->string, "max_requests"))
      out->max_requests = (long long)v;
    else
      return ks_fail(ctx, "%s: unknown field 'limits.%s' (max_cost, max_tokens, max_requests)",
                     file, it->string);
  }
  return 0;
}

/* Reads a config file into `l`. A missing file is an empty layer. In a
 * project's file only the fields a project may choose are accepted. */
static int read_config_file(ks_ctx *ctx, const ks_llm_sources *src, const char *path,
                            bool project, const char *user_path, ks_arena *a, layer *l) {
  struct stat st;
  if (stat(path, &st) < 0 && errno == ENOENT)
    return 0;
  ks_buf text = KS_BUF_INIT;
  int rc = ks_read_file(ctx, path, CONFIG_FILE_MAX, &text);
  if (rc) {
    ks_buf_release(&text);
    return rc;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text.data, text.len, &end, false);
  if (!root) {
    rc = ks_fail(ctx, "%s: not valid JSON (near byte %td)", path, end ? end - text.data : 0);
    goto out;
  }
  if (!cJSON_IsObject(root)) {
    rc = ks_fail(ctx, "%s: expected a JSON object", path);
    goto out;
  }
  l->from = ks_arena_strdup(a, path);
  const cJSON *it;
  cJSON_ArrayForEach(it, root) {
    const char *f = it->string;
    bool project_ok = !strcmp(f, "model") || !strcmp(f, "temperature") ||
                      !strcmp(f, "prices") || !strcmp(f, "limits");
    if (project && !project_ok) {
      rc = ks_fail(ctx, "%s: a project's config may not set '%s' (only model, temperature, "
                   "prices and limits); set it in %s or the environment", path, f,
                   user_path ? user_path : "the user's config");
      goto out;
    }
    if (!strcmp(f, "model"))
      rc = json_string(ctx, path, f, it, a, &l->model);
    else if (!strcmp(f, "temperature"))
      rc = json_number(ctx, path, f, it, 0, &l->temperature), l->temperature_set = !rc;
    else if (!strcmp(f, "prices"))
      rc = read_prices(ctx, path, it, &l->prices);
    else if (!strcmp(f, "limits"))
      rc = read_limits(ctx, path, it, &l->limits);
    else if (!strcmp(f, "url"))
      rc = json_string(ctx, path, f, it, a, &l->url);
    else if (!strcmp(f, "api")) {
      if (!cJSON_IsString(it))
        rc = ks_fail(ctx, "%s: 'api' must be \"openai\" or \"anthropic\"", path);
      else
        rc = parse_api(ctx, path, it->valuestring, &l->api);
    } else if (!strcmp(f, "key_file")) {
      rc = json_string(ctx, path, f, it, a, &l->key_file);
      if (!rc)
        l->key_file = expand_path(src, l->key_file, path, a);
    } else if (!strcmp(f, "key"))
      rc = ks_fail(ctx, "%s: a key is not read from a config file; put it in a file of "
                   "mode 600 and name that file with 'key_file'", path);
    else
      rc = ks_fail(ctx, "%s: unknown field '%s'", path, f);
    if (rc)
      goto out;
  }
out:
  cJSON_Delete(root);
  ks_buf_release(&text);
  return rc;
}

static const char *user_config_path(const ks_llm_sources *src, ks_arena *a) {
  if (src && src->user_config)
    return *src->user_config ? src->user_config : NULL;
  const char *xdg = env(src, "XDG_CONFIG_HOME");
  if (xdg && xdg[0] == '/')
    return ks_arena_printf(a, "%s/kernelsmith/config.json", xdg);
  const char *home = env(src, "HOME");
  if (home)
    return ks_arena_printf(a, "%s/.config/kernelsmith/config.json", home);
  return NULL;
}

static int env_layer(ks_ctx *ctx, const ks_llm_sources *src, layer *l) {
  const char *api = env(src, "KERNELSMITH_LLM_API");
  if (api && parse_api(ctx, "KERNELSMITH_LLM_API", api, &l->api))
    return -1;
  l->from = "KERNELSMITH_LLM_API"; /* the only field whose source is l->from */
  if ((l->url = env(src, "KERNELSMITH_LLM_URL")))
    l->url_from = "KERNELSMITH_LLM_URL";
  else if ((l->url = env(src, "OPENAI_BASE_URL")))
    l->url_from = "OPENAI_BASE_URL";
  l->model = env(src, "KERNELSMITH_LLM_MODEL");
  if ((l->key = env(src, "KERNELSMITH_LLM_KEY")))
    l->key_from = "KERNELSMITH_LLM_KEY";
  return 0;
}

/* http(s)://host[:port][/path], no credentials, no spaces; trailing '/'
 * dropped so endpoints join with exactly one. */
static int check_url(ks_ctx *ctx, const char *from, const char *url, ks_arena *a,
                     const char **out) {
  const char *rest = !strncmp(url, "https://", 8)  ? url + 8
                     : !strncmp(url, "http://", 7) ? url + 7
                                                   : NULL;
  if (!rest || !*rest || *rest == '/')
    return ks_fail(ctx, "%s: the LLM URL must start with http:// or https:// and name a host",
                   from);
  size_t host_len = strcspn(rest, "/?#");
  if (memchr(rest, '@', host_len))
    return ks_fail(ctx, "%s: the LLM URL may not hold credentials (user@host); give the key "
                   "through KERNELSMITH_LLM_KEY or a key file", from);
  for (const char *p = url; *p; p++)
    if ((unsigned char)*p <= 0x20 || *p == 0x7f)
      return ks_fail(ctx, "%s: the LLM URL contains a space or control character", from);
  size_t len = strlen(url);
  while (len && url[len - 1] == '/')
    len--;
  *out = ks_arena_strndup(a, url, len);
  return 0;
}

bool llm_url_has_origin(const char *url, const char *origin) {
  size_t n = strlen(origin);
  return !strncmp(url, origin, n) && (url[n] == '\0' || url[n] == '/');
}

/* The first layer that has the field. */
#define FIRST(layers, field, out, from_out)                                    \
  for (size_t i_ = 0; i_ < 4; i_++)                                            \
    if ((layers)[i_].field) {                                                  \
      (out) = (layers)[i_].field;                                              \
      (from_out) = (layers)[i_].from;                                          \
      break;                                                                   \
    }

static void fill_transport(const ks_llm_config *g, ks_llm_config *o) {
  o->jobs = g->jobs > 0 ? g->jobs : 4;
  o->max_attempts = g->max_attempts > 0 ? g->max_attempts : 5;
  o->connect_timeout_s = g->connect_timeout_s > 0 ? g->connect_timeout_s : 30;
  o->low_speed_bytes = g->low_speed_bytes > 0 ? g->low_speed_bytes : 1;
  o->low_speed_time_s = g->low_speed_time_s > 0 ? g->low_speed_time_s : 120;
  o->total_timeout_s = g->total_timeout_s > 0 ? g->total_timeout_s : 0;
  o->max_reply_bytes = g->max_reply_bytes ? g->max_reply_bytes : (size_t)16 << 20;
  o->backoff_base_s = g->backoff_base_s > 0 ? g->backoff_base_s : 1;
  o->backoff_max_s = g->backoff_max_s > 0 ? g->backoff_max_s : 60;
  o->retry_after_max_s = g->retry_after_max_s > 0 ? g->retry_after_max_s : 120;
  o->seed = g->seed;
  o->max_tokens = g->max_tokens > 0 ? g->max_tokens : 8192;
}

/* api, when nothing set it: a URL means the generic OpenAI-compatible API
 * (unless it is Anthropic's host); no URL, the vendor key present decides. */
static int infer_api(ks_ctx *ctx, const ks_llm_sources *src, const char *user_path,
                     ks_llm_config *o) {
  if (o->url) {
    o->api = llm_url_has_origin(o->url, anthropic_origin) ? KS_LLM_ANTHROPIC : KS_LLM_OPENAI;
    o->api_from = o->url_from;
    return 0;
  }
  bool oa = env(src, "OPENAI_API_KEY"), an = env(src, "ANTHROPIC_API_KEY");
  if (oa && an)
    return ks_fail(ctx, "both OPENAI_API_KEY and ANTHROPIC_API_KEY are set; choose one with "
                   "KERNELSMITH_LLM_API=openai|anthropic");
  if (an) {
    o->api = KS_LLM_ANTHROPIC;
    o->api_from = "ANTHROPIC_API_KEY";
  } else if (oa) {
    o->api = KS_LLM_OPENAI;
    o->api_from = "OPENAI_API_KEY";
  } else {
    return ks_fail(ctx, "no LLM is configured: set KERNELSMITH_LLM_URL and "
                   "KERNELSMITH_LLM_MODEL, OPENAI_API_KEY or ANTHROPIC_API_KEY, or 'url' in %s",
                   user_path ? user_path : "~/.config/kernelsmith/config.json");
  }
  return 0;
}

/* The key: given, given key file, KERNELSMITH_LLM_KEY, the vendor's key for
 * its own host, the user's key file. */
static int resolve_key(ks_ctx *ctx, const ks_llm_sources *src, const layer *L, ks_arena *a,
                       ks_llm_config *o) {
  const char *vendor = NULL;
  if (o->api == KS_LLM_OPENAI &&
      (llm_url_has_origin(o->url, openai_origin) ||
       (o->url_from && !strcmp(o->url_from, "OPENAI_BASE_URL"))))
    vendor = "OPENAI_API_KEY";
  else if (o->api == KS_LLM_ANTHROPIC && llm_url_has_origin(o->url, anthropic_origin))
    vendor = "ANTHROPIC_API_KEY";
  const char *file = NULL, *file_from = NULL;
  if (L[0].key) {
    o->key = L[0].key;
    o->key_from = "flag";
  } else if (L[0].key_file) {
    file = L[0].key_file;
    file_from = "flag";
  } else if (L[1].key) {
    o->key = L[1].key;
    o->key_from = L[1].key_from;
  } else if (vendor && env(src, vendor)) {
    o->key = env(src, vendor);
    o->key_from = vendor;
  } else if (L[3].key_file) {
    file = L[3].key_file;
    file_from = L[3].from;
  }
  if (file) {
    if (read_key_file(ctx, file, a, &o->key))
      return -1;
    o->key_file = file;
    o->key_from = ks_arena_printf(a, "key_file %s (%s)", file, file_from);
  } else if (o->key) {
    if (check_key_text(ctx, o->key_from, o->key))
      return -1;
    o->key = ks_arena_strdup(a, o->key);
  }
  if (!o->key && vendor)
    return ks_fail(ctx, "%s needs a key: set %s or KERNELSMITH_LLM_KEY, or 'key_file' in the "
                   "user's config", o->url, vendor);
  return 0;
}

int ks_llm_config_resolve(ks_ctx *ctx, const ks_llm_config *given, const ks_llm_sources *src,
                          ks_arena *a, ks_llm_config *out) {
  static const ks_llm_config none;
  if (!given)
    given = &none;
  memset(out, 0, sizeof *out);
  /* layers: 0 given, 1 environment, 2 project file, 3 user file */
  layer L[4];
  memset(L, 0, sizeof L);
  L[0] = (layer){.from = "flag", .api = given->api, .url = given->url, .model = given->model,
                 .key = given->key, .key_file = given->key_file,
                 .temperature_set = given->temperature_set, .temperature = given->temperature,
                 .prices = given->prices, .limits = given->limits};
  if (env_layer(ctx, src, &L[1]))
    return -1;
  const char *user_path = user_config_path(src, a);
  if (src && src->project_config &&
      read_config_file(ctx, src, src->project_config, true, user_path, a, &L[2]))
    return -1;
  if (user_path && read_config_file(ctx, src, user_path, false, NULL, a, &L[3]))
    return -1;

  const char *from = NULL;
  FIRST(L, api, out->api, out->api_from);
  for (size_t i = 0; i < 4; i++)
    if (L[i].url) {
      out->url_from = L[i].url_from ? L[i].url_from : L[i].from;
      if (check_url(ctx, out->url_from, L[i].url, a, &out->url))
        return -1;
      break;
    }
  FIRST(L, model, out->model, from);
  out->model_from = from == L[1].from ? "KERNELSMITH_LLM_MODEL" : from;

  if (!out->api && infer_api(ctx, src, user_path, out))
    return -1;
  if (!out->url) {
    out->url = out->api == KS_LLM_ANTHROPIC ? anthropic_origin : "https://api.openai.com/v1";
    out->url_from = "default";
  }
  if (!out->model)
    return ks_fail(ctx, "no LLM model is configured: set KERNELSMITH_LLM_MODEL or 'model' in "
                   "the config");
  if (resolve_key(ctx, src, L, a, out))
    return -1;

  for (size_t i = 0; i < 4; i++)
    if (L[i].temperature_set) {
      out->temperature_set = true;
      out->temperature = L[i].temperature;
      break;
    }
  for (size_t i = 0; i < 4; i++)
    if (L[i].prices.set) {
      out->prices = L[i].prices;
      break;
    }
  for (size_t i = 0; i < 4 && !out->limits.max_cost; i++)
    out->limits.max_cost = L[i].limits.max_cost;
  for (size_t i = 0; i < 4 && !out->limits.max_tokens; i++)
    out->limits.max_tokens = L[i].limits.max_tokens;
  for (size_t i = 0; i < 4 && !out->limits.max_requests; i++)
    out->limits.max_requests = L[i].limits.max_requests;
  fill_transport(given, out);
  return 0;
}

void ks_llm_config_describe(const ks_llm_config *c, ks_buf *out) {
  ks_buf_addf(out, "api: %s (from %s)\n", ks_llm_api_name(c->api),
              c->api_from ? c->api_from : "-");
  ks_buf_addf(out, "url: %s (from %s)\n", c->url ? c->url : "-", c->url_from ? c->url_from : "-");
  ks_buf_addf(out, "model: %s (from %s)\n", c->model ? c->model : "-",
              c->model_from ? c->model_from : "-");
  if (c->key)
    ks_buf_addf(out, "key: set (from %s)\n", c->key_from ? c->key_from : "-");
  else
    ks_buf_adds(out, "key: none\n");
  if (c->temperature_set)
    ks_buf_addf(out, "temperature: %g\n", c->temperature);
  if (c->prices.set)
    ks_buf_addf(out, "prices: %g USD in, %g USD out per million tokens\n",
                c->prices.input_per_mtok, c->prices.output_per_mtok);
  ks_buf_addf(out, "limits: max_cost %g USD, max_tokens %lld, max_requests %lld (0: none)\n",
              c->limits.max_cost, c->limits.max_tokens, c->limits.max_requests);
  ks_buf_addf(out, "jobs %d, attempts %d, connect timeout %g s, low speed %ld B/s for %ld s, "
              "total timeout %g s, reply cap %zu bytes\n", c->jobs, c->max_attempts,
              c->connect_timeout_s, c->low_speed_bytes, c->low_speed_time_s,
              c->total_timeout_s, c->max_reply_bytes);
}
