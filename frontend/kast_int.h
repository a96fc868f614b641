/* kast internals: what the parse driver (kast.c) hands the tree builder
 * (kast_build.c) and the location helpers (kast_loc.c). libclang comes in
 * through tu.h, as everywhere in the frontend.
 *
 * Offsets are byte offsets into the in-memory unit. Raw tokens of the
 * kernel's text (clang_tokenize: no macro expansion, #line ignored) let the
 * builder read what libclang's C API does not expose: operator spellings,
 * member names of CUDA's builtin variables, the parts of a for header, the
 * extent of a macro invocation. */
#ifndef KS_KAST_INT_H
#define KS_KAST_INT_H

#include "ks_kast.h"
#include "tu.h"

typedef struct kast_token {
  unsigned begin, end;
  CXTokenKind kind;
} kast_token;

/* A macro expansion written in the unit (from the detailed preprocessing
 * record; expansions of macros that live in the precompiled header are not
 * recorded, and are measured from the tokens instead). */
typedef struct kast_range {
  unsigned begin, end;
} kast_range;

typedef struct kast_decl {
  CXCursor cursor;
  ks_anode *node;
} kast_decl;

typedef struct kast_builder {
  ks_tu tu;               /* unit and arena for the ks_tu_* helpers */
  CXFile file;            /* the unit's main file */
  const char *source;
  size_t len;
  ks_arena *arena;        /* the caller's: nodes and strings */
  ks_arena scratch;       /* child lists, released after the build */
  kast_token *tokens;     /* sorted by offset */
  size_t ntokens;
  KS_ARRAY(kast_range) macros; /* in the order written */
  KS_ARRAY(kast_decl) decls;   /* PARAM, VAR, TEMPLATE_PARAM seen so far */
  const char *kind_names[1024]; /* cursor kind spellings, copied once */
} kast_builder;

/* ---- kast_loc.c ---- */

/* Whether libclang's location lies inside a macro expansion. */
bool kast_is_macro_loc(CXSourceLocation loc);
/* Offset in the unit of the expansion (or file) location; false when the
 * location is not in the unit. */
bool kast_expansion_offset(kast_builder *b, CXSourceLocation loc, unsigned *out);
/* A cursor's text in the unit: the written extent, or for a node whose text
 * comes from one macro invocation, the invocation's extent. */
void kast_extent(kast_builder *b, CXCursor c, unsigned *begin, unsigned *end, bool *from_macro);
/* End of the macro invocation that starts at `at` (object-like: the name;
 * function-like: through the closing parenthesis). */
unsigned kast_invocation_end(kast_builder *b, unsigned at);
/* Index of the first token starting at or after `offset` (ntokens if none). */
size_t kast_token_at(const kast_builder *b, unsigned offset);
/* Whether token i is the punctuation `p`. */
bool kast_token_is(const kast_builder *b, size_t i, const char *p);
/* Index of the token closing the bracket opened at token i, or ntokens. */
size_t kast_token_match(const kast_builder *b, size_t i);
/* Tokens of [begin, end) of the unit into b->tokens; records macro
 * expansions of the unit. */
void kast_tokenize(kast_builder *b, unsigned begin, unsigned end);
void kast_collect_macros(kast_builder *b);
/* The text a macro location was spelled from (in the #define), `len`
 * bytes of it. */
const char *kast_spelled(kast_builder *b, CXSourceLocation loc, unsigned len);
/* The spelled text from `from` up to `to`, when both lie in one macro
 * body's expansion; NULL otherwise. */
const char *kast_spelled_between(kast_builder *b, CXSourceLocation from, CXSourceLocation to);

/* ---- kast_build.c ---- */

typedef KS_ARRAY(CXCursor) kast_cursors;

/* The children of a cursor (into b->scratch); without `all`, references to
 * types and namespaces and attributes are left out. */
void kast_children(kast_builder *b, CXCursor c, bool all, kast_cursors *out);
const char *kast_kind_name(kast_builder *b, enum CXCursorKind k);
/* A node for `c`: kind OTHER, kind_name, extent, type. */
ks_anode *kast_new_node(kast_builder *b, CXCursor c, ks_anode *parent);
/* Allocates `count` kids, all NULL. */
void kast_set_kids(kast_builder *b, ks_anode *n, size_t count);
/* A declaration's name and where it is written. */
void kast_decl_name(kast_builder *b, CXCursor c, ks_anode *n);
ks_anode *kast_build_attr(kast_builder *b, CXCursor c, ks_anode *parent);
/* The tree below `c`, wrappers the user did not write skipped. */
ks_anode *kast_build_node(kast_builder *b, CXCursor c, ks_anode *parent);

/* ---- kast_kernel.c ---- */

/* Builds the tree of a kernel definition (FunctionDecl or FunctionTemplate)
 * into `out`. */
void kast_build_kernel(kast_builder *b, CXCursor def, ks_kast *out);

#endif
