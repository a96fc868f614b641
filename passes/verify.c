/* verify: the search's winners measured inside the user's program (see
 * ks_verify.h): the statistics lines of the dispatch read, the profiles of
 * the runs with and without the variants added up per winner, the verdicts
 * and their causes, and the runs themselves. The report's JSON and text are
 * verify_report.c's. */
#include "ks_verify.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_profile_run.h"

/* A winner faster in the program is "short of the search" below this share
 * of the search's speedup. */
#define KS_VERIFY_SEARCH_SHARE 0.9
/* Below this in-program speedup a winner is "not faster": a program's run
 * is one noisy sample, and 1.00x is no gain. */
#define KS_VERIFY_MIN_GAIN 1.02
/* The sites' launches that must take another path than the variant's for
 * that path to be the cause (a tenth). */
#define KS_VERIFY_PATH_SHARE 0.1
/* "far below" and "differs" for the mean time a launch against the judge's
 * baseline. */
#define KS_VERIFY_SIZE_RATIO 2.0
/* Fewer launches than this in a run are too few for the program's time to
 * be compared with the judge's median. */
#define KS_VERIFY_FEW_LAUNCHES 3

const char *ks_site_path_name(ks_site_path p) {
  static const char *const names[KS_NPATHS] = {"variant", "off", "other architecture",
                                               "guards failed", "no device"};
  return p >= 0 && p < KS_NPATHS ? names[p] : "?";
}

const char *ks_verify_verdict_name(ks_verify_verdict v) {
  switch (v) {
  case KS_VERIFY_FASTER:
    return "faster";
  case KS_VERIFY_NOT_FASTER:
    return "not faster";
  case KS_VERIFY_SHORT:
    return "short of the search";
  case KS_VERIFY_FAILED:
    return "failed";
  case KS_VERIFY_NOT_RUN:
    return "not run";
  }
  return "?";
}

const char *ks_verify_cause_name(ks_verify_cause_kind c) {
  static const char *const names[] = {
      NULL,          "guards failed", "switched off",       "another architecture",
      "no device",   "no dispatch",   "a different launch", "warm cache",
      "a different size", "few launches", "program failed", "unknown"};
  return c >= 0 && (size_t)c < sizeof names / sizeof *names ? names[c] : NULL;
}

/* ---- the dispatch's statistics lines ------------------------------------ */

bool ks_site_stats_parse(ks_arena *a, const char *line, ks_site_stats *out) {
  static const char prefix[] = "kernelsmith: ";
  memset(out, 0, sizeof *out);
  if (strncmp(line, prefix, sizeof prefix - 1))
    return false;
  const char *kernel = line + sizeof prefix - 1;
  /* A kernel's name has no space; a file name may have one, so the place
   * ends at the last ": variant ". */
  const char *at = strstr(kernel, " at ");
  if (!at || at == kernel)
    return false;
  const char *counts = NULL;
  for (const char *p = at; (p = strstr(p, ": variant ")); p++)
    counts = p;
  if (!counts || counts < at + 4)
    return false;
  bool seen[KS_NPATHS] = {false};
  const char *p = counts + 2;
  while (*p && *p != '\n' && *p != '\r') {
    /* "NAME N" up to a comma or the end */
    const char *digits = p;
    while (*digits && !isdigit((unsigned char)*digits) && *digits != ',')
      digits++;
    if (!isdigit((unsigned char)*digits) || digits == p || digits[-1] != ' ')
      return false;
    size_t len = (size_t)(digits - 1 - p);
    char *end;
    errno = 0;
    unsigned long long n = strtoull(digits, &end, 10);
    if (errno)
      return false;
    for (int i = 0; i < KS_NPATHS; i++) {
      const char *name = ks_site_path_name((ks_site_path)i);
      if (strlen(name) == len && !strncmp(name, p, len)) {
        out->counts[i] = n;
        seen[i] = true;
      }
    }
    /* A path a later header adds is skipped. */
    p = end;
    if (*p == ',')
      p++;
    else if (*p && *p != '\n' && *p != '\r')
      return false;
    while (*p == ' ')
      p++;
  }
  if (!seen[KS_PATH_VARIANT])
    return false;
  out->kernel = ks_arena_strndup(a, kernel, (size_t)(at - kernel));
  /* A site apply could not place has an empty one. */
  out->where = counts > at + 4 ? ks_arena_strndup(a, at + 4, (size_t)(counts - at - 4)) : "?";
  return true;
}

