/* llm_text_int.h: what llm_prompt.c, llm_reply.c and llm_reply_check.c
 * share (llm_text_util.c, llm_regex.c): lexical reading of kernel
 * declarations, bounded quoting, and a PCRE2 wrapper with limits. Tests
 * include it to reach the regex wrapper. */
#ifndef LLM_TEXT_INT_H
#define LLM_TEXT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_llm_text.h"

/* ---- llm_text_util.c ---- */

/* `src` with comments and string/char literals turned into spaces (newlines
 * kept, so offsets and lines still hold). With `directives`, preprocessor
 * lines (with their continuations) are blanked too. */
char *lt_blank(ks_arena *arena, const char *src, bool directives);

/* A __global__ function definition or declaration found in blanked code;
 * offsets into that code (and into the source it was made from). */
typedef struct lt_kernel {
  size_t global_at;                    /* the __global__ token */
  size_t decl_begin;                   /* start of the declaration */
  size_t name_begin, name_end;
  size_t params_open, params_close;    /* '(' and ')' */
  size_t tparams_open, tparams_close;  /* template '<' '>'; both 0: none */
} lt_kernel;

/* Every __global__ in `code` (blanked with directives); returns how many
 * there are, filling at most `max`. */
size_t lt_find_kernels(const char *code, lt_kernel *out, size_t max);

/* The kernel named `name` in `src` (whose blanked copy is `code`), or
 * false. */
bool lt_find_kernel(const char *code, const char *name, lt_kernel *out);

/* Whether [a, a_end) and [b, b_end) are the same token sequence
 * (whitespace-insensitive); `ignore_restrict` skips __restrict__ and
 * __restrict. */
bool lt_same_tokens(const char *a, const char *a_end, const char *b, const char *b_end,
                    bool ignore_restrict);

/* [begin, end) with whitespace runs collapsed to one space, trimmed. */
const char *lt_squeeze(ks_arena *arena, const char *begin, const char *end);

/* A kernel's parameters, read from its parameter list text. */
typedef struct lt_param {
  const char *name;    /* the last identifier; "" when unnamed */
  const char *type;    /* the rest, squeezed, __restrict__ dropped:
                          "const float *" */
  bool pointer;        /* a '*' or '[' in it */
  bool restricted;     /* __restrict__ / __restrict written */
} lt_param;
typedef KS_ARRAY(lt_param) lt_params;
void lt_read_params(ks_arena *arena, const char *open, const char *close, lt_params *out);

/* At most `max` bytes of [text, text + len) as one printable line in single
 * quotes, "..." marking a cut, key-like runs ("sk-" and 8 or more key
 * characters) redacted. */
const char *lt_quote(ks_arena *arena, const char *text, size_t len, size_t max);

/* Whether [text, text + len) holds a key-like run ("sk-" and 8 or more
 * key characters). */
bool lt_has_key(const char *text, size_t len);

/* Whether the word at [p, p + n) in `text` stands alone (not part of a
 * longer identifier). */
bool lt_is_word_at(const char *text, const char *p, size_t n);

/* ---- llm_reply_check.c ---- */

/* The rules a child's source must pass (docs/llm-prompts.md): directives,
 * host code, reaches outside the kernel, then the signature against the
 * parent's. KS_REPLY_OK, or the reason with *message (bounded quotes).
 * On OK, *source may be replaced (a kernel written under the original's
 * name is renamed to the parent's) and guards the child needs for new
 * __restrict__ parameters are appended to *guards. */
ks_reply_reason lt_check_child(ks_arena *arena, const char **source, const ks_variant *parent,
                               ks_strings *guards, const char **message);

/* ---- llm_reply.c, llm_reply_json.c ---- */

/* Records a rejection in `out`: one printable line of at most 240 bytes;
 * reply text belongs in the arguments only through lt_quote. */
void lt_reject(ks_arena *arena, ks_reply_result *out, ks_reply_reason r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A launch policy being built: the parent's, overridden by the reply. */
typedef struct lt_policy {
  const char *grid, *block, *smem;
  ks_strings requires;
} lt_policy;

/* Reads the ```json block [text, text + len) into `pol`; false with a
 * bad_json rejection in `out`. The caller's ctx->error is left as it was. */
bool lt_parse_policy(ks_ctx *ctx, ks_arena *arena, const char *text, size_t len, lt_policy *pol,
                     ks_reply_result *out);

/* ---- llm_regex.c ---- */

enum { LT_RE_LIMIT = -2 };

typedef struct lt_re {
  void *code, *match, *mctx; /* pcre2_code_8 *, pcre2_match_data_8 *,
                                pcre2_match_context_8 * */
} lt_re;

/* Compiles `pattern` (UTF-8 off, PCRE2_MULTILINE when `multiline`) with
 * the match, depth and heap limits every reply parse uses. -1 when the
 * pattern does not compile (a bug). lt_re_close releases it. */
int lt_re_open(lt_re *re, const char *pattern, bool multiline);
void lt_re_close(lt_re *re);
/* The first match in subject[start, len): 1 with ov[0..2*ngroups) filled
 * (begin, end pairs; an unset group gives (size_t)-1 twice), 0 for none,
 * LT_RE_LIMIT when a limit stopped the match. */
int lt_re_find(lt_re *re, const char *subject, size_t len, size_t start, size_t *ov,
               size_t ngroups);

#endif
