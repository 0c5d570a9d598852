/* comm: communicators and error handlers.
 * Comm_dup, Comm_split (colors, reversed keys, MPI_UNDEFINED ->
 * MPI_COMM_NULL), Comm_compare (IDENT, CONGRUENT, SIMILAR, UNEQUAL),
 * Comm_free with traffic still pending on the freed communicator (300
 * times against an Ssend), context
 * separation (same tags on different communicators), MPI_COMM_SELF,
 * 300 live communicators, Comm_set/get_errhandler with MPI_ERRORS_RETURN,
 * Error_class/Error_string, errhandler inheritance by dup/split. */
#include "mpi_check.h"

static int rank, size, next, prev;

static void test_dup_compare(void) {
  int res = -1;
  CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
  CHECK(res == MPI_IDENT, "compare(WORLD, WORLD) = %d", res);

  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  CHECK(dup != MPI_COMM_NULL && dup != MPI_COMM_WORLD, "Comm_dup handle");
  int r = -1, s = -1;
  CHECK_MPI(MPI_Comm_rank(dup, &r));
  CHECK_MPI(MPI_Comm_size(dup, &s));
  CHECK(r == rank && s == size, "dup rank %d size %d", r, s);
  CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
  CHECK(res == MPI_CONGRUENT, "compare(WORLD, dup) = %d", res);
  CHECK_MPI(MPI_Comm_compare(dup, dup, &res));
  CHECK(res == MPI_IDENT, "compare(dup, dup) = %d", res);

  /* Dup of a dup. */
  MPI_Comm dup2;
  CHECK_MPI(MPI_Comm_dup(dup, &dup2));
  CHECK_MPI(MPI_Comm_compare(dup, dup2, &res));
  CHECK(res == MPI_CONGRUENT, "compare(dup, dup of dup) = %d", res);

  /* WORLD vs SELF: congruent with one process, unequal otherwise. */
  CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
  CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(WORLD, SELF) = %d", res);

  /* Same members, reversed order: SIMILAR (CONGRUENT with one process). */
  MPI_Comm rev;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
  CHECK_MPI(MPI_Comm_rank(rev, &r));
  CHECK(r == size - 1 - rank, "reversed split: rank %d", r);
  CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, rev, &res));
  CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(WORLD, reversed) = %d", res);

  CHECK_MPI(MPI_Comm_free(&dup2));
  CHECK_MPI(MPI_Comm_free(&rev));
  CHECK_MPI(MPI_Comm_free(&dup));
  CHECK(dup == MPI_COMM_NULL && rev == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");
}

static void test_split(void) {
  /* Colors by parity, key = rank: new rank = rank / 2. */
  MPI_Comm half;
  int color = rank % 2;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
  int r, s, want_size = (size + 1 - color) / 2;
  CHECK_MPI(MPI_Comm_rank(half, &r));
  CHECK_MPI(MPI_Comm_size(half, &s));
  CHECK(s == want_size && r == rank / 2, "split by parity: rank %d size %d", r, s);
  /* Traffic inside the split: ring, sources are split-ranks. */
  int x = rank, y = -1;
  MPI_Status st;
  CHECK_MPI(
      MPI_Sendrecv(&x, 1, MPI_INT, (r + 1) % s, 5, &y, 1, MPI_INT, (r + s - 1) % s, 5, half, &st));
  CHECK(st.MPI_SOURCE == (r + s - 1) % s, "split ring: source %d", st.MPI_SOURCE);
  CHECK(y == 2 * ((r + s - 1) % s) + color, "split ring: got world rank %d", y);
  /* Equal keys: order by the rank in the old communicator. Negative keys
   * reverse the order. */
  MPI_Comm rev;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, -rank, &rev));
  CHECK_MPI(MPI_Comm_rank(rev, &r));
  CHECK(r == want_size - 1 - rank / 2, "split with key -rank: rank %d", r);
  MPI_Comm same;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 7, 0, &same));
  CHECK_MPI(MPI_Comm_rank(same, &r));
  CHECK(r == rank, "split with equal keys: rank %d", r);
  /* Split of a split. */
  MPI_Comm quarter;
  CHECK_MPI(MPI_Comm_split(half, (rank / 2) % 2, 0, &quarter));
  CHECK_MPI(MPI_Comm_size(quarter, &s));
  int sum = 0, one = 1;
  CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, quarter));
  CHECK(sum == s, "allreduce on split of split: %d != %d", sum, s);

  /* MPI_UNDEFINED color: MPI_COMM_NULL on that rank. */
  MPI_Comm part;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &part));
  if (rank == 0) {
    CHECK(part == MPI_COMM_NULL, "MPI_UNDEFINED color did not give MPI_COMM_NULL");
  } else {
    CHECK(part != MPI_COMM_NULL, "split gave MPI_COMM_NULL");
    CHECK_MPI(MPI_Comm_size(part, &s));
    CHECK_MPI(MPI_Comm_rank(part, &r));
    CHECK(s == size - 1 && r == rank - 1, "split without rank 0: rank %d size %d", r, s);
    CHECK_MPI(MPI_Comm_free(&part));
  }
  /* All MPI_UNDEFINED. */
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, rank, &part));
  CHECK(part == MPI_COMM_NULL, "all-MPI_UNDEFINED split did not give MPI_COMM_NULL");

  CHECK_MPI(MPI_Comm_free(&quarter));
  CHECK_MPI(MPI_Comm_free(&same));
  CHECK_MPI(MPI_Comm_free(&rev));
  CHECK_MPI(MPI_Comm_free(&half));
}

