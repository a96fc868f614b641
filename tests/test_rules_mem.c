/* The memory and loop rules (passes/rules/rules_vectorize.c, rules_restrict.c,
 * rules_coarsen.c, rules_loop.c):
 * vectorize, restrict, coarsen, unroll and fast_math on the kernels of
 * testdata/apps. Each test asserts whether a rule applies (and why not),
 * the key text of the rewrite, its launch policy and guards on every size
 * set, and compositions with other rules; every child is compiled by NVRTC
 * after the slice, as the judge compiles it. The disjoint() guard of
 * frontend/spec_resolve.c, and the accuracy of fast_math's tanhf on the CPU
 * with __expf's and __fdividef's worst errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_target.h"
#include "ks_test.h"
#include "rules_harness.h"
#include "rules_tree.h"

static rh_tree apps, mine;
static char tmpdir[] = "/tmp/ks_rules_mem_XXXXXX";

/* Kernels the apps do not have. Rodinia's nn: a read-only buffer reached
 * through a local pointer declared without const (`LatLong *latLong =
 * d_locations + globalId;`), which a const parameter would not initialize. */
static const char kernels[] =
    "typedef struct latLong { float lat; float lng; } LatLong;\n"
    "/* kernelsmith:\n"
    " *   size timed: numRecords = 100000\n"
    " *   size odd:   numRecords = 37\n"
    " *   in  d_locations: f32[numRecords * 2] uniform(-90, 90)\n"
    " *   out d_distances[numRecords]\n"
    " *   scalar lat = 30.0\n"
    " *   scalar lng = 90.0\n"
    " *   launch grid = ceil_div(numRecords, 256), block = 256\n"
    " */\n"
    "__global__ void euclid(LatLong *d_locations, float *d_distances, int numRecords, float lat, float lng)\n"
    "{\n"
    "\tint globalId = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    LatLong *latLong = d_locations+globalId;\n"
    "    if (globalId < numRecords) {\n"
    "        float *dist=d_distances+globalId;\n"
    "        *dist = (float)sqrt((lat-latLong->lat)*(lat-latLong->lat)+(lng-latLong->lng)*(lng-latLong->lng));\n"
    "\t}\n"
    "}\n";

static int setup(void **state) {
  (void)state;
  if (rh_setup("test_rules_mem") || rh_open_tree(&apps, ks_testdata("apps")) || !mkdtemp(tmpdir))
    return -1;
  const char *file = ks_arena_printf(&rh_arena, "%s/nn.cu", tmpdir);
  FILE *f = fopen(file, "w");
  if (!f || fputs(kernels, f) < 0 || fclose(f))
    return -1;
  return rh_open_tree(&mine, ks_arena_strdup(&rh_arena, tmpdir)) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  rh_close_tree(&apps);
  rh_close_tree(&mine);
  unlink(ks_arena_printf(&rh_arena, "%s/nn.cu", tmpdir));
  rmdir(tmpdir);
  rh_teardown();
  return 0;
}

/* ---- vectorize ---------------------------------------------------------- */

static void vectorize_saxpy(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  ks_variant v = rh_applied(s, &s->in, "vectorize", 16, NULL);
  rh_has(&v, "long long ks_base = (long long)(blockIdx.x * blockDim.x + threadIdx.x) * 4;");
  rh_has(&v, "if (ks_base < n && n - ks_base >= 4) {");
  rh_has(&v, "float4 ks_x = *reinterpret_cast<const float4 *>(x + ks_base);");
  rh_has(&v, "float4 ks_y = *reinterpret_cast<const float4 *>(y + ks_base);");
  rh_has(&v, "ks_y.w = a * ks_x.w + ks_y.w;");
  rh_has(&v, "*reinterpret_cast<float4 *>(y + ks_base) = ks_y;");
  rh_has(&v, "for (int i = ks_base; i < n; ++i) y[i] = a * x[i] + y[i];");
  assert_non_null(strstr(v.grid, "ceil_div(grid_x, 4)"));
  rh_guard(&v, "grid_x * block_x >= n");
  rh_guard(&v, "aligned(x, 16)");
  rh_guard(&v, "aligned(y, 16)");
  /* only 16-byte vectors */
  rh_not_applied(&s->in, "vectorize", 8, "only 16");
  rh_compile_queued();
}

