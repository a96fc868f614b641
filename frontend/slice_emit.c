/* Writing a slice: the macros the needed text expands, then the unit.
 *
 * Macros are found lexically: every identifier of the text that is copied
 * (and of the macros it uses, at the same place) that names a macro in force
 * there is one the preprocessor expanded, or tested with #if. That includes
 * identifiers in #if branches the host-side parse skipped, which NVRTC,
 * compiling the device side, may take. Macros defined on the command line
 * (-D) become #define lines at the top.
 *
 * The unit: a prelude comment, the toolkit #includes and stand-ins, then the
 * needed declarations and macro definitions in unit order, each declaration
 * inside its namespaces (consecutive ones share them) and after a #line
 * naming its place in the user's file, so NVRTC's messages point there. */
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "slice.h"

void ks_slice_identifiers(const char *text, size_t len, slice_ident_fn fn, void *data) {
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (ks_ctext_is_ident_char(*p) && !(*p >= '0' && *p <= '9')) {
      const char *start = p;
      while (p < end && ks_ctext_is_ident_char(*p))
        p++;
      if (!fn(data, start, (size_t)(p - start), (size_t)(start - text)))
        return;
      continue;
    }
    if (*p >= '0' && *p <= '9') { /* a number: 1e5f is not an identifier */
      while (p < end && (ks_ctext_is_ident_char(*p) || *p == '.'))
        p++;
      continue;
    }
    p++;
  }
}

/* ---- chunks: the text of needed items, overlapping ones merged ---------- */

typedef struct chunk {
  const char *file;
  unsigned begin, end, line;
  ks_order order;
  const char *scopes;     /* "namespace a {\nnamespace b {\n", "" at top */
  const char *closers;    /* the matching "}" lines, innermost first */
  bool function;          /* ends with a function body: no ';' after it */
  const slice_macro *macro; /* a #define instead of a declaration */
} chunk;
typedef KS_ARRAY(chunk) chunks;

/* The namespaces and extern "C" blocks around an item, outermost first. */
static void scopes_of(ks_slicer *s, CXCursor c, chunk *out) {
  CXCursor chain[32];
  unsigned n = 0;
  for (CXCursor p = clang_getCursorLexicalParent(c);
       !clang_Cursor_isNull(p) && n < 32 && clang_getCursorKind(p) != CXCursor_TranslationUnit &&
       !clang_isInvalid(clang_getCursorKind(p));
       p = clang_getCursorLexicalParent(p))
    chain[n++] = p;
  ks_buf open = KS_BUF_INIT, close = KS_BUF_INIT;
  for (unsigned i = n; i-- > 0;) {
    enum CXCursorKind k = clang_getCursorKind(chain[i]);
    if (k == CXCursor_Namespace) {
      const char *name = ks_tu_spelling(&s->tu, chain[i]);
      ks_buf_addf(&open, "%snamespace %s%s{\n", clang_Cursor_isInlineNamespace(chain[i]) ? "inline " : "",
                  name, *name ? " " : "");
    } else {
      ks_buf_adds(&open, "extern \"C\" {\n"); /* a linkage specification */
    }
  }
  for (unsigned i = 0; i < n; i++) {
    const char *name = ks_tu_spelling(&s->tu, chain[i]);
    if (clang_getCursorKind(chain[i]) == CXCursor_Namespace)
      ks_buf_addf(&close, "} // namespace %s\n", *name ? name : "(anonymous)");
    else
      ks_buf_adds(&close, "} // extern \"C\"\n");
  }
  out->scopes = ks_arena_strdup(s->tu.arena, open.data);
  out->closers = ks_arena_strdup(s->tu.arena, close.data);
  ks_buf_release(&open);
  ks_buf_release(&close);
}

static bool is_function_definition(const slice_item *it) {
  enum CXCursorKind k = it->kind;
  return (k == CXCursor_FunctionDecl || k == CXCursor_FunctionTemplate ||
          k == CXCursor_CXXMethod || k == CXCursor_Constructor || k == CXCursor_Destructor ||
          k == CXCursor_ConversionFunction) &&
         clang_isCursorDefinition(it->cursor);
}

/* ---- preprocessor conditionals cut by a declaration's extent ------------ */

enum { PP_NONE, PP_OPEN, PP_MID, PP_CLOSE };

