/* test_llm: the LLM client (llm/ks_llm.h).
 *
 * Configuration resolution over a fake environment and config files in a
 * scratch directory; request bodies, cache keys, reply and error parsing,
 * accounting; and the transport against tests/llm_server.py, a local server
 * that fails on request (429, 5xx, 529, 400, 401, redirects, timeouts, slow
 * drips, malformed, truncated, HTML and oversized bodies). Every fault case
 * runs with a canary key that must appear in no error and no diagnostic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ks_llm.h"

#define CANARY "sk-CANARY-7f3a9c1e5b2d4068a1b2c3d4e5f60718"

static char tmp[64];
static pid_t server_pid;
static int port_main, port_other;

/* ---- helpers ---- */

typedef struct fake_env {
  const char *vars[16]; /* "NAME=value" */
} fake_env;

static const char *fake_getenv(const char *name, void *data) {
  const fake_env *e = data;
  size_t n = strlen(name);
  for (size_t i = 0; i < 16 && e->vars[i]; i++)
    if (!strncmp(e->vars[i], name, n) && e->vars[i][n] == '=')
      return e->vars[i] + n + 1;
  return NULL;
}

static const char *tmp_path(const char *rel) {
  static char paths[4][512];
  static unsigned next;
  char *out = paths[next++ % 4];
  snprintf(out, sizeof paths[0], "%s/%s", tmp, rel);
  return out;
}

static void write_file(const char *path, const char *text, mode_t mode) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(dir, 0700);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The server's log (GET /_log) over a plain socket: the test should not
 * need the library it tests to look at what the library did. */
static cJSON *server_log(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port_main)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  const char req[] = "GET /_log HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  assert_int_equal(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
  ks_buf text = KS_BUF_INIT;
  char chunk[65536];
  ssize_t n;
  while ((n = read(fd, chunk, sizeof chunk)) > 0)
    ks_buf_add(&text, chunk, (size_t)n);
  close(fd);
  const char *body = strstr(text.data, "\r\n\r\n");
  assert_non_null(body);
  cJSON *log = cJSON_Parse(body + 4);
  ks_buf_release(&text);
  assert_true(cJSON_IsArray(log));
  return log;
}

static const char *str_of(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Requests the server saw for one tag. */
static int attempts_seen(const cJSON *log, const char *tag) {
  int n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, log) {
    const char *id = str_of(e, "id");
    n += id && !strcmp(id, tag);
  }
  return n;
}

