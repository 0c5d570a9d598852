/* fft_dif.c - radix-2 DIF FFT over W = processes x threads workers. Worker
 * w (thread t of process p, w = p * T + t) holds points [w L, (w + 1) L),
 * L = M / W. The first log2 W stages pair points L or more apart: a worker
 * sends its block to its partner (w xor d) and computes its half of the
 * butterflies from both blocks (the lower worker the sums, the upper the
 * twiddled differences); the last stage of them pairs threads of one
 * process when T = 2. The remaining log2 L stages are local. The output
 * is in bit-reversed order; process 0 (the host) sends each worker its
 * block of every sample set, collects the results and reorders them. */
#define _POSIX_C_SOURCE 200809L
#include "fft_dif.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <ncs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxThreads = 16 };
static const double kPi = 3.14159265358979323846;

typedef double complex sample;

static const char *g_name;
static int g_me, g_processes, g_threads, g_workers, g_points, g_block, g_sets;
static sample *g_twiddles; /* exp(-2 pi i e / M), e < M / 2 */
static sample *g_input;    /* host: every set, in order */
static sample *g_output;   /* host: every set's transform, reordered */

#define MUST(call)                                                                              \
  do {                                                                                          \
    const int must_rc_ = (call);                                                                \
    if (must_rc_ != NCS_OK) {                                                                   \
      fprintf(stderr, "%s, process %d: %s: %s\n", g_name, g_me, #call, NCS_strerror(must_rc_)); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static int thread_of(int worker) {
  return worker % g_threads;
}
static int process_of(int worker) {
  return worker / g_threads;
}
static size_t block_bytes(void) {
  return (size_t)g_block * sizeof(sample);
}

static int log2_of(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

static unsigned reverse_bits(unsigned v, int bits) {
  unsigned r = 0;
  for (int i = 0; i < bits; ++i, v >>= 1) r = (r << 1) | (v & 1);
  return r;
}

static sample twiddle(int position, int half) {
  return g_twiddles[(position % half) * (g_points / (2 * half))];
}

/* A stage whose butterflies pair this worker's points with its partner's. */
static void exchange_stage(int w, int half, sample *mine, sample *theirs) {
  const int partner = w ^ (half / g_block);
  const int me = thread_of(w);
  MUST(NCS_send(me, g_me, thread_of(partner), process_of(partner), mine, block_bytes()));
  void *into = theirs;
  size_t size = block_bytes();
  MUST(NCS_recv(thread_of(partner), process_of(partner), me, g_me, &into, &size));
  const int lower = (w & (half / g_block)) == 0;
  for (int j = 0; j < g_block; ++j) {
    if (lower) {
      mine[j] = mine[j] + theirs[j];
    } else {
      mine[j] = (theirs[j] - mine[j]) * twiddle(w * g_block + j, half);
    }
  }
}

static void local_stage(int w, int half, sample *mine) {
  for (int start = 0; start < g_block; start += 2 * half) {
    for (int j = start; j < start + half; ++j) {
      const sample a = mine[j], b = mine[j + half];
      mine[j] = a + b;
      mine[j + half] = (a - b) * twiddle(w * g_block + j, half);
    }
  }
}

static void transform_block(int w, sample *mine, sample *scratch) {
  for (int half = g_points / 2; half >= 1; half /= 2) {
    if (half >= g_block) {
      exchange_stage(w, half, mine, scratch);
    } else {
      local_stage(w, half, mine);
      NCS_yield(); /* between stages: let the process's other worker run */
    }
  }
}

/* Thread t of the host serves thread t of every process, itself included. */
static void host_sends(int t, int set) {
  for (int p = 1; p < g_processes; ++p) {
    const int w = p * g_threads + t;
    const sample *block = g_input + (size_t)set * g_points + (size_t)w * g_block;
    MUST(NCS_send(t, 0, t, p, block, block_bytes()));
  }
}

static void host_collects(int t, int set, const sample *own) {
  const int bits = log2_of(g_points);
  sample *out = g_output + (size_t)set * g_points;
  for (int p = 0; p < g_processes; ++p) {
    const int w = p * g_threads + t;
    const sample *block = own;
    void *received = NULL;
    size_t size = 0;
    if (p != 0) {
      MUST(NCS_recv(t, p, t, 0, &received, &size));
      block = received;
    }
    for (int j = 0; j < g_block; ++j)
      out[reverse_bits((unsigned)(w * g_block + j), bits)] = block[j];
    NCS_free(received);
  }
}

static void worker_main(void *arg) {
  const int t = *(const int *)arg, w = g_me * g_threads + t;
  sample *mine = malloc(block_bytes()), *scratch = malloc(block_bytes());
  for (int set = 0; set < g_sets; ++set) {
    if (g_me == 0) {
      host_sends(t, set);
      memcpy(mine, g_input + (size_t)set * g_points + (size_t)w * g_block, block_bytes());
    } else {
      void *into = mine;
      size_t size = block_bytes();
      MUST(NCS_recv(t, 0, t, g_me, &into, &size));
    }
    transform_block(w, mine, scratch);
    if (g_me == 0) {
      host_collects(t, set, mine);
    } else {
      MUST(NCS_send(t, g_me, t, 0, mine, block_bytes()));
    }
  }
  free(mine);
  free(scratch);
}

static void make_input(void) {
  unsigned seed = 2024;
  for (int s = 0; s < g_sets; ++s) {
    for (int k = 0; k < g_points; ++k) {
      seed = seed * 1103515245u + 12345u;
      const double x = 2 * kPi * k / g_points, noise = ((seed >> 16) % 1000) / 1000.0 - 0.5;
      g_input[(size_t)s * g_points + k] = cos(3 * x) + 0.5 * sin(17 * x + s) + 0.1 * noise +
                                          I * (0.25 * cos(40 * x) + 0.05 * noise);
    }
  }
}

static int check(double seconds) {
  fftw_complex *in = fftw_malloc(sizeof(fftw_complex) * g_points);
  fftw_complex *out = fftw_malloc(sizeof(fftw_complex) * g_points);
  fftw_plan plan = fftw_plan_dft_1d(g_points, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  double worst = 0, largest = 0;
  for (int s = 0; s < g_sets; ++s) {
    memcpy(in, g_input + (size_t)s * g_points, sizeof(fftw_complex) * g_points);
    fftw_execute(plan);
    for (int k = 0; k < g_points; ++k) {
      const double diff = cabs(out[k] - g_output[(size_t)s * g_points + k]);
      worst = diff > worst ? diff : worst;
      largest = cabs(out[k]) > largest ? cabs(out[k]) : largest;
    }
  }
  fftw_destroy_plan(plan);
  fftw_free(in);
  fftw_free(out);
  if (!(worst <= 1e-9 * (1 + largest))) {
    printf("%s: FAILED: differs from FFTW by %g (largest value %g)\n", g_name, worst, largest);
    return 1;
  }
  printf("%s: OK M=%d sets=%d processes=%d threads=%d max|diff|=%.2g time=%.6f s\n", g_name,
         g_points, g_sets, g_processes, g_threads, worst, seconds);
  return 0;
}

static int read_args(int argc, char **argv) {
  g_points = argc > 1 ? atoi(argv[1]) : 16384;
  g_sets = argc > 2 ? atoi(argv[2]) : 8;
  g_workers = g_processes * g_threads;
  const int power_of_two = g_points > 1 && (g_points & (g_points - 1)) == 0;
  if (!power_of_two || g_sets < 1 || (g_workers & (g_workers - 1)) != 0 || g_workers > g_points) {
    fprintf(stderr,
            "usage: %s [M [sets]]: M a power of two >= the workers (%d), and the workers "
            "(processes x threads) a power of two\n",
            argv[0], g_workers);
    return 2;
  }
  g_block = g_points / g_workers;
  return 0;
}

int fft_dif_main(const char *name, int threads, int argc, char **argv) {
  g_name = name;
  g_threads = threads;
  MUST(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_processes = NCS_get_num_processes();
  if (read_args(argc, argv) != 0) return 2;
  g_twiddles = malloc(sizeof(sample) * (size_t)(g_points / 2));
  for (int e = 0; e < g_points / 2; ++e) g_twiddles[e] = cexp(-2 * kPi * I * e / g_points);
  if (g_me == 0) {
    g_input = malloc(sizeof(sample) * (size_t)g_points * g_sets);
    g_output = malloc(sizeof(sample) * (size_t)g_points * g_sets);
    make_input();
  }
  static int ids[kMaxThreads];
  for (int t = 0; t < threads; ++t) {
    ids[t] = t;
    if (NCS_t_create(worker_main, &ids[t], 8) != t) return 1;
  }
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  MUST(NCS_start());
  clock_gettime(CLOCK_MONOTONIC, &end);
  const double seconds = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9;
  const int status = g_me == 0 ? check(seconds) : 0;
  MUST(NCS_finalize());
  return status;
}