/* The conditional directive a line starts with, if any. */
static int directive(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if (p == end || *p != '#')
    return PP_NONE;
  for (p++; p < end && (*p == ' ' || *p == '\t'); p++)
    ;
  size_t n = 0;
  while (p + n < end && ks_ctext_is_ident_char(p[n]))
    n++;
  if ((n == 2 && !strncmp(p, "if", 2)) || (n == 5 && !strncmp(p, "ifdef", 5)) ||
      (n == 6 && !strncmp(p, "ifndef", 6)))
    return PP_OPEN;
  if (n == 5 && !strncmp(p, "endif", 5))
    return PP_CLOSE;
  if ((n == 4 && (!strncmp(p, "else", 4) || !strncmp(p, "elif", 4))) ||
      (n == 7 && !strncmp(p, "elifdef", 7)) || (n == 8 && !strncmp(p, "elifndef", 8)))
    return PP_MID;
  return PP_NONE;
}

/* A declaration's extent can start or end inside a conditional:
 *     #ifdef __CUDACC__
 *     __host__ __device__
 *     #endif
 *     inline float sign_f(const float &val) { ... }
 * starts at __host__ and holds the #endif alone. The text is widened to the
 * directives that pair with those it holds, so NVRTC sees whole
 * conditionals. */
static void balance_conditionals(ks_slicer *s, const char *file, unsigned *begin, unsigned *end) {
  CXFile f = ks_tu_file(&s->tu, file);
  size_t size = 0;
  const char *data = f ? clang_getFileContents(s->tu.unit, f, &size) : NULL;
  if (!data || *end > size)
    return;
  int level = 0, lowest = 0;
  for (unsigned at = *begin; at < *end;) {
    if (at == 0 || data[at - 1] == '\n') {
      int d = directive(data + at, data + *end);
      if (d == PP_OPEN)
        level++;
      else if (d == PP_CLOSE && --level < lowest)
        lowest = level;
      else if (d == PP_MID && level - 1 < lowest)
        lowest = level - 1;
    }
    const char *nl = memchr(data + at, '\n', *end - at);
    at = nl ? (unsigned)(nl - data) + 1 : *end;
  }
  /* Backwards to the #if lines of the directives left open before. */
  int need = -lowest, depth = 0;
  for (unsigned line = *begin; need > 0 && line > 0;) {
    line--; /* to the end of the previous line */
    while (line > 0 && data[line - 1] != '\n')
      line--;
    int d = directive(data + line, data + size);
    if (d == PP_CLOSE)
      depth++;
    else if (d == PP_OPEN && depth)
      depth--;
    else if (d == PP_OPEN && --need == 0)
      *begin = line;
  }
  /* Forwards to the #endif lines of those it leaves open. */
  need = level - lowest;
  depth = 0;
  for (unsigned at = *end; need > 0 && at < size;) {
    while (at > 0 && at < size && data[at - 1] != '\n')
      at++; /* to the start of the next line */
    int d = directive(data + at, data + size);
    const char *nl = memchr(data + at, '\n', size - at);
    unsigned next = nl ? (unsigned)(nl - data) + 1 : (unsigned)size;
    if (d == PP_OPEN)
      depth++;
    else if (d == PP_CLOSE && depth)
      depth--;
    else if (d == PP_CLOSE && --need == 0)
      *end = nl ? next - 1 : next;
    at = next;
  }
}

static void collect_chunks(ks_slicer *s, chunks *out) {
  for (size_t i = 0; i < s->items.len; i++) {
    const slice_item *it = &s->items.items[i];
    if (!it->needed || !it->range.begin.file || it->range.end.offset <= it->range.begin.offset)
      continue;
    const char *file = it->range.begin.file;
    unsigned begin = it->range.begin.offset, end = it->range.end.offset;
    unsigned line = it->range.begin.line;
    balance_conditionals(s, file, &begin, &end);
    if (begin != it->range.begin.offset)
      line = ks_tu_loc(&s->tu, clang_getLocationForOffset(s->tu.unit, ks_tu_file(&s->tu, file),
                                                           begin))
                 .line;
    chunk *last = out->len ? &out->items[out->len - 1] : NULL;
    /* Declarations sharing text (`int a, b;`, one macro making two
     * functions, `typedef struct {...} T;` which is a struct and then a
     * typedef that starts before it) are one piece of text. */
    if (last && !last->macro && !strcmp(last->file, file) && begin < last->end &&
        end > last->begin) {
      if (begin < last->begin) {
        last->begin = begin;
        last->line = line;
        last->order = it->order;
      }
      if (end > last->end) {
        last->end = end;
        last->function = is_function_definition(it);
      }
      continue;
    }
    chunk *c = ks_array_push(s->tu.arena, out);
    c->file = file;
    c->begin = begin;
    c->end = end;
    c->line = line;
    c->order = it->order;
    c->function = is_function_definition(it);
    scopes_of(s, it->cursor, c);
  }
}

