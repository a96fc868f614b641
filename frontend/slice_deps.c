/* The closure of a slice: starting from the kernel, every declaration its
 * text refers to, and theirs in turn.
 *
 * Each item (a declaration at namespace scope) is walked once. Every
 * reference in it (names, types, templates, namespaces, members, calls, the
 * candidates of a dependent call) is followed to its declaration:
 * - in a system header, it is not copied: slice_compat.c says whether NVRTC
 *   has it, needs an #include for it, or lacks it (a reason to fail);
 * - in the user's files, the item holding it becomes needed, with its first
 *   declaration (for forward declarations and default arguments) and its
 *   definition; an implicit instantiation stands for its template, and a
 *   template brings the specializations the user wrote for it.
 * Device code may call __device__ functions and constexpr ones (which become
 * __host__ __device__: NVRTC accepts no function without an execution
 * space); a call of any other host function, or a use of a mutable host
 * variable, fails. Classes are copied whole, less their host-only member
 * functions, which NVRTC would refuse and device code cannot call. */
#include <string.h>

#include "ks_ctext.h"
#include "slice.h"

typedef struct walk {
  ks_slicer *s;
  bool device; /* inside device code */
} walk;

static void walk_cursor(walk *w, CXCursor c, CXCursor parent);

/* ---- what a declaration is ---------------------------------------------- */

typedef struct attr_find {
  bool device, host, constant, shared;
} attr_find;

static enum CXChildVisitResult find_attrs(CXCursor c, CXCursor parent, CXClientData data) {
  attr_find *a = data;
  switch (clang_getCursorKind(c)) {
  case CXCursor_CUDADeviceAttr:
  case CXCursor_CUDAGlobalAttr:
    a->device = true;
    break;
  case CXCursor_CUDAHostAttr:
    a->host = true;
    break;
  case CXCursor_CUDAConstantAttr:
    a->constant = true;
    break;
  case CXCursor_CUDASharedAttr:
    a->shared = true;
    break;
  default:
    break;
  }
  return CXChildVisit_Continue;
}

static attr_find attrs_of(CXCursor c) {
  attr_find a = {false, false, false, false};
  clang_visitChildren(c, find_attrs, &a);
  return a;
}

bool ks_slice_device_variable(CXCursor c) {
  if (clang_getCursorKind(c) != CXCursor_VarDecl)
    return false;
  attr_find a = attrs_of(c);
  return (a.constant || a.device) && !a.shared;
}

static bool is_function(enum CXCursorKind k) {
  return k == CXCursor_FunctionDecl || k == CXCursor_FunctionTemplate || k == CXCursor_CXXMethod ||
         k == CXCursor_Constructor || k == CXCursor_Destructor ||
         k == CXCursor_ConversionFunction;
}

static bool is_class(enum CXCursorKind k) {
  return k == CXCursor_ClassDecl || k == CXCursor_StructDecl || k == CXCursor_UnionDecl ||
         k == CXCursor_ClassTemplate || k == CXCursor_ClassTemplatePartialSpecialization;
}

static bool is_scope(CXCursor c) {
  enum CXCursorKind k = clang_getCursorKind(c);
  if (k == CXCursor_UnexposedDecl) { /* unnamed: a scope; named: a variable template */
    CXString sp = clang_getCursorSpelling(c);
    bool named = *clang_getCString(sp) != '\0';
    clang_disposeString(sp);
    return !named;
  }
  return k == CXCursor_TranslationUnit || k == CXCursor_Namespace || k == CXCursor_LinkageSpec;
}

typedef struct word_find {
  const char *word;
  bool found;
} word_find;

static bool match_word(void *data, const char *ident, size_t len, size_t offset) {
  word_find *f = data;
  (void)offset;
  if (strlen(f->word) == len && !strncmp(ident, f->word, len))
    f->found = true;
  return !f->found;
}

static bool text_has_word(const char *text, const char *word) {
  word_find f = {word, false};
  if (text)
    ks_slice_identifiers(text, strlen(text), match_word, &f);
  return f.found;
}

/* The text of a declaration before its name: where constexpr would be. */
static const char *head_text(ks_slicer *s, CXCursor c) {
  ks_range r = ks_tu_extent(&s->tu, c);
  ks_loc name = ks_tu_loc(&s->tu, clang_getCursorLocation(c));
  if (!r.begin.file || !name.file || strcmp(r.begin.file, name.file) ||
      name.offset < r.begin.offset)
    return NULL;
  return ks_tu_text(&s->tu, r.begin.file, r.begin.offset, name.offset);
}