static void vectorize_gelu_and_histogram(void **state) {
  (void)state;
  rh_subject *g = rh_open_kernel(&apps, "gelu_forward_kernel");
  ks_variant v = rh_applied(g, &g->in, "vectorize", 16, NULL);
  /* out is written at the top of the element's work: not loaded */
  rh_has(&v, "float4 ks_out;\n");
  rh_has(&v, "float x = ks_inp.w;");
  rh_has(&v, "ks_out.z = 0.5f * x");
  assert_int_equal(rh_count(v.source, "float cube"), 5); /* four lanes and the tail */

  rh_subject *h = rh_open_kernel(&apps, "histogram_kernel");
  v = rh_applied(h, &h->in, "vectorize", 16, NULL);
  rh_has(&v, "size_t ks_base = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 16;");
  rh_has(&v, "uint4 ks_data = *reinterpret_cast<const uint4 *>(data + ks_base);");
  rh_has(&v, "#pragma unroll");
  rh_has(&v, "atomicAdd(&bins[reinterpret_cast<unsigned char *>(&ks_data)[ks_j]], 1u);");
  rh_has(&v, "for (size_t i = ks_base; i < n; ++i) atomicAdd(&bins[data[i]], 1u);");
  rh_guard(&v, "aligned(data, 16)");
  for (size_t i = 0; i < v.requires.len; i++)
    assert_null(strstr(v.requires.items[i], "bins"));
  assert_non_null(strstr(v.grid, "ceil_div(grid_x, 16)"));
  rh_compile_queued();
}

/* A kernel whose work depends on its block keeps its grid: each block gets
 * a quarter of the threads, each doing four of the block's elements; a
 * block-uniform term of the bounds check is tested once per thread. */
static void vectorize_block_work(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "add_block_offsets_kernel");
  ks_variant v = rh_applied(s, &s->in, "vectorize", 16, NULL);
  rh_has(&v, "long long ks_base = (long long)(blockIdx.x * blockDim.x + threadIdx.x) * 4;");
  rh_has(&v, "if (!(blockIdx.x > 0))\n        return;");
  rh_has(&v, "int4 ks_out = *reinterpret_cast<const int4 *>(out + ks_base);");
  rh_has(&v, "ks_out.w += scanned_block_sums[blockIdx.x - 1];");
  rh_has(&v, "for (int i = ks_base; i < n; ++i) out[i] += scanned_block_sums[blockIdx.x - 1];");
  assert_null(v.grid);
  assert_non_null(strstr(v.block, "block_x / 4"));
  rh_guard(&v, "block_x % 4 == 0");
  rh_guard(&v, "aligned(out, 16)");
  /* every size set: the same grid, a quarter of the threads */
  ks_candidate c;
  if (ks_target_candidate(&rh_ctx, &s->t, &v, s->is_template, &rh_arena, &c))
    fail_msg("%s", rh_ctx.error);
  for (size_t i = 0; i < s->t.nworkloads; i++) {
    assert_true(c.guards_hold[i]);
    assert_int_equal(c.launches[i].grid[0], s->t.workloads[i].launch.grid[0]);
    assert_int_equal(c.launches[i].block[0] * 4, s->t.workloads[i].launch.block[0]);
  }
  rh_compile_queued();
}

