/* rules_smem_hist: smem_histogram, a histogram staged in shared memory.
 *
 * A kernel whose only global writes are atomicAdd(&bins[key], v) into an
 * integer buffer gets a private histogram per block in shared memory
 * (zeroed, __syncthreads, the atomics go there, __syncthreads, the non-zero
 * bins added to global memory), and a grid-stride loop over the elements so
 * each block counts many of them; the grid becomes min(current grid,
 * sm_count * param). The bins are a static array when every key's type
 * bounds it (an 8-bit key: 256), otherwise dynamic shared memory sized by
 * the bins buffer's spec length, whose bin count the kernel reads back from
 * %dynamic_smem_size.
 *
 * What it shares with smem_transpose (the facts walk, the common refusals,
 * bounds, text helpers) is in rules_smem_common.c; rules_smem_int.h says
 * how both read the tree. */
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_smem_int.h"

/* ---- smem_histogram --------------------------------------------------------- */

static bool is_u8(ks_arena *arena, const char *type) {
  if (!type)
    return false;
  const char *t = ks_smem_unqualified(arena, type);
  return !strcmp(t, "unsigned char") || !strcmp(t, "uint8_t") || !strcmp(t, "std::uint8_t") ||
         !strcmp(t, "uchar") || !strcmp(t, "u_char");
}

static bool is_u8_vector(ks_arena *arena, const char *type) {
  if (!type)
    return false;
  const char *t = ks_smem_unqualified(arena, type);
  return !strcmp(t, "uchar1") || !strcmp(t, "uchar2") || !strcmp(t, "uchar3") ||
         !strcmp(t, "uchar4");
}

/* A pointer expression to 8-bit unsigned elements: p, p + i, &p[i]. */
static bool points_to_u8(ks_arena *arena, const ks_anode *n) {
  n = ks_anode_strip(n, false);
  if (!n)
    return false;
  if (n->kind == KS_AK_CAST)
    return n->type && strchr(n->type, '*') && is_u8(arena, ks_arena_strndup(arena, n->type, (size_t)(strchr(n->type, '*') - n->type)));
  if (n->kind == KS_AK_DECL_REF)
    return n->decl && n->decl->is_pointer && is_u8(arena, n->decl->pointee);
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op && (!strcmp(n->op, "+") || !strcmp(n->op, "-")))
    return points_to_u8(arena, n->kids[0]) || (!strcmp(n->op, "+") && points_to_u8(arena, n->kids[1]));
  if (n->kind == KS_AK_UNARY && n->nkids == 1 && n->op && !strcmp(n->op, "&")) {
    const ks_anode *s = ks_anode_strip(n->kids[0], false);
    return s && s->kind == KS_AK_SUBSCRIPT && s->nkids == 2 && points_to_u8(arena, s->kids[0]);
  }
  return false;
}

/* How many bins a key can reach, from its type alone: 256 for an 8-bit
 * unsigned value, mask + 1 for `x & mask`; 0 when unknown. */
