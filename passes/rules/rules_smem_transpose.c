/* rules_smem_transpose: smem_transpose, a transpose staged in a
 * shared-memory tile.
 *
 * A 2-D kernel storing out[f(x, y)] = value(in[g(y, x)]) once per thread,
 * the read contiguous along x and the write along y (the naive transpose),
 * becomes the tiled transpose: a T x (T + 1) tile, block (T, R), each
 * thread loading and then storing T / R elements with the roles of x and y
 * swapped. param encodes T and R as T * 100 + R (3208: 32 x 8).
 *
 * What it shares with smem_histogram (the facts walk, the common refusals,
 * bounds, text helpers) is in rules_smem_common.c; rules_smem_int.h says
 * how both read the tree. */
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_smem_int.h"

/* ---- text helpers of the transpose ---------------------------------------- */

/* The unit's text [begin, end) with edits whose offsets are into the unit. */
static const char *edited_range(ks_ctx *ctx, const ks_smem_rewrite *w, unsigned begin, unsigned end,
                                const ks_edits *unit_edits) {
  ks_edits local = {0};
  for (size_t i = 0; i < unit_edits->len; i++) {
    const ks_edit *e = &unit_edits->items[i];
    if (e->begin >= begin && e->end <= end)
      ks_edits_add(w->arena, &local, e->begin - begin, e->end - begin, e->text);
  }
  const char *text = ks_arena_strndup(w->arena, w->unit + begin, end - begin);
  return ks_edits_apply(ctx, w->arena, text, &local);
}

static bool launch_bound_fits(const ks_smem_rewrite *w, const ks_smem_facts *f, long long threads) {
  if (!f->bounds_attr)
    return true;
  const char *text = ks_rt_text_of(w->arena, w->in, f->bounds_attr);
  const char *open = strchr(text, '(');
  const char *p = open ? open + 1 : text;
  while (*p == '(' || *p == ' ')
    p++;
  char *end;
  long long limit = strtoll(p, &end, 0);
  return end != p && limit >= threads;
}

/* ---- smem_transpose ---------------------------------------------------------- */

static void addends(ks_arena *arena, const ks_anode *e, ks_rt_nodes *out) {
  e = ks_anode_strip(e, true);
  if (!e)
    return;
  if (e->kind == KS_AK_BINARY && e->nkids == 2 && e->op && !strcmp(e->op, "+")) {
    addends(arena, e->kids[0], out);
    addends(arena, e->kids[1], out);
  } else {
    *ks_array_push(arena, out) = e;
  }
}

/* Whether `var` is a bare addend of the index (through locals that hold
 * part of it): the access is contiguous along var. */
static bool unit_along(ks_arena *arena, const ks_smem_facts *f, const ks_anode *index,
                       const ks_anode *var, int depth) {
  ks_rt_nodes parts = {0};
  addends(arena, index, &parts);
  for (size_t i = 0; i < parts.len; i++) {
    const ks_anode *p = parts.items[i];
    if (p->kind != KS_AK_DECL_REF || !p->decl)
      continue;
    if (p->decl == var)
      return true;
    if (depth < 4 && p->decl->kind == KS_AK_VAR && !ks_smem_is_written(f, p->decl) &&
        ks_rt_var_init(p->decl) && unit_along(arena, f, ks_rt_var_init(p->decl), var, depth + 1))
      return true;
  }
  return false;
}

typedef struct read_search {
  ks_arena *arena;
  const ks_smem_facts *f;
  const ks_anode *out_param;
  const ks_anode *x, *y;
  bool found;
} read_search;

static bool find_read(ks_anode *n, void *arg) {
  read_search *r = arg;
  const ks_anode *ref = NULL, *index = NULL;
  if (n->kind != KS_AK_SUBSCRIPT && !(n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "+")))
    return true;
  const ks_anode *p = ks_smem_param_access(n, &ref, &index);
  if (p && p != r->out_param && unit_along(r->arena, r->f, index, r->x, 0) &&
      !unit_along(r->arena, r->f, index, r->y, 0))
    r->found = true;
  return true;
}

