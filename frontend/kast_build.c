/* The kernel's cursors as ks_anode trees.
 *
 * The tree mirrors the written text: implicit conversions, implicit copy
 * constructions and other wrappers with the extent of their only child are
 * dropped; references to types and namespaces are read by their parents.
 * What libclang's C API leaves out (operator spellings, the member of
 * threadIdx.x, which part of a for header is missing) is read from the raw
 * tokens, or, inside a macro, from the text of its definition. */
#include <ctype.h>
#include <string.h>

#include "kast_int.h"

typedef struct visit_data {
  kast_builder *b;
  kast_cursors *out;
  bool all;
} visit_data;

static enum CXChildVisitResult push_child(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  visit_data *d = data;
  enum CXCursorKind k = clang_getCursorKind(c);
  /* References to types, templates and namespaces belong to their parent's
   * spelling; attributes are read by declarations. */
  if (d->all || !(clang_isReference(k) || clang_isAttribute(k)))
    *ks_array_push(&d->b->scratch, d->out) = c;
  return CXChildVisit_Continue;
}

void kast_children(kast_builder *b, CXCursor c, bool all, kast_cursors *out) {
  out->len = 0;
  visit_data d = {b, out, all};
  clang_visitChildren(c, push_child, &d);
}

const char *kast_kind_name(kast_builder *b, enum CXCursorKind k) {
  unsigned i = (unsigned)k;
  if (i < sizeof b->kind_names / sizeof *b->kind_names) {
    if (!b->kind_names[i])
      b->kind_names[i] = ks_tu_string(&b->tu, clang_getCursorKindSpelling(k));
    return b->kind_names[i];
  }
  return ks_tu_string(&b->tu, clang_getCursorKindSpelling(k));
}

static const char *token_text(kast_builder *b, size_t i) {
  return ks_arena_strndup(b->arena, b->source + b->tokens[i].begin,
                          b->tokens[i].end - b->tokens[i].begin);
}

static bool same_extent(kast_builder *b, CXCursor x, CXCursor y, bool *x_macro) {
  unsigned xb, xe, yb, ye;
  bool ym;
  kast_extent(b, x, &xb, &xe, x_macro);
  kast_extent(b, y, &yb, &ye, &ym);
  return xb == yb && xe == ye;
}

/* Skips the wrappers clang adds and the user did not write: implicit casts
 * and temporaries (UnexposedExpr), implicit constructions and conversion
 * calls (a CallExpr or member reference with its only child's extent). */
static CXCursor collapse(kast_builder *b, CXCursor c) {
  kast_cursors kids = {0};
  for (int depth = 0; depth < 64; depth++) {
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k != CXCursor_UnexposedExpr && k != CXCursor_CallExpr && k != CXCursor_MemberRefExpr)
      return c;
    kast_children(b, c, false, &kids);
    bool macro;
    if (kids.len != 1 || !same_extent(b, c, kids.items[0], &macro))
      return c;
    if (k != CXCursor_UnexposedExpr) {
      enum CXCursorKind rk = clang_getCursorKind(clang_getCursorReferenced(c));
      bool implicit = rk == CXCursor_Constructor || rk == CXCursor_ConversionFunction;
      /* Outside macros a written call always extends past its callee; in
       * one, every node has the invocation's extent. */
      if (!implicit && (k == CXCursor_MemberRefExpr || macro))
        return c;
    }
    c = kids.items[0];
  }
  return c;
}

ks_anode *kast_new_node(kast_builder *b, CXCursor c, ks_anode *parent) {
  ks_anode *n = ks_arena_alloc(b->arena, sizeof *n);
  enum CXCursorKind k = clang_getCursorKind(c);
  n->kind = KS_AK_OTHER;
  n->kind_name = kast_kind_name(b, k);
  n->parent = parent;
  kast_extent(b, c, &n->begin, &n->end, &n->from_macro);
  if (clang_isExpression(k) || clang_isDeclaration(k)) {
    CXType t = clang_getCursorType(c);
    if (t.kind != CXType_Invalid) {
      n->type = ks_tu_type(&b->tu, t);
      /* Only a typedef (or a name for one, Elaborated) differs from its
       * canonical type; the rest share the spelling. */
      n->canon_type = t.kind == CXType_Typedef || t.kind == CXType_Elaborated
                          ? ks_tu_type(&b->tu, clang_getCanonicalType(t))
                          : n->type;
    }
  }
  return n;
}

