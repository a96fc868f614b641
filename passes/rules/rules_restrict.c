/* rules_restrict (with rules_coarsen.c and rules_vectorize.c): rewrites of
 * how a kernel's threads touch memory.
 *
 *   vectorize  each thread handles V consecutive elements with 16-byte
 *              loads and stores, a scalar tail for the rest;
 *   restrict   __restrict__ and const on pointer parameters, reads of
 *              read-only ones through __ldg, under disjoint() guards;
 *   coarsen    each thread does the work of C threads.
 *
 * All three match the kernel's tree structurally (a global index
 * blockIdx * blockDim + threadIdx, a bounds check, accesses p[i]) and edit
 * the text, so they accept the output of the other rules where the pattern
 * is still there, and say why not where it is not. The helpers every rule
 * shares are in rules_tree.c, the shape the three match in rules_shape.c;
 * this file holds restrict. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_shape.h"
#include "rules_tree.h"

/* ---- restrict ----------------------------------------------------------- */

/* Element types __ldg has an overload for (sm_32_intrinsics.h, cuda_fp16,
 * cuda_bf16). */
static bool ldg_type(const char *t) {
  static const char *const types[] = {
      "float", "double", "int", "unsigned int", "unsigned", "char", "signed char",
      "unsigned char", "short", "unsigned short", "long", "unsigned long", "long long",
      "unsigned long long", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
      "int64_t", "uint64_t", "size_t", "float2", "float4", "double2", "int2", "int4", "uint2",
      "uint4", "char2", "char4", "uchar2", "uchar4", "short2", "short4", "ushort2", "ushort4",
      "longlong2", "ulonglong2", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
  };
  for (size_t k = 0; k < sizeof types / sizeof *types; k++)
    if (!strcmp(t, types[k]))
      return true;
  return false;
}

typedef struct restrict_state {
  ks_arena *arena;
  const ks_rule_input *in;
  int depth;
} restrict_state;

static bool ptr_written(restrict_state *s, const ks_anode *e);

/* Is the element `elem` (an lvalue of the buffer) written where it is used? */
static bool elem_written(restrict_state *s, const ks_anode *elem) {
  const ks_anode *c, *p = ks_rt_up(elem, &c);
  if (!p)
    return false;
  switch (p->kind) {
  case KS_AK_BINARY:
    return !strcmp(p->op ? p->op : "", "=") && c == p->kids[0];
  case KS_AK_COMPOUND_ASSIGN:
    return c == p->kids[0];
  case KS_AK_UNARY:
    if (ks_rt_is_op(p, KS_AK_UNARY, "++") || ks_rt_is_op(p, KS_AK_UNARY, "--"))
      return true;
    return ks_rt_is_op(p, KS_AK_UNARY, "&") ? ptr_written(s, p) : false;
  case KS_AK_MEMBER:
    return p->arrow ? false : elem_written(s, p);
  case KS_AK_SUBSCRIPT:
    return c == p->kids[0] ? elem_written(s, p) : false;
  case KS_AK_CALL:
    /* a function of the user's may take it by reference */
    return p->name ? ks_shape_user_function(s->in, p->name) : true;
  case KS_AK_VAR:
    return p->type && strchr(p->type, '&');
  default:
    return false;
  }
}

typedef struct refs_walk {
  const ks_anode *decl;
  KS_ARRAY(const ks_anode *) refs;
  ks_arena *arena;
} refs_walk;

static bool visit_refs(ks_anode *n, void *arg) {
  refs_walk *w = arg;
  if (n->kind == KS_AK_DECL_REF && n->decl == w->decl)
    *ks_array_push(w->arena, &w->refs) = n;
  return true;
}

/* A local pointer that holds an address into the buffer: written through? */
static bool var_written(restrict_state *s, const ks_anode *var) {
  if (s->depth > 8 || ks_rt_modified(s->in->ast->body, var))
    return true;
  refs_walk w = {.decl = var, .arena = s->arena};
  ks_anode_walk(s->in->ast->body, visit_refs, &w);
  s->depth++;
  bool written = false;
  for (size_t k = 0; k < w.refs.len && !written; k++)
    written = ptr_written(s, w.refs.items[k]);
  s->depth--;
  return written;
}

static bool const_pointer_type(const char *type) {
  if (!type)
    return false;
  const char *star = strchr(type, '*');
  return star && !strchr(star + 1, '*') && !strncmp(type, "const ", 6);
}

/* A local pointer whose pointee is not const (its type as written). */
static bool nonconst_local(const ks_anode *var) {
  return var->is_pointer && !var->is_const;
}

/* Is memory written through the pointer value `e` (the parameter, or an
 * address computed from it)? Anything not known to be a read is a write. */
