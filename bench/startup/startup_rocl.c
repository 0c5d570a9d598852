/* startup_rocl: a job's start-up time with rocl's C API, from STARTUP_T0
 * (nanoseconds of CLOCK_REALTIME, taken just before the launcher starts)
 * until rank 0 holds a message from every other rank: the first moment the
 * whole job can talk. Every rank registers {type=startup, rank=R}; the
 * others find rank 0 (rocl_query_wait) and send it one byte; rank 0 prints
 *   startup,<size>,<ms>
 * and answers each, so that no rank leaves before it is counted. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what) {
  fprintf(stderr, "startup_rocl: %s failed: %s\n", what, rocl_last_error());
  exit(1);
}

static rocl_attrl_t *rank_pattern(const char *rank) {
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "startup", 7);
  if (rank != NULL) rocl_add_attr(a, "rank", rank, (int)strlen(rank));
  return a;
}

int main(void) {
  if (rocl_init() < 0) die("rocl_init");
  /* After rocl_init: under a PMIx launcher it sets them. */
  const char *r = getenv("ROCL_RANK"), *s = getenv("ROCL_SIZE"), *t0 = getenv("STARTUP_T0");
  const int rank = r ? atoi(r) : 0, size = s ? atoi(s) : 1;
  char text[16];
  snprintf(text, sizeof text, "%d", rank);
  rocl_attrl_t *mine = rank_pattern(text);
  const int64_t me = rocl_register(mine);
  rocl_kill_attrl(mine);
  if (me <= 0) die("rocl_register");
  void *msg = NULL;
  if (rank != 0) {
    rocl_attrl_t *first = rank_pattern("0");
    rocl_gid_t zero = ROCL_NULL_GID;
    if (rocl_query_wait(first, 1, 60000) < 0 || rocl_query(&zero, first) != ROCL_OK) {
      die("finding rank 0");
    }
    rocl_kill_attrl(first);
    char one = 1;
    if (rocl_send((rocl_gid_t)me, zero, 1, &one, 1) != ROCL_OK) die("rocl_send");
    if (rocl_recv((rocl_gid_t)me, zero, 2, &msg, NULL, NULL, NULL, 60000) != ROCL_OK) {
      die("rocl_recv (the answer)");
    }
    rocl_bfret(msg);
    rocl_exit();
    return 0;
  }
  rocl_gid_t *from = calloc((size_t)size, sizeof *from);
  for (int k = 1; k < size; ++k) {
    if (rocl_recv((rocl_gid_t)me, ROCL_ANY, 1, &msg, &from[k], NULL, NULL, 60000) != ROCL_OK) {
      die("rocl_recv");
    }
    rocl_bfret(msg);
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const double ns = (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
  printf("startup,%d,%.1f\n", size, t0 ? (ns - atof(t0)) / 1e6 : -1.0);
  fflush(stdout);
  char one = 1;
  for (int k = 1; k < size; ++k) (void)rocl_send((rocl_gid_t)me, from[k], 2, &one, 1);
  free(from);
  rocl_exit();
  return 0;
}
