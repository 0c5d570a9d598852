/* rma.c - one-sided benchmarks of mpi_bench, after the OSU one-sided
 * micro-benchmarks with their defaults (window made by MPI_Win_allocate,
 * passive target, synchronised with MPI_Win_flush; see main.c for how to
 * run them). 2 ranks; rank 0 is the origin, rank 1 the target, which only
 * waits in the measuring loop's own collectives.
 *
 *   put_latency  osu_put_latency: lock(shared, 1); n x (MPI_Put + flush);
 *                unlock. us per put. Sizes 1 B..1 MiB, powers of 4, and 8 B.
 *   get_latency  osu_get_latency: the same with MPI_Get.
 *   acc_latency  osu_acc_latency: MPI_Accumulate (MPI_SUM of ints) + flush.
 *   fop_latency  osu_fop_latency: MPI_Fetch_and_op (SUM, one long) + flush.
 *   cas_latency  osu_cas_latency: MPI_Compare_and_swap (one long) + flush.
 *   put_bw       osu_put_bw: a window of puts to distinct offsets, then a
 *                flush; GB/s. Sizes 4 KiB..4 MiB, powers of 4.
 *   get_bw       osu_get_bw: the same with MPI_Get.
 *
 * Data are checked after each run: the target's window holds the last
 * put's mark (read back with MPI_Get), gets return the target's mark. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static const size_t kLatencySizes[] = {1,       4,       8,        16,       64,        256,
                                       1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20};
static const size_t kBandwidthSizes[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};
static const size_t kQuickLatency[] = {8, 64 << 10};
static const size_t kQuickBandwidth[] = {64 << 10};
#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))
#define MAX_OPS 2000000L

enum rma_kind { kPut, kGet, kAcc, kFop, kCas };

struct rma {
  enum rma_kind kind;
  size_t size;
  int window; /* operations between flushes (1 for latency) */
  MPI_Win win;
  char *target; /* the window's memory (rank 1's is the one used) */
  char *local;  /* origin buffer */
  char *result;
};

static void one_op(struct rma *c, int k) {
  const MPI_Aint disp = (MPI_Aint)((size_t)k * c->size);
  const int n = (int)c->size;
  switch (c->kind) {
    case kPut:
      CHECK(MPI_Put(c->local, n, MPI_CHAR, 1, disp, n, MPI_CHAR, c->win));
      break;
    case kGet:
      CHECK(MPI_Get(c->local, n, MPI_CHAR, 1, disp, n, MPI_CHAR, c->win));
      break;
    case kAcc:
      CHECK(MPI_Accumulate(c->local, n / 4, MPI_INT, 1, disp, n / 4, MPI_INT, MPI_SUM, c->win));
      break;
    case kFop:
      CHECK(MPI_Fetch_and_op(c->local, c->result, MPI_LONG, 1, 0, MPI_SUM, c->win));
      break;
    case kCas:
      CHECK(MPI_Compare_and_swap(c->local, c->result, c->result + 8, MPI_LONG, 1, 0, c->win));
      break;
  }
}

static double rma_run(struct point *p, long n) {
  struct rma *c = p->ctx;
  const unsigned char mark = mark_of(p->runs, 0);
  if (g_rank != 0) {
    /* The target's memory carries the mark gets must see: stored in an
     * epoch of its own, so that the origin's gets see the stores. */
    if (c->kind == kGet) {
      CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win));
      for (int k = 0; k < c->window; ++k) stamp(c->target + (size_t)k * c->size, c->size, mark);
      CHECK(MPI_Win_unlock(1, c->win));
    }
    CHECK(MPI_Barrier(g_comm));
    CHECK(MPI_Barrier(g_comm));
    return 0;
  }
  stamp(c->local, c->size, c->kind == kPut ? mark : 0);
  CHECK(MPI_Barrier(g_comm));
  CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->win));
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) {
    for (int k = 0; k < c->window; ++k) one_op(c, k);
    CHECK(MPI_Win_flush(1, c->win));
  }
  const double seconds = MPI_Wtime() - t0;
  if (c->kind == kPut) {
    char *back = xmalloc(c->size);
    CHECK(MPI_Get(back, (int)c->size, MPI_CHAR, 1, (MPI_Aint)((size_t)(c->window - 1) * c->size),
                  (int)c->size, MPI_CHAR, c->win));
    CHECK(MPI_Win_flush(1, c->win));
    expect_mark(back, c->size, mark, p->bench);
    free(back);
  } else if (c->kind == kGet) {
    expect_mark(c->local, c->size, mark, p->bench);
  }
  CHECK(MPI_Win_unlock(1, c->win));
  CHECK(MPI_Barrier(g_comm));
  return seconds;
}

