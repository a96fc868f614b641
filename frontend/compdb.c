/* compile_commands.json through libclang's compilation database API. */
#include <clang-c/CXCompilationDatabase.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "ks_alloc.h"
#include "ks_fs.h"

struct ks_compdb {
  CXCompilationDatabase db;
  char *dir;
  char **files; /* every file with an entry of its own, sorted (realpaths) */
  size_t nfiles;
};

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* libclang answers for any file, inferring flags from a neighbour when the
 * file has no entry; we want to know which files really have one. */
static void load_files(ks_compdb *db) {
  CXCompileCommands all = clang_CompilationDatabase_getAllCompileCommands(db->db);
  if (!all)
    return;
  unsigned n = clang_CompileCommands_getSize(all);
  db->files = ks_xcalloc(n ? n : 1, sizeof *db->files);
  for (unsigned i = 0; i < n; i++) {
    CXCompileCommand cmd = clang_CompileCommands_getCommand(all, i);
    CXString name = clang_CompileCommand_getFilename(cmd);
    CXString dir = clang_CompileCommand_getDirectory(cmd);
    const char *f = clang_getCString(name), *d = clang_getCString(dir);
    char *joined = f && f[0] == '/' ? ks_xstrdup(f) : ks_path_join(d ? d : ".", f ? f : "");
    char *real = ks_realpath(joined);
    db->files[db->nfiles++] = real ? real : joined;
    if (real)
      free(joined);
    clang_disposeString(name);
    clang_disposeString(dir);
  }
  clang_CompileCommands_dispose(all);
  qsort(db->files, db->nfiles, sizeof *db->files, cmp_str);
}

static bool has_entry(const ks_compdb *db, const char *file) {
  return db->nfiles &&
         bsearch(&file, db->files, db->nfiles, sizeof *db->files, cmp_str) != NULL;
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

bool ks_compdb_flags(ks_compdb *db, ks_arena *arena, const char *file, ks_strings *out) {
  if (!has_entry(db, file))
    return false;
  CXCompileCommands cmds = clang_CompilationDatabase_getCompileCommands(db->db, file);
  if (!cmds)
    return false;
  bool found = clang_CompileCommands_getSize(cmds) > 0;
  if (found) {
    /* The first command is the one a build runs for this file. */
    CXCompileCommand cmd = clang_CompileCommands_getCommand(cmds, 0);
    CXString dir_s = clang_CompileCommand_getDirectory(cmd);
    const char *dir = ks_arena_strdup(arena, clang_getCString(dir_s));
    clang_disposeString(dir_s);
    unsigned n = clang_CompileCommand_getNumArgs(cmd);
    const char **argv = ks_arena_alloc(arena, (n + 1) * sizeof *argv);
    for (unsigned i = 0; i < n; i++) {
      CXString a = clang_CompileCommand_getArg(cmd, i);
      argv[i] = ks_arena_strdup(arena, clang_getCString(a));
      clang_disposeString(a);
    }
    ks_flags_translate(arena, argv, n, dir, out);
  }
  clang_CompileCommands_dispose(cmds);
  return found;
}

void ks_compdb_close(ks_compdb *db) {
  if (!db)
    return;
  clang_CompilationDatabase_dispose(db->db);
  for (size_t i = 0; i < db->nfiles; i++)
    free(db->files[i]);
  free(db->files);
  free(db->dir);
  free(db);
}
