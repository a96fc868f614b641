/* profile: the injection library's JSON lines added up per kernel, names
 * demangled and mapped to the scan's kernels, the aggregate as JSON and as a
 * table. See ks_profile.h; the formats are in docs/profile-format.md and
 * docs/profile.md. */
#include "ks_profile.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <libiberty/demangle.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_fs.h"

/* Counting distinct configurations stops here: a kernel whose grid follows
 * its data would otherwise keep one entry per launch. */
enum { MAX_TRACKED_CONFIGS = 64 };

void ks_profile_init(ks_profile *p) {
  memset(p, 0, sizeof *p);
  p->exit_status = -1;
}

void ks_profile_release(ks_profile *p) {
  ks_arena_release(&p->arena);
  ks_profile_init(p);
}

/* ---- adding up the lines ------------------------------------------------- */

typedef struct cfg_sum {
  unsigned grid[3], block[3];
  unsigned long long smem, launches, total_ns;
} cfg_sum;

typedef struct kernel_sum {
  const char *mangled;
  unsigned long long launches, untimed, total_ns, min_ns, max_ns, smem_static, other;
  unsigned long long back_to_back; /* launches recorded right after one of its own */
  /* sampling: each process's last "count" line, added up in finish() */
  KS_ARRAY(struct { long long pid; unsigned long long n; }) counts;
  KS_ARRAY(cfg_sum) cfgs;
} kernel_sum;

/* Kernels by mangled name: open addressing over indices into `sums`. */
typedef struct sums {
  ks_arena *arena;
  KS_ARRAY(kernel_sum) items;
  size_t *slots; /* index + 1; 0 is empty */
  size_t nslots;
  size_t last; /* index + 1 of the kernel of the previous kernel line; 0: none */
} sums;

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static kernel_sum *sum_for(sums *s, const char *name) {
  if (2 * (s->items.len + 1) > s->nslots) {
    size_t n = s->nslots ? 2 * s->nslots : 64;
    size_t *slots = ks_xcalloc(n, sizeof *slots);
    for (size_t i = 0; i < s->items.len; i++) {
      size_t j = hash_name(s->items.items[i].mangled) & (n - 1);
      while (slots[j])
        j = (j + 1) & (n - 1);
      slots[j] = i + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
  }
  size_t j = hash_name(name) & (s->nslots - 1);
  while (s->slots[j]) {
    kernel_sum *k = &s->items.items[s->slots[j] - 1];
    if (!strcmp(k->mangled, name))
      return k;
    j = (j + 1) & (s->nslots - 1);
  }
  kernel_sum *k = ks_array_push(s->arena, &s->items);
  k->mangled = ks_arena_strdup(s->arena, name);
  k->min_ns = UINT64_MAX;
  s->slots[j] = s->items.len;
  return k;
}

/* The digits of `"key": N` in the line as written. cJSON keeps numbers as
 * doubles, which cannot hold CUPTI's nanosecond timestamps exactly (2^53 ns
 * is 104 days; timestamps count from 1970), and a kernel of a few
 * microseconds would lose its duration to rounding. */
static bool raw_u64(const char *line, const char *key, unsigned long long *out) {
  char quoted[40];
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char *p = strstr(line, quoted);
  if (!p)
    return false;
  p += strlen(quoted);
  while (isspace((unsigned char)*p))
    p++;
  if (*p++ != ':')
    return false;
  while (isspace((unsigned char)*p))
    p++;
  if (!isdigit((unsigned char)*p))
    return false;
  errno = 0;
  char *end;
  *out = strtoull(p, &end, 10);
  return !errno && (*end == ',' || *end == '}' || isspace((unsigned char)*end));
}

static bool u64_field(const cJSON *o, const char *key, unsigned long long *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) {
    *out = 0;
    return true;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < 0)
    return false;
  *out = (unsigned long long)v->valuedouble;
  return true;
}

static bool dims_field(const cJSON *o, const char *key, unsigned out[3]) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
    return false;
  for (int i = 0; i < 3; i++) {
    const cJSON *d = cJSON_GetArrayItem(v, i);
    if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 4294967295.0)
      return false;
    out[i] = (unsigned)d->valuedouble;
  }
  return true;
}

