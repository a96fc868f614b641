/* rules_coarsen: `coarsen`, each thread does the work of C threads (1-D:
 * strided by the grid; 2-D: C rows of a block). It matches the kernel's
 * shape (rules_shape.h) and edits the text, so it accepts the output of the
 * other rules where the pattern is still there. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_shape.h"
#include "rules_tree.h"

/* ---- coarsen ------------------------------------------------------------ */

typedef struct coarsen_render {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *init;      /* the index initializer to replace */
  const char *new_init;
  const ks_anode *product;   /* 2-D: blockIdx.y * blockDim.y, scaled by C */
  const char *new_product;
} coarsen_render;

static const char *coarsen_replace(const ks_anode *n, void *arg) {
  coarsen_render *r = arg;
  if (n == r->init)
    return r->new_init;
  if (n == r->product)
    return r->new_product;
  if (n->kind == KS_AK_RETURN)
    return "continue";
  return NULL;
}


static const int coarsen_choices[] = {2, 4, 8};

static int apply_coarsen(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                         ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param != 2 && param != 4 && param != 8)
    return ks_rt_not_applicable(arena, out, "factor %d is not one of 2, 4, 8", param);
  const char *problem = ks_rt_mapping_problem(arena, in, NULL, 0);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  ks_shape sh;
  ks_shape_find(ctx, arena, in, -1, &sh);
  if (sh.why)
    return ks_rt_not_applicable(arena, out, "%s", sh.why);
  const ks_anode *v = sh.var[sh.dim];
  const ks_anode *init = ks_rt_var_init(v);
  unsigned allowed[8];
  size_t nallowed = ks_shape_allowed(&sh, allowed);
  problem = ks_rt_mapping_problem(arena, in, allowed, nallowed);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  const char *bound_why = NULL;
  const char *bound = ks_shape_bound_guard(ctx, arena, in, sh.bound, &bound_why);
  if (!bound)
    return ks_rt_not_applicable(arena, out, "%s", bound_why);
  const ks_anode *body = sh.body;
  const ks_anode *last = body->kids[body->nkids - 1];
  for (size_t k = sh.first; k < body->nkids && !problem; k++)
    ks_shape_check_returns(body->kids[k], 0, &problem);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  if (init->from_macro)
    return ks_rt_not_applicable(arena, out, "the global index comes from a macro");

  const char *kname = ks_rt_fresh(arena, in->unit, "ks_k");
  const char *type = ks_shape_without_const(v->type ? v->type : "int");
  const char *k_term =
      ks_shape_is_wide_type(type) ? ks_arena_printf(arena, "(%s)%s", type, kname) : kname;
  coarsen_render r = {.arena = arena, .in = in};
  r.init = init;
  if (sh.dim == 0) {
    r.new_init = ks_arena_printf(arena, "%s + %s * gridDim.x * blockDim.x",
                                 ks_rt_text_of(arena, in, init), k_term);
  } else {
    const ks_anode *product;
    ks_rt_global_index(init, 'y', &product);
    if (product->from_macro)
      return ks_rt_not_applicable(arena, out, "the global index comes from a macro");
    coarsen_render pr = {.product = product,
                         .new_product = ks_arena_printf(arena, "%s * %d",
                                                        ks_rt_text_of(arena, in, product), param)};
    const char *scaled = ks_rt_render_str(arena, in->unit, init, coarsen_replace, &pr);
    r.new_init = ks_arena_printf(arena, "%s + %s * blockDim.y", scaled, k_term);
  }
  const ks_anode *first = body->kids[sh.first];
  unsigned end = ks_rt_stmt_end(in->unit, last);
  ks_buf region = KS_BUF_INIT;
  ks_rt_render_span(&region, in, body, first->begin, end, coarsen_replace, &r);
  const char *ind = ks_rt_line_indent(arena, in->unit, first->begin);
  const char *unit = ks_shape_indent_unit(arena, in, first);
  const char *loop = ks_arena_printf(
      arena, "#pragma unroll\n%sfor (int %s = 0; %s < %d; ++%s) {\n%s%s%s\n%s}", ind, kname,
      kname, param, kname, ind, unit, ks_rt_indent_more(arena, region.data, unit), ind);
  ks_buf_release(&region);

  ks_edits edits = {0};
  ks_edits_add(arena, &edits, ks_rt_src_at(in, first->begin), ks_rt_src_at(in, end), loop);
  if (ks_rt_finish(ctx, in, arena, &edits, ks_arena_printf(arena, "coarsen=%d", param), out))
    return -1;
  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return -1;
  ks_rule_require(arena, &out->child,
                  ks_shape_coverage_guard(arena, &pol, sh.dim, bound));
  if (sh.requires)
    ks_rule_require(arena, &out->child, sh.requires);
  /* a 32-bit index of the last extra threads must not wrap (in y, grid and
   * block limits keep it far below) */
  if (sh.dim == 0 && !ks_shape_is_wide_type(type))
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "ceil_div(%s, %d) * %d * %s <= %s", pol.grid[0], param,
                                    param, ks_rt_paren(arena, pol.block[0]),
                                    strstr(type, "unsigned") ? "4294967296" : "2147483648"));
  pol.grid[sh.dim] = ks_arena_printf(arena, "ceil_div(%s, %d)", pol.grid[sh.dim], param);
  ks_rule_policy_write(arena, &pol, &out->child);
  return 0;
}

const ks_rule ks_rule_coarsen = {
    "coarsen",
    "each thread does the work of C threads (1-D: strided by the grid; 2-D: C rows of a block)",
    false,
    coarsen_choices,
    sizeof coarsen_choices / sizeof *coarsen_choices,
    apply_coarsen};
