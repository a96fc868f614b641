// stream_z's children of testdata/rules/stream_z.cu run on the CPU
// (emulated blocks, tests/tile_mm_cpu/emu.h) against the originals, bit for
// bit: each child computes the same expressions on the same values (its
// registers hold what the original loads), so with -ffp-contract=off on
// both sides every output, and every element it must not touch, is equal.
// RUN is the run of planes the children were made with (0: all); the
// sizes are not multiples of it, so the last run of a column is short.
#define KS_CPU_EMU
#include "emu.h"
#include STREAM_Z_CU
#include VARIANTS
static unsigned zgrid(unsigned gz) { return RUN ? cdiv(gz, RUN) : 1; }
int main() {
  int bad = 0;
  int sizes[][3] = {{13, 7, 11}, {9, 5, 3}, {7, 6, 20}, {10, 4, 37}, {5, 5, 2}};
  for (auto &sz : sizes) {
    int nx = sz[0], ny = sz[1], nz = sz[2];
    size_t n = (size_t)nx * ny * nz;
    std::vector<float> a(n), w(n), out(n);
    fill(a, 1); fill(w, 2); fill(out, 3);
    for (unsigned bz = 1; bz <= (RUN ? 2u : 1u); bz++) {
      dim3 b(8, 4, bz), g(cdiv(nx, 8), cdiv(ny, 4), cdiv(nz, bz)), gv(g.x, g.y, zgrid(g.z));
      char what[96];
      std::vector<float> o1 = out, o2 = out;
      launch(g, b, [&] { heat3d_tidy(a.data(), o1.data(), nx, ny, nz, 0.5f, 0.125f); });
      launch(gv, b, [&] { heat3d_tidy_ks_variant(a.data(), o2.data(), nx, ny, nz, 0.5f, 0.125f); });
      snprintf(what, sizeof what, "heat3d_tidy %dx%dx%d block z %u", nx, ny, nz, bz);
      bad |= same(what, o1, o2);
      o1 = out, o2 = out;
      launch(g, b, [&] { wide_z(a.data(), w.data(), o1.data(), nx, ny, nz); });
      launch(gv, b, [&] { wide_z_ks_variant(a.data(), w.data(), o2.data(), nx, ny, nz); });
      snprintf(what, sizeof what, "wide_z %dx%dx%d block z %u", nx, ny, nz, bz);
      bad |= same(what, o1, o2);
    }
  }
  {
    std::vector<float> A(NX * NY * NZ), B(NX * NY * NZ);
    fill(A, 4); fill(B, 5);
    std::vector<float> b1 = B, b2 = B;
    dim3 b(16, 4), g(cdiv(NX, 16), cdiv(NY, 4));
    unsigned planes = (NZ - 2) + 1 - 1;
    launch(g, b, [&] { jacobi3d_old(A.data(), b1.data()); });
    launch(dim3(g.x, g.y, RUN ? cdiv(planes, RUN) : 1), b, [&] { jacobi3d_old_ks_variant(A.data(), b2.data()); });
    bad |= same("jacobi3d_old", b1, b2);
  }
  return bad;
}
