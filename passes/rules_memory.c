/* rules_memory: rewrites of how a kernel's threads touch memory.
 *
 *   vectorize  each thread handles V consecutive elements with 16-byte
 *              loads and stores, a scalar tail for the rest;
 *   restrict   __restrict__ and const on pointer parameters, reads of
 *              read-only ones through __ldg, under disjoint() guards;
 *   coarsen    each thread does the work of C threads.
 *
 * All three match the kernel's tree structurally (a global index
 * blockIdx * blockDim + threadIdx, a bounds check, accesses p[i]) and edit
 * the text, so they accept the output of the other rules where the pattern
 * is still there, and say why not where it is not. The helpers every rule
 * shares are in rules_tree.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_tree.h"

/* ---- the shape of a kernel: global indexes and the bounds check --------- */

typedef KS_ARRAY(const ks_anode *) node_list;

/* `v < B` / `B > v` (want_less) or `v >= B` / `B <= v`: B, or NULL. */
static const ks_anode *bound_term(const ks_anode *t, const ks_anode *var, bool want_less) {
  t = ks_rt_strip(t, false);
  if (!t || t->kind != KS_AK_BINARY || !t->op || t->nkids != 2)
    return NULL;
  const char *lhs_op = want_less ? "<" : ">=", *rhs_op = want_less ? ">" : "<=";
  if (!strcmp(t->op, lhs_op) && ks_rt_refers_to(t->kids[0], var))
    return t->kids[1];
  if (!strcmp(t->op, rhs_op) && ks_rt_refers_to(t->kids[1], var))
    return t->kids[0];
  return NULL;
}

/* The terms of an `op` chain (a && b && c), parentheses looked through. */
static void chain_terms(ks_arena *arena, const ks_anode *e, const char *op, node_list *out) {
  const ks_anode *s = ks_rt_strip(e, false);
  if (s && s->kind == KS_AK_BINARY && s->op && !strcmp(s->op, op) && s->nkids == 2) {
    chain_terms(arena, s->kids[0], op, out);
    chain_terms(arena, s->kids[1], op, out);
  } else {
    *ks_array_push(arena, out) = e;
  }
}

/* A statement that only computes values: a declaration whose initializers
 * read no memory, call nothing and assign nothing. */
static bool visit_impure(ks_anode *n, void *arg) {
  bool *impure = arg;
  switch (n->kind) {
  case KS_AK_CALL:
  case KS_AK_SUBSCRIPT:
  case KS_AK_COMPOUND_ASSIGN:
    *impure = true;
    break;
  case KS_AK_UNARY:
    if (n->op && (!strcmp(n->op, "*") || !strcmp(n->op, "++") || !strcmp(n->op, "--")))
      *impure = true;
    break;
  case KS_AK_BINARY:
    if (n->op && !strcmp(n->op, "="))
      *impure = true;
    break;
  case KS_AK_MEMBER:
    if (n->arrow)
      *impure = true;
    break;
  case KS_AK_VAR:
    if (n->shared_space)
      *impure = true;
    break;
  default:
    break;
  }
  return !*impure;
}

static bool pure_decl(const ks_anode *s) {
  if (s->kind != KS_AK_DECL_STMT)
    return false;
  bool impure = false;
  ks_anode_walk((ks_anode *)s, visit_impure, &impure);
  return !impure;
}

typedef struct shape {
  const ks_anode *body;
  const ks_anode *var[2];   /* the global index of x and of y, or NULL */
  size_t var_at[2];         /* their declarations' positions in the body */
  int dim;                  /* the dimension the rule works on: 0 x, 1 y */
  size_t first;             /* the first statement of the region */
  const ks_anode *check;    /* the IF testing the bound of var[dim] */
  size_t check_at;
  bool early_return;        /* if (... || v >= B ...) return; and the rest */
  const ks_anode *bound;    /* B */
  const char *why;          /* why there is no shape */
} shape;

static const ks_anode *find_index(const ks_anode *body, char d, size_t *at) {
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *s = body->kids[k];
    if (!s || s->kind != KS_AK_DECL_STMT || s->nkids != 1 || !s->kids[0] ||
        s->kids[0]->kind != KS_AK_VAR)
      continue;
    const ks_anode *init = ks_rt_var_init(s->kids[0]);
    if (init && ks_rt_global_index(init, d, NULL)) {
      *at = k;
      return s->kids[0];
    }
  }
  return NULL;
}

static bool is_return_stmt(const ks_anode *s) {
  while (s && s->kind == KS_AK_COMPOUND && s->nkids == 1)
    s = s->kids[0];
  return s && s->kind == KS_AK_RETURN;
}

/* Finds the global indexes and the bounds check of dimension `dim`
 * (-1: y when the kernel has a y index, else x). */
static void find_shape(const ks_rule_input *in, int dim, shape *sh) {
  memset(sh, 0, sizeof *sh);
  const ks_anode *body = in->ast->body;
  sh->body = body;
  sh->var[0] = find_index(body, 'x', &sh->var_at[0]);
  sh->var[1] = find_index(body, 'y', &sh->var_at[1]);
  if (dim < 0)
    dim = sh->var[1] ? 1 : 0;
  sh->dim = dim;
  const ks_anode *v = sh->var[dim];
  for (size_t k = 0; !v && k < body->nkids; k++) {
    const ks_anode *f = body->kids[k];
    const ks_anode *init = f && f->kind == KS_AK_FOR ? f->kids[0] : NULL;
    if (init && init->kind == KS_AK_DECL_STMT && init->nkids == 1 &&
        ks_rt_global_index(ks_rt_var_init(init->kids[0]), dim ? 'y' : 'x', NULL)) {
      sh->why = "the global index is a grid-stride loop's (each thread already handles several "
                "elements)";
      return;
    }
  }
  if (!v) {
    sh->why = dim ? "no global index blockIdx.y * blockDim.y + threadIdx.y"
                  : "no global index blockIdx.x * blockDim.x + threadIdx.x declared at the "
                    "kernel's top level";
    return;
  }
  if (v->from_macro || ks_rt_var_init(v)->from_macro) {
    sh->why = "the global index comes from a macro";
    return;
  }
  for (int d = 0; d < 2; d++)
    if (sh->var[d] && ks_rt_modified(body, sh->var[d])) {
      sh->why = "the global index is modified";
      return;
    }
  sh->first = sh->var_at[dim];
  /* before the region: only declarations that compute values (they run once
   * per thread, not once per element) */
  for (size_t k = 0; k < sh->first; k++)
    if (!pure_decl(body->kids[k])) {
      sh->why = "statements before the global index do more than compute values";
      return;
    }
  size_t k = sh->first + 1;
  while (k < body->nkids && pure_decl(body->kids[k]))
    k++;
  const ks_anode *s = k < body->nkids ? body->kids[k] : NULL;
  if (!s || s->kind != KS_AK_IF || s->nkids != 2) {
    sh->why = "no bounds check (if (i < n) ... or if (i >= n) return;) after the global index";
    return;
  }
  sh->check = s;
  sh->check_at = k;
  node_list terms = {0};
  ks_arena scratch = KS_ARENA_INIT;
  if (is_return_stmt(s->kids[1])) {
    sh->early_return = true;
    chain_terms(&scratch, s->kids[0], "||", &terms);
    for (size_t t = 0; t < terms.len && !sh->bound; t++)
      sh->bound = bound_term(terms.items[t], v, false);
  } else if (k + 1 == body->nkids) {
    chain_terms(&scratch, s->kids[0], "&&", &terms);
    for (size_t t = 0; t < terms.len && !sh->bound; t++)
      sh->bound = bound_term(terms.items[t], v, true);
  }
  ks_arena_release(&scratch);
  if (!sh->bound)
    sh->why = "the bounds check does not test the global index against a bound";
}

