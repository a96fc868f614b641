/* search_ranks: one search played in step by the ranks of an mpirun job
 * (optimize --mpi); ks_search.h's ks_search_ranks says what each rank does.
 *
 * The messages, all JSON, between rank 0 and each other rank, numbered
 * (control << 16 | step) so that a rank running ahead is never confused:
 *   step 0, control (rank 0 to all): the kernel and the search's state (its
 *     nodes with their evaluations, the round to go on from), or the end;
 *   step 1 (to rank 0): whether the rank takes part (it has the kernel);
 *   step 2 (to all): the ranks taking part;
 *   then per round, two exchanges: each rank's proposals for the jobs it
 *   owns, and from rank 0 everyone's, or the order to stop (only rank 0
 *   reads the clock and the budgets); each rank's evaluations of the
 *   children it judged, and from rank 0 all of them in the children's order.
 * Every rank makes the same nodes from the same messages in the same order,
 * so the islands, the archive and the beam stay the same everywhere and the
 * search is the one a single process makes with the same seed.
 *
 * A rank that sends nothing within the cluster's timeout (or says it
 * failed) is lost: from then on rank 0 makes that rank's proposals and
 * judges its children itself (the same proposals, since the random draws
 * are the round's and the island's), and says so once. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ks_eval_json.h"
#include "search_int.h"

enum { STEP_CONTROL = 0, STEP_JOIN = 1, STEP_START = 2, STEP_FIRST_ROUND = 3 };

/* What a rank judged of a round, kept until it is sent. */
typedef struct rank_share {
  ks_node **nodes;         /* the round's children to judge, in order */
  size_t n;
  cJSON **evals;           /* per child: its evaluation, or NULL */
  const char **logs;       /* per child: the compile log, NULL if none */
  int *device, *worker;
  ks_arena *arena;
} rank_share;

static unsigned tag_of(unsigned control, unsigned step) { return control << 16 | step; }

static cJSON *str_or_null(const char *s) { return s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

static const char *get_str(cJSON *o, const char *key, ks_arena *a) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? ks_arena_strdup(a, v->valuestring) : NULL;
}

static double get_num(cJSON *o, const char *key) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool get_bool(cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static long index_of(const search_state *st, const ks_node *n) {
  for (size_t i = 0; n && i < st->res->nodes.len; i++)
    if (st->res->nodes.items[i] == n)
      return (long)i;
  return -1;
}

static ks_node *node_at(const search_state *st, double index) {
  if (index < 0 || index >= (double)st->res->nodes.len)
    return NULL;
  return st->res->nodes.items[(size_t)index];
}

static cJSON *variant_json(const ks_variant *v) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "source", str_or_null(v->source));
  cJSON_AddItemToObject(o, "kernel_name", str_or_null(v->kernel_name));
  cJSON_AddItemToObject(o, "grid", str_or_null(v->grid));
  cJSON_AddItemToObject(o, "block", str_or_null(v->block));
  cJSON_AddItemToObject(o, "smem", str_or_null(v->smem));
  cJSON_AddItemToObject(o, "file", str_or_null(v->file));
  cJSON *req = cJSON_AddArrayToObject(o, "requires");
  for (size_t i = 0; i < v->requires.len; i++)
    cJSON_AddItemToArray(req, cJSON_CreateString(v->requires.items[i]));
  return o;
}

static void variant_from(cJSON *o, ks_arena *a, ks_variant *v) {
  *v = (ks_variant){.source = get_str(o, "source", a), .kernel_name = get_str(o, "kernel_name", a),
                    .grid = get_str(o, "grid", a), .block = get_str(o, "block", a),
                    .smem = get_str(o, "smem", a), .file = get_str(o, "file", a)};
  cJSON *req = cJSON_GetObjectItemCaseSensitive(o, "requires"), *r;
  cJSON_ArrayForEach(r, req) if (cJSON_IsString(r))
      *ks_array_push(a, &v->requires) = ks_arena_strdup(a, r->valuestring);
}

/* Every finite number written with 17 digits: cJSON's own printing keeps
 * 15 when they read back "close enough", and a speedup that lost its last
 * bit would be stored differently from one judged in the same process. */
static void exact_numbers(cJSON *o) {
  for (cJSON *c = o ? o->child : NULL; c; c = c->next) {
    if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
      char num[32];
      snprintf(num, sizeof num, "%.17g", c->valuedouble);
      char *text = cJSON_malloc(strlen(num) + 1);
      if (!text)
        abort();
      strcpy(text, num);
      c->type = cJSON_Raw;
      c->valuestring = text;
    } else {
      exact_numbers(c);
    }
  }
}