void kast_set_kids(kast_builder *b, ks_anode *n, size_t count) {
  n->nkids = count;
  n->kids = ks_arena_alloc(b->arena, (count ? count : 1) * sizeof *n->kids);
}

static void build_kids(kast_builder *b, ks_anode *n, const CXCursor *kids, size_t count) {
  kast_set_kids(b, n, count);
  for (size_t i = 0; i < count; i++)
    n->kids[i] = kast_build_node(b, kids[i], n);
}

/* Attributes among the children (of a lambda, say) become ATTR kids. */
static void build_children(kast_builder *b, CXCursor c, ks_anode *n) {
  kast_cursors kids = {0};
  kast_children(b, c, true, &kids);
  size_t count = 0;
  for (size_t i = 0; i < kids.len; i++)
    if (!clang_isReference(clang_getCursorKind(kids.items[i])))
      kids.items[count++] = kids.items[i];
  kast_set_kids(b, n, count);
  for (size_t i = 0; i < count; i++)
    n->kids[i] = clang_isAttribute(clang_getCursorKind(kids.items[i]))
                     ? kast_build_attr(b, kids.items[i], n)
                     : kast_build_node(b, kids.items[i], n);
}

static void remember_decl(kast_builder *b, CXCursor c, ks_anode *n) {
  *ks_array_push(&b->scratch, &b->decls) = (kast_decl){c, n};
}

static ks_anode *find_decl(kast_builder *b, CXCursor ref) {
  if (clang_Cursor_isNull(ref))
    return NULL;
  for (size_t i = 0; i < b->decls.len; i++)
    if (clang_equalCursors(b->decls.items[i].cursor, ref))
      return b->decls.items[i].node;
  enum CXCursorKind rk = clang_getCursorKind(ref);
  CXSourceLocation loc = clang_getCursorLocation(ref);
  for (size_t i = 0; i < b->decls.len; i++)
    if (clang_getCursorKind(b->decls.items[i].cursor) == rk &&
        clang_equalLocations(clang_getCursorLocation(b->decls.items[i].cursor), loc))
      return b->decls.items[i].node;
  return NULL;
}

/* The spelling of a cursor, or of the first named cursor below it (a
 * dependent call names its callee only in an OverloadedDeclRef). */
static const char *first_name(kast_builder *b, CXCursor c, int depth) {
  const char *s = ks_tu_spelling(&b->tu, c);
  if (*s || depth > 8)
    return s;
  kast_cursors kids = {0};
  kast_children(b, c, true, &kids);
  for (size_t i = 0; i < kids.len; i++) {
    s = first_name(b, kids.items[i], depth + 1);
    if (*s)
      return s;
  }
  return s;
}

/* The identifier token at `offset` and where it ends. */
static void name_range(kast_builder *b, unsigned offset, unsigned *begin, unsigned *end) {
  *begin = *end = offset;
  size_t i = kast_token_at(b, offset);
  if (i < b->ntokens && b->tokens[i].begin == offset)
    *end = b->tokens[i].end;
}

void kast_decl_name(kast_builder *b, CXCursor c, ks_anode *n) {
  n->name = ks_tu_spelling(&b->tu, c);
  unsigned at;
  if (kast_expansion_offset(b, clang_getCursorLocation(c), &at))
    name_range(b, at, &n->name_begin, &n->name_end);
}

static void pointer_info(kast_builder *b, CXType t, ks_anode *n) {
  CXType canon = clang_getCanonicalType(t);
  n->is_pointer = t.kind == CXType_Pointer || canon.kind == CXType_Pointer;
  if (n->is_pointer) {
    CXType pointee = clang_getPointeeType(t.kind == CXType_Pointer ? t : canon);
    n->pointee = ks_tu_type(&b->tu, pointee);
    n->canon_pointee = ks_tu_type(&b->tu, clang_getCanonicalType(pointee));
    n->is_const = clang_isConstQualifiedType(pointee) != 0;
  } else {
    n->is_const = clang_isConstQualifiedType(t) != 0;
  }
  n->is_restrict = clang_isRestrictQualifiedType(t) != 0;
}