static void add_config(kernel_sum *k, ks_arena *a, const unsigned grid[3], const unsigned block[3],
                       unsigned long long smem, unsigned long long ns) {
  for (size_t i = 0; i < k->cfgs.len; i++) {
    cfg_sum *c = &k->cfgs.items[i];
    if (!memcmp(c->grid, grid, sizeof c->grid) && !memcmp(c->block, block, sizeof c->block) &&
        c->smem == smem) {
      c->launches++;
      c->total_ns += ns;
      return;
    }
  }
  if (k->cfgs.len == MAX_TRACKED_CONFIGS) {
    k->other++;
    return;
  }
  cfg_sum *c = ks_array_push(a, &k->cfgs);
  memcpy(c->grid, grid, sizeof c->grid);
  memcpy(c->block, block, sizeof c->block);
  c->smem = smem;
  c->launches = 1;
  c->total_ns = ns;
}

typedef struct line_state {
  unsigned starts, ends;
} line_state;

/* One parsed line; a message (without the position) on a bad one. */
static const char *take_line(ks_profile *p, sums *s, line_state *st, const cJSON *o,
                             const char *text) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(type))
    return "a line without a \"type\"";
  const char *t = type->valuestring;
  if (!strcmp(t, "kernel")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    unsigned grid[3], block[3];
    unsigned long long start, end, smem_static, smem_dynamic;
    if (!cJSON_IsString(name) || !*name->valuestring)
      return "a kernel line without a \"name\"";
    if (!raw_u64(text, "start_ns", &start) || !raw_u64(text, "end_ns", &end))
      return "a kernel line without whole numbers \"start_ns\" and \"end_ns\"";
    if (!dims_field(o, "grid", grid) || !dims_field(o, "block", block))
      return "a kernel line without \"grid\" and \"block\" as three numbers each";
    if (!u64_field(o, "smem_static", &smem_static) || !u64_field(o, "smem_dynamic", &smem_dynamic))
      return "a kernel line with a shared memory size that is not a number";
    unsigned long long ns = end > start ? end - start : 0;
    kernel_sum *k = sum_for(s, name->valuestring);
    k->launches++;
    size_t index = (size_t)(k - s->items.items) + 1;
    if (s->last == index)
      k->back_to_back++;
    s->last = index;
    k->smem_static = smem_static > k->smem_static ? smem_static : k->smem_static;
    if (!start && !end) { /* CUPTI could not time it */
      k->untimed++;
      add_config(k, s->arena, grid, block, smem_dynamic, 0);
      return NULL;
    }
    k->total_ns += ns;
    k->min_ns = ns < k->min_ns ? ns : k->min_ns;
    k->max_ns = ns > k->max_ns ? ns : k->max_ns;
    add_config(k, s->arena, grid, block, smem_dynamic, ns);
  } else if (!strcmp(t, "start")) {
    unsigned long long version;
    if (!u64_field(o, "version", &version) || version != KS_PROFILE_LINES_VERSION)
      return "a start line of another format version than 1 (a newer injection library?)";
    st->starts++;
  } else if (!strcmp(t, "dropped")) {
    unsigned long long n;
    if (!u64_field(o, "records", &n))
      return "a dropped line whose \"records\" is not a number";
    p->dropped += n;
  } else if (!strcmp(t, "end")) {
    st->ends++;
  } else if (!strcmp(t, "sample")) {
    unsigned long long percent;
    if (!u64_field(o, "percent", &percent) || !percent || percent > 100)
      return "a sample line whose \"percent\" is not from 1 to 100";
    p->sample_percent = (unsigned)percent;
    unsigned long long after;
    if (u64_field(o, "after_ms", &after))
      p->sample_after_ms = (unsigned)after;
  } else if (!strcmp(t, "count")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(o, "pid");
    unsigned long long n;
    if (!cJSON_IsString(name) || !*name->valuestring || !u64_field(o, "launches", &n) ||
        !cJSON_IsNumber(pid))
      return "a count line without a \"pid\", a \"name\" and a number of \"launches\"";
    /* Each process writes its counts so far now and then: its last line
     * (the largest) holds them all. */
    kernel_sum *k = sum_for(s, name->valuestring);
    size_t i = 0;
    while (i < k->counts.len && k->counts.items[i].pid != (long long)pid->valuedouble)
      i++;
    if (i == k->counts.len) {
      ks_array_push(s->arena, &k->counts);
      k->counts.items[i].pid = (long long)pid->valuedouble;
      k->counts.items[i].n = 0;
    }
    if (n > k->counts.items[i].n)
      k->counts.items[i].n = n;
  }
  /* Other types: a later version's additions, which this reader skips. */
  return NULL;
}

