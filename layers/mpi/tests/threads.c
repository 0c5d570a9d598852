/* threads: MPI_THREAD_MULTIPLE with 4 pthreads per rank.
 * (a) all threads on one communicator and one tag, receivers with
 *     MPI_ANY_SOURCE: every message arrives exactly once, and in order per
 *     sending thread as seen by each receiving thread (mixed sizes);
 * (b) per-thread tags: exact order; (c) per-thread communicators (dup'ed
 * before the threads start); (d) concurrent Isend/Irecv/Waitall all-to-all;
 * (e) one thread doing Barriers on its own communicator while the others
 * do point-to-point on another. Is_thread_main is false in the threads.
 * Skipped (exit 0) if MPI_THREAD_MULTIPLE is not provided. */
#include "mpi_check.h"

#include <pthread.h>

#define NT 4
#define NMSG 200
#define BIGLEN (64 * 1024)

static int rank, size, next, prev;
static MPI_Comm shared_comm, tcomm[NT], barrier_comm, p2p_comm;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int seen[NT][NMSG]; /* scenario (a): how often (thread, seq) arrived */

typedef struct {
  int rank, thread, seq;
} msg_t;

static size_t msg_len(int seq) {
  return seq % 50 == 7 ? BIGLEN : sizeof(msg_t);
}

static void *run_threads(void *(*fn)(void *)) {
  pthread_t th[NT];
  int ids[NT];
  for (int t = 0; t < NT; t++) {
    ids[t] = t;
    CHECK(pthread_create(&th[t], NULL, fn, &ids[t]) == 0, "pthread_create");
  }
  for (int t = 0; t < NT; t++) CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
  return NULL;
}

/* Sends NMSG messages {rank, t, seq} (some large) to dest with Isend. */
static void post_sends(MPI_Request *rq, char **bufs, int t, int dest, int tag, MPI_Comm comm) {
  for (int s = 0; s < NMSG; s++) {
    size_t n = msg_len(s);
    bufs[s] = malloc(n);
    memset(bufs[s], (t * 16 + s) & 0xff, n);
    msg_t m = {rank, t, s};
    memcpy(bufs[s], &m, sizeof m);
    CHECK_MPI(MPI_Isend(bufs[s], (int)n, MPI_BYTE, dest, tag, comm, &rq[s]));
  }
}

static void finish_sends(MPI_Request *rq, char **bufs) {
  CHECK_MPI(MPI_Waitall(NMSG, rq, MPI_STATUSES_IGNORE));
  for (int s = 0; s < NMSG; s++) free(bufs[s]);
}

static msg_t recv_one(char *buf, int src, int tag, MPI_Comm comm) {
  MPI_Status st;
  CHECK_MPI(MPI_Recv(buf, BIGLEN, MPI_BYTE, src, tag, comm, &st));
  msg_t m;
  memcpy(&m, buf, sizeof m);
  int cnt = -1;
  CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
  CHECK(m.thread >= 0 && m.thread < NT && m.seq >= 0 && m.seq < NMSG, "garbage message");
  CHECK(cnt == (int)msg_len(m.seq), "message (%d,%d) has %d bytes", m.thread, m.seq, cnt);
  CHECK(st.MPI_SOURCE == m.rank && st.MPI_TAG == tag, "status source %d tag %d for (%d,%d)",
        st.MPI_SOURCE, st.MPI_TAG, m.thread, m.seq);
  CHECK((unsigned char)buf[cnt - 1] == ((m.thread * 16 + m.seq) & 0xff) || cnt == sizeof m,
        "payload of (%d,%d)", m.thread, m.seq);
  return m;
}

/* (a) one comm, one tag, ANY_SOURCE. */
static void *same_tag(void *arg) {
  int t = *(int *)arg;
  int flag = 1;
  CHECK_MPI(MPI_Is_thread_main(&flag));
  CHECK(!flag, "Is_thread_main true in thread %d", t);
  MPI_Request rq[NMSG];
  char *bufs[NMSG];
  post_sends(rq, bufs, t, next, 7, shared_comm);
  char *buf = malloc(BIGLEN);
  int last[NT];
  for (int k = 0; k < NT; k++) last[k] = -1;
  for (int i = 0; i < NMSG; i++) {
    msg_t m = recv_one(buf, MPI_ANY_SOURCE, 7, shared_comm);
    CHECK(m.rank == prev, "message from rank %d", m.rank);
    CHECK(m.seq > last[m.thread], "thread %d received (%d,%d) after (%d,%d)", t, m.thread, m.seq,
          m.thread, last[m.thread]);
    last[m.thread] = m.seq;
    pthread_mutex_lock(&lock);
    seen[m.thread][m.seq]++;
    pthread_mutex_unlock(&lock);
  }
  free(buf);
  finish_sends(rq, bufs);
  return NULL;
}