static bool in_chunks(const chunks *cs, const char *file, unsigned offset) {
  for (size_t i = 0; i < cs->len; i++)
    if (!cs->items[i].macro && !strcmp(cs->items[i].file, file) && offset >= cs->items[i].begin &&
        offset < cs->items[i].end)
      return true;
  return false;
}

static const slice_edit *removal_at(const ks_slicer *s, const char *file, unsigned offset) {
  for (size_t i = 0; i < s->edits.len; i++) {
    const slice_edit *e = &s->edits.items[i];
    if (e->end > e->begin && offset >= e->begin && offset < e->end && !strcmp(e->file, file))
      return e;
  }
  return NULL;
}

/* ---- macros ---------------------------------------------------------------- */

typedef struct macro_scan {
  ks_slicer *s;
  const chunks *chunks;
  const char *file;       /* of the text scanned, for positions */
  unsigned base;          /* its offset in that file */
  ks_order at;            /* the file's place in the unit (last part: base) */
  const ks_order *fixed;  /* a fixed place of use (a macro body), or NULL */
  const char *const *params; /* a function-like macro's parameters */
  size_t nparams;
  ks_strings *names;      /* needed macro names, for the dependency list */
  ks_strings *defines;    /* command-line macro lines */
  int depth;
} macro_scan;

static void scan_text(macro_scan *ms, const char *text, size_t len);

/* "NAME(a, b) body": the parameters, and where the body starts. */
static const char *macro_params(ks_arena *arena, const char *text, size_t name_len,
                                ks_strings *params) {
  const char *p = text + name_len;
  if (*p != '(')
    return p;
  const char *close = strchr(p, ')');
  if (!close)
    return p;
  ks_ctext_split(arena, p + 1, close, params);
  return close + 1;
}

static void use_macro_body(macro_scan *ms, const char *name, const char *text,
                           const ks_order *use) {
  if (ms->depth > 32)
    return;
  ks_strings params = {0};
  const char *body = macro_params(ms->s->tu.arena, text, strlen(name), &params);
  macro_scan inner = *ms;
  inner.fixed = use;
  inner.params = params.items;
  inner.nparams = params.len;
  inner.depth = ms->depth + 1;
  scan_text(&inner, body, strlen(body));
}

/* A macro given with -D: "NAME", "NAME=value" or "NAME(x)=body". */
static bool command_line_macro(macro_scan *ms, const char *ident, size_t len,
                               const ks_order *use) {
  const ks_strings *defs = ms->s->defines;
  for (size_t i = 0; defs && i < defs->len; i++) {
    const char *d = defs->items[i];
    if (strncmp(d, ident, len) || (d[len] && d[len] != '=' && d[len] != '('))
      continue;
    for (size_t k = 0; k < ms->defines->len; k++)
      if (!strncmp(ms->defines->items[k] + 8, ident, len) &&
          !ks_ctext_is_ident_char(ms->defines->items[k][8 + len]))
        return true; /* already there */
    const char *eq = strchr(d, '=');
    const char *line = eq ? ks_arena_printf(ms->s->tu.arena, "#define %.*s %s", (int)(eq - d), d, eq + 1)
                          : ks_arena_printf(ms->s->tu.arena, "#define %s 1", d);
    *ks_array_push(ms->s->tu.arena, ms->defines) = line;
    use_macro_body(ms, ks_arena_strndup(ms->s->tu.arena, ident, len), line + 8, use);
    return true;
  }
  return false;
}

static void use_system_macro(macro_scan *ms, slice_macro *m) {
  const char *text = NULL;
  switch (ks_slice_system_macro(ms->s, m, &text)) {
  case SLICE_SYS_INCLUDE:
    ks_slice_add_include(ms->s, text);
    break;
  case SLICE_SYS_DEFINE:
    ks_slice_add_prelude(ms->s, text);
    break;
  default:
    break;
  }
}

