// buffer_pool.cpp - thread caches, global free lists and the glue to the
// buddy allocator. See buffer_pool.hpp for the design.
#include "buffer/buffer_pool.hpp"

#include <algorithm>
#include <cassert>
#include <new>
#include <unordered_map>

#include "status/status.hpp"

namespace rocl::impl {

namespace detail {

constinit thread_local ThreadCache *t_last_cache = nullptr;

// All caches of one thread; its destructor runs at thread exit.
struct ThreadCaches {
  ThreadCache *head = nullptr;
  ~ThreadCaches();
};

}  // namespace detail

namespace {

using detail::ThreadCache;

// Live pools by id: a thread that exits gives its cached blocks back only to
// pools still registered here, and a pool's destructor unregisters it first.
struct Registry {
  std::mutex mu;
  std::unordered_map<std::uint64_t, BufferPool *> pools;
};
Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: thread exits may follow static destruction
  return *r;
}
std::atomic<std::uint64_t> g_next_pool_id{1};

// The fast path (buffer_pool.hpp) only touches detail::t_last_cache, and
// the slow path this one too; both trivially destructible.
thread_local bool t_exiting = false;  // t_caches is destroyed or being destroyed
thread_local detail::ThreadCaches t_caches;

struct ChainInfo {  // in the owner area of a chain's first block
  BlockHeader *next_chain;
  BlockHeader *tail;
  std::uint32_t count;
};
inline ChainInfo *chain_info(BlockHeader *b) noexcept {
  return static_cast<ChainInfo *>(owner_area_of(b));
}

inline std::size_t block_bytes(unsigned order) noexcept {
  return std::size_t{1} << order;
}

unsigned region_order(std::size_t cap) noexcept {
  const std::size_t floor = std::max<std::size_t>(page_bytes(), block_bytes(kMinBlockOrder));
  if (cap <= floor) return static_cast<unsigned>(std::countr_zero(floor));
  if (cap > (std::size_t{1} << 62)) return 63;  // cannot be mapped: the constructor throws
  return static_cast<unsigned>(std::bit_width(cap - 1));
}

}  // namespace

// ---- construction ------------------------------------------------------------

BufferPool::BufferPool(const PoolConfig &config)
    : id_(g_next_pool_id.fetch_add(1, std::memory_order_relaxed)),
      cap_(config.cap_bytes),
      region_(std::size_t{1} << region_order(config.cap_bytes)),
      base_(reinterpret_cast<std::uintptr_t>(region_.base())),
      size_(region_.size()),
      top_order_(region_order(config.cap_bytes)),
      buddy_(region_.base(), top_order_, std::min(cap_, size_)) {
  // The budget is per size class: a stream of messages of one size must be
  // able to keep a window of blocks in the caches (a split budget left one
  // 64 KiB block per thread, and every message went through the shared
  // lists). A thread never caches more than 1/16 of the cap per class, so
  // that a small pool is not emptied into a few threads' caches.
  const std::size_t budget = std::min(config.thread_cache_bytes, cap_ / 16);
  for (unsigned c = 0; c < kCachedClasses; ++c) {
    const std::size_t n = budget / block_bytes(kMinBlockOrder + c);
    cache_max_[c] = static_cast<std::uint32_t>(std::min<std::size_t>(n, 256));
    cache_batch_[c] = (cache_max_[c] + 1) / 2;
  }
  Registry &r = registry();
  std::lock_guard lock(r.mu);
  r.pools.emplace(id_, this);
}

BufferPool::~BufferPool() {
  {
    Registry &r = registry();
    std::lock_guard lock(r.mu);
    r.pools.erase(id_);
  }
  // This thread's cache of this pool can go now; other threads' caches just
  // go stale (their thread drops them without looking at the blocks).
  if (t_exiting) return;
  if (detail::t_last_cache != nullptr && detail::t_last_cache->pool_id == id_) {
    detail::t_last_cache = nullptr;
  }
  for (ThreadCache **p = &t_caches.head; *p != nullptr; p = &(*p)->thread_next) {
    if ((*p)->pool_id == id_) {
      ThreadCache *dead = *p;
      *p = dead->thread_next;
      delete dead;
      break;
    }
  }
}

// ---- thread caches -------------------------------------------------------------

inline ThreadCache *BufferPool::local_cache() noexcept {
  ThreadCache *tc = detail::t_last_cache;
  if (tc != nullptr && tc->pool_id == id_) [[likely]] {
    return tc;
  }
  return local_cache_slow();
}

