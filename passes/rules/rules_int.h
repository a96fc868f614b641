/* rules_int: the rule objects, one per rewrite, defined in rules_*.c and
 * listed by rules.c. Internal to passes/. */
#ifndef KS_RULES_INT_H
#define KS_RULES_INT_H

#include "ks_rules.h"

/* rules_launch.c */
extern const ks_rule ks_rule_block;
extern const ks_rule ks_rule_grid_stride;
extern const ks_rule ks_rule_launch_bounds;
/* rules_vectorize.c, rules_restrict.c, rules_coarsen.c (the shape they
 * share: rules_shape.c) */
extern const ks_rule ks_rule_vectorize;
extern const ks_rule ks_rule_restrict;
extern const ks_rule ks_rule_coarsen;
/* rules_loop.c */
extern const ks_rule ks_rule_unroll;
extern const ks_rule ks_rule_fast_math;
/* rules_warp_reduce.c */
extern const ks_rule ks_rule_warp_reduce;
extern const ks_rule ks_rule_warp_atomic;
/* rules_warp_rows.c */
extern const ks_rule ks_rule_warp_rows;
/* rules_reduce.c */
extern const ks_rule ks_rule_reduce_stride;
/* rules_smem_hist.c */
extern const ks_rule ks_rule_smem_histogram;
/* rules_smem_transpose.c */
extern const ks_rule ks_rule_smem_transpose;
/* rules_vectorize_2d.c (with rules_vec2d_index.c, rules_vec2d.h) */
extern const ks_rule ks_rule_vectorize_2d;
/* rules_tile_mm.c (with the shared-memory helpers of rules_smem_int.h) */
extern const ks_rule ks_rule_tile_matmul;
/* rules_scalar.c, rules_hoist.c (the loop reading they share:
 * rules_invariant.c) */
extern const ks_rule ks_rule_scalar_replace;
extern const ks_rule ks_rule_hoist_invariant;
/* rules_split_cols.c */
extern const ks_rule ks_rule_split_cols;
/* rules_stream_z.c (both walks share it) */
extern const ks_rule ks_rule_stream_z;
extern const ks_rule ks_rule_stream_y;
/* rules_tile_mma.c (tile_matmul's pattern, rules_tile_mm.h, on the tensor
 * cores) */
extern const ks_rule ks_rule_tile_mma;
/* rules_lut.c (the loop reading of rules_invariant.c) */
extern const ks_rule ks_rule_lookup_table;
/* rules_declare.c: no rule of the search; ks_rule_apply runs a rule after
 * it where the rule refused the kernel as written */
extern const ks_rule ks_rule_declare_index;

#endif
