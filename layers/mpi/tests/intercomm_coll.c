/* intercomm_coll: the collectives on an intercommunicator (MPI 3.1
 * section 5.2.2). The even and the odd ranks of MPI_COMM_WORLD are the two
 * groups (unequal at 3 processes). Every value names the world rank that
 * sent it (and the block it was sent in), so each check proves who sent
 * what: Reduce, Gather(v), Scatter(v) with the root in either group
 * (MPI_ROOT at the root, MPI_PROC_NULL at its group mates, the root's rank
 * at the other group); Bcast from either group; Allgather(v), Alltoall(v,w)
 * (each gets the remote group's blocks); Reduce_scatter(_block) (each
 * group gets its share of the remote group's reduction); Comm_dup and
 * Comm_split of the intercommunicator; Iallgather and Igatherv on it.
 * With 1 process there is no intercommunicator: a note, and it passes. */
#include "mpi_check.h"

static int rank, size, color, hr, hs, rs;

/* World rank of rank i of group c (0: evens, 1: odds). */
static int world_of(int c, int i) {
  return 2 * i + c;
}

static int group_size(int c) {
  return c == 0 ? (size + 1) / 2 : size / 2;
}

/* The root argument of a rooted collective whose root is rank `root` of
 * group `side`. */
static int root_arg(int side, int root) {
  if (color != side) return root;
  return hr == root ? MPI_ROOT : MPI_PROC_NULL;
}

static void check_reduce(MPI_Comm inter, int side) {
  const int root = group_size(side) - 1;
  int send[3], recv[3] = {-1, -1, -1};
  for (int k = 0; k < 3; k++) send[k] = 10 * rank + k;
  CHECK_MPI(MPI_Reduce(send, recv, 3, MPI_INT, MPI_SUM, root_arg(side, root), inter));
  if (color == side && hr == root) {
    for (int k = 0; k < 3; k++) {
      int want = 0;
      for (int i = 0; i < rs; i++) want += 10 * world_of(1 - color, i) + k;
      CHECK(recv[k] == want, "Reduce[%d] %d want %d", k, recv[k], want);
    }
  }
}

static void check_gather(MPI_Comm inter, int side) {
  const int root = group_size(side) - 1;
  int send[4], recv[64];
  for (int k = 0; k < 4; k++) send[k] = 100 * rank + k;
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Gather(send, 2, MPI_INT, recv, 2, MPI_INT, root_arg(side, root), inter));
  if (color == side && hr == root) {
    for (int i = 0; i < rs; i++) {
      for (int k = 0; k < 2; k++) {
        const int want = 100 * world_of(1 - color, i) + k;
        CHECK(recv[2 * i + k] == want, "Gather from %d[%d]: %d want %d", i, k, recv[2 * i + k],
              want);
      }
    }
  }
  /* Gatherv: remote rank i sends i+1 values, landing one slot apart. */
  int counts[8], displs[8], at = 0;
  for (int i = 0; i < rs; i++) {
    counts[i] = i + 1;
    displs[i] = at + 1;
    at += i + 2;
  }
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Gatherv(send, hr + 1, MPI_INT, recv, counts, displs, MPI_INT, root_arg(side, root),
                        inter));
  if (color == side && hr == root) {
    for (int i = 0; i < rs; i++) {
      CHECK(recv[displs[i] - 1] == -1, "Gatherv wrote the gap before block %d", i);
      for (int k = 0; k <= i; k++) {
        const int want = 100 * world_of(1 - color, i) + k;
        CHECK(recv[displs[i] + k] == want, "Gatherv from %d[%d]: %d want %d", i, k,
              recv[displs[i] + k], want);
      }
    }
  }
}

static void check_scatter(MPI_Comm inter, int side) {
  const int root = group_size(side) - 1, root_world = world_of(side, root);
  int send[64], recv[8];
  for (int i = 0; i < 8; i++) {
    for (int k = 0; k < 8; k++) send[8 * i + k] = 1000 * rank + 10 * i + k;
  }
  for (int k = 0; k < 8; k++) recv[k] = -1;
  /* Scatter: block i (8 values) to remote rank i. */
  CHECK_MPI(MPI_Scatter(send, 8, MPI_INT, recv, 8, MPI_INT, root_arg(side, root), inter));
  if (color != side) {
    for (int k = 0; k < 8; k++) {
      const int want = 1000 * root_world + 10 * hr + k;
      CHECK(recv[k] == want, "Scatter[%d] %d want %d", k, recv[k], want);
    }
  }
  /* Scatterv: remote rank i gets i+1 values from block i. */
  int counts[8], displs[8];
  for (int i = 0; i < 8; i++) {
    counts[i] = i + 1;
    displs[i] = 8 * i;
  }
  for (int k = 0; k < 8; k++) recv[k] = -1;
  CHECK_MPI(MPI_Scatterv(send, counts, displs, MPI_INT, recv, hr + 1, MPI_INT, root_arg(side, root),
                         inter));
  if (color != side) {
    for (int k = 0; k <= hr; k++) {
      const int want = 1000 * root_world + 10 * hr + k;
      CHECK(recv[k] == want, "Scatterv[%d] %d want %d", k, recv[k], want);
    }
    CHECK(recv[hr + 1] == -1, "Scatterv wrote past its count");
  }
}

