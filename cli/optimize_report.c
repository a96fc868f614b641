/* optimize_report: the live progress line, the final table and the JSON of
 * `optimize` (schema kernelsmith-cc.optimize, version 1, docs/optimize.md). */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ks_optimize_report.h"

void ks_progress_init(ks_progress_line *p, FILE *out, bool color) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->live = isatty(fileno(out)) != 0;
  p->color = color;
  p->width = 100;
  struct winsize ws;
  if (p->live && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
    p->width = ws.ws_col;
}

static void format_left(char *buf, size_t n, double s) {
  if (s < 0)
    snprintf(buf, n, "?");
  else if (s < 90)
    snprintf(buf, n, "%.0fs", s);
  else if (s < 5400)
    snprintf(buf, n, "%.0fm", s / 60);
  else
    snprintf(buf, n, "%.1fh", s / 3600);
}

void ks_progress_update(void *arg, const ks_search_progress *s) {
  ks_progress_line *p = arg;
  char left[32];
  format_left(left, sizeof left, s->seconds_left);
  char line[640], llm[256] = "";
  size_t at = 0;
  /* With a model, each proposer's judged and correct candidates, and the
   * model's requests, tokens and cost so far. */
  for (unsigned k = 0; p->llm && k < KS_PROPOSER_COUNTS && s->proposers[k].name && at < sizeof llm;
       k++)
    at += (size_t)snprintf(llm + at, sizeof llm - at, ", %s %u/%u ok", s->proposers[k].name,
                           s->proposers[k].correct, s->proposers[k].evaluated);
  if (p->llm && at < sizeof llm)
    snprintf(llm + at, sizeof llm - at, ", model %lld req %.0fk tok $%.2f", p->llm->requests,
             (double)(p->llm->input_tokens + p->llm->output_tokens) / 1000, p->llm->cost);
  snprintf(line, sizeof line,
           "%s: round %u/%u, %u evaluated (%u correct), best %.2fx%s%s, %.0f/min%s, %s left",
           s->kernel, s->round, s->rounds, s->evaluated, s->correct, s->best_speedup,
           s->best_techniques && *s->best_techniques ? " " : "",
           s->best_techniques && *s->best_techniques ? s->best_techniques : "",
           s->evals_per_minute, llm, left);
  if (p->live) {
    size_t n = strlen(line);
    if (n >= p->width)
      line[p->width - 1] = '\0';
    fprintf(p->out, "\r\033[K%s", line);
    fflush(p->out);
    p->dirty = true;
  } else if (s->round_done) {
    fprintf(p->out, "%s\n", line);
    fflush(p->out);
  }
}

void ks_progress_end(ks_progress_line *p) {
  if (p->live && p->dirty) {
    fputs("\r\033[K", p->out);
    fflush(p->out);
  }
  p->dirty = false;
}

static void hook_begin(void *arg, const ks_llm_tally *llm) {
  ((ks_progress_line *)arg)->llm = llm;
}

static void hook_end(void *arg) {
  ks_progress_end(arg);
}

static void hook_done(void *arg, const ks_outcome *o) {
  ks_progress_line *p = arg;
  if (!p->live && !p->quiet_done)
    fprintf(stderr, "%s: %s, %.2fx\n", o->kernel, o->status, o->speedup);
}

static void hook_say(void *arg, const char *line) {
  ks_progress_line *p = arg;
  ks_progress_end(p);
  fprintf(stderr, "%s: %s\n", p->ctx->prog, line);
}

ks_pipeline_hooks ks_progress_hooks(ks_progress_line *p, ks_ctx *ctx, bool quiet_done) {
  p->ctx = ctx;
  p->quiet_done = quiet_done;
  return (ks_pipeline_hooks){.arg = p, .search_begin = hook_begin,
                             .search_progress = ks_progress_update, .search_end = hook_end,
                             .kernel_done = hook_done, .say = hook_say};
}