static long long key_bins(ks_arena *arena, const ks_anode *key) {
  const ks_anode *k = ks_anode_strip(key, false);
  if (!k)
    return 0;
  if (k->kind == KS_AK_CAST) {
    if (is_u8(arena, k->type))
      return 256;
    /* A wider integer keeps the value; a narrow signed one may not. */
    const char *t = k->type ? ks_smem_unqualified(arena, k->type) : "";
    if (!strcmp(t, "char") || !strcmp(t, "signed char") || !strcmp(t, "int8_t") ||
        !strcmp(t, "bool") || strchr(t, '*'))
      return 0;
    return key_bins(arena, ks_rt_var_init(k));
  }
  if (k->type && is_u8(arena, k->type))
    return 256;
  switch (k->kind) {
  case KS_AK_SUBSCRIPT:
    return k->nkids == 2 && points_to_u8(arena, k->kids[0]) ? 256 : 0;
  case KS_AK_UNARY:
    return k->op && !strcmp(k->op, "*") && k->nkids == 1 && points_to_u8(arena, k->kids[0]) ? 256 : 0;
  case KS_AK_CALL:
    return k->name && ks_rt_has_prefix(k->name, "__ld") && k->nkids == 1 &&
                   points_to_u8(arena, k->kids[0])
               ? 256
               : 0;
  case KS_AK_DECL_REF:
    return k->decl && k->decl->kind == KS_AK_VAR && !k->decl->is_pointer && is_u8(arena, k->decl->type)
               ? 256
               : 0;
  case KS_AK_MEMBER: {
    const ks_anode *b = k->nkids == 1 ? ks_anode_strip(k->kids[0], false) : NULL;
    if (!b || k->arrow || !k->name || strlen(k->name) != 1 || !strchr("xyzw", k->name[0]))
      return 0;
    if (b->kind == KS_AK_DECL_REF && b->decl && is_u8_vector(arena, b->decl->type))
      return 256;
    return b->type && is_u8_vector(arena, b->type) ? 256 : 0;
  }
  case KS_AK_BINARY:
    if (k->op && !strcmp(k->op, "&") && k->nkids == 2)
      for (int side = 0; side < 2; side++) {
        const ks_anode *m = ks_anode_strip(k->kids[side], true);
        if (m && m->kind == KS_AK_INT_LITERAL && m->int_value >= 0 && m->int_value < (1ll << 30))
          return m->int_value + 1;
      }
    return 0;
  default:
    return 0;
  }
}

/* Whether an atomicAdd's value is thrown away: it stands as a statement. */
static bool result_unused(const ks_anode *call) {
  const ks_anode *c = call, *p = call->parent;
  while (p && (p->kind == KS_AK_PAREN ||
               (p->kind == KS_AK_CAST && p->type && !strcmp(p->type, "void")) ||
               (p->kind == KS_AK_OTHER && p->kind_name &&
                (strstr(p->kind_name, "Unexposed") || strstr(p->kind_name, "Implicit") ||
                 strstr(p->kind_name, "Cleanup"))))) {
    c = p;
    p = p->parent;
  }
  if (!p)
    return false;
  switch (p->kind) {
  case KS_AK_COMPOUND:
    return true;
  case KS_AK_IF:
    return p->nkids > 1 && p->kids[0] != c;
  case KS_AK_FOR:
    return p->nkids == 4 && p->kids[3] == c;
  case KS_AK_WHILE:
    return p->nkids == 2 && p->kids[1] == c;
  case KS_AK_DO:
    return p->nkids == 2 && p->kids[0] == c;
  case KS_AK_OTHER: /* case and default labels, the branches of a switch */
    return p->kind_name && (strstr(p->kind_name, "Case") || strstr(p->kind_name, "Default") ||
                            strstr(p->kind_name, "Label"));
  default:
    return false;
  }
}

/* blockDim.x * gridDim.x (either order, with casts), directly or through a
 * local that holds it. */
static bool is_grid_stride(const ks_smem_facts *f, const ks_anode *e, const ks_anode **where) {
  e = ks_anode_strip(e, true);
  if (!e)
    return false;
  if (e->kind == KS_AK_DECL_REF && e->decl && e->decl->kind == KS_AK_VAR &&
      !ks_smem_is_written(f, e->decl)) {
    const ks_anode *inner = NULL;
    if (!is_grid_stride(f, ks_rt_var_init(e->decl), &inner))
      return false;
    *where = e->decl; /* gridDim sits in the local's initializer */
    return true;
  }
  if (e->kind != KS_AK_BINARY || e->nkids != 2 || !e->op || strcmp(e->op, "*"))
    return false;
  *where = e;
  return (ks_smem_is_builtin(e->kids[0], "blockDim", 'x') &&
          ks_smem_is_builtin(e->kids[1], "gridDim", 'x')) ||
         (ks_smem_is_builtin(e->kids[0], "gridDim", 'x') &&
          ks_smem_is_builtin(e->kids[1], "blockDim", 'x'));
}

