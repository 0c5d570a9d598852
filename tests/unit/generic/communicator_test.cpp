// communicator_test.cpp - the matching rules of generic::Communicator case by
// case (exact and wildcard matching, who wins when several match, cancel,
// probe, rendezvous, close), its no-allocation promise, and its behaviour
// under concurrent producers and consumers.
#include "rocl/generic/communicator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "test_header.hpp"

// ---- allocation counting ---------------------------------------------------
// Every operator new of this test program goes through here, so a test can
// assert that a stretch of Communicator calls allocated nothing.
namespace {
std::atomic<std::uint64_t> g_allocations{0};

void *counted_alloc(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void *operator new(std::size_t n) {
  return counted_alloc(n);
}
void *operator new[](std::size_t n) {
  return counted_alloc(n);
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete[](void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void *p, std::size_t) noexcept {
  std::free(p);
}

namespace rocl::generic {
namespace {

using namespace std::chrono_literals;

using test_support::hdr;
using test_support::kAny;
using test_support::same;
using test_support::TestEnv;
using test_support::TestHeader;
static_assert(sizeof(Envelope<TestHeader>) <= 128, "envelope must fit the core's owner area");

using Comm = Communicator<TestHeader>;

TestEnv *as_test(Envelope<TestHeader> *e) {
  return static_cast<TestEnv *>(e);
}

// Test envelopes with stable addresses.
class Pool {
 public:
  TestEnv &make(TestHeader h, int id = 0) {
    envs_.push_back(std::make_unique<TestEnv>());
    TestEnv &e = *envs_.back();
    e.header = h;
    e.id = id;
    return e;
  }

 private:
  std::vector<std::unique_ptr<TestEnv>> envs_;
};

TEST(Envelope, DerivedAggregateInitialisesLikeTheCoreDoes) {
  struct Message : Envelope<TestHeader> {};
  alignas(Message) unsigned char storage[sizeof(Message)];
  auto *m = new (storage) Message{};
  EXPECT_EQ(m->data, nullptr);
  EXPECT_EQ(m->length, 0u);
  EXPECT_EQ(m->matched, nullptr);
  EXPECT_EQ(m->status, 0);
  EXPECT_FALSE(m->rendezvous);
  EXPECT_FALSE(m->complete.is_done());
  m->~Message();
}

// What a delivery to a waiting receive writes is on the envelope's first
// cache line, which renew() rewrites: so a buffer passed back and forth
// moves one line of it between threads (core/message.hpp).
TEST(Envelope, RenewResetsTheFirstLineAndKeepsArrivedOnTheSecond) {
  struct alignas(64) Message : Envelope<TestHeader> {};
  Message m{};
  const auto offset = [&m](const void *field) {
    return static_cast<const char *>(field) - reinterpret_cast<const char *>(&m);
  };
  EXPECT_EQ(offset(&m.arrived), 64);  // header .. the queue bookkeeping: line 0
  EXPECT_LT(offset(&m.complete), 64);
  EXPECT_LT(offset(&m.matched), 64);
  Comm c;
  Envelope<TestHeader> recv;
  recv.header = hdr(1, 2);
  ASSERT_EQ(c.post_receive(&recv), nullptr);
  m.header = hdr(1, 2);
  m.data = &m;
  m.length = 5;
  m.rendezvous = true;
  ASSERT_EQ(c.deliver(&m), Delivery::kMatched);
  ASSERT_EQ(m.matched, &recv);
  m.renew();
  EXPECT_TRUE(same(m.header, TestHeader{}));
  EXPECT_EQ(m.data, nullptr);
  EXPECT_EQ(m.length, 0u);
  EXPECT_EQ(m.matched, nullptr);
  EXPECT_EQ(m.status, 0);
  EXPECT_FALSE(m.rendezvous);
  EXPECT_FALSE(m.complete.is_done());
  // Renewed, it is a message like a fresh one: queued, cancelled-proof,
  // matched again.
  m.header = hdr(1, 3);
  EXPECT_EQ(c.deliver(&m), Delivery::kQueued);
  EXPECT_FALSE(c.cancel_receive(&m));
  Envelope<TestHeader> again;
  again.header = hdr(1, 3);
  EXPECT_EQ(c.post_receive(&again), &m);
}

TEST(Communicator, MessageFirstThenExactReceive) {
  Comm c;
  Pool p;
  TestEnv &msg = p.make(hdr(1, 2));
  TestEnv &recv = p.make(hdr(1, 2));
  EXPECT_EQ(c.deliver(&msg), Delivery::kQueued);
  EXPECT_EQ(c.unexpected_size(), 1u);
  EXPECT_EQ(c.post_receive(&recv), &msg);
  EXPECT_TRUE(recv.complete.is_done());  // signalled even when matched at once
  EXPECT_EQ(recv.matched, &msg);
  EXPECT_EQ(msg.matched, &recv);
  EXPECT_EQ(recv.status, 0);
  EXPECT_EQ(c.unexpected_size(), 0u);
  EXPECT_EQ(c.expected_size(), 0u);
}

// take_or_post_receive: a message found queued is returned without the
// locked signal (the owner has it in hand and never waits); posted, closed
// and later matches behave as post_receive's.
TEST(Communicator, TakeOrPostReturnsAQueuedMessageWithoutSignalling) {
  Comm c;
  Pool p;
  TestEnv &msg = p.make(hdr(1, 2));
  TestEnv &recv = p.make(hdr(1, kAny));
  EXPECT_EQ(c.deliver(&msg), Delivery::kQueued);
  EXPECT_EQ(c.take_or_post_receive(&recv), &msg);
  EXPECT_FALSE(recv.complete.is_done());
  EXPECT_EQ(recv.matched, &msg);
  EXPECT_EQ(msg.matched, &recv);
  EXPECT_EQ(c.unexpected_size(), 0u);
  EXPECT_EQ(c.expected_size(), 0u);

  TestEnv &later = p.make(hdr(1, 3));
  EXPECT_EQ(c.take_or_post_receive(&recv), nullptr);  // nothing queued: posted
  EXPECT_EQ(c.expected_size(), 1u);
  EXPECT_EQ(c.deliver(&later), Delivery::kMatched);
  EXPECT_TRUE(recv.complete.is_done());
  EXPECT_EQ(recv.matched, &later);

  c.close(7, [](Envelope<TestHeader> *) {});
  EXPECT_EQ(c.take_or_post_receive(&recv), nullptr);
  EXPECT_TRUE(recv.complete.is_done());  // closed: signalled, as post_receive
  EXPECT_EQ(recv.status, 7);
}

TEST(Communicator, ReceiveFirstThenMessage) {
  Comm c;
  Pool p;
  TestEnv &msg = p.make(hdr(1, 2));
  TestEnv &recv = p.make(hdr(1, 2));
  EXPECT_EQ(c.post_receive(&recv), nullptr);
  EXPECT_FALSE(recv.complete.is_done());
  EXPECT_EQ(c.expected_size(), 1u);
  EXPECT_EQ(c.deliver(&msg), Delivery::kMatched);
  EXPECT_TRUE(recv.complete.is_done());
  EXPECT_EQ(recv.matched, &msg);
  EXPECT_EQ(msg.matched, &recv);
  EXPECT_EQ(c.expected_size(), 0u);
  EXPECT_EQ(c.unexpected_size(), 0u);
}

TEST(Communicator, ExactMismatchDoesNotMatch) {
  Comm c;
  Pool p;
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 2))), nullptr);
  EXPECT_EQ(c.deliver(&p.make(hdr(1, 3))), Delivery::kQueued);
  EXPECT_EQ(c.deliver(&p.make(hdr(2, 2))), Delivery::kQueued);
  EXPECT_EQ(c.post_receive(&p.make(hdr(3, 3))), nullptr);
  EXPECT_EQ(c.expected_size(), 2u);
  EXPECT_EQ(c.unexpected_size(), 2u);
}

TEST(Communicator, WildcardsMatchInBothDirections) {
  const TestHeader patterns[] = {hdr(kAny, 2), hdr(1, kAny), hdr(kAny, kAny)};
  for (const TestHeader &pattern : patterns) {
    {  // receive posted first
      Comm c;
      Pool p;
      TestEnv &recv = p.make(pattern);
      EXPECT_EQ(c.post_receive(&recv), nullptr);
      TestEnv &msg = p.make(hdr(1, 2));
      EXPECT_EQ(c.deliver(&msg), Delivery::kMatched);
      EXPECT_EQ(recv.matched, &msg);
      EXPECT_TRUE(recv.complete.is_done());
    }
    {  // message first
      Comm c;
      Pool p;
      TestEnv &msg = p.make(hdr(1, 2));
      EXPECT_EQ(c.deliver(&msg), Delivery::kQueued);
      TestEnv &recv = p.make(pattern);
      EXPECT_EQ(c.post_receive(&recv), &msg);
      EXPECT_TRUE(recv.complete.is_done());
    }
  }
  // Wildcards do not match fields they do not cover.
  Comm c;
  Pool p;
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, 5))), nullptr);
  EXPECT_EQ(c.post_receive(&p.make(hdr(7, kAny))), nullptr);
  EXPECT_EQ(c.deliver(&p.make(hdr(1, 2))), Delivery::kQueued);
  EXPECT_EQ(c.expected_size(), 2u);
}

