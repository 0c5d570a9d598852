/* matmul_mpi - matrix multiplication, single-threaded message passing in
 * plain MPI: the same program as ncs_matmul_st (section 5.1, figure 13).
 * The host (rank 0) sends all of B and a block of A's rows to each node,
 * multiplies its own block, and collects the nodes' blocks of C.
 *
 *   roclrun -n 4 matmul_mpi [n]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "../matrix.h"

enum { kTagB = 1, kTagA = 2, kTagC = 3 };

static matrix_problem g_m;
static int g_me, g_processes;

static int row_cells(int rows) {
  return rows * g_m.n;
}

static void host(void) {
  const int n = g_m.n;
  int first, count;
  for (int p = 1; p < g_processes; ++p) {
    matrix_block_rows(n, g_processes, p, &first, &count);
    MPI_Send(g_m.b, row_cells(n), MPI_DOUBLE, p, kTagB, MPI_COMM_WORLD);
    MPI_Send(g_m.a + (size_t)first * n, row_cells(count), MPI_DOUBLE, p, kTagA, MPI_COMM_WORLD);
  }
  matrix_block_rows(n, g_processes, 0, &first, &count);
  matrix_multiply_rows(g_m.a + (size_t)first * n, g_m.b, g_m.c + (size_t)first * n, count, n, NULL);
  for (int p = 1; p < g_processes; ++p) {
    matrix_block_rows(n, g_processes, p, &first, &count);
    MPI_Recv(g_m.c + (size_t)first * n, row_cells(count), MPI_DOUBLE, p, kTagC, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
}

static void node(void) {
  const int n = g_m.n;
  int first, count;
  matrix_block_rows(n, g_processes, g_me, &first, &count);
  double *b = malloc((size_t)row_cells(n) * sizeof *b);
  double *a = malloc((size_t)row_cells(count) * sizeof *a + 1);
  double *c = malloc((size_t)row_cells(count) * sizeof *c + 1);
  if (b == NULL || a == NULL || c == NULL) {
    fprintf(stderr, "matmul_mpi, rank %d: out of memory\n", g_me);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Recv(b, row_cells(n), MPI_DOUBLE, 0, kTagB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Recv(a, row_cells(count), MPI_DOUBLE, 0, kTagA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  matrix_multiply_rows(a, b, c, count, n, NULL);
  MPI_Send(c, row_cells(count), MPI_DOUBLE, 0, kTagC, MPI_COMM_WORLD);
  free(c);
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int n = matrix_size_from_args(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
  MPI_Comm_size(MPI_COMM_WORLD, &g_processes);
  if (g_me == 0) matrix_alloc(&g_m, n, 1);
  g_m.n = n;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = matrix_now();
  if (g_me == 0) {
    host();
  } else {
    node();
  }
  const double seconds = matrix_now() - start;
  const int status = g_me == 0 ? matrix_check("matmul_mpi", &g_m, g_processes, 1, seconds) : 0;
  MPI_Finalize();
  return status;
}