static void check_bcast(MPI_Comm inter, int side) {
  const int root = group_size(side) - 1;
  int v[2] = {-1, -1};
  if (color == side && hr == root) v[0] = 7 * rank, v[1] = 7 * rank + 1;
  CHECK_MPI(MPI_Bcast(v, 2, MPI_INT, root_arg(side, root), inter));
  if (color != side) {
    const int w = world_of(side, root);
    CHECK(v[0] == 7 * w && v[1] == 7 * w + 1, "Bcast got %d %d from %d", v[0], v[1], w);
  }
}

static void check_allgather(MPI_Comm inter) {
  int send[8], recv[64];
  for (int k = 0; k < 8; k++) send[k] = 100 * rank + k;
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Allgather(send, 2, MPI_INT, recv, 2, MPI_INT, inter));
  for (int i = 0; i < rs; i++) {
    for (int k = 0; k < 2; k++) {
      const int want = 100 * world_of(1 - color, i) + k;
      CHECK(recv[2 * i + k] == want, "Allgather from %d[%d]: %d want %d", i, k, recv[2 * i + k],
            want);
    }
  }
  /* Allgatherv: local rank r gives r+1 values; blocks one slot apart. */
  int counts[8], displs[8], at = 0;
  for (int i = 0; i < rs; i++) {
    counts[i] = i + 1;
    displs[i] = at + 1;
    at += i + 2;
  }
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Allgatherv(send, hr + 1, MPI_INT, recv, counts, displs, MPI_INT, inter));
  for (int i = 0; i < rs; i++) {
    CHECK(recv[displs[i] - 1] == -1, "Allgatherv wrote the gap before block %d", i);
    for (int k = 0; k <= i; k++) {
      const int want = 100 * world_of(1 - color, i) + k;
      CHECK(recv[displs[i] + k] == want, "Allgatherv from %d[%d]: %d want %d", i, k,
            recv[displs[i] + k], want);
    }
  }
}

static void check_alltoall(MPI_Comm inter) {
  int send[64], recv[64];
  /* Block j goes to remote rank j: 1000 * sender + 10 * j + k. */
  for (int j = 0; j < 8; j++) {
    for (int k = 0; k < 8; k++) send[8 * j + k] = 1000 * rank + 10 * j + k;
  }
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Alltoall(send, 8, MPI_INT, recv, 8, MPI_INT, inter));
  for (int i = 0; i < rs; i++) {
    for (int k = 0; k < 8; k++) {
      const int want = 1000 * world_of(1 - color, i) + 10 * hr + k;
      CHECK(recv[8 * i + k] == want, "Alltoall from %d[%d]: %d want %d", i, k, recv[8 * i + k],
            want);
    }
  }
  /* Alltoallv: local rank i sends i + j + 1 values to remote rank j. */
  int sc[8], sd[8], rc[8], rd[8];
  for (int j = 0; j < rs; j++) {
    sc[j] = hr + j + 1;
    sd[j] = 8 * j;
    rc[j] = j + hr + 1;
    rd[j] = 8 * j;
  }
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Alltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, inter));
  for (int i = 0; i < rs; i++) {
    for (int k = 0; k < rc[i]; k++) {
      const int want = 1000 * world_of(1 - color, i) + 10 * hr + k;
      CHECK(recv[8 * i + k] == want, "Alltoallv from %d[%d]: %d want %d", i, k, recv[8 * i + k],
            want);
    }
    CHECK(recv[8 * i + rc[i]] == -1, "Alltoallv wrote past block %d", i);
  }
  /* Alltoallw: the same counts, displacements in bytes, a type per peer
   * (MPI_INT, or pairs of ints for an even count). */
  MPI_Datatype pair;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
  CHECK_MPI(MPI_Type_commit(&pair));
  int swc[8], swd[8], rwc[8], rwd[8];
  MPI_Datatype st[8], rt[8];
  for (int j = 0; j < rs; j++) {
    const int n = sc[j], m = rc[j];
    st[j] = n % 2 == 0 ? pair : MPI_INT;
    swc[j] = n % 2 == 0 ? n / 2 : n;
    swd[j] = (int)(8 * j * sizeof(int));
    rt[j] = MPI_INT;
    rwc[j] = m;
    rwd[j] = (int)(8 * j * sizeof(int));
  }
  for (int k = 0; k < 64; k++) recv[k] = -1;
  CHECK_MPI(MPI_Alltoallw(send, swc, swd, st, recv, rwc, rwd, rt, inter));
  for (int i = 0; i < rs; i++) {
    for (int k = 0; k < rc[i]; k++) {
      const int want = 1000 * world_of(1 - color, i) + 10 * hr + k;
      CHECK(recv[8 * i + k] == want, "Alltoallw from %d[%d]: %d want %d", i, k, recv[8 * i + k],
            want);
    }
  }
  CHECK_MPI(MPI_Type_free(&pair));
}

