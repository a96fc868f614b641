/* wire_decode: frames back into ks_wire_msg (docs/worker-protocol.md).
 *
 * Every field is checked for presence and type; the first problem found is
 * the message, prefixed with the message type ("run_reply: worker protocol:
 * missing field 'seeds'"): a decoder that guessed would turn a protocol bug
 * into a wrong verdict. Strings, arrays, the workload and copies of the
 * cubins go into the caller's arena; nothing points into the frame.
 *
 * 64-bit integers arrive as decimal strings, doubles as numbers or "nan",
 * "inf", "-inf" (see wire.c). The fields wire.c leaves out at their
 * defaults (opt_*) are the only ones that may be missing. */
#include "ks_wire.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_internal.h"

/* Decoding state. The getters record the first problem (with ks_fail) and
 * return a harmless default, so that a decoder reads as a list of fields
 * and checks once at the end. */
typedef struct decoder {
  ks_ctx *ctx;
  ks_arena *arena;
  const ks_wire_frame *frame;
  bool failed;
} decoder;

__attribute__((format(printf, 2, 3))) static void bad(decoder *d, const char *fmt, ...) {
  if (d->failed)
    return;
  d->failed = true;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ks_fail(d->ctx, "worker protocol: %s", text);
}

static const cJSON *field(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
  if (!v)
    bad(d, "missing field '%s'", k);
  return v;
}

static const cJSON *get_object(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  if (v && !cJSON_IsObject(v))
    bad(d, "field '%s' is not an object", k);
  return v;
}

static const cJSON *get_array(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  if (v && !cJSON_IsArray(v))
    bad(d, "field '%s' is not an array", k);
  return v;
}

static bool get_bool(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  if (v && !cJSON_IsBool(v))
    bad(d, "field '%s' is not true or false", k);
  return v && cJSON_IsTrue(v);
}

static double item_double(decoder *d, const cJSON *v, const char *k) {
  if (cJSON_IsNumber(v))
    return v->valuedouble;
  if (cJSON_IsString(v)) {
    if (strcmp(v->valuestring, "nan") == 0)
      return NAN;
    if (strcmp(v->valuestring, "inf") == 0)
      return INFINITY;
    if (strcmp(v->valuestring, "-inf") == 0)
      return -INFINITY;
  }
  bad(d, "field '%s' is not a number", k);
  return 0;
}

static double get_double(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  return v ? item_double(d, v, k) : 0;
}

/* An int-valued JSON number within [lo, hi]. */
static long long get_int(decoder *d, const cJSON *o, const char *k, long long lo, long long hi) {
  const cJSON *v = field(d, o, k);
  if (!v)
    return 0;
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!(x >= (double)lo && x <= (double)hi) || x != floor(x)) {
    bad(d, "field '%s' is not an integer in [%lld, %lld]", k, lo, hi);
    return 0;
  }
  return (long long)x;
}

static unsigned long long item_u64(decoder *d, const cJSON *v, const char *k) {
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  char *end = NULL;
  errno = 0;
  unsigned long long x = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
  if (!s || !end || *end || errno) {
    bad(d, "field '%s' is not an unsigned 64-bit integer in a string", k);
    return 0;
  }
  return x;
}

static unsigned long long get_u64(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  return v ? item_u64(d, v, k) : 0;
}

static long long get_i64(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  const char *s = v && cJSON_IsString(v) ? v->valuestring : NULL;
  char *end = NULL;
  errno = 0;
  long long x = s && *s ? strtoll(s, &end, 10) : 0;
  if (v && (!s || !end || *end || errno))
    bad(d, "field '%s' is not a 64-bit integer in a string", k);
  return x;
}

/* A string copied into the arena; NULL for JSON null when `nullable`. */
static const char *get_string(decoder *d, const cJSON *o, const char *k, bool nullable) {
  const cJSON *v = field(d, o, k);
  if (!v || (nullable && cJSON_IsNull(v)))
    return NULL;
  if (!cJSON_IsString(v)) {
    bad(d, "field '%s' is not a string", k);
    return NULL;
  }
  return ks_arena_strdup(d->arena, v->valuestring);
}

/* Optional fields: absent is the default; present, checked as above. */
static bool has(const cJSON *o, const char *k) {
  return cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, k) != NULL;
}

static unsigned long long opt_u64(decoder *d, const cJSON *o, const char *k) {
  return has(o, k) ? get_u64(d, o, k) : 0;
}

static bool opt_bool(decoder *d, const cJSON *o, const char *k) {
  return has(o, k) && get_bool(d, o, k);
}

