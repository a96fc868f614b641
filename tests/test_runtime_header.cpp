// The runtime header (runtime/kernelsmith_dispatch.h) as host C++: the
// switches (KERNELSMITH_DISABLE as "1", "all" or a list, read once), the guard
// helpers, a site's decision and counts, and the statistics at exit (on
// stderr, or appended to KERNELSMITH_STATS_FILE). Without a GPU, take() must
// answer "no device" and leave no CUDA error behind; on a GPU machine the
// same checks run and a site with the device's architecture takes the
// variant when its guards hold. Each environment is tested in a child
// process (the header reads the environment once).
//
// disjoint() with a length unknown asks the driver which allocations hold
// the pointers; a stand-in for cuPointerGetAttributes (a table of fake
// allocations, counting its calls) tests that logic and alias_cache on the
// host, including memory freed and allocated again between launches. The
// real driver path is checked too: without a GPU it must answer "not
// disjoint"; with one, on real cudaMalloc buffers.
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
  expect(ksrt::bytes_of(10, 4) == 40 && ksrt::bytes_of(0ll, 8) == 0, "bytes_of");
  expect(ksrt::bytes_of(-1, 4) == ksrt::unknown, "a negative length is unknown");
  expect(ksrt::bytes_of(~0ull / 2, 4) == ksrt::unknown, "an overflowing length is unknown");
  expect(ksrt::bytes_of(7u, 0) == ksrt::unknown, "no element size");
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

/* ---- the stand-in for the driver's pointer query ---- */

/* The kinds of memory, as cuPointerGetAttributes tells them apart (IS_MANAGED,
 * IS_LEGACY_CUDA_IPC_CAPABLE, MEMPOOL_HANDLE), measured on an NVIDIA H200. */
enum fake_kind { MALLOC, POOL, MANAGED, MAPPED /* cuMemMap */, PINNED /* cudaMallocHost */ };

struct fake_alloc {
  unsigned long long id;
  std::uintptr_t start;
  std::size_t size;
  fake_kind kind;
};
static fake_alloc fakes[8];
static int nfakes, queries;
static unsigned last_nattrs; /* attributes asked in the last query */
static bool query_fails; /* the driver call itself errs (e.g. no context) */
static bool query_lies;  /* the driver's range does not contain the pointer */

/* cuPointerGetAttributes over `fakes`: an address in none of them gets
 * zeros and success, as the driver does for unknown pointers. */
static int fake_query(unsigned n, int *attrs, void **data, ksrt::detail::deviceptr ptr) {
  queries++;
  last_nattrs = n;
  if (query_fails)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  const fake_alloc *hit = nullptr;
  for (int i = 0; i < nfakes; i++)
    if (ptr >= fakes[i].start && ptr - fakes[i].start < fakes[i].size)
      hit = &fakes[i];
  const fake_alloc wrong = {5, static_cast<std::uintptr_t>(ptr) + 16, 4096, MALLOC};
  if (query_lies)
    hit = &wrong;
  for (unsigned i = 0; i < n; i++) {
    if (attrs[i] == 7)
      *static_cast<unsigned long long *>(data[i]) = hit ? hit->id : 0;
    else if (attrs[i] == 11)
      *static_cast<ksrt::detail::deviceptr *>(data[i]) = hit ? hit->start : 0;
    else if (attrs[i] == 12)
      *static_cast<std::size_t *>(data[i]) = hit ? hit->size : 0;
    else if (attrs[i] == 8) /* a boolean: written as an unsigned int */
      *static_cast<unsigned *>(data[i]) = hit && hit->kind == MANAGED;
    else if (attrs[i] == 10)
      *static_cast<unsigned *>(data[i]) = hit && hit->kind == MALLOC;
    else if (attrs[i] == 17) /* a pool handle */
      *static_cast<void **>(data[i]) = hit && hit->kind == POOL ? &fakes : nullptr;
    else
      return 1;
  }
  return 0;
}

static const void *at(std::uintptr_t a) { return reinterpret_cast<const void *>(a); }

/* Two cudaMalloc allocations of 1 MiB, A (id 907) at 1 GiB and B (id 908)
 * right after it. */
static const std::uintptr_t A = 1u << 30, B = A + (1u << 20);
static void two_allocations(fake_kind a = MALLOC, fake_kind b = MALLOC) {
  fakes[0] = {907, A, 1u << 20, a};
  fakes[1] = {908, B, 1u << 20, b};
  nfakes = 2;
  query_fails = false;
  queries = 0;
}

