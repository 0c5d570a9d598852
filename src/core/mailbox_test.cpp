// mailbox_test.cpp - what the core's mailbox adds to the generic
// Communicator: claims of a posted receive, deliveries and takes checked by
// still_mine(), requeues in arrival order, reopening, and the lock-free
// hints; over the generic tests' header.
#include "core/mailbox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "test_header.hpp"

namespace rocl::generic {
namespace {

using namespace std::chrono_literals;

using test_support::hdr;
using test_support::kAny;
using test_support::same;
using test_support::TestEnv;
using test_support::TestHeader;
static_assert(sizeof(Envelope<TestHeader>) <= 128, "envelope must fit the core's owner area");

using Comm = impl::MailboxOf<TestHeader>;

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

// The earliest posted receive, when it was posted alone, is kept beside the
// lock rather than in the expected queue (communicator.hpp: post): receives
// posted while it waits queue behind it, a message it does not match goes
// to those, and cancelling or matching it leaves the queue's order intact.
TEST(Mailbox, ReceivesPostedWhileOneWaitsQueueBehindIt) {
  Comm c;
  Pool p;
  TestEnv &waiting = p.make(hdr(5, 5), 1);
  TestEnv &exact = p.make(hdr(1, 2), 2);
  TestEnv &pattern = p.make(hdr(kAny, 2), 3);
  ASSERT_EQ(c.post_receive(&waiting), nullptr);
  ASSERT_EQ(c.post_receive(&exact), nullptr);
  ASSERT_EQ(c.post_receive(&pattern), nullptr);
  EXPECT_EQ(c.expected_size(), 3u);
  EXPECT_TRUE(c.has_posted_receives());
  TestEnv &m1 = p.make(hdr(1, 2));
  ASSERT_EQ(c.deliver(&m1), Delivery::kMatched);  // not the waiting one's header
  EXPECT_EQ(m1.matched, &exact);
  TestEnv &m2 = p.make(hdr(7, 2));
  ASSERT_EQ(c.deliver(&m2), Delivery::kMatched);
  EXPECT_EQ(m2.matched, &pattern);
  EXPECT_FALSE(waiting.complete.is_done());
  TestEnv &m3 = p.make(hdr(5, 5));
  ASSERT_EQ(c.deliver(&m3), Delivery::kMatched);
  EXPECT_EQ(m3.matched, &waiting);
  EXPECT_EQ(c.expected_size(), 0u);
  EXPECT_FALSE(c.has_posted_receives());

  // A pattern waiting alone takes a message before an exact receive posted
  // after it; cancelled, the exact one is the earliest, and a receive
  // posted now joins the queue behind it.
  TestEnv &any = p.make(hdr(kAny, kAny), 4);
  TestEnv &first = p.make(hdr(1, 1), 5);
  TestEnv &second = p.make(hdr(1, 1), 6);
  ASSERT_EQ(c.post_receive(&any), nullptr);
  ASSERT_EQ(c.post_receive(&first), nullptr);
  EXPECT_TRUE(c.cancel_receive(&any));
  EXPECT_FALSE(c.cancel_receive(&any));
  ASSERT_EQ(c.post_receive(&second), nullptr);
  TestEnv &m4 = p.make(hdr(1, 1));
  TestEnv &m5 = p.make(hdr(1, 1));
  ASSERT_EQ(c.deliver(&m4), Delivery::kMatched);
  ASSERT_EQ(c.deliver(&m5), Delivery::kMatched);
  EXPECT_EQ(m4.matched, &first);
  EXPECT_EQ(m5.matched, &second);
  EXPECT_FALSE(any.complete.is_done());

  // claim_receive sees the waiting one first, and close() completes it.
  TestEnv &claimed = p.make(hdr(2, 2), 7);
  ASSERT_EQ(c.post_receive(&claimed), nullptr);
  EXPECT_EQ(c.claim_receive(hdr(2, 2), [](const Envelope<TestHeader> &) { return true; }),
            &claimed);
  TestEnv &left = p.make(hdr(3, 3), 8);
  ASSERT_EQ(c.post_receive(&left), nullptr);
  c.close(-9, [](Envelope<TestHeader> *) {});
  EXPECT_TRUE(left.complete.is_done());
  EXPECT_EQ(left.status, -9);
  EXPECT_EQ(left.matched, nullptr);
}

// take_queued: the earliest matching queued message, only while the
// endpoint is still the caller's and the message is accepted; otherwise
// nothing changes. reopen: a closed Communicator works again, empty.
TEST(Mailbox, TakeQueuedTakesOnlyFromAnOpenEndpointThatIsStillTheCallers) {
  Comm c;
  Pool p;
  TestEnv &first = p.make(hdr(1, 2), 1);
  TestEnv &second = p.make(hdr(1, 3), 2);
  const TestHeader recv = hdr(1, kAny);
  const auto yes = [](const Envelope<TestHeader> &) { return true; };
  const auto not_first = [](const Envelope<TestHeader> &m) {
    return static_cast<const TestEnv &>(m).id != 1;
  };
  const auto mine = [] { return true; };
  const auto not_mine = [] { return false; };
  EXPECT_FALSE(c.has_queued_messages());
  EXPECT_EQ(c.take_queued(recv, mine, yes), nullptr);
  ASSERT_EQ(c.deliver(&first), Delivery::kQueued);
  ASSERT_EQ(c.deliver(&second), Delivery::kQueued);
  EXPECT_TRUE(c.has_queued_messages());

  EXPECT_EQ(c.take_queued(recv, not_mine, yes), nullptr);  // not the caller's
  // The earliest is declined: nothing skips ahead of it.
  EXPECT_EQ(c.take_queued(recv, mine, not_first), nullptr);
  EXPECT_EQ(c.unexpected_size(), 2u);

  first.matched = &second;  // whatever it was: the taker has no envelope
  EXPECT_EQ(c.take_queued(recv, mine, yes), &first);
  EXPECT_EQ(first.matched, nullptr);
  EXPECT_EQ(c.expected_size(), 0u);  // nothing posted
  EXPECT_EQ(c.unexpected_size(), 1u);

  std::vector<int> dropped;
  c.close(5, [&](Envelope<TestHeader> *e) { dropped.push_back(as_test(e)->id); });
  EXPECT_EQ(dropped, std::vector<int>{2});
  EXPECT_FALSE(c.has_queued_messages());
  EXPECT_EQ(c.take_queued(recv, mine, yes), nullptr);  // closed

  c.reopen();
  EXPECT_FALSE(c.closed());
  EXPECT_EQ(c.deliver(&second), Delivery::kQueued);
  EXPECT_EQ(c.take_queued(recv, mine, yes), &second);
  TestEnv &posted = p.make(hdr(1, 4));
  EXPECT_EQ(c.post_receive(&posted), nullptr);
  EXPECT_EQ(c.expected_size(), 1u);
}

// A matched message put back (its receiver could not take it) returns to
// its place in arrival order: taken from the queue or matched on arrival,
// it is again the first a matching receive gets, before the messages of
// its header and bin that arrived after it, and after those before it.
TEST(Mailbox, RequeuedMessagesKeepTheirPlaceInArrivalOrder) {
  Comm c;
  Pool p;
  TestEnv &m0 = p.make(hdr(1, 1), 0);
  TestEnv &m1 = p.make(hdr(1, 1), 1);
  TestEnv &m2 = p.make(hdr(2, 1), 2);
  TestEnv &m3 = p.make(hdr(1, 1), 3);
  for (TestEnv *m : {&m0, &m1, &m2, &m3}) ASSERT_EQ(c.deliver(m), Delivery::kQueued);
  // m1 taken (m0 first), then put back: m0 remains before it.
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 1))), &m0);
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 1))), &m1);
  ASSERT_TRUE(c.requeue(&m1));
  EXPECT_EQ(m1.matched, nullptr);
  EXPECT_EQ(c.unexpected_size(), 3u);
  // A wildcard gets m1 (arrived before m2 and m3), an exact one as well.
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, 1))), &m1);
  ASSERT_TRUE(c.requeue(&m1));
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 1))), &m1);
  ASSERT_TRUE(c.requeue(&m1));
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 1))), &m1);
  EXPECT_EQ(c.post_receive(&p.make(hdr(kAny, kAny))), &m2);
  EXPECT_EQ(c.post_receive(&p.make(hdr(1, 1))), &m3);
  EXPECT_EQ(c.unexpected_size(), 0u);
  // Matched on arrival, then put back: before what arrived after it.
  TestEnv &waiting = p.make(hdr(5, 5));
  ASSERT_EQ(c.post_receive(&waiting), nullptr);
  TestEnv &m4 = p.make(hdr(5, 5), 4);
  TestEnv &m5 = p.make(hdr(5, 5), 5);
  ASSERT_EQ(c.deliver(&m4), Delivery::kMatched);
  EXPECT_EQ(waiting.matched, &m4);
  ASSERT_EQ(c.deliver(&m5), Delivery::kQueued);
  ASSERT_TRUE(c.requeue(&m4));
  EXPECT_EQ(c.post_receive(&p.make(hdr(5, kAny))), &m4);
  EXPECT_EQ(c.post_receive(&p.make(hdr(5, 5))), &m5);
  // Closed meanwhile: refused, the caller keeps the message.
  TestEnv &m6 = p.make(hdr(6, 6), 6);
  ASSERT_EQ(c.deliver(&m6), Delivery::kQueued);
  EXPECT_EQ(c.post_receive(&p.make(hdr(6, 6))), &m6);
  c.close(-1, [](Envelope<TestHeader> *) {});
  EXPECT_FALSE(c.requeue(&m6));
}

