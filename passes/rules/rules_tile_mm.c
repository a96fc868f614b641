/* rules_tile_mm: tile_matmul, a matrix multiply staged in shared-memory
 * tiles with register blocking.
 *
 * The pattern: one thread per output element (y, x), the two indices
 * blockIdx.d * blockDim.d + threadIdx.d (d = y and x, whatever the names),
 * the bounds of both checked by `if`s and early returns around one loop
 *   for (k = 0; k < K; k++) ACC += ... Y[f(y, k)] ... X[g(k, x)] ...;
 * where ACC is a local or a memory element (C[y * ldc + x]) and the two
 * operand reads depend one on (y, k), the other on (k, x), either layout.
 * The rewrite: block (T, T / R), each thread computing R outputs
 * y = tile y + threadIdx.y + r * (T / R); per k-tile the block loads T x T
 * of each operand into padded __shared__ tiles (zero outside the bounds,
 * the load mapped so that a warp reads along the operand's contiguous
 * index), synchronizes, and accumulates in registers. With Rx > 1 as well
 * (param T * 10000 + R * 100 + Rx), each thread also computes Rx outputs
 * along x, x = tile x + threadIdx.x + c * (T / Rx), block (T / Rx, T / R):
 * an R x Rx block of outputs in registers, the classic register tiling,
 * which reads R + Rx shared values per R * Rx multiply-adds instead of
 * R + 1 per R. The user's code
 * around the loop is replayed twice per output, each time under its own
 * bounds checks and with `return` turned into `continue`: the prologue
 * (everything up to the loop, then ks_acc[r] = ACC) and the epilogue
 * (declarations and checks again, ACC = ks_acc[r], then everything after
 * the loop). Every thread takes part in the loads and barriers. param
 * encodes T and R: T * 100 + R (3204: 32 x 32 tiles, block 32 x 8), or T,
 * R and Rx: T * 10000 + R * 100 + Rx (640404: 64 x 64 tiles, 4 x 4
 * outputs per thread, block 16 x 16). Bounds are read as the compiler
 * sees them (rules_meaning: macros, function-like ones too, constants).
 *
 * Floating point: each output still sums its terms k = 0, 1, ..., K - 1 in
 * order, starting from the same value and with the same expression (the
 * loop's statement is copied with its operands read from the tiles); the
 * last k-tile stops at K instead of adding zeros (a -0 sum stays -0). The
 * result is bitwise the original's, up to the compiler contracting a
 * multiply-add into an FMA differently in the new code.
 *
 * Guards: the original launch covers the bounds along both dimensions
 * (the new grid covers what the old one did, rounded up to tiles, and
 * the extra threads fall outside the bounds), the new grid_y <= 65535.
 *
 * The float4 choices (param >= 10^8, fast_apply below) are the layout of
 * a fast SIMT sgemm: BM x BN tiles, k-major shared tiles read with float4,
 * float4 global loads (guards: leading dimensions multiples of 4, aligned
 * operands), the next k-tile prefetched into registers.
 *
 * The reading of the pattern and the replays are shared with tile_mma
 * (rules_tile_mma.c) through rules_tile_mm.h. */
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_meaning.h"
#include "rules_smem_int.h"
#include "rules_tile_mm.h"

/* ---- small tree helpers ------------------------------------------------------ */

static void addends(ks_arena *arena, const ks_anode *e, ks_rt_nodes *out) {
  e = ks_anode_strip(e, true);
  if (!e)
    return;
  if (ks_rt_is_bin(e, "+") && e->nkids == 2) {
    addends(arena, e->kids[0], out);
    addends(arena, e->kids[1], out);
  } else {
    *ks_array_push(arena, out) = e;
  }
}

/* `var` is a bare addend of the index: consecutive values of var read
 * consecutive elements. */
static bool bare_addend(ks_arena *arena, const ks_anode *index, const ks_anode *var) {
  ks_rt_nodes parts = {0};
  addends(arena, index, &parts);
  for (size_t i = 0; i < parts.len; i++)
    if (parts.items[i]->kind == KS_AK_DECL_REF && parts.items[i]->decl == var)
      return true;
  return false;
}

typedef struct refs {
  const ks_anode *var;
  bool found;
} refs;

static bool find_ref(ks_anode *n, void *arg) {
  refs *r = arg;
  if (n->kind == KS_AK_DECL_REF && n->decl == r->var)
    r->found = true;
  return !r->found;
}

static bool mentions(const ks_anode *root, const ks_anode *var) {
  refs r = {var, false};
  if (root)
    ks_anode_walk((ks_anode *)root, find_ref, &r);
  return r.found;
}

/* What a subtree holds that the replays or the tile loads cannot repeat. */
typedef struct scan {
  bool assigns;        /* =, op=, ++, -- */
  bool reads_memory;   /* a subscript or a dereference */
  bool returns;
  bool jumps;          /* break, continue, goto, switch */
  int loops;
  const ks_anode *local; /* a DECL_REF to a local other than the allowed ones */
  const ks_anode *allow[3];
} scan;

static bool scan_visit(ks_anode *n, void *arg) {
  scan *s = arg;
  if (ks_rt_is_assignment(n))
    s->assigns = true;
  if (n->kind == KS_AK_SUBSCRIPT || (n->kind == KS_AK_UNARY && n->op && !strcmp(n->op, "*")))
    s->reads_memory = true;
  if (n->kind == KS_AK_RETURN)
    s->returns = true;
  if (n->kind == KS_AK_BREAK || n->kind == KS_AK_CONTINUE ||
      (n->kind == KS_AK_OTHER && n->kind_name &&
       (strstr(n->kind_name, "Goto") || strstr(n->kind_name, "Switch"))))
    s->jumps = true;
  if (n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO)
    s->loops++;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR && !s->local &&
      n->decl != s->allow[0] && n->decl != s->allow[1] && n->decl != s->allow[2])
    s->local = n;
  return true;
}

static scan scan_of(const ks_anode *n, const ks_anode *a0, const ks_anode *a1,
                    const ks_anode *a2) {
  scan s = {.allow = {a0, a1, a2}};
  if (n)
    ks_anode_walk((ks_anode *)n, scan_visit, &s);
  return s;
}

/* Assignments to `var` below root (the statement that sets it counted). */
typedef struct writes {
  const ks_anode *var;
  unsigned n;
} writes;

static bool count_write(ks_anode *n, void *arg) {
  writes *w = arg;
  if (ks_rt_is_assignment(n) && n->nkids >= 1) {
    const ks_anode *t = ks_anode_strip(n->kids[0], true);
    if (t && t->kind == KS_AK_DECL_REF && t->decl == w->var)
      w->n++;
  }
  return true;
}

static unsigned writes_of(const ks_anode *root, const ks_anode *var) {
  writes w = {var, 0};
  ks_anode_walk((ks_anode *)root, count_write, &w);
  return w.n;
}

/* The statement `st` sets `var` to the global index along d: a declaration
 * with that initializer, or `var = ...;`. */
static const ks_anode *index_stmt(const ks_anode *st, char d, const ks_anode **bdim,
                                  const ks_anode **tid) {
  const ks_anode *var = ks_rt_single_var(st);
  if (var && ks_smem_is_gid(ks_rt_var_init(var), d, bdim, tid))
    return var;
  const ks_anode *e = ks_anode_strip(st, false);
  if (e && ks_rt_is_bin(e, "=") && e->nkids == 2) {
    const ks_anode *l = ks_anode_strip(e->kids[0], true);
    if (l && l->kind == KS_AK_DECL_REF && l->decl && l->decl->kind == KS_AK_VAR &&
        ks_smem_is_gid(e->kids[1], d, bdim, tid))
      return l->decl;
  }
  return NULL;
}

/* A bound written as a guard expression: literals by value (macros
 * included), scalar parameters by name, arithmetic. NULL when it cannot. */
const char *ks_mm_guard_text(ks_arena *arena, const ks_anode *n) {
  n = ks_anode_strip(n, true);
  if (!n)
    return NULL;
  if (n->kind == KS_AK_INT_LITERAL)
    return ks_arena_printf(arena, "%lld", n->int_value);
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_PARAM && !n->decl->is_pointer &&
      !n->from_macro)
    return n->decl->name;
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op) {
    static const char *const arith[] = {"+", "-", "*", "/", "%"};
    for (size_t i = 0; i < sizeof arith / sizeof *arith; i++)
      if (!strcmp(n->op, arith[i])) {
        const char *a = ks_mm_guard_text(arena, n->kids[0]);
        const char *b = ks_mm_guard_text(arena, n->kids[1]);
        return a && b ? ks_arena_printf(arena, "(%s %s %s)", a, n->op, b) : NULL;
      }
  }
  return NULL;
}

/* An expression the tile loop (outside the user's scopes) can repeat:
 * literals, macros and parameters no code assigns (the facts walk refuses
 * assignments to parameters). */
