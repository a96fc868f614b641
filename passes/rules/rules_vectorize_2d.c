/* rules_vectorize_2d: `vectorize_2d`, each thread of a 2-D kernel handles
 * 4 consecutive x with 16-byte loads and stores.
 *
 * It matches the 2-D shape of rules_shape.h (x and y global indexes, the
 * bounds check on x), then "edge branches" `if (C) { ...; return; }` with
 * pure conditions, then straight-line work: declarations and assignments
 * `q[E] = v` whose indexes rules_vec2d_index.c reads as x + k + multiples
 * of 4. The rewrite, for x0 = 4 * the old x:
 *
 *   - every lane x0 + j evaluates the bounds check and the edge conditions;
 *   - when every lane passes them (the fast path), each distinct block
 *     (buffer, B) is loaded once with a 16-byte load, each access site's 4
 *     lane values come from it (.x .. .w) or, outside it, from scalar loads
 *     of elements the original reads; the work runs in an unrolled loop over
 *     the lanes with each site replaced by its lane value, and each written
 *     block is stored once;
 *   - otherwise (edges, the last columns) the original body runs once per
 *     lane, return turned into continue, as coarsen does.
 *
 * A block is loaded only where some lane reads one of its elements, so it
 * lies inside the allocation wherever the buffer is 16-byte aligned. */
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_shape.h"
#include "rules_tree.h"
#include "rules_vec2d.h"

/* ---- the lane region ----------------------------------------------------- */

/* The statements that run per element: those between the x index and the
 * bounds check that depend on x, the check, and what follows it. */
typedef struct region {
  const ks_anode *const *rest;  /* the statements the check guards */
  size_t nrest;
  ks_node_list before;          /* declarations before the check that depend on x */
  ks_node_list edges;           /* if (C) { ...; return; } */
  ks_node_list work;            /* the straight-line work, declarations before
                                   the edge branches included */
  ks_node_list conds;           /* the lane conditions, in order (the check's first) */
  bool early_return;
} region;

typedef struct refs_walk {
  const ks_node_list *among;
  ks_node_list *out;
  ks_arena *arena;
} refs_walk;

static bool visit_refs(ks_anode *n, void *arg) {
  refs_walk *w = arg;
  if (n->kind == KS_AK_DECL_REF && n->decl && ks_v2_listed(w->among, n->decl) &&
      !ks_v2_listed(w->out, n->decl))
    *ks_array_push(w->arena, w->out) = n->decl;
  return true;
}

/* The VARs of `among` that `n` reads, added to `out`. */
static void refs_among(ks_arena *arena, const ks_anode *n, const ks_node_list *among,
                       ks_node_list *out) {
  refs_walk w = {among, out, arena};
  ks_anode_walk((ks_anode *)n, visit_refs, &w);
}

static void push_vars(ks_arena *arena, const ks_anode *decl_stmt, ks_node_list *out) {
  for (size_t k = 0; k < decl_stmt->nkids; k++)
    if (decl_stmt->kids[k] && decl_stmt->kids[k]->kind == KS_AK_VAR)
      *ks_array_push(arena, out) = decl_stmt->kids[k];
}

static bool declares_one_of(const ks_anode *decl_stmt, const ks_node_list *vars) {
  for (size_t k = 0; k < decl_stmt->nkids; k++)
    if (ks_v2_listed(vars, decl_stmt->kids[k]))
      return true;
  return false;
}

/* if (C) { ...; return; } */
static bool is_edge(const ks_anode *st) {
  if (!st || st->kind != KS_AK_IF || st->nkids != 2)
    return false;
  const ks_anode *then = st->kids[1];
  while (then && then->kind == KS_AK_COMPOUND && then->nkids)
    then = then->kids[then->nkids - 1];
  return then && then->kind == KS_AK_RETURN;
}

static bool pure(const ks_anode *n) {
  bool impure = false;
  ks_anode_walk((ks_anode *)n, ks_shape_visit_impure, &impure);
  return !impure;
}

