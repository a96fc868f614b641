/* The user's macros a launch's configuration may name, as this unit's
 * preprocessor defined them.
 *
 * The site evaluator (spec_site.c) reads the #defines of the site's own file,
 * but real code keeps its sizes in headers (PolyBench's DIM_THREAD_BLOCK_X
 * in a .cuh, under #ifdef dataset switches that only the preprocessor
 * resolves). The detailed preprocessing record holds every definition the
 * unit made, inactive branches left out: each launch takes the ones its
 * enclosing function's text and its configuration name, and the ones those
 * name in turn. */
#include <stdlib.h>
#include <string.h>

#include "ks_ctext.h"
#include "tu.h"

typedef struct ks_tu_macro tu_macro;

static enum CXChildVisitResult collect(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  ks_tu *tu = data;
  if (clang_getCursorKind(c) != CXCursor_MacroDefinition || ks_tu_in_system(c) ||
      clang_Cursor_isMacroBuiltin(c))
    return CXChildVisit_Continue;
  tu_macro *m = ks_array_push(tu->arena, &tu->macros);
  m->name = ks_tu_spelling(tu, c);
  m->def = c;
  return CXChildVisit_Continue;
}

static void read_macros(ks_tu *tu) {
  if (tu->macros_read)
    return;
  tu->macros_read = true;
  clang_visitChildren(clang_getTranslationUnitCursor(tu->unit), collect, tu);
}

/* The definition of `name` a launch at `at` sees: the last one made before
 * it (one after it in the launch's own file is not yet made), else none. */
static const tu_macro *lookup(ks_tu *tu, const char *name, size_t len, ks_loc at) {
  const tu_macro *all = tu->macros.items, *found = NULL;
  for (size_t i = 0; i < tu->macros.len; i++) {
    if (strlen(all[i].name) != len || memcmp(all[i].name, name, len))
      continue;
    ks_loc l = ks_tu_loc(tu, clang_getCursorLocation(all[i].def));
    if (l.file && at.file && !strcmp(l.file, at.file) && l.offset > at.offset)
      continue;
    found = &all[i];
  }
  return found;
}

/* "NAME body" (or "NAME(params) body") of a definition, as one line. */
static void definition(ks_tu *tu, CXCursor def, ks_macro_def *out) {
  out->name = ks_tu_spelling(tu, def);
  out->function_like = clang_Cursor_isMacroFunctionLike(def) != 0;
  const char *text = ks_tu_range_text(tu, ks_tu_extent(tu, def));
  const char *body = text ? text : "";
  while (ks_ctext_is_ident_char(*body))
    body++;
  if (out->function_like) {
    const char *close = ks_ctext_matching(body, body + strlen(body));
    out->params = ks_ctext_trim(tu->arena, body + 1, close ? close : body + 1);
    body = close ? close + 1 : body + strlen(body);
  }
  char *v = (char *)ks_ctext_trim(tu->arena, body, body + strlen(body));
  for (char *p = v; *p; p++) /* line continuations and breaks: spaces */
    if (*p == '\\' || *p == '\n' || *p == '\r')
      *p = ' ';
  out->value = v;
}

/* Adds the macros `text` names (and those their bodies name) to out->macros. */
static void add_named(ks_tu *tu, const char *text, ks_launch *out) {
  for (const char *p = text; p && *p;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (!ks_ctext_is_ident_char(*p) || (p > text && ks_ctext_is_ident_char(p[-1])) ||
        (*p >= '0' && *p <= '9')) {
      p++;
      continue;
    }
    const char *e = p;
    while (ks_ctext_is_ident_char(*e))
      e++;
    size_t n = (size_t)(e - p);
    bool seen = false;
    for (size_t i = 0; i < out->macros.len && !seen; i++)
      seen = strlen(out->macros.items[i].name) == n && !memcmp(out->macros.items[i].name, p, n);
    const tu_macro *m = seen ? NULL : lookup(tu, p, n, out->loc);
    if (m && out->macros.len < KS_LAUNCH_MAX_MACROS) {
      ks_macro_def *d = ks_array_push(tu->arena, &out->macros);
      definition(tu, m->def, d);
      add_named(tu, d->value, out);
    }
    p = e;
  }
}

void ks_tu_launch_macros(ks_tu *tu, const char *context, ks_launch *out) {
  read_macros(tu);
  if (!tu->macros.len)
    return;
  const char *texts[] = {context, out->grid, out->block, out->smem};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    add_named(tu, texts[i], out);
}
