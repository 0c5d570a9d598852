/* pairs.c - how PVM's message rate and transfer rate scale with the number
 * of tasks: T pairs of spawned tasks ping-pong at once, each pair on its
 * own, and the parent adds up what they moved. Written to PVM 3.4's
 * interface only, like pingpong.c, so that the same source builds against
 * rocl's PVM and PVM's own libpvm3 (compare_with_pvm.sh runs both).
 *
 * Usage: pairs [direct] [T ...]   (T: pairs at once, default 1 2 4;
 *                                  "direct": pvm_setopt(PvmRoute, PvmRouteDirect)
 *                                  in every task)
 * For each T and size (8 B, 1 MiB) the parent spawns 2T tasks, tells each
 * its partner and starts them together; each pair makes a fixed number of
 * round trips (pack, send, receive, unpack on both sides). Prints one line
 * per point: pairs, bytes, the mean round trip of a pair in microseconds
 * and the transfer rate of all pairs together in MB/s (both ways: 2 x
 * bytes x round trips x pairs over the slowest pair's time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "pvm3.h"

enum { kSetup = 10, kReady, kGo, kResult, kPing, kMaxPairs = 16 };

static double now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  return tv.tv_sec * 1e6 + tv.tv_usec;
}

/* A spawned task: its partner, whether it starts the round trips, the
 * size and count; it reports its time to the parent. */
static void member(void) {
  int parent = pvm_parent(), partner = 0, first = 0, size = 0, rounds = 0, direct = 0, i;
  double start, elapsed;
  char *buf;
  pvm_recv(parent, kSetup);
  pvm_upkint(&partner, 1, 1);
  pvm_upkint(&first, 1, 1);
  pvm_upkint(&size, 1, 1);
  pvm_upkint(&rounds, 1, 1);
  pvm_upkint(&direct, 1, 1);
  if (direct) pvm_setopt(PvmRoute, PvmRouteDirect);
  buf = calloc(1, size > 0 ? (size_t)size : 1);
  pvm_initsend(PvmDataRaw);
  pvm_send(parent, kReady);
  pvm_recv(parent, kGo);
  start = now_us();
  for (i = 0; i < rounds; ++i) {
    if (first) {
      pvm_initsend(PvmDataRaw);
      pvm_pkbyte(buf, size, 1);
      pvm_send(partner, kPing);
      pvm_recv(partner, kPing);
      pvm_upkbyte(buf, size, 1);
    } else {
      pvm_recv(partner, kPing);
      pvm_upkbyte(buf, size, 1);
      pvm_initsend(PvmDataRaw);
      pvm_pkbyte(buf, size, 1);
      pvm_send(partner, kPing);
    }
  }
  elapsed = now_us() - start;
  pvm_initsend(PvmDataRaw);
  pvm_pkdouble(&elapsed, 1, 1);
  pvm_send(parent, kResult);
  free(buf);
  pvm_exit();
}

/* One point: pairs pairs ping-pong size bytes rounds times. */
static int run_point(const char *program, int pairs, int size, int rounds, int direct) {
  int tids[2 * kMaxPairs], n = 2 * pairs, i;
  double slowest = 0, total = 0;
  if (pvm_spawn((char *)program, 0, PvmTaskDefault, "", n, tids) != n) {
    fprintf(stderr, "pairs: cannot spawn %d tasks of %s\n", n, program);
    return 1;
  }
  for (i = 0; i < n; ++i) {
    int partner = tids[i ^ 1], first = (i & 1) == 0;
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&partner, 1, 1);
    pvm_pkint(&first, 1, 1);
    pvm_pkint(&size, 1, 1);
    pvm_pkint(&rounds, 1, 1);
    pvm_pkint(&direct, 1, 1);
    pvm_send(tids[i], kSetup);
  }
  for (i = 0; i < n; ++i) pvm_recv(-1, kReady);
  pvm_initsend(PvmDataRaw);
  pvm_mcast(tids, n, kGo);
  for (i = 0; i < n; ++i) {
    double t = 0;
    pvm_recv(-1, kResult);
    pvm_upkdouble(&t, 1, 1);
    total += t;
    if (t > slowest) slowest = t;
  }
  printf("%6d %10d %12.2f %12.1f\n", pairs, size, total / n / rounds,
         2.0 * size * rounds * pairs / slowest);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  static const int sizes[] = {8, 1 << 20};
  int counts[kMaxPairs], n_counts = 0, direct = 0, a, c, s;
  if (pvm_parent() > 0) {
    member();
    return 0;
  }
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "direct") == 0) {
      direct = 1;
    } else {
      const int t = atoi(argv[a]);
      if (t < 1 || t > kMaxPairs || n_counts == kMaxPairs) {
        fprintf(stderr, "pairs: pairs must be 1..%d, not '%s'\n", kMaxPairs, argv[a]);
        return 2;
      }
      counts[n_counts++] = t;
    }
  }
  if (n_counts == 0) {
    counts[0] = 1, counts[1] = 2, counts[2] = 4;
    n_counts = 3;
  }
  if (pvm_mytid() < 0) return 1;
  if (direct) pvm_setopt(PvmRoute, PvmRouteDirect);
  printf("%6s %10s %12s %12s\n", "pairs", "bytes", "rtt_us", "MB/s");
  for (c = 0; c < n_counts; ++c) {
    for (s = 0; s < 2; ++s) {
      const int rounds = sizes[s] <= 1024 ? 5000 : 100;
      if (run_point(argv[0], counts[c], sizes[s], rounds, direct) != 0) {
        pvm_exit();
        return 1;
      }
    }
  }
  pvm_exit();
  return 0;
}
