/* common.c - the MPI benchmark suite's shared parts: option parsing, the
 * measuring loop (the one of bench/anchors/mpi_pingpong.c and rocl-bench),
 * the light data checks and the CSV rows. See main.c for how to run it.
 *
 * Measuring a point: runs of 8, 32, 128, ... iterations (warm-up and
 * calibration at once) until one lasts a tenth of --time, then --reps
 * timed runs of the count that lasts --time; the median, min and max of
 * their figures. With --iters N: one untimed run of --warmup iterations,
 * then --reps timed runs of N, whatever they take (a slow MPI then takes
 * longer instead of measuring fewer calls; the caller bounds the time). Every run starts after an
 * MPI_Barrier and its seconds are the largest any rank measured (MPI_Allreduce MAX), so that every
 * rank takes the same decisions and a collective counts its slowest rank. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign under -std=c11 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MPI_Comm g_comm;
int g_rank, g_size;

void die(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "mpi_bench (rank %d): ", g_rank);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* MPI_Abort should not return; if it does, still fail */
}

/* The default error handler aborts already; this also catches an MPI that
 * returns an error code instead. */
void check_rc(int rc, const char *call) {
  if (rc != MPI_SUCCESS) die("%s returned error %d", call, rc);
}

/* Page-aligned, as OSU's buffers are: where a buffer starts within its
 * page decides whether copies to and from it alias others 4 KiB apart
 * (MPICH took 2-3x longer at 16 and 64 KiB from malloc's addresses). */
void *xmalloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytes > 0 ? bytes : 1) != 0) die("out of memory (%zu bytes)", bytes);
  return p;
}

/* MPI_Waitall without statuses. MPICH's MPI_STATUSES_IGNORE is the
 * pointer (MPI_Status *)1, which GCC 12's -Wstringop-overflow takes for a
 * zero-sized array when it sees the constant at the call; read through a
 * volatile pointer it cannot. */
static MPI_Status *volatile g_statuses_ignore = MPI_STATUSES_IGNORE;

void wait_all(int count, MPI_Request *reqs) {
  CHECK(MPI_Waitall(count, reqs, g_statuses_ignore));
}

/* ---- options ---------------------------------------------------------------- */

void print_usage(void) {
  printf(
      "usage: mpi_bench BENCHMARK... [options]\n"
      "benchmarks: latency bw bibw mbw_mr mt_latency mt_rate mt_mprobe_rate coll overlap\n"
      "            put_latency get_latency acc_latency fop_latency cas_latency put_bw get_bw\n"
      "  --sizes LIST      message sizes for every benchmark named (e.g. 8,4K,64K,1M)\n"
      "  --threads LIST    threads per rank for mt_* [1,2,4,8]\n"
      "  --mt-mode M       tag: one communicator, a tag per thread [default];\n"
      "                    comm: a communicator per thread\n"
      "  --window N        messages in flight per window [64]\n"
      "  --reps N          timed repetitions per point [5]\n"
      "  --time S          seconds per repetition [0.2]\n"
      "  --iters N         a fixed N iterations per repetition instead of --time\n"
      "  --warmup N        untimed iterations before those of --iters [N / 10]\n"
      "  --coll LIST       coll: only these of barrier,bcast,reduce,allreduce [all]\n"
      "  --quick           a few points, 1 repetition of 0.02 s\n");
}

/* "8", "64K", "1M" -> bytes; -1 if malformed. Sets *end_out past it. */
static long long parse_size(const char *text, const char **end_out) {
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || v < 0) return -1;
  if (*end == 'K' || *end == 'k') {
    v <<= 10, ++end;
  } else if (*end == 'M' || *end == 'm') {
    v <<= 20, ++end;
  } else if (*end == 'G' || *end == 'g') {
    v <<= 30, ++end;
  }
  *end_out = end;
  return v;
}

/* Comma separated sizes into out[]; returns how many, or -1 if malformed. */
static int parse_sizes(const char *text, size_t *out) {
  int n = 0;
  while (*text != '\0') {
    const char *end = NULL;
    long long v = parse_size(text, &end);
    if (v < 1 || n == kMaxList || (*end != ',' && *end != '\0')) return -1;
    out[n++] = (size_t)v;
    text = *end == ',' ? end + 1 : end;
  }
  return n > 0 ? n : -1;
}

static int parse_ints(const char *text, int *out) {
  size_t sizes[kMaxList];
  int n = parse_sizes(text, sizes);
  for (int i = 0; i < n; ++i) {
    if (sizes[i] > 1024) return -1;
    out[i] = (int)sizes[i];
  }
  return n;
}