/* Can B be written as a guard: scalar parameters never modified, integer
 * literals, arithmetic and casts? */
typedef struct guardable_walk {
  const ks_anode *body;
  bool ok;
} guardable_walk;

static bool visit_guardable(ks_anode *n, void *arg) {
  guardable_walk *w = arg;
  if (n->from_macro) {
    w->ok = false;
    return false;
  }
  switch (n->kind) {
  case KS_AK_DECL_REF:
    if (!n->decl || n->decl->kind != KS_AK_PARAM || n->decl->is_pointer ||
        ks_rt_modified(w->body, n->decl))
      w->ok = false;
    break;
  case KS_AK_BINARY: {
    static const char *const ops[] = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"};
    bool known = false;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
      known |= n->op && !strcmp(n->op, ops[k]);
    w->ok &= known;
    break;
  }
  case KS_AK_INT_LITERAL:
  case KS_AK_PAREN:
  case KS_AK_CAST:
    break;
  default:
    if (!ks_rt_is_wrapper(n) && !(n->kind == KS_AK_OTHER && n->kind_name &&
                            strstr(n->kind_name, "Ref")))
      w->ok = false;
  }
  return w->ok;
}

static bool guardable(const ks_anode *body, const ks_anode *bound) {
  guardable_walk w = {body, true};
  ks_anode_walk((ks_anode *)bound, visit_guardable, &w);
  return w.ok;
}

/* The guard that the parent's launch covers every index below the bound in
 * dimension d: a rewrite whose threads reach further than the parent's must
 * not find work the parent never did. */
static const char *coverage_guard(ks_arena *arena, const ks_rule_policy *pol, int d,
                                  const char *bound) {
  return ks_arena_printf(arena, "%s * %s >= %s", ks_rt_paren(arena, pol->grid[d]),
                         ks_rt_paren(arena, pol->block[d]), ks_rt_paren(arena, bound));
}

static bool is_wide_type(const char *type) {
  return strstr(type, "long") || strstr(type, "size_t") || strstr(type, "64") ||
         strstr(type, "ptrdiff");
}

static const char *without_const(const char *type) {
  return !strncmp(type, "const ", 6) ? type + 6 : type;
}

/* The indentation unit of the body: the indentation of its first line. */
static const char *indent_unit(ks_arena *arena, const ks_rule_input *in, const ks_anode *first) {
  const char *ind = ks_rt_line_indent(arena, in->unit, first->begin);
  return *ind ? ind : "    ";
}

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

static void check_returns(const ks_anode *n, int loops, const char **problem) {
  if (!n || *problem)
    return;
  if (n->kind == KS_AK_RETURN && (loops > 0 || n->from_macro)) {
    *problem = n->from_macro ? "a return comes from a macro"
                             : "returns from inside a loop (continue would mean something else)";
    return;
  }
  bool loop = n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO;
  for (size_t k = 0; k < n->nkids; k++)
    check_returns(n->kids[k], loops + loop, problem);
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
  shape sh;
  find_shape(in, -1, &sh);
  if (sh.why)
    return ks_rt_not_applicable(arena, out, "%s", sh.why);
  const ks_anode *v = sh.var[sh.dim];
  const ks_anode *init = ks_rt_var_init(v);
  unsigned allowed[4];
  size_t nallowed = 0;
  for (int d = 0; d < 2; d++)
    if (sh.var[d]) {
      const ks_anode *i = ks_rt_var_init(sh.var[d]);
      allowed[2 * nallowed] = i->begin;
      allowed[2 * nallowed + 1] = i->end;
      nallowed++;
    }
  problem = ks_rt_mapping_problem(arena, in, allowed, nallowed);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  if (!guardable(sh.body, sh.bound))
    return ks_rt_not_applicable(arena, out,
                                "the bound '%s' is not made of scalar parameters and constants",
                                ks_rt_text_of(arena, in, sh.bound));
  const ks_anode *body = sh.body;
  const ks_anode *last = body->kids[body->nkids - 1];
  for (size_t k = sh.first; k < body->nkids && !problem; k++)
    check_returns(body->kids[k], 0, &problem);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  if (init->from_macro)
    return ks_rt_not_applicable(arena, out, "the global index comes from a macro");

  const char *kname = ks_rt_fresh(arena, in->unit, "ks_k");
  const char *type = without_const(v->type ? v->type : "int");
  const char *k_term =
      is_wide_type(type) ? ks_arena_printf(arena, "(%s)%s", type, kname) : kname;
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
  const char *unit = indent_unit(arena, in, first);
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
                  coverage_guard(arena, &pol, sh.dim, ks_rt_text_of(arena, in, sh.bound)));
  /* a 32-bit index of the last extra threads must not wrap (in y, grid and
   * block limits keep it far below) */
  if (sh.dim == 0 && !is_wide_type(type))
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

/* ---- vectorize ---------------------------------------------------------- */

/* Element types vectorize loads and stores; `family` names CUDA's vector
 * types of it (float4, uint2, ...), NULL where it has none with the same
 * element type (lanes are then read through a reinterpret_cast). */