TEST(Communicator, EarliestPostedReceiveWinsAmongExactAndPatterns) {
  Comm c;
  Pool p;
  TestEnv &r1 = p.make(hdr(1, 2), 1);
  TestEnv &r2 = p.make(hdr(kAny, 2), 2);
  TestEnv &r3 = p.make(hdr(1, 2), 3);
  TestEnv &r4 = p.make(hdr(kAny, kAny), 4);
  TestEnv &r5 = p.make(hdr(1, kAny), 5);
  for (TestEnv *r : {&r1, &r2, &r3, &r4, &r5}) ASSERT_EQ(c.post_receive(r), nullptr);
  for (int expected : {1, 2, 3, 4, 5}) {
    TestEnv &msg = p.make(hdr(1, 2));
    ASSERT_EQ(c.deliver(&msg), Delivery::kMatched);
    EXPECT_EQ(as_test(msg.matched)->id, expected);
  }
  EXPECT_EQ(c.expected_size(), 0u);
}

TEST(Communicator, PatternPostedBeforeExactWins) {
  Comm c;
  Pool p;
  TestEnv &unrelated = p.make(hdr(1, 3), 1);
  TestEnv &pattern = p.make(hdr(kAny, 2), 2);
  TestEnv &exact = p.make(hdr(1, 2), 3);
  for (TestEnv *r : {&unrelated, &pattern, &exact}) ASSERT_EQ(c.post_receive(r), nullptr);
  TestEnv &m1 = p.make(hdr(1, 2));
  TestEnv &m2 = p.make(hdr(1, 2));
  ASSERT_EQ(c.deliver(&m1), Delivery::kMatched);
  EXPECT_EQ(m1.matched, &pattern);
  ASSERT_EQ(c.deliver(&m2), Delivery::kMatched);
  EXPECT_EQ(m2.matched, &exact);
  EXPECT_FALSE(unrelated.complete.is_done());
}

