/* Lexical helpers over source text; see ks_ctext.h. */
#include "ks_ctext.h"

#include <ctype.h>
#include <string.h>

#include "ks_buf.h"

bool ks_ctext_is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

const char *ks_ctext_skip_lexical(const char *p) {
  if (p[0] == '/' && p[1] == '/') {
    while (*p && *p != '\n')
      p++;
    return p;
  }
  if (p[0] == '/' && p[1] == '*') {
    const char *end = strstr(p + 2, "*/");
    return end ? end + 2 : p + strlen(p);
  }
  if (*p == '"' || *p == '\'') {
    char q = *p++;
    while (*p && *p != q && *p != '\n')
      p += (*p == '\\' && p[1]) ? 2 : 1;
    return *p == q ? p + 1 : p;
  }
  return p;
}

const char *ks_ctext_find(const char *p, const char *end, const char *what) {
  size_t n = strlen(what);
  while (p < end) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if ((size_t)(end - p) >= n && !strncmp(p, what, n))
      return p;
    p++;
  }
  return NULL;
}

const char *ks_ctext_matching(const char *open, const char *end) {
  char o = *open;
  char c = o == '(' ? ')' : o == '<' ? '>' : o == '[' ? ']' : o == '{' ? '}' : 0;
  if (!c)
    return NULL;
  int depth = 0;
  for (const char *p = open; p < end;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (*p == o)
      depth++;
    else if (*p == c && --depth == 0)
      return p;
    p++;
  }
  return NULL;
}

const char *ks_ctext_trim(ks_arena *arena, const char *begin, const char *end) {
  while (begin < end && isspace((unsigned char)*begin))
    begin++;
  while (end > begin && isspace((unsigned char)end[-1]))
    end--;
  return ks_arena_strndup(arena, begin, (size_t)(end - begin));
}

void ks_ctext_split(ks_arena *arena, const char *p, const char *end, ks_strings *out) {
  int depth = 0;
  const char *start = p;
  bool any = false;
  while (p < end) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      any = true;
      continue;
    }
    if (*p == '(' || *p == '[' || *p == '{')
      depth++;
    else if (*p == ')' || *p == ']' || *p == '}')
      depth--;
    else if (*p == ',' && depth == 0) {
      *ks_array_push(arena, out) = ks_ctext_trim(arena, start, p);
      start = p + 1;
      any = true;
      p++;
      continue;
    }
    if (!isspace((unsigned char)*p))
      any = true;
    p++;
  }
  if (any)
    *ks_array_push(arena, out) = ks_ctext_trim(arena, start, end);
}

const char *ks_ctext_substitute(ks_arena *arena, const char *text, const char *const *names,
                                const char *const *values, size_t n) {
  ks_buf b = KS_BUF_INIT;
  for (const char *p = text; *p;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      ks_buf_add(&b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    if (ks_ctext_is_ident_char(*p) && !isdigit((unsigned char)*p)) {
      const char *s = p;
      while (ks_ctext_is_ident_char(*p))
        p++;
      size_t len = (size_t)(p - s);
      const char *value = NULL;
      for (size_t i = 0; i < n && !value; i++)
        if (names[i] && strlen(names[i]) == len && !strncmp(names[i], s, len))
          value = values[i];
      if (value)
        ks_buf_adds(&b, value);
      else
        ks_buf_add(&b, s, len);
    } else if (isdigit((unsigned char)*p)) {
      /* A number with letters in it (1.5f, 0x1F) is not an identifier. */
      while (ks_ctext_is_ident_char(*p) || *p == '.')
        ks_buf_addc(&b, *p++);
    } else {
      ks_buf_addc(&b, *p++);
    }
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}
