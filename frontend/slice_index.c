/* Indexing the re-parsed unit for the slicer: which file was included from
 * where (so that any two places can be put in the order the compiler read
 * them), the declarations at namespace scope of the user's files, and every
 * macro definition.
 *
 * libclang visits a unit's preprocessing record (macro definitions) apart
 * from its declarations, so the two cannot be interleaved by visiting; the
 * include chains give both one order. */
#include <stdlib.h>
#include <string.h>

#include "slice.h"

int ks_order_cmp(const ks_order *a, const ks_order *b) {
  unsigned n = a->n < b->n ? a->n : b->n;
  for (unsigned i = 0; i < n; i++)
    if (a->parts[i] != b->parts[i])
      return a->parts[i] < b->parts[i] ? -1 : 1;
  return a->n < b->n ? -1 : a->n > b->n;
}

/* ---- files ------------------------------------------------------------- */

static long file_index(ks_slicer *s, CXFile file) {
  const long none = -1;
  if (!file)
    return none;
  /* Lookups come in runs from one file: try the last hit first. */
  size_t last = s->last_file;
  if (last < s->files.len && clang_File_isEqual(s->files.items[last].file, file))
    return (long)last;
  for (size_t i = 0; i < s->files.len; i++)
    if (clang_File_isEqual(s->files.items[i].file, file)) {
      s->last_file = i;
      return (long)i;
    }
  return none;
}

const slice_file *ks_slice_file(ks_slicer *s, CXFile file) {
  long i = file_index(s, file);
  return i < 0 ? NULL : &s->files.items[i];
}

static void add_file(ks_slicer *s, CXFile file, CXSourceLocation *stack, unsigned depth) {
  if (file_index(s, file) >= 0)
    return; /* entered again (include guards): the first entry holds its text */
  slice_file f = {.file = file, .includer = -1};
  CXSourceLocation start = clang_getLocationForOffset(s->tu.unit, file, 0);
  f.path = ks_tu_loc(&s->tu, start).file;
  f.system = clang_Location_isInSystemHeader(start) != 0;
  if (depth == 0) {
    f.chain.parts[f.chain.n++] = 1; /* the main file */
  } else {
    CXFile outer = NULL;
    unsigned offset = 0;
    clang_getFileLocation(stack[depth - 1], &outer, NULL, NULL, &offset);
    bool from_main = outer && s->files.len && clang_File_isEqual(outer, s->files.items[0].file);
    f.chain.parts[f.chain.n++] = from_main ? 1 : 0;
    for (unsigned i = depth; i-- > 0 && f.chain.n < KS_ORDER_MAX - 1;) {
      clang_getFileLocation(stack[i], NULL, NULL, NULL, &offset);
      f.chain.parts[f.chain.n++] = offset;
    }
    CXFile includer = NULL;
    clang_getFileLocation(stack[0], &includer, NULL, NULL, NULL);
    f.includer = file_index(s, includer);
  }
  *ks_array_push(s->tu.arena, &s->files) = f;
}

static void visit_inclusion(CXFile file, CXSourceLocation *stack, unsigned depth,
                            CXClientData data) {
  add_file(data, file, stack, depth);
}

bool ks_slice_order(ks_slicer *s, CXSourceLocation loc, ks_order *out) {
  CXFile file = NULL;
  unsigned offset = 0;
  clang_getFileLocation(loc, &file, NULL, NULL, &offset);
  long i = file_index(s, file);
  if (i < 0)
    return false;
  *out = s->files.items[i].chain;
  out->parts[out->n++] = offset;
  return true;
}

bool ks_slice_order_at(ks_slicer *s, const char *path, unsigned offset, ks_order *out) {
  for (size_t i = 0; path && i < s->files.len; i++)
    if (s->files.items[i].path && !strcmp(s->files.items[i].path, path)) {
      *out = s->files.items[i].chain;
      out->parts[out->n++] = offset;
      return true;
    }
  return false;
}

/* ---- declarations -------------------------------------------------------- */

/* libclang shows a variable template (`template <class T> __constant__ T
 * c[4];`) and its instantiations as a named UnexposedDecl: a declaration,
 * not a scope like the unnamed ones. */
