/* A spec drafted from captured launches (ks_target.h, ks_capture_spec_text):
 * what `spec --from-capture` prints for the user to paste above a kernel.
 *
 * A capture verifies a variant on the launches the application made; a
 * spec verifies it on fresh random inputs at every size set. The draft is
 * the shortest way from one to the other:
 *   - size variables: the scalars the inferred lengths use, with the timed
 *     size as captured and smaller and odd sizes beside it;
 *   - the other scalars as captured;
 *   - buffers with their roles and lengths, and distributions read off the
 *     captured data: the range of floats, the range of integers, sorted
 *     integers from first to last (CSR offsets), permutations, constants.
 * What the capture cannot tell (an unknown length; whether an inout buffer
 * is really read) is said in a comment on the line. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_target.h"

/* Element i of a buffer as a double, for the types a spec fills. */
static double elem(ks_dtype t, const unsigned char *p, size_t i) {
  switch (t) {
  case KS_DT_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
  case KS_DT_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  case KS_DT_I8: return (signed char)p[i];
  case KS_DT_U8: return p[i];
  case KS_DT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case KS_DT_U16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case KS_DT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case KS_DT_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case KS_DT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  case KS_DT_U64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  default: return 0;
  }
}

/* The distribution that describes n captured elements, as spec text. */
static const char *distribution(ks_arena *a, ks_dtype t, const unsigned char *p, size_t n) {
  if (!n || t == KS_DT_NONE || t == KS_DT_F16 || t == KS_DT_BF16)
    return "";
  double lo = INFINITY, hi = -INFINITY, first = elem(t, p, 0), last = elem(t, p, n - 1);
  bool sorted = true, finite = true;
  for (size_t i = 0; i < n; i++) {
    double v = elem(t, p, i);
    if (!isfinite(v)) {
      finite = false;
      continue;
    }
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    if (i && v < elem(t, p, i - 1))
      sorted = false;
  }
  if (!finite || lo > hi)
    return " # holds values that are not finite: choose a distribution";
  if (lo == hi)
    return ks_arena_printf(a, " const(%.9g)", lo);
  if (!ks_dtype_is_float(t)) {
    /* a permutation of 0..n-1: every value once */
    if (lo == 0 && hi == (double)n - 1 && n <= (1u << 26)) {
      unsigned char *seen = calloc(n, 1);
      bool perm = seen != NULL;
      for (size_t i = 0; perm && i < n; i++) {
        size_t v = (size_t)elem(t, p, i);
        perm = !seen[v];
        seen[v] = 1;
      }
      free(seen);
      if (perm)
        return " permutation";
    }
    if (sorted && n > 2)
      return ks_arena_printf(a, " sorted_int(%.0f, %.0f)", first, last);
    return ks_arena_printf(a, " int(%.0f, %.0f)", lo, hi);
  }
  return ks_arena_printf(a, " uniform(%.6g, %.6g)", lo, hi);
}

static const ks_capture_param *launch_param(const ks_capture *cap, const ks_workload *w,
                                            const ks_kernel *k, size_t pi) {
  unsigned long long n = strtoull(w->size_name + strlen("capture"), NULL, 10);
  for (size_t i = 0; i < cap->launches.len; i++) {
    const ks_capture_launch *l = &cap->launches.items[i];
    if (l->launch == n && l->params.len == k->params.len && pi < l->params.len &&
        l->params.items[pi].kind == KS_CAPTURE_POINTER)
      return &l->params.items[pi];
  }
  return NULL;
}

/* The names `text` uses that are scalar parameters of k, into `vars`. */
static void scalars_used(ks_arena *a, const ks_kernel *k, const char *text, ks_strings *vars) {
  for (size_t i = 0; i < k->params.len; i++) {
    const char *name = k->params.items[i].name;
    if (!name[0] || k->params.items[i].kind == KS_PARAM_POINTER)
      continue;
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
      if ((p == text || !ks_ctext_is_ident_char(p[-1])) && !ks_ctext_is_ident_char(p[n])) {
        bool have = false;
        for (size_t v = 0; v < vars->len && !have; v++)
          have = !strcmp(vars->items[v], name);
        if (!have)
          *ks_array_push(a, vars) = name;
        break;
      }
  }
}

static long long scalar_of(const ks_kernel *k, const ks_workload *w, const char *name) {
  for (size_t i = 0; i < k->params.len && i < w->args.len; i++)
    if (!strcmp(k->params.items[i].name, name) && w->args.items[i].kind == KS_ARG_SCALAR)
      return w->args.items[i].value.is_int ? w->args.items[i].value.i
                                           : (long long)w->args.items[i].value.f;
  return 0;
}

