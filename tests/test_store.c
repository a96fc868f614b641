/* test_store: the results store (store/ks_store.h) on real SQLite files in
 * temporary directories: every function, the schema version rules, files
 * that are not stores, fault injection, and two processes sharing a store.
 *
 * Two more modes serve tests/store_kill.sh, which kills a writer with
 * SIGKILL and checks that nothing committed was lost:
 *   test_store --writer DIR N   prints "opening", then writes evaluations
 *                               until the run has N, printing
 *                               "committed K" after each commit
 *                               (and first evaluates any variant a killed
 *                               writer left without its evaluation);
 *   test_store --verify DIR     checks the file and prints "evaluations N". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>
#include <pwd.h>
#include <sqlite3.h>

#include "ks_eval_json.h"
#include "ks_fs.h"
#include "ks_store.h"
#include "ks_test.h"

static ks_ctx ctx;
static char tmp[64];       /* this test's scratch directory */
static char store_dir[128]; /* tmp/project/.kernelsmith */

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_store");
  ctx.verbosity = KS_LOG_ERROR;
  snprintf(tmp, sizeof tmp, "/tmp/ks-store-XXXXXX");
  if (!mkdtemp(tmp))
    return -1;
  snprintf(store_dir, sizeof store_dir, "%s/project/.kernelsmith", tmp);
  return 0;
}

static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  int rc = system(cmd);
  ks_ctx_release(&ctx);
  return rc;
}

static ks_store *open_store(void) {
  ks_store *s = NULL;
  if (ks_store_open(&ctx, store_dir, &s))
    fail_msg("%s", ctx.error);
  return s;
}

static long long new_run(ks_store *s) {
  ks_run_row r = {.command = "optimize", .strategy = "evolve", .proposer = "rules", .seed = 7,
                  .options = "{\"budget\": 20}"};
  long long id = 0;
  assert_int_equal(ks_store_run_begin(&ctx, s, &r, &id), 0);
  return id;
}

static long long new_kernel(ks_store *s, long long run, const char *name) {
  ks_kernel_row k = {.run = run, .name = name, .file = "src/k.cu", .line = 12,
                     .source_hash = "ab12", .slice = "__global__ void k() {}", .spec = "size n",
                     .sites = "d1\nd2"};
  long long id = 0;
  if (ks_store_kernel_put(&ctx, s, &k, &id))
    fail_msg("%s", ctx.error);
  return id;
}

static long long new_variant(ks_store *s, long long kernel, const char *hash, bool *existed) {
  ks_variant_row v = {.kernel = kernel, .hash = hash, .source = "__global__ void k_v() {}",
                      .kernel_name = "k_v", .block = "128", .proposer = "rules",
                      .techniques = "block=128", .round = 1};
  long long id = 0;
  bool dummy;
  if (ks_store_variant_put(&ctx, s, &v, &id, existed ? existed : &dummy))
    fail_msg("%s", ctx.error);
  return id;
}

/* An evaluation with every field set to something distinct, including a
 * seed above 2^53 and a NaN. */
static ks_eval full_eval(ks_arena *a, double speedup) {
  ks_eval e = {0};
  e.verdict = KS_VERDICT_FAST;
  e.reason = ks_arena_printf(a, "%.2fx faster", speedup);
  e.compile_log = "k.cu(3): warning: SECRET-COMPILE-LOG";
  e.compile_ms = 123.25;
  e.compile_cached = true;
  e.base_registers = 32, e.cand_registers = 40, e.base_spills = 4, e.cand_spills = 8;
  e.base_smem = 1024, e.cand_smem = 4096;
  for (int i = 0; i < 2; i++) {
    ks_size_report *s = ks_array_push(a, &e.sizes);
    s->size = i ? "odd" : "timed";
    s->timed = !i;
    s->guards_hold = !i;
    s->launch = (ks_launch_cfg){{1024u + (unsigned)i, 2, 3}, {256, 1, 1}, 4096};
    for (int k = 0; k < 2 && !i; k++) {
      ks_seed_check *sc = ks_array_push(a, &s->seeds);
      sc->seed = k ? 7 : 0xDEADBEEFCAFEF00Dull;
      sc->race = k == 1;
      sc->race_buffer = k ? "y" : NULL;
      sc->base_nondeterministic = true;
      sc->canary_buffer = "x";
      sc->canary_before = true;
      sc->base_canary_buffer = k ? "z" : NULL;
      sc->base_canary_before = k == 1;
      sc->changed_input = k ? NULL : "x";
      ks_output_check *o = ks_array_push(a, &sc->outputs);
      o->buffer = "y";
      o->count = 1ull << 20;
      o->mismatches = 3;
      o->unwritten = 1;
      o->max_abs_error = 2.5e-7;
      o->max_rel_error = 1.0 / 3.0;
      o->first_mismatch = k ? -1 : 17;
      o->expected = 1.5;
      o->got = NAN;
      o->has_ref = true;
      o->ref_base_max_abs = 1e-6, o->ref_base_max_rel = 2e-6;
      o->ref_cand_max_abs = 3e-6, o->ref_cand_max_rel = 4e-6;
      o->ref_mismatches = 2;
      o->ref_first_mismatch = 5;
      o->ref_value = 0.1, o->ref_got = 0.2, o->ref_base = 0.3;
    }
  }
  e.max_abs_error = 2.5e-7, e.max_rel_error = 1.0 / 3.0;
  e.has_ref = true;
  e.ref_base_max_abs = 1e-6, e.ref_base_max_rel = 2e-6;
  e.ref_cand_max_abs = 3e-6, e.ref_cand_max_rel = 4e-6;
  e.timed = true;
  e.base_samples = 50, e.cand_samples = 48, e.dropped_low_clock = 3;
  e.base_median_ms = 0.5, e.cand_median_ms = 0.5 / speedup;
  e.base_iqr_ms = 0.01, e.cand_iqr_ms = 0.02;
  e.base_rsd = 0.004, e.cand_rsd = 0.006;
  e.speedup = speedup, e.speedup_low = speedup - 0.03, e.speedup_high = speedup + 0.03;
  e.sm_clock_min_mhz = 1755, e.sm_clock_max_mhz = 1980;
  e.timing_seconds = 2.5;
  e.bytes_min = (1ull << 60) + 1;
  e.floor_ms = 0.1;
  e.base_bandwidth = 3.3e12, e.cand_bandwidth = 4.1e12;
  e.base_bw_fraction = 0.7, e.cand_bw_fraction = 0.85;
  e.flops = 2e9, e.base_flop_rate = 4e12, e.cand_flop_rate = 5e12, e.cand_flop_fraction = 0.1;
  e.wall_seconds = 4.75;
  return e;
}

static bool iso_utc(const char *t) {
  /* 2025-01-31T12:00:00.123Z */
  return t && strlen(t) == 24 && t[4] == '-' && t[10] == 'T' && t[13] == ':' && t[23] == 'Z';
}

/* ---- opening ------------------------------------------------------------- */

static void open_creates_directory_gitignore_and_wal(void **state) {
  ks_store *s = open_store();
  assert_true(ks_is_dir(store_dir));
  char path[256];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  assert_string_equal(ks_store_path(s), path);
  ks_buf b = KS_BUF_INIT;
  snprintf(path, sizeof path, "%s/.gitignore", store_dir);
  assert_int_equal(ks_read_file(&ctx, path, 100, &b), 0);
  assert_string_equal(b.data, "*\n");
  ks_buf_release(&b);
  new_run(s);
  /* WAL: bytes 18 and 19 of the header say 2 (write-ahead log), and the
   * log exists while the store is open. */
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  FILE *f = fopen(path, "rb");
  unsigned char header[100];
  assert_non_null(f);
  assert_int_equal(fread(header, 1, sizeof header, f), sizeof header);
  fclose(f);
  assert_int_equal(header[18], 2);
  assert_int_equal(header[19], 2);
  snprintf(path, sizeof path, "%s/kernelsmith.db-wal", store_dir);
  assert_true(ks_is_file(path));
  ks_store_close(s);
  /* Opening again keeps what is there; a user's .gitignore is left alone. */
  snprintf(path, sizeof path, "%s/.gitignore", store_dir);
  f = fopen(path, "w");
  fputs("*.db\n", f);
  fclose(f);
  s = open_store();
  ks_arena a = KS_ARENA_INIT;
  ks_run_rows runs = {0};
  assert_int_equal(ks_store_runs(&ctx, s, &a, &runs), 0);
  assert_int_equal(runs.len, 1);
  assert_int_equal(ks_read_file(&ctx, path, 100, &b), 0);
  assert_string_equal(b.data, "*.db\n");
  ks_buf_release(&b);
  const char *problem = "unset";
  assert_int_equal(ks_store_check(&ctx, s, &a, &problem), 0);
  assert_null(problem);
  ks_arena_release(&a);
  ks_store_close(s);
}

