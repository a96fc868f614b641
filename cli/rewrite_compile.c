/* rewrite --check-compile (rewrite_compile.h). */
#include "rewrite_compile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_variant_file.h"

/* The file's first bytes start the line each_rule writes for a rule that
 * does not apply. */
static bool holds_variant(const char *path, bool *exists) {
  FILE *f = fopen(path, "r");
  *exists = f != NULL;
  if (!f)
    return false;
  char head[16] = {0};
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  return n && strncmp(head, "rewrite: ", 9) != 0;
}

static int write_line(ks_ctx *ctx, const char *path, const char *line) {
  FILE *f = fopen(path, "w");
  if (!f)
    return ks_fail(ctx, "%s: %s", path, strerror(errno));
  fprintf(f, "%s\n", line);
  if (fclose(f))
    return ks_fail(ctx, "%s: %s", path, strerror(errno));
  return 0;
}

/* The first line of a reason: one result, one line. */
static const char *one_line(ks_arena *arena, const char *s) {
  if (!s || !*s)
    return "(no reason given)";
  size_t n = strcspn(s, "\n");
  return ks_arena_strndup(arena, s, n);
}

int ks_rewrite_check_compile(ks_ctx *ctx, const ks_target *t, bool is_template, const char *kernel,
                             const char *dir, ks_arena *arena) {
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  ks_compile_unit *units = ks_arena_alloc(arena, (nrules + 1) * sizeof *units);
  const char **names = ks_arena_alloc(arena, (nrules + 1) * sizeof *names);
  const char **exprs = ks_arena_alloc(arena, (nrules + 1) * sizeof *exprs);
  size_t n = 0;
  /* The kernel as it is: a variant that does not compile where its
   * original does not either says nothing about the rule. */
  ks_variant seed;
  bool seed_template = is_template;
  if (ks_rules_seed(ctx, t, arena, &seed, &seed_template))
    return -1;
  names[n] = "original";
  exprs[n] = ks_variant_name_expression(arena, &seed, seed_template, t->subject.name_expression);
  units[n] = (ks_compile_unit){.name = ks_arena_printf(arena, "%s.original.cu", kernel),
                               .source = ks_rules_unit(arena, t, &seed, NULL),
                               .name_expressions = &exprs[n],
                               .nnames = 1,
                               .candidate = seed.source,
                               .extra_options = t->subject.options,
                               .nextra = t->subject.noptions};
  n++;
  for (size_t i = 0; i < nrules; i++) {
    const char *path = ks_arena_printf(arena, "%s/%s.%s.cu.txt", dir, kernel, rules[i]->name);
    bool exists;
    if (!holds_variant(path, &exists))
      continue;
    ks_variant v;
    bool tmpl = false;
    if (ks_variant_load(ctx, path, t->kernel->name, arena, &v, &tmpl)) {
      const char *out = ks_arena_printf(arena, "%s/%s.%s.compile.txt", dir, kernel, rules[i]->name);
      if (write_line(ctx, out, ks_arena_printf(arena, "failed: the variant file does not read back: %s",
                                               one_line(arena, ctx->error))))
        return -1;
      continue;
    }
    names[n] = rules[i]->name;
    exprs[n] = ks_variant_name_expression(arena, &v, tmpl, t->subject.name_expression);
    units[n] = (ks_compile_unit){.name = ks_arena_printf(arena, "%s.%s.cu", kernel, rules[i]->name),
                                 .source = ks_rules_unit(arena, t, &v, NULL),
                                 .name_expressions = &exprs[n],
                                 .nnames = 1,
                                 .candidate = v.source,
                                 .extra_options = t->subject.options,
                                 .nextra = t->subject.noptions};
    n++;
  }
  ks_compiler compiler;
  if (ks_compiler_init(ctx, &compiler, "sm_90", NULL))
    return -1;
  ks_compile_result *res = ks_arena_alloc(arena, n * sizeof *res);
  int rc = ks_compile(ctx, &compiler, units, n, arena, res);
  ks_compiler_release(&compiler);
  if (rc)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const char *out = ks_arena_printf(arena, "%s/%s.%s.compile.txt", dir, kernel, names[i]);
    const char *line = res[i].status == KS_COMPILE_OK ? "ok"
                       : res[i].status == KS_COMPILE_REFUSED
                           ? ks_arena_printf(arena, "refused: %s", one_line(arena, res[i].reason))
                           : ks_arena_printf(arena, "failed: %s", one_line(arena, res[i].reason));
    if (write_line(ctx, out, line))
      return -1;
  }
  return 0;
}
