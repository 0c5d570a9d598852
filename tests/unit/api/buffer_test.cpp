// buffer_test.cpp - registered buffers: rocl_bfget/bfret/bftoret/bfstat/
// bfsize and rocl_pool_stats.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

using Buffers = ContextTest;

// The usable size the contract promises for len: the smallest power-of-two
// block 2^y >= len + ROCL_BUFFER_OVERHEAD, at least 256 bytes, minus the
// overhead.
std::size_t expected_size(std::size_t len) {
  std::size_t block = 256;
  while (block < len + ROCL_BUFFER_OVERHEAD) block <<= 1;
  return block - ROCL_BUFFER_OVERHEAD;
}

TEST_F(Buffers, GetZeroBytes) {
  void *p = rocl_bfget(0);
  ASSERT_NE(p, nullptr) << rocl_last_error();
  EXPECT_EQ(rocl_bfsize(p), expected_size(0));
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_IDLE);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Buffers, SizesAroundPowerOfTwoBoundaries) {
  const std::size_t o = ROCL_BUFFER_OVERHEAD;
  std::vector<std::size_t> lens = {0, 1, 63, 64, 65, 100, 255, 256, 257};
  for (std::size_t y = 9; y <= 24; ++y) {
    std::size_t block = std::size_t{1} << y;
    lens.push_back(block - o - 1);
    lens.push_back(block - o);
    lens.push_back(block - o + 1);
    lens.push_back(block);
  }
  for (std::size_t len : lens) {
    void *p = rocl_bfget(len);
    ASSERT_NE(p, nullptr) << "len " << len << ": " << rocl_last_error();
    std::size_t size = rocl_bfsize(p);
    EXPECT_GE(size, len) << "len " << len;
    EXPECT_EQ(size, expected_size(len)) << "len " << len;
    std::memset(p, 0xa5, size);  // the whole usable size is writable
    EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "len " << len;
  }
}

TEST_F(Buffers, DistinctLiveBuffersDoNotOverlap) {
  std::vector<void *> ps;
  for (int i = 0; i < 64; ++i) {
    std::size_t len = static_cast<std::size_t>(i * 37);
    void *p = rocl_bfget(len);
    ASSERT_NE(p, nullptr);
    fill_pattern(p, rocl_bfsize(p), static_cast<std::uint64_t>(i));
    ps.push_back(p);
  }
  for (int i = 0; i < 64; ++i) {
    void *p = ps[static_cast<std::size_t>(i)];
    std::size_t size = rocl_bfsize(p);
    EXPECT_EQ(hash64(p, size), pattern_hash(size, static_cast<std::uint64_t>(i))) << i;
    EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  }
}

TEST_F(Buffers, ReturnOfNonBuffersIsEBADBUF) {
  char stack[512];
  void *heap = std::malloc(512);
  ASSERT_NE(heap, nullptr);
  void *p = rocl_bfget(1000);
  ASSERT_NE(p, nullptr);
  char *inside = static_cast<char *>(p);

  for (void *bad : {static_cast<void *>(stack), heap, static_cast<void *>(inside + 1),
                    static_cast<void *>(inside + 64), static_cast<void *>(nullptr)}) {
    EXPECT_EQ(rocl_bfret(bad), ROCL_EBADBUF) << bad;
    EXPECT_STRNE(rocl_last_error(), "");
    EXPECT_EQ(rocl_bfstat(bad), ROCL_EBADBUF) << bad;
    EXPECT_EQ(rocl_bftoret(bad), ROCL_EBADBUF) << bad;
    EXPECT_EQ(rocl_bfsize(bad), 0u) << bad;
  }
  // The real buffer is untouched by all this.
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_IDLE);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  std::free(heap);
}

TEST_F(Buffers, DoubleReturnIsEBADBUF) {
  void *p = rocl_bfget(100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
  EXPECT_EQ(rocl_bfret(p), ROCL_EBADBUF);
  EXPECT_STRNE(rocl_last_error(), "");
  EXPECT_EQ(rocl_bfstat(p), ROCL_EBADBUF) << "a returned buffer is not live";
  EXPECT_EQ(rocl_bfsize(p), 0u) << "a returned buffer is not a buffer";
}

TEST_F(Buffers, BfstatIdleThenSent) {
  rocl_gid_t a = must_register("bf-a");
  rocl_gid_t b = must_register("bf-b");
  void *p = rocl_bfget(128);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_IDLE);
  std::memcpy(p, "payload", 8);
  ASSERT_EQ(rocl_send(a, b, 1, p, 8), ROCL_OK);
  int st = rocl_bfstat(p);
  EXPECT_TRUE(st == ROCL_BF_PENDING || st == ROCL_BF_SENT) << st;
  EXPECT_EQ(settled_bfstat(p), ROCL_BF_SENT);
  EXPECT_EQ(std::memcmp(p, "payload", 8), 0) << "the sender's buffer is unchanged";
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);

  void *q = nullptr;
  size_t len = 0;
  ASSERT_EQ(rocl_recv(b, a, 1, &q, nullptr, nullptr, &len, 2000), ROCL_OK);
  EXPECT_EQ(len, 8u);
  EXPECT_EQ(std::memcmp(q, "payload", 8), 0);
  EXPECT_EQ(rocl_bfstat(q), ROCL_BF_IDLE) << "a received buffer was never sent by its owner";
  EXPECT_EQ(rocl_bfret(q), ROCL_OK);
}

