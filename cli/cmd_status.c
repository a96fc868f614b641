/* kernelsmith-cc status: what the results store holds: the runs, and for
 * one run (the newest by default) each kernel's baseline, best variant and
 * counts. Read-only: safe while an optimize run writes. */
#include <cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cli.h"
#include "ks_store.h"
#include "ks_winners.h"

static const char usage[] =
    "usage: kernelsmith-cc status [options]\n"
    "\n"
    "Shows what the results store holds: every run (when, status, strategy,\n"
    "seed, device, evaluations; with several workers or MPI ranks, how many\n"
    "each judged, and where), and for one run each kernel's baseline time,\n"
    "its best verified variant, the speedup and the technique chain. It only\n"
    "reads, so it can watch a run in progress.\n"
    "\n"
    "options:\n"
    "      --run N      the run to detail (default: the newest)\n"
    "      --store DIR  the store (default: .kernelsmith in the project root, as\n"
    "                   for optimize)\n"
    "      --json       everything as JSON\n"
    "  -h, --help       show this help\n";

const ks_command ks_cmd_status;


typedef struct kernel_summary {
  const ks_kernel_row *row;
  unsigned variants, evaluated, correct, fast;
  const ks_winner *best;   /* the winner apply would use (ks_winners.h) */
} kernel_summary;

static void summarize(const ks_variant_rows *vars, const ks_winners *ws, kernel_summary *s) {
  for (size_t i = 0; i < vars->len; i++) {
    const ks_variant_row *v = &vars->items[i];
    s->variants++;
    if (!v->evaluated)
      continue;
    s->evaluated++;
    bool ok = v->verdict == KS_VERDICT_FAST || v->verdict == KS_VERDICT_SAME ||
              v->verdict == KS_VERDICT_SLOW;
    s->correct += ok;
    s->fast += v->verdict == KS_VERDICT_FAST;
  }
  for (size_t i = 0; i < ws->items.len; i++)
    if (ws->items.items[i].kernel_id == s->row->id)
      s->best = &ws->items.items[i];
}

/* Whether ranks of an --mpi run judged some of the evaluations. */
static bool any_host(const ks_eval_worker_counts *w) {
  for (size_t i = 0; i < w->len; i++)
    if (w->items[i].host)
      return true;
  return false;
}

/* Who judged an --mpi run: one line per rank, host, device and worker. A
 * row without a host is what the run judged without --mpi (a resume may
 * mix both). */
static void print_ranks(const ks_eval_worker_counts *w) {
  printf("      judged by:\n");
  for (size_t i = 0; i < w->len; i++) {
    const ks_eval_worker_count *c = &w->items[i];
    if (c->host)
      printf("        rank %d on %s", c->rank, c->host);
    else
      printf("        without --mpi");
    printf(": device %d, worker %d: %lld evaluation%s\n", c->device, c->worker, c->evaluations,
           c->evaluations == 1 ? "" : "s");
  }
}

