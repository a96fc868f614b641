/* wire: the worker protocol's messages as frames (docs/worker-protocol.md):
 * the enums' names on the wire, and encoding.
 *
 * Encoding builds a cJSON tree from a ks_wire_msg, prints it, and lays the
 * frame out: header, attachment lengths, JSON, attachments. cJSON lives in
 * this file and wire_decode.c only.
 *
 * Numbers: 64-bit integers (seeds, element counts, byte sizes) travel as
 * decimal strings, since a JSON number is a double and would round them.
 * Doubles that JSON cannot spell (NaN, infinities: a relative error against
 * a zero, an expected value that is NaN) travel as "nan", "inf", "-inf".
 * Fields added after version 1's first release (captured workloads, raw
 * byte arguments, replay, the capture checks, the reference's `ref_same`
 * and `excused`) are left out at their
 * defaults, so that a frame without them is byte for byte what it was.
 * Decoding is in wire_decode.c, framing and the reading and writing of
 * frames in wire_io.c. */
#include "ks_wire.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_internal.h"

/* ---- enum names ---------------------------------------------------------- */

static const char *const type_names[] = {
    [KS_WIRE_HELLO] = "hello",       [KS_WIRE_HELLO_REPLY] = "hello_reply",
    [KS_WIRE_RUN] = "run",           [KS_WIRE_RUN_REPLY] = "run_reply",
    [KS_WIRE_CEILINGS] = "ceilings", [KS_WIRE_CEILINGS_REPLY] = "ceilings_reply",
    [KS_WIRE_EXIT] = "exit",         [KS_WIRE_ERROR] = "error",
};
static const char *const status_names[] = {
    [KS_RUN_OK] = "ok",           [KS_RUN_LOAD_FAILED] = "load_failed",
    [KS_RUN_LAUNCH_FAILED] = "launch_failed", [KS_RUN_CRASHED] = "crashed",
    [KS_RUN_TIMEOUT] = "timeout", [KS_RUN_NO_DEVICE] = "no_device",
};
static const char *const role_names[] = {
    [KS_ROLE_IN] = "in", [KS_ROLE_OUT] = "out", [KS_ROLE_INOUT] = "inout"};
static const char *const dist_names[] = {
    [KS_DIST_UNIFORM] = "uniform",         [KS_DIST_NORMAL] = "normal",
    [KS_DIST_INT] = "int",                 [KS_DIST_IOTA] = "iota",
    [KS_DIST_PERMUTATION] = "permutation", [KS_DIST_CONSTANT] = "constant",
    [KS_DIST_SORTED_INT] = "sorted_int",   [KS_DIST_FILE] = "file",
};
static const struct {
  const char *name;
  size_t size;
  bool is_float;
} dtypes[] = {
    [KS_DT_NONE] = {"none", 0, false}, [KS_DT_F16] = {"f16", 2, true},
    [KS_DT_BF16] = {"bf16", 2, true},  [KS_DT_F32] = {"f32", 4, true},
    [KS_DT_F64] = {"f64", 8, true},    [KS_DT_I8] = {"i8", 1, false},
    [KS_DT_U8] = {"u8", 1, false},     [KS_DT_I16] = {"i16", 2, false},
    [KS_DT_U16] = {"u16", 2, false},   [KS_DT_I32] = {"i32", 4, false},
    [KS_DT_U32] = {"u32", 4, false},   [KS_DT_I64] = {"i64", 8, false},
    [KS_DT_U64] = {"u64", 8, false},
};
#define COUNT(a) (sizeof(a) / sizeof *(a))

