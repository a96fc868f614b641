/* kernelsmith-cc optimize: the main job.
 *
 *   scan the tree -> every kernel with a spec made ready to judge (spec,
 *   slice, size sets) -> each compiled with NVRTC -> on a GPU: the search
 *   for each kernel, every variant and verdict stored as it is made ->
 *   the winners written out and a table (or JSON) of what was won.
 *
 * The run's own command line is stored with it, so `optimize --resume`
 * alone continues the newest unfinished run exactly as it was started. */
#include <cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_optimize_report.h"
#include "ks_profile.h"
#include "ks_pipeline.h"
#include "ks_rules.h"
#include "ks_search.h"
#include "ks_source_args.h"
#include "ks_specs.h"
#include "ks_store.h"
#include "ks_target.h"
#include "ks_variant_file.h"
#include "ranked.h"

static const char usage[] =
    "usage: kernelsmith-cc optimize [options] [PATH...]\n"
    "\n"
    "Searches for faster variants of every kernel under PATH (default: the current\n"
    "directory) that has a spec (docs/spec.md): each kernel is sliced, compiled\n"
    "with NVRTC, and then, on an NVIDIA GPU, improved by an evolutionary search\n"
    "whose every candidate the judge verifies and times (docs/judge.md). The\n"
    "built-in rewrite rules propose the candidates (docs/rules.md). Every variant\n"
    "and verdict is stored in .kernelsmith/ as it is made; a run that was stopped\n"
    "or killed continues with --resume. Winners are written to\n"
    ".kernelsmith/winners/KERNEL.cu, a variant file 'check --variant' reads.\n"
    "\n"
    "Without a GPU, the kernels are still scanned, sliced and compiled, and the\n"
    "command says that the search needs an NVIDIA GPU (exit status 0).\n"
    "\n"
    "options:\n"
    "  -k, --kernel NAME    only this kernel (repeat for more; default: every kernel\n"
    "                       with a spec)\n"
    "      --profile FILE   only the hot kernels of a profile that kernelsmith-cc\n"
    "                       profile wrote (docs/profile.md)\n"
    "      --top N          with --profile: the N with the most GPU time (default 5)\n"
    "      --min-share P    with --profile: those with P% of the GPU time or more\n"
    "      --capture FILE   captured launches (profile --capture) as test inputs:\n"
    "                       beside a spec's sizes, or the only inputs of a kernel\n"
    "                       with no spec (repeat for more files; default with\n"
    "                       --profile: capture.kscap beside the profile, when\n"
    "                       there is one)\n"
    "      --strategy S     evolve (islands and a MAP-Elites archive; default) or\n"
    "                       beam (the best B, N proposals each)\n"
    "      --proposer P     rules (every rewrite; default), tuning (launch\n"
    "                       configuration and unroll factors only, as classic\n"
    "                       autotuners do), llm (a model plans, writes and learns;\n"
    "                       docs/llm.md) or all (rules and llm share each round)\n"
    "      --llm-url URL    the model server's base URL (OpenAI-compatible:\n"
    "                       .../v1; Anthropic: https://api.anthropic.com); else\n"
    "                       KERNELSMITH_LLM_URL, OPENAI_BASE_URL, the user config\n"
    "      --llm-model M    the model; else KERNELSMITH_LLM_MODEL, the configs\n"
    "      --llm-api A      openai or anthropic (default: from the URL or the key)\n"
    "      --llm-key-file F a file holding the API key (mode 600); else\n"
    "                       KERNELSMITH_LLM_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY\n"
    "      --llm-jobs N     requests at once (default 4)\n"
    "      --llm-plans N    plans asked per parent and draw (default 2)\n"
    "      --llm-cache M    rw (default: serve stored replies, record new ones), ro,\n"
    "                       off, or replay (stored replies only, no server asked)\n"
    "      --llm-prices I,O USD per million input and output tokens (for --max-cost)\n"
    "      --max-cost USD   stop asking the model past this cost (whole run)\n"
    "      --max-tokens N   ... past this many tokens, input and output\n"
    "      --max-requests N ... past this many requests\n"
    "      --rounds N       rounds (beam: iterations) per kernel (default 40)\n"
    "      --max-evals N    evaluations per kernel (default: no limit)\n"
    "      --max-seconds S  wall time of the searches, shared by the kernels\n"
    "                       (counted once scanning and compiling are done)\n"
    "      --patience N     stop a kernel's search after N rounds in a row found\n"
    "                       nothing faster (default: never; all rounds run)\n"
    "      --seed S         seed of every random choice (default 1)\n"
    "      --islands N      evolve: islands (default 4)\n"
    "      --population N   evolve: variants per island (default 8)\n"
    "      --children N     evolve: children per island and round (default 3)\n"
    "      --beam-width B   beam: variants kept (default 6)\n"
    "      --proposals N    beam: proposals per kept variant (default 4)\n"
    "      --no-confirm     take the fastest variant without judging it again on\n"
    "                       fresh inputs\n"
    "      --resume         continue the newest unfinished run in the store, with\n"
    "                       the options it was started with (only --store and\n"
    "                       --json may be given with it)\n"
    "      --store DIR      the results store (default: .kernelsmith in the project\n"
    "                       root: the nearest directory above holding .git or\n"
    "                       .kernelsmith, else the current directory)\n"
    KS_SOURCE_HELP
    "      --sample-seconds S  wall-clock cap of each timing loop during the search\n"
    "                       (default 1; the winner's recheck uses 5)\n"
    "      --device N       CUDA device (default 0)\n"
    "      --devices D      all, or CUDA devices as 0,1,...: one worker each, the\n"
    "                       children of a round judged on whichever is free (a\n"
    "                       device may repeat: two workers on one GPU; default:\n"
    "                       --device alone)\n"
    "      --timeout S      wall-clock limit per GPU request (default 60)\n"
    "      --compiler C     what compiles the original and its variants: nvcc (as\n"
    "                       the program is built), nvrtc, or auto (default: nvcc\n"
    "                       when compile_commands.json has the kernel's file and\n"
    "                       nvcc is found, else NVRTC; docs/judge.md)\n"
    "      --mpi            one rank of `mpirun -np N kernelsmith-cc optimize --mpi`:\n"
    "                       the ranks play each round together (each on its own\n"
    "                       devices), rank 0 reads the project, sends it to the\n"
    "                       others and owns the store (docs/optimize.md)\n"
    "                       (without --device(s): the host's k-th rank on its\n"
    "                       k-th GPU, modulo their number)\n"
    "      --mpi-timeout S  a rank silent this long is lost and rank 0 takes over\n"
    "                       its share (default 60)\n"
    "      --stand-in-judge judge with a deterministic stand-in instead of the GPU\n"
    "                       (for testing the search without a GPU; its numbers are\n"
    "                       not measurements, and the report says so)\n"
    "      --json           the outcome as JSON (schema: docs/optimize.md)\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 when every kernel was searched (or there is no GPU), 1 when a\n"
    "kernel failed or the run was interrupted, 2 on a usage error.\n";

