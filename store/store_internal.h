/* What the store's files share: the handle, and the few helpers every query
 * goes through (errors naming the file, one transaction per write, text
 * columns copied into the caller's arena). Only the store's .c files include it. */
#ifndef KS_STORE_INTERNAL_H
#define KS_STORE_INTERNAL_H

#include <sqlite3.h>

#include "ks_store.h"

struct ks_store {
  sqlite3 *db;
  char *path;    /* DIR/kernelsmith.db (malloc'd), for every message */
  bool readonly;
  bool immutable; /* a reader that may not write the directory: the file read
                     as one nothing changes (store.c, read_immutable) */
  bool shm_fault; /* fault site store_shm refused the first read */
  int version;   /* the schema version of the file (a read-only store may
                    be older than KS_STORE_SCHEMA_VERSION) */
};

/* ISO 8601 UTC with milliseconds, evaluated by SQLite inside the statement
 * ("2025-01-31T12:00:00.123Z"). */
#define STORE_NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

/* ks_fail("<path>: <what>: <sqlite3_errmsg>"), -1. */
int store_fail(ks_ctx *ctx, ks_store *s, const char *what);
int store_prepare(ks_ctx *ctx, ks_store *s, const char *sql, sqlite3_stmt **st);
/* Steps a statement that returns no row. */
int store_step_done(ks_ctx *ctx, ks_store *s, sqlite3_stmt *st, const char *what);

/* Every write is BEGIN IMMEDIATE ... COMMIT: the write lock is taken (or
 * waited for, up to the busy timeout) before anything is read, so a
 * read-then-write cannot fail half-way because another process wrote in
 * between. store_end commits when rc is 0, else rolls back; it returns rc,
 * or -1 when the commit itself fails. Fault site "store_write" makes
 * store_begin fail (KERNELSMITH_FAULTS). */
int store_begin(ks_ctx *ctx, ks_store *s);
int store_end(ks_ctx *ctx, ks_store *s, int rc);

/* NULL binds SQL NULL. */
void store_bind_text(sqlite3_stmt *st, int i, const char *text);
/* 0 binds SQL NULL (ids where 0 means "none"). */
void store_bind_id(sqlite3_stmt *st, int i, long long id);
/* The column's text in `a`, or NULL for SQL NULL. */
const char *store_col_text(ks_arena *a, sqlite3_stmt *st, int i);

#endif
