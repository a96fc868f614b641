/* rules_tree: the helpers every rule shares (rules_tree.h): walking,
 * matching and stripping the tree, rendering nodes with substitutions,
 * statement ends and indentation, fresh names, the thread-mapping check,
 * and how a rule returns its child or says it does not apply. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_tree.h"


/* ---- tree helpers ------------------------------------------------------- */

/* An implicit node: one child with the same extent (clang's implicit casts
 * and other unexposed wrappers). */
bool ks_rt_is_wrapper(const ks_anode *n) {
  return n->kind == KS_AK_OTHER && n->nkids == 1 && n->kids[0] && n->kids[0]->begin == n->begin &&
         n->kids[0]->end == n->end;
}

const ks_anode *ks_rt_strip(const ks_anode *n, bool casts) {
  while (n) {
    if (n->kind == KS_AK_PAREN || ks_rt_is_wrapper(n) || (casts && n->kind == KS_AK_CAST)) {
      if (n->nkids < 1 || !n->kids[n->nkids - 1])
        return n;
      n = n->kids[n->nkids - 1];
    } else {
      return n;
    }
  }
  return n;
}

const ks_anode *ks_rt_up(const ks_anode *n, const ks_anode **child) {
  const ks_anode *p = n->parent;
  while (p && (p->kind == KS_AK_PAREN || ks_rt_is_wrapper(p))) {
    n = p;
    p = p->parent;
  }
  if (child)
    *child = n;
  return p;
}

const ks_anode *ks_rt_var_init(const ks_anode *var) {
  if (!var || var->kind != KS_AK_VAR)
    return NULL;
  for (size_t k = var->nkids; k-- > 0;) {
    const ks_anode *c = var->kids[k];
    if (!c || c->kind == KS_AK_ATTR)
      continue;
    if (ks_rt_is_ref_node(c))
      continue; /* part of the declared type */
    return c;
  }
  return NULL;
}

bool ks_rt_refers_to(const ks_anode *n, const ks_anode *decl) {
  n = ks_rt_strip(n, false);
  return n && n->kind == KS_AK_DECL_REF && n->decl == decl;
}

typedef struct modified_walk {
  const ks_anode *decl;
  bool found;
} modified_walk;

static bool visit_modified(ks_anode *n, void *arg) {
  modified_walk *w = arg;
  if (w->found)
    return false;
  const ks_anode *target = NULL;
  if ((n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) ||
      n->kind == KS_AK_COMPOUND_ASSIGN)
    target = n->nkids ? n->kids[0] : NULL;
  else if (n->kind == KS_AK_UNARY && n->op &&
           (!strcmp(n->op, "++") || !strcmp(n->op, "--") || !strcmp(n->op, "&")))
    target = n->nkids ? n->kids[0] : NULL;
  if (target && ks_rt_refers_to(target, w->decl))
    w->found = true;
  return true;
}

bool ks_rt_modified(const ks_anode *root, const ks_anode *decl) {
  modified_walk w = {decl, false};
  ks_anode_walk((ks_anode *)root, visit_modified, &w);
  return w.found;
}

bool ks_rt_is_ref_node(const ks_anode *n) {
  if (n->kind != KS_AK_OTHER || !n->kind_name)
    return false;
  size_t len = strlen(n->kind_name);
  return len > 3 && !strcmp(n->kind_name + len - 3, "Ref");
}

bool ks_rt_is_within(const ks_anode *n, const ks_anode *root) {
  for (; n; n = n->parent)
    if (n == root)
      return true;
  return false;
}

bool ks_rt_is_op(const ks_anode *n, ks_akind kind, const char *op) {
  return n && n->kind == kind && n->op && !strcmp(n->op, op) &&
         n->nkids == (kind == KS_AK_UNARY ? 1u : 2u);
}

bool ks_rt_is_bin(const ks_anode *n, const char *op) {
  return ks_rt_is_op(n, KS_AK_BINARY, op);
}

