// buffer_pool.hpp - the registered buffer pool (ToCL section 4.1): every rocl
// buffer is the payload of a power-of-two block carved from one contiguous
// region, so that a transport registers the region once and any buffer can
// be sent without copying.
//
// Block sizes: 2^(y-1) < len + kControlBytes <= 2^y, y >= kMinBlockOrder.
//
// Layers, fastest first:
//  1. a per-thread, per-pool cache of free blocks for each size class up to
//     2^kMaxCachedOrder (64 KiB): allocate/release touch only thread-local
//     lists (bounded by PoolConfig::thread_cache_bytes per class);
//  2. per-size-class global free lists (one mutex each), which caches refill
//     from and flush to in batches; larger blocks are kept there too, at most
//     kKeepLargeBlocks / kKeepLargeBytes per class;
//  3. a buddy allocator over the region (one mutex), coalescing on free; the
//     cap bounds the bytes it has carved (stats().reserved_bytes). Large
//     blocks given back to it have their pages released (MADV_DONTNEED).
// When the buddy allocator cannot satisfy a request under the cap, the
// calling thread's cache and all global lists are given back to it
// (coalescing) and the request is tried once more. Blocks in OTHER threads'
// caches cannot be reclaimed that way: up to min(thread_cache_bytes, cap/16)
// bytes per class and per thread that used the pool may stay reserved but unused until that
// thread uses them, calls flush_thread_cache() or exits.
//
// Accounting: each thread counts what it hands out and takes back in its own
// cache (no shared atomics on the fast path); stats() sums the live threads'
// counters and those of exited threads, exact whenever no thread is inside
// allocate/release.
//
// Thread safety: every member is thread safe. A pool must outlive every call
// on it; it may be destroyed while other threads still cache its blocks
// (those entries go stale and are dropped, never dereferenced).
#pragma once

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "buffer/block.hpp"
#include "buffer/buddy_allocator.hpp"
#include "buffer/region.hpp"

namespace rocl::impl {

struct PoolConfig {
  // ROCL_POOL_MAX: total bytes of blocks carved from the region.
  std::size_t cap_bytes = std::size_t{4} << 30;
  // Per thread, per pool, per size class: bound on the bytes of blocks a
  // thread keeps cached (at most 256 blocks and cap_bytes / 16).
  std::size_t thread_cache_bytes = std::size_t{2} << 20;
};

struct PoolStats {
  std::size_t cap_bytes;
  std::size_t reserved_bytes;
  std::size_t in_use_bytes;
  std::size_t in_use_buffers;
};

namespace detail {
struct ThreadCache;
struct ThreadCaches;
}  // namespace detail

class BufferPool {
 public:
  // Largest block order kept in thread caches (64 KiB blocks).
  static constexpr unsigned kMaxCachedOrder = 16;
  static constexpr unsigned kCachedClasses = kMaxCachedOrder - kMinBlockOrder + 1;
  // Free blocks above kMaxCachedOrder kept per class before going back to the
  // buddy allocator (which gives their pages back to the system). Sized for
  // a stream of 64 messages in flight each way between two processes: a
  // block returned to the system must be faulted in again on reuse, by the
  // owner and by every process that maps the pool (shm rendezvous), which
  // cut 1 MiB streaming bandwidth tenfold at 64 blocks / 64 MiB.
  static constexpr std::size_t kKeepLargeBlocks = 160;
  static constexpr std::size_t kKeepLargeBytes = std::size_t{320} << 20;

  // Reserves the address space; throws std::system_error if it cannot.
  explicit BufferPool(const PoolConfig &config);
  // Unmaps everything; blocks still held by users become invalid.
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  // A block whose payload holds >= len bytes: state kUser, send_status kIdle,
  // return_after_send false. nullptr with fail(ROCL_ENOMEM) when the cap would
  // be exceeded, or fail(ROCL_ETOOBIG) if len can never fit.
  // (Inline, the fast path: a block of the thread cache this thread used
  // last; link-time optimisation left the whole function a call on every
  // small message's path, and give_back too: rocl-bench latency shows it.)
  BlockHeader *allocate(std::size_t len) noexcept;

  // Returns a block to the pool if its state is `from` (CAS from -> kFree);
  // false (nothing changed) otherwise, or if block is not a block of this pool.
  bool release(BlockHeader *block, BlockState from) noexcept;
  // Returns a block of this pool that the caller holds alone in state
  // kLibrary (a send claimed it by CAS from kUser, and only the holder moves
  // it on from there): stored kFree without a locked instruction, which a
  // small message's send would otherwise pay once more after its claim.
  void release_held(BlockHeader *block) noexcept;