ThreadCache *BufferPool::existing_local_cache() const noexcept {
  if (t_exiting) return nullptr;
  for (ThreadCache *tc = t_caches.head; tc != nullptr; tc = tc->thread_next) {
    if (tc->pool_id == id_) return tc;
  }
  return nullptr;
}

ThreadCache *BufferPool::local_cache_slow() noexcept {
  if (t_exiting) return nullptr;  // called from another thread_local's destructor
  if (ThreadCache *tc = existing_local_cache()) {
    detail::t_last_cache = tc;
    return tc;
  }
  // First use of this pool by this thread: drop caches of destroyed pools.
  {
    Registry &r = registry();
    std::lock_guard lock(r.mu);
    for (ThreadCache **p = &t_caches.head; *p != nullptr;) {
      if (r.pools.find((*p)->pool_id) == r.pools.end()) {
        ThreadCache *dead = *p;
        *p = dead->thread_next;
        if (detail::t_last_cache == dead) detail::t_last_cache = nullptr;
        delete dead;
      } else {
        p = &(*p)->thread_next;
      }
    }
  }
  auto *tc = new (std::nothrow) ThreadCache;
  if (tc == nullptr) return nullptr;  // works uncached
  tc->pool_id = id_;
  tc->pool = this;
  for (unsigned c = 0; c < kCachedClasses; ++c) {
    tc->cls[c].max = cache_max_[c];
    tc->cls[c].batch = cache_batch_[c];
  }
  tc->thread_next = t_caches.head;
  t_caches.head = tc;
  {
    std::lock_guard lock(caches_mu_);
    tc->pool_next = caches_;
    if (caches_ != nullptr) caches_->pool_prev = tc;
    caches_ = tc;
  }
  detail::t_last_cache = tc;
  return tc;
}

detail::ThreadCaches::~ThreadCaches() {
  t_exiting = true;
  detail::t_last_cache = nullptr;
  Registry &r = registry();
  std::lock_guard lock(r.mu);  // keeps the pools below alive
  while (head != nullptr) {
    ThreadCache *tc = head;
    head = tc->thread_next;
    auto it = r.pools.find(tc->pool_id);
    if (it != r.pools.end()) it->second->retire_cache(tc);
    delete tc;
  }
}

