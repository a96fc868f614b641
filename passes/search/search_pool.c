/* search_pool: a batch judged by several workers (--devices), one thread
 * per worker, each with its own evaluator (its own judge: a worker process,
 * a context on its device, its ceilings and clock checks).
 *
 * The children are handed out in their order from a shared index to
 * whichever worker is free, and each result lands in its child's slot. The
 * search's thread takes the slots in the same order: it writes each
 * evaluation to the store, notes it and shows it to the proposer as soon as
 * it and every earlier child are done. So the store, the proposer and the
 * placement see the children in the order one worker would have judged
 * them, and a seed makes the same search whatever finished first (the
 * random draws are the strategies', per round and island, never here). The
 * price: an evaluation that finished while an earlier child is still being
 * judged waits for it in memory, and a kill -9 in that moment loses it (it
 * is judged again on resume, as an unjudged child is).
 *
 * Budgets are checked when a child is handed out, as the one-worker loop
 * checks them before each evaluation: with --max-evals the same children
 * are judged. A worker whose evaluator fails (-1: its process cannot be
 * started again) costs its candidate, which is recorded as CRASH with the
 * reason, and leaves the pool; the others go on. The last one's failure is
 * the search's. */
#include <pthread.h>
#include <string.h>

#include "search_int.h"

typedef struct pool_slot {
  ks_node *node;
  ks_eval eval;            /* in its worker's arena */
  bool done;
  const char *error;       /* the last worker failed: why (the search stops) */
} pool_slot;

typedef struct pool {
  search_state *st;
  pool_slot *slots;
  size_t n;
  size_t next;             /* the next slot to hand out */
  unsigned before;         /* evaluations of the search when the batch began */
  size_t live;             /* workers in the pool */
  size_t running;          /* threads not yet ended; the last one to end
                              closes the pool, so nothing waits for a child
                              no thread will take */
  bool closed;             /* nothing more is handed out */
  bool budget_hit, time_budget_hit;
  pthread_mutex_t lock;
  pthread_cond_t changed;  /* a slot is done, or the pool closed */
} pool;

typedef struct pool_worker {
  pool *pool;
  size_t index;            /* in ks_search.evaluator */
  pthread_t thread;
  bool started;
  ks_arena arena;          /* its evaluations, until the batch is stored */
} pool_worker;

/* The next child, or NULL when there is none or a budget is spent (then
 * nothing more is handed out). Called with the lock held. */
static pool_slot *take(pool *p) {
  const ks_search *s = p->st->s;
  if (p->closed || p->next == p->n) {
    p->closed = true;
    return NULL;
  }
  if (s->interrupted && *s->interrupted) {
    p->closed = true;
    return NULL;
  }
  if (s->opts.max_evals && p->before + p->next >= s->opts.max_evals) {
    p->budget_hit = p->closed = true;
    return NULL;
  }
  if (s->opts.max_seconds > 0 && ks_search_now() - p->st->t0 >= s->opts.max_seconds) {
    p->budget_hit = p->time_budget_hit = p->closed = true;
    return NULL;
  }
  return &p->slots[p->next++];
}

static void *work(void *arg) {
  pool_worker *w = arg;
  pool *p = w->pool;
  search_state *st = p->st;
  const ks_evaluator *ev = &st->s->evaluator[w->index];
  ks_ctx ctx;
  ks_ctx_init_thread(&ctx, st->s->ctx);
  for (bool leave = false; !leave;) {
    pthread_mutex_lock(&p->lock);
    pool_slot *slot = take(p);
    pthread_mutex_unlock(&p->lock);
    if (!slot)
      break;
    ks_eval e;
    bool failed = ks_search_judge(st, w->index, &ctx, slot->node, 0, &w->arena, &e) != 0;
    pthread_mutex_lock(&p->lock);
    if (failed) {
      leave = true;
      st->retired[w->index] = true;
      if (--p->live) {
        memset(&e, 0, sizeof e);
        e.verdict = KS_VERDICT_CRASH;
        e.device = ev->device;
        e.worker = (int)w->index;
        e.reason = ks_arena_printf(&w->arena, "worker %zu (device %d) failed and left the "
                                              "pool, costing this candidate: %s",
                                   w->index, ev->device, ctx.error);
        ks_warn(st->s->ctx, "%s: %s; %zu worker%s on", st->s->kernel, e.reason, p->live,
                p->live == 1 ? " goes" : "s go");
      } else {
        slot->error = ks_arena_printf(&w->arena, "worker %zu (device %d), the last one: %s",
                                      w->index, ev->device, ctx.error);
        p->closed = true;
      }
    }
    slot->eval = e;
    slot->done = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
  }
  pthread_mutex_lock(&p->lock);
  if (!--p->running)
    p->closed = true;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
  ks_ctx_release(&ctx);
  return NULL;
}