static bool on_identifier(void *data, const char *ident, size_t len, size_t offset) {
  macro_scan *ms = data;
  ks_slicer *s = ms->s;
  for (size_t i = 0; i < ms->nparams; i++)
    if (strlen(ms->params[i]) == len && !strncmp(ms->params[i], ident, len))
      return true;
  ks_order here;
  const ks_order *use = ms->fixed;
  if (!use) {
    unsigned at = ms->base + (unsigned)offset;
    if (!ms->at.n || removal_at(s, ms->file, at))
      return true;
    here = ms->at;
    here.parts[here.n - 1] = at;
    use = &here;
  }
  slice_macro *m = ks_slice_macro_at(s, ident, len, use);
  if (!m) {
    command_line_macro(ms, ident, len, use);
    return true;
  }
  if (m->needed)
    return true;
  m->needed = true;
  if (m->system) {
    use_system_macro(ms, m);
    return true;
  }
  /* Defined inside copied text: already there. */
  if (m->range.begin.file && in_chunks(ms->chunks, m->range.begin.file, m->range.begin.offset))
    return true;
  *ks_array_push(s->tu.arena, ms->names) = m->name;
  const char *text = ks_tu_range_text(&s->tu, m->range);
  if (text)
    use_macro_body(ms, m->name, text, use);
  return true;
}

static void scan_text(macro_scan *ms, const char *text, size_t len) {
  ks_slice_identifiers(text, len, on_identifier, ms);
}

static void find_macros(ks_slicer *s, const chunks *cs, ks_strings *names, ks_strings *defines) {
  for (size_t i = 0; i < cs->len; i++) {
    const chunk *c = &cs->items[i];
    const char *text = ks_tu_text(&s->tu, c->file, c->begin, c->end);
    if (!text)
      continue;
    macro_scan ms = {s, cs, c->file, c->begin, {{0}, 0}, NULL, NULL, 0, names, defines, 0};
    if (!ks_slice_order_at(s, c->file, c->begin, &ms.at))
      continue;
    scan_text(&ms, text, strlen(text));
  }
}

/* ---- the unit ----------------------------------------------------------------- */

static void add_line_directive(ks_buf *b, unsigned line, const char *file) {
  ks_buf_addf(b, "#line %u \"", line ? line : 1);
  for (const char *p = file; *p; p++) {
    if (*p == '"' || *p == '\\')
      ks_buf_addc(b, '\\');
    ks_buf_addc(b, *p);
  }
  ks_buf_adds(b, "\"\n");
}

/* The chunk's text with the edits that fall in it applied, in order; a
 * removal keeps the newlines it spanned, so that later lines keep their
 * numbers. */
