/* propose_mixed: several proposers behind one (--proposer all): the rules
 * and an LLM share each round's children. */
#include "ks_search.h"

static int mixed_propose(void *self, ks_ctx *ctx, const ks_node *parent,
                         const ks_node *const *insp, size_t ninsp, ks_rng *rng, unsigned want,
                         ks_arena *arena, ks_proposals *out) {
  ks_mixed_proposer *m = self;
  if (!m->nparts)
    return 0;
  unsigned share = want / (unsigned)m->nparts, extra = want % (unsigned)m->nparts;
  for (size_t i = 0; i < m->nparts; i++) {
    const ks_proposer *p = m->parts[i];
    unsigned n = share + (i == 0 ? extra : 0);
    if (!n)
      continue;
    size_t before = out->len;
    if (p->propose(p->self, ctx, parent, insp, ninsp, rng, n, arena, out))
      return -1;
    for (size_t k = before; k < out->len; k++)
      if (!out->items[k].proposer)
        out->items[k].proposer = p->name;
  }
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
