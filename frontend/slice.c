/* A kernel as a standalone unit for NVRTC (ks_slice.h): which file to
 * re-parse, the kernel's cursor in it, the name expressions of its
 * instances; the steps themselves are in slice_*.c (see slice.h). Also the
 * lookup of a kernel by the name a user typed. */
#include <string.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "slice.h"

/* ---- lookup ---------------------------------------------------------------- */

/* `s` without whitespace, for comparing signatures as typed. */
static const char *squeeze(ks_arena *arena, const char *s) {
  char *out = ks_arena_alloc(arena, strlen(s) + 1), *w = out;
  for (; *s; s++)
    if (*s != ' ' && *s != '\t')
      *w++ = *s;
  return out;
}

static bool name_matches(const ks_kernel *k, const char *name, size_t n) {
  if (strlen(k->qualified_name) == n && !strncmp(k->qualified_name, name, n))
    return true;
  if (strlen(k->name) == n && !strncmp(k->name, name, n))
    return true;
  /* A tail of the qualified name: "detail::relu6". */
  size_t q = strlen(k->qualified_name);
  return q > n + 2 && !strncmp(k->qualified_name + q - n, name, n) &&
         !strncmp(k->qualified_name + q - n - 2, "::", 2);
}

static bool signature_matches(ks_arena *arena, const ks_kernel *k, const char *name) {
  const char *paren = strchr(name, '(');
  if (!paren || !name_matches(k, name, (size_t)(paren - name)))
    return false;
  const char *want = squeeze(arena, paren);
  const char *have = strchr(k->signature, '(');
  return have && !strcmp(want, squeeze(arena, have));
}

/* Up to 12 names (each once) or signatures. */
static void list_kernels(ks_buf *b, const ks_kernel *const *ks, size_t n, bool signatures) {
  size_t shown = 0, more = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s = signatures ? ks[i]->signature : ks[i]->qualified_name;
    bool dup = false;
    for (size_t k = 0; k < i && !dup; k++)
      dup = !strcmp(s, signatures ? ks[k]->signature : ks[k]->qualified_name);
    if (dup)
      continue;
    if (shown == 12) {
      more++;
      continue;
    }
    ks_buf_addf(b, "%s%s", shown++ ? ", " : "", s);
  }
  if (more)
    ks_buf_addf(b, " and %zu more", more);
}

/* Kernels whose names contain what was typed, or the other way round. */
static size_t similar(const ks_scan *scan, const char *name, const ks_kernel **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < scan->kernels.len && n < max; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    if (strstr(k->qualified_name, name) || strstr(name, k->name))
      out[n++] = k;
  }
  return n;
}

int ks_scan_lookup(ks_ctx *ctx, const ks_scan *scan, const char *name, const ks_kernel **out) {
  *out = NULL;
  ks_arena scratch = KS_ARENA_INIT;
  ks_buf msg = KS_BUF_INIT;
  size_t n = 0, cap = scan->kernels.len + 1;
  const ks_kernel **found = ks_arena_alloc(&scratch, cap * sizeof *found);
  bool by_signature = strchr(name, '(') != NULL;
  for (size_t i = 0; i < scan->kernels.len; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    if (by_signature ? signature_matches(&scratch, k, name) : name_matches(k, name, strlen(name)))
      found[n++] = k;
  }
  /* An exact qualified name beats tails that happen to match. */
  for (size_t i = 0; n > 1 && i < n; i++)
    if (!strcmp(found[i]->qualified_name, name)) {
      size_t exact = 0;
      for (size_t k = 0; k < n; k++)
        if (!strcmp(found[k]->qualified_name, name))
          found[exact++] = found[k];
      n = exact;
      break;
    }
  int rc = 0;
  if (n == 1) {
    *out = found[0];
  } else if (n > 1) {
    bool same = true;
    for (size_t i = 1; i < n; i++)
      same = same && !strcmp(found[i]->signature, found[0]->signature);
    if (same) {
      /* static kernels of one name in several files: only a path tells. */
      for (size_t i = 0; i < n && i < 12; i++)
        ks_buf_addf(&msg, "%s%s:%u", i ? ", " : "", found[i]->loc.file, found[i]->loc.line);
      rc = ks_fail(ctx, "'%s' names %zu kernels of the same signature, at %s; give the file "
                        "you mean as PATH",
                   name, n, msg.data);
    } else {
      list_kernels(&msg, found, n, true);
      rc = ks_fail(ctx, "'%s' names %zu kernels: %s; pass one signature, e.g. \"%s\"", name, n,
                   msg.data, found[0]->signature);
    }
  } else {
    size_t m = similar(scan, name, found, cap);
    if (m) {
      list_kernels(&msg, found, m, by_signature);
      rc = ks_fail(ctx, "no kernel '%s' in the scanned files; did you mean: %s", name, msg.data);
    } else if (scan->kernels.len) {
      for (size_t i = 0; i < scan->kernels.len; i++)
        found[i] = &scan->kernels.items[i];
      list_kernels(&msg, found, scan->kernels.len, false);
      rc = ks_fail(ctx, "no kernel '%s' in the scanned files; kernels: %s", name, msg.data);
    } else {
      rc = ks_fail(ctx, "no kernel '%s': the scanned files have no kernels", name);
    }
  }
  ks_buf_release(&msg);
  ks_arena_release(&scratch);
  return rc;
}