static bool invariant(const ks_anode *n) {
  scan s = scan_of(n, NULL, NULL, NULL);
  return !s.assigns && !s.reads_memory && !s.local;
}

/* ---- the pattern ---------------------------------------------------------------- */

typedef struct op_search {
  ks_arena *arena;
  ks_rt_nodes reads;
  bool call;
  bool conversions; /* __half2float and __bfloat162float are not calls (ks_mm_plan) */
} op_search;

/* An operand read: p[i], *(p + i), or __ldg(&p[i]) / __ldg(p + i) (the
 * restrict rule's read-only loads): the parameter and the index. */
const ks_anode *ks_mm_read_access(const ks_anode *n, const ks_anode **ref, const ks_anode **idx) {
  if (n->kind == KS_AK_SUBSCRIPT || (n->kind == KS_AK_UNARY && n->op && !strcmp(n->op, "*")))
    return ks_smem_param_access(n, ref, idx);
  if (n->kind == KS_AK_CALL && n->name && !strcmp(n->name, "__ldg") && n->nkids >= 1) {
    const ks_anode *a = ks_anode_strip(n->kids[n->nkids - 1], false);
    if (a && a->kind == KS_AK_UNARY && a->op && !strcmp(a->op, "&") && a->nkids == 1)
      return ks_smem_param_access(a->kids[0], ref, idx);
    return a ? ks_smem_param_access(a, ref, idx) : NULL;
  }
  return NULL;
}

static bool find_reads(ks_anode *n, void *arg) {
  op_search *o = arg;
  const ks_anode *ref, *idx;
  if (ks_mm_read_access(n, &ref, &idx)) {
    *ks_array_push(o->arena, &o->reads) = n;
    return false;
  }
  if (n->kind == KS_AK_CALL &&
      !(o->conversions && n->name &&
        (!strcmp(n->name, "__half2float") || !strcmp(n->name, "__bfloat162float"))))
    o->call = true;
  return true;
}

static bool same_text(const ks_smem_rewrite *w, const ks_anode *a, const ks_anode *b) {
  return a->end - a->begin == b->end - b->begin &&
         !strncmp(w->unit + a->begin, w->unit + b->begin, a->end - a->begin);
}

static const char *read_loop(const ks_smem_rewrite *w, const ks_smem_facts *f, ks_mm_plan *p) {
  ks_arena *arena = w->arena;
  const ks_anode *L = p->loop;
  /* for (k = 0 | T k = 0; k < K | k <= K; k++ | ++k | k += 1) */
  const ks_anode *init = L->kids[0], *cond = L->kids[1], *inc = L->kids[2], *body = L->kids[3];
  if (!init || !cond || !inc || !body)
    return "its loop lacks an initialization, condition or increment";
  const ks_anode *k = ks_rt_single_var(init), *k0 = NULL;
  if (k) {
    k0 = ks_rt_var_init(k);
  } else {
    const ks_anode *e = ks_anode_strip(init, false);
    const ks_anode *l = e && ks_rt_is_bin(e, "=") && e->nkids == 2 ? ks_anode_strip(e->kids[0], true) : NULL;
    if (l && l->kind == KS_AK_DECL_REF && l->decl && l->decl->kind == KS_AK_VAR) {
      k = l->decl;
      k0 = e->kids[1];
    }
  }
  if (!k || !k0 || !ks_rt_is_int(k0, 0))
    return "its loop does not start its counter at 0";
  p->k = k;
  const ks_anode *i = ks_anode_strip(inc, false);
  bool step1 = false;
  if (i && i->kind == KS_AK_UNARY && i->op && !strcmp(i->op, "++") && ks_rt_refers_to(i->kids[0], k))
    step1 = true;
  if (i && i->kind == KS_AK_COMPOUND_ASSIGN && i->op && !strcmp(i->op, "+=") && i->nkids == 2 &&
      ks_rt_refers_to(i->kids[0], k) && ks_rt_is_int(i->kids[1], 1))
    step1 = true;
  if (!step1)
    return "its loop does not step its counter by 1";
  if (!ks_smem_read_bound(cond, k, &p->kb) || !p->kb.in_range || !invariant(p->kb.bound) || mentions(p->kb.bound, k))
    return "its loop is not bounded by `k < K` with K an expression of parameters and constants";
  if (writes_of(w->in->ast->body, k) != (ks_rt_single_var(init) ? 1u : 2u) ||
      ks_rt_count_refs(arena, w->in->ast->body, k) != ks_rt_count_refs(arena, L, k))
    return "uses its loop counter outside the loop";

  /* The one statement: ACC += P, or ACC = ACC + P. */
  const ks_anode *s = body;
  if (s->kind == KS_AK_COMPOUND) {
    if (s->nkids != 1)
      return "its loop body is not one accumulating statement";
    s = s->kids[0];
  }
  const ks_anode *u = ks_anode_strip(s, false), *P = NULL;
  if (u && u->kind == KS_AK_COMPOUND_ASSIGN && u->op && !strcmp(u->op, "+=") && u->nkids == 2) {
    p->acc = ks_anode_strip(u->kids[0], true);
    P = u->kids[1];
  } else if (u && ks_rt_is_bin(u, "=") && u->nkids == 2) {
    const ks_anode *r = ks_anode_strip(u->kids[1], false);
    p->acc = ks_anode_strip(u->kids[0], true);
    if (r && ks_rt_is_bin(r, "+") && r->nkids == 2 && p->acc &&
        same_text(w, ks_anode_strip(r->kids[0], true), p->acc)) {
      p->acc2 = ks_anode_strip(r->kids[0], true);
      P = r->kids[1];
    }
  }
  if (!P || !p->acc)
    return "its loop body is not `acc += a * b` (or acc = acc + a * b)";
  p->upd = u;
  if (u->from_macro || p->acc->from_macro)
    return "accumulates through a macro";
  const ks_anode *aref, *aidx;
  if (p->acc->kind == KS_AK_DECL_REF && p->acc->decl && p->acc->decl->kind == KS_AK_VAR) {
    p->acc_var = p->acc->decl;
    if (p->acc_var->is_pointer || (p->acc_var->type && strchr(p->acc_var->type, '[')))
      return "accumulates into a pointer or an array";
  } else if (ks_smem_param_access(p->acc, &aref, &aidx)) {
    scan sa = scan_of(aidx, p->x, p->y, NULL);
    if (sa.assigns || sa.reads_memory || sa.local || mentions(aidx, k))
      return "accumulates into an element whose index it cannot repeat";
  } else {
    return "accumulates into something other than a local or a buffer element";
  }

  /* P: two operand reads, one on (y, k), one on (k, x). */
  op_search o = {arena, {0}, false, p->conversions};
  ks_anode_walk((ks_anode *)P, find_reads, &o);
  if (o.call)
    return "calls a function in its loop body";
  if (o.reads.len != 2)
    return "does not read exactly two operands in its loop body";
  for (size_t n = 0; n < 2; n++) {
    const ks_anode *r = o.reads.items[n], *ref, *idx;
    const ks_anode *param = ks_mm_read_access(r, &ref, &idx);
    if (r->from_macro)
      return "reads an operand through a macro";
    bool ry = mentions(idx, p->y), rx = mentions(idx, p->x);
    scan si = scan_of(idx, p->x, p->y, k);
    if (si.local)
      return ks_arena_printf(arena, "indexes an operand with the local '%s'",
                             si.local->name ? si.local->name : "?");
    if (si.assigns || si.reads_memory)
      return "indexes an operand with side effects or memory reads";
    if (!mentions(idx, k) || ry == rx)
      return "does not read one operand along (row, k) and the other along (k, column)";
    if (ry) {
      p->opy = r, p->py = param, p->y_along_k = bare_addend(arena, idx, k);
    } else {
      p->opx = r, p->px = param, p->x_along_k = bare_addend(arena, idx, k);
    }
  }
  if (!p->opy || !p->opx)
    return "does not read one operand along (row, k) and the other along (k, column)";
  /* The rest of P: parameters and constants. */
  scan sp = scan_of(P, p->x, p->y, k);
  if (sp.assigns)
    return "assigns inside its product";
  if (scan_of(P, NULL, NULL, NULL).local) {
    /* Some local: allowed only inside the two reads. */
    ks_rt_nodes all = ks_rt_collect(arena, P);
    for (size_t n = 0; n < all.len; n++) {
      const ks_anode *d = all.items[n];
      if (d->kind == KS_AK_DECL_REF && d->decl && d->decl->kind == KS_AK_VAR &&
          !ks_rt_is_within(d, p->opy) && !ks_rt_is_within(d, p->opx))
        return ks_arena_printf(arena, "its product uses the local '%s'", d->name ? d->name : "?");
    }
  }
  /* Stores into the operands would race with the tiles. */
  for (size_t n = 0; n < f->stores.len; n++) {
    const ks_anode *t = f->stores.items[n], *ref, *idx;
    const ks_anode *sp2 = t->nkids ? ks_smem_param_access(t->kids[0], &ref, &idx) : NULL;
    if (!sp2 || sp2 == p->py || sp2 == p->px)
      return "writes one of its operands (or memory it cannot name)";
  }
  if (!p->acc_var) {
    const ks_anode *ap = ks_smem_param_access(p->acc, &aref, &aidx);
    if (ap == p->py || ap == p->px)
      return "accumulates into one of its operands";
  }
  return NULL;
}

