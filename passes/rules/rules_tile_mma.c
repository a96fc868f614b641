/* rules_tile_mma: tile_mma, tile_matmul's matrix product (rules_tile_mm.h:
 * one thread per output (y, x), one loop `ACC += Y[f(y, k)] * X[g(k, x)]`,
 * the user's code around it) on the tensor cores, through WMMA
 * (nvcuda::wmma, <mma.h>).
 *
 * The rewrite: a block of W warps (block (32, W)) computes a BM x BN tile
 * of outputs, the warps laid out WM x WN over it, each owning FM x FN
 * accumulator fragments of 16 x 16 (float). Per k-tile of 16 the whole
 * block loads BM x 16 of Y and 16 x BN of X into padded shared tiles
 * (zero outside the bounds, so any M, N and K works; the threads run
 * along each operand's contiguous index), synchronizes, and every warp
 * multiplies its fragments (m16n16k16 for __half and __nv_bfloat16,
 * m16n16k8 twice for TF32). The user's code runs per output as in
 * tile_matmul: before the loop each warp, one fragment at a time, runs
 * the prologue replay for the fragment's 256 outputs (8 per lane) into a
 * 16 x 16 scratch tile of its own and loads that into the accumulator
 * (the start value: 0, C[idx] after C[idx] *= beta, ...); after it, it
 * stores the accumulator there and runs the epilogue replay for the same
 * outputs, reading each sum from the scratch.
 *
 * Floating point. __half and __nv_bfloat16 operands: the product of two
 * is exact in float (22 and 16 significant bits), so where the kernel
 * converts both to float before multiplying and sums in float, the
 * tensor cores compute the same terms and only the order of the sums
 * changes, with the tensor cores' own rounding of the partial sums (an
 * error of the size of a reordered float sum, which float's default
 * tolerance allows). A product in __half (cuda_fp16's operator*) is
 * rounded before the sum, a __half accumulator rounds every partial sum:
 * both are refused. float operands: the tensor cores take TF32, 10
 * explicit mantissa bits (each input rounded with a relative error up to
 * 2^-11, each product within about 2^-10 of the exact one): only where
 * every output's tolerance has an rtol of at least 1e-2, and without the
 * fp64 reference (against which TF32 is less accurate than the original).
 *
 * Guards, as tile_matmul's: the original launch covered the bounds along
 * both dimensions, the new grid_y <= 65535.
 *
 * param = BM * 10^5 + BN * 100 + W (6406404: a 64 x 64 tile, 4 warps). */
#include <string.h>

#include "ks_buf.h"
#include "rules_tile_mm.h"

/* The element type of the tensor-core inputs. */
typedef enum mma_kind { MMA_F16, MMA_BF16, MMA_TF32 } mma_kind;

typedef struct mma_shape {
  int bm, bn, warps; /* the block tile (y by x) and its warps */
  int wm, wn;        /* warps along y and along x */
  int fm, fn;        /* 16 x 16 fragments per warp along y and along x */
} mma_shape;

/* What the text needs of the inputs' kind. */
typedef struct mma_types {
  mma_kind kind;
  const char *elem;    /* the shared tiles' element type */
  const char *frag;    /* the fragments' element type */
  const char *zero;    /* a zero of elem */
  int kstep;           /* k of one mma: 16, or 8 for TF32 */
  int pad;             /* elements past each shared row: 16 bytes */
  int esize;           /* bytes of elem */
} mma_types;

/* The k-tile: 16 deep, one m16n16k16 or two m16n16k8 per fragment. The
 * warps' 16 x 16 float scratch tiles have rows of 16 + 4: ldm a multiple
 * of 4 floats, every tile 32-byte aligned (16 rows of 80 bytes). */
enum { MMA_BK = 16, MMA_SCRATCH_LD = 16 + 4 };

/* param = BM * 10^5 + BN * 100 + W. BM and BN 32, 64 or 128, W 4 or 8;
 * the warps are laid out WM x WN with warp tiles as square as they can
 * be (the fewer fragment loads per mma), multiples of 16. False when
 * param is none of these. */