static int group_setup(void **state) {
  snprintf(tmp, sizeof tmp, "/tmp/ks-llm-XXXXXX");
  if (!mkdtemp(tmp))
    return -1;
  int fds[2];
  if (pipe(fds))
    return -1;
  server_pid = fork();
  if (server_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execlp(KS_PYTHON3, KS_PYTHON3, KS_LLM_SERVER, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[128] = "";
  if (!fgets(line, sizeof line, f) || sscanf(line, "PORTS %d %d", &port_main, &port_other) != 2) {
    fprintf(stderr, "llm_server.py did not start: '%s'\n", line);
    fclose(f);
    return -1;
  }
  fclose(f);
  return 0;
}

static int group_teardown(void **state) {
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  return system(cmd);
}

/* ---- configuration ---- */

static int resolve(ks_ctx *ctx, const ks_llm_config *given, fake_env *env, const char *project,
                   ks_arena *a, ks_llm_config *out) {
  ks_llm_sources src = {.getenv = fake_getenv, .getenv_data = env, .project_config = project};
  return ks_llm_config_resolve(ctx, given, &src, a, out);
}

static void config_precedence(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config c;
  char xdg[600];
  snprintf(xdg, sizeof xdg, "XDG_CONFIG_HOME=%s/prec", tmp);
  write_file(tmp_path("prec/kernelsmith/config.json"),
             "{\"url\": \"http://user-host:9/v1/\", \"model\": \"user-model\", "
             "\"prices\": {\"input\": 3, \"output\": 15}, \"temperature\": 0.1, "
             "\"limits\": {\"max_cost\": 9, \"max_requests\": 50}}", 0644);
  write_file(tmp_path("prec/project.json"),
             "{\"model\": \"project-model\", \"temperature\": 0.7, "
             "\"limits\": {\"max_cost\": 2}}", 0644);

  /* The user's file alone: its url, model, prices; api inferred; no key. */
  fake_env env = {{xdg}};
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), 0);
  assert_int_equal(c.api, KS_LLM_OPENAI);
  assert_string_equal(c.url, "http://user-host:9/v1"); /* trailing '/' dropped */
  assert_string_equal(c.model, "user-model");
  assert_null(c.key);
  assert_true(c.prices.set);
  assert_true(c.temperature_set);
  assert_true(c.temperature == 0.1);
  assert_true(c.limits.max_cost == 9);
  assert_int_equal(c.limits.max_requests, 50);
  assert_int_equal(c.jobs, 4);
  assert_int_equal(c.max_attempts, 5);
  assert_int_equal(c.max_reply_bytes, 16 << 20);
  assert_int_equal(c.low_speed_time_s, 120);
  assert_true(c.connect_timeout_s == 30);

  /* The project's file beats the user's for what it may set. */
  assert_int_equal(resolve(&ctx, NULL, &env, tmp_path("prec/project.json"), &a, &c), 0);
  assert_string_equal(c.model, "project-model");
  assert_true(c.temperature == 0.7);
  assert_true(c.limits.max_cost == 2);
  assert_int_equal(c.limits.max_requests, 50); /* per field */
  assert_string_equal(c.url, "http://user-host:9/v1");

  /* The environment beats both files; explicit values beat everything. */
  fake_env env2 = {{xdg, "KERNELSMITH_LLM_MODEL=env-model", "KERNELSMITH_LLM_URL=http://env:1/v1",
                    "KERNELSMITH_LLM_KEY=env-key"}};
  assert_int_equal(resolve(&ctx, NULL, &env2, tmp_path("prec/project.json"), &a, &c), 0);
  assert_string_equal(c.model, "env-model");
  assert_string_equal(c.model_from, "KERNELSMITH_LLM_MODEL");
  assert_string_equal(c.url, "http://env:1/v1");
  assert_string_equal(c.url_from, "KERNELSMITH_LLM_URL");
  assert_string_equal(c.key, "env-key");
  ks_llm_config given = {.model = "flag-model", .temperature = 0, .temperature_set = true,
                         .jobs = 2, .limits = {.max_cost = 1}};
  assert_int_equal(resolve(&ctx, &given, &env2, tmp_path("prec/project.json"), &a, &c), 0);
  assert_string_equal(c.model, "flag-model");
  assert_string_equal(c.model_from, "flag");
  assert_true(c.temperature == 0);
  assert_true(c.limits.max_cost == 1);
  assert_int_equal(c.jobs, 2);

  /* XDG_CONFIG_HOME unset: $HOME/.config. */
  char home[600];
  snprintf(home, sizeof home, "HOME=%s/home", tmp);
  write_file(tmp_path("home/.config/kernelsmith/config.json"),
             "{\"api\": \"anthropic\", \"url\": \"http://h:2\", \"model\": \"home-model\"}", 0600);
  fake_env env3 = {{home}};
  assert_int_equal(resolve(&ctx, NULL, &env3, NULL, &a, &c), 0);
  assert_int_equal(c.api, KS_LLM_ANTHROPIC);
  assert_string_equal(c.model, "home-model");
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void config_vendor_keys(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config c;

  /* ANTHROPIC_API_KEY: the Anthropic API at its own host. */
  fake_env an = {{"HOME=/nonexistent", "ANTHROPIC_API_KEY=" CANARY, "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &an, NULL, &a, &c), 0);
  assert_int_equal(c.api, KS_LLM_ANTHROPIC);
  assert_string_equal(c.url, "https://api.anthropic.com");
  assert_string_equal(c.key, CANARY);
  assert_string_equal(c.key_from, "ANTHROPIC_API_KEY");
  ks_buf d = KS_BUF_INIT;
  ks_llm_config_describe(&c, &d);
  assert_non_null(strstr(d.data, "key: set (from ANTHROPIC_API_KEY)"));
  assert_null(strstr(d.data, CANARY));
  ks_buf_release(&d);

  /* OPENAI_BASE_URL with OPENAI_API_KEY. */
  fake_env oa = {{"HOME=/nonexistent", "OPENAI_BASE_URL=http://vllm:8000/v1",
                  "OPENAI_API_KEY=oa-key", "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &oa, NULL, &a, &c), 0);
  assert_int_equal(c.api, KS_LLM_OPENAI);
  assert_string_equal(c.url, "http://vllm:8000/v1");
  assert_string_equal(c.key, "oa-key");

  /* OPENAI_API_KEY alone: OpenAI itself. */
  fake_env oa2 = {{"HOME=/nonexistent", "OPENAI_API_KEY=oa-key", "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &oa2, NULL, &a, &c), 0);
  assert_string_equal(c.url, "https://api.openai.com/v1");
  assert_string_equal(c.key, "oa-key");

  /* A vendor's key is not sent to some other server. */
  fake_env other = {{"HOME=/nonexistent", "KERNELSMITH_LLM_URL=http://elsewhere:1/v1",
                     "OPENAI_API_KEY=oa-key", "ANTHROPIC_API_KEY=an-key",
                     "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &other, NULL, &a, &c), 0);
  assert_null(c.key);

  /* Both vendor keys and nothing else: ambiguous. */
  fake_env both = {{"HOME=/nonexistent", "OPENAI_API_KEY=x", "ANTHROPIC_API_KEY=y",
                    "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &both, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "KERNELSMITH_LLM_API"));
  /* ... which KERNELSMITH_LLM_API settles. */
  both.vars[4] = "KERNELSMITH_LLM_API=anthropic";
  assert_int_equal(resolve(&ctx, NULL, &both, NULL, &a, &c), 0);
  assert_string_equal(c.key, "y");

  /* Nothing at all, no model, a bad api, a URL with credentials. */
  fake_env none = {{"HOME=/nonexistent"}};
  assert_int_equal(resolve(&ctx, NULL, &none, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "no LLM is configured"));
  fake_env nomodel = {{"HOME=/nonexistent", "KERNELSMITH_LLM_URL=http://x:1"}};
  assert_int_equal(resolve(&ctx, NULL, &nomodel, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "model"));
  fake_env badapi = {{"HOME=/nonexistent", "KERNELSMITH_LLM_API=gemini"}};
  assert_int_equal(resolve(&ctx, NULL, &badapi, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "gemini"));
  fake_env creds = {{"HOME=/nonexistent", "KERNELSMITH_LLM_URL=http://u:" CANARY "@h/v1",
                     "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &creds, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "credentials"));
  assert_null(strstr(ctx.error, CANARY));
  /* The official hosts need a key. */
  fake_env nokey = {{"HOME=/nonexistent", "KERNELSMITH_LLM_API=openai", "KERNELSMITH_LLM_MODEL=m"}};
  assert_int_equal(resolve(&ctx, NULL, &nokey, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "needs a key"));
  /* A key with a line break would forge headers. */
  fake_env crlf = {{"HOME=/nonexistent", "KERNELSMITH_LLM_URL=http://x:1",
                    "KERNELSMITH_LLM_MODEL=m", "KERNELSMITH_LLM_KEY=abc\r\nX-Evil: 1"}};
  assert_int_equal(resolve(&ctx, NULL, &crlf, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "control character"));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void config_key_files(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config c;
  char xdg[600];
  snprintf(xdg, sizeof xdg, "XDG_CONFIG_HOME=%s/keys", tmp);
  fake_env env = {{xdg, "HOME=/nonexistent"}};
  /* key_file relative to the config file's directory. */
  write_file(tmp_path("keys/kernelsmith/config.json"),
             "{\"url\": \"http://h:1/v1\", \"model\": \"m\", \"key_file\": \"key.txt\"}", 0600);
  write_file(tmp_path("keys/kernelsmith/key.txt"), "\n  " CANARY "  \n", 0644);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, tmp_path("keys/kernelsmith/key.txt")));
  assert_non_null(strstr(ctx.error, "group or others"));
  assert_null(strstr(ctx.error, CANARY));
  assert_null(strchr(ctx.error, '\n'));
  chmod(tmp_path("keys/kernelsmith/key.txt"), 0640);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), -1);
  chmod(tmp_path("keys/kernelsmith/key.txt"), 0600);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), 0);
  assert_string_equal(c.key, CANARY); /* trimmed */
  assert_non_null(strstr(c.key_from, "key.txt"));

  /* A key file holding two lines, and an empty one. */
  write_file(tmp_path("keys/two.txt"), "abc\ndef\n", 0600);
  ks_llm_config given = {.key_file = tmp_path("keys/two.txt")};
  assert_int_equal(resolve(&ctx, &given, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "two.txt"));
  write_file(tmp_path("keys/empty.txt"), " \n", 0600);
  given.key_file = tmp_path("keys/empty.txt");
  assert_int_equal(resolve(&ctx, &given, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "empty"));

  /* A key in the config file itself is refused. */
  write_file(tmp_path("keys2/kernelsmith/config.json"),
             "{\"url\": \"http://h:1/v1\", \"model\": \"m\", \"key\": \"" CANARY "\"}", 0600);
  snprintf(xdg, sizeof xdg, "XDG_CONFIG_HOME=%s/keys2", tmp);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "key_file"));
  assert_null(strstr(ctx.error, CANARY));

  /* Malformed and unknown. */
  write_file(tmp_path("keys2/kernelsmith/config.json"), "{\"model\": ", 0600);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "not valid JSON"));
  assert_non_null(strstr(ctx.error, "keys2/kernelsmith/config.json"));
  write_file(tmp_path("keys2/kernelsmith/config.json"), "{\"modle\": \"m\"}", 0600);
  assert_int_equal(resolve(&ctx, NULL, &env, NULL, &a, &c), -1);
  assert_non_null(strstr(ctx.error, "unknown field 'modle'"));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void project_config_restrictions(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config c;
  fake_env env = {{"HOME=/nonexistent", "KERNELSMITH_LLM_URL=http://h:1/v1",
                   "KERNELSMITH_LLM_MODEL=m"}};
  static const char *const forbidden[] = {"url", "key", "key_file", "api", "key_command",
                                          "jobs"};
  for (size_t i = 0; i < sizeof forbidden / sizeof *forbidden; i++) {
    char text[256];
    snprintf(text, sizeof text, "{\"model\": \"ok\", \"%s\": \"x\"}", forbidden[i]);
    write_file(tmp_path("proj/.kernelsmith/config.json"), text, 0644);
    assert_int_equal(resolve(&ctx, NULL, &env, tmp_path("proj/.kernelsmith/config.json"), &a, &c),
                     -1);
    char field[64];
    snprintf(field, sizeof field, "'%s'", forbidden[i]);
    assert_non_null(strstr(ctx.error, tmp_path("proj/.kernelsmith/config.json")));
    assert_non_null(strstr(ctx.error, field));
    assert_null(strchr(ctx.error, '\n'));
  }
  /* What a project may set; a missing project file is no error. */
  write_file(tmp_path("proj/.kernelsmith/config.json"),
             "{\"model\": \"p\", \"temperature\": 0.3, \"prices\": {\"input\": 1, \"output\": 2},"
             " \"limits\": {\"max_tokens\": 1000}}", 0644);
  assert_int_equal(resolve(&ctx, NULL, &env, tmp_path("proj/.kernelsmith/config.json"), &a, &c),
                   0);
  assert_string_equal(c.model, "m"); /* the environment still wins */
  assert_int_equal(c.limits.max_tokens, 1000);
  assert_true(c.prices.output_per_mtok == 2);
  assert_int_equal(resolve(&ctx, NULL, &env, tmp_path("proj/missing.json"), &a, &c), 0);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* ---- requests, cache keys, replies, cost ---- */

static ks_llm_config plain_config(ks_llm_api api, const char *url) {
  return (ks_llm_config){.api = api, .url = url, .model = "m1", .key = CANARY, .max_tokens = 512,
                         .jobs = 4, .max_attempts = 3};
}

static void request_bodies(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_llm_message msgs[] = {{"user", "hi"}, {"assistant", "hello"}, {"user", "again"}};
  ks_llm_request req = {.system = "be brief", .messages = msgs, .nmessages = 3, .seed = 7,
                        .seed_set = true, .temperature = 0.5, .temperature_set = true};
  ks_buf body = KS_BUF_INIT;

  ks_llm_config oc = plain_config(KS_LLM_OPENAI, "http://h/v1");
  assert_int_equal(ks_llm_request_body(&ctx, &oc, &req, &body), 0);
  cJSON *j = cJSON_Parse(body.data);
  assert_string_equal(str_of(j, "model"), "m1");
  assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 512);
  assert_int_equal(cJSON_GetObjectItem(j, "seed")->valueint, 7);
  assert_true(cJSON_GetObjectItem(j, "temperature")->valuedouble == 0.5);
  cJSON *m = cJSON_GetObjectItem(j, "messages");
  assert_int_equal(cJSON_GetArraySize(m), 4);
  assert_string_equal(str_of(cJSON_GetArrayItem(m, 0), "role"), "system");
  assert_string_equal(str_of(cJSON_GetArrayItem(m, 0), "content"), "be brief");
  assert_string_equal(str_of(cJSON_GetArrayItem(m, 3), "content"), "again");
  cJSON_Delete(j);
  assert_null(strstr(body.data, CANARY));

  /* OpenAI's own host: max_completion_tokens. */
  oc.url = "https://api.openai.com/v1";
  assert_int_equal(ks_llm_request_body(&ctx, &oc, &req, &body), 0);
  assert_non_null(strstr(body.data, "\"max_completion_tokens\":512"));

  ks_llm_config ac = plain_config(KS_LLM_ANTHROPIC, "http://h");
  req.model = "m2";
  req.max_tokens = 99;
  assert_int_equal(ks_llm_request_body(&ctx, &ac, &req, &body), 0);
  j = cJSON_Parse(body.data);
  assert_string_equal(str_of(j, "model"), "m2");
  assert_string_equal(str_of(j, "system"), "be brief");
  assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 99);
  assert_null(cJSON_GetObjectItem(j, "seed"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "messages")), 3);
  cJSON_Delete(j);

  /* Without a temperature anywhere, none is sent. */
  req.temperature_set = false;
  assert_int_equal(ks_llm_request_body(&ctx, &ac, &req, &body), 0);
  assert_null(strstr(body.data, "temperature"));

  ks_llm_message bad[] = {{"system", "x"}};
  ks_llm_request breq = {.messages = bad, .nmessages = 1};
  assert_int_equal(ks_llm_request_body(&ctx, &ac, &breq, &body), -1);
  assert_non_null(strstr(ctx.error, "role 'system'"));
  breq.nmessages = 0;
  assert_int_equal(ks_llm_request_body(&ctx, &ac, &breq, &body), -1);
  ks_buf_release(&body);
  ks_ctx_release(&ctx);
}

static void cache_keys(void **state) {
  ks_llm_message m1[] = {{"user", "ab"}, {"user", "c"}};
  ks_llm_message m2[] = {{"user", "a"}, {"user", "bc"}};
  ks_llm_request r1 = {.system = "s", .messages = m1, .nmessages = 2};
  ks_llm_request r2 = {.system = "s", .messages = m2, .nmessages = 2};
  ks_llm_config c = plain_config(KS_LLM_OPENAI, "http://h/v1");
  char k1[KS_HASH_HEX], k2[KS_HASH_HEX], k3[KS_HASH_HEX];
  ks_llm_cache_key(&c, &r1, k1);
  ks_llm_cache_key(&c, &r2, k2);
  assert_int_equal(strlen(k1), 64);
  assert_string_not_equal(k1, k2); /* length-prefixed: no ambiguity */
  /* Another key or host: the same key. */
  ks_llm_config c2 = c;
  c2.key = "other";
  c2.url = "http://elsewhere:9/v1";
  ks_llm_cache_key(&c2, &r1, k3);
  assert_string_equal(k1, k3);
  /* Model, temperature, max_tokens, seed, api: different keys. */
  ks_llm_request r3 = r1;
  r3.temperature = 0.2;
  r3.temperature_set = true;
  ks_llm_cache_key(&c, &r3, k3);
  assert_string_not_equal(k1, k3);
  r3 = r1;
  r3.model = "m9";
  ks_llm_cache_key(&c, &r3, k3);
  assert_string_not_equal(k1, k3);
  r3 = r1;
  r3.max_tokens = 7;
  ks_llm_cache_key(&c, &r3, k3);
  assert_string_not_equal(k1, k3);
  r3 = r1;
  r3.seed_set = true;
  ks_llm_cache_key(&c, &r3, k3);
  assert_string_not_equal(k1, k3);
  c2 = c;
  c2.api = KS_LLM_ANTHROPIC;
  ks_llm_cache_key(&c2, &r1, k3);
  assert_string_not_equal(k1, k3);
  /* The model given by the request or by the config: same effective key. */
  r3 = r1;
  r3.model = "m1";
  ks_llm_cache_key(&c, &r3, k3);
  assert_string_equal(k1, k3);
  ks_buf mat = KS_BUF_INIT;
  ks_llm_cache_material(&c, &r1, &mat);
  assert_null(strstr(mat.data, CANARY));
  assert_null(strstr(mat.data, "http://h"));
  assert_non_null(strstr(mat.data, "path 17:/chat/completions\n"));
  ks_buf_release(&mat);
}

static void reply_parsing(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_llm_reply r;
  ks_buf why = KS_BUF_INIT;
  const char oa[] = "{\"model\":\"gpt\",\"choices\":[{\"message\":{\"role\":\"assistant\","
                    "\"content\":\"hi\"},\"finish_reason\":\"length\"}],"
                    "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5}}";
  memset(&r, 0, sizeof r);
  assert_int_equal(ks_llm_reply_parse(KS_LLM_OPENAI, oa, strlen(oa), &a, &r, &why), 0);
  assert_string_equal(r.text, "hi");
  assert_string_equal(r.finish_reason, "length");
  assert_string_equal(r.model, "gpt");
  assert_int_equal(r.input_tokens, 11);
  assert_int_equal(r.output_tokens, 5);
  const char an[] = "{\"type\":\"message\",\"model\":\"claude\",\"content\":[{\"type\":\"text\","
                    "\"text\":\"a\"},{\"type\":\"tool_use\"},{\"type\":\"text\",\"text\":\"b\"}],"
                    "\"stop_reason\":\"max_tokens\",\"usage\":{\"input_tokens\":3,"
                    "\"output_tokens\":4}}";
  assert_int_equal(ks_llm_reply_parse(KS_LLM_ANTHROPIC, an, strlen(an), &a, &r, &why), 0);
  assert_string_equal(r.text, "ab");
  assert_string_equal(r.finish_reason, "max_tokens");
  assert_int_equal(r.input_tokens, 3);
  /* Wrong shapes. */
  assert_int_equal(ks_llm_reply_parse(KS_LLM_OPENAI, an, strlen(an), &a, &r, &why), -1);
  assert_non_null(strstr(why.data, "choices"));
  ks_buf_reset(&why);
  assert_int_equal(ks_llm_reply_parse(KS_LLM_OPENAI, "[1", 2, &a, &r, &why), -1);
  ks_buf_reset(&why);
  const char err200[] = "{\"error\":{\"message\":\"context too long\"}}";
  assert_int_equal(ks_llm_reply_parse(KS_LLM_OPENAI, err200, strlen(err200), &a, &r, &why), -1);
  assert_non_null(strstr(why.data, "context too long"));

  /* Error sentences. */
  ks_buf s = KS_BUF_INIT;
  const char ollama[] = "{\"error\":\"model 'x' not found\"}";
  ks_llm_error_sentence(404, "application/json", ollama, strlen(ollama), &s);
  assert_string_equal(s.data, "HTTP 404: model 'x' not found");
  ks_buf_reset(&s);
  const char detail[] = "{\"detail\":\"Not Found\"}";
  ks_llm_error_sentence(404, NULL, detail, strlen(detail), &s);
  assert_string_equal(s.data, "HTTP 404: Not Found");
  ks_buf_reset(&s);
  const char html[] = "<html><body>\n<h1>502</h1></body></html>";
  ks_llm_error_sentence(502, "text/html; charset=utf-8", html, strlen(html), &s);
  assert_string_equal(s.data, "HTTP 502 with a non-JSON body (text/html; charset=utf-8, 39 bytes)");
  ks_buf_reset(&s);
  ks_llm_error_sentence(503, NULL, "", 0, &s);
  assert_string_equal(s.data, "HTTP 503 with an empty body");
  ks_buf_reset(&s);
  /* A long multi-line message: one line, cut. */
  ks_buf longmsg = KS_BUF_INIT;
  ks_buf_adds(&longmsg, "{\"error\":{\"message\":\"");
  for (int i = 0; i < 200; i++)
    ks_buf_adds(&longmsg, "line\\n");
  ks_buf_adds(&longmsg, "\"}}");
  ks_llm_error_sentence(400, NULL, longmsg.data, longmsg.len, &s);
  assert_null(strchr(s.data, '\n'));
  assert_true(s.len < 330);
  assert_non_null(strstr(s.data, "..."));
  ks_buf_release(&longmsg);
  ks_buf_release(&s);
  ks_buf_release(&why);
  ks_arena_release(&a);
}

static void cost_and_budgets(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_llm_prices p = {.input_per_mtok = 3, .output_per_mtok = 15, .set = true};
  assert_true(fabs(ks_llm_cost(&p, 1000000, 100000) - 4.5) < 1e-12);
  ks_llm_prices unknown = {0};
  assert_true(ks_llm_cost(&unknown, 1000, 1000) == 0);

  ks_llm_totals t;
  ks_llm_totals_init(&t, &a);
  ks_llm_reply ok = {.status = KS_LLM_OK, .input_tokens = 100, .output_tokens = 10, .cost = 0.5,
                     .seconds = 2};
  ks_llm_reply bad = {.status = KS_LLM_HTTP_ERROR};
  ks_llm_totals_add(&t, "saxpy", &ok);
  ks_llm_totals_add(&t, "gelu", &ok);
  ks_llm_totals_add(&t, "saxpy", &bad);
  ks_llm_totals_add(&t, NULL, &ok);
  assert_int_equal(t.run.input_tokens, 300);
  assert_int_equal(t.run.failed, 1);
  assert_true(fabs(t.run.cost - 1.5) < 1e-12);
  ks_llm_tally *s = ks_llm_totals_account(&t, "saxpy", false);
  assert_non_null(s);
  assert_int_equal(s->input_tokens, 100);
  assert_int_equal(s->failed, 1);
  assert_int_equal(t.accounts.len, 2);
  assert_null(ks_llm_totals_account(&t, "nope", false));

  ks_buf why = KS_BUF_INIT;
  ks_llm_limits none = {0};
  assert_true(ks_llm_budget_allows(&none, &t.run, &why));
  ks_llm_limits cost = {.max_cost = 1.5};
  assert_false(ks_llm_budget_allows(&cost, &t.run, &why));
  assert_non_null(strstr(why.data, "1.50 USD"));
  ks_llm_limits tokens = {.max_tokens = 331};
  assert_true(ks_llm_budget_allows(&tokens, &t.run, NULL));
  tokens.max_tokens = 330;
  assert_false(ks_llm_budget_allows(&tokens, &t.run, NULL));
  t.run.requests = 4;
  ks_llm_limits reqs = {.max_requests = 4};
  assert_false(ks_llm_budget_allows(&reqs, &t.run, NULL));
  ks_buf_release(&why);
  ks_arena_release(&a);
}

/* ---- the transport against the fault server ---- */

typedef struct scenario {
  const char *name;
  ks_llm_status status;
  int attempts;      /* the client's and the server's count */
  long http_status;
  const char *error; /* a piece of the error sentence */
} scenario;

/* With max_attempts 3. The low-speed limit is 1000 bytes/s for 2 s: curl
 * averages over its last 5 s, upload included, so at 1 byte/s the request's
 * own body would keep a silent server alive for 5 s more. */
static const scenario scenarios[] = {
    {"ok", KS_LLM_OK, 1, 200, NULL},
    {"429-once", KS_LLM_OK, 2, 200, NULL},
    {"429date-once", KS_LLM_OK, 2, 200, NULL}, /* Retry-After: an HTTP date 2 s ahead */
    {"429long-once", KS_LLM_OK, 2, 200, NULL}, /* Retry-After: 30, capped at 2 */
    {"500-once", KS_LLM_OK, 2, 200, NULL},
    {"529-once", KS_LLM_OK, 2, 200, NULL},
    {"truncated-once", KS_LLM_OK, 2, 200, NULL},
    {"drip", KS_LLM_OK, 1, 200, NULL},
    {"400", KS_LLM_HTTP_ERROR, 1, 400,
     "invalid_request_error: max_tokens: 999999 > 8192, the maximum for this model"},
    {"401", KS_LLM_HTTP_ERROR, 1, 401, "invalid key: "},
    {"echokey", KS_LLM_OK, 1, 200, NULL}, /* a normal answer that quotes the key */
    {"redirect", KS_LLM_REDIRECT, 1, 302, "redirects to http://127.0.0.1:"},
    {"timeout", KS_LLM_TRANSPORT, 3, 0, "timed out"},
    {"malformed", KS_LLM_BAD_REPLY, 1, 200, "not a JSON object"},
    {"truncated", KS_LLM_TRANSPORT, 3, 200, "cut short"},
    {"html502", KS_LLM_HTTP_ERROR, 3, 502, "HTTP 502 with a non-JSON body (text/html, "},
    {"500", KS_LLM_HTTP_ERROR, 3, 500, "server_error: internal trouble (after 3 attempts)"},
    {"big", KS_LLM_TOO_LARGE, 1, 200, "larger than the limit of 1048576 bytes"},
    {"bignolen", KS_LLM_TOO_LARGE, 1, 200, "larger than the limit"},
};
enum { NSCEN = sizeof scenarios / sizeof *scenarios };

static ks_llm_config server_config(ks_llm_api api) {
  ks_llm_config c = {.api = api, .model = "test-model", .key = CANARY, .max_tokens = 64,
                     .jobs = NSCEN, .max_attempts = 3, .connect_timeout_s = 2,
                     .low_speed_bytes = 1000, .low_speed_time_s = 2,
                     .max_reply_bytes = 1 << 20,
                     .backoff_base_s = 0.05, .backoff_max_s = 0.2, .retry_after_max_s = 2,
                     .seed = 42, .prices = {.input_per_mtok = 2, .output_per_mtok = 10,
                                            .set = true}};
  static char urls[2][64];
  char *url = urls[api == KS_LLM_ANTHROPIC];
  if (api == KS_LLM_ANTHROPIC)
    snprintf(url, sizeof urls[0], "http://127.0.0.1:%d", port_main);
  else
    snprintf(url, sizeof urls[0], "http://127.0.0.1:%d/v1", port_main);
  c.url = url;
  return c;
}

/* Runs every scenario in one batch (so that one request's failure visibly
 * does not disturb the others) and checks replies, the server's log, and
 * that the canary key leaked into no error and no diagnostic. */
static void run_faults(ks_llm_api api) {
  const char *apiname = ks_llm_api_name(api);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  char *diag_text = NULL;
  size_t diag_len = 0;
  ctx.diag = open_memstream(&diag_text, &diag_len);
  ctx.verbosity = KS_LOG_DEBUG;
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config cfg = server_config(api);
  ks_llm_totals totals;
  ks_llm_totals_init(&totals, &a);
  ks_llm_client *client = NULL;
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, &totals, &client), 0);

  ks_llm_message msgs[NSCEN][1];
  ks_llm_request reqs[NSCEN];
  char tags[NSCEN][64];
  for (int i = 0; i < NSCEN; i++) {
    snprintf(tags[i], sizeof tags[i], "%s-%s", apiname, scenarios[i].name);
    msgs[i][0] = (ks_llm_message){"user", ks_arena_printf(&a, "scenario=%s id=%s",
                                                          scenarios[i].name, tags[i])};
    reqs[i] = (ks_llm_request){.system = "sys", .messages = msgs[i], .nmessages = 1,
                               .account = scenarios[i].status == KS_LLM_OK ? "good" : "bad",
                               .user = &reqs[i]};
  }
  ks_llm_reply replies[NSCEN];
  double t0 = now_s();
  assert_int_equal(ks_llm_run(&ctx, client, reqs, NSCEN, &a, replies), 0);
  double elapsed = now_s() - t0;
  fflush(ctx.diag);
  cJSON *log = server_log();

  for (int i = 0; i < NSCEN; i++) {
    const scenario *s = &scenarios[i];
    const ks_llm_reply *r = &replies[i];
    if (r->status != s->status || r->attempts != s->attempts)
      fail_msg("%s %s: status '%s' after %d attempts (%s), expected '%s' after %d", apiname,
               s->name, ks_llm_status_name(r->status), r->attempts, r->error ? r->error : "-",
               ks_llm_status_name(s->status), s->attempts);
    assert_ptr_equal(r->user, &reqs[i]);
    assert_int_equal(attempts_seen(log, tags[i]), s->attempts);
    if (s->http_status)
      assert_int_equal(r->http_status, s->http_status);
    if (!strcmp(s->name, "echokey")) {
      /* Scrubbed in the text and the model's name, nothing else changed. */
      assert_null(r->error);
      const char *want = ks_arena_printf(
          &a, "answer for %s; the header was %s[key]%s", tags[i],
          api == KS_LLM_ANTHROPIC ? "" : "Bearer ", api == KS_LLM_ANTHROPIC ? " (end)" : "");
      assert_string_equal(r->text, want);
      assert_string_equal(r->model, ks_arena_printf(&a, "test-model for %s[key]",
                                                    api == KS_LLM_ANTHROPIC ? "" : "Bearer "));
    } else if (s->status == KS_LLM_OK) {
      assert_null(r->error);
      const char *want = ks_arena_printf(&a, "answer for %s%s", tags[i],
                                         api == KS_LLM_ANTHROPIC ? " (end)" : "");
      assert_string_equal(r->text, want);
      assert_string_equal(r->finish_reason, api == KS_LLM_ANTHROPIC ? "end_turn" : "stop");
      assert_string_equal(r->model, "test-model");
      assert_int_equal(r->input_tokens, api == KS_LLM_ANTHROPIC ? 105 : 100);
      assert_int_equal(r->output_tokens, 20);
      assert_true(r->cost > 0);
    } else {
      assert_non_null(r->error);
      assert_null(strchr(r->error, '\n'));
      if (!strstr(r->error, s->error))
        fail_msg("%s %s: error '%s' lacks '%s'", apiname, s->name, r->error, s->error);
    }
    assert_null(strstr(r->text, CANARY));
    if (r->error)
      assert_null(strstr(r->error, CANARY));
  }
  /* Retry-after was honoured, in seconds and as a date, and capped. */
  for (int i = 0; i < NSCEN; i++) {
    double t = replies[i].seconds;
    if (!strcmp(scenarios[i].name, "429-once") && t < 0.95)
      fail_msg("retry-after 1 s, but the retry came after %.2f s", t);
    if (!strcmp(scenarios[i].name, "429date-once") && t < 0.95)
      fail_msg("retry-after of a date 2 s ahead, but the retry came after %.2f s", t);
    if (!strcmp(scenarios[i].name, "429long-once") && (t < 1.95 || t > 4))
      fail_msg("retry-after 30 s capped at 2 s, but the retry came after %.2f s", t);
  }
  /* The server's echo of the key was scrubbed. */
  for (int i = 0; i < NSCEN; i++)
    if (!strcmp(scenarios[i].name, "401"))
      assert_non_null(strstr(replies[i].error, "[key]"));

  /* Headers: the key went to the configured server, in the API's header,
   * and no request reached the redirect's target. */
  int seen = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, log) {
    const char *id = str_of(e, "id");
    if (!id || strncmp(id, apiname, strlen(apiname)))
      continue;
    seen++;
    assert_string_equal(str_of(e, "listener"), "main");
    const cJSON *h = cJSON_GetObjectItem(e, "headers");
    if (api == KS_LLM_ANTHROPIC) {
      assert_string_equal(str_of(e, "path"), "/v1/messages");
      assert_string_equal(str_of(h, "x-api-key"), CANARY);
      assert_string_equal(str_of(h, "anthropic-version"), "2023-06-01");
      assert_null(str_of(h, "authorization"));
    } else {
      assert_string_equal(str_of(e, "path"), "/v1/chat/completions");
      assert_string_equal(str_of(h, "authorization"), "Bearer " CANARY);
      assert_null(str_of(h, "x-api-key"));
    }
    assert_string_equal(str_of(h, "content-type"), "application/json");
    assert_null(strstr(str_of(e, "body"), CANARY));
  }
  assert_true(seen > NSCEN);
  cJSON_ArrayForEach(e, log) assert_string_not_equal(str_of(e, "listener"), "other");

  /* Totals: per run and per account. */
  int nok = 0;
  for (int i = 0; i < NSCEN; i++)
    nok += scenarios[i].status == KS_LLM_OK;
  assert_int_equal(totals.run.requests, NSCEN);
  assert_int_equal(totals.run.failed, NSCEN - nok);
  ks_llm_tally *good = ks_llm_totals_account(&totals, "good", false);
  assert_non_null(good);
  assert_int_equal(good->requests, nok);
  assert_int_equal(good->output_tokens, 20 * nok);
  assert_true(fabs(totals.run.cost - good->cost) < 1e-12);
  /* Failures by kind (a status and the HTTP status), each with its first
   * sentence: the run's one line per kind comes from these. */
  assert_int_equal(totals.answered, nok);
  long long kinds_total = 0;
  for (size_t k = 0; k < totals.failures.len; k++) {
    const ks_llm_failure *f = &totals.failures.items[k];
    kinds_total += f->count;
    assert_null(strstr(f->error, CANARY));
    for (size_t m = 0; m < k; m++)
      assert_false(totals.failures.items[m].status == f->status &&
                   totals.failures.items[m].http_status == f->http_status);
    if (f->status == KS_LLM_HTTP_ERROR && f->http_status == 401)
      assert_true(strstr(f->error, "invalid key: ") && strstr(f->error, "[key]"));
    if (f->status == KS_LLM_TOO_LARGE)
      assert_int_equal(f->count, 2); /* big and bignolen: one kind */
  }
  assert_int_equal(kinds_total, NSCEN - nok);
  assert_int_equal(totals.failures.len, NSCEN - nok - 1);

  /* Nothing anywhere holds the key. */
  assert_non_null(diag_text);
  if (getenv("KS_LLM_SHOW_DIAG"))
    fputs(diag_text, stderr);
  assert_non_null(strstr(diag_text, "retrying in"));
  assert_null(strstr(diag_text, CANARY));
  ks_buf desc = KS_BUF_INIT;
  ks_llm_config_describe(&cfg, &desc);
  assert_null(strstr(desc.data, CANARY));
  ks_buf_release(&desc);
  assert_null(strstr(ctx.error, CANARY));
  /* Every case runs at once: the slowest (3 timeouts) sets the pace. */
  if (elapsed > 25)
    fail_msg("%s: the fault batch took %.1f s", apiname, elapsed);
  cJSON_Delete(log);
  ks_llm_client_free(client);
  fclose(ctx.diag);
  free(diag_text);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void openai_faults(void **state) { run_faults(KS_LLM_OPENAI); }
static void anthropic_faults(void **state) { run_faults(KS_LLM_ANTHROPIC); }

/* 4 requests that each take 0.5 s on the server: 4 jobs overlap them, 2
 * jobs take two rounds. */
static double timed_sleeps(int jobs, const char *tag) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config cfg = server_config(KS_LLM_OPENAI);
  cfg.jobs = jobs;
  ks_llm_client *client = NULL;
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, NULL, &client), 0);
  ks_llm_message msgs[4][1];
  ks_llm_request reqs[4];
  for (int i = 0; i < 4; i++) {
    msgs[i][0] = (ks_llm_message){"user", ks_arena_printf(&a, "scenario=sleep id=%s%d", tag, i)};
    reqs[i] = (ks_llm_request){.messages = msgs[i], .nmessages = 1};
  }
  ks_llm_reply replies[4];
  double t0 = now_s();
  assert_int_equal(ks_llm_run(&ctx, client, reqs, 4, &a, replies), 0);
  double t = now_s() - t0;
  for (int i = 0; i < 4; i++) {
    assert_int_equal(replies[i].status, KS_LLM_OK);
    assert_true(replies[i].seconds >= 0.45);
  }
  ks_llm_client_free(client);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
  return t;
}