const char *ks_mm_read(const ks_rule_input *in, ks_arena *arena, ks_smem_rewrite *w,
                       ks_smem_facts *f, ks_mm_plan *p) {
  const char *why = ks_smem_refusal(in, arena, w, f);
  if (why)
    return why;
  if (f->bounds_attr)
    return "has __launch_bounds__ (the block changes)";
  if ((why = ks_mm_match(w, f, p)))
    return why;
  if (!p->py->pointee || !p->px->pointee)
    return "the element type of an operand is unknown";
  return NULL;
}

const char *ks_mm_match(const ks_smem_rewrite *w, const ks_smem_facts *f, ks_mm_plan *p) {
  const ks_anode *body = w->in->ast->body;
  ks_arena *arena = w->arena;
  const ks_anode *td;
  for (size_t n = 0; n < body->nkids; n++) {
    const ks_anode *st = body->kids[n], *bd, *v;
    if (!st)
      continue;
    if (!p->x && (v = index_stmt(st, 'x', &bd, &td))) {
      p->x = v, p->x_stmt = st, p->x_bdim = bd, p->x_tid = td;
      if (bd->from_macro || td->from_macro)
        return "computes its indices in a macro";
    } else if (!p->y && (v = index_stmt(st, 'y', &bd, &td))) {
      p->y = v, p->y_stmt = st, p->y_bdim = bd, p->y_tid = td;
      if (bd->from_macro || td->from_macro)
        return "computes its indices in a macro";
    }
  }
  if (!p->x || !p->y)
    return "is not a 2-D kernel with indices blockIdx.y * blockDim.y + threadIdx.y and "
           "blockIdx.x * blockDim.x + threadIdx.x";
  if (writes_of(body, p->x) != (ks_rt_single_var(p->x_stmt) ? 0u : 1u) ||
      writes_of(body, p->y) != (ks_rt_single_var(p->y_stmt) ? 0u : 1u))
    return "changes its indices";
  for (size_t n = 0; n < f->builtins.len; n++) {
    const ks_anode *b = f->builtins.items[n];
    if (!ks_rt_is_within(b, p->x_stmt) && !ks_rt_is_within(b, p->y_stmt))
      return "uses the thread or block index beyond its two indices (threads are remapped)";
  }
  if (f->atomics.len)
    return "writes with atomicAdd";
  scan all = scan_of(body, NULL, NULL, NULL);
  if (all.jumps)
    return "uses break, continue, goto or switch";
  if (all.loops != 1)
    return all.loops ? "has more than one loop" : "has no loop";
  ks_rt_nodes nodes = ks_rt_collect(arena, body);
  for (size_t n = 0; n < nodes.len && !p->loop; n++)
    if (nodes.items[n]->kind == KS_AK_FOR)
      p->loop = nodes.items[n];
  if (!p->loop)
    return "has no for loop";
  if (p->loop->from_macro)
    return "loops in a macro";

  /* The path: compounds and `if`s without else from the body down. */
  const ks_anode *c = p->loop, *up = c->parent;
  if (up && up->kind == KS_AK_OTHER && up->nkids == 1)
    c = up, up = up->parent; /* the loop with its pragma */
  p->loop_stmt = c;
  const ks_anode *rev[32];
  size_t nrev = 0;
  rev[nrev++] = c;
  while (c != body) {
    up = c->parent;
    if (!up || nrev >= 31)
      return "nests its loop too deep";
    if (up->kind == KS_AK_IF) {
      if (up->nkids != 2 || up->kids[1] != c)
        return "runs its loop under an if with an else";
    } else if (up->kind != KS_AK_COMPOUND) {
      return "runs its loop inside something other than blocks and ifs";
    }
    rev[nrev++] = up;
    c = up;
  }
  for (size_t n = 0; n < nrev; n++)
    p->path[n] = rev[nrev - 1 - n];
  p->npath = nrev;
  if (p->x_stmt->begin > p->path[1]->begin || p->y_stmt->begin > p->path[1]->begin)
    return "computes an index after the statement holding its loop";

  const char *why = read_loop(w, f, p);
  if (why)
    return why;

  /* What comes before the loop on each level: declarations without side
   * effects and early returns are replayed in both phases; other
   * statements (C *= beta) run once, in the prologue, and write no local
   * but the accumulator. Conditions read no memory. */
  ks_rt_nodes conds = {0}, exits = {0};
  for (size_t lv = 0; lv + 1 < p->npath; lv++) {
    const ks_anode *holder = p->path[lv], *next = p->path[lv + 1];
    if (holder->kind == KS_AK_IF) {
      scan sc = scan_of(holder->kids[0], p->x, p->y, NULL);
      if (sc.assigns || sc.reads_memory || sc.local)
        return "checks something other than its indices before the loop";
      ks_rt_split_chain(arena, holder->kids[0], "&&", &conds);
      continue;
    }
    for (size_t n = 0; n < holder->nkids && holder->kids[n] != next; n++) {
      const ks_anode *st = holder->kids[n];
      if (!st || st == p->x_stmt || st == p->y_stmt)
        continue;
      if (st->kind == KS_AK_DECL_STMT) {
        scan sd = scan_of(st, NULL, NULL, NULL);
        if (sd.reads_memory || sd.returns)
          return "declares a local from memory before its loop";
        if (sd.assigns)
          return "declares a local with side effects before its loop";
        continue;
      }
      if (ks_smem_is_return_guard(st)) {
        scan sc = scan_of(st->kids[0], p->x, p->y, NULL);
        if (sc.assigns || sc.reads_memory || sc.local)
          return "returns early on something other than its indices";
        ks_rt_split_chain(arena, st->kids[0], "||", &exits);
        continue;
      }
      scan so = scan_of(st, p->acc_var, NULL, NULL);
      if (so.returns)
        return "returns before its loop other than by an early exit on its bounds";
      ks_rt_nodes in = ks_rt_collect(arena, st);
      for (size_t m = 0; m < in.len; m++) {
        const ks_anode *a = in.items[m];
        if (!ks_rt_is_assignment(a) || !a->nkids)
          continue;
        const ks_anode *t = ks_anode_strip(a->kids[0], true);
        if (t && t->kind == KS_AK_DECL_REF && t->decl != p->acc_var)
          return ks_arena_printf(arena, "sets the local '%s' before its loop",
                                 t->name ? t->name : "?");
      }
    }
  }
  bool have_x = false, have_y = false;
  for (size_t n = 0; n < conds.len + exits.len; n++) {
    bool exit = n >= conds.len;
    const ks_anode *cnd = exit ? exits.items[n - conds.len] : conds.items[n];
    ks_smem_bound b;
    if (ks_smem_read_bound(cnd, p->x, &b) && b.in_range != exit && !mentions(b.bound, p->y)) {
      if (!have_x)
        p->xb = b;
      have_x = true;
    } else if (ks_smem_read_bound(cnd, p->y, &b) && b.in_range != exit &&
               !mentions(b.bound, p->x)) {
      if (!have_y)
        p->yb = b;
      have_y = true;
    } else {
      return "checks something other than upper bounds of its indices before its loop";
    }
  }
  if (!have_x || !have_y)
    return "does not check both indices against bounds before its loop";
  if (!invariant(p->xb.bound) || !invariant(p->yb.bound))
    return "bounds its indices by expressions of locals";
  return NULL;
}

/* ---- the text ------------------------------------------------------------------- */

typedef struct upd_render {
  const ks_mm_plan *p;
  const char *acc, *ty, *tx;
} upd_render;

static const char *replace_upd(const ks_anode *n, void *arg) {
  upd_render *r = arg;
  const ks_mm_plan *p = r->p;
  if (n == p->opy)
    return r->ty;
  if (n == p->opx)
    return r->tx;
  if (p->acc_var ? (n->kind == KS_AK_DECL_REF && n->decl == p->acc_var) : (n == p->acc || n == p->acc2))
    return r->acc;
  return NULL;
}

/* The user's body, once per output (blockDim.y becomes T, blockDim.x Tx):
 * phase 0 the prologue (up to the loop, which becomes `ks_acc[r] = ACC;`),
 * phase 1 the epilogue (declarations and checks, `ACC = ks_acc[r];` in the
 * loop's place, what follows it). */