TEST(Communicator, ExactPostedBeforePatternWins) {
  Comm c;
  Pool p;
  TestEnv &exact = p.make(hdr(1, 2), 1);
  TestEnv &pattern = p.make(hdr(kAny, kAny), 2);
  ASSERT_EQ(c.post_receive(&exact), nullptr);
  ASSERT_EQ(c.post_receive(&pattern), nullptr);
  TestEnv &m1 = p.make(hdr(1, 2));
  ASSERT_EQ(c.deliver(&m1), Delivery::kMatched);
  EXPECT_EQ(m1.matched, &exact);
}

TEST(Communicator, EarliestArrivedMessageWinsAcrossBins) {
  Comm c;
  Pool p;
  TestEnv &m1 = p.make(hdr(3, 1), 1);
  TestEnv &m2 = p.make(hdr(1, 2), 2);
  TestEnv &m3 = p.make(hdr(2, 1), 3);
  TestEnv &m4 = p.make(hdr(1, 1), 4);
  TestEnv &m5 = p.make(hdr(3, 1), 5);
  for (TestEnv *m : {&m1, &m2, &m3, &m4, &m5}) ASSERT_EQ(c.deliver(m), Delivery::kQueued);
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, kAny))), &m2);
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, 1))), &m1);
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, 1))), &m3);
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, kAny))), &m4);
  EXPECT_EQ(c.post_receive(&p.make(hdr(3, 1))), &m5);
  EXPECT_EQ(c.unexpected_size(), 0u);
}