bool ks_rt_is_int(const ks_anode *n, long long v) {
  n = ks_rt_strip(n, true);
  return n && n->kind == KS_AK_INT_LITERAL && n->int_value == v;
}

bool ks_rt_is_assignment(const ks_anode *n) {
  return ks_rt_is_bin(n, "=") || (n && n->kind == KS_AK_COMPOUND_ASSIGN && n->nkids == 2) ||
         ks_rt_is_op(n, KS_AK_UNARY, "++") || ks_rt_is_op(n, KS_AK_UNARY, "--");
}

const char *ks_rt_callee(ks_arena *arena, const ks_anode *call) {
  if (!call->name)
    return "";
  const char *s = call->name;
  for (const char *p = strstr(s, "::"); p; p = strstr(s, "::"))
    s = p + 2;
  return ks_arena_strndup(arena, s, strcspn(s, "<"));
}

static bool collect_visit(ks_anode *n, void *arg) {
  void **a = arg;
  *ks_array_push((ks_arena *)a[0], (ks_rt_nodes *)a[1]) = n;
  return true;
}

ks_rt_nodes ks_rt_collect(ks_arena *arena, const ks_anode *root) {
  ks_rt_nodes out = {0};
  void *a[2] = {arena, &out};
  ks_anode_walk((ks_anode *)root, collect_visit, a);
  return out;
}

unsigned ks_rt_count_refs(ks_arena *arena, const ks_anode *root, const ks_anode *decl) {
  ks_rt_nodes all = ks_rt_collect(arena, root);
  unsigned n = 0;
  for (size_t i = 0; i < all.len; i++)
    n += all.items[i]->kind == KS_AK_DECL_REF && all.items[i]->decl == decl;
  return n;
}

bool ks_rt_is_expr_stmt(const ks_anode *n) {
  const ks_anode *child;
  const ks_anode *p = ks_rt_up(n, &child);
  if (!p)
    return false;
  switch (p->kind) {
  case KS_AK_COMPOUND:
    return true;
  case KS_AK_IF:
    return (p->nkids >= 2 && p->kids[1] == child) || (p->nkids >= 3 && p->kids[2] == child);
  case KS_AK_FOR:
    return p->kids[3] == child;
  case KS_AK_WHILE:
    return p->nkids == 2 && p->kids[1] == child;
  case KS_AK_DO:
    return p->nkids >= 1 && p->kids[0] == child;
  default:
    return false;
  }
}

const ks_anode *ks_rt_single_var(const ks_anode *stmt) {
  if (!stmt || stmt->kind != KS_AK_DECL_STMT)
    return NULL;
  const ks_anode *var = NULL;
  for (size_t i = 0; i < stmt->nkids; i++) {
    if (!stmt->kids[i] || stmt->kids[i]->kind != KS_AK_VAR)
      continue;
    if (var)
      return NULL;
    var = stmt->kids[i];
  }
  return var;
}

void ks_rt_split_chain(ks_arena *arena, const ks_anode *c, const char *op, ks_rt_nodes *out) {
  c = ks_anode_strip(c, false);
  if (c && c->kind == KS_AK_BINARY && c->nkids == 2 && c->op && !strcmp(c->op, op)) {
    ks_rt_split_chain(arena, c->kids[0], op, out);
    ks_rt_split_chain(arena, c->kids[1], op, out);
  } else if (c) {
    *ks_array_push(arena, out) = c;
  }
}

bool ks_rt_is_template_type(const ks_kast *k, const char *type) {
  if (!type || k->root->kind != KS_AK_TEMPLATE)
    return false;
  for (size_t i = 0; i < k->root->nkids; i++) {
    const ks_anode *p = k->root->kids[i];
    if (p && p->kind == KS_AK_TEMPLATE_PARAM && p->name && !strcmp(p->name, type) &&
        (!p->type || !*p->type))
      return true;
  }
  return false;
}

