/* faults.c - what a program sees when something fails across test hosts,
 * for faults_test.sh, which starts a rocld per host, runs this program in
 * the hosts (ROCL_RANK picks the part) and makes the fault. The script
 * passes moments to the program as files in $FAULTS_DIR holding the wall
 * clock in ms (`date +%s%3N`, the clock every namespace shares): "killed"
 * just before a kill -9, "down" and "up" around a link's outage. The
 * program prints "detected in N ms" against them and checks each figure
 * against the documented bound plus $FAULTS_SLACK_MS (default 2000, for a
 * loaded machine). Here the modes about processes, hosts and links;
 * faults_memory.c has stall and big.
 *
 *   faults kill   ranks 0, 1, 2 stream to each other (1 KiB messages with
 *                 sequence numbers, a thread per peer and direction); rank
 *                 2 is killed. Ranks 0 and 1: the send to rank 2 and the
 *                 receive from it fail with a named error naming its gid;
 *                 their own streams go on, none lost, none out of order.
 *   faults rocld  ranks 0 (h1) and 1 (h2) stream to each other, rank 2
 *                 (h3) looks rank 1 up; h2's rocld is killed. Rank 2: rank
 *                 1 vanishes from its queries once h2's server is dropped.
 *                 Rank 0: its send to rank 1 fails then, rank 1's messages
 *                 still come, and a receive from rank 1 fails. Rank 1:
 *                 directory calls fail naming the lost server; its sends to
 *                 rank 0 go on; its receive from rank 0 fails saying that
 *                 whether rank 0 lives can no longer be told; once rank 0
 *                 has exited a send to it fails. After h2's rocld is
 *                 restarted, rank 2 finds rank 3, a new process of h2, and
 *                 they exchange a message.
 *   faults link   ranks 0 and 1 stream to each other while h1's eth0 is
 *                 down; a failed send is retried until it goes. With
 *                 FAULTS_EXPECT=delivered: no error, none lost, the stream
 *                 resumes once the link is back. With FAULTS_EXPECT=error:
 *                 a send fails with ROCL_EPEER naming the peer within twice
 *                 ROCL_TCP_USER_TIMEOUT_MS; once the link is back the
 *                 retried send goes; the receiver sees the messages in
 *                 order with one gap at most, just before the first failed
 *                 one (the messages the broken connection held; none with
 *                 FAULTS_LOSSLESS=1).
 *   faults stall  (faults_memory.c) rank 0 sends 64 KiB messages to rank 1,
 *                 which does not receive: rank 0's send blocks, its pool
 *                 and RSS stay bounded, rank 1's pool stays under its
 *                 ROCL_POOL_MAX; then rank 1 takes everything, in order;
 *                 rank 0 blocks again and rank 1 is killed: the blocked
 *                 send fails naming it and rank 0's pool gets its blocks
 *                 back.
 *   faults big    (faults_memory.c) rank 1 (h2) receives one large message
 *                 per phase from a sender on h1 (rank 10 + the phase):
 *                 rndv (a 256 MiB buffer, by rendezvous, into a pool
 *                 block), into (the same into the receive's memory,
 *                 rocl_recvx), eager (a 48 MiB buffer, sent eagerly), each
 *                 sender killed half-way by the script; then whole (256
 *                 MiB, not killed). The receive fails with ROCL_EPEER,
 *                 nothing partial arrives, the pool gets every byte back;
 *                 the whole message arrives intact.
 *
 * Exit 0 on success; 1 with a sentence on stderr naming the mode, the rank
 * and what went wrong. Only the public API. */
#define _GNU_SOURCE
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"

/* ---- kill: a process killed mid-stream ------------------------------------- */

static int run_kill(void) {
  enum { kVictim = 2 };
  const rocl_gid_t me = register_rank(g_rank);
  Stream s[2];
  int n = 0;
  for (int peer = 0; peer < 3; ++peer) {
    if (peer != g_rank) stream_start(&s[n++], me, find_rank(peer), peer, 0);
  }
  streams_flowing(s, n, 500);
  say("streaming");
  if (g_rank == kVictim) {
    sleep_ms(kMarkMs);
    die("not killed");
  }
  Stream *victim = &s[1], *other = &s[0]; /* peers in rank order: the victim is last */
  const double killed = mark_ms("killed");
  stream_broken(victim, 30000);
  const unsigned before = atomic_load(&other->received);
  /* Send: the connection breaks at once (the victim's kernel resets it);
   * the next send finds no connection or the gid gone from the directory
   * (its host's server removed it at once). */
  expect_failure("the send to rank 2", victim->send_rc, victim->send_error, victim->send_failed_at,
                 killed, ROCL_EPEER, ROCL_EBADGID, victim->peer, NULL, 2000 + (double)g_slack_ms);
  /* Receive: ROCL_PEER_CHECK_MS, then a quarter of it of grace. */
  expect_failure("the receive from rank 2", victim->recv_rc, victim->recv_error,
                 victim->recv_failed_at, killed, ROCL_EPEER, 0, victim->peer, NULL,
                 (double)g_check_ms * 1.25 + (double)g_slack_ms);
  sleep_ms(2000);
  if (atomic_load(&other->received) <= before)
    die("nothing came from rank %d after rank 2 failed", other->peer_rank);
  stream_finish(other);
  say("ok: rank %d's %u messages came in order, none lost, the longest pause %.0f ms",
      other->peer_rank, other->expect, other->pause_ms);
  if (other->pause_ms > 1000 + (double)g_slack_ms)
    die("rank %d's stream stalled for %.0f ms", other->peer_rank, other->pause_ms);
  return rocl_exit() == ROCL_OK ? 0 : 1;
}

