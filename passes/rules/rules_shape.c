/* rules_shape: the shape coarsen, vectorize and restrict match
 * (rules_shape.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_meaning.h"
#include "rules_shape.h"
#include "rules_tree.h"

/* ---- the ks_shape of a kernel: global indexes and the bounds check --------- */


/* `v < B` / `B > v` (want_less) or `v >= B` / `B <= v`: B, or NULL. */
const ks_anode *ks_shape_bound_term(const ks_anode *t, const ks_anode *var, bool want_less) {
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
void ks_shape_chain_terms(ks_arena *arena, const ks_anode *e, const char *op, ks_node_list *out) {
  const ks_anode *s = ks_rt_strip(e, false);
  if (s && s->kind == KS_AK_BINARY && s->op && !strcmp(s->op, op) && s->nkids == 2) {
    ks_shape_chain_terms(arena, s->kids[0], op, out);
    ks_shape_chain_terms(arena, s->kids[1], op, out);
  } else {
    *ks_array_push(arena, out) = e;
  }
}

/* A statement that only computes values: a declaration whose initializers
 * read no memory, call nothing and assign nothing. */
bool ks_shape_visit_impure(ks_anode *n, void *arg) {
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

bool ks_shape_pure_decl(const ks_anode *s) {
  if (s->kind != KS_AK_DECL_STMT)
    return false;
  bool impure = false;
  ks_anode_walk((ks_anode *)s, ks_shape_visit_impure, &impure);
  return !impure;
}


/* A local alias `v` (never assigned) read nowhere but inside [from, to). */
static bool alias_only_in(const ks_anode *body, const ks_anode *v, unsigned from, unsigned to) {
  ks_arena scratch = KS_ARENA_INIT;
  ks_rt_nodes all = ks_rt_collect(&scratch, body);
  bool ok = !ks_rt_modified(body, v);
  for (size_t i = 0; i < all.len && ok; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind == KS_AK_DECL_REF && n->decl == v && (n->begin < from || n->end > to))
      ok = false;
  }
  ks_arena_release(&scratch);
  return ok;
}

/* `e` as BUILTIN.x, directly or through one never-assigned local alias read
 * only inside `init` (its declaration's initializer goes to sh's ranges). */
static bool builtin_x(const ks_anode *body, const ks_anode *init, const ks_anode *e,
                      const char *builtin, ks_shape *sh) {
  if (ks_rt_builtin_member(e, builtin, 'x'))
    return true;
  const ks_anode *s = ks_rt_strip(e, false);
  if (sh->nalias == 2 || !s || s->kind != KS_AK_DECL_REF || !s->decl ||
      s->decl->kind != KS_AK_VAR || s->decl->shared_space || s->decl->is_pointer)
    return false;
  const ks_anode *vi = ks_rt_var_init(s->decl);
  if (!vi || !ks_rt_builtin_member(vi, builtin, 'x') ||
      !alias_only_in(body, s->decl, init->begin, init->end))
    return false;
  sh->alias_range[sh->nalias][0] = vi->begin;
  sh->alias_range[sh->nalias][1] = vi->end;
  sh->nalias++;
  return true;
}

/* `init` as blockIdx.x * C + threadIdx.x (operands in any order, the
 * builtins through aliases) with C the block size as a constant: sets
 * sh->alias and sh->requires. */
static bool alias_index(ks_meaning *m, ks_arena *arena, const ks_anode *body, const ks_anode *init,
                        ks_shape *sh) {
  const ks_anode *e = ks_rt_strip(init, true);
  if (!m || !e || e->kind != KS_AK_BINARY || !e->op || strcmp(e->op, "+") || e->nkids != 2)
    return false;
  for (int t = 0; t < 2; t++) {
    const ks_anode *p = ks_rt_strip(e->kids[1 - t], true);
    if (!p || p->kind != KS_AK_BINARY || !p->op || strcmp(p->op, "*") || p->nkids != 2)
      continue;
    for (int u = 0; u < 2; u++) {
      long long c = 0;
      sh->nalias = 0;
      if (!ks_meaning_int(m, p->kids[1 - u], &c) || c <= 0 || c > 1024 ||
          !builtin_x(body, init, p->kids[u], "blockIdx", sh) ||
          !builtin_x(body, init, e->kids[t], "threadIdx", sh))
        continue;
      sh->alias = true;
      sh->requires = ks_arena_printf(arena, "block_x == %lld", c);
      return true;
    }
  }
  sh->nalias = 0;
  return false;
}

static const ks_anode *find_index(ks_meaning *m, ks_arena *arena, const ks_anode *body, char d,
                                  size_t *at, ks_shape *sh) {
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *s = body->kids[k];
    if (!s || s->kind != KS_AK_DECL_STMT || s->nkids != 1 || !s->kids[0] ||
        s->kids[0]->kind != KS_AK_VAR)
      continue;
    const ks_anode *init = ks_rt_var_init(s->kids[0]);
    if (init && (ks_rt_global_index(init, d, NULL) ||
                 (d == 'x' && alias_index(m, arena, body, init, sh)))) {
      *at = k;
      return s->kids[0];
    }
  }
  return NULL;
}

