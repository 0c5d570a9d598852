/* jpeg_pipeline.c - the JPEG pipeline on NCS. Processes 0..C-1 compress
 * (C = N/2; the master is one of them), process i + C decompresses what
 * process i compressed; alone, process 0 does both. The image is cut into
 * C * T horizontal strips: thread t of compressor i handles strip
 * i * T + t and talks only to thread t of the others, so while one thread
 * waits for its strip, its compressed strip or the result, the other
 * computes. With an odd number of processes the last one has no part. */
#define _POSIX_C_SOURCE 200809L
#include "jpeg_pipeline.h"

#include <math.h>
#include <ncs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

enum { kMaxThreads = 16, kQuality = 85, kChannels = 3 };

static const char *g_name;
static int g_me, g_processes, g_threads, g_compressors, g_width, g_height;
static unsigned char *g_image;    /* master: the original */
static unsigned char *g_combined; /* master: the parts as they came back */
static int g_image_ready;

#define MUST(call)                                                                              \
  do {                                                                                          \
    const int must_rc_ = (call);                                                                \
    if (must_rc_ != NCS_OK) {                                                                   \
      fprintf(stderr, "%s, process %d: %s: %s\n", g_name, g_me, #call, NCS_strerror(must_rc_)); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static int strips(void) {
  return g_compressors * g_threads;
}

static void strip_rows(int strip, int *first, int *count) {
  const long lo = (long)g_height * strip / strips(), hi = (long)g_height * (strip + 1) / strips();
  *first = (int)lo;
  *count = (int)(hi - lo);
}

static size_t strip_bytes(int strip) {
  int first, count;
  strip_rows(strip, &first, &count);
  return (size_t)count * g_width * kChannels;
}

static unsigned char *strip_of(unsigned char *image, int strip) {
  int first, count;
  strip_rows(strip, &first, &count);
  return image + (size_t)first * g_width * kChannels;
}

/* A photo-like test image: smooth gradients, edges and a little noise. */
static void make_image(unsigned char *image) {
  unsigned seed = 12345;
  for (int y = 0; y < g_height; ++y) {
    for (int x = 0; x < g_width; ++x) {
      unsigned char *px = image + ((size_t)y * g_width + x) * kChannels;
      seed = seed * 1103515245u + 12345u;
      const int noise = (int)((seed >> 16) % 9) - 4;
      const int ring =
          ((x - g_width / 2) * (x - g_width / 2) + (y - g_height / 3) * (y - g_height / 3)) / 997 %
          64;
      px[0] = (unsigned char)((x * 255 / g_width + noise + 256) % 256);
      px[1] = (unsigned char)((y * 255 / g_height + ring + noise + 256) % 256);
      px[2] = (unsigned char)(((x + y) % 128 < 64 ? 200 : 40) + noise);
    }
  }
}

static unsigned char *compress(const unsigned char *rows, int count, unsigned long *size) {
  tjhandle tj = tjInitCompress();
  unsigned char *jpeg = NULL;
  if (tj == NULL || tjCompress2(tj, rows, g_width, 0, count, TJPF_RGB, &jpeg, size, TJSAMP_420,
                                kQuality, TJFLAG_ACCURATEDCT) != 0) {
    fprintf(stderr, "%s: compress: %s\n", g_name, tjGetErrorStr2(tj));
    exit(1);
  }
  tjDestroy(tj);
  return jpeg;
}

static void decompress(const unsigned char *jpeg, unsigned long size, unsigned char *rows,
                       int count) {
  tjhandle tj = tjInitDecompress();
  if (tj == NULL ||
      tjDecompress2(tj, jpeg, size, rows, g_width, 0, count, TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
    fprintf(stderr, "%s: decompress: %s\n", g_name, tjGetErrorStr2(tj));
    exit(1);
  }
  tjDestroy(tj);
}

static int partner_of(int compressor) {
  return compressor + g_compressors;
}

/* The master's thread 0 makes the image (the paper reads it from a file)
 * and wakes the other threads, which wait for it (figure 17). */
static void master_distributes(int t) {
  if (t == 0) {
    make_image(g_image);
    g_image_ready = 1;
    for (int other = 1; other < g_threads; ++other) MUST(NCS_unblock(other));
  }
  while (!g_image_ready) MUST(NCS_block());
  for (int i = 1; i < g_compressors; ++i) {
    const int strip = i * g_threads + t;
    MUST(NCS_send(t, 0, t, i, strip_of(g_image, strip), strip_bytes(strip)));
  }
}

static void compressor(int t) {
  const int strip = g_me * g_threads + t;
  int first, count;
  strip_rows(strip, &first, &count);
  void *rows = g_me == 0 ? strip_of(g_image, strip) : NULL;
  size_t size = 0;
  if (g_me != 0) MUST(NCS_recv(t, 0, t, g_me, &rows, &size));
  unsigned long jpeg_size = 0;
  unsigned char *jpeg = compress(rows, count, &jpeg_size);
  if (g_me != 0) NCS_free(rows);
  MUST(NCS_send(t, g_me, t, partner_of(g_me), jpeg, jpeg_size));
  tjFree(jpeg);
}

static void decompressor(int t) {
  const int from = g_me - g_compressors;
  const int strip = from * g_threads + t;
  int first, count;
  strip_rows(strip, &first, &count);
  void *jpeg = NULL;
  size_t size = 0;
  MUST(NCS_recv(t, from, t, g_me, &jpeg, &size));
  unsigned char *rows = malloc(strip_bytes(strip) + 1);
  decompress(jpeg, size, rows, count);
  NCS_free(jpeg);
  MUST(NCS_send(t, g_me, t, 0, rows, strip_bytes(strip)));
  free(rows);
}

/* The parts come back in any order (NCS_ANY): the sender says which. */
static void master_combines(int t) {
  for (int i = 0; i < g_compressors; ++i) {
    void *rows = NULL;
    size_t size = 0;
    NCS_id from;
    MUST(NCS_recv_from(t, NCS_ANY, t, 0, &rows, &size, &from));
    const int compressor = from.process - g_compressors;
    const int strip = compressor * g_threads + t;
    if (size != strip_bytes(strip)) {
      fprintf(stderr, "%s: strip %d came back with %zu bytes\n", g_name, strip, size);
      exit(1);
    }
    memcpy(strip_of(g_combined, strip), rows, size);
    NCS_free(rows);
  }
}

/* Alone, a thread compresses its strip and decompresses it straight into
 * the result, as the MPI version does: no message to itself. */
static void alone(int t) {
  const int strip = t;
  int first, count;
  strip_rows(strip, &first, &count);
  unsigned long jpeg_size = 0;
  unsigned char *jpeg = compress(strip_of(g_image, strip), count, &jpeg_size);
  decompress(jpeg, jpeg_size, strip_of(g_combined, strip), count);
  tjFree(jpeg);
}

static void thread_main(void *arg) {
  const int t = *(const int *)arg;
  const int decompresses = g_me >= g_compressors && g_me < 2 * g_compressors;
  if (g_me == 0) master_distributes(t);
  if (g_processes == 1) {
    alone(t);
    return;
  }
  if (g_me < g_compressors) compressor(t);
  if (decompresses) decompressor(t);
  if (g_me == 0) master_combines(t);
}

/* The same strips compressed and decompressed one after the other. */
static int check(double seconds) {
  const size_t bytes = (size_t)g_width * g_height * kChannels;
  unsigned char *reference = malloc(bytes);
  double squared_error = 0;
  for (int strip = 0; strip < strips(); ++strip) {
    int first, count;
    strip_rows(strip, &first, &count);
    unsigned long size = 0;
    unsigned char *jpeg = compress(strip_of(g_image, strip), count, &size);
    decompress(jpeg, size, strip_of(reference, strip), count);
    tjFree(jpeg);
  }
  for (size_t i = 0; i < bytes; ++i) {
    const double d = (double)reference[i] - g_image[i];
    squared_error += d * d;
  }
  const double psnr = 10 * log10(255.0 * 255.0 * (double)bytes / (squared_error + 1e-9));
  const int same = memcmp(reference, g_combined, bytes) == 0;
  free(reference);
  if (!same || psnr < 20) { /* below 20 dB the codec did not work */
    printf("%s: FAILED: the combined image %s the serial one (PSNR %.1f dB)\n", g_name,
           same ? "equals" : "differs from", psnr);
    return 1;
  }
  printf("%s: OK %dx%d processes=%d threads=%d PSNR=%.1f dB time=%.6f s\n", g_name, g_width,
         g_height, g_processes, g_threads, psnr, seconds);
  return 0;
}

int jpeg_pipeline_main(const char *name, int threads, int argc, char **argv) {
  g_name = name;
  g_threads = threads;
  g_width = argc > 1 ? atoi(argv[1]) : 1200;
  g_height = argc > 2 ? atoi(argv[2]) : 800;
  if (g_width < 8 || g_height < 8 || g_width > 16384 || g_height > 16384 || threads < 1 ||
      threads > kMaxThreads) {
    fprintf(stderr, "usage: %s [width [height]]  (8..16384)\n", argv[0]);
    return 2;
  }
  MUST(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_processes = NCS_get_num_processes();
  g_compressors = g_processes == 1 ? 1 : g_processes / 2;
  if (g_height < strips()) {
    fprintf(stderr, "%s: %d rows cannot make %d strips\n", name, g_height, strips());
    return 2;
  }
  if (g_me == 0) {
    g_image = malloc((size_t)g_width * g_height * kChannels);
    g_combined = calloc((size_t)g_width * g_height, kChannels);
  }
  static int ids[kMaxThreads];
  for (int t = 0; t < threads; ++t) {
    ids[t] = t;
    if (NCS_t_create(thread_main, &ids[t], 8) != t) return 1;
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