static int cmp_cfg(const void *a, const void *b) {
  const ks_profile_config *x = a, *y = b;
  if (x->launches != y->launches)
    return x->launches > y->launches ? -1 : 1;
  if (x->total_ms != y->total_ms)
    return x->total_ms > y->total_ms ? -1 : 1;
  return memcmp(x->grid, y->grid, sizeof x->grid);
}

static int cmp_kernel(const void *a, const void *b) {
  const ks_profile_kernel *x = a, *y = b;
  if (x->total_ms != y->total_ms)
    return x->total_ms > y->total_ms ? -1 : 1;
  return strcmp(x->mangled, y->mangled);
}

/* A kernel's launches and its total GPU time in ns: as recorded, or, where
 * sampling counted more launches than CUPTI timed, the timed launches' mean
 * times them all. */
static unsigned long long launches_of(const kernel_sum *k, double *total_ns) {
  unsigned long long counted = 0, timed = k->launches - k->untimed;
  for (size_t i = 0; i < k->counts.len; i++)
    counted += k->counts.items[i].n;
  unsigned long long all = counted > k->launches ? counted : k->launches;
  *total_ns = (double)k->total_ns;
  if (all > k->launches && timed)
    *total_ns = (double)k->total_ns / (double)timed * (double)(all - k->untimed);
  return all;
}

static void finish(ks_profile *p, const sums *s) {
  double all_ns = 0, est;
  for (size_t i = 0; i < s->items.len; i++) {
    launches_of(&s->items.items[i], &est);
    all_ns += est;
  }
  p->total_ms = all_ns / 1e6;
  for (size_t i = 0; i < s->items.len; i++) {
    const kernel_sum *k = &s->items.items[i];
    ks_profile_kernel *out = ks_array_push(&p->arena, &p->kernels);
    out->mangled = k->mangled;
    const char *d = ks_profile_demangle(&p->arena, k->mangled);
    out->demangled = d ? d : k->mangled;
    unsigned long long timed = k->launches - k->untimed;
    out->launches = launches_of(k, &est);
    out->sampled_launches = out->launches > k->launches ? k->launches : 0;
    /* counted but never timed: no time to estimate from */
    out->untimed = timed ? k->untimed : out->launches;
    out->total_ms = est / 1e6;
    out->mean_ms = timed ? (double)k->total_ns / 1e6 / (double)timed : 0;
    out->min_ms = timed ? (double)k->min_ns / 1e6 : 0;
    out->max_ms = (double)k->max_ns / 1e6;
    out->share = all_ns > 0 ? est / all_ns : 0;
    out->smem_static = k->smem_static;
    out->distinct_configs = (unsigned)k->cfgs.len;
    out->other_launches = k->other;
    out->back_to_back = k->back_to_back;
    ks_profile_configs all = {0};
    for (size_t c = 0; c < k->cfgs.len; c++) {
      const cfg_sum *cs = &k->cfgs.items[c];
      ks_profile_config *pc = ks_array_push(&p->arena, &all);
      memcpy(pc->grid, cs->grid, sizeof pc->grid);
      memcpy(pc->block, cs->block, sizeof pc->block);
      pc->smem_dynamic = cs->smem;
      pc->launches = cs->launches;
      pc->total_ms = (double)cs->total_ns / 1e6;
    }
    if (all.len)
      qsort(all.items, all.len, sizeof *all.items, cmp_cfg);
    for (size_t c = 0; c < all.len; c++) {
      if (c < KS_PROFILE_CONFIGS)
        *ks_array_push(&p->arena, &out->configs) = all.items[c];
      else
        out->other_launches += all.items[c].launches;
    }
    p->launches += out->launches;
  }
  if (p->kernels.len)
    qsort(p->kernels.items, p->kernels.len, sizeof *p->kernels.items, cmp_kernel);
}