/* Every rank parses the same argv, so every rank reaches the same verdict:
 * a bad command line ends the job with status 2 on all of them alike. */
static void bad_usage(const char *fmt, const char *arg) {
  if (g_rank == 0) {
    fprintf(stderr, "mpi_bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    print_usage();
  }
  MPI_Finalize();
  exit(2);
}

static const char *const kBenchNames[] = {
    "latency",        "bw",          "bibw",    "mbw_mr",      "mt_latency",  "mt_rate",
    "mt_mprobe_rate", "coll",        "overlap", "put_latency", "get_latency", "acc_latency",
    "fop_latency",    "cas_latency", "put_bw",  "get_bw"};

static int is_bench_name(const char *name) {
  for (size_t i = 0; i < sizeof kBenchNames / sizeof *kBenchNames; ++i) {
    if (strcmp(name, kBenchNames[i]) == 0) return 1;
  }
  return 0;
}

void parse_options(int argc, char **argv, struct options *o, const char **benches, int *nbenches) {
  memset(o, 0, sizeof *o);
  const int default_threads[] = {1, 2, 4, 8};
  memcpy(o->threads, default_threads, sizeof default_threads);
  o->nthreads = 4;
  o->reps = 5;
  o->seconds = 0.2;
  o->window = 64;
  int reps_set = 0, time_set = 0, warmup_set = 0;
  *nbenches = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (g_rank == 0) print_usage();
      MPI_Finalize();
      exit(0);
    } else if (strcmp(a, "--quick") == 0) {
      o->quick = 1;
    } else if (strcmp(a, "--sizes") == 0 && v) {
      if ((o->nsizes = parse_sizes(v, o->sizes)) < 0) bad_usage("bad size list '%s'", v);
      ++i;
    } else if (strcmp(a, "--threads") == 0 && v) {
      if ((o->nthreads = parse_ints(v, o->threads)) < 0) bad_usage("bad thread list '%s'", v);
      ++i;
    } else if (strcmp(a, "--mt-mode") == 0 && v) {
      if (strcmp(v, "tag") != 0 && strcmp(v, "comm") != 0)
        bad_usage("--mt-mode tag|comm, not '%s'", v);
      o->per_thread_comm = strcmp(v, "comm") == 0;
      ++i;
    } else if (strcmp(a, "--window") == 0 && v && atoi(v) > 0 && atoi(v) <= 4096) {
      o->window = atoi(v), ++i;
    } else if (strcmp(a, "--reps") == 0 && v && atoi(v) > 0 && atoi(v) <= 1000) {
      o->reps = atoi(v), reps_set = 1, ++i;
    } else if (strcmp(a, "--time") == 0 && v && atof(v) > 0) {
      o->seconds = atof(v), time_set = 1, ++i;
    } else if (strcmp(a, "--iters") == 0 && v && atol(v) > 0) {
      o->iters = atol(v), ++i;
    } else if (strcmp(a, "--warmup") == 0 && v && atol(v) >= 0) {
      o->warmup = atol(v), warmup_set = 1, ++i;
    } else if (strcmp(a, "--coll") == 0 && v) {
      o->colls = v, ++i;
    } else if (is_bench_name(a) && *nbenches < kMaxList) {
      benches[(*nbenches)++] = a;
    } else {
      bad_usage("unknown or incomplete argument '%s'", a);
    }
  }
  if (*nbenches == 0) bad_usage("%sname at least one benchmark", "");
  if (o->iters > 0 && !warmup_set) o->warmup = o->iters / 10;
  if (o->quick) {
    if (!reps_set) o->reps = 1;
    if (!time_set) o->seconds = 0.02;
  }
}

/* The sizes a benchmark measures: --sizes if given, else its quick or its
 * full default list. */
int size_list(const struct options *o, const size_t *defaults, int ndefaults, const size_t *quick,
              int nquick, const size_t **out) {
  if (o->nsizes > 0) {
    *out = o->sizes;
    return o->nsizes;
  }
  *out = o->quick ? quick : defaults;
  return o->quick ? nquick : ndefaults;
}

/* Whether `name` is in --coll's list (every collective without one). */
int wants_coll(const struct options *o, const char *name) {
  if (o->colls == NULL) return 1;
  const size_t len = strlen(name);
  for (const char *p = o->colls; *p != '\0';) {
    const char *end = strchr(p, ',');
    const size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, name, len) == 0) return 1;
    p = end != NULL ? end + 1 : p + n;
  }
  return 0;
}

