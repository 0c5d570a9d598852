// buffer_pool_test.cpp - the registered buffer pool: block rules, lookup,
// ownership transitions, the cap, coalescing, thread caches and many threads.
#include "buffer/buffer_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = kKiB * kKiB;

PoolConfig config(std::size_t cap, std::size_t thread_cache = std::size_t{1} << 20) {
  PoolConfig c;
  c.cap_bytes = cap;
  c.thread_cache_bytes = thread_cache;
  return c;
}

std::size_t block_size(const BlockHeader *b) {
  return std::size_t{1} << b->order;
}
std::uintptr_t addr(const void *p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// A small rendezvous for two threads (std::latch is single use).
class Gate {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// ---- block size rule ------------------------------------------------------------

TEST(OrderFor, PaperRuleBoundaries) {
  EXPECT_EQ(BufferPool::order_for(0), kMinBlockOrder);
  EXPECT_EQ(BufferPool::order_for(1), kMinBlockOrder);
  EXPECT_EQ(BufferPool::order_for(64), 8u);  // 64 + 192 == 256 exactly
  EXPECT_EQ(BufferPool::order_for(65), 9u);
  for (unsigned y = 9; y < 63; ++y) {
    const std::size_t exact = (std::size_t{1} << y) - kControlBytes;  // len + 192 == 2^y
    EXPECT_EQ(BufferPool::order_for(exact), y) << "y=" << y;
    EXPECT_EQ(BufferPool::order_for(exact + 1), y + 1) << "y=" << y;
    // 2^(y-1) < len + 192: the smallest len of class y.
    const std::size_t smallest = (std::size_t{1} << (y - 1)) - kControlBytes + 1;
    EXPECT_EQ(BufferPool::order_for(smallest), y) << "y=" << y;
  }
  EXPECT_EQ(BufferPool::order_for(SIZE_MAX), 64u);
  EXPECT_EQ(BufferPool::order_for(SIZE_MAX - kControlBytes), 64u);
}

// ---- allocation ----------------------------------------------------------------------

TEST(BufferPool, BlocksAreAlignedMarkedAndBigEnough) {
  BufferPool pool(config(64 * kMiB));
  const std::size_t lens[] = {
      0,         1,    64,      65, 1000, 4000, 4096, kKiB * 60, 64 * kKiB - kControlBytes,
      64 * kKiB, kMiB, 3 * kMiB};
  std::vector<BlockHeader *> blocks;
  for (std::size_t len : lens) {
    BlockHeader *b = pool.allocate(len);
    ASSERT_NE(b, nullptr) << "len " << len << ": " << last_error();
    EXPECT_EQ(b->order, BufferPool::order_for(len));
    EXPECT_EQ(addr(b) % block_size(b), 0u) << "len " << len;
    EXPECT_EQ(b->magic, kBlockMagic ^ addr(b));
    EXPECT_GE(payload_capacity(b), len);
    EXPECT_LT(block_size(b) / 2, len + kControlBytes);
    EXPECT_EQ(b->state.load(), BlockState::kUser);
    EXPECT_EQ(b->send_status.load(), SendStatus::kIdle);
    EXPECT_FALSE(b->return_after_send);
    EXPECT_TRUE(pool.contains(b));
    EXPECT_TRUE(pool.contains(reinterpret_cast<std::byte *>(b) + block_size(b) - 1));
    std::memset(payload_of(b), 0xab, payload_capacity(b));
    std::memset(owner_area_of(b), 0xcd, kOwnerAreaBytes);
    blocks.push_back(b);
  }
  // No two blocks overlap.
  std::sort(blocks.begin(), blocks.end());
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_LE(addr(blocks[i - 1]) + block_size(blocks[i - 1]), addr(blocks[i]));
  }
  PoolStats s = pool.stats();
  std::size_t bytes = 0;
  for (BlockHeader *b : blocks) bytes += block_size(b);
  EXPECT_EQ(s.in_use_buffers, blocks.size());
  EXPECT_EQ(s.in_use_bytes, bytes);
  EXPECT_GE(s.reserved_bytes, bytes);
  EXPECT_LE(s.reserved_bytes, s.cap_bytes);
  for (BlockHeader *b : blocks) EXPECT_TRUE(pool.release(b, BlockState::kUser));
  s = pool.stats();
  EXPECT_EQ(s.in_use_buffers, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
}

TEST(BufferPool, ReusedBlockIsReset) {
  BufferPool pool(config(4 * kMiB));
  BlockHeader *b = pool.allocate(100);
  ASSERT_NE(b, nullptr);
  b->send_status.store(SendStatus::kSent);
  b->return_after_send = true;
  ASSERT_TRUE(pool.release(b, BlockState::kUser));
  BlockHeader *again = pool.allocate(100);
  ASSERT_EQ(again, b);  // the thread cache is LIFO
  EXPECT_EQ(again->state.load(), BlockState::kUser);
  EXPECT_EQ(again->send_status.load(), SendStatus::kIdle);
  EXPECT_FALSE(again->return_after_send);
  EXPECT_TRUE(pool.release(again, BlockState::kUser));
}

// has_message survives the thread cache (the core renews the envelope left
// in the owner area instead of constructing one), and only while the owner
// area is intact: a block whose owner area held the pool's own links in
// between (a flushed chain's head, the buddy allocator's free lists) says
// it has none.
TEST(BufferPool, ABlockKeepsItsMessageOnlyWhileItsOwnerAreaIsIntact) {
  BufferPool pool(config(8 * kMiB));
  auto mark = [](BlockHeader *b) {
    std::memset(owner_area_of(b), 0xA5, kOwnerAreaBytes);
    b->has_message = true;  // as message_in sets it
  };
  auto intact = [](const BlockHeader *b) {
    const auto *area = static_cast<const unsigned char *>(owner_area_of(b));
    return std::all_of(area, area + kOwnerAreaBytes, [](unsigned char c) { return c == 0xA5; });
  };
  BlockHeader *b = pool.allocate(100);
  ASSERT_NE(b, nullptr);
  mark(b);
  ASSERT_TRUE(pool.release(b, BlockState::kUser));
  BlockHeader *again = pool.allocate(100);
  ASSERT_EQ(again, b);  // from the thread cache (LIFO)
  EXPECT_TRUE(again->has_message);
  ASSERT_TRUE(pool.release(again, BlockState::kUser));

  std::vector<BlockHeader *> blocks;
  for (int i = 0; i < 300; ++i) {
    blocks.push_back(pool.allocate(64));
    ASSERT_NE(blocks.back(), nullptr);
    mark(blocks.back());
  }
  for (BlockHeader *x : blocks) ASSERT_TRUE(pool.release(x, BlockState::kUser));
  pool.flush_thread_cache();  // chains to the global lists: their heads hold the links
  int kept = 0, cleared = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    BlockHeader *x = pool.allocate(64);
    ASSERT_NE(x, nullptr);
    if (x->has_message) {
      ++kept;
      EXPECT_TRUE(intact(x)) << "a block says it has a message, but its owner area was reused";
    } else {
      ++cleared;
    }
    blocks[i] = x;
  }
  EXPECT_GT(kept, 0) << "blocks inside a chain keep their message";
  EXPECT_GT(cleared, 0) << "a chain's head held the pool's links";
  for (BlockHeader *x : blocks) ASSERT_TRUE(pool.release(x, BlockState::kUser));
}

TEST(BufferPool, RegionIsAPowerOfTwoAlignedToItsSize) {
  BufferPool pool(config(3 * kMiB));
  EXPECT_EQ(pool.region_bytes(), 4 * kMiB);
  EXPECT_EQ(addr(pool.region_base()) % (4 * kMiB), 0u);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.cap_bytes, 3 * kMiB);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.in_use_buffers, 0u);

  // A 2 MiB block fits the 3 MiB cap; a 4 MiB one never can.
  BlockHeader *b = pool.allocate(2 * kMiB - kControlBytes);
  ASSERT_NE(b, nullptr) << last_error();
  EXPECT_EQ(pool.stats().reserved_bytes, 2 * kMiB);
  clear_error();
  EXPECT_EQ(pool.allocate(2 * kMiB - kControlBytes + 1), nullptr);
  EXPECT_NE(std::string(last_error()).find("cap of 3145728 bytes"), std::string::npos)
      << last_error();
  EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

