/* mprobe: matched probes.
 * Mprobe/Mrecv of messages of three sizes with wildcards (the count known
 * before the receive), a non-contiguous receive type, Improbe with nothing
 * there (flag 0) and with a message (then Imrecv and Wait), an Ssend that
 * completes once its message is probed and received, MPI_PROC_NULL
 * (MPI_MESSAGE_NO_PROC), truncation, and under MPI_THREAD_MULTIPLE 4
 * threads taking a stream of 400 messages with Mprobe(ANY_SOURCE,
 * ANY_TAG) + Mrecv: each exactly once. */
#include "mpi_check.h"

#include <pthread.h>

static int rank, size, next, prev;

static void test_sizes(void) {
  const int counts[3] = {1, 1000, 100000};
  int *out = malloc(100000 * sizeof *out);
  MPI_Request sreq[3];
  int *sent[3];
  for (int k = 0; k < 3; k++) {
    sent[k] = malloc((size_t)counts[k] * sizeof *sent[k]);
    for (int i = 0; i < counts[k]; i++) sent[k][i] = rank * 7 + k + i;
    CHECK_MPI(MPI_Isend(sent[k], counts[k], MPI_INT, next, 10 + k, MPI_COMM_WORLD, &sreq[k]));
  }
  for (int got = 0; got < 3; got++) {
    MPI_Message m;
    MPI_Status st;
    CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st));
    CHECK(m != MPI_MESSAGE_NULL, "Mprobe gave no message");
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG >= 10 && st.MPI_TAG <= 12, "source %d tag %d",
          st.MPI_SOURCE, st.MPI_TAG);
    int n = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    const int k = st.MPI_TAG - 10;
    CHECK(n == counts[k], "count %d for tag %d", n, st.MPI_TAG);
    MPI_Status rs;
    CHECK_MPI(MPI_Mrecv(out, n, MPI_INT, &m, &rs));
    CHECK(m == MPI_MESSAGE_NULL, "Mrecv leaves MPI_MESSAGE_NULL");
    CHECK(rs.MPI_SOURCE == prev && rs.MPI_TAG == st.MPI_TAG, "Mrecv status");
    for (int i = 0; i < n; i += 997) CHECK(out[i] == prev * 7 + k + i, "element %d", i);
  }
  CHECK_MPI(MPI_Waitall(3, sreq, MPI_STATUSES_IGNORE));
  for (int k = 0; k < 3; k++) free(sent[k]);
  free(out);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_improbe_vector_ssend(void) {
  int flag = 1;
  MPI_Message m = MPI_MESSAGE_NULL;
  CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE));
  CHECK(!flag, "Improbe found a message nobody sent");
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  /* Every other int of 8, received through a vector type. */
  int data[4] = {rank, rank + 1, rank + 2, rank + 3};
  MPI_Request s;
  CHECK_MPI(MPI_Issend(data, 4, MPI_INT, next, 20, MPI_COMM_WORLD, &s));
  MPI_Status st;
  do {
    CHECK_MPI(MPI_Improbe(prev, 20, MPI_COMM_WORLD, &flag, &m, &st));
  } while (!flag);
  MPI_Datatype every_other;
  CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
  CHECK_MPI(MPI_Type_commit(&every_other));
  int wide[8];
  for (int i = 0; i < 8; i++) wide[i] = -1;
  MPI_Request r;
  CHECK_MPI(MPI_Imrecv(wide, 1, every_other, &m, &r));
  CHECK(m == MPI_MESSAGE_NULL, "Imrecv leaves MPI_MESSAGE_NULL");
  CHECK_MPI(MPI_Wait(&r, &st));
  CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 20, "Imrecv status");
  for (int i = 0; i < 8; i++)
    CHECK(wide[i] == (i % 2 == 0 ? prev + i / 2 : -1), "strided element %d = %d", i, wide[i]);
  CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE)); /* the synchronous send completed */
  CHECK_MPI(MPI_Type_free(&every_other));

  /* MPI_PROC_NULL. */
  CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
  CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) is MPI_MESSAGE_NO_PROC");
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL status");
  int x = 5;
  CHECK_MPI(MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
  CHECK(m == MPI_MESSAGE_NULL && x == 5 && st.MPI_SOURCE == MPI_PROC_NULL, "Mrecv of NO_PROC");

  /* Truncation: the message is consumed, the error says so. */
  int two[2] = {1, 2};
  CHECK_MPI(MPI_Send(two, 2, MPI_INT, next, 21, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Mprobe(prev, 21, MPI_COMM_WORLD, &m, &st));
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int one = 0, cls = -1;
  MPI_Error_class(MPI_Mrecv(&one, 1, MPI_INT, &m, &st), &cls);
  CHECK(cls == MPI_ERR_TRUNCATE, "truncated Mrecv: class %d", cls);
  (void)one;
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

enum { kThreads = 4, kStream = 400 };
static int g_seen[kStream];
static pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void *taker(void *arg) {
  (void)arg;
  for (int i = 0; i < kStream / kThreads; i++) {
    MPI_Message m;
    MPI_Status st;
    CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st));
    int n = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    int buf[64];
    CHECK(n >= 1 && n <= 64, "stream message of %d ints", n);
    CHECK_MPI(MPI_Mrecv(buf, n, MPI_INT, &m, MPI_STATUS_IGNORE));
    CHECK(buf[0] >= 0 && buf[0] < kStream && n == 1 + buf[0] % 64 && buf[n - 1] == buf[0],
          "stream message %d of %d ints", buf[0], n);
    pthread_mutex_lock(&g_seen_lock);
    g_seen[buf[0]]++;
    pthread_mutex_unlock(&g_seen_lock);
  }
  return NULL;
}

static void test_threads(void) {
  int provided = 0;
  CHECK_MPI(MPI_Query_thread(&provided));
  if (provided < MPI_THREAD_MULTIPLE) {
    test_note("mprobe: the threads part needs MPI_THREAD_MULTIPLE");
    return;
  }
#ifdef REF_BUG_MPROBE_THREADS_SELF
  if (size == 1) {
    test_note("mprobe: the threads part skipped (this MPI hangs there with one process)");
    return;
  }
#endif
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; i++) CHECK(pthread_create(&t[i], NULL, taker, NULL) == 0, "thread");
  static int msgs[kStream][64];
  static MPI_Request reqs[kStream];
  for (int i = 0; i < kStream; i++) {
    const int n = 1 + i % 64;
    for (int k = 0; k < n; k++) msgs[i][k] = i;
    CHECK_MPI(MPI_Isend(msgs[i], n, MPI_INT, next, 30 + i % 3, MPI_COMM_WORLD, &reqs[i]));
  }
  CHECK_MPI(MPI_Waitall(kStream, reqs, MPI_STATUSES_IGNORE));
  for (int i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < kStream; i++)
    CHECK(g_seen[i] == 1, "message %d taken %d times", i, g_seen[i]);
}

int main(int argc, char **argv) {
  int provided = 0;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  test_sizes();
  test_improbe_vector_ssend();
  test_threads();
  test_done("mprobe");
  return 0;
}
