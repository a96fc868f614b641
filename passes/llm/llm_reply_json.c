/* The executor's launch policy: the reply's one ```json block, read with
 * cJSON (which lives in this file only, on the parser's side), its fields
 * checked for type and size, its expressions for syntax with ks_expr
 * (names are the judge's to check, per size set). Guards may use
 * aligned(p, N) and disjoint(p, q), which ks_expr does not know: their
 * shape is checked here and they stand for a constant in the check. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_expr.h"
#include "llm_text_int.h"

/* ks_expr_check's verdict without disturbing the caller's last error. */
static bool expr_ok(ks_ctx *ctx, const char *text, char *why, size_t n) {
  /* The evaluator's messages quote the token at fault: a key in the text
   * must not reach one. */
  if (lt_has_key(text, strlen(text))) {
    snprintf(why, n, "holds a key-like string");
    return false;
  }
  char saved[sizeof ctx->error];
  memcpy(saved, ctx->error, sizeof saved);
  int rc = ks_expr_check(ctx, text);
  if (rc)
    snprintf(why, n, "%.100s", ctx->error);
  memcpy(ctx->error, saved, sizeof saved);
  return !rc;
}

/* A dimension: "dim3(x, y[, z])", "(x, y)", "{x, y}" or one expression. */
static bool dim3_ok(ks_ctx *ctx, ks_arena *arena, const char *text, char *why, size_t n) {
  const char *p = text, *end = text + strlen(text);
  while (isspace((unsigned char)*p))
    p++;
  while (end > p && isspace((unsigned char)end[-1]))
    end--;
  bool named = !strncmp(p, "dim3", 4) && !ks_ctext_is_ident_char(p[4]);
  if (named) {
    p += 4;
    while (isspace((unsigned char)*p))
      p++;
  }
  if ((*p == '(' || *p == '{') && ks_ctext_matching(p, end) == end - 1) {
    ks_strings parts = {0};
    ks_ctext_split(arena, p + 1, end - 1, &parts);
    if (parts.len > 3) {
      snprintf(why, n, "more than 3 components");
      return false;
    }
    if (named || parts.len > 1) {
      for (size_t i = 0; i < parts.len; i++)
        if (!expr_ok(ctx, parts.items[i], why, n))
          return false;
      return true;
    }
  } else if (named) {
    snprintf(why, n, "dim3 without its components");
    return false;
  }
  return expr_ok(ctx, text, why, n);
}

/* A guard: aligned(p, N) and disjoint(p, q) (or ks_ spelled) checked for
 * shape here, their names by the judge; the rest by ks_expr. */
static bool guard_ok(ks_ctx *ctx, ks_arena *arena, const char *text, char *why, size_t n) {
  ks_buf b = KS_BUF_INIT;
  const char *p = text, *end = text + strlen(text);
  bool ok = true;
  while (p < end && ok) {
    const char *q = p;
    while (q < end && !ks_ctext_is_ident_char(*q))
      q++;
    ks_buf_add(&b, p, (size_t)(q - p));
    const char *e = q;
    while (e < end && ks_ctext_is_ident_char(*e))
      e++;
    const char *w = !strncmp(q, "ks_", 3) ? q + 3 : q;
    bool aligned = (size_t)(e - w) == 7 && !strncmp(w, "aligned", 7);
    bool disjoint = (size_t)(e - w) == 8 && !strncmp(w, "disjoint", 8);
    const char *open = e;
    while (open < end && isspace((unsigned char)*open))
      open++;
    if ((aligned || disjoint) && (q == text || !ks_ctext_is_ident_char(q[-1])) && open < end &&
        *open == '(') {
      const char *close = ks_ctext_matching(open, end);
      ks_strings args = {0};
      if (close)
        ks_ctext_split(arena, open + 1, close, &args);
      bool shape = close && args.len == 2;
      for (size_t a = 0; shape && a < (aligned ? 1u : 2u); a++)
        for (const char *c = args.items[a]; *c; c++)
          shape = shape && ks_ctext_is_ident_char(*c);
      if (!shape) {
        snprintf(why, n, aligned ? "aligned() takes a pointer parameter and a byte count"
                                 : "disjoint() takes two pointer parameters");
        ok = false;
        break;
      }
      if (aligned)
        ks_buf_addf(&b, "(%s)", args.items[1]);
      else
        ks_buf_adds(&b, "1");
      p = close + 1;
      continue;
    }
    ks_buf_add(&b, q, (size_t)(e - q));
    p = e;
  }
  if (ok)
    ok = expr_ok(ctx, b.data, why, n);
  ks_buf_release(&b);
  return ok;
}

