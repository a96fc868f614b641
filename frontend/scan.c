/* The scan: collect files, parse them in parallel threads, extract kernels and
 * launch sites from each translation unit, merge.
 *
 * .cu files are parsed first; the .cuh files that none of them included are
 * parsed afterwards on their own, so header-only kernels are found too. */
#include "ks_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"
#include "ks_fs.h"
#include "merge.h"
#include "pch.h"
#include "tu.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

char *ks_libclang_version(void) {
  CXString s = clang_getClangVersion();
  char *out = ks_xstrdup(clang_getCString(s));
  clang_disposeString(s);
  return out;
}

/* ---- file collection -------------------------------------------------- */

typedef struct file_list {
  char **cu;   /* .cu files, and any file named explicitly */
  size_t ncu, capcu;
  char **cuh;  /* .cuh files found by walking */
  size_t ncuh, capcuh;
} file_list;

static void add_path(char ***items, size_t *n, size_t *cap, const char *path) {
  char *real = ks_realpath(path);
  if (!real)
    return;
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*items)[i], real)) {
      free(real);
      return;
    }
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    *items = ks_xrealloc(*items, *cap * sizeof **items);
  }
  (*items)[(*n)++] = real;
}

static int collect(const char *path, void *data) {
  file_list *files = data;
  if (ks_path_has_ext(path, ".cu"))
    add_path(&files->cu, &files->ncu, &files->capcu, path);
  else if (ks_path_has_ext(path, ".cuh"))
    add_path(&files->cuh, &files->ncuh, &files->capcuh, path);
  return 0;
}

/* Every source must be readable. libclang reports a file it cannot open as
 * a parse failure, which a tree of such files turns into "no kernels": the
 * scan says why instead. KERNELSMITH_FAULTS=read:N makes the Nth source
 * checked here (.cu files first, in walk order) unreadable, for tests that
 * run where permissions do not apply (as root). */
static int check_readable(ks_ctx *ctx, char *const *paths, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int fd = -1;
    if (ks_fault(ctx, "read"))
      errno = EACCES;
    else
      fd = open(paths[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return ks_fail(ctx, "%s: cannot read: %s", paths[i], strerror(errno));
    close(fd);
  }
  return 0;
}

static void free_list(char **items, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(items[i]);
  free(items);
}

/* ---- parsing ---------------------------------------------------------- */

typedef struct job {
  const char *path;
  ks_strings flags;       /* the file's own flags (in the job arena) */
  const char *flags_from; /* "compile_commands.json" or "defaults" */
} job;

typedef struct pool {
  ks_ctx *ctx;
  const ks_scan_options *opts;
  const ks_clang_env *env;
  ks_pch_cache *pch;
  job *jobs;
  size_t njobs;
  atomic_size_t next;
  ks_tu_result **results;
} pool;

static void collect_diagnostics(ks_tu *tu) {
  ks_scanned_file *f = &tu->out->file;
  unsigned n = clang_getNumDiagnostics(tu->unit);
  for (unsigned i = 0; i < n; i++) {
    CXDiagnostic d = clang_getDiagnostic(tu->unit, i);
    enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);
    if (sev < CXDiagnostic_Error) {
      if (sev == CXDiagnostic_Warning)
        f->warnings++;
      clang_disposeDiagnostic(d);
      continue;
    }
    CXSourceLocation loc = clang_getDiagnosticLocation(d);
    const char *msg = ks_tu_string(tu, clang_getDiagnosticSpelling(d));
    ks_loc where = ks_tu_loc(tu, loc);
    if (clang_Location_isInSystemHeader(loc)) {
      if (!f->system_errors++)
        f->first_system_error = ks_arena_printf(tu->arena, "%s:%u: %s", where.file ? where.file : "?",
                                                where.line, msg);
    } else {
      f->errors++;
      if (f->diags.len < 50) {
        ks_diag *out = ks_array_push(tu->arena, &f->diags);
        out->loc = where.file ? where : (ks_loc){f->path, 0, 0, 0};
        out->severity = sev == CXDiagnostic_Fatal ? KS_SEV_FATAL : KS_SEV_ERROR;
        out->message = msg;
      }
    }
    clang_disposeDiagnostic(d);
  }
}

