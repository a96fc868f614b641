/* test_wire: the worker protocol without a worker or a GPU.
 *
 * Every message survives encode -> decode unchanged (64-bit seeds, NaN and
 * infinite errors, binary cubins with zero bytes, NULL strings); a frame
 * cut short, a foreign or future header, JSON that does not parse or lacks
 * a field are refused with a message that says what is wrong; the caps are
 * enforced by the encoder and by the reader before it allocates; captured
 * workloads (file inputs, offsets, raw-byte arguments up to their cap),
 * replays and their capture checks travel too, and frames without them
 * hold none of their keys; and frames
 * cross a pipe whole, with deadlines, EOF and a dead reader (no SIGPIPE
 * death) reported as such. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_wire.h"
#include "wire_internal.h"

static ks_ctx ctx;

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_wire");
  ctx.verbosity = KS_LOG_ERROR;
  return 0;
}

static int teardown(void **state) {
  ks_ctx_release(&ctx);
  return 0;
}

/* Encodes and decodes `in`; returns the decoded message (arena-owned). */
static ks_wire_msg round_trip(const ks_wire_msg *in, ks_arena *arena) {
  ks_buf frame = KS_BUF_INIT;
  assert_int_equal(ks_wire_encode(&ctx, in, &frame), 0);
  ks_wire_msg out;
  int rc = ks_wire_decode(&ctx, frame.data, frame.len, arena, &out);
  if (rc)
    fail_msg("decode: %s", ctx.error);
  ks_buf_release(&frame);
  assert_int_equal(out.type, in->type);
  return out;
}

static const unsigned char cubin_a[] = {0x7f, 'E', 'L', 'F', 0, 0, 1, 2, 0, 0xff};
static const unsigned char cubin_b[] = {0, 0, 0, 9, 8, 7};

/* A workload with every role, several types and distributions, and both
 * kinds of scalar. */
static ks_workload *sample_workload(ks_arena *a) {
  ks_workload *w = ks_arena_alloc(a, sizeof *w);
  w->size_name = "timed";
  w->timed = true;
  ks_wbuffer *b = ks_array_push(a, &w->buffers);
  *b = (ks_wbuffer){.name = "x", .dtype = KS_DT_BF16, .count = 1ull << 40, .role = KS_ROLE_IN,
                    .dist = KS_DIST_NORMAL, .a = 0.5, .b = 2.0, .atol = -1, .rtol = -1};
  b = ks_array_push(a, &w->buffers);
  *b = (ks_wbuffer){.name = "y", .dtype = KS_DT_F32, .count = 1000001, .role = KS_ROLE_INOUT,
                    .dist = KS_DIST_UNIFORM, .a = -1, .b = 1, .atol = 1e-6, .rtol = 0};
  b = ks_array_push(a, &w->buffers);
  *b = (ks_wbuffer){.name = "rows", .dtype = KS_DT_I64, .count = 17, .role = KS_ROLE_OUT,
                    .dist = KS_DIST_SORTED_INT, .a = 0, .b = 99, .atol = 0, .rtol = 0};
  ks_warg *g = ks_array_push(a, &w->args);
  *g = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  g = ks_array_push(a, &w->args);
  *g = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 2};
  g = ks_array_push(a, &w->args);
  *g = (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I64, .value = {true, -9007199254740993LL, 0}};
  g = ks_array_push(a, &w->args);
  *g = (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_F32, .value = {false, 0, 0.1}};
  w->launch = (ks_launch_cfg){{4096, 2, 1}, {256, 1, 1}, 49152};
  w->bytes_min = 12345678901234ull;
  w->flops = 2e9;
  return w;
}

static void hello_and_device_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg m = {.type = KS_WIRE_HELLO};
  round_trip(&m, &a);
  m = (ks_wire_msg){.type = KS_WIRE_HELLO_REPLY};
  ks_device_info *d = &m.device;
  snprintf(d->name, sizeof d->name, "NVIDIA H200 \"quoted\" \\ name");
  d->cc_major = 9;
  d->sm_count = 132;
  d->memory_bytes = 150ull << 30;
  d->l2_bytes = 60ull << 20;
  d->driver_version = 13000;
  snprintf(d->driver, sizeof d->driver, "580.1");
  snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "0000:3b:00.0");
  snprintf(d->uuid, sizeof d->uuid, "GPU-0123");
  d->peak_bandwidth = 4.8e12;
  d->sm_clock_max_mhz = 1980;
  ks_wire_msg out = round_trip(&m, &a);
  assert_memory_equal(&out.device, d, sizeof *d);
  ks_arena_release(&a);
}

