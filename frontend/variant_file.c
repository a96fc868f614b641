/* Reading variant files; see ks_variant_file.h. */
#include "ks_variant_file.h"

#include <ctype.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_fs.h"

static unsigned line_at(const char *text, const char *p) {
  unsigned n = 1;
  for (const char *q = text; q < p; q++)
    n += *q == '\n';
  return n;
}

typedef struct kernel_def {
  const char *name;  /* identifier */
  const char *at;    /* where its name is, in the text */
  bool is_template;
} kernel_def;

/* Every __global__ function definition, found lexically. */
static size_t find_kernels(ks_arena *arena, const char *text, kernel_def *out, size_t max) {
  size_t n = 0;
  for (const char *p = text; *p && n < max;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (strncmp(p, "__global__", 10) || (p > text && ks_ctext_is_ident_char(p[-1])) ||
        ks_ctext_is_ident_char(p[10])) {
      p++;
      continue;
    }
    /* The name is the identifier right before the first '(' after it that
     * does not open an attribute's arguments (__launch_bounds__(...) may
     * come between __global__ and the name). */
    const char *paren = strchr(p, '('), *e = NULL, *s = NULL;
    while (paren) {
      e = paren;
      while (e > p && isspace((unsigned char)e[-1]))
        e--;
      s = e;
      while (s > p && ks_ctext_is_ident_char(s[-1]))
        s--;
      if (strncmp(s, "__launch_bounds__", 17) && strncmp(s, "__maxnreg__", 11) &&
          strncmp(s, "__cluster_dims__", 16) && strncmp(s, "__attribute__", 13))
        break;
      const char *close = ks_ctext_matching(paren, paren + strlen(paren));
      paren = close ? strchr(close, '(') : NULL;
    }
    if (!paren)
      break;
    /* A template header sits before __global__ in the same declaration. */
    const char *decl = p;
    while (decl > text && decl[-1] != ';' && decl[-1] != '}' && decl[-1] != '{')
      decl--;
    bool templ = false;
    for (const char *t = decl; t < p; t++)
      if (!strncmp(t, "template", 8) && (t == decl || !ks_ctext_is_ident_char(t[-1])) &&
          !ks_ctext_is_ident_char(t[8]))
        templ = true;
    out[n].name = ks_arena_strndup(arena, s, (size_t)(e - s));
    out[n].at = s;
    out[n].is_template = templ;
    n++;
    p = paren;
  }
  return n;
}

/* The text of the kernelsmith-variant: annotation, comment markers removed,
 * or NULL; *first_line is where it starts. */
