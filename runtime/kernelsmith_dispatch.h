/* kernelsmith_dispatch.h: what a build patched by kernelsmith-cc includes.
 *
 * Header-only CUDA C++ (the host side of a .cu file), depending on nothing
 * of kernelsmith-cc's; it needs the CUDA runtime API, which every .cu file
 * has. A patched launch site owns one `ksrt::site` (a function-local
 * static) and asks it whether the verified variant may run:
 *
 *     static ksrt::site ks_site("saxpy_kernel", "saxpy.cu:41", {90});
 *     if (ks_site.take(<the variant's requires guards>))
 *       saxpy_kernel_ks<<<...>>>(...);       // the variant
 *     else
 *       saxpy_kernel<<<grid, block>>>(...);  // the launch exactly as written
 *
 * take() says yes only when the variants are not switched off, the current
 * device's architecture is one the variant was verified on, and the guards
 * hold for these arguments. The switches and the architecture are settled
 * at a site's first launch when every device shares one architecture: the
 * fast path is then a load, the guards and a relaxed counter increment.
 * With devices of several architectures each launch asks which device is
 * current (cudaGetDevice; the architecture is cached per device).
 *
 * Switches (read once per process):
 *   -DKERNELSMITH_DISABLE at build time   every variant off, no runtime cost
 *   KERNELSMITH_DISABLE=1 (or "all")      every variant off
 *   KERNELSMITH_DISABLE=k1,k2             these kernels' variants off
 *   KERNELSMITH_STATS=1                   at exit, each site's counts on stderr:
 *                                         variant, off, other architecture,
 *                                         guards failed, no device
 *   KERNELSMITH_STATS_FILE=PATH           the same lines appended to PATH
 *                                         instead (one write each, O_APPEND:
 *                                         processes may share the file); the
 *                                         application's stderr stays its own
 *   KERNELSMITH_VERIFY=1                  shadow mode (ksrt::shadow): the
 *                                         variant and the original both run,
 *                                         on copies of the outputs; the
 *                                         original's results are kept and any
 *                                         difference is reported on stderr
 *
 * A `disjoint(p, q)` guard is an interval test when the site knows both
 * byte lengths. When it does not (ksrt::unknown), the CUDA driver is asked
 * which allocations hold p and q (cuPointerGetAttributes, reached through
 * the runtime's driver entry point: no new link flag): pointers into
 * different allocations (of memory the driver lays out itself) are
 * disjoint, anything else is not. The site's `static thread_local
 * ksrt::alias_cache` remembers the answer per guard: a "disjoint" costs
 * one driver call of one attribute per launch instead of two calls of six
 * (the buffer id of one pointer is checked to be the same), a "not
 * disjoint" none (asked again every 64 launches).
 *
 * Without a usable device (cudaGetDevice fails) the original runs; the
 * failed query's error is cleared so the application does not see it. */
#ifndef KERNELSMITH_DISPATCH_H
#define KERNELSMITH_DISPATCH_H

#define KSRT_VERSION_MAJOR 0
#define KSRT_VERSION_MINOR 4

/* The user's macros are in force where this header is included (after the
 * file's own includes): its names are lower case or prefixed, and the
 * function-like macros code often defines (min, max, abs, log2) are set
 * aside while it is read (the standard headers it includes among it). A patched site calls these through
 * parentheses, (ksrt::min)(a, b), out of such a macro's reach. */
#pragma push_macro("min")
#pragma push_macro("max")
#pragma push_macro("abs")
#pragma push_macro("log2")
#undef min
#undef max
#undef abs
#undef log2

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>


