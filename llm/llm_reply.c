/* Reply parsing: a 2xx body into text, finish reason, model and usage; an
 * error body into one sentence. Servers differ in how they say what went
 * wrong (OpenAI and Anthropic nest {"error": {"message"}}, Ollama sends
 * {"error": "..."}, FastAPI-based servers {"detail": ...}); whatever the body,
 * HTML included, the result is one bounded line. */
#include <cjson/cJSON.h>
#include <string.h>

#include "llm_internal.h"

enum { SERVER_MESSAGE_MAX = 300 };

const char *ks_llm_status_name(ks_llm_status s) {
  switch (s) {
  case KS_LLM_OK: return "ok";
  case KS_LLM_HTTP_ERROR: return "http error";
  case KS_LLM_TRANSPORT: return "transport error";
  case KS_LLM_BAD_REPLY: return "bad reply";
  case KS_LLM_TOO_LARGE: return "reply too large";
  case KS_LLM_REDIRECT: return "redirect";
  case KS_LLM_OVER_BUDGET: return "over budget";
  }
  return "?";
}

void llm_one_line(ks_buf *out, const char *s, size_t n, size_t max) {
  size_t start = out->len;
  bool space = true; /* drops leading spaces too */
  for (size_t i = 0; i < n && s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f || c == ' ') {
      if (!space)
        ks_buf_addc(out, ' ');
      space = true;
      continue;
    }
    space = false;
    ks_buf_addc(out, (char)c);
  }
  while (out->len > start && out->data[out->len - 1] == ' ')
    out->data[--out->len] = '\0';
  if (out->len - start > max) {
    size_t cut = start + max;
    while (cut > start && ((unsigned char)out->data[cut] & 0xc0) == 0x80)
      cut--;
    out->len = cut;
    out->data[cut] = '\0';
    ks_buf_adds(out, "...");
  }
}

void llm_scrub(ks_buf *text, const char *key) {
  if (!key || !*key || !strstr(text->data, key))
    return;
  size_t klen = strlen(key);
  ks_buf clean = KS_BUF_INIT;
  const char *p = text->data, *hit;
  while ((hit = strstr(p, key))) {
    ks_buf_add(&clean, p, (size_t)(hit - p));
    ks_buf_adds(&clean, "[key]");
    p = hit + klen;
  }
  ks_buf_adds(&clean, p);
  ks_buf_reset(text);
  ks_buf_add(text, clean.data, clean.len);
  ks_buf_release(&clean);
}

const char *ks_llm_redact(const ks_llm_config *cfg, const char *text, ks_arena *arena) {
  const char *key = cfg ? cfg->key : NULL;
  if (!text || !key || strlen(key) < KS_LLM_REDACT_MIN || !strstr(text, key))
    return text;
  ks_buf clean = KS_BUF_INIT;
  ks_buf_adds(&clean, text);
  llm_scrub(&clean, key);
  const char *out = ks_arena_strndup(arena, clean.data, clean.len);
  ks_buf_release(&clean);
  return out;
}

static long long token_count(const cJSON *usage, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, name);
  return cJSON_IsNumber(v) && v->valuedouble > 0 ? (long long)v->valuedouble : 0;
}

static const char *string_or(const cJSON *o, const char *name, ks_arena *a, const char *dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? ks_arena_strdup(a, v->valuestring) : dflt;
}

/* The message of an API error object, "" when there is none. */
static void error_message(const cJSON *root, ks_buf *out) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
  const cJSON *msg = NULL, *type = NULL;
  if (cJSON_IsString(e)) {
    msg = e;
  } else if (cJSON_IsObject(e)) {
    msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    type = cJSON_GetObjectItemCaseSensitive(e, "type");
    if (!cJSON_IsString(type))
      type = cJSON_GetObjectItemCaseSensitive(e, "code");
  } else {
    msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    if (!cJSON_IsString(msg))
      msg = cJSON_GetObjectItemCaseSensitive(root, "detail");
  }
  if (cJSON_IsString(type) && *type->valuestring) {
    llm_one_line(out, type->valuestring, strlen(type->valuestring), 60);
    ks_buf_adds(out, ": ");
  }
  if (cJSON_IsString(msg))
    llm_one_line(out, msg->valuestring, strlen(msg->valuestring), SERVER_MESSAGE_MAX);
  else if (cJSON_IsArray(msg) || cJSON_IsObject(msg)) {
    /* FastAPI's validation errors: a list of objects; show it compactly. */
    char *text = cJSON_PrintUnformatted(msg);
    if (text)
      llm_one_line(out, text, strlen(text), SERVER_MESSAGE_MAX);
    cJSON_free(text);
  }
}

