/* ks_source_args: the options every command that reads sources shares
 * (scan, extract, spec, check, bench): -p/--build-dir, --no-compdb, -I, -D,
 * --extra-arg, and the paths that follow. Parsed into ks_scan_options.
 *
 * Ownership: the struct owns the extra-argument strings;
 * ks_source_args_release frees them. */
#ifndef KS_SOURCE_ARGS_H
#define KS_SOURCE_ARGS_H

#include <getopt.h>
#include <stdbool.h>

#include "ks_scan.h"

enum { KS_OPT_NO_COMPDB = 200, KS_OPT_EXTRA_ARG };

/* For getopt_long: the short options and the long ones to put in a table. */
#define KS_SOURCE_SHORT "p:I:D:"
#define KS_SOURCE_LONG                                                         \
  {"build-dir", required_argument, NULL, 'p'},                                 \
      {"no-compdb", no_argument, NULL, KS_OPT_NO_COMPDB},                      \
      {"extra-arg", required_argument, NULL, KS_OPT_EXTRA_ARG}

/* The lines of help text that describe them. */
#define KS_SOURCE_HELP                                                         \
  "  -p, --build-dir DIR  compile flags from DIR/compile_commands.json\n"      \
  "                       (default: look beside and above each PATH, and in build/)\n" \
  "      --no-compdb      ignore any compile_commands.json\n"                  \
  "  -I DIR, -D NAME[=V]  include directories and macros for every file\n"     \
  "      --extra-arg ARG  pass ARG to the parser (e.g. --extra-arg=-std=c++20)\n"

typedef struct ks_source_args {
  ks_scan_options scan;
  const char **extra; /* owned strings */
  size_t nextra;
} ks_source_args;

void ks_source_args_init(ks_source_args *a, int argc);
/* Takes getopt's option `c` when it is one of these; false otherwise. */
bool ks_source_args_option(ks_source_args *a, int c, const char *arg);
/* argv[first..] are the paths; none means the current directory. */
void ks_source_args_paths(ks_source_args *a, int argc, char **argv, int first);
void ks_source_args_release(ks_source_args *a);
/* The words that parse back into the same scan options (the paths last),
 * appended to *out: a command line another process runs (tune --mpi). */
void ks_source_args_words(const ks_source_args *a, ks_arena *arena, ks_strings *out);

#endif