static void parallel_requests(void **state) {
  double four = timed_sleeps(4, "par4-");
  double two = timed_sleeps(2, "par2-");
  if (four >= 1.2 || two < 0.95)
    fail_msg("4 sleeping requests took %.2f s with 4 jobs and %.2f s with 2", four, two);
}

/* max_requests: requests past it are refused without reaching the server;
 * max_cost: known only after replies, checked before each start. */
static void budgets_refuse(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config cfg = server_config(KS_LLM_OPENAI);
  cfg.limits.max_requests = 2;
  ks_llm_totals totals;
  ks_llm_totals_init(&totals, &a);
  ks_llm_client *client = NULL;
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, &totals, &client), 0);
  ks_llm_message msgs[4][1];
  ks_llm_request reqs[4];
  for (int i = 0; i < 4; i++) {
    msgs[i][0] = (ks_llm_message){"user", ks_arena_printf(&a, "scenario=ok id=budget-%d", i)};
    reqs[i] = (ks_llm_request){.messages = msgs[i], .nmessages = 1, .account = "k"};
  }
  ks_llm_reply replies[4];
  assert_int_equal(ks_llm_run(&ctx, client, reqs, 4, &a, replies), 0);
  assert_int_equal(replies[0].status, KS_LLM_OK);
  assert_int_equal(replies[1].status, KS_LLM_OK);
  assert_int_equal(replies[2].status, KS_LLM_OVER_BUDGET);
  assert_int_equal(replies[3].status, KS_LLM_OVER_BUDGET);
  assert_non_null(strstr(replies[2].error, "not started: the budget of 2 requests is spent"));
  assert_int_equal(replies[3].attempts, 0);
  assert_int_equal(totals.run.requests, 2);
  assert_int_equal(totals.run.refused, 2);
  ks_llm_client_free(client);

  /* One reply costs (100*2 + 20*10)/1e6 USD; the budget allows one. */
  cfg.limits.max_requests = 0;
  cfg.limits.max_cost = 0.0003;
  cfg.jobs = 1;
  ks_llm_totals_init(&totals, &a);
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, &totals, &client), 0);
  for (int i = 0; i < 3; i++)
    msgs[i][0].text = ks_arena_printf(&a, "scenario=ok id=cost-%d", i);
  assert_int_equal(ks_llm_run(&ctx, client, reqs, 3, &a, replies), 0);
  assert_int_equal(replies[0].status, KS_LLM_OK);
  assert_true(fabs(replies[0].cost - 0.0004) < 1e-12);
  assert_int_equal(replies[1].status, KS_LLM_OVER_BUDGET);
  assert_non_null(strstr(replies[1].error, "USD"));
  assert_int_equal(replies[2].status, KS_LLM_OVER_BUDGET);
  cJSON *log = server_log();
  assert_int_equal(attempts_seen(log, "cost-1"), 0);
  assert_int_equal(attempts_seen(log, "budget-3"), 0);
  cJSON_Delete(log);
  ks_llm_client_free(client);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* Submit/poll: replies come back one at a time with their ids and tags;
 * a zero timeout does not block; an invalid request is a setup error. */
