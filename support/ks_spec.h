/* ks_spec: how to build a kernel's inputs, and what a variant is.
 *
 * A spec comes from an annotation in the source next to the kernel or its
 * launch site, or from a sidecar file (syntax: docs/spec.md). It is text-level:
 * lengths, values and launch dimensions are expressions (ks_expr.h) over the
 * size variables of a size set and the kernel's scalar parameters. Resolving a
 * spec for one size set gives a ks_workload: plain numbers a GPU worker can
 * act on without any of the source.
 *
 * Ownership: strings and arrays belong to the arena the parser or resolver
 * was given. */
#ifndef KS_SPEC_H
#define KS_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_expr.h"
#include "ks_model.h"

typedef enum ks_dtype {
  KS_DT_NONE, /* not given: take the kernel parameter's pointee type */
  KS_DT_F16,
  KS_DT_BF16,
  KS_DT_F32,
  KS_DT_F64,
  KS_DT_I8,
  KS_DT_U8,
  KS_DT_I16,
  KS_DT_U16,
  KS_DT_I32,
  KS_DT_U32,
  KS_DT_I64,
  KS_DT_U64,
} ks_dtype;

size_t ks_dtype_size(ks_dtype t);
const char *ks_dtype_name(ks_dtype t); /* "f32", "i32", ... */
bool ks_dtype_is_float(ks_dtype t);
/* From a C/CUDA type as clang spells it ("float", "const unsigned int",
 * "__half", "int64_t", "size_t"); false for anything else (structs, T). */
bool ks_dtype_from_c(const char *c_type, ks_dtype *out);
/* The element type of a parameter: of `spelled` (its type, or its pointee's,
 * template arguments substituted), else of `canon`, the canonical type a
 * typedef hides (ks_param's canon_type / canon_pointee; may be NULL). */
bool ks_dtype_from_param(const char *spelled, const char *canon, ks_dtype *out);
/* From a spec's short name ("f32", "float", "i64", "bf16"). */
bool ks_dtype_parse(const char *name, ks_dtype *out);
/* The default tolerance of outputs of this type (0, 0 for integers: exact):
 * wide enough for another order of floating-point operations at the type's
 * precision, narrow enough to catch a lower precision. The one place these
 * numbers live. */
void ks_dtype_tolerance(ks_dtype t, double *atol, double *rtol);

typedef enum ks_dist_kind {
  KS_DIST_UNIFORM,     /* uniform(lo, hi), floats or integers */
  KS_DIST_NORMAL,      /* normal(mean, std) */
  KS_DIST_INT,         /* int(lo, hi): integers in [lo, hi] */
  KS_DIST_IOTA,        /* iota or iota(start): start, start+1, ... */
  KS_DIST_PERMUTATION, /* a random permutation of 0..length-1 (index arrays) */
  KS_DIST_CONSTANT,    /* const(value) */
  KS_DIST_SORTED_INT,  /* sorted_int(lo, hi): non-decreasing integers in
                          [lo, hi], first lo, last hi (CSR row offsets) */
  KS_DIST_FILE,        /* the bytes of a file at an offset: a capture's
                          snapshot (never written in a spec) */
} ks_dist_kind;

typedef struct ks_dist {
  ks_dist_kind kind;
  const char *a; /* lo, mean, start or value (expression), or NULL */
  const char *b; /* hi or std (expression), or NULL */
} ks_dist;

typedef enum ks_role { KS_ROLE_IN, KS_ROLE_OUT, KS_ROLE_INOUT } ks_role;

typedef struct ks_spec_buffer {
  const char *param;  /* the kernel parameter it is passed as */
  ks_dtype dtype;     /* KS_DT_NONE: the parameter's pointee type */
  const char *length; /* number of elements (expression) */
  ks_role role;
  ks_dist dist;       /* how inputs are filled (in and inout) */
  double atol, rtol;  /* tolerance override for this output; < 0: default */
  unsigned line;      /* where it is declared */
} ks_spec_buffer;
typedef KS_ARRAY(ks_spec_buffer) ks_spec_buffers;

typedef struct ks_binding {
  const char *name;
  const char *value; /* expression */
  unsigned line;
} ks_binding;
typedef KS_ARRAY(ks_binding) ks_bindings;

typedef struct ks_size_set {
  const char *name;  /* "timed", "small", "odd", ... */
  bool timed;        /* the size that is timed (exactly one per spec) */
  ks_bindings vars;  /* size variables: n = 1 << 26 */
  unsigned line;
} ks_size_set;
typedef KS_ARRAY(ks_size_set) ks_size_sets;

typedef struct ks_spec {
  const char *kernel;     /* the kernel's name as the spec names it */
  const char *file;       /* where the spec is written */
  unsigned line;          /* its first line */
  ks_size_sets sizes;
  ks_bindings scalars;    /* kernel scalar parameter = expression; a scalar
                             parameter not listed takes the size variable of
                             the same name */
  ks_spec_buffers buffers;
  const char *grid;       /* launch configuration (expressions); NULL: from */
  const char *block;      /* the launch site, when it can be evaluated */
  const char *smem;
  const char *instance;   /* template arguments for a template kernel,
                             "float, 256"; NULL: those of its launch sites */
  double atol, rtol;      /* overrides for every output; < 0: by type */
  bool fp64_reference;    /* compare against the kernel run in double */
  bool native_reference;  /* `reference native`: against the original alone,
                             captured inputs included (they get the fp64
                             reference by default, docs/judge.md) */
  unsigned seeds;         /* random input sets per size set; 0: default (3) */
  const char *flops;      /* floating-point operations per launch (expression),
                             for the FLOP-rate report; NULL: unknown */
} ks_spec;

