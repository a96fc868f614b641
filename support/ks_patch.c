/* Unified diffs of one file: lines interned to ids, Myers' linear-space
 * O(ND) diff on the lines both texts share, ambiguous blocks slid to where
 * they read best, then hunks. See ks_patch.h for the contract. */
#include "ks_patch.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ks_alloc.h"

/* Past this many edits in one sub-problem, the search splits at the furthest
 * point it reached instead of the true middle: still a correct diff, no
 * longer a minimal one, and the time stays O(N * MAX_COST). */
enum { MAX_COST = 4096 };
/* The slide looks at most this many positions for one block. */
enum { MAX_SLIDE = 100 };

typedef struct side {
  const char *text;
  size_t nlines;
  size_t *start;   /* line i is text[start[i] .. start[i + 1]) */
  unsigned *id;    /* equal lines have equal ids, in both sides */
  bool *changed;   /* the line is deleted (old side) or added (new side) */
  int *indent;     /* columns before the first non-blank byte; -1 for a blank line */
  size_t *kept;    /* lines that also occur in the other side, for the search */
  unsigned *kept_id;
  size_t nkept;
} side;

/* --- lines --------------------------------------------------------------- */

static void split_lines(ks_arena *arena, side *s, const char *text, size_t len) {
  s->text = text;
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    n += text[i] == '\n';
  if (len && text[len - 1] != '\n')
    n++;
  s->nlines = n;
  s->start = ks_arena_alloc(arena, (n + 1) * sizeof *s->start);
  s->id = ks_arena_alloc(arena, (n + 1) * sizeof *s->id);
  s->changed = ks_arena_alloc(arena, (n + 1) * sizeof *s->changed);
  s->indent = ks_arena_alloc(arena, (n + 1) * sizeof *s->indent);
  s->kept = ks_arena_alloc(arena, (n + 1) * sizeof *s->kept);
  s->kept_id = ks_arena_alloc(arena, (n + 1) * sizeof *s->kept_id);
  size_t line = 0;
  s->start[0] = 0;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n')
      s->start[++line] = i + 1;
  s->start[n] = len;
  for (size_t i = 0; i < n; i++) {
    int col = 0;
    size_t p = s->start[i];
    for (; p < s->start[i + 1]; p++) {
      char c = text[p];
      if (c == ' ')
        col++;
      else if (c == '\t')
        col += 8 - col % 8;
      else if (c != '\r' && c != '\n' && c != '\f' && c != '\v')
        break;
    }
    s->indent[i] = p == s->start[i + 1] ? -1 : col;
  }
}

static size_t line_len(const side *s, size_t i) { return s->start[i + 1] - s->start[i]; }
static const char *line_at(const side *s, size_t i) { return s->text + s->start[i]; }

typedef struct intern {
  size_t cap;        /* slots, a power of two */
  unsigned *slot;    /* id + 1, 0 for empty */
  uint64_t *hash;    /* per id */
  const char **text; /* per id: the first line seen with it */
  size_t *len;
  size_t *count[2];  /* per id: occurrences in the old and the new side */
  unsigned nids;
} intern;

static uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211u;
  return h;
}

static unsigned intern_line(intern *t, const char *p, size_t n) {
  uint64_t h = hash_bytes(p, n);
  size_t mask = t->cap - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    unsigned s = t->slot[i];
    if (!s) {
      unsigned id = t->nids++;
      t->slot[i] = id + 1;
      t->hash[id] = h;
      t->text[id] = p;
      t->len[id] = n;
      return id;
    }
    if (t->hash[s - 1] == h && t->len[s - 1] == n && !memcmp(t->text[s - 1], p, n))
      return s - 1;
  }
}

/* Gives every line an id and sets aside, as changed, the lines that occur in
 * one side only: no common subsequence can contain them, and a block of new
 * code is mostly such lines, so the search runs on far fewer. */
