/* footprint_const: what the footprint analysis reads from the unit's text
 * because the tree does not carry it.
 *
 * The tree gives macros' expansions with their literals' values, but an
 * enumerator or a namespace-scope `const int N = 64;` is only a name (a
 * DECL_REF without a declaration in the kernel). The unit (the slice holds
 * the #defines and declarations the kernel uses) is tokenized once:
 * #define lines become macros (a name defined twice, or #undef'd, is not
 * used); declarations at namespace scope (inside namespaces and extern "C"
 * only, never in a function or a class) are indexed: enumerators with their
 * values, const/constexpr integer variables with their initializers, and
 * every other declared name, so that a name declared twice is refused
 * rather than guessed. The macros also serve footprint_macro.c, which reads
 * back operators the tree could not.
 *
 * Values are computed with ks_expr (64-bit, checked). */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "footprint_int.h"
#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_expr.h"

/* ---- tokens ---- */

static const char *const puncts[] = {"<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=",
                                     ">=",  "==",  "!=",  "&&", "||", "+=", "-=", "*=", "/=",
                                     "%=",  "&=",  "|=",  "^=", "::", "##"};

/* Tokens of [p, end), comments skipped, backslashes dropped. */
void fp_lex(ks_arena *a, const char *p, const char *end, fp_toks *out) {
  while (p < end) {
    if (isspace((unsigned char)*p) || *p == '\\') {
      p++;
      continue;
    }
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      if (*p == '"' || *p == '\'')
        *ks_array_push(a, out) = (fp_tok){T_STRING, p, (size_t)(q - p)};
      p = q;
      continue;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
      q = p;
      while (q < end && ks_ctext_is_ident_char(*q))
        q++;
      *ks_array_push(a, out) = (fp_tok){T_IDENT, p, (size_t)(q - p)};
    } else if (isdigit((unsigned char)*p) || (*p == '.' && p + 1 < end && isdigit((unsigned char)p[1]))) {
      q = p;
      while (q < end && (isalnum((unsigned char)*q) || *q == '.' || *q == '_' || *q == '\'' ||
                         ((*q == '+' || *q == '-') && strchr("eEpP", q[-1]))))
        q++;
      *ks_array_push(a, out) = (fp_tok){T_NUMBER, p, (size_t)(q - p)};
    } else {
      size_t n = 1;
      for (size_t i = 0; i < sizeof puncts / sizeof *puncts; i++) {
        size_t l = strlen(puncts[i]);
        if (l > n && p + l <= end && !strncmp(p, puncts[i], l))
          n = l;
      }
      q = p + n;
      *ks_array_push(a, out) = (fp_tok){T_PUNCT, p, n};
    }
    p = q;
  }
}

bool fp_tok_is(const fp_tok *t, const char *s) {
  return t && strlen(s) == t->n && !strncmp(t->s, s, t->n);
}

const char *fp_tok_str(ks_arena *a, const fp_tok *t) { return ks_arena_strndup(a, t->s, t->n); }

/* ---- the unit's macros and names ---- */

typedef struct macro {
  const char *name;
  bool function;
  ks_strings params;
  const char *body;
  int count; /* definitions seen (an #undef counts as one more) */
} macro;

typedef enum named_kind { N_ENUMERATOR, N_CONST, N_OTHER } named_kind;

typedef struct named {
  const char *name;
  const char *scope; /* the enum's name (enumerators) or the innermost namespace */
  named_kind kind;
  const char *value; /* text of the initializer; NULL: previous enumerator + 1 */
  const struct named *prev; /* the enumerator before, in its enum */
  bool is_unsigned;
  int bits;          /* of its type: 32 for int and enumerators, 64 for long */
  int state;         /* 0 not computed, 1 computing, 2 done, 3 failed */
  long long v;
} named;

struct fp_consts {
  ks_ctx ctx; /* for ks_expr's messages, so the caller's error stays */
  unsigned conditional; /* #if nesting while scanning */
  KS_ARRAY(macro) macros;
  KS_ARRAY(named) names;
};

