/* mpi_sustain.c - the MPI anchor of the sustainability benchmark of
 * rocl-bench compare (RoCL paper, section 5.2): a compute loop with and
 * without a concurrent ping-pong, and the ping-pong with and without the
 * compute loop. sustain_kernel.h says what is measured and what is printed;
 * rocl's side is bench/rocl-bench/compare/sustain_rank.cpp.
 *
 * Run with 2 ranks, each bound to its own core (the compute thread it
 * starts shares that core with the thread calling MPI), e.g.
 *   mpirun.openmpi -np 2 --bind-to core --mca btl self,vader mpi_sustain.openmpi
 * Options: --size N (ping-pong message bytes, 8), --time S (seconds per
 * phase, 0.2), --reps N (5), --quick (1 rep of 0.05 s).
 *
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED); a blocking MPI_Recv
 * polls, as the MPI libraries do by default: that is the point measured.
 * Built by bench/rocl-bench/compare/CMakeLists.txt with mpicc.openmpi. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anchor_common.h"
#include "sustain_kernel.h"

enum { kTagControl = 1, kTagResult = 2, kTagData = 3 };

struct options {
  size_t size;
  double seconds;
  int reps;
};

struct compute {
  atomic_int stop;
  double units, seconds;
  pthread_t thread;
};

static int g_rank;
static volatile double g_sink;

static void die(const char *what) {
  fprintf(stderr, "mpi_sustain (rank %d): %s\n", g_rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void check(int rc, const char *call) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    snprintf(text, sizeof text, "%s failed: ", call);
    MPI_Error_string(rc, text + strlen(text), &len);
    die(text);
  }
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void parse_options(int argc, char **argv, struct options *o) {
  o->size = 8;
  o->seconds = 0.2;
  o->reps = 5;
  for (int i = 1; i < argc; ++i) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--quick") == 0) {
      o->seconds = 0.05, o->reps = 1;
    } else if (strcmp(argv[i], "--size") == 0 && v && atol(v) > 0) {
      o->size = (size_t)atol(v), ++i;
    } else if (strcmp(argv[i], "--time") == 0 && v && atof(v) > 0) {
      o->seconds = atof(v), ++i;
    } else if (strcmp(argv[i], "--reps") == 0 && v && atoi(v) > 0) {
      o->reps = atoi(v), ++i;
    } else {
      char text[256];
      snprintf(text, sizeof text, "unknown or incomplete argument '%s'", argv[i]);
      die(text);
    }
  }
}

/* ---- the compute thread ----------------------------------------------------- */

static void *compute_main(void *arg) {
  struct compute *c = arg;
  double v[SUSTAIN_VECTOR];
  for (int i = 0; i < SUSTAIN_VECTOR; ++i) v[i] = i;
  double sum = 0, units = 0;
  const double t0 = anchor_clock_s();
  while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
    sum += sustain_unit(v);
    ++units;
  }
  c->seconds = anchor_clock_s() - t0;
  c->units = units;
  g_sink = sum;
  return NULL;
}

static void compute_start(struct compute *c) {
  atomic_store(&c->stop, 0);
  if (pthread_create(&c->thread, NULL, compute_main, c) != 0) die("pthread_create failed");
}

/* Stops the compute thread; returns its units per second. */
static double compute_stop(struct compute *c) {
  atomic_store(&c->stop, 1);
  pthread_join(c->thread, NULL);
  return c->units / c->seconds;
}

/* ---- the ping-pong ------------------------------------------------------------ */

