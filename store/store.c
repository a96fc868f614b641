/* The store's file: opening, the schema and its version, the settings that
 * make it safe against crashes and shared between processes, and the
 * helpers every query uses. The rows themselves are in store_rows.c and
 * store_evals.c; docs/store.md describes the tables.
 *
 * Settings, and why:
 *
 * - journal_mode=WAL: readers (`status`) never block the writer
 *   (`optimize`) nor the other way round, and a commit appends to the
 *   write-ahead log instead of rewriting pages in place.
 *
 * - synchronous=NORMAL: in WAL mode a commit is written to the log with
 *   write() but fsync'ed only at checkpoints. A process that dies at any
 *   moment (kill -9, a crash, an abort) loses nothing it committed: the
 *   bytes are in the kernel's page cache, which outlives the process, and
 *   the next open replays the log. What NORMAL does not cover is the
 *   machine itself going down (power loss, kernel panic): the last commits
 *   before it may be rolled back, though the file stays consistent (never
 *   corrupt). FULL would fsync at every commit; one evaluation takes
 *   seconds on the GPU and can simply be redone on --resume, so that cost
 *   buys nothing here.
 *
 * - busy_timeout: a second process waits for the write lock instead of
 *   failing at once. Writes are short transactions (milliseconds), so
 *   `status` reading while `optimize` writes, or two `optimize` processes
 *   writing to one store, wait for each other briefly and never see a half
 *   transaction. After the timeout, the write fails with "database is
 *   locked" and the path.
 *
 * - foreign_keys=ON: an evaluation cannot name a variant that is not there,
 *   so a crash between two writes cannot leave a dangling reference.
 *
 * WAL needs shared memory between the processes, so the store must be on a
 * local file system (not NFS); docs/store.md says so. */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_fs.h"

enum { STORE_BUSY_MS = 10000 };

/* Version 1. A later version appends its migration (ALTER TABLE ...) to
 * `migrations` below, so a store made by an older kernelsmith-cc is
 * upgraded in place, inside one transaction. */
static const char schema_v1[] =
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  started TEXT NOT NULL,"
    "  finished TEXT,"
    "  status TEXT NOT NULL,"
    "  command TEXT NOT NULL,"
    "  strategy TEXT,"
    "  proposer TEXT,"
    /* 64 bits unsigned, in decimal: an INTEGER column is signed */
    "  seed TEXT NOT NULL,"
    "  options TEXT,"
    "  device TEXT);"
    "CREATE TABLE kernels ("
    "  id INTEGER PRIMARY KEY,"
    "  run INTEGER NOT NULL REFERENCES runs(id),"
    "  name TEXT NOT NULL,"
    "  file TEXT,"
    "  line INTEGER NOT NULL DEFAULT 0,"
    "  source_hash TEXT,"
    "  slice TEXT,"
    "  spec TEXT,"
    "  status TEXT NOT NULL,"
    "  note TEXT,"
    "  baseline_ms REAL NOT NULL DEFAULT 0,"
    "  created TEXT NOT NULL,"
    "  updated TEXT NOT NULL,"
    "  UNIQUE (run, name));"
    "CREATE INDEX kernels_name ON kernels(name, source_hash);"
    "CREATE TABLE variants ("
    "  id INTEGER PRIMARY KEY,"
    "  kernel INTEGER NOT NULL REFERENCES kernels(id),"
    "  parent INTEGER REFERENCES variants(id),"
    "  hash TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  kernel_name TEXT,"
    "  is_template INTEGER NOT NULL DEFAULT 0,"
    "  grid TEXT,"
    "  block TEXT,"
    "  smem TEXT,"
    "  requires TEXT,"
    "  proposer TEXT,"
    "  techniques TEXT,"
    "  round INTEGER NOT NULL DEFAULT 0,"
    "  island INTEGER NOT NULL DEFAULT 0,"
    "  created TEXT NOT NULL,"
    "  UNIQUE (kernel, hash));"
    "CREATE INDEX variants_parent ON variants(parent);"
    "CREATE TABLE evaluations ("
    "  id INTEGER PRIMARY KEY,"
    "  kernel INTEGER NOT NULL REFERENCES kernels(id),"
    "  variant INTEGER REFERENCES variants(id)," /* NULL: the baseline */
    "  created TEXT NOT NULL,"
    "  verdict TEXT NOT NULL,"
    "  reason TEXT,"
    "  speedup REAL," /* NULL unless FAST, SAME or SLOW */
    "  speedup_low REAL,"
    "  speedup_high REAL,"
    "  base_median_ms REAL,"
    "  cand_median_ms REAL,"
    "  registers INTEGER,"
    "  spill_bytes INTEGER,"
    "  bw_fraction REAL,"
    "  max_rel_error REAL,"
    "  compile_ms REAL,"
    "  wall_seconds REAL,"
    "  json TEXT NOT NULL);"
    "CREATE INDEX evaluations_variant ON evaluations(variant);"
    "CREATE INDEX evaluations_kernel ON evaluations(kernel, verdict);"
    "CREATE TABLE memory ("
    "  id INTEGER PRIMARY KEY,"
    "  kernel INTEGER REFERENCES kernels(id)," /* NULL: about every kernel */
    "  kind TEXT NOT NULL,"
    "  text TEXT NOT NULL,"
    "  created TEXT NOT NULL);"
    "CREATE INDEX memory_kernel ON memory(kernel, kind);"
    "CREATE TABLE llm_calls ("
    "  id INTEGER PRIMARY KEY,"
    "  run INTEGER NOT NULL REFERENCES runs(id),"
    "  kernel INTEGER REFERENCES kernels(id),"
    "  created TEXT NOT NULL,"
    "  role TEXT,"
    "  model TEXT,"
    "  prompt_hash TEXT,"
    "  response_hash TEXT,"
    "  prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    "  response_tokens INTEGER NOT NULL DEFAULT 0,"
    "  seconds REAL NOT NULL DEFAULT 0,"
    "  cost REAL NOT NULL DEFAULT 0,"
    "  status TEXT);"
    "CREATE INDEX llm_calls_run ON llm_calls(run, kernel);";