static const char *short_name(const char *s, size_t max, char *buf, size_t n) {
  size_t len = strlen(s);
  if (len <= max)
    return s;
  snprintf(buf, n, "...%s", s + len - (max - 3));
  return buf;
}

/* Per proposer over every kernel: candidates, how many were correct and
 * faster, and for the model its requests, rejected replies, tokens and
 * cost. Shown when more than the rules proposed. */
static void print_proposers(FILE *out, const ks_outcomes *o, const char *bold, const char *reset) {
  ks_proposer_count sum[KS_PROPOSER_COUNTS] = {{0}};
  bool llm = false;
  ks_llm_tally t = {0};
  unsigned rejected = 0, plans = 0, cached = 0, insights = 0;
  for (size_t i = 0; i < o->len; i++) {
    const ks_outcome *k = &o->items[i];
    for (size_t p = 0; p < KS_PROPOSER_COUNTS && k->proposers[p].name; p++) {
      size_t s = 0;
      while (s < KS_PROPOSER_COUNTS && sum[s].name && strcmp(sum[s].name, k->proposers[p].name))
        s++;
      if (s == KS_PROPOSER_COUNTS)
        continue;
      sum[s].name = k->proposers[p].name;
      sum[s].candidates += k->proposers[p].candidates;
      sum[s].evaluated += k->proposers[p].evaluated;
      sum[s].correct += k->proposers[p].correct;
      sum[s].faster += k->proposers[p].faster;
    }
    if (k->has_llm) {
      llm = true;
      t.requests += k->llm.tally.requests;
      t.input_tokens += k->llm.tally.input_tokens;
      t.output_tokens += k->llm.tally.output_tokens;
      t.cost += k->llm.tally.cost;
      plans += k->llm.plans;
      cached += k->llm.cached;
      insights += k->llm.insights;
      for (int r = 1; r < KS_REPLY_NREASONS; r++)
        rejected += k->llm.rejected[r];
    }
  }
  if (!llm && (!sum[0].name || !sum[1].name))
    return;
  fprintf(out, "\n%s%-10s %10s %9s %8s %9s  %s%s\n", bold, "proposer", "candidates", "correct",
          "faster", "accepted", "model", reset);
  for (size_t s = 0; s < KS_PROPOSER_COUNTS && sum[s].name; s++) {
    char model[160] = "";
    if (!strcmp(sum[s].name, "llm"))
      snprintf(model, sizeof model,
               "%lld requests (%u served from the store), %u plans, %u replies rejected, "
               "%u insights, %lld+%lld tokens, $%.4f",
               t.requests, cached, plans, rejected, insights, t.input_tokens, t.output_tokens,
               t.cost);
    fprintf(out, "%-10s %10u %9u %8u %8.0f%%  %s\n", sum[s].name, sum[s].candidates,
            sum[s].correct, sum[s].faster,
            sum[s].evaluated ? 100.0 * sum[s].correct / sum[s].evaluated : 0.0, model);
  }
}

/* What the judge learned about the kernel, one line each under its row:
 * a race in the original (and what the search did for it), what bounds it. */
static void print_insight(FILE *out, const ks_insight *in, const char *red, const char *reset) {
  ks_arena a = KS_ARENA_INIT;
  const char *race = ks_race_line(&a, &in->race);
  if (race) {
    const char *search = ks_race_search_line(&a, &in->race);
    fprintf(out, "  %srace%s: %s%s%s\n", red, reset, race, search ? "; " : "", search ? search : "");
  }
  if (in->bound.kind != KS_BOUND_UNKNOWN)
    fprintf(out, "  %s-bound: %s\n", ks_bound_name(in->bound.kind),
            in->bound.why ? in->bound.why : "");
  ks_arena_release(&a);
}

