/* rules_warp_reduce: warp_reduce and warp_atomic, two rewrites that add
 * within a warp (shuffles) before shared or global memory sees the values.
 *
 *   warp_reduce  a shared-memory tree reduction of a block into element 0
 *                becomes warp shuffles, one value per warp in shared
 *                memory, and one more warp of shuffles;
 *   warp_atomic  atomicAdd becomes one atomic per warp (same address for
 *                the whole warp) or per group of lanes with the same
 *                address (__match_any_sync), after adding within the warp.
 *
 * Each matches its pattern on the kernel's tree and says, in one line, why
 * it does not apply where the pattern or one of its conditions is missing;
 * docs/rules.md gives the conditions and the reasoning behind them. Names
 * the rewrites introduce are fresh (ks_rt_fresh), so they neither clash with
 * the user's nor with those of an earlier rewrite. warp_rows, the third warp
 * rule, is in rules_warp_rows.c. */
#include <string.h>

#include "ks_buf.h"
#include "rules_tree.h"

/* ==== warp_reduce ========================================================== */

/* A block's tree reduction in shared memory:
 *   for (s = 1; s < N; s *= 2) { if (tid % (2 * s) == 0) P[tid] += P[tid + s]; __syncthreads(); }
 *   for (s = N / 2; s > 0; s >>= 1) { if (tid < s) P[tid] += P[tid + s]; __syncthreads(); }
 * with N blockDim.x, a template value or a number, and += or max/min. */
typedef struct tree_red {
  const ks_anode *loop, *s;
  const ks_anode *arr;     /* the __shared__ array */
  const ks_anode *size;    /* N */
  const ks_anode *tid_var; /* "unsigned tid = threadIdx.x", or NULL */
  bool have_tid;
  const char *fn;          /* max/min; NULL for a sum */
} tree_red;

/* threadIdx.x, or a variable that holds it; the same one throughout. */
static bool red_tid(tree_red *t, const ks_kast *k, const ks_anode *n) {
  n = ks_rt_strip(n, true);
  const ks_anode *var = NULL;
  if (!n)
    return false;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR) {
    var = n->decl;
    if (!ks_anode_is_builtin(ks_rt_strip(ks_rt_var_init(var), true), "threadIdx", 'x') ||
        ks_rt_modified(k->body, var))
      return false;
  } else if (!ks_anode_is_builtin(n, "threadIdx", 'x')) {
    return false;
  }
  if (t->have_tid)
    return t->tid_var == var;
  t->have_tid = true;
  t->tid_var = var;
  return true;
}

static bool is_s(const tree_red *t, const ks_anode *n) {
  return ks_rt_refers_to(ks_rt_strip(n, true), t->s);
}

/* 2 * s, s * 2, s << 1, s + s */
static bool is_twice_s(const tree_red *t, const ks_anode *n) {
  n = ks_rt_strip(n, true);
  return ((ks_rt_is_bin(n, "*") && ((ks_rt_is_int(n->kids[0], 2) && is_s(t, n->kids[1])) ||
                                    (is_s(t, n->kids[0]) && ks_rt_is_int(n->kids[1], 2)))) ||
          (ks_rt_is_bin(n, "<<") && is_s(t, n->kids[0]) && ks_rt_is_int(n->kids[1], 1)) ||
          (ks_rt_is_bin(n, "+") && is_s(t, n->kids[0]) && is_s(t, n->kids[1])));
}

/* blockDim.x, a template value parameter or a number */
static bool red_size(const ks_anode *n) {
  n = ks_rt_strip(n, true);
  return n && (ks_anode_is_builtin(n, "blockDim", 'x') || n->kind == KS_AK_INT_LITERAL ||
               (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_TEMPLATE_PARAM));
}