static void vectorize_refusals(void **state) {
  (void)state;
  rh_not_applied(&rh_open_kernel(&apps, "softmax_rows_kernel")->in, "vectorize", 16, "used as a pointer");
  rh_not_applied(&rh_open_kernel(&apps, "reduce_sum_kernel")->in, "vectorize", 16, "shared memory");
  rh_not_applied(&rh_open_kernel(&apps, "sgemm_naive_kernel")->in, "vectorize", 16, "2-D");
  rh_not_applied(&rh_open_kernel(&apps, "gemv_kernel")->in, "vectorize", 16, "element type 'T'");
  rh_not_applied(&rh_open_kernel(&apps, "scan_blocks_kernel")->in, "vectorize", 16, "shared memory");
}

/* After block (a new block size and grid), after restrict (the vector loads
 * go through __ldg), and after coarsen (the pattern is gone). */
static void vectorize_composes(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  const ks_rule *block = ks_rule_find("block");
  assert_non_null(block);
  ks_variant b = rh_applied(s, &s->in, "block", block->choices[0], NULL);
  ks_variant v = rh_applied(s, rh_next_input(s, &b), "vectorize", 16, NULL);
  assert_non_null(strstr(v.grid, "ceil_div(ceil_div("));
  assert_non_null(strstr(v.block, b.block));
  bool coverage = false;
  for (size_t i = 0; i < v.requires.len; i++)
    coverage |= strstr(v.requires.items[i], ">= n") && strstr(v.requires.items[i], b.block);
  assert_true(coverage);

  rh_subject *g = rh_open_kernel(&apps, "gelu_forward_kernel");
  ks_variant vec = rh_applied(g, &g->in, "vectorize", 16, NULL);
  ks_variant r = rh_applied(g, rh_next_input(g, &vec), "restrict", 0, NULL);
  rh_has(&r, "float4 ks_inp = __ldg(reinterpret_cast<const float4 *>(inp + ks_base));");
  rh_has(&r, "float x = __ldg(&inp[i]);");
  /* a written buffer's store is left alone */
  rh_has(&r, "*reinterpret_cast<float4 *>(out + ks_base) = ks_out;");

  ks_variant c = rh_applied(s, &s->in, "coarsen", 2, NULL);
  rh_not_applied(rh_next_input(s, &c), "vectorize", 16, "no global index");
  rh_compile_queued();
}

/* ---- restrict ----------------------------------------------------------- */

static void restrict_saxpy_and_spmv(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  ks_variant v = rh_applied(s, &s->in, "restrict", 0, NULL);
  rh_has(&v, "(int n, float a, const float* __restrict__ x, float* __restrict__ y)");
  rh_has(&v, "y[i] = a * __ldg(&x[i]) + y[i];");
  assert_int_equal(v.requires.len, 1);
  rh_guard(&v, "disjoint(x, y)");
  /* twice: nothing left to do */
  rh_not_applied(rh_next_input(s, &v), "restrict", 0, "nothing to add");

  /* already __restrict__ and const: __ldg only, and no new promise */
  rh_subject *p = rh_open_kernel(&apps, "spmv_csr_kernel");
  v = rh_applied(p, &p->in, "restrict", 0, NULL);
  rh_has(&v, "for (int j = __ldg(&row_ptr[row]); j < __ldg(&row_ptr[row + 1]); ++j)");
  rh_has(&v, "__ldg(&x[__ldg(&col_idx[j])])");
  assert_int_equal(v.requires.len, 0);

  /* the output of a template: __restrict__ but no __ldg of a T */
  rh_subject *g = rh_open_kernel(&apps, "gemv_kernel");
  v = rh_applied(g, &g->in, "restrict", 0, NULL);
  rh_has(&v, "(const T* __restrict__ A, const T* __restrict__ x, T* __restrict__ y,");
  rh_lacks(&v, "__ldg");
  rh_guard(&v, "disjoint(A, y)");
  rh_guard(&v, "disjoint(x, y)");
  assert_int_equal(v.requires.len, 2);

  /* the written buffer of an atomic is not made const */
  rh_subject *h = rh_open_kernel(&apps, "histogram_kernel");
  v = rh_applied(h, &h->in, "restrict", 0, NULL);
  rh_has(&v, "unsigned int* __restrict__ bins");
  rh_has(&v, "atomicAdd(&bins[__ldg(&data[i])], 1u);");
  rh_compile_queued();
}

