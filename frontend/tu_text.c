/* Locations and source text over libclang.
 *
 * libclang reports ranges with their start as written (possibly inside a
 * macro) and their end moved out of macro bodies; the helpers here turn that
 * into the text a user would point at: the expression as written in the file
 * where possible, the macro invocation that produced it otherwise, and
 * clang's own printing of the expanded expression as the last resort. */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "tu.h"

const char *ks_tu_string(ks_tu *tu, CXString s) {
  const char *c = clang_getCString(s);
  const char *out = ks_arena_strdup(tu->arena, c ? c : "");
  clang_disposeString(s);
  return out;
}

const char *ks_tu_spelling(ks_tu *tu, CXCursor c) { return ks_tu_string(tu, clang_getCursorSpelling(c)); }
const char *ks_tu_usr(ks_tu *tu, CXCursor c) { return ks_tu_string(tu, clang_getCursorUSR(c)); }
const char *ks_tu_type(ks_tu *tu, CXType t) { return ks_tu_string(tu, clang_getTypeSpelling(t)); }

static const char *file_path(ks_tu *tu, CXFile file) {
  if (!file)
    return NULL;
  for (unsigned i = 0; i < tu->nfiles; i++)
    if (clang_File_isEqual(tu->files[i].file, file))
      return tu->files[i].path;
  const char *path = ks_tu_string(tu, clang_File_tryGetRealPathName(file));
  if (!*path) {
    const char *name = ks_tu_string(tu, clang_getFileName(file));
    char *real = realpath(name, NULL);
    path = real ? ks_arena_strdup(tu->arena, real) : name;
    free(real);
  }
  if (tu->nfiles < sizeof tu->files / sizeof *tu->files) {
    tu->files[tu->nfiles].file = file;
    tu->files[tu->nfiles].path = path;
    tu->nfiles++;
  }
  return path;
}

typedef void (*loc_fn)(CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *);

static ks_loc make_loc(ks_tu *tu, CXSourceLocation loc, loc_fn fn) {
  CXFile file = NULL;
  unsigned line = 0, col = 0, offset = 0;
  fn(loc, &file, &line, &col, &offset);
  return (ks_loc){file_path(tu, file), line, col, offset};
}

ks_loc ks_tu_loc(ks_tu *tu, CXSourceLocation loc) { return make_loc(tu, loc, clang_getFileLocation); }
ks_loc ks_tu_expansion_loc(ks_tu *tu, CXSourceLocation loc) {
  return make_loc(tu, loc, clang_getExpansionLocation);
}
ks_loc ks_tu_spelling_loc(ks_tu *tu, CXSourceLocation loc) {
  return make_loc(tu, loc, clang_getSpellingLocation);
}

static bool same_file(ks_loc a, ks_loc b) { return a.file && b.file && !strcmp(a.file, b.file); }

ks_range ks_tu_extent(ks_tu *tu, CXCursor c) {
  CXSourceRange r = clang_getCursorExtent(c);
  ks_range out = {ks_tu_expansion_loc(tu, clang_getRangeStart(r)),
                  ks_tu_loc(tu, clang_getRangeEnd(r))};
  if (!same_file(out.begin, out.end) || out.end.offset < out.begin.offset)
    out.end = out.begin;
  return out;
}

bool ks_tu_in_system(CXCursor c) {
  return clang_Location_isInSystemHeader(clang_getCursorLocation(c)) != 0;
}

bool ks_tu_name_from_macro(ks_tu *tu, CXCursor decl) {
  /* libclang maps a name that came out of a macro to the macro's
   * invocation; what is written there is then not the name. */
  ks_loc at = ks_tu_expansion_loc(tu, clang_getCursorLocation(decl));
  const char *written = ks_tu_macro_at(tu, at);
  return !written || strcmp(written, ks_tu_spelling(tu, decl)) != 0;
}

/* The CXFile a path came from; the cache holds every path we handed out. */
CXFile ks_tu_file(ks_tu *tu, const char *path) {
  for (unsigned i = 0; i < tu->nfiles; i++)
    if (tu->files[i].path == path || !strcmp(tu->files[i].path, path))
      return tu->files[i].file;
  return clang_getFile(tu->unit, path);
}

const char *ks_tu_text(ks_tu *tu, const char *file, unsigned begin, unsigned end) {
  if (!file || end < begin)
    return NULL;
  CXFile f = ks_tu_file(tu, file);
  size_t size = 0;
  const char *data = f ? clang_getFileContents(tu->unit, f, &size) : NULL;
  if (!data || end > size)
    return NULL;
  return ks_arena_strndup(tu->arena, data + begin, end - begin);
}

