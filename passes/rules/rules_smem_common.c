/* rules_smem_common: what the two shared-memory rules (smem_histogram in
 * rules_smem_hist.c, smem_transpose in rules_smem_transpose.c) share: one
 * walk over the kernel that collects the facts both need and the refusals
 * both make, bounds read from conditions, and the text helpers of their
 * rewrites. Declared in rules_smem_int.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_smem_int.h"

/* ---- small tree helpers ---------------------------------------------------- */

bool ks_smem_is_builtin(const ks_anode *n, const char *name, char which) {
  n = ks_anode_strip(n, true);
  return n && ks_anode_is_builtin(n, name, which);
}

/* The node's DECL_REF target when it is a pointer parameter, else NULL. */
static const ks_anode *pointer_param(const ks_anode *n) {
  n = ks_anode_strip(n, true);
  if (!n || n->kind != KS_AK_DECL_REF || !n->decl || n->decl->kind != KS_AK_PARAM ||
      !n->decl->is_pointer)
    return NULL;
  return n->decl;
}

/* A memory access p[i], *(p + i), *(i + p) or p + i (the address __ldg
 * takes) on a pointer parameter: the parameter, its DECL_REF and the
 * index. */
const ks_anode *ks_smem_param_access(const ks_anode *n, const ks_anode **ref,
                                     const ks_anode **index) {
  n = ks_anode_strip(n, false);
  if (!n)
    return NULL;
  if (n->kind == KS_AK_UNARY && n->nkids == 1 && n->op && !strcmp(n->op, "*"))
    n = ks_anode_strip(n->kids[0], false);
  if (n->kind == KS_AK_SUBSCRIPT && n->nkids == 2) {
    const ks_anode *p = pointer_param(n->kids[0]);
    if (p) {
      *ref = ks_anode_strip(n->kids[0], true);
      *index = n->kids[1];
    }
    return p;
  }
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op && !strcmp(n->op, "+")) {
    for (int side = 0; side < 2; side++) {
      const ks_anode *p = pointer_param(n->kids[side]);
      if (p) {
        *ref = ks_anode_strip(n->kids[side], true);
        *index = n->kids[1 - side];
        return p;
      }
    }
  }
  return NULL;
}

/* blockIdx.d * blockDim.d + threadIdx.d in any operand order, with casts:
 * the global thread index along d. Hands back the blockDim and threadIdx
 * nodes, which the transpose replaces. */
bool ks_smem_is_gid(const ks_anode *e, char d, const ks_anode **bdim, const ks_anode **tid) {
  e = ks_anode_strip(e, true);
  if (!e || e->kind != KS_AK_BINARY || e->nkids != 2 || !e->op || strcmp(e->op, "+"))
    return false;
  for (int side = 0; side < 2; side++) {
    const ks_anode *t = ks_anode_strip(e->kids[side], true);
    const ks_anode *m = ks_anode_strip(e->kids[1 - side], true);
    if (!ks_smem_is_builtin(t, "threadIdx", d) || !m || m->kind != KS_AK_BINARY || m->nkids != 2 ||
        !m->op || strcmp(m->op, "*"))
      continue;
    for (int f = 0; f < 2; f++)
      if (ks_smem_is_builtin(m->kids[f], "blockIdx", d) &&
          ks_smem_is_builtin(m->kids[1 - f], "blockDim", d)) {
        if (bdim)
          *bdim = ks_anode_strip(m->kids[1 - f], true);
        if (tid)
          *tid = t;
        return true;
      }
  }
  return false;
}