static ks_tu_result *parse_one(pool *p, CXIndex index, const job *j) {
  ks_tu_result *res = ks_xcalloc(1, sizeof *res);
  ks_arena *arena = &res->arena;
  res->main_file = ks_arena_strdup(arena, j->path);
  res->file.path = res->main_file;
  res->file.flags_from = j->flags_from;

  ks_strings args = {0};
  ks_clang_args(arena, p->env, &j->flags, p->opts->extra_args, p->opts->nextra, &args);
  const char *pch = p->opts->no_pch ? NULL : ks_pch_get(p->pch, &args);
  if (!pch && !p->opts->no_pch)
    ks_debug(p->ctx, "%s: no precompiled headers for these flags", j->path);
  if (pch) {
    *ks_array_push(arena, &args) = "-include-pch";
    *ks_array_push(arena, &args) = pch;
  }

  /* The detailed preprocessing record lets a launch written inside a macro
   * be read from the macro's definition. */
  unsigned options = CXTranslationUnit_KeepGoing | CXTranslationUnit_DetailedPreprocessingRecord;
  CXTranslationUnit unit = NULL;
  double t0 = now_ms();
  enum CXErrorCode rc = CXError_Failure;
  bool injected = ks_fault(p->ctx, "parse");
  if (!injected)
    rc = clang_parseTranslationUnit2(index, j->path, (const char *const *)args.items,
                                     (int)args.len, NULL, 0, options, &unit);
  if (rc != CXError_Success && pch && !injected) {
    /* A stale or incompatible precompiled header: parse from scratch. */
    ks_debug(p->ctx, "%s: parse with precompiled headers failed (error %d), parsing anew",
             j->path, (int)rc);
    args.len -= 2;
    pch = NULL;
    rc = clang_parseTranslationUnit2(index, j->path, (const char *const *)args.items,
                                     (int)args.len, NULL, 0, options, &unit);
  }
  res->file.parse_ms = now_ms() - t0;
  res->file.used_pch = pch != NULL;
  if (rc != CXError_Success || !unit) {
    res->file.status = KS_FILE_FAILED;
    res->file.errors = 1;
    ks_diag *d = ks_array_push(arena, &res->file.diags);
    d->loc = (ks_loc){res->main_file, 1, 1, 0};
    d->severity = KS_SEV_FATAL;
    d->message = ks_arena_printf(arena, "libclang could not parse this file (error %d)", (int)rc);
    return res;
  }
  ks_tu tu = {.unit = unit, .arena = arena, .out = res};
  collect_diagnostics(&tu);
  ks_tu_extract(&tu);
  res->file.status = res->file.errors ? KS_FILE_ERRORS : KS_FILE_OK;
  clang_disposeTranslationUnit(unit);
  return res;
}

static void *worker(void *data) {
  pool *p = data;
  /* Exclude declarations from the precompiled header from visits: the walk
   * then touches only the user's code. */
  CXIndex index = clang_createIndex(1, 0);
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->njobs)
      break;
    p->results[i] = parse_one(p, index, &p->jobs[i]);
    ks_debug(p->ctx, "parsed %s in %.0f ms%s", p->jobs[i].path, p->results[i]->file.parse_ms,
             p->results[i]->file.used_pch ? " (precompiled CUDA headers)" : "");
  }
  clang_disposeIndex(index);
  return NULL;
}

static unsigned thread_count(const ks_scan_options *opts, size_t njobs) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t n = opts->jobs ? opts->jobs : (size_t)(cpus > 0 ? cpus : 1);
  if (n > njobs)
    n = njobs;
  return n ? (unsigned)n : 1;
}

static void run_pool(pool *p) {
  unsigned n = thread_count(p->opts, p->njobs);
  atomic_store(&p->next, 0);
  if (n == 1) {
    worker(p);
    return;
  }
  pthread_t *threads = ks_xcalloc(n, sizeof *threads);
  unsigned started = 0;
  for (unsigned i = 0; i < n; i++)
    if (pthread_create(&threads[i], NULL, worker, p) == 0)
      started++;
    else
      break;
  if (!started)
    worker(p); /* no threads to be had: parse on this one */
  for (unsigned i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  free(threads);
}

/* ---- flags per file ---------------------------------------------------- */

/* A header has no entry in a compilation database: borrow the flags of the
 * .cu file that shares the longest directory prefix with it. */
static const job *closest(const job *jobs, size_t n, const char *path) {
  const job *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(jobs[i].flags_from, "compile_commands.json"))
      continue;
    size_t k = 0;
    while (path[k] && path[k] == jobs[i].path[k])
      k++;
    if (!best || k > best_len) {
      best = &jobs[i];
      best_len = k;
    }
  }
  return best;
}