static macro *find_macro(fp_consts *c, const char *s, size_t n) {
  for (size_t i = 0; i < c->macros.len; i++)
    if (strlen(c->macros.items[i].name) == n && !strncmp(c->macros.items[i].name, s, n))
      return &c->macros.items[i];
  return NULL;
}

static void add_directive(fp_state *st, const char *p, const char *end) {
  fp_consts *c = st->consts;
  fp_toks t = {0};
  fp_lex(st->arena, p + 1, end, &t);
  if (!t.len)
    return;
  if (fp_tok_is(&t.items[0], "if") || fp_tok_is(&t.items[0], "ifdef") ||
      fp_tok_is(&t.items[0], "ifndef"))
    c->conditional++;
  else if (fp_tok_is(&t.items[0], "endif") && c->conditional)
    c->conditional--;
  if (t.len < 2 || t.items[1].kind != T_IDENT)
    return;
  bool define = fp_tok_is(&t.items[0], "define"), undef = fp_tok_is(&t.items[0], "undef");
  if (!define && !undef)
    return;
  macro *m = find_macro(c, t.items[1].s, t.items[1].n);
  if (!m) {
    m = ks_array_push(st->arena, &c->macros);
    m->name = fp_tok_str(st->arena, &t.items[1]);
  }
  /* Under #if the definition may be dead and the live one come from the
   * command line: not used, as a name defined twice is not. */
  m->count += 1 + undef + (c->conditional ? 1 : 0);
  if (!define)
    return;
  const char *after = t.items[1].s + t.items[1].n;
  size_t body_tok = 2;
  if (after < end && *after == '(') {
    m->function = true;
    for (body_tok = 3; body_tok < t.len && !fp_tok_is(&t.items[body_tok], ")"); body_tok++)
      if (t.items[body_tok].kind == T_IDENT || fp_tok_is(&t.items[body_tok], "..."))
        *ks_array_push(st->arena, &m->params) = fp_tok_str(st->arena, &t.items[body_tok]);
    body_tok++;
  }
  ks_buf b = KS_BUF_INIT;
  for (size_t i = body_tok; i < t.len; i++) {
    ks_buf_add(&b, t.items[i].s, t.items[i].n);
    ks_buf_addc(&b, ' ');
  }
  m->body = ks_arena_strdup(st->arena, b.data);
  ks_buf_release(&b);
}

/* Splits the unit into directive lines (to add_directive) and the rest. */
static void scan_unit(fp_state *st, fp_toks *code) {
  const char *p = st->k->source, *end = p + st->k->source_len;
  const char *line = p;
  while (p < end) {
    const char *q = line;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    const char *eol = q;
    if (q < end && *q == '#') {
      while (eol < end && *eol != '\n') {
        if (*eol == '\\' && eol + 1 < end && eol[1] == '\n')
          eol++;
        eol++;
      }
      add_directive(st, q, eol);
    } else {
      /* Up to the end of the line, but comments and literals may span
       * lines: lex whole runs of non-directive lines at once. */
      while (eol < end) {
        const char *r = ks_ctext_skip_lexical(eol);
        if (r != eol) {
          eol = r;
          continue;
        }
        if (*eol == '\n') {
          const char *s = eol + 1;
          while (s < end && (*s == ' ' || *s == '\t'))
            s++;
          if (s < end && *s == '#')
            break;
        }
        eol++;
      }
      fp_lex(st->arena, q, eol, code);
    }
    line = eol < end ? eol + 1 : end;
    p = line;
  }
}

static void add_name(fp_state *st, const fp_tok *t, const char *scope, named_kind kind,
                     const char *value, const named *prev, bool is_unsigned, int bits) {
  named *n = ks_array_push(st->arena, &st->consts->names);
  *n = (named){.name = fp_tok_str(st->arena, t), .scope = scope, .kind = kind, .value = value,
               .prev = prev, .is_unsigned = is_unsigned, .bits = bits};
}

