/* rules_launch: the rules that change how a kernel is launched rather than
 * what a thread computes: the block size (`block`), a grid-stride loop over
 * a capped grid (`grid_stride`) and __launch_bounds__ (`launch_bounds`).
 * docs/rules.md says when each applies and why. */
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_int.h"
#include "rules_meaning.h"
#include "rules_tree.h"

/* ---- reading the tree ----------------------------------------------------- */

static const ks_anode *strip(const ks_anode *n) {
  return n ? ks_anode_strip(n, true) : NULL;
}

static bool is_builtin(const ks_anode *n, const char *builtin, char which) {
  n = strip(n);
  return n && ks_anode_is_builtin(n, builtin, which);
}

/* The initializer of a VAR, or NULL (the tree gives a VAR its initializer
 * as its only child, and nothing else). */
static const ks_anode *var_init(const ks_kast *k, const ks_anode *var) {
  (void)k;
  return var && var->kind == KS_AK_VAR && var->nkids == 1 ? var->kids[0] : NULL;
}

/* BUILTIN.w, or a local initialized with it and never assigned ("int tid =
 * threadIdx.x", Rodinia's "int bx = blockIdx.x"). */
static bool is_coordinate(const ks_kast *k, const ks_anode *n, const char *builtin, char w) {
  n = strip(n);
  if (!n)
    return false;
  if (ks_anode_is_builtin(n, builtin, w))
    return true;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR && !n->decl->shared_space)
    return is_builtin(var_init(k, n->decl), builtin, w) && !ks_rt_modified(k->body, n->decl);
  return false;
}

static bool is_thread_index(const ks_kast *k, const ks_anode *n, char w) {
  return is_coordinate(k, n, "threadIdx", w);
}

/* blockIdx.w * X + threadIdx.w, in any order, with casts and the
 * coordinates through locals (is_coordinate). *constant is NULL when X is
 * blockDim.w, else X (a block size written as a number or a macro, which a
 * rule must fold and check against the launch). */
static bool global_index(const ks_kast *k, const ks_anode *n, char w, const ks_anode **constant) {
  n = strip(n);
  *constant = NULL;
  if (!n || n->kind != KS_AK_BINARY || strcmp(n->op, "+") || n->nkids != 2)
    return false;
  for (int side = 0; side < 2; side++) {
    const ks_anode *mul = strip(n->kids[side]);
    if (!is_thread_index(k, n->kids[1 - side], w) || !mul || mul->kind != KS_AK_BINARY ||
        strcmp(mul->op, "*") || mul->nkids != 2)
      continue;
    for (int m = 0; m < 2; m++) {
      if (!is_coordinate(k, mul->kids[m], "blockIdx", w))
        continue;
      if (!is_builtin(mul->kids[1 - m], "blockDim", w))
        *constant = mul->kids[1 - m];
      return true;
    }
  }
  return false;
}

static const char *node_text(ks_arena *arena, const ks_kast *k, const ks_anode *n) {
  return ks_anode_text(arena, k, n);
}

static bool has_prefix(const char *s, const char *prefix) {
  return s && !strncmp(s, prefix, strlen(prefix));
}

/* What a kernel does with its thread coordinates and block-level state. */
typedef struct thread_scan {
  const ks_kast *k;
  const ks_anode *index[3];       /* the first global index per dimension */
  unsigned nindex[3];             /* how many there are */
  const ks_anode *constant[3][8]; /* X in blockIdx.w * X + threadIdx.w, X not
                                     blockDim.w (global_index) */
  unsigned nconstant[3];
  const ks_anode *stray_block_idx[3];  /* blockIdx.w outside a global index */
  const ks_anode *thread_use[3][16];   /* threadIdx.w likewise (or its variable):
                                          the first 16 uses */
  unsigned nthread_use[3];             /* and how many there are */
  const ks_anode *stray_other;    /* blockDim or gridDim outside one */
  const char *sync;               /* a __syncthreads-like call */
  const char *warp;               /* a warp-level intrinsic */
  const ks_anode *shared;         /* a __shared__ variable */
  const ks_anode *leader;         /* threadIdx.w == c: one thread per block */
} thread_scan;

static void note_thread_use(thread_scan *s, int d, const ks_anode *n) {
  if (s->nthread_use[d] < 16)
    s->thread_use[d][s->nthread_use[d]] = n;
  s->nthread_use[d]++;
}