static void set_flags(ks_arena *arena, ks_compdb *db, job *j, const job *known, size_t nknown) {
  j->flags_from = "defaults";
  if (!db)
    return;
  if (ks_compdb_flags(db, arena, j->path, &j->flags)) {
    j->flags_from = "compile_commands.json";
    return;
  }
  const job *near = closest(known, nknown, j->path);
  if (near) {
    j->flags = near->flags;
    j->flags_from = "compile_commands.json (nearest entry)";
  }
}

/* ---- the scan ------------------------------------------------------------ */

struct ks_scan_arenas {
  ks_tu_result **results;
  size_t n;
};

static char *common_dir(const char *const *paths, size_t n) {
  char *common = NULL;
  for (size_t i = 0; i < n; i++) {
    char *real = ks_realpath(paths[i]);
    if (!real)
      continue;
    if (!ks_is_dir(real)) {
      char *d = ks_path_dirname(real);
      free(real);
      real = d;
    }
    if (!common) {
      common = real;
      continue;
    }
    size_t k = 0;
    while (common[k] && common[k] == real[k])
      k++;
    if (common[k] || (real[k] && real[k] != '/')) /* back to a whole component */
      while (k > 1 && common[k - 1] != '/')
        k--;
    if (k > 1 && common[k - 1] == '/')
      k--;
    common[k ? k : 1] = '\0';
    free(real);
  }
  return common;
}

/* The unit (of the first n) that included `path`, or NULL. */
static const char *includer_of(ks_tu_result **results, size_t n, const char *path) {
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; results[i] && k < results[i]->included.len; k++)
      if (!strcmp(results[i]->included.items[k], path))
        return results[i]->file.path;
  return NULL;
}

static bool was_included(ks_tu_result **results, size_t n, const char *path) {
  return includer_of(results, n, path) != NULL;
}

/* A .cu file that another .cu includes is, as the compiler sees it, part of
 * that unit: its kernels use the typedefs, macros and textures the
 * includer declared before the #include (Rodinia's kernels read `fp` from
 * the main file's header). Parsed on its own it has errors, and kernels
 * whose types came out as int, beside the real ones. Unless
 * compile_commands.json compiles it on its own, its own parse is set aside:
 * its kernels and launches are the includer's. */
static void set_aside_fragments(ks_tu_result **results, const job *jobs, size_t ncu) {
  const char **by = ks_xcalloc(ncu ? ncu : 1, sizeof *by);
  for (size_t i = 0; i < ncu; i++)
    if (results[i] && strcmp(jobs[i].flags_from, "compile_commands.json")) {
      by[i] = includer_of(results, ncu, results[i]->file.path);
      if (by[i] && !strcmp(by[i], results[i]->file.path))
        by[i] = NULL;
    }
  for (size_t i = 0; i < ncu; i++) {
    if (!by[i])
      continue;
    /* Files that include each other: the one no other includes keeps its
     * parse (the first of a cycle when every one is included). */
    bool includer_set_aside = false;
    for (size_t j = 0; j < i; j++)
      includer_set_aside = includer_set_aside || (by[j] && results[j] && !strcmp(results[j]->file.path, by[i]));
    if (includer_set_aside)
      continue;
    ks_tu_result *r = results[i];
    r->file.included_by = by[i];
    r->file.status = KS_FILE_OK;
    r->file.errors = r->file.warnings = 0;
    r->file.diags.len = 0;
    r->kernels.len = 0;
    r->launches.len = 0;
    r->template_calls.len = 0;
  }
  free(by);
}

