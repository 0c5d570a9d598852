/* anchor_common.h - the measuring helpers every anchor program shares (the
 * MPI ones are built by each MPI's own compiler wrapper, so they take these
 * as a header, not a library): the clock, the iteration plan of
 * rocl-bench (bench/rocl-bench/timing.hpp), and the CSV row of a point
 *   benchmark,size_bytes,threads,median,min,max,unit
 * that rocl-bench compare reads. Each program defines
 * its own struct point; only pointers to it pass through here. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct point;

static inline double anchor_clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int anchor_cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Iterations of run that take about `target` seconds (at most `most`):
 * grows a trial run by 4x until it lasts a tenth of the target. */
static inline long anchor_plan(double (*run)(struct point *, long), struct point *p, double target,
                               long most) {
  long n = 8 < most ? 8 : most;
  double elapsed = run(p, n);
  while (elapsed < target / 10 && n < most) {
    n = n * 4 < most ? n * 4 : most;
    elapsed = run(p, n);
  }
  const double per = elapsed / (double)n;
  if (per <= 0) return most;
  double wanted = target / per;
  if (wanted < 1) wanted = 1;
  if (wanted > (double)most) wanted = (double)most;
  return (long)wanted;
}

/* One point's row (median, min, max of n samples; sorts them). */
static inline void anchor_print_row(const char *bench, size_t size, double *samples, int n,
                                    const char *unit) {
  qsort(samples, (size_t)n, sizeof *samples, anchor_cmp_double);
  const double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  printf("%s,%zu,1,%.9g,%.9g,%.9g,%s\n", bench, size, median, samples[0], samples[n - 1], unit);
  fflush(stdout);
}
