/* compile_nvcc: the compile service's nvcc side (compile.c calls it; see
 * ks_compile.h). Internal to backend/. */
#ifndef KS_COMPILE_NVCC_H
#define KS_COMPILE_NVCC_H

#include "ks_buf.h"
#include "ks_compile.h"

/* Sets c->nvcc and c->nvcc_version: $KERNELSMITH_NVCC, else
 * `toolkit_root`/bin/nvcc, if it runs and says its version; else leaves
 * them "". */
void ks_nvcc_find(ks_compiler *c, const char *toolkit_root);

/* Compiles `u` with nvcc into `cubin` (appended), nvcc's output into `log`,
 * and the lowered name of each name expression into lowered[0..nnames)
 * (malloc'd). Fails (ks_fail, one line: the first error, or why the names
 * were not found) when nvcc rejects the unit or its kernels cannot be
 * found. Safe to call from several threads at once. Fault site
 * "nvcc_compile". */
int ks_nvcc_compile(ks_ctx *ctx, const ks_compiler *c, const ks_compile_unit *u, ks_buf *cubin,
                    ks_buf *log, char **lowered, bool *rejected);
/* (*rejected: the failure is the unit's, and will recur: nvcc refused it,
 * or its cubin lacks a kernel; false for a failure to run nvcc at all.) */

/* `mangled` with every anonymous namespace's name ("_GLOBAL__N_1",
 * "_GLOBAL__N__6c2269fb_7_unit_cu_bf6f1d08", with its length prefix)
 * replaced by "@": NVRTC and nvcc name them differently. malloc'd. */
char *ks_nvcc_mangled_key(const char *mangled);

#endif
