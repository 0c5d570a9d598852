/* faults_memory.c - the modes of faults.c about memory: stall (a peer
 * that does not receive) and big (the sender of a large message killed
 * half-way). */
#define _GNU_SOURCE
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"

/* ---- stall: a peer that stops receiving ---------------------------------- */

typedef struct {
  rocl_gid_t me, peer;
  uint32_t seq;       /* sends so far (the sending thread's) */
  atomic_uint end_at; /* stop once seq reaches it */
  atomic_uint done;   /* sends that returned */
  atomic_int finished;
  int rc;
  double failed_at;
  char error[512];
} Flood;

/* A message and its block's header fill a 64 KiB block (size classes are
 * powers of two): the pool's bytes in use count what is queued. */
enum { kFloodLen = 64 * 1024 - 256 };

static void *flood_sender(void *arg) {
  Flood *f = arg;
  static unsigned char buf[kFloodLen];
  while (f->seq < atomic_load(&f->end_at)) {
    memcpy(buf, &f->seq, sizeof f->seq);
    const int rc = rocl_send(f->me, f->peer, kTagData, buf, sizeof buf);
    if (rc != ROCL_OK) {
      f->rc = rc;
      f->failed_at = now_ms();
      snprintf(f->error, sizeof f->error, "%s", rocl_last_error());
      break;
    }
    atomic_store(&f->done, ++f->seq);
  }
  atomic_store(&f->finished, 1);
  return NULL;
}

/* Samples f until its sends stop moving for 2 s; returns the peak of the
 * pool in use and of the RSS (KiB) meanwhile. */
static uint32_t wait_blocked(Flood *f, size_t *pool_peak, long *rss_peak) {
  uint32_t last = atomic_load(&f->done);
  double moved = now_ms();
  const double give_up = moved + 60000;
  while (now_ms() - moved < 2000) {
    if (atomic_load(&f->finished)) die("the sends ended: %s (%s)", rocl_strerror(f->rc), f->error);
    if (now_ms() > give_up) die("the sends never blocked (%u sent)", last);
    const size_t pool = pool_in_use();
    const long rss = rss_kib();
    if (pool > *pool_peak) *pool_peak = pool;
    if (rss > *rss_peak) *rss_peak = rss;
    const uint32_t now_done = atomic_load(&f->done);
    if (now_done != last) {
      last = now_done;
      moved = now_ms();
    }
    sleep_ms(20);
  }
  return last;
}

static void flood_start(Flood *f, pthread_t *t, uint32_t from) {
  f->seq = from;
  atomic_store(&f->end_at, UINT32_MAX);
  atomic_store(&f->done, from);
  atomic_store(&f->finished, 0);
  if (pthread_create(t, NULL, flood_sender, f) != 0) die("pthread_create");
}

/* Rank 0: what a sender's memory and sends do while its peer does not
 * receive, then receives, then dies. */