/* Splits the kernel into what runs once per thread and per element. */
static void find_region(ks_v2 *s, const ks_shape *sh, region *r) {
  const ks_anode *body = sh->body;
  ks_arena *arena = s->arena;
  for (size_t k = 0; k < sh->first; k++)
    push_vars(arena, body->kids[k], &s->hoisted);
  ks_node_list lane = {0};
  *ks_array_push(arena, &lane) = s->x;
  for (size_t k = sh->first + 1; k < sh->check_at; k++) {
    const ks_anode *st = body->kids[k];
    ks_node_list used = {0};
    refs_among(arena, st, &lane, &used);
    if (used.len) {
      *ks_array_push(arena, &r->before) = st;
      push_vars(arena, st, &lane);
      push_vars(arena, st, &s->lane_vars);
    } else {
      push_vars(arena, st, &s->hoisted);
    }
  }
  for (size_t k = 0; k < s->hoisted.len; k++)
    if (ks_rt_modified(body, s->hoisted.items[k])) {
      ks_v2_refuse(s, "'%s' is modified after it is computed (the rewrite computes it once per "
                   "thread)", s->hoisted.items[k]->name ? s->hoisted.items[k]->name : "?");
      return;
    }
  r->early_return = sh->early_return;
  const ks_anode *then = sh->check->kids[1];
  if (sh->early_return) {
    r->rest = (const ks_anode *const *)body->kids + sh->check_at + 1;
    r->nrest = body->nkids - sh->check_at - 1;
  } else if (then->kind == KS_AK_COMPOUND) {
    r->rest = (const ks_anode *const *)then->kids;
    r->nrest = then->nkids;
  } else {
    r->rest = (const ks_anode *const *)&sh->check->kids[1];
    r->nrest = 1;
  }
  const char *problem = NULL;
  for (size_t k = 0; k < r->nrest && !problem; k++)
    ks_shape_check_returns(r->rest[k], 0, &problem);
  if (problem) {
    ks_v2_refuse(s, "%s", problem);
    return;
  }
  *ks_array_push(arena, &r->conds) = sh->check->kids[0];
  bool straight = false;
  for (size_t k = 0; k < r->nrest; k++) {
    const ks_anode *st = r->rest[k];
    if (is_edge(st) && !straight) {
      *ks_array_push(arena, &r->edges) = st;
      *ks_array_push(arena, &r->conds) = st->kids[0];
      continue;
    }
    if (st->kind == KS_AK_DECL_STMT)
      push_vars(arena, st, &s->lane_vars);
    else
      straight = true;
    *ks_array_push(arena, &r->work) = st;
  }
  for (size_t k = 0; k < r->conds.len; k++)
    if (!pure(r->conds.items[k])) {
      ks_v2_refuse(s, "the condition '%s' reads memory or calls (lanes test it before any load)",
                   ks_rt_text_of(arena, s->in, r->conds.items[k]));
      return;
    }
  if (!r->work.len)
    ks_v2_refuse(s, "no straight-line work after the edge branches");
}

/* The per-element declarations the lane conditions need, in order (they
 * must only compute values). */
static void needed_decls(ks_v2 *s, const region *r, ks_node_list *out) {
  ks_node_list need = {0};
  for (size_t k = 0; k < r->conds.len; k++)
    refs_among(s->arena, r->conds.items[k], &s->lane_vars, &need);
  ks_node_list all = {0};
  for (size_t k = 0; k < r->before.len; k++)
    *ks_array_push(s->arena, &all) = r->before.items[k];
  for (size_t k = 0; k < r->work.len; k++)
    if (r->work.items[k]->kind == KS_AK_DECL_STMT)
      *ks_array_push(s->arena, &all) = r->work.items[k];
  bool *keep = ks_arena_alloc(s->arena, (all.len + 1) * sizeof *keep);
  for (size_t k = all.len; k-- > 0;) {
    const ks_anode *st = all.items[k];
    if (!declares_one_of(st, &need))
      continue;
    if (!ks_shape_pure_decl(st)) {
      ks_v2_refuse(s, "a lane condition depends on '%s', which reads memory or calls",
                   ks_rt_text_of(s->arena, s->in, st));
      return;
    }
    keep[k] = true;
    refs_among(s->arena, st, &s->lane_vars, &need);
  }
  for (size_t k = 0; k < all.len; k++)
    if (keep[k])
      *ks_array_push(s->arena, out) = all.items[k];
}

/* ---- the rewrite's text -------------------------------------------------- */

typedef struct emit {
  ks_v2 *s;
  ks_arena *arena;
  const ks_rule_input *in;
  ks_strings names;        /* made so far */
  const char **site_name;  /* per site: its window or lane array */
  const char *j;           /* the lane loop's variable */
  bool slow;               /* rendering the original work: return -> continue */
} emit;