static bool is_constexpr(ks_slicer *s, CXCursor c) {
  return text_has_word(head_text(s, c), "constexpr");
}

/* "= default" (also implicitly) or "= delete": no body for NVRTC to refuse,
 * and __host__ __device__ when defined. */
static bool is_defaulted(CXCursor c) {
  return clang_CXXMethod_isDefaulted(c) || clang_CXXMethod_isDeleted(c);
}

static const char *where(ks_slicer *s, CXCursor c) {
  ks_loc loc = ks_tu_expansion_loc(&s->tu, clang_getCursorLocation(c));
  const char *file = loc.file ? strrchr(loc.file, '/') : NULL;
  return ks_arena_printf(s->tu.arena, "%s:%u", file ? file + 1 : loc.file ? loc.file : "?",
                         loc.line);
}

/* ---- edits --------------------------------------------------------------- */

static void add_edit(ks_slicer *s, const char *file, unsigned begin, unsigned end,
                     const char *text) {
  for (size_t i = 0; i < s->edits.len; i++) {
    const slice_edit *e = &s->edits.items[i];
    if (e->begin == begin && e->end == end && !strcmp(e->file, file))
      return;
  }
  slice_edit *e = ks_array_push(s->tu.arena, &s->edits);
  e->file = file;
  e->begin = begin;
  e->end = end;
  e->text = text;
}

/* Makes a constexpr function __host__ __device__, as nvcc's
 * --expt-relaxed-constexpr treats it: the words go after any template
 * headers, before the declaration proper. */
static void make_host_device(ks_slicer *s, CXCursor c) {
  ks_range r = ks_tu_extent(&s->tu, c);
  const char *text = ks_tu_range_text(&s->tu, r);
  if (!text)
    return;
  const char *p = text, *end = text + strlen(text);
  for (;;) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
      p++;
    if (strncmp(p, "template", 8) || ks_ctext_is_ident_char(p[8]))
      break;
    const char *open = strchr(p + 8, '<');
    const char *close = open ? ks_ctext_matching(open, end) : NULL;
    if (!close)
      break;
    p = close + 1;
  }
  unsigned at = r.begin.offset + (unsigned)(p - text);
  add_edit(s, r.begin.file, at, at, "__host__ __device__ ");
}

/* Removes a host-only member function from its class's text. */
static void remove_member(ks_slicer *s, CXCursor c) {
  ks_range r = ks_tu_extent(&s->tu, c);
  if (r.begin.file && r.end.offset > r.begin.offset)
    add_edit(s, r.begin.file, r.begin.offset, r.end.offset, "");
}

/* ---- items --------------------------------------------------------------- */

static void need_item(ks_slicer *s, long index);

/* Items that complete item `i`: the specializations written for a template,
 * and members of a class defined outside it that are device code. */
static void need_completions(ks_slicer *s, size_t i) {
  const char *usr = ks_tu_usr(&s->tu, s->items.items[i].cursor);
  if (!*usr)
    return;
  for (size_t k = 0; k < s->items.len; k++) {
    const slice_item *it = &s->items.items[k];
    if (it->needed || !it->template_usr || strcmp(it->template_usr, usr))
      continue;
    bool specialization = !clang_Cursor_isNull(clang_getSpecializedCursorTemplate(it->cursor)) ||
                          it->kind == CXCursor_ClassTemplatePartialSpecialization;
    if (specialization || !is_function(it->kind) || attrs_of(it->cursor).device)
      need_item(s, (long)k);
  }
}

static void need_item(ks_slicer *s, long index) {
  if (index < 0 || s->items.items[index].needed)
    return;
  s->items.items[index].needed = true;
  *ks_array_push(s->tu.arena, &s->worklist) = (size_t)index;
  need_completions(s, (size_t)index);
}

/* ---- references ----------------------------------------------------------- */

/* Notes the namespaces around a system declaration the slice uses. */
static void note_namespaces(ks_slicer *s, CXCursor decl) {
  for (CXCursor p = clang_getCursorSemanticParent(decl);
       clang_getCursorKind(p) == CXCursor_Namespace; p = clang_getCursorSemanticParent(p)) {
    const char *name = ks_tu_qualified_name(&s->tu, p);
    bool known = false;
    for (size_t i = 0; i < s->system_namespaces.len && !known; i++)
      known = !strcmp(s->system_namespaces.items[i], name);
    if (!known)
      *ks_array_push(s->tu.arena, &s->system_namespaces) = name;
  }
}