static const struct {
  const char *c;
  size_t size;
  const char *family;
} elem_types[] = {
    {"float", 4, "float"},       {"double", 8, "double"},           {"int", 4, "int"},
    {"unsigned int", 4, "uint"}, {"unsigned", 4, "uint"},           {"unsigned char", 1, "uchar"},
    {"signed char", 1, "char"},  {"char", 1, NULL},                 {"short", 2, "short"},
    {"unsigned short", 2, "ushort"}, {"long long", 8, "longlong"},
    {"unsigned long long", 8, "ulonglong"}, {"long", 8, NULL},       {"unsigned long", 8, NULL},
    {"int8_t", 1, NULL},         {"uint8_t", 1, NULL},              {"int16_t", 2, NULL},
    {"uint16_t", 2, NULL},       {"int32_t", 4, NULL},              {"uint32_t", 4, NULL},
    {"int64_t", 8, NULL},        {"uint64_t", 8, NULL},             {"size_t", 8, NULL},
    {"__half", 2, NULL},         {"half", 2, NULL},                 {"__nv_bfloat16", 2, NULL},
};

typedef struct vbuf {
  const ks_anode *param;
  const char *elem;   /* element type without const */
  size_t size;        /* bytes; 0: not a type vectorize knows */
  const char *family;
  bool used, at_i_only, read, written, rmw, atomic, ldg, bad, macro;
  const char *bad_why;
  bool vec, load;
  const char *var, *vtype;
  bool lanes_xyzw;    /* lanes are .x .y .z .w */
} vbuf;

typedef struct vec_state {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *ivar;
  vbuf *bufs;
  size_t nbufs;
  bool *written;      /* per buffer, in the evaluation-order walk */
  const char *problem;
  const char *jname;  /* the lane loop's variable, or NULL: lane `j` */
  int j;
} vec_state;

static vbuf *buf_of(vec_state *s, const ks_anode *decl) {
  for (size_t k = 0; k < s->nbufs; k++)
    if (s->bufs[k].param == decl)
      return &s->bufs[k];
  return NULL;
}

/* The buffer of p[e] (through wrappers), or NULL. */
static vbuf *subscript_buf(vec_state *s, const ks_anode *sub) {
  sub = ks_rt_strip(sub, false);
  if (!sub || sub->kind != KS_AK_SUBSCRIPT || sub->nkids != 2)
    return NULL;
  const ks_anode *base = ks_rt_strip(sub->kids[0], false);
  return base && base->kind == KS_AK_DECL_REF && base->decl ? buf_of(s, base->decl) : NULL;
}

static bool result_unused(const ks_anode *call) {
  const ks_anode *child, *p = ks_rt_up(call, &child);
  if (!p || p->kind == KS_AK_COMPOUND)
    return true;
  if ((p->kind == KS_AK_IF || p->kind == KS_AK_WHILE) && p->nkids > 1 && child != p->kids[0])
    return true;
  if (p->kind == KS_AK_FOR && p->nkids == 4 && child == p->kids[3])
    return true;
  return false;
}

static bool user_function(const ks_rule_input *in, const char *name) {
  const char *b, *e;
  const char *end = in->unit + strlen(in->unit);
  return ks_rt_find_definition(in->unit, end, name, &b, &e, NULL, NULL);
}

static bool visit_vec_uses(ks_anode *n, void *arg) {
  vec_state *s = arg;
  if (n->kind != KS_AK_DECL_REF || !n->decl)
    return true;
  vbuf *b = buf_of(s, n->decl);
  if (!b)
    return true;
  b->used = true;
  b->macro |= n->from_macro;
  const ks_anode *child, *sub = ks_rt_up(n, &child);
  if (!sub || sub->kind != KS_AK_SUBSCRIPT || sub->nkids != 2 || child != sub->kids[0]) {
    b->bad = true;
    b->bad_why = "is used as a pointer, not only through its elements";
    return true;
  }
  if (!ks_rt_refers_to(sub->kids[1], s->ivar))
    b->at_i_only = false;
  b->macro |= sub->from_macro;
  const ks_anode *c2, *ctx = ks_rt_up(sub, &c2);
  if (ctx && ctx->kind == KS_AK_BINARY && ctx->op && !strcmp(ctx->op, "=") &&
      c2 == ctx->kids[0]) {
    b->written = true;
  } else if (ctx && ctx->kind == KS_AK_COMPOUND_ASSIGN && c2 == ctx->kids[0]) {
    b->rmw = true;
  } else if (ctx && ctx->kind == KS_AK_UNARY && ctx->op &&
             (!strcmp(ctx->op, "++") || !strcmp(ctx->op, "--"))) {
    b->rmw = true;
  } else if (ctx && ctx->kind == KS_AK_UNARY && ctx->op && !strcmp(ctx->op, "&")) {
    const ks_anode *c3, *call = ks_rt_up(ctx, &c3);
    if (call && call->kind == KS_AK_CALL && call->name && !strcmp(call->name, "__ldg") &&
        call->nkids == 1) {
      b->read = b->ldg = true;
    } else if (call && call->kind == KS_AK_CALL && call->name &&
               !strncmp(call->name, "atomic", 6) && call->nkids > 0 && c3 == call->kids[0] &&
               result_unused(call)) {
      b->atomic = true;
    } else {
      b->bad = true;
      b->bad_why = "has the address of an element taken";
    }
  } else if (ctx && ctx->kind == KS_AK_MEMBER) {
    b->bad = true;
    b->bad_why = "has members of its elements accessed";
  } else if (ctx && ctx->kind == KS_AK_CALL && ctx->name && user_function(s->in, ctx->name)) {
    b->bad = true;
    b->bad_why = "has an element passed to a function (perhaps by reference)";
  } else {
    b->read = true;
  }
  return true;
}

static void read_event(vec_state *s, vbuf *b) {
  if (!b || !b->vec || s->problem)
    return;
  for (size_t k = 0; k < s->nbufs; k++)
    if (s->written[k] && &s->bufs[k] != b)
      s->problem = ks_arena_printf(
          s->arena,
          "reads %s[%s] after writing %s: the vector loads would not see the write if the "
          "buffers overlap",
          b->param->name, s->ivar->name, s->bufs[k].param->name);
}

static void write_event(vec_state *s, vbuf *b) {
  if (b)
    s->written[b - s->bufs] = true;
}

/* The statements of one element in the order they run (assignments right
 * side first, loop bodies twice) to find a read that follows a write. */
