/* lent_send: run under roclrun -n 2 with the default thresholds
 * (ROCL_LEND_THRESHOLD 32K, ROCL_TCP_RNDV_THRESHOLD 1M), over one
 * transport between processes (ROCL_TRANSPORTS). rocl_isendx_lend from
 * rank 0 to rank 1:
 *  1. 1 MiB of plain memory while rank 1 has posted no receive: the request
 *     stays incomplete (the bytes are lent: over shm rank 1 will read them
 *     with process_vm_readv, over tcp they are written from there once rank
 *     1 asks for them) until rank 1, told to go, receives them. Rank 0
 *     overwrites the memory once its request completed: rank 1 must see
 *     the original.
 *  2. 64 KiB (lent: a request) completes while rank 1 still has posted no
 *     receive: over shm it is below ROCL_SHM_LEND_THRESHOLD (128K) and
 *     copied through the ring at once, over tcp written eagerly (below
 *     ROCL_TCP_RNDV_THRESHOLD); rank 1 gets it as it was when lent.
 *  3. 1 KiB (below the threshold) and a pool buffer: copied, no request
 *     (ROCL_REQUEST_NULL).
 *  4. 1 MiB again, which rank 1 sees arrive (rocl_probe) and never
 *     receives: it dies (_exit, no rocl_exit). The send completes with
 *     ROCL_EPEER within seconds instead of waiting for ever.
 * Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

#define BIG ((size_t)1 << 20)
#define MID ((size_t)64 << 10)
#define SMALL ((size_t)1024)
#define POOL_BYTES ((size_t)200000)

enum { kReady = 9, kWarm = 8, kGo = 7, kBig = 1, kSmall = 2, kPool = 3, kMid = 4, kOrphan = 5 };

/* Tests *req; once complete its status is in *st. */
static int is_done(rocl_request_t *req, rocl_status_t *st) {
  int done = 0;
  CHECK(rocl_test(req, &done, st) == ROCL_OK, "rocl_test");
  return done;
}

static void sender(rocl_gid_t me, rocl_gid_t peer) {
  /* Rank 1 has found us (we stay in the directory while it looks). */
  char note[8];
  rocl_status_t st;
  CHECK(rocl_recvx(me, peer, kReady, 0, note, sizeof note, &st, 30000) == ROCL_OK, "recv (ready)");
  /* The first send to a destination resolves its route, and is copied. */
  CHECK(rocl_send(me, peer, kWarm, "warm", 5) == ROCL_OK, "rocl_send (warm)");
  unsigned char *big = malloc(BIG);
  CHECK(big != NULL, "malloc");
  fill_pattern(big, BIG, 1);
  rocl_request_t req = ROCL_REQUEST_NULL;
  CHECK(rocl_isendx_lend(me, peer, kBig, 0, 0, big, BIG, &req) == ROCL_OK, "rocl_isendx_lend");
  CHECK(req != ROCL_REQUEST_NULL, "a 1 MiB send from plain memory was lent (a request)");
  /* Rank 1 waits for kGo before it receives: a lent send cannot be done. */
  for (int i = 0; i < 50; ++i) {
    CHECK(!is_done(&req, &st), "a lent 1 MiB send completed before any receive was posted");
    usleep(1000);
  }
  CHECK(rocl_cancel(&req) == ROCL_EALREADY, "rocl_cancel of a lent send");
  unsigned char *mid = malloc(MID);
  CHECK(mid != NULL, "malloc");
  fill_pattern(mid, MID, 4);
  rocl_request_t mid_req = ROCL_REQUEST_NULL;
  CHECK(rocl_isendx_lend(me, peer, kMid, 0, 0, mid, MID, &mid_req) == ROCL_OK,
        "rocl_isendx_lend (64 KiB)");
  CHECK(mid_req != ROCL_REQUEST_NULL, "a 64 KiB send from plain memory was lent (a request)");
  CHECK(rocl_wait(&mid_req, &st, 5000) == ROCL_OK,
        "a lent 64 KiB send completes with no receive posted (shm: copied through the ring "
        "below ROCL_SHM_LEND_THRESHOLD; tcp: written eagerly)");
  fill_pattern(mid, MID, 98); /* ours again: rank 1 gets the original */
  free(mid);
  CHECK(rocl_send(me, peer, kGo, "go", 3) == ROCL_OK, "rocl_send (go)");
  CHECK(rocl_wait(&req, &st, 30000) == ROCL_OK, "rocl_wait (lent 1 MiB)");
  CHECK(st.error == ROCL_OK && st.len == BIG && st.tag == kBig, "status of the lent send");
  CHECK(req == ROCL_REQUEST_NULL, "rocl_wait nulls the handle");
  fill_pattern(big, BIG, 99); /* ours again: rank 1 has the original */

  unsigned char small[SMALL];
  fill_pattern(small, SMALL, 2);
  req = (rocl_request_t)&req;
  CHECK(rocl_isendx_lend(me, peer, kSmall, 0, 0, small, SMALL, &req) == ROCL_OK,
        "rocl_isendx_lend (1 KiB)");
  CHECK(req == ROCL_REQUEST_NULL, "a 1 KiB send is copied (below the threshold): no request");
  unsigned char *buf = rocl_bfget(POOL_BYTES);
  CHECK(buf != NULL, "rocl_bfget");
  fill_pattern(buf, POOL_BYTES, 3);
  req = (rocl_request_t)&req;
  CHECK(rocl_isendx_lend(me, peer, kPool, 0, 0, buf, POOL_BYTES, &req) == ROCL_OK,
        "rocl_isendx_lend (pool buffer)");
  CHECK(req == ROCL_REQUEST_NULL, "a pool buffer is sent the usual way: no request");
  CHECK(rocl_bfret(buf) == ROCL_OK, "rocl_bfret");

  fill_pattern(big, BIG, 5);
  CHECK(rocl_isendx_lend(me, peer, kOrphan, 0, 0, big, BIG, &req) == ROCL_OK,
        "rocl_isendx_lend (to be orphaned)");
  CHECK(req != ROCL_REQUEST_NULL, "the second 1 MiB send was lent");
  const time_t start = time(NULL);
  const int rc = rocl_wait(&req, &st, 20000);
  CHECK(rc == ROCL_EPEER && st.error == ROCL_EPEER,
        "a lent send whose receiver died completes with ROCL_EPEER");
  CHECK(strstr(rocl_last_error(), "send failed") != NULL, "rocl_wait names the failed send");
  CHECK(time(NULL) - start < 15, "the dead receiver was noticed within seconds");
  free(big);
}