static void intern_sides(ks_arena *arena, side *old, side *new) {
  size_t total = old->nlines + new->nlines;
  intern t = {0};
  t.cap = 16;
  while (t.cap < 2 * total)
    t.cap *= 2;
  t.slot = ks_arena_alloc(arena, t.cap * sizeof *t.slot);
  t.hash = ks_arena_alloc(arena, (total + 1) * sizeof *t.hash);
  t.text = ks_arena_alloc(arena, (total + 1) * sizeof *t.text);
  t.len = ks_arena_alloc(arena, (total + 1) * sizeof *t.len);
  t.count[0] = ks_arena_alloc(arena, (total + 1) * sizeof *t.count[0]);
  t.count[1] = ks_arena_alloc(arena, (total + 1) * sizeof *t.count[1]);
  side *sides[2] = {old, new};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < sides[k]->nlines; i++) {
      unsigned id = intern_line(&t, line_at(sides[k], i), line_len(sides[k], i));
      sides[k]->id[i] = id;
      t.count[k][id]++;
    }
  for (int k = 0; k < 2; k++) {
    side *s = sides[k];
    for (size_t i = 0; i < s->nlines; i++) {
      if (!t.count[1 - k][s->id[i]]) {
        s->changed[i] = true;
        continue;
      }
      s->kept[s->nkept] = i;
      s->kept_id[s->nkept++] = s->id[i];
    }
  }
}

/* --- the search ------------------------------------------------------------ */

typedef struct myers {
  const unsigned *a, *b; /* the kept lines' ids */
  side *old, *new;
  ptrdiff_t *fv, *bv;    /* furthest x per diagonal k = x - y, forwards and backwards */
} myers;

static void mark(myers *my, ptrdiff_t a_lo, ptrdiff_t a_hi, ptrdiff_t b_lo, ptrdiff_t b_hi) {
  for (ptrdiff_t i = a_lo; i < a_hi; i++)
    my->old->changed[my->old->kept[i]] = true;
  for (ptrdiff_t j = b_lo; j < b_hi; j++)
    my->new->changed[my->new->kept[j]] = true;
}

/* Finds a point (x, y) on a shortest edit path from (a_lo, b_lo) to (a_hi,
 * b_hi), near its middle: both ends are searched at once, one edit more per
 * round, until the forward and backward paths meet on a diagonal. */
