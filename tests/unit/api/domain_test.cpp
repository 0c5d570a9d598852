// domain_test.cpp - the x forms of rocl.h: domains keep messages apart,
// flags travel without taking part in matching, receives copy into user
// memory (and say when a message was cut), probes look without taking.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

class Domains : public ContextTest {
 protected:
  void SetUp() override {
    ContextTest::SetUp();
    if (HasFatalFailure()) return;
    a_ = must_register("dom", "a");
    b_ = must_register("dom", "b");
    base_ = pool_stats();
  }
  int send(int tag, uint32_t domain, unsigned flags, const std::string &s) {
    return rocl_sendx(a_, b_, tag, domain, flags, const_cast<char *>(s.data()), s.size());
  }
  // Receives into a string of `cap` bytes; the status in *st.
  std::string recv(int tag, uint32_t domain, size_t cap, rocl_status_t *st, int timeout = 2000) {
    std::string out(cap, '\0');
    const int rc = rocl_recvx(b_, ROCL_ANY_GID, tag, domain, out.data(), cap, st, timeout);
    if (rc != ROCL_OK) return std::string("<") + rocl_strerror(rc) + ">";
    out.resize(std::min(cap, st->len));
    return out;
  }
  void expect_pool_at_baseline() { EXPECT_EQ(pool_stats().in_use_buffers, base_.in_use_buffers); }

  rocl_gid_t a_ = ROCL_NULL_GID, b_ = ROCL_NULL_GID;
  rocl_pool_stats_t base_{};
};

TEST_F(Domains, AMessageIsReceivedOnlyInItsDomain) {
  ASSERT_EQ(send(7, 5, 0, "in five"), ROCL_OK);
  ASSERT_EQ(send(7, 0, 0, "in zero"), ROCL_OK);
  rocl_status_t st{};
  // A wildcard receive in domain 3 sees neither.
  EXPECT_EQ(rocl_recvx(b_, ROCL_ANY_GID, ROCL_ANY_TAG, 3, nullptr, 0, &st, 0), ROCL_ETIMEDOUT);
  EXPECT_EQ(recv(ROCL_ANY_TAG, 0, 64, &st), "in zero");  // the later one, but in domain 0
  EXPECT_EQ(recv(7, 5, 64, &st), "in five");
  EXPECT_EQ(st.origin, a_);
  EXPECT_EQ(st.tag, 7);
  expect_pool_at_baseline();
}

TEST_F(Domains, RoclRecvIsDomainZero) {
  ASSERT_EQ(send(1, 9, 0, "nine"), ROCL_OK);
  void *p = nullptr;
  EXPECT_EQ(rocl_recv(b_, ROCL_ANY_GID, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, 0),
            ROCL_ETIMEDOUT);
  ASSERT_EQ(rocl_send(a_, b_, 1, const_cast<char *>("zero"), 4), ROCL_OK);
  rocl_status_t st{};
  EXPECT_EQ(recv(1, 0, 16, &st), "zero");
  EXPECT_EQ(recv(1, 9, 16, &st), "nine");
}

TEST_F(Domains, FlagsTravelButDoNotMatch) {
  ASSERT_EQ(send(3, 2, 0x81, "first"), ROCL_OK);
  ASSERT_EQ(send(3, 2, 0, "second"), ROCL_OK);
  ASSERT_EQ(send(3, 2, 0x7f, "third"), ROCL_OK);
  rocl_status_t st{};
  EXPECT_EQ(recv(3, 2, 16, &st), "first");  // arrival order whatever the flags
  EXPECT_EQ(st.flags, 0x81u);
  EXPECT_EQ(recv(3, 2, 16, &st), "second");
  EXPECT_EQ(st.flags, 0u);
  EXPECT_EQ(recv(ROCL_ANY_TAG, 2, 16, &st), "third");
  EXPECT_EQ(st.flags, 0x7fu);
}

