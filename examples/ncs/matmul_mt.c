/* matmul_mt - matrix multiplication, multithreaded NCS (the paper's figure
 * 14): T user threads per process (default 2). Thread t of the host
 * (process 0) sends a block of A's rows to thread t of each node, thread 0
 * also all of B (once per node: its threads share it), multiplies its own
 * block and collects thread t's blocks of C. A node's thread that waits for
 * its rows lets the others compute: communication overlaps computation.
 *
 *   roclrun -n 4 matmul_mt [n [T]]
 */
#include <ncs.h>
#include <stdio.h>
#include <stdlib.h>

#include "matrix.h"

enum { kMaxThreads = 64 };

static matrix_problem g_m;
static int g_me, g_processes, g_threads;
static const double *g_b; /* a node's B, once thread 0 has it */

#define MUST(call)                                                                             \
  do {                                                                                         \
    const int must_rc_ = (call);                                                               \
    if (must_rc_ != NCS_OK) {                                                                  \
      fprintf(stderr, "matmul_mt, process %d: %s: %s\n", g_me, #call, NCS_strerror(must_rc_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static size_t row_bytes(int rows) {
  return (size_t)rows * (size_t)g_m.n * sizeof(double);
}

/* Rows of thread t of process p. */
static void rows_of(int p, int t, int *first, int *count) {
  matrix_block_rows(g_m.n, g_processes * g_threads, p * g_threads + t, first, count);
}

static void host_thread(int t) {
  const int n = g_m.n;
  int first, count;
  for (int p = 1; p < g_processes; ++p) {
    if (t == 0) MUST(NCS_send(0, 0, 0, p, g_m.b, row_bytes(n)));
    rows_of(p, t, &first, &count);
    MUST(NCS_send(t, 0, t, p, g_m.a + (size_t)first * n, row_bytes(count)));
  }
  rows_of(0, t, &first, &count);
  matrix_multiply_rows(g_m.a + (size_t)first * n, g_m.b, g_m.c + (size_t)first * n, count, n,
                       NCS_yield);
  for (int p = 1; p < g_processes; ++p) {
    rows_of(p, t, &first, &count);
    void *into = g_m.c + (size_t)first * n;
    size_t size = row_bytes(count);
    MUST(NCS_recv(t, p, t, 0, &into, &size));
  }
}

static void receive_b(int t) {
  if (t != 0) {
    while (g_b == NULL) MUST(NCS_block()); /* thread 0 unblocks us */
    return;
  }
  void *b = NULL;
  size_t size = 0;
  MUST(NCS_recv(0, 0, 0, g_me, &b, &size));
  if (size != row_bytes(g_m.n)) {
    fprintf(stderr, "matmul_mt, process %d: B has %zu bytes\n", g_me, size);
    exit(1);
  }
  g_b = b;
  for (int other = 1; other < g_threads; ++other) MUST(NCS_unblock(other));
}

static void node_thread(int t) {
  int first, count;
  rows_of(g_me, t, &first, &count);
  void *a = NULL;
  size_t size = 0;
  if (t == 0) receive_b(t); /* the host's thread 0 sends B before A's rows */
  MUST(NCS_recv(t, 0, t, g_me, &a, &size));
  if (t != 0) receive_b(t);
  double *c = malloc(row_bytes(count) + 1);
  matrix_multiply_rows(a, g_b, c, count, g_m.n, NCS_yield);
  MUST(NCS_send(t, g_me, t, 0, c, row_bytes(count)));
  free(c);
  NCS_free(a);
}

static void thread_main(void *arg) {
  const int t = *(const int *)arg;
  if (g_me == 0) {
    host_thread(t);
  } else {
    node_thread(t);
  }
}

int main(int argc, char **argv) {
  const int n = matrix_size_from_args(argc, argv);
  g_threads = argc > 2 ? atoi(argv[2]) : 2;
  if (g_threads < 1 || g_threads > kMaxThreads) {
    fprintf(stderr, "usage: %s [n [threads]]  (threads 1..%d)\n", argv[0], kMaxThreads);
    return 2;
  }
  MUST(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_processes = NCS_get_num_processes();
  if (g_me == 0) matrix_alloc(&g_m, n, 1);
  g_m.n = n;
  static int ids[kMaxThreads];
  for (int t = 0; t < g_threads; ++t) {
    ids[t] = t;
    if (NCS_t_create(thread_main, &ids[t], 8) != t) return 1;
  }
  const double start = matrix_now();
  MUST(NCS_start());
  const double seconds = matrix_now() - start;
  const int status =
      g_me == 0 ? matrix_check("matmul_mt", &g_m, g_processes, g_threads, seconds) : 0;
  if (g_me != 0) NCS_free((void *)g_b);
  MUST(NCS_finalize());
  return status;
}
