// completion_test.cpp - SpinLock and Completion: mutual exclusion under
// oversubscription, the three timeout modes of Completion::wait, and that a
// waiter may destroy a Completion as soon as it sees it done.
#include "rocl/generic/completion.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rocl/generic/spin_lock.hpp"

namespace rocl::generic {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(SpinLock, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

// 16 threads on however few cores the machine has: a holder that gets
// preempted must still get to release the lock (spinners yield).
TEST(SpinLock, ExcludesUnderOversubscription) {
  SpinLock lock;
  std::uint64_t counter = 0;  // deliberately not atomic: the lock protects it
  constexpr int kThreads = 16;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        std::lock_guard<SpinLock> guard(lock);
        ++counter;
      }
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kIterations);
}

TEST(Completion, TimeoutZeroOnlyChecks) {
  Completion c;
  EXPECT_FALSE(c.is_done());
  EXPECT_FALSE(c.wait(0, 1ms));
  c.signal();
  EXPECT_TRUE(c.is_done());
  EXPECT_TRUE(c.wait(0, 0ns));
  c.reset();
  EXPECT_FALSE(c.is_done());
}

TEST(Completion, TimesOutAfterAtLeastTheTimeout) {
  for (auto spin :
       {std::chrono::nanoseconds(0), std::chrono::nanoseconds(5ms), std::chrono::nanoseconds(1s)}) {
    Completion c;
    const auto start = Clock::now();
    EXPECT_FALSE(c.wait(20, spin));
    EXPECT_GE(Clock::now() - start, 20ms);
    EXPECT_FALSE(c.is_done());
  }
}

// A wait that timed out leaves a sleeper mark behind; signal() and later
// waits must not be confused by it.
TEST(Completion, SignalAfterTimedOutWait) {
  Completion c;
  EXPECT_FALSE(c.wait(5, 0ns));
  c.signal();
  EXPECT_TRUE(c.is_done());
  EXPECT_TRUE(c.wait(-1, 0ns));
  EXPECT_TRUE(c.wait(10, 0ns));
}

TEST(Completion, WaitForeverWokenByAnotherThread) {
  for (auto spin : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(50us)}) {
    Completion c;
    int payload = 0;  // published by signal(), read after wait()
    std::thread signaller([&] {
      std::this_thread::sleep_for(30ms);
      payload = 42;
      c.signal();
    });
    EXPECT_TRUE(c.wait(-1, spin));
    EXPECT_EQ(payload, 42);
    signaller.join();
  }
}

TEST(Completion, TimedWaitWokenBeforeTimeout) {
  Completion c;
  std::thread signaller([&] {
    std::this_thread::sleep_for(10ms);
    c.signal();
  });
  EXPECT_TRUE(c.wait(60000, 0ns));
  signaller.join();
}

TEST(Completion, SeveralWaiters) {
  Completion c;
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&, i] {
      if (c.wait(-1, std::chrono::microseconds(i * 10))) woken.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(20ms);
  c.signal();
  for (auto &t : waiters) t.join();
  EXPECT_EQ(woken.load(), 4);
}

// The waiter frees the Completion as soon as wait() returns; a signaller that
// touched it after the exchange would be caught by ASan (use after free) or
// TSan (race with the delete).
TEST(Completion, WaiterMayDestroyRightAfterWait) {
  constexpr int kIterations = 20000;
  std::atomic<Completion *> slot{nullptr};
  std::thread signaller([&] {
    for (int i = 0; i < kIterations; ++i) {
      Completion *c;
      while ((c = slot.exchange(nullptr, std::memory_order_acquire)) == nullptr) {
        std::this_thread::yield();
      }
      c->signal();
    }
  });
  for (int i = 0; i < kIterations; ++i) {
    auto *c = new Completion;
    slot.store(c, std::memory_order_release);
    // Alternate between catching the signal while spinning and in the futex.
    ASSERT_TRUE(c->wait(-1, (i % 2 != 0) ? std::chrono::nanoseconds(20us) : 0ns));
    delete c;
  }
  signaller.join();
}

}  // namespace
}  // namespace rocl::generic

// signal_own: the signaller is the only waiter (its own receive, completed
// by its own poll): a plain store, after which a wait returns at once and
// the completion can be reset and used as before.
namespace rocl::generic {
namespace {
TEST(Completion, SignalOwnCompletesForTheSignallingThread) {
  Completion c;
  EXPECT_FALSE(c.is_done());
  c.signal_own();
  EXPECT_TRUE(c.is_done());
  EXPECT_TRUE(c.wait(0, std::chrono::nanoseconds(0)));
  c.reset();
  EXPECT_FALSE(c.wait(0, std::chrono::nanoseconds(0)));
  c.signal_own();
  EXPECT_TRUE(c.wait(-1, std::chrono::nanoseconds(0)));
}
}  // namespace
}  // namespace rocl::generic
