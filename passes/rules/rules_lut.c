/* rules_lut: lookup_table, a pure math expression of one 8-bit value
 * (a byte of an image, a char of a sequence) computed in a loop, replaced
 * by a table of its 256 results that each block fills once in shared
 * memory:
 *
 *   for (dy = -2; dy <= 2; dy++)             __shared__ float ks_lut[256];
 *     for (dx = -2; dx <= 2; dx++)           for (int ks_t = <thread>; ks_t < 256; ks_t += <threads>) {
 *       s += logf(1.0f + img[..]);             const unsigned char ks_b = (unsigned char)ks_t;
 *                                              ks_lut[ks_t] = logf(1.0f + ks_b);
 *                                            }
 *                                            __syncthreads();
 *                                            ...
 *                                                s += ks_lut[(unsigned char)(img[..])];
 *
 * The value range is the type's: an 8-bit integer takes 256 values, so
 * the table answers every input, whatever the data (no guard on the
 * data, which no launch can check). Each entry is the same expression
 * evaluated on the same value in the same precision, so the result is the
 * original's bit for bit (up to the compiler contracting a multiply-add
 * differently in the two places).
 *
 * What the expression may hold besides the byte (one value, written the
 * same way wherever it occurs): literals, scalar parameters the kernel
 * never assigns (the same for every thread of the block), arithmetic
 * (no integer division: the table would evaluate it on 256 values the
 * data may never hold, 0 among them), casts and CUDA's pure math
 * functions (rules_invariant.h). It must hold at least one math call, sit
 * inside a loop (once per thread, the table costs what it saves) and be
 * float or double. The fill runs at the top of the kernel, where every
 * thread of the block still is, so its __syncthreads is reached by all. */
#include <string.h>

#include "ks_buf.h"
#include "rules_invariant.h"

/* A type without its leading const and volatile. */
static const char *unqualified(const char *t) {
  for (bool more = t != NULL; more;) {
    more = false;
    if (!strncmp(t, "const ", 6))
      t += 6, more = true;
    if (!strncmp(t, "volatile ", 9))
      t += 9, more = true;
  }
  return t;
}

/* An 8-bit integer type, as the compiler sees it. */
static bool byte_type(const char *t) {
  t = unqualified(t);
  return t && (!strcmp(t, "unsigned char") || !strcmp(t, "signed char") || !strcmp(t, "char"));
}

/* The table's element type: the expression's, float or double. */
static const char *value_type(const ks_anode *e) {
  const char *t = unqualified(e->canon_type ? e->canon_type : e->type);
  return t && (!strcmp(t, "float") || !strcmp(t, "double")) ? t : NULL;
}

typedef struct lut_walk {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *body;      /* the kernel's body: where parameters must stay put */
  const ks_anode *byte;      /* the 8-bit value of the expression being read */
  const char *byte_text;     /* its text, squeezed */
  unsigned calls;            /* pure math calls in it */
  const char *why;           /* the first reason an expression is no table */
} lut_walk;

/* An 8-bit value the table can stand for: a read p[i] or *p whose element
 * is 8-bit, or a name of an 8-bit type; nothing in it assigns or calls. */
static bool byte_source(lut_walk *w, const ks_anode *n) {
  const char *t = n->canon_type ? n->canon_type : n->type;
  if (!byte_type(t))
    return false;
  if (n->kind != KS_AK_SUBSCRIPT && n->kind != KS_AK_DECL_REF && !ks_rt_is_op(n, KS_AK_UNARY, "*"))
    return false;
  ks_rt_nodes all = ks_rt_collect(w->arena, n);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *x = all.items[i];
    if (x->kind == KS_AK_CALL || ks_rt_is_assignment(x) || ks_rt_is_op(x, KS_AK_UNARY, "++") ||
        ks_rt_is_op(x, KS_AK_UNARY, "--"))
      return false;
  }
  return true;
}

/* Is `n` made of the byte, uniform names, literals, arithmetic and pure
 * math only? */
