/* launcher: kernelsmith-cc as a compiler launcher (launcher.c), and the
 * `stats` command that counts what it did. */
#ifndef KS_LAUNCHER_H
#define KS_LAUNCHER_H

#include <stdbool.h>

#include "ks_cli.h"

/* Whether a first word that is not a command names a compiler to launch
 * (a path, or nvcc, ccache, sccache, clang, clang++). */
bool ks_launcher_wanted(const char *word);
/* Runs the compiler command argv[0..argc) as described in launcher.c;
 * returns the compiler's exit status. */
int ks_launcher_run(ks_ctx *ctx, int argc, char **argv);

#endif
