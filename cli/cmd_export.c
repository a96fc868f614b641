/* kernelsmith-cc export --trajectories: the store's evaluated steps as
 * training samples, step-centric as Kernel-Smith keeps them: each sample
 * is one step (parent, plan, child) with what the judge measured, in the
 * chat-format JSONL that fine-tuning tools take. The user message is the
 * executor's prompt for that parent and plan (ks_llm_text.h), so a model
 * trained on it sees at inference what it saw in training; a rules step's
 * plan is the rewrite it applied. */
#include <cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_cli.h"
#include "ks_llm_text.h"
#include "ks_search.h"
#include "ks_store.h"
#include "ks_winners.h"

static const char usage[] =
    "usage: kernelsmith-cc export --trajectories FILE.jsonl [options]\n"
    "       kernelsmith-cc export --winners [--run N] [--store DIR]\n"
    "\n"
    "--winners writes each kernel's verified winner (the one apply uses) as a\n"
    "variant file under the store's winners/ directory, from the store, which\n"
    "is the only record apply and the compiler launcher read.\n"
    "\n"
    "--trajectories:\n"
    "Writes every evaluated step of the store's runs (a variant made from its\n"
    "parent by a rule or a model) as one JSON line: \"messages\" (system, the\n"
    "executor's prompt for the parent and the step's plan, and the child as the\n"
    "assistant's reply) and the step's measurements (verdict, speedup over the\n"
    "original and over the parent, technique, proposer, ids). docs/llm.md\n"
    "describes the format.\n"
    "\n"
    "options:\n"
    "      --trajectories FILE  where to write (replaced whole; '-' for stdout)\n"
    "      --winners    the winner files (STORE/winners/KERNEL.cu) instead\n"
    "      --run N      only this run (default: every run)\n"
    "      --improving  only correct steps faster than their parent (FAST, and\n"
    "                   more than 1% over the parent)\n"
    "      --correct    only steps whose child computes the right result\n"
    "      --store DIR  the store (default: .kernelsmith in the project root)\n"
    "  -h, --help       show this help\n";

const ks_command ks_cmd_export;

static bool correct_verdict(ks_verdict v) {
  return v == KS_VERDICT_FAST || v == KS_VERDICT_SAME || v == KS_VERDICT_SLOW;
}

/* A stored variant as the search holds it. */
static ks_variant as_variant(ks_arena *a, const ks_variant_row *v) {
  ks_variant out = {.source = v->source, .kernel_name = v->kernel_name, .grid = v->grid,
                    .block = v->block, .smem = v->smem};
  ks_store_requires_split(a, v->requires, &out.requires);
  return out;
}

/* The child as an executor would have written it: the code, and the
 * launch policy and guards as the JSON block. */
static char *assistant_text(ks_arena *a, const ks_variant *v) {
  cJSON *j = cJSON_CreateObject();
  if (v->grid)
    cJSON_AddStringToObject(j, "grid", v->grid);
  if (v->block)
    cJSON_AddStringToObject(j, "block", v->block);
  if (v->smem)
    cJSON_AddStringToObject(j, "smem", v->smem);
  cJSON *req = cJSON_AddArrayToObject(j, "requires");
  for (size_t i = 0; i < v->requires.len; i++)
    cJSON_AddItemToArray(req, cJSON_CreateString(v->requires.items[i]));
  char *policy = cJSON_Print(j);
  cJSON_Delete(j);
  char *text = ks_arena_printf(a, "```cuda\n%s\n```\n```json\n%s\n```\n", v->source,
                               policy ? policy : "{}");
  free(policy);
  return text;
}

