/* mpi_pingpong.c - the MPI anchors of rocl's process benchmarks: an
 * osu_latency / osu_bw-like program measured the way rocl-bench measures
 * rocl (same sizes, same windows, same statistics), so that the figures of
 * rocl-bench compare sit in one table.
 *
 * Built with each MPI's compiler (mpicc.openmpi, mpicc.mpich), and against
 * rocl's MPI, by bench/rocl-bench/compare/CMakeLists.txt into
 * <build>/bench/rocl-bench/compare/anchors/. Run with 2 ranks, e.g. (A =
 * that folder)
 *   mpirun.openmpi -np 2 --bind-to core A/mpi_pingpong.openmpi
 *   mpiexec.mpich -n 2 -bind-to core A/mpi_pingpong.mpich --quick
 *
 * Options (the defaults are rocl-bench's):
 *   --sizes LIST     latency sizes [1,4,16,...,16M: powers of 4]
 *   --bw-sizes LIST  bandwidth sizes [4K,16K,...,16M]
 *   --reps N         timed repetitions per point [5]
 *   --time S         seconds per repetition [0.2]
 *   --window N       messages in flight per window [64]
 *   --quick          sizes 8,64K; bandwidth 64K; 1 rep of 0.02 s
 *
 * latency: rank 0 MPI_Send + MPI_Recv, rank 1 MPI_Recv + MPI_Send (the
 *   osu_latency loop, each rank receiving into a buffer it does not send
 *   from); one-way = round trip / 2, in us.
 * bandwidth: rank 0 posts `window` MPI_Isend of one buffer, MPI_Waitall,
 *   then waits for a 4-byte ack; rank 1 posts `window` MPI_Irecv (into
 *   distinct buffers), MPI_Waitall, sends the ack (the osu_bw loop). The
 *   window shrinks for big messages exactly as rocl-bench's does (at most
 *   256 MiB of power-of-two blocks in flight: 16 MiB -> 8). GB/s = 1e9 B/s.
 * Every point: warm-up and calibration runs of 8, 32, 128, ... iterations
 * until one lasts a tenth of --time, then --reps timed runs of the count
 * that lasts --time; the median, min and max of the repetitions.
 *
 * Output (stdout, rank 0): '#' comment lines (the MPI library, the
 * settings), then CSV rows in rocl-bench's columns
 *   benchmark,size_bytes,pairs,median,min,max,unit
 * with benchmark "latency" (unit us) or "bandwidth" (unit GB/s). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign under -std=c11 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anchor_common.h"
enum { kCmdQuit = 0, kCmdLatency = 1, kCmdBandwidth = 2 };
enum { kTagCmd = 1, kTagData = 2, kTagAck = 3 };
enum { kMaxSizes = 64 };

#define MAX_IN_FLIGHT ((size_t)256 << 20)
#define MAX_VOLUME (64.0 * 1024 * 1024 * 1024) /* bytes per latency repetition */
#define MAX_ROUND_TRIPS 5000000L

struct command {
  long cmd, size, window, count;
};

struct options {
  size_t sizes[kMaxSizes], bw_sizes[kMaxSizes];
  int nsizes, nbw;
  int reps;
  double seconds;
  int window;
};

static int g_rank;

static void die(const char *what) {
  fprintf(stderr, "mpi_pingpong (rank %d): %s\n", g_rank, what);
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

/* "8", "64K", "1M" -> bytes; -1 if malformed. */
static long long parse_size(const char *text, const char **end_out) {
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || v < 0) return -1;
  if (*end == 'K' || *end == 'k')
    v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm')
    v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g')
    v <<= 30, ++end;
  *end_out = end;
  return v;
}

static int parse_list(const char *text, size_t *out) {
  int n = 0;
  while (*text != '\0') {
    const char *end = NULL;
    long long v = parse_size(text, &end);
    if (v < 1 || n == kMaxSizes || (*end != ',' && *end != '\0')) die("bad size list");
    out[n++] = (size_t)v;
    text = *end == ',' ? end + 1 : end;
  }
  if (n == 0) die("empty size list");
  return n;
}