static void add_site(ks_arena *a, ks_site_stats_list *list, const ks_site_stats *s) {
  for (size_t i = 0; i < list->len; i++) {
    ks_site_stats *t = &list->items[i];
    if (!strcmp(t->kernel, s->kernel) && !strcmp(t->where, s->where)) {
      for (int p = 0; p < KS_NPATHS; p++)
        t->counts[p] += s->counts[p];
      return;
    }
  }
  *ks_array_push(a, list) = *s;
}

int ks_site_stats_read(ks_ctx *ctx, const char *path, ks_arena *a, ks_site_stats_list *list) {
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT)
      return 0;
    return ks_fail(ctx, "%s: %s", path, strerror(errno));
  }
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    ks_site_stats s;
    if (ks_site_stats_parse(a, line, &s))
      add_site(a, list, &s);
  }
  int rc = ferror(f) ? ks_fail(ctx, "%s: %s", path, strerror(errno)) : 0;
  free(line);
  fclose(f);
  return rc;
}

const char *ks_verify_site_paths(ks_arena *a, const ks_site_stats *s) {
  unsigned long long total = 0;
  for (int p = 0; p < KS_NPATHS; p++)
    total += s->counts[p];
  ks_buf b = KS_BUF_INIT;
  if (s->counts[KS_PATH_VARIANT])
    ks_buf_addf(&b, "variant %llu/%llu", s->counts[KS_PATH_VARIANT], total);
  for (int p = 1; p < KS_NPATHS; p++)
    if (s->counts[p])
      ks_buf_addf(&b, "%s%s %llu", b.len ? ", " : "", ks_site_path_name((ks_site_path)p),
                  s->counts[p]);
  if (!b.len)
    ks_buf_adds(&b, "no launch");
  const char *r = ks_arena_strdup(a, b.data);
  ks_buf_release(&b);
  return r;
}

/* ---- adding up ---------------------------------------------------------- */

/* "ns::k" -> "k". */
static const char *unqualified(const char *name) {
  const char *last = name;
  for (const char *p = name; (p = strstr(p, "::")); p += 2)
    last = p + 2;
  return last;
}

/* The variant's qualified name: the winner's variant_name (KERNEL_ks) in
 * the original's namespace, or NAME_ks. */
static const char *variant_of(ks_arena *a, const char *base, const char *variant_name) {
  if (!variant_name || !*variant_name)
    return ks_arena_printf(a, "%s_ks", base);
  const char *v = ks_profile_base_name(a, variant_name);
  if (strstr(v, "::"))
    return v;
  const char *plain = unqualified(base);
  return ks_arena_printf(a, "%.*s%s", (int)(plain - base), base, v);
}

/* The variant's launch on the size the judge timed. */
static void judge_launch(const ks_winner *w, ks_verify_kernel *k) {
  if (!w->have_eval)
    return;
  for (size_t i = 0; i < w->eval.sizes.len; i++) {
    const ks_size_report *s = &w->eval.sizes.items[i];
    if (s->timed && s->guards_hold && s->launch.block[0]) {
      k->judge_launch = s->launch;
      k->have_judge_launch = true;
      return;
    }
  }
}

/* The confirming evaluation's warm-L2 timing, where the judge made one
 * (docs/judge.md, "Warm timing": the timed size's data fit in the L2). */
static void search_warm(const ks_winner *w, ks_verify_kernel *k) {
  k->search_warm = w->have_eval && w->eval.warm_timed && w->eval.warm_speedup > 0;
  k->search_warm_speedup = k->search_warm ? w->eval.warm_speedup : 0;
}

void ks_verify_begin(ks_verify_report *r, const ks_winners *w, ks_arena *a) {
  memset(r, 0, sizeof *r);
  r->arena = a;
  r->repeat = 1;
  if (!w)
    return;
  r->run = w->run.id;
  r->device = w->run.device ? ks_arena_strdup(a, w->run.device) : NULL;
  for (size_t i = 0; i < w->items.len; i++) {
    const ks_winner *win = &w->items.items[i];
    ks_verify_kernel *k = ks_array_push(a, &r->kernels);
    memset(k, 0, sizeof *k);
    k->name = ks_arena_strdup(a, win->name);
    k->base = ks_profile_base_name(a, win->name);
    k->variant = variant_of(a, k->base, win->variant_name);
    k->site_name = unqualified(k->base);
    k->file = win->file ? ks_arena_strdup(a, win->file) : NULL;
    k->search_speedup = win->speedup;
    k->search_low = win->speedup_low;
    k->search_high = win->speedup_high;
    k->search_baseline_ms = win->baseline_ms;
    judge_launch(win, k);
    search_warm(win, k);
  }
}

