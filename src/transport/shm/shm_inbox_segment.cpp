// shm_inbox_segment.cpp - making our inbox's memfd segment (see
// shm_inbox_segment.hpp).
#include "transport/shm/shm_inbox_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <new>

#include "status/status.hpp"

namespace rocl::impl::shm::detail {

InboxSegment::~InboxSegment() {
  if (seg_ != nullptr) ::munmap(seg_, seg_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

int InboxSegment::create(const shm::Config &cfg, const BufferPool *pool) {
  const std::uint64_t hb = header_bytes_for(cfg.slots);
  header_bytes_ = hb;
  ring_bytes_ = cfg.ring_bytes;
  seg_bytes_ = hb + std::uint64_t{cfg.slots} * cfg.ring_bytes;
  fd_ = static_cast<int>(
      ::syscall(SYS_memfd_create, "rocl-shm", 3u /*MFD_CLOEXEC | MFD_ALLOW_SEALING*/));
  if (fd_ < 0) return fail(ROCL_ENOMEM, "shm: memfd_create failed: %s", std::strerror(errno));
  if (::ftruncate(fd_, static_cast<off_t>(seg_bytes_)) != 0) {
    return fail(ROCL_ENOMEM, "shm: ftruncate to %zu bytes failed: %s", seg_bytes_,
                std::strerror(errno));
  }
  // Sealed so that no process (a hostile sender included) can shrink the
  // segment under our mapping and make us fault.
  if (::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail(ROCL_ENOMEM, "shm: sealing the segment failed: %s", std::strerror(errno));
  }
  void *p = ::mmap(nullptr, seg_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return fail(ROCL_ENOMEM, "shm: mmap failed: %s", std::strerror(errno));
  seg_ = static_cast<std::byte *>(p);
  hdr_ = new (seg_) SegHeader{};
  hdr_->magic = kSegMagic;
  hdr_->version = kSegVersion;
  hdr_->slots = cfg.slots;
  hdr_->ring_bytes = cfg.ring_bytes;
  hdr_->header_bytes = hb;
  challenge_ = JobSecret::random_challenge();
  std::memcpy(hdr_->challenge, challenge_.data(), 32);
  const bool has_pool = pool != nullptr && pool->region_fd() >= 0;
  hdr_->pool_fd = has_pool ? static_cast<std::uint32_t>(pool->region_fd()) : ~0u;
  hdr_->pool_pid = static_cast<std::uint32_t>(::getpid());
  hdr_->pool_bytes = has_pool ? pool->region_bytes() : 0;
  for (std::uint32_t i = 0; i < cfg.slots; ++i) new (slot_ctl(seg_, i)) SlotCtl{};
  return ROCL_OK;
}

}  // namespace rocl::impl::shm::detail