/* s doubles (interleaved) or halves */
static bool red_step(const tree_red *t, const ks_anode *inc, bool doubling) {
  inc = ks_rt_strip(inc, false);
  if (!inc || inc->nkids != 2 || !is_s(t, inc->kids[0]))
    return false;
  const ks_anode *v = ks_rt_strip(inc->kids[1], true);
  if (inc->kind == KS_AK_COMPOUND_ASSIGN)
    return doubling ? (!strcmp(inc->op, "*=") && ks_rt_is_int(v, 2)) ||
                          (!strcmp(inc->op, "<<=") && ks_rt_is_int(v, 1)) ||
                          (!strcmp(inc->op, "+=") && is_s(t, v))
                    : (!strcmp(inc->op, "/=") && ks_rt_is_int(v, 2)) ||
                          (!strcmp(inc->op, ">>=") && ks_rt_is_int(v, 1));
  if (!ks_rt_is_bin(inc, "="))
    return false;
  return doubling
             ? is_twice_s(t, v)
             : (ks_rt_is_bin(v, "/") && is_s(t, v->kids[0]) && ks_rt_is_int(v->kids[1], 2)) ||
                   (ks_rt_is_bin(v, ">>") && is_s(t, v->kids[0]) && ks_rt_is_int(v->kids[1], 1));
}

/* P[tid] with P __shared__; sets t->arr */
static bool red_elem(tree_red *t, const ks_kast *k, const ks_anode *n, bool plus_s) {
  n = ks_rt_strip(n, false);
  if (!n || n->kind != KS_AK_SUBSCRIPT || n->nkids != 2)
    return false;
  const ks_anode *base = ks_rt_strip(n->kids[0], true);
  if (!base || base->kind != KS_AK_DECL_REF || !base->decl || !base->decl->shared_space ||
      (t->arr && t->arr != base->decl))
    return false;
  t->arr = base->decl;
  const ks_anode *i = ks_rt_strip(n->kids[1], true);
  if (!plus_s)
    return red_tid(t, k, i);
  return ks_rt_is_bin(i, "+") && ((red_tid(t, k, i->kids[0]) && is_s(t, i->kids[1])) ||
                                  (is_s(t, i->kids[0]) && red_tid(t, k, i->kids[1])));
}

/* P[tid] += P[tid + s], P[tid] = P[tid] + P[tid + s], P[tid] = max(P[tid], P[tid + s]) */
static bool red_update(tree_red *t, const ks_kast *k, ks_arena *arena, const ks_anode *e) {
  e = ks_rt_strip(e, false);
  while (e && e->kind == KS_AK_COMPOUND && e->nkids == 1)
    e = ks_rt_strip(e->kids[0], false);
  if (!e || e->nkids != 2 || !red_elem(t, k, e->kids[0], false))
    return false;
  if (e->kind == KS_AK_COMPOUND_ASSIGN)
    return !strcmp(e->op, "+=") && red_elem(t, k, e->kids[1], true);
  if (!ks_rt_is_bin(e, "="))
    return false;
  const ks_anode *v = ks_rt_strip(e->kids[1], false);
  if (v && v->kind == KS_AK_CALL && v->nkids == 2 && ks_rt_is_minmax(ks_rt_callee(arena, v)))
    t->fn = ks_rt_callee(arena, v);
  else if (!ks_rt_is_bin(v, "+"))
    return false;
  return (red_elem(t, k, v->kids[0], false) && red_elem(t, k, v->kids[1], true)) ||
         (red_elem(t, k, v->kids[0], true) && red_elem(t, k, v->kids[1], false));
}

