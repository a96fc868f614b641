/* kernelsmith-cc rewrite: the rules proposer by hand. Applies rules in
 * order to a kernel (or to a variant file of it) and prints the variant
 * they make, as a file `check --variant` reads. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ks_buf.h"
#include "ks_capture.h"
#include "ks_cli.h"
#include "ks_compile.h"
#include "ks_fs.h"
#include "ks_rules.h"
#include "ks_source_args.h"
#include "ks_specs.h"
#include "ks_target.h"
#include "ks_variant_file.h"

static const char usage[] =
    "usage: kernelsmith-cc rewrite KERNEL [--rule NAME[=PARAM]]... [--from FILE] [--capture FILE]\n"
    "                              [options] [PATH...]\n"
    "       kernelsmith-cc rewrite --list\n"
    "\n"
    "Applies source-to-source rewrite rules (the rules proposer of 'optimize') to\n"
    "KERNEL and prints the variant they make: the kernel renamed KERNEL_ks_variant,\n"
    "its launch policy and 'requires' guards in a kernelsmith-variant comment, and\n"
    "a comment naming the techniques. The output is a variant file: save it and\n"
    "judge it with 'kernelsmith-cc check KERNEL --variant FILE'.\n"
    "\n"
    "The rules run in the order given, each on the previous one's output, starting\n"
    "from the kernel's own definition (or from FILE with --from). With no --rule,\n"
    "the starting variant is printed as it is. A rule that does not apply stops\n"
    "the rewrite with one line on stderr saying why (exit status 1).\n"
    "\n"
    "The sizes rules evaluate at (the original launch, scalars, buffer lengths)\n"
    "come from KERNEL's spec, else from its launches in a capture (--capture),\n"
    "else from its launch sites alone: the parts of the launch that evaluate\n"
    "there (macros, constants, dim3 locals read from their declarations), no\n"
    "scalars and no lengths. A\n"
    "rule's guards stay symbolic either way; a rule that needs a value it cannot\n"
    "get says so in its line. A note on stderr says when there are no sizes.\n"
    "\n"
    "options:\n"
    "      --rule NAME[=PARAM]  apply rule NAME with parameter PARAM (one of the\n"
    "                       rule's choices, see --list); without =PARAM, the first\n"
    "                       choice that applies\n"
    "      --from FILE      start from this variant file instead of the kernel\n"
    "      --capture FILE   the sizes of KERNEL's launches in FILE (a .kscap that\n"
    "                       'profile --capture' writes) where it has no spec\n"
    "      --each-rule DIR  apply every rule alone (its first choice that applies)\n"
    "                       and write DIR/KERNEL.RULE.cu.txt for each: the variant,\n"
    "                       or the line saying why the rule does not apply (DIR\n"
    "                       is made when missing)\n"
    "      --compile        compile every variant printed or written with NVRTC for\n"
    "                       sm_90, as the judge would (the slice, then the\n"
    "                       variant); one that does not compile is said on stderr\n"
    "                       and makes the exit status 1\n"
    "      --list           list the rules: name, choices, whether it is a tuning\n"
    "                       rule (launch configuration or unroll only), summary\n"
    KS_SOURCE_HELP
    "  -h, --help           show this help\n"
    "\n"
    "Rules are documented in docs/rules.md. Exit status: 0 when every rule\n"
    "applied, 1 when one did not or on failure, 2 on a usage error.\n";

const ks_command ks_cmd_rewrite;

typedef struct rule_step {
  const ks_rule *rule;
  bool has_param;
  int param;
} rule_step;

static const char *choices_text(ks_arena *arena, const ks_rule *r) {
  if (!r->nchoices)
    return "(none)";
  ks_buf b = KS_BUF_INIT;
  for (size_t i = 0; i < r->nchoices; i++)
    ks_buf_addf(&b, "%s%d", i ? "," : "", r->choices[i]);
  const char *out = ks_arena_strdup(arena, b.data);
  ks_buf_release(&b);
  return out;
}

static int list_rules(void) {
  ks_arena arena = KS_ARENA_INIT;
  size_t n;
  const ks_rule *const *all = ks_rules_all(&n);
  printf("%-16s %-44s %-7s %s\n", "RULE", "CHOICES", "TUNING", "SUMMARY");
  for (size_t i = 0; i < n; i++)
    printf("%-16s %-44s %-7s %s\n", all[i]->name, choices_text(&arena, all[i]),
           all[i]->tuning ? "yes" : "no", all[i]->summary);
  ks_arena_release(&arena);
  return KS_EXIT_OK;
}

/* "NAME" or "NAME=PARAM", checked against the rule's choices. */
static int parse_step(ks_ctx *ctx, ks_arena *arena, const char *arg, rule_step *out) {
  const char *eq = strchr(arg, '=');
  const char *name = eq ? ks_arena_strndup(arena, arg, (size_t)(eq - arg)) : arg;
  memset(out, 0, sizeof *out);
  out->rule = ks_rule_find(name);
  if (!out->rule) {
    size_t n;
    const ks_rule *const *all = ks_rules_all(&n);
    ks_buf names = KS_BUF_INIT;
    for (size_t i = 0; i < n; i++)
      ks_buf_addf(&names, "%s%s", i ? ", " : "", all[i]->name);
    int rc = ks_usage_error(ctx, &ks_cmd_rewrite, "no rule '%s' (rules: %s)", name, names.data);
    ks_buf_release(&names);
    return rc;
  }
  if (!eq)
    return 0;
  char *end;
  long v = strtol(eq + 1, &end, 10);
  bool known = eq[1] && !*end;
  for (size_t i = 0; known && i < out->rule->nchoices; i++)
    if (out->rule->choices[i] == v) {
      out->has_param = true;
      out->param = (int)v;
      return 0;
    }
  if (!out->rule->nchoices)
    return ks_usage_error(ctx, &ks_cmd_rewrite, "rule '%s' takes no parameter", name);
  return ks_usage_error(ctx, &ks_cmd_rewrite, "rule '%s' takes one of %s, not '%s'", name,
                        choices_text(arena, out->rule), eq + 1);
}

