/* Tests of captured launches as workloads (passes/target_capture.c) without
 * a GPU: capture files written with the backend's writer for the kernels of
 * testdata/capture (which have no spec), opened as targets: buffers per
 * allocation with offsets, roles from const, scalars by value, the launch
 * as captured, the instance of a template from its mangled name, lengths
 * inferred from the scalars (or unknown), guards evaluated over aliasing
 * parameters, unusable launches left out, what a snapshot says of its
 * values (integers and their range), and the one line a kernel with
 * neither spec nor capture gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_capture.h"
#include "ks_test.h"
#include "ks_specs.h"
#include "ks_target.h"

static char tmpdir[PATH_MAX];
static ks_scan scan;
static ks_scan_options opts;
static const char *paths[1];

static const char *tmp(const char *name) { return ks_test_path(tmpdir, name); }

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ks-capture-target-XXXXXX");
  if (!mkdtemp(tmpdir))
    return -1;
  paths[0] = KS_TESTDATA "/capture";
  opts = (ks_scan_options){.paths = paths, .npaths = 1, .no_compdb = true};
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  int rc = ks_scan_run(&ctx, &opts, &scan);
  if (rc)
    fprintf(stderr, "scan: %s\n", ctx.error);
  ks_ctx_release(&ctx);
  return rc;
}

static int teardown(void **state) {
  (void)state;
  ks_scan_release(&scan);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd);
}

static const ks_kernel *kernel(const char *name) {
  for (size_t i = 0; i < scan.kernels.len; i++)
    if (!strcmp(scan.kernels.items[i].name, name))
      return &scan.kernels.items[i];
  fail_msg("no kernel %s in testdata/capture", name);
  return NULL;
}

/* A writer with a launch builder. */
typedef struct cap {
  ks_ctx ctx;
  ks_capture_writer w;
  ks_arena arena;
} cap;

static void cap_open(cap *c, const char *path) {
  ks_ctx_init(&c->ctx, "test");
  c->arena = (ks_arena)KS_ARENA_INIT;
  assert_int_equal(ks_capture_writer_open(&c->ctx, path, &c->w), 0);
}

static unsigned long long blob(cap *c, const void *p, size_t n) {
  unsigned long long id;
  assert_int_equal(ks_capture_write_blob(&c->ctx, &c->w, p, n, &id), 0);
  return id;
}

static unsigned char *le(cap *c, unsigned long long v, size_t n) {
  unsigned char *b = ks_arena_alloc(&c->arena, 8);
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  return b;
}

/* Where the next parameter of `n` bytes goes in the parameter buffer:
 * after the last one, aligned as the compiler lays them out (the format
 * refuses parameters that overlap). */
static unsigned long long next_offset(const ks_capture_launch *l, size_t n) {
  if (!l->params.len)
    return 0;
  const ks_capture_param *last = &l->params.items[l->params.len - 1];
  unsigned long long end = last->offset + last->size, align = n >= 8 ? 8 : n >= 4 ? 4 : n;
  return (end + align - 1) / align * align;
}

static void ptr(cap *c, ks_capture_launch *l, unsigned long long base, unsigned long long size,
                unsigned long long off, unsigned long long before, unsigned long long after) {
  ks_capture_param p = {.index = (unsigned)l->params.len, .offset = next_offset(l, 8), .size = 8,
                        .kind = KS_CAPTURE_POINTER,
                        .value = le(c, base + off, 8), .memory = "device", .base = base,
                        .alloc_size = size, .ptr_offset = off, .before = before, .after = after};
  *ks_array_push(&c->arena, &l->params) = p;
}

static void scalar(cap *c, ks_capture_launch *l, const void *v, size_t n) {
  unsigned char *b = ks_arena_alloc(&c->arena, n);
  memcpy(b, v, n);
  ks_capture_param p = {.index = (unsigned)l->params.len, .offset = next_offset(l, n), .size = n,
                        .kind = KS_CAPTURE_SCALAR, .value = b};
  *ks_array_push(&c->arena, &l->params) = p;
}

static void cap_close(cap *c) {
  assert_int_equal(ks_capture_writer_close(&c->ctx, &c->w, true), 0);
  ks_arena_release(&c->arena);
  ks_ctx_release(&c->ctx);
}

/* axpy(x, y, 2, 64) with x and y in one 512-byte allocation. */
static void write_axpy(const char *path) {
  cap c;
  cap_open(&c, path);
  float before[128], after[128];
  for (int i = 0; i < 128; i++)
    before[i] = (float)i, after[i] = i < 64 ? (float)i : 2.0f * (float)(i - 64) + (float)i;
  unsigned long long b = blob(&c, before, sizeof before), a = blob(&c, after, sizeof after);
  ks_capture_launch l = {.kernel = "_Z4axpyPfS_fi", .grid = {1, 1, 1}, .block = {256, 1, 1},
                         .device = 0, .api = "cuLaunchKernel", .bytes_needed = 512};
  ptr(&c, &l, 0x7f0000000000ull, 512, 0, b, a);
  ptr(&c, &l, 0x7f0000000000ull, 512, 256, b, a);
  float av = 2;
  int n = 64;
  scalar(&c, &l, &av, 4);
  scalar(&c, &l, &n, 4);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
  cap_close(&c);
}