int ks_profile_read_lines(ks_ctx *ctx, const char *path, ks_profile *out) {
  ks_profile_init(out);
  FILE *f = fopen(path, "r");
  if (!f)
    return ks_fail(ctx, "%s: %s", path, strerror(errno));
  sums s = {.arena = &out->arena};
  line_state st = {0};
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  unsigned lineno = 0;
  int rc = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    lineno++;
    bool whole = line[n - 1] == '\n';
    if (whole)
      line[--n] = 0;
    const char *p = line;
    while (isspace((unsigned char)*p))
      p++;
    if (!*p)
      continue;
    cJSON *o = cJSON_ParseWithLength(line, (size_t)n);
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      /* Only the very last line may lack its newline: a process killed
       * while writing it. */
      if (!whole && getc(f) == EOF) {
        out->truncated_lines++;
        break;
      }
      rc = ks_fail(ctx, "%s:%u: not a JSON object: %.60s%s", path, lineno, p,
                   strlen(p) > 60 ? "..." : "");
      break;
    }
    const char *bad = take_line(out, &s, &st, o, line);
    cJSON_Delete(o);
    if (bad) {
      rc = ks_fail(ctx, "%s:%u: %s", path, lineno, bad);
      break;
    }
  }
  if (!rc && ferror(f))
    rc = ks_fail(ctx, "%s: %s", path, strerror(errno));
  free(line);
  fclose(f);
  if (!rc) {
    out->processes = st.starts;
    out->ended_normally = st.ends > 0 && st.ends >= st.starts;
    finish(out, &s);
  }
  free(s.slots);
  if (rc)
    ks_profile_release(out);
  return rc;
}

const char *ks_profile_demangle(ks_arena *a, const char *mangled) {
  /* Only "_Z" names: with DMGL_TYPES the demangler would also read a plain
   * extern "C" name such as "i" as a type. */
  if (strncmp(mangled, "_Z", 2))
    return NULL;
  char *d = cplus_demangle(mangled, DMGL_PARAMS | DMGL_ANSI | DMGL_TYPES);
  if (!d)
    return NULL;
  const char *copy = ks_arena_strdup(a, d);
  free(d);
  return copy;
}

/* ---- mapping names to the scan ------------------------------------------ */

/* A demangled function name taken apart: "void ns::k<float, 4>(float*, int)"
 * is base "ns::k", targs {float, 4}, params {float*, int}. */
typedef struct cxx_name {
  const char *base;
  ks_strings targs, params;
  bool has_targs, has_params;
} cxx_name;

static int bracket_delta(char c) {
  return c == '(' || c == '<' || c == '[' ? 1 : c == ')' || c == '>' || c == ']' ? -1 : 0;
}

/* [p, end) split at commas outside (), <> and []; pieces trimmed. */
static void split_top(ks_arena *a, const char *p, const char *end, ks_strings *out) {
  const char *start = p;
  int depth = 0;
  for (; p < end; p++) {
    depth += bracket_delta(*p);
    if (*p == ',' && depth == 0) {
      *ks_array_push(a, out) = ks_ctext_trim(a, start, p);
      start = p + 1;
    }
  }
  const char *last = ks_ctext_trim(a, start, end);
  if (*last || out->len)
    *ks_array_push(a, out) = last;
}

/* The bracket opening the one closing at end[-1], scanning backwards. */
static const char *opening(const char *begin, const char *end, char open, char close) {
  int depth = 0;
  for (const char *p = end - 1; p >= begin; p--) {
    depth += *p == close ? 1 : *p == open ? -1 : 0;
    if (!depth)
      return p;
  }
  return NULL;
}

static void parse_cxx_name(ks_arena *a, const char *d, cxx_name *out) {
  memset(out, 0, sizeof *out);
  const char *end = d + strlen(d);
  if (end > d && end[-1] == ')') {
    const char *open = opening(d, end, '(', ')');
    if (open && open > d) {
      out->has_params = true;
      split_top(a, open + 1, end - 1, &out->params);
      end = open;
    }
  }
  /* A template's return type comes first, up to the last space outside
   * brackets ("(anonymous namespace)" holds one inside). */
  const char *name = d;
  int depth = 0;
  for (const char *p = d; p < end; p++) {
    depth += bracket_delta(*p);
    if (*p == ' ' && depth == 0)
      name = p + 1;
  }
  while (end > name && end[-1] == ' ')
    end--;
  if (end > name && end[-1] == '>') {
    const char *open = opening(name, end, '<', '>');
    if (open && open > name) {
      out->has_targs = true;
      split_top(a, open + 1, end - 1, &out->targs);
      end = open;
    }
  }
  out->base = ks_ctext_trim(a, name, end);
}

