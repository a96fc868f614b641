/* ks_kast: a kernel's syntax tree as plain structs, for source rewrites.
 *
 * The rules proposer (passes/rules*.c) rewrites kernels at the source level,
 * guided by the AST; libclang stays inside the frontend, so this module parses
 * a compilation unit held in memory (a slice followed by a variant, exactly
 * the text NVRTC will compile) on the device side for sm_90, finds one
 * __global__ function by name, and hands back its tree: every statement,
 * expression and declaration below the function, with byte offsets into the
 * text that was parsed. Rules match patterns on the tree and edit the text.
 *
 * The tree mirrors the written text: implicit conversions, implicit copy
 * constructions and the like are not nodes. Extents follow clang: a
 * statement's ends before its ';' (DECL_STMT's includes it), a VAR's is
 * "int i = 0". `#pragma unroll` wraps its loop in an OTHER node
 * ("UnexposedStmt") whose text starts at the pragma.
 *
 * Macros: nodes whose text comes from a macro expansion carry the extent of
 * the expansion (the spelling location is not used), and `from_macro` is set,
 * so a rule can refuse to edit inside one. A node only partly inside one
 * (`GELU_SCALING_FACTOR * x`) is not from_macro. Operators and member names
 * inside a macro are read from its definition; where that cannot be done
 * (an operator on a macro argument inside another macro's argument) `op` is
 * "?".
 *
 * Ownership: every node and string lives in the arena passed to
 * ks_kast_parse; nothing else needs to be freed. The parse is thread-safe
 * (each call makes its own CXIndex). The first call of a process writes the
 * clang stub headers and builds a precompiled header of CUDA's headers
 * (about 0.6 s) in /tmp/kernelsmith-kast-XXXXXX, shared by every later call
 * from any thread and removed at exit; later parses take ~30 ms instead of
 * ~300 ms. */
#ifndef KS_KAST_H
#define KS_KAST_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"

typedef enum ks_akind {
  KS_AK_OTHER,         /* anything not listed: kind_name says what */
  /* declarations */
  KS_AK_FUNCTION,      /* the kernel itself (the root) */
  KS_AK_TEMPLATE,      /* the kernel's template, when it is one: the root,
                          with the FUNCTION among its children */
  KS_AK_TEMPLATE_PARAM,/* template type or non-type parameter */
  KS_AK_PARAM,         /* function parameter */
  KS_AK_VAR,           /* local variable (DeclStmt's child); shared_space set
                          for __shared__; kids: its initializer, if written
                          (array sizes are not kids: see `type`) */
  KS_AK_ATTR,          /* an attribute: __launch_bounds__, __restrict__ ...
                          name: the keyword or macro as written
                          ("__global__", "__launch_bounds__"; for
                          __attribute__((x)) the "x"); its text includes
                          the arguments. FUNCTION's kids start with its
                          ATTRs; a PARAM's kids are its ATTRs, including
                          one for a written __restrict__ */
  /* statements */
  KS_AK_COMPOUND,      /* { ... } */
  KS_AK_DECL_STMT,
  KS_AK_IF,            /* kids: cond, then[, else] */
  KS_AK_FOR,           /* kids: init (or NULL), cond (or NULL), inc (or NULL),
                          body: always 4 kids, absent ones NULL */
  KS_AK_WHILE,         /* kids: cond, body */
  KS_AK_DO,            /* kids: body, cond */
  KS_AK_RETURN,
  KS_AK_BREAK,
  KS_AK_CONTINUE,
  /* expressions */
  KS_AK_BINARY,        /* op: "+", "<", "&&", "=", ... (assignment too) */
  KS_AK_COMPOUND_ASSIGN,/* op: "+=", "*=", ">>=", ... */
  KS_AK_UNARY,         /* op: "-", "!", "~", "*", "&", "++", "--";
                          postfix set for x++ and x-- */
  KS_AK_CONDITIONAL,   /* a ? b : c */
  KS_AK_CALL,          /* name: the callee as written ("atomicAdd", "expf",
                          "__syncthreads", "max"; "twice" for twice<float>;
                          through a macro naming the function, the
                          function's name); kids: the arguments only.
                          Overloaded operators (__half a * b) are BINARY,
                          UNARY, COMPOUND_ASSIGN or SUBSCRIPT instead */
  KS_AK_SUBSCRIPT,     /* a[i]: kids base, index */
  KS_AK_MEMBER,        /* a.b or a->b: name "b", kids: the base; arrow set.
                          threadIdx.x is a MEMBER named "x" whose base is a
                          DECL_REF named "threadIdx" */
  KS_AK_DECL_REF,      /* name; decl: the PARAM/VAR/TEMPLATE_PARAM node in
                          this tree it refers to, or NULL (a global, a
                          builtin variable such as threadIdx) */
  KS_AK_INT_LITERAL,   /* int_value */
  KS_AK_FLOAT_LITERAL,
  KS_AK_CAST,          /* explicit cast, C or C++ style, and T(x) with a
                          template T; type: the target; kids: the operand */
  KS_AK_PAREN,
  KS_AK_INIT_LIST,
} ks_akind;

