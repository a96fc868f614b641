/* test_worker_client: ks_worker's handling of a worker that crashes, hangs,
 * exits, or talks nonsense, with no GPU: the worker here is fake_worker
 * (tests/fake_worker.c), which speaks the real protocol and misbehaves when
 * the candidate's function name tells it to.
 *
 * What must hold: each failure is reported as a status of that one request
 * (CRASHED, TIMEOUT), the call returns within the time limit, and the next
 * request is served by a new process; the process ids the fake reports show
 * the restarts. And the worker's environment holds what it reads, no API
 * key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_wire.h"
#include "ks_worker.h"

static ks_ctx ctx;
static const unsigned char cubin[] = {1, 2, 3, 4};

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_worker_client");
  ctx.verbosity = KS_LOG_ERROR;
  unsetenv("KS_FAKE_WORKER");
  return 0;
}

static int teardown(void **state) {
  ks_ctx_release(&ctx);
  return 0;
}

static ks_worker *start(unsigned timeout_ms) {
  ks_worker_options o = {.executable = KS_FAKE_WORKER, .timeout_ms = timeout_ms};
  ks_worker *w = NULL;
  if (ks_worker_start(&ctx, &o, &w))
    fail_msg("start: %s", ctx.error);
  return w;
}

/* Runs a request whose candidate is named `mode`; returns the status and
 * leaves the result in *out. */
static ks_run_status run(ks_worker *w, const char *mode, ks_arena *a, ks_run_result *out) {
  static ks_workload work;
  ks_wbuffer *b = ks_array_push(a, &work.buffers);
  *b = (ks_wbuffer){.name = "out", .dtype = KS_DT_F32, .count = 1000, .role = KS_ROLE_OUT,
                    .dist = KS_DIST_UNIFORM, .a = 0, .b = 1, .atol = -1, .rtol = -1};
  work.launch = (ks_launch_cfg){{4, 1, 1}, {256, 1, 1}, 0};
  unsigned long long seeds[] = {11, 12};
  ks_run_request req = {.base = {cubin, sizeof cubin, "ok"},
                        .cand = {cubin, sizeof cubin, mode},
                        .work = &work,
                        .seeds = seeds,
                        .nseeds = 2,
                        .verify = true};
  assert_int_equal(ks_worker_run(&ctx, w, &req, a, out), 0);
  work = (ks_workload){0};
  return out->status;
}

/* A healthy request; returns the serving process's id. */
static int ok_pid(ks_worker *w, ks_arena *a) {
  ks_run_result r;
  ks_run_status s = run(w, "ok", a, &r);
  if (s != KS_RUN_OK)
    fail_msg("ok request: status %d: %s", (int)s, r.error ? r.error : "");
  assert_int_equal(r.seeds.len, 2);
  assert_true(r.seeds.items[1].seed == 12);
  assert_string_equal(r.seeds.items[0].outputs.items[0].buffer, "out");
  return r.base_registers;
}

static void hello_and_ok_runs(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(5000);
  ks_device_info d;
  assert_int_equal(ks_worker_hello(&ctx, w, &d), 0);
  assert_non_null(strstr(d.name, "fake GPU"));
  int pid = ok_pid(w, &a);
  assert_int_equal(ok_pid(w, &a), pid); /* same process serves on */
  ks_ceilings c;
  assert_int_equal(ks_worker_ceilings(&ctx, w, &(ks_module){cubin, 4, "ks_copy"},
                                      &(ks_module){cubin, 4, "ks_fma"}, &c), 0);
  assert_true(c.bandwidth == 1e12);
  ks_worker_stop(w);
  ks_arena_release(&a);
}

