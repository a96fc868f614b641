/* A kernel's details from its definition: signature, template parameters,
 * attributes, shared memory, and the device code it reaches.
 *
 * The call graph is followed through the definitions this translation unit
 * can see; functions from system headers (CUDA's intrinsics, CUB) are
 * recorded by name as builtins and not entered. */
#include <string.h>

#include "ks_buf.h"
#include "ks_hash.h"
#include "tu.h"

typedef struct has_attr {
  enum CXCursorKind kind;
  bool found;
} has_attr;

static enum CXChildVisitResult find_attr(CXCursor c, CXCursor parent, CXClientData data) {
  has_attr *h = data;
  if (clang_getCursorKind(c) == h->kind) {
    h->found = true;
    return CXChildVisit_Break;
  }
  return CXChildVisit_Continue;
}

static bool has_child_kind(CXCursor c, enum CXCursorKind kind) {
  has_attr h = {kind, false};
  clang_visitChildren(c, find_attr, &h);
  return h.found;
}

bool ks_tu_is_kernel(CXCursor fn) { return has_child_kind(fn, CXCursor_CUDAGlobalAttr); }

/* ---- parameters ------------------------------------------------------- */

static ks_param_kind classify(CXType t) {
  CXType canon = clang_getCanonicalType(t);
  switch (canon.kind) {
  case CXType_Pointer:
    return KS_PARAM_POINTER;
  case CXType_Record:
    return KS_PARAM_RECORD;
  case CXType_Unexposed:
  case CXType_Invalid:
    return KS_PARAM_DEPENDENT;
  default:
    if (canon.kind >= CXType_FirstBuiltin && canon.kind <= CXType_LastBuiltin)
      return KS_PARAM_SCALAR;
    if (canon.kind == CXType_Enum)
      return KS_PARAM_SCALAR;
    return KS_PARAM_DEPENDENT;
  }
}

static void add_param(ks_tu *tu, CXCursor p, ks_kernel *k) {
  ks_param *out = ks_array_push(tu->arena, &k->params);
  CXType t = clang_getCursorType(p);
  out->name = ks_tu_spelling(tu, p);
  out->type = ks_tu_type(tu, t);
  out->kind = classify(t);
  out->is_const = clang_isConstQualifiedType(t);
  out->is_restrict = clang_isRestrictQualifiedType(t);
  if (t.kind == CXType_Pointer || clang_getCanonicalType(t).kind == CXType_Pointer) {
    /* A typedef of a pointer has no pointee of its own: use the canonical
     * pointer's (clang_getUnqualifiedType crashes on an invalid type). */
    CXType pointee = clang_getPointeeType(t);
    if (pointee.kind == CXType_Invalid)
      pointee = clang_getPointeeType(clang_getCanonicalType(t));
    out->kind = KS_PARAM_POINTER;
    if (pointee.kind != CXType_Invalid) {
      out->pointee_const = clang_isConstQualifiedType(pointee);
      out->pointee = ks_tu_type(tu, clang_getUnqualifiedType(pointee));
    }
  }
  /* What a typedef names (llm.c's floatX): the element type of specs and
   * captures. A dependent type has no canonical spelling worth keeping. */
  CXType canon = clang_getCanonicalType(t);
  if (out->kind != KS_PARAM_DEPENDENT) {
    if (out->kind == KS_PARAM_POINTER) {
      CXType cp = clang_getPointeeType(canon);
      const char *c = cp.kind != CXType_Invalid ? ks_tu_type(tu, clang_getUnqualifiedType(cp)) : NULL;
      if (c && out->pointee && strcmp(c, out->pointee) && !strstr(c, "type-parameter"))
        out->canon_pointee = c;
    } else {
      const char *c = ks_tu_type(tu, clang_getUnqualifiedType(canon));
      if (c && strcmp(c, out->type) && !strstr(c, "type-parameter"))
        out->canon_type = c;
    }
  }
  const char *text = ks_tu_range_text(tu, ks_tu_extent(tu, p));
  out->grid_constant = text && strstr(text, "__grid_constant__");
}

/* ---- template parameters ---------------------------------------------- */

