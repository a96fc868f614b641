/* spec_int: what the spec files of the frontend share (spec_parse.c,
 * spec_find.c, spec_resolve.c, spec_site.c); internal to the frontend.
 *
 * The environment an expression of a spec is evaluated in is a list of
 * bindings that grows as a size set is resolved (size variables, then
 * scalars, then buffer lengths), so every expression sees what was bound
 * before it. Its strings live in the caller's arena. */
#ifndef KS_SPEC_INT_H
#define KS_SPEC_INT_H

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_expr.h"
#include "ks_model.h"
#include "ks_spec.h"

typedef struct ks_spec_env {
  ks_arena *arena;
  ks_strings names;
  KS_ARRAY(ks_value) values;
  ks_expr_env expr; /* lookup = these bindings, latest first */
} ks_spec_env;

void ks_spec_env_init(ks_spec_env *env, ks_arena *arena);
void ks_spec_env_bind(ks_spec_env *env, const char *name, ks_value value);
bool ks_spec_env_get(const ks_spec_env *env, const char *name, ks_value *out);

/* "file:line: " + message, as every spec error starts. A long path is
 * shown by its last part ("...dir/t.cu"). */
int ks_spec_fail(ks_ctx *ctx, const char *file, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* User text (an expression, a field, a name) as a message quotes it: whole
 * when short, else its first KS_SPEC_QUOTE_MAX bytes (cut at a character
 * boundary) and "...", so that a 10 KB expression leaves the message room
 * for its reason (ks_ctx.error holds 2 KB). In `arena`. */
enum { KS_SPEC_QUOTE_MAX = 200 };
const char *ks_spec_quote(ks_arena *arena, const char *text);

/* A source or sidecar as the compiler reads it: a UTF-8 byte-order mark at
 * its start becomes blanks and a lone CR ends a line (CR LF stays), both in
 * place, so offsets and line numbers stay the compiler's. */
void ks_spec_text_as_compiled(char *text, size_t len);

/* The launch site's configuration for kernel `k`, evaluated: identifiers
 * that are arguments of the launch stand for the kernel parameters they are
 * passed as (values in `params`, bound by parameter name), template
 * arguments likewise (bound by template parameter name), and object-like
 * macros of the site's and the kernel's file are expanded. Fails with the
 * reason a spec must give a `launch` line instead. */
int ks_spec_site_launch(ks_ctx *ctx, const ks_kernel *k, const ks_launch *site,
                        const ks_spec_env *params, ks_arena *arena, ks_launch_cfg *out);

#endif
