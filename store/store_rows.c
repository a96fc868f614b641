/* Runs, kernels, variants, the optimization memory and LLM calls: one
 * transaction per write (store_begin/store_end), every value bound as a
 * parameter, rows read back into the caller's arena. */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_eval_json.h"

/* ---- runs ---------------------------------------------------------------- */

#define RUN_COLUMNS "id, started, finished, status, command, strategy, proposer, seed, options, device"

static void read_run(ks_arena *a, sqlite3_stmt *st, ks_run_row *r) {
  r->id = sqlite3_column_int64(st, 0);
  r->started = store_col_text(a, st, 1);
  r->finished = store_col_text(a, st, 2);
  r->status = store_col_text(a, st, 3);
  r->command = store_col_text(a, st, 4);
  r->strategy = store_col_text(a, st, 5);
  r->proposer = store_col_text(a, st, 6);
  const char *seed = (const char *)sqlite3_column_text(st, 7);
  r->seed = seed ? strtoull(seed, NULL, 10) : 0;
  r->options = store_col_text(a, st, 8);
  r->device = store_col_text(a, st, 9);
}

int ks_store_run_begin(ks_ctx *ctx, ks_store *s, const ks_run_row *r, long long *id) {
  sqlite3_stmt *st = NULL;
  char seed[24];
  snprintf(seed, sizeof seed, "%llu", r->seed);
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT INTO runs (started, status, command, strategy, proposer, seed, "
                     "options, device) VALUES (" STORE_NOW ", 'running', ?, ?, ?, ?, ?, ?)",
                     &st);
  if (!rc) {
    store_bind_text(st, 1, r->command ? r->command : "optimize");
    store_bind_text(st, 2, r->strategy);
    store_bind_text(st, 3, r->proposer);
    store_bind_text(st, 4, seed);
    store_bind_text(st, 5, r->options);
    store_bind_text(st, 6, r->device);
    rc = store_step_done(ctx, s, st, "cannot begin a run");
  }
  if (!rc)
    *id = sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

/* One UPDATE of one row by id; a missing row is an error of the caller. */
static int update_one(ks_ctx *ctx, ks_store *s, sqlite3_stmt *st, const char *what,
                      long long id) {
  int rc = store_step_done(ctx, s, st, what);
  if (!rc && sqlite3_changes(s->db) != 1)
    rc = ks_fail(ctx, "%s: %s: there is no row %lld", s->path, what, id);
  return rc;
}

static int set_run_status(ks_ctx *ctx, ks_store *s, long long run, const char *status,
                          bool finished) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     finished ? "UPDATE runs SET status = ?, finished = " STORE_NOW " WHERE id = ?"
                              : "UPDATE runs SET status = ?, finished = NULL WHERE id = ?",
                     &st);
  if (!rc) {
    store_bind_text(st, 1, status);
    sqlite3_bind_int64(st, 2, run);
    rc = update_one(ctx, s, st, "cannot update a run", run);
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_run_finish(ks_ctx *ctx, ks_store *s, long long run, const char *status) {
  return set_run_status(ctx, s, run, status ? status : "done", true);
}

int ks_store_run_reopen(ks_ctx *ctx, ks_store *s, long long run) {
  return set_run_status(ctx, s, run, "running", false);
}

int ks_store_run_set_device(ks_ctx *ctx, ks_store *s, long long run, const char *device) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s, "UPDATE runs SET device = ? WHERE id = ?", &st);
  if (!rc) {
    store_bind_text(st, 1, device);
    sqlite3_bind_int64(st, 2, run);
    rc = update_one(ctx, s, st, "cannot update a run", run);
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_phase_put(ks_ctx *ctx, ks_store *s, long long run, const char *name,
                       const char *status, const char *data) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT OR REPLACE INTO phases (run, name, status, data, updated) "
                     "VALUES (?, ?, ?, ?, " STORE_NOW ")",
                     &st);
  if (!rc) {
    sqlite3_bind_int64(st, 1, run);
    store_bind_text(st, 2, name);
    store_bind_text(st, 3, status);
    store_bind_text(st, 4, data);
    rc = store_step_done(ctx, s, st, "cannot record a phase");
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_phase_get(ks_ctx *ctx, ks_store *s, long long run, const char *name, ks_arena *a,
                       const char **status, const char **data) {
  *status = *data = NULL;
  if (s->version < 4)
    return 0; /* a read-only store from before phases */
  sqlite3_stmt *st;
  if (store_prepare(ctx, s, "SELECT status, data FROM phases WHERE run = ? AND name = ?", &st))
    return -1;
  sqlite3_bind_int64(st, 1, run);
  store_bind_text(st, 2, name);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    *status = store_col_text(a, st, 0);
    *data = store_col_text(a, st, 1);
  }
  int rc = step == SQLITE_ROW || step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot read a phase");
  sqlite3_finalize(st);
  return rc;
}