const char *ks_wire_type_name(ks_wire_type t) {
  return (size_t)t < COUNT(type_names) ? type_names[t] : "unknown";
}
const char *ks_wire_status_name(ks_run_status s) {
  return (size_t)s < COUNT(status_names) ? status_names[s] : "unknown";
}
const char *ks_wire_dtype_name(ks_dtype t) {
  return (size_t)t < COUNT(dtypes) ? dtypes[t].name : NULL;
}
size_t ks_wire_dtype_size(ks_dtype t) { return (size_t)t < COUNT(dtypes) ? dtypes[t].size : 0; }
bool ks_wire_dtype_is_float(ks_dtype t) {
  return (size_t)t < COUNT(dtypes) && dtypes[t].is_float;
}
bool ks_wire_dtype_parse(const char *name, ks_dtype *out) {
  for (size_t i = 0; i < COUNT(dtypes); i++)
    if (name && strcmp(name, dtypes[i].name) == 0) {
      *out = (ks_dtype)i;
      return true;
    }
  return false;
}

const ks_wire_names ks_wire_types = {type_names, COUNT(type_names)};
const ks_wire_names ks_wire_statuses = {status_names, COUNT(status_names)};
const ks_wire_names ks_wire_roles = {role_names, COUNT(role_names)};
const ks_wire_names ks_wire_dists = {dist_names, COUNT(dist_names)};

int ks_wire_name_index(const ks_wire_names *t, const char *name) {
  for (size_t i = 0; i < t->count; i++)
    if (name && t->names[i] && strcmp(t->names[i], name) == 0)
      return (int)i;
  return -1;
}

/* ---- encoding ------------------------------------------------------------ */

/* The attachments of the frame being encoded. */
typedef struct encoder {
  const void *data[KS_WIRE_MAX_ATTACHMENTS];
  size_t size[KS_WIRE_MAX_ATTACHMENTS];
  unsigned count;
} encoder;

static void put_u64(cJSON *o, const char *k, unsigned long long v) {
  char text[24];
  snprintf(text, sizeof text, "%llu", v);
  cJSON_AddStringToObject(o, k, text);
}

static void put_i64(cJSON *o, const char *k, long long v) {
  char text[24];
  snprintf(text, sizeof text, "%lld", v);
  cJSON_AddStringToObject(o, k, text);
}

/* The shortest decimal that reads back as exactly `v`: cJSON's own printer
 * accepts a nearby double, and a sample or a tolerance should arrive as
 * sent. */
static cJSON *double_item(double v) {
  if (isnan(v))
    return cJSON_CreateString("nan");
  if (isinf(v))
    return cJSON_CreateString(v > 0 ? "inf" : "-inf");
  char text[40];
  for (int precision = 15; precision <= 17; precision++) {
    snprintf(text, sizeof text, "%.*g", precision, v);
    if (strtod(text, NULL) == v)
      break;
  }
  return cJSON_CreateRaw(text);
}

static void put_double(cJSON *o, const char *k, double v) {
  cJSON_AddItemToObject(o, k, double_item(v));
}

static void put_string(cJSON *o, const char *k, const char *s) {
  if (s)
    cJSON_AddStringToObject(o, k, s);
  else
    cJSON_AddNullToObject(o, k);
}

/* Raw bytes as lowercase hex, two digits a byte. */
static cJSON *hex_item(const unsigned char *bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  char text[2 * KS_WIRE_MAX_ARG_BYTES + 1];
  for (size_t i = 0; i < size; i++) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 15];
  }
  text[2 * size] = '\0';
  return cJSON_CreateString(text);
}

static cJSON *dim3_item(const unsigned d[3]) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < 3; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(d[i]));
  return a;
}

static cJSON *launch_item(const ks_launch_cfg *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "grid", dim3_item(l->grid));
  cJSON_AddItemToObject(o, "block", dim3_item(l->block));
  put_u64(o, "smem", l->smem);
  return o;
}

/* A module: its function name and the index of the attachment holding its
 * cubin; NULL cubin is JSON null (no candidate). */
