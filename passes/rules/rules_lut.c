/* rules_lut: lookup_table, a pure math expression of one integer value
 * (a byte of an image, a char of a sequence, a histogram count) computed in
 * a loop, replaced by a table of its results that each block fills once in
 * shared memory:
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
 * An 8-bit value takes 256 values: the table answers every input, whatever
 * the data (no guard on the data, which no launch can check). A wider
 * integer (a count, a short sample, an int pixel) is looked up where it
 * lies in [0, N), N the parameter (256, 1024 or 4096 entries), and
 * computed as written elsewhere:
 *
 *   e -= p * log2f(p);    ->   e -= ((unsigned long long)(ks_key) < 1024 ? ks_lut[ks_key] : (p * log2f(p)));
 *
 * so the result never depends on the data's range; what the range decides,
 * the judge measures on the user's data (a capture holds it).
 *
 * A float or double read from a kernel buffer (p[i] or *p, p a pointer
 * parameter) is a value too where the timed workload shows that buffer to
 * hold integers in [0, 4096) (ks_wbuffer.ints_*: a spec's int(0, 255), or a
 * capture's snapshot of an 8-bit image kept as floats): its table is looked
 * up where the value is one of the table's integers, tested before any
 * conversion (a float out of int's range converts to nothing defined) and
 * with its sign bit (f(-0.0) may differ from f(+0.0): 1/x, copysign):
 *
 *   float v = img[i];      ->   float v = img[i];
 *                               const float ks_key = img[i];
 *   s += logf(1.0f + v);        s += (!signbit(ks_key) && ks_key < 256.0f && (float)(int)ks_key == ks_key
 *                                     ? ks_lut[(int)ks_key] : (logf(1.0f + v)));
 *
 * and computed as written for anything else (NaN, infinities, 0.5, -1,
 * 1e30), so the evidence only decides whether the variant is worth
 * proposing, never what it computes. Read directly, p[i] itself is
 * repeated in the guard (it has no side effect). The table's N must cover
 * the largest integer the evidence shows (a smaller one would send the
 * values the data is said to hold down the slow branch): the first choice
 * that does is the one `rewrite --rule lookup_table` takes. Without
 * evidence (no spec or capture, a spec's uniform(1, 2), a snapshot holding
 * 0.5 or NaN) a float is no value, and the refusal says which read lacks
 * it.
 *
 * Each entry is the same expression evaluated on the same value in the same
 * precision (a float key's on (float)ks_t, exactly the value the key holds),
 * so the result is the original's bit for bit (up to the compiler
 * contracting a multiply-add differently in the two places).
 *
 * What the expression may hold besides the value (one value, written the
 * same way wherever it occurs): literals, scalar parameters the kernel
 * never assigns (the same for every thread of the block), arithmetic (no
 * integer division: the table would evaluate it on values the data may
 * never hold, 0 among them), casts, CUDA's pure math functions
 * (rules_invariant.h), and a local the kernel declares once with such an
 * expression and never assigns again (`float p = count[k] / 25.0f;` then
 * `p * log2f(p)`): the entry computes the local from the table's value,
 * and the value is kept beside the local's declaration (`const int ks_key
 * = count[k];`) for the lookup. It must hold at least one math call, sit
 * inside a loop (once per thread, the table costs what it saves) and be
 * float or double. The fill runs at the top of the kernel, where every
 * thread of the block still is, so its __syncthreads is reached by all. */
#include <string.h>

#include "ks_buf.h"
#include "rules_invariant.h"

/* The largest table's entries: a float's integers must lie below. */
enum { LUT_MAX = 4096 };

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

/* The table's keys: 8 for an 8-bit integer type (256 values, the table
 * holds them all), 1 for a wider integer type (the table holds [0, N)),
 * 0 for anything else; as the compiler sees the type. */
static int key_kind(const char *t) {
  static const char *const wide[] = {"short", "unsigned short", "int", "unsigned int", "long",
                                     "unsigned long", "long long", "unsigned long long"};
  t = unqualified(t);
  if (!t)
    return 0;
  if (!strcmp(t, "unsigned char") || !strcmp(t, "signed char") || !strcmp(t, "char"))
    return 8;
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
    if (!strcmp(t, wide[i]))
      return 1;
  return 0;
}