const ks_command ks_cmd_optimize;

typedef struct config {
  ks_source_args src;
  ks_search_options search;
  bool tuning;
  ks_proposer_kind proposer;
  ks_llm_config llm;          /* the flags' values (ks_llm_config_resolve) */
  int llm_cache;
  unsigned llm_plans;
  ks_strings kernels;
  bool resume, json, standin;
  const char *store_dir;
  ks_judge_options judge;
  int devices[KS_MAX_WORKERS]; /* --devices; ndevices 0: --device alone */
  size_t ndevices;
  bool all_devices, device_given;
  double max_seconds;
  const char *profile;        /* --profile: the hot kernels become `kernels` */
  ks_strings captures;        /* --capture, or the one beside --profile */
  unsigned top;               /* --top; 0: not given */
  double min_share;           /* --min-share, percent; 0: not given */
  ks_arena arena;
  bool src_init;
  bool mpi;                   /* --mpi: one rank of an mpirun job */
  double mpi_timeout;         /* --mpi-timeout; 0: the cluster's default */
} config;

static volatile int interrupted;
static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

enum { OPT_STRATEGY = 300, OPT_PROPOSER, OPT_ROUNDS, OPT_MAX_EVALS, OPT_MAX_SECONDS, OPT_PATIENCE, OPT_SEED,
       OPT_ISLANDS, OPT_POPULATION, OPT_CHILDREN, OPT_BEAM_WIDTH, OPT_PROPOSALS, OPT_NO_CONFIRM,
       OPT_RESUME, OPT_STORE, OPT_SAMPLE_SECONDS, OPT_DEVICE, OPT_TIMEOUT, OPT_STANDIN,
       OPT_JSON, OPT_LLM_URL, OPT_LLM_MODEL, OPT_LLM_API, OPT_LLM_KEY_FILE, OPT_LLM_JOBS,
       OPT_LLM_PLANS, OPT_LLM_CACHE, OPT_LLM_PRICES, OPT_MAX_COST, OPT_MAX_TOKENS,
       OPT_MAX_REQUESTS, OPT_PROFILE, OPT_TOP, OPT_MIN_SHARE, OPT_CAPTURE, OPT_COMPILER,
       OPT_DEVICES, OPT_MPI, OPT_MPI_TIMEOUT };

