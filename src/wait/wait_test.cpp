// wait_test.cpp - the cpu board and the waiting policy's decisions that do
// not depend on timing: counts on the board, seats that follow threads and
// go with them, dead processes' counts taken away, and what each mode does
// with a waiter's looks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "wait/cpu_board.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl::wait {
namespace {

using namespace std::chrono_literals;

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
}

// The cpu the calling thread is pinned to for a test: the first it may
// run on.
int first_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return 0;
}

// Restores the thread's affinity and the process's policy after a test.
class WaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::sched_getaffinity(0, sizeof saved_, &saved_), 0);
    cpu_ = first_cpu();
  }
  void TearDown() override {
    Seat::stand();
    ::sched_setaffinity(0, sizeof saved_, &saved_);
    configure(Mode::kAuto, 100us);
  }
  cpu_set_t saved_{};
  int cpu_ = 0;
};

// A cpu of ours on which the node's board counts nobody, or -1 if none
// was free within 10 s.
int free_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 10s) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set) && CpuBoard::node().runnable(c) == 0) return c;
    }
    std::this_thread::sleep_for(1ms);
  }
  return -1;
}

std::string board_name(const char *what) {
  return "/rocl-wait-test-" + std::to_string(::getpid()) + "-" + what;
}

TEST(WaitMode, ParsesItsThreeNamesAndNothingElse) {
  EXPECT_EQ(parse_mode("auto"), Mode::kAuto);
  EXPECT_EQ(parse_mode("spin"), Mode::kSpin);
  EXPECT_EQ(parse_mode("block"), Mode::kBlock);
  EXPECT_FALSE(parse_mode("Spin"));
  EXPECT_FALSE(parse_mode(""));
  EXPECT_FALSE(parse_mode("yield"));
  for (Mode m : {Mode::kAuto, Mode::kSpin, Mode::kBlock}) EXPECT_EQ(parse_mode(mode_name(m)), m);
}

TEST(CpuBoard, CountsWhatProcessesAddPerCpu) {
  auto board = CpuBoard::open("", 4);
  EXPECT_FALSE(board->shared());
  EXPECT_EQ(board->cpus(), 4);
  board->add(1, 2);
  board->add(3, 1);
  board->add(1, -1);
  EXPECT_EQ(board->runnable(0), 0);
  EXPECT_EQ(board->runnable(1), 1);
  EXPECT_EQ(board->runnable(3), 1);
  EXPECT_EQ(board->own(1), 1);
  board->add(7, 1);  // out of range: not counted, not a crash
  board->add(-1, 1);
  EXPECT_EQ(board->runnable(7), 0);
  EXPECT_EQ(board->runnable(-1), 0);
}