/* The loop's header, body and what follows it. */
static bool red_match(tree_red *t, const ks_kast *k, ks_arena *arena, const ks_anode *f) {
  const ks_anode *init = f->kids[0], *cond = ks_rt_strip(f->kids[1], false), *body = f->kids[3];
  if (!init || init->kind != KS_AK_DECL_STMT || init->nkids != 1 || !cond || !f->kids[2] || !body)
    return false;
  t->loop = f;
  t->s = init->kids[0];
  const ks_anode *start = ks_rt_strip(ks_rt_var_init(t->s), true);
  if (!start)
    return false;
  bool interleaved = ks_rt_is_int(start, 1);
  if (interleaved) {
    if (!ks_rt_is_bin(cond, "<") || !is_s(t, cond->kids[0]) || !red_size(cond->kids[1]))
      return false;
    t->size = ks_rt_strip(cond->kids[1], true);
  } else {
    if (!(ks_rt_is_bin(start, "/") && ks_rt_is_int(start->kids[1], 2)) &&
        !(ks_rt_is_bin(start, ">>") && ks_rt_is_int(start->kids[1], 1)))
      return false;
    if (!red_size(start->kids[0]))
      return false;
    t->size = ks_rt_strip(start->kids[0], true);
    bool positive =
        ((ks_rt_is_bin(cond, ">") || ks_rt_is_bin(cond, "!=")) && is_s(t, cond->kids[0]) &&
         ks_rt_is_int(cond->kids[1], 0)) ||
        (ks_rt_is_bin(cond, ">=") && is_s(t, cond->kids[0]) && ks_rt_is_int(cond->kids[1], 1)) ||
        (ks_rt_is_bin(cond, "<") && ks_rt_is_int(cond->kids[0], 0) && is_s(t, cond->kids[1]));
    if (!positive)
      return false;
  }
  if (!red_step(t, f->kids[2], interleaved))
    return false;
  if (body->kind != KS_AK_COMPOUND || body->nkids != 2)
    return false;
  const ks_anode *iff = body->kids[0], *sync = ks_rt_strip(body->kids[1], false);
  if (iff->kind != KS_AK_IF || iff->nkids != 2 || !sync || sync->kind != KS_AK_CALL ||
      sync->nkids || strcmp(ks_rt_callee(arena, sync), "__syncthreads"))
    return false;
  const ks_anode *c = ks_rt_strip(iff->kids[0], true);
  bool cond_ok;
  if (interleaved) {
    /* tid % (2 * s) == 0, or tid & (2 * s - 1) */
    const ks_anode *x = NULL;
    if (ks_rt_is_bin(c, "==") && ks_rt_is_int(c->kids[1], 0))
      x = ks_rt_strip(c->kids[0], true);
    else if (ks_rt_is_bin(c, "==") && ks_rt_is_int(c->kids[0], 0))
      x = ks_rt_strip(c->kids[1], true);
    cond_ok =
        x && ((ks_rt_is_bin(x, "%") && red_tid(t, k, x->kids[0]) && is_twice_s(t, x->kids[1])) ||
              (ks_rt_is_bin(x, "&") && red_tid(t, k, x->kids[0]) &&
               ks_rt_is_bin(ks_rt_strip(x->kids[1], true), "-") &&
               is_twice_s(t, ks_rt_strip(x->kids[1], true)->kids[0]) &&
               ks_rt_is_int(ks_rt_strip(x->kids[1], true)->kids[1], 1)));
  } else {
    cond_ok = (ks_rt_is_bin(c, "<") && red_tid(t, k, c->kids[0]) && is_s(t, c->kids[1])) ||
              (ks_rt_is_bin(c, ">") && is_s(t, c->kids[0]) && red_tid(t, k, c->kids[1]));
  }
  return cond_ok && red_update(t, k, arena, iff->kids[1]);
}

/* After the loop the array is read at [0] only: the other elements hold
 * partial sums that the rewrite does not reproduce. */
static const char *red_after(const tree_red *t, ks_arena *arena, const ks_kast *k) {
  ks_rt_nodes all = ks_rt_collect(arena, k->body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_DECL_REF || n->decl != t->arr || n->begin < t->loop->end)
      continue;
    const ks_anode *child;
    const ks_anode *p = ks_rt_up(n, &child);
    if (!p || p->kind != KS_AK_SUBSCRIPT || p->nkids != 2 || p->kids[0] != child ||
        !ks_rt_is_int(p->kids[1], 0))
      return ks_anode_text(arena, k, p ? p : n);
  }
  return NULL;
}

static const char *red_step_text(ks_arena *arena, const char *fn, const char *v, const char *off) {
  return fn ? ks_arena_printf(arena, "for (int %s = 16; %s > 0; %s >>= 1) %s = %s(%s, __shfl_down_sync(0xffffffffu, %s, %s));",
                              off, off, off, v, fn, v, v, off)
            : ks_arena_printf(arena, "for (int %s = 16; %s > 0; %s >>= 1) %s += __shfl_down_sync(0xffffffffu, %s, %s);",
                              off, off, off, v, v, off);
}

