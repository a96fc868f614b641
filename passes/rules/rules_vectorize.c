/* rules_vectorize: `vectorize`, each thread handles V consecutive elements
 * with 16-byte loads and stores and a scalar tail for the rest (a kernel
 * whose work depends on its block keeps its grid, with fewer threads per
 * block). It matches the kernel's shape (rules_shape.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_shape.h"
#include "rules_tree.h"

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
  } else if (ctx && ctx->kind == KS_AK_CALL && ctx->name && ks_shape_user_function(s->in, ctx->name)) {
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
  ks_shape sh;
  ks_shape_find(ctx, arena, in, 0, &sh);
  if (sh.why)
    return ks_rt_not_applicable(arena, out, "%s", sh.why);
  if (sh.var[1])
    return ks_rt_not_applicable(arena, out, "a 2-D kernel (it has a y index)");
  const ks_anode *body = sh.body, *iv = sh.var[0], *init = ks_rt_var_init(iv);
  unsigned allowed[8];
  size_t nallowed = ks_shape_allowed(&sh, allowed);
  problem = ks_rt_mapping_problem(arena, in, allowed, nallowed);
  /* A kernel whose work depends on its block (a per-block offset, block 0
   * left alone) keeps its grid: each block gets 1/V of the threads, each
   * doing V of the block's elements. */
  bool narrow = false;
  if (problem && strstr(problem, "reads blockIdx") && !sh.alias) {
    problem = ks_rt_block_mapping_problem(arena, in, allowed, nallowed);
    narrow = true;
  }
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  if (sh.check_at != sh.first + 1)
    return ks_rt_not_applicable(arena, out, "declarations between the index and its bounds check");
  ks_node_list terms = {0};
  ks_shape_chain_terms(arena, sh.check->kids[0], sh.early_return ? "||" : "&&", &terms);
  /* The bound's term, and others that do not depend on the element (block
   * 0 skipped, a flag): they are tested once per thread. */
  ks_buf others = KS_BUF_INIT;
  size_t nbound = 0;
  for (size_t k = 0; k < terms.len; k++) {
    const ks_anode *t = terms.items[k];
    bool impure = false;
    ks_anode_walk((ks_anode *)t, ks_shape_visit_impure, &impure);
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
  /* the guards get the bound folded (a macro or a local is not a name
   * they know); the kernel keeps it as written */
  const char *bound_why = NULL;
  const char *bound_guard = ks_shape_bound_guard(ctx, arena, in, sh.bound, &bound_why);
  if (!bound_guard)
    return ks_rt_not_applicable(arena, out, "%s", bound_why);
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
    ks_shape_check_returns(stmts[k], 1, &problem);
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
    b->elem = ks_shape_without_const(pointee);
    /* A typedef (`typedef float DATA_TYPE`) is its canonical type; the
     * rewrite keeps the name as written. */
    const char *canon = ks_shape_without_const(p->canon_pointee ? p->canon_pointee : pointee);
    for (size_t t = 0; t < sizeof elem_types / sizeof *elem_types; t++)
      if (!strcmp(b->elem, elem_types[t].c) || !strcmp(canon, elem_types[t].c)) {
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
  const char *u = ks_shape_indent_unit(arena, in, body->kids[sh.first]);
  const char *ind1 = ks_arena_printf(arena, "%s%s", ind, u);
  const char *ind2 = ks_arena_printf(arena, "%s%s", ind1, u);
  const char *type = ks_shape_without_const(iv->type ? iv->type : "int");
  const char *base = ks_rt_fresh(arena, in->unit, "ks_base");
  const char *bound = ks_rt_text_of(arena, in, sh.bound);
  /* a macro's body may hold operators that bind looser than ours */
  if (sh.bound->from_macro)
    bound = ks_arena_printf(arena, "(%s)", bound);
  const char *pb = sh.bound->from_macro ? bound : ks_rt_paren(arena, bound);
  ks_buf o = KS_BUF_INIT;
  /* the first element in 64 bits: a 32-bit one could wrap past the bound */
  if (ks_shape_is_wide_type(type))
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
  ks_rule_require(arena, &out->child, ks_shape_coverage_guard(arena, &pol, 0, bound_guard));
  if (sh.requires)
    ks_rule_require(arena, &out->child, sh.requires);
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
