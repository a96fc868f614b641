/* tu: what one translation unit yields, and the libclang helpers the
 * extraction files share. Internal to the frontend: this is the only header
 * that includes clang-c, and no libclang type leaves the frontend.
 *
 * Ownership: a ks_tu_result and everything in it live in its own arena, so
 * parser threads never share an allocator; the scan keeps the arena alive
 * after merging. */
#ifndef KS_TU_H
#define KS_TU_H

#include <clang-c/Index.h>

#include "ks_model.h"
#include "ks_scan.h"

/* A call of a user function template with known arguments: lets a launch
 * inside a template host function be resolved per instantiation. */
typedef struct ks_template_call {
  const char *template_usr; /* primary template */
  ks_template_args args;    /* its parameter names bound to values */
} ks_template_call;
typedef KS_ARRAY(ks_template_call) ks_template_calls;

typedef struct ks_tu_result {
  ks_arena arena;
  const char *main_file;
  ks_kernels kernels;          /* defined here; launches filled by the merge */
  ks_launches launches;
  ks_template_calls template_calls;
  ks_strings included;         /* non-system files this unit included */
  ks_scanned_file file;        /* status and diagnostics */
} ks_tu_result;

/* Per-unit extraction state shared by tu_*.c. */
typedef struct ks_tu {
  CXTranslationUnit unit;
  ks_arena *arena;
  ks_tu_result *out;
  /* CXFile -> absolute path, small cache (units touch few user files) */
  struct { CXFile file; const char *path; } files[64];
  unsigned nfiles;
  /* the user's macro definitions (tu_macro.c), read on first use */
  KS_ARRAY(struct ks_tu_macro { const char *name; CXCursor def; }) macros;
  bool macros_read;
} ks_tu;

/* Walks the unit and fills `tu->out` (kernels, launches, template calls). */
void ks_tu_extract(ks_tu *tu);

/* tu_kernel.c: a kernel's details from its definition cursor (a FunctionDecl
 * or FunctionTemplate with a body and the global attribute). */
void ks_tu_kernel(ks_tu *tu, CXCursor def, ks_kernel *out);
/* Whether a function declaration carries __global__. */
bool ks_tu_is_kernel(CXCursor fn);

/* tu_launch.c: one launch site. `call` is the CUDA kernel call expression
 * (<<<>>>) or a cudaLaunchKernel-style call, `api` names the latter.
 * Returns false when the call turns out not to be a launch. */
typedef struct ks_launch_scope {
  CXCursor function;     /* enclosing function (or template) */
  bool in_lambda;
} ks_launch_scope;
bool ks_tu_launch(ks_tu *tu, CXCursor call, const char *api, const ks_launch_scope *scope,
                  ks_launch *out);
/* tu_macro.c: fills out->macros with the user's macros (any file of the
 * unit, as its preprocessor defined them before the launch) that `context`
 * (the enclosing function's text up to the launch) or the launch's
 * configuration names, and those their bodies name. */
void ks_tu_launch_macros(ks_tu *tu, const char *context, ks_launch *out);
/* Whether a call expression is a <<<>>> launch (has the push-configuration
 * call among its children). */
bool ks_tu_is_chevron_launch(CXCursor call);

/* tu_text.c: locations and source text. */
ks_loc ks_tu_loc(ks_tu *tu, CXSourceLocation loc);          /* file location */
ks_loc ks_tu_expansion_loc(ks_tu *tu, CXSourceLocation loc);
ks_loc ks_tu_spelling_loc(ks_tu *tu, CXSourceLocation loc);
ks_range ks_tu_extent(ks_tu *tu, CXCursor c);               /* file range */
bool ks_tu_in_system(CXCursor c);
/* Whether a declaration's name was produced by a macro expansion. */
bool ks_tu_name_from_macro(ks_tu *tu, CXCursor decl);
/* Text of [begin, end) in `file` as the unit saw it; NULL if out of range. */
/* The CXFile behind a path this unit handed out (or could open). */
CXFile ks_tu_file(ks_tu *tu, const char *path);
const char *ks_tu_text(ks_tu *tu, const char *file, unsigned begin, unsigned end);
const char *ks_tu_range_text(ks_tu *tu, ks_range r);
/* An expression as the user wrote it, or clang's printing of it when it was
 * spelled in a macro body (see tu_text.c). `outer` bounds where it may lie. */
const char *ks_tu_expr_text(ks_tu *tu, CXCursor expr, ks_range outer);
/* The identifier written at `loc` (a macro's name where one is expanded
 * there), or NULL. */
const char *ks_tu_macro_at(ks_tu *tu, ks_loc loc);
const char *ks_tu_string(ks_tu *tu, CXString s); /* copies, then disposes */
const char *ks_tu_spelling(ks_tu *tu, CXCursor c);
const char *ks_tu_usr(ks_tu *tu, CXCursor c);
const char *ks_tu_type(ks_tu *tu, CXType t);
/* "ns::Class::name", from the semantic parents. */
const char *ks_tu_qualified_name(ks_tu *tu, CXCursor c);
/* Skips implicit casts, parentheses and other wrappers down to the first
 * child that is a reference (DeclRefExpr, overloaded ref, member ref). */
CXCursor ks_tu_strip(CXCursor c);
/* Children of a cursor, in order, into `out` (at most `max`); returns count. */
unsigned ks_tu_children(CXCursor c, CXCursor *out, unsigned max);
/* A function (template)'s declared parts, in order: its template parameters
 * (names; whether each is a type parameter; a non-type one's canonical type
 * kind, CXType_Invalid otherwise) and its parameters (names and types). */
typedef struct ks_tu_decl_parts {
  const char *tparams[64];
  bool type_param[64];
  enum CXTypeKind tkinds[64];
  unsigned ntparams;
  const char *pnames[64];
  const char *ptypes[64];
  unsigned nparams;
} ks_tu_decl_parts;
void ks_tu_decl_parts_of(ks_tu *tu, CXCursor decl, ks_tu_decl_parts *out);
/* Template arguments of a function template specialization, named after the
 * primary template's parameters. */
void ks_tu_template_args(ks_tu *tu, CXCursor specialization, ks_template_args *out);

#endif
