/* p2p_modes: communication modes.
 * Ssend/Issend do not complete before the receive is posted (timed),
 * Bsend/Ibsend with Buffer_attach/Buffer_detach (local completion, detach
 * returns the same pointer and size, buffer reuse), Rsend/Irsend to a
 * pre-posted receive. Pair tests use ranks 0 and 1; with one rank the
 * modes are exercised to self where that is meaningful. */
#include "mpi_check.h"

static int rank, size;

static void fill(int *b, int n, int seed) {
  for (int i = 0; i < n; i++) b[i] = seed * 7919 + i;
}

static void check_fill(const int *b, int n, int seed, const char *what) {
  for (int i = 0; i < n; i++) CHECK(b[i] == seed * 7919 + i, "%s: element %d is %d", what, i, b[i]);
}

/* ---- synchronous mode ---- */

static void test_ssend(void) {
  if (size < 2) {
    test_note("p2p_modes: Ssend/Issend timing skipped (needs 2 ranks)");
    /* Ssend to self against a pre-posted receive still must work. */
    int a = 42, b = 0;
    MPI_Request rq;
    CHECK_MPI(MPI_Irecv(&b, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Ssend(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(b == 42, "Ssend to self got %d", b);
    CHECK_MPI(MPI_Issend(&a, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq));
    int flag = 1;
    CHECK_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "Issend to self completed before any receive was posted");
    CHECK_MPI(MPI_Recv(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    return;
  }
  /* Blocking Ssend of a small message (which a standard Send would
   * typically complete eagerly): rank 1 posts its receive 100 ms after
   * leaving a Barrier, which it cannot leave before rank 0 entered it, so
   * measured from rank 0's entry into the Barrier the Ssend cannot
   * complete in less than 100 ms, however the processes are scheduled. */
  int payload[4], got[4];
  for (int round = 0; round < 2; round++) {
    int count = round == 0 ? 1 : 0; /* 4-byte and empty message */
    double t0 = MPI_Wtime();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
      fill(payload, 4, 3);
      CHECK_MPI(MPI_Ssend(payload, count, MPI_INT, 1, 10, MPI_COMM_WORLD));
      double dt = MPI_Wtime() - t0;
      CHECK(dt >= 0.095,
            "Ssend of %d ints returned after %.1f ms, before "
            "the receive was posted (100 ms)",
            count, dt * 1e3);
    } else if (rank == 1) {
      sleep_ms(100);
      CHECK_MPI(MPI_Recv(got, 4, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      if (count) check_fill(got, count, 3, "Ssend");
    }
  }
  /* Issend: rank 1 posts the receive only after a "go" message that rank 0
   * sends after polling the Issend with Test for ~50 ms: it must not
   * complete before that (no timing assumption). */
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) {
    MPI_Request rq;
    fill(payload, 4, 4);
    CHECK_MPI(MPI_Issend(payload, 4, MPI_INT, 1, 11, MPI_COMM_WORLD, &rq));
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.05) {
      int flag = 1;
      CHECK_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
      CHECK(!flag, "Issend completed before the receive was posted");
      sleep_ms(2);
    }
    int go = 1;
    CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 1, 13, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  } else if (rank == 1) {
    int go = 0;
    CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Recv(got, 4, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    check_fill(got, 4, 4, "Issend");
  }
  /* Large Ssend (rendezvous either way) still delivers the data. */
  enum { BIG = 1 << 19 };
  int *big = malloc(BIG * sizeof *big);
  if (rank == 0) {
    fill(big, BIG, 5);
    CHECK_MPI(MPI_Ssend(big, BIG, MPI_INT, 1, 12, MPI_COMM_WORLD));
  } else if (rank == 1) {
    CHECK_MPI(MPI_Recv(big, BIG, MPI_INT, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    check_fill(big, BIG, 5, "large Ssend");
  }
  free(big);
}

/* ---- buffered mode ---- */

#define NB 4
#define BLEN (16 * 1024) /* ints: 64 KiB messages, above any eager limit */

static void test_bsend(void) {
  int tsize = 0;
  CHECK_MPI(MPI_Type_size(MPI_INT, &tsize));
  CHECK(MPI_BSEND_OVERHEAD >= 0, "MPI_BSEND_OVERHEAD %d", (int)MPI_BSEND_OVERHEAD);
  int bufsize = NB * (BLEN * tsize + MPI_BSEND_OVERHEAD) +
                (0 * tsize + MPI_BSEND_OVERHEAD); /* + one empty message */
  char *buffer = malloc(bufsize);
  CHECK_MPI(MPI_Buffer_attach(buffer, bufsize));

  int peer = size > 1 ? 1 : 0;
  int *msgs = malloc(NB * BLEN * sizeof *msgs);
  if (rank == 0) {
    /* If Bsend were not local, rank 0 would block here while rank 1
     * waits for the "go" message below: deadlock. */
    for (int k = 0; k < NB; k++) {
      fill(msgs + k * BLEN, BLEN, 10 + k);
      CHECK_MPI(MPI_Bsend(msgs + k * BLEN, BLEN, MPI_INT, peer, 20 + k, MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Bsend(NULL, 0, MPI_INT, peer, 30, MPI_COMM_WORLD));
    /* The user buffer may be reused at once after Bsend. */
    memset(msgs, 0, NB * BLEN * sizeof *msgs);
    if (peer != 0) {
      int go = 1;
      CHECK_MPI(MPI_Send(&go, 1, MPI_INT, peer, 31, MPI_COMM_WORLD));
    }
  }
  if (rank == peer) {
    if (peer != 0) {
      int go = 0;
      CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    int *rb = malloc(BLEN * sizeof *rb);
    /* Receive in reverse tag order: buffered messages wait for us. */
    for (int k = NB - 1; k >= 0; k--) {
      MPI_Status st;
      int cnt;
      CHECK_MPI(MPI_Recv(rb, BLEN, MPI_INT, 0, 20 + k, MPI_COMM_WORLD, &st));
      CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
      CHECK(cnt == BLEN, "Bsend message %d: count %d", k, cnt);
      check_fill(rb, BLEN, 10 + k, "Bsend");
    }
    MPI_Status st;
    int cnt = -1;
    CHECK_MPI(MPI_Recv(rb, 1, MPI_INT, 0, 30, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 0, "empty Bsend: count %d", cnt);
    free(rb);
  }

  /* Detach waits for the buffered messages and returns buffer and size. */
  void *det = NULL;
  int detsize = -1;
  CHECK_MPI(MPI_Buffer_detach(&det, &detsize));
  CHECK(det == buffer && detsize == bufsize, "Buffer_detach returned %p/%d, attached %p/%d", det,
        detsize, (void *)buffer, bufsize);

  /* Reattach the same buffer and use it with Ibsend. */
  CHECK_MPI(MPI_Buffer_attach(buffer, bufsize));
  if (rank == 0) {
    MPI_Request rq[NB];
    for (int k = 0; k < NB; k++) {
      fill(msgs + k * BLEN, BLEN, 40 + k);
      CHECK_MPI(MPI_Ibsend(msgs + k * BLEN, BLEN, MPI_INT, peer, 40 + k, MPI_COMM_WORLD, &rq[k]));
    }
    /* Local completion: Waitall returns without any receive posted. */
    CHECK_MPI(MPI_Waitall(NB, rq, MPI_STATUSES_IGNORE));
    for (int k = 0; k < NB; k++) CHECK(rq[k] == MPI_REQUEST_NULL, "Ibsend request not freed");
    memset(msgs, 0, NB * BLEN * sizeof *msgs);
    if (peer != 0) {
      int go = 1;
      CHECK_MPI(MPI_Send(&go, 1, MPI_INT, peer, 49, MPI_COMM_WORLD));
    }
  }
  if (rank == peer) {
    if (peer != 0) {
      int go = 0;
      CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 49, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    int *rb = malloc(BLEN * sizeof *rb);
    for (int k = 0; k < NB; k++) {
      CHECK_MPI(MPI_Recv(rb, BLEN, MPI_INT, 0, 40 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      check_fill(rb, BLEN, 40 + k, "Ibsend");
    }
    free(rb);
  }
  det = NULL;
  detsize = -1;
  CHECK_MPI(MPI_Buffer_detach(&det, &detsize));
  CHECK(det == buffer && detsize == bufsize, "second Buffer_detach %p/%d", det, detsize);
  free(msgs);
  free(buffer);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- ready mode ---- */

static void test_rsend(void) {
  int peer = size > 1 ? 1 : 0;
  enum { N = 1000, BIG = 1 << 18 };
  int *small = malloc(N * sizeof(int)), *big = malloc(BIG * sizeof(int));
  int *rsmall = malloc(N * sizeof(int)), *rbig = malloc(BIG * sizeof(int));
  int rone = 0;
  MPI_Request rq[3];
  if (rank == peer) {
    CHECK_MPI(MPI_Irecv(rsmall, N, MPI_INT, 0, 50, MPI_COMM_WORLD, &rq[0]));
    CHECK_MPI(MPI_Irecv(rbig, BIG, MPI_INT, 0, 51, MPI_COMM_WORLD, &rq[1]));
    CHECK_MPI(MPI_Irecv(&rone, 1, MPI_INT, 0, 52, MPI_COMM_WORLD, &rq[2]));
  }
  /* The barrier guarantees the receives are posted before the Rsends. */
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) {
    fill(small, N, 50);
    fill(big, BIG, 51);
    CHECK_MPI(MPI_Rsend(small, N, MPI_INT, peer, 50, MPI_COMM_WORLD));
    MPI_Request srq[2];
    CHECK_MPI(MPI_Irsend(big, BIG, MPI_INT, peer, 51, MPI_COMM_WORLD, &srq[0]));
    int one = 7777;
    CHECK_MPI(MPI_Irsend(&one, 1, MPI_INT, peer, 52, MPI_COMM_WORLD, &srq[1]));
    if (rank == peer) /* self: complete the receives here */
      CHECK_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Waitall(2, srq, MPI_STATUSES_IGNORE));
  }
  if (rank == peer) {
    if (rank != 0) CHECK_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    check_fill(rbig, BIG, 51, "Irsend");
    CHECK(rone == 7777, "Irsend small got %d", rone);
    check_fill(rsmall, N, 50, "Rsend");
  }
  free(small);
  free(big);
  free(rsmall);
  free(rbig);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  test_ssend();
  test_bsend();
  test_rsend();
  test_done("p2p_modes");
  return 0;
}