static const char *fresh(emit *e, const char *base) {
  for (int k = 1;; k++) {
    const char *name = k == 1 ? base : ks_arena_printf(e->arena, "%s_%d", base, k);
    bool taken = ks_rt_has_identifier(e->in->unit, name);
    for (size_t i = 0; i < e->names.len && !taken; i++)
      taken = !strcmp(e->names.items[i], name);
    if (!taken) {
      *ks_array_push(e->arena, &e->names) = name;
      return name;
    }
  }
}

static const char *lane_replace(const ks_anode *n, void *arg) {
  emit *e = arg;
  if (e->slow)
    return n->kind == KS_AK_RETURN ? "continue" : NULL;
  for (size_t k = 0; k < e->s->sites.len; k++)
    if (e->s->sites.items[k].node == n)
      return ks_arena_printf(e->arena, "%s[%s]", e->site_name[k], e->j);
  return NULL;
}

/* A statement's text (with its ';'), lane values in place of the sites. */
static const char *render_stmt(emit *e, const ks_anode *st) {
  ks_buf b = KS_BUF_INIT;
  ks_rt_render(&b, e->in->unit, st, lane_replace, e);
  if (ks_rt_stmt_end(e->in->unit, st) > st->end)
    ks_buf_addc(&b, ';');
  const char *t = ks_arena_strdup(e->arena, b.data);
  ks_buf_release(&b);
  return t;
}

/* A statement's text placed at indentation `ind`: its continuation lines
 * move by as much as its first line. */
static const char *placed(emit *e, const ks_anode *st, const char *ind) {
  const char *t = render_stmt(e, st);
  const char *was = ks_rt_line_indent(e->arena, e->in->unit, st->begin);
  size_t n = strlen(was);
  const char *more = strlen(ind) >= n && !strncmp(ind, was, n) ? ind + n : ks_rt_indent_step(e->arena, e->in);
  return ks_arena_printf(e->arena, "%s%s", ind, ks_rt_indent_more(e->arena, t, more));
}

/* One slot per distinct (buffer, base[, k]) of the sites. */
typedef struct slot {
  size_t buf, base;
  long long k;
  const char *name;
} slot;
typedef KS_ARRAY(slot) slots;

static size_t slot_of(ks_arena *arena, slots *l, size_t buf, size_t base, long long k) {
  for (size_t i = 0; i < l->len; i++)
    if (l->items[i].buf == buf && l->items[i].base == base && l->items[i].k == k)
      return i;
  slot *sl = ks_array_push(arena, l);
  sl->buf = buf;
  sl->base = base;
  sl->k = k;
  return l->len - 1;
}

static const char *offset_text(ks_arena *arena, long long e) {
  return e < 0 ? ks_arena_printf(arena, " - %lld", -e)
         : e   ? ks_arena_printf(arena, " + %lld", e)
               : "";
}

/* The fast path's declarations: bases, blocks, windows and lane arrays;
 * `stores` gets the written blocks. */