bool ks_rt_is_minmax(const char *name) {
  static const char *const fns[] = {"fmaxf", "fminf", "fmax", "fmin", "max", "min"};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (!strcmp(name, fns[i]))
      return true;
  return false;
}

bool ks_rt_has_prefix(const char *s, const char *prefix) {
  return s && !strncmp(s, prefix, strlen(prefix));
}

/* ---- text --------------------------------------------------------------- */

static void render_range_rec(ks_buf *b, const char *src, const ks_anode *n, unsigned from,
                         unsigned to, ks_rt_replace fn, void *arg) {
  unsigned cur = from;
  for (size_t k = 0; k < n->nkids; k++) {
    const ks_anode *kid = n->kids[k];
    if (!kid || kid->end <= cur || kid->begin >= to || kid->begin >= kid->end)
      continue;
    if (kid->begin >= cur && kid->end <= to) {
      const char *r = fn ? fn(kid, arg) : NULL;
      if (r) {
        ks_buf_add(b, src + cur, kid->begin - cur);
        ks_buf_adds(b, r);
        cur = kid->end;
        continue;
      }
    }
    if (kid->from_macro)
      continue; /* copied as written, with the text around it */
    unsigned kb = kid->begin > cur ? kid->begin : cur;
    unsigned ke = kid->end < to ? kid->end : to;
    ks_buf_add(b, src + cur, kb - cur);
    render_range_rec(b, src, kid, kb, ke, fn, arg);
    cur = ke;
  }
  if (to > cur)
    ks_buf_add(b, src + cur, to - cur);
}

void ks_rt_render_range(ks_buf *b, const char *unit, const ks_anode *n, unsigned from,
                        unsigned to, ks_rt_replace fn, void *arg) {
  render_range_rec(b, unit, n, from, to, fn, arg);
}

void ks_rt_render(ks_buf *b, const char *unit, const ks_anode *n, ks_rt_replace fn, void *arg) {
  const char *r = fn ? fn(n, arg) : NULL;
  if (r)
    ks_buf_adds(b, r);
  else if (n->from_macro)
    ks_buf_add(b, unit + n->begin, n->end - n->begin);
  else
    render_range_rec(b, unit, n, n->begin, n->end, fn, arg);
}

const char *ks_rt_render_str(ks_arena *arena, const char *unit, const ks_anode *n,
                             ks_rt_replace fn, void *arg) {
  ks_buf b = KS_BUF_INIT;
  ks_rt_render(&b, unit, n, fn, arg);
  const char *s = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return s;
}

unsigned ks_rt_stmt_end(const char *unit, const ks_anode *s) {
  unsigned e = s->end;
  if (e > s->begin && unit[e - 1] == ';')
    return e;
  /* statements that end with a block take no ';' (an if or a loop whose
   * last statement is an expression takes that expression's) */
  if (s->kind == KS_AK_COMPOUND ||
      (e > s->begin && unit[e - 1] == '}' &&
       (s->kind == KS_AK_FOR || s->kind == KS_AK_WHILE || s->kind == KS_AK_IF ||
        (s->kind_name && !strcmp(s->kind_name, "SwitchStmt")))))
    return e;
  unsigned p = e;
  while (unit[p] == ' ' || unit[p] == '\t' || unit[p] == '\n' || unit[p] == '\r')
    p++;
  return unit[p] == ';' ? p + 1 : e;
}

const char *ks_rt_line_indent(ks_arena *arena, const char *unit, unsigned at) {
  unsigned start = at;
  while (start > 0 && unit[start - 1] != '\n')
    start--;
  unsigned e = start;
  while (unit[e] == ' ' || unit[e] == '\t')
    e++;
  return ks_arena_strndup(arena, unit + start, e - start);
}

