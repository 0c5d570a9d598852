/* bench.h - what the files of the MPI benchmark suite (bench/mpi) share:
 * the options, the measurement loop, the data checks and the output.
 *
 * The suite is one program, mpi_bench, built three times from these
 * sources by bench/rocl-bench/compare/CMakeLists.txt: against rocl's MPI,
 * Open MPI and MPICH (mpicc.openmpi / mpicc.mpich). main.c
 * says how to run it. It calls only the MPI 3 functions rocl's MPI
 * provides (see main.c), so that the same source measures all three. */
#ifndef ROCL_BENCH_MPI_BENCH_H
#define ROCL_BENCH_MPI_BENCH_H

#include <mpi.h>
#include <stddef.h>

enum { kMaxList = 64 };

struct options {
  size_t sizes[kMaxList]; /* --sizes: replaces every benchmark's own sizes */
  int nsizes;             /* 0: each benchmark uses its default sizes */
  int threads[kMaxList];  /* --threads, for mt_latency and mt_rate */
  int nthreads;
  int reps;            /* --reps: timed repetitions per point */
  double seconds;      /* --time: seconds per repetition */
  int window;          /* --window: messages in flight (bw, bibw, mbw_mr, mt_rate) */
  int per_thread_comm; /* --mt-mode comm (1) or tag (0) */
  int quick;           /* --quick: tiny subsets, one short repetition */
  long iters;          /* --iters: a fixed count per repetition, no calibration (0: by time) */
  long warmup;         /* --warmup: untimed iterations before the repetitions of --iters */
  const char *colls;   /* --coll: the collectives of coll, comma-separated (NULL: all) */
};

/* The communicator every benchmark's traffic uses: a duplicate of
 * MPI_COMM_WORLD, so that the measuring loop's own collectives on
 * MPI_COMM_WORLD never meet a benchmark's messages. */
extern MPI_Comm g_comm;
extern int g_rank, g_size;

/* One point of a benchmark: the collective `run` performs n iterations
 * and returns the seconds this rank measured (0 if its clock does not
 * count); the figure is computed from the largest over the ranks. */
enum figure_kind {
  kTimePerIteration, /* figure = seconds / n * scale   (us per ...) */
  kAmountPerSecond,  /* figure = n * scale / seconds   (GB/s, Mmsg/s) */
};
struct point {
  const char *bench;
  size_t size;
  int threads; /* the CSV's threads column: threads per rank, or pairs */
  const char *unit;
  enum figure_kind kind;
  double scale;
  long most; /* at most this many iterations per run */
  double (*run)(struct point *p, long n);
  void *ctx;
  unsigned runs; /* runs so far: every rank counts alike (run is collective) */
};

struct stats {
  double median, min, max;
};

/* common.c */
void die(const char *fmt, ...);
void check_rc(int rc, const char *call);
#define CHECK(call) check_rc((call), #call)
void *xmalloc(size_t bytes);
void wait_all(int count, MPI_Request *reqs);
void parse_options(int argc, char **argv, struct options *o, const char **benches, int *nbenches);
void print_usage(void);
int size_list(const struct options *o, const size_t *defaults, int ndefaults, const size_t *quick,
              int nquick, const size_t **out);
struct stats measure(const struct options *o, struct point *p);
void print_row(const char *bench, size_t size, int threads, struct stats s, const char *unit);
void measure_and_print(const struct options *o, struct point *p);
void require_ranks(const char *bench, int exact, int even_at_least);
unsigned char mark_of(unsigned run, int lane);
void stamp(void *buf, size_t size, unsigned char mark);
void expect_mark(const void *buf, size_t size, unsigned char mark, const char *what);
int window_for(size_t size, int window);
int wants_coll(const struct options *o, const char *name);

/* The benchmarks: pt2pt.c, mt.c, coll.c. Each measures and prints its
 * rows (rank 0); every rank of MPI_COMM_WORLD calls it. */
void bench_latency(const struct options *o);
void bench_bw(const struct options *o);
void bench_bibw(const struct options *o);
void bench_mbw_mr(const struct options *o);
void bench_mt_latency(const struct options *o);
void bench_mt_rate(const struct options *o);
void bench_mt_mprobe_rate(const struct options *o);
void bench_coll(const struct options *o);
void bench_overlap(const struct options *o);
/* rma.c */
void bench_put_latency(const struct options *o);
void bench_get_latency(const struct options *o);
void bench_acc_latency(const struct options *o);
void bench_fop_latency(const struct options *o);
void bench_cas_latency(const struct options *o);
void bench_put_bw(const struct options *o);
void bench_get_bw(const struct options *o);

#endif
