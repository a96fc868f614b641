/* Locations, tokens and macro extents for the kernel tree.
 *
 * libclang reports a range's start as written, possibly inside a macro
 * (then its expansion location is the start of the outermost invocation),
 * and moves the end out of macro bodies but not out of macro arguments.
 * Here every node gets a range of the text as written: its own, or, when
 * all of it comes from one macro invocation, the invocation's. */
#include <string.h>

#include "kast_int.h"

/* clang 16's clang_getSpellingLocation answers with the file location, so
 * the only way the C API tells a macro location from a file location is the
 * location's raw encoding, whose top bit clang sets for macro locations
 * (SourceLocation::MacroIDBit). */
bool kast_is_macro_loc(CXSourceLocation loc) { return (loc.int_data & 0x80000000u) != 0; }

static bool in_unit(kast_builder *b, CXFile file) {
  return file && clang_File_isEqual(file, b->file);
}

bool kast_expansion_offset(kast_builder *b, CXSourceLocation loc, unsigned *out) {
  CXFile file = NULL;
  unsigned line, col, offset;
  clang_getExpansionLocation(loc, &file, &line, &col, &offset);
  if (!in_unit(b, file) || offset > b->len)
    return false;
  *out = offset;
  return true;
}

static bool file_offset(kast_builder *b, CXSourceLocation loc, unsigned *out) {
  CXFile file = NULL;
  unsigned line, col, offset;
  clang_getFileLocation(loc, &file, &line, &col, &offset);
  if (!in_unit(b, file) || offset > b->len)
    return false;
  *out = offset;
  return true;
}