static int apply_warp_reduce(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                             ks_rule_result *out) {
  (void)param;
  const ks_kast *k = in->ast;
  ks_rt_nodes all = ks_rt_collect(arena, k->body);
  for (size_t i = 0; i < all.len; i++)
    if (all.items[i]->kind == KS_AK_CALL &&
        ks_rt_has_prefix(ks_rt_callee(arena, all.items[i]), "__shfl"))
      return ks_rt_not_applicable(arena, out, "it already reduces with warp shuffles (%s)",
                                  ks_rt_callee(arena, all.items[i]));
  tree_red t = {0};
  bool found = false;
  for (size_t i = 0; i < all.len && !found; i++) {
    if (all.items[i]->kind != KS_AK_FOR)
      continue;
    memset(&t, 0, sizeof t);
    found = red_match(&t, k, arena, all.items[i]);
  }
  if (!found)
    return ks_rt_not_applicable(arena, out, "it has no shared-memory tree reduction of its block into "
                                            "element 0 (for (s = N / 2; s > 0; s >>= 1) { if (tid < s) "
                                            "P[tid] += P[tid + s]; __syncthreads(); } or the s *= 2 form)");
  const ks_anode *f = t.loop;
  if (f->from_macro || f->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its reduction loop comes from a macro");
  for (const ks_anode *p = f->parent; p; p = p->parent)
    if (p->kind == KS_AK_FOR || p->kind == KS_AK_WHILE || p->kind == KS_AK_DO)
      return ks_rt_not_applicable(arena, out, "its reduction runs inside another loop");
  const char *after = red_after(&t, arena, k);
  if (after)
    return ks_rt_not_applicable(arena, out, "after the reduction it reads '%s', not only element 0", after);

  /* The block: a whole number of warps (full masks), a power of two (the
   * tree's own condition), 1-D (tid is the thread's rank in the block). */
  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return ks_rt_not_applicable(arena, out, "its launch policy: %s", ctx->error);
  long long bx, by, bz;
  if (ks_rule_eval(ctx, in, p.block[0], &bx) || ks_rule_eval(ctx, in, p.block[1], &by) ||
      ks_rule_eval(ctx, in, p.block[2], &bz))
    return ks_rt_not_applicable(arena, out, "its launch does not evaluate at the timed size: %s", ctx->error);
  if (by * bz != 1)
    return ks_rt_not_applicable(arena, out, "its block is not 1-D");
  if (bx % 32 || bx > 1024 || (bx & (bx - 1)))
    return ks_rt_not_applicable(arena, out, "its block of %lld threads is not a power of two multiple of 32", bx);
  const char *n_text = ks_anode_text(arena, k, t.size);
  bool size_is_block = ks_anode_is_builtin(t.size, "blockDim", 'x');
  if (t.size->kind == KS_AK_INT_LITERAL && t.size->int_value != bx)
    return ks_rt_not_applicable(arena, out, "it reduces %s elements with a block of %lld threads", n_text, bx);

  const char *unit = in->unit;
  const char *src = in->parent->source;
  const char *tid = t.tid_var ? t.tid_var->name : "threadIdx.x";
  const char *arr = t.arr->name;
  const char *v = ks_rt_fresh(arena, src, "ks_v"), *off = ks_rt_fresh(arena, src, "ks_off");
  unsigned begin = ks_rt_begin_with_pragmas(unit, f->begin), end = ks_rt_stmt_end_deep(unit, f);
  const char *ind = ks_rt_line_indent(arena, unit, f->begin);
  /* with a template value or a number, the block may not be N threads:
   * the original loop stays for that case */
  const char *i1 = size_is_block ? ind : ks_rt_deeper(arena, in, ind),
             *i2 = ks_rt_deeper(arena, in, i1);
  const char *step = red_step_text(arena, t.fn, v, off);
  ks_buf b = KS_BUF_INIT;
  if (!size_is_block)
    ks_buf_addf(&b, "if (blockDim.x == %s) {\n%s", n_text, i1);
  ks_buf_addf(&b, "auto %s = %s[%s];\n", v, arr, tid);
  ks_buf_addf(&b, "%s%s\n", i1, step);
  ks_buf_addf(&b, "%s// Lane 0 of each warp keeps its warp's result in its own element, which no\n"
                  "%s// other thread reads: no barrier is needed before the write.\n", i1, i1);
  ks_buf_addf(&b, "%sif (%s %% 32 == 0) %s[%s] = %s;\n", i1, tid, arr, tid, v);
  ks_buf_addf(&b, "%s__syncthreads();\n", i1);
  ks_buf_addf(&b, "%sif (%s < 32) {\n", i1, tid);
  if (t.fn)
    ks_buf_addf(&b, "%s%s = %s[%s < %s / 32 ? %s * 32 : 0];\n", i2, v, arr, tid, n_text, tid);
  else
    ks_buf_addf(&b, "%s%s = %s < %s / 32 ? %s[%s * 32] : 0;\n", i2, v, tid, n_text, arr, tid);
  ks_buf_addf(&b, "%s%s\n", i2, step);
  ks_buf_addf(&b, "%sif (%s == 0) %s[0] = %s;\n", i2, tid, arr, v);
  ks_buf_addf(&b, "%s}\n%s__syncthreads();", i1, i1);
  if (!size_is_block) {
    const char *orig = ks_arena_strndup(arena, unit + begin, end - begin);
    ks_buf_addf(&b, "\n%s} else {\n%s%s\n%s}", ind, i1,
                ks_rt_indent_more(arena, orig, ks_rt_indent_step(arena, in)), ind);
  }
  ks_edits e = {0};
  ks_edits_add(arena, &e, ks_rt_src_at(in, begin), ks_rt_src_at(in, end), ks_arena_strdup(arena, b.data));
  ks_buf_release(&b);
  if (ks_rt_finish(ctx, in, arena, &e, "warp_reduce", out))
    return -1;
  /* a number was checked above */
  if (strspn(p.block[0], "0123456789") != strlen(p.block[0])) {
    const char *pb = ks_rt_paren(arena, p.block[0]);
    ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s %% 32 == 0", pb));
    ks_rule_require(arena, &out->child, ks_arena_printf(arena, "is_pow2(%s)", p.block[0]));
  }
  if (strcmp(p.block[1], "1") || strcmp(p.block[2], "1"))
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "%s * %s == 1", ks_rt_paren(arena, p.block[1]),
                                    ks_rt_paren(arena, p.block[2])));
  return 0;
}

