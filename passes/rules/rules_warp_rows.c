/* rules_warp_rows: warp_rows, the rewrite that hands a row to the 32
 * lanes of a warp.
 *
 *   warp_rows    a kernel with one THREAD per row and loops over the row's
 *                columns becomes one WARP per row: the loops stride by 32
 *                from start + lane, and what they accumulate (sums, max,
 *                min) is combined across the warp with an XOR butterfly.
 *
 * It matches its pattern on the kernel's tree and says, in one line, why
 * it does not apply where the pattern or one of its conditions is missing;
 * docs/rules.md gives the conditions and the reasoning behind them. Names
 * the rewrite introduces are fresh (ks_rt_fresh), so they neither clash with
 * the user's nor with those of an earlier rewrite. The other warp rules
 * (warp_reduce, warp_atomic) are in rules_warp_reduce.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_int.h"
#include "rules_meaning.h"
#include "rules_tree.h"

/* ---- helpers of warp_rows ------------------------------------------------ */

static bool inside(const ks_anode *n, const ks_anode *outer) {
  return n->begin >= outer->begin && n->end <= outer->end;
}

/* Calls that synchronize or exchange data between threads. */
static bool is_collective(const char *name) {
  static const char *const prefixes[] = {
      "__syncthreads", "__syncwarp", "__shfl",   "__ballot",  "__any",      "__all",
      "__activemask",  "__match",    "__reduce", "__barrier", "__threadfence", "__nanosleep",
      "this_thread_block", "this_grid", "tiled_partition", "coalesced_threads"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (ks_rt_has_prefix(name, prefixes[i]))
      return true;
  return false;
}

/* Types __shfl_xor_sync and __shfl_down_sync take, whose + and max/min
 * the rewrites may reorder. */
static bool is_shuffle_type(const char *type) {
  static const char *const types[] = {"float", "double", "int", "unsigned int", "unsigned",
                                      "long long", "unsigned long long", "long", "unsigned long",
                                      "long long int", "unsigned long long int"};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    if (type && !strcmp(type, types[i]))
      return true;
  return false;
}

/* The text of a node with white space removed, to compare addresses. */
static const char *squeezed(ks_arena *arena, const ks_kast *k, const ks_anode *n) {
  const char *t = ks_anode_text(arena, k, n);
  char *out = ks_arena_alloc(arena, strlen(t) + 1), *o = out;
  for (; *t; t++)
    if (*t != ' ' && *t != '\t' && *t != '\n' && *t != '\r')
      *o++ = *t;
  return out;
}

/* ==== warp_rows ============================================================ */

/* A variable a column loop accumulates into. */
typedef struct rows_acc {
  const ks_anode *var;   /* VAR or PARAM */
  const char *fn;        /* the max/min function; NULL for a sum */
  unsigned refs;         /* its references that the updates account for */
} rows_acc;

typedef struct rows_loop {
  const ks_anode *loop;  /* FOR */
  const ks_anode *stmt;  /* the loop, or the statement holding it and its
                            #pragma (clang's AttributedStmt) */
  const ks_anode *var;   /* the column variable */
  const ks_anode *start; /* its initializer */
  const ks_anode *inc;
  const ks_anode *ne;    /* a condition `c != end`, rewritten `c < end` */
  const ks_anode *end;
  KS_ARRAY(rows_acc) accs;
} rows_loop;

/* A memory access, for the dependence check. */
typedef struct rows_access {
  const char *root;          /* the buffer: "p" for a pointer parameter p and
                                every pointer derived from it; NULL: unknown */
  const char *key;           /* the address as written, without spaces */
  const char *text;          /* for messages */
  const rows_loop *loop;     /* NULL: outside the column loops */
  const ks_anode *lane0;     /* the statement lane 0 alone runs, or NULL */
  const ks_anode *node;
  bool store;
} rows_access;

typedef struct rows {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_kast *k;
  const ks_anode *row_var, *row_init;
  KS_ARRAY(rows_loop *) loops;
  ks_rt_nodes lane0;           /* statements with stores, outside the loops */
  ks_rt_nodes lhs;             /* memory written by an assignment in a loop */
  KS_ARRAY(rows_access) access;
  ks_meaning *meaning;
  bool sync_lane0;             /* lanes read what lane 0 then writes: a
                                  __syncwarp() orders them */
  int lanes;                   /* lanes per row: 32, or 4, 8, 16 (a group
                                  of a warp) */
  const char *mask;            /* the shuffles' and __syncwarp's mask: the
                                  whole warp, or the row's group */
  const char *why;
  bool global_sum;             /* it refused a loop that sums into global
                                  memory: a register after scalar_replace */
} rows;

/* The first reason it does not apply is kept. */
#define rows_fail(r, ...) ks_rt_why((r)->arena, &(r)->why, __VA_ARGS__)

/* The buffer a pointer expression points into: pointer parameters, and
 * local pointers initialized from them and never assigned again, trace back
 * to the parameter; local arrays and globals stand for themselves. */
static const char *ptr_root(rows *r, const ks_anode *n, int depth) {
  n = ks_rt_strip(n, true);
  if (!n || depth > 16)
    return NULL;
  if (n->kind == KS_AK_DECL_REF) {
    const ks_anode *d = n->decl;
    if (!d)
      return n->name ? ks_arena_printf(r->arena, "global %s", n->name) : NULL;
    if (d->kind == KS_AK_PARAM)
      return d->is_pointer ? d->name : NULL;
    if (d->kind != KS_AK_VAR)
      return NULL;
    if (d->is_pointer)
      return ks_rt_modified(r->k->body, d) ? NULL : ptr_root(r, ks_rt_var_init(d), depth + 1);
    if (d->type && strchr(d->type, '['))
      return ks_arena_printf(r->arena, "local %s@%u", d->name, d->begin);
    return NULL;
  }
  if (ks_rt_is_bin(n, "+") || ks_rt_is_bin(n, "-")) {
    const char *left = ptr_root(r, n->kids[0], depth + 1);
    if (left || !strcmp(n->op, "-"))
      return left;
    return ptr_root(r, n->kids[1], depth + 1);
  }
  if (ks_rt_is_op(n, KS_AK_UNARY, "&")) {
    const ks_anode *o = ks_rt_strip(n->kids[0], false);
    if (o && o->kind == KS_AK_SUBSCRIPT && o->nkids == 2)
      return ptr_root(r, o->kids[0], depth + 1);
    return ptr_root(r, o, depth + 1);
  }
  return NULL;
}

/* The buffer of a memory access node (a[i], *p, p->f, or a global). */
static const char *access_root(rows *r, const ks_anode *n) {
  if (n->kind == KS_AK_SUBSCRIPT && n->nkids == 2) {
    const char *root = ptr_root(r, n->kids[0], 0);
    return root ? root : ptr_root(r, n->kids[1], 0);
  }
  if ((n->kind == KS_AK_UNARY || n->kind == KS_AK_MEMBER) && n->nkids == 1)
    return ptr_root(r, n->kids[0], 0);
  return ptr_root(r, n, 0);
}

static void add_access(rows *r, const ks_anode *n, const char *root, bool store,
                       const rows_loop *loop, const ks_anode *lane0) {
  rows_access *a = ks_array_push(r->arena, &r->access);
  a->root = root;
  a->key = squeezed(r->arena, r->k, n);
  a->text = ks_rt_text_of(r->arena, r->in, n);
  a->loop = loop;
  a->lane0 = lane0;
  a->node = n;
  a->store = store;
}

static bool is_memory(const ks_anode *n) {
  return n && (n->kind == KS_AK_SUBSCRIPT || ks_rt_is_op(n, KS_AK_UNARY, "*") ||
               (n->kind == KS_AK_MEMBER && n->arrow));
}

/* What an assignment's left side writes: NULL and *var for a variable
 * (through a.b members), else the memory node (a[i], *p, p->f, a global). */
static const ks_anode *written(const ks_anode *lhs, const ks_anode **var) {
  *var = NULL;
  lhs = ks_rt_strip(lhs, false);
  while (lhs && lhs->kind == KS_AK_MEMBER && !lhs->arrow && lhs->nkids == 1)
    lhs = ks_rt_strip(lhs->kids[0], false);
  if (lhs && lhs->kind == KS_AK_DECL_REF && lhs->decl) {
    *var = lhs->decl;
    return NULL;
  }
  return lhs;
}

typedef struct rows_walk {
  rows *r;
  const rows_loop *loop;     /* NULL: code every lane runs */
  const ks_anode *lane0;
} rows_walk;

/* A call: collectives never; outside the loops only pure functions (every
 * lane runs them); inside a loop (one lane per column, as one thread did)
 * anything but an atomic or a function given a pointer, whose memory
 * effects the dependence check cannot see. */
static bool rows_call(rows *r, const ks_anode *n, const rows_loop *loop) {
  const char *name = ks_rt_callee(r->arena, n);
  if (is_collective(name))
    return rows_fail(r, "it calls %s", name);
  if (ks_rt_is_pure_call(name))
    return true;
  if (!loop)
    return rows_fail(r, "it calls '%s' outside its column loops, where all 32 lanes of the warp "
                        "would run it",
                     name);
  if (ks_rt_has_prefix(name, "atomic"))
    return rows_fail(r, "it calls %s in a column loop", name);
  for (size_t i = 0; i < n->nkids; i++) {
    const ks_anode *a = ks_rt_strip(n->kids[i], false);
    bool pointer = (a->type && strchr(a->type, '*')) || ks_rt_is_op(a, KS_AK_UNARY, "&") ||
                   (a->kind == KS_AK_DECL_REF && a->decl && a->decl->is_pointer);
    if (pointer)
      return rows_fail(r, "it passes a pointer to '%s' in a column loop", name);
  }
  return true;
}

static bool rows_expr_visit(ks_anode *n, void *arg) {
  rows_walk *w = arg;
  rows *r = w->r;
  if (r->why)
    return false;
  if (n->kind == KS_AK_CALL)
    return rows_call(r, n, w->loop);
  if (ks_rt_is_assignment(n))
    return rows_fail(r, "it assigns inside an expression ('%s')",
                     ks_rt_text_of(r->arena, r->in, n));
  if (is_memory(n)) {
    bool lhs = false;
    for (size_t i = 0; i < r->lhs.len; i++)
      lhs |= r->lhs.items[i] == n;
    if (!lhs)
      add_access(r, n, access_root(r, n), false, w->loop, w->lane0);
  }
  if (n->kind == KS_AK_OTHER && n->kind_name &&
      (strstr(n->kind_name, "Lambda") || strstr(n->kind_name, "Asm")))
    return rows_fail(r, "it has a %s", n->kind_name);
  return true;
}

/* Reads in an expression every lane evaluates (or lane 0 alone). */
static bool rows_expr(rows *r, const ks_anode *e, const rows_loop *loop, const ks_anode *lane0) {
  if (!e)
    return true;
  rows_walk w = {r, loop, lane0};
  ks_anode_walk((ks_anode *)e, rows_expr_visit, &w);
  return !r->why;
}

/* The children of `n`, walked as reads. */
static bool rows_kids(rows *r, const ks_anode *n, const rows_loop *loop, const ks_anode *lane0) {
  for (size_t i = 0; i < n->nkids; i++)
    if (!rows_expr(r, n->kids[i], loop, lane0))
      return false;
  return true;
}

/* An expression statement outside the loops: a variable assigned by every
 * lane (the same value in each), or a store that lane 0 alone will do. */
static bool rows_expr_stmt(rows *r, const ks_anode *s) {
  const ks_anode *e = ks_rt_strip(s, false);
  if (ks_rt_is_assignment(e)) {
    const ks_anode *var;
    const ks_anode *mem = written(e->kids[0], &var);
    if (!mem) {
      if (var == r->row_var)
        return rows_fail(r, "it assigns its row index");
      return e->nkids < 2 || rows_expr(r, e->kids[1], NULL, NULL);
    }
    *ks_array_push(r->arena, &r->lane0) = s;
    add_access(r, mem, access_root(r, mem), true, NULL, s);
    if (!ks_rt_is_bin(e, "="))
      add_access(r, mem, access_root(r, mem), false, NULL, s);
    return rows_kids(r, mem, NULL, s) && (e->nkids < 2 || rows_expr(r, e->kids[1], NULL, s));
  }
  if (e->kind == KS_AK_CALL && ks_rt_has_prefix(ks_rt_callee(r->arena, e), "atomic") &&
      e->nkids >= 1) {
    *ks_array_push(r->arena, &r->lane0) = s;
    add_access(r, e->kids[0], ptr_root(r, e->kids[0], 0), true, NULL, s);
    return rows_kids(r, e, NULL, s);
  }
  return rows_expr(r, e, NULL, NULL);
}

/* Is `idx` one-to-one in the column variable: c, or c plus or minus terms
 * that do not involve it? Then two columns never write one element. */
static bool injective(rows *r, const ks_anode *idx, const ks_anode *c) {
  idx = ks_rt_strip(idx, true);
  if (ks_rt_refers_to(idx, c))
    return true;
  if (ks_rt_is_bin(idx, "+") || ks_rt_is_bin(idx, "-")) {
    unsigned l = ks_rt_count_refs(r->arena, idx->kids[0], c),
             rr = ks_rt_count_refs(r->arena, idx->kids[1], c);
    if (l && !rr)
      return injective(r, idx->kids[0], c);
    if (rr && !l && !strcmp(idx->op, "+"))
      return injective(r, idx->kids[1], c);
  }
  return false;
}

static bool rows_register(rows *r, rows_loop *l, const ks_anode *var, const char *fn, unsigned refs);

/* An update `acc += e`, `acc = acc + e` or `acc = f(acc, e)` (f max or
 * min, operands in either order) of an outer variable, as a statement. */
static bool rows_accumulate(rows *r, rows_loop *l, const ks_anode *e, const ks_anode *var) {
  const char *name = var->name ? var->name : "?";
  const char *fn = NULL;
  unsigned refs = 0;
  if (!ks_rt_is_expr_stmt(e))
    return rows_fail(r, "'%s' is assigned inside an expression in a column loop", name);
  if (e->kind == KS_AK_COMPOUND_ASSIGN && !strcmp(e->op, "+=") &&
      !ks_rt_count_refs(r->arena, e->kids[1], var)) {
    refs = 1;
  } else if (ks_rt_is_bin(e, "=")) {
    const ks_anode *v = ks_rt_strip(e->kids[1], false);
    const ks_anode *a = NULL, *b = NULL;
    if (ks_rt_is_bin(v, "+")) {
      a = v->kids[0];
      b = v->kids[1];
    } else if (v && v->kind == KS_AK_CALL && v->nkids == 2 &&
               ks_rt_is_minmax(ks_rt_callee(r->arena, v))) {
      a = v->kids[0];
      b = v->kids[1];
      fn = ks_rt_callee(r->arena, v);
    }
    if (a && ks_rt_refers_to(a, var) && !ks_rt_count_refs(r->arena, b, var))
      refs = 2;
    else if (b && ks_rt_refers_to(b, var) && !ks_rt_count_refs(r->arena, a, var))
      refs = 2;
  }
  if (!refs)
    return rows_fail(r, "'%s' is carried from one column to the next ('%s'), and is not a sum, "
                        "max or min the warp can combine",
                     name, ks_rt_text_of(r->arena, r->in, e));
  return rows_register(r, l, var, fn, refs);
}

/* A max or min written as an `if` (if_minmax): counted as `m = f(m, v)`. */
static bool rows_accumulate_fn(rows *r, rows_loop *l, const ks_anode *var, const char *fn) {
  return rows_register(r, l, var, fn, 2);
}

/* The accumulator `var` of loop `l`, updated by `fn` (NULL: a sum). */
static bool rows_register(rows *r, rows_loop *l, const ks_anode *var, const char *fn, unsigned refs) {
  const char *name = var->name ? var->name : "?";
  if (!is_shuffle_type(var->type) && !is_shuffle_type(var->canon_type) &&
      !ks_rt_is_template_type(r->k, var->type))
    return rows_fail(r, "the accumulator '%s' is a %s, not float, double or an integer", name,
                     var->type ? var->type : "(unknown type)");
  for (size_t i = 0; i < l->accs.len; i++) {
    rows_acc *acc = &l->accs.items[i];
    if (acc->var != var)
      continue;
    if ((acc->fn == NULL) != (fn == NULL) || (fn && strcmp(fn, acc->fn)))
      return rows_fail(r, "'%s' is updated in two ways in one loop", name);
    acc->refs += refs;
    return true;
  }
  rows_acc *acc = ks_array_push(r->arena, &l->accs);
  acc->var = var;
  acc->fn = fn;
  acc->refs = refs;
  return true;
}

typedef struct loop_walk {
  rows *r;
  rows_loop *l;
  const ks_anode *body;
} loop_walk;

/* `if (v > m) m = v;` (or `m < v`, `>=`, `<=`, braces or not, no else)
 * with v free of m and of side effects: what the compiler sees is m =
 * max(m, v), a maximum the warp can combine (min for `<`). Either keeps m
 * where v is NaN, as max() does; only the sign of an equal zero may
 * differ. Returns the IF's assignment, *fn the function. */
static const ks_anode *if_minmax(rows *r, const ks_anode *n, const char **fn) {
  if (n->kind != KS_AK_IF || n->nkids != 2)
    return NULL;
  const ks_anode *then = n->kids[1];
  while (then && then->kind == KS_AK_COMPOUND && then->nkids == 1)
    then = then->kids[0];
  const ks_anode *set = ks_rt_strip(then, false);
  const ks_anode *c = ks_rt_strip(n->kids[0], false);
  if (!set || !ks_rt_is_bin(set, "=") || !ks_rt_is_expr_stmt(set) || !c || c->kind != KS_AK_BINARY ||
      c->nkids != 2)
    return NULL;
  const ks_anode *m = ks_rt_strip(set->kids[0], true);
  if (!m || m->kind != KS_AK_DECL_REF || !m->decl || m->decl->kind != KS_AK_VAR)
    return NULL;
  const char *v = squeezed(r->arena, r->k, set->kids[1]);
  const char *lhs = squeezed(r->arena, r->k, c->kids[0]), *rhs = squeezed(r->arena, r->k, c->kids[1]);
  const char *mt = squeezed(r->arena, r->k, m);
  bool greater = !strcmp(c->op, ">") || !strcmp(c->op, ">=");
  bool less = !strcmp(c->op, "<") || !strcmp(c->op, "<=");
  if (!greater && !less)
    return NULL;
  /* v > m: max; m > v: min; v < m: min; m < v: max */
  bool v_left = !strcmp(lhs, v) && !strcmp(rhs, mt), v_right = !strcmp(rhs, v) && !strcmp(lhs, mt);
  if (!v_left && !v_right)
    return NULL;
  if (ks_rt_count_refs(r->arena, set->kids[1], m->decl))
    return NULL;
  ks_rt_nodes all = ks_rt_collect(r->arena, set->kids[1]);
  for (size_t i = 0; i < all.len; i++)
    if (all.items[i]->kind == KS_AK_CALL || ks_rt_is_assignment(all.items[i]) ||
        ks_rt_is_op(all.items[i], KS_AK_UNARY, "++") || ks_rt_is_op(all.items[i], KS_AK_UNARY, "--"))
      return NULL;
  *fn = (greater == v_left) ? "max" : "min";
  return set;
}

static bool loop_visit(ks_anode *n, void *arg) {
  loop_walk *w = arg;
  rows *r = w->r;
  if (r->why)
    return false;
  switch (n->kind) {
  case KS_AK_FOR:
  case KS_AK_WHILE:
  case KS_AK_DO:
    return rows_fail(r, "it has a loop inside a column loop");
  case KS_AK_BREAK:
  case KS_AK_RETURN:
    return rows_fail(r, "a column loop ends early (%s)", n->kind == KS_AK_BREAK ? "break" : "return");
  case KS_AK_OTHER:
    if (n->kind_name && (strstr(n->kind_name, "Goto") || strstr(n->kind_name, "Switch")))
      return rows_fail(r, "a column loop has a %s", n->kind_name);
    break;
  default:
    break;
  }
  const char *mm_fn;
  const ks_anode *mm_set = if_minmax(r, n, &mm_fn);
  if (mm_set) {
    /* the reads of the condition and of the value, then the maximum */
    if (!rows_expr(r, n->kids[0], w->l, NULL) || !rows_expr(r, mm_set->kids[1], w->l, NULL))
      return false;
    rows_accumulate_fn(r, w->l, ks_rt_strip(mm_set->kids[0], true)->decl, mm_fn);
    return false;
  }
  if (!ks_rt_is_assignment(n))
    return rows_expr_visit(n, &(rows_walk){r, w->l, NULL});
  const ks_anode *var;
  const ks_anode *mem = written(n->kids[0], &var);
  if (mem) {
    const ks_anode *m = ks_rt_strip(mem, false);
    if (!m || m->kind != KS_AK_SUBSCRIPT || m->nkids != 2 || !injective(r, m->kids[1], w->l->var)) {
      r->global_sum = !r->why;
      return rows_fail(r, "a column loop writes '%s', which is not one element per column",
                       ks_rt_text_of(r->arena, r->in, mem));
    }
    const char *root = access_root(r, m);
    add_access(r, m, root, true, w->l, NULL);
    if (!ks_rt_is_bin(n, "="))
      add_access(r, m, root, false, w->l, NULL);
    *ks_array_push(r->arena, &r->lhs) = m;
    return true;
  }
  if (!var)
    return rows_fail(r, "a column loop assigns '%s'", ks_rt_text_of(r->arena, r->in, n->kids[0]));
  if (var == w->l->var)
    return rows_fail(r, "a column loop assigns its column variable");
  if (inside(var, w->body))
    return true; /* a variable of one iteration */
  return rows_accumulate(r, w->l, n, var);
}

/* Integer types a column variable may have. */
static bool is_index_type(const char *type) {
  return type && !strchr(type, '*') && !strstr(type, "float") && !strstr(type, "double") &&
         !strstr(type, "half") && !strstr(type, "bool");
}

/* A loop `for (T c = start; c < end; ++c)` (or <=, !=, c += 1, c = c + 1,
 * c declared before the loop: rules_meaning.h) whose iterations are
 * independent but for accumulators. */
static bool rows_loop_check(rows *r, const ks_anode *f, const ks_anode *stmt) {
  if (f->from_macro)
    return rows_fail(r, "a loop comes from a macro");
  ks_loop_view v;
  if (!ks_meaning_loop(r->meaning, f, &v))
    return rows_fail(r, "a loop is not a counted loop 'for (c = start; c < end; ++c)': %s", v.why);
  const ks_anode *c = v.var, *start = v.start, *end = v.bound, *body = f->kids[3];
  if (!is_index_type(c->type))
    return rows_fail(r, "a loop does not count with an integer column variable");
  if (v.step != 1)
    return rows_fail(r, "a loop's step is not 1 ('%s')", ks_rt_text_of(r->arena, r->in, f->kids[2]));
  if (v.modified_in_body)
    return rows_fail(r, "a loop assigns its column variable in its body");
  if (v.used_after)
    return rows_fail(r, "'%s' is read after its loop (each lane would end with its own value)",
                     c->name);
  /* the rewrite edits the step (and a `!=` condition) */
  if (f->kids[2]->from_macro || (!strcmp(v.cmp, "!=") && v.cond->from_macro))
    return rows_fail(r, "a loop's step or condition comes from a macro");
  const ks_anode *inc = ks_rt_strip(f->kids[2], false);
  /* start and end: every lane evaluates them, alike */
  if (!rows_expr(r, start, NULL, NULL) || !rows_expr(r, end, NULL, NULL))
    return false;
  rows_loop *l = ks_arena_alloc(r->arena, sizeof *l);
  l->loop = f;
  l->stmt = stmt;
  l->var = c;
  l->start = start;
  l->inc = inc;
  l->ne = !strcmp(v.cmp, "!=") ? v.cond : NULL;
  l->end = end;
  loop_walk w = {r, l, body};
  ks_anode_walk((ks_anode *)body, loop_visit, &w);
  if (r->why)
    return false;
  /* an accumulator read for anything but its update carries a dependence
   * (in the header too: the bound would see one lane's part) */
  for (size_t i = 0; i < l->accs.len; i++)
    if (ks_rt_count_refs(r->arena, body, l->accs.items[i].var) != l->accs.items[i].refs ||
        ks_rt_count_refs(r->arena, start, l->accs.items[i].var) ||
        ks_rt_count_refs(r->arena, end, l->accs.items[i].var))
      return rows_fail(r, "'%s' is read in a column loop while it accumulates",
                       l->accs.items[i].var->name);
  *ks_array_push(r->arena, &r->loops) = l;
  return true;
}

static bool rows_stmt(rows *r, const ks_anode *s);

static bool rows_block(rows *r, const ks_anode *s) {
  if (!s)
    return true;
  if (s->kind != KS_AK_COMPOUND)
    return rows_stmt(r, s);
  for (size_t i = 0; i < s->nkids; i++)
    if (!rows_stmt(r, s->kids[i]))
      return false;
  return true;
}

/* A statement outside the column loops: every lane of the warp runs it
 * with the same values (the row is the warp's, the accumulators are
 * combined), so conditions and early returns keep the warp together. */
static bool rows_stmt(rows *r, const ks_anode *s) {
  switch (s->kind) {
  case KS_AK_COMPOUND:
    return rows_block(r, s);
  case KS_AK_DECL_STMT:
    for (size_t i = 0; i < s->nkids; i++) {
      const ks_anode *v = s->kids[i];
      if (v->kind == KS_AK_VAR && v != r->row_var && !rows_expr(r, ks_rt_var_init(v), NULL, NULL))
        return false;
    }
    return true;
  case KS_AK_IF:
    return rows_expr(r, s->kids[0], NULL, NULL) && rows_block(r, s->kids[1]) &&
           (s->nkids < 3 || rows_block(r, s->kids[2]));
  case KS_AK_RETURN:
    return s->nkids == 0 || rows_fail(r, "it returns a value");
  case KS_AK_FOR:
    return rows_loop_check(r, s, s);
  case KS_AK_WHILE:
  case KS_AK_DO:
    return rows_fail(r, "it has a %s loop", s->kind == KS_AK_WHILE ? "while" : "do");
  case KS_AK_BREAK:
  case KS_AK_CONTINUE:
    return rows_fail(r, "it has a break or continue outside a column loop");
  case KS_AK_OTHER:
    if (s->kind_name && !strcmp(s->kind_name, "NullStmt"))
      return true;
    if (s->nkids == 1 && s->kids[0] && s->kids[0]->kind == KS_AK_FOR)
      return rows_loop_check(r, s->kids[0], s); /* #pragma unroll */
    if (s->kind_name && strstr(s->kind_name, "Stmt"))
      return rows_fail(r, "it has a %s", s->kind_name);
    return rows_expr_stmt(r, s);
  default:
    return rows_expr_stmt(r, s);
  }
}

/* Do two column loops give each column to the same lane? They do when
 * they start at the same value: a number, or names nothing assigns. */
static bool same_lanes(rows *r, const rows_loop *a, const rows_loop *b) {
  if (strcmp(squeezed(r->arena, r->k, a->start), squeezed(r->arena, r->k, b->start)) ||
      strcmp(a->var->name, b->var->name))
    return false;
  ks_rt_nodes all = ks_rt_collect(r->arena, a->start);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (is_memory(n) || n->kind == KS_AK_CALL ||
        (n->kind == KS_AK_DECL_REF && (!n->decl || ks_rt_modified(r->k->body, n->decl))))
      return false;
  }
  return true;
}

