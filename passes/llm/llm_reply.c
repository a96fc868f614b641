/* Parsing the three agents' replies (ks_llm_text.h; formats in
 * docs/llm-prompts.md).
 *
 * A reply is read line by line with anchored PCRE2 patterns (fences, edit
 * markers, section headers) under the limits of llm_regex.c; what lies
 * between is then handled in plain C. The executor's reply becomes a child
 * in four steps: the code (one fenced block, or SEARCH/REPLACE edits applied
 * to the parent), the launch policy (one ```json block, cJSON, expressions
 * checked with ks_expr), the rules of llm_reply_check.c, and the child
 * itself (the policy is llm_reply_json.c's). Every failure is a reason code
 * and one bounded line. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_llm_text.h"
#include "llm_text_int.h"

const char *ks_reply_reason_name(ks_reply_reason r) {
  static const char *const names[KS_REPLY_NREASONS] = {
      "ok",        "malformed",      "no_code",        "signature_changed", "host_code",
      "outside_kernel", "edit_not_found", "bad_json", "too_large"};
  return (unsigned)r < KS_REPLY_NREASONS ? names[r] : "?";
}

/* ---- results ------------------------------------------------------------ */

static void count(ks_reply_tally *tally, ks_reply_reason r) {
  if (!tally)
    return;
  if (r == KS_REPLY_OK)
    tally->accepted++;
  else if ((unsigned)r < KS_REPLY_NREASONS)
    tally->rejected[r]++;
}

/* Records a rejection: one printable line of at most 240 bytes. Reply text
 * reaches `fmt`'s arguments only through lt_quote. */
void lt_reject(ks_arena *arena, ks_reply_result *out, ks_reply_reason r, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  size_t n = strlen(buf);
  if (n > 240)
    n = 240;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)buf[i] < 0x20)
      buf[i] = ' ';
  out->reason = r;
  out->message = ks_arena_strndup(arena, buf, n);
}

/* The reply with CRLF made LF; NULL (and a rejection) when over the cap. */
static char *normalized(ks_arena *arena, const char *reply, ks_reply_result *out) {
  size_t len = reply ? strnlen(reply, (size_t)KS_REPLY_MAX_BYTES + 1) : 0;
  if (len > KS_REPLY_MAX_BYTES) {
    lt_reject(arena, out, KS_REPLY_TOO_LARGE, "the reply is longer than %d bytes; not read",
           KS_REPLY_MAX_BYTES);
    return NULL;
  }
  char *s = ks_arena_alloc(arena, len + 1);
  size_t j = 0;
  for (size_t i = 0; i < len; i++)
    if (!(reply[i] == '\r' && reply[i + 1] == '\n'))
      s[j++] = reply[i];
  s[j] = '\0';
  return s;
}

static unsigned line_at(const char *text, size_t at) {
  unsigned n = 1;
  for (size_t i = 0; i < at && text[i]; i++)
    n += text[i] == '\n';
  return n;
}

static size_t line_end(const char *s, size_t len, size_t at) {
  const char *nl = memchr(s + at, '\n', len - at);
  return nl ? (size_t)(nl - s) : len;
}

static size_t next_line(const char *s, size_t len, size_t at) {
  size_t e = line_end(s, len, at);
  return e < len ? e + 1 : len;
}

/* ---- sections: PLAN, TECHNIQUE, INSIGHT --------------------------------- */

/* Where a section header's pattern matches last; its text runs from group
 * 1 to the next header of any section. 1 found, 0 not, LT_RE_LIMIT. */
