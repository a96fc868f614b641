/* Lexical helpers of the LLM text side (llm_text_int.h): a kernel's
 * declaration read from source text without a compiler (the reply parser
 * must judge a child before anything parses it, and the prompts quote the
 * signature), and quoting that never lets much of a reply through. */
#include <ctype.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "llm_text_int.h"

bool lt_is_word_at(const char *text, const char *p, size_t n) {
  return (p == text || !ks_ctext_is_ident_char(p[-1])) && !ks_ctext_is_ident_char(p[n]);
}

char *lt_blank(ks_arena *arena, const char *src, bool directives) {
  size_t n = strlen(src);
  char *out = ks_arena_alloc(arena, n + 1);
  memcpy(out, src, n + 1);
  bool line_start = true;
  for (size_t i = 0; i < n;) {
    if (directives && line_start) {
      size_t j = i;
      while (j < n && (src[j] == ' ' || src[j] == '\t'))
        j++;
      if (src[j] == '#') {
        /* A directive runs to the end of the line, continuations included;
         * a comment inside it is blanked with it. */
        while (j < n && src[j] != '\n') {
          const char *skip = ks_ctext_skip_lexical(src + j);
          if (skip != src + j) {
            for (size_t k = j; k < (size_t)(skip - src); k++)
              if (out[k] != '\n')
                out[k] = ' ';
            j = (size_t)(skip - src);
            continue;
          }
          if (src[j] == '\\' && src[j + 1] == '\n')
            j++;
          out[j] = out[j] == '\n' ? '\n' : ' ';
          j++;
        }
        for (size_t k = i; k < j; k++)
          if (out[k] != '\n')
            out[k] = ' ';
        i = j;
        continue;
      }
    }
    const char *end = ks_ctext_skip_lexical(src + i);
    if (end == src + i) {
      line_start = src[i] == '\n' || (line_start && (src[i] == ' ' || src[i] == '\t'));
      i++;
      continue;
    }
    for (size_t k = i; k < (size_t)(end - src); k++)
      if (out[k] != '\n')
        out[k] = ' ';
    /* A comment before '#' still leaves a directive (the preprocessor
     * reads comments as spaces); a literal does not. */
    line_start = line_start && src[i] == '/';
    i = (size_t)(end - src);
  }
  return out;
}

static bool is_attribute(const char *s, size_t n) {
  static const char *const attrs[] = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__",
                                      "__attribute__", "__declspec", "alignas"};
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
    if (strlen(attrs[i]) == n && !strncmp(s, attrs[i], n))
      return true;
  return false;
}

/* Fills `k` for the __global__ at `g`; false when no parameter list follows. */
static bool read_kernel(const char *code, const char *g, lt_kernel *k) {
  const char *end = code + strlen(code);
  const char *paren = g + 10, *s = NULL, *e = NULL;
  for (;;) {
    while (paren < end && *paren != '(' && *paren != ';' && *paren != '{')
      paren++;
    if (paren >= end || *paren != '(')
      return false;
    e = paren;
    while (e > g && isspace((unsigned char)e[-1]))
      e--;
    s = e;
    while (s > g && ks_ctext_is_ident_char(s[-1]))
      s--;
    if (s == e)
      return false;
    if (!is_attribute(s, (size_t)(e - s)))
      break;
    const char *close = ks_ctext_matching(paren, end);
    if (!close)
      return false;
    paren = close + 1;
  }
  const char *close = ks_ctext_matching(paren, end);
  if (!close)
    return false;
  const char *decl = g;
  while (decl > code && decl[-1] != ';' && decl[-1] != '}' && decl[-1] != '{')
    decl--;
  while (decl < g && isspace((unsigned char)*decl))
    decl++;
  *k = (lt_kernel){.global_at = (size_t)(g - code),
                   .decl_begin = (size_t)(decl - code),
                   .name_begin = (size_t)(s - code),
                   .name_end = (size_t)(e - code),
                   .params_open = (size_t)(paren - code),
                   .params_close = (size_t)(close - code)};
  for (const char *t = decl; t + 8 <= g; t++)
    if (!strncmp(t, "template", 8) && lt_is_word_at(code, t, 8)) {
      const char *lt = t + 8;
      while (lt < g && isspace((unsigned char)*lt))
        lt++;
      const char *gt = lt < g && *lt == '<' ? ks_ctext_matching(lt, g) : NULL;
      if (gt) {
        k->tparams_open = (size_t)(lt - code);
        k->tparams_close = (size_t)(gt - code);
      }
      break;
    }
  return true;
}

size_t lt_find_kernels(const char *code, lt_kernel *out, size_t max) {
  size_t n = 0;
  for (const char *p = strstr(code, "__global__"); p; p = strstr(p + 10, "__global__")) {
    if (!lt_is_word_at(code, p, 10))
      continue;
    lt_kernel k = {0};
    if (!read_kernel(code, p, &k))
      k = (lt_kernel){.global_at = (size_t)(p - code)};
    if (n < max)
      out[n] = k;
    n++;
  }
  return n;
}

bool lt_find_kernel(const char *code, const char *name, lt_kernel *out) {
  lt_kernel ks[64];
  size_t n = lt_find_kernels(code, ks, 64);
  size_t len = strlen(name);
  for (size_t i = 0; i < n && i < 64; i++)
    if (ks[i].name_end - ks[i].name_begin == len && !strncmp(code + ks[i].name_begin, name, len)) {
      *out = ks[i];
      return true;
    }
  return false;
}

