/* pt2pt.c - point-to-point benchmarks of mpi_bench, after the OSU
 * micro-benchmarks (see main.c for how to run them):
 *
 *   latency  osu_latency: rank 0 MPI_Send + MPI_Recv, rank 1 MPI_Recv +
 *            MPI_Send, each rank receiving into a buffer it does not send
 *            from (one buffer for both made Open MPI and MPICH up to 2x
 *            slower at 64 KiB-1 MiB in some runs, against OSU's figures);
 *            one-way = round trip / 2, in us. 2 ranks.
 *            Sizes 1 B..16 MiB, powers of 4, and 8 B (the size the
 *            latency goal names).
 *   bw       osu_bw: rank 0 posts a window of MPI_Isend of one buffer,
 *            MPI_Waitall, then waits for a 4-byte ack; rank 1 posts the
 *            window of MPI_Irecv (distinct buffers), MPI_Waitall, acks.
 *            GB/s = 1e9 B/s. 2 ranks. Sizes 4 KiB..16 MiB, powers of 4.
 *   bibw     osu_bibw: both ranks post a window of MPI_Irecv and one of
 *            MPI_Isend at once, MPI_Waitall; bytes of both directions per
 *            second. 2 ranks. The sizes of bw.
 *   mbw_mr   osu_mbw_mr: ranks 0..P-1 each stream to rank P..2P-1 as in
 *            bw, all pairs at once; aggregate GB/s (row mbw_mr) and
 *            million messages per second (row mbw_mr_rate), the threads
 *            column holding P. 2P ranks (2 or 4 in rocl-bench mpi).
 *
 * The window shrinks for big messages (window_for: 8 of 16 MiB). Each run
 * stamps its messages with a mark of its own (first/middle/last byte) and
 * the receivers check it after the run; the ack carries it too. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

enum { kTagData = 1, kTagAck = 2 };

static const size_t kLatencySizes[] = {1,         4,       8,       16,       64,
                                       256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                                       256 << 10, 1 << 20, 4 << 20, 16 << 20};
static const size_t kBandwidthSizes[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                         1 << 20, 4 << 20,  16 << 20};
static const size_t kMbwSizes[] = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20};
static const size_t kQuickLatency[] = {8, 64 << 10};
static const size_t kQuickBandwidth[] = {64 << 10};
static const size_t kQuickMbw[] = {8, 64 << 10};
#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* Latency runs move at most this many bytes, however small the message,
 * and at most this many round trips (rocl-bench's limits). */
#define MAX_LATENCY_VOLUME (64.0 * 1024 * 1024 * 1024)
#define MAX_ROUND_TRIPS 5000000L

/* ---- latency ------------------------------------------------------------- */

struct pingpong {
  char *sendbuf, *recvbuf;
  size_t size;
};

static double latency_run(struct point *p, long n) {
  struct pingpong *c = p->ctx;
  const unsigned char mark = mark_of(p->runs, 0);
  const int size = (int)c->size;
  stamp(c->recvbuf, c->size, 0);
  if (g_rank == 1) { /* answers from a buffer of its own, marked alike */
    stamp(c->sendbuf, c->size, mark);
    for (long i = 0; i < n; ++i) {
      CHECK(MPI_Recv(c->recvbuf, size, MPI_CHAR, 0, kTagData, g_comm, MPI_STATUS_IGNORE));
      CHECK(MPI_Send(c->sendbuf, size, MPI_CHAR, 0, kTagData, g_comm));
    }
    expect_mark(c->recvbuf, c->size, mark, "latency: rank 1 received");
    return 0;
  }
  stamp(c->sendbuf, c->size, mark);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) {
    CHECK(MPI_Send(c->sendbuf, size, MPI_CHAR, 1, kTagData, g_comm));
    CHECK(MPI_Recv(c->recvbuf, size, MPI_CHAR, 1, kTagData, g_comm, MPI_STATUS_IGNORE));
  }
  const double seconds = MPI_Wtime() - t0;
  expect_mark(c->recvbuf, c->size, mark, "latency: rank 0 received the echo");
  return seconds;
}