static void system_ref(walk *w, CXCursor decl) {
  ks_slicer *s = w->s;
  const char *text = NULL;
  note_namespaces(s, decl);
  /* The device runtime (cudaMalloc, cudaFree, ... in device code) links
   * only into relocatable device code. */
  if (w->device && is_function(clang_getCursorKind(decl))) {
    const char *name = ks_tu_spelling(&s->tu, decl);
    if (!strncmp(name, "cuda", 4) && name[4] >= 'A' && name[4] <= 'Z')
      s->needs_rdc = true;
  }
  switch (ks_slice_system_decl(s, decl, &text)) {
  case SLICE_SYS_BUILTIN:
    break;
  case SLICE_SYS_INCLUDE:
    ks_slice_add_include(s, text);
    break;
  case SLICE_SYS_DEFINE:
    ks_slice_add_prelude(s, text);
    break;
  case SLICE_SYS_MISSING:
    if (!s->failed)
      ks_fail(s->ctx, "it uses '%s' from %s%s%s, which NVRTC does not provide",
              ks_tu_qualified_name(&s->tu, decl), text ? "<" : "",
              text ? text : "the C++ standard library", text ? ">" : "");
    s->failed = true;
    break;
  }
}

/* An implicit instantiation sits where its template is: it stands for the
 * template (what the user wrote). */
static CXCursor pattern_of(CXCursor c) {
  for (int depth = 0; depth < 8; depth++) {
    CXCursor tmpl = clang_getSpecializedCursorTemplate(c);
    if (clang_Cursor_isNull(tmpl) ||
        !clang_equalLocations(clang_getCursorLocation(c), clang_getCursorLocation(tmpl)))
      break;
    c = tmpl;
  }
  return c;
}

static bool fail_once(ks_slicer *s) {
  if (s->failed)
    return false;
  s->failed = true;
  return true;
}

static bool is_lambda_member(ks_slicer *s, CXCursor fn) {
  CXCursor parent = clang_getCursorSemanticParent(fn);
  return is_class(clang_getCursorKind(parent)) &&
         !strncmp(ks_tu_spelling(&s->tu, parent), "(lambda", 7);
}

/* Whether device code may use function `fn`; fails (or, for a mere
 * candidate of a dependent call, says no) when it may not. */
static bool device_may_call(walk *w, CXCursor fn, bool candidate) {
  ks_slicer *s = w->s;
  attr_find a = attrs_of(fn);
  if (a.device)
    return true;
  if (is_constexpr(s, fn)) {
    make_host_device(s, fn);
    CXCursor def = clang_getCursorDefinition(fn);
    if (!clang_Cursor_isNull(def) && !clang_equalCursors(def, fn))
      make_host_device(s, def);
    return true;
  }
  if (is_defaulted(fn))
    return true; /* implicit or defaulted: __host__ __device__ */
  if (is_lambda_member(s, fn))
    return true; /* a lambda takes the execution space of where it is */
  if (candidate || !w->device)
    return false;
  if (fail_once(s))
    ks_fail(s->ctx, "it calls host function '%s' (%s)", ks_tu_qualified_name(&s->tu, fn),
            where(s, fn));
  return false;
}

/* Clang declares its builtins (__syncthreads, __builtin_inff) implicitly,
 * at their first use, so they seem to be the user's: a reserved name and
 * no definition tell them apart. */
static bool is_builtin_name(ks_slicer *s, CXCursor fn) {
  const char *name = ks_tu_spelling(&s->tu, fn);
  return name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
}

/* Lexically: a block-scope `extern __shared__ float buf[];` belongs to the
 * namespace semantically, but is written in (and copied with) its function. */
static bool at_namespace_scope(CXCursor c) {
  return is_scope(clang_getCursorLexicalParent(c));
}

