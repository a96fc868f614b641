/* rules_loop: rewrites of a kernel's arithmetic and loops that leave its
 * memory traffic alone.
 *
 *   unroll     `#pragma unroll N` before the innermost for loops that have
 *              none; N = 0 asks for a full unroll of the loops whose trip
 *              count is a compile-time constant;
 *   fast_math  single-precision math calls and divisions replaced by the
 *              hardware approximations (__expf, __fdividef, rsqrtf, ...),
 *              where every output is floating point with the type's default
 *              tolerance or a looser one.
 *
 * Both edit text found through the tree (rules_tree.h), so formatting,
 * comments and the other rules' output survive. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "rules_meaning.h"
#include "rules_tree.h"

/* ---- unroll ------------------------------------------------------------- */

static bool has_loop(const ks_anode *n) {
  for (size_t k = 0; k < n->nkids; k++) {
    const ks_anode *c = n->kids[k];
    if (!c)
      continue;
    if (c->kind == KS_AK_FOR || c->kind == KS_AK_WHILE || c->kind == KS_AK_DO || has_loop(c))
      return true;
  }
  return false;
}

typedef struct loops_walk {
  ks_arena *arena;
  KS_ARRAY(const ks_anode *) innermost;
  size_t loops;
} loops_walk;

static bool visit_loops(ks_anode *n, void *arg) {
  loops_walk *w = arg;
  if (n->kind == KS_AK_FOR || n->kind == KS_AK_WHILE || n->kind == KS_AK_DO)
    w->loops++;
  if (n->kind == KS_AK_FOR && !has_loop(n))
    *ks_array_push(w->arena, &w->innermost) = n;
  return true;
}

/* The `#pragma unroll` or `#pragma nounroll` line right above the loop
 * starting at `at` (nothing but whitespace between): its extent, and its
 * count (-1: none given). */
static bool pragma_above(const char *unit, unsigned at, unsigned *pb, unsigned *pe, long *count) {
  unsigned p = at;
  while (p > 0 && (unit[p - 1] == ' ' || unit[p - 1] == '\t'))
    p--;
  if (p == 0 || unit[p - 1] != '\n')
    return false;
  unsigned line_end = p - 1;
  unsigned line = line_end;
  while (line > 0 && unit[line - 1] != '\n')
    line--;
  const char *q = unit + line;
  while (*q == ' ' || *q == '\t')
    q++;
  if (*q != '#')
    return false;
  q++;
  while (*q == ' ' || *q == '\t')
    q++;
  if (strncmp(q, "pragma", 6))
    return false;
  q += 6;
  while (*q == ' ' || *q == '\t')
    q++;
  if (!strncmp(q, "nounroll", 8)) {
    *count = 1;
  } else if (!strncmp(q, "unroll", 6)) {
    q += 6;
    while (*q == ' ' || *q == '\t' || *q == '(')
      q++;
    *count = isdigit((unsigned char)*q) ? strtol(q, NULL, 10) : -1;
  } else {
    return false;
  }
  *pb = (unsigned)(q - unit);
  while (*pb > line && unit[*pb - 1] != '#')
    (*pb)--;
  (*pb)--;
  *pe = line_end;
  return true;
}

static bool constant_operand(const ks_anode *n) {
  n = ks_rt_strip(n, true);
  if (!n)
    return false;
  if (n->kind == KS_AK_INT_LITERAL)
    return true;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_TEMPLATE_PARAM)
    return true;
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op && strchr("+-*/<>", n->op[0]) &&
      strcmp(n->op, "<") && strcmp(n->op, ">") && strcmp(n->op, "<=") && strcmp(n->op, ">="))
    return constant_operand(n->kids[0]) && constant_operand(n->kids[1]);
  return false;
}

/* for (int k = C0; k < C1; k += C2) with constants (literals, template
 * parameters) and k left alone in the body: a trip count the compiler
 * knows. */