static void parse_options(int argc, char **argv, struct options *o) {
  o->nsizes = o->nbw = 0;
  for (size_t s = 1; s <= ((size_t)16 << 20); s *= 4) o->sizes[o->nsizes++] = s;
  for (size_t s = 4096; s <= ((size_t)16 << 20); s *= 4) o->bw_sizes[o->nbw++] = s;
  o->reps = 5;
  o->seconds = 0.2;
  o->window = 64;
  int quick = 0, sizes_set = 0, bw_set = 0, reps_set = 0, time_set = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) {
      quick = 1;
    } else if (strcmp(a, "--sizes") == 0 && v) {
      o->nsizes = parse_list(v, o->sizes), sizes_set = 1, ++i;
    } else if (strcmp(a, "--bw-sizes") == 0 && v) {
      o->nbw = parse_list(v, o->bw_sizes), bw_set = 1, ++i;
    } else if (strcmp(a, "--reps") == 0 && v && atoi(v) > 0) {
      o->reps = atoi(v), reps_set = 1, ++i;
    } else if (strcmp(a, "--time") == 0 && v && atof(v) > 0) {
      o->seconds = atof(v), time_set = 1, ++i;
    } else if (strcmp(a, "--window") == 0 && v && atoi(v) > 0) {
      o->window = atoi(v), ++i;
    } else {
      char text[256];
      snprintf(text, sizeof text, "unknown or incomplete argument '%s'", a);
      die(text);
    }
  }
  if (quick) {
    if (!sizes_set) o->sizes[0] = 8, o->sizes[1] = 64 << 10, o->nsizes = 2;
    if (!bw_set) o->bw_sizes[0] = 64 << 10, o->nbw = 1;
    if (!reps_set) o->reps = 1;
    if (!time_set) o->seconds = 0.02;
  }
}

/* rocl-bench's window rule: at most MAX_IN_FLIGHT bytes of power-of-two
 * blocks (payload + 192 bytes of header, at least 256) in flight. */
static int window_for(size_t size, int window) {
  size_t block = 256;
  while (block < size + 192) block *= 2;
  size_t fit = MAX_IN_FLIGHT / block;
  if (fit < 1) fit = 1;
  return (size_t)window < fit ? window : (int)fit;
}

/* Page-aligned memory, as OSU's buffers are (where a buffer starts within
 * its page decides whether copies alias others 4 KiB apart); NULL if
 * there is none. */
static void *page_alloc(size_t size) {
  void *p = NULL;
  return posix_memalign(&p, 4096, size > 0 ? size : 1) == 0 ? p : NULL;
}

/* ---- rank 1 ------------------------------------------------------------- */

/* (Re)allocates *bufs to n buffers of at least size bytes, written once. */
static void ensure_buffers(char ***bufs, int *nbufs, size_t *cap, int n, size_t size) {
  if (n <= *nbufs && size <= *cap) return;
  for (int k = 0; k < *nbufs; ++k) free((*bufs)[k]);
  free(*bufs);
  *bufs = calloc((size_t)n, sizeof **bufs);
  if (!*bufs) die("out of memory");
  for (int k = 0; k < n; ++k) {
    (*bufs)[k] = page_alloc(size);
    if (!(*bufs)[k]) die("out of memory");
    memset((*bufs)[k], 2, size);
  }
  *nbufs = n;
  *cap = size;
}