TEST(Communicator, SameHeaderNeverOvertakes) {
  Comm c;
  Pool p;
  for (int i = 0; i < 10; ++i) ASSERT_EQ(c.deliver(&p.make(hdr(4, 4), i)), Delivery::kQueued);
  for (int i = 0; i < 10; ++i) {
    TestEnv &recv = p.make(i % 3 == 0 ? hdr(4, 4) : (i % 3 == 1 ? hdr(kAny, 4) : hdr(4, kAny)));
    Envelope<TestHeader> *got = c.post_receive(&recv);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(as_test(got)->id, i);
  }
}

TEST(Communicator, ContextsAreSeparate) {
  Comm c;
  Pool p;
  TestEnv &msg = p.make(hdr(1, 2, /*context=*/1));
  EXPECT_EQ(c.deliver(&msg), Delivery::kQueued);
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, kAny, 0))), nullptr);
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 2, 0))), nullptr);
  EXPECT_FALSE(c.probe(hdr(kAny, kAny, 0)).has_value());
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, kAny, 1))), &msg);
  TestEnv &msg0 = p.make(hdr(1, 2, 0));
  EXPECT_EQ(c.deliver(&msg0), Delivery::kMatched);
  EXPECT_TRUE(same(msg0.matched->header, hdr(kAny, kAny, 0)));
}

TEST(Communicator, CancelBeforeAndAfterMatch) {
  Comm c;
  Pool p;
  TestEnv &recv = p.make(hdr(1, 2));
  ASSERT_EQ(c.post_receive(&recv), nullptr);
  EXPECT_TRUE(c.cancel_receive(&recv));
  EXPECT_FALSE(c.cancel_receive(&recv));  // no longer queued
  EXPECT_EQ(c.expected_size(), 0u);
  TestEnv &msg = p.make(hdr(1, 2));
  EXPECT_EQ(c.deliver(&msg), Delivery::kQueued);  // the cancelled receive is gone
  EXPECT_FALSE(recv.complete.is_done());

  TestEnv &recv2 = p.make(hdr(5, 5));
  ASSERT_EQ(c.post_receive(&recv2), nullptr);
  ASSERT_EQ(c.deliver(&p.make(hdr(5, 5))), Delivery::kMatched);
  EXPECT_FALSE(c.cancel_receive(&recv2));  // already matched

  TestEnv &never = p.make(hdr(1, 2));
  EXPECT_FALSE(c.cancel_receive(&never));  // never posted
  EXPECT_FALSE(c.cancel_receive(&msg));    // a message, not a receive
  EXPECT_EQ(c.unexpected_size(), 1u);
}

TEST(Communicator, CancelPatternReceive) {
  Comm c;
  Pool p;
  TestEnv &a = p.make(hdr(kAny, 2), 1);
  TestEnv &b = p.make(hdr(kAny, 2), 2);
  ASSERT_EQ(c.post_receive(&a), nullptr);
  ASSERT_EQ(c.post_receive(&b), nullptr);
  EXPECT_TRUE(c.cancel_receive(&a));
  TestEnv &msg = p.make(hdr(9, 2));
  ASSERT_EQ(c.deliver(&msg), Delivery::kMatched);
  EXPECT_EQ(msg.matched, &b);
}

TEST(Communicator, CancelOnTheWrongCommunicatorIsRefused) {
  Comm c1, c2;
  Pool p;
  TestEnv &exact = p.make(hdr(1, 2));
  TestEnv &pattern = p.make(hdr(kAny, 2));
  ASSERT_EQ(c1.post_receive(&exact), nullptr);
  ASSERT_EQ(c1.post_receive(&pattern), nullptr);
  EXPECT_FALSE(c2.cancel_receive(&exact));
  EXPECT_FALSE(c2.cancel_receive(&pattern));
  EXPECT_EQ(c1.expected_size(), 2u);
  EXPECT_EQ(c1.deliver(&p.make(hdr(1, 2))), Delivery::kMatched);
  EXPECT_EQ(c1.deliver(&p.make(hdr(1, 2))), Delivery::kMatched);
}

