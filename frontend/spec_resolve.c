/* spec_resolve: a parsed spec against its kernel (ks_spec_check), one size
 * set of it into plain numbers (ks_spec_resolve), and a variant's launch
 * policy and guards over such a workload (ks_variant_resolve).
 *
 * Types come from the kernel: a buffer's element type is its parameter's
 * pointee unless the spec says otherwise, a scalar's type is its
 * parameter's. Template kernels get their template arguments from the spec's
 * `instance` line or, when there is none, from their one instantiation at
 * the launch sites; the arguments are substituted into the parameter types
 * (const T * with T = float is a float buffer), and value arguments
 * (blockSize = 256) can be used by the spec's expressions.
 *
 * Resolution binds names in order, each expression seeing what came before:
 * template value arguments, the size set's variables, the scalars, then the
 * buffer lengths (as len_<param>); distributions and the launch come last. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_specs.h"
#include "spec_int.h"

/* Sizes beyond these are a spec mistake, not a workload: 2^40 elements is
 * terabytes. */
static const unsigned long long MAX_COUNT = 1ULL << 40;

/* ---- environment ------------------------------------------------------ */

static bool env_lookup(void *data, const char *name, size_t len, ks_value *out) {
  const ks_spec_env *env = data;
  for (size_t i = env->names.len; i-- > 0;)
    if (strlen(env->names.items[i]) == len && !memcmp(env->names.items[i], name, len)) {
      *out = env->values.items[i];
      return true;
    }
  return false;
}

void ks_spec_env_init(ks_spec_env *env, ks_arena *arena) {
  memset(env, 0, sizeof *env);
  env->arena = arena;
  env->expr = (ks_expr_env){env_lookup, env};
}

void ks_spec_env_bind(ks_spec_env *env, const char *name, ks_value value) {
  *ks_array_push(env->arena, &env->names) = name;
  *ks_array_push(env->arena, &env->values) = value;
}

bool ks_spec_env_get(const ks_spec_env *env, const char *name, ks_value *out) {
  return env_lookup((void *)env, name, strlen(name), out);
}

/* ---- the kernel as the spec sees it ----------------------------------- */

typedef struct param_view {
  bool is_pointer;
  const char *type;    /* with template arguments substituted */
  const char *pointee; /* likewise; pointers only */
  ks_dtype dtype;      /* the element type (pointers) or the value's type */
  int buffer;          /* index into spec->buffers, or -1 */
  int scalar;          /* index into spec->scalars, or -1 */
} param_view;

typedef struct kernel_view {
  ks_strings tnames, tvalues; /* template arguments */
  param_view *params;
} kernel_view;

static int find_param(const ks_kernel *k, const char *name) {
  for (size_t i = 0; i < k->params.len; i++)
    if (!strcmp(k->params.items[i].name, name))
      return (int)i;
  return -1;
}

static const char *param_list(ks_arena *arena, const ks_kernel *k) {
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < k->params.len; i++)
    ks_buf_addf(&b, "%s%s", i ? ", " : "", k->params.items[i].name);
  const char *s = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return s;
}

static const char *args_text(ks_arena *arena, const ks_template_args *args) {
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < args->len; i++)
    ks_buf_addf(&b, "%s%s", i ? ", " : "", args->items[i].value ? args->items[i].value : "?");
  const char *s = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return s;
}

/* The template arguments: from `instance`, else the one instantiation. */
static int template_args(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, ks_arena *arena,
                         kernel_view *v) {
  if (!k->tparams.len) {
    if (spec->instance) /* it would be ignored: say so instead */
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "instance: %s is not a template, so 'instance %s' has nothing to "
                          "instantiate; remove the line",
                          k->name, ks_spec_quote(arena, spec->instance));
    return 0;
  }
  const char **given = ks_arena_alloc(arena, k->tparams.len * sizeof *given);
  if (spec->instance) {
    ks_strings parts = {0};
    ks_ctext_split(arena, spec->instance, spec->instance + strlen(spec->instance), &parts);
    if (parts.len > k->tparams.len)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "instance: '%s' gives %zu template arguments; %s has %zu",
                          ks_spec_quote(arena, spec->instance), parts.len, k->name,
                          k->tparams.len);
    for (size_t i = 0; i < parts.len; i++)
      given[i] = parts.items[i];
  } else {
    if (k->instantiations.len != 1) {
      ks_buf seen = KS_BUF_INIT;
      for (size_t i = 0; i < k->instantiations.len; i++)
        ks_buf_addf(&seen, "%s<%s>", i ? ", " : "", args_text(arena, &k->instantiations.items[i]));
      int rc = k->instantiations.len
                   ? ks_spec_fail(ctx, spec->file, spec->line,
                                  "template kernel %s is launched as %s: choose one with "
                                  "'instance ...'",
                                  k->name, seen.data)
                   : ks_spec_fail(ctx, spec->file, spec->line,
                                  "template kernel %s has no instantiation at a launch site: "
                                  "give one with 'instance ...'",
                                  k->name);
      ks_buf_release(&seen);
      return rc;
    }
    const ks_template_args *inst = &k->instantiations.items[0];
    for (size_t i = 0; i < inst->len; i++) {
      size_t at = i;
      for (size_t j = 0; inst->items[i].param && j < k->tparams.len; j++)
        if (!strcmp(k->tparams.items[j].name, inst->items[i].param))
          at = j;
      if (at < k->tparams.len)
        given[at] = inst->items[i].value;
    }
  }
  for (size_t i = 0; i < k->tparams.len; i++) {
    const ks_tparam *t = &k->tparams.items[i];
    if (t->is_pack)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "template kernel %s has a parameter pack (%s...): not supported yet",
                          k->name, t->name);
    const char *value = given[i];
    if (!value && t->default_arg) /* defaults may name earlier parameters */
      value = ks_ctext_substitute(arena, t->default_arg, v->tnames.items, v->tvalues.items, i);
    if (!value)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "instance: no value for template parameter %s of %s", t->name, k->name);
    *ks_array_push(arena, &v->tnames) = t->name;
    *ks_array_push(arena, &v->tvalues) = value;
  }
  return 0;
}