static int export_kernel(ks_ctx *ctx, ks_store *store, const ks_run_row *run,
                         const ks_kernel_row *k, int filter, FILE *out, ks_arena *a,
                         unsigned *written) {
  ks_variant_rows vars = {0};
  if (ks_store_variants(ctx, store, k->id, a, &vars))
    return -1;
  for (size_t i = 0; i < vars.len; i++) {
    const ks_variant_row *c = &vars.items[i];
    if (!c->evaluated || !c->parent || !c->proposer || !strcmp(c->proposer, "seed"))
      continue;
    const ks_variant_row *p = NULL;
    for (size_t j = 0; j < vars.len && !p; j++)
      if (vars.items[j].id == c->parent)
        p = &vars.items[j];
    if (!p)
      continue;
    double parent_speedup = p->evaluated && p->speedup > 0 ? p->speedup : 1;
    double step = c->speedup > 0 ? c->speedup / parent_speedup : 0;
    if (filter >= 1 && !correct_verdict(c->verdict))
      continue;
    if (filter >= 2 && (c->verdict != KS_VERDICT_FAST || step <= 1.01))
      continue;
    const char *tech = ks_chain_last_step(c->techniques);
    const char *plan = c->plan ? c->plan
                               : ks_arena_printf(a, "Apply the rewrite \"%s\" to the kernel.", tech);
    ks_variant parent = as_variant(a, p);
    ks_executor_input in = {.kernel = k->name, .parent = &parent, .plan = plan};
    ks_prompt prompt;
    ks_prompt_executor(a, &in, &prompt);

    cJSON *j = cJSON_CreateObject();
    cJSON *msgs = cJSON_AddArrayToObject(j, "messages");
    const char *roles[] = {"system", "user", "assistant"};
    ks_variant child = as_variant(a, c);
    const char *texts[] = {prompt.system, prompt.user, assistant_text(a, &child)};
    for (int m = 0; m < 3; m++) {
      cJSON *msg = cJSON_CreateObject();
      cJSON_AddStringToObject(msg, "role", roles[m]);
      cJSON_AddStringToObject(msg, "content", texts[m]);
      cJSON_AddItemToArray(msgs, msg);
    }
    cJSON_AddStringToObject(j, "kernel", k->name);
    cJSON_AddNumberToObject(j, "run", (double)run->id);
    if (run->device)
      cJSON_AddStringToObject(j, "device", run->device);
    cJSON_AddNumberToObject(j, "parent", (double)p->id);
    cJSON_AddNumberToObject(j, "child", (double)c->id);
    cJSON_AddStringToObject(j, "proposer", c->proposer);
    cJSON_AddStringToObject(j, "technique", tech);
    cJSON_AddStringToObject(j, "plan", plan);
    cJSON_AddStringToObject(j, "verdict", ks_verdict_name(c->verdict));
    cJSON_AddNumberToObject(j, "speedup", c->speedup);
    cJSON_AddNumberToObject(j, "parent_speedup", parent_speedup);
    cJSON_AddNumberToObject(j, "step_speedup", step);
    if (c->reason)
      cJSON_AddStringToObject(j, "reason", c->reason);
    char *line = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!line)
      return ks_fail(ctx, "out of memory writing a trajectory");
    fprintf(out, "%s\n", line);
    free(line);
    (*written)++;
  }
  return 0;
}

