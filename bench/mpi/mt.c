/* mt.c - multithreaded benchmarks of mpi_bench (MPI_THREAD_MULTIPLE):
 * T threads per rank (--threads 1,2,4,8), 2 ranks, thread i of rank 0
 * talking to thread i of rank 1 only, all pairs at once. See main.c for
 * how to run them.
 *
 *   mt_latency  8-byte ping-pong per thread pair (rank 0 sends, rank 1
 *               echoes); the mean over the pairs of their one-way time
 *               (round trip / 2), in us.
 *   mt_rate     each sender thread of rank 0 posts a window (--window, 64)
 *               of 8-byte MPI_Isend, MPI_Waitall, then waits for a 4-byte
 *               ack from its receiver thread, which posts the window of
 *               MPI_Irecv, MPI_Waitall and acks; the messages per second of
 *               all pairs together, in millions (Mmsg/s), over the wall
 *               time of the slowest pair.
 *   mt_mprobe_rate  mt_rate whose receiver threads take each message with
 *               MPI_Mprobe + MPI_Mrecv (the thread-safe probe) instead of
 *               a window of MPI_Irecv.
 *
 * --mt-mode tag (default): every thread on the same communicator, each
 * pair with a tag of its own; --mt-mode comm: each pair on a communicator
 * of its own (MPI_Comm_dup, made before the threads start), same tag. The
 * rows are named mt_latency / mt_rate, or mt_latency_comm / mt_rate_comm.
 *
 * A run stops early at a deadline (5 x --time): with more threads than
 * cpus (2 ranks x 8 threads on this 2-cpu VM) the cost of an iteration
 * swings between microseconds and scheduler time slices (milliseconds),
 * so a count calibrated in a fast spell can last minutes. The sender
 * threads decide and say so in the messages' control byte; the figure
 * counts the iterations actually made.
 *
 * The threads live as long as a point: between runs they wait on a
 * pthread barrier while the main thread (which is thread 0) does the
 * measuring loop's collectives. Every message carries a mark of its run
 * and its thread, so a message delivered to the wrong thread fails. */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t under -std=c11 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMessageSize = 8, kTagLane0 = 100 };
/* The byte of a message that says whether the receiver should go on: not
 * one of the bytes stamp() marks (first, middle, last of 8). */
enum { kControlByte = 1, kGoOn = 'g', kStop = 's' };
#define DEADLINE_IN_TARGETS 5
#define MAX_ROUND_TRIPS 5000000L

struct pool;

/* One thread's end of a thread pair. */
struct lane {
  struct pool *pool;
  int index;
  MPI_Comm comm;
  int tag;
  char message[kMessageSize], echo[kMessageSize];
  char (*inbox)[kMessageSize]; /* mt_rate: the window's receive buffers */
  MPI_Request *reqs;
  double seconds;  /* of its last run */
  long iterations; /* made in its last run (a deadline may stop it early) */
  pthread_t thread;
};

struct pool {
  int threads, window, comm_per_lane;
  int probed;       /* mt_mprobe_rate: receivers use matched probes */
  double run_limit; /* seconds: a sender stops its run after this long */
  void (*body)(struct lane *lane, long n, unsigned run);
  long n;       /* the current run's iterations, ...  */
  unsigned run; /* ... number ... */
  double t0;    /* ... and start (MPI_Wtime), set before `start` */
  int quit;
  pthread_barrier_t start, done;
  struct lane *lanes;
};

static void barrier_wait(pthread_barrier_t *b) {
  int rc = pthread_barrier_wait(b);
  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) die("pthread_barrier_wait failed");
}

static void *worker_main(void *arg) {
  struct lane *lane = arg;
  struct pool *pool = lane->pool;
  for (;;) {
    barrier_wait(&pool->start);
    if (pool->quit) return NULL;
    pool->body(lane, pool->n, pool->run);
    barrier_wait(&pool->done);
  }
}

static void require_thread_multiple(void) {
  int level = MPI_THREAD_SINGLE;
  CHECK(MPI_Query_thread(&level));
  if (level != MPI_THREAD_MULTIPLE) {
    die("the multithreaded benchmarks need MPI_THREAD_MULTIPLE; this MPI granted level %d "
        "(MPI_THREAD_MULTIPLE is %d)",
        level, MPI_THREAD_MULTIPLE);
  }
}

/* The communicators are duplicated here, by the main thread, before any
 * worker starts: MPI_Comm_dup is collective and its order must match. */