static int module_item(ks_ctx *ctx, encoder *enc, const ks_module *m, cJSON **out) {
  *out = NULL;
  if (!m->cubin) {
    *out = cJSON_CreateNull();
    return 0;
  }
  if (!m->function)
    return ks_fail(ctx, "worker protocol: a module without a function name");
  if (enc->count == KS_WIRE_MAX_ATTACHMENTS)
    return ks_fail(ctx, "worker protocol: more than %d attachments", KS_WIRE_MAX_ATTACHMENTS);
  if (m->size == 0 || m->size > KS_WIRE_MAX_ATTACHMENT)
    return ks_fail(ctx, "worker protocol: a %zu-byte cubin (the cap is %llu bytes)", m->size,
                   KS_WIRE_MAX_ATTACHMENT);
  enc->data[enc->count] = m->cubin;
  enc->size[enc->count] = m->size;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "function", m->function);
  cJSON_AddNumberToObject(o, "attachment", enc->count++);
  *out = o;
  return 0;
}

static int workload_item(ks_ctx *ctx, const ks_workload *w, cJSON **out) {
  cJSON *o = cJSON_CreateObject();
  *out = o;
  put_string(o, "size_name", w->size_name);
  cJSON_AddBoolToObject(o, "timed", w->timed);
  cJSON *bufs = cJSON_AddArrayToObject(o, "buffers");
  for (size_t i = 0; i < w->buffers.len; i++) {
    const ks_wbuffer *b = &w->buffers.items[i];
    if (!ks_wire_dtype_name(b->dtype) || b->dtype == KS_DT_NONE ||
        (size_t)b->role >= COUNT(role_names) || (size_t)b->dist >= COUNT(dist_names))
      return ks_fail(ctx, "worker protocol: buffer %zu (%s) has no element type, role or "
                          "distribution the worker knows", i, b->name ? b->name : "?");
    if (b->dist == KS_DIST_FILE && !b->file)
      return ks_fail(ctx, "worker protocol: buffer %zu (%s) is read from a file but names none",
                     i, b->name ? b->name : "?");
    cJSON *e = cJSON_CreateObject();
    put_string(e, "name", b->name);
    cJSON_AddStringToObject(e, "dtype", ks_wire_dtype_name(b->dtype));
    put_u64(e, "count", b->count);
    cJSON_AddStringToObject(e, "role", role_names[b->role]);
    cJSON_AddStringToObject(e, "dist", dist_names[b->dist]);
    put_double(e, "a", b->a);
    put_double(e, "b", b->b);
    put_double(e, "atol", b->atol);
    put_double(e, "rtol", b->rtol);
    if (b->file)
      cJSON_AddStringToObject(e, "file", b->file);
    if (b->file_offset)
      put_u64(e, "file_offset", b->file_offset);
    if (b->expect_file)
      cJSON_AddStringToObject(e, "expect_file", b->expect_file);
    if (b->expect_offset)
      put_u64(e, "expect_offset", b->expect_offset);
    cJSON_AddItemToArray(bufs, e);
  }
  cJSON *args = cJSON_AddArrayToObject(o, "args");
  for (size_t i = 0; i < w->args.len; i++) {
    const ks_warg *a = &w->args.items[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToArray(args, e); /* owned by the tree from here, whatever fails */
    if (a->kind == KS_ARG_BUFFER) {
      if (a->buffer >= w->buffers.len)
        return ks_fail(ctx, "worker protocol: argument %zu names buffer %zu of %zu", i, a->buffer,
                       w->buffers.len);
      cJSON_AddNumberToObject(e, "buffer", (double)a->buffer);
      if (a->offset)
        put_u64(e, "offset", a->offset);
      if (a->length_set)
        put_u64(e, "length", a->length);
      if (a->length_unknown)
        cJSON_AddBoolToObject(e, "length_unknown", true);
    } else if (a->kind == KS_ARG_BYTES) {
      if (!a->bytes || a->size == 0 || a->size > KS_WIRE_MAX_ARG_BYTES)
        return ks_fail(ctx, "worker protocol: argument %zu passes %zu raw bytes (1 to %d)", i,
                       a->size, KS_WIRE_MAX_ARG_BYTES);
      cJSON_AddItemToObject(e, "bytes", hex_item(a->bytes, a->size));
      if (a->ref_same)
        cJSON_AddBoolToObject(e, "ref_same", true);
    } else {
      if (!ks_wire_dtype_name(a->dtype) || a->dtype == KS_DT_NONE)
        return ks_fail(ctx, "worker protocol: scalar argument %zu has no type", i);
      cJSON_AddStringToObject(e, "dtype", ks_wire_dtype_name(a->dtype));
      if (a->value.is_int)
        put_i64(e, "int", a->value.i);
      else
        put_double(e, "float", a->value.f);
    }
  }
  cJSON_AddItemToObject(o, "launch", launch_item(&w->launch));
  put_u64(o, "bytes_min", w->bytes_min);
  put_double(o, "flops", w->flops);
  if (w->captured)
    cJSON_AddBoolToObject(o, "captured", true);
  return 0;
}

static cJSON *timing_options_item(const ks_timing_options *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "min_samples", t->min_samples);
  cJSON_AddNumberToObject(o, "max_samples", t->max_samples);
  put_double(o, "target_rsd", t->target_rsd);
  put_double(o, "max_seconds", t->max_seconds);
  cJSON_AddNumberToObject(o, "warmup", t->warmup);
  put_u64(o, "flush_bytes", t->flush_bytes);
  put_double(o, "min_clock_fraction", t->min_clock_fraction);
  if (t->warm)
    cJSON_AddBoolToObject(o, "warm", true);
  return o;
}