static void middle(myers *my, ptrdiff_t a_lo, ptrdiff_t a_hi, ptrdiff_t b_lo, ptrdiff_t b_hi,
                   ptrdiff_t *sx, ptrdiff_t *sy) {
  const unsigned *a = my->a, *b = my->b;
  ptrdiff_t *fv = my->fv, *bv = my->bv;
  const ptrdiff_t dmin = a_lo - b_hi, dmax = a_hi - b_lo;
  const ptrdiff_t fmid = a_lo - b_lo, bmid = a_hi - b_hi;
  const bool odd = (fmid - bmid) & 1;
  ptrdiff_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
  fv[fmid] = a_lo;
  bv[bmid] = a_hi;
  for (ptrdiff_t d = 1;; d++) {
    /* Diagonals leave the box at its edges; the ones just outside the range
     * get sentinels that never win. */
    if (fmin > dmin)
      fv[--fmin - 1] = -1;
    else
      ++fmin;
    if (fmax < dmax)
      fv[++fmax + 1] = -1;
    else
      --fmax;
    for (ptrdiff_t k = fmax; k >= fmin; k -= 2) {
      ptrdiff_t x = fv[k - 1] >= fv[k + 1] ? fv[k - 1] + 1 : fv[k + 1];
      if (x > a_hi)
        x = a_hi;
      if (x - k > b_hi)
        x = b_hi + k;
      ptrdiff_t y = x - k;
      while (x < a_hi && y < b_hi && a[x] == b[y])
        x++, y++;
      fv[k] = x;
      if (odd && bmin <= k && k <= bmax && bv[k] <= x) {
        *sx = x, *sy = y;
        return;
      }
    }
    if (bmin > dmin)
      bv[--bmin - 1] = PTRDIFF_MAX;
    else
      ++bmin;
    if (bmax < dmax)
      bv[++bmax + 1] = PTRDIFF_MAX;
    else
      --bmax;
    for (ptrdiff_t k = bmax; k >= bmin; k -= 2) {
      ptrdiff_t x = bv[k - 1] < bv[k + 1] ? bv[k - 1] : bv[k + 1] - 1;
      if (x < a_lo)
        x = a_lo;
      if (x - k < b_lo)
        x = b_lo + k;
      ptrdiff_t y = x - k;
      while (x > a_lo && y > b_lo && a[x - 1] == b[y - 1])
        x--, y--;
      bv[k] = x;
      if (!odd && fmin <= k && k <= fmax && x <= fv[k]) {
        *sx = x, *sy = y;
        return;
      }
    }
    if (d < MAX_COST)
      continue;
    /* Too costly for an exact answer: split where one search got furthest. */
    ptrdiff_t fbest = -1, bbest = PTRDIFF_MAX;
    for (ptrdiff_t k = fmax; k >= fmin; k -= 2)
      if (2 * fv[k] - k > fbest) {
        fbest = 2 * fv[k] - k;
        *sx = fv[k], *sy = fv[k] - k;
      }
    ptrdiff_t fx = *sx, fy = *sy;
    for (ptrdiff_t k = bmax; k >= bmin; k -= 2)
      if (2 * bv[k] - k < bbest) {
        bbest = 2 * bv[k] - k;
        *sx = bv[k], *sy = bv[k] - k;
      }
    if (fbest - (a_lo + b_lo) >= (a_hi + b_hi) - bbest)
      *sx = fx, *sy = fy;
    return;
  }
}

static void compare(myers *my, ptrdiff_t a_lo, ptrdiff_t a_hi, ptrdiff_t b_lo, ptrdiff_t b_hi) {
  for (;;) {
    while (a_lo < a_hi && b_lo < b_hi && my->a[a_lo] == my->b[b_lo])
      a_lo++, b_lo++;
    while (a_lo < a_hi && b_lo < b_hi && my->a[a_hi - 1] == my->b[b_hi - 1])
      a_hi--, b_hi--;
    if (a_lo == a_hi || b_lo == b_hi) {
      mark(my, a_lo, a_hi, b_lo, b_hi);
      return;
    }
    ptrdiff_t x = a_lo, y = b_lo;
    middle(my, a_lo, a_hi, b_lo, b_hi, &x, &y);
    bool inside = a_lo <= x && x <= a_hi && b_lo <= y && y <= b_hi;
    if (!inside || (x == a_lo && y == b_lo) || (x == a_hi && y == b_hi)) {
      mark(my, a_lo, a_hi, b_lo, b_hi); /* cannot happen; stay correct anyway */
      return;
    }
    compare(my, a_lo, x, b_lo, y);
    a_lo = x, b_lo = y;
  }
}

static void search(ks_arena *arena, side *old, side *new) {
  size_t n = old->nkept, m = new->nkept;
  if (!n || !m) {
    for (size_t i = 0; i < n; i++)
      old->changed[old->kept[i]] = true;
    for (size_t j = 0; j < m; j++)
      new->changed[new->kept[j]] = true;
    return;
  }
  /* Diagonals run from -m to n, plus a sentinel on each side. */
  size_t diagonals = n + m + 3;
  myers my = {old->kept_id, new->kept_id, old, new,
              (ptrdiff_t *)ks_arena_alloc(arena, diagonals * sizeof(ptrdiff_t)) + m + 1,
              (ptrdiff_t *)ks_arena_alloc(arena, diagonals * sizeof(ptrdiff_t)) + m + 1};
  compare(&my, 0, (ptrdiff_t)n, 0, (ptrdiff_t)m);
}

/* --- sliding blocks ------------------------------------------------------- */

