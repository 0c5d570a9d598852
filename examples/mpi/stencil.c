/* stencil: 2-D Jacobi iteration for the steady-state heat equation, an
 * ordinary MPI program (MPI standard only, nothing rocl-specific).
 *
 *   stencil [-n ROWS] [-m COLS] [-i ITERATIONS] [-1]
 *
 * The N x M interior grid (default 512 x 512, 200 iterations) has fixed
 * boundary values: 1.0 along the top edge, 0.5 along the left edge, 0.0
 * along the bottom and right edges; the interior starts at 0.
 *
 * The grid is split over the ranks in a 2-D process grid (px x py, px >= py,
 * as square as the rank count allows) or, with -1, in row blocks. Each
 * iteration exchanges one-cell halos with Isend/Irecv (columns with an
 * MPI_Type_vector; the global boundary is held in the halos of the edge
 * ranks, whose missing neighbours are MPI_PROC_NULL). Every 10 iterations
 * the residual max|u_new - u| is combined with an Allreduce(MPI_MAX); at the
 * end a fixed-point checksum of the grid is combined with a Reduce(MPI_SUM)
 * and the owner of a probe point sends its value to rank 0.
 *
 * Every grid value is computed with the same floating-point operations in
 * the same order whatever the decomposition, and the reductions are exact
 * (a maximum; integer sums), so rank 0 prints the same output on stdout for
 * any number of ranks and any MPI implementation: compare runs with diff.
 * The decomposition and the time go to stderr. */
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXED_SCALE 1073741824.0 /* 2^30: checksum fixed-point scale */

static void die(int rank, const char *msg) {
  if (rank == 0) fprintf(stderr, "stencil: %s\n", msg);
  MPI_Finalize();
  exit(2);
}

/* Boundary value at global position (gi, gj); gi in [-1, N], gj in [-1, M]. */
static double boundary(int gi, int gj) {
  if (gi == -1) return 1.0;
  if (gj == -1) return 0.5;
  return 0.0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  int N = 512, M = 512, iters = 200, one_d = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-1") == 0) {
      one_d = 1;
    } else if (a + 1 < argc && strcmp(argv[a], "-n") == 0) {
      N = atoi(argv[++a]);
    } else if (a + 1 < argc && strcmp(argv[a], "-m") == 0) {
      M = atoi(argv[++a]);
    } else if (a + 1 < argc && strcmp(argv[a], "-i") == 0) {
      iters = atoi(argv[++a]);
    } else {
      die(rank, "usage: stencil [-n ROWS] [-m COLS] [-i ITERATIONS] [-1]");
    }
  }
  if (N < 1 || M < 1 || iters < 0) die(rank, "sizes must be positive");

  /* Process grid: py = largest divisor of nranks <= sqrt(nranks). */
  int py = 1;
  if (!one_d)
    for (int d = 1; d * d <= nranks; d++)
      if (nranks % d == 0) py = d;
  int px = nranks / py;
  if (N < px || M < py) die(rank, "grid too small for this many ranks");
  int pr = rank / py, pc = rank % py;
  int up = pr > 0 ? rank - py : MPI_PROC_NULL;
  int down = pr < px - 1 ? rank + py : MPI_PROC_NULL;
  int left = pc > 0 ? rank - 1 : MPI_PROC_NULL;
  int right = pc < py - 1 ? rank + 1 : MPI_PROC_NULL;

  /* My block of the interior: global rows [r0, r0 + n), cols [c0, c0 + m). */
  int r0 = (int)((long)pr * N / px), n = (int)((long)(pr + 1) * N / px) - r0;
  int c0 = (int)((long)pc * M / py), m = (int)((long)(pc + 1) * M / py) - c0;
  int w = m + 2; /* row length with the halo */
  double *u = malloc((size_t)(n + 2) * w * sizeof *u);
  double *un = malloc((size_t)(n + 2) * w * sizeof *un);
  if (!u || !un) die(rank, "out of memory");