static void pool_open(struct pool *pool, const struct options *o, int threads,
                      void (*body)(struct lane *, long, unsigned)) {
  memset(pool, 0, sizeof *pool);
  pool->threads = threads;
  pool->window = o->window;
  pool->comm_per_lane = o->per_thread_comm;
  pool->run_limit = DEADLINE_IN_TARGETS * o->seconds;
  pool->body = body;
  pool->lanes = xmalloc((size_t)threads * sizeof *pool->lanes);
  for (int i = 0; i < threads; ++i) {
    struct lane *lane = &pool->lanes[i];
    memset(lane, 0, sizeof *lane);
    lane->pool = pool;
    lane->index = i;
    lane->comm = g_comm;
    lane->tag = pool->comm_per_lane ? kTagLane0 : kTagLane0 + i;
    if (pool->comm_per_lane) CHECK(MPI_Comm_dup(g_comm, &lane->comm));
    lane->inbox = xmalloc((size_t)pool->window * sizeof *lane->inbox);
    memset(lane->inbox, 0, (size_t)pool->window * sizeof *lane->inbox);
    lane->reqs = xmalloc((size_t)pool->window * sizeof *lane->reqs);
  }
  if (pthread_barrier_init(&pool->start, NULL, (unsigned)threads) != 0 ||
      pthread_barrier_init(&pool->done, NULL, (unsigned)threads) != 0) {
    die("pthread_barrier_init failed");
  }
  for (int i = 1; i < threads; ++i) {
    if (pthread_create(&pool->lanes[i].thread, NULL, worker_main, &pool->lanes[i]) != 0) {
      die("cannot start thread %d of %d", i, threads);
    }
  }
}

static void pool_close(struct pool *pool) {
  pool->quit = 1;
  barrier_wait(&pool->start);
  for (int i = 1; i < pool->threads; ++i) pthread_join(pool->lanes[i].thread, NULL);
  pthread_barrier_destroy(&pool->start);
  pthread_barrier_destroy(&pool->done);
  for (int i = 0; i < pool->threads; ++i) {
    struct lane *lane = &pool->lanes[i];
    if (pool->comm_per_lane) CHECK(MPI_Comm_free(&lane->comm));
    free(lane->inbox);
    free(lane->reqs);
  }
  free(pool->lanes);
}

/* Every thread runs the body once; returns the wall seconds of the lot. */
static double pool_run(struct pool *pool, long n, unsigned run) {
  pool->n = n;
  pool->run = run;
  pool->t0 = MPI_Wtime();
  barrier_wait(&pool->start);
  pool->body(&pool->lanes[0], n, run);
  barrier_wait(&pool->done);
  return MPI_Wtime() - pool->t0;
}

/* A sender's verdict before iteration i of n: is it the last one? The
 * clock is read every 8 iterations only. */
static int last_iteration(long i, long n, double deadline) {
  return i + 1 == n || (i % 8 == 7 && MPI_Wtime() > deadline);
}

/* ---- mt_latency ---------------------------------------------------------------- */

static void pingpong_body(struct lane *lane, long n, unsigned run) {
  const unsigned char mark = mark_of(run, lane->index);
  const int peer = 1 - g_rank;
  stamp(lane->echo, kMessageSize, 0);
  if (g_rank == 1) {
    for (long i = 0; i < n; ++i) {
      CHECK(MPI_Recv(lane->echo, kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm,
                     MPI_STATUS_IGNORE));
      CHECK(MPI_Send(lane->echo, kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm));
      if (lane->echo[kControlByte] == kStop) break;
    }
    expect_mark(lane->echo, kMessageSize, mark, "mt_latency: a rank 1 thread received");
    return;
  }
  stamp(lane->message, kMessageSize, mark);
  /* From the common start, not the thread's own: a thread that waits for
   * a cpu before its first message is slower, not exempt. */
  const double t0 = lane->pool->t0, deadline = t0 + lane->pool->run_limit;
  long i = 0;
  for (int last = 0; !last; ++i) {
    last = last_iteration(i, n, deadline);
    lane->message[kControlByte] = last ? kStop : kGoOn;
    CHECK(MPI_Send(lane->message, kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm));
    CHECK(MPI_Recv(lane->echo, kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm,
                   MPI_STATUS_IGNORE));
  }
  lane->seconds = MPI_Wtime() - t0;
  lane->iterations = i;
  expect_mark(lane->echo, kMessageSize, mark, "mt_latency: a rank 0 thread received the echo");
}

/* Rank 0's mean over its threads of the seconds n round trips took at
 * that thread's pace: the figure is the mean one-way latency of a pair. */
static double mt_latency_run(struct point *p, long n) {
  struct pool *pool = p->ctx;
  pool_run(pool, n, p->runs);
  if (g_rank != 0) return 0;
  double sum = 0;
  for (int i = 0; i < pool->threads; ++i) {
    const struct lane *lane = &pool->lanes[i];
    sum += lane->seconds / (double)lane->iterations * (double)n;
  }
  return sum / pool->threads;
}