static void merge_configs(ks_arena *a, ks_profile_configs *into, const ks_profile_configs *from) {
  for (size_t i = 0; i < from->len; i++) {
    const ks_profile_config *c = &from->items[i];
    size_t j = 0;
    while (j < into->len &&
           (memcmp(into->items[j].grid, c->grid, sizeof c->grid) ||
            memcmp(into->items[j].block, c->block, sizeof c->block) ||
            into->items[j].smem_dynamic != c->smem_dynamic))
      j++;
    if (j == into->len) {
      *ks_array_push(a, into) = *c;
    } else {
      into->items[j].launches += c->launches;
      into->items[j].total_ms += c->total_ms;
    }
  }
}

static void note_unlisted(ks_verify_report *r, const char *base) {
  for (size_t i = 0; i < r->unlisted_names.len; i++)
    if (!strcmp(r->unlisted_names.items[i], base))
      return;
  *ks_array_push(r->arena, &r->unlisted_names) = base;
}

void ks_verify_add_profile(ks_verify_report *r, const ks_profile *p, bool variants) {
  r->dropped += p->dropped;
  r->truncated += p->truncated_lines ? 1 : 0;
  for (size_t i = 0; i < p->kernels.len; i++) {
    const ks_profile_kernel *pk = &p->kernels.items[i];
    const char *base = ks_profile_base_name(r->arena, pk->demangled);
    bool matched = false;
    for (size_t j = 0; j < r->kernels.len; j++) {
      ks_verify_kernel *k = &r->kernels.items[j];
      bool is_variant = !strcmp(base, k->variant);
      if (!is_variant && strcmp(base, k->base))
        continue;
      matched = true;
      ks_verify_side *s = variants ? &k->after : &k->before;
      s->ms += pk->total_ms;
      s->launches += pk->launches;
      s->timed += pk->launches - pk->untimed;
      s->back_to_back += pk->back_to_back;
      if (is_variant)
        s->variant_launches += pk->launches;
      merge_configs(r->arena, is_variant ? &s->variant_configs : &s->original_configs,
                    &pk->configs);
    }
    if (!matched)
      note_unlisted(r, base);
  }
}

int ks_verify_add_stats(ks_ctx *ctx, ks_verify_report *r, const char *path) {
  ks_site_stats_list sites = {0};
  if (ks_site_stats_read(ctx, path, r->arena, &sites))
    return -1;
  for (size_t i = 0; i < sites.len; i++)
    for (size_t j = 0; j < r->kernels.len; j++)
      if (!strcmp(sites.items[i].kernel, r->kernels.items[j].site_name))
        add_site(r->arena, &r->kernels.items[j].sites, &sites.items[i]);
  return 0;
}

void ks_verify_add_exit(ks_verify_report *r, bool variants, int wait_status, unsigned processes) {
  ks_verify_run_status *s = ks_array_push(r->arena, &r->runs);
  s->variants = variants;
  s->exit_code = ks_profile_exit_code(wait_status);
  s->signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  s->processes = processes;
  if (s->exit_code)
    r->failed = true;
}

/* ---- verdicts and causes ------------------------------------------------ */

static void pick_config(ks_verify_side *s) {
  const ks_profile_configs *c = s->variant_launches ? &s->variant_configs : &s->original_configs;
  s->have_config = false;
  for (size_t i = 0; i < c->len; i++)
    if (!s->have_config || c->items[i].launches > s->config.launches) {
      s->config = c->items[i];
      s->have_config = true;
    }
}

static const char *dims(ks_arena *a, const unsigned d[3]) {
  return ks_arena_printf(a, "%ux%ux%u", d[0], d[1], d[2]);
}

/* The cause a path other than the variant's is, or NULL when the sites
 * mostly took the variant. */