const char *ks_rt_indent_more(ks_arena *arena, const char *text, const char *add) {
  ks_buf b = KS_BUF_INIT;
  for (const char *p = text; *p; p++) {
    ks_buf_addc(&b, *p);
    /* blank lines stay blank */
    if (*p == '\n' && p[1] && p[1] != '\n')
      ks_buf_adds(&b, add);
  }
  const char *s = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return s;
}

bool ks_rt_has_identifier(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    bool start = p == text || !ks_ctext_is_ident_char(p[-1]);
    if (start && !ks_ctext_is_ident_char(p[n]))
      return true;
  }
  return false;
}

const char *ks_rt_fresh(ks_arena *arena, const char *text, const char *base) {
  if (!ks_rt_has_identifier(text, base))
    return base;
  for (int k = 2;; k++) {
    const char *name = ks_arena_printf(arena, "%s%d", base, k);
    if (!ks_rt_has_identifier(text, name))
      return name;
  }
}

const char *ks_rt_paren(ks_arena *arena, const char *expr) {
  const char *p = expr;
  while (ks_ctext_is_ident_char(*p) || *p == '.')
    p++;
  if (!*p)
    return expr; /* a name or a number */
  if (*p == '(' && p > expr) {
    const char *close = ks_ctext_matching(p, p + strlen(p));
    if (close && !close[1])
      return expr; /* a call */
  }
  return ks_arena_printf(arena, "(%s)", expr);
}

unsigned ks_rt_stmt_end_deep(const char *unit, const ks_anode *s) {
  if (s->kind == KS_AK_OTHER && s->nkids == 1 && s->kids[0] && s->kids[0]->kind == KS_AK_FOR)
    return ks_rt_stmt_end_deep(unit, s->kids[0]); /* #pragma unroll before the loop */
  if (s->kind == KS_AK_FOR && s->kids[3])
    return ks_rt_stmt_end_deep(unit, s->kids[3]);
  if (s->kind == KS_AK_WHILE && s->nkids == 2)
    return ks_rt_stmt_end_deep(unit, s->kids[1]);
  if (s->kind == KS_AK_IF && s->nkids >= 2)
    return ks_rt_stmt_end_deep(unit, s->kids[s->nkids - 1]);
  return ks_rt_stmt_end(unit, s);
}

unsigned ks_rt_begin_with_pragmas(const char *unit, unsigned begin) {
  for (;;) {
    unsigned line = begin;
    while (line > 0 && unit[line - 1] != '\n')
      line--;
    bool blank_before = true;
    for (unsigned p = line; p < begin; p++)
      blank_before &= unit[p] == ' ' || unit[p] == '\t';
    if (!blank_before || line == 0)
      return begin;
    unsigned prev = line - 1;
    while (prev > 0 && unit[prev - 1] != '\n')
      prev--;
    unsigned p = prev;
    while (unit[p] == ' ' || unit[p] == '\t')
      p++;
    if (strncmp(unit + p, "#pragma", 7))
      return begin;
    begin = p;
  }
}

const char *ks_rt_indent_step(ks_arena *arena, const ks_rule_input *in) {
  const ks_kast *k = in->ast;
  if (!k->body || !k->body->nkids)
    return "    ";
  const char *outer = ks_rt_line_indent(arena, in->unit, k->fn->begin);
  const char *inner = ks_rt_line_indent(arena, in->unit, k->body->kids[0]->begin);
  size_t n = strlen(outer);
  if (strlen(inner) <= n || strncmp(inner, outer, n))
    return "    ";
  return inner + n;
}

const char *ks_rt_deeper(ks_arena *arena, const ks_rule_input *in, const char *indent) {
  return ks_arena_printf(arena, "%s%s", indent, ks_rt_indent_step(arena, in));
}

/* ---- the thread mapping ------------------------------------------------- */