static const char *opt_string(decoder *d, const cJSON *o, const char *k) {
  return has(o, k) ? get_string(d, o, k, false) : NULL;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A raw-bytes argument from its hex string, into the arena. */
static void get_hex(decoder *d, const cJSON *o, const char *k, ks_warg *a) {
  const cJSON *v = field(d, o, k);
  const char *s = v && cJSON_IsString(v) ? v->valuestring : NULL;
  size_t n = s ? strlen(s) : 0;
  if (v && (!s || n == 0 || n % 2)) {
    bad(d, "field '%s' is not a non-empty string of hex digit pairs", k);
    return;
  }
  if (n / 2 > KS_WIRE_MAX_ARG_BYTES) {
    bad(d, "field '%s' holds %zu bytes, over the cap of %d for an argument", k, n / 2,
        KS_WIRE_MAX_ARG_BYTES);
    return;
  }
  unsigned char *bytes = ks_arena_alloc(d->arena, n / 2 + 1);
  for (size_t i = 0; s && i < n / 2; i++) {
    int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      bad(d, "field '%s' is not a non-empty string of hex digit pairs", k);
      return;
    }
    bytes[i] = (unsigned char)(hi << 4 | lo);
  }
  a->bytes = bytes;
  a->size = n / 2;
}

/* A fixed-size string field of a struct. */
static void get_chars(decoder *d, const cJSON *o, const char *k, char *out, size_t size) {
  const char *s = get_string(d, o, k, false);
  if (s && strlen(s) >= size)
    bad(d, "field '%s' is longer than %zu bytes", k, size - 1);
  else if (s)
    memcpy(out, s, strlen(s) + 1);
}

static int get_enum(decoder *d, const cJSON *o, const char *k, const ks_wire_names *names) {
  const cJSON *v = field(d, o, k);
  int i = v && cJSON_IsString(v) ? ks_wire_name_index(names, v->valuestring) : -1;
  if (v && i < 0)
    bad(d, "field '%s' has an unknown value", k);
  return i < 0 ? 0 : i;
}

static ks_dtype get_dtype(decoder *d, const cJSON *o, const char *k) {
  const cJSON *v = field(d, o, k);
  ks_dtype t = KS_DT_NONE;
  if (v && (!cJSON_IsString(v) || !ks_wire_dtype_parse(v->valuestring, &t) || t == KS_DT_NONE))
    bad(d, "field '%s' is not an element type", k);
  return t;
}

static void get_dim3(decoder *d, const cJSON *o, const char *k, unsigned out[3]) {
  const cJSON *a = get_array(d, o, k);
  if (a && cJSON_GetArraySize(a) != 3) {
    bad(d, "field '%s' does not have 3 elements", k);
    return;
  }
  for (int i = 0; a && i < 3 && !d->failed; i++) {
    const cJSON *v = cJSON_GetArrayItem(a, i);
    double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(x >= 0 && x <= 4294967295.0) || x != floor(x))
      bad(d, "field '%s' has a dimension that is not a 32-bit count", k);
    else
      out[i] = (unsigned)x;
  }
}

static void get_launch(decoder *d, const cJSON *o, const char *k, ks_launch_cfg *out) {
  const cJSON *l = get_object(d, o, k);
  get_dim3(d, l, "grid", out->grid);
  get_dim3(d, l, "block", out->block);
  out->smem = get_u64(d, l, "smem");
}

/* A module from {"function", "attachment"}: the cubin is copied out of the
 * frame into the arena. JSON null leaves it empty when `nullable`. */
static void get_module(decoder *d, const cJSON *o, const char *k, bool nullable, ks_module *out) {
  memset(out, 0, sizeof *out);
  const cJSON *v = field(d, o, k);
  if (!v || (nullable && cJSON_IsNull(v)))
    return;
  out->function = get_string(d, v, "function", false);
  long long i = get_int(d, v, "attachment", 0, KS_WIRE_MAX_ATTACHMENTS - 1);
  if (d->failed)
    return;
  if ((unsigned)i >= d->frame->nattach) {
    bad(d, "'%s' names attachment %lld of %u", k, i, d->frame->nattach);
    return;
  }
  void *copy = ks_arena_alloc(d->arena, d->frame->attach_size[i]);
  memcpy(copy, d->frame->attach[i], d->frame->attach_size[i]);
  out->cubin = copy;
  out->size = d->frame->attach_size[i];
}