static void open_fails_where_a_file_blocks_the_directory(void **state) {
  char path[256];
  snprintf(path, sizeof path, "%s/project", tmp);
  FILE *f = fopen(path, "w");
  fclose(f);
  ks_store *s = (ks_store *)&s;
  assert_int_equal(ks_store_open(&ctx, store_dir, &s), -1);
  assert_null(s);
  assert_non_null(strstr(ctx.error, "project"));
}

/* ---- runs ---------------------------------------------------------------- */

static void runs_begin_finish_reopen(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  ks_run_row latest;
  bool found = true;
  assert_int_equal(ks_store_run_latest(&ctx, s, &a, &latest, &found), 0);
  assert_false(found);

  long long first = new_run(s);
  ks_run_row r = {.command = "optimize", .strategy = "beam", .proposer = "llm",
                  .seed = 0xFFFFFFFFFFFFFFFFull, .options = "{\"x\": \"it's\"}",
                  .device = "NVIDIA H200, driver 580.159.04"};
  long long second = 0;
  assert_int_equal(ks_store_run_begin(&ctx, s, &r, &second), 0);
  assert_true(second > first);

  ks_run_row got;
  assert_int_equal(ks_store_run_get(&ctx, s, second, &a, &got), 0);
  assert_int_equal(got.id, second);
  assert_true(iso_utc(got.started));
  assert_null(got.finished);
  assert_string_equal(got.status, "running");
  assert_string_equal(got.strategy, "beam");
  assert_string_equal(got.proposer, "llm");
  assert_true(got.seed == 0xFFFFFFFFFFFFFFFFull);
  assert_string_equal(got.options, "{\"x\": \"it's\"}");
  assert_string_equal(got.device, "NVIDIA H200, driver 580.159.04");

  assert_int_equal(ks_store_run_latest(&ctx, s, &a, &latest, &found), 0);
  assert_true(found);
  assert_int_equal(latest.id, second);

  assert_int_equal(ks_store_run_finish(&ctx, s, first, "interrupted"), 0);
  assert_int_equal(ks_store_run_get(&ctx, s, first, &a, &got), 0);
  assert_string_equal(got.status, "interrupted");
  assert_true(iso_utc(got.finished));
  assert_null(got.device);
  assert_true(got.seed == 7);

  assert_int_equal(ks_store_run_reopen(&ctx, s, first), 0);
  assert_int_equal(ks_store_run_get(&ctx, s, first, &a, &got), 0);
  assert_string_equal(got.status, "running");
  assert_null(got.finished);

  ks_run_rows runs = {0};
  assert_int_equal(ks_store_runs(&ctx, s, &a, &runs), 0);
  assert_int_equal(runs.len, 2);
  assert_int_equal(runs.items[0].id, first);
  assert_int_equal(runs.items[1].id, second);

  /* A run that is not there is an error naming the file. */
  assert_int_equal(ks_store_run_get(&ctx, s, 999, &a, &got), -1);
  assert_non_null(strstr(ctx.error, "kernelsmith.db"));
  assert_non_null(strstr(ctx.error, "999"));
  assert_int_equal(ks_store_run_finish(&ctx, s, 999, "done"), -1);
  assert_non_null(strstr(ctx.error, "kernelsmith.db"));
  ks_arena_release(&a);
  ks_store_close(s);
}

/* ---- kernels ------------------------------------------------------------- */

/* A run's phases (tune): absent until put, replaced by a later put, the
 * device set after the run began. */
static void phases_put_get_replace(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_store *s = open_store();
  long long run = new_run(s);
  const char *status = "x", *data = "x";
  assert_int_equal(ks_store_phase_get(&ctx, s, run, "profile", &a, &status, &data), 0);
  assert_null(status);
  assert_null(data);
  assert_int_equal(ks_store_phase_put(&ctx, s, run, "profile", "running", NULL), 0);
  assert_int_equal(ks_store_phase_put(&ctx, s, run, "profile", "done", "{\"k\": 1}"), 0);
  assert_int_equal(ks_store_phase_get(&ctx, s, run, "profile", &a, &status, &data), 0);
  assert_string_equal(status, "done");
  assert_string_equal(data, "{\"k\": 1}");
  assert_int_equal(ks_store_phase_get(&ctx, s, run, "capture", &a, &status, &data), 0);
  assert_null(status);
  assert_int_equal(ks_store_phase_put(&ctx, s, run + 1, "profile", "done", NULL), -1);
  assert_int_equal(ks_store_run_set_device(&ctx, s, run, "GPU X, sm_90, driver 1"), 0);
  ks_run_row r;
  assert_int_equal(ks_store_run_get(&ctx, s, run, &a, &r), 0);
  assert_string_equal(r.device, "GPU X, sm_90, driver 1");
  assert_int_equal(ks_store_run_set_device(&ctx, s, run + 1, "none"), -1);
  ks_store_close(s);
  ks_arena_release(&a);
}

static void kernels_put_twice_returns_the_same_id(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s), other_run = new_run(s);
  long long k1 = new_kernel(s, run, "ns::saxpy");
  assert_int_equal(new_kernel(s, run, "ns::saxpy"), k1);
  long long k2 = new_kernel(s, run, "reduce<float, 256>");
  assert_true(k2 != k1);
  assert_true(new_kernel(s, other_run, "ns::saxpy") != k1);

  assert_int_equal(ks_store_kernel_update(&ctx, s, k1, "skipped", "no spec", 0.25), 0);
  assert_int_equal(ks_store_kernel_update(&ctx, s, k2, "searching", NULL, 0), 0);
  ks_kernel_rows ks = {0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_int_equal(ks.len, 2);
  assert_int_equal(ks.items[0].id, k1);
  assert_int_equal(ks.items[0].run, run);
  assert_string_equal(ks.items[0].name, "ns::saxpy");
  assert_string_equal(ks.items[0].file, "src/k.cu");
  assert_int_equal(ks.items[0].line, 12);
  assert_string_equal(ks.items[0].source_hash, "ab12");
  assert_string_equal(ks.items[0].slice, "__global__ void k() {}");
  assert_string_equal(ks.items[0].spec, "size n");
  assert_string_equal(ks.items[0].sites, "d1\nd2");
  assert_string_equal(ks.items[0].status, "skipped");
  assert_string_equal(ks.items[0].note, "no spec");
  assert_true(ks.items[0].baseline_ms == 0.25);
  assert_string_equal(ks.items[1].status, "searching");
  assert_null(ks.items[1].note);
  /* NULL status and a zero baseline keep what is there. */
  assert_int_equal(ks_store_kernel_update(&ctx, s, k1, NULL, NULL, 0), 0);
  ks = (ks_kernel_rows){0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_string_equal(ks.items[0].status, "skipped");
  assert_true(ks.items[0].baseline_ms == 0.25);

  assert_int_equal(ks_store_kernel_update(&ctx, s, 12345, "done", NULL, 0), -1);
  assert_non_null(strstr(ctx.error, "12345"));
  /* The winner: not recorded until named, then the variant; 0: none. */
  assert_int_equal(ks.items[0].winner, -1);
  bool existed = false;
  long long v = new_variant(s, k1, "hw", &existed);
  assert_int_equal(ks_store_kernel_set_winner(&ctx, s, k1, v), 0);
  ks = (ks_kernel_rows){0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_int_equal(ks.items[0].winner, v);
  assert_int_equal(ks.items[1].winner, -1);
  assert_int_equal(ks_store_kernel_set_winner(&ctx, s, k1, 0), 0);
  ks = (ks_kernel_rows){0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_int_equal(ks.items[0].winner, 0);
  assert_int_equal(ks_store_kernel_set_winner(&ctx, s, 12345, v), -1);
  /* A kernel of a run that does not exist: the foreign key refuses it. */
  ks_kernel_row orphan = {.run = 777, .name = "x"};
  long long id;
  assert_int_equal(ks_store_kernel_put(&ctx, s, &orphan, &id), -1);
  assert_non_null(strstr(ctx.error, "FOREIGN KEY"));
  ks_arena_release(&a);
  ks_store_close(s);
}

/* ---- variants ------------------------------------------------------------ */

static void variants_dedupe_by_hash_and_join_evaluations(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s);
  long long k = new_kernel(s, run, "k"), k2 = new_kernel(s, run, "k2");
  bool existed = true;
  long long v1 = new_variant(s, k, "h1", &existed);
  assert_false(existed);
  assert_int_equal(new_variant(s, k, "h1", &existed), v1);
  assert_true(existed);
  /* The same hash under another kernel is another variant. */
  assert_true(new_variant(s, k2, "h1", &existed) != v1);
  assert_false(existed);

  /* Text that would break SQL built by hand goes in and out unchanged. */
  const char *nasty = "'); DROP TABLE variants; -- \"quoted\" \\ \n\t ünïcode";
  ks_variant_row v = {.kernel = k, .parent = v1, .hash = "h2", .source = nasty,
                      .kernel_name = "k_v2", .is_template = true, .grid = "ceil_div(n, 256)",
                      .block = "256", .smem = "0", .requires = "n % 4 == 0\naligned(x, 16)",
                      .proposer = "llm", .techniques = "block=256 > vectorize", .round = 3,
                      .island = 2};
  long long v2 = 0;
  assert_int_equal(ks_store_variant_put(&ctx, s, &v, &v2, &existed), 0);
  assert_false(existed);

  ks_variant_rows rows = {0};
  assert_int_equal(ks_store_variants(&ctx, s, k, &a, &rows), 0);
  assert_int_equal(rows.len, 2);
  assert_int_equal(rows.items[0].id, v1);
  assert_int_equal(rows.items[0].parent, 0);
  assert_false(rows.items[0].evaluated);
  assert_false(rows.items[1].evaluated);
  const ks_variant_row *r = &rows.items[1];
  assert_int_equal(r->id, v2);
  assert_int_equal(r->kernel, k);
  assert_int_equal(r->parent, v1);
  assert_string_equal(r->hash, "h2");
  assert_string_equal(r->source, nasty);
  assert_string_equal(r->kernel_name, "k_v2");
  assert_true(r->is_template);
  assert_string_equal(r->grid, "ceil_div(n, 256)");
  assert_string_equal(r->block, "256");
  assert_string_equal(r->smem, "0");
  assert_string_equal(r->requires, "n % 4 == 0\naligned(x, 16)");
  assert_string_equal(r->proposer, "llm");
  assert_string_equal(r->techniques, "block=256 > vectorize");
  assert_int_equal(r->round, 3);
  assert_int_equal(r->island, 2);

  /* An evaluation joins in; a second one of the same variant (a recheck)
   * replaces it in the join. */
  ks_eval e = full_eval(&a, 1.5);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  e = full_eval(&a, 1.25);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  ks_eval wrong = {.verdict = KS_VERDICT_WRONG, .reason = "y[17]: expected 1, got 2",
                   .speedup = 9, .cand_registers = 30};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &wrong), 0);
  rows = (ks_variant_rows){0};
  assert_int_equal(ks_store_variants(&ctx, s, k, &a, &rows), 0);
  assert_true(rows.items[0].evaluated);
  assert_int_equal(rows.items[0].verdict, KS_VERDICT_WRONG);
  assert_true(rows.items[0].speedup == 0); /* not a timed verdict */
  assert_int_equal(rows.items[0].registers, 30);
  assert_string_equal(rows.items[0].reason, "y[17]: expected 1, got 2");
  r = &rows.items[1];
  assert_true(r->evaluated);
  assert_int_equal(r->verdict, KS_VERDICT_FAST);
  assert_true(r->speedup == 1.25);
  assert_true(r->speedup_low == 1.25 - 0.03);
  assert_true(r->median_ms == 0.5 / 1.25);
  assert_int_equal(r->registers, 40);
  assert_true(r->bw_fraction == 0.85);
  assert_string_equal(r->reason, "1.25x faster");

  /* A variant needs its hash and source. */
  ks_variant_row empty = {.kernel = k};
  assert_int_equal(ks_store_variant_put(&ctx, s, &empty, &v2, &existed), -1);
  ks_arena_release(&a);
  ks_store_close(s);
}