void require_ranks(const char *bench, int exact, int even_at_least) {
  if (exact > 0 && g_size != exact) die("%s needs exactly %d ranks, not %d", bench, exact, g_size);
  if (even_at_least > 0 && (g_size < even_at_least || g_size % 2 != 0)) {
    die("%s needs an even number of ranks, at least %d (not %d)", bench, even_at_least, g_size);
  }
}

/* ---- the measuring loop ----------------------------------------------------------- */

/* One run of n iterations on every rank; the largest seconds any rank
 * measured, known to every rank. */
static double timed_run(struct point *p, long n) {
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double mine = p->run(p, n);
  p->runs++;
  double slowest = 0;
  CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return slowest;
}

/* rocl-bench's plan_iterations: grow n by 4 until a run lasts a tenth of
 * the target, then the count that should last the target. */
static long plan_iterations(struct point *p, double target) {
  long n = p->most < 8 ? p->most : 8;
  double elapsed = timed_run(p, n);
  while (elapsed < target / 10 && n < p->most) {
    n = n * 4 < p->most ? n * 4 : p->most;
    elapsed = timed_run(p, n);
  }
  const double per_iteration = elapsed / (double)n;
  if (per_iteration <= 0) return p->most;
  double wanted = target / per_iteration;
  if (wanted < 1) wanted = 1;
  if (wanted > (double)p->most) wanted = (double)p->most;
  return (long)wanted;
}

static double figure_of(const struct point *p, long n, double seconds) {
  if (seconds <= 0) die("%s %zu: a run took no time (the clock does not move?)", p->bench, p->size);
  if (p->kind == kTimePerIteration) return seconds / (double)n * p->scale;
  return (double)n * p->scale / seconds;
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static struct stats stats_of(double *samples, int n) {
  qsort(samples, (size_t)n, sizeof *samples, compare_doubles);
  struct stats s;
  s.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.min = samples[0];
  s.max = samples[n - 1];
  return s;
}

struct stats measure(const struct options *o, struct point *p) {
  double samples[1000];
  if (o->iters > 0 && o->warmup > 0) timed_run(p, o->warmup);
  const long n = o->iters > 0 ? o->iters : plan_iterations(p, o->seconds);
  for (int r = 0; r < o->reps; ++r) samples[r] = figure_of(p, n, timed_run(p, n));
  return stats_of(samples, o->reps);
}

void print_row(const char *bench, size_t size, int threads, struct stats s, const char *unit) {
  if (g_rank != 0) return;
  printf("%s,%zu,%d,%.6g,%.6g,%.6g,%s\n", bench, size, threads, s.median, s.min, s.max, unit);
  fflush(stdout);
}

void measure_and_print(const struct options *o, struct point *p) {
  print_row(p->bench, p->size, p->threads, measure(o, p), p->unit);
}

/* ---- light data checks -------------------------------------------------------------- */

/* A byte that differs from run to run and from lane (thread, window slot
 * or pair) to lane, never 0 (0 is what a receiver clears its buffer to):
 * a stale buffer or a message delivered to the wrong thread shows. */
unsigned char mark_of(unsigned run, int lane) {
  return (unsigned char)(1 + (run * 13u + (unsigned)lane * 29u) % 251u);
}

/* The first, middle and last bytes: enough to catch a missing, short or
 * misrouted message without slowing the benchmark. */
void stamp(void *buf, size_t size, unsigned char mark) {
  unsigned char *b = buf;
  b[0] = b[size / 2] = b[size - 1] = mark;
}

void expect_mark(const void *buf, size_t size, unsigned char mark, const char *what) {
  const unsigned char *b = buf;
  if (b[0] != mark || b[size / 2] != mark || b[size - 1] != mark) {
    die("%s: WRONG DATA in a %zu-byte message: bytes first/middle/last %u/%u/%u, expected %u", what,
        size, b[0], b[size / 2], b[size - 1], mark);
  }
}

/* rocl-bench's window rule (as bench/anchors/mpi_pingpong.c): at most
 * 256 MiB of power-of-two blocks (payload + 192 bytes of header, at least
 * 256) in flight, so that 16 MiB messages go 8 at a time. */
int window_for(size_t size, int window) {
  const size_t max_in_flight = (size_t)256 << 20;
  size_t block = 256;
  while (block < size + 192) block *= 2;
  size_t fit = max_in_flight / block;
  if (fit < 1) fit = 1;
  return (size_t)window < fit ? window : (int)fit;
}