static bool scan_visit(ks_anode *n, void *arg) {
  thread_scan *s = arg;
  static const char dims[] = "xyz";
  for (int d = 0; d < 3; d++) {
    const ks_anode *c = NULL;
    if (global_index(s->k, n, dims[d], &c)) {
      if (!s->index[d])
        s->index[d] = n;
      s->nindex[d]++;
      if (c && s->nconstant[d] < 8)
        s->constant[d][s->nconstant[d]] = c;
      s->nconstant[d] += c != NULL;
      return false;
    }
  }
  switch (n->kind) {
  case KS_AK_BINARY:
    if (!s->leader && n->nkids == 2 && n->op && (!strcmp(n->op, "==") || !strcmp(n->op, "!=")))
      for (int d = 0; d < 3; d++)
        if (is_thread_index(s->k, n->kids[0], dims[d]) || is_thread_index(s->k, n->kids[1], dims[d]))
          s->leader = n;
    break;
  case KS_AK_CALL:
    if (has_prefix(n->name, "__syncthreads") || has_prefix(n->name, "__barrier"))
      s->sync = s->sync ? s->sync : n->name;
    if (has_prefix(n->name, "__shfl") || has_prefix(n->name, "__syncwarp") ||
        has_prefix(n->name, "__ballot") || has_prefix(n->name, "__any_sync") ||
        has_prefix(n->name, "__all_sync") || has_prefix(n->name, "__activemask") ||
        has_prefix(n->name, "__match_") || has_prefix(n->name, "__reduce_"))
      s->warp = s->warp ? s->warp : n->name;
    break;
  case KS_AK_VAR:
    if (n->shared_space && !s->shared)
      s->shared = n;
    /* "int tid = threadIdx.x", "int bx = blockIdx.x": their uses stand for
     * the builtins (is_coordinate). */
    for (int d = 0; d < 3; d++)
      if ((is_builtin(var_init(s->k, n), "threadIdx", dims[d]) ||
           is_builtin(var_init(s->k, n), "blockIdx", dims[d])) &&
          !ks_rt_modified(s->k->body, n))
        return false;
    break;
  case KS_AK_DECL_REF:
    for (int d = 0; d < 3; d++) {
      if (is_thread_index(s->k, n, dims[d]))
        note_thread_use(s, d, n);
      if (is_coordinate(s->k, n, "blockIdx", dims[d]) && !s->stray_block_idx[d])
        s->stray_block_idx[d] = n;
    }
    break;
  case KS_AK_MEMBER:
    for (int d = 0; d < 3; d++) {
      if (ks_anode_is_builtin(n, "blockIdx", dims[d]) && !s->stray_block_idx[d])
        s->stray_block_idx[d] = n;
      if (ks_anode_is_builtin(n, "threadIdx", dims[d]))
        note_thread_use(s, d, n);
      if ((ks_anode_is_builtin(n, "blockDim", dims[d]) ||
           ks_anode_is_builtin(n, "gridDim", dims[d])) && !s->stray_other)
        s->stray_other = n;
    }
    return false;
  default:
    break;
  }
  return true;
}

/* The word outside comments and literals, and outside the bodies of
 * __global__ functions (the original kernel is in the slice; the variant's
 * own kernel is read from its tree): device functions the kernel may call. */
static bool device_code_uses(const char *unit, const char *word) {
  const char *end = unit + strlen(unit);
  for (const char *p = unit; p < end;) {
    const char *g = ks_ctext_find(p, end, "__global__");
    const char *w = ks_ctext_find(p, g ? g : end, word);
    if (w)
      return true;
    if (!g)
      return false;
    const char *open = ks_ctext_find(g, end, "{");
    const char *close = open ? ks_ctext_matching(open, end) : NULL;
    if (!close)
      return false;
    p = close + 1;
  }
  return false;
}

static void scan_kernel(const ks_rule_input *in, thread_scan *s) {
  memset(s, 0, sizeof *s);
  s->k = in->ast;
  ks_anode_walk(in->ast->root, scan_visit, s);
  if (!s->sync && device_code_uses(in->unit, "__syncthreads"))
    s->sync = "__syncthreads";
}

/* The shared-memory or barrier use that ties the algorithm to its block, or
 * NULL. */
static const char *block_level_state(const ks_rule_input *in, const thread_scan *s) {
  if (s->shared)
    return "uses __shared__ memory";
  if (s->sync)
    return "synchronizes its block (__syncthreads)";
  if (device_code_uses(in->unit, "__shared__"))
    return "calls device code that uses __shared__ memory";
  return NULL;
}

/* ---- small text helpers --------------------------------------------------- */

/* `e` as an operand of * or /: unchanged when it is a name, a number, a
 * call or already parenthesized. */
static const char *operand(ks_arena *arena, const char *e) {
  size_t n = strlen(e);
  bool simple = n > 0;
  for (size_t i = 0; i < n && simple; i++)
    simple = ks_ctext_is_ident_char(e[i]);
  if (simple)
    return e;
  const char *open = strchr(e, '(');
  if (open && e[n - 1] == ')' && ks_ctext_matching(open, e + n) == e + n - 1) {
    bool name_before = true;
    for (const char *p = e; p < open; p++)
      name_before = name_before && ks_ctext_is_ident_char(*p);
    if (name_before)
      return e;
  }
  return ks_arena_printf(arena, "(%s)", e);
}

static int not_applicable(ks_rule_result *out, const char *reason) {
  out->applied = false;
  out->reason = reason;
  return 0;
}

/* The parent's block at the timed size, or a reason why it has none. */
static const char *timed_dims(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena,
                              const ks_rule_policy *p, long long grid[3], long long block[3]) {
  for (int d = 0; d < 3; d++) {
    if (ks_rule_eval(ctx, in, p->grid[d], &grid[d]) || ks_rule_eval(ctx, in, p->block[d], &block[d]))
      return ks_arena_printf(arena, "its launch does not evaluate at the timed size: %s",
                             ctx->error);
  }
  return NULL;
}

/* Offset in the parent's source of a unit offset, or -1 when it is outside
 * the variant. */
static long long src_at(const ks_rule_input *in, size_t unit_offset) {
  return unit_offset < in->variant_offset ? -1 : (long long)(unit_offset - in->variant_offset);
}