/* How well a block boundary placed just before line k reads: blank lines
 * next to it are good, more so above it; cutting just before a closing line
 * (less indented than the one above) is bad. */
typedef struct split_score {
  int indent;  /* indentation of the first non-blank line after the cut */
  int penalty;
} split_score;

static void score_split(const side *s, size_t k, split_score *score) {
  int pre_blank = 0, post_blank = 0, pre_indent = -1, indent = -1;
  size_t i = k;
  while (i > 0 && s->indent[i - 1] < 0 && pre_blank < MAX_SLIDE)
    i--, pre_blank++;
  if (i > 0)
    pre_indent = s->indent[i - 1];
  size_t j = k;
  while (j < s->nlines && s->indent[j] < 0 && post_blank < MAX_SLIDE)
    j++, post_blank++;
  if (j < s->nlines)
    indent = s->indent[j];
  else
    score->penalty += 20; /* end of file: a block reads better between code */
  if (pre_indent < 0 && pre_blank == 0)
    score->penalty += 1; /* start of file */
  int blanks = pre_blank + post_blank;
  score->penalty += -30 * blanks + 6 * post_blank;
  score->indent += indent;
  if (indent < 0 || pre_indent < 0 || indent == pre_indent)
    return;
  if (indent > pre_indent)
    score->penalty += blanks ? 10 : -4;
  else
    score->penalty += blanks ? 17 : 24;
}

/* Negative when the block ending before line `e1` reads better than the one
 * ending before `e2`. */
static int better(const side *s, size_t len, size_t e1, size_t e2) {
  split_score a = {0, 0}, b = {0, 0};
  score_split(s, e1 - len, &a);
  score_split(s, e1, &a);
  score_split(s, e2 - len, &b);
  score_split(s, e2, &b);
  int by_indent = (a.indent > b.indent) - (a.indent < b.indent);
  return 60 * by_indent + (a.penalty - b.penalty);
}

static bool same_line(const side *s, size_t i, size_t j) { return s->id[i] == s->id[j]; }

/* gaps[u]: whether the side has changed lines just before its u-th unchanged
 * line (u = the count of unchanged lines, for after the last). Unchanged lines
 * pair up in order between the sides, so a block of one side sitting at gap
 * u faces the other side's gap u. */
static bool *change_gaps(ks_arena *arena, const side *s) {
  bool *gaps = ks_arena_alloc(arena, (s->nlines + 1) * sizeof *gaps);
  size_t u = 0;
  for (size_t i = 0; i < s->nlines; i++) {
    if (s->changed[i])
      gaps[u] = true;
    else
      u++;
  }
  return gaps;
}

/* A block of changed lines [start, end) whose first line equals the line after
 * it can move down one line and still describe the same change (and up, when
 * its last line equals the line before). Each block is moved through every
 * such position, merging with blocks it meets, then settles on the best one:
 * facing a change of the other side if it can (one -/+ block reads as a
 * replacement), else where it reads best. */
static void slide(side *s, const bool *other_gaps) {
  bool *ch = s->changed;
  size_t n = s->nlines;
  size_t done_end = 0, done_unchanged = 0; /* unchanged lines before done_end */
  for (size_t start = 0; start < n;) {
    if (!ch[start]) {
      start++;
      continue;
    }
    size_t end = start;
    while (end < n && ch[end])
      end++;
    size_t len, top_end;
    do {
      len = end - start;
      while (start > 0 && same_line(s, start - 1, end - 1)) {
        ch[--start] = true;
        ch[--end] = false;
        while (start > 0 && ch[start - 1])
          start--;
      }
      top_end = end;
      while (end < n && same_line(s, start, end)) {
        ch[start++] = false;
        ch[end++] = true;
        while (end < n && ch[end])
          end++;
      }
    } while (end - start != len);
    size_t unchanged = 0; /* before start */
    if (start >= done_end) {
      unchanged = done_unchanged + (start - done_end);
    } else { /* merged with the block before: count again */
      for (size_t i = 0; i < start; i++)
        unchanged += !ch[i];
    }
    size_t best = end;
    if (end > top_end) {
      size_t lowest = end - top_end > MAX_SLIDE ? end - MAX_SLIDE : top_end;
      bool facing = other_gaps[unchanged];
      for (size_t e = end; e-- > lowest;) {
        bool f = other_gaps[unchanged - (end - e)];
        if ((f && !facing) || (f == facing && better(s, len, e, best) < 0)) {
          best = e;
          facing = f;
        }
      }
      for (size_t i = start; i < end; i++)
        ch[i] = false;
      for (size_t i = best - len; i < best; i++)
        ch[i] = true;
    }
    done_end = best;
    done_unchanged = unchanged - (end - best);
    start = best;
  }
}

