/* spec_find: where a kernel's spec is written, and which kernel a sidecar
 * section names.
 *
 * Three places are looked at, and a kernel must have at most one spec among
 * them (two would leave the reader guessing which one the tool used):
 *   - an annotation comment right above the kernel's definition: only blank
 *     lines and other comments may stand between the two;
 *   - the same right above the statement line of one of its launch sites;
 *   - a "kernel NAME" section of SOURCE.kspec beside the kernel's file, or of
 *     kernelsmith.kspec in its directory or a parent, up to the scan's root.
 * An annotation is a block comment whose text starts with "kernelsmith:", or
 * a run of "//" lines on consecutive lines whose first starts with
 * "// kernelsmith:"; the run ends at the first line that is not a "//"
 * comment. Files are read as the compiler reads them (a leading byte-order
 * mark, lone CR line endings), and a NUL byte in a spec is an error, not
 * the end of the file's text. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_fs.h"
#include "ks_specs.h"
#include "spec_int.h"

enum { MAX_FILE_BYTES = 64u << 20, MAX_FOUND = 8, MAX_CACHED = 8 };

/* A spec text found somewhere, before parsing. */
typedef struct found_spec {
  const char *file; /* as shown in messages: relative to the scan's root */
  unsigned line;    /* where its text starts */
  const char *text;
  const char *name; /* the kernel as the spec names it */
} found_spec;

/* A file as read: its text as the compiler reads it (spec_int.h), with
 * each NUL byte made a blank so that C string functions see all of it, and
 * the bytes with their NULs, for refusing an annotation that holds one. */
typedef struct file_read {
  const char *path;
  const char *text; /* in the arena */
  const char *raw;  /* likewise, `len` bytes; NULL when there is no NUL */
  size_t len;
} file_read;

typedef struct finder {
  ks_ctx *ctx;
  const ks_scan *scan;
  const ks_kernel *k;
  ks_arena *arena;
  found_spec found[MAX_FOUND];
  unsigned nfound;
  file_read files[MAX_CACHED]; /* files read so far */
  unsigned nfiles;
  file_read last;              /* the file of the latest file_text */
} finder;

/* Copied into the arena: sidecar paths are built in temporary strings. */
static const char *display_path(const finder *f, const char *path) {
  const char *root = f->scan ? f->scan->root : NULL;
  return ks_arena_strdup(f->arena, root && *root ? ks_path_below(path, root) : path);
}

/* The text of `path`, read once per search; f->last describes it. */
static int file_text(finder *f, const char *path, const char **out) {
  for (unsigned i = 0; i < f->nfiles; i++)
    if (!strcmp(f->files[i].path, path)) {
      f->last = f->files[i];
      *out = f->last.text;
      return 0;
    }
  ks_buf buf = KS_BUF_INIT;
  int rc = ks_read_file(f->ctx, path, MAX_FILE_BYTES, &buf);
  if (!rc) {
    ks_spec_text_as_compiled(buf.data, buf.len);
    const char *raw = NULL;
    if (memchr(buf.data, '\0', buf.len)) {
      char *copy = ks_arena_alloc(f->arena, buf.len);
      memcpy(copy, buf.data, buf.len);
      raw = copy;
      for (size_t i = 0; i < buf.len; i++)
        if (!buf.data[i])
          buf.data[i] = ' ';
    }
    f->last = (file_read){path, ks_arena_strndup(f->arena, buf.data, buf.len), raw, buf.len};
    *out = f->last.text;
    if (f->nfiles < MAX_CACHED)
      f->files[f->nfiles++] = f->last;
  }
  ks_buf_release(&buf);
  return rc;
}

/* Fails when bytes [begin, end) of the latest file hold a NUL: a spec with
 * one would be read as something else than what an editor shows. */
static int refuse_nul(finder *f, const char *shown, size_t begin, size_t end) {
  if (!f->last.raw || begin >= f->last.len)
    return 0;
  if (end > f->last.len)
    end = f->last.len;
  const char *nul = memchr(f->last.raw + begin, '\0', end - begin);
  if (!nul)
    return 0;
  size_t at = (size_t)(nul - f->last.raw);
  unsigned line = 1;
  for (size_t i = 0; i < at; i++)
    line += f->last.text[i] == '\n';
  return ks_spec_fail(f->ctx, shown, line,
                      "a NUL byte (at byte %zu) in the spec: remove it, a spec is text", at);
}