size_t ks_shape_allowed(const ks_shape *sh, unsigned out[8]) {
  size_t n = 0;
  for (int d = 0; d < 2; d++)
    if (sh->var[d]) {
      const ks_anode *i = ks_rt_var_init(sh->var[d]);
      out[2 * n] = i->begin;
      out[2 * n + 1] = i->end;
      n++;
    }
  for (size_t a = 0; a < sh->nalias; a++, n++) {
    out[2 * n] = sh->alias_range[a][0];
    out[2 * n + 1] = sh->alias_range[a][1];
  }
  return n;
}

static bool is_return_stmt(const ks_anode *s) {
  while (s && s->kind == KS_AK_COMPOUND && s->nkids == 1)
    s = s->kids[0];
  return s && s->kind == KS_AK_RETURN;
}

/* Finds the global indexes and the bounds check of dimension `dim`
 * (-1: y when the kernel has a y index, else x). */
void ks_shape_find(ks_ctx *ctx, ks_arena *arena, const ks_rule_input *in, int dim, ks_shape *sh) {
  memset(sh, 0, sizeof *sh);
  const ks_anode *body = in->ast->body;
  sh->body = body;
  ks_meaning *m = ks_meaning_open(ctx, in->ast, arena);
  sh->var[0] = find_index(m, arena, body, 'x', &sh->var_at[0], sh);
  sh->var[1] = find_index(m, arena, body, 'y', &sh->var_at[1], sh);
  ks_meaning_close(m);
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
    if (!ks_shape_pure_decl(body->kids[k])) {
      sh->why = "statements before the global index do more than compute values";
      return;
    }
  size_t k = sh->first + 1;
  while (k < body->nkids && ks_shape_pure_decl(body->kids[k]))
    k++;
  const ks_anode *s = k < body->nkids ? body->kids[k] : NULL;
  if (!s || s->kind != KS_AK_IF || s->nkids != 2) {
    sh->why = "no bounds check (if (i < n) ... or if (i >= n) return;) after the global index";
    return;
  }
  sh->check = s;
  sh->check_at = k;
  ks_node_list terms = {0};
  ks_arena scratch = KS_ARENA_INIT;
  if (is_return_stmt(s->kids[1])) {
    sh->early_return = true;
    ks_shape_chain_terms(&scratch, s->kids[0], "||", &terms);
    for (size_t t = 0; t < terms.len && !sh->bound; t++)
      sh->bound = ks_shape_bound_term(terms.items[t], v, false);
  } else if (k + 1 == body->nkids) {
    ks_shape_chain_terms(&scratch, s->kids[0], "&&", &terms);
    for (size_t t = 0; t < terms.len && !sh->bound; t++)
      sh->bound = ks_shape_bound_term(terms.items[t], v, true);
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

bool ks_shape_guardable(const ks_anode *body, const ks_anode *bound) {
  guardable_walk w = {body, true};
  ks_anode_walk((ks_anode *)bound, visit_guardable, &w);
  return w.ok;
}

const char *ks_shape_bound_guard(ks_ctx *ctx, ks_arena *arena, const ks_rule_input *in,
                                 const ks_anode *bound, const char **why) {
  if (ks_shape_guardable(in->ast->body, bound))
    return ks_rt_text_of(arena, in, bound);
  ks_meaning *m = ks_meaning_open(ctx, in->ast, arena);
  const char *folded_why = NULL;
  const char *text = ks_meaning_value(m, bound, &folded_why);
  ks_meaning_close(m);
  if (!text)
    *why = ks_arena_printf(arena, "the bound '%s' is not made of scalar parameters and constants%s%s",
                           ks_rt_text_of(arena, in, bound), folded_why ? ": " : "",
                           folded_why ? folded_why : "");
  return text;
}

/* The guard that the parent's launch covers every index below the bound in
 * dimension d: a rewrite whose threads reach further than the parent's must
 * not find work the parent never did. */
const char *ks_shape_coverage_guard(ks_arena *arena, const ks_rule_policy *pol, int d,
                                  const char *bound) {
  return ks_arena_printf(arena, "%s * %s >= %s", ks_rt_paren(arena, pol->grid[d]),
                         ks_rt_paren(arena, pol->block[d]), ks_rt_paren(arena, bound));
}

bool ks_shape_is_wide_type(const char *type) {
  return strstr(type, "long") || strstr(type, "size_t") || strstr(type, "64") ||
         strstr(type, "ptrdiff");
}

const char *ks_shape_without_const(const char *type) {
  return !strncmp(type, "const ", 6) ? type + 6 : type;
}

/* The indentation unit of the body: the indentation of its first line. */
const char *ks_shape_indent_unit(ks_arena *arena, const ks_rule_input *in, const ks_anode *first) {
  const char *ind = ks_rt_line_indent(arena, in->unit, first->begin);
  return *ind ? ind : "    ";
}

void ks_shape_check_returns(const ks_anode *n, int loops, const char **problem) {
  if (!n || *problem)
    return;
  if (n->kind == KS_AK_RETURN && (loops > 0 || n->from_macro)) {
    *problem = n->from_macro ? "a return comes from a macro"
                             : "returns from inside a loop (continue would mean something else)";
    return;
  }
  bool loop = n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO;
  for (size_t k = 0; k < n->nkids; k++)
    ks_shape_check_returns(n->kids[k], loops + loop, problem);
}

bool ks_shape_user_function(const ks_rule_input *in, const char *name) {
  const char *b, *e;
  const char *end = in->unit + strlen(in->unit);
  return ks_rt_find_definition(in->unit, end, name, &b, &e, NULL, NULL);
}