/* Rank 0: round trips for `seconds`; returns the seconds per round trip. */
static double ping_for(char *buf, size_t size, double seconds) {
  long n = 0;
  const double t0 = anchor_clock_s();
  double t = 0;
  do {
    ++n;
    t = anchor_clock_s() - t0;
    buf[0] = t >= seconds ? SUSTAIN_LAST : SUSTAIN_GO_ON;
    check(MPI_Send(buf, (int)size, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD), "MPI_Send");
    check(MPI_Recv(buf, (int)size, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
  } while (buf[0] != SUSTAIN_LAST);
  return (anchor_clock_s() - t0) / (double)n;
}

static void echo_until_last(char *buf, size_t size) {
  do {
    check(MPI_Recv(buf, (int)size, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    check(MPI_Send(buf, (int)size, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD), "MPI_Send");
  } while (buf[0] != SUSTAIN_LAST);
}

/* ---- the two ranks ------------------------------------------------------------ */

static void control(int what) {
  check(MPI_Send(&what, 1, MPI_INT, 1, kTagControl, MPI_COMM_WORLD), "MPI_Send (control)");
}

/* Rank 0: rank 1's compute rate of the phase that just ended. */
static double peer_rate(void) {
  double rate = 0;
  check(MPI_Recv(&rate, 1, MPI_DOUBLE, 1, kTagResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv (result)");
  return rate;
}

static void drive(const struct options *o, char *buf) {
  double *samples = calloc(4 * (size_t)o->reps, sizeof *samples);
  if (samples == NULL) die("out of memory");
  double *ex0 = samples, *excs = ex0 + o->reps, *rt0 = excs + o->reps, *rtcs = rt0 + o->reps;
  struct compute c;
  ping_for(buf, o->size, o->seconds / 4 < 0.05 ? o->seconds / 4 : 0.05); /* warm-up */
  for (int r = 0; r < o->reps; ++r) {
    control(SUSTAIN_COMPUTE);
    compute_start(&c);
    sleep_s(o->seconds);
    ex0[r] = (compute_stop(&c) + peer_rate()) / 1e6;

    control(SUSTAIN_PINGPONG);
    rt0[r] = ping_for(buf, o->size, o->seconds) * 1e6;

    control(SUSTAIN_BOTH);
    compute_start(&c);
    rtcs[r] = ping_for(buf, o->size, o->seconds) * 1e6;
    excs[r] = (compute_stop(&c) + peer_rate()) / 1e6;
  }
  control(SUSTAIN_QUIT);
  anchor_print_row("compute-alone", o->size, ex0, o->reps, "M units/s");
  anchor_print_row("compute-with-pingpong", o->size, excs, o->reps, "M units/s");
  anchor_print_row("rtt-alone", o->size, rt0, o->reps, "us");
  anchor_print_row("rtt-with-compute", o->size, rtcs, o->reps, "us");
  fflush(stdout);
  free(samples);
}

static void serve(const struct options *o, char *buf) {
  struct compute c;
  echo_until_last(buf, o->size); /* warm-up */
  for (;;) {
    int what = 0;
    check(MPI_Recv(&what, 1, MPI_INT, 0, kTagControl, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv (control)");
    double rate = 0;
    switch (what) {
      case SUSTAIN_COMPUTE:
        compute_start(&c);
        sleep_s(o->seconds);
        rate = compute_stop(&c);
        check(MPI_Send(&rate, 1, MPI_DOUBLE, 0, kTagResult, MPI_COMM_WORLD), "MPI_Send (result)");
        break;
      case SUSTAIN_PINGPONG:
        echo_until_last(buf, o->size);
        break;
      case SUSTAIN_BOTH:
        compute_start(&c);
        echo_until_last(buf, o->size);
        rate = compute_stop(&c);
        check(MPI_Send(&rate, 1, MPI_DOUBLE, 0, kTagResult, MPI_COMM_WORLD), "MPI_Send (result)");
        break;
      case SUSTAIN_QUIT:
        return;
      default:
        die("unknown control message");
    }
  }
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) die("run with exactly 2 ranks");
  if (provided < MPI_THREAD_FUNNELED) die("MPI_Init_thread did not grant MPI_THREAD_FUNNELED");
  struct options o;
  parse_options(argc, argv, &o);
  char *buf = calloc(o.size, 1);
  if (buf == NULL) die("out of memory");
  if (g_rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    for (char *p = version; *p; ++p) {
      if (*p == '\n' || *p == '\r') *p = ' ';
    }
    printf("# library: %.200s\n", version);
    printf("# sustainability: %d rep(s) of 3 phases of ~%.3g s; ping-pong of %zu B\n", o.reps,
           o.seconds, o.size);
    printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
    fflush(stdout);
    drive(&o, buf);
  } else {
    serve(&o, buf);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  MPI_Finalize();
  return 0;
}
