// shm_poll_lease.hpp - the `pollers` word of our inbox and its lease
// (shm_transport.hpp: callers' progress). While callers of this process poll
// the rings the word is raised: senders do not wake the progress thread,
// which sleeps. It is raised when polling starts, not per receive, and the
// thread lowers it once a whole lease period went by without a poll.
//
// No shared counter of polling callers: a count raised in begin() and
// lowered in end() would cost two locked read-modify-writes per receive, one
// of them between a message's arrival and the receive's return. The thread
// tells instead from the polls count, which every poll bumps with a plain
// store. Should it lower the word just as a caller begins (seeing it still
// raised), that caller's next poll raises it again (t_poll_spins: only a
// caller between begin() and end() does, not a lone rocl_test).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_transport.hpp"

namespace rocl::impl::shm::detail {

// begin()s of this thread not ended yet, on any inbox.
inline constinit thread_local int t_poll_spins = 0;

class PollLease {
 public:
  // The inbox's header, whose `pollers` word this lease raises and lowers,
  // and the lease's first period (Config::poll_lease_us). Once, before any
  // other call.
  void attach(SegHeader *hdr, std::int64_t first_period_us) noexcept {
    hdr_ = hdr;
    first_us_ = first_period_us;
    max_us_ = std::max(first_period_us, shm::kMaxPollLeaseUs);
    lease_us_ = first_period_us;
  }

  // A caller's poll (progress(), take_arrived()): counted, so that the
  // thread keeps the word raised. Any thread; inline: every poll counts.
  void count_poll() noexcept {
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // count_poll(), and the word raised again if this thread is between
  // begin() and end() and the thread lowered it meanwhile.
  void count_progress() noexcept {
    count_poll();
    if (t_poll_spins != 0 && !raised_.load(std::memory_order_relaxed)) raise();
  }
  // Transport::poll_begin/poll_end (contract in transport.hpp). end(true):
  // the thread takes over at once (woken; it lowers the word).
  void begin() noexcept {
    ++t_poll_spins;
    if (!raised_.load(std::memory_order_acquire)) raise();
  }
  void end(bool will_sleep) noexcept;
  // Whether the word is raised: callers poll, or their lease runs.
  bool callers_poll() const noexcept { return raised_.load(std::memory_order_acquire); }

  // ---- The progress thread's side (one thread) -----------------------------
  // Lowers the word if no caller polled since the last period (or one
  // handed back before sleeping). True if it lowered it: the thread must
  // then poll once (Dekker with the senders' wake check: a frame published
  // while it was raised woke nobody).
  bool lower_if_idle() noexcept;
  // Nobody polls now: the next lease starts with the shortest period.
  void restart_period() noexcept { lease_us_ = first_us_; }
  // How long the thread may sleep, given it would sleep `us`
  // microseconds: a period if callers poll (the next then twice as long,
  // up to kMaxPollLeaseUs), else `us`, and then a raise() wakes it if
  // that is longer than a period. Call woke() after the sleep.
  long sleep_bound(long us) noexcept;
  void woke() noexcept { long_sleep_.store(false, std::memory_order_relaxed); }

 private:
  void raise() noexcept;

  SegHeader *hdr_ = nullptr;
  // Whether hdr_->pollers is raised (changed under mu_), callers' polls
  // (the thread's copy of it from the last period, under mu_), and
  // whether a caller handed back.
  std::atomic<bool> raised_{false};
  std::atomic<std::uint64_t> polls_{0};
  std::uint64_t seen_polls_ = 0;
  std::atomic<bool> hand_back_{false};
  // The thread sleeps longer than a lease period (nobody polled when it
  // went to sleep): raise() must wake it, or the lease it starts would be
  // checked only when that sleep ends.
  std::atomic<bool> long_sleep_{false};
  std::mutex mu_;
  // The current lease period (the thread's own), its first and longest.
  std::int64_t lease_us_ = shm::kPollLeaseUs;
  std::int64_t first_us_ = shm::kPollLeaseUs;
  std::int64_t max_us_ = shm::kMaxPollLeaseUs;
};

}  // namespace rocl::impl::shm::detail