static void rma_point(const struct options *o, const char *bench, enum rma_kind kind, size_t size,
                      int window, int bandwidth) {
  struct rma c = {kind, size, window, MPI_WIN_NULL, NULL, NULL, NULL};
  const size_t bytes = size * (size_t)window;
  /* At least a page, as OSU's windows are: MPICH 4.0.2 gets wrong data
   * from a window of 8 bytes. */
  const size_t window_bytes = bytes < 4096 ? 4096 : bytes;
  CHECK(MPI_Win_allocate((MPI_Aint)window_bytes, 1, MPI_INFO_NULL, g_comm, &c.target, &c.win));
  CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_rank, 0, c.win));
  memset(c.target, 0, window_bytes);
  CHECK(MPI_Win_unlock(g_rank, c.win));
  c.local = xmalloc(size < 16 ? 16 : size);
  c.result = xmalloc(16);
  memset(c.local, 0, size < 16 ? 16 : size);
  memset(c.result, 0, 16);
  CHECK(MPI_Barrier(g_comm));
  long most = (long)(64.0 * 1024 * 1024 * 1024 / (double)bytes);
  if (most > MAX_OPS / window) most = MAX_OPS / window;
  if (most < 100) most = 100;
  struct point p = {bench,
                    size,
                    1,
                    bandwidth ? "GB/s" : "us",
                    bandwidth ? kAmountPerSecond : kTimePerIteration,
                    bandwidth ? (double)bytes / 1e9 : 1e6,
                    most,
                    rma_run,
                    &c,
                    0};
  measure_and_print(o, &p);
  CHECK(MPI_Win_free(&c.win));
  free(c.local);
  free(c.result);
}

static void latency(const struct options *o, const char *bench, enum rma_kind kind) {
  require_ranks(bench, 2, 0);
  static const size_t kOne[] = {8};
  const size_t *sizes;
  int nsizes;
  if (kind == kFop || kind == kCas) {
    sizes = kOne;
    nsizes = 1;
  } else {
    nsizes = size_list(o, kLatencySizes, COUNT(kLatencySizes), kQuickLatency, COUNT(kQuickLatency),
                       &sizes);
  }
  for (int s = 0; s < nsizes; ++s) {
    if (kind == kAcc && sizes[s] < 4) continue; /* whole ints */
    rma_point(o, bench, kind, sizes[s], 1, 0);
  }
}

static void bandwidth(const struct options *o, const char *bench, enum rma_kind kind) {
  require_ranks(bench, 2, 0);
  const size_t *sizes;
  const int nsizes = size_list(o, kBandwidthSizes, COUNT(kBandwidthSizes), kQuickBandwidth,
                               COUNT(kQuickBandwidth), &sizes);
  for (int s = 0; s < nsizes; ++s)
    rma_point(o, bench, kind, sizes[s], window_for(sizes[s], o->window), 1);
}

void bench_put_latency(const struct options *o) {
  latency(o, "put_latency", kPut);
}
void bench_get_latency(const struct options *o) {
  latency(o, "get_latency", kGet);
}
void bench_acc_latency(const struct options *o) {
  latency(o, "acc_latency", kAcc);
}
void bench_fop_latency(const struct options *o) {
  latency(o, "fop_latency", kFop);
}
void bench_cas_latency(const struct options *o) {
  latency(o, "cas_latency", kCas);
}
void bench_put_bw(const struct options *o) {
  bandwidth(o, "put_bw", kPut);
}
void bench_get_bw(const struct options *o) {
  bandwidth(o, "get_bw", kGet);
}