static void run_request_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  unsigned long long seeds[] = {1, UINT64_MAX, 0x8000000000000001ull};
  ks_wire_msg m = {.type = KS_WIRE_RUN};
  ks_run_request *r = &m.run;
  r->base = (ks_module){cubin_a, sizeof cubin_a, "saxpy"};
  r->cand = (ks_module){cubin_b, sizeof cubin_b, "_Z8saxpy_v2PKfPfi"};
  r->ref = (ks_module){cubin_a, sizeof cubin_a, "saxpy_f64"};
  r->work = sample_workload(&a);
  r->cand_launch = (ks_launch_cfg){{1024, 1, 1}, {128, 1, 1}, 0};
  r->seeds = seeds;
  r->nseeds = 3;
  r->verify = true;
  r->time = true;
  r->recheck_seed = UINT64_MAX - 1;
  r->no_recheck = true;
  memset(&r->timing, 0, sizeof r->timing); /* padding too: compared as memory below */
  r->timing.min_samples = 10;
  r->timing.max_samples = 200;
  r->timing.target_rsd = 0.005;
  r->timing.max_seconds = 5;
  r->timing.warmup = 3;
  r->timing.flush_bytes = 123456789ull;
  r->timing.min_clock_fraction = 0.75;
  r->timing.warm = true;
  ks_wire_msg out = round_trip(&m, &a);
  const ks_run_request *o = &out.run;
  assert_int_equal(o->base.size, sizeof cubin_a);
  assert_memory_equal(o->base.cubin, cubin_a, sizeof cubin_a);
  assert_memory_equal(o->cand.cubin, cubin_b, sizeof cubin_b);
  assert_string_equal(o->base.function, "saxpy");
  assert_string_equal(o->cand.function, "_Z8saxpy_v2PKfPfi");
  assert_memory_equal(o->ref.cubin, cubin_a, sizeof cubin_a);
  assert_string_equal(o->ref.function, "saxpy_f64");
  assert_int_equal(o->nseeds, 3);
  for (int i = 0; i < 3; i++)
    assert_true(o->seeds[i] == seeds[i]);
  assert_true(o->recheck_seed == UINT64_MAX - 1);
  assert_true(o->no_recheck);
  assert_true(o->verify && o->time);
  assert_int_equal(o->timing.min_samples, 10);
  assert_int_equal(o->timing.max_samples, 200);
  assert_true(o->timing.target_rsd == 0.005 && o->timing.max_seconds == 5);
  assert_int_equal(o->timing.warmup, 3);
  assert_true(o->timing.flush_bytes == 123456789ull);
  assert_true(o->timing.min_clock_fraction == 0.75);
  assert_true(o->timing.warm);
  /* Without warm the field is left out, and reads back false (what a peer
   * that predates it sends). */
  r->timing.warm = false;
  ks_wire_msg cold = round_trip(&m, &a);
  assert_false(cold.run.timing.warm);
  assert_true(cold.run.timing.flush_bytes == 123456789ull);
  assert_memory_equal(&o->cand_launch, &r->cand_launch, sizeof r->cand_launch);
  const ks_workload *w = r->work, *v = o->work;
  assert_string_equal(v->size_name, "timed");
  assert_true(v->timed);
  assert_int_equal(v->buffers.len, 3);
  for (size_t i = 0; i < 3; i++) {
    const ks_wbuffer *x = &w->buffers.items[i], *y = &v->buffers.items[i];
    assert_string_equal(x->name, y->name);
    assert_int_equal(x->dtype, y->dtype);
    assert_true(x->count == y->count);
    assert_int_equal(x->role, y->role);
    assert_int_equal(x->dist, y->dist);
    assert_true(x->a == y->a && x->b == y->b && x->atol == y->atol && x->rtol == y->rtol);
  }
  assert_int_equal(v->args.len, 4);
  assert_int_equal(v->args.items[1].kind, KS_ARG_BUFFER);
  assert_int_equal(v->args.items[1].buffer, 2);
  assert_true(v->args.items[2].value.is_int);
  assert_true(v->args.items[2].value.i == -9007199254740993LL);
  assert_int_equal(v->args.items[2].dtype, KS_DT_I64);
  assert_false(v->args.items[3].value.is_int);
  assert_true(v->args.items[3].value.f == 0.1);
  assert_memory_equal(&v->launch, &w->launch, sizeof w->launch);
  assert_true(v->bytes_min == w->bytes_min);
  assert_true(v->flops == w->flops);

  /* No candidate and no reference: null on the wire, one attachment. */
  r->cand = (ks_module){0};
  r->ref = (ks_module){0};
  r->nseeds = 0;
  out = round_trip(&m, &a);
  assert_null(out.run.cand.cubin);
  assert_null(out.run.ref.cubin);
  assert_int_equal(out.run.nseeds, 0);
  ks_arena_release(&a);
}