static int section(ks_arena *arena, const char *s, size_t len, const char *header,
                   size_t max_lines, size_t max_bytes, const char **text) {
  lt_re h, any;
  if (lt_re_open(&h, header, true))
    return -1;
  /* Only the section names a reply uses: a plan line such as "CUDA: ..."
   * must not end the plan. */
  if (lt_re_open(&any, "^[ \\t>*_#]*(?:PLAN|TECHNIQUES?|INSIGHTS?|NOTES?|RISKS?|SUMMARY|"
                       "RATIONALE|CODE)\\b[*_ \\t]*:", true)) {
    lt_re_close(&h);
    return -1;
  }
  size_t ov[4], at = 0, body = (size_t)-1;
  int rc;
  while ((rc = lt_re_find(&h, s, len, at, ov, 2)) == 1) {
    body = ov[2];
    at = next_line(s, len, ov[1]);
    if (at >= len)
      break;
  }
  size_t end = len;
  if (rc != LT_RE_LIMIT && body != (size_t)-1) {
    int r2 = lt_re_find(&any, s, len, next_line(s, len, body), ov, 1);
    if (r2 == 1)
      end = ov[0];
    rc = r2 == LT_RE_LIMIT ? LT_RE_LIMIT : 1;
  }
  lt_re_close(&h);
  lt_re_close(&any);
  if (rc == LT_RE_LIMIT)
    return LT_RE_LIMIT;
  if (body == (size_t)-1)
    return 0;
  /* Lines right-trimmed, fence lines dropped, blank runs collapsed. */
  ks_buf b = KS_BUF_INIT;
  size_t lines = 0;
  bool blank = false;
  for (size_t p = body; p < end && lines < max_lines;) {
    size_t e = line_end(s, end, p);
    size_t q = e;
    while (q > p && isspace((unsigned char)s[q - 1]))
      q--;
    const char *t = s + p;
    while (t < s + q && isspace((unsigned char)*t))
      t++;
    bool fence = !strncmp(t, "```", 3) || !strncmp(t, "~~~", 3);
    if (q == p || t == s + q) {
      blank = b.len > 0;
    } else if (!fence) {
      size_t n = q - p;
      if (b.len + n + 2 > max_bytes) {
        if (b.len)
          break;
        n = max_bytes - 2;
      }
      if (blank)
        ks_buf_addc(&b, '\n');
      blank = false;
      ks_buf_add(&b, s + p, n);
      ks_buf_addc(&b, '\n');
      lines++;
    }
    p = e + 1;
  }
  *text = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return 1;
}

static const char *technique_tag(ks_arena *arena, const char *s, size_t len, int *rc) {
  lt_re re;
  *rc = lt_re_open(&re, "^[ \\t>*_#]*TECHNIQUE\\b[*_ \\t]*:[*_ \\t`]*([^\\n]*)$", true);
  if (*rc)
    return NULL;
  size_t ov[4], at = 0, b = (size_t)-1, e = 0;
  int r;
  while ((r = lt_re_find(&re, s, len, at, ov, 2)) == 1) {
    b = ov[2], e = ov[3];
    at = next_line(s, len, ov[1]);
    if (at >= len)
      break;
  }
  lt_re_close(&re);
  if (r == LT_RE_LIMIT) {
    *rc = LT_RE_LIMIT;
    return NULL;
  }
  /* A tag goes into technique chains and reports: a safe alphabet only. */
  char tag[33];
  size_t n = 0;
  for (size_t i = b; b != (size_t)-1 && i < e && n < 32; i++) {
    char c = (char)tolower((unsigned char)s[i]);
    if (isalnum((unsigned char)c) || strchr("_=.+-", c))
      tag[n++] = c;
    else if ((c == ' ' || c == '/') && n && tag[n - 1] != '_')
      tag[n++] = '_';
  }
  while (n && tag[n - 1] == '_')
    n--;
  tag[n] = '\0';
  return n ? ks_arena_strdup(arena, tag) : "llm";
}

int ks_reply_plan(ks_ctx *ctx, const char *reply, ks_arena *arena, ks_reply_tally *tally,
                  ks_reply_result *out) {
  memset(out, 0, sizeof *out);
  out->message = "";
  char *s = normalized(arena, reply, out);
  if (s) {
    size_t len = strlen(s);
    const char *text = NULL;
    int rc = section(arena, s, len, "^[ \\t>*_#]*PLAN\\b[*_ \\t]*:?[*_ \\t]*([^\\n]*)$",
                     KS_REPLY_MAX_PLAN_LINES, KS_REPLY_MAX_PLAN, &text);
    int trc = 0;
    const char *tag = rc == 1 ? technique_tag(arena, s, len, &trc) : NULL;
    if (rc == -1 || trc == -1)
      return ks_fail(ctx, "llm reply parser: a pattern does not compile");
    if (rc == LT_RE_LIMIT || trc == LT_RE_LIMIT)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "the reply is too complex to parse (pattern limits)");
    else if (!rc)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "no PLAN: section");
    else if (!*text)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "the PLAN: section is empty");
    else
      out->text = text, out->technique = tag;
  }
  count(tally, out->reason);
  return 0;
}