static bool is_var_template(CXCursor c) {
  if (clang_getCursorKind(c) != CXCursor_UnexposedDecl)
    return false;
  CXString sp = clang_getCursorSpelling(c);
  bool named = *clang_getCString(sp) != '\0';
  clang_disposeString(sp);
  return named;
}

static bool is_scope(CXCursor c) {
  enum CXCursorKind k = clang_getCursorKind(c);
  return k == CXCursor_Namespace || k == CXCursor_LinkageSpec ||
         (k == CXCursor_UnexposedDecl && !is_var_template(c));
}

/* The declaration this one completes, by USR: the template of a
 * specialization the user wrote, the class of a member defined outside it. */
static const char *owner_of(ks_slicer *s, CXCursor c) {
  CXCursor tmpl = clang_getSpecializedCursorTemplate(c);
  if (!clang_Cursor_isNull(tmpl))
    return ks_tu_usr(&s->tu, tmpl);
  CXCursor sem = clang_getCursorSemanticParent(c), lex = clang_getCursorLexicalParent(c);
  enum CXCursorKind k = clang_getCursorKind(sem);
  if (!clang_equalCursors(sem, lex) &&
      (k == CXCursor_ClassDecl || k == CXCursor_StructDecl || k == CXCursor_UnionDecl ||
       k == CXCursor_ClassTemplate || k == CXCursor_ClassTemplatePartialSpecialization))
    return ks_tu_usr(&s->tu, sem);
  return NULL;
}

static void add_item(ks_slicer *s, CXCursor c) {
  slice_item it = {.cursor = c, .kind = clang_getCursorKind(c)};
  it.range = ks_tu_extent(&s->tu, c);
  if (is_var_template(c)) {
    /* The template's text starts with `template`; an instantiation's is
     * the pattern's alone, and stands for the template (ks_slice_item_of). */
    const char *text = ks_tu_range_text(&s->tu, it.range);
    if (!text || strncmp(text, "template", 8))
      return;
  }
  if (!ks_slice_order_at(s, it.range.begin.file, it.range.begin.offset, &it.order))
    return; /* no text of its own (implicit) */
  it.name = ks_tu_spelling(&s->tu, c);
  if (*it.name)
    it.name = ks_tu_qualified_name(&s->tu, c);
  it.template_usr = owner_of(s, c);
  *ks_array_push(s->tu.arena, &s->items) = it;
}

/* Our own forced include (declarations clang lacks) is no code of the
 * user's, though it is not in a system directory as far as clang knows. */
bool ks_slice_in_stubs(ks_slicer *s, CXCursor c) {
  ks_loc loc = ks_tu_loc(&s->tu, clang_getCursorLocation(c));
  size_t n = strlen(s->env->stub_dir);
  return loc.file && !strncmp(loc.file, s->env->stub_dir, n) && loc.file[n] == '/';
}

static enum CXChildVisitResult visit_top(CXCursor c, CXCursor parent, CXClientData data) {
  ks_slicer *s = data;
  enum CXCursorKind k = clang_getCursorKind(c);
  if (k == CXCursor_MacroDefinition) {
    slice_macro *m = ks_array_push(s->tu.arena, &s->macros);
    m->name = ks_tu_spelling(&s->tu, c);
    m->cursor = c;
    return CXChildVisit_Continue;
  }
  if (k == CXCursor_InclusionDirective) {
    /* Every #include, also one its header's guard made a no-op (the
     * inclusion list has only the entries that read the file). */
    CXFile from = NULL;
    clang_getFileLocation(clang_getCursorLocation(c), &from, NULL, NULL, NULL);
    long i = file_index(s, from), j = file_index(s, clang_getIncludedFile(c));
    if (i >= 0 && j >= 0) {
      slice_edge *e = ks_array_push(s->tu.arena, &s->edges);
      e->from = i;
      e->to = j;
    }
    return CXChildVisit_Continue;
  }
  if (k == CXCursor_MacroExpansion)
    return CXChildVisit_Continue;
  if (ks_tu_in_system(c) || ks_slice_in_stubs(s, c))
    return CXChildVisit_Continue;
  if (is_scope(c))
    return CXChildVisit_Recurse;
  add_item(s, c);
  return CXChildVisit_Continue;
}

/* Record order is unit order: an index keeps it through the sort by name. */
typedef struct macro_key {
  slice_macro m;
  size_t seq;
} macro_key;