TEST(Communicator, ProbeSeesEarliestWithoutRemoving) {
  Comm c;
  Pool p;
  EXPECT_FALSE(c.probe(hdr(kAny, kAny)).has_value());
  ASSERT_EQ(c.deliver(&p.make(hdr(2, 7))), Delivery::kQueued);
  ASSERT_EQ(c.deliver(&p.make(hdr(1, 7))), Delivery::kQueued);
  ASSERT_EQ(c.deliver(&p.make(hdr(1, 8))), Delivery::kQueued);
  auto any = c.probe(hdr(kAny, kAny));
  ASSERT_TRUE(any.has_value());
  EXPECT_TRUE(same(*any, hdr(2, 7)));
  auto from1 = c.probe(hdr(1, kAny));
  ASSERT_TRUE(from1.has_value());
  EXPECT_TRUE(same(*from1, hdr(1, 7)));
  auto exact = c.probe(hdr(1, 8));
  ASSERT_TRUE(exact.has_value());
  EXPECT_TRUE(same(*exact, hdr(1, 8)));
  EXPECT_FALSE(c.probe(hdr(3, kAny)).has_value());
  EXPECT_EQ(c.unexpected_size(), 3u);
}

TEST(Communicator, RendezvousSendFirst) {
  Comm c;
  Pool p;
  TestEnv &s1 = p.make(hdr(1, 2), 1);
  TestEnv &s2 = p.make(hdr(1, 2), 2);
  TestEnv &s3 = p.make(hdr(1, 3), 3);
  for (TestEnv *s : {&s1, &s2, &s3}) ASSERT_EQ(c.post_rendezvous_send(s), nullptr);
  EXPECT_EQ(c.unrequested_size(), 3u);
  TestEnv &r1 = p.make(hdr(1, kAny));
  EXPECT_EQ(c.request_arrived(&r1), &s1);
  EXPECT_EQ(s1.matched, &r1);
  EXPECT_EQ(r1.matched, &s1);
  EXPECT_FALSE(s1.complete.is_done());  // transfer completion is the caller's business
  EXPECT_FALSE(r1.complete.is_done());
  EXPECT_EQ(c.request_arrived(&p.make(hdr(1, 3))), &s3);
  EXPECT_TRUE(c.cancel_send(&s2));
  EXPECT_FALSE(c.cancel_send(&s2));
  EXPECT_FALSE(c.cancel_send(&s1));  // taken by a request
  TestEnv &r3 = p.make(hdr(1, 2));
  EXPECT_EQ(c.request_arrived(&r3), nullptr);  // s2 was cancelled: the request parks
  EXPECT_EQ(c.requested_size(), 1u);
  EXPECT_EQ(c.unrequested_size(), 0u);
  // Rendezvous queues are separate from the receive queues.
  EXPECT_EQ(c.expected_size(), 0u);
  EXPECT_EQ(c.unexpected_size(), 0u);
}

TEST(Communicator, RendezvousRequestFirst) {
  Comm c;
  Pool p;
  TestEnv &q1 = p.make(hdr(kAny, 2), 1);
  TestEnv &q2 = p.make(hdr(1, 2), 2);
  TestEnv &q3 = p.make(hdr(kAny, kAny, 1), 3);
  for (TestEnv *q : {&q1, &q2, &q3}) ASSERT_EQ(c.request_arrived(q), nullptr);
  TestEnv &s1 = p.make(hdr(1, 2));
  EXPECT_EQ(c.post_rendezvous_send(&s1), &q1);  // earliest matching request
  EXPECT_EQ(s1.matched, &q1);
  EXPECT_EQ(q1.matched, &s1);
  EXPECT_EQ(c.post_rendezvous_send(&p.make(hdr(1, 2))), &q2);
  EXPECT_EQ(c.post_rendezvous_send(&p.make(hdr(1, 2))), nullptr);  // q3 is another context
  EXPECT_EQ(c.post_rendezvous_send(&p.make(hdr(4, 4, 1))), &q3);
  EXPECT_EQ(c.requested_size(), 0u);
  EXPECT_EQ(c.unrequested_size(), 1u);
}