/* `diag`: where the warnings go (NULL: stderr). */
static void open_captured_to(const char *path, const char *name, ks_capture *cp, ks_arena *a,
                             ks_target *t, int want, FILE *diag) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  if (diag)
    ctx.diag = diag;
  assert_int_equal(ks_capture_open(&ctx, path, cp), 0);
  int rc = ks_target_open_captured(&ctx, &opts, &scan, kernel(name), cp, false, a, t);
  if (rc != want)
    fail_msg("open %s: %s", name, ctx.error);
  ks_ctx_release(&ctx);
}

static void open_captured(const char *path, const char *name, ks_capture *cp, ks_arena *a,
                          ks_target *t, int want) {
  open_captured_to(path, name, cp, a, t, want, NULL);
}

static void shared_allocation(void **state) {
  (void)state;
  const char *path = tmp("axpy.kscap");
  write_axpy(path);
  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "axpy", &cp, &a, &t, 0);
  assert_false(t.have_spec);
  assert_int_equal(t.nworkloads, 1);
  assert_int_equal(t.ncaptured, 1);
  const ks_workload *w = &t.workloads[0];
  assert_false(w->windowed);
  assert_string_equal(ks_capture_window_hint(w), "");
  assert_true(w->captured);
  assert_true(w->timed);
  assert_string_equal(w->size_name, "capture0");
  assert_int_equal(w->launch.block[0], 256);
  /* one buffer for the one allocation, both parameters into it */
  assert_int_equal(w->buffers.len, 1);
  const ks_wbuffer *b = &w->buffers.items[0];
  assert_int_equal(b->dtype, KS_DT_F32);
  assert_int_equal(b->count, 128);
  assert_int_equal(b->role, KS_ROLE_INOUT);
  assert_int_equal(b->dist, KS_DIST_FILE);
  assert_string_equal(b->file, cp.path);
  assert_int_equal(b->file_offset, cp.blobs.items[0].offset);
  assert_non_null(b->expect_file);
  assert_int_equal(b->expect_offset, cp.blobs.items[1].offset);
  assert_int_equal(w->args.len, 4);
  assert_int_equal(w->args.items[0].kind, KS_ARG_BUFFER);
  assert_int_equal(w->args.items[0].offset, 0);
  assert_int_equal(w->args.items[1].buffer, 0);
  assert_int_equal(w->args.items[1].offset, 256);
  assert_int_equal(w->args.items[2].kind, KS_ARG_SCALAR);
  assert_true(w->args.items[2].value.f == 2.0);
  assert_int_equal(w->args.items[3].value.i, 64);
  /* len_x: the 512 bytes x can reach hold n floats and less than 512
   * bytes more; len_y: exactly n */
  unsigned long long len;
  assert_true(ks_warg_length(w, &w->args.items[0], &len));
  assert_int_equal(len, 64);
  assert_true(ks_warg_length(w, &w->args.items[1], &len));
  assert_int_equal(len, 64);
  /* x and y share the buffer the launch writes: what it changed counts
   * (y[i] for i in 1..63; y[0] = 2 * 0 + 64 kept its value) */
  assert_int_equal(w->bytes_min, 63 * 4);
  assert_int_equal(t.spec.buffers.len, 2);
  assert_string_equal(t.spec.buffers.items[0].length, "n");
  assert_string_equal(t.spec.buffers.items[1].length, "n");

  /* guards over the aliasing parameters */
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  struct {
    const char *guard;
    bool holds;
  } cases[] = {{"disjoint(x, y)", true},  {"aligned(y, 16)", true}, {"aligned(y, 512)", false},
               {"len_x == 64", true},     {"disjoint(x, x)", false}, {"n % 4 == 0", true}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ks_variant v = {.source = "", .kernel_name = "axpy_v"};
    *ks_array_push(&a, &v.requires) = cases[i].guard;
    ks_launch_cfg lc;
    bool hold;
    if (ks_variant_resolve(&ctx, &v, t.kernel, w, &lc, &hold))
      fail_msg("%s: %s", cases[i].guard, ctx.error);
    if (hold != cases[i].holds)
      fail_msg("%s: holds %d", cases[i].guard, hold);
  }
  ks_ctx_release(&ctx);

  /* a second capture file adds its launches, named apart, with the
   * lengths of the spec the first one made */
  ks_capture cp2;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_capture_open(&ctx, path, &cp2), 0);
  assert_int_equal(ks_target_add_captures(&ctx, &t, &cp2, t.capture_instance, &a), 0);
  assert_int_equal(t.nworkloads, 2);
  assert_int_equal(t.ncaptured, 2);
  assert_int_equal(t.ncapture_files, 2);
  assert_string_equal(t.workloads[1].size_name, "capture0-2");
  assert_false(t.workloads[1].timed);
  assert_int_equal(t.spec.buffers.len, 2);
  assert_true(ks_warg_length(&t.workloads[1], &t.workloads[1].args.items[0], &len));
  assert_int_equal(len, 64);
  assert_string_equal(t.capture_path, cp.path);
  ks_ctx_release(&ctx);

  /* The fp64 reference by default: the twin of the slice, made with the
   * target, for every captured workload whose inputs widen (here both). */
  assert_true(t.subject.capture_reference);
  assert_false(t.subject.fp64_reference);
  assert_null(t.subject.ref_refusal);
  assert_non_null(t.subject.ref_source);
  assert_non_null(strstr(t.subject.ref_source, "double *x, double *y, double a"));
  assert_string_equal(t.subject.ref_name_expression, "axpy");
  assert_null(t.workloads[0].no_ref);
  assert_null(t.workloads[1].no_ref);

  /* apply makes the same spec again from the file */
  ks_spec spec;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_capture_spec(&ctx, &cp, &scan, t.kernel, &a, &spec), 0);
  assert_int_equal(spec.buffers.len, 2);
  assert_string_equal(spec.buffers.items[1].length, "n");
  assert_int_equal(spec.buffers.items[1].role, KS_ROLE_INOUT);
  ks_ctx_release(&ctx);
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_capture_close(&cp2);
  ks_arena_release(&a);
}