static void emit_loads(emit *e, const char *ind, ks_buf *o, slots *stores, bool *wide) {
  ks_v2 *s = e->s;
  ks_arena *arena = e->arena;
  slots blocks = {0}, windows = {0};
  for (size_t k = 0; k < s->bases.len; k++) {
    ks_v2_base *b = &s->bases.items[k];
    b->name = fresh(e, ks_arena_printf(arena, "ks_at%zu", k));
    ks_buf_addf(o, "%s%s %s = %s;\n", ind, b->type, b->name, b->text);
  }
  e->site_name = ks_arena_alloc(arena, (s->sites.len + 1) * sizeof *e->site_name);
  for (size_t k = 0; k < s->sites.len; k++) {
    const ks_v2_site *st = &s->sites.items[k];
    if (st->write) {
      slot_of(arena, stores, st->buf, st->base, 0);
      wide[st->base] = true;
      continue;
    }
    if (st->k > -KS_V2_LANES && st->k < KS_V2_LANES) {
      slot_of(arena, &blocks, st->buf, st->base, 0);
      wide[st->base] = true;
    }
    slot_of(arena, &windows, st->buf, st->base, st->k);
  }
  for (size_t k = 0; k < blocks.len; k++) {
    slot *bl = &blocks.items[k];
    const ks_v2_buf *b = &s->bufs.items[bl->buf];
    const char *p = b->param->name, *at = s->bases.items[bl->base].name;
    bl->name = fresh(e, ks_arena_printf(arena, "ks_%s%zu", p, bl->base));
    if (ks_v2_only_read(s, b->param))
      ks_buf_addf(o, "%s%s %s = __ldg(reinterpret_cast<const %s *>(%s + %s));\n", ind, b->vec,
                  bl->name, b->vec, p, at);
    else
      ks_buf_addf(o, "%s%s %s = *reinterpret_cast<const %s *>(%s + %s);\n", ind, b->vec,
                  bl->name, b->vec, p, at);
  }
  for (size_t k = 0; k < windows.len; k++) {
    slot *w = &windows.items[k];
    const ks_v2_buf *b = &s->bufs.items[w->buf];
    const char *p = b->param->name, *at = s->bases.items[w->base].name;
    bool ldg = ks_v2_only_read(s, b->param);
    w->name = fresh(e, ks_arena_printf(arena, "ks_%s%zu_%s%lld", p, w->base,
                                       w->k < 0 ? "m" : w->k > 0 ? "p" : "",
                                       w->k < 0 ? -w->k : w->k));
    size_t bi = blocks.len;
    for (size_t i = 0; i < blocks.len; i++)
      if (blocks.items[i].buf == w->buf && blocks.items[i].base == w->base)
        bi = i;
    ks_buf_addf(o, "%s%s %s[%d] = {", ind, b->elem, w->name, KS_V2_LANES);
    for (int j = 0; j < KS_V2_LANES; j++) {
      long long el = w->k + j;
      if (j)
        ks_buf_adds(o, ", ");
      if (el >= 0 && el < KS_V2_LANES && bi < blocks.len)
        ks_buf_addf(o, "%s.%c", blocks.items[bi].name, "xyzw"[el]);
      else if (ldg)
        ks_buf_addf(o, "__ldg(&%s[%s%s])", p, at, offset_text(arena, el));
      else
        ks_buf_addf(o, "%s[%s%s]", p, at, offset_text(arena, el));
    }
    ks_buf_adds(o, "};\n");
  }
  for (size_t k = 0; k < stores->len; k++) {
    slot *st = &stores->items[k];
    const ks_v2_buf *b = &s->bufs.items[st->buf];
    st->name = fresh(e, ks_arena_printf(arena, "ks_%s%zu", b->param->name, st->base));
    ks_buf_addf(o, "%s%s %s[%d];\n", ind, b->elem, st->name, KS_V2_LANES);
  }
  for (size_t k = 0; k < s->sites.len; k++) {
    const ks_v2_site *st = &s->sites.items[k];
    const slots *l = st->write ? stores : &windows;
    for (size_t i = 0; i < l->len; i++)
      if (l->items[i].buf == st->buf && l->items[i].base == st->base &&
          l->items[i].k == (st->write ? 0 : st->k))
        e->site_name[k] = l->items[i].name;
  }
}

/* The lane work: the declarations before the check that depend on x, then
 * the straight-line work; declarations that only compute values no kept
 * statement reads are left out, as is x when unread. */
static void emit_lane_work(emit *e, const region *r, const char *xdecl, const char *ind,
                           ks_buf *o) {
  ks_arena *arena = e->arena;
  size_t n = r->before.len + r->work.len;
  const ks_anode **all = ks_arena_alloc(arena, (n + 1) * sizeof *all);
  const char **text = ks_arena_alloc(arena, (n + 1) * sizeof *text);
  bool *keep = ks_arena_alloc(arena, (n + 1) * sizeof *keep);
  for (size_t k = 0; k < n; k++)
    all[k] = k < r->before.len ? r->before.items[k] : r->work.items[k - r->before.len];
  ks_buf kept = KS_BUF_INIT;
  for (size_t k = n; k-- > 0;) {
    text[k] = render_stmt(e, all[k]);
    keep[k] = !ks_shape_pure_decl(all[k]);
    for (size_t v = 0; v < all[k]->nkids && !keep[k]; v++) {
      const ks_anode *var = all[k]->kids[v];
      keep[k] = var && var->kind == KS_AK_VAR && var->name &&
                ks_rt_has_identifier(kept.data, var->name);
    }
    if (keep[k])
      ks_buf_addf(&kept, "%s\n", text[k]);
  }
  if (ks_rt_has_identifier(kept.data, e->s->x->name))
    ks_buf_addf(o, "%s%s\n", ind, xdecl);
  ks_buf_release(&kept);
  for (size_t k = 0; k < n; k++)
    if (keep[k])
      ks_buf_addf(o, "%s\n", placed(e, all[k], ind));
}

