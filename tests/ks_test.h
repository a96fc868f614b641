/* Shared by the C tests: where testdata is. The build bakes in the source
 * tree's path; KS_TESTDATA in the environment overrides it, so test binaries
 * built on one machine run against a copy of the tree on another. */
#ifndef KS_TEST_H
#define KS_TEST_H

#include <stdio.h>
#include <stdlib.h>

/* testdata/<rel> as a path; the result stays valid until the 8th next call. */
static inline const char *ks_testdata(const char *rel) {
  static char paths[8][4096];
  static unsigned next;
  const char *root = getenv("KS_TESTDATA");
  char *out = paths[next++ % 8];
  snprintf(out, sizeof paths[0], "%s/%s", root && *root ? root : KS_TESTDATA, rel);
  return out;
}

/* dir/name as a path; the result stays valid until the 8th next call. */
static inline const char *ks_test_path(const char *dir, const char *name) {
  static char paths[8][4096 + 256];
  static unsigned next;
  char *out = paths[next++ % 8];
  snprintf(out, sizeof paths[0], "%s/%s", dir, name);
  return out;
}

#endif