/* Same tags, different communicators: messages never cross. */
static void test_isolation(void) {
  MPI_Comm a, b;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
  int sw = 1000 + rank, sa = 2000 + rank, sb = 3000 + rank;
  MPI_Request rq[3];
  /* Sent in the order b, WORLD, a ... */
  CHECK_MPI(MPI_Isend(&sb, 1, MPI_INT, next, 9, b, &rq[0]));
  CHECK_MPI(MPI_Isend(&sw, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &rq[1]));
  CHECK_MPI(MPI_Isend(&sa, 1, MPI_INT, next, 9, a, &rq[2]));
  /* ... received in the order a, b, WORLD, all with wildcards. */
  int ra = -1, rb = -1, rw = -1;
  MPI_Status st;
  CHECK_MPI(MPI_Recv(&ra, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, a, &st));
  CHECK(ra == 2000 + prev && st.MPI_TAG == 9, "comm a got %d", ra);
  CHECK_MPI(MPI_Recv(&rb, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, b, &st));
  CHECK(rb == 3000 + prev, "comm b got %d", rb);
  CHECK_MPI(MPI_Recv(&rw, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
  CHECK(rw == 1000 + prev, "WORLD got %d", rw);
  CHECK_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
  /* Iprobe on one comm does not see a message sent on another. */
  CHECK_MPI(MPI_Isend(&sb, 1, MPI_INT, rank, 10, b, &rq[0]));
  int flag = 1;
  CHECK_MPI(MPI_Iprobe(rank, 10, a, &flag, MPI_STATUS_IGNORE));
  CHECK(!flag, "Iprobe on comm a saw a message sent on comm b");
  CHECK_MPI(MPI_Recv(&rb, 1, MPI_INT, rank, 10, b, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Comm_free(&a));
  CHECK_MPI(MPI_Comm_free(&b));
}

/* Comm_free while operations on the communicator are still pending: they
 * complete normally (MPI 3.1 6.4.3). */
static void test_free_pending(void) {
  enum { BIG = 1 << 20 };
  int *big = malloc(BIG * sizeof *big), *rbig = malloc(BIG * sizeof *rbig);
  int small = 77 + rank, rsmall = -1;
  for (int i = 0; i < BIG; i++) big[i] = rank + i;
  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  MPI_Request rq[4];
  /* Receives first, then sends; the large one (4 MiB) is still in flight
   * when the communicator is freed. */
  CHECK_MPI(MPI_Irecv(rbig, BIG, MPI_INT, prev, 1, dup, &rq[0]));
  CHECK_MPI(MPI_Irecv(&rsmall, 1, MPI_INT, prev, 2, dup, &rq[1]));
  CHECK_MPI(MPI_Isend(big, BIG, MPI_INT, next, 1, dup, &rq[2]));
  CHECK_MPI(MPI_Isend(&small, 1, MPI_INT, next, 2, dup, &rq[3]));
  CHECK_MPI(MPI_Comm_free(&dup));
  CHECK(dup == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");
  sleep_ms(20);
  MPI_Status st[4];
  CHECK_MPI(MPI_Waitall(4, rq, st));
  CHECK(rsmall == 77 + prev, "small message on the freed comm: %d", rsmall);
  CHECK(st[0].MPI_SOURCE == prev, "status on the freed comm");
  for (int i = 0; i < BIG; i += 4093)
    CHECK(rbig[i] == prev + i, "large message on the freed comm: element %d", i);

  /* A receive posted on a dup that is then freed, and the matching send
   * only started after the free (on the sender's own, not yet freed,
   * handle): rank 1 receives from rank 0. */
  if (size >= 2) {
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int v = -1;
    MPI_Request r1 = MPI_REQUEST_NULL;
    if (rank == 1) CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 0, 3, dup, &r1));
    /* Rank 0 sends (on its own, not yet freed, handle) ~20 ms after
     * the Barrier, while rank 1 frees its handle right after it: the
     * message normally arrives after rank 1's Comm_free. Deadlock-free
     * even if Comm_free synchronizes or Send is synchronous, since the
     * receive is posted before the Barrier. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
      int w = 4242;
      sleep_ms(20); /* let rank 1 get through Comm_free first */
      CHECK_MPI(MPI_Send(&w, 1, MPI_INT, 1, 3, dup));
    }
    CHECK_MPI(MPI_Comm_free(&dup));
    if (rank == 1) {
      sleep_ms(10);
      CHECK_MPI(MPI_Wait(&r1, MPI_STATUS_IGNORE));
      CHECK(v == 4242, "receive pending across Comm_free got %d", v);
    }
  }
  free(big);
  free(rbig);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* The same with a synchronous send, many times: the receiver frees its
 * dup while the receive is pending and then waits; the sender's Ssend
 * must get its acknowledgement whatever the order of the match and the
 * free (the freed communicator lives until its operations complete). */
static void test_free_pending_ssend(void) {
  if (size < 2) return;
  for (int i = 0; i < 300; i++) {
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    if (rank == 1) {
      int v = -1;
      MPI_Request r1;
      CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 0, 4, dup, &r1));
      CHECK_MPI(MPI_Comm_free(&dup));
      CHECK_MPI(MPI_Wait(&r1, MPI_STATUS_IGNORE));
      CHECK(v == i, "round %d: received %d", i, v);
    } else {
      if (rank == 0) CHECK_MPI(MPI_Ssend(&i, 1, MPI_INT, 1, 4, dup));
      CHECK_MPI(MPI_Comm_free(&dup));
    }
  }
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_self(void) {
  int r = -1, s = -1;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &r));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &s));
  CHECK(r == 0 && s == 1, "COMM_SELF rank %d size %d", r, s);
  int x = 5 + rank, y = 0;
  MPI_Request rq;
  MPI_Status st;
  CHECK_MPI(MPI_Isend(&x, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &rq));
  CHECK_MPI(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(y == x && st.MPI_SOURCE == 0, "COMM_SELF message");
  CHECK_MPI(MPI_Barrier(MPI_COMM_SELF));
  CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
  CHECK(y == x, "Allreduce on COMM_SELF");
  MPI_Comm d;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &d));
  int res;
  CHECK_MPI(MPI_Comm_compare(MPI_COMM_SELF, d, &res));
  CHECK(res == MPI_CONGRUENT, "compare(SELF, dup of SELF) = %d", res);
  CHECK_MPI(MPI_Bcast(&x, 1, MPI_INT, 0, d));
  CHECK_MPI(MPI_Comm_free(&d));
}