/* Version 2: the LLM calls keep their request and reply (the cache, and
 * replay), and a variant the plan an LLM step followed. */
static const char schema_v2[] =
    "ALTER TABLE llm_calls ADD COLUMN request TEXT;"
    "ALTER TABLE llm_calls ADD COLUMN response TEXT;"
    "CREATE INDEX llm_calls_prompt ON llm_calls(prompt_hash, status);"
    "ALTER TABLE variants ADD COLUMN plan TEXT;";

/* Version 3: a kernel names its winner, the variant the search confirmed
 * on fresh inputs (apply, the launcher, status and export read it), and
 * the digests of the launch sites it was optimized with (one per line:
 * ks_launch_digest), so that a site edited since is not dispatched. */
static const char schema_v3[] = "ALTER TABLE kernels ADD COLUMN winner INTEGER;" /* a variant's id */
                                "ALTER TABLE kernels ADD COLUMN sites TEXT;";

/* Version 4: what the judge learned about a kernel besides its variants'
 * speed (passes/insight: a race in the original, what bounds it), as the
 * JSON ks_insight_json makes; and the phases of a run that has them (tune:
 * profile, capture, optimize, patch, verify), each with its status and what
 * it found as JSON, so that --resume skips the finished ones on the store's
 * word alone. */
static const char schema_v4[] = "ALTER TABLE kernels ADD COLUMN insight TEXT;"
                                "CREATE TABLE phases ("
                                "  run INTEGER NOT NULL REFERENCES runs(id),"
                                "  name TEXT NOT NULL,"
                                "  status TEXT NOT NULL,"
                                "  data TEXT,"
                                "  updated TEXT NOT NULL,"
                                "  PRIMARY KEY (run, name));";

/* Version 5: which device and worker judged each evaluation (--devices
 * runs several workers; docs/store.md). A table beside evaluations rather
 * than columns: an evaluation written by an older kernelsmith-cc simply has
 * no row, and the statement can be run again on a store that has it. */
static const char schema_v5[] = "CREATE TABLE IF NOT EXISTS eval_devices ("
                                "  evaluation INTEGER PRIMARY KEY REFERENCES evaluations(id),"
                                "  device INTEGER NOT NULL," /* the CUDA ordinal */
                                "  worker INTEGER NOT NULL);"; /* its place in --devices */

