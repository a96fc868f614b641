/* ks_specs: finding, parsing and resolving a kernel's spec (ks_spec.h;
 * syntax in docs/spec.md).
 *
 * A spec is an annotation comment right above the kernel or one of its
 * launch sites:
 *     / * kernelsmith: ... * /   or a run of "// kernelsmith: ..." lines
 * or a section "kernel NAME" of a sidecar file: SOURCE.kspec beside the
 * kernel's source, or kernelsmith.kspec in its directory or a parent up to the
 * scan's root. Errors name the file, the line and the field:
 *     saxpy.cu:12: buffer 'x': unknown distribution 'gauss'
 *
 * Ownership: everything is allocated in the arena the caller passes. */
#ifndef KS_SPECS_H
#define KS_SPECS_H

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_scan.h"
#include "ks_spec.h"

/* 0: found and parsed; 1: the kernel has no spec (no error recorded);
 * -1: a spec exists but is malformed (ks_fail with file:line: field: ...). */
int ks_spec_find(ks_ctx *ctx, const ks_scan *scan, const ks_kernel *k, ks_arena *arena,
                 ks_spec *out);

/* Parses spec text (the lines after "kernelsmith:", comment markers already
 * removed or not) that starts at `line` of `file`. */
int ks_spec_parse(ks_ctx *ctx, const char *file, unsigned line, const char *text,
                  ks_arena *arena, ks_spec *out);

/* Whether `name` (a sidecar's "kernel NAME", or a user's) designates
 * kernel `k`: its qualified name, its plain name, or its signature (spacing
 * ignored; the qualification may be left out). */
bool ks_spec_names_kernel(const char *name, const ks_kernel *k);

/* Checks a spec against its kernel: every pointer parameter has a buffer,
 * every scalar a value, types known; fails naming the field. */
int ks_spec_check(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k);

/* Evaluates size set `size` of `spec` for kernel `k`: buffer lengths,
 * scalar values, distributions and the launch configuration (the spec's, or
 * the launch site's when `site` is given and its expressions evaluate over
 * the kernel's arguments and macros). Expects a spec that ks_spec_check
 * accepted: of the size sets it checks again only the one it evaluates, so
 * that resolving every set of a large spec stays linear. */
int ks_spec_resolve(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, const ks_launch *site,
                    size_t size, ks_arena *arena, ks_workload *out);

/* A launch site's configuration with no spec: grid, block and smem each
 * evaluated alone from the site's text (its macros and template arguments,
 * a dim3 local from its declaration before the site unless assigned again;
 * the kernel's parameters have no values). why[i] is NULL where part i
 * (grid, block, smem) evaluated into *out, else why it did not (that part
 * of *out is then meaningless). Returns how many did not. */
int ks_spec_site_launch_parts(ks_ctx *ctx, const ks_kernel *k, const ks_launch *site,
                              ks_arena *arena, ks_launch_cfg *out, const char *why[3]);

/* The template arguments a template kernel is run with under `spec`
 * ("float, 256": the spec's `instance`, defaults filled in, or the kernel's
 * one instantiation at its launch sites); NULL for a kernel that is not a
 * template, or with ks_fail when they cannot be told. */
const char *ks_spec_instance(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k,
                             ks_arena *arena);

/* Evaluates a variant's launch policy for one workload: names available are
 * the scalar parameters, each buffer's length as len_<param>, and the
 * original launch as grid_x, grid_y, grid_z, block_x, block_y, block_z,
 * smem. Also checks its `requires` guards: *guards_hold is false when one
 * does not hold (that size set then runs the original only). A guard may
 * use aligned(p, N) (or ks_aligned) for a pointer parameter p: the judge
 * allocates every buffer 256-byte aligned, so it holds exactly when N is a
 * power of two no larger than 256. */
int ks_variant_resolve(ks_ctx *ctx, const ks_variant *v, const ks_kernel *k,
                       const ks_workload *work, ks_launch_cfg *out, bool *guards_hold);

#endif
