/* rules_shape: the shape of a kernel that coarsen, vectorize and restrict
 * match (rules_shape.c): its global indexes, the bounds check after them,
 * and the guards and texts the three rewrites share. Internal to passes/. */
#ifndef KS_RULES_SHAPE_H
#define KS_RULES_SHAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "rules_int.h"

typedef KS_ARRAY(const ks_anode *) ks_node_list;

typedef struct ks_shape {
  const ks_anode *body;
  const ks_anode *var[2];   /* the global index of x and of y, or NULL */
  size_t var_at[2];         /* their declarations' positions in the body */
  int dim;                  /* the dimension the rule works on: 0 x, 1 y */
  size_t first;             /* the first statement of the region */
  const ks_anode *check;    /* the IF testing the bound of var[dim] */
  size_t check_at;
  bool early_return;        /* if (... || v >= B ...) return; and the rest */
  const ks_anode *bound;    /* B */
  /* An x index read through local aliases with the block size as a
   * constant (`bx = blockIdx.x; tx = threadIdx.x; i = bx * 512 + tx`, as
   * Rodinia writes it): the aliases' initializers (the aliases are read
   * nowhere else) may read the builtins, and a rewrite must require the
   * original launch's block to be that constant (`requires`). */
  bool alias;
  unsigned alias_range[2][2];
  size_t nalias;
  const char *requires;     /* "block_x == 512", or NULL */
  const char *why;          /* why there is no ks_shape */
} ks_shape;

/* `v < B` / `B > v` (want_less) or `v >= B` / `B <= v`: B, or NULL. */
const ks_anode *ks_shape_bound_term(const ks_anode *t, const ks_anode *var, bool want_less);
/* The operands of a chain of `op` (&& or ||), in order. */
void ks_shape_chain_terms(ks_arena *arena, const ks_anode *e, const char *op, ks_node_list *out);
/* For ks_anode_walk: sets *(bool *)arg when the node reads memory, calls,
 * or assigns. */
bool ks_shape_visit_impure(ks_anode *n, void *arg);
/* A declaration that only computes values. */
bool ks_shape_pure_decl(const ks_anode *s);
/* The global indexes and the bounds check of dimension `dim` (-1: y when the
 * kernel has a y index, else x); sh->why says why there is no shape. */
void ks_shape_find(ks_ctx *ctx, ks_arena *arena, const ks_rule_input *in, int dim, ks_shape *sh);
/* The ranges a rewrite of `sh` lets read the thread-mapping builtins: the
 * initializers of the indexes and of their aliases. Returns how many (at
 * most 4) were written to `out` (pairs begin, end). */
size_t ks_shape_allowed(const ks_shape *sh, unsigned out[8]);
/* Whether B is made of scalar parameters never modified, literals,
 * arithmetic and casts (so a guard can be written with it). */
bool ks_shape_guardable(const ks_anode *body, const ks_anode *bound);
/* B as guard text: as written when ks_shape_guardable, else its value
 * folded through macros, const locals and enumerators (rules_meaning.h);
 * NULL with *why (a one-line reason) when neither. */
const char *ks_shape_bound_guard(ks_ctx *ctx, ks_arena *arena, const ks_rule_input *in,
                                 const ks_anode *bound, const char **why);
/* `grid * block >= bound` for dimension d, from the policy's expressions. */
const char *ks_shape_coverage_guard(ks_arena *arena, const ks_rule_policy *pol, int d,
                                    const char *bound);
bool ks_shape_is_wide_type(const char *type);
const char *ks_shape_without_const(const char *type);
/* The indentation unit of the body: the indentation of its first line. */
const char *ks_shape_indent_unit(ks_arena *arena, const ks_rule_input *in, const ks_anode *first);
/* Sets *problem for a return inside a loop or from a macro. */
void ks_shape_check_returns(const ks_anode *n, int loops, const char **problem);
/* Whether `name` is a function defined in the unit (the user's code). */
bool ks_shape_user_function(const ks_rule_input *in, const char *name);

#endif