/* Applies one step; *reason is set when it does not apply. Without a
 * parameter the choices are tried in order; when none applies, the reason
 * most of them gave is the one reported. */
static int apply_step(ks_ctx *ctx, const ks_rule_input *in, const rule_step *s, ks_arena *arena,
                      ks_rule_result *out, const char **reason) {
  *reason = NULL;
  if (s->has_param || !s->rule->nchoices) {
    if (ks_rule_apply(ctx, s->rule, in, s->has_param ? s->param : 0, arena, out))
      return -1;
    if (!out->applied)
      *reason = out->reason ? out->reason : "(no reason given)";
    return 0;
  }
  const char **reasons = ks_arena_alloc(arena, s->rule->nchoices * sizeof *reasons);
  for (size_t i = 0; i < s->rule->nchoices; i++) {
    memset(out, 0, sizeof *out);
    if (ks_rule_apply(ctx, s->rule, in, s->rule->choices[i], arena, out))
      return -1;
    if (out->applied)
      return 0;
    reasons[i] = out->reason ? out->reason : "(no reason given)";
  }
  size_t best = 0, best_count = 0;
  for (size_t i = 0; i < s->rule->nchoices; i++) {
    size_t count = 0;
    for (size_t j = 0; j < s->rule->nchoices; j++)
      count += !strcmp(reasons[i], reasons[j]);
    if (count > best_count) {
      best = i;
      best_count = count;
    }
  }
  *reason = reasons[best];
  return 0;
}

/* Compiles variants vs[0..n) of `t` as the judge does (the slice, then the
 * variant, with the slice's options) in one batch; each that does not
 * compile is said on stderr, named by what[i]. *failed gets their number. */
static int compile_variants(ks_ctx *ctx, const ks_target *t, const ks_variant *vs,
                            const char *const *what, size_t n, bool is_template, ks_arena *arena,
                            size_t *failed) {
  *failed = 0;
  if (!n)
    return 0;
  ks_compiler comp;
  if (ks_compiler_init(ctx, &comp, "sm_90", NULL))
    return -1;
  ks_compile_unit *units = ks_arena_alloc(arena, n * sizeof *units);
  ks_compile_result *res = ks_arena_alloc(arena, n * sizeof *res);
  for (size_t i = 0; i < n; i++) {
    const char **name = ks_arena_alloc(arena, sizeof *name);
    *name = ks_variant_name_expression(arena, &vs[i], is_template, t->subject.name_expression);
    units[i] = (ks_compile_unit){.name = ks_arena_printf(arena, "%s.cu", what[i]),
                                 .source = ks_rules_unit(arena, t, &vs[i], NULL),
                                 .name_expressions = name,
                                 .nnames = 1,
                                 .candidate = vs[i].source,
                                 .extra_options = t->subject.options,
                                 .nextra = t->subject.noptions};
  }
  int rc = ks_compile(ctx, &comp, units, n, arena, res);
  ks_compiler_release(&comp);
  if (rc)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (res[i].status != KS_COMPILE_OK) {
      fprintf(stderr, "rewrite: %s does not compile: %s\n", what[i],
              res[i].reason ? res[i].reason : "(no reason given)");
      ++*failed;
    }
  return 0;
}

