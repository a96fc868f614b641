/* spec_parse: the text of a spec (docs/spec.md) into a ks_spec.
 *
 * A spec is line-oriented: each line starts with a field word (size, scalar,
 * in, out, inout, launch, tolerance, reference, seeds, instance, flops) and
 * says one thing. The text may still carry the comment markers it was
 * written in ("/ *", " * ", "//"), which are stripped per line, so the same
 * parser reads annotations and sidecar sections. Expressions are checked for
 * syntax here, so a typo is reported with its line before any size is
 * evaluated; names are bound later, by ks_spec_resolve.
 *
 * Every error is "file:line: field: what is wrong", and parsing stops at the
 * first one: a spec is short, and one precise message beats a cascade. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_specs.h"
#include "spec_int.h"

/* Names given so far (size sets, scalars, buffers), hashed: a spec of
 * 20,000 size sets is checked for repeats in linear time. */
typedef struct name_slot {
  const char *name; /* NULL: empty */
  size_t at;        /* index in the spec's array */
} name_slot;
typedef struct name_index {
  name_slot *slots; /* malloc'd; a power of two of them, at most half full */
  size_t cap, len;
} name_index;

static size_t name_hash(const char *s) {
  size_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static bool index_find(const name_index *x, const char *name, size_t *at) {
  if (!x->cap)
    return false;
  for (size_t i = name_hash(name) & (x->cap - 1); x->slots[i].name; i = (i + 1) & (x->cap - 1))
    if (!strcmp(x->slots[i].name, name)) {
      *at = x->slots[i].at;
      return true;
    }
  return false;
}

static void index_put(name_slot *slots, size_t cap, const char *name, size_t at) {
  size_t i = name_hash(name) & (cap - 1);
  while (slots[i].name)
    i = (i + 1) & (cap - 1);
  slots[i] = (name_slot){name, at};
}

/* Adds a name not in the index yet. */
static void index_add(name_index *x, const char *name, size_t at) {
  if (2 * (x->len + 1) > x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 16;
    name_slot *slots = ks_xcalloc(cap, sizeof *slots);
    for (size_t i = 0; i < x->cap; i++)
      if (x->slots[i].name)
        index_put(slots, cap, x->slots[i].name, x->slots[i].at);
    free(x->slots);
    x->slots = slots;
    x->cap = cap;
  }
  index_put(x->slots, x->cap, name, at);
  x->len++;
}

/* Parsing state for one spec. */
typedef struct spec_parser {
  ks_ctx *ctx;
  ks_arena *arena;
  const char *file;
  unsigned line; /* of the line being parsed */
  ks_spec *out;
  /* lines where single-valued fields were given, to report repeats */
  unsigned launch_line, tolerance_line, reference_line, seeds_line, instance_line, flops_line;
  name_index sizes, scalars, buffers; /* names given so far */
} spec_parser;

/* Where a cut of `text` at or before byte `n` leaves whole UTF-8
 * characters: not before a continuation byte. */
static size_t char_boundary(const char *text, size_t n) {
  while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
    n--;
  return n;
}

const char *ks_spec_quote(ks_arena *arena, const char *text) {
  size_t len = strlen(text);
  if (len <= KS_SPEC_QUOTE_MAX)
    return text;
  size_t n = char_boundary(text, KS_SPEC_QUOTE_MAX);
  return ks_arena_printf(arena, "%.*s...", (int)n, text);
}

int ks_spec_fail(ks_ctx *ctx, const char *file, unsigned line, const char *fmt, ...) {
  char msg[sizeof ctx->error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* A path's end names the file: keep that of a long one. */
  size_t len = strlen(file);
  if (len > KS_SPEC_QUOTE_MAX) {
    size_t from = len - KS_SPEC_QUOTE_MAX;
    while (from < len && ((unsigned char)file[from] & 0xC0) == 0x80)
      from++;
    return ks_fail(ctx, "...%s:%u: %s", file + from, line, msg);
  }
  return ks_fail(ctx, "%s:%u: %s", file, line, msg);
}

void ks_spec_text_as_compiled(char *text, size_t len) {
  if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
    memset(text, ' ', 3);
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\r' && (i + 1 == len || text[i + 1] != '\n'))
      text[i] = '\n';
}

#define FAIL(sp, ...) ks_spec_fail((sp)->ctx, (sp)->file, (sp)->line, __VA_ARGS__)
/* User text in a message: an excerpt when long. */
#define Q(sp, text) ks_spec_quote((sp)->arena, (text))

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

/* An identifier at `p` (after spaces) into the arena, or NULL. */
static const char *read_ident(spec_parser *sp, const char **p) {
  const char *s = skip_ws(*p), *e = s;
  if (!is_ident_start(*e))
    return NULL;
  while (ks_ctext_is_ident_char(*e))
    e++;
  *p = e;
  return ks_arena_strndup(sp->arena, s, (size_t)(e - s));
}

static const char *trimmed(spec_parser *sp, const char *b, const char *e) {
  return ks_ctext_trim(sp->arena, b, e);
}

/* Checks an expression's syntax; the message names the field and quotes the
 * expression. */
static int check_expr(spec_parser *sp, const char *field, const char *what, const char *expr) {
  if (!*expr)
    return FAIL(sp, "%s: %s is empty", field, what);
  if (ks_expr_check(sp->ctx, expr)) {
    char err[sizeof sp->ctx->error];
    snprintf(err, sizeof err, "%s", sp->ctx->error);
    return FAIL(sp, "%s: %s '%s': %s", field, what, Q(sp, expr), err);
  }
  return 0;
}

/* A launch dimension: "dim3(a, b)", "(a, b)", "{a, b, c}" or one
 * expression; each component's syntax checked. */
static int check_dim3(spec_parser *sp, const char *what, const char *text) {
  const char *p = text, *end = text + strlen(text);
  if (!strncmp(p, "dim3", 4) && (skip_ws(p + 4)[0] == '(' || skip_ws(p + 4)[0] == '{'))
    p = skip_ws(p + 4);
  if ((*p == '(' || *p == '{') && ks_ctext_matching(p, end) == end - 1) {
    ks_strings parts = {0};
    ks_ctext_split(sp->arena, p + 1, end - 1, &parts);
    if (parts.len > 3)
      return FAIL(sp, "launch: %s '%s' has more than 3 components", what, Q(sp, text));
    if (parts.len > 1 || p != text)
      for (size_t i = 0; i < parts.len; i++)
        if (check_expr(sp, "launch", what, parts.items[i]))
          return -1;
    if (parts.len > 1 || p != text)
      return 0;
  }
  return check_expr(sp, "launch", what, text);
}

/* "key = value" pieces of a comma-separated list; `keys` lists the
 * accepted keys. Each value is stored in vals[i] for keys[i]. */
static int parse_pairs(spec_parser *sp, const char *field, const char *p, const char *end,
                       const char *const *keys, size_t nkeys, const char **vals) {
  ks_strings parts = {0};
  ks_ctext_split(sp->arena, p, end, &parts);
  if (!parts.len)
    return FAIL(sp, "%s: expected %s = ...", field, keys[0]);
  for (size_t i = 0; i < parts.len; i++) {
    const char *q = parts.items[i];
    const char *key = read_ident(sp, &q);
    q = skip_ws(q);
    if (!key || *q != '=' || q[1] == '=')
      return FAIL(sp, "%s: expected 'key = value', not '%s'", field, Q(sp, parts.items[i]));
    size_t k = 0;
    while (k < nkeys && strcmp(keys[k], key))
      k++;
    if (k == nkeys) {
      ks_buf expected = KS_BUF_INIT;
      for (size_t j = 0; j < nkeys; j++)
        ks_buf_addf(&expected, "%s%s", j ? (j + 1 == nkeys ? " or " : ", ") : "", keys[j]);
      int rc = FAIL(sp, "%s: unknown key '%s' (expected %s)", field, Q(sp, key), expected.data);
      ks_buf_release(&expected);
      return rc;
    }
    if (vals[k])
      return FAIL(sp, "%s: '%s' given twice", field, key);
    vals[k] = trimmed(sp, q + 1, q + strlen(q));
    if (!*vals[k])
      return FAIL(sp, "%s: '%s' has no value", field, key);
  }
  return 0;
}

/* atol = x, rtol = y: constants, non-negative. */
static int parse_tolerance(spec_parser *sp, const char *field, const char *p, const char *end,
                           double *atol, double *rtol) {
  static const char *const keys[] = {"atol", "rtol"};
  const char *vals[2] = {0};
  double *outs[2] = {atol, rtol};
  if (parse_pairs(sp, field, p, end, keys, 2, vals))
    return -1;
  for (int i = 0; i < 2; i++) {
    if (!vals[i])
      continue;
    ks_value v;
    if (ks_expr_eval(sp->ctx, vals[i], NULL, &v)) {
      char err[sizeof sp->ctx->error];
      snprintf(err, sizeof err, "%s", sp->ctx->error);
      return FAIL(sp, "%s: %s '%s': %s (a tolerance is a number)", field, keys[i],
                  Q(sp, vals[i]), err);
    }
    double d = ks_value_as_double(v);
    if (!(d >= 0) || !isfinite(d))
      return FAIL(sp, "%s: %s must be a non-negative number, not '%s'", field, keys[i],
                  Q(sp, vals[i]));
    *outs[i] = d;
  }
  return 0;
}

/* ---- fields ------------------------------------------------------------- */

/* size NAME: var = expr, var = expr */
static int parse_size(spec_parser *sp, const char *p) {
  const char *name = read_ident(sp, &p);
  if (!name)
    return FAIL(sp, "size: expected a name, as in 'size timed: n = 1 << 20'");
  const char *field = ks_arena_printf(sp->arena, "size '%s'", Q(sp, name));
  p = skip_ws(p);
  if (*p != ':')
    return FAIL(sp, "%s: expected ':' after the name", field);
  size_t first;
  if (index_find(&sp->sizes, name, &first))
    return FAIL(sp, "%s: given twice (first on line %u)", field, sp->out->sizes.items[first].line);
  index_add(&sp->sizes, name, sp->out->sizes.len);
  ks_size_set *set = ks_array_push(sp->arena, &sp->out->sizes);
  set->name = name;
  set->timed = !strcmp(name, "timed");
  set->line = sp->line;
  ks_strings parts = {0};
  ks_ctext_split(sp->arena, p + 1, p + strlen(p), &parts);
  if (!parts.len)
    return FAIL(sp, "%s: no variables (write 'size %s: n = ...')", field, name);
  for (size_t i = 0; i < parts.len; i++) {
    const char *q = parts.items[i];
    const char *var = read_ident(sp, &q);
    q = skip_ws(q);
    if (!var || *q != '=' || q[1] == '=')
      return FAIL(sp, "%s: expected 'variable = value', not '%s'", field, Q(sp, parts.items[i]));
    for (size_t j = 0; j < set->vars.len; j++)
      if (!strcmp(set->vars.items[j].name, var))
        return FAIL(sp, "%s: variable '%s' given twice", field, Q(sp, var));
    ks_binding *b = ks_array_push(sp->arena, &set->vars);
    b->name = var;
    b->value = trimmed(sp, q + 1, q + strlen(q));
    b->line = sp->line;
    if (check_expr(sp, field, ks_arena_printf(sp->arena, "variable '%s'", Q(sp, var)), b->value))
      return -1;
  }
  return 0;
}

/* scalar name = expr, name = expr */
static int parse_scalar(spec_parser *sp, const char *p) {
  ks_strings parts = {0};
  ks_ctext_split(sp->arena, p, p + strlen(p), &parts);
  if (!parts.len)
    return FAIL(sp, "scalar: expected 'scalar name = value'");
  for (size_t i = 0; i < parts.len; i++) {
    const char *q = parts.items[i];
    const char *name = read_ident(sp, &q);
    q = skip_ws(q);
    if (!name || *q != '=' || q[1] == '=')
      return FAIL(sp, "scalar: expected 'name = value', not '%s'", Q(sp, parts.items[i]));
    const char *field = ks_arena_printf(sp->arena, "scalar '%s'", Q(sp, name));
    size_t first;
    if (index_find(&sp->scalars, name, &first))
      return FAIL(sp, "%s: given twice (first on line %u)", field,
                  sp->out->scalars.items[first].line);
    index_add(&sp->scalars, name, sp->out->scalars.len);
    ks_binding *b = ks_array_push(sp->arena, &sp->out->scalars);
    b->name = name;
    b->value = trimmed(sp, q + 1, q + strlen(q));
    b->line = sp->line;
    if (check_expr(sp, field, "value", b->value))
      return -1;
  }
  return 0;
}

static const struct {
  const char *name;
  ks_dist_kind kind;
  unsigned min_args, max_args;
  const char *args; /* for messages */
} dists[] = {
    {"uniform", KS_DIST_UNIFORM, 0, 2, "(lo, hi)"},
    {"normal", KS_DIST_NORMAL, 0, 2, "(mean, std)"},
    {"int", KS_DIST_INT, 2, 2, "(lo, hi)"},
    {"iota", KS_DIST_IOTA, 0, 1, "(start)"},
    {"permutation", KS_DIST_PERMUTATION, 0, 0, ""},
    {"const", KS_DIST_CONSTANT, 1, 1, "(value)"},
    {"sorted_int", KS_DIST_SORTED_INT, 2, 2, "(lo, hi)"},
};

/* The words after a buffer's length: a distribution and/or tol(...). */
static int parse_buffer_tail(spec_parser *sp, const char *field, const char *p, ks_spec_buffer *b) {
  const char *dist_name = NULL;
  for (;;) {
    p = skip_ws(p);
    if (!*p)
      break;
    const char *start = p;
    const char *word = read_ident(sp, &p);
    if (!word) {
      const char *e = p;
      while (*e && *e != ' ' && *e != '\t')
        e++;
      return FAIL(sp, "%s: unexpected '%s'", field, Q(sp, trimmed(sp, start, e)));
    }
    const char *args = NULL, *args_end = NULL;
    p = skip_ws(p);
    if (*p == '(') {
      const char *close = ks_ctext_matching(p, p + strlen(p));
      if (!close)
        return FAIL(sp, "%s: unbalanced parentheses after '%s'", field, Q(sp, word));
      args = p + 1;
      args_end = close;
      p = close + 1;
    }
    if (!strcmp(word, "tol")) {
      if (!args)
        return FAIL(sp, "%s: expected tol(atol = ..., rtol = ...)", field);
      if (b->role == KS_ROLE_IN)
        return FAIL(sp, "%s: tol() applies to outputs (out, inout), not to an input", field);
      if (parse_tolerance(sp, field, args, args_end, &b->atol, &b->rtol))
        return -1;
      continue;
    }
    size_t d = 0;
    while (d < sizeof dists / sizeof *dists && strcmp(dists[d].name, word))
      d++;
    if (d == sizeof dists / sizeof *dists)
      return FAIL(sp,
                  "%s: unknown distribution '%s' (expected uniform, normal, int, iota, "
                  "permutation, const or sorted_int)",
                  field, Q(sp, word));
    if (dist_name)
      return FAIL(sp, "%s: two distributions ('%s' and '%s')", field, dist_name, word);
    if (b->role == KS_ROLE_OUT)
      return FAIL(sp,
                  "%s: an out buffer takes no distribution (its contents are poisoned "
                  "before each run); make it inout if the kernel reads it",
                  field);
    dist_name = word;
    ks_strings parts = {0};
    if (args)
      ks_ctext_split(sp->arena, args, args_end, &parts);
    if (parts.len < dists[d].min_args || parts.len > dists[d].max_args) {
      if (!dists[d].max_args)
        return FAIL(sp, "%s: %s takes no arguments", field, word);
      return FAIL(sp, "%s: %s takes %u argument%s %s, not %zu", field, word, dists[d].max_args,
                  dists[d].max_args == 1 ? "" : "s", dists[d].args, parts.len);
    }
    if (dists[d].min_args == 0 && parts.len == 1 && dists[d].max_args == 2)
      return FAIL(sp, "%s: %s takes 2 arguments %s or none, not 1", field, word, dists[d].args);
    b->dist.kind = dists[d].kind;
    for (size_t i = 0; i < parts.len; i++) {
      char what[64];
      snprintf(what, sizeof what, "%s argument %zu", word, i + 1);
      if (check_expr(sp, field, what, parts.items[i]))
        return -1;
    }
    b->dist.a = parts.len > 0 ? parts.items[0] : NULL;
    b->dist.b = parts.len > 1 ? parts.items[1] : NULL;
  }
  return 0;
}

/* ROLE name[: type][length] [distribution] [tol(...)] */
static int parse_buffer(spec_parser *sp, ks_role role, const char *p) {
  const char *name = read_ident(sp, &p);
  if (!name)
    return FAIL(sp, "buffer: expected a parameter name, as in 'in x: float[n] uniform(-1, 1)'");
  const char *field = ks_arena_printf(sp->arena, "buffer '%s'", Q(sp, name));
  size_t first;
  if (index_find(&sp->buffers, name, &first))
    return FAIL(sp, "%s: given twice (first on line %u)", field,
                sp->out->buffers.items[first].line);
  index_add(&sp->buffers, name, sp->out->buffers.len);
  ks_spec_buffer *b = ks_array_push(sp->arena, &sp->out->buffers);
  b->param = name;
  b->role = role;
  b->line = sp->line;
  b->atol = b->rtol = -1;
  b->dist.kind = KS_DIST_UNIFORM; /* the default; its bounds are left to the type */
  p = skip_ws(p);
  if (*p == ':') {
    const char *type_begin = p + 1, *bracket = strchr(p, '[');
    if (!bracket)
      return FAIL(sp, "%s: expected '[length]' after the element type", field);
    const char *type = trimmed(sp, type_begin, bracket);
    if (!*type)
      return FAIL(sp, "%s: expected an element type after ':'", field);
    if (!ks_dtype_parse(type, &b->dtype))
      return FAIL(sp,
                  "%s: unknown element type '%s' (expected a C arithmetic type such as "
                  "float or unsigned int, or f16, bf16, f32, f64, i8 ... u64)",
                  field, Q(sp, type));
    p = bracket;
  }
  if (*p != '[') {
    if (is_ident_start(*p))
      return FAIL(sp,
                  "%s: expected '[length]' after the name (the type comes after a colon: "
                  "'x: float[n]')",
                  field);
    return FAIL(sp, "%s: expected '[length]' after the name", field);
  }
  const char *close = ks_ctext_matching(p, p + strlen(p));
  if (!close)
    return FAIL(sp, "%s: missing ']'", field);
  b->length = trimmed(sp, p + 1, close);
  if (check_expr(sp, field, "length", b->length))
    return -1;
  return parse_buffer_tail(sp, field, close + 1, b);
}

static int once(spec_parser *sp, const char *field, unsigned *line) {
  if (*line)
    return FAIL(sp, "%s: given twice (first on line %u)", field, *line);
  *line = sp->line;
  return 0;
}

/* launch grid = ..., block = ..., smem = ... */
static int parse_launch(spec_parser *sp, const char *p) {
  static const char *const keys[] = {"grid", "block", "smem"};
  const char *vals[3] = {0};
  if (once(sp, "launch", &sp->launch_line) ||
      parse_pairs(sp, "launch", p, p + strlen(p), keys, 3, vals))
    return -1;
  if (!vals[0] || !vals[1])
    return FAIL(sp, "launch: needs both grid and block (smem is optional, 0 by default)");
  if (check_dim3(sp, "grid", vals[0]) || check_dim3(sp, "block", vals[1]) ||
      (vals[2] && check_expr(sp, "launch", "smem", vals[2])))
    return -1;
  sp->out->grid = vals[0];
  sp->out->block = vals[1];
  sp->out->smem = vals[2];
  return 0;
}

static int parse_reference(spec_parser *sp, const char *p) {
  const char *word = read_ident(sp, &p);
  if (once(sp, "reference", &sp->reference_line))
    return -1;
  if (!word || *skip_ws(p) || (strcmp(word, "fp64") && strcmp(word, "native")))
    return FAIL(sp, "reference: expected 'fp64' or 'native'");
  sp->out->fp64_reference = !strcmp(word, "fp64");
  sp->out->native_reference = !strcmp(word, "native");
  return 0;
}

static int parse_seeds(spec_parser *sp, const char *p) {
  unsigned long long n;
  if (once(sp, "seeds", &sp->seeds_line))
    return -1;
  if (ks_expr_eval_count(sp->ctx, p, NULL, 1000, &n) || n == 0)
    return FAIL(sp, "seeds: expected a number of input sets from 1 to 1000, not '%s'", Q(sp, p));
  sp->out->seeds = (unsigned)n;
  return 0;
}

static int parse_instance(spec_parser *sp, const char *p) {
  if (once(sp, "instance", &sp->instance_line))
    return -1;
  const char *end = p + strlen(p);
  if (*p == '<' && end > p && end[-1] == '>') {
    p++;
    end--;
  }
  sp->out->instance = trimmed(sp, p, end);
  if (!*sp->out->instance)
    return FAIL(sp, "instance: expected template arguments, as in 'instance float, 256'");
  return 0;
}

/* Edit distance of two short words, for "did you mean". */
static unsigned distance(const char *a, const char *b) {
  unsigned row[32], n = (unsigned)strlen(b);
  if (n >= 32 || strlen(a) >= 32)
    return 99;
  for (unsigned j = 0; j <= n; j++)
    row[j] = j;
  for (unsigned i = 1; a[i - 1]; i++) {
    unsigned diag = row[0];
    row[0] = i;
    for (unsigned j = 1; j <= n; j++) {
      unsigned up = row[j];
      unsigned best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[n];
}

static int parse_line(spec_parser *sp, const char *text) {
  static const char *const fields[] = {"size",  "scalar",   "in",        "out",
                                       "inout", "launch",   "tolerance", "reference",
                                       "seeds", "instance", "flops"};
  const char *p = text;
  const char *word = read_ident(sp, &p);
  if (!word)
    return FAIL(sp,
                "expected a field (size, scalar, in, out, inout, launch, tolerance, "
                "reference, seeds, instance, flops), not '%s'",
                Q(sp, text));
  const char *rest = skip_ws(p);
  if (!strcmp(word, "size"))
    return parse_size(sp, rest);
  if (!strcmp(word, "scalar"))
    return parse_scalar(sp, rest);
  if (!strcmp(word, "in"))
    return parse_buffer(sp, KS_ROLE_IN, rest);
  if (!strcmp(word, "out"))
    return parse_buffer(sp, KS_ROLE_OUT, rest);
  if (!strcmp(word, "inout"))
    return parse_buffer(sp, KS_ROLE_INOUT, rest);
  if (!strcmp(word, "launch"))
    return parse_launch(sp, rest);
  if (!strcmp(word, "tolerance"))
    return once(sp, "tolerance", &sp->tolerance_line) ||
                   parse_tolerance(sp, "tolerance", rest, rest + strlen(rest), &sp->out->atol,
                                   &sp->out->rtol)
               ? -1
               : 0;
  if (!strcmp(word, "reference"))
    return parse_reference(sp, rest);
  if (!strcmp(word, "seeds"))
    return parse_seeds(sp, rest);
  if (!strcmp(word, "instance"))
    return parse_instance(sp, rest);
  if (!strcmp(word, "flops")) {
    if (once(sp, "flops", &sp->flops_line))
      return -1;
    sp->out->flops = ks_arena_strdup(sp->arena, rest);
    return check_expr(sp, "flops", "expression", sp->out->flops);
  }
  if (!strcmp(word, "kernel"))
    return FAIL(sp, "'kernel NAME' starts a section of a .kspec file; an annotation belongs "
                    "to the kernel it is written above");
  const char *hint = NULL;
  for (size_t i = 0; i < sizeof fields / sizeof *fields && !hint; i++)
    if (distance(word, fields[i]) <= (strlen(fields[i]) > 3 ? 2u : 1u))
      hint = fields[i];
  if (hint)
    return FAIL(sp, "unknown field '%s' (did you mean '%s'?)", Q(sp, word), hint);
  return FAIL(sp,
              "unknown field '%s' (expected size, scalar, in, out, inout, launch, "
              "tolerance, reference, seeds, instance or flops)",
              Q(sp, word));
}

/* One physical line without comment markers, the "kernelsmith:" tag and
 * '#' comments, trimmed. */
static const char *clean_line(spec_parser *sp, const char *b, const char *e) {
  while (b < e && isspace((unsigned char)*b))
    b++;
  while (e > b && isspace((unsigned char)e[-1]))
    e--;
  if (e - b >= 2 && b[0] == '/' && b[1] == '*') {
    b += 2;
    while (b < e && *b == '*')
      b++;
  } else if (e - b >= 2 && b[0] == '/' && b[1] == '/') {
    while (b < e && *b == '/')
      b++;
  } else if (b < e && *b == '*' && !(e - b >= 2 && b[1] == '/')) {
    b++;
  }
  if (e - b >= 2 && e[-2] == '*' && e[-1] == '/')
    e -= 2;
  while (b < e && isspace((unsigned char)*b))
    b++;
  static const char tag[] = "kernelsmith:";
  if ((size_t)(e - b) >= sizeof tag - 1 && !memcmp(b, tag, sizeof tag - 1))
    b += sizeof tag - 1;
  const char *hash = memchr(b, '#', (size_t)(e - b));
  if (hash)
    e = hash;
  return trimmed(sp, b, e);
}

int ks_spec_parse(ks_ctx *ctx, const char *file, unsigned line, const char *text, ks_arena *arena,
                  ks_spec *out) {
  memset(out, 0, sizeof *out);
  file = ks_arena_strdup(arena, file ? file : "(spec)");
  out->file = file;
  out->line = line;
  out->atol = out->rtol = -1;
  spec_parser sp = {.ctx = ctx, .arena = arena, .file = file, .line = line, .out = out};
  if (!text)
    text = "";
  ks_buf joined = KS_BUF_INIT;
  unsigned joined_line = 0;
  int rc = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    const char *e = nl ? nl : p + strlen(p);
    const char *clean = clean_line(&sp, p, e);
    size_t n = strlen(clean);
    /* A line ending in a backslash continues on the next. */
    bool more = n && clean[n - 1] == '\\';
    if (!joined.len)
      joined_line = sp.line;
    if (n) {
      if (joined.len)
        ks_buf_addc(&joined, ' ');
      ks_buf_add(&joined, clean, more ? n - 1 : n);
    }
    if (!more && joined.len) {
      unsigned here = sp.line;
      sp.line = joined_line;
      ks_buf_rtrim(&joined);
      rc = parse_line(&sp, ks_arena_strdup(arena, joined.data));
      sp.line = here;
      ks_buf_reset(&joined);
      if (rc)
        goto out;
    }
    sp.line++;
    p = nl ? nl + 1 : e;
  }
  if (joined.len) {
    sp.line = joined_line;
    rc = FAIL(&sp, "the last line ends with '\\' but nothing follows");
  }
out:
  ks_buf_release(&joined);
  free(sp.sizes.slots);
  free(sp.scalars.slots);
  free(sp.buffers.slots);
  return rc;
}