TEST(BufferPool, TooBigNamesTheCap) {
  BufferPool pool(config(kMiB));
  clear_error();
  EXPECT_EQ(pool.allocate(SIZE_MAX), nullptr);
  EXPECT_NE(std::string(last_error()).find("1048576"), std::string::npos) << last_error();
  clear_error();
  EXPECT_EQ(pool.allocate(kMiB), nullptr);  // needs a 2 MiB block
  const std::string e = last_error();
  EXPECT_NE(e.find("cap"), std::string::npos) << e;
  EXPECT_NE(e.find("1048576 bytes"), std::string::npos) << e;
  // The largest buffer that fits is the whole region.
  BlockHeader *b = pool.allocate(kMiB - kControlBytes);
  ASSERT_NE(b, nullptr) << last_error();
  EXPECT_EQ(addr(b), addr(pool.region_base()));
  EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

// ---- find ---------------------------------------------------------------------------

TEST(BufferPool, FindOnlyAcceptsPayloadStartsOfLiveBlocks) {
  BufferPool pool(config(4 * kMiB));
  BlockHeader *b = pool.allocate(1000);
  BlockHeader *other = pool.allocate(1000);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(other, nullptr);
  std::byte *p = payload_of(b);
  EXPECT_EQ(pool.find(p), b);
  EXPECT_EQ(pool.find_any_state(p), b);
  EXPECT_EQ(pool.find(p + 1), nullptr);
  EXPECT_EQ(pool.find(p - 1), nullptr);
  EXPECT_EQ(pool.find(p + 256), nullptr);  // inside the payload
  EXPECT_EQ(pool.find(b), nullptr);        // the header address
  EXPECT_EQ(pool.find(owner_area_of(b)), nullptr);
  int on_stack = 0;
  EXPECT_EQ(pool.find(&on_stack), nullptr);
  EXPECT_FALSE(pool.contains(&on_stack));
  void *heap = std::malloc(4096);
  EXPECT_EQ(pool.find(heap), nullptr);
  EXPECT_EQ(pool.find(static_cast<std::byte *>(heap) + kControlBytes), nullptr);
  std::free(heap);
  EXPECT_EQ(pool.find(nullptr), nullptr);
  EXPECT_EQ(pool.find_any_state(nullptr), nullptr);
  auto *base = static_cast<std::byte *>(pool.region_base());
  std::byte *end = base + pool.region_bytes();
  EXPECT_TRUE(pool.contains(base));
  EXPECT_TRUE(pool.contains(end - 1));
  EXPECT_FALSE(pool.contains(end));
  EXPECT_FALSE(pool.contains(base - 1));
  EXPECT_EQ(pool.find(end), nullptr);
  EXPECT_EQ(pool.find(end - 1), nullptr);
  EXPECT_EQ(pool.find(end + kControlBytes), nullptr);
  EXPECT_EQ(pool.find(base), nullptr);
  EXPECT_EQ(pool.find(reinterpret_cast<void *>(UINTPTR_MAX)), nullptr);

  // A freed block: not found, but find_any_state knows it was a block.
  ASSERT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(pool.find(p), nullptr);
  EXPECT_EQ(pool.find_any_state(p), b);
  EXPECT_EQ(pool.find(payload_of(other)), other);
  EXPECT_TRUE(pool.release(other, BlockState::kUser));
}

TEST(BufferPool, FindNeverFaultsAnywhereInTheRegion) {
  BufferPool pool(config(4 * kMiB));
  // Leave some live blocks, some freed ones and a freed big one.
  std::set<BlockHeader *> live;
  for (int i = 0; i < 50; ++i) live.insert(pool.allocate(static_cast<std::size_t>(i) * 300));
  BlockHeader *big = pool.allocate(kMiB);
  ASSERT_NE(big, nullptr);
  ASSERT_TRUE(pool.release(big, BlockState::kUser));
  int i = 0;
  for (auto it = live.begin(); it != live.end(); ++i) {
    if (i % 3 == 0) {
      ASSERT_TRUE(pool.release(*it, BlockState::kUser));
      it = live.erase(it);
    } else {
      ++it;
    }
  }
  auto *base = static_cast<std::byte *>(pool.region_base());
  std::size_t found = 0;
  for (std::size_t off = 0; off < pool.region_bytes(); off += 64) {
    BlockHeader *b = pool.find(base + off);
    if (b != nullptr) {
      ++found;
      EXPECT_TRUE(live.count(b)) << "offset " << off;
      EXPECT_EQ(static_cast<void *>(payload_of(b)), static_cast<void *>(base + off));
    }
  }
  EXPECT_EQ(found, live.size());
  for (BlockHeader *b : live) EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

// ---- release ------------------------------------------------------------------------

TEST(BufferPool, ReleaseWithWrongStateChangesNothing) {
  BufferPool pool(config(4 * kMiB));
  BlockHeader *b = pool.allocate(64);
  ASSERT_NE(b, nullptr);
  const PoolStats before = pool.stats();
  EXPECT_FALSE(pool.release(b, BlockState::kLibrary));
  EXPECT_FALSE(pool.release(b, BlockState::kFree));
  EXPECT_EQ(b->state.load(), BlockState::kUser);
  EXPECT_EQ(pool.find(payload_of(b)), b);
  PoolStats after = pool.stats();
  EXPECT_EQ(after.in_use_buffers, before.in_use_buffers);
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);

  // The core takes a block for a send with a CAS kUser -> kLibrary.
  b->state.store(BlockState::kLibrary);
  EXPECT_FALSE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(b->state.load(), BlockState::kLibrary);
  EXPECT_TRUE(pool.release(b, BlockState::kLibrary));
  EXPECT_EQ(pool.stats().in_use_buffers, 0u);

  // Pointers that are not blocks of this pool are refused untouched.
  BufferPool other(config(kMiB));
  BlockHeader *foreign = other.allocate(64);
  ASSERT_NE(foreign, nullptr);
  EXPECT_FALSE(pool.release(foreign, BlockState::kUser));
  EXPECT_EQ(foreign->state.load(), BlockState::kUser);
  EXPECT_FALSE(pool.release(nullptr, BlockState::kUser));
  EXPECT_FALSE(
      pool.release(reinterpret_cast<BlockHeader *>(payload_of(foreign)), BlockState::kUser));
  EXPECT_TRUE(other.release(foreign, BlockState::kUser));
}

// A send that claimed a block (kUser -> kLibrary) gives it back with a
// plain store: afterwards it is free (find refuses it, a release fails),
// counted back, and handed out again, once.
TEST(BufferPool, AHeldBlockGoesBackWithoutACas) {
  BufferPool pool(config(4 * kMiB));
  BlockHeader *b = pool.allocate(100);
  ASSERT_NE(b, nullptr);
  BlockState expected = BlockState::kUser;
  ASSERT_TRUE(b->state.compare_exchange_strong(expected, BlockState::kLibrary));
  pool.release_held(b);
  EXPECT_EQ(b->state.load(), BlockState::kFree);
  EXPECT_EQ(pool.find(payload_of(b)), nullptr);
  EXPECT_FALSE(pool.release(b, BlockState::kLibrary));
  EXPECT_EQ(pool.stats().in_use_buffers, 0u);
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  BlockHeader *x = pool.allocate(100);
  BlockHeader *y = pool.allocate(100);
  EXPECT_TRUE(x == b || y == b);  // this thread's cache hands it out next
  EXPECT_NE(x, y);
  EXPECT_TRUE(pool.release(x, BlockState::kUser));
  EXPECT_TRUE(pool.release(y, BlockState::kUser));
}

TEST(BufferPool, DoubleReleaseIsDetected) {
  BufferPool pool(config(4 * kMiB));
  BlockHeader *b = pool.allocate(5000);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_FALSE(pool.release(b, BlockState::kUser));
  EXPECT_FALSE(pool.release(b, BlockState::kLibrary));
  EXPECT_EQ(pool.stats().in_use_buffers, 0u);
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  // Handed out once only afterwards.
  BlockHeader *x = pool.allocate(5000);
  BlockHeader *y = pool.allocate(5000);
  EXPECT_NE(x, y);
  EXPECT_TRUE(pool.release(x, BlockState::kUser));
  EXPECT_TRUE(pool.release(y, BlockState::kUser));
}

// ---- the cap -------------------------------------------------------------------------

TEST(BufferPool, CapReachedFailsWithSentenceThenRecovers) {
  BufferPool pool(config(kMiB));
  std::vector<BlockHeader *> blocks;
  clear_error();
  for (;;) {
    BlockHeader *b = pool.allocate(4000);  // 8 KiB blocks
    if (b == nullptr) break;
    blocks.push_back(b);
    ASSERT_LE(blocks.size(), 128u);
  }
  EXPECT_EQ(blocks.size(), 128u);
  const std::string e = last_error();
  EXPECT_NE(e.find("cap"), std::string::npos) << e;
  EXPECT_NE(e.find("1048576"), std::string::npos) << e;  // the cap
  EXPECT_NE(e.find("4000"), std::string::npos) << e;     // the size asked for
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, kMiB);
  EXPECT_EQ(s.in_use_bytes, kMiB);
  EXPECT_EQ(s.in_use_buffers, 128u);
  EXPECT_EQ(pool.allocate(0), nullptr);  // not even the smallest block

  // Freeing one lets one more be allocated.
  ASSERT_TRUE(pool.release(blocks.back(), BlockState::kUser));
  blocks.pop_back();
  BlockHeader *again = pool.allocate(4000);
  ASSERT_NE(again, nullptr) << last_error();
  blocks.push_back(again);
  // A smaller size class needs the buddy allocator to split a freed block.
  ASSERT_TRUE(pool.release(blocks.back(), BlockState::kUser));
  blocks.pop_back();
  BlockHeader *small = pool.allocate(10);
  ASSERT_NE(small, nullptr) << last_error();
  EXPECT_TRUE(pool.release(small, BlockState::kUser));
  for (BlockHeader *b : blocks) EXPECT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
}

