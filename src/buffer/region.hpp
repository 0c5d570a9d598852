// region.hpp - the address space behind a buffer pool.
//
// All of the pool's mmap/munmap/madvise calls live here. The region is
// backed by a sealed memfd (shared memory) so that another process of the
// node can map it read-only and copy a large message straight out of the
// sender's buffer (the shm transport's rendezvous); it is not inherited by
// fork() (MADV_DONTFORK), so a child never writes into its parent's buffers.
#pragma once

#include <cstddef>

namespace rocl::impl {

// Maps len bytes (a multiple of the page size) of zero-filled memory aligned
// to align (a power of two), readable and writable, private, anonymous and
// without swap reservation: pages are committed only when first touched.
// Throws std::system_error if the address space cannot be reserved.
std::byte *map_memory(std::size_t len, std::size_t align);

// Unmaps what map_memory returned. Never fails for a valid mapping.
void unmap_memory(std::byte *base, std::size_t len) noexcept;

// Gives the pages of [p, p + len) back to the system; they read as zero
// afterwards. p and len must be page aligned. Errors are ignored (it is only
// an optimisation).
void release_pages(std::byte *p, std::size_t len) noexcept;

// The system page size.
std::size_t page_bytes() noexcept;

// Owner of one mapping; the pool region is a PoolRegion of a power-of-two
// size aligned to that size.
class PoolRegion {
 public:
  // Maps size bytes aligned to size (a power of two >= page_bytes()),
  // memfd-backed when the system allows (else private anonymous memory).
  explicit PoolRegion(std::size_t size);
  ~PoolRegion();
  PoolRegion(const PoolRegion &) = delete;
  PoolRegion &operator=(const PoolRegion &) = delete;

  std::byte *base() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  // The memfd behind the region (sealed against shrinking), or -1.
  int fd() const noexcept { return fd_; }
  // As release_pages, for either kind of backing.
  void release(std::byte *p, std::size_t len) const noexcept;

 private:
  std::size_t size_;
  std::byte *base_;
  int fd_ = -1;
};

}  // namespace rocl::impl