static const char *type_of(const ks_anode *n) { return n->canon_type ? n->canon_type : n->type; }

/* The table's element type: the expression's, float or double. */
static const char *value_type(const ks_anode *e) {
  const char *t = unqualified(type_of(e));
  return t && (!strcmp(t, "float") || !strcmp(t, "double")) ? t : NULL;
}

typedef struct lut_walk {
  ks_arena *arena;
  const ks_rule_input *in;
  const ks_anode *body;      /* the kernel's body: where parameters must stay put */
  const ks_anode *key;       /* the integer value of the expression being read */
  const char *key_text;      /* its text, squeezed */
  const ks_anode *local;     /* the local the key was read through, or NULL */
  bool in_local;             /* reading that local's initializer */
  unsigned calls;            /* pure math calls in it */
  const char *why;           /* the first reason an expression is no table */
  bool assume_floats;        /* take a float read the workload says nothing
                                of for a value: would it be a table, but
                                for the evidence? (the reason to give) */
} lut_walk;

/* A scalar parameter the kernel never assigns: the same for every thread. */
static bool uniform_param(const lut_walk *w, const ks_anode *n) {
  return n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_PARAM &&
         !n->decl->is_pointer && !ks_rt_modified(w->body, n->decl);
}

/* The pointer parameter a read p[i] or *p reads through, one the kernel
 * never points elsewhere (its buffer is the workload's), or NULL. */
static const ks_anode *read_param(const lut_walk *w, const ks_anode *n) {
  if (n->kind != KS_AK_SUBSCRIPT && !ks_rt_is_op(n, KS_AK_UNARY, "*"))
    return NULL;
  const ks_anode *p = n->nkids ? ks_rt_strip(n->kids[0], false) : NULL;
  if (!p || p->kind != KS_AK_DECL_REF || !p->decl || p->decl->kind != KS_AK_PARAM ||
      !p->decl->is_pointer || ks_rt_modified(w->body, p->decl))
    return NULL;
  return p->decl;
}

/* Why the values of `n`, a float or double read through parameter `p`,
 * are no table's keys; NULL when the timed workload shows its buffer to
 * hold integers in [0, LUT_MAX) (*hi, may be NULL: the largest). */
static const char *float_key_problem(const lut_walk *w, const ks_anode *p, const ks_anode *n,
                                     double *hi) {
  const ks_rule_input *in = w->in;
  const char *what = strcmp(value_type(n), "double") ? "a float" : "a double";
  if (in->no_sizes || !in->timed)
    return ks_arena_printf(w->arena, "%s, and without a spec or capture nothing shows it to hold "
                                     "small integers",
                           what);
  const ks_wbuffer *b = NULL;
  for (size_t i = 0; i < in->ast->nparams && i < in->timed->args.len && !b; i++) {
    const ks_warg *a = &in->timed->args.items[i];
    if (in->ast->params[i] == p && a->kind == KS_ARG_BUFFER && a->buffer < in->timed->buffers.len)
      b = &in->timed->buffers.items[a->buffer];
  }
  /* A buffer of other elements (a capture's allocation shared by
   * parameters of several types is bytes) says nothing of these. */
  ks_dtype want = strcmp(value_type(n), "double") ? KS_DT_F32 : KS_DT_F64;
  if (!b || b->dtype != want || !b->ints_known)
    return ks_arena_printf(w->arena, "%s the spec or capture does not show to hold small integers",
                           what);
  if (b->ints_lo < 0 || b->ints_hi >= LUT_MAX)
    return ks_arena_printf(w->arena, "%s whose integers (%.17g to %.17g, the spec or capture "
                                     "says) lie outside the largest table's [0, %d)",
                           what, b->ints_lo, b->ints_hi, LUT_MAX);
  if (hi)
    *hi = b->ints_hi;
  return NULL;
}

