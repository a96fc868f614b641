// lookup_table's children of testdata/rules/lut.cu run on the CPU (emulated
// blocks, tests/tile_mm_cpu/emu.h) against the originals. The table holds
// the same expression evaluated on the same byte with the same (host) math
// functions, so the children must give the very bits of the originals, for
// every byte value the data can hold.
#define KS_CPU_EMU
#include <cmath>
#include "emu.h"
using std::max;
using std::min;
using std::exp2f;
using std::log2f;
#include LUT_CU
#include VARIANTS

static void bytes(std::vector<unsigned char> &v, unsigned seed) {
  for (auto &x : v) { seed = seed * 1664525u + 1013904223u; x = (unsigned char)(seed >> 24); }
}

int main() {
  int bad = 0;
  { // a 2-D window filter, partial blocks at both edges
    const int w = 37, h = 29;
    std::vector<unsigned char> img(w * h);
    bytes(img, 1);
    img[0] = 0; img[1] = 255;
    std::vector<float> e1(w * h), e2(w * h);
    dim3 g((w + 31) / 32, (h + 7) / 8), b(32, 8);
    launch(g, b, [&] { log_energy(img.data(), e1.data(), w, h); });
    launch(g, b, [&] { log_energy_ks_variant(img.data(), e2.data(), w, h); });
    bad |= same("log_energy 37x29", e1, e2);
  }
  { // a grid-stride loop over every byte value, fewer threads than entries
    const int n = 1001;
    std::vector<unsigned char> in(n);
    for (int i = 0; i < n; i++) in[i] = (unsigned char)(i * 7);
    std::vector<float> o1(n), o2(n);
    launch(dim3(3), dim3(64), [&] { gamma_correct(in.data(), o1.data(), 2.2f, n); });
    launch(dim3(3), dim3(64), [&] { gamma_correct_ks_variant(in.data(), o2.data(), 2.2f, n); });
    bad |= same("gamma_correct 1001", o1, o2);
  }
  { // signed chars, negative values included
    const int n = 333, k = 5;
    std::vector<unsigned char> raw(n + k);
    bytes(raw, 2);
    std::vector<signed char> seq(raw.begin(), raw.end());
    std::vector<float> s1(n), s2(n);
    dim3 g((n + 127) / 128), b(128);
    launch(g, b, [&] { window_softscore(seq.data(), s1.data(), n, k); });
    launch(g, b, [&] { window_softscore_ks_variant(seq.data(), s2.data(), n, k); });
    bad |= same("window_softscore 333", s1, s2);
  }
  { // a histogram's entropy over a 5x5 window: counts 0..25 from the table
    const int w = 37, h = 29;
    std::vector<unsigned char> img(w * h);
    bytes(img, 3);
    std::vector<float> e1(w * h), e2(w * h);
    dim3 g((w + 15) / 16, (h + 15) / 16), b(16, 16);
    launch(g, b, [&] { window_hist_entropy(img.data(), e1.data(), w, h); });
    launch(g, b, [&] { window_hist_entropy_ks_variant(img.data(), e2.data(), w, h); });
    bad |= same("window_hist_entropy 37x29", e1, e2);
  }
  { // shorts in and out of the table's [0, 256): negative, inside, beyond
    const int n = 1001;
    std::vector<short> age(n);
    for (int i = 0; i < n; i++) age[i] = (short)((i * 37) % 1500 - 300);
    age[0] = -32768; age[1] = 32767; age[2] = 255; age[3] = 256;
    std::vector<float> o1(n), o2(n);
    launch(dim3(3), dim3(64), [&] { decay_weights(age.data(), o1.data(), 64.0f, n); });
    launch(dim3(3), dim3(64), [&] { decay_weights_ks_variant(age.data(), o2.data(), 64.0f, n); });
    bad |= same("decay_weights 1001", o1, o2);
  }
  return bad;
}