/* Typedefs a demangled name has already resolved, as the usual 64-bit Linux
 * ABI defines them. */
static const char *const typedefs[][2] = {
    {"size_t", "unsigned long"},   {"ptrdiff_t", "long"},         {"ssize_t", "long"},
    {"int64_t", "long"},           {"uint64_t", "unsigned long"}, {"int32_t", "int"},
    {"uint32_t", "unsigned int"},  {"int16_t", "short"},          {"uint16_t", "unsigned short"},
    {"int8_t", "signed char"},     {"uint8_t", "unsigned char"},  {"intptr_t", "long"},
    {"uintptr_t", "unsigned long"}, {"uint", "unsigned int"},     {"half", "__half"},
};

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One declarator level's words as one canonical string: "const float" and
 * "float const" agree, "unsigned" is "unsigned int", "long int" is "long". */
static void flush_words(ks_buf *out, const char **words, size_t n, bool keep_cv) {
  const char *kept[32];
  size_t m = 0;
  bool is_const = false, is_volatile = false, has_char = false, had_int = false;
  for (size_t i = 0; i < n; i++)
    has_char |= !strcmp(words[i], "char");
  for (size_t i = 0; i < n && m < 32; i++) {
    const char *w = words[i];
    if (!strcmp(w, "const"))
      is_const = true;
    else if (!strcmp(w, "volatile"))
      is_volatile = true;
    else if (!strcmp(w, "int") || (!strcmp(w, "signed") && !has_char))
      had_int = true;
    else
      kept[m++] = w;
  }
  bool sized = false;
  for (size_t i = 0; i < m; i++)
    sized |= !strcmp(kept[i], "short") || !strcmp(kept[i], "long") || !strcmp(kept[i], "unsigned");
  if (had_int && !sized && m < 32)
    kept[m++] = "int";
  if (m > 1)
    qsort(kept, m, sizeof *kept, cmp_str);
  if (keep_cv && is_const)
    ks_buf_adds(out, "const ");
  if (keep_cv && is_volatile)
    ks_buf_adds(out, "volatile ");
  for (size_t i = 0; i < m; i++)
    ks_buf_addf(out, "%s%s", i ? " " : "", kept[i]);
}

/* A parameter type in a form that compares equal between what the user
 * wrote and what the demangler prints: qualifiers of the parameter itself,
 * restrict, elaborated keywords and namespaces dropped, typedefs of the
 * standard integer types resolved. */
static const char *norm_type(ks_arena *a, const char *t) {
  ks_buf out = KS_BUF_INIT;
  const char *words[32];
  size_t n = 0;
  const char *p = t;
  while (*p) {
    if (isspace((unsigned char)*p)) {
      p++;
    } else if (ks_ctext_is_ident_char(*p)) {
      const char *s = p;
      while (ks_ctext_is_ident_char(*p))
        p++;
      const char *w = ks_arena_strndup(a, s, (size_t)(p - s));
      if (p[0] == ':' && p[1] == ':') { /* a namespace or class prefix */
        p += 2;
        continue;
      }
      if (!strcmp(w, "__restrict") || !strcmp(w, "__restrict__") || !strcmp(w, "restrict") ||
          !strcmp(w, "struct") || !strcmp(w, "class") || !strcmp(w, "union") ||
          !strcmp(w, "enum") || !strcmp(w, "typename"))
        continue;
      for (size_t i = 0; i < sizeof typedefs / sizeof *typedefs; i++)
        if (!strcmp(w, typedefs[i][0])) {
          /* Split "unsigned long" into its words. */
          ks_strings parts = {0};
          const char *r = typedefs[i][1], *sp;
          while ((sp = strchr(r, ' '))) {
            *ks_array_push(a, &parts) = ks_arena_strndup(a, r, (size_t)(sp - r));
            r = sp + 1;
          }
          *ks_array_push(a, &parts) = r;
          for (size_t k = 0; k + 1 < parts.len && n < 31; k++)
            words[n++] = parts.items[k];
          w = parts.items[parts.len - 1];
          break;
        }
      if (n < 32)
        words[n++] = w;
    } else if (*p == '<') { /* a template type's arguments, compared as text */
      const char *close = ks_ctext_matching(p, p + strlen(p));
      const char *e = close ? close + 1 : p + strlen(p);
      ks_buf g = KS_BUF_INIT;
      for (const char *q = p; q < e; q++)
        if (!isspace((unsigned char)*q))
          ks_buf_addc(&g, *q);
      if (n)
        words[n - 1] = ks_arena_printf(a, "%s%s", words[n - 1], g.data);
      ks_buf_release(&g);
      p = e;
    } else {
      flush_words(&out, words, n, true);
      n = 0;
      ks_buf_addc(&out, *p++);
    }
  }
  /* The last level is the parameter's own: its const does not belong to
   * the function's type. */
  flush_words(&out, words, n, false);
  const char *r = ks_arena_strdup(a, out.data);
  ks_buf_release(&out);
  return r;
}

