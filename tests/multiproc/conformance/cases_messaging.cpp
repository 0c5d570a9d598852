// cases_messaging.cpp - ordering, wildcards, timeouts, immediate operations
// and message sizes between the two ranks.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "cases.hpp"

namespace conf {
namespace {

// Receives one message and checks everything about it.
void expect_msg(rocl_gid_t dgid, rocl_gid_t ogid, int tag, int timeout_ms, rocl_gid_t want_origin,
                int want_tag, std::string_view want_text) {
  Msg m = recv_msg(dgid, ogid, tag, timeout_ms);
  CHECK(m.origin == want_origin && m.tag == want_tag && m.data == want_text,
        "receive (origin %s, tag %d) on %s got origin %s tag %d \"%s\"; expected origin %s tag %d "
        "\"%.*s\"",
        ogid == ROCL_ANY_GID ? "ANY" : hex(ogid).c_str(), tag, hex(dgid).c_str(),
        hex(m.origin).c_str(), m.tag, m.data.c_str(), hex(want_origin).c_str(), want_tag,
        static_cast<int>(want_text.size()), want_text.data());
}

// Nothing (more) is waiting on dgid.
void expect_empty(rocl_gid_t dgid) {
  void *p = nullptr;
  rocl_gid_t from = 0;
  int tag = -1;
  std::size_t len = 0;
  const int rc = rocl_recv(dgid, ROCL_ANY_GID, ROCL_ANY_TAG, &p, &from, &tag, &len, 0);
  CHECK(rc == ROCL_ETIMEDOUT, "an extra message waits on %s: rc %s, origin %s, tag %d, %zu bytes",
        hex(dgid).c_str(), rc_text(rc).c_str(), hex(from).c_str(), tag, len);
}

// ---- 1. ordering --------------------------------------------------------------------------

constexpr int kOrderingMessages = 10000;
constexpr std::size_t kOrderingMax = 256 * 1024;

std::size_t ordering_size(Rng &g) {
  const std::uint64_t r = g.below(100);
  if (r < 40) return g.below(65);                            // 0..64 B
  if (r < 70) return 65 + g.below(4096 - 64);                // 65 B..4 KiB
  if (r < 90) return 4097 + g.below(65536 - 4096);           // ..64 KiB
  if (r < 99) return 65537 + g.below(kOrderingMax - 65537);  // ..256 KiB - 1
  return kOrderingMax;                                       // 256 KiB
}

// What rank `rank` sends, in order: which origin (0: o1, 1: o2) and length.
struct OrderingPlan {
  std::vector<int> which;
  std::vector<std::size_t> len;
};
OrderingPlan ordering_plan(int rank) {
  OrderingPlan p;
  Rng g(mix(suite_seed(), 1, rank));
  for (int i = 0; i < kOrderingMessages; ++i) {
    p.which.push_back(g.below(4) == 0 ? 1 : 0);
    p.len.push_back(i % 97 == 0 ? 0 : ordering_size(g));
  }
  return p;
}

}  // namespace

void case_ordering(Rank &r) {
  const rocl_gid_t o1 = reg("o1"), o2 = reg("o2"), d = reg("d");
  const rocl_gid_t peer_o1 = find("o1", r.peer()), peer_o2 = find("o2", r.peer());
  const rocl_gid_t peer_d = find("d", r.peer());
  barrier("registered");

  // This rank's sender thread: both origins, interleaved, to the peer's d.
  std::thread sender([&] {
    RankScope scope(r);
    const OrderingPlan plan = ordering_plan(r.rank);
    std::vector<unsigned char> user(kOrderingMax);
    std::uint32_t seq[2] = {0, 0};
    for (int i = 0; i < kOrderingMessages; ++i) {
      const int w = plan.which[i];
      const std::size_t n = plan.len[i];
      const std::uint32_t s = seq[w]++;
      const std::uint64_t seed = mix(r.rank, w, s, n);
      void *p = user.data();
      if (i % 2 == 0) {  // a zero-copy buffer every other message
        p = rocl_bfget(n);
        CHECK(p != nullptr, "rocl_bfget(%zu)", n);
        fill_pattern(p, n, seed);
        CHECK_RC(rocl_bftoret(p), ROCL_OK);
      } else {
        fill_pattern(p, n, seed);
      }
      const int rc = rocl_send(w == 0 ? o1 : o2, peer_d, static_cast<int>(s), p, n);
      CHECK(rc == ROCL_OK, "send %d (origin o%d seq %u, %zu B): %s", i, w + 1, s, n,
            rc_text(rc).c_str());
    }
  });

  // Receive the peer's 10000, any origin: per origin the tags (= sequence
  // numbers) must come 0, 1, 2, ... with the planned lengths and bytes.
  const OrderingPlan peer_plan = ordering_plan(r.peer());
  std::vector<std::size_t> lens[2];
  for (int i = 0; i < kOrderingMessages; ++i) lens[peer_plan.which[i]].push_back(peer_plan.len[i]);
  std::uint32_t expect[2] = {0, 0};
  std::uint64_t bytes = 0;
  const double t0 = now_ms();
  for (int i = 0; i < kOrderingMessages; ++i) {
    if (i % 1000 == 0) step("ordering: received %d of %d", i, kOrderingMessages);
    void *p = nullptr;
    rocl_gid_t from = 0;
    int tag = -1;
    std::size_t len = 0;
    const int rc = rocl_recv(d, ROCL_ANY_GID, ROCL_ANY_TAG, &p, &from, &tag, &len, kLongMs);
    CHECK(rc == ROCL_OK, "receive %d of %d: %s (next expected: o1 seq %u, o2 seq %u)", i,
          kOrderingMessages, rc_text(rc).c_str(), expect[0], expect[1]);
    const int w = from == peer_o1 ? 0 : from == peer_o2 ? 1 : -1;
    CHECK(w >= 0, "message %d from unknown origin %s", i, hex(from).c_str());
    CHECK(tag == static_cast<int>(expect[w]),
          "out of order from o%d: got sequence number %d, expected %u (message %d)", w + 1, tag,
          expect[w], i);
    CHECK(len == lens[w][tag], "o%d seq %d: %zu bytes, expected %zu", w + 1, tag, len,
          lens[w][tag]);
    const long long bad = check_pattern(p, len, mix(r.peer(), w, tag, len));
    CHECK(bad < 0, "o%d seq %d (%zu B): payload differs at offset %lld", w + 1, tag, len, bad);
    CHECK_RC(rocl_bfret(p), ROCL_OK);
    ++expect[w];
    bytes += len;
  }
  const double t1 = now_ms();
  sender.join();
  barrier("received");
  expect_empty(d);
  note("%d messages (o1 %u, o2 %u), %.1f MiB received in order in %.0f ms", kOrderingMessages,
       expect[0], expect[1], bytes / 1048576.0, t1 - t0);
}

// ---- 2. wildcards --------------------------------------------------------------------------
// Rank 0 sends from A and B; rank 1 receives on R, where its own L also sends.

void case_wildcards(Rank &r) {
  rocl_gid_t a = 0, b = 0, rr = 0, l = 0;
  if (r.rank == 0) {
    a = reg("A");
    b = reg("B");
    rr = find("R", 1);
  } else {
    rr = reg("R");
    l = reg("L");
    a = find("A", 0);
    b = find("B", 0);
  }
  barrier("registered");

  // Tag selection: tag 7 is received first while the tag 3 messages wait.
  step("tag selection");
  if (r.rank == 0) {
    for (int i = 0; i < 3; ++i) send_text(a, rr, 3, "3:" + std::to_string(i));
    for (int i = 0; i < 2; ++i) send_text(a, rr, 7, "7:" + std::to_string(i));
  } else {
    expect_msg(rr, a, 7, kLongMs, a, 7, "7:0");
    expect_msg(rr, a, 7, kLongMs, a, 7, "7:1");
    // A's tag 3 messages were sent before its tag 7 ones: they are here.
    for (int i = 0; i < 3; ++i) expect_msg(rr, a, 3, 0, a, 3, "3:" + std::to_string(i));
    expect_empty(rr);
  }
  barrier("tags");

  // Origin selection: B's messages are taken while older ones of A wait.
  step("origin selection");
  if (r.rank == 0) {
    for (int i = 0; i < 3; ++i) send_text(a, rr, 5, "A" + std::to_string(i));
    send_text(a, rr, 6, "Aend");
    for (int i = 0; i < 3; ++i) send_text(b, rr, 5, "B" + std::to_string(i));
    send_text(b, rr, 6, "Bend");
  } else {
    expect_msg(rr, a, 6, kLongMs, a, 6, "Aend");  // A's tag 5 ones are all here now
    for (int i = 0; i < 3; ++i) expect_msg(rr, b, 5, kLongMs, b, 5, "B" + std::to_string(i));
    expect_msg(rr, b, ROCL_ANY_TAG, kLongMs, b, 6, "Bend");
    // Only A's remain: oldest first with both wildcards, without waiting.
    for (int i = 0; i < 3; ++i) {
      expect_msg(rr, ROCL_ANY_GID, ROCL_ANY_TAG, 0, a, 5, "A" + std::to_string(i));
    }
    expect_empty(rr);
  }
  barrier("origins");

  // Wildcards over three origins, one of them local to the receiver.
  step("three origins");
  if (r.rank == 0) {
    for (int i = 0; i < 5; ++i) send_text(a, rr, 10, "a" + std::to_string(i));
    for (int i = 0; i < 5; ++i) send_text(b, rr, 11, "b" + std::to_string(i));
    send_text(a, rr, ROCL_TAG_MAX, "amax");
  } else {
    for (int i = 0; i < 5; ++i) send_text(l, rr, 9, "L" + std::to_string(i));
    // Any origin, tag 11: only B's, in order.
    for (int i = 0; i < 5; ++i) {
      expect_msg(rr, ROCL_ANY_GID, 11, kLongMs, b, 11, "b" + std::to_string(i));
    }
    // Origin A, any tag: A's in order.
    expect_msg(rr, a, ROCL_ANY_TAG, kLongMs, a, 10, "a0");
    expect_msg(rr, a, ROCL_ANY_TAG, kLongMs, a, 10, "a1");
    // The largest tag travels.
    expect_msg(rr, a, ROCL_TAG_MAX, kLongMs, a, ROCL_TAG_MAX, "amax");
    // Both wildcards: the rest of A and all of L, each in its own order.
    int next_a = 2, next_l = 0;
    for (int i = 0; i < 8; ++i) {
      Msg m = recv_msg(rr, ROCL_ANY_GID, ROCL_ANY_TAG, kLongMs);
      if (m.origin == a) {
        CHECK(m.tag == 10 && m.data == "a" + std::to_string(next_a),
              "from A: tag %d \"%s\", expected tag 10 \"a%d\"", m.tag, m.data.c_str(), next_a);
        ++next_a;
      } else if (m.origin == l) {
        CHECK(m.tag == 9 && m.data == "L" + std::to_string(next_l),
              "from L: tag %d \"%s\", expected tag 9 \"L%d\"", m.tag, m.data.c_str(), next_l);
        ++next_l;
      } else {
        CHECK(false, "message from unexpected origin %s (tag %d \"%s\")", hex(m.origin).c_str(),
              m.tag, m.data.c_str());
      }
    }
    CHECK(next_a == 5 && next_l == 5, "got a0..a%d and L0..L%d", next_a - 1, next_l - 1);
    expect_empty(rr);
    // Bad tags are refused before anything travels.
    CHECK_RC(rocl_send(l, a, -3, nullptr, 0), ROCL_EINVAL);
    void *p = nullptr;
    CHECK_RC(rocl_recv(rr, ROCL_ANY_GID, -2, &p, nullptr, nullptr, nullptr, 0), ROCL_EINVAL);
  }
  barrier("three origins");
}

// ---- 3. timeouts ---------------------------------------------------------------------------

namespace {
// rocl_recv with `timeout` ms on dgid (nothing will come): ROCL_ETIMEDOUT
// after at least `timeout` and well within timeout + 2 s. Returns the time.
double timed_out_recv(rocl_gid_t dgid, rocl_gid_t ogid, int timeout) {
  void *p = nullptr;
  const double t0 = now_ms();
  const int rc = rocl_recv(dgid, ogid, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, timeout);
  const double el = now_ms() - t0;
  CHECK(rc == ROCL_ETIMEDOUT, "rocl_recv(origin %s, timeout %d ms) returned %s after %.1f ms",
        ogid == ROCL_ANY_GID ? "ANY" : hex(ogid).c_str(), timeout, rc_text(rc).c_str(), el);
  CHECK(el >= timeout - 0.5 && el < timeout + 2000,
        "rocl_recv with timeout %d ms returned ROCL_ETIMEDOUT after %.1f ms", timeout, el);
  if (timeout > 0) {
    CHECK(contains(rocl_last_error(), hex(dgid)), "the timeout sentence does not name %s",
          hex(dgid).c_str());
  }
  return el;
}
}  // namespace

void case_timeouts(Rank &r) {
  const rocl_gid_t t = reg("T"), s = reg("S");
  const rocl_gid_t peer_t = find("T", r.peer()), peer_s = find("S", r.peer());
  barrier("registered");

  // Nothing is sent to T: every wait below times out.
  step("recv timeouts");
  const double e1 = timed_out_recv(t, ROCL_ANY_GID, 300);
  // A named origin that is alive (its process is watched every
  // ROCL_PEER_CHECK_MS): still ROCL_ETIMEDOUT, not ROCL_EPEER.
  const double e2 = timed_out_recv(t, peer_s, 1200);

  // Timeout 0 polls: returns at once.
  step("polls");
  double worst = 0;
  const double p0 = now_ms();
  for (int i = 0; i < 1000; ++i) {
    const double a = now_ms();
    void *p = nullptr;
    const int rc = rocl_recv(t, ROCL_ANY_GID, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, 0);
    CHECK(rc == ROCL_ETIMEDOUT, "poll %d returned %s", i, rc_text(rc).c_str());
    worst = std::max(worst, now_ms() - a);
  }
  const double polls = now_ms() - p0;
  CHECK(worst < 500 && polls < 3000, "1000 polls took %.1f ms, the slowest %.1f ms", polls, worst);

  // rocl_wait on an irecv: the same rules; the request stays live.
  step("wait timeouts");
  rocl_request_t q = ROCL_REQUEST_NULL;
  CHECK_RC(rocl_irecv(t, ROCL_ANY_GID, ROCL_ANY_TAG, &q), ROCL_OK);
  rocl_status_t st{};
  double a = now_ms();
  CHECK_RC(rocl_wait(&q, &st, 300), ROCL_ETIMEDOUT);
  const double e3 = now_ms() - a;
  CHECK(e3 >= 299.5 && e3 < 2300, "rocl_wait(300 ms) timed out after %.1f ms", e3);
  CHECK(q != ROCL_REQUEST_NULL, "the request was freed by a timed out rocl_wait");
  a = now_ms();
  CHECK_RC(rocl_wait(&q, &st, 0), ROCL_ETIMEDOUT);
  CHECK(now_ms() - a < 500, "rocl_wait(0) took %.1f ms", now_ms() - a);
  int done = -1;
  CHECK_RC(rocl_test(&q, &done, &st), ROCL_OK);
  CHECK(done == 0 && q != ROCL_REQUEST_NULL, "rocl_test says done=%d", done);
  CHECK_RC(rocl_cancel(&q), ROCL_OK);
  CHECK(q == ROCL_REQUEST_NULL, "rocl_cancel did not clear the request");
  barrier("timed out");

  // A poll loop (timeout 0) sees a message from the other rank.
  step("poll finds a message");
  send_text(s, peer_t, 1, "polled");
  int npolls = 0;
  const double f0 = now_ms();
  for (;;) {
    void *p = nullptr;
    rocl_gid_t from = 0;
    int tag = -1;
    std::size_t len = 0;
    const int rc = rocl_recv(t, peer_s, 1, &p, &from, &tag, &len, 0);
    ++npolls;
    if (rc == ROCL_OK) {
      CHECK(from == peer_s && tag == 1 && len == 6 && std::memcmp(p, "polled", 6) == 0,
            "polled message: origin %s tag %d len %zu", hex(from).c_str(), tag, len);
      CHECK_RC(rocl_bfret(p), ROCL_OK);
      break;
    }
    CHECK(rc == ROCL_ETIMEDOUT, "poll returned %s", rc_text(rc).c_str());
    CHECK(now_ms() - f0 < kLongMs, "a message sent to %s never showed up in %d polls",
          hex(t).c_str(), npolls);
    if (npolls > 100) usleep(100);
  }
  const double found = now_ms() - f0;
  barrier("polled");

  // A message sent while the other rank waits (bounded, then forever)
  // ends the wait at once.
  step("wait ends on arrival");
  double woke[2] = {0, 0};
  for (int round = 0; round < 2; ++round) {
    const int waiter = round;  // round 0: rank 0 waits; round 1: rank 1
    if (r.rank == waiter) {
      const double w0 = now_ms();
      Msg m = recv_msg(t, peer_s, 2, round == 0 ? 20000 : -1);
      woke[round] = now_ms() - w0;
      CHECK(m.data == "late", "got \"%s\"", m.data.c_str());
      // The sender slept 300 ms before sending.
      CHECK(woke[round] < 300 + 2000, "the wait ended %.1f ms after it began", woke[round]);
    } else {
      usleep(300000);
      send_text(s, peer_t, 2, "late");
    }
    barrier(round == 0 ? "late 0" : "late 1");
  }
  // A receive that times out while other traffic keeps arriving: a waiting
  // thread spins on as long as frames come (core/caller_progress.cpp), but
  // never past its timeout. Then every flooded message is there.
  step("timeout under traffic");
  std::atomic<bool> stop{false};
  int flooded = 0;
  std::thread flood([&] {
    while (!stop.load()) {
      for (int i = 0; i < 16; ++i, ++flooded) send_text(s, peer_s, 9, "flood");
      usleep(20);
    }
  });
  const double e4 = timed_out_recv(t, ROCL_ANY_GID, 300);
  stop = true;
  flood.join();
  barrier("flood stopped");  // both timed out before T gets the counts
  send_text(s, peer_t, 10, std::to_string(flooded));
  const int theirs = std::stoi(recv_msg(t, peer_s, 10, kLongMs).data);
  for (int i = 0; i < theirs; ++i) {
    Msg m = recv_msg(s, peer_s, 9, kLongMs);
    CHECK(m.data == "flood", "flooded message %d of %d: \"%s\"", i, theirs, m.data.c_str());
  }
  barrier("flooded");
  note(
      "timeouts: 300 ms -> %.1f, 1200 ms (named live origin) -> %.1f, wait 300 ms -> %.1f; "
      "1000 polls %.1f ms (slowest %.2f); polled arrival after %.1f ms / %d polls; "
      "wait woke after %.1f ms; 300 ms under %d messages of traffic -> %.1f",
      e1, e2, e3, polls, worst, found, npolls, woke[r.rank], theirs, e4);
}

// ---- 4. immediate operations ----------------------------------------------------------
// Rank 0's S sends, rank 1's R receives with irecv/test/wait/cancel.

void case_immediate(Rank &r) {
  rocl_gid_t s = 0, rr = 0;
  if (r.rank == 0) {
    s = reg("S");
    rr = find("R", 1);
  } else {
    rr = reg("R");
    s = find("S", 0);
  }
  barrier("registered");
  rocl_status_t st{};
  int done = -1;

  // NULL requests complete at once.
  rocl_request_t none = ROCL_REQUEST_NULL;
  CHECK_RC(rocl_test(&none, &done, &st), ROCL_OK);
  CHECK(done == 1, "rocl_test(NULL request) says done=%d", done);
  CHECK_RC(rocl_wait(&none, &st, 0), ROCL_OK);
  CHECK_RC(rocl_cancel(&none), ROCL_EINVAL);

  // a. irecv posted before the message exists; completed by rocl_wait.
  step("irecv before arrival");
  if (r.rank == 1) {
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, s, 1, &q), ROCL_OK);
    CHECK_RC(rocl_test(&q, &done, &st), ROCL_OK);
    CHECK(done == 0 && q != ROCL_REQUEST_NULL, "nothing was sent yet but test says done=%d", done);
    ctl_send(1, "posted", 6);
    CHECK_RC(rocl_wait(&q, &st, kLongMs), ROCL_OK);
    CHECK(q == ROCL_REQUEST_NULL, "rocl_wait did not clear the request");
    CHECK(st.error == ROCL_OK && st.origin == s && st.tag == 1 && st.len == 7 &&
              std::memcmp(st.ptr, "hello-1", 7) == 0,
          "status: error %d origin %s tag %d len %zu", st.error, hex(st.origin).c_str(), st.tag,
          st.len);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  } else {
    ctl_recv(1);
    rocl_request_t sq = ROCL_REQUEST_NULL;
    char text[] = "hello-1";
    CHECK_RC(rocl_isend(s, rr, 1, text, 7, &sq), ROCL_OK);
    CHECK_RC(rocl_wait(&sq, &st, kLongMs), ROCL_OK);
    CHECK(sq == ROCL_REQUEST_NULL && st.error == ROCL_OK && st.origin == rr && st.tag == 1 &&
              st.len == 7,
          "isend status: error %d origin %s tag %d len %zu", st.error, hex(st.origin).c_str(),
          st.tag, st.len);
  }
  barrier("a");

  // b. irecv posted before arrival, completed by a rocl_test loop.
  step("test loop");
  if (r.rank == 1) {
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, ROCL_ANY_GID, 2, &q), ROCL_OK);
    ctl_send(2, "posted", 6);
    const double t0 = now_ms();
    int tests = 0;
    for (done = 0; !done; ++tests) {
      CHECK_RC(rocl_test(&q, &done, &st), ROCL_OK);
      CHECK(now_ms() - t0 < kLongMs, "rocl_test never completed (%d tests)", tests);
      if (!done && tests > 1000) usleep(100);
    }
    CHECK(q == ROCL_REQUEST_NULL && st.origin == s && st.tag == 2 && st.len == 5 &&
              std::memcmp(st.ptr, "ttest", 5) == 0,
          "status: origin %s tag %d len %zu", hex(st.origin).c_str(), st.tag, st.len);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  } else {
    ctl_recv(2);
    send_text(s, rr, 2, "ttest");
  }
  barrier("b");

  // c. irecv posted after the message arrived: complete at the first test.
  step("irecv after arrival");
  if (r.rank == 1) {
    expect_msg(rr, s, 4, kLongMs, s, 4, "m4");  // m3 was sent before m4: it is here
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, s, 3, &q), ROCL_OK);
    CHECK_RC(rocl_test(&q, &done, &st), ROCL_OK);
    CHECK(done == 1 && q == ROCL_REQUEST_NULL, "the message was waiting but test says done=%d",
          done);
    CHECK(st.origin == s && st.tag == 3 && st.len == 2 && std::memcmp(st.ptr, "m3", 2) == 0,
          "status: origin %s tag %d len %zu", hex(st.origin).c_str(), st.tag, st.len);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  } else {
    send_text(s, rr, 3, "m3");
    send_text(s, rr, 4, "m4");
  }
  barrier("c");

  // d. Cancel of an unmatched irecv: the message sent afterwards is not
  // swallowed by the cancelled request.
  step("cancel unmatched");
  if (r.rank == 1) {
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, s, 5, &q), ROCL_OK);
    CHECK_RC(rocl_cancel(&q), ROCL_OK);
    CHECK(q == ROCL_REQUEST_NULL, "rocl_cancel did not clear the request");
    ctl_send(5, "cancelled", 9);
    expect_msg(rr, s, 5, kLongMs, s, 5, "m5");
  } else {
    ctl_recv(5);
    send_text(s, rr, 5, "m5");
  }
  barrier("d");

  // e. Cancel too late: ROCL_EALREADY, and the request still completes.
  step("cancel too late");
  if (r.rank == 1) {
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, s, 6, &q), ROCL_OK);
    ctl_send(6, "posted", 6);
    expect_msg(rr, s, 7, kLongMs, s, 7, "m7");  // m6 came first and matched q
    CHECK_RC(rocl_cancel(&q), ROCL_EALREADY);
    CHECK(q != ROCL_REQUEST_NULL, "a refused cancel cleared the request");
    CHECK_RC(rocl_wait(&q, &st, 0), ROCL_OK);
    CHECK(st.tag == 6 && st.len == 2 && std::memcmp(st.ptr, "m6", 2) == 0, "got tag %d len %zu",
          st.tag, st.len);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  } else {
    ctl_recv(6);
    send_text(s, rr, 6, "m6");
    send_text(s, rr, 7, "m7");
  }
  barrier("e");

  // f. Receives are matched in the order posted, blocking ones included.
  step("posting order");
  if (r.rank == 1) {
    rocl_request_t q1 = ROCL_REQUEST_NULL, q2 = ROCL_REQUEST_NULL, q3 = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(rr, s, ROCL_ANY_TAG, &q1), ROCL_OK);
    CHECK_RC(rocl_irecv(rr, s, ROCL_ANY_TAG, &q2), ROCL_OK);
    ctl_send(8, "posted", 6);
    CHECK_RC(rocl_wait(&q2, &st, kLongMs), ROCL_OK);
    CHECK(st.tag == 9 && st.len == 6 && std::memcmp(st.ptr, "second", 6) == 0,
          "the second irecv got tag %d", st.tag);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
    CHECK_RC(rocl_wait(&q1, &st, kLongMs), ROCL_OK);
    CHECK(st.tag == 8 && st.len == 5 && std::memcmp(st.ptr, "first", 5) == 0,
          "the first irecv got tag %d", st.tag);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
    // An irecv posted before a blocking receive gets the older message.
    CHECK_RC(rocl_irecv(rr, s, ROCL_ANY_TAG, &q3), ROCL_OK);
    ctl_send(10, "posted", 6);
    expect_msg(rr, s, ROCL_ANY_TAG, kLongMs, s, 11, "y");
    CHECK_RC(rocl_wait(&q3, &st, kLongMs), ROCL_OK);
    CHECK(st.tag == 10 && st.len == 1 && std::memcmp(st.ptr, "x", 1) == 0, "q3 got tag %d", st.tag);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  } else {
    ctl_recv(8);
    send_text(s, rr, 8, "first");
    send_text(s, rr, 9, "second");
    ctl_recv(10);
    send_text(s, rr, 10, "x");
    send_text(s, rr, 11, "y");
  }
  barrier("f");

  // g. isend of a kept pool buffer and of a zero-copy one.
  step("isend buffers");
  if (r.rank == 0) {
    auto *kept = static_cast<unsigned char *>(rocl_bfget(4096));
    CHECK(kept != nullptr, "rocl_bfget(4096)");
    fill_pattern(kept, 4096, 12);
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_isend(s, rr, 12, kept, 4096, &q), ROCL_OK);
    CHECK_RC(rocl_wait(&q, &st, kLongMs), ROCL_OK);
    CHECK(st.error == ROCL_OK && st.origin == rr && st.tag == 12 && st.len == 4096,
          "isend status: origin %s tag %d len %zu", hex(st.origin).c_str(), st.tag, st.len);
    // A completed send no longer uses the buffer.
    const int bs = rocl_bfstat(kept);
    CHECK(bs == ROCL_BF_SENT, "rocl_bfstat after the isend completed: %d (want ROCL_BF_SENT)", bs);
    std::memset(kept, 0xee, 4096);
    CHECK_RC(rocl_bfret(kept), ROCL_OK);
    void *zc = rocl_bfget(100000);
    CHECK(zc != nullptr, "rocl_bfget(100000)");
    fill_pattern(zc, 100000, 13);
    CHECK_RC(rocl_bftoret(zc), ROCL_OK);
    CHECK_RC(rocl_isend(s, rr, 13, zc, 100000, &q), ROCL_OK);
    CHECK_RC(rocl_wait(&q, &st, kLongMs), ROCL_OK);
    CHECK(st.tag == 13 && st.len == 100000, "isend status: tag %d len %zu", st.tag, st.len);
  } else {
    for (int tag : {12, 13}) {
      const std::size_t n = tag == 12 ? 4096 : 100000;
      rocl_request_t q = ROCL_REQUEST_NULL;
      CHECK_RC(rocl_irecv(rr, s, tag, &q), ROCL_OK);
      CHECK_RC(rocl_wait(&q, &st, kLongMs), ROCL_OK);
      CHECK(st.len == n && check_pattern(st.ptr, n, tag) < 0, "tag %d: %zu bytes, content %s", tag,
            st.len, check_pattern(st.ptr, st.len, tag) < 0 ? "ok" : "differs");
      CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
    }
  }
  barrier("g");

  // h. 200 irecvs outstanding, completed in a shuffled order: request i
  // gets message i. And one isend the other way.
  step("200 outstanding");
  constexpr int kMany = 200;
  if (r.rank == 1) {
    std::vector<rocl_request_t> qs(kMany, ROCL_REQUEST_NULL);
    for (auto &q : qs) CHECK_RC(rocl_irecv(rr, s, 20, &q), ROCL_OK);
    ctl_send(20, "posted", 6);
    std::vector<int> order(kMany);
    for (int i = 0; i < kMany; ++i) order[i] = i;
    Rng g(mix(suite_seed(), 4));
    for (int i = kMany - 1; i > 0; --i) std::swap(order[i], order[g.below(i + 1)]);
    for (int i : order) {
      CHECK_RC(rocl_wait(&qs[i], &st, kLongMs), ROCL_OK);
      std::uint32_t v = 0;
      CHECK(st.len == sizeof v, "request %d: %zu bytes", i, st.len);
      std::memcpy(&v, st.ptr, sizeof v);
      CHECK(v == static_cast<std::uint32_t>(i), "request %d got message %u", i, v);
      CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
    }
    rocl_request_t back = ROCL_REQUEST_NULL;
    char text[] = "back";
    CHECK_RC(rocl_isend(rr, s, 30, text, 4, &back), ROCL_OK);
    CHECK_RC(rocl_wait(&back, &st, kLongMs), ROCL_OK);
  } else {
    ctl_recv(20);
    for (std::uint32_t i = 0; i < kMany; ++i) CHECK_RC(rocl_send(s, rr, 20, &i, sizeof i), ROCL_OK);
    rocl_request_t q = ROCL_REQUEST_NULL;
    CHECK_RC(rocl_irecv(s, rr, 30, &q), ROCL_OK);
    CHECK_RC(rocl_wait(&q, &st, kLongMs), ROCL_OK);
    CHECK(st.origin == rr && st.len == 4 && std::memcmp(st.ptr, "back", 4) == 0,
          "got origin %s len %zu", hex(st.origin).c_str(), st.len);
    CHECK_RC(rocl_bfret(st.ptr), ROCL_OK);
  }
  barrier("h");
  expect_empty(r.rank == 0 ? s : rr);
}