TEST(BufferPool, CoalescingGivesBackTheWholeCap) {
  BufferPool pool(config(kMiB));
  std::vector<BlockHeader *> blocks;
  for (BlockHeader *b; (b = pool.allocate(64)) != nullptr;) blocks.push_back(b);
  ASSERT_EQ(blocks.size(), kMiB / 256);
  // Some medium blocks cannot come now.
  EXPECT_EQ(pool.allocate(3000), nullptr);
  std::mt19937 rng(7);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (BlockHeader *b : blocks) ASSERT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  // The freed 256-byte blocks sit in caches and free lists; a request for the
  // whole cap must give them back to the buddy allocator and coalesce.
  BlockHeader *whole = pool.allocate(kMiB - kControlBytes);
  ASSERT_NE(whole, nullptr) << last_error();
  EXPECT_EQ(addr(whole), addr(pool.region_base()));
  std::memset(payload_of(whole), 1, payload_capacity(whole));
  EXPECT_EQ(pool.stats().reserved_bytes, kMiB);
  ASSERT_TRUE(pool.release(whole, BlockState::kUser));
  BlockHeader *small = pool.allocate(64);
  ASSERT_NE(small, nullptr) << last_error();
  EXPECT_TRUE(pool.release(small, BlockState::kUser));
}

