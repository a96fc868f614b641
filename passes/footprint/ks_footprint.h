/* ks_footprint: how far into each buffer a kernel can reach, proved from its
 * own code.
 *
 * A variant's `disjoint(a, c)` guard becomes, at the launch site, an
 * interval test that needs how many elements of `a` and `c` the kernel
 * touches. This module reads the kernel's tree (frontend/ks_kast.h) and
 * proves, for every pointer parameter, an upper bound of 1 + the largest
 * element index accessed through it, as an expression of the guard
 * language (support/ks_expr.h): integer constants, the kernel's scalar
 * parameters, grid_x .. block_z, + - * / %, min, max, ceil_div.
 *
 * How: interval arithmetic with symbolic bounds (polynomials over the
 * parameters and launch dimensions). threadIdx.x is in [0, block_x - 1],
 * blockIdx.x in [0, grid_x - 1]; locals assigned once take their value's
 * range, loop variables of understood `for` loops their loop's range;
 * conditions (`if`, `&&`, `?:`, early exits) narrow the ranges on their
 * paths. Constants are folded: macros (the tree holds their expansions),
 * const locals, enumerators and namespace-scope constants (read from the
 * unit's text: footprint_const.c), sizeof of basic types.
 *
 * Soundness first: every use of a pointer parameter must be understood
 * (`p[i]`, `*(p + i)`, `*p`, `p->m`, `&p[i]` or `p + i` given to an atomic
 * or a cache-hinted load/store, a local alias `T *row = p + off;` never
 * reassigned, a null test); anything else (a call, a store, a cast to
 * another pointer type, a reassignment) leaves the extent unproved, with a
 * reason. Every index must be proved >= 0. The kernel is assumed free of
 * integer overflow (an index that overflows its type is a bug of the
 * kernel itself); the extent is evaluated in 64 bits at the launch site,
 * and a negative value there means "unknown" to the caller. An element
 * passed by reference to a device function is taken as that element only.
 *
 * Ownership: every string lives in the arena passed in. */
#ifndef KS_FOOTPRINT_H
#define KS_FOOTPRINT_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_kast.h"

typedef struct ks_footprint {
  const char *param;  /* the parameter's name */
  const char *extent; /* an expression of the guard language that is, in every
                         execution of the kernel, >= 1 + the largest element
                         index (in elements of the pointee type) accessed
                         through the parameter, every index accessed being
                         >= 0 ("0": never used); NULL: not proved */
  const char *why;    /* extent NULL: a short clause saying why ("its index
                         depends on 'col[k]', read from memory"); else NULL */
  bool read, written; /* how the kernel may use it (an element passed to a
                         device function counts as both; a pointer whose
                         extent is not proved: both) */
} ks_footprint;

typedef KS_ARRAY(ks_footprint) ks_footprints;

/* One entry per parameter of the kernel, in order (a scalar parameter:
 * extent NULL, why "not a pointer"). Fails only on a tree it cannot read
 * at all; an unproved extent is not a failure. */
int ks_footprints_of(ks_ctx *ctx, const ks_kast *kast, ks_arena *arena, ks_footprints *out);

/* The same from a unit's text (the slice the store keeps for a kernel),
 * parsed with ks_kast_parse for the kernel `name`; `path` names the unit in
 * messages. Fails when the unit does not parse. */
int ks_footprints_from_unit(ks_ctx *ctx, const char *path, const char *unit, const char *name,
                            ks_arena *arena, ks_footprints *out);
/* The same where footprints only help (a guard's lengths, a captured
 * launch's bytes): a unit that does not parse gives none, and says
 * nothing. `prog` names the tool in the messages it drops. */
ks_footprints ks_footprints_or_none(const char *prog, const char *path, const char *unit,
                                    const char *name, ks_arena *arena);

#endif