static void get_workload(decoder *d, const cJSON *o, ks_workload *w) {
  const cJSON *v = field(d, o, "size_name");
  w->size_name = v && !cJSON_IsNull(v) ? get_string(d, o, "size_name", false) : NULL;
  w->timed = get_bool(d, o, "timed");
  const cJSON *bufs = get_array(d, o, "buffers"), *e;
  cJSON_ArrayForEach(e, bufs) {
    if (d->failed)
      return;
    ks_wbuffer *b = ks_array_push(d->arena, &w->buffers);
    b->name = get_string(d, e, "name", true);
    b->dtype = get_dtype(d, e, "dtype");
    b->count = get_u64(d, e, "count");
    b->role = (ks_role)get_enum(d, e, "role", &ks_wire_roles);
    b->dist = (ks_dist_kind)get_enum(d, e, "dist", &ks_wire_dists);
    b->a = get_double(d, e, "a");
    b->b = get_double(d, e, "b");
    b->atol = get_double(d, e, "atol");
    b->rtol = get_double(d, e, "rtol");
    b->file = opt_string(d, e, "file");
    b->file_offset = opt_u64(d, e, "file_offset");
    b->expect_file = opt_string(d, e, "expect_file");
    b->expect_offset = opt_u64(d, e, "expect_offset");
    if (b->dist == KS_DIST_FILE && !b->file)
      bad(d, "buffer '%s' is read from a file but names none", b->name ? b->name : "?");
  }
  const cJSON *args = get_array(d, o, "args");
  cJSON_ArrayForEach(e, args) {
    if (d->failed)
      return;
    ks_warg *a = ks_array_push(d->arena, &w->args);
    if (cJSON_GetObjectItemCaseSensitive(e, "buffer")) {
      a->kind = KS_ARG_BUFFER;
      a->buffer = (size_t)get_int(d, e, "buffer", 0, (long long)w->buffers.len - 1);
      a->offset = opt_u64(d, e, "offset");
      a->length_set = has(e, "length");
      a->length = opt_u64(d, e, "length");
      a->length_unknown = opt_bool(d, e, "length_unknown");
      continue;
    }
    if (has(e, "bytes")) {
      a->kind = KS_ARG_BYTES;
      get_hex(d, e, "bytes", a);
      a->ref_same = opt_bool(d, e, "ref_same");
      continue;
    }
    a->kind = KS_ARG_SCALAR;
    a->dtype = get_dtype(d, e, "dtype");
    a->value.is_int = cJSON_GetObjectItemCaseSensitive(e, "int") != NULL;
    if (a->value.is_int)
      a->value.i = get_i64(d, e, "int");
    else
      a->value.f = get_double(d, e, "float");
  }
  get_launch(d, o, "launch", &w->launch);
  w->bytes_min = get_u64(d, o, "bytes_min");
  w->flops = get_double(d, o, "flops");
  w->captured = opt_bool(d, o, "captured");
}

static void get_run(decoder *d, const cJSON *o, ks_run_request *r) {
  get_module(d, o, "base", false, &r->base);
  get_module(d, o, "cand", true, &r->cand);
  get_module(d, o, "ref", true, &r->ref);
  ks_workload *w = ks_arena_alloc(d->arena, sizeof *w);
  get_workload(d, get_object(d, o, "work"), w);
  r->work = w;
  get_launch(d, o, "cand_launch", &r->cand_launch);
  const cJSON *seeds = get_array(d, o, "seeds"), *e;
  int n = seeds ? cJSON_GetArraySize(seeds) : 0;
  unsigned long long *s = ks_arena_alloc(d->arena, (size_t)(n ? n : 1) * sizeof *s);
  r->nseeds = 0;
  cJSON_ArrayForEach(e, seeds) s[r->nseeds++] = item_u64(d, e, "seeds");
  r->seeds = s;
  r->verify = get_bool(d, o, "verify");
  r->time = get_bool(d, o, "time");
  r->replay = opt_bool(d, o, "replay");
  r->recheck_seed = get_u64(d, o, "recheck_seed");
  r->no_recheck = opt_bool(d, o, "no_recheck");
  const cJSON *t = get_object(d, o, "timing");
  r->timing.min_samples = (unsigned)get_int(d, t, "min_samples", 0, UINT32_MAX);
  r->timing.max_samples = (unsigned)get_int(d, t, "max_samples", 0, UINT32_MAX);
  r->timing.target_rsd = get_double(d, t, "target_rsd");
  r->timing.max_seconds = get_double(d, t, "max_seconds");
  r->timing.warmup = (unsigned)get_int(d, t, "warmup", 0, UINT32_MAX);
  r->timing.flush_bytes = get_u64(d, t, "flush_bytes");
  r->timing.min_clock_fraction = get_double(d, t, "min_clock_fraction");
  r->timing.warm = t && opt_bool(d, t, "warm");
}