namespace ksrt {

/* Whether `list` (a comma list, or "1"/"all") names `kernel`. */
inline bool list_names(const char *list, const char *kernel) {
  if (!list || !*list)
    return false;
  if (!std::strcmp(list, "1") || !std::strcmp(list, "all"))
    return true;
  const std::size_t n = std::strlen(kernel);
  for (const char *p = list; *p;) {
    const char *end = std::strchr(p, ',');
    const std::size_t len = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
    if (len == n && !std::strncmp(p, kernel, n))
      return true;
    if (!end)
      break;
    p = end + 1;
  }
  return false;
}

/* The KERNELSMITH_DISABLE value, read once (C++11 guarantees the static is
 * initialized exactly once, also across threads). */
inline const char *disabled_list() {
  static const char *const value = std::getenv("KERNELSMITH_DISABLE");
  return value;
}

inline bool flag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

/* KERNELSMITH_STATS_FILE, read once; NULL when unset or empty. */
inline const char *stats_file() {
  static const char *const path = [] {
    const char *v = std::getenv("KERNELSMITH_STATS_FILE");
    return v && *v ? v : static_cast<const char *>(nullptr);
  }();
  return path;
}

inline bool stats_on() {
  static const bool on = flag("KERNELSMITH_STATS") || stats_file();
  return on;
}

inline bool verify_on() {
#ifdef KERNELSMITH_DISABLE
  return false;
#else
  static const bool on = flag("KERNELSMITH_VERIFY");
  return on;
#endif
}

/* ---- guard helpers: the functions a `requires` guard may call ------------- */

template <typename KsA, typename KsB> inline auto ceil_div(KsA a, KsB b) -> decltype(a / b) {
  return b ? (a + b - 1) / b : 0;
}
template <typename KsA, typename KsB> inline auto min(KsA a, KsB b) -> decltype(a + b) {
  return a < b ? a : b;
}
template <typename KsA, typename KsB> inline auto max(KsA a, KsB b) -> decltype(a + b) {
  return a < b ? b : a;
}
template <typename KsA> inline bool is_pow2(KsA a) { return a > 0 && (a & (a - 1)) == 0; }
template <typename KsA, typename KsB> inline auto round_up(KsA a, KsB b) -> decltype(a / b * b) {
  return ceil_div(a, b) * b;
}
/* Integer log2, rounded down; 0 for values below 2. */
template <typename KsA> inline KsA log2(KsA a) {
  KsA r = 0;
  while (a > 1) {
    a /= 2;
    r++;
  }
  return r;
}
template <typename KsA> inline KsA abs(KsA a) { return a < 0 ? -a : a; }
inline bool aligned(const volatile void *p, std::size_t bytes) {
  return bytes && reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

/* ---- disjoint(p, q): byte ranges, and the allocations asked at run time ---- */

/* A byte length not known at the site. */
constexpr std::size_t unknown = static_cast<std::size_t>(-1);

/* `elements` elements of `size` bytes, as a byte length for disjoint():
 * a length computed at the site from the spec or from the kernel's own
 * bounds may come out negative (a size of 0 or less) or too large to
 * count in bytes; both are unknown, never a wrapped number. */
template <typename KsN> inline std::size_t bytes_of(KsN elements, std::size_t size) {
  static_assert(std::is_integral<KsN>::value, "a buffer length is an integer");
  if (elements < 0 || size == 0)
    return unknown;
  const unsigned long long n = static_cast<unsigned long long>(elements);
  if (n > (static_cast<unsigned long long>(unknown) - 1) / size)
    return unknown;
  return static_cast<std::size_t>(n * size);
}

namespace detail {

/* [a, a + alen) ends at or before b (alen known). No overflow: the
 * difference is compared, not the end. */
inline bool ends_before(std::uintptr_t a, std::size_t alen, std::uintptr_t b) {
  return alen != unknown && a <= b && b - a >= alen;
}

/* cuPointerGetAttributes as this header calls it, declared here so that a
 * patched file needs neither <cuda.h> nor -lcuda: CUresult is an int (0 is
 * success), CUpointer_attribute an int, CUdeviceptr an integer of a
 * pointer's width. */
#if defined(_WIN32)
#define KSRT_DRIVER_API __stdcall
#else
#define KSRT_DRIVER_API
#endif
typedef std::conditional<sizeof(void *) == 8, unsigned long long, unsigned int>::type deviceptr;
typedef int(KSRT_DRIVER_API *pointer_query_fn)(unsigned int nattrs, int *attrs, void **data,
                                               deviceptr ptr);
enum {
  attr_buffer_id = 7,    /* unsigned long long */
  attr_is_managed = 8,   /* a boolean */
  attr_legacy_ipc = 10,  /* a boolean: cudaMalloc / cuMemAlloc memory */
  attr_range_start = 11, /* CUdeviceptr */
  attr_range_size = 12,  /* size_t */
  attr_mempool = 17      /* CUmemoryPool: cudaMallocAsync memory */
};

/* The driver's cuPointerGetAttributes, resolved once per process through
 * the runtime; NULL when there is no driver (or it lacks the symbol). The
 * runtime error a failed resolution leaves is cleared. */
inline pointer_query_fn resolve_pointer_query() {
  void *fn = nullptr;
#if CUDART_VERSION >= 12050
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const bool ok = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 12000,
                                                   cudaEnableDefault, &found) == cudaSuccess &&
                  found == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const bool ok = cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn, cudaEnableDefault,
                                          &found) == cudaSuccess &&
                  found == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 11030
  const bool ok =
      cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn, cudaEnableDefault) == cudaSuccess;
#else
  const bool ok = false; /* no entry points before CUDA 11.3: every pointer is unknown */
#endif
  if (!ok || !fn) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<pointer_query_fn>(fn);
}

