// shm_poll_lease.cpp - raising and lowering our inbox's `pollers` word (see
// shm_poll_lease.hpp).
#include "transport/shm/shm_poll_lease.hpp"

#include <algorithm>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

void PollLease::end(bool will_sleep) noexcept {
  --t_poll_spins;
  if (!will_sleep) return;  // the lease: `pollers` stays raised
  hand_back_.store(true, std::memory_order_relaxed);
  wake_inbox_thread(hdr_);  // the thread takes over at once (and lowers `pollers`)
}

// Once raised, senders stop waking the thread, and only the thread ends
// the lease: if it sleeps long (nobody was polling), it is woken to sleep a
// lease period instead. Without that, a caller that got its message and
// then blocked elsewhere (a barrier, a lock) while its process's other
// threads slept in receives would stall them all for the thread's whole
// long sleep (rocl-bench mpi's mt_rate shows it).
// Dekker with sleep_bound(): we store raised_ then load long_sleep_, the
// thread stores long_sleep_ then loads raised_.
void PollLease::raise() noexcept {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (raised_.load(std::memory_order_relaxed)) return;
    hdr_->pollers.store(1, std::memory_order_seq_cst);
    raised_.store(true, std::memory_order_seq_cst);
  }
  if (long_sleep_.load(std::memory_order_seq_cst)) wake_inbox_thread(hdr_);
}

bool PollLease::lower_if_idle() noexcept {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!raised_.load(std::memory_order_relaxed)) return false;
    const std::uint64_t polls = polls_.load(std::memory_order_relaxed);
    if (!hand_back_.load(std::memory_order_relaxed) && polls != seen_polls_) {
      seen_polls_ = polls;  // polled during this period: the lease runs on
      return false;
    }
    hand_back_.store(false, std::memory_order_relaxed);
    raised_.store(false, std::memory_order_seq_cst);
    hdr_->pollers.store(0, std::memory_order_seq_cst);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return true;
}

long PollLease::sleep_bound(long us) noexcept {
  if (us > lease_us_) long_sleep_.store(true, std::memory_order_seq_cst);
  if (callers_poll()) {
    long_sleep_.store(false, std::memory_order_relaxed);
    us = std::min<long>(us, lease_us_);
    lease_us_ = std::min(lease_us_ * 2, max_us_);  // polled: the next is longer
  }
  return us;
}

}  // namespace rocl::impl::shm::detail