  // The block whose PAYLOAD starts exactly at p and that is not free, or
  // nullptr. Never faults whatever p is. (Inline: a small message's send
  // asks twice, rocl_bftoret and rocl_send, and the call was a third of
  // each look.)
  BlockHeader *find(const void *p) const noexcept {
    BlockHeader *b = find_any_state(p);
    const bool live = b != nullptr && b->state.load(std::memory_order_acquire) != BlockState::kFree;
    return live ? b : nullptr;
  }
  // Same, but also returns free blocks (returned to the pool, or free in the
  // buddy allocator and not merged into a larger block since), so that the
  // core can say "already returned".
  BlockHeader *find_any_state(const void *p) const noexcept {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t offset = addr - base_;
    if (offset >= size_ || offset < kControlBytes) return nullptr;
    const std::uintptr_t block_offset = offset - kControlBytes;
    constexpr std::uintptr_t kMinBlockBytes = std::uintptr_t{1} << kMinBlockOrder;
    if ((block_offset & (kMinBlockBytes - 1)) != 0) return nullptr;
    // Every 256-byte aligned address of the region is mapped, so these reads
    // cannot fault; magic and order are written with atomic_ref by the buddy
    // allocator.
    auto *b = reinterpret_cast<BlockHeader *>(addr - kControlBytes);
    if (std::atomic_ref<std::uint64_t>(b->magic).load(std::memory_order_relaxed) !=
        (kBlockMagic ^ reinterpret_cast<std::uintptr_t>(b))) {
      return nullptr;
    }
    const unsigned order = std::atomic_ref<std::uint8_t>(b->order).load(std::memory_order_relaxed);
    if (order < kMinBlockOrder || order > top_order_ ||
        (block_offset & ((std::uintptr_t{1} << order) - 1)) != 0) {
      return nullptr;
    }
    return b;
  }

  // Whether the cap leaves room for a buffer of len bytes at all: when
  // allocate fails for one that could fit, waiting for blocks to be
  // released can help (a transport pauses); otherwise it cannot.
  bool can_ever_hold(std::size_t len) const noexcept {
    const unsigned y = order_for(len);
    return y < 64 && (std::size_t{1} << y) <= cap_;
  }

  // p lies inside the pool region.
  bool contains(const void *p) const noexcept {
    return reinterpret_cast<std::uintptr_t>(p) - base_ < size_;
  }

  PoolStats stats() const noexcept;

  // Gives the calling thread's cached blocks of this pool back to the global
  // free lists (e.g. before a thread goes idle for long, or in tests).
  void flush_thread_cache() noexcept;

  // The region, for transports that register memory.
  void *region_base() const noexcept { return reinterpret_cast<void *>(base_); }
  std::size_t region_bytes() const noexcept { return size_; }
  // The memfd behind the region (see region.hpp), or -1: what the shm
  // transport lets a receiving process map to copy a message out once.
  int region_fd() const noexcept { return region_.fd(); }

  // Smallest y with len + kControlBytes <= 2^y, y >= kMinBlockOrder; 64 if
  // no block can ever hold len bytes.
  static unsigned order_for(std::size_t len) noexcept {
    if (len > SIZE_MAX - kControlBytes) return 64;
    const unsigned y = static_cast<unsigned>(std::bit_width(len + kControlBytes - 1));
    return y < kMinBlockOrder ? kMinBlockOrder : y;
  }

 private:
  friend struct detail::ThreadCaches;

  // A global free list: a stack of chains (blocks linked by free_next); each
  // chain's first block records the chain's tail and length in its owner area.
  struct alignas(64) FreeList {
    std::mutex mu;
    BlockHeader *chains = nullptr;
    std::size_t blocks = 0;
  };

  detail::ThreadCache *local_cache() noexcept;
  detail::ThreadCache *local_cache_slow() noexcept;
  detail::ThreadCache *existing_local_cache() const noexcept;
  BlockHeader *refill(detail::ThreadCache *tc, unsigned order) noexcept;
  BlockHeader *obtain(unsigned order, std::uint32_t want, std::uint32_t max,
                      std::uint32_t *got) noexcept;
  BlockHeader *allocate_slow(unsigned order, std::size_t len) noexcept;
  BlockHeader *allocate_uncached(unsigned order, std::size_t len, detail::ThreadCache *tc) noexcept;
  BlockHeader *fail_allocate(unsigned order, std::size_t len) noexcept;
  void release_uncached(BlockHeader *b, unsigned order) noexcept;
  // release's and release_held's rest, once b is kFree.
  void give_back(BlockHeader *b) noexcept;
  void give_back_slow(BlockHeader *b, unsigned order) noexcept;
  void push_chain(unsigned order, BlockHeader *head, BlockHeader *tail, std::uint32_t n) noexcept;
  BlockHeader *pop_chains(unsigned order, std::uint32_t want, std::uint32_t max,
                          std::uint32_t *got) noexcept;
  void flush_cache(detail::ThreadCache *tc) noexcept;
  void flush_class(detail::ThreadCache *tc, unsigned cls, std::uint32_t n) noexcept;
  void reclaim() noexcept;
  void retire_cache(detail::ThreadCache *tc) noexcept;

