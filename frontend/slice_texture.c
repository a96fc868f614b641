/* slice_texture: the refusal of a kernel that reads a texture reference.
 *
 * A texture reference (`texture<float, 1, cudaReadModeElementType> tex;` at
 * file scope, read with tex1Dfetch(tex, i)) was removed in CUDA 12: the
 * toolkit's headers no longer declare the template, so clang drops the
 * declaration ("no template named 'texture'") and every use of the name is
 * an undeclared identifier. The slice would leave the name out and NVRTC
 * would refuse the kernel with an error about a name the user did declare.
 * Instead the slice fails with the reason: which reference, where it is
 * declared, and what the kernel could read instead. */
#include <string.h>

#include "ks_ctext.h"
#include "ks_fs.h"
#include "slice.h"

typedef struct texture_ref {
  const char *name;
  const char *file;
  unsigned line;
} texture_ref;
typedef KS_ARRAY(texture_ref) texture_refs;

/* The file, line and offset of a diagnostic, the file as the slicer knows
 * it; false when it is in none. */
static bool diag_place(ks_slicer *s, CXDiagnostic d, CXFile *file, const char **path,
                       unsigned *line, unsigned *offset) {
  CXSourceLocation loc = clang_getDiagnosticLocation(d);
  unsigned col;
  clang_getExpansionLocation(loc, file, line, &col, offset);
  const slice_file *f = *file ? ks_slice_file(s, *file) : NULL;
  if (!f)
    return false;
  *path = f->path;
  return true;
}

/* The names a `texture <...> a, b;` declaration at `text` declares. */
static void declared_names(ks_slicer *s, const char *text, const char *end, const char *path,
                           unsigned line, texture_refs *out) {
  const char *open = ks_ctext_find(text, end, "<");
  const char *p = open ? ks_ctext_matching(open, end) : NULL;
  const char *stop = p ? ks_ctext_find(p, end, ";") : NULL;
  if (!stop)
    return;
  for (p++; p < stop;) {
    while (p < stop && !ks_ctext_is_ident_char(*p))
      p++;
    const char *b = p;
    while (p < stop && ks_ctext_is_ident_char(*p))
      p++;
    if (p > b && !(*b >= '0' && *b <= '9')) {
      texture_ref *r = ks_array_push(s->tu.arena, out);
      r->name = ks_arena_strndup(s->tu.arena, b, (size_t)(p - b));
      r->file = path;
      r->line = line;
    }
    /* The next declarator follows a comma; an initializer or an array
     * bound is skipped with it. */
    const char *comma = ks_ctext_find(p, stop, ",");
    p = comma ? comma + 1 : stop;
  }
}

static const texture_ref *named(const texture_refs *refs, const char *name, size_t len) {
  for (size_t i = 0; i < refs->len; i++)
    if (strlen(refs->items[i].name) == len && !strncmp(refs->items[i].name, name, len))
      return &refs->items[i];
  return NULL;
}

/* The first texture reference an identifier of the item's text names
 * (outside comments and literals). The text, not the tree: clang keeps
 * the dropped declaration as an invalid variable, and an expression using
 * it (tex1Dfetch(tex, i)) is dropped as well, so the tree has no reference
 * to find. */
static const texture_ref *used_in(ks_slicer *s, const slice_item *it, const texture_refs *refs) {
  if (!it->range.begin.file)
    return NULL;
  CXFile file = clang_getFile(s->tu.unit, it->range.begin.file);
  size_t size = 0;
  const char *text = file ? clang_getFileContents(s->tu.unit, file, &size) : NULL;
  if (!text || it->range.end.offset > size || it->range.begin.offset >= it->range.end.offset)
    return NULL;
  const char *p = text + it->range.begin.offset, *end = text + it->range.end.offset;
  while (p < end) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (!ks_ctext_is_ident_char(*p)) {
      p++;
      continue;
    }
    const char *b = p;
    while (p < end && ks_ctext_is_ident_char(*p))
      p++;
    const texture_ref *r = named(refs, b, (size_t)(p - b));
    if (r)
      return r;
  }
  return NULL;
}

int ks_slice_check_textures(ks_slicer *s, const char *root) {
  CXTranslationUnit unit = s->tu.unit;
  unsigned n = clang_getNumDiagnostics(unit);
  texture_refs refs = {0};
  for (unsigned i = 0; i < n; i++) {
    CXDiagnostic d = clang_getDiagnostic(unit, i);
    CXString spelling = clang_getDiagnosticSpelling(d);
    const char *msg = clang_getCString(spelling);
    CXFile file;
    const char *path;
    unsigned line, offset;
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error && msg &&
        !strcmp(msg, "no template named 'texture'") &&
        diag_place(s, d, &file, &path, &line, &offset)) {
      size_t size = 0;
      const char *text = clang_getFileContents(unit, file, &size);
      if (text && offset < size)
        declared_names(s, text + offset, text + size, path, line, &refs);
    }
    clang_disposeString(spelling);
    clang_disposeDiagnostic(d);
  }
  if (!refs.len)
    return 0;
  const texture_ref *found = NULL;
  for (size_t i = 0; i < s->items.len && !found; i++)
    if (s->items.items[i].needed)
      found = used_in(s, &s->items.items[i], &refs);
  if (!found)
    return 0;
  s->failed = true;
  return ks_fail(s->ctx,
                 "it reads the texture reference '%s' (declared at %s:%u), which CUDA 12 removed: "
                 "NVRTC cannot compile it, so the kernel stays as written (a cudaTextureObject_t "
                 "parameter read with tex1Dfetch<T> would make it one kernelsmith-cc can optimize)",
                 found->name,
                 root && *root ? ks_path_below(found->file, root) : found->file, found->line);
}
