/* footprint_change: what may change a variable behind the analysis's back,
 * and what a call does with its arguments.
 *
 * An assignment, ++/--, a taken address, a reference bound to it, an asm
 * operand, or an argument to a function that may take it by reference
 * (known by-value functions, atomics and cache-hinted loads, or the unit's
 * one definition of the callee with that parameter not a reference).
 * Operators the tree left unread inside macros count as assignments unless
 * read back. */
#include <string.h>

#include "footprint_int.h"
#include "ks_ctext.h"

/* Atomics (one element, read and written), cache-hinted loads and stores. */
int fp_call_kind(fp_state *st, const ks_anode *call) {
  const char *name = ks_rt_callee(st->arena, call);
  static const char *const atomics[] = {"atomicAdd", "atomicSub", "atomicExch", "atomicMin",
                                        "atomicMax", "atomicInc", "atomicDec",  "atomicCAS",
                                        "atomicAnd", "atomicOr",  "atomicXor"};
  for (size_t i = 0; i < sizeof atomics / sizeof *atomics; i++) {
    size_t n = strlen(atomics[i]);
    if (!strncmp(name, atomics[i], n) &&
        (!name[n] || !strcmp(name + n, "_block") || !strcmp(name + n, "_system")))
      return 3;
  }
  static const char *const loads[] = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"};
  static const char *const stores[] = {"__stwb", "__stcg", "__stcs", "__stwt"};
  for (size_t i = 0; i < 6; i++)
    if (!strcmp(name, loads[i]))
      return 1;
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(name, stores[i]))
      return 2;
  return 0;
}

/* Functions that take their arguments by value and change nothing. */
static bool value_function(const char *name) {
  static const char *const fns[] = {
      "expf",    "exp",      "exp2f",    "expm1f",    "logf",     "log",      "log2f",
      "log10f",  "log1pf",   "sqrtf",    "sqrt",      "rsqrtf",   "rsqrt",    "cbrtf",
      "powf",    "pow",      "sinf",     "cosf",      "tanf",     "sin",      "cos",
      "tanh",    "tanhf",    "erff",     "erf",       "erfcf",    "fabsf",    "fabs",
      "abs",     "fmaxf",    "fminf",    "fmax",      "fmin",     "max",      "min",
      "umin",    "umax",     "llmin",    "llmax",     "floorf",   "ceilf",    "floor",
      "ceil",    "roundf",   "truncf",   "fmaf",      "fma",      "__expf",   "__logf",
      "__powf",  "__sinf",   "__cosf",   "__tanf",    "__fdividef", "__frcp_rn", "__fsqrt_rn",
      "__fmaf_rn", "__float2half", "__half2float", "__float2bfloat16", "__bfloat162float",
      "__hadd",  "__hmul",   "__hfma",   "__shfl_sync", "__shfl_down_sync", "__shfl_xor_sync",
      "__shfl_up_sync", "isnan", "isinf", "isfinite", "signbit", "copysignf", "__saturatef",
      "__int_as_float", "__float_as_int", "__popc", "__clz", "__ffs", "__mul24", "__umul24",
      "__float2int_rn", "__int2float_rn", "rintf", "lrintf", "nearbyintf", "hypotf",
      "atan2f",  "atanf",    "asinf",    "acosf",     "sinhf",    "coshf",    "__syncthreads_or",
      "__syncthreads_and", "__syncthreads_count", "__any_sync", "__all_sync", "__ballot_sync"};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (!strcmp(name, fns[i]))
      return true;
  return false;
}

/* Does the unit's one definition of `name` take argument `arg` by value? */
static bool by_value_uncached(fp_state *st, const ks_anode *call, const char *name, size_t arg);

bool fp_by_value(fp_state *st, const ks_anode *call, size_t arg) {
  const char *name = ks_rt_callee(st->arena, call);
  if (value_function(name) || fp_call_kind(st, call))
    return true; /* an atomic's address is a pointer passed by value */
  for (size_t i = 0; i < st->by_value.len; i++)
    if (st->by_value.items[i].arg == arg && !strcmp(st->by_value.items[i].name, name))
      return st->by_value.items[i].yes;
  bool yes = by_value_uncached(st, call, name, arg);
  *ks_array_push(st->arena, &st->by_value) = (fp_by_value_memo){name, arg, yes};
  return yes;
}