/* A captured launch's workload: buffers read from a capture file at
 * offsets, with the bytes expected after the launch; parameters pointing
 * into one allocation; a struct passed by value; lengths known, zero and
 * unknown. */
static ks_workload *captured_workload(ks_arena *a, unsigned char *blob, size_t blob_size) {
  ks_workload *w = ks_arena_alloc(a, sizeof *w);
  w->size_name = "capture 0";
  w->captured = true;
  *ks_array_push(a, &w->buffers) = (ks_wbuffer){
      .name = "xy", .dtype = KS_DT_F32, .count = 2048, .role = KS_ROLE_INOUT,
      .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = "/tmp/app \"1\".kscap",
      .file_offset = (1ull << 40) + 3, .expect_file = "/tmp/app.kscap",
      .expect_offset = UINT64_MAX};
  *ks_array_push(a, &w->buffers) = (ks_wbuffer){
      .name = "flags", .dtype = KS_DT_U8, .count = 7, .role = KS_ROLE_IN, .dist = KS_DIST_FILE,
      .atol = -1, .rtol = -1, .file = "/tmp/app.kscap", .file_offset = 0};
  *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0, .offset = 4096,
                                          .length = 1024, .length_set = true};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 1, .length = 0, .length_set = true};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 1, .offset = 7, .length_unknown = true};
  *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BYTES, .bytes = blob, .size = blob_size};
  static const unsigned char null_ptr[8] = {0};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_BYTES, .bytes = null_ptr, .size = 8, .ref_same = true};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I32, .value = {true, 1024, 0}};
  w->launch = (ks_launch_cfg){{8, 1, 1}, {128, 1, 1}, 0};
  return w;
}

static void captured_request_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  /* The largest struct allowed, every byte value in it. */
  unsigned char blob[KS_WIRE_MAX_ARG_BYTES];
  for (size_t i = 0; i < sizeof blob; i++)
    blob[i] = (unsigned char)(i * 7 + i / 256);
  unsigned long long seeds[] = {5};
  ks_wire_msg m = {.type = KS_WIRE_RUN};
  ks_run_request *r = &m.run;
  r->base = (ks_module){cubin_a, sizeof cubin_a, "axpy"};
  r->work = captured_workload(&a, blob, sizeof blob);
  r->seeds = seeds;
  r->nseeds = 1;
  r->replay = true;
  ks_wire_msg out = round_trip(&m, &a);
  const ks_run_request *o = &out.run;
  assert_true(o->replay && !o->verify && !o->time);
  assert_null(o->cand.cubin);
  const ks_workload *w = r->work, *v = o->work;
  assert_true(v->captured);
  assert_int_equal(v->buffers.len, 2);
  for (size_t i = 0; i < 2; i++) {
    const ks_wbuffer *x = &w->buffers.items[i], *y = &v->buffers.items[i];
    assert_int_equal(y->dist, KS_DIST_FILE);
    assert_string_equal(y->file, x->file);
    assert_true(y->file_offset == x->file_offset);
    assert_true(y->expect_offset == x->expect_offset);
    if (x->expect_file)
      assert_string_equal(y->expect_file, x->expect_file);
    else
      assert_null(y->expect_file);
  }
  assert_int_equal(v->args.len, w->args.len);
  for (size_t i = 0; i < w->args.len; i++) {
    const ks_warg *x = &w->args.items[i], *y = &v->args.items[i];
    assert_int_equal(y->kind, x->kind);
    assert_int_equal(y->buffer, x->buffer);
    assert_true(y->offset == x->offset && y->length == x->length);
    assert_true(y->length_set == x->length_set && y->length_unknown == x->length_unknown);
    assert_int_equal(y->size, x->size);
    assert_int_equal(y->ref_same, x->ref_same); /* the fp64 twin's null pointer */
    if (x->kind == KS_ARG_BYTES)
      assert_memory_equal(y->bytes, x->bytes, x->size);
    else
      assert_null(y->bytes);
  }
  assert_true(v->args.items[6].value.is_int && v->args.items[6].value.i == 1024);
  ks_arena_release(&a);
}

/* The JSON of an encoded message, as a string in `a`. */
static const char *json_of(const ks_wire_msg *m, ks_arena *a) {
  ks_buf frame = KS_BUF_INIT;
  assert_int_equal(ks_wire_encode(&ctx, m, &frame), 0);
  ks_wire_frame f;
  assert_int_equal(ks_wire_frame_parse(&ctx, frame.data, frame.len, &f), 0);
  const char *json = ks_arena_strndup(a, f.json, f.json_len);
  ks_buf_release(&frame);
  return json;
}