static int view_params(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, ks_arena *arena,
                       kernel_view *v) {
  v->params = ks_arena_alloc(arena, (k->params.len + 1) * sizeof *v->params);
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    param_view *pv = &v->params[i];
    pv->buffer = pv->scalar = -1;
    pv->type =
        ks_ctext_substitute(arena, p->type, v->tnames.items, v->tvalues.items, v->tnames.len);
    if (!*p->name)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "parameter %zu of %s (%s) has no name, so a spec cannot refer to it",
                          i + 1, k->name, p->type);
    if (p->kind == KS_PARAM_RECORD)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "parameter '%s' is a struct passed by value (%s): specs cannot build "
                          "those yet",
                          p->name, p->type);
    if (p->kind == KS_PARAM_POINTER) {
      pv->is_pointer = true;
      pv->pointee = p->pointee ? ks_ctext_substitute(arena, p->pointee, v->tnames.items,
                                                     v->tvalues.items, v->tnames.len)
                               : NULL;
      if (!pv->pointee || !ks_dtype_from_param(pv->pointee, p->canon_pointee, &pv->dtype))
        pv->dtype = KS_DT_NONE;
      continue;
    }
    if (!ks_dtype_from_param(pv->type, p->canon_type, &pv->dtype))
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "scalar parameter '%s' has type '%s', which a spec cannot give yet",
                          p->name, pv->type);
  }
  return 0;
}

static bool size_has(const ks_size_set *set, const char *name) {
  for (size_t i = 0; i < set->vars.len; i++)
    if (!strcmp(set->vars.items[i].name, name))
      return true;
  return false;
}

/* Every size set has the timed set's variables and no others. */
static int check_sizes(ks_ctx *ctx, const ks_spec *spec) {
  const ks_size_set *timed = NULL;
  for (size_t i = 0; i < spec->sizes.len && !timed; i++)
    if (spec->sizes.items[i].timed)
      timed = &spec->sizes.items[i];
  if (!timed)
    return ks_spec_fail(ctx, spec->file, spec->line,
                        "no timed size: add 'size timed: ...' (the size that is measured)");
  for (size_t i = 0; i < spec->sizes.len; i++) {
    const ks_size_set *s = &spec->sizes.items[i];
    for (size_t j = 0; j < timed->vars.len; j++)
      if (!size_has(s, timed->vars.items[j].name))
        return ks_spec_fail(ctx, spec->file, s->line,
                            "size '%s': no variable '%s' (size 'timed' has one)", s->name,
                            timed->vars.items[j].name);
    for (size_t j = 0; j < s->vars.len; j++)
      if (!size_has(timed, s->vars.items[j].name))
        return ks_spec_fail(ctx, spec->file, s->line,
                            "size '%s': variable '%s' is not in size 'timed'", s->name,
                            s->vars.items[j].name);
  }
  return 0;
}

/* What resolving size set `size` checks of the sizes: after ks_spec_check
 * every set has the same variables, so the set is compared with the first
 * one only. Finding the timed set again, or checking every set, for each
 * of 20,000 resolved sets made a large spec quadratic. */
static int check_one_size(ks_ctx *ctx, const ks_spec *spec, size_t size) {
  const ks_size_set *first = &spec->sizes.items[0], *s = &spec->sizes.items[size];
  for (size_t j = 0; j < first->vars.len; j++)
    if (!size_has(s, first->vars.items[j].name))
      return ks_spec_fail(ctx, spec->file, s->line,
                          "size '%s': no variable '%s' (size '%s' has one)", s->name,
                          first->vars.items[j].name, first->name);
  for (size_t j = 0; j < s->vars.len; j++)
    if (!size_has(first, s->vars.items[j].name))
      return ks_spec_fail(ctx, spec->file, s->line,
                          "size '%s': variable '%s' is not in size '%s'", s->name,
                          s->vars.items[j].name, first->name);
  return 0;
}

