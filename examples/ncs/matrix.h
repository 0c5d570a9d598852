/* matrix.h - what both matrix multiplication programs share: the matrices
 * (small integers, so that every sum is exact and results compare equal),
 * how rows are split, the multiplication of a block of rows, the serial
 * reference and the check against it. */
#ifndef NCS_EXAMPLE_MATRIX_H
#define NCS_EXAMPLE_MATRIX_H

#include <stddef.h>

/* The problem: C = A * B, all n x n, row-major. */
typedef struct matrix_problem {
  int n;
  double *a, *b, *c;
} matrix_problem;

/* n from argv[1] (default 256); exits with a message if it makes no sense. */
int matrix_size_from_args(int argc, char **argv);
/* Allocates the three matrices; fills A and B when fill is not 0. */
void matrix_alloc(matrix_problem *m, int n, int fill);

/* Rows [first, first + count) of block k when n rows are split in blocks. */
void matrix_block_rows(int n, int blocks, int k, int *first, int *count);

/* c_rows (count x n) = a_rows (count x n) * b (n x n). Calls yield() (if
 * not NULL) every few rows, so that other user threads may run. */
void matrix_multiply_rows(const double *a_rows, const double *b, double *c_rows, int count, int n,
                          int (*yield)(void));

/* Compares m->c with a serial C = A * B; prints "<name>: OK ..." or
 * "<name>: FAILED ..." and returns 0 or 1 (the exit status). */
int matrix_check(const char *name, const matrix_problem *m, int processes, int threads,
                 double seconds);

double matrix_now(void);

#endif
