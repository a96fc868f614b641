// The runtime header (runtime/kernelsmith_dispatch.h) as host C++: the
// switches (KERNELSMITH_DISABLE as "1", "all" or a list, read once), the guard
// helpers, a site's decision and counts, and the statistics at exit. Without
// a GPU, take() must answer "no device" and leave no CUDA error behind; on a
// GPU machine the same checks run and a site with the device's architecture
// takes the variant when its guards hold. Each environment is tested in a
// child process (the header reads the environment once).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "kernelsmith_dispatch.h"

static int fails;

static void expect(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    fails++;
  }
}

static std::string run(const std::string &cmd) {
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p))
    out += buf;
  if (pclose(p) != 0)
    out += "(child failed)";
  return out;
}

static void helpers() {
  expect(ksrt::list_names("saxpy,gemv", "gemv"), "list names gemv");
  expect(!ksrt::list_names("saxpy,gemv", "gem"), "prefix is not a name");
  expect(ksrt::list_names("all", "x") && ksrt::list_names("1", "x"), "all, 1");
  expect(!ksrt::list_names("", "x") && !ksrt::list_names(nullptr, "x"), "empty, unset");
  expect(ksrt::ceil_div(10, 4) == 3 && ksrt::ceil_div(8u, 4u) == 2u, "ceil_div");
  expect(ksrt::min(3, 5) == 3 && ksrt::max(3u, 5u) == 5u, "min, max");
  expect(ksrt::is_pow2(256) && !ksrt::is_pow2(96) && !ksrt::is_pow2(0), "is_pow2");
  expect(ksrt::round_up(10, 4) == 12 && ksrt::round_up(8, 4) == 8, "round_up");
  expect(ksrt::log2(1) == 0 && ksrt::log2(256) == 8 && ksrt::log2(300) == 8, "log2");
  expect(ksrt::abs(-3) == 3 && ksrt::abs(4ll) == 4, "abs");
  alignas(16) float buf[16];
  expect(ksrt::aligned(buf, 16) && !ksrt::aligned(buf + 1, 16), "aligned");
  expect(ksrt::disjoint(buf, 32, buf + 8, 32) && !ksrt::disjoint(buf, 36, buf + 8, 4),
         "disjoint");
}

/* Shadow mode's comparison on the host: floats within the tolerance,
 * half and bfloat16 by value (a bf16 variant within tolerance is not a
 * difference), anything else byte for byte. */
static std::size_t differ(ksrt::output::kind_t kind, const void *want, const void *got,
                          std::size_t bytes, double atol, double rtol, std::size_t *first) {
  ksrt::output o{nullptr, bytes, kind, atol, rtol};
  std::size_t bad = 0;
  *first = 0;
  ksrt::compare_output(o, static_cast<const unsigned char *>(want),
                       static_cast<const unsigned char *>(got), &bad, first);
  return bad;
}

static void shadow_compare() {
  std::size_t first;
  expect(ksrt::half_bits_to_float(0x3c00) == 1.0f && ksrt::half_bits_to_float(0xc000) == -2.0f &&
             ksrt::half_bits_to_float(0x0001) == std::ldexp(1.0f, -24) &&
             std::isinf(ksrt::half_bits_to_float(0x7c00)) &&
             std::isnan(ksrt::half_bits_to_float(0x7e00)),
         "half bits");
  expect(ksrt::bf16_bits_to_float(0x3f80) == 1.0f && ksrt::bf16_bits_to_float(0xc040) == -3.0f,
         "bfloat16 bits");
  /* bf16 1.0 against 1.0078125 (the next value): within 1e-2, not 1e-3 */
  const std::uint16_t bw[3] = {0x3f80, 0x4000, 0x7fc0}, bg[3] = {0x3f81, 0x4000, 0x7fc0};
  expect(differ(ksrt::output::BF16, bw, bg, 6, 0.01, 0.0, &first) == 0, "bf16 within tolerance");
  expect(differ(ksrt::output::BF16, bw, bg, 6, 0.001, 0.0, &first) == 1 && first == 0,
         "bf16 outside tolerance, element 0");
  expect(differ(ksrt::output::BYTES, bw, bg, 6, 0.01, 0.0, &first) == 1,
         "the same bytes compared as bytes differ");
  const std::uint16_t hw[2] = {0x3c00, 0x3c00}, hg[2] = {0x3c00, 0x3c01};
  expect(differ(ksrt::output::F16, hw, hg, 4, 1e-3, 0.0, &first) == 0, "half within tolerance");
  expect(differ(ksrt::output::F16, hw, hg, 4, 1e-4, 0.0, &first) == 1 && first == 1,
         "half outside tolerance, element 1");
  const float fw[2] = {1.0f, 2.0f}, fg[2] = {1.0f, 2.5f};
  expect(differ(ksrt::output::F32, fw, fg, 8, 0.1, 0.0, &first) == 1 && first == 1, "f32");
}

/* In a child: what take() answers under the environment the parent set. */
static int child(const char *want) {
  static ksrt::site s("saxpy", "t.cu:1", {ksrt::current_arch() ? ksrt::current_arch() : 90});
  static ksrt::site other("saxpy", "t.cu:2", {11});
  bool device = ksrt::current_arch() != 0;
  bool took = s.take(true), took_bad = s.take(false), took_other = other.take(true);
  /* With a device, the queries leave no error for the application to see;
   * without a driver every runtime call, cudaGetLastError too, reports the
   * failed initialization, whatever we do. */
  if (device)
    expect(cudaGetLastError() == cudaSuccess, "no CUDA error left behind");
  expect(!took_bad, "failed guards never take the variant");
  if (!std::strcmp(want, "off")) {
    expect(!took && s.count(ksrt::OFF) == 2, "switched off");
  } else if (!device) {
    expect(!took && s.count(ksrt::NO_DEVICE) == 2, "no device: the original");
  } else {
    expect(took && s.count(ksrt::VARIANT) == 1 && s.count(ksrt::GUARDS) == 1, "variant");
    expect(!took_other && other.count(ksrt::OTHER_ARCH) == 1, "another architecture");
  }
  return fails;
}

int main(int argc, char **argv) {
  if (argc > 1)
    return child(argv[1]);
  helpers();
  shadow_compare();
  std::string self = argv[0];
  unsetenv("KERNELSMITH_STATS");
  setenv("KERNELSMITH_DISABLE", "gemv,saxpy", 1);
  expect(std::system((self + " off").c_str()) == 0, "child: disabled by list");
  setenv("KERNELSMITH_DISABLE", "all", 1);
  expect(std::system((self + " off").c_str()) == 0, "child: disabled by all");
  setenv("KERNELSMITH_DISABLE", "gemv", 1);
  expect(std::system((self + " on").c_str()) == 0, "child: another kernel disabled");
  unsetenv("KERNELSMITH_DISABLE");
  expect(std::system((self + " on").c_str()) == 0, "child: nothing disabled");
  /* statistics at exit, one line per site */
  setenv("KERNELSMITH_STATS", "1", 1);
  std::string out = run(self + " on 2>&1");
  expect(out.find("kernelsmith: saxpy at t.cu:1:") != std::string::npos, "stats line of site 1");
  expect(out.find("kernelsmith: saxpy at t.cu:2:") != std::string::npos, "stats line of site 2");
  expect(out.find("guards failed 1") != std::string::npos ||
             out.find("no device 2") != std::string::npos,
         "guards (or, without a GPU, the missing device) counted");
  if (fails)
    std::fprintf(stderr, "stats output was:\n%s", out.c_str());
  std::printf("runtime header: %s\n", fails ? "FAIL" : "ok");
  return fails != 0;
}
