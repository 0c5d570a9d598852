// region.cpp - mmap/munmap/madvise for the buffer pool.
#include "buffer/region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

namespace rocl::impl {

std::size_t page_bytes() noexcept {
  static const std::size_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t{4096};
  }();
  return page;
}

std::byte *map_memory(std::size_t len, std::size_t align) {
  const std::size_t page = page_bytes();
  if (align < page) align = page;
  // Over-reserve by align - page so that an aligned start exists, then trim
  // the unaligned head and the tail.
  const std::size_t extra = align - page;
  if (len == 0 || len > SIZE_MAX - extra) {
    throw std::system_error(std::make_error_code(std::errc::not_enough_memory),
                            "rocl buffer pool: region size out of range");
  }
  const std::size_t span = len + extra;
  void *p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw std::system_error(
        errno, std::generic_category(),
        "rocl buffer pool: cannot reserve " + std::to_string(len) + " bytes of address space");
  }
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (start + align - 1) & ~(std::uintptr_t{align} - 1);
  const std::size_t head = aligned - start;
  const std::size_t tail = span - head - len;
  if (head != 0) ::munmap(p, head);
  if (tail != 0) ::munmap(reinterpret_cast<void *>(aligned + len), tail);
  return reinterpret_cast<std::byte *>(aligned);
}

void unmap_memory(std::byte *base, std::size_t len) noexcept {
  if (base != nullptr) ::munmap(base, len);
}

void release_pages(std::byte *p, std::size_t len) noexcept {
  if (len != 0) ::madvise(p, len, MADV_DONTNEED);
}

namespace {
// A memfd of len bytes sealed against resizing, mapped over [base, base+len)
// (which map_memory reserved). -1 if any step fails: the private anonymous
// mapping then stays, and only the shm rendezvous is unavailable.
int back_with_memfd(std::byte *base, std::size_t len) noexcept {
  const int fd = static_cast<int>(
      ::syscall(SYS_memfd_create, "rocl-pool", 3u /*MFD_CLOEXEC | MFD_ALLOW_SEALING*/));
  if (fd < 0) return -1;
  if (::ftruncate(fd, static_cast<off_t>(len)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
      ::mmap(base, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0) ==
          MAP_FAILED) {
    ::close(fd);
    return -1;
  }
  ::madvise(base, len, MADV_DONTFORK);
  return fd;
}
}  // namespace

PoolRegion::PoolRegion(std::size_t size) : size_(size), base_(map_memory(size, size)) {
  fd_ = back_with_memfd(base_, size_);
  if (fd_ < 0) {  // MAP_FIXED may have failed half-way: start from a clean private mapping
    unmap_memory(base_, size_);
    base_ = map_memory(size_, size_);
  }
}

PoolRegion::~PoolRegion() {
  unmap_memory(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

void PoolRegion::release(std::byte *p, std::size_t len) const noexcept {
  // Shared memory keeps its pages on MADV_DONTNEED; MADV_REMOVE frees them.
  if (len != 0) ::madvise(p, len, fd_ >= 0 ? MADV_REMOVE : MADV_DONTNEED);
}

}  // namespace rocl::impl