/* The __launch_bounds__(...) before the kernel's name: [*begin, *end) in
 * the unit, and the text inside its parentheses. */
static bool find_launch_bounds(ks_arena *arena, const ks_rule_input *in, size_t *begin,
                               size_t *end, const char **args) {
  const char *u = in->unit;
  const char *from = u + in->ast->decl_begin, *to = u + in->ast->params_open;
  const char *at = ks_ctext_find(from, to, "__launch_bounds__");
  if (!at)
    return false;
  const char *open = ks_ctext_find(at, to, "(");
  const char *close = open ? ks_ctext_matching(open, to) : NULL;
  if (!close)
    return false;
  *begin = (size_t)(at - u);
  *end = (size_t)(close + 1 - u);
  *args = ks_ctext_trim(arena, open + 1, close);
  return true;
}

/* Whether `text` is one identifier (a macro's name: a node from a macro
 * whose extent is the name alone is the whole expansion). */
static bool one_name(const char *text) {
  if (!*text || (*text >= '0' && *text <= '9'))
    return false;
  for (const char *p = text; *p; p++)
    if (!ks_ctext_is_ident_char(*p))
      return false;
  return true;
}

/* The block sizes written as constants in the global indexes of the
 * dimensions below ndims (Rodinia's blockIdx.x * NUMBER_THREADS + tx):
 * each folded as the compiler sees it (rules_meaning) and equal to the
 * launch's block at the timed size; a requirement "block_w == C" per such
 * dimension into req[d] (NULL where there is none), and with `edits`, each
 * constant replaced by blockDim.w, so that the variant's index follows its
 * own block. NULL, or why not. */
static const char *constant_blocks(ks_ctx *ctx, const ks_rule_input *in, ks_arena *arena,
                                   const thread_scan *s, int ndims, const long long block[3],
                                   ks_edits *edits, const char *req[3]) {
  static const char dims[] = "xyz";
  ks_meaning *m = NULL;
  const char *why = NULL;
  for (int d = 0; d < 3; d++)
    req[d] = NULL;
  for (int d = 0; d < ndims && !why; d++) {
    if (!s->nconstant[d])
      continue;
    if (s->nconstant[d] > 8) {
      why = ks_arena_printf(arena, "it computes its global index with a constant block size "
                                   "%u times", s->nconstant[d]);
      break;
    }
    long long c0 = 0;
    for (unsigned i = 0; i < s->nconstant[d] && !why; i++) {
      const ks_anode *x = s->constant[d][i];
      const char *text = node_text(arena, in->ast, x);
      long long c = 0;
      if (!m)
        m = ks_meaning_open(ctx, in->ast, arena);
      if (!ks_meaning_int(m, x, &c))
        why = ks_arena_printf(arena, "it indexes with '%s', which is neither blockDim.%c nor a "
                                     "constant", text, dims[d]);
      else if (c != block[d])
        why = ks_arena_printf(arena, "it indexes with the constant '%s' (%lld) as its block size, "
                                     "but its block is %lld along %c", text, c, block[d], dims[d]);
      else if (i && c != c0)
        why = ks_arena_printf(arena, "its global indexes use two block sizes (%lld and %lld)", c0, c);
      else if (edits && (src_at(in, x->begin) < 0 || x->end <= x->begin || !x->parent ||
                         x->parent->from_macro || (x->from_macro && !one_name(text))))
        why = ks_arena_printf(arena, "its global index comes from the macro use '%s', inside "
                                     "which the rewrite cannot write blockDim.%c", text, dims[d]);
      else if (edits)
        ks_edits_add(arena, edits, (size_t)src_at(in, x->begin), (size_t)src_at(in, x->end),
                     ks_arena_printf(arena, "blockDim.%c", dims[d]));
      c0 = c;
    }
    req[d] = ks_arena_printf(arena, "block_%c == %lld", dims[d], c0);
  }
  ks_meaning_close(m);
  return why;
}

/* A use of threadIdx.w outside the global index whose value a block of
 * another size keeps: `threadIdx.x % C` with C dividing both blocks (a
 * lane, as warp_rows writes it). NULL, or the first use that is not. */
static const ks_anode *block_dependent_use(const thread_scan *s, int d, long long old_block,
                                           long long new_block) {
  if (s->nthread_use[d] > 16)
    return s->thread_use[d][0];
  for (unsigned i = 0; i < s->nthread_use[d]; i++) {
    const ks_anode *n = s->thread_use[d][i], *up = n->parent;
    while (up && (up->kind == KS_AK_PAREN || (up->kind == KS_AK_OTHER && ks_anode_strip(up, false) != up)))
      up = up->parent;
    const ks_anode *c = up && up->kind == KS_AK_BINARY && up->op && !strcmp(up->op, "%") &&
                                up->nkids == 2
                            ? strip(up->kids[1])
                            : NULL;
    bool lane = c && c->kind == KS_AK_INT_LITERAL && c->int_value > 0 &&
                old_block % c->int_value == 0 && new_block % c->int_value == 0;
    if (!lane)
      return n;
  }
  return NULL;
}

/* ---- block ---------------------------------------------------------------- */

static const int block_choices[] = {64, 128, 256, 512, 1024, 32008, 32004, 16016, 64004, 32016, 128002};

