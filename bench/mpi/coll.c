/* coll.c - collective benchmarks of mpi_bench (`mpi_bench coll`), after
 * osu_barrier, osu_bcast, osu_reduce and osu_allreduce; any number of
 * ranks (>= 2).
 * See main.c for how to run them.
 *
 *   barrier    MPI_Barrier back to back                       (size 0)
 *   bcast      MPI_Bcast from rank 0, 8 B..1 MiB, powers of 8
 *   reduce     MPI_Reduce of doubles to rank 0, MPI_SUM, 8 B..1 MiB, powers of 8
 *   allreduce  MPI_Allreduce of doubles, MPI_SUM, 8 B..1 MiB, powers of 8
 *
 * The figure is the time per call in us, averaged over a run, of the
 * slowest rank (every rank times the run; the loop takes the maximum).
 * --coll LIST measures only those named.
 * Checks: after each run the non-root ranks hold the root's mark (bcast),
 * and rank 0 (reduce) or every rank (allreduce) holds the exact sum of the
 * ranks' values. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static const size_t kCollSizes[] = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20};
static const size_t kQuickBcast[] = {8, 64 << 10};
static const size_t kQuickAllreduce[] = {8, 1 << 10}; /* reduce's too */
#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))
#define MOST_CALLS 5000000L

static double barrier_run(struct point *p, long n) {
  (void)p;
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) CHECK(MPI_Barrier(g_comm));
  return MPI_Wtime() - t0;
}

static double bcast_run(struct point *p, long n) {
  char *buf = p->ctx;
  const unsigned char mark = mark_of(p->runs, 0);
  stamp(buf, p->size, g_rank == 0 ? mark : 0);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) CHECK(MPI_Bcast(buf, (int)p->size, MPI_CHAR, 0, g_comm));
  const double seconds = MPI_Wtime() - t0;
  expect_mark(buf, p->size, mark, "bcast");
  return seconds;
}

struct reduction {
  double *in, *out;
  int count;
  int to_root; /* MPI_Reduce to rank 0, else MPI_Allreduce */
};

/* Rank r contributes (r + 1) * f with f changing from run to run, so the
 * sum is f * P (P + 1) / 2: exact in doubles, and a stale result shows. */
static double reduction_run(struct point *p, long n) {
  struct reduction *r = p->ctx;
  const double f = 1 + p->runs % 7;
  for (int k = 0; k < r->count; ++k) r->in[k] = (g_rank + 1) * f;
  const int ends[3] = {0, r->count / 2, r->count - 1};
  for (int e = 0; e < 3; ++e) r->out[ends[e]] = -1;
  const double t0 = MPI_Wtime();
  if (r->to_root) {
    for (long i = 0; i < n; ++i) {
      CHECK(MPI_Reduce(r->in, r->out, r->count, MPI_DOUBLE, MPI_SUM, 0, g_comm));
    }
  } else {
    for (long i = 0; i < n; ++i) {
      CHECK(MPI_Allreduce(r->in, r->out, r->count, MPI_DOUBLE, MPI_SUM, g_comm));
    }
  }
  const double seconds = MPI_Wtime() - t0;
  if (r->to_root && g_rank != 0) return seconds; /* only the root has the sum */
  const double expected = f * g_size * (g_size + 1) / 2.0;
  for (int e = 0; e < 3; ++e) {
    if (r->out[ends[e]] != expected) {
      die("%s: WRONG SUM %g at element %d of %d, expected %g", p->bench, r->out[ends[e]], ends[e],
          r->count, expected);
    }
  }
  return seconds;
}

static void bench_barrier(const struct options *o) {
  struct point p = {"barrier", 0,          1,           "us", kTimePerIteration,
                    1e6,       MOST_CALLS, barrier_run, NULL, 0};
  measure_and_print(o, &p);
}

static void bench_bcast(const struct options *o) {
  const size_t *sizes;
  int n = size_list(o, kCollSizes, COUNT(kCollSizes), kQuickBcast, COUNT(kQuickBcast), &sizes);
  for (int i = 0; i < n; ++i) {
    char *buf = xmalloc(sizes[i]);
    memset(buf, 0, sizes[i]);
    struct point p = {"bcast", sizes[i],   1,         "us", kTimePerIteration,
                      1e6,     MOST_CALLS, bcast_run, buf,  0};
    measure_and_print(o, &p);
    free(buf);
  }
}

static void bench_reduction(const struct options *o, const char *name, int to_root) {
  const size_t *sizes;
  int n =
      size_list(o, kCollSizes, COUNT(kCollSizes), kQuickAllreduce, COUNT(kQuickAllreduce), &sizes);
  for (int i = 0; i < n; ++i) {
    /* whole doubles: a size below 8 still reduces one */
    const int count = sizes[i] >= sizeof(double) ? (int)(sizes[i] / sizeof(double)) : 1;
    struct reduction r = {xmalloc(count * sizeof(double)), xmalloc(count * sizeof(double)), count,
                          to_root};
    memset(r.out, 0, count * sizeof(double));
    struct point p = {name,       count * sizeof(double), 1,  "us", kTimePerIteration, 1e6,
                      MOST_CALLS, reduction_run,          &r, 0};
    measure_and_print(o, &p);
    free(r.in);
    free(r.out);
  }
}

void bench_coll(const struct options *o) {
  require_ranks("coll", 0, 0);
  if (g_size < 2) die("coll needs at least 2 ranks");
  if (wants_coll(o, "barrier")) bench_barrier(o);
  if (wants_coll(o, "bcast")) bench_bcast(o);
  if (wants_coll(o, "reduce")) bench_reduction(o, "reduce", 1);
  if (wants_coll(o, "allreduce")) bench_reduction(o, "allreduce", 0);
}
