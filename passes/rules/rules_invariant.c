/* rules_invariant: the loop reading scalar_replace and hoist_invariant
 * share (rules_invariant.h). */
#include <string.h>

#include "rules_invariant.h"
#include "rules_shape.h"

bool ks_inv_is_loop(const ks_anode *n) {
  return n && (n->kind == KS_AK_FOR || (n->kind == KS_AK_WHILE && n->nkids == 2));
}

const ks_anode *ks_inv_loop_stmt(const ks_anode *loop) {
  const ks_anode *p = loop->parent;
  if (p && p->kind == KS_AK_OTHER && p->nkids == 1 && p->kids[0] == loop)
    return p; /* #pragma unroll's wrapper */
  return loop;
}

ks_rt_nodes ks_inv_loop_parts(ks_arena *arena, const ks_anode *loop) {
  ks_rt_nodes out = {0};
  if (loop->kind == KS_AK_FOR) {
    for (int k = 1; k < 4; k++)
      if (loop->kids[k])
        *ks_array_push(arena, &out) = loop->kids[k];
  } else {
    for (size_t k = 0; k < loop->nkids; k++)
      *ks_array_push(arena, &out) = loop->kids[k];
  }
  return out;
}

bool ks_inv_ref_invariant(const ks_anode *loop, const ks_anode *ref) {
  const ks_anode *d = ref->decl;
  if (!d) {
    /* threadIdx, blockIdx, blockDim, gridDim: the base of a member */
    static const char *const builtins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim",
                                           "warpSize"};
    for (size_t k = 0; k < sizeof builtins / sizeof *builtins; k++)
      if (ref->name && !strcmp(ref->name, builtins[k]))
        return true;
    return false; /* a global, an enumerator: not known here */
  }
  if (d->kind != KS_AK_PARAM && d->kind != KS_AK_VAR)
    return d->kind == KS_AK_TEMPLATE_PARAM;
  if (ks_rt_is_within(d, loop))
    return false; /* declared in the loop: a new value each iteration */
  if (d->kind == KS_AK_VAR && d->type && strchr(d->type, '&'))
    return false; /* a reference may be bound to memory the loop writes */
  return !ks_rt_modified(loop, d);
}

static bool blocked_call(const char *name) {
  static const char *const prefixes[] = {"__sync",   "__threadfence", "atomic", "__shfl",
                                         "__ballot", "__any",         "__all",  "__activemask",
                                         "__match",  "__reduce_",     "__nanosleep", "__stcg",
                                         "__stcs",   "__stwt",        "__stwb", "__ldcv",
                                         "__ldlu",   "sync",          "barrier", "arrive",
                                         "wait",     "memcpy",        "memset", "printf"};
  for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++)
    if (ks_rt_has_prefix(name, prefixes[k]))
      return true;
  return false;
}

const char *ks_inv_body_problem(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop) {
  ks_rt_nodes all = ks_rt_collect(arena, loop);
  for (size_t k = 0; k < all.len; k++) {
    const ks_anode *n = all.items[k];
    if (n->kind == KS_AK_RETURN)
      return "it returns from inside the loop";
    if (n->kind == KS_AK_OTHER && n->kind_name &&
        (!strcmp(n->kind_name, "GotoStmt") || strstr(n->kind_name, "AsmStmt")))
      return ks_arena_printf(arena, "the loop holds %s",
                             strstr(n->kind_name, "Asm") ? "inline asm" : "a goto");
    if (n->kind != KS_AK_CALL)
      continue;
    const char *name = ks_rt_callee(arena, n);
    if (!*name)
      return "the loop calls through a pointer or a member";
    if (blocked_call(name))
      return ks_arena_printf(arena, "the loop calls %s (a barrier, fence, atomic or warp "
                                    "collective)", name);
    if (ks_shape_user_function(in, name))
      return ks_arena_printf(arena, "the loop calls %s, a function of the code's own that may "
                                    "reach any memory", name);
  }
  return NULL;
}

const char *ks_inv_indent(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop) {
  const ks_anode *s = ks_inv_loop_stmt(loop);
  return ks_rt_line_indent(arena, in->unit, ks_rt_begin_with_pragmas(in->unit, s->begin));
}

/* Appends `lines` (each ending with a newline, or each starting with one
 * when `leading`) with `indent` before each line's text. */
