/* stale_route: a route cached across a restart of the target's directory
 * server (tests/netns/restart_test.sh runs it; ROCL_RANK picks the part).
 * Rank 1 registers a target, prints "target <gid>" and waits in a receive
 * until rank 0's last message (or 60 s). Rank 0 finds the target, sends to
 * it (the route is now cached), prints "cached", waits until the file
 * named by STALE_ROUTE_GO exists (the script restarts rank 1's server
 * meanwhile), then sends every 20 ms: within 10 s a send must fail with
 * ROCL_EBADGID naming the gid (the restarted server no longer knows it),
 * and none may hang. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  const int rank = start_rank("stale_route");
  CHECK(rocl_init() > 0, "rocl_init");
  if (rank == 1) {
    const rocl_gid_t target = register_rank("stale_route_target", 1);
    printf("target %#llx\n", (unsigned long long)target);
    fflush(stdout);
    void *msg = NULL;
    size_t len = 0;
    /* The first message; later ones do not arrive once the route is gone. */
    CHECK(rocl_recv(target, ROCL_ANY, ROCL_ANY, &msg, NULL, NULL, &len, 60000) == ROCL_OK,
          "rocl_recv at the target");
    rocl_bfret(msg);
    (void)rocl_recv(target, ROCL_ANY, ROCL_ANY, &msg, NULL, NULL, &len, 60000);
    return 0; /* without rocl_exit: its server is not the one it started with */
  }
  const char *go = getenv("STALE_ROUTE_GO");
  CHECK(go != NULL, "STALE_ROUTE_GO (a file name) in the environment");
  const rocl_gid_t me = register_rank("stale_route", 0);
  const rocl_gid_t target = find_rank("stale_route_target", 1);
  char one = 1;
  CHECK(rocl_send(me, target, 1, &one, 1) == ROCL_OK, "the first send");
  printf("cached\n");
  fflush(stdout);
  while (access(go, F_OK) != 0) usleep(10000);
  const double start = now_s();
  for (;;) {
    const int rc = rocl_send(me, target, 2, &one, 1);
    if (rc != ROCL_OK) {
      char gid_text[32];
      snprintf(gid_text, sizeof gid_text, "%#llx", (unsigned long long)target);
      CHECK(rc == ROCL_EBADGID, "a send to the stale route failing with ROCL_EBADGID");
      CHECK(strstr(rocl_last_error(), gid_text) != NULL, "an error naming the gid");
      printf("stale route refused after %.0f ms: %s\n", (now_s() - start) * 1000,
             rocl_last_error());
      break;
    }
    CHECK(now_s() - start < 10, "a refusal within 10 s");
    usleep(20000);
  }
  rocl_exit();
  return 0;
}
