/* rules_invariant: what scalar_replace and hoist_invariant read of a loop:
 * the statement that holds it (with its #pragma wrapper), whether an
 * expression's names keep their values across it, whether its body does
 * something that forbids moving memory accesses or work out of it, and the
 * edits that put code right before and right after it.
 *
 * A minimal loop reading of its own: the canonical loop view the rules
 * that match on meaning will share (rules_meaning.h) was not there when
 * these two rules were written; the two can move onto it later.
 *
 * Implemented in rules_invariant.c. Internal to passes/. */
#ifndef KS_RULES_INVARIANT_H
#define KS_RULES_INVARIANT_H

#include <stdbool.h>

#include "rules_tree.h"

/* A FOR or WHILE loop (DO loops are left alone). */
bool ks_inv_is_loop(const ks_anode *n);
/* The statement the loop is: the loop, or the node that wraps it for a
 * `#pragma unroll` above it. */
const ks_anode *ks_inv_loop_stmt(const ks_anode *loop);
/* The parts of the loop evaluated on every iteration: the condition, the
 * increment and the body (not the init), as a list. */
ks_rt_nodes ks_inv_loop_parts(ks_arena *arena, const ks_anode *loop);
/* Does the value of the name `ref` (a DECL_REF) stay the same across the
 * loop: a parameter or a local declared outside it, not assigned,
 * incremented or address-taken in it. Builtins (threadIdx.x...) do. */
bool ks_inv_ref_invariant(const ks_anode *loop, const ks_anode *ref);
/* Why nothing may be moved across the loop (NULL: it may): a barrier, a
 * fence, an atomic, a warp collective, inline asm, a return or goto inside
 * it, or a call of a function of the user's (which may reach any memory). */
const char *ks_inv_body_problem(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop);

/* A function of CUDA's math API without side effects or memory reads
 * (single and double precision, and the intrinsics): hoist_invariant may
 * move its calls, lookup_table may tabulate them. */
bool ks_inv_pure_math(const char *name);

/* Code placed around a loop statement: `before` (its own lines, each
 * ending with a newline, at the loop's indentation) goes above the loop
 * and its pragmas, `after` (lines starting with a newline) after its end.
 * A loop that is not a statement of a { } block (the body of an if or
 * another loop without braces) is wrapped in braces. */
void ks_inv_around(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop,
                   const char *before, const char *after, ks_edits *edits);
/* The indentation of the loop's line. */
const char *ks_inv_indent(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop);
/* A node's text with the whitespace removed (to compare two index
 * expressions as written). */
const char *ks_inv_squeezed(ks_arena *arena, const ks_rule_input *in, const ks_anode *n);

#endif