TEST_F(Buffers, FailedSendLeavesBufferUsable) {
  rocl_gid_t a = must_register("bf-fail");
  void *p = rocl_bfget(64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(rocl_send(a, kUnknownGid, 0, p, 64), ROCL_EBADGID);
  int st = rocl_bfstat(p);
  EXPECT_NE(st, ROCL_BF_PENDING);
  EXPECT_NE(st, ROCL_EBADBUF);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);
}

TEST_F(Buffers, BftoretThenBfretIsAllowed) {
  rocl_pool_stats_t base = pool_stats();
  void *p = rocl_bfget(64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(rocl_bftoret(p), ROCL_OK);
  EXPECT_EQ(rocl_bfstat(p), ROCL_BF_IDLE);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK) << "the caller owns the buffer until a send consumes it";
  rocl_pool_stats_t now = pool_stats();
  EXPECT_EQ(now.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(now.in_use_bytes, base.in_use_bytes);
}

TEST_F(Buffers, PoolStatsCountBuffersInUse) {
  rocl_pool_stats_t base = pool_stats();
  EXPECT_LE(base.reserved_bytes, base.cap_bytes);
  EXPECT_LE(base.in_use_bytes, base.reserved_bytes);
  EXPECT_GT(base.cap_bytes, 0u);

  std::vector<void *> ps;
  std::size_t asked = 0;
  for (int i = 0; i < 10; ++i) {
    std::size_t len = 100u << i;
    void *p = rocl_bfget(len);
    ASSERT_NE(p, nullptr);
    ps.push_back(p);
    asked += rocl_bfsize(p) + ROCL_BUFFER_OVERHEAD;
    rocl_pool_stats_t s = pool_stats();
    EXPECT_EQ(s.in_use_buffers, base.in_use_buffers + ps.size());
    EXPECT_LE(s.in_use_bytes, s.reserved_bytes);
    EXPECT_LE(s.reserved_bytes, s.cap_bytes);
  }
  rocl_pool_stats_t full = pool_stats();
  EXPECT_EQ(full.in_use_bytes, base.in_use_bytes + asked)
      << "each buffer counts its whole power-of-two block";

  for (std::size_t i = 0; i < ps.size(); ++i) {
    ASSERT_EQ(rocl_bfret(ps[i]), ROCL_OK);
    rocl_pool_stats_t s = pool_stats();
    EXPECT_EQ(s.in_use_buffers, base.in_use_buffers + ps.size() - i - 1);
  }
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
  EXPECT_EQ(end.cap_bytes, base.cap_bytes);
}

TEST_F(Buffers, PoolStatsNullIsEINVAL) {
  EXPECT_EQ(rocl_pool_stats(nullptr), ROCL_EINVAL);
}

TEST_F(Buffers, GetInOneThreadReturnInAnother) {
  rocl_pool_stats_t base = pool_stats();
  const int n = scaled(2000);
  std::vector<void *> ps(static_cast<std::size_t>(n));
  std::thread producer([&] {
    for (int i = 0; i < n; ++i) {
      ps[static_cast<std::size_t>(i)] = rocl_bfget(static_cast<std::size_t>(i % 3000));
      if (ps[static_cast<std::size_t>(i)] != nullptr) {
        std::memset(ps[static_cast<std::size_t>(i)], i & 0xff, static_cast<std::size_t>(i % 3000));
      }
    }
  });
  producer.join();
  int bad = 0;
  std::thread consumer([&] {
    for (int i = 0; i < n; ++i) {
      if (rocl_bfret(ps[static_cast<std::size_t>(i)]) != ROCL_OK) ++bad;
    }
  });
  consumer.join();
  EXPECT_EQ(bad, 0);
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
}

TEST_F(Buffers, ConcurrentGetAndReturn) {
  rocl_pool_stats_t base = pool_stats();
  const int threads = 4, rounds = scaled(3000);
  std::vector<int> errors(threads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::vector<std::pair<void *, std::size_t>> held;
      auto give_back = [&](std::pair<void *, std::size_t> h) {
        const auto *c = static_cast<const unsigned char *>(h.first);
        for (std::size_t k = 0; k < h.second; ++k) {
          if (c[k] != static_cast<unsigned char>(t)) {
            ++errors[static_cast<std::size_t>(t)];  // another thread wrote into it
            break;
          }
        }
        if (rocl_bfret(h.first) != ROCL_OK) ++errors[static_cast<std::size_t>(t)];
      };
      for (int i = 0; i < rounds; ++i) {
        std::size_t len = static_cast<std::size_t>((i * 131 + t * 17) % 5000);
        void *p = rocl_bfget(len);
        if (p == nullptr) {
          ++errors[static_cast<std::size_t>(t)];
          continue;
        }
        std::memset(p, t, len);
        held.emplace_back(p, len);
        if (held.size() > 8) {
          give_back(held.front());
          held.erase(held.begin());
        }
      }
      for (auto &h : held) give_back(h);
    });
  }
  for (auto &t : ts) t.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(errors[static_cast<std::size_t>(t)], 0) << t;
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
}

}  // namespace