/* --- output ---------------------------------------------------------------- */

/* Git's quoting of a path with control bytes, quotes, backslashes or non-ASCII
 * bytes: the prefixed name in double quotes with C escapes. */
static bool needs_quotes(const char *path) {
  for (const unsigned char *p = (const unsigned char *)path; *p; p++)
    if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f)
      return true;
  return false;
}

static void add_name(ks_buf *out, const char *prefix, const char *path) {
  if (!needs_quotes(path)) {
    ks_buf_addf(out, "%s%s", prefix, path);
    return;
  }
  ks_buf_addf(out, "\"%s", prefix);
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    const char *esc = strchr("\a\b\t\n\v\f\r", *p);
    if (esc && *p)
      ks_buf_addf(out, "\\%c", "abtnvfr"[esc - "\a\b\t\n\v\f\r"]);
    else if (*p == '"' || *p == '\\')
      ks_buf_addf(out, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      ks_buf_addf(out, "\\%03o", *p);
    else
      ks_buf_addc(out, (char)*p);
  }
  ks_buf_addc(out, '"');
}

static void add_header(ks_buf *out, const char *path, bool created) {
  /* A name with a space ends with a tab on the ---/+++ lines, as git writes
   * it, so that patch knows where the name ends. */
  const char *tab = strchr(path, ' ') && !needs_quotes(path) ? "\t" : "";
  ks_buf_adds(out, "diff --git ");
  add_name(out, "a/", path);
  ks_buf_addc(out, ' ');
  add_name(out, "b/", path);
  ks_buf_addc(out, '\n');
  if (created) {
    ks_buf_adds(out, "new file mode 100644\n--- /dev/null\n");
  } else {
    ks_buf_adds(out, "--- ");
    add_name(out, "a/", path);
    ks_buf_addf(out, "%s\n", tab);
  }
  ks_buf_adds(out, "+++ ");
  add_name(out, "b/", path);
  ks_buf_addf(out, "%s\n", tab);
}

static void add_line(ks_buf *out, char mark, const side *s, size_t i) {
  size_t len = line_len(s, i);
  const char *p = line_at(s, i);
  ks_buf_addc(out, mark);
  ks_buf_add(out, p, len);
  if (!len || p[len - 1] != '\n')
    ks_buf_adds(out, "\n\\ No newline at end of file\n");
}

static void add_range(ks_buf *out, size_t start, size_t count) {
  if (count == 1)
    ks_buf_addf(out, "%zu", start + 1);
  else if (count == 0)
    ks_buf_addf(out, "%zu,0", start);
  else
    ks_buf_addf(out, "%zu,%zu", start + 1, count);
}

/* The line git shows after a hunk's header: the nearest line above the hunk
 * that starts with a letter, '_' or '$' (a definition, in C), trimmed to 80
 * bytes without cutting a UTF-8 character. */
static bool is_definition(const side *s, size_t i) {
  char c = line_len(s, i) ? line_at(s, i)[0] : '\0';
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

static void add_definition(ks_buf *out, const side *s, size_t i) {
  const char *p = line_at(s, i);
  size_t len = line_len(s, i);
  if (len > 80) {
    len = 80;
    while (len && ((unsigned char)p[len] & 0xC0) == 0x80)
      len--;
  }
  while (len && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' ||
                 p[len - 1] == '\t'))
    len--;
  ks_buf_addc(out, ' ');
  ks_buf_add(out, p, len);
}