/* Does some comparison bound the global index of dimension d (the index
 * expression, or a variable initialized with it)? */
typedef struct bound_search {
  const ks_kast *k;
  int d;
  bool found;
} bound_search;

static bool mentions_index_visit(ks_anode *n, void *arg) {
  bound_search *b = arg;
  static const char dims[] = "xyz";
  if (b->found)
    return false;
  const ks_anode *c;
  if (global_index(b->k, n, dims[b->d], &c)) {
    b->found = true;
    return false;
  }
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR) {
    const ks_anode *init = var_init(b->k, n->decl);
    if (init) {
      bound_search inner = {b->k, b->d, false};
      ks_anode_walk((ks_anode *)init, mentions_index_visit, &inner);
      b->found = inner.found;
    }
  }
  return !b->found;
}

static bool bound_visit(ks_anode *n, void *arg) {
  bound_search *b = arg;
  if (b->found)
    return false;
  if (n->kind == KS_AK_BINARY && n->op &&
      (!strcmp(n->op, "<") || !strcmp(n->op, "<=") || !strcmp(n->op, ">") || !strcmp(n->op, ">="))) {
    bound_search inner = {b->k, b->d, false};
    ks_anode_walk(n, mentions_index_visit, &inner);
    if (inner.found) {
      b->found = true;
      return false;
    }
  }
  return true;
}

static bool index_is_bounded(const ks_kast *k, int d) {
  bound_search b = {k, d, false};
  ks_anode_walk(k->root, bound_visit, &b);
  return b.found;
}

/* The threads per block of a policy, as an expression of the original
 * launch (launch_bounds's guard is `<this> == N`). */
static const char *policy_threads(ks_arena *arena, const ks_rule_policy *p) {
  ks_buf product = KS_BUF_INIT;
  for (int d = 0; d < 3; d++)
    if (strcmp(p->block[d], "1"))
      ks_buf_addf(&product, "%s%s", product.len ? " * " : "", operand(arena, p->block[d]));
  if (!product.len)
    ks_buf_adds(&product, "1");
  const char *threads = ks_arena_strdup(arena, product.data);
  ks_buf_release(&product);
  return threads;
}

static int apply_block(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                       ks_rule_result *out) {
  /* 1-D sizes go up to 1024; 2-D shapes are bx * 1000 + by with bx >= 16. */
  int ndims = param > 1024 ? 2 : 1;
  long long bx = ndims == 2 ? param / 1000 : param, by = ndims == 2 ? param % 1000 : 1;
  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return not_applicable(out, ks_arena_printf(arena, "its launch policy: %s", ctx->error));
  long long grid[3], block[3];
  const char *why = timed_dims(ctx, in, arena, &p, grid, block);
  if (why)
    return not_applicable(out, why);
  int launch_dims = block[2] > 1 ? 3 : block[1] > 1 ? 2 : 1;
  if (launch_dims != ndims)
    return not_applicable(
        out, ks_arena_printf(arena, "block=%s is for %d-D blocks; this launch's block is %d-D (%lldx%lldx%lld)",
                             ndims == 1 ? ks_arena_printf(arena, "%lld", bx)
                                        : ks_arena_printf(arena, "%lldx%lld", bx, by),
                             ndims, launch_dims, block[0], block[1], block[2]));
  if (block[0] == bx && block[1] == by)
    return not_applicable(out, ndims == 1 ? ks_arena_printf(arena, "its block is already %lld threads", bx)
                                          : ks_arena_printf(arena, "its block is already %lldx%lld", bx, by));

  thread_scan s;
  scan_kernel(in, &s);
  static const char dims[] = "xyz";
  ks_edits e = {0};
  const char *req[3];
  const char *cwhy = constant_blocks(ctx, in, arena, &s, ndims, block, &e, req);
  if (cwhy)
    return not_applicable(out, cwhy);
  const char *state = block_level_state(in, &s);
  if (state)
    return not_applicable(out, ks_arena_printf(arena, "it %s: its block size is part of its algorithm", state));
  for (int d = 0; d < ndims; d++) {
    if (!s.index[d])
      return not_applicable(out, ks_arena_printf(arena, "it does not compute a global index from blockDim "
                                                        "(blockIdx.%c * blockDim.%c + threadIdx.%c)",
                                                 dims[d], dims[d], dims[d]));
    if (s.stray_block_idx[d])
      return not_applicable(out, ks_arena_printf(arena, "it uses blockIdx.%c outside its global index "
                                                        "('%s'): its work per block depends on the block size",
                                                 dims[d], node_text(arena, in->ast, s.stray_block_idx[d]->parent ? s.stray_block_idx[d]->parent : s.stray_block_idx[d])));
  }
  if (s.leader)
    return not_applicable(out, ks_arena_printf(arena, "it singles out a thread of each block ('%s'): its "
                                                      "work per block depends on the block size",
                                               node_text(arena, in->ast, s.leader)));
  /* `if (tx < 256)`, `x[tx]`: what a thread does would depend on its
   * place in a block of another size. */
  long long b[2] = {bx, by};
  for (int d = 0; d < ndims; d++) {
    const ks_anode *use = block_dependent_use(&s, d, block[d], b[d]);
    if (use)
      return not_applicable(out, ks_arena_printf(arena, "it uses threadIdx.%c outside its global index "
                                                        "('%s'): its work per thread depends on the block size",
                                                 dims[d], node_text(arena, in->ast, use->parent ? use->parent : use)));
  }
  if (ndims == 2 && s.warp)
    return not_applicable(out, ks_arena_printf(arena, "it uses %s: a 2-D block changes which threads share a warp", s.warp));

  ks_rule_child_init(arena, in, &out->child);
  for (int d = 0; d < 3; d++)
    if (req[d])
      ks_rule_require(arena, &out->child, req[d]);
  const char *parent_threads = policy_threads(arena, &p);
  for (int d = 0; d < ndims; d++) {
    const char *pg = operand(arena, p.grid[d]), *pb = operand(arena, p.block[d]);
    /* The same number of threads (or more) in each dimension: every index
     * the parent's grid reached is reached again. */
    if (!index_is_bounded(in->ast, d))
      ks_rule_require(arena, &out->child, ks_arena_printf(arena, "(%s * %s) %% %lld == 0", pg, pb, b[d]));
    p.grid[d] = ks_arena_printf(arena, "ceil_div(%s * %s, %lld)", pg, pb, b[d]);
    p.block[d] = ks_arena_printf(arena, "%lld", b[d]);
  }
  for (int d = ndims; d < 3; d++)
    p.block[d] = "1";
  ks_rule_policy_write(arena, &p, &out->child);

  /* A __launch_bounds__ below the new block would make the launch fail. */
  size_t lb_begin, lb_end;
  const char *args;
  if (find_launch_bounds(arena, in, &lb_begin, &lb_end, &args) && src_at(in, lb_begin) >= 0) {
    ks_strings parts = {0};
    ks_ctext_split(arena, args, args + strlen(args), &parts);
    const char *text = parts.len > 1
                           ? ks_arena_printf(arena, "__launch_bounds__(%lld, %s)", bx * by, parts.items[1])
                           : ks_arena_printf(arena, "__launch_bounds__(%lld)", bx * by);
    ks_edits_add(arena, &e, (size_t)src_at(in, lb_begin), (size_t)src_at(in, lb_end), text);
    /* launch_bounds's guard that the original's block is the bound's size
     * kept the variant's launch within the bound; the bound now follows
     * the variant's own constant block, and the guard would only turn the
     * variant off at every other block size of the original. */
    if (parts.len) {
      const char *stale = ks_arena_printf(arena, "%s == %s", parent_threads, parts.items[0]);
      size_t kept = 0;
      for (size_t i = 0; i < out->child.requires.len; i++)
        if (strcmp(out->child.requires.items[i], stale))
          out->child.requires.items[kept++] = out->child.requires.items[i];
      out->child.requires.len = kept;
    }
  }
  if (e.len) {
    out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
    if (!out->child.source)
      return -1;
  }
  out->applied = true;
  out->technique = ndims == 1 ? ks_arena_printf(arena, "block=%lld", bx)
                              : ks_arena_printf(arena, "block=%lldx%lld", bx, by);
  return 0;
}