bool ks_rt_builtin_member(const ks_anode *n, const char *builtin, char d) {
  n = ks_rt_strip(n, true);
  if (!n || n->kind != KS_AK_MEMBER || !n->name || n->name[0] != d || n->name[1] || n->nkids < 1)
    return false;
  const ks_anode *base = ks_rt_strip(n->kids[0], false);
  return base && base->kind == KS_AK_DECL_REF && base->name && !strcmp(base->name, builtin);
}

bool ks_rt_global_index(const ks_anode *e, char d, const ks_anode **product) {
  e = ks_rt_strip(e, true);
  if (!e || e->kind != KS_AK_BINARY || !e->op || strcmp(e->op, "+") || e->nkids != 2)
    return false;
  for (int t = 0; t < 2; t++) {
    const ks_anode *tid = e->kids[t], *prod = e->kids[1 - t];
    if (!ks_rt_builtin_member(tid, "threadIdx", d))
      continue;
    const ks_anode *p = ks_rt_strip(prod, true);
    if (!p || p->kind != KS_AK_BINARY || !p->op || strcmp(p->op, "*") || p->nkids != 2)
      continue;
    if ((ks_rt_builtin_member(p->kids[0], "blockIdx", d) &&
         ks_rt_builtin_member(p->kids[1], "blockDim", d)) ||
        (ks_rt_builtin_member(p->kids[0], "blockDim", d) &&
         ks_rt_builtin_member(p->kids[1], "blockIdx", d))) {
      if (product)
        *product = prod;
      return true;
    }
  }
  return false;
}

/* Toolkit functions whose result depends on which threads run together. */
static const char *collective_call(const char *name) {
  static const char *const prefixes[] = {
      "__syncthreads", "__syncwarp", "__shfl",        "__ballot",   "__any",
      "__all",         "__activemask", "__match",     "__reduce_",  "__barrier",
      "__threadfence_block", "this_thread_block", "this_grid", "tiled_partition",
      "coalesced_threads", "__lane", "__nanosleep", "sync", "cg::", "barrier",
  };
  for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++)
    if (!strncmp(name, prefixes[k], strlen(prefixes[k])))
      return prefixes[k];
  return NULL;
}

/* Words whose presence in a device function's text means it depends on the
 * thread mapping. */
static const char *const mapping_words[] = {
    "threadIdx", "blockIdx",  "gridDim",   "__syncthreads", "__syncwarp", "__shfl_sync",
    "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
    "__all_sync", "__activemask", "__shared__", "this_thread_block", "tiled_partition",
    "coalesced_threads", "asm", "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
};

/* The body of a function named `name` defined in [text, end): a name, its
 * parameter list, then '{' after a few qualifiers. */
bool ks_rt_find_definition(const char *text, const char *end, const char *name, const char **body,
                            const char **body_end, const char *skip_from, const char *skip_to) {
  size_t n = strlen(name);
  for (const char *p = ks_ctext_find(text, end, name); p; p = ks_ctext_find(p + n, end, name)) {
    if ((p > text && ks_ctext_is_ident_char(p[-1])) || ks_ctext_is_ident_char(p[n]))
      continue;
    if (p >= skip_from && p < skip_to)
      continue;
    const char *q = p + n;
    while (q < end && isspace((unsigned char)*q))
      q++;
    if (q >= end || *q != '(')
      continue;
    const char *close = ks_ctext_matching(q, end);
    if (!close)
      continue;
    q = close + 1;
    for (int words = 0; words < 4; words++) {
      while (q < end && isspace((unsigned char)*q))
        q++;
      if (q < end && ks_ctext_is_ident_char(*q))
        while (q < end && ks_ctext_is_ident_char(*q))
          q++;
      else
        break;
    }
    if (q < end && *q == '{') {
      const char *b_end = ks_ctext_matching(q, end);
      if (b_end) {
        *body = q;
        *body_end = b_end;
        return true;
      }
    }
  }
  return false;
}

