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
  char line[512];
  snprintf(line, sizeof line,
           "%s: round %u/%u, %u evaluated (%u correct), best %.2fx%s%s, %.0f/min, %s left",
           s->kernel, s->round, s->rounds, s->evaluated, s->correct, s->best_speedup,
           s->best_techniques && *s->best_techniques ? " " : "",
           s->best_techniques && *s->best_techniques ? s->best_techniques : "",
           s->evals_per_minute, left);
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

static const char *short_name(const char *s, size_t max, char *buf, size_t n) {
  size_t len = strlen(s);
  if (len <= max)
    return s;
  snprintf(buf, n, "...%s", s + len - (max - 3));
  return buf;
}

void ks_outcomes_print(FILE *out, const ks_outcomes *o, bool measured, bool color) {
  const char *bold = color ? "\033[1m" : "", *green = color ? "\033[32m" : "",
             *reset = color ? "\033[0m" : "";
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
      continue;
    }
    char bw[32] = "-";
    if (k->bw_fraction > 0)
      snprintf(bw, sizeof bw, "%.0f%%", 100 * k->bw_fraction);
    bool won = k->speedup > 1 && k->techniques && *k->techniques;
    fprintf(out, "%-28s %8.4fms %8.4fms %s%7.2fx%s %9s  %-9s %s\n", name, k->baseline_ms,
            k->best_ms, won ? green : "", k->speedup, won ? reset : "", bw, k->verdict,
            won ? k->techniques : k->status);
    logsum += log(k->speedup > 0 ? k->speedup : 1);
    n++;
  }
  if (n > 1)
    fprintf(out, "%-28s %10s %10s %7.2fx  (geometric mean over %u kernels)\n", "all", "", "",
            exp(logsum / n), n);
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