static void new_fields_absent_at_defaults(void **state) {
  /* A request and a reply without captures are what they were before
   * captures existed: none of the new keys. */
  ks_arena a = KS_ARENA_INIT;
  unsigned long long seeds[] = {1};
  ks_wire_msg m = {.type = KS_WIRE_RUN};
  m.run = (ks_run_request){.base = {cubin_a, sizeof cubin_a, "saxpy"},
                           .work = sample_workload(&a), .seeds = seeds, .nseeds = 1,
                           .verify = true};
  const char *json = json_of(&m, &a);
  static const char *const added[] = {"file", "expect", "captured", "replay", "offset",
                                      "length", "{\"bytes\"", "capture", "ref_same",
                                      "excused"};
  for (size_t i = 0; i < sizeof added / sizeof *added; i++)
    if (strstr(json, added[i]))
      fail_msg("'%s' in %s", added[i], json);
  ks_wire_msg rep = {.type = KS_WIRE_RUN_REPLY};
  ks_seed_check *s = ks_array_push(&a, &rep.result.seeds);
  *ks_array_push(&a, &s->outputs) =
      (ks_output_check){.buffer = "out", .first_mismatch = -1, .ref_first_mismatch = -1};
  json = json_of(&rep, &a);
  assert_null(strstr(json, "capture"));
  ks_arena_release(&a);
}

static void capture_checks_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg m = {.type = KS_WIRE_RUN_REPLY};
  ks_seed_check *s = ks_array_push(&a, &m.result.seeds);
  s->seed = 5;
  *ks_array_push(&a, &s->outputs) = (ks_output_check){
      .buffer = "xy", .count = 2048, .first_mismatch = -1, .ref_first_mismatch = -1,
      .has_capture = true, .capture_bit_diffs = (1ull << 40) + 1, .capture_mismatches = 3,
      .capture_first_diff = 17, .capture_expected = NAN, .capture_got = -INFINITY};
  *ks_array_push(&a, &s->outputs) = (ks_output_check){
      .buffer = "zero", .count = 4, .first_mismatch = -1, .ref_first_mismatch = -1,
      .has_capture = true, .capture_first_diff = -1};
  *ks_array_push(&a, &s->outputs) = (ks_output_check){
      .buffer = "none", .count = 4, .first_mismatch = -1, .ref_first_mismatch = -1,
      .capture_first_diff = -1};
  ks_wire_msg out = round_trip(&m, &a);
  assert_int_equal(out.result.seeds.len, 1);
  const ks_output_checks *o = &out.result.seeds.items[0].outputs;
  assert_int_equal(o->len, 3);
  const ks_output_check *c = &o->items[0];
  assert_true(c->has_capture && c->capture_bit_diffs == (1ull << 40) + 1);
  assert_true(c->capture_mismatches == 3 && c->capture_first_diff == 17);
  assert_true(isnan(c->capture_expected) && isinf(c->capture_got) && c->capture_got < 0);
  assert_false(c->has_ref);
  c = &o->items[1];
  assert_true(c->has_capture && c->capture_bit_diffs == 0 && c->capture_first_diff == -1);
  c = &o->items[2];
  assert_false(c->has_capture);
  assert_true(c->capture_first_diff == -1 && c->capture_bit_diffs == 0);
  ks_arena_release(&a);
}

