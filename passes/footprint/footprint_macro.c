/* footprint_macro: operators the tree leaves as "?".
 *
 * Inside a macro that uses another macro (`#define IDX(i, j) ((i) * N +
 * (j))`), the tree cannot read some operators. The outermost expansion
 * around such a node is expanded again from the unit's macros
 * (footprint_const.c), parsed as a C expression, and matched node for node
 * with the tree: the operators come from the match, and any difference
 * between the two shapes refuses. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "footprint_int.h"

typedef struct mnode {
  ks_akind kind;
  const char *op;   /* BINARY, COMPOUND_ASSIGN, UNARY */
  bool postfix;
  const char *name; /* DECL_REF (last component), MEMBER */
  struct mnode *kids[3];
  size_t nkids;
  bool is_sizeof;   /* OTHER: sizeof(...) */
  const fp_tok *num;   /* INT_LITERAL, FLOAT_LITERAL */
} mnode;

typedef struct mparser {
  fp_state *st;
  const fp_toks *t;
  size_t i;
  bool bad;
} mparser;

static const fp_tok *peek(mparser *p) { return p->i < p->t->len ? &p->t->items[p->i] : NULL; }

static bool accept(mparser *p, const char *s) {
  if (fp_tok_is(peek(p), s)) {
    p->i++;
    return true;
  }
  return false;
}

static mnode *mk(mparser *p, ks_akind kind, const char *op, size_t nkids, ...) {
  mnode *n = ks_arena_alloc(p->st->arena, sizeof *n);
  n->kind = kind;
  n->op = op;
  n->nkids = nkids;
  va_list ap;
  va_start(ap, nkids);
  for (size_t i = 0; i < nkids; i++) {
    n->kids[i] = va_arg(ap, mnode *);
    if (!n->kids[i])
      p->bad = true;
  }
  va_end(ap);
  return n;
}

static bool is_type_word(const fp_tok *t) {
  static const char *const words[] = {"int",    "unsigned", "signed", "long",   "short",
                                      "char",   "float",    "double", "bool",   "void",
                                      "const",  "volatile", "size_t", "ptrdiff_t", "half",
                                      "__half", "std"};
  if (!t || t->kind != T_IDENT)
    return false;
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (fp_tok_is(t, words[i]))
      return true;
  return t->n > 2 && !strncmp(t->s + t->n - 2, "_t", 2); /* int64_t, uint32_t ... */
}

static mnode *m_expr(mparser *p);
static mnode *m_assign(mparser *p);
static mnode *m_unary(mparser *p);

/* '(' type ')' at the cursor: the index after ')', or 0. */
static size_t cast_end(mparser *p) {
  size_t i = p->i;
  if (!fp_tok_is(peek(p), "("))
    return 0;
  size_t k = i + 1;
  bool any = false;
  for (; k < p->t->len && !fp_tok_is(&p->t->items[k], ")"); k++) {
    const fp_tok *x = &p->t->items[k];
    if (is_type_word(x))
      any = true;
    else if (!fp_tok_is(x, "*") && !fp_tok_is(x, "::"))
      return 0;
  }
  return any && k < p->t->len ? k + 1 : 0;
}

static mnode *m_primary(mparser *p) {
  const fp_tok *x = peek(p);
  if (!x) {
    p->bad = true;
    return NULL;
  }
  if (accept(p, "(")) {
    mnode *e = m_expr(p);
    if (!accept(p, ")"))
      p->bad = true;
    return mk(p, KS_AK_PAREN, NULL, 1, e);
  }
  if (x->kind == T_NUMBER) {
    p->i++;
    bool is_float = memchr(x->s, '.', x->n) ||
                    (!(x->n > 1 && (x->s[1] == 'x' || x->s[1] == 'X')) &&
                     (memchr(x->s, 'e', x->n) || memchr(x->s, 'E', x->n) || memchr(x->s, 'f', x->n)));
    mnode *n = mk(p, is_float ? KS_AK_FLOAT_LITERAL : KS_AK_INT_LITERAL, NULL, 0);
    n->num = x;
    return n;
  }
  if (fp_tok_is(x, "sizeof")) {
    p->i++;
    if (fp_tok_is(peek(p), "(")) {
      size_t close = fp_matching(p->t, p->i);
      p->i = close + 1;
    } else {
      m_unary(p);
    }
    mnode *n = mk(p, KS_AK_OTHER, NULL, 0);
    n->is_sizeof = true;
    return n;
  }
  if (x->kind == T_IDENT && (fp_tok_is(x, "static_cast") || fp_tok_is(x, "reinterpret_cast") ||
                             fp_tok_is(x, "const_cast"))) {
    p->i++;
    if (!accept(p, "<")) {
      p->bad = true;
      return NULL;
    }
    while (peek(p) && !fp_tok_is(peek(p), ">"))
      p->i++;
    accept(p, ">");
    if (!accept(p, "(")) {
      p->bad = true;
      return NULL;
    }
    mnode *e = m_expr(p);
    if (!accept(p, ")"))
      p->bad = true;
    return mk(p, KS_AK_CAST, NULL, 1, e);
  }
  if (x->kind == T_IDENT || fp_tok_is(x, "::")) {
    accept(p, "::");
    const fp_tok *last = peek(p);
    if (!last || last->kind != T_IDENT) {
      p->bad = true;
      return NULL;
    }
    p->i++;
    while (fp_tok_is(peek(p), "::") && p->i + 1 < p->t->len &&
           p->t->items[p->i + 1].kind == T_IDENT) {
      last = &p->t->items[p->i + 1];
      p->i += 2;
    }
    if (is_type_word(last) && fp_tok_is(peek(p), "(")) { /* size_t(x) */
      p->i++;
      mnode *e = m_expr(p);
      if (!accept(p, ")"))
        p->bad = true;
      return mk(p, KS_AK_CAST, NULL, 1, e);
    }
    mnode *n = mk(p, KS_AK_DECL_REF, NULL, 0);
    n->name = fp_tok_str(p->st->arena, last);
    return n;
  }
  p->bad = true;
  return NULL;
}

