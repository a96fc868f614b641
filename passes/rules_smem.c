/* rules_smem: two rewrites that stage data in shared memory.
 *
 * smem_histogram: a kernel whose only global writes are
 * atomicAdd(&bins[key], v) into an integer buffer gets a private histogram
 * per block in shared memory (zeroed, __syncthreads, the atomics go there,
 * __syncthreads, the non-zero bins added to global memory), and a grid-stride
 * loop over the elements so each block counts many of them; the grid becomes
 * min(current grid, sm_count * param). The bins are a static array when every
 * key's type bounds it (an 8-bit key: 256), otherwise dynamic shared memory
 * sized by the bins buffer's spec length, whose bin count the kernel reads
 * back from %dynamic_smem_size.
 *
 * smem_transpose: a 2-D kernel storing out[f(x, y)] = value(in[g(y, x)])
 * once per thread, the read contiguous along x and the write along y (the
 * naive transpose), becomes the tiled transpose: a T x (T + 1) tile, block
 * (T, R), each thread loading and then storing T / R elements with the roles
 * of x and y swapped. param encodes T and R as T * 100 + R (3208: 32 x 8).
 *
 * Both read the tree structurally (casts, parentheses, operand order, __ldg
 * and __restrict__ from other rules do not matter) and refuse, with the
 * reason, whatever they cannot prove they keep: other writes, barriers,
 * shared memory already there, warp collectives, uses of blockIdx or
 * gridDim beyond the index computation, returns they cannot turn into
 * `continue`. The rewrites keep the user's statements as written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "rules_int.h"
#include "rules_tree.h"

typedef KS_ARRAY(const ks_anode *) node_list;

/* ---- small tree helpers ---------------------------------------------------- */

static const ks_anode *strip(const ks_anode *n) { return n ? ks_anode_strip(n, false) : NULL; }
static const ks_anode *strip_casts(const ks_anode *n) { return n ? ks_anode_strip(n, true) : NULL; }

/* TypeRef, TemplateRef, NamespaceRef: children of casts and declarations
 * that are not operands. */
static bool is_ref_node(const ks_anode *n) {
  if (n->kind != KS_AK_OTHER || !n->kind_name)
    return false;
  size_t len = strlen(n->kind_name);
  return len > 3 && !strcmp(n->kind_name + len - 3, "Ref");
}

static bool is_within(const ks_anode *n, const ks_anode *root) {
  for (; n; n = n->parent)
    if (n == root)
      return true;
  return false;
}

static bool is_builtin(const ks_anode *n, const char *name, char which) {
  n = strip_casts(n);
  return n && ks_anode_is_builtin(n, name, which);
}

/* The node's DECL_REF target when it is a pointer parameter, else NULL. */
static const ks_anode *pointer_param(const ks_anode *n) {
  n = strip_casts(n);
  if (!n || n->kind != KS_AK_DECL_REF || !n->decl || n->decl->kind != KS_AK_PARAM ||
      !n->decl->is_pointer)
    return NULL;
  return n->decl;
}

/* A memory access p[i], *(p + i), *(i + p) or p + i (the address __ldg
 * takes) on a pointer parameter: the parameter, its DECL_REF and the
 * index. */