// Called at thread exit with the registry locked.
void BufferPool::retire_cache(ThreadCache *tc) noexcept {
  flush_cache(tc);
  std::lock_guard lock(caches_mu_);
  retired_buffers_.fetch_add(tc->net_buffers.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
  retired_bytes_.fetch_add(tc->net_bytes.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  if (tc->pool_prev != nullptr) {
    tc->pool_prev->pool_next = tc->pool_next;
  } else {
    caches_ = tc->pool_next;
  }
  if (tc->pool_next != nullptr) tc->pool_next->pool_prev = tc->pool_prev;
}

void BufferPool::flush_class(ThreadCache *tc, unsigned c, std::uint32_t n) noexcept {
  ThreadCache::Class &cls = tc->cls[c];
  if (n == 0 || cls.head == nullptr) return;
  n = std::min(n, cls.count);
  BlockHeader *head = cls.head;
  BlockHeader *tail = head;
  for (std::uint32_t i = 1; i < n; ++i) tail = tail->free_next;
  cls.head = tail->free_next;
  cls.count -= n;
  push_chain(kMinBlockOrder + c, head, tail, n);
}

void BufferPool::flush_cache(ThreadCache *tc) noexcept {
  for (unsigned c = 0; c < kCachedClasses; ++c) flush_class(tc, c, tc->cls[c].count);
}

void BufferPool::flush_thread_cache() noexcept {
  if (ThreadCache *tc = existing_local_cache()) flush_cache(tc);
}

// ---- global free lists -----------------------------------------------------------

void BufferPool::push_chain(unsigned order, BlockHeader *head, BlockHeader *tail,
                            std::uint32_t n) noexcept {
  FreeList &l = lists_[order - kMinBlockOrder];
  tail->free_next = nullptr;
  head->has_message = false;  // its owner area holds the chain's info now
  ChainInfo *info = chain_info(head);
  info->tail = tail;
  info->count = n;
  std::lock_guard lock(l.mu);
  info->next_chain = l.chains;
  l.chains = head;
  l.blocks += n;
}

// Pops whole chains until at least `want` blocks, never more than `max` (but
// always at least one chain if there is one). Returns one joined chain.
BlockHeader *BufferPool::pop_chains(unsigned order, std::uint32_t want, std::uint32_t max,
                                    std::uint32_t *got) noexcept {
  FreeList &l = lists_[order - kMinBlockOrder];
  BlockHeader *head = nullptr;
  BlockHeader *tail = nullptr;
  std::uint32_t n = 0;
  std::lock_guard lock(l.mu);
  while (l.chains != nullptr && n < want) {
    ChainInfo *info = chain_info(l.chains);
    if (n != 0 && n + info->count > max) break;
    BlockHeader *chain = l.chains;
    l.chains = info->next_chain;
    l.blocks -= info->count;
    if (tail != nullptr) {
      tail->free_next = chain;
    } else {
      head = chain;
    }
    tail = info->tail;
    n += info->count;
  }
  *got = n;
  return head;
}

// Gives every global free list back to the buddy allocator (coalescing).
void BufferPool::reclaim() noexcept {
  flush_thread_cache();
  for (unsigned order = kMinBlockOrder; order <= top_order_; ++order) {
    FreeList &l = lists_[order - kMinBlockOrder];
    BlockHeader *chains;
    {
      std::lock_guard lock(l.mu);
      chains = l.chains;
      l.chains = nullptr;
      l.blocks = 0;
    }
    while (chains != nullptr) {
      ChainInfo *info = chain_info(chains);
      BlockHeader *next_chain = info->next_chain;
      if (order > kMaxCachedOrder) {
        for (BlockHeader *b = chains; b != nullptr; b = b->free_next) {
          region_.release(reinterpret_cast<std::byte *>(b) + page_bytes(),
                          block_bytes(order) - page_bytes());
        }
      }
      buddy_.free_chain(chains);
      chains = next_chain;
    }
  }
}

// ---- allocate / release --------------------------------------------------------------

// A chain of 1..max blocks of 2^order bytes (at least `want` if they can be
// had cheaply): global list, then the buddy allocator, then reclaiming.
BlockHeader *BufferPool::obtain(unsigned order, std::uint32_t want, std::uint32_t max,
                                std::uint32_t *got) noexcept {
  *got = 0;
  if (order > top_order_ || block_bytes(order) > cap_) return nullptr;
  if (BlockHeader *chain = pop_chains(order, want, max, got)) return chain;
  if (BlockHeader *chain = buddy_.allocate(order, want, got)) return chain;
  reclaim();
  return buddy_.allocate(order, 1, got);
}

BlockHeader *BufferPool::refill(ThreadCache *tc, unsigned order) noexcept {
  ThreadCache::Class &cls = tc->cls[order - kMinBlockOrder];
  std::uint32_t got = 0;
  BlockHeader *chain = obtain(order, cls.batch, cls.max, &got);
  if (chain == nullptr) return nullptr;
  cls.head = chain->free_next;
  cls.count = got - 1;
  return chain;
}

BlockHeader *BufferPool::fail_allocate(unsigned order, std::size_t len) noexcept {
  if (order >= 64 || block_bytes(order) > cap_) {
    fail(ROCL_ETOOBIG,
         "buffer pool: a buffer of %zu bytes needs a block of 2^%u bytes, more than the pool cap "
         "of %zu bytes (ROCL_POOL_MAX)",
         len, order, cap_);
    return nullptr;
  }
  const PoolStats s = stats();
  fail(ROCL_ENOMEM,
       "buffer pool cap reached: a buffer of %zu bytes needs a block of %zu bytes, but %zu bytes "
       "of the cap of %zu bytes (ROCL_POOL_MAX) are in use and %zu are reserved (free blocks "
       "cached by other threads stay reserved)",
       len, block_bytes(order), s.in_use_bytes, cap_, s.reserved_bytes);
  return nullptr;
}

BlockHeader *BufferPool::allocate_slow(unsigned order, std::size_t len) noexcept {
  ThreadCache *tc = local_cache();
  if (order <= kMaxCachedOrder && tc != nullptr) [[likely]] {
    ThreadCache::Class &cls = tc->cls[order - kMinBlockOrder];
    BlockHeader *b = cls.head;
    if (b != nullptr) [[likely]] {
      cls.head = b->free_next;
      --cls.count;
    } else if (cls.max == 0) {
      return allocate_uncached(order, len, tc);
    } else if ((b = refill(tc, order)) == nullptr) {
      return fail_allocate(order, len);
    }
    detail::hand_out(b);
    detail::add_owned(tc->net_buffers, 1);
    detail::add_owned(tc->net_bytes, block_bytes(order));
    return b;
  }
  return allocate_uncached(order, len, tc);
}

BlockHeader *BufferPool::allocate_uncached(unsigned order, std::size_t len,
                                           ThreadCache *tc) noexcept {
  std::uint32_t got = 0;
  BlockHeader *b = obtain(order, 1, 1, &got);
  if (b == nullptr) return fail_allocate(order, len);
  if (got > 1) {  // a whole chain flushed by a thread cache: keep the rest listed
    BlockHeader *tail = b->free_next;
    while (tail->free_next != nullptr) tail = tail->free_next;
    push_chain(order, b->free_next, tail, got - 1);
  }
  detail::hand_out(b);
  if (tc != nullptr) {
    detail::add_owned(tc->net_buffers, 1);
    detail::add_owned(tc->net_bytes, block_bytes(order));
  } else {
    retired_buffers_.fetch_add(1, std::memory_order_relaxed);
    retired_bytes_.fetch_add(block_bytes(order), std::memory_order_relaxed);
  }
  return b;
}

bool BufferPool::release(BlockHeader *b, BlockState from) noexcept {
  const auto addr = reinterpret_cast<std::uintptr_t>(b);
  if (from == BlockState::kFree || addr - base_ >= size_ ||
      (addr & (block_bytes(kMinBlockOrder) - 1)) != 0 ||
      std::atomic_ref<std::uint64_t>(b->magic).load(std::memory_order_relaxed) !=
          (kBlockMagic ^ addr)) {
    return false;
  }
  BlockState expected = from;
  if (!b->state.compare_exchange_strong(expected, BlockState::kFree, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
    return false;
  }
  give_back(b);
  return true;
}

void BufferPool::give_back_slow(BlockHeader *b, unsigned order) noexcept {
  ThreadCache *tc = local_cache();
  if (tc != nullptr) [[likely]] {
    detail::add_owned(tc->net_buffers, std::uint64_t{0} - 1);
    detail::add_owned(tc->net_bytes, std::uint64_t{0} - block_bytes(order));
    if (order <= kMaxCachedOrder) [[likely]] {
      ThreadCache::Class &cls = tc->cls[order - kMinBlockOrder];
      if (cls.max != 0) [[likely]] {
        b->free_next = cls.head;
        cls.head = b;
        if (++cls.count > cls.max) [[unlikely]] {
          flush_class(tc, order - kMinBlockOrder, cls.batch);
        }
        return;
      }
    }
  } else {
    retired_buffers_.fetch_sub(1, std::memory_order_relaxed);
    retired_bytes_.fetch_sub(block_bytes(order), std::memory_order_relaxed);
  }
  release_uncached(b, order);
}

void BufferPool::release_uncached(BlockHeader *b, unsigned order) noexcept {
  if (order <= kMaxCachedOrder) {
    push_chain(order, b, b, 1);
    return;
  }
  FreeList &l = lists_[order - kMinBlockOrder];
  {
    std::lock_guard lock(l.mu);
    if (l.blocks < kKeepLargeBlocks && (l.blocks + 1) * block_bytes(order) <= kKeepLargeBytes) {
      b->has_message = false;  // its owner area holds the chain's info now
      ChainInfo *info = chain_info(b);
      b->free_next = nullptr;
      info->tail = b;
      info->count = 1;
      info->next_chain = l.chains;
      l.chains = b;
      ++l.blocks;
      return;
    }
  }
  // Too many kept: back to the buddy allocator, without its pages (the first
  // page stays: it holds the header and the allocator's links).
  region_.release(reinterpret_cast<std::byte *>(b) + page_bytes(),
                  block_bytes(order) - page_bytes());
  b->free_next = nullptr;
  buddy_.free_chain(b);
}

// ---- statistics -----------------------------------------------------------------------

PoolStats BufferPool::stats() const noexcept {
  std::uint64_t buffers;
  std::uint64_t bytes;
  {
    std::lock_guard lock(caches_mu_);
    buffers = retired_buffers_.load(std::memory_order_relaxed);
    bytes = retired_bytes_.load(std::memory_order_relaxed);
    for (const ThreadCache *tc = caches_; tc != nullptr; tc = tc->pool_next) {
      buffers += tc->net_buffers.load(std::memory_order_relaxed);
      bytes += tc->net_bytes.load(std::memory_order_relaxed);
    }
  }
  // Sums are exact when no thread is mid-operation; while threads are, a
  // release may be seen before its allocation: clamp the "negative" sums.
  if (static_cast<std::int64_t>(buffers) < 0) buffers = 0;
  if (static_cast<std::int64_t>(bytes) < 0) bytes = 0;
  return PoolStats{cap_, buddy_.reserved_bytes(), static_cast<std::size_t>(bytes),
                   static_cast<std::size_t>(buffers)};
}

}  // namespace rocl::impl