static void follow(walk *w, CXCursor ref, bool candidate) {
  ks_slicer *s = w->s;
  if (s->failed || clang_Cursor_isNull(ref))
    return;
  enum CXCursorKind k = clang_getCursorKind(ref);
  if (!clang_isDeclaration(k) || k == CXCursor_ParmDecl || k == CXCursor_TemplateTypeParameter ||
      k == CXCursor_NonTypeTemplateParameter || k == CXCursor_TemplateTemplateParameter)
    return;
  CXSourceLocation loc = clang_getCursorLocation(ref);
  CXFile file = NULL;
  clang_getFileLocation(loc, &file, NULL, NULL, NULL);
  if (!file)
    return; /* declared by the compiler (__syncthreads, the launch machinery) */
  if (clang_Location_isInSystemHeader(loc)) {
    system_ref(w, ref);
    return;
  }
  if (ks_slice_in_stubs(s, ref))
    return; /* surf2Dwrite, __ldcg: declared for clang, built into NVRTC */
  /* A local (or block-scope extern) declaration is part of the function
   * that declares it, which is being walked. */
  if (is_function(clang_getCursorKind(clang_getCursorLexicalParent(ref))))
    return;
  ref = pattern_of(ref);
  k = clang_getCursorKind(ref);
  CXCursor def = clang_getCursorDefinition(ref);
  if (is_function(k) && clang_Cursor_isNull(def) && is_builtin_name(s, ref))
    return; /* a compiler builtin, declared where it is first used */
  if (is_function(k)) {
    if (w->device && !device_may_call(w, ref, candidate))
      return;
    /* A template declared only may be defined by its explicit
     * specializations, which come with it. */
    if (clang_Cursor_isNull(def) && attrs_of(ref).device && k != CXCursor_Constructor &&
        k != CXCursor_Destructor && k != CXCursor_FunctionTemplate &&
        !clang_CXXMethod_isPureVirtual(ref) && fail_once(s))
      ks_fail(s->ctx, "it calls device function '%s', whose definition is not in the scanned "
                      "files (%s)",
              ks_tu_qualified_name(&s->tu, ref), where(s, ref));
  } else if (k == CXCursor_VarDecl && at_namespace_scope(ref)) {
    attr_find a = attrs_of(ref);
    bool device_var = a.device || a.constant;
    if (w->device && !device_var && !a.shared && !clang_isConstQualifiedType(clang_getCursorType(ref)) &&
        !is_constexpr(s, ref) && fail_once(s))
      ks_fail(s->ctx, "it uses host variable '%s' (%s)", ks_tu_qualified_name(&s->tu, ref),
              where(s, ref));
    if (device_var && clang_Cursor_isNull(def) && fail_once(s))
      ks_fail(s->ctx, "it uses device variable '%s', whose definition is not in the scanned "
                      "files (%s)",
              ks_tu_qualified_name(&s->tu, ref), where(s, ref));
  }
  if (s->failed)
    return;
  need_item(s, ks_slice_item_of(s, clang_getCanonicalCursor(ref)));
  need_item(s, ks_slice_item_of(s, ref));
  if (!clang_Cursor_isNull(def))
    need_item(s, ks_slice_item_of(s, def));
  /* A specialization the user wrote needs its template too. */
  CXCursor tmpl = clang_getSpecializedCursorTemplate(ref);
  if (!clang_Cursor_isNull(tmpl) && !clang_Location_isInSystemHeader(clang_getCursorLocation(tmpl)))
    need_item(s, ks_slice_item_of(s, tmpl));
}

/* Types of variables and fields, for what is not written as a TypeRef
 * (auto, template arguments of a deduced specialization). */
static void follow_type(walk *w, CXType t, int depth) {
  if (depth > 12 || t.kind == CXType_Invalid)
    return;
  switch (t.kind) {
  case CXType_Pointer:
  case CXType_LValueReference:
  case CXType_RValueReference:
    follow_type(w, clang_getPointeeType(t), depth + 1);
    return;
  case CXType_ConstantArray:
  case CXType_IncompleteArray:
  case CXType_VariableArray:
  case CXType_DependentSizedArray:
    follow_type(w, clang_getArrayElementType(t), depth + 1);
    return;
  case CXType_Elaborated:
    follow_type(w, clang_Type_getNamedType(t), depth + 1);
    return;
  case CXType_Auto:
    follow_type(w, clang_getCanonicalType(t), depth + 1);
    return;
  default:
    break;
  }
  follow(w, clang_getTypeDeclaration(t), false);
  int n = clang_Type_getNumTemplateArguments(t);
  for (int i = 0; i < n; i++)
    follow_type(w, clang_Type_getTemplateArgumentAsType(t, (unsigned)i), depth + 1);
}