static void add_tparam(ks_tu *tu, CXCursor c, ks_kernel *k) {
  ks_tparam *out = ks_array_push(tu->arena, &k->tparams);
  enum CXCursorKind kind = clang_getCursorKind(c);
  out->kind = kind == CXCursor_TemplateTypeParameter      ? KS_TPARAM_TYPE
              : kind == CXCursor_NonTypeTemplateParameter ? KS_TPARAM_VALUE
                                                          : KS_TPARAM_TEMPLATE;
  out->name = ks_tu_spelling(tu, c);
  if (out->kind == KS_TPARAM_VALUE)
    out->type = ks_tu_type(tu, clang_getCursorType(c));
  const char *text = ks_tu_range_text(tu, ks_tu_extent(tu, c));
  if (text) {
    out->is_pack = strstr(text, "...") != NULL;
    const char *eq = strchr(text, '=');
    if (eq) {
      eq++;
      while (*eq == ' ' || *eq == '\t')
        eq++;
      out->default_arg = eq;
    }
  }
}

/* ---- attributes, read from the declaration's head as written ---------- */

static const char *skip_parens(const char *p) {
  int depth = 0;
  for (; *p; p++) {
    if (*p == '(')
      depth++;
    else if (*p == ')' && --depth == 0)
      return p + 1;
  }
  return p;
}

static void launch_bounds_args(ks_tu *tu, const char *attr, ks_kernel *k) {
  const char *open = strchr(attr, '(');
  if (!open)
    return;
  const char *args[3] = {0};
  int n = 0, depth = 0;
  const char *start = open + 1;
  for (const char *p = open + 1; *p && n < 3; p++) {
    if (*p == '(' || *p == '[' || *p == '{')
      depth++;
    else if ((*p == ')' || *p == ']' || *p == '}') && depth-- == 0) {
      args[n++] = ks_arena_strndup(tu->arena, start, (size_t)(p - start));
      break;
    } else if (*p == ',' && depth == 0) {
      args[n++] = ks_arena_strndup(tu->arena, start, (size_t)(p - start));
      start = p + 1;
    }
  }
  for (int i = 0; i < n; i++) {
    char *a = (char *)args[i];
    while (*a == ' ')
      a++;
    size_t len = strlen(a);
    while (len && a[len - 1] == ' ')
      a[--len] = '\0';
    args[i] = a;
  }
  k->max_threads = n > 0 ? args[0] : NULL;
  k->min_blocks = n > 1 ? args[1] : NULL;
}

