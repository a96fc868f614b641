/* The candidate rules: what a proposed variant may contain (see
 * ks_compile.h). A lexical pass, not a compiler: comments and literals are
 * blanked first, then top-level declarations are read one by one. NVRTC
 * catches the rest (host calls from device code do not compile). */
#include <ctype.h>
#include <string.h>

#include "ks_compile.h"
#include "ks_ctext.h"
#include "ks_toolkit.h"

/* A copy of `src` with comments and string/char literals turned into spaces
 * (newlines kept, so line numbers still hold). */
static char *blank_lexical(ks_arena *arena, const char *src) {
  size_t n = strlen(src);
  char *out = ks_arena_alloc(arena, n + 1);
  memcpy(out, src, n + 1);
  for (size_t i = 0; i < n;) {
    const char *end = ks_ctext_skip_lexical(src + i);
    if (end == src + i) {
      i++;
      continue;
    }
    for (size_t k = i; k < (size_t)(end - src); k++)
      if (out[k] != '\n')
        out[k] = ' ';
    i = (size_t)(end - src);
  }
  return out;
}

static unsigned line_of(const char *text, const char *at) {
  unsigned line = 1;
  for (const char *p = text; p < at; p++)
    line += *p == '\n';
  return line;
}

static bool has_word(const char *begin, const char *end, const char *word) {
  size_t n = strlen(word);
  for (const char *p = begin; p + n <= end; p++)
    if (!strncmp(p, word, n) && (p == begin || !ks_ctext_is_ident_char(p[-1])) &&
        (p + n == end || !ks_ctext_is_ident_char(p[n])))
      return true;
  return false;
}

/* The identifier that ends right before `at` (skipping spaces). */
static const char *ident_before(ks_arena *arena, const char *begin, const char *at) {
  const char *e = at;
  while (e > begin && isspace((unsigned char)e[-1]))
    e--;
  const char *s = e;
  while (s > begin && ks_ctext_is_ident_char(s[-1]))
    s--;
  return s < e ? ks_arena_strndup(arena, s, (size_t)(e - s)) : "?";
}

static const char *check_includes(ks_arena *arena, const char *src, const char *code) {
  for (const char *line = src; *line;) {
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '#') {
      p++;
      while (*p == ' ' || *p == '\t')
        p++;
      if (!strncmp(p, "include", 7)) {
        p += 7;
        while (*p == ' ' || *p == '\t')
          p++;
        char close = *p == '<' ? '>' : *p == '"' ? '"' : 0;
        const char *end = close ? strchr(p + 1, close) : NULL;
        const char *nl = strchr(p, '\n');
        char name[256] = "";
        if (end && (!nl || end < nl) && (size_t)(end - p - 1) < sizeof name)
          memcpy(name, p + 1, (size_t)(end - p - 1)), name[end - p - 1] = '\0';
        if (!ks_toolkit_header_allowed(name))
          return ks_arena_printf(arena, "line %u: #include of '%s', which is not one of the "
                                        "toolkit's device headers (device code only)",
                                 line_of(src, line), *name ? name : "?");
      }
    }
    const char *nl = strchr(line, '\n');
    line = nl ? nl + 1 : line + strlen(line);
  }
  (void)code;
  return NULL;
}

static const char *check_launches(ks_arena *arena, const char *code) {
  const char *p = strstr(code, "<<<");
  if (p)
    return ks_arena_printf(arena, "line %u: a kernel launch from device code (device-side "
                                  "launches are not allowed in a variant)",
                           line_of(code, p));
  static const char *const apis[] = {"cudaLaunchKernel", "cudaLaunchDevice",
                                     "cudaGetParameterBuffer", "cudaLaunchCooperativeKernel",
                                     "cudaDeviceSynchronize", "cudaMalloc"};
  for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
    size_t n = strlen(apis[i]);
    for (const char *q = strstr(code, apis[i]); q; q = strstr(q + 1, apis[i]))
      if ((q == code || !ks_ctext_is_ident_char(q[-1])) && !ks_ctext_is_ident_char(q[n]))
        return ks_arena_printf(arena, "line %u: calls %s (device code may not launch work or "
                                      "allocate)",
                               line_of(code, q), apis[i]);
  }
  return NULL;
}

