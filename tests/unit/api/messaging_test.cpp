// messaging_test.cpp - rocl_send/rocl_recv between resources: content and
// description, copy vs zero-copy hand-off, ordering, selection, timeouts,
// error paths, deletion, and message sizes up to 64 MiB.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

class Messaging : public ContextTest {
 protected:
  void SetUp() override {
    ContextTest::SetUp();
    if (HasFatalFailure()) return;
    a_ = must_register("msg", "a");
    b_ = must_register("msg", "b");
    c_ = must_register("msg", "c");
    ASSERT_NE(a_, ROCL_NULL_GID);
    ASSERT_NE(b_, ROCL_NULL_GID);
    ASSERT_NE(c_, ROCL_NULL_GID);
    base_ = pool_stats();
  }

  // Receives one message on dgid (2 s at most) and returns it as a string;
  // the buffer is returned to the pool.
  std::string recv_string(rocl_gid_t dgid, rocl_gid_t ogid = ROCL_ANY_GID, int tag = ROCL_ANY,
                          rocl_gid_t *aogid = nullptr, int *atag = nullptr) {
    void *p = nullptr;
    size_t len = 0;
    int rc = rocl_recv(dgid, ogid, tag, &p, aogid, atag, &len, 2000);
    if (rc != ROCL_OK) return std::string("<") + rocl_strerror(rc) + ">";
    std::string s(static_cast<const char *>(p), len);
    EXPECT_EQ(rocl_bfret(p), ROCL_OK);
    return s;
  }

  int send_string(rocl_gid_t from, rocl_gid_t to, int tag, const std::string &s) {
    return rocl_send(from, to, tag, const_cast<char *>(s.data()), s.size());
  }

  // Polls dgid once: true if nothing (matching) is queued.
  bool empty(rocl_gid_t dgid, rocl_gid_t ogid = ROCL_ANY_GID, int tag = ROCL_ANY) {
    void *p = nullptr;
    int rc = rocl_recv(dgid, ogid, tag, &p, nullptr, nullptr, nullptr, 0);
    if (rc == ROCL_OK) rocl_bfret(p);
    return rc == ROCL_ETIMEDOUT;
  }

  void expect_pool_at_baseline() {
    rocl_pool_stats_t s = pool_stats();
    EXPECT_EQ(s.in_use_buffers, base_.in_use_buffers);
    EXPECT_EQ(s.in_use_bytes, base_.in_use_bytes);
  }

  rocl_gid_t a_ = 0, b_ = 0, c_ = 0;
  rocl_pool_stats_t base_{};
};

// ---- basic exchange --------------------------------------------------------------

TEST_F(Messaging, SendRecvSameThread) {
  char data[] = "hello";
  ASSERT_EQ(rocl_send(a_, b_, 7, data, 5), ROCL_OK) << rocl_last_error();
  void *p = nullptr;
  rocl_gid_t origin = 0;
  int tag = -99;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, &origin, &tag, &len, 2000), ROCL_OK)
      << rocl_last_error();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(origin, a_);
  EXPECT_EQ(tag, 7);
  EXPECT_EQ(len, 5u);
  EXPECT_EQ(std::memcmp(p, "hello", 5), 0);
  EXPECT_GE(rocl_bfsize(p), 5u) << "the received pointer is a rocl buffer";
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_IDLE);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Messaging, AcceptedMessageIsVisibleToAPoll) {
  ASSERT_EQ(send_string(a_, b_, 1, "now"), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_OK)
      << "in one process, a send that returned is queued at the destination";
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Messaging, DescriptionPointersMayBeNull) {
  ASSERT_EQ(send_string(a_, b_, 3, "xyz"), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_EQ(std::memcmp(p, "xyz", 3), 0);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Messaging, SendToSelf) {
  ASSERT_EQ(send_string(a_, a_, 0, "me"), ROCL_OK);
  rocl_gid_t o = 0;
  EXPECT_EQ(recv_string(a_, ROCL_ANY_GID, ROCL_ANY, &o), "me");
  EXPECT_EQ(o, a_);
}

TEST_F(Messaging, AcrossThreads) {
  std::string got;
  rocl_gid_t origin = 0;
  int tag = -1;
  std::thread receiver([&] {
    void *p = nullptr;
    size_t len = 0;
    int rc = rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, &origin, &tag, &len, 5000);
    if (rc == ROCL_OK) {
      got.assign(static_cast<const char *>(p), len);
      rocl_bfret(p);
    } else {
      got = rocl_strerror(rc);
    }
  });
  sleep_ms(20);
  ASSERT_EQ(send_string(a_, b_, 11, "across threads"), ROCL_OK);
  receiver.join();
  EXPECT_EQ(got, "across threads");
  EXPECT_EQ(origin, a_);
  EXPECT_EQ(tag, 11);
}

