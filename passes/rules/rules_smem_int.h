/* rules_smem_int: what the two rules that stage data in shared memory
 * share. smem_histogram (rules_smem_hist.c) and smem_transpose
 * (rules_smem_transpose.c) are listed in rules_int.h; what they share is
 * implemented in rules_smem_common.c.
 *
 * Both read the tree structurally (casts, parentheses, operand order, __ldg
 * and __restrict__ from other rules do not matter) and refuse, with the
 * reason, whatever they cannot prove they keep: other writes, barriers,
 * shared memory already there, warp collectives, uses of blockIdx or
 * gridDim beyond the index computation, returns they cannot turn into
 * `continue`. The rewrites keep the user's statements as written.
 *
 * Internal to passes/. Strings and node lists live in the arena given. */
#ifndef KS_RULES_SMEM_INT_H
#define KS_RULES_SMEM_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "rules_int.h"
#include "rules_tree.h"

/* A comparison of `var` with a bound. `in_range`: the condition holds
 * while var is below the bound (var < B, var <= B, B > var, B >= var);
 * otherwise it holds once var has passed it (var >= B, ...). `inclusive`:
 * the bound itself is in range. */
typedef struct ks_smem_bound {
  const ks_anode *bound;
  bool in_range;
  bool inclusive;
} ks_smem_bound;

/* What a kernel does: one walk (ks_smem_refusal) collects the facts both
 * rules need. */
typedef struct ks_smem_facts {
  ks_arena *arena;
  const char *refuse;         /* the first construct neither rule rewrites */
  const ks_anode *shared;     /* a __shared__ variable */
  const ks_anode *sync;       /* a barrier */
  const ks_anode *bounds_attr;/* __launch_bounds__ */
  ks_rt_nodes atomics;        /* atomicAdd calls */
  ks_rt_nodes stores;         /* assignments to memory */
  ks_rt_nodes returns;
  ks_rt_nodes builtins;       /* blockIdx.x, gridDim.y, ... */
  ks_rt_nodes written;        /* local VARs assigned after their declaration */
  ks_rt_nodes pointer_refs;   /* DECL_REFs of pointer parameters */
} ks_smem_facts;

/* Where a rewrite happens: the unit and the parent's place in it. */
typedef struct ks_smem_rewrite {
  const ks_rule_input *in;
  ks_arena *arena;
  const char *unit;
  size_t vo;       /* where the parent's source starts in the unit */
  const char *indent; /* one level, as the body's first statement has it */
} ks_smem_rewrite;

/* What refuses both rules before their own patterns are looked at (NULL
 * when none); fills *w and *f for the rule to go on with. */
const char *ks_smem_refusal(const ks_rule_input *in, ks_arena *arena, ks_smem_rewrite *w,
                            ks_smem_facts *f);
/* A local variable assigned after its declaration (or whose address is taken). */
bool ks_smem_is_written(const ks_smem_facts *f, const ks_anode *var);

/* The builtin `name` (threadIdx, ...) member `which` (0: any), through casts. */
bool ks_smem_is_builtin(const ks_anode *n, const char *name, char which);
/* "threadIdx", "blockIdx", "blockDim" or "gridDim" for a MEMBER of one
 * of them, else NULL. */
const char *ks_smem_builtin_name(const ks_anode *member);
/* A memory access on a pointer parameter: the parameter (NULL: not one),
 * its DECL_REF and the index. */
const ks_anode *ks_smem_param_access(const ks_anode *n, const ks_anode **ref,
                                     const ks_anode **index);
/* blockIdx.d * blockDim.d + threadIdx.d; the blockDim and threadIdx nodes. */
bool ks_smem_is_gid(const ks_anode *e, char d, const ks_anode **bdim, const ks_anode **tid);
/* Reads condition `c` as a comparison of `var` with a bound. */
bool ks_smem_read_bound(const ks_anode *c, const ks_anode *var, ks_smem_bound *out);
/* A bound the launch policy can speak about. */
bool ks_smem_bound_is_simple(const ks_anode *n);
/* `if (C) return;` or `if (C) { return; }`. */
bool ks_smem_is_return_guard(const ks_anode *st);

/* The end of a statement with the ';' right after its extent. */
unsigned ks_smem_stmt_end(const ks_smem_rewrite *w, const ks_anode *n);
/* The leading white space of the line holding `at`, or NULL when
 * something else precedes `at` there. */
const char *ks_smem_line_indent(const ks_smem_rewrite *w, unsigned at);
/* An expression as an operand: bare when it is a name, a number or a
 * call, else in parentheses. */
const char *ks_smem_operand(ks_arena *arena, const char *e);
/* The type without top-level const and volatile. */
const char *ks_smem_unqualified(ks_arena *arena, const char *type);
/* out->applied = false with the reason (printf-style); returns 0. */
int ks_smem_no(ks_rule_result *out, ks_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* `requires` that the original launch covers everything bound `b` admits. */
const char *ks_smem_cover_guard(const ks_smem_rewrite *w, const char *grid, const char *block,
                                const ks_smem_bound *b);

#endif
