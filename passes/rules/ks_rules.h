/* ks_rules: the rules proposer: source-to-source rewrites of a kernel, the
 * default proposer of `optimize` (no LLM).
 *
 * A rule takes a parent variant (the kernel's text as the search holds it,
 * with its launch policy and guards) and the parent's syntax tree
 * (ks_kast.h), and returns a child variant, or says in one line why it does
 * not apply. Every rule has a parameter the search tunes (a block size, a
 * coarsening factor, an unroll factor; 0 for rules without one). Rules
 * compose: the child of one rule is the parent of the next, so a rule must
 * accept the output of every other rule (a rule that cannot see its
 * pattern any more says so and produces nothing).
 *
 * Launch policies are expressions (ks_expr.h) over the ORIGINAL launch
 * (grid_x..grid_z, block_x..block_z, smem), the scalar parameters and
 * len_<param>; a rule that changes the launch composes with its parent's
 * policy by substitution: the parent's grid expression is the "current
 * grid", and so on (ks_rule_policy helpers below).
 *
 * A child carries the guards (`requires`) its rewrite needs: n % 4 == 0,
 * aligned(x, 16), block_x % 32 == 0, ... (docs/spec.md lists the syntax);
 * the judge checks them per size set, and the write-back emits them as the
 * launch site's fallback condition.
 *
 * Ownership: a child's strings live in the arena passed to the rule. */
#ifndef KS_RULES_H
#define KS_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_kast.h"
#include "ks_spec.h"
#include "ks_target.h"

/* Intermediate children a prepared input keeps (rules_util.c). */
typedef struct ks_rule_memo ks_rule_memo;

/* What a rule rewrites. */
typedef struct ks_rule_input {
  /* The parent variant: `parent->source` is the variant kernel and the
   * device functions it adds; parent->kernel_name its __global__ function;
   * parent->grid/block/smem its launch policy (NULL: the original's);
   * parent->requires its guards. */
  const ks_variant *parent;
  bool is_template;            /* the kernel is a template */
  /* The parent's tree: parsed from `unit` = the slice, then the parent's
   * source starting at byte `variant_offset` of the unit (the judge
   * compiles exactly that). Node offsets are into `unit`; a rule edits
   * parent->source, so it subtracts variant_offset. */
  const ks_kast *ast;
  const char *unit;
  size_t variant_offset;
  /* The kernel's inputs: element types, roles and tolerances of its
   * buffers (for fast-math: a kernel whose outputs are integers, or whose
   * spec asks for the fp64 reference with a tight tolerance, gets no
   * approximate math); the timed size's workload (launch, counts). */
  const ks_spec *spec;
  const ks_workload *timed;
  /* The original launch at the timed size (the launch policy variables
   * grid_x.. evaluate to these). */
  const ks_launch_cfg *original_launch;
  /* Without a spec or capture (rewrite from the launch sites alone,
   * ks_target_open_sites): `timed` is a stand-in whose scalars and buffer
   * lengths have no values, and unknown_launch[i] (NULL: known) says why
   * part i (grid, block, smem) of original_launch has none either.
   * ks_rule_eval fails on such a name with a line that says so; guards stay
   * symbolic. */
  bool no_sizes;
  const char *unknown_launch[3];
  /* The device (sm_90 on H200): warp size 32, max threads per block, shared
   * memory per block, number of SMs, for choices that depend on it. */
  unsigned sm_count;
  unsigned max_smem_per_block;
  /* What the parent was prepared from, and the prepare's arena with the
   * intermediate children it has prepared since (ks_rule_then): a rule
   * that sees its pattern only after another rewrite (warp_rows after
   * scalar_replace has moved `y[i] += ...` into a register) applies both as
   * one step. NULL when the input was filled by hand: no composition. */
  const ks_target *target;
  ks_rule_memo *memo;
  /* This input is such an intermediate child: its rules do not compose
   * again. */
  bool composed;
} ks_rule_input;

typedef struct ks_rule_result {
  bool applied;          /* false: `reason` says why the rule does not apply */
  const char *reason;
  ks_variant child;      /* source, kernel_name, grid/block/smem, requires */
  const char *technique; /* the tag this step adds ("vec4", "block=128") */
} ks_rule_result;

typedef struct ks_rule {
  const char *name;       /* "block", "coarsen", "vectorize", "restrict",
                             "unroll", "launch_bounds", "grid_stride",
                             "fast_math", "warp_reduce", "warp_atomic",
                             "smem_histogram", "smem_transpose", "warp_rows",
                             "reduce_stride", "vectorize_2d", "tile_matmul",
                             "scalar_replace", "hoist_invariant",
                             "split_cols", "stream_z", "stream_y",
                             "tile_mma", "lookup_table" */
  const char *summary;    /* one line, for --help and docs */
  bool tuning;            /* part of the tuning-only baseline (launch
                             configuration and unroll factors alone) */
  const int *choices;     /* the values of its parameter the search draws */
  size_t nchoices;        /* 0: the rule has no parameter (param is 0) */
  /* Returns -1 only when the tool cannot go on (out of memory is an abort
   * anyway); "does not apply" is out->applied == false. */
  int (*apply)(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
               ks_rule_result *out);
} ks_rule;