TEST_F(Messaging, PingPongBetweenThreads) {
  const int rounds = scaled(2000);
  std::atomic<int> errors{0};
  std::thread echo([&] {
    for (int i = 0; i < rounds; ++i) {
      void *p = nullptr;
      size_t len = 0;
      if (rocl_recv(b_, a_, ROCL_ANY, &p, nullptr, nullptr, &len, 5000) != ROCL_OK) {
        ++errors;
        return;
      }
      // Send the very buffer back.
      if (rocl_bftoret(p) != ROCL_OK || rocl_send(b_, a_, i, p, len) != ROCL_OK) ++errors;
    }
  });
  for (int i = 0; i < rounds; ++i) {
    ASSERT_EQ(rocl_send(a_, b_, i, &i, sizeof i), ROCL_OK);
    void *p = nullptr;
    int tag = -1;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(a_, b_, ROCL_ANY, &p, nullptr, &tag, &len, 5000), ROCL_OK) << i;
    ASSERT_EQ(len, sizeof i);
    int v = -1;
    std::memcpy(&v, p, sizeof v);
    EXPECT_EQ(v, i);
    EXPECT_EQ(tag, i);
    ASSERT_EQ(rocl_bfret(p), ROCL_OK);
  }
  echo.join();
  EXPECT_EQ(errors.load(), 0);
  expect_pool_at_baseline();
}

// Two pool buffers passed back and forth between two threads, which keeps
// each block's message envelope and renews it for every send
// (core/message.hpp: message_in): every message must still arrive with its
// own origin, tag, length and bytes, whether it met a waiting receive or
// was queued first (the second of each pair arrives before its receive,
// which selects it by tag ahead of the first). Then a send of a bounced
// buffer that fails (unknown destination) leaves it usable for the next.
TEST_F(Messaging, BuffersBouncedBetweenThreadsCarryEachMessageRight) {
  const int rounds = scaled(1000);
  std::atomic<int> errors{0};
  auto check = [&](bool ok) {
    if (!ok) ++errors;
    return ok;
  };
  std::thread echo([&] {
    for (int i = 0; i < rounds; ++i) {
      void *second = nullptr, *first = nullptr;
      rocl_gid_t from = 0;
      int tag = -1;
      size_t len = 0;
      if (!check(rocl_recv(b_, a_, 2 * i + 1, &second, &from, &tag, &len, 5000) == ROCL_OK)) return;
      check(from == a_ && tag == 2 * i + 1 && len == 2 + static_cast<size_t>(i % 50));
      check(static_cast<unsigned char *>(second)[0] == static_cast<unsigned char>(i + 1));
      if (!check(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &first, &from, &tag, &len, 5000) == ROCL_OK)) {
        return;
      }
      check(from == a_ && tag == 2 * i && len == 1 + static_cast<size_t>(i % 50));
      check(static_cast<unsigned char *>(first)[0] == static_cast<unsigned char>(i));
      static_cast<unsigned char *>(first)[0] = static_cast<unsigned char>(~i);
      check(rocl_bftoret(first) == ROCL_OK && rocl_send(b_, a_, 100000 + i, first, 7) == ROCL_OK);
      check(rocl_bftoret(second) == ROCL_OK && rocl_send(b_, a_, 200000 + i, second, 9) == ROCL_OK);
    }
  });
  void *x = rocl_bfget(64), *y = rocl_bfget(64);
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  for (int i = 0; i < rounds && errors.load() == 0; ++i) {
    static_cast<unsigned char *>(x)[0] = static_cast<unsigned char>(i);
    static_cast<unsigned char *>(y)[0] = static_cast<unsigned char>(i + 1);
    ASSERT_EQ(rocl_bftoret(x), ROCL_OK);
    ASSERT_EQ(rocl_send(a_, b_, 2 * i, x, 1 + static_cast<size_t>(i % 50)), ROCL_OK);
    ASSERT_EQ(rocl_bftoret(y), ROCL_OK);
    ASSERT_EQ(rocl_send(a_, b_, 2 * i + 1, y, 2 + static_cast<size_t>(i % 50)), ROCL_OK);
    rocl_gid_t from = 0;
    int tag = -1;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(a_, b_, 200000 + i, &y, &from, &tag, &len, 5000), ROCL_OK) << i;
    EXPECT_EQ(tag, 200000 + i);
    EXPECT_EQ(len, 9u);
    ASSERT_EQ(rocl_recv(a_, ROCL_ANY, ROCL_ANY, &x, &from, &tag, &len, 5000), ROCL_OK) << i;
    EXPECT_EQ(from, b_);
    EXPECT_EQ(tag, 100000 + i);
    EXPECT_EQ(len, 7u);
    EXPECT_EQ(static_cast<unsigned char *>(x)[0], static_cast<unsigned char>(~i));
  }
  echo.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(rocl_bftoret(x), ROCL_OK);
  EXPECT_EQ(rocl_send(a_, kUnknownGid, 5, x, 3), ROCL_EBADGID);
  ASSERT_EQ(rocl_bftoret(x), ROCL_OK);
  ASSERT_EQ(rocl_send(a_, c_, 6, x, 4), ROCL_OK);
  void *got = nullptr;
  int tag = -1;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(c_, a_, ROCL_ANY, &got, nullptr, &tag, &len, 2000), ROCL_OK);
  EXPECT_EQ(got, x);
  EXPECT_EQ(tag, 6);
  EXPECT_EQ(len, 4u);
  EXPECT_EQ(rocl_bfret(got), ROCL_OK);
  EXPECT_EQ(rocl_bfret(y), ROCL_OK);
  expect_pool_at_baseline();
}