int ks_reply_insight(ks_ctx *ctx, const char *reply, ks_arena *arena, ks_reply_tally *tally,
                     ks_reply_result *out) {
  memset(out, 0, sizeof *out);
  out->message = "";
  char *s = normalized(arena, reply, out);
  if (s) {
    const char *text = NULL;
    int rc = section(arena, s, strlen(s), "^[ \\t>*_#]*INSIGHTS?\\b[*_ \\t]*:?[*_ \\t]*([^\\n]*)$",
                     12, KS_REPLY_MAX_INSIGHT, &text);
    if (rc == -1)
      return ks_fail(ctx, "llm reply parser: a pattern does not compile");
    if (rc == LT_RE_LIMIT)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "the reply is too complex to parse (pattern limits)");
    else if (!rc)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "no INSIGHT: section");
    else if (!*text)
      lt_reject(arena, out, KS_REPLY_MALFORMED, "the INSIGHT: section is empty");
    else
      out->text = text;
  }
  count(tally, out->reason);
  return 0;
}

/* ---- the executor's reply: blocks --------------------------------------- */

typedef struct fence {
  size_t open, begin, end, close; /* opening line, content [begin, end), after closing line */
  const char *lang;               /* lowercase info word, "" when none */
  bool has_edits;                 /* edit markers inside: an edit block, not code */
} fence;

typedef struct marker {
  int kind;            /* 0 SEARCH, 1 =======, 2 REPLACE */
  size_t begin, next;  /* the line, and the start of the line after it */
} marker;

typedef struct blocks {
  KS_ARRAY(fence) fences;
  KS_ARRAY(marker) markers;
} blocks;

/* Fences and edit markers, line by line. 0, or a reason with the message
 * set. */
static ks_reply_reason find_blocks(ks_ctx *ctx, ks_arena *arena, const char *s, size_t len,
                                   blocks *bl, ks_reply_result *out, bool *bug) {
  lt_re f, m;
  if (lt_re_open(&f, "^[ \\t]{0,3}(`{3,}|~{3,})[ \\t]*([^\\s`]*)[^\\n]*$", true) ||
      lt_re_open(&m, "^[ \\t]*(?:(<{7})[ \\t]*SEARCH|(={7})|(>{7})[ \\t]*REPLACE)[ \\t]*$", true)) {
    lt_re_close(&f);
    *bug = true;
    ks_fail(ctx, "llm reply parser: a pattern does not compile");
    return KS_REPLY_MALFORMED;
  }
  ks_reply_reason r = KS_REPLY_OK;
  size_t ov[8], at = 0;
  int rc;
  fence *open = NULL;
  size_t open_len = 0;
  char open_char = 0;
  while ((rc = lt_re_find(&f, s, len, at, ov, 3)) == 1) {
    size_t run = ov[3] - ov[2];
    char ch = s[ov[2]];
    at = next_line(s, len, ov[1]);
    if (!open) {
      open = ks_array_push(arena, &bl->fences);
      open->open = ov[0];
      open->begin = at;
      char *lang = ks_arena_strndup(arena, s + ov[4], ov[5] - ov[4]);
      for (char *c = lang; *c; c++)
        *c = (char)tolower((unsigned char)*c);
      open->lang = lang;
      open_len = run;
      open_char = ch;
    } else {
      /* A closing fence: the same character, at least as long, nothing
       * after it. Anything else is content. */
      bool bare = true;
      for (size_t i = ov[3]; i < ov[1]; i++)
        bare = bare && isspace((unsigned char)s[i]);
      if (ch == open_char && run >= open_len && bare) {
        open->end = ov[0];
        open->close = at;
        open = NULL;
      }
    }
    if (at >= len)
      break;
  }
  if (rc == LT_RE_LIMIT) {
    lt_reject(arena, out, KS_REPLY_MALFORMED, "the reply is too complex to parse (pattern limits)");
    r = KS_REPLY_MALFORMED;
  } else if (open) {
    lt_reject(arena, out, KS_REPLY_MALFORMED, "unterminated ``` block opened at line %u",
           line_at(s, open->open));
    r = KS_REPLY_MALFORMED;
  }
  for (at = 0; r == KS_REPLY_OK && (rc = lt_re_find(&m, s, len, at, ov, 4)) == 1;) {
    marker *mk = ks_array_push(arena, &bl->markers);
    mk->kind = ov[2] != (size_t)-1 ? 0 : ov[4] != (size_t)-1 ? 1 : 2;
    mk->begin = ov[0];
    mk->next = at = next_line(s, len, ov[1]);
    for (size_t i = 0; i < bl->fences.len; i++)
      if (mk->begin >= bl->fences.items[i].begin && mk->begin < bl->fences.items[i].end)
        bl->fences.items[i].has_edits = true;
    if (at >= len)
      break;
  }
  if (r == KS_REPLY_OK && rc == LT_RE_LIMIT) {
    lt_reject(arena, out, KS_REPLY_MALFORMED, "the reply is too complex to parse (pattern limits)");
    r = KS_REPLY_MALFORMED;
  }
  lt_re_close(&f);
  lt_re_close(&m);
  return r;
}

