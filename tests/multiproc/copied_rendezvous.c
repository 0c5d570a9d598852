/* copied_rendezvous: run under roclrun -n 2 with ROCL_POOL_MAX=4M and the
 * default thresholds (ROCL_RNDV_THRESHOLD 4M, ROCL_RNDV_COPY_THRESHOLD
 * 128K), over one transport between processes (ROCL_TRANSPORTS).
 * Rank 0 sends from plain memory (not pool buffers): 512 KiB and 300 KiB,
 * which the library copies into pool blocks and, being at least the copy
 * threshold, sends by rendezvous where the transport lets a receive copy
 * straight into its memory; and 100 KiB, below it, eagerly. Rank 1 holds
 * every pool block that could take a 300 KiB payload and receives the two
 * large ones with rocl_recvx / rocl_irecvx: over shm they must arrive with
 * the pool full (copied once from the sender's pool; eagerly they would
 * wait for a block in the ring), over tcp (which ignores the preference)
 * only once the blocks are back. Then the 100 KiB one. Contents checked.
 * Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "find_rank.h"

#define MAX_HELD 64
#define SMALL_HELD 64
#define FULL_POOL_WAIT_MS 5000

static const size_t kSizes[3] = {512 << 10, 300 << 10, 100 << 10};

static void send_all(rocl_gid_t me, rocl_gid_t peer) {
  void *p = NULL;
  CHECK(rocl_recv(me, peer, 9, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  for (unsigned m = 0; m < 3; ++m) {
    unsigned char *plain = malloc(kSizes[m]);
    CHECK(plain != NULL, "malloc");
    fill_pattern(plain, kSizes[m], m + 1);
    CHECK(rocl_send(me, peer, (int)m + 1, plain, kSizes[m]) == ROCL_OK, "rocl_send (plain memory)");
    free(plain); /* the library copied it: ours again at once */
  }
  CHECK(rocl_recv(me, peer, 10, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (done)");
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
}

/* Holds every block that could take a payload of kSizes[1] bytes (and
 * more), keeping small ones free for the rendezvous stubs. */
static int fill_pool(void **held) {
  void *small[SMALL_HELD];
  for (int i = 0; i < SMALL_HELD; ++i) CHECK((small[i] = rocl_bfget(256)) != NULL, "rocl_bfget");
  int n = 0;
  while (n < MAX_HELD && (held[n] = rocl_bfget(kSizes[1])) != NULL) ++n;
  CHECK(n > 0 && n < MAX_HELD, "filling the pool (ROCL_POOL_MAX=4M expected)");
  for (int i = 0; i < SMALL_HELD; ++i) CHECK(rocl_bfret(small[i]) == ROCL_OK, "rocl_bfret");
  return n;
}

int main(void) {
  const int rank = start_rank("copied_rendezvous");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("copied_rendezvous", rank);
  const rocl_gid_t peer = find_rank("copied_rendezvous", 1 - rank);
  if (rank == 0) {
    send_all(me, peer);
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  const char *transports = getenv("ROCL_TRANSPORTS");
  const int direct = transports != NULL && strcmp(transports, "shm") == 0;
  void *held[MAX_HELD];
  const int n_held = fill_pool(held);
  CHECK(rocl_send(me, peer, 9, "ready", 6) == ROCL_OK, "rocl_send (ready)");

  unsigned char *one = malloc(kSizes[0]), *two = malloc(kSizes[1]);
  CHECK(one != NULL && two != NULL, "malloc");
  rocl_status_t st1, st2;
  if (direct) {
    CHECK(rocl_recvx(me, peer, 1, 0, one, kSizes[0], &st1, FULL_POOL_WAIT_MS) == ROCL_OK,
          "shm: rocl_recvx of a 512 KiB message sent from plain memory, with the pool full "
          "(it should have come by rendezvous)");
    rocl_request_t req;
    CHECK(rocl_irecvx(me, peer, 2, 0, two, kSizes[1], &req) == ROCL_OK, "rocl_irecvx");
    CHECK(rocl_wait(&req, &st2, FULL_POOL_WAIT_MS) == ROCL_OK,
          "shm: rocl_wait for a 300 KiB message sent from plain memory, with the pool full");
  }
  for (int i = 0; i < n_held; ++i) CHECK(rocl_bfret(held[i]) == ROCL_OK, "rocl_bfret (held)");
  if (!direct) {
    CHECK(rocl_recvx(me, peer, 1, 0, one, kSizes[0], &st1, 30000) == ROCL_OK, "rocl_recvx (1)");
    CHECK(rocl_recvx(me, peer, 2, 0, two, kSizes[1], &st2, 30000) == ROCL_OK, "rocl_recvx (2)");
  }
  CHECK(st1.len == kSizes[0] && st1.tag == 1 && st1.origin == peer, "status of message 1");
  expect_pattern(one, kSizes[0], 1, "message 1's content");
  CHECK(st2.len == kSizes[1] && st2.tag == 2 && st2.origin == peer, "status of message 2");
  expect_pattern(two, kSizes[1], 2, "message 2's content");
  rocl_status_t st3;
  CHECK(rocl_recvx(me, peer, 3, 0, one, kSizes[0], &st3, 30000) == ROCL_OK, "rocl_recvx (eager)");
  CHECK(st3.len == kSizes[2] && st3.tag == 3, "status of message 3");
  expect_pattern(one, kSizes[2], 3, "message 3's content");
  free(one);
  free(two);

  CHECK(rocl_send(me, peer, 10, "done", 4) == ROCL_OK, "rocl_send (done)");
  printf("copied_rendezvous: 3 messages from plain memory received into caller memory (%s)\n",
         direct ? "the large ones straight from the sender's pool" : "through pool blocks");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