/* The shape of the element loop, as found or as it will be made. */
typedef struct hist_shape {
  const ks_anode *index;      /* the element index variable */
  const ks_anode *decl_stmt;  /* its declaration (straight-line kernel) */
  const ks_anode *guard;      /* the early exit */
  ks_smem_bound bound;            /* the index's bound in the early exit */
  const char *cond;           /* the loop condition */
  bool has_loop;              /* the kernel already strides over the grid */
} hist_shape;

static bool inside_loop_below(const ks_anode *n, const ks_anode *top) {
  for (const ks_anode *p = n->parent; p && p != top; p = p->parent)
    if (p->kind == KS_AK_FOR || p->kind == KS_AK_WHILE || p->kind == KS_AK_DO)
      return true;
  return false;
}

/* A kernel that already strides over the grid (the grid_stride rule's
 * output): for (i = gid; ...; i += blockDim.x * gridDim.x) holding every
 * atomic. It works for any grid as it is. */
static const char *hist_grid_loop(const ks_smem_facts *f, const ks_anode *loop, hist_shape *s) {
  const ks_anode *init = loop->kids[0], *inc = loop->kids[2];
  const ks_anode *var = ks_rt_single_var(init), *gid = var ? ks_rt_var_init(var) : NULL;
  const ks_anode *init_expr = ks_anode_strip(init, false);
  if (!var && init_expr && init_expr->kind == KS_AK_BINARY && init_expr->op &&
      !strcmp(init_expr->op, "=") && init_expr->nkids == 2) {
    const ks_anode *l = ks_anode_strip(init_expr->kids[0], false);
    if (l && l->kind == KS_AK_DECL_REF && l->decl && l->decl->kind == KS_AK_VAR) {
      var = l->decl;
      gid = init_expr->kids[1];
    }
  }
  if (!var || !ks_smem_is_gid(gid, 'x', NULL, NULL))
    return "its loop does not start at blockIdx.x * blockDim.x + threadIdx.x";
  const ks_anode *step = NULL, *stride_at = NULL;
  inc = ks_anode_strip(inc, false);
  if (inc && inc->kind == KS_AK_COMPOUND_ASSIGN && inc->op && !strcmp(inc->op, "+=") &&
      inc->nkids == 2 && ks_rt_refers_to(inc->kids[0], var))
    step = inc->kids[1];
  if (!step || !is_grid_stride(f, step, &stride_at))
    return "its loop does not step by blockDim.x * gridDim.x";
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    const char *name = ks_smem_builtin_name(b);
    if (!strcmp(name, "blockIdx") && !ks_rt_is_within(b, gid))
      return "uses blockIdx outside its index";
    if (!strcmp(name, "gridDim") && !ks_rt_is_within(b, stride_at))
      return "uses gridDim outside its loop's step";
  }
  for (size_t i = 0; i < f->atomics.len; i++)
    if (!ks_rt_is_within(f->atomics.items[i], loop->kids[3]))
      return "has an atomicAdd outside its grid-stride loop";
  if (f->returns.len)
    return "returns early from a grid-stride loop (every thread must reach the barrier)";
  s->index = var;
  s->has_loop = true;
  return NULL;
}

/* A straight-line kernel: index = gid; ...; an early exit on the index
 * (if (i < n) ... or if (i >= n) return;) before every atomic. */