static bool code_lang(const char *lang) {
  static const char *const langs[] = {"", "cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc",
                                      "c", "h", "hpp"};
  for (size_t i = 0; i < sizeof langs / sizeof *langs; i++)
    if (!strcmp(lang, langs[i]))
      return true;
  return false;
}

/* [b, e) without one trailing newline. */
static const char *span(ks_arena *arena, const char *s, size_t b, size_t e) {
  if (e > b && s[e - 1] == '\n')
    e--;
  return ks_arena_strndup(arena, s + b, e - b);
}

static size_t occurrences(const char *hay, const char *needle, const char **first) {
  size_t n = 0;
  *first = NULL;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
    if (!n)
      *first = p;
    if (++n > 1)
      break;
  }
  return n;
}

/* The edits applied in order, each to the text the previous left. */
static ks_reply_reason apply_edits(ks_arena *arena, const char *s, const blocks *bl,
                                   const char *parent, const char **result, unsigned *nedits,
                                   ks_reply_result *out) {
  const char *text = parent;
  const marker *m = bl->markers.items;
  size_t n = bl->markers.len;
  unsigned k = 0;
  for (size_t i = 0; i < n; i += 3) {
    k++;
    if (m[i].kind != 0 || i + 2 >= n || m[i + 1].kind != 1 || m[i + 2].kind != 2) {
      lt_reject(arena, out, KS_REPLY_MALFORMED,
             "edit %u (line %u): expected <<<<<<< SEARCH, =======, >>>>>>> REPLACE in order", k,
             line_at(s, m[i].begin));
      return KS_REPLY_MALFORMED;
    }
    const char *search = span(arena, s, m[i].next, m[i + 1].begin);
    const char *replace = span(arena, s, m[i + 1].next, m[i + 2].begin);
    if (!*search) {
      lt_reject(arena, out, KS_REPLY_EDIT_NOT_FOUND, "edit %u: the SEARCH text is empty", k);
      return KS_REPLY_EDIT_NOT_FOUND;
    }
    const char *at;
    size_t hits = occurrences(text, search, &at);
    if (hits != 1) {
      lt_reject(arena, out, KS_REPLY_EDIT_NOT_FOUND, "edit %u: SEARCH text %s %s", k,
             lt_quote(arena, search, strlen(search), 60),
             hits ? "occurs more than once in the parent" : "is not in the parent");
      return KS_REPLY_EDIT_NOT_FOUND;
    }
    size_t before = (size_t)(at - text), slen = strlen(search);
    if (strlen(text) - slen + strlen(replace) > KS_REPLY_MAX_SOURCE) {
      lt_reject(arena, out, KS_REPLY_TOO_LARGE, "the edited source is longer than %d bytes",
             KS_REPLY_MAX_SOURCE);
      return KS_REPLY_TOO_LARGE;
    }
    text = ks_arena_printf(arena, "%.*s%s%s", (int)before, text, replace, at + slen);
  }
  *result = text;
  *nedits = k;
  return KS_REPLY_OK;
}

/* ---- the executor's reply: the child ------------------------------------ */

