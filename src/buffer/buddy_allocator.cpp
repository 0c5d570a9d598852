// buddy_allocator.cpp - binary buddy system over the pool region.
#include "buffer/buddy_allocator.hpp"

#include <algorithm>
#include <bit>

#include "buffer/region.hpp"

namespace rocl::impl {

namespace {
inline void store_magic(BlockHeader *b, std::uint64_t v) noexcept {
  std::atomic_ref<std::uint64_t>(b->magic).store(v, std::memory_order_relaxed);
}
}  // namespace

void BuddyAllocator::write_header(BlockHeader *b, unsigned order) noexcept {
  // magic and order are read without a lock by BufferPool::find, hence the
  // atomic_refs (plain moves on every target we build for).
  store_magic(b, kBlockMagic ^ reinterpret_cast<std::uintptr_t>(b));
  std::atomic_ref<std::uint8_t>(b->order).store(static_cast<std::uint8_t>(order),
                                                std::memory_order_relaxed);
  b->state.store(BlockState::kFree, std::memory_order_relaxed);
  b->send_status.store(SendStatus::kIdle, std::memory_order_relaxed);
  b->return_after_send = false;
  b->lent = false;
  b->has_message = false;
  b->network = 0;
  b->free_next = nullptr;
}

BuddyAllocator::BuddyAllocator(std::byte *base, unsigned top_order, std::size_t cap)
    : base_(base), top_order_(top_order), cap_(cap) {
  // Bits of order y: 2^(top - y), rounded up to whole words.
  std::size_t words = 0;
  std::size_t first_word[64] = {};
  for (unsigned y = kMinBlockOrder; y <= top_order_; ++y) {
    first_word[y] = words;
    words += std::max<std::size_t>(1, (std::size_t{1} << (top_order_ - y)) / 64);
  }
  const std::size_t page = page_bytes();
  bitmap_bytes_ = (words * sizeof(std::uint64_t) + page - 1) / page * page;
  bitmap_ = map_memory(bitmap_bytes_, page);  // zero: nothing free yet
  for (unsigned y = kMinBlockOrder; y <= top_order_; ++y) {
    bits_[y] = reinterpret_cast<std::uint64_t *>(bitmap_) + first_word[y];
  }
  push_free(0, top_order_);
}

BuddyAllocator::~BuddyAllocator() {
  unmap_memory(bitmap_, bitmap_bytes_);
}

bool BuddyAllocator::is_free(unsigned order, std::uintptr_t offset) const noexcept {
  const std::uintptr_t i = offset >> order;
  return (bits_[order][i / 64] >> (i % 64)) & 1u;
}

void BuddyAllocator::set_free(unsigned order, std::uintptr_t offset, bool free) noexcept {
  const std::uintptr_t i = offset >> order;
  const std::uint64_t bit = std::uint64_t{1} << (i % 64);
  if (free) {
    bits_[order][i / 64] |= bit;
  } else {
    bits_[order][i / 64] &= ~bit;
  }
}

void BuddyAllocator::push_free(std::uintptr_t offset, unsigned order) noexcept {
  BlockHeader *b = at(offset);
  write_header(b, order);
  Links *l = links(b);
  l->prev = nullptr;
  l->next = free_[order];
  if (free_[order] != nullptr) links(free_[order])->prev = b;
  free_[order] = b;
  nonempty_ |= std::uint64_t{1} << order;
  set_free(order, offset, true);
}

void BuddyAllocator::unlink(BlockHeader *b, unsigned order) noexcept {
  Links *l = links(b);
  if (l->prev != nullptr) {
    links(l->prev)->next = l->next;
  } else {
    free_[order] = l->next;
  }
  if (l->next != nullptr) links(l->next)->prev = l->prev;
  if (free_[order] == nullptr) nonempty_ &= ~(std::uint64_t{1} << order);
  set_free(order, static_cast<std::uintptr_t>(reinterpret_cast<std::byte *>(b) - base_), false);
}

BlockHeader *BuddyAllocator::allocate(unsigned order, std::uint32_t want,
                                      std::uint32_t *got) noexcept {
  *got = 0;
  if (order < kMinBlockOrder || order > top_order_) return nullptr;
  const std::size_t size = std::size_t{1} << order;
  BlockHeader *head = nullptr;
  BlockHeader **link = &head;
  std::lock_guard lock(mu_);
  std::size_t reserved = reserved_.load(std::memory_order_relaxed);
  while (*got < want && cap_ - reserved >= size) {
    const std::uint64_t candidates = nonempty_ & ~((std::uint64_t{1} << order) - 1);
    if (candidates == 0) break;
    unsigned k = static_cast<unsigned>(std::countr_zero(candidates));
    BlockHeader *b = free_[k];
    unlink(b, k);
    const auto offset = static_cast<std::uintptr_t>(reinterpret_cast<std::byte *>(b) - base_);
    while (k > order) {  // split, keeping the lower half
      --k;
      push_free(offset + (std::uintptr_t{1} << k), k);
    }
    write_header(b, order);
    *link = b;
    link = &b->free_next;
    reserved += size;
    ++*got;
  }
  reserved_.store(reserved, std::memory_order_relaxed);
  return head;
}

void BuddyAllocator::free_chain(BlockHeader *chain) noexcept {
  std::lock_guard lock(mu_);
  std::size_t reserved = reserved_.load(std::memory_order_relaxed);
  while (chain != nullptr) {
    BlockHeader *next = chain->free_next;
    unsigned order = std::atomic_ref<std::uint8_t>(chain->order).load(std::memory_order_relaxed);
    auto offset = static_cast<std::uintptr_t>(reinterpret_cast<std::byte *>(chain) - base_);
    reserved -= std::size_t{1} << order;
    while (order < top_order_) {
      const std::uintptr_t buddy = offset ^ (std::uintptr_t{1} << order);
      if (!is_free(order, buddy)) break;
      unlink(at(buddy), order);
      // The upper half's header is now inside the merged block: erase it so
      // that find() never mistakes it for a block.
      store_magic(at(std::max(offset, buddy)), 0);
      offset = std::min(offset, buddy);
      ++order;
    }
    push_free(offset, order);
    chain = next;
  }
  reserved_.store(reserved, std::memory_order_relaxed);
}

}  // namespace rocl::impl