int ks_capture_spec_text(ks_ctx *ctx, ks_capture *cap, const ks_scan *scan, const ks_kernel *k,
                         ks_arena *a, const char **out) {
  ks_target t;
  memset(&t, 0, sizeof t);
  t.scan = *scan;
  t.kernel = k;
  t.spec.atol = t.spec.rtol = -1;
  if (ks_target_add_captures(ctx, &t, cap, NULL, a))
    return -1;
  if (!t.ncaptured)
    return ks_fail(ctx, "%s holds no usable launch of %s", cap->path, k->qualified_name);
  const ks_workload *w = &t.workloads[0];
  for (size_t i = 0; i < t.nworkloads; i++)
    if (t.workloads[i].timed)
      w = &t.workloads[i];

  ks_strings vars = {0};
  for (size_t b = 0; b < t.spec.buffers.len; b++)
    if (t.spec.buffers.items[b].length)
      scalars_used(a, k, t.spec.buffers.items[b].length, &vars);

  ks_buf s = KS_BUF_INIT;
  ks_buf_addf(&s, "/* kernelsmith:\n");
  ks_buf_addf(&s, " *   # drafted from %s (%s); check it before trusting it\n", cap->path,
              w->size_name);
  if (t.capture_instance)
    ks_buf_addf(&s, " *   instance %s\n", t.capture_instance);
  /* Size sets: as captured, then smaller, odd and one-element ones that
   * break careless variants (every variable alike, so that products stay
   * small), each only when it differs from those before it. */
  static const struct {
    const char *name;
    long long one, many;
  } sets[] = {{"timed", 0, 0}, {"small", 1000, 64}, {"odd", 12345, 37}, {"one", 1, 1}};
  long long *values = ks_arena_alloc(a, (4 * vars.len + 1) * sizeof *values);
  for (int set = 0; set < 4; set++) {
    long long *mine = values + (size_t)set * vars.len;
    for (size_t v = 0; v < vars.len; v++) {
      long long captured = scalar_of(k, w, vars.items[v]);
      long long x = !set ? captured : vars.len == 1 ? sets[set].one : sets[set].many;
      if (x > captured) /* never above what the application ran */
        x = set == 2 && captured > 2 ? (captured * 3 / 4) | 1 : captured;
      mine[v] = x;
    }
    bool seen = false;
    for (int prev = 0; prev < set && !seen; prev++)
      seen = !memcmp(mine, values + (size_t)prev * vars.len, vars.len * sizeof *mine);
    if (set && (seen || !vars.len))
      continue;
    ks_buf_addf(&s, " *   size %s:", sets[set].name);
    if (!vars.len)
      ks_buf_adds(&s, " n = 1"); /* no length depends on a scalar */
    for (size_t v = 0; v < vars.len; v++)
      ks_buf_addf(&s, "%s %s = %lld", v ? "," : "", vars.items[v], mine[v]);
    ks_buf_adds(&s, set ? "\n" : "   # as captured\n");
  }
  /* the other scalars, as captured */
  for (size_t i = 0; i < k->params.len && i < w->args.len; i++) {
    const ks_warg *arg = &w->args.items[i];
    const char *name = k->params.items[i].name;
    bool is_var = false;
    for (size_t v = 0; v < vars.len && !is_var; v++)
      is_var = !strcmp(vars.items[v], name);
    if (arg->kind != KS_ARG_SCALAR || is_var || !name[0])
      continue;
    if (arg->value.is_int)
      ks_buf_addf(&s, " *   scalar %s = %lld\n", name, arg->value.i);
    else
      ks_buf_addf(&s, " *   scalar %s = %.9g\n", name, arg->value.f);
  }
  /* buffers, with what the captured data says about their values */
  for (size_t b = 0; b < t.spec.buffers.len; b++) {
    const ks_spec_buffer *sb = &t.spec.buffers.items[b];
    size_t pi = 0;
    while (pi < k->params.len && strcmp(k->params.items[pi].name, sb->param))
      pi++;
    const ks_capture_param *cp = launch_param(cap, w, k, pi);
    ks_dtype dt = sb->dtype;
    size_t es = dt != KS_DT_NONE ? ks_dtype_size(dt) : 1;
    unsigned long long reach = cp ? ks_capture_reach(cp) / es : 0;
    const char *length = sb->length;
    const char *note = "";
    if (!length) {
      length = ks_arena_printf(a, "%llu", reach);
      note = " # length unknown: the captured allocation's; write it over the scalars";
    }
    const char *dist = "";
    if (cp && sb->role != KS_ROLE_OUT) {
      unsigned char *bytes = NULL;
      size_t len = 0;
      unsigned long long n = 0;
      ks_ctx scratch;
      ks_ctx_init(&scratch, "capture");
      unsigned long long at = cp->ptr_offset - cp->span_lo; /* in the snapshot */
      if (!ks_capture_read_blob(&scratch, cap, cp->before, &bytes, &len) && at <= len) {
        /* the part the length covers, when it is known */
        n = (len - at) / es;
        const ks_warg *arg = &w->args.items[pi];
        unsigned long long known;
        if (ks_warg_length(w, arg, &known) && known < n)
          n = known;
        dist = distribution(a, dt, bytes + at, (size_t)n);
      }
      free(bytes);
      ks_ctx_release(&scratch);
    }
    const char *role = sb->role == KS_ROLE_IN ? "in   " : "inout";
    ks_buf_addf(&s, " *   %s %s", role, sb->param);
    if (dt == KS_DT_NONE)
      ks_buf_adds(&s, ": u8");
    ks_buf_addf(&s, "[%s]%s%s%s\n", length, dist, note,
                sb->role == KS_ROLE_IN || *note ? "" : "  # `out` if the kernel never reads it");
  }
  ks_buf_addf(&s, " */\n");
  *out = ks_arena_strdup(a, s.data);
  ks_buf_release(&s);
  return 0;
}