static long latency_most(size_t size) {
  long most = (long)(MAX_LATENCY_VOLUME / (double)size);
  if (most < 1000) most = 1000;
  return most < MAX_ROUND_TRIPS ? most : MAX_ROUND_TRIPS;
}

void bench_latency(const struct options *o) {
  require_ranks("latency", 2, 0);
  const size_t *sizes;
  const int nsizes = size_list(o, kLatencySizes, COUNT(kLatencySizes), kQuickLatency,
                               COUNT(kQuickLatency), &sizes);
  for (int s = 0; s < nsizes; ++s) {
    struct pingpong c = {xmalloc(sizes[s]), xmalloc(sizes[s]), sizes[s]};
    memset(c.sendbuf, 3, c.size); /* touch the pages before timing */
    memset(c.recvbuf, 0, c.size);
    struct point p = {
        "latency",   c.size, 1, "us", kTimePerIteration, 1e6 / 2, latency_most(c.size),
        latency_run, &c,     0};
    measure_and_print(o, &p);
    free(c.sendbuf);
    free(c.recvbuf);
  }
}

/* ---- windows of messages: bw, bibw, mbw_mr ----------------------------------- */

struct stream {
  size_t size;
  int window;
  int pairs;     /* senders are ranks 0..pairs-1, receivers pairs..2*pairs-1 */
  char *sendbuf; /* one buffer, sent `window` times (as osu_bw) */
  char **recvbufs;
  MPI_Request *reqs; /* 2 * window: bibw sends and receives at once */
};

static void stream_open(struct stream *s, size_t size, int window, int pairs) {
  s->size = size;
  s->window = window_for(size, window);
  s->pairs = pairs;
  s->sendbuf = xmalloc(size);
  memset(s->sendbuf, 4, size);
  s->recvbufs = xmalloc((size_t)s->window * sizeof *s->recvbufs);
  for (int k = 0; k < s->window; ++k) {
    s->recvbufs[k] = xmalloc(size);
    memset(s->recvbufs[k], 0, size);
  }
  s->reqs = xmalloc(2 * (size_t)s->window * sizeof *s->reqs);
}

static void stream_close(struct stream *s) {
  for (int k = 0; k < s->window; ++k) free(s->recvbufs[k]);
  free(s->recvbufs);
  free(s->sendbuf);
  free(s->reqs);
}

static void post_sends(struct stream *s, int peer, MPI_Request *reqs) {
  for (int k = 0; k < s->window; ++k) {
    CHECK(MPI_Isend(s->sendbuf, (int)s->size, MPI_CHAR, peer, kTagData, g_comm, &reqs[k]));
  }
}

static void post_receives(struct stream *s, int peer, MPI_Request *reqs) {
  for (int k = 0; k < s->window; ++k) {
    CHECK(MPI_Irecv(s->recvbufs[k], (int)s->size, MPI_CHAR, peer, kTagData, g_comm, &reqs[k]));
  }
}

static void clear_receives(struct stream *s) {
  for (int k = 0; k < s->window; ++k) stamp(s->recvbufs[k], s->size, 0);
}

static void expect_receives(struct stream *s, unsigned char mark, const char *what) {
  for (int k = 0; k < s->window; ++k) expect_mark(s->recvbufs[k], s->size, mark, what);
}

