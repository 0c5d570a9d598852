// locks_test.cpp - the platform's FutexMutex and futex calls: mutual
// exclusion with more threads than cores (holders sleep and are woken), a
// try_lock that fails while held, and a futex wait that a wake ends.
#include "rocl/platform/locks.hpp"

#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <mutex>
#include <thread>
#include <vector>

#include "rocl/platform/futex.hpp"

namespace rocl::platform {
namespace {

TEST(FutexMutex, TryLockFailsWhileHeld) {
  FutexMutex mu;
  ASSERT_TRUE(mu.try_lock());
  EXPECT_FALSE(mu.try_lock());
  mu.unlock();
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

// Eight threads on two cores increment a plain counter under the lock, each
// holding it across a yield so that waiters get to sleep on the futex:
// the count comes out exact only if no two held it at once.
TEST(FutexMutex, ExcludesUnderOversubscription) {
  FutexMutex mu;
  long counter = 0;
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(mu);
        const long seen = counter;
        if (i % 64 == 0) std::this_thread::yield();
        counter = seen + 1;
      }
    });
  }
  for (auto &th : threads) th.join();
  EXPECT_EQ(counter, long{kThreads} * kRounds);
}

TEST(Futex, WaitEndsWhenWoken) {
  std::atomic<std::uint32_t> word{0};
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    word.store(1);
    futex_wake(&word);
  });
  while (word.load() == 0) futex_wait_for(&word, 0u, std::chrono::seconds(5));
  waker.join();
  EXPECT_EQ(word.load(), 1u);
}

TEST(Futex, WaitReturnsAtOnceWhenTheWordDiffers) {
  std::atomic<std::int32_t> word{7};
  const auto start = std::chrono::steady_clock::now();
  futex_wait_for(&word, 3, std::chrono::seconds(5));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

// A wait on two words ends when either changes and is woken: the second
// word a shared futex (as shm's inbox word), woken with bits as shm's
// senders do, or a plain wake of the first.
TEST(Futex, WaitOnEitherEndsWhenEitherIsWoken) {
  if (!futex_waitv_available()) GTEST_SKIP() << "no futex_waitv on this kernel";
  for (int which = 0; which < 2; ++which) {
    std::atomic<std::uint32_t> a{0}, b{0};
    std::thread waker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (which == 0) {
        a.store(1);
        futex_wake(&a);
      } else {
        b.store(1);
        futex_wake_bits(&b, INT_MAX, 2u, FutexScope::kShared);
      }
    });
    timespec until{};
    ::clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 5;
    const auto start = std::chrono::steady_clock::now();
    while (a.load() == 0 && b.load() == 0) futex_wait_either(&a, 0u, &b, 0u, true, &until);
    waker.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4)) << which;
  }
}

// A waiter naming itself with bits is not woken by wakes of other bits,
// but is by its own and by a plain wake.
TEST(Futex, WakesWithOtherBitsLeaveABitsWaiterAsleep) {
  std::atomic<std::uint32_t> word{0};
  std::atomic<int> returns{0};
  std::atomic<bool> started{false};
  std::thread waiter([&] {
    started = true;
    while (word.load() == 0) {
      futex_wait_bits(&word, 0u, 1u, nullptr, FutexScope::kShared);
      ++returns;
    }
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  futex_wake_bits(&word, INT_MAX, 2u, FutexScope::kShared);  // not its bits
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(returns.load(), 0) << "woken by a wake of other bits";
  word.store(1);
  futex_wake_bits(&word, INT_MAX, 1u, FutexScope::kShared);
  waiter.join();
  EXPECT_GE(returns.load(), 1);
}

}  // namespace
}  // namespace rocl::platform