static int run_item(ks_ctx *ctx, encoder *enc, const ks_run_request *r, cJSON *o) {
  cJSON *item;
  if (!r->base.cubin)
    return ks_fail(ctx, "worker protocol: a run request without the original's cubin");
  if (!r->work)
    return ks_fail(ctx, "worker protocol: a run request without a workload");
  if (module_item(ctx, enc, &r->base, &item))
    return -1;
  cJSON_AddItemToObject(o, "base", item);
  if (module_item(ctx, enc, &r->cand, &item))
    return -1;
  cJSON_AddItemToObject(o, "cand", item);
  if (module_item(ctx, enc, &r->ref, &item))
    return -1;
  cJSON_AddItemToObject(o, "ref", item);
  int rc = workload_item(ctx, r->work, &item);
  cJSON_AddItemToObject(o, "work", item);
  if (rc)
    return -1;
  cJSON_AddItemToObject(o, "cand_launch", launch_item(&r->cand_launch));
  cJSON *seeds = cJSON_AddArrayToObject(o, "seeds");
  for (size_t i = 0; i < r->nseeds; i++) {
    char text[24];
    snprintf(text, sizeof text, "%llu", r->seeds[i]);
    cJSON_AddItemToArray(seeds, cJSON_CreateString(text));
  }
  cJSON_AddBoolToObject(o, "verify", r->verify);
  cJSON_AddBoolToObject(o, "time", r->time);
  if (r->replay)
    cJSON_AddBoolToObject(o, "replay", true);
  put_u64(o, "recheck_seed", r->recheck_seed);
  if (r->no_recheck)
    cJSON_AddBoolToObject(o, "no_recheck", true);
  cJSON_AddItemToObject(o, "timing", timing_options_item(&r->timing));
  return 0;
}

/* An output's accuracy against the fp64 reference; null without one. */
static cJSON *ref_item(const ks_output_check *c) {
  if (!c->has_ref)
    return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  put_double(o, "base_max_abs", c->ref_base_max_abs);
  put_double(o, "base_max_rel", c->ref_base_max_rel);
  put_double(o, "cand_max_abs", c->ref_cand_max_abs);
  put_double(o, "cand_max_rel", c->ref_cand_max_rel);
  put_u64(o, "mismatches", c->ref_mismatches);
  put_i64(o, "first_mismatch", c->ref_first_mismatch);
  if (c->ref_excused)
    put_u64(o, "excused", c->ref_excused);
  put_double(o, "value", c->ref_value);
  put_double(o, "got", c->ref_got);
  put_double(o, "base", c->ref_base);
  return o;
}