const char *ks_mm_replay(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_mm_plan *p, int phase,
                         const char *T, const char *Tx, const char *ty_r, const char *tx_c,
                         const char *acc_text, const char *slot) {
  ks_arena *arena = w->arena;
  ks_edits e = {0};
  ks_rt_nodes cut = {0};
  for (size_t lv = 0; lv + 1 < p->npath; lv++) {
    const ks_anode *holder = p->path[lv], *next = p->path[lv + 1];
    if (holder->kind != KS_AK_COMPOUND)
      continue;
    bool after = false;
    for (size_t n = 0; n < holder->nkids; n++) {
      const ks_anode *st = holder->kids[n];
      if (!st)
        continue;
      if (st == next) {
        after = true;
        continue;
      }
      bool keep;
      if (after)
        keep = phase == 1;
      else
        keep = phase == 0 || st == p->x_stmt || st == p->y_stmt || st->kind == KS_AK_DECL_STMT ||
               ks_smem_is_return_guard(st);
      if (!keep)
        *ks_array_push(arena, &cut) = st;
    }
  }
  for (size_t n = 0; n < cut.len; n++)
    ks_edits_add(arena, &e, ks_rt_begin_with_pragmas(w->unit, cut.items[n]->begin),
                 ks_rt_stmt_end_deep(w->unit, cut.items[n]), "");
  ks_edits_add(arena, &e, p->x_bdim->begin, p->x_bdim->end, Tx);
  ks_edits_add(arena, &e, p->y_bdim->begin, p->y_bdim->end, T);
  ks_edits_add(arena, &e, p->y_tid->begin, p->y_tid->end, ty_r);
  if (tx_c)
    ks_edits_add(arena, &e, p->x_tid->begin, p->x_tid->end, tx_c);
  /* A loop variable declared before the loop (C89) is kept with its
   * declaration but has no loop here: said unused, so that nvcc does not
   * warn about the replay. */
  const char *k_unused = "";
  if (p->k && !ks_rt_is_within(p->k, p->loop))
    k_unused = ks_arena_printf(arena, " (void)%s;", p->k->name);
  ks_edits_add(arena, &e, ks_rt_begin_with_pragmas(w->unit, p->loop_stmt->begin),
               ks_rt_stmt_end_deep(w->unit, p->loop_stmt),
               ks_arena_printf(arena, "%s = %s;%s", phase == 0 ? slot : acc_text,
                               phase == 0 ? acc_text : slot, k_unused));
  const ks_anode *body = w->in->ast->body;
  ks_rt_nodes all = ks_rt_collect(arena, body);
  for (size_t n = 0; n < all.len; n++) {
    const ks_anode *ret = all.items[n];
    if (ret->kind != KS_AK_RETURN)
      continue;
    bool gone = false;
    for (size_t m = 0; m < cut.len; m++)
      gone |= ks_rt_is_within(ret, cut.items[m]);
    if (!gone)
      ks_edits_add(arena, &e, ret->begin, ret->begin + 6, "continue");
  }
  unsigned first = body->begin + 1, last = body->end - 1;
  while (first < last && strchr(" \t\n\r", w->unit[first]))
    first++;
  while (last > first && strchr(" \t\n\r", w->unit[last - 1]))
    last--;
  ks_edits local = {0};
  for (size_t n = 0; n < e.len; n++)
    ks_edits_add(arena, &local, e.items[n].begin - first, e.items[n].end - first, e.items[n].text);
  const char *text = ks_arena_strndup(arena, w->unit + first, last - first);
  const char *edited = ks_edits_apply(ctx, arena, text, &local);
  if (!edited)
    return NULL;
  /* The lines the cuts emptied go too. */
  ks_buf b = KS_BUF_INIT;
  for (const char *l = edited; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    bool blank = true;
    for (size_t i = 0; i < len; i++)
      blank &= l[i] == ' ' || l[i] == '\t' || l[i] == '\r';
    if (!blank || len == 0) {
      if (b.len)
        ks_buf_adds(&b, "\n");
      ks_buf_addf(&b, "%.*s", (int)len, l);
    }
    l = nl ? nl + 1 : l + len;
  }
  const char *clean = ks_arena_strdup(arena, b.data ? b.data : "");
  ks_buf_release(&b);
  return clean;
}

/* One operand's tile load: element [a][b] of the tile is the operand at
 * (outer = tile origin + a, k = k0 + b), where outer is y or x. The warp
 * (threadIdx.x) runs along the operand's contiguous index. */
static void load(ks_buf *b, const ks_smem_rewrite *w, const ks_mm_plan *p, const char *I,
                 const char *tile, const ks_anode *op, const ks_anode *outer, const char *origin,
                 const ks_smem_bound *ob, bool along_k, bool outer_first, const char *elem) {
  ks_arena *arena = w->arena;
  const char *spread = ks_arena_printf(arena, "threadIdx.y + ks_l * %d", p->rows);
  /* Along threadIdx.x: the block's T / Rx columns of threads cover the
   * tile's T in Rx steps. */
  const char *lane = p->xregs > 1 ? ks_arena_printf(arena, "threadIdx.x + ks_m * %d", p->cols)
                                  : "threadIdx.x";
  const char *o_at = along_k ? spread : lane;
  const char *k_at = along_k ? lane : spread;
  const char *lane_sum = p->xregs > 1 ? ks_arena_printf(arena, "(%s)", lane) : lane;
  const char *o_sum = along_k ? ks_arena_printf(arena, "(%s)", spread) : lane_sum;
  const char *k_sum = along_k ? lane_sum : ks_arena_printf(arena, "(%s)", spread);
  const char *ot = ks_smem_unqualified(arena, outer->type ? outer->type : "int");
  const char *kt = ks_smem_unqualified(arena, p->k->type ? p->k->type : "int");
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_l = 0; ks_l < %d; ++ks_l) {\n", I, I, p->regs);
  if (p->xregs > 1) {
    I = ks_arena_printf(arena, "%s%s", I, w->indent);
    ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_m = 0; ks_m < %d; ++ks_m) {\n", I, I,
                p->xregs);
  }
  ks_buf_addf(b, "%s%sconst %s %s = %s + %s;\n", I, w->indent, ot, outer->name, origin, o_sum);
  ks_buf_addf(b, "%s%sconst %s %s = ks_k0 + %s;\n", I, w->indent, kt, p->k->name, k_sum);
  ks_buf_addf(b, "%s%s%s[%s][%s] = (%s %s %s && %s %s %s) ? %s : (%s)0;\n", I, w->indent, tile,
              outer_first ? o_at : k_at, outer_first ? k_at : o_at, outer->name,
              ob->inclusive ? "<=" : "<", ks_rt_paren(arena, ks_rt_text_of(arena, w->in, ob->bound)),
              p->k->name, p->kb.inclusive ? "<=" : "<",
              ks_rt_paren(arena, ks_rt_text_of(arena, w->in, p->kb.bound)),
              ks_rt_text_of(arena, w->in, op), elem);
  ks_buf_addf(b, "%s}\n", I);
  if (p->xregs > 1)
    ks_buf_addf(b, "%.*s}\n", (int)(strlen(I) - strlen(w->indent)), I);
}

/* The guards that the original launch (as the parent's policy `pol` has
 * it) covered both bounds: the new grid covers what the old one did,
 * rounded up to tiles, and the extra threads fall outside the bounds. */
const char *ks_mm_cover(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena,
                        const ks_mm_plan *p, const ks_rule_policy *pol, const char **cover_x,
                        const char **cover_y) {
  const char *gxb = ks_mm_guard_text(arena, p->xb.bound);
  const char *gyb = ks_mm_guard_text(arena, p->yb.bound);
  if (!gxb || !gyb) {
    /* As the compiler reads them: macros (function-like too), constants. */
    ks_meaning *m = ks_meaning_open(ctx, in->ast, arena);
    if (!gxb)
      gxb = ks_meaning_value(m, p->xb.bound, NULL);
    if (!gyb)
      gyb = ks_meaning_value(m, p->yb.bound, NULL);
    ks_meaning_close(m);
  }
  if (!gxb || !gyb)
    return "bounds its indices by expressions the launch policy cannot state";
  *cover_x = ks_arena_printf(arena, "%s * %s %s %s", ks_smem_operand(arena, pol->grid[0]),
                             ks_smem_operand(arena, pol->block[0]), p->xb.inclusive ? ">" : ">=",
                             ks_smem_operand(arena, gxb));
  *cover_y = ks_arena_printf(arena, "%s * %s %s %s", ks_smem_operand(arena, pol->grid[1]),
                             ks_smem_operand(arena, pol->block[1]), p->yb.inclusive ? ">" : ">=",
                             ks_smem_operand(arena, gyb));
  if (!ks_rt_guard_evaluates(in, *cover_x) || !ks_rt_guard_evaluates(in, *cover_y))
    return "its bounds are not expressions of the launch and the scalar parameters";
  return NULL;
}