/* Variables the write phase needs: those its condition and index use. */
static void need_vars(ks_arena *arena, const ks_anode *n, ks_rt_nodes *need) {
  if (!n)
    return;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR) {
    for (size_t i = 0; i < need->len; i++)
      if (need->items[i] == n->decl)
        return;
    *ks_array_push(arena, need) = n->decl;
    need_vars(arena, ks_rt_var_init(n->decl), need);
  }
  for (size_t i = 0; i < n->nkids; i++)
    need_vars(arena, n->kids[i], need);
}

static bool needed(const ks_rt_nodes *need, const ks_anode *stmt) {
  const ks_anode *v = ks_rt_single_var(stmt);
  for (size_t i = 0; v && i < need->len; i++)
    if (need->items[i] == v)
      return true;
  return false;
}

typedef struct tile_plan {
  int tile, rows;           /* T and R */
  const ks_anode *x, *y;    /* the column (x) and row (y) index variables */
  const ks_anode *x_stmt, *y_stmt;
  const ks_anode *x_bdim, *x_tid, *y_bdim, *y_tid;
  const ks_anode *store;    /* out[idx] = value */
  const ks_anode *lhs;      /* out[idx] */
  const ks_anode *top;      /* the top-level statement holding the store */
  const ks_anode *guard_if; /* top, when it is `if (bounds) { ... }` */
  ks_smem_bound xb, yb;
} tile_plan;

/* One of the index declarations with its thread mapping replaced. */
static const char *index_decl(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_anode *stmt,
                              const ks_anode *bdim, const char *bdim_text, const ks_anode *tid,
                              const char *tid_text) {
  ks_edits e = {0};
  ks_edits_add(w->arena, &e, bdim->begin, bdim->end, bdim_text);
  ks_edits_add(w->arena, &e, tid->begin, tid->end, tid_text);
  return edited_range(ctx, w, stmt->begin, ks_smem_stmt_end(w, stmt), &e);
}