static const char *join(ks_arena *a, const fp_tok *from, const fp_tok *to) {
  ks_buf b = KS_BUF_INIT;
  for (const fp_tok *t = from; t < to; t++) {
    ks_buf_add(&b, t->s, t->n);
    ks_buf_addc(&b, ' ');
  }
  const char *s = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return s;
}

size_t fp_matching(const fp_toks *t, size_t open) {
  int depth = 0;
  for (size_t i = open; i < t->len; i++) {
    if (fp_tok_is(&t->items[i], "(") || fp_tok_is(&t->items[i], "[") || fp_tok_is(&t->items[i], "{"))
      depth++;
    else if (fp_tok_is(&t->items[i], ")") || fp_tok_is(&t->items[i], "]") || fp_tok_is(&t->items[i], "}"))
      if (--depth == 0)
        return i;
  }
  return t->len;
}

/* The enumerators of the enum whose '{' is at `open`; returns its '}'. */
static size_t enum_body(fp_state *st, const fp_toks *t, size_t open, const char *scope) {
  size_t close = fp_matching(t, open);
  const named *prev = NULL;
  size_t i = open + 1;
  while (i < close) {
    if (t->items[i].kind != T_IDENT)
      break;
    const fp_tok *name = &t->items[i];
    size_t j = i + 1;
    const char *value = NULL;
    if (j < close && fp_tok_is(&t->items[j], "=")) {
      size_t k = j + 1;
      int depth = 0;
      for (; k < close; k++) {
        if (fp_tok_is(&t->items[k], "(") || fp_tok_is(&t->items[k], "["))
          depth++;
        if (fp_tok_is(&t->items[k], ")") || fp_tok_is(&t->items[k], "]"))
          depth--;
        if (!depth && fp_tok_is(&t->items[k], ","))
          break;
      }
      value = join(st->arena, &t->items[j + 1], &t->items[k]);
      j = k;
    }
    add_name(st, name, scope, N_ENUMERATOR, value, prev, false, 32);
    prev = &st->consts->names.items[st->consts->names.len - 1];
    i = j + 1;
  }
  return close;
}