static const char *hist_straight(const ks_smem_rewrite *w, const ks_smem_facts *f, hist_shape *s) {
  const ks_anode *body = w->in->ast->body;
  size_t d = body->nkids;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *var = ks_rt_single_var(body->kids[k]);
    if (var && ks_smem_is_gid(ks_rt_var_init(var), 'x', NULL, NULL)) {
      d = k;
      s->index = var;
      s->decl_stmt = body->kids[k];
      break;
    }
  }
  if (!s->index)
    return "has no element index blockIdx.x * blockDim.x + threadIdx.x";
  if (ks_smem_is_written(f, s->index))
    return "changes its element index";
  if (s->decl_stmt->from_macro)
    return "declares its index in a macro";
  for (size_t k = 0; k < d; k++) {
    const ks_anode *st = body->kids[k];
    if (!st || st->kind != KS_AK_DECL_STMT)
      return "does work before its element index is known";
    for (size_t v = 0; v < st->nkids; v++)
      if (st->kids[v] && st->kids[v]->kind == KS_AK_VAR && ks_smem_is_written(f, st->kids[v]))
        return "changes a variable declared before its element index";
  }
  const ks_anode *gid = ks_rt_var_init(s->index);
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    const char *name = ks_smem_builtin_name(b);
    if (!strcmp(name, "blockIdx") && !ks_rt_is_within(b, gid))
      return "uses blockIdx beyond its element index";
    if (!strcmp(name, "gridDim"))
      return "uses gridDim (the grid is what the rewrite changes)";
  }
  /* The early exit. */
  ks_smem_bound b = {0};
  size_t g = body->nkids;
  bool exit_form = false;
  ks_rt_nodes parts = {0};
  for (size_t k = d + 1; k < body->nkids && g == body->nkids; k++) {
    const ks_anode *st = body->kids[k];
    if (!st || st->kind != KS_AK_IF)
      continue;
    parts.len = 0;
    if (ks_smem_is_return_guard(st)) {
      ks_rt_split_chain(w->arena, st->kids[0], "||", &parts);
      for (size_t p = 0; p < parts.len && g == body->nkids; p++)
        if (ks_smem_read_bound(parts.items[p], s->index, &b) && !b.in_range) {
          g = k;
          exit_form = true;
        }
    } else if (st->nkids == 2) {
      ks_rt_split_chain(w->arena, st->kids[0], "&&", &parts);
      for (size_t p = 0; p < parts.len && g == body->nkids; p++)
        if (ks_smem_read_bound(parts.items[p], s->index, &b) && b.in_range)
          g = k;
    }
  }
  if (g == body->nkids)
    return "has no early exit on its element index (if (i < n) or if (i >= n) return) to bound "
           "the loop";
  s->guard = body->kids[g];
  s->bound = b;
  for (size_t i = 0; i < f->atomics.len; i++) {
    const ks_anode *a = f->atomics.items[i];
    bool ok = exit_form ? !ks_rt_is_within(a, s->guard) && a->begin > s->guard->end
                        : ks_rt_is_within(a, s->guard->kids[1]);
    if (!ok)
      return "has an atomicAdd outside its bound check";
  }
  for (size_t i = 0; i < f->returns.len; i++) {
    const ks_anode *r = f->returns.items[i];
    if (inside_loop_below(r, body))
      return "returns from inside a loop";
    if (r->from_macro || strncmp(w->unit + r->begin, "return", 6))
      return "returns through a macro";
  }
  if (!ks_smem_bound_is_simple(ks_anode_strip(b.bound, false)))
    return "bounds its index by an expression the launch policy cannot state";
  /* The loop runs while the index is in range. */
  const char *bound_text = ks_rt_text_of(w->arena, w->in, ks_anode_strip(b.bound, false));
  const char *name = s->index->name;
  s->cond = ks_arena_printf(w->arena, "%s %s %s", name, b.inclusive ? "<=" : "<",
                            ks_smem_operand(w->arena, bound_text));
  return NULL;
}

/* The declaration of the index turned into the head of the grid-stride
 * loop: `size_t i = gid;` -> `for (size_t i = gid; i < n; i += ...) {`. */
static const char *loop_head(ks_ctx *ctx, const ks_smem_rewrite *w, const hist_shape *s,
                             unsigned *end) {
  unsigned b = s->decl_stmt->begin;
  unsigned e = ks_smem_stmt_end(w, s->decl_stmt);
  *end = e;
  const char *decl = ks_ctext_trim(w->arena, w->unit + b, w->unit + e);
  size_t len = strlen(decl);
  if (len && decl[len - 1] == ';')
    len--;
  /* A const index cannot step: drop const before the '='. */
  const char *eq = ks_ctext_find(decl, decl + len, "=");
  ks_edits drop = {0};
  for (const char *c = strstr(decl, "const"); c && eq && c < eq; c = strstr(c + 5, "const"))
    if ((c == decl || !ks_ctext_is_ident_char(c[-1])) && !ks_ctext_is_ident_char(c[5]))
      ks_edits_add(w->arena, &drop, (size_t)(c - decl), (size_t)(c - decl) + (c[5] == ' ' ? 6 : 5), "");
  const char *head = ks_edits_apply(ctx, w->arena, ks_arena_strndup(w->arena, decl, len), &drop);
  if (!head)
    return NULL;
  return ks_arena_printf(w->arena, "for (%s; %s; %s += blockDim.x * gridDim.x) {", head, s->cond,
                         s->index->name);
}