static bool ptr_written(restrict_state *s, const ks_anode *e) {
  const ks_anode *c, *p = ks_rt_up(e, &c);
  if (!p)
    return true;
  switch (p->kind) {
  case KS_AK_SUBSCRIPT:
    return c == p->kids[0] ? elem_written(s, p) : false;
  case KS_AK_UNARY:
    if (ks_rt_is_op(p, KS_AK_UNARY, "*"))
      return elem_written(s, p);
    return !ks_rt_is_op(p, KS_AK_UNARY, "!");
  case KS_AK_MEMBER:
    return p->arrow ? elem_written(s, p) : true;
  case KS_AK_BINARY: {
    static const char *const compare[] = {"==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    for (size_t k = 0; k < sizeof compare / sizeof *compare; k++)
      if (!strcmp(p->op ? p->op : "", compare[k]))
        return false;
    if (ks_rt_is_op(p, KS_AK_BINARY, "+") || ks_rt_is_op(p, KS_AK_BINARY, "-"))
      return ptr_written(s, p);
    if (ks_rt_is_op(p, KS_AK_BINARY, "=") && c == p->kids[1]) {
      const ks_anode *lhs = ks_rt_strip(p->kids[0], false);
      return !(lhs && lhs->kind == KS_AK_DECL_REF && lhs->decl && lhs->decl->kind == KS_AK_VAR &&
               !nonconst_local(lhs->decl) && !var_written(s, lhs->decl));
    }
    return true;
  }
  case KS_AK_CAST:
    return const_pointer_type(p->type) ? false : ptr_written(s, p);
  case KS_AK_CONDITIONAL:
    return c == p->kids[0] ? false : ptr_written(s, p);
  case KS_AK_CALL:
    if (p->name && (!strcmp(p->name, "__ldg") || !strcmp(p->name, "__ldcs") ||
                    !strcmp(p->name, "__ldca") || !strcmp(p->name, "__ldcg") ||
                    !strcmp(p->name, "__ldlu") || !strcmp(p->name, "__ldcv")))
      return false;
    return true;
  case KS_AK_VAR:
    /* A local `T *q = p + i;` would not take a const T * (Rodinia's
     * `LatLong *latLong = d_locations + globalId;`): counted as a write,
     * so p keeps its type, whatever q is used for. */
    return nonconst_local(p) || var_written(s, p);
  default:
    return true;
  }
}

typedef struct ldg_state {
  const char *unit;
  KS_ARRAY(const ks_anode *) subs;   /* p[e] read: __ldg(&p[e]) */
  KS_ARRAY(const ks_anode *) derefs; /* *(const V *)(p + e) read: __ldg((const V *)(p + e)) */
  ks_arena *arena;
} ldg_state;

static const char *ldg_replace(const ks_anode *n, void *arg) {
  ldg_state *s = arg;
  for (size_t k = 0; k < s->subs.len; k++)
    if (s->subs.items[k] == n) {
      ks_buf b = KS_BUF_INIT;
      ks_buf_adds(&b, "__ldg(&");
      ks_rt_render_range(&b, s->unit, n, n->begin, n->end, ldg_replace, s);
      ks_buf_adds(&b, ")");
      const char *r = ks_arena_strdup(s->arena, b.data);
      ks_buf_release(&b);
      return r;
    }
  for (size_t k = 0; k < s->derefs.len; k++)
    if (s->derefs.items[k] == n) {
      ks_buf b = KS_BUF_INIT;
      ks_buf_adds(&b, "__ldg(");
      ks_rt_render(&b, s->unit, n->kids[0], ldg_replace, s);
      ks_buf_adds(&b, ")");
      const char *r = ks_arena_strdup(s->arena, b.data);
      ks_buf_release(&b);
      return r;
    }
  return NULL;
}

/* Reads of a const __restrict__ parameter that __ldg can take. */
static void find_ldg_reads(restrict_state *rs, const ks_anode *param, ldg_state *ls) {
  refs_walk w = {.decl = param, .arena = rs->arena};
  ks_anode_walk(rs->in->ast->body, visit_refs, &w);
  const char *elem = ks_shape_without_const(param->pointee ? param->pointee : "");
  for (size_t k = 0; k < w.refs.len; k++) {
    const ks_anode *ref = w.refs.items[k], *c, *p = ks_rt_up(ref, &c);
    if (!p || ref->from_macro)
      continue;
    if (p->kind == KS_AK_SUBSCRIPT && c == p->kids[0] && !p->from_macro && ldg_type(elem)) {
      const ks_anode *c2, *ctx = ks_rt_up(p, &c2);
      bool plain = !elem_written(rs, p) &&
                   !(ctx && (ctx->kind == KS_AK_MEMBER || ks_rt_is_op(ctx, KS_AK_UNARY, "&")));
      if (plain)
        *ks_array_push(rs->arena, &ls->subs) = p;
      continue;
    }
    /* *reinterpret_cast<const float4 *>(p + e), as vectorize writes it */
    if (ks_rt_is_op(p, KS_AK_BINARY, "+")) {
      const ks_anode *c2, *cast = ks_rt_up(p, &c2);
      if (!cast || cast->kind != KS_AK_CAST || !const_pointer_type(cast->type))
        continue;
      const ks_anode *c3, *deref = ks_rt_up(cast, &c3);
      if (!ks_rt_is_op(deref, KS_AK_UNARY, "*") || deref->from_macro || elem_written(rs, deref))
        continue;
      const ks_anode *c4, *ctx = ks_rt_up(deref, &c4);
      if (ctx && (ctx->kind == KS_AK_MEMBER || ks_rt_is_op(ctx, KS_AK_UNARY, "&")))
        continue;
      char vt[64];
      snprintf(vt, sizeof vt, "%s", cast->type + 6);
      char *star = strchr(vt, '*');
      if (!star)
        continue;
      while (star > vt && star[-1] == ' ')
        star--;
      *star = '\0';
      if (ldg_type(vt))
        *ks_array_push(rs->arena, &ls->derefs) = deref;
    }
  }
}

/* Where the parameter's name starts in its text, or 0. */
static unsigned param_name_at(const ks_rule_input *in, const ks_anode *p) {
  size_t n = strlen(p->name);
  for (unsigned at = p->end; at >= p->begin + n; at--) {
    const char *q = in->unit + at - n;
    if (!strncmp(q, p->name, n) && !ks_ctext_is_ident_char(q[n]) &&
        (q == in->unit || !ks_ctext_is_ident_char(q[-1])))
      return at - (unsigned)n;
  }
  return 0;
}

static int apply_restrict(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                          ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  const ks_kast *ast = in->ast;
  size_t np = ast->nparams;
  bool *written = ks_arena_alloc(arena, (np + 1) * sizeof *written);
  bool *added = ks_arena_alloc(arena, (np + 1) * sizeof *added);
  bool *now_const = ks_arena_alloc(arena, (np + 1) * sizeof *now_const);
  restrict_state rs = {.arena = arena, .in = in};
  ks_edits edits = {0};
  int nconst = 0, nrestrict = 0;
  for (size_t k = 0; k < np; k++) {
    const ks_anode *p = ast->params[k];
    if (!p->is_pointer || !p->name)
      continue;
    written[k] = true;
    const char *pointee = p->pointee ? p->pointee : "";
    const char *ptext = ks_rt_text_of(arena, in, p);
    bool simple = !p->from_macro && !strchr(pointee, '*') && !strchr(pointee, '[') &&
                  !strstr(pointee, "volatile") && strchr(ptext, '*');
    if (!simple)
      continue; /* left alone; still counted as written for the guards */
    written[k] = var_written(&rs, p);
    now_const[k] = p->is_const;
    if (!written[k] && !p->is_const) {
      ks_edits_add(arena, &edits, ks_rt_src_at(in, p->begin), ks_rt_src_at(in, p->begin), "const ");
      now_const[k] = true;
      nconst++;
    }
    if (!p->is_restrict) {
      unsigned at = param_name_at(in, p);
      if (!at)
        continue;
      ks_edits_add(arena, &edits, ks_rt_src_at(in, at), ks_rt_src_at(in, at), "__restrict__ ");
      added[k] = true;
      nrestrict++;
    }
  }
  /* __ldg for the reads of const __restrict__ parameters */
  ldg_state ls = {.unit = in->unit, .arena = arena};
  for (size_t k = 0; k < np; k++) {
    const ks_anode *p = ast->params[k];
    if (p->is_pointer && p->name && now_const[k] && (p->is_restrict || added[k]) && !written[k])
      find_ldg_reads(&rs, p, &ls);
  }
  if (!nconst && !nrestrict && !ls.subs.len && !ls.derefs.len)
    return ks_rt_not_applicable(arena, out,
                                "nothing to add: every pointer parameter is __restrict__, const "
                                "where it is only read, and read through __ldg");
  if (ls.subs.len || ls.derefs.len) {
    const ks_anode *body = ast->body;
    const char *text = ks_rt_render_str(arena, in->unit, body, ldg_replace, &ls);
    ks_edits_add(arena, &edits, ks_rt_src_at(in, body->begin), ks_rt_src_at(in, body->end), text);
  }
  const char *technique = ks_arena_printf(arena, "restrict%s", ls.subs.len || ls.derefs.len ? "+ldg" : "");
  if (ks_rt_finish(ctx, in, arena, &edits, technique, out))
    return -1;
  /* __restrict__ promises that no other pointer reaches what this one
   * writes or what another writes: one disjoint() guard per such pair */
  for (size_t a = 0; a < np; a++)
    for (size_t b = a + 1; b < np; b++) {
      const ks_anode *p = ast->params[a], *q = ast->params[b];
      if (!p->is_pointer || !q->is_pointer || !p->name || !q->name)
        continue;
      if ((added[a] || added[b]) && (written[a] || written[b]))
        ks_rule_require(arena, &out->child,
                        ks_arena_printf(arena, "disjoint(%s, %s)", p->name, q->name));
    }
  return 0;
}

const ks_rule ks_rule_restrict = {
    "restrict",
    "__restrict__ on pointer parameters, const where only read, __ldg for those reads; "
    "guarded by disjoint()",
    false,
    NULL,
    0,
    apply_restrict};