static int count_option(ks_ctx *ctx, const char *name, const char *arg, long lo, long hi,
                        unsigned *out) {
  long n = ks_parse_count(arg);
  if (n < lo || n > hi)
    return ks_usage_error(ctx, &ks_cmd_optimize, "%s takes a number from %ld to %ld, not '%s'",
                          name, lo, hi, arg);
  *out = (unsigned)n;
  return 0;
}

static int seconds_option(ks_ctx *ctx, const char *name, const char *arg, double *out) {
  char *end;
  double v = strtod(arg, &end);
  if (end == arg || *end || v <= 0)
    return ks_usage_error(ctx, &ks_cmd_optimize, "%s takes a positive number of seconds, not '%s'",
                          name, arg);
  *out = v;
  return 0;
}

/* Parses argv into `c`; returns 0, KS_EXIT_USAGE, or -2 for --help. */
static int parse(ks_ctx *ctx, int argc, char **argv, config *c) {
  static const struct option opts[] = {
      KS_SOURCE_LONG,
      {"kernel", required_argument, NULL, 'k'},
      {"strategy", required_argument, NULL, OPT_STRATEGY},
      {"proposer", required_argument, NULL, OPT_PROPOSER},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
      {"max-evals", required_argument, NULL, OPT_MAX_EVALS},
      {"patience", required_argument, NULL, OPT_PATIENCE},
      {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
      {"seed", required_argument, NULL, OPT_SEED},
      {"islands", required_argument, NULL, OPT_ISLANDS},
      {"population", required_argument, NULL, OPT_POPULATION},
      {"children", required_argument, NULL, OPT_CHILDREN},
      {"beam-width", required_argument, NULL, OPT_BEAM_WIDTH},
      {"proposals", required_argument, NULL, OPT_PROPOSALS},
      {"no-confirm", no_argument, NULL, OPT_NO_CONFIRM},
      {"resume", no_argument, NULL, OPT_RESUME},
      {"store", required_argument, NULL, OPT_STORE},
      {"sample-seconds", required_argument, NULL, OPT_SAMPLE_SECONDS},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"devices", required_argument, NULL, OPT_DEVICES},
      {"mpi", no_argument, NULL, OPT_MPI},
      {"mpi-timeout", required_argument, NULL, OPT_MPI_TIMEOUT},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"compiler", required_argument, NULL, OPT_COMPILER},
      {"stand-in-judge", no_argument, NULL, OPT_STANDIN},
      {"json", no_argument, NULL, OPT_JSON},
      {"llm-url", required_argument, NULL, OPT_LLM_URL},
      {"llm-model", required_argument, NULL, OPT_LLM_MODEL},
      {"llm-api", required_argument, NULL, OPT_LLM_API},
      {"llm-key-file", required_argument, NULL, OPT_LLM_KEY_FILE},
      {"llm-jobs", required_argument, NULL, OPT_LLM_JOBS},
      {"llm-plans", required_argument, NULL, OPT_LLM_PLANS},
      {"llm-cache", required_argument, NULL, OPT_LLM_CACHE},
      {"llm-prices", required_argument, NULL, OPT_LLM_PRICES},
      {"max-cost", required_argument, NULL, OPT_MAX_COST},
      {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
      {"max-requests", required_argument, NULL, OPT_MAX_REQUESTS},
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"capture", required_argument, NULL, OPT_CAPTURE},
      {"top", required_argument, NULL, OPT_TOP},
      {"min-share", required_argument, NULL, OPT_MIN_SHARE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  ks_source_args_init(&c->src, argc);
  c->src_init = true;
  ks_search_options_defaults(&c->search);
  c->search.seed = 1;
  c->judge.cache_dir = NULL;
  c->judge.timing.max_seconds = 1;
  int opt;
  optind = 0; /* parse may run twice (--resume reads the stored line) */
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":" KS_SOURCE_SHORT "k:h", opts, NULL)) != -1) {
    if (ks_source_args_option(&c->src, opt, optarg))
      continue;
    double secs = 0;
    switch (opt) {
    case 'k':
      *ks_array_push(&c->arena, &c->kernels) = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_STRATEGY:
      if (!strcmp(optarg, "evolve"))
        c->search.strategy = KS_STRATEGY_EVOLVE;
      else if (!strcmp(optarg, "beam"))
        c->search.strategy = KS_STRATEGY_BEAM;
      else
        return ks_usage_error(ctx, &ks_cmd_optimize, "--strategy is evolve or beam, not '%s'",
                              optarg);
      break;
    case OPT_PROPOSER:
      if (!strcmp(optarg, "rules"))
        c->proposer = KS_PROPOSER_RULES;
      else if (!strcmp(optarg, "tuning"))
        c->proposer = KS_PROPOSER_TUNING;
      else if (!strcmp(optarg, "llm"))
        c->proposer = KS_PROPOSER_LLM;
      else if (!strcmp(optarg, "all"))
        c->proposer = KS_PROPOSER_ALL;
      else
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--proposer is rules, tuning, llm or all, not '%s'", optarg);
      c->tuning = c->proposer == KS_PROPOSER_TUNING;
      break;
    case OPT_LLM_URL:
      c->llm.url = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_LLM_MODEL:
      c->llm.model = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_LLM_API:
      if (!strcmp(optarg, "openai"))
        c->llm.api = KS_LLM_OPENAI;
      else if (!strcmp(optarg, "anthropic"))
        c->llm.api = KS_LLM_ANTHROPIC;
      else
        return ks_usage_error(ctx, &ks_cmd_optimize, "--llm-api is openai or anthropic, not '%s'",
                              optarg);
      break;
    case OPT_LLM_KEY_FILE:
      c->llm.key_file = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_LLM_JOBS: {
      unsigned n = 0;
      if (count_option(ctx, "--llm-jobs", optarg, 1, 256, &n))
        return KS_EXIT_USAGE;
      c->llm.jobs = (int)n;
      break;
    }
    case OPT_LLM_PLANS:
      if (count_option(ctx, "--llm-plans", optarg, 1, 64, &c->llm_plans))
        return KS_EXIT_USAGE;
      break;
    case OPT_LLM_CACHE:
      c->llm_cache = ks_llm_cache_mode_parse(optarg);
      if (c->llm_cache < 0)
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--llm-cache is rw, ro, off or replay, not '%s'", optarg);
      break;
    case OPT_LLM_PRICES: {
      char *end;
      double in = strtod(optarg, &end), out = -1;
      if (*end == ',')
        out = strtod(end + 1, &end);
      if (*end || in < 0 || out < 0)
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--llm-prices takes IN,OUT (USD per million tokens), not '%s'",
                              optarg);
      c->llm.prices = (ks_llm_prices){.input_per_mtok = in, .output_per_mtok = out, .set = true};
      break;
    }
    case OPT_MAX_COST: {
      char *end;
      double v = strtod(optarg, &end);
      if (end == optarg || *end || v <= 0)
        return ks_usage_error(ctx, &ks_cmd_optimize, "--max-cost takes a positive USD amount, not '%s'",
                              optarg);
      c->llm.limits.max_cost = v;
      break;
    }
    case OPT_MAX_TOKENS: {
      long n = ks_parse_count(optarg);
      if (n < 1)
        return ks_usage_error(ctx, &ks_cmd_optimize, "--max-tokens takes a positive number, not '%s'",
                              optarg);
      c->llm.limits.max_tokens = n;
      break;
    }
    case OPT_MAX_REQUESTS: {
      long n = ks_parse_count(optarg);
      if (n < 1)
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--max-requests takes a positive number, not '%s'", optarg);
      c->llm.limits.max_requests = n;
      break;
    }
    case OPT_ROUNDS:
      if (count_option(ctx, "--rounds", optarg, 1, 100000, &c->search.rounds))
        return KS_EXIT_USAGE;
      break;
    case OPT_MAX_EVALS:
      if (count_option(ctx, "--max-evals", optarg, 1, 100000000, &c->search.max_evals))
        return KS_EXIT_USAGE;
      break;
    case OPT_PATIENCE:
      if (count_option(ctx, "--patience", optarg, 1, 100000, &c->search.patience))
        return KS_EXIT_USAGE;
      break;
    case OPT_MAX_SECONDS:
      if (seconds_option(ctx, "--max-seconds", optarg, &c->max_seconds))
        return KS_EXIT_USAGE;
      break;
    case OPT_SEED: {
      char *end;
      errno = 0;
      c->search.seed = strtoull(optarg, &end, 0);
      if (end == optarg || *end || errno)
        return ks_usage_error(ctx, &ks_cmd_optimize, "--seed takes a number, not '%s'", optarg);
      break;
    }
    case OPT_ISLANDS:
      if (count_option(ctx, "--islands", optarg, 1, 64, &c->search.islands))
        return KS_EXIT_USAGE;
      break;
    case OPT_POPULATION:
      if (count_option(ctx, "--population", optarg, 1, 1000, &c->search.population))
        return KS_EXIT_USAGE;
      break;
    case OPT_CHILDREN:
      if (count_option(ctx, "--children", optarg, 1, 1000, &c->search.children))
        return KS_EXIT_USAGE;
      break;
    case OPT_BEAM_WIDTH:
      if (count_option(ctx, "--beam-width", optarg, 1, 1000, &c->search.beam_width))
        return KS_EXIT_USAGE;
      break;
    case OPT_PROPOSALS:
      if (count_option(ctx, "--proposals", optarg, 1, 1000, &c->search.proposals))
        return KS_EXIT_USAGE;
      break;
    case OPT_NO_CONFIRM:
      c->search.confirm = false;
      break;
    case OPT_RESUME:
      c->resume = true;
      break;
    case OPT_STORE:
      c->store_dir = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_SAMPLE_SECONDS:
      if (seconds_option(ctx, "--sample-seconds", optarg, &c->judge.timing.max_seconds))
        return KS_EXIT_USAGE;
      break;
    case OPT_DEVICE: {
      unsigned d = 0;
      if (count_option(ctx, "--device", optarg, 0, 255, &d))
        return KS_EXIT_USAGE;
      c->judge.device = (int)d;
      c->device_given = true;
      break;
    }
    case OPT_DEVICES:
      if (ks_parse_devices(optarg, c->devices, &c->ndevices, &c->all_devices))
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--devices takes all or CUDA devices 0 to 255 as 0,1,... (at most "
                              "%d), not '%s'",
                              KS_MAX_WORKERS, optarg);
      break;
    case OPT_TIMEOUT:
      if (seconds_option(ctx, "--timeout", optarg, &secs))
        return KS_EXIT_USAGE;
      c->judge.timeout_ms = (unsigned)(secs * 1000);
      break;
    case OPT_COMPILER:
      if (ks_compiler_kind_parse(optarg, &c->judge.compiler))
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--compiler takes auto, nvrtc or nvcc, not '%s'", optarg);
      break;
    case OPT_STANDIN:
      c->standin = true;
      break;
    case OPT_MPI:
      c->mpi = true;
      break;
    case OPT_MPI_TIMEOUT:
      if (seconds_option(ctx, "--mpi-timeout", optarg, &c->mpi_timeout))
        return KS_EXIT_USAGE;
      break;
    case OPT_JSON:
      c->json = true;
      break;
    case OPT_PROFILE:
      c->profile = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_CAPTURE:
      *ks_array_push(&c->arena, &c->captures) = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_TOP:
      if (count_option(ctx, "--top", optarg, 1, 100000, &c->top))
        return KS_EXIT_USAGE;
      break;
    case OPT_MIN_SHARE: {
      char *end;
      double v = strtod(optarg, &end);
      if (end == optarg || *end || v <= 0 || v > 100)
        return ks_usage_error(ctx, &ks_cmd_optimize,
                              "--min-share takes a percentage above 0 and up to 100, not '%s'",
                              optarg);
      c->min_share = v;
      break;
    }
    case 'h':
      return -2;
    case ':':
      return ks_usage_error(ctx, &ks_cmd_optimize, "option '%s' needs a value", argv[optind - 1]);
    default:
      return ks_usage_error(ctx, &ks_cmd_optimize, "unknown option '%s'", argv[optind - 1]);
    }
  }
  ks_source_args_paths(&c->src, argc, argv, optind);
  if (c->profile && c->kernels.len)
    return ks_usage_error(ctx, &ks_cmd_optimize, "--profile and --kernel both choose the kernels; "
                                                 "give one of them");
  if (!c->profile && (c->top || c->min_share > 0))
    return ks_usage_error(ctx, &ks_cmd_optimize, "--top and --min-share choose from a --profile");
  if (c->device_given && (c->ndevices || c->all_devices))
    return ks_usage_error(ctx, &ks_cmd_optimize, "--device and --devices both choose the devices; "
                                                 "give one of them");
  if (c->mpi && c->profile)
    return ks_usage_error(ctx, &ks_cmd_optimize,
                          "--mpi takes the kernels by --kernel or their specs and captures, not "
                          "--profile: run `kernelsmith-cc profile` first and give its captures "
                          "with --capture");
  if (!c->mpi && c->mpi_timeout > 0)
    return ks_usage_error(ctx, &ks_cmd_optimize, "--mpi-timeout goes with --mpi");
  return 0;
}