static int check_buffers(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, ks_arena *arena,
                         kernel_view *v) {
  for (size_t b = 0; b < spec->buffers.len; b++) {
    const ks_spec_buffer *sb = &spec->buffers.items[b];
    int i = find_param(k, sb->param);
    if (i < 0)
      return ks_spec_fail(ctx, spec->file, sb->line,
                          "buffer '%s': %s has no parameter '%s' (it has: %s)", sb->param, k->name,
                          sb->param, param_list(arena, k));
    param_view *pv = &v->params[i];
    const ks_param *p = &k->params.items[i];
    if (!pv->is_pointer)
      return ks_spec_fail(ctx, spec->file, sb->line,
                          "buffer '%s': parameter '%s' is not a pointer (%s); give it with "
                          "'scalar %s = ...'",
                          sb->param, sb->param, pv->type, sb->param);
    if (sb->role != KS_ROLE_IN && p->pointee_const)
      return ks_spec_fail(ctx, spec->file, sb->line,
                          "buffer '%s': the parameter is '%s', which the kernel cannot write; "
                          "make it 'in'",
                          sb->param, pv->type);
    if (sb->dtype != KS_DT_NONE && pv->dtype != KS_DT_NONE && sb->dtype != pv->dtype)
      return ks_spec_fail(ctx, spec->file, sb->line,
                          "buffer '%s': element type %s, but the parameter is '%s'", sb->param,
                          ks_dtype_name(sb->dtype), pv->type);
    if (sb->dtype == KS_DT_NONE && pv->dtype == KS_DT_NONE)
      return ks_spec_fail(ctx, spec->file, sb->line,
                          "buffer '%s': the element type of '%s' is not an arithmetic type; "
                          "give one, as in '%s %s: f32[...]'",
                          sb->param, pv->type,
                          sb->role == KS_ROLE_IN    ? "in"
                          : sb->role == KS_ROLE_OUT ? "out"
                                                    : "inout",
                          sb->param);
    if (sb->dtype != KS_DT_NONE)
      pv->dtype = sb->dtype;
    pv->buffer = (int)b;
  }
  return 0;
}

static int check_scalars(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, ks_arena *arena,
                         kernel_view *v) {
  for (size_t s = 0; s < spec->scalars.len; s++) {
    const ks_binding *sc = &spec->scalars.items[s];
    int i = find_param(k, sc->name);
    if (i < 0)
      return ks_spec_fail(ctx, spec->file, sc->line,
                          "scalar '%s': %s has no parameter '%s' (it has: %s)", sc->name, k->name,
                          sc->name, param_list(arena, k));
    if (v->params[i].is_pointer)
      return ks_spec_fail(ctx, spec->file, sc->line,
                          "scalar '%s': parameter '%s' is a pointer (%s); give it a buffer line",
                          sc->name, sc->name, v->params[i].type);
    v->params[i].scalar = (int)s;
  }
  for (size_t i = 0; i < k->params.len; i++) {
    const ks_param *p = &k->params.items[i];
    const param_view *pv = &v->params[i];
    if (pv->is_pointer && pv->buffer < 0)
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "parameter '%s' (%s) has no buffer: add 'in %s[...]', 'out %s[...]' "
                          "or 'inout %s[...]'",
                          p->name, pv->type, p->name, p->name, p->name);
    if (!pv->is_pointer && pv->scalar < 0 && !size_has(&spec->sizes.items[0], p->name))
      return ks_spec_fail(ctx, spec->file, spec->line,
                          "scalar parameter '%s' (%s) has no value: add 'scalar %s = ...' or a "
                          "size variable '%s'",
                          p->name, pv->type, p->name, p->name);
  }
  return 0;
}

/* `size`: the size set about to be resolved (SIZE_MAX: check them all). */
static int view_kernel(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, size_t size,
                       ks_arena *arena, kernel_view *v) {
  memset(v, 0, sizeof *v);
  if ((size == SIZE_MAX ? check_sizes(ctx, spec) : check_one_size(ctx, spec, size)) ||
      template_args(ctx, spec, k, arena, v) ||
      view_params(ctx, spec, k, arena, v) || check_buffers(ctx, spec, k, arena, v) ||
      check_scalars(ctx, spec, k, arena, v))
    return -1;
  return 0;
}

int ks_spec_check(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k) {
  ks_arena arena = KS_ARENA_INIT;
  kernel_view v;
  int rc = view_kernel(ctx, spec, k, SIZE_MAX, &arena, &v);
  ks_arena_release(&arena);
  return rc;
}

const char *ks_spec_instance(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k,
                             ks_arena *arena) {
  kernel_view v = {0};
  if (!k->tparams.len || template_args(ctx, spec, k, arena, &v))
    return NULL;
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < v.tvalues.len; i++)
    ks_buf_addf(&b, "%s%s", i ? ", " : "", v.tvalues.items[i]);
  const char *s = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return s;
}

/* ---- resolving one size set ------------------------------------------- */

/* Evaluation state of one size set; errors name the size set. */
typedef struct resolver {
  ks_ctx *ctx;
  const ks_spec *spec;
  const ks_size_set *size;
  ks_spec_env env;
} resolver;

static int eval_fail(resolver *r, unsigned line, const char *field, const char *text) {
  char err[sizeof r->ctx->error];
  snprintf(err, sizeof err, "%s", r->ctx->error);
  return ks_spec_fail(r->ctx, r->spec->file, line, "size '%s': %s '%s': %s", r->size->name, field,
                      ks_spec_quote(r->env.arena, text), err);
}

static int eval(resolver *r, unsigned line, const char *field, const char *text, ks_value *out) {
  return ks_expr_eval(r->ctx, text, &r->env.expr, out) ? eval_fail(r, line, field, text) : 0;
}