/* A template argument as text that compares: "(char)65" and "65u" are 65. */
static const char *norm_targ(ks_arena *a, const char *v) {
  if (*v == '(') {
    const char *close = strchr(v, ')');
    if (close && (isdigit((unsigned char)close[1]) || close[1] == '-'))
      v = close + 1;
  }
  const char *s = v;
  if (*s == '-')
    s++;
  if (isdigit((unsigned char)*s)) {
    const char *e = s;
    while (isalnum((unsigned char)*e))
      e++;
    /* The integer suffixes: u, l, ul, ll. */
    while (e > s && strchr("uUlL", e[-1]))
      e--;
    return ks_arena_strndup(a, v, (size_t)(e - v));
  }
  return norm_type(a, v);
}

static bool targs_match(ks_arena *a, const ks_template_args *scan_args, const ks_strings *demangled) {
  if (scan_args->len != demangled->len)
    return false;
  for (size_t i = 0; i < demangled->len; i++)
    if (strcmp(norm_targ(a, scan_args->items[i].value), norm_targ(a, demangled->items[i])))
      return false;
  return true;
}

/* How well scan kernel `k` fits the demangled name; the best one wins. */
static int fit(ks_arena *a, const ks_kernel *k, const cxx_name *n) {
  int score = 0;
  if (n->has_targs == k->is_template)
    score += 20;
  if (!n->has_params) /* extern "C": only the name is known */
    return score + (k->is_extern_c ? 20 : 0);
  if (n->params.len != k->params.len)
    return score;
  score += 10;
  /* The template's parameters as this instantiation has them. */
  const char *names[64], *values[64];
  size_t nt = 0;
  for (size_t i = 0; n->has_targs && i < k->tparams.len && i < n->targs.len && nt < 64; i++)
    if (k->tparams.items[i].kind == KS_TPARAM_TYPE && !k->tparams.items[i].is_pack) {
      names[nt] = k->tparams.items[i].name;
      values[nt++] = n->targs.items[i];
    }
  bool all = true;
  for (size_t i = 0; i < n->params.len; i++) {
    const char *t = k->params.items[i].type;
    if (nt)
      t = ks_ctext_substitute(a, t, names, values, nt);
    bool same = !strcmp(norm_type(a, t), norm_type(a, n->params.items[i]));
    score += same ? 10 : 0;
    all &= same;
  }
  if (all)
    score += 100;
  for (size_t i = 0; n->has_targs && i < k->instantiations.len; i++)
    if (targs_match(a, &k->instantiations.items[i], &n->targs)) {
      score += 50;
      break;
    }
  return score;
}

/* nvcc names an anonymous namespace after its file ("_GLOBAL__N__<hash>_6_hot_cu_<hash>"):
 * that tells apart kernels of one name in the anonymous namespaces of two
 * files, which demangle alike. */
static int anonymous_in_file(ks_arena *a, const char *mangled, const ks_kernel *k) {
  const char *anon = strstr(mangled, "_GLOBAL__N_");
  if (!anon || !k->loc.file)
    return 0;
  const char *slash = strrchr(k->loc.file, '/');
  char *base = ks_arena_printf(a, "_%s_", slash ? slash + 1 : k->loc.file);
  for (char *c = base; *c; c++)
    if (!ks_ctext_is_ident_char(*c))
      *c = '_';
  return strstr(anon, base) ? 5 : 0;
}