/* scale<float>: two launches, the larger one timed; `in` is read only. */
static void template_instance(void **state) {
  (void)state;
  const char *path = tmp("scale.kscap");
  cap c;
  cap_open(&c, path);
  for (int k = 0; k < 2; k++) {
    int n = k ? 1000 : 37;
    float *in = calloc((size_t)n, 4), *out = calloc((size_t)n, 4);
    for (int i = 0; i < n; i++)
      in[i] = (float)i, out[i] = 3.0f * (float)i;
    unsigned long long bi = blob(&c, in, (size_t)n * 4), bo0 = blob(&c, in, (size_t)n * 4),
                       bo1 = blob(&c, out, (size_t)n * 4);
    ks_capture_launch l = {.kernel = "_Z5scaleIfEvPKT_PS0_S0_i", .launch = (unsigned)k,
                           .grid = {(unsigned)(n + 127) / 128, 1, 1}, .block = {128, 1, 1},
                           .device = 0, .api = "cuLaunchKernel",
                           .bytes_needed = (unsigned long long)n * 8};
    ptr(&c, &l, 0x10000ull * (k + 1), (unsigned long long)n * 4, 0, bi, bi);
    ptr(&c, &l, 0x10000ull * (k + 1) + 0x8000, (unsigned long long)n * 4, 0, bo0, bo1);
    float s = 3;
    scalar(&c, &l, &s, 4);
    scalar(&c, &l, &n, 4);
    assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
    free(in);
    free(out);
  }
  /* and one launch of another instance, scale<double> */
  double din[16], dout[16];
  for (int i = 0; i < 16; i++)
    din[i] = i, dout[i] = 0.5 * i;
  unsigned long long di = blob(&c, din, sizeof din), do0 = blob(&c, din, sizeof din),
                     do1 = blob(&c, dout, sizeof dout);
  ks_capture_launch ld = {.kernel = "_Z5scaleIdEvPKT_PS0_S0_i", .grid = {1, 1, 1},
                          .block = {128, 1, 1}, .device = 0, .api = "cuLaunchKernel",
                          .bytes_needed = 256};
  ptr(&c, &ld, 0x90000, sizeof din, 0, di, di);
  ptr(&c, &ld, 0xA0000, sizeof dout, 0, do0, do1);
  double ds = 0.5;
  int dn = 16;
  scalar(&c, &ld, &ds, 8);
  scalar(&c, &ld, &dn, 4);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &ld), 0);
  cap_close(&c);
  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  char *said = NULL;
  size_t said_len = 0;
  FILE *diag = open_memstream(&said, &said_len);
  open_captured_to(path, "scale", &cp, &a, &t, 0, diag);
  fclose(diag);
  /* The double instance's launch is left out, and said. */
  if (!strstr(said, "1 captured launch of scale<double> left out: one instance of a template "
                    "kernel is searched per run, here <float>; a spec with the line 'instance "
                    "double'"))
    fail_msg("warnings: %s", said);
  free(said);
  assert_string_equal(t.capture_instance, "float");
  assert_string_equal(t.subject.name_expression, "scale<float>");
  assert_int_equal(t.nworkloads, 2);
  assert_false(t.workloads[0].timed);
  assert_true(t.workloads[1].timed);
  assert_string_equal(t.workloads[1].size_name, "capture1");
  assert_int_equal(t.workloads[1].buffers.len, 2);
  assert_int_equal(t.workloads[1].buffers.items[0].role, KS_ROLE_IN);
  assert_int_equal(t.workloads[1].buffers.items[1].role, KS_ROLE_INOUT);
  assert_int_equal(t.workloads[1].buffers.items[1].count, 1000);
  assert_string_equal(t.spec.buffers.items[0].length, "n");
  /* The bytes it must move, for the roofline: `in` read over its n
   * elements, and the elements of `out` the launch changed (all but
   * out[0], 0 before and after). */
  assert_int_equal(t.workloads[1].bytes_min, 1000 * 4 + 999 * 4);
  assert_int_equal(t.workloads[0].bytes_min, 37 * 4 + 36 * 4);
  ks_target_close(&t);

  /* the other instance, as replay opens it */
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  if (ks_target_open_capture_instance(&ctx, &opts, &scan, kernel("scale"), &cp, "double", &a, &t))
    fail_msg("scale<double>: %s", ctx.error);
  assert_string_equal(t.subject.name_expression, "scale<double>");
  assert_int_equal(t.nworkloads, 1);
  assert_true(t.workloads[0].timed);
  assert_int_equal(t.workloads[0].buffers.items[1].dtype, KS_DT_F64);
  assert_int_equal(t.workloads[0].args.items[2].dtype, KS_DT_F64);
  assert_true(t.workloads[0].args.items[2].value.f == 0.5);
  ks_target_close(&t);
  ks_ctx_release(&ctx);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* gather: a launch over the limit and one with a parameter missing are left
 * out; idx is an i32 input used as captured; with lengths that no scalar
 * gives, len_src is unknown and a guard that needs it fails. */