/* Runs a query whose rows are runs, calling read_run into `out` (or into
 * one row with *found). */
static int query_runs(ks_ctx *ctx, ks_store *s, const char *sql, long long id, ks_arena *a,
                      ks_run_rows *rows, ks_run_row *one, bool *found) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s, sql, &st))
    return -1;
  if (id)
    sqlite3_bind_int64(st, 1, id);
  int step;
  if (found)
    *found = false;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (rows) {
      read_run(a, st, ks_array_push(a, rows));
    } else {
      read_run(a, st, one);
      *found = true;
    }
  }
  int rc = step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot read the runs");
  sqlite3_finalize(st);
  return rc;
}

int ks_store_run_get(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a, ks_run_row *out) {
  bool found;
  if (query_runs(ctx, s, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?", run, a, NULL, out,
                 &found))
    return -1;
  return found ? 0 : ks_fail(ctx, "%s: there is no run %lld", s->path, run);
}

int ks_store_run_latest(ks_ctx *ctx, ks_store *s, ks_arena *a, ks_run_row *out, bool *found) {
  return query_runs(ctx, s, "SELECT " RUN_COLUMNS " FROM runs ORDER BY id DESC LIMIT 1", 0, a,
                    NULL, out, found);
}

int ks_store_runs(ks_ctx *ctx, ks_store *s, ks_arena *a, ks_run_rows *out) {
  return query_runs(ctx, s, "SELECT " RUN_COLUMNS " FROM runs ORDER BY id", 0, a, out, NULL,
                    NULL);
}

/* ---- kernels ------------------------------------------------------------- */

static int select_id(ks_ctx *ctx, ks_store *s, sqlite3_stmt *st, const char *what,
                     long long *id) {
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    return 0;
  }
  return step == SQLITE_DONE ? ks_fail(ctx, "%s: %s: not found", s->path, what)
                             : store_fail(ctx, s, what);
}

