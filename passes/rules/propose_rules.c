/* propose_rules: the rules proposer behind the search's proposer table.
 *
 * A parent is parsed once (ks_rules_prepare) and kept; every draw then
 * deals out the (rule, parameter) pairs, one of each rule per turn in a
 * shuffled order (rewrites before tuning rules), and applies them in that
 * order until enough apply. A rule already in the parent's chain is not applied again:
 * its other parameters are tried on the parent's parent instead (siblings),
 * which keeps chains short and readable. */
#include <stdio.h>
#include <string.h>

#include "ks_rules.h"
#include "ks_search.h"

typedef struct parsed {
  const char *hash;
  bool ok;
  ks_rule_input in;
} parsed;
typedef KS_ARRAY(parsed) parsed_list;

typedef struct step {
  const ks_rule *rule;
  int param;
} step;

static parsed *parse_parent(ks_ctx *ctx, ks_rules_proposer *rp, const ks_node *parent) {
  parsed_list *list = rp->parsed;
  if (!list)
    list = rp->parsed = ks_arena_alloc(&rp->arena, sizeof *list);
  for (size_t i = 0; i < list->len; i++)
    if (!strcmp(list->items[i].hash, parent->hash))
      return &list->items[i];
  parsed *p = ks_array_push(&rp->arena, list);
  p->hash = ks_arena_strdup(&rp->arena, parent->hash);
  p->ok = !ks_rules_prepare(ctx, rp->target, &parent->variant, parent->is_template, &rp->arena,
                            &p->in);
  if (!p->ok) {
    /* A parent the rules cannot read (a proposal of another kind) simply
     * has no rule children. */
    ks_debug(ctx, "rules: cannot read variant %lld: %s", parent->id, ctx->error);
    return p;
  }
  if (rp->sm_count)
    p->in.sm_count = rp->sm_count;
  if (rp->max_smem_per_block)
    p->in.max_smem_per_block = rp->max_smem_per_block;
  return p;
}

/* The rule a tag names: "block=128" -> "block", "restrict+ldg" -> "restrict". */
static size_t stem_len(const char *tag) { return strcspn(tag, "=+ "); }

/* Whether the chain already has a step of the rule that made `tag`: each rule
 * appears once in a chain; its other parameter values are tried as siblings
 * (children of the same parent), not stacked on top of each other. */
static bool chain_has(const char *chain, const char *tag) {
  size_t n = stem_len(tag);
  for (const char *p = chain; *p;) {
    if (stem_len(p) == n && !strncmp(p, tag, n))
      return true;
    const char *next = strstr(p, " > ");
    if (!next)
      break;
    p = next + 3;
  }
  return false;
}

static int rules_propose(void *self, ks_ctx *ctx, const ks_node *parent,
                         const ks_node *const *insp, size_t ninsp, ks_rng *rng, unsigned want,
                         ks_arena *arena, ks_proposals *out) {
  (void)insp;
  (void)ninsp;
  ks_rules_proposer *rp = self;
  parsed *p = parse_parent(ctx, rp, parent);
  if (!p->ok)
    return 0;
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  /* The rules in a shuffled order, each with its choices shuffled, dealt
   * out one choice of each rule per turn: every rule gets a try at every
   * parent before any gets its second, so a rule with one or a few choices
   * (tile_matmul's tiles, warp_rows) is drawn as often as one with many
   * (block sizes, unroll factors), which a draw over all (rule, choice)
   * pairs would favour. Fisher-Yates with the search's generator:
   * reproducible per round. */
  KS_ARRAY(step) steps = {0};
  ks_arena scratch = KS_ARENA_INIT;
  size_t *order = ks_arena_alloc(&scratch, (nrules ? nrules : 1) * sizeof *order);
  size_t *first = ks_arena_alloc(&scratch, (nrules + 1) * sizeof *first);
  size_t nused = 0;
  for (size_t r = 0; r < nrules; r++) {
    if (rp->tuning_only && !rules[r]->tuning)
      continue;
    order[nused++] = r;
  }
  for (size_t i = nused; i > 1; i--) {
    size_t j = ks_rng_below(rng, i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  /* In each turn the rewrites go before the tuning rules (block sizes,
   * unroll factors, launch bounds), each group in its shuffled order: a
   * search with time for a handful of candidates (a kernel whose every
   * run moves hundreds of megabytes) should spend them on the changes
   * that can give several times the speed, not on a block size. */
  if (!rp->tuning_only) {
    size_t k = 0;
    size_t *tail = ks_arena_alloc(&scratch, (nused ? nused : 1) * sizeof *tail);
    size_t ntail = 0;
    for (size_t u = 0; u < nused; u++)
      if (rules[order[u]]->tuning)
        tail[ntail++] = order[u];
      else
        order[k++] = order[u];
    memcpy(order + k, tail, ntail * sizeof *tail);
  }
  size_t most = 0;
  for (size_t u = 0; u < nused; u++) {
    const ks_rule *rule = rules[order[u]];
    first[u] = steps.len;
    if (!rule->nchoices)
      *ks_array_push(&scratch, &steps) = (step){rule, 0};
    for (size_t c = 0; c < rule->nchoices; c++)
      *ks_array_push(&scratch, &steps) = (step){rule, rule->choices[c]};
    size_t n = steps.len - first[u];
    for (size_t i = n; i > 1; i--) {
      size_t j = ks_rng_below(rng, i);
      step t = steps.items[first[u] + i - 1];
      steps.items[first[u] + i - 1] = steps.items[first[u] + j];
      steps.items[first[u] + j] = t;
    }
    if (n > most)
      most = n;
  }
  first[nused] = steps.len;
  KS_ARRAY(step) dealt = {0};
  for (size_t turn = 0; turn < most; turn++)
    for (size_t u = 0; u < nused; u++)
      if (first[u] + turn < first[u + 1])
        *ks_array_push(&scratch, &dealt) = steps.items[first[u] + turn];
  steps.items = dealt.items;
  steps.len = dealt.len;
  const char *chain = parent->techniques ? parent->techniques : "";
  for (size_t i = 0; i < steps.len && out->len < want; i++) {
    const step *st = &steps.items[i];
    ks_rule_result res;
    memset(&res, 0, sizeof res);
    if (ks_rule_apply(ctx, st->rule, &p->in, st->param, arena, &res)) {
      ks_arena_release(&scratch);
      return -1;
    }
    if (!res.applied)
      continue;
    const char *tag = res.technique ? res.technique
                      : st->rule->nchoices
                          ? ks_arena_printf(arena, "%s=%d", st->rule->name, st->param)
                          : st->rule->name;
    if (chain_has(chain, tag))
      continue;
    ks_proposal *prop = ks_array_push(arena, out);
    prop->variant = res.child;
    prop->is_template = parent->is_template;
    prop->technique = tag;
  }
  ks_arena_release(&scratch);
  return 0;
}

ks_proposer ks_rules_proposer_make(ks_rules_proposer *self) {
  return (ks_proposer){.name = self->tuning_only ? "tuning" : "rules", .self = self,
                       .propose = rules_propose};
}

void ks_rules_proposer_release(ks_rules_proposer *self) {
  ks_arena_release(&self->arena);
  self->parsed = NULL;
}