void ks_slice_need_type(ks_slicer *s, CXType t) {
  walk w = {s, false};
  follow_type(&w, t, 0);
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data) {
  walk *w = data;
  ks_slicer *s = w->s;
  if (s->failed)
    return CXChildVisit_Break;
  enum CXCursorKind k = clang_getCursorKind(c);
  if (is_function(k)) {
    walk_cursor(w, c, parent);
    return CXChildVisit_Continue;
  }
  if (k == CXCursor_OverloadedDeclRef) {
    /* A call that depends on template arguments: any candidate may be the
     * one; host-only candidates cannot be, in device code. When none can,
     * the call is of a host function (clang, finding no viable function,
     * leaves the candidates). */
    unsigned n = clang_getNumOverloadedDecls(c), rejected = 0;
    for (unsigned i = 0; i < n; i++) {
      CXCursor d = clang_getOverloadedDecl(c, i);
      if (w->device && is_function(clang_getCursorKind(d)) &&
          !clang_Location_isInSystemHeader(clang_getCursorLocation(d)) &&
          !device_may_call(w, d, true))
        rejected++;
      else
        follow(w, d, true);
    }
    if (n && rejected == n && fail_once(s)) {
      CXCursor d = clang_getOverloadedDecl(c, 0);
      ks_fail(s->ctx, "it calls host function '%s' (%s)", ks_tu_qualified_name(&s->tu, d),
              where(s, d));
    }
    return CXChildVisit_Recurse;
  }
  if (k == CXCursor_CallExpr && w->device && ks_tu_is_chevron_launch(c))
    s->needs_rdc = true; /* a launch from device code: dynamic parallelism */
  if (clang_isReference(k) || clang_isExpression(k)) {
    CXCursor ref = clang_getCursorReferenced(c);
    if (!clang_Cursor_isNull(ref) && !clang_equalCursors(ref, c))
      follow(w, ref, false);
  }
  if (k == CXCursor_VarDecl || k == CXCursor_FieldDecl || k == CXCursor_ParmDecl)
    follow_type(w, clang_getCursorType(c), 0);
  return CXChildVisit_Recurse;
}

/* A function met in an item: walked as device code when it is device code
 * (or constexpr), removed when it is a host-only member of a class, left as
 * it is otherwise (a host function can only be here on a checked path). */
static void walk_function(walk *w, CXCursor fn, CXCursor parent) {
  ks_slicer *s = w->s;
  enum CXCursorKind pk = clang_getCursorKind(parent);
  bool member = is_class(pk) || pk == CXCursor_FriendDecl;
  walk inner = {s, attrs_of(fn).device};
  if (!inner.device && is_constexpr(s, fn)) {
    make_host_device(s, fn);
    inner.device = true;
  }
  if (!inner.device && member) {
    if (!is_defaulted(fn))
      remove_member(s, fn);
    return;
  }
  clang_visitChildren(fn, visit, &inner);
}

static void walk_cursor(walk *w, CXCursor c, CXCursor parent) {
  enum CXCursorKind k = clang_getCursorKind(c);
  if (is_function(k)) {
    walk_function(w, c, parent);
    return;
  }
  walk inner = {w->s, k == CXCursor_VarDecl};
  if (k == CXCursor_VarDecl)
    follow_type(&inner, clang_getCursorType(c), 0);
  clang_visitChildren(c, visit, &inner);
}

/* ---- template arguments given by name -------------------------------------- */

/* Names in template arguments ("ns::Op<float>, 4") may be the user's types
 * or constants: those items are needed for the name expression to mean
 * anything. */
static void need_names(ks_slicer *s, const char *text) {
  const char *p = text;
  while (*p) {
    if (!(ks_ctext_is_ident_char(*p) && !(*p >= '0' && *p <= '9'))) {
      p++;
      continue;
    }
    const char *start = p;
    while (ks_ctext_is_ident_char(*p) || (p[0] == ':' && p[1] == ':'))
      p += p[0] == ':' ? 2 : 1;
    const char *name = ks_arena_strndup(s->tu.arena, start, (size_t)(p - start));
    long found = ks_slice_item_named(s, name, 0);
    for (long i = found; i >= 0; i = ks_slice_item_named(s, name, (size_t)i + 1))
      need_item(s, i);
    if (found >= 0)
      continue;
    /* Written without its namespaces. */
    size_t n = strlen(name);
    for (size_t i = 0; i < s->items.len; i++) {
      const char *q = s->items.items[i].name;
      size_t m = strlen(q);
      if (m > n + 2 && !strcmp(q + m - n, name) && q[m - n - 1] == ':')
        need_item(s, (long)i);
    }
  }
}