static bool by_value_uncached(fp_state *st, const ks_anode *call, const char *name, size_t arg) {
  (void)call;
  const char *src = st->k->source, *end = src + st->k->source_len;
  const char *body, *body_end, *found = NULL;
  int defs = 0;
  for (const char *from = src; from < end;) {
    if (!ks_rt_find_definition(from, end, name, &body, &body_end, NULL, NULL))
      break;
    defs++;
    found = body;
    from = body_end + 1;
  }
  if (defs != 1)
    return false;
  /* The parameter list: the parenthesized text right before the body. */
  const char *close = found;
  while (close > src && *close != ')')
    close--;
  int depth = 0;
  const char *open = close;
  for (; open > src; open--) {
    depth += *open == ')';
    depth -= *open == '(';
    if (!depth)
      break;
  }
  ks_strings params = {0};
  ks_ctext_split(st->arena, open + 1, close, &params);
  if (arg >= params.len)
    return false;
  return !strchr(params.items[arg], '&') && !strstr(params.items[arg], "...");
}

/* A member call's object (`acc.add(v)`, `p->f()`): the callee text as
 * written, when it has one. The object is hidden from the tree; an integer
 * cannot be one, a pointer's pointee can. */
const char *fp_member_callee(fp_state *st, const ks_anode *call) {
  if (call->kind != KS_AK_CALL || call->name_end <= call->name_begin)
    return NULL;
  const char *t = ks_arena_strndup(st->arena, st->k->source + call->name_begin,
                                   call->name_end - call->name_begin);
  return strchr(t, '.') || strstr(t, "->") ? t : NULL;
}

/* A DECL_REF to `decl` through parentheses and casts. */
static bool names(const ks_anode *n, const ks_anode *decl) {
  n = ks_rt_strip(n, true);
  return n && n->kind == KS_AK_DECL_REF && n->decl == decl;
}

bool fp_is_target(fp_state *st, const ks_anode *n, const ks_anode *decl) {
  if (!n->nkids || !names(n->kids[0], decl))
    return false;
  if (n->kind == KS_AK_COMPOUND_ASSIGN)
    return true;
  if (n->kind != KS_AK_BINARY && n->kind != KS_AK_UNARY)
    return false;
  /* An operator left unread inside a macro may be an assignment. */
  const char *keep = st->why;
  const char *op = fp_op_of(st, n);
  st->why = keep;
  if (n->kind == KS_AK_BINARY)
    return !strcmp(op, "=") || !strcmp(op, "?");
  return !strcmp(op, "++") || !strcmp(op, "--") || !strcmp(op, "&") || !strcmp(op, "?");
}

/* The output operands of an asm statement: the text between its first and
 * second top-level ':' (unknown inside a macro). */
static bool asm_outputs(fp_state *st, const ks_anode *n, unsigned *from, unsigned *to) {
  if (n->from_macro)
    return false;
  const char *src = st->k->source, *p = src + n->begin, *end = src + n->end;
  int depth = 0, colons = 0;
  for (; p < end; p++) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q - 1;
      continue;
    }
    if (*p == '(')
      depth++;
    else if (*p == ')')
      depth--;
    else if (*p == ':' && depth == 1 && !(p + 1 < end && p[1] == ':') && !(p > src && p[-1] == ':')) {
      if (colons == 0)
        *from = (unsigned)(p - src);
      else if (colons == 1)
        *to = (unsigned)(p - src);
      colons++;
    }
  }
  if (colons == 1)
    *to = n->end;
  return colons >= 1;
}

bool fp_modified_except(fp_state *st, const ks_anode *root, const ks_anode *decl,
                        const ks_anode *except) {
  ks_rt_nodes all = ks_rt_collect(st->arena, root);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    if (n != except && fp_is_target(st, n, decl))
      return true;
    if (n->kind == KS_AK_CALL) {
      for (size_t a = 0; a < n->nkids; a++)
        if (names(n->kids[a], decl) && !fp_by_value(st, n, a))
          return true;
    }
    if (n->kind == KS_AK_VAR && n->type && strchr(n->type, '&')) {
      const ks_anode *init = ks_rt_var_init(n);
      if (init && names(init, decl))
        return true;
    }
    /* An asm statement's output operands change what they name. */
    if (n->kind == KS_AK_OTHER && n->kind_name && strstr(n->kind_name, "Asm")) {
      unsigned from, to;
      bool known = asm_outputs(st, n, &from, &to);
      ks_rt_nodes in = ks_rt_collect(st->arena, n);
      for (size_t k = 0; k < in.len; k++)
        if (in.items[k]->kind == KS_AK_DECL_REF && in.items[k]->decl == decl &&
            (!known || (in.items[k]->begin >= from && in.items[k]->begin < to)))
          return true;
    }
  }
  return false;
}

bool fp_modified(fp_state *st, const ks_anode *root, const ks_anode *decl) {
  return fp_modified_except(st, root, decl, NULL);
}