const ks_rule ks_rule_block = {
    "block",
    "the block size: 64 to 1024 threads (1-D), or a 2-D shape bx*1000+by (32008 is 32x8); the "
    "grid is recomputed to cover the same threads",
    true,
    block_choices,
    sizeof block_choices / sizeof *block_choices,
    apply_block};

/* ---- grid_stride ---------------------------------------------------------- */

static const int grid_stride_choices[] = {1, 2, 4, 8, 16, 32};

/* The end of a statement: an expression statement's extent stops before its
 * semicolon. */
static size_t stmt_end(const ks_kast *k, const ks_anode *n) {
  size_t e = n->end;
  if (e > 0 && (k->source[e - 1] == ';' || k->source[e - 1] == '}'))
    return e;
  const char *p = k->source + e;
  for (;;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
      p++;
      continue;
    }
    break;
  }
  return *p == ';' ? (size_t)(p - k->source) + 1 : e;
}

static bool refers_to(const ks_anode *n, const ks_anode *var) {
  n = strip(n);
  return n && n->kind == KS_AK_DECL_REF && n->decl == var;
}

typedef struct var_uses {
  const ks_anode *var;
  const ks_anode *write;   /* an assignment, ++/-- or & of it */
  const ks_anode *use;     /* any reference */
} var_uses;

static bool var_uses_visit(ks_anode *n, void *arg) {
  var_uses *u = arg;
  if (refers_to(n, u->var) && !u->use)
    u->use = n;
  if (!u->write && n->nkids &&
      ((n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "=")) || n->kind == KS_AK_COMPOUND_ASSIGN ||
       (n->kind == KS_AK_UNARY && n->op &&
        (!strcmp(n->op, "++") || !strcmp(n->op, "--") || !strcmp(n->op, "&")))) &&
      refers_to(n->kids[0], u->var))
    u->write = n;
  return true;
}

/* Returns in the loop body become `continue`; a return inside a nested
 * loop or switch cannot, and is reported. */
typedef struct return_edits {
  const ks_rule_input *in;
  ks_arena *arena;
  ks_edits *edits;
  int depth;
  const ks_anode *nested;
  bool from_macro;
} return_edits;

static bool is_loop_or_switch(const ks_anode *n) {
  return n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO ||
         (n->kind_name && !strcmp(n->kind_name, "SwitchStmt"));
}