static void disjoint_at_run_time() {
  const std::size_t U = ksrt::unknown;
  ksrt::detail::set_pointer_query(fake_query);
  two_allocations();
  expect(ksrt::disjoint(at(A + 64), U, at(B + 64), U), "different allocations: disjoint");
  expect(queries == 2, "different allocations: both pointers asked");
  expect(ksrt::disjoint(at(B), U, at(A), 4096), "different allocations, one length known");

  queries = 0;
  expect(ksrt::disjoint(at(A), 256, at(A + 256), 256), "one allocation, known, apart");
  expect(!ksrt::disjoint(at(A), 257, at(A + 256), 256), "one allocation, known, overlapping");
  expect(!ksrt::disjoint(at(A + 256), 256, at(A), 257), "overlapping, the other order");
  expect(ksrt::disjoint(at(A), 0, at(A), 16) == ksrt::disjoint(at(A), 16, at(A), 0),
         "an empty range: symmetric");
  expect(queries == 0, "known lengths never ask the driver");

  expect(!ksrt::disjoint(at(A + 512), 256, at(A), U), "one allocation, a length unknown: not");
  expect(!ksrt::disjoint(at(A), U, at(A + 512), U), "one allocation, both unknown: not");
  queries = 0;
  expect(ksrt::disjoint(at(A), 256, at(A + 256), U),
         "the known range ends before the other pointer: disjoint");
  expect(queries == 0, "... without asking the driver");

  expect(!ksrt::disjoint(at(A), U, at(0x1000), U), "a pointer the driver does not know: not");
  expect(!ksrt::disjoint(at(0x1000), U, at(A), U), "... in either place");
  expect(!ksrt::disjoint(nullptr, U, at(A), U), "NULL: not");
  query_fails = true;
  expect(!ksrt::disjoint(at(A), U, at(B), U), "the query fails: not");
  query_fails = false;
  query_lies = true;
  expect(!ksrt::disjoint(at(A), U, at(B), U), "a range without the pointer is not believed");
  query_lies = false;

  /* the kinds of memory */
  two_allocations(POOL, MANAGED);
  expect(ksrt::disjoint(at(A), U, at(B), U), "a pool allocation and managed memory: disjoint");
  two_allocations(MALLOC, MAPPED);
  expect(!ksrt::disjoint(at(A), U, at(B), U), "memory mapped with cuMemMap: not");
  two_allocations(PINNED, MALLOC);
  expect(!ksrt::disjoint(at(A), U, at(B), U), "pinned host memory: not");
  /* two chunks of one reserved range, ids of their own (as measured) */
  fakes[0] = {928, A, 2u << 20, MAPPED};
  fakes[1] = {929, A, 2u << 20, MAPPED};
  expect(!ksrt::disjoint(at(A), U, at(A + (1u << 20)), U), "two chunks of one range: not");
  ksrt::detail::set_pointer_query(nullptr);
}