static const char *path_cause(ks_arena *a, const ks_verify_kernel *k, ks_verify_cause_kind *kind) {
  unsigned long long tot[KS_NPATHS] = {0}, total = 0;
  for (size_t i = 0; i < k->sites.len; i++)
    for (int p = 0; p < KS_NPATHS; p++) {
      tot[p] += k->sites.items[i].counts[p];
      total += k->sites.items[i].counts[p];
    }
  bool ran = k->after.variant_launches > 0;
  unsigned long long other = total - tot[KS_PATH_VARIANT];
  if (ran && (double)other < KS_VERIFY_PATH_SHARE * (double)total)
    return NULL;
  if (!other) {
    if (ran)
      return NULL;
    *kind = KS_CAUSE_NO_DISPATCH;
    return "the variant did not run (no patched launch site of it reported: is the program "
           "built from the sources apply --write patched?)";
  }
  int worst = KS_PATH_OFF;
  for (int p = KS_PATH_OFF; p < KS_NPATHS; p++)
    if (tot[p] > tot[worst])
      worst = p;
  const ks_site_stats *site = &k->sites.items[0];
  for (size_t i = 0; i < k->sites.len; i++)
    if (k->sites.items[i].counts[worst] > site->counts[worst])
      site = &k->sites.items[i];
  const char *share = tot[KS_PATH_VARIANT]
                          ? ks_arena_printf(a, " at %llu of %llu launches", other, total)
                          : "";
  switch (worst) {
  case KS_PATH_GUARDS:
    *kind = KS_CAUSE_GUARDS;
    return ks_arena_printf(a, "the variant did not run%s (guards failed at %s)", share,
                           site->where);
  case KS_PATH_OFF:
    *kind = KS_CAUSE_OFF;
    return ks_arena_printf(a, "switched off%s (at %s: built with -DKERNELSMITH_DISABLE?)", share,
                           site->where);
  case KS_PATH_OTHER_ARCH:
    *kind = KS_CAUSE_OTHER_ARCH;
    return ks_arena_printf(a, "another architecture%s (at %s: the GPU is not one the variant "
                              "was verified on)", share, site->where);
  default:
    *kind = KS_CAUSE_NO_DEVICE;
    return ks_arena_printf(a, "no device%s (at %s)", share, site->where);
  }
}

static const char *cause_of(ks_arena *a, const ks_verify_kernel *k, ks_verify_cause_kind *kind) {
  const char *c = path_cause(a, k, kind);
  if (c)
    return c;
  const ks_verify_side *b = &k->before, *af = &k->after;
  if (k->have_judge_launch && af->have_config && af->variant_launches &&
      (memcmp(af->config.grid, k->judge_launch.grid, sizeof af->config.grid) ||
       memcmp(af->config.block, k->judge_launch.block, sizeof af->config.block))) {
    *kind = KS_CAUSE_LAUNCH;
    return ks_arena_printf(a, "a different launch: grid %s, block %s in the program (%llu of "
                              "%llu launches), grid %s, block %s in the search",
                           dims(a, af->config.grid), dims(a, af->config.block),
                           af->config.launches, af->variant_launches,
                           dims(a, k->judge_launch.grid), dims(a, k->judge_launch.block));
  }
  double base = k->search_baseline_ms, mean = b->mean_ms;
  if (k->search_warm && k->speedup > 0 &&
      fabs(k->speedup - k->search_warm_speedup) < fabs(k->speedup - k->search_speedup)) {
    *kind = KS_CAUSE_WARM;
    return ks_arena_printf(a, "warm cache: the search measured %.2fx with a warm L2 and %.2fx "
                              "with it flushed; the program's %.2fx is nearer the warm one",
                           k->search_warm_speedup, k->search_speedup, k->speedup);
  }
  if (!k->search_warm && base > 0 && mean > 0 && mean * KS_VERIFY_SIZE_RATIO < base &&
      b->launches > 1 && 2 * b->back_to_back >= b->launches) {
    *kind = KS_CAUSE_WARM;
    return ks_arena_printf(a, "warm cache: %.4g ms a launch in the program, %.4g ms in the "
                              "search with the L2 flushed, and it runs back to back (%llu of "
                              "%llu launches)", mean, base, b->back_to_back, b->launches);
  }
  if (base > 0 && mean > 0 &&
      (mean > base * KS_VERIFY_SIZE_RATIO || mean * KS_VERIFY_SIZE_RATIO < base)) {
    *kind = KS_CAUSE_SIZE;
    return ks_arena_printf(a, "a different size: %.4g ms a launch in the program, %.4g ms in "
                              "the search", mean, base);
  }
  /* The judge's speedup is a median over many interleaved samples; a
   * kernel the program runs once or twice is one cold launch each time
   * (its module's first use, instruction and TLB caches), and that launch
   * is the program's whole number. */
  if (b->launches && b->launches < KS_VERIFY_FEW_LAUNCHES) {
    *kind = KS_CAUSE_FEW;
    return ks_arena_printf(a, "few launches: the program runs it %llu time%s, each a cold single "
                              "sample, where the search took the median of many",
                           b->launches, b->launches == 1 ? "" : "s");
  }
  *kind = KS_CAUSE_UNKNOWN;
  return "unknown";
}