static char *print_exact(cJSON *o) {
  exact_numbers(o);
  char *t = cJSON_PrintUnformatted(o);
  if (!t)
    abort(); /* out of memory, as ks_xmalloc does */
  return t;
}

/* A message's text, in the arena (cJSON's own freed). */
static const char *print(ks_arena *a, cJSON *o, size_t *len) {
  char *t = print_exact(o);
  cJSON_Delete(o);
  if (!t)
    abort(); /* out of memory, as ks_xmalloc does */
  const char *s = ks_arena_strdup(a, t);
  free(t);
  *len = strlen(s) + 1;
  return s;
}

static cJSON *parse(search_state *st, const void *data, size_t len, const char *what) {
  cJSON *o = data && len ? cJSON_ParseWithLength(data, len) : NULL;
  if (!o)
    ks_fail(st->s->ctx, "%s: a message of the ranks (%s) cannot be read", st->s->kernel, what);
  return o;
}

static const char *host_of(const ks_search_ranks *r, int rank) {
  const char *h = r->host ? r->host(r->self, rank) : NULL;
  return h ? h : "?";
}

static cJSON *live_json(const search_state *st) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < st->nlive; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(st->live[i]));
  return a;
}

static void live_from(search_state *st, cJSON *o) {
  cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "live"), *v;
  st->nlive = 0;
  st->live = ks_arena_alloc(st->arena, ((size_t)st->ranks->size + 1) * sizeof *st->live);
  cJSON_ArrayForEach(v, a) if (cJSON_IsNumber(v) && st->nlive < (size_t)st->ranks->size)
      st->live[st->nlive++] = v->valueint;
}

static bool is_live(const search_state *st, int rank) {
  for (size_t i = 0; i < st->nlive; i++)
    if (st->live[i] == rank)
      return true;
  return false;
}

/* Rank 0: `rank` is lost for the rest of the run. */
static void lose(search_state *st, int rank, const char *why) {
  ks_search_ranks *r = st->ranks;
  if (rank <= 0 || rank >= r->size || r->lost[rank])
    return;
  r->lost[rank] = true;
  size_t k = 0;
  for (size_t i = 0; i < st->nlive; i++)
    if (st->live[i] != rank)
      st->live[k++] = st->live[i];
  st->nlive = k;
  ks_warn(st->s->ctx, "%s: rank %d (%s) is lost (%s): rank 0 takes over its share; %zu rank%s on",
          st->s->kernel, rank, host_of(r, rank), why, st->nlive, st->nlive == 1 ? " goes" : "s go");
}

/* Rank 0: the ranks the cluster found silent since the last look. */
static void take_lost(search_state *st) {
  ks_search_ranks *r = st->ranks;
  int *lost = ks_arena_alloc(st->arena, (size_t)r->size * sizeof *lost);
  size_t n = r->take_lost ? r->take_lost(r->self, lost) : 0;
  for (size_t i = 0; i < n; i++)
    lose(st, lost[i], "silent past the timeout");
}

/* The owner of job or child k: the k-th live rank, cyclically. */
static int owner(const search_state *st, size_t k) { return st->live[k % st->nlive]; }
static int owner_was(const int *live, size_t nlive, size_t k) { return live[k % nlive]; }

static const ks_node *node_by_parent(const search_state *st, const ks_node *n) {
  for (size_t i = 0; n->parent && i < st->res->nodes.len; i++)
    if (st->res->nodes.items[i]->id == n->parent)
      return st->res->nodes.items[i];
  return NULL;
}

static int step_ok(search_state *st) {
  if (st->step >= 0xfffe)
    return ks_fail(st->s->ctx, "%s: too many rounds for a search over ranks (at most %u)",
                   st->s->kernel, (0xfffe - STEP_FIRST_ROUND) / 4);
  return 0;
}

/* Rank 0: everyone's message of this step; datas[r] NULL for a rank lost
 * (then noted). */
static int gather(search_state *st, const char *mine, size_t len, const void **datas,
                  size_t *lens) {
  ks_search_ranks *r = st->ranks;
  if (step_ok(st) || r->gather(r->self, st->s->ctx, tag_of(st->control, st->step), mine, len,
                               st->arena, datas, lens))
    return -1;
  if (r->rank == 0) {
    take_lost(st);
    for (size_t i = 0; i < st->nlive; i++)
      if (st->live[i] > 0 && !datas[st->live[i]])
        lose(st, st->live[i], "no message");
  }
  return 0;
}

/* Rank 0's side of an exchange: every rank's message, and the ranks that
 * took part when it began (the owners of the jobs and children, whatever
 * was lost meanwhile). */