/* A read by every lane, before the column loops, of the very element lane
 * 0 writes after them (`float acc = y[i]; for (...) acc += ...; y[i] =
 * acc;`, what scalar_replace makes of `y[i] += ...` in a loop): every lane
 * has read it before the warp's butterfly, which all 32 lanes must reach,
 * and a __syncwarp() before lane 0's store orders the memory too. */
static bool read_before_lane0(rows *r, const rows_access *store, const rows_access *read) {
  if (read->store || read->loop || read->lane0 || strcmp(store->key, read->key))
    return false;
  for (size_t i = 0; i < r->loops.len; i++)
    if (read->node->begin >= r->loops.items[i]->stmt->begin)
      return false;
  ks_rt_nodes all = ks_rt_collect(r->arena, read->node);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n != read->node && (is_memory(n) || n->kind == KS_AK_CALL))
      return false;
    if (n->kind == KS_AK_DECL_REF && (!n->decl || ks_rt_modified(r->k->body, n->decl)) &&
        n->decl != r->row_var)
      return false;
  }
  return true;
}

/* Two lanes never touch one element where one of them writes it, and no
 * lane reads what lane 0 alone writes (but read_before_lane0's reads): a
 * buffer written in a column loop
 * is accessed only in column loops, at the very address of the write, and
 * in loops that give each column to the same lane; a buffer written
 * outside the loops is accessed only by lane 0. Buffers are told apart by
 * the pointer parameter they come from (separate buffers, as the judge
 * allocates them). */