// ---- 5. sizes ------------------------------------------------------------------------------
// Rank 0 sends every size three ways, rank 1 checks and echoes it back the
// same way, rank 0 checks the echo.

namespace {
constexpr std::size_t kSizes[] = {0,    1,         63,          64,      65,
                                  4096, 64 * 1024, 1024 * 1024, 8 << 20, 64 << 20};
enum Kind { kZeroCopy = 0, kKept = 1, kUser = 2 };
const char *const kKindName[] = {"zero-copy buffer", "kept buffer", "user memory"};

struct SizeDesc {
  std::uint64_t len;
  std::uint64_t sum;
};

// Sends n bytes at p (a pool buffer for kZeroCopy/kKept, user memory for
// kUser) the given way; afterwards the caller's memory may be reused.
void send_kind(Kind k, rocl_gid_t from, rocl_gid_t to, int tag, void *p, std::size_t n) {
  if (k == kZeroCopy) CHECK_RC(rocl_bftoret(p), ROCL_OK);
  const int rc = rocl_send(from, to, tag, p, n);
  CHECK(rc == ROCL_OK, "send of %zu B as %s: %s", n, kKindName[k], rc_text(rc).c_str());
  if (k == kKept) {
    // The caller keeps it: PENDING until the library is done, then SENT.
    const double t0 = now_ms();
    int bs;
    while ((bs = rocl_bfstat(p)) == ROCL_BF_PENDING) {
      CHECK(now_ms() - t0 < kLongMs, "a kept buffer of %zu B stayed PENDING", n);
      usleep(200);
    }
    CHECK(bs == ROCL_BF_SENT, "kept buffer of %zu B: rocl_bfstat %d, want ROCL_BF_SENT", n, bs);
    std::memset(p, 0xee, n);  // ours again: the message must not change
    CHECK_RC(rocl_bfret(p), ROCL_OK);
  } else if (k == kUser) {
    std::memset(p, 0xee, n);  // copied before rocl_send returned
  }
}

// Receives the message with `tag` from `from` and checks length and checksum.
void *recv_checked(rocl_gid_t on, rocl_gid_t from, int tag, const SizeDesc &d, const char *what) {
  void *p = nullptr;
  std::size_t len = 0;
  rocl_gid_t origin = 0;
  int atag = -1;
  const int rc = rocl_recv(on, from, tag, &p, &origin, &atag, &len, kLongMs);
  CHECK(rc == ROCL_OK, "%s (%llu B): rocl_recv %s", what, static_cast<unsigned long long>(d.len),
        rc_text(rc).c_str());
  CHECK(origin == from && atag == tag, "%s: origin %s tag %d", what, hex(origin).c_str(), atag);
  CHECK(len == d.len, "%s: %zu bytes, expected %llu", what, len,
        static_cast<unsigned long long>(d.len));
  CHECK(rocl_bfsize(p) >= len, "%s: rocl_bfsize %zu < %zu", what, rocl_bfsize(p), len);
  const std::uint64_t sum = checksum(p, len);
  CHECK(sum == d.sum, "%s (%zu B): checksum %#llx, expected %#llx", what, len,
        static_cast<unsigned long long>(sum), static_cast<unsigned long long>(d.sum));
  return p;
}
// Waits (at most kLongMs) until this process has at most `before`'s pool
// buffers in use: buffers of finished sends may come back a moment after
// the peer copied them.
void wait_for_pool_use(const rocl_pool_stats_t &before, const char *when) {
  rocl_pool_stats_t now{};
  const double t0 = now_ms();
  do {
    CHECK_RC(rocl_pool_stats(&now), ROCL_OK);
    if (now.in_use_buffers <= before.in_use_buffers) return;
    usleep(1000);
  } while (now_ms() - t0 < kLongMs);
  CHECK(now.in_use_buffers <= before.in_use_buffers, "%zu pool buffers in use %s, %zu before",
        now.in_use_buffers, when, before.in_use_buffers);
}
}  // namespace