static bool constant_trip(const ks_anode *f) {
  const ks_anode *init = f->kids[0], *cond = f->kids[1], *inc = f->kids[2], *body = f->kids[3];
  if (!init || !cond || !inc || !body)
    return false;
  const ks_anode *var = NULL;
  if (init->kind == KS_AK_DECL_STMT && init->nkids == 1 && init->kids[0]->kind == KS_AK_VAR &&
      constant_operand(ks_rt_var_init(init->kids[0])))
    var = init->kids[0];
  const ks_anode *c = ks_rt_strip(cond, false);
  if (!var || !c || c->kind != KS_AK_BINARY || c->nkids != 2)
    return false;
  static const char *const compare[] = {"<", "<=", ">", ">=", "!="};
  bool is_compare = false;
  for (size_t k = 0; k < sizeof compare / sizeof *compare; k++)
    is_compare |= c->op && !strcmp(c->op, compare[k]);
  if (!is_compare || !((ks_rt_refers_to(c->kids[0], var) && constant_operand(c->kids[1])) ||
                       (ks_rt_refers_to(c->kids[1], var) && constant_operand(c->kids[0]))))
    return false;
  const ks_anode *i = ks_rt_strip(inc, false);
  bool step = false;
  if (i->kind == KS_AK_UNARY && i->op && (!strcmp(i->op, "++") || !strcmp(i->op, "--")))
    step = ks_rt_refers_to(i->kids[0], var);
  else if (i->kind == KS_AK_COMPOUND_ASSIGN && i->nkids == 2)
    step = ks_rt_refers_to(i->kids[0], var) && constant_operand(i->kids[1]);
  return step && !ks_rt_modified(body, var);
}

/* The same read as the compiler reads it (rules_meaning.h): an upward loop
 * whose start, end and step fold to constants through macros (also a
 * macro naming a macro), const locals and enumerators, its variable
 * declared outside or in the init (`int t; for (t = 0; t <= TAPS - 1;
 * t = t + 1)`) and left alone in the body. */
static bool folded_trip(ks_meaning *m, const ks_anode *f) {
  ks_loop_view v;
  long long start, end;
  return ks_meaning_loop(m, f, &v) && !v.modified_in_body && v.step > 0 &&
         ks_meaning_int(m, v.start, &start) && ks_meaning_int(m, v.bound, &end);
}

static const int unroll_choices[] = {2, 4, 8, 0};

static int apply_unroll(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                        ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param != 0 && param != 2 && param != 4 && param != 8)
    return ks_rt_not_applicable(arena, out, "unroll factor %d is not one of 0 (full), 2, 4, 8",
                                param);
  loops_walk w = {.arena = arena};
  ks_anode_walk(in->ast->body, visit_loops, &w);
  if (!w.loops)
    return ks_rt_not_applicable(arena, out, "no loop");
  if (!w.innermost.len)
    return ks_rt_not_applicable(arena, out, "no innermost for loop (only while and do loops)");
  const char *pragma =
      param ? ks_arena_printf(arena, "#pragma unroll %d", param) : "#pragma unroll";
  ks_edits edits = {0};
  size_t changed = 0, constant = 0;
  ks_meaning *m = param ? NULL : ks_meaning_open(ctx, in->ast, arena);
  for (size_t k = 0; k < w.innermost.len; k++) {
    const ks_anode *f = w.innermost.items[k];
    if (f->from_macro)
      continue;
    bool trip = constant_trip(f) || (m && folded_trip(m, f));
    constant += trip;
    if (!param && !trip)
      continue;
    unsigned pb, pe;
    long count;
    if (pragma_above(in->unit, f->begin, &pb, &pe, &count)) {
      /* an explicit count other than ours is re-tuned; a full unroll, a
       * nounroll or `unroll 1` is the user's decision and stays */
      if (count > 1 && param > 0 && count != param) {
        ks_edits_add(arena, &edits, pb - in->variant_offset, pe - in->variant_offset, pragma);
        changed++;
      }
      continue;
    }
    unsigned line = f->begin;
    while (line > 0 && (in->unit[line - 1] == ' ' || in->unit[line - 1] == '\t'))
      line--;
    const char *ind = ks_rt_line_indent(arena, in->unit, f->begin);
    if (line == 0 || in->unit[line - 1] == '\n')
      ks_edits_add(arena, &edits, line - in->variant_offset, line - in->variant_offset,
                   ks_arena_printf(arena, "%s%s\n", ind, pragma));
    else
      ks_edits_add(arena, &edits, f->begin - in->variant_offset, f->begin - in->variant_offset,
                   ks_arena_printf(arena, "\n%s%s\n%s", ind, pragma, ind));
    changed++;
  }
  ks_meaning_close(m);
  if (!changed)
    return ks_rt_not_applicable(
        arena, out, "%s",
        !param && !constant
            ? "full unroll: no innermost for loop has a trip count known at compile time"
            : "every innermost for loop already has an unroll pragma");
  return ks_rt_finish(ctx, in, arena, &edits,
                      param ? ks_arena_printf(arena, "unroll=%d", param) : "unroll=full", out);
}

