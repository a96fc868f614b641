/* The instances of a template kernel, found in the re-parsed unit.
 *
 * The scan reads a launch's template arguments from its text, which says
 * nothing when they are deduced inside a template host function
 * (`norm<<<g, b>>>(out, values, n)` in `template <class T> void run(const T *
 * values)`). Clang knows them: the bodies of the function template
 * instances the user's code calls are instantiated in the unit, and libclang
 * walks them. So every function of the user's files is walked, then the
 * instances it calls, and every use of a specialization of the kernel gives
 * its arguments. Their types join the closure (a user's type as an argument
 * is needed for the name expression to mean anything). */
#include <string.h>

#include "ks_buf.h"
#include "slice.h"

enum { INST_MAX_DEPTH = 12, INST_MAX_VISITED = 4096 };

typedef struct inst_walk {
  ks_slicer *s;
  ks_strings *out;
  CXCursor *visited; /* function template instances already walked */
  size_t nvisited;
  int depth;
} inst_walk;

static bool is_function(enum CXCursorKind k) {
  return k == CXCursor_FunctionDecl || k == CXCursor_CXXMethod || k == CXCursor_Constructor ||
         k == CXCursor_Destructor || k == CXCursor_ConversionFunction;
}

const char *ks_slice_template_args(ks_slicer *s, CXCursor spec) {
  int n = clang_Cursor_getNumTemplateArguments(spec);
  if (n <= 0)
    return NULL;
  const ks_tparams *tp = &s->kernel->tparams;
  ks_buf b = KS_BUF_INIT;
  const char *out = NULL;
  for (int i = 0; i < n; i++) {
    unsigned u = (unsigned)i;
    const char *type = u < tp->len && tp->items[u].type ? tp->items[u].type : "";
    if (u < tp->len && tp->items[u].is_pack)
      goto done;
    switch (clang_Cursor_getTemplateArgumentKind(spec, u)) {
    case CXTemplateArgumentKind_Type: {
      CXType t = clang_Cursor_getTemplateArgumentType(spec, u);
      ks_slice_need_type(s, t);
      ks_buf_addf(&b, "%s%s", i ? ", " : "", ks_tu_type(&s->tu, t));
      break;
    }
    case CXTemplateArgumentKind_Integral:
      if (!strcmp(type, "bool"))
        ks_buf_addf(&b, "%s%s", i ? ", " : "",
                    clang_Cursor_getTemplateArgumentValue(spec, u) ? "true" : "false");
      else if (strstr(type, "unsigned"))
        ks_buf_addf(&b, "%s%llu", i ? ", " : "",
                    clang_Cursor_getTemplateArgumentUnsignedValue(spec, u));
      else
        ks_buf_addf(&b, "%s%lld", i ? ", " : "", clang_Cursor_getTemplateArgumentValue(spec, u));
      break;
    default:
      goto done;
    }
  }
  out = ks_arena_strdup(s->tu.arena, b.data);
done:
  ks_buf_release(&b);
  return out;
}

static void record(inst_walk *w, CXCursor spec) {
  const char *args = ks_slice_template_args(w->s, spec);
  if (!args)
    return;
  for (size_t i = 0; i < w->out->len; i++)
    if (!strcmp(w->out->items[i], args))
      return;
  *ks_array_push(w->s->tu.arena, w->out) = args;
}

static bool visited(inst_walk *w, CXCursor fn) {
  for (size_t i = 0; i < w->nvisited; i++)
    if (clang_equalCursors(w->visited[i], fn))
      return true;
  return false;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data) {
  inst_walk *w = data;
  enum CXCursorKind k = clang_getCursorKind(c);
  if (!clang_isExpression(k) && !clang_isReference(k))
    return CXChildVisit_Recurse;
  CXCursor ref = clang_getCursorReferenced(c);
  if (clang_Cursor_isNull(ref) || !is_function(clang_getCursorKind(ref)))
    return CXChildVisit_Recurse;
  CXCursor tmpl = clang_getSpecializedCursorTemplate(ref);
  if (clang_Cursor_isNull(tmpl))
    return CXChildVisit_Recurse;
  if (clang_equalCursors(tmpl, w->s->kernel_cursor)) {
    record(w, ref);
    return CXChildVisit_Recurse;
  }
  /* An instance of one of the user's function templates: its body is
   * where dependent launches have their arguments. */
  if (clang_Location_isInSystemHeader(clang_getCursorLocation(tmpl)) || w->depth >= INST_MAX_DEPTH ||
      w->nvisited == INST_MAX_VISITED || visited(w, ref))
    return CXChildVisit_Recurse;
  w->visited[w->nvisited++] = ref;
  w->depth++;
  clang_visitChildren(ref, visit, w);
  w->depth--;
  return CXChildVisit_Recurse;
}

void ks_slice_find_instances(ks_slicer *s, ks_strings *out) {
  inst_walk w = {s, out, NULL, 0, 0};
  w.visited = ks_arena_alloc(s->tu.arena, INST_MAX_VISITED * sizeof *w.visited);
  for (size_t i = 0; i < s->items.len; i++) {
    enum CXCursorKind k = s->items.items[i].kind;
    /* A template's own body has only dependent uses; its instances are
     * reached from the code that calls them. */
    if (k == CXCursor_FunctionTemplate || k == CXCursor_ClassTemplate ||
        k == CXCursor_ClassTemplatePartialSpecialization)
      continue;
    clang_visitChildren(s->items.items[i].cursor, visit, &w);
  }
}
