/* stream_order: run under roclrun -n 2 over one transport between processes
 * (ROCL_TRANSPORTS). Rank 0 streams small messages (tags 1 and 2, 8 to 200
 * bytes, each carrying its sequence number) faster than rank 1, which
 * works a little after each, takes them, so that they wait in its input
 * (over shm: in the ring, where a receive may take the message at the
 * front itself, past the mailbox: Transport::take_arrived). Rank 1 checks
 * that such a take overtakes nothing the mailbox would have matched first,
 * every 100 messages:
 * - a receive posted before (rocl_irecv) gets the first message, the
 *   rocl_recv after it the second;
 * - a receive for tag 2 only skips the tag-1 message at the front, which
 *   the next receive for any tag then gets;
 * - every other message arrives in order, whole, to rocl_recv (zero-copy)
 *   and to rocl_recvx (into memory), mixed.
 * Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "find_rank.h"

#define MESSAGES 20000

static size_t length_of(unsigned seq) {
  return 8 + (seq * 37u) % 193u;
}
static int tag_of(unsigned seq) {
  return seq % 2 == 0 ? 1 : 2;
}

static void fill(unsigned char *p, size_t n, unsigned seq) {
  memcpy(p, &seq, sizeof seq);
  for (size_t i = sizeof seq; i < n; ++i) p[i] = (unsigned char)(seq * 13u + i);
}

/* Whether (p, n) with tag is message seq, intact. */
static int is_message(const unsigned char *p, size_t n, int tag, unsigned seq) {
  unsigned char want[256];
  if (n != length_of(seq) || tag != tag_of(seq)) return 0;
  fill(want, n, seq);
  return memcmp(p, want, n) == 0;
}

static void expect_recv(rocl_gid_t me, rocl_gid_t peer, int tag, unsigned seq) {
  void *p = NULL;
  int atag = -1;
  size_t len = 0;
  CHECK(rocl_recv(me, peer, tag, &p, NULL, &atag, &len, 30000) == ROCL_OK, "rocl_recv");
  if (!is_message(p, len, atag, seq)) {
    unsigned got = 0;
    memcpy(&got, p, sizeof got);
    fprintf(stderr, "stream_order: rocl_recv(tag %d) got message %u (tag %d, %zu B), wanted %u\n",
            tag, got, atag, len, seq);
    exit(1);
  }
  CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
}

static void expect_recvx(rocl_gid_t me, rocl_gid_t peer, unsigned seq) {
  unsigned char into[256];
  rocl_status_t st;
  CHECK(rocl_recvx(me, peer, ROCL_ANY, 0, into, sizeof into, &st, 30000) == ROCL_OK, "rocl_recvx");
  if (!is_message(into, st.len, st.tag, seq)) {
    unsigned got = 0;
    memcpy(&got, into, sizeof got);
    fprintf(stderr, "stream_order: rocl_recvx got message %u (tag %d, %zu B), wanted %u\n", got,
            st.tag, st.len, seq);
    exit(1);
  }
}

/* A little work per message, so that the sender gets ahead and the stream
 * waits in our input. Spun, not slept: a receiver that polls keeps its
 * transport's thread away (shm's lease), so the messages stay in the ring. */
static void slow_down(void) {
  volatile unsigned x = 0;
  for (unsigned i = 0; i < 300; ++i) x += i;
}

int main(void) {
  const int rank = start_rank("stream_order");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("stream_order", rank);
  const rocl_gid_t peer = find_rank("stream_order", 1 - rank);
  if (rank == 0) {
    unsigned char msg[256];
    for (unsigned seq = 0; seq < MESSAGES; ++seq) {
      fill(msg, length_of(seq), seq);
      CHECK(rocl_send(me, peer, tag_of(seq), msg, length_of(seq)) == ROCL_OK, "rocl_send");
    }
    void *p = NULL;
    CHECK(rocl_recv(me, peer, 9, &p, NULL, NULL, NULL, 60000) == ROCL_OK, "rocl_recv (done)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  } else {
    unsigned seq = 0;
    while (seq < MESSAGES) {
      if (seq % 100 == 10 && seq + 1 < MESSAGES) {
        rocl_request_t first = ROCL_REQUEST_NULL;
        CHECK(rocl_irecv(me, peer, ROCL_ANY, &first) == ROCL_OK, "rocl_irecv");
        expect_recv(me, peer, ROCL_ANY, seq + 1);  // seq is the posted receive's
        rocl_status_t st;
        CHECK(rocl_wait(&first, &st, 30000) == ROCL_OK, "rocl_wait");
        CHECK(is_message(st.ptr, st.len, st.tag, seq), "the receive posted first got its message");
        CHECK(rocl_bfret(st.ptr) == ROCL_OK, "rocl_bfret");
        seq += 2;
      } else if (seq % 100 == 50 && seq + 1 < MESSAGES) {
        expect_recv(me, peer, 2, seq + 1);  // tag 2: past seq (tag 1), at the front
        expect_recv(me, peer, ROCL_ANY, seq);
        seq += 2;
      } else {
        if (seq % 7 == 0) {
          expect_recvx(me, peer, seq);
        } else {
          expect_recv(me, peer, ROCL_ANY, seq);
        }
        ++seq;
      }
      slow_down();
    }
    CHECK(rocl_send(me, peer, 9, NULL, 0) == ROCL_OK, "rocl_send (done)");
  }
  rocl_exit();
  return 0;
}