static int cmp_macro(const void *a, const void *b) {
  const macro_key *x = a, *y = b;
  int c = strcmp(x->m.name, y->m.name);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static void sort_macros(ks_slicer *s) {
  size_t n = s->macros.len;
  if (n < 2)
    return;
  macro_key *keys = ks_xcalloc(n, sizeof *keys);
  for (size_t i = 0; i < n; i++) {
    keys[i].m = s->macros.items[i];
    keys[i].seq = i;
  }
  qsort(keys, n, sizeof *keys, cmp_macro);
  for (size_t i = 0; i < n; i++)
    s->macros.items[i] = keys[i].m;
  free(keys);
}

int ks_slice_index(ks_slicer *s) {
  CXCursor root = clang_getTranslationUnitCursor(s->tu.unit);
  /* The main file first, so that chains can tell text read from it. */
  CXFile main_file = clang_getFile(s->tu.unit, s->main_file);
  if (!main_file)
    return ks_fail(s->ctx, "%s: not part of its own translation unit", s->main_file);
  add_file(s, main_file, NULL, 0);
  clang_getInclusions(s->tu.unit, visit_inclusion, s);
  clang_visitChildren(root, visit_top, s);
  sort_macros(s);
  return 0;
}

long ks_slice_item_of(ks_slicer *s, CXCursor decl) {
  CXCursor c = decl;
  for (int depth = 0; depth < 64; depth++) {
    CXCursor parent = clang_getCursorLexicalParent(c);
    if (clang_Cursor_isNull(parent) || clang_isInvalid(clang_getCursorKind(parent)))
      parent = clang_getCursorSemanticParent(c);
    if (clang_Cursor_isNull(parent) || clang_isInvalid(clang_getCursorKind(parent)))
      return -1;
    enum CXCursorKind k = clang_getCursorKind(parent);
    if (k == CXCursor_TranslationUnit || is_scope(parent))
      break;
    c = parent;
  }
  for (size_t i = 0; i < s->items.len; i++)
    if (clang_equalCursors(s->items.items[i].cursor, c))
      return (long)i;
  /* An instantiation of a variable template has no text of its own: it
   * stands for the template written where it is. */
  if (is_var_template(c))
    for (size_t i = 0; i < s->items.len; i++)
      if (is_var_template(s->items.items[i].cursor) &&
          clang_equalLocations(clang_getCursorLocation(s->items.items[i].cursor),
                               clang_getCursorLocation(c)))
        return (long)i;
  return -1;
}

long ks_slice_item_named(ks_slicer *s, const char *name, size_t from) {
  for (size_t i = from; i < s->items.len; i++)
    if (!strcmp(s->items.items[i].name, name))
      return (long)i;
  return -1;
}

/* ---- macros -------------------------------------------------------------- */

void ks_slice_locate_macro(ks_slicer *s, slice_macro *m) {
  if (m->located)
    return;
  m->located = true;
  CXSourceRange r = clang_getCursorExtent(m->cursor);
  m->range.begin = ks_tu_loc(&s->tu, clang_getRangeStart(r));
  m->range.end = ks_tu_loc(&s->tu, clang_getRangeEnd(r));
  m->system = clang_Location_isInSystemHeader(clang_getRangeStart(r)) != 0;
  if (!ks_slice_order(s, clang_getRangeStart(r), &m->order))
    m->order.n = 0; /* built in or from the command line: no file */
}

slice_macro *ks_slice_macro_at(ks_slicer *s, const char *name, size_t len, const ks_order *use) {
  /* Binary search for the first definition of `name`. */
  size_t lo = 0, hi = s->macros.len;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strncmp(s->macros.items[mid].name, name, len);
    if (c == 0 && s->macros.items[mid].name[len])
      c = 1;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  slice_macro *found = NULL;
  for (size_t i = lo; i < s->macros.len; i++) {
    slice_macro *m = &s->macros.items[i];
    if (strncmp(m->name, name, len) || m->name[len])
      break;
    ks_slice_locate_macro(s, m);
    /* The last definition read before the use is the one in force (an
     * #undef in between is not seen: the record keeps no #undef). */
    if (m->order.n && ks_order_cmp(&m->order, use) < 0)
      found = m;
  }
  return found;
}