static const char *transpose_plan(const ks_smem_rewrite *w, const ks_smem_facts *f, tile_plan *t) {
  const ks_anode *body = w->in->ast->body;
  ks_arena *arena = w->arena;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *var = ks_rt_single_var(body->kids[k]);
    const ks_anode *bd, *td;
    if (!var)
      continue;
    if (!t->x && ks_smem_is_gid(ks_rt_var_init(var), 'x', &bd, &td)) {
      t->x = var, t->x_stmt = body->kids[k], t->x_bdim = bd, t->x_tid = td;
    } else if (!t->y && ks_smem_is_gid(ks_rt_var_init(var), 'y', &bd, &td)) {
      t->y = var, t->y_stmt = body->kids[k], t->y_bdim = bd, t->y_tid = td;
    }
  }
  if (!t->x || !t->y)
    return "is not a 2-D kernel with indices blockIdx.x * blockDim.x + threadIdx.x and "
           "blockIdx.y * blockDim.y + threadIdx.y";
  if (ks_smem_is_written(f, t->x) || ks_smem_is_written(f, t->y))
    return "changes its indices";
  if (t->x_bdim->from_macro || t->x_tid->from_macro || t->y_bdim->from_macro || t->y_tid->from_macro)
    return "computes its indices in a macro";
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    if (!ks_rt_is_within(b, ks_rt_var_init(t->x)) && !ks_rt_is_within(b, ks_rt_var_init(t->y)))
      return "uses the thread or block index beyond its two indices (threads are remapped)";
  }
  /* The one store. */
  if (f->stores.len != 1)
    return f->stores.len ? "writes memory in more than one place" : "writes no memory";
  t->store = f->stores.items[0];
  if (t->store->kind != KS_AK_BINARY || t->store->nkids != 2)
    return "updates its output in place (a compound assignment reads it)";
  const ks_anode *oref = NULL, *oidx = NULL;
  const ks_anode *outp = ks_smem_param_access(t->store->kids[0], &oref, &oidx);
  if (!outp)
    return "does not store into a buffer parameter";
  t->lhs = t->store->kids[0];
  if (t->lhs->from_macro || t->store->from_macro)
    return "stores through a macro";
  for (size_t i = 0; i < f->pointer_refs.len; i++)
    if (f->pointer_refs.items[i]->decl == outp && f->pointer_refs.items[i] != oref)
      return "reads its output buffer";
  /* The store is a statement of the body, or of the then-branch of a
   * top-level `if`, never under a loop or a further condition. */
  const ks_anode *c = t->store, *p = c->parent;
  while (p && p != body) {
    if (p->kind == KS_AK_COMPOUND) {
    } else if (p->kind == KS_AK_IF && p->nkids == 2 && p->kids[1] == c && p->parent == body) {
      t->guard_if = p;
    } else {
      return "stores under a loop or a condition other than its bounds check";
    }
    c = p;
    p = p->parent;
  }
  if (!p)
    return "stores outside the kernel's body";
  t->top = c;
  const ks_anode *home = t->guard_if ? t->guard_if->kids[1] : body;
  if (t->store != home && t->store->parent != home)
    return "stores inside a nested block";

  /* Returns: only `if (C) return;` at the top, before the store. */
  ks_rt_nodes conds = {0};
  for (size_t i = 0; i < f->returns.len; i++) {
    const ks_anode *r = f->returns.items[i];
    const ks_anode *g = r->parent;
    if (g && g->kind == KS_AK_COMPOUND && g->nkids == 1)
      g = g->parent;
    if (!g || !ks_smem_is_return_guard(g) || g->parent != body || g->begin > t->top->begin)
      return "returns other than by an early exit before its store";
    if (r->from_macro || strncmp(w->unit + r->begin, "return", 6))
      return "returns through a macro";
    ks_rt_split_chain(arena, g->kids[0], "||", &conds);
  }
  size_t nexit = conds.len;
  if (t->guard_if)
    ks_rt_split_chain(arena, t->guard_if->kids[0], "&&", &conds);
  bool have_x = false, have_y = false;
  for (size_t i = 0; i < conds.len; i++) {
    ks_smem_bound b;
    bool want_in = i >= nexit;
    if (!have_x && ks_smem_read_bound(conds.items[i], t->x, &b) && b.in_range == want_in) {
      t->xb = b;
      have_x = true;
    }
    if (!have_y && ks_smem_read_bound(conds.items[i], t->y, &b) && b.in_range == want_in) {
      t->yb = b;
      have_y = true;
    }
  }
  if (!have_x || !have_y)
    return "does not check both indices against bounds before its store";
  if (!ks_smem_bound_is_simple(ks_anode_strip(t->xb.bound, false)) ||
      !ks_smem_bound_is_simple(ks_anode_strip(t->yb.bound, false)))
    return "bounds its indices by expressions the launch policy cannot state";

  /* A transpose: the write contiguous along y, some read along x. */
  if (!unit_along(arena, f, oidx, t->y, 0) || unit_along(arena, f, oidx, t->x, 0))
    return "does not write contiguously along its row index (not a transpose)";
  read_search rs = {arena, f, outp, t->x, t->y, false};
  ks_anode_walk(w->in->ast->body, find_read, &rs);
  if (!rs.found)
    return "reads no buffer contiguously along its column index (not a transpose)";
  return NULL;
}

/* The new body: the tile, the load phase (the body as written, element
 * (x, y) = (tile x + tx, tile y + ty + j), the store going to the tile),
 * the barrier, the write phase (element (x, y) = (tile x + ty + j, tile y +
 * tx): only the declarations its bounds and index need, then the store from
 * the tile). Returns why not, or NULL with *text set (NULL on an internal
 * failure). */