const ks_rule ks_rule_warp_reduce = {
    "warp_reduce",
    "a shared-memory tree reduction of a block (sum, max or min into element 0) becomes warp "
    "shuffles: one value per warp in shared memory, then one warp reduces those",
    false,
    NULL,
    0,
    apply_warp_reduce};

/* ==== warp_atomic ========================================================== */

/* Same value in every lane of a warp: numbers, parameters never assigned,
 * blockIdx/blockDim/gridDim, local variables set once from those,
 * addresses of __shared__ and global variables, and arithmetic on them. No
 * loads: a value read from memory may differ between lanes. */
static bool uniform(const ks_kast *k, const ks_anode *n, int depth) {
  n = ks_rt_strip(n, true);
  if (!n || depth > 16)
    return false;
  switch (n->kind) {
  case KS_AK_INT_LITERAL:
  case KS_AK_FLOAT_LITERAL:
    return true;
  case KS_AK_DECL_REF: {
    const ks_anode *d = n->decl;
    if (!d)
      return n->name && strcmp(n->name, "threadIdx");
    if (d->kind == KS_AK_TEMPLATE_PARAM)
      return true;
    if (d->kind == KS_AK_PARAM)
      return !ks_rt_modified(k->body, d);
    if (d->kind != KS_AK_VAR)
      return false;
    if (d->shared_space)
      return !ks_rt_modified(k->body, d);
    if (d->type && strchr(d->type, '['))
      return false; /* a per-thread array */
    return !ks_rt_modified(k->body, d) && uniform(k, ks_rt_var_init(d), depth + 1);
  }
  case KS_AK_MEMBER:
    return ks_anode_is_builtin(n, "blockIdx", 0) || ks_anode_is_builtin(n, "blockDim", 0) ||
           ks_anode_is_builtin(n, "gridDim", 0);
  case KS_AK_BINARY:
    return n->nkids == 2 && strcmp(n->op, "=") && uniform(k, n->kids[0], depth + 1) &&
           uniform(k, n->kids[1], depth + 1);
  case KS_AK_UNARY: {
    if (n->nkids != 1)
      return false;
    if (!strcmp(n->op, "&")) {
      const ks_anode *o = ks_rt_strip(n->kids[0], false);
      if (o && o->kind == KS_AK_SUBSCRIPT && o->nkids == 2)
        return uniform(k, o->kids[0], depth + 1) && uniform(k, o->kids[1], depth + 1);
      return o && o->kind == KS_AK_DECL_REF && (!o->decl || o->decl->shared_space);
    }
    return (!strcmp(n->op, "-") || !strcmp(n->op, "+") || !strcmp(n->op, "!") || !strcmp(n->op, "~")) &&
           uniform(k, n->kids[0], depth + 1);
  }
  case KS_AK_CONDITIONAL:
    return n->nkids == 3 && uniform(k, n->kids[0], depth + 1) && uniform(k, n->kids[1], depth + 1) &&
           uniform(k, n->kids[2], depth + 1);
  default:
    return false;
  }
}