inline pointer_query_fn driver_pointer_query() {
  static const pointer_query_fn fn = resolve_pointer_query();
  return fn;
}

inline std::atomic<pointer_query_fn> &pointer_query_hook() {
  static std::atomic<pointer_query_fn> hook{nullptr};
  return hook;
}

/* FOR TESTS: answer pointer queries with `fn` (the signature of
 * cuPointerGetAttributes, see pointer_query_fn) instead of the driver, so
 * that the run-time disjointness check can be tested without a GPU;
 * nullptr goes back to the driver. Not for patched programs. */
inline void set_pointer_query(pointer_query_fn fn) {
  pointer_query_hook().store(fn, std::memory_order_relaxed);
}

/* One allocation as the driver describes it. */
struct allocation {
  unsigned long long id;  /* process-wide unique, never reused */
  std::uintptr_t start;   /* the address range it owns */
  std::size_t size;
  bool single;            /* memory the driver maps at this range only */
};

/* Two allocations whose bytes cannot meet: different ids, address ranges
 * apart, and both of memory the driver lays out itself (cudaMalloc,
 * cudaMallocAsync pools, managed memory), which no other address maps.
 * Memory an application maps with cuMemMap is never "apart": one physical
 * allocation can be mapped at two addresses (measured on an NVIDIA H200:
 * two ids, two ranges, the same bytes), and a buffer may span chunks that
 * have ids of their own in one reserved range. Pinned or registered host
 * memory is not either (the same pages can be mapped twice on the host). */
inline bool apart(const allocation &a, const allocation &b) {
  return a.single && b.single && a.id != b.id &&
         (a.start + a.size <= b.start || b.start + b.size <= a.start);
}

/* The allocation holding address `a`, in one driver call; false when it
 * is unknown: NULL, plain host memory, no driver, the call failed, or the
 * driver's answer is empty (for an address it does not know
 * cuPointerGetAttributes succeeds with zeros) or does not contain `a`. */
inline bool allocation_of(std::uintptr_t a, allocation *out) {
#ifdef KERNELSMITH_DISABLE
  (void)a;
  (void)out;
  return false; /* every variant is off: the guards' answer is not used */
#else
  pointer_query_fn fn = pointer_query_hook().load(std::memory_order_relaxed);
  if (!fn)
    fn = driver_pointer_query();
  if (!fn || !a)
    return false;
  int attrs[6] = {attr_buffer_id, attr_range_start, attr_range_size,
                  attr_is_managed, attr_legacy_ipc, attr_mempool};
  /* booleans and handles land in zeroed 8-byte words, whatever width the
   * driver writes */
  unsigned long long id = 0, managed = 0, legacy_ipc = 0, pool = 0;
  deviceptr start = 0;
  std::size_t size = 0;
  void *data[6] = {&id, &start, &size, &managed, &legacy_ipc, &pool};
  if (fn(6, attrs, data, static_cast<deviceptr>(a)) != 0)
    return false;
  const std::uintptr_t s = static_cast<std::uintptr_t>(start);
  if (!id || !size || s > a || a - s >= size || size > UINTPTR_MAX - s)
    return false;
  *out = allocation{id, s, size, managed || legacy_ipc || pool};
  return true;
#endif
}

