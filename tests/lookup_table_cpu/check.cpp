// lookup_table's children of testdata/rules/lut.cu run on the CPU (emulated
// blocks, tests/tile_mm_cpu/emu.h) against the originals. The table holds
// the same expression evaluated on the same byte with the same (host) math
// functions, so the children must give the very bits of the originals, for
// every byte value the data can hold. Floats and doubles keyed by the
// integers their spec promises get what no spec promises too: -0.0 (whose
// pow(x, 1) is -0.0, not the table's +0.0), NaN, infinities, 0.5, -1, the
// table's end and values far past it.
#define KS_CPU_EMU
#include <cmath>
#include "emu.h"
using std::max;
using std::min;
using std::exp2f;
using std::log2f;
using std::log1pf;
using std::signbit;
using std::sqrt;
#include LUT_CU
#include VARIANTS

static void bytes(std::vector<unsigned char> &v, unsigned seed) {
  for (auto &x : v) { seed = seed * 1664525u + 1013904223u; x = (unsigned char)(seed >> 24); }
}

// emu.h's same() names the first element that compares unequal, which a
// NaN always is: for data with NaNs, the first one whose bits differ.
template <class T> static int same_bits(const char *what, const std::vector<T> &a, const std::vector<T> &b) {
  for (size_t i = 0; i < a.size(); i++)
    if (memcmp(&a[i], &b[i], sizeof(T))) {
      printf("%s: DIFFER at %zu: %.17g vs %.17g\n", what, i, (double)a[i], (double)b[i]);
      return 1;
    }
  printf("%s: bitwise equal (%zu elements)\n", what, a.size());
  return 0;
}

// Integers 0..top-1 (a few past the table when top is larger), with every
// value no spec promises at the front: the guard's cases.
template <class T> static void ints_and_worse(std::vector<T> &v, unsigned top, unsigned seed) {
  for (auto &x : v) { seed = seed * 1664525u + 1013904223u; x = (T)((seed >> 8) % top); }
  const T worse[] = {(T)-0.0, (T)NAN, -(T)NAN, (T)0.5, (T)-1, (T)255, (T)256, (T)1023, (T)1024,
                     (T)4095, (T)4096, (T)1e30, (T)INFINITY, -(T)INFINITY, (T)-0.5, (T)255.5,
                     (T)1e-40, (T)0};
  for (size_t i = 0; i < sizeof worse / sizeof *worse && i < v.size(); i++) v[i * 7 % v.size()] = worse[i];
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
  { // floats holding 0..255, and worse, through a 3x3 window
    const int w = 41, h = 23;
    std::vector<float> src(w * h);
    ints_and_worse(src, 256, 4);
    std::vector<float> d1(w * h), d2(w * h);
    dim3 g((w * h + 255) / 256), b(256);
    launch(g, b, [&] { log_energy_f32(src.data(), d1.data(), w, h); });
    launch(g, b, [&] { log_energy_f32_ks_variant(src.data(), d2.data(), w, h); });
    bad |= same_bits("log_energy_f32 41x23", d1, d2);
  }
  { // 10-bit values as floats, some past the 1024 entries; with the
    // exponent 1, pow(-0.0 / white, 1) is -0.0 where the table's 0 is +0.0
    const unsigned n = 4099;
    std::vector<float> raw(n);
    ints_and_worse(raw, 1100, 5);
    for (float e : {0.4545f, 1.0f}) {
      std::vector<float> o1(n), o2(n);
      launch(dim3(5), dim3(64), [&] { gamma_raw10(raw.data(), o1.data(), e, 1023.0f, n); });
      launch(dim3(5), dim3(64), [&] { gamma_raw10_ks_variant(raw.data(), o2.data(), e, 1023.0f, n); });
      bad |= same_bits(e == 1.0f ? "gamma_raw10 4099 (exponent 1)" : "gamma_raw10 4099", o1, o2);
    }
  }
  { // doubles holding 0..1000 read through a local, and worse
    const int npix = 333, frames = 3;
    std::vector<double> counts(npix * frames);
    ints_and_worse(counts, 1100, 6);
    std::vector<double> s1(npix), s2(npix);
    dim3 g((npix + 127) / 128), b(128);
    launch(g, b, [&] { anscombe_frames(counts.data(), s1.data(), npix, frames); });
    launch(g, b, [&] { anscombe_frames_ks_variant(counts.data(), s2.data(), npix, frames); });
    bad |= same_bits("anscombe_frames 333x3", s1, s2);
  }
  return bad;
}