/* One direction, as osu_bw / osu_mbw_mr: window, Waitall, 4-byte ack. */
static double stream_run(struct point *p, long n) {
  struct stream *s = p->ctx;
  const int sender = g_rank < s->pairs;
  const int peer = sender ? g_rank + s->pairs : g_rank - s->pairs;
  /* the pair's number in the mark: a message that reaches the wrong pair shows */
  const unsigned char mark = mark_of(p->runs, g_rank % s->pairs);
  int ack = 0;
  if (!sender) {
    clear_receives(s);
    for (long i = 0; i < n; ++i) {
      post_receives(s, peer, s->reqs);
      wait_all(s->window, s->reqs);
      ack = mark;
      CHECK(MPI_Send(&ack, 1, MPI_INT, peer, kTagAck, g_comm));
    }
    expect_receives(s, mark, p->bench);
    return 0;
  }
  stamp(s->sendbuf, s->size, mark);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) {
    post_sends(s, peer, s->reqs);
    wait_all(s->window, s->reqs);
    CHECK(MPI_Recv(&ack, 1, MPI_INT, peer, kTagAck, g_comm, MPI_STATUS_IGNORE));
  }
  const double seconds = MPI_Wtime() - t0;
  if (ack != mark) die("%s: WRONG ACK %d, expected %d", p->bench, ack, mark);
  return seconds;
}

/* Both directions at once, as osu_bibw: no ack, the receives pace it. */
static double bidirectional_run(struct point *p, long n) {
  struct stream *s = p->ctx;
  const int peer = 1 - g_rank;
  const unsigned char mine = mark_of(p->runs, g_rank), theirs = mark_of(p->runs, peer);
  clear_receives(s);
  stamp(s->sendbuf, s->size, mine);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) {
    post_receives(s, peer, s->reqs);
    post_sends(s, peer, s->reqs + s->window);
    wait_all(2 * s->window, s->reqs);
  }
  const double seconds = MPI_Wtime() - t0;
  expect_receives(s, theirs, "bibw");
  return seconds;
}

static void bench_streams(const struct options *o, const char *bench, int pairs, int both_ways,
                          const size_t *sizes, int nsizes) {
  for (int i = 0; i < nsizes; ++i) {
    struct stream s;
    stream_open(&s, sizes[i], o->window, pairs);
    const double messages_per_iteration = (double)s.window * pairs * (both_ways ? 2 : 1);
    struct point p = {bench,
                      s.size,
                      pairs,
                      "GB/s",
                      kAmountPerSecond,
                      messages_per_iteration * (double)s.size / 1e9,
                      1L << 30,
                      both_ways ? bidirectional_run : stream_run,
                      &s,
                      0};
    const struct stats gbps = measure(o, &p);
    print_row(bench, s.size, both_ways ? 1 : pairs, gbps, "GB/s");
    if (strcmp(bench, "mbw_mr") == 0) {            /* the message rate of the same runs */
      const double to_rate = 1e3 / (double)s.size; /* GB/s -> million messages/s */
      struct stats rate = {gbps.median * to_rate, gbps.min * to_rate, gbps.max * to_rate};
      print_row("mbw_mr_rate", s.size, pairs, rate, "Mmsg/s");
    }
    stream_close(&s);
  }
}

void bench_bw(const struct options *o) {
  require_ranks("bw", 2, 0);
  const size_t *sizes;
  int n = size_list(o, kBandwidthSizes, COUNT(kBandwidthSizes), kQuickBandwidth,
                    COUNT(kQuickBandwidth), &sizes);
  bench_streams(o, "bw", 1, 0, sizes, n);
}

void bench_bibw(const struct options *o) {
  require_ranks("bibw", 2, 0);
  const size_t *sizes;
  int n = size_list(o, kBandwidthSizes, COUNT(kBandwidthSizes), kQuickBandwidth,
                    COUNT(kQuickBandwidth), &sizes);
  bench_streams(o, "bibw", 1, 1, sizes, n);
}

void bench_mbw_mr(const struct options *o) {
  require_ranks("mbw_mr", 0, 2);
  const size_t *sizes;
  int n = size_list(o, kMbwSizes, COUNT(kMbwSizes), kQuickMbw, COUNT(kQuickMbw), &sizes);
  bench_streams(o, "mbw_mr", g_size / 2, 0, sizes, n);
}