const char *ks_profile_base_name(ks_arena *a, const char *demangled) {
  cxx_name n;
  parse_cxx_name(a, demangled, &n);
  return !strncmp(n.base, "::", 2) ? n.base + 2 : n.base;
}

long ks_profile_match(ks_arena *a, const char *mangled, const char *demangled,
                      const ks_kernels *kernels, const char **targs) {
  cxx_name n;
  if (!demangled)
    demangled = ks_profile_demangle(a, mangled);
  parse_cxx_name(a, demangled ? demangled : mangled, &n);
  const char *base = !strncmp(n.base, "::", 2) ? n.base + 2 : n.base;
  int best = -1;
  size_t which = 0;
  for (size_t k = 0; k < kernels->len; k++) {
    const ks_kernel *sk = &kernels->items[k];
    if (!sk->qualified_name || strcmp(sk->qualified_name, base))
      continue;
    int score = fit(a, sk, &n) + anonymous_in_file(a, mangled, sk);
    if (score > best) {
      best = score;
      which = k;
    }
  }
  if (targs) {
    *targs = NULL;
    if (n.has_targs) {
      ks_buf b = KS_BUF_INIT;
      for (size_t i = 0; i < n.targs.len; i++)
        ks_buf_addf(&b, "%s%s", i ? ", " : "", n.targs.items[i]);
      *targs = ks_arena_strdup(a, b.data);
      ks_buf_release(&b);
    }
  }
  return best < 0 ? -1 : (long)which;
}

size_t ks_profile_map(ks_profile *p, const ks_kernels *kernels) {
  ks_arena tmp = KS_ARENA_INIT;
  /* One source per scan kernel, shared by the names mapped to it. */
  ks_profile_source **made = ks_arena_alloc(&tmp, (kernels->len + 1) * sizeof *made);
  size_t mapped = 0;
  for (size_t i = 0; i < p->kernels.len; i++) {
    ks_profile_kernel *pk = &p->kernels.items[i];
    long which = ks_profile_match(&tmp, pk->mangled, pk->demangled, kernels, NULL);
    pk->source = NULL;
    if (which < 0)
      continue;
    if (!made[which]) {
      const ks_kernel *sk = &kernels->items[which];
      ks_profile_source *s = ks_arena_alloc(&p->arena, sizeof *s);
      s->qualified_name = ks_arena_strdup(&p->arena, sk->qualified_name);
      s->signature = ks_arena_strdup(&p->arena, sk->signature ? sk->signature : sk->qualified_name);
      s->file = sk->loc.file ? ks_arena_strdup(&p->arena, sk->loc.file) : NULL;
      s->line = sk->loc.line;
      made[which] = s;
    }
    pk->source = made[which];
    mapped++;
  }
  ks_arena_release(&tmp);
  return mapped;
}

/* ---- the table ------------------------------------------------------------ */

/* The name as a reader wants it in a column: no return type, and the
 * parameters folded to "(...)" when the whole does not fit. */
static const char *short_name(ks_arena *a, const char *demangled, size_t width) {
  cxx_name n;
  parse_cxx_name(a, demangled, &n);
  ks_buf b = KS_BUF_INIT;
  ks_buf_adds(&b, n.base);
  if (n.has_targs) {
    ks_buf_addc(&b, '<');
    for (size_t i = 0; i < n.targs.len; i++)
      ks_buf_addf(&b, "%s%s", i ? ", " : "", n.targs.items[i]);
    ks_buf_addc(&b, '>');
  }
  size_t name_len = b.len;
  if (n.has_params) {
    ks_buf_addc(&b, '(');
    for (size_t i = 0; i < n.params.len; i++)
      ks_buf_addf(&b, "%s%s", i ? ", " : "", n.params.items[i]);
    ks_buf_addc(&b, ')');
    if (b.len > width) {
      b.len = name_len;
      b.data[b.len] = 0;
      ks_buf_adds(&b, n.params.len ? "(...)" : "()");
    }
  }
  if (b.len > width && width > 3) {
    b.len = width - 3;
    b.data[b.len] = 0;
    ks_buf_adds(&b, "...");
  }
  const char *r = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return r;
}