TEST_F(Domains, OutOfRangeDomainOrFlagsAreRefused) {
  EXPECT_EQ(send(1, ROCL_DOMAIN_MAX + 1, 0, "x"), ROCL_EINVAL);
  EXPECT_NE(std::string(rocl_last_error()).find("domain"), std::string::npos);
  EXPECT_EQ(send(1, 0, ROCL_FLAGS_MAX + 1, "x"), ROCL_EINVAL);
  EXPECT_NE(std::string(rocl_last_error()).find("flags"), std::string::npos);
  rocl_status_t st{};
  EXPECT_EQ(rocl_recvx(b_, ROCL_ANY_GID, 1, ROCL_DOMAIN_MAX + 1, nullptr, 0, &st, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_recvx(b_, ROCL_ANY_GID, 1, 0, nullptr, 0, nullptr, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, 1, 0, nullptr, 0), ROCL_EINVAL);
  expect_pool_at_baseline();
}

TEST_F(Domains, ReceiveIntoMemoryCopiesAndCutsToFit) {
  std::vector<char> big(100000);
  fill_pattern(big.data(), big.size(), 11);
  ASSERT_EQ(rocl_sendx(a_, b_, 1, 0, 0, big.data(), big.size()), ROCL_OK);
  ASSERT_EQ(send(1, 0, 0, "0123456789"), ROCL_OK);
  std::vector<char> got(big.size());
  rocl_status_t st{};
  ASSERT_EQ(rocl_recvx(b_, a_, 1, 0, got.data(), got.size(), &st, 2000), ROCL_OK);
  EXPECT_EQ(st.len, big.size());
  EXPECT_EQ(st.ptr, got.data());
  EXPECT_EQ(std::memcmp(got.data(), big.data(), big.size()), 0);
  // Cut: the first 4 bytes arrive, len tells the full length.
  EXPECT_EQ(recv(1, 0, 4, &st), "0123");
  EXPECT_EQ(st.len, 10u);
  expect_pool_at_baseline();  // the received blocks went back to the pool
}

TEST_F(Domains, ReceiveWithoutMemoryHandsTheBufferOver) {
  ASSERT_EQ(send(1, 4, 0, "hand"), ROCL_OK);
  rocl_status_t st{};
  ASSERT_EQ(rocl_recvx(b_, ROCL_ANY_GID, 1, 4, nullptr, 0, &st, 2000), ROCL_OK);
  ASSERT_NE(st.ptr, nullptr);
  EXPECT_EQ(std::string(static_cast<char *>(st.ptr), st.len), "hand");
  EXPECT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  expect_pool_at_baseline();
}

TEST_F(Domains, ImmediateReceiveIntoMemoryInItsDomain) {
  char into[8] = {};
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecvx(b_, a_, 2, 6, into, sizeof into, &req), ROCL_OK);
  ASSERT_EQ(send(2, 0, 0, "wrong domain"), ROCL_OK);
  int done = 1;
  rocl_status_t st{};
  ASSERT_EQ(rocl_test(&req, &done, &st), ROCL_OK);
  EXPECT_EQ(done, 0);
  rocl_request_t sreq = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_isendx(a_, b_, 2, 6, 5, const_cast<char *>("immediate"), 9, &sreq), ROCL_OK);
  ASSERT_EQ(rocl_wait(&sreq, nullptr, 2000), ROCL_OK);
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  EXPECT_EQ(std::string(into, sizeof into), "immediat");
  EXPECT_EQ(st.len, 9u);
  EXPECT_EQ(st.flags, 5u);
  EXPECT_EQ(recv(2, 0, 32, &st), "wrong domain");
  expect_pool_at_baseline();
}