// ---- copies and hand-offs ------------------------------------------------------------

TEST_F(Messaging, UserMemoryIsCopiedAtSend) {
  char src[32] = "original";
  ASSERT_EQ(rocl_send(a_, b_, 0, src, 9), ROCL_OK);
  std::strcpy(src, "modified");
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_NE(p, static_cast<void *>(src));
  EXPECT_STREQ(static_cast<char *>(p), "original");
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Messaging, BftoretBufferIsHandedOverWithoutCopy) {
  void *p = rocl_bfget(100);
  ASSERT_NE(p, nullptr);
  std::memcpy(p, "zero copy", 10);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  ASSERT_EQ(rocl_send(a_, b_, 4, p, 10), ROCL_OK);
  void *q = nullptr;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b_, a_, 4, &q, nullptr, nullptr, &len, 2000), ROCL_OK);
  EXPECT_EQ(q, p) << "in one process a bftoret buffer travels without a copy";
  EXPECT_EQ(len, 10u);
  EXPECT_STREQ(static_cast<char *>(q), "zero copy");
  EXPECT_EQ(rocl_bfstat(q), ROCL_BF_IDLE) << "the receiver's buffer starts fresh";
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Messaging, PlainPoolBufferStaysWithTheSender) {
  void *p = rocl_bfget(64);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "first");
  ASSERT_EQ(rocl_send(a_, b_, 1, p, 6), ROCL_OK);
  ASSERT_EQ(settled_bfstat(p), ROCL_BF_SENT);
  // The library no longer needs it: the sender may rewrite and re-send it.
  std::strcpy(static_cast<char *>(p), "again");
  ASSERT_EQ(rocl_send(a_, b_, 2, p, 6), ROCL_OK);
  ASSERT_EQ(settled_bfstat(p), ROCL_BF_SENT);
  std::strcpy(static_cast<char *>(p), "XXXXX");

  void *q1 = nullptr, *q2 = nullptr;
  ASSERT_EQ(rocl_recv(b_, a_, 1, &q1, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  ASSERT_EQ(rocl_recv(b_, a_, 2, &q2, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_NE(q1, p) << "the sender still owns its buffer: the receiver gets another";
  EXPECT_NE(q2, p);
  EXPECT_STREQ(static_cast<char *>(q1), "first");
  EXPECT_STREQ(static_cast<char *>(q2), "again");
  EXPECT_EQ(rocl_bfret(q1), ROCL_OK);
  EXPECT_EQ(rocl_bfret(q2), ROCL_OK);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "the sender returns its own buffer";
  expect_pool_at_baseline();
}

TEST_F(Messaging, ReceivedBufferCanBeSentOn) {
  void *p = rocl_bfget(32);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "relay");
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  ASSERT_EQ(rocl_send(a_, b_, 1, p, 6), ROCL_OK);

  void *q = nullptr;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b_, a_, 1, &q, nullptr, nullptr, &len, 2000), ROCL_OK);
  ASSERT_EQ(q, p);
  ASSERT_EQ(rocl_bftoret(q), ROCL_OK);
  ASSERT_EQ(rocl_send(b_, c_, 2, q, len), ROCL_OK);

  void *r = nullptr;
  rocl_gid_t origin = 0;
  int tag = -1;
  ASSERT_EQ(rocl_recv(c_, ROCL_ANY, ROCL_ANY, &r, &origin, &tag, &len, 2000), ROCL_OK);
  EXPECT_EQ(r, p);
  EXPECT_EQ(origin, b_);
  EXPECT_EQ(tag, 2);
  EXPECT_EQ(len, 6u);
  EXPECT_STREQ(static_cast<char *>(r), "relay");
  EXPECT_EQ(rocl_bfret(r), ROCL_OK);

  // A received buffer can also be sent without bftoret (then it is copied)
  // and returned afterwards.
  ASSERT_EQ(send_string(a_, b_, 3, "keep"), ROCL_OK);
  ASSERT_EQ(rocl_recv(b_, a_, 3, &q, nullptr, nullptr, &len, 2000), ROCL_OK);
  ASSERT_EQ(rocl_send(b_, c_, 4, q, len), ROCL_OK);
  EXPECT_EQ(settled_bfstat(q), ROCL_BF_SENT);
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
  EXPECT_EQ(recv_string(c_, b_, 4), "keep");
  expect_pool_at_baseline();
}