int ks_store_kernel_put(ks_ctx *ctx, ks_store *s, const ks_kernel_row *k, long long *id) {
  sqlite3_stmt *ins = NULL, *sel = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT INTO kernels (run, name, file, line, source_hash, slice, spec, "
                     "status, note, baseline_ms, sites, created, updated) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " STORE_NOW ", " STORE_NOW ") "
                     "ON CONFLICT (run, name) DO NOTHING",
                     &ins);
  if (!rc) {
    sqlite3_bind_int64(ins, 1, k->run);
    store_bind_text(ins, 2, k->name);
    store_bind_text(ins, 3, k->file);
    sqlite3_bind_int64(ins, 4, k->line);
    store_bind_text(ins, 5, k->source_hash);
    store_bind_text(ins, 6, k->slice);
    store_bind_text(ins, 7, k->spec);
    store_bind_text(ins, 8, k->status ? k->status : "pending");
    store_bind_text(ins, 9, k->note);
    sqlite3_bind_double(ins, 10, k->baseline_ms);
    store_bind_text(ins, 11, k->sites);
    rc = store_step_done(ctx, s, ins, "cannot add a kernel");
  }
  if (!rc)
    rc = store_prepare(ctx, s, "SELECT id FROM kernels WHERE run = ? AND name = ?", &sel);
  if (!rc) {
    sqlite3_bind_int64(sel, 1, k->run);
    store_bind_text(sel, 2, k->name);
    rc = select_id(ctx, s, sel, "cannot find the kernel just added", id);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  return store_end(ctx, s, rc);
}

int ks_store_kernel_update(ks_ctx *ctx, ks_store *s, long long kernel, const char *status,
                           const char *note, double baseline_ms) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "UPDATE kernels SET status = coalesce(?, status), note = ?, "
                     "baseline_ms = CASE WHEN ? > 0 THEN ? ELSE baseline_ms END, "
                     "updated = " STORE_NOW " WHERE id = ?",
                     &st);
  if (!rc) {
    store_bind_text(st, 1, status);
    store_bind_text(st, 2, note);
    sqlite3_bind_double(st, 3, baseline_ms);
    sqlite3_bind_double(st, 4, baseline_ms);
    sqlite3_bind_int64(st, 5, kernel);
    rc = update_one(ctx, s, st, "cannot update a kernel", kernel);
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_kernel_set_winner(ks_ctx *ctx, ks_store *s, long long kernel, long long variant) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s, "UPDATE kernels SET winner = ?, updated = " STORE_NOW " WHERE id = ?",
                     &st);
  if (!rc) {
    sqlite3_bind_int64(st, 1, variant); /* 0 is kept: none was confirmed */
    sqlite3_bind_int64(st, 2, kernel);
    rc = update_one(ctx, s, st, "cannot name a kernel's winner", kernel);
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

bool ks_store_has_winners(const ks_store *s) { return s->version >= 3; }

int ks_store_kernel_set_insight(ks_ctx *ctx, ks_store *s, long long kernel, const char *json) {
  if (s->version < 4)
    return 0;
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s, "UPDATE kernels SET insight = ?, updated = " STORE_NOW " WHERE id = ?",
                     &st);
  if (!rc) {
    store_bind_text(st, 1, json);
    sqlite3_bind_int64(st, 2, kernel);
    rc = update_one(ctx, s, st, "cannot record what was learned about a kernel", kernel);
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_kernels(ks_ctx *ctx, ks_store *s, long long run, ks_arena *a, ks_kernel_rows *out) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s,
                    s->version >= 4
                        ? "SELECT id, run, name, file, line, source_hash, slice, spec, status, "
                          "note, baseline_ms, winner, sites, insight FROM kernels WHERE run = ? "
                          "ORDER BY id"
                    : ks_store_has_winners(s)
                        ? "SELECT id, run, name, file, line, source_hash, slice, spec, status, "
                          "note, baseline_ms, winner, sites, NULL FROM kernels WHERE run = ? "
                          "ORDER BY id"
                        : "SELECT id, run, name, file, line, source_hash, slice, spec, status, "
                          "note, baseline_ms, NULL, NULL, NULL FROM kernels WHERE run = ? ORDER BY "
                          "id",
                    &st))
    return -1;
  sqlite3_bind_int64(st, 1, run);
  int step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    ks_kernel_row *k = ks_array_push(a, out);
    k->id = sqlite3_column_int64(st, 0);
    k->run = sqlite3_column_int64(st, 1);
    k->name = store_col_text(a, st, 2);
    k->file = store_col_text(a, st, 3);
    k->line = (unsigned)sqlite3_column_int64(st, 4);
    k->source_hash = store_col_text(a, st, 5);
    k->slice = store_col_text(a, st, 6);
    k->spec = store_col_text(a, st, 7);
    k->status = store_col_text(a, st, 8);
    k->note = store_col_text(a, st, 9);
    k->baseline_ms = sqlite3_column_double(st, 10);
    k->winner = sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 11);
    k->sites = store_col_text(a, st, 12);
    k->insight = store_col_text(a, st, 13);
  }
  int rc = step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot read the kernels");
  sqlite3_finalize(st);
  return rc;
}

/* ---- variants ------------------------------------------------------------ */

const char *ks_store_requires_join(ks_arena *a, const ks_strings *requires) {
  if (!requires->len)
    return NULL;
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < requires->len; i++)
    ks_buf_addf(&b, "%s%s", i ? "\n" : "", requires->items[i]);
  const char *s = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return s;
}

void ks_store_requires_split(ks_arena *a, const char *text, ks_strings *out) {
  while (text && *text) {
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text) : strlen(text);
    if (n)
      *ks_array_push(a, out) = ks_arena_strndup(a, text, n);
    text += n + (nl != NULL);
  }
}