static void stall_sender(void) {
  const rocl_gid_t me = register_rank(0);
  static Flood f;
  f.me = me;
  f.peer = find_rank(1);
  const size_t pool0 = pool_in_use();
  const long rss0 = rss_kib();
  size_t pool_peak = pool0;
  long rss_peak = rss0;
  pthread_t t;
  flood_start(&f, &t, 0);
  const uint32_t blocked = wait_blocked(&f, &pool_peak, &rss_peak);
  /* What may wait here: the connection's queue (4 MiB) and the message
   * being sent. */
  const double pool_grew = (double)(pool_peak - pool0) / (double)MIB;
  const double rss_grew = (double)(rss_peak - rss0) / 1024.0;
  say("blocked in rocl_send after %u messages (%.0f MiB); pool in use +%.1f MiB (bound 5), "
      "RSS +%.1f MiB (bound 64)",
      blocked, (double)blocked * kFloodLen / (double)MIB, pool_grew, rss_grew);
  if (pool_grew > 5) die("the pool grew by %.1f MiB for a peer that does not receive", pool_grew);
  if (rss_grew > 64) die("the RSS grew by %.1f MiB for a peer that does not receive", rss_grew);
  const double drain = mark_ms("drain");
  while (atomic_load(&f.done) == blocked) {
    if (now_ms() - drain > 30000) die("still blocked 30 s after the receiver began to receive");
    sleep_ms(1);
  }
  say("resumed %.0f ms after the receiver began to receive", now_ms() - drain);
  atomic_store(&f.end_at, blocked + 2000);
  pthread_join(t, NULL);
  if (f.rc != ROCL_OK) die("a send failed: %s (%s)", rocl_strerror(f.rc), f.error);
  const uint32_t count = f.seq;
  check(rocl_send(me, f.peer, kTagEnd, (void *)&count, sizeof count), "sending the end");

  /* Blocked again, and the receiver dies: the blocked send fails. */
  flood_start(&f, &t, count);
  const uint32_t again = wait_blocked(&f, &pool_peak, &rss_peak);
  say("blocked again after %u more messages", again - count);
  const double killed = mark_ms("killed");
  pthread_join(t, NULL);
  /* The connection breaks at once (the receiver's kernel resets it); the
   * send asks the directory again, where the receiver's host's server
   * removed it at once. */
  expect_failure("the blocked send", f.rc, f.error, f.failed_at, killed, ROCL_EBADGID, ROCL_EPEER,
                 f.peer, NULL, 1000 + (double)g_slack_ms);
  pool_back(pool0, "the receiver's death");
}

/* Rank 1 (ROCL_POOL_MAX=64M): receives nothing until the script says
 * "drain", then everything in order; then nothing until it is killed. */
static void stall_receiver(void) {
  const rocl_gid_t me = register_rank(1);
  const rocl_gid_t a = find_rank(0);
  rocl_pool_stats_t st;
  check(rocl_pool_stats(&st), "rocl_pool_stats");
  const size_t pool0 = st.in_use_bytes;
  const long rss0 = rss_kib();
  size_t pool_peak = pool0;
  long rss_peak = rss0;
  say("receiving nothing (pool cap %zu MiB)", st.cap_bytes / MIB);
  while (!has_mark("drain")) {
    const size_t pool = pool_in_use();
    const long rss = rss_kib();
    if (pool > pool_peak) pool_peak = pool;
    if (rss > rss_peak) rss_peak = rss;
    sleep_ms(20);
  }
  const double rss_grew = (double)(rss_peak - rss0) / 1024.0;
  say("while not receiving: pool in use at most %.1f MiB (cap %zu MiB), RSS +%.1f MiB",
      (double)pool_peak / (double)MIB, st.cap_bytes / MIB, rss_grew);
  if (pool_peak > st.cap_bytes) die("the pool went past its cap");
  if (rss_grew > (double)(st.cap_bytes / MIB) + 32) die("the RSS grew past the pool's cap");
  uint32_t expect = 0;
  for (;;) {
    void *p = NULL;
    int tag = 0;
    size_t len = 0;
    check(rocl_recv(me, a, ROCL_ANY_TAG, &p, NULL, &tag, &len, kRecvMs), "receiving");
    uint32_t seq = 0;
    memcpy(&seq, p, sizeof seq);
    check(rocl_bfret(p), "rocl_bfret");
    if (tag == kTagEnd) {
      if (seq != expect) die("rank 0 sent %u messages, %u came", seq, expect);
      break;
    }
    if (len != kFloodLen || seq != expect)
      die("message %u (%zu bytes) came as %u", seq, len, expect);
    ++expect;
  }
  say("ok: %u messages came in order, none lost", expect);
  sleep_ms(kMarkMs);
  die("not killed");
}

int run_stall(void) {
  if (g_rank == 0) {
    stall_sender();
    return rocl_exit() == ROCL_OK ? 0 : 1;
  }
  stall_receiver();
  return 1;
}

/* ---- big: the sender of a large message dies half-way ---------------------- */

static const char *const kPhases[] = {"rndv", "into", "eager", "whole"};
enum { kPhaseCount = 4 };

static size_t phase_len(int phase) {
  return phase == 2 ? 48 * MIB : 256 * MIB;
}