void ks_outcomes_print(FILE *out, const ks_outcomes *o, bool measured, bool color) {
  const char *bold = color ? "\033[1m" : "", *green = color ? "\033[32m" : "",
             *red = color ? "\033[31m" : "", *reset = color ? "\033[0m" : "";
  fprintf(out, "%s%-28s %10s %10s %8s %9s  %-9s %s%s\n", bold, "kernel", "baseline", "best",
          "speedup", "roofline", "verdict", "techniques", reset);
  double logsum = 0;
  unsigned n = 0;
  for (size_t i = 0; i < o->len; i++) {
    const ks_outcome *k = &o->items[i];
    char nb[64];
    const char *name = short_name(k->kernel, 28, nb, sizeof nb);
    if (k->baseline_ms <= 0) {
      fprintf(out, "%-28s %10s %10s %8s %9s  %-9s %s: %s\n", name, "-", "-", "-", "-", "-",
              k->status, k->note ? k->note : "");
      print_insight(out, &k->insight, red, reset);
      continue;
    }
    char bw[32] = "-";
    if (k->bw_fraction > 0)
      snprintf(bw, sizeof bw, "%.0f%%", 100 * k->bw_fraction);
    bool won = k->speedup > 1 && k->techniques && *k->techniques;
    fprintf(out, "%-28s %8.4fms %8.4fms %s%7.2fx%s %9s  %-9s %s\n", name, k->baseline_ms,
            k->best_ms, won ? green : "", k->speedup, won ? reset : "", bw, k->verdict,
            won ? k->techniques : k->status);
    print_insight(out, &k->insight, red, reset);
    logsum += log(k->speedup > 0 ? k->speedup : 1);
    n++;
  }
  if (n > 1)
    fprintf(out, "%-28s %10s %10s %7.2fx  (geometric mean over %u kernels)\n", "all", "", "",
            exp(logsum / n), n);
  print_proposers(out, o, bold, reset);
  if (!measured)
    fprintf(out, "(stand-in judge: these numbers are not measurements)\n");
}

