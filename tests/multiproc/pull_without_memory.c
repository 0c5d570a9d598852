/* pull_without_memory: run under roclrun -n 2 with ROCL_RNDV_THRESHOLD=64K and
 * ROCL_POOL_MAX=8M, over one transport between processes (ROCL_TRANSPORTS).
 * Rank 0 sends a 1 MiB message, which goes by rendezvous: rank 1 gets a
 * stub and pulls the payload when its receive matches. Rank 1 holds every
 * block that could take the payload, so its receive fails with ROCL_ENOMEM
 * saying the message stays queued; once it returns the blocks, a second
 * receive (a wildcard one) gets the message intact, before the small one
 * rank 0 sent after it. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "find_rank.h"

#define BIG ((size_t)1 << 20)
#define SMALL_HELD 64
#define MAX_HELD 64

static int rank;

static void fill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 13u + (i >> 10));
}

int main(void) {
  rank = start_rank("pull_without_memory");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("pull_without_memory", rank);
  const rocl_gid_t peer = find_rank("pull_without_memory", 1 - rank);
  void *p = NULL;
  size_t len = 0;
  int tag = 0;

  if (rank == 0) {
    CHECK(rocl_recv(me, peer, 1, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    unsigned char *b = rocl_bfget(BIG);
    CHECK(b != NULL, "rocl_bfget");
    fill(b, BIG);
    CHECK(rocl_bftoret(b) == ROCL_OK, "rocl_bftoret");
    CHECK(rocl_send(me, peer, 2, b, BIG) == ROCL_OK, "rocl_send (1 MiB)");
    CHECK(rocl_send(me, peer, 3, "after", 5) == ROCL_OK, "rocl_send (after)");
    CHECK(rocl_recv(me, peer, 4, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (done)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  /* Small blocks for the stubs and the small message, taken first and given
   * back after the pool is full of blocks that could hold the payload. */
  void *small[SMALL_HELD];
  for (int i = 0; i < SMALL_HELD; ++i) CHECK((small[i] = rocl_bfget(256)) != NULL, "rocl_bfget");
  void *held[MAX_HELD];
  int n_held = 0;
  while (n_held < MAX_HELD && (held[n_held] = rocl_bfget(BIG)) != NULL) ++n_held;
  CHECK(n_held > 0 && n_held < MAX_HELD, "filling the pool (ROCL_POOL_MAX=8M expected)");
  for (int i = 1; i < SMALL_HELD; ++i) CHECK(rocl_bfret(small[i]) == ROCL_OK, "rocl_bfret");
  memcpy(small[0], "ready", 6);
  CHECK(rocl_bftoret(small[0]) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 1, small[0], 6) == ROCL_OK, "rocl_send (ready)");

  const int rc = rocl_recv(me, peer, 2, &p, NULL, NULL, &len, 30000);
  CHECK(rc == ROCL_ENOMEM, "rocl_recv of a rendezvous message with the pool full (ROCL_ENOMEM)");
  CHECK(strstr(rocl_last_error(), "stays queued") != NULL, "the sentence of that ROCL_ENOMEM");
  printf("pull_without_memory: %s\n", rocl_last_error());
  for (int i = 0; i < n_held; ++i) CHECK(rocl_bfret(held[i]) == ROCL_OK, "rocl_bfret (held)");

  CHECK(rocl_recv(me, peer, ROCL_ANY_TAG, &p, NULL, &tag, &len, 30000) == ROCL_OK,
        "rocl_recv of the message put back");
  CHECK(tag == 2 && len == BIG, "the message put back comes first, whole");
  unsigned char *want = malloc(BIG);
  CHECK(want != NULL, "malloc");
  fill(want, BIG);
  CHECK(memcmp(p, want, BIG) == 0, "the 1 MiB message's content");
  free(want);
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  CHECK(rocl_recv(me, peer, ROCL_ANY_TAG, &p, NULL, &tag, &len, 30000) == ROCL_OK,
        "rocl_recv (after)");
  CHECK(tag == 3 && len == 5 && memcmp(p, "after", 5) == 0, "the message sent after it");
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  CHECK(rocl_send(me, peer, 4, "done", 4) == ROCL_OK, "rocl_send (done)");
  printf("pull_without_memory: rank 1 received the 1 MiB message once its blocks were back\n");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