/* ---- using-directives and using-declarations ---------------------------------- */

/* A `using` at namespace scope changes how later names are found: kept when
 * it comes before needed code and names something the slice has. */
static bool using_applies(ks_slicer *s, const slice_item *u) {
  /* The last child names the target; those before it, its qualifier. */
  CXCursor kids[16];
  unsigned n = ks_tu_children(u->cursor, kids, 16);
  if (!n)
    return false;
  CXCursor last = kids[n - 1];
  CXCursor target = clang_getCursorReferenced(last);
  if (clang_getCursorKind(last) == CXCursor_OverloadedDeclRef && clang_getNumOverloadedDecls(last))
    target = clang_getOverloadedDecl(last, 0);
  if (clang_Cursor_isNull(target))
    return false;
  if (!clang_Location_isInSystemHeader(clang_getCursorLocation(target))) {
    long i = ks_slice_item_of(s, target);
    if (i >= 0 && s->items.items[i].needed)
      return true;
    if (clang_getCursorKind(target) != CXCursor_Namespace)
      return false;
    /* A namespace of the user's: kept when the slice has code in it. */
    const char *ns = ks_tu_qualified_name(&s->tu, target);
    size_t len = strlen(ns);
    for (size_t k = 0; k < s->items.len; k++)
      if (s->items.items[k].needed && !strncmp(s->items.items[k].name, ns, len) &&
          !strncmp(s->items.items[k].name + len, "::", 2))
        return true;
    return false;
  }
  /* A namespace is declared in many headers: it counts when the slice uses
   * something in it. */
  if (clang_getCursorKind(target) == CXCursor_Namespace) {
    const char *ns = ks_tu_qualified_name(&s->tu, target);
    for (size_t i = 0; i < s->system_namespaces.len; i++)
      if (!strcmp(s->system_namespaces.items[i], ns))
        return true;
    return false;
  }
  const char *text = NULL;
  slice_system_kind kind = ks_slice_system_decl(s, target, &text);
  if (kind == SLICE_SYS_BUILTIN)
    return strncmp(ks_tu_qualified_name(&s->tu, target), "std::", 5) != 0;
  if (kind != SLICE_SYS_INCLUDE)
    return false;
  for (size_t i = 0; i < s->includes.len; i++)
    if (!strcmp(s->includes.items[i], text))
      return true;
  return false;
}

static void need_usings(ks_slicer *s) {
  long last = -1;
  for (size_t i = 0; i < s->items.len; i++)
    if (s->items.items[i].needed)
      last = (long)i;
  for (long i = 0; i < last; i++) {
    slice_item *it = &s->items.items[i];
    if ((it->kind == CXCursor_UsingDirective || it->kind == CXCursor_UsingDeclaration) &&
        !it->needed && using_applies(s, it))
      it->needed = true;
  }
}

/* ---- the closure ---------------------------------------------------------------- */

int ks_slice_closure(ks_slicer *s, const char *const *instance_args, size_t ninstance) {
  long kernel = ks_slice_item_of(s, s->kernel_cursor);
  if (kernel < 0)
    return ks_fail(s->ctx, "'%s' is not at namespace scope in %s", s->kernel->qualified_name,
                   s->main_file);
  need_item(s, kernel);
  /* An explicit specialization of a kernel template needs the template. */
  CXCursor tmpl = clang_getSpecializedCursorTemplate(s->kernel_cursor);
  if (!clang_Cursor_isNull(tmpl))
    need_item(s, ks_slice_item_of(s, tmpl));
  for (size_t i = 0; i < ninstance; i++)
    need_names(s, instance_args[i]);
  for (size_t next = 0; next < s->worklist.len && !s->failed; next++) {
    slice_item *it = &s->items.items[s->worklist.items[next]];
    if (it->walked)
      continue;
    it->walked = true;
    walk w = {s, false};
    walk_cursor(&w, it->cursor, clang_getCursorLexicalParent(it->cursor));
  }
  if (s->failed)
    return -1;
  need_usings(s);
  return 0;
}