/* The range of an integer element type, for checking values that must fit. */
static void int_range(ks_dtype t, double *lo, double *hi) {
  unsigned bits = (unsigned)ks_dtype_size(t) * 8;
  bool is_unsigned = t == KS_DT_U8 || t == KS_DT_U16 || t == KS_DT_U32 || t == KS_DT_U64;
  *lo = is_unsigned ? 0 : -ldexp(1, (int)bits - 1);
  *hi = is_unsigned ? ldexp(1, (int)bits) - 1 : ldexp(1, (int)bits - 1) - 1;
}

/* The largest finite value of a floating element type narrower than a
 * double (f16 65504, bf16 (2 - 2^-7) * 2^127, f32 FLT_MAX), or 0 for f64
 * and integers. A value beyond it would be infinite, and the worker's
 * conversion through float undefined past FLT_MAX: specs refuse it. */
static double narrow_float_max(ks_dtype t) {
  switch (t) {
  case KS_DT_F16: return 65504.0;
  case KS_DT_BF16: return 0x1.fep127;
  case KS_DT_F32: return FLT_MAX;
  default: return 0;
  }
}

/* How far from its mean the worker's normal generator can go, in standard
 * deviations: its Box-Muller draw is at most sqrt(-2 ln 2^-53) = 8.572. */
static const double NORMAL_REACH = 8.58;

/* A value as the parameter's type takes it. */
static int to_scalar(resolver *r, unsigned line, const char *name, ks_dtype t, ks_value v,
                     ks_value *out) {
  if (ks_dtype_is_float(t)) {
    double d = ks_value_as_double(v), max = narrow_float_max(t);
    if (max && !(fabs(d) <= max)) /* (float)d would be undefined past FLT_MAX */
      return ks_spec_fail(r->ctx, r->spec->file, line,
                          "size '%s': scalar '%s' = %.17g does not fit %s (largest %.17g)",
                          r->size->name, name, d, ks_dtype_name(t), max);
    *out = (ks_value){.is_int = false, .f = t == KS_DT_F32 ? (double)(float)d : d};
    return 0;
  }
  double d = ks_value_as_double(v), lo, hi;
  if (!v.is_int && d != floor(d))
    return ks_spec_fail(r->ctx, r->spec->file, line,
                        "size '%s': scalar '%s' = %g is not a whole number (%s)", r->size->name,
                        name, d, ks_dtype_name(t));
  int_range(t, &lo, &hi);
  /* Values travel as signed 64-bit: a u64 scalar stops at 2^63 - 1. */
  if (hi > 9223372036854775807.0)
    hi = 9223372036854775807.0;
  if (d < lo || d > hi || (!v.is_int && d >= 9223372036854775808.0))
    return ks_spec_fail(r->ctx, r->spec->file, line,
                        "size '%s': scalar '%s' = %.17g does not fit %s", r->size->name, name, d,
                        ks_dtype_name(t));
  *out = (ks_value){.is_int = true, .i = v.is_int ? v.i : (long long)d};
  return 0;
}

static double default_tolerance(ks_dtype t, bool relative) {
  double atol, rtol;
  ks_dtype_tolerance(t, &atol, &rtol);
  return relative ? rtol : atol;
}

/* Up to what magnitude type `t` holds every integer exactly (f32: 2^24);
 * an integer type holds every value of its range, checked already. */
static double exact_int_limit(ks_dtype t) {
  switch (t) {
  case KS_DT_F16: return 2048.0;
  case KS_DT_BF16: return 256.0;
  case KS_DT_F32: return 16777216.0;
  case KS_DT_F64: return 9007199254740992.0;
  default: return INFINITY;
  }
}

/* ks_wbuffer.ints_*: what the worker's fill (backend/worker/fill.c) puts
 * in an input of this distribution, when that is integers from `first` to
 * `last`: int and sorted_int draw integers (stored as they are in a float
 * buffer), uniform draws them for an integer type only, iota counts from
 * its start, a permutation holds 0..count-1, const its value. A float type
 * must hold the bounds exactly, or rounding could leave [first, last]. */
static void known_ints(ks_wbuffer *wb, ks_dist_kind kind, double first, double last) {
  bool ints = kind == KS_DIST_INT || kind == KS_DIST_SORTED_INT || kind == KS_DIST_IOTA ||
              kind == KS_DIST_PERMUTATION || kind == KS_DIST_CONSTANT ||
              (kind == KS_DIST_UNIFORM && !ks_dtype_is_float(wb->dtype));
  double limit = exact_int_limit(wb->dtype);
  wb->ints_known = ints && wb->count > 0 && first == floor(first) && last == floor(last) &&
                   first <= last && fabs(first) <= limit && fabs(last) <= limit;
  wb->ints_lo = wb->ints_known ? first : 0;
  wb->ints_hi = wb->ints_known ? last : 0;
}