static bool rows_dependences(rows *r) {
  bool any_store = false;
  for (size_t i = 0; i < r->access.len; i++)
    any_store |= r->access.items[i].store;
  for (size_t i = 0; i < r->access.len; i++) {
    const rows_access *a = &r->access.items[i];
    if (!a->root && (a->store || any_store))
      return rows_fail(r, "it %s '%s', whose buffer the rule cannot trace", a->store ? "writes" : "reads",
                       a->text);
    if (!a->store)
      continue;
    if (ks_rt_has_prefix(a->root, "local "))
      return rows_fail(r, "it writes the per-thread array element '%s'", a->text);
    for (size_t j = 0; j < r->access.len; j++) {
      const rows_access *b = &r->access.items[j];
      if (j == i || !b->root || strcmp(a->root, b->root))
        continue;
      /* the same address in the same lane: the same loop, or another one
       * that gives its columns to the same lanes */
      bool ok = a->loop ? b->loop && !strcmp(a->key, b->key) &&
                              (b->loop == a->loop || same_lanes(r, a->loop, b->loop))
                        : !b->loop && b->lane0;
      if (!ok && !a->loop && read_before_lane0(r, a, b))
        ok = r->sync_lane0 = true;
      if (!ok)
        return rows_fail(r, "it writes '%s' and %s '%s'%s", a->text, b->store ? "writes" : "reads",
                         b->text, a->loop ? " at another column or outside the loop" : "");
    }
  }
  return true;
}

