/* kernelsmith-cc tune: from a program to a verified patch in one command.
 * The phases are the pipeline's (ks_tune_run, passes/pipeline/tune.c);
 * this file parses the options, shows the progress (a live line per phase
 * and kernel on a terminal, plain lines otherwise) and prints the table,
 * the patch's path and, with --json, the whole result (schema
 * kernelsmith-cc.tune, docs/tune.md). */
#include <cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_cli.h"
#include "ks_fs.h"
#include "ks_optimize_report.h"
#include "ks_pipeline.h"
#include "ks_profile_run.h"
#include "ks_source_args.h"
#include "ks_store.h"
#include "ranked.h"

static const char usage[] =
    "usage: kernelsmith-cc tune [options] [PATH...] -- CMD [ARGS...]\n"
    "\n"
    "Makes the program CMD faster in one command: runs it once with every kernel\n"
    "timed (as 'profile' does), picks its hot kernels among the sources under\n"
    "PATH (default: the current directory), runs it again to capture their\n"
    "launches' inputs, searches faster variants of each under one time budget\n"
    "(as 'optimize' does), writes the winners as a patch for 'git apply' (as\n"
    "'apply' prints it) and runs the program with and without them (as 'verify'\n"
    "does: the variants run where its build uses the winners, through the\n"
    "compiler launcher). Ends with a table: kernel, share of the program's GPU\n"
    "time, speedup in the search and in the program, technique chain, verdict.\n"
    "\n"
    "Every phase is recorded in the results store as it ends; a tune that was\n"
    "stopped or killed continues with --resume, repeating no finished phase and\n"
    "no finished kernel. Nothing is written outside .kernelsmith/. The program's\n"
    "output goes to stderr, so that stdout holds only the table.\n"
    "\n"
    "Without an NVIDIA driver the program is not run: every kernel with a spec\n"
    "is scanned, sliced and compiled, and a line says the rest needs a GPU.\n"
    "\n"
    "options:\n"
    "      --top N          the N kernels with the most GPU time\n"
    "      --min-share P    the kernels with P% of the GPU time or more (default:\n"
    "                       those holding 90% of it, at most 5)\n"
    "      --max-seconds S  wall time of the searches, shared by the kernels\n"
    "                       (default 180)\n"
    "      --rounds N       rounds per kernel (default 40)\n"
    "      --proposer P     rules (default), tuning, llm or all (as for optimize)\n"
    "      --seed S         seed of every random choice (default 1)\n"
    "      --capture-limit BYTES  the most allocation bytes one launch may capture\n"
    "                       (default 1G; K, M, G suffixes)\n"
    "      --capture-window BYTES  snapshot allocations larger than this only where\n"
    "                       the launch's pointers point (pooled memory)\n"
    "      --resume         continue the newest unfinished tune with the options it\n"
    "                       was started with (only --store and --json may be given)\n"
    "      --store DIR      the results store (default: .kernelsmith in the project\n"
    "                       root, as for optimize)\n"
    "      --json FILE      also write the whole result as JSON to FILE ('-':\n"
    "                       stdout, instead of the table)\n"
    "      --device N       CUDA device (default 0)\n"
    "      --devices D      all, or CUDA devices as 0,1,...: one worker each (as\n"
    "                       for optimize)\n"
    "      --stand-in-judge judge with a deterministic stand-in instead of the GPU\n"
    "                       (for tests; its numbers are not measurements)\n"
    "      --mpi            one rank of `mpirun -np N kernelsmith-cc tune --mpi`: rank\n"
    "                       0 runs the program and every phase; the search is\n"
    "                       spread over all ranks as optimize --mpi spreads it\n"
    "                       (docs/optimize.md, \"Several hosts\")\n"
    "      --mpi-timeout S  a rank silent this long is lost and rank 0 takes over\n"
    "                       its share (default 60)\n"
    KS_SOURCE_HELP
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 when every phase finished (a winner that is not faster in\n"
    "the program is reported, not an error) or there is no GPU, 1 when the\n"
    "program failed, a kernel failed or the tune was interrupted, 2 on a usage\n"
    "error. See docs/tune.md.\n";

const ks_command ks_cmd_tune;

extern const char ks_runtime_header[];

static volatile int interrupted;
static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

typedef struct config {
  ks_source_args src;
  bool src_init;
  ks_arena arena;
  ks_search_options search;
  ks_proposer_kind proposer;
  bool standin, resume;
  unsigned top;
  double min_share, max_seconds;
  long long capture_limit, capture_window;
  const char *store_dir, *json;
  int device;
  int devices[KS_MAX_WORKERS]; /* --devices; ndevices 0: --device alone */
  size_t ndevices;
  bool all_devices, device_given;
  const char *devices_text;   /* --devices as given, for the other ranks */
  bool mpi;                   /* --mpi: one rank of an mpirun job */
  double mpi_timeout;         /* --mpi-timeout; 0: the cluster's default */
  char **cmd;
  int ncmd;
} config;

enum { OPT_TOP = 300, OPT_MIN_SHARE, OPT_MAX_SECONDS, OPT_ROUNDS, OPT_PROPOSER, OPT_SEED,
       OPT_CAPTURE_LIMIT, OPT_CAPTURE_WINDOW, OPT_RESUME, OPT_STORE, OPT_JSON, OPT_DEVICE,
       OPT_STANDIN, OPT_DEVICES, OPT_MPI, OPT_MPI_TIMEOUT };

/* Parses argv into `c`: 0, KS_EXIT_USAGE, or -2 for --help. */
static int parse(ks_ctx *ctx, int argc, char **argv, config *c) {
  static const struct option opts[] = {KS_SOURCE_LONG,
                                       {"top", required_argument, NULL, OPT_TOP},
                                       {"min-share", required_argument, NULL, OPT_MIN_SHARE},
                                       {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
                                       {"rounds", required_argument, NULL, OPT_ROUNDS},
                                       {"proposer", required_argument, NULL, OPT_PROPOSER},
                                       {"seed", required_argument, NULL, OPT_SEED},
                                       {"capture-limit", required_argument, NULL, OPT_CAPTURE_LIMIT},
                                       {"capture-window", required_argument, NULL, OPT_CAPTURE_WINDOW},
                                       {"resume", no_argument, NULL, OPT_RESUME},
                                       {"store", required_argument, NULL, OPT_STORE},
                                       {"json", required_argument, NULL, OPT_JSON},
                                       {"device", required_argument, NULL, OPT_DEVICE},
                                       {"devices", required_argument, NULL, OPT_DEVICES},
                                       {"stand-in-judge", no_argument, NULL, OPT_STANDIN},
                                       {"mpi", no_argument, NULL, OPT_MPI},
                                       {"mpi-timeout", required_argument, NULL, OPT_MPI_TIMEOUT},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  /* Options and paths stop at "--". */
  int dashes = 0;
  for (int i = 1; i < argc && !dashes; i++)
    if (!strcmp(argv[i], "--"))
      dashes = i;
  int opt_argc = dashes ? dashes : argc;
  ks_source_args_init(&c->src, argc);
  c->src_init = true;
  ks_search_options_defaults(&c->search);
  c->search.seed = 1;
  c->max_seconds = 180;
  optind = 0; /* parse may run twice (--resume reads the stored line) */
  opterr = 0;
  int opt;
  while ((opt = getopt_long(opt_argc, argv, "+:" KS_SOURCE_SHORT "h", opts, NULL)) != -1) {
    if (ks_source_args_option(&c->src, opt, optarg))
      continue;
    char *end;
    switch (opt) {
    case OPT_TOP: {
      long n = ks_parse_count(optarg);
      if (n < 1 || n > 1000)
        return ks_usage_error(ctx, &ks_cmd_tune, "--top takes a number from 1 to 1000, not '%s'",
                              optarg);
      c->top = (unsigned)n;
      break;
    }
    case OPT_MIN_SHARE:
      c->min_share = strtod(optarg, &end);
      if (end == optarg || *end || c->min_share <= 0 || c->min_share > 100)
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--min-share takes a percentage above 0 and up to 100, not '%s'",
                              optarg);
      break;
    case OPT_MAX_SECONDS:
      c->max_seconds = strtod(optarg, &end);
      if (end == optarg || *end || c->max_seconds <= 0)
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--max-seconds takes a positive number of seconds, not '%s'",
                              optarg);
      break;
    case OPT_ROUNDS: {
      long n = ks_parse_count(optarg);
      if (n < 1 || n > 100000)
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--rounds takes a number from 1 to 100000, not '%s'", optarg);
      c->search.rounds = (unsigned)n;
      break;
    }
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
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--proposer is rules, tuning, llm or all, not '%s'", optarg);
      break;
    case OPT_SEED:
      errno = 0;
      c->search.seed = strtoull(optarg, &end, 0);
      if (end == optarg || *end || errno)
        return ks_usage_error(ctx, &ks_cmd_tune, "--seed takes a number, not '%s'", optarg);
      break;
    case OPT_CAPTURE_LIMIT:
    case OPT_CAPTURE_WINDOW: {
      long long v = ks_parse_bytes(optarg);
      if (v <= 0)
        return ks_usage_error(ctx, &ks_cmd_tune, "%s takes a positive number of bytes, not '%s'",
                              opt == OPT_CAPTURE_LIMIT ? "--capture-limit" : "--capture-window",
                              optarg);
      *(opt == OPT_CAPTURE_LIMIT ? &c->capture_limit : &c->capture_window) = v;
      break;
    }
    case OPT_RESUME:
      c->resume = true;
      break;
    case OPT_STORE:
      c->store_dir = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_JSON:
      c->json = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_DEVICE: {
      long n = ks_parse_count(optarg);
      if (n < 0 || n > 255)
        return ks_usage_error(ctx, &ks_cmd_tune, "--device takes a number from 0 to 255, not '%s'",
                              optarg);
      c->device = (int)n;
      c->device_given = true;
      break;
    }
    case OPT_DEVICES:
      if (ks_parse_devices(optarg, c->devices, &c->ndevices, &c->all_devices))
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--devices takes all or CUDA devices 0 to 255 as 0,1,... (at most "
                              "%d), not '%s'",
                              KS_MAX_WORKERS, optarg);
      c->devices_text = ks_arena_strdup(&c->arena, optarg);
      break;
    case OPT_MPI:
      c->mpi = true;
      break;
    case OPT_MPI_TIMEOUT: {
      char *rest;
      c->mpi_timeout = strtod(optarg, &rest);
      if (rest == optarg || *rest || !(c->mpi_timeout > 0) || c->mpi_timeout > 86400)
        return ks_usage_error(ctx, &ks_cmd_tune,
                              "--mpi-timeout takes seconds, more than 0, not '%s'", optarg);
      break;
    }
    case OPT_STANDIN:
      c->standin = true;
      break;
    case 'h':
      return -2;
    case ':':
      return ks_usage_error(ctx, &ks_cmd_tune, "option '%s' needs a value", argv[optind - 1]);
    default:
      return ks_usage_error(ctx, &ks_cmd_tune, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (c->top && c->min_share > 0)
    return ks_usage_error(ctx, &ks_cmd_tune, "--top and --min-share both choose the kernels; "
                                             "give one of them");
  ks_source_args_paths(&c->src, opt_argc, argv, optind);
  c->cmd = dashes ? argv + dashes + 1 : NULL;
  c->ncmd = dashes ? argc - dashes - 1 : 0;
  if (!c->resume && c->ncmd <= 0)
    return ks_usage_error(ctx, &ks_cmd_tune, "no program to tune: give it after '--'");
  if (c->device_given && (c->ndevices || c->all_devices))
    return ks_usage_error(ctx, &ks_cmd_tune, "--device and --devices both choose the devices; "
                                             "give one of them");
  if (!c->mpi && c->mpi_timeout > 0)
    return ks_usage_error(ctx, &ks_cmd_tune, "--mpi-timeout goes with --mpi");
  return 0;
}

static void config_release(config *c) {
  if (c->src_init)
    ks_source_args_release(&c->src);
  ks_arena_release(&c->arena);
  memset(c, 0, sizeof *c);
}

/* The command line as stored with the run (without --resume and --json). */
static const char *argv_json(ks_arena *a, int argc, char **argv) {
  cJSON *root = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(root, "argv");
  bool dashes = false;
  for (int i = 1; i < argc; i++) {
    dashes = dashes || !strcmp(argv[i], "--");
    if (!dashes && !strcmp(argv[i], "--resume"))
      continue;
    if (!dashes && !strcmp(argv[i], "--json") && i + 1 < argc) {
      i++;
      continue;
    }
    if (!dashes && !strncmp(argv[i], "--json=", 7))
      continue;
    cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd))
    cJSON_AddStringToObject(root, "cwd", cwd);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  const char *r = ks_arena_strdup(a, text);
  free(text);
  return r;
}

/* tune --mpi: the optimize options the other ranks search with, as rank 0
 * searches (ks_optimize_follow parses them; the search phase adds the hot
 * kernels and the capture). Made from what was parsed, not copied from
 * argv, so that tune's own options (and their abbreviations) stay out. */
static void follow_argv(const config *c, double sample_seconds, ks_arena *a, ks_strings *out) {
  *ks_array_push(a, out) = "--rounds";
  *ks_array_push(a, out) = ks_arena_printf(a, "%u", c->search.rounds);
  *ks_array_push(a, out) = "--seed";
  *ks_array_push(a, out) = ks_arena_printf(a, "%llu", (unsigned long long)c->search.seed);
  *ks_array_push(a, out) = "--proposer";
  *ks_array_push(a, out) = ks_proposer_kind_name(c->proposer);
  *ks_array_push(a, out) = ks_arena_printf(a, "--max-seconds=%.17g", c->max_seconds);
  *ks_array_push(a, out) = ks_arena_printf(a, "--sample-seconds=%.17g", sample_seconds);
  if (c->standin)
    *ks_array_push(a, out) = "--stand-in-judge";
  if (c->device_given)
    *ks_array_push(a, out) = ks_arena_printf(a, "--device=%d", c->device);
  if (c->devices_text)
    *ks_array_push(a, out) = ks_arena_printf(a, "--devices=%s", c->devices_text);
  ks_source_args_words(&c->src, a, out);
}

/* The newest tune of the store that did not finish, and its command line
 * (argv[0] = "tune"). */
static int resumable(ks_ctx *ctx, const char *store_dir, ks_arena *a, long long *run, int *argc,
                     char ***argv) {
  ks_store *s;
  if (ks_store_open(ctx, store_dir, &s))
    return -1;
  ks_run_rows runs = {0};
  int rc = ks_store_runs(ctx, s, a, &runs);
  const char *path = ks_arena_strdup(a, ks_store_path(s));
  ks_store_close(s);
  if (rc)
    return -1;
  const ks_run_row *last = NULL;
  for (size_t i = 0; i < runs.len; i++)
    if (!strcmp(runs.items[i].command, "tune") && (!last || runs.items[i].id > last->id))
      last = &runs.items[i];
  if (!last)
    return ks_fail(ctx, "nothing to resume: %s holds no tune", path);
  if (!strcmp(last->status, "done"))
    return ks_fail(ctx, "nothing to resume: tune run %lld finished (%s); start a new one "
                        "without --resume",
                   last->id, last->finished ? last->finished : "");
  cJSON *root = cJSON_Parse(last->options ? last->options : "");
  cJSON *arr = root ? cJSON_GetObjectItem(root, "argv") : NULL;
  if (!cJSON_IsArray(arr)) {
    cJSON_Delete(root);
    return ks_fail(ctx, "tune run %lld has no command line to resume with", last->id);
  }
  int n = cJSON_GetArraySize(arr);
  char **v = ks_arena_alloc(a, (size_t)(n + 2) * sizeof *v);
  v[0] = "tune";
  for (int i = 0; i < n; i++) {
    const char *word = cJSON_GetStringValue(cJSON_GetArrayItem(arr, i));
    v[i + 1] = ks_arena_strdup(a, word ? word : "");
  }
  const char *cwd = cJSON_GetStringValue(cJSON_GetObjectItem(root, "cwd"));
  if (cwd && chdir(cwd)) {
    ks_fail(ctx, "cannot resume in %s, where tune run %lld was started: %s", cwd, last->id,
            strerror(errno));
    cJSON_Delete(root);
    return -1;
  }
  cJSON_Delete(root);
  *run = last->id;
  *argc = n + 1;
  *argv = v;
  return 0;
}

/* ---- progress ---- */

typedef struct ui {
  ks_ctx *ctx;
  ks_progress_line line;
  ks_pipeline_hooks search; /* optimize's, wrapped */
  bool quiet;
} ui;

/* Test fault site "tune_kill" (KERNELSMITH_FAULTS=tune_kill:N): at the
 * Nth phase start or finished kernel, the process is killed as kill -9
 * would, for the resume tests. */
static void maybe_die(ui *u) {
  if (ks_fault(u->ctx, "tune_kill"))
    raise(SIGKILL);
}

static void on_phase(void *arg, ks_tune_phase p, bool done) {
  ui *u = arg;
  maybe_die(u);
  ks_progress_end(&u->line);
  const char *what[] = {"running the program, every kernel timed", "choosing the hot kernels",
                        "running the program again, capturing their launches",
                        "searching faster variants", "writing the patch",
                        "running the program with and without the variants"};
  char text[256];
  snprintf(text, sizeof text, "[%d/%d] %s: %s", (int)p + 1, KS_TUNE_NPHASES,
           ks_tune_phase_name(p), done ? "done before (resumed)" : what[p]);
  if (u->quiet || u->ctx->verbosity < KS_LOG_WARN)
    return;
  if (u->line.live && p != KS_TUNE_PROFILE && p != KS_TUNE_CAPTURE && p != KS_TUNE_VERIFY) {
    fprintf(stderr, "\r\033[K%s", text);
    fflush(stderr);
    u->line.dirty = true;
  } else {
    fprintf(stderr, "%s: %s\n", u->ctx->prog, text);
  }
}

static void on_begin(void *arg, const ks_llm_tally *llm) {
  ui *u = arg;
  ks_progress_end(&u->line);
  u->search.search_begin(u->search.arg, llm);
}
static void on_progress(void *arg, const ks_search_progress *s) {
  ui *u = arg;
  u->search.search_progress(u->search.arg, s);
}
static void on_end(void *arg) {
  ui *u = arg;
  u->search.search_end(u->search.arg);
}
static void on_done(void *arg, const ks_outcome *o) {
  ui *u = arg;
  u->search.kernel_done(u->search.arg, o);
  maybe_die(u);
}
static void on_say(void *arg, const char *line) {
  ui *u = arg;
  u->search.say(u->search.arg, line);
}

/* ---- the result ---- */

static const char *verdict_text(ks_arena *a, const ks_tune_kernel *k) {
  if (!k->reason || !strcmp(k->verdict, "faster"))
    return k->verdict;
  return ks_arena_printf(a, "%s: %s", k->verdict, k->reason);
}

static void speedup_cell(char *buf, size_t n, double x) {
  if (x > 0)
    snprintf(buf, n, "%.2fx", x);
  else
    snprintf(buf, n, "-");
}

static void print_table(FILE *out, const ks_tune_result *r, bool standin, ks_arena *a) {
  size_t w = strlen("kernel");
  for (size_t i = 0; i < r->kernels.len; i++) {
    size_t n = strlen(r->kernels.items[i].name);
    if (n > w)
      w = n > 48 ? 48 : n;
  }
  fprintf(out, "%-*s  %6s  %7s  %7s  %-28s  %s\n", (int)w, "kernel", "share", "search",
          "program", "techniques", "verdict");
  for (size_t i = 0; i < r->kernels.len; i++) {
    const ks_tune_kernel *k = &r->kernels.items[i];
    char s[32], p[32];
    speedup_cell(s, sizeof s, k->search_speedup);
    speedup_cell(p, sizeof p, k->program_speedup);
    fprintf(out, "%-*.*s  %5.1f%%  %7s  %7s  %-28s  %s\n", (int)w, (int)w, k->name,
            100 * k->share, s, p, k->techniques && *k->techniques ? k->techniques : "-",
            verdict_text(a, k));
  }
  if (r->not_picked)
    fprintf(out, "%zu other kernel%s of the program not tuned (less GPU time)\n", r->not_picked,
            r->not_picked == 1 ? "" : "s");
  if (standin)
    fprintf(out, "note: judged by the stand-in (--stand-in-judge): the search's numbers are not "
                 "measurements\n");
  if (r->patch_path) {
    char cwd[4096];
    const char *shown = r->patch_path;
    if (getcwd(cwd, sizeof cwd)) {
      size_t n = strlen(cwd);
      if (!strncmp(shown, cwd, n) && shown[n] == '/')
        shown += n + 1;
    }
    fprintf(out, "patch: %s (%zu file%s); apply it with: git apply %s\n", r->patch_path,
            r->patch_files, r->patch_files == 1 ? "" : "s", shown);
  } else if (r->phase_done[KS_TUNE_PATCH]) {
    fprintf(out, "no patch: no kernel has a winner\n");
  }
}

static cJSON *json_or_null(const char *s) {
  return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int write_json(ks_ctx *ctx, const char *path, const ks_tune_result *r, const config *c) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "kernelsmith-cc.tune");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddNumberToObject(root, "run", (double)r->run);
  cJSON *cmd = cJSON_AddArrayToObject(root, "command");
  for (int i = 0; i < c->ncmd; i++)
    cJSON_AddItemToArray(cmd, cJSON_CreateString(c->cmd[i]));
  cJSON_AddItemToObject(root, "device", json_or_null(r->device));
  cJSON_AddBoolToObject(root, "measured", !c->standin);
  cJSON_AddItemToObject(root, "no_gpu", json_or_null(r->no_gpu));
  cJSON_AddItemToObject(root, "failure", json_or_null(r->failure));
  cJSON_AddBoolToObject(root, "interrupted", r->interrupted);
  cJSON_AddNumberToObject(root, "program_ms", r->program_ms);
  cJSON_AddNumberToObject(root, "launches", (double)r->launches);
  cJSON_AddNumberToObject(root, "program_runs", r->program_runs);
  cJSON *phases = cJSON_AddObjectToObject(root, "phases");
  for (int p = 0; p < KS_TUNE_NPHASES; p++) {
    cJSON *ph = cJSON_AddObjectToObject(phases, ks_tune_phase_name((ks_tune_phase)p));
    cJSON_AddBoolToObject(ph, "done", r->phase_done[p]);
    cJSON_AddBoolToObject(ph, "resumed", r->phase_resumed[p]);
  }
  cJSON_AddItemToObject(root, "capture", json_or_null(r->capture_choice));
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (size_t i = 0; i < r->kernels.len; i++) {
    const ks_tune_kernel *k = &r->kernels.items[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", k->name);
    cJSON_AddItemToObject(o, "mangled", json_or_null(k->mangled));
    cJSON_AddItemToObject(o, "file", json_or_null(k->file));
    cJSON_AddNumberToObject(o, "line", k->line);
    cJSON_AddNumberToObject(o, "share", k->share);
    cJSON_AddNumberToObject(o, "total_ms", k->total_ms);
    cJSON_AddNumberToObject(o, "captured_launches", k->captured);
    cJSON_AddItemToObject(o, "search_speedup",
                          k->search_speedup > 0 ? cJSON_CreateNumber(k->search_speedup)
                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "program_speedup",
                          k->program_speedup > 0 ? cJSON_CreateNumber(k->program_speedup)
                                                 : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "techniques", k->techniques ? k->techniques : "");
    cJSON_AddStringToObject(o, "verdict", k->verdict);
    cJSON_AddItemToObject(o, "reason", json_or_null(k->reason));
    cJSON_AddNumberToObject(o, "evaluated", k->evaluated);
    cJSON_AddBoolToObject(o, "resumed", k->resumed);
    cJSON_AddItemToArray(ks, o);
  }
  cJSON_AddNumberToObject(root, "other_kernels", (double)r->not_picked);
  cJSON *patch = cJSON_AddObjectToObject(root, "patch");
  cJSON_AddItemToObject(patch, "path", json_or_null(r->patch_path));
  cJSON_AddNumberToObject(patch, "files", (double)r->patch_files);
  cJSON_AddItemToObject(root, "verify_report",
                        json_or_null(r->phase_done[KS_TUNE_VERIFY] && r->patch_path
                                         ? r->verify_path
                                         : NULL));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  int rc = 0;
  if (!strcmp(path, "-")) {
    fputs(text, stdout);
    fputc('\n', stdout);
  } else {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0)
      rc = ks_fail(ctx, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) && !rc)
      rc = ks_fail(ctx, "%s: cannot write: %s", path, strerror(errno));
  }
  free(text);
  return rc;
}

static int run_tune(ks_ctx *ctx, int argc, char **argv, ks_pipeline_ranks *ranks) {
  config c = {0};
  c.arena = (ks_arena)KS_ARENA_INIT;
  int rc = parse(ctx, argc, argv, &c);
  if (rc == -2) {
    config_release(&c);
    return ks_print_help(&ks_cmd_tune);
  }
  if (rc) {
    config_release(&c);
    return rc;
  }
  ks_arena a = KS_ARENA_INIT;
  long long resume_run = 0;
  const char *store_dir = c.store_dir ? ks_arena_strdup(&a, c.store_dir)
                                      : ks_store_default_dir(&a);
  const char *stored = NULL;
  if (c.resume) {
    for (int i = 1; i < argc; i++) {
      const char *s = argv[i];
      if (!strcmp(s, "--resume") || !strncmp(s, "--store=", 8) || !strncmp(s, "--json=", 7) ||
          !strcmp(s, "--mpi") || !strncmp(s, "--mpi-timeout=", 14))
        continue;
      if ((!strcmp(s, "--store") || !strcmp(s, "--json") || !strcmp(s, "--mpi-timeout")) &&
          i + 1 < argc) {
        i++;
        continue;
      }
      config_release(&c);
      ks_arena_release(&a);
      return ks_usage_error(ctx, &ks_cmd_tune,
                            "--resume takes no options but --store, --json and --mpi (the tune "
                            "keeps its own), not '%s'", s);
    }
    const char *json = c.json ? ks_arena_strdup(&a, c.json) : NULL;
    int sargc = 0;
    char **sargv = NULL;
    if (resumable(ctx, store_dir, &a, &resume_run, &sargc, &sargv)) {
      ks_error(ctx, "%s", ctx->error);
      config_release(&c);
      ks_arena_release(&a);
      return KS_EXIT_FAILURE;
    }
    config_release(&c);
    c.arena = (ks_arena)KS_ARENA_INIT;
    if ((rc = parse(ctx, sargc, sargv, &c)) != 0) {
      config_release(&c);
      ks_arena_release(&a);
      return rc == -2 ? KS_EXIT_USAGE : rc;
    }
    c.json = json;
    ks_info(ctx, "resuming tune run %lld", resume_run);
  } else {
    stored = argv_json(&a, argc, argv);
  }
  const char *lib = ks_inject_lib_find(ctx, &a);
  if (!lib) {
    ks_error(ctx, "%s", ctx->error);
    config_release(&c);
    ks_arena_release(&a);
    return KS_EXIT_FAILURE;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  ui u = {.ctx = ctx};
  ks_progress_init(&u.line, stderr, ctx->color);
  u.search = ks_progress_hooks(&u.line, ctx, false);
  ks_judge_options jo = {.device = c.device};
  jo.timing.max_seconds = 1;
  ks_tune_options o = {
      .job = {.ctx = ctx, .scan = &c.src.scan, .search = c.search,
              .tuning = c.proposer == KS_PROPOSER_TUNING, .standin = c.standin,
              .proposer = c.proposer, .store_dir = store_dir, .judge = jo,
              .devices = c.ndevices ? c.devices : NULL, .ndevices = c.ndevices,
              .all_devices = c.all_devices,
              .max_seconds = c.max_seconds, .interrupted = &interrupted, .argv_json = stored,
              .hooks = {.arg = &u, .search_begin = on_begin, .search_progress = on_progress,
                        .search_end = on_end, .kernel_done = on_done, .say = on_say}},
      .cmd = c.cmd, .ncmd = c.ncmd, .top = c.top, .min_share = c.min_share,
      .capture_limit = c.capture_limit, .capture_window = c.capture_window, .inject_lib = lib,
      .runtime_header = ks_runtime_header, .resume_run = resume_run, .phase = on_phase,
      .phase_arg = &u};
  ks_llm_config llm = {0};
  o.job.llm = &llm;
  ks_strings follow = {0};
  if (ranks) {
    follow_argv(&c, jo.timing.max_seconds, &a, &follow);
    o.ranks = ranks;
    o.follow_argv = follow.items;
    o.follow_argc = follow.len;
  }
  ks_tune_result r;
  if (ks_tune_run(ctx, &o, &a, &r)) {
    ks_progress_end(&u.line);
    ks_error(ctx, "%s", ctx->error);
    config_release(&c);
    ks_arena_release(&a);
    return KS_EXIT_FAILURE;
  }
  ks_progress_end(&u.line);
  rc = KS_EXIT_OK;
  if (r.no_gpu) {
    fprintf(stderr, "%s: tune: %zu kernel%s scanned, sliced and compiled for sm_90; the rest "
                    "(running the program, the search, verifying) needs an NVIDIA GPU (%s)\n",
            ctx->prog, r.compiled, r.compiled == 1 ? "" : "s", r.no_gpu);
    rc = r.kernel_failed ? KS_EXIT_FAILURE : KS_EXIT_OK;
  } else {
    if (r.failure)
      ks_error(ctx, "%s", r.failure);
    if (r.interrupted)
      fprintf(stderr, "%s: tune interrupted; continue with: kernelsmith-cc tune --resume\n",
              ctx->prog);
    /* A program that failed before any kernel was chosen: its one line
     * above is the whole report. */
    if ((!c.json || strcmp(c.json, "-")) && r.kernels.len)
      print_table(stdout, &r, c.standin, &a);
    if (r.failure || r.kernel_failed || r.interrupted)
      rc = KS_EXIT_FAILURE;
  }
  if (c.json && write_json(ctx, c.json, &r, &c)) {
    ks_error(ctx, "%s", ctx->error);
    rc = KS_EXIT_FAILURE;
  }
  config_release(&c);
  ks_arena_release(&a);
  return rc;
}

static int run(ks_ctx *ctx, int argc, char **argv) {
  return ks_ranked_run(ctx, argc, argv, run_tune);
}

const ks_command ks_cmd_tune = {
    "tune", "profile a program, optimize its hot kernels, verify them in it: one command",
    usage, run};