static void eval_walk(vec_state *s, const ks_anode *n) {
  if (!n || s->problem)
    return;
  if ((n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) ||
      n->kind == KS_AK_COMPOUND_ASSIGN ||
      (n->kind == KS_AK_UNARY && n->op && (!strcmp(n->op, "++") || !strcmp(n->op, "--")))) {
    if (n->nkids > 1)
      eval_walk(s, n->kids[1]);
    const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
    vbuf *b = subscript_buf(s, lhs);
    if (b) {
      eval_walk(s, lhs->kids[1]);
      if (n->kind != KS_AK_BINARY)
        read_event(s, b);
      write_event(s, b);
    } else {
      eval_walk(s, n->kids[0]);
    }
    return;
  }
  if (n->kind == KS_AK_CALL && n->name && !strncmp(n->name, "atomic", 6) && n->nkids > 0) {
    for (size_t k = 1; k < n->nkids; k++)
      eval_walk(s, n->kids[k]);
    const ks_anode *a = ks_rt_strip(n->kids[0], false);
    if (a && a->kind == KS_AK_UNARY && a->op && !strcmp(a->op, "&") && subscript_buf(s, a->kids[0])) {
      const ks_anode *sub = ks_rt_strip(a->kids[0], false);
      eval_walk(s, sub->kids[1]);
      write_event(s, subscript_buf(s, sub));
    } else {
      eval_walk(s, n->kids[0]);
    }
    return;
  }
  if (n->kind == KS_AK_SUBSCRIPT && subscript_buf(s, n)) {
    eval_walk(s, n->kids[1]);
    read_event(s, subscript_buf(s, n));
    return;
  }
  int times = n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO ? 2 : 1;
  for (int t = 0; t < times; t++)
    for (size_t k = 0; k < n->nkids; k++)
      eval_walk(s, n->kids[k]);
}

static const char *lane_of(vec_state *s, vbuf *b) {
  if (s->jname)
    return ks_arena_printf(s->arena, "reinterpret_cast<%s *>(&%s)[%s]", b->elem, b->var, s->jname);
  if (b->lanes_xyzw)
    return ks_arena_printf(s->arena, "%s.%c", b->var, "xyzw"[s->j]);
  return ks_arena_printf(s->arena, "reinterpret_cast<%s *>(&%s)[%d]", b->elem, b->var, s->j);
}

static const char *vec_replace(const ks_anode *n, void *arg) {
  vec_state *s = arg;
  const ks_anode *sub = NULL;
  if (n->kind == KS_AK_SUBSCRIPT) {
    sub = n;
  } else if (n->kind == KS_AK_CALL && n->name && !strcmp(n->name, "__ldg") && n->nkids == 1) {
    const ks_anode *a = ks_rt_strip(n->kids[0], false);
    if (a && a->kind == KS_AK_UNARY && a->op && !strcmp(a->op, "&"))
      sub = ks_rt_strip(a->kids[0], false);
  }
  vbuf *b = sub ? subscript_buf(s, sub) : NULL;
  if (!b || !b->vec || !ks_rt_refers_to(sub->kids[1], s->ivar))
    return NULL;
  return lane_of(s, b);
}

/* Is p[i] = ... one of the statements `stmts` (so every lane is written)? */
static bool assigned_at_top(vec_state *s, vbuf *b, const ks_anode *const *stmts, size_t n) {
  for (size_t k = 0; k < n; k++) {
    const ks_anode *e = ks_rt_strip(stmts[k], false);
    if (e && e->kind == KS_AK_BINARY && e->op && !strcmp(e->op, "=") &&
        subscript_buf(s, e->kids[0]) == b &&
        ks_rt_refers_to(ks_rt_strip(e->kids[0], false)->kids[1], s->ivar))
      return true;
  }
  return false;
}

typedef struct var_ref {
  const ks_anode *var;
  bool found;
} var_ref;

static bool visit_var_ref(ks_anode *n, void *arg) {
  var_ref *r = arg;
  if (n->kind == KS_AK_DECL_REF && n->decl == r->var)
    r->found = true;
  return !r->found;
}

static bool uses_var(const ks_anode *e, const ks_anode *var) {
  var_ref r = {var, false};
  ks_anode_walk((ks_anode *)e, visit_var_ref, &r);
  return r.found;
}

static const int vectorize_choices[] = {16};

