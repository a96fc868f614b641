/* rewrite --check-compile: the variants `rewrite --each-rule` wrote,
 * compiled with NVRTC for sm_90 as the judge compiles them (the kernel's
 * slice, the variant, the kernel's own code-generation options), without
 * a GPU. Kept apart from cmd_rewrite.c so that the rewrite command's own
 * logic and this check change independently. */
#ifndef KS_REWRITE_COMPILE_H
#define KS_REWRITE_COMPILE_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_target.h"

/* For every rule whose DIR/KERNEL.RULE.cu.txt holds a variant (not the
 * line saying why the rule does not apply), and for the kernel as it is
 * (RULE "original"), writes DIR/KERNEL.RULE.compile.txt: one line,
 * "ok", "failed: <first error line>" or "refused: <candidate rule>".
 * Returns -1 only when the tool cannot go on (NVRTC missing, a file that
 * cannot be written). */
int ks_rewrite_check_compile(ks_ctx *ctx, const ks_target *t, bool is_template, const char *kernel,
                             const char *dir, ks_arena *arena);

#endif