size_t kast_token_at(const kast_builder *b, unsigned offset) {
  size_t lo = 0, hi = b->ntokens;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->tokens[mid].begin < offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool kast_token_is(const kast_builder *b, size_t i, const char *p) {
  if (i >= b->ntokens)
    return false;
  const kast_token *t = &b->tokens[i];
  size_t n = strlen(p);
  return t->end - t->begin == n && !memcmp(b->source + t->begin, p, n);
}

static int bracket(const kast_builder *b, size_t i) {
  if (i >= b->ntokens || b->tokens[i].kind != CXToken_Punctuation ||
      b->tokens[i].end - b->tokens[i].begin != 1)
    return 0;
  switch (b->source[b->tokens[i].begin]) {
  case '(':
  case '[':
  case '{':
    return 1;
  case ')':
  case ']':
  case '}':
    return -1;
  default:
    return 0;
  }
}

size_t kast_token_match(const kast_builder *b, size_t i) {
  if (bracket(b, i) != 1)
    return b->ntokens;
  int depth = 0;
  for (size_t k = i; k < b->ntokens; k++) {
    depth += bracket(b, k);
    if (depth == 0)
      return k;
  }
  return b->ntokens;
}

unsigned kast_invocation_end(kast_builder *b, unsigned at) {
  /* Recorded expansions first: they know an object-like macro that happens
   * to be followed by a parenthesis. */
  unsigned end = 0;
  bool found = false;
  for (size_t i = 0; i < b->macros.len; i++)
    if (b->macros.items[i].begin == at && b->macros.items[i].end > end) {
      end = b->macros.items[i].end;
      found = true;
    }
  if (found)
    return end;
  size_t i = kast_token_at(b, at);
  if (i >= b->ntokens || b->tokens[i].begin != at)
    return at;
  if (kast_token_is(b, i + 1, "(")) {
    size_t close = kast_token_match(b, i + 1);
    if (close < b->ntokens)
      return b->tokens[close].end;
  }
  return b->tokens[i].end;
}

void kast_extent(kast_builder *b, CXCursor c, unsigned *begin, unsigned *end, bool *from_macro) {
  CXSourceRange r = clang_getCursorExtent(c);
  CXSourceLocation lb = clang_getRangeStart(r), le = clang_getRangeEnd(r);
  unsigned B = 0, E = 0;
  if (!kast_expansion_offset(b, lb, &B) &&
      !kast_expansion_offset(b, clang_getCursorLocation(c), &B))
    B = 0;
  /* An end inside a macro argument stays a macro location: the node ends
   * where that invocation ends. */
  unsigned at;
  if (kast_is_macro_loc(le))
    E = kast_expansion_offset(b, le, &at) ? kast_invocation_end(b, at) : B;
  else if (!file_offset(b, le, &E))
    E = B;
  bool macro = false;
  if (kast_is_macro_loc(lb)) {
    unsigned me = kast_invocation_end(b, B);
    if (E <= me) {
      macro = true;
      E = me;
    }
  }
  if (E < B)
    E = B;
  *begin = B;
  *end = E;
  *from_macro = macro;
}

void kast_tokenize(kast_builder *b, unsigned begin, unsigned end) {
  CXTranslationUnit unit = b->tu.unit;
  CXSourceRange range = clang_getRange(clang_getLocationForOffset(unit, b->file, begin),
                                       clang_getLocationForOffset(unit, b->file, end));
  CXToken *tokens = NULL;
  unsigned n = 0;
  clang_tokenize(unit, range, &tokens, &n);
  b->tokens = ks_arena_alloc(&b->scratch, (n ? n : 1) * sizeof *b->tokens);
  b->ntokens = 0;
  for (unsigned i = 0; i < n; i++) {
    CXSourceRange e = clang_getTokenExtent(unit, tokens[i]);
    unsigned tb, te;
    if (!file_offset(b, clang_getRangeStart(e), &tb) || !file_offset(b, clang_getRangeEnd(e), &te))
      continue;
    /* clang_tokenize may hand back one token past the range's end. */
    if (tb >= end)
      break;
    b->tokens[b->ntokens++] = (kast_token){tb, te, clang_getTokenKind(tokens[i])};
  }
  if (tokens)
    clang_disposeTokens(unit, tokens, n);
}

static enum CXChildVisitResult collect_macro(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  kast_builder *b = data;
  if (clang_getCursorKind(c) != CXCursor_MacroExpansion)
    return CXChildVisit_Continue;
  CXSourceRange r = clang_getCursorExtent(c);
  unsigned mb, me;
  if (file_offset(b, clang_getRangeStart(r), &mb) && file_offset(b, clang_getRangeEnd(r), &me) &&
      me >= mb)
    *ks_array_push(&b->scratch, &b->macros) = (kast_range){mb, me};
  return CXChildVisit_Continue;
}

void kast_collect_macros(kast_builder *b) {
  clang_visitChildren(clang_getTranslationUnitCursor(b->tu.unit), collect_macro, b);
}

/* clang_getTokenSpelling reads a punctuation token's text at the spelling
 * location of the token's raw location, for any length: a token made here
 * reads the text a macro location was spelled from, in its #define. */
const char *kast_spelled(kast_builder *b, CXSourceLocation loc, unsigned len) {
  CXToken t;
  memset(&t, 0, sizeof t);
  t.int_data[0] = CXToken_Punctuation;
  t.int_data[1] = loc.int_data;
  t.int_data[2] = len;
  return ks_tu_string(&b->tu, clang_getTokenSpelling(b->tu.unit, t));
}

const char *kast_spelled_between(kast_builder *b, CXSourceLocation from, CXSourceLocation to) {
  if (!kast_is_macro_loc(from) || !kast_is_macro_loc(to) || to.int_data <= from.int_data ||
      to.int_data - from.int_data > 4096)
    return NULL;
  unsigned n = to.int_data - from.int_data;
  const char *all = kast_spelled(b, from, n + 32), *tail = kast_spelled(b, to, 32);
  /* Both must lie in one expansion of one macro body: then the text from
   * `from` runs on into the text at `to`. */
  size_t na = strlen(all), nt = strlen(tail);
  if (na < n || !nt || strncmp(all + n, tail, na - n < nt ? na - n : nt))
    return NULL;
  return ks_arena_strndup(b->arena, all, n);
}