enum { MAX_EXPR = 300, MAX_GUARDS = 16 };

/* One of grid/block/smem: a string, an integer, or null (the original's). */
static bool policy_field(ks_ctx *ctx, ks_arena *arena, const cJSON *item, const char **field,
                         ks_reply_result *out) {
  const char *key = item->string;
  char why[160] = "";
  if (cJSON_IsNull(item)) {
    *field = NULL;
    return true;
  }
  const char *text = NULL;
  if (cJSON_IsString(item))
    text = item->valuestring;
  else if (cJSON_IsNumber(item) && item->valuedouble == (double)(long long)item->valuedouble)
    text = ks_arena_printf(arena, "%lld", (long long)item->valuedouble);
  if (!text) {
    lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: %s must be a string, an integer or null", key);
    return false;
  }
  if (!*text || strlen(text) > MAX_EXPR) {
    lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: %s is empty or longer than %d bytes", key,
           MAX_EXPR);
    return false;
  }
  bool ok = strcmp(key, "smem") ? dim3_ok(ctx, arena, text, why, sizeof why)
                                : expr_ok(ctx, text, why, sizeof why);
  if (!ok) {
    lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: %s %s: %s", key,
           lt_quote(arena, text, strlen(text), 40), why);
    return false;
  }
  *field = ks_arena_strdup(arena, text);
  return true;
}

bool lt_parse_policy(ks_ctx *ctx, ks_arena *arena, const char *text, size_t len, lt_policy *pol,
                         ks_reply_result *out) {
  cJSON *root = cJSON_ParseWithLength(text, len);
  bool ok = true;
  if (!root || !cJSON_IsObject(root)) {
    lt_reject(arena, out, KS_REPLY_BAD_JSON, "the ```json block is not a JSON object");
    cJSON_Delete(root);
    return false;
  }
  for (const cJSON *item = root->child; item && ok; item = item->next) {
    const char *key = item->string ? item->string : "";
    if (!strcmp(key, "grid"))
      ok = policy_field(ctx, arena, item, &pol->grid, out);
    else if (!strcmp(key, "block"))
      ok = policy_field(ctx, arena, item, &pol->block, out);
    else if (!strcmp(key, "smem"))
      ok = policy_field(ctx, arena, item, &pol->smem, out);
    else if (!strcmp(key, "requires")) {
      if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) > MAX_GUARDS) {
        lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: requires must be an array of at most %d "
               "strings", MAX_GUARDS);
        ok = false;
        break;
      }
      pol->requires = (ks_strings){0};
      for (const cJSON *g = item->child; g && ok; g = g->next) {
        char why[160] = "";
        if (!cJSON_IsString(g) || !*g->valuestring || strlen(g->valuestring) > MAX_EXPR) {
          lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: requires holds something other than a "
                 "non-empty string of at most %d bytes", MAX_EXPR);
          ok = false;
        } else if (!guard_ok(ctx, arena, g->valuestring, why, sizeof why)) {
          lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: requires %s: %s",
                 lt_quote(arena, g->valuestring, strlen(g->valuestring), 40), why);
          ok = false;
        } else {
          *ks_array_push(arena, &pol->requires) =
              lt_squeeze(arena, g->valuestring, g->valuestring + strlen(g->valuestring));
        }
      }
    } else {
      lt_reject(arena, out, KS_REPLY_BAD_JSON, "json: unknown field %s (grid, block, smem, requires)",
             lt_quote(arena, key, strlen(key), 40));
      ok = false;
    }
  }
  cJSON_Delete(root);
  return ok;
}
