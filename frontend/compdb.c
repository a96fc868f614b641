/* compile_commands.json through libclang's compilation database API. */
#include <clang-c/CXCompilationDatabase.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "ks_alloc.h"
#include "ks_fs.h"

typedef struct compdb_entry {
  char *file;     /* realpath of the entry's file */
  unsigned index; /* its command in `all` (the first, when several) */
} compdb_entry;

struct ks_compdb {
  CXCompilationDatabase db;
  CXCompileCommands all; /* every command, kept for the life of the database */
  char *dir;
  compdb_entry *files;   /* sorted by file */
  size_t nfiles;
};

static int cmp_entry(const void *a, const void *b) {
  const compdb_entry *x = a, *y = b;
  int c = strcmp(x->file, y->file);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* An entry's working directory; a relative one is taken relative to the
 * database's own directory. malloc'd. */
static char *command_dir(const ks_compdb *db, const char *dir) {
  if (!dir || !*dir)
    return ks_xstrdup(db->dir);
  if (dir[0] == '/')
    return ks_xstrdup(dir);
  return ks_path_join(db->dir, dir);
}

/* libclang answers for any file, inferring flags from a neighbour when the
 * file has no entry; we want to know which files really have one. */
static void load_files(ks_compdb *db) {
  CXCompileCommands all = clang_CompilationDatabase_getAllCompileCommands(db->db);
  db->all = all;
  if (!all)
    return;
  unsigned n = clang_CompileCommands_getSize(all);
  db->files = ks_xcalloc(n ? n : 1, sizeof *db->files);
  for (unsigned i = 0; i < n; i++) {
    CXCompileCommand cmd = clang_CompileCommands_getCommand(all, i);
    CXString name = clang_CompileCommand_getFilename(cmd);
    CXString dir = clang_CompileCommand_getDirectory(cmd);
    const char *f = clang_getCString(name), *d = clang_getCString(dir);
    char *base = command_dir(db, d);
    char *joined = f && f[0] == '/' ? ks_xstrdup(f) : ks_path_join(base, f ? f : "");
    free(base);
    char *real = ks_realpath(joined);
    db->files[db->nfiles].file = real ? real : joined;
    db->files[db->nfiles].index = i;
    db->nfiles++;
    if (real)
      free(joined);
    clang_disposeString(name);
    clang_disposeString(dir);
  }
  if (db->nfiles > 1)
    qsort(db->files, db->nfiles, sizeof *db->files, cmp_entry);
}

/* The index of the first command for `file`, or -1. */
static long entry_of(const ks_compdb *db, const char *file) {
  size_t lo = 0, hi = db->nfiles;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(db->files[mid].file, file) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < db->nfiles && !strcmp(db->files[lo].file, file) ? (long)db->files[lo].index : -1;
}

static ks_compdb *open_dir(const char *dir) {
  char *json = ks_path_join(dir, "compile_commands.json");
  bool exists = ks_is_file(json);
  free(json);
  if (!exists)
    return NULL;
  CXCompilationDatabase_Error err = CXCompilationDatabase_NoError;
  CXCompilationDatabase db = clang_CompilationDatabase_fromDirectory(dir, &err);
  if (err != CXCompilationDatabase_NoError || !db)
    return NULL;
  ks_compdb *out = ks_xcalloc(1, sizeof *out);
  out->db = db;
  out->dir = ks_realpath(dir);
  if (!out->dir)
    out->dir = ks_xstrdup(dir);
  load_files(out);
  return out;
}

int ks_compdb_open(ks_ctx *ctx, const char *build_dir, ks_compdb **out) {
  *out = NULL;
  char *json = ks_path_join(build_dir, "compile_commands.json");
  bool exists = ks_is_file(json);
  if (!exists) {
    int rc = ks_fail(ctx, "%s: no such file (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "
                          "or generate it with bear)",
                     json);
    free(json);
    return rc;
  }
  *out = open_dir(build_dir);
  if (!*out) {
    int rc = ks_fail(ctx, "%s: not a valid compilation database", json);
    free(json);
    return rc;
  }
  free(json);
  return 0;
}

/* Tries dir, dir/build, then the parents of dir. */
static ks_compdb *find_from(const char *start) {
  char *dir = ks_realpath(start);
  if (!dir)
    return NULL;
  if (!ks_is_dir(dir)) {
    char *parent = ks_path_dirname(dir);
    free(dir);
    dir = parent;
  }
  ks_compdb *db = NULL;
  for (;;) {
    db = open_dir(dir);
    if (!db) {
      char *build = ks_path_join(dir, "build");
      db = open_dir(build);
      free(build);
    }
    if (db || !strcmp(dir, "/"))
      break;
    char *parent = ks_path_dirname(dir);
    free(dir);
    dir = parent;
  }
  free(dir);
  return db;
}

ks_compdb *ks_compdb_find(const char *const *paths, size_t npaths) {
  for (size_t i = 0; i < npaths; i++) {
    ks_compdb *db = find_from(paths[i]);
    if (db)
      return db;
  }
  return NULL;
}

const char *ks_compdb_dir(const ks_compdb *db) { return db->dir; }

/* The command line of `file`'s entry and its directory; false when the
 * database has no entry of its own for it. */
static bool entry_argv(ks_compdb *db, ks_arena *arena, const char *file, const char ***argv,
                       unsigned *argc, const char **dir) {
  /* Looked up by our own resolution of each entry's path: libclang's lookup
   * misses entries whose directory is relative. */
  long index = entry_of(db, file);
  if (index < 0)
    return false;
  CXCompileCommand cmd = clang_CompileCommands_getCommand(db->all, (unsigned)index);
  CXString dir_s = clang_CompileCommand_getDirectory(cmd);
  char *base = command_dir(db, clang_getCString(dir_s));
  *dir = ks_arena_strdup(arena, base);
  free(base);
  clang_disposeString(dir_s);
  unsigned n = clang_CompileCommand_getNumArgs(cmd);
  const char **av = ks_arena_alloc(arena, (n + 1) * sizeof *av);
  for (unsigned i = 0; i < n; i++) {
    CXString a = clang_CompileCommand_getArg(cmd, i);
    av[i] = ks_arena_strdup(arena, clang_getCString(a));
    clang_disposeString(a);
  }
  *argv = av;
  *argc = n;
  return true;
}

bool ks_compdb_flags(ks_compdb *db, ks_arena *arena, const char *file, ks_strings *out) {
  const char **argv, *dir;
  unsigned n;
  if (!entry_argv(db, arena, file, &argv, &n, &dir))
    return false;
  ks_flags_translate(arena, argv, n, dir, out);
  return true;
}

bool ks_compdb_codegen(ks_compdb *db, ks_arena *arena, const char *file, ks_strings *out) {
  const char **argv, *dir;
  unsigned n;
  if (!entry_argv(db, arena, file, &argv, &n, &dir))
    return false;
  ks_flags_codegen(arena, argv, n, out);
  return true;
}

void ks_compdb_close(ks_compdb *db) {
  if (!db)
    return;
  if (db->all)
    clang_CompileCommands_dispose(db->all);
  clang_CompilationDatabase_dispose(db->db);
  for (size_t i = 0; i < db->nfiles; i++)
    free(db->files[i].file);
  free(db->files);
  free(db->dir);
  free(db);
}