typedef struct gathered {
  const void **datas;
  size_t *lens;
  int *was;
  size_t nwas;
} gathered;

static int gather_all(search_state *st, gathered *g) {
  ks_arena *a = st->arena;
  size_t n = (size_t)st->ranks->size;
  g->datas = ks_arena_alloc(a, n * sizeof *g->datas);
  g->lens = ks_arena_alloc(a, n * sizeof *g->lens);
  g->nwas = st->nlive;
  g->was = ks_arena_alloc(a, (g->nwas + 1) * sizeof *g->was);
  memcpy(g->was, st->live, g->nwas * sizeof *g->was);
  return gather(st, "{}", 3, g->datas, g->lens);
}

/* Rank 0 sends `text`; another rank receives it (NULL with the reason set
 * when rank 0 is lost or aborted the search). */
static cJSON *bcast(search_state *st, const char *text, size_t len) {
  ks_search_ranks *r = st->ranks;
  const void *data = text;
  size_t n = len;
  int rc = r->bcast(r->self, st->s->ctx, tag_of(st->control, st->step + 1), &data, &n, st->arena);
  st->step += 2;
  if (rc < 0)
    return NULL;
  if (rc > 0) {
    ks_fail(st->s->ctx, "%s: rank 0 is lost; this rank stops (the command with --resume, under "
                        "mpirun, goes on where the search stopped)",
            st->s->kernel);
    return NULL;
  }
  cJSON *o = parse(st, data, n, "rank 0's");
  if (o && r->rank > 0 && cJSON_GetObjectItemCaseSensitive(o, "abort")) {
    ks_fail(st->s->ctx, "%s: rank 0's search failed: %s", st->s->kernel,
            get_str(o, "abort", st->arena));
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* ---- the state at the start ---------------------------------------------- */

static cJSON *node_json(const search_state *st, const ks_node *n) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "parent", (double)index_of(st, node_by_parent(st, n)));
  cJSON_AddItemToObject(o, "variant", variant_json(&n->variant));
  cJSON_AddBoolToObject(o, "is_template", n->is_template);
  cJSON_AddItemToObject(o, "proposer", str_or_null(n->proposer));
  cJSON_AddItemToObject(o, "techniques", str_or_null(n->techniques));
  cJSON_AddItemToObject(o, "plan", str_or_null(n->plan));
  cJSON_AddNumberToObject(o, "round", n->round);
  cJSON_AddNumberToObject(o, "island", n->island);
  if (n->evaluated) {
    cJSON *e = cJSON_AddObjectToObject(o, "eval");
    cJSON_AddStringToObject(e, "verdict", ks_verdict_name(n->verdict));
    cJSON_AddNumberToObject(e, "speedup", n->speedup);
    cJSON_AddNumberToObject(e, "speedup_low", n->speedup_low);
    cJSON_AddNumberToObject(e, "median_ms", n->median_ms);
    cJSON_AddNumberToObject(e, "registers", n->registers);
    cJSON_AddNumberToObject(e, "bw_fraction", n->bw_fraction);
    cJSON_AddNumberToObject(e, "flop_fraction", n->flop_fraction);
    cJSON_AddItemToObject(e, "reason", str_or_null(n->reason));
  }
  return o;
}

static int node_from(search_state *st, cJSON *o) {
  ks_arena *a = st->arena;
  ks_node *n = ks_arena_alloc(a, sizeof *n);
  n->id = -(long long)(st->res->nodes.len + 1); /* rank 0's store numbers them */
  const ks_node *parent = node_at(st, get_num(o, "parent"));
  n->parent = parent ? parent->id : 0;
  variant_from(cJSON_GetObjectItemCaseSensitive(o, "variant"), a, &n->variant);
  n->is_template = get_bool(o, "is_template");
  n->proposer = get_str(o, "proposer", a);
  n->techniques = get_str(o, "techniques", a);
  if (!n->techniques)
    n->techniques = "";
  n->plan = get_str(o, "plan", a);
  n->hash = ks_variant_hash(a, &n->variant);
  n->round = (int)get_num(o, "round");
  n->island = (int)get_num(o, "island");
  *ks_array_push(a, &st->res->nodes) = n;
  cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "eval");
  if (!e)
    return 0;
  const char *verdict = get_str(e, "verdict", a);
  int v = verdict ? ks_verdict_from_name(verdict) : -1;
  if (v < 0)
    return ks_fail(st->s->ctx, "%s: rank 0 sent a node with no verdict", st->s->kernel);
  ks_eval ev = {.verdict = (ks_verdict)v, .speedup = get_num(e, "speedup"),
                .speedup_low = get_num(e, "speedup_low"), .cand_median_ms = get_num(e, "median_ms"),
                .cand_registers = (int)get_num(e, "registers"),
                .cand_bw_fraction = get_num(e, "bw_fraction"),
                .cand_flop_fraction = get_num(e, "flop_fraction"), .reason = get_str(e, "reason", a)};
  st->res->evaluated++;
  ks_search_note(st, n, &ev);
  return 0;
}