void ks_llm_error_sentence(long status, const char *content_type, const char *body, size_t len,
                           ks_buf *out) {
  ks_buf_addf(out, "HTTP %ld", status);
  cJSON *root = len ? cJSON_ParseWithLength(body, len) : NULL;
  if (cJSON_IsObject(root)) {
    ks_buf msg = KS_BUF_INIT;
    error_message(root, &msg);
    if (msg.len)
      ks_buf_addf(out, ": %s", msg.data);
    else
      ks_buf_adds(out, " with a JSON body that holds no error message");
    ks_buf_release(&msg);
  } else if (!len) {
    ks_buf_adds(out, " with an empty body");
  } else {
    ks_buf_adds(out, " with a non-JSON body (");
    if (content_type && *content_type)
      llm_one_line(out, content_type, strlen(content_type), 60);
    else
      ks_buf_adds(out, "no content type");
    ks_buf_addf(out, ", %zu bytes)", len);
  }
  cJSON_Delete(root);
}

static int parse_openai(const cJSON *root, ks_arena *a, ks_llm_reply *out, ks_buf *why) {
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
  const cJSON *first = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive(first, "message");
  if (!cJSON_IsObject(msg)) {
    ks_buf_adds(why, "the reply has no choices[0].message");
    return -1;
  }
  const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
  if (!cJSON_IsString(content) && !cJSON_IsNull(content)) {
    ks_buf_adds(why, "choices[0].message.content is not a string");
    return -1;
  }
  /* null content: a refusal or tool call, which we never ask for; the
   * finish reason tells the caller why the text is empty. */
  out->text = cJSON_IsString(content) ? ks_arena_strdup(a, content->valuestring) : "";
  out->finish_reason = string_or(first, "finish_reason", a, "");
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
  out->input_tokens = token_count(usage, "prompt_tokens");
  out->output_tokens = token_count(usage, "completion_tokens");
  return 0;
}

static int parse_anthropic(const cJSON *root, ks_arena *a, ks_llm_reply *out, ks_buf *why) {
  const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
  if (!cJSON_IsArray(content)) {
    ks_buf_adds(why, "the reply has no content array");
    return -1;
  }
  /* Text blocks joined; thinking and other blocks are not the answer. */
  ks_buf text = KS_BUF_INIT;
  const cJSON *block;
  cJSON_ArrayForEach(block, content) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(block, "text");
    if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") && cJSON_IsString(t))
      ks_buf_adds(&text, t->valuestring);
  }
  out->text = ks_arena_strndup(a, text.data, text.len);
  ks_buf_release(&text);
  out->finish_reason = string_or(root, "stop_reason", a, "");
  /* Cached prompt tokens are still prompt tokens; prices do not tell the
   * cache's discount apart, so the cost is an upper bound with caching. */
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
  out->input_tokens = token_count(usage, "input_tokens") +
                      token_count(usage, "cache_creation_input_tokens") +
                      token_count(usage, "cache_read_input_tokens");
  out->output_tokens = token_count(usage, "output_tokens");
  return 0;
}

int ks_llm_reply_parse(ks_llm_api api, const char *body, size_t len, ks_arena *a,
                       ks_llm_reply *out, ks_buf *why) {
  out->text = out->finish_reason = out->model = "";
  cJSON *root = cJSON_ParseWithLength(body, len);
  int rc = -1;
  if (!cJSON_IsObject(root)) {
    ks_buf_addf(why, "the reply is not a JSON object (%zu bytes)", len);
    goto out;
  }
  if (cJSON_GetObjectItemCaseSensitive(root, "error")) {
    ks_buf_adds(why, "the reply is an error: ");
    error_message(root, why);
    goto out;
  }
  rc = api == KS_LLM_ANTHROPIC ? parse_anthropic(root, a, out, why)
                               : parse_openai(root, a, out, why);
  if (!rc)
    out->model = string_or(root, "model", a, "");
out:
  cJSON_Delete(root);
  return rc;
}
