// shm_inbox.hpp - the receive rings of our inbox, one per claimed slot, read
// by whoever holds the inbox's try-lock (the progress thread or a polling
// caller): which slots are in use, polls over them in turn, the shortcut of
// a receive that takes the message at a ring's front, and the retry of
// slots paused for want of a pool block. The frames themselves are
// SlotReader's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/shm/shm_inbox_segment.hpp"
#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_slot_reader.hpp"

namespace rocl::impl::shm::detail {

class Inbox {
 public:
  Inbox(ShmTransportImpl &transport, const TransportEnv &env, const wire::Limits &limits,
        const JobSecret *secret, const InboxSegment &segment, PeerPools &pools,
        ShmCounters &counters) noexcept
      : reader_(transport, env, limits, secret, segment, pools, counters), segment_(segment) {}

  // Ready to read the segment's `slots` rings of `ring_bytes` each: every
  // slot gets a random seal key. ROCL_OK, or ROCL_ENOMEM from fail() (no
  // random bytes). Once, after the segment is made.
  int open(std::uint32_t slots, std::uint64_t ring_bytes);

  // Polls the rings if nobody else does (or, with wait, once the current
  // poller is done), handing `waiter` to the sink with each arrival.
  // Returns the frames handled.
  int poll(bool wait, const Waiter *waiter = nullptr) noexcept;

  // The try-lock, for a take at the rings' fronts (take_front()).
  bool try_enter() noexcept {
    return !rx_busy_.test(std::memory_order_relaxed) &&
           !rx_busy_.test_and_set(std::memory_order_acquire);
  }
  void leave() noexcept { rx_busy_.clear(std::memory_order_release); }
  // Inside try_enter()/leave(): Transport::take_arrived's look at each
  // slot's front frame; *left (if not null) set when a miss leaves
  // something for progress().
  Message *take_front(rocl_gid_t destination, const CoreHeader &pattern, bool *left);

  // Whether a slot is paused for want of a pool block (any thread).
  bool holds_unread_input() const noexcept { return reader_.paused_slots() != 0; }
  // Releases the blocks of half-received messages (at the end, no poller).
  void drop_partials();
  // A word of ours a sender's probe of our memory may read (init).
  const std::uint64_t &probe_word() const noexcept { return rx_[0].seal_key; }

 private:
  void refresh_active() {
    const std::uint32_t claims = hdr_->claims.load(std::memory_order_acquire);
    if (claims != seen_claims_) rebuild_active(claims);
  }
  void rebuild_active(std::uint32_t claims);
  int poll_once(bool caller);
  bool anything_left() const;
  bool retry_due();

  SlotReader reader_;
  const InboxSegment &segment_;
  SegHeader *hdr_ = nullptr;  // segment_'s, as are the slots' controls:
  SlotCtl *ctls_ = nullptr;   // slot i's is ctls_ + i
  std::atomic_flag rx_busy_ = ATOMIC_FLAG_INIT;
  std::vector<RxSlot> rx_;             // only by the holder of rx_busy_ (as the two below)
  std::vector<std::uint32_t> active_;  // claimed slots, in index order
  std::size_t first_slot_ = 0;         // where in active_ a caller's poll starts
  std::uint32_t seen_claims_ = 0;
  // When poll_once retries paused slots next.
  std::chrono::steady_clock::time_point next_retry_{};
};

}  // namespace rocl::impl::shm::detail