int ks_search_ranks_begin(search_state *st) {
  ks_search_ranks *r = st->ranks;
  ks_search *s = st->s;
  ks_arena *a = st->arena;
  if (r->rank == 0) {
    if (!r->lost)
      r->lost = ks_arena_alloc(&r->arena, (size_t)r->size * sizeof *r->lost);
    st->control = ++r->controls;
    st->step = STEP_CONTROL;
    st->live = ks_arena_alloc(a, ((size_t)r->size + 1) * sizeof *st->live);
    for (int i = 0; i < r->size; i++)
      if (!r->lost[i])
        st->live[st->nlive++] = i;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", s->kernel);
    cJSON_AddNumberToObject(o, "first_round", st->first_round);
    cJSON_AddNumberToObject(o, "baseline_ms", st->res->baseline_ms);
    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    for (size_t i = 0; i < st->res->nodes.len; i++)
      cJSON_AddItemToArray(nodes, node_json(st, st->res->nodes.items[i]));
    size_t len;
    const char *text = print(a, o, &len);
    const void *data = text;
    if (r->bcast(r->self, s->ctx, tag_of(st->control, STEP_CONTROL), &data, &len, a))
      return -1;
    /* Who takes part: those that have the kernel. */
    st->step = STEP_JOIN;
    gathered g;
    if (gather_all(st, &g))
      return -1;
    size_t k = 0;
    for (size_t i = 0; i < st->nlive; i++) {
      int rank = st->live[i];
      cJSON *j = rank ? parse(st, g.datas[rank], g.lens[rank], "a rank's answer") : NULL;
      if (rank && (!j || !get_bool(j, "join"))) {
        ks_warn(s->ctx, "%s: rank %d (%s) does not take part in this search: %s", s->kernel, rank,
                host_of(r, rank), j ? get_str(j, "why", a) : "its answer cannot be read");
        cJSON_Delete(j);
        continue;
      }
      cJSON_Delete(j);
      st->live[k++] = rank;
    }
    st->nlive = k;
    o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "live", live_json(st));
    text = print(a, o, &len);
    data = text;
    if (r->bcast(r->self, s->ctx, tag_of(st->control, STEP_START), &data, &len, a))
      return -1;
    st->step = STEP_FIRST_ROUND;
    return 0;
  }

  /* Another rank: the state that ks_search_ranks_next took. */
  if (!r->pending) {
    const char *kernel;
    if (ks_search_ranks_next(r, s->ctx, a, &kernel))
      return -1;
    if (!kernel)
      return ks_fail(s->ctx, "%s: rank 0 has no more searches", s->kernel);
  }
  st->control = r->controls;
  cJSON *o = parse(st, r->pending, r->pending_len, "the search's state");
  r->pending = NULL;
  if (!o)
    return -1;
  const char *kernel = get_str(o, "kernel", a);
  if (!kernel || strcmp(kernel, s->kernel)) {
    cJSON_Delete(o);
    return ks_fail(s->ctx, "%s: rank 0 searches %s", s->kernel, kernel ? kernel : "nothing");
  }
  st->first_round = (unsigned)get_num(o, "first_round");
  st->res->baseline_ms = get_num(o, "baseline_ms");
  cJSON *nodes = cJSON_GetObjectItemCaseSensitive(o, "nodes"), *n;
  int rc = 0;
  cJSON_ArrayForEach(n, nodes) if (!rc) rc = node_from(st, n);
  cJSON_Delete(o);
  if (rc)
    return -1;
  st->evaluated_before = st->res->evaluated;
  st->resumed = true;
  st->seed = st->res->nodes.len ? st->res->nodes.items[0] : NULL;
  for (size_t i = 0; i < st->res->nodes.len; i++)
    if (!strcmp(st->res->nodes.items[i]->proposer ? st->res->nodes.items[i]->proposer : "",
                "seed"))
      st->seed = st->res->nodes.items[i];
  if (!st->seed)
    return ks_fail(s->ctx, "%s: rank 0 sent no seed", s->kernel);
  st->step = STEP_JOIN;
  if (gather(st, "{\"join\":true}", 14, NULL, NULL))
    return -1;
  st->step = STEP_START - 1;
  cJSON *start = bcast(st, NULL, 0);
  if (!start)
    return -1;
  live_from(st, start);
  cJSON_Delete(start);
  st->step = STEP_FIRST_ROUND;
  if (!is_live(st, r->rank))
    return ks_fail(s->ctx, "%s: rank 0 counts this rank as lost; it stops", s->kernel);
  return 0;
}