/* Version 6: which MPI rank, on which host, judged each evaluation
 * (optimize --mpi: rank 0 writes what every rank judged). A table of its
 * own, for the reasons of version 5, with rows only for --mpi evaluations:
 * a run without MPI adds nothing, and no row means rank 0 on no host. */
static const char schema_v6[] = "CREATE TABLE IF NOT EXISTS eval_ranks ("
                                "  evaluation INTEGER PRIMARY KEY REFERENCES evaluations(id),"
                                "  rank INTEGER NOT NULL," /* MPI_COMM_WORLD's */
                                "  host TEXT NOT NULL);";  /* the rank's host name */

/* migrations[v] takes a store from version v to v + 1. */
static const char *const migrations[KS_STORE_SCHEMA_VERSION] = {
    schema_v1, schema_v2, schema_v3, schema_v4, schema_v5, schema_v6};

/* ---- helpers ------------------------------------------------------------- */

int store_fail(ks_ctx *ctx, ks_store *s, const char *what) {
  int code = sqlite3_errcode(s->db);
  const char *hint = code == SQLITE_BUSY || code == SQLITE_LOCKED
                         ? " (another process held it for over 10 s)"
                         : "";
  return ks_fail(ctx, "%s: %s: %s%s", s->path, what, sqlite3_errmsg(s->db), hint);
}

int store_prepare(ks_ctx *ctx, ks_store *s, const char *sql, sqlite3_stmt **st) {
  *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
    return store_fail(ctx, s, "cannot prepare a query");
  return 0;
}

int store_step_done(ks_ctx *ctx, ks_store *s, sqlite3_stmt *st, const char *what) {
  return sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(ctx, s, what);
}

int store_begin(ks_ctx *ctx, ks_store *s) {
  if (ks_fault(ctx, "store_write"))
    return ks_fail(ctx, "%s: cannot write: injected fault (store_write)", s->path);
  if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return store_fail(ctx, s, "cannot begin a write");
  return 0;
}

int store_end(ks_ctx *ctx, ks_store *s, int rc) {
  if (!rc && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    rc = store_fail(ctx, s, "cannot commit");
  /* The message of the failure is already recorded: rolling back must not
   * replace it. After a failed COMMIT the transaction may still be open. */
  if (rc && !sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

void store_bind_text(sqlite3_stmt *st, int i, const char *text) {
  if (text)
    sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

void store_bind_id(sqlite3_stmt *st, int i, long long id) {
  if (id)
    sqlite3_bind_int64(st, i, id);
  else
    sqlite3_bind_null(st, i);
}

const char *store_col_text(ks_arena *a, sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? ks_arena_strndup(a, (const char *)t, (size_t)sqlite3_column_bytes(st, i)) : NULL;
}

/* ---- the directory ------------------------------------------------------- */

static int mkdir_p(ks_ctx *ctx, const char *dir) {
  if (!*dir)
    return ks_fail(ctx, "the results store's directory is an empty path");
  char *path = ks_xstrdup(dir);
  int rc = 0;
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p)
      continue;
    char c = *p;
    *p = 0;
    if (mkdir(path, 0755) && errno != EEXIST) {
      rc = ks_fail(ctx, "%s: cannot create the directory: %s", path, strerror(errno));
      break;
    }
    *p = c;
    if (!c)
      break;
  }
  if (!rc && !ks_is_dir(dir))
    rc = ks_fail(ctx, "%s: not a directory", dir);
  free(path);
  return rc;
}

/* `*` in DIR/.gitignore keeps the store (a database, logs of a run) out of
 * the user's commits. Written to a temporary name and renamed, so a crash
 * never leaves an empty one; an existing one is the user's and kept. */
static int write_gitignore(ks_ctx *ctx, const char *dir) {
  char *path = ks_path_join(dir, ".gitignore");
  int rc = 0;
  if (access(path, F_OK)) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs("*\n", f) >= 0;
    ok = f && !fclose(f) && ok;
    if (!ok || rename(tmp, path))
      rc = ks_fail(ctx, "%s: cannot write: %s", path, strerror(errno));
    if (!ok)
      remove(tmp);
  }
  free(path);
  return rc;
}

/* ---- opening ------------------------------------------------------------- */

static int pragma_int(ks_ctx *ctx, ks_store *s, const char *sql, const char *what,
                      long long *out) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return store_fail(ctx, s, what);
  int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : store_fail(ctx, s, what);
  if (!rc)
    *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc;
}

