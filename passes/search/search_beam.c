/* search_beam: the best B variants, N proposals from each, per iteration,
 * in the manner of AccelOpt. Simpler than the islands, and a good baseline
 * for them: it climbs greedily from the best variants found so far. */
#include "search_int.h"

int ks_search_beam(search_state *st) {
  ks_search *s = st->s;
  const ks_search_options *o = &s->opts;
  unsigned width = o->beam_width ? o->beam_width : 6;
  ks_node **beam = ks_arena_alloc(st->arena, (width + 1) * sizeof *beam);
  size_t nbeam = 0;

  /* The beam is the best of everything correct so far: after a resume, the
   * same beam an uninterrupted run would hold (up to ties). */
  size_t n = st->res->nodes.len;
  ks_node **all = ks_arena_alloc(st->arena, (n + 1) * sizeof *all);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (ks_node_correct(st->res->nodes.items[i]))
      all[m++] = st->res->nodes.items[i];
  ks_nodes_sort_by_fitness(all, m);
  for (size_t i = 0; i < m && nbeam < width; i++)
    beam[nbeam++] = all[i];
  if (!nbeam)
    beam[nbeam++] = st->seed;

  unsigned stalled = 0;
  ks_search_job *jobs = ks_arena_alloc(st->arena, (width + 1) * sizeof *jobs);
  for (st->round = st->first_round ? st->first_round : 1; st->round <= o->rounds; st->round++) {
    for (size_t b = 0; b < nbeam; b++) {
      ks_search_job *job = &jobs[b];
      *job = (ks_search_job){.parent = beam[b], .want = o->proposals, .island = (int)b};
      ks_rng_seed(&job->rng, o->seed, st->round, b);
      if (nbeam > 1)
        job->insp[job->ninsp++] = beam[(b + 1) % nbeam];
    }
    ks_nodes batch = {0};
    search_ints owners = {0};
    int rc = ks_search_round(st, jobs, nbeam, &batch, &owners);
    if (rc < 0)
      return -1;
    if (rc > 0)
      break;
    if (!batch.len) {
      if (++stalled >= 2) {
        st->res->exhausted = true;
        break;
      }
      st->rounds_done = st->round;
      ks_search_report(st, true);
      continue;
    }
    stalled = 0;
    if (ks_search_judge_round(st, batch.items, batch.len))
      return -1;
    /* The new beam: the best of the old beam and the children. */
    ks_node **pool = ks_arena_alloc(st->arena, (nbeam + batch.len + 1) * sizeof *pool);
    size_t np = 0;
    for (size_t b = 0; b < nbeam; b++)
      pool[np++] = beam[b];
    for (size_t k = 0; k < batch.len; k++) {
      ks_node *c = batch.items[k];
      bool dup = false;
      for (size_t q = 0; q < np; q++)
        dup |= pool[q] == c;
      if (ks_node_correct(c) && !dup)
        pool[np++] = c;
    }
    ks_nodes_sort_by_fitness(pool, np);
    nbeam = np < width ? np : width;
    for (size_t b = 0; b < nbeam; b++)
      beam[b] = pool[b];
    st->rounds_done = st->round;
    ks_search_report(st, true);
    if (ks_search_converged(st))
      break;
  }
  return 0;
}