static void config_release(config *c) {
  if (c->src_init)
    ks_source_args_release(&c->src);
  ks_arena_release(&c->arena);
  memset(c, 0, sizeof *c);
}


/* The command line as stored with the run (without --resume). */
static const char *argv_json(int argc, char **argv) {
  cJSON *root = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(root, "argv");
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--resume"))
      cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd))
    cJSON_AddStringToObject(root, "cwd", cwd);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

/* Reads a stored command line back into argv (argv[0] = "optimize"). */
static int stored_argv(ks_ctx *ctx, const char *json, ks_arena *a, int *argc, char ***argv,
                       const char **cwd) {
  cJSON *root = cJSON_Parse(json);
  cJSON *arr = root ? cJSON_GetObjectItem(root, "argv") : NULL;
  if (!cJSON_IsArray(arr)) {
    cJSON_Delete(root);
    return ks_fail(ctx, "the stored run has no command line to resume with");
  }
  int n = cJSON_GetArraySize(arr);
  char **v = ks_arena_alloc(a, (size_t)(n + 3) * sizeof *v);
  v[0] = "optimize";
  for (int i = 0; i < n; i++) {
    const char *s = cJSON_GetStringValue(cJSON_GetArrayItem(arr, i));
    v[i + 1] = ks_arena_strdup(a, s ? s : "");
  }
  cJSON *c = cJSON_GetObjectItem(root, "cwd");
  *cwd = cJSON_IsString(c) ? ks_arena_strdup(a, c->valuestring) : NULL;
  *argc = n + 1;
  *argv = v;
  cJSON_Delete(root);
  return 0;
}

