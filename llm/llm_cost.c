/* Tokens and cost: per-run and per-account tallies the caller owns, and the
 * budget check the client consults before it starts a request. Cost is only
 * known after a reply, so a budget can be overshot by the requests already in
 * flight when it is reached; max_requests counts requests as they start and
 * is never overshot. */
#include <string.h>

#include "llm_internal.h"

void ks_llm_totals_init(ks_llm_totals *t, ks_arena *arena) {
  memset(t, 0, sizeof *t);
  t->arena = arena;
}

ks_llm_tally *ks_llm_totals_account(ks_llm_totals *t, const char *name, bool create) {
  if (!name)
    return NULL;
  /* A run has tens of kernels: a linear search is enough. */
  for (size_t i = 0; i < t->accounts.len; i++)
    if (!strcmp(t->accounts.items[i].name, name))
      return &t->accounts.items[i].tally;
  if (!create)
    return NULL;
  ks_llm_account *acc = ks_array_push(t->arena, &t->accounts);
  acc->name = ks_arena_strdup(t->arena, name);
  return &acc->tally;
}

double ks_llm_cost(const ks_llm_prices *p, long long in, long long out) {
  if (!p || !p->set)
    return 0;
  return ((double)in * p->input_per_mtok + (double)out * p->output_per_mtok) / 1e6;
}

static void tally_add(ks_llm_tally *t, const ks_llm_reply *r) {
  if (r->status == KS_LLM_OVER_BUDGET)
    t->refused++;
  if (r->status != KS_LLM_OK)
    t->failed++;
  t->input_tokens += r->input_tokens;
  t->output_tokens += r->output_tokens;
  t->cost += r->cost;
  t->seconds += r->seconds;
}

/* A run meets few kinds of failure: a linear search is enough. */
static void failure_add(ks_llm_totals *t, const ks_llm_reply *r) {
  for (size_t i = 0; i < t->failures.len; i++) {
    ks_llm_failure *f = &t->failures.items[i];
    if (f->status == r->status && f->http_status == r->http_status) {
      f->count++;
      return;
    }
  }
  ks_llm_failure *f = ks_array_push(t->arena, &t->failures);
  const char *error = r->error ? r->error : ks_llm_status_name(r->status);
  *f = (ks_llm_failure){.status = r->status, .http_status = r->http_status, .count = 1,
                        .error = ks_arena_strdup(t->arena, error)};
}

void ks_llm_totals_add(ks_llm_totals *t, const char *account, const ks_llm_reply *r) {
  tally_add(&t->run, r);
  if (r->status == KS_LLM_OK)
    t->answered++;
  else
    failure_add(t, r);
  ks_llm_tally *acc = ks_llm_totals_account(t, account, true);
  if (acc)
    tally_add(acc, r);
}

bool ks_llm_budget_allows(const ks_llm_limits *l, const ks_llm_tally *run, ks_buf *why) {
  if (l->max_requests > 0 && run->requests >= l->max_requests) {
    if (why)
      ks_buf_addf(why, "the budget of %lld requests is spent", l->max_requests);
    return false;
  }
  long long tokens = run->input_tokens + run->output_tokens;
  if (l->max_tokens > 0 && tokens >= l->max_tokens) {
    if (why)
      ks_buf_addf(why, "the budget of %lld tokens is spent (%lld used)", l->max_tokens, tokens);
    return false;
  }
  if (l->max_cost > 0 && run->cost >= l->max_cost) {
    if (why)
      ks_buf_addf(why, "the budget of %.2f USD is spent (%.4f USD used)", l->max_cost,
                  run->cost);
    return false;
  }
  return true;
}