/* A read-only buffer reached through a non-const local pointer keeps its
 * type (__restrict__ alone): `const LatLong *` would not initialize the
 * local, and the child would not compile. */
static void restrict_nonconst_local(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&mine, "euclid");
  ks_variant v = rh_applied(s, &s->in, "restrict", 0, NULL);
  rh_has(&v, "(LatLong *__restrict__ d_locations, float *__restrict__ d_distances,");
  rh_lacks(&v, "const LatLong");
  rh_guard(&v, "disjoint(d_locations, d_distances)");
  rh_compile_queued();
}

/* Local pointers into a buffer count: softmax writes `out` through y. */
static void restrict_sees_local_pointers(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "softmax_rows_kernel");
  ks_variant v = rh_applied(s, &s->in, "restrict", 0, NULL);
  rh_has(&v, "(float* __restrict__ out, const float* __restrict__ in, int rows, int cols)");
  rh_guard(&v, "disjoint(out, in)");
  rh_compile_queued();
}

/* disjoint() in the guard language (frontend/spec_resolve.c). */
static void disjoint_guard(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  ks_variant v = s->seed;
  v.requires = (ks_strings){0};
  *ks_array_push(&rh_arena, &v.requires) = "disjoint(x, y) && ks_disjoint(y, x)";
  ks_candidate cand;
  assert_int_equal(ks_target_candidate(&rh_ctx, &s->t, &v, false, &rh_arena, &cand), 0);
  for (size_t i = 0; i < s->t.nworkloads; i++)
    assert_true(cand.guards_hold[i]);
  v.requires.items[0] = "disjoint(x, x)";
  assert_int_equal(ks_target_candidate(&rh_ctx, &s->t, &v, false, &rh_arena, &cand), 0);
  for (size_t i = 0; i < s->t.nworkloads; i++)
    assert_false(cand.guards_hold[i]);
  v.requires.items[0] = "disjoint(n, y)";
  assert_int_equal(ks_target_candidate(&rh_ctx, &s->t, &v, false, &rh_arena, &cand), -1);
  assert_non_null(strstr(rh_ctx.error, "disjoint(): 'n' is not a pointer parameter"));
  v.requires.items[0] = "disjoint(x)";
  assert_int_equal(ks_target_candidate(&rh_ctx, &s->t, &v, false, &rh_arena, &cand), -1);
  assert_non_null(strstr(rh_ctx.error, "disjoint() takes two pointer parameters"));
}

/* ---- coarsen ------------------------------------------------------------ */

static void coarsen_1d_and_2d(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  ks_variant v = rh_applied(s, &s->in, "coarsen", 4, NULL);
  rh_has(&v, "#pragma unroll\n    for (int ks_k = 0; ks_k < 4; ++ks_k) {");
  rh_has(&v, "int i = blockIdx.x * blockDim.x + threadIdx.x + ks_k * gridDim.x * blockDim.x;");
  assert_non_null(strstr(v.grid, "ceil_div(grid_x, 4)"));
  rh_guard(&v, "grid_x * block_x >= n");
  rh_guard(&v, "ceil_div(grid_x, 4) * 4 * block_x <= 2147483648");
  rh_not_applied(&s->in, "coarsen", 3, "not one of");

  /* an early return becomes continue */
  rh_subject *m = rh_open_kernel(&apps, "softmax_rows_kernel");
  v = rh_applied(m, &m->in, "coarsen", 2, NULL);
  rh_has(&v, "if (row >= rows) continue;");
  rh_lacks(&v, "return");

  /* 64-bit indexes keep 64-bit arithmetic */
  rh_subject *h = rh_open_kernel(&apps, "histogram_kernel");
  v = rh_applied(h, &h->in, "coarsen", 8, NULL);
  rh_has(&v, "+ (size_t)ks_k * gridDim.x * blockDim.x;");

  /* 2-D: along y, C rows of each block */
  rh_subject *t = rh_open_kernel(&apps, "transpose_naive_kernel");
  v = rh_applied(t, &t->in, "coarsen", 4, NULL);
  rh_has(&v, "int row = blockIdx.y * blockDim.y * 4 + threadIdx.y + ks_k * blockDim.y;");
  rh_has(&v, "int col = blockIdx.x * blockDim.x + threadIdx.x;\n    #pragma unroll");
  assert_non_null(strstr(v.grid, "ceil_div(grid_y, 4)"));
  rh_guard(&v, "grid_y * block_y >= rows");

  rh_subject *j = rh_open_kernel(&apps, "jacobi5_kernel");
  v = rh_applied(j, &j->in, "coarsen", 2, NULL);
  assert_int_equal(rh_count(v.source, "continue;"), 2);
  rh_compile_queued();
}