/* ---- evaluations --------------------------------------------------------- */

static void evaluation_round_trips_every_field(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s), k = new_kernel(s, run, "k");
  long long v = new_variant(s, k, "h", NULL);
  ks_eval e = full_eval(&a, 1.5);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v, &e), 0);

  ks_eval g;
  bool found = false;
  assert_int_equal(ks_store_eval_get(&ctx, s, k, v, &a, &g, &found), 0);
  assert_true(found);
  assert_int_equal(g.verdict, KS_VERDICT_FAST);
  assert_string_equal(g.reason, "1.50x faster");
  assert_null(g.compile_log);
  assert_true(g.compile_ms == 123.25);
  assert_true(g.compile_cached);
  assert_int_equal(g.base_registers, 32);
  assert_int_equal(g.cand_registers, 40);
  assert_int_equal(g.base_spills, 4);
  assert_int_equal(g.cand_spills, 8);
  assert_int_equal(g.base_smem, 1024);
  assert_int_equal(g.cand_smem, 4096);
  assert_true(g.max_rel_error == 1.0 / 3.0);
  assert_true(g.has_ref);
  assert_true(g.ref_cand_max_rel == 4e-6);
  assert_true(g.timed);
  assert_int_equal(g.base_samples, 50);
  assert_int_equal(g.cand_samples, 48);
  assert_int_equal(g.dropped_low_clock, 3);
  assert_true(g.cand_median_ms == 0.5 / 1.5);
  assert_true(g.cand_iqr_ms == 0.02);
  assert_true(g.base_rsd == 0.004);
  assert_true(g.speedup_high == 1.5 + 0.03);
  assert_true(g.sm_clock_max_mhz == 1980);
  assert_true(g.timing_seconds == 2.5);
  assert_true(g.bytes_min == (1ull << 60) + 1); /* beyond a double's integers */
  assert_true(g.floor_ms == 0.1);
  assert_true(g.base_bandwidth == 3.3e12);
  assert_true(g.cand_bw_fraction == 0.85);
  assert_true(g.flops == 2e9);
  assert_true(g.cand_flop_fraction == 0.1);
  assert_true(g.wall_seconds == 4.75);
  /* Per size set and seed. */
  assert_int_equal(g.sizes.len, 2);
  const ks_size_report *sr = &g.sizes.items[0];
  assert_string_equal(sr->size, "timed");
  assert_true(sr->timed);
  assert_true(sr->guards_hold);
  assert_int_equal(sr->launch.grid[0], 1024);
  assert_int_equal(sr->launch.grid[2], 3);
  assert_int_equal(sr->launch.block[0], 256);
  assert_true(sr->launch.smem == 4096);
  assert_int_equal(sr->seeds.len, 2);
  const ks_seed_check *sc = &sr->seeds.items[0];
  assert_true(sc->seed == 0xDEADBEEFCAFEF00Dull);
  assert_false(sc->race);
  assert_null(sc->race_buffer);
  assert_true(sc->base_nondeterministic);
  assert_string_equal(sc->canary_buffer, "x");
  assert_true(sc->canary_before);
  assert_null(sc->base_canary_buffer);
  assert_string_equal(sc->changed_input, "x");
  sc = &sr->seeds.items[1];
  assert_true(sc->seed == 7);
  assert_true(sc->race);
  assert_string_equal(sc->race_buffer, "y");
  assert_string_equal(sc->base_canary_buffer, "z");
  assert_true(sc->base_canary_before);
  assert_null(sc->changed_input);
  const ks_output_check *o = &sr->seeds.items[0].outputs.items[0];
  assert_string_equal(o->buffer, "y");
  assert_true(o->count == 1ull << 20);
  assert_true(o->mismatches == 3);
  assert_true(o->unwritten == 1);
  assert_int_equal(o->first_mismatch, 17);
  assert_true(o->expected == 1.5);
  assert_true(isnan(o->got)); /* JSON null */
  assert_true(o->has_ref);
  assert_true(o->ref_base_max_rel == 2e-6);
  assert_true(o->ref_mismatches == 2);
  assert_int_equal(o->ref_first_mismatch, 5);
  assert_true(o->ref_base == 0.3);
  assert_int_equal(sr->seeds.items[1].outputs.items[0].first_mismatch, -1);
  sr = &g.sizes.items[1];
  assert_string_equal(sr->size, "odd");
  assert_false(sr->guards_hold);
  assert_int_equal(sr->seeds.len, 0);
  assert_int_equal(sr->launch.grid[0], 1025);

  /* The JSON document: the same numbers; the compile log is not there. */
  const char *json = NULL;
  assert_int_equal(ks_store_eval_json(&ctx, s, v, &a, &json), 0);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"verdict\":\"FAST\""));
  assert_non_null(strstr(json, "\"seed\":\"16045690984503111693\""));
  assert_null(strstr(json, "SECRET-COMPILE-LOG"));
  /* An evaluation that is not timed keeps timed false. */
  ks_eval plain = {.verdict = KS_VERDICT_COMPILE_ERROR, .reason = "error: x undefined",
                   .compile_log = "SECRET-COMPILE-LOG"};
  long long v2 = new_variant(s, k, "h2", NULL);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &plain), 0);
  assert_int_equal(ks_store_eval_get(&ctx, s, k, v2, &a, &g, &found), 0);
  assert_true(found);
  assert_int_equal(g.verdict, KS_VERDICT_COMPILE_ERROR);
  assert_false(g.timed);
  assert_false(g.has_ref);
  assert_int_equal(g.sizes.len, 0);
  ks_arena_release(&a);
  ks_store_close(s);
}

