/* rules_tile_mm: what tile_matmul (rules_tile_mm.c) knows of a naive
 * matrix product, for the rules that rewrite the same pattern another way
 * (tile_mma, rules_tile_mma.c, with tensor cores).
 *
 * ks_mm_match reads the pattern (one thread per output (y, x), one loop
 * `for (k...) ACC += ... Y[f(y, k)] ... X[g(k, x)] ...`, bounds checked
 * before it; the comment at the top of rules_tile_mm.c has the details)
 * into a ks_mm_plan; ks_mm_replay writes the user's code around the loop
 * once per output (the prologue that gives ACC's start value, the
 * epilogue that uses its sum); ks_mm_cover states the guards that the
 * original launch covered the bounds.
 *
 * Internal to passes/. Nodes point into the rule input's tree; strings
 * live in the arena given. */
#ifndef KS_RULES_TILE_MM_H
#define KS_RULES_TILE_MM_H

#include <stdbool.h>

#include "rules_smem_int.h"

typedef struct ks_mm_plan {
  int tile, regs, rows;      /* T, R, T / R */
  int xregs, cols;           /* Rx, T / Rx (1 and T without tiling along x) */
  const ks_anode *x, *y, *k; /* the two indices' and the loop counter's VARs */
  const ks_anode *x_stmt, *y_stmt;  /* the statements that set x and y */
  const ks_anode *x_bdim, *y_bdim, *y_tid, *x_tid; /* their blockDim, threadIdx */
  const ks_anode *loop;      /* the FOR */
  const ks_anode *loop_stmt; /* the FOR, or the statement holding it with its pragma */
  ks_smem_bound kb, xb, yb;  /* the bounds of k, x and y */
  const ks_anode *upd;       /* ACC += P or ACC = ACC + P */
  const ks_anode *acc;       /* ACC (stripped) */
  const ks_anode *acc2;      /* ACC in `ACC + P`, or NULL */
  const ks_anode *acc_var;   /* ACC's VAR when a local */
  const ks_anode *opy, *opx; /* the operand reads (SUBSCRIPT, deref or __ldg) */
  const ks_anode *py, *px;   /* their pointer parameters */
  bool y_along_k, x_along_k; /* the operand's contiguous index is k */
  const ks_anode *path[32];  /* body, ..., loop_stmt */
  size_t npath;
  /* Set by the caller before ks_mm_match: the product may convert its
   * operands with __half2float or __bfloat162float (tile_mma, which
   * checks the product's factors itself; tile_matmul copies the product
   * and leaves it unset, refusing any call there). */
  bool conversions;
} ks_mm_plan;

/* Reads the pattern into *p (tile, regs, xregs... as the caller set them
 * are kept); NULL, or the one-line reason it does not apply. */
const char *ks_mm_match(const ks_smem_rewrite *w, const ks_smem_facts *f, ks_mm_plan *p);
/* What every writer of the pattern reads first: the shared-memory rules'
 * facts (*w, *f; a kernel they refuse is refused), no __launch_bounds__
 * (the block changes), ks_mm_match, and both operands' element types;
 * NULL, or the one-line reason. */
const char *ks_mm_read(const ks_rule_input *in, ks_arena *arena, ks_smem_rewrite *w,
                       ks_smem_facts *f, ks_mm_plan *p);

/* The user's body, once per output: phase 0 the prologue (everything up
 * to the loop, which becomes `slot = ACC;`), phase 1 the epilogue
 * (declarations and early exits again, `ACC = slot;` in the loop's place,
 * what follows it). blockDim.y becomes `T`, blockDim.x `Tx`, threadIdx.y
 * `ty_r` and threadIdx.x `tx_c` (NULL: kept) in the index statements;
 * `return` becomes `continue`. NULL (with ctx's error) when the edits do
 * not apply. */
const char *ks_mm_replay(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_mm_plan *p, int phase,
                         const char *T, const char *Tx, const char *ty_r, const char *tx_c,
                         const char *acc_text, const char *slot);

/* A bound as a guard expression: literals by value (macros included),
 * scalar parameters by name, arithmetic; NULL when it cannot. */
const char *ks_mm_guard_text(ks_arena *arena, const ks_anode *n);

/* An operand read p[i], *(p + i), __ldg(&p[i]) or __ldg(p + i): the
 * pointer parameter (NULL: not one), its DECL_REF and the index. */
const ks_anode *ks_mm_read_access(const ks_anode *n, const ks_anode **ref, const ks_anode **idx);

/* index == outer * LD + inner (either order of factors and addends), LD
 * invariant: returns LD, else NULL. */
const ks_anode *ks_mm_row_major(ks_arena *arena, const ks_anode *idx, const ks_anode *inner,
                                const ks_anode *outer);

/* The guards that the launch of policy `pol` covered both bounds of the
 * plan (*cover_x along x, *cover_y along y: `grid * block >= bound`, a
 * macro bound by its value); NULL, or the reason they cannot be stated. */
const char *ks_mm_cover(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena,
                        const ks_mm_plan *p, const ks_rule_policy *pol, const char **cover_x,
                        const char **cover_y);

/* The child of a tiled rewrite: the parent's body replaced by `body`
 * (`header`, if any, put before the variant's first line), a BM x BN
 * block tile over the parent's grid (grid = ceil_div(grid * block, tile)
 * along x and y, block = block_x x block_y), the cover guards and
 * grid_y <= 65535. Fails only when the edits cannot be applied. */
int ks_mm_write_child(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena, unsigned vo,
                      const char *header, const char *body, ks_rule_policy *pol, int bm, int bn,
                      int block_x, int block_y, const char *cover_x, const char *cover_y,
                      ks_rule_result *out);

#endif