/* ---- attributes ---- */

ks_anode *kast_build_attr(kast_builder *b, CXCursor c, ks_anode *parent) {
  ks_anode *n = kast_new_node(b, c, parent);
  n->kind = KS_AK_ATTR;
  CXSourceLocation loc = clang_getCursorLocation(c);
  unsigned at;
  if (!kast_expansion_offset(b, loc, &at))
    at = n->begin;
  n->from_macro = kast_is_macro_loc(loc);
  n->begin = n->end = at;
  size_t i = kast_token_at(b, at);
  if (i < b->ntokens && b->tokens[i].begin == at) {
    n->name = token_text(b, i);
    n->end = b->tokens[i].end;
    if (kast_token_is(b, i + 1, "(")) {
      size_t close = kast_token_match(b, i + 1);
      if (close < b->ntokens)
        n->end = b->tokens[close].end;
      /* __attribute__((name(...))): the attribute's own name. */
      if (!strcmp(n->name, "__attribute__") && kast_token_is(b, i + 2, "(") && i + 3 < b->ntokens &&
          b->tokens[i + 3].kind == CXToken_Identifier)
        n->name = token_text(b, i + 3);
    }
  } else {
    n->name = ks_tu_spelling(&b->tu, c);
  }
  n->name_begin = n->begin;
  n->name_end = n->begin + (unsigned)strlen(n->name);
  if (n->name_end > n->end)
    n->name_end = n->end;
  return n;
}

static bool is_restrict_token(kast_builder *b, size_t i) {
  return kast_token_is(b, i, "__restrict__") || kast_token_is(b, i, "__restrict") ||
         kast_token_is(b, i, "restrict");
}

/* ---- declarations ---- */

static void build_param(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_PARAM;
  kast_decl_name(b, c, n);
  pointer_info(b, clang_getCursorType(c), n);
  remember_decl(b, c, n);
  /* Attributes, and __restrict__ (a qualifier to clang, but what a rule
   * adds or removes as written). */
  kast_cursors kids = {0};
  kast_children(b, c, true, &kids);
  ks_anode *attrs[16];
  size_t nattrs = 0;
  for (size_t i = 0; i < kids.len && nattrs < 16; i++)
    if (clang_isAttribute(clang_getCursorKind(kids.items[i])))
      attrs[nattrs++] = kast_build_attr(b, kids.items[i], n);
  if (!n->from_macro)
    for (size_t i = kast_token_at(b, n->begin); i < b->ntokens && b->tokens[i].begin < n->end &&
                                                nattrs < 16;
         i++)
      if (is_restrict_token(b, i)) {
        ks_anode *r = ks_arena_alloc(b->arena, sizeof *r);
        r->kind = KS_AK_ATTR;
        r->kind_name = "restrict";
        r->name = token_text(b, i);
        r->begin = r->name_begin = b->tokens[i].begin;
        r->end = r->name_end = b->tokens[i].end;
        r->parent = n;
        attrs[nattrs++] = r;
      }
  kast_set_kids(b, n, nattrs);
  memcpy(n->kids, attrs, nattrs * sizeof *attrs);
}

static void build_var(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_VAR;
  kast_decl_name(b, c, n);
  pointer_info(b, clang_getCursorType(c), n);
  kast_cursors kids = {0};
  kast_children(b, c, true, &kids);
  for (size_t i = 0; i < kids.len; i++)
    if (clang_getCursorKind(kids.items[i]) == CXCursor_CUDASharedAttr)
      n->shared_space = true;
  remember_decl(b, c, n);
  CXCursor init = clang_Cursor_getVarDeclInitializer(c);
  if (clang_Cursor_isNull(init)) {
    kast_set_kids(b, n, 0);
    return;
  }
  /* A class-type variable without an initializer has an implicit default
   * construction at its name: not written, so not a kid. */
  unsigned ib, ie;
  bool im;
  kast_extent(b, init, &ib, &ie, &im);
  if (!n->from_macro && (ib < n->name_end || ie <= ib)) {
    kast_set_kids(b, n, 0);
    return;
  }
  kast_set_kids(b, n, 1);
  n->kids[0] = kast_build_node(b, init, n);
}

