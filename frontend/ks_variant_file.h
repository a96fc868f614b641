/* ks_variant_file: reading a variant a user (or a proposer) wrote.
 *
 * A variant file is device code: the variant kernel, with the same parameter
 * list as the original, and any device functions it adds. An annotation
 * comment anywhere in it gives its launch policy and guards:
 *
 *     / * kernelsmith-variant:
 *      *   kernel saxpy_vec4              (when the file has several kernels)
 *      *   launch grid = ceil_div(n, 4 * 256), block = 256
 *      *   requires n % 4 == 0
 *      *   requires aligned(x, 16)
 *      * /
 *
 * Launch expressions may use the scalar parameters, len_<param> for buffer
 * lengths and the original launch (grid_x ... block_z, smem); see
 * docs/spec.md. A variant kernel named like the original is renamed
 * <name>_ks_variant so both can live in one unit.
 *
 * Ownership: strings live in the arena the caller passes. */
#ifndef KS_VARIANT_FILE_H
#define KS_VARIANT_FILE_H

#include <stdbool.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_spec.h"

/* Parses variant text read from `file`. `original` is the original kernel's
 * unqualified name. Fails naming the file and line. */
int ks_variant_parse(ks_ctx *ctx, const char *file, const char *text, const char *original,
                     ks_arena *arena, ks_variant *out, bool *is_template);
/* Reads and parses a variant file. */
int ks_variant_load(ks_ctx *ctx, const char *path, const char *original, ks_arena *arena,
                    ks_variant *out, bool *is_template);
/* The variant as a file that ks_variant_parse (and `check --variant`) reads
 * back: a comment line naming `technique_comment` (NULL or "": none), the
 * kernelsmith-variant annotation (kernel, launch, requires) and the source.
 * An annotation or technique line already in the source (a variant read
 * from a file) is dropped, so formatting a parsed file does not stack them. */
const char *ks_variant_format(ks_arena *arena, const ks_variant *v, const char *technique_comment);
/* The techniques line ks_variant_format wrote into a variant's source
 * (after the prefix, trimmed), or NULL when it has none. */
const char *ks_variant_techniques(ks_arena *arena, const ks_variant *v);
/* The NVRTC name expression of the variant: its name, with the original
 * instance's template arguments when it is a template. */
const char *ks_variant_name_expression(ks_arena *arena, const ks_variant *v, bool is_template,
                                       const char *original_name_expression);

#endif
