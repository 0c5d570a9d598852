// locks.hpp - rocl's two lock types, both meeting the Lockable requirements
// (lock / try_lock / unlock, so std::lock_guard and std::unique_lock work):
//   SpinLock    for critical sections of a few dozen instructions, where
//               parking a thread would cost far more than the work; never
//               sleeps in the kernel, only yields.
//   FutexMutex  for sections that may last (a sender that waits for room
//               while holding its connection): one atomic instruction each
//               way uncontended and inline, a short spin, then a futex sleep.
// Neither is recursive nor fair. std::mutex remains for cold paths.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "rocl/platform/cpu.hpp"
#include "rocl/platform/futex.hpp"

namespace rocl::platform {

// A test-and-test-and-set spin lock. It stays usable on oversubscribed
// machines (more threads than cores): after a short burst of spinning a
// waiter yields its core every round, so a preempted holder gets to run.
class SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock &) = delete;
  SpinLock &operator=(const SpinLock &) = delete;

  // Acquires the lock; blocks (spinning, then yielding) until it is free.
  // Acquire ordering: what the previous holder wrote before unlock() is
  // visible afterwards.
  void lock() noexcept {
    for (;;) {
      // The exchange takes the line exclusively; try it only when a plain
      // load says the lock is free, so that waiters spin on a shared copy.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      unsigned spins = 0;
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins < kSpinsBeforeYield) {
          ++spins;
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

  // Takes the lock if it is free right now; never blocks. True if taken.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  // Releases the lock; only by the thread holding it. Release ordering.
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  // Roughly a microsecond of pausing: long enough to cover a critical
  // section whose holder runs, short enough not to waste a time slice when
  // the holder was preempted.
  static constexpr unsigned kSpinsBeforeYield = 100;

  std::atomic<bool> locked_{false};
};

// A mutex whose uncontended lock and unlock are one atomic instruction
// each, inline (std::mutex makes two calls into the C library); contended,
// it spins briefly, then sleeps on a futex. The word: 0 free, 1 held,
// 2 held and someone may sleep.
class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex &) = delete;
  FutexMutex &operator=(const FutexMutex &) = delete;

  void lock() noexcept {
    std::uint32_t c = 0;
    if (!word_.compare_exchange_strong(c, 1, std::memory_order_acquire)) lock_slow(c);
  }
  bool try_lock() noexcept {
    std::uint32_t c = 0;
    return word_.compare_exchange_strong(c, 1, std::memory_order_acquire);
  }
  void unlock() noexcept {
    if (word_.exchange(0, std::memory_order_release) == 2) futex_wake(&word_, 1);
  }

 private:
  static constexpr int kSpinsBeforeSleep = 200;

  void lock_slow(std::uint32_t c) noexcept {
    for (int i = 0; i < kSpinsBeforeSleep && c != 2; ++i) {
      cpu_relax();
      c = 0;
      if (word_.load(std::memory_order_relaxed) == 0 &&
          word_.compare_exchange_strong(c, 1, std::memory_order_acquire)) {
        return;
      }
    }
    if (c != 2) c = word_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      futex_wait(&word_, 2u);
      c = word_.exchange(2, std::memory_order_acquire);
    }
  }

  std::atomic<std::uint32_t> word_{0};
};

}  // namespace rocl::platform