const ks_rule ks_rule_unroll = {
    "unroll",
    "#pragma unroll N before innermost for loops (0: full unroll of constant trip counts)",
    true,
    unroll_choices,
    sizeof unroll_choices / sizeof *unroll_choices,
    apply_unroll};

/* ---- fast_math ---------------------------------------------------------- */

/* tanhf has no intrinsic as accurate as f32 verification needs (tanh.approx
 * is good to about 5e-4): 1 - 2 / (e^2|x| + 1) through __expf, and a Taylor
 * polynomial below 1/16 where that form cancels. tests/test_rules_mem.c
 * checks the formula against tanh with __expf's and __fdividef's worst
 * errors: relative error below 1e-5, absolute below 1e-10 near 0. */
const char ks_fast_tanhf_source[] =
    "__device__ __forceinline__ float ks_fast_tanhf(float x) {\n"
    "  float ax = fabsf(x), x2 = x * x;\n"
    "  float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * -0.0539682540f)));\n"
    "  float big = copysignf(1.0f - __fdividef(2.0f, __expf(2.0f * ax) + 1.0f), x);\n"
    "  return ax < 0.0625f ? small : big;\n"
    "}\n";

static const struct {
  const char *from, *to;
} fast_calls[] = {
    {"expf", "__expf"}, {"logf", "__logf"}, {"log2f", "__log2f"}, {"log10f", "__log10f"},
    {"sinf", "__sinf"}, {"cosf", "__cosf"}, {"tanf", "__tanf"},   {"powf", "__powf"},
    {"tanhf", "ks_fast_tanhf"},
};

typedef enum etype { ET_UNKNOWN, ET_INT, ET_F32, ET_F64 } etype;

static etype type_named(const char *t) {
  if (!t)
    return ET_UNKNOWN;
  if (!strncmp(t, "const ", 6))
    t += 6;
  if (!strcmp(t, "float"))
    return ET_F32;
  if (!strcmp(t, "double"))
    return ET_F64;
  static const char *const ints[] = {"int", "unsigned int", "unsigned", "long", "unsigned long",
                                     "long long", "unsigned long long", "short", "unsigned short",
                                     "char", "signed char", "unsigned char", "size_t", "int64_t",
                                     "uint64_t", "int32_t", "uint32_t"};
  for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
    if (!strcmp(t, ints[k]))
      return ET_INT;
  return ET_UNKNOWN;
}

static bool f32_function(const char *name) {
  static const char *const fns[] = {
      "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf",
      "tanf", "powf", "tanhf", "sqrtf", "rsqrtf", "cbrtf", "fabsf", "fmaxf", "fminf", "fmaf",
      "floorf", "ceilf", "roundf", "truncf", "erff", "erfcf", "sinhf", "coshf", "atanf", "atan2f",
      "asinf", "acosf", "fmodf", "hypotf", "__expf", "__logf", "__log2f", "__log10f", "__sinf",
      "__cosf", "__tanf", "__powf", "__fdividef", "__saturatef", "__frcp_rn", "__fsqrt_rn",
      "ks_fast_tanhf", "normcdff", "copysignf", "__fmul_rn", "__fadd_rn", "__fmaf_rn"};
  for (size_t k = 0; k < sizeof fns / sizeof *fns; k++)
    if (!strcmp(name, fns[k]))
      return true;
  return false;
}

static etype combine(etype a, etype b) {
  if (a == ET_UNKNOWN || b == ET_UNKNOWN)
    return ET_UNKNOWN;
  if (a == ET_F64 || b == ET_F64)
    return ET_F64;
  if (a == ET_F32 || b == ET_F32)
    return ET_F32;
  return ET_INT;
}

/* The type of an expression, as far as the tree tells without clang's
 * types: literals, declared variables and parameters, subscripts of them,
 * casts, math calls and arithmetic over those. */
