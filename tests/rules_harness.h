/* rules_harness: what the tests of rewrites share (test_rules_mem,
 * test_rules_vec2d, test_llm_text): one context, arena and NVRTC compiler
 * for the test binary; scanned trees; a kernel opened as the search opens
 * it (target, seed, the seed's rule input); children whose policy and
 * guards must resolve on every size set, compiled after the slice (as the
 * judge compiles them) in one batch; assertions on a child's text and
 * guards. Failures end the current cmocka test with a message. Everything
 * lives in `rh_arena` until rh_teardown. */
#ifndef RULES_HARNESS_H
#define RULES_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_target.h"

extern ks_ctx rh_ctx;
extern ks_arena rh_arena;
extern ks_compiler rh_compiler;

/* A scanned directory. */
typedef struct rh_tree {
  ks_scan_options options;
  const char *paths[1];
  ks_scan scan;
} rh_tree;

/* A kernel as the rules see it: its target, the seed and the seed's input. */
typedef struct rh_subject {
  ks_target t;
  bool is_template;
  ks_variant seed;
  ks_rule_input in;
} rh_subject;

/* The context and the compiler (sm_90); -1 with the error on stderr. */
int rh_setup(const char *prog);
void rh_teardown(void);
/* Scans `path` (kept by the tree). */
int rh_open_tree(rh_tree *t, const char *path);
void rh_close_tree(rh_tree *t);

rh_subject *rh_open_kernel(rh_tree *t, const char *name);
/* The child's policy and guards resolved on every size set (no empty
 * launch where the guards hold); its unit queued for rh_compile_queued.
 * Returns which sizes its guards hold on, "0"/"1" per size set in the
 * spec's order; `cand` (may be NULL) gets the candidate. */
const char *rh_check_child(rh_subject *s, const ks_variant *child, const char *what,
                           ks_candidate *cand);
/* Compiles every queued child in one batch; each must compile. */
void rh_compile_queued(void);

/* The rule's result (a one-line reason when it does not apply). */
ks_rule_result rh_apply(const ks_rule_input *in, const char *rule, int param);
/* Applies and expects a child, checked and queued for compiling; `held`
 * (may be NULL) as rh_check_child returns it. */
ks_variant rh_applied(rh_subject *s, const ks_rule_input *in, const char *rule, int param,
                      const char **held);
/* Expects the rule not to apply, with `why` in its reason. */
void rh_not_applied(const ks_rule_input *in, const char *rule, int param, const char *why);
/* A child as the input of the next rule. */
ks_rule_input *rh_next_input(rh_subject *s, const ks_variant *child);

void rh_has(const ks_variant *v, const char *text);
void rh_lacks(const ks_variant *v, const char *text);
void rh_guard(const ks_variant *v, const char *g);
bool rh_has_guard(const ks_variant *v, const char *g);
size_t rh_count(const char *text, const char *what);

#endif