static bool read_shape(int param, mma_shape *s) {
  memset(s, 0, sizeof *s);
  s->bm = param / 100000;
  s->bn = param / 100 % 1000;
  s->warps = param % 100;
  if ((s->bm != 32 && s->bm != 64 && s->bm != 128) || (s->bn != 32 && s->bn != 64 && s->bn != 128) ||
      (s->warps != 4 && s->warps != 8))
    return false;
  int best = -1;
  for (int wm = 1; wm <= s->warps; wm++) {
    int wn = s->warps / wm;
    if (s->warps % wm || s->bm % (16 * wm) || s->bn % (16 * wn))
      continue;
    int d = s->bm / wm - s->bn / wn;
    d = d < 0 ? -d : d;
    if (best < 0 || d < best) {
      best = d;
      s->wm = wm;
      s->wn = wn;
    }
  }
  if (best < 0)
    return false;
  s->fm = s->bm / (16 * s->wm);
  s->fn = s->bn / (16 * s->wn);
  return true;
}

/* ---- what the kernel computes ---------------------------------------------- */

/* A type as the compiler sees it, without const and volatile. */
static const char *canon(ks_arena *arena, const char *canon_type, const char *type) {
  const char *t = canon_type ? canon_type : type;
  return t ? ks_smem_unqualified(arena, t) : "";
}

static bool is_named(const char *t, const char *name) {
  return !strcmp(t, name) || (!strncmp(t, "struct ", 7) && !strcmp(t + 7, name));
}

/* n without parentheses and exact conversions to float: casts to float,
 * __half2float, __bfloat162float. */
static const ks_anode *unconverted(ks_arena *arena, const ks_anode *n) {
  for (;;) {
    n = ks_anode_strip(n, false);
    if (!n)
      return NULL;
    if (n->kind == KS_AK_CAST && n->nkids == 1 && !strcmp(canon(arena, n->canon_type, n->type), "float")) {
      n = n->kids[0];
    } else if (n->kind == KS_AK_CALL && n->nkids == 1 && n->name &&
               (!strcmp(n->name, "__half2float") || !strcmp(n->name, "__bfloat162float"))) {
      n = n->kids[0];
    } else {
      return n;
    }
  }
}

/* The loop adds the float product of its two operand reads, each at most
 * converted to float, and nothing else: NULL, or why not. */
static const char *product_problem(ks_arena *arena, const ks_rule_input *in, const ks_mm_plan *p,
                                   const char *elem) {
  /* ACC += P, or ACC = ACC + P (ks_mm_match has read both). */
  const ks_anode *u = p->upd;
  const ks_anode *P = p->acc2 ? ks_anode_strip(u->kids[1], false)->kids[1] : u->kids[1];
  const ks_anode *m = unconverted(arena, P);
  if (!m || !ks_rt_is_bin(m, "*") || m->nkids != 2)
    return "its loop adds something other than a product of its two operands";
  const ks_anode *a = unconverted(arena, m->kids[0]), *b = unconverted(arena, m->kids[1]);
  if (!((a == p->opy && b == p->opx) || (a == p->opx && b == p->opy)))
    return ks_arena_printf(arena,
                           "its loop adds '%s', not the product of its two operands alone (each "
                           "at most converted to float): tensor cores sum exact products",
                           ks_rt_text_of(arena, in, m));
  const char *t = canon(arena, m->canon_type, m->type);
  if (strcmp(t, "float"))
    return ks_arena_printf(arena,
                           "it multiplies its %s operands in %s ('%s' is rounded to %s before the "
                           "sum; tensor cores multiply exactly): convert them to float first",
                           elem, t, ks_rt_text_of(arena, in, m), t);
  return NULL;
}

/* TF32 is allowed: every output's rtol is at least 1e-2 and the spec does
 * not ask for the fp64 reference. NULL, or why not. The tolerances are
 * read from the timed workload, where the spec's are resolved as the judge
 * compares (the buffer's tol(...), else the spec's `tolerance` line, else
 * the type's default); they are the same for every size set. */
static const char *tf32_problem(ks_arena *arena, const ks_rule_input *in) {
  static const double need = 1e-2; /* 10 mantissa bits: 2^-11 per rounded input */
  if (in->no_sizes || !in->spec || !in->timed)
    return "its operands are float and it has no spec: TF32 needs an output tolerance of rtol "
           ">= 1e-2, and none was given";
  if (in->spec->fp64_reference)
    return "its operands are float and its spec asks for the fp64 reference, against which TF32 "
           "(10 mantissa bits) is less accurate than the original";
  for (size_t n = 0; n < in->timed->buffers.len; n++) {
    const ks_wbuffer *b = &in->timed->buffers.items[n];
    if (b->role != KS_ROLE_IN && b->rtol < need)
      return ks_arena_printf(arena,
                             "its operands are float and output '%s' has tolerance atol %g, rtol "
                             "%g: TF32 (10 mantissa bits, 2^-11 per rounded input) needs rtol >= "
                             "1e-2",
                             b->name, b->atol, b->rtol);
  }
  return NULL;
}

