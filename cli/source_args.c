/* The source options the commands share; see ks_source_args.h. */
#include "ks_source_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_alloc.h"

void ks_source_args_init(ks_source_args *a, int argc) {
  memset(a, 0, sizeof *a);
  a->extra = ks_xcalloc((size_t)argc + 1, sizeof *a->extra);
}

bool ks_source_args_option(ks_source_args *a, int c, const char *arg) {
  switch (c) {
  case 'p':
    a->scan.build_dir = arg;
    return true;
  case 'I':
  case 'D': { /* kept as one argument: "-Ipath", "-DNAME=1" */
    size_t n = strlen(arg) + 3;
    char *flag = ks_xmalloc(n);
    snprintf(flag, n, "-%c%s", c, arg);
    a->extra[a->nextra++] = flag;
    return true;
  }
  case KS_OPT_EXTRA_ARG:
    a->extra[a->nextra++] = ks_xstrdup(arg);
    return true;
  case KS_OPT_NO_COMPDB:
    a->scan.no_compdb = true;
    return true;
  default:
    return false;
  }
}

void ks_source_args_paths(ks_source_args *a, int argc, char **argv, int first) {
  static const char *const here[] = {"."};
  a->scan.paths = first < argc ? (const char *const *)argv + first : here;
  a->scan.npaths = first < argc ? (size_t)(argc - first) : 1;
  a->scan.extra_args = a->extra;
  a->scan.nextra = a->nextra;
}

void ks_source_args_release(ks_source_args *a) {
  for (size_t i = 0; i < a->nextra; i++)
    free((char *)a->extra[i]);
  free(a->extra);
  memset(a, 0, sizeof *a);
}

void ks_source_args_words(const ks_source_args *a, ks_arena *arena, ks_strings *out) {
  if (a->scan.build_dir)
    *ks_array_push(arena, out) = ks_arena_printf(arena, "--build-dir=%s", a->scan.build_dir);
  if (a->scan.no_compdb)
    *ks_array_push(arena, out) = "--no-compdb";
  /* -I and -D were kept as one argument each ("-Ipath"): the same there. */
  for (size_t i = 0; i < a->scan.nextra; i++)
    *ks_array_push(arena, out) = ks_arena_printf(arena, "--extra-arg=%s", a->scan.extra_args[i]);
  for (size_t i = 0; i < a->scan.npaths; i++)
    *ks_array_push(arena, out) = a->scan.paths[i];
}