/* The type atomicAdd adds: the pointee of its first argument. */
static const char *atomic_type(ks_arena *arena, const ks_anode *p) {
  const char *t = NULL;
  p = ks_rt_strip(p, false);
  if (p->type && strchr(p->type, '*') && !strstr(p->type, "dependent"))
    t = ks_arena_strndup(arena, p->type, (size_t)(strrchr(p->type, '*') - p->type));
  else if (p->kind == KS_AK_DECL_REF && p->decl && p->decl->pointee)
    t = p->decl->pointee;
  else if (ks_rt_is_op(p, KS_AK_UNARY, "&") &&
           ks_rt_strip(p->kids[0], false)->kind == KS_AK_SUBSCRIPT) {
    const ks_anode *base = ks_rt_strip(ks_rt_strip(p->kids[0], false)->kids[0], true);
    const ks_anode *d = base && base->kind == KS_AK_DECL_REF ? base->decl : NULL;
    if (d && d->pointee)
      t = d->pointee;
    else if (d && d->type && strchr(d->type, '['))
      t = ks_arena_strndup(arena, d->type, strcspn(d->type, "["));
  }
  if (!t)
    return NULL;
  char *s = ks_arena_strdup(arena, t);
  for (;;) { /* "const unsigned int " -> "unsigned int" */
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ')
      s[--n] = '\0';
    if (ks_rt_has_prefix(s, "const "))
      memmove(s, s + 6, strlen(s + 6) + 1);
    else if (ks_rt_has_prefix(s, "volatile "))
      memmove(s, s + 9, strlen(s + 9) + 1);
    else
      return s;
  }
}

/* Does an enclosing `if` let one thread of a block or of a warp alone
 * through (tid == 0, lane == 0)? Then there is nothing to combine. */
static bool is_thread_index(const ks_kast *k, const ks_anode *n, int depth) {
  n = ks_rt_strip(n, true);
  if (!n || depth > 4)
    return false;
  if (ks_anode_is_builtin(n, "threadIdx", 0))
    return true;
  /* its lane: threadIdx.x % 32, threadIdx.x & 31 */
  if ((ks_rt_is_bin(n, "%") && ks_rt_is_int(n->kids[1], 32)) ||
      (ks_rt_is_bin(n, "&") && ks_rt_is_int(n->kids[1], 31)))
    return is_thread_index(k, n->kids[0], depth + 1);
  return n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR &&
         !ks_rt_modified(k->body, n->decl) && is_thread_index(k, ks_rt_var_init(n->decl), depth + 1);
}

