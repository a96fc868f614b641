/* ks_scan: reading a CUDA source tree as a compiler does.
 *
 * ks_scan_run parses every .cu file under the given paths with libclang
 * (flags from compile_commands.json where there is one), then the .cuh files
 * no .cu included, in parallel threads, and reports every kernel and every
 * launch site (see ks_model.h). A file that does not parse is reported with
 * its diagnostics and the others are still scanned.
 *
 * Ownership: the caller owns the ks_scan and releases it with
 * ks_scan_release; every string and array inside belongs to it. */
#ifndef KS_SCAN_H
#define KS_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_model.h"

typedef struct ks_scan_options {
  const char *const *paths;      /* files and directories to scan */
  size_t npaths;
  const char *build_dir;         /* holds compile_commands.json; NULL: look
                                    for one beside and above the paths */
  const char *const *extra_args; /* clang arguments added to every file
                                    (-I, -D, -std=...) */
  size_t nextra;
  unsigned jobs;                 /* parser threads; 0: one per CPU */
  bool no_pch;                   /* parse CUDA's headers anew for every file */
  bool no_compdb;                /* ignore compile_commands.json */
} ks_scan_options;

typedef enum ks_severity { KS_SEV_WARNING, KS_SEV_ERROR, KS_SEV_FATAL } ks_severity;

typedef struct ks_diag {
  ks_loc loc;
  ks_severity severity;
  const char *message;
} ks_diag;
typedef KS_ARRAY(ks_diag) ks_diags;

typedef enum ks_file_status {
  KS_FILE_OK,     /* parsed without errors in the user's code */
  KS_FILE_ERRORS, /* parsed, with errors: results may be incomplete */
  KS_FILE_FAILED  /* libclang could not parse it at all */
} ks_file_status;

typedef struct ks_scanned_file {
  const char *path;         /* absolute */
  ks_file_status status;
  const char *flags_from;   /* "compile_commands.json" or "defaults" */
  unsigned errors;          /* errors in the user's files */
  unsigned system_errors;   /* errors inside system headers (CUDA, CUB...) */
  unsigned warnings;
  double parse_ms;          /* libclang parse time */
  bool used_pch;            /* CUDA headers came from a precompiled header */
  ks_diags diags;           /* errors in the user's files (capped) */
  const char *first_system_error; /* a sample, for the report */
  const char *included_by;  /* a .cu file another scanned .cu includes
                               (`#include "kernels.cu"`) and that no
                               compile_commands.json entry compiles on its
                               own: read as part of that unit, its own parse
                               set aside (the path of the includer); NULL */
} ks_scanned_file;
typedef KS_ARRAY(ks_scanned_file) ks_scanned_files;

typedef struct ks_scan {
  ks_arena arena;            /* owns everything below */
  ks_kernels kernels;        /* sorted by file, then offset */
  ks_launches launches;      /* sorted by file, then offset */
  ks_scanned_files files;    /* in parse order */
  const char *compile_db;    /* compile_commands.json used, or NULL */
  const char *root;          /* common directory of the scanned paths */
  double wall_ms;            /* whole scan */
  struct ks_scan_arenas *tu_arenas; /* per-file arenas the results live in */
} ks_scan;

int ks_scan_run(ks_ctx *ctx, const ks_scan_options *opts, ks_scan *out);
void ks_scan_release(ks_scan *scan);

/* The libclang version string ("clang version 16.0.6"), malloc'd. */
char *ks_libclang_version(void);

#endif