// ---- ordering and selection -------------------------------------------------------------

TEST_F(Messaging, PerPairOrderingAcrossThreads) {
  const int n = scaled(10000);
  std::thread sender_a([&] {
    for (int i = 0; i < n; ++i) {
      if ((i % 3) == 0) {
        void *p = rocl_bfget(sizeof i);
        if (p == nullptr) return;
        std::memcpy(p, &i, sizeof i);
        rocl_bftoret(p);
        if (rocl_send(a_, b_, i % 5, p, sizeof i) != ROCL_OK) return;
      } else if (rocl_send(a_, b_, i % 5, &i, sizeof i) != ROCL_OK) {
        return;
      }
    }
  });
  std::thread sender_c([&] {
    for (int i = 0; i < n; ++i) {
      if (rocl_send(c_, b_, 7, &i, sizeof i) != ROCL_OK) return;
    }
  });
  int next_a = 0, next_c = 0;
  for (int k = 0; k < 2 * n; ++k) {
    void *p = nullptr;
    rocl_gid_t origin = 0;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, &origin, nullptr, &len, 5000), ROCL_OK)
        << "after " << k << " messages";
    ASSERT_EQ(len, sizeof(int));
    int v = -1;
    std::memcpy(&v, p, sizeof v);
    ASSERT_EQ(rocl_bfret(p), ROCL_OK);
    if (origin == a_) {
      ASSERT_EQ(v, next_a) << "messages from a overtook each other";
      ++next_a;
    } else {
      ASSERT_EQ(origin, c_);
      ASSERT_EQ(v, next_c) << "messages from c overtook each other";
      ++next_c;
    }
  }
  sender_a.join();
  sender_c.join();
  EXPECT_EQ(next_a, n);
  EXPECT_EQ(next_c, n);
  EXPECT_TRUE(empty(b_));
  expect_pool_at_baseline();
}

