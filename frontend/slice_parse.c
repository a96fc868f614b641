/* Re-parsing the file that defines a kernel, for the slicer, with the flags
 * the scan used for it: the file's own entry of compile_commands.json, or
 * the entry of the scanned file nearest to it (a header has none), plus the
 * user's -I/-D. Unlike the scan, it parses the device side (sm_90), as NVRTC
 * will compile it, keeps the detailed preprocessing record for every file
 * (macro definitions are part of what a slice copies) and uses no
 * precompiled header: one file is parsed, and a precompiled header would
 * cost a parse of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_fs.h"
#include "slice.h"

/* A scanned file that took its flags from the database, sharing the longest
 * directory prefix with `path` (as the scan lends flags to headers). */
static const char *nearest_with_flags(const ks_scan *scan, const char *path) {
  const char *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < scan->files.len; i++) {
    const ks_scanned_file *f = &scan->files.items[i];
    if (strcmp(f->flags_from, "compile_commands.json"))
      continue;
    size_t k = 0;
    while (path[k] && path[k] == f->path[k])
      k++;
    if (!best || k > best_len) {
      best = f->path;
      best_len = k;
    }
  }
  return best;
}

static int file_flags(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                      const char *path, ks_arena *arena, ks_strings *out, ks_strings *codegen,
                      bool *known) {
  ks_compdb *db = NULL;
  if (opts->build_dir) {
    if (ks_compdb_open(ctx, opts->build_dir, &db))
      return -1;
  } else if (!opts->no_compdb && scan->compile_db) {
    /* The database the scan settled on (it drops one that knows none of
     * the files). */
    char *dir = ks_path_dirname(scan->compile_db);
    if (ks_compdb_open(ctx, dir, &db))
      db = NULL;
    free(dir);
  }
  if (db && !ks_compdb_flags(db, arena, path, out)) {
    const char *near = nearest_with_flags(scan, path);
    if (near) {
      ks_compdb_flags(db, arena, near, out);
      *known = ks_compdb_codegen(db, arena, near, codegen);
    }
  } else if (db) {
    *known = ks_compdb_codegen(db, arena, path, codegen);
  }
  ks_compdb_close(db);
  return 0;
}

/* Errors in the user's files (the first few shown with -vv), and among
 * them the launches from device code clang 16 refuses on the device side
 * ("reference to __global__ function 'child' in __global__ function"). */
static void user_errors(ks_ctx *ctx, CXTranslationUnit unit, bool device, slice_parse *out) {
  unsigned n = clang_getNumDiagnostics(unit);
  for (unsigned i = 0; i < n; i++) {
    CXDiagnostic d = clang_getDiagnostic(unit, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error &&
        !clang_Location_isInSystemHeader(clang_getDiagnosticLocation(d))) {
      CXString text = clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions());
      const char *msg = clang_getCString(text);
      if (out->user_errors++ < 3)
        ks_debug(ctx, "slice (%s side): %s", device ? "device" : "host", msg);
      if (msg && strstr(msg, "reference to __global__ function"))
        out->lost_launches++;
      clang_disposeString(text);
    }
    clang_disposeDiagnostic(d);
  }
}

int ks_slice_parse(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                   const char *path, bool device, ks_arena *arena, slice_parse *out) {
  memset(out, 0, sizeof *out);
  int rc = 0;
  ks_strings flags = {0}, args = {0};
  snprintf(out->workdir, sizeof out->workdir, "/tmp/kernelsmith-slice-XXXXXX");
  if (!mkdtemp(out->workdir)) {
    rc = ks_fail(ctx, "cannot create a temporary directory under /tmp");
    goto out;
  }
  out->have_workdir = true;
  if (ks_clang_env_init(ctx, out->workdir, &out->env) ||
      file_flags(ctx, opts, scan, path, arena, &flags, &out->codegen, &out->compile_command)) {
    rc = -1;
    goto out;
  }
  ks_clang_args(arena, &out->env, &flags, opts->extra_args, opts->nextra, &args);
  /* The device side, for sm_90, is what NVRTC will compile: code under
   * `#if __CUDA_ARCH__ >= 800` is seen, code under `#ifndef __CUDA_ARCH__`
   * is not. */
  for (size_t i = 0; device && i < args.len; i++)
    if (!strcmp(args.items[i], "--cuda-host-only"))
      args.items[i] = "--cuda-device-only";
  for (size_t i = 0; i < args.len; i++)
    if (!strncmp(args.items[i], "-D", 2) && args.items[i][2])
      *ks_array_push(arena, &out->defines) = args.items[i] + 2;

  out->index = clang_createIndex(0, 0);
  unsigned options = CXTranslationUnit_KeepGoing | CXTranslationUnit_DetailedPreprocessingRecord;
  enum CXErrorCode err = CXError_Failure;
  if (!ks_fault(ctx, "slice_parse"))
    err = clang_parseTranslationUnit2(out->index, path, (const char *const *)args.items,
                                      (int)args.len, NULL, 0, options, &out->unit);
  if (err != CXError_Success || !out->unit) {
    out->unit = NULL;
    rc = ks_fail(ctx, "%s: libclang could not parse this file (error %d)", path, (int)err);
    goto out;
  }
  user_errors(ctx, out->unit, device, out);
out:
  return rc;
}

void ks_slice_parse_release(slice_parse *p) {
  if (p->unit)
    clang_disposeTranslationUnit(p->unit);
  if (p->index)
    clang_disposeIndex(p->index);
  if (p->have_workdir) {
    /* What ks_clang_env_init wrote, then the directory itself. */
    char path[sizeof p->workdir + 64];
    snprintf(path, sizeof path, "%s/stubs/texture_fetch_functions.h", p->workdir);
    remove(path);
    snprintf(path, sizeof path, "%s/stubs/kernelsmith_clang_prelude.h", p->workdir);
    remove(path);
    snprintf(path, sizeof path, "%s/stubs", p->workdir);
    rmdir(path);
    rmdir(p->workdir);
  }
  memset(p, 0, sizeof *p);
}