static void add_found(finder *f, const char *file, unsigned line, const char *text,
                      const char *name) {
  for (unsigned i = 0; i < f->nfound; i++)
    if (!strcmp(f->found[i].file, file) && f->found[i].line == line)
      return; /* two launch sites on one line see the same comment */
  if (f->nfound == MAX_FOUND)
    return;
  f->found[f->nfound++] = (found_spec){file, line, text, name};
}

/* ---- annotations ------------------------------------------------------ */

typedef struct comment {
  const char *begin, *end; /* the whole comment, markers included */
  unsigned line;           /* where it starts */
  bool own_line;           /* nothing but blanks before it on its line */
  bool is_block;
} comment;
typedef KS_ARRAY(comment) comments;

static bool starts_tag(const char *p, const char *end) {
  while (p < end && (*p == '/' || *p == '*'))
    p++;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  return (size_t)(end - p) >= 12 && !memcmp(p, "kernelsmith:", 12);
}

static unsigned count_lines(const char *b, const char *e) {
  unsigned n = 0;
  for (; b < e; b++)
    n += *b == '\n';
  return n;
}

/* Collects the comments between the last code before the line holding
 * `offset` and that line, then records each annotation among them (text is
 * the latest file_text's). */
static int annotations_above(finder *f, const char *path, const char *text, unsigned offset) {
  size_t len = strlen(text);
  if (offset > len)
    return 0;
  const char *anchor = text + offset;
  while (anchor > text && anchor[-1] != '\n')
    anchor--;
  comments run = {0};
  unsigned line = 1;
  bool code_on_line = false;
  for (const char *p = text; p < anchor;) {
    if (*p == '\n') {
      line++;
      code_on_line = false;
      p++;
      continue;
    }
    if (isspace((unsigned char)*p)) {
      p++;
      continue;
    }
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p && p[0] == '/') {
      if (q > anchor)
        q = anchor;
      *ks_array_push(f->arena, &run) = (comment){p, q, line, !code_on_line, p[1] == '*'};
      unsigned spanned = count_lines(p, q);
      line += spanned;
      if (spanned)
        code_on_line = false;
      p = q;
      continue;
    }
    /* Code (or a literal): the comments so far belong to something else. */
    run.len = 0;
    code_on_line = true;
    if (q != p) {
      line += count_lines(p, q);
      p = q;
    } else {
      p++;
    }
  }
  for (size_t i = 0; i < run.len; i++) {
    comment *c = &run.items[i];
    if (!c->own_line || !starts_tag(c->begin, c->end))
      continue;
    if (c->is_block) {
      if (refuse_nul(f, display_path(f, path), (size_t)(c->begin - text),
                     (size_t)(c->end - text)))
        return -1;
      add_found(f, display_path(f, path), c->line,
                ks_arena_strndup(f->arena, c->begin, (size_t)(c->end - c->begin)),
                f->k->qualified_name);
      continue;
    }
    /* A run of // lines: this one and those on the lines right below. */
    size_t j = i + 1;
    while (j < run.len && !run.items[j].is_block && run.items[j].own_line &&
           run.items[j].line == run.items[j - 1].line + 1)
      j++;
    if (refuse_nul(f, display_path(f, path), (size_t)(c->begin - text),
                   (size_t)(run.items[j - 1].end - text)))
      return -1;
    ks_buf b = KS_BUF_INIT;
    for (size_t m = i; m < j; m++) {
      ks_buf_add(&b, run.items[m].begin, (size_t)(run.items[m].end - run.items[m].begin));
      ks_buf_addc(&b, '\n');
    }
    add_found(f, display_path(f, path), c->line, ks_arena_strdup(f->arena, b.data),
              f->k->qualified_name);
    ks_buf_release(&b);
    i = j - 1;
  }
  return 0;
}

/* ---- names ------------------------------------------------------------ */

/* Spacing removed except between two identifier characters; __restrict__
 * spelled as clang spells it. */