static void unusable_launches(void **state) {
  (void)state;
  const char *path = tmp("gather.kscap");
  cap c;
  cap_open(&c, path);
  float src[50];
  int idx[10];
  float dst[10] = {0};
  for (int i = 0; i < 50; i++)
    src[i] = (float)i;
  for (int i = 0; i < 10; i++)
    idx[i] = (i * 7) % 50;
  unsigned long long bs = blob(&c, src, sizeof src), bi = blob(&c, idx, sizeof idx),
                     bd = blob(&c, dst, sizeof dst);
  int n = 10;
  ks_capture_launch over = {.kernel = "_Z6gatherPKfPKiPfi", .grid = {1, 1, 1},
                            .block = {256, 1, 1}, .api = "cuLaunchKernel", .over_limit = true};
  ks_capture_launch shortl = over, ok = over;
  over.launch = 0;
  ptr(&c, &over, 0x1000, sizeof src, 0, 0, 0);
  ptr(&c, &over, 0x2000, sizeof idx, 0, 0, 0);
  ptr(&c, &over, 0x3000, sizeof dst, 0, 0, 0);
  scalar(&c, &over, &n, 4);
  shortl.over_limit = false;
  shortl.launch = 1;
  ptr(&c, &shortl, 0x1000, sizeof src, 0, bs, bs);
  ok.over_limit = false;
  ok.launch = 2;
  ptr(&c, &ok, 0x1000, sizeof src, 0, bs, bs);
  ptr(&c, &ok, 0x2000, sizeof idx, 0, bi, bi);
  ptr(&c, &ok, 0x3000, sizeof dst, 0, bd, bd);
  scalar(&c, &ok, &n, 4);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &over), 0);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &shortl), 0);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &ok), 0);
  cap_close(&c);

  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "gather", &cp, &a, &t, 0);
  assert_int_equal(t.nworkloads, 1);
  const ks_workload *w = &t.workloads[0];
  assert_string_equal(w->size_name, "capture2");
  assert_int_equal(w->buffers.items[1].dtype, KS_DT_I32);
  assert_int_equal(w->buffers.items[1].role, KS_ROLE_IN);
  unsigned long long len;
  assert_false(ks_warg_length(w, &w->args.items[0], &len)); /* 50 floats: no scalar says */
  assert_true(ks_warg_length(w, &w->args.items[1], &len));
  assert_int_equal(len, 10);
  assert_null(t.spec.buffers.items[0].length);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_variant v = {.source = "", .kernel_name = "gather_v"};
  *ks_array_push(&a, &v.requires) = "len_src % 4 == 0";
  ks_launch_cfg lc;
  bool hold;
  assert_int_equal(ks_variant_resolve(&ctx, &v, t.kernel, w, &lc, &hold), -1);
  assert_non_null(strstr(ctx.error, "len_src"));
  ks_ctx_release(&ctx);
  ks_target_close(&t);

  /* the draft: the index array's range, the unknown length said */
  const char *text;
  ks_ctx_init(&ctx, "test");
  if (ks_capture_spec_text(&ctx, &cp, &scan, kernel("gather"), &a, &text))
    fail_msg("draft: %s", ctx.error);
  assert_non_null(strstr(text, "in    idx[n] int(0, 49)\n"));
  assert_non_null(strstr(text, "in    src[50] uniform(0, 49) # length unknown"));
  assert_non_null(strstr(text, "inout dst[n] const(0)"));
  ks_ctx_release(&ctx);

  /* this capture holds no launch of axpy, which has no spec either */
  ks_ctx_init(&ctx, "test");
  assert_int_equal(
      ks_target_open_captured(&ctx, &opts, &scan, kernel("axpy"), &cp, false, &a, &t), -1);
  assert_non_null(strstr(ctx.error, "kernelsmith-cc profile --capture axpy"));
  ks_target_close(&t);
  ks_ctx_release(&ctx);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* The spec drafted from a capture, pasted above the kernel in a copy of
 * the source, is read, checked and resolved like one a user wrote. */
