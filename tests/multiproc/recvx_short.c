/* recvx_short: run under roclrun -n 2 with ROCL_POOL_MAX=1M, over one
 * transport between processes (ROCL_TRANSPORTS). Rank 0 sends small
 * messages (0 B to 1000 B, eager, each size up to 65 B that a small copy
 * treats apart); rank 1 receives each with rocl_recvx
 * (or rocl_irecvx and rocl_wait) into its own memory, whole or cut to fit (status.len is the full
 * length, nothing written past cap), and checks source, tag, length and content. Over shm rank 1
 * first takes every block of its pool: a receive waiting with memory of its own takes a small
 * message straight from the ring (MessageSink::deliver_bytes), so the messages arrive with the pool
 * full. Rank 0, once its first send has found the route, takes every
 * block of its own pool too: over shm a small message is copied from the
 * caller's memory into the ring (Transport::send_bytes), no block needed.
 * tcp copies every message into a pool block, so there the pools stay
 * free. Then rank 0, its pool still full, sends larger messages (2 KiB to
 * 64 KiB; above 8 KiB several ring frames each) from its memory: over shm they too go
 * into the ring without a block; rank 1, its pool still full, receives
 * them too: a message whole in the ring is copied fragment by fragment
 * into the waiting receive's memory (MessageSink::deliver_pieces), no
 * block needed (the slot, paused for want of one, is retried). Exit 0 on
 * success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "find_rank.h"

#define MESSAGES 200
#define GUARD 16
#define MAX_HELD 70000

/* Every way a small copy may go (copy_upto64: one to three moves of 1, 2,
 * 4, 8, 16 or 32 bytes), then past it. */
static const size_t kSizes[] = {0,  1,  2,  3,  5,  8,  15, 16, 17,  24,
                                25, 31, 32, 33, 48, 63, 64, 65, 200, 1000};
#define N_SIZES (sizeof kSizes / sizeof kSizes[0])
static const size_t kLargeSizes[] = {2049, 4096, 40000, 65536};
#define N_LARGE (sizeof kLargeSizes / sizeof kLargeSizes[0])
static unsigned char large[65536 + GUARD], large_want[65536];
/* Then enough 40000-byte messages to go round the 1 MiB ring more than
 * once, so that fragments and frames wrap its end. */
#define LAPS_MESSAGES 40
#define LAPS_SIZE 40000

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 41u + i * 3u + 1u);
}

