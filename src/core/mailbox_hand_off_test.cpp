// mailbox_hand_off_test.cpp - the hand-off to a spinning receive of
// the core's mailbox (post_spinning, hand_to_waiter, take_handed,
// withdraw): who gets a ticket, which messages go through the word, what
// the locked calls (deliver, claim_receive, cancel_receive, close) do to a
// receive that spins, and many senders racing one spinning receiver.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/mailbox.hpp"
#include "test_header.hpp"

namespace rocl::generic {
namespace {

using test_support::hdr;
using test_support::kAny;
using test_support::TestEnv;
using test_support::TestHeader;
using Env = Envelope<TestHeader>;
using Comm = impl::MailboxOf<TestHeader>;

const auto kMine = [] { return true; };

TEST(HandOff, AReceivePostedAloneSpinsAndTakesItsMessageThroughTheWord) {
  Comm c;
  TestEnv recv, other, msg;
  recv.header = hdr(1, 2);
  other.header = hdr(1, 3);
  msg.header = hdr(1, 2);
  std::uint64_t ticket = 0;
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  ASSERT_NE(ticket, 0u);
  EXPECT_TRUE(c.waiting_on(ticket));
  EXPECT_EQ(c.expected_size(), 1u);

  EXPECT_FALSE(c.hand_to_waiter(&other, kMine));               // another header
  EXPECT_FALSE(c.hand_to_waiter(&msg, [] { return false; }));  // not the caller's endpoint
  EXPECT_TRUE(c.waiting_on(ticket));
  ASSERT_TRUE(c.hand_to_waiter(&msg, kMine));
  EXPECT_FALSE(c.waiting_on(ticket));
  EXPECT_FALSE(recv.complete.is_done());  // nothing signalled: the word says it
  EXPECT_EQ(c.expected_size(), 0u);       // no longer posted
  EXPECT_FALSE(c.cancel_receive(&recv));
  EXPECT_FALSE(c.hand_to_waiter(&other, kMine));  // the word is the owner's until it looks
  EXPECT_EQ(c.deliver(&other), Delivery::kQueued);

  EXPECT_EQ(c.take_handed(&recv, ticket), &msg);
  EXPECT_EQ(recv.matched, &msg);
  EXPECT_EQ(msg.matched, &recv);

  // Once it has, the next receive posted alone spins again; a message that
  // waits queued comes back at once, unsignalled, without a ticket.
  TestEnv next;
  next.header = hdr(1, kAny);
  std::uint64_t t2 = 1;
  EXPECT_EQ(c.post_spinning(&next, &t2), &other);
  EXPECT_EQ(t2, 0u);
  EXPECT_FALSE(next.complete.is_done());
  ASSERT_EQ(c.post_spinning(&next, &t2), nullptr);
  EXPECT_NE(t2, 0u);
  EXPECT_NE(t2, ticket);  // tickets are never the same twice
}

TEST(HandOff, OnlyTheEarliestReceivePostedAloneSpins) {
  Comm c;
  TestEnv first, second, for_second, for_first;
  first.header = hdr(1, 1);
  second.header = hdr(kAny, 2);
  for_second.header = hdr(5, 2);
  for_first.header = hdr(1, 1);
  std::uint64_t t1 = 0, t2 = 1;
  ASSERT_EQ(c.post_spinning(&first, &t1), nullptr);
  ASSERT_EQ(c.post_spinning(&second, &t2), nullptr);
  EXPECT_NE(t1, 0u);
  EXPECT_EQ(t2, 0u);  // not alone: waits on its completion
  EXPECT_FALSE(c.hand_to_waiter(&for_second, kMine));
  Env *to_signal = nullptr;
  ASSERT_EQ(c.deliver(&for_second, &to_signal), Delivery::kMatched);
  EXPECT_EQ(to_signal, &second);  // the locked path, as ever
  EXPECT_TRUE(c.waiting_on(t1));
  // A message for the spinning one that takes the lock (its sender looked
  // before the ticket was out) is handed over all the same.
  ASSERT_EQ(c.deliver(&for_first, &to_signal), Delivery::kMatched);
  EXPECT_EQ(to_signal, nullptr);
  EXPECT_FALSE(first.complete.is_done());
  EXPECT_EQ(c.take_handed(&first, t1), &for_first);
}

TEST(HandOff, LockedCallsSettleASpinningReceive) {
  Comm c;
  TestEnv recv;
  recv.header = hdr(1, 2);
  std::uint64_t ticket = 0;
  const auto yes = [](const Env &) { return true; };

  // claim_receive (a transport copying into the receive's memory) leaves
  // a spinning receive alone, without asking accepts (its owner may be
  // handed a message and reuse it meanwhile); withdrawn, it is claimed.
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  bool asked = false;
  const auto ask = [&asked](const Env &) { return asked = true; };
  EXPECT_EQ(c.claim_receive(hdr(1, 2), ask), nullptr);
  EXPECT_FALSE(asked);
  EXPECT_TRUE(c.waiting_on(ticket));
  ASSERT_TRUE(c.withdraw(ticket));
  ASSERT_EQ(c.claim_receive(hdr(1, 2), yes), &recv);
  EXPECT_FALSE(c.cancel_receive(&recv));  // claimed: no longer posted

  // cancel_receive: back with the owner, the word idle (a new ticket).
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  ASSERT_TRUE(c.cancel_receive(&recv));
  EXPECT_FALSE(c.waiting_on(ticket));
  EXPECT_EQ(c.expected_size(), 0u);
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  EXPECT_NE(ticket, 0u);

  // withdraw: still posted, completed the ordinary way.
  ASSERT_TRUE(c.withdraw(ticket));
  EXPECT_FALSE(c.withdraw(ticket));
  TestEnv msg;
  msg.header = hdr(1, 2);
  EXPECT_FALSE(c.hand_to_waiter(&msg, kMine));
  ASSERT_EQ(c.deliver(&msg), Delivery::kMatched);
  EXPECT_TRUE(recv.complete.is_done());
  EXPECT_EQ(recv.matched, &msg);

  // close: completed with the status, nothing handed.
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  ASSERT_NE(ticket, 0u);
  c.close(9, [](Env *) {});
  EXPECT_FALSE(c.waiting_on(ticket));
  EXPECT_EQ(c.take_handed(&recv, ticket), nullptr);
  EXPECT_TRUE(recv.complete.is_done());
  EXPECT_EQ(recv.status, 9);
  EXPECT_FALSE(c.hand_to_waiter(&msg, kMine));
}

TEST(HandOff, AMessageHandedBeforeCloseStaysWithTheReceive) {
  Comm c;
  TestEnv recv, msg;
  recv.header = hdr(1, 2);
  msg.header = hdr(1, 2);
  std::uint64_t ticket = 0;
  ASSERT_EQ(c.post_spinning(&recv, &ticket), nullptr);
  ASSERT_TRUE(c.hand_to_waiter(&msg, kMine));
  int dropped = 0;
  c.close(9, [&](Env *) { ++dropped; });
  EXPECT_EQ(dropped, 0);
  EXPECT_FALSE(recv.complete.is_done());  // close() left it alone: it has its message
  EXPECT_EQ(c.take_handed(&recv, ticket), &msg);
}

// Senders race one receiver that posts spinning receives for any source,
// now and then giving up the spin (withdraw) and waiting on the
// completion: every message arrives once, each sender's in order, whether
// it went through the word (with or without the lock) or the completion.
TEST(HandOff, RacingSendersLoseNothingAndKeepTheirOrder) {
  constexpr int kSenders = 3;
  constexpr int kPerSender = 10000;
  constexpr int kInFlight = 2;  // so that the receiver often waits with nothing queued
  Comm c;
  std::vector<std::unique_ptr<TestEnv[]>> messages;
  for (int s = 0; s < kSenders; ++s) {
    messages.push_back(std::make_unique<TestEnv[]>(kPerSender));
    for (int i = 0; i < kPerSender; ++i) {
      messages[s][i].header = hdr(s, 7);
      messages[s][i].id = i;
    }
  }
  std::atomic<bool> go{false};
  std::atomic<int> sent{0}, received{0};
  std::vector<std::thread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < kPerSender; ++i) {
        while (sent.load() - received.load() >= kInFlight) std::this_thread::yield();
        sent.fetch_add(1);
        TestEnv *m = &messages[s][i];
        if (i % 2 == 0 && c.hand_to_waiter(m, kMine)) continue;
        ASSERT_NE(c.deliver(m), Delivery::kClosed);
      }
    });
  }
  std::vector<int> next(kSenders, 0);
  int handed = 0, withdrawn = 0;
  go.store(true, std::memory_order_release);
  for (int n = 0; n < kSenders * kPerSender; ++n) {
    TestEnv recv;
    recv.header = hdr(kAny, 7);
    std::uint64_t ticket = 0;
    Env *got = c.post_spinning(&recv, &ticket);
    if (got == nullptr && ticket != 0) {
      // Spinning gives the cpu away: on a busy (or one-cpu) machine the
      // senders must run meanwhile for anything to be handed.
      // Every fifth gives up at once, racing the senders' swaps.
      const int spins = n % 5 == 0 ? 0 : 200;
      for (int spin = 0; c.waiting_on(ticket) && spin < spins; ++spin) std::this_thread::yield();
      if (!c.waiting_on(ticket) || !c.withdraw(ticket)) {
        got = c.take_handed(&recv, ticket);
        handed += got != nullptr ? 1 : 0;
      } else {
        ++withdrawn;
      }
    }
    if (got == nullptr) {
      ASSERT_TRUE(recv.complete.wait(10000, std::chrono::microseconds(50)));
      got = recv.matched;
    }
    ASSERT_NE(got, nullptr);
    const auto *m = static_cast<TestEnv *>(got);
    const int s = m->header.source;
    ASSERT_EQ(m->id, next[s]) << "sender " << s;
    ++next[s];
    received.fetch_add(1);
  }
  for (auto &t : senders) t.join();
  EXPECT_EQ(c.unexpected_size(), 0u);
  EXPECT_GT(handed, 0);
  EXPECT_GT(withdrawn, 0);
}

}  // namespace
}  // namespace rocl::generic