static bool tabulable(lut_walk *w, const ks_anode *n) {
  if (!n || n->from_macro)
    return false;
  if (byte_source(w, n)) {
    const char *text = ks_inv_squeezed(w->arena, w->in, n);
    if (w->byte && strcmp(text, w->byte_text)) {
      if (!w->why)
        w->why = ks_arena_printf(w->arena, "it depends on two 8-bit values ('%s' and '%s')",
                                 w->byte_text, text);
      return false;
    }
    w->byte = n;
    w->byte_text = text;
    return true;
  }
  switch (n->kind) {
  case KS_AK_INT_LITERAL:
  case KS_AK_FLOAT_LITERAL:
    return true;
  case KS_AK_DECL_REF:
    if (n->decl && n->decl->kind == KS_AK_PARAM && !n->decl->is_pointer &&
        !ks_rt_modified(w->body, n->decl))
      return true;
    if (!w->why)
      w->why = ks_arena_printf(w->arena, "it depends on '%s', which is neither an 8-bit value nor "
                                         "a scalar parameter the kernel leaves alone",
                               n->name ? n->name : "?");
    return false;
  case KS_AK_CALL:
    if (!ks_inv_pure_math(ks_rt_callee(w->arena, n)))
      return false;
    w->calls++;
    break;
  case KS_AK_PAREN:
  case KS_AK_CAST:
    break;
  case KS_AK_UNARY:
    if (!n->op || (strcmp(n->op, "-") && strcmp(n->op, "+")))
      return false;
    break;
  case KS_AK_BINARY: {
    static const char *const ops[] = {"+", "-", "*", "/"};
    bool ok = false;
    for (size_t k = 0; k < sizeof ops / sizeof *ops && !ok; k++)
      ok = n->op && !strcmp(n->op, ops[k]);
    if (!ok || (!strcmp(n->op, "/") && !value_type(n))) {
      if (!w->why && ok)
        w->why = ks_arena_printf(w->arena, "it divides integers ('%s'), which the table would do "
                                           "for byte values the data may never hold",
                                 ks_rt_text_of(w->arena, w->in, n));
      return false;
    }
    break;
  }
  default:
    if (!ks_rt_is_wrapper(n))
      return false;
  }
  for (size_t k = 0; k < n->nkids; k++)
    if (!ks_rt_is_ref_node(n->kids[k]) && !tabulable(w, n->kids[k]))
      return false;
  return true;
}

typedef struct table {
  const ks_anode *expr;      /* the first occurrence */
  const char *text;          /* squeezed, to share one table among equal ones */
  const ks_anode *byte;
  const char *name;
} table;

typedef KS_ARRAY(table) tables;

typedef struct found {
  const ks_anode *expr, *byte;
  const table *tab;
} found;

typedef KS_ARRAY(found) founds;

typedef struct find_state {
  lut_walk w;
  tables *tabs;
  founds *uses;
  bool saw_math;
  const char *why;
} find_state;

/* The largest tabulable expressions with a math call below `n`. */
static void find_tables(find_state *fs, const ks_anode *n) {
  if (!n)
    return;
  if (n->kind == KS_AK_CALL || n->kind == KS_AK_BINARY || n->kind == KS_AK_UNARY ||
      n->kind == KS_AK_PAREN || n->kind == KS_AK_CAST) {
    if (n->kind == KS_AK_CALL && ks_inv_pure_math(ks_rt_callee(fs->w.arena, n)))
      fs->saw_math = true;
    lut_walk w = fs->w;
    w.byte = NULL;
    w.byte_text = NULL;
    w.calls = 0;
    w.why = NULL;
    bool ok = tabulable(&w, n) && w.calls && w.byte && value_type(n) && n->kind != KS_AK_PAREN;
    if (ok) {
      const char *text = ks_inv_squeezed(w.arena, w.in, n);
      const table *tab = NULL;
      for (size_t i = 0; i < fs->tabs->len && !tab; i++)
        if (!strcmp(fs->tabs->items[i].text, text))
          tab = &fs->tabs->items[i];
      if (!tab) {
        table *t = ks_array_push(w.arena, fs->tabs);
        t->expr = n;
        t->text = text;
        t->byte = w.byte;
        tab = t;
      }
      found *f = ks_array_push(w.arena, fs->uses);
      f->expr = n;
      f->byte = w.byte;
      f->tab = tab;
      return;
    }
    if (n->kind == KS_AK_CALL && !fs->why && ks_inv_pure_math(ks_rt_callee(w.arena, n))) {
      /* No 8-bit value at all says more than what stopped the walk. */
      bool any_byte = false;
      ks_rt_nodes all = ks_rt_collect(w.arena, n);
      for (size_t i = 0; i < all.len && !any_byte; i++)
        any_byte = byte_source(&w, all.items[i]);
      fs->why = !any_byte ? ks_arena_printf(w.arena, "%s reads no 8-bit value (a byte or char: "
                                                     "256 values a table can hold)",
                                            ks_rt_text_of(w.arena, w.in, n))
                : w.why ? ks_arena_printf(w.arena, "%s: %s", ks_rt_text_of(w.arena, w.in, n), w.why)
                        : NULL;
    }
  }
  for (size_t k = 0; k < n->nkids; k++)
    find_tables(fs, n->kids[k]);
}

static bool visit_loop(ks_anode *n, void *arg) {
  find_state *fs = arg;
  if (!ks_inv_is_loop(n) || n->from_macro)
    return true;
  ks_rt_nodes parts = ks_inv_loop_parts(fs->w.arena, n);
  for (size_t k = 0; k < parts.len; k++)
    find_tables(fs, parts.items[k]);
  return false; /* find_tables went through the loops inside */
}