/* The buffer id of the allocation holding address `a`, one attribute in
 * one driver call: what a launch with the same pointers asks of its
 * witness (alias_cache). 0 when it is unknown, as in allocation_of. */
inline unsigned long long buffer_id_of(std::uintptr_t a) {
#ifdef KERNELSMITH_DISABLE
  (void)a;
  return 0;
#else
  pointer_query_fn fn = pointer_query_hook().load(std::memory_order_relaxed);
  if (!fn)
    fn = driver_pointer_query();
  if (!fn || !a)
    return 0;
  int attr = attr_buffer_id;
  unsigned long long id = 0;
  void *data = &id;
  if (fn(1, &attr, &data, static_cast<deviceptr>(a)) != 0)
    return 0;
  return id;
#endif
}

/* Both pointers known to the driver, in allocations apart. p is asked
 * first; q is not asked when p is unknown. */
inline bool in_different_allocations(std::uintptr_t p, std::uintptr_t q) {
  allocation pa, qa;
  return allocation_of(p, &pa) && allocation_of(q, &qa) && apart(pa, qa);
}

} // namespace detail

/* [p, p + pbytes) and [q, q + qbytes) do not overlap.
 *
 * Both lengths known: the interval test, no driver call. A length unknown
 * (ksrt::unknown): true at once when the range of known length ends at or
 * before the other pointer (the other range starts there); otherwise the
 * allocations that hold p and q, asked of the CUDA driver: pointers into
 * different allocations are disjoint; pointers into one allocation are
 * not; a pointer the driver does not know (host memory, NULL, no driver)
 * is not disjoint from anything (the original kernel runs), and neither is
 * memory whose bytes another address may map (detail::apart). This rests
 * on each range lying inside the allocation of its pointer, which a kernel
 * that stays in its buffers guarantees.
 *
 * The driver is asked on every call: one or two calls of 50 to 90 ns each
 * measured on an NVIDIA H200 (driver 580), 200 ns for a plain host
 * pointer; a launch site uses an alias_cache instead. */
inline bool disjoint(const volatile void *p, std::size_t pbytes, const volatile void *q,
                     std::size_t qbytes) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(q);
  if (detail::ends_before(a, pbytes, b) || detail::ends_before(b, qbytes, a))
    return true;
  if (pbytes != unknown && qbytes != unknown)
    return false;
  return detail::in_different_allocations(a, b);
}

/* disjoint() with a memory per guard, for a launch site:
 *
 *     static thread_local ksrt::alias_cache ks_alias;
 *     ... ks_alias.disjoint(0, p, pbytes, q, qbytes) && ks_alias.disjoint(1, ...)
 *
 * (thread_local: one cache per thread per site, no locking; a cache must
 * not be shared between threads.) The interval
 * test is done on every call, as in ksrt::disjoint; only the driver's part
 * is remembered, per slot, for the last two pointers (lengths are not part
 * of the key: the driver's answer depends on the pointers alone).
 *
 *   - "Disjoint" is remembered with the allocation of ONE of the pointers,
 *     the witness. A launch with the same two pointers asks the driver
 *     for the buffer id of the witness alone (one call, one attribute):
 *     the same id, the answer stands; otherwise both allocations are
 *     asked in full (three calls, only when memory changed).
 *   - "Not disjoint" (one allocation, memory that may be mapped twice, a
 *     pointer unknown) is answered from memory for the next RECHECK - 1
 *     launches with the same pointers, with no call; then they are asked
 *     again. Answering "not disjoint" is always safe (the original runs);
 *     the recheck only bounds how long a site stays on the original after
 *     its memory changed under the same addresses.
 *
 * Why a remembered "disjoint" is right. Ids are process-wide unique and
 * never reused; live allocations own address ranges that do not meet, and
 * nothing else can be mapped inside one. When the answer was given, the
 * witness w was in allocation X (range R) and the other pointer v in an
 * allocation apart from X, so v was outside R; X is memory the driver maps
 * at R only (detail::apart). Now w's allocation has X's id: X was never
 * freed (a freed id never comes back), so it is the same allocation, which
 * still owns R (an allocation neither moves nor grows) and still has no
 * other address. v has the same
 * value, so it is still outside R. w's bytes lie in R; v's bytes lie in
 * whatever holds v now (its old allocation, one made since at its place,
 * host memory, nothing), which cannot be inside R nor map X's memory
 * elsewhere. So the two ranges are disjoint, whichever pointer is the
 * witness.
 *
 * The witness is p at first. When the witness's allocation is what changed
 * (p a buffer freed and allocated again between launches, q a long-lived
 * one), the other pointer becomes the witness, so that a site with one
 * stable pointer comes back to one call per launch. By the argument above
 * either pointer may be the witness. Slots from SLOTS on are not cached. */
