/* slice: the slicer's internal state, shared by slice*.c (see ks_slice.h for
 * what a slice is). Internal to the frontend, like tu.h.
 *
 * A slice is made in four steps, one file each:
 *   slice_parse.c  re-parse the file that defines the kernel with the scan's
 *                  flags and the detailed preprocessing record;
 *   slice_index.c  index that unit: its top-level declarations in the user's
 *                  files (in translation-unit order), every macro definition,
 *                  and where each file was included from;
 *   slice_deps.c   the closure: from the kernel, follow every reference to
 *                  the declarations it needs, and note the toolkit headers
 *                  and library names it uses (slice_compat.c says which
 *                  NVRTC can have);
 *   slice_emit.c   the macros those declarations expand, then the text:
 *                  includes, #defines and declarations in unit order, each
 *                  in its namespaces, with #line pointing at the user's file.
 *
 * Ownership: everything here lives in the slicer's scratch arena (tu.arena),
 * released with the slicer; results are copied into the caller's arena. */
#ifndef KS_SLICE_INTERNAL_H
#define KS_SLICE_INTERNAL_H

#include <stdbool.h>

#include "flags.h"
#include "ks_slice.h"
#include "tu.h"

/* A position in translation-unit order: the offsets of the #include
 * directives that lead from the main file to a file, then the offset in that
 * file. Compared element by element, it orders any two places of the unit
 * the way the compiler read them. parts[0] is 0 for text read before the
 * main file (the CUDA wrapper, forced includes) and 1 for the main file. */
enum { KS_ORDER_MAX = 24 };
typedef struct ks_order {
  unsigned parts[KS_ORDER_MAX];
  unsigned n;
} ks_order;

int ks_order_cmp(const ks_order *a, const ks_order *b);

/* A file the unit read, and how it got there. */
typedef struct slice_file {
  CXFile file;
  const char *path;     /* absolute */
  ks_order chain;       /* the include directives leading here (no offset in
                           the file itself) */
  long includer;        /* index of the file that included it; -1 for the
                           main file and files read before it */
  bool system;
} slice_file;
typedef KS_ARRAY(slice_file) slice_files;

/* One #include the unit read (a file entered again behind its guard
 * included): file indices. */
typedef struct slice_edge {
  long from, to;
} slice_edge;
typedef KS_ARRAY(slice_edge) slice_edges;

/* A declaration at namespace scope in the user's files: the unit of text
 * the slice copies. Members, enumerators and locals belong to theirs. */
typedef struct slice_item {
  CXCursor cursor;
  enum CXCursorKind kind;
  ks_range range;       /* its text */
  ks_order order;
  const char *name;     /* qualified name ("ns::f"); "" when anonymous */
  const char *template_usr; /* for a specialization written by the user: the
                               USR of its template, else NULL */
  bool needed;          /* in the closure */
  bool walked;          /* its references followed */
  bool device_context;  /* walked as device code */
} slice_item;
typedef KS_ARRAY(slice_item) slice_items;

/* A macro definition (the user's and the system's). */
typedef struct slice_macro {
  const char *name;
  CXCursor cursor;
  ks_range range;       /* "NAME(params) body"; resolved lazily */
  ks_order order;
  bool located;         /* range, order and system filled */
  bool system;
  bool needed;
} slice_macro;
typedef KS_ARRAY(slice_macro) slice_macros;

/* A change to an item's text: host-only members removed, constexpr
 * functions made __host__ __device__. Offsets are into the item's file. */
typedef struct slice_edit {
  const char *file;
  unsigned begin, end;  /* replaced bytes; begin == end inserts */
  const char *text;     /* replacement; newlines of removed text are kept
                           by the emitter so #line stays right */
} slice_edit;
typedef KS_ARRAY(slice_edit) slice_edits;

typedef struct ks_slicer {
  ks_ctx *ctx;
  ks_tu tu;               /* the unit, and the scratch arena */
  const ks_clang_env *env;
  const ks_kernel *kernel;
  CXCursor kernel_cursor;
  const char *main_file;
  const ks_strings *defines; /* -D flags the file was parsed with */
  slice_files files;
  size_t last_file;       /* the last file looked up, tried first */
  slice_edges edges;      /* every #include, for the header a user wrote */
  slice_items items;      /* in unit order */
  slice_macros macros;    /* sorted by name, then unit order */
  slice_edits edits;
  ks_strings prelude;     /* lines before the code: #includes and #defines
                             standing in for C library macros, each once,
                             in order of need */
  ks_strings includes;    /* toolkit headers, as in #include <...> */
  ks_strings system_namespaces; /* namespaces of the system declarations the
                             slice uses ("nvcuda::wmma"): a using-directive
                             naming one is kept */
  ks_indices worklist;    /* items to walk */
  bool needs_rdc;         /* device code launches kernels */
  bool failed;            /* a reason was recorded with ks_fail */
} ks_slicer;

/* slice_parse.c: parses `path` with the scan's flags (its own, or those of
 * the nearest file of the scan that has some), with the detailed
 * preprocessing record, for the device side (sm_90) or, with !device, the
 * host side as the scan did. `workdir` is a private directory for clang's
 * stubs. */