TEST_F(Messaging, OrderingWithinOneTagSelection) {
  for (int i = 0; i < 100; ++i) ASSERT_EQ(rocl_send(a_, b_, i % 2, &i, sizeof i), ROCL_OK);
  // All odd-tag messages first, in order, then the even ones.
  for (int tag : {1, 0}) {
    for (int i = tag; i < 100; i += 2) {
      void *p = nullptr;
      ASSERT_EQ(rocl_recv(b_, a_, tag, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
      int v = -1;
      std::memcpy(&v, p, sizeof v);
      EXPECT_EQ(v, i);
      ASSERT_EQ(rocl_bfret(p), ROCL_OK);
    }
  }
  EXPECT_TRUE(empty(b_));
}

TEST_F(Messaging, WildcardsForOriginAndTag) {
  ASSERT_EQ(send_string(a_, c_, 1, "a1"), ROCL_OK);
  ASSERT_EQ(send_string(b_, c_, 2, "b2"), ROCL_OK);
  ASSERT_EQ(send_string(a_, c_, 3, "a3"), ROCL_OK);
  ASSERT_EQ(send_string(b_, c_, 1, "b1"), ROCL_OK);

  EXPECT_TRUE(empty(c_, a_, 2)) << "origin a with tag 2: no such message";
  EXPECT_TRUE(empty(c_, c_, ROCL_ANY)) << "nothing from c";
  EXPECT_TRUE(empty(c_, ROCL_ANY_GID, 9)) << "nothing with tag 9";

  rocl_gid_t o = 0;
  int t = -1;
  EXPECT_EQ(recv_string(c_, b_, ROCL_ANY, &o, &t), "b2") << "specific origin, any tag";
  EXPECT_EQ(o, b_);
  EXPECT_EQ(t, 2);
  EXPECT_EQ(recv_string(c_, ROCL_ANY_GID, 3, &o, &t), "a3") << "any origin, specific tag";
  EXPECT_EQ(o, a_);
  EXPECT_EQ(t, 3);
  EXPECT_EQ(recv_string(c_, b_, 1, &o, &t), "b1") << "specific origin and tag";
  EXPECT_EQ(recv_string(c_, ROCL_ANY_GID, ROCL_ANY, &o, &t), "a1") << "both wildcards";
  EXPECT_EQ(o, a_);
  EXPECT_EQ(t, 1);
  EXPECT_TRUE(empty(c_));
}

TEST_F(Messaging, RoclAnyConvertsToTheGidWildcard) {
  EXPECT_EQ(static_cast<rocl_gid_t>(ROCL_ANY), ROCL_ANY_GID);
  ASSERT_EQ(send_string(a_, b_, 5, "w"), ROCL_OK);
  void *p = nullptr;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Messaging, WildcardReceivesTheOldest) {
  ASSERT_EQ(send_string(c_, b_, 5, "first"), ROCL_OK);
  ASSERT_EQ(send_string(a_, b_, 6, "second"), ROCL_OK);
  ASSERT_EQ(send_string(c_, b_, 5, "third"), ROCL_OK);
  EXPECT_EQ(recv_string(b_), "first");
  EXPECT_EQ(recv_string(b_), "second");
  EXPECT_EQ(recv_string(b_), "third");
}

TEST_F(Messaging, SelectiveReceiveLeavesOthersQueued) {
  ASSERT_EQ(send_string(a_, b_, 1, "one"), ROCL_OK);
  ASSERT_EQ(send_string(a_, b_, 2, "two"), ROCL_OK);
  EXPECT_EQ(recv_string(b_, a_, 2), "two");
  int t = -1;
  EXPECT_EQ(recv_string(b_, ROCL_ANY_GID, ROCL_ANY, nullptr, &t), "one");
  EXPECT_EQ(t, 1);
  EXPECT_TRUE(empty(b_));
}

TEST_F(Messaging, LargestTagWorks) {
  ASSERT_EQ(send_string(a_, b_, ROCL_TAG_MAX, "max"), ROCL_OK);
  int t = 0;
  EXPECT_EQ(recv_string(b_, a_, ROCL_TAG_MAX, nullptr, &t), "max");
  EXPECT_EQ(t, ROCL_TAG_MAX);
  ASSERT_EQ(send_string(a_, b_, 0, "zero"), ROCL_OK);
  EXPECT_EQ(recv_string(b_, a_, 0), "zero");
}

// ---- timeouts ---------------------------------------------------------------------------------

TEST_F(Messaging, PollOnEmptyReturnsAtOnce) {
  void *p = reinterpret_cast<void *>(0x1);
  auto t0 = Clock::now();
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_ETIMEDOUT);
  EXPECT_LT(ms_since(t0), 100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_ETIMEDOUT);
  }
  EXPECT_LT(ms_since(t0), 500) << "100 polls should be quick";
}

TEST_F(Messaging, TimedReceiveWaitsAtLeastTheTimeout) {
  void *p = nullptr;
  auto t0 = Clock::now();
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 50), ROCL_ETIMEDOUT);
  EXPECT_GE(ms_since(t0), 50);
  // A message that does not match does not end the wait.
  ASSERT_EQ(send_string(a_, b_, 1, "other tag"), ROCL_OK);
  t0 = Clock::now();
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, 2, &p, nullptr, nullptr, nullptr, 50), ROCL_ETIMEDOUT);
  EXPECT_GE(ms_since(t0), 50);
  EXPECT_EQ(recv_string(b_, a_, 1), "other tag") << "a timed-out receive takes nothing";
}

TEST_F(Messaging, TimedReceiveReturnsWhenAMessageArrives) {
  std::thread sender([&] {
    sleep_ms(50);
    send_string(a_, b_, 1, "late");
  });
  void *p = nullptr;
  auto t0 = Clock::now();
  int rc = rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 5000);
  long long took = ms_since(t0);
  sender.join();
  ASSERT_EQ(rc, ROCL_OK);
  EXPECT_LT(took, 4000);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Messaging, BlockingReceiveWaitsForASend) {
  auto t0 = Clock::now();  // before the sender starts its 100 ms sleep
  std::thread sender([&] {
    sleep_ms(100);
    send_string(a_, b_, 8, "wake up");
  });
  void *p = nullptr;
  size_t len = 0;
  int rc = rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, &len, -1);
  long long took = ms_since(t0);
  sender.join();
  ASSERT_EQ(rc, ROCL_OK);
  EXPECT_GE(took, 95);
  EXPECT_EQ(std::string(static_cast<char *>(p), len), "wake up");
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

