// spin_lock.hpp - the default lock of generic::Communicator: a spin lock for
// critical sections of a few dozen instructions, where parking a thread in
// the kernel would cost far more than the work it protects.
//
// It stays usable on oversubscribed machines (many more threads than cores):
// after a short burst of spinning a waiter yields its core every round, so a
// preempted holder gets to run and release the lock instead of being starved
// by its spinning peers.
#pragma once

#include <atomic>
#include <thread>

namespace rocl::generic {

// A test-and-test-and-set lock meeting the Lockable requirements
// (lock/unlock/try_lock), so it works with std::lock_guard and friends.
// Not recursive, not fair. Never allocates, never throws, never sleeps in the
// kernel (it only yields).
class SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock &) = delete;
  SpinLock &operator=(const SpinLock &) = delete;

  // Acquires the lock; blocks (spinning, then yielding) until it is free.
  // Acquire ordering: everything the previous holder wrote before unlock()
  // is visible afterwards.
  void lock() noexcept {
    for (;;) {
      // The exchange is what takes the cache line exclusively; try it only
      // when a plain load says the lock is free, so that waiters spin on a
      // shared copy and do not bounce the line between cores.
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

  // Releases the lock; must be called by the thread holding it. Release
  // ordering for the writes made while holding it.
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  // Roughly a microsecond of pausing: long enough to cover a critical section
  // whose holder is running, short enough not to waste a time slice when the
  // holder has been preempted.
  static constexpr unsigned kSpinsBeforeYield = 100;

  static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace rocl::generic