static void run_reply_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg m = {.type = KS_WIRE_RUN_REPLY};
  ks_run_result *r = &m.result;
  r->status = KS_RUN_CRASHED;
  r->error = "cand: kernel execution: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access";
  r->error_kernel = "cand";
  ks_seed_check *s = ks_array_push(&a, &r->seeds);
  s->seed = UINT64_MAX;
  s->race = true;
  s->race_buffer = "out";
  s->canary_buffer = "x";
  s->canary_before = true;
  s->changed_input = "x";
  ks_output_check *c = ks_array_push(&a, &s->outputs);
  *c = (ks_output_check){"out", 1ull << 33, 5, 3, 0.25, INFINITY, 7, NAN, -INFINITY,
                         true, 1.5e-7, 3e-7, 2.5e-3, INFINITY, 1ull << 40, 12, 0.841, NAN, 0.84,
                         .ref_excused = (1ull << 35) + 9, .capture_first_diff = -1};
  c = ks_array_push(&a, &s->outputs);
  *c = (ks_output_check){.first_mismatch = -1, .ref_first_mismatch = -1,
                         .capture_first_diff = -1};
  ks_array_push(&a, &r->seeds)->seed = 2; /* a seed with nothing wrong */
  r->timed = true;
  for (int i = 0; i < 5; i++) {
    *ks_array_push(&a, &r->timing.base_ms) = 0.1 * i + 1e-17;
    *ks_array_push(&a, &r->timing.cand_ms) = 1.0 / 3 + i;
  }
  r->timing.dropped_low_clock = 4;
  r->timing.sm_clock_min_mhz = 1755;
  r->timing.sm_clock_max_mhz = 1980;
  r->timing.seconds = 1.25;
  *ks_array_push(&a, &r->timing.recheck) = (ks_output_check){"out", 9, 9, 9, 1, 1, 0, 1, NAN,
                                                                    .ref_first_mismatch = -1};
  r->base_registers = 16;
  r->cand_registers = 40;
  r->cand_spill_bytes = 8;
  r->cand_static_smem = 4096;
  ks_wire_msg out = round_trip(&m, &a);
  const ks_run_result *o = &out.result;
  assert_int_equal(o->status, KS_RUN_CRASHED);
  assert_string_equal(o->error, r->error);
  assert_string_equal(o->error_kernel, "cand");
  assert_int_equal(o->seeds.len, 2);
  const ks_seed_check *t = &o->seeds.items[0];
  assert_true(t->seed == UINT64_MAX);
  assert_true(t->race && t->canary_before);
  assert_string_equal(t->race_buffer, "out");
  assert_string_equal(t->canary_buffer, "x");
  assert_null(t->base_canary_buffer);
  assert_string_equal(t->changed_input, "x");
  assert_int_equal(t->outputs.len, 2);
  const ks_output_check *d = &t->outputs.items[0];
  assert_true(d->count == 1ull << 33);
  assert_int_equal(d->mismatches, 5);
  assert_int_equal(d->unwritten, 3);
  assert_true(d->max_abs_error == 0.25 && isinf(d->max_rel_error) && d->max_rel_error > 0);
  assert_true(d->first_mismatch == 7 && isnan(d->expected) && isinf(d->got) && d->got < 0);
  /* the fp64 reference's fields, and their absence */
  assert_true(d->has_ref);
  assert_true(d->ref_base_max_abs == 1.5e-7 && d->ref_base_max_rel == 3e-7);
  assert_true(d->ref_cand_max_abs == 2.5e-3 && isinf(d->ref_cand_max_rel));
  assert_true(d->ref_mismatches == 1ull << 40 && d->ref_first_mismatch == 12);
  assert_true(d->ref_value == 0.841 && isnan(d->ref_got) && d->ref_base == 0.84);
  assert_true(d->ref_excused == (1ull << 35) + 9);
  assert_null(t->outputs.items[1].buffer);
  assert_true(t->outputs.items[1].first_mismatch == -1);
  assert_false(t->outputs.items[1].has_ref);
  assert_true(t->outputs.items[1].ref_first_mismatch == -1);
  assert_null(o->seeds.items[1].race_buffer);
  assert_true(o->timed);
  assert_int_equal(o->timing.base_ms.len, 5);
  for (int i = 0; i < 5; i++) {
    assert_true(o->timing.base_ms.items[i] == r->timing.base_ms.items[i]);
    assert_true(o->timing.cand_ms.items[i] == r->timing.cand_ms.items[i]);
  }
  assert_int_equal(o->timing.dropped_low_clock, 4);
  assert_true(o->timing.sm_clock_min_mhz == 1755 && o->timing.seconds == 1.25);
  assert_int_equal(o->timing.recheck.len, 1);
  assert_true(isnan(o->timing.recheck.items[0].got));
  assert_false(o->timing.recheck.items[0].has_ref);
  assert_int_equal(o->cand_registers, 40);
  assert_int_equal(o->cand_spill_bytes, 8);
  assert_int_equal(o->cand_static_smem, 4096);
  ks_arena_release(&a);
}

static void other_messages_round_trip(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg m = {.type = KS_WIRE_CEILINGS,
                   .copy = {cubin_a, sizeof cubin_a, "ks_copy"},
                   .fma = {cubin_b, sizeof cubin_b, "ks_fma"},
                   .fma_flops_per_iter = 16};
  ks_wire_msg out = round_trip(&m, &a);
  assert_string_equal(out.copy.function, "ks_copy");
  assert_memory_equal(out.fma.cubin, cubin_b, sizeof cubin_b);
  assert_int_equal(out.fma_flops_per_iter, 16);
  m = (ks_wire_msg){.type = KS_WIRE_CEILINGS_REPLY, .ceilings = {4.25e12, 6.7e13}};
  out = round_trip(&m, &a);
  assert_true(out.ceilings.bandwidth == 4.25e12 && out.ceilings.flops_fp32 == 6.7e13);
  m = (ks_wire_msg){.type = KS_WIRE_EXIT};
  round_trip(&m, &a);
  m = (ks_wire_msg){.type = KS_WIRE_ERROR, .error = "no CUDA device 3", .no_device = true};
  out = round_trip(&m, &a);
  assert_string_equal(out.error, "no CUDA device 3");
  assert_true(out.no_device);
  ks_arena_release(&a);
}

