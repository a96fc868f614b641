/* Workloads from captured launches (ks_target.h, "Captured launches").
 *
 * A captured launch becomes a workload the judge runs as it runs any
 * other: one buffer per distinct allocation the pointers point into (so
 * that parameters sharing an allocation alias in the judge as they did in
 * the application), each filled from the snapshot taken before the launch
 * and checked against the one taken after; scalars by value; the launch
 * configuration as captured. Nothing is randomized: index buffers, offsets
 * and flags keep the values the application gave them.
 *
 * What the capture cannot say is how long a buffer is meant to be: an
 * allocation may be larger than what one launch uses, or hold several
 * arrays. len_<param> (guards, launch policies, the dispatch of a patched
 * build) is taken from the spec when there is one, else inferred from the
 * scalars: `n`, `n + 1` or `rows * cols` whose value fills the parameter's
 * part of its allocation exactly (or up to a rounded allocation's slack),
 * in every captured launch, and nothing else does as well. Where nothing fits, the length is unknown and a guard that
 * needs it fails, in the judge and in apply alike.
 *
 * What the snapshots hold is read too, as evidence for the rules: whether
 * a buffer holds only integers, and their range (ks_wbuffer.ints_*; a
 * float image of 0..255 lets lookup_table tabulate it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_footprint.h"
#include "ks_profile.h"
#include "ks_specs.h"
#include "ks_target.h"

/* The granule allocators round sizes to (caching allocators round to 512
 * bytes): the most slack a rounded allocation has after what was asked. */
enum { ALLOC_SLACK = 512 };

/* A parameter's type with the instance's template arguments substituted. */
typedef struct ptype {
  ks_dtype dtype;     /* scalars and pointees; KS_DT_NONE: not arithmetic */
  bool pointer, pointee_const;
} ptype;

static void param_types(ks_arena *a, const ks_kernel *k, const char *targs, ptype *out) {
  ks_strings vals = {0};
  if (targs)
    ks_ctext_split(a, targs, targs + strlen(targs), &vals);
  const char *names[64], *values[64];
  size_t nt = 0;
  for (size_t i = 0; i < k->tparams.len && i < vals.len && nt < 64; i++) {
    names[nt] = k->tparams.items[i].name;
    values[nt++] = vals.items[i];
  }
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    ptype *t = &out[i];
    t->pointer = p->kind == KS_PARAM_POINTER;
    t->pointee_const = p->pointee_const;
    const char *c = t->pointer ? p->pointee : p->type;
    if (c && nt)
      c = ks_ctext_substitute(a, c, names, values, nt);
    if (!c || !ks_dtype_from_param(c, t->pointer ? p->canon_pointee : p->canon_type, &t->dtype))
      t->dtype = KS_DT_NONE;
    /* `T *` substituted to `const float *` keeps its const in the text. */
    if (t->pointer && c && !strncmp(c, "const ", 6))
      t->pointee_const = true;
  }
}

static ks_value scalar_value(ks_dtype t, const unsigned char *bytes) {
  ks_value v = {.is_int = true};
  switch (t) {
  case KS_DT_I8: { signed char x; memcpy(&x, bytes, 1); v.i = x; break; }
  case KS_DT_U8: v.i = bytes[0]; break;
  case KS_DT_I16: { short x; memcpy(&x, bytes, 2); v.i = x; break; }
  case KS_DT_U16: { unsigned short x; memcpy(&x, bytes, 2); v.i = x; break; }
  case KS_DT_I32: { int x; memcpy(&x, bytes, 4); v.i = x; break; }
  case KS_DT_U32: { unsigned x; memcpy(&x, bytes, 4); v.i = x; break; }
  case KS_DT_I64: case KS_DT_U64: { long long x; memcpy(&x, bytes, 8); v.i = x; break; }
  case KS_DT_F32: { float x; memcpy(&x, bytes, 4); v = (ks_value){.f = x}; break; }
  case KS_DT_F64: { double x; memcpy(&x, bytes, 8); v = (ks_value){.f = x}; break; }
  default: v.i = 0; break; /* half types are passed as bytes */
  }
  return v;
}

