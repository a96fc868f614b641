/* rules_harness: see rules_harness.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "rules_harness.h"

ks_ctx rh_ctx;
ks_arena rh_arena = KS_ARENA_INIT;
ks_compiler rh_compiler;

typedef struct queued {
  const char *what;
  ks_compile_unit unit;
  const char *name_expression;
} queued;
static KS_ARRAY(queued) queue;

int rh_setup(const char *prog) {
  ks_ctx_init(&rh_ctx, prog);
  if (ks_compiler_init(&rh_ctx, &rh_compiler, "sm_90", NULL)) {
    fprintf(stderr, "setup: %s\n", rh_ctx.error);
    return -1;
  }
  return 0;
}

void rh_teardown(void) {
  ks_compiler_release(&rh_compiler);
  ks_arena_release(&rh_arena);
  memset(&queue, 0, sizeof queue);
  ks_ctx_release(&rh_ctx);
}

int rh_open_tree(rh_tree *t, const char *path) {
  t->paths[0] = path;
  t->options = (ks_scan_options){.paths = t->paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&rh_ctx, &t->options, &t->scan)) {
    fprintf(stderr, "setup: %s\n", rh_ctx.error);
    return -1;
  }
  return 0;
}

void rh_close_tree(rh_tree *t) { ks_scan_release(&t->scan); }

rh_subject *rh_open_kernel(rh_tree *t, const char *name) {
  rh_subject *s = ks_arena_alloc(&rh_arena, sizeof *s);
  const ks_kernel *k;
  if (ks_scan_lookup(&rh_ctx, &t->scan, name, &k) ||
      ks_target_open_kernel(&rh_ctx, &t->options, &t->scan, k, &rh_arena, &s->t) ||
      ks_rules_seed(&rh_ctx, &s->t, &rh_arena, &s->seed, &s->is_template) ||
      ks_rules_prepare(&rh_ctx, &s->t, &s->seed, s->is_template, &rh_arena, &s->in))
    fail_msg("%s: %s", name, rh_ctx.error);
  return s;
}

const char *rh_check_child(rh_subject *s, const ks_variant *child, const char *what,
                           ks_candidate *out) {
  ks_candidate cand;
  if (ks_target_candidate(&rh_ctx, &s->t, child, s->is_template, &rh_arena, &cand))
    fail_msg("%s: policy or guards do not resolve: %s", what, rh_ctx.error);
  char *held = ks_arena_alloc(&rh_arena, s->t.nworkloads + 1);
  for (size_t i = 0; i < s->t.nworkloads; i++) {
    const ks_launch_cfg *l = &cand.launches[i];
    held[i] = cand.guards_hold[i] ? '1' : '0';
    if (cand.guards_hold[i] && (!l->grid[0] || !l->block[0]))
      fail_msg("%s: size %s: an empty launch", what, s->t.workloads[i].size_name);
  }
  queued *q = ks_array_push(&rh_arena, &queue);
  q->what = what;
  q->name_expression = cand.name_expression;
  q->unit = (ks_compile_unit){.name = ks_arena_printf(&rh_arena, "%s.cu", what),
                              .source = ks_rules_unit(&rh_arena, &s->t, child, NULL),
                              .nnames = 1,
                              .candidate = child->source};
  if (out)
    *out = cand;
  return held;
}

void rh_compile_queued(void) {
  size_t n = queue.len;
  if (!n)
    return;
  ks_compile_unit *units = ks_arena_alloc(&rh_arena, n * sizeof *units);
  ks_compile_result *res = ks_arena_alloc(&rh_arena, n * sizeof *res);
  for (size_t i = 0; i < n; i++) {
    units[i] = queue.items[i].unit;
    units[i].name_expressions = &queue.items[i].name_expression;
  }
  assert_int_equal(ks_compile(&rh_ctx, &rh_compiler, units, n, &rh_arena, res), 0);
  for (size_t i = 0; i < n; i++)
    if (res[i].status != KS_COMPILE_OK)
      fail_msg("%s does not compile: %s\n%s\n---- variant:\n%s", queue.items[i].what,
               res[i].reason, res[i].log, queue.items[i].unit.candidate);
  queue.len = 0;
}

ks_rule_result rh_apply(const ks_rule_input *in, const char *rule, int param) {
  const ks_rule *r = ks_rule_find(rule);
  assert_non_null(r);
  ks_rule_result res;
  if (r->apply(&rh_ctx, in, param, &rh_arena, &res))
    fail_msg("%s=%d failed: %s", rule, param, rh_ctx.error);
  if (!res.applied) {
    assert_non_null(res.reason);
    assert_null(strchr(res.reason, '\n'));
  }
  return res;
}

ks_variant rh_applied(rh_subject *s, const ks_rule_input *in, const char *rule, int param,
                      const char **held) {
  ks_rule_result res = rh_apply(in, rule, param);
  if (!res.applied)
    fail_msg("%s=%d on %s does not apply: %s", rule, param, s->t.kernel->name, res.reason);
  assert_non_null(res.technique);
  const char *h = rh_check_child(
      s, &res.child, ks_arena_printf(&rh_arena, "%s.%s=%d", res.child.kernel_name, rule, param),
      NULL);
  if (held)
    *held = h;
  return res.child;
}

void rh_not_applied(const ks_rule_input *in, const char *rule, int param, const char *why) {
  ks_rule_result res = rh_apply(in, rule, param);
  if (res.applied)
    fail_msg("%s=%d applies; expected not (%s):\n%s", rule, param, why, res.child.source);
  if (!strstr(res.reason, why))
    fail_msg("%s=%d: reason '%s', expected '%s' in it", rule, param, res.reason, why);
}

ks_rule_input *rh_next_input(rh_subject *s, const ks_variant *child) {
  ks_rule_input *in = ks_arena_alloc(&rh_arena, sizeof *in);
  if (ks_rules_prepare(&rh_ctx, &s->t, child, s->is_template, &rh_arena, in))
    fail_msg("the child does not parse: %s\n%s", rh_ctx.error, child->source);
  return in;
}

void rh_has(const ks_variant *v, const char *text) {
  if (!strstr(v->source, text))
    fail_msg("expected '%s' in:\n%s", text, v->source);
}

void rh_lacks(const ks_variant *v, const char *text) {
  if (strstr(v->source, text))
    fail_msg("did not expect '%s' in:\n%s", text, v->source);
}

bool rh_has_guard(const ks_variant *v, const char *g) {
  for (size_t i = 0; i < v->requires.len; i++)
    if (!strcmp(v->requires.items[i], g))
      return true;
  return false;
}

void rh_guard(const ks_variant *v, const char *g) {
  if (!rh_has_guard(v, g))
    fail_msg("no guard '%s' (%zu guards)", g, v->requires.len);
}

size_t rh_count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}