/* A frame around hand-written JSON, for the decoder's error paths. */
static void frame_of(const char *json, ks_buf *out, unsigned nattach) {
  const void *att[1] = {cubin_a};
  size_t size[1] = {sizeof cubin_a};
  ks_buf_reset(out);
  assert_int_equal(ks_wire_frame_build(&ctx, json, strlen(json), att, size, nattach, out), 0);
}

static void expect_refused(const void *frame, size_t len, const char *message) {
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg m;
  ctx.error[0] = '\0';
  assert_int_equal(ks_wire_decode(&ctx, frame, len, &a, &m), -1);
  if (!strstr(ctx.error, message))
    fail_msg("expected \"%s\" in \"%s\"", message, ctx.error);
  ks_arena_release(&a);
}

static void truncated_and_corrupt_frames_refused(void **state) {
  ks_buf f = KS_BUF_INIT;
  ks_wire_msg m = {.type = KS_WIRE_CEILINGS,
                   .copy = {cubin_a, sizeof cubin_a, "ks_copy"},
                   .fma = {cubin_b, sizeof cubin_b, "ks_fma"},
                   .fma_flops_per_iter = 16};
  assert_int_equal(ks_wire_encode(&ctx, &m, &f), 0);
  for (size_t len = 0; len < f.len; len++)
    expect_refused(f.data, len, "truncated");
  ks_buf_add(&f, "x", 1);
  expect_refused(f.data, f.len, "stray");
  f.len--;

  f.data[0] = 'X';
  expect_refused(f.data, f.len, "bad magic");
  f.data[0] = 'K';
  f.data[4] = 2;
  expect_refused(f.data, f.len, "version 2");
  f.data[4] = 1;
  f.data[12] = 1;
  expect_refused(f.data, f.len, "reserved");
  f.data[12] = 0;
  f.data[6] = 9;
  expect_refused(f.data, f.len, "attachments");

  frame_of("{\"type\":\"hello\"", &f, 0);
  expect_refused(f.data, f.len, "does not parse");
  frame_of("[1,2]", &f, 0);
  expect_refused(f.data, f.len, "does not parse");
  frame_of("{\"type\":\"launch_missiles\"}", &f, 0);
  expect_refused(f.data, f.len, "'type' has an unknown value");
  frame_of("{\"type\":\"ceilings_reply\",\"bandwidth\":1}", &f, 0);
  expect_refused(f.data, f.len, "missing field 'flops_fp32'");
  frame_of("{\"type\":\"ceilings_reply\",\"bandwidth\":\"fast\",\"flops_fp32\":1}", &f, 0);
  expect_refused(f.data, f.len, "'bandwidth' is not a number");
  frame_of("{\"type\":\"ceilings\",\"copy\":{\"function\":\"c\",\"attachment\":1},"
           "\"fma\":{\"function\":\"f\",\"attachment\":0},\"fma_flops_per_iter\":16}", &f, 1);
  expect_refused(f.data, f.len, "attachment 1 of 1");
  frame_of("{\"type\":\"error\",\"message\":\"x\",\"no_device\":1}", &f, 0);
  expect_refused(f.data, f.len, "'no_device' is not true or false");
  /* A seed as a JSON number would have lost bits: refused. */
  frame_of("{\"type\":\"run_reply\",\"status\":\"ok\",\"error\":null,\"error_kernel\":null,"
           "\"seeds\":[{\"seed\":18446744073709551615}]}", &f, 0);
  expect_refused(f.data, f.len, "'seed' is not an unsigned 64-bit integer");
  ks_buf_release(&f);
}

/* Replaces the first `from` in `json` with `to`, in `a`. */
static const char *replaced(ks_arena *a, const char *json, const char *from, const char *to) {
  const char *at = strstr(json, from);
  assert_non_null(at);
  return ks_arena_printf(a, "%.*s%s%s", (int)(at - json), json, to, at + strlen(from));
}