int ks_search_ranks_next(ks_search_ranks *r, ks_ctx *ctx, ks_arena *arena, const char **kernel) {
  *kernel = NULL;
  const void *data = NULL;
  size_t len = 0;
  unsigned control = r->controls + 1;
  int rc = r->bcast(r->self, ctx, tag_of(control, STEP_CONTROL), &data, &len, &r->arena);
  if (rc < 0)
    return -1;
  if (rc > 0)
    return ks_fail(ctx, "rank 0 is lost; this rank stops (the command with --resume, under "
                        "mpirun, goes on where the search stopped)");
  r->controls = control;
  cJSON *o = data && len ? cJSON_ParseWithLength(data, len) : NULL;
  if (!o)
    return ks_fail(ctx, "rank 0's control message cannot be read");
  cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kernel");
  if (!get_bool(o, "end") && cJSON_IsString(k)) {
    *kernel = ks_arena_strdup(arena, k->valuestring);
    r->pending = data;
    r->pending_len = len;
  }
  cJSON_Delete(o);
  return 0;
}

int ks_search_ranks_decline(ks_search_ranks *r, ks_ctx *ctx, const char *why) {
  r->pending = NULL;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "join", false);
  cJSON_AddStringToObject(o, "why", why ? why : "it has no such kernel");
  char *t = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  int rc = r->gather(r->self, ctx, tag_of(r->controls, STEP_JOIN), t, strlen(t) + 1, &r->arena,
                     NULL, NULL);
  free(t);
  return rc;
}

int ks_search_ranks_decline_all(ks_search_ranks *r, ks_ctx *ctx, ks_arena *arena,
                                const char *why) {
  for (;;) {
    const char *kernel;
    if (ks_search_ranks_next(r, ctx, arena, &kernel))
      return -1;
    if (!kernel)
      return 0;
    if (ks_search_ranks_decline(r, ctx, why))
      return -1;
  }
}

int ks_search_ranks_end(ks_search_ranks *r, ks_ctx *ctx) {
  if (!r || r->rank != 0 || r->ended || r->size < 2)
    return 0;
  r->ended = true;
  const char *text = "{\"end\":true}";
  const void *data = text;
  size_t len = strlen(text) + 1;
  return r->bcast(r->self, ctx, tag_of(++r->controls, STEP_CONTROL), &data, &len, &r->arena);
}

void ks_search_ranks_release(ks_search_ranks *r) { ks_arena_release(&r->arena); }

void ks_search_ranks_abort(search_state *st) {
  ks_search_ranks *r = st->ranks;
  if (r->rank != 0)
    return;
  ks_ctx quiet;
  ks_ctx_init(&quiet, st->s->ctx->prog);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "abort", st->s->ctx->error);
  size_t len;
  const char *text = print(st->arena, o, &len);
  const void *data = text;
  r->bcast(r->self, &quiet, tag_of(st->control, st->step + 1), &data, &len, st->arena);
  ks_ctx_release(&quiet);
}

/* ---- a round's proposals ----------------------------------------------- */

