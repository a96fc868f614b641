/* spec_site: evaluating a launch site's own configuration, so that most
 * specs need no `launch` line.
 *
 * A site's grid, block and shared-memory texts are written in the caller's
 * names: `saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, d_x, d_y)`. An
 * identifier there can be evaluated when it is itself an argument of the
 * launch (n above is passed as the kernel's parameter n, whose value the
 * spec gives), a template argument of the launch, or an object-like macro of
 * the site's or the kernel's file (`#define BLOCK_SIZE 256`). Anything else
 * (a dim3 variable, a block count computed on the line before) cannot be
 * known from the source text alone; the error then says which name stopped
 * the evaluation and what it is, so the user knows why a `launch` line is
 * needed. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_fs.h"
#include "ks_specs.h"
#include "spec_int.h"

enum { MAX_FILE_BYTES = 64u << 20, MAX_MACRO_DEPTH = 16, MAX_BRACES = 256 };

typedef struct macro_def {
  const char *name;
  const char *params; /* a function-like macro's parameters, "a, b" */
  const char *value;  /* the replacement text, comments removed */
  bool function_like;
} macro_def;
typedef KS_ARRAY(macro_def) macro_defs;

typedef struct site_env {
  ks_ctx *ctx;
  ks_arena *arena;
  const ks_spec_env *params; /* kernel parameter (and template parameter) values */
  ks_strings alias_names;    /* identifiers written in the launch ... */
  ks_strings alias_params;   /* ... and the parameter each stands for */
  macro_defs macros;
  unsigned depth;      /* macro expansion depth */
  const char *missing; /* the last name that could not be bound */
  const char *why;     /* why it could not, when known */
  bool no_values;      /* the parameters have no values (no spec) */
  ks_expr_env expr;
} site_env;

/* ---- macros ---------------------------------------------------------- */

/* The object-like and function-like macros defined in [text, end). */
static void collect_macros(ks_arena *arena, const char *text, const char *end, macro_defs *out) {
  for (const char *p = text; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end, *q = p;
    while (q < e && (*q == ' ' || *q == '\t'))
      q++;
    if (q < e && *q == '#') {
      q++;
      while (q < e && (*q == ' ' || *q == '\t'))
        q++;
      if (e - q > 7 && !memcmp(q, "define", 6) && (q[6] == ' ' || q[6] == '\t')) {
        q += 7;
        while (q < e && (*q == ' ' || *q == '\t'))
          q++;
        const char *n = q;
        while (q < e && ks_ctext_is_ident_char(*q))
          q++;
        if (q > n && (e[-1] != '\\')) { /* multi-line macros are left out */
          macro_def *m = ks_array_push(arena, out);
          m->name = ks_arena_strndup(arena, n, (size_t)(q - n));
          m->function_like = q < e && *q == '(';
          if (m->function_like) {
            const char *close = memchr(q, ')', (size_t)(e - q));
            if (close) {
              m->params = ks_ctext_trim(arena, q + 1, close);
              q = close + 1;
            }
          }
          /* The value without comments. */
          ks_buf v = KS_BUF_INIT;
          for (const char *r = q; r < e;) {
            const char *s = ks_ctext_skip_lexical(r);
            if (s != r && r[0] == '/') {
              ks_buf_addc(&v, ' ');
              r = s > e ? e : s;
            } else if (s != r) {
              ks_buf_add(&v, r, (size_t)((s > e ? e : s) - r));
              r = s > e ? e : s;
            } else {
              ks_buf_addc(&v, *r++);
            }
          }
          m->value = ks_ctext_trim(arena, v.data, v.data + v.len);
          ks_buf_release(&v);
        }
      }
    }
    p = nl ? nl + 1 : end;
  }
}

static const macro_def *find_macro(const site_env *env, const char *name, size_t len) {
  for (size_t i = env->macros.len; i-- > 0;) /* the last definition wins */
    if (strlen(env->macros.items[i].name) == len && !memcmp(env->macros.items[i].name, name, len))
      return &env->macros.items[i];
  return NULL;
}

/* `text` with the invocations of function-like macros whose parameters are
 * known replaced by their bodies, arguments put in for the parameters (and
 * parenthesized, as the arithmetic they stand for reads), as the
 * preprocessor does for the launch configurations real code writes
 * (`CEIL_DIV(n, BLOCK)`, PolyBench's `POLYBENCH_LOOP_BOUND(NI, ni)`); object-
 * like macros are left to the lookup. No # or ##: such a macro stays a call,
 * and the evaluation says it is a function-like macro. */