const char *ks_tu_range_text(ks_tu *tu, ks_range r) {
  if (!same_file(r.begin, r.end))
    return NULL;
  return ks_tu_text(tu, r.begin.file, r.begin.offset, r.end.offset);
}

static const char *printed(ks_tu *tu, CXCursor expr) {
  /* Implicit conversions (an int turned into a dim3) print as nothing:
   * print what they convert instead. */
  for (int depth = 0; depth < 8; depth++) {
    CXPrintingPolicy policy = clang_getCursorPrintingPolicy(expr);
    const char *text = ks_tu_string(tu, clang_getCursorPrettyPrinted(expr, policy));
    clang_PrintingPolicy_dispose(policy);
    CXCursor kids[1];
    if (*text || !ks_tu_children(expr, kids, 1))
      return text;
    expr = kids[0];
  }
  return "";
}

/* The end of the macro argument that starts at `begin`: the next comma or
 * closing bracket at depth zero, before `limit`. */
static unsigned argument_end(const char *data, unsigned begin, unsigned limit) {
  int depth = 0;
  for (unsigned i = begin; i < limit; i++) {
    char c = data[i];
    if (c == '(' || c == '[' || c == '{')
      depth++;
    else if ((c == ')' || c == ']' || c == '}') && depth-- == 0)
      return i;
    else if (c == ',' && depth == 0)
      return i;
  }
  return limit;
}

const char *ks_tu_expr_text(ks_tu *tu, CXCursor expr, ks_range outer) {
  CXSourceRange r = clang_getCursorExtent(expr);
  if (clang_Range_isNull(r))
    return NULL;
  /* libclang 16 maps both ends to file locations: a token from a macro body
   * lands on the macro's invocation, a macro argument on where it is
   * written. */
  ks_loc b = ks_tu_loc(tu, clang_getRangeStart(r)), e = ks_tu_loc(tu, clang_getRangeEnd(r));
  if (!b.file)
    return NULL; /* implicit: a defaulted argument has no source */
  if (same_file(b, outer.begin) && same_file(e, outer.begin) && b.offset == outer.begin.offset &&
      e.offset == outer.end.offset)
    return printed(tu, expr); /* spelled inside a macro body */
  if (!same_file(b, e) || e.offset <= b.offset) {
    /* Starts in a macro argument and ends inside a macro that argument
     * invokes: the text runs to the end of that argument. */
    CXFile f = ks_tu_file(tu, b.file);
    size_t size = 0;
    const char *data = f ? clang_getFileContents(tu->unit, f, &size) : NULL;
    unsigned limit = same_file(b, outer.end) ? outer.end.offset : (unsigned)size;
    if (!data || limit > size || b.offset >= limit)
      return printed(tu, expr);
    e.offset = argument_end(data, b.offset, limit);
  }
  const char *text = ks_tu_text(tu, b.file, b.offset, e.offset);
  return text && *text ? text : printed(tu, expr);
}

const char *ks_tu_macro_at(ks_tu *tu, ks_loc loc) {
  if (!loc.file)
    return NULL;
  CXFile f = ks_tu_file(tu, loc.file);
  size_t size = 0;
  const char *data = f ? clang_getFileContents(tu->unit, f, &size) : NULL;
  if (!data || loc.offset >= size)
    return NULL;
  const char *p = data + loc.offset;
  if (!(isalpha((unsigned char)*p) || *p == '_'))
    return NULL;
  size_t n = 0;
  while (loc.offset + n < size && (isalnum((unsigned char)p[n]) || p[n] == '_'))
    n++;
  return ks_arena_strndup(tu->arena, p, n);
}

const char *ks_tu_qualified_name(ks_tu *tu, CXCursor c) {
  const char *parts[32];
  unsigned n = 0;
  for (CXCursor p = c; !clang_Cursor_isNull(p) && n < 32; p = clang_getCursorSemanticParent(p)) {
    enum CXCursorKind k = clang_getCursorKind(p);
    if (k == CXCursor_TranslationUnit || clang_isInvalid(k))
      break;
    if (k == CXCursor_LinkageSpec || k == CXCursor_UnexposedDecl)
      continue; /* extern "C" blocks are not scopes */
    const char *name = ks_tu_spelling(tu, p);
    if (!*name)
      name = k == CXCursor_Namespace ? "(anonymous namespace)" : "(anonymous)";
    parts[n++] = name;
  }
  ks_buf buf = KS_BUF_INIT;
  for (unsigned i = n; i-- > 0;) {
    ks_buf_adds(&buf, parts[i]);
    if (i)
      ks_buf_adds(&buf, "::");
  }
  const char *out = ks_arena_strdup(tu->arena, buf.data);
  ks_buf_release(&buf);
  return out;
}

typedef struct child_list {
  CXCursor *items;
  unsigned n, max;
} child_list;