#define AT(a, i, j) (a)[(size_t)(i)*w + (j)]
  for (int i = 0; i < n + 2; i++)
    for (int j = 0; j < w; j++) {
      int gi = r0 + i - 1, gj = c0 + j - 1;
      int on_boundary = gi == -1 || gi == N || gj == -1 || gj == M;
      AT(u, i, j) = AT(un, i, j) = on_boundary ? boundary(gi, gj) : 0.0;
    }

  MPI_Datatype column;
  MPI_Type_vector(n, 1, w, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);

  if (rank == 0) printf("stencil: grid %d x %d, %d iterations\n", N, M, iters);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();

  for (int it = 1; it <= iters; it++) {
    /* Halo exchange (tags name the direction of travel). */
    MPI_Request rq[8];
    MPI_Irecv(&AT(u, 0, 1), m, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&AT(u, n + 1, 1), m, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Irecv(&AT(u, 1, 0), 1, column, left, 3, MPI_COMM_WORLD, &rq[2]);
    MPI_Irecv(&AT(u, 1, m + 1), 1, column, right, 2, MPI_COMM_WORLD, &rq[3]);
    MPI_Isend(&AT(u, 1, 1), m, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &rq[4]);
    MPI_Isend(&AT(u, n, 1), m, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &rq[5]);
    MPI_Isend(&AT(u, 1, 1), 1, column, left, 2, MPI_COMM_WORLD, &rq[6]);
    MPI_Isend(&AT(u, 1, m), 1, column, right, 3, MPI_COMM_WORLD, &rq[7]);
    MPI_Status st[8];
    MPI_Waitall(8, rq, st);

    double dmax = 0.0;
    for (int i = 1; i <= n; i++)
      for (int j = 1; j <= m; j++) {
        double v = 0.25 * (AT(u, i - 1, j) + AT(u, i + 1, j) + AT(u, i, j - 1) + AT(u, i, j + 1));
        double d = fabs(v - AT(u, i, j));
        if (d > dmax) dmax = d;
        AT(un, i, j) = v;
      }
    double *tmp = u;
    u = un;
    un = tmp;

    if (it % 10 == 0 || it == iters) {
      double res;
      MPI_Allreduce(&dmax, &res, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0) printf("iter %5d residual %.10e\n", it, res);
    }
  }
  double t1 = MPI_Wtime();

  /* Checksums: exact integer sums, identical for any decomposition.
   * sum[0]: sum of round(u * 2^30); sum[1]: a position-weighted sum
   * (wrapping modulo 2^64, still exact and order-independent). */
  unsigned long local[2] = {0, 0}, total[2] = {0, 0};
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= m; j++) {
      unsigned long f = (unsigned long)llround(AT(u, i, j) * FIXED_SCALE);
      unsigned long gi = (unsigned long)(r0 + i - 1), gj = (unsigned long)(c0 + j - 1);
      local[0] += f;
      local[1] += f * ((gi * 31 + gj * 17) % 101 + 1);
    }
  MPI_Reduce(local, total, 2, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

  /* The value at a probe point, sent by its owner to rank 0. */
  int ci = N / 16, cj = M / 16;
  int owner_r = 0, owner_c = 0;
  while ((long)(owner_r + 1) * N / px <= ci) owner_r++;
  while ((long)(owner_c + 1) * M / py <= cj) owner_c++;
  int owner = owner_r * py + owner_c;
  double probe = 0.0;
  if (rank == owner) {
    probe = AT(u, ci - r0 + 1, cj - c0 + 1);
    if (owner != 0) MPI_Send(&probe, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
  }
  if (rank == 0 && owner != 0)
    MPI_Recv(&probe, 1, MPI_DOUBLE, owner, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  if (rank == 0) {
    printf("probe u(%d,%d) %.10e\n", ci, cj, probe);
    printf("checksum %.10e\n", (double)total[0] / FIXED_SCALE);
    printf("weighted checksum %lu\n", total[1]);
    fprintf(stderr, "stencil: %d ranks as %d x %d, %.3f s\n", nranks, px, py, t1 - t0);
  }
  MPI_Type_free(&column);
  free(u);
  free(un);
  MPI_Finalize();
  return 0;
}