/* Evaluates a buffer's distribution and checks that its values fit. */
static int resolve_dist(resolver *r, const ks_spec_buffer *sb, ks_wbuffer *wb) {
  const ks_dist *d = &sb->dist;
  char field[96];
  snprintf(field, sizeof field, "buffer '%s': distribution", sb->param);
  ks_value a = {.is_int = true}, b = {.is_int = true};
  if ((d->a && eval(r, sb->line, field, d->a, &a)) || (d->b && eval(r, sb->line, field, d->b, &b)))
    return -1;
  wb->dist = d->kind;
  wb->a = ks_value_as_double(a);
  wb->b = ks_value_as_double(b);
  bool is_int = !ks_dtype_is_float(wb->dtype);
  double lo, hi, first = 0, last = 0;
  if (d->kind == KS_DIST_UNIFORM && !d->a) { /* the default: by type */
    int_range(wb->dtype, &lo, &hi);
    wb->a = !is_int ? -1 : lo == 0 ? 0 : -100;
    wb->b = is_int ? 100 : 1;
  }
  if (d->kind == KS_DIST_NORMAL && !d->a) {
    wb->a = 0;
    wb->b = 1;
  }
  const char *bad = NULL;
  switch (d->kind) {
  case KS_DIST_UNIFORM:
  case KS_DIST_INT:
  case KS_DIST_SORTED_INT:
    if (wb->a > wb->b)
      bad = "its low bound is above its high bound";
    if ((d->kind != KS_DIST_UNIFORM || is_int) && (wb->a != floor(wb->a) || wb->b != floor(wb->b)))
      bad = "its bounds must be whole numbers";
    first = wb->a;
    last = wb->b;
    break;
  case KS_DIST_NORMAL:
    if (wb->b < 0)
      bad = "its standard deviation is negative";
    break;
  case KS_DIST_IOTA:
    first = wb->a;
    last = wb->a + (wb->count ? (double)wb->count - 1 : 0);
    break;
  case KS_DIST_PERMUTATION:
    last = wb->count ? (double)wb->count - 1 : 0;
    break;
  case KS_DIST_CONSTANT:
    first = last = wb->a;
    break;
  case KS_DIST_FILE: /* captures only: a spec cannot write one */
    break;
  }
  if (!bad && is_int && d->kind != KS_DIST_NORMAL) {
    int_range(wb->dtype, &lo, &hi);
    if (first < lo || last > hi)
      bad = ks_arena_printf(r->env.arena, "values from %.17g to %.17g do not fit %s", first, last,
                            ks_dtype_name(wb->dtype));
    else if (first != floor(first))
      bad = "values must be whole numbers for an integer buffer";
  }
  double max = narrow_float_max(wb->dtype);
  if (!bad && max && d->kind == KS_DIST_NORMAL &&
      !(fabs(wb->a) + NORMAL_REACH * wb->b <= max))
    bad = ks_arena_printf(r->env.arena,
                          "normal(%.17g, %.17g) reaches %.17g (%.3g standard deviations from "
                          "its mean), which does not fit %s (largest %.17g)",
                          wb->a, wb->b, fabs(wb->a) + NORMAL_REACH * wb->b, NORMAL_REACH,
                          ks_dtype_name(wb->dtype), max);
  else if (!bad && max && !(fabs(first) <= max && fabs(last) <= max))
    bad = ks_arena_printf(r->env.arena, "values from %.17g to %.17g do not fit %s (largest %.17g)",
                          first, last, ks_dtype_name(wb->dtype), max);
  if (bad)
    return ks_spec_fail(r->ctx, r->spec->file, sb->line, "size '%s': buffer '%s': %s",
                        r->size->name, sb->param, bad);
  known_ints(wb, d->kind, first, last);
  return 0;
}

/* What is wrong with a launch under CUDA's hard limits, or NULL. */
static const char *launch_problem(const ks_launch_cfg *c) {
  const unsigned *g = c->grid, *b = c->block;
  if (!g[0] || !g[1] || !g[2])
    return "a grid dimension is 0";
  if (g[0] > 2147483647u || g[1] > 65535 || g[2] > 65535)
    return "the grid exceeds CUDA's limits (2^31-1, 65535, 65535)";
  if (!b[0] || !b[1] || !b[2])
    return "a block dimension is 0";
  if (b[0] > 1024 || b[1] > 1024 || b[2] > 64 || (unsigned long long)b[0] * b[1] * b[2] > 1024)
    return "the block exceeds 1024 threads (or 1024, 1024, 64 per dimension)";
  return NULL;
}

static int check_dims(resolver *r, const char *from, const ks_launch_cfg *c) {
  const char *bad = launch_problem(c);
  if (!bad)
    return 0;
  return ks_spec_fail(r->ctx, r->spec->file, r->spec->line,
                      "size '%s': launch: %s (grid (%u, %u, %u), block (%u, %u, %u), from %s)",
                      r->size->name, bad, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                      c->block[1], c->block[2], from);
}

static int resolve_launch(resolver *r, const ks_kernel *k, const ks_launch *site,
                          const ks_spec_env *params, ks_arena *arena, ks_launch_cfg *out) {
  const ks_spec *spec = r->spec;
  if (spec->grid) {
    if (ks_expr_eval_dim3(r->ctx, spec->grid, &r->env.expr, out->grid))
      return eval_fail(r, spec->line, "launch grid", spec->grid);
    if (ks_expr_eval_dim3(r->ctx, spec->block, &r->env.expr, out->block))
      return eval_fail(r, spec->line, "launch block", spec->block);
    out->smem = 0;
    if (spec->smem &&
        ks_expr_eval_count(r->ctx, spec->smem, &r->env.expr, 0xffffffffULL, &out->smem))
      return eval_fail(r, spec->line, "launch smem", spec->smem);
    return check_dims(r, "the spec's launch line", out);
  }
  if (!site)
    return ks_spec_fail(r->ctx, spec->file, spec->line,
                        "the spec needs a 'launch' line: %s has no launch site to take it from",
                        k->name);
  if (ks_spec_site_launch(r->ctx, k, site, params, arena, out)) {
    char err[sizeof r->ctx->error];
    snprintf(err, sizeof err, "%s", r->ctx->error);
    return ks_spec_fail(r->ctx, spec->file, spec->line, "the spec needs a 'launch' line: %s", err);
  }
  return check_dims(r, "the launch site", out);
}