/* The hot kernels of --profile, as --kernel names.
 * The scan kernel each maps to is named by its signature, which tells
 * overloads apart; a template's instantiations were added up into one.
 * ks_pipeline_targets warns about each one without a spec. */
static int profile_kernels(ks_ctx *ctx, config *c) {
  ks_profile p;
  if (ks_profile_load(ctx, c->profile, &p))
    return -1;
  unsigned top = c->top ? c->top : c->min_share > 0 ? 0 : 5;
  ks_profile_picks picks = {0};
  ks_profile_select(&p, top, c->min_share, &c->arena, &picks);
  for (size_t i = 0; i < picks.len; i++) {
    const ks_profile_pick *k = &picks.items[i];
    if (k->source) {
      ks_info(ctx, "hot kernel %s: %.1f%% of the GPU time (%s:%u)", k->source->qualified_name,
              100 * k->share, k->source->file ? k->source->file : "?", k->source->line);
      *ks_array_push(&c->arena, &c->kernels) = ks_arena_strdup(&c->arena, k->source->signature);
    } else {
      ks_warn(ctx, "hot kernel %s (%.1f%% of the GPU time) is not in the sources; not searched",
              k->name, 100 * k->share);
    }
  }
  int rc = 0;
  if (!p.kernels.len)
    rc = ks_fail(ctx, "%s: the profile holds no kernel: the application ran none on the GPU",
                 c->profile);
  else if (!picks.len)
    rc = ks_fail(ctx, "%s: no kernel has %g%% of the GPU time or more", c->profile, c->min_share);
  else if (!c->kernels.len)
    rc = ks_fail(ctx, "%s: none of the hot kernels is in the sources (a library's kernels are "
                      "not searched)", c->profile);
  ks_profile_release(&p);
  /* profile --capture writes capture.kscap beside the profile. */
  if (!rc && !c->captures.len) {
    const char *slash = strrchr(c->profile, '/');
    const char *beside = slash ? ks_arena_printf(&c->arena, "%.*s/capture.kscap",
                                                 (int)(slash - c->profile), c->profile)
                               : "capture.kscap";
    if (!access(beside, F_OK)) {
      *ks_array_push(&c->arena, &c->captures) = beside;
      ks_info(ctx, "captured inputs from %s", beside);
    }
  }
  return rc;
}

