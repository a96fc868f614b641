/* rules_meaning: a kernel as the compiler reads it, for rules that would
 * otherwise match its spelling (rules_meaning.c).
 *
 * Three views, each answering NULL/false with a one-line reason when the
 * code is not what the view can vouch for:
 *   - a `for` loop's canonical form: induction variable (declared in the
 *     init, or declared outside and assigned there: `int j; for (j = 0;
 *     ...)`), start, exclusive end (`<`, `<=` as end + 1, `!=` with step 1,
 *     either operand order), step (`++j`, `j++`, `j += c`, `j = j + c`);
 *   - an integer expression's value as guard-language text (docs/spec.md)
 *     over the kernel's unmodified scalar parameters: macros (also nested),
 *     const/constexpr and never-assigned locals, enumerators, namespace
 *     constants, literals and arithmetic are folded. The folding is the
 *     footprint analysis's (footprint_eval.c, footprint_const.c), so the
 *     rules and the footprints agree on what a name means;
 *   - a local alias looked through: a DECL_REF to a never-assigned local
 *     (`int row = blockIdx.y * blockDim.y + threadIdx.y;`, `const float
 *     *arow = a + i * N;`) gives its initializer.
 *
 * A ks_meaning belongs to one parsed kernel; strings live in the arena it
 * was opened with. Internal to passes/. */
#ifndef KS_RULES_MEANING_H
#define KS_RULES_MEANING_H

#include <stdbool.h>

#include "ks_kast.h"

typedef struct ks_meaning ks_meaning;

/* Opens the views of `k` (the tree must outlive it); never fails. */
ks_meaning *ks_meaning_open(ks_ctx *ctx, const ks_kast *k, ks_arena *arena);
/* Releases what the views hold outside the arena; NULL is fine. */
void ks_meaning_close(ks_meaning *m);

typedef struct ks_loop_view {
  const ks_anode *loop;      /* the FOR */
  const ks_anode *var;       /* the induction variable's VAR */
  bool declared_outside;     /* `int j; for (j = 0; ...)` */
  const ks_anode *start;     /* the start expression */
  const ks_anode *cond;      /* the condition (through parentheses) */
  const ks_anode *bound;     /* the bound's operand as written */
  const char *cmp;           /* "<", "<=" or "!=", var on the left */
  long long end_add;         /* exclusive end = bound + end_add (1 for <=) */
  const ks_anode *step_expr; /* the step's operand; NULL for ++ */
  long long step;            /* the step when constant (1 for ++), else 0 */
  bool modified_in_body;     /* the body assigns the variable */
  bool used_after;           /* declared outside and read after the loop
                                before it is assigned again */
  const char *why;           /* NULL, or why the loop is not canonical
                                (then only `loop` is set) */
} ks_loop_view;

/* The canonical view of FOR `loop` (an upward, counted loop). Returns
 * !out->why. */
bool ks_meaning_loop(ks_meaning *m, const ks_anode *loop, ks_loop_view *out);
/* The loop's exclusive end folded to guard text (NULL with *why). */
const char *ks_meaning_loop_end(ks_meaning *m, const ks_loop_view *v, const char **why);

/* The value of integer expression `e` as guard-language text over scalar
 * parameters and constants ("4096", "n + 1", "2 * n"), or NULL with *why
 * (why may be NULL). */
const char *ks_meaning_value(ks_meaning *m, const ks_anode *e, const char **why);
/* The value of `e` when it is one constant. */
bool ks_meaning_int(ks_meaning *m, const ks_anode *e, long long *out);

/* `e` through parentheses, implicit conversions and never-assigned local
 * aliases: the initializer a DECL_REF stands for, repeatedly (`e` itself
 * when it is no such reference). */
const ks_anode *ks_meaning_through_alias(ks_meaning *m, const ks_anode *e);

#endif