static const char *lane_loop(emit *e, const char *ind, bool unroll) {
  return ks_arena_printf(e->arena, "%s%sfor (int %s = 0; %s < %d; ++%s) {\n",
                         unroll ? ks_arena_printf(e->arena, "%s#pragma unroll\n", ind) : "", ind,
                         e->j, e->j, KS_V2_LANES, e->j);
}

/* Everything from the bounds check to the end of the kernel. */
static const char *emit_region(emit *e, const ks_shape *sh, const region *r, const char *ind,
                               bool *wide) {
  ks_v2 *s = e->s;
  ks_arena *arena = e->arena;
  const ks_rule_input *in = e->in;
  const char *step = ks_rt_indent_step(arena, in);
  const char *ind1 = ks_arena_printf(arena, "%s%s", ind, step);
  const char *ind2 = ks_arena_printf(arena, "%s%s", ind1, step);
  const char *more1 = step;
  const char *fast = fresh(e, "ks_fast");
  e->j = fresh(e, "ks_j");
  const char *xdecl = ks_arena_printf(arena, "%s %s = %s + %s;", s->x->type ? s->x->type : "int",
                                      s->x->name, s->x0, e->j);
  ks_buf o = KS_BUF_INIT;

  /* which lanes may take the fast path */
  ks_node_list needed = {0};
  needed_decls(s, r, &needed);
  ks_buf_addf(&o, "bool %s = true;\n%s", fast, lane_loop(e, ind, true));
  ks_buf_addf(&o, "%s%s\n", ind1, xdecl);
  e->slow = true;
  size_t c = 0;
  for (size_t k = 0; k < r->before.len; k++)
    if (ks_v2_listed(&needed, r->before.items[k]))
      ks_buf_addf(&o, "%s\n", placed(e, r->before.items[k], ind1));
  const char *cond = ks_rt_text_of(arena, in, r->conds.items[c++]);
  ks_buf_addf(&o, "%sif (%s%s%s)\n%s%s = false;\n", ind1, r->early_return ? "" : "!(", cond,
              r->early_return ? "" : ")", ind2, fast);
  for (size_t k = 0; k < r->nrest; k++) {
    const ks_anode *st = r->rest[k];
    if (ks_v2_listed(&r->edges, st)) {
      cond = ks_rt_text_of(arena, in, r->conds.items[c++]);
      ks_buf_addf(&o, "%sif (%s)\n%s%s = false;\n", ind1,
                  ks_rt_indent_more(arena, cond, more1), ind2, fast);
    } else if (ks_v2_listed(&needed, st)) {
      ks_buf_addf(&o, "%s\n", placed(e, st, ind1));
    }
  }
  ks_buf_addf(&o, "%s}\n", ind);

  /* the fast path */
  ks_buf_addf(&o, "%sif (%s) {\n", ind, fast);
  slots stores = {0};
  e->slow = false;
  emit_loads(e, ind1, &o, &stores, wide);
  ks_buf_adds(&o, lane_loop(e, ind1, true));
  emit_lane_work(e, r, xdecl, ind2, &o);
  ks_buf_addf(&o, "%s}\n", ind1);
  for (size_t k = 0; k < stores.len; k++) {
    const slot *st = &stores.items[k];
    const ks_v2_buf *b = &s->bufs.items[st->buf];
    ks_buf_addf(&o, "%s*reinterpret_cast<%s *>(%s + %s) = make_%s(", ind1, b->vec,
                b->param->name, s->bases.items[st->base].name, b->vec);
    for (int j = 0; j < KS_V2_LANES; j++)
      ks_buf_addf(&o, "%s%s[%d]", j ? ", " : "", st->name, j);
    ks_buf_adds(&o, ");\n");
  }
  ks_buf_addf(&o, "%sreturn;\n%s}\n", ind1, ind);

  /* the original work, once per lane */
  e->slow = true;
  ks_buf_adds(&o, lane_loop(e, ind, false));
  ks_buf_addf(&o, "%s%s\n", ind1, xdecl);
  for (size_t k = 0; k < r->before.len; k++)
    ks_buf_addf(&o, "%s\n", placed(e, r->before.items[k], ind1));
  const ks_anode *last = sh->body->kids[sh->body->nkids - 1];
  ks_buf span = KS_BUF_INIT;
  ks_rt_render_span(&span, in, sh->body, sh->check->begin, ks_rt_stmt_end_deep(in->unit, last),
                    lane_replace, e);
  ks_buf_addf(&o, "%s%s\n%s}", ind1, ks_rt_indent_more(arena, span.data, more1), ind);
  ks_buf_release(&span);
  const char *t = ks_arena_strdup(arena, o.data);
  ks_buf_release(&o);
  return t;
}