typedef struct callee_scan {
  ks_arena *arena;
  const char *unit, *unit_end;
  const char *kernel_begin, *kernel_end;
  ks_strings seen;
  const char *problem;
} callee_scan;

static void scan_callee(callee_scan *s, const char *name, int depth) {
  if (s->problem || depth > 8)
    return;
  for (size_t k = 0; k < s->seen.len; k++)
    if (!strcmp(s->seen.items[k], name))
      return;
  *ks_array_push(s->arena, &s->seen) = name;
  const char *body, *body_end;
  const char *from = s->unit;
  /* every overload: each definition is looked at */
  while (from < s->unit_end &&
         ks_rt_find_definition(from, s->unit_end, name, &body, &body_end, s->kernel_begin,
                         s->kernel_end)) {
    for (size_t w = 0; w < sizeof mapping_words / sizeof *mapping_words; w++) {
      const char *hit = ks_ctext_find(body, body_end, mapping_words[w]);
      size_t wl = strlen(mapping_words[w]);
      if (hit && !ks_ctext_is_ident_char(hit[-1]) && !ks_ctext_is_ident_char(hit[wl])) {
        s->problem = ks_arena_printf(s->arena, "calls %s, which uses %s", name, mapping_words[w]);
        return;
      }
    }
    /* and what it calls in turn */
    for (const char *p = body; p < body_end; p++) {
      const char *q = ks_ctext_skip_lexical(p);
      if (q != p) {
        p = q - 1;
        continue;
      }
      if (!ks_ctext_is_ident_char(*p) || (p > body && ks_ctext_is_ident_char(p[-1])) ||
          isdigit((unsigned char)*p))
        continue;
      const char *e = p;
      while (ks_ctext_is_ident_char(*e))
        e++;
      const char *a = e;
      while (isspace((unsigned char)*a))
        a++;
      if (*a == '(') {
        const char *callee = ks_arena_strndup(s->arena, p, (size_t)(e - p));
        static const char *const keywords[] = {"if", "for", "while", "switch", "return", "sizeof"};
        bool kw = false;
        for (size_t k = 0; k < sizeof keywords / sizeof *keywords; k++)
          kw |= !strcmp(callee, keywords[k]);
        if (!kw && strcmp(callee, name))
          scan_callee(s, callee, depth + 1);
        if (s->problem)
          return;
      }
      p = e - 1;
    }
    from = body_end + 1;
  }
}

typedef struct mapping_walk {
  const ks_rule_input *in;
  callee_scan *scan;
  const unsigned *allowed;
  size_t nallowed;
  bool block_idx_ok;        /* blockIdx may be read anywhere */
  const char *problem;
} mapping_walk;

static bool visit_mapping(ks_anode *n, void *arg) {
  mapping_walk *w = arg;
  if (w->problem)
    return false;
  if (n->kind == KS_AK_VAR && n->shared_space) {
    w->problem = ks_arena_printf(w->scan->arena, "uses shared memory ('%s')", n->name);
  } else if (n->kind == KS_AK_CALL && n->name) {
    const char *c = collective_call(n->name);
    if (c)
      w->problem = ks_arena_printf(w->scan->arena, "calls %s", n->name);
    else {
      scan_callee(w->scan, n->name, 0);
      w->problem = w->scan->problem;
    }
  } else if (w->allowed && n->kind == KS_AK_DECL_REF && !n->decl && n->name &&
             (!strcmp(n->name, "threadIdx") ||
              (!strcmp(n->name, "blockIdx") && !w->block_idx_ok) ||
              !strcmp(n->name, "gridDim") || (!strcmp(n->name, "blockDim") && w->block_idx_ok))) {
    bool ok = false;
    for (size_t k = 0; k + 1 < w->nallowed * 2; k += 2)
      ok |= n->begin >= w->allowed[k] && n->end <= w->allowed[k + 1];
    if (!ok)
      w->problem = ks_arena_printf(w->scan->arena,
                                   "reads %s outside the global index (the work of a thread "
                                   "depends on which thread it is)",
                                   n->name);
  } else if (n->kind == KS_AK_OTHER && n->kind_name && strstr(n->kind_name, "Asm")) {
    w->problem = "has inline assembly";
  }
  return !w->problem;
}