static void receiver(rocl_gid_t me, rocl_gid_t peer) {
  rocl_status_t st;
  char note[8];
  CHECK(rocl_send(me, peer, kReady, "ready", 6) == ROCL_OK, "rocl_send (ready)");
  CHECK(rocl_recvx(me, peer, kWarm, 0, note, sizeof note, &st, 30000) == ROCL_OK, "recv (warm)");
  CHECK(rocl_recvx(me, peer, kGo, 0, note, sizeof note, &st, 30000) == ROCL_OK, "recv (go)");
  unsigned char *big = malloc(BIG);
  CHECK(big != NULL, "malloc");
  CHECK(rocl_recvx(me, peer, kBig, 0, big, BIG, &st, 30000) == ROCL_OK, "recv (lent 1 MiB)");
  CHECK(st.len == BIG && st.tag == kBig, "status of the lent message");
  expect_pattern(big, BIG, 1, "the lent message's content (as it was when lent)");
  CHECK(rocl_recvx(me, peer, kMid, 0, big, MID, &st, 30000) == ROCL_OK, "recv (lent 64 KiB)");
  CHECK(st.len == MID && st.tag == kMid, "status of the lent 64 KiB message");
  expect_pattern(big, MID, 4, "the lent 64 KiB message's content (as it was when lent)");
  unsigned char small[SMALL];
  CHECK(rocl_recvx(me, peer, kSmall, 0, small, SMALL, &st, 30000) == ROCL_OK, "recv (1 KiB)");
  expect_pattern(small, SMALL, 2, "the 1 KiB message's content");
  CHECK(rocl_recvx(me, peer, kPool, 0, big, POOL_BYTES, &st, 30000) == ROCL_OK, "recv (pool)");
  CHECK(st.len == POOL_BYTES, "status of the pool buffer's message");
  expect_pattern(big, POOL_BYTES, 3, "the pool buffer's content");
  CHECK(rocl_probe(me, peer, kOrphan, 0, &st, 30000) == ROCL_OK, "rocl_probe (orphan)");
  CHECK(st.len == BIG, "the orphan's length");
  printf(
      "lent_send: 1 MiB lent and received, 64 KiB lent and copied at once, small and pool sends "
      "copied; the receiver now "
      "dies holding the last one unreceived\n");
  fflush(stdout);
  _exit(0); /* no rocl_exit: as if killed, nothing hands the lent bytes back */
}

int main(void) {
  const int rank = start_rank("lent_send");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("lent_send", rank);
  const rocl_gid_t peer = find_rank("lent_send", 1 - rank);
  if (rank == 1) receiver(me, peer);
  sender(me, peer);
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  printf("lent_send: sender done\n");
  return 0;
}