static int run(ks_ctx *ctx, int argc, char **argv) {
  enum { OPT_TRAJ = 256, OPT_RUN, OPT_IMPROVING, OPT_CORRECT, OPT_STORE, OPT_WINNERS };
  static const struct option opts[] = {{"trajectories", required_argument, NULL, OPT_TRAJ},
                                       {"winners", no_argument, NULL, OPT_WINNERS},
                                       {"run", required_argument, NULL, OPT_RUN},
                                       {"improving", no_argument, NULL, OPT_IMPROVING},
                                       {"correct", no_argument, NULL, OPT_CORRECT},
                                       {"store", required_argument, NULL, OPT_STORE},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  ks_arena a = KS_ARENA_INIT;
  const char *dir = NULL, *path = NULL, *tmp = NULL;
  long long want = 0;
  int filter = 0, c, rc = KS_EXIT_OK;
  bool winners = false;
  ks_store *store = NULL;
  FILE *out = NULL;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_TRAJ:
      path = optarg;
      break;
    case OPT_WINNERS:
      winners = true;
      break;
    case OPT_RUN: {
      long n = ks_parse_count(optarg);
      if (n < 1) {
        rc = ks_usage_error(ctx, &ks_cmd_export, "--run takes a run number, not '%s'", optarg);
        goto out;
      }
      want = n;
      break;
    }
    case OPT_IMPROVING:
      filter = 2;
      break;
    case OPT_CORRECT:
      filter = filter > 1 ? filter : 1;
      break;
    case OPT_STORE:
      dir = optarg;
      break;
    case 'h':
      rc = ks_print_help(&ks_cmd_export);
      goto out;
    case ':':
      rc = ks_usage_error(ctx, &ks_cmd_export, "option '%s' needs a value", argv[optind - 1]);
      goto out;
    default:
      rc = ks_usage_error(ctx, &ks_cmd_export, "unknown option '%s'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind < argc) {
    rc = ks_usage_error(ctx, &ks_cmd_export, "unexpected argument '%s'", argv[optind]);
    goto out;
  }
  if (!path == !winners) {
    rc = ks_usage_error(ctx, &ks_cmd_export,
                        "say what to export: --trajectories FILE.jsonl or --winners");
    goto out;
  }
  if (!dir)
    dir = ks_store_default_dir(&a);
  if (winners) {
    ks_winners ws;
    ks_winners_query q = {.store_dir = dir, .run = want, .any_device = true};
    if (ks_winners_load(ctx, &q, &a, &ws) || ks_winners_export(ctx, &ws, dir, &a))
      goto fail;
    fprintf(stderr, "%s: %zu winner file%s written to %s/winners (run %lld)\n", ctx->prog,
            ws.items.len, ws.items.len == 1 ? "" : "s", dir, ws.run.id);
    goto out;
  }
  if (ks_store_open_readonly(ctx, dir, &store))
    goto fail;
  ks_run_rows runs = {0};
  if (ks_store_runs(ctx, store, &a, &runs))
    goto fail;
  bool found = !want;
  for (size_t i = 0; i < runs.len; i++)
    found |= runs.items[i].id == want;
  if (!found) {
    ks_fail(ctx, "%s has no run %lld", ks_store_path(store), want);
    goto fail;
  }
  /* Written beside the target and renamed: a failure leaves the old file. */
  if (strcmp(path, "-")) {
    tmp = ks_arena_printf(&a, "%s.tmp.%ld", path, (long)getpid());
    out = fopen(tmp, "w");
    if (!out) {
      ks_fail(ctx, "%s: cannot write: %s", path, strerror(errno));
      goto fail;
    }
  }
  unsigned written = 0;
  for (size_t i = 0; i < runs.len; i++) {
    const ks_run_row *r = &runs.items[i];
    if (want && r->id != want)
      continue;
    ks_kernel_rows kernels = {0};
    if (ks_store_kernels(ctx, store, r->id, &a, &kernels))
      goto fail;
    for (size_t k = 0; k < kernels.len; k++)
      if (export_kernel(ctx, store, r, &kernels.items[k], filter, out ? out : stdout, &a,
                        &written))
        goto fail;
  }
  if (out) {
    if (fflush(out) || fsync(fileno(out)) || fclose(out)) {
      out = NULL;
      ks_fail(ctx, "%s: cannot write: %s", path, strerror(errno));
      goto fail;
    }
    out = NULL;
    if (rename(tmp, path)) {
      ks_fail(ctx, "%s: cannot replace: %s", path, strerror(errno));
      goto fail;
    }
    tmp = NULL;
  }
  fprintf(stderr, "%s: %u step%s written%s%s\n", ctx->prog, written, written == 1 ? "" : "s",
          strcmp(path, "-") ? " to " : "", strcmp(path, "-") ? path : "");
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  if (out)
    fclose(out);
  if (tmp)
    unlink(tmp);
  if (store)
    ks_store_close(store);
  ks_arena_release(&a);
  return rc;
}

const ks_command ks_cmd_export = {
    "export", "write the store's steps as training data (--trajectories), or its winners as files",
    usage, run};