static cJSON *props_json(const search_state *st, const ks_proposals *props) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < props->len; i++) {
    const ks_proposal *p = &props->items[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "variant", variant_json(&p->variant));
    cJSON_AddBoolToObject(o, "is_template", p->is_template);
    cJSON_AddItemToObject(o, "technique", str_or_null(p->technique));
    cJSON_AddItemToObject(o, "proposer", str_or_null(p->proposer));
    cJSON_AddItemToObject(o, "plan", str_or_null(p->plan));
    cJSON_AddNumberToObject(o, "parent", (double)index_of(st, p->parent));
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

static void props_from(search_state *st, cJSON *arr, ks_proposals *out) {
  cJSON *o;
  cJSON_ArrayForEach(o, arr) {
    ks_proposal *p = ks_array_push(st->arena, out);
    variant_from(cJSON_GetObjectItemCaseSensitive(o, "variant"), st->arena, &p->variant);
    p->is_template = get_bool(o, "is_template");
    p->technique = get_str(o, "technique", st->arena);
    p->proposer = get_str(o, "proposer", st->arena);
    p->plan = get_str(o, "plan", st->arena);
    p->parent = node_at(st, get_num(o, "parent"));
  }
}

int ks_search_ranks_round(search_state *st, ks_search_job *jobs, size_t njobs, ks_nodes *out,
                          search_ints *owners) {
  ks_search_ranks *r = st->ranks;
  ks_arena *a = st->arena;
  ks_proposals *props = ks_arena_alloc(a, (njobs + 1) * sizeof *props);
  bool *have = ks_arena_alloc(a, (njobs + 1) * sizeof *have);
  /* Only rank 0 reads the clock and the budgets; its answer reaches the
   * others with the proposals. */
  bool go = r->rank != 0 || ks_search_budget_left(st);
  for (size_t j = 0; go && j < njobs; j++)
    if (owner(st, j) == r->rank) {
      if (ks_search_raw(st, &jobs[j], &props[j]))
        return -1;
      have[j] = true;
    }
  cJSON *reply;
  if (r->rank == 0) {
    gathered g;
    if (gather_all(st, &g))
      return -1;
    /* The proposals of the ranks that sent theirs; a lost rank's jobs
     * made here (the same draws make the same proposals). */
    for (size_t i = 0; go && i < g.nwas; i++) {
      int rank = g.was[i];
      cJSON *m = rank && g.datas[rank] ? parse(st, g.datas[rank], g.lens[rank], "proposals") : NULL;
      cJSON *jj = m ? cJSON_GetObjectItemCaseSensitive(m, "jobs") : NULL, *e;
      cJSON_ArrayForEach(e, jj) {
        double j = get_num(e, "job");
        if (j >= 0 && j < (double)njobs && !have[(size_t)j]) {
          props_from(st, cJSON_GetObjectItemCaseSensitive(e, "props"), &props[(size_t)j]);
          have[(size_t)j] = true;
        }
      }
      cJSON_Delete(m);
    }
    for (size_t j = 0; go && j < njobs; j++)
      if (!have[j]) {
        if (ks_search_raw(st, &jobs[j], &props[j]))
          return -1;
        have[j] = true;
      }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "stop", !go);
    cJSON_AddBoolToObject(o, "budget_hit", st->res->budget_hit);
    cJSON_AddBoolToObject(o, "time_budget_hit", st->res->time_budget_hit);
    cJSON_AddItemToObject(o, "live", live_json(st));
    cJSON *all = cJSON_AddArrayToObject(o, "jobs");
    for (size_t j = 0; go && j < njobs; j++)
      cJSON_AddItemToArray(all, props_json(st, &props[j]));
    size_t len;
    const char *text = print(a, o, &len);
    if (!bcast(st, text, len))
      return -1;
  } else {
    cJSON *o = cJSON_CreateObject();
    cJSON *mine = cJSON_AddArrayToObject(o, "jobs");
    for (size_t j = 0; j < njobs; j++)
      if (have[j]) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "job", (double)j);
        cJSON_AddItemToObject(e, "props", props_json(st, &props[j]));
        cJSON_AddItemToArray(mine, e);
      }
    size_t len;
    const char *text = print(a, o, &len);
    if (gather(st, text, len, NULL, NULL) || !(reply = bcast(st, NULL, 0)))
      return -1;
    go = !get_bool(reply, "stop");
    st->res->budget_hit |= get_bool(reply, "budget_hit");
    st->res->time_budget_hit |= get_bool(reply, "time_budget_hit");
    live_from(st, reply);
    cJSON *all = cJSON_GetObjectItemCaseSensitive(reply, "jobs"), *e;
    size_t j = 0;
    cJSON_ArrayForEach(e, all) if (j < njobs) {
      props[j].len = 0;
      props_from(st, e, &props[j++]);
    }
    cJSON_Delete(reply);
    if (go && j != njobs)
      return ks_fail(st->s->ctx, "%s: rank 0 sent %zu proposal lists for %zu jobs",
                     st->s->kernel, j, njobs);
  }
  if (!go)
    return 1;
  for (size_t j = 0; j < njobs; j++) {
    size_t before = out->len;
    if (ks_search_select(st, &jobs[j], &props[j], out) < 0)
      return -1;
    for (size_t k = before; k < out->len; k++)
      *ks_array_push(a, owners) = jobs[j].island;
  }
  return 0;
}

/* ---- a round's evaluations --------------------------------------------- */

int ks_search_ranks_keep(search_state *st, ks_node *node, const ks_eval *e) {
  rank_share *sh = st->share;
  for (size_t i = 0; i < sh->n; i++)
    if (sh->nodes[i] == node && !sh->evals[i]) {
      sh->evals[i] = cJSON_CreateObject();
      ks_eval_json_add(sh->evals[i], e, KS_EVAL_JSON_COMPLETE | KS_EVAL_JSON_VARIANT);
      sh->logs[i] = e->compile_log ? ks_arena_strdup(sh->arena, e->compile_log) : NULL;
      sh->device[i] = e->device;
      sh->worker[i] = e->worker;
    }
  /* Tests: KERNELSMITH_FAULTS=rank1_kill:N kills rank 1 (SIGKILL, as a
   * node that fails would) after its Nth evaluation in a round's share,
   * before sending it; rank0_kill, rank 0 (before storing it). */
  char site[32];
  snprintf(site, sizeof site, "rank%d_kill", st->ranks->rank);
  if (ks_fault(st->s->ctx, site))
    raise(SIGKILL);
  return 0;
}