static int apply_vectorize(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                           ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param != 16)
    return ks_rt_not_applicable(arena, out, "vectors of %d bytes: only 16 is known", param);
  const char *problem = ks_rt_mapping_problem(arena, in, NULL, 0);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  shape sh;
  find_shape(in, 0, &sh);
  if (sh.why)
    return ks_rt_not_applicable(arena, out, "%s", sh.why);
  if (sh.var[1])
    return ks_rt_not_applicable(arena, out, "a 2-D kernel (it has a y index)");
  const ks_anode *body = sh.body, *iv = sh.var[0], *init = ks_rt_var_init(iv);
  unsigned allowed[2] = {init->begin, init->end};
  problem = ks_rt_mapping_problem(arena, in, allowed, 1);
  /* A kernel whose work depends on its block (a per-block offset, block 0
   * left alone) keeps its grid: each block gets 1/V of the threads, each
   * doing V of the block's elements. */
  bool narrow = false;
  if (problem && strstr(problem, "reads blockIdx")) {
    problem = ks_rt_block_mapping_problem(arena, in, allowed, 1);
    narrow = true;
  }
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  if (sh.check_at != sh.first + 1)
    return ks_rt_not_applicable(arena, out, "declarations between the index and its bounds check");
  node_list terms = {0};
  chain_terms(arena, sh.check->kids[0], sh.early_return ? "||" : "&&", &terms);
  /* The bound's term, and others that do not depend on the element (block
   * 0 skipped, a flag): they are tested once per thread. */
  ks_buf others = KS_BUF_INIT;
  size_t nbound = 0;
  for (size_t k = 0; k < terms.len; k++) {
    const ks_anode *t = terms.items[k];
    bool impure = false;
    ks_anode_walk((ks_anode *)t, visit_impure, &impure);
    if (uses_var(t, iv)) {
      nbound++;
      continue;
    }
    if (impure) {
      ks_buf_release(&others);
      return ks_rt_not_applicable(arena, out, "the bounds check's term '%s' reads memory or "
                                  "calls", ks_rt_text_of(arena, in, t));
    }
    ks_buf_addf(&others, "%s%s", others.len ? (sh.early_return ? " || " : " && ") : "",
                ks_rt_text_of(arena, in, t));
  }
  const char *other_terms = others.len ? ks_arena_strdup(arena, others.data) : NULL;
  ks_buf_release(&others);
  if (nbound != 1)
    return ks_rt_not_applicable(arena, out, "the bounds check tests more than %s against a bound",
                                iv->name);
  if (!guardable(body, sh.bound))
    return ks_rt_not_applicable(arena, out,
                                "the bound '%s' is not made of scalar parameters and constants",
                                ks_rt_text_of(arena, in, sh.bound));
  /* the element's statements: the checked statement, or what follows the
   * early return */
  const ks_anode *const *stmts;
  size_t nstmts;
  const ks_anode *then = sh.check->kids[1];
  if (sh.early_return) {
    stmts = (const ks_anode *const *)body->kids + sh.check_at + 1;
    nstmts = body->nkids - sh.check_at - 1;
  } else if (then->kind == KS_AK_COMPOUND) {
    stmts = (const ks_anode *const *)then->kids;
    nstmts = then->nkids;
  } else {
    stmts = (const ks_anode *const *)&sh.check->kids[1];
    nstmts = 1;
  }
  if (!nstmts)
    return ks_rt_not_applicable(arena, out, "nothing is done per element");
  for (size_t k = 0; k < nstmts && !problem; k++)
    check_returns(stmts[k], 1, &problem);
  if (problem)
    return ks_rt_not_applicable(arena, out, "returns inside the element's work");

  /* the buffers and how they are used */
  vec_state s = {.arena = arena, .in = in, .ivar = iv};
  s.bufs = ks_arena_alloc(arena, (in->ast->nparams + 1) * sizeof *s.bufs);
  s.written = ks_arena_alloc(arena, (in->ast->nparams + 1) * sizeof *s.written);
  for (size_t k = 0; k < in->ast->nparams; k++) {
    const ks_anode *p = in->ast->params[k];
    if (!p->is_pointer || !p->name)
      continue;
    vbuf *b = &s.bufs[s.nbufs++];
    b->param = p;
    b->at_i_only = true;
    const char *pointee = p->pointee ? p->pointee : "";
    b->elem = without_const(pointee);
    for (size_t t = 0; t < sizeof elem_types / sizeof *elem_types; t++)
      if (!strcmp(b->elem, elem_types[t].c)) {
        b->size = elem_types[t].size;
        b->family = elem_types[t].family;
      }
    if (strstr(pointee, "volatile"))
      b->size = 0;
  }
  ks_anode_walk((ks_anode *)body, visit_vec_uses, &s);
  size_t largest = 0, nvec = 0;
  for (size_t k = 0; k < s.nbufs; k++) {
    vbuf *b = &s.bufs[k];
    if (!b->used)
      continue;
    const char *name = b->param->name;
    if (b->bad)
      return ks_rt_not_applicable(arena, out, "%s %s", name, b->bad_why);
    if ((b->written || b->rmw) && !b->at_i_only)
      return ks_rt_not_applicable(arena, out,
                                  "writes %s at an index other than %s (another thread may read "
                                  "it)",
                                  name, iv->name);
    if (b->atomic && (b->read || b->written || b->rmw))
      return ks_rt_not_applicable(arena, out, "%s is both updated atomically and accessed", name);
    b->vec = b->at_i_only && !b->atomic && !b->macro && b->size > 0;
    if (b->vec) {
      nvec++;
      if (b->size > largest)
        largest = b->size;
    }
  }
  if (!nvec) {
    for (size_t k = 0; k < s.nbufs; k++)
      if (s.bufs[k].used && s.bufs[k].at_i_only && !s.bufs[k].size)
        return ks_rt_not_applicable(arena, out, "%s[%s]: element type '%s' has no vector type",
                                    s.bufs[k].param->name, iv->name, s.bufs[k].elem);
    return ks_rt_not_applicable(arena, out, "no buffer is accessed only at [%s]", iv->name);
  }
  int V = (int)(16 / largest);
  if (V < 2)
    return ks_rt_not_applicable(arena, out, "elements of 16 bytes are vectors already");
  for (size_t k = 0; k < nstmts; k++)
    eval_walk(&s, stmts[k]);
  if (s.problem)
    return ks_rt_not_applicable(arena, out, "%s", s.problem);

  /* names, types, loads */
  bool loop_mode = V > 4;
  static const char *const by_bytes[] = {NULL, NULL, "unsigned short", NULL, "unsigned int",
                                         NULL, NULL, NULL, "uint2", NULL, NULL, NULL, NULL, NULL,
                                         NULL, NULL, "uint4"};
  for (size_t k = 0; k < s.nbufs; k++) {
    vbuf *b = &s.bufs[k];
    if (!b->vec)
      continue;
    b->var = ks_rt_fresh(arena, in->unit, ks_arena_printf(arena, "ks_%s", b->param->name));
    size_t bytes = b->size * (size_t)V;
    if (!loop_mode && b->family && (V == 2 || V == 4) && bytes <= 16) {
      b->vtype = ks_arena_printf(arena, "%s%d", b->family, V);
      b->lanes_xyzw = true;
    } else {
      b->vtype = by_bytes[bytes];
    }
    b->load = b->read || b->rmw || !assigned_at_top(&s, b, stmts, nstmts);
  }

  const char *ind = ks_rt_line_indent(arena, in->unit, body->kids[sh.first]->begin);
  const char *u = indent_unit(arena, in, body->kids[sh.first]);
  const char *ind1 = ks_arena_printf(arena, "%s%s", ind, u);
  const char *ind2 = ks_arena_printf(arena, "%s%s", ind1, u);
  const char *type = without_const(iv->type ? iv->type : "int");
  const char *base = ks_rt_fresh(arena, in->unit, "ks_base");
  const char *bound = ks_rt_text_of(arena, in, sh.bound);
  const char *pb = ks_rt_paren(arena, bound);
  ks_buf o = KS_BUF_INIT;
  /* the first element in 64 bits: a 32-bit one could wrap past the bound */
  if (is_wide_type(type))
    ks_buf_addf(&o, "%s %s = (%s) * %d;\n", type, base, ks_rt_text_of(arena, in, init), V);
  else
    ks_buf_addf(&o, "%s %s = (%s)(%s) * %d;\n",
                strstr(type, "unsigned") ? "unsigned long long" : "long long", base,
                strstr(type, "unsigned") ? "unsigned long long" : "long long",
                ks_rt_text_of(arena, in, init), V);
  if (other_terms)
    ks_buf_addf(&o, sh.early_return ? "%sif (%s)\n%s%sreturn;\n" : "%sif (!(%s))\n%s%sreturn;\n",
                ind, other_terms, ind, u);
  ks_buf_addf(&o, "%sif (%s < %s && %s - %s >= %d) {\n", ind, base, pb, pb, base, V);
  for (size_t k = 0; k < s.nbufs; k++) {
    vbuf *b = &s.bufs[k];
    if (!b->vec)
      continue;
    if (!b->load)
      ks_buf_addf(&o, "%s%s %s;\n", ind1, b->vtype, b->var);
    else if (b->ldg)
      ks_buf_addf(&o, "%s%s %s = __ldg(reinterpret_cast<const %s *>(%s + %s));\n", ind1, b->vtype,
                  b->var, b->vtype, b->param->name, base);
    else
      ks_buf_addf(&o, "%s%s %s = *reinterpret_cast<const %s *>(%s + %s);\n", ind1, b->vtype,
                  b->var, b->vtype, b->param->name, base);
  }
  /* the element's work, once per lane */
  unsigned s_begin = stmts[0]->begin, s_end = ks_rt_stmt_end(in->unit, stmts[nstmts - 1]);
  const ks_anode *span_parent = sh.early_return ? body : (then->kind == KS_AK_COMPOUND ? then : NULL);
  int copies = loop_mode ? 1 : V;
  if (loop_mode) {
    s.jname = ks_rt_fresh(arena, in->unit, "ks_j");
    ks_buf_addf(&o, "%s#pragma unroll\n%sfor (int %s = 0; %s < %d; ++%s) ", ind1, ind1, s.jname,
                s.jname, V, s.jname);
  }
  for (int j = 0; j < copies; j++) {
    s.j = j;
    ks_buf work = KS_BUF_INIT;
    if (span_parent) {
      ks_rt_render_span(&work, in, span_parent, s_begin, s_end, vec_replace, &s);
    } else {
      ks_rt_render(&work, in->unit, then, vec_replace, &s);
      if (ks_rt_stmt_end(in->unit, then) > then->end)
        ks_buf_addc(&work, ';');
    }
    const char *index_decl =
        !ks_rt_has_identifier(work.data, iv->name) ? NULL
        : loop_mode ? ks_arena_printf(arena, "%s %s = %s + %s;", type, iv->name, base, s.jname)
        : j == 0    ? ks_arena_printf(arena, "%s %s = %s;", type, iv->name, base)
                    : ks_arena_printf(arena, "%s %s = %s + %d;", type, iv->name, base, j);
    if (!loop_mode)
      ks_buf_adds(&o, ind1);
    if (span_parent) {
      const char *more = sh.early_return ? ks_arena_printf(arena, "%s%s", u, u) : u;
      bool single = !index_decl && nstmts == 1 && !strchr(work.data, '\n');
      if (single)
        ks_buf_addf(&o, "%s\n", work.data);
      else
        ks_buf_addf(&o, "{\n%s%s%s%s\n%s}\n", ind2, index_decl ? index_decl : "",
                    index_decl ? ks_arena_printf(arena, "\n%s", ind2) : "",
                    ks_rt_indent_more(arena, work.data, more), ind1);
    } else if (index_decl) {
      ks_buf_addf(&o, "{ %s %s }\n", index_decl, ks_rt_indent_more(arena, work.data, u));
    } else {
      ks_buf_addf(&o, "%s\n", ks_rt_indent_more(arena, work.data, u));
    }
    ks_buf_release(&work);
  }
  for (size_t k = 0; k < s.nbufs; k++) {
    vbuf *b = &s.bufs[k];
    if (b->vec && (b->written || b->rmw))
      ks_buf_addf(&o, "%s*reinterpret_cast<%s *>(%s + %s) = %s;\n", ind1, b->vtype,
                  b->param->name, base, b->var);
  }
  /* the tail: the original work, one element at a time */
  ks_buf_addf(&o, "%s} else {\n%sfor (%s %s = %s; %s < %s; ++%s)", ind, ind1, type, iv->name, base,
              iv->name, bound, iv->name);
  ks_buf tail = KS_BUF_INIT;
  if (sh.early_return) {
    ks_rt_render_span(&tail, in, body, s_begin, s_end, NULL, NULL);
    ks_buf_addf(&o, " {\n%s%s\n%s}\n", ind2,
                ks_rt_indent_more(arena, tail.data, ks_arena_printf(arena, "%s%s", u, u)), ind1);
  } else {
    ks_rt_render(&tail, in->unit, then, NULL, NULL);
    ks_buf_addf(&o, " %s%s\n", ks_rt_indent_more(arena, tail.data, u),
                ks_rt_stmt_end(in->unit, then) > then->end ? ";" : "");
  }
  ks_buf_release(&tail);
  ks_buf_addf(&o, "%s}", ind);

  unsigned region_end = ks_rt_stmt_end(in->unit, sh.early_return ? body->kids[body->nkids - 1]
                                                                  : sh.check);
  ks_edits edits = {0};
  ks_edits_add(arena, &edits, ks_rt_src_at(in, body->kids[sh.first]->begin), ks_rt_src_at(in, region_end),
               ks_arena_strdup(arena, o.data));
  ks_buf_release(&o);
  if (ks_rt_finish(ctx, in, arena, &edits, ks_arena_printf(arena, "vec%d", V), out))
    return -1;
  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return -1;
  ks_rule_require(arena, &out->child, coverage_guard(arena, &pol, 0, bound));
  for (size_t k = 0; k < s.nbufs; k++)
    if (s.bufs[k].vec)
      ks_rule_require(arena, &out->child,
                      ks_arena_printf(arena, "aligned(%s, %zu)", s.bufs[k].param->name,
                                      s.bufs[k].size * (size_t)V));
  if (narrow) {
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "%s %% %d == 0", ks_rt_paren(arena, pol.block[0]), V));
    pol.block[0] = ks_arena_printf(arena, "%s / %d", ks_rt_paren(arena, pol.block[0]), V);
  } else {
    pol.grid[0] = ks_arena_printf(arena, "ceil_div(%s, %d)", pol.grid[0], V);
  }
  ks_rule_policy_write(arena, &pol, &out->child);
  return 0;
}

