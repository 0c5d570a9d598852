/* jpeg_mpi - JPEG compression and decompression (section 5.2), single-
 * threaded message passing in plain MPI: the same pipeline as ncs_jpeg_st.
 * Ranks 0..C-1 compress (C = N/2; the master, rank 0, is one of them) a
 * horizontal strip each, rank i + C decompresses what rank i compressed
 * and sends it to the master, which combines the strips in the order they
 * come and checks the result against the same strips compressed and
 * decompressed serially. Alone, rank 0 does all; with an odd number of
 * ranks the last one has no part.
 *
 *   roclrun -n 4 jpeg_mpi [width [height]]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

enum { kQuality = 85, kChannels = 3, kTagRows = 1, kTagJpeg = 2, kTagBack = 3 };
static const char *const kName = "jpeg_mpi";

static int g_me, g_processes, g_compressors, g_width, g_height;
static unsigned char *g_image;    /* master: the original */
static unsigned char *g_combined; /* master: the strips as they came back */

static void strip_rows(int strip, int *first, int *count) {
  const long lo = (long)g_height * strip / g_compressors;
  const long hi = (long)g_height * (strip + 1) / g_compressors;
  *first = (int)lo;
  *count = (int)(hi - lo);
}

static int strip_bytes(int strip) {
  int first, count;
  strip_rows(strip, &first, &count);
  return count * g_width * kChannels;
}

static unsigned char *strip_of(unsigned char *image, int strip) {
  int first, count;
  strip_rows(strip, &first, &count);
  return image + (size_t)first * g_width * kChannels;
}

static void *must_malloc(size_t bytes) {
  void *p = malloc(bytes + 1);
  if (p == NULL) {
    fprintf(stderr, "%s, rank %d: out of memory\n", kName, g_me);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
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
    fprintf(stderr, "%s: compress: %s\n", kName, tjGetErrorStr2(tj));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  tjDestroy(tj);
  return jpeg;
}

static void decompress(const unsigned char *jpeg, unsigned long size, unsigned char *rows,
                       int count) {
  tjhandle tj = tjInitDecompress();
  if (tj == NULL ||
      tjDecompress2(tj, jpeg, size, rows, g_width, 0, count, TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
    fprintf(stderr, "%s: decompress: %s\n", kName, tjGetErrorStr2(tj));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  tjDestroy(tj);
}

static void alone(void) {
  make_image(g_image);
  int first, count;
  strip_rows(0, &first, &count);
  unsigned long size = 0;
  unsigned char *jpeg = compress(g_image, count, &size);
  decompress(jpeg, size, g_combined, count);
  tjFree(jpeg);
}

static void compressor(void) {
  const int strip = g_me, bytes = strip_bytes(strip);
  int first, count;
  strip_rows(strip, &first, &count);
  unsigned char *rows = g_me == 0 ? strip_of(g_image, strip) : must_malloc((size_t)bytes);
  if (g_me != 0)
    MPI_Recv(rows, bytes, MPI_UNSIGNED_CHAR, 0, kTagRows, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  unsigned long size = 0;
  unsigned char *jpeg = compress(rows, count, &size);
  if (g_me != 0) free(rows);
  MPI_Send(jpeg, (int)size, MPI_UNSIGNED_CHAR, g_me + g_compressors, kTagJpeg, MPI_COMM_WORLD);
  tjFree(jpeg);
}

static void decompressor(void) {
  const int from = g_me - g_compressors, bytes = strip_bytes(from);
  int first, count, size;
  strip_rows(from, &first, &count);
  MPI_Status status;
  MPI_Probe(from, kTagJpeg, MPI_COMM_WORLD, &status);
  MPI_Get_count(&status, MPI_UNSIGNED_CHAR, &size);
  unsigned char *jpeg = must_malloc((size_t)size);
  MPI_Recv(jpeg, size, MPI_UNSIGNED_CHAR, from, kTagJpeg, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  unsigned char *rows = must_malloc((size_t)bytes);
  decompress(jpeg, (unsigned long)size, rows, count);
  free(jpeg);
  MPI_Send(rows, bytes, MPI_UNSIGNED_CHAR, 0, kTagBack, MPI_COMM_WORLD);
  free(rows);
}

static void master(void) {
  make_image(g_image);
  for (int i = 1; i < g_compressors; ++i)
    MPI_Send(strip_of(g_image, i), strip_bytes(i), MPI_UNSIGNED_CHAR, i, kTagRows, MPI_COMM_WORLD);
  compressor();
  /* The strips come back in any order: the sender says which. */
  unsigned char *rows = must_malloc((size_t)g_width * g_height * kChannels);
  for (int i = 0; i < g_compressors; ++i) {
    MPI_Status status;
    int size;
    MPI_Recv(rows, g_width * g_height * kChannels, MPI_UNSIGNED_CHAR, MPI_ANY_SOURCE, kTagBack,
             MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_UNSIGNED_CHAR, &size);
    const int strip = status.MPI_SOURCE - g_compressors;
    if (strip < 0 || strip >= g_compressors || size != strip_bytes(strip)) {
      fprintf(stderr, "%s: strip %d came back with %d bytes\n", kName, strip, size);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memcpy(strip_of(g_combined, strip), rows, (size_t)size);
  }
  free(rows);
}

/* The same strips compressed and decompressed one after the other. */
static int check(double seconds) {
  const size_t bytes = (size_t)g_width * g_height * kChannels;
  unsigned char *reference = must_malloc(bytes);
  double squared_error = 0;
  for (int strip = 0; strip < g_compressors; ++strip) {
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
    printf("%s: FAILED: the combined image %s the serial one (PSNR %.1f dB)\n", kName,
           same ? "equals" : "differs from", psnr);
    return 1;
  }
  printf("%s: OK %dx%d processes=%d threads=1 PSNR=%.1f dB time=%.6f s\n", kName, g_width, g_height,
         g_processes, psnr, seconds);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
  MPI_Comm_size(MPI_COMM_WORLD, &g_processes);
  g_width = argc > 1 ? atoi(argv[1]) : 1200;
  g_height = argc > 2 ? atoi(argv[2]) : 800;
  g_compressors = g_processes == 1 ? 1 : g_processes / 2;
  if (g_width < 8 || g_height < 8 || g_width > 16384 || g_height > 16384 ||
      g_height < g_compressors) {
    if (g_me == 0) fprintf(stderr, "usage: %s [width [height]]  (8..16384)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  if (g_me == 0) {
    g_image = must_malloc((size_t)g_width * g_height * kChannels);
    g_combined = calloc((size_t)g_width * g_height, kChannels);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (g_processes == 1) {
    alone();
  } else if (g_me == 0) {
    master();
  } else if (g_me < g_compressors) {
    compressor();
  } else if (g_me < 2 * g_compressors) {
    decompressor();
  }
  const double seconds = MPI_Wtime() - start;
  const int status = g_me == 0 ? check(seconds) : 0;
  MPI_Finalize();
  return status;
}