void case_sizes(Rank &r) {
  rocl_gid_t s = 0, e = 0;
  if (r.rank == 0) {
    s = reg("S");
    e = find("E", 1);
  } else {
    e = reg("E");
    s = find("S", 0);
  }
  barrier("registered");
  rocl_pool_stats_t before{};
  CHECK_RC(rocl_pool_stats(&before), ROCL_OK);
  std::vector<unsigned char> user(kSizes[std::size(kSizes) - 1]);
  double biggest_ms = 0;
  for (std::size_t i = 0; i < std::size(kSizes); ++i) {
    const std::size_t n = kSizes[i];
    for (int k = 0; k < 3; ++k) {
      const Kind kind = static_cast<Kind>(k);
      const int tag = static_cast<int>(i * 3 + k);
      char what[96];
      std::snprintf(what, sizeof what, "%zu B as %s", n, kKindName[k]);
      step("sizes: %s", what);
      const double t0 = now_ms();
      if (r.rank == 0) {
        void *p = kind == kUser ? user.data() : rocl_bfget(n);
        CHECK(p != nullptr, "rocl_bfget(%zu)", n);
        fill_pattern(p, n, mix(5, i, k));
        const SizeDesc d{n, checksum(p, n)};
        ctl_send_value(1, d);
        send_kind(kind, s, e, tag, p, n);
        // The echo must be the same bytes.
        std::string echo_what = std::string("echo of ") + what;
        void *back = recv_checked(s, e, tag, d, echo_what.c_str());
        const long long bad = check_pattern(back, n, mix(5, i, k));
        CHECK(bad < 0, "%s: differs at offset %lld", echo_what.c_str(), bad);
        CHECK_RC(rocl_bfret(back), ROCL_OK);
      } else {
        const SizeDesc d = ctl_recv_value<SizeDesc>(1);
        CHECK(d.len == n, "descriptor says %llu B, expected %zu",
              static_cast<unsigned long long>(d.len), n);
        void *p = recv_checked(e, s, tag, d, what);
        // Echo it back the same way: the received buffer itself (zero-copy
        // or kept), or a copy in user memory.
        if (kind == kUser) {
          if (n != 0) std::memcpy(user.data(), p, n);
          CHECK_RC(rocl_bfret(p), ROCL_OK);
          p = user.data();
        }
        send_kind(kind, e, s, tag, p, n);
      }
      if (n == kSizes[std::size(kSizes) - 1]) biggest_ms = std::max(biggest_ms, now_ms() - t0);
    }
  }
  barrier("done");
  expect_empty(r.rank == 0 ? s : e);
  // Every buffer went back to the pool: the ones handed over when their
  // send ended (small ones at once, copied into the frame; rendezvous ones
  // once the peer copied them, which this process may notice a moment
  // later), the received ones when returned.
  //
  // One rank at a time: a control message from the peer (the harness's
  // next step) holds a pool buffer here until it is received, so a rank
  // still waiting for its last rendezvous buffer when it arrived waited
  // forever (both ranks timed out; seen under load, where the buffer
  // comes back a few milliseconds late). Rank 1 waits for rank 0's turn
  // to end; rank 0 sends nothing until rank 1's turn ends.
  constexpr int kTurnTag = 2;
  if (r.rank == 1) (void)ctl_recv_value<int>(kTurnTag);
  wait_for_pool_use(before, "after the echoes");
  ctl_send_value(kTurnTag, 1);
  if (r.rank == 0) (void)ctl_recv_value<int>(kTurnTag);
  note("%zu sizes x 3 ways echoed; a 64 MiB round trip took up to %.0f ms", std::size(kSizes),
       biggest_ms);
}

}  // namespace conf