static const char *expand_calls(site_env *env, const char *text, unsigned depth) {
  if (!text || depth > MAX_MACRO_DEPTH)
    return text;
  ks_buf b = KS_BUF_INIT;
  bool changed = false;
  const char *end = text + strlen(text);
  for (const char *p = text; *p;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      ks_buf_add(&b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    if (!ks_ctext_is_ident_char(*p) || (p > text && ks_ctext_is_ident_char(p[-1]))) {
      ks_buf_addc(&b, *p++);
      continue;
    }
    const char *e = p;
    while (ks_ctext_is_ident_char(*e))
      e++;
    const char *open = e;
    while (*open == ' ' || *open == '\t')
      open++;
    const macro_def *m = *open == '(' ? find_macro(env, p, (size_t)(e - p)) : NULL;
    const char *close = m && m->function_like && m->params && !strchr(m->value, '#')
                            ? ks_ctext_matching(open, end)
                            : NULL;
    if (!close) {
      ks_buf_add(&b, p, (size_t)(e - p));
      p = e;
      continue;
    }
    ks_strings params = {0}, args = {0};
    ks_ctext_split(env->arena, m->params, m->params + strlen(m->params), &params);
    ks_ctext_split(env->arena, open + 1, close, &args);
    if (params.len != args.len) {
      ks_buf_add(&b, p, (size_t)(e - p));
      p = e;
      continue;
    }
    for (size_t i = 0; i < args.len; i++)
      args.items[i] = ks_arena_printf(env->arena, "(%s)", args.items[i]);
    const char *body = ks_ctext_substitute(env->arena, m->value, params.items, args.items,
                                           params.len);
    ks_buf_addf(&b, "(%s)", body);
    changed = true;
    p = close + 1;
  }
  const char *out = changed ? ks_arena_strdup(env->arena, b.data) : text;
  ks_buf_release(&b);
  return changed ? expand_calls(env, out, depth + 1) : out;
}

static bool site_lookup(void *data, const char *name, size_t len, ks_value *out) {
  site_env *env = data;
  for (size_t i = 0; i < env->alias_names.len; i++) {
    const char *alias = env->alias_names.items[i];
    if (strlen(alias) != len || memcmp(alias, name, len))
      continue;
    if (ks_spec_env_get(env->params, env->alias_params.items[i], out))
      return true;
    if (find_macro(env, name, len))
      break; /* `k<<<g, b>>>(NI, ...)`: the macro's value is the argument's */
    env->missing = ks_arena_strndup(env->arena, name, len);
    env->why = ks_arena_printf(env->arena,
                               env->no_values ? "'%s' is passed as parameter '%s', which has "
                                                "no value without a spec or capture"
                                              : "'%s' is passed as parameter '%s', which is not "
                                                "a number",
                               env->missing, env->alias_params.items[i]);
    return false;
  }
  const macro_def *m = find_macro(env, name, len);
  if (m && !m->function_like && env->depth < MAX_MACRO_DEPTH) {
    env->depth++;
    int rc = ks_expr_eval(env->ctx, expand_calls(env, m->value, env->depth), &env->expr, out);
    env->depth--;
    if (!rc)
      return true;
    if (!env->why)
      env->why = ks_arena_printf(env->arena, "macro '%s' ('%s') does not evaluate: %s", m->name,
                                 ks_spec_quote(env->arena, m->value), env->ctx->error);
  } else if (m && m->function_like && !env->why) {
    env->why = ks_arena_printf(env->arena, "'%s' is a function-like macro", m->name);
  }
  env->missing = ks_arena_strndup(env->arena, name, len);
  return false;
}

/* ---- explaining a name ------------------------------------------------ */

/* Whether the brace at `brace` opens a namespace, class or linkage block
 * rather than a function body: looks at the text since the previous
 * statement. */
static bool scope_brace(const char *text, const char *brace) {
  const char *b = brace;
  while (b > text && b[-1] != ';' && b[-1] != '}' && b[-1] != '{')
    b--;
  static const char *const words[] = {"namespace", "struct", "class", "union", "enum", "extern"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
    const char *w = ks_ctext_find(b, brace, words[i]);
    size_t n = strlen(words[i]);
    if (w && (w == text || !ks_ctext_is_ident_char(w[-1])) && !ks_ctext_is_ident_char(w[n]))
      return true;
  }
  return false;
}

/* The opening brace of the function body that holds `at`, or NULL. */
static const char *enclosing_body(const char *text, const char *at) {
  const char *stack[MAX_BRACES];
  unsigned depth = 0;
  bool line_start = true;
  for (const char *p = text; p < at;) {
    if (line_start && *p == '#') { /* preprocessor lines hold no braces we want */
      while (p < at && *p != '\n')
        p += (*p == '\\' && p[1] == '\n') ? 2 : 1;
      continue;
    }
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      line_start = false;
      continue;
    }
    if (*p == '{' && depth < MAX_BRACES)
      stack[depth++] = p;
    else if (*p == '}' && depth)
      depth--;
    if (*p == '\n')
      line_start = true;
    else if (!isspace((unsigned char)*p))
      line_start = false;
    p++;
  }
  for (unsigned i = 0; i < depth; i++)
    if (!scope_brace(text, stack[i]))
      return stack[i];
  return NULL;
}