/* The row index: `row = blockIdx.x * blockDim.x + threadIdx.x` declared
 * at the top of the kernel's body, the only place the kernel reads its
 * thread coordinates. */
static bool rows_find_row(rows *r) {
  const ks_anode *body = r->k->body;
  for (size_t i = 0; body && i < body->nkids && !r->row_var; i++) {
    const ks_anode *s = body->kids[i];
    if (s->kind != KS_AK_DECL_STMT)
      continue;
    for (size_t j = 0; j < s->nkids; j++) {
      const ks_anode *init = ks_rt_var_init(s->kids[j]);
      if (init && ks_rt_global_index(init, 'x', NULL)) {
        r->row_var = s->kids[j];
        r->row_init = init;
        break;
      }
    }
  }
  if (!r->row_var)
    return rows_fail(r, "it computes no row index 'blockIdx.x * blockDim.x + threadIdx.x' at the "
                        "top of its body");
  const char *decl = ks_rt_text_of(r->arena, r->in, r->row_var);
  if (r->row_var->from_macro || r->row_init->from_macro)
    return rows_fail(r, "its row index comes from a macro");
  if (ks_rt_has_prefix(decl, "auto") || ks_rt_has_prefix(decl, "const auto"))
    return rows_fail(r, "its row index is declared 'auto'");
  if (!strchr(decl, '=') || strchr(decl, '{'))
    return rows_fail(r, "its row index is not initialized with '='");
  if (ks_rt_modified(body, r->row_var))
    return rows_fail(r, "it changes its row index");
  unsigned allowed[2] = {r->row_init->begin, r->row_init->end};
  const char *problem = ks_rt_mapping_problem(r->arena, r->in, allowed, 1);
  if (problem)
    return rows_fail(r, "it %s", problem);
  ks_rt_nodes all = ks_rt_collect(r->arena, body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind == KS_AK_DECL_REF && !n->decl && n->name && !strcmp(n->name, "blockDim") &&
        !inside(n, r->row_init))
      return rows_fail(r, "it reads blockDim outside its row index");
  }
  return true;
}

