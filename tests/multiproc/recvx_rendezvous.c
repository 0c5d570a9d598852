/* recvx_rendezvous: run under roclrun -n 2 with ROCL_RNDV_THRESHOLD=64K and
 * ROCL_POOL_MAX=8M, over one transport between processes (ROCL_TRANSPORTS).
 * Rank 0 sends three 1 MiB messages by rendezvous; rank 1 receives them
 * into its own memory with rocl_recvx / rocl_irecvx while holding every
 * pool block that could take a 1 MiB payload. The payload goes straight
 * into the receiver's memory (Transport::pull_into: over shm copied from
 * the sender's pool, over tcp read from the socket), so the receive
 * succeeds with the pool full. Also: a receive cut to fit (status.len is
 * the full length, nothing written past cap) and an immediate receive.
 * Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "find_rank.h"

#define BIG ((size_t)1 << 20)
#define CUT 1000
#define GUARD 64
#define SMALL_HELD 64
#define MAX_HELD 64

int main(void) {
  const int rank = start_rank("recvx_rendezvous");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("recvx_rendezvous", rank);
  const rocl_gid_t peer = find_rank("recvx_rendezvous", 1 - rank);
  void *p = NULL;

  if (rank == 0) {
    CHECK(rocl_recv(me, peer, 9, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    for (unsigned m = 1; m <= 3; ++m) {
      unsigned char *b = rocl_bfget(BIG);
      CHECK(b != NULL, "rocl_bfget");
      fill_pattern(b, BIG, m);
      CHECK(rocl_bftoret(b) == ROCL_OK, "rocl_bftoret");
      CHECK(rocl_send(me, peer, (int)m, b, BIG) == ROCL_OK, "rocl_send (1 MiB)");
    }
    CHECK(rocl_recv(me, peer, 10, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (done)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  /* Small blocks for the stubs, taken first and given back once the pool
   * is full of blocks that could hold a payload. */
  void *small[SMALL_HELD];
  for (int i = 0; i < SMALL_HELD; ++i) CHECK((small[i] = rocl_bfget(256)) != NULL, "rocl_bfget");
  void *held[MAX_HELD];
  int n_held = 0;
  while (n_held < MAX_HELD && (held[n_held] = rocl_bfget(BIG)) != NULL) ++n_held;
  CHECK(n_held > 0 && n_held < MAX_HELD, "filling the pool (ROCL_POOL_MAX=8M expected)");
  for (int i = 1; i < SMALL_HELD; ++i) CHECK(rocl_bfret(small[i]) == ROCL_OK, "rocl_bfret");
  memcpy(small[0], "ready", 6);
  CHECK(rocl_bftoret(small[0]) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 9, small[0], 6) == ROCL_OK, "rocl_send (ready)");

  unsigned char *mine = malloc(BIG + GUARD);
  CHECK(mine != NULL, "malloc");
  rocl_status_t st;
  CHECK(rocl_recvx(me, peer, 1, 0, mine, BIG, &st, 30000) == ROCL_OK,
        "rocl_recvx of a rendezvous message with the pool full");
  for (int i = 0; i < n_held; ++i) CHECK(rocl_bfret(held[i]) == ROCL_OK, "rocl_bfret (held)");
  CHECK(st.len == BIG && st.tag == 1 && st.origin == peer && st.ptr == mine, "status of message 1");
  expect_pattern(mine, BIG, 1, "message 1's content");

  /* Cut to fit: CUT bytes written, the guard after them untouched. */
  memset(mine, 0xee, CUT + GUARD);
  CHECK(rocl_recvx(me, peer, 2, 0, mine, CUT, &st, 30000) == ROCL_OK, "rocl_recvx (cut)");
  CHECK(st.len == BIG, "a cut receive's status.len is the message's full length");
  expect_pattern(mine, CUT, 2, "the first CUT bytes of message 2");
  for (size_t i = CUT; i < CUT + GUARD; ++i) CHECK(mine[i] == 0xee, "nothing written past cap");

  rocl_request_t req;
  CHECK(rocl_irecvx(me, peer, 3, 0, mine, BIG, &req) == ROCL_OK, "rocl_irecvx");
  CHECK(rocl_wait(&req, &st, 30000) == ROCL_OK, "rocl_wait");
  CHECK(st.len == BIG && st.tag == 3, "status of message 3");
  expect_pattern(mine, BIG, 3, "message 3's content");
  free(mine);

  CHECK(rocl_send(me, peer, 10, "done", 4) == ROCL_OK, "rocl_send (done)");
  printf("recvx_rendezvous: 3 rendezvous messages received straight into caller memory\n");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