static const char *transpose_body(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_smem_facts *f,
                                  const tile_plan *t, const char *elem, const char **text) {
  ks_arena *arena = w->arena;
  const ks_anode *body = w->in->ast->body;
  const ks_anode *oref, *oidx;
  ks_smem_param_access(t->lhs, &oref, &oidx);
  const char *tile = ks_rt_fresh(arena, w->unit, "ks_tile");
  const char *j = ks_rt_fresh(arena, w->unit, "ks_j");
  const char *I = w->indent;
  const char *I2 = ks_arena_printf(arena, "%s%s", I, I);
  const char *T = ks_arena_printf(arena, "%d", t->tile);
  const char *ty_j = ks_arena_printf(arena, "(threadIdx.y + %s)", j);
  *text = NULL;

  ks_edits le = {0};
  ks_edits_add(arena, &le, t->x_bdim->begin, t->x_bdim->end, T);
  ks_edits_add(arena, &le, t->y_bdim->begin, t->y_bdim->end, T);
  ks_edits_add(arena, &le, t->y_tid->begin, t->y_tid->end, ty_j);
  ks_edits_add(arena, &le, t->lhs->begin, t->lhs->end,
               ks_arena_printf(arena, "%s[threadIdx.y + %s][threadIdx.x]", tile, j));
  for (size_t i = 0; i < f->returns.len; i++)
    ks_edits_add(arena, &le, f->returns.items[i]->begin, f->returns.items[i]->begin + 6, "continue");
  /* The whole inside of the body, comments included. */
  unsigned first = body->begin + 1, last = body->end - 1;
  while (first < last && strchr(" \t\n\r", w->unit[first]))
    first++;
  while (last > first && strchr(" \t\n\r", w->unit[last - 1]))
    last--;
  const char *load = edited_range(ctx, w, first, last, &le);
  if (!load)
    return NULL;

  ks_rt_nodes need = {0};
  need_vars(arena, oidx, &need);
  if (t->guard_if)
    need_vars(arena, t->guard_if->kids[0], &need);
  for (size_t k = 0; k < body->nkids; k++)
    if (ks_smem_is_return_guard(body->kids[k]))
      need_vars(arena, body->kids[k]->kids[0], &need);
  for (size_t i = 0; i < need.len; i++) {
    const ks_anode *v = need.items[i];
    if (v == t->x || v == t->y)
      continue;
    const ks_anode *st = v->parent;
    if (ks_smem_is_written(f, v) || ks_rt_single_var(st) != v ||
        (st->parent != body && !(t->guard_if && st->parent == t->guard_if->kids[1])))
      return ks_arena_printf(arena,
                             "its store's index or bounds use '%s', which it cannot recompute",
                             v->name ? v->name : "?");
  }
  const char *store = ks_arena_printf(arena, "%s = %s[threadIdx.x][threadIdx.y + %s];",
                                      ks_rt_text_of(w->arena, w->in, t->lhs), tile, j);
  ks_buf wr = KS_BUF_INIT;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *st = body->kids[k];
    const char *piece = NULL;
    if (!st)
      continue;
    if (st == t->x_stmt) {
      piece = index_decl(ctx, w, st, t->x_bdim, T, t->x_tid, ty_j);
    } else if (st == t->y_stmt) {
      piece = index_decl(ctx, w, st, t->y_bdim, T, t->y_tid, "threadIdx.x");
    } else if (needed(&need, st) || ks_smem_is_return_guard(st)) {
      ks_edits re = {0};
      for (size_t i = 0; i < f->returns.len; i++)
        if (ks_rt_is_within(f->returns.items[i], st))
          ks_edits_add(arena, &re, f->returns.items[i]->begin, f->returns.items[i]->begin + 6,
                       "continue");
      piece = edited_range(ctx, w, st->begin, ks_smem_stmt_end(w, st), &re);
    } else if (st == t->top && t->guard_if) {
      ks_buf g = KS_BUF_INIT;
      ks_buf_addf(&g, "if (%s) {\n", ks_rt_text_of(w->arena, w->in, t->guard_if->kids[0]));
      const ks_anode *then = t->guard_if->kids[1];
      for (size_t i = 0; then->kind == KS_AK_COMPOUND && i < then->nkids; i++)
        if (then->kids[i] && needed(&need, then->kids[i]))
          ks_buf_addf(&g, "%s%s\n", I2,
                      ks_arena_strndup(arena, w->unit + then->kids[i]->begin,
                                       ks_smem_stmt_end(w, then->kids[i]) - then->kids[i]->begin));
      /* One level short: the piece is indented with the others below. */
      ks_buf_addf(&g, "%s%s\n%s}", I2, store, I);
      piece = ks_arena_strdup(arena, g.data);
      ks_buf_release(&g);
    } else if (st == t->top) {
      piece = store;
    } else {
      continue;
    }
    if (!piece) {
      ks_buf_release(&wr);
      return NULL;
    }
    ks_buf_addf(&wr, "%s%s\n", I2, ks_rt_indent_more(arena, piece, I));
  }

  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "\n%s__shared__ %s %s[%d][%d + 1];\n", I, elem, tile, t->tile, t->tile);
  ks_buf_addf(&b, "%sfor (int %s = 0; %s < %d; %s += %d) {\n", I, j, j, t->tile, j, t->rows);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, ks_rt_indent_more(arena, load, I), I);
  ks_buf_addf(&b, "%s__syncthreads();\n", I);
  ks_buf_addf(&b, "%sfor (int %s = 0; %s < %d; %s += %d) {\n", I, j, j, t->tile, j, t->rows);
  ks_buf_adds(&b, wr.data);
  ks_buf_addf(&b, "%s}\n", I);
  ks_buf_release(&wr);
  *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return NULL;
}

