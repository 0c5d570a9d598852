/* fft_mpi - the DIF FFT of section 5.3 (figure 19), single-threaded message
 * passing in plain MPI: the same algorithm as ncs_fft_st. Rank w holds
 * points [w L, (w + 1) L), L = M / N. The first log2 N stages pair points
 * L or more apart: a rank swaps its block with its partner (w xor d) and
 * computes its half of the butterflies (the lower rank the sums, the upper
 * the twiddled differences); the remaining log2 L stages are local. The
 * output is in bit-reversed order; rank 0 (the host) sends each rank its
 * block of every sample set, collects the results, reorders them and
 * checks every set against FFTW.
 *
 *   roclrun -n 4 fft_mpi [M [sets]]
 */
#define _POSIX_C_SOURCE 200809L
#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kTagIn = 1, kTagSwap = 2, kTagOut = 3 };
static const double kPi = 3.14159265358979323846;
static const char *const kName = "fft_mpi";

/* A sample travels as two MPI_DOUBLEs (C11 lays out double complex so). */
typedef double complex sample;

static int g_me, g_processes, g_points, g_block, g_sets;
static sample *g_twiddles; /* exp(-2 pi i e / M), e < M / 2 */
static sample *g_input;    /* host: every set, in order */
static sample *g_output;   /* host: every set's transform, reordered */

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

static void exchange_stage(int half, sample *mine, sample *theirs) {
  const int w = g_me, partner = w ^ (half / g_block);
  MPI_Sendrecv(mine, 2 * g_block, MPI_DOUBLE, partner, kTagSwap, theirs, 2 * g_block, MPI_DOUBLE,
               partner, kTagSwap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  const int lower = (w & (half / g_block)) == 0;
  for (int j = 0; j < g_block; ++j) {
    if (lower) {
      mine[j] = mine[j] + theirs[j];
    } else {
      mine[j] = (theirs[j] - mine[j]) * twiddle(w * g_block + j, half);
    }
  }
}

static void local_stage(int half, sample *mine) {
  for (int start = 0; start < g_block; start += 2 * half) {
    for (int j = start; j < start + half; ++j) {
      const sample a = mine[j], b = mine[j + half];
      mine[j] = a + b;
      mine[j + half] = (a - b) * twiddle(g_me * g_block + j, half);
    }
  }
}

static void transform_block(sample *mine, sample *scratch) {
  for (int half = g_points / 2; half >= 1; half /= 2) {
    if (half >= g_block) {
      exchange_stage(half, mine, scratch);
    } else {
      local_stage(half, mine);
    }
  }
}

static void host_collects(int set, sample *own, sample *scratch) {
  const int bits = log2_of(g_points);
  sample *out = g_output + (size_t)set * g_points;
  for (int p = 0; p < g_processes; ++p) {
    const sample *block = own;
    if (p != 0) {
      MPI_Recv(scratch, 2 * g_block, MPI_DOUBLE, p, kTagOut, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      block = scratch;
    }
    for (int j = 0; j < g_block; ++j)
      out[reverse_bits((unsigned)(p * g_block + j), bits)] = block[j];
  }
}

static void run(void) {
  sample *mine = malloc(sizeof(sample) * (size_t)g_block);
  sample *scratch = malloc(sizeof(sample) * (size_t)g_block);
  for (int set = 0; set < g_sets; ++set) {
    if (g_me == 0) {
      const sample *in = g_input + (size_t)set * g_points;
      for (int p = 1; p < g_processes; ++p)
        MPI_Send(in + (size_t)p * g_block, 2 * g_block, MPI_DOUBLE, p, kTagIn, MPI_COMM_WORLD);
      memcpy(mine, in, sizeof(sample) * (size_t)g_block);
    } else {
      MPI_Recv(mine, 2 * g_block, MPI_DOUBLE, 0, kTagIn, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    transform_block(mine, scratch);
    if (g_me == 0) {
      host_collects(set, mine, scratch);
    } else {
      MPI_Send(mine, 2 * g_block, MPI_DOUBLE, 0, kTagOut, MPI_COMM_WORLD);
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
    printf("%s: FAILED: differs from FFTW by %g (largest value %g)\n", kName, worst, largest);
    return 1;
  }
  printf("%s: OK M=%d sets=%d processes=%d threads=1 max|diff|=%.2g time=%.6f s\n", kName, g_points,
         g_sets, g_processes, worst, seconds);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
  MPI_Comm_size(MPI_COMM_WORLD, &g_processes);
  g_points = argc > 1 ? atoi(argv[1]) : 16384;
  g_sets = argc > 2 ? atoi(argv[2]) : 8;
  const int power_of_two = g_points > 1 && (g_points & (g_points - 1)) == 0;
  if (!power_of_two || g_sets < 1 || (g_processes & (g_processes - 1)) != 0 ||
      g_processes > g_points) {
    if (g_me == 0)
      fprintf(stderr,
              "usage: %s [M [sets]]: M a power of two >= the processes (%d), and the processes "
              "a power of two\n",
              argv[0], g_processes);
    MPI_Finalize();
    return 2;
  }
  g_block = g_points / g_processes;
  g_twiddles = malloc(sizeof(sample) * (size_t)(g_points / 2));
  for (int e = 0; e < g_points / 2; ++e) g_twiddles[e] = cexp(-2 * kPi * I * e / g_points);
  if (g_me == 0) {
    g_input = malloc(sizeof(sample) * (size_t)g_points * g_sets);
    g_output = malloc(sizeof(sample) * (size_t)g_points * g_sets);
    make_input();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  run();
  const double seconds = MPI_Wtime() - start;
  const int status = g_me == 0 ? check(seconds) : 0;
  MPI_Finalize();
  return status;
}