/* ---- rocld: a host's directory server killed, then restarted --------------- */

/* The server id of a wide gid (bits 63..48). */
static unsigned server_of(rocl_gid_t gid) {
  return (unsigned)(gid >> 48);
}

static void rocld_observer(void) {
  char why[512];
  rocl_gid_t r1 = find_rank(1);
  say("watching rank 1's resource from h3");
  const double killed = mark_ms("killed");
  double unanswered = 0; /* the first query that h2's server did not answer */
  for (;;) {
    const int rc = look_up(1, &r1, why, sizeof why);
    if (rc == ROCL_ENOTFOUND) break;
    if (rc == ROCL_EPEER && unanswered == 0) {
      unanswered = now_ms();
      say("a query for rank 1 failed with %s %.0f ms after its server died: \"%s\"",
          rocl_strerror(rc), unanswered - killed, why);
    }
    if (rc != ROCL_OK && rc != ROCL_EPEER)
      die("looking up rank 1 failed with %s (%s)", rocl_strerror(rc), why);
    if (now_ms() - killed > 30000) die("rank 1 is still found 30 s after its server died");
    sleep_ms(20);
  }
  const double gone = now_ms() - killed;
  /* Silent for 3 announcement periods, noticed at the next one. */
  say("detected in %.0f ms (rank 1 gone from h3's queries: %s; bound %ld ms)", gone, why,
      4000 + g_slack_ms);
  if (gone > 4000 + (double)g_slack_ms) die("rank 1 vanished only after %.0f ms", gone);
  const double restarted = mark_ms("restarted");
  rocl_gid_t r3 = 0;
  for (;;) {
    const int rc = look_up(3, &r3, why, sizeof why);
    if (rc == ROCL_OK) break;
    if (rc != ROCL_ENOTFOUND) die("looking up rank 3 failed: %s (%s)", rocl_strerror(rc), why);
    if (now_ms() - restarted > 30000) die("rank 3 of h2 not found 30 s after h2's rocld restarted");
    sleep_ms(20);
  }
  say("found rank 3 of the restarted server %.0f ms after the restart (gid %#llx, server %u)",
      now_ms() - restarted, (unsigned long long)r3, server_of(r3));
  if (server_of(r3) != server_of(r1))
    die("rank 3's gid %#llx is not of h2's server %u", (unsigned long long)r3, server_of(r1));
  if (look_up(1, &r1, why, sizeof why) != ROCL_ENOTFOUND) die("rank 1 is back after the restart");
  const rocl_gid_t me = register_rank(2);
  check(rocl_send(me, r3, kTagHello, "hello", 5), "sending to rank 3");
  void *p = NULL;
  check(rocl_recv(me, r3, kTagHello, &p, NULL, NULL, NULL, kRecvMs), "the answer of rank 3");
  check(rocl_bfret(p), "rocl_bfret");
  say("ok: talked with rank 3 on the restarted server");
}

static void rocld_newcomer(void) {
  const rocl_gid_t me = register_rank(3);
  void *p = NULL;
  rocl_gid_t from = 0;
  check(rocl_recv(me, ROCL_ANY_GID, kTagHello, &p, &from, NULL, NULL, kRecvMs), "a hello");
  check(rocl_bfret(p), "rocl_bfret");
  check(rocl_send(me, from, kTagHello, "hello", 5), "answering");
  say("ok: registered at the restarted server and answered");
}

/* One more receive from s's peer, which must fail as `want` within bound_ms
 * of since. */
static void receive_fails(Stream *s, const char *what, int want, double since, double bound_ms) {
  void *p = NULL;
  const int rc = rocl_recv(s->me, s->peer, ROCL_ANY_TAG, &p, NULL, NULL, NULL, kRecvMs);
  char why[512];
  snprintf(why, sizeof why, "%s", rc == ROCL_OK ? "a message came" : rocl_last_error());
  if (rc == ROCL_OK) check(rocl_bfret(p), "rocl_bfret");
  expect_failure(what, rc, why, now_ms(), since, want, 0, s->peer, NULL, bound_ms);
}