static void drafted_spec(void **state) {
  (void)state;
  const char *path = tmp("draft.kscap");
  write_axpy(path);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_capture cp;
  assert_int_equal(ks_capture_open(&ctx, path, &cp), 0);
  ks_arena a = KS_ARENA_INIT;
  const char *text;
  if (ks_capture_spec_text(&ctx, &cp, &scan, kernel("axpy"), &a, &text))
    fail_msg("draft: %s", ctx.error);
  assert_non_null(strstr(text, "size timed: n = 64   # as captured"));
  assert_non_null(strstr(text, "size odd: n = 49"));
  assert_non_null(strstr(text, "size one: n = 1"));
  assert_non_null(strstr(text, "scalar a = 2"));
  assert_non_null(strstr(text, "inout x[n] uniform(0, 63)"));
  assert_non_null(strstr(text, "inout y[n] uniform(64, 127)"));

  /* pasted above the kernel */
  char dir[PATH_MAX + 64], src[PATH_MAX + 96];
  snprintf(dir, sizeof dir, "%s/drafted", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(src, sizeof src, "%s/kernels.cu", dir);
  FILE *in = fopen(KS_TESTDATA "/capture/kernels.cu", "r"), *out = fopen(src, "w");
  assert_non_null(in);
  assert_non_null(out);
  char line[512];
  while (fgets(line, sizeof line, in)) {
    if (!strncmp(line, "__global__ void axpy", 20))
      fputs(text, out);
    fputs(line, out);
  }
  fclose(in);
  fclose(out);
  const char *p1[] = {dir};
  ks_scan_options o = {.paths = p1, .npaths = 1, .no_compdb = true};
  ks_scan sc;
  assert_int_equal(ks_scan_run(&ctx, &o, &sc), 0);
  const ks_kernel *k = NULL;
  for (size_t i = 0; i < sc.kernels.len; i++)
    if (!strcmp(sc.kernels.items[i].name, "axpy"))
      k = &sc.kernels.items[i];
  assert_non_null(k);
  ks_spec spec;
  if (ks_spec_find(&ctx, &sc, k, &a, &spec) || ks_spec_check(&ctx, &spec, k))
    fail_msg("the drafted spec: %s", ctx.error);
  assert_int_equal(spec.sizes.len, 3);
  const ks_launch *site = &sc.launches.items[k->launches.items[0]];
  for (size_t i = 0; i < spec.sizes.len; i++) {
    ks_workload w;
    if (ks_spec_resolve(&ctx, &spec, k, site, i, &a, &w))
      fail_msg("size %zu: %s", i, ctx.error);
    if (i == 0)
      assert_int_equal(w.buffers.items[0].count, 64);
  }
  ks_scan_release(&sc);
  ks_capture_close(&cp);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* A struct passed by value travels as its bytes, a null pointer as null;
 * a pointer the driver did not know (not null) leaves its launch out. */
static void struct_and_null_pointer(void **state) {
  (void)state;
  const char *path = tmp("masked.kscap");
  cap c;
  cap_open(&c, path);
  float in[16], out[16] = {0};
  for (int i = 0; i < 16; i++)
    in[i] = (float)i;
  unsigned long long bi = blob(&c, in, sizeof in), bo = blob(&c, out, sizeof out);
  struct {
    float scale;
    int n;
  } params = {2.0f, 16};
  for (int k = 0; k < 2; k++) {
    ks_capture_launch l = {.kernel = "_Z12masked_scale6ParamsPKfPfPKi", .launch = (unsigned)k,
                           .grid = {1, 1, 1}, .block = {256, 1, 1}, .api = "cuLaunchKernel",
                           .bytes_needed = 128};
    scalar(&c, &l, &params, sizeof params);
    ptr(&c, &l, 0x5000, sizeof in, 0, bi, bi);
    ptr(&c, &l, 0x6000, sizeof out, 0, bo, bo);
    unsigned long long mask = k ? 0xdeadbeef000ull : 0; /* launch 1: a stray pointer */
    scalar(&c, &l, &mask, 8);
    assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
  }
  cap_close(&c);
  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "masked_scale", &cp, &a, &t, 0);
  assert_int_equal(t.nworkloads, 1); /* launch 1 left out */
  const ks_workload *w = &t.workloads[0];
  assert_int_equal(w->args.len, 4);
  assert_int_equal(w->args.items[0].kind, KS_ARG_BYTES);
  assert_int_equal(w->args.items[0].size, 8);
  assert_memory_equal(w->args.items[0].bytes, &params, 8);
  assert_int_equal(w->args.items[1].kind, KS_ARG_BUFFER);
  assert_int_equal(w->args.items[2].kind, KS_ARG_BUFFER);
  assert_int_equal(w->args.items[3].kind, KS_ARG_BYTES);
  assert_int_equal(w->args.items[3].size, 8);
  static const unsigned char zero[8];
  assert_memory_equal(w->args.items[3].bytes, zero, 8);
  assert_int_equal(w->buffers.len, 2);
  assert_int_equal(w->buffers.items[0].role, KS_ROLE_IN);
  assert_int_equal(w->buffers.items[1].role, KS_ROLE_INOUT);
  /* no integer scalar gives a length: unknown, and said so in the spec */
  unsigned long long len;
  assert_false(ks_warg_length(w, &w->args.items[1], &len));
  assert_null(t.spec.buffers.items[0].length);
  /* the fp64 twin: the null mask is one in the twin too, the struct of a
   * float has no widened form, so this launch goes without the reference */
  assert_true(w->args.items[3].ref_same);
  assert_false(w->args.items[0].ref_same);
  assert_non_null(w->no_ref);
  assert_non_null(strstr(w->no_ref, "'p' (Params) is passed by value as raw bytes"));
  assert_true(t.subject.capture_reference);
  assert_non_null(t.subject.ref_source); /* the slice has a twin all the same */
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* A typedef'd element type (llm.c's floatX): the buffers are bf16, so the
 * lengths are inferred in elements (N each), not left unknown. */
static void typedef_element_type(void **state) {
  (void)state;
  const char *path = tmp("relu.kscap");
  cap c;
  cap_open(&c, path);
  unsigned short in[100], out[100];
  for (int i = 0; i < 100; i++)
    in[i] = (unsigned short)(0x3f80 + i), out[i] = in[i];
  unsigned long long bi = blob(&c, in, sizeof in), bo = blob(&c, out, sizeof out);
  ks_capture_launch l = {.kernel = "_Z6relu_xP13__nv_bfloat16PKS_i", .grid = {1, 1, 1},
                         .block = {256, 1, 1}, .device = 0, .api = "cuLaunchKernel",
                         .bytes_needed = 400};
  ptr(&c, &l, 0x7f0000000000ull, 200, 0, bo, bo);
  ptr(&c, &l, 0x7f0000100000ull, 200, 0, bi, bi);
  int n = 100;
  scalar(&c, &l, &n, 4);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
  cap_close(&c);

  const ks_kernel *k = kernel("relu_x");
  assert_string_equal(k->params.items[0].pointee, "floatX");
  assert_string_equal(k->params.items[0].canon_pointee, "__nv_bfloat16");
  assert_null(k->params.items[2].canon_type);
  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "relu_x", &cp, &a, &t, 0);
  const ks_workload *w = &t.workloads[0];
  assert_int_equal(w->buffers.len, 2);
  assert_int_equal(w->buffers.items[0].dtype, KS_DT_BF16);
  assert_int_equal(w->buffers.items[0].count, 100);
  unsigned long long len = 0;
  assert_true(ks_warg_length(w, &w->args.items[0], &len));
  assert_int_equal(len, 100);
  assert_true(ks_warg_length(w, &w->args.items[1], &len));
  assert_int_equal(len, 100);
  /* bf16 code has no faithful fp64 twin: no reference, and the reason
   * kept for the judge's one line */
  assert_true(t.subject.capture_reference);
  assert_null(t.subject.ref_source);
  assert_non_null(t.subject.ref_refusal);
  assert_non_null(strstr(t.subject.ref_refusal, "bfloat16"));
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* A pooled allocation captured through a window: the buffer is the span,
 * the parameters' offsets are into it, and only what the span proves is
 * inferred (y's n floats end exactly at the span's end; x's do not). */
static void windowed_allocation(void **state) {
  (void)state;
  const char *path = tmp("window.kscap");
  cap c;
  cap_open(&c, path);
  float span[2048];
  for (int i = 0; i < 2048; i++)
    span[i] = (float)i;
  unsigned long long b = blob(&c, span, sizeof span);
  ks_capture_launch l = {.kernel = "_Z4axpyPfS_fi", .grid = {4, 1, 1}, .block = {256, 1, 1},
                         .api = "cuLaunchKernel", .bytes_needed = sizeof span};
  ptr(&c, &l, 0x100000, 1 << 20, 4096, b, b);
  ptr(&c, &l, 0x100000, 1 << 20, 8192, b, b);
  for (size_t i = 0; i < 2; i++) {
    l.params.items[i].span_lo = 4096;
    l.params.items[i].span_hi = 8192 + 4096;
  }
  float av = 2;
  int n = 1024;
  scalar(&c, &l, &av, 4);
  scalar(&c, &l, &n, 4);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
  cap_close(&c);

  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "axpy", &cp, &a, &t, 0);
  const ks_workload *w = &t.workloads[0];
  assert_int_equal(w->buffers.len, 1);
  assert_int_equal(w->buffers.items[0].count, 2048);
  assert_int_equal(w->args.items[0].offset, 0);
  assert_int_equal(w->args.items[1].offset, 4096);
  unsigned long long len;
  assert_false(ks_warg_length(w, &w->args.items[0], &len));
  assert_true(ks_warg_length(w, &w->args.items[1], &len));
  assert_int_equal(len, 1024);
  /* a replay that fails on it says the window may be why */
  assert_true(w->windowed);
  assert_non_null(strstr(ks_capture_window_hint(w), "larger --capture-window"));
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_arena_release(&a);

  /* a span that does not hold its pointer is refused by the reader */
  const char *badp = tmp("badspan.kscap");
  cap_open(&c, badp);
  b = blob(&c, span, 4096);
  ks_capture_launch bl = {.kernel = "_Z4axpyPfS_fi", .grid = {1, 1, 1}, .block = {1, 1, 1},
                          .api = "cuLaunchKernel"};
  ptr(&c, &bl, 0x100000, 1 << 20, 0, b, b);
  bl.params.items[0].span_lo = 8192;
  bl.params.items[0].span_hi = 8192 + 4096;
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &bl), 0);
  cap_close(&c);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_capture_open(&ctx, badp, &cp), -1);
  assert_non_null(strstr(ctx.error, "'span' is not [lo, hi] within its allocation"));
  ks_ctx_release(&ctx);
}