/* Every rule, in a fixed order. */
const ks_rule *const *ks_rules_all(size_t *n);
/* A rule by name, or NULL. */
const ks_rule *ks_rule_find(const char *name);

/* ---- what the search calls (passes/rules_util.c) ---- */

/* The first variant of a kernel: the original's definition, copied out of
 * the slice and renamed <name>_ks_variant, with the original's launch. */
int ks_rules_seed(ks_ctx *ctx, const ks_target *t, ks_arena *arena, ks_variant *out,
                  bool *is_template);
/* Parses a parent once (the slice followed by the parent's source, as the
 * judge compiles it) and fills a rule input every rule can then be applied
 * to, as many times as wanted. A parent that does not parse fails with the
 * first error. */
int ks_rules_prepare(ks_ctx *ctx, const ks_target *t, const ks_variant *parent, bool is_template,
                     ks_arena *arena, ks_rule_input *out);
/* What ks_rules_prepare puts in sm_count and max_smem_per_block: an H200
 * (sm_90). The caller may overwrite them with the device's numbers after
 * the prepare, before applying rules. */
#define KS_RULES_DEFAULT_SM_COUNT 132u
#define KS_RULES_DEFAULT_MAX_SMEM 49152u
/* The unit the judge compiles for variant `v` of `t`
 * (ks_judge_variant_unit): the slice, a separator, a #line directive and
 * the variant's source. *variant_offset (may be NULL) is where the
 * variant's source starts in it. */
const char *ks_rules_unit(ks_arena *arena, const ks_target *t, const ks_variant *v,
                          size_t *variant_offset);

/* ---- helpers shared by the rules (passes/rules_util.c) ---- */

/* A list of text edits to one string, applied together. Offsets are into
 * the string the edits are applied to; edits must not overlap (an insertion,
 * begin == end, may share its offset with another edit: insertions at one
 * offset keep the order they were added in). */
typedef struct ks_edit {
  size_t begin, end;
  const char *text;
} ks_edit;
typedef KS_ARRAY(ks_edit) ks_edits;

void ks_edits_add(ks_arena *arena, ks_edits *e, size_t begin, size_t end, const char *text);
/* The edited text, or NULL (with a message) when edits overlap or fall
 * outside it. */
const char *ks_edits_apply(ks_ctx *ctx, ks_arena *arena, const char *text, const ks_edits *e);

/* The parent's launch policy, with defaults filled in: "grid_x" style
 * expressions for each of the six dimensions and smem, as C expressions
 * over the policy variables. grid[0] is x. */
typedef struct ks_rule_policy {
  const char *grid[3];
  const char *block[3];
  const char *smem;
} ks_rule_policy;

/* Reads a variant's grid/block/smem ("dim3-like" text: "ceil_div(n, 256)" or
 * "(a, b, c)") into per-dimension expressions; the original's dimensions
 * where the variant gives none. */
int ks_rule_policy_read(ks_ctx *ctx, ks_arena *arena, const ks_variant *v, ks_rule_policy *out);
/* Writes a policy back as the variant's grid/block/smem strings (a single
 * expression where y and z are 1). */
void ks_rule_policy_write(ks_arena *arena, const ks_rule_policy *p, ks_variant *v);
/* A child that starts as a copy of the parent: same source, policy, guards. */
void ks_rule_child_init(ks_arena *arena, const ks_rule_input *in, ks_variant *child);
/* Adds a guard to a child unless it already has it. */
void ks_rule_require(ks_arena *arena, ks_variant *child, const char *guard);
/* `first` (with `first_param`) applied to the parent, its child prepared as
 * the judge compiles it, and `second` (with `param`) applied to that: one
 * step whose technique reads "<first's tag> > <second's tag>" and whose
 * child carries both rules' guards and the composed launch policy. Not
 * applied (out->reason says which of the two refused and why) when either
 * does not apply, when the input cannot compose (no target, or it is an
 * intermediate already), or when the intermediate does not parse. The
 * intermediate is prepared once per parent and first rule (in->memo). */
int ks_rule_then(ks_ctx *ctx, const ks_rule_input *in, const ks_rule *first, int first_param,
                 const ks_rule *second, int param, ks_arena *arena, ks_rule_result *out);
/* rule->apply, and where the rule refuses a kernel whose indices are
 * declared before they are set (C89: int i, j; ... j = blockIdx.x * ...),
 * the rule once more after declare_index has declared them where they are
 * set (ks_rule_then; the technique names the rule alone). What the search
 * and `rewrite` call; the reason is the refusal of the kernel as written. */
int ks_rule_apply(ks_ctx *ctx, const ks_rule *rule, const ks_rule_input *in, int param,
                  ks_arena *arena, ks_rule_result *out);
/* Evaluates a policy or guard expression at the timed size: the policy
 * variables (grid_x.., block_x.., smem) are the original launch there, the
 * scalar parameters their values, len_<param> the buffers' lengths. Fails
 * (ks_fail) on an unknown name or a non-integer value. */
int ks_rule_eval(ks_ctx *ctx, const ks_rule_input *in, const char *expr, long long *out);

#endif