/* Template value arguments that are numbers (blockSize = 256), then the
 * size set's variables. */
static int bind_sizes(resolver *r, const ks_kernel *k, const kernel_view *v) {
  for (size_t i = 0; i < v->tnames.len; i++) {
    ks_value tv;
    if (k->tparams.items[i].kind == KS_TPARAM_VALUE &&
        !ks_expr_eval(r->ctx, v->tvalues.items[i], &r->env.expr, &tv))
      ks_spec_env_bind(&r->env, v->tnames.items[i], tv);
  }
  for (size_t i = 0; i < r->size->vars.len; i++) {
    const ks_binding *b = &r->size->vars.items[i];
    ks_value val;
    char field[96];
    snprintf(field, sizeof field, "variable '%s'", b->name);
    if (eval(r, b->line, field, b->value, &val))
      return -1;
    ks_spec_env_bind(&r->env, b->name, val);
  }
  return 0;
}

/* The scalar parameters' values into values[param], converted to their
 * types; `params` gets them (and the template values) by parameter name,
 * for evaluating the launch site. */
static int bind_scalars(resolver *r, const ks_kernel *k, const kernel_view *v, ks_value *values,
                        ks_spec_env *params) {
  for (size_t i = 0; i < v->tnames.len; i++) {
    ks_value tv;
    if (ks_spec_env_get(&r->env, v->tnames.items[i], &tv))
      ks_spec_env_bind(params, v->tnames.items[i], tv);
  }
  for (size_t s = 0; s < r->spec->scalars.len; s++) {
    const ks_binding *b = &r->spec->scalars.items[s];
    int i = find_param(k, b->name);
    ks_value val;
    char field[96];
    snprintf(field, sizeof field, "scalar '%s'", b->name);
    if (eval(r, b->line, field, b->value, &val) ||
        to_scalar(r, b->line, b->name, v->params[i].dtype, val, &values[i]))
      return -1;
    ks_spec_env_bind(&r->env, b->name, values[i]);
  }
  for (size_t i = 0; i < k->params.len; i++) {
    const param_view *pv = &v->params[i];
    const char *name = k->params.items[i].name;
    if (pv->is_pointer)
      continue;
    if (pv->scalar < 0) { /* the size variable of that name, checked to exist */
      ks_value val;
      ks_spec_env_get(&r->env, name, &val);
      if (to_scalar(r, r->size->line, name, pv->dtype, val, &values[i]))
        return -1;
      ks_spec_env_bind(&r->env, name, values[i]);
    }
    ks_spec_env_bind(params, name, values[i]);
  }
  return 0;
}

/* Buffer lengths in the spec's order, so a length may use an earlier one;
 * then the arguments in parameter order, each buffer with its distribution,
 * tolerance and share of bytes_min. */
static int bind_buffers(resolver *r, const ks_kernel *k, const kernel_view *v,
                        const ks_value *values, ks_arena *arena, ks_workload *out) {
  const ks_spec *spec = r->spec;
  unsigned long long *counts = ks_arena_alloc(arena, (spec->buffers.len + 1) * sizeof *counts);
  for (size_t b = 0; b < spec->buffers.len; b++) {
    const ks_spec_buffer *sb = &spec->buffers.items[b];
    char field[96];
    snprintf(field, sizeof field, "buffer '%s': length", sb->param);
    if (ks_expr_eval_count(r->ctx, sb->length, &r->env.expr, MAX_COUNT, &counts[b]))
      return eval_fail(r, sb->line, field, sb->length);
    ks_spec_env_bind(&r->env, ks_arena_printf(arena, "len_%s", sb->param),
                     (ks_value){.is_int = true, .i = (long long)counts[b]});
  }
  for (size_t i = 0; i < k->params.len; i++) {
    const param_view *pv = &v->params[i];
    ks_warg *arg = ks_array_push(arena, &out->args);
    if (!pv->is_pointer) {
      arg->kind = KS_ARG_SCALAR;
      arg->dtype = pv->dtype;
      arg->value = values[i];
      continue;
    }
    const ks_spec_buffer *sb = &spec->buffers.items[pv->buffer];
    arg->kind = KS_ARG_BUFFER;
    arg->buffer = out->buffers.len;
    ks_wbuffer *wb = ks_array_push(arena, &out->buffers);
    wb->name = sb->param;
    wb->dtype = pv->dtype;
    wb->count = counts[pv->buffer];
    wb->role = sb->role;
    if (sb->role != KS_ROLE_OUT && resolve_dist(r, sb, wb))
      return -1;
    if (sb->role != KS_ROLE_IN) {
      wb->atol = sb->atol >= 0     ? sb->atol
                 : spec->atol >= 0 ? spec->atol
                                   : default_tolerance(wb->dtype, false);
      wb->rtol = sb->rtol >= 0     ? sb->rtol
                 : spec->rtol >= 0 ? spec->rtol
                                   : default_tolerance(wb->dtype, true);
    }
    /* Each input read once, each output written once, inout both. */
    unsigned long long bytes, moved;
    if (__builtin_mul_overflow(wb->count, (unsigned long long)ks_dtype_size(wb->dtype), &bytes) ||
        __builtin_mul_overflow(bytes, sb->role == KS_ROLE_INOUT ? 2ULL : 1ULL, &moved) ||
        __builtin_add_overflow(out->bytes_min, moved, &out->bytes_min))
      return ks_spec_fail(r->ctx, spec->file, sb->line, "size '%s': buffer '%s': too many bytes",
                          r->size->name, sb->param);
  }
  return 0;
}