static void captured_fields_refused(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_buf f = KS_BUF_INIT;
  unsigned char big[KS_WIRE_MAX_ARG_BYTES + 1] = {0};
  unsigned char two[2] = {0x01, 0xab};
  ks_wire_msg m = {.type = KS_WIRE_RUN};
  m.run = (ks_run_request){.base = {cubin_a, sizeof cubin_a, "axpy"}, .replay = true};
  ks_workload *w = captured_workload(&a, big, sizeof big);
  m.run.work = w;
  /* The encoder: a struct over the cap, none at all, a file buffer without
   * its file. */
  assert_int_equal(ks_wire_encode(&ctx, &m, &f), -1);
  assert_non_null(strstr(ctx.error, "4097 raw bytes"));
  w->args.items[4].size = 0;
  assert_int_equal(ks_wire_encode(&ctx, &m, &f), -1);
  w->args.items[4].bytes = two;
  w->args.items[4].size = sizeof two;
  w->buffers.items[1].file = NULL;
  assert_int_equal(ks_wire_encode(&ctx, &m, &f), -1);
  assert_non_null(strstr(ctx.error, "names none"));
  w->buffers.items[1].file = "/tmp/app.kscap";

  /* The decoder, on frames made by hand from a good one. */
  const char *good = json_of(&m, &a);
  assert_non_null(strstr(good, "{\"bytes\":\"01ab\"}"));
  ks_buf hex = KS_BUF_INIT;
  for (int i = 0; i <= KS_WIRE_MAX_ARG_BYTES; i++)
    ks_buf_add(&hex, "5a", 2);
  frame_of(replaced(&a, good, "\"01ab\"", ks_arena_printf(&a, "\"%s\"", hex.data)), &f, 1);
  expect_refused(f.data, f.len, "4097 bytes, over the cap of 4096");
  frame_of(replaced(&a, good, "\"01ab\"", "\"01a\""), &f, 1);
  expect_refused(f.data, f.len, "'bytes' is not a non-empty string of hex digit pairs");
  frame_of(replaced(&a, good, "\"01ab\"", "\"01xy\""), &f, 1);
  expect_refused(f.data, f.len, "'bytes' is not a non-empty string of hex digit pairs");
  frame_of(replaced(&a, good, "\"01ab\"", "\"\""), &f, 1);
  expect_refused(f.data, f.len, "hex digit pairs");
  frame_of(replaced(&a, good, ",\"file\":\"/tmp/app.kscap\"}", "}"), &f, 1);
  expect_refused(f.data, f.len, "buffer 'flags' is read from a file but names none");
  frame_of(replaced(&a, good, "\"offset\":\"4096\"", "\"offset\":4096"), &f, 1);
  expect_refused(f.data, f.len, "'offset' is not an unsigned 64-bit integer in a string");
  frame_of(replaced(&a, good, "\"replay\":true", "\"replay\":1"), &f, 1);
  expect_refused(f.data, f.len, "'replay' is not true or false");
  /* Upper-case hex is read as well. */
  frame_of(replaced(&a, good, "\"01ab\"", "\"01AB\""), &f, 1);
  ks_wire_msg d;
  assert_int_equal(ks_wire_decode(&ctx, f.data, f.len, &a, &d), 0);
  assert_memory_equal(d.run.work->args.items[4].bytes, two, 2);
  ks_buf_release(&hex);
  ks_buf_release(&f);
  ks_arena_release(&a);
}

static void caps_enforced(void **state) {
  ks_buf f = KS_BUF_INIT;
  /* The encoder refuses an oversized cubin without reading it. */
  ks_wire_msg m = {.type = KS_WIRE_CEILINGS,
                   .copy = {cubin_a, KS_WIRE_MAX_ATTACHMENT + 1, "ks_copy"},
                   .fma = {cubin_b, sizeof cubin_b, "ks_fma"}};
  assert_int_equal(ks_wire_encode(&ctx, &m, &f), -1);
  assert_non_null(strstr(ctx.error, "cap"));
  /* A header declaring too much is refused from its first bytes. */
  unsigned char head[KS_WIRE_HEADER_BYTES + 8] = {'K', 'S', 'W', 'P', 1, 0, 0, 0};
  head[8] = 0xff, head[9] = 0xff, head[10] = 0xff, head[11] = 0x7f; /* 2 GiB of JSON */
  size_t need = 0;
  assert_int_equal(ks_wire_frame_size(&ctx, head, KS_WIRE_HEADER_BYTES, &need), -1);
  assert_non_null(strstr(ctx.error, "cap"));
  memset(head + 8, 0, 4);
  head[6] = 1;
  memset(head + 16, 0xff, 8); /* one 16-EiB attachment */
  assert_int_equal(ks_wire_frame_size(&ctx, head, sizeof head, &need), -1);
  assert_non_null(strstr(ctx.error, "cap"));

  /* Through a pipe: ks_wire_read refuses it before reading further. */
  int p[2];
  assert_int_equal(pipe(p), 0);
  assert_int_equal(write(p[1], head, sizeof head), (ssize_t)sizeof head);
  assert_int_equal(ks_wire_read(&ctx, p[0], ks_wire_now_ms() + 1000, &f), KS_WIRE_IO_BAD);
  close(p[0]);
  close(p[1]);
  ks_buf_release(&f);
}