static bool word_at(const char *text, const char *p, const char *name, size_t n) {
  return !strncmp(p, name, n) && (p == text || !ks_ctext_is_ident_char(p[-1])) &&
         !ks_ctext_is_ident_char(p[n]);
}

/* Whether `name` is a parameter of the function whose body opens at
 * `body`: a whole word inside the last parenthesis before the brace. */
static bool is_parameter(const char *text, const char *body, const char *name) {
  const char *p = body;
  while (p > text && p[-1] != ')' && p[-1] != ';' && p[-1] != '}')
    p--;
  if (p == text || p[-1] != ')')
    return false;
  const char *close = p - 1, *open = close;
  int depth = 0;
  for (; open >= text; open--) {
    if (*open == ')')
      depth++;
    else if (*open == '(' && --depth == 0)
      break;
  }
  if (open < text)
    return false;
  size_t n = strlen(name);
  for (const char *q = open + 1; q < close; q++)
    if (word_at(text, q, name, n))
      return true;
  return false;
}

/* The type word before a declaration of `name` in [body, at), or NULL when
 * no declaration is seen. A declaration: the name after a type word (or
 * '*', '&', '>') and before one of = ( { ; , [ ). */
static const char *local_type(ks_arena *arena, const char *text, const char *body, const char *at,
                              const char *name) {
  static const char *const not_types[] = {"return", "case", "else",   "do",   "goto",
                                          "sizeof", "new",  "delete", "throw"};
  size_t n = strlen(name);
  const char *found = NULL;
  for (const char *p = body; p < at;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (!word_at(text, p, name, n)) {
      p++;
      continue;
    }
    const char *after = p + n, *before = p;
    while (*after == ' ' || *after == '\t')
      after++;
    while (before > body && isspace((unsigned char)before[-1]))
      before--;
    bool prev_ok = before > body && (ks_ctext_is_ident_char(before[-1]) || before[-1] == '*' ||
                                     before[-1] == '&' || before[-1] == '>');
    if (prev_ok && strchr("=({;,[)", *after) && *after) {
      const char *we = before;
      while (we > body && (we[-1] == '*' || we[-1] == '&' || isspace((unsigned char)we[-1])))
        we--;
      const char *ws = we;
      while (ws > body && ks_ctext_is_ident_char(ws[-1]))
        ws--;
      const char *word = ks_arena_strndup(arena, ws, (size_t)(we - ws));
      bool keyword = false;
      for (size_t i = 0; i < sizeof not_types / sizeof *not_types; i++)
        keyword = keyword || !strcmp(word, not_types[i]);
      if (!keyword &&
          !(ws > body && (ws[-1] == '.' || (ws[-1] == '>' && ws - 1 > body && ws[-2] == '-'))))
        found = word;
    }
    p += n;
  }
  return found;
}

static const char *explain(site_env *env, const char *text, unsigned offset, const ks_launch *site,
                           const char *name) {
  const char *at = text + offset;
  const char *body = enclosing_body(text, at);
  const char *fn = site->enclosing ? site->enclosing : "the enclosing function";
  if (body && is_parameter(text, body, name))
    return ks_arena_printf(env->arena, "'%s' is a parameter of %s, not an argument of the kernel",
                           name, fn);
  const char *type = body ? local_type(env->arena, text, body, at, name) : NULL;
  if (type && !strcmp(type, "dim3"))
    return ks_arena_printf(env->arena, "'%s' is a dim3 local variable of %s", name, fn);
  if (type)
    return ks_arena_printf(env->arena, "'%s' is a local variable of %s", name, fn);
  return ks_arena_printf(env->arena, "'%s' is neither an argument of the launch nor a macro", name);
}