static etype expr_type(const char *unit, const ks_anode *n) {
  n = ks_rt_strip(n, false);
  if (!n)
    return ET_UNKNOWN;
  switch (n->kind) {
  case KS_AK_FLOAT_LITERAL: {
    char last = unit[n->end - 1];
    return n->from_macro ? ET_UNKNOWN : (last == 'f' || last == 'F') ? ET_F32 : ET_F64;
  }
  case KS_AK_INT_LITERAL:
    return ET_INT;
  case KS_AK_DECL_REF:
    return n->decl && (n->decl->kind == KS_AK_VAR || n->decl->kind == KS_AK_PARAM)
               ? type_named(n->decl->type)
               : ET_UNKNOWN;
  case KS_AK_SUBSCRIPT: {
    const ks_anode *base = ks_rt_strip(n->kids[0], false);
    if (!base || base->kind != KS_AK_DECL_REF || !base->decl)
      return ET_UNKNOWN;
    if (base->decl->is_pointer)
      return type_named(base->decl->pointee);
    const char *t = base->decl->type ? base->decl->type : "";
    if (!strncmp(t, "float [", 7) || !strncmp(t, "const float [", 13))
      return ET_F32;
    return ET_UNKNOWN;
  }
  case KS_AK_CALL:
    return n->name && f32_function(n->name) ? ET_F32 : ET_UNKNOWN;
  case KS_AK_CAST:
    return type_named(n->type);
  case KS_AK_UNARY:
    if (n->op && (!strcmp(n->op, "-") || !strcmp(n->op, "+")))
      return expr_type(unit, n->kids[0]);
    return ET_UNKNOWN;
  case KS_AK_BINARY:
    if (n->op && n->nkids == 2 && strchr("+-*/", n->op[0]) && !n->op[1])
      return combine(expr_type(unit, n->kids[0]), expr_type(unit, n->kids[1]));
    return ET_UNKNOWN;
  case KS_AK_CONDITIONAL:
    return n->nkids == 3 ? combine(expr_type(unit, n->kids[1]), expr_type(unit, n->kids[2]))
                         : ET_UNKNOWN;
  default:
    return ET_UNKNOWN;
  }
}

static bool float_division(const char *unit, const ks_anode *a, const ks_anode *b) {
  etype x = expr_type(unit, a), y = expr_type(unit, b);
  return (x == ET_F32 && (y == ET_F32 || y == ET_INT)) || (x == ET_INT && y == ET_F32);
}

/* 1.0f, 1.f, 1.0F, 1 */
static bool is_one(const char *unit, const ks_anode *n) {
  n = ks_rt_strip(n, false);
  if (!n || n->from_macro)
    return false;
  if (n->kind == KS_AK_INT_LITERAL)
    return n->int_value == 1;
  if (n->kind != KS_AK_FLOAT_LITERAL)
    return false;
  char last = unit[n->end - 1];
  return (last == 'f' || last == 'F') && strtod(unit + n->begin, NULL) == 1.0;
}

typedef struct fast_state {
  ks_arena *arena;
  const char *unit;
  size_t replaced;
  bool tanh;
  KS_ARRAY(const char *) what;
} fast_state;

static void note(fast_state *s, const char *what) {
  for (size_t k = 0; k < s->what.len; k++)
    if (!strcmp(s->what.items[k], what))
      return;
  *ks_array_push(s->arena, &s->what) = what;
}

static const char *fast_replace(const ks_anode *n, void *arg);

static const char *render(fast_state *s, const ks_anode *n) {
  ks_buf b = KS_BUF_INIT;
  ks_rt_render(&b, s->unit, n, fast_replace, s);
  const char *r = ks_arena_strdup(s->arena, b.data);
  ks_buf_release(&b);
  return r;
}