typedef struct ks_anode {
  ks_akind kind;
  const char *kind_name;  /* libclang's cursor kind spelling ("ForStmt") */
  const char *op;         /* operators; NULL otherwise */
  bool postfix;           /* UNARY: x++ / x-- */
  bool arrow;             /* MEMBER: a->b */
  bool from_macro;        /* its text comes from a macro expansion */
  bool shared_space;      /* VAR: declared __shared__ */
  bool is_const;          /* PARAM, VAR: pointee is const (const T *p);
                             for a non-pointer, the variable is const */
  bool is_restrict;       /* PARAM: the pointer is __restrict__ */
  bool is_pointer;        /* PARAM, VAR: a pointer type */
  const char *name;       /* declarations, DECL_REF, MEMBER, CALL, ATTR */
  const char *type;       /* the type as clang spells it (canonical not
                             used: "float *", "const T *", "int"); set for
                             declarations and expressions (threadIdx.x:
                             "<pseudo-object type>"), NULL for statements
                             and type template parameters */
  const char *canon_type; /* `type` with typedefs and macros seen through
                             ("float" for a `typedef float DATA_TYPE`
                             local), as the compiler sees it; NULL where
                             `type` is */
  const char *pointee;    /* for pointers: the pointee type ("float",
                             "const float", "T"), else NULL */
  const char *canon_pointee; /* the pointee with typedefs seen through */
  long long int_value;    /* INT_LITERAL */
  unsigned begin, end;    /* the node's text: [begin, end) in the source */
  struct ks_anode *parent;
  struct ks_anode **kids; /* FOR has exactly 4, some NULL; others no NULLs */
  size_t nkids;
  struct ks_anode *decl;  /* DECL_REF: its declaration in this tree */
  /* Where the name is written: the identifier of a declaration (FUNCTION,
   * PARAM, VAR, TEMPLATE_PARAM), the member of a MEMBER, the callee of a
   * CALL as written ("expf", "twice<float>", a macro naming the function),
   * an ATTR's keyword or macro; DECL_REF: its extent. Inside a macro, the
   * invocation's extent. */
  unsigned name_begin, name_end;
} ks_anode;

typedef struct ks_kast {
  const char *source;     /* the parsed text (the caller's pointer) */
  size_t source_len;
  ks_anode *root;         /* TEMPLATE or FUNCTION */
  ks_anode *fn;           /* the FUNCTION */
  ks_anode *body;         /* its COMPOUND body */
  ks_anode **params;      /* PARAM nodes in order */
  size_t nparams;
  /* Where the parts of the definition are, for rewrites that add
   * attributes or change parameters. */
  unsigned decl_begin;    /* first byte of the definition ("template",
                             "__global__", or an attribute before it) */
  unsigned global_at;     /* the "__global__" token (or the macro that
                             spells it) */
  unsigned name_begin, name_end; /* the function's name */
  unsigned params_open, params_close; /* offsets of '(' and ')' */
} ks_kast;

typedef struct ks_kast_options {
  const char *name;       /* the __global__ function to return (unqualified
                             or qualified name; template arguments, as in
                             "k<float>", are ignored); the last definition
                             with this name wins (the variant follows the
                             slice) */
  const char *arch;       /* NULL: "sm_90" */
  const char *const *extra_args; /* more clang arguments (-D, -I), or NULL */
  size_t nextra;
  bool no_pch;            /* parse CUDA's headers anew (tests, timing) */
} ks_kast_options;

/* Parses `source` (in memory; `path` is the name used in messages) as CUDA
 * device code for `arch`, with the toolkit's include directories and clang's
 * resource headers as the slicer uses them, and builds the tree of the
 * kernel named in opts. Fails with "path:line: message" for the first error
 * in the text (line: of the in-memory text, not of #line), or when no such
 * kernel is defined. As in the slicer, clang 16's refusal of kernel
 * launches from device code is not an error (NVRTC accepts them with
 * -rdc). */
int ks_kast_parse(ks_ctx *ctx, const char *path, const char *source,
                  const ks_kast_options *opts, ks_arena *arena, ks_kast *out);

/* The text of a node: [begin, end) of the source, copied into `arena`. */
const char *ks_anode_text(ks_arena *arena, const ks_kast *k, const ks_anode *n);

/* Depth-first, pre-order walk: `visit` returns false to skip a node's
 * children. NULL kids (of FOR) are skipped. */
void ks_anode_walk(ks_anode *n, bool (*visit)(ks_anode *n, void *arg), void *arg);

/* Small predicates every rule needs. */
/* `threadIdx.x` (which == 'x') and friends: builtin: "threadIdx", "blockIdx",
 * "blockDim", "gridDim"; which == 0 matches any of x, y, z. Parentheses
 * around the MEMBER are looked through. */
bool ks_anode_is_builtin(const ks_anode *n, const char *builtin, char which);
/* Strips PAREN and implicit wrappers (and CAST when `casts`). */
const ks_anode *ks_anode_strip(const ks_anode *n, bool casts);

#endif