typedef struct change {
  size_t o0, o1, n0, n1; /* old lines [o0, o1) become new lines [n0, n1) */
} change;

static void add_hunks(ks_arena *arena, ks_buf *out, const side *old, const side *new,
                      size_t context) {
  KS_ARRAY(change) changes = {0};
  size_t i = 0, j = 0;
  while (i < old->nlines || j < new->nlines) {
    if ((i < old->nlines && old->changed[i]) || (j < new->nlines && new->changed[j])) {
      change *c = ks_array_push(arena, &changes);
      c->o0 = i, c->n0 = j;
      while (i < old->nlines && old->changed[i])
        i++;
      while (j < new->nlines && new->changed[j])
        j++;
      c->o1 = i, c->n1 = j;
    } else {
      i++, j++;
    }
  }
  size_t def_scanned = 0, def = SIZE_MAX;
  for (size_t first = 0; first < changes.len;) {
    size_t last = first;
    while (last + 1 < changes.len && changes.items[last + 1].o0 - changes.items[last].o1 <= 2 * context)
      last++;
    const change *a = &changes.items[first], *z = &changes.items[last];
    size_t before = a->o0 < context ? a->o0 : context;
    size_t after = old->nlines - z->o1 < context ? old->nlines - z->o1 : context;
    size_t o_start = a->o0 - before, n_start = a->n0 - before;
    size_t o_end = z->o1 + after, n_end = z->n1 + after;
    for (; def_scanned < o_start; def_scanned++)
      if (is_definition(old, def_scanned))
        def = def_scanned;
    ks_buf_adds(out, "@@ -");
    add_range(out, o_start, o_end - o_start);
    ks_buf_adds(out, " +");
    add_range(out, n_start, n_end - n_start);
    ks_buf_adds(out, " @@");
    if (def != SIZE_MAX)
      add_definition(out, old, def);
    ks_buf_addc(out, '\n');
    size_t o = o_start;
    for (size_t c = first; c <= last; c++) {
      const change *ch = &changes.items[c];
      for (; o < ch->o0; o++)
        add_line(out, ' ', old, o);
      for (; o < ch->o1; o++)
        add_line(out, '-', old, o);
      for (size_t k = ch->n0; k < ch->n1; k++)
        add_line(out, '+', new, k);
    }
    for (; o < o_end; o++)
      add_line(out, ' ', old, o);
    first = last + 1;
  }
}

int ks_patch_diff(ks_ctx *ctx, const char *path, const char *old_text, size_t old_len,
                  const char *new_text, size_t new_len, unsigned context, ks_buf *out) {
  if (!path || !*path || path[0] == '/')
    return ks_fail(ctx, "diff: '%s' is not a path relative to the patch's root",
                   path ? path : "");
  bool created = old_text == NULL;
  if (created)
    old_text = "", old_len = 0;
  if (!new_text)
    new_text = "", new_len = 0;
  if (memchr(old_text, '\0', old_len) || memchr(new_text, '\0', new_len))
    return ks_fail(ctx, "%s: holds a NUL byte; no text diff can carry it", path);
  if (!created && old_len == new_len && !memcmp(old_text, new_text, old_len))
    return 0;
  ks_arena arena = KS_ARENA_INIT;
  side old = {0}, new = {0};
  split_lines(&arena, &old, old_text, old_len);
  split_lines(&arena, &new, new_text, new_len);
  intern_sides(&arena, &old, &new);
  search(&arena, &old, &new);
  slide(&old, change_gaps(&arena, &new));
  slide(&new, change_gaps(&arena, &old));
  add_header(out, path, created);
  add_hunks(&arena, out, &old, &new, context);
  ks_arena_release(&arena);
  return 0;
}