static void build_template_param(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_TEMPLATE_PARAM;
  kast_decl_name(b, c, n);
  if (clang_getCursorKind(c) != CXCursor_NonTypeTemplateParameter)
    n->type = NULL;
  remember_decl(b, c, n);
  kast_set_kids(b, n, 0);
}

/* ---- expressions ---- */

static bool punctuation(kast_builder *b, size_t i) {
  return i < b->ntokens && (b->tokens[i].kind == CXToken_Punctuation ||
                            b->tokens[i].kind == CXToken_Keyword);
}

static const char *trimmed(kast_builder *b, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) {
    s++;
    n--;
  }
  while (n && isspace((unsigned char)s[n - 1]))
    n--;
  return ks_arena_strndup(b->arena, s, n);
}

static CXSourceLocation start_of(CXCursor c) { return clang_getRangeStart(clang_getCursorExtent(c)); }

/* Inside a macro: the operator is the run of operator characters that ends
 * the spelled text from the left operand to the right one. */
static const char *macro_infix(kast_builder *b, CXCursor lhs, CXCursor rhs) {
  const char *text = kast_spelled_between(b, start_of(lhs), start_of(rhs));
  if (!text)
    return "?";
  size_t n = strlen(text);
  while (n && isspace((unsigned char)text[n - 1]))
    n--;
  size_t s = n;
  while (s && strchr("+-*/%<>=!&|^,", text[s - 1]))
    s--;
  return s < n ? ks_arena_strndup(b->arena, text + s, n - s) : "?";
}

static void build_binary(kast_builder *b, CXCursor c, ks_anode *n, ks_akind kind) {
  n->kind = kind;
  kast_cursors kids = {0};
  kast_children(b, c, false, &kids);
  build_kids(b, n, kids.items, kids.len);
  if (kids.len != 2) {
    n->op = "?";
    return;
  }
  if (!n->from_macro) {
    /* The first token after the left operand. */
    size_t i = kast_token_at(b, n->kids[0]->end);
    if (punctuation(b, i) && b->tokens[i].begin < n->kids[1]->begin) {
      n->op = token_text(b, i);
      return;
    }
  }
  n->op = macro_infix(b, kids.items[0], kids.items[1]);
}

static void build_unary(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_UNARY;
  build_children(b, c, n);
  if (n->nkids != 1) {
    n->op = "?";
    return;
  }
  const ks_anode *operand = n->kids[0];
  if (!n->from_macro) {
    if (operand->begin > n->begin) {
      size_t i = kast_token_at(b, n->begin);
      if (punctuation(b, i) && b->tokens[i].begin == n->begin) {
        n->op = token_text(b, i);
        return;
      }
    } else {
      size_t i = kast_token_at(b, operand->end);
      if (punctuation(b, i) && b->tokens[i].end == n->end) {
        n->op = token_text(b, i);
        n->postfix = true;
        return;
      }
    }
  }
  /* Inside a macro: prefix operators lie between the two starts; a
   * postfix one follows a named operand. */
  kast_cursors kids = {0};
  kast_children(b, c, false, &kids);
  CXSourceLocation at = start_of(c), sub = start_of(kids.items[0]);
  n->op = "?";
  if (sub.int_data != at.int_data) {
    const char *text = kast_spelled_between(b, at, sub);
    if (text)
      n->op = trimmed(b, text, strlen(text));
    return;
  }
  n->postfix = true;
  if (operand->kind == KS_AK_DECL_REF && operand->name && kast_is_macro_loc(sub)) {
    size_t len = strlen(operand->name);
    const char *text = kast_spelled(b, sub, (unsigned)len + 16);
    if (!strncmp(text, operand->name, len)) {
      text += len;
      while (isspace((unsigned char)*text))
        text++;
      if (!strncmp(text, "++", 2) || !strncmp(text, "--", 2))
        n->op = ks_arena_strndup(b->arena, text, 2);
    }
  }
}