static void normalize(const char *s, ks_buf *out) {
  ks_buf_reset(out);
  while (*s == ':' && s[1] == ':')
    s += 2;
  for (const char *p = s; *p; p++) {
    if (isspace((unsigned char)*p)) {
      const char *q = p;
      while (isspace((unsigned char)*q))
        q++;
      if (out->len && ks_ctext_is_ident_char(out->data[out->len - 1]) && ks_ctext_is_ident_char(*q))
        ks_buf_addc(out, ' ');
      p = q - 1;
      continue;
    }
    if (!strncmp(p, "__restrict__", 12)) {
      ks_buf_adds(out, "__restrict");
      p += 11;
      continue;
    }
    ks_buf_addc(out, *p);
  }
}

static bool qualified_before_paren(const char *s) {
  for (; *s && *s != '('; s++)
    if (s[0] == ':' && s[1] == ':')
      return true;
  return false;
}

bool ks_spec_names_kernel(const char *name, const ks_kernel *k) {
  ks_buf want = KS_BUF_INIT, have = KS_BUF_INIT;
  bool match = false;
  normalize(name, &want);
  if (strchr(want.data, '(')) {
    normalize(k->signature ? k->signature : "", &have);
    match = !strcmp(want.data, have.data);
    /* "fill(float *, int)" also names "ns::fill(float *, int)" when the
     * qualification is left out. */
    const char *paren = strchr(have.data, '(');
    if (!match && paren && !qualified_before_paren(want.data)) {
      const char *start = paren;
      while (start > have.data && !(start[-1] == ':' && start - 1 > have.data && start[-2] == ':'))
        start--;
      match = !strcmp(want.data, start);
    }
  } else if (strstr(want.data, "::")) {
    match = !strcmp(want.data, k->qualified_name);
  } else {
    match = !strcmp(want.data, k->name) || !strcmp(want.data, k->qualified_name);
  }
  ks_buf_release(&want);
  ks_buf_release(&have);
  return match;
}

/* ---- sidecars --------------------------------------------------------- */

/* Whether kernel `other` lives where sidecar `path` applies: the one source
 * for SOURCE.kspec, the directory tree for kernelsmith.kspec. */
static bool covered(const char *path, const char *dir, bool per_source, const ks_kernel *other) {
  const char *file = other->loc.file;
  if (!file)
    return false;
  if (per_source)
    return strlen(path) == strlen(file) + 6 && !strncmp(path, file, strlen(file));
  size_t n = strlen(dir);
  return !strncmp(file, dir, n) && (file[n] == '/' || (n == 1 && dir[0] == '/'));
}

static bool is_section_line(const char *b, const char *e) {
  return e - b > 7 && !memcmp(b, "kernel", 6) && (b[6] == ' ' || b[6] == '\t');
}

/* One "kernel NAME" section of a sidecar. */
typedef struct section {
  const char *name;
  unsigned line;          /* of the "kernel NAME" line */
  const char *body, *end; /* the spec lines after it */
} section;
typedef KS_ARRAY(section) sections;

static int split_sections(finder *f, const char *shown, const char *text, sections *out) {
  unsigned line = 1;
  for (const char *p = text; *p; line++) {
    const char *nl = strchr(p, '\n');
    const char *e = nl ? nl : p + strlen(p), *b = p;
    while (b < e && isspace((unsigned char)*b))
      b++;
    if (is_section_line(b, e)) {
      if (out->len)
        out->items[out->len - 1].end = p;
      const char *ne = memchr(b, '#', (size_t)(e - b)); /* a comment may follow */
      if (!ne)
        ne = e;
      while (ne > b && (isspace((unsigned char)ne[-1]) || ne[-1] == ':'))
        ne--;
      section *s = ks_array_push(f->arena, out);
      s->name = ks_ctext_trim(f->arena, b + 6, ne);
      s->line = line;
      s->body = s->end = nl ? nl + 1 : e;
      if (!*s->name)
        return ks_spec_fail(f->ctx, shown, line, "kernel: expected a kernel name");
    } else if (!out->len && b < e && *b != '#') {
      return ks_spec_fail(f->ctx, shown, line, "expected 'kernel NAME' before the first spec line");
    }
    p = nl ? nl + 1 : e;
  }
  if (out->len)
    out->items[out->len - 1].end = text + strlen(text);
  return 0;
}

/* Reads one sidecar and records the sections that name the kernel; a name
 * that fits several kernels where the sidecar applies is an error. */
