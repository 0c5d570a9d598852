/* Uses the installed mpi.h and librocl_mpi: run under roclrun -n N (N >= 1),
 * each rank passes a token to the next, round a ring; rank 0 checks that it
 * came back with every rank's addition. Valid C and C++ (rocl-mpicxx). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int next = (rank + 1) % size;
  int prev = (rank + size - 1) % size;
  int token = 0;
  if (rank == 0) {
    token = 1;
    MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
    MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    token += rank;
    MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
  }
  int ok = 1;
  if (rank == 0) {
    ok = token == 1 + size * (size - 1) / 2;
    printf("consumer_mpi: %s (%d ranks, token %d)\n", ok ? "ok" : "wrong token", size, token);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return ok ? 0 : 1;
}