/* ---- the fast choices: float4 loads, k-major tiles, register prefetch ---------- */

/* param = BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx (1281280888: a
 * 128 x 128 tile, k-tiles of 8, 8 x 8 outputs per thread, block 16 x 16).
 * Both operands float, both read as `outer * ld + inner` with a leading
 * dimension ld that is a multiple of 4 (a guard) and 16-byte aligned
 * pointers (a guard): each tile is loaded with float4 along the operand's
 * contiguous index (the tail of a row, past a bound, element by element)
 * and kept k-major in shared memory, S[buf][k][outer], so that the inner
 * loop reads a thread's R (and Rx) consecutive values with float4; an
 * operand contiguous along k (A in A * B) is stored transposed. The rows
 * are padded by 4 floats: still 16-byte aligned, and the transposed store
 * of a warp (16 rows, 2 float4 each with BK = 8) falls on 32 distinct
 * banks. Each thread's R rows are groups of 4 consecutive rows, BM / (R /
 * 4) apart (the same for columns): the float4 reads of a warp hit distinct
 * banks or broadcast. Two shared buffers and a register copy of the next
 * k-tile: the global loads of tile k + 1 are issued before the products of
 * tile k and stored after them, one barrier per k-tile. */
typedef struct fast_op {
  const char *smem, *regs;    /* "ks_sy" and "ks_gy" */
  const ks_anode *op, *outer; /* the read and its outer index (y or x) */
  const char *addr;           /* the read's address, as written: &A[row * K + k] */
  const char *elem;           /* the read as written */
  const ks_smem_bound *ob;
  const char *origin;         /* blockIdx.y * BM */
  int extent;                 /* BM or BN */
  bool along_k;               /* contiguous along k: stored transposed */
  int total, nv;              /* float4 per tile, per thread (rounded up) */
} fast_op;

/* index == outer * LD + inner (or LD * outer, either order of the
 * addends), LD invariant: consecutive inner values read consecutive
 * elements, and LD % 4 == 0 keeps a float4 of them aligned. Returns LD. */
const ks_anode *ks_mm_row_major(ks_arena *arena, const ks_anode *idx, const ks_anode *inner,
                                 const ks_anode *outer) {
  ks_rt_nodes parts = {0};
  addends(arena, idx, &parts);
  if (parts.len != 2)
    return NULL;
  for (size_t n = 0; n < 2; n++) {
    const ks_anode *a = parts.items[n], *m = parts.items[1 - n];
    if (a->kind != KS_AK_DECL_REF || a->decl != inner)
      continue;
    if (!ks_rt_is_bin(m, "*") || m->nkids != 2)
      return NULL;
    for (size_t f = 0; f < 2; f++) {
      const ks_anode *v = ks_anode_strip(m->kids[f], true), *ld = m->kids[1 - f];
      if (v && v->kind == KS_AK_DECL_REF && v->decl == outer && !mentions(ld, inner) &&
          !mentions(ld, outer) && invariant(ld))
        return ld;
    }
  }
  return NULL;
}

/* The address an operand read reads: &p[i] for p[i] and *(p + i), the
 * argument of __ldg. */
static const char *read_address(ks_arena *arena, const ks_rule_input *in, const ks_anode *r) {
  if (r->kind == KS_AK_CALL)
    return ks_rt_text_of(arena, in, r->kids[r->nkids - 1]);
  return ks_arena_printf(arena, "&%s", ks_rt_text_of(arena, in, r));
}

/* float, or a name the unit declares `typedef float NAME;` (PolyBench's
 * DATA_TYPE; the child then asserts that it is 4 bytes wide). */
static bool float_type(ks_arena *arena, const ks_rule_input *in, const char *t, bool *named) {
  if (!strcmp(t, "float"))
    return true;
  for (const char *c = t; *c; c++)
    if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9')))
      return false;
  if (in->unit && *t && strstr(in->unit, ks_arena_printf(arena, "typedef float %s;", t))) {
    *named = true;
    return true;
  }
  return false;
}

/* One operand's float4 loads of the k-tile at k0 into its registers. */
static void fast_load(ks_buf *b, const ks_smem_rewrite *w, const ks_mm_plan *p, const fast_op *f,
                      const char *I, const char *k0, int threads, int bk, const char *et) {
  ks_arena *arena = w->arena;
  const char *ind = w->indent;
  const char *J = ks_arena_printf(arena, "%s%s", I, ind), *J2 = ks_arena_printf(arena, "%s%s", J, ind);
  const char *J3 = ks_arena_printf(arena, "%s%s", J2, ind);
  const char *ot = ks_smem_unqualified(arena, f->outer->type ? f->outer->type : "int");
  const char *kt = ks_smem_unqualified(arena, p->k->type ? p->k->type : "int");
  const char *on = f->outer->name, *kn = p->k->name;
  const char *ob = ks_rt_paren(arena, ks_rt_text_of(arena, w->in, f->ob->bound));
  const char *kb = ks_rt_paren(arena, ks_rt_text_of(arena, w->in, p->kb.bound));
  const char *oop = f->ob->inclusive ? "<=" : "<", *kop = p->kb.inclusive ? "<=" : "<";
  int per = f->along_k ? bk / 4 : f->extent / 4; /* float4 along the contiguous index */
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_l = 0; ks_l < %d; ++ks_l) {\n", I, I, f->nv);
  ks_buf_addf(b, "%sconst int ks_v = ks_tid + ks_l * %d;\n", J, threads);
  if (f->nv * threads != f->total)
    ks_buf_addf(b, "%sif (ks_v >= %d)\n%s%scontinue;\n", J, f->total, J, ind);
  if (f->along_k) {
    ks_buf_addf(b, "%sconst %s %s = %s + ks_v / %d;\n", J, ot, on, f->origin, per);
    ks_buf_addf(b, "%sconst %s ks_q = %s + ks_v %% %d * 4;\n", J, kt, k0, per);
    ks_buf_addf(b, "%sif (%s %s %s && ks_q + 3 %s %s) {\n", J, on, oop, ob, kop, kb);
    ks_buf_addf(b, "%sconst %s %s = ks_q;\n", J2, kt, kn);
  } else {
    ks_buf_addf(b, "%sconst %s %s = %s + ks_v / %d;\n", J, kt, kn, k0, per);
    ks_buf_addf(b, "%sconst %s ks_q = %s + ks_v %% %d * 4;\n", J, ot, f->origin, per);
    ks_buf_addf(b, "%sif (ks_q + 3 %s %s && %s %s %s) {\n", J, oop, ob, kn, kop, kb);
    ks_buf_addf(b, "%sconst %s %s = ks_q;\n", J2, ot, on);
  }
  ks_buf_addf(b, "%s%s[ks_l] = *(const float4 *)%s;\n", J2, f->regs, f->addr);
  ks_buf_addf(b, "%s} else { /* a row's tail past a bound: element by element, zero outside */\n", J);
  ks_buf_addf(b, "%s%s ks_e[4];\n", J2, et);
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_j = 0; ks_j < 4; ++ks_j) {\n", J2, J2);
  ks_buf_addf(b, "%sconst %s %s = ks_q + ks_j;\n", J3, f->along_k ? kt : ot, f->along_k ? kn : on);
  ks_buf_addf(b, "%sks_e[ks_j] = (%s %s %s && %s %s %s) ? %s : (%s)0;\n", J3, on, oop, ob, kn, kop,
              kb, f->elem, et);
  ks_buf_addf(b, "%s}\n", J2);
  ks_buf_addf(b, "%s%s[ks_l] = make_float4(ks_e[0], ks_e[1], ks_e[2], ks_e[3]);\n", J2, f->regs);
  ks_buf_addf(b, "%s}\n%s}\n", J, I);
}

/* The registers into shared buffer `buf`, k-major. */
static void fast_store(ks_buf *b, const ks_smem_rewrite *w, const fast_op *f, const char *I,
                       const char *buf, int threads, int bk) {
  const char *J = ks_arena_printf(w->arena, "%s%s", I, w->indent);
  int per = f->along_k ? bk / 4 : f->extent / 4;
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_l = 0; ks_l < %d; ++ks_l) {\n", I, I, f->nv);
  ks_buf_addf(b, "%sconst int ks_v = ks_tid + ks_l * %d;\n", J, threads);
  if (f->nv * threads != f->total)
    ks_buf_addf(b, "%sif (ks_v >= %d)\n%s%scontinue;\n", J, f->total, J, w->indent);
  if (f->along_k) {
    static const char lane[] = "xyzw";
    for (int i = 0; i < 4; i++)
      ks_buf_addf(b, "%s%s[%s][ks_v %% %d * 4 + %d][ks_v / %d] = %s[ks_l].%c;\n", J, f->smem, buf,
                  per, i, per, f->regs, lane[i]);
  } else {
    ks_buf_addf(b, "%s*(float4 *)&%s[%s][ks_v / %d][ks_v %% %d * 4] = %s[ks_l];\n", J, f->smem, buf,
                per, per, f->regs);
  }
  ks_buf_addf(b, "%s}\n", I);
}