// claim_receive: a message without an envelope takes the receive posted
// earliest among the matching ones, only if that one accepts (here: it has
// an id), unqueued and not signalled; otherwise nothing changes.
TEST(Mailbox, ClaimReceiveTakesTheEarliestMatchingReceiveIfItAccepts) {
  Comm c;
  Pool p;
  const auto has_id = [](const Envelope<TestHeader> &e) {
    return static_cast<const TestEnv &>(e).id != 0;
  };
  EXPECT_FALSE(c.has_posted_receives());
  EXPECT_EQ(c.claim_receive(hdr(1, 2), has_id), nullptr);  // none posted
  TestEnv &declines = p.make(hdr(kAny, 2), 0);
  TestEnv &accepts = p.make(hdr(1, 2), 7);
  TestEnv &other = p.make(hdr(3, 3), 9);
  ASSERT_EQ(c.post_receive(&declines), nullptr);
  ASSERT_EQ(c.post_receive(&accepts), nullptr);
  ASSERT_EQ(c.post_receive(&other), nullptr);
  EXPECT_TRUE(c.has_posted_receives());
  // The earliest match declines: nothing changes (deliver() must take it).
  EXPECT_EQ(c.claim_receive(hdr(1, 2), has_id), nullptr);
  EXPECT_EQ(c.expected_size(), 3u);
  EXPECT_EQ(c.claim_receive(hdr(4, 4), has_id), nullptr);  // no match
  ASSERT_EQ(c.deliver(&p.make(hdr(1, 2))), Delivery::kMatched);
  EXPECT_TRUE(declines.complete.is_done());
  // Now the earliest match accepts: unqueued, unsignalled, matched nullptr.
  EXPECT_EQ(c.claim_receive(hdr(1, 2), has_id), &accepts);
  EXPECT_FALSE(accepts.complete.is_done());
  EXPECT_EQ(accepts.matched, nullptr);
  EXPECT_EQ(c.expected_size(), 1u);
  EXPECT_FALSE(c.cancel_receive(&accepts));  // no longer queued
  accepts.complete.signal();
  EXPECT_EQ(c.claim_receive(hdr(3, 3), has_id), &other);
  EXPECT_FALSE(c.has_posted_receives());
  // Closed: nothing is claimed.
  TestEnv &late = p.make(hdr(5, 5), 1);
  ASSERT_EQ(c.post_receive(&late), nullptr);
  c.close(-1, [](Envelope<TestHeader> *) {});
  EXPECT_EQ(c.claim_receive(hdr(5, 5), has_id), nullptr);
  EXPECT_FALSE(c.has_posted_receives());
  EXPECT_EQ(late.status, -1);
}

}  // namespace
}  // namespace rocl::generic