static int transpose_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                           ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  tile_plan t = {.tile = param / 100, .rows = param % 100};
  if (t.tile < 8 || t.tile > 64 || t.rows < 1 || t.tile % t.rows || t.tile * t.rows > 1024)
    return ks_smem_no(out, arena, "parameter %d is not a tile T * 100 + R with R dividing T",
                      param);
  ks_smem_rewrite w;
  ks_smem_facts f;
  const char *refusal = ks_smem_refusal(in, arena, &w, &f);
  if (refusal)
    return ks_smem_no(out, arena, "%s", refusal);
  if (f.atomics.len)
    return ks_smem_no(out, arena, "writes with atomicAdd");
  const char *why = transpose_plan(&w, &f, &t);
  if (why)
    return ks_smem_no(out, arena, "%s", why);
  if (!launch_bound_fits(&w, &f, (long long)t.tile * t.rows))
    return ks_smem_no(out, arena, "its __launch_bounds__ allows fewer than %d threads",
                      t.tile * t.rows);
  const ks_anode *outp = NULL, *oref, *oidx;
  outp = ks_smem_param_access(t.lhs, &oref, &oidx);
  if (!outp->pointee)
    return ks_smem_no(out, arena, "the element type of '%s' is unknown", outp->name);
  const char *elem = ks_smem_unqualified(arena, outp->pointee);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return ks_smem_no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  const char *cover_x = ks_smem_cover_guard(&w, pol.grid[0], pol.block[0], &t.xb);
  const char *cover_y = ks_smem_cover_guard(&w, pol.grid[1], pol.block[1], &t.yb);
  if (!ks_rt_guard_evaluates(in, cover_x) || !ks_rt_guard_evaluates(in, cover_y))
    return ks_smem_no(out, arena,
                      "its bounds are not expressions of the launch and the scalar parameters");

  const char *text = NULL;
  if ((why = transpose_body(ctx, &w, &f, &t, elem, &text)))
    return ks_smem_no(out, arena, "%s", why);
  if (!text)
    return -1;
  const ks_anode *body = in->ast->body;
  ks_edits e = {0};
  ks_edits_add(arena, &e, body->begin + 1 - w.vo, body->end - 1 - w.vo, text);
  ks_rule_child_init(arena, in, &out->child);
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  const char *gy =
      ks_arena_printf(arena, "ceil_div(%s * %s, %d)", ks_smem_operand(arena, pol.grid[1]),
                      ks_smem_operand(arena, pol.block[1]), t.tile);
  pol.grid[0] = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", ks_smem_operand(arena, pol.grid[0]),
                                ks_smem_operand(arena, pol.block[0]), t.tile);
  pol.grid[1] = gy;
  pol.grid[2] = "1";
  pol.block[0] = ks_arena_printf(arena, "%d", t.tile);
  pol.block[1] = ks_arena_printf(arena, "%d", t.rows);
  pol.block[2] = "1";
  ks_rule_policy_write(arena, &pol, &out->child);
  ks_rule_require(arena, &out->child, cover_x);
  ks_rule_require(arena, &out->child, cover_y);
  ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s <= 65535", gy));
  out->applied = true;
  out->technique = ks_arena_printf(arena, "smem_tile=%dx%d", t.tile, t.rows);
  return 0;
}

static const int transpose_choices[] = {3208, 3204, 3216};

const ks_rule ks_rule_smem_transpose = {
    "smem_transpose",
    "naive transpose: a padded shared-memory tile, coalesced reads and writes "
    "(param: tile * 100 + block rows)",
    false,
    transpose_choices,
    sizeof transpose_choices / sizeof *transpose_choices,
    transpose_apply,
};
