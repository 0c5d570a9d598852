/* faults_stream.c - streams between two processes (faults.h): sequence
 * numbers one way, checked the other, each direction in a thread of its
 * own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"

static void fill_stream(unsigned char *p, uint32_t seq) {
  memcpy(p, &seq, sizeof seq);
  for (size_t i = sizeof seq; i < kStreamLen; ++i) p[i] = (unsigned char)(seq * 31u + i);
}

static void *stream_sender(void *arg) {
  Stream *s = arg;
  unsigned char buf[kStreamLen];
  uint32_t seq = 0;
  int failed_for_good = 0;
  while (!atomic_load(&s->stop)) {
    fill_stream(buf, seq);
    const int rc = rocl_send(s->me, s->peer, kTagData, buf, sizeof buf);
    if (rc == ROCL_OK) {
      if (s->first_failed != NO_SEQ && s->send_back_at == 0) s->send_back_at = now_ms();
      atomic_store(&s->sent, ++seq);
      usleep(kStreamGapUs);
      continue;
    }
    const double at = now_ms();
    if (s->first_failed == NO_SEQ) {
      s->send_rc = rc;
      s->send_failed_at = at;
      s->first_failed = seq;
      snprintf(s->send_error, sizeof s->send_error, "%s", rocl_last_error());
    }
    if (s->retry_ms <= 0 || at - s->send_failed_at > (double)s->retry_ms) {
      failed_for_good = 1;
      break;
    }
    sleep_ms(50);
  }
  if (!failed_for_good) {
    const uint32_t end[2] = {seq, s->first_failed};
    check(rocl_send(s->me, s->peer, kTagEnd, (void *)end, sizeof end), "sending a stream's end");
  }
  atomic_store(&s->send_done, 1);
  return NULL;
}

/* One message of the stream, checked; dies on anything but order. */
static void stream_took(Stream *s, const unsigned char *p, size_t len, double at) {
  uint32_t seq = 0;
  if (len != kStreamLen)
    die("a message of %zu bytes from rank %d, not %d", len, s->peer_rank, kStreamLen);
  memcpy(&seq, p, sizeof seq);
  unsigned char want[kStreamLen];
  fill_stream(want, seq);
  if (memcmp(p, want, len) != 0)
    die("message %u from rank %d: its bytes differ", seq, s->peer_rank);
  if (seq < s->expect)
    die("message %u from rank %d came after %u: out of order or twice", seq, s->peer_rank,
        s->expect - 1);
  if (seq > s->expect) {
    ++s->gaps;
    s->lost += seq - s->expect;
    s->gap_end = seq;
  }
  s->expect = seq + 1;
  if (s->last_at > 0 && at - s->last_at > s->pause_ms) {
    s->pause_ms = at - s->last_at;
    s->pause_end_at = at;
  }
  s->last_at = at;
}

static void *stream_receiver(void *arg) {
  Stream *s = arg;
  for (;;) {
    void *p = NULL;
    int tag = 0;
    size_t len = 0;
    const int rc = rocl_recv(s->me, s->peer, ROCL_ANY_TAG, &p, NULL, &tag, &len, kRecvMs);
    const double at = now_ms();
    if (rc != ROCL_OK) {
      s->recv_rc = rc;
      s->recv_failed_at = at;
      snprintf(s->recv_error, sizeof s->recv_error, "%s", rocl_last_error());
      break;
    }
    if (tag == kTagEnd) {
      uint32_t end[2];
      if (len != sizeof end) die("an end message of %zu bytes from rank %d", len, s->peer_rank);
      memcpy(end, p, sizeof end);
      if (end[0] != s->expect)
        die("rank %d says it sent %u messages, the last one here was %u", s->peer_rank, end[0],
            s->expect);
      if (s->gaps > 1 || (s->gaps == 1 && s->gap_end != end[1]))
        die("%u gap(s) in rank %d's messages (the last up to %u), but its first failed send was "
            "%u: a message it was told had gone is missing",
            s->gaps, s->peer_rank, s->gap_end, end[1]);
      s->ended = 1;
      check(rocl_bfret(p), "rocl_bfret");
      break;
    }
    stream_took(s, p, len, at);
    check(rocl_bfret(p), "rocl_bfret");
    atomic_store(&s->received, s->expect);
  }
  atomic_store(&s->recv_done, 1);
  return NULL;
}

void stream_start(Stream *s, rocl_gid_t me, rocl_gid_t peer, int peer_rank, long retry_ms) {
  memset(s, 0, sizeof *s);
  s->me = me;
  s->peer = peer;
  s->peer_rank = peer_rank;
  s->retry_ms = retry_ms;
  s->first_failed = NO_SEQ;
  if (pthread_create(&s->sender, NULL, stream_sender, s) != 0 ||
      pthread_create(&s->receiver, NULL, stream_receiver, s) != 0)
    die("pthread_create");
}

/* Waits until every stream has received at least n messages. */
void streams_flowing(Stream *s, int count, unsigned n) {
  const double give_up = now_ms() + kFindMs;
  for (int i = 0; i < count; ++i) {
    while (atomic_load(&s[i].received) < n) {
      if (now_ms() > give_up) die("the stream from rank %d did not flow", s[i].peer_rank);
      sleep_ms(10);
    }
  }
}

/* Stops a healthy stream: its end goes out, the peer's end comes in. */
void stream_finish(Stream *s) {
  atomic_store(&s->stop, 1);
  pthread_join(s->sender, NULL);
  pthread_join(s->receiver, NULL);
  if (!s->ended)
    die("the stream from rank %d did not end well: %s (%s)", s->peer_rank,
        rocl_strerror(s->recv_rc), s->recv_error);
}

/* Waits (up to limit_ms) until both of s's threads have stopped on an error. */
void stream_broken(Stream *s, double limit_ms) {
  const double give_up = now_ms() + limit_ms;
  while (!atomic_load(&s->send_done) || !atomic_load(&s->recv_done)) {
    if (now_ms() > give_up)
      die("%.0f s on, the %s to rank %d still %s", limit_ms / 1e3,
          atomic_load(&s->send_done) ? "receive from" : "send", s->peer_rank, "goes on: no error");
    sleep_ms(10);
  }
  pthread_join(s->sender, NULL);
  pthread_join(s->receiver, NULL);
}
