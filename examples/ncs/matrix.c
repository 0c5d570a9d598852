/* matrix.c - the shared parts of the matrix multiplication examples. */
#define _POSIX_C_SOURCE 200809L
#include "matrix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int matrix_size_from_args(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 256;
  if (n < 1 || n > 8192) {
    fprintf(stderr, "usage: %s [n]  (1..8192, default 256)\n", argv[0]);
    exit(2);
  }
  return n;
}

void matrix_alloc(matrix_problem *m, int n, int fill) {
  const size_t cells = (size_t)n * (size_t)n;
  m->n = n;
  m->a = malloc(cells * sizeof *m->a);
  m->b = malloc(cells * sizeof *m->b);
  m->c = calloc(cells, sizeof *m->c);
  if (m->a == NULL || m->b == NULL || m->c == NULL) {
    fprintf(stderr, "matrix: out of memory for n = %d\n", n);
    exit(1);
  }
  if (!fill) return;
  for (size_t i = 0; i < cells; ++i) {
    m->a[i] = (double)((i * 7 + 3) % 11) - 5;
    m->b[i] = (double)((i * 5 + 1) % 13) - 6;
  }
}

void matrix_block_rows(int n, int blocks, int k, int *first, int *count) {
  const long lo = (long)n * k / blocks, hi = (long)n * (k + 1) / blocks;
  *first = (int)lo;
  *count = (int)(hi - lo);
}

void matrix_multiply_rows(const double *a_rows, const double *b, double *c_rows, int count, int n,
                          int (*yield)(void)) {
  for (int i = 0; i < count; ++i) {
    double *c = c_rows + (size_t)i * n;
    memset(c, 0, (size_t)n * sizeof *c);
    for (int k = 0; k < n; ++k) {
      const double a = a_rows[(size_t)i * n + k];
      const double *brow = b + (size_t)k * n;
      for (int j = 0; j < n; ++j) c[j] += a * brow[j];
    }
    if (yield != NULL && i % 8 == 7) yield();
  }
}

int matrix_check(const char *name, const matrix_problem *m, int processes, int threads,
                 double seconds) {
  const int n = m->n;
  double *reference = malloc((size_t)n * n * sizeof *reference);
  if (reference == NULL) return 1;
  matrix_multiply_rows(m->a, m->b, reference, n, n, NULL);
  int wrong = -1;
  for (size_t i = 0; i < (size_t)n * n && wrong < 0; ++i) {
    if (reference[i] != m->c[i]) wrong = (int)i;
  }
  if (wrong >= 0) {
    printf("%s: FAILED: C[%d][%d] is %g, the serial product has %g\n", name, wrong / n, wrong % n,
           m->c[wrong], reference[wrong]);
  } else {
    printf("%s: OK n=%d processes=%d threads=%d time=%.6f s\n", name, n, processes, threads,
           seconds);
  }
  free(reference);
  return wrong >= 0;
}

double matrix_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