class alias_cache {
public:
  enum { slots = 8, recheck = 64 };

  bool disjoint(unsigned slot, const volatile void *p, std::size_t pbytes,
                const volatile void *q, std::size_t qbytes) {
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(q);
    if (detail::ends_before(a, pbytes, b) || detail::ends_before(b, qbytes, a))
      return true;
    if (pbytes != unknown && qbytes != unknown)
      return false;
    if (slot >= slots)
      return detail::in_different_allocations(a, b);
    return slots_[slot].answer(a, b);
  }

private:
  enum { slot_empty, slot_apart, slot_not_apart };
  struct entry {
    std::uintptr_t p = 0, q = 0;   /* the pointers of the remembered answer */
    detail::allocation witness{};  /* APART: the allocation of p, or of q when witness_q */
    unsigned wait = 0;             /* NOT_APART: launches left before asking again */
    unsigned char state = slot_empty;
    bool witness_q = false;

    bool answer(std::uintptr_t a, std::uintptr_t b) {
      const bool again = state != slot_empty && p == a && q == b;
      if (again && state == slot_not_apart && wait > 0) {
        wait--;
        return false;
      }
      detail::allocation pa{}, qa{};
      bool known, flip = false;
      if (again && state == slot_apart) {
        /* The id alone: an allocation keeps its id, range and kind for
         * life and ids are never reused, so the same id is the same live
         * allocation X (one attribute costs the driver less than six). */
        const unsigned long long id = detail::buffer_id_of(witness_q ? b : a);
        if (!id)
          return not_apart(a, b);
        if (id == witness.id)
          return true;
        detail::allocation &now = witness_q ? qa : pa;
        if (!detail::allocation_of(witness_q ? b : a, &now))
          return not_apart(a, b);
        flip = true; /* the witness's allocation changed: the other may outlive it */
        known = witness_q ? detail::allocation_of(a, &pa) : detail::allocation_of(b, &qa);
      } else {
        known = detail::allocation_of(a, &pa) && detail::allocation_of(b, &qa);
      }
      if (!known || !detail::apart(pa, qa))
        return not_apart(a, b);
      witness_q = flip && !witness_q;
      witness = witness_q ? qa : pa;
      p = a;
      q = b;
      state = slot_apart;
      return true;
    }
    bool not_apart(std::uintptr_t a, std::uintptr_t b) {
      p = a;
      q = b;
      state = slot_not_apart;
      wait = recheck - 1;
      return false;
    }
  };
  entry slots_[slots];
};

/* ---- the device's architecture, cached per device ------------------------ */

enum { max_devices = 64 };

/* 10 * major + minor of device `dev`; 0 when it cannot be queried (the
 * error is cleared). */
inline int arch_of(int dev) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return 10 * major + minor;
}

/* 10 * major + minor of the current device; 0 when there is no usable
 * device (the error is cleared). */
inline int current_arch() {
  static std::atomic<int> cache[max_devices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev < 0 || dev >= max_devices)
    return 0;
  int arch = cache[dev].load(std::memory_order_relaxed);
  if (arch)
    return arch;
  arch = arch_of(dev);
  cache[dev].store(arch, std::memory_order_relaxed);
  return arch;
}

/* The architecture every visible device shares, queried once per process;
 * 0 when they differ or none is usable. With one architecture in the
 * machine (the common case) a site decides once and its fast path asks
 * the runtime nothing; otherwise each launch looks at the current device. */
inline int uniform_arch() {
  static const int value = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0 || n > max_devices) {
      (void)cudaGetLastError();
      return 0;
    }
    int first = 0;
    for (int d = 0; d < n; d++) {
      const int a = arch_of(d);
      if (!a || (first && a != first))
        return 0;
      first = a;
    }
    return first;
  }();
  return value;
}