/* ---- warp_rows: the rewrite ---- */

/* A sum that starts from a literal 0 declared right before the loop: its
 * lanes can start from 0 as they are. Any other sum is set aside and added
 * back after the warp's total, else each lane would count it once. */
static bool sum_from_zero(rows *r, const rows_loop *l, const ks_anode *var) {
  const ks_anode *stmt = var->parent; /* its DECL_STMT, in the loop's block */
  if (var->kind != KS_AK_VAR || !stmt || stmt->parent != l->stmt->parent)
    return false;
  const ks_anode *init = ks_rt_strip(ks_rt_var_init(var), true);
  bool zero = init && ((init->kind == KS_AK_INT_LITERAL && init->int_value == 0) ||
                       (init->kind == KS_AK_FLOAT_LITERAL &&
                        strtod(ks_rt_text_of(r->arena, r->in, init), NULL) == 0.0));
  if (!zero || stmt->end > l->stmt->begin)
    return false;
  ks_rt_nodes all = ks_rt_collect(r->arena, r->k->body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind == KS_AK_DECL_REF && n->decl == var && n->begin > stmt->end && n->begin < l->stmt->begin)
      return false;
  }
  return true;
}

static void rows_edit_loop(rows *r, ks_edits *e, const rows_loop *l, const char *lane) {
  const ks_rule_input *in = r->in;
  ks_arena *arena = r->arena;
  const char *unit = in->unit;
  const ks_anode *f = l->stmt;
  const char *indent = ks_rt_line_indent(arena, unit, f->begin);
  bool braces = !f->parent || f->parent->kind != KS_AK_COMPOUND;
  const char *off = ks_rt_fresh(arena, in->parent->source, "ks_off");

  /* start + lane, step lanes */
  const ks_anode *s = ks_rt_strip(l->start, true);
  const char *start =
      ks_rt_is_int(l->start, 0)
          ? lane
          : ks_arena_printf(
                arena, "%s + %s",
                s->kind == KS_AK_DECL_REF || s->kind == KS_AK_SUBSCRIPT || s->kind == KS_AK_CALL ||
                        s->kind == KS_AK_MEMBER || s->kind == KS_AK_INT_LITERAL
                    ? ks_rt_text_of(r->arena, r->in, l->start)
                    : ks_arena_printf(arena, "(%s)", ks_rt_text_of(r->arena, r->in, l->start)),
                lane);
  ks_edits_add(arena, e, ks_rt_src_at(in, l->start->begin), ks_rt_src_at(in, l->start->end), start);
  ks_edits_add(arena, e, ks_rt_src_at(in, l->inc->begin), ks_rt_src_at(in, l->inc->end),
               ks_arena_printf(arena, "%s += %d", l->var->name, r->lanes));
  /* a stride of lanes steps past `end`: `c != end` becomes `c < end` */
  if (l->ne)
    ks_edits_add(arena, e, ks_rt_src_at(in, l->ne->begin), ks_rt_src_at(in, l->ne->end),
                 ks_arena_printf(arena, "%s < %s", l->var->name,
                                 l->end->from_macro
                                     ? ks_arena_printf(arena, "(%s)", ks_rt_text_of(arena, in, l->end))
                                     : ks_rt_paren(arena, ks_rt_text_of(arena, in, l->end))));

  ks_buf before = KS_BUF_INIT, after = KS_BUF_INIT;
  if (braces)
    ks_buf_adds(&before, "{ ");
  for (size_t i = 0; i < l->accs.len; i++) {
    const rows_acc *a = &l->accs.items[i];
    const char *v = a->var->name;
    const char *saved = NULL;
    if (!a->fn && !sum_from_zero(r, l, a->var)) {
      saved = ks_rt_fresh(arena, in->parent->source, ks_arena_printf(arena, "ks_%s_before", v));
      ks_buf_addf(&before, "auto %s = %s;\n%s%s = 0;\n%s", saved, v, indent, v, indent);
    }
    /* The XOR butterfly: both lanes of each pair add the same two values,
     * so every lane ends with the same bits. Offsets below the lanes per
     * row keep it inside the row's group. */
    if (a->fn)
      ks_buf_addf(&after, "\n%sfor (int %s = %d; %s > 0; %s >>= 1)\n%s%s = %s(%s, __shfl_xor_sync(%s, %s, %s));",
                  indent, off, r->lanes / 2, off, off, ks_rt_deeper(arena, in, indent), v, a->fn, v,
                  r->mask, v, off);
    else
      ks_buf_addf(&after, "\n%sfor (int %s = %d; %s > 0; %s >>= 1) %s += __shfl_xor_sync(%s, %s, %s);",
                  indent, off, r->lanes / 2, off, off, v, r->mask, v, off);
    if (saved)
      ks_buf_addf(&after, "\n%s%s = %s + %s;", indent, v, saved, v);
  }
  if (braces)
    ks_buf_adds(&after, " }");
  if (before.len)
    ks_edits_add(arena, e, ks_rt_src_at(in, ks_rt_begin_with_pragmas(unit, f->begin)),
                 ks_rt_src_at(in, ks_rt_begin_with_pragmas(unit, f->begin)),
                 ks_arena_strdup(arena, before.data));
  if (after.len) {
    unsigned end = ks_rt_stmt_end_deep(unit, f);
    ks_edits_add(arena, e, ks_rt_src_at(in, end), ks_rt_src_at(in, end), ks_arena_strdup(arena, after.data));
  }
  ks_buf_release(&before);
  ks_buf_release(&after);
}