const ks_rule ks_rule_vectorize = {
    "vectorize",
    "each thread handles 16 bytes of every buffer it accesses at [i], with vector loads and "
    "stores and a scalar tail",
    false,
    vectorize_choices,
    sizeof vectorize_choices / sizeof *vectorize_choices,
    apply_vectorize};

/* ---- restrict ----------------------------------------------------------- */

/* Element types __ldg has an overload for (sm_32_intrinsics.h, cuda_fp16,
 * cuda_bf16). */
static bool ldg_type(const char *t) {
  static const char *const types[] = {
      "float", "double", "int", "unsigned int", "unsigned", "char", "signed char",
      "unsigned char", "short", "unsigned short", "long", "unsigned long", "long long",
      "unsigned long long", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
      "int64_t", "uint64_t", "size_t", "float2", "float4", "double2", "int2", "int4", "uint2",
      "uint4", "char2", "char4", "uchar2", "uchar4", "short2", "short4", "ushort2", "ushort4",
      "longlong2", "ulonglong2", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
  };
  for (size_t k = 0; k < sizeof types / sizeof *types; k++)
    if (!strcmp(t, types[k]))
      return true;
  return false;
}

typedef struct restrict_state {
  ks_arena *arena;
  const ks_rule_input *in;
  int depth;
} restrict_state;