static bool one_thread(const ks_kast *k, const ks_anode *cond) {
  cond = ks_rt_strip(cond, true);
  if (ks_rt_is_bin(cond, "&&"))
    return one_thread(k, cond->kids[0]) || one_thread(k, cond->kids[1]);
  return ks_rt_is_bin(cond, "==") &&
         ((is_thread_index(k, cond->kids[0], 0) && uniform(k, cond->kids[1], 0)) ||
          (is_thread_index(k, cond->kids[1], 0) && uniform(k, cond->kids[0], 0)));
}

static bool single_thread(const ks_kast *k, const ks_anode *call) {
  const ks_anode *n = call;
  for (const ks_anode *p = n->parent; p; n = p, p = p->parent)
    if (p->kind == KS_AK_IF && p->nkids >= 2 && p->kids[1] == n && one_thread(k, p->kids[0]))
      return true;
  return false;
}

/* The reduction of `val` over the lanes in `mask` (all of them hold the
 * result): one instruction for 32-bit integers on sm_80 and later, else a
 * butterfly for a full warp and a walk over the lanes otherwise. */
static void atomic_sum(ks_buf *b, ks_arena *arena, const ks_rule_input *in, const char *type, const char *val,
                       const char *mask, bool may_be_full, const char *ind) {
  const char *i1 = ks_rt_deeper(arena, in, ind), *src = in->parent->source;
  const char *sum = ks_rt_fresh(arena, src, "ks_sum"), *m = ks_rt_fresh(arena, src, "ks_m");
  const char *off = ks_rt_fresh(arena, src, "ks_off");
  bool int32 = !strcmp(type, "int") || !strcmp(type, "unsigned int") || !strcmp(type, "unsigned");
  if (int32)
    ks_buf_addf(b, "#if __CUDA_ARCH__ >= 800\n%s%s = __reduce_add_sync(%s, %s);\n#else\n", ind, val, mask, val);
  const char *at_ind = may_be_full ? i1 : ind;
  if (may_be_full)
    ks_buf_addf(b, "%sif (%s == 0xffffffffu) {\n%sfor (int %s = 16; %s > 0; %s >>= 1) "
                   "%s += __shfl_xor_sync(0xffffffffu, %s, %s);\n%s} else {\n",
                ind, mask, i1, off, off, off, val, val, off, ind);
  ks_buf_addf(b, "%s%s %s = 0;\n", at_ind, type, sum);
  ks_buf_addf(b, "%sfor (unsigned %s = %s; %s; %s &= %s - 1) %s += __shfl_sync(%s, %s, __ffs(%s) - 1);\n",
              at_ind, m, mask, m, m, m, sum, mask, val, m);
  ks_buf_addf(b, "%s%s = %s;\n", at_ind, val, sum);
  if (may_be_full)
    ks_buf_addf(b, "%s}\n", ind);
  if (int32)
    ks_buf_adds(b, "#endif\n");
}