/* The pipeline (ks_pipeline.h) with optimize's progress, and its table or
 * JSON; returns the exit status. */
static int optimize_run(ks_pipeline_job *job, bool json) {
  ks_ctx *ctx = job->ctx;
  ks_progress_line progress;
  ks_progress_init(&progress, stderr, ctx->color);
  job->hooks = ks_progress_hooks(&progress, ctx, json);
  ks_pipeline p;
  ks_pipeline_init(&p, job);
  int rc = KS_EXIT_OK;
  if (ks_pipeline_optimize(&p))
    goto fail;
  if (p.no_gpu) {
    fprintf(stderr,
            "%s: %zu kernel%s scanned, sliced and compiled for sm_90%s; the search needs an "
            "NVIDIA GPU (%s)\n",
            ctx->prog, p.ready, p.ready == 1 ? "" : "s",
            p.failed ? ks_arena_printf(&p.arena, " (%zu failed)", p.failed) : "", p.no_gpu);
    rc = p.kernel_failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
    goto out;
  }
  if (json) {
    if (ks_outcomes_json(ctx, stdout, &p.outcomes, p.run, ks_strategy_name(job->search.strategy),
                         ks_proposer_kind_name(job->proposer), job->search.seed, p.device,
                         !job->standin))
      goto fail;
  } else {
    ks_outcomes_print(stdout, &p.outcomes, !job->standin, ks_color_wanted(stdout) && ctx->color);
  }
  rc = p.kernel_failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
  rc = KS_EXIT_FAILURE;
out:
  ks_pipeline_release(&p);
  return rc;
}

