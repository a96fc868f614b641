/* The walk over one translation unit: every function definition in the
 * user's files is either a kernel (recorded with its details) or code that
 * may launch kernels (its body is searched for launch sites and for calls of
 * user function templates). System headers are skipped whole. */
#include <string.h>

#include "ks_ctext.h"
#include "tu.h"

static const char *const launch_apis[] = {
    "cudaLaunchKernel",          "cudaLaunchCooperativeKernel", "cudaLaunchKernelEx",
    "cudaLaunchKernelExC",       "cudaLaunchCooperativeKernelMultiDevice",
};

typedef struct body_state {
  ks_tu *tu;
  ks_launch_scope scope;
} body_state;

static const char *launch_api(CXCursor call) {
  CXString s = clang_getCursorSpelling(call);
  const char *name = clang_getCString(s);
  const char *api = NULL;
  for (size_t i = 0; name && i < sizeof launch_apis / sizeof *launch_apis; i++)
    if (!strcmp(name, launch_apis[i]))
      api = launch_apis[i];
  clang_disposeString(s);
  return api;
}

/* A call of a user function template specialization: remember its
 * arguments so that launches inside the template can be resolved. */
static void note_template_specialization(ks_tu *tu, CXCursor decl) {
  if (clang_Cursor_isNull(decl) || clang_getCursorKind(decl) != CXCursor_FunctionDecl)
    return;
  CXCursor primary = clang_getSpecializedCursorTemplate(decl);
  if (clang_Cursor_isNull(primary) || ks_tu_in_system(primary) || ks_tu_is_kernel(primary))
    return;
  ks_template_call *tc = ks_array_push(tu->arena, &tu->out->template_calls);
  tc->template_usr = ks_tu_usr(tu, primary);
  ks_tu_template_args(tu, decl, &tc->args);
}

/* An argument libclang cannot read (a function pointer or an object's
 * address: `trimul_launcher<matmul_tri_naive>(...)`, llm.c) is the one
 * written between the callee's <> at the same position, where the call
 * spells them; otherwise it stays "?", which names no instance. */
static void written_args(ks_tu *tu, CXCursor call, ks_template_args *args) {
  bool unknown = false;
  for (size_t i = 0; i < args->len; i++)
    unknown |= !strcmp(args->items[i].value, "?");
  if (!unknown)
    return;
  const char *text = ks_tu_range_text(tu, ks_tu_extent(tu, call));
  const char *end = text ? text + strlen(text) : NULL;
  const char *paren = text ? ks_ctext_find(text, end, "(") : NULL;
  const char *open = paren ? memchr(text, '<', (size_t)(paren - text)) : NULL;
  const char *close = open ? ks_ctext_matching(open, paren) : NULL;
  if (!close)
    return;
  ks_strings written = {0};
  ks_ctext_split(tu->arena, open + 1, close, &written);
  for (size_t i = 0; i < args->len && i < written.len; i++)
    if (!strcmp(args->items[i].value, "?"))
      args->items[i].value = written.items[i];
}

static void note_template_call(ks_tu *tu, CXCursor call) {
  size_t before = tu->out->template_calls.len;
  note_template_specialization(tu, clang_getCursorReferenced(call));
  if (tu->out->template_calls.len > before)
    written_args(tu, call, &tu->out->template_calls.items[before].args);
}

static enum CXChildVisitResult visit_body(CXCursor c, CXCursor parent, CXClientData data) {
  body_state *st = data;
  switch (clang_getCursorKind(c)) {
  case CXCursor_LambdaExpr: {
    body_state inner = *st;
    inner.scope.in_lambda = true;
    clang_visitChildren(c, visit_body, &inner);
    return CXChildVisit_Continue;
  }
  case CXCursor_CallExpr: {
    const char *api = NULL;
    if (ks_tu_is_chevron_launch(c) || (api = launch_api(c))) {
      ks_launch launch = {0};
      if (ks_tu_launch(st->tu, c, api, &st->scope, &launch))
        *ks_array_push(st->tu->arena, &st->tu->out->launches) = launch;
    } else {
      note_template_call(st->tu, c);
    }
    return CXChildVisit_Recurse;
  }
  default:
    return CXChildVisit_Recurse;
  }
}

static void visit_function(ks_tu *tu, CXCursor fn) {
  if (!clang_isCursorDefinition(fn))
    return;
  /* An implicit instantiation sits where its template is; the template
   * itself is what the user wrote (explicit specializations sit apart). */
  CXCursor pattern = clang_getSpecializedCursorTemplate(fn);
  if (!clang_Cursor_isNull(pattern) && clang_getCursorKind(fn) != CXCursor_FunctionTemplate &&
      clang_equalLocations(clang_getCursorLocation(fn), clang_getCursorLocation(pattern))) {
    /* One that shows at the top level is an explicit instantiation
     * (`template void run<float>(float *, int);`): it instantiates its
     * template as a call would, so launches inside take its arguments. */
    note_template_specialization(tu, fn);
    return;
  }
  bool kernel = ks_tu_is_kernel(fn);
  if (kernel)
    ks_tu_kernel(tu, fn, ks_array_push(tu->arena, &tu->out->kernels));
  /* Kernels can launch kernels too (dynamic parallelism). */
  size_t first = tu->out->launches.len;
  body_state st = {tu, {fn, false}};
  clang_visitChildren(fn, visit_body, &st);
  for (size_t i = first; kernel && i < tu->out->launches.len; i++)
    tu->out->launches.items[i].device_side = true;
}

static enum CXChildVisitResult visit_top(CXCursor c, CXCursor parent, CXClientData data) {
  ks_tu *tu = data;
  if (ks_tu_in_system(c))
    return CXChildVisit_Continue;
  switch (clang_getCursorKind(c)) {
  case CXCursor_Namespace:
  case CXCursor_LinkageSpec:
  case CXCursor_ClassDecl:
  case CXCursor_StructDecl:
  case CXCursor_UnionDecl:
  case CXCursor_ClassTemplate:
  case CXCursor_ClassTemplatePartialSpecialization:
  case CXCursor_UnexposedDecl:
    return CXChildVisit_Recurse;
  case CXCursor_FunctionDecl:
  case CXCursor_FunctionTemplate:
  case CXCursor_CXXMethod:
  case CXCursor_Constructor:
  case CXCursor_Destructor:
  case CXCursor_ConversionFunction:
    visit_function(tu, c);
    return CXChildVisit_Continue;
  case CXCursor_VarDecl: {
    /* A lambda stored in a variable at namespace scope may launch. */
    body_state st = {tu, {c, false}};
    clang_visitChildren(c, visit_body, &st);
    return CXChildVisit_Continue;
  }
  default:
    return CXChildVisit_Continue;
  }
}

static void visit_inclusion(CXFile file, CXSourceLocation *stack, unsigned depth,
                            CXClientData data) {
  ks_tu *tu = data;
  if (depth == 0)
    return; /* the main file */
  CXSourceLocation start = clang_getLocationForOffset(tu->unit, file, 0);
  if (clang_Location_isInSystemHeader(start))
    return;
  ks_loc loc = ks_tu_loc(tu, start);
  if (loc.file)
    *ks_array_push(tu->arena, &tu->out->included) = loc.file;
}

void ks_tu_extract(ks_tu *tu) {
  clang_visitChildren(clang_getTranslationUnitCursor(tu->unit), visit_top, tu);
  clang_getInclusions(tu->unit, visit_inclusion, tu);
}