static const char *fast_replace(const ks_anode *n, void *arg) {
  fast_state *s = arg;
  if (n->from_macro)
    return NULL;
  if (n->kind == KS_AK_CALL && n->name) {
    size_t len = strlen(n->name);
    if (strncmp(s->unit + n->begin, n->name, len) || n->begin + len > n->end)
      return NULL; /* spelled otherwise (::expf, std::expf) */
    for (size_t k = 0; k < sizeof fast_calls / sizeof *fast_calls; k++)
      if (!strcmp(n->name, fast_calls[k].from)) {
        ks_buf b = KS_BUF_INIT;
        ks_buf_adds(&b, fast_calls[k].to);
        ks_rt_render_range(&b, s->unit, n, n->begin + (unsigned)len, n->end, fast_replace, s);
        const char *r = ks_arena_strdup(s->arena, b.data);
        ks_buf_release(&b);
        s->replaced++;
        s->tanh |= !strcmp(n->name, "tanhf");
        note(s, ks_arena_printf(s->arena, "%s->%s", fast_calls[k].from, fast_calls[k].to));
        return r;
      }
    return NULL;
  }
  if (n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "/") && n->nkids == 2) {
    const ks_anode *den = ks_rt_strip(n->kids[1], false);
    if (is_one(s->unit, n->kids[0]) && den && den->kind == KS_AK_CALL && den->name &&
        !strcmp(den->name, "sqrtf") && den->nkids == 1 && !den->from_macro) {
      s->replaced++;
      note(s, "1/sqrtf->rsqrtf");
      return ks_arena_printf(s->arena, "rsqrtf(%s)", render(s, den->kids[0]));
    }
    if (float_division(s->unit, n->kids[0], n->kids[1])) {
      s->replaced++;
      note(s, "/->__fdividef");
      return ks_arena_printf(s->arena, "__fdividef(%s, %s)", render(s, n->kids[0]),
                             render(s, n->kids[1]));
    }
    return NULL;
  }
  if (n->kind == KS_AK_COMPOUND_ASSIGN && n->op && !strcmp(n->op, "/=") && n->nkids == 2) {
    const ks_anode *lhs = ks_rt_strip(n->kids[0], false);
    if (lhs && lhs->kind == KS_AK_DECL_REF && float_division(s->unit, lhs, n->kids[1]) &&
        expr_type(s->unit, lhs) == ET_F32) {
      s->replaced++;
      note(s, "/->__fdividef");
      return ks_arena_printf(s->arena, "%s = __fdividef(%s, %s)", lhs->name, lhs->name,
                             render(s, n->kids[1]));
    }
  }
  return NULL;
}

/* Why approximate math may not be used for this kernel's outputs, or NULL. */
static const char *tolerance_problem(ks_arena *arena, const ks_rule_input *in) {
  if (!in->timed)
    return "no workload to read the outputs' types and tolerances from";
  size_t outputs = 0;
  for (size_t k = 0; k < in->timed->buffers.len; k++) {
    const ks_wbuffer *b = &in->timed->buffers.items[k];
    if (b->role == KS_ROLE_IN)
      continue;
    outputs++;
    if (!ks_dtype_is_float(b->dtype))
      return ks_arena_printf(arena, "output '%s' is %s, not floating point", b->name,
                             ks_dtype_name(b->dtype));
    double atol, rtol;
    ks_dtype_tolerance(b->dtype, &atol, &rtol);
    if (b->atol < atol || b->rtol < rtol)
      return ks_arena_printf(arena,
                             "output '%s' asks for a tolerance (atol %g, rtol %g) tighter than "
                             "%s's default (atol %g, rtol %g)",
                             b->name, b->atol, b->rtol, ks_dtype_name(b->dtype), atol, rtol);
  }
  return outputs ? NULL : "no output buffer";
}

static int apply_fast_math(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                           ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  const char *why = tolerance_problem(arena, in);
  if (why)
    return ks_rt_not_applicable(arena, out, "%s", why);
  fast_state s = {.arena = arena, .unit = in->unit};
  const ks_anode *body = in->ast->body;
  const char *text = ks_rt_render_str(arena, in->unit, body, fast_replace, &s);
  if (!s.replaced)
    return ks_rt_not_applicable(arena, out,
                                "no single-precision math call or float division to replace");
  ks_edits edits = {0};
  if (s.tanh && !strstr(in->unit, "float ks_fast_tanhf("))
    ks_edits_add(arena, &edits, in->ast->decl_begin - in->variant_offset,
                 in->ast->decl_begin - in->variant_offset,
                 ks_arena_printf(arena, "%s\n", ks_fast_tanhf_source));
  ks_edits_add(arena, &edits, body->begin - in->variant_offset, body->end - in->variant_offset,
               text);
  return ks_rt_finish(ctx, in, arena, &edits, "fast_math", out);
}

const ks_rule ks_rule_fast_math = {
    "fast_math",
    "single-precision math through hardware approximations (__expf, __fdividef, rsqrtf, ...) "
    "where the outputs' tolerances allow",
    false,
    NULL,
    0,
    apply_fast_math};