/* Judges `nodes` here, keeping each evaluation (JSON) in the share. */
static int judge_here(search_state *st, ks_node **nodes, size_t n, rank_share *sh) {
  ks_arena *a = st->arena;
  *sh = (rank_share){.nodes = nodes, .n = n, .arena = a};
  sh->evals = ks_arena_alloc(a, (n + 1) * sizeof *sh->evals);
  sh->logs = ks_arena_alloc(a, (n + 1) * sizeof *sh->logs);
  sh->device = ks_arena_alloc(a, (n + 1) * sizeof *sh->device);
  sh->worker = ks_arena_alloc(a, (n + 1) * sizeof *sh->worker);
  if (!n)
    return 0;
  st->share = sh;
  int rc = ks_search_eval_batch(st, nodes, n);
  st->share = NULL;
  return rc;
}

static void share_free(rank_share *sh) {
  for (size_t i = 0; i < sh->n; i++)
    cJSON_Delete(sh->evals[i]);
}

/* One child's evaluation in a message; takes *eval. */
static cJSON *eval_entry(size_t k, cJSON **eval, const char *log, int rank, int device,
                         int worker) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "k", (double)k);
  cJSON_AddItemToObject(o, "eval", *eval);
  *eval = NULL;
  cJSON_AddItemToObject(o, "log", str_or_null(log));
  cJSON_AddNumberToObject(o, "rank", rank);
  cJSON_AddNumberToObject(o, "device", device);
  cJSON_AddNumberToObject(o, "worker", worker);
  return o;
}

/* Commits the evaluations of `reply` ({"evals": [...]}) in order. */
static int commit_all(search_state *st, cJSON *evals, ks_node **todo, size_t ntodo) {
  cJSON *o;
  cJSON_ArrayForEach(o, evals) {
    double k = get_num(o, "k");
    if (k < 0 || k >= (double)ntodo)
      return ks_fail(st->s->ctx, "%s: an evaluation of the ranks names no child", st->s->kernel);
    char *text = print_exact(cJSON_GetObjectItemCaseSensitive(o, "eval"));
    ks_eval e;
    int rc = text ? ks_eval_from_json(st->s->ctx, text, st->arena, &e) : -1;
    free(text);
    if (rc)
      return -1;
    e.compile_log = get_str(o, "log", st->arena);
    e.device = (int)get_num(o, "device");
    e.worker = (int)get_num(o, "worker");
    e.rank = (int)get_num(o, "rank");
    e.host = st->ranks->host ? st->ranks->host(st->ranks->self, e.rank) : NULL;
    if (ks_search_commit(st, todo[(size_t)k], &e))
      return -1;
  }
  return 0;
}

