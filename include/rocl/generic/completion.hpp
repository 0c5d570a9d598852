// completion.hpp - a one-shot "operation done" flag: one thread signals it,
// others wait on it. Waiting spins first (a thread-to-thread message usually
// completes within microseconds) and then sleeps on a futex, so that blocked
// receivers cost no CPU on oversubscribed machines.
//
// The signalling side is built so that the waiter may destroy the object as
// soon as it sees "done": that is what lets a receive envelope live on the
// waiting thread's stack.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

#include "rocl/platform/cpu.hpp"
#include "rocl/platform/futex.hpp"

namespace rocl::generic {

class Completion {
 public:
  Completion() = default;
  Completion(const Completion &) = delete;
  Completion &operator=(const Completion &) = delete;

  // Marks the operation done and wakes every waiter. Never blocks (one
  // syscall at most, only if a waiter is asleep). Release ordering: whatever
  // the signaller wrote before is visible to a waiter that sees "done".
  //
  // This is the signaller's last access to the object: once the exchange has
  // happened a waiter may return and free the memory. The futex wake uses
  // only the address, which the kernel does not dereference for private
  // futexes; if the memory has been reused by then, the worst case is a
  // spurious wake-up of an unrelated futex waiter, which every futex user
  // must tolerate anyway.
  void signal() noexcept {
    std::atomic<std::uint32_t> *word = &state_;
    if (word->exchange(kDone, std::memory_order_release) == kSleeper) wake_all(word);
  }

  // signal() for a signaller that is the only thread that can wait on this
  // completion (its own receive, completed by its own poll): it cannot be
  // asleep, so a release store does, without signal()'s locked exchange
  // (one per small message a waiting receiver takes from a ring itself).
  void signal_own() noexcept { state_.store(kDone, std::memory_order_release); }

  // True if signal() has happened (acquire: the signaller's writes are
  // visible). Never blocks.
  bool is_done() const noexcept { return state_.load(std::memory_order_acquire) == kDone; }

  // Makes the completion pending again so that its owner can reuse it. Only
  // for the owner while nobody can signal or wait on it concurrently.
  void reset() noexcept { state_.store(kPending, std::memory_order_relaxed); }

  // Waits until signal() has been called or the timeout expires. Returns true
  // iff done (with acquire ordering, as is_done()).
  //   timeout_ms < 0: waits forever; 0: only checks; > 0: at most that long.
  //   spin: how long to busy-wait before sleeping in the kernel (bounded by
  //   the timeout). Spinning avoids the two syscalls of a sleep when the
  //   signal is about to come; 0 sleeps at once.
  // Several threads may wait at once. A wait that times out leaves the
  // object consistent: a later signal() still works (it merely issues a wake
  // nobody needs) and a later wait() still sees it.
  bool wait(int timeout_ms, std::chrono::nanoseconds spin) noexcept {
    using Clock = std::chrono::steady_clock;
    if (is_done()) return true;
    if (timeout_ms == 0) return false;

    const bool forever = timeout_ms < 0;
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline =
        forever ? Clock::time_point::max() : start + std::chrono::milliseconds(timeout_ms);

    if (spin > std::chrono::nanoseconds::zero()) {
      Clock::time_point spin_end = start + spin;
      if (spin_end > deadline) spin_end = deadline;
      // Reading the clock costs about as much as a pause; check it only now
      // and then.
      for (unsigned i = 1;; ++i) {
        if (is_done()) return true;
        platform::cpu_relax();
        if ((i & 63u) == 0 && Clock::now() >= spin_end) break;
      }
    }

    for (;;) {
      if (announce_sleeper()) return true;
      timespec ts{};
      timespec *timeout = nullptr;
      if (!forever) {
        const auto left = deadline - Clock::now();
        if (left <= Clock::duration::zero()) return is_done();
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        ts.tv_sec = static_cast<time_t>(ns / 1000000000);
        ts.tv_nsec = static_cast<long>(ns % 1000000000);
        timeout = &ts;
      }
      // Returns at once if the word is no longer 2 (EAGAIN), on a wake, on
      // EINTR or on ETIMEDOUT; every case is handled by re-reading the state
      // and the clock at the top of the loop.
      platform::futex_wait(&state_, kSleeper, timeout);
    }
  }

 private:
  static constexpr std::uint32_t kPending = 0;
  static constexpr std::uint32_t kDone = 1;
  static constexpr std::uint32_t kSleeper = 2;  // pending, and someone may be asleep

  static void wake_all(std::atomic<std::uint32_t> *word) noexcept { platform::futex_wake(word); }

 public:
  // One sleep until signal(), or until *other (a word another party bumps
  // when it has something for the waiter, in shared memory if
  // other_shared) differs from other_seen, or until `until` (an absolute
  // CLOCK_MONOTONIC time; nullptr: none). May return spuriously. Whether
  // done (acquire, as is_done()).
  bool sleep_or(const std::atomic<std::uint32_t> *other, std::uint32_t other_seen,
                bool other_shared, const timespec *until) noexcept {
    if (announce_sleeper()) return true;
    platform::futex_wait_either(&state_, kSleeper, const_cast<std::atomic<std::uint32_t> *>(other),
                                other_seen, other_shared, until);
    return is_done();
  }

 private:
  // Announces a sleeper, so that signal() knows it has to issue a wake;
  // true if done already (acquire). If the CAS fails the state is either
  // done or already kSleeper.
  bool announce_sleeper() noexcept {
    std::uint32_t s = state_.load(std::memory_order_acquire);
    if (s == kDone) return true;
    return s == kPending &&
           !state_.compare_exchange_strong(s, kSleeper, std::memory_order_acquire,
                                           std::memory_order_acquire) &&
           s == kDone;
  }

  // The futex syscall operates on the 32-bit word inside the atomic.
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

  std::atomic<std::uint32_t> state_{kPending};
};

}  // namespace rocl::generic
