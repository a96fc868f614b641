/* Evaluations: the judge's verdict with its main numbers as columns (for
 * queries and ks_store_variants) and the whole ks_eval as JSON
 * (ks_eval_json.h, complete form), which ks_store_eval_get reads back. */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ks_eval_json.h"

static bool timed_verdict(ks_verdict v) {
  return v == KS_VERDICT_FAST || v == KS_VERDICT_SAME || v == KS_VERDICT_SLOW;
}

/* A variant must belong to the kernel its evaluation names: the search
 * reads evaluations per kernel, and a mix-up would credit another kernel. */
static int check_owner(ks_ctx *ctx, ks_store *s, long long kernel, long long variant) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s, "SELECT kernel FROM variants WHERE id = ?", &st))
    return -1;
  sqlite3_bind_int64(st, 1, variant);
  int step = sqlite3_step(st), rc = 0;
  if (step == SQLITE_ROW && sqlite3_column_int64(st, 0) != kernel)
    rc = ks_fail(ctx, "%s: variant %lld belongs to kernel %lld, not %lld", s->path, variant,
                 sqlite3_column_int64(st, 0), kernel);
  else if (step == SQLITE_DONE)
    rc = ks_fail(ctx, "%s: there is no variant %lld", s->path, variant);
  else if (step != SQLITE_ROW)
    rc = store_fail(ctx, s, "cannot read a variant");
  sqlite3_finalize(st);
  return rc;
}

static void bind_evaluation(sqlite3_stmt *st, long long kernel, long long variant,
                            const ks_eval *e, const char *json) {
  bool timed = timed_verdict(e->verdict);
  sqlite3_bind_int64(st, 1, kernel);
  store_bind_id(st, 2, variant);
  store_bind_text(st, 3, ks_verdict_name(e->verdict));
  store_bind_text(st, 4, e->reason);
  /* NaN binds as NULL in SQLite, which is what an unknown number should be. */
  if (timed) {
    sqlite3_bind_double(st, 5, e->speedup);
    sqlite3_bind_double(st, 6, e->speedup_low);
    sqlite3_bind_double(st, 7, e->speedup_high);
  } else {
    for (int i = 5; i <= 7; i++)
      sqlite3_bind_null(st, i);
  }
  if (e->timed) {
    sqlite3_bind_double(st, 8, e->base_median_ms);
    if (variant)
      sqlite3_bind_double(st, 9, e->cand_median_ms);
    else
      sqlite3_bind_null(st, 9);
    sqlite3_bind_double(st, 12, variant ? e->cand_bw_fraction : e->base_bw_fraction);
  } else {
    sqlite3_bind_null(st, 8);
    sqlite3_bind_null(st, 9);
    sqlite3_bind_null(st, 12);
  }
  sqlite3_bind_int(st, 10, variant ? e->cand_registers : e->base_registers);
  sqlite3_bind_int(st, 11, variant ? e->cand_spills : e->base_spills);
  sqlite3_bind_double(st, 13, e->max_rel_error);
  sqlite3_bind_double(st, 14, e->compile_ms);
  sqlite3_bind_double(st, 15, e->wall_seconds);
  store_bind_text(st, 16, json);
}

int ks_store_eval_put(ks_ctx *ctx, ks_store *s, long long kernel, long long variant,
                      const ks_eval *e) {
  /* compile_log is not a member ks_eval_json writes: it never reaches the
   * file. */
  char *json = ks_eval_json_text(e, KS_EVAL_JSON_COMPLETE);
  if (!json)
    return ks_fail(ctx, "out of memory while writing an evaluation's JSON");
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc) {
    free(json);
    return rc;
  }
  if (variant)
    rc = check_owner(ctx, s, kernel, variant);
  if (!rc)
    rc = store_prepare(ctx, s,
                       "INSERT INTO evaluations (kernel, variant, created, verdict, reason, "
                       "speedup, speedup_low, speedup_high, base_median_ms, cand_median_ms, "
                       "registers, spill_bytes, bw_fraction, max_rel_error, compile_ms, "
                       "wall_seconds, json) VALUES (?, ?, " STORE_NOW ", ?, ?, ?, ?, ?, ?, ?, "
                       "?, ?, ?, ?, ?, ?, ?)",
                       &st);
  if (!rc) {
    bind_evaluation(st, kernel, variant, e, json);
    rc = store_step_done(ctx, s, st, "cannot record an evaluation");
  }
  long long id = rc ? 0 : sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(st);
  st = NULL;
  /* Who judged it, in the same transaction. */
  if (!rc)
    rc = store_prepare(ctx, s,
                       "INSERT INTO eval_devices (evaluation, device, worker) "
                       "VALUES (last_insert_rowid(), ?, ?)",
                       &st);
  if (!rc) {
    sqlite3_bind_int(st, 1, e->device);
    sqlite3_bind_int(st, 2, e->worker);
    rc = store_step_done(ctx, s, st, "cannot record who judged an evaluation");
  }
  sqlite3_finalize(st);
  st = NULL;
  /* And which rank on which host, for --mpi only (host set): a run without
   * MPI adds no row. */
  if (!rc && e->host)
    rc = store_prepare(ctx, s, "INSERT INTO eval_ranks (evaluation, rank, host) VALUES (?, ?, ?)",
                       &st);
  if (!rc && st) {
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, e->rank);
    store_bind_text(st, 3, e->host);
    rc = store_step_done(ctx, s, st, "cannot record which rank judged an evaluation");
  }
  sqlite3_finalize(st);
  rc = store_end(ctx, s, rc);
  free(json);
  return rc;
}