int ks_search_ranks_judge(search_state *st, ks_node **nodes, size_t n) {
  ks_search_ranks *r = st->ranks;
  ks_search *s = st->s;
  ks_arena *a = st->arena;
  /* What is judged this round, the same list everywhere: --max-evals cuts
   * it as the one-process loop would. */
  ks_node **todo = ks_arena_alloc(a, (n + 1) * sizeof *todo);
  size_t ntodo = 0;
  for (size_t i = 0; i < n; i++)
    if (!nodes[i]->evaluated)
      todo[ntodo++] = nodes[i];
  if (s->opts.max_evals) {
    size_t left = st->res->evaluated < s->opts.max_evals ? s->opts.max_evals - st->res->evaluated
                                                         : 0;
    if (ntodo > left) {
      ntodo = left;
      st->res->budget_hit = true;
    }
  }
  size_t *index = ks_arena_alloc(a, (ntodo + 1) * sizeof *index);
  ks_node **mine = ks_arena_alloc(a, (ntodo + 1) * sizeof *mine);
  size_t nmine = 0;
  for (size_t k = 0; k < ntodo; k++)
    if (owner(st, k) == r->rank) {
      index[nmine] = k;
      mine[nmine++] = todo[k];
    }
  rank_share sh;
  int rc = judge_here(st, mine, nmine, &sh);
  cJSON *o = cJSON_CreateObject();
  cJSON *evals = cJSON_AddArrayToObject(o, "evals");
  for (size_t i = 0; i < nmine; i++)
    if (sh.evals[i])
      cJSON_AddItemToArray(evals, eval_entry(index[i], &sh.evals[i], sh.logs[i], r->rank,
                                             sh.device[i], sh.worker[i]));
  share_free(&sh);
  if (rc) {
    if (r->rank == 0) {
      cJSON_Delete(o);
      return -1;
    }
    cJSON_AddStringToObject(o, "failed", s->ctx->error); /* rank 0 takes it over */
  }
  cJSON_AddBoolToObject(o, "budget_hit", st->res->budget_hit);
  cJSON_AddBoolToObject(o, "time_budget_hit", st->res->time_budget_hit);

  if (r->rank > 0) {
    size_t len;
    const char *text = print(a, o, &len);
    if (gather(st, text, len, NULL, NULL) || rc)
      return -1;
    cJSON *reply = bcast(st, NULL, 0);
    if (!reply)
      return -1;
    st->res->budget_hit |= get_bool(reply, "budget_hit");
    st->res->time_budget_hit |= get_bool(reply, "time_budget_hit");
    live_from(st, reply);
    rc = commit_all(st, cJSON_GetObjectItemCaseSensitive(reply, "evals"), todo, ntodo);
    cJSON_Delete(reply);
    return rc;
  }

  /* Rank 0: everyone's evaluations, in the children's order. */
  gathered g;
  if (gather_all(st, &g)) {
    cJSON_Delete(o);
    return -1;
  }
  cJSON **by_child = ks_arena_alloc(a, (ntodo + 1) * sizeof *by_child);
  cJSON **msgs = ks_arena_alloc(a, (g.nwas + 1) * sizeof *msgs);
  cJSON *e;
  cJSON_ArrayForEach(e, evals) by_child[(size_t)get_num(e, "k")] = e;
  for (size_t i = 0; i < g.nwas; i++) {
    int rank = g.was[i];
    if (!rank || !g.datas[rank])
      continue;
    cJSON *m = msgs[i] = parse(st, g.datas[rank], g.lens[rank], "evaluations");
    if (!m)
      continue;
    if (cJSON_GetObjectItemCaseSensitive(m, "failed"))
      lose(st, rank, get_str(m, "failed", a));
    st->res->budget_hit |= get_bool(m, "budget_hit");
    st->res->time_budget_hit |= get_bool(m, "time_budget_hit");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(m, "evals")) {
      double k = get_num(e, "k");
      if (k >= 0 && k < (double)ntodo && owner_was(g.was, g.nwas, (size_t)k) == rank)
        by_child[(size_t)k] = e;
    }
  }
  /* The children of ranks lost on the way, judged here. */
  ks_node **rest = ks_arena_alloc(a, (ntodo + 1) * sizeof *rest);
  size_t *rest_k = ks_arena_alloc(a, (ntodo + 1) * sizeof *rest_k);
  size_t nrest = 0;
  for (size_t k = 0; k < ntodo; k++) {
    int own = owner_was(g.was, g.nwas, k);
    if (!by_child[k] && own != 0 && !is_live(st, own)) {
      rest_k[nrest] = k;
      rest[nrest++] = todo[k];
    }
  }
  rank_share sh2;
  rc = judge_here(st, rest, nrest, &sh2);
  for (size_t i = 0; i < nrest; i++)
    if (sh2.evals[i]) {
      e = eval_entry(rest_k[i], &sh2.evals[i], sh2.logs[i], 0, sh2.device[i], sh2.worker[i]);
      cJSON_AddItemToArray(evals, e); /* owned by `o` */
      by_child[rest_k[i]] = e;
    }
  share_free(&sh2);
  cJSON *reply = cJSON_CreateObject();
  cJSON *all = cJSON_AddArrayToObject(reply, "evals");
  for (size_t k = 0; k < ntodo; k++)
    if (by_child[k])
      cJSON_AddItemToArray(all, cJSON_Duplicate(by_child[k], true));
  cJSON_AddBoolToObject(reply, "budget_hit", st->res->budget_hit);
  cJSON_AddBoolToObject(reply, "time_budget_hit", st->res->time_budget_hit);
  cJSON_AddItemToObject(reply, "live", live_json(st));
  cJSON *evals_all = cJSON_Duplicate(all, true);
  size_t len;
  const char *text = print(a, reply, &len);
  cJSON_Delete(o);
  for (size_t i = 0; i < g.nwas; i++)
    cJSON_Delete(msgs[i]);
  if (rc || !bcast(st, text, len)) {
    cJSON_Delete(evals_all);
    return -1;
  }
  rc = commit_all(st, evals_all, todo, ntodo);
  cJSON_Delete(evals_all);
  return rc;
}