static void evaluations_baseline_count_and_refusals(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s), k = new_kernel(s, run, "k"), k2 = new_kernel(s, run, "k2");
  long long v = new_variant(s, k, "h", NULL), v_other = new_variant(s, k2, "h", NULL);
  const char *json = "unset";
  assert_int_equal(ks_store_eval_json(&ctx, s, v, &a, &json), 0);
  assert_null(json);
  ks_eval g;
  bool found = true;
  assert_int_equal(ks_store_eval_get(&ctx, s, k, 0, &a, &g, &found), 0);
  assert_false(found);

  ks_eval base = {.verdict = KS_VERDICT_BASELINE, .reason = "baseline", .timed = true,
                  .base_median_ms = 0.75, .base_registers = 24};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, 0, &base), 0);
  assert_int_equal(ks_store_eval_get(&ctx, s, k, 0, &a, &g, &found), 0);
  assert_true(found);
  assert_int_equal(g.verdict, KS_VERDICT_BASELINE);
  assert_true(g.base_median_ms == 0.75);
  assert_int_equal(g.base_registers, 24);
  assert_int_equal(ks_store_eval_get(&ctx, s, k2, 0, &a, &g, &found), 0);
  assert_false(found);

  long long n = -1;
  assert_int_equal(ks_store_eval_count(&ctx, s, run, &n), 0);
  assert_int_equal(n, 0); /* baselines are not counted */
  ks_eval e = full_eval(&a, 2);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v, &e), 0);
  assert_int_equal(ks_store_eval_put(&ctx, s, k2, v_other, &e), 0);
  assert_int_equal(ks_store_eval_count(&ctx, s, run, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(ks_store_eval_count(&ctx, s, run + 1, &n), 0);
  assert_int_equal(n, 0);

  /* A variant of another kernel, or none at all, is refused; nothing is
   * written. */
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v_other, &e), -1);
  assert_non_null(strstr(ctx.error, "belongs to kernel"));
  assert_int_equal(ks_store_eval_put(&ctx, s, k, 4242, &e), -1);
  assert_non_null(strstr(ctx.error, "4242"));
  assert_int_equal(ks_store_eval_count(&ctx, s, run, &n), 0);
  assert_int_equal(n, 2);
  ks_arena_release(&a);
  ks_store_close(s);
}

/* The short form `check --json` writes: what does not apply is left out,
 * and the reader still gets the rest. */
static void eval_json_short_form_leaves_out_what_does_not_apply(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_eval base = {.verdict = KS_VERDICT_BASELINE, .timed = true, .base_median_ms = 0.5,
                  .cand_median_ms = 9, .compile_log = "SECRET-COMPILE-LOG"};
  char *text = ks_eval_json_text(&base, 0);
  assert_non_null(strstr(text, "\"original_median_ms\":0.5"));
  assert_null(strstr(text, "variant_median_ms"));
  assert_non_null(strstr(text, "\"fp64_reference\":null"));
  assert_null(strstr(text, "SECRET"));
  ks_eval g;
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_true(g.timed);
  assert_int_equal(g.verdict, KS_VERDICT_BASELINE);
  assert_true(g.base_median_ms == 0.5);
  assert_true(g.cand_median_ms == 0);
  free(text);
  ks_eval untimed = {.verdict = KS_VERDICT_WRONG, .reason = "r"};
  text = ks_eval_json_text(&untimed, KS_EVAL_JSON_VARIANT);
  assert_null(strstr(text, "\"timing\""));
  assert_int_equal(ks_eval_from_json(&ctx, text, &a, &g), 0);
  assert_false(g.timed);
  assert_int_equal(g.verdict, KS_VERDICT_WRONG);
  free(text);
  assert_int_equal(ks_eval_from_json(&ctx, "{\"verdict\": \"GREAT\"}", &a, &g), -1);
  assert_int_equal(ks_eval_from_json(&ctx, "not json", &a, &g), -1);
  assert_int_equal(ks_verdict_from_name("SUSPICIOUS"), KS_VERDICT_SUSPICIOUS);
  ks_arena_release(&a);
}

/* ---- memory and LLM calls ------------------------------------------------ */

static void memory_by_kernel_and_kind(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s), k = new_kernel(s, run, "k"), k2 = new_kernel(s, run, "k2");
  assert_int_equal(ks_store_memory_put(&ctx, s, k, "lesson", "vectorize needs n % 4"), 0);
  assert_int_equal(ks_store_memory_put(&ctx, s, k, "summary", "memory bound"), 0);
  assert_int_equal(ks_store_memory_put(&ctx, s, k, "lesson", "block 512 spills"), 0);
  assert_int_equal(ks_store_memory_put(&ctx, s, k2, "lesson", "other kernel"), 0);
  assert_int_equal(ks_store_memory_put(&ctx, s, 0, "lesson", "about every kernel"), 0);

  ks_strings m = {0};
  assert_int_equal(ks_store_memory(&ctx, s, k, "lesson", &a, &m), 0);
  assert_int_equal(m.len, 2);
  assert_string_equal(m.items[0], "vectorize needs n % 4");
  assert_string_equal(m.items[1], "block 512 spills");
  m = (ks_strings){0};
  assert_int_equal(ks_store_memory(&ctx, s, k, NULL, &a, &m), 0);
  assert_int_equal(m.len, 3);
  assert_string_equal(m.items[1], "memory bound");
  m = (ks_strings){0};
  assert_int_equal(ks_store_memory(&ctx, s, 0, "lesson", &a, &m), 0);
  assert_int_equal(m.len, 1);
  assert_string_equal(m.items[0], "about every kernel");
  m = (ks_strings){0};
  assert_int_equal(ks_store_memory(&ctx, s, k, "plan", &a, &m), 0);
  assert_int_equal(m.len, 0);
  assert_int_equal(ks_store_memory_put(&ctx, s, 999, "lesson", "x"), -1);
  ks_arena_release(&a);
  ks_store_close(s);
}

static void llm_calls_add_up(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k"), k2 = new_kernel(s, run, "k2");
  ks_llm_call_row c = {.run = run, .kernel = k, .role = "planner", .model = "m-1",
                       .prompt_hash = "p1", .response_hash = "r1", .prompt_tokens = 1000,
                       .response_tokens = 200, .seconds = 3.5, .cost = 0.01, .status = "ok"};
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  c.kernel = k2, c.role = "executor", c.prompt_tokens = 500, c.cost = 0.02;
  c.status = "error: HTTP 429";
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  c.kernel = 0, c.role = "summarizer", c.prompt_tokens = 1, c.response_tokens = 1, c.cost = 0;
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);

  ks_llm_usage u;
  assert_int_equal(ks_store_llm_usage(&ctx, s, run, 0, &u), 0);
  assert_int_equal(u.calls, 3);
  assert_int_equal(u.prompt_tokens, 1501);
  assert_int_equal(u.response_tokens, 401);
  assert_true(fabs(u.cost - 0.03) < 1e-12);
  assert_true(u.seconds == 10.5);
  assert_int_equal(ks_store_llm_usage(&ctx, s, run, k2, &u), 0);
  assert_int_equal(u.calls, 1);
  assert_int_equal(u.prompt_tokens, 500);
  assert_int_equal(ks_store_llm_usage(&ctx, s, run + 1, 0, &u), 0);
  assert_int_equal(u.calls, 0);
  assert_true(u.cost == 0);
  ks_store_close(s);
}

static void llm_cache_keeps_request_and_reply(void **state) {
  ks_store *s = open_store();
  ks_arena a = KS_ARENA_INIT;
  long long run = new_run(s), k = new_kernel(s, run, "k");
  ks_llm_call_row c = {.run = run, .kernel = k, .role = "executor", .model = "m-1",
                       .prompt_hash = "h-req", .request = "{\"model\": \"m-1\"}",
                       .response = "older reply", .status = "ok"};
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  c.response = "newer reply";
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  c.response = NULL, c.status = "error: HTTP 500"; /* failures are never served */
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  ks_llm_call_row got;
  bool found = false;
  assert_int_equal(ks_store_llm_cached(&ctx, s, "h-req", &a, &got, &found), 0);
  assert_true(found);
  assert_string_equal(got.response, "newer reply");
  assert_string_equal(got.request, "{\"model\": \"m-1\"}");
  assert_string_equal(got.role, "executor");
  assert_int_equal(ks_store_llm_cached(&ctx, s, "h-other", &a, &got, &found), 0);
  assert_false(found);
  ks_arena_release(&a);
  ks_store_close(s);
}