bool ks_smem_read_bound(const ks_anode *c, const ks_anode *var, ks_smem_bound *out) {
  c = ks_anode_strip(c, false);
  if (!c)
    return false;
  if (c->kind == KS_AK_UNARY && c->nkids == 1 && c->op && !strcmp(c->op, "!")) {
    if (!ks_smem_read_bound(c->kids[0], var, out))
      return false;
    /* The same values are in range; the condition now says leaving. */
    out->in_range = !out->in_range;
    return true;
  }
  if (c->kind != KS_AK_BINARY || c->nkids != 2 || !c->op)
    return false;
  const char *op = c->op;
  int side;
  if (ks_rt_refers_to(c->kids[0], var))
    side = 0;
  else if (ks_rt_refers_to(c->kids[1], var))
    side = 1;
  else
    return false;
  /* Written as var OP bound. */
  static const char *const flip[][2] = {{"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
  const char *vop = NULL;
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(op, flip[i][0]))
      vop = side == 0 ? flip[i][0] : flip[i][1];
  if (!vop)
    return false;
  out->bound = c->kids[1 - side];
  out->in_range = vop[0] == '<';
  /* In range below: `<` excludes the bound. Out of range above: `>`
   * keeps the bound in range. */
  out->inclusive = out->in_range ? !strcmp(vop, "<=") : !strcmp(vop, ">");
  return true;
}

/* A bound the launch policy can speak about: literals, casts, arithmetic
 * and scalar parameters (which no code assigns: the collector refuses
 * that). */
bool ks_smem_bound_is_simple(const ks_anode *n) {
  if (!n)
    return true;
  switch (n->kind) {
  case KS_AK_DECL_REF:
    return n->decl && n->decl->kind == KS_AK_PARAM && !n->decl->is_pointer;
  case KS_AK_INT_LITERAL:
  case KS_AK_PAREN:
  case KS_AK_CAST:
    break;
  case KS_AK_BINARY: {
    static const char *const arith[] = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"};
    bool ok = false;
    for (size_t i = 0; n->op && i < sizeof arith / sizeof *arith; i++)
      ok = ok || !strcmp(n->op, arith[i]);
    if (!ok)
      return false;
    break;
  }
  case KS_AK_UNARY:
    if (!n->op || (strcmp(n->op, "-") && strcmp(n->op, "+") && strcmp(n->op, "~")))
      return false;
    break;
  case KS_AK_OTHER:
    if (!ks_rt_is_ref_node(n) && (!n->kind_name || (!strstr(n->kind_name, "Unexposed") &&
                                                    !strstr(n->kind_name, "Implicit"))))
      return false;
    break;
  default:
    return false;
  }
  if (n->from_macro)
    return false;
  for (size_t i = 0; i < n->nkids; i++)
    if (!ks_smem_bound_is_simple(n->kids[i]))
      return false;
  return true;
}

/* ---- what a kernel does: one walk collects the facts both rules need ------ */

/* "threadIdx", "blockIdx", "blockDim" or "gridDim" for a MEMBER of one
 * of them, else NULL. */
const char *ks_smem_builtin_name(const ks_anode *member) {
  static const char *const names[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
  if (member->kind != KS_AK_MEMBER || member->nkids != 1)
    return NULL;
  const ks_anode *b = ks_anode_strip(member->kids[0], false);
  if (!b || b->kind != KS_AK_DECL_REF || b->decl || !b->name)
    return NULL;
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(b->name, names[i]))
      return names[i];
  return NULL;
}

static void refuse(ks_smem_facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(ks_smem_facts *f, const char *fmt, ...) {
  if (f->refuse)
    return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  f->refuse = ks_arena_strdup(f->arena, buf);
}

/* Calls whose effect a rewrite would change: barriers and warp collectives
 * (threads are regrouped), stores and memory functions. */
static const char *const refused_calls[] = {
    "__shfl", "__ballot", "__any", "__all", "__activemask", "__match", "__reduce",
    "__st", "memcpy", "memset", "cuda", "__trap", "malloc", "free",
};

static bool pointer_like(const ks_anode *n) {
  const ks_anode *s = ks_anode_strip(n, false);
  if (!s)
    return false;
  if (s->kind == KS_AK_UNARY && s->op && !strcmp(s->op, "&"))
    return true;
  if (s->kind == KS_AK_CAST && s->type && strchr(s->type, '*'))
    return true;
  s = ks_anode_strip(s, true);
  if (s->kind == KS_AK_DECL_REF && s->decl &&
      (s->decl->is_pointer || (s->decl->type && strchr(s->decl->type, '['))))
    return true;
  if (s->kind == KS_AK_BINARY && s->nkids == 2 && s->op && (!strcmp(s->op, "+") || !strcmp(s->op, "-")))
    return pointer_like(s->kids[0]) || pointer_like(s->kids[1]);
  return false;
}

static void note_call(ks_smem_facts *f, const ks_anode *n) {
  const char *name = n->name ? n->name : "";
  if (!strcmp(name, "atomicAdd")) {
    *ks_array_push(f->arena, &f->atomics) = n;
    return;
  }
  if (strstr(name, "sync") || strstr(name, "barrier")) {
    if (!f->sync)
      f->sync = n;
    return;
  }
  if (ks_rt_has_prefix(name, "atomic") || ks_rt_has_prefix(name, "__atomic")) {
    refuse(f, "writes with %s", name);
    return;
  }
  for (size_t i = 0; i < sizeof refused_calls / sizeof *refused_calls; i++)
    if (ks_rt_has_prefix(name, refused_calls[i])) {
      refuse(f, "calls %s", name);
      return;
    }
  if (!*name) {
    refuse(f, "calls through an expression it cannot name");
    return;
  }
  /* Loads take pointers and write nothing; any other callee given a
   * pointer may write through it. */
  if (ks_rt_has_prefix(name, "__ld"))
    return;
  for (size_t i = 0; i < n->nkids; i++)
    if (pointer_like(n->kids[i])) {
      refuse(f, "passes a pointer to %s (it may write through it)", name);
      return;
    }
}

static void note_write(ks_smem_facts *f, const ks_anode *op, const ks_anode *target) {
  const ks_anode *t = ks_anode_strip(target, true);
  while (t && t->kind == KS_AK_MEMBER && !t->arrow && t->nkids == 1)
    t = ks_anode_strip(t->kids[0], true);
  if (t && t->kind == KS_AK_DECL_REF) {
    if (!t->decl) {
      refuse(f, "assigns '%s', which is not a local variable", t->name ? t->name : "?");
    } else if (t->decl->kind == KS_AK_PARAM) {
      refuse(f, "assigns its parameter '%s'", t->decl->name ? t->decl->name : "?");
    } else if (t->decl->type && strchr(t->decl->type, '&')) {
      refuse(f, "writes through the reference '%s'", t->decl->name ? t->decl->name : "?");
    } else {
      *ks_array_push(f->arena, &f->written) = t->decl;
    }
    return;
  }
  *ks_array_push(f->arena, &f->stores) = op;
}

static bool collect(ks_anode *n, void *arg) {
  ks_smem_facts *f = arg;
  switch (n->kind) {
  case KS_AK_VAR:
    if (n->shared_space && !f->shared)
      f->shared = n;
    break;
  case KS_AK_ATTR:
    if (n->name && (strstr(n->name, "aunch_bounds") || strstr(n->name, "aunchBounds")))
      f->bounds_attr = n;
    break;
  case KS_AK_CALL:
    note_call(f, n);
    break;
  case KS_AK_BINARY:
    if (n->op && !strcmp(n->op, "=") && n->nkids == 2)
      note_write(f, n, n->kids[0]);
    break;
  case KS_AK_COMPOUND_ASSIGN:
    if (n->nkids == 2)
      note_write(f, n, n->kids[0]);
    break;
  case KS_AK_UNARY:
    if (n->op && (!strcmp(n->op, "++") || !strcmp(n->op, "--")) && n->nkids == 1)
      note_write(f, n, n->kids[0]);
    else if (n->op && !strcmp(n->op, "&") && n->nkids == 1) {
      /* The address of a local may be written through later. */
      const ks_anode *t = ks_anode_strip(n->kids[0], true);
      if (t && t->kind == KS_AK_DECL_REF && t->decl && t->decl->kind == KS_AK_VAR)
        *ks_array_push(f->arena, &f->written) = t->decl;
    }
    break;
  case KS_AK_MEMBER:
    if (ks_smem_builtin_name(n))
      *ks_array_push(f->arena, &f->builtins) = n;
    break;
  case KS_AK_RETURN:
    *ks_array_push(f->arena, &f->returns) = n;
    break;
  case KS_AK_DECL_REF:
    if (n->decl && n->decl->kind == KS_AK_PARAM && n->decl->is_pointer)
      *ks_array_push(f->arena, &f->pointer_refs) = n;
    break;
  case KS_AK_OTHER: {
    static const char *const bad[] = {"Asm", "Goto", "Lambda", "New", "Delete", "Throw"};
    for (size_t i = 0; n->kind_name && i < sizeof bad / sizeof *bad; i++)
      if (strstr(n->kind_name, bad[i]))
        refuse(f, "has a construct it cannot rewrite (%s)", n->kind_name);
    break;
  }
  default:
    break;
  }
  return true;
}

static void collect_facts(const ks_rule_input *in, ks_arena *arena, ks_smem_facts *f) {
  memset(f, 0, sizeof *f);
  f->arena = arena;
  ks_anode_walk(in->ast->root, collect, f);
}

bool ks_smem_is_written(const ks_smem_facts *f, const ks_anode *var) {
  for (size_t i = 0; i < f->written.len; i++)
    if (f->written.items[i] == var)
      return true;
  return false;
}

/* ---- text helpers ------------------------------------------------------- */

/* The end of a statement, including the ';' that expression statements
 * (and ifs whose branch is one) leave outside their extent. */
unsigned ks_smem_stmt_end(const ks_smem_rewrite *w, const ks_anode *n) {
  unsigned e = n->end;
  const char *p = w->unit + e;
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p == ';')
    return (unsigned)(p - w->unit) + 1;
  return e;
}

/* The leading white space of the line holding `at`, if only white space
 * precedes `at` there. */
const char *ks_smem_line_indent(const ks_smem_rewrite *w, unsigned at) {
  unsigned b = at;
  while (b > 0 && w->unit[b - 1] != '\n')
    b--;
  for (unsigned i = b; i < at; i++)
    if (w->unit[i] != ' ' && w->unit[i] != '\t')
      return NULL;
  return ks_arena_strndup(w->arena, w->unit + b, at - b);
}

/* An expression as an operand of `*` or `>=`: bare when it is a name, a
 * number or a call, else in parentheses. */
const char *ks_smem_operand(ks_arena *arena, const char *e) {
  size_t n = strlen(e);
  bool plain = n > 0;
  for (size_t i = 0; i < n && plain; i++)
    plain = ks_ctext_is_ident_char(e[i]);
  if (!plain && n > 1 && e[n - 1] == ')') {
    const char *open = strchr(e, '(');
    if (open && open > e && ks_ctext_is_ident_char(open[-1]) && ks_ctext_matching(open, e + n) == e + n - 1)
      plain = true;
  }
  return plain ? e : ks_arena_printf(arena, "(%s)", e);
}

/* The type without top-level const and volatile ("const float" -> "float"). */
const char *ks_smem_unqualified(ks_arena *arena, const char *type) {
  ks_buf b = KS_BUF_INIT;
  const char *p = type;
  while (*p) {
    while (*p == ' ')
      p++;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    size_t len = (size_t)(p - w);
    if ((len == 5 && !strncmp(w, "const", 5)) || (len == 8 && !strncmp(w, "volatile", 8)) || !len)
      continue;
    if (b.len)
      ks_buf_addc(&b, ' ');
    ks_buf_add(&b, w, len);
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

int ks_smem_no(ks_rule_result *out, ks_arena *arena, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out->applied = false;
  out->reason = ks_arena_strdup(arena, buf);
  return 0;
}

/* `requires` for a loop or tile that may visit indices the original launch
 * never reached: the original launch must cover everything the bound
 * admits. */
const char *ks_smem_cover_guard(const ks_smem_rewrite *w, const char *grid, const char *block,
                                const ks_smem_bound *b) {
  return ks_arena_printf(
      w->arena, "%s * %s %s %s", ks_smem_operand(w->arena, grid), ks_smem_operand(w->arena, block),
      b->inclusive ? ">" : ">=",
      ks_smem_operand(w->arena, ks_rt_text_of(w->arena, w->in, ks_anode_strip(b->bound, false))));
}

static bool rewrite_init(const ks_rule_input *in, ks_arena *arena, ks_smem_rewrite *w) {
  w->in = in;
  w->arena = arena;
  w->unit = in->unit;
  w->vo = in->variant_offset;
  w->indent = "    ";
  const ks_anode *body = in->ast->body;
  if (!body || body->kind != KS_AK_COMPOUND || body->begin < w->vo || w->unit[body->begin] != '{' ||
      w->unit[body->end - 1] != '}')
    return false;
  for (size_t i = 0; i < body->nkids; i++)
    if (body->kids[i]) {
      const char *ind = ks_smem_line_indent(w, body->kids[i]->begin);
      if (ind && *ind)
        w->indent = ind;
      break;
    }
  return true;
}

/* `if (C) return;` or `if (C) { return; }`. */
bool ks_smem_is_return_guard(const ks_anode *st) {
  if (!st || st->kind != KS_AK_IF || st->nkids != 2)
    return false;
  const ks_anode *t = st->kids[1];
  if (t && t->kind == KS_AK_COMPOUND && t->nkids == 1)
    t = t->kids[0];
  return t && t->kind == KS_AK_RETURN && t->nkids == 0;
}

/* What refuses both rules before their own patterns are looked at: a
 * rewrite site we cannot edit, shared memory, barriers, and (in the kernel
 * or the device functions it calls) collectives or other uses of the
 * thread mapping. NULL when none. */
const char *ks_smem_refusal(const ks_rule_input *in, ks_arena *arena, ks_smem_rewrite *w,
                            ks_smem_facts *f) {
  if (!rewrite_init(in, arena, w))
    return "the kernel's body is not where the parent's source is";
  collect_facts(in, arena, f);
  if (f->shared)
    return ks_arena_printf(arena, "already uses shared memory ('%s')",
                           f->shared->name ? f->shared->name : "?");
  if (f->sync)
    return ks_arena_printf(arena, "already synchronizes (%s)",
                           f->sync->name ? f->sync->name : "a barrier");
  if (f->refuse)
    return f->refuse;
  unsigned everywhere[2] = {in->ast->body->begin, in->ast->body->end};
  return ks_rt_mapping_problem(arena, in, everywhere, 1);
}