/* The rewrite as edits of the parent's source: the bins zeroed in shared
 * memory, the atomics sent there, the element loop (made from the index
 * declaration and the early exit, unless the kernel has one), and the
 * non-zero bins added to global memory. nbins 0: dynamic shared memory. */
static int hist_edits(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_smem_facts *f,
                      const hist_shape *s, const ks_anode *bins, const ks_rt_nodes *bin_refs,
                      const char *elem, long long nbins, ks_edits *e) {
  ks_arena *arena = w->arena;
  const ks_anode *body = w->in->ast->body;
  const char *I = w->indent, *unit = w->unit;
  size_t vo = w->vo;
  const char *hist = ks_rt_fresh(arena, unit, "ks_hist");
  const char *bin = ks_rt_fresh(arena, unit, "ks_bin");
  const char *count = ks_rt_fresh(arena, unit, "ks_count");
  const char *tid = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)";
  const char *nthreads = "blockDim.x * blockDim.y * blockDim.z";
  const char *n;
  ks_buf pro = KS_BUF_INIT;
  if (!nbins) {
    n = ks_rt_fresh(arena, unit, "ks_nbins");
    ks_buf_addf(&pro, "\n%sextern __shared__ %s %s[];\n", I, elem, hist);
    ks_buf_addf(&pro, "%s// The bins fill the launch's dynamic shared memory.\n", I);
    ks_buf_addf(&pro, "%sunsigned %s;\n", I, n);
    ks_buf_addf(&pro, "%sasm volatile(\"mov.u32 %%0, %%%%dynamic_smem_size;\" : \"=r\"(%s));\n", I, n);
    ks_buf_addf(&pro, "%s%s /= sizeof(%s);\n", I, n, elem);
  } else {
    n = ks_arena_printf(arena, "%lld", nbins);
    ks_buf_addf(&pro, "\n%s__shared__ %s %s[%lld];\n", I, elem, hist, nbins);
  }
  ks_buf_addf(&pro, "%sfor (unsigned %s = %s; %s < %s; %s += %s)\n", I, bin, tid, bin, n, bin,
              nthreads);
  ks_buf_addf(&pro, "%s%s%s[%s] = 0;\n%s__syncthreads();", I, I, hist, bin, I);
  ks_edits_add(arena, e, body->begin + 1 - vo, body->begin + 1 - vo, ks_arena_strdup(arena, pro.data));
  ks_buf_release(&pro);
  for (size_t i = 0; i < bin_refs->len; i++)
    ks_edits_add(arena, e, bin_refs->items[i]->begin - vo, bin_refs->items[i]->end - vo, hist);

  /* The flush goes where the body's closing brace's line starts. */
  unsigned close = body->end - 1;
  const char *close_indent = ks_smem_line_indent(w, close);
  unsigned at = close_indent ? close - (unsigned)strlen(close_indent) : close;
  ks_buf epi = KS_BUF_INIT;
  if (!close_indent)
    ks_buf_addc(&epi, '\n');
  if (!s->has_loop) {
    unsigned decl_end;
    const char *head = loop_head(ctx, w, s, &decl_end);
    if (!head) {
      ks_buf_release(&epi);
      return -1;
    }
    ks_edits_add(arena, e, s->decl_stmt->begin - vo, decl_end - vo, head);
    for (unsigned p = decl_end; p < at; p++)
      if (unit[p] == '\n' && p + 1 < at && unit[p + 1] != '\n')
        ks_edits_add(arena, e, p + 1 - vo, p + 1 - vo, I);
    for (size_t i = 0; i < f->returns.len; i++)
      ks_edits_add(arena, e, f->returns.items[i]->begin - vo, f->returns.items[i]->begin + 6 - vo,
                   "continue");
    ks_buf_addf(&epi, "%s}\n", I);
  }
  ks_buf_addf(&epi, "%s__syncthreads();\n", I);
  ks_buf_addf(&epi, "%sfor (unsigned %s = %s; %s < %s; %s += %s) {\n", I, bin, tid, bin, n, bin,
              nthreads);
  ks_buf_addf(&epi, "%s%s%s %s = %s[%s];\n", I, I, elem, count, hist, bin);
  ks_buf_addf(&epi, "%s%sif (%s != 0)\n", I, I, count);
  ks_buf_addf(&epi, "%s%s%satomicAdd(&%s[%s], %s);\n%s}\n", I, I, I, bins->name, bin, count, I);
  ks_edits_add(arena, e, at - vo, at - vo, ks_arena_strdup(arena, epi.data));
  ks_buf_release(&epi);
  return 0;
}