/* Reads the top-level declarations of `code` (namespaces and extern "C"
 * blocks are transparent) and checks each. */
static const char *check_declarations(ks_arena *arena, const char *code, ks_candidate_rule *rule) {
  const char *chunk = code;
  int transparent = 0; /* namespace / extern "C" braces open */
  for (const char *p = code; *p; p++) {
    if (*p == '#') { /* preprocessor line: not a declaration */
      while (*p && *p != '\n')
        p += (*p == '\\' && p[1] == '\n') ? 2 : 1;
      chunk = p + (*p != 0);
      if (!*p)
        break;
      continue;
    }
    if (*p == '}' && transparent > 0) {
      transparent--;
      chunk = p + 1;
      continue;
    }
    if (*p != ';' && *p != '{')
      continue;
    /* [chunk, p) is one declaration's head. */
    if (*p == '{' && (has_word(chunk, p, "namespace") || has_word(chunk, p, "extern"))) {
      if (!has_word(chunk, p, "struct") && !has_word(chunk, p, "class")) {
        transparent++;
        chunk = p + 1;
        continue;
      }
    }
    const char *paren = memchr(chunk, '(', (size_t)(p - chunk));
    bool record = has_word(chunk, p, "struct") || has_word(chunk, p, "class") ||
                  has_word(chunk, p, "union") || has_word(chunk, p, "enum");
    bool device = has_word(chunk, p, "__device__") || has_word(chunk, p, "__global__");
    /* An '=' before the parenthesis is an initializer (`x = f(...) {`);
     * one after it, a default argument of a function. */
    const char *eq = memchr(chunk, '=', (size_t)(p - chunk));
    bool is_var = !paren || record || (*p == '{' && eq && eq < paren);
    *rule = KS_CANDIDATE_HOST_FUNCTION;
    if (*p == '{' && paren && !record && !is_var && !device && !has_word(chunk, p, "operator"))
      return ks_arena_printf(arena, "line %u: host function '%s' (device code only: mark it "
                                    "__device__)",
                             line_of(code, paren), ident_before(arena, chunk, paren));
    *rule = KS_CANDIDATE_STATE;
    if (has_word(chunk, p, "__managed__"))
      return ks_arena_printf(arena, "line %u: __managed__ variable (state outside the kernel's "
                                    "arguments is not allowed)",
                             line_of(code, chunk + strspn(chunk, " \t\n")));
    if (is_var && !record && has_word(chunk, p, "__device__") && !has_word(chunk, p, "const") &&
        !has_word(chunk, p, "constexpr") && !has_word(chunk, p, "__constant__")) {
      const char *name_end = memchr(chunk, '=', (size_t)(p - chunk));
      const char *bracket = memchr(chunk, '[', (size_t)(p - chunk));
      const char *stop = name_end ? name_end : p;
      if (bracket && bracket < stop)
        stop = bracket;
      return ks_arena_printf(arena, "line %u: mutable __device__ variable '%s' (it would keep "
                                    "state between launches)",
                             line_of(code, stop), ident_before(arena, chunk, stop));
    }
    if (*p == '{') { /* skip a body or an initializer */
      const char *close = ks_ctext_matching(p, p + strlen(p));
      *rule = KS_CANDIDATE_MALFORMED;
      if (!close)
        return ks_arena_printf(arena, "line %u: unbalanced braces", line_of(code, p));
      p = close;
    }
    chunk = p + 1;
  }
  return NULL;
}

const char *ks_candidate_check_rule(ks_arena *arena, const char *source,
                                    ks_candidate_rule *rule) {
  char *code = blank_lexical(arena, source);
  ks_candidate_rule r = KS_CANDIDATE_INCLUDE;
  const char *why = check_includes(arena, source, code);
  if (!why) {
    r = KS_CANDIDATE_LAUNCH;
    why = check_launches(arena, code);
  }
  if (!why)
    why = check_declarations(arena, code, &r);
  *rule = why ? r : KS_CANDIDATE_OK;
  return why;
}

const char *ks_candidate_check(ks_arena *arena, const char *source) {
  ks_candidate_rule rule;
  return ks_candidate_check_rule(arena, source, &rule);
}