static void build_member(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_MEMBER;
  build_children(b, c, n);
  const char *name = ks_tu_spelling(&b->tu, c);
  if (!n->from_macro) {
    /* CUDA's builtin variables are property accesses with no name in the
     * C API: the member is the last identifier of the text. */
    size_t last = b->ntokens;
    for (size_t i = kast_token_at(b, n->begin); i < b->ntokens && b->tokens[i].end <= n->end; i++)
      if (b->tokens[i].kind == CXToken_Identifier)
        last = i;
    if (last < b->ntokens) {
      if (!*name)
        name = token_text(b, last);
      n->name_begin = b->tokens[last].begin;
      n->name_end = b->tokens[last].end;
      n->arrow = last > 0 && kast_token_is(b, last - 1, "->");
    }
  } else if (n->nkids == 1 && n->kids[0]->kind == KS_AK_DECL_REF && n->kids[0]->name) {
    /* Inside a macro (`#define TID threadIdx.x`): the spelled text after
     * a named base. */
    const char *base = n->kids[0]->name;
    size_t len = strlen(base);
    const char *text = kast_spelled(b, start_of(c), (unsigned)len + 64);
    if (kast_is_macro_loc(start_of(c)) && !strncmp(text, base, len)) {
      text += len;
      while (isspace((unsigned char)*text))
        text++;
      n->arrow = !strncmp(text, "->", 2);
      text += n->arrow ? 2 : *text == '.';
      while (isspace((unsigned char)*text))
        text++;
      size_t id = 0;
      while (isalnum((unsigned char)text[id]) || text[id] == '_')
        id++;
      if (!*name && id)
        name = ks_arena_strndup(b->arena, text, id);
    }
    n->name_begin = n->begin;
    n->name_end = n->end;
  } else {
    n->name_begin = n->begin;
    n->name_end = n->end;
  }
  n->name = name;
}

static bool compound_assign_op(const char *op) {
  size_t len = strlen(op);
  return len >= 2 && op[len - 1] == '=' && strcmp(op, "==") && strcmp(op, "!=") &&
         strcmp(op, "<=") && strcmp(op, ">=");
}

/* An overloaded operator (__half arithmetic, a vector type's operator+)
 * is a call to clang; a rule sees the operator it was written as. */
static bool build_operator_call(kast_builder *b, CXCursor c, ks_anode *n, const char *callee) {
  if (strncmp(callee, "operator", 8))
    return false;
  const char *op = callee + 8;
  if (!*op || isalnum((unsigned char)*op) || *op == '_' || *op == ' ')
    return false;
  int nargs = clang_Cursor_getNumArguments(c);
  if (!strcmp(op, "()") && nargs >= 1) {
    /* A lambda or functor called: named after the object. */
    CXCursor object = clang_Cursor_getArgument(c, 0);
    n->kind = KS_AK_CALL;
    n->name = first_name(b, object, 0);
    unsigned ob, oe;
    bool om;
    kast_extent(b, object, &ob, &oe, &om);
    n->name_begin = ob;
    n->name_end = oe;
    kast_set_kids(b, n, (size_t)nargs - 1);
    for (int i = 1; i < nargs; i++)
      n->kids[i - 1] = kast_build_node(b, clang_Cursor_getArgument(c, (unsigned)i), n);
    return true;
  }
  if (nargs < 1 || nargs > 2 || !strcmp(op, "->") || !strcmp(op, ","))
    return false;
  bool incdec = !strcmp(op, "++") || !strcmp(op, "--");
  /* Postfix ++ carries an implicit second argument. */
  size_t count = incdec ? 1 : (size_t)nargs;
  kast_set_kids(b, n, count);
  for (size_t i = 0; i < count; i++)
    n->kids[i] = kast_build_node(b, clang_Cursor_getArgument(c, (unsigned)i), n);
  n->op = ks_arena_strdup(b->arena, op);
  if (!strcmp(op, "[]") && nargs == 2) {
    n->kind = KS_AK_SUBSCRIPT;
    n->op = NULL;
  } else if (nargs == 1 || incdec) {
    n->kind = KS_AK_UNARY;
    n->postfix = incdec && nargs == 2;
  } else {
    n->kind = compound_assign_op(op) ? KS_AK_COMPOUND_ASSIGN : KS_AK_BINARY;
  }
  return true;
}