  const std::uint64_t id_;  // unique for the process's life, never reused
  const std::size_t cap_;
  PoolRegion region_;
  const std::uintptr_t base_;
  const std::size_t size_;
  const unsigned top_order_;
  BuddyAllocator buddy_;
  std::uint32_t cache_max_[kCachedClasses];    // blocks a thread keeps per class (0: no caching)
  std::uint32_t cache_batch_[kCachedClasses];  // blocks moved per refill / flush
  FreeList lists_[64 - kMinBlockOrder];        // by order - kMinBlockOrder
  mutable std::mutex caches_mu_;               // guards caches_ and the retired counters' folding
  detail::ThreadCache *caches_ = nullptr;      // live threads' caches of this pool
  std::atomic<std::uint64_t> retired_buffers_{0};  // in-use counts not kept by a live cache
  std::atomic<std::uint64_t> retired_bytes_{0};
};

namespace detail {

// What one thread keeps for one pool. Only its thread touches the lists;
// stats() reads the counters (under the pool's caches_mu_).
struct ThreadCache {
  struct Class {
    BlockHeader *head = nullptr;  // LIFO, linked by free_next
    std::uint32_t count = 0;
    std::uint32_t max = 0;  // 0: this class is not cached
    std::uint32_t batch = 0;
  };
  std::uint64_t pool_id = 0;
  BufferPool *pool = nullptr;  // dereferenced only while pool_id is registered
  Class cls[BufferPool::kCachedClasses];
  // Blocks (bytes) handed out minus blocks (bytes) released by this thread,
  // modulo 2^64. Written by the owning thread only, with load + store.
  std::atomic<std::uint64_t> net_buffers{0};
  std::atomic<std::uint64_t> net_bytes{0};
  ThreadCache *thread_next = nullptr;  // this thread's caches
  ThreadCache *pool_prev = nullptr;    // the pool's caches (under caches_mu_)
  ThreadCache *pool_next = nullptr;
};

// The cache this thread used last (of any pool): the fast path's.
extern constinit thread_local ThreadCache *t_last_cache;

// A per-thread counter of ThreadCache, written by its thread only.
inline void add_owned(std::atomic<std::uint64_t> &a, std::uint64_t d) noexcept {
  a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

inline void hand_out(BlockHeader *b) noexcept {
  b->send_status.store(SendStatus::kIdle, std::memory_order_relaxed);
  b->return_after_send = false;
  b->lent = false;
  b->network = 0;
  // has_message stays: a block that carried a message keeps its envelope,
  // renewed by the next message_in (one line written instead of two);
  // whoever puts other things in the owner area clears it.
  b->state.store(BlockState::kUser, std::memory_order_release);
}

}  // namespace detail

[[gnu::always_inline]] inline BlockHeader *BufferPool::allocate(std::size_t len) noexcept {
  const unsigned order = order_for(len);
  detail::ThreadCache *tc = detail::t_last_cache;
  if (order <= kMaxCachedOrder && tc != nullptr && tc->pool_id == id_) [[likely]] {
    detail::ThreadCache::Class &cls = tc->cls[order - kMinBlockOrder];
    if (BlockHeader *b = cls.head; b != nullptr) [[likely]] {
      cls.head = b->free_next;
      --cls.count;
      detail::hand_out(b);
      detail::add_owned(tc->net_buffers, 1);
      detail::add_owned(tc->net_bytes, std::size_t{1} << order);
      return b;
    }
  }
  return allocate_slow(order, len);
}

inline void BufferPool::release_held(BlockHeader *b) noexcept {
  assert(b->state.load(std::memory_order_relaxed) == BlockState::kLibrary);
  b->state.store(BlockState::kFree, std::memory_order_release);
  give_back(b);
}

// release's and release_held's rest: the fast path, a cache with room for
// b without a flush (max 0: the class is not cached).
[[gnu::always_inline]] inline void BufferPool::give_back(BlockHeader *b) noexcept {
  const unsigned order = b->order;
  detail::ThreadCache *tc = detail::t_last_cache;
  if (order <= kMaxCachedOrder && tc != nullptr && tc->pool_id == id_) [[likely]] {
    detail::ThreadCache::Class &cls = tc->cls[order - kMinBlockOrder];
    if (cls.count < cls.max) [[likely]] {
      detail::add_owned(tc->net_buffers, std::uint64_t{0} - 1);
      detail::add_owned(tc->net_bytes, std::uint64_t{0} - (std::size_t{1} << order));
      b->free_next = cls.head;
      cls.head = b;
      ++cls.count;
      return;
    }
  }
  give_back_slow(b, order);
}

}  // namespace rocl::impl