static bool all_zero(const unsigned char *p, unsigned long long n) {
  for (unsigned long long i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

/* Why launch `l` cannot be a workload of `k`, or NULL. */
static const char *unusable(ks_arena *a, const ks_capture_launch *l, const ks_kernel *k,
                            const ptype *types) {
  if (l->error)
    return ks_arena_printf(a, "the launch itself failed (%s)", l->error);
  if (l->over_limit)
    return ks_arena_printf(a, "its allocations (%llu bytes) were over the capture limit "
                              "(profile --capture-limit BYTES raises it; for tensors carved out "
                              "of one large allocation, --capture-window BYTES copies only the "
                              "part the pointers reach)",
                           l->bytes_needed);
  if (l->params.len != k->params.len)
    return ks_arena_printf(a, "it has %zu parameters, the kernel in the sources %zu",
                           l->params.len, k->params.len);
  for (size_t i = 0; i < l->params.len; i++) {
    const ks_capture_param *p = &l->params.items[i];
    const char *name = k->params.items[i].name;
    if (p->kind == KS_CAPTURE_UNKNOWN || !p->value)
      return ks_arena_printf(a, "the value of '%s' was not readable", name);
    if (types[i].pointer && p->kind == KS_CAPTURE_POINTER && !p->before)
      return ks_arena_printf(a, "'%s' has no snapshot (%s)", name,
                             p->not_captured ? p->not_captured : "not captured");
    if (types[i].pointer && p->kind == KS_CAPTURE_SCALAR && !all_zero(p->value, p->size))
      return ks_arena_printf(a, "'%s' points at memory the driver does not know (freed, or "
                                "host memory that is not mapped)", name);
    if (!types[i].pointer && p->kind == KS_CAPTURE_POINTER && types[i].dtype != KS_DT_NONE)
      return ks_arena_printf(a, "'%s' is a scalar but was captured as a pointer", name);
  }
  return NULL;
}

/* ---- lengths ---------------------------------------------------------- */

/* A length expression over the integer scalars, and its value in each
 * launch. */
typedef struct cand {
  const char *text;
  int rank;          /* 0: one scalar, 1: plus one, 2: a product, 3: the code's extent */
  bool alive, exact;
} cand;

static bool int_scalar(const ks_warg *a) {
  return a->kind == KS_ARG_SCALAR && a->value.is_int && a->value.i > 0;
}

/* `text` over a captured launch's scalars, by parameter name; with a spec,
 * also each size variable a `scalar p = v` line names, as what p was
 * passed. -1 when it does not evaluate to a whole number >= 0. */
static long long eval_scalars(const ks_kernel *k, const ks_workload *w, const ks_spec *spec,
                              const char *text) {
  ks_value vals[128];
  const char *names[128];
  size_t n = 0;
  for (size_t i = 0; i < w->args.len && i < k->params.len && n < 128; i++) {
    if (w->args.items[i].kind != KS_ARG_SCALAR || !k->params.items[i].name[0])
      continue;
    names[n] = k->params.items[i].name;
    vals[n++] = w->args.items[i].value;
    for (size_t s = 0; spec && s < spec->scalars.len && n < 128; s++)
      if (!strcmp(spec->scalars.items[s].name, k->params.items[i].name) &&
          ks_ctext_is_ident_char(spec->scalars.items[s].value[0])) {
        names[n] = spec->scalars.items[s].value;
        vals[n++] = w->args.items[i].value;
      }
  }
  ks_expr_table table = {names, vals, n, NULL};
  ks_expr_env env = {ks_expr_table_lookup, &table};
  ks_ctx scratch;
  ks_ctx_init(&scratch, "capture");
  ks_value v;
  long long r = -1;
  if (!ks_expr_eval(&scratch, text, &env, &v) && v.is_int && v.i >= 0)
    r = v.i;
  ks_ctx_release(&scratch);
  return r;
}

static long long cand_value(const ks_kernel *k, const ks_workload *w, const char *text) {
  return eval_scalars(k, w, NULL, text);
}

/* The spec's length of `param` over a captured launch, or -1. */
static long long spec_length(const ks_spec *spec, const ks_kernel *k, const ks_workload *w,
                             const char *param) {
  for (size_t i = 0; i < spec->buffers.len; i++)
    if (!strcmp(spec->buffers.items[i].param, param))
      return spec->buffers.items[i].length
                 ? eval_scalars(k, w, spec, spec->buffers.items[i].length) : -1;
  return -1;
}

/* The inferred length expression of pointer parameter `pi` over the
 * workloads (one per captured launch), or NULL. */
static const char *infer_length(ks_arena *a, const ks_kernel *k, const ptype *types, size_t pi,
                                const char *extent, const ks_capture_launch *const *launches,
                                const ks_workload *works, size_t nw) {
  KS_ARRAY(cand) cs = {0};
  const ks_workload *w0 = &works[0];
  /* The extent the kernel's own code proves (ks_footprint.h), where it is
   * made of scalars and constants alone: `A[i * NY + j]` under macro sizes
   * gives 'NX * NY', which no product of scalars can. It must still fill
   * the allocation as the others must, so it is the buffer's length. */
  if (extent)
    *ks_array_push(a, &cs) = (cand){extent, 3, true, true};
  for (size_t i = 0; i < w0->args.len; i++) {
    if (!int_scalar(&w0->args.items[i]) || !k->params.items[i].name[0])
      continue;
    const char *s = k->params.items[i].name;
    *ks_array_push(a, &cs) = (cand){s, 0, true, true};
    *ks_array_push(a, &cs) = (cand){ks_arena_printf(a, "%s + 1", s), 1, true, true};
    for (size_t j = i + 1; j < w0->args.len; j++)
      if (int_scalar(&w0->args.items[j]) && k->params.items[j].name[0])
        *ks_array_push(a, &cs) =
            (cand){ks_arena_printf(a, "%s * %s", s, k->params.items[j].name), 2, true, true};
  }
  size_t es = types[pi].dtype != KS_DT_NONE ? ks_dtype_size(types[pi].dtype) : 1;
  for (size_t c = 0; c < cs.len; c++)
    for (size_t l = 0; l < nw && cs.items[c].alive; l++) {
      const ks_capture_param *p = &launches[l]->params.items[pi];
      if (p->kind != KS_CAPTURE_POINTER) {
        cs.items[c].alive = false;
        break;
      }
      long long v = cand_value(k, &works[l], cs.items[c].text);
      unsigned long long r = ks_capture_reach(p);
      /* Inexact only where the allocator visibly rounded (a size that is
       * a multiple of its granule): elsewhere slack is another array. */
      bool whole = !ks_capture_windowed(p);
      if (v <= 0 || (unsigned long long)v > r / es ||
          (r != (unsigned long long)v * es &&
           (r - (unsigned long long)v * es >= ALLOC_SLACK || p->alloc_size % ALLOC_SLACK ||
            !whole)))
        cs.items[c].alive = false;
      else if (r != (unsigned long long)v * es)
        cs.items[c].exact = false;
    }
  /* The best fit wins: exact before rounded, simpler before longer; two
   * equally good are a guess, and a wrong length is worse than none. */
  const cand *best = NULL;
  bool tie = false;
  for (size_t c = 0; c < cs.len; c++) {
    const cand *x = &cs.items[c];
    if (!x->alive)
      continue;
    if (!best || (x->exact && !best->exact) || (x->exact == best->exact && x->rank < best->rank)) {
      best = x;
      tie = false;
    } else if (x->exact == best->exact && x->rank == best->rank) {
      tie = true;
    }
  }
  return best && !tie ? best->text : NULL;
}

/* ---- one launch as a workload --------------------------------------------- */

static int launch_workload(ks_ctx *ctx, const ks_capture *cap, const ks_capture_launch *l,
                           const ks_kernel *k, const ptype *types, unsigned file, ks_arena *a,
                           ks_workload *w) {
  memset(w, 0, sizeof *w);
  /* The second capture file's launches are capture0-2, ... */
  w->size_name = file ? ks_arena_printf(a, "capture%llu-%u", l->launch, file + 1)
                      : ks_arena_printf(a, "capture%llu", l->launch);
  w->captured = true;
  for (int d = 0; d < 3; d++) {
    w->launch.grid[d] = l->grid[d];
    w->launch.block[d] = l->block[d];
  }
  w->launch.smem = l->smem;
  for (size_t i = 0; i < l->params.len; i++) {
    const ks_capture_param *p = &l->params.items[i];
    ks_warg *arg = ks_array_push(a, &w->args);
    if (!types[i].pointer || p->kind != KS_CAPTURE_POINTER) {
      if (!types[i].pointer && types[i].dtype != KS_DT_NONE &&
          p->size == ks_dtype_size(types[i].dtype) && types[i].dtype != KS_DT_F16 &&
          types[i].dtype != KS_DT_BF16) {
        arg->kind = KS_ARG_SCALAR;
        arg->dtype = types[i].dtype;
        arg->value = scalar_value(types[i].dtype, p->value);
      } else {
        arg->kind = KS_ARG_BYTES;
        arg->bytes = p->value;
        arg->size = (size_t)p->size;
        /* A pointer to no allocation (NULL) is one in the twin too. */
        arg->ref_same = types[i].pointer;
      }
      continue;
    }
    /* One buffer per allocation, shared by every parameter into it. */
    size_t b = 0;
    for (; b < i; b++)
      if (types[b].pointer && l->params.items[b].kind == KS_CAPTURE_POINTER &&
          l->params.items[b].base == p->base)
        break;
    if (b < i) {
      arg->kind = KS_ARG_BUFFER;
      arg->buffer = w->args.items[b].buffer;
      arg->offset = p->ptr_offset - p->span_lo;
      ks_wbuffer *wb = &w->buffers.items[arg->buffer];
      if (!types[i].pointee_const)
        wb->role = KS_ROLE_INOUT;
      /* Parameters of different element types, or not aligned to it:
       * compared as bytes, exactly. */
      if (types[i].dtype != wb->dtype || arg->offset % ks_dtype_size(wb->dtype)) {
        wb->dtype = KS_DT_U8;
        wb->count = p->span_hi - p->span_lo;
      }
      continue;
    }
    const ks_capture_blob *before = ks_capture_blob_find(cap, p->before);
    const ks_capture_blob *after = p->after ? ks_capture_blob_find(cap, p->after) : NULL;
    if (!before)
      return ks_fail(ctx, "%s: launch %llu of %s: blob %llu is not in the file", cap->path,
                     l->launch, l->kernel, p->before);
    w->windowed |= ks_capture_windowed(p);
    ks_wbuffer *wb = ks_array_push(a, &w->buffers);
    wb->name = k->params.items[i].name[0] ? k->params.items[i].name
                                          : ks_arena_printf(a, "arg%zu", i);
    unsigned long long at = p->ptr_offset - p->span_lo; /* in the snapshot */
    wb->dtype = types[i].dtype != KS_DT_NONE && !(at % ks_dtype_size(types[i].dtype))
                    ? types[i].dtype : KS_DT_U8;
    wb->count = before->size / ks_dtype_size(wb->dtype);
    wb->role = types[i].pointee_const ? KS_ROLE_IN : KS_ROLE_INOUT;
    wb->dist = KS_DIST_FILE;
    wb->atol = wb->rtol = -1;
    wb->file = cap->path;
    wb->file_offset = before->offset;
    if (after && after->size == before->size) {
      wb->expect_file = cap->path;
      wb->expect_offset = after->offset;
    }
    arg->kind = KS_ARG_BUFFER;
    arg->buffer = w->buffers.len - 1;
    arg->offset = at;
  }
  return 0;
}

/* ---- what a snapshot says of its values ----------------------------------- */

/* ks_wbuffer.ints_*: whether every element of the snapshot taken before
 * the launch is a finite integer, and their range. This is evidence for a
 * rewrite's choices only (lookup_table tabulates a float image that holds
 * 0..255), never for correctness: a variant that uses it stays exact for
 * any value, so a snapshot too large to read whole may be sampled. Up to
 * INTS_SAMPLE elements are read whole, a larger one in INTS_RUNS runs
 * spread evenly over it, INTS_SAMPLE elements in all. */
enum { INTS_SAMPLE = 1 << 20, INTS_RUNS = 1024 };

typedef struct ints_seen {
  bool ints;     /* every element seen is a finite integer */
  double lo, hi;
  unsigned long long seen;
} ints_seen;

/* The types whose values are looked at: not the halves, which no
 * rewrite keys a table by. */
static bool ints_readable(ks_dtype t) {
  return t != KS_DT_NONE && t != KS_DT_F16 && t != KS_DT_BF16;
}

/* The element at `p` of a readable type, as a double. */
static double element_value(ks_dtype t, const unsigned char *p) {
  switch (t) {
  case KS_DT_F32: { float x; memcpy(&x, p, 4); return x; }
  case KS_DT_F64: { double x; memcpy(&x, p, 8); return x; }
  case KS_DT_U64: { unsigned long long x; memcpy(&x, p, 8); return (double)x; }
  default: return (double)scalar_value(t, p).i;
  }
}

static void see_ints(ints_seen *s, ks_dtype t, const unsigned char *p, size_t n) {
  size_t es = ks_dtype_size(t);
  for (size_t i = 0; i < n && s->ints; i++) {
    double v = element_value(t, p + i * es);
    if (!isfinite(v) || v != floor(v)) {
      s->ints = false;
      break;
    }
    v += 0.0; /* -0.0 is the integer 0 */
    s->lo = s->seen && s->lo < v ? s->lo : v;
    s->hi = s->seen && s->hi > v ? s->hi : v;
    s->seen++;
  }
}

/* Evenly spread runs of a snapshot too large to read whole, through the
 * capture's open file as ks_capture_read_blob reads it (without its CRC,
 * which covers the whole blob: evidence needs none). A run that cannot be
 * read leaves nothing known. */
static void see_ints_sampled(ks_capture *cap, const ks_capture_blob *b, ks_dtype t,
                             ints_seen *s) {
  size_t es = ks_dtype_size(t);
  unsigned long long n = b->size / es, run = INTS_SAMPLE / INTS_RUNS;
  unsigned char *buf = malloc(run * es);
  if (!buf) {
    s->ints = false;
    return;
  }
  for (unsigned long long r = 0; r < INTS_RUNS && s->ints; r++) {
    unsigned long long from = (n - run) * r / (INTS_RUNS - 1);
    if (fseek(cap->file, (long)(b->offset + from * es), SEEK_SET) ||
        fread(buf, es, run, cap->file) != run)
      s->ints = false;
    else
      see_ints(s, t, buf, run);
  }
  free(buf);
}

/* Sets wb->ints_* from snapshot `id`: from `bytes` when the caller has
 * read it already (all of it is looked at), else read whole or sampled. */
static int snapshot_ints(ks_ctx *ctx, ks_capture *cap, unsigned long long id,
                         const unsigned char *bytes, size_t nbytes, ks_wbuffer *wb) {
  wb->ints_known = false;
  wb->ints_lo = wb->ints_hi = 0;
  const ks_capture_blob *b = ks_capture_blob_find(cap, id);
  size_t es = ks_dtype_size(wb->dtype);
  if (!b || !es || !ints_readable(wb->dtype))
    return 0;
  ints_seen s = {.ints = true};
  if (bytes) {
    see_ints(&s, wb->dtype, bytes, nbytes / es);
  } else if (b->size / es <= INTS_SAMPLE) {
    unsigned char *all = NULL;
    size_t len = 0;
    if (ks_capture_read_blob(ctx, cap, id, &all, &len))
      return -1;
    see_ints(&s, wb->dtype, all, len / es);
    free(all);
  } else {
    see_ints_sampled(cap, b, wb->dtype, &s);
  }
  wb->ints_known = s.ints && s.seen > 0;
  wb->ints_lo = wb->ints_known ? s.lo : 0;
  wb->ints_hi = wb->ints_known ? s.hi : 0;
  return 0;
}

/* ---- the bytes a captured launch must move --------------------------------- */

/* The elements of `size`-byte width that differ between two snapshots. */
static unsigned long long changed_elements(const unsigned char *x, const unsigned char *y,
                                           size_t bytes, size_t size) {
  unsigned long long n = 0;
  for (size_t at = 0; at + size <= bytes; at += size)
    n += memcmp(x + at, y + at, size) != 0;
  return n;
}

/* What the roofline and the physical floor need for a captured launch
 * (docs/judge.md, "Captured workloads"), at least what it must move; and,
 * from the same reads, what each buffer's values are before the launch
 * (snapshot_ints). At least what it must move: each
 * buffer the launch changed, the elements it changed (the snapshots before
 * and after say which); each buffer it left alone, read once over the
 * lengths its parameters are known to have (the spec's, or those inferred
 * from the scalars or from the extent the kernel's code proves). A buffer
 * whose length nothing says is not counted: the allocation may be far
 * larger than what the launch touches, and an overstated floor would call
 * honest variants SUSPICIOUS. */
static int capture_bytes_min(ks_ctx *ctx, ks_capture *cap, const ks_capture_launch *l,
                             const ptype *types, ks_workload *w) {
  unsigned long long total = 0;
  for (size_t b = 0; b < w->buffers.len; b++) {
    ks_wbuffer *wb = &w->buffers.items[b];
    size_t esize = ks_dtype_size(wb->dtype);
    unsigned long long bytes = wb->count * esize, changed = 0, read = 0;
    const ks_capture_param *first = NULL;
    for (size_t i = 0; i < w->args.len && i < l->params.len; i++) {
      const ks_warg *a = &w->args.items[i];
      if (a->kind != KS_ARG_BUFFER || a->buffer != b)
        continue;
      if (!first)
        first = &l->params.items[i];
      size_t psize = types[i].dtype != KS_DT_NONE ? ks_dtype_size(types[i].dtype) : esize;
      if (a->length_set)
        read += a->length * psize;
    }
    if (first && first->after) {
      unsigned char *before = NULL, *after = NULL;
      size_t nb = 0, na = 0;
      if (ks_capture_read_blob(ctx, cap, first->before, &before, &nb) ||
          ks_capture_read_blob(ctx, cap, first->after, &after, &na)) {
        free(before);
        return -1;
      }
      if (nb == na && esize)
        changed = changed_elements(before, after, nb, esize) * esize;
      int rc = snapshot_ints(ctx, cap, first->before, before, nb, wb);
      free(before);
      free(after);
      if (rc)
        return -1;
    } else if (first && snapshot_ints(ctx, cap, first->before, NULL, 0, wb)) {
      return -1;
    }
    total += changed ? changed : read < bytes ? read : bytes;
  }
  w->bytes_min = total;
  return 0;
}

/* Why the fp64 twin cannot run on captured workload `w`, or NULL. The
 * twin computes in double where the original had float (docs/judge.md,
 * "The fp64 reference"): an f32 buffer is widened element by element, and
 * pointers into it move with it; what holds floats the worker cannot see
 * has no widened form. */
static const char *ref_problem(ks_arena *a, const ks_kernel *k, const ptype *types,
                               const ks_workload *w) {
  for (size_t i = 0; i < w->args.len && i < k->params.len; i++) {
    const ks_warg *arg = &w->args.items[i];
    const ks_param *p = &k->params.items[i];
    const char *name = p->name[0] ? p->name : ks_arena_printf(a, "#%zu", i);
    if (arg->kind == KS_ARG_BYTES && !arg->ref_same)
      return ks_arena_printf(a, "'%s' (%s) is passed by value as raw bytes, which the twin may "
                                "lay out anew with doubles",
                             name, p->type ? p->type : "?");
    if (arg->kind != KS_ARG_BUFFER || arg->buffer >= w->buffers.len)
      continue;
    /* Bytes: an allocation that parameters of different types share, or
     * a pointee that is no arithmetic type (a struct, void, float4). */
    bool floats = types[i].dtype == KS_DT_F32 || types[i].dtype == KS_DT_NONE;
    if (w->buffers.items[arg->buffer].dtype == KS_DT_U8 && floats)
      return types[i].dtype == KS_DT_NONE
                 ? ks_arena_printf(a, "'%s' points at %s, which may hold floats the twin reads "
                                      "as doubles",
                                   name, p->pointee ? p->pointee : "an unknown type")
                 : ks_arena_printf(a, "'%s' shares its allocation with parameters of other "
                                      "types, so its floats cannot be widened alone",
                                   name);
  }
  return NULL;
}

/* ---- the kernel's captured launches ------------------------------------- */

static bool same_ignoring_spaces(const char *x, const char *y) {
  for (;; x++, y++) {
    while (*x == ' ')
      x++;
    while (*y == ' ')
      y++;
    if (*x != *y)
      return false;
    if (!*x)
      return true;
  }
}

size_t ks_capture_launches_of(ks_arena *a, const ks_capture *cap, const ks_scan *scan,
                              const ks_kernel *k, const char *instance, size_t **out,
                              const char **targs) {
  size_t n = 0;
  *out = ks_arena_alloc(a, (cap->launches.len + 1) * sizeof **out);
  if (targs)
    *targs = NULL;
  const char *want = instance ? ks_ctext_trim(a, instance, instance + strlen(instance)) : NULL;
  long self = (long)(k - scan->kernels.items);
  for (size_t i = 0; i < cap->launches.len; i++) {
    const char *t = NULL;
    if (ks_profile_match(a, cap->launches.items[i].kernel, NULL, &scan->kernels, &t) != self)
      continue;
    /* One instance per target: the spec's, or the first one captured. */
    if (!want && t)
      want = t;
    if (t && want && !same_ignoring_spaces(t, want))
      continue;
    (*out)[n++] = i;
  }
  if (targs)
    *targs = want;
  return n;
}

/* A template kernel captured with several instances is searched for one
 * (the spec's, or the first captured): the others' launches are said, each
 * instance once, with how to choose it, so that none is dropped silently. */
static void warn_other_instances(ks_ctx *ctx, ks_arena *a, const ks_capture *cap,
                                 const ks_scan *scan, const ks_kernel *k, const char *chosen) {
  if (!chosen)
    return;
  long self = (long)(k - scan->kernels.items);
  ks_strings said = {0};
  for (size_t i = 0; i < cap->launches.len; i++) {
    const char *t = NULL;
    if (ks_profile_match(a, cap->launches.items[i].kernel, NULL, &scan->kernels, &t) != self ||
        !t || same_ignoring_spaces(t, chosen))
      continue;
    bool dup = false;
    for (size_t s = 0; s < said.len && !dup; s++)
      dup = same_ignoring_spaces(said.items[s], t);
    if (dup)
      continue;
    *ks_array_push(a, &said) = t;
    size_t count = 0;
    for (size_t j = 0; j < cap->launches.len; j++) {
      const char *u = NULL;
      count += ks_profile_match(a, cap->launches.items[j].kernel, NULL, &scan->kernels, &u) ==
                   self && u && same_ignoring_spaces(u, t);
    }
    ks_warn(ctx, "%s: %zu captured launch%s of %s<%s> left out: one instance of a template "
                 "kernel is searched per run, here <%s>; a spec with the line 'instance %s' "
                 "(docs/spec.md) searches that one",
            cap->path, count, count == 1 ? "" : "es", k->qualified_name, t, chosen, t);
  }
}

int ks_target_add_captures(ks_ctx *ctx, ks_target *t, ks_capture *cap, const char *instance,
                           ks_arena *a) {
  const ks_kernel *k = t->kernel;
  size_t *idx;
  const char *targs;
  size_t n = ks_capture_launches_of(a, cap, &t->scan, k, instance, &idx, &targs);
  warn_other_instances(ctx, a, cap, &t->scan, k, targs);
  ptype *types = ks_arena_alloc(a, (k->params.len + 1) * sizeof *types);
  param_types(a, k, targs, types);
  const ks_capture_launch **ls = ks_arena_alloc(a, (n + 1) * sizeof *ls);
  ks_workload *works = ks_arena_alloc(a, (n + 1) * sizeof *works);
  size_t nw = 0;
  for (size_t i = 0; i < n; i++) {
    const ks_capture_launch *l = &cap->launches.items[idx[i]];
    const char *why = unusable(a, l, k, types);
    if (why) {
      ks_warn(ctx, "%s: captured launch %llu of %s left out: %s", cap->path, l->launch,
              k->qualified_name, why);
      continue;
    }
    if (launch_workload(ctx, cap, l, k, types, t->ncapture_files, a, &works[nw]))
      return -1;
    works[nw].no_ref = ref_problem(a, k, types, &works[nw]);
    ls[nw++] = l;
  }
  /* A later capture file adds launches to the first one's: the spec made
   * from the first (what apply makes again) gives their lengths. */
  bool made = !t->have_spec && t->ncapture_files > 0;
  if (!t->capture_path) {
    t->capture_path = cap->path;
    t->capture_instance = targs;
  }
  t->ncapture_files++;
  if (!nw)
    return 0;

  /* len_<param>: the spec's where it says, else inferred; the slice's
   * footprints (read once, only where a length is wanted) add the extent
   * the code proves as one more candidate. */
  ks_footprints fps = {0};
  bool have_fps = false;
  for (size_t pi = 0; pi < k->params.len; pi++) {
    if (!types[pi].pointer)
      continue;
    const char *inferred = NULL;
    bool tried = made;
    for (size_t w = 0; w < nw; w++) {
      ks_warg *arg = &works[w].args.items[pi];
      if (arg->kind != KS_ARG_BUFFER)
        continue;
      long long len = t->have_spec || made
                          ? spec_length(&t->spec, k, &works[w], k->params.items[pi].name)
                          : -1;
      if (len < 0 && !tried) {
        if (!have_fps && t->slice.source)
          fps = ks_footprints_or_none(ctx->prog, "slice.cu", t->slice.source, k->qualified_name, a);
        have_fps = true;
        const char *extent = pi < fps.len ? fps.items[pi].extent : NULL;
        inferred = infer_length(a, k, types, pi, extent, ls, works, nw);
        tried = true;
      }
      if (len < 0 && inferred)
        len = cand_value(k, &works[w], inferred);
      arg->length_set = len >= 0;
      arg->length_unknown = len < 0;
      arg->length = len >= 0 ? (unsigned long long)len : 0;
    }
    if (!t->have_spec && !made) {
      ks_spec_buffer *sb = ks_array_push(a, &t->spec.buffers);
      sb->param = k->params.items[pi].name;
      sb->dtype = types[pi].dtype;
      sb->length = inferred;
      sb->role = types[pi].pointee_const ? KS_ROLE_IN : KS_ROLE_INOUT;
      sb->atol = sb->rtol = -1;
    }
  }

  for (size_t w = 0; w < nw; w++)
    if (capture_bytes_min(ctx, cap, ls[w], types, &works[w]))
      return -1;

  /* The workloads go after the spec's; without a spec, the timed one is
   * the launch that moves the most bytes. */
  size_t old = t->nworkloads;
  ks_workload *all = ks_arena_alloc(a, (old + nw) * sizeof *all);
  if (old)
    memcpy(all, t->workloads, old * sizeof *all);
  memcpy(all + old, works, nw * sizeof *works);
  if (!old) {
    size_t best = 0;
    for (size_t w = 1; w < nw; w++)
      if (ls[w]->bytes_needed > ls[best]->bytes_needed)
        best = w;
    all[best].timed = true;
  }
  t->workloads = all;
  t->nworkloads = old + nw;
  t->ncaptured += nw;
  t->subject.workloads = all;
  t->subject.nworkloads = t->nworkloads;
  return 0;
}

int ks_capture_spec(ks_ctx *ctx, ks_capture *cap, const ks_scan *scan, const ks_kernel *k,
                    ks_arena *a, ks_spec *out) {
  ks_target t;
  memset(&t, 0, sizeof t);
  t.scan = *scan;
  t.kernel = k;
  t.spec.kernel = k->qualified_name;
  t.spec.file = cap->path;
  t.spec.atol = t.spec.rtol = -1;
  t.spec.seeds = 1;
  if (ks_target_add_captures(ctx, &t, cap, NULL, a))
    return -1;
  if (!t.ncaptured)
    return ks_fail(ctx, "%s holds no usable launch of %s", cap->path, k->qualified_name);
  t.spec.instance = t.capture_instance;
  *out = t.spec;
  return 0;
}

const char *ks_capture_window_hint(const ks_workload *w) {
  return w->windowed ? " (a capture window kept only part of an allocation, and the kernel may "
                       "reach beyond it: capture again with a larger --capture-window)"
                     : "";
}

void ks_capture_warn_unmatched(ks_ctx *ctx, const ks_capture *cap, const ks_scan *scan,
                               ks_arena *a) {
  ks_strings said = {0};
  for (size_t i = 0; i < cap->launches.len; i++) {
    const char *name = cap->launches.items[i].kernel;
    bool seen = false;
    for (size_t m = 0; m < said.len && !seen; m++)
      seen = !strcmp(said.items[m], name);
    if (seen || ks_profile_match(a, name, NULL, &scan->kernels, NULL) >= 0)
      continue;
    *ks_array_push(a, &said) = name;
    const char *d = ks_profile_demangle(a, name);
    ks_warn(ctx, "%s: %s was captured but is not under the paths scanned; its launches are not "
                 "used", cap->path, d ? d : name);
  }
}
