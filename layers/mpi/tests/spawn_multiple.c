/* spawn_multiple: MPI_Comm_spawn_multiple.
 * The job's processes spawn two commands at once, both this program: one
 * copy with the arguments "child a" and two with "child b" (the second
 * command's info names no host: MPI_INFO_NULL and an empty info object
 * both work). The children's MPI_COMM_WORLD has 3 ranks in command order:
 * rank 0 is the first command's (MPI_APPNUM 0, argument "a"), ranks 1-2
 * the second's (MPI_APPNUM 1, argument "b"). One intercommunicator joins
 * the parents and all the children: each child sends its rank and appnum
 * to a parent, Allreduce gives each group the other's sum. The parents'
 * own MPI_APPNUM, if set, is 0. The errcodes are MPI_SUCCESS. */
#include "mpi_check.h"

enum { kChildren = 3 };

static int child(const char *arg) {
  MPI_Comm parent;
  CHECK_MPI(MPI_Comm_get_parent(&parent));
  CHECK(parent != MPI_COMM_NULL, "a spawned process has a parent");
  int rank = -1, size = -1, psize = -1, flag = 0, *appnum = NULL;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size == kChildren, "the children's world has %d ranks", size);
  CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
  CHECK(flag && appnum != NULL, "a child of Comm_spawn_multiple has MPI_APPNUM");
  const int want = rank == 0 ? 0 : 1;
  CHECK(*appnum == want, "child %d: MPI_APPNUM %d, want %d", rank, *appnum, want);
  CHECK(strcmp(arg, want == 0 ? "a" : "b") == 0, "child %d of command %d has argument '%s'", rank,
        want, arg);
  CHECK_MPI(MPI_Comm_remote_size(parent, &psize));
  const int mine[2] = {rank, *appnum};
  CHECK_MPI(MPI_Send(mine, 2, MPI_INT, rank % psize, 5, parent));
  int sum = -1, one = 1;
  CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, parent));
  CHECK(sum == 10 * psize, "children's Allreduce (the parents' sum): %d", sum);
  CHECK_MPI(MPI_Barrier(parent)); /* the parents end after every child checked */
  CHECK_MPI(MPI_Comm_free(&parent));
  CHECK_MPI(MPI_Finalize());
  return 0;
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  int rank = -1, size = -1, flag = 0, *appnum = NULL;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
  CHECK(!flag || *appnum == 0, "the parents' MPI_APPNUM is %d", *appnum);
  char *args_a[] = {"child", "a", NULL}, *args_b[] = {"child", "b", NULL};
  char *commands[2] = {argv[0], argv[0]};
  char **argvs[2] = {args_a, args_b};
  int maxprocs[2] = {1, 2};
  MPI_Info infos[2];
  infos[0] = MPI_INFO_NULL;
  CHECK_MPI(MPI_Info_create(&infos[1]));
  int codes[kChildren] = {-1, -1, -1};
  MPI_Comm inter;
  CHECK_MPI(MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                                    codes));
  CHECK_MPI(MPI_Info_free(&infos[1]));
  for (int c = 0; c < kChildren; c++) CHECK(codes[c] == MPI_SUCCESS, "errcode %d: %d", c, codes[c]);
  int rs = -1;
  CHECK_MPI(MPI_Comm_remote_size(inter, &rs));
  CHECK(rs == kChildren, "remote size %d", rs);
  /* Child c sends to parent c % size. */
  for (int c = 0; c < kChildren; c++) {
    if (c % size != rank) continue;
    int got[2] = {-1, -1};
    MPI_Status st;
    CHECK_MPI(MPI_Recv(got, 2, MPI_INT, c, 5, inter, &st));
    CHECK(got[0] == c && got[1] == (c == 0 ? 0 : 1) && st.MPI_SOURCE == c,
          "from child %d: rank %d appnum %d", c, got[0], got[1]);
  }
  int sum = -1, ten = 10;
  CHECK_MPI(MPI_Allreduce(&ten, &sum, 1, MPI_INT, MPI_SUM, inter));
  CHECK(sum == kChildren, "parents' Allreduce (the children's sum): %d", sum);
  CHECK_MPI(MPI_Barrier(inter));
  CHECK_MPI(MPI_Comm_free(&inter));
  test_done("spawn_multiple");
  return 0;
}