int ks_outcomes_json(ks_ctx *ctx, FILE *out, const ks_outcomes *o, long long run,
                     const char *strategy, const char *proposer, unsigned long long seed,
                     const char *device, bool measured) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.optimize");
  cJSON_AddNumberToObject(root, "version", 1);
  if (run > 0)
    cJSON_AddNumberToObject(root, "run", (double)run);
  cJSON_AddStringToObject(root, "strategy", strategy);
  cJSON_AddStringToObject(root, "proposer", proposer);
  char seedtext[32];
  snprintf(seedtext, sizeof seedtext, "%llu", seed);
  cJSON_AddStringToObject(root, "seed", seedtext);
  if (device)
    cJSON_AddStringToObject(root, "device", device);
  cJSON_AddBoolToObject(root, "measured", measured);
  cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
  double logsum = 0;
  unsigned n = 0;
  for (size_t i = 0; i < o->len; i++) {
    const ks_outcome *k = &o->items[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kernel", k->kernel);
    if (k->file) {
      cJSON_AddStringToObject(j, "file", k->file);
      cJSON_AddNumberToObject(j, "line", k->line);
      if (k->inputs) {
        cJSON_AddStringToObject(j, "inputs", k->inputs);
        cJSON_AddNumberToObject(j, "captured_launches", k->captured);
      }
    }
    cJSON_AddStringToObject(j, "status", k->status);
    if (k->note)
      cJSON_AddStringToObject(j, "note", k->note);
    if (k->baseline_ms > 0) {
      cJSON_AddNumberToObject(j, "baseline_ms", k->baseline_ms);
      cJSON_AddNumberToObject(j, "best_ms", k->best_ms);
      cJSON_AddNumberToObject(j, "speedup", k->speedup);
      if (k->speedup_low > 0) {
        cJSON_AddNumberToObject(j, "speedup_low", k->speedup_low);
        cJSON_AddNumberToObject(j, "speedup_high", k->speedup_high);
      }
      cJSON_AddNumberToObject(j, "bandwidth_fraction", k->bw_fraction);
      logsum += log(k->speedup > 0 ? k->speedup : 1);
      n++;
    }
    cJSON_AddStringToObject(j, "techniques", k->techniques ? k->techniques : "");
    cJSON_AddStringToObject(j, "verdict", k->verdict ? k->verdict : "-");
    if (k->winner_file)
      cJSON_AddStringToObject(j, "winner_file", k->winner_file);
    if (k->variant_id > 0)
      cJSON_AddNumberToObject(j, "variant", (double)k->variant_id);
    /* "race" and "bound", each null when nothing is known (ks_insight.h) */
    ks_arena a = KS_ARENA_INIT;
    cJSON *found = cJSON_Parse(ks_insight_json(&a, &k->insight));
    ks_arena_release(&a);
    for (const char *const *m = (const char *const[]){"race", "bound", NULL}; *m; m++) {
      cJSON *item = found ? cJSON_DetachItemFromObjectCaseSensitive(found, *m) : NULL;
      cJSON_AddItemToObject(j, *m, item ? item : cJSON_CreateNull());
    }
    cJSON_Delete(found);
    cJSON_AddNumberToObject(j, "evaluated", k->evaluated);
    cJSON_AddNumberToObject(j, "correct", k->correct);
    cJSON_AddNumberToObject(j, "wrong", k->wrong);
    cJSON_AddNumberToObject(j, "refused", k->refused);
    cJSON_AddNumberToObject(j, "duplicates", k->duplicates);
    cJSON_AddNumberToObject(j, "same_code", k->same_code);
    cJSON_AddNumberToObject(j, "rounds", k->rounds);
    if (k->stopped_by)
      cJSON_AddStringToObject(j, "stopped_by", k->stopped_by);
    cJSON_AddNumberToObject(j, "seconds", k->seconds);
    cJSON *props = cJSON_AddObjectToObject(j, "proposers");
    for (size_t p = 0; p < KS_PROPOSER_COUNTS && k->proposers[p].name; p++) {
      cJSON *pj = cJSON_AddObjectToObject(props, k->proposers[p].name);
      cJSON_AddNumberToObject(pj, "candidates", k->proposers[p].candidates);
      cJSON_AddNumberToObject(pj, "evaluated", k->proposers[p].evaluated);
      cJSON_AddNumberToObject(pj, "correct", k->proposers[p].correct);
      cJSON_AddNumberToObject(pj, "faster", k->proposers[p].faster);
    }
    if (k->has_llm) {
      cJSON *l = cJSON_AddObjectToObject(j, "llm");
      cJSON_AddNumberToObject(l, "requests", (double)k->llm.tally.requests);
      cJSON_AddNumberToObject(l, "failed", k->llm.failed);
      cJSON_AddNumberToObject(l, "cached", k->llm.cached);
      cJSON_AddNumberToObject(l, "input_tokens", (double)k->llm.tally.input_tokens);
      cJSON_AddNumberToObject(l, "output_tokens", (double)k->llm.tally.output_tokens);
      cJSON_AddNumberToObject(l, "cost", k->llm.tally.cost);
      cJSON_AddNumberToObject(l, "plans", k->llm.plans);
      cJSON_AddNumberToObject(l, "plans_rejected", k->llm.plans_rejected);
      cJSON_AddNumberToObject(l, "children", k->llm.children);
      cJSON_AddNumberToObject(l, "retries", k->llm.retries);
      cJSON_AddNumberToObject(l, "insights", k->llm.insights);
      cJSON *rej = cJSON_AddObjectToObject(l, "rejected");
      for (int r = 1; r < KS_REPLY_NREASONS; r++)
        if (k->llm.rejected[r])
          cJSON_AddNumberToObject(rej, ks_reply_reason_name((ks_reply_reason)r),
                                  k->llm.rejected[r]);
      cJSON_AddBoolToObject(l, "budget_hit", k->llm.budget_hit);
      if (k->llm.last_error)
        cJSON_AddStringToObject(l, "last_error", k->llm.last_error);
    }
    cJSON_AddItemToArray(arr, j);
  }
  if (n)
    cJSON_AddNumberToObject(root, "geomean_speedup", exp(logsum / n));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return ks_fail(ctx, "out of memory writing JSON");
  fprintf(out, "%s\n", text);
  free(text);
  return 0;
}