/* A value the table can stand for, nothing in it assigning or calling: a
 * read p[i] or *p whose element is an integer, or a name of an integer
 * type; or a float or double read from a kernel buffer that the workload
 * shows to hold small integers. */
static bool key_source(lut_walk *w, const ks_anode *n) {
  const char *t = type_of(n);
  bool floating = !key_kind(t) && value_type(n) && n->kind != KS_AK_DECL_REF;
  /* volatile: each read may differ, and the lookup reads the value again */
  if (!t || (!key_kind(t) && !floating) || strstr(t, "volatile") || uniform_param(w, n))
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
  if (!floating)
    return true;
  const ks_anode *p = read_param(w, n);
  return p && (w->assume_floats || !float_key_problem(w, p, n, NULL));
}

static bool tabulable(lut_walk *w, const ks_anode *n);

/* A local declared alone with an initializer, never assigned again, of an
 * arithmetic type: the expression may read it as its initializer. */
static bool local_alias(lut_walk *w, const ks_anode *ref) {
  const ks_anode *var = ref->decl, *init = var ? ks_rt_var_init(var) : NULL;
  const ks_anode *stmt = var ? var->parent : NULL;
  if (!init || var->kind != KS_AK_VAR || var->is_pointer || var->shared_space || !stmt ||
      stmt->kind != KS_AK_DECL_STMT || ks_rt_single_var(stmt) != var || !stmt->parent ||
      stmt->parent->kind != KS_AK_COMPOUND || ks_rt_modified(w->body, var) ||
      (!value_type(var) && !key_kind(type_of(var))))
    return false;
  if (w->in_local || (w->local && w->local != var) || (w->key && !w->local)) {
    if (!w->why)
      w->why = ks_arena_printf(w->arena, "it reads '%s' beside another value", ref->name);
    return false;
  }
  bool fresh = !w->local;
  w->local = var;
  w->in_local = true;
  bool ok = fresh ? tabulable(w, init) : true;
  w->in_local = false;
  return ok;
}

/* Is `n` made of the value, uniform names, literals, arithmetic and pure
 * math only? */
