/* search_evolve: islands and a MAP-Elites archive, in the manner of
 * Kernel-Smith.
 *
 * Each island keeps a small population of correct variants. Every round,
 * each island draws a parent (a tournament in its population, or now and
 * then an elite of the archive, so good ideas cross islands without
 * migration), gives the proposer a few archive elites as inspirations, and
 * places the judged children back: into its population when they are
 * correct (the slowest is dropped when it is full), and into the archive
 * cell of their features when they beat that cell's elite.
 *
 * The archive's features are what makes variants different rather than
 * merely faster: the families of techniques in the chain (launch shape,
 * memory access, loops and math, warp or shared-memory restructuring) and
 * the register count in four bands, so a fast variant of one kind does not
 * crowd out a promising variant of another. Every few rounds the best of
 * each island migrates to the next. */
#include <string.h>

#include "search_int.h"

enum { FAMILIES = 4, REG_BANDS = 4, CELLS = (1 << FAMILIES) * REG_BANDS };

/* The family a technique belongs to ("block=128" -> launch). */
static unsigned family_bit(const char *t, size_t n) {
  static const struct {
    const char *prefix;
    unsigned bit;
  } map[] = {{"block", 0},     {"grid_stride", 0}, {"launch_bounds", 0}, {"vec", 1},
             {"restrict", 1},  {"coarsen", 1},     {"unroll", 2},        {"fast_math", 2}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    size_t k = strlen(map[i].prefix);
    if (n >= k && !strncmp(t, map[i].prefix, k))
      return 1u << map[i].bit;
  }
  return n ? 1u << 3 : 0; /* warp_*, smem_*, and whatever an LLM names */
}

static unsigned cell_of(const ks_node *n) {
  unsigned mask = 0;
  const char *t = n->techniques ? n->techniques : "";
  while (*t) {
    const char *end = strstr(t, " > ");
    size_t len = end ? (size_t)(end - t) : strlen(t);
    mask |= family_bit(t, len);
    t += len + (end ? 3 : 0);
  }
  unsigned band = n->registers <= 32 ? 0 : n->registers <= 64 ? 1 : n->registers <= 128 ? 2 : 3;
  return mask * REG_BANDS + band;
}

typedef struct evolve {
  search_state *st;
  ks_nodes *islands;       /* populations */
  ks_node *cells[CELLS];   /* the archive */
} evolve;

static void archive_place(evolve *ev, ks_node *n) {
  if (!ks_node_correct(n))
    return;
  unsigned c = cell_of(n);
  if (!ev->cells[c] || ks_node_fitness(n) > ks_node_fitness(ev->cells[c]))
    ev->cells[c] = n;
}

static void island_place(evolve *ev, unsigned island, ks_node *n) {
  if (!ks_node_correct(n))
    return;
  ks_nodes *pop = &ev->islands[island];
  for (size_t i = 0; i < pop->len; i++)
    if (pop->items[i] == n)
      return;
  unsigned cap = ev->st->s->opts.population;
  if (pop->len < cap) {
    *ks_array_push(ev->st->arena, pop) = n;
    return;
  }
  size_t worst = 0;
  for (size_t i = 1; i < pop->len; i++)
    if (ks_node_fitness(pop->items[i]) < ks_node_fitness(pop->items[worst]))
      worst = i;
  if (ks_node_fitness(n) > ks_node_fitness(pop->items[worst]))
    pop->items[worst] = n;
}

static ks_node *tournament(ks_rng *rng, const ks_nodes *pop) {
  ks_node *best = NULL;
  if (!pop->len)
    return NULL; /* only when a budget stopped the search before its seed */
  for (int k = 0; k < 3; k++) {
    ks_node *c = pop->items[ks_rng_below(rng, pop->len)];
    if (!best || ks_node_fitness(c) > ks_node_fitness(best))
      best = c;
  }
  return best;
}

static size_t elites(evolve *ev, ks_node **out) {
  size_t n = 0;
  for (unsigned c = 0; c < CELLS; c++)
    if (ev->cells[c])
      out[n++] = ev->cells[c];
  return n;
}

static void migrate(evolve *ev) {
  unsigned n = ev->st->s->opts.islands;
  if (n < 2)
    return;
  ks_node **best = ks_arena_alloc(ev->st->arena, n * sizeof *best);
  for (unsigned i = 0; i < n; i++) {
    const ks_nodes *pop = &ev->islands[i];
    for (size_t k = 0; k < pop->len; k++)
      if (!best[i] || ks_node_fitness(pop->items[k]) > ks_node_fitness(best[i]))
        best[i] = pop->items[k];
  }
  for (unsigned i = 0; i < n; i++)
    if (best[i])
      island_place(ev, (i + 1) % n, best[i]);
}

int ks_search_evolve(search_state *st) {
  ks_search *s = st->s;
  const ks_search_options *o = &s->opts;
  unsigned nislands = o->islands ? o->islands : 1;
  evolve ev = {.st = st};
  ev.islands = ks_arena_alloc(st->arena, nislands * sizeof *ev.islands);

  /* Everything judged so far (a resumed run's nodes) is placed again. */
  for (size_t i = 0; i < st->res->nodes.len; i++) {
    ks_node *n = st->res->nodes.items[i];
    archive_place(&ev, n);
    if (n->island >= 0 && (unsigned)n->island < nislands)
      island_place(&ev, (unsigned)n->island, n);
  }
  for (unsigned i = 0; i < nislands; i++)
    island_place(&ev, i, st->seed);

  unsigned stalled = 0;
  ks_node *pool[CELLS];
  ks_search_job *jobs = ks_arena_alloc(st->arena, nislands * sizeof *jobs);
  for (st->round = st->first_round ? st->first_round : 1; st->round <= o->rounds; st->round++) {
    for (unsigned i = 0; i < nislands; i++) {
      ks_search_job *job = &jobs[i];
      *job = (ks_search_job){.want = o->children, .island = (int)i};
      ks_rng_seed(&job->rng, o->seed, st->round, i);
      const ks_nodes *pop = &ev.islands[i];
      size_t nel = elites(&ev, pool);
      job->parent = nel && ks_rng_unit(&job->rng) < 0.2 ? pool[ks_rng_below(&job->rng, nel)]
                                                         : tournament(&job->rng, pop);
      for (unsigned k = 0; k < o->inspirations && k < 8 && nel; k++) {
        ks_node *e = pool[ks_rng_below(&job->rng, nel)];
        if (e != job->parent)
          job->insp[job->ninsp++] = e;
      }
    }
    ks_nodes batch = {0};
    search_ints owners = {0};
    int rc = ks_search_round(st, jobs, nislands, &batch, &owners);
    if (rc < 0)
      return -1;
    if (rc > 0)
      break;
    if (!batch.len) {
      /* Nothing new anywhere: the proposer has run out of ideas for every
       * parent drawn; a few more draws may find other parents. */
      if (++stalled >= 3) {
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
    for (size_t k = 0; k < batch.len; k++) {
      ks_node *n = batch.items[k];
      if (!n->evaluated)
        continue;
      island_place(&ev, (unsigned)owners.items[k], n);
      archive_place(&ev, n);
    }
    if (o->migrate_every && st->round % o->migrate_every == 0)
      migrate(&ev);
    st->rounds_done = st->round;
    ks_search_report(st, true);
    if (ks_search_converged(st))
      break;
  }
  return 0;
}