static int set_wal(ks_ctx *ctx, ks_store *s) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK)
    return store_fail(ctx, s, "cannot set the journal mode");
  int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : store_fail(ctx, s, "cannot set the journal mode");
  const unsigned char *mode = rc ? NULL : sqlite3_column_text(st, 0);
  if (!rc && (!mode || strcmp((const char *)mode, "wal")))
    rc = ks_fail(ctx, "%s: cannot use write-ahead logging (journal mode stays %s); is it on a "
                      "network file system?",
                 s->path, mode ? (const char *)mode : "?");
  sqlite3_finalize(st);
  return rc;
}

/* Creates or upgrades the schema. Two processes may open a new store at
 * once: the version is read again under the write lock, so only the first
 * creates the tables. */
static int migrate(ks_ctx *ctx, ks_store *s) {
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  long long version = 0;
  rc = pragma_int(ctx, s, "PRAGMA user_version", "cannot read the schema version", &version);
  for (; !rc && version < KS_STORE_SCHEMA_VERSION; version++) {
    if (sqlite3_exec(s->db, migrations[version], NULL, NULL, NULL) != SQLITE_OK)
      rc = store_fail(ctx, s, "cannot create the tables");
  }
  if (!rc) {
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", KS_STORE_SCHEMA_VERSION);
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
      rc = store_fail(ctx, s, "cannot write the schema version");
  }
  return store_end(ctx, s, rc);
}

static int configure(ks_ctx *ctx, ks_store *s) {
  sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
  /* The first read of the file: a file that is not a database fails here,
   * before anything is written to it, and so does a newer schema. */
  long long version = 0;
  if (s->readonly && !s->immutable && ks_fault(ctx, "store_shm")) {
    s->shm_fault = true;
    return ks_fail(ctx, "%s: cannot read the schema version: attempt to write a readonly "
                        "database (injected fault store_shm)", s->path);
  }
  if (pragma_int(ctx, s, "PRAGMA user_version", "cannot read the schema version", &version)) {
    if (sqlite3_errcode(s->db) == SQLITE_NOTADB)
      return ks_fail(ctx, "%s: file is not a database; move it away to start a new results store.",
                     s->path);
    return -1;
  }
  if (version > KS_STORE_SCHEMA_VERSION)
    return ks_fail(ctx,
                   "%s: made by a newer kernelsmith-cc (schema version %lld; this one knows "
                   "up to %d): upgrade kernelsmith-cc to use it.",
                   s->path, version, KS_STORE_SCHEMA_VERSION);
  if (sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL) != SQLITE_OK)
    return store_fail(ctx, s, "cannot enable foreign keys");
  s->version = (int)version;
  if (s->readonly) {
    /* A reader cannot migrate: it reads what an older schema has (version
     * 2 lacks only the kernels' winner column, which the queries that need
     * it derive then). */
    if (version < 2)
      return ks_fail(ctx,
                     "%s: %s; run `kernelsmith-cc optimize` first.", s->path,
                     version ? "made by an older kernelsmith-cc" : "holds no results yet");
    return 0;
  }
  if (set_wal(ctx, s))
    return -1;
  if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
    return store_fail(ctx, s, "cannot set synchronous");
  if (version < KS_STORE_SCHEMA_VERSION && migrate(ctx, s))
    return -1;
  s->version = KS_STORE_SCHEMA_VERSION;
  return 0;
}

/* A writer refuses a damaged file. SQLite meets a damaged page only in the
 * queries that read it, so `optimize` would go on appending runs to a file
 * `status` cannot read. PRAGMA quick_check reads every page once (the
 * integrity check of ks_store_check also compares every index with its
 * table, several times longer): milliseconds for a store of some
 * megabytes. */