static void alias_cache_cases() {
  const std::size_t U = ksrt::unknown;
  const int RECHECK = ksrt::alias_cache::recheck;
  ksrt::detail::set_pointer_query(fake_query);
  ksrt::alias_cache c;
  two_allocations();
  const void *p = at(A + 128), *q = at(B + 128);
  expect(c.disjoint(0, p, U, q, U) && queries == 2, "cache: first launch asks about both");
  queries = 0;
  expect(c.disjoint(0, p, U, q, U) && queries == 1, "cache: the same pointers, one call");
  expect(last_nattrs == 1, "cache: ... which asks for the witness's buffer id alone");
  queries = 0;
  expect(c.disjoint(0, p, U, q, 64) && queries == 1, "cache: a length changed, still one call");

  /* freed and allocated again: one allocation C (id 910) now holds both */
  fakes[0] = {910, A, 2u << 20, MALLOC};
  nfakes = 1;
  queries = 0;
  expect(!c.disjoint(0, p, U, q, U), "cache: reallocated into one allocation: not disjoint");
  expect(queries == 3, "cache: the witness's id changed, so both were asked in full");
  queries = 0;
  bool any = false;
  for (int i = 0; i < RECHECK - 1; i++)
    any = any || c.disjoint(0, p, U, q, U);
  expect(!any && queries == 0, "cache: not disjoint, remembered without a call");
  /* apart again under the same addresses: seen at the recheck */
  two_allocations();
  expect(c.disjoint(0, p, U, q, U) && queries == 2, "cache: asked again after RECHECK launches");

  /* both freed: the pointers are unknown */
  nfakes = 0;
  queries = 0;
  expect(!c.disjoint(0, p, U, q, U) && queries == 1, "cache: the witness freed: not disjoint");
  for (int i = 0; i < RECHECK - 1; i++)
    any = any || c.disjoint(0, p, U, q, U);
  expect(!any && queries == 1, "cache: an unknown pointer, remembered as not disjoint");

  /* q's allocation replaced (p's kept): the witness p still answers */
  two_allocations();
  expect(c.disjoint(0, p, U, q, U), "cache: allocated apart again");
  fakes[1] = {911, B, 1u << 20, MALLOC};
  queries = 0;
  expect(c.disjoint(0, p, U, q, U) && queries == 1, "cache: q reallocated apart, p the witness");

  /* p's allocation replaced at each launch: q becomes the witness */
  fakes[0] = {912, A, 1u << 20, MALLOC};
  queries = 0;
  expect(c.disjoint(0, p, U, q, U) && queries == 3, "cache: p reallocated, both asked");
  fakes[0] = {913, A, 1u << 20, MALLOC};
  queries = 0;
  expect(c.disjoint(0, p, U, q, U) && queries == 1, "cache: q is now the witness, one call");
  /* with q the witness: q freed, p's place allocated again over both */
  fakes[0] = {914, A, 2u << 20, MALLOC};
  nfakes = 1;
  expect(!c.disjoint(0, p, U, q, U), "cache: q's allocation changed into one with p: not");
  /* the same addresses mapped again by the application (cuMemMap) */
  two_allocations();
  for (int i = 0; i < RECHECK; i++)
    c.disjoint(0, p, U, q, U);
  expect(c.disjoint(0, p, U, q, U), "cache: apart, before the remapping");
  fakes[0] = {915, A, 1u << 20, MAPPED};
  expect(!c.disjoint(0, p, U, q, U), "cache: the witness's place mapped by cuMemMap: not");

  /* slots are separate; slots past SLOTS are not cached */
  two_allocations();
  const void *r = at(A + 4096);
  expect(c.disjoint(1, p, U, q, U) && !c.disjoint(2, p, U, r, U), "cache: two slots");
  queries = 0;
  expect(c.disjoint(1, p, U, q, U) && !c.disjoint(2, p, U, r, U) && queries == 1,
         "cache: two slots, one call for the disjoint one, none for the other");
  queries = 0;
  expect(c.disjoint(ksrt::alias_cache::slots, p, U, q, U) &&
             c.disjoint(ksrt::alias_cache::slots, p, U, q, U) && queries == 4,
         "cache: a slot past SLOTS asks both every time");
  queries = 0;
  expect(c.disjoint(3, at(A), 8, at(A + 8), 8) && queries == 0, "cache: known lengths, no call");
  ksrt::detail::set_pointer_query(nullptr);
}

/* The real driver path. Without a GPU (or driver): "not disjoint". With
 * one: two cudaMalloc buffers are disjoint, pointers into one are not,
 * host memory is not, and no error is left for the application. */