static bool tabulable(lut_walk *w, const ks_anode *n) {
  if (!n || n->from_macro)
    return false;
  if (key_source(w, n)) {
    const char *text = ks_inv_squeezed(w->arena, w->in, n);
    if (w->key && (strcmp(text, w->key_text) || w->in_local != (w->local != NULL))) {
      if (!w->why)
        w->why = ks_arena_printf(w->arena, "it depends on two values ('%s' and '%s')",
                                 w->key_text, text);
      return false;
    }
    w->key = n;
    w->key_text = text;
    return true;
  }
  switch (n->kind) {
  case KS_AK_INT_LITERAL:
  case KS_AK_FLOAT_LITERAL:
    return true;
  case KS_AK_DECL_REF:
    if (uniform_param(w, n))
      return true;
    if (n->decl && n->decl->kind == KS_AK_VAR && local_alias(w, n))
      return true;
    if (!w->why)
      w->why = ks_arena_printf(w->arena, "it depends on '%s', which is neither an integer value, "
                                         "a local made of one, nor a scalar parameter the kernel "
                                         "leaves alone",
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
                                           "for values the data may never hold",
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
  const char *text;          /* squeezed (with the local's initializer): equal ones share */
  const ks_anode *key;
  const ks_anode *local;     /* the local the key is read through, or NULL */
  bool wide;                 /* not an 8-bit integer: [0, N) and the rest as written */
  bool floating;             /* the key is a float or double holding integers */
  double hi;                 /* floating: the largest the workload shows */
  const char *name;
} table;

typedef KS_ARRAY(table) tables;

typedef struct found {
  const ks_anode *expr, *key;
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

/* An integer value among n's operands (an index inside a subscript is no
 * operand: x[i + j] reads a float). */
static bool has_key(lut_walk *w, const ks_anode *n) {
  if (!n || key_source(w, n))
    return n != NULL;
  if (n->kind == KS_AK_SUBSCRIPT)
    return false;
  for (size_t k = 0; k < n->nkids; k++)
    if (has_key(w, n->kids[k]))
      return true;
  return false;
}

/* A walk over a new expression: base's kernel and input, nothing read yet. */
static lut_walk walk_from(const lut_walk *base) {
  return (lut_walk){.arena = base->arena, .in = base->in, .body = base->body,
                    .assume_floats = base->assume_floats};
}

/* Why math call `n` is no table when it would be one if its float read
 * held small integers: "logf(x[i]) reads 'x[i]', a float the spec or
 * capture does not show to hold small integers"; else NULL. */
static const char *unproven_float(const lut_walk *base, const ks_anode *n) {
  lut_walk w = walk_from(base);
  w.assume_floats = true;
  if (!tabulable(&w, n) || !w.key || !value_type(n) || key_kind(type_of(w.key)))
    return NULL;
  const char *why = float_key_problem(&w, read_param(&w, w.key), w.key, NULL);
  return why ? ks_arena_printf(w.arena, "%s reads '%s', %s", ks_rt_text_of(w.arena, w.in, n),
                               ks_rt_text_of(w.arena, w.in, w.key), why)
             : NULL;
}

/* The largest tabulable expressions with a math call below `n`. */
static void find_tables(find_state *fs, const ks_anode *n) {
  if (!n)
    return;
  if (n->kind == KS_AK_CALL || n->kind == KS_AK_BINARY || n->kind == KS_AK_UNARY ||
      n->kind == KS_AK_PAREN || n->kind == KS_AK_CAST) {
    if (n->kind == KS_AK_CALL && ks_inv_pure_math(ks_rt_callee(fs->w.arena, n)))
      fs->saw_math = true;
    lut_walk w = walk_from(&fs->w);
    bool ok = tabulable(&w, n) && w.key && value_type(n) && n->kind != KS_AK_PAREN;
    /* A math call in the local's initializer counts as one here. */
    if (ok && !w.calls && w.local) {
      ks_rt_nodes all = ks_rt_collect(w.arena, ks_rt_var_init(w.local));
      for (size_t i = 0; i < all.len; i++)
        w.calls += all.items[i]->kind == KS_AK_CALL;
    }
    if (ok && w.calls) {
      const char *text = ks_inv_squeezed(w.arena, w.in, n);
      if (w.local)
        text = ks_arena_printf(w.arena, "%s|%s=%s", text, w.local->name,
                               ks_inv_squeezed(w.arena, w.in, ks_rt_var_init(w.local)));
      const table *tab = NULL;
      for (size_t i = 0; i < fs->tabs->len && !tab; i++)
        if (!strcmp(fs->tabs->items[i].text, text))
          tab = &fs->tabs->items[i];
      if (!tab) {
        table *t = ks_array_push(w.arena, fs->tabs);
        t->expr = n;
        t->text = text;
        t->key = w.key;
        t->local = w.local;
        t->wide = key_kind(type_of(w.key)) != 8;
        t->floating = !key_kind(type_of(w.key));
        t->hi = 0;
        if (t->floating)
          float_key_problem(&w, read_param(&w, w.key), w.key, &t->hi);
        tab = t;
      }
      found *f = ks_array_push(w.arena, fs->uses);
      f->expr = n;
      f->key = w.key;
      f->tab = tab;
      return;
    }
    if (n->kind == KS_AK_CALL && !fs->why && ks_inv_pure_math(ks_rt_callee(w.arena, n))) {
      /* A table but for the evidence of a float's values says what is
       * missing; no integer value at all says more than what stopped the
       * walk. */
      const char *unproven = unproven_float(&fs->w, n);
      fs->why = unproven ? unproven
                : !has_key(&w, n) ? ks_arena_printf(w.arena, "%s reads no integer value (a table "
                                                              "holds the results for an integer's "
                                                              "values)",
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

/* Replaces the table's value by the entry's, and the local it may be read
 * through by its initializer so rendered. */
typedef struct entry_render {
  const char *text;          /* the key's squeezed text */
  const ks_anode *local;
  const char *local_value;   /* "((float)(<initializer on the entry's value>))" */
  const ks_rule_input *in;
  ks_arena *arena;
  const char *value;
} entry_render;

static const char *replace_key(const ks_anode *n, void *arg) {
  entry_render *r = arg;
  if (r->local && n->kind == KS_AK_DECL_REF && n->decl == r->local)
    return r->local_value;
  if (n->kind != KS_AK_SUBSCRIPT && n->kind != KS_AK_DECL_REF && n->kind != KS_AK_UNARY)
    return NULL;
  return !strcmp(ks_inv_squeezed(r->arena, r->in, n), r->text) ? r->value : NULL;
}

static const int lut_choices[] = {256, 1024, LUT_MAX};

/* The lookup of float or double `key` (a side-effect-free read or a
 * constant: it is read several times) in table `name` of `n` entries:
 * the entry where the key is +0.0 or a positive integer below n, the
 * expression as written for every other value. The sign bit first:
 * -0.0 == 0 holds, and then the comparison against n, so that the
 * conversion to int only meets values it is defined for. */
static const char *float_lookup(ks_arena *arena, const char *type, const char *key, unsigned n,
                                const char *name, const char *expr) {
  const char *suffix = strcmp(type, "double") ? "f" : "";
  return ks_arena_printf(arena, "(!signbit(%s) && %s < %u.0%s && (%s)(int)%s == %s ? %s[(int)%s] "
                                ": (%s))",
                         key, key, n, suffix, type, key, key, name, key, expr);
}

static int apply_lookup_table(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                              ks_rule_result *out) {
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
                                : fs.saw_math ? "no math call in a loop is a function of one "
                                                "integer value"
                                              : "no math function is called inside a loop");
  unsigned n = param > 0 ? (unsigned)param : 256;
  bool any_wide = false;
  size_t bytes = 0;
  for (size_t i = 0; i < tabs.len; i++) {
    any_wide |= tabs.items[i].wide;
    bytes += (tabs.items[i].wide ? n : 256) * (strcmp(value_type(tabs.items[i].expr), "double")
                                                   ? 4 : 8);
  }
  if (!any_wide && n != 256)
    return ks_rt_not_applicable(arena, out, "its tables are of 8-bit values, 256 entries each; "
                                            "%u entries are for wider integers",
                                n);
  /* A float's integers all in the table, or the values the data is said
   * to hold take the slow branch: the choices that cover them are made. */
  for (size_t i = 0; i < tabs.len; i++) {
    const table *tab = &tabs.items[i];
    if (!tab->floating || tab->hi < n)
      continue;
    unsigned cover = LUT_MAX;
    for (size_t c = sizeof lut_choices / sizeof *lut_choices; c-- > 0;)
      if (lut_choices[c] > tab->hi)
        cover = (unsigned)lut_choices[c];
    return ks_rt_not_applicable(arena, out, "'%s' holds integers up to %.17g (the spec or capture "
                                            "says), past a table of %u entries (lookup_table=%u "
                                            "covers them)",
                                ks_rt_text_of(arena, in, tab->key), tab->hi, n, cover);
  }
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
  unsigned most = any_wide ? n : 256;
  ks_buf_addf(&b, "\n%s// lookup_table: %zu table%s, filled by the block\n", ind, tabs.len,
              tabs.len == 1 ? "" : "s");
  for (size_t i = 0; i < tabs.len; i++) {
    table *tab = &tabs.items[i];
    tab->name = ks_rt_fresh(arena, names, "ks_lut");
    names = ks_arena_printf(arena, "%s %s", names, tab->name);
    ks_buf_addf(&b, "%s__shared__ %s %s[%u];\n", ind, value_type(tab->expr), tab->name,
                tab->wide ? n : 256);
  }
  ks_buf_addf(&b,
              "%sfor (int %s = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); "
              "%s < %u;\n%s     %s += blockDim.x * blockDim.y * blockDim.z) {\n",
              ind, t, t, most, ind, t);
  for (size_t i = 0; i < tabs.len; i++) {
    table *tab = &tabs.items[i];
    const char *ktype = unqualified(type_of(tab->key));
    entry_render r = {ks_inv_squeezed(arena, in, tab->key), NULL, NULL, in, arena, bv};
    if (tab->local) {
      const char *init = ks_rt_render_str(arena, in->unit, ks_rt_var_init(tab->local), replace_key,
                                          &r);
      r.local = tab->local;
      r.local_value = ks_arena_printf(arena, "((%s)(%s))", unqualified(type_of(tab->local)), init);
    }
    const char *entry = ks_rt_render_str(arena, in->unit, tab->expr, replace_key, &r);
    const char *open = !tab->wide && most != 256 ? ks_arena_printf(arena, "if (%s < 256) ", t) : "";
    ks_buf_addf(&b, "%s%s%s{\n%s%s%sconst %s %s = (%s)%s;\n%s%s%s%s[%s] = %s;\n%s%s}\n", ind, ind,
                open, ind, ind, ind, ktype, bv, ktype, t, ind, ind, ind, tab->name, t, entry, ind,
                ind);
  }
  ks_buf_addf(&b, "%s}\n%s__syncthreads();\n", ind, ind);
  ks_edits e = {0};
  ks_edits_add(arena, &e, ks_rt_src_at(in, body->begin + 1), ks_rt_src_at(in, body->begin + 1),
               ks_arena_strdup(arena, b.data));
  ks_buf_release(&b);

  /* A key read through a local is kept beside the local's declaration,
   * once per local, for the lookups. */
  const ks_anode **kept_for = ks_arena_alloc(arena, (tabs.len + 1) * sizeof *kept_for);
  const char **kept = ks_arena_alloc(arena, (tabs.len + 1) * sizeof *kept);
  size_t nkept = 0;
  for (size_t i = 0; i < uses.len; i++) {
    const found *f = &uses.items[i];
    const char *key = ks_rt_text_of(arena, in, f->key);
    if (f->tab->local) {
      size_t k = 0;
      while (k < nkept && kept_for[k] != f->tab->local)
        k++;
      if (k == nkept) {
        const ks_anode *stmt = f->tab->local->parent;
        kept_for[k] = f->tab->local;
        kept[k] = ks_rt_fresh(arena, names, "ks_key");
        names = ks_arena_printf(arena, "%s %s", names, kept[k]);
        const char *ktype = unqualified(type_of(f->key));
        unsigned end = ks_rt_stmt_end(in->unit, stmt);
        ks_edits_add(arena, &e, ks_rt_src_at(in, end), ks_rt_src_at(in, end),
                     ks_arena_printf(arena, "\n%sconst %s %s = %s;",
                                     ks_rt_line_indent(arena, in->unit, stmt->begin), ktype,
                                     kept[k], key));
        nkept++;
      }
      key = kept[k];
    }
    const char *expr = ks_rt_text_of(arena, in, f->expr);
    const char *look =
        f->tab->floating ? float_lookup(arena, value_type(f->tab->key), key, n, f->tab->name, expr)
        : f->tab->wide
            ? ks_arena_printf(arena, "((unsigned long long)(%s) < %u ? %s[%s] : (%s))", key, n,
                              f->tab->name, key, expr)
            : ks_arena_printf(arena, "%s[(unsigned char)(%s)]", f->tab->name, key);
    ks_edits_add(arena, &e, ks_rt_src_at(in, f->expr->begin), ks_rt_src_at(in, f->expr->end),
                 look);
  }
  return ks_rt_finish(ctx, in, arena, &e,
                      ks_arena_printf(arena, "lookup_table=%u", any_wide ? n : 256), out);
}

const ks_rule ks_rule_lookup_table = {
    "lookup_table",
    "a pure math expression of one integer value read in a loop (a byte, a char, a count, or a "
    "float pixel the spec or capture shows to hold integers in [0, 4096)) replaced by a table "
    "in shared memory that each block fills once: 256 entries for 8-bit values, else N "
    "entries (param) for [0, N) with other values computed as written",
    false,
    lut_choices,
    sizeof lut_choices / sizeof *lut_choices,
    apply_lookup_table};
