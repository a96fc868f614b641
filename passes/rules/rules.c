/* rules: the list of rewrites the rules proposer knows, in a fixed order
 * (the search's draws and the golden tests depend on it). */
#include <string.h>

#include "rules_int.h"

static const ks_rule *const all[] = {
    &ks_rule_block,      &ks_rule_coarsen,        &ks_rule_vectorize,   &ks_rule_restrict,
    &ks_rule_unroll,     &ks_rule_launch_bounds,  &ks_rule_grid_stride, &ks_rule_fast_math,
    &ks_rule_warp_reduce, &ks_rule_warp_atomic,   &ks_rule_warp_rows,   &ks_rule_smem_histogram,
    &ks_rule_smem_transpose, &ks_rule_reduce_stride, &ks_rule_vectorize_2d,
    &ks_rule_tile_matmul,
    &ks_rule_scalar_replace, &ks_rule_hoist_invariant, &ks_rule_split_cols,
    &ks_rule_stream_z,      &ks_rule_stream_y,
    &ks_rule_tile_mma,      &ks_rule_lookup_table,
};

const ks_rule *const *ks_rules_all(size_t *n) {
  *n = sizeof all / sizeof *all;
  return all;
}

const ks_rule *ks_rule_find(const char *name) {
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (!strcmp(all[i]->name, name))
      return all[i];
  return NULL;
}