/* An output's "ref": null, or its accuracy against the fp64 reference. */
static void get_ref(decoder *d, const cJSON *e, ks_output_check *c) {
  c->ref_first_mismatch = -1;
  const cJSON *r = field(d, e, "ref");
  if (!r || cJSON_IsNull(r))
    return;
  if (!cJSON_IsObject(r)) {
    bad(d, "field 'ref' is not an object or null");
    return;
  }
  c->has_ref = true;
  c->ref_base_max_abs = get_double(d, r, "base_max_abs");
  c->ref_base_max_rel = get_double(d, r, "base_max_rel");
  c->ref_cand_max_abs = get_double(d, r, "cand_max_abs");
  c->ref_cand_max_rel = get_double(d, r, "cand_max_rel");
  c->ref_mismatches = get_u64(d, r, "mismatches");
  c->ref_first_mismatch = get_i64(d, r, "first_mismatch");
  c->ref_excused = opt_u64(d, r, "excused");
  c->ref_value = get_double(d, r, "value");
  c->ref_got = get_double(d, r, "got");
  c->ref_base = get_double(d, r, "base");
}

/* An output's "capture", present only in a replay's results. */
static void get_capture(decoder *d, const cJSON *e, ks_output_check *c) {
  c->capture_first_diff = -1;
  if (!has(e, "capture"))
    return;
  const cJSON *r = get_object(d, e, "capture");
  if (d->failed)
    return;
  c->has_capture = true;
  c->capture_bit_diffs = get_u64(d, r, "bit_diffs");
  c->capture_mismatches = get_u64(d, r, "mismatches");
  c->capture_first_diff = get_i64(d, r, "first_diff");
  c->capture_expected = get_double(d, r, "expected");
  c->capture_got = get_double(d, r, "got");
}

static void get_outputs(decoder *d, const cJSON *o, const char *k, ks_output_checks *out) {
  const cJSON *a = get_array(d, o, k), *e;
  cJSON_ArrayForEach(e, a) {
    if (d->failed)
      return;
    ks_output_check *c = ks_array_push(d->arena, out);
    c->buffer = get_string(d, e, "buffer", true);
    c->count = get_u64(d, e, "count");
    c->mismatches = get_u64(d, e, "mismatches");
    c->unwritten = get_u64(d, e, "unwritten");
    c->max_abs_error = get_double(d, e, "max_abs_error");
    c->max_rel_error = get_double(d, e, "max_rel_error");
    c->first_mismatch = get_i64(d, e, "first_mismatch");
    c->expected = get_double(d, e, "expected");
    c->got = get_double(d, e, "got");
    get_ref(d, e, c);
    get_capture(d, e, c);
  }
}

static void get_samples(decoder *d, const cJSON *o, const char *k, ks_samples *out) {
  const cJSON *a = get_array(d, o, k), *e;
  cJSON_ArrayForEach(e, a) *ks_array_push(d->arena, out) = item_double(d, e, k);
}

static void get_result(decoder *d, const cJSON *o, ks_run_result *r) {
  r->status = (ks_run_status)get_enum(d, o, "status", &ks_wire_statuses);
  r->error = get_string(d, o, "error", true);
  r->error_kernel = get_string(d, o, "error_kernel", true);
  const cJSON *seeds = get_array(d, o, "seeds"), *e;
  cJSON_ArrayForEach(e, seeds) {
    if (d->failed)
      return;
    ks_seed_check *s = ks_array_push(d->arena, &r->seeds);
    s->seed = get_u64(d, e, "seed");
    get_outputs(d, e, "outputs", &s->outputs);
    s->race = get_bool(d, e, "race");
    s->race_buffer = get_string(d, e, "race_buffer", true);
    s->base_nondeterministic = get_bool(d, e, "base_nondeterministic");
    s->canary_buffer = get_string(d, e, "canary_buffer", true);
    s->canary_before = get_bool(d, e, "canary_before");
    s->base_canary_buffer = get_string(d, e, "base_canary_buffer", true);
    s->base_canary_before = get_bool(d, e, "base_canary_before");
    s->changed_input = get_string(d, e, "changed_input", true);
  }
  r->timed = get_bool(d, o, "timed");
  const cJSON *t = get_object(d, o, "timing");
  get_samples(d, t, "base_ms", &r->timing.base_ms);
  get_samples(d, t, "cand_ms", &r->timing.cand_ms);
  r->timing.dropped_low_clock = (unsigned)get_int(d, t, "dropped_low_clock", 0, UINT32_MAX);
  r->timing.sm_clock_min_mhz = get_double(d, t, "sm_clock_min_mhz");
  r->timing.sm_clock_max_mhz = get_double(d, t, "sm_clock_max_mhz");
  r->timing.seconds = get_double(d, t, "seconds");
  get_outputs(d, t, "recheck", &r->timing.recheck);
  r->base_registers = (int)get_int(d, o, "base_registers", INT32_MIN, INT32_MAX);
  r->cand_registers = (int)get_int(d, o, "cand_registers", INT32_MIN, INT32_MAX);
  r->base_spill_bytes = (int)get_int(d, o, "base_spill_bytes", INT32_MIN, INT32_MAX);
  r->cand_spill_bytes = (int)get_int(d, o, "cand_spill_bytes", INT32_MIN, INT32_MAX);
  r->base_static_smem = (int)get_int(d, o, "base_static_smem", INT32_MIN, INT32_MAX);
  r->cand_static_smem = (int)get_int(d, o, "cand_static_smem", INT32_MIN, INT32_MAX);
}