static bool ptr_written(restrict_state *s, const ks_anode *e);

static bool is_op(const ks_anode *n, ks_akind kind, const char *op) {
  return n && n->kind == kind && n->op && !strcmp(n->op, op);
}

/* Is the element `elem` (an lvalue of the buffer) written where it is used? */
static bool elem_written(restrict_state *s, const ks_anode *elem) {
  const ks_anode *c, *p = ks_rt_up(elem, &c);
  if (!p)
    return false;
  switch (p->kind) {
  case KS_AK_BINARY:
    return !strcmp(p->op ? p->op : "", "=") && c == p->kids[0];
  case KS_AK_COMPOUND_ASSIGN:
    return c == p->kids[0];
  case KS_AK_UNARY:
    if (is_op(p, KS_AK_UNARY, "++") || is_op(p, KS_AK_UNARY, "--"))
      return true;
    return is_op(p, KS_AK_UNARY, "&") ? ptr_written(s, p) : false;
  case KS_AK_MEMBER:
    return p->arrow ? false : elem_written(s, p);
  case KS_AK_SUBSCRIPT:
    return c == p->kids[0] ? elem_written(s, p) : false;
  case KS_AK_CALL:
    /* a function of the user's may take it by reference */
    return p->name ? user_function(s->in, p->name) : true;
  case KS_AK_VAR:
    return p->type && strchr(p->type, '&');
  default:
    return false;
  }
}

typedef struct refs_walk {
  const ks_anode *decl;
  KS_ARRAY(const ks_anode *) refs;
  ks_arena *arena;
} refs_walk;

static bool visit_refs(ks_anode *n, void *arg) {
  refs_walk *w = arg;
  if (n->kind == KS_AK_DECL_REF && n->decl == w->decl)
    *ks_array_push(w->arena, &w->refs) = n;
  return true;
}

/* A local pointer that holds an address into the buffer: written through? */
static bool var_written(restrict_state *s, const ks_anode *var) {
  if (s->depth > 8 || ks_rt_modified(s->in->ast->body, var))
    return true;
  refs_walk w = {.decl = var, .arena = s->arena};
  ks_anode_walk(s->in->ast->body, visit_refs, &w);
  s->depth++;
  bool written = false;
  for (size_t k = 0; k < w.refs.len && !written; k++)
    written = ptr_written(s, w.refs.items[k]);
  s->depth--;
  return written;
}

static bool const_pointer_type(const char *type) {
  if (!type)
    return false;
  const char *star = strchr(type, '*');
  return star && !strchr(star + 1, '*') && !strncmp(type, "const ", 6);
}

/* Is memory written through the pointer value `e` (the parameter, or an
 * address computed from it)? Anything not known to be a read is a write. */