static void collect_returns(return_edits *r, const ks_anode *n) {
  if (!n)
    return;
  if (n->kind == KS_AK_RETURN) {
    if (r->depth)
      r->nested = r->nested ? r->nested : n;
    else if (n->from_macro)
      r->from_macro = true;
    else
      ks_edits_add(r->arena, r->edits, n->begin - r->in->variant_offset,
                   n->begin - r->in->variant_offset + 6, "continue");
    return;
  }
  bool loop = is_loop_or_switch(n);
  r->depth += loop;
  for (size_t i = 0; i < n->nkids; i++)
    collect_returns(r, n->kids[i]);
  r->depth -= loop;
}

/* A bound the guard language can evaluate: scalar parameters, numbers and
 * arithmetic. */
static bool bound_is_evaluable(const ks_anode *n) {
  if (!n)
    return false;
  switch (n->kind) {
  case KS_AK_INT_LITERAL:
    return true;
  case KS_AK_DECL_REF:
    return n->decl && n->decl->kind == KS_AK_PARAM && !n->decl->is_pointer;
  case KS_AK_BINARY:
    if (!n->op || !strchr("+-*/%", n->op[0]) || n->op[1])
      return false;
    break;
  case KS_AK_PAREN:
  case KS_AK_OTHER: /* implicit conversions */
    if (n->kind == KS_AK_OTHER && ks_anode_strip(n, false) == n)
      return false;
    break;
  default:
    return false;
  }
  for (size_t i = 0; i < n->nkids; i++)
    if (!bound_is_evaluable(n->kids[i]))
      return false;
  return true;
}

/* Leading white space of the line `at` is on. */
static const char *indent_at(ks_arena *arena, const char *text, const char *at) {
  const char *s = at;
  while (s > text && s[-1] != '\n')
    s--;
  const char *e = s;
  while (*e == ' ' || *e == '\t')
    e++;
  return ks_arena_strndup(arena, s, (size_t)(e - s));
}

