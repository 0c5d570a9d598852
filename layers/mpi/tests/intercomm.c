/* intercomm: intercommunicators.
 * The even and the odd ranks of MPI_COMM_WORLD as two groups joined by
 * Intercomm_create (leaders: their rank 0, peer MPI_COMM_WORLD): sizes,
 * Comm_test_inter, remote size and group, point to point both ways (the
 * status names a rank of the remote group, MPI_ANY_SOURCE included),
 * Barrier, Bcast from MPI_ROOT (the root's group mates pass
 * MPI_PROC_NULL), Allreduce (each group gets the other's sum),
 * Intercomm_merge (high orders the groups; equal high: the lower world
 * rank first), a collective refused on it, Comm_free. Needs 2 ranks. */
#include "mpi_check.h"

static int rank, size;

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (size < 2) {
    test_note("intercomm: skipped (needs 2 ranks)");
    test_done("intercomm");
    return 0;
  }
  const int color = rank % 2;
  MPI_Comm half, inter;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
  int hr = -1, hs = -1;
  CHECK_MPI(MPI_Comm_rank(half, &hr));
  CHECK_MPI(MPI_Comm_size(half, &hs));
  /* The other group's leader is world rank 1 (odd) or 0 (even). */
  CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 77, &inter));
  const int evens = (size + 1) / 2, odds = size / 2;
  const int remote_n = color == 0 ? odds : evens;
  int flag = -1, s = -1, r = -1, rs = -1;
  CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
  CHECK(flag, "Comm_test_inter");
  CHECK_MPI(MPI_Comm_test_inter(half, &flag));
  CHECK(!flag, "an intracommunicator is not inter");
  CHECK_MPI(MPI_Comm_size(inter, &s));
  CHECK_MPI(MPI_Comm_rank(inter, &r));
  CHECK_MPI(MPI_Comm_remote_size(inter, &rs));
  CHECK(s == hs && r == hr && rs == remote_n, "size %d rank %d remote %d", s, r, rs);
  MPI_Group remote, world_group;
  CHECK_MPI(MPI_Comm_remote_group(inter, &remote));
  CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  int first = 0, w = -1;
  CHECK_MPI(MPI_Group_translate_ranks(remote, 1, &first, world_group, &w));
  CHECK(w == 1 - color, "remote group's first is world rank %d", w);
  CHECK_MPI(MPI_Group_free(&remote));
  CHECK_MPI(MPI_Group_free(&world_group));

  /* Point to point: local rank i sends to remote rank i % remote size;
   * everyone receives what the remote ranks sent it. */
  const int to = hr % rs;
  int expect = 0;
  for (int i = 0; i < (color == 0 ? odds : evens); i++) {
    if (i % hs == hr) expect++;
  }
  const int token = 1000 * color + hr;
  MPI_Request sreq;
  CHECK_MPI(MPI_Isend(&token, 1, MPI_INT, to, 5, inter, &sreq));
  for (int k = 0; k < expect; k++) {
    int got = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st));
    CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rs, "source %d of %d", st.MPI_SOURCE, rs);
    CHECK(got == 1000 * (1 - color) + st.MPI_SOURCE, "got %d from %d", got, st.MPI_SOURCE);
    CHECK(st.MPI_SOURCE % hs == hr, "sent to me by remote %d", st.MPI_SOURCE);
  }
  CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));

  CHECK_MPI(MPI_Barrier(inter));
  /* Bcast from rank 0 of the even group to the odd group. */
  int v = -1;
  if (color == 0) {
    v = 4242;
    CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, hr == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
  } else {
    CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, inter));
    CHECK(v == 4242, "intercomm Bcast got %d", v);
  }
  /* Allreduce: each group gets the other's sum of world ranks. */
  int sum = -1, want = 0;
  CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter));
  for (int i = 1 - color; i < size; i += 2) want += i;
  CHECK(sum == want, "intercomm Allreduce %d want %d", sum, want);

  /* Merge: the odd group says high, so the evens come first. */
  MPI_Comm merged;
  CHECK_MPI(MPI_Intercomm_merge(inter, color == 1, &merged));
  int mr = -1, ms = -1;
  CHECK_MPI(MPI_Comm_rank(merged, &mr));
  CHECK_MPI(MPI_Comm_size(merged, &ms));
  CHECK(ms == size && mr == (color == 0 ? hr : evens + hr), "merged rank %d of %d", mr, ms);
  int msum = -1;
  CHECK_MPI(MPI_Allreduce(&rank, &msum, 1, MPI_INT, MPI_SUM, merged));
  CHECK(msum == size * (size - 1) / 2, "merged Allreduce %d", msum);
  CHECK_MPI(MPI_Comm_free(&merged));

#ifdef ROCL_MPI /* MPI defines no scan on intercommunicators: rocl says so */
  CHECK_MPI(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
  int cls = -1, x = 0;
  MPI_Error_class(MPI_Scan(&x, &x, 1, MPI_INT, MPI_SUM, inter), &cls);
  CHECK(cls == MPI_ERR_COMM, "Scan on an intercommunicator: class %d", cls);
#endif
  CHECK_MPI(MPI_Comm_free(&inter));
  CHECK_MPI(MPI_Comm_free(&half));
  test_done("intercomm");
  return 0;
}
