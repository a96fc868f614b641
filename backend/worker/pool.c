/* pool: workload buffers kept between requests.
 *
 * A search sends the same few workloads (its size sets) for every
 * candidate of a kernel. Allocating them anew each time (a gigabyte of
 * device memory for a large size set, host copies faulted in page by page)
 * and generating and uploading the same inputs again cost more than
 * running the kernels. The pool keeps up to POOL_SETS sets, least recently
 * used first out, within a share of the device's memory; a set is matched
 * on everything that shapes its memory and its inputs (the buffers' types,
 * counts, roles and distributions; the file a captured buffer is read from
 * is not: its inputs are kept under the file's identity and read again when
 * it differs). A request that went wrong gives its
 * set back to be freed: a crashed kernel may have written anywhere. */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

enum { POOL_SETS = 6 };

typedef struct pool_set {
  wk_buffers *bufs;
  ks_wbuffer *key;  /* copies of the specs it was allocated for */
  size_t nkey;
  size_t device_bytes;
  unsigned long long used;
  bool lent;        /* out with a request now */
} pool_set;

typedef struct wk_pool {
  pool_set sets[POOL_SETS];
  unsigned long long clock;
} wk_pool;

static bool same_spec(const ks_wbuffer *a, const ks_wbuffer *b) {
  return a->dtype == b->dtype && a->count == b->count && a->role == b->role &&
         a->dist == b->dist && a->a == b->a && a->b == b->b;
}

static bool matches(const pool_set *p, const ks_workload *work) {
  if (!p->bufs || p->lent || p->nkey != work->buffers.len)
    return false;
  for (size_t i = 0; i < p->nkey; i++)
    if (!same_spec(&p->key[i], &work->buffers.items[i]))
      return false;
  return true;
}

static size_t device_bytes(const wk_buffers *b) {
  size_t n = 0;
  for (size_t i = 0; i < b->len; i++) {
    const wk_buffer *x = &b->items[i];
    n += 2 * WK_GUARD + x->bytes + x->after + (x->pristine ? x->bytes : 0) +
         (x->alt_pristine ? x->bytes : 0);
  }
  return n;
}

static void drop(wk_state *w, pool_set *p) {
  if (p->bufs) {
    wk_buffers_free(w, p->bufs);
    free(p->bufs);
  }
  free(p->key);
  memset(p, 0, sizeof *p);
}

static bool any_idle(const wk_pool *pool) {
  for (int i = 0; i < POOL_SETS; i++)
    if (pool->sets[i].bufs && !pool->sets[i].lent)
      return true;
  return false;
}

/* The device memory the pool may hold: a quarter of the device's. */
static size_t cap_bytes(const wk_state *w) {
  return w->info.memory_bytes ? (size_t)(w->info.memory_bytes / 4) : (size_t)4 << 30;
}

int wk_pool_acquire(wk_state *w, ks_arena *arena, const ks_workload *work, wk_buffers **out,
                    wk_outcome *outcome) {
  if (!w->pool && !(w->pool = calloc(1, sizeof *w->pool)))
    return -1;
  wk_pool *pool = w->pool;
  pool->clock++;
  for (int i = 0; i < POOL_SETS; i++) {
    pool_set *p = &pool->sets[i];
    if (matches(p, work)) {
      wk_buffers_bind(p->bufs, work);
      p->lent = true;
      p->used = pool->clock;
      *out = p->bufs;
      return 0;
    }
  }
  wk_buffers *b = ks_xcalloc(1, sizeof *b);
  if (wk_buffers_alloc(w, arena, work, b, outcome)) {
    wk_buffers_free(w, b);
    if (w->dead || !any_idle(pool)) {
      free(b);
      return -1;
    }
    /* Perhaps the kept sets are in the way: drop them and try once more. */
    for (int i = 0; i < POOL_SETS; i++)
      if (!pool->sets[i].lent)
        drop(w, &pool->sets[i]);
    *outcome = (wk_outcome){KS_RUN_OK, NULL, NULL};
    if (wk_buffers_alloc(w, arena, work, b, outcome)) {
      wk_buffers_free(w, b);
      free(b);
      return -1;
    }
  }
  *out = b;
  return 0;
}

static pool_set *find(wk_pool *pool, const wk_buffers *b) {
  for (int i = 0; pool && i < POOL_SETS; i++)
    if (pool->sets[i].bufs == b)
      return &pool->sets[i];
  return NULL;
}

void wk_pool_release(wk_state *w, wk_buffers *b, bool keep) {
  if (!b)
    return;
  wk_pool *pool = w->pool;
  pool_set *p = find(pool, b);
  size_t bytes = device_bytes(b);
  if (!keep || !pool || bytes > cap_bytes(w)) {
    if (p)
      drop(w, p);
    else {
      wk_buffers_free(w, b);
      free(b);
    }
    return;
  }
  if (p) {
    p->lent = false;
    p->device_bytes = bytes; /* alternate inputs may have come since */
    return;
  }
  /* A new set: room made by dropping the least recently used. */
  for (;;) {
    size_t held = 0;
    int empty = -1, victim = -1;
    for (int i = 0; i < POOL_SETS; i++) {
      pool_set *s = &pool->sets[i];
      if (!s->bufs) {
        if (empty < 0)
          empty = i;
        continue;
      }
      held += s->device_bytes;
      if (!s->lent && (victim < 0 || s->used < pool->sets[victim].used))
        victim = i;
    }
    if (empty >= 0 && held + bytes <= cap_bytes(w)) {
      pool_set *s = &pool->sets[empty];
      s->bufs = b;
      s->nkey = b->len;
      s->key = ks_xcalloc(b->len ? b->len : 1, sizeof *s->key);
      for (size_t i = 0; i < b->len; i++) {
        s->key[i] = *b->items[i].spec;
        /* The request's memory; not part of the key (a captured buffer's
         * file is checked when it is filled, buffers.c). */
        s->key[i].name = s->key[i].file = s->key[i].expect_file = NULL;
      }
      s->device_bytes = bytes;
      s->used = pool->clock;
      return;
    }
    if (victim < 0) {
      wk_buffers_free(w, b);
      free(b);
      return;
    }
    drop(w, &pool->sets[victim]);
  }
}

void wk_pool_clear(wk_state *w) {
  if (!w->pool)
    return;
  for (int i = 0; i < POOL_SETS; i++)
    drop(w, &w->pool->sets[i]);
  free(w->pool);
  w->pool = NULL;
}
