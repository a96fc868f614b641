/* What a child's source may contain (lt_check_child): the rules of
 * docs/llm-prompts.md, checked lexically before anything compiles it.
 *
 *   directives     #include of toolkit device headers only; #define only
 *                  as the parent has it; no #undef, #line, other #pragma
 *   host code      functions that are not __device__/__global__, main,
 *                  host and C library calls, printf
 *   outside        launches, __managed__, mutable __device__ globals
 *   signature      one __global__, the parent's name, parameter list and
 *                  template header (whitespace and __restrict__ aside)
 *
 * Declarations (host functions, mutable __device__ and __managed__
 * variables) are the compile service's own candidate rules
 * (ks_candidate_check_rule), run last, so an accepted child is never
 * refused there. Messages quote identifiers
 * and text through lt_quote, so they stay short. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ks_compile.h"
#include "ks_ctext.h"
#include "ks_toolkit.h"
#include "llm_text_int.h"

typedef struct checker {
  ks_arena *arena;
  const char *src;     /* the child's source */
  const char *lexed;   /* comments and literals blanked */
  const char *code;    /* directives blanked too */
  const char **message;
} checker;

static ks_reply_reason fail(checker *c, ks_reply_reason r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ks_reply_reason fail(checker *c, ks_reply_reason r, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *c->message = ks_arena_strdup(c->arena, buf);
  return r;
}

static unsigned line_of(const char *text, size_t at) {
  unsigned n = 1;
  for (size_t i = 0; i < at && text[i]; i++)
    n += text[i] == '\n';
  return n;
}

static const char *quote_ident(checker *c, const char *p, const char *end) {
  return lt_quote(c->arena, p, (size_t)(end - p), 40);
}

/* ---- directives --------------------------------------------------------- */

/* The #define lines of `lexed` text (one entry per directive, continuation
 * lines joined), for comparing the child's with the parent's. */
static void defines(ks_arena *arena, const char *lexed, ks_strings *out) {
  for (const char *p = lexed; *p;) {
    const char *s = p;
    while (*s == ' ' || *s == '\t')
      s++;
    const char *e = s;
    while (*e && (*e != '\n' || (e > s && e[-1] == '\\')))
      e++;
    if (*s == '#') {
      const char *w = s + 1;
      while (*w == ' ' || *w == '\t')
        w++;
      if (!strncmp(w, "define", 6) && !ks_ctext_is_ident_char(w[6]))
        *ks_array_push(arena, out) = ks_arena_strndup(arena, w + 6, (size_t)(e - w - 6));
    }
    p = *e ? e + 1 : e;
  }
}

static bool word_is(const char *w, const char *we, const char *word) {
  return (size_t)(we - w) == strlen(word) && !strncmp(w, word, (size_t)(we - w));
}

static ks_reply_reason check_directives(checker *c, const ks_variant *parent) {
  ks_strings parent_defs = {0};
  bool have_parent_defs = false;
  for (const char *p = c->lexed; *p;) {
    const char *s = p;
    while (*s == ' ' || *s == '\t')
      s++;
    const char *e = s;
    while (*e && (*e != '\n' || (e > s && e[-1] == '\\')))
      e++;
    const char *next = *e ? e + 1 : e;
    if (*s != '#') {
      p = next;
      continue;
    }
    unsigned line = line_of(c->lexed, (size_t)(s - c->lexed));
    const char *w = s + 1;
    while (*w == ' ' || *w == '\t')
      w++;
    const char *we = w;
    while (ks_ctext_is_ident_char(*we))
      we++;
    if (word_is(w, we, "include")) {
      /* The header's name from the source: the lexed copy blanked "..." */
      const char *r = c->src + (we - c->lexed);
      while (*r == ' ' || *r == '\t')
        r++;
      char close = *r == '<' ? '>' : *r == '"' ? '"' : 0;
      const char *end = close ? strchr(r + 1, close) : NULL;
      const char *nl = strchr(r, '\n');
      char name[256] = "";
      if (end && (!nl || end < nl) && (size_t)(end - r - 1) < sizeof name) {
        memcpy(name, r + 1, (size_t)(end - r - 1));
        name[end - r - 1] = '\0';
      }
      if (!ks_toolkit_header_allowed(name))
        return fail(c, KS_REPLY_HOST_CODE,
                    "line %u: #include %s is not a CUDA device header (device code only)", line,
                    lt_quote(c->arena, name, strlen(name), 60));
    } else if (word_is(w, we, "define")) {
      if (!have_parent_defs) {
        defines(c->arena, lt_blank(c->arena, parent->source ? parent->source : "", false),
                &parent_defs);
        have_parent_defs = true;
      }
      bool known = false;
      for (size_t i = 0; i < parent_defs.len && !known; i++)
        known = lt_same_tokens(we, e, parent_defs.items[i],
                               parent_defs.items[i] + strlen(parent_defs.items[i]), false);
      if (!known) {
        const char *n = we;
        while (*n == ' ' || *n == '\t')
          n++;
        const char *ne = n;
        while (ks_ctext_is_ident_char(*ne))
          ne++;
        return fail(c, KS_REPLY_HOST_CODE,
                    "line %u: #define %s is not one of the parent's macros (use constexpr)", line,
                    quote_ident(c, n, ne));
      }
    } else if (word_is(w, we, "pragma")) {
      const char *a = we;
      while (*a == ' ' || *a == '\t')
        a++;
      const char *ae = a;
      while (ks_ctext_is_ident_char(*ae))
        ae++;
      if (!word_is(a, ae, "unroll") && !word_is(a, ae, "nounroll"))
        return fail(c, KS_REPLY_OUTSIDE_KERNEL,
                    "line %u: #pragma %s (only #pragma unroll and nounroll are allowed)", line,
                    quote_ident(c, a, ae));
    } else if (word_is(w, we, "undef") || word_is(w, we, "line")) {
      return fail(c, KS_REPLY_OUTSIDE_KERNEL,
                  "line %u: #%.*s changes the unit outside the variant", line, (int)(we - w), w);
    } else if (!(w == we || word_is(w, we, "if") || word_is(w, we, "ifdef") ||
                 word_is(w, we, "ifndef") || word_is(w, we, "elif") || word_is(w, we, "else") ||
                 word_is(w, we, "endif") || word_is(w, we, "elifdef") ||
                 word_is(w, we, "elifndef") || word_is(w, we, "error") ||
                 word_is(w, we, "warning"))) {
      return fail(c, KS_REPLY_HOST_CODE, "line %u: directive #%s is not allowed", line,
                  quote_ident(c, w, we));
    }
    p = next;
  }
  return KS_REPLY_OK;
}

/* ---- calls -------------------------------------------------------------- */

/* Host or C library functions a variant has no use for; called, they are
 * host code (or do not compile) and some would act outside the kernel.
 * Names a device helper could plausibly have (read, write, clock, time)
 * are left to the compiler. */
static const char *const host_calls[] = {
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "system",
    "popen", "fork", "execl", "execlp", "execv", "execve", "execvp", "fopen", "freopen",
    "fdopen", "fclose", "fread", "fwrite", "fputs", "fgets", "fscanf", "scanf", "sprintf",
    "snprintf", "fprintf", "puts", "putchar", "getenv", "setenv", "unlink", "socket", "exit",
    "_exit", "abort", "atexit", "dlopen", "dlsym", "mmap", "usleep", "rand", "srand"};

static bool is_launch_api(const char *w, size_t n) {
  return (n > 10 && !strncmp(w, "cudaLaunch", 10)) ||
         (n == 21 && !strncmp(w, "cudaDeviceSynchronize", 21)) ||
         (n == 22 && !strncmp(w, "cudaGetParameterBuffer", 22)) ||
         (n == 15 && !strncmp(w, "cudaGraphLaunch", 15));
}

static ks_reply_reason check_calls(checker *c) {
  const char *code = c->code;
  const char *launch = strstr(code, "<<<");
  if (launch)
    return fail(c, KS_REPLY_OUTSIDE_KERNEL,
                "line %u: a kernel launch (<<<...>>>); change the launch with the JSON block",
                line_of(code, (size_t)(launch - code)));
  for (const char *p = code; *p;) {
    if (!ks_ctext_is_ident_char(*p) || (p > code && ks_ctext_is_ident_char(p[-1]))) {
      p++;
      continue;
    }
    const char *e = p;
    while (ks_ctext_is_ident_char(*e))
      e++;
    size_t n = (size_t)(e - p);
    const char *after = e;
    while (isspace((unsigned char)*after))
      after++;
    unsigned line = line_of(code, (size_t)(p - code));
    if (word_is(p, e, "printf"))
      return fail(c, KS_REPLY_HOST_CODE, "line %u: printf (no printing from a variant)", line);
    if (word_is(p, e, "__managed__"))
      return fail(c, KS_REPLY_OUTSIDE_KERNEL,
                  "line %u: a __managed__ variable (state outside the kernel's arguments)", line);
    if (*after == '(' && is_launch_api(p, n))
      return fail(c, KS_REPLY_OUTSIDE_KERNEL, "line %u: calls %s (launches from a variant are not "
                  "allowed)", line, quote_ident(c, p, e));
    if (*after == '(' && n > 4 && !strncmp(p, "cuda", 4) && isupper((unsigned char)p[4]))
      return fail(c, KS_REPLY_HOST_CODE, "line %u: calls %s (a CUDA runtime host API)", line,
                  quote_ident(c, p, e));
    if (*after == '(')
      for (size_t i = 0; i < sizeof host_calls / sizeof *host_calls; i++)
        if (word_is(p, e, host_calls[i]))
          return fail(c, KS_REPLY_HOST_CODE, "line %u: calls %s (a host or C library function)",
                      line, host_calls[i]);
    p = e;
  }
  return KS_REPLY_OK;
}

/* ---- top-level declarations --------------------------------------------- */

/* ---- the signature ------------------------------------------------------ */

static bool guard_present(const ks_strings *g, const char *text) {
  for (size_t i = 0; i < g->len; i++)
    if (lt_same_tokens(g->items[i], g->items[i] + strlen(g->items[i]), text, text + strlen(text),
                       false))
      return true;
  return false;
}

static ks_reply_reason check_signature(checker *c, const ks_variant *parent, ks_strings *guards) {
  const char *code = c->code;
  lt_kernel ks[8];
  size_t n = lt_find_kernels(code, ks, 8);
  if (n == 0)
    return fail(c, KS_REPLY_SIGNATURE_CHANGED, "no __global__ function (the kernel %s must stay)",
                parent->kernel_name);
  if (n > 1)
    return fail(c, KS_REPLY_SIGNATURE_CHANGED,
                "%zu __global__ functions; exactly one (%s) is allowed", n, parent->kernel_name);
  lt_kernel k = ks[0];
  if (!k.params_close)
    return fail(c, KS_REPLY_SIGNATURE_CHANGED, "line %u: __global__ without a parameter list",
                line_of(code, k.global_at));
  const char *want = parent->kernel_name;
  size_t wlen = strlen(want), nlen = k.name_end - k.name_begin;
  const char *name = code + k.name_begin;
  bool renamed = false;
  if (nlen != wlen || strncmp(name, want, wlen)) {
    /* The original's name: the parent's without the suffix the tool adds. */
    static const char suffix[] = "_ks_variant";
    size_t base = wlen > sizeof suffix - 1 && !strcmp(want + wlen - (sizeof suffix - 1), suffix)
                      ? wlen - (sizeof suffix - 1) : 0;
    if (!base || nlen != base || strncmp(name, want, base))
      return fail(c, KS_REPLY_SIGNATURE_CHANGED, "the kernel is named %s, not %s",
                  quote_ident(c, name, name + nlen), want);
    renamed = true;
  }
  const char *pcode = lt_blank(c->arena, parent->source ? parent->source : "", true);
  lt_kernel pk;
  if (lt_find_kernel(pcode, want, &pk)) {
    if (!lt_same_tokens(code + k.params_open, code + k.params_close + 1, pcode + pk.params_open,
                        pcode + pk.params_close + 1, true))
      return fail(c, KS_REPLY_SIGNATURE_CHANGED, "parameter list %s differs from the parent's %s",
                  lt_quote(c->arena, c->src + k.params_open, k.params_close + 1 - k.params_open, 36),
                  lt_quote(c->arena, pcode + pk.params_open, pk.params_close + 1 - pk.params_open, 36));
    bool kt = k.tparams_close != 0, pt = pk.tparams_close != 0;
    if (kt != pt || (kt && !lt_same_tokens(code + k.tparams_open, code + k.tparams_close + 1,
                                           pcode + pk.tparams_open, pcode + pk.tparams_close + 1,
                                           false)))
      return fail(c, KS_REPLY_SIGNATURE_CHANGED, "the template header differs from the parent's");
    /* __restrict__ is a promise about aliasing the judge cannot see: a
     * pointer that newly has it gets disjoint() guards. */
    lt_params cp = {0}, pp = {0};
    lt_read_params(c->arena, code + k.params_open, code + k.params_close, &cp);
    lt_read_params(c->arena, pcode + pk.params_open, pcode + pk.params_close, &pp);
    for (size_t i = 0; i < cp.len && i < pp.len; i++) {
      if (!cp.items[i].pointer || !cp.items[i].restricted || pp.items[i].restricted)
        continue;
      for (size_t j = 0; j < cp.len; j++) {
        if (j == i || !cp.items[j].pointer || !*cp.items[j].name)
          continue;
        size_t a = i < j ? i : j, b = i < j ? j : i;
        const char *g = ks_arena_printf(c->arena, "disjoint(%s, %s)", cp.items[a].name,
                                        cp.items[b].name);
        const char *rev = ks_arena_printf(c->arena, "disjoint(%s, %s)", cp.items[b].name,
                                          cp.items[a].name);
        if (!guard_present(guards, g) && !guard_present(guards, rev))
          *ks_array_push(c->arena, guards) = g;
      }
    }
  }
  if (renamed)
    c->src = ks_arena_printf(c->arena, "%.*s%s%s", (int)k.name_begin, c->src, want,
                             c->src + k.name_end);
  return KS_REPLY_OK;
}

ks_reply_reason lt_check_child(ks_arena *arena, const char **source, const ks_variant *parent,
                               ks_strings *guards, const char **message) {
  checker c = {.arena = arena, .src = *source, .message = message};
  c.lexed = lt_blank(arena, c.src, false);
  c.code = lt_blank(arena, c.src, true);
  ks_reply_reason r = check_directives(&c, parent);
  if (r == KS_REPLY_OK)
    r = check_calls(&c);
  /* Declarations (host functions, state kept between launches) by the
   * compile service's own candidate rules, so that an accepted child is
   * never refused there. */
  if (r == KS_REPLY_OK) {
    ks_candidate_rule rule;
    const char *why = ks_candidate_check_rule(arena, c.src, &rule);
    if (why)
      r = fail(&c,
               rule == KS_CANDIDATE_STATE       ? KS_REPLY_OUTSIDE_KERNEL
               : rule == KS_CANDIDATE_MALFORMED ? KS_REPLY_MALFORMED
                                                : KS_REPLY_HOST_CODE,
               "%s", lt_quote(arena, why, strlen(why), 100));
  }
  if (r == KS_REPLY_OK)
    r = check_signature(&c, parent, guards);
  if (r == KS_REPLY_OK)
    *source = c.src;
  return r;
}