static void build_call(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_CALL;
  kast_cursors kids = {0};
  kast_children(b, c, false, &kids);
  const char *name = first_name(b, c, 0);
  if (build_operator_call(b, c, n, name))
    return;
  n->name = name;
  enum CXCursorKind rk = clang_getCursorKind(clang_getCursorReferenced(c));
  int nargs = clang_Cursor_getNumArguments(c);
  /* T(x) with a dependent T is an unresolved construction to clang, a
   * functional cast as written. */
  kast_cursors all = {0};
  kast_children(b, c, true, &all);
  if (nargs < 0 && kids.len == 1 && all.len == 2 &&
      clang_getCursorKind(all.items[0]) == CXCursor_TypeRef) {
    n->kind = KS_AK_CAST;
    n->name = NULL;
    build_kids(b, n, kids.items, 1);
    return;
  }
  bool construct = rk == CXCursor_Constructor;
  /* The callee as written: the first child of a call, the type's name of a
   * construction. */
  if (!construct && kids.len > 0) {
    bool m;
    unsigned eb, ee;
    kast_extent(b, collapse(b, kids.items[0]), &eb, &ee, &m);
    if (eb == n->begin && (ee < n->end || n->from_macro)) {
      n->name_begin = eb;
      n->name_end = ee;
    } else {
      name_range(b, n->begin, &n->name_begin, &n->name_end);
    }
  } else {
    name_range(b, n->begin, &n->name_begin, &n->name_end);
  }
  if (nargs >= 0) {
    kast_set_kids(b, n, (size_t)nargs);
    for (int i = 0; i < nargs; i++)
      n->kids[i] = kast_build_node(b, clang_Cursor_getArgument(c, (unsigned)i), n);
  } else {
    /* T(a, b) with a dependent T: the type is a reference, every other
     * child an argument. */
    build_kids(b, n, kids.items, kids.len);
  }
}

static void build_decl_ref(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_DECL_REF;
  n->name = first_name(b, c, 0);
  n->name_begin = n->begin;
  n->name_end = n->end;
  n->decl = find_decl(b, clang_getCursorReferenced(c));
  kast_set_kids(b, n, 0);
}

static void build_int(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_INT_LITERAL;
  CXEvalResult r = clang_Cursor_Evaluate(c);
  if (r) {
    if (clang_EvalResult_getKind(r) == CXEval_Int)
      n->int_value = clang_EvalResult_isUnsignedInt(r)
                         ? (long long)clang_EvalResult_getAsUnsigned(r)
                         : clang_EvalResult_getAsLongLong(r);
    clang_EvalResult_dispose(r);
  }
  kast_set_kids(b, n, 0);
}

/* ---- statements ---- */

/* Offsets of the two semicolons and the closing parenthesis of the for
 * header starting at `at`. */
static bool for_header(kast_builder *b, unsigned at, unsigned *semi1, unsigned *semi2,
                       unsigned *close) {
  size_t i = kast_token_at(b, at);
  if (!kast_token_is(b, i, "for") || !kast_token_is(b, i + 1, "("))
    return false;
  size_t end = kast_token_match(b, i + 1);
  if (end >= b->ntokens)
    return false;
  unsigned semis[2];
  int nsemi = 0;
  for (size_t k = i + 2; k < end; k++) {
    if (kast_token_is(b, k, "(") || kast_token_is(b, k, "[") || kast_token_is(b, k, "{")) {
      size_t m = kast_token_match(b, k);
      if (m >= end)
        return false;
      k = m;
    } else if (kast_token_is(b, k, ";") && nsemi < 2) {
      semis[nsemi++] = b->tokens[k].begin;
    }
  }
  if (nsemi != 2)
    return false;
  *semi1 = semis[0];
  *semi2 = semis[1];
  *close = b->tokens[end].begin;
  return true;
}

/* Inside a macro the header's text is not at hand: a declaration is the
 * init, an increment or compound assignment the step, anything else the
 * condition. */
static int guess_for_slot(CXCursor c) {
  switch (clang_getCursorKind(c)) {
  case CXCursor_DeclStmt:
    return 0;
  case CXCursor_UnaryOperator:
  case CXCursor_CompoundAssignOperator:
    return 2;
  default:
    return 1;
  }
}