/* A thread's n values of one operand at k-row ks_kk: groups of 4 with float4. */
static void fast_fragment(ks_buf *b, const ks_smem_rewrite *w, const char *I, const char *smem,
                          const char *regs, const char *tid, int n, int step) {
  const char *J = ks_arena_printf(w->arena, "%s%s", I, w->indent);
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_g = 0; ks_g < %d; ++ks_g) {\n", I, I, n / 4);
  ks_buf_addf(b, "%sconst float4 ks_t = *(const float4 *)&%s[ks_buf][ks_kk][%s * 4 + ks_g * %d];\n",
              J, smem, tid, step);
  ks_buf_addf(b, "%s%s[ks_g * 4] = ks_t.x;\n%s%s[ks_g * 4 + 1] = ks_t.y;\n", J, regs, J, regs);
  ks_buf_addf(b, "%s%s[ks_g * 4 + 2] = ks_t.z;\n%s%s[ks_g * 4 + 3] = ks_t.w;\n", J, regs, J, regs);
  ks_buf_addf(b, "%s}\n", I);
}

/* The leading dimension's guard: "" for a constant multiple of 4, NULL
 * and *why when it cannot be stated or is a constant that is not one. */
static const char *ld_guard(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena,
                            const ks_anode *ld, const char *what, const char **why) {
  const char *g = ks_mm_guard_text(arena, ld);
  if (!g) {
    ks_meaning *m = ks_meaning_open(ctx, in->ast, arena);
    g = ks_meaning_value(m, ld, NULL);
    ks_meaning_close(m);
  }
  if (!g) {
    *why = ks_arena_printf(arena, "the leading dimension of %s is not an expression the guards can state", what);
    return NULL;
  }
  char *end;
  long long v = strtoll(g, &end, 10);
  if (*g && !*end) { /* a constant: decided here */
    if (v % 4 == 0)
      return "";
    *why = ks_arena_printf(arena, "the leading dimension of %s (%lld) is not a multiple of 4, so "
                                  "its rows cannot be read with float4", what, v);
    return NULL;
  }
  return ks_arena_printf(arena, "%s %% 4 == 0", ks_smem_operand(arena, g));
}

int ks_mm_write_child(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena, unsigned vo,
                      const char *header, const char *body, ks_rule_policy *pol, int bm, int bn,
                      int block_x, int block_y, const char *cover_x, const char *cover_y,
                      ks_rule_result *out) {
  const ks_anode *fn_body = in->ast->body;
  ks_edits e = {0};
  if (header)
    ks_edits_add(arena, &e, 0, 0, header);
  ks_edits_add(arena, &e, fn_body->begin + 1 - vo, fn_body->end - 1 - vo, body);
  ks_rule_child_init(arena, in, &out->child);
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  const char *gy = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", ks_smem_operand(arena, pol->grid[1]),
                                   ks_smem_operand(arena, pol->block[1]), bm);
  pol->grid[0] = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", ks_smem_operand(arena, pol->grid[0]),
                                 ks_smem_operand(arena, pol->block[0]), bn);
  pol->grid[1] = gy;
  pol->grid[2] = "1";
  pol->block[0] = ks_arena_printf(arena, "%d", block_x);
  pol->block[1] = ks_arena_printf(arena, "%d", block_y);
  pol->block[2] = "1";
  ks_rule_policy_write(arena, pol, &out->child);
  ks_rule_require(arena, &out->child, cover_x);
  ks_rule_require(arena, &out->child, cover_y);
  ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s <= 65535", gy));
  out->applied = true;
  return 0;
}

