/* ks_propose_llm: the LLM proposer behind the search's proposer table.
 *
 * For each parent it asks the planner for plans (one request per child
 * wanted, each slot told to differ), the executor to implement each plan as
 * a variant, and, for pairs the search has measured since (observe), the
 * summarizer for an insight that goes into the optimization memory. Prompts
 * and reply parsing are ks_llm_text.h; the HTTP client is ks_llm.h.
 *
 * Every request and its reply is recorded in the store (llm_calls, keyed by
 * the request's cache key, which holds no credential). The cache mode says
 * whether earlier replies are served from there:
 *   rw      serve a stored reply when there is one, else ask and record;
 *   ro      serve stored replies, ask for the rest, record nothing;
 *   off     always ask; record the calls (the run's log), serve none;
 *   replay  serve stored replies only and never ask: a request with no
 *           stored reply fails ("not in the store"); a run replays offline.
 * Insights persist in the store's memory (kind "insight", about every
 * kernel), so later kernels and later runs read them.
 *
 * Ownership: the caller fills the configuration fields and keeps what they
 * point to alive for the search; the proposer's own state lives in its
 * arena (ks_llm_proposer_release). */
#ifndef KS_PROPOSE_LLM_H
#define KS_PROPOSE_LLM_H

#include <stdbool.h>

#include "ks_llm.h"
#include "ks_llm_text.h"
#include "ks_search.h"
#include "ks_store.h"
#include "ks_target.h"

typedef enum ks_llm_cache_mode {
  KS_LLM_CACHE_RW,
  KS_LLM_CACHE_RO,
  KS_LLM_CACHE_OFF,
  KS_LLM_CACHE_REPLAY,
} ks_llm_cache_mode;

/* "rw", "ro", "off", "replay" -> the mode; -1 for anything else. */
int ks_llm_cache_mode_parse(const char *s);
const char *ks_llm_cache_mode_name(ks_llm_cache_mode m);

/* What the proposer did, for the progress line, the table and the JSON. */
typedef struct ks_llm_proposer_stats {
  unsigned plans, plans_rejected;      /* planner replies */
  unsigned children;                   /* executor replies made into variants */
  unsigned retries;                    /* second tries of children that did not
                                          compile, with the compiler's messages */
  ks_reply_tally executor;             /* executor replies by reason */
  unsigned insights, insights_rejected;
  unsigned cached;                     /* replies served from the store */
  unsigned failed;                     /* requests with no reply (transport,
                                          HTTP, budget, not in the replay store) */
  bool budget_hit;                     /* a budget refused a request */
  const char *last_error;              /* the last failure's sentence */
} ks_llm_proposer_stats;

/* The optimization memory of a run: a bounded queue of insights, oldest
 * first, shared by the run's kernels (one kernel's lessons reach the next).
 * It starts from the store's insights of earlier runs, except in a replay,
 * which rebuilds it from the replayed run's own (so that its prompts are
 * the ones recorded). Owned by the caller; ks_llm_memory_release. */
typedef struct ks_llm_memory {
  KS_ARRAY(ks_prompt_memory) entries;
  unsigned cap;                   /* 0: 32 */
  bool loaded;
  ks_arena arena;
} ks_llm_memory;
void ks_llm_memory_release(ks_llm_memory *m);

typedef struct ks_llm_proposer {
  /* Filled by the caller. */
  ks_llm_client *client;          /* NULL only in replay mode */
  const ks_llm_config *cfg;       /* resolved */
  ks_llm_cache_mode cache;
  ks_store *store;                /* NULL: nothing recorded or served */
  long long run, kernel;          /* the store's ids, for the calls */
  const ks_target *target;
  ks_prompt_device device;
  bool evolve;                    /* show inspirations to the planner */
  unsigned per_parent;            /* plans per parent and draw (0: 2) */
  ks_llm_memory *memory;          /* the run's; required */
  const struct ks_insight *insight; /* what the code shows about the original
                                     (a race): told to the planner; NULL */
  /* Kept by the proposer. */
  ks_llm_proposer_stats stats;
  ks_arena arena;
  void *state;                    /* internal (propose_llm.c) */
} ks_llm_proposer;

ks_proposer ks_llm_proposer_make(ks_llm_proposer *self);

/* The end of a run that used the model: one line per kind of failure its
 * requests met (how many, the status, the server's reason with the key
 * scrubbed), not one per request; the budget's refusals are left to the
 * run's own line. `totals` is the run's client's; `cached` and `failed`
 * sum the run's proposers' stats (failures beyond the client's are replay
 * misses). Returns true when the run asked the model and it answered none
 * of the requests (and the store served none): then the lines are errors,
 * which the run's exit status should show; else warnings. */
bool ks_llm_report_failures(ks_ctx *ctx, const ks_llm_totals *totals, unsigned cached,
                            unsigned failed);
void ks_llm_proposer_release(ks_llm_proposer *self);

#endif