/* ---- read-only, versions, garbage, faults -------------------------------- */

/* A store made by the version before (1) is upgraded in place: its rows
 * stay, and the new columns work. */
static void version_1_store_is_upgraded(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  bool existed = false;
  long long v1 = new_variant(s, k, "h1", &existed);
  ks_store_close(s);
  char path[512];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db,
                                "DROP INDEX llm_calls_prompt;"
                                "ALTER TABLE llm_calls DROP COLUMN request;"
                                "ALTER TABLE llm_calls DROP COLUMN response;"
                                "ALTER TABLE variants DROP COLUMN plan;"
                                "ALTER TABLE kernels DROP COLUMN winner;"
                                "ALTER TABLE kernels DROP COLUMN sites;"
                                "ALTER TABLE kernels DROP COLUMN insight;"
                                "DROP TABLE phases;"
                                "PRAGMA user_version = 1;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);

  s = open_store();
  ks_arena a = KS_ARENA_INIT;
  ks_variant_rows rows = {0};
  assert_int_equal(ks_store_variants(&ctx, s, k, &a, &rows), 0);
  assert_int_equal(rows.len, 1);
  assert_int_equal(rows.items[0].id, v1);
  assert_null(rows.items[0].plan);
  ks_variant_row v = {.kernel = k, .hash = "h2", .source = "src", .proposer = "llm",
                      .plan = "PLAN: vectorize the loads"};
  long long v2 = 0;
  assert_int_equal(ks_store_variant_put(&ctx, s, &v, &v2, &existed), 0);
  rows = (ks_variant_rows){0};
  assert_int_equal(ks_store_variants(&ctx, s, k, &a, &rows), 0);
  assert_int_equal(rows.len, 2);
  assert_string_equal(rows.items[1].plan, "PLAN: vectorize the loads");
  ks_llm_call_row c = {.run = run, .prompt_hash = "p", .request = "q", .response = "r",
                       .status = "ok"};
  assert_int_equal(ks_store_llm_call_put(&ctx, s, &c), 0);
  /* schema 4: what was learned about a kernel, on its row */
  ks_kernel_rows ks = {0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_int_equal(ks.len, 1);
  assert_null(ks.items[0].insight);
  assert_int_equal(ks_store_kernel_set_insight(&ctx, s, k, "{\"race\":null,\"bound\":null}"), 0);
  ks = (ks_kernel_rows){0};
  assert_int_equal(ks_store_kernels(&ctx, s, run, &a, &ks), 0);
  assert_string_equal(ks.items[0].insight, "{\"race\":null,\"bound\":null}");
  ks_arena_release(&a);
  ks_store_close(s);
}

static void readonly_reads_and_refuses_writes(void **state) {
  ks_store *r = (ks_store *)&r;
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), -1);
  assert_null(r);
  assert_non_null(strstr(ctx.error, "kernelsmith.db"));
  assert_false(ks_is_dir(store_dir)); /* status creates nothing */

  ks_store *s = open_store();
  long long run = new_run(s);
  new_kernel(s, run, "k");
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  ks_arena a = KS_ARENA_INIT;
  ks_kernel_rows ks = {0};
  assert_int_equal(ks_store_kernels(&ctx, r, run, &a, &ks), 0);
  assert_int_equal(ks.len, 1);
  long long id;
  ks_run_row row = {.command = "optimize"};
  assert_int_equal(ks_store_run_begin(&ctx, r, &row, &id), -1);
  assert_non_null(strstr(ctx.error, "kernelsmith.db"));
  assert_non_null(strstr(ctx.error, "readonly"));
  /* The writer goes on while the reader is open; the reader sees it. */
  new_kernel(s, run, "k2");
  ks = (ks_kernel_rows){0};
  assert_int_equal(ks_store_kernels(&ctx, r, run, &a, &ks), 0);
  assert_int_equal(ks.len, 2);
  ks_store_close(r);
  ks_store_close(s);
  ks_arena_release(&a);
}

/* A reader cannot upgrade a store: one of schema 2 (no winner column) is
 * read as it is, the winners reading as none. */
static void readonly_reads_a_version_2_store(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s);
  new_kernel(s, run, "k");
  ks_store_close(s);
  char path[512];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "ALTER TABLE kernels DROP COLUMN winner; ALTER TABLE kernels DROP COLUMN sites; "
                                "ALTER TABLE kernels DROP COLUMN insight; "
                                "DROP TABLE phases; PRAGMA user_version = 2;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  ks_store *r = NULL;
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  assert_false(ks_store_has_winners(r));
  ks_arena a = KS_ARENA_INIT;
  ks_kernel_rows ks = {0};
  assert_int_equal(ks_store_kernels(&ctx, r, run, &a, &ks), 0);
  assert_int_equal(ks.len, 1);
  assert_int_equal(ks.items[0].winner, -1);
  ks_store_close(r);
  /* A writer upgrades it. */
  s = open_store();
  assert_true(ks_store_has_winners(s));
  ks_store_close(s);
  ks_arena_release(&a);
}

/* Schema 5: who judged each evaluation. A store of schema 4 (no
 * eval_devices) is read as it is, with nobody named, and a writer upgrades
 * it; evaluations written then name their device and worker. */
static void version_4_store_gets_eval_devices(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  bool existed = false;
  long long v1 = new_variant(s, k, "h1", &existed), v2 = new_variant(s, k, "h2", &existed);
  ks_eval old = {.verdict = KS_VERDICT_SAME, .reason = "before schema 5"};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &old), 0);
  ks_store_close(s);
  char path[512];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "DROP TABLE eval_devices; PRAGMA user_version = 4;", NULL,
                                NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);

  ks_arena a = KS_ARENA_INIT;
  ks_store *r = NULL;
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  ks_eval_worker_counts w;
  assert_int_equal(ks_store_eval_workers(&ctx, r, run, &a, &w), 0);
  assert_int_equal(w.len, 0);
  ks_store_close(r);

  s = open_store();
  assert_int_equal(ks_store_eval_workers(&ctx, s, run, &a, &w), 0);
  assert_int_equal(w.len, 0); /* the old evaluation names nobody */
  ks_eval e = {.verdict = KS_VERDICT_FAST, .speedup = 1.5, .device = 3, .worker = 1};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  e.device = 0;
  e.worker = 0;
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &e), 0);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, 0, &e), 0); /* a baseline: not counted */
  assert_int_equal(ks_store_eval_workers(&ctx, s, run, &a, &w), 0);
  assert_int_equal(w.len, 2);
  assert_int_equal(w.items[0].worker, 0);
  assert_int_equal(w.items[0].device, 0);
  assert_int_equal(w.items[0].evaluations, 1);
  assert_int_equal(w.items[1].worker, 1);
  assert_int_equal(w.items[1].device, 3);
  assert_int_equal(w.items[1].evaluations, 2);
  const char *problem = "unset";
  assert_int_equal(ks_store_check(&ctx, s, &a, &problem), 0);
  assert_null(problem);
  ks_store_close(s);
  ks_arena_release(&a);
}

/* Schema 6: which MPI rank and host judged each evaluation. A store of
 * schema 5 (no eval_ranks) is read as it is, every evaluation judged
 * without MPI, and a writer upgrades it; its old evaluations still read
 * with no host. */