static int sidecar(finder *f, const char *path, const char *dir, bool per_source) {
  const char *text;
  sections secs = {0};
  if (!ks_is_file(path))
    return 0;
  const char *shown = display_path(f, path);
  if (file_text(f, path, &text) || refuse_nul(f, shown, 0, SIZE_MAX) ||
      split_sections(f, shown, text, &secs))
    return -1;
  for (size_t s = 0; s < secs.len; s++) {
    const section *sec = &secs.items[s];
    if (!ks_spec_names_kernel(sec->name, f->k))
      continue;
    ks_buf also = KS_BUF_INIT;
    unsigned count = 0;
    for (size_t i = 0; f->scan && i < f->scan->kernels.len; i++) {
      const ks_kernel *o = &f->scan->kernels.items[i];
      if (ks_spec_names_kernel(sec->name, o) && covered(path, dir, per_source, o)) {
        count++;
        ks_buf_addf(&also, "%s%s", also.len ? ", " : "", o->signature);
      }
    }
    int rc = 0;
    if (count > 1)
      rc = ks_spec_fail(f->ctx, shown, sec->line,
                        "kernel '%s' names %u kernels (%s): name one by its signature", sec->name,
                        count, also.data);
    ks_buf_release(&also);
    if (rc)
      return -1;
    add_found(f, shown, sec->line + 1,
              ks_arena_strndup(f->arena, sec->body, (size_t)(sec->end - sec->body)), sec->name);
  }
  return 0;
}

/* SOURCE.kspec, then kernelsmith.kspec from the source's directory up to the
 * scan's root. */
static int sidecars(finder *f) {
  const char *source = f->k->loc.file;
  int rc = 0;
  if (!source)
    return 0;
  char *own = ks_xmalloc(strlen(source) + 7);
  strcpy(own, source);
  strcat(own, ".kspec");
  char *dir = ks_path_dirname(source);
  rc = sidecar(f, own, dir, true);
  const char *root = f->scan && f->scan->root ? f->scan->root : "";
  bool below_root = *root && !strncmp(dir, root, strlen(root)) &&
                    (dir[strlen(root)] == '\0' || dir[strlen(root)] == '/' || !strcmp(root, "/"));
  while (!rc) {
    char *path = ks_path_join(dir, "kernelsmith.kspec");
    rc = sidecar(f, path, dir, false);
    free(path);
    if (!below_root || !strcmp(dir, root) || !strcmp(dir, "/"))
      break;
    char *parent = ks_path_dirname(dir);
    free(dir);
    dir = parent;
  }
  free(dir);
  free(own);
  return rc;
}

int ks_spec_find(ks_ctx *ctx, const ks_scan *scan, const ks_kernel *k, ks_arena *arena,
                 ks_spec *out) {
  finder f = {.ctx = ctx, .scan = scan, .k = k, .arena = arena};
  const char *text;
  const char *kfile = k->extent.begin.file ? k->extent.begin.file : k->loc.file;
  if (kfile) {
    if (file_text(&f, kfile, &text) ||
        annotations_above(&f, kfile, text,
                          k->extent.begin.file ? k->extent.begin.offset : k->loc.offset))
      return -1;
  }
  for (size_t i = 0; scan && i < k->launches.len; i++) {
    size_t index = k->launches.items[i];
    if (index >= scan->launches.len)
      continue;
    const ks_launch *site = &scan->launches.items[index];
    if (!site->loc.file)
      continue;
    if (file_text(&f, site->loc.file, &text) ||
        annotations_above(&f, site->loc.file, text, site->loc.offset))
      return -1;
  }
  if (sidecars(&f))
    return -1;
  if (!f.nfound)
    return 1;
  if (f.nfound > 1) {
    ks_buf places = KS_BUF_INIT;
    for (unsigned i = 0; i < f.nfound; i++)
      ks_buf_addf(&places, "%s%s:%u", i ? (i + 1 == f.nfound ? " and " : ", ") : "",
                  f.found[i].file, f.found[i].line);
    ks_fail(ctx, "kernel '%s' has %u specs: %s; keep one", k->qualified_name, f.nfound,
            places.data);
    ks_buf_release(&places);
    return -1;
  }
  if (ks_spec_parse(ctx, f.found[0].file, f.found[0].line, f.found[0].text, arena, out))
    return -1;
  out->kernel = f.found[0].name;
  return 0;
}