int ks_store_variant_put(ks_ctx *ctx, ks_store *s, const ks_variant_row *v, long long *id,
                         bool *existed) {
  sqlite3_stmt *ins = NULL, *sel = NULL;
  if (!v->hash || !v->source)
    return ks_fail(ctx, "%s: a variant needs its hash and source", s->path);
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT INTO variants (kernel, parent, hash, source, kernel_name, "
                     "is_template, grid, block, smem, requires, proposer, techniques, round, "
                     "island, plan, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     STORE_NOW ") ON CONFLICT (kernel, hash) DO NOTHING",
                     &ins);
  if (!rc) {
    sqlite3_bind_int64(ins, 1, v->kernel);
    store_bind_id(ins, 2, v->parent);
    store_bind_text(ins, 3, v->hash);
    store_bind_text(ins, 4, v->source);
    store_bind_text(ins, 5, v->kernel_name);
    sqlite3_bind_int(ins, 6, v->is_template);
    store_bind_text(ins, 7, v->grid);
    store_bind_text(ins, 8, v->block);
    store_bind_text(ins, 9, v->smem);
    store_bind_text(ins, 10, v->requires);
    store_bind_text(ins, 11, v->proposer);
    store_bind_text(ins, 12, v->techniques);
    sqlite3_bind_int(ins, 13, v->round);
    sqlite3_bind_int(ins, 14, v->island);
    store_bind_text(ins, 15, v->plan);
    rc = store_step_done(ctx, s, ins, "cannot add a variant");
  }
  if (!rc) {
    *existed = sqlite3_changes(s->db) == 0;
    rc = store_prepare(ctx, s, "SELECT id FROM variants WHERE kernel = ? AND hash = ?", &sel);
  }
  if (!rc) {
    sqlite3_bind_int64(sel, 1, v->kernel);
    store_bind_text(sel, 2, v->hash);
    rc = select_id(ctx, s, sel, "cannot find the variant just added", id);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  return store_end(ctx, s, rc);
}

int ks_store_variants(ks_ctx *ctx, ks_store *s, long long kernel, ks_arena *a,
                      ks_variant_rows *out) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s,
                    "SELECT v.id, v.kernel, v.parent, v.hash, v.source, v.kernel_name, "
                    "v.is_template, v.grid, v.block, v.smem, v.requires, v.proposer, "
                    "v.techniques, v.round, v.island, e.verdict, e.speedup, e.cand_median_ms, "
                    "e.registers, e.bw_fraction, e.speedup_low, e.reason, v.plan "
                    "FROM variants v LEFT JOIN evaluations e "
                    "ON e.id = (SELECT max(id) FROM evaluations WHERE variant = v.id) "
                    "WHERE v.kernel = ? ORDER BY v.id",
                    &st))
    return -1;
  sqlite3_bind_int64(st, 1, kernel);
  int step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    ks_variant_row *v = ks_array_push(a, out);
    v->id = sqlite3_column_int64(st, 0);
    v->kernel = sqlite3_column_int64(st, 1);
    v->parent = sqlite3_column_int64(st, 2); /* NULL reads as 0 */
    v->hash = store_col_text(a, st, 3);
    v->source = store_col_text(a, st, 4);
    v->kernel_name = store_col_text(a, st, 5);
    v->is_template = sqlite3_column_int(st, 6) != 0;
    v->grid = store_col_text(a, st, 7);
    v->block = store_col_text(a, st, 8);
    v->smem = store_col_text(a, st, 9);
    v->requires = store_col_text(a, st, 10);
    v->proposer = store_col_text(a, st, 11);
    v->techniques = store_col_text(a, st, 12);
    v->round = sqlite3_column_int(st, 13);
    v->island = sqlite3_column_int(st, 14);
    v->plan = store_col_text(a, st, 22);
    v->evaluated = sqlite3_column_type(st, 15) != SQLITE_NULL;
    if (v->evaluated) {
      int verdict = ks_verdict_from_name((const char *)sqlite3_column_text(st, 15));
      v->verdict = verdict < 0 ? KS_VERDICT_CRASH : (ks_verdict)verdict;
      v->speedup = sqlite3_column_double(st, 16);
      v->median_ms = sqlite3_column_double(st, 17);
      v->registers = sqlite3_column_int(st, 18);
      v->bw_fraction = sqlite3_column_double(st, 19);
      v->speedup_low = sqlite3_column_double(st, 20);
      v->reason = store_col_text(a, st, 21);
    }
  }
  int rc = step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot read the variants");
  sqlite3_finalize(st);
  return rc;
}

/* ---- memory -------------------------------------------------------------- */

int ks_store_memory_put(ks_ctx *ctx, ks_store *s, long long kernel, const char *kind,
                        const char *text) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT INTO memory (kernel, kind, text, created) VALUES (?, ?, ?, "
                     STORE_NOW ")",
                     &st);
  if (!rc) {
    store_bind_id(st, 1, kernel);
    store_bind_text(st, 2, kind);
    store_bind_text(st, 3, text);
    rc = store_step_done(ctx, s, st, "cannot add to the memory");
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_memory(ks_ctx *ctx, ks_store *s, long long kernel, const char *kind, ks_arena *a,
                    ks_strings *out) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s,
                    "SELECT text FROM memory WHERE kernel IS ? AND (? IS NULL OR kind = ?) "
                    "ORDER BY id",
                    &st))
    return -1;
  store_bind_id(st, 1, kernel);
  store_bind_text(st, 2, kind);
  store_bind_text(st, 3, kind);
  int step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW)
    *ks_array_push(a, out) = store_col_text(a, st, 0);
  int rc = step == SQLITE_DONE ? 0 : store_fail(ctx, s, "cannot read the memory");
  sqlite3_finalize(st);
  return rc;
}

