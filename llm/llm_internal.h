/* llm_internal.h: what the llm_*.c files share and callers do not need:
 * endpoints, the effective parameters of a request, and the text hygiene of
 * error sentences (one line, bounded, the key scrubbed). */
#ifndef KS_LLM_INTERNAL_H
#define KS_LLM_INTERNAL_H

#include "ks_llm.h"

/* The path appended to the base URL: "/chat/completions" or "/v1/messages". */
const char *llm_endpoint_path(ks_llm_api api);
/* base URL + path. */
void llm_endpoint_url(const ks_llm_config *cfg, ks_buf *out);

/* A request's parameters after the config's defaults. */
typedef struct llm_params {
  const char *model;
  int max_tokens;
  bool temperature_set;
  double temperature;
  bool seed_set; /* OpenAI only: false for Anthropic */
  long long seed;
} llm_params;
void llm_params_of(const ks_llm_config *cfg, const ks_llm_request *req, llm_params *out);

/* Appends `n` bytes of `s` as one line: control characters and newlines
 * become spaces, runs of spaces collapse, and at most `max` bytes are kept
 * (cut at a UTF-8 boundary, "..." added). */
void llm_one_line(ks_buf *out, const char *s, size_t n, size_t max);
/* Replaces every occurrence of `key` in `text` with "[key]". */
void llm_scrub(ks_buf *text, const char *key);

/* true when the URL's scheme and host are `origin` ("https://api.openai.com"),
 * with nothing but a path (or nothing) after it. */
bool llm_url_has_origin(const char *url, const char *origin);

#endif
