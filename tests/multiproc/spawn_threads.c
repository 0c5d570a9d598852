/* spawn_threads: run under roclrun -n P (P >= 2, on one host or several).
 * Every process exports "echo" and "noop"; each starts an "echo" thread in
 * the process of the previous rank (by its context gid) and one in any
 * process that exports it, sends each a message and checks the answer;
 * asks for a function that is not exported (by process and by any) and
 * checks the named ROCL_ENOTFOUND; checks that a returned thread's
 * resource leaves the directory; then times 50 spawns of "noop" in the
 * previous rank's process and prints the median (rank 0). Exit 0 on
 * success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Answers one message on its own resource with "echo:<arg>:<message>". */
static void echo(rocl_gid_t self, const void *arg, size_t len, void *user) {
  (void)user;
  void *msg = NULL;
  rocl_gid_t from = ROCL_NULL_GID;
  size_t got = 0;
  if (rocl_recv(self, ROCL_ANY, 7, &msg, &from, NULL, &got, 30000) != ROCL_OK) return;
  char out[256];
  int n = snprintf(out, sizeof out, "echo:%.*s:%.*s", (int)len, (const char *)arg, (int)got,
                   (const char *)msg);
  rocl_bfret(msg);
  (void)rocl_send(self, from, 8, out, (size_t)n);
}

static void noop(rocl_gid_t self, const void *arg, size_t len, void *user) {
  (void)self, (void)arg, (void)len, (void)user;
}

static rocl_gid_t context_of_rank(int rank) {
  char text[16];
  snprintf(text, sizeof text, "%d", rank);
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "spawn_threads", 13);
  rocl_add_attr(q, "rank", text, (int)strlen(text));
  rocl_add_attr(q, "context", NULL, (int)sizeof(rocl_gid_t));
  rocl_gid_t gid = ROCL_NULL_GID, ctx = ROCL_NULL_GID;
  CHECK(rocl_query(&gid, q) == ROCL_OK, "finding a rank");
  int len = 0;
  const void *v = rocl_get_attr(q, "context", &len);
  CHECK(v != NULL && len == (int)sizeof ctx, "a rank's context attribute");
  memcpy(&ctx, v, sizeof ctx);
  rocl_kill_attrl(q);
  return ctx;
}