static void scan_head(ks_tu *tu, CXCursor def, ks_kernel *k) {
  ks_loc name = ks_tu_loc(tu, clang_getCursorLocation(def));
  const char *head = ks_tu_text(tu, k->extent.begin.file, k->extent.begin.offset,
                                name.offset >= k->extent.begin.offset ? name.offset
                                                                      : k->extent.begin.offset);
  if (!head)
    return;
  static const char *const known[] = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__",
                                      "__noinline__", "__forceinline__", "__attribute__"};
  for (const char *p = head; *p; p++) {
    if (!(p == head || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                         (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'))))
      continue;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
      size_t n = strlen(known[i]);
      if (strncmp(p, known[i], n))
        continue;
      const char *q = p + n;
      while (*q == ' ')
        q++;
      const char *end = *q == '(' ? skip_parens(q) : p + n;
      const char *attr = ks_arena_strndup(tu->arena, p, (size_t)(end - p));
      *ks_array_push(tu->arena, &k->attributes) = attr;
      if (i == 0)
        launch_bounds_args(tu, attr, k);
      p = end - 1;
      break;
    }
  }
}

/* ---- body: shared memory and calls ------------------------------------ */

typedef struct body_walk {
  ks_tu *tu;
  ks_kernel *k;
  const char *function; /* qualified name of the function being walked */
  /* breadth-first queue of user functions to enter */
  struct { CXCursor def; const char *usr; unsigned depth; } queue[256];
  unsigned head, tail;
  unsigned depth;
} body_walk;

static bool seen_usr(body_walk *w, const char *usr) {
  for (unsigned i = 0; i < w->tail; i++)
    if (!strcmp(w->queue[i].usr, usr))
      return true;
  return false;
}

static void add_builtin(body_walk *w, const char *name) {
  for (size_t i = 0; i < w->k->builtins.len; i++)
    if (!strcmp(w->k->builtins.items[i], name))
      return;
  *ks_array_push(w->tu->arena, &w->k->builtins) = name;
}

static void add_callee_decl(body_walk *w, CXCursor decl) {
  enum CXCursorKind kind = clang_getCursorKind(decl);
  if (kind != CXCursor_FunctionDecl && kind != CXCursor_FunctionTemplate &&
      kind != CXCursor_CXXMethod && kind != CXCursor_Constructor &&
      kind != CXCursor_ConversionFunction && kind != CXCursor_Destructor)
    return;
  if (ks_tu_in_system(decl)) {
    add_builtin(w, ks_tu_qualified_name(w->tu, decl));
    return;
  }
  /* Calls of template specializations are followed into the template. */
  CXCursor pattern = clang_getSpecializedCursorTemplate(decl);
  if (!clang_Cursor_isNull(pattern))
    decl = pattern;
  CXCursor def = clang_getCursorDefinition(decl);
  if (clang_Cursor_isNull(def)) {
    /* Compiler builtins (__syncthreads) are declared implicitly, at their
     * first use: no definition, and a reserved name. */
    const char *name = ks_tu_spelling(w->tu, decl);
    if (!strncmp(name, "__", 2)) {
      add_builtin(w, name);
      return;
    }
    def = decl;
  }
  const char *usr = ks_tu_usr(w->tu, decl);
  if (!*usr || seen_usr(w, usr) || w->tail == sizeof w->queue / sizeof *w->queue)
    return;
  w->queue[w->tail].def = def;
  w->queue[w->tail].usr = usr;
  w->queue[w->tail].depth = w->depth + 1;
  w->tail++;
}

static void add_shared(body_walk *w, CXCursor var) {
  ks_shared_var *s = ks_array_push(w->tu->arena, &w->k->shared);
  CXType t = clang_getCursorType(var);
  s->name = ks_tu_spelling(w->tu, var);
  s->type = ks_tu_type(w->tu, t);
  s->loc = ks_tu_expansion_loc(w->tu, clang_getCursorLocation(var));
  s->function = w->function;
  s->is_extern = clang_Cursor_getStorageClass(var) == CX_SC_Extern;
  long long size = clang_Type_getSizeOf(t);
  s->bytes = s->is_extern || size < 0 ? -1 : size;
}

static enum CXChildVisitResult walk_body(CXCursor c, CXCursor parent, CXClientData data) {
  body_walk *w = data;
  switch (clang_getCursorKind(c)) {
  case CXCursor_VarDecl:
    if (has_child_kind(c, CXCursor_CUDASharedAttr))
      add_shared(w, c);
    break;
  case CXCursor_CallExpr: {
    if (ks_tu_is_chevron_launch(c)) {
      /* A launch from device code is not a call of the kernel it starts:
       * only its arguments are walked. */
      CXCursor kids[64];
      unsigned n = ks_tu_children(c, kids, 64);
      for (unsigned i = 2; i < n; i++)
        clang_visitChildren(kids[i], walk_body, w);
      return CXChildVisit_Continue;
    }
    CXCursor ref = clang_getCursorReferenced(c);
    if (!clang_Cursor_isNull(ref))
      add_callee_decl(w, ref);
    break;
  }
  case CXCursor_OverloadedDeclRef: {
    /* A dependent call inside a template: every candidate may be reached. */
    unsigned n = clang_getNumOverloadedDecls(c);
    for (unsigned i = 0; i < n; i++)
      add_callee_decl(w, clang_getOverloadedDecl(c, i));
    break;
  }
  default:
    break;
  }
  return CXChildVisit_Recurse;
}

static void walk_calls(ks_tu *tu, CXCursor def, ks_kernel *k) {
  body_walk *w = ks_arena_alloc(tu->arena, sizeof *w); /* large; keep it off the stack */
  w->tu = tu;
  w->k = k;
  w->queue[0].def = def;
  w->queue[0].usr = k->usr;
  w->queue[0].depth = 0;
  w->tail = 1;
  for (w->head = 0; w->head < w->tail; w->head++) {
    CXCursor fn = w->queue[w->head].def;
    w->depth = w->queue[w->head].depth;
    if (w->head > 0) {
      ks_callee *callee = ks_array_push(tu->arena, &k->callees);
      callee->name = ks_tu_qualified_name(tu, fn);
      callee->loc = ks_tu_expansion_loc(tu, clang_getCursorLocation(fn));
      callee->depth = w->depth;
      if (!clang_isCursorDefinition(fn))
        continue; /* declared only: nothing to enter */
    }
    w->function = w->head ? ks_tu_qualified_name(tu, fn) : k->qualified_name;
    clang_visitChildren(fn, walk_body, w);
  }
}

/* ---- the kernel ------------------------------------------------------- */

static const char *signature(ks_tu *tu, const ks_kernel *k) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "%s(", k->qualified_name);
  for (size_t i = 0; i < k->params.len; i++)
    ks_buf_addf(&b, "%s%s", i ? ", " : "", k->params.items[i].type);
  ks_buf_addc(&b, ')');
  const char *out = ks_arena_strdup(tu->arena, b.data);
  ks_buf_release(&b);
  return out;
}

