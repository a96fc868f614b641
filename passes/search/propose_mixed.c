/* propose_mixed: several proposers behind one (--proposer all): the rules
 * and an LLM share each round's children. */
#include "ks_search.h"

/* Each part proposes its share into a list of its own; the lists are then
 * dealt out in turn. The search takes the first `want` new variants of what
 * it is given, so appending the parts one after another would let the first
 * part (the rules, which always have a dozen ideas) fill every round alone. */
static int mixed_propose(void *self, ks_ctx *ctx, const ks_node *parent,
                         const ks_node *const *insp, size_t ninsp, ks_rng *rng, unsigned want,
                         ks_arena *arena, ks_proposals *out) {
  ks_mixed_proposer *m = self;
  if (!m->nparts)
    return 0;
  ks_proposals *lists = ks_arena_alloc(arena, m->nparts * sizeof *lists);
  if (!lists)
    return -1;
  unsigned share = want / (unsigned)m->nparts, extra = want % (unsigned)m->nparts;
  size_t longest = 0;
  for (size_t i = 0; i < m->nparts; i++) {
    const ks_proposer *p = m->parts[i];
    unsigned n = share + (i < extra ? 1 : 0);
    lists[i] = (ks_proposals){0};
    if (!n)
      continue;
    if (p->propose(p->self, ctx, parent, insp, ninsp, rng, n, arena, &lists[i]))
      return -1;
    for (size_t k = 0; k < lists[i].len; k++)
      if (!lists[i].items[k].proposer)
        lists[i].items[k].proposer = p->name;
    if (lists[i].len > longest)
      longest = lists[i].len;
  }
  for (size_t k = 0; k < longest; k++)
    for (size_t i = 0; i < m->nparts; i++)
      if (k < lists[i].len)
        *ks_array_push(arena, out) = lists[i].items[k];
  return 0;
}

static int mixed_observe(void *self, ks_ctx *ctx, const ks_node *node, const ks_node *parent) {
  ks_mixed_proposer *m = self;
  for (size_t i = 0; i < m->nparts; i++)
    if (m->parts[i]->observe && m->parts[i]->observe(m->parts[i]->self, ctx, node, parent))
      return -1;
  return 0;
}

ks_proposer ks_mixed_proposer_make(ks_mixed_proposer *self) {
  return (ks_proposer){.name = "all", .self = self, .propose = mixed_propose,
                       .observe = mixed_observe};
}