static void talk(rocl_gid_t me, rocl_gid_t thread, const char *arg, int rank) {
  char hello[64], expect[160];
  snprintf(hello, sizeof hello, "hello from %d", rank);
  snprintf(expect, sizeof expect, "echo:%s:%s", arg, hello);
  CHECK(rocl_send(me, thread, 7, hello, strlen(hello)) == ROCL_OK, "send to a spawned thread");
  void *msg = NULL;
  size_t len = 0;
  CHECK(rocl_recv(me, thread, 8, &msg, NULL, NULL, &len, 30000) == ROCL_OK,
        "the spawned thread's answer");
  if (len != strlen(expect) || memcmp(msg, expect, len) != 0) {
    fprintf(stderr, "spawn_threads rank %d: answer '%.*s', expected '%s'\n", rank, (int)len,
            (const char *)msg, expect);
    exit(1);
  }
  rocl_bfret(msg);
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  CHECK(rocl_init() > 0, "rocl_init");
  const int rank = start_rank("spawn_threads");
  const char *s = getenv("ROCL_SIZE");
  const int size = s ? atoi(s) : 1;
  CHECK(size >= 2, "at least 2 processes");
  CHECK(rocl_export("echo", echo, NULL) == ROCL_OK, "rocl_export echo");
  CHECK(rocl_export("noop", noop, NULL) == ROCL_OK, "rocl_export noop");
  CHECK(rocl_export("echo", echo, NULL) == ROCL_EINVAL, "a second export of echo refused");
  const rocl_gid_t me = register_rank("spawn_threads", rank);
  rocl_attrl_t *all = rocl_new_attrl(0);
  rocl_add_attr(all, "type", "spawn_threads", 13);
  CHECK(rocl_query_wait(all, size, 30000) >= size, "every rank registered");
  rocl_kill_attrl(all);

  const int prev = (rank + size - 1) % size;
  const rocl_gid_t prev_ctx = context_of_rank(prev);
  const int64_t t1 = rocl_spawn_thread(prev_ctx, "echo", "by-process", 10, 10000);
  CHECK(t1 > 0, "rocl_spawn_thread in the previous rank's process");
  talk(me, (rocl_gid_t)t1, "by-process", rank);
  const int64_t t2 = rocl_spawn_thread(ROCL_ANY_GID, "echo", "any", 3, 10000);
  CHECK(t2 > 0, "rocl_spawn_thread in any process");
  talk(me, (rocl_gid_t)t2, "any", rank);

  CHECK(rocl_spawn_thread(prev_ctx, "nope", NULL, 0, 10000) == ROCL_ENOTFOUND,
        "a name that process does not export");
  CHECK(strstr(rocl_last_error(), "does not export 'nope'") != NULL, "the sentence naming it");
  CHECK(rocl_spawn_thread(ROCL_ANY_GID, "nope", NULL, 0, 10000) == ROCL_ENOTFOUND,
        "a name nobody exports");
  CHECK(strstr(rocl_last_error(), "no process exports 'nope'") != NULL, "the sentence");

  /* A thread that returned leaves the directory (2 s at most). */
  const int64_t t3 = rocl_spawn_thread(prev_ctx, "noop", NULL, 0, 10000);
  CHECK(t3 > 0, "rocl_spawn_thread noop");
  int gone = 0;
  for (int k = 0; k < 200 && !gone; ++k) {
    rocl_gid_t g = (rocl_gid_t)t3;
    rocl_attrl_t *none = rocl_new_attrl(0);
    gone = rocl_query(&g, none) == ROCL_ENOTFOUND;
    rocl_kill_attrl(none);
    if (!gone) usleep(10000);
  }
  CHECK(gone, "a returned thread's resource leaving the directory");

  /* The latency, by rank 0 alone once the others are done (they wait in a
   * receive for its leave). */
  enum { kSpawns = 50 };
  double us[kSpawns];
  void *msg = NULL;
  rocl_gid_t *from = calloc((size_t)size, sizeof *from);
  if (rank == 0) {
    for (int k = 1; k < size; ++k) {
      CHECK(rocl_recv(me, ROCL_ANY, 9, &msg, &from[k], NULL, NULL, 60000) == ROCL_OK,
            "a rank's done");
      rocl_bfret(msg);
    }
    for (int k = 0; k < kSpawns; ++k) {
      const double t0 = now_us();
      CHECK(rocl_spawn_thread(prev_ctx, "noop", NULL, 0, 10000) > 0, "a timed spawn");
      us[k] = now_us() - t0;
    }
    qsort(us, kSpawns, sizeof us[0], cmp);
    printf(
        "spawn_threads: %d processes ok; thread spawn in another process: median %.0f us "
        "(min %.0f, max %.0f)\n",
        size, us[kSpawns / 2], us[0], us[kSpawns - 1]);
  }
  /* Nobody leaves (and stops its launcher) while another may still spawn:
   * the others told rank 0 they are done and leave when it says so. */
  if (rank != 0) {
    const rocl_gid_t zero = find_rank("spawn_threads", 0);
    CHECK(rocl_send(me, zero, 9, "done", 4) == ROCL_OK, "telling rank 0");
    CHECK(rocl_recv(me, zero, 10, &msg, NULL, NULL, NULL, 60000) == ROCL_OK, "rank 0's leave");
    rocl_bfret(msg);
  } else {
    for (int k = 1; k < size; ++k) CHECK(rocl_send(me, from[k], 10, "bye", 3) == ROCL_OK, "bye");
  }
  free(from);
  rocl_exit();
  return 0;
}