static void coarsen_refusals(void **state) {
  (void)state;
  rh_not_applied(&rh_open_kernel(&apps, "reduce_sum_kernel")->in, "coarsen", 2, "shared memory");
  rh_not_applied(&rh_open_kernel(&apps, "add_block_offsets_kernel")->in, "coarsen", 2, "reads blockIdx");
  rh_not_applied(&rh_open_kernel(&apps, "scan_block_sums_kernel")->in, "coarsen", 2, "shared memory");
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  ks_variant c = rh_applied(s, &s->in, "coarsen", 2, NULL);
  rh_not_applied(rh_next_input(s, &c), "coarsen", 2, "no global index");
  rh_compile_queued();
}

/* coarsen after restrict; unroll after coarsen leaves the k loop's full
 * unroll alone */
static void coarsen_composes(void **state) {
  (void)state;
  rh_subject *g = rh_open_kernel(&apps, "gelu_forward_kernel");
  ks_variant r = rh_applied(g, &g->in, "restrict", 0, NULL);
  ks_variant c = rh_applied(g, rh_next_input(g, &r), "coarsen", 2, NULL);
  rh_has(&c, "float x = __ldg(&inp[i]);");
  rh_has(&c, "ks_k < 2");

  rh_subject *m = rh_open_kernel(&apps, "gemv_kernel");
  c = rh_applied(m, &m->in, "coarsen", 4, NULL);
  ks_variant u = rh_applied(m, rh_next_input(m, &c), "unroll", 4, NULL);
  rh_has(&u, "#pragma unroll\n    for (int ks_k = 0; ks_k < 4; ++ks_k) {");
  rh_has(&u, "#pragma unroll 4\n            for (int c = 0; c < cols; ++c)");
  assert_int_equal(rh_count(u.source, "#pragma unroll"), 2);
  rh_compile_queued();
}

/* ---- unroll ------------------------------------------------------------- */

static void unroll_loops(void **state) {
  (void)state;
  rh_subject *g = rh_open_kernel(&apps, "gemv_kernel");
  ks_variant v = rh_applied(g, &g->in, "unroll", 4, NULL);
  rh_has(&v, "        #pragma unroll 4\n        for (int c = 0; c < cols; ++c) sum +=");
  /* re-tuned, not stacked */
  ks_variant w = rh_applied(g, rh_next_input(g, &v), "unroll", 8, NULL);
  rh_has(&w, "#pragma unroll 8\n");
  rh_lacks(&w, "#pragma unroll 4");
  rh_not_applied(rh_next_input(g, &w), "unroll", 8, "already has an unroll pragma");
  /* a full unroll needs a trip count known at compile time */
  rh_not_applied(&g->in, "unroll", 0, "known at compile time");

  rh_subject *r = rh_open_kernel(&apps, "reduce_sum_kernel");
  v = rh_applied(r, &r->in, "unroll", 0, NULL);
  rh_has(&v, "    #pragma unroll\n    for (unsigned int s = 1; s < blockSize; s *= 2) {");

  rh_subject *l = rh_open_kernel(&apps, "layernorm_forward_kernel");
  v = rh_applied(l, &l->in, "unroll", 2, NULL);
  assert_int_equal(rh_count(v.source, "#pragma unroll 2\n"), 3);

  rh_not_applied(&rh_open_kernel(&apps, "saxpy_kernel")->in, "unroll", 4, "no loop");
  rh_not_applied(&g->in, "unroll", 3, "not one of");
  rh_compile_queued();
}

