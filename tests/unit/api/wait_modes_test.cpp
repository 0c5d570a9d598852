// wait_modes_test.cpp - how threads wait (ROCL_WAIT): a receiver whose
// spin is over sleeps in the kernel and is woken by the send; spin mode
// never sleeps; threads that share one cpu lose no wake-up. What the
// kernel says of a thread (/proc/self/task/TID/stat's state) is the
// witness: 'S' asleep, 'R' running or runnable.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace apitest {
namespace {

// The kernel's state letter of thread `tid` of this process.
char thread_state(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

int first_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int c = 0;
  while (c < CPU_SETSIZE && !CPU_ISSET(c, &set)) ++c;
  return c;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
}

// A context started with ROCL_WAIT=mode; the environment and the calling
// thread's affinity restored after.
class WaitModes : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    ASSERT_EQ(::sched_getaffinity(0, sizeof saved_, &saved_), 0);
    ::setenv("ROCL_WAIT", GetParam(), 1);
    const std::int64_t g = rocl_init();
    ASSERT_GT(g, 0) << rocl_last_error();
  }
  void TearDown() override {
    EXPECT_EQ(rocl_exit(), ROCL_OK);
    ::unsetenv("ROCL_WAIT");
    ::sched_setaffinity(0, sizeof saved_, &saved_);
  }
  cpu_set_t saved_{};
};

class SleepingModes : public WaitModes {};

// The receiver shares its cpu with this thread; its spin ends (at once in
// block mode, after its budget in auto mode) and it sleeps until the send.
TEST_P(SleepingModes, AReceiverWhoseSpinIsOverSleepsAndTheSendWakesIt) {
  const int cpu = first_cpu();
  pin_to(cpu);
  const rocl_gid_t me = must_register("waiter-main");
  const rocl_gid_t waiter = must_register("waiter");
  std::atomic<pid_t> tid{0};
  std::atomic<int> rc{-1000};
  std::uint64_t got = 0;
  std::thread receiver([&] {
    pin_to(cpu);
    tid = ::gettid();
    void *p = nullptr;
    std::size_t len = 0;
    rc = rocl_recv(waiter, me, 7, &p, nullptr, nullptr, &len, 20000);
    if (rc == ROCL_OK && len == sizeof got) std::memcpy(&got, p, sizeof got);
    if (p != nullptr) rocl_bfret(p);
  });
  while (tid == 0) std::this_thread::yield();
  char state = '?';
  const auto start = Clock::now();
  while (ms_since(start) < 10000 && (state = thread_state(tid)) != 'S') sleep_ms(1);
  EXPECT_EQ(state, 'S') << "the receiver did not sleep within 10 s";
  EXPECT_EQ(rc.load(), -1000) << "the receive returned before anything was sent";
  std::uint64_t value = 0x5eed;
  ASSERT_EQ(rocl_send(me, waiter, 7, &value, sizeof value), ROCL_OK) << rocl_last_error();
  receiver.join();
  EXPECT_EQ(rc.load(), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(got, value);
}

INSTANTIATE_TEST_SUITE_P(Wait, SleepingModes, ::testing::Values("auto", "block"));

class SpinMode : public WaitModes {};

// spin: the receiver spins until its timeout and never sleeps.
TEST_P(SpinMode, AReceiverNeverSleepsAndTimesOut) {
  const rocl_gid_t me = must_register("spinner-main");
  const rocl_gid_t waiter = must_register("spinner");
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  std::atomic<int> rc{-1000};
  std::thread receiver([&] {
    tid = ::gettid();
    void *p = nullptr;
    rc = rocl_recv(waiter, me, 7, &p, nullptr, nullptr, nullptr, 400);
    done = true;
  });
  while (tid == 0) std::this_thread::yield();
  int samples = 0, asleep = 0;
  while (!done) {
    const char state = thread_state(tid);
    if (done) break;
    ++samples;
    if (state == 'S') ++asleep;
    sleep_ms(5);
  }
  receiver.join();
  EXPECT_EQ(rc.load(), ROCL_ETIMEDOUT);
  EXPECT_GT(samples, 10);
  EXPECT_EQ(asleep, 0) << "asleep at " << asleep << " of " << samples << " looks";
}

INSTANTIATE_TEST_SUITE_P(Wait, SpinMode, ::testing::Values("spin"));

// Four threads on one cpu pass a token round; every receive has a timeout,
// so a lost wake-up fails instead of hanging.
TEST_P(SleepingModes, ThreadsOnOneCpuLoseNoWakeUp) {
  constexpr int kMembers = 4;
  const int laps = scaled(3000, 10);
  const int cpu = first_cpu();
  std::vector<rocl_gid_t> gids;
  for (int i = 0; i < kMembers; ++i) gids.push_back(must_register("ring", std::to_string(i)));
  std::atomic<int> failures{0};
  std::vector<std::thread> members;
  for (int i = 0; i < kMembers; ++i) {
    members.emplace_back([&, i] {
      pin_to(cpu);
      const rocl_gid_t me = gids[static_cast<std::size_t>(i)];
      const rocl_gid_t next = gids[static_cast<std::size_t>((i + 1) % kMembers)];
      const rocl_gid_t prev = gids[static_cast<std::size_t>((i + kMembers - 1) % kMembers)];
      std::uint64_t expect = i == 0 ? kMembers : static_cast<std::uint64_t>(i);
      if (i == 0) {
        std::uint64_t first = 1;
        if (rocl_send(me, next, 1, &first, sizeof first) != ROCL_OK) ++failures;
      }
      for (int lap = 0; lap < laps; ++lap) {
        void *p = nullptr;
        std::size_t len = 0;
        if (rocl_recv(me, prev, 1, &p, nullptr, nullptr, &len, 20000) != ROCL_OK) {
          ADD_FAILURE() << "member " << i << " lap " << lap << ": " << rocl_last_error();
          ++failures;
          return;
        }
        std::uint64_t hop = 0;
        std::memcpy(&hop, p, sizeof hop);
        rocl_bfret(p);
        if (hop != expect) {
          ADD_FAILURE() << "member " << i << " got hop " << hop << ", expected " << expect;
          ++failures;
          return;
        }
        expect += kMembers;
        if (i == 0 && lap == laps - 1) break;
        ++hop;
        if (rocl_send(me, next, 1, &hop, sizeof hop) != ROCL_OK) ++failures;
      }
    });
  }
  for (auto &t : members) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace apitest