static void build_for(kast_builder *b, CXCursor c, ks_anode *n) {
  n->kind = KS_AK_FOR;
  kast_set_kids(b, n, 4);
  kast_cursors kids = {0};
  kast_children(b, c, false, &kids);
  if (!kids.len)
    return;
  unsigned semi1 = 0, semi2 = 0, close = 0;
  bool header = !n->from_macro && for_header(b, n->begin, &semi1, &semi2, &close);
  size_t parts = kids.len - 1;
  for (size_t i = 0; i < parts; i++) {
    int slot;
    if (header) {
      unsigned kb, ke;
      bool km;
      kast_extent(b, kids.items[i], &kb, &ke, &km);
      slot = kb < semi1 ? 0 : kb < semi2 ? 1 : 2;
    } else {
      slot = parts == 3 ? (int)i : guess_for_slot(kids.items[i]);
    }
    while (slot < 3 && n->kids[slot])
      slot++;
    if (slot < 3)
      n->kids[slot] = kast_build_node(b, kids.items[i], n);
  }
  n->kids[3] = kast_build_node(b, kids.items[kids.len - 1], n);
}

static ks_akind simple_kind(enum CXCursorKind k) {
  switch (k) {
  case CXCursor_CompoundStmt:
    return KS_AK_COMPOUND;
  case CXCursor_DeclStmt:
    return KS_AK_DECL_STMT;
  case CXCursor_IfStmt:
    return KS_AK_IF;
  case CXCursor_WhileStmt:
    return KS_AK_WHILE;
  case CXCursor_DoStmt:
    return KS_AK_DO;
  case CXCursor_ReturnStmt:
    return KS_AK_RETURN;
  case CXCursor_BreakStmt:
    return KS_AK_BREAK;
  case CXCursor_ContinueStmt:
    return KS_AK_CONTINUE;
  case CXCursor_ConditionalOperator:
    return KS_AK_CONDITIONAL;
  case CXCursor_ArraySubscriptExpr:
    return KS_AK_SUBSCRIPT;
  case CXCursor_FloatingLiteral:
    return KS_AK_FLOAT_LITERAL;
  case CXCursor_CStyleCastExpr:
  case CXCursor_CXXStaticCastExpr:
  case CXCursor_CXXReinterpretCastExpr:
  case CXCursor_CXXConstCastExpr:
  case CXCursor_CXXDynamicCastExpr:
  case CXCursor_CXXFunctionalCastExpr:
    return KS_AK_CAST;
  case CXCursor_ParenExpr:
    return KS_AK_PAREN;
  case CXCursor_InitListExpr:
    return KS_AK_INIT_LIST;
  default:
    return KS_AK_OTHER;
  }
}

ks_anode *kast_build_node(kast_builder *b, CXCursor c, ks_anode *parent) {
  c = collapse(b, c);
  ks_anode *n = kast_new_node(b, c, parent);
  enum CXCursorKind k = clang_getCursorKind(c);
  switch (k) {
  case CXCursor_ParmDecl:
    build_param(b, c, n);
    break;
  case CXCursor_VarDecl:
    build_var(b, c, n);
    break;
  case CXCursor_TemplateTypeParameter:
  case CXCursor_NonTypeTemplateParameter:
  case CXCursor_TemplateTemplateParameter:
    build_template_param(b, c, n);
    break;
  case CXCursor_ForStmt:
    build_for(b, c, n);
    break;
  case CXCursor_BinaryOperator:
    build_binary(b, c, n, KS_AK_BINARY);
    break;
  case CXCursor_CompoundAssignOperator:
    build_binary(b, c, n, KS_AK_COMPOUND_ASSIGN);
    break;
  case CXCursor_UnaryOperator:
    build_unary(b, c, n);
    break;
  case CXCursor_CallExpr:
    build_call(b, c, n);
    break;
  case CXCursor_MemberRefExpr:
    build_member(b, c, n);
    break;
  case CXCursor_DeclRefExpr:
    build_decl_ref(b, c, n);
    break;
  case CXCursor_IntegerLiteral:
    build_int(b, c, n);
    break;
  default:
    n->kind = simple_kind(k);
    build_children(b, c, n);
    break;
  }
  return n;
}