/* ---- fast_math ---------------------------------------------------------- */

static void fast_math_layernorm(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "layernorm_forward_kernel");
  ks_variant v = rh_applied(s, &s->in, "fast_math", 0, NULL);
  rh_has(&v, "float m = __fdividef(sum, cols);");
  rh_has(&v, "var = __fdividef(var, cols);");
  rh_has(&v, "float s = rsqrtf(var + eps);");
  rh_lacks(&v, "/ sqrtf");
  rh_compile_queued();
}

static void fast_math_refusals(void **state) {
  (void)state;
  /* the spec asks for tighter tolerances than f32's default */
  rh_not_applied(&rh_open_kernel(&apps, "gelu_forward_kernel")->in, "fast_math", 0, "tighter than f32's default");
  rh_not_applied(&rh_open_kernel(&apps, "softmax_rows_kernel")->in, "fast_math", 0, "tighter");
  /* integer outputs */
  rh_not_applied(&rh_open_kernel(&apps, "histogram_kernel")->in, "fast_math", 0, "not floating point");
  /* nothing to replace */
  rh_not_applied(&rh_open_kernel(&apps, "gemv_kernel")->in, "fast_math", 0, "no single-precision math call");
}

/* tanhf, expf and double math: gelu with its outputs' tolerance at the
 * default, where fast math is allowed. */
static void fast_math_tanh(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "gelu_forward_kernel");
  ks_workload *w = ks_arena_alloc(&rh_arena, sizeof *w);
  *w = *s->in.timed;
  w->buffers.items = ks_arena_alloc(&rh_arena, w->buffers.len * sizeof *w->buffers.items);
  memcpy(w->buffers.items, s->in.timed->buffers.items, w->buffers.len * sizeof *w->buffers.items);
  for (size_t i = 0; i < w->buffers.len; i++)
    ks_dtype_tolerance(w->buffers.items[i].dtype, &w->buffers.items[i].atol,
                       &w->buffers.items[i].rtol);
  ks_rule_input in = s->in;
  in.timed = w;
  ks_variant v = rh_applied(s, &in, "fast_math", 0, NULL);
  rh_has(&v, "ks_fast_tanhf(GELU_SCALING_FACTOR * (x + cube))");
  rh_has(&v, ks_fast_tanhf_source);
  /* the helper comes before the kernel */
  assert_true(strstr(v.source, "float ks_fast_tanhf(") < strstr(v.source, "__global__"));
  /* vectorized first, the four lanes are replaced and the helper added once */
  ks_variant vec = rh_applied(s, &s->in, "vectorize", 16, NULL);
  ks_rule_input *in2 = rh_next_input(s, &vec);
  in2->timed = w;
  ks_variant f = rh_applied(s, in2, "fast_math", 0, NULL);
  assert_int_equal(rh_count(f.source, "ks_fast_tanhf("), 6);
  assert_int_equal(rh_count(f.source, "float ks_fast_tanhf("), 1);
  rh_compile_queued();
}

/* The formula of ks_fast_tanhf in C, with the worst errors CUDA documents
 * for __expf (2 + floor(|1.173 x|) ulp) and __fdividef (2 ulp) on either
 * side: tanh within 1e-5 relative for |x| > 1e-3, 1e-10 absolute below. */