static int run(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_RUN = 256, OPT_STORE, OPT_JSON };
  static const struct option opts[] = {{"run", required_argument, NULL, OPT_RUN},
                                       {"store", required_argument, NULL, OPT_STORE},
                                       {"json", no_argument, NULL, OPT_JSON},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  ks_arena a = KS_ARENA_INIT;
  const char *dir = NULL;
  long long want = 0;
  bool json = false;
  int c, rc = KS_EXIT_OK;
  ks_store *store = NULL;
  cJSON *root = NULL;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_RUN: {
      long n = ks_parse_count(optarg);
      if (n < 1) {
        rc = ks_usage_error(ctx, &ks_cmd_status, "--run takes a run number, not '%s'", optarg);
        goto out;
      }
      want = n;
      break;
    }
    case OPT_STORE:
      dir = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_status);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_status, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_status, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind < argc) {
    rc = ks_usage_error(ctx, &ks_cmd_status, "unexpected argument '%s'", argv[optind]);
    goto out;
  }
  if (!dir)
    dir = ks_store_default_dir(&a);
  if (ks_store_open_readonly(ctx, dir, &store))
    goto fail;
  ks_run_rows runs = {0};
  if (ks_store_runs(ctx, store, &a, &runs))
    goto fail;
  const ks_run_row *detail = NULL;
  for (size_t i = 0; i < runs.len; i++)
    if (want ? runs.items[i].id == want : (!detail || runs.items[i].id > detail->id))
      detail = &runs.items[i];
  if (want && !detail) {
    ks_fail(ctx, "%s has no run %lld", ks_store_path(store), want);
    goto fail;
  }

  if (json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.status");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "store", ks_store_path(store));
  } else {
    printf("store %s\n\n", ks_store_path(store));
    if (!runs.len)
      printf("no runs yet (kernelsmith-cc optimize starts one)\n");
    else
      printf("%-5s %-20s %-11s %-7s %-7s %-6s %s\n", "run", "started", "status", "strategy",
             "proposer", "evals", "device");
  }
  cJSON *jruns = json ? cJSON_AddArrayToObject(root, "runs") : NULL;
  for (size_t i = 0; i < runs.len; i++) {
    const ks_run_row *r = &runs.items[i];
    long long evals = 0;
    if (ks_store_eval_count(ctx, store, r->id, &evals))
      goto fail;
    ks_llm_usage llm = {0};
    if (ks_store_llm_usage(ctx, store, r->id, 0, &llm))
      goto fail;
    ks_eval_worker_counts workers;
    if (ks_store_eval_workers(ctx, store, r->id, &a, &workers))
      goto fail;
    if (json) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "run", (double)r->id);
      cJSON_AddStringToObject(j, "started", r->started ? r->started : "");
      if (r->finished)
        cJSON_AddStringToObject(j, "finished", r->finished);
      cJSON_AddStringToObject(j, "status", r->status);
      cJSON_AddStringToObject(j, "strategy", r->strategy ? r->strategy : "");
      cJSON_AddStringToObject(j, "proposer", r->proposer ? r->proposer : "");
      char seed[32];
      snprintf(seed, sizeof seed, "%llu", r->seed);
      cJSON_AddStringToObject(j, "seed", seed);
      if (r->device)
        cJSON_AddStringToObject(j, "device", r->device);
      cJSON_AddNumberToObject(j, "evaluations", (double)evals);
      if (workers.len) {
        cJSON *w = cJSON_AddArrayToObject(j, "workers");
        for (size_t k = 0; k < workers.len; k++) {
          cJSON *o = cJSON_CreateObject();
          /* rank and host only when known (--mpi), so that the JSON of a
           * run without MPI stays as it was */
          if (workers.items[k].host) {
            cJSON_AddNumberToObject(o, "rank", workers.items[k].rank);
            cJSON_AddStringToObject(o, "host", workers.items[k].host);
          }
          cJSON_AddNumberToObject(o, "worker", workers.items[k].worker);
          cJSON_AddNumberToObject(o, "device", workers.items[k].device);
          cJSON_AddNumberToObject(o, "evaluations", (double)workers.items[k].evaluations);
          cJSON_AddItemToArray(w, o);
        }
      }
      if (llm.calls) {
        cJSON *l = cJSON_AddObjectToObject(j, "llm");
        cJSON_AddNumberToObject(l, "calls", (double)llm.calls);
        cJSON_AddNumberToObject(l, "input_tokens", (double)llm.prompt_tokens);
        cJSON_AddNumberToObject(l, "output_tokens", (double)llm.response_tokens);
        cJSON_AddNumberToObject(l, "cost", llm.cost);
        cJSON_AddNumberToObject(l, "seconds", llm.seconds);
      }
      cJSON_AddItemToArray(jruns, j);
    } else {
      printf("%-5lld %-20.20s %-11s %-7s %-7s %-6lld %s\n", r->id, r->started ? r->started : "",
             r->status, r->strategy ? r->strategy : "", r->proposer ? r->proposer : "", evals,
             r->device ? r->device : "");
      if (llm.calls)
        printf("      model: %lld calls, %lld+%lld tokens, $%.4f, %.0f s\n", llm.calls,
               llm.prompt_tokens, llm.response_tokens, llm.cost, llm.seconds);
      /* Who judged: shown when several workers did (--devices), or when
       * ranks of an --mpi run did, one line each, since hosts and ranks
       * make lines too long for one. */
      if (any_host(&workers))
        print_ranks(&workers);
      else if (workers.len > 1) {
        printf("      judged by");
        for (size_t k = 0; k < workers.len; k++)
          printf("%s worker %d (device %d): %lld", k ? "," : "", workers.items[k].worker,
                 workers.items[k].device, workers.items[k].evaluations);
        printf("\n");
      }
    }
  }

  if (detail) {
    ks_kernel_rows kernels = {0};
    if (ks_store_kernels(ctx, store, detail->id, &a, &kernels))
      goto fail;
    ks_winners ws;
    ks_winners_query q = {.store_dir = dir, .run = detail->id, .any_device = true};
    if (ks_winners_load(ctx, &q, &a, &ws))
      goto fail;
    cJSON *jk = NULL;
    if (json) {
      cJSON_AddNumberToObject(root, "detail_run", (double)detail->id);
      jk = cJSON_AddArrayToObject(root, "kernels");
    } else {
      printf("\nrun %lld (%s, seed %llu):\n", detail->id, detail->status, detail->seed);
      printf("%-28s %-10s %10s %8s %6s %6s  %s\n", "kernel", "status", "baseline", "best",
             "evals", "ok", "techniques");
    }
    for (size_t i = 0; i < kernels.len; i++) {
      const ks_kernel_row *k = &kernels.items[i];
      ks_variant_rows vars = {0};
      if (ks_store_variants(ctx, store, k->id, &a, &vars))
        goto fail;
      kernel_summary s = {.row = k};
      summarize(&vars, &ws, &s);
      if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kernel", k->name);
        cJSON_AddStringToObject(j, "file", k->file ? k->file : "");
        cJSON_AddNumberToObject(j, "line", k->line);
        cJSON_AddStringToObject(j, "status", k->status);
        if (k->note)
          cJSON_AddStringToObject(j, "note", k->note);
        cJSON_AddNumberToObject(j, "baseline_ms", k->baseline_ms);
        cJSON_AddNumberToObject(j, "variants", s.variants);
        cJSON_AddNumberToObject(j, "evaluated", s.evaluated);
        cJSON_AddNumberToObject(j, "correct", s.correct);
        if (s.best) {
          cJSON_AddNumberToObject(j, "best_variant", (double)s.best->variant_id);
          cJSON_AddNumberToObject(j, "best_speedup", s.best->speedup);
          cJSON_AddNumberToObject(j, "best_ms", s.best->median_ms);
          cJSON_AddStringToObject(j, "techniques", s.best->techniques);
          cJSON_AddStringToObject(j, "inputs", s.best->inputs);
        }
        cJSON_AddItemToArray(jk, j);
      } else {
        char best[32] = "-";
        if (s.best)
          snprintf(best, sizeof best, "%.2fx", s.best->speedup);
        char base[32] = "-";
        if (k->baseline_ms > 0)
          snprintf(base, sizeof base, "%.4fms", k->baseline_ms);
        printf("%-28.28s %-10s %10s %8s %6u %6u  %s\n", k->name, k->status, base, best,
               s.evaluated, s.correct,
               s.best && s.best->techniques ? s.best->techniques : (k->note ? k->note : ""));
      }
    }
  }
  if (json) {
    char *text = cJSON_Print(root);
    if (text)
      printf("%s\n", text);
    free(text);
  }
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  cJSON_Delete(root);
  if (store)
    ks_store_close(store);
  ks_arena_release(&a);
  return rc;
}

const ks_command ks_cmd_status = {"status", "show what the results store holds: runs, kernels, "
                                            "best variants",
                                  usage, run};