int ks_spec_resolve(ks_ctx *ctx, const ks_spec *spec, const ks_kernel *k, const ks_launch *site,
                    size_t size, ks_arena *arena, ks_workload *out) {
  memset(out, 0, sizeof *out);
  kernel_view v;
  if (size >= spec->sizes.len)
    return ks_fail(ctx, "%s:%u: no size set %zu", spec->file, spec->line, size);
  if (view_kernel(ctx, spec, k, size, arena, &v))
    return -1;
  resolver r = {.ctx = ctx, .spec = spec, .size = &spec->sizes.items[size]};
  ks_spec_env_init(&r.env, arena);
  ks_spec_env params;
  ks_spec_env_init(&params, arena);
  ks_value *values = ks_arena_alloc(arena, (k->params.len + 1) * sizeof *values);
  out->size_name = r.size->name;
  out->timed = r.size->timed;
  if (bind_sizes(&r, k, &v) || bind_scalars(&r, k, &v, values, &params) ||
      bind_buffers(&r, k, &v, values, arena, out) ||
      resolve_launch(&r, k, site, &params, arena, &out->launch))
    return -1;
  if (spec->flops) {
    ks_value f;
    if (eval(&r, spec->line, "flops", spec->flops, &f))
      return -1;
    out->flops = ks_value_as_double(f);
    if (out->flops < 0)
      return ks_spec_fail(ctx, spec->file, spec->line, "size '%s': flops is negative (%g)",
                          r.size->name, out->flops);
  }
  return 0;
}

/* ---- variants ----------------------------------------------------------- */

/* The guard functions about pointers, and what each means in the judge,
 * where every buffer is an allocation of its own, 256-byte aligned (a
 * patched build evaluates them on the real addresses):
 *   aligned(p, N)   N is a power of two no larger than 256;
 *   disjoint(p, q)  true for two different pointer parameters, false for
 *                   one named twice.
 * Each may also be spelled with a ks_ prefix. */
typedef struct guard_fn {
  const char *name;
  size_t pointers;        /* leading arguments that must be pointer parameters */
  const char *usage;
} guard_fn;

static const guard_fn guard_fns[] = {
    {"aligned", 1, "aligned() takes a pointer parameter and a byte count"},
    {"disjoint", 2, "disjoint() takes two pointer parameters"},
};

/* Where the next call of a guard function starts in [p, end), or NULL. */
static const char *next_guard_fn(const char *text, const char *p, const char *end,
                                 const guard_fn **fn, size_t *len) {
  for (const char *q = p; q < end; q++) {
    if (q != text && ks_ctext_is_ident_char(q[-1]))
      continue;
    const char *name = !strncmp(q, "ks_", 3) ? q + 3 : q;
    for (size_t i = 0; i < sizeof guard_fns / sizeof *guard_fns; i++) {
      size_t n = strlen(guard_fns[i].name);
      if (!strncmp(name, guard_fns[i].name, n) && !ks_ctext_is_ident_char(name[n])) {
        *fn = &guard_fns[i];
        *len = (size_t)(name - q) + n;
        return q;
      }
    }
  }
  return NULL;
}

/* `text` with each guard function replaced by its value in the judge. */
static int rewrite_guard_fns(ks_ctx *ctx, const ks_kernel *k, const ks_workload *work,
                             const char *text, ks_arena *arena, const char **out) {
  ks_buf b = KS_BUF_INIT;
  int rc = 0;
  const char *p = text, *end = text + strlen(text);
  while (p < end) {
    const guard_fn *fn = NULL;
    size_t n = 0;
    const char *hit = next_guard_fn(text, p, end, &fn, &n);
    if (!hit) {
      ks_buf_add(&b, p, (size_t)(end - p));
      break;
    }
    ks_buf_add(&b, p, (size_t)(hit - p));
    const char *open = hit + n;
    while (open < end && (*open == ' ' || *open == '\t'))
      open++;
    const char *close = open < end && *open == '(' ? ks_ctext_matching(open, end) : NULL;
    ks_strings args = {0};
    if (close)
      ks_ctext_split(arena, open + 1, close, &args);
    if (!close || args.len != 2) {
      rc = ks_fail(ctx, "%s: '%s'", fn->usage, ks_spec_quote(arena, text));
      goto out;
    }
    int pi[2] = {-1, -1};
    for (size_t a = 0; a < fn->pointers; a++) {
      int i = find_param(k, args.items[a]);
      if (i < 0 || k->params.items[i].kind != KS_PARAM_POINTER) {
        rc = ks_fail(ctx, "%s(): '%s' is not a pointer parameter of %s", fn->name,
                     ks_spec_quote(arena, args.items[a]), k->name);
        goto out;
      }
      pi[a] = i;
    }
    const ks_warg *wa[2] = {NULL, NULL};
    for (int a = 0; a < 2; a++)
      if (pi[a] >= 0 && (size_t)pi[a] < work->args.len &&
          work->args.items[pi[a]].kind == KS_ARG_BUFFER)
        wa[a] = &work->args.items[pi[a]];
    if (fn->pointers == 1) {
      /* A captured parameter may point inside its allocation. */
      unsigned long long off = wa[0] ? wa[0]->offset : 0;
      ks_buf_addf(&b, "(is_pow2(%s) && (%s) <= 256 && %llu %% (%s) == 0)", args.items[1],
                  args.items[1], off, args.items[1]);
    } else if (!strcmp(args.items[0], args.items[1])) {
      ks_buf_adds(&b, "0");
    } else if (!wa[0] || !wa[1] || wa[0]->buffer != wa[1]->buffer) {
      ks_buf_adds(&b, "1");
    } else {
      /* Two parameters into one captured allocation: disjoint when their
       * ranges are, which takes both lengths. */
      unsigned long long l0, l1;
      if (!ks_warg_length(work, wa[0], &l0) || !ks_warg_length(work, wa[1], &l1)) {
        rc = ks_fail(ctx, "disjoint(%s, %s): the capture does not say how long they are",
                     args.items[0], args.items[1]);
        goto out;
      }
      size_t es = ks_dtype_size(work->buffers.items[wa[0]->buffer].dtype);
      unsigned long long e0 = wa[0]->offset + l0 * es, e1 = wa[1]->offset + l1 * es;
      ks_buf_adds(&b, e0 <= wa[1]->offset || e1 <= wa[0]->offset ? "1" : "0");
    }
    p = close + 1;
  }
  *out = ks_arena_strdup(arena, b.data);
out:
  ks_buf_release(&b);
  return rc;
}

