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
 * ranks' values.
 *
 * `mpi_bench overlap` (after osu_iallreduce): MPI_Iallreduce of doubles,
 * 8 B..1 MiB, with computation between the call and its MPI_Wait. Per
 * repetition: t_pure, the time of Iallreduce + Wait back to back; then,
 * with a computation (a loop reading the clock, no MPI call) of t_pure,
 * t_total of Iallreduce, compute, Wait; the overlap is
 * 100 * (1 - (t_total - t_compute) / t_pure), clamped to 0..100: the share
 * of the collective's time hidden behind the computation (the slowest
 * rank's). Rows: overlap,size,1,median,min,max,% (and the pure time as
 * iallreduce,...,us). */
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

static void compute_for(double seconds) {
  const double until = MPI_Wtime() + seconds;
  while (MPI_Wtime() < until) {
  }
}

/* Iterations of (Iallreduce, compute(c), Wait); seconds per iteration, the
 * slowest rank's. */
static double overlap_run(double *in, double *out, int count, long n, double c) {
  CHECK(MPI_Barrier(g_comm));
  const double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) {
    MPI_Request rq;
    CHECK(MPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, g_comm, &rq));
    if (c > 0) compute_for(c);
    CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  }
  double t = (MPI_Wtime() - t0) / (double)n, slowest = 0;
  CHECK(MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, g_comm));
  return slowest;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void bench_overlap(const struct options *o) {
  require_ranks("overlap", 0, 0);
  if (g_size < 2) die("overlap needs at least 2 ranks");
  const size_t *sizes;
  int n =
      size_list(o, kCollSizes, COUNT(kCollSizes), kQuickAllreduce, COUNT(kQuickAllreduce), &sizes);
  for (int i = 0; i < n; ++i) {
    const int count = sizes[i] >= sizeof(double) ? (int)(sizes[i] / sizeof(double)) : 1;
    double *in = xmalloc(count * sizeof(double)), *out = xmalloc(count * sizeof(double));
    for (int k = 0; k < count; ++k) in[k] = g_rank + 1;
    overlap_run(in, out, count, 10, 0); /* warm-up */
    /* Iterations for about --time per measurement, as the pure time says. */
    const double probe = overlap_run(in, out, count, 20, 0);
    long iters = (long)(o->seconds / (probe > 1e-7 ? probe : 1e-7));
    if (iters < 5) iters = 5;
    if (iters > 100000) iters = 100000;
    const int reps = o->reps < 1 ? 1 : o->reps > 32 ? 32 : o->reps;
    double pure[32], share[32];
    for (int r = 0; r < reps; ++r) {
      pure[r] = overlap_run(in, out, count, iters, 0);
      const double total = overlap_run(in, out, count, iters, pure[r]);
      double f = 100.0 * (1.0 - (total - pure[r]) / pure[r]);
      share[r] = f < 0 ? 0 : f > 100 ? 100 : f;
    }
    if (out[0] != g_size * (g_size + 1) / 2.0) die("overlap: WRONG SUM %g", out[0]);
    qsort(pure, reps, sizeof *pure, by_value);
    qsort(share, reps, sizeof *share, by_value);
    print_row("iallreduce", count * sizeof(double), 1,
              (struct stats){pure[reps / 2] * 1e6, pure[0] * 1e6, pure[reps - 1] * 1e6}, "us");
    print_row("overlap", count * sizeof(double), 1,
              (struct stats){share[reps / 2], share[0], share[reps - 1]}, "%");
    free(in);
    free(out);
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