// ---- error paths ----------------------------------------------------------------------------

TEST_F(Messaging, UnknownDestinationKeepsBftoretBufferOwned) {
  void *p = rocl_bfget(50);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "mine");
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_send(a_, kUnknownGid, 0, p, 5), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid)) << rocl_last_error();
  // Still the sender's: readable, writable, returnable.
  EXPECT_NE(rocl_bfstat(p), ROCL_EBADBUF);
  EXPECT_STREQ(static_cast<char *>(p), "mine");
  std::memset(p, 0, 50);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Messaging, UnknownDestinationThenSendItElsewhere) {
  void *p = rocl_bfget(50);
  ASSERT_NE(p, nullptr);
  std::strcpy(static_cast<char *>(p), "retry");
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  ASSERT_EQ(rocl_send(a_, kUnknownGid, 0, p, 6), ROCL_EBADGID);
  // The failed call changed nothing; a send to a real resource works.
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  ASSERT_EQ(rocl_send(a_, b_, 0, p, 6), ROCL_OK) << rocl_last_error();
  void *q = nullptr;
  ASSERT_EQ(rocl_recv(b_, a_, 0, &q, nullptr, nullptr, nullptr, 2000), ROCL_OK);
  EXPECT_EQ(q, p);
  EXPECT_STREQ(static_cast<char *>(q), "retry");
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
}

TEST_F(Messaging, UnknownDestinationWithUserMemoryLeaksNothing) {
  char data[300] = "x";
  EXPECT_EQ(rocl_send(a_, kUnknownGid, 0, data, sizeof data), ROCL_EBADGID);
  EXPECT_EQ(rocl_send(a_, ROCL_NULL_GID, 0, data, sizeof data), ROCL_EBADGID);
  expect_pool_at_baseline();
}

TEST_F(Messaging, DeletedDestinationIsEBADGID) {
  rocl_gid_t d = must_register("msg", "doomed");
  ASSERT_EQ(rocl_delete(d), ROCL_OK);
  EXPECT_EQ(send_string(a_, d, 0, "too late"), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), d)) << rocl_last_error();
  expect_pool_at_baseline();
}

TEST_F(Messaging, UnknownOriginIsEBADGID) {
  EXPECT_EQ(send_string(kUnknownGid, b_, 0, "who"), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid)) << rocl_last_error();
  rocl_gid_t d = must_register("msg", "gone-origin");
  ASSERT_EQ(rocl_delete(d), ROCL_OK);
  EXPECT_EQ(send_string(d, b_, 0, "ghost"), ROCL_EBADGID);

  void *p = rocl_bfget(10);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_send(kUnknownGid, b_, 0, p, 10), ROCL_EBADGID);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "the buffer stays owned after a failed send";
  EXPECT_TRUE(empty(b_));
  expect_pool_at_baseline();
}

TEST_F(Messaging, NegativeTagIsEINVAL) {
  char data[4] = {0};
  for (int tag : {-1, -2, -1000, static_cast<int>(0x80000000u)}) {
    EXPECT_EQ(rocl_send(a_, b_, tag, data, sizeof data), ROCL_EINVAL) << tag;
    EXPECT_TRUE(icontains(rocl_last_error(), "tag")) << rocl_last_error();
  }
  void *p = rocl_bfget(4);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_send(a_, b_, -3, p, 4), ROCL_EINVAL);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  EXPECT_TRUE(empty(b_));
}

TEST_F(Messaging, NullDataWithLengthIsEINVAL) {
  EXPECT_EQ(rocl_send(a_, b_, 0, nullptr, 10), ROCL_EINVAL);
  EXPECT_TRUE(empty(b_));
}