TEST(Communicator, CloseDrainsEverythingOnceAndCompletesReceives) {
  Comm c;
  Pool p;
  std::vector<TestEnv *> receives, others;
  for (int i = 0; i < 5; ++i) {
    receives.push_back(&p.make(i % 2 == 0 ? hdr(100 + i, 1) : hdr(kAny, 100 + i), i));
    ASSERT_EQ(c.post_receive(receives.back()), nullptr);
  }
  for (int i = 0; i < 4; ++i) {
    others.push_back(&p.make(hdr(i, 7), 10 + i));
    ASSERT_EQ(c.deliver(others.back()), Delivery::kQueued);
  }
  for (int i = 0; i < 3; ++i) {
    others.push_back(&p.make(hdr(i, 8), 20 + i));
    ASSERT_EQ(c.post_rendezvous_send(others.back()), nullptr);
  }
  for (int i = 0; i < 2; ++i) {
    others.push_back(&p.make(hdr(50, kAny), 30 + i));
    ASSERT_EQ(c.request_arrived(others.back()), nullptr);
  }

  std::multiset<int> dropped;
  c.close(-42, [&](Envelope<TestHeader> *e) {
    dropped.insert(as_test(e)->id);
    // on_drop runs outside the lock: calling back in must not deadlock.
    EXPECT_EQ(c.deliver(e), Delivery::kClosed);
  });
  std::multiset<int> want;
  for (TestEnv *e : others) want.insert(e->id);
  EXPECT_EQ(dropped, want);
  for (TestEnv *r : receives) {
    EXPECT_TRUE(r->complete.is_done());
    EXPECT_EQ(r->status, -42);
    EXPECT_EQ(r->matched, nullptr);
    EXPECT_FALSE(c.cancel_receive(r));
  }
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(c.expected_size() + c.unexpected_size() + c.requested_size() + c.unrequested_size(),
            0u);

  // Idempotent: nothing is dropped twice.
  int again = 0;
  c.close(-1, [&](Envelope<TestHeader> *) { ++again; });
  EXPECT_EQ(again, 0);

  // After close everything completes at once with the first status.
  TestEnv &msg = p.make(hdr(1, 7));
  EXPECT_EQ(c.deliver(&msg), Delivery::kClosed);
  EXPECT_EQ(msg.matched, nullptr);
  TestEnv &recv = p.make(hdr(kAny, kAny));
  EXPECT_EQ(c.post_receive(&recv), nullptr);
  EXPECT_TRUE(recv.complete.is_done());
  EXPECT_EQ(recv.status, -42);
  TestEnv &send = p.make(hdr(1, 8));
  EXPECT_EQ(c.post_rendezvous_send(&send), nullptr);
  EXPECT_TRUE(send.complete.is_done());
  EXPECT_EQ(send.status, -42);
  EXPECT_FALSE(c.cancel_send(&send));
  TestEnv &req = p.make(hdr(1, 8));
  EXPECT_EQ(c.request_arrived(&req), nullptr);
  EXPECT_TRUE(req.complete.is_done());
  EXPECT_EQ(req.status, -42);
  EXPECT_FALSE(c.probe(hdr(kAny, kAny)).has_value());
}

TEST(Communicator, CloseWakesABlockedReceiver) {
  Comm c;
  TestEnv recv;
  recv.header = hdr(1, 1);
  ASSERT_EQ(c.post_receive(&recv), nullptr);
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    c.close(-3, [](Envelope<TestHeader> *) {});
  });
  EXPECT_TRUE(recv.complete.wait(-1, 0ns));
  EXPECT_EQ(recv.status, -3);
  closer.join();
}

TEST(Communicator, EnvelopesCanBeReused) {
  Comm c;
  TestEnv recv, msg;
  for (int round = 0; round < 100; ++round) {
    recv.header = round % 2 == 0 ? hdr(1, round) : hdr(kAny, kAny);
    msg.header = hdr(1, round);
    if (round % 3 == 0) {
      ASSERT_EQ(c.post_receive(&recv), nullptr);
      ASSERT_FALSE(recv.complete.is_done());
      ASSERT_EQ(c.deliver(&msg), Delivery::kMatched);
    } else {
      ASSERT_EQ(c.deliver(&msg), Delivery::kQueued);
      ASSERT_EQ(c.post_receive(&recv), &msg);
    }
    ASSERT_TRUE(recv.complete.is_done());
    ASSERT_EQ(recv.matched, &msg);
  }
}

