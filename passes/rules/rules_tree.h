/* rules_tree: what the rules share for reading a kernel's tree and
 * rewriting its text: stripping wrappers, climbing to a node's real
 * parent, re-printing a subtree's text with some nodes replaced (the
 * user's formatting kept), indentation, fresh names, and the check that
 * a kernel's threads are independent of how they are mapped (no barrier,
 * no shared memory, no warp collective, no thread index read outside the
 * global index), which coarsen and vectorize need.
 *
 * Implemented in rules_tree.c. Internal to passes/. Strings and node lists
 * live in the arena given. */
#ifndef KS_RULES_TREE_H
#define KS_RULES_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_buf.h"
#include "rules_int.h"

/* `n` without parentheses and implicit conversions (explicit casts kept
 * unless `casts`); NULL stays NULL. */
const ks_anode *ks_rt_strip(const ks_anode *n, bool casts);
/* The node `n` is an operand of, above parentheses and implicit
 * conversions; *child is set to the direct child of that node on the way. */
const ks_anode *ks_rt_up(const ks_anode *n, const ks_anode **child);
/* A local variable's initializer, or NULL. */
const ks_anode *ks_rt_var_init(const ks_anode *var);
/* A DECL_REF (through wrappers) to `decl`. */
bool ks_rt_refers_to(const ks_anode *n, const ks_anode *decl);
/* `decl` (a PARAM or VAR) is assigned, incremented or has its address taken
 * somewhere below `root`. */
bool ks_rt_modified(const ks_anode *root, const ks_anode *decl);

/* A list of nodes (arena-backed). */
typedef KS_ARRAY(const ks_anode *) ks_rt_nodes;

/* TypeRef, TemplateRef, NamespaceRef: children of casts and declarations
 * that are not operands. */
bool ks_rt_is_ref_node(const ks_anode *n);
/* `n` is `root` or below it in the tree. */
bool ks_rt_is_within(const ks_anode *n, const ks_anode *root);
/* An operator node of `kind` (UNARY or BINARY) spelled `op`, with its
 * operands. */
bool ks_rt_is_op(const ks_anode *n, ks_akind kind, const char *op);
/* A binary operator spelled `op`. */
bool ks_rt_is_bin(const ks_anode *n, const char *op);
/* The integer literal `v` (through parentheses, conversions and casts). */
bool ks_rt_is_int(const ks_anode *n, long long v);
/* `=`, a compound assignment, `++` or `--`. */
bool ks_rt_is_assignment(const ks_anode *n);
/* The callee's name without template arguments or qualification. */
const char *ks_rt_callee(ks_arena *arena, const ks_anode *call);
/* Every node below `root`, in pre-order. */
ks_rt_nodes ks_rt_collect(ks_arena *arena, const ks_anode *root);
/* How many DECL_REFs to `decl` there are below `root`. */
unsigned ks_rt_count_refs(ks_arena *arena, const ks_anode *root, const ks_anode *decl);
/* Is `n` a whole expression statement (its value unused)? */
bool ks_rt_is_expr_stmt(const ks_anode *n);
/* The one VAR of a declaration statement, or NULL. */
const ks_anode *ks_rt_single_var(const ks_anode *stmt);
/* Splits a condition at a top-level && (or ||, as `op` says) into its
 * operands (through parentheses and UnexposedExpr: ks_anode_strip). */
void ks_rt_split_chain(ks_arena *arena, const ks_anode *c, const char *op, ks_rt_nodes *out);
/* A template type parameter of the kernel named `type`. */
bool ks_rt_is_template_type(const ks_kast *k, const char *type);
/* Accumulating functions: max and min, as spelled in CUDA. */
bool ks_rt_is_minmax(const char *name);
/* `s` (NULL: false) starts with `prefix`. */
bool ks_rt_has_prefix(const char *s, const char *prefix);
/* A call several threads may run instead of one: no side effects, the
 * result from the arguments alone (the math library, arithmetic intrinsics,
 * read-only loads). */
bool ks_rt_is_pure_call(const char *name);
/* Keeps the first reason a rule does not apply in *why (formatted into the
 * arena); returns false, for `return ks_rt_why(...)` in a matcher. */