typedef struct writer_arg {
  int fd;
  const ks_buf *frame;
  ks_wire_io io;
} writer_arg;

static void *writer(void *p) {
  writer_arg *w = p;
  ks_ctx local;
  ks_ctx_init(&local, "writer");
  w->io = ks_wire_write(&local, w->fd, w->frame->data, w->frame->len, ks_wire_now_ms() + 10000);
  ks_ctx_release(&local);
  return NULL;
}

static void frames_cross_a_pipe(void **state) {
  /* A 3 MiB cubin: many times a pipe's buffer, so reader and writer must
   * take turns (non-blocking reader, as the client's is). */
  size_t big = 3 << 20;
  unsigned char *cubin = malloc(big);
  for (size_t i = 0; i < big; i++)
    cubin[i] = (unsigned char)(i * 31 + 7);
  ks_wire_msg m = {.type = KS_WIRE_CEILINGS,
                   .copy = {cubin, big, "ks_copy"},
                   .fma = {cubin_b, sizeof cubin_b, "ks_fma"},
                   .fma_flops_per_iter = 16};
  ks_buf out = KS_BUF_INIT, in = KS_BUF_INIT;
  assert_int_equal(ks_wire_encode(&ctx, &m, &out), 0);
  int p[2];
  assert_int_equal(pipe(p), 0);
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  writer_arg wa = {p[1], &out, KS_WIRE_IO_ERROR};
  pthread_t t;
  pthread_create(&t, NULL, writer, &wa);
  assert_int_equal(ks_wire_read(&ctx, p[0], ks_wire_now_ms() + 10000, &in), KS_WIRE_IO_OK);
  pthread_join(t, NULL);
  assert_int_equal(wa.io, KS_WIRE_IO_OK);
  assert_int_equal(in.len, out.len);
  assert_memory_equal(in.data, out.data, out.len);
  ks_arena a = KS_ARENA_INIT;
  ks_wire_msg d;
  assert_int_equal(ks_wire_decode(&ctx, in.data, in.len, &a, &d), 0);
  assert_memory_equal(d.copy.cubin, cubin, big);
  ks_arena_release(&a);

  /* Nothing arrives: a timeout, on time. */
  long long t0 = ks_wire_now_ms();
  assert_int_equal(ks_wire_read(&ctx, p[0], t0 + 100, &in), KS_WIRE_IO_TIMEOUT);
  long long took = ks_wire_now_ms() - t0;
  assert_true(took >= 90 && took < 2000);
  /* Half a frame, then the writer goes away: EOF, with a message. */
  assert_int_equal(write(p[1], out.data, 100), 100);
  close(p[1]);
  assert_int_equal(ks_wire_read(&ctx, p[0], -1, &in), KS_WIRE_IO_EOF);
  assert_non_null(strstr(ctx.error, "middle of a frame"));
  close(p[0]);

  /* The reader is gone: the write reports EOF and SIGPIPE kills nobody. */
  assert_int_equal(pipe(p), 0);
  close(p[0]);
  assert_int_equal(ks_wire_write(&ctx, p[1], out.data, out.len, -1), KS_WIRE_IO_EOF);
  sigset_t pending;
  sigpending(&pending);
  assert_false(sigismember(&pending, SIGPIPE));
  close(p[1]);
  ks_buf_release(&out);
  ks_buf_release(&in);
  free(cubin);
}

static void enum_names(void **state) {
  ks_dtype t;
  assert_true(ks_wire_dtype_parse("bf16", &t) && t == KS_DT_BF16);
  assert_false(ks_wire_dtype_parse("float", &t));
  assert_int_equal(ks_wire_dtype_size(KS_DT_U64), 8);
  assert_true(ks_wire_dtype_is_float(KS_DT_F16));
  assert_false(ks_wire_dtype_is_float(KS_DT_I32));
  assert_string_equal(ks_wire_status_name(KS_RUN_TIMEOUT), "timeout");
  assert_string_equal(ks_wire_type_name(KS_WIRE_RUN_REPLY), "run_reply");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hello_and_device_round_trip),
      cmocka_unit_test(run_request_round_trip),
      cmocka_unit_test(run_reply_round_trip),
      cmocka_unit_test(captured_request_round_trip),
      cmocka_unit_test(new_fields_absent_at_defaults),
      cmocka_unit_test(capture_checks_round_trip),
      cmocka_unit_test(captured_fields_refused),
      cmocka_unit_test(other_messages_round_trip),
      cmocka_unit_test(truncated_and_corrupt_frames_refused),
      cmocka_unit_test(caps_enforced),
      cmocka_unit_test(frames_cross_a_pipe),
      cmocka_unit_test(enum_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