static const char *annotation(ks_arena *arena, const char *text, unsigned *first_line) {
  const char *tag = strstr(text, "kernelsmith-variant:");
  if (!tag)
    return NULL;
  *first_line = line_at(text, tag);
  /* Line comments when the tag's own line holds "//" before it. */
  const char *line_start = tag;
  while (line_start > text && line_start[-1] != '\n')
    line_start--;
  bool block = true;
  for (const char *q = line_start; q + 1 < tag; q++)
    if (q[0] == '/' && q[1] == '/')
      block = false;
  const char *end = block ? strstr(tag, "*/") : NULL;
  if (block && !end)
    return NULL;
  /* A block comment ends where it closes; a run of line comments ends at
   * the first line that is not one. */
  ks_buf b = KS_BUF_INIT;
  const char *p = tag + strlen("kernelsmith-variant:");
  while (*p) {
    const char *nl = strchr(p, '\n');
    const char *line_end = nl ? nl : p + strlen(p);
    if (block && end < line_end)
      line_end = end;
    const char *s = p;
    while (s < line_end && (isspace((unsigned char)*s) || *s == '*' || *s == '/'))
      s++;
    ks_buf_add(&b, s, (size_t)(line_end - s));
    ks_buf_addc(&b, '\n');
    if (block && line_end == end)
      break;
    if (!nl)
      break;
    p = nl + 1;
    if (!block) {
      const char *t = p;
      while (*t == ' ' || *t == '\t')
        t++;
      if (strncmp(t, "//", 2))
        break;
    }
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

static bool starts_with_word(const char *s, const char *word) {
  size_t n = strlen(word);
  return !strncmp(s, word, n) && !ks_ctext_is_ident_char(s[n]);
}

/* "grid = a, block = b, smem = c" */
static int parse_launch(ks_ctx *ctx, const char *file, unsigned line, const char *text,
                        ks_arena *arena, ks_variant *out) {
  ks_strings parts = {0};
  ks_ctext_split(arena, text, text + strlen(text), &parts);
  for (size_t i = 0; i < parts.len; i++) {
    const char *eq = strchr(parts.items[i], '=');
    if (!eq)
      return ks_fail(ctx, "%s:%u: launch: expected name = expression, got '%s'", file, line,
                     parts.items[i]);
    const char *name = ks_ctext_trim(arena, parts.items[i], eq);
    const char *value = ks_ctext_trim(arena, eq + 1, eq + strlen(eq));
    if (!*value)
      return ks_fail(ctx, "%s:%u: launch: '%s' has no value", file, line, name);
    if (!strcmp(name, "grid"))
      out->grid = value;
    else if (!strcmp(name, "block"))
      out->block = value;
    else if (!strcmp(name, "smem"))
      out->smem = value;
    else
      return ks_fail(ctx, "%s:%u: launch: unknown field '%s' (grid, block or smem)", file, line,
                     name);
  }
  return 0;
}

int ks_variant_parse(ks_ctx *ctx, const char *file, const char *text, const char *original,
                     ks_arena *arena, ks_variant *out, bool *is_template) {
  memset(out, 0, sizeof *out);
  *is_template = false;
  out->file = ks_arena_strdup(arena, file);
  const char *wanted = NULL;
  unsigned first = 0;
  const char *notes = annotation(arena, text, &first);
  unsigned line = first;
  for (const char *p = notes; p && *p; line++) {
    const char *nl = strchr(p, '\n');
    const char *s = ks_ctext_trim(arena, p, nl ? nl : p + strlen(p));
    p = nl ? nl + 1 : p + strlen(p);
    if (!*s)
      continue;
    if (starts_with_word(s, "launch")) {
      if (parse_launch(ctx, file, line, s + 6, arena, out))
        return -1;
    } else if (starts_with_word(s, "requires")) {
      const char *guard = ks_ctext_trim(arena, s + 8, s + strlen(s));
      if (!*guard)
        return ks_fail(ctx, "%s:%u: requires: no condition", file, line);
      *ks_array_push(arena, &out->requires) = guard;
    } else if (starts_with_word(s, "kernel")) {
      wanted = ks_ctext_trim(arena, s + 6, s + strlen(s));
    } else {
      return ks_fail(ctx, "%s:%u: unknown line '%s' (launch, requires or kernel)", file, line, s);
    }
  }

  kernel_def kernels[32];
  size_t n = find_kernels(arena, text, kernels, 32);
  const kernel_def *k = NULL;
  for (size_t i = 0; i < n; i++)
    if (!wanted ? n == 1 : !strcmp(kernels[i].name, wanted))
      k = &kernels[i];
  if (!k) {
    if (!n)
      return ks_fail(ctx, "%s: no __global__ kernel in the variant", file);
    if (wanted)
      return ks_fail(ctx, "%s: no kernel '%s' in the variant", file, wanted);
    return ks_fail(ctx, "%s: %zu kernels in the variant; name one with a 'kernel NAME' line",
                   file, n);
  }
  *is_template = k->is_template;
  out->kernel_name = k->name;
  out->source = ks_arena_strdup(arena, text);
  if (original && !strcmp(k->name, original)) {
    /* Both kernels share one unit: give the variant its own name, where it
     * is declared only (a parameter or local of the same name keeps its
     * own; a kernel does not call itself). */
    const char *renamed = ks_arena_printf(arena, "%s_ks_variant", original);
    size_t at = (size_t)(k->at - text), len = strlen(original);
    out->source = ks_arena_printf(arena, "%.*s%s%s", (int)at, text, renamed, text + at + len);
    out->kernel_name = renamed;
  }
  return 0;
}

int ks_variant_load(ks_ctx *ctx, const char *path, const char *original, ks_arena *arena,
                    ks_variant *out, bool *is_template) {
  ks_buf text = KS_BUF_INIT;
  int rc = ks_read_file(ctx, path, 4u << 20, &text);
  if (!rc)
    rc = ks_variant_parse(ctx, path, text.data, original, arena, out, is_template);
  ks_buf_release(&text);
  return rc;
}

const char *ks_variant_name_expression(ks_arena *arena, const ks_variant *v, bool is_template,
                                       const char *original_name_expression) {
  if (!is_template)
    return v->kernel_name;
  const char *open = original_name_expression ? strchr(original_name_expression, '<') : NULL;
  return open ? ks_arena_printf(arena, "%s%s", v->kernel_name, open) : v->kernel_name;
}

/* ---- writing ------------------------------------------------------------ */

#define TECHNIQUE_PREFIX "// kernelsmith-cc techniques:"

/* `text` without its kernelsmith-variant comment and technique lines. */
static const char *strip_annotation(ks_arena *arena, const char *text) {
  ks_buf b = KS_BUF_INIT;
  const char *p = text;
  const char *tag = strstr(p, "kernelsmith-variant:");
  if (tag) {
    const char *line_start = tag;
    while (line_start > text && line_start[-1] != '\n')
      line_start--;
    const char *open = NULL;
    for (const char *q = line_start; q + 1 < tag; q++)
      if (q[0] == '/' && (q[1] == '*' || q[1] == '/')) {
        open = q;
        break;
      }
    const char *cut_end = NULL;
    if (open && open[1] == '*') {
      const char *close = strstr(tag, "*/");
      if (close)
        cut_end = close + 2;
    } else if (open) {
      /* A run of line comments: up to the first line that is not one. */
      const char *q = tag;
      for (;;) {
        const char *nl = strchr(q, '\n');
        if (!nl) {
          q += strlen(q);
          break;
        }
        const char *t = nl + 1;
        while (*t == ' ' || *t == '\t')
          t++;
        if (strncmp(t, "//", 2)) {
          q = nl;
          break;
        }
        q = nl + 1;
      }
      cut_end = q;
    }
    if (cut_end) {
      /* Remove whole lines when the comment stands alone on them. */
      const char *from = open;
      bool alone_before = true;
      for (const char *q = line_start; q < open; q++)
        alone_before = alone_before && (*q == ' ' || *q == '\t');
      if (alone_before)
        from = line_start;
      const char *to = cut_end;
      while (*to == ' ' || *to == '\t')
        to++;
      if (alone_before && *to == '\n')
        to++;
      else
        to = cut_end;
      ks_buf_add(&b, text, (size_t)(from - text));
      p = to;
    }
  }
  ks_buf_adds(&b, p);
  ks_buf kept = KS_BUF_INIT;
  for (p = b.data; *p;) {
    const char *nl = strchr(p, '\n');
    const char *end = nl ? nl + 1 : p + strlen(p);
    if (strncmp(p, TECHNIQUE_PREFIX, strlen(TECHNIQUE_PREFIX)))
      ks_buf_add(&kept, p, (size_t)(end - p));
    p = end;
  }
  const char *out = ks_arena_strdup(arena, kept.data);
  ks_buf_release(&b);
  ks_buf_release(&kept);
  return out;
}

const char *ks_variant_format(ks_arena *arena, const ks_variant *v, const char *technique_comment) {
  ks_buf b = KS_BUF_INIT;
  if (technique_comment && *technique_comment)
    ks_buf_addf(&b, TECHNIQUE_PREFIX " %s\n", technique_comment);
  ks_buf_adds(&b, "/* kernelsmith-variant:\n");
  if (v->kernel_name)
    ks_buf_addf(&b, " *   kernel %s\n", v->kernel_name);
  if (v->grid || v->block || v->smem) {
    ks_buf_adds(&b, " *   launch");
    const char *sep = " ";
    if (v->grid) {
      ks_buf_addf(&b, "%sgrid = %s", sep, v->grid);
      sep = ", ";
    }
    if (v->block) {
      ks_buf_addf(&b, "%sblock = %s", sep, v->block);
      sep = ", ";
    }
    if (v->smem)
      ks_buf_addf(&b, "%ssmem = %s", sep, v->smem);
    ks_buf_addc(&b, '\n');
  }
  for (size_t i = 0; i < v->requires.len; i++)
    ks_buf_addf(&b, " *   requires %s\n", v->requires.items[i]);
  ks_buf_adds(&b, " */\n");
  const char *source = v->source ? strip_annotation(arena, v->source) : "";
  ks_buf_adds(&b, source);
  if (b.len && b.data[b.len - 1] != '\n')
    ks_buf_addc(&b, '\n');
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

const char *ks_variant_techniques(ks_arena *arena, const ks_variant *v) {
  for (const char *p = v->source; p && *p;) {
    const char *nl = strchr(p, '\n');
    const char *end = nl ? nl : p + strlen(p);
    if (!strncmp(p, TECHNIQUE_PREFIX, strlen(TECHNIQUE_PREFIX))) {
      const char *t = ks_ctext_trim(arena, p + strlen(TECHNIQUE_PREFIX), end);
      return *t ? t : NULL;
    }
    p = nl ? nl + 1 : end;
  }
  return NULL;
}
