// shm_inbox_segment.hpp - our inbox's memfd segment: made, sealed against
// resizing and mapped once, its header and slot controls written, kept until
// the transport ends (layout: shm_layout.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_transport.hpp"

namespace rocl::impl::shm::detail {

class InboxSegment {
 public:
  InboxSegment() = default;
  InboxSegment(const InboxSegment &) = delete;
  InboxSegment &operator=(const InboxSegment &) = delete;
  // Unmaps the segment and closes its descriptor (peers' mappings stay).
  ~InboxSegment();

  // Makes the segment for cfg (checked by the caller): a header announcing
  // cfg's slots and rings, a fresh challenge and `pool` (ours, or nullptr),
  // whose memfd senders may map; every slot free. ROCL_OK or the code of
  // fail() saying why not. Once.
  int create(const shm::Config &cfg, const BufferPool *pool);

  SegHeader *header() const noexcept { return hdr_; }
  SlotCtl *ctl(std::uint32_t i) const noexcept { return slot_ctl(seg_, i); }
  // Slot i's ring (by our own layout: senders may write the header).
  std::byte *ring(std::uint32_t i) const noexcept {
    return seg_ + header_bytes_ + std::uint64_t{i} * ring_bytes_;
  }
  // What a sender needs to find the segment: our descriptor and its size.
  int fd() const noexcept { return fd_; }
  std::size_t bytes() const noexcept { return seg_bytes_; }
  // What a sender's Hello proves the job secret on.
  const JobSecret::Challenge &challenge() const noexcept { return challenge_; }

 private:
  int fd_ = -1;
  std::byte *seg_ = nullptr;
  std::size_t seg_bytes_ = 0;
  SegHeader *hdr_ = nullptr;
  std::uint64_t header_bytes_ = 0;
  std::uint64_t ring_bytes_ = 0;
  JobSecret::Challenge challenge_{};
};

}  // namespace rocl::impl::shm::detail