void ks_profile_print(FILE *out, const ks_profile *p, const ks_profile_print_options *o) {
  enum { NAME_MAX_WIDTH = 56 };
  ks_arena a = KS_ARENA_INIT;
  size_t rows = o->max_rows && o->max_rows < p->kernels.len ? o->max_rows : p->kernels.len;
  const char **names = ks_arena_alloc(&a, (rows + 1) * sizeof *names);
  int width = 6;
  for (size_t i = 0; i < rows; i++) {
    names[i] = short_name(&a, p->kernels.items[i].demangled, NAME_MAX_WIDTH);
    width = (int)strlen(names[i]) > width ? (int)strlen(names[i]) : width;
  }
  const char *bold = o->color ? "\033[1m" : "", *plain = o->color ? "\033[0m" : "";
  fprintf(out, "%s%llu launch%s of %zu kernel%s, %.3f ms of kernel time%s\n", bold, p->launches,
          p->launches == 1 ? "" : "es", p->kernels.len, p->kernels.len == 1 ? "" : "s", p->total_ms,
          plain);
  if (rows) {
    fprintf(out, "%4s  %-*s  %9s  %11s  %10s  %6s  %s\n", "RANK", width, "KERNEL", "LAUNCHES",
            "TOTAL MS", "MEAN MS", "SHARE", "SOURCE");
    for (size_t i = 0; i < rows; i++) {
      const ks_profile_kernel *k = &p->kernels.items[i];
      const char *where = "(not in the sources)";
      if (k->source && k->source->file) {
        const char *f = k->source->file;
        const char *rel = o->relative_to ? ks_path_below(f, o->relative_to) : NULL;
        where = ks_arena_printf(&a, "%s:%u", rel && *rel ? rel : f, k->source->line);
      }
      fprintf(out, "%4zu  %-*s  %9llu  %11.3f  %10.4f  %5.1f%%  %s\n", i + 1, width, names[i],
              k->launches, k->total_ms, k->mean_ms, 100 * k->share, where);
    }
    if (rows < p->kernels.len)
      fprintf(out, "      ... %zu more kernel%s (all are in the JSON)\n", p->kernels.len - rows,
              p->kernels.len - rows == 1 ? "" : "s");
  }
  if (p->signal)
    fprintf(out, "note: the application did not exit normally (signal %d); the profile holds "
                 "what ran before\n", p->signal);
  else if (!p->ended_normally && p->processes)
    fprintf(out, "note: the application did not exit normally (the injection library wrote no "
                 "end line); the profile holds what ran before\n");
  if (!p->processes)
    fprintf(out, "note: the injection library never started: the application did not load "
                 "CUDA, or CUDA did not load the library\n");
  else if (!p->kernels.len)
    fprintf(out, "note: no kernel ran on the GPU\n");
  if (p->sample_percent) {
    /* Said only where it changed a number: a run shorter than the fully
     * timed start is exact. */
    size_t estimated = 0;
    for (size_t i = 0; i < p->kernels.len; i++)
      estimated += p->kernels.items[i].sampled_launches > 0;
    char after[64] = "";
    if (p->sample_after_ms)
      snprintf(after, sizeof after, " after the first %.1f s", p->sample_after_ms / 1000.0);
    if (estimated)
      fprintf(out,
              "note: sampled: every launch was counted, and kernels were timed %u%% of the "
              "time%s; for %zu kernel%s the total is the timed launches' mean times the "
              "launches (--sample 100 times every launch)\n",
              p->sample_percent, after, estimated, estimated == 1 ? "" : "s");
  }
  if (p->dropped)
    fprintf(out, "note: CUPTI dropped %llu record%s (its buffers were full): the numbers count "
                 "less than ran\n", p->dropped, p->dropped == 1 ? "" : "s");
  if (p->truncated_lines)
    fprintf(out, "note: the last line was cut off while it was written, and is left out\n");
  unsigned long long untimed = 0;
  for (size_t i = 0; i < p->kernels.len; i++)
    untimed += p->kernels.items[i].untimed;
  if (untimed)
    fprintf(out, "note: CUPTI could not time %llu launch%s; they count as launches, not as "
                 "time\n", untimed, untimed == 1 ? "" : "es");
  ks_arena_release(&a);
}