/* ---- LLM calls ----------------------------------------------------------- */

int ks_store_llm_call_put(ks_ctx *ctx, ks_store *s, const ks_llm_call_row *c) {
  sqlite3_stmt *st = NULL;
  int rc = store_begin(ctx, s);
  if (rc)
    return rc;
  rc = store_prepare(ctx, s,
                     "INSERT INTO llm_calls (run, kernel, created, role, model, prompt_hash, "
                     "response_hash, prompt_tokens, response_tokens, seconds, cost, status, "
                     "request, response) "
                     "VALUES (?, ?, " STORE_NOW ", ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     &st);
  if (!rc) {
    sqlite3_bind_int64(st, 1, c->run);
    store_bind_id(st, 2, c->kernel);
    store_bind_text(st, 3, c->role);
    store_bind_text(st, 4, c->model);
    store_bind_text(st, 5, c->prompt_hash);
    store_bind_text(st, 6, c->response_hash);
    sqlite3_bind_int64(st, 7, c->prompt_tokens);
    sqlite3_bind_int64(st, 8, c->response_tokens);
    sqlite3_bind_double(st, 9, c->seconds);
    sqlite3_bind_double(st, 10, c->cost);
    store_bind_text(st, 11, c->status);
    store_bind_text(st, 12, c->request);
    store_bind_text(st, 13, c->response);
    rc = store_step_done(ctx, s, st, "cannot record an LLM call");
  }
  sqlite3_finalize(st);
  return store_end(ctx, s, rc);
}

int ks_store_llm_cached(ks_ctx *ctx, ks_store *s, const char *prompt_hash, ks_arena *a,
                        ks_llm_call_row *out, bool *found) {
  sqlite3_stmt *st;
  memset(out, 0, sizeof *out);
  *found = false;
  if (store_prepare(ctx, s,
                    "SELECT run, kernel, role, model, prompt_hash, response_hash, request, "
                    "response, prompt_tokens, response_tokens, seconds, cost, status "
                    "FROM llm_calls WHERE prompt_hash = ? AND status = 'ok' "
                    "AND response IS NOT NULL ORDER BY id DESC LIMIT 1",
                    &st))
    return -1;
  store_bind_text(st, 1, prompt_hash);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    *found = true;
    out->run = sqlite3_column_int64(st, 0);
    out->kernel = sqlite3_column_int64(st, 1);
    out->role = store_col_text(a, st, 2);
    out->model = store_col_text(a, st, 3);
    out->prompt_hash = store_col_text(a, st, 4);
    out->response_hash = store_col_text(a, st, 5);
    out->request = store_col_text(a, st, 6);
    out->response = store_col_text(a, st, 7);
    out->prompt_tokens = sqlite3_column_int64(st, 8);
    out->response_tokens = sqlite3_column_int64(st, 9);
    out->seconds = sqlite3_column_double(st, 10);
    out->cost = sqlite3_column_double(st, 11);
    out->status = store_col_text(a, st, 12);
  }
  int rc = step == SQLITE_ROW || step == SQLITE_DONE ? 0
                                                     : store_fail(ctx, s, "cannot read the LLM cache");
  sqlite3_finalize(st);
  return rc;
}

int ks_store_llm_usage(ks_ctx *ctx, ks_store *s, long long run, long long kernel,
                       ks_llm_usage *out) {
  sqlite3_stmt *st;
  if (store_prepare(ctx, s,
                    "SELECT count(*), total(prompt_tokens), total(response_tokens), "
                    "total(seconds), total(cost) FROM llm_calls WHERE run = ? "
                    "AND (?2 = 0 OR kernel = ?2)",
                    &st))
    return -1;
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_int64(st, 2, kernel);
  int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : store_fail(ctx, s, "cannot read the LLM calls");
  if (!rc) {
    out->calls = sqlite3_column_int64(st, 0);
    out->prompt_tokens = sqlite3_column_int64(st, 1);
    out->response_tokens = sqlite3_column_int64(st, 2);
    out->seconds = sqlite3_column_double(st, 3);
    out->cost = sqlite3_column_double(st, 4);
  }
  sqlite3_finalize(st);
  return rc;
}