typedef struct slice_parse {
  char workdir[64];
  bool have_workdir;
  ks_clang_env env;
  CXIndex index;
  CXTranslationUnit unit;
  ks_strings defines;     /* -D flags among the arguments */
  ks_strings codegen;     /* the file's code-generation options (NVRTC's) */
  bool compile_command;   /* the build's command for the file is known */
  unsigned user_errors;   /* errors clang found in the user's files */
  unsigned lost_launches; /* of which launches from device code it refused */
} slice_parse;
int ks_slice_parse(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                   const char *path, bool device, ks_arena *arena, slice_parse *out);
void ks_slice_parse_release(slice_parse *p);

/* slice_index.c */
int ks_slice_index(ks_slicer *s);
/* The file entry of `file`, or NULL. */
const slice_file *ks_slice_file(ks_slicer *s, CXFile file);
/* Where `loc` lies in unit order; false when it is in no file. */
bool ks_slice_order(ks_slicer *s, CXSourceLocation loc, ks_order *out);
/* The same for an offset of a known file path. */
bool ks_slice_order_at(ks_slicer *s, const char *path, unsigned offset, ks_order *out);
/* The item a declaration belongs to (its outermost enclosing declaration at
 * namespace scope), or -1. */
long ks_slice_item_of(ks_slicer *s, CXCursor decl);
/* Whether a declaration is in the declarations kernelsmith-cc gives clang
 * for what it lacks (flags.c's prelude): NVRTC has those built in. */
bool ks_slice_in_stubs(ks_slicer *s, CXCursor c);
/* Items by qualified name ("ns::T"); the first at or after `from`, or -1. */
long ks_slice_item_named(ks_slicer *s, const char *name, size_t from);
/* The definition of macro `name` in force at `use`, or NULL. */
slice_macro *ks_slice_macro_at(ks_slicer *s, const char *name, size_t len, const ks_order *use);
void ks_slice_locate_macro(ks_slicer *s, slice_macro *m);

/* slice_deps.c: the closure from the kernel; fails with a one-line reason. */
int ks_slice_closure(ks_slicer *s, const char *const *instance_args, size_t ninstance);
/* A variable in device memory (__constant__ or __device__, not __shared__):
 * state the program may set (cudaMemcpyToSymbol), which a capture does not
 * hold. */
bool ks_slice_device_variable(CXCursor c);

/* Types used by name where no reference leads (the arguments of an
 * instance): their declarations join the closure. */
void ks_slice_need_type(ks_slicer *s, CXType t);

/* slice_texture.c: fails with a one-line reason when a declaration of the
 * closure reads a texture reference (removed in CUDA 12); the file it names
 * is relative to `root` (the scan's) when below it. */
int ks_slice_check_textures(ks_slicer *s, const char *root);

/* slice_inst.c: the template arguments ("float, 256") of every
 * specialization of the (template) kernel the unit instantiates, appended
 * to `out` once each. */
void ks_slice_find_instances(ks_slicer *s, ks_strings *out);
/* "float, 256" for one specialization of the kernel (its types join the
 * closure); NULL when an argument is of a kind a name expression cannot
 * carry here (packs, templates). */
const char *ks_slice_template_args(ks_slicer *s, CXCursor spec);

/* slice_compat.c: what a name from a system header means to NVRTC. */
typedef enum slice_system_kind {
  SLICE_SYS_BUILTIN,   /* NVRTC has it: nothing to add */
  SLICE_SYS_INCLUDE,   /* a toolkit header to #include (*out) */
  SLICE_SYS_DEFINE,    /* a line to add before the code (*out) */
  SLICE_SYS_MISSING,   /* NVRTC has no such thing: *out names the header it
                          is from, or is NULL (the C++ library) */
} slice_system_kind;
/* A declaration from a system header. */
slice_system_kind ks_slice_system_decl(ks_slicer *s, CXCursor decl, const char **out);
/* A macro from a system header. */
slice_system_kind ks_slice_system_macro(ks_slicer *s, slice_macro *m, const char **out);
/* Adds a prelude line once. */
void ks_slice_add_prelude(ks_slicer *s, const char *text);
/* Adds a toolkit header (as in #include <...>) once, with its prelude line. */
void ks_slice_add_include(ks_slicer *s, const char *header);
/* Whether a path lies in the toolkit's include directories; sets *rel to
 * the part after them ("cuda_fp16.h"). */
bool ks_slice_toolkit_header(const ks_slicer *s, const char *path, const char **rel);

/* slice_emit.c: the macros the needed text uses, then the unit. */
int ks_slice_emit(ks_slicer *s, ks_arena *arena, ks_slice *out);

/* Identifier scanning shared by slice_emit.c and slice_deps.c: calls `fn`
 * for every identifier of [text, text + len) outside comments and literals,
 * with its offset; stops when `fn` returns false. */
typedef bool (*slice_ident_fn)(void *data, const char *ident, size_t len, size_t offset);
void ks_slice_identifiers(const char *text, size_t len, slice_ident_fn fn, void *data);

#endif