int main(void) {
  const int rank = start_rank("recvx_short");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("recvx_short", rank);
  const rocl_gid_t peer = find_rank("recvx_short", 1 - rank);
  void *p = NULL;
  unsigned char msg[1000];

  const char *transports = getenv("ROCL_TRANSPORTS");
  const int direct = transports != NULL && strcmp(transports, "shm") == 0;
  if (rank == 0) {
    CHECK(rocl_recv(me, peer, 1, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    static void *held0[MAX_HELD];
    int n_held0 = 0;
    for (unsigned m = 0; m < MESSAGES; ++m) {
      const size_t len = kSizes[m % N_SIZES];
      fill(msg, len, m);
      CHECK(rocl_sendx(me, peer, 100 + (int)m, 0, 0, msg, len) == ROCL_OK, "rocl_sendx");
      if (m == 0 && direct) { /* the route is known now: fill the pool */
        while (n_held0 < MAX_HELD && (held0[n_held0] = rocl_bfget(1)) != NULL) ++n_held0;
        CHECK(n_held0 > 0 && n_held0 < MAX_HELD, "filling the pool of rank 0");
      }
    }
    for (unsigned k = 0; k < N_LARGE; ++k) {
      fill(large, kLargeSizes[k], 1000 + k);
      CHECK(rocl_sendx(me, peer, 1000 + (int)k, 0, 0, large, kLargeSizes[k]) == ROCL_OK,
            "rocl_sendx of a larger message");
    }
    for (int j = 0; j < LAPS_MESSAGES; ++j) {
      fill(large, LAPS_SIZE, 2000 + (unsigned)j);
      CHECK(rocl_sendx(me, peer, 2000 + j, 0, 0, large, LAPS_SIZE) == ROCL_OK,
            "rocl_sendx round the ring");
    }
    for (int i = 0; i < n_held0; ++i) CHECK(rocl_bfret(held0[i]) == ROCL_OK, "rocl_bfret (held)");
    CHECK(rocl_recv(me, peer, 2, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (done)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  /* The "ready" and "done" buffers are taken first and handed over (their
   * sends need no block); then, over shm, every other block. */
  void *ready = rocl_bfget(8), *done = rocl_bfget(8);
  CHECK(ready != NULL && done != NULL, "rocl_bfget");
  static void *held[MAX_HELD];
  int n_held = 0;
  if (direct) {
    while (n_held < MAX_HELD && (held[n_held] = rocl_bfget(1)) != NULL) ++n_held;
    CHECK(n_held > 0 && n_held < MAX_HELD, "filling the pool (ROCL_POOL_MAX=1M expected)");
    CHECK(rocl_bfget(1000) == NULL, "the pool is full");
  }
  memcpy(ready, "ready", 6);
  CHECK(rocl_bftoret(ready) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 1, ready, 6) == ROCL_OK, "rocl_send (ready)");

  unsigned char got[1000 + GUARD], want[1000];
  for (unsigned m = 0; m < MESSAGES; ++m) {
    const size_t len = kSizes[m % N_SIZES];
    const size_t cap = (m / N_SIZES) % 2 == 0 ? len : len / 2; /* whole, or cut to fit */
    memset(got, 0xEE, sizeof got);
    rocl_status_t st;
    int rc;
    if (m % 3 == 2) { /* an immediate receive, waited for */
      rocl_request_t req;
      rc = rocl_irecvx(me, peer, 100 + (int)m, 0, got, cap, &req);
      if (rc == ROCL_OK) rc = rocl_wait(&req, &st, 30000);
    } else {
      rc = rocl_recvx(me, peer, 100 + (int)m, 0, got, cap, &st, 30000);
    }
    if (rc != ROCL_OK)
      fprintf(stderr, "recvx_short: message %u (%zu bytes, cap %zu)\n", m, len, cap);
    CHECK(rc == ROCL_OK, "rocl_recvx of a short message");
    CHECK(st.error == ROCL_OK && st.origin == peer && st.tag == 100 + (int)m, "status fields");
    CHECK(st.len == len, "status.len is the full length");
    CHECK(st.ptr == got, "status.ptr is the caller's memory");
    fill(want, len, m);
    CHECK(memcmp(got, want, cap) == 0, "content");
    for (size_t i = cap; i < cap + GUARD; ++i) CHECK(got[i] == 0xEE, "nothing written past cap");
  }
  for (unsigned k = 0; k < N_LARGE; ++k) {
    const size_t len = kLargeSizes[k];
    rocl_status_t st;
    memset(large, 0xEE, sizeof large);
    CHECK(rocl_recvx(me, peer, 1000 + (int)k, 0, large, len, &st, 30000) == ROCL_OK,
          "rocl_recvx of a larger message");
    CHECK(st.len == len && st.origin == peer, "larger message: status");
    fill(large_want, len, 1000 + k);
    CHECK(memcmp(large, large_want, len) == 0, "larger message: content");
    for (size_t i = len; i < len + GUARD; ++i) CHECK(large[i] == 0xEE, "nothing written past len");
  }
  for (int j = 0; j < LAPS_MESSAGES; ++j) {
    rocl_status_t st;
    CHECK(rocl_recvx(me, peer, 2000 + j, 0, large, LAPS_SIZE, &st, 30000) == ROCL_OK,
          "rocl_recvx round the ring");
    fill(large_want, LAPS_SIZE, 2000 + (unsigned)j);
    CHECK(st.len == LAPS_SIZE && memcmp(large, large_want, LAPS_SIZE) == 0,
          "content of a message round the ring");
  }
  for (int i = 0; i < n_held; ++i) CHECK(rocl_bfret(held[i]) == ROCL_OK, "rocl_bfret (held)");
  memcpy(done, "done", 5);
  CHECK(rocl_bftoret(done) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 2, done, 5) == ROCL_OK, "rocl_send (done)");
  printf("recvx_short: %d short and %d fragmented messages received into caller memory%s\n",
         MESSAGES, (int)N_LARGE + LAPS_MESSAGES, direct ? ", the pool full" : "");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