/* ---- which file ------------------------------------------------------------- */

static void add_unique(ks_arena *arena, ks_strings *list, const char *path) {
  for (size_t i = 0; i < list->len; i++)
    if (!strcmp(list->items[i], path))
      return;
  *ks_array_push(arena, list) = path;
}

/* Whether the text of `file` names `header` in an #include line (a cheap
 * test: the scan keeps no include graph for us). */
static bool includes_header(ks_ctx *ctx, const char *file, const char *header) {
  const char *base = strrchr(header, '/');
  base = base ? base + 1 : header;
  ks_buf text = KS_BUF_INIT;
  bool found = false;
  if (!ks_read_file(ctx, file, 64u << 20, &text))
    for (const char *p = strstr(text.data, base); p && !found; p = strstr(p + 1, base)) {
      const char *line = p;
      while (line > text.data && line[-1] != '\n')
        line--;
      while (*line == ' ' || *line == '\t')
        line++;
      found = *line == '#' && strstr(line, "include") && strstr(line, "include") < p;
    }
  ks_buf_release(&text);
  return found;
}

/* Where the kernel can be re-parsed, best first: the unit a .cu fragment
 * belongs to; its own .cu; the files of
 * its launch sites, then the scanned files that include its header (a
 * header kernel, or a .cu meant to be included, is seen there as it is
 * used, with what it needs from its includer); the header itself. */
/* The unit a .cu fragment belongs to: the scan set its own parse aside
 * (ks_scanned_file.included_by), and its includer may be a fragment too
 * (myocyte's main.cu includes work_2.cu, which includes solver_2.cu). */
static const char *root_unit(const ks_scan *scan, const char *path) {
  for (int depth = 0; path && depth < 16; depth++) {
    const char *up = NULL;
    for (size_t i = 0; i < scan->files.len && !up; i++)
      if (!strcmp(scan->files.items[i].path, path))
        up = scan->files.items[i].included_by;
    if (!up)
      return depth ? path : NULL;
    path = up;
  }
  return NULL;
}

static void candidate_files(ks_ctx *ctx, ks_arena *arena, const ks_scan *scan,
                            const ks_kernel *k, ks_strings *out) {
  const char *unit = root_unit(scan, k->loc.file);
  if (unit)
    add_unique(arena, out, unit);
  if (!k->in_header)
    add_unique(arena, out, k->loc.file);
  for (size_t i = 0; i < k->launches.len; i++) {
    const ks_launch *l = &scan->launches.items[k->launches.items[i]];
    if (l->loc.file && ks_path_has_ext(l->loc.file, ".cu"))
      add_unique(arena, out, l->loc.file);
  }
  for (size_t i = 0; i < scan->files.len; i++) {
    const char *f = scan->files.items[i].path;
    if (strcmp(f, k->loc.file) && ks_path_has_ext(f, ".cu") && includes_header(ctx, f, k->loc.file))
      add_unique(arena, out, f);
  }
  add_unique(arena, out, k->loc.file);
}

/* ---- the kernel's cursor ------------------------------------------------------ */