static void submit_and_poll(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_llm");
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config cfg = server_config(KS_LLM_ANTHROPIC);
  ks_llm_client *client = NULL;
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, NULL, &client), 0);
  ks_llm_reply r;
  assert_int_equal(ks_llm_poll(&ctx, client, 0, &a, &r), 0); /* nothing pending */
  int tags[3];
  unsigned long long ids[3];
  for (int i = 0; i < 3; i++) {
    ks_llm_message m = {"user", ks_arena_printf(&a, "scenario=%s id=poll-%d",
                                                i == 0 ? "sleep" : "ok", i)};
    ks_llm_request req = {.messages = &m, .nmessages = 1, .user = &tags[i]};
    assert_int_equal(ks_llm_submit(&ctx, client, &req, &ids[i]), 0);
  }
  assert_int_equal(ks_llm_pending(client), 3);
  double t0 = now_s();
  assert_int_equal(ks_llm_poll(&ctx, client, 0, &a, &r), 0);
  assert_true(now_s() - t0 < 0.2);
  int got = 0, order[3];
  while (got < 3) {
    int rc = ks_llm_poll(&ctx, client, 5000, &a, &r);
    assert_int_equal(rc, 1);
    assert_int_equal(r.status, KS_LLM_OK);
    int i = (int)(r.id - ids[0]);
    assert_ptr_equal(r.user, &tags[i]);
    order[got++] = i;
  }
  assert_int_equal(order[2], 0); /* the sleeping one finished last */
  assert_int_equal(ks_llm_pending(client), 0);
  ks_llm_message bad = {"tool", "x"};
  ks_llm_request breq = {.messages = &bad, .nmessages = 1};
  assert_int_equal(ks_llm_submit(&ctx, client, &breq, NULL), -1);
  assert_int_equal(ks_llm_pending(client), 0);
  ks_llm_client_free(client);

  /* A server that is not there: a retried transport error. */
  cfg.url = "http://127.0.0.1:1";
  cfg.max_attempts = 2;
  assert_int_equal(ks_llm_client_new(&ctx, &cfg, NULL, &client), 0);
  ks_llm_message m = {"user", "x"};
  ks_llm_request req = {.messages = &m, .nmessages = 1};
  assert_int_equal(ks_llm_run(&ctx, client, &req, 1, &a, &r), 0);
  assert_int_equal(r.status, KS_LLM_TRANSPORT);
  assert_int_equal(r.attempts, 2);
  assert_non_null(strstr(r.error, "connect"));
  ks_llm_client_free(client);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* Redaction of stored text: every occurrence, only keys long enough to be
 * secrets (a local server's "EMPTY" or "x" would rewrite the code). */
static void redaction(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_llm_config c = {.key = CANARY};
  const char *t = "a " CANARY " b " CANARY;
  assert_string_equal(ks_llm_redact(&c, t, &a), "a [key] b [key]");
  const char *clean = "nothing to hide";
  assert_ptr_equal(ks_llm_redact(&c, clean, &a), clean);
  assert_null(ks_llm_redact(&c, NULL, &a));
  ks_llm_config shortkey = {.key = "x"};
  const char *code = "float x = y[x];";
  assert_ptr_equal(ks_llm_redact(&shortkey, code, &a), code);
  ks_llm_config nokey = {0};
  assert_ptr_equal(ks_llm_redact(&nokey, t, &a), t);
  ks_arena_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(config_precedence),
      cmocka_unit_test(config_vendor_keys),
      cmocka_unit_test(config_key_files),
      cmocka_unit_test(project_config_restrictions),
      cmocka_unit_test(request_bodies),
      cmocka_unit_test(cache_keys),
      cmocka_unit_test(reply_parsing),
      cmocka_unit_test(redaction),
      cmocka_unit_test(cost_and_budgets),
      cmocka_unit_test(openai_faults),
      cmocka_unit_test(anthropic_faults),
      cmocka_unit_test(parallel_requests),
      cmocka_unit_test(budgets_refuse),
      cmocka_unit_test(submit_and_poll),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