/* The operands' and the accumulator's types: the tensor-core inputs, or
 * why the kernel has none. */
static const char *read_types(ks_arena *arena, const ks_rule_input *in, const ks_mm_plan *p,
                              mma_types *t) {
  const char *ey = canon(arena, p->py->canon_pointee, p->py->pointee);
  const char *ex = canon(arena, p->px->canon_pointee, p->px->pointee);
  if (strcmp(ey, ex))
    return ks_arena_printf(arena, "its operands are of two types (%s and %s)", ey, ex);
  memset(t, 0, sizeof *t);
  if (is_named(ey, "__half")) {
    *t = (mma_types){MMA_F16, "__half", "__half", "__float2half(0.0f)", 16, 8, 2};
  } else if (is_named(ey, "__nv_bfloat16")) {
    *t = (mma_types){MMA_BF16, "__nv_bfloat16", "__nv_bfloat16", "__float2bfloat16(0.0f)", 16, 8, 2};
  } else if (!strcmp(ey, "float")) {
    *t = (mma_types){MMA_TF32, "float", "nvcuda::wmma::precision::tf32", "0.0f", 8, 4, 4};
  } else {
    return ks_arena_printf(arena,
                           "its operands are %s: the tensor cores here take __half, "
                           "__nv_bfloat16 or float (as TF32)",
                           *ey ? ey : "of an unknown type");
  }
  const char *acc;
  if (p->acc_var) {
    acc = canon(arena, p->acc_var->canon_type, p->acc_var->type);
  } else {
    const ks_anode *ref, *idx, *ap = ks_smem_param_access(p->acc, &ref, &idx);
    acc = ap ? canon(arena, ap->canon_pointee, ap->pointee) : "";
  }
  if (strcmp(acc, "float"))
    return ks_arena_printf(arena,
                           "it accumulates in %s: tile_mma keeps float accumulators, whose sums "
                           "differ from a %s sum by more than a reordering",
                           *acc ? acc : "an unknown type", *acc ? acc : "non-float");
  const char *why = product_problem(arena, in, p, ey);
  if (why)
    return why;
  return t->kind == MMA_TF32 ? tf32_problem(arena, in) : NULL;
}

/* ---- the text ---------------------------------------------------------------- */

/* One operand's k-tile into its shared tile, every thread of the block
 * taking tile / threads elements: element (a, kk) is the operand at
 * (outer = origin + a, k = ks_k0 + kk), zero outside the bounds; the
 * threads run along the operand's contiguous index. The tile is indexed
 * [a][kk] (Y, `outer_first`) or [kk][a] (X). */
static void load(ks_buf *b, const ks_smem_rewrite *w, const ks_mm_plan *p, const mma_types *t,
                 const char *I, const char *tile, const ks_anode *op, const ks_anode *outer,
                 const ks_smem_bound *ob, const char *origin, int extent, bool along_k,
                 bool outer_first, int threads) {
  ks_arena *arena = w->arena;
  const char *J = ks_arena_printf(arena, "%s%s", I, w->indent);
  const char *ot = ks_smem_unqualified(arena, outer->type ? outer->type : "int");
  const char *kt = ks_smem_unqualified(arena, p->k->type ? p->k->type : "int");
  /* ks_v runs along the contiguous index first. */
  const char *a = along_k ? ks_arena_printf(arena, "ks_v / %d", MMA_BK)
                          : ks_arena_printf(arena, "ks_v %% %d", extent);
  const char *kk = along_k ? ks_arena_printf(arena, "ks_v %% %d", MMA_BK)
                           : ks_arena_printf(arena, "ks_v / %d", extent);
  const char *value = ks_arena_printf(
      arena, "(%s %s %s && %s %s %s) ? %s : %s", outer->name, ob->inclusive ? "<=" : "<",
      ks_rt_paren(arena, ks_rt_text_of(arena, w->in, ob->bound)), p->k->name,
      p->kb.inclusive ? "<=" : "<", ks_rt_paren(arena, ks_rt_text_of(arena, w->in, p->kb.bound)),
      ks_rt_text_of(arena, w->in, op), t->zero);
  if (t->kind == MMA_TF32) /* rounded once here, not by every warp that loads it */
    value = ks_arena_printf(arena, "nvcuda::wmma::__float_to_tf32(%s)", value);
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_l = 0; ks_l < %d; ++ks_l) {\n", I, I,
              extent * MMA_BK / threads);
  ks_buf_addf(b, "%sconst int ks_v = ks_tid + ks_l * %d;\n", J, threads);
  ks_buf_addf(b, "%sconst %s %s = %s + %s;\n", J, ot, outer->name, origin, a);
  ks_buf_addf(b, "%sconst %s %s = ks_k0 + %s;\n", J, kt, p->k->name, kk);
  ks_buf_addf(b, "%s%s[%s][%s] = %s;\n", J, tile, outer_first ? a : kk, outer_first ? kk : a, value);
  ks_buf_addf(b, "%s}\n", I);
}

