// buddy_allocator.hpp - the buffer pool's slow path: blocks of 2^y bytes
// carved from one region by a binary buddy system, coalescing on free.
//
// Every block starts at an address aligned to its own size. A carved block
// gets a fresh header (magic, order, state kFree); a block free here also
// keeps a valid header, and its owner area holds the free-list links (the
// pool holds free blocks, so the owner area is the pool's). Which blocks are
// free at which order is kept in bitmaps outside the region, so coalescing
// never trusts memory a user may have written. One mutex; all operations are
// O(orders).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "buffer/block.hpp"

namespace rocl::impl {

class BuddyAllocator {
 public:
  // Manages [base, base + 2^top_order), base aligned to 2^top_order, handing
  // out at most cap bytes at a time. Throws std::system_error if its bitmaps
  // cannot be mapped.
  BuddyAllocator(std::byte *base, unsigned top_order, std::size_t cap);
  ~BuddyAllocator();
  BuddyAllocator(const BuddyAllocator &) = delete;
  BuddyAllocator &operator=(const BuddyAllocator &) = delete;

  // Carves up to `want` (>= 1) blocks of 2^order bytes, as long as the cap
  // allows and a free block exists; returns them as a chain linked by
  // free_next (nullptr-terminated) and their number in *got (0: nothing).
  BlockHeader *allocate(unsigned order, std::uint32_t want, std::uint32_t *got) noexcept;

  // Gives back a nullptr-terminated chain (linked by free_next) of blocks
  // carved here, coalescing each with its free buddies.
  void free_chain(BlockHeader *chain) noexcept;

  // Bytes currently carved (<= cap).
  std::size_t reserved_bytes() const noexcept { return reserved_.load(std::memory_order_relaxed); }

  // Writes a fresh header (magic, order, state kFree, send_status kIdle).
  static void write_header(BlockHeader *b, unsigned order) noexcept;

 private:
  struct Links {
    BlockHeader *prev;
    BlockHeader *next;
  };
  static Links *links(BlockHeader *b) noexcept { return static_cast<Links *>(owner_area_of(b)); }
  BlockHeader *at(std::uintptr_t offset) const noexcept {
    return reinterpret_cast<BlockHeader *>(base_ + offset);
  }
  bool is_free(unsigned order, std::uintptr_t offset) const noexcept;
  void set_free(unsigned order, std::uintptr_t offset, bool free) noexcept;
  void push_free(std::uintptr_t offset, unsigned order) noexcept;
  void unlink(BlockHeader *b, unsigned order) noexcept;

  std::mutex mu_;
  std::byte *const base_;
  const unsigned top_order_;
  const std::size_t cap_;
  std::atomic<std::size_t> reserved_{0};
  std::byte *bitmap_ = nullptr;  // one bit per possible block of every order
  std::size_t bitmap_bytes_ = 0;
  std::uint64_t *bits_[64] = {};  // bits_[y]: the bits of order y, indexed by offset >> y
  BlockHeader *free_[64] = {};    // free_[y]: doubly linked list of free blocks of order y
  std::uint64_t nonempty_ = 0;    // bit y set iff free_[y] != nullptr
};

}  // namespace rocl::impl