static const char *mapping_problem(ks_arena *arena, const ks_rule_input *in,
                                   const unsigned *allowed, size_t nallowed, bool block_idx_ok) {
  callee_scan scan = {.arena = arena,
                      .unit = in->unit,
                      .unit_end = in->unit + strlen(in->unit),
                      .kernel_begin = in->unit + in->ast->root->begin,
                      .kernel_end = in->unit + in->ast->root->end};
  mapping_walk w = {in, &scan, allowed, nallowed, block_idx_ok, NULL};
  ks_anode_walk(in->ast->body, visit_mapping, &w);
  if (!w.problem && strstr(in->parent->source, "__shared__"))
    w.problem = "uses shared memory";
  return w.problem;
}

const char *ks_rt_mapping_problem(ks_arena *arena, const ks_rule_input *in,
                                  const unsigned *allowed, size_t nallowed) {
  return mapping_problem(arena, in, allowed, nallowed, false);
}

const char *ks_rt_block_mapping_problem(ks_arena *arena, const ks_rule_input *in,
                                        const unsigned *allowed, size_t nallowed) {
  return mapping_problem(arena, in, allowed, nallowed, true);
}

/* ---- results ------------------------------------------------------------ */

int ks_rt_not_applicable(ks_arena *arena, ks_rule_result *out, const char *fmt, ...) {
  va_list ap;
  char msg[1024];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  out->applied = false;
  out->reason = ks_arena_strdup(arena, msg);
  return 0;
}

int ks_rt_finish(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena, const ks_edits *edits,
                 const char *technique, ks_rule_result *out) {
  ks_rule_child_init(arena, in, &out->child);
  const char *src = ks_edits_apply(ctx, arena, in->parent->source, edits);
  if (!src)
    return -1;
  out->child.source = src;
  out->applied = true;
  out->reason = NULL;
  out->technique = technique;
  return 0;
}

/* The offset in the parent's source of a unit offset. */
size_t ks_rt_src_at(const ks_rule_input *in, unsigned unit_offset) {
  return unit_offset - in->variant_offset;
}

/* The node's text. */
const char *ks_rt_text_of(ks_arena *arena, const ks_rule_input *in, const ks_anode *n) {
  return ks_anode_text(arena, in->ast, n);
}

void ks_rt_render_span(ks_buf *b, const ks_rule_input *in, const ks_anode *parent,
                        unsigned from, unsigned to, ks_rt_replace fn, void *arg) {
  render_range_rec(b, in->unit, parent, from, to, fn, arg);
}

/* With sizes, whether the guard evaluates at them. Without (rewrite from
 * the launch sites alone), whether it is made of names the guard language
 * gives values at run time, the launch, the scalars and the buffers'
 * lengths, each standing in with 1: the guard stays symbolic, as every
 * rule's does there, and the judge or the launch site evaluates it. */
static bool names_lookup(void *data, const char *name, size_t len, ks_value *out) {
  const ks_rule_input *in = data;
  static const char *const dims[] = {"grid_x",  "grid_y",  "grid_z", "block_x",
                                     "block_y", "block_z", "smem"};
  bool known = false;
  for (size_t i = 0; i < sizeof dims / sizeof *dims && !known; i++)
    known = strlen(dims[i]) == len && !memcmp(dims[i], name, len);
  for (size_t i = 0; i < in->ast->nparams && !known; i++) {
    const char *p = in->ast->params[i]->name;
    if (!p)
      continue;
    size_t n = strlen(p);
    known = (n == len && !memcmp(p, name, len)) ||
            (len == n + 4 && !memcmp(name, "len_", 4) && !memcmp(name + 4, p, n));
  }
  if (known)
    *out = (ks_value){.is_int = true, .i = 1};
  return known;
}

