/* kernelsmith_dispatch.h: what a build patched by kernelsmith-cc includes.
 *
 * Header-only CUDA C++, depending on nothing of kernelsmith-cc's. A patched
 * launch site asks ksrt_enabled("kernel") before it runs a verified variant;
 * when the answer is no, the original launch runs exactly as written.
 *
 * Switches:
 *   -DKERNELSMITH_DISABLE at build time   every variant off, no runtime cost
 *   KERNELSMITH_DISABLE=1 (or "all")      every variant off
 *   KERNELSMITH_DISABLE=k1,k2             these kernels' variants off
 *
 * The environment is read once per process and cached, so the check on the
 * launch path is a load and a compare. */
#ifndef KERNELSMITH_DISPATCH_H
#define KERNELSMITH_DISPATCH_H

#define KSRT_VERSION_MAJOR 0
#define KSRT_VERSION_MINOR 1

#include <cstdlib>
#include <cstring>

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

} // namespace ksrt

/* True when the variants of `kernel` may run in this process. */
inline bool ksrt_enabled(const char *kernel) {
#ifdef KERNELSMITH_DISABLE
  (void)kernel;
  return false;
#else
  return !ksrt::list_names(ksrt::disabled_list(), kernel);
#endif
}

#endif