/* Replaces the table's byte by the entry's value. */
typedef struct entry_render {
  const ks_anode *byte_of_table;
  const char *text;          /* the byte's squeezed text */
  const ks_rule_input *in;
  ks_arena *arena;
  const char *value;
} entry_render;

static const char *replace_byte(const ks_anode *n, void *arg) {
  entry_render *r = arg;
  if (n->kind != KS_AK_SUBSCRIPT && n->kind != KS_AK_DECL_REF && n->kind != KS_AK_UNARY)
    return NULL;
  return !strcmp(ks_inv_squeezed(r->arena, r->in, n), r->text) ? r->value : NULL;
}

static int apply_lookup_table(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                              ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  const ks_anode *body = in->ast->body;
  if (!body || body->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its code is outside the variant");
  tables tabs = {0};
  founds uses = {0};
  find_state fs = {.w = {.arena = arena, .in = in, .body = body}, .tabs = &tabs, .uses = &uses};
  ks_anode_walk((ks_anode *)body, visit_loop, &fs);
  if (!uses.len)
    return ks_rt_not_applicable(arena, out, "%s",
                                fs.why      ? ks_arena_printf(arena, "no table: %s", fs.why)
                                : fs.saw_math ? "no math call in a loop is a function of one 8-bit "
                                                "value"
                                              : "no math function is called inside a loop");
  size_t bytes = 0;
  for (size_t i = 0; i < tabs.len; i++)
    bytes += 256 * (strcmp(value_type(tabs.items[i].expr), "double") ? 4 : 8);
  if (bytes > 16384)
    return ks_rt_not_applicable(arena, out, "its %zu tables would take %zu bytes of shared memory",
                                tabs.len, bytes);

  /* The fill, at the top of the body: every thread of the block is there. */
  const char *src = in->parent->source;
  const char *ind = ks_rt_indent_step(arena, in);
  const char *names = src;
  ks_buf b = KS_BUF_INIT;
  const char *t = ks_rt_fresh(arena, src, "ks_t");
  const char *bv = ks_rt_fresh(arena, src, "ks_b");
  ks_buf_addf(&b, "\n%s// lookup_table: %zu table%s of 256 entries, filled by the block\n", ind,
              tabs.len, tabs.len == 1 ? "" : "s");
  for (size_t i = 0; i < tabs.len; i++) {
    table *tab = &tabs.items[i];
    tab->name = ks_rt_fresh(arena, names, "ks_lut");
    names = ks_arena_printf(arena, "%s %s", names, tab->name);
    ks_buf_addf(&b, "%s__shared__ %s %s[256];\n", ind, value_type(tab->expr), tab->name);
  }
  ks_buf_addf(&b,
              "%sfor (int %s = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); "
              "%s < 256;\n%s     %s += blockDim.x * blockDim.y * blockDim.z) {\n",
              ind, t, t, ind, t);
  for (size_t i = 0; i < tabs.len; i++) {
    table *tab = &tabs.items[i];
    const char *btype = unqualified(tab->byte->canon_type ? tab->byte->canon_type : tab->byte->type);
    entry_render r = {tab->byte, ks_inv_squeezed(arena, in, tab->byte), in, arena, bv};
    const char *entry = ks_rt_render_str(arena, in->unit, tab->expr, replace_byte, &r);
    ks_buf_addf(&b, "%s%s{\n%s%s%sconst %s %s = (%s)%s;\n%s%s%s%s[%s] = %s;\n%s%s}\n", ind, ind, ind,
                ind, ind, btype, bv, btype, t, ind, ind, ind, tab->name, t, entry, ind, ind);
  }
  ks_buf_addf(&b, "%s}\n%s__syncthreads();\n", ind, ind);
  ks_edits e = {0};
  ks_edits_add(arena, &e, ks_rt_src_at(in, body->begin + 1), ks_rt_src_at(in, body->begin + 1),
               ks_arena_strdup(arena, b.data));
  ks_buf_release(&b);
  for (size_t i = 0; i < uses.len; i++) {
    const found *f = &uses.items[i];
    ks_edits_add(arena, &e, ks_rt_src_at(in, f->expr->begin), ks_rt_src_at(in, f->expr->end),
                 ks_arena_printf(arena, "%s[(unsigned char)(%s)]", f->tab->name,
                                 ks_rt_text_of(arena, in, f->byte)));
  }
  return ks_rt_finish(ctx, in, arena, &e, ks_arena_printf(arena, "lookup_table=%zu", tabs.len), out);
}

const ks_rule ks_rule_lookup_table = {
    "lookup_table",
    "a pure math expression of one 8-bit value (a byte or char read in a loop) replaced by a "
    "256-entry table in shared memory that each block fills once",
    false,
    NULL,
    0,
    apply_lookup_table};