bool ks_rt_guard_evaluates(const ks_rule_input *in, const char *guard) {
  ks_ctx scratch;
  ks_ctx_init(&scratch, "rules");
  long long v = 0;
  bool ok = !ks_rule_eval(&scratch, in, guard, &v);
  if (!ok && in->no_sizes) {
    ks_expr_env env = {names_lookup, (void *)in};
    ks_value r;
    ok = !ks_expr_eval(&scratch, guard, &env, &r);
  }
  ks_ctx_release(&scratch);
  return ok;
}

bool ks_rt_is_64bit_type(const char *t) {
  return strstr(t, "long") || strstr(t, "size_t") || strstr(t, "int64") || strstr(t, "ptrdiff");
}

/* Functions without side effects whose result depends only on their
 * arguments: the math library, CUDA's arithmetic intrinsics and read-only
 * loads. Anything else run by all 32 lanes instead of one thread might do
 * something 32 times. Shared by the rules that let several threads run what
 * one ran (warp_rows, split_cols). */
bool ks_rt_is_pure_call(const char *name) {
  static const char *const math[] = {
      "abs",    "fabs",   "min",    "max",    "fmin",   "fmax",   "sqrt",   "rsqrt",  "cbrt",
      "rcbrt",  "exp",    "exp2",   "exp10",  "expm1",  "log",    "log2",   "log10",  "log1p",
      "pow",    "sin",    "cos",    "tan",    "sinh",   "cosh",   "tanh",   "asin",   "acos",
      "atan",   "atan2",  "asinh",  "acosh",  "atanh",  "erf",    "erfc",   "erfinv", "erfcinv",
      "floor",  "ceil",   "round",  "rint",   "trunc",  "nearbyint", "lround", "llround", "lrint",
      "llrint", "fma",    "fmod",   "remainder", "hypot", "rhypot", "norm3d", "rnorm3d", "copysign",
      "fdim",   "ldexp",  "scalbn", "ilogb",  "logb",   "isnan",  "isinf",  "isfinite", "signbit",
      "normcdf", "normcdfinv", "lgamma", "tgamma", "sinpi", "cospi", "nextafter", "fdivide",
      "umin",   "umax",   "llmin",  "llmax",  "ullmin", "ullmax", "saturate", "popc", "popcll",
      "clz",    "clzll",  "ffs",    "ffsll",  "brev",   "byte_perm", "mul24", "umul24", "mulhi",
      "umulhi", "sad",    "usad",   "fadd_rn", "fmul_rn", "fsub_rn", "fdiv_rn", "frcp_rn",
      "fsqrt_rn", "frsqrt_rn", "fmaf_rn", "dadd_rn", "dmul_rn", "ddiv_rn", "fma_rn"};
  static const char *const prefixes[] = {"__builtin_", "__ld",   "__float2", "__int2",
                                         "__uint2",    "__ll2",  "__ull2",   "__double2",
                                         "__float_as", "__int_as", "__uint_as", "__half2float",
                                         "make_"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (ks_rt_has_prefix(name, prefixes[i]))
      return true;
  char base[64];
  const char *s = name;
  while (*s == '_')
    s++;
  snprintf(base, sizeof base, "%s", s);
  size_t n = strlen(base);
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < sizeof math / sizeof *math; i++)
      if (!strcmp(base, math[i]))
        return true;
    if (n < 2 || base[n - 1] != 'f')
      break;
    base[n - 1] = '\0'; /* expf -> exp */
  }
  return false;
}

bool ks_rt_why(ks_arena *arena, const char **why, const char *fmt, ...) {
  if (!*why) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    *why = ks_arena_strdup(arena, msg);
  }
  return false;
}