static void version_5_store_gets_eval_ranks(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  bool existed = false;
  long long v1 = new_variant(s, k, "h1", &existed), v2 = new_variant(s, k, "h2", &existed);
  ks_eval old = {.verdict = KS_VERDICT_SAME, .reason = "before schema 6", .worker = 1};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &old), 0);
  ks_store_close(s);
  char path[512];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "DROP TABLE eval_ranks; PRAGMA user_version = 5;", NULL,
                                NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);

  /* A reader cannot add the table: the old evaluation is rank 0, no host. */
  ks_arena a = KS_ARENA_INIT;
  ks_store *r = NULL;
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  ks_eval_worker_counts w;
  assert_int_equal(ks_store_eval_workers(&ctx, r, run, &a, &w), 0);
  assert_int_equal(w.len, 1);
  assert_int_equal(w.items[0].rank, 0);
  assert_null(w.items[0].host);
  assert_int_equal(w.items[0].worker, 1);
  assert_int_equal(w.items[0].evaluations, 1);
  ks_store_close(r);

  s = open_store();
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT user_version FROM pragma_user_version), "
                                          "(SELECT count(*) FROM eval_ranks)",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), KS_STORE_SCHEMA_VERSION);
  assert_int_equal(sqlite3_column_int(st, 1), 0); /* nothing invented for the old one */
  sqlite3_finalize(st);
  sqlite3_close(db);
  assert_int_equal(ks_store_eval_workers(&ctx, s, run, &a, &w), 0);
  assert_int_equal(w.len, 1);
  assert_null(w.items[0].host);
  ks_eval back;
  bool found = false;
  assert_int_equal(ks_store_eval_get(&ctx, s, k, v1, &a, &back, &found), 0);
  assert_true(found);
  assert_string_equal(back.reason, "before schema 6");
  assert_int_equal(back.rank, 0);
  assert_null(back.host);
  /* An evaluation written now by a rank is recorded. */
  ks_eval e = {.verdict = KS_VERDICT_FAST, .speedup = 1.5, .rank = 1, .host = "gpu-b"};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  assert_int_equal(ks_store_eval_workers(&ctx, s, run, &a, &w), 0);
  assert_int_equal(w.len, 2);
  assert_null(w.items[0].host);
  assert_int_equal(w.items[1].rank, 1);
  assert_string_equal(w.items[1].host, "gpu-b");
  const char *problem = "unset";
  assert_int_equal(ks_store_check(&ctx, s, &a, &problem), 0);
  assert_null(problem);
  ks_store_close(s);
  ks_arena_release(&a);
}

/* --mpi: ks_store_eval_workers groups by rank and host, then worker and
 * device; evaluations judged without MPI (no host) come first, as rank 0;
 * baselines are not counted; the JSON does not carry the rank or host. */
static void eval_workers_group_by_rank_and_host(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  bool existed = false;
  long long v1 = new_variant(s, k, "h1", &existed), v2 = new_variant(s, k, "h2", &existed),
            v3 = new_variant(s, k, "h3", &existed);
  ks_eval e = {.verdict = KS_VERDICT_SLOW, .speedup = 0.9, .rank = 2, .host = "node-b",
               .device = 1, .worker = 1};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &e), 0);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v2, &e), 0);
  assert_int_equal(ks_store_eval_put(&ctx, s, k, 0, &e), 0); /* a baseline: not counted */
  e.worker = 0;
  e.device = 0;
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v3, &e), 0);
  e.rank = 0;
  e.host = "node-a";
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v3, &e), 0);
  ks_eval plain = {.verdict = KS_VERDICT_SAME, .speedup = 1.0};
  assert_int_equal(ks_store_eval_put(&ctx, s, k, v1, &plain), 0);

  ks_arena a = KS_ARENA_INIT;
  ks_eval_worker_counts w;
  assert_int_equal(ks_store_eval_workers(&ctx, s, run, &a, &w), 0);
  assert_int_equal(w.len, 4);
  assert_int_equal(w.items[0].rank, 0);
  assert_null(w.items[0].host);
  assert_int_equal(w.items[0].evaluations, 1);
  assert_int_equal(w.items[1].rank, 0);
  assert_string_equal(w.items[1].host, "node-a");
  assert_int_equal(w.items[1].evaluations, 1);
  assert_int_equal(w.items[2].rank, 2);
  assert_string_equal(w.items[2].host, "node-b");
  assert_int_equal(w.items[2].worker, 0);
  assert_int_equal(w.items[2].device, 0);
  assert_int_equal(w.items[2].evaluations, 1);
  assert_int_equal(w.items[3].rank, 2);
  assert_string_equal(w.items[3].host, "node-b");
  assert_int_equal(w.items[3].worker, 1);
  assert_int_equal(w.items[3].device, 1);
  assert_int_equal(w.items[3].evaluations, 2);

  /* Only the --mpi evaluations have a row: 5 of 6 (the baseline's too). */
  char path[512];
  snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM eval_ranks", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 5);
  sqlite3_finalize(st);
  sqlite3_close(db);

  const char *json = NULL;
  assert_int_equal(ks_store_eval_json(&ctx, s, v2, &a, &json), 0);
  assert_non_null(json);
  assert_null(strstr(json, "node-b"));
  assert_null(strstr(json, "\"rank\""));
  ks_store_close(s);
  ks_arena_release(&a);
}

/* ---- a store the user may not write ------------------------------------- */

/* What a reader that may not write the store's directory reads: the
 * kernels of run 1 (-1 when the open fails, the error on stderr). */
static int count_kernels_readonly(const char *dir, bool want_refusal) {
  ks_ctx c;
  ks_ctx_init(&c, "reader");
  c.verbosity = KS_LOG_ERROR;
  ks_store *r = NULL;
  ks_arena a = KS_ARENA_INIT;
  ks_kernel_rows ks = {0};
  int n = -1;
  if (ks_store_open_readonly(&c, dir, &r)) {
    if (!want_refusal)
      fprintf(stderr, "reader: %s\n", c.error);
    else if (strstr(c.error, "holds commits not yet in the file") && !strchr(c.error, '\n'))
      n = 0;
  } else if (!ks_store_kernels(&c, r, 1, &a, &ks)) {
    n = (int)ks.len;
  }
  ks_store_close(r);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return n;
}

static bool exists(const char *dir, const char *name) {
  return access(ks_test_path(dir, name), F_OK) == 0;
}

/* In a child that may not write `dir` (made read-only; as root, the child
 * becomes nobody first): the clean store reads whole, and one whose log
 * holds commits without its -shm is refused in one sentence. Returns the
 * child's exit status: 0 ok, 77 when root cannot become another user. */
static int read_as_other_user(const char *clean, const char *with_log) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0) {
      struct passwd *pw = getpwnam("nobody");
      uid_t uid = pw ? pw->pw_uid : 65534;
      gid_t gid = pw ? pw->pw_gid : 65534;
      if (setgroups(0, NULL) || setgid(gid) || setuid(uid) || !setuid(0))
        _exit(77);
    }
    int n = count_kernels_readonly(clean, false), m = count_kernels_readonly(with_log, true);
    bool left = exists(clean, "kernelsmith.db-shm") || exists(clean, "kernelsmith.db-wal");
    if (n != 3 || left || m != 0)
      fprintf(stderr, "as uid %d: %d kernels (3 expected)%s; with a log: %s\n", (int)geteuid(),
              n, left ? ", -shm or -wal made" : "", m ? "not refused as expected" : "refused");
    _exit(n == 3 && !left && !m ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* status, apply and export read with ks_store_open_readonly; WAL mode's
 * shared memory needs a writable directory, or the file read as immutable
 * (store.c, read_immutable). */
static void readonly_store_the_user_cannot_write(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s);
  new_kernel(s, run, "k");
  new_kernel(s, run, "k2");
  ks_store_close(s); /* the last close removes -wal and -shm */
  /* A copy whose log holds commits: the writer still open. */
  char with_log[256], cmd[1024];
  snprintf(with_log, sizeof with_log, "%s/copy/.kernelsmith", tmp);
  s = open_store();
  new_kernel(s, run, "k3");
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/kernelsmith.db' '%s/kernelsmith.db-wal' '%s/'",
           with_log, store_dir, store_dir, with_log);
  assert_int_equal(system(cmd), 0);
  ks_store_close(s);
  assert_false(exists(store_dir, "kernelsmith.db-wal"));
  assert_true(exists(with_log, "kernelsmith.db-wal"));

  /* 1. Really without write access. */
  const char *const dirs[] = {store_dir, with_log};
  chmod(tmp, 0755); /* mkdtemp's 0700 keeps another user out */
  for (int i = 0; i < 2; i++) {
    chmod(ks_test_path(dirs[i], ".."), 0755);
    chmod(ks_test_path(dirs[i], "kernelsmith.db"), 0444);
    chmod(dirs[i], 0555);
  }
  int st = read_as_other_user(store_dir, with_log);
  for (int i = 0; i < 2; i++)
    chmod(dirs[i], 0755);
  if (st == 77)
    fprintf(stderr, "readonly_store_the_user_cannot_write: running as root, and it cannot become "
                    "'nobody' here (no CAP_SETUID?): the permission part is skipped; the fault "
                    "part below still runs\n");
  else
    assert_int_equal(st, 0);

  /* 2. The same path by fault injection (any user, root included): the
   * first read refused as a directory the user may not write refuses it. */
  ks_store *r = NULL;
  assert_int_equal(ks_ctx_set_faults(&ctx, "store_shm:1"), 0);
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  ks_arena a = KS_ARENA_INIT;
  ks_kernel_rows ks = {0};
  assert_int_equal(ks_store_kernels(&ctx, r, run, &a, &ks), 0);
  assert_int_equal(ks.len, 3);
  const char *problem = "unset";
  assert_int_equal(ks_store_check(&ctx, r, &a, &problem), 0);
  assert_null(problem);
  long long id;
  ks_run_row row = {.command = "optimize"};
  assert_int_equal(ks_store_run_begin(&ctx, r, &row, &id), -1); /* still read-only */
  ks_store_close(r);
  assert_false(exists(store_dir, "kernelsmith.db-shm"));
  /* A log with commits is not skipped over: refused, saying what to do. */
  s = open_store();
  new_kernel(s, run, "k4");
  assert_true(exists(store_dir, "kernelsmith.db-wal"));
  assert_int_equal(ks_ctx_set_faults(&ctx, "store_shm:1"), 0);
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), -1);
  assert_non_null(strstr(ctx.error, "kernelsmith.db: cannot read it without writing its directory"));
  assert_null(strchr(ctx.error, '\n'));
  ks_ctx_set_faults(&ctx, "");
  ks_store_close(s);
  ks_arena_release(&a);
}

