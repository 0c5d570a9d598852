// shm_inbox.cpp - polling the receive rings of our inbox (see
// shm_inbox.hpp; design: shm_transport.hpp).
#include "transport/shm/shm_inbox.hpp"

#include <sched.h>

#include <algorithm>

#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace rocl::impl::shm::detail {

int Inbox::open(std::uint32_t slots, std::uint64_t ring_bytes) {
  hdr_ = segment_.header();
  ctls_ = segment_.ctl(0);
  rx_.resize(slots);
  std::vector<std::uint64_t> keys(slots);
  if (!JobSecret::random_bytes(keys.data(), keys.size() * sizeof keys[0])) {
    return fail(ROCL_ENOMEM, "shm: the random source gave no bytes for the seal keys");
  }
  for (std::uint32_t i = 0; i < slots; ++i) {
    rx_[i].seal_key = keys[i] | 1;  // odd: a seal is never 0 (shm_layout.hpp)
    rx_[i].ring = segment_.ring(i);
    rx_[i].ring_bytes = ring_bytes;
    ctls_[i].seal_key.store(rx_[i].seal_key, std::memory_order_relaxed);
  }
  active_.reserve(slots);
  return ROCL_OK;
}

// Only a short frame of a slot in use, between messages, not paused, is
// taken (SlotReader::take_front); anything else is progress()'s, which also
// says what is wrong with a bad frame.
Message *Inbox::take_front(rocl_gid_t destination, const CoreHeader &pattern, bool *left) {
  Message *m = nullptr;
  refresh_active();
  const std::size_t count = active_.size();
  for (std::size_t j = 0; j < count && m == nullptr; ++j) {
    std::size_t at = first_slot_ + j;
    if (at >= count) at -= count;
    const std::uint32_t i = active_[at];
    m = reader_.take_front(rx_[i], ctls_ + i, destination, pattern, left == nullptr);
  }
  // Asked after a miss only: a take's path stays as it was.
  if (m == nullptr && left != nullptr && anything_left()) *left = true;
  return m;
}

void Inbox::drop_partials() {
  for (auto &s : rx_) reader_.drop_partial(s);
}

// After take_front missed on every slot, rx_busy_ held: whether one holds
// something for progress() (a frame at its front, which take_front left;
// a hello to check; a message half read; one waiting for a pool block).
bool Inbox::anything_left() const {
  for (const std::uint32_t i : active_) {
    const RxSlot &s = rx_[i];
    if (s.state == RxSlot::kPoisoned) continue;
    if (s.state != RxSlot::kOk || s.paused || s.block != nullptr) return true;
    if (s.sealed_at(s.at(s.tail))) return true;
  }
  return false;
}

// Polls the rings if nobody else does (or, with wait, once the current
// poller is done). Returns the frames handled.
//
// A waiting thread yields its cpu after a short spin: the poller it waits
// for may share that cpu (a process pinned to one core), and then a plain
// spin lasts until the scheduler preempts it, keeping the poller from its
// work (compare's rocl-mpi-shm streams, one core per rank, show it).
int Inbox::poll(bool wait, const Waiter *waiter) noexcept {
  constexpr int kSpinsBeforeYield = 64;
  // Test before test-and-set: many spinning callers must not keep
  // writing the flag's cache line while one of them polls.
  int spins = 0;
  while (rx_busy_.test(std::memory_order_relaxed) ||
         rx_busy_.test_and_set(std::memory_order_acquire)) {
    if (!wait) return 0;
    if (++spins < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      ::sched_yield();
    }
  }
  reader_.set_waiter(waiter);
  const int n = poll_once(!wait);
  reader_.set_waiter(nullptr);
  rx_busy_.clear(std::memory_order_release);
  return n;
}

// Rebuilds the list of claimed slots when a sender claimed one since we
// last looked, so that a poll reads only the slots in use.
void Inbox::rebuild_active(std::uint32_t claims) {
  seen_claims_ = claims;
  active_.clear();
  for (std::uint32_t i = 0; i < rx_.size(); ++i) {
    if (rx_[i].state == RxSlot::kPoisoned) continue;
    if (rx_[i].state != RxSlot::kNew || ctls_[i].owner.load(std::memory_order_acquire) != 0) {
      active_.push_back(i);
    }
  }
}

// A caller stops at the first whole message: it is likely the one it waits
// for, and looking at once at the next frame's place would fetch a cache
// line the sender still holds from its last lap, on the way back to it.
// Unless the slot's last message too was there at the first look (its
// sender is ahead, streaming): then the next frames are written already,
// and the caller drains them too (up to the round's bound), so that the
// receives after this one find their messages queued instead of each
// polling, waiting and being signalled for one; but not for a rocl_recv
// whose next receives take them from the ring
// themselves, at less cost than through the mailbox (take_arrived;
// Waiter::takes_arrived).
// The next poll then starts at the slot after that one, so that a sender
// that streams does not keep a caller from the others' messages.
int Inbox::poll_once(bool caller) {
  int n = 0;
  refresh_active();
  const std::size_t count = active_.size();
  if (first_slot_ >= count) first_slot_ = 0;
  const bool retry = reader_.paused_slots() != 0 && retry_due();
  for (std::size_t j = 0; j < count; ++j) {
    std::size_t at = first_slot_ + j;
    if (at >= count) at -= count;
    const std::uint32_t i = active_[at];
    RxSlot &s = rx_[i];
    if (s.state == RxSlot::kPoisoned || (s.paused && !retry)) continue;
    SlotCtl *ctl = ctls_ + i;
    // Drain a bounded number of frames per slot per round for fairness.
    bool took_message = false;
    if (s.found_in_row >= 2) s.prefetch_ahead(1, kDrainPrefetchFrames);
    for (int k = 0; k < kDrainFrames; ++k) {
      const int r = reader_.poll_slot(i, s, ctl);
      if (r <= 0) {
        if (r == 0) s.found_in_row = 0;
        break;
      }
      if (s.paused) reader_.resume(s);
      ++n;
      if (s.found_in_row >= 2) {
        // Behind a streaming sender: ask for the lines a few frames on now,
        // so that their transfers overlap this one's handling.
        s.prefetch_ahead(kDrainPrefetchFrames, kDrainPrefetchFrames);
      }
      if (caller && r == SlotReader::kMessageDone) {
        took_message = true;
        // Not behind a stream, or the caller takes its next messages
        // from the ring itself (Waiter::takes_arrived): stop at the first.
        if (++s.found_in_row < 2 ||
            (reader_.waiter() != nullptr && reader_.waiter()->takes_arrived))
          break;
      }
    }
    if (took_message) {
      first_slot_ = at + 1;
      return n;
    }
  }
  return n;
}

// Whether paused slots are due for another try (every kRetryMs: a failing
// allocation is not free, the pool reclaims its caches first).
bool Inbox::retry_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_retry_) return false;
  next_retry_ = now + std::chrono::milliseconds(shm::kRetryMs);
  return true;
}

}  // namespace rocl::impl::shm::detail
