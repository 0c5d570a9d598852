/* matmul_st - matrix multiplication, single-threaded message passing (the
 * paper's p4 program, figure 13) on NCS with one user thread per process:
 * the host (process 0) sends all of B and a block of A's rows to each node,
 * multiplies its own block, and collects the nodes' blocks of C.
 *
 *   roclrun -n 4 matmul_st [n]
 */
#include <ncs.h>
#include <stdio.h>
#include <stdlib.h>

#include "matrix.h"

static matrix_problem g_m;
static int g_me, g_processes;

#define MUST(call)                                                                             \
  do {                                                                                         \
    const int must_rc_ = (call);                                                               \
    if (must_rc_ != NCS_OK) {                                                                  \
      fprintf(stderr, "matmul_st, process %d: %s: %s\n", g_me, #call, NCS_strerror(must_rc_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static size_t row_bytes(int rows) {
  return (size_t)rows * (size_t)g_m.n * sizeof(double);
}

static void host(void) {
  const int n = g_m.n;
  for (int p = 1; p < g_processes; ++p) {
    int first, count;
    matrix_block_rows(n, g_processes, p, &first, &count);
    MUST(NCS_send(0, 0, 0, p, g_m.b, row_bytes(n)));
    MUST(NCS_send(0, 0, 0, p, g_m.a + (size_t)first * n, row_bytes(count)));
  }
  int first, count;
  matrix_block_rows(n, g_processes, 0, &first, &count);
  matrix_multiply_rows(g_m.a + (size_t)first * n, g_m.b, g_m.c + (size_t)first * n, count, n, NULL);
  for (int p = 1; p < g_processes; ++p) {
    matrix_block_rows(n, g_processes, p, &first, &count);
    void *into = g_m.c + (size_t)first * n;
    size_t size = row_bytes(count);
    MUST(NCS_recv(0, p, 0, 0, &into, &size));
  }
}

static void node(void) {
  const int n = g_m.n;
  int first, count;
  matrix_block_rows(n, g_processes, g_me, &first, &count);
  void *b = NULL, *a = NULL;
  size_t b_size = 0, a_size = 0;
  MUST(NCS_recv(0, 0, 0, g_me, &b, &b_size));
  MUST(NCS_recv(0, 0, 0, g_me, &a, &a_size));
  if (b_size != row_bytes(n) || a_size != row_bytes(count)) {
    fprintf(stderr, "matmul_st, process %d: B or A has the wrong size\n", g_me);
    exit(1);
  }
  double *c = malloc(row_bytes(count) + 1);
  matrix_multiply_rows(a, b, c, count, n, NULL);
  MUST(NCS_send(0, g_me, 0, 0, c, row_bytes(count)));
  free(c);
  NCS_free(a);
  NCS_free(b);
}

static void process_main(void *arg) {
  (void)arg;
  if (g_me == 0) {
    host();
  } else {
    node();
  }
}

int main(int argc, char **argv) {
  const int n = matrix_size_from_args(argc, argv);
  MUST(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_processes = NCS_get_num_processes();
  if (g_me == 0) matrix_alloc(&g_m, n, 1);
  g_m.n = n;
  if (NCS_t_create(process_main, NULL, 8) < 0) return 1;
  const double start = matrix_now();
  MUST(NCS_start());
  const double seconds = matrix_now() - start;
  const int status = g_me == 0 ? matrix_check("matmul_st", &g_m, g_processes, 1, seconds) : 0;
  MUST(NCS_finalize());
  return status;
}