static bool ptr_written(restrict_state *s, const ks_anode *e) {
  const ks_anode *c, *p = ks_rt_up(e, &c);
  if (!p)
    return true;
  switch (p->kind) {
  case KS_AK_SUBSCRIPT:
    return c == p->kids[0] ? elem_written(s, p) : false;
  case KS_AK_UNARY:
    if (is_op(p, KS_AK_UNARY, "*"))
      return elem_written(s, p);
    return !is_op(p, KS_AK_UNARY, "!");
  case KS_AK_MEMBER:
    return p->arrow ? elem_written(s, p) : true;
  case KS_AK_BINARY: {
    static const char *const compare[] = {"==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    for (size_t k = 0; k < sizeof compare / sizeof *compare; k++)
      if (!strcmp(p->op ? p->op : "", compare[k]))
        return false;
    if (is_op(p, KS_AK_BINARY, "+") || is_op(p, KS_AK_BINARY, "-"))
      return ptr_written(s, p);
    if (is_op(p, KS_AK_BINARY, "=") && c == p->kids[1]) {
      const ks_anode *lhs = ks_rt_strip(p->kids[0], false);
      return !(lhs && lhs->kind == KS_AK_DECL_REF && lhs->decl && lhs->decl->kind == KS_AK_VAR &&
               !var_written(s, lhs->decl));
    }
    return true;
  }
  case KS_AK_CAST:
    return const_pointer_type(p->type) ? false : ptr_written(s, p);
  case KS_AK_CONDITIONAL:
    return c == p->kids[0] ? false : ptr_written(s, p);
  case KS_AK_CALL:
    if (p->name && (!strcmp(p->name, "__ldg") || !strcmp(p->name, "__ldcs") ||
                    !strcmp(p->name, "__ldca") || !strcmp(p->name, "__ldcg") ||
                    !strcmp(p->name, "__ldlu") || !strcmp(p->name, "__ldcv")))
      return false;
    return true;
  case KS_AK_VAR:
    return var_written(s, p);
  default:
    return true;
  }
}

typedef struct ldg_state {
  const char *unit;
  KS_ARRAY(const ks_anode *) subs;   /* p[e] read: __ldg(&p[e]) */
  KS_ARRAY(const ks_anode *) derefs; /* *(const V *)(p + e) read: __ldg((const V *)(p + e)) */
  ks_arena *arena;
} ldg_state;

static const char *ldg_replace(const ks_anode *n, void *arg) {
  ldg_state *s = arg;
  for (size_t k = 0; k < s->subs.len; k++)
    if (s->subs.items[k] == n) {
      ks_buf b = KS_BUF_INIT;
      ks_buf_adds(&b, "__ldg(&");
      ks_rt_render_range(&b, s->unit, n, n->begin, n->end, ldg_replace, s);
      ks_buf_adds(&b, ")");
      const char *r = ks_arena_strdup(s->arena, b.data);
      ks_buf_release(&b);
      return r;
    }
  for (size_t k = 0; k < s->derefs.len; k++)
    if (s->derefs.items[k] == n) {
      ks_buf b = KS_BUF_INIT;
      ks_buf_adds(&b, "__ldg(");
      ks_rt_render(&b, s->unit, n->kids[0], ldg_replace, s);
      ks_buf_adds(&b, ")");
      const char *r = ks_arena_strdup(s->arena, b.data);
      ks_buf_release(&b);
      return r;
    }
  return NULL;
}

/* Reads of a const __restrict__ parameter that __ldg can take. */
static void find_ldg_reads(restrict_state *rs, const ks_anode *param, ldg_state *ls) {
  refs_walk w = {.decl = param, .arena = rs->arena};
  ks_anode_walk(rs->in->ast->body, visit_refs, &w);
  const char *elem = without_const(param->pointee ? param->pointee : "");
  for (size_t k = 0; k < w.refs.len; k++) {
    const ks_anode *ref = w.refs.items[k], *c, *p = ks_rt_up(ref, &c);
    if (!p || ref->from_macro)
      continue;
    if (p->kind == KS_AK_SUBSCRIPT && c == p->kids[0] && !p->from_macro && ldg_type(elem)) {
      const ks_anode *c2, *ctx = ks_rt_up(p, &c2);
      bool plain = !elem_written(rs, p) &&
                   !(ctx && (ctx->kind == KS_AK_MEMBER || is_op(ctx, KS_AK_UNARY, "&")));
      if (plain)
        *ks_array_push(rs->arena, &ls->subs) = p;
      continue;
    }
    /* *reinterpret_cast<const float4 *>(p + e), as vectorize writes it */
    if (is_op(p, KS_AK_BINARY, "+")) {
      const ks_anode *c2, *cast = ks_rt_up(p, &c2);
      if (!cast || cast->kind != KS_AK_CAST || !const_pointer_type(cast->type))
        continue;
      const ks_anode *c3, *deref = ks_rt_up(cast, &c3);
      if (!is_op(deref, KS_AK_UNARY, "*") || deref->from_macro || elem_written(rs, deref))
        continue;
      const ks_anode *c4, *ctx = ks_rt_up(deref, &c4);
      if (ctx && (ctx->kind == KS_AK_MEMBER || is_op(ctx, KS_AK_UNARY, "&")))
        continue;
      char vt[64];
      snprintf(vt, sizeof vt, "%s", cast->type + 6);
      char *star = strchr(vt, '*');
      if (!star)
        continue;
      while (star > vt && star[-1] == ' ')
        star--;
      *star = '\0';
      if (ldg_type(vt))
        *ks_array_push(rs->arena, &ls->derefs) = deref;
    }
  }
}

/* Where the parameter's name starts in its text, or 0. */
static unsigned param_name_at(const ks_rule_input *in, const ks_anode *p) {
  size_t n = strlen(p->name);
  for (unsigned at = p->end; at >= p->begin + n; at--) {
    const char *q = in->unit + at - n;
    if (!strncmp(q, p->name, n) && !ks_ctext_is_ident_char(q[n]) &&
        (q == in->unit || !ks_ctext_is_ident_char(q[-1])))
      return at - (unsigned)n;
  }
  return 0;
}

static int apply_restrict(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                          ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  const ks_kast *ast = in->ast;
  size_t np = ast->nparams;
  bool *written = ks_arena_alloc(arena, (np + 1) * sizeof *written);
  bool *added = ks_arena_alloc(arena, (np + 1) * sizeof *added);
  bool *now_const = ks_arena_alloc(arena, (np + 1) * sizeof *now_const);
  restrict_state rs = {.arena = arena, .in = in};
  ks_edits edits = {0};
  int nconst = 0, nrestrict = 0;
  for (size_t k = 0; k < np; k++) {
    const ks_anode *p = ast->params[k];
    if (!p->is_pointer || !p->name)
      continue;
    written[k] = true;
    const char *pointee = p->pointee ? p->pointee : "";
    const char *ptext = ks_rt_text_of(arena, in, p);
    bool simple = !p->from_macro && !strchr(pointee, '*') && !strchr(pointee, '[') &&
                  !strstr(pointee, "volatile") && strchr(ptext, '*');
    if (!simple)
      continue; /* left alone; still counted as written for the guards */
    written[k] = var_written(&rs, p);
    now_const[k] = p->is_const;
    if (!written[k] && !p->is_const) {
      ks_edits_add(arena, &edits, ks_rt_src_at(in, p->begin), ks_rt_src_at(in, p->begin), "const ");
      now_const[k] = true;
      nconst++;
    }
    if (!p->is_restrict) {
      unsigned at = param_name_at(in, p);
      if (!at)
        continue;
      ks_edits_add(arena, &edits, ks_rt_src_at(in, at), ks_rt_src_at(in, at), "__restrict__ ");
      added[k] = true;
      nrestrict++;
    }
  }
  /* __ldg for the reads of const __restrict__ parameters */
  ldg_state ls = {.unit = in->unit, .arena = arena};
  for (size_t k = 0; k < np; k++) {
    const ks_anode *p = ast->params[k];
    if (p->is_pointer && p->name && now_const[k] && (p->is_restrict || added[k]) && !written[k])
      find_ldg_reads(&rs, p, &ls);
  }
  if (!nconst && !nrestrict && !ls.subs.len && !ls.derefs.len)
    return ks_rt_not_applicable(arena, out,
                                "nothing to add: every pointer parameter is __restrict__, const "
                                "where it is only read, and read through __ldg");
  if (ls.subs.len || ls.derefs.len) {
    const ks_anode *body = ast->body;
    const char *text = ks_rt_render_str(arena, in->unit, body, ldg_replace, &ls);
    ks_edits_add(arena, &edits, ks_rt_src_at(in, body->begin), ks_rt_src_at(in, body->end), text);
  }
  const char *technique = ks_arena_printf(arena, "restrict%s", ls.subs.len || ls.derefs.len ? "+ldg" : "");
  if (ks_rt_finish(ctx, in, arena, &edits, technique, out))
    return -1;
  /* __restrict__ promises that no other pointer reaches what this one
   * writes or what another writes: one disjoint() guard per such pair */
  for (size_t a = 0; a < np; a++)
    for (size_t b = a + 1; b < np; b++) {
      const ks_anode *p = ast->params[a], *q = ast->params[b];
      if (!p->is_pointer || !q->is_pointer || !p->name || !q->name)
        continue;
      if ((added[a] || added[b]) && (written[a] || written[b]))
        ks_rule_require(arena, &out->child,
                        ks_arena_printf(arena, "disjoint(%s, %s)", p->name, q->name));
    }
  return 0;
}

const ks_rule ks_rule_restrict = {
    "restrict",
    "__restrict__ on pointer parameters, const where only read, __ldg for those reads; "
    "guarded by disjoint()",
    false,
    NULL,
    0,
    apply_restrict};