/* Why one atomicAdd cannot be combined, or NULL; *text its replacement. */
static const char *atomic_site(const ks_rule_input *in, ks_arena *arena, const ks_anode *call,
                               const char **text) {
  const ks_kast *k = in->ast;
  const char *src = in->parent->source;
  if (call->nkids != 2)
    return "it calls atomicAdd with other than two arguments";
  if (call->from_macro || call->begin < in->variant_offset)
    return "its atomicAdd comes from a macro";
  if (!ks_rt_is_expr_stmt(call))
    return "it uses the value atomicAdd returns";
  if (single_thread(k, call))
    return "one thread of a block or warp does its atomicAdd (nothing to combine)";
  const char *type = atomic_type(arena, call->kids[0]);
  if (!type ||
      (!ks_rt_is_template_type(k, type) && strcmp(type, "int") && strcmp(type, "unsigned int") &&
       strcmp(type, "unsigned") && strcmp(type, "unsigned long long") &&
       strcmp(type, "unsigned long long int") && strcmp(type, "float") && strcmp(type, "double")))
    return ks_arena_printf(arena,
                           "its atomicAdd adds to a %s, not an int, unsigned, unsigned long long, "
                           "float or double",
                           type ? type : "type it cannot tell");
  bool same_address = uniform(k, call->kids[0], 0), same_value = uniform(k, call->kids[1], 0);
  const char *addr = ks_anode_text(arena, k, call->kids[0]), *value = ks_anode_text(arena, k, call->kids[1]);
  const char *ind = ks_rt_line_indent(arena, in->unit, call->begin),
             *i1 = ks_rt_deeper(arena, in, ind);
  const char *mask = ks_rt_fresh(arena, src, "ks_mask"), *lane = ks_rt_fresh(arena, src, "ks_lane");
  const char *val = ks_rt_fresh(arena, src, "ks_val");
  ks_buf b = KS_BUF_INIT;
  /* The lanes here now: a partial warp, or one that diverged, combines
   * only what its active lanes add. */
  ks_buf_addf(&b, "{\n%sconst unsigned %s = __activemask();\n", i1, mask);
  ks_buf_addf(&b, "%sconst unsigned %s = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * "
                  "threadIdx.z)) %% 32;\n", i1, lane);
  const char *group = mask, *target = addr;
  if (!same_address) {
    /* lanes with the same address form a group; its lowest lane adds */
    const char *ptr = ks_rt_fresh(arena, src, "ks_ptr");
    group = ks_rt_fresh(arena, src, "ks_peers");
    target = ptr;
    ks_buf_addf(&b, "%sauto %s = %s;\n", i1, ptr, addr);
    ks_buf_addf(&b, "%sconst unsigned %s = __match_any_sync(%s, (unsigned long long)%s);\n", i1, group,
                mask, ptr);
  }
  if (same_value && ks_rt_is_int(call->kids[1], 1)) {
    ks_buf_addf(&b, "%sif (%s == __ffs(%s) - 1) atomicAdd(%s, (%s)__popc(%s));\n", i1, lane, group,
                target, type, group);
  } else if (same_value) {
    ks_buf_addf(&b, "%sif (%s == __ffs(%s) - 1) atomicAdd(%s, (%s)(%s) * (%s)__popc(%s));\n", i1, lane,
                group, target, type, value, type, group);
  } else {
    ks_buf_addf(&b, "%s%s %s = %s;\n", i1, type, val, value);
    atomic_sum(&b, arena, in, type, val, group, same_address, i1);
    ks_buf_addf(&b, "%sif (%s == __ffs(%s) - 1) atomicAdd(%s, %s);\n", i1, lane, group, target, val);
  }
  ks_buf_addf(&b, "%s}", ind);
  *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return NULL;
}

static int apply_warp_atomic(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                             ks_rule_result *out) {
  (void)param;
  ks_rt_nodes all = ks_rt_collect(arena, in->ast->body);
  const char *why = NULL;
  ks_edits e = {0};
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_CALL)
      continue;
    const char *name = ks_rt_callee(arena, n);
    if (!strcmp(name, "__activemask") || ks_rt_has_prefix(name, "__match_any"))
      return ks_rt_not_applicable(arena, out, "it already groups lanes with %s", name);
  }
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n->kind != KS_AK_CALL || strcmp(ks_rt_callee(arena, n), "atomicAdd"))
      continue;
    const char *text = NULL;
    const char *problem = atomic_site(in, arena, n, &text);
    if (problem) {
      why = why ? why : problem;
      continue;
    }
    const ks_anode *stmt; /* the call with the parentheses around it */
    ks_rt_up(n, &stmt);
    ks_edits_add(arena, &e, ks_rt_src_at(in, stmt->begin),
                 ks_rt_src_at(in, ks_rt_stmt_end_deep(in->unit, stmt)), text);
  }
  if (!e.len)
    return ks_rt_not_applicable(arena, out, "%s", why ? why : "it has no atomicAdd");
  return ks_rt_finish(ctx, in, arena, &e, "warp_atomic", out);
}

const ks_rule ks_rule_warp_atomic = {
    "warp_atomic",
    "warp-aggregated atomicAdd: the lanes that add to one address (the whole warp, or a group "
    "found with __match_any_sync) add among themselves, and one lane does the atomic",
    false,
    NULL,
    0,
    apply_warp_atomic};