static int fast_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                      ks_rule_result *out) {
  int bm = param / 10000000, bn = param / 10000 % 1000, bk = param / 100 % 100;
  int ry = param / 10 % 10, rx = param % 10;
  if ((bm != 64 && bm != 128) || (bn != 64 && bn != 128) || (bk != 8 && bk != 16) ||
      (ry != 4 && ry != 8) || (rx != 4 && rx != 8) || (bm / ry) * (bn / rx) < 64 ||
      (bm / ry) * (bn / rx) > 1024)
    return ks_smem_no(out, arena,
                      "parameter %d is not BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx (BM and "
                      "BN 64 or 128, BK 8 or 16, R and Rx 4 or 8, at least 64 threads)",
                      param);
  int rows = bm / ry, cols = bn / rx, threads = rows * cols;
  ks_mm_plan p = {.tile = bm, .regs = ry, .rows = rows, .xregs = rx, .cols = cols};
  ks_smem_rewrite w;
  ks_smem_facts f;
  const char *why = ks_mm_read(in, arena, &w, &f, &p);
  if (why)
    return ks_smem_no(out, arena, "%s", why);
  const char *ey = ks_smem_unqualified(arena, p.py->pointee);
  const char *ex = ks_smem_unqualified(arena, p.px->pointee);
  bool named_y = false, named_x = false;
  if (!float_type(arena, in, ey, &named_y) || !float_type(arena, in, ex, &named_x))
    return ks_smem_no(out, arena, "its operands are not float (%s, %s): the float4 loads need float",
                      ey, ex);
  const char *acc_type;
  const ks_anode *aref, *aidx;
  if (p.acc_var) {
    acc_type = ks_smem_unqualified(arena, p.acc_var->type ? p.acc_var->type : "");
  } else {
    const ks_anode *ap = ks_smem_param_access(p.acc, &aref, &aidx);
    acc_type = ks_smem_unqualified(arena, ap->pointee ? ap->pointee : "");
  }
  if (!*acc_type || strchr(acc_type, '&'))
    return ks_smem_no(out, arena, "the accumulator's type is unknown");

  /* Both operands `outer * ld + inner`, inner their contiguous index. */
  fast_op fy = {"ks_sy", "ks_gy", p.opy, p.y, NULL, NULL, &p.yb, NULL, bm, false, bm * bk / 4, 0};
  fast_op fx = {"ks_sx", "ks_gx", p.opx, p.x, NULL, NULL, &p.xb, NULL, bn, false, bn * bk / 4, 0};
  const char *guards[4];
  size_t nguards = 0;
  fast_op *ops[2] = {&fy, &fx};
  for (int n = 0; n < 2; n++) {
    fast_op *o = ops[n];
    const ks_anode *ref, *idx, *ld;
    const ks_anode *param_decl = ks_mm_read_access(o->op, &ref, &idx);
    const char *what = ks_arena_printf(arena, "'%s'", param_decl->name ? param_decl->name : "?");
    if ((ld = ks_mm_row_major(arena, idx, p.k, o->outer)))
      o->along_k = true;
    else if (!(ld = ks_mm_row_major(arena, idx, o->outer, p.k)))
      return ks_smem_no(out, arena,
                        "reads %s other than at `%s * ld + %s` or `%s * ld + %s`, so its tiles "
                        "cannot be loaded with float4",
                        what, o->outer->name, p.k->name, p.k->name, o->outer->name);
    const char *g = ld_guard(ctx, in, arena, ld, what, &why);
    if (!g)
      return ks_smem_no(out, arena, "%s", why);
    guards[nguards++] = g;
    guards[nguards++] = ks_arena_printf(arena, "aligned(%s, 16)", param_decl->name);
    o->addr = read_address(arena, in, o->op);
    o->elem = ks_rt_text_of(arena, in, o->op);
    o->nv = (o->total + threads - 1) / threads;
  }
  fy.origin = ks_arena_printf(arena, "blockIdx.y * %d", bm);
  fx.origin = ks_arena_printf(arena, "blockIdx.x * %d", bn);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return ks_smem_no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  const char *cover_x, *cover_y;
  if ((why = ks_mm_cover(ctx, in, arena, &p, &pol, &cover_x, &cover_y)))
    return ks_smem_no(out, arena, "%s", why);
  for (size_t n = 0; n < nguards; n += 2) /* the leading dimensions; aligned() is the judge's */
    if (*guards[n] && !ks_rt_guard_evaluates(in, guards[n]))
      return ks_smem_no(out, arena, "its guard '%s' is not an expression of the scalar parameters",
                        guards[n]);
  unsigned long long smem = 2ull * bk * ((bm + 4) + (bn + 4)) * 4;
  if (smem > in->max_smem_per_block || smem > 48 * 1024)
    return ks_smem_no(out, arena, "its %dx%d and %dx%d double-buffered tiles do not fit in shared memory",
                      bk, bm, bk, bn);

  /* The text. */
  const char *I = w.indent, *I2 = ks_arena_printf(arena, "%s%s", I, I);
  const char *I3 = ks_arena_printf(arena, "%s%s", I2, I);
  const char *I4 = ks_arena_printf(arena, "%s%s", I3, I);
  const char *ty_r = ry == 4 ? "(threadIdx.y * 4 + ks_r)"
                             : ks_arena_printf(arena, "(threadIdx.y * 4 + ks_r / 4 * %d + ks_r %% 4)",
                                               rows * 4);
  const char *tx_c = rx == 4 ? "(threadIdx.x * 4 + ks_c)"
                             : ks_arena_printf(arena, "(threadIdx.x * 4 + ks_c / 4 * %d + ks_c %% 4)",
                                               cols * 4);
  const char *slot = "ks_acc[ks_r][ks_c]";
  const char *acc_text = ks_rt_text_of(arena, in, p.acc);
  const char *Ty = ks_arena_printf(arena, "%d", bm), *Tx = ks_arena_printf(arena, "%d", bn);
  const char *pro = ks_mm_replay(ctx, &w, &p, 0, Ty, Tx, ty_r, tx_c, acc_text, slot);
  const char *epi = ks_mm_replay(ctx, &w, &p, 1, Ty, Tx, ty_r, tx_c, acc_text, slot);
  if (!pro || !epi)
    return -1;
  const char *kt = ks_smem_unqualified(arena, p.k->type ? p.k->type : "int");
  const char *kbound = ks_rt_paren(arena, ks_rt_text_of(arena, in, p.kb.bound));
  const char *kop = p.kb.inclusive ? "<=" : "<";
  upd_render ur = {&p, slot, "ks_a[ks_r]", "ks_b[ks_c]"};
  const char *upd = ks_rt_render_str(arena, w.unit, p.upd, replace_upd, &ur);

  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "\n%s/* tile_matmul: %dx%d tiles, k-tiles of %d, %dx%d outputs per thread (y by x); "
                  "float4 loads, k-major shared tiles (%s), the next k-tile prefetched into "
                  "registers. Each output sums k = 0..K-1 in the original order. */\n",
              I, bm, bn, bk, ry, rx,
              fy.along_k && fx.along_k ? "both operands transposed"
              : fy.along_k             ? "the row operand transposed"
              : fx.along_k             ? "the column operand transposed"
                                       : "neither transposed");
  if (named_y)
    ks_buf_addf(&b, "%sstatic_assert(sizeof(%s) == 4, \"tile_matmul reads %s with float4\");\n", I, ey, ey);
  if (named_x && strcmp(ex, ey))
    ks_buf_addf(&b, "%sstatic_assert(sizeof(%s) == 4, \"tile_matmul reads %s with float4\");\n", I, ex, ex);
  ks_buf_addf(&b, "%s__shared__ __align__(16) %s ks_sy[2][%d][%d + 4];\n", I, ey, bk, bm);
  ks_buf_addf(&b, "%s__shared__ __align__(16) %s ks_sx[2][%d][%d + 4];\n", I, ex, bk, bn);
  const char *open_rc = ks_arena_printf(arena,
                                        "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r)\n"
                                        "%s#pragma unroll\n%sfor (int ks_c = 0; ks_c < %d; ++ks_c) {\n",
                                        I, I, ry, I, I, rx);
  ks_buf_addf(&b, "%s%s ks_acc[%d][%d];\n", I, acc_type, ry, rx);
  ks_buf_adds(&b, open_rc);
  ks_buf_addf(&b, "%s%s = (%s)0;\n", I2, slot, acc_type);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, ks_rt_indent_more(arena, pro, I), I);
  ks_buf_addf(&b, "%sconst int ks_tid = threadIdx.y * %d + threadIdx.x;\n", I, cols);
  ks_buf_addf(&b, "%sfloat4 ks_gy[%d], ks_gx[%d];\n", I, fy.nv, fx.nv);
  fast_load(&b, &w, &p, &fy, I, "0", threads, bk, ey);
  fast_load(&b, &w, &p, &fx, I, "0", threads, bk, ex);
  fast_store(&b, &w, &fy, I, "0", threads, bk);
  fast_store(&b, &w, &fx, I, "0", threads, bk);
  ks_buf_addf(&b, "%s__syncthreads();\n", I);
  ks_buf_addf(&b, "%sint ks_buf = 0;\n", I);
  ks_buf_addf(&b, "%sfor (%s ks_k0 = 0; ks_k0 %s %s; ks_k0 += %d) {\n", I, kt, kop, kbound, bk);
  ks_buf_addf(&b, "%sconst bool ks_next = ks_k0 + %d %s %s;\n", I2, bk, kop, kbound);
  ks_buf_addf(&b, "%sif (ks_next) { /* the next k-tile's loads, in flight during the products */\n", I2);
  const char *k_next = ks_arena_printf(arena, "ks_k0 + %d", bk);
  fast_load(&b, &w, &p, &fy, I3, k_next, threads, bk, ey);
  fast_load(&b, &w, &p, &fx, I3, k_next, threads, bk, ex);
  ks_buf_addf(&b, "%s}\n", I2);
  ks_buf b_in = KS_BUF_INIT;
  ks_buf_addf(&b_in, "%s%s ks_a[%d];\n%s%s ks_b[%d];\n", I4, ey, ry, I4, ex, rx);
  fast_fragment(&b_in, &w, I4, "ks_sy", "ks_a", "threadIdx.y", ry, rows * 4);
  fast_fragment(&b_in, &w, I4, "ks_sx", "ks_b", "threadIdx.x", rx, cols * 4);
  ks_buf_addf(&b_in,
              "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r)\n"
              "%s%s#pragma unroll\n%s%sfor (int ks_c = 0; ks_c < %d; ++ks_c)\n%s%s%s%s;\n",
              I4, I4, ry, I4, I, I4, I, rx, I4, I, I, upd);
  const char *inner = ks_arena_strdup(arena, b_in.data);
  ks_buf_release(&b_in);
  ks_buf_addf(&b, "%sif (ks_k0 + %d %s %s) {\n", I2, bk - 1, kop, kbound);
  ks_buf_addf(&b, "%s#pragma unroll\n%sfor (int ks_kk = 0; ks_kk < %d; ++ks_kk) {\n%s%s}\n", I3, I3,
              bk, inner, I3);
  ks_buf_addf(&b, "%s} else { /* the last k-tile stops at K */\n", I2);
  ks_buf_addf(&b, "%sfor (int ks_kk = 0; ks_k0 + ks_kk %s %s; ++ks_kk) {\n%s%s}\n", I3, kop, kbound,
              inner, I3);
  ks_buf_addf(&b, "%s}\n", I2);
  ks_buf_addf(&b, "%sif (ks_next) { /* into the other buffer, which no thread reads now */\n", I2);
  fast_store(&b, &w, &fy, I3, "ks_buf ^ 1", threads, bk);
  fast_store(&b, &w, &fx, I3, "ks_buf ^ 1", threads, bk);
  ks_buf_addf(&b, "%s}\n", I2);
  ks_buf_addf(&b, "%s__syncthreads();\n", I2);
  ks_buf_addf(&b, "%sks_buf ^= 1;\n", I2);
  ks_buf_addf(&b, "%s}\n", I);
  ks_buf_adds(&b, open_rc);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, ks_rt_indent_more(arena, epi, I), I);
  const char *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);

  if (ks_mm_write_child(ctx, in, arena, w.vo, NULL, text, &pol, bm, bn, cols, rows, cover_x, cover_y,
                        out))
    return -1;
  for (size_t n = 0; n < nguards; n++)
    if (*guards[n])
      ks_rule_require(arena, &out->child, guards[n]);
  out->applied = true;
  out->technique = ks_arena_printf(arena, "tile_mm=%dx%dk%dr%dx%dv4", bm, bn, bk, ry, rx);
  return 0;
}