/* The loops over a warp's fragments (i along y, j along x), opened. */
static void open_fragments(ks_buf *b, const char *I, const mma_shape *s) {
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_i = 0; ks_i < %d; ++ks_i)\n", I, I, s->fm);
  ks_buf_addf(b, "%s#pragma unroll\n%sfor (int ks_j = 0; ks_j < %d; ++ks_j) {\n", I, I, s->fn);
}

/* The child's body: the tiles and the scratch, the prologue replays into
 * the accumulators, the k-loop, the epilogue replays from them. NULL when
 * a replay's edits do not apply. */
static const char *rewrite_body(ks_ctx *ctx, const ks_smem_rewrite *w, const ks_mm_plan *p,
                                const mma_shape *s, const mma_types *t) {
  ks_arena *arena = w->arena;
  const ks_rule_input *in = w->in;
  const char *I = w->indent, *I2 = ks_arena_printf(arena, "%s%s", I, I);
  const char *I3 = ks_arena_printf(arena, "%s%s", I2, I);
  int threads = 32 * s->warps, wtm = 16 * s->fm, wtn = 16 * s->fn;
  const char *W = "nvcuda::wmma::";
  /* The replays: output (ks_e / 16, ks_e % 16) of fragment (ks_i, ks_j)
   * of this warp's tile. */
  const char *ty_r = ks_arena_printf(arena, "(ks_wy * %d + ks_i * 16 + ks_e / 16)", wtm);
  const char *tx_c = ks_arena_printf(arena, "(ks_wx * %d + ks_j * 16 + ks_e %% 16)", wtn);
  const char *slot = "ks_sc[ks_warp][ks_e / 16][ks_e % 16]";
  const char *acc_text = ks_rt_text_of(arena, in, p->acc);
  const char *Ty = ks_arena_printf(arena, "%d", s->bm), *Tx = ks_arena_printf(arena, "%d", s->bn);
  const char *pro = ks_mm_replay(ctx, w, p, 0, Ty, Tx, ty_r, tx_c, acc_text, slot);
  const char *epi = ks_mm_replay(ctx, w, p, 1, Ty, Tx, ty_r, tx_c, acc_text, slot);
  if (!pro || !epi)
    return NULL;
  const char *kt = ks_smem_unqualified(arena, p->k->type ? p->k->type : "int");
  const char *kbound = ks_rt_paren(arena, ks_rt_text_of(arena, in, p->kb.bound));
  const char *kop = p->kb.inclusive ? "<=" : "<";
  const char *frag_a = ks_arena_printf(arena, "%sfragment<%smatrix_a, 16, 16, %d, %s, %srow_major>",
                                       W, W, t->kstep, t->frag, W);
  const char *frag_b = ks_arena_printf(arena, "%sfragment<%smatrix_b, 16, 16, %d, %s, %srow_major>",
                                       W, W, t->kstep, t->frag, W);
  const char *frag_c = ks_arena_printf(arena, "%sfragment<%saccumulator, 16, 16, %d, float>", W, W,
                                       t->kstep);

  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "\n%s/* tile_mma: %dx%d tiles, %d warps (%dx%d) of %dx%d 16x16 fragments, "
                  "k-tiles of %d; %s inputs, float accumulators (WMMA m16n16k%d). */\n",
              I, s->bm, s->bn, s->warps, s->wm, s->wn, s->fm, s->fn, MMA_BK,
              t->kind == MMA_TF32 ? "TF32" : t->elem, t->kstep);
  /* Rows padded by 16 bytes: every fragment's first element stays 32-byte
   * aligned (rows 16 apart, or 8 floats into a row) and ldm a multiple of
   * 16 bytes, as WMMA requires; the pad spreads the rows over the banks. */
  ks_buf_addf(&b, "%s__shared__ __align__(32) %s ks_sy[%d][%d + %d];\n", I, t->elem, s->bm, MMA_BK,
              t->pad);
  ks_buf_addf(&b, "%s__shared__ __align__(32) %s ks_sx[%d][%d + %d];\n", I, t->elem, MMA_BK, s->bn,
              t->pad);
  ks_buf_addf(&b, "%s__shared__ __align__(32) float ks_sc[%d][16][%d];\n", I, s->warps,
              MMA_SCRATCH_LD);
  ks_buf_addf(&b, "%sconst int ks_tid = threadIdx.y * 32 + threadIdx.x;\n", I);
  ks_buf_addf(&b, "%sconst int ks_warp = threadIdx.y, ks_lane = threadIdx.x;\n", I);
  ks_buf_addf(&b, "%sconst int ks_wy = ks_warp / %d, ks_wx = ks_warp %% %d;\n", I, s->wn, s->wn);
  ks_buf_addf(&b, "%s%s ks_c[%d][%d];\n", I, frag_c, s->fm, s->fn);

  /* The start values, a fragment at a time through the warp's scratch. */
  open_fragments(&b, I, s);
  ks_buf_addf(&b, "%sfor (int ks_q = 0; ks_q < 8; ++ks_q) {\n", I2);
  ks_buf_addf(&b, "%sconst int ks_e = ks_lane + ks_q * 32;\n", I3);
  ks_buf_addf(&b, "%s%s = 0.0f;\n", I3, slot);
  ks_buf_addf(&b, "%s%s\n%s}\n", I3, ks_rt_indent_more(arena, pro, I2), I2);
  ks_buf_addf(&b, "%s__syncwarp();\n", I2);
  ks_buf_addf(&b, "%s%sload_matrix_sync(ks_c[ks_i][ks_j], &ks_sc[ks_warp][0][0], %d, %smem_row_major);\n",
              I2, W, MMA_SCRATCH_LD, W);
  ks_buf_addf(&b, "%s__syncwarp();\n%s}\n", I2, I);

  /* The k-tiles: every thread, under the loop's own (uniform) bound. */
  ks_buf_addf(&b, "%sfor (%s ks_k0 = 0; ks_k0 %s %s; ks_k0 += %d) {\n", I, kt, kop, kbound, MMA_BK);
  load(&b, w, p, t, I2, "ks_sy", p->opy, p->y, &p->yb, ks_arena_printf(arena, "blockIdx.y * %d", s->bm),
       s->bm, p->y_along_k, true, threads);
  load(&b, w, p, t, I2, "ks_sx", p->opx, p->x, &p->xb, ks_arena_printf(arena, "blockIdx.x * %d", s->bn),
       s->bn, p->x_along_k, false, threads);
  ks_buf_addf(&b, "%s__syncthreads();\n", I2);
  const char *J = I2, *kk = "0";
  if (t->kstep < MMA_BK) {
    ks_buf_addf(&b, "%s#pragma unroll\n%sfor (int ks_kk = 0; ks_kk < %d; ks_kk += %d) {\n", I2, I2,
                MMA_BK, t->kstep);
    J = I3, kk = "ks_kk";
  }
  const char *J2 = ks_arena_printf(arena, "%s%s", J, I);
  ks_buf_addf(&b, "%s%s ks_a[%d];\n%s%s ks_b[%d];\n", J, frag_a, s->fm, J, frag_b, s->fn);
  ks_buf_addf(&b, "%s#pragma unroll\n%sfor (int ks_i = 0; ks_i < %d; ++ks_i)\n", J, J, s->fm);
  ks_buf_addf(&b, "%s%sload_matrix_sync(ks_a[ks_i], &ks_sy[ks_wy * %d + ks_i * 16][%s], %d + %d);\n",
              J2, W, wtm, kk, MMA_BK, t->pad);
  ks_buf_addf(&b, "%s#pragma unroll\n%sfor (int ks_j = 0; ks_j < %d; ++ks_j)\n", J, J, s->fn);
  ks_buf_addf(&b, "%s%sload_matrix_sync(ks_b[ks_j], &ks_sx[%s][ks_wx * %d + ks_j * 16], %d + %d);\n",
              J2, W, kk, wtn, s->bn, t->pad);
  open_fragments(&b, J, s);
  ks_buf_addf(&b, "%s%smma_sync(ks_c[ks_i][ks_j], ks_a[ks_i], ks_b[ks_j], ks_c[ks_i][ks_j]);\n%s}\n",
              J2, W, J);
  if (t->kstep < MMA_BK)
    ks_buf_addf(&b, "%s}\n", I2);
  ks_buf_addf(&b, "%s__syncthreads();\n%s}\n", I2, I);

  /* The sums, a fragment at a time, each output's epilogue by one lane. */
  open_fragments(&b, I, s);
  ks_buf_addf(&b, "%s%sstore_matrix_sync(&ks_sc[ks_warp][0][0], ks_c[ks_i][ks_j], %d, %smem_row_major);\n",
              I2, W, MMA_SCRATCH_LD, W);
  ks_buf_addf(&b, "%s__syncwarp();\n", I2);
  ks_buf_addf(&b, "%sfor (int ks_q = 0; ks_q < 8; ++ks_q) {\n", I2);
  ks_buf_addf(&b, "%sconst int ks_e = ks_lane + ks_q * 32;\n", I3);
  ks_buf_addf(&b, "%s%s\n%s}\n", I3, ks_rt_indent_more(arena, epi, I2), I2);
  ks_buf_addf(&b, "%s__syncwarp();\n%s}\n", I2, I);
  const char *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return text;
}