// Ping-pong over a few headers (exact and pattern receives, both arrival
// orders, cancels, probes, rendezvous) allocates nothing once every header
// has been seen.
TEST(Communicator, SteadyStateDoesNotAllocate) {
  Comm c;
  TestEnv recv, msg, send, req;
  auto round = [&](int i) {
    const TestHeader h = hdr(i % 8, (i / 8) % 6, i % 2);
    msg.header = h;
    recv.header = i % 5 == 0 ? hdr(kAny, h.tag, h.context) : h;
    if (i % 2 == 0) {
      ASSERT_EQ(c.post_receive(&recv), nullptr);
      ASSERT_EQ(c.deliver(&msg), Delivery::kMatched);
    } else {
      ASSERT_EQ(c.deliver(&msg), Delivery::kQueued);
      ASSERT_TRUE(c.probe(recv.header).has_value());
      ASSERT_EQ(c.post_receive(&recv), &msg);
    }
    ASSERT_EQ(c.post_receive(&recv), nullptr);
    ASSERT_TRUE(c.cancel_receive(&recv));
    send.header = h;
    req.header = recv.header;
    ASSERT_EQ(c.post_rendezvous_send(&send), nullptr);
    ASSERT_EQ(c.request_arrived(&req), &send);
    ASSERT_EQ(c.request_arrived(&req), nullptr);
    ASSERT_EQ(c.post_rendezvous_send(&send), &req);
  };
  for (int i = 0; i < 96; ++i) round(i);  // 96 distinct headers: > 64, bins get freed
  for (int i = 0; i < 48; ++i) round(i);  // warm up the 48 headers used below
  const std::uint64_t before = g_allocations.load();
  for (int i = 0; i < 48 * 200; ++i) round(i % 48);
  EXPECT_EQ(g_allocations.load() - before, 0u);
}

// Many headers come and go: emptied bins beyond the bound are freed and
// recreated without losing or reordering anything.
TEST(Communicator, ManyDistinctHeaders) {
  Comm c;
  Pool p;
  std::vector<TestEnv *> msgs;
  for (int i = 0; i < 500; ++i) {
    msgs.push_back(&p.make(hdr(i % 250, 0), i));
    ASSERT_EQ(c.deliver(msgs.back()), Delivery::kQueued);
  }
  for (int i = 0; i < 250; ++i) ASSERT_EQ(c.post_receive(&p.make(hdr(i, 0))), msgs[i]);
  for (int i = 250; i < 500; ++i) ASSERT_EQ(c.post_receive(&p.make(hdr(i - 250, 0))), msgs[i]);
  for (int i = 0; i < 250; ++i) ASSERT_EQ(c.post_receive(&p.make(hdr(i, 0))), nullptr);
  for (int i = 0; i < 250; ++i) ASSERT_EQ(c.deliver(&p.make(hdr(i, 0))), Delivery::kMatched);
  EXPECT_EQ(c.expected_size() + c.unexpected_size(), 0u);
}