TEST_F(Messaging, NullDataWithZeroLengthIsAnEmptyMessage) {
  ASSERT_EQ(rocl_send(a_, b_, 9, nullptr, 0), ROCL_OK) << rocl_last_error();
  void *p = nullptr;
  size_t len = 99;
  int tag = -1;
  ASSERT_EQ(rocl_recv(b_, a_, ROCL_ANY, &p, nullptr, &tag, &len, 2000), ROCL_OK);
  EXPECT_NE(p, nullptr) << "*ptr is a rocl buffer even for an empty message";
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(tag, 9);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Messaging, LengthBeyondBufferIsETOOBIG) {
  void *p = rocl_bfget(100);
  ASSERT_NE(p, nullptr);
  std::size_t size = rocl_bfsize(p);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_send(a_, b_, 0, p, size + 1), ROCL_ETOOBIG);
  EXPECT_STRNE(rocl_last_error(), "");
  EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "the buffer stays owned after ROCL_ETOOBIG";

  void *q = rocl_bfget(100);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(rocl_send(a_, b_, 0, q, rocl_bfsize(q) + 4096), ROCL_ETOOBIG) << "also without bftoret";
  EXPECT_EQ(rocl_send(a_, b_, 0, q, rocl_bfsize(q)), ROCL_OK) << "the full size is fine";
  EXPECT_EQ(settled_bfstat(q), ROCL_BF_SENT);
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
  void *r = nullptr;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, &r, nullptr, nullptr, &len, 2000), ROCL_OK);
  EXPECT_EQ(len, size);
  EXPECT_EQ(rocl_bfret(r), ROCL_OK);
  EXPECT_TRUE(empty(b_));
  expect_pool_at_baseline();
}

TEST_F(Messaging, ReceiveArgumentErrors) {
  void *p = nullptr;
  EXPECT_EQ(rocl_recv(kUnknownGid, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0),
            ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid)) << rocl_last_error();
  EXPECT_EQ(rocl_recv(kUnknownGid, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, -1),
            ROCL_EBADGID)
      << "a blocking receive on an unknown gid fails at once";
  EXPECT_EQ(rocl_recv(ROCL_NULL_GID, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0),
            ROCL_EBADGID);

  ASSERT_EQ(send_string(a_, b_, 0, "stays"), ROCL_OK);
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, ROCL_ANY, nullptr, nullptr, nullptr, nullptr, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY, -2, &p, nullptr, nullptr, nullptr, 0), ROCL_EINVAL);
  EXPECT_EQ(recv_string(b_), "stays") << "failed receives take nothing";

  rocl_gid_t d = must_register("msg", "deleted-recv");
  ASSERT_EQ(rocl_delete(d), ROCL_OK);
  EXPECT_EQ(rocl_recv(d, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0), ROCL_EBADGID);
}

// ---- deletion -----------------------------------------------------------------------------------

TEST_F(Messaging, DeleteWakesABlockedReceiver) {
  std::atomic<int> rc{1};
  std::thread receiver([&] {
    void *p = nullptr;
    rc = rocl_recv(b_, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, -1);
  });
  sleep_ms(100);
  auto t0 = Clock::now();
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  receiver.join();
  EXPECT_EQ(rc.load(), ROCL_EDELETED);
  EXPECT_LT(ms_since(t0), 2000);
  EXPECT_EQ(send_string(a_, b_, 0, "after"), ROCL_EBADGID);
}

TEST_F(Messaging, DeleteWakesATimedReceiver) {
  std::atomic<int> rc{1};
  std::atomic<long long> took{0};
  std::thread receiver([&] {
    void *p = nullptr;
    auto t0 = Clock::now();
    rc = rocl_recv(b_, a_, 3, &p, nullptr, nullptr, nullptr, 10000);
    took = ms_since(t0);
  });
  sleep_ms(100);
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  receiver.join();
  EXPECT_EQ(rc.load(), ROCL_EDELETED);
  EXPECT_LT(took.load(), 5000);
}

TEST_F(Messaging, DeleteWakesEveryBlockedReceiver) {
  const int n = 4;
  std::vector<int> rcs(n, 1);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      void *p = nullptr;
      rcs[static_cast<std::size_t>(i)] =
          rocl_recv(c_, ROCL_ANY, i, &p, nullptr, nullptr, nullptr, -1);
    });
  }
  sleep_ms(100);
  ASSERT_EQ(rocl_delete(c_), ROCL_OK);
  for (auto &t : ts) t.join();
  for (int i = 0; i < n; ++i) EXPECT_EQ(rcs[static_cast<std::size_t>(i)], ROCL_EDELETED) << i;
}

TEST_F(Messaging, DeleteFreesUndeliveredMessages) {
  for (int i = 0; i < 20; ++i) {
    if (i % 2 == 0) {
      void *p = rocl_bfget(static_cast<std::size_t>(1000 * i));
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
      ASSERT_EQ(rocl_send(a_, b_, i, p, static_cast<std::size_t>(1000 * i)), ROCL_OK);
    } else {
      std::vector<char> data(static_cast<std::size_t>(3000 * i), 'd');
      ASSERT_EQ(rocl_send(a_, b_, i, data.data(), data.size()), ROCL_OK);
    }
  }
  rocl_pool_stats_t queued = pool_stats();
  EXPECT_EQ(queued.in_use_buffers, base_.in_use_buffers + 20) << "queued messages hold buffers";
  ASSERT_EQ(rocl_delete(b_), ROCL_OK);
  expect_pool_at_baseline();
}