/* The next token of [p, end): an identifier or number, or one character. */
static const char *next_token(const char *p, const char *end, const char **tok) {
  while (p < end && isspace((unsigned char)*p))
    p++;
  *tok = p;
  if (p >= end)
    return p;
  if (ks_ctext_is_ident_char(*p)) {
    while (p < end && ks_ctext_is_ident_char(*p))
      p++;
    return p;
  }
  return p + 1;
}

static bool is_restrict(const char *t, const char *e) {
  size_t n = (size_t)(e - t);
  return (n == 12 && !strncmp(t, "__restrict__", 12)) || (n == 10 && !strncmp(t, "__restrict", 10));
}

bool lt_same_tokens(const char *a, const char *a_end, const char *b, const char *b_end,
                    bool ignore_restrict) {
  for (;;) {
    const char *ta, *tb, *ea, *eb;
    do
      ea = next_token(a, a_end, &ta), a = ea;
    while (ignore_restrict && ta < a_end && is_restrict(ta, ea));
    do
      eb = next_token(b, b_end, &tb), b = eb;
    while (ignore_restrict && tb < b_end && is_restrict(tb, eb));
    bool a_done = ta >= a_end, b_done = tb >= b_end;
    if (a_done || b_done)
      return a_done && b_done;
    if (ea - ta != eb - tb || strncmp(ta, tb, (size_t)(ea - ta)))
      return false;
  }
}

const char *lt_squeeze(ks_arena *arena, const char *begin, const char *end) {
  ks_buf b = KS_BUF_INIT;
  bool space = false;
  for (const char *p = begin; p < end; p++) {
    if (isspace((unsigned char)*p)) {
      space = b.len > 0;
      continue;
    }
    if (space)
      ks_buf_addc(&b, ' ');
    space = false;
    ks_buf_addc(&b, *p);
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

void lt_read_params(ks_arena *arena, const char *open, const char *close, lt_params *out) {
  ks_strings parts = {0};
  ks_ctext_split(arena, open + 1, close, &parts);
  for (size_t i = 0; i < parts.len; i++) {
    const char *s = parts.items[i], *e = s + strlen(s);
    if (parts.len == 1 && !strcmp(s, "void"))
      break;
    const char *eq = ks_ctext_find(s, e, "=");
    if (eq)
      e = eq; /* a default argument */
    const char *bracket = memchr(s, '[', (size_t)(e - s));
    lt_param *p = ks_array_push(arena, out);
    p->pointer = memchr(s, '*', (size_t)(e - s)) || bracket;
    for (const char *q = s; q < e; q++)
      if (!strncmp(q, "__restrict", 10) && lt_is_word_at(s, q, strncmp(q, "__restrict__", 12) ? 10 : 12))
        p->restricted = true;
    if (bracket)
      e = bracket;
    while (e > s && !ks_ctext_is_ident_char(e[-1]))
      e--;
    const char *n = e;
    while (n > s && ks_ctext_is_ident_char(n[-1]))
      n--;
    p->name = ks_arena_strndup(arena, n, (size_t)(e - n));
    ks_buf t = KS_BUF_INIT;
    for (const char *q = s; q < n;) {
      if (!strncmp(q, "__restrict", 10) && lt_is_word_at(s, q, strncmp(q, "__restrict__", 12) ? 10 : 12)) {
        q += strncmp(q, "__restrict__", 12) ? 10 : 12;
        continue;
      }
      ks_buf_addc(&t, *q++);
    }
    p->type = lt_squeeze(arena, t.data, t.data + t.len);
    ks_buf_release(&t);
  }
}

static bool key_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

/* The length of the key-like run at text[i], or 0. */
static size_t key_at(const char *text, size_t len, size_t i) {
  if (i + 3 > len || strncmp(text + i, "sk-", 3) || (i > 0 && key_char(text[i - 1])))
    return 0;
  size_t r = i + 3;
  while (r < len && key_char(text[r]))
    r++;
  return r - i - 3 >= 8 ? r - i : 0;
}

bool lt_has_key(const char *text, size_t len) {
  for (size_t i = 0; i < len && text[i]; i++)
    if (key_at(text, len, i))
      return true;
  return false;
}

const char *lt_quote(ks_arena *arena, const char *text, size_t len, size_t max) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addc(&b, '\'');
  size_t shown = 0;
  bool cut = false, space = false;
  for (size_t i = 0; i < len && text[i]; i++) {
    if (shown >= max) {
      cut = true;
      break;
    }
    /* A key is redacted whole, wherever the cut falls: the run is measured
     * in the reply, not in what is shown. */
    size_t key = key_at(text, len, i);
    if (key) {
      if (space)
        ks_buf_addc(&b, ' ');
      space = false;
      ks_buf_adds(&b, "sk-[redacted]");
      shown += 13;
      i += key - 1;
      continue;
    }
    unsigned char c = (unsigned char)text[i];
    if (isspace(c)) {
      space = shown > 0;
      continue;
    }
    if (space) {
      ks_buf_addc(&b, ' ');
      shown++;
    }
    space = false;
    ks_buf_addc(&b, c < 0x20 || c >= 0x7f ? '?' : (char)c);
    shown++;
  }
  if (cut)
    ks_buf_adds(&b, "...");
  ks_buf_addc(&b, '\'');
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}