TEST(BufferPool, FlushThreadCacheKeepsBlocksReserved) {
  BufferPool pool(config(8 * kMiB));
  std::vector<BlockHeader *> blocks;
  for (int i = 0; i < 300; ++i) blocks.push_back(pool.allocate(64));
  for (BlockHeader *b : blocks) ASSERT_TRUE(pool.release(b, BlockState::kUser));
  const std::size_t reserved = pool.stats().reserved_bytes;
  pool.flush_thread_cache();
  EXPECT_EQ(pool.stats().reserved_bytes, reserved);
  BlockHeader *b = pool.allocate(64);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(std::find(blocks.begin(), blocks.end(), b), blocks.end());
  EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

TEST(BufferPool, WorksWithoutThreadCache) {
  BufferPool pool(config(kMiB, 0));
  std::vector<BlockHeader *> blocks;
  for (BlockHeader *b; (b = pool.allocate(64)) != nullptr;) blocks.push_back(b);
  EXPECT_EQ(blocks.size(), kMiB / 256);
  EXPECT_EQ(pool.stats().in_use_buffers, blocks.size());
  for (BlockHeader *b : blocks) ASSERT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(pool.stats().in_use_buffers, 0u);
  BlockHeader *whole = pool.allocate(kMiB - kControlBytes);
  ASSERT_NE(whole, nullptr) << last_error();
  EXPECT_TRUE(pool.release(whole, BlockState::kUser));
}

// ---- big blocks ------------------------------------------------------------------------

TEST(BufferPool, BigBlocksAreWritableAndGoBack) {
  BufferPool pool(config(std::size_t{1} << 30));
  const std::size_t len = 256 * kMiB;  // a 512 MiB block: more than kKeepLargeBytes
  static_assert(BufferPool::kKeepLargeBytes < 512 * kMiB);
  BlockHeader *b = pool.allocate(len);
  ASSERT_NE(b, nullptr) << last_error();
  EXPECT_EQ(block_size(b), 512 * kMiB);
  EXPECT_EQ(addr(b) % (512 * kMiB), 0u);
  std::byte *p = payload_of(b);
  std::memset(p, 0x5a, len);
  EXPECT_EQ(p[0], std::byte{0x5a});
  EXPECT_EQ(p[len / 2], std::byte{0x5a});
  EXPECT_EQ(p[len - 1], std::byte{0x5a});
  EXPECT_EQ(pool.stats().in_use_bytes, 512 * kMiB);
  ASSERT_TRUE(pool.release(b, BlockState::kUser));
  // Too big to keep in a free list: back to the buddy allocator.
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  BlockHeader *again = pool.allocate(len);
  ASSERT_NE(again, nullptr) << last_error();
  std::memset(payload_of(again), 0x11, len);
  EXPECT_TRUE(pool.release(again, BlockState::kUser));
}

TEST(BufferPool, FewLargeBlocksAreKept) {
  BufferPool pool(config(std::size_t{1} << 30));
  std::vector<BlockHeader *> blocks;
  // 2 MiB blocks: a stream of 1 MiB messages with a window of 32 in flight
  // must not lose its pages on every reuse, but a burst must not pin more
  // than kKeepLargeBytes per class.
  const std::size_t kept = BufferPool::kKeepLargeBytes / (2 * kMiB);
  for (std::size_t i = 0; i < kept + 2; ++i) {
    blocks.push_back(pool.allocate(kMiB));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (BlockHeader *b : blocks) ASSERT_TRUE(pool.release(b, BlockState::kUser));
  EXPECT_EQ(pool.stats().reserved_bytes, kept * 2 * kMiB);
  BlockHeader *b = pool.allocate(kMiB);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(std::find(blocks.begin(), blocks.end(), b), blocks.end());
  EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

// ---- threads ----------------------------------------------------------------------------

// Payload stamp: who allocated the buffer and how long it is, then a pattern.
struct Stamp {
  std::uint64_t tag;
  std::uint64_t len;
};

void stamp(BlockHeader *b, std::uint64_t tag, std::size_t len) {
  std::byte *p = payload_of(b);
  if (len <= sizeof(Stamp)) return;
  Stamp s{tag, len};
  std::memcpy(p, &s, sizeof s);
  const std::size_t n = std::min<std::size_t>(len - 1, 2048);
  for (std::size_t i = sizeof s; i < n; ++i) p[i] = static_cast<std::byte>(tag + i);
  p[len - 1] = static_cast<std::byte>(tag ^ 0x5a);
}

bool check_stamp(BlockHeader *b, std::uint64_t tag, std::size_t len) {
  const std::byte *p = payload_of(b);
  if (len <= sizeof(Stamp)) return true;
  Stamp s;
  std::memcpy(&s, p, sizeof s);
  if (s.tag != tag || s.len != len) return false;
  const std::size_t n = std::min<std::size_t>(len - 1, 2048);
  for (std::size_t i = sizeof s; i < n; ++i) {
    if (p[i] != static_cast<std::byte>(tag + i)) return false;
  }
  return p[len - 1] == static_cast<std::byte>(tag ^ 0x5a);
}

// Every block handed out and not yet released, to catch a block handed out
// twice at the same time.
class Outstanding {
 public:
  bool insert(BlockHeader *b) {
    Shard &s = shard(b);
    std::lock_guard lock(s.mu);
    return s.set.insert(b).second;
  }
  bool erase(BlockHeader *b) {
    Shard &s = shard(b);
    std::lock_guard lock(s.mu);
    return s.set.erase(b) == 1;
  }
  std::size_t size() {
    std::size_t n = 0;
    for (Shard &s : shards_) {
      std::lock_guard lock(s.mu);
      n += s.set.size();
    }
    return n;
  }

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_set<BlockHeader *> set;
  };
  Shard &shard(BlockHeader *b) { return shards_[(addr(b) >> 8) % shards_.size()]; }
  std::array<Shard, 64> shards_;
};

struct Held {
  BlockHeader *block;
  std::uint64_t tag;
  std::size_t len;
};

TEST(BufferPoolThreads, RandomAllocFreeWithCrossThreadFrees) {
  constexpr int kThreads = 8;
  constexpr int kOps = 100000;
  constexpr int kSlots = 4;
  BufferPool pool(config(std::size_t{1} << 30));
  Outstanding outstanding;
  // Lock-free hand-off: thread t puts blocks into the slots of t+1.
  std::array<std::array<std::atomic<Held *>, kSlots>, kThreads> inbox{};
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> cross_frees{0};

  auto release_checked = [&](Held *h) {
    if (!check_stamp(h->block, h->tag, h->len)) failures.fetch_add(1);
    if (!outstanding.erase(h->block)) failures.fetch_add(1);
    if (!pool.release(h->block, BlockState::kUser)) failures.fetch_add(1);
    delete h;
  };

  auto worker = [&](int t) {
    std::mt19937_64 rng(1234 + static_cast<unsigned>(t));
    std::vector<Held *> held;
    for (int op = 0; op < kOps; ++op) {
      for (auto &slot : inbox[t]) {
        if (Held *h = slot.exchange(nullptr, std::memory_order_acquire)) {
          release_checked(h);
          cross_frees.fetch_add(1, std::memory_order_relaxed);
        }
      }
      const std::uint64_t r = rng();
      if (held.size() < 64 && (held.empty() || (r & 1))) {
        std::size_t len;
        const unsigned pick = (r >> 8) % 100;
        if (pick < 70) {
          len = (r >> 16) % 512;
        } else if (pick < 95) {
          len = 512 + (r >> 16) % (16 * kKiB);
        } else if (pick < 99) {
          len = 16 * kKiB + (r >> 16) % (200 * kKiB);
        } else {
          len = 200 * kKiB + (r >> 16) % (2 * kMiB);
        }
        BlockHeader *b = pool.allocate(len);
        if (b == nullptr) {
          if (failures.fetch_add(1) == 0)
            ADD_FAILURE() << "allocate(" << len << "): " << last_error();
          continue;
        }
        if (b->state.load() != BlockState::kUser || payload_capacity(b) < len ||
            addr(b) % block_size(b) != 0 || pool.find(payload_of(b)) != b) {
          failures.fetch_add(1);
        }
        if (!outstanding.insert(b)) failures.fetch_add(1);  // handed out twice
        const std::uint64_t tag = rng();
        stamp(b, tag, len);
        held.push_back(new Held{b, tag, len});
      } else {
        const std::size_t i = (r >> 8) % held.size();
        Held *h = held[i];
        held[i] = held.back();
        held.pop_back();
        if ((r >> 20) % 4 == 0) {
          Held *expected = nullptr;
          auto &slot = inbox[(t + 1) % kThreads][(r >> 24) % kSlots];
          if (slot.compare_exchange_strong(expected, h, std::memory_order_release,
                                           std::memory_order_relaxed)) {
            continue;
          }
        }
        release_checked(h);
      }
    }
    for (Held *h : held) release_checked(h);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(cross_frees.load(), 0u);

  // Only the blocks left in the inboxes are still in use.
  std::vector<Held *> left;
  for (auto &slots : inbox) {
    for (auto &slot : slots) {
      if (Held *h = slot.exchange(nullptr)) left.push_back(h);
    }
  }
  PoolStats s = pool.stats();
  std::size_t bytes = 0;
  for (Held *h : left) bytes += block_size(h->block);
  EXPECT_EQ(outstanding.size(), left.size());
  EXPECT_EQ(s.in_use_buffers, left.size());
  EXPECT_EQ(s.in_use_bytes, bytes);
  EXPECT_LE(s.reserved_bytes, s.cap_bytes);
  EXPECT_GE(s.reserved_bytes, s.in_use_bytes);
  for (Held *h : left) release_checked(h);
  EXPECT_EQ(failures.load(), 0);
  s = pool.stats();
  EXPECT_EQ(s.in_use_buffers, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
  // All memory comes back once every cache is given back.
  pool.flush_thread_cache();
  BlockHeader *whole = pool.allocate((std::size_t{1} << 30) - kControlBytes);
  EXPECT_NE(whole, nullptr) << last_error();
  if (whole != nullptr) EXPECT_TRUE(pool.release(whole, BlockState::kUser));
}

TEST(BufferPoolThreads, SmallCapUnderContentionNeverDoubleHandsOut) {
  constexpr int kThreads = 4;
  BufferPool pool(config(256 * kKiB));
  Outstanding outstanding;
  std::atomic<int> failures{0};
  std::atomic<int> refused{0};
  auto worker = [&](int t) {
    std::mt19937 rng(static_cast<unsigned>(t));
    std::vector<BlockHeader *> held;
    for (int op = 0; op < 20000; ++op) {
      if (held.size() < 32 && (rng() & 1)) {
        BlockHeader *b = pool.allocate(rng() % 3000);
        if (b == nullptr) {
          refused.fetch_add(1);
          continue;
        }
        if (!outstanding.insert(b)) failures.fetch_add(1);
        held.push_back(b);
      } else if (!held.empty()) {
        BlockHeader *b = held.back();
        held.pop_back();
        if (!outstanding.erase(b) || !pool.release(b, BlockState::kUser)) failures.fetch_add(1);
      }
    }
    for (BlockHeader *b : held) {
      if (!outstanding.erase(b) || !pool.release(b, BlockState::kUser)) failures.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_buffers, 0u);
  EXPECT_LE(s.reserved_bytes, 256 * kKiB);
  // The exited threads gave their caches back: the whole cap is available.
  BlockHeader *whole = pool.allocate(256 * kKiB - kControlBytes);
  ASSERT_NE(whole, nullptr) << last_error();
  EXPECT_TRUE(pool.release(whole, BlockState::kUser));
}

TEST(BufferPoolThreads, ExitingThreadReturnsItsCache) {
  BufferPool pool(config(64 * kMiB));
  std::vector<BlockHeader *> seen;
  std::size_t reserved_before_exit = 0;
  std::thread t([&] {
    for (int i = 0; i < 50; ++i) seen.push_back(pool.allocate(64));
    for (BlockHeader *b : seen) {
      if (b != nullptr) pool.release(b, BlockState::kUser);
    }
    reserved_before_exit = pool.stats().reserved_bytes;  // all of it in this thread's cache
  });
  t.join();
  ASSERT_EQ(std::count(seen.begin(), seen.end(), nullptr), 0);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, reserved_before_exit);
  EXPECT_EQ(s.in_use_buffers, 0u);
  // Everything the thread had cached is handed out again without carving.
  const std::size_t n = reserved_before_exit / 256;
  ASSERT_GE(n, seen.size());
  std::vector<BlockHeader *> again;
  for (std::size_t i = 0; i < n; ++i) {
    again.push_back(pool.allocate(64));
    ASSERT_NE(again.back(), nullptr);
  }
  EXPECT_EQ(pool.stats().reserved_bytes, reserved_before_exit);
  for (BlockHeader *b : seen) {
    EXPECT_NE(std::find(again.begin(), again.end(), b), again.end());
  }
  for (BlockHeader *b : again) EXPECT_TRUE(pool.release(b, BlockState::kUser));
}

TEST(BufferPoolLifetime, NewPoolAfterDestroyedOneOnSameThread) {
  for (int round = 0; round < 20; ++round) {
    BufferPool pool(config(kMiB));
    std::vector<BlockHeader *> blocks;
    for (int i = 0; i < 100; ++i) {
      BlockHeader *b = pool.allocate(static_cast<std::size_t>(i % 5) * 100);
      ASSERT_NE(b, nullptr) << last_error();
      ASSERT_TRUE(pool.contains(b));
      ASSERT_EQ(b->state.load(), BlockState::kUser);
      ASSERT_EQ(b->magic, kBlockMagic ^ addr(b));
      blocks.push_back(b);
    }
    // Leave them in the thread cache for the next round to (not) see.
    for (BlockHeader *b : blocks) ASSERT_TRUE(pool.release(b, BlockState::kUser));
    EXPECT_EQ(pool.stats().in_use_buffers, 0u);
  }
}

TEST(BufferPoolLifetime, PoolsSideBySide) {
  BufferPool a(config(kMiB));
  BufferPool b(config(2 * kMiB));
  std::vector<BlockHeader *> from_a;
  std::vector<BlockHeader *> from_b;
  for (int i = 0; i < 200; ++i) {
    from_a.push_back(a.allocate(64));
    from_b.push_back(b.allocate(64));
    ASSERT_TRUE(a.contains(from_a.back()));
    ASSERT_TRUE(b.contains(from_b.back()));
    if (i % 3 == 0) {
      ASSERT_TRUE(a.release(from_a.back(), BlockState::kUser));
      from_a.pop_back();
      EXPECT_FALSE(a.release(from_b.back(), BlockState::kUser));
    }
  }
  EXPECT_EQ(a.stats().in_use_buffers, from_a.size());
  EXPECT_EQ(b.stats().in_use_buffers, from_b.size());
  for (BlockHeader *x : from_a) EXPECT_TRUE(a.release(x, BlockState::kUser));
  for (BlockHeader *x : from_b) EXPECT_TRUE(b.release(x, BlockState::kUser));
}

TEST(BufferPoolLifetime, PoolDestroyedWhileAnotherThreadCachesItsBlocks) {
  Gate cached;
  Gate replaced;
  std::atomic<BufferPool *> current{nullptr};
  auto first = std::make_unique<BufferPool>(config(kMiB));
  current = first.get();
  std::atomic<int> failures{0};
  std::thread t([&] {
    BufferPool *p = current.load();
    std::vector<BlockHeader *> blocks;
    for (int i = 0; i < 40; ++i) blocks.push_back(p->allocate(64));
    for (BlockHeader *b : blocks) p->release(b, BlockState::kUser);  // now cached here
    cached.open();
    replaced.wait();
    // A new pool, maybe at the same address: the stale cache must not be used.
    BufferPool *q = current.load();
    std::set<BlockHeader *> mine;
    for (int i = 0; i < 40; ++i) {
      BlockHeader *b = q->allocate(64);
      if (b == nullptr || !q->contains(b) || b->state.load() != BlockState::kUser ||
          !mine.insert(b).second) {
        failures.fetch_add(1);
      }
    }
    for (BlockHeader *b : mine) {
      if (!q->release(b, BlockState::kUser)) failures.fetch_add(1);
    }
  });
  cached.wait();
  first.reset();
  auto second = std::make_unique<BufferPool>(config(kMiB));
  current = second.get();
  // Give the new pool some used and freed blocks of its own.
  BlockHeader *x = second->allocate(64);
  ASSERT_NE(x, nullptr);
  replaced.open();
  t.join();  // the exiting thread drops its stale cache without touching it
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(second->stats().in_use_buffers, 1u);
  EXPECT_TRUE(second->release(x, BlockState::kUser));
  EXPECT_EQ(second->stats().in_use_buffers, 0u);
}

TEST(BufferPoolLifetime, ThreadExitsAfterPoolDestroyed) {
  Gate cached;
  Gate destroyed;
  auto pool = std::make_unique<BufferPool>(config(kMiB));
  BufferPool *p = pool.get();
  std::thread t([&] {
    BlockHeader *b = p->allocate(64);
    if (b != nullptr) p->release(b, BlockState::kUser);
    cached.open();
    destroyed.wait();
  });
  cached.wait();
  pool.reset();  // unmaps the blocks the thread still caches
  destroyed.open();
  t.join();  // must not touch the unmapped blocks
  SUCCEED();
}

// A thread_local whose destructor runs after the pool's thread caches were
// torn down (it was constructed before them) still gets a working pool.
struct LateUser {
  BufferPool *pool = nullptr;
  BlockHeader *held = nullptr;
  std::atomic<int> *result = nullptr;
  ~LateUser() {
    if (pool == nullptr) return;
    BlockHeader *b = pool->allocate(64);  // uncached: takes one block of a flushed chain
    const bool ok = b != nullptr && pool->release(b, BlockState::kUser) &&
                    pool->release(held, BlockState::kUser);
    result->store(ok ? 1 : -1);
  }
};
thread_local LateUser t_late;

TEST(BufferPoolLifetime, UsableFromThreadLocalDestructorsAfterCacheTeardown) {
  BufferPool pool(config(4 * kMiB));
  std::atomic<int> result{0};
  std::thread t([&] {
    t_late.pool = &pool;  // registers t_late's destructor before the pool's caches exist
    t_late.result = &result;
    t_late.held = pool.allocate(64);
    std::vector<BlockHeader *> blocks;
    for (int i = 0; i < 20; ++i) blocks.push_back(pool.allocate(64));
    for (BlockHeader *b : blocks) pool.release(b, BlockState::kUser);
  });
  t.join();
  EXPECT_EQ(result.load(), 1);
  EXPECT_EQ(pool.stats().in_use_buffers, 0u);
  // Nothing leaked: the whole cap coalesces again.
  BlockHeader *whole = pool.allocate(4 * kMiB - kControlBytes);
  ASSERT_NE(whole, nullptr) << last_error();
  EXPECT_TRUE(pool.release(whole, BlockState::kUser));
}

}  // namespace
}  // namespace rocl::impl