static void serve(void) {
  char **bufs = NULL;
  int nbufs = 0;
  size_t cap = 0;
  MPI_Request *reqs = NULL;
  int nreqs = 0;
  for (;;) {
    struct command c;
    check(MPI_Recv(&c, 4, MPI_LONG, 0, kTagCmd, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    if (c.cmd == kCmdQuit) break;
    const size_t size = (size_t)c.size;
    const int window = (int)c.window;
    ensure_buffers(&bufs, &nbufs, &cap, window > 2 ? window : 2, size);
    if (c.cmd == kCmdLatency) {
      for (long i = 0; i < c.count; ++i) {
        check(
            MPI_Recv(bufs[0], (int)size, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
        check(MPI_Send(bufs[1], (int)size, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD), "MPI_Send");
      }
      continue;
    }
    if (window > nreqs) {
      free(reqs);
      reqs = calloc((size_t)window, sizeof *reqs);
      if (!reqs) die("out of memory");
      nreqs = window;
    }
    int ack = 0;
    for (long i = 0; i < c.count; ++i) {
      for (int k = 0; k < window; ++k) {
        check(MPI_Irecv(bufs[k], (int)size, MPI_CHAR, 0, kTagData, MPI_COMM_WORLD, &reqs[k]),
              "MPI_Irecv");
      }
      check(MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
      check(MPI_Send(&ack, 1, MPI_INT, 0, kTagAck, MPI_COMM_WORLD), "MPI_Send (ack)");
    }
  }
  for (int k = 0; k < nbufs; ++k) free(bufs[k]);
  free(bufs);
  free(reqs);
}

/* ---- rank 0 ------------------------------------------------------------- */

/* buf is what rank 0 sends, rbuf where it receives: as osu_latency, a
 * ping-pong never receives into the buffer it sends from (with one buffer
 * for both, Open MPI and MPICH took up to 2x longer at 64 KiB-1 MiB in
 * some runs, against OSU's figures in the same minutes). */
struct point {
  size_t size;
  int window;
  char *buf;
  MPI_Request *reqs;
  char *rbuf;
};

static void command(long cmd, size_t size, int window, long count) {
  struct command c = {cmd, (long)size, window, count};
  check(MPI_Send(&c, 4, MPI_LONG, 1, kTagCmd, MPI_COMM_WORLD), "MPI_Send (command)");
}

/* n round trips of p->size bytes; returns the seconds they took. */
static double latency_run(struct point *p, long n) {
  command(kCmdLatency, p->size, 1, n);
  const double t0 = anchor_clock_s();
  for (long i = 0; i < n; ++i) {
    check(MPI_Send(p->buf, (int)p->size, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD), "MPI_Send");
    check(MPI_Recv(p->rbuf, (int)p->size, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
  return anchor_clock_s() - t0;
}

/* n windows of p->window messages, each acked; returns the seconds. */
static double bandwidth_run(struct point *p, long n) {
  command(kCmdBandwidth, p->size, p->window, n);
  const double t0 = anchor_clock_s();
  for (long i = 0; i < n; ++i) {
    for (int k = 0; k < p->window; ++k) {
      check(MPI_Isend(p->buf, (int)p->size, MPI_CHAR, 1, kTagData, MPI_COMM_WORLD, &p->reqs[k]),
            "MPI_Isend");
    }
    check(MPI_Waitall(p->window, p->reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
    int ack = 0;
    check(MPI_Recv(&ack, 1, MPI_INT, 1, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv (ack)");
  }
  return anchor_clock_s() - t0;
}

static void drive(const struct options *o) {
  double *samples = calloc((size_t)o->reps, sizeof *samples);
  if (!samples) die("out of memory");
  for (int s = 0; s < o->nsizes; ++s) {
    struct point p = {o->sizes[s], 1, page_alloc(o->sizes[s]), NULL, page_alloc(o->sizes[s])};
    if (!p.buf || !p.rbuf) die("out of memory");
    memset(p.buf, 3, p.size);
    memset(p.rbuf, 3, p.size);
    if (s == 0) { /* the processes have just started: an untimed warm-up */
      struct point w = {1, 1, p.buf, NULL, p.rbuf};
      anchor_plan(latency_run, &w, o->seconds < 0.05 ? o->seconds : 0.05, MAX_ROUND_TRIPS);
    }
    long most = (long)(MAX_VOLUME / (double)p.size);
    if (most < 1000) most = 1000;
    if (most > MAX_ROUND_TRIPS) most = MAX_ROUND_TRIPS;
    const long n = anchor_plan(latency_run, &p, o->seconds, most);
    for (int r = 0; r < o->reps; ++r) samples[r] = latency_run(&p, n) / (double)n / 2 * 1e6;
    anchor_print_row("latency", p.size, samples, o->reps, "us");
    free(p.buf);
    free(p.rbuf);
  }
  for (int s = 0; s < o->nbw; ++s) {
    struct point p = {o->bw_sizes[s], window_for(o->bw_sizes[s], o->window), NULL, NULL, NULL};
    p.buf = page_alloc(p.size);
    p.reqs = calloc((size_t)p.window, sizeof *p.reqs);
    if (!p.buf || !p.reqs) die("out of memory");
    memset(p.buf, 4, p.size);
    const long n = anchor_plan(bandwidth_run, &p, o->seconds, 1L << 30);
    for (int r = 0; r < o->reps; ++r) {
      const double t = bandwidth_run(&p, n);
      samples[r] = (double)n * p.window * (double)p.size / t / 1e9;
    }
    anchor_print_row("bandwidth", p.size, samples, o->reps, "GB/s");
    free(p.buf);
    free(p.reqs);
  }
  command(kCmdQuit, 0, 0, 0);
  free(samples);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) die("run with exactly 2 ranks");
  struct options o;
  parse_options(argc, argv, &o);
  if (g_rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    for (char *c = version; *c; ++c) {
      if (*c == '\n' || *c == '\r') *c = ' ';
    }
    printf("# library: %.200s\n", version);
    printf("# %d rep(s) of ~%.3g s per point; window %d\n", o.reps, o.seconds, o.window);
    printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    drive(&o);
  } else {
    serve();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