static float off_by_ulps(float v, int ulps) {
  for (int i = 0; i < (ulps < 0 ? -ulps : ulps); i++)
    v = nextafterf(v, ulps < 0 ? -INFINITY : INFINITY);
  return v;
}

static float fast_tanhf(float x, int e_side, int d_side) {
  float ax = fabsf(x), x2 = x * x;
  float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * -0.0539682540f)));
  float t = 2.0f * ax;
  float e = off_by_ulps(expf(t), e_side * (2 + (int)floor(fabs(1.173 * t))));
  float q = off_by_ulps(2.0f / (e + 1.0f), d_side * 2);
  float big = copysignf(1.0f - q, x);
  return ax < 0.0625f ? small : big;
}

static void fast_tanh_accuracy(void **state) {
  (void)state;
  /* the source says what this test checks */
  assert_non_null(strstr(ks_fast_tanhf_source, "ax < 0.0625f ? small : big"));
  assert_non_null(strstr(ks_fast_tanhf_source, "__fdividef(2.0f, __expf(2.0f * ax) + 1.0f)"));
  assert_non_null(strstr(ks_fast_tanhf_source,
                         "x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * "
                         "-0.0539682540f)))"));
  double max_rel = 0, max_abs = 0;
  for (double x = -20; x <= 20; x += 1.0 / 4096) {
    for (int e = -1; e <= 1; e += 2)
      for (int d = -1; d <= 1; d += 2) {
        float xf = (float)x;
        double ref = tanh((double)xf), err = fabs((double)fast_tanhf(xf, e, d) - ref);
        if (fabs(xf) > 1e-3)
          max_rel = fmax(max_rel, err / fabs(ref));
        else
          max_abs = fmax(max_abs, err);
      }
  }
  /* near the switch, and tiny arguments */
  for (float xf = 0.05f; xf < 0.08f; xf = nextafterf(xf, 1.0f))
    max_rel = fmax(max_rel, fabs((double)fast_tanhf(xf, 1, 1) - tanh(xf)) / tanh(xf));
  for (float xf = 1e-30f; xf < 1e-3f; xf *= 1.01f)
    max_abs = fmax(max_abs, fabs((double)fast_tanhf(xf, -1, -1) - tanh(xf)));
  printf("ks_fast_tanhf: max relative error %.3g, max absolute error near 0 %.3g\n", max_rel,
         max_abs);
  assert_true(max_rel < 1e-5);
  assert_true(max_abs < 1e-10);
  /* the limits */
  assert_true(fast_tanhf(100.0f, 1, 1) == 1.0f);
  assert_true(fast_tanhf(-100.0f, 1, 1) == -1.0f);
  assert_true(fast_tanhf(0.0f, 1, 1) == 0.0f);
}

int main(void) {
  const struct CMUnitTest cpu[] = {
      cmocka_unit_test(fast_tanh_accuracy),
  };
  const struct CMUnitTest on_apps[] = {
      cmocka_unit_test(vectorize_saxpy),
      cmocka_unit_test(vectorize_gelu_and_histogram),
      cmocka_unit_test(vectorize_block_work),
      cmocka_unit_test(vectorize_refusals),
      cmocka_unit_test(vectorize_composes),
      cmocka_unit_test(restrict_saxpy_and_spmv),
      cmocka_unit_test(restrict_sees_local_pointers),
      cmocka_unit_test(disjoint_guard),
      cmocka_unit_test(restrict_nonconst_local),
      cmocka_unit_test(coarsen_1d_and_2d),
      cmocka_unit_test(coarsen_refusals),
      cmocka_unit_test(coarsen_composes),
      cmocka_unit_test(unroll_loops),
      cmocka_unit_test(fast_math_layernorm),
      cmocka_unit_test(fast_math_refusals),
      cmocka_unit_test(fast_math_tanh),
  };
  int failed = cmocka_run_group_tests_name("tanh", cpu, NULL, NULL);
  return failed | cmocka_run_group_tests_name("rules_mem", on_apps, setup, teardown);
}