/* Sum over the remote group of (world rank + 100 * e). */
static int remote_sum(int e) {
  int want = 0;
  for (int i = 0; i < rs; i++) want += world_of(1 - color, i) + 100 * e;
  return want;
}

static void check_reduce_scatter(MPI_Comm inter) {
  /* Block: hs * rs elements on both sides, rs per local rank. */
  int send[64], recv[16];
  for (int e = 0; e < hs * rs; e++) send[e] = rank + 100 * e;
  for (int k = 0; k < 16; k++) recv[k] = -1;
  CHECK_MPI(MPI_Reduce_scatter_block(send, recv, rs, MPI_INT, MPI_SUM, inter));
  for (int k = 0; k < rs; k++) {
    const int want = remote_sum(hr * rs + k);
    CHECK(recv[k] == want, "Reduce_scatter_block[%d] %d want %d", k, recv[k], want);
  }
  CHECK(recv[rs] == -1, "Reduce_scatter_block wrote past its count");
  /* Reduce_scatter: `size` elements on both sides; local rank 0 takes all
   * but one per other rank. */
  int counts[8], first = 0;
  for (int r = 0; r < hs; r++) counts[r] = r == 0 ? size - (hs - 1) : 1;
  for (int r = 0; r < hr; r++) first += counts[r];
  for (int e = 0; e < size; e++) send[e] = rank + 100 * e;
  for (int k = 0; k < 16; k++) recv[k] = -1;
  CHECK_MPI(MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, inter));
  for (int k = 0; k < counts[hr]; k++) {
    const int want = remote_sum(first + k);
    CHECK(recv[k] == want, "Reduce_scatter[%d] %d want %d", k, recv[k], want);
  }
  CHECK(recv[counts[hr]] == -1, "Reduce_scatter wrote past its count");
}

/* A dup is an intercommunicator of the same groups, with its own traffic:
 * a message sent on the original is not received on the dup. */
static void check_dup(MPI_Comm inter) {
  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(inter, &dup));
  int flag = 0, s = -1, r = -1, n = -1;
  CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
  CHECK_MPI(MPI_Comm_size(dup, &s));
  CHECK_MPI(MPI_Comm_rank(dup, &r));
  CHECK_MPI(MPI_Comm_remote_size(dup, &n));
  CHECK(flag && s == hs && r == hr && n == rs, "dup: inter %d size %d rank %d remote %d", flag, s,
        r, n);
  const int to = hr % rs, a = 10 * rank, b = 10 * rank + 1;
  MPI_Request req[2];
  CHECK_MPI(MPI_Isend(&a, 1, MPI_INT, to, 3, inter, &req[0]));
  CHECK_MPI(MPI_Isend(&b, 1, MPI_INT, to, 3, dup, &req[1]));
  for (int i = 0; i < group_size(1 - color); i++) {
    if (i % hs != hr) continue;
    int got = -1;
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, i, 3, dup, MPI_STATUS_IGNORE));
    CHECK(got == 10 * world_of(1 - color, i) + 1, "dup got %d from %d", got, i);
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, i, 3, inter, MPI_STATUS_IGNORE));
    CHECK(got == 10 * world_of(1 - color, i), "inter got %d from %d", got, i);
  }
  CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
  check_allgather(dup);
  int sum = -1, want = 0;
  CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
  for (int i = 0; i < rs; i++) want += world_of(1 - color, i);
  CHECK(sum == want, "dup Allreduce %d want %d", sum, want);
  CHECK_MPI(MPI_Comm_free(&dup));
}

/* Split by the parity of the group rank, keys reversing the order: a color
 * met on one side only gives MPI_COMM_NULL. */