static void get_device(decoder *d, const cJSON *o, ks_device_info *out) {
  get_chars(d, o, "name", out->name, sizeof out->name);
  out->cc_major = (int)get_int(d, o, "cc_major", 0, 1000);
  out->cc_minor = (int)get_int(d, o, "cc_minor", 0, 1000);
  out->sm_count = (int)get_int(d, o, "sm_count", 0, INT32_MAX);
  out->memory_bytes = get_u64(d, o, "memory_bytes");
  out->l2_bytes = get_u64(d, o, "l2_bytes");
  out->driver_version = (int)get_int(d, o, "driver_version", 0, INT32_MAX);
  get_chars(d, o, "driver", out->driver, sizeof out->driver);
  get_chars(d, o, "pci_bus_id", out->pci_bus_id, sizeof out->pci_bus_id);
  get_chars(d, o, "uuid", out->uuid, sizeof out->uuid);
  out->peak_bandwidth = get_double(d, o, "peak_bandwidth");
  out->sm_clock_max_mhz = (int)get_int(d, o, "sm_clock_max_mhz", 0, INT32_MAX);
}

static void get_body(decoder *d, const cJSON *root, ks_wire_msg *m) {
  switch (m->type) {
  case KS_WIRE_HELLO:
  case KS_WIRE_EXIT:
    return;
  case KS_WIRE_HELLO_REPLY:
    get_device(d, get_object(d, root, "device"), &m->device);
    return;
  case KS_WIRE_RUN:
    get_run(d, root, &m->run);
    return;
  case KS_WIRE_RUN_REPLY:
    get_result(d, root, &m->result);
    return;
  case KS_WIRE_CEILINGS:
    get_module(d, root, "copy", false, &m->copy);
    get_module(d, root, "fma", false, &m->fma);
    m->fma_flops_per_iter = (int)get_int(d, root, "fma_flops_per_iter", 1, 1 << 20);
    return;
  case KS_WIRE_CEILINGS_REPLY:
    m->ceilings.bandwidth = get_double(d, root, "bandwidth");
    m->ceilings.flops_fp32 = get_double(d, root, "flops_fp32");
    return;
  case KS_WIRE_ERROR:
    m->error = get_string(d, root, "message", false);
    m->no_device = get_bool(d, root, "no_device");
    return;
  }
}

int ks_wire_decode(ks_ctx *ctx, const void *frame, size_t len, ks_arena *arena,
                   ks_wire_msg *out) {
  memset(out, 0, sizeof *out);
  ks_wire_frame f;
  if (ks_wire_frame_parse(ctx, frame, len, &f))
    return -1;
  cJSON *root = cJSON_ParseWithLength(f.json, f.json_len);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ks_fail(ctx, "worker protocol: the frame's JSON does not parse as an object");
  }
  decoder d = {ctx, arena, &f, false};
  out->type = (ks_wire_type)get_enum(&d, root, "type", &ks_wire_types);
  if (d.failed) {
    cJSON_Delete(root);
    return -1;
  }
  get_body(&d, root, out);
  cJSON_Delete(root);
  if (d.failed) {
    /* "run_reply: worker protocol: missing field 'seeds'" */
    ks_fail_prefix(ctx, ks_wire_type_name(out->type));
    return -1;
  }
  return 0;
}