int ks_search_eval_pool(search_state *st, ks_node **nodes, size_t n) {
  ks_search *s = st->s;
  ks_arena scratch = KS_ARENA_INIT;
  pool p = {.st = st, .before = st->res->evaluated};
  p.slots = ks_arena_alloc(&scratch, (n + 1) * sizeof *p.slots);
  for (size_t i = 0; i < n; i++)
    if (!nodes[i]->evaluated)
      p.slots[p.n++].node = nodes[i];
  size_t nw = s->nevaluators;
  pool_worker *workers = ks_arena_alloc(&scratch, nw * sizeof *workers);
  for (size_t w = 0; w < nw; w++) {
    workers[w] = (pool_worker){.pool = &p, .index = w, .arena = KS_ARENA_INIT};
    p.live += !st->retired[w];
  }
  int rc = 0;
  if (!p.n)
    goto out;
  if (!p.live) {
    rc = ks_fail(s->ctx, "%s: every worker has left the pool", s->kernel);
    goto out;
  }
  pthread_mutex_init(&p.lock, NULL);
  pthread_cond_init(&p.changed, NULL);

  /* Compiled ahead once, by the first worker's compiler: the cubin cache
   * is shared by all. */
  const ks_evaluator *first = &s->evaluator[ks_search_first_live(st)];
  if (first->precompile && p.n > 1) {
    const ks_node **todo = ks_arena_alloc(&scratch, p.n * sizeof *todo);
    for (size_t i = 0; i < p.n; i++)
      todo[i] = p.slots[i].node;
    double t0 = ks_search_now();
    if (first->precompile(first->self, s->ctx, todo, p.n, &scratch)) {
      rc = -1;
      goto end_pool;
    }
    st->t_precompile += ks_search_now() - t0;
  }

  double t0 = ks_search_now();
  size_t want = p.n;
  pthread_mutex_lock(&p.lock); /* `running` is counted before any thread ends */
  for (size_t w = 0; w < nw && want; w++) {
    if (st->retired[w])
      continue;
    if (pthread_create(&workers[w].thread, NULL, work, &workers[w])) {
      ks_warn(s->ctx, "%s: cannot start the thread of worker %zu: it sits this batch out",
              s->kernel, w);
      continue;
    }
    workers[w].started = true;
    p.running++;
    want--;
  }
  if (!p.running) {
    p.closed = true;
    rc = ks_fail(s->ctx, "%s: no worker thread could be started", s->kernel);
  }
  pthread_mutex_unlock(&p.lock);

  /* The slots in order, each as soon as it and those before it are done. */
  for (size_t k = 0; k < p.n && !rc; k++) {
    pthread_mutex_lock(&p.lock);
    while (!p.slots[k].done && !(p.closed && k >= p.next))
      pthread_cond_wait(&p.changed, &p.lock);
    bool done = p.slots[k].done;
    pthread_mutex_unlock(&p.lock);
    if (!done)
      break; /* a budget closed the pool before this child */
    if (p.slots[k].error)
      rc = ks_fail(s->ctx, "%s", p.slots[k].error);
    else if (ks_search_commit(st, p.slots[k].node, &p.slots[k].eval))
      rc = -1;
  }
  pthread_mutex_lock(&p.lock);
  p.closed = true; /* after a failure: the workers finish what they hold */
  pthread_mutex_unlock(&p.lock);
  for (size_t w = 0; w < nw; w++)
    if (workers[w].started)
      pthread_join(workers[w].thread, NULL);
  st->t_eval += ks_search_now() - t0;
  if (p.budget_hit)
    st->res->budget_hit = true;
  if (p.time_budget_hit)
    st->res->time_budget_hit = true;
  for (size_t w = 0; w < nw; w++)
    ks_arena_release(&workers[w].arena);
end_pool:
  pthread_cond_destroy(&p.changed);
  pthread_mutex_destroy(&p.lock);
out:
  ks_arena_release(&scratch);
  return rc;
}