/* The block size (one warp per row), or block * 100 + lanes per row (a
 * group of 4, 8 or 16 lanes of a warp per row: short rows, as a sparse
 * matrix's, leave most of a warp idle). */
static const int warp_rows_choices[] = {128, 256, 512, 25608, 25604, 25616, 12808};

static int apply_warp_rows(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                           ks_rule_result *out) {
  int block = param > 1024 ? param / 100 : param, lanes = param > 1024 ? param % 100 : 32;
  if (block < 32 || block > 1024 || block % 32)
    return ks_rt_not_applicable(arena, out, "its block size must be a multiple of 32 up to 1024, not %d",
                                block);
  if (lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32)
    return ks_rt_not_applicable(arena, out, "a row's lanes must be 4, 8, 16 or 32, not %d", lanes);
  rows r = {.arena = arena, .in = in, .k = in->ast, .lanes = lanes, .mask = "0xffffffffu"};
  r.meaning = ks_meaning_open(ctx, in->ast, arena);
  bool matched = rows_find_row(&r) && rows_block(&r, in->ast->body) && rows_dependences(&r);
  ks_meaning_close(r.meaning);
  if (!matched && r.global_sum) {
    /* `y[i] += a[i * n + j] * x[j]` in the column loop: what the compiler
     * sees is a sum into one element, which scalar_replace keeps in a
     * register (guarded by disjoint()); then the row is the usual one. */
    ks_rule_result both;
    if (ks_rule_then(ctx, in, &ks_rule_scalar_replace, 0, &ks_rule_warp_rows, param, arena, &both))
      return -1;
    if (both.applied) {
      *out = both;
      return 0;
    }
  }
  if (!matched)
    return ks_rt_not_applicable(arena, out, "%s", r.why);
  if (!r.loops.len)
    return ks_rt_not_applicable(arena, out, "it has no loop over a row's columns");
  unsigned first = r.row_var->parent->begin;
  if (first < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its code is outside the variant");

  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return ks_rt_not_applicable(arena, out, "its launch policy: %s", ctx->error);
  long long dims[4];
  const char *yz[4] = {p.grid[1], p.grid[2], p.block[1], p.block[2]};
  for (int d = 0; d < 4; d++)
    if (ks_rule_eval(ctx, in, yz[d], &dims[d]))
      return ks_rt_not_applicable(arena, out, "its launch does not evaluate at the timed size: %s",
                                  ctx->error);
  if (dims[0] * dims[1] * dims[2] * dims[3] != 1)
    return ks_rt_not_applicable(arena, out, "its launch is not 1-D");

  ks_edits e = {0};
  const char *unit = in->unit;
  const char *lane = ks_rt_fresh(arena, in->parent->source, "ks_lane");
  const char *indent = ks_rt_line_indent(arena, unit, first);
  /* One warp per row: whole warps share a row, so every warp is full
   * (the block is a multiple of 32) and the row's bounds check sends
   * whole warps home together. A group of lanes per row: the group's
   * lanes share the row and its control flow, the warp's other groups
   * may leave at the bounds check, so the shuffles name the group alone
   * (a mask of its lanes; the butterfly's offsets stay inside it). */
  if (lanes == 32) {
    ks_edits_add(arena, &e, ks_rt_src_at(in, first), ks_rt_src_at(in, first),
                 ks_arena_printf(arena, "const int %s = threadIdx.x %% 32;  // one warp per row\n%s",
                                 lane, indent));
  } else {
    r.mask = ks_rt_fresh(arena, in->parent->source, "ks_mask");
    ks_edits_add(arena, &e, ks_rt_src_at(in, first), ks_rt_src_at(in, first),
                 ks_arena_printf(arena,
                                 "const int %s = threadIdx.x %% %d;  // %d lanes per row\n%s"
                                 "const unsigned %s = 0x%xu << (threadIdx.x %% 32 / %d * %d);\n%s",
                                 lane, lanes, lanes, indent, r.mask, (1u << lanes) - 1, lanes, lanes,
                                 indent));
  }
  ks_edits_add(arena, &e, ks_rt_src_at(in, r.row_init->begin), ks_rt_src_at(in, r.row_init->end),
               ks_arena_printf(arena, "((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / %d",
                               lanes));
  for (size_t i = 0; i < r.loops.len; i++)
    rows_edit_loop(&r, &e, r.loops.items[i], lane);
  /* Stores of per-row values: every lane has the same value; one writes. */
  for (size_t i = 0; i < r.lane0.len; i++) {
    const ks_anode *s = r.lane0.items[i];
    const ks_anode *child;
    const ks_anode *parent = ks_rt_up(s, &child);
    bool braces = !parent || parent->kind != KS_AK_COMPOUND;
    ks_edits_add(arena, &e, ks_rt_src_at(in, child->begin), ks_rt_src_at(in, child->begin),
                 ks_arena_printf(arena, "%s%sif (%s == 0) ", braces ? "{ " : "",
                                 !(r.sync_lane0 && i == 0) ? ""
                                 : lanes == 32            ? "__syncwarp(); "
                                                          : ks_arena_printf(arena, "__syncwarp(%s); ", r.mask),
                                 lane));
    if (braces) {
      unsigned end = ks_rt_stmt_end_deep(unit, child);
      ks_edits_add(arena, &e, ks_rt_src_at(in, end), ks_rt_src_at(in, end), " }");
    }
  }
  /* A __launch_bounds__ below the new block would make the launch fail. */
  const ks_anode *fn = in->ast->fn;
  for (size_t i = 0; fn && i < fn->nkids; i++) {
    const ks_anode *a = fn->kids[i];
    if (a->kind != KS_AK_ATTR || !a->name || strcmp(a->name, "__launch_bounds__") ||
        a->begin < in->variant_offset)
      continue;
    const char *text = ks_rt_text_of(arena, in, a);
    const char *open = strchr(text, '(');
    const char *close = open ? ks_ctext_matching(open, text + strlen(text)) : NULL;
    ks_strings args = {0};
    if (close)
      ks_ctext_split(arena, open + 1, close, &args);
    ks_edits_add(arena, &e, ks_rt_src_at(in, a->begin), ks_rt_src_at(in, a->end),
                 args.len > 1 ? ks_arena_printf(arena, "__launch_bounds__(%d, %s)", block, args.items[1])
                              : ks_arena_printf(arena, "__launch_bounds__(%d)", block));
  }
  const char *technique = lanes == 32 ? ks_arena_printf(arena, "warp_rows=%d", block)
                                      : ks_arena_printf(arena, "warp_rows=%d/%d", block, lanes);
  if (ks_rt_finish(ctx, in, arena, &e, technique, out))
    return -1;

  /* `lanes` lanes for each thread the parent launched. */
  const char *g = ks_rt_paren(arena, p.grid[0]), *b = ks_rt_paren(arena, p.block[0]);
  p.grid[0] = ks_arena_printf(arena, "ceil_div(%s * %s * %d, %d)", g, b, lanes, block);
  p.block[0] = ks_arena_printf(arena, "%d", block);
  /* y and z only repeated the rows (the kernel reads no other coordinate) */
  p.grid[1] = p.grid[2] = p.block[1] = p.block[2] = "1";
  ks_rule_policy_write(arena, &p, &out->child);
  /* Without a bounds check on the row, a partly used last block would run
   * rows the parent never ran: only whole blocks then. */
  bool bounded = false;
  ks_rt_nodes all = ks_rt_collect(arena, in->ast->body);
  for (size_t i = 0; i < all.len && !bounded; i++) {
    const ks_anode *n = all.items[i];
    bool cmp = n->kind == KS_AK_BINARY && n->nkids == 2 &&
               (!strcmp(n->op, "<") || !strcmp(n->op, "<=") || !strcmp(n->op, ">") ||
                !strcmp(n->op, ">="));
    bounded = cmp && (ks_rt_refers_to(ks_rt_strip(n->kids[0], true), r.row_var) ||
                      ks_rt_refers_to(ks_rt_strip(n->kids[1], true), r.row_var));
  }
  if (!bounded)
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "%s * %s * %d %% %d == 0", g, b, lanes, block));
  return 0;
}

const ks_rule ks_rule_warp_rows = {
    "warp_rows",
    "one warp per row instead of one thread: column loops stride by 32 lanes, sums and max/min "
    "combined with warp shuffles; PARAM threads per block, or block * 100 + lanes per row (4, 8, "
    "16: a group of a warp per short row)",
    false,
    warp_rows_choices,
    sizeof warp_rows_choices / sizeof *warp_rows_choices,
    apply_warp_rows};