/* A damaged page is met only by the queries that read it: a writer checks
 * the file when it opens it and refuses a damaged one in one line; a reader
 * still opens it (status reads what it can). */
static void damaged_store_is_refused_by_a_writer(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  ks_arena a = KS_ARENA_INIT;
  for (int i = 0; i < 60; i++) {
    char hash[32];
    snprintf(hash, sizeof hash, "h%d", i);
    long long v = new_variant(s, k, hash, NULL);
    ks_eval e = full_eval(&a, 1.5);
    assert_int_equal(ks_store_eval_put(&ctx, s, k, v, &e), 0);
  }
  ks_store_close(s);
  const char *path = ks_test_path(store_dir, "kernelsmith.db");
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(st.st_size >= 16 * 4096);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char)(i * 37 + 11);
  /* a page in the middle: the header and the schema (page 1) stay whole */
  assert_int_equal(fseek(f, (long)(st.st_size / 4096 / 2) * 4096, SEEK_SET), 0);
  assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
  fclose(f);
  s = (ks_store *)&s;
  assert_int_equal(ks_store_open(&ctx, store_dir, &s), -1);
  assert_null(s);
  assert_non_null(strstr(ctx.error, path));
  assert_non_null(strstr(ctx.error, "the results store is damaged ("));
  assert_non_null(strstr(ctx.error, "to start a new one"));
  assert_null(strchr(ctx.error, '\n'));
  ks_store *r = NULL;
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &r), 0);
  const char *problem = NULL;
  assert_int_equal(ks_store_check(&ctx, r, &a, &problem), 0);
  assert_non_null(problem);
  ks_store_close(r);
  ks_arena_release(&a);
}

static void set_user_version(const char *dir, unsigned v) {
  char path[256];
  snprintf(path, sizeof path, "%s/kernelsmith.db", dir);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  unsigned char be[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                         (unsigned char)(v >> 8), (unsigned char)v};
  assert_int_equal(fseek(f, 60, SEEK_SET), 0); /* the header's user_version */
  assert_int_equal(fwrite(be, 1, 4, f), 4);
  fclose(f);
}

static void newer_schema_is_refused(void **state) {
  ks_store *s = open_store();
  new_run(s);
  ks_store_close(s); /* the last close checkpoints: the header is the file's */
  set_user_version(store_dir, KS_STORE_SCHEMA_VERSION + 1);
  assert_int_equal(ks_store_open(&ctx, store_dir, &s), -1);
  assert_null(s);
  assert_non_null(strstr(ctx.error, "kernelsmith.db"));
  assert_non_null(strstr(ctx.error, "newer kernelsmith-cc"));
  assert_null(strchr(ctx.error, '\n'));
  assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &s), -1);
  assert_non_null(strstr(ctx.error, "newer kernelsmith-cc"));
  /* Putting the version back makes it usable again: nothing was changed. */
  set_user_version(store_dir, KS_STORE_SCHEMA_VERSION);
  s = open_store();
  ks_arena a = KS_ARENA_INIT;
  ks_run_rows runs = {0};
  assert_int_equal(ks_store_runs(&ctx, s, &a, &runs), 0);
  assert_int_equal(runs.len, 1);
  ks_arena_release(&a);
  ks_store_close(s);
}

static void garbage_file_is_refused(void **state) {
  const char *contents[] = {"hello, not a database\n", NULL};
  char big[8192];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (char)('a' + i % 26);
  big[sizeof big - 1] = 0;
  contents[1] = big;
  for (int i = 0; i < 2; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/project", tmp);
    mkdir(path, 0755);
    mkdir(store_dir, 0755);
    snprintf(path, sizeof path, "%s/kernelsmith.db", store_dir);
    FILE *f = fopen(path, "w");
    fputs(contents[i], f);
    fclose(f);
    ks_store *s = (ks_store *)&s;
    assert_int_equal(ks_store_open(&ctx, store_dir, &s), -1);
    assert_null(s);
    assert_non_null(strstr(ctx.error, path));
    assert_non_null(strstr(ctx.error, "not a database"));
    assert_int_equal(ks_store_open_readonly(&ctx, store_dir, &s), -1);
    assert_non_null(strstr(ctx.error, path));
    /* The file is left as it was. */
    ks_buf b = KS_BUF_INIT;
    assert_int_equal(ks_read_file(&ctx, path, sizeof big, &b), 0);
    assert_string_equal(b.data, contents[i]);
    ks_buf_release(&b);
  }
}

static void injected_write_fault_leaves_nothing(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k = new_kernel(s, run, "k");
  assert_int_equal(ks_ctx_set_faults(&ctx, "store_write:2"), 0);
  long long v1 = new_variant(s, k, "h1", NULL);
  bool existed;
  ks_variant_row v = {.kernel = k, .hash = "h2", .source = "x"};
  long long v2;
  assert_int_equal(ks_store_variant_put(&ctx, s, &v, &v2, &existed), -1);
  assert_non_null(strstr(ctx.error, "store_write"));
  ks_arena a = KS_ARENA_INIT;
  ks_variant_rows rows = {0};
  assert_int_equal(ks_store_variants(&ctx, s, k, &a, &rows), 0);
  assert_int_equal(rows.len, 1);
  assert_int_equal(rows.items[0].id, v1);
  /* The next write works. */
  assert_int_equal(ks_store_variant_put(&ctx, s, &v, &v2, &existed), 0);
  assert_false(existed);
  ks_ctx_set_faults(&ctx, "");
  ks_arena_release(&a);
  ks_store_close(s);
}

/* ---- two processes ------------------------------------------------------- */

/* A child process's writer: n variants and evaluations for one kernel.
 * Returns an exit status (no cmocka in a child). */
static int child_write(const char *dir, long long kernel, const char *prefix, int n) {
  ks_ctx c;
  ks_ctx_init(&c, "child");
  ks_store *s = NULL;
  ks_arena a = KS_ARENA_INIT;
  int rc = ks_store_open(&c, dir, &s);
  for (int i = 0; i < n && !rc; i++) {
    char hash[64];
    snprintf(hash, sizeof hash, "%s%d", prefix, i);
    ks_variant_row v = {.kernel = kernel, .hash = hash, .source = "__global__ void v() {}"};
    long long id;
    bool existed;
    ks_eval e = full_eval(&a, 1 + i / 1000.0);
    rc = ks_store_variant_put(&c, s, &v, &id, &existed) ||
         ks_store_eval_put(&c, s, kernel, id, &e);
  }
  if (rc)
    fprintf(stderr, "child: %s\n", c.error);
  ks_store_close(s);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return rc ? 1 : 0;
}

static void reader_while_two_writers_write(void **state) {
  ks_store *s = open_store();
  long long run = new_run(s), k1 = new_kernel(s, run, "k1"), k2 = new_kernel(s, run, "k2");
  ks_store_close(s);
  enum { PER_WRITER = 150 };
  fflush(NULL);
  pid_t w1 = fork();
  if (w1 == 0)
    _exit(child_write(store_dir, k1, "a", PER_WRITER));
  pid_t w2 = fork();
  if (w2 == 0)
    _exit(child_write(store_dir, k2, "b", PER_WRITER));
  assert_true(w1 > 0 && w2 > 0);

  /* Read while they write: counts only grow, every read succeeds. */
  ks_store *r;
  if (ks_store_open_readonly(&ctx, store_dir, &r))
    fail_msg("%s", ctx.error);
  long long last = 0, reads = 0;
  int status1 = -1, status2 = -1;
  while (status1 < 0 || status2 < 0) {
    long long n = 0;
    if (ks_store_eval_count(&ctx, r, run, &n))
      fail_msg("%s", ctx.error);
    assert_true(n >= last);
    last = n;
    ks_arena a = KS_ARENA_INIT;
    ks_variant_rows rows = {0};
    if (ks_store_variants(&ctx, r, k1, &a, &rows))
      fail_msg("%s", ctx.error);
    for (size_t i = 0; i < rows.len; i++)
      assert_true(!rows.items[i].evaluated || rows.items[i].verdict == KS_VERDICT_FAST);
    ks_arena_release(&a);
    reads++;
    int st;
    if (status1 < 0 && waitpid(w1, &st, WNOHANG) == w1)
      status1 = st;
    if (status2 < 0 && waitpid(w2, &st, WNOHANG) == w2)
      status2 = st;
  }
  assert_true(WIFEXITED(status1) && WEXITSTATUS(status1) == 0);
  assert_true(WIFEXITED(status2) && WEXITSTATUS(status2) == 0);
  long long n = 0;
  assert_int_equal(ks_store_eval_count(&ctx, r, run, &n), 0);
  assert_int_equal(n, 2 * PER_WRITER);
  assert_true(reads > 1);
  ks_arena a = KS_ARENA_INIT;
  const char *problem = "unset";
  assert_int_equal(ks_store_check(&ctx, r, &a, &problem), 0);
  assert_null(problem);
  ks_arena_release(&a);
  ks_store_close(r);
}

