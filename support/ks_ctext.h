/* ks_ctext: small lexical helpers over C/C++/CUDA source text: skipping
 * comments and literals, finding brackets and top-level commas, splitting
 * argument lists, substituting identifiers. They read text as written, so
 * the tool can quote and later rewrite a user's code without re-printing it.
 * Results that are strings go into the caller's arena. */
#ifndef KS_CTEXT_H
#define KS_CTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"

/* If `p` starts a comment or a string/char literal, the first byte after it;
 * otherwise `p`. Never reads past the terminating NUL. */
const char *ks_ctext_skip_lexical(const char *p);
/* First occurrence of `what` in [p, end) outside comments and literals. */
const char *ks_ctext_find(const char *p, const char *end, const char *what);
/* The bracket closing the one at `open` ('(', '[', '{' or '<'), or NULL. */
const char *ks_ctext_matching(const char *open, const char *end);
/* Splits [p, end) at commas outside brackets, comments and literals; each
 * piece trimmed. An empty range gives no pieces. */
void ks_ctext_split(ks_arena *arena, const char *p, const char *end, ks_strings *out);
/* [begin, end) without surrounding whitespace, copied into the arena. */
const char *ks_ctext_trim(ks_arena *arena, const char *begin, const char *end);
/* `text` with every identifier equal to names[i] replaced by values[i]
 * (comments and literals left alone), as the preprocessor substitutes
 * macro parameters. */
const char *ks_ctext_substitute(ks_arena *arena, const char *text, const char *const *names,
                                const char *const *values, size_t n);
bool ks_ctext_is_ident_char(char c);

#endif