static void disjoint_real_driver() {
  const std::size_t U = ksrt::unknown;
  static float host[64];
  float *x = nullptr, *y = nullptr;
  const bool device = cudaMalloc((void **)&x, 4096) == cudaSuccess &&
                      cudaMalloc((void **)&y, 4096) == cudaSuccess;
  /* Without a driver the runtime reports its failed initialization on
   * every call, cudaGetLastError too: what must hold is that the checks
   * leave nothing new behind. */
  const cudaError_t before = cudaGetLastError();
  if (!device) {
    expect(!ksrt::disjoint(host, U, host + 32, U), "no GPU: host memory, not disjoint");
    expect(!ksrt::disjoint(&x, U, &y, U), "no GPU: not disjoint");
    ksrt::alias_cache c;
    expect(!c.disjoint(0, host, U, host + 32, U) && !c.disjoint(0, host, U, host + 32, U),
           "no GPU: the cache says not disjoint");
    expect(cudaGetLastError() == before, "no GPU: no CUDA error left behind");
    return;
  }
  expect(before == cudaSuccess, "GPU: cudaMalloc left no error");
  ksrt::alias_cache c;
  expect(ksrt::disjoint(x, U, y, U), "GPU: two cudaMalloc buffers are disjoint");
  expect(c.disjoint(0, x, U, y, U) && c.disjoint(0, x, U, y, U), "GPU: cached, disjoint");
  expect(!ksrt::disjoint(x, U, x + 16, U), "GPU: one buffer, unknown lengths: not");
  expect(!c.disjoint(1, x, U, x + 16, U) && !c.disjoint(1, x, U, x + 16, U), "GPU: cached, not");
  expect(!ksrt::disjoint(x, U, host, U) && !ksrt::disjoint(host, U, x, U), "GPU: host memory");
  float *pinned = nullptr;
  if (cudaMallocHost((void **)&pinned, 4096) == cudaSuccess) {
    expect(!ksrt::disjoint(x, U, pinned, U), "GPU: pinned host memory");
    cudaFreeHost(pinned);
  }
  expect(!ksrt::disjoint(x, U, nullptr, U), "GPU: NULL");
  /* y freed and allocated again: x (the witness) is alive and y is not in
   * it, so the cached answer stands */
  cudaFree(y);
  float *z = nullptr;
  expect(cudaMalloc((void **)&z, 4096) == cudaSuccess, "GPU: cudaMalloc again");
  expect(c.disjoint(0, x, U, y, U), "GPU: y reallocated, x alive: disjoint");
  if (z == y)
    expect(ksrt::disjoint(x, U, y, U), "GPU: y's new allocation, a fresh check agrees");
  /* the witness freed: the cache asks again and agrees with a fresh check */
  cudaFree(x);
  expect(c.disjoint(0, x, U, y, U) == ksrt::disjoint(x, U, y, U), "GPU: x freed, cache agrees");
  expect(!ksrt::disjoint(x, U, y, U), "GPU: a freed pointer is unknown");
  expect(cudaGetLastError() == cudaSuccess, "GPU: no CUDA error left behind");
  cudaFree(z);
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
  expect(differ(ksrt::output::kind_bf16, bw, bg, 6, 0.01, 0.0, &first) == 0, "bf16 within tolerance");
  expect(differ(ksrt::output::kind_bf16, bw, bg, 6, 0.001, 0.0, &first) == 1 && first == 0,
         "bf16 outside tolerance, element 0");
  expect(differ(ksrt::output::kind_bytes, bw, bg, 6, 0.01, 0.0, &first) == 1,
         "the same bytes compared as bytes differ");
  const std::uint16_t hw[2] = {0x3c00, 0x3c00}, hg[2] = {0x3c00, 0x3c01};
  expect(differ(ksrt::output::kind_f16, hw, hg, 4, 1e-3, 0.0, &first) == 0, "half within tolerance");
  expect(differ(ksrt::output::kind_f16, hw, hg, 4, 1e-4, 0.0, &first) == 1 && first == 1,
         "half outside tolerance, element 1");
  const float fw[2] = {1.0f, 2.0f}, fg[2] = {1.0f, 2.5f};
  expect(differ(ksrt::output::kind_f32, fw, fg, 8, 0.1, 0.0, &first) == 1 && first == 1, "f32");
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
    expect(!took && s.count(ksrt::path_off) == 2, "switched off");
  } else if (!device) {
    expect(!took && s.count(ksrt::path_no_device) == 2, "no device: the original");
  } else {
    expect(took && s.count(ksrt::path_variant) == 1 && s.count(ksrt::path_guards) == 1, "variant");
    expect(!took_other && other.count(ksrt::path_other_arch) == 1, "another architecture");
  }
  return fails;
}

static std::string read_file(const char *path) {
  std::string text;
  FILE *f = std::fopen(path, "r");
  if (!f)
    return text;
  char buf[512];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    text.append(buf, n);
  std::fclose(f);
  return text;
}

static int count_of(const std::string &text, const char *what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    n++;
  return n;
}

/* KERNELSMITH_STATS_FILE, alone or with KERNELSMITH_STATS: the lines are
 * appended to the file (two runs, four lines) and stderr gets none. */
static void stats_file(const std::string &self) {
  char path[] = "/tmp/ks_stats_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    expect(false, "mkstemp");
    return;
  }
  close(fd);
  unsetenv("KERNELSMITH_STATS");
  setenv("KERNELSMITH_STATS_FILE", path, 1);
  std::string err1 = run(self + " on 2>&1");
  setenv("KERNELSMITH_STATS", "1", 1);
  std::string err2 = run(self + " on 2>&1");
  unsetenv("KERNELSMITH_STATS_FILE");
  unsetenv("KERNELSMITH_STATS");
  const std::string text = read_file(path);
  expect(err1.find("kernelsmith:") == std::string::npos &&
             err2.find("kernelsmith:") == std::string::npos,
         "stats file: nothing on stderr");
  expect(count_of(text, "kernelsmith: saxpy at t.cu:1: variant ") == 2 &&
             count_of(text, "kernelsmith: saxpy at t.cu:2: variant ") == 2 &&
             count_of(text, "\n") == 4,
         "stats file: two runs appended, a line per site each");
  expect(count_of(text, ", no device ") == 4, "stats file: the lines of stderr's format");
  if (fails)
    std::fprintf(stderr, "stats file was:\n%s\nstderr was:\n%s%s", text.c_str(), err1.c_str(),
                 err2.c_str());
  unlink(path);
}

int main(int argc, char **argv) {
  if (argc > 1)
    return child(argv[1]);
  helpers();
  shadow_compare();
  disjoint_at_run_time();
  alias_cache_cases();
  disjoint_real_driver();
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
  stats_file(self);
  std::printf("runtime header: %s\n", fails ? "FAIL" : "ok");
  return fails != 0;
}
