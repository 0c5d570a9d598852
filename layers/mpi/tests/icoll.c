/* icoll: non-blocking collectives.
 * Each of Ibarrier, Ibcast, Ireduce, Iallreduce, Igather(v), Iscatter(v),
 * Iallgather(v), Ialltoall(v), Ireduce_scatter_block, Iscan and Iexscan
 * gives what its blocking form gives; several outstanding on one
 * communicator complete in any order of Wait; Test polls to completion
 * while the caller computes; Ibarrier does not complete before the last
 * rank enters it; non-blocking collectives on a dup and on the parent at
 * once; Comm_free right after a Wait; under MPI_THREAD_MULTIPLE, 4
 * threads per rank each running 100 Iallreduce and Ibcast on a
 * communicator of its own at once, some waited at once, some computed
 * through. */
#include "mpi_check.h"

#include <pthread.h>
#include <time.h>

static int rank, size;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_each(void) {
  MPI_Request rq;
  /* Ibcast from every root. */
  for (int root = 0; root < size; root++) {
    int v[4] = {-1, -1, -1, -1};
    if (rank == root)
      for (int i = 0; i < 4; i++) v[i] = 10 * root + i;
    CHECK_MPI(MPI_Ibcast(v, 4, MPI_INT, root, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rq == MPI_REQUEST_NULL, "Wait frees the request");
    for (int i = 0; i < 4; i++) CHECK(v[i] == 10 * root + i, "Ibcast root %d: %d", root, v[i]);
  }
  /* Ireduce, Iallreduce. */
  int mine = rank + 1, sum = -1, all = -1;
  CHECK_MPI(MPI_Ireduce(&mine, &sum, 1, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  if (rank == size - 1) CHECK(sum == size * (size + 1) / 2, "Ireduce %d", sum);
  CHECK_MPI(MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(all == size, "Iallreduce %d", all);
  /* Igather, Iscatter, Iallgather, Ialltoall. */
  int *g = malloc(size * 2 * sizeof *g), *h = malloc(size * 2 * sizeof *h);
  int two[2] = {rank, -rank}, back[2] = {0, 0};
  CHECK_MPI(MPI_Igather(two, 2, MPI_INT, g, 2, MPI_INT, 0, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  if (rank == 0)
    for (int r = 0; r < size; r++) CHECK(g[2 * r] == r && g[2 * r + 1] == -r, "Igather %d", r);
  CHECK_MPI(MPI_Iscatter(g, 2, MPI_INT, back, 2, MPI_INT, 0, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(back[0] == rank && back[1] == -rank, "Iscatter %d %d", back[0], back[1]);
  CHECK_MPI(MPI_Iallgather(two, 2, MPI_INT, h, 2, MPI_INT, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < size; r++) CHECK(h[2 * r] == r, "Iallgather %d", r);
  for (int r = 0; r < size; r++) g[2 * r] = 100 * rank + r, g[2 * r + 1] = -1;
  CHECK_MPI(MPI_Ialltoall(g, 2, MPI_INT, h, 2, MPI_INT, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < size; r++) CHECK(h[2 * r] == 100 * r + rank, "Ialltoall from %d", r);
  /* The v forms: rank r contributes r+1 ints. */
  int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs), total = 0;
  for (int r = 0; r < size; r++) counts[r] = r + 1, displs[r] = total, total += r + 1;
  int *vin = malloc((rank + 1) * sizeof *vin), *vout = malloc(total * sizeof *vout);
  for (int i = 0; i <= rank; i++) vin[i] = 1000 * rank + i;
  CHECK_MPI(
      MPI_Iallgatherv(vin, rank + 1, MPI_INT, vout, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < size; r++)
    for (int i = 0; i <= r; i++)
      CHECK(vout[displs[r] + i] == 1000 * r + i, "Iallgatherv %d.%d", r, i);
  for (int i = 0; i < total; i++) vout[i] = -1;
  CHECK_MPI(
      MPI_Igatherv(vin, rank + 1, MPI_INT, vout, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  if (rank == 0) CHECK(vout[total - 1] == 1000 * (size - 1) + size - 1, "Igatherv");
  for (int i = 0; i <= rank; i++) vin[i] = -1;
  CHECK_MPI(
      MPI_Iscatterv(vout, counts, displs, MPI_INT, vin, rank + 1, MPI_INT, 0, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int i = 0; i <= rank; i++) CHECK(vin[i] == 1000 * rank + i, "Iscatterv %d", i);
  int *sc = malloc(size * sizeof *sc), *sd = malloc(size * sizeof *sd);
  for (int r = 0; r < size; r++) sc[r] = 1, sd[r] = r;
  int *src = malloc(size * sizeof *src), *dst = malloc(size * sizeof *dst);
  for (int r = 0; r < size; r++) src[r] = 10 * rank + r;
  CHECK_MPI(MPI_Ialltoallv(src, sc, sd, MPI_INT, dst, sc, sd, MPI_INT, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < size; r++) CHECK(dst[r] == 10 * r + rank, "Ialltoallv from %d", r);
  /* Ireduce_scatter_block, Iscan, Iexscan. */
  for (int r = 0; r < size; r++) src[r] = rank + r;
  int one = -1;
  CHECK_MPI(MPI_Ireduce_scatter_block(src, &one, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(one == size * (size - 1) / 2 + size * rank, "Ireduce_scatter_block %d", one);
  int scan = -1, ex = -7;
  CHECK_MPI(MPI_Iscan(&mine, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(scan == (rank + 1) * (rank + 2) / 2, "Iscan %d", scan);
  CHECK_MPI(MPI_Iexscan(&mine, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  if (rank > 0) CHECK(ex == rank * (rank + 1) / 2, "Iexscan %d", ex);
  free(g), free(h), free(counts), free(displs), free(vin), free(vout);
  free(sc), free(sd), free(src), free(dst);
}

static void test_outstanding_and_overlap(void) {
  /* Three at once, waited for in reverse order. */
  int b = rank == 0 ? 42 : -1, s = -1, m = -1;
  int one = 1;
  MPI_Request rq[3];
  CHECK_MPI(MPI_Ibcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]));
  CHECK_MPI(MPI_Iallreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]));
  CHECK_MPI(MPI_Iallreduce(&rank, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[2]));
  for (int k = 2; k >= 0; k--) CHECK_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
  CHECK(b == 42 && s == size && m == size - 1, "outstanding: %d %d %d", b, s, m);
  /* Test polls it to completion while this thread computes. */
  double acc = 0;
  int flag = 0, polls = 0, sum = -1;
  CHECK_MPI(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]));
  while (!flag) {
    for (int i = 0; i < 10000; i++) acc += i * 0.5;
    CHECK_MPI(MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE));
    polls++;
  }
  CHECK(sum == size && acc > 0, "polled Iallreduce %d after %d polls", sum, polls);
  /* On a dup and on the parent at once. */
  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  int x = -1, y = -1;
  CHECK_MPI(MPI_Iallreduce(&rank, &x, 1, MPI_INT, MPI_MIN, dup, &rq[0]));
  CHECK_MPI(MPI_Iallreduce(&rank, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[1]));
  CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
  CHECK(x == 0 && y == size - 1, "on dup and parent: %d %d", x, y);
  CHECK_MPI(MPI_Comm_free(&dup));
  /* Ibarrier: rank 0 enters 200 ms late; nobody's completes before (half
   * of it: the ranks left the barrier before at slightly different times). */
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  const double t0 = now();
  if (rank == 0) {
    const double until = t0 + 0.2;
    while (now() < until) {
    }
  }
  CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
  CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  CHECK(now() - t0 >= 0.1, "Ibarrier completed %.3f s after the start", now() - t0);
}

enum { kThreads = 4, kRounds = 100 };

static void *thread_rounds(void *arg) {
  MPI_Comm comm = *(MPI_Comm *)arg;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  for (int r = 0; r < kRounds; r++) {
    long in[2] = {me + r, 1}, out[2] = {-1, -1};
    MPI_Request req[2];
    long token = me == r % size ? 1000 + r : -1;
    CHECK_MPI(MPI_Iallreduce(in, out, 2, MPI_LONG, MPI_SUM, comm, &req[0]));
    CHECK_MPI(MPI_Ibcast(&token, 1, MPI_LONG, r % size, comm, &req[1]));
    if (r % 3 == 0) { /* computed through: the communicator's thread runs them */
      const double until = now() + 20e-6;
      while (now() < until) {
      }
    }
    CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    const long want = (long)size * (size - 1) / 2 + (long)size * r;
    CHECK(out[0] == want && out[1] == size, "round %d: sum %ld (want %ld), count %ld", r, out[0],
          want, out[1]);
    CHECK(token == 1000 + r, "round %d: token %ld", r, token);
  }
  return NULL;
}

static void test_threads(void) {
  MPI_Comm comms[kThreads];
  pthread_t th[kThreads];
  for (int k = 0; k < kThreads; k++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]));
  for (int k = 0; k < kThreads; k++) {
    CHECK(pthread_create(&th[k], NULL, thread_rounds, &comms[k]) == 0, "pthread_create");
  }
  for (int k = 0; k < kThreads; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < kThreads; k++) CHECK_MPI(MPI_Comm_free(&comms[k]));
}

int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  test_each();
  test_outstanding_and_overlap();
  if (provided == MPI_THREAD_MULTIPLE) {
    test_threads();
  } else {
    test_note("threads part skipped: MPI_THREAD_MULTIPLE not provided");
  }
  test_done("icoll");
  return 0;
}