static int hist_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                      ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param < 1 || param > 64)
    return ks_smem_no(out, arena, "blocks per SM must be 1 to 64, not %d", param);
  ks_smem_rewrite w;
  ks_smem_facts f;
  const char *refusal = ks_smem_refusal(in, arena, &w, &f);
  if (refusal)
    return ks_smem_no(out, arena, "%s", refusal);
  if (!f.atomics.len)
    return ks_smem_no(out, arena, "has no atomicAdd into a histogram");
  if (f.stores.len)
    return ks_smem_no(out, arena, "writes memory other than through atomicAdd ('%s')",
                      ks_rt_text_of(arena, in, f.stores.items[0]));

  /* Every atomicAdd: into one integer buffer, result unused. */
  const ks_anode *bins = NULL;
  ks_rt_nodes bin_refs = {0};
  long long nbins = -1;
  for (size_t i = 0; i < f.atomics.len; i++) {
    const ks_anode *a = f.atomics.items[i];
    if (a->nkids != 2)
      return ks_smem_no(out, arena, "calls atomicAdd with %zu arguments", a->nkids);
    const ks_anode *addr = ks_anode_strip(a->kids[0], false), *ref = NULL, *key = NULL, *p = NULL;
    if (addr && addr->kind == KS_AK_UNARY && addr->op && !strcmp(addr->op, "&") && addr->nkids == 1) {
      const ks_anode *s = ks_anode_strip(addr->kids[0], false);
      if (s && s->kind == KS_AK_SUBSCRIPT)
        p = ks_smem_param_access(s, &ref, &key);
    } else if (addr && addr->kind == KS_AK_BINARY) {
      p = ks_smem_param_access(addr, &ref, &key);
    }
    if (!p)
      return ks_smem_no(out, arena, "adds into '%s', not into bins[key] of a buffer parameter",
                        ks_rt_text_of(arena, in, a->kids[0]));
    if (bins && p != bins)
      return ks_smem_no(out, arena, "adds into two buffers ('%s' and '%s')", bins->name, p->name);
    bins = p;
    if (!result_unused(a))
      return ks_smem_no(out, arena, "uses the value atomicAdd returns");
    if (ref->from_macro)
      return ks_smem_no(out, arena, "names its bins in a macro");
    *ks_array_push(arena, &bin_refs) = ref;
    long long kb = key_bins(arena, key);
    nbins = nbins < 0 ? kb : (kb == 0 || nbins == 0 ? 0 : (kb > nbins ? kb : nbins));
  }
  for (size_t i = 0; i < f.pointer_refs.len; i++)
    if (f.pointer_refs.items[i]->decl == bins) {
      bool ours = false;
      for (size_t k = 0; k < bin_refs.len; k++)
        ours = ours || bin_refs.items[k] == f.pointer_refs.items[i];
      if (!ours)
        return ks_smem_no(out, arena, "uses '%s' other than as atomicAdd's target", bins->name);
    }
  const ks_wbuffer *wb = NULL;
  for (size_t i = 0; in->timed && i < in->timed->buffers.len; i++)
    if (!strcmp(in->timed->buffers.items[i].name, bins->name))
      wb = &in->timed->buffers.items[i];
  if (!wb)
    return ks_smem_no(out, arena, "the spec has no buffer '%s'", bins->name);
  if (wb->dtype != KS_DT_I32 && wb->dtype != KS_DT_U32 && wb->dtype != KS_DT_U64)
    return ks_smem_no(out, arena, "its bins are %s (shared-memory atomicAdd here: i32, u32, u64)",
                      ks_dtype_name(wb->dtype));
  if (!bins->pointee)
    return ks_smem_no(out, arena, "the type of '%s' is unknown", bins->name);
  const char *elem = ks_smem_unqualified(arena, bins->pointee);
  size_t esize = ks_dtype_size(wb->dtype);

  hist_shape s = {0};
  const char *why = NULL;
  const ks_anode *body = in->ast->body;
  for (size_t k = 0; k < body->nkids; k++)
    if (body->kids[k] && body->kids[k]->kind == KS_AK_FOR && body->kids[k]->nkids == 4) {
      hist_shape t = {0};
      if (!hist_grid_loop(&f, body->kids[k], &t)) {
        s = t;
        break;
      }
    }
  if (!s.has_loop && (why = hist_straight(&w, &f, &s)))
    return ks_smem_no(out, arena, "%s", why);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return ks_smem_no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  unsigned limit = in->max_smem_per_block ? in->max_smem_per_block : 49152;
  bool dynamic = nbins <= 0 || (unsigned long long)nbins * esize > limit;
  const char *cover = NULL;
  const char *grid = ks_arena_printf(arena, "min(%s, %u)", pol.grid[0], in->sm_count * (unsigned)param);
  const char *no_wrap = NULL;
  if (!s.has_loop) {
    cover = ks_smem_cover_guard(&w, pol.grid[0], pol.block[0], &s.bound);
    if (!ks_rt_guard_evaluates(in, cover))
      return ks_smem_no(out, arena,
                        "its bound '%s' is not an expression of the launch and the scalar "
                        "parameters",
                        ks_rt_text_of(arena, in, ks_anode_strip(s.bound.bound, false)));
    /* A narrow index must not wrap when it steps past the bound. */
    ks_dtype it;
    if (s.index->type && ks_dtype_from_c(ks_smem_unqualified(arena, s.index->type), &it) &&
        !ks_dtype_is_float(it) && ks_dtype_size(it) < 8) {
      bool is_signed = it == KS_DT_I8 || it == KS_DT_I16 || it == KS_DT_I32;
      long long max = (1ll << (8 * ks_dtype_size(it) - (is_signed ? 1 : 0))) - 1;
      no_wrap = ks_arena_printf(
          arena, "%s + %s * %s <= %lld",
          ks_smem_operand(arena, ks_rt_text_of(arena, in, ks_anode_strip(s.bound.bound, false))),
          grid, ks_smem_operand(arena, pol.block[0]), max);
    }
  }

  ks_edits e = {0};
  if (hist_edits(ctx, &w, &f, &s, bins, &bin_refs, elem, dynamic ? 0 : nbins, &e))
    return -1;

  ks_rule_child_init(arena, in, &out->child);
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  pol.grid[0] = grid;
  if (dynamic)
    pol.smem = ks_arena_printf(arena, "len_%s * %zu", bins->name, esize);
  ks_rule_policy_write(arena, &pol, &out->child);
  if (dynamic)
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "len_%s * %zu <= %u", bins->name, esize, limit));
  if (cover)
    ks_rule_require(arena, &out->child, cover);
  if (no_wrap)
    ks_rule_require(arena, &out->child, no_wrap);
  out->applied = true;
  out->technique = ks_arena_printf(arena, "smem_hist=%d", param);
  return 0;
}

static const int hist_choices[] = {2, 4, 8, 16};

const ks_rule ks_rule_smem_histogram = {
    "smem_histogram",
    "atomicAdd histogram: private bins per block in shared memory, grid-stride loop "
    "(param: blocks per SM)",
    false,
    hist_choices,
    sizeof hist_choices / sizeof *hist_choices,
    hist_apply,
};
