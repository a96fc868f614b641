/* ks_emit: a launch site rewritten to the guarded dispatch of
 * runtime/kernelsmith_dispatch.h (docs/apply.md).
 *
 * A `kernel<<<grid, block, smem, stream>>>(args)` launch becomes one
 * expression, so that it stays valid wherever the launch was (an `if`
 * without braces, a comma expression, a macro argument):
 *
 *     ([&] { static ksrt::site ks_site("k", "f.cu:41", {90});
 *            return ks_site.take(<guards>); }()
 *          ? (void)k_ks<<<grid', block', smem', stream>>>(args)
 *          : (void)k<<<grid, block, smem, stream>>>(args))
 *
 * The original launch is kept exactly as written. The variant's launch
 * policy and its `requires` guards are expressions of the guard language
 * (grid_x.. block_z, smem, the kernel's scalar parameters, len_P for a
 * buffer P, min/max/ceil_div/round_up/is_pow2/log2/abs, aligned(p, N),
 * disjoint(p, q)); they are translated to C++ over the launch site's own
 * expressions: grid_x is `dim3(<grid>).x`, a scalar parameter is its
 * argument, len_P is the spec's length of P with the size variables bound
 * to the arguments of the parameters of the same name.
 *
 * disjoint(p, q) needs both buffers' lengths: the spec's, else the
 * footprint the kernel's own code proves (ks_emit_variant.extents); with a
 * length still unknown it becomes the run-time check of the allocations
 * that hold p and q (ksrt::alias_cache: pointers into different
 * allocations are disjoint), cached per site.
 *
 * The guards and the new launch configuration read the argument and
 * configuration expressions a second time: a site whose expressions they
 * need have side effects (++, --, assignments) is refused with the reason,
 * and the original launch stays. Strings live in the arena given. */
#ifndef KS_EMIT_H
#define KS_EMIT_H

#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_model.h"
#include "ks_spec.h"

typedef struct ks_emit_variant {
  const char *variant_name;    /* the variant's __global__ function, as it
                                  will be defined beside the original */
  const ks_variant *v;         /* its launch policy (NULL parts: the
                                  original's) and its guards */
  const int *archs;            /* architectures it was verified on (90 for
                                  sm_90) */
  size_t narchs;
  const char *where;           /* "file.cu:41", for KERNELSMITH_STATS */
  /* Per parameter of the kernel (NULL, or nextents 0: none known): an
   * upper bound on the elements the original touches through it, an
   * expression of the guard language over the scalar parameters and the
   * launch (the static footprint), standing in for a length the spec
   * does not give; and where it is NULL, why (for the message). */
  const char *const *extents;
  const char *const *extent_why;
  size_t nextents;
} ks_emit_variant;

/* The text that replaces the launch expression (site->extent), whose text
 * as written is `launch_text` (kept as the original branch; NULL: rebuilt
 * from the site's parts). Fails with the reason when the site cannot be
 * dispatched (not a <<<>>> launch, a guard naming something the site cannot
 * supply, side effects in the expressions the guards read). */
int ks_emit_launch(ks_ctx *ctx, ks_arena *arena, const ks_launch *site, const char *launch_text,
                   const ks_kernel *k, const ks_spec *spec, const ks_emit_variant *ev,
                   const char **out);

/* One kernel of a file to patch: the original as the scan saw it, its
 * spec, and the variant to put beside it. */
typedef struct ks_emit_kernel {
  const ks_kernel *k;          /* its extent is in the file being patched */
  const ks_spec *spec;
  const ks_variant *v;         /* the winner; v->kernel_name is renamed */
  const char *variant_name;    /* the name it gets in the user's file */
  const char *comment;         /* lines put above it ("// ..."), or NULL */
  const int *archs;
  size_t narchs;
  const char *const *extents;  /* as in ks_emit_variant */
  const char *const *extent_why;
  size_t nextents;
  /* The digests (ks_launch_digest) of the launch sites the variant was
   * verified with; a site whose digest is not among them is left as
   * written. NULL: not known (every site may be dispatched). */
  const char *const *sites;
  size_t nsites;
} ks_emit_kernel;

/* A file's new text: each kernel's variant inserted after the original's
 * definition (under `comment`), each launch site in `sites` that launches
 * one of them from this file (`path`, as the scan names files) replaced by
 * the dispatch (a launch from another file cannot see the variant: it gets
 * a note), and `#include "<include>"` added
 * after the file's last top-of-file #include (or at its start) when some
 * site was replaced. A site that cannot be dispatched stays as written and
 * gets a line in `notes` ("file:line: kernel: why"); a kernel whose variant
 * name is already defined in the file is left alone (applying twice
 * changes nothing), with a note. *out is NULL when nothing changes. The
 * edits made, in order, are appended to `edits` unless it is NULL. */
/* One replacement of the text as read, for tools that take edits
 * (clang-tidy's --export-fixes format). */
typedef struct ks_emit_edit {
  size_t offset, length;
  const char *text;
} ks_emit_edit;
typedef KS_ARRAY(ks_emit_edit) ks_emit_edits;

int ks_emit_file(ks_ctx *ctx, ks_arena *arena, const char *path, const char *text,
                 const ks_emit_kernel *kernels, size_t nkernels, const ks_launch *sites,
                 size_t nsites, const char *include, const char **out, ks_strings *notes,
                 ks_emit_edits *edits);
/* The same for the compiler launcher: a copy compiled in place of the
 * file, whose every original line keeps its number under `#line`
 * directives naming `line_file` (the original's path), so that diagnostics
 * and debug information point at the user's file: the dispatch is written
 * on the launch's own line, the variant under a `#line` of its own. */
int ks_emit_file_lines(ks_ctx *ctx, ks_arena *arena, const char *path, const char *text,
                       const ks_emit_kernel *kernels, size_t nkernels, const ks_launch *sites,
                       size_t nsites, const char *include, const char *line_file,
                       const char **out, ks_strings *notes);

/* `s` as a C string literal (quotes and backslashes escaped). */
const char *ks_emit_c_string(ks_arena *arena, const char *s);

/* A guard or launch-policy expression in C++ for this site (exposed for
 * tests). */
int ks_emit_expr(ks_ctx *ctx, ks_arena *arena, const ks_launch *site, const ks_kernel *k,
                 const ks_spec *spec, const char *expr, const char **out);

#endif