int ks_variant_resolve(ks_ctx *ctx, const ks_variant *v, const ks_kernel *k,
                       const ks_workload *work, ks_launch_cfg *out, bool *guards_hold) {
  ks_arena arena = KS_ARENA_INIT;
  ks_spec_env env;
  int rc = 0;
  const char *name = v->kernel_name ? v->kernel_name : "variant";
  const char *from = v->file ? v->file : "";
  ks_spec_env_init(&env, &arena);
  *out = work->launch;
  *guards_hold = true;
  for (size_t i = 0; i < k->params.len && i < work->args.len; i++) {
    const ks_warg *a = &work->args.items[i];
    unsigned long long len;
    if (a->kind == KS_ARG_SCALAR)
      ks_spec_env_bind(&env, k->params.items[i].name, a->value);
    else if (ks_warg_length(work, a, &len)) /* unknown: a guard using it fails */
      ks_spec_env_bind(&env, ks_arena_printf(&arena, "len_%s", k->params.items[i].name),
                       (ks_value){.is_int = true, .i = (long long)len});
  }
  static const char *const dims[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"};
  for (int d = 0; d < 3; d++) {
    ks_spec_env_bind(&env, dims[d], (ks_value){.is_int = true, .i = work->launch.grid[d]});
    ks_spec_env_bind(&env, dims[d + 3], (ks_value){.is_int = true, .i = work->launch.block[d]});
  }
  ks_spec_env_bind(&env, "smem", (ks_value){.is_int = true, .i = (long long)work->launch.smem});
  /* Guards first: a policy may be meaningless (divide by zero) where they
   * do not hold. */
  for (size_t g = 0; g < v->requires.len; g++) {
    const char *text = NULL;
    ks_value val;
    if (rewrite_guard_fns(ctx, k, work, v->requires.items[g], &arena, &text) ||
        ks_expr_eval(ctx, text, &env.expr, &val)) {
      char err[sizeof ctx->error];
      snprintf(err, sizeof err, "%s", ctx->error);
      rc = ks_fail(ctx, "%s%s%s: requires '%s': %s", from, *from ? ": " : "", name,
                   ks_spec_quote(&arena, v->requires.items[g]), err);
      goto out;
    }
    if (!(val.is_int ? val.i != 0 : val.f != 0.0)) {
      *guards_hold = false;
      goto out;
    }
  }
  const char *what[3] = {"grid", "block", "smem"};
  const char *texts[3] = {v->grid, v->block, v->smem};
  for (int i = 0; i < 3; i++) {
    if (!texts[i])
      continue;
    int frc = i == 0   ? ks_expr_eval_dim3(ctx, texts[i], &env.expr, out->grid)
              : i == 1 ? ks_expr_eval_dim3(ctx, texts[i], &env.expr, out->block)
                       : ks_expr_eval_count(ctx, texts[i], &env.expr, 0xffffffffULL, &out->smem);
    if (frc) {
      char err[sizeof ctx->error];
      snprintf(err, sizeof err, "%s", ctx->error);
      rc = ks_fail(ctx, "%s%s%s: %s '%s': %s", from, *from ? ": " : "", name, what[i],
                   ks_spec_quote(&arena, texts[i]), err);
      goto out;
    }
  }
  const char *bad = launch_problem(out);
  if (bad)
    rc = ks_fail(ctx, "%s%s%s: launch: %s (grid (%u, %u, %u), block (%u, %u, %u))", from,
                 *from ? ": " : "", name, bad, out->grid[0], out->grid[1], out->grid[2],
                 out->block[0], out->block[1], out->block[2]);
out:
  ks_arena_release(&arena);
  return rc;
}