static int cmp_edit(const void *a, const void *b) {
  const slice_edit *x = *(const slice_edit *const *)a, *y = *(const slice_edit *const *)b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

static void add_chunk_text(ks_slicer *s, ks_buf *b, const chunk *c) {
  const char *text = ks_tu_text(&s->tu, c->file, c->begin, c->end);
  if (!text)
    return;
  const slice_edit **edits = ks_arena_alloc(s->tu.arena, (s->edits.len + 1) * sizeof *edits);
  size_t n = 0;
  for (size_t i = 0; i < s->edits.len; i++) {
    const slice_edit *e = &s->edits.items[i];
    if (!strcmp(e->file, c->file) && e->begin >= c->begin && e->end <= c->end)
      edits[n++] = e;
  }
  if (n > 1)
    qsort(edits, n, sizeof *edits, cmp_edit);
  unsigned at = c->begin;
  for (size_t i = 0; i < n; i++) {
    const slice_edit *e = edits[i];
    if (e->begin < at)
      continue; /* inside a removal already made */
    ks_buf_add(b, text + (at - c->begin), e->begin - at);
    ks_buf_adds(b, e->text);
    for (unsigned k = e->begin; k < e->end; k++)
      if (text[k - c->begin] == '\n')
        ks_buf_addc(b, '\n');
    at = e->end;
  }
  ks_buf_add(b, text + (at - c->begin), c->end - at);
  /* A declaration that is not a function body needs its ';', which its
   * extent leaves out. */
  ks_buf_rtrim(b);
  if (!c->function && b->len && b->data[b->len - 1] != ';')
    ks_buf_addc(b, ';');
  ks_buf_addc(b, '\n');
}

static int cmp_chunk(const void *a, const void *b) {
  return ks_order_cmp(&((const chunk *)a)->order, &((const chunk *)b)->order);
}

static void write_unit(ks_slicer *s, chunks *cs, const ks_strings *defines, ks_buf *b) {
  ks_buf_addf(b, "// kernelsmith-cc extract: %s from %s\n", s->kernel->qualified_name,
              s->kernel->loc.file);
  for (size_t i = 0; i < s->prelude.len; i++)
    ks_buf_addf(b, "%s\n", s->prelude.items[i]);
  for (size_t i = 0; i < defines->len; i++)
    ks_buf_addf(b, "%s\n", defines->items[i]);
  if (cs->len > 1)
    qsort(cs->items, cs->len, sizeof *cs->items, cmp_chunk);
  /* `open`: the opening lines of the scopes we are in; `closers`: their
   * closing lines, innermost first. */
  const char *open = "", *closers = "";
  for (size_t i = 0; i < cs->len; i++) {
    const chunk *c = &cs->items[i];
    /* A #define closes the scopes the declaration after it is not in, and
     * opens none: namespaces close before it rather than around it. */
    const char *scopes = c->scopes;
    if (c->macro) {
      scopes = "";
      for (size_t k = i; k < cs->len; k++)
        if (!cs->items[k].macro) {
          scopes = cs->items[k].scopes;
          break;
        }
    }
    /* What `open` and `scopes` share, in whole lines. */
    size_t common = 0;
    while (open[common] && open[common] == scopes[common])
      common++;
    while (common && open[common - 1] != '\n')
      common--;
    if (open[common] || (!c->macro && scopes[common])) {
      unsigned keep = 0, total = 0;
      for (size_t k = 0; k < common; k++)
        keep += open[k] == '\n';
      for (const char *p = open; *p; p++)
        total += *p == '\n';
      const char *p = closers;
      for (unsigned k = 0; k < total - keep; k++) {
        const char *nl = strchr(p, '\n');
        ks_buf_add(b, p, (size_t)(nl - p) + 1);
        p = nl + 1;
      }
      if (c->macro) {
        open = ks_arena_strndup(s->tu.arena, open, common);
        closers = p;
      } else {
        ks_buf_adds(b, scopes + common);
        open = scopes;
        closers = c->closers;
      }
    }
    add_line_directive(b, c->line, c->file);
    if (c->macro) {
      const char *text = ks_tu_range_text(&s->tu, c->macro->range);
      ks_buf_addf(b, "#define %s\n", text ? text : c->macro->name);
    } else {
      add_chunk_text(s, b, c);
    }
  }
  ks_buf_adds(b, closers);
}

static void copy_strings(ks_arena *arena, const ks_strings *from, ks_strings *to) {
  for (size_t i = 0; i < from->len; i++)
    *ks_array_push(arena, to) = ks_arena_strdup(arena, from->items[i]);
}

int ks_slice_emit(ks_slicer *s, ks_arena *arena, ks_slice *out) {
  chunks cs = {0};
  ks_strings macro_names = {0}, defines = {0};
  collect_chunks(s, &cs);
  find_macros(s, &cs, &macro_names, &defines);
  for (size_t i = 0; i < s->macros.len; i++) {
    const slice_macro *m = &s->macros.items[i];
    if (!m->needed || m->system || !m->order.n ||
        (m->range.begin.file && in_chunks(&cs, m->range.begin.file, m->range.begin.offset)))
      continue;
    chunk *c = ks_array_push(s->tu.arena, &cs);
    c->file = m->range.begin.file;
    c->line = m->range.begin.line;
    c->order = m->order;
    c->macro = m;
  }
  ks_buf b = KS_BUF_INIT;
  write_unit(s, &cs, &defines, &b);
  out->source = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);

  out->kernel = ks_arena_strdup(arena, s->kernel->qualified_name);
  copy_strings(arena, &s->includes, &out->includes);
  for (size_t i = 0; i < s->items.len; i++) {
    const slice_item *it = &s->items.items[i];
    if (it->needed && !clang_equalCursors(it->cursor, s->kernel_cursor) && *it->name &&
        it->kind != CXCursor_UsingDirective && it->kind != CXCursor_UsingDeclaration) {
      bool dup = false;
      for (size_t k = 0; k < out->dependencies.len && !dup; k++)
        dup = !strcmp(out->dependencies.items[k], it->name);
      if (!dup)
        *ks_array_push(arena, &out->dependencies) = ks_arena_strdup(arena, it->name);
      if (!dup && ks_slice_device_variable(it->cursor))
        *ks_array_push(arena, &out->variables) = ks_arena_strdup(arena, it->name);
    }
  }
  copy_strings(arena, &macro_names, &out->dependencies);
  if (s->needs_rdc)
    *ks_array_push(arena, &out->options) = "-rdc=true";
  return 0;
}