/* Each failure mode: the expected status and message, then a new process. */
static void failures_restart_the_worker(void **state) {
  static const struct {
    const char *mode;
    ks_run_status status;
    const char *message;
  } cases[] = {
      {"crash", KS_RUN_CRASHED, "signal 11"},
      {"exit", KS_RUN_CRASHED, "exit status 1"},
      {"garbage", KS_RUN_CRASHED, "not readable"},
      {"sticky", KS_RUN_CRASHED, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {"wrongtype", KS_RUN_CRASHED, "hello_reply"},
      {"hang", KS_RUN_TIMEOUT, "ran past its 400 ms limit"},
  };
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(400);
  int pid = ok_pid(w, &a);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ks_run_result r;
    long long t0 = ks_wire_now_ms();
    ks_run_status s = run(w, cases[i].mode, &a, &r);
    long long took = ks_wire_now_ms() - t0;
    if (s != cases[i].status)
      fail_msg("%s: status %d (%s)", cases[i].mode, (int)s, r.error ? r.error : "");
    if (!r.error || !strstr(r.error, cases[i].message))
      fail_msg("%s: expected \"%s\" in \"%s\"", cases[i].mode, cases[i].message,
               r.error ? r.error : "(null)");
    /* Killed within the limit: 400 ms, plus room for a slow sanitized
     * build to reap and restart. */
    if (took > 400 + 1500)
      fail_msg("%s took %lld ms", cases[i].mode, took);
    int next = ok_pid(w, &a);
    if (next == pid)
      fail_msg("%s: the same process (%d) served the next request", cases[i].mode, pid);
    pid = next;
  }
  /* A slow but timely answer is not a timeout. */
  ks_run_result r;
  assert_int_equal(run(w, "slow", &a, &r), KS_RUN_OK);
  assert_int_equal(r.base_registers, pid);
  ks_worker_stop(w);
  ks_arena_release(&a);
}

static void no_device_is_a_status(void **state) {
  setenv("KS_FAKE_WORKER", "nodevice", 1);
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(5000);
  ks_device_info d;
  assert_int_equal(ks_worker_hello(&ctx, w, &d), -1);
  assert_non_null(strstr(ctx.error, "no NVIDIA driver"));
  ks_run_result r;
  assert_int_equal(run(w, "ok", &a, &r), KS_RUN_NO_DEVICE);
  assert_non_null(strstr(r.error, "no NVIDIA driver"));
  ks_worker_stop(w);
  ks_arena_release(&a);
  unsetenv("KS_FAKE_WORKER");
}

/* A worker that dies before reading: the request's write hits a closed pipe.
 * The status says so and SIGPIPE does not kill the test. */
static void dead_on_arrival(void **state) {
  setenv("KS_FAKE_WORKER", "die", 1);
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(5000);
  usleep(100 * 1000);
  static ks_workload work;
  unsigned char *big = calloc(1, 1 << 20);
  ks_run_request req = {.base = {big, 1 << 20, "ok"}, .work = &work};
  ks_run_result r;
  assert_int_equal(ks_worker_run(&ctx, w, &req, &a, &r), 0);
  assert_int_equal(r.status, KS_RUN_CRASHED);
  assert_non_null(strstr(r.error, "died"));
  free(big);
  ks_worker_stop(w);
  ks_arena_release(&a);
  unsetenv("KS_FAKE_WORKER");
}

/* Stopping a worker stuck in a request must not wait for it for ever. */
static void stop_kills_a_hung_worker(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(300);
  ks_run_result r;
  assert_int_equal(run(w, "hang", &a, &r), KS_RUN_TIMEOUT);
  long long t0 = ks_wire_now_ms();
  ks_worker_stop(w);
  assert_true(ks_wire_now_ms() - t0 < 3000);
  ks_arena_release(&a);
}

static void missing_executable_is_an_error(void **state) {
  ks_worker_options o = {.executable = "/nonexistent/kernelsmith-worker"};
  ks_worker *w = (ks_worker *)1;
  assert_int_equal(ks_worker_start(&ctx, &o, &w), -1);
  assert_null(w);
  assert_non_null(strstr(ctx.error, "/nonexistent/kernelsmith-worker"));
  setenv("KERNELSMITH_WORKER", KS_FAKE_WORKER, 1);
  ks_worker_options none = {0};
  assert_int_equal(ks_worker_start(&ctx, &none, &w), 0);
  ks_device_info d;
  assert_int_equal(ks_worker_hello(&ctx, w, &d), 0);
  ks_worker_stop(w);
  unsetenv("KERNELSMITH_WORKER");
}

/* The worker runs code a model wrote: it gets the variables it reads, not
 * the API keys (nor anything else) of the shell that started us. */