/* Removes a statement, with its line when it stands alone on it. */
static void delete_stmt(ks_arena *arena, const ks_rule_input *in, ks_edits *edits,
                        const ks_anode *st) {
  const char *u = in->unit;
  unsigned b = st->begin, end = ks_rt_stmt_end(u, st), lb = b, le = end;
  while (lb > 0 && (u[lb - 1] == ' ' || u[lb - 1] == '\t'))
    lb--;
  while (u[le] == ' ' || u[le] == '\t')
    le++;
  if ((lb == 0 || u[lb - 1] == '\n') && u[le] == '\n') {
    b = lb;
    end = le + 1;
  }
  ks_edits_add(arena, edits, ks_rt_src_at(in, b), ks_rt_src_at(in, end), "");
}

/* ---- the rule ------------------------------------------------------------ */

static const int vectorize_2d_choices[] = {KS_V2_LANES};

static int apply_vectorize_2d(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                              ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param != KS_V2_LANES)
    return ks_rt_not_applicable(arena, out, "%d lanes: only 4 is known", param);
  const char *problem = ks_rt_mapping_problem(arena, in, NULL, 0);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  ks_shape sh;
  ks_shape_find(ctx, arena, in, 0, &sh);
  if (sh.why)
    return ks_rt_not_applicable(arena, out, "%s", sh.why);
  if (!sh.var[1])
    return ks_rt_not_applicable(arena, out, "a 1-D kernel (no y index)");
  if (sh.alias)
    return ks_rt_not_applicable(arena, out, "its x index is read through aliases with a constant "
                                            "block size");
  unsigned allowed[4];
  for (int d = 0; d < 2; d++) {
    const ks_anode *i = ks_rt_var_init(sh.var[d]);
    allowed[2 * d] = i->begin;
    allowed[2 * d + 1] = i->end;
  }
  problem = ks_rt_mapping_problem(arena, in, allowed, 2);
  if (problem)
    return ks_rt_not_applicable(arena, out, "%s", problem);
  /* The bound as the guards can state it: as written, or folded as the
   * compiler reads it (macros, constants; rules_meaning). */
  const char *bound_why = NULL;
  const char *bound_text = ks_shape_bound_guard(ctx, arena, in, sh.bound, &bound_why);
  if (!bound_text)
    return ks_rt_not_applicable(arena, out, "%s", bound_why);
  ks_v2 s = {.arena = arena, .in = in, .body = sh.body, .x = sh.var[0]};
  emit e = {.s = &s, .arena = arena, .in = in};
  s.x0 = fresh(&e, "ks_x0");
  region r = {0};
  find_region(&s, &sh, &r);
  for (size_t k = 0; k < r.work.len && !s.why; k++)
    ks_v2_scan_statement(&s, r.work.items[k]);
  if (s.why)
    return ks_rt_not_applicable(arena, out, "%s", s.why);
  bool any_write = false;
  for (size_t k = 0; k < s.bufs.len; k++) {
    const ks_v2_buf *b = &s.bufs.items[k];
    if (b->read && b->written)
      return ks_rt_not_applicable(arena, out,
                                  "reads and writes %s in the element's work (the loads would "
                                  "not see the writes)",
                                  b->param->name);
    any_write |= b->written;
  }
  if (!any_write)
    return ks_rt_not_applicable(arena, out, "the element's work writes no buffer");

  /* the edits: x becomes the lane-0 index, x's dependents move into the
   * lanes, and everything from the bounds check on is rewritten */
  const ks_anode *xdecl = sh.body->kids[sh.first];
  const char *ind = ks_rt_line_indent(arena, in->unit, sh.check->begin);
  ks_edits edits = {0};
  ks_edits_add(arena, &edits, ks_rt_src_at(in, xdecl->begin),
               ks_rt_src_at(in, ks_rt_stmt_end(in->unit, xdecl)),
               ks_arena_printf(arena, "%s %s = (%s) * %d;",
                               ks_shape_without_const(s.x->type ? s.x->type : "int"), s.x0,
                               ks_rt_text_of(arena, in, ks_rt_var_init(s.x)), KS_V2_LANES));
  for (size_t k = 0; k < r.before.len; k++)
    delete_stmt(arena, in, &edits, r.before.items[k]);
  bool *wide = ks_arena_alloc(arena, (s.bases.len + 1) * sizeof *wide);
  const char *text = emit_region(&e, &sh, &r, ind, wide);
  if (s.why)
    return ks_rt_not_applicable(arena, out, "%s", s.why);
  const ks_anode *last = sh.body->kids[sh.body->nkids - 1];
  ks_edits_add(arena, &edits, ks_rt_src_at(in, sh.check->begin),
               ks_rt_src_at(in, ks_rt_stmt_end_deep(in->unit, last)), text);
  if (ks_rt_finish(ctx, in, arena, &edits, "vec4x", out))
    return -1;

  /* guards and the launch */
  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return -1;
  ks_variant *child = &out->child;
  ks_rule_require(arena, child,
                  ks_shape_coverage_guard(arena, &pol, 0, bound_text));
  const char *xtype = ks_shape_without_const(s.x->type ? s.x->type : "int");
  if (!ks_shape_is_wide_type(xtype))
    ks_rule_require(arena, child,
                    ks_arena_printf(arena, "ceil_div(%s, %d) * %d * %s <= %s", pol.grid[0],
                                    KS_V2_LANES, KS_V2_LANES, ks_rt_paren(arena, pol.block[0]),
                                    strstr(xtype, "unsigned") ? "4294967296" : "2147483648"));
  for (size_t k = 0; k < s.bases.len; k++)
    for (size_t i = 0; wide[k] && i < s.bases.items[k].params.len; i++)
      ks_rule_require(arena, child,
                      ks_arena_printf(arena, "%s %% %d == 0", s.bases.items[k].params.items[i],
                                      KS_V2_LANES));
  for (size_t k = 0; k < s.sites.len; k++) {
    const ks_v2_site *st = &s.sites.items[k];
    if (wide[st->base] && (st->write || (st->k > -KS_V2_LANES && st->k < KS_V2_LANES)))
      ks_rule_require(arena, child,
                      ks_arena_printf(arena, "aligned(%s, 16)", s.bufs.items[st->buf].param->name));
  }
  /* the loads run before the stores, and reads may go through the
   * read-only cache: what is read must not overlap what is written (as
   * restrict requires) */
  for (size_t a = 0; a < in->ast->nparams; a++)
    for (size_t b = a + 1; b < in->ast->nparams; b++) {
      const ks_v2_buf *pa = NULL, *pb = NULL;
      for (size_t k = 0; k < s.bufs.len; k++) {
        if (s.bufs.items[k].param == in->ast->params[a])
          pa = &s.bufs.items[k];
        if (s.bufs.items[k].param == in->ast->params[b])
          pb = &s.bufs.items[k];
      }
      if (pa && pb && ((pa->read && pb->written) || (pa->written && pb->read)))
        ks_rule_require(arena, child,
                        ks_arena_printf(arena, "disjoint(%s, %s)", pa->param->name,
                                        pb->param->name));
    }
  pol.grid[0] = ks_arena_printf(arena, "ceil_div(%s, %d)", pol.grid[0], KS_V2_LANES);
  ks_rule_policy_write(arena, &pol, child);
  return 0;
}

const ks_rule ks_rule_vectorize_2d = {
    "vectorize_2d",
    "2-D kernels: each thread handles 4 consecutive x with 16-byte loads of the rows it reads "
    "and one 16-byte store, the original body at edges",
    false,
    vectorize_2d_choices,
    sizeof vectorize_2d_choices / sizeof *vectorize_2d_choices,
    apply_vectorize_2d};