/* Each line of `text` but the first indented by `unit` more. */
static const char *indent_more(ks_arena *arena, const char *text, const char *unit) {
  ks_buf b = KS_BUF_INIT;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    const char *e = nl ? nl + 1 : p + strlen(p);
    if (p != text && *p != '\n')
      ks_buf_adds(&b, unit);
    ks_buf_add(&b, p, (size_t)(e - p));
    p = e;
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

static int apply_grid_stride(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                             ks_rule_result *out) {
  const ks_kast *k = in->ast;
  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return not_applicable(out, ks_arena_printf(arena, "its launch policy: %s", ctx->error));
  long long grid[3], block[3];
  const char *why = timed_dims(ctx, in, arena, &p, grid, block);
  if (why)
    return not_applicable(out, why);
  if (grid[1] * grid[2] * block[1] * block[2] != 1)
    return not_applicable(out, "its launch is not 1-D");
  if (grid[0] <= (long long)in->sm_count * param)
    return not_applicable(out, ks_arena_printf(arena, "its grid (%lld blocks) is no larger than %u SMs x %d",
                                               grid[0], in->sm_count, param));
  thread_scan s;
  scan_kernel(in, &s);
  /* A constant block size in the index is the launch's (required): the
   * loop's stride is blockDim.x * gridDim.x either way. */
  const char *req[3];
  const char *cwhy = constant_blocks(ctx, in, arena, &s, 1, block, NULL, req);
  if (cwhy)
    return not_applicable(out, cwhy);
  const char *state = block_level_state(in, &s);
  if (state)
    return not_applicable(out, ks_arena_printf(arena, "it %s: a thread cannot loop alone", state));
  if (s.warp)
    return not_applicable(out, ks_arena_printf(arena, "it uses %s: a thread cannot loop alone", s.warp));

  /* `T i = <global index>;` among the body's statements, then the bounds
   * check right after it. */
  const ks_anode *body = k->body, *decl = NULL, *var = NULL, *check = NULL;
  size_t at = 0;
  for (size_t i = 0; body && i + 1 < body->nkids && !decl; i++) {
    const ks_anode *st = body->kids[i];
    if (st->kind != KS_AK_DECL_STMT || st->nkids != 1)
      continue;
    const ks_anode *init = var_init(k, st->kids[0]);
    const ks_anode *c;
    if (init && global_index(k, init, 'x', &c)) {
      decl = st;
      var = st->kids[0];
      check = body->kids[i + 1];
      at = i;
    }
  }
  if (!decl || check->kind != KS_AK_IF || check->nkids != 2)
    return not_applicable(out, "it has no 'i = <global index>;' followed by 'if (i < n)' or "
                               "'if (i >= n) return;'");
  const ks_anode *cond = strip(check->kids[0]), *then = check->kids[1];
  const ks_anode *bound = NULL;
  bool guard_form = false; /* if (i < n) { body } */
  if (cond && cond->kind == KS_AK_BINARY && cond->nkids == 2) {
    if ((!strcmp(cond->op, "<") && refers_to(cond->kids[0], var)) ||
        (!strcmp(cond->op, ">") && refers_to(cond->kids[1], var))) {
      bound = cond->kids[refers_to(cond->kids[0], var) ? 1 : 0];
      guard_form = true;
    } else if ((!strcmp(cond->op, ">=") && refers_to(cond->kids[0], var)) ||
               (!strcmp(cond->op, "<=") && refers_to(cond->kids[1], var))) {
      bound = cond->kids[refers_to(cond->kids[0], var) ? 1 : 0];
      const ks_anode *r = strip(then);
      if (r && r->kind == KS_AK_COMPOUND && r->nkids == 1)
        r = r->kids[0];
      if (!r || r->kind != KS_AK_RETURN)
        bound = NULL;
    }
  }
  if (!bound)
    return not_applicable(out, ks_arena_printf(arena, "its bounds check '%s' is not 'if (%s < n)' or "
                                                      "'if (%s >= n) return;'",
                                               node_text(arena, k, check->kids[0]), var->name, var->name));
  if (s.nindex[0] != 1 || s.stray_block_idx[0] || s.nthread_use[0] || s.stray_other ||
      s.stray_block_idx[1] || s.nthread_use[1] || s.stray_block_idx[2] || s.nthread_use[2])
    return not_applicable(out, "it uses its thread or block coordinates besides its global index");
  var_uses u = {.var = var};
  ks_anode_walk((ks_anode *)k->body, var_uses_visit, &u);
  if (u.write)
    return not_applicable(out, ks_arena_printf(arena, "it changes '%s' ('%s')", var->name,
                                               node_text(arena, k, u.write)));
  var_uses bu = {.var = var};
  ks_anode_walk((ks_anode *)bound, var_uses_visit, &bu);
  if (bu.use)
    return not_applicable(out, "its bound depends on the index");
  if (decl->from_macro || check->from_macro || decl->begin < in->variant_offset)
    return not_applicable(out, "its index and bounds check come from a macro");

  /* The loop body: the guarded statement, or everything after the early
   * return. */
  ks_anode *const *rest = &body->kids[at + 2];
  size_t nrest = body->nkids - at - 2;
  if (guard_form) {
    for (size_t i = 0; i < nrest; i++) {
      var_uses ru = {.var = var};
      ks_anode_walk((ks_anode *)rest[i], var_uses_visit, &ru);
      if (ru.use)
        return not_applicable(out, ks_arena_printf(arena, "it uses '%s' after its bounds check", var->name));
    }
  }
  ks_edits e = {0}, rets = {0};
  return_edits r = {.in = in, .arena = arena, .edits = &rets};
  if (guard_form)
    collect_returns(&r, then);
  else
    for (size_t i = 0; i < nrest; i++)
      collect_returns(&r, rest[i]);
  if (r.nested)
    return not_applicable(out, "it returns from inside a loop or switch, which a loop over its index "
                               "cannot express");
  if (r.from_macro)
    return not_applicable(out, "it returns from inside a macro");

  /* The loop counter keeps the index's type; a 32-bit one is kept only
   * where the last step cannot overflow it (a guard on the bound), else
   * it is widened. */
  const char *type = var->type ? var->type : "int";
  if (has_prefix(type, "const "))
    type = type + 6;
  const char *pg = p.grid[0], *pb = operand(arena, p.block[0]);
  const char *new_grid = ks_arena_printf(arena, "min(%s, %u * %d)", pg, in->sm_count, param);
  ks_rule_child_init(arena, in, &out->child);
  if (req[0])
    ks_rule_require(arena, &out->child, req[0]);
  if (!ks_rt_is_64bit_type(type)) {
    const ks_anode *b = strip(bound);
    if (bound_is_evaluable(b)) {
      const char *limit = strstr(type, "unsigned") || strstr(type, "uint") ? "4294967296" : "2147483648";
      ks_rule_require(arena, &out->child,
                      ks_arena_printf(arena, "%s + %s * %s <= %s", operand(arena, node_text(arena, k, b)),
                                      new_grid, pb, limit));
    } else {
      type = "long long";
    }
  }
  const char *init = node_text(arena, k, var_init(k, var));
  const char *bound_text = node_text(arena, k, bound);
  const char *head = ks_arena_printf(arena, "for (%s %s = %s; %s < %s; %s += blockDim.x * gridDim.x)",
                                     type, var->name, init, var->name, operand(arena, bound_text), var->name);
  size_t from = decl->begin - in->variant_offset;
  if (guard_form) {
    /* Everything up to the guarded statement becomes the loop's head. */
    ks_edits_add(arena, &e, from, then->begin - in->variant_offset, ks_arena_printf(arena, "%s ", head));
    for (size_t i = 0; i < rets.len; i++)
      ks_edits_add(arena, &e, rets.items[i].begin, rets.items[i].end, rets.items[i].text);
  } else {
    size_t body_close = k->body->end - 1 - in->variant_offset;
    size_t after_check = stmt_end(k, check) - in->variant_offset;
    const char *unit = indent_at(arena, in->unit, in->unit + decl->begin);
    if (!*unit)
      unit = "    ";
    ks_edits_add(arena, &e, from, after_check, ks_arena_printf(arena, "%s {", head));
    /* Indent the statements that move into the loop. */
    const char *moved = ks_arena_strndup(arena, in->parent->source + after_check, body_close - after_check);
    const char *edited = NULL;
    if (rets.len) {
      /* The returns are in the moved text: edit it before indenting it. */
      ks_edits inner = {0};
      for (size_t i = 0; i < rets.len; i++)
        ks_edits_add(arena, &inner, rets.items[i].begin - after_check, rets.items[i].end - after_check,
                     rets.items[i].text);
      edited = ks_edits_apply(ctx, arena, moved, &inner);
      if (!edited)
        return -1;
    }
    /* Blank lines between the early return and the rest are dropped: the
     * loop's head takes the return's place. */
    const char *rest_text = edited ? edited : moved;
    const char *first_line = rest_text;
    for (const char *q = rest_text; *q == '\n' || *q == ' ' || *q == '\t' || *q == '\r'; q++)
      if (*q == '\n')
        first_line = q;
    const char *text = indent_more(arena, first_line, unit);
    /* The closing brace goes on a line of its own at the loop's indent. */
    size_t tl = strlen(text);
    while (tl && (text[tl - 1] == ' ' || text[tl - 1] == '\t' || text[tl - 1] == '\n'))
      tl--;
    ks_edits_add(arena, &e, after_check, body_close,
                 ks_arena_printf(arena, "%.*s\n%s}\n", (int)tl, text, unit));
  }
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  p.grid[0] = new_grid;
  ks_rule_policy_write(arena, &p, &out->child);
  out->applied = true;
  out->technique = ks_arena_printf(arena, "grid_stride=%d", param);
  return 0;
}

const ks_rule ks_rule_grid_stride = {
    "grid_stride",
    "one element per thread becomes a grid-stride loop over a grid capped at PARAM blocks per SM",
    false,
    grid_stride_choices,
    sizeof grid_stride_choices / sizeof *grid_stride_choices,
    apply_grid_stride};

/* ---- launch_bounds -------------------------------------------------------- */

static const int launch_bounds_choices[] = {0, 1, 2, 4};

static bool no_names(void *data, const char *name, size_t len, ks_value *out) {
  (void)data;
  (void)name;
  (void)len;
  (void)out;
  return false;
}

static int apply_launch_bounds(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                               ks_rule_result *out) {
  const ks_kast *k = in->ast;
  ks_rule_policy p;
  if (ks_rule_policy_read(ctx, arena, in->parent, &p))
    return not_applicable(out, ks_arena_printf(arena, "its launch policy: %s", ctx->error));
  if ((k->fn && k->fn->from_macro) || k->global_at < in->variant_offset)
    return not_applicable(out, "its definition comes from a macro");
  /* The threads per block: a constant policy gives it for every size; else
   * the timed size's, with a guard that the block is that size. */
  const char *threads = policy_threads(arena, &p);
  ks_expr_env none = {no_names, NULL};
  ks_value v;
  long long t;
  bool constant = !ks_expr_eval(ctx, threads, &none, &v) && v.is_int;
  if (constant)
    t = v.i;
  else if (ks_rule_eval(ctx, in, threads, &t))
    return not_applicable(out, ks_arena_printf(arena, "its block does not evaluate at the timed size: %s",
                                               ctx->error));
  if (t < 1 || t > 1024)
    return not_applicable(out, ks_arena_printf(arena, "its block has %lld threads (1 to 1024 can be bounds)", t));
  const char *attr = param ? ks_arena_printf(arena, "__launch_bounds__(%lld, %d)", t, param)
                           : ks_arena_printf(arena, "__launch_bounds__(%lld)", t);
  ks_edits e = {0};
  size_t lb_begin, lb_end;
  const char *args;
  if (find_launch_bounds(arena, in, &lb_begin, &lb_end, &args)) {
    const char *old = ks_arena_strndup(arena, in->unit + lb_begin, lb_end - lb_begin);
    ks_strings parts = {0};
    ks_ctext_split(arena, args, args + strlen(args), &parts);
    long long old_t = 0;
    if (parts.len && !ks_expr_eval(ctx, parts.items[0], &none, &v) && v.is_int)
      old_t = v.i;
    bool same_min = param ? parts.len > 1 && !strcmp(parts.items[1], ks_arena_printf(arena, "%d", param))
                          : parts.len < 2;
    if (old_t == t && same_min)
      return not_applicable(out, ks_arena_printf(arena, "it already has %s", old));
    if (src_at(in, lb_begin) < 0)
      return not_applicable(out, "its __launch_bounds__ is outside the variant");
    ks_edits_add(arena, &e, (size_t)src_at(in, lb_begin), (size_t)src_at(in, lb_end), attr);
  } else {
    ks_edits_add(arena, &e, (size_t)src_at(in, k->global_at), (size_t)src_at(in, k->global_at),
                 ks_arena_printf(arena, "%s ", attr));
  }
  ks_rule_child_init(arena, in, &out->child);
  if (!constant)
    ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s == %lld", threads, t));
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  out->applied = true;
  out->technique = param ? ks_arena_printf(arena, "launch_bounds=%lld,%d", t, param)
                         : ks_arena_printf(arena, "launch_bounds=%lld", t);
  return 0;
}

const ks_rule ks_rule_launch_bounds = {
    "launch_bounds",
    "__launch_bounds__(threads per block, PARAM blocks per SM) on the kernel (0: no minimum), so "
    "the compiler budgets registers for the block it will get",
    true,
    launch_bounds_choices,
    sizeof launch_bounds_choices / sizeof *launch_bounds_choices,
    apply_launch_bounds};
