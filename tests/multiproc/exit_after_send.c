/* exit_after_send: run under roclrun -n 2 (with ROCL_TRANSPORTS naming a
 * transport between processes). Rank 0 sends rank 1 a 32 MiB message and a
 * small one, then calls rocl_exit and exits at once: rocl_send returned
 * ROCL_OK, so both must arrive intact although the sender is gone (tcp:
 * rocl_exit lingers until they are delivered, ROCL_LINGER_MS; shm: they are
 * in the receiver's ring or readable through its mapping). Rank 1 waits a
 * little before receiving, so that rank 0 is exiting while its messages are
 * still queued or parked. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG ((size_t)32 << 20)

#include "find_rank.h"

static int rank;

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 12));
}

int main(void) {
  rank = start_rank("exit_after_send");
  CHECK(rocl_init() > 0, "rocl_init");
  const int64_t me = (int64_t)register_rank("exit_after_send", rank);
  rocl_gid_t peer = find_rank("exit_after_send", 1 - rank);
  void *p = NULL;
  size_t len = 0;

  if (rank == 0) {
    /* Rank 1 is ready once it says hello. */
    CHECK(rocl_recv((rocl_gid_t)me, peer, 1, &p, NULL, NULL, NULL, 30000) == ROCL_OK,
          "rocl_recv hello");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    unsigned char *b = rocl_bfget(BIG);
    CHECK(b != NULL, "rocl_bfget");
    fill(b, BIG, 1);
    CHECK(rocl_bftoret(b) == ROCL_OK, "rocl_bftoret");
    CHECK(rocl_send((rocl_gid_t)me, peer, 2, b, BIG) == ROCL_OK, "rocl_send 32 MiB");
    CHECK(rocl_send((rocl_gid_t)me, peer, 3, "bye", 3) == ROCL_OK, "rocl_send bye");
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  CHECK(rocl_send((rocl_gid_t)me, peer, 1, "hi", 2) == ROCL_OK, "rocl_send hello");
  usleep(200000); /* rank 0 is in rocl_exit by now */
  CHECK(rocl_recv((rocl_gid_t)me, peer, 2, &p, NULL, NULL, &len, 30000) == ROCL_OK,
        "rocl_recv of the 32 MiB message sent just before its sender exited");
  CHECK(len == BIG, "the 32 MiB message's length");
  unsigned char *want = malloc(BIG);
  CHECK(want != NULL, "malloc");
  fill(want, BIG, 1);
  CHECK(memcmp(p, want, BIG) == 0, "the 32 MiB message's content");
  free(want);
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  CHECK(rocl_recv((rocl_gid_t)me, peer, 3, &p, NULL, NULL, &len, 30000) == ROCL_OK,
        "rocl_recv of the last message sent before its sender exited");
  CHECK(len == 3 && memcmp(p, "bye", 3) == 0, "the last message's content");
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  printf("exit_after_send: rank 1 received both messages intact after rank 0 exited\n");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