/* Many live communicators: each keeps its own matching context. */
static void test_many(void) {
  enum { NC = 300 };
  MPI_Comm *c = malloc(NC * sizeof *c);
  for (int i = 0; i < NC; i++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
  int *rv = malloc(NC * sizeof *rv), *sv = malloc(NC * sizeof *sv);
  MPI_Request *rq = malloc(2 * NC * sizeof *rq);
  for (int i = 0; i < NC; i++)
    CHECK_MPI(MPI_Irecv(&rv[i], 1, MPI_INT, MPI_ANY_SOURCE, 0, c[i], &rq[i]));
  for (int i = NC - 1; i >= 0; i--) { /* sent in the reverse order */
    sv[i] = i * 10 + rank;
    CHECK_MPI(MPI_Isend(&sv[i], 1, MPI_INT, next, 0, c[i], &rq[NC + i]));
  }
  CHECK_MPI(MPI_Waitall(2 * NC, rq, MPI_STATUSES_IGNORE));
  for (int i = 0; i < NC; i++) CHECK(rv[i] == i * 10 + prev, "communicator %d got %d", i, rv[i]);
  /* A collective on a few of them, and the comparisons. */
  for (int i = 0; i < NC; i += 37) {
    int one = 1, sum = 0, res;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c[i]));
    CHECK(sum == size, "Allreduce on communicator %d", i);
    CHECK_MPI(MPI_Comm_compare(c[i], c[NC - 1 - i], &res));
    CHECK(res == (i == NC - 1 - i ? MPI_IDENT : MPI_CONGRUENT), "compare %d", i);
  }
  for (int i = 0; i < NC; i++) CHECK_MPI(MPI_Comm_free(&c[i]));
  /* And again: freed resources are reusable. (Kept short: with more
   * ranks than cores a Comm_dup is slow under MPICH, which
   * run_reference.sh runs this test with too.) */
  for (int i = 0; i < 100; i++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
  for (int i = 0; i < 100; i++) {
    int one = 1, sum = 0;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c[i]));
    CHECK(sum == size, "Allreduce on recycled communicator %d", i);
    CHECK_MPI(MPI_Comm_free(&c[i]));
  }
  free(c);
  free(rv);
  free(sv);
  free(rq);
}