/* An output against its capture, in a replay. */
static cJSON *capture_item(const ks_output_check *c) {
  cJSON *o = cJSON_CreateObject();
  put_u64(o, "bit_diffs", c->capture_bit_diffs);
  put_u64(o, "mismatches", c->capture_mismatches);
  put_i64(o, "first_diff", c->capture_first_diff);
  put_double(o, "expected", c->capture_expected);
  put_double(o, "got", c->capture_got);
  return o;
}

static cJSON *outputs_item(const ks_output_checks *checks) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < checks->len; i++) {
    const ks_output_check *c = &checks->items[i];
    cJSON *e = cJSON_CreateObject();
    put_string(e, "buffer", c->buffer);
    put_u64(e, "count", c->count);
    put_u64(e, "mismatches", c->mismatches);
    put_u64(e, "unwritten", c->unwritten);
    put_double(e, "max_abs_error", c->max_abs_error);
    put_double(e, "max_rel_error", c->max_rel_error);
    put_i64(e, "first_mismatch", c->first_mismatch);
    put_double(e, "expected", c->expected);
    put_double(e, "got", c->got);
    cJSON_AddItemToObject(e, "ref", ref_item(c));
    if (c->has_capture)
      cJSON_AddItemToObject(e, "capture", capture_item(c));
    cJSON_AddItemToArray(a, e);
  }
  return a;
}

static cJSON *samples_item(const ks_samples *s) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < s->len; i++)
    cJSON_AddItemToArray(a, double_item(s->items[i]));
  return a;
}

static void result_item(const ks_run_result *r, cJSON *o) {
  cJSON_AddStringToObject(o, "status", ks_wire_status_name(r->status));
  put_string(o, "error", r->error);
  put_string(o, "error_kernel", r->error_kernel);
  cJSON *seeds = cJSON_AddArrayToObject(o, "seeds");
  for (size_t i = 0; i < r->seeds.len; i++) {
    const ks_seed_check *s = &r->seeds.items[i];
    cJSON *e = cJSON_CreateObject();
    put_u64(e, "seed", s->seed);
    cJSON_AddItemToObject(e, "outputs", outputs_item(&s->outputs));
    cJSON_AddBoolToObject(e, "race", s->race);
    put_string(e, "race_buffer", s->race_buffer);
    cJSON_AddBoolToObject(e, "base_nondeterministic", s->base_nondeterministic);
    put_string(e, "canary_buffer", s->canary_buffer);
    cJSON_AddBoolToObject(e, "canary_before", s->canary_before);
    put_string(e, "base_canary_buffer", s->base_canary_buffer);
    cJSON_AddBoolToObject(e, "base_canary_before", s->base_canary_before);
    put_string(e, "changed_input", s->changed_input);
    cJSON_AddItemToArray(seeds, e);
  }
  cJSON_AddBoolToObject(o, "timed", r->timed);
  cJSON *t = cJSON_AddObjectToObject(o, "timing");
  cJSON_AddItemToObject(t, "base_ms", samples_item(&r->timing.base_ms));
  cJSON_AddItemToObject(t, "cand_ms", samples_item(&r->timing.cand_ms));
  cJSON_AddNumberToObject(t, "dropped_low_clock", r->timing.dropped_low_clock);
  put_double(t, "sm_clock_min_mhz", r->timing.sm_clock_min_mhz);
  put_double(t, "sm_clock_max_mhz", r->timing.sm_clock_max_mhz);
  put_double(t, "seconds", r->timing.seconds);
  cJSON_AddItemToObject(t, "recheck", outputs_item(&r->timing.recheck));
  cJSON_AddNumberToObject(o, "base_registers", r->base_registers);
  cJSON_AddNumberToObject(o, "cand_registers", r->cand_registers);
  cJSON_AddNumberToObject(o, "base_spill_bytes", r->base_spill_bytes);
  cJSON_AddNumberToObject(o, "cand_spill_bytes", r->cand_spill_bytes);
  cJSON_AddNumberToObject(o, "base_static_smem", r->base_static_smem);
  cJSON_AddNumberToObject(o, "cand_static_smem", r->cand_static_smem);
}

