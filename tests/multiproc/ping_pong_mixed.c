/* ping_pong_mixed: run under roclrun -n 2 over one transport between
 * processes (ROCL_TRANSPORTS). A ping-pong whose receives wait at the
 * input's front (over shm: Context::spin_take, which takes its message
 * there without posting) next to everything that must make such a wait
 * give way to the usual one:
 * - rank 1 has two resources, each received on by its own thread: the
 *   echo (A) and a sink (B); rank 0 sends B a message before every third
 *   ping, so that the ring's front often holds the other resource's
 *   message (take_arrived's *left: progress() delivers it);
 * - every seventh ping is 64 KiB (fragments or rendezvous, never taken at
 *   the front), the others 1 to 600 bytes;
 * - every fifth, a thread of rank 1 also sends A an in-process message
 *   (tag 3), which A takes with a wildcard receive before the next ping
 *   (a wildcard receive does not wait at the front: the in-process
 *   hand-off may bring its message);
 * - every eleventh reply is received into caller memory (rocl_recvx).
 * Every message must arrive intact and in order. Exit 0 on success. */
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "find_rank.h"

#define PINGS 3000
#define BIG (64 * 1024)

enum { kTagPing = 1, kTagSink = 2, kTagLocal = 3, kTagDone = 9 };

static size_t ping_length(unsigned i) {
  return i % 7 == 3 ? BIG : 1 + (i * 53u) % 600u;
}

struct sink_args {
  rocl_gid_t me, from;
};

/* Rank 1's second thread: receives B's messages, in order. */
static void *sink(void *arg) {
  const struct sink_args *a = arg;
  for (unsigned i = 0;; i += 3) {
    void *p = NULL;
    int tag = -1;
    size_t len = 0;
    CHECK(rocl_recv(a->me, a->from, ROCL_ANY, &p, NULL, &tag, &len, 60000) == ROCL_OK,
          "rocl_recv (sink)");
    if (tag == kTagDone) {
      CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
      return NULL;
    }
    CHECK(tag == kTagSink && len == 24, "a sink message of 24 bytes");
    expect_pattern(p, len, 1000000u + i, "the sink's messages in order, intact");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  }
}

struct local_args {
  rocl_gid_t me, to;
};

/* Rank 1's in-process sender: one message to A, from a resource of its own. */
static void *send_local(void *arg) {
  const struct local_args *a = arg;
  unsigned char msg[40];
  fill_pattern(msg, sizeof msg, 7);
  CHECK(rocl_send(a->me, a->to, kTagLocal, msg, sizeof msg) == ROCL_OK, "rocl_send (local)");
  return NULL;
}

static void ping(rocl_gid_t me, rocl_gid_t echo, rocl_gid_t sink_gid) {
  static unsigned char buf[BIG];
  unsigned char sunk[24];
  for (unsigned i = 0; i < PINGS; ++i) {
    if (i % 3 == 0) {
      fill_pattern(sunk, sizeof sunk, 1000000u + i);
      CHECK(rocl_send(me, sink_gid, kTagSink, sunk, sizeof sunk) == ROCL_OK, "rocl_send (sink)");
    }
    const size_t n = ping_length(i);
    fill_pattern(buf, n, i);
    CHECK(rocl_send(me, echo, kTagPing, buf, n) == ROCL_OK, "rocl_send (ping)");
    if (i % 11 == 5) {
      rocl_status_t st;
      CHECK(rocl_recvx(me, echo, kTagPing, 0, buf, sizeof buf, &st, 60000) == ROCL_OK,
            "rocl_recvx (reply)");
      CHECK(st.len == n, "the reply's length");
      expect_pattern(buf, n, i, "the reply (into memory)");
    } else {
      void *p = NULL;
      size_t len = 0;
      CHECK(rocl_recv(me, echo, kTagPing, &p, NULL, NULL, &len, 60000) == ROCL_OK,
            "rocl_recv (reply)");
      CHECK(len == n, "the reply's length");
      expect_pattern(p, n, i, "the reply");
      CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    }
  }
  CHECK(rocl_send(me, echo, kTagDone, NULL, 0) == ROCL_OK, "rocl_send (done)");
  CHECK(rocl_send(me, sink_gid, kTagDone, NULL, 0) == ROCL_OK, "rocl_send (done)");
}

static void echo(rocl_gid_t me, rocl_gid_t from, rocl_gid_t local) {
  for (unsigned i = 0;; ++i) {
    if (i % 5 == 2) {
      struct local_args la = {local, me};
      pthread_t t;
      CHECK(pthread_create(&t, NULL, send_local, &la) == 0, "pthread_create");
      CHECK(pthread_join(t, NULL) == 0, "pthread_join");
      void *p = NULL;
      rocl_gid_t origin = ROCL_NULL_GID;
      int tag = -1;
      size_t len = 0;
      CHECK(rocl_recv(me, ROCL_ANY, kTagLocal, &p, &origin, &tag, &len, 60000) == ROCL_OK,
            "rocl_recv (local)");
      CHECK(origin == local && len == 40, "the in-process message");
      expect_pattern(p, len, 7, "the in-process message");
      CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    }
    void *p = NULL;
    int tag = -1;
    size_t len = 0;
    CHECK(rocl_recv(me, from, ROCL_ANY, &p, NULL, &tag, &len, 60000) == ROCL_OK, "rocl_recv");
    if (tag == kTagDone) {
      CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
      return;
    }
    CHECK(tag == kTagPing && len == ping_length(i), "ping i, of its length");
    expect_pattern(p, len, i, "the ping, in order, intact");
    CHECK(rocl_bftoret(p) == ROCL_OK, "rocl_bftoret");
    CHECK(rocl_send(me, from, kTagPing, p, len) == ROCL_OK, "rocl_send (echo)");
  }
}

int main(void) {
  const int rank = start_rank("ping_pong_mixed");
  CHECK(rocl_init() > 0, "rocl_init");
  if (rank == 0) {
    const rocl_gid_t me = register_rank("ping_pong_mixed", 0);
    const rocl_gid_t echo_gid = find_rank("ping_pong_mixed", 1);
    const rocl_gid_t sink_gid = find_rank("ping_pong_mixed_sink", 1);
    ping(me, echo_gid, sink_gid);
  } else {
    const rocl_gid_t sink_gid = register_rank("ping_pong_mixed_sink", 1);
    const rocl_gid_t local = register_rank("ping_pong_mixed_local", 1);
    const rocl_gid_t me = register_rank("ping_pong_mixed", 1);
    const rocl_gid_t from = find_rank("ping_pong_mixed", 0);
    struct sink_args sa = {sink_gid, from};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, sink, &sa) == 0, "pthread_create");
    echo(me, from, local);
    CHECK(pthread_join(t, NULL) == 0, "pthread_join");
  }
  rocl_exit();
  return 0;
}