/* One size set of a spec, evaluated: what the worker needs. */
typedef struct ks_wbuffer {
  const char *name;   /* parameter name, for reports */
  ks_dtype dtype;
  unsigned long long count; /* elements */
  ks_role role;
  ks_dist_kind dist;
  double a, b;        /* distribution parameters, evaluated */
  double atol, rtol;  /* tolerance for outputs */
  /* KS_DIST_FILE: count * size bytes at file_offset of `file` (a capture
   * file; the worker reads it itself, since snapshots can be gigabytes). */
  const char *file;
  unsigned long long file_offset;
  /* What the capture recorded in this buffer after the launch, same size,
   * for the replay check (the original must reproduce it); NULL: none. */
  const char *expect_file;
  unsigned long long expect_offset;
  /* What is known of an input's values (in and inout): ints_known says
   * every element is an integer in [ints_lo, ints_hi], exactly as the
   * element type holds it (a float 3.0f, not 3.25f; -0.0 counts as 0).
   * From a spec, the distributions that fill integers (int, uniform over
   * an integer type, iota, permutation, sorted_int, an integral const)
   * where the element type holds each value exactly; from a capture, the
   * snapshot taken before the launch where every element is a finite
   * integer (a huge snapshot is sampled, so this is likely, not proven).
   * Evidence for a rewrite's choices only (lookup_table keys a table by a
   * float pixel that holds 0..255): a variant that relies on it must stay
   * correct for any value. false: nothing known.
   * The main process's alone: not on the wire. */
  bool ints_known;
  double ints_lo, ints_hi;
} ks_wbuffer;
typedef KS_ARRAY(ks_wbuffer) ks_wbuffers;

typedef enum ks_arg_kind {
  KS_ARG_BUFFER,
  KS_ARG_SCALAR,
  KS_ARG_BYTES,  /* a parameter passed by value as raw bytes (a struct, or
                    a pointer that points at no allocation, such as NULL) */
} ks_arg_kind;

typedef struct ks_warg {
  ks_arg_kind kind;
  size_t buffer;   /* index into the workload's buffers */
  ks_dtype dtype;  /* scalar's type */
  ks_value value;  /* scalar's value */
  /* buffers: where in the buffer the kernel's pointer points, in bytes
   * (several parameters pointing into one captured allocation) */
  unsigned long long offset;
  /* buffers: the elements len_<param> means in guards and policies.
   * Unset (length_set false): the buffer's count. A capture sets it from
   * what the launch's scalars say, or marks it unknown. */
  unsigned long long length;
  bool length_set, length_unknown;
  /* KS_ARG_BYTES: the bytes as passed */
  const unsigned char *bytes;
  size_t size;
  /* KS_ARG_BYTES: the fp64 twin takes the same bytes (a null pointer), so
   * the reference can run; otherwise raw bytes have no widened form */
  bool ref_same;
} ks_warg;
typedef KS_ARRAY(ks_warg) ks_wargs;

typedef struct ks_launch_cfg {
  unsigned grid[3];
  unsigned block[3];
  unsigned long long smem;
} ks_launch_cfg;

typedef struct ks_workload {
  const char *size_name;
  bool timed;
  ks_wbuffers buffers;
  ks_wargs args;        /* one per kernel parameter, in order */
  ks_launch_cfg launch; /* the original kernel's */
  unsigned long long bytes_min; /* bytes the kernel must move at least: each
                                   input read once, each output written once */
  double flops;         /* from the spec, or 0 */
  bool captured;        /* the inputs are a capture's: the same for every
                           seed (one seed verifies them) */
  bool windowed;        /* some buffer is only the span of its allocation
                           that a capture window kept */
  const char *no_ref;   /* captured: why the fp64 twin cannot run on this
                           workload (a struct by value, floats in a buffer
                           of mixed types); NULL: it can. The main
                           process's alone: not on the wire */
} ks_workload;

/* What len_<param> of buffer argument `a` is in `w`; false when unknown
 * (a captured launch whose scalars do not say). */
bool ks_warg_length(const ks_workload *w, const ks_warg *a, unsigned long long *out);

/* A variant of a kernel: device code with the same parameter list. */
typedef struct ks_variant {
  const char *source;      /* the variant kernel and the device code it adds */
  const char *kernel_name; /* its __global__ function */
  const char *grid;        /* launch policy (expressions over the original */
  const char *block;       /* launch's grid_x.., block_x.., smem, the scalar */
  const char *smem;        /* parameters and buffer lengths); NULL: same */
  ks_strings requires;     /* guards; the variant runs only where all hold */
  const char *file;        /* where it came from, for messages */
} ks_variant;

#endif