/* ---- dim3 locals (no spec) -------------------------------------------- */

/* Brace depth of `p` counted from `from` (0: the same block). */
static int depth_between(const char *from, const char *p) {
  int depth = 0;
  for (const char *q = from; q < p;) {
    const char *r = ks_ctext_skip_lexical(q);
    if (r != q) {
      q = r;
      continue;
    }
    depth += *q == '{' ? 1 : *q == '}' ? -1 : 0;
    q++;
  }
  return depth;
}

/* Whether the statement at `p` is a branch or loop body without braces
 * (`if (c) NAME.x = 4;`, `else NAME.x = 2;`): the word or ')' before it. */
static bool conditional_statement(const char *body, const char *p) {
  const char *b = p;
  while (b > body && isspace((unsigned char)b[-1]))
    b--;
  if (b > body && b[-1] == ')')
    return true;
  return b - body >= 4 && !strncmp(b - 4, "else", 4) &&
         (b - 4 == body || !ks_ctext_is_ident_char(b[-5]));
}

/* The value of dim3 local NAME at `at` in [body, at), as "(x, y, z)": its
 * last declaration (`dim3 NAME(...)`, `dim3 NAME{...}`, `dim3 NAME =
 * dim3(...)`, or `dim3 NAME;`, which is (1, 1, 1)), then the member
 * assignments after it in the same block (`NAME.x = NUMBER_THREADS;`, as
 * C-style code sets its launch). NULL when there is none, or when what
 * the text says is not the value for sure: the whole variable assigned, a
 * member updated (`+=`) or assigned in a nested block or under an if or
 * else. */
