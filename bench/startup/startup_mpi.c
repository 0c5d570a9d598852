/* startup_mpi: a job's start-up time with MPI, from STARTUP_T0 (nanoseconds
 * of CLOCK_REALTIME, taken just before the launcher starts) until rank 0
 * holds a message from every other rank (MPI_Init, then one MPI_Send to
 * rank 0 each). Rank 0 prints startup,<size>,<ms>. Built against Open MPI
 * (startup_mpi.openmpi) and rocl's MPI (startup_mpi_rocl). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, one = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    MPI_Send(&one, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
  } else {
    for (int k = 1; k < size; ++k) {
      MPI_Recv(&one, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const char *t0 = getenv("STARTUP_T0");
    const double ns = (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
    printf("startup,%d,%.1f\n", size, t0 ? (ns - atof(t0)) / 1e6 : -1.0);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
