/* process_pingpong: one-way latency between two processes, run as
 *   roclrun -n 2 build/bench/rocl-pingpong [iterations]
 * with ROCL_TRANSPORTS choosing the path (e.g. tcp). Rank 0 sends, rank 1
 * sends the received buffer straight back (zero-copy hand-off to the
 * transport); one-way latency = round trip / 2, median of 5 repetitions.
 * A minimal C example of a process-to-process ping-pong; the full figures
 * (latency, bandwidth, rate, over shm and tcp) come from
 *   rocl-bench --transport shm,tcp
 * and, next to MPI, from scripts/bench-processes.sh. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what) {
  fprintf(stderr, "rocl-pingpong: %s: %s\n", what, rocl_last_error());
  exit(1);
}

static rocl_gid_t find(const char *rank) {
  for (int i = 0; i < 1000; ++i) {
    rocl_attrl_t *q = rocl_new_attrl(0);
    rocl_add_attr(q, "type", "pingpong", 8);
    rocl_add_attr(q, "rank", rank, 1);
    rocl_gid_t gid = ROCL_NULL_GID;
    int rc = rocl_query(&gid, q);
    rocl_kill_attrl(q);
    if (rc == ROCL_OK) return gid;
    usleep(10000);
  }
  die("peer never registered");
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *rank_env = getenv("ROCL_RANK");
  int rank = rank_env ? atoi(rank_env) : 0;
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (rocl_init() <= 0) die("rocl_init");
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "pingpong", 8);
  rocl_add_attr(a, "rank", rank ? "1" : "0", 1);
  int64_t me = rocl_register(a);
  rocl_kill_attrl(a);
  if (me <= 0) die("rocl_register");
  rocl_gid_t peer = find(rank ? "0" : "1");
  if (rank == 1) { /* echo until told to stop (tag 2) */
    for (;;) {
      void *buf = NULL;
      size_t len = 0;
      int tag = 0;
      if (rocl_recv((rocl_gid_t)me, peer, ROCL_ANY, &buf, NULL, &tag, &len, 30000)) die("recv");
      if (tag == 2) {
        rocl_bfret(buf);
        break;
      }
      if (rocl_bftoret(buf) || rocl_send((rocl_gid_t)me, peer, 1, buf, len)) die("send");
    }
    rocl_exit();
    return 0;
  }
  static const size_t sizes[] = {8, 4096, 65536, 1 << 20};
  const char *transports = getenv("ROCL_TRANSPORTS");
  printf("transport %s, %d round trips per repetition, 5 repetitions\n",
         transports ? transports : "default", iters);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    size_t n = sizes[s];
    double reps[5];
    void *buf = rocl_bfget(n);
    if (!buf) die("rocl_bfget");
    memset(buf, 1, n);
    for (int r = 0; r < 5; ++r) {
      double t0 = 0;
      for (int i = -100; i < iters; ++i) { /* 100 warm-up round trips */
        if (i == 0) t0 = now_us();
        size_t len = 0;
        if (rocl_bftoret(buf) || rocl_send((rocl_gid_t)me, peer, 1, buf, n)) die("send");
        if (rocl_recv((rocl_gid_t)me, peer, 1, &buf, NULL, NULL, &len, 10000)) die("recv");
        if (len != n) die("echo length");
      }
      reps[r] = (now_us() - t0) / iters / 2;
    }
    rocl_bfret(buf);
    qsort(reps, 5, sizeof reps[0], cmp);
    printf("%8zu B  one-way %8.2f us  (min %.2f, max %.2f)\n", n, reps[2], reps[0], reps[4]);
  }
  if (rocl_send((rocl_gid_t)me, peer, 2, NULL, 0)) die("stop");
  rocl_exit();
  return 0;
}