static mnode *m_postfix(mparser *p) {
  mnode *e = m_primary(p);
  while (!p->bad && peek(p)) {
    if (accept(p, "[")) {
      mnode *i = m_expr(p);
      if (!accept(p, "]"))
        p->bad = true;
      e = mk(p, KS_AK_SUBSCRIPT, NULL, 2, e, i);
    } else if (accept(p, "(")) {
      mnode *call = mk(p, KS_AK_CALL, NULL, 0);
      call->name = e && e->kind == KS_AK_DECL_REF ? e->name : NULL;
      KS_ARRAY(mnode *) args = {0};
      if (!accept(p, ")")) {
        do
          *ks_array_push(p->st->arena, &args) = m_assign(p);
        while (!p->bad && accept(p, ","));
        if (!accept(p, ")"))
          p->bad = true;
      }
      if (args.len > 3) {
        p->bad = true; /* more than the matcher needs */
        return NULL;
      }
      for (size_t k = 0; k < args.len; k++)
        call->kids[k] = args.items[k];
      call->nkids = args.len;
      e = call;
    } else if (fp_tok_is(peek(p), ".") || fp_tok_is(peek(p), "->")) {
      p->i++;
      const fp_tok *m = peek(p);
      if (!m || m->kind != T_IDENT) {
        p->bad = true;
        return NULL;
      }
      p->i++;
      e = mk(p, KS_AK_MEMBER, NULL, 1, e);
      e->name = fp_tok_str(p->st->arena, m);
    } else if (fp_tok_is(peek(p), "++") || fp_tok_is(peek(p), "--")) {
      const char *op = fp_tok_str(p->st->arena, peek(p));
      p->i++;
      e = mk(p, KS_AK_UNARY, op, 1, e);
      e->postfix = true;
    } else {
      break;
    }
  }
  return e;
}