void ks_verify_judge(ks_arena *a, ks_verify_kernel *k, bool program_failed) {
  k->cause = NULL;
  k->cause_kind = KS_CAUSE_NONE;
  if (program_failed) {
    k->verdict = KS_VERIFY_FAILED;
    k->cause_kind = KS_CAUSE_PROGRAM;
    k->cause = "the program did not exit 0 in every run: nothing is confirmed";
    return;
  }
  if (!k->before.launches && !k->after.launches) {
    k->verdict = KS_VERIFY_NOT_RUN;
    k->cause = "the program never launched it";
    return;
  }
  bool ran = k->after.variant_launches > 0;
  bool slower = k->speedup < KS_VERIFY_MIN_GAIN;
  bool short_of = k->speedup < KS_VERIFY_SEARCH_SHARE * k->search_speedup;
  if (ran && k->speedup > 0 && !slower && short_of) {
    /* Faster in the program, by less than the search said: the patch
     * still helps (apply --from-verify keeps it), and the user is told
     * why the numbers differ where it can be seen. */
    k->verdict = KS_VERIFY_SHORT;
    k->cause = cause_of(a, k, &k->cause_kind);
    return;
  }
  if (ran && k->speedup > 0 && !slower && !short_of) {
    k->verdict = KS_VERIFY_FASTER;
    /* Faster in the program by more than the tenth the search is trusted
     * to: good news, but the search's number then does not describe the
     * program either, and the user is told why where it can be seen. */
    if (k->search_speedup > 0 && KS_VERIFY_SEARCH_SHARE * k->speedup > k->search_speedup) {
      const char *c = cause_of(a, k, &k->cause_kind);
      if (k->cause_kind == KS_CAUSE_UNKNOWN)
        c = "the profile shows the same launch and size as the search's; the program's timing "
            "differs from the judge's (its L2 not flushed between launches, other work beside "
            "it)";
      k->cause = ks_arena_printf(a, "faster in the program (%.2fx) than in the search (%.2fx): %s",
                                 k->speedup, k->search_speedup, c);
    }
    return;
  }
  k->verdict = KS_VERIFY_NOT_FASTER;
  k->cause = cause_of(a, k, &k->cause_kind);
}

static const char *ended(ks_arena *a, const ks_verify_run_status *s) {
  return s->signal ? ks_arena_printf(a, "killed by signal %d", s->signal)
                   : ks_arena_printf(a, "exit status %d", s->exit_code);
}

static void failure_sentence(ks_verify_report *r) {
  const ks_verify_run_status *with = NULL, *without = NULL;
  for (size_t i = 0; i < r->runs.len; i++) {
    const ks_verify_run_status *s = &r->runs.items[i];
    if (!s->exit_code)
      continue;
    if (s->variants && !with)
      with = s;
    if (!s->variants && !without)
      without = s;
  }
  if (with && !without)
    r->failure = ks_arena_printf(
        r->arena, "the program failed with the variants (%s) and not without them: a variant may "
                  "be what broke it; KERNELSMITH_VERIFY=1 runs each beside the original and "
                  "reports a difference, KERNELSMITH_DISABLE=KERNEL,... leaves some out",
        ended(r->arena, with));
  else if (without && !with)
    r->failure = ks_arena_printf(r->arena, "the program failed without the variants (%s) and "
                                           "not with them: nothing is confirmed",
                                 ended(r->arena, without));
  else if (with)
    r->failure = ks_arena_printf(r->arena, "the program failed with the variants (%s) and "
                                           "without them (%s): nothing is confirmed",
                                 ended(r->arena, with), ended(r->arena, without));
}

void ks_verify_finish(ks_verify_report *r) {
  for (size_t i = 0; i < r->kernels.len; i++) {
    ks_verify_kernel *k = &r->kernels.items[i];
    ks_verify_side *sides[2] = {&k->before, &k->after};
    for (int s = 0; s < 2; s++) {
      sides[s]->mean_ms = sides[s]->timed ? sides[s]->ms / (double)sides[s]->timed : 0;
      pick_config(sides[s]);
    }
    k->speedup = k->before.mean_ms > 0 && k->after.mean_ms > 0
                     ? k->before.mean_ms / k->after.mean_ms : 0;
    ks_verify_judge(r->arena, k, r->failed);
  }
  r->unlisted = r->unlisted_names.len;
  failure_sentence(r);
}