// Two processes on one board file see each other's counts; what a killed
// process left is taken away by the next that looks, and only that.
TEST(CpuBoard, ADeadProcessCountsAreTakenAway) {
  const std::string name = board_name("dead");
  auto board = CpuBoard::open(name, 2);
  ASSERT_TRUE(board->shared());
  board->add(0, 1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto mine = CpuBoard::open(name, 2);
    mine->add(0, 2);
    mine->add(1, 3);
    const char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::pause();  // killed with its counts on the board
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(board->runnable(0), 3);
  EXPECT_EQ(board->runnable(1), 3);
  EXPECT_EQ(board->reclaim_dead(), 0) << "the child is alive";
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(board->reclaim_dead(), 1);
  EXPECT_EQ(board->runnable(0), 1) << "ours stays";
  EXPECT_EQ(board->runnable(1), 0);
  EXPECT_EQ(board->reclaim_dead(), 0);
  ::close(ready[0]);
  ::close(ready[1]);
  board.reset();
  ::shm_unlink(name.c_str());
}

// At exit a process takes its counts away and frees its slot; what its
// threads give up later counts nothing.
TEST(CpuBoard, LeavingTakesTheProcessCountsAway) {
  const std::string name = board_name("leave");
  auto other = CpuBoard::open(name, 2);
  other->add(1, 1);
  {
    auto board = CpuBoard::open(name, 2);
    board->add(0, 2);
    board->add(1, 1);
    EXPECT_EQ(board->runnable(1), 2);
    board->leave();
    EXPECT_EQ(board->runnable(0), 0);
    EXPECT_EQ(board->runnable(1), 1) << "the other process's count stays";
    EXPECT_EQ(board->own(0), 0);
    board->add(0, -1);  // a thread's seat given up after leaving
    EXPECT_EQ(board->runnable(0), 0);
  }
  EXPECT_EQ(other->runnable(1), 1);
  other.reset();
  ::shm_unlink(name.c_str());
}

TEST(CpuBoard, RefusesAFileOfAnotherLayout) {
  const std::string name = board_name("layout");
  { auto two = CpuBoard::open(name, 2); }
  EXPECT_THROW(CpuBoard::open(name, 3), std::runtime_error);
  ::shm_unlink(name.c_str());
}

// A board whose maker died before it was whole (its file empty, or sized
// but without its header) is made anew by the next process: it does not
// leave every later process without a shared board.
TEST(CpuBoard, ABoardLeftHalfMadeIsMadeAnew) {
  const std::string name = board_name("half");
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  {
    auto board = CpuBoard::open(name, 2);  // an empty file: died before sizing it
    EXPECT_TRUE(board->shared());
    board->add(1, 2);
    EXPECT_EQ(board->runnable(1), 2);
  }
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  ASSERT_GT(st.st_size, 0);
  void *base = ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  std::memset(base, 0, 8);  // the magic: died after sizing it
  {
    auto again = CpuBoard::open(name, 2);
    EXPECT_TRUE(again->shared());
  }
  auto layout_checked = CpuBoard::open(name, 2);  // and is whole for the next
  EXPECT_TRUE(layout_checked->shared());
  EXPECT_THROW(CpuBoard::open(name, 3), std::runtime_error);
  ::munmap(base, st.st_size);
  ::close(fd);
  ::shm_unlink(name.c_str());
}

// A thread counts where it runs, moves with it, stands up to sleep and is
// gone when it exits.
TEST_F(WaitTest, ASeatFollowsItsThreadAndGoesWithIt) {
  CpuBoard &board = CpuBoard::node();
  pin_to(cpu_);
  const int before = board.own(cpu_);
  EXPECT_GE(Seat::sit(), 1);
  EXPECT_EQ(board.own(cpu_), before + 1);
  EXPECT_EQ(Seat::others_here(), board.runnable(cpu_) - 1);
  (void)Seat::sit();  // sitting again where it sits changes nothing
  EXPECT_EQ(board.own(cpu_), before + 1);
  Seat::stand();
  EXPECT_EQ(board.own(cpu_), before);
  Seat::stand();
  EXPECT_EQ(board.own(cpu_), before);

  std::thread t([&] {
    pin_to(cpu_);
    (void)Seat::sit();
  });
  t.join();
  EXPECT_EQ(board.own(cpu_), before) << "an exiting thread's seat goes with it";
}

TEST_F(WaitTest, AThreadThatMovedCountsOnItsNewCpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  if (CPU_COUNT(&set) < 2) GTEST_SKIP() << "one cpu";
  int other = cpu_ + 1;
  while (!CPU_ISSET(other, &set)) ++other;
  CpuBoard &board = CpuBoard::node();
  const int on_first = board.own(cpu_), on_other = board.own(other);
  pin_to(cpu_);
  (void)Seat::sit();
  pin_to(other);
  (void)Seat::sit();
  EXPECT_EQ(board.own(cpu_), on_first);
  EXPECT_EQ(board.own(other), on_other + 1);
}

TEST_F(WaitTest, AsleepStandsUpAndSitsAgainOnWaking) {
  CpuBoard &board = CpuBoard::node();
  pin_to(cpu_);
  (void)Seat::sit();
  const int seated = board.own(cpu_);
  {
    const Asleep asleep;
    EXPECT_EQ(board.own(cpu_), seated - 1);
  }
  EXPECT_EQ(board.own(cpu_), seated);
}

// block: no spin beyond 16 looks, the waiter sleeps then.
TEST_F(WaitTest, BlockModeEndsTheSpinAtTheSixteenthLook) {
  configure(Mode::kBlock, 100us);
  EXPECT_EQ(spin_budget(), 0us);
  SpinPhase phase(-1);
  for (unsigned look = 1; look < 16; ++look) EXPECT_TRUE(phase.next(look));
  EXPECT_FALSE(phase.next(16));
  EXPECT_FALSE(phase.timed_out());
  EXPECT_FALSE(phase.renew());
}

// spin: never yields, never ends but at the timeout, whoever shares the cpu.
TEST_F(WaitTest, SpinModeSpinsUntilItsTimeoutEvenOnASharedCpu) {
  configure(Mode::kSpin, 1us);
  EXPECT_EQ(spin_budget(), std::chrono::microseconds::max());
  pin_to(cpu_);
  std::atomic<bool> stop{false};
  std::atomic<bool> seated{false};
  std::thread other([&] {  // another rocl thread runnable on our cpu
    pin_to(cpu_);
    (void)Seat::sit();
    seated = true;
    while (!stop) std::this_thread::sleep_for(1ms);
  });
  while (!seated) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  SpinPhase phase(50);
  unsigned look = 1;
  while (phase.next(look)) {
    EXPECT_FALSE(phase.yielding());
    ++look;
  }
  EXPECT_TRUE(phase.timed_out());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  stop = true;
  other.join();
}

// auto: a waiter beside another rocl thread on its cpu gives the cpu away
// from its 16th look on; alone it does not.
TEST_F(WaitTest, AutoModeYieldsOnlyWhenAnotherThreadOfOursSharesTheCpu) {
  configure(Mode::kAuto, 100000us);
  Seat::stand();
  t_cpu_shared = false;
  // A cpu no other rocl thread of the node counts on (tests of other
  // processes may run beside this one): waited for up to 10 s.
  cpu_ = free_cpu();
  if (cpu_ < 0) GTEST_SKIP() << "every cpu had rocl threads of other processes for 10 s";
  pin_to(cpu_);
  {
    SpinPhase alone(-1);
    for (unsigned look = 1; look <= 64; ++look) ASSERT_TRUE(alone.next(look));
    EXPECT_FALSE(alone.yielding());
  }
  std::atomic<bool> stop{false};
  std::atomic<bool> seated{false};
  std::thread other([&] {
    pin_to(cpu_);
    (void)Seat::sit();
    seated = true;
    // Runnable and running: the yields switch to it.
    while (!stop) std::this_thread::yield();
  });
  while (!seated) std::this_thread::yield();
  SpinPhase shared(-1);
  for (unsigned look = 1; look <= 15; ++look) ASSERT_TRUE(shared.next(look));
  EXPECT_FALSE(shared.yielding()) << "the board is read at the 16th look";
  for (unsigned look = 16; look <= 200; ++look) ASSERT_TRUE(shared.next(look));
  EXPECT_TRUE(shared.yielding());
  EXPECT_TRUE(t_cpu_shared);
  SpinPhase next_wait(-1);
  EXPECT_TRUE(next_wait.yielding()) << "the next wait yields from its first look";
  stop = true;
  other.join();
}

// A thread counted on the board that never runs (asleep outside rocl):
// the yields switch to nobody, and the waiter goes back to spinning.
TEST_F(WaitTest, YieldsThatSwitchToNobodyEndTheYielding) {
  configure(Mode::kAuto, 100000us);
  pin_to(cpu_);
  Seat::stand();
  std::atomic<bool> stop{false};
  std::atomic<bool> seated{false};
  std::thread sleeper([&] {
    pin_to(cpu_);
    (void)Seat::sit();
    seated = true;
    while (!stop) std::this_thread::sleep_for(1ms);  // counted, but asleep
  });
  while (!seated) std::this_thread::yield();
  SpinPhase phase(-1);
  bool yielded = false;
  unsigned look = 1;
  for (; look <= 100000 && (!yielded || phase.yielding()); ++look) {
    if (!phase.next(look)) {
      // The budget ran out while yields kept switching: other processes
      // of a busy machine ran (ctest -j, a build), so "nobody" never held.
      stop = true;
      sleeper.join();
      GTEST_SKIP() << "yields switched to other processes for the whole budget (a busy machine)";
    }
    yielded = yielded || phase.yielding();
  }
  EXPECT_TRUE(yielded);
  EXPECT_FALSE(phase.yielding()) << "still yielding after " << look << " looks";
  stop = true;
  sleeper.join();
}

TEST_F(WaitTest, TheTimeoutEndsTheSpinInEveryMode) {
  for (Mode m : {Mode::kAuto, Mode::kSpin}) {
    configure(m, 1000000us);
    SpinPhase phase(5);
    unsigned look = 1;
    while (phase.next(look)) ++look;
    EXPECT_TRUE(phase.timed_out()) << mode_name(m);
  }
}

// The watch: contended for kContendedFor once the run delay grew by
// kContendedDelay between two readings; unknown readings change nothing.
TEST(ContentionWatch, ARunDelayOfTheThresholdMakesItContendedForAWhile) {
  using Clock = ContentionWatch::Clock;
  const auto step = std::chrono::nanoseconds(ContentionWatch::kContendedDelay).count();
  const Clock::time_point t0 = Clock::now();
  ContentionWatch w;
  w.observe(1000, t0);  // the first reading is only a base
  EXPECT_FALSE(w.contended(t0));
  w.observe(1000 + step - 1, t0);
  EXPECT_FALSE(w.contended(t0));
  w.observe(-1, t0);
  EXPECT_FALSE(w.contended(t0));
  w.observe(1000 + 2 * step, t0);
  EXPECT_TRUE(w.contended(t0));
  EXPECT_TRUE(w.contended(t0 + ContentionWatch::kContendedFor - 1ms));
  EXPECT_FALSE(w.contended(t0 + ContentionWatch::kContendedFor));
  w.observe(1000 + 2 * step + 10, t0 + ContentionWatch::kContendedFor);
  EXPECT_FALSE(w.contended(t0 + ContentionWatch::kContendedFor));
}

// The kernel's run delay grows while another thread keeps ours from its
// cpu: both spin on one cpu for 200 ms, each waits about half of it.
TEST_F(WaitTest, TheRunDelayGrowsBesideABusyThreadOnTheSameCpu) {
  if (run_delay_ns() < 0) GTEST_SKIP() << "the kernel gives no schedstat";
  pin_to(cpu_);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    pin_to(cpu_);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const std::int64_t before = run_delay_ns();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 200ms) {
  }
  const std::int64_t after = run_delay_ns();
  stop = true;
  busy.join();
  EXPECT_GE(after - before, std::chrono::nanoseconds(10ms).count());
}

// auto: a waiter kept from its cpu lately ends its spin at the 16th look
// (as with a spin budget of 0), however long its budget.
TEST_F(WaitTest, AContendedWaiterStopsSpinningAtTheSixteenthLook) {
  configure(Mode::kAuto, 100ms);
  std::thread waiter([] {  // fresh thread-locals: not yielding, no watch yet
    const auto now = std::chrono::steady_clock::now();
    contention().observe(0, now);
    contention().observe(std::chrono::nanoseconds(1ms).count(), now);
    ASSERT_TRUE(contention().contended(now));
    SpinPhase phase(-1);
    for (unsigned look = 1; look < 16; ++look) EXPECT_TRUE(phase.next(look));
    EXPECT_FALSE(phase.next(16));
    EXPECT_FALSE(phase.timed_out());
  });
  waiter.join();
}

}  // namespace
}  // namespace rocl::impl::wait