/* --mpi with neither --device nor --devices: this rank's place on its host
 * (Open MPI says it), so that N ranks on a host of N GPUs take one each. */
static int local_rank(const config *c) {
  if (c->device_given || c->ndevices || c->all_devices)
    return 0;
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  long r = s ? strtol(s, NULL, 10) : 0;
  return r > 0 && r < 4096 ? (int)r : 0;
}

/* A rank > 0 of --mpi, of optimize or tune (ranked.h): rank 0's optimize
 * command line (tune's rank 0 makes one for its search), its files, a
 * store of its own that nobody reads (rank 0 owns the run's), and no table
 * at the end. */
int ks_optimize_follow(ks_ctx *ctx, ks_pipeline_ranks *ranks) {
  config c = {0};
  ks_arena a = KS_ARENA_INIT;
  const char *text, *cwd;
  int sargc = 0;
  char **sargv = NULL;
  int rc = KS_EXIT_FAILURE;
  char store_dir[] = "/tmp/kernelsmith-rank-XXXXXX";
  bool made = false;
  if (ks_pipeline_ranks_argv(ranks, ctx, NULL, &a, &text) ||
      stored_argv(ctx, text, &a, &sargc, &sargv, &cwd))
    goto fail;
  if (parse(ctx, sargc, sargv, &c)) {
    ks_fail(ctx, "--mpi: rank 0's command line does not parse here");
    goto fail;
  }
  if (ks_pipeline_ranks_inputs(ranks, ctx, &c.src.scan, &c.captures, &c.arena))
    goto fail;
  const char *tmp = getenv("TMPDIR");
  const char *dir = tmp && *tmp ? ks_arena_printf(&a, "%s/kernelsmith-rank-XXXXXX", tmp) : store_dir;
  char *path = ks_arena_strdup(&a, dir);
  if (!mkdtemp(path)) {
    ks_fail(ctx, "--mpi: a private store in %s: %s", dir, strerror(errno));
    goto fail;
  }
  made = true;
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  ks_pipeline_job job = {.ctx = ctx, .scan = &c.src.scan, .kernels = &c.kernels,
                         .search = c.search, .tuning = c.tuning, .proposer = c.proposer,
                         .llm = &c.llm, .llm_cache = (ks_llm_cache_mode)c.llm_cache,
                         .llm_plans = c.llm_plans, .standin = c.standin, .store_dir = path,
                         .judge = c.judge, .devices = c.ndevices ? c.devices : NULL,
                         .ndevices = c.ndevices, .all_devices = c.all_devices,
                         .max_seconds = c.max_seconds, .captures = &c.captures,
                         .interrupted = &interrupted, .ranks = ks_pipeline_ranks_search(ranks),
                         .local_rank = local_rank(&c)};
  ks_pipeline p;
  ks_pipeline_init(&p, &job);
  rc = ks_pipeline_optimize(&p) ? KS_EXIT_FAILURE
                                : p.kernel_failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
  if (rc)
    ks_error(ctx, "%s", ctx->error[0] ? ctx->error : "a search failed on this rank");
  ks_pipeline_release(&p);
  goto out;
fail:
  ks_error(ctx, "%s", ctx->error);
out:
  if (made) {
    ks_ctx quiet;
    ks_ctx_init(&quiet, ctx->prog);
    ks_remove_tree(&quiet, path);
    ks_ctx_release(&quiet);
  }
  config_release(&c);
  ks_arena_release(&a);
  return rc;
}

static int run_ranked(ks_ctx *ctx, int argc, char **argv, ks_pipeline_ranks *ranks);

static int run(ks_ctx *ctx, int argc, char **argv) {
  return ks_ranked_run(ctx, argc, argv, run_ranked);
}