static const ks_anode *param_access(const ks_anode *n, const ks_anode **ref, const ks_anode **index) {
  n = strip(n);
  if (!n)
    return NULL;
  if (n->kind == KS_AK_UNARY && n->nkids == 1 && n->op && !strcmp(n->op, "*"))
    n = strip(n->kids[0]);
  if (n->kind == KS_AK_SUBSCRIPT && n->nkids == 2) {
    const ks_anode *p = pointer_param(n->kids[0]);
    if (p) {
      *ref = strip_casts(n->kids[0]);
      *index = n->kids[1];
    }
    return p;
  }
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op && !strcmp(n->op, "+")) {
    for (int side = 0; side < 2; side++) {
      const ks_anode *p = pointer_param(n->kids[side]);
      if (p) {
        *ref = strip_casts(n->kids[side]);
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
static bool is_gid(const ks_anode *e, char d, const ks_anode **bdim, const ks_anode **tid) {
  e = strip_casts(e);
  if (!e || e->kind != KS_AK_BINARY || e->nkids != 2 || !e->op || strcmp(e->op, "+"))
    return false;
  for (int side = 0; side < 2; side++) {
    const ks_anode *t = strip_casts(e->kids[side]);
    const ks_anode *m = strip_casts(e->kids[1 - side]);
    if (!is_builtin(t, "threadIdx", d) || !m || m->kind != KS_AK_BINARY || m->nkids != 2 ||
        !m->op || strcmp(m->op, "*"))
      continue;
    for (int f = 0; f < 2; f++)
      if (is_builtin(m->kids[f], "blockIdx", d) && is_builtin(m->kids[1 - f], "blockDim", d)) {
        if (bdim)
          *bdim = strip_casts(m->kids[1 - f]);
        if (tid)
          *tid = t;
        return true;
      }
  }
  return false;
}

/* The one VAR of a declaration statement, or NULL. */
static const ks_anode *single_var(const ks_anode *stmt) {
  if (!stmt || stmt->kind != KS_AK_DECL_STMT)
    return NULL;
  const ks_anode *var = NULL;
  for (size_t i = 0; i < stmt->nkids; i++) {
    if (!stmt->kids[i] || stmt->kids[i]->kind != KS_AK_VAR)
      continue;
    if (var)
      return NULL;
    var = stmt->kids[i];
  }
  return var;
}

/* Splits a condition at a top-level && (or ||) into its operands. */
static void split_chain(ks_arena *arena, const ks_anode *c, const char *op, node_list *out) {
  c = strip(c);
  if (c && c->kind == KS_AK_BINARY && c->nkids == 2 && c->op && !strcmp(c->op, op)) {
    split_chain(arena, c->kids[0], op, out);
    split_chain(arena, c->kids[1], op, out);
  } else if (c) {
    *ks_array_push(arena, out) = c;
  }
}

/* A comparison of `var` with a bound. `in_range`: the condition holds
 * while var is below the bound (var < B, var <= B, B > var, B >= var);
 * otherwise it holds once var has passed it (var >= B, ...). `inclusive`:
 * the bound itself is in range. */
typedef struct bound_cmp {
  const ks_anode *bound;
  bool in_range;
  bool inclusive;
} bound_cmp;

static bool read_bound(const ks_anode *c, const ks_anode *var, bound_cmp *out) {
  c = strip(c);
  if (!c)
    return false;
  if (c->kind == KS_AK_UNARY && c->nkids == 1 && c->op && !strcmp(c->op, "!")) {
    if (!read_bound(c->kids[0], var, out))
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
static bool bound_is_simple(const ks_anode *n) {
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
    if (!is_ref_node(n) && (!n->kind_name || (!strstr(n->kind_name, "Unexposed") &&
                                              !strstr(n->kind_name, "Implicit"))))
      return false;
    break;
  default:
    return false;
  }
  if (n->from_macro)
    return false;
  for (size_t i = 0; i < n->nkids; i++)
    if (!bound_is_simple(n->kids[i]))
      return false;
  return true;
}

/* ---- what a kernel does: one walk collects the facts both rules need ------ */

typedef struct facts {
  ks_arena *arena;
  const char *refuse;         /* the first construct neither rule rewrites */
  const ks_anode *shared;     /* a __shared__ variable */
  const ks_anode *sync;       /* a barrier */
  const ks_anode *bounds_attr;/* __launch_bounds__ */
  node_list atomics;          /* atomicAdd calls */
  node_list stores;           /* assignments to memory */
  node_list returns;
  node_list builtins;         /* blockIdx.x, gridDim.y, ... */
  node_list written;          /* local VARs assigned after their declaration */
  node_list pointer_refs;     /* DECL_REFs of pointer parameters */
} facts;

/* "threadIdx", "blockIdx", "blockDim" or "gridDim" for a MEMBER of one
 * of them, else NULL. */
static const char *builtin_name(const ks_anode *member) {
  static const char *const names[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
  if (member->kind != KS_AK_MEMBER || member->nkids != 1)
    return NULL;
  const ks_anode *b = strip(member->kids[0]);
  if (!b || b->kind != KS_AK_DECL_REF || b->decl || !b->name)
    return NULL;
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(b->name, names[i]))
      return names[i];
  return NULL;
}

static void refuse(facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(facts *f, const char *fmt, ...) {
  if (f->refuse)
    return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  f->refuse = ks_arena_strdup(f->arena, buf);
}

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* Calls whose effect a rewrite would change: barriers and warp collectives
 * (threads are regrouped), stores and memory functions. */
static const char *const refused_calls[] = {
    "__shfl", "__ballot", "__any", "__all", "__activemask", "__match", "__reduce",
    "__st", "memcpy", "memset", "cuda", "__trap", "malloc", "free",
};

static bool pointer_like(const ks_anode *n) {
  const ks_anode *s = strip(n);
  if (!s)
    return false;
  if (s->kind == KS_AK_UNARY && s->op && !strcmp(s->op, "&"))
    return true;
  if (s->kind == KS_AK_CAST && s->type && strchr(s->type, '*'))
    return true;
  s = strip_casts(s);
  if (s->kind == KS_AK_DECL_REF && s->decl &&
      (s->decl->is_pointer || (s->decl->type && strchr(s->decl->type, '['))))
    return true;
  if (s->kind == KS_AK_BINARY && s->nkids == 2 && s->op && (!strcmp(s->op, "+") || !strcmp(s->op, "-")))
    return pointer_like(s->kids[0]) || pointer_like(s->kids[1]);
  return false;
}

static void note_call(facts *f, const ks_anode *n) {
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
  if (has_prefix(name, "atomic") || has_prefix(name, "__atomic")) {
    refuse(f, "writes with %s", name);
    return;
  }
  for (size_t i = 0; i < sizeof refused_calls / sizeof *refused_calls; i++)
    if (has_prefix(name, refused_calls[i])) {
      refuse(f, "calls %s", name);
      return;
    }
  if (!*name) {
    refuse(f, "calls through an expression it cannot name");
    return;
  }
  /* Loads take pointers and write nothing; any other callee given a
   * pointer may write through it. */
  if (has_prefix(name, "__ld"))
    return;
  for (size_t i = 0; i < n->nkids; i++)
    if (pointer_like(n->kids[i])) {
      refuse(f, "passes a pointer to %s (it may write through it)", name);
      return;
    }
}

static void note_write(facts *f, const ks_anode *op, const ks_anode *target) {
  const ks_anode *t = strip_casts(target);
  while (t && t->kind == KS_AK_MEMBER && !t->arrow && t->nkids == 1)
    t = strip_casts(t->kids[0]);
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
  facts *f = arg;
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
      const ks_anode *t = strip_casts(n->kids[0]);
      if (t && t->kind == KS_AK_DECL_REF && t->decl && t->decl->kind == KS_AK_VAR)
        *ks_array_push(f->arena, &f->written) = t->decl;
    }
    break;
  case KS_AK_MEMBER:
    if (builtin_name(n))
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

static void collect_facts(const ks_rule_input *in, ks_arena *arena, facts *f) {
  memset(f, 0, sizeof *f);
  f->arena = arena;
  ks_anode_walk(in->ast->root, collect, f);
}

static bool is_written(const facts *f, const ks_anode *var) {
  for (size_t i = 0; i < f->written.len; i++)
    if (f->written.items[i] == var)
      return true;
  return false;
}

/* ---- text helpers ------------------------------------------------------- */

typedef struct rewrite {
  const ks_rule_input *in;
  ks_arena *arena;
  const char *unit;
  size_t vo;       /* where the parent's source starts in the unit */
  const char *indent; /* one level, as the body's first statement has it */
} rewrite;

static const char *node_text(const rewrite *w, const ks_anode *n) {
  return ks_arena_strndup(w->arena, w->unit + n->begin, n->end - n->begin);
}

/* The end of a statement, including the ';' that expression statements
 * (and ifs whose branch is one) leave outside their extent. */
static unsigned stmt_end(const rewrite *w, const ks_anode *n) {
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
static const char *line_indent(const rewrite *w, unsigned at) {
  unsigned b = at;
  while (b > 0 && w->unit[b - 1] != '\n')
    b--;
  for (unsigned i = b; i < at; i++)
    if (w->unit[i] != ' ' && w->unit[i] != '\t')
      return NULL;
  return ks_arena_strndup(w->arena, w->unit + b, at - b);
}

/* `text` with `extra` added after every newline (not before empty lines). */
static const char *indent_lines(ks_arena *arena, const char *text, const char *extra) {
  ks_buf b = KS_BUF_INIT;
  for (const char *p = text; *p; p++) {
    ks_buf_addc(&b, *p);
    if (*p == '\n' && p[1] && p[1] != '\n')
      ks_buf_adds(&b, extra);
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

/* The unit's text [begin, end) with edits whose offsets are into the unit. */
static const char *edited_range(ks_ctx *ctx, const rewrite *w, unsigned begin, unsigned end,
                                const ks_edits *unit_edits) {
  ks_edits local = {0};
  for (size_t i = 0; i < unit_edits->len; i++) {
    const ks_edit *e = &unit_edits->items[i];
    if (e->begin >= begin && e->end <= end)
      ks_edits_add(w->arena, &local, e->begin - begin, e->end - begin, e->text);
  }
  const char *text = ks_arena_strndup(w->arena, w->unit + begin, end - begin);
  return ks_edits_apply(ctx, w->arena, text, &local);
}

/* An expression as an operand of `*` or `>=`: bare when it is a name, a
 * number or a call, else in parentheses. */
static const char *operand(ks_arena *arena, const char *e) {
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
static const char *unqualified(ks_arena *arena, const char *type) {
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

static int no(ks_rule_result *out, ks_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int no(ks_rule_result *out, ks_arena *arena, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out->applied = false;
  out->reason = ks_arena_strdup(arena, buf);
  return 0;
}

/* Whether a guard evaluates at the timed size: it names only what the
 * policy knows (a bound that uses a macro or a local does not). */
/* `requires` for a loop or tile that may visit indices the original launch
 * never reached: the original launch must cover everything the bound
 * admits. */
static const char *cover_guard(const rewrite *w, const char *grid, const char *block,
                               const bound_cmp *b) {
  return ks_arena_printf(w->arena, "%s * %s %s %s", operand(w->arena, grid),
                         operand(w->arena, block), b->inclusive ? ">" : ">=",
                         operand(w->arena, node_text(w, strip(b->bound))));
}

static bool launch_bound_fits(const rewrite *w, const facts *f, long long threads) {
  if (!f->bounds_attr)
    return true;
  const char *text = node_text(w, f->bounds_attr);
  const char *open = strchr(text, '(');
  const char *p = open ? open + 1 : text;
  while (*p == '(' || *p == ' ')
    p++;
  char *end;
  long long limit = strtoll(p, &end, 0);
  return end != p && limit >= threads;
}

static bool rewrite_init(const ks_rule_input *in, ks_arena *arena, rewrite *w) {
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
      const char *ind = line_indent(w, body->kids[i]->begin);
      if (ind && *ind)
        w->indent = ind;
      break;
    }
  return true;
}

/* ---- smem_histogram --------------------------------------------------------- */

static bool is_u8(ks_arena *arena, const char *type) {
  if (!type)
    return false;
  const char *t = unqualified(arena, type);
  return !strcmp(t, "unsigned char") || !strcmp(t, "uint8_t") || !strcmp(t, "std::uint8_t") ||
         !strcmp(t, "uchar") || !strcmp(t, "u_char");
}

static bool is_u8_vector(ks_arena *arena, const char *type) {
  if (!type)
    return false;
  const char *t = unqualified(arena, type);
  return !strcmp(t, "uchar1") || !strcmp(t, "uchar2") || !strcmp(t, "uchar3") ||
         !strcmp(t, "uchar4");
}

/* A pointer expression to 8-bit unsigned elements: p, p + i, &p[i]. */
static bool points_to_u8(ks_arena *arena, const ks_anode *n) {
  n = strip(n);
  if (!n)
    return false;
  if (n->kind == KS_AK_CAST)
    return n->type && strchr(n->type, '*') && is_u8(arena, ks_arena_strndup(arena, n->type, (size_t)(strchr(n->type, '*') - n->type)));
  if (n->kind == KS_AK_DECL_REF)
    return n->decl && n->decl->is_pointer && is_u8(arena, n->decl->pointee);
  if (n->kind == KS_AK_BINARY && n->nkids == 2 && n->op && (!strcmp(n->op, "+") || !strcmp(n->op, "-")))
    return points_to_u8(arena, n->kids[0]) || (!strcmp(n->op, "+") && points_to_u8(arena, n->kids[1]));
  if (n->kind == KS_AK_UNARY && n->nkids == 1 && n->op && !strcmp(n->op, "&")) {
    const ks_anode *s = strip(n->kids[0]);
    return s && s->kind == KS_AK_SUBSCRIPT && s->nkids == 2 && points_to_u8(arena, s->kids[0]);
  }
  return false;
}

/* How many bins a key can reach, from its type alone: 256 for an 8-bit
 * unsigned value, mask + 1 for `x & mask`; 0 when unknown. */
static long long key_bins(ks_arena *arena, const ks_anode *key) {
  const ks_anode *k = strip(key);
  if (!k)
    return 0;
  if (k->kind == KS_AK_CAST) {
    if (is_u8(arena, k->type))
      return 256;
    /* A wider integer keeps the value; a narrow signed one may not. */
    const char *t = k->type ? unqualified(arena, k->type) : "";
    if (!strcmp(t, "char") || !strcmp(t, "signed char") || !strcmp(t, "int8_t") ||
        !strcmp(t, "bool") || strchr(t, '*'))
      return 0;
    return key_bins(arena, ks_rt_var_init(k));
  }
  if (k->type && is_u8(arena, k->type))
    return 256;
  switch (k->kind) {
  case KS_AK_SUBSCRIPT:
    return k->nkids == 2 && points_to_u8(arena, k->kids[0]) ? 256 : 0;
  case KS_AK_UNARY:
    return k->op && !strcmp(k->op, "*") && k->nkids == 1 && points_to_u8(arena, k->kids[0]) ? 256 : 0;
  case KS_AK_CALL:
    return k->name && has_prefix(k->name, "__ld") && k->nkids == 1 && points_to_u8(arena, k->kids[0])
               ? 256
               : 0;
  case KS_AK_DECL_REF:
    return k->decl && k->decl->kind == KS_AK_VAR && !k->decl->is_pointer && is_u8(arena, k->decl->type)
               ? 256
               : 0;
  case KS_AK_MEMBER: {
    const ks_anode *b = k->nkids == 1 ? strip(k->kids[0]) : NULL;
    if (!b || k->arrow || !k->name || strlen(k->name) != 1 || !strchr("xyzw", k->name[0]))
      return 0;
    if (b->kind == KS_AK_DECL_REF && b->decl && is_u8_vector(arena, b->decl->type))
      return 256;
    return b->type && is_u8_vector(arena, b->type) ? 256 : 0;
  }
  case KS_AK_BINARY:
    if (k->op && !strcmp(k->op, "&") && k->nkids == 2)
      for (int side = 0; side < 2; side++) {
        const ks_anode *m = strip_casts(k->kids[side]);
        if (m && m->kind == KS_AK_INT_LITERAL && m->int_value >= 0 && m->int_value < (1ll << 30))
          return m->int_value + 1;
      }
    return 0;
  default:
    return 0;
  }
}

/* Whether an atomicAdd's value is thrown away: it stands as a statement. */
static bool result_unused(const ks_anode *call) {
  const ks_anode *c = call, *p = call->parent;
  while (p && (p->kind == KS_AK_PAREN ||
               (p->kind == KS_AK_CAST && p->type && !strcmp(p->type, "void")) ||
               (p->kind == KS_AK_OTHER && p->kind_name &&
                (strstr(p->kind_name, "Unexposed") || strstr(p->kind_name, "Implicit") ||
                 strstr(p->kind_name, "Cleanup"))))) {
    c = p;
    p = p->parent;
  }
  if (!p)
    return false;
  switch (p->kind) {
  case KS_AK_COMPOUND:
    return true;
  case KS_AK_IF:
    return p->nkids > 1 && p->kids[0] != c;
  case KS_AK_FOR:
    return p->nkids == 4 && p->kids[3] == c;
  case KS_AK_WHILE:
    return p->nkids == 2 && p->kids[1] == c;
  case KS_AK_DO:
    return p->nkids == 2 && p->kids[0] == c;
  case KS_AK_OTHER: /* case and default labels, the branches of a switch */
    return p->kind_name && (strstr(p->kind_name, "Case") || strstr(p->kind_name, "Default") ||
                            strstr(p->kind_name, "Label"));
  default:
    return false;
  }
}

/* blockDim.x * gridDim.x (either order, with casts), directly or through a
 * local that holds it. */
static bool is_grid_stride(const facts *f, const ks_anode *e, const ks_anode **where) {
  e = strip_casts(e);
  if (!e)
    return false;
  if (e->kind == KS_AK_DECL_REF && e->decl && e->decl->kind == KS_AK_VAR && !is_written(f, e->decl)) {
    const ks_anode *inner = NULL;
    if (!is_grid_stride(f, ks_rt_var_init(e->decl), &inner))
      return false;
    *where = e->decl; /* gridDim sits in the local's initializer */
    return true;
  }
  if (e->kind != KS_AK_BINARY || e->nkids != 2 || !e->op || strcmp(e->op, "*"))
    return false;
  *where = e;
  return (is_builtin(e->kids[0], "blockDim", 'x') && is_builtin(e->kids[1], "gridDim", 'x')) ||
         (is_builtin(e->kids[0], "gridDim", 'x') && is_builtin(e->kids[1], "blockDim", 'x'));
}

/* The shape of the element loop, as found or as it will be made. */
typedef struct hist_shape {
  const ks_anode *index;      /* the element index variable */
  const ks_anode *decl_stmt;  /* its declaration (straight-line kernel) */
  const ks_anode *guard;      /* the early exit */
  bound_cmp bound;            /* the index's bound in the early exit */
  const char *cond;           /* the loop condition */
  bool has_loop;              /* the kernel already strides over the grid */
} hist_shape;

static bool inside_loop_below(const ks_anode *n, const ks_anode *top) {
  for (const ks_anode *p = n->parent; p && p != top; p = p->parent)
    if (p->kind == KS_AK_FOR || p->kind == KS_AK_WHILE || p->kind == KS_AK_DO)
      return true;
  return false;
}

/* A kernel that already strides over the grid (the grid_stride rule's
 * output): for (i = gid; ...; i += blockDim.x * gridDim.x) holding every
 * atomic. It works for any grid as it is. */
static const char *hist_grid_loop(const facts *f, const ks_anode *loop, hist_shape *s) {
  const ks_anode *init = loop->kids[0], *inc = loop->kids[2];
  const ks_anode *var = single_var(init), *gid = var ? ks_rt_var_init(var) : NULL;
  const ks_anode *init_expr = strip(init);
  if (!var && init_expr && init_expr->kind == KS_AK_BINARY && init_expr->op &&
      !strcmp(init_expr->op, "=") && init_expr->nkids == 2) {
    const ks_anode *l = strip(init_expr->kids[0]);
    if (l && l->kind == KS_AK_DECL_REF && l->decl && l->decl->kind == KS_AK_VAR) {
      var = l->decl;
      gid = init_expr->kids[1];
    }
  }
  if (!var || !is_gid(gid, 'x', NULL, NULL))
    return "its loop does not start at blockIdx.x * blockDim.x + threadIdx.x";
  const ks_anode *step = NULL, *stride_at = NULL;
  inc = strip(inc);
  if (inc && inc->kind == KS_AK_COMPOUND_ASSIGN && inc->op && !strcmp(inc->op, "+=") &&
      inc->nkids == 2 && ks_rt_refers_to(inc->kids[0], var))
    step = inc->kids[1];
  if (!step || !is_grid_stride(f, step, &stride_at))
    return "its loop does not step by blockDim.x * gridDim.x";
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    const char *name = builtin_name(b);
    if (!strcmp(name, "blockIdx") && !is_within(b, gid))
      return "uses blockIdx outside its index";
    if (!strcmp(name, "gridDim") && !is_within(b, stride_at))
      return "uses gridDim outside its loop's step";
  }
  for (size_t i = 0; i < f->atomics.len; i++)
    if (!is_within(f->atomics.items[i], loop->kids[3]))
      return "has an atomicAdd outside its grid-stride loop";
  if (f->returns.len)
    return "returns early from a grid-stride loop (every thread must reach the barrier)";
  s->index = var;
  s->has_loop = true;
  return NULL;
}

/* `if (C) return;` or `if (C) { return; }`. */
static bool is_return_guard(const ks_anode *st) {
  if (!st || st->kind != KS_AK_IF || st->nkids != 2)
    return false;
  const ks_anode *t = st->kids[1];
  if (t && t->kind == KS_AK_COMPOUND && t->nkids == 1)
    t = t->kids[0];
  return t && t->kind == KS_AK_RETURN && t->nkids == 0;
}

/* A straight-line kernel: index = gid; ...; an early exit on the index
 * (if (i < n) ... or if (i >= n) return;) before every atomic. */
static const char *hist_straight(const rewrite *w, const facts *f, hist_shape *s) {
  const ks_anode *body = w->in->ast->body;
  size_t d = body->nkids;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *var = single_var(body->kids[k]);
    if (var && is_gid(ks_rt_var_init(var), 'x', NULL, NULL)) {
      d = k;
      s->index = var;
      s->decl_stmt = body->kids[k];
      break;
    }
  }
  if (!s->index)
    return "has no element index blockIdx.x * blockDim.x + threadIdx.x";
  if (is_written(f, s->index))
    return "changes its element index";
  if (s->decl_stmt->from_macro)
    return "declares its index in a macro";
  for (size_t k = 0; k < d; k++) {
    const ks_anode *st = body->kids[k];
    if (!st || st->kind != KS_AK_DECL_STMT)
      return "does work before its element index is known";
    for (size_t v = 0; v < st->nkids; v++)
      if (st->kids[v] && st->kids[v]->kind == KS_AK_VAR && is_written(f, st->kids[v]))
        return "changes a variable declared before its element index";
  }
  const ks_anode *gid = ks_rt_var_init(s->index);
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    const char *name = builtin_name(b);
    if (!strcmp(name, "blockIdx") && !is_within(b, gid))
      return "uses blockIdx beyond its element index";
    if (!strcmp(name, "gridDim"))
      return "uses gridDim (the grid is what the rewrite changes)";
  }
  /* The early exit. */
  bound_cmp b = {0};
  size_t g = body->nkids;
  bool exit_form = false;
  node_list parts = {0};
  for (size_t k = d + 1; k < body->nkids && g == body->nkids; k++) {
    const ks_anode *st = body->kids[k];
    if (!st || st->kind != KS_AK_IF)
      continue;
    parts.len = 0;
    if (is_return_guard(st)) {
      split_chain(w->arena, st->kids[0], "||", &parts);
      for (size_t p = 0; p < parts.len && g == body->nkids; p++)
        if (read_bound(parts.items[p], s->index, &b) && !b.in_range) {
          g = k;
          exit_form = true;
        }
    } else if (st->nkids == 2) {
      split_chain(w->arena, st->kids[0], "&&", &parts);
      for (size_t p = 0; p < parts.len && g == body->nkids; p++)
        if (read_bound(parts.items[p], s->index, &b) && b.in_range)
          g = k;
    }
  }
  if (g == body->nkids)
    return "has no early exit on its element index (if (i < n) or if (i >= n) return) to bound "
           "the loop";
  s->guard = body->kids[g];
  s->bound = b;
  for (size_t i = 0; i < f->atomics.len; i++) {
    const ks_anode *a = f->atomics.items[i];
    bool ok = exit_form ? !is_within(a, s->guard) && a->begin > s->guard->end
                        : is_within(a, s->guard->kids[1]);
    if (!ok)
      return "has an atomicAdd outside its bound check";
  }
  for (size_t i = 0; i < f->returns.len; i++) {
    const ks_anode *r = f->returns.items[i];
    if (inside_loop_below(r, body))
      return "returns from inside a loop";
    if (r->from_macro || strncmp(w->unit + r->begin, "return", 6))
      return "returns through a macro";
  }
  if (!bound_is_simple(strip(b.bound)))
    return "bounds its index by an expression the launch policy cannot state";
  /* The loop runs while the index is in range. */
  const char *bound_text = node_text(w, strip(b.bound));
  const char *name = s->index->name;
  s->cond = ks_arena_printf(w->arena, "%s %s %s", name, b.inclusive ? "<=" : "<",
                            operand(w->arena, bound_text));
  return NULL;
}

/* The declaration of the index turned into the head of the grid-stride
 * loop: `size_t i = gid;` -> `for (size_t i = gid; i < n; i += ...) {`. */
static const char *loop_head(ks_ctx *ctx, const rewrite *w, const hist_shape *s, unsigned *end) {
  unsigned b = s->decl_stmt->begin;
  unsigned e = stmt_end(w, s->decl_stmt);
  *end = e;
  const char *decl = ks_ctext_trim(w->arena, w->unit + b, w->unit + e);
  size_t len = strlen(decl);
  if (len && decl[len - 1] == ';')
    len--;
  /* A const index cannot step: drop const before the '='. */
  const char *eq = ks_ctext_find(decl, decl + len, "=");
  ks_edits drop = {0};
  for (const char *c = strstr(decl, "const"); c && eq && c < eq; c = strstr(c + 5, "const"))
    if ((c == decl || !ks_ctext_is_ident_char(c[-1])) && !ks_ctext_is_ident_char(c[5]))
      ks_edits_add(w->arena, &drop, (size_t)(c - decl), (size_t)(c - decl) + (c[5] == ' ' ? 6 : 5), "");
  const char *head = ks_edits_apply(ctx, w->arena, ks_arena_strndup(w->arena, decl, len), &drop);
  if (!head)
    return NULL;
  return ks_arena_printf(w->arena, "for (%s; %s; %s += blockDim.x * gridDim.x) {", head, s->cond,
                         s->index->name);
}

/* The rewrite as edits of the parent's source: the bins zeroed in shared
 * memory, the atomics sent there, the element loop (made from the index
 * declaration and the early exit, unless the kernel has one), and the
 * non-zero bins added to global memory. nbins 0: dynamic shared memory. */
static int hist_edits(ks_ctx *ctx, const rewrite *w, const facts *f, const hist_shape *s,
                      const ks_anode *bins, const node_list *bin_refs, const char *elem,
                      long long nbins, ks_edits *e) {
  ks_arena *arena = w->arena;
  const ks_anode *body = w->in->ast->body;
  const char *I = w->indent, *unit = w->unit;
  size_t vo = w->vo;
  const char *hist = ks_rt_fresh(arena, unit, "ks_hist");
  const char *bin = ks_rt_fresh(arena, unit, "ks_bin");
  const char *count = ks_rt_fresh(arena, unit, "ks_count");
  const char *tid = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)";
  const char *nthreads = "blockDim.x * blockDim.y * blockDim.z";
  const char *n;
  ks_buf pro = KS_BUF_INIT;
  if (!nbins) {
    n = ks_rt_fresh(arena, unit, "ks_nbins");
    ks_buf_addf(&pro, "\n%sextern __shared__ %s %s[];\n", I, elem, hist);
    ks_buf_addf(&pro, "%s// The bins fill the launch's dynamic shared memory.\n", I);
    ks_buf_addf(&pro, "%sunsigned %s;\n", I, n);
    ks_buf_addf(&pro, "%sasm volatile(\"mov.u32 %%0, %%%%dynamic_smem_size;\" : \"=r\"(%s));\n", I, n);
    ks_buf_addf(&pro, "%s%s /= sizeof(%s);\n", I, n, elem);
  } else {
    n = ks_arena_printf(arena, "%lld", nbins);
    ks_buf_addf(&pro, "\n%s__shared__ %s %s[%lld];\n", I, elem, hist, nbins);
  }
  ks_buf_addf(&pro, "%sfor (unsigned %s = %s; %s < %s; %s += %s)\n", I, bin, tid, bin, n, bin,
              nthreads);
  ks_buf_addf(&pro, "%s%s%s[%s] = 0;\n%s__syncthreads();", I, I, hist, bin, I);
  ks_edits_add(arena, e, body->begin + 1 - vo, body->begin + 1 - vo, ks_arena_strdup(arena, pro.data));
  ks_buf_release(&pro);
  for (size_t i = 0; i < bin_refs->len; i++)
    ks_edits_add(arena, e, bin_refs->items[i]->begin - vo, bin_refs->items[i]->end - vo, hist);

  /* The flush goes where the body's closing brace's line starts. */
  unsigned close = body->end - 1;
  const char *close_indent = line_indent(w, close);
  unsigned at = close_indent ? close - (unsigned)strlen(close_indent) : close;
  ks_buf epi = KS_BUF_INIT;
  if (!close_indent)
    ks_buf_addc(&epi, '\n');
  if (!s->has_loop) {
    unsigned decl_end;
    const char *head = loop_head(ctx, w, s, &decl_end);
    if (!head) {
      ks_buf_release(&epi);
      return -1;
    }
    ks_edits_add(arena, e, s->decl_stmt->begin - vo, decl_end - vo, head);
    for (unsigned p = decl_end; p < at; p++)
      if (unit[p] == '\n' && p + 1 < at && unit[p + 1] != '\n')
        ks_edits_add(arena, e, p + 1 - vo, p + 1 - vo, I);
    for (size_t i = 0; i < f->returns.len; i++)
      ks_edits_add(arena, e, f->returns.items[i]->begin - vo, f->returns.items[i]->begin + 6 - vo,
                   "continue");
    ks_buf_addf(&epi, "%s}\n", I);
  }
  ks_buf_addf(&epi, "%s__syncthreads();\n", I);
  ks_buf_addf(&epi, "%sfor (unsigned %s = %s; %s < %s; %s += %s) {\n", I, bin, tid, bin, n, bin,
              nthreads);
  ks_buf_addf(&epi, "%s%s%s %s = %s[%s];\n", I, I, elem, count, hist, bin);
  ks_buf_addf(&epi, "%s%sif (%s != 0)\n", I, I, count);
  ks_buf_addf(&epi, "%s%s%satomicAdd(&%s[%s], %s);\n%s}\n", I, I, I, bins->name, bin, count, I);
  ks_edits_add(arena, e, at - vo, at - vo, ks_arena_strdup(arena, epi.data));
  ks_buf_release(&epi);
  return 0;
}

/* What refuses both rules before their own patterns are looked at: a
 * rewrite site we cannot edit, shared memory, barriers, and (in the kernel
 * or the device functions it calls) collectives or other uses of the
 * thread mapping. NULL when none. */
static const char *shared_refusal(const ks_rule_input *in, ks_arena *arena, rewrite *w,
                                  facts *f) {
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

static int hist_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                      ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  if (param < 1 || param > 64)
    return no(out, arena, "blocks per SM must be 1 to 64, not %d", param);
  rewrite w;
  facts f;
  const char *refusal = shared_refusal(in, arena, &w, &f);
  if (refusal)
    return no(out, arena, "%s", refusal);
  if (!f.atomics.len)
    return no(out, arena, "has no atomicAdd into a histogram");
  if (f.stores.len)
    return no(out, arena, "writes memory other than through atomicAdd ('%s')",
              node_text(&w, f.stores.items[0]));

  /* Every atomicAdd: into one integer buffer, result unused. */
  const ks_anode *bins = NULL;
  node_list bin_refs = {0};
  long long nbins = -1;
  for (size_t i = 0; i < f.atomics.len; i++) {
    const ks_anode *a = f.atomics.items[i];
    if (a->nkids != 2)
      return no(out, arena, "calls atomicAdd with %zu arguments", a->nkids);
    const ks_anode *addr = strip(a->kids[0]), *ref = NULL, *key = NULL, *p = NULL;
    if (addr && addr->kind == KS_AK_UNARY && addr->op && !strcmp(addr->op, "&") && addr->nkids == 1) {
      const ks_anode *s = strip(addr->kids[0]);
      if (s && s->kind == KS_AK_SUBSCRIPT)
        p = param_access(s, &ref, &key);
    } else if (addr && addr->kind == KS_AK_BINARY) {
      p = param_access(addr, &ref, &key);
    }
    if (!p)
      return no(out, arena, "adds into '%s', not into bins[key] of a buffer parameter",
                node_text(&w, a->kids[0]));
    if (bins && p != bins)
      return no(out, arena, "adds into two buffers ('%s' and '%s')", bins->name, p->name);
    bins = p;
    if (!result_unused(a))
      return no(out, arena, "uses the value atomicAdd returns");
    if (ref->from_macro)
      return no(out, arena, "names its bins in a macro");
    *ks_array_push(arena, &bin_refs) = ref;
    long long kb = key_bins(arena, key);
    nbins = nbins < 0 ? kb : (kb == 0 || nbins == 0 ? 0 : (kb > nbins ? kb : nbins));
  }
  for (size_t i = 0; i < f.pointer_refs.len; i++)
    if (f.pointer_refs.items[i]->decl == bins) {
      bool ours = false;
      for (size_t k = 0; k < bin_refs.len; k++)
        ours = ours || bin_refs.items[k] == f.pointer_refs.items[i];
      if (!ours)
        return no(out, arena, "uses '%s' other than as atomicAdd's target", bins->name);
    }
  const ks_wbuffer *wb = NULL;
  for (size_t i = 0; in->timed && i < in->timed->buffers.len; i++)
    if (!strcmp(in->timed->buffers.items[i].name, bins->name))
      wb = &in->timed->buffers.items[i];
  if (!wb)
    return no(out, arena, "the spec has no buffer '%s'", bins->name);
  if (wb->dtype != KS_DT_I32 && wb->dtype != KS_DT_U32 && wb->dtype != KS_DT_U64)
    return no(out, arena, "its bins are %s (shared-memory atomicAdd here: i32, u32, u64)",
              ks_dtype_name(wb->dtype));
  if (!bins->pointee)
    return no(out, arena, "the type of '%s' is unknown", bins->name);
  const char *elem = unqualified(arena, bins->pointee);
  size_t esize = ks_dtype_size(wb->dtype);

  hist_shape s = {0};
  const char *why = NULL;
  const ks_anode *body = in->ast->body;
  for (size_t k = 0; k < body->nkids; k++)
    if (body->kids[k] && body->kids[k]->kind == KS_AK_FOR && body->kids[k]->nkids == 4) {
      hist_shape t = {0};
      if (!hist_grid_loop(&f, body->kids[k], &t)) {
        s = t;
        break;
      }
    }
  if (!s.has_loop && (why = hist_straight(&w, &f, &s)))
    return no(out, arena, "%s", why);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  unsigned limit = in->max_smem_per_block ? in->max_smem_per_block : 49152;
  bool dynamic = nbins <= 0 || (unsigned long long)nbins * esize > limit;
  const char *cover = NULL;
  const char *grid = ks_arena_printf(arena, "min(%s, %u)", pol.grid[0], in->sm_count * (unsigned)param);
  const char *no_wrap = NULL;
  if (!s.has_loop) {
    cover = cover_guard(&w, pol.grid[0], pol.block[0], &s.bound);
    if (!ks_rt_guard_evaluates(in, cover))
      return no(out, arena, "its bound '%s' is not an expression of the launch and the scalar "
                            "parameters", node_text(&w, strip(s.bound.bound)));
    /* A narrow index must not wrap when it steps past the bound. */
    ks_dtype it;
    if (s.index->type && ks_dtype_from_c(unqualified(arena, s.index->type), &it) &&
        !ks_dtype_is_float(it) && ks_dtype_size(it) < 8) {
      bool is_signed = it == KS_DT_I8 || it == KS_DT_I16 || it == KS_DT_I32;
      long long max = (1ll << (8 * ks_dtype_size(it) - (is_signed ? 1 : 0))) - 1;
      no_wrap = ks_arena_printf(arena, "%s + %s * %s <= %lld",
                                operand(arena, node_text(&w, strip(s.bound.bound))), grid,
                                operand(arena, pol.block[0]), max);
    }
  }

  ks_edits e = {0};
  if (hist_edits(ctx, &w, &f, &s, bins, &bin_refs, elem, dynamic ? 0 : nbins, &e))
    return -1;

  ks_rule_child_init(arena, in, &out->child);
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  pol.grid[0] = grid;
  if (dynamic)
    pol.smem = ks_arena_printf(arena, "len_%s * %zu", bins->name, esize);
  ks_rule_policy_write(arena, &pol, &out->child);
  if (dynamic)
    ks_rule_require(arena, &out->child,
                    ks_arena_printf(arena, "len_%s * %zu <= %u", bins->name, esize, limit));
  if (cover)
    ks_rule_require(arena, &out->child, cover);
  if (no_wrap)
    ks_rule_require(arena, &out->child, no_wrap);
  out->applied = true;
  out->technique = ks_arena_printf(arena, "smem_hist=%d", param);
  return 0;
}

/* ---- smem_transpose ---------------------------------------------------------- */

static void addends(ks_arena *arena, const ks_anode *e, node_list *out) {
  e = strip_casts(e);
  if (!e)
    return;
  if (e->kind == KS_AK_BINARY && e->nkids == 2 && e->op && !strcmp(e->op, "+")) {
    addends(arena, e->kids[0], out);
    addends(arena, e->kids[1], out);
  } else {
    *ks_array_push(arena, out) = e;
  }
}

/* Whether `var` is a bare addend of the index (through locals that hold
 * part of it): the access is contiguous along var. */
static bool unit_along(ks_arena *arena, const facts *f, const ks_anode *index, const ks_anode *var,
                       int depth) {
  node_list parts = {0};
  addends(arena, index, &parts);
  for (size_t i = 0; i < parts.len; i++) {
    const ks_anode *p = parts.items[i];
    if (p->kind != KS_AK_DECL_REF || !p->decl)
      continue;
    if (p->decl == var)
      return true;
    if (depth < 4 && p->decl->kind == KS_AK_VAR && !is_written(f, p->decl) && ks_rt_var_init(p->decl) &&
        unit_along(arena, f, ks_rt_var_init(p->decl), var, depth + 1))
      return true;
  }
  return false;
}

typedef struct read_search {
  ks_arena *arena;
  const facts *f;
  const ks_anode *out_param;
  const ks_anode *x, *y;
  bool found;
} read_search;

static bool find_read(ks_anode *n, void *arg) {
  read_search *r = arg;
  const ks_anode *ref = NULL, *index = NULL;
  if (n->kind != KS_AK_SUBSCRIPT && !(n->kind == KS_AK_BINARY && n->op && !strcmp(n->op, "+")))
    return true;
  const ks_anode *p = param_access(n, &ref, &index);
  if (p && p != r->out_param && unit_along(r->arena, r->f, index, r->x, 0) &&
      !unit_along(r->arena, r->f, index, r->y, 0))
    r->found = true;
  return true;
}

/* Variables the write phase needs: those its condition and index use. */
static void need_vars(ks_arena *arena, const ks_anode *n, node_list *need) {
  if (!n)
    return;
  if (n->kind == KS_AK_DECL_REF && n->decl && n->decl->kind == KS_AK_VAR) {
    for (size_t i = 0; i < need->len; i++)
      if (need->items[i] == n->decl)
        return;
    *ks_array_push(arena, need) = n->decl;
    need_vars(arena, ks_rt_var_init(n->decl), need);
  }
  for (size_t i = 0; i < n->nkids; i++)
    need_vars(arena, n->kids[i], need);
}

static bool needed(const node_list *need, const ks_anode *stmt) {
  const ks_anode *v = single_var(stmt);
  for (size_t i = 0; v && i < need->len; i++)
    if (need->items[i] == v)
      return true;
  return false;
}

typedef struct tile_plan {
  int tile, rows;           /* T and R */
  const ks_anode *x, *y;    /* the column (x) and row (y) index variables */
  const ks_anode *x_stmt, *y_stmt;
  const ks_anode *x_bdim, *x_tid, *y_bdim, *y_tid;
  const ks_anode *store;    /* out[idx] = value */
  const ks_anode *lhs;      /* out[idx] */
  const ks_anode *top;      /* the top-level statement holding the store */
  const ks_anode *guard_if; /* top, when it is `if (bounds) { ... }` */
  bound_cmp xb, yb;
} tile_plan;

/* One of the index declarations with its thread mapping replaced. */
static const char *index_decl(ks_ctx *ctx, const rewrite *w, const ks_anode *stmt,
                              const ks_anode *bdim, const char *bdim_text, const ks_anode *tid,
                              const char *tid_text) {
  ks_edits e = {0};
  ks_edits_add(w->arena, &e, bdim->begin, bdim->end, bdim_text);
  ks_edits_add(w->arena, &e, tid->begin, tid->end, tid_text);
  return edited_range(ctx, w, stmt->begin, stmt_end(w, stmt), &e);
}

static const char *transpose_plan(const rewrite *w, const facts *f, tile_plan *t) {
  const ks_anode *body = w->in->ast->body;
  ks_arena *arena = w->arena;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *var = single_var(body->kids[k]);
    const ks_anode *bd, *td;
    if (!var)
      continue;
    if (!t->x && is_gid(ks_rt_var_init(var), 'x', &bd, &td)) {
      t->x = var, t->x_stmt = body->kids[k], t->x_bdim = bd, t->x_tid = td;
    } else if (!t->y && is_gid(ks_rt_var_init(var), 'y', &bd, &td)) {
      t->y = var, t->y_stmt = body->kids[k], t->y_bdim = bd, t->y_tid = td;
    }
  }
  if (!t->x || !t->y)
    return "is not a 2-D kernel with indices blockIdx.x * blockDim.x + threadIdx.x and "
           "blockIdx.y * blockDim.y + threadIdx.y";
  if (is_written(f, t->x) || is_written(f, t->y))
    return "changes its indices";
  if (t->x_bdim->from_macro || t->x_tid->from_macro || t->y_bdim->from_macro || t->y_tid->from_macro)
    return "computes its indices in a macro";
  for (size_t i = 0; i < f->builtins.len; i++) {
    const ks_anode *b = f->builtins.items[i];
    if (!is_within(b, ks_rt_var_init(t->x)) && !is_within(b, ks_rt_var_init(t->y)))
      return "uses the thread or block index beyond its two indices (threads are remapped)";
  }
  /* The one store. */
  if (f->stores.len != 1)
    return f->stores.len ? "writes memory in more than one place" : "writes no memory";
  t->store = f->stores.items[0];
  if (t->store->kind != KS_AK_BINARY || t->store->nkids != 2)
    return "updates its output in place (a compound assignment reads it)";
  const ks_anode *oref = NULL, *oidx = NULL;
  const ks_anode *outp = param_access(t->store->kids[0], &oref, &oidx);
  if (!outp)
    return "does not store into a buffer parameter";
  t->lhs = t->store->kids[0];
  if (t->lhs->from_macro || t->store->from_macro)
    return "stores through a macro";
  for (size_t i = 0; i < f->pointer_refs.len; i++)
    if (f->pointer_refs.items[i]->decl == outp && f->pointer_refs.items[i] != oref)
      return "reads its output buffer";
  /* The store is a statement of the body, or of the then-branch of a
   * top-level `if`, never under a loop or a further condition. */
  const ks_anode *c = t->store, *p = c->parent;
  while (p && p != body) {
    if (p->kind == KS_AK_COMPOUND) {
    } else if (p->kind == KS_AK_IF && p->nkids == 2 && p->kids[1] == c && p->parent == body) {
      t->guard_if = p;
    } else {
      return "stores under a loop or a condition other than its bounds check";
    }
    c = p;
    p = p->parent;
  }
  if (!p)
    return "stores outside the kernel's body";
  t->top = c;
  const ks_anode *home = t->guard_if ? t->guard_if->kids[1] : body;
  if (t->store != home && t->store->parent != home)
    return "stores inside a nested block";

  /* Returns: only `if (C) return;` at the top, before the store. */
  node_list conds = {0};
  for (size_t i = 0; i < f->returns.len; i++) {
    const ks_anode *r = f->returns.items[i];
    const ks_anode *g = r->parent;
    if (g && g->kind == KS_AK_COMPOUND && g->nkids == 1)
      g = g->parent;
    if (!g || !is_return_guard(g) || g->parent != body || g->begin > t->top->begin)
      return "returns other than by an early exit before its store";
    if (r->from_macro || strncmp(w->unit + r->begin, "return", 6))
      return "returns through a macro";
    split_chain(arena, g->kids[0], "||", &conds);
  }
  size_t nexit = conds.len;
  if (t->guard_if)
    split_chain(arena, t->guard_if->kids[0], "&&", &conds);
  bool have_x = false, have_y = false;
  for (size_t i = 0; i < conds.len; i++) {
    bound_cmp b;
    bool want_in = i >= nexit;
    if (!have_x && read_bound(conds.items[i], t->x, &b) && b.in_range == want_in) {
      t->xb = b;
      have_x = true;
    }
    if (!have_y && read_bound(conds.items[i], t->y, &b) && b.in_range == want_in) {
      t->yb = b;
      have_y = true;
    }
  }
  if (!have_x || !have_y)
    return "does not check both indices against bounds before its store";
  if (!bound_is_simple(strip(t->xb.bound)) || !bound_is_simple(strip(t->yb.bound)))
    return "bounds its indices by expressions the launch policy cannot state";

  /* A transpose: the write contiguous along y, some read along x. */
  if (!unit_along(arena, f, oidx, t->y, 0) || unit_along(arena, f, oidx, t->x, 0))
    return "does not write contiguously along its row index (not a transpose)";
  read_search rs = {arena, f, outp, t->x, t->y, false};
  ks_anode_walk(w->in->ast->body, find_read, &rs);
  if (!rs.found)
    return "reads no buffer contiguously along its column index (not a transpose)";
  return NULL;
}

/* The new body: the tile, the load phase (the body as written, element
 * (x, y) = (tile x + tx, tile y + ty + j), the store going to the tile),
 * the barrier, the write phase (element (x, y) = (tile x + ty + j, tile y +
 * tx): only the declarations its bounds and index need, then the store from
 * the tile). Returns why not, or NULL with *text set (NULL on an internal
 * failure). */
static const char *transpose_body(ks_ctx *ctx, const rewrite *w, const facts *f, const tile_plan *t,
                                  const char *elem, const char **text) {
  ks_arena *arena = w->arena;
  const ks_anode *body = w->in->ast->body;
  const ks_anode *oref, *oidx;
  param_access(t->lhs, &oref, &oidx);
  const char *tile = ks_rt_fresh(arena, w->unit, "ks_tile");
  const char *j = ks_rt_fresh(arena, w->unit, "ks_j");
  const char *I = w->indent;
  const char *I2 = ks_arena_printf(arena, "%s%s", I, I);
  const char *T = ks_arena_printf(arena, "%d", t->tile);
  const char *ty_j = ks_arena_printf(arena, "(threadIdx.y + %s)", j);
  *text = NULL;

  ks_edits le = {0};
  ks_edits_add(arena, &le, t->x_bdim->begin, t->x_bdim->end, T);
  ks_edits_add(arena, &le, t->y_bdim->begin, t->y_bdim->end, T);
  ks_edits_add(arena, &le, t->y_tid->begin, t->y_tid->end, ty_j);
  ks_edits_add(arena, &le, t->lhs->begin, t->lhs->end,
               ks_arena_printf(arena, "%s[threadIdx.y + %s][threadIdx.x]", tile, j));
  for (size_t i = 0; i < f->returns.len; i++)
    ks_edits_add(arena, &le, f->returns.items[i]->begin, f->returns.items[i]->begin + 6, "continue");
  /* The whole inside of the body, comments included. */
  unsigned first = body->begin + 1, last = body->end - 1;
  while (first < last && strchr(" \t\n\r", w->unit[first]))
    first++;
  while (last > first && strchr(" \t\n\r", w->unit[last - 1]))
    last--;
  const char *load = edited_range(ctx, w, first, last, &le);
  if (!load)
    return NULL;

  node_list need = {0};
  need_vars(arena, oidx, &need);
  if (t->guard_if)
    need_vars(arena, t->guard_if->kids[0], &need);
  for (size_t k = 0; k < body->nkids; k++)
    if (is_return_guard(body->kids[k]))
      need_vars(arena, body->kids[k]->kids[0], &need);
  for (size_t i = 0; i < need.len; i++) {
    const ks_anode *v = need.items[i];
    if (v == t->x || v == t->y)
      continue;
    const ks_anode *st = v->parent;
    if (is_written(f, v) || single_var(st) != v ||
        (st->parent != body && !(t->guard_if && st->parent == t->guard_if->kids[1])))
      return ks_arena_printf(arena, "its store's index or bounds use '%s', which it cannot recompute",
                             v->name ? v->name : "?");
  }
  const char *store = ks_arena_printf(arena, "%s = %s[threadIdx.x][threadIdx.y + %s];",
                                      node_text(w, t->lhs), tile, j);
  ks_buf wr = KS_BUF_INIT;
  for (size_t k = 0; k < body->nkids; k++) {
    const ks_anode *st = body->kids[k];
    const char *piece = NULL;
    if (!st)
      continue;
    if (st == t->x_stmt) {
      piece = index_decl(ctx, w, st, t->x_bdim, T, t->x_tid, ty_j);
    } else if (st == t->y_stmt) {
      piece = index_decl(ctx, w, st, t->y_bdim, T, t->y_tid, "threadIdx.x");
    } else if (needed(&need, st) || is_return_guard(st)) {
      ks_edits re = {0};
      for (size_t i = 0; i < f->returns.len; i++)
        if (is_within(f->returns.items[i], st))
          ks_edits_add(arena, &re, f->returns.items[i]->begin, f->returns.items[i]->begin + 6,
                       "continue");
      piece = edited_range(ctx, w, st->begin, stmt_end(w, st), &re);
    } else if (st == t->top && t->guard_if) {
      ks_buf g = KS_BUF_INIT;
      ks_buf_addf(&g, "if (%s) {\n", node_text(w, t->guard_if->kids[0]));
      const ks_anode *then = t->guard_if->kids[1];
      for (size_t i = 0; then->kind == KS_AK_COMPOUND && i < then->nkids; i++)
        if (then->kids[i] && needed(&need, then->kids[i]))
          ks_buf_addf(&g, "%s%s\n", I2,
                      ks_arena_strndup(arena, w->unit + then->kids[i]->begin,
                                       stmt_end(w, then->kids[i]) - then->kids[i]->begin));
      /* One level short: the piece is indented with the others below. */
      ks_buf_addf(&g, "%s%s\n%s}", I2, store, I);
      piece = ks_arena_strdup(arena, g.data);
      ks_buf_release(&g);
    } else if (st == t->top) {
      piece = store;
    } else {
      continue;
    }
    if (!piece) {
      ks_buf_release(&wr);
      return NULL;
    }
    ks_buf_addf(&wr, "%s%s\n", I2, indent_lines(arena, piece, I));
  }

  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "\n%s__shared__ %s %s[%d][%d + 1];\n", I, elem, tile, t->tile, t->tile);
  ks_buf_addf(&b, "%sfor (int %s = 0; %s < %d; %s += %d) {\n", I, j, j, t->tile, j, t->rows);
  ks_buf_addf(&b, "%s%s\n%s}\n", I2, indent_lines(arena, load, I), I);
  ks_buf_addf(&b, "%s__syncthreads();\n", I);
  ks_buf_addf(&b, "%sfor (int %s = 0; %s < %d; %s += %d) {\n", I, j, j, t->tile, j, t->rows);
  ks_buf_adds(&b, wr.data);
  ks_buf_addf(&b, "%s}\n", I);
  ks_buf_release(&wr);
  *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return NULL;
}

static int transpose_apply(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                           ks_rule_result *out) {
  memset(out, 0, sizeof *out);
  tile_plan t = {.tile = param / 100, .rows = param % 100};
  if (t.tile < 8 || t.tile > 64 || t.rows < 1 || t.tile % t.rows || t.tile * t.rows > 1024)
    return no(out, arena, "parameter %d is not a tile T * 100 + R with R dividing T", param);
  rewrite w;
  facts f;
  const char *refusal = shared_refusal(in, arena, &w, &f);
  if (refusal)
    return no(out, arena, "%s", refusal);
  if (f.atomics.len)
    return no(out, arena, "writes with atomicAdd");
  const char *why = transpose_plan(&w, &f, &t);
  if (why)
    return no(out, arena, "%s", why);
  if (!launch_bound_fits(&w, &f, (long long)t.tile * t.rows))
    return no(out, arena, "its __launch_bounds__ allows fewer than %d threads", t.tile * t.rows);
  const ks_anode *outp = NULL, *oref, *oidx;
  outp = param_access(t.lhs, &oref, &oidx);
  if (!outp->pointee)
    return no(out, arena, "the element type of '%s' is unknown", outp->name);
  const char *elem = unqualified(arena, outp->pointee);

  ks_rule_policy pol;
  if (ks_rule_policy_read(ctx, arena, in->parent, &pol))
    return no(out, arena, "the parent's launch policy does not read: %s", ctx->error);
  const char *cover_x = cover_guard(&w, pol.grid[0], pol.block[0], &t.xb);
  const char *cover_y = cover_guard(&w, pol.grid[1], pol.block[1], &t.yb);
  if (!ks_rt_guard_evaluates(in, cover_x) || !ks_rt_guard_evaluates(in, cover_y))
    return no(out, arena, "its bounds are not expressions of the launch and the scalar parameters");

  const char *text = NULL;
  if ((why = transpose_body(ctx, &w, &f, &t, elem, &text)))
    return no(out, arena, "%s", why);
  if (!text)
    return -1;
  const ks_anode *body = in->ast->body;
  ks_edits e = {0};
  ks_edits_add(arena, &e, body->begin + 1 - w.vo, body->end - 1 - w.vo, text);
  ks_rule_child_init(arena, in, &out->child);
  out->child.source = ks_edits_apply(ctx, arena, in->parent->source, &e);
  if (!out->child.source)
    return -1;
  const char *gy = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", operand(arena, pol.grid[1]),
                                   operand(arena, pol.block[1]), t.tile);
  pol.grid[0] = ks_arena_printf(arena, "ceil_div(%s * %s, %d)", operand(arena, pol.grid[0]),
                                operand(arena, pol.block[0]), t.tile);
  pol.grid[1] = gy;
  pol.grid[2] = "1";
  pol.block[0] = ks_arena_printf(arena, "%d", t.tile);
  pol.block[1] = ks_arena_printf(arena, "%d", t.rows);
  pol.block[2] = "1";
  ks_rule_policy_write(arena, &pol, &out->child);
  ks_rule_require(arena, &out->child, cover_x);
  ks_rule_require(arena, &out->child, cover_y);
  ks_rule_require(arena, &out->child, ks_arena_printf(arena, "%s <= 65535", gy));
  out->applied = true;
  out->technique = ks_arena_printf(arena, "smem_tile=%dx%d", t.tile, t.rows);
  return 0;
}

static const int hist_choices[] = {2, 4, 8, 16};
static const int transpose_choices[] = {3208, 3204, 3216};

const ks_rule ks_rule_smem_histogram = {
    "smem_histogram",
    "atomicAdd histogram: private bins per block in shared memory, grid-stride loop "
    "(param: blocks per SM)",
    false,
    hist_choices,
    sizeof hist_choices / sizeof *hist_choices,
    hist_apply,
};

const ks_rule ks_rule_smem_transpose = {
    "smem_transpose",
    "naive transpose: a padded shared-memory tile, coalesced reads and writes "
    "(param: tile * 100 + block rows)",
    false,
    transpose_choices,
    sizeof transpose_choices / sizeof *transpose_choices,
    transpose_apply,
};