static void make_child(ks_ctx *ctx, ks_arena *arena, const char *s, const ks_variant *parent,
                       const char *file, ks_reply_result *out, bool *bug) {
  size_t len = strlen(s);
  blocks bl = {0};
  if (find_blocks(ctx, arena, s, len, &bl, out, bug) != KS_REPLY_OK)
    return;
  const fence *code = NULL, *json = NULL;
  size_t ncode = 0, njson = 0;
  const char *ignored = NULL;
  for (size_t i = 0; i < bl.fences.len; i++) {
    const fence *f = &bl.fences.items[i];
    if (f->has_edits)
      continue;
    if (!strcmp(f->lang, "json"))
      json = f, njson++;
    else if (code_lang(f->lang))
      code = f, ncode++;
    else
      ignored = f->lang;
  }
  bool edits = bl.markers.len > 0;
  if (edits && ncode) {
    lt_reject(arena, out, KS_REPLY_MALFORMED,
           "both a code block and SEARCH/REPLACE edits; send one of them");
    return;
  }
  if (!edits && ncode > 1) {
    lt_reject(arena, out, KS_REPLY_MALFORMED, "%zu code blocks; send the whole source in one", ncode);
    return;
  }
  if (!edits && !ncode) {
    lt_reject(arena, out, KS_REPLY_NO_CODE, "no ```cuda block and no SEARCH/REPLACE edits%s%s%s",
           ignored ? " (ignored a block of language " : "",
           ignored ? lt_quote(arena, ignored, strlen(ignored), 16) : "", ignored ? ")" : "");
    return;
  }
  const char *source = NULL;
  if (code) {
    if (code->end - code->begin > KS_REPLY_MAX_SOURCE) {
      lt_reject(arena, out, KS_REPLY_TOO_LARGE, "the code block is longer than %d bytes",
             KS_REPLY_MAX_SOURCE);
      return;
    }
    source = span(arena, s, code->begin, code->end);
    const char *t = source;
    while (isspace((unsigned char)*t))
      t++;
    if (!*t) {
      lt_reject(arena, out, KS_REPLY_NO_CODE, "the code block is empty");
      return;
    }
    out->full_rewrite = true;
  } else if (apply_edits(arena, s, &bl, parent->source ? parent->source : "", &source,
                         &out->nedits, out) != KS_REPLY_OK) {
    return;
  }

  lt_policy pol = {parent->grid, parent->block, parent->smem, {0}};
  for (size_t i = 0; i < parent->requires.len; i++)
    *ks_array_push(arena, &pol.requires) = parent->requires.items[i];
  if (njson > 1) {
    lt_reject(arena, out, KS_REPLY_BAD_JSON, "%zu ```json blocks; send one", njson);
    return;
  }
  if (json && !lt_parse_policy(ctx, arena, s + json->begin, json->end - json->begin, &pol, out))
    return;

  const char *message = NULL;
  ks_reply_reason r = lt_check_child(arena, &source, parent, &pol.requires, &message);
  if (r != KS_REPLY_OK) {
    lt_reject(arena, out, r, "%s", message);
    return;
  }
  size_t n = strlen(source);
  out->child = (ks_variant){
      .source = n && source[n - 1] == '\n' ? source : ks_arena_printf(arena, "%s\n", source),
      .kernel_name = parent->kernel_name,
      .grid = pol.grid,
      .block = pol.block,
      .smem = pol.smem,
      .file = file ? ks_arena_strdup(arena, file) : NULL,
  };
  for (size_t i = 0; i < pol.requires.len; i++)
    *ks_array_push(arena, &out->child.requires) = pol.requires.items[i];
}

int ks_reply_child(ks_ctx *ctx, const char *reply, const ks_variant *parent, const char *file,
                   ks_arena *arena, ks_reply_tally *tally, ks_reply_result *out) {
  memset(out, 0, sizeof *out);
  out->message = "";
  if (!parent || !parent->kernel_name)
    return ks_fail(ctx, "llm reply parser: the parent has no kernel name");
  bool bug = false;
  const char *s = normalized(arena, reply, out);
  if (s)
    make_child(ctx, arena, s, parent, file, out, &bug);
  if (bug)
    return -1;
  count(tally, out->reason);
  return 0;
}