int ks_scan_run(ks_ctx *ctx, const ks_scan_options *opts, ks_scan *out) {
  memset(out, 0, sizeof *out);
  double t0 = now_ms();
  int rc = 0;
  file_list files = {0};
  ks_compdb *db = NULL;
  ks_pch_cache *pch = NULL;
  char workdir[] = "/tmp/kernelsmith-scan-XXXXXX";
  bool have_workdir = false;
  ks_arena job_arena = KS_ARENA_INIT;
  job *jobs = NULL;
  ks_tu_result **results = NULL;

  for (size_t i = 0; i < opts->npaths; i++) {
    if (ks_walk(ctx, opts->paths[i], collect, &files)) {
      rc = -1;
      goto out;
    }
    /* A file named explicitly is scanned whatever its extension. */
    if (ks_is_file(opts->paths[i]) && !ks_path_has_ext(opts->paths[i], ".cu") &&
        !ks_path_has_ext(opts->paths[i], ".cuh"))
      add_path(&files.cu, &files.ncu, &files.capcu, opts->paths[i]);
  }
  if (check_readable(ctx, files.cu, files.ncu) || check_readable(ctx, files.cuh, files.ncuh)) {
    rc = -1;
    goto out;
  }
  if (opts->build_dir) {
    if (ks_compdb_open(ctx, opts->build_dir, &db)) {
      rc = -1;
      goto out;
    }
  } else if (!opts->no_compdb) {
    db = ks_compdb_find(opts->paths, opts->npaths);
  }
  if (!mkdtemp(workdir)) {
    rc = ks_fail(ctx, "cannot create a temporary directory under /tmp");
    goto out;
  }
  have_workdir = true;
  ks_clang_env env;
  if (ks_clang_env_init(ctx, workdir, &env)) {
    rc = -1;
    goto out;
  }
  pch = ks_pch_cache_new(workdir);

  out->root = ks_arena_strdup(&out->arena, "");
  char *root = common_dir(opts->paths, opts->npaths);
  if (root)
    out->root = ks_arena_strdup(&out->arena, root);
  free(root);
  if (db)
    out->compile_db = ks_arena_printf(&out->arena, "%s/compile_commands.json", ks_compdb_dir(db));

  size_t total = files.ncu + files.ncuh;
  jobs = ks_xcalloc(total ? total : 1, sizeof *jobs);
  results = ks_xcalloc(total ? total : 1, sizeof *results);
  for (size_t i = 0; i < files.ncu; i++) {
    jobs[i].path = files.cu[i];
    set_flags(&job_arena, db, &jobs[i], jobs, i);
  }
  /* A database found by looking upwards may belong to another project: keep
   * it only when it knows some of these files. */
  size_t known = 0;
  for (size_t i = 0; i < files.ncu; i++)
    known += !strcmp(jobs[i].flags_from, "compile_commands.json");
  if (db && !known && files.ncu) {
    if (opts->build_dir)
      ks_warn(ctx, "%s has no entry for any scanned file; using default flags", out->compile_db);
    ks_compdb_close(db);
    db = NULL;
    out->compile_db = NULL;
  }
  pool p = {ctx, opts, &env, pch, jobs, files.ncu, 0, results};
  run_pool(&p);
  set_aside_fragments(results, jobs, files.ncu);

  /* Headers no .cu included, parsed on their own. */
  size_t njobs = files.ncu;
  for (size_t i = 0; i < files.ncuh; i++) {
    if (was_included(results, files.ncu, files.cuh[i]))
      continue;
    jobs[njobs].path = files.cuh[i];
    set_flags(&job_arena, db, &jobs[njobs], jobs, files.ncu);
    njobs++;
  }
  if (njobs > files.ncu) {
    pool headers = {ctx, opts, &env, pch, jobs + files.ncu, njobs - files.ncu, 0,
                    results + files.ncu};
    run_pool(&headers);
  }

  out->tu_arenas = ks_xcalloc(1, sizeof *out->tu_arenas);
  out->tu_arenas->results = results;
  out->tu_arenas->n = njobs;
  results = NULL;
  ks_merge(out, out->tu_arenas->results, out->tu_arenas->n);

out:
  out->wall_ms = now_ms() - t0;
  free(results);
  free(jobs);
  ks_arena_release(&job_arena);
  ks_pch_cache_free(pch);
  if (have_workdir) {
    char stub[sizeof workdir + 64];
    snprintf(stub, sizeof stub, "%s/stubs/texture_fetch_functions.h", workdir);
    remove(stub);
    snprintf(stub, sizeof stub, "%s/stubs/kernelsmith_clang_prelude.h", workdir);
    remove(stub);
    snprintf(stub, sizeof stub, "%s/stubs", workdir);
    rmdir(stub);
    rmdir(workdir);
  }
  ks_compdb_close(db);
  free_list(files.cu, files.ncu);
  free_list(files.cuh, files.ncuh);
  return rc;
}

void ks_scan_release(ks_scan *scan) {
  if (scan->tu_arenas) {
    for (size_t i = 0; i < scan->tu_arenas->n; i++) {
      if (!scan->tu_arenas->results[i])
        continue;
      ks_arena_release(&scan->tu_arenas->results[i]->arena);
      free(scan->tu_arenas->results[i]);
    }
    free(scan->tu_arenas->results);
    free(scan->tu_arenas);
  }
  ks_arena_release(&scan->arena);
  memset(scan, 0, sizeof *scan);
}