static void worker_environment_is_minimal(void **state) {
  char path[] = "/tmp/ks_worker_env_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  static const char *const secrets[] = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                        "KERNELSMITH_LLM_KEY", "AWS_SECRET_ACCESS_KEY",
                                        "GITHUB_TOKEN", "KS_LLM_KEY", "SOME_OTHER_VARIABLE"};
  for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
    setenv(secrets[i], "sk-CANARY-worker-env-5e1f", 1);
  setenv("KS_FAKE_WORKER_ENV", path, 1);
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  setenv("KERNELSMITH_FAULTS", "none:0", 1);
  /* Set when the test's own environment lacks them, kept when it has them. */
  bool set_ubsan = !getenv("UBSAN_OPTIONS"), set_ld = !getenv("LD_LIBRARY_PATH");
  if (set_ubsan)
    setenv("UBSAN_OPTIONS", "print_stacktrace=1", 1);
  if (set_ld)
    setenv("LD_LIBRARY_PATH", "/opt/fake/lib", 1);
  char want_ld[4096];
  snprintf(want_ld, sizeof want_ld, "LD_LIBRARY_PATH=%s\n", getenv("LD_LIBRARY_PATH"));
  ks_arena a = KS_ARENA_INIT;
  ks_worker *w = start(5000);
  ks_run_result r;
  assert_int_equal(run(w, "env", &a, &r), KS_RUN_OK);
  ks_worker_stop(w);
  for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
    unsetenv(secrets[i]);
  unsetenv("KS_FAKE_WORKER_ENV");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("KERNELSMITH_FAULTS");
  if (set_ubsan)
    unsetenv("UBSAN_OPTIONS");
  if (set_ld)
    unsetenv("LD_LIBRARY_PATH");

  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[8192];
  bool saw_path = false, saw_cuda = false, saw_faults = false, saw_ubsan = false,
       saw_ld = false, saw_ks = false;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "CANARY"))
      fail_msg("the worker's environment holds a secret: %s", line);
    saw_path |= !strncmp(line, "PATH=", 5);
    saw_cuda |= !strcmp(line, "CUDA_VISIBLE_DEVICES=0\n");
    saw_faults |= !strcmp(line, "KERNELSMITH_FAULTS=none:0\n");
    saw_ubsan |= !strncmp(line, "UBSAN_OPTIONS=", 14);
    saw_ld |= !strcmp(line, want_ld);
    saw_ks |= !strncmp(line, "KS_FAKE_WORKER_ENV=", 19);
  }
  fclose(f);
  unlink(path);
  assert_true(saw_path && saw_cuda && saw_faults && saw_ubsan && saw_ld && saw_ks);
  ks_arena_release(&a);
}

/* The real kernelsmith-worker (found through the build tree or beside this
 * program): without a GPU it answers "no device" to everything, with one it
 * refuses a cubin that is not one. Either way it must speak the protocol. */
static void real_worker_answers(void **state) {
  ks_worker_options o = {.timeout_ms = 60000};
  ks_worker *w = NULL;
  if (ks_worker_start(&ctx, &o, &w))
    fail_msg("start: %s", ctx.error);
  ks_device_info d;
  bool gpu = ks_worker_hello(&ctx, w, &d) == 0;
  if (!gpu)
    assert_non_null(strstr(ctx.error, "driver"));
  ks_arena a = KS_ARENA_INIT;
  ks_run_result r;
  ks_run_status s = run(w, "ok", &a, &r);
  assert_int_equal(s, gpu ? KS_RUN_LOAD_FAILED : KS_RUN_NO_DEVICE);
  assert_non_null(r.error);
  if (gpu)
    assert_string_equal(r.error_kernel, "base");
  ks_worker_stop(w);
  ks_arena_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hello_and_ok_runs),
      cmocka_unit_test(failures_restart_the_worker),
      cmocka_unit_test(no_device_is_a_status),
      cmocka_unit_test(dead_on_arrival),
      cmocka_unit_test(stop_kills_a_hung_worker),
      cmocka_unit_test(missing_executable_is_an_error),
      cmocka_unit_test(worker_environment_is_minimal),
      cmocka_unit_test(real_worker_answers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