static enum CXChildVisitResult collect_child(CXCursor c, CXCursor parent, CXClientData data) {
  child_list *list = data;
  if (list->n < list->max)
    list->items[list->n] = c;
  list->n++;
  return CXChildVisit_Continue;
}

unsigned ks_tu_children(CXCursor c, CXCursor *out, unsigned max) {
  child_list list = {out, 0, max};
  clang_visitChildren(c, collect_child, &list);
  return list.n < max ? list.n : max;
}

CXCursor ks_tu_strip(CXCursor c) {
  for (int depth = 0; depth < 16; depth++) {
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_DeclRefExpr || k == CXCursor_OverloadedDeclRef || k == CXCursor_MemberRefExpr)
      return c;
    if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr && k != CXCursor_CStyleCastExpr &&
        k != CXCursor_CXXFunctionalCastExpr && k != CXCursor_CXXStaticCastExpr &&
        k != CXCursor_CXXReinterpretCastExpr && k != CXCursor_UnaryOperator &&
        k != CXCursor_CXXConstCastExpr)
      return c;
    CXCursor kids[2];
    unsigned n = ks_tu_children(c, kids, 2);
    if (n == 0)
      return c;
    /* A cast's children may start with the type it casts to. */
    c = clang_getCursorKind(kids[0]) == CXCursor_TypeRef && n > 1 ? kids[1] : kids[0];
  }
  return c;
}

typedef struct parts_visit {
  ks_tu *tu;
  ks_tu_decl_parts *out;
} parts_visit;

static enum CXChildVisitResult collect_parts(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  parts_visit *v = data;
  ks_tu_decl_parts *d = v->out;
  enum CXCursorKind k = clang_getCursorKind(c);
  if ((k == CXCursor_TemplateTypeParameter || k == CXCursor_NonTypeTemplateParameter ||
       k == CXCursor_TemplateTemplateParameter) &&
      d->ntparams < 64) {
    d->type_param[d->ntparams] = k == CXCursor_TemplateTypeParameter;
    d->tkinds[d->ntparams] = k == CXCursor_NonTypeTemplateParameter
                                 ? clang_getCanonicalType(clang_getCursorType(c)).kind
                                 : CXType_Invalid;
    d->tparams[d->ntparams++] = ks_tu_spelling(v->tu, c);
  } else if (k == CXCursor_ParmDecl && d->nparams < 64) {
    d->pnames[d->nparams] = ks_tu_spelling(v->tu, c);
    d->ptypes[d->nparams++] = ks_tu_type(v->tu, clang_getCursorType(c));
  }
  return CXChildVisit_Continue;
}

void ks_tu_decl_parts_of(ks_tu *tu, CXCursor decl, ks_tu_decl_parts *out) {
  memset(out, 0, sizeof *out);
  if (clang_Cursor_isNull(decl))
    return;
  parts_visit v = {tu, out};
  clang_visitChildren(decl, collect_parts, &v);
}

void ks_tu_template_args(ks_tu *tu, CXCursor spec, ks_template_args *out) {
  int n = clang_Cursor_getNumTemplateArguments(spec);
  if (n <= 0)
    return;
  ks_tu_decl_parts names;
  ks_tu_decl_parts_of(tu, clang_getSpecializedCursorTemplate(spec), &names);
  for (int i = 0; i < n; i++) {
    ks_template_arg *arg = ks_array_push(tu->arena, out);
    arg->param = (unsigned)i < names.ntparams ? names.tparams[i] : NULL;
    switch (clang_Cursor_getTemplateArgumentKind(spec, (unsigned)i)) {
    case CXTemplateArgumentKind_Type:
      arg->value = ks_tu_type(tu, clang_Cursor_getTemplateArgumentType(spec, (unsigned)i));
      break;
    case CXTemplateArgumentKind_Integral: {
      /* libclang reads a bool's one bit as signed: true came out as -1
       * in the scan's instances and in the sentences naming them. */
      enum CXTypeKind kind = (unsigned)i < names.ntparams ? names.tkinds[i] : CXType_Invalid;
      long long v = clang_Cursor_getTemplateArgumentValue(spec, (unsigned)i);
      if (kind == CXType_Bool)
        arg->value = v ? "true" : "false";
      else if (kind == CXType_UInt || kind == CXType_ULong || kind == CXType_ULongLong ||
               kind == CXType_UShort || kind == CXType_UChar)
        arg->value = ks_arena_printf(tu->arena, "%llu",
                                     clang_Cursor_getTemplateArgumentUnsignedValue(spec, (unsigned)i));
      else
        arg->value = ks_arena_printf(tu->arena, "%lld", v);
      break;
    }
    default:
      arg->value = "?";
      break;
    }
  }
}