/* Rank 0, on h1: once h2's server is dropped (silent for 3 s), rank 1 is
 * gone from the directory here. */
static void rocld_far_side(Stream *s) {
  const double killed = mark_ms("killed");
  const double give_up = killed + 30000;
  while (!atomic_load(&s->send_done)) {
    if (now_ms() > give_up) die("sends to rank 1 still go 30 s after its server died");
    sleep_ms(10);
  }
  pthread_join(s->sender, NULL);
  /* Gone once h2's server is dropped; before, a route that something else
   * made stale cannot be looked up (h2's server does not answer). */
  expect_failure("the send to rank 1", s->send_rc, s->send_error, s->send_failed_at, killed,
                 ROCL_EBADGID, ROCL_EPEER, s->peer, NULL, 4000 + (double)g_slack_ms);
  /* Rank 1's own sends still come over their cached route. */
  const unsigned at_failure = atomic_load(&s->received);
  while (atomic_load(&s->received) < at_failure + 500) {
    if (now_ms() > give_up) die("rank 1's messages stopped coming");
    sleep_ms(10);
  }
  say("rank 1's messages still come after the send to it failed");
  write_mark("r0-cut");
  pthread_join(s->receiver, NULL);
  if (!s->ended)
    die("rank 1's stream ended with %s (%s)", rocl_strerror(s->recv_rc), s->recv_error);
  say("rank 1's stream ended well: %u messages in order, none lost", s->expect);
  /* Waiting for rank 1 now: it is not in the directory here. */
  receive_fails(s, "a receive from rank 1 (its host out of the job)", ROCL_EPEER, killed,
                4000 + (double)g_check_ms * 1.25 + (double)g_slack_ms);
}

/* Rank 1, on h2, whose server died: its directory is lost, its cached
 * routes are not; the others drop its host (its server silent for 3 s). */
static void rocld_near_side(Stream *s) {
  const double killed = mark_ms("killed");
  rocl_gid_t gid = 0;
  char why[512];
  int rc;
  while ((rc = look_up(0, &gid, why, sizeof why)) == ROCL_OK) {
    if (now_ms() - killed > 10000) die("the directory still answers 10 s after its server died");
    sleep_ms(20);
  }
  expect_failure("a query at h2's lost server", rc, why, now_ms(), killed, ROCL_EPEER, 0, 0,
                 "directory server", 1000 + (double)g_slack_ms);
  mark_ms("r0-cut");
  atomic_store(&s->stop, 1);
  pthread_join(s->sender, NULL);
  if (s->first_failed != NO_SEQ)
    die("a send to rank 0 failed: %s (%s)", rocl_strerror(s->send_rc), s->send_error);
  say("sent rank 0 %u messages, the last ones after h2's host left the job", atomic_load(&s->sent));
  /* Rank 0's messages stopped when h2 was dropped; nothing can tell this
   * process whether rank 0 lives. */
  const double give_up = killed + 30000;
  while (!atomic_load(&s->recv_done) && now_ms() < give_up) sleep_ms(10);
  if (!atomic_load(&s->recv_done)) die("the receive from rank 0 still waits 30 s on");
  pthread_join(s->receiver, NULL);
  expect_failure("the receive from rank 0", s->recv_rc, s->recv_error, s->recv_failed_at, killed,
                 ROCL_EPEER, 0, s->peer, "can no longer be told",
                 4000 + (double)g_check_ms * 1.25 + (double)g_slack_ms);
  /* Once rank 0 has gone its connection is closed: a send cannot go. */
  const double exited = mark_ms("r0-exited");
  do {
    rc = rocl_send(s->me, s->peer, kTagData, "x", 1);
    snprintf(why, sizeof why, "%s", rocl_last_error());
    if (rc == ROCL_OK) sleep_ms(20);
  } while (rc == ROCL_OK && now_ms() - exited < 10000);
  expect_failure("a send to rank 0 once it exited", rc, why, now_ms(), exited, ROCL_EPEER, 0,
                 s->peer, NULL, 1000 + (double)g_slack_ms);
}

static int run_rocld(void) {
  if (g_rank == 2) {
    rocld_observer();
    return rocl_exit() == ROCL_OK ? 0 : 1;
  }
  if (g_rank == 3) {
    rocld_newcomer();
    return 0; /* its server is the restarted one; rocl_exit is for the others */
  }
  const rocl_gid_t me = register_rank(g_rank);
  Stream s;
  stream_start(&s, me, find_rank(1 - g_rank), 1 - g_rank, 0);
  streams_flowing(&s, 1, 500);
  say("streaming");
  if (g_rank == 0) {
    rocld_far_side(&s);
  } else {
    rocld_near_side(&s);
  }
  const double start = now_ms();
  check(rocl_exit(), "rocl_exit");
  say("rocl_exit returned in %.0f ms", now_ms() - start);
  return 0;
}