static void check_split(MPI_Comm inter) {
  MPI_Comm sub;
  const int c = hr % 2;
  CHECK_MPI(MPI_Comm_split(inter, c, -hr, &sub));
  int mine = 0, theirs = 0;
  for (int i = 0; i < hs; i++) mine += i % 2 == c;
  for (int i = 0; i < rs; i++) theirs += i % 2 == c;
  if (theirs == 0) {
    CHECK(sub == MPI_COMM_NULL, "split: a color without a remote match gave a communicator");
    return;
  }
  CHECK(sub != MPI_COMM_NULL, "split: no communicator");
  int flag = 0, s = -1, r = -1, n = -1;
  CHECK_MPI(MPI_Comm_test_inter(sub, &flag));
  CHECK_MPI(MPI_Comm_size(sub, &s));
  CHECK_MPI(MPI_Comm_rank(sub, &r));
  CHECK_MPI(MPI_Comm_remote_size(sub, &n));
  int before = 0; /* my color's ranks above me come first */
  for (int i = hr + 1; i < hs; i++) before += i % 2 == c;
  CHECK(flag && s == mine && n == theirs && r == before,
        "split: inter %d size %d/%d rank %d/%d "
        "remote %d/%d",
        flag, s, mine, r, before, n, theirs);
  /* Remote rank j is the remote group's j-th of my color from the top. */
  int got[8];
  CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, sub));
  int j = 0;
  for (int i = rs - 1; i >= 0; i--) {
    if (i % 2 != c) continue;
    CHECK(got[j] == world_of(1 - color, i), "split: remote %d is world %d, want %d", j, got[j],
          world_of(1 - color, i));
    j++;
  }
  CHECK_MPI(MPI_Comm_free(&sub));
}

static void check_nonblocking(MPI_Comm inter) {
  int send[2] = {100 * rank, 100 * rank + 1}, recv[16];
  for (int k = 0; k < 16; k++) recv[k] = -1;
  MPI_Request req;
  CHECK_MPI(MPI_Iallgather(send, 2, MPI_INT, recv, 2, MPI_INT, inter, &req));
  CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  for (int i = 0; i < rs; i++) {
    const int w = world_of(1 - color, i);
    CHECK(recv[2 * i] == 100 * w && recv[2 * i + 1] == 100 * w + 1, "Iallgather from %d", i);
  }
  /* Igatherv at rank 0 of the odd group: each even rank gives one value. */
  int counts[8], displs[8];
  for (int i = 0; i < rs; i++) counts[i] = 1, displs[i] = rs - 1 - i;
  for (int k = 0; k < 16; k++) recv[k] = -1;
  CHECK_MPI(
      MPI_Igatherv(send, 1, MPI_INT, recv, counts, displs, MPI_INT, root_arg(1, 0), inter, &req));
  CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  if (color == 1 && hr == 0) {
    for (int i = 0; i < rs; i++) {
      CHECK(recv[rs - 1 - i] == 100 * world_of(0, i), "Igatherv from %d: %d", i, recv[rs - 1 - i]);
    }
  }
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (size < 2) {
    test_note("intercomm_coll: skipped (needs 2 ranks for an intercommunicator)");
    test_done("intercomm_coll");
    return 0;
  }
  color = rank % 2;
  MPI_Comm half, inter;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
  CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 78, &inter));
  CHECK_MPI(MPI_Comm_rank(inter, &hr));
  CHECK_MPI(MPI_Comm_size(inter, &hs));
  CHECK_MPI(MPI_Comm_remote_size(inter, &rs));
  CHECK(hs == group_size(color) && rs == group_size(1 - color), "sizes %d %d", hs, rs);

  for (int side = 0; side < 2; side++) {
    check_reduce(inter, side);
    check_gather(inter, side);
    check_scatter(inter, side);
    check_bcast(inter, side);
  }
  check_allgather(inter);
  check_alltoall(inter);
  check_reduce_scatter(inter);
  check_dup(inter);
  check_split(inter);
  check_nonblocking(inter);

#ifdef ROCL_MPI /* the reference MPIs need not detect these */
  CHECK_MPI(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
  int cls = -1, x[16] = {0};
  MPI_Error_class(MPI_Allgather(MPI_IN_PLACE, 1, MPI_INT, x, 1, MPI_INT, inter), &cls);
  CHECK(cls == MPI_ERR_BUFFER, "Allgather MPI_IN_PLACE on an intercommunicator: class %d", cls);
  MPI_Error_class(MPI_Exscan(x, x + 1, 1, MPI_INT, MPI_SUM, inter), &cls);
  CHECK(cls == MPI_ERR_COMM, "Exscan on an intercommunicator: class %d", cls);
#endif
  CHECK_MPI(MPI_Comm_free(&inter));
  CHECK_MPI(MPI_Comm_free(&half));
  test_done("intercomm_coll");
  return 0;
}