bool ks_rt_why(ks_arena *arena, const char **why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A replacement for ks_rt_render: the text that stands for `n`, or NULL to
 * keep n's text (with its own descendants looked at). */
typedef const char *(*ks_rt_replace)(const ks_anode *n, void *arg);
/* Appends the text of `n` (unit offsets), with the nodes `fn` replaces
 * replaced. Nodes from macro expansions are copied as written. */
void ks_rt_render(ks_buf *b, const char *unit, const ks_anode *n, ks_rt_replace fn, void *arg);
/* The same for the part [from, to) of n's text. */
void ks_rt_render_range(ks_buf *b, const char *unit, const ks_anode *n, unsigned from,
                        unsigned to, ks_rt_replace fn, void *arg);
const char *ks_rt_render_str(ks_arena *arena, const char *unit, const ks_anode *n,
                             ks_rt_replace fn, void *arg);
/* Where a statement ends, with the ';' that follows an expression
 * statement (clang's extent stops before it). */
unsigned ks_rt_stmt_end(const char *unit, const ks_anode *s);
/* Where a statement ends, with the ';' of an expression statement; a
 * loop or an if ends where its last statement does (clang's extent of
 * `for (...) x += y;` stops before the ';'). */
unsigned ks_rt_stmt_end_deep(const char *unit, const ks_anode *s);
/* Where a statement starts, with the #pragma lines right above it (an
 * `unroll` before a loop): code inserted before the statement goes above
 * them, so that the pragma still applies to the loop. */
unsigned ks_rt_begin_with_pragmas(const char *unit, unsigned begin);

/* The whitespace that starts the line holding offset `at`. */
const char *ks_rt_line_indent(ks_arena *arena, const char *unit, unsigned at);
/* `text` with `add` inserted at the start of every line but the first. */
const char *ks_rt_indent_more(ks_arena *arena, const char *text, const char *add);
/* `base`, or base2, base3, ... : the first not already an identifier of `text`. */
const char *ks_rt_fresh(ks_arena *arena, const char *text, const char *base);
/* `expr` in parentheses unless it is a name, a number or a call. */
const char *ks_rt_paren(ks_arena *arena, const char *expr);
/* One level of indentation as the kernel has it: its first statement's
 * indentation beyond the line of its signature. */
const char *ks_rt_indent_step(ks_arena *arena, const ks_rule_input *in);
/* The indentation one level below a line indented with `indent`. */
const char *ks_rt_deeper(ks_arena *arena, const ks_rule_input *in, const char *indent);

/* Is `n` (through casts) BUILTIN.D, as `threadIdx.x`? */
bool ks_rt_builtin_member(const ks_anode *n, const char *builtin, char d);
/* Is `e` blockIdx.D * blockDim.D + threadIdx.D (operands in any order,
 * with casts)? *product is set to the blockIdx.D * blockDim.D operand. */
bool ks_rt_global_index(const ks_anode *e, char d, const ks_anode **product);

/* Why the kernel's work cannot be redistributed among threads (NULL: it can):
 * __syncthreads and other barriers, warp collectives, shared memory, a
 * device function that uses any of these, or threadIdx/blockIdx/gridDim
 * read anywhere but inside the ranges [allowed[2k], allowed[2k+1]) (not
 * looked at when allowed is NULL). */
const char *ks_rt_mapping_problem(ks_arena *arena, const ks_rule_input *in,
                                  const unsigned *allowed, size_t nallowed);
/* The same for a rewrite that keeps every block's elements in that block
 * (fewer threads per block, each doing several of the block's elements):
 * blockIdx may be read anywhere, blockDim only inside the ranges. */
const char *ks_rt_block_mapping_problem(ks_arena *arena, const ks_rule_input *in,
                                        const unsigned *allowed, size_t nallowed);

/* Applies `edits` to the parent's source, makes the child, and fills `out`
 * (applied, technique). Returns -1 when the edits do not apply. */
int ks_rt_finish(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena, const ks_edits *edits,
                 const char *technique, ks_rule_result *out);
/* out->applied = false with the reason (printf-style). */
int ks_rt_not_applicable(ks_arena *arena, ks_rule_result *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Shared by the rules of rules_vectorize.c, rules_loop.c and the others. */
bool ks_rt_find_definition(const char *text, const char *end, const char *name, const char **body,
                           const char **body_end, const char *skip_from, const char *skip_to);
bool ks_rt_has_identifier(const char *text, const char *name);
/* A node that only wraps another (implicit conversions, unexposed). */
bool ks_rt_is_wrapper(const ks_anode *n);
void ks_rt_render_span(ks_buf *b, const ks_rule_input *in, const ks_anode *parent,
                       unsigned from, unsigned to, ks_rt_replace fn, void *arg);
/* The offset in the parent's source of a unit offset. */
size_t ks_rt_src_at(const ks_rule_input *in, unsigned unit_offset);
/* The node's text. */
const char *ks_rt_text_of(ks_arena *arena, const ks_rule_input *in, const ks_anode *n);

/* Whether a guard expression evaluates at the timed size (its names are
 * launch variables and scalar parameters). */
bool ks_rt_guard_evaluates(const ks_rule_input *in, const char *guard);
/* A C type name of 64 bits (long, size_t, int64_t, ptrdiff_t...). */
bool ks_rt_is_64bit_type(const char *t);

/* The device function fast_math adds for tanhf (rules_loop.c). */
extern const char ks_fast_tanhf_source[];

#endif