static int run_ranked(ks_ctx *ctx, int argc, char **argv, ks_pipeline_ranks *ranks) {
  config c = {0};
  int rc = parse(ctx, argc, argv, &c);
  if (rc == -2) {
    config_release(&c);
    return ks_print_help(&ks_cmd_optimize);
  }
  if (rc) {
    config_release(&c);
    return rc;
  }
  const char *store_dir = c.store_dir ? c.store_dir : ks_store_default_dir(&c.arena);
  int eargc = argc; /* the command line that counts: a resumed run's own */
  char **eargv = argv;
  long long resume_run = 0;
  ks_store *store = NULL;
  if (c.resume) {
    /* Everything but where the store is and how to print comes from the
     * stored run. */
    for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      if (!strcmp(a, "--resume") || !strcmp(a, "--json") || !strncmp(a, "--store=", 8) ||
          !strcmp(a, "--mpi") || !strncmp(a, "--mpi-timeout=", 14))
        continue;
      if ((!strcmp(a, "--store") || !strcmp(a, "--mpi-timeout")) && i + 1 < argc) {
        i++;
        continue;
      }
      config_release(&c);
      return ks_usage_error(ctx, &ks_cmd_optimize,
                            "--resume takes no options but --store, --json and --mpi (the run "
                            "keeps its own), not '%s'",
                            a);
    }
    bool json = c.json;
    if (ks_store_open(ctx, store_dir, &store))
      goto fail;
    ks_run_row last;
    bool found = false;
    if (ks_store_run_latest(ctx, store, &c.arena, &last, &found))
      goto fail;
    if (!found) {
      ks_fail(ctx, "nothing to resume: %s holds no run", ks_store_path(store));
      goto fail;
    }
    if (last.command && !strcmp(last.command, "tune")) {
      ks_fail(ctx, "nothing to resume: run %lld is a tune; continue it with kernelsmith-cc tune "
                   "--resume", last.id);
      goto fail;
    }
    if (!strcmp(last.status, "done")) {
      ks_fail(ctx, "nothing to resume: run %lld finished (%s); start a new one without --resume",
              last.id, last.finished ? last.finished : "");
      goto fail;
    }
    int sargc = 0;
    char **sargv = NULL;
    const char *cwd = NULL;
    if (stored_argv(ctx, last.options, &c.arena, &sargc, &sargv, &cwd))
      goto fail;
    if (cwd && chdir(cwd)) {
      ks_fail(ctx, "cannot resume in %s, where run %lld was started: %s", cwd, last.id,
              strerror(errno));
      goto fail;
    }
    resume_run = last.id;
    config fresh = {0};
    fresh.arena = c.arena; /* keep what was read */
    c.arena = (ks_arena)KS_ARENA_INIT;
    config_release(&c);
    c = fresh;
    if ((rc = parse(ctx, sargc, sargv, &c)) != 0) {
      ks_store_close(store);
      config_release(&c);
      return rc == -2 ? KS_EXIT_USAGE : rc;
    }
    c.json = c.json || json;
    ks_info(ctx, "resuming run %lld", resume_run);
    eargc = sargc;
    eargv = sargv;
  }
  if (ranks) {
    /* The others run what this rank runs, on the files it reads. */
    const char *mine = argv_json(eargc, eargv), *ignored;
    int r = ks_pipeline_ranks_argv(ranks, ctx, mine, &c.arena, &ignored);
    free((void *)mine);
    if (r || ks_pipeline_ranks_inputs(ranks, ctx, &c.src.scan, &c.captures, &c.arena))
      goto fail;
  }
  if (c.profile && profile_kernels(ctx, &c))
    goto fail;
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  ks_pipeline_job job = {.ctx = ctx, .scan = &c.src.scan, .kernels = &c.kernels,
                      .search = c.search, .tuning = c.tuning,
                      .proposer = c.proposer, .llm = &c.llm,
                      .llm_cache = (ks_llm_cache_mode)c.llm_cache, .llm_plans = c.llm_plans,
                      .standin = c.standin, .store_dir = store_dir, .store = store,
                      .judge = c.judge, .devices = c.ndevices ? c.devices : NULL,
                      .ndevices = c.ndevices, .all_devices = c.all_devices,
                      .max_seconds = c.max_seconds, .captures = &c.captures,
                      .resume_run = resume_run, .interrupted = &interrupted,
                      .argv_json = resume_run ? NULL : argv_json(argc, argv),
                      .ranks = ranks ? ks_pipeline_ranks_search(ranks) : NULL,
                      .local_rank = ranks ? local_rank(&c) : 0};
  rc = optimize_run(&job, c.json);
  free((void *)job.argv_json);
  config_release(&c);
  return rc;
fail:
  ks_error(ctx, "%s", ctx->error);
  if (store)
    ks_store_close(store);
  config_release(&c);
  return KS_EXIT_FAILURE;
}

const ks_command ks_cmd_optimize = {
    "optimize", "search for faster variants of every kernel with a spec (the main job)", usage,
    run};