/* (b) per-thread tags on one comm, (c) per-thread comms: exact order. */
static void ordered_stream(int t, int tag, MPI_Comm comm, int any_source) {
  MPI_Request rq[NMSG];
  char *bufs[NMSG];
  post_sends(rq, bufs, t, next, tag, comm);
  char *buf = malloc(BIGLEN);
  for (int i = 0; i < NMSG; i++) {
    msg_t m = recv_one(buf, any_source && i % 2 ? MPI_ANY_SOURCE : prev, tag, comm);
    CHECK(m.rank == prev && m.thread == t && m.seq == i,
          "thread %d expected (%d,%d,%d), got (%d,%d,%d)", t, prev, t, i, m.rank, m.thread, m.seq);
  }
  free(buf);
  finish_sends(rq, bufs);
}

static void *per_thread_tag(void *arg) {
  int t = *(int *)arg;
  ordered_stream(t, 100 + t, shared_comm, 1);
  return NULL;
}

static void *per_thread_comm(void *arg) {
  int t = *(int *)arg;
  ordered_stream(t, 0, tcomm[t], 1);
  return NULL;
}

/* (d) concurrent all-to-all exchanges with Isend/Irecv/Waitall. */
static void *alltoall_nb(void *arg) {
  int t = *(int *)arg;
  int *sb = malloc(size * sizeof *sb), *rb = malloc(size * sizeof *rb);
  MPI_Request *rq = malloc(2 * size * sizeof *rq);
  MPI_Status *st = malloc(2 * size * sizeof *st);
  for (int it = 0; it < 20; it++) {
    for (int j = 0; j < size; j++) {
      rb[j] = -1;
      CHECK_MPI(MPI_Irecv(&rb[j], 1, MPI_INT, j, 200 + t, shared_comm, &rq[j]));
    }
    for (int j = 0; j < size; j++) {
      sb[j] = ((it * NT + t) * 64 + rank) * 64 + j;
      CHECK_MPI(MPI_Isend(&sb[j], 1, MPI_INT, j, 200 + t, shared_comm, &rq[size + j]));
    }
    CHECK_MPI(MPI_Waitall(2 * size, rq, st));
    for (int j = 0; j < size; j++)
      CHECK(rb[j] == ((it * NT + t) * 64 + j) * 64 + rank && st[j].MPI_SOURCE == j,
            "thread %d iteration %d: from %d got %d", t, it, j, rb[j]);
  }
  free(sb);
  free(rb);
  free(rq);
  free(st);
  return NULL;
}

/* (e) thread 0: Barriers on barrier_comm; others: ring p2p on p2p_comm. */
static void *barrier_and_p2p(void *arg) {
  int t = *(int *)arg;
  if (t == 0) {
    for (int i = 0; i < 50; i++) CHECK_MPI(MPI_Barrier(barrier_comm));
    int one = 1, sum = 0;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, barrier_comm));
    CHECK(sum == size, "Allreduce in the barrier thread: %d", sum);
    return NULL;
  }
  for (int i = 0; i < 100; i++) {
    int x = (rank * NT + t) * 1000 + i, y = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, next, t, &y, 1, MPI_INT, prev, t, p2p_comm, &st));
    CHECK(y == (prev * NT + t) * 1000 + i, "thread %d Sendrecv %d got %d", t, i, y);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = -1;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  rank = world_rank();
  size = world_size();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      printf("threads: skipped (MPI_THREAD_MULTIPLE not provided, got %d)\n", provided);
    MPI_Finalize();
    return 0;
  }
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &shared_comm));
  for (int t = 0; t < NT; t++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &barrier_comm));
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm));

  run_threads(same_tag);
  for (int t = 0; t < NT; t++)
    for (int s = 0; s < NMSG; s++)
      CHECK(seen[t][s] == 1, "message (%d,%d) arrived %d times", t, s, seen[t][s]);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  run_threads(per_thread_tag);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  run_threads(per_thread_comm);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  run_threads(alltoall_nb);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  run_threads(barrier_and_p2p);

  int flag = 0;
  CHECK_MPI(MPI_Is_thread_main(&flag));
  CHECK(flag, "Is_thread_main false in the main thread");
  for (int t = 0; t < NT; t++) CHECK_MPI(MPI_Comm_free(&tcomm[t]));
  CHECK_MPI(MPI_Comm_free(&barrier_comm));
  CHECK_MPI(MPI_Comm_free(&p2p_comm));
  CHECK_MPI(MPI_Comm_free(&shared_comm));
  test_done("threads");
  return 0;
}