static void device_item(const ks_device_info *d, cJSON *o) {
  cJSON_AddStringToObject(o, "name", d->name);
  cJSON_AddNumberToObject(o, "cc_major", d->cc_major);
  cJSON_AddNumberToObject(o, "cc_minor", d->cc_minor);
  cJSON_AddNumberToObject(o, "sm_count", d->sm_count);
  put_u64(o, "memory_bytes", d->memory_bytes);
  put_u64(o, "l2_bytes", d->l2_bytes);
  cJSON_AddNumberToObject(o, "driver_version", d->driver_version);
  cJSON_AddStringToObject(o, "driver", d->driver);
  cJSON_AddStringToObject(o, "pci_bus_id", d->pci_bus_id);
  cJSON_AddStringToObject(o, "uuid", d->uuid);
  put_double(o, "peak_bandwidth", d->peak_bandwidth);
  cJSON_AddNumberToObject(o, "sm_clock_max_mhz", d->sm_clock_max_mhz);
}

static int body_item(ks_ctx *ctx, encoder *enc, const ks_wire_msg *m, cJSON *o) {
  cJSON *item;
  switch (m->type) {
  case KS_WIRE_HELLO:
  case KS_WIRE_EXIT:
    return 0;
  case KS_WIRE_HELLO_REPLY:
    device_item(&m->device, cJSON_AddObjectToObject(o, "device"));
    return 0;
  case KS_WIRE_RUN:
    return run_item(ctx, enc, &m->run, o);
  case KS_WIRE_RUN_REPLY:
    result_item(&m->result, o);
    return 0;
  case KS_WIRE_CEILINGS:
    if (!m->copy.cubin || !m->fma.cubin)
      return ks_fail(ctx, "worker protocol: a ceilings request needs both kernels");
    if (module_item(ctx, enc, &m->copy, &item))
      return -1;
    cJSON_AddItemToObject(o, "copy", item);
    if (module_item(ctx, enc, &m->fma, &item))
      return -1;
    cJSON_AddItemToObject(o, "fma", item);
    cJSON_AddNumberToObject(o, "fma_flops_per_iter", m->fma_flops_per_iter);
    return 0;
  case KS_WIRE_CEILINGS_REPLY:
    put_double(o, "bandwidth", m->ceilings.bandwidth);
    put_double(o, "flops_fp32", m->ceilings.flops_fp32);
    return 0;
  case KS_WIRE_ERROR:
    cJSON_AddStringToObject(o, "message", m->error ? m->error : "unknown error");
    cJSON_AddBoolToObject(o, "no_device", m->no_device);
    return 0;
  }
  return ks_fail(ctx, "worker protocol: unknown message type %d", (int)m->type);
}

int ks_wire_encode(ks_ctx *ctx, const ks_wire_msg *msg, ks_buf *out) {
  encoder enc = {0};
  int rc = -1;
  char *json = NULL;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "type", ks_wire_type_name(msg->type));
  if (body_item(ctx, &enc, msg, root))
    goto out;
  json = cJSON_PrintUnformatted(root);
  if (!json) {
    rc = ks_fail(ctx, "worker protocol: cannot print the %s message", ks_wire_type_name(msg->type));
    goto out;
  }
  rc = ks_wire_frame_build(ctx, json, strlen(json), enc.data, enc.size, enc.count, out);
out:
  cJSON_free(json);
  cJSON_Delete(root);
  return rc;
}
