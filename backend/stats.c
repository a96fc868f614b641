/* Robust statistics for timing samples: median, IQR, relative standard
 * deviation, and a bootstrap interval for the ratio of two medians, which is
 * what decides whether a speedup is outside the noise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ks_alloc.h"
#include "ks_judge.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Quantile q of sorted x (linear interpolation between order statistics). */
static double quantile_sorted(const double *x, size_t n, double q) {
  if (!n)
    return NAN;
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  double frac = pos - (double)lo;
  return lo + 1 < n ? x[lo] + frac * (x[lo + 1] - x[lo]) : x[lo];
}

static double *sorted_copy(const double *x, size_t n) {
  double *s = ks_xmalloc((n ? n : 1) * sizeof *s);
  if (n)
    memcpy(s, x, n * sizeof *s);
  if (n > 1)
    qsort(s, n, sizeof *s, cmp_double);
  return s;
}

double ks_stats_median(const double *x, size_t n) {
  double *s = sorted_copy(x, n);
  double m = quantile_sorted(s, n, 0.5);
  free(s);
  return m;
}

double ks_stats_iqr(const double *x, size_t n) {
  double *s = sorted_copy(x, n);
  double r = quantile_sorted(s, n, 0.75) - quantile_sorted(s, n, 0.25);
  free(s);
  return r;
}

double ks_stats_rsd(const double *x, size_t n) {
  if (n < 2)
    return INFINITY;
  double mean = 0, var = 0;
  for (size_t i = 0; i < n; i++)
    mean += x[i];
  mean /= (double)n;
  for (size_t i = 0; i < n; i++)
    var += (x[i] - mean) * (x[i] - mean);
  var /= (double)(n - 1);
  return mean > 0 ? sqrt(var) / mean : INFINITY;
}

/* splitmix64: a tiny, well-mixed generator; the interval must not depend
 * on libc's rand(). */
static unsigned long long next_random(unsigned long long *state) {
  unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double resampled_median(const double *x, size_t n, double *scratch,
                               unsigned long long *state) {
  for (size_t i = 0; i < n; i++)
    scratch[i] = x[next_random(state) % n];
  qsort(scratch, n, sizeof *scratch, cmp_double);
  return quantile_sorted(scratch, n, 0.5);
}

void ks_stats_ratio_interval(const double *a, size_t na, const double *b, size_t nb,
                             unsigned long long seed, double *low, double *high) {
  enum { ROUNDS = 2000 };
  if (!na || !nb) {
    *low = *high = NAN;
    return;
  }
  double *ratios = ks_xmalloc(ROUNDS * sizeof *ratios);
  double *scratch = ks_xmalloc((na > nb ? na : nb) * sizeof *scratch);
  unsigned long long state = seed ? seed : 0x6b65726e656c73ull;
  for (int r = 0; r < ROUNDS; r++) {
    double ma = resampled_median(a, na, scratch, &state);
    double mb = resampled_median(b, nb, scratch, &state);
    ratios[r] = ma / mb;
  }
  qsort(ratios, ROUNDS, sizeof *ratios, cmp_double);
  *low = quantile_sorted(ratios, ROUNDS, 0.025);
  *high = quantile_sorted(ratios, ROUNDS, 0.975);
  free(ratios);
  free(scratch);
}