/* ---- launch sites ---------------------------------------------------------- */

enum path { path_variant, path_off, path_other_arch, path_guards, path_no_device, npaths };

inline const char *path_name(int p) {
  static const char *const names[npaths] = {"variant", "off", "other architecture",
                                            "guards failed", "no device"};
  return p >= 0 && p < npaths ? names[p] : "?";
}

class site;

/* Every site that has been through take(), for the statistics at exit. */
struct registry {
  std::mutex lock;
  std::vector<site *> sites;
  static registry &get() {
    static registry *r = new registry; /* never destroyed: atexit may run late */
    return *r;
  }
};

class site {
public:
  enum { max_archs = 8 };
  site(const char *kernel, const char *where, std::initializer_list<int> archs)
      : kernel_(kernel), where_(where) {
    for (int a : archs)
      if (narchs_ < max_archs)
        archs_[narchs_++] = a;
    for (auto &c : counts_)
      c.store(0, std::memory_order_relaxed);
    if (stats_on()) {
      registry &r = registry::get();
      std::lock_guard<std::mutex> g(r.lock);
      if (r.sites.empty())
        std::atexit(print_stats);
      r.sites.push_back(this);
    }
  }
  site(const site &) = delete;
  site &operator=(const site &) = delete;

  /* Whether the variant runs here; counts the answer. */
  bool take(bool guards_hold) {
    const int p = decide(guards_hold);
    counts_[p].fetch_add(1, std::memory_order_relaxed);
    return p == path_variant;
  }

  unsigned long long count(int p) const { return counts_[p].load(std::memory_order_relaxed); }
  const char *kernel() const { return kernel_; }
  const char *where() const { return where_; }

  /* The site's statistics line (with its newline). */
  std::vector<char> stats_line() const {
    std::vector<char> line(256 + std::strlen(kernel_) + std::strlen(where_));
    int n = std::snprintf(line.data(), line.size(), "kernelsmith: %s at %s:", kernel_, where_);
    for (int p = 0; p < npaths && n >= 0 && static_cast<std::size_t>(n) < line.size(); p++)
      n += std::snprintf(line.data() + n, line.size() - n, " %s %llu%s", path_name(p), count(p),
                         p + 1 < npaths ? "," : "\n");
    line.resize(n >= 0 && static_cast<std::size_t>(n) < line.size() ? n : 0);
    return line;
  }

  /* At exit: one line per site, to KERNELSMITH_STATS_FILE or, when it is
   * unset or cannot be opened, to stderr. The file is opened for appending
   * (O_APPEND) with a buffer larger than any line and flushed after each:
   * one write per line, so that the lines of processes sharing the file
   * do not mix. (<cstdio> only: no POSIX header in the user's file.) */
  static void print_stats() {
    registry &r = registry::get();
    std::lock_guard<std::mutex> g(r.lock);
    std::vector<std::vector<char>> lines;
    std::size_t longest = 0;
    for (site *s : r.sites) {
      lines.push_back(s->stats_line());
      longest = lines.back().size() > longest ? lines.back().size() : longest;
    }
    const char *path = stats_file();
    std::FILE *f = path ? std::fopen(path, "a") : nullptr;
    if (path && !f)
      std::fprintf(stderr, "kernelsmith: cannot open KERNELSMITH_STATS_FILE %s\n", path);
    std::vector<char> buffer(longest + 1); /* outlives f */
    if (f && std::setvbuf(f, buffer.data(), _IOFBF, buffer.size()) != 0) {
      std::fclose(f);
      f = nullptr;
      std::fprintf(stderr, "kernelsmith: cannot write KERNELSMITH_STATS_FILE %s\n", path);
    }
    for (const std::vector<char> &line : lines) {
      std::fwrite(line.data(), 1, line.size(), f ? f : stderr);
      std::fflush(f ? f : stderr);
    }
    if (f)
      std::fclose(f);
  }

private:
  /* What does not change during the process, settled at the first launch:
   * OFF or OTHER_ARCH for good, READY (only the guards are left to check)
   * or PER_LAUNCH (devices of several architectures: ask each time). */
  enum { unsettled = -1, ready = npaths, per_launch };
  int settle() const {
    if (list_names(disabled_list(), kernel_))
      return path_off;
    const int arch = uniform_arch();
    if (!arch)
      return per_launch;
    return knows(arch) ? static_cast<int>(ready) : static_cast<int>(path_other_arch);
  }
  bool knows(int arch) const {
    bool known = false;
    for (int i = 0; i < narchs_; i++)
      known = known || archs_[i] == arch;
    return known;
  }
  int decide(bool guards_hold) const {
#ifdef KERNELSMITH_DISABLE
    (void)guards_hold;
    return path_off;
#else
    int s = settled_.load(std::memory_order_relaxed);
    if (s == unsettled) {
      s = settle(); /* threads racing here compute the same answer */
      settled_.store(s, std::memory_order_relaxed);
    }
    if (s == ready)
      return guards_hold ? path_variant : path_guards;
    if (s != per_launch)
      return s;
    const int arch = current_arch();
    if (!arch)
      return path_no_device;
    if (!knows(arch))
      return path_other_arch;
    return guards_hold ? path_variant : path_guards;
#endif
  }