/* ---- mt_rate ------------------------------------------------------------------- */

/* The receiving side of a window: posted receives, or matched probes. */
static void receive_window(struct lane *lane, int peer, int window, int probed) {
  for (int k = 0; k < window; ++k) {
    if (probed) {
      MPI_Message m;
      CHECK(MPI_Mprobe(peer, lane->tag, lane->comm, &m, MPI_STATUS_IGNORE));
      CHECK(MPI_Mrecv(lane->inbox[k], kMessageSize, MPI_CHAR, &m, MPI_STATUS_IGNORE));
    } else {
      CHECK(MPI_Irecv(lane->inbox[k], kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm,
                      &lane->reqs[k]));
    }
  }
  if (!probed) wait_all(window, lane->reqs);
}

static void window_body(struct lane *lane, long n, unsigned run) {
  const unsigned char mark = mark_of(run, lane->index);
  const int peer = 1 - g_rank, window = lane->pool->window;
  int ack = 0;
  if (g_rank == 1) {
    for (int k = 0; k < window; ++k) stamp(lane->inbox[k], kMessageSize, 0);
    for (long i = 0; i < n; ++i) {
      receive_window(lane, peer, window, lane->pool->probed);
      ack = mark;
      CHECK(MPI_Send(&ack, 1, MPI_INT, peer, lane->tag, lane->comm));
      if (lane->inbox[0][kControlByte] == kStop) break;
    }
    for (int k = 0; k < window; ++k) {
      expect_mark(lane->inbox[k], kMessageSize, mark, "mt_rate: a rank 1 thread received");
    }
    return;
  }
  stamp(lane->message, kMessageSize, mark);
  const double deadline = lane->pool->t0 + lane->pool->run_limit;
  long i = 0;
  for (int last = 0; !last; ++i) {
    last = last_iteration(i, n, deadline);
    lane->message[kControlByte] = last ? kStop : kGoOn; /* no send in flight now */
    for (int k = 0; k < window; ++k) {
      CHECK(MPI_Isend(lane->message, kMessageSize, MPI_CHAR, peer, lane->tag, lane->comm,
                      &lane->reqs[k]));
    }
    wait_all(window, lane->reqs);
    CHECK(MPI_Recv(&ack, 1, MPI_INT, peer, lane->tag, lane->comm, MPI_STATUS_IGNORE));
  }
  lane->iterations = i;
  if (ack != mark) die("mt_rate: WRONG ACK %d on thread %d, expected %d", ack, lane->index, mark);
}

/* Rank 0's wall seconds, scaled to n windows per thread: the figure is
 * then all the messages the pairs sent over the wall time. */
static double mt_rate_run(struct point *p, long n) {
  struct pool *pool = p->ctx;
  const double seconds = pool_run(pool, n, p->runs);
  if (g_rank != 0) return 0;
  double windows = 0;
  for (int i = 0; i < pool->threads; ++i) windows += (double)pool->lanes[i].iterations;
  return seconds * (double)n * pool->threads / windows;
}

/* ---- the benchmarks ---------------------------------------------------------------- */

static void bench_threads(const struct options *o, const char *bench, const char *unit,
                          enum figure_kind kind, long most, double (*run)(struct point *, long),
                          void (*body)(struct lane *, long, unsigned), int probed) {
  require_ranks(bench, 2, 0);
  require_thread_multiple();
  char name[64];
  snprintf(name, sizeof name, "%s%s", bench, o->per_thread_comm ? "_comm" : "");
  for (int t = 0; t < o->nthreads; ++t) {
    const int threads = o->threads[t];
    if (threads < 1) die("%s: %d threads?", bench, threads);
    struct pool pool;
    pool_open(&pool, o, threads, body);
    pool.probed = probed;
    /* latency: us one-way from round-trip seconds; rate: million messages */
    const double scale = kind == kTimePerIteration ? 1e6 / 2 : (double)o->window * threads / 1e6;
    struct point p = {name, kMessageSize, threads, unit, kind, scale, most, run, &pool, 0};
    measure_and_print(o, &p);
    pool_close(&pool);
  }
}

void bench_mt_latency(const struct options *o) {
  bench_threads(o, "mt_latency", "us", kTimePerIteration, MAX_ROUND_TRIPS, mt_latency_run,
                pingpong_body, 0);
}

void bench_mt_rate(const struct options *o) {
  bench_threads(o, "mt_rate", "Mmsg/s", kAmountPerSecond, 1L << 30, mt_rate_run, window_body, 0);
}

void bench_mt_mprobe_rate(const struct options *o) {
  bench_threads(o, "mt_mprobe_rate", "Mmsg/s", kAmountPerSecond, 1L << 30, mt_rate_run, window_body,
                1);
}
