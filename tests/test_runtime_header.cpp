// The runtime header's switches: KERNELSMITH_DISABLE as "1", "all" or a list.
// Plain C++ (the header is host code); run once per environment by re-exec.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "kernelsmith_dispatch.h"

static int expect(bool got, bool want, const char *what) {
  if (got != want) {
    std::fprintf(stderr, "FAIL: %s: got %d, want %d\n", what, got, want);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int fails = 0;
  fails += expect(ksrt::list_names("saxpy,gemv", "gemv"), true, "list names gemv");
  fails += expect(ksrt::list_names("saxpy,gemv", "gem"), false, "prefix is not a name");
  fails += expect(ksrt::list_names("all", "x"), true, "all");
  fails += expect(ksrt::list_names("1", "x"), true, "1");
  fails += expect(ksrt::list_names("", "x"), false, "empty");
  fails += expect(ksrt::list_names(nullptr, "x"), false, "unset");
  if (argc > 1) { // child: the environment was set by the parent
    bool want = std::strcmp(argv[1], "on") == 0;
    fails += expect(ksrt_enabled("saxpy"), want, argv[1]);
    return fails;
  }
  setenv("KERNELSMITH_DISABLE", "gemv,saxpy", 1);
  if (std::system((std::string(argv[0]) + " off").c_str()) != 0)
    fails++;
  setenv("KERNELSMITH_DISABLE", "gemv", 1);
  if (std::system((std::string(argv[0]) + " on").c_str()) != 0)
    fails++;
  std::printf("runtime header: %s\n", fails ? "FAIL" : "ok");
  return fails != 0;
}
