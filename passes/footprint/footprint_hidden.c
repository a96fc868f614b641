/* footprint_hidden: uses of a pointer that the syntax tree does not show.
 *
 * The tree keeps only a call's arguments, so the object of a member call
 * (`p[i].add(v)`, `CALLM(p)` expanding to `p->add(1)`) has no node; and
 * clang drops a statement it refuses (a kernel launch from device code)
 * when the tree is built. Either would make a pointer look less used than
 * it is, so the text is checked against the tree: every occurrence of a
 * pointer's name (or of an alias's) in the kernel's body must be a node of
 * the tree, and inside a macro invocation the expansion must name it no
 * more often than the tree does. What does not add up leaves the extent
 * unproved. */
#include <string.h>

#include "footprint_int.h"
#include "ks_ctext.h"

static void fail(fp_param *p, const char *why) {
  if (!p->why)
    p->why = why;
}

/* A call inside a macro: the object of a member call has no node and its
 * callee's text is the macro's invocation. The expansion says whether it
 * is one (`q->add(` ...); its text then holds the names it may use. */
static const char *macro_member_call(fp_state *st, const ks_anode *call) {
  if (call->kind != KS_AK_CALL || !call->from_macro)
    return NULL;
  const ks_anode *top = call;
  while (top->parent && top->parent->from_macro && top->parent->begin == call->begin &&
         top->parent->end == call->end)
    top = top->parent;
  const char *invocation = ks_anode_text(st->arena, st->k, top);
  const char *keep = st->why;
  const char *x = fp_expand(st, invocation);
  st->why = keep;
  if (!x)
    return invocation; /* not known: as if it were one */
  const char *name = ks_rt_callee(st->arena, call);
  if (strstr(x, ks_arena_printf(st->arena, ". %s (", name)) ||
      strstr(x, ks_arena_printf(st->arena, "-> %s (", name)))
    return x;
  return NULL;
}


typedef KS_ARRAY(unsigned) offsets;

/* Occurrences of identifier `name` in [b, e), comments and literals
 * skipped: offsets into the unit. */
static void occurrences(fp_state *st, const char *b, const char *e, const char *name,
                        offsets *out) {
  size_t n = strlen(name);
  const char *src = st->k->source;
  for (const char *p = b; p < e;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (ks_ctext_is_ident_char(*p)) {
      const char *w = p;
      while (p < e && ks_ctext_is_ident_char(*p))
        p++;
      if ((size_t)(p - w) == n && !strncmp(w, name, n))
        *ks_array_push(st->arena, out) = (unsigned)(w - src);
      continue;
    }
    p++;
  }
}

static size_t count_in(fp_state *st, const char *text, const char *name) {
  offsets at = {0};
  occurrences(st, text, text + strlen(text), name, &at);
  return at.len;
}

/* Does the tree account for the text of `name` in the kernel's body? */
static const char *unaccounted(fp_state *st, const ks_rt_nodes *all, const ks_anode *decl) {
  const char *name = decl->name;
  if (!name || !*name)
    return NULL;
  const ks_anode *body = st->k->body;
  offsets at = {0};
  occurrences(st, st->k->source + body->begin, st->k->source + body->end, name, &at);
  KS_ARRAY(const ks_anode *) macros = {0}; /* invocations that name it */
  for (size_t i = 0; i < at.len; i++) {
    unsigned o = at.items[i];
    const ks_anode *inv = NULL;
    bool node = false;
    for (size_t k = 0; k < all->len && !node; k++) {
      const ks_anode *n = all->items[k];
      if (n->from_macro && n->begin <= o && o < n->end) {
        if (!inv || (n->begin <= inv->begin && n->end >= inv->end))
          inv = n;
        continue;
      }
      /* A declaration, a reference or a member named so: the tree has it. */
      node = n->name_begin == o && n->name_end > o && n->kind != KS_AK_CALL &&
             n->kind != KS_AK_OTHER;
    }
    if (node)
      continue;
    if (!inv)
      return ks_arena_printf(st->arena, "a use of '%s' is not in the kernel's syntax tree", name);
    bool seen = false;
    for (size_t m = 0; m < macros.len; m++)
      seen |= macros.items[m]->begin == inv->begin && macros.items[m]->end == inv->end;
    if (!seen)
      *ks_array_push(st->arena, &macros) = inv;
  }
  for (size_t m = 0; m < macros.len; m++) {
    const ks_anode *inv = macros.items[m];
    const char *keep = st->why;
    const char *x = fp_expand(st, ks_anode_text(st->arena, st->k, inv));
    st->why = keep;
    size_t refs = 0;
    for (size_t k = 0; k < all->len; k++) {
      const ks_anode *n = all->items[k];
      refs += n->kind == KS_AK_DECL_REF && n->decl == decl && n->from_macro &&
              n->begin >= inv->begin && n->end <= inv->end;
    }
    if (!x || count_in(st, x, name) > refs)
      return ks_arena_printf(st->arena, "a use of '%s' in '%s' is not in the kernel's syntax tree",
                             name, fp_text(st, inv));
  }
  return NULL;
}

void fp_hidden_uses(fp_state *st) {
  const ks_anode *body = st->k->body;
  const char *src = st->k->source;
  /* A launch from device code: clang drops the statement from the tree. */
  bool launches = false;
  for (const char *p = src + body->begin, *e = src + body->end; p < e && !launches;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    launches = !strncmp(p, "<<<", 3);
    p++;
  }
  ks_rt_nodes all = ks_rt_collect(st->arena, body);
  for (size_t i = 0; i < all.len; i++) {
    const ks_anode *n = all.items[i];
    const char *callee = n->from_macro ? macro_member_call(st, n) : fp_member_callee(st, n);
    if (!callee)
      continue;
    const char *shown = n->from_macro ? fp_text(st, n) : callee;
    for (size_t j = 0; j < st->nparams; j++) {
      fp_param *p = &st->params[j];
      if (!p->pointer)
        continue;
      bool named = p->decl->name && ks_rt_has_identifier(callee, p->decl->name);
      for (size_t a = 0; a < st->aliases.len; a++)
        named |= st->aliases.items[a].root == p &&
                 ks_rt_has_identifier(callee, st->aliases.items[a].var->name);
      if (named)
        fail(p, ks_arena_printf(st->arena, "it is used in the member call '%s'", shown));
    }
  }
  for (size_t j = 0; j < st->nparams; j++) {
    fp_param *p = &st->params[j];
    if (!p->pointer)
      continue;
    if (launches)
      fail(p, "the kernel launches kernels, which its syntax tree does not show");
    const char *why = unaccounted(st, &all, p->decl);
    for (size_t a = 0; !why && a < st->aliases.len; a++)
      if (st->aliases.items[a].root == p)
        why = unaccounted(st, &all, st->aliases.items[a].var);
    if (why)
      fail(p, why);
  }
}