// A receiver that destroys its envelope as soon as the wait returns: the
// deliverer must not touch the receive after signalling (ASan / TSan would
// see it).
TEST(Communicator, ReceiverMayDestroyEnvelopeRightAfterWait) {
  constexpr int kIterations = 20000;
  Comm c;
  std::vector<std::unique_ptr<TestEnv>> msgs;
  for (int i = 0; i < kIterations; ++i) {
    msgs.push_back(std::make_unique<TestEnv>());
    msgs.back()->header = hdr(0, i % 4);
    msgs.back()->id = i;
  }
  std::atomic<int> posted{0};
  std::thread deliverer([&] {
    for (int i = 0; i < kIterations; ++i) {
      while (posted.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      ASSERT_EQ(c.deliver(msgs[i].get()), Delivery::kMatched);
    }
  });
  for (int i = 0; i < kIterations; ++i) {
    auto recv = std::make_unique<TestEnv>();
    recv->header = i % 2 == 0 ? hdr(0, i % 4) : hdr(kAny, kAny);
    ASSERT_EQ(c.post_receive(recv.get()), nullptr);
    posted.store(i + 1, std::memory_order_release);
    ASSERT_TRUE(recv->complete.wait(-1, (i % 3 == 0) ? std::chrono::nanoseconds(10us) : 0ns));
    ASSERT_EQ(as_test(recv->matched)->id, i);
    recv.reset();
  }
  deliverer.join();
}

// 4 producers deliver 50k messages each while 2 consumers keep windows of
// receives posted. Consumer A owns sources 0 and 1 (context 0): pattern
// receives (source, ANY) for source 0 and exact receives for source 1.
// Consumer B owns sources 2 and 3 (context 1) with (ANY, ANY) receives.
// Every message must be received exactly once, and each source's messages in
// the order they were sent.
TEST(Communicator, ConcurrentProducersAndConsumers) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 50000;
  constexpr int kTags = 8;
  constexpr int kWindow = 8;  // <= kTags so that exact receives are unambiguous
  Comm c;

  std::vector<std::unique_ptr<TestEnv[]>> msgs;
  for (int s = 0; s < kProducers; ++s) {
    msgs.push_back(std::make_unique<TestEnv[]>(kPerProducer));
    for (int i = 0; i < kPerProducer; ++i) {
      msgs[s][i].header = hdr(s, i % kTags, s < 2 ? 0 : 1);
      msgs[s][i].id = i;
    }
  }
  std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
  for (auto &x : seen) x.store(0);

  auto consumer = [&](std::vector<int> sources, bool exact_for_second) {
    struct Slot {
      TestEnv env;
      int source = 0;
      int seq = 0;  // the sequence number an exact receive asks for
    };
    const int total = kPerProducer * static_cast<int>(sources.size());
    std::vector<int> next_expected(kProducers, 0);
    std::vector<int> next_posted(kProducers, 0);
    std::vector<std::unique_ptr<Slot>> window;
    int posted = 0;
    int received = 0;
    auto post = [&] {
      auto slot = std::make_unique<Slot>();
      const int s = sources[posted % sources.size()];
      slot->source = s;
      slot->seq = next_posted[s]++;
      if (sources[0] >= 2) {
        slot->env.header = hdr(kAny, kAny, 1);
      } else if (exact_for_second && s == sources[1]) {
        slot->env.header = hdr(s, slot->seq % kTags, 0);
      } else {
        slot->env.header = hdr(s, kAny, 0);
      }
      c.post_receive(&slot->env);
      window.push_back(std::move(slot));
      ++posted;
    };
    while (posted < total && static_cast<int>(window.size()) < kWindow) post();
    while (received < total) {
      std::unique_ptr<Slot> slot = std::move(window.front());
      window.erase(window.begin());
      ASSERT_TRUE(slot->env.complete.wait(-1, 20us));
      auto *msg = as_test(slot->env.matched);
      ASSERT_NE(msg, nullptr);
      const int s = msg->header.source;
      ASSERT_TRUE(std::find(sources.begin(), sources.end(), s) != sources.end());
      EXPECT_EQ(seen[s * kPerProducer + msg->id].fetch_add(1), 0);
      EXPECT_EQ(msg->id, next_expected[s]) << "source " << s << " overtaken";
      next_expected[s] = msg->id + 1;
      if (sources[0] < 2) {
        EXPECT_EQ(s, slot->source);
        if (exact_for_second && s == sources[1]) {
          EXPECT_EQ(msg->id, slot->seq);
        }
      }
      ++received;
      if (posted < total) post();
    }
  };

  std::vector<std::thread> threads;
  threads.emplace_back(consumer, std::vector<int>{0, 1}, true);
  threads.emplace_back(consumer, std::vector<int>{2, 3}, false);
  for (int s = 0; s < kProducers; ++s) {
    threads.emplace_back([&, s] {
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_NE(c.deliver(&msgs[s][i]), Delivery::kClosed);
        if (i % 1024 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto &t : threads) t.join();
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "message " << i;
  EXPECT_EQ(c.expected_size(), 0u);
  EXPECT_EQ(c.unexpected_size(), 0u);
}

}  // namespace
}  // namespace rocl::generic