/* Sizes only macros give: row_sums reads a[i * COLS + j] under i < ROWS,
 * so its footprint proves 'a' reaches ROWS * COLS elements, which fills the
 * 512 bytes it was given: that is its length, and the bytes it must move
 * count it; 'y' (64 bytes, written whole) has only the bytes it changed. */
static void length_from_extent(void **state) {
  (void)state;
  const char *path = tmp("row_sums.kscap");
  cap c;
  cap_open(&c, path);
  float a_[128], y0[16], y1[16];
  for (int i = 0; i < 128; i++)
    a_[i] = (float)(i % 7);
  for (int i = 0; i < 16; i++) {
    y0[i] = 0.0f;
    y1[i] = 0.0f;
    for (int j = 0; j < 8; j++)
      y1[i] += a_[i * 8 + j];
  }
  unsigned long long ba = blob(&c, a_, sizeof a_), by0 = blob(&c, y0, sizeof y0),
                     by1 = blob(&c, y1, sizeof y1);
  ks_capture_launch l = {.kernel = "_Z8row_sumsPKfPf", .grid = {1, 1, 1}, .block = {32, 1, 1},
                         .api = "cuLaunchKernel", .bytes_needed = sizeof a_ + sizeof y0};
  ptr(&c, &l, 0x10000, sizeof a_, 0, ba, ba);
  ptr(&c, &l, 0x20000, sizeof y0, 0, by0, by1);
  assert_int_equal(ks_capture_write_launch(&c.ctx, &c.w, &l), 0);
  cap_close(&c);

  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "row_sums", &cp, &a, &t, 0);
  const ks_workload *w = &t.workloads[0];
  unsigned long long len;
  assert_true(ks_warg_length(w, &w->args.items[0], &len));
  assert_int_equal(len, 128);
  assert_non_null(t.spec.buffers.items[0].length);
  /* y[i] for every row changed (no row sums to 0 here) */
  for (int i = 0; i < 16; i++)
    assert_true(y1[i] != 0.0f);
  assert_int_equal(w->bytes_min, 128 * 4 + 16 * 4);
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* row_sums launch `k` whose `a` holds the n floats at `vals` (snapshotted
 * after the launch too, unless `no_after`), y zeros. */