  const char *kernel_;
  const char *where_;
  int archs_[max_archs] = {0};
  int narchs_ = 0;
  mutable std::atomic<int> settled_{unsettled};
  std::atomic<unsigned long long> counts_[npaths];
};

/* ---- shadow mode (KERNELSMITH_VERIFY=1) ----------------------------------- */

/* An output of the launch: where, how many bytes, and how to compare. */
struct output {
  void *ptr;
  std::size_t bytes;
  enum kind_t {
    kind_bytes, kind_f32, kind_f64, kind_f16, kind_bf16
#if !defined(BYTES) && !defined(F32) && !defined(F64) && !defined(F16) && !defined(BF16)
    /* The names sites patched before version 0.4 use, where no macro of
     * the user's takes them. */
    , BYTES = kind_bytes, F32 = kind_f32, F64 = kind_f64, F16 = kind_f16, BF16 = kind_bf16
#endif
  } kind;
  double atol, rtol;
};

/* The value of a half or bfloat16 element (its bits), for comparing on
 * the host without cuda_fp16.h's host support. */
inline float half_bits_to_float(std::uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0    ? std::ldexp((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : std::ldexp((float)(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}
inline float bf16_bits_to_float(std::uint16_t b) {
  std::uint32_t u = (std::uint32_t)b << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

inline bool close_enough(double want, double got, double atol, double rtol) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  return want == got || std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

/* Compares an output's two copies element by element: floats within the
 * output's tolerance, anything else byte for byte. `*bad` counts the
 * elements that differ, `*first` is the first. */
inline void compare_output(const output &o, const unsigned char *want, const unsigned char *got,
                           std::size_t *bad, std::size_t *first) {
  std::size_t es = o.kind == output::kind_f32 ? 4
                   : o.kind == output::kind_f64 ? 8
                   : o.kind == output::kind_f16 || o.kind == output::kind_bf16 ? 2
                                                                      : 1;
  for (std::size_t e = 0; e < o.bytes / es; e++) {
    bool ok;
    if (o.kind == output::kind_f32) {
      float a, b;
      std::memcpy(&a, want + 4 * e, 4);
      std::memcpy(&b, got + 4 * e, 4);
      ok = close_enough(a, b, o.atol, o.rtol);
    } else if (o.kind == output::kind_f64) {
      double a, b;
      std::memcpy(&a, want + 8 * e, 8);
      std::memcpy(&b, got + 8 * e, 8);
      ok = close_enough(a, b, o.atol, o.rtol);
    } else if (o.kind == output::kind_f16 || o.kind == output::kind_bf16) {
      std::uint16_t a, b;
      std::memcpy(&a, want + 2 * e, 2);
      std::memcpy(&b, got + 2 * e, 2);
      ok = o.kind == output::kind_f16
               ? close_enough(half_bits_to_float(a), half_bits_to_float(b), o.atol, o.rtol)
               : close_enough(bf16_bits_to_float(a), bf16_bits_to_float(b), o.atol, o.rtol);
    } else {
      ok = want[e] == got[e];
    }
    if (!ok && !(*bad)++)
      *first = e;
  }
}

/* Runs around the two launches of a site in shadow mode:
 *
 *     ksrt::shadow sh(ks_site, {{out, n * sizeof(float), ksrt::output::F32, 1e-5, 1e-4}}, stream);
 *     variant<<<...>>>(...);
 *     sh.between();                // the variant's outputs saved, the inputs restored
 *     original<<<...>>>(...);
 *     sh.finish();                 // compared; the original's results stay
 *
 * The constructor snapshots every output (in-place buffers included), so
 * the original sees exactly what it would have seen. Everything is
 * synchronous on `stream`: shadow mode is for canary runs, not speed. */
class shadow {
public:
  shadow(const site &s, std::initializer_list<output> outs, cudaStream_t stream = 0)
      : site_(s), outs_(outs), stream_(stream) {
    for (const output &o : outs_) {
      void *before = nullptr;
      if (ok_ && cudaMalloc(&before, o.bytes ? o.bytes : 1) == cudaSuccess) {
        saved_.push_back(before);
        ok_ = cudaMemcpyAsync(before, o.ptr, o.bytes, cudaMemcpyDeviceToDevice, stream_) ==
              cudaSuccess;
      } else {
        ok_ = false;
      }
    }
    if (!ok_)
      warn("cannot snapshot the outputs; the results are not compared");
  }
  shadow(const shadow &) = delete;
  shadow &operator=(const shadow &) = delete;
  ~shadow() {
    for (void *p : saved_)
      cudaFree(p);
  }

  /* After the variant: its outputs to the host, the snapshot back. */
  void between() {
    if (!ok_)
      return;
    variant_.resize(outs_.size());
    for (std::size_t i = 0; i < outs_.size() && ok_; i++) {
      variant_[i].resize(outs_[i].bytes);
      ok_ = cudaMemcpyAsync(variant_[i].data(), outs_[i].ptr, outs_[i].bytes,
                            cudaMemcpyDeviceToHost, stream_) == cudaSuccess &&
            cudaMemcpyAsync(outs_[i].ptr, saved_[i], outs_[i].bytes, cudaMemcpyDeviceToDevice,
                            stream_) == cudaSuccess;
    }
    ok_ = ok_ && cudaStreamSynchronize(stream_) == cudaSuccess;
    if (!ok_)
      warn("the variant's outputs could not be read; the results are not compared");
  }

  /* After the original: compare, report the first difference per output. */
  void finish() {
    if (!ok_ || cudaStreamSynchronize(stream_) != cudaSuccess)
      return;
    for (std::size_t i = 0; i < outs_.size(); i++) {
      std::vector<unsigned char> orig(outs_[i].bytes);
      if (cudaMemcpy(orig.data(), outs_[i].ptr, outs_[i].bytes, cudaMemcpyDeviceToHost) !=
          cudaSuccess)
        return;
      std::size_t bad = 0, first = 0;
      compare_output(outs_[i], orig.data(), variant_[i].data(), &bad, &first);
      if (bad)
        std::fprintf(stderr,
                     "kernelsmith: VERIFY %s at %s: output %zu differs at %zu element(s), first "
                     "at %zu\n",
                     site_.kernel(), site_.where(), i, bad, first);
    }
  }

private:
  void warn(const char *what) const {
    std::fprintf(stderr, "kernelsmith: VERIFY %s at %s: %s\n", site_.kernel(), site_.where(), what);
  }

  const site &site_;
  std::vector<output> outs_;
  cudaStream_t stream_;
  std::vector<void *> saved_;
  std::vector<std::vector<unsigned char>> variant_;
  bool ok_ = true;
};

} // namespace ksrt

/* True when the variants of `kernel` may run in this process (the switches
 * alone; a site's take() also checks the architecture and the guards). */
inline bool ksrt_enabled(const char *kernel) {
#ifdef KERNELSMITH_DISABLE
  (void)kernel;
  return false;
#else
  return !ksrt::list_names(ksrt::disabled_list(), kernel);
#endif
}

#pragma pop_macro("log2")
#pragma pop_macro("abs")
#pragma pop_macro("max")
#pragma pop_macro("min")

#endif