/* Every rule alone on `start`, one file each: what the golden tests diff,
 * with one scan and one slice for all of them. */
static int each_rule(ks_ctx *ctx, const ks_target *t, const ks_variant *start, bool is_template,
                     const char *kernel, const char *dir, bool compile, ks_arena *arena) {
  /* The folder, and any folder above it, is made when missing, so that a
   * first try does not end at the first file. */
  if (!ks_is_dir(dir) && ks_mkdir_p(dir)) {
    ks_error(ctx, "--each-rule %s: %s", dir, strerror(errno));
    return KS_EXIT_FAILURE;
  }
  ks_rule_input in;
  if (ks_rules_prepare(ctx, t, start, is_template, arena, &in)) {
    ks_error(ctx, "%s", ctx->error);
    return KS_EXIT_FAILURE;
  }
  size_t n, napplied = 0;
  const ks_rule *const *rules = ks_rules_all(&n);
  ks_variant *applied = ks_arena_alloc(arena, n * sizeof *applied);
  const char **what = ks_arena_alloc(arena, n * sizeof *what);
  for (size_t i = 0; i < n; i++) {
    rule_step step = {.rule = rules[i]};
    ks_rule_result res = {0};
    const char *reason;
    if (apply_step(ctx, &in, &step, arena, &res, &reason)) {
      ks_error(ctx, "%s", ctx->error);
      return KS_EXIT_FAILURE;
    }
    const char *path = ks_arena_printf(arena, "%s/%s.%s.cu.txt", dir, kernel, rules[i]->name);
    FILE *f = fopen(path, "w");
    if (!f) {
      ks_error(ctx, "%s: %s", path, strerror(errno));
      return KS_EXIT_FAILURE;
    }
    if (reason)
      fprintf(f, "rewrite: %s does not apply to %s: %s\n", rules[i]->name,
              t->kernel->qualified_name, reason);
    else {
      fputs(ks_variant_format(arena, &res.child, res.technique ? res.technique : ""), f);
      what[napplied] = ks_arena_printf(arena, "%s's %s variant", t->kernel->qualified_name,
                                       rules[i]->name);
      applied[napplied++] = res.child;
    }
    if (fclose(f)) {
      ks_error(ctx, "%s: %s", path, strerror(errno));
      return KS_EXIT_FAILURE;
    }
  }
  size_t failed = 0;
  if (compile && compile_variants(ctx, t, applied, what, napplied, is_template, arena, &failed)) {
    ks_error(ctx, "%s", ctx->error);
    return KS_EXIT_FAILURE;
  }
  return failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
}

/* The kernel with the sizes the rules evaluate at: its spec's, else its
 * captured launches', else its launch sites' alone (ks_target_open_sites,
 * with a note that says what is unknown). */
static int open_target(ks_ctx *ctx, const ks_source_args *src, const char *name,
                       const char *capture, ks_capture *cap, bool *have_cap, ks_arena *arena,
                       ks_target *t) {
  memset(t, 0, sizeof *t);
  if (ks_scan_run(ctx, &src->scan, &t->scan)) {
    ks_scan_release(&t->scan);
    return -1;
  }
  t->have_scan = true;
  const ks_kernel *k;
  if (ks_scan_lookup(ctx, &t->scan, name, &k))
    return -1;
  if (capture) {
    char *abs = realpath(capture, NULL);
    int rc = ks_capture_open(ctx, abs ? abs : capture, cap);
    free(abs);
    if (rc)
      return -1;
    *have_cap = true;
    return ks_target_open_captured(ctx, &src->scan, NULL, k, cap, false, arena, t);
  }
  ks_spec spec;
  int found = ks_spec_find(ctx, &t->scan, k, arena, &spec);
  if (found < 0)
    return -1;
  if (!found)
    return ks_target_open_captured(ctx, &src->scan, NULL, k, NULL, false, arena, t);
  if (ks_target_open_sites(ctx, &src->scan, k, arena, t))
    return -1;
  ks_buf unknown = KS_BUF_INIT;
  static const char *const parts[3] = {"grid", "block", "smem"};
  for (int i = 0; i < 3; i++)
    if (t->launch_unknown[i])
      ks_buf_addf(&unknown, "%s%s", unknown.len ? ", " : "", parts[i]);
  fprintf(stderr,
          "rewrite: note: %s has no spec and no --capture: no scalar or buffer length is known%s%s; "
          "guards stay symbolic\n",
          k->qualified_name, unknown.len ? ", nor the launch's " : "", unknown.len ? unknown.data : "");
  for (int i = 0; i < 3; i++)
    if (t->launch_unknown[i] && (i == 0 || !t->launch_unknown[i - 1] ||
                                 strcmp(t->launch_unknown[i], t->launch_unknown[i - 1])))
      fprintf(stderr, "rewrite: note: %s\n", t->launch_unknown[i]);
  ks_buf_release(&unknown);
  return 0;
}

