/* Request bodies for the two APIs, and the cache key of a request.
 *
 * OpenAI-compatible servers (vLLM, llama.cpp, Ollama) all read max_tokens;
 * OpenAI's own API refuses it for its reasoning models and wants
 * max_completion_tokens, which all its models accept, so the field is
 * chosen by host. Anthropic has no seed; it is left out there (and out of
 * the cache key, since it changes nothing). */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "llm_internal.h"

const char *llm_endpoint_path(ks_llm_api api) {
  return api == KS_LLM_ANTHROPIC ? "/v1/messages" : "/chat/completions";
}

void llm_endpoint_url(const ks_llm_config *cfg, ks_buf *out) {
  ks_buf_addf(out, "%s%s", cfg->url, llm_endpoint_path(cfg->api));
}

void llm_params_of(const ks_llm_config *cfg, const ks_llm_request *req, llm_params *out) {
  out->model = req->model && *req->model ? req->model : cfg->model;
  out->max_tokens = req->max_tokens > 0 ? req->max_tokens : cfg->max_tokens;
  if (req->temperature_set) {
    out->temperature_set = true;
    out->temperature = req->temperature;
  } else {
    out->temperature_set = cfg->temperature_set;
    out->temperature = cfg->temperature;
  }
  out->seed_set = req->seed_set && cfg->api != KS_LLM_ANTHROPIC;
  out->seed = req->seed;
}

static int check_request(ks_ctx *ctx, const ks_llm_request *req, const llm_params *p) {
  if (!req->nmessages || !req->messages)
    return ks_fail(ctx, "an LLM request needs at least one message");
  if (!p->model || !*p->model)
    return ks_fail(ctx, "an LLM request needs a model");
  for (size_t i = 0; i < req->nmessages; i++) {
    const ks_llm_message *m = &req->messages[i];
    if (!m->role || (strcmp(m->role, "user") && strcmp(m->role, "assistant")))
      return ks_fail(ctx, "LLM message %zu: role '%s' is neither user nor assistant", i + 1,
                     m->role ? m->role : "(none)");
    if (!m->text)
      return ks_fail(ctx, "LLM message %zu has no text", i + 1);
  }
  return 0;
}

int ks_llm_request_body(ks_ctx *ctx, const ks_llm_config *cfg, const ks_llm_request *req,
                        ks_buf *out) {
  llm_params p;
  llm_params_of(cfg, req, &p);
  if (check_request(ctx, req, &p))
    return -1;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "model", p.model);
  cJSON *msgs = cJSON_CreateArray();
  if (cfg->api == KS_LLM_ANTHROPIC) {
    cJSON_AddNumberToObject(root, "max_tokens", p.max_tokens);
    if (req->system && *req->system)
      cJSON_AddStringToObject(root, "system", req->system);
  } else {
    bool openai_host = llm_url_has_origin(cfg->url, "https://api.openai.com");
    cJSON_AddNumberToObject(root, openai_host ? "max_completion_tokens" : "max_tokens",
                            p.max_tokens);
    if (req->system && *req->system) {
      cJSON *m = cJSON_CreateObject();
      cJSON_AddStringToObject(m, "role", "system");
      cJSON_AddStringToObject(m, "content", req->system);
      cJSON_AddItemToArray(msgs, m);
    }
    if (p.seed_set)
      cJSON_AddNumberToObject(root, "seed", (double)p.seed);
  }
  if (p.temperature_set)
    cJSON_AddNumberToObject(root, "temperature", p.temperature);
  for (size_t i = 0; i < req->nmessages; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", req->messages[i].role);
    cJSON_AddStringToObject(m, "content", req->messages[i].text);
    cJSON_AddItemToArray(msgs, m);
  }
  cJSON_AddItemToObject(root, "messages", msgs);
  cJSON_AddBoolToObject(root, "stream", false);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text)
    return ks_fail(ctx, "could not encode an LLM request as JSON");
  ks_buf_reset(out);
  ks_buf_adds(out, text);
  cJSON_free(text);
  return 0;
}

/* Every string is written as "<length>:<bytes>" so that no choice of texts
 * can make two different requests serialize alike. */
static void add_field(ks_buf *out, const char *name, const char *s) {
  if (!s) {
    ks_buf_addf(out, "%s -\n", name);
    return;
  }
  ks_buf_addf(out, "%s %zu:", name, strlen(s));
  ks_buf_adds(out, s);
  ks_buf_addc(out, '\n');
}

void ks_llm_cache_material(const ks_llm_config *cfg, const ks_llm_request *req, ks_buf *out) {
  llm_params p;
  llm_params_of(cfg, req, &p);
  ks_buf_adds(out, "kernelsmith-llm-cache 1\n");
  ks_buf_addf(out, "api %s\n", ks_llm_api_name(cfg->api));
  add_field(out, "path", llm_endpoint_path(cfg->api));
  add_field(out, "model", p.model);
  add_field(out, "system", req->system && *req->system ? req->system : NULL);
  for (size_t i = 0; i < req->nmessages; i++) {
    add_field(out, "role", req->messages[i].role);
    add_field(out, "text", req->messages[i].text);
  }
  ks_buf_addf(out, "max_tokens %d\n", p.max_tokens);
  if (p.temperature_set)
    ks_buf_addf(out, "temperature %.17g\n", p.temperature);
  else
    ks_buf_adds(out, "temperature -\n");
  if (p.seed_set)
    ks_buf_addf(out, "seed %lld\n", p.seed);
  else
    ks_buf_adds(out, "seed -\n");
}

void ks_llm_cache_key(const ks_llm_config *cfg, const ks_llm_request *req,
                      char out[KS_HASH_HEX]) {
  ks_buf material = KS_BUF_INIT;
  ks_llm_cache_material(cfg, req, &material);
  ks_sha256_hex(material.data, material.len, out);
  ks_buf_release(&material);
}