/* ---- link: an interface down, then up --------------------------------------- */

static int run_link(void) {
  const char *expect = getenv("FAULTS_EXPECT");
  if (expect == NULL || (strcmp(expect, "delivered") != 0 && strcmp(expect, "error") != 0))
    die("FAULTS_EXPECT must be delivered or error");
  const int delivered = strcmp(expect, "delivered") == 0;
  const long timeout_ms = env_long("ROCL_TCP_USER_TIMEOUT_MS", 30000);
  const rocl_gid_t me = register_rank(g_rank);
  Stream s;
  stream_start(&s, me, find_rank(1 - g_rank), 1 - g_rank, 120000);
  streams_flowing(&s, 1, 500);
  say("streaming");
  const double down = mark_ms("down"), up = mark_ms("up");
  const unsigned at_up = atomic_load(&s.received);
  const double give_up = now_ms() + 30000;
  /* Until 100 more messages came, or the peer ended its stream (its side
   * may have resumed first and stopped sending), and a failed send went. */
  while ((atomic_load(&s.received) <= at_up + 100 && !atomic_load(&s.recv_done)) ||
         (!delivered && s.send_back_at == 0)) {
    if (now_ms() > give_up) die("the stream did not resume within 30 s of the link's return");
    sleep_ms(10);
  }
  stream_finish(&s);
  const double resumed = s.pause_end_at - up;
  say("the longest pause: %.0f ms, over %.0f ms after the link came back", s.pause_ms, resumed);
  if (delivered) {
    if (s.first_failed != NO_SEQ)
      die("a send failed (%s: %s) though the link came back within ROCL_TCP_USER_TIMEOUT_MS",
          rocl_strerror(s.send_rc), s.send_error);
    if (s.gaps != 0) die("%u messages lost", s.lost);
    /* TCP retransmits at doubling intervals (from 200 ms up to 1 s at
     * first): the first after the link's return is at most about the
     * outage's length later. */
    const double bound = (up - down) + 1000 + (double)g_slack_ms;
    say("resumed in %.0f ms (after the link came back; bound %.0f ms)", resumed, bound);
    if (resumed > bound) die("delivered %.0f ms after the link came back", resumed);
    say("ok: no error, %u messages in order, none lost", s.expect);
  } else {
    if (s.first_failed == NO_SEQ) die("no send failed while the link was down");
    /* The connection is dropped within the timeout; the send waiting in
     * it is tried once more over a new connection, whose connect gives up
     * within the same timeout. The kernel sees each timeout at a
     * retransmission (a SYN's comes after 1 s): 1 s more. */
    expect_failure("a send during the outage", s.send_rc, s.send_error, s.send_failed_at, down,
                   ROCL_EPEER, 0, 0, "peer", 2 * (double)timeout_ms + 1000 + (double)g_slack_ms);
    say("the retried send went %.0f ms after the link came back", s.send_back_at - up);
    if (s.send_back_at - up > 2000 + (double)g_slack_ms) die("the retried send went late");
    if (env_long("FAULTS_LOSSLESS", 0) != 0 && s.lost != 0)
      die("%u messages that rank %d's rocl_send had accepted never came (the broken connection "
          "held them)",
          s.lost, s.peer_rank);
    say("ok: %u messages in order, %u lost in the broken connection (%u gap)", s.expect, s.lost,
        s.gaps);
  }
  return rocl_exit() == ROCL_OK ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *r = getenv("ROCL_RANK");
  g_rank = r != NULL ? atoi(r) : 0;
  if (argc < 2) {
    fprintf(stderr, "usage: faults kill|rocld|link|stall|big\n");
    return 2;
  }
  g_mode = argv[1];
  g_slack_ms = env_long("FAULTS_SLACK_MS", 2000);
  g_check_ms = env_long("ROCL_PEER_CHECK_MS", 500);
  if (rocl_init() <= 0) die("rocl_init: %s", rocl_last_error());
  say("pid %d", (int)getpid());
  if (strcmp(g_mode, "kill") == 0) return run_kill();
  if (strcmp(g_mode, "rocld") == 0) return run_rocld();
  if (strcmp(g_mode, "link") == 0) return run_link();
  if (strcmp(g_mode, "stall") == 0) return run_stall();
  if (strcmp(g_mode, "big") == 0) return run_big();
  die("unknown mode %s", g_mode);
  return 2;
}