TEST_F(Domains, ProbeLooksWithoutTaking) {
  rocl_status_t st{};
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, ROCL_ANY_TAG, 1, &st, 0), ROCL_ETIMEDOUT);
  ASSERT_EQ(send(4, 1, 3, "probed"), ROCL_OK);
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, ROCL_ANY_TAG, 0, &st, 0), ROCL_ETIMEDOUT);  // domain 0
  ASSERT_EQ(rocl_probe(b_, a_, 4, 1, &st, 0), ROCL_OK);
  EXPECT_EQ(st.origin, a_);
  EXPECT_EQ(st.tag, 4);
  EXPECT_EQ(st.len, 6u);
  EXPECT_EQ(st.flags, 3u);
  EXPECT_EQ(st.ptr, nullptr);
  EXPECT_EQ(recv(4, 1, 16, &st), "probed");  // still there
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, ROCL_ANY_TAG, 1, &st, 0), ROCL_ETIMEDOUT);
}

TEST_F(Domains, BlockingProbeWaitsForAnArrivalAndTimesOut) {
  rocl_status_t st{};
  const auto t0 = Clock::now();
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, 9, 0, &st, 50), ROCL_ETIMEDOUT);
  EXPECT_GE(ms_since(t0), 45);
  std::thread later([this] {
    sleep_ms(30);
    EXPECT_EQ(send(9, 0, 0, "late"), ROCL_OK);
  });
  ASSERT_EQ(rocl_probe(b_, ROCL_ANY_GID, 9, 0, &st, -1), ROCL_OK);
  later.join();
  EXPECT_EQ(st.len, 4u);
  EXPECT_EQ(recv(9, 0, 16, &st), "late");
}

TEST_F(Domains, ProbeOfADeletedResourceFails) {
  std::thread deleter([this] {
    sleep_ms(30);
    EXPECT_EQ(rocl_delete(b_), ROCL_OK);
  });
  rocl_status_t st{};
  EXPECT_EQ(rocl_probe(b_, ROCL_ANY_GID, ROCL_ANY_TAG, 0, &st, 5000), ROCL_EDELETED);
  deleter.join();
}

// ROCL_FLAG_ACK: one empty acknowledgement per matched message, from the
// receiver, with the message's tag, in domain | ROCL_ACK_DOMAIN.
TEST_F(Domains, AMatchedMessageWithTheAckFlagIsAcknowledgedOnce) {
  rocl_status_t st{};
  ASSERT_EQ(send(5, 3, ROCL_FLAG_ACK, "sync"), ROCL_OK);  // queued: nobody receives yet
  EXPECT_EQ(rocl_probe(a_, b_, 5, 3 | ROCL_ACK_DOMAIN, &st, 0), ROCL_ETIMEDOUT);
  EXPECT_EQ(recv(5, 3, 16, &st), "sync");
  ASSERT_EQ(rocl_recvx(a_, b_, 5, 3 | ROCL_ACK_DOMAIN, nullptr, 0, &st, 2000), ROCL_OK)
      << rocl_last_error();
  EXPECT_EQ(st.len, 0u);
  EXPECT_EQ(st.origin, b_);
  ASSERT_EQ(rocl_bfret(st.ptr), ROCL_OK);
  // A receive posted first, matched by the send itself.
  char into[8];
  rocl_request_t req = ROCL_REQUEST_NULL;
  ASSERT_EQ(rocl_irecvx(b_, a_, 6, 3, into, sizeof into, &req), ROCL_OK);
  ASSERT_EQ(send(6, 3, ROCL_FLAG_ACK, "posted"), ROCL_OK);
  ASSERT_EQ(rocl_recvx(a_, b_, 6, 3 | ROCL_ACK_DOMAIN, into, 0, &st, 2000), ROCL_OK);
  ASSERT_EQ(rocl_wait(&req, &st, 2000), ROCL_OK);
  // Exactly one each, and none for a message without the flag.
  ASSERT_EQ(send(7, 3, 0, "plain"), ROCL_OK);
  EXPECT_EQ(recv(7, 3, 16, &st), "plain");
  EXPECT_EQ(rocl_probe(a_, ROCL_ANY_GID, ROCL_ANY_TAG, 3 | ROCL_ACK_DOMAIN, &st, 20),
            ROCL_ETIMEDOUT);
  expect_pool_at_baseline();
}

}  // namespace