static void test_errhandler(void) {
  MPI_Errhandler eh;
  CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
  CHECK(eh == MPI_ERRORS_ARE_FATAL, "default errhandler of WORLD is not ERRORS_ARE_FATAL");

  MPI_Comm c;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_get_errhandler(c, &eh));
  CHECK(eh == MPI_ERRORS_RETURN, "Comm_get_errhandler did not return ERRORS_RETURN");
  /* WORLD is unaffected. */
  CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
  CHECK(eh == MPI_ERRORS_ARE_FATAL, "setting a dup's errhandler changed WORLD's");

  /* An invalid rank: error code, not abort. */
  int x = 1;
  int rc = MPI_Send(&x, 1, MPI_INT, size, 0, c);
  CHECK(rc != MPI_SUCCESS, "send to rank %d (= size) succeeded", size);
  int cls = -1;
  CHECK_MPI(MPI_Error_class(rc, &cls));
  CHECK(cls == MPI_ERR_RANK, "send to an invalid rank: class %d, want MPI_ERR_RANK", cls);
  char msg[MPI_MAX_ERROR_STRING];
  int len = -1;
  CHECK_MPI(MPI_Error_string(rc, msg, &len));
  CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(msg) == len, "Error_string length %d",
        len);
  rc = MPI_Recv(&x, 1, MPI_INT, size + 5, 0, c, MPI_STATUS_IGNORE);
  CHECK_MPI(MPI_Error_class(rc, &cls));
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RANK, "recv from an invalid rank: class %d", cls);

  /* Error_class of a class is itself; strings exist for them. */
  int classes[] = {MPI_SUCCESS, MPI_ERR_TRUNCATE, MPI_ERR_RANK, MPI_ERR_COMM,
                   MPI_ERR_TAG, MPI_ERR_COUNT,    MPI_ERR_TYPE, MPI_ERR_OTHER};
  for (unsigned i = 0; i < sizeof classes / sizeof classes[0]; i++) {
    CHECK_MPI(MPI_Error_class(classes[i], &cls));
    CHECK(cls == classes[i], "Error_class(%d) = %d", classes[i], cls);
    len = -1;
    CHECK_MPI(MPI_Error_string(classes[i], msg, &len));
    CHECK(len > 0 && (int)strlen(msg) == len, "Error_string(%d)", classes[i]);
  }
  CHECK(MPI_SUCCESS == 0, "MPI_SUCCESS is %d", MPI_SUCCESS);
  CHECK(MPI_ERR_LASTCODE > MPI_ERR_OTHER, "MPI_ERR_LASTCODE");

  /* New communicators inherit the error handler of their parent. */
  MPI_Comm d, s;
  CHECK_MPI(MPI_Comm_dup(c, &d));
  CHECK_MPI(MPI_Comm_get_errhandler(d, &eh));
  CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit ERRORS_RETURN");
  rc = MPI_Send(&x, 1, MPI_INT, -7, 0, d);
  CHECK(rc != MPI_SUCCESS, "send to rank -7 on the dup succeeded");
  CHECK_MPI(MPI_Comm_split(c, 0, rank, &s));
  CHECK_MPI(MPI_Comm_get_errhandler(s, &eh));
  CHECK(eh == MPI_ERRORS_RETURN, "split did not inherit ERRORS_RETURN");
  /* Back to fatal. */
  CHECK_MPI(MPI_Comm_set_errhandler(d, MPI_ERRORS_ARE_FATAL));
  CHECK_MPI(MPI_Comm_get_errhandler(d, &eh));
  CHECK(eh == MPI_ERRORS_ARE_FATAL, "could not set ERRORS_ARE_FATAL back");
  /* The communicators still work after the errors. */
  CHECK_MPI(MPI_Barrier(c));
  CHECK_MPI(MPI_Comm_free(&s));
  CHECK_MPI(MPI_Comm_free(&d));
  CHECK_MPI(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  test_dup_compare();
  test_split();
  test_isolation();
  test_free_pending();
  test_free_pending_ssend();
  if (size < 2)
    test_note("comm: receive pending across Comm_free with a later send skipped (needs 2 ranks)");
  test_self();
  test_many();
  test_errhandler();
  test_done("comm");
  return 0;
}