static bool is_int_word(const fp_tok *t) {
  static const char *const words[] = {"int", "unsigned", "signed", "long", "short", "size_t",
                                      "int32_t", "int64_t", "uint32_t", "uint64_t", "ptrdiff_t"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (fp_tok_is(t, words[i]))
      return true;
  return false;
}

static bool is_spec_word(const fp_tok *t) {
  static const char *const words[] = {"const", "constexpr", "static", "inline", "__device__",
                                      "__constant__", "__host__", "extern"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (fp_tok_is(t, words[i]))
      return true;
  return is_int_word(t);
}

/* A statement at namespace scope, [from, to): its const integer
 * definitions, and every other name it declares at its top level. */
static void statement(fp_state *st, const fp_toks *t, size_t from, size_t to, const char *scope) {
  size_t i = from;
  bool is_const = false, is_int = false, is_unsigned = false;
  int bits = 32;
  while (i < to && is_spec_word(&t->items[i])) {
    const fp_tok *w = &t->items[i];
    is_const |= fp_tok_is(w, "const") || fp_tok_is(w, "constexpr");
    is_int |= is_int_word(w);
    is_unsigned |= fp_tok_is(w, "unsigned") || fp_tok_is(w, "size_t") || w->s[0] == 'u';
    if (fp_tok_is(w, "long") || fp_tok_is(w, "size_t") || fp_tok_is(w, "int64_t") ||
        fp_tok_is(w, "uint64_t") || fp_tok_is(w, "ptrdiff_t"))
      bits = 64;
    else if (fp_tok_is(w, "short") && bits == 32)
      bits = 16;
    i++;
  }
  if (is_const && is_int && i > from) {
    /* NAME = value (, NAME = value)* */
    bool all = true;
    size_t start = i;
    KS_ARRAY(size_t) marks = {0};
    while (i < to && all) {
      if (t->items[i].kind != T_IDENT || i + 1 >= to || !fp_tok_is(&t->items[i + 1], "=")) {
        all = false;
        break;
      }
      size_t k = i + 2;
      int depth = 0;
      for (; k < to; k++) {
        if (fp_tok_is(&t->items[k], "(") || fp_tok_is(&t->items[k], "[") || fp_tok_is(&t->items[k], "{"))
          depth++;
        if (fp_tok_is(&t->items[k], ")") || fp_tok_is(&t->items[k], "]") || fp_tok_is(&t->items[k], "}"))
          depth--;
        if (!depth && fp_tok_is(&t->items[k], ","))
          break;
      }
      *ks_array_push(st->arena, &marks) = i;
      *ks_array_push(st->arena, &marks) = k;
      i = k + 1;
    }
    if (all && marks.len) {
      for (size_t m = 0; m < marks.len; m += 2) {
        size_t at = marks.items[m], k = marks.items[m + 1];
        add_name(st, &t->items[at], scope, N_CONST,
                 join(st->arena, &t->items[at + 2], &t->items[k]), NULL, is_unsigned, bits);
      }
      return;
    }
    i = start;
  }
  /* Anything else: names followed by = ; , [ ( at the statement's top level
   * are declarations for all this analysis knows. */
  int depth = 0;
  for (i = from; i < to; i++) {
    const fp_tok *x = &t->items[i];
    if (fp_tok_is(x, "(") || fp_tok_is(x, "[") || fp_tok_is(x, "<"))
      depth++;
    else if (fp_tok_is(x, ")") || fp_tok_is(x, "]") || fp_tok_is(x, ">"))
      depth--;
    else if (!depth && x->kind == T_IDENT) {
      const fp_tok *nx = i + 1 < to ? &t->items[i + 1] : NULL;
      if (!nx || fp_tok_is(nx, "=") || fp_tok_is(nx, ",") || fp_tok_is(nx, "[") || fp_tok_is(nx, "(") ||
          fp_tok_is(nx, ";"))
        add_name(st, x, scope, N_OTHER, NULL, NULL, false, 64);
    }
  }
}

typedef enum scope_kind { S_NAMESPACE, S_OTHER } scope_kind;

static void index_names(fp_state *st, const fp_toks *t) {
  KS_ARRAY(scope_kind) stack = {0};
  KS_ARRAY(const char *) names = {0};
  size_t opaque = 0; /* open scopes that are not namespaces */
  size_t stmt = 0;
  for (size_t i = 0; i < t->len; i++) {
    const fp_tok *x = &t->items[i];
    bool open = fp_tok_is(x, "{"), close = fp_tok_is(x, "}"), semi = fp_tok_is(x, ";");
    if (!open && !close && !semi)
      continue;
    if (open) {
      bool ns = false, is_enum = false, ext = false;
      const char *ns_name = "";
      for (size_t k = stmt; k < i; k++) {
        if (fp_tok_is(&t->items[k], "namespace")) {
          ns = true;
          if (k + 1 < i && t->items[k + 1].kind == T_IDENT)
            ns_name = fp_tok_str(st->arena, &t->items[k + 1]);
        }
        if (fp_tok_is(&t->items[k], "enum"))
          is_enum = true;
      }
      ext = i - stmt == 2 && fp_tok_is(&t->items[stmt], "extern") &&
            t->items[stmt + 1].kind == T_STRING;
      if (is_enum && !opaque && !ns) {
        size_t k = stmt;
        while (k < i && !fp_tok_is(&t->items[k], "enum"))
          k++;
        k++;
        if (k < i && (fp_tok_is(&t->items[k], "class") || fp_tok_is(&t->items[k], "struct")))
          k++;
        const char *ename = k < i && t->items[k].kind == T_IDENT ? fp_tok_str(st->arena, &t->items[k]) : "";
        i = enum_body(st, t, i, ename);
        stmt = i + 1; /* what follows the '}' declares other names */
        continue;
      }
      if (!opaque && !ns && !ext && i > stmt)
        statement(st, t, stmt, i, names.len ? names.items[names.len - 1] : "");
      *ks_array_push(st->arena, &stack) = ns || ext ? S_NAMESPACE : S_OTHER;
      const char *inner = ns ? ns_name : (names.len ? names.items[names.len - 1] : "");
      *ks_array_push(st->arena, &names) = inner;
      if (!(ns || ext))
        opaque++;
    } else if (close) {
      if (stack.len) {
        if (stack.items[stack.len - 1] == S_OTHER)
          opaque--;
        stack.len--;
        names.len--;
      }
    } else if (!opaque && i > stmt) {
      statement(st, t, stmt, i, names.len ? names.items[names.len - 1] : "");
    }
    stmt = i + 1;
  }
}

static fp_consts *consts(fp_state *st) {
  if (st->consts)
    return st->consts;
  st->consts = ks_arena_alloc(st->arena, sizeof *st->consts);
  ks_ctx_init(&st->consts->ctx, "footprint");
  st->consts->ctx.verbosity = KS_LOG_ERROR;
  fp_toks code = {0};
  scan_unit(st, &code);
  index_names(st, &code);
  return st->consts;
}

void fp_consts_release(fp_state *st) {
  if (st->consts)
    ks_ctx_release(&st->consts->ctx);
}

/* ---- macro expansion ---- */

static bool expand_into(fp_state *st, const char *text, ks_strings *active, unsigned depth,
                        ks_buf *out);

static bool expand_call(fp_state *st, macro *m, const fp_toks *t, size_t *i, ks_strings *active,
                        unsigned depth, ks_buf *out) {
  ks_strings args = {0};
  if (m->function) {
    size_t open = *i + 1, close = fp_matching(t, open);
    if (close >= t->len)
      return fp_fail(st, "the macro '%s' is not called as written", m->name);
    size_t from = open + 1;
    int d = 0;
    for (size_t k = open + 1; k <= close; k++) {
      const fp_tok *x = &t->items[k];
      if (fp_tok_is(x, "(") || fp_tok_is(x, "[") || fp_tok_is(x, "{"))
        d++;
      if (k < close && (fp_tok_is(x, ")") || fp_tok_is(x, "]") || fp_tok_is(x, "}")))
        d--;
      if (k == close || (!d && fp_tok_is(x, ","))) {
        ks_buf a = KS_BUF_INIT;
        if (!expand_into(st, join(st->arena, &t->items[from], &t->items[k]), active, depth + 1,
                         &a)) {
          ks_buf_release(&a);
          return false;
        }
        *ks_array_push(st->arena, &args) = ks_arena_strdup(st->arena, a.data);
        ks_buf_release(&a);
        from = k + 1;
      }
    }
    if (args.len == 1 && !*args.items[0] && !m->params.len)
      args.len = 0;
    if (args.len != m->params.len)
      return fp_fail(st, "the macro '%s' takes %zu arguments", m->name, m->params.len);
    *i = close;
  }
  fp_toks body = {0};
  fp_lex(st->arena, m->body, m->body + strlen(m->body), &body);
  ks_buf sub = KS_BUF_INIT;
  for (size_t k = 0; k < body.len; k++) {
    const fp_tok *x = &body.items[k];
    if (fp_tok_is(x, "#") || fp_tok_is(x, "##") || fp_tok_is(x, "__VA_ARGS__") || fp_tok_is(x, "...")) {
      ks_buf_release(&sub);
      return fp_fail(st, "the macro '%s' pastes or quotes tokens", m->name);
    }
    bool done = false;
    for (size_t p = 0; p < m->params.len && x->kind == T_IDENT; p++)
      if (fp_tok_is(x, m->params.items[p])) {
        ks_buf_adds(&sub, args.items[p]);
        done = true;
        break;
      }
    if (!done)
      ks_buf_add(&sub, x->s, x->n);
    ks_buf_addc(&sub, ' ');
  }
  *ks_array_push(st->arena, active) = m->name;
  bool ok = expand_into(st, sub.data, active, depth + 1, out);
  active->len--;
  ks_buf_release(&sub);
  return ok;
}

static bool expand_into(fp_state *st, const char *text, ks_strings *active, unsigned depth,
                        ks_buf *out) {
  if (depth > 32)
    return fp_fail(st, "macros nest too deeply");
  fp_consts *c = consts(st);
  fp_toks t = {0};
  fp_lex(st->arena, text, text + strlen(text), &t);
  for (size_t i = 0; i < t.len; i++) {
    const fp_tok *x = &t.items[i];
    macro *m = x->kind == T_IDENT ? find_macro(c, x->s, x->n) : NULL;
    bool blocked = false;
    for (size_t a = 0; m && a < active->len; a++)
      blocked |= !strcmp(active->items[a], m->name);
    if (m && !blocked && (!m->function || (i + 1 < t.len && fp_tok_is(&t.items[i + 1], "(")))) {
      if (m->count != 1)
        return fp_fail(st, "the macro '%s' is defined more than once", m->name);
      if (!expand_call(st, m, &t, &i, active, depth, out))
        return false;
      continue;
    }
    ks_buf_add(out, x->s, x->n);
    ks_buf_addc(out, ' ');
  }
  return true;
}

const char *fp_expand(fp_state *st, const char *text) {
  ks_strings active = {0};
  ks_buf b = KS_BUF_INIT;
  const char *r = expand_into(st, text, &active, 0, &b) ? ks_arena_strdup(st->arena, b.data) : NULL;
  ks_buf_release(&b);
  return r;
}

/* ---- named constants ---- */

static bool value_of(fp_state *st, named *n, unsigned depth, long long *out);

typedef struct lookup_env {
  fp_state *st;
  unsigned depth;
  bool failed;
} lookup_env;

static named *unique(fp_state *st, const char *name, size_t len, const char *scope) {
  fp_consts *c = consts(st);
  named *found = NULL;
  int count = 0;
  for (size_t i = 0; i < c->names.len; i++) {
    named *n = &c->names.items[i];
    if (strlen(n->name) != len || strncmp(n->name, name, len))
      continue;
    if (scope && strcmp(n->scope, scope))
      continue;
    found = n;
    count++;
  }
  return count == 1 ? found : NULL;
}

static bool lookup_named(void *data, const char *name, size_t len, ks_value *out) {
  lookup_env *e = data;
  named *n = unique(e->st, name, len, NULL);
  long long v;
  if (!n || !value_of(e->st, n, e->depth + 1, &v)) {
    e->failed = true;
    return false;
  }
  out->is_int = true;
  out->i = v;
  return true;
}

static bool eval_text(fp_state *st, const char *text, unsigned depth, long long *out) {
  const char *x = fp_expand(st, text);
  if (!x)
    return false;
  lookup_env e = {st, depth, false};
  ks_expr_env env = {lookup_named, &e};
  ks_value v;
  if (ks_expr_eval(&consts(st)->ctx, x, &env, &v) || !v.is_int)
    return fp_fail(st, "'%s' is not an integer constant the analysis can compute", text);
  *out = v.i;
  return true;
}

static bool value_of(fp_state *st, named *n, unsigned depth, long long *out) {
  if (n->state == 2) {
    *out = n->v;
    return true;
  }
  if (n->kind == N_OTHER)
    return fp_fail(st, "its index depends on '%s', which is not a constant", n->name);
  if (n->state == 1 || n->state == 3 || depth > 16)
    return fp_fail(st, "the value of '%s' cannot be computed", n->name);
  n->state = 1;
  long long v = 0;
  bool ok;
  if (n->value) {
    ok = eval_text(st, n->value, depth, &v);
  } else if (n->prev) {
    ok = value_of(st, (named *)n->prev, depth + 1, &v) && !__builtin_add_overflow(v, 1, &v);
  } else {
    ok = true; /* the first enumerator */
  }
  /* The value must fit its type, or C's conversion would change it. */
  long long top = n->bits >= 64 ? LLONG_MAX : (1LL << (n->bits - (n->is_unsigned ? 0 : 1))) - 1;
  long long bottom = n->is_unsigned ? 0 : n->bits >= 64 ? LLONG_MIN : -top - 1;
  if (ok && (v < bottom || v > top))
    ok = fp_fail(st, "the value of '%s' does not fit its type", n->name);
  n->state = ok ? 2 : 3;
  n->v = v;
  *out = v;
  return ok; /* st->why says why not */
}

/* A name the kernel declares itself where the tree has no node for it (a
 * local enum's enumerator): it would shadow one at namespace scope. */
static bool declared_in_kernel(fp_state *st, const char *name) {
  const ks_anode *body = st->k->body;
  const char *b = st->k->source + body->begin, *e = st->k->source + body->end;
  fp_toks t = {0};
  fp_lex(st->arena, b, e, &t);
  for (size_t i = 0; i + 1 < t.len; i++) {
    if (!fp_tok_is(&t.items[i], "enum"))
      continue;
    size_t open = i + 1;
    while (open < t.len && !fp_tok_is(&t.items[open], "{") && !fp_tok_is(&t.items[open], ";"))
      open++;
    if (open >= t.len || !fp_tok_is(&t.items[open], "{"))
      continue;
    size_t close = fp_matching(&t, open);
    for (size_t k = open + 1; k < close && k < t.len; k++)
      if (fp_tok_is(&t.items[k], name))
        return true;
  }
  return false;
}

bool fp_named_constant(fp_state *st, const ks_anode *ref, long long *out) {
  const char *text = ks_arena_strndup(st->arena, st->k->source + ref->begin, ref->end - ref->begin);
  if (ref->from_macro && !(text = fp_expand(st, text)))
    return false;
  /* The name as written: [qualifier ::] name. */
  fp_toks t = {0};
  fp_lex(st->arena, text, text + strlen(text), &t);
  const char *scope = NULL;
  size_t at = 0;
  if (t.len && fp_tok_is(&t.items[0], "::"))
    at = 1;
  while (at + 2 < t.len && t.items[at].kind == T_IDENT && fp_tok_is(&t.items[at + 1], "::")) {
    scope = fp_tok_str(st->arena, &t.items[at]);
    at += 2;
  }
  if (at + 1 != t.len || t.items[at].kind != T_IDENT || !ref->name ||
      !fp_tok_is(&t.items[at], ref->name))
    return fp_fail(st, "its index depends on '%s', which the analysis does not follow", text);
  if (declared_in_kernel(st, ref->name))
    return fp_fail(st, "its index depends on '%s', declared inside the kernel", ref->name);
  named *n = unique(st, ref->name, strlen(ref->name), scope);
  if (!n)
    return fp_fail(st, "its index depends on '%s', not a constant the analysis can find once in "
                       "the unit",
                   ks_ctext_trim(st->arena, text, text + strlen(text)));
  return value_of(st, n, 0, out);
}

bool fp_sizeof(fp_state *st, const ks_anode *n, long long *out) {
  const char *text = ks_arena_strndup(st->arena, st->k->source + n->begin, n->end - n->begin);
  if (n->from_macro && !(text = fp_expand(st, text)))
    return false;
  if (strncmp(ks_ctext_trim(st->arena, text, text + strlen(text)), "sizeof", 6))
    return fp_fail(st, "its index uses '%s'", text);
  ks_value v;
  if (ks_expr_eval(&consts(st)->ctx, text, NULL, &v) || !v.is_int) {
    if (st->k->root->kind == KS_AK_TEMPLATE)
      for (size_t i = 0; i < st->k->root->nkids; i++) {
        const ks_anode *p = st->k->root->kids[i];
        if (p && p->kind == KS_AK_TEMPLATE_PARAM && p->name && ks_rt_has_identifier(text, p->name))
          return fp_fail(st, "its index depends on the template parameter '%s'", p->name);
      }
    return fp_fail(st, "its index uses '%s', which the analysis cannot compute", text);
  }
  *out = v.i;
  return true;
}