static int mma_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                     ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  mma_shape s;
  if (!read_shape(param, &s))
    return ks_smem_no(out, arena,
                      "parameter %d is not BM * 10^5 + BN * 100 + W (BM and BN 32, 64 or 128, W "
                      "4 or 8 warps, each warp's tile a multiple of 16 x 16)",
                      param);
  /* tile, regs and the rest are tile_matmul's; the text below is ours. */
  ks_mm_plan p = {.tile = s.bm, .regs = 1, .rows = s.bm, .xregs = 1, .cols = s.bn,
                  .conversions = true};
  ks_smem_rewrite w;
  ks_smem_facts f;
  const char *why = ks_mm_read(in, arena, &w, &f, &p);
  if (why)
    return ks_smem_no(out, arena, "%s", why);
  mma_types t;
  if ((why = read_types(arena, in, &p, &t)))
    return ks_smem_no(out, arena, "%s", why);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return ks_smem_no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  const char *cover_x, *cover_y;
  if ((why = ks_mm_cover(ctx, in, arena, &p, &pol, &cover_x, &cover_y)))
    return ks_smem_no(out, arena, "%s", why);
  unsigned long long smem = (unsigned long long)t.esize * (s.bm * (MMA_BK + t.pad) + MMA_BK * (s.bn + t.pad)) +
                            4ull * s.warps * 16 * MMA_SCRATCH_LD;
  if (smem > in->max_smem_per_block || smem > 48 * 1024) /* static __shared__ stops at 48 KB */
    return ks_smem_no(out, arena, "its %dx%d and %dx%d tiles and scratch (%llu bytes) do not fit in "
                                  "shared memory", s.bm, MMA_BK, MMA_BK, s.bn, smem);

  const char *text = rewrite_body(ctx, &w, &p, &s, &t);
  if (!text)
    return -1;
  /* WMMA's header, at the top of the variant (file scope: the variant
   * follows the slice); its include guard makes a second one harmless. */
  if (ks_mm_write_child(ctx, in, arena, w.vo, "#include <mma.h>\n", text, &pol, s.bm, s.bn, 32,
                        s.warps, cover_x, cover_y, out))
    return -1;
  out->technique = ks_arena_printf(arena, "tile_mma=%dx%dw%d%s", s.bm, s.bn, s.warps,
                                   t.kind == MMA_TF32 ? "tf32" : "");
  return 0;
}

/* 64 x 64 with 4 warps of 2 x 2 fragments first (the grid of a 1024-wide
 * product still fills 132 SMs twice); 128 x 128 and 128 x 64 with 8
 * warps (4 x 2 and 2 x 2 fragments: more reuse of each fragment load)
 * for large products; 64 x 128; 32 x 32 with 4 warps of one fragment for
 * small ones. */
static const int mma_choices[] = {6406404, 12812808, 12806408, 6412808, 3203204};

const ks_rule ks_rule_tile_mma = {
    "tile_mma",
    "one thread per output of a matrix product on the tensor cores (WMMA): __half or bfloat16 "
    "operands with float sums, or float as TF32 where the outputs' tolerance allows "
    "(param: BM * 10^5 + BN * 100 + warps)",
    false,
    mma_choices,
    sizeof mma_choices / sizeof *mma_choices,
    mma_apply,
};