static bool find_kernel(ks_slicer *s) {
  for (size_t i = 0; i < s->items.len; i++) {
    const slice_item *it = &s->items.items[i];
    if (it->kind != CXCursor_FunctionDecl && it->kind != CXCursor_FunctionTemplate)
      continue;
    if (!clang_isCursorDefinition(it->cursor))
      continue;
    if (!strcmp(ks_tu_usr(&s->tu, it->cursor), s->kernel->usr)) {
      s->kernel_cursor = it->cursor;
      return true;
    }
  }
  return false;
}

/* ---- name expressions ---------------------------------------------------------- */

/* "float, 256", or NULL when an argument is unknown (a launch whose
 * arguments are deduced from a template's parameters). */
static const char *joined_args(ks_arena *arena, const ks_kernel *k, const ks_template_args *args) {
  if (!args->len)
    return NULL;
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < args->len; i++) {
    const char *value = args->items[i].value;
    if (!value || !strcmp(value, "?")) {
      ks_buf_release(&b);
      return NULL; /* not something we can write down */
    }
    /* A bool parameter's value comes as a number ("-1" for true): NVRTC
     * wants the narrowing-free spelling. */
    if (i < k->tparams.len && k->tparams.items[i].type &&
        !strcmp(k->tparams.items[i].type, "bool") && strspn(value, "-0123456789") == strlen(value))
      value = strcmp(value, "0") ? "true" : "false";
    ks_buf_addf(&b, "%s%s", i ? ", " : "", value);
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

/* The template arguments of every instance: from `instances` when given,
 * else those seen at launch sites. */
static int instance_list(ks_ctx *ctx, const ks_kernel *k, const char *instances,
                         ks_arena *arena, ks_strings *out) {
  if (instances && *instances) {
    if (!k->is_template)
      return ks_fail(ctx, "'%s' is not a template: it takes no template arguments",
                     k->qualified_name);
    const char *text = instances;
    /* "<float, 256>" and "float, 256" alike. */
    while (*text == ' ')
      text++;
    size_t n = strlen(text);
    while (n && text[n - 1] == ' ')
      n--;
    if (n >= 2 && text[0] == '<' && text[n - 1] == '>')
      text++, n -= 2;
    *ks_array_push(arena, out) = ks_arena_strndup(arena, text, n);
    return 0;
  }
  for (size_t i = 0; k->is_template && i < k->instantiations.len; i++) {
    const char *args = joined_args(arena, k, &k->instantiations.items[i]);
    if (args)
      *ks_array_push(arena, out) = args;
  }
  return 0;
}

/* A name as a name expression: names in an anonymous namespace are found
 * without it. */
static const char *expression_name(ks_arena *arena, const char *qualified) {
  static const char anon[] = "(anonymous namespace)::";
  ks_buf b = KS_BUF_INIT;
  for (const char *p = qualified; *p;) {
    if (!strncmp(p, anon, sizeof anon - 1)) {
      p += sizeof anon - 1;
      continue;
    }
    ks_buf_addc(&b, *p++);
  }
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

static void name_expressions(ks_arena *arena, const ks_kernel *k, const ks_strings *instances,
                             const char *specialization, ks_slice *out) {
  const char *name = expression_name(arena, k->qualified_name);
  if (!k->is_template) {
    /* An explicit specialization is named with its arguments. */
    *ks_array_push(arena, &out->name_expressions) =
        specialization ? ks_arena_printf(arena, "%s<%s>", name, specialization) : name;
    return;
  }
  for (size_t i = 0; i < instances->len; i++) {
    const char *args = instances->items[i];
    /* "a<b<c>>" needs no space between the brackets since C++11, but one
     * reads better and is never wrong. */
    size_t n = strlen(args);
    *ks_array_push(arena, &out->name_expressions) =
        ks_arena_printf(arena, "%s<%s%s>", name, args,
                        n && args[n - 1] == '>' ? " " : "");
  }
}

/* ---- the slice ---------------------------------------------------------------- */

static bool same_args(ks_arena *arena, const char *a, const char *b) {
  return !strcmp(squeeze(arena, a), squeeze(arena, b));
}

/* One attempt on one file: 1 when the kernel is not in its unit. With
 * `find`, the instances the unit has are added to `instances`. */
static int slice_in(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                    const ks_kernel *k, const char *path, bool find, ks_strings *instances,
                    const char **specialization, ks_arena *arena, ks_slice *out) {
  ks_arena scratch = KS_ARENA_INIT;
  slice_parse parse, host;
  ks_slicer s;
  memset(&s, 0, sizeof s);
  memset(&host, 0, sizeof host);
  int rc = ks_slice_parse(ctx, opts, scan, path, true, &scratch, &parse);
  if (rc)
    goto out;
  /* The device side is what NVRTC sees, but clang 16 refuses launches from
   * device code there (dynamic parallelism), and drops them: then the host
   * side, as the scan read it, is the better view. */
  if (parse.lost_launches) {
    rc = ks_slice_parse(ctx, opts, scan, path, false, &scratch, &host);
    if (rc)
      goto out;
    if (host.lost_launches < parse.lost_launches) {
      slice_parse swap = parse;
      parse = host;
      host = swap;
    }
  }
  s.ctx = ctx;
  s.tu.unit = parse.unit;
  s.tu.arena = &scratch;
  s.env = &parse.env;
  s.kernel = k;
  s.main_file = path;
  s.defines = &parse.defines;
  rc = ks_slice_index(&s);
  if (rc)
    goto out;
  if (!find_kernel(&s)) {
    rc = 1;
    goto out;
  }
  if (k->is_template) {
    /* Walked even when the instances are given (a launch site's text, a
     * capture): the walk is what brings their argument types into the
     * closure (norm_kernel3<__nv_bfloat16> needs <cuda_bf16.h>). */
    ks_strings found = {0};
    ks_slice_find_instances(&s, &found);
    for (size_t i = 0; find && i < found.len; i++) {
      bool known = false;
      for (size_t j = 0; j < instances->len && !known; j++)
        known = same_args(&scratch, instances->items[j], found.items[i]);
      if (!known)
        *ks_array_push(arena, instances) = ks_arena_strdup(arena, found.items[i]);
    }
  }
  rc = ks_slice_closure(&s, (const char *const *)instances->items, instances->len);
  if (!rc)
    rc = ks_slice_check_textures(&s, scan->root);
  if (rc)
    goto out;
  rc = ks_slice_emit(&s, arena, out);
  out->file = ks_arena_strdup(arena, path);
  for (size_t i = 0; i < parse.codegen.len; i++)
    *ks_array_push(arena, &out->codegen) = ks_arena_strdup(arena, parse.codegen.items[i]);
  out->compile_command = parse.compile_command;
  if (!k->is_template &&
      !clang_Cursor_isNull(clang_getSpecializedCursorTemplate(s.kernel_cursor))) {
    const char *args = ks_slice_template_args(&s, s.kernel_cursor);
    *specialization = args ? ks_arena_strdup(arena, args) : NULL;
  }
out:
  ks_slice_parse_release(&parse);
  ks_slice_parse_release(&host);
  ks_arena_release(&scratch);
  return rc;
}

int ks_slice_kernel(ks_ctx *ctx, const ks_scan_options *opts, const ks_scan *scan,
                    const ks_kernel *k, const char *instances, ks_arena *arena, ks_slice *out) {
  memset(out, 0, sizeof *out);
  ks_strings files = {0}, args = {0};
  if (instance_list(ctx, k, instances, arena, &args))
    return -1;
  bool find = k->is_template && !(instances && *instances);
  const char *specialization = NULL;
  candidate_files(ctx, arena, scan, k, &files);
  int rc = 1;
  for (size_t i = 0; i < files.len && rc == 1; i++) {
    memset(out, 0, sizeof *out);
    ks_strings tried = args; /* the instances found in a unit count for it alone */
    rc = slice_in(ctx, opts, scan, k, files.items[i], find, &tried, &specialization, arena, out);
    if (rc == 0)
      args = tried;
  }
  if (rc == 1)
    return ks_fail(ctx, "'%s' is not in the translation unit of %s any more (has the file "
                        "changed since the scan?)",
                   k->qualified_name, files.len ? files.items[0] : k->loc.file);
  if (rc)
    return -1;
  name_expressions(arena, k, &args, specialization, out);
  return 0;
}