static void row_sums_launch(cap *c, unsigned k, const float *vals, size_t n, bool no_after) {
  float y[16] = {0};
  unsigned long long ba = blob(c, vals, n * 4), by = blob(c, y, sizeof y);
  ks_capture_launch l = {.kernel = "_Z8row_sumsPKfPf", .launch = k, .grid = {1, 1, 1},
                         .block = {32, 1, 1}, .api = "cuLaunchKernel",
                         .bytes_needed = n * 4 + sizeof y};
  unsigned long long base = 0x10000000ull * (k + 1);
  ptr(c, &l, base, n * 4, 0, ba, no_after ? 0 : ba);
  ptr(c, &l, base + 0x8000000ull, sizeof y, 0, by, by);
  assert_int_equal(ks_capture_write_launch(&c->ctx, &c->w, &l), 0);
}

/* What a snapshot says of its values (ks_wbuffer.ints_*): a float buffer
 * of integers (-0.0 among them) has them, with their range, whether its
 * snapshot was read for the bytes the launch changed, read for this alone,
 * or sampled (too large to read); one 0.5, a NaN or an infinity and
 * nothing is known; nor where a sampled run meets a 0.5. */
static void snapshot_values(void **state) {
  (void)state;
  const char *path = tmp("values.kscap");
  cap c;
  cap_open(&c, path);
  float ints[128], half[128], nan_[128], inf_[128];
  for (int i = 0; i < 128; i++)
    ints[i] = half[i] = nan_[i] = inf_[i] = (float)((i * 37) % 251 + 3);
  ints[5] = -0.0f;
  half[77] = 0.5f;
  nan_[127] = NAN;
  inf_[0] = INFINITY;
  row_sums_launch(&c, 0, ints, 128, false);
  row_sums_launch(&c, 1, half, 128, false);
  row_sums_launch(&c, 2, nan_, 128, false);
  row_sums_launch(&c, 3, inf_, 128, false);
  row_sums_launch(&c, 4, ints, 128, true); /* read for this alone */
  /* 2^21 + 3 floats: sampled, 1024 runs of 1024 from the first element
   * to the last */
  size_t big = ((size_t)1 << 21) + 3;
  float *many = malloc(big * sizeof *many);
  assert_non_null(many);
  for (size_t i = 0; i < big; i++)
    many[i] = (float)(i % 1000);
  many[big - 1] = 4000.0f;
  row_sums_launch(&c, 5, many, big, true);
  many[1] = 0.5f;
  row_sums_launch(&c, 6, many, big, true);
  free(many);
  cap_close(&c);

  ks_capture cp;
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  open_captured(path, "row_sums", &cp, &a, &t, 0);
  assert_int_equal(t.nworkloads, 7);
  struct {
    bool known;
    double lo, hi;
  } want[] = {{true, 0, 252}, {false, 0, 0}, {false, 0, 0}, {false, 0, 0},
              {true, 0, 252}, {true, 0, 4000}, {false, 0, 0}};
  for (size_t k = 0; k < 7; k++) {
    const ks_wbuffer *b = &t.workloads[k].buffers.items[0];
    assert_int_equal(b->dtype, KS_DT_F32);
    if (b->ints_known != want[k].known || b->ints_lo != want[k].lo || b->ints_hi != want[k].hi)
      fail_msg("launch %zu: known %d [%g, %g], want %d [%g, %g]", k, b->ints_known, b->ints_lo,
               b->ints_hi, want[k].known, want[k].lo, want[k].hi);
    /* -0.0 is the integer 0, not a lower bound of -0 */
    assert_false(signbit(b->ints_lo));
    /* y, zeros */
    const ks_wbuffer *y = &t.workloads[k].buffers.items[1];
    assert_true(y->ints_known);
    assert_true(y->ints_lo == 0 && y->ints_hi == 0);
  }
  ks_target_close(&t);
  ks_capture_close(&cp);
  ks_arena_release(&a);
}

/* Without a capture, a kernel with no spec is told both ways to get one. */
static void neither(void **state) {
  (void)state;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_target t;
  assert_int_equal(ks_target_open_kernel(&ctx, &opts, &scan, kernel("gather"), &a, &t), -1);
  assert_non_null(strstr(ctx.error, "has no spec"));
  assert_non_null(strstr(ctx.error, "profile --capture gather"));
  ks_target_close(&t);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shared_allocation),
      cmocka_unit_test(template_instance),
      cmocka_unit_test(unusable_launches),
      cmocka_unit_test(neither),
      cmocka_unit_test(drafted_spec),
      cmocka_unit_test(struct_and_null_pointer),
      cmocka_unit_test(windowed_allocation),
      cmocka_unit_test(typedef_element_type),
      cmocka_unit_test(length_from_extent),
      cmocka_unit_test(snapshot_values),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