TEST(MessagingExit, ExitWakesABlockedReceiver) {
  ASSERT_GT(rocl_init(), 0);
  rocl_gid_t b = must_register("exit-wake");
  std::atomic<int> rc{1};
  std::thread receiver([&] {
    void *p = nullptr;
    rc = rocl_recv(b, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, -1);
  });
  sleep_ms(100);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
  receiver.join();
  EXPECT_EQ(rc.load(), ROCL_EDELETED);
}

// ---- sizes
// ------------------------------------------------------------------------------------------

// Up to 64 MiB (16 MiB under TSan, which makes streaming memory slow).
std::vector<std::size_t> message_sizes() {
  const std::size_t MiB = std::size_t{1} << 20;
  if (kTsan) {
    return {0,    1,    2,    7,     8,     63,        64,        65,  255,     256,
            4095, 4096, 4097, 65535, 65536, MiB - 192, MiB - 191, MiB, MiB + 1, 16 * MiB};
  }
  return {0,    1,    2,     7,     8,         63,        64,  65,      255,      256,     4095,
          4096, 4097, 65535, 65536, MiB - 192, MiB - 191, MiB, MiB + 1, 16 * MiB, 64 * MiB};
}

TEST_F(Messaging, SizesAsBftoretBuffers) {
  for (std::size_t n : message_sizes()) {
    void *p = rocl_bfget(n);
    ASSERT_NE(p, nullptr) << n << ": " << rocl_last_error();
    fill_pattern(p, n, n);
    std::uint64_t h = hash64(p, n);
    ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
    ASSERT_EQ(rocl_send(a_, b_, 1, p, n), ROCL_OK) << n << ": " << rocl_last_error();
    void *q = nullptr;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(b_, a_, 1, &q, nullptr, nullptr, &len, 5000), ROCL_OK) << n;
    EXPECT_EQ(q, p) << n;
    ASSERT_EQ(len, n);
    EXPECT_GE(rocl_bfsize(q), n);
    EXPECT_EQ(hash64(q, len), h) << n;
    ASSERT_EQ(rocl_bfret(q), ROCL_OK);
  }
  expect_pool_at_baseline();
}

TEST_F(Messaging, SizesAsUserMemory) {
  for (std::size_t n : message_sizes()) {
    std::vector<unsigned char> data(n);
    fill_pattern(data.data(), n, n + 1);
    std::uint64_t h = hash64(data.data(), n);
    ASSERT_EQ(rocl_send(a_, b_, 2, data.data(), n), ROCL_OK) << n << ": " << rocl_last_error();
    if (n != 0) std::memset(data.data(), 0, n);  // the copy was taken at send
    void *q = nullptr;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(b_, a_, 2, &q, nullptr, nullptr, &len, 5000), ROCL_OK) << n;
    ASSERT_EQ(len, n);
    EXPECT_GE(rocl_bfsize(q), n);
    EXPECT_EQ(hash64(q, len), h) << n;
    ASSERT_EQ(rocl_bfret(q), ROCL_OK);
  }
  expect_pool_at_baseline();
}

TEST_F(Messaging, SizesAsPlainPoolBuffers) {
  for (std::size_t n : message_sizes()) {
    if (n > (std::size_t{16} << 20)) continue;
    void *p = rocl_bfget(n);
    ASSERT_NE(p, nullptr) << n;
    fill_pattern(p, n, n + 2);
    std::uint64_t h = hash64(p, n);
    ASSERT_EQ(rocl_send(a_, b_, 3, p, n), ROCL_OK) << n;
    ASSERT_EQ(settled_bfstat(p), ROCL_BF_SENT) << n;
    std::memset(p, 0xee, n);
    ASSERT_EQ(rocl_bfret(p), ROCL_OK);
    void *q = nullptr;
    size_t len = 0;
    ASSERT_EQ(rocl_recv(b_, a_, 3, &q, nullptr, nullptr, &len, 5000), ROCL_OK) << n;
    ASSERT_EQ(len, n);
    EXPECT_EQ(hash64(q, len), h) << n;
    ASSERT_EQ(rocl_bfret(q), ROCL_OK);
  }
  expect_pool_at_baseline();
}

}  // namespace