static const char *dim3_init(ks_arena *arena, const char *text, const char *body, const char *at,
                             const char *name) {
  size_t n = strlen(name);
  const char *member[3] = {NULL, NULL, NULL};
  const char *decl = NULL; /* where the declaration in force starts */
  bool known = false;
  for (const char *p = body; p < at;) {
    const char *q = ks_ctext_skip_lexical(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (!word_at(text, p, name, n)) {
      p++;
      continue;
    }
    const char *b = p;
    while (b > body && isspace((unsigned char)b[-1]))
      b--;
    const char *a = p + n;
    while (*a == ' ' || *a == '\t')
      a++;
    bool declared = b - body >= 4 && !strncmp(b - 4, "dim3", 4) &&
                    (b - 4 == body || !ks_ctext_is_ident_char(b[-5]));
    if (declared) {
      known = false;
      decl = p;
      member[0] = member[1] = member[2] = "1";
      if (*a == '=') {
        a++;
        while (isspace((unsigned char)*a))
          a++;
        if (!strncmp(a, "dim3", 4))
          a += 4;
        while (isspace((unsigned char)*a))
          a++;
      }
      if (*a == '(' || *a == '{') {
        const char *e = ks_ctext_matching(a, at);
        if (e) {
          ks_strings args = {0};
          ks_ctext_split(arena, a + 1, e, &args);
          known = args.len >= 1 && args.len <= 3;
          for (size_t i = 0; known && i < args.len; i++)
            member[i] = args.items[i];
        }
      } else if (*a == ';' || *a == ',') {
        known = true; /* dim3 NAME; is (1, 1, 1) */
      }
    } else if (known && *a == '=' && a[1] != '=') {
      known = false; /* assigned after its declaration */
    } else if (known && *a == '.' && a[1] >= 'x' && a[1] <= 'z' &&
               !ks_ctext_is_ident_char(a[2])) {
      const char *op = a + 2;
      while (*op == ' ' || *op == '\t')
        op++;
      bool assign = op[0] == '=' && op[1] != '=';
      bool update = (op[0] && strchr("+-*/%<>&|^", op[0]) && op[1] == '=') ||
                    (op[0] == '+' && op[1] == '+') || (op[0] == '-' && op[1] == '-') ||
                    ((op[0] == '<' || op[0] == '>') && op[1] == op[0] && op[2] == '=');
      if (assign) {
        const char *e = strchr(op + 1, ';');
        if (!e || e > at || depth_between(decl, p) != 0 || conditional_statement(body, p))
          known = false;
        else
          member[a[1] - 'x'] = ks_arena_strndup(arena, op + 1, (size_t)(e - op - 1));
      } else if (update) {
        known = false;
      }
    }
    p += n;
  }
  if (!known)
    return NULL;
  return ks_arena_printf(arena, "((%s), (%s), (%s))", member[0], member[1], member[2]);
}

/* `text` with each NAME.x / .y / .z of a dim3 already known replaced by its
 * value. */
static const char *dim3_members(ks_arena *arena, const char *text, const char *name,
                                const unsigned v[3]) {
  ks_buf b = KS_BUF_INIT;
  size_t n = strlen(name);
  for (const char *p = text; *p;) {
    if (word_at(text, p, name, n) && p[n] == '.' && p[n + 1] >= 'x' && p[n + 1] <= 'z' &&
        !ks_ctext_is_ident_char(p[n + 2])) {
      ks_buf_addf(&b, "%u", v[p[n + 1] - 'x']);
      p += n + 2;
    } else {
      ks_buf_addc(&b, *p++);
    }
  }
  const char *out = ks_arena_strdup(arena, b.data ? b.data : "");
  ks_buf_release(&b);
  return out;
}

/* ---- evaluation ------------------------------------------------------- */

/* An argument written as a bare identifier, possibly in parentheses. */
static const char *bare_ident(ks_arena *arena, const char *arg) {
  const char *b = arg, *e = arg + strlen(arg);
  for (;;) {
    while (b < e && isspace((unsigned char)*b))
      b++;
    while (e > b && isspace((unsigned char)e[-1]))
      e--;
    if (e - b >= 2 && *b == '(' && e[-1] == ')') {
      b++;
      e--;
      continue;
    }
    break;
  }
  if (b == e || isdigit((unsigned char)*b))
    return NULL;
  for (const char *p = b; p < e; p++)
    if (!ks_ctext_is_ident_char(*p))
      return NULL;
  return ks_arena_strndup(arena, b, (size_t)(e - b));
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Both entry points: `why` NULL stops at the first part that does not
 * evaluate (its error in ctx); else every part is tried and why[i] says why
 * part i (grid, block, smem) did not, NULL where it did. */
static int site_launch(ks_ctx *ctx, const ks_kernel *k, const ks_launch *site,
                       const ks_spec_env *params, ks_arena *arena, ks_launch_cfg *out,
                       const char *why[3]) {
  site_env env = {.ctx = ctx, .arena = arena, .params = params, .no_values = why != NULL};
  env.expr = (ks_expr_env){site_lookup, &env};
  ks_buf site_text = KS_BUF_INIT, kernel_text = KS_BUF_INIT;
  int rc = 0;
  const char *where = ks_arena_printf(
      arena, "%s:%u", site->loc.file ? base_name(site->loc.file) : "?", site->loc.line);
  for (size_t i = 0; i < site->args.len && i < k->params.len; i++) {
    const char *id = bare_ident(arena, site->args.items[i]);
    if (id && *k->params.items[i].name) {
      *ks_array_push(arena, &env.alias_names) = id;
      *ks_array_push(arena, &env.alias_params) = k->params.items[i].name;
    }
  }
  for (size_t i = 0; i < site->template_args.len; i++) {
    const ks_template_arg *t = &site->template_args.items[i];
    const char *id = t->value ? bare_ident(arena, t->value) : NULL;
    const char *param = t->param ? t->param : i < k->tparams.len ? k->tparams.items[i].name : NULL;
    if (id && param) {
      *ks_array_push(arena, &env.alias_names) = id;
      *ks_array_push(arena, &env.alias_params) = param;
    }
  }
  /* Macros: the kernel's file first, so the site's file (read up to the
   * site) wins where both define a name. */
  const char *kfile = k->loc.file;
  if (kfile && site->loc.file && strcmp(kfile, site->loc.file) &&
      !ks_read_file(ctx, kfile, MAX_FILE_BYTES, &kernel_text)) {
    ks_spec_text_as_compiled(kernel_text.data, kernel_text.len);
    collect_macros(arena, kernel_text.data, kernel_text.data + kernel_text.len, &env.macros);
  }
  if (site->loc.file && !ks_read_file(ctx, site->loc.file, MAX_FILE_BYTES, &site_text)) {
    ks_spec_text_as_compiled(site_text.data, site_text.len);
    size_t upto = site->loc.offset < site_text.len ? site->loc.offset : site_text.len;
    collect_macros(arena, site_text.data, site_text.data + upto, &env.macros);
  }
  /* Then the definitions the unit's preprocessor made (headers included,
   * inactive #if branches left out), which win over the text read above. */
  for (size_t i = 0; i < site->macros.len; i++) {
    macro_def *m = ks_array_push(arena, &env.macros);
    m->name = site->macros.items[i].name;
    m->params = site->macros.items[i].params;
    m->value = site->macros.items[i].value;
    m->function_like = site->macros.items[i].function_like;
  }
  const char *what[3] = {"grid", "block", "smem"};
  const char *texts[3] = {site->grid, site->block, site->smem};
  /* With no spec, a dim3 local is read from its declaration before the
   * site (`dim3 block(BX, BY); dim3 grid(ceil(NJ / (float)block.x), ...)`):
   * the block first, whose members the grid may use. */
  const char *body =
      why && site->loc.offset < site_text.len ? enclosing_body(site_text.data, site_text.data + site->loc.offset) : NULL;
  const char *evaluated[3] = {NULL, NULL, NULL};
  static const int order[3] = {1, 0, 2};
  int failed = 0;
  for (int oi = 0; oi < 3 && !rc; oi++) {
    int i = why ? order[oi] : oi;
    env.missing = env.why = NULL;
    if (why)
      why[i] = NULL;
    const char *local = i < 2 && body && texts[i] ? bare_ident(arena, texts[i]) : NULL;
    const char *init = local ? dim3_init(arena, site_text.data, body,
                                         site_text.data + site->loc.offset, local)
                             : NULL;
    if (init) {
      for (int j = 0; j < 2; j++)
        if (evaluated[j])
          init = dim3_members(arena, init, evaluated[j], j == 0 ? out->grid : out->block);
      if (!ks_expr_eval_dim3(ctx, expand_calls(&env, init, 0), &env.expr,
                             i == 0 ? out->grid : out->block)) {
        evaluated[i] = local;
        continue;
      }
    }
    if (!texts[i]) {
      if (i < 2)
        rc = ks_fail(ctx, "the launch site at %s gives no %s", where, what[i]);
      else
        out->smem = 0;
      continue;
    }
    const char *expanded = expand_calls(&env, texts[i], 0);
    if (i < 2)
      rc = ks_expr_eval_dim3(ctx, expanded, &env.expr, i == 0 ? out->grid : out->block);
    else
      rc = ks_expr_eval_count(ctx, expanded, &env.expr, 0xffffffffULL, &out->smem);
    if (!rc)
      continue;
    const char *reason = env.why;
    if (!reason && env.missing && site_text.len && !strncmp(ctx->error, "unknown name", 12))
      reason = explain(&env, site_text.data, site->loc.offset, site, env.missing);
    static const char unknown_fn[] = "unknown function '";
    if (!reason && !strncmp(ctx->error, unknown_fn, sizeof unknown_fn - 1)) {
      const char *n = ctx->error + sizeof unknown_fn - 1, *q = strchr(n, '\'');
      const macro_def *m = q ? find_macro(&env, n, (size_t)(q - n)) : NULL;
      if (m && m->function_like)
        reason = ks_arena_printf(arena,
                                 "'%s' is a function-like macro (only object-like macros "
                                 "are expanded)",
                                 m->name);
    }
    if (!reason)
      reason = ks_arena_strdup(arena, ctx->error);
    rc = ks_fail(ctx, "the launch site's %s '%s' (%s) cannot be evaluated: %s", what[i],
                 ks_spec_quote(arena, texts[i]), where, reason);
    if (why) {
      why[i] = ks_arena_strdup(arena, ctx->error);
      failed++;
      rc = 0;
    }
  }
  ks_buf_release(&site_text);
  ks_buf_release(&kernel_text);
  return why ? failed : rc;
}

int ks_spec_site_launch(ks_ctx *ctx, const ks_kernel *k, const ks_launch *site,
                        const ks_spec_env *params, ks_arena *arena, ks_launch_cfg *out) {
  return site_launch(ctx, k, site, params, arena, out, NULL);
}

int ks_spec_site_launch_parts(ks_ctx *ctx, const ks_kernel *k, const ks_launch *site,
                              ks_arena *arena, ks_launch_cfg *out, const char *why[3]) {
  ks_spec_env none;
  ks_spec_env_init(&none, arena);
  return site_launch(ctx, k, site, &none, arena, out, why);
}