/* The newest evaluation's JSON: of `variant`, or the baseline of `kernel`. */
static int newest_json(ks_ctx *ctx, ks_store *s, long long kernel, long long variant,
                       ks_arena *a, const char **out) {
  sqlite3_stmt *st;
  *out = NULL;
  if (store_prepare(ctx, s,
                    variant ? "SELECT json FROM evaluations WHERE variant = ? "
                              "ORDER BY id DESC LIMIT 1"
                            : "SELECT json FROM evaluations WHERE kernel = ? AND variant IS NULL "
                              "ORDER BY id DESC LIMIT 1",
                    &st))
    return -1;
  sqlite3_bind_int64(st, 1, variant ? variant : kernel);
  int step = sqlite3_step(st), rc = 0;
  if (step == SQLITE_ROW)
    *out = store_col_text(a, st, 0);
  else if (step != SQLITE_DONE)
    rc = store_fail(ctx, s, "cannot read an evaluation");
  sqlite3_finalize(st);
  return rc;
}

int ks_store_eval_json(ks_ctx *ctx, ks_store *s, long long variant, ks_arena *a,
                       const char **out) {
  *out = NULL;
  return variant ? newest_json(ctx, s, 0, variant, a, out) : 0;
}

int ks_store_eval_get(ks_ctx *ctx, ks_store *s, long long kernel, long long variant,
                      ks_arena *a, ks_eval *out, bool *found) {
  const char *json;
  *found = false;
  if (newest_json(ctx, s, kernel, variant, a, &json))
    return -1;
  if (!json)
    return 0;
  if (ks_eval_from_json(ctx, json, a, out)) {
    ks_fail_prefix(ctx, s->path);
    return -1;
  }
  *found = true;
  return 0;
}

int ks_store_eval_count(ks_ctx *ctx, ks_store *s, long long run, long long *out) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s,
                    "SELECT count(*) FROM evaluations e JOIN kernels k ON k.id = e.kernel "
                    "WHERE k.run = ? AND e.variant IS NOT NULL",
                    &st))
    return -1;
  sqlite3_bind_int64(st, 1, run);
  int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : store_fail(ctx, s, "cannot count evaluations");
  if (!rc)
    *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc;
}

int ks_store_eval_workers(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a,
                          ks_eval_worker_counts *out) {
  memset(out, 0, sizeof *out);
  if (s->version < 5)
    return 0;
  /* A reader of a schema-5 store has no eval_ranks: every evaluation there
   * was made without --mpi. NULLs sort first, so a run without MPI comes
   * back in worker order, as before schema 6. */
  const char *sql =
      s->version < 6
          ? "SELECT 0, NULL, d.worker, d.device, count(*) FROM evaluations e "
            "JOIN kernels k ON k.id = e.kernel JOIN eval_devices d ON d.evaluation = e.id "
            "WHERE k.run = ? AND e.variant IS NOT NULL "
            "GROUP BY d.worker, d.device ORDER BY d.worker, d.device"
          : "SELECT coalesce(r.rank, 0), r.host, d.worker, d.device, count(*) FROM evaluations e "
            "JOIN kernels k ON k.id = e.kernel JOIN eval_devices d ON d.evaluation = e.id "
            "LEFT JOIN eval_ranks r ON r.evaluation = e.id "
            "WHERE k.run = ? AND e.variant IS NOT NULL "
            "GROUP BY 1, 2, d.worker, d.device ORDER BY 1, 2, d.worker, d.device";
  sqlite3_stmt *st;
  if (store_prepare(ctx, s, sql, &st))
    return -1;
  sqlite3_bind_int64(st, 1, run);
  int step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW)
    *ks_array_push(a, out) = (ks_eval_worker_count){.rank = sqlite3_column_int(st, 0),
                                                    .host = store_col_text(a, st, 1),
                                                    .worker = sqlite3_column_int(st, 2),
                                                    .device = sqlite3_column_int(st, 3),
                                                    .evaluations = sqlite3_column_int64(st, 4)};
  int rc = step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot count who judged evaluations");
  sqlite3_finalize(st);
  return rc;
}