typedef struct kernel_children {
  ks_tu *tu;
  ks_kernel *k;
} kernel_children;

static enum CXChildVisitResult visit_kernel_child(CXCursor c, CXCursor parent, CXClientData data) {
  kernel_children *kc = data;
  switch (clang_getCursorKind(c)) {
  case CXCursor_ParmDecl:
    add_param(kc->tu, c, kc->k);
    break;
  case CXCursor_TemplateTypeParameter:
  case CXCursor_NonTypeTemplateParameter:
  case CXCursor_TemplateTemplateParameter:
    add_tparam(kc->tu, c, kc->k);
    break;
  default:
    break;
  }
  return CXChildVisit_Continue;
}

static bool is_header(const char *path) {
  return path && !(strlen(path) > 3 && !strcmp(path + strlen(path) - 3, ".cu"));
}

void ks_tu_kernel(ks_tu *tu, CXCursor def, ks_kernel *k) {
  k->name = ks_tu_spelling(tu, def);
  k->qualified_name = ks_tu_qualified_name(tu, def);
  k->usr = ks_tu_usr(tu, def);
  k->loc = ks_tu_expansion_loc(tu, clang_getCursorLocation(def));
  k->extent = ks_tu_extent(tu, def);
  if (ks_tu_name_from_macro(tu, def))
    k->macro = ks_tu_macro_at(tu, k->loc);
  k->is_template = clang_getCursorKind(def) == CXCursor_FunctionTemplate;
  k->is_static = clang_Cursor_getStorageClass(def) == CX_SC_Static;
  if (!k->is_template) {
    const char *mangled = ks_tu_string(tu, clang_Cursor_getMangling(def));
    k->is_extern_c = *mangled && strncmp(mangled, "_Z", 2) != 0;
  }
  /* A header, or a .cu file the unit's own file included (Rodinia's
   * `#include "srad_kernel.cu"`): the slice is made from an includer. */
  k->in_header = is_header(k->loc.file) ||
                 (k->loc.file && tu->out && tu->out->main_file && strcmp(k->loc.file, tu->out->main_file));

  kernel_children kc = {tu, k};
  clang_visitChildren(def, visit_kernel_child, &kc);
  k->signature = signature(tu, k);
  if (!k->macro)
    scan_head(tu, def, k);

  const char *text = ks_tu_range_text(tu, k->extent);
  char hash[KS_HASH_HEX];
  ks_sha256_hex(text ? text : "", text ? strlen(text) : 0, hash);
  k->source_hash = ks_arena_strdup(tu->arena, hash);

  walk_calls(tu, def, k);
  k->static_smem = 0;
  for (size_t i = 0; i < k->shared.len; i++) {
    const ks_shared_var *s = &k->shared.items[i];
    if (s->is_extern)
      k->dynamic_smem = true;
    else if (s->bytes < 0 || k->static_smem < 0)
      k->static_smem = -1;
    else
      k->static_smem += s->bytes;
  }
}