static int tile_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                      ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param >= 100000000)
    return fast_apply(ctx, in, param, arena, out);
  ks_mm_plan p = {.tile = param >= 10000 ? param / 10000 : param >= 100 ? param / 100 : param,
               .regs = param >= 10000 ? param / 100 % 100 : param >= 100 ? param % 100 : 1,
               .xregs = param >= 10000 ? param % 100 : 1};
  if ((p.tile != 16 && p.tile != 32 && p.tile != 64) || p.regs < 1 || p.tile % p.regs ||
      p.tile / p.regs < 2 || p.xregs < 1 || p.tile % p.xregs || p.tile / p.xregs < 2 ||
      (p.tile == 64 && p.xregs == 1) || (p.tile / p.regs) * (p.tile / p.xregs) > 1024)
    return ks_smem_no(out, arena,
                      "parameter %d is not a tile T (16, 32), T * 100 + R or T * 10000 + R * 100 + "
                      "Rx (T 16, 32 or 64, R and Rx dividing T, at most 1024 threads; 64 only "
                      "with Rx > 1)",
                      param);
  p.rows = p.tile / p.regs;
  p.cols = p.tile / p.xregs;
  ks_smem_rewrite w;
  ks_smem_facts f;
  const char *why = ks_mm_read(in, arena, &w, &f, &p);
  if (why)
    return ks_smem_no(out, arena, "%s", why);
  const char *ey = ks_smem_unqualified(arena, p.py->pointee);
  const char *ex = ks_smem_unqualified(arena, p.px->pointee);
  const char *acc_type;
  const ks_anode *aref, *aidx;
  if (p.acc_var)
    acc_type = ks_smem_unqualified(arena, p.acc_var->type ? p.acc_var->type : "");
  else
    acc_type = ks_smem_unqualified(arena, ks_smem_param_access(p.acc, &aref, &aidx)->pointee
                                              ? ks_smem_param_access(p.acc, &aref, &aidx)->pointee
                                              : "");
  if (!*acc_type || strchr(acc_type, '&'))
    return ks_smem_no(out, arena, "the accumulator's type is unknown");

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return ks_smem_no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  const char *cover_x, *cover_y;
  if ((why = ks_mm_cover(ctx, in, arena, &p, &pol, &cover_x, &cover_y)))
    return ks_smem_no(out, arena, "%s", why);
  /* Element sizes: 4 bytes for float and the 32-bit integers, else taken
   * as 8 (double; a wider type only refuses sooner). */
  unsigned long long esz = 8;
  if (!strcmp(ey, "float") && !strcmp(ex, "float"))
    esz = 4;
  unsigned long long tiles = 2ull * p.tile * (p.tile + 1) * esz;
  if (tiles > in->max_smem_per_block || tiles > 48 * 1024) /* static __shared__ stops at 48 KB */
    return ks_smem_no(out, arena, "two %dx%d tiles do not fit in shared memory", p.tile, p.tile);

  /* The text. */
  const char *I = w.indent, *I2 = ks_arena_printf(arena, "%s%s", I, I);
  const char *I3 = ks_arena_printf(arena, "%s%s", I2, I);
  const char *T = ks_arena_printf(arena, "%d", p.tile);
  const char *ty_r = ks_arena_printf(arena, "(threadIdx.y + ks_r * %d)", p.rows);
  bool xt = p.xregs > 1;
  const char *tx_c = xt ? ks_arena_printf(arena, "(threadIdx.x + ks_c * %d)", p.cols) : NULL;
  const char *slot = xt ? "ks_acc[ks_r][ks_c]" : "ks_acc[ks_r]";
  const char *acc_text = ks_rt_text_of(arena, in, p.acc);
  const char *pro = ks_mm_replay(ctx, &w, &p, 0, T, T, ty_r, tx_c, acc_text, slot);
  const char *epi = ks_mm_replay(ctx, &w, &p, 1, T, T, ty_r, tx_c, acc_text, slot);
  if (!pro || !epi)
    return -1;
  const char *kt = ks_smem_unqualified(arena, p.k->type ? p.k->type : "int");
  const char *kbound = ks_rt_paren(arena, ks_rt_text_of(arena, in, p.kb.bound));
  const char *kop = p.kb.inclusive ? "<=" : "<";
  upd_render ur = {&p, slot,
                   ks_arena_printf(arena, "ks_ty[threadIdx.y + ks_r * %d][ks_kk]", p.rows),
                   xt ? ks_arena_printf(arena, "ks_tx[ks_kk][threadIdx.x + ks_c * %d]", p.cols)
                      : "ks_tx[ks_kk][threadIdx.x]"};
  const char *upd = ks_rt_render_str(arena, w.unit, p.upd, replace_upd, &ur);
  const char *origin_y = ks_arena_printf(arena, "blockIdx.y * %d", p.tile);
  const char *origin_x = ks_arena_printf(arena, "blockIdx.x * %d", p.tile);

  ks_buf b = KS_BUF_INIT;
  if (xt)
    ks_buf_addf(&b, "\n%s/* tile_matmul: %dx%d tiles, %dx%d outputs per thread (y by x). Each "
                    "output sums k = 0..K-1 in the original order. */\n",
                I, p.tile, p.tile, p.regs, p.xregs);
  else
    ks_buf_addf(&b, "\n%s/* tile_matmul: %dx%d tiles, %d outputs per thread along y. Each output "
                    "sums k = 0..K-1 in the original order. */\n",
                I, p.tile, p.tile, p.regs);
  ks_buf_addf(&b, "%s__shared__ %s ks_ty[%d][%d + 1];\n", I, ey, p.tile, p.tile);
  ks_buf_addf(&b, "%s__shared__ %s ks_tx[%d][%d + 1];\n", I, ex, p.tile, p.tile);
  /* Each output's loops: over r, and over c when tiled along x. */
  const char *open_rc =
      xt ? ks_arena_printf(arena,
                           "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r)\n"
                           "%s#pragma unroll\n%sfor (int ks_c = 0; ks_c < %d; ++ks_c) {\n",
                           I, I, p.regs, I, I, p.xregs)
         : ks_arena_printf(arena, "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r) {\n",
                           I, I, p.regs);
  if (xt)
    ks_buf_addf(&b, "%s%s ks_acc[%d][%d];\n", I, acc_type, p.regs, p.xregs);
  else
    ks_buf_addf(&b, "%s%s ks_acc[%d];\n", I, acc_type, p.regs);
  ks_buf_adds(&b, open_rc);
  ks_buf_addf(&b, "%s%s = (%s)0;\n", I2, slot, acc_type);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, ks_rt_indent_more(arena, pro, I), I);
  ks_buf_addf(&b, "%sfor (%s ks_k0 = 0; ks_k0 %s %s; ks_k0 += %d) {\n", I, kt, kop, kbound, p.tile);
  load(&b, &w, &p, I2, "ks_ty", p.opy, p.y, origin_y, &p.yb, p.y_along_k, true, ey);
  load(&b, &w, &p, I2, "ks_tx", p.opx, p.x, origin_x, &p.xb, p.x_along_k, false, ex);
  ks_buf_addf(&b, "%s__syncthreads();\n", I2);
  const char *I4 = ks_arena_printf(arena, "%s%s", I3, I);
  const char *inner =
      xt ? ks_arena_printf(arena,
                           "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r)\n"
                           "%s%s#pragma unroll\n%s%sfor (int ks_c = 0; ks_c < %d; ++ks_c)\n"
                           "%s%s%s%s;\n",
                           I4, I4, p.regs, I4, I, I4, I, p.xregs, I4, I, I, upd)
         : ks_arena_printf(arena, "%s#pragma unroll\n%sfor (int ks_r = 0; ks_r < %d; ++ks_r)\n%s%s%s;\n",
                           I4, I4, p.regs, I4, I, upd);
  ks_buf_addf(&b, "%sif (ks_k0 + %d %s %s) {\n", I2, p.tile - 1, kop, kbound);
  ks_buf_addf(&b, "%s#pragma unroll\n%sfor (int ks_kk = 0; ks_kk < %d; ++ks_kk) {\n%s%s}\n", I3, I3,
              p.tile, inner, I3);
  ks_buf_addf(&b, "%s} else {\n", I2);
  ks_buf_addf(&b, "%sfor (int ks_kk = 0; ks_k0 + ks_kk %s %s; ++ks_kk) {\n%s%s}\n", I3, kop, kbound,
              inner, I3);
  ks_buf_addf(&b, "%s}\n", I2);
  ks_buf_addf(&b, "%s__syncthreads();\n", I2);
  ks_buf_addf(&b, "%s}\n", I);
  ks_buf_adds(&b, open_rc);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, ks_rt_indent_more(arena, epi, I), I);
  const char *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);

  if (ks_mm_write_child(ctx, in, arena, w.vo, NULL, text, &pol, p.tile, p.tile, p.cols, p.rows,
                        cover_x, cover_y, out))
    return -1;
  out->technique = xt ? ks_arena_printf(arena, "tile_mm=%dx%dr%dx%d", p.tile, p.tile, p.regs, p.xregs)
                      : ks_arena_printf(arena, "tile_mm=%dx%dr%d", p.tile, p.tile, p.regs);
  return 0;
}

/* T alone (R = 1), T * 100 + R, or T * 10000 + R * 100 + Rx; then the
 * float4 choices, BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx. Each
 * family comes after the earlier ones, so that the draws of the earlier
 * choices stay as they were. */
static const int tile_choices[] = {3204,   1602,   32,     3202,       16,         1604,
                                   3208,   640404, 640804, 320404,     640808,     1281280888,
                                   1280640884, 1281281688, 640640844};

const ks_rule ks_rule_tile_matmul = {
    "tile_matmul",
    "one thread per output of a matrix product: shared-memory k-tiles of both operands, "
    "R (or R x Rx) outputs per thread in registers (param: tile * 100 + R, tile * 10000 + "
    "R * 100 + Rx, or the tile alone; float4 loads, transposed k-major tiles and register "
    "prefetch: BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx)",
    false,
    tile_choices,
    sizeof tile_choices / sizeof *tile_choices,
    tile_apply,
};