static void add_indented(ks_buf *b, const char *lines, const char *indent, bool leading) {
  for (const char *p = lines; *p;) {
    const char *nl = strchr(leading ? p + 1 : p, '\n');
    size_t len = nl ? (size_t)(nl - p) + !leading : strlen(p);
    if (leading) {
      ks_buf_addc(b, '\n');
      ks_buf_adds(b, indent);
      ks_buf_add(b, p + 1, len - 1);
    } else {
      ks_buf_adds(b, indent);
      ks_buf_add(b, p, len);
    }
    p += len;
  }
}

void ks_inv_around(ks_arena *arena, const ks_rule_input *in, const ks_anode *loop,
                   const char *before, const char *after, ks_edits *edits) {
  const ks_anode *s = ks_inv_loop_stmt(loop);
  unsigned begin = ks_rt_begin_with_pragmas(in->unit, s->begin);
  unsigned end = ks_rt_stmt_end_deep(in->unit, s);
  const char *indent = ks_inv_indent(arena, in, loop);
  unsigned line = begin;
  while (line > 0 && (in->unit[line - 1] == ' ' || in->unit[line - 1] == '\t'))
    line--;
  bool own_line = line == 0 || in->unit[line - 1] == '\n';
  /* braces where the loop is not a statement of a block, or shares its
   * line with other code (`if (c) for (...)`) */
  bool braces = !own_line || !s->parent || s->parent->kind != KS_AK_COMPOUND;
  /* braces around the body of an if or loop line up with that statement */
  const char *brace_indent = indent;
  if (own_line && braces && s->parent)
    brace_indent = ks_rt_line_indent(arena, in->unit, s->parent->begin);
  ks_buf b = KS_BUF_INIT;
  if (own_line) {
    if (braces)
      ks_buf_addf(&b, "%s{\n", brace_indent);
    add_indented(&b, before, indent, false);
  } else {
    ks_buf_adds(&b, "{\n");
    add_indented(&b, before, indent, false);
    ks_buf_adds(&b, indent);
  }
  unsigned at = own_line ? line : begin;
  ks_edits_add(arena, edits, ks_rt_src_at(in, at), ks_rt_src_at(in, at),
               ks_arena_strdup(arena, b.data));
  ks_buf_reset(&b);
  add_indented(&b, after, indent, true);
  if (braces)
    ks_buf_addf(&b, "\n%s}", brace_indent);
  ks_edits_add(arena, edits, ks_rt_src_at(in, end), ks_rt_src_at(in, end),
               ks_arena_strdup(arena, b.data ? b.data : ""));
  ks_buf_release(&b);
}

const char *ks_inv_squeezed(ks_arena *arena, const ks_rule_input *in, const ks_anode *n) {
  const char *t = ks_rt_text_of(arena, in, n);
  char *out = ks_arena_alloc(arena, strlen(t) + 1), *o = out;
  for (; *t; t++)
    if (*t != ' ' && *t != '\t' && *t != '\n' && *t != '\r')
      *o++ = *t;
  *o = '\0';
  return out;
}

/* Math functions without side effects or memory reads (CUDA's math API:
 * single precision, double precision and the intrinsics). */
bool ks_inv_pure_math(const char *name) {
  static const char *const fns[] = {
      "expf",   "exp2f",  "exp10f", "expm1f", "logf",   "log2f",  "log10f", "log1pf", "sqrtf",
      "rsqrtf", "cbrtf",  "powf",   "sinf",   "cosf",   "tanf",   "asinf",  "acosf",  "atanf",
      "atan2f", "sinhf",  "coshf",  "tanhf",  "fabsf",  "floorf", "ceilf",  "roundf", "truncf",
      "fmaxf",  "fminf",  "fmodf",  "erff",   "erfcf",  "hypotf", "fmaf",   "sinpif", "cospif",
      "exp",    "exp2",   "exp10",  "expm1",  "log",    "log2",   "log10",  "log1p",  "sqrt",
      "rsqrt",  "cbrt",   "pow",    "sin",    "cos",    "tan",    "asin",   "acos",   "atan",
      "atan2",  "sinh",   "cosh",   "tanh",   "fabs",   "floor",  "ceil",   "round",  "trunc",
      "fmax",   "fmin",   "fmod",   "erf",    "erfc",   "hypot",  "fma",    "sinpi",  "cospi",
      "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__powf", "__sinf", "__cosf",
      "__tanf", "__fdividef", "__frsqrt_rn", "__fsqrt_rn", "__frcp_rn", "__fmul_rn",
      "__fadd_rn", "__fmaf_rn", "__dsqrt_rn", "__drcp_rn"};
  for (size_t k = 0; k < sizeof fns / sizeof *fns; k++)
    if (!strcmp(name, fns[k]))
      return true;
  return false;
}