static int check_quick(ks_ctx *ctx, ks_store *s) {
  sqlite3_stmt *st = NULL;
  const char *problem = NULL;
  char *copy = NULL;
  int step = SQLITE_ERROR;
  if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL) == SQLITE_OK)
    step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    if (!t || strcmp((const char *)t, "ok"))
      problem = copy = ks_xstrdup(t ? (const char *)t : "?");
  } else {
    int code = sqlite3_errcode(s->db) & 0xff;
    if (code != SQLITE_CORRUPT && code != SQLITE_NOTADB) {
      sqlite3_finalize(st);
      return store_fail(ctx, s, "cannot check the file");
    }
    problem = copy = ks_xstrdup(sqlite3_errmsg(s->db));
  }
  sqlite3_finalize(st);
  int rc = 0;
  if (problem) {
    /* One line: SQLite's report may list several problems, one a line. */
    for (char *c = copy; *c; c++)
      if (*c == '\n')
        *c = ' ';
    rc = ks_fail(ctx,
                 "%s: the results store is damaged (%s): move its directory away, or give "
                 "optimize another --store, to start a new one",
                 s->path, problem);
  }
  free(copy);
  return rc;
}

/* The file as an SQLite URI naming it immutable: '%', '?' and '#' are
 * escaped, and the path is absolute (a relative one starting with "//"
 * would read as an authority). */
static char *immutable_uri(const char *path) {
  char *abs = ks_realpath(path);
  const char *p = abs ? abs : path;
  ks_buf b = KS_BUF_INIT;
  ks_buf_adds(&b, "file:");
  for (; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#')
      ks_buf_addf(&b, "%%%02x", (unsigned char)*p);
    else
      ks_buf_addc(&b, *p);
  }
  ks_buf_adds(&b, "?immutable=1");
  free(abs);
  return ks_buf_detach(&b);
}

static int open_db(ks_ctx *ctx, ks_store *s, bool immutable) {
  int flags = s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  char *uri = immutable ? immutable_uri(s->path) : NULL;
  int rc = 0;
  if (sqlite3_open_v2(uri ? uri : s->path, &s->db,
                      flags | SQLITE_OPEN_NOMUTEX | (uri ? SQLITE_OPEN_URI : 0),
                      NULL) != SQLITE_OK)
    rc = s->db ? store_fail(ctx, s, "cannot open")
               : ks_fail(ctx, "%s: cannot open: out of memory", s->path);
  free(uri);
  return rc;
}

/* A reader that may not write the store's directory (another user's
 * project, a read-only mount) cannot create the shared-memory file
 * (kernelsmith.db-shm) that WAL mode reads through, and its first read
 * fails ("attempt to write a readonly database", or "unable to open").
 * SQLite's documents (wal.html, "Read-Only Databases"; walformat.html)
 * say such a process can read a WAL database only while its -wal and
 * -shm files exist and are readable (they do while a writer has it open,
 * and SQLite then manages with them read-only), or when the file is
 * opened as immutable. Immutable ignores the -wal, so it is right only
 * when everything committed is in the file itself: no -wal, or an empty
 * one. That is the usual case here: the last connection to close
 * checkpoints the log and deletes both files. A -wal with content and no
 * usable -shm (copied without it, or left by a crash) is refused, saying
 * what to do. Fault site "store_shm" makes the first read fail so
 * (KERNELSMITH_FAULTS), for tests run by a user who may write anywhere. */
static bool shm_refused(const ks_store *s) {
  int code = sqlite3_errcode(s->db) & 0xff;
  return s->shm_fault || code == SQLITE_READONLY || code == SQLITE_CANTOPEN;
}

static int read_immutable(ks_ctx *ctx, ks_store *s) {
  size_t n = strlen(s->path) + sizeof "-wal";
  char *wal = ks_xmalloc(n);
  snprintf(wal, n, "%s-wal", s->path);
  struct stat st;
  bool has_log = !stat(wal, &st) && st.st_size > 0;
  free(wal);
  sqlite3_close_v2(s->db);
  s->db = NULL;
  if (has_log)
    return ks_fail(ctx,
                   "%s: cannot read it without writing its directory: its log (kernelsmith.db-wal) "
                   "holds commits not yet in the file; a user who may write there folds them in "
                   "with `sqlite3 %s 'PRAGMA wal_checkpoint(TRUNCATE)'`, or read a copy of the "
                   "directory",
                   s->path, s->path);
  s->immutable = true;
  ks_debug(ctx, "%s: the directory is not writable; read as immutable", s->path);
  return open_db(ctx, s, true) || configure(ctx, s) ? -1 : 0;
}