static uint64_t big_word(int phase, size_t i) {
  uint64_t x = ((uint64_t)phase << 48) ^ i;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 27);
}

static void big_sender(int phase) {
  const rocl_gid_t me = register_rank(10 + phase);
  const rocl_gid_t r = find_rank(1);
  const size_t len = phase_len(phase);
  uint64_t *buf = rocl_bfget(len);
  if (buf == NULL) die("rocl_bfget(%zu): %s", len, rocl_last_error());
  for (size_t i = 0; i < len / 8; ++i) buf[i] = big_word(phase, i);
  check(rocl_bftoret(buf), "rocl_bftoret");
  check(rocl_send(me, r, kTagData, buf, len), "sending the large message");
  say("sent %zu MiB", len / MIB);
  if (phase != 3) {
    sleep_ms(kMarkMs);
    die("not killed");
  }
  void *p = NULL;
  check(rocl_recv(me, r, kTagAck, &p, NULL, NULL, NULL, 120000), "the receiver's ack");
  check(rocl_bfret(p), "rocl_bfret");
  check(rocl_exit(), "rocl_exit");
}

static void big_receiver(void) {
  const rocl_gid_t me = register_rank(1);
  const size_t base = pool_in_use();
  uint64_t *into = malloc(256 * MIB);
  if (into == NULL) die("malloc");
  for (int phase = 0; phase < kPhaseCount; ++phase) {
    say("waiting for the %s sender", kPhases[phase]);
    const rocl_gid_t s = find_rank(10 + phase);
    rocl_status_t st;
    memset(&st, 0, sizeof st);
    memset(into, 0, 256 * MIB);
    int rc;
    void *p = NULL;
    size_t len = 0;
    if (phase == 1 || phase == 3) {
      rc = rocl_recvx(me, s, kTagData, 0, into, 256 * MIB, &st, kRecvMs);
      len = st.len;
    } else {
      rc = rocl_recv(me, s, kTagData, &p, NULL, NULL, &len, kRecvMs);
    }
    const double at = now_ms();
    char why[512];
    snprintf(why, sizeof why, "%s", rocl_last_error());
    if (phase == 3) {
      check(rc, "receiving the whole message");
      if (len != phase_len(3)) die("the whole message has %zu bytes", len);
      for (size_t i = 0; i < len / 8; ++i)
        if (into[i] != big_word(3, i)) die("the whole message differs at byte %zu", 8 * i);
      check(rocl_send(me, s, kTagAck, NULL, 0), "the ack");
      pool_back(base, "the whole message");
      say("ok: the whole message came intact");
      break;
    }
    char killed_mark[32];
    snprintf(killed_mark, sizeof killed_mark, "killed-%s", kPhases[phase]);
    const double killed = mark_ms(killed_mark);
    char what[64];
    snprintf(what, sizeof what, "the %s receive", kPhases[phase]);
    /* rndv, into: the pull breaks with the connection; eager: the
     * receive learns it from the directory (ROCL_PEER_CHECK_MS). */
    const double bound = (phase == 2 ? (double)g_check_ms * 1.25 : 1000) + (double)g_slack_ms;
    expect_failure(what, rc, why, at, killed, ROCL_EPEER, 0, phase == 2 ? s : 0, NULL, bound);
    if (p != NULL) die("the failed receive handed over a buffer");
    if (phase == 1 && (st.error == ROCL_OK)) die("the failed rocl_recvx reports success");
    rc = rocl_recv(me, ROCL_ANY_GID, ROCL_ANY_TAG, &p, NULL, NULL, &len, 200);
    if (rc != ROCL_ETIMEDOUT)
      die("after the failure a receive got %s (%zu bytes)", rocl_strerror(rc), len);
    pool_back(base, what);
  }
  free(into);
}

int run_big(void) {
  if (g_rank == 1) {
    big_receiver();
    return rocl_exit() == ROCL_OK ? 0 : 1;
  }
  if (g_rank < 10 || g_rank >= 10 + kPhaseCount) die("big: ranks 1 and 10..13");
  big_sender(g_rank - 10);
  return 0;
}