static mnode *m_unary(mparser *p) {
  static const char *const ops[] = {"+", "-", "!", "~", "*", "&", "++", "--"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (accept(p, ops[i]))
      return mk(p, KS_AK_UNARY, ops[i], 1, m_unary(p));
  size_t after = cast_end(p);
  if (after) {
    p->i = after;
    return mk(p, KS_AK_CAST, NULL, 1, m_unary(p));
  }
  return m_postfix(p);
}

static int prec(const fp_tok *t) {
  static const struct {
    const char *op;
    int prec;
  } table[] = {{"||", 1}, {"&&", 2},  {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6}, {"!=", 6},
               {"<", 7},  {">", 7},   {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9},
               {"-", 9},  {"*", 10},  {"/", 10}, {"%", 10}};
  for (size_t i = 0; t && i < sizeof table / sizeof *table; i++)
    if (fp_tok_is(t, table[i].op))
      return table[i].prec;
  return 0;
}

static mnode *m_binary(mparser *p, int min) {
  mnode *l = m_unary(p);
  for (;;) {
    const fp_tok *x = peek(p);
    int pr = prec(x);
    if (p->bad || !pr || pr < min)
      return l;
    const char *op = fp_tok_str(p->st->arena, x);
    p->i++;
    mnode *r = m_binary(p, pr + 1);
    l = mk(p, KS_AK_BINARY, op, 2, l, r);
  }
}

static mnode *m_cond(mparser *p) {
  mnode *c = m_binary(p, 1);
  if (accept(p, "?")) {
    mnode *a = m_expr(p);
    if (!accept(p, ":"))
      p->bad = true;
    mnode *b = m_cond(p);
    return mk(p, KS_AK_CONDITIONAL, NULL, 3, c, a, b);
  }
  return c;
}

static mnode *m_assign(mparser *p) {
  mnode *l = m_cond(p);
  static const char *const ops[] = {"=",  "+=", "-=", "*=",  "/=",  "%=",
                                    "&=", "|=", "^=", "<<=", ">>="};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (accept(p, ops[i]))
      return mk(p, i ? KS_AK_COMPOUND_ASSIGN : KS_AK_BINARY, ops[i], 2, l, m_assign(p));
  return l;
}

static mnode *m_expr(mparser *p) {
  mnode *l = m_assign(p);
  while (!p->bad && accept(p, ","))
    l = mk(p, KS_AK_BINARY, ",", 2, l, m_assign(p));
  return l;
}

/* Matches the tree's node with the parsed one, recording the operators the
 * tree left as "?". */
static bool match(fp_state *st, const ks_anode *k, const mnode *m) {
  if (!k || !m)
    return false;
  while (ks_rt_is_wrapper(k))
    k = k->kids[0];
  if (k->kind != m->kind)
    return false;
  switch (k->kind) {
  case KS_AK_BINARY:
  case KS_AK_COMPOUND_ASSIGN:
  case KS_AK_UNARY:
    if (k->nkids != m->nkids || (k->kind == KS_AK_UNARY && k->postfix != m->postfix))
      return false;
    if (k->op && strcmp(k->op, "?") && strcmp(k->op, m->op))
      return false;
    break;
  case KS_AK_CAST:
    return k->nkids >= 1 && match(st, k->kids[k->nkids - 1], m->kids[0]);
  case KS_AK_DECL_REF:
    return k->name && m->name && !strcmp(k->name, m->name);
  case KS_AK_MEMBER:
    if (!k->name || !m->name || strcmp(k->name, m->name))
      return false;
    break;
  case KS_AK_INT_LITERAL: {
    char *end;
    const char *s = ks_arena_strndup(st->arena, m->num->s, m->num->n);
    long long v = strtoll(s, &end, 0);
    return end != s && v == k->int_value;
  }
  case KS_AK_FLOAT_LITERAL:
    return true;
  case KS_AK_OTHER:
    return m->is_sizeof && k->kind_name && !strcmp(k->kind_name, "UnaryExpr");
  case KS_AK_CALL:
    if (!k->name || !m->name || strcmp(ks_rt_callee(st->arena, k), m->name))
      return false;
    break;
  case KS_AK_PAREN:
  case KS_AK_SUBSCRIPT:
  case KS_AK_CONDITIONAL:
    break;
  default:
    return false;
  }
  if (k->nkids != m->nkids)
    return false;
  for (size_t i = 0; i < k->nkids; i++)
    if (!match(st, k->kids[i], m->kids[i]))
      return false;
  if ((k->kind == KS_AK_BINARY || k->kind == KS_AK_COMPOUND_ASSIGN || k->kind == KS_AK_UNARY) &&
      k->op && !strcmp(k->op, "?"))
    *ks_array_push(st->arena, &st->ops) = (fp_op){k, m->op};
  return true;
}

static const char *read_back(fp_state *st, const ks_anode *top) {
  const char *text = ks_arena_strndup(st->arena, st->k->source + top->begin, top->end - top->begin);
  const char *x = fp_expand(st, text);
  if (!x)
    return st->why;
  fp_toks t = {0};
  fp_lex(st->arena, x, x + strlen(x), &t);
  mparser p = {st, &t, 0, false};
  mnode *m = m_expr(&p);
  size_t before = st->ops.len;
  if (p.bad || p.i != t.len || !match(st, top, m)) {
    st->ops.len = before;
    return ks_arena_printf(st->arena, "an operator inside the macro expansion '%s' could not be read",
                           fp_text(st, top));
  }
  return NULL;
}

const char *fp_macro_op(fp_state *st, const ks_anode *n) {
  for (size_t i = 0; i < st->ops.len; i++)
    if (st->ops.items[i].node == n)
      return st->ops.items[i].op;
  const ks_anode *top = n;
  while (top->parent && top->parent->from_macro && top->parent->begin == n->begin &&
         top->parent->end == n->end)
    top = top->parent;
  const char *why = NULL;
  bool seen = false;
  for (size_t i = 0; i < st->fixes.len; i++)
    if (st->fixes.items[i].top == top) {
      why = st->fixes.items[i].why;
      seen = true;
    }
  if (!seen) {
    const char *keep = st->why;
    why = read_back(st, top);
    st->why = keep;
    *ks_array_push(st->arena, &st->fixes) = (fp_fix){top, why};
  }
  if (!why)
    for (size_t i = 0; i < st->ops.len; i++)
      if (st->ops.items[i].node == n)
        return st->ops.items[i].op;
  fp_fail(st, "%s", why ? why : "an operator inside a macro could not be read");
  return NULL;
}
