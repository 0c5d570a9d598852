// pool_cap_test.cpp - the buffer pool cap (ROCL_POOL_MAX). Its own program:
// options are read when the context is created, so the environment is set
// before rocl_init and nothing else in this process sees it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kCap = 64 * kMiB;
// A length that fills exactly one 1 MiB block.
constexpr std::size_t kLen = kMiB - ROCL_BUFFER_OVERHEAD;

class PoolCap : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("ROCL_POOL_MAX", "64M", 1), 0);
    std::int64_t g = rocl_init();
    ASSERT_GT(g, 0) << rocl_last_error();
  }
  void TearDown() override {
    EXPECT_EQ(rocl_exit(), ROCL_OK);
    unsetenv("ROCL_POOL_MAX");
  }
};

TEST_F(PoolCap, CapIsReported) {
  rocl_pool_stats_t s = pool_stats();
  EXPECT_EQ(s.cap_bytes, kCap);
  EXPECT_LE(s.reserved_bytes, s.cap_bytes);
}

TEST_F(PoolCap, BufferLargerThanCapIsNull) {
  void *p = rocl_bfget(100 * kMiB);
  std::string why = rocl_last_error();
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(why, "") << "a NULL from rocl_bfget comes with a reason";
  // The pool still works.
  void *q = rocl_bfget(kLen);
  ASSERT_NE(q, nullptr) << rocl_last_error();
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
}

TEST_F(PoolCap, ExhaustionThenRecovery) {
  rocl_pool_stats_t base = pool_stats();
  std::vector<void *> held;
  std::string why;
  for (int guard = 0; guard < 1000; ++guard) {
    void *p = rocl_bfget(kLen);
    if (p == nullptr) {
      why = rocl_last_error();
      break;
    }
    stamp(p, kLen, held.size());
    held.push_back(p);
  }
  ASSERT_LT(held.size(), 1000u) << "rocl_bfget never failed under a 64 MiB cap";
  EXPECT_NE(why, "") << "NULL comes with ROCL_ENOMEM explained in rocl_last_error()";
  std::printf("[   info   ] %zu buffers of 1 MiB under a 64 MiB cap; last error: '%s'\n",
              held.size(), why.c_str());
  EXPECT_LE(held.size() * kMiB, kCap) << "the cap was exceeded";
  EXPECT_GE(held.size(), 56u) << "the pool failed well before its cap";

  rocl_pool_stats_t s = pool_stats();
  EXPECT_EQ(s.in_use_buffers, base.in_use_buffers + held.size());
  EXPECT_LE(s.in_use_bytes, s.cap_bytes);
  EXPECT_LE(s.reserved_bytes, s.cap_bytes);

  // Still failing while nothing is returned.
  EXPECT_EQ(rocl_bfget(kLen), nullptr);

  // Every buffer obtained is still valid: read, rewrite, read again.
  for (std::size_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(stamp_ok(held[i], kLen, i)) << "buffer " << i;
    EXPECT_EQ(rocl_bfsize(held[i]), kLen);
    EXPECT_EQ(rocl_bfstat(held[i]), ROCL_BF_IDLE);
  }
  for (std::size_t i = 0; i < held.size(); ++i) stamp(held[i], kLen, 1000 + i);
  for (std::size_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(stamp_ok(held[i], kLen, 1000 + i)) << "buffer " << i;
  }

  // Returning some makes room again.
  const std::size_t give_back = 8;
  for (std::size_t i = 0; i < give_back; ++i) {
    ASSERT_EQ(rocl_bfret(held.back()), ROCL_OK);
    held.pop_back();
  }
  for (std::size_t i = 0; i < give_back; ++i) {
    void *p = rocl_bfget(kLen);
    ASSERT_NE(p, nullptr) << "after returning " << give_back << " buffers, get #" << i
                          << " failed: " << rocl_last_error();
    std::memset(p, 0x5a, kLen);
    held.push_back(p);
  }
  for (void *p : held) ASSERT_EQ(rocl_bfret(p), ROCL_OK);
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
}

// With the pool full, a send that must copy fails with ROCL_ENOMEM and
// changes nothing; a bftoret buffer needs no pool memory and still goes.
TEST_F(PoolCap, SendWithFullPool) {
  std::int64_t ga = register_resource({{"type", "cap-a"}});
  std::int64_t gb = register_resource({{"type", "cap-b"}});
  ASSERT_GT(ga, 0);
  ASSERT_GT(gb, 0);
  rocl_gid_t a = static_cast<rocl_gid_t>(ga), b = static_cast<rocl_gid_t>(gb);

  void *zc = rocl_bfget(100);  // kept for the zero-copy send below
  ASSERT_NE(zc, nullptr);
  std::memcpy(zc, "zero-copy", 10);

  // Fill the pool: big blocks first, then small ones.
  std::vector<void *> held;
  for (std::size_t len : {kLen, std::size_t{64 * 1024}, std::size_t{4096}, std::size_t{0}}) {
    for (int guard = 0; guard < 100000; ++guard) {
      void *p = rocl_bfget(len);
      if (p == nullptr) break;
      held.push_back(p);
    }
  }
  ASSERT_EQ(rocl_bfget(0), nullptr) << "the pool should be full now";

  char user[100] = "copied";
  EXPECT_EQ(rocl_send(a, b, 1, user, sizeof user), ROCL_ENOMEM);
  EXPECT_STRNE(rocl_last_error(), "");
  void *got = nullptr;
  EXPECT_EQ(rocl_recv(b, ROCL_ANY, ROCL_ANY, &got, nullptr, nullptr, nullptr, 0), ROCL_ETIMEDOUT)
      << "a failed send queues nothing";

  ASSERT_EQ(rocl_bftoret(zc), ROCL_OK);
  ASSERT_EQ(rocl_send(a, b, 2, zc, 10), ROCL_OK)
      << "a bftoret hand-off needs no pool memory: " << rocl_last_error();
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b, a, 2, &got, nullptr, nullptr, &len, 2000), ROCL_OK);
  EXPECT_EQ(got, zc);
  EXPECT_EQ(len, 10u);
  EXPECT_STREQ(static_cast<char *>(got), "zero-copy");
  EXPECT_EQ(rocl_bfret(got), ROCL_OK);

  for (void *p : held) ASSERT_EQ(rocl_bfret(p), ROCL_OK);
  // With room again, the copying send works.
  EXPECT_EQ(rocl_send(a, b, 1, user, sizeof user), ROCL_OK) << rocl_last_error();
  ASSERT_EQ(rocl_recv(b, a, 1, &got, nullptr, nullptr, &len, 2000), ROCL_OK);
  EXPECT_STREQ(static_cast<char *>(got), "copied");
  EXPECT_EQ(rocl_bfret(got), ROCL_OK);
}

}  // namespace
