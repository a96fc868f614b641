#include "emu.h"
#include TILE_MM_CU
#include SGEMM_ORIG
#include VARIANTS
#ifndef TILE
#error
#endif
#ifndef XREGS
#define XREGS 1
#endif
#ifndef TILE_X /* the float4 choices: BM along y, BN along x */
#define TILE_X TILE
#endif
static const unsigned T = TILE, TX = TILE_X, ROWS = TILE / REGS, COLS = TILE_X / XREGS;
static dim3 vgrid(dim3 g, dim3 b) { return dim3(cdiv(g.x * b.x, TX), cdiv(g.y * b.y, T)); }
static dim3 vblock() { return dim3(COLS, ROWS); }

#ifdef FAST
/* The float4 choices apply where the leading dimensions are multiples of 4
 * (the guards): sgemm with N and K multiples of 4, M anything; A * B^T and
 * A^T * B with padded leading dimensions and depths, rows and columns that
 * are not (a float4's tail past a bound is read element by element); sizes
 * below, across and above one tile, K a k-tile and a half. */
int main() {
  int bad = 0;
  int sizes[][3] = {{128, 128, 128}, {100, 36, 52}, {1, 4, 4}, {130, 68, 20}, {257, 132, 12}, {3, 260, 8}};
  for (auto &s : sizes) {
    int M = s[0], N = s[1], K = s[2];
    float alpha = 1.25f, beta = 0.75f;
    std::vector<float> A(M * K), B(K * N), C(M * N);
    fill(A, 1); fill(B, 2); fill(C, 3);
    std::vector<float> C1 = C, C2 = C;
    dim3 g(cdiv(N, 16), cdiv(M, 16)), b(16, 16);
    launch(g, b, [&] { sgemm_naive_kernel(M, N, K, alpha, A.data(), B.data(), beta, C1.data()); });
    launch(vgrid(g, b), vblock(), [&] { sgemm_naive_kernel_ks_variant(M, N, K, alpha, A.data(), B.data(), beta, C2.data()); });
    char w[64]; snprintf(w, sizeof w, "sgemm %dx%dx%d", M, N, K);
    bad |= same(w, C1, C2);
  }
  int nt[][3] = {{64, 32, 16}, {45, 67, 35}, {1, 1, 1}, {130, 70, 37}};
  for (auto &s : nt) {
    int rows = s[0], cols = s[1], depth = s[2], lda = (depth + 3) / 4 * 4, ldb = lda + 4, ldc = cols;
    std::vector<float> A(rows * lda), B(cols * ldb), C1(rows * ldc, 5.f), C2(rows * ldc, 5.f);
    fill(A, 8); fill(B, 9);
    dim3 g(cdiv(cols, 16), cdiv(rows, 16)), bl(16, 16);
    launch(g, bl, [&] { gemm_nt_kernel(rows, cols, depth, A.data(), lda, B.data(), ldb, C1.data(), ldc, 1.5f); });
    launch(vgrid(g, bl), vblock(), [&] { gemm_nt_kernel_ks_variant(rows, cols, depth, A.data(), lda, B.data(), ldb, C2.data(), ldc, 1.5f); });
    char w[64]; snprintf(w, sizeof w, "gemm_nt %dx%dx%d", rows, cols, depth);
    bad |= same(w, C1, C2);
  }
  int tn[][3] = {{37, 70, 19}, {64, 64, 8}, {1, 1, 1}, {131, 66, 9}};
  for (auto &s : tn) {
    int rows = s[0], cols = s[1], depth = s[2], lda = (rows + 3) / 4 * 4, ldb = (cols + 3) / 4 * 4 + 4;
    std::vector<float> A(depth * lda), B(depth * ldb), C(rows * cols);
    fill(A, 10); fill(B, 11); fill(C, 12);
    std::vector<float> C1 = C, C2 = C;
    dim3 g(cdiv(cols, 16), cdiv(rows, 16)), bl(16, 16);
    launch(g, bl, [&] { gemm_tn_kernel(rows, cols, depth, A.data(), lda, B.data(), ldb, C1.data()); });
    launch(vgrid(g, bl), vblock(), [&] { gemm_tn_kernel_ks_variant(rows, cols, depth, A.data(), lda, B.data(), ldb, C2.data()); });
    char w[64]; snprintf(w, sizeof w, "gemm_tn %dx%dx%d", rows, cols, depth);
    bad |= same(w, C1, C2);
  }
  return bad;
}
#else
int main() {
  int bad = 0;
  /* sgemm at the spec's sizes small, odd, one */
  int sizes[][3] = {{128, 128, 128}, {100, 37, 53}, {1, 1, 1}, {70, 90, 33}};
  for (auto &s : sizes) {
    int M = s[0], N = s[1], K = s[2];
    float alpha = 1.25f, beta = 0.75f;
    std::vector<float> A(M * K), B(K * N), C(M * N);
    fill(A, 1); fill(B, 2); fill(C, 3);
    std::vector<float> C1 = C, C2 = C;
    dim3 g(cdiv(N, 16), cdiv(M, 16)), b(16, 16);
    launch(g, b, [&] { sgemm_naive_kernel(M, N, K, alpha, A.data(), B.data(), beta, C1.data()); });
    launch(vgrid(g, b), vblock(), [&] { sgemm_naive_kernel_ks_variant(M, N, K, alpha, A.data(), B.data(), beta, C2.data()); });
    char w[64]; snprintf(w, sizeof w, "sgemm %dx%dx%d", M, N, K);
    bad |= same(w, C1, C2);
  }
  {
    std::vector<float> a(GM_NI * GM_NK), b(GM_NK * GM_NJ), c(GM_NI * GM_NJ);
    fill(a, 4); fill(b, 5); fill(c, 6);
    std::vector<float> c1 = c, c2 = c;
    dim3 g(cdiv(GM_NJ, 32), cdiv(GM_NI, 4)), bl(32, 4);
    launch(g, bl, [&] { gemm_macro_kernel(a.data(), b.data(), c1.data()); });
    launch(vgrid(g, bl), vblock(), [&] { gemm_macro_kernel_ks_variant(a.data(), b.data(), c2.data()); });
    bad |= same("gemm_macro", c1, c2);
  }
  int aat[][2] = {{40, 24}, {97, 33}, {1, 1}};
  for (auto &s : aat) {
    int n = s[0], m = s[1];
    std::vector<double> a(n * m), c1(n * n, 7.0), c2(n * n, 7.0);
    fill(a, 7);
    dim3 g(cdiv(n, 8), cdiv(n, 8)), bl(8, 8);
    launch(g, bl, [&] { aat_kernel(a.data(), c1.data(), n, m); });
    launch(vgrid(g, bl), vblock(), [&] { aat_kernel_ks_variant(a.data(), c2.data(), n, m); });
    char w[64]; snprintf(w, sizeof w, "aat %dx%d", n, m);
    bad |= same(w, c1, c2);
  }
  int nt[][3] = {{64, 32, 16}, {45, 67, 35}, {1, 1, 1}};
  for (auto &s : nt) {
    int rows = s[0], cols = s[1], depth = s[2], lda = depth, ldb = depth + 3, ldc = cols;
    std::vector<float> A(rows * lda), B(cols * ldb), C1(rows * ldc, 5.f), C2(rows * ldc, 5.f);
    fill(A, 8); fill(B, 9);
    dim3 g(cdiv(cols, 16), cdiv(rows, 16)), bl(16, 16);
    launch(g, bl, [&] { gemm_nt_kernel(rows, cols, depth, A.data(), lda, B.data(), ldb, C1.data(), ldc, 1.5f); });
    launch(vgrid(g, bl), vblock(), [&] { gemm_nt_kernel_ks_variant(rows, cols, depth, A.data(), lda, B.data(), ldb, C2.data(), ldc, 1.5f); });
    char w[64]; snprintf(w, sizeof w, "gemm_nt %dx%dx%d", rows, cols, depth);
    bad |= same(w, C1, C2);
  }
  return bad;
}
#endif