static int open_store(ks_ctx *ctx, const char *dir, bool readonly, ks_store **out) {
  *out = NULL;
  ks_store *s = ks_xcalloc(1, sizeof *s);
  s->path = ks_path_join(dir, "kernelsmith.db");
  s->readonly = readonly;
  int rc = 0;
  if (readonly && !ks_is_file(s->path))
    rc = ks_fail(ctx, "%s: no results store here; run `kernelsmith-cc optimize` first.", s->path);
  else if (!readonly)
    rc = mkdir_p(ctx, dir) || write_gitignore(ctx, dir) ? -1 : 0;
  if (!rc)
    rc = open_db(ctx, s, false);
  if (!rc)
    rc = configure(ctx, s);
  if (rc && readonly && s->db && shm_refused(s))
    rc = read_immutable(ctx, s);
  if (!rc && !readonly)
    rc = check_quick(ctx, s);
  if (rc) {
    ks_store_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

int ks_store_open(ks_ctx *ctx, const char *dir, ks_store **out) {
  return open_store(ctx, dir, false, out);
}

int ks_store_open_readonly(ks_ctx *ctx, const char *dir, ks_store **out) {
  return open_store(ctx, dir, true, out);
}

void ks_store_close(ks_store *s) {
  if (!s)
    return;
  /* sqlite3_close_v2 checkpoints and removes the log when this is the last
   * connection; statements are always finalized before a call returns. */
  sqlite3_close_v2(s->db);
  free(s->path);
  free(s);
}

const char *ks_store_path(const ks_store *s) { return s->path; }

/* ---- checking ------------------------------------------------------------ */

/* The first row of a query as text, or NULL when it returns none. */
static int first_row(ks_ctx *ctx, ks_store *s, const char *sql, ks_arena *a, const char **out) {
  sqlite3_stmt *st;
  *out = NULL;
  if (store_prepare(ctx, s, sql, &st))
    return -1;
  int step = sqlite3_step(st), rc = 0;
  if (step == SQLITE_ROW)
    *out = store_col_text(a, st, 0);
  else if (step != SQLITE_DONE)
    rc = store_fail(ctx, s, "cannot check the store");
  sqlite3_finalize(st);
  return rc;
}

int ks_store_check(ks_ctx *ctx, ks_store *s, ks_arena *a, const char **problem) {
  const char *row;
  *problem = NULL;
  if (first_row(ctx, s, "PRAGMA integrity_check", a, &row))
    return -1;
  if (row && strcmp(row, "ok")) {
    *problem = ks_arena_printf(a, "integrity check: %s", row);
    return 0;
  }
  if (first_row(ctx, s,
                "SELECT format('%s row %d refers to a missing row of %s', \"table\", rowid, "
                "parent) FROM pragma_foreign_key_check",
                a, &row))
    return -1;
  if (!row && first_row(ctx, s,
                        "SELECT format('evaluation %d: its JSON does not parse', id) "
                        "FROM evaluations WHERE NOT json_valid(json) LIMIT 1",
                        a, &row))
    return -1;
  *problem = row;
  return 0;
}

const char *ks_store_default_dir(ks_arena *arena) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd))
    return ".kernelsmith";
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", cwd);
  for (;;) {
    char probe[4200];
    struct stat st;
    snprintf(probe, sizeof probe, "%s/.kernelsmith", dir);
    if (stat(probe, &st) == 0)
      return ks_arena_strdup(arena, probe);
    snprintf(probe, sizeof probe, "%s/.git", dir);
    if (stat(probe, &st) == 0)
      return ks_arena_printf(arena, "%s/.kernelsmith", dir);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
      break;
    *slash = '\0';
  }
  return ks_arena_printf(arena, "%s/.kernelsmith", cwd);
}
