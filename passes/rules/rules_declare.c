/* rules_declare: declare_index, the C89 way of writing a kernel's indices
 * put the way the rules read them, before a rule that needs them:
 *
 *   int i, j;                                    (gone, or what else it declared)
 *   j = blockIdx.x * blockDim.x + threadIdx.x;   ->   int j = blockIdx.x * blockDim.x + threadIdx.x;
 *   i = blockIdx.y * blockDim.y + threadIdx.y;   ->   int i = blockIdx.y * blockDim.y + threadIdx.y;
 *
 * A variable moves down to its assignment when: it is declared at the top
 * level of the body, without an initializer, in a declaration of plain
 * integer scalars of one type; its assignment is a statement of the top
 * level too, `v = E;` with E reading a thread or block index; nothing
 * between the two names it; and nothing else in the body assigns it,
 * increments it or takes its address. Then it holds the same value
 * wherever it is read, and its scope only lost the stretch where nothing
 * read it: the kernel computes what it computed.
 *
 * No rule of the search: rules_util.c's ks_rule_apply runs a rule again
 * after it (ks_rule_then) when the rule refused the kernel as written, and
 * the chain of techniques does not name it. */
#include <string.h>

#include "ks_buf.h"
#include "rules_int.h"
#include "rules_tree.h"

/* A plain integer scalar type, as the compiler sees it. */
static bool integer_type(const ks_anode *var) {
  static const char *const types[] = {"int",           "unsigned int", "long",
                                      "unsigned long", "long long",    "unsigned long long",
                                      "short",         "unsigned short"};
  const char *t = var->canon_type ? var->canon_type : var->type;
  for (size_t i = 0; t && i < sizeof types / sizeof *types; i++)
    if (!strcmp(t, types[i]))
      return true;
  return false;
}

/* A declaration statement the rule can take variables out of: plain
 * integer scalars of one type as written, none initialized. */
static bool plain_decl(const ks_anode *stmt) {
  if (!stmt || stmt->kind != KS_AK_DECL_STMT || !stmt->nkids || stmt->from_macro)
    return false;
  for (size_t k = 0; k < stmt->nkids; k++) {
    const ks_anode *v = stmt->kids[k];
    if (v->kind != KS_AK_VAR || ks_rt_var_init(v) || v->shared_space || v->is_pointer ||
        !integer_type(v) || !v->type || !v->name || strcmp(v->type, stmt->kids[0]->type))
      return false;
  }
  return true;
}

/* `v = E` as a whole statement, E not reading v; returns E. */
static const ks_anode *assignment_of(const ks_anode *stmt, const ks_anode *v) {
  const ks_anode *e = ks_rt_strip(stmt, false);
  if (!e || e->from_macro || !ks_rt_is_bin(e, "=") || e->nkids != 2 ||
      !ks_rt_refers_to(e->kids[0], v))
    return NULL;
  return e;
}

/* Reads a thread or block index: the value differs between threads. */
static bool reads_thread_index(ks_arena *arena, const ks_rule_input *in, const ks_anode *e) {
  const char *t = ks_rt_text_of(arena, in, e);
  return strstr(t, "threadIdx") || strstr(t, "blockIdx");
}

static int apply_declare_index(ks_ctx *ctx, const ks_rule_input *in, int param, ks_arena *arena,
                               ks_rule_result *out) {
  (void)param;
  memset(out, 0, sizeof *out);
  const ks_anode *body = in->ast->body;
  if (!body || body->begin < in->variant_offset)
    return ks_rt_not_applicable(arena, out, "its code is outside the variant");
  ks_edits e = {0};
  unsigned moved = 0;
  for (size_t s = 0; s < body->nkids; s++) {
    const ks_anode *decl = body->kids[s];
    if (!plain_decl(decl))
      continue;
    bool *gone = ks_arena_alloc(arena, decl->nkids * sizeof *gone);
    unsigned ngone = 0;
    for (size_t k = 0; k < decl->nkids; k++) {
      const ks_anode *v = decl->kids[k];
      gone[k] = false;
      for (size_t t = s + 1; t < body->nkids; t++) {
        const ks_anode *st = body->kids[t];
        const ks_anode *set = assignment_of(st, v);
        if (!set) {
          if (ks_rt_count_refs(arena, st, v))
            break; /* read (or written some other way) before it is set */
          continue;
        }
        /* set once: nothing after it writes v (nothing before names it) */
        bool again = ks_rt_count_refs(arena, set->kids[1], v) > 0;
        for (size_t u = t + 1; u < body->nkids && !again; u++)
          again = ks_rt_modified(body->kids[u], v);
        if (again || !reads_thread_index(arena, in, set->kids[1]))
          break;
        ks_edits_add(arena, &e, ks_rt_src_at(in, st->begin), ks_rt_src_at(in, st->begin),
                     ks_arena_printf(arena, "%s ", v->type));
        gone[k] = true;
        ngone++;
        break;
      }
    }
    if (!ngone)
      continue;
    moved += ngone;
    /* The declaration again with what it still declares, or nothing. */
    ks_buf b = KS_BUF_INIT;
    if (ngone < decl->nkids) {
      ks_buf_addf(&b, "%s ", decl->kids[0]->type);
      bool first = true;
      for (size_t k = 0; k < decl->nkids; k++)
        if (!gone[k]) {
          ks_buf_addf(&b, "%s%s", first ? "" : ", ", decl->kids[k]->name);
          first = false;
        }
      ks_buf_addf(&b, ";");
    }
    unsigned from = decl->begin, to = ks_rt_stmt_end(in->unit, decl);
    if (ngone == decl->nkids) { /* the whole line, when the declaration is alone on it */
      unsigned a = from, z = to;
      while (a > in->variant_offset && (in->unit[a - 1] == ' ' || in->unit[a - 1] == '\t'))
        a--;
      while (in->unit[z] == ' ' || in->unit[z] == '\t')
        z++;
      if (a > in->variant_offset && in->unit[a - 1] == '\n' && in->unit[z] == '\n')
        from = a, to = z + 1;
    }
    ks_edits_add(arena, &e, ks_rt_src_at(in, from), ks_rt_src_at(in, to),
                 ks_arena_strdup(arena, b.data ? b.data : ""));
    ks_buf_release(&b);
  }
  if (!moved)
    return ks_rt_not_applicable(arena, out, "no index declared before it is set (int i; i = "
                                            "blockIdx.x * blockDim.x + threadIdx.x;)");
  return ks_rt_finish(ctx, in, arena, &e, "", out);
}

const ks_rule ks_rule_declare_index = {
    "declare_index",
    "an index declared before it is set (int i, j; ... j = blockIdx.x * blockDim.x + "
    "threadIdx.x;) declared where it is set, so that the rules read it",
    false,
    NULL,
    0,
    apply_declare_index};
