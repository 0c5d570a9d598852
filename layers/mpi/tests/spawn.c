/* spawn: MPI_Comm_spawn and MPI_Comm_get_parent.
 * The job's processes spawn 2 copies of this program (argument "child"):
 * the children's MPI_COMM_WORLD has 2 ranks and their parent is an
 * intercommunicator to the spawning group; over it the parents' root
 * broadcasts a value (MPI_ROOT), each child sends its rank to a parent,
 * Allreduce gives each group the other's sum, Intercomm_merge puts the
 * parents first. The errcodes are MPI_SUCCESS. */
#include "mpi_check.h"

enum { kChildren = 2 };

static int child(void) {
  MPI_Comm parent;
  CHECK_MPI(MPI_Comm_get_parent(&parent));
  CHECK(parent != MPI_COMM_NULL, "a spawned process has a parent");
  int rank = -1, size = -1, psize = -1, flag = 0;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size == kChildren, "the children's world has %d ranks", size);
  CHECK_MPI(MPI_Comm_test_inter(parent, &flag));
  CHECK_MPI(MPI_Comm_remote_size(parent, &psize));
  CHECK(flag && psize >= 1, "parent intercommunicator of %d", psize);
  int v = -1;
  CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, parent));
  CHECK(v == 777, "the parents' broadcast: %d", v);
  CHECK_MPI(MPI_Send(&rank, 1, MPI_INT, rank % psize, 3, parent));
  int sum = -1, one = 1;
  CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, parent));
  CHECK(sum == 2 * psize, "children's Allreduce (the parents' sum): %d", sum);
  MPI_Comm merged;
  CHECK_MPI(MPI_Intercomm_merge(parent, 1, &merged));
  int mr = -1, ms = -1;
  CHECK_MPI(MPI_Comm_rank(merged, &mr));
  CHECK_MPI(MPI_Comm_size(merged, &ms));
  CHECK(ms == psize + kChildren && mr == psize + rank, "merged: %d of %d", mr, ms);
  CHECK_MPI(MPI_Barrier(merged));
  CHECK_MPI(MPI_Comm_free(&merged));
  CHECK_MPI(MPI_Comm_free(&parent));
  CHECK_MPI(MPI_Finalize());
  return 0;
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  int rank = -1, size = -1;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_Comm parent;
  CHECK_MPI(MPI_Comm_get_parent(&parent));
  CHECK(parent == MPI_COMM_NULL, "a process that was not spawned has no parent");
  char *args[] = {"child", NULL};
  int codes[kChildren] = {-1, -1};
  MPI_Comm inter;
  CHECK_MPI(
      MPI_Comm_spawn(argv[0], args, kChildren, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
  CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "errcodes %d %d", codes[0], codes[1]);
  int rs = -1;
  CHECK_MPI(MPI_Comm_remote_size(inter, &rs));
  CHECK(rs == kChildren, "remote size %d", rs);
  int v = 777;
  CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
  /* Child c sends to parent c % size. */
  for (int c = 0; c < kChildren; c++) {
    if (c % size != rank) continue;
    int got = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, c, 3, inter, &st));
    CHECK(got == c && st.MPI_SOURCE == c, "from child %d: %d", c, got);
  }
  int sum = -1, two = 2;
  CHECK_MPI(MPI_Allreduce(&two, &sum, 1, MPI_INT, MPI_SUM, inter));
  CHECK(sum == kChildren, "parents' Allreduce (the children's sum): %d", sum);
  MPI_Comm merged;
  CHECK_MPI(MPI_Intercomm_merge(inter, 0, &merged));
  int mr = -1, ms = -1;
  CHECK_MPI(MPI_Comm_rank(merged, &mr));
  CHECK_MPI(MPI_Comm_size(merged, &ms));
  CHECK(ms == size + kChildren && mr == rank, "merged: %d of %d", mr, ms);
  CHECK_MPI(MPI_Barrier(merged));
  CHECK_MPI(MPI_Comm_free(&merged));
  CHECK_MPI(MPI_Comm_free(&inter));
  test_done("spawn");
  return 0;
}