static int run_rewrite(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_RULE = 256, OPT_FROM, OPT_LIST, OPT_EACH, OPT_CAPTURE, OPT_COMPILE };
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"rule", required_argument, NULL, OPT_RULE}, {"from", required_argument, NULL, OPT_FROM},
      {"list", no_argument, NULL, OPT_LIST}, {"each-rule", required_argument, NULL, OPT_EACH},
      {"capture", required_argument, NULL, OPT_CAPTURE},
      {"compile", no_argument, NULL, OPT_COMPILE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_source_args src;
  ks_source_args_init(&src, argc);
  ks_arena arena = KS_ARENA_INIT;
  ks_target target = {0};
  KS_ARRAY(rule_step) steps = {0};
  const char *from = NULL, *each_dir = NULL, *capture = NULL;
  ks_capture cap;
  bool list = false, have_cap = false, compile = false;
  int rc = KS_EXIT_OK, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "h", opts, NULL)) != -1) {
    if (ks_source_args_option(&src, c, optarg))
      continue;
    switch (c) {
    case OPT_RULE:
      if ((rc = parse_step(ctx, &arena, optarg, ks_array_push(&arena, &steps))))
        goto out;
      break;
    case OPT_FROM:
      from = optarg;
      break;
    case OPT_LIST:
      list = true;
      break;
    case OPT_EACH:
      each_dir = optarg;
      break;
    case OPT_CAPTURE:
      capture = optarg;
      break;
    case OPT_COMPILE:
      compile = true;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_rewrite);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_rewrite, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_rewrite, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (list) {
    rc = list_rules();
    goto out;
  }
  if (optind >= argc) {
    rc = ks_usage_error(ctx, &ks_cmd_rewrite, "which kernel? (kernelsmith-cc scan lists them)");
    goto out;
  }
  const char *name = argv[optind++];
  ks_source_args_paths(&src, argc, argv, optind);

  if (open_target(ctx, &src, name, capture, &cap, &have_cap, &arena, &target))
    goto fail;
  ks_variant cur;
  bool is_template = false;
  if (from ? ks_variant_load(ctx, from, target.kernel->name, &arena, &cur, &is_template)
           : ks_rules_seed(ctx, &target, &arena, &cur, &is_template))
    goto fail;
  if (each_dir) {
    rc = each_rule(ctx, &target, &cur, is_template, name, each_dir, compile, &arena);
    goto out;
  }
  ks_buf techniques = KS_BUF_INIT;
  /* A variant made by an earlier rewrite names its techniques: go on from
   * there. */
  const char *earlier = from ? ks_variant_techniques(&arena, &cur) : NULL;
  if (earlier)
    ks_buf_adds(&techniques, earlier);
  for (size_t i = 0; i < steps.len; i++) {
    ks_rule_input in;
    ks_rule_result res = {0};
    const char *reason;
    if (ks_rules_prepare(ctx, &target, &cur, is_template, &arena, &in) ||
        apply_step(ctx, &in, &steps.items[i], &arena, &res, &reason)) {
      ks_buf_release(&techniques);
      goto fail;
    }
    if (reason) {
      fprintf(stderr, "rewrite: %s does not apply to %s: %s\n", steps.items[i].rule->name,
              target.kernel->qualified_name, reason);
      ks_buf_release(&techniques);
      rc = KS_EXIT_FAILURE;
      goto out;
    }
    cur = res.child;
    if (res.technique)
      ks_buf_addf(&techniques, "%s%s", techniques.len ? ", " : "", res.technique);
  }
  fputs(ks_variant_format(&arena, &cur, techniques.data), stdout);
  ks_buf_release(&techniques);
  if (compile) {
    size_t failed;
    const char *what = ks_arena_printf(&arena, "%s's variant", target.kernel->qualified_name);
    if (compile_variants(ctx, &target, &cur, &what, 1, is_template, &arena, &failed))
      goto fail;
    rc = failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
  }
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  ks_target_close(&target);
  if (have_cap)
    ks_capture_close(&cap);
  ks_arena_release(&arena);
  ks_source_args_release(&src);
  return rc;
}

const ks_command ks_cmd_rewrite = {"rewrite", "apply rewrite rules to a kernel and print the variant",
                                   usage, run_rewrite};
