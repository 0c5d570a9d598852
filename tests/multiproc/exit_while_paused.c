/* exit_while_paused: run under roclrun -n 2 with a small buffer pool
 * (ROCL_POOL_MAX=4M) and a short ROCL_PEER_CHECK_MS, over one transport
 * between processes (ROCL_TRANSPORTS). Rank 1 takes every block of its pool
 * that could hold a message, so the messages rank 0 then sends wait unread
 * (shm: in rank 1's ring; tcp: in the socket), and rank 0 exits. Rank 1's
 * receive of the last message must not give up with ROCL_EPEER although
 * rank 0 has left the directory: its messages are still there. A second
 * thread of rank 1 gives the blocks back once rank 0 has been gone for
 * several peer checks; then all three messages must arrive intact.
 * Exit 0 on success. */
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

#define MSG ((size_t)24 << 10) /* a 32 KiB block each */
#define MESSAGES 3
#define MAX_HELD 4096

static int rank;
static rocl_gid_t peer;
static void *held[MAX_HELD];
static int n_held;
/* When the releaser saw rank 0 leave the directory and when it gave the
 * blocks back (ms since rank 1 began its receive; -1: not yet), and the
 * last answer of its directory query: a failure says which step stalled. */
static volatile long gone_ms = -1, released_ms = -1;
static volatile int last_query_rc;
static struct timespec t_start;

static long ms_since_start(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - t_start.tv_sec) * 1000 + (now.tv_nsec - t_start.tv_nsec) / 1000000;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static int peer_in_directory(void) {
  rocl_gid_t gid = peer;
  rocl_attrl_t *none = rocl_new_attrl(0);
  const int rc = rocl_query(&gid, none);
  rocl_kill_attrl(none);
  last_query_rc = rc;
  return rc != ROCL_ENOTFOUND;
}

/* Gives the pool's blocks back once rank 0 has been out of the directory
 * for several peer checks (ROCL_PEER_CHECK_MS, 100 ms in the test). */
static void *release_later(void *unused) {
  (void)unused;
  while (peer_in_directory()) usleep(10000);
  gone_ms = ms_since_start();
  usleep(800000);
  for (int i = 0; i < n_held; ++i) CHECK(rocl_bfret(held[i]) == ROCL_OK, "rocl_bfret (held)");
  released_ms = ms_since_start();
  return NULL;
}

int main(void) {
  rank = start_rank("exit_while_paused");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("exit_while_paused", rank);
  peer = find_rank("exit_while_paused", 1 - rank);
  void *p = NULL;
  size_t len = 0;

  if (rank == 0) {
    CHECK(rocl_recv(me, peer, 1, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    for (int m = 0; m < MESSAGES; ++m) {
      unsigned char *b = rocl_bfget(MSG);
      CHECK(b != NULL, "rocl_bfget");
      fill(b, MSG, (unsigned)m);
      CHECK(rocl_bftoret(b) == ROCL_OK, "rocl_bftoret");
      CHECK(rocl_send(me, peer, 2 + m, b, MSG) == ROCL_OK, "rocl_send");
    }
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  /* Take every block that could hold one of rank 0's messages; the
   * "ready" buffer is taken first, and handed over (no block needed). */
  void *ready = rocl_bfget(8);
  CHECK(ready != NULL, "rocl_bfget (ready)");
  while (n_held < MAX_HELD && (held[n_held] = rocl_bfget(MSG)) != NULL) ++n_held;
  CHECK(n_held > 0 && n_held < MAX_HELD, "filling the pool (ROCL_POOL_MAX=4M expected)");
  memcpy(ready, "ready", 6);
  CHECK(rocl_bftoret(ready) == ROCL_OK, "rocl_bftoret (ready)");
  CHECK(rocl_send(me, peer, 1, ready, 6) == ROCL_OK, "rocl_send (ready)");

  pthread_t releaser;
  CHECK(pthread_create(&releaser, NULL, release_later, NULL) == 0, "pthread_create");
  const int last = 2 + MESSAGES - 1;
  clock_gettime(CLOCK_MONOTONIC, &t_start);
  const int rc = rocl_recv(me, peer, last, &p, NULL, NULL, &len, 20000);
  if (rc != ROCL_OK) {
    fprintf(stderr,
            "exit_while_paused rank 1: after %ld ms: rank 0 left the directory at %ld ms, blocks "
            "given back at %ld ms (-1: not yet), last directory query rc %d\n",
            ms_since_start(), gone_ms, released_ms, last_query_rc);
  }
  CHECK(rc == ROCL_OK,
        "rocl_recv of the last message, waiting unread for pool blocks while its sender exited");
  CHECK(pthread_join(releaser, NULL) == 0, "pthread_join");
  unsigned char *want = malloc(MSG);
  CHECK(want != NULL, "malloc");
  for (int m = MESSAGES - 1; m >= 0; --m) { /* the last one is in hand */
    if (2 + m != last) {
      CHECK(rocl_recv(me, peer, 2 + m, &p, NULL, NULL, &len, 20000) == ROCL_OK, "rocl_recv");
    }
    fill(want, MSG, (unsigned)m);
    CHECK(len == MSG && memcmp(p, want, MSG) == 0, "a message's length and content");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  }
  free(want);
  printf(
      "exit_while_paused: rank 1 received all %d messages after its pool freed up, %d blocks "
      "held meanwhile\n",
      MESSAGES, n_held);
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