/* ---- the modes of tests/store_kill.sh ------------------------------------ */

static int writer_fail(ks_ctx *c) {
  fprintf(stderr, "writer: %s\n", c->error);
  return 1;
}

/* Evaluates variant `id` of kernel `k` and prints the new total. */
static int writer_eval(ks_ctx *c, ks_store *s, ks_arena *a, long long k, long long id,
                       long long *count) {
  ks_eval e = full_eval(a, 1.0 + (double)(*count % 97) / 100);
  if (ks_store_eval_put(c, s, k, id, &e))
    return -1;
  printf("committed %lld\n", ++*count);
  fflush(stdout);
  return 0;
}

static int writer(const char *dir, long long n) {
  ks_ctx c;
  ks_ctx_init(&c, "writer");
  ks_arena a = KS_ARENA_INIT;
  ks_store *s;
  /* store_kill.sh times its early kills from here, past the process's
   * start-up (slow under the sanitizers). */
  printf("opening\n");
  fflush(stdout);
  if (ks_store_open(&c, dir, &s))
    return writer_fail(&c);
  ks_run_row run = {.command = "optimize", .strategy = "evolve", .proposer = "rules",
                    .seed = 1};
  bool found;
  long long run_id = 0, kernels[4], count = 0;
  if (ks_store_run_latest(&c, s, &a, &run, &found))
    return writer_fail(&c);
  if (found ? ks_store_run_reopen(&c, s, run.id) : ks_store_run_begin(&c, s, &run, &run.id))
    return writer_fail(&c);
  run_id = run.id;
  /* A slice of a few kilobytes, so that writes span several pages. */
  char *slice = ks_arena_alloc(&a, 4001);
  for (int i = 0; i < 4000; i++)
    slice[i] = i % 80 == 79 ? '\n' : (char)('a' + i % 23);
  for (int i = 0; i < 4; i++) {
    ks_kernel_row k = {.run = run_id, .name = ks_arena_printf(&a, "kernel_%d", i),
                       .file = "k.cu", .slice = slice};
    if (ks_store_kernel_put(&c, s, &k, &kernels[i]))
      return writer_fail(&c);
  }
  if (ks_store_eval_count(&c, s, run_id, &count))
    return writer_fail(&c);
  /* Resume: what a killed writer added without its evaluation first. */
  for (int i = 0; i < 4; i++) {
    ks_variant_rows rows = {0};
    if (ks_store_variants(&c, s, kernels[i], &a, &rows))
      return writer_fail(&c);
    for (size_t j = 0; j < rows.len; j++)
      if (!rows.items[j].evaluated && writer_eval(&c, s, &a, kernels[i], rows.items[j].id, &count))
        return writer_fail(&c);
  }
  while (count < n) {
    long long k = kernels[count % 4], id;
    ks_variant_row v = {.kernel = k, .hash = ks_arena_printf(&a, "v%lld", count + 1),
                        .source = slice, .proposer = "rules", .techniques = "x"};
    bool existed;
    if (ks_store_variant_put(&c, s, &v, &id, &existed) || writer_eval(&c, s, &a, k, id, &count))
      return writer_fail(&c);
    if (count % 64 == 0) { /* keep the arena small in long runs */
      ks_arena_release(&a);
      slice = ks_arena_alloc(&a, 4001);
      memset(slice, 'x', 4000);
    }
  }
  if (ks_store_run_finish(&c, s, run_id, "done"))
    return writer_fail(&c);
  ks_store_close(s);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return 0;
}

static int verify(const char *dir) {
  ks_ctx c;
  ks_ctx_init(&c, "verify");
  ks_arena a = KS_ARENA_INIT;
  ks_store *s;
  if (ks_store_open_readonly(&c, dir, &s)) {
    /* Killed before the first commit: there is nothing to lose yet. */
    if (strstr(c.error, "no results store here") || strstr(c.error, "holds no results yet")) {
      printf("evaluations 0\n");
      return 0;
    }
    return writer_fail(&c);
  }
  const char *problem;
  if (ks_store_check(&c, s, &a, &problem))
    return writer_fail(&c);
  if (problem) {
    fprintf(stderr, "verify: %s\n", problem);
    return 1;
  }
  ks_run_rows runs = {0};
  long long total = 0, evaluated = 0;
  if (ks_store_runs(&c, s, &a, &runs))
    return writer_fail(&c);
  for (size_t i = 0; i < runs.len; i++) {
    long long n;
    ks_kernel_rows ks = {0};
    if (ks_store_eval_count(&c, s, runs.items[i].id, &n) ||
        ks_store_kernels(&c, s, runs.items[i].id, &a, &ks))
      return writer_fail(&c);
    total += n;
    /* Every evaluation's variant is there: evaluated variants add up to
     * the count (one evaluation each), and each reads back whole. */
    for (size_t k = 0; k < ks.len; k++) {
      ks_variant_rows rows = {0};
      if (ks_store_variants(&c, s, ks.items[k].id, &a, &rows))
        return writer_fail(&c);
      for (size_t j = 0; j < rows.len; j++) {
        if (!rows.items[j].evaluated)
          continue;
        evaluated++;
        ks_eval e;
        bool found;
        if (ks_store_eval_get(&c, s, ks.items[k].id, rows.items[j].id, &a, &e, &found))
          return writer_fail(&c);
        if (!found || e.sizes.len != 2 || e.bytes_min != (1ull << 60) + 1) {
          fprintf(stderr, "verify: variant %lld's evaluation is not whole\n", rows.items[j].id);
          return 1;
        }
      }
    }
  }
  if (evaluated != total) {
    fprintf(stderr, "verify: %lld evaluations but %lld evaluated variants\n", total, evaluated);
    return 1;
  }
  printf("evaluations %lld\n", total);
  ks_store_close(s);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--writer"))
    return writer(argv[2], atoll(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "--verify"))
    return verify(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(open_creates_directory_gitignore_and_wal, setup, teardown),
      cmocka_unit_test_setup_teardown(open_fails_where_a_file_blocks_the_directory, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(runs_begin_finish_reopen, setup, teardown),
      cmocka_unit_test_setup_teardown(phases_put_get_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(kernels_put_twice_returns_the_same_id, setup, teardown),
      cmocka_unit_test_setup_teardown(variants_dedupe_by_hash_and_join_evaluations, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(evaluation_round_trips_every_field, setup, teardown),
      cmocka_unit_test_setup_teardown(evaluations_baseline_count_and_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(eval_json_short_form_leaves_out_what_does_not_apply, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(memory_by_kernel_and_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(llm_calls_add_up, setup, teardown),
      cmocka_unit_test_setup_teardown(llm_cache_keeps_request_and_reply, setup, teardown),
      cmocka_unit_test_setup_teardown(version_1_store_is_upgraded, setup, teardown),
      cmocka_unit_test_setup_teardown(readonly_reads_and_refuses_writes, setup, teardown),
      cmocka_unit_test_setup_teardown(readonly_reads_a_version_2_store, setup, teardown),
      cmocka_unit_test_setup_teardown(version_4_store_gets_eval_devices, setup, teardown),
      cmocka_unit_test_setup_teardown(version_5_store_gets_eval_ranks, setup, teardown),
      cmocka_unit_test_setup_teardown(eval_workers_group_by_rank_and_host, setup, teardown),
      cmocka_unit_test_setup_teardown(readonly_store_the_user_cannot_write, setup, teardown),
      cmocka_unit_test_setup_teardown(damaged_store_is_refused_by_a_writer, setup, teardown),
      cmocka_unit_test_setup_teardown(newer_schema_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(garbage_file_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(injected_write_fault_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(reader_while_two_writers_write, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