/* ---- the runs ----------------------------------------------------------- */

/* One run: the program with or without the variants, its profile and
 * statistics added. Fails when it cannot start or its lines cannot be
 * read (they are kept then). */
static int run_once(ks_ctx *ctx, const ks_verify_options *o, const char *dir, unsigned n,
                    bool variants, ks_verify_report *r) {
  ks_arena *a = r->arena;
  const char *lines = ks_profile_lines_file(ctx, a, dir);
  if (!lines)
    return -1;
  const char *stats = ks_arena_printf(a, "%s/stats-%u", dir, n);
  const char *stats_env = ks_arena_printf(a, "KERNELSMITH_STATS_FILE=%s", stats);
  /* Every launch timed; no capture, no shadow runs (they would time the
   * original beside the variant); statistics to the private file only. */
  const char *env[] = {variants ? "KERNELSMITH_DISABLE" : "KERNELSMITH_DISABLE=1",
                       stats_env,
                       "KERNELSMITH_STATS",
                       "KERNELSMITH_VERIFY",
                       "KERNELSMITH_PROFILE_SAMPLE",
                       "KERNELSMITH_PROFILE_SAMPLE_AFTER_MS",
                       "KERNELSMITH_CAPTURE",
                       NULL};
  ks_inject_options io = KS_INJECT_OPTIONS_INIT;
  io.sample_percent = 100;
  io.env = env;
  io.stdout_to_stderr = true;
  ks_info(ctx, "run %u of %u: %s %s the variants", n + 1, 2 * r->repeat, o->cmd[0],
          variants ? "with" : "without");
  int status = 0;
  if (ks_profile_run_app(ctx, o->cmd, o->inject_lib, lines, &io, &status)) {
    unlink(lines);
    return -1;
  }
  ks_profile p;
  if (ks_profile_read_run(ctx, lines, o->cmd, o->ncmd, status, &p)) {
    ks_fail_prefix(ctx, "the profile could not be made");
    return -1; /* the lines stay, named in the message */
  }
  ks_verify_add_exit(r, variants, status, p.processes);
  ks_verify_add_profile(r, &p, variants);
  ks_profile_release(&p);
  int rc = variants ? ks_verify_add_stats(ctx, r, stats) : 0;
  unlink(lines);
  unlink(stats);
  return rc;
}

int ks_verify_run(ks_ctx *ctx, const ks_verify_options *o, ks_arena *a, ks_verify_report *out) {
  ks_winners_query q = {.store_dir = o->store_dir, .run = o->run, .any_device = o->any_device};
  ks_winners w;
  if (ks_winners_load(ctx, &q, a, &w))
    return -1;
  if (!w.items.len)
    return ks_fail(ctx, "run %lld of %s has no winner: nothing to verify", w.run.id,
                   o->store_dir);
  ks_verify_begin(out, &w, a);
  out->repeat = o->repeat ? o->repeat : 1;
  out->store_dir = ks_arena_strdup(a, o->store_dir);
  for (int i = 0; i < o->ncmd; i++)
    *ks_array_push(a, &out->command) = ks_arena_strdup(a, o->cmd[i]);

  char *parent = ks_realpath(o->work_parent);
  char *dir = ks_arena_printf(a, "%s/.verify-XXXXXX", parent ? parent : o->work_parent);
  free(parent);
  if (!mkdtemp(dir)) /* 0700: the statistics files are nobody else's */
    return ks_fail(ctx, "cannot create a directory in %s: %s", o->work_parent, strerror(errno));
  int rc = 0;
  for (unsigned pair = 0; pair < out->repeat && !rc; pair++) {
    for (unsigned side = 0; side < 2 && !rc; side++)
      rc = run_once(ctx, o, dir, 2 * pair + side, side == 1, out);
    if (out->failed) /* the pair is whole; more runs would only fail again */
      break;
  }
  rmdir(dir); /* kept when lines that could not be read are in it */
  if (rc)
    return -1;
  unsigned processes = 0;
  for (size_t i = 0; i < out->runs.len; i++)
    processes += out->runs.items[i].processes;
  if (!processes && !out->failed)
    return ks_fail(ctx, "no run of '%s' loaded the injection library, so nothing was measured: "
                        "the program never initialized CUDA, or the driver could not load %s",
                   o->cmd[0], o->inject_lib);
  ks_verify_finish(out);
  return 0;
}
