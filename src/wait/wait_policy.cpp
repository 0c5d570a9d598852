// wait_policy.cpp - how a rocl thread waits (wait_policy.hpp).
#include "wait/wait_policy.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "rocl/platform/cpu.hpp"
#include "wait/cpu_board.hpp"

namespace rocl::impl::wait {

namespace {

constexpr std::int64_t kDefaultSpinUs = 100;
// A waiter that gives its cpu away spins this many times longer: most of
// its wall time is then the others' work on its cpu.
constexpr int kSharedSpinFactor = 10;
// Yields between two looks at the kernel's count of switches.
constexpr unsigned kYieldsPerCheck = 32;

// How long a thread trusts that its yields switch to nobody at a count of
// the board it has seen them do so at; then it tries again.
constexpr auto kTrustAlone = std::chrono::milliseconds(10);

// What this thread learned: on cpu t_alone_cpu, a board count of up to
// t_alone_count runnable threads (itself included) is threads that do not
// run (asleep outside rocl), until t_alone_until.
constinit thread_local int t_alone_cpu = -1;
constinit thread_local int t_alone_count = 0;
constinit thread_local std::chrono::steady_clock::time_point t_alone_until{};

std::atomic<Mode> g_mode{Mode::kAuto};
std::atomic<std::int64_t> g_spin_us{kDefaultSpinUs};

long involuntary_switches() noexcept {
  rusage u{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0) return -1;
  return u.ru_nivcsw;
}

}  // namespace

std::optional<Mode> parse_mode(std::string_view text) noexcept {
  if (text == "auto") return Mode::kAuto;
  if (text == "spin") return Mode::kSpin;
  if (text == "block") return Mode::kBlock;
  return std::nullopt;
}

const char *mode_name(Mode mode) noexcept {
  switch (mode) {
    case Mode::kSpin:
      return "spin";
    case Mode::kBlock:
      return "block";
    case Mode::kAuto:
      break;
  }
  return "auto";
}

void configure(Mode mode, std::chrono::microseconds spin) noexcept {
  g_mode.store(mode, std::memory_order_relaxed);
  g_spin_us.store(std::max<std::int64_t>(0, spin.count()), std::memory_order_relaxed);
  if (mode == Mode::kAuto) (void)CpuBoard::node();  // attached now, not in a first wait
}

Mode mode() noexcept {
  return g_mode.load(std::memory_order_relaxed);
}

std::chrono::microseconds spin_budget() noexcept {
  switch (mode()) {
    case Mode::kSpin:
      return std::chrono::microseconds::max();
    case Mode::kBlock:
      return std::chrono::microseconds::zero();
    case Mode::kAuto:
      break;
  }
  return std::chrono::microseconds(g_spin_us.load(std::memory_order_relaxed));
}

void SpinPhase::pause() noexcept {
  platform::cpu_relax();
}

void SpinPhase::yield() noexcept {
  ::sched_yield();
  if (++yields_ % kYieldsPerCheck != 0) return;
  // Did any of the last yields let another thread run? The kernel counts a
  // yield that switched as an involuntary switch of the yielder.
  const long now = involuntary_switches();
  if (now >= 0 && now == switches_at_) {
    yielding_ = false;
    alone_learned_ = true;
    t_cpu_shared = false;
    t_alone_until = Clock::now() + kTrustAlone;
    t_alone_count = Seat::sit(&t_alone_cpu);
  }
  switches_at_ = now;
}

// now + the budget (ten times it while yielding), never past the limit.
void SpinPhase::extend_from(Clock::time_point now) noexcept {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(limit_ - now);
  if (budget_ >= left || (yielding_ && budget_ >= left / kSharedSpinFactor)) {
    end_ = limit_;
  } else {
    end_ = now + (yielding_ ? budget_ * kSharedSpinFactor : budget_);
  }
}

void SpinPhase::start(Clock::time_point now) noexcept {
  started_ = true;
  limit_ =
      timeout_ms_ >= 0 ? now + std::chrono::milliseconds(timeout_ms_) : Clock::time_point::max();
  extend_from(now);
}

bool SpinPhase::check(Clock::time_point now) noexcept {
  if (!started_) start(now);
  if (budget_ == std::chrono::microseconds::zero()) return false;
  // Beside a thread that is not rocl's, spinning costs that thread's time
  // slice at the next wake-up (ContentionWatch).
  if (mode() == Mode::kAuto && !yielding_ && contention().contended(now)) return false;
  if (mode() == Mode::kAuto && !alone_learned_) {
    int cpu = -1;
    const int runnable = Seat::sit(&cpu);
    const bool shared =
        runnable > 1 && !(cpu == t_alone_cpu && runnable <= t_alone_count && now < t_alone_until);
    if (shared && !yielding_) {
      yielding_ = true;
      yields_ = 0;
      switches_at_ = involuntary_switches();
      extend_from(now);
    }
    if (!shared) yielding_ = false;
    t_cpu_shared = shared;
  }
  if (now >= limit_) {
    timed_out_ = true;
    return false;
  }
  return now < end_;
}

bool SpinPhase::renew() noexcept {
  if (budget_ == std::chrono::microseconds::zero()) return false;
  const Clock::time_point now = Clock::now();
  if (!started_) start(now);
  if (now >= limit_) {
    timed_out_ = true;
    return false;
  }
  extend_from(now);
  return true;
}

void ContentionWatch::observe(std::int64_t run_delay_ns, Clock::time_point now) noexcept {
  if (run_delay_ns < 0) return;
  if (last_ns_ >= 0 &&
      run_delay_ns - last_ns_ >= std::chrono::nanoseconds(kContendedDelay).count()) {
    until_ = now + kContendedFor;
  }
  last_ns_ = run_delay_ns;
}

std::int64_t run_delay_ns() noexcept {
  // Opened for each reading: a descriptor kept per thread would outlive
  // rocl_exit in the threads that stay.
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[96];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  char *end = nullptr;
  (void)std::strtoll(text, &end, 10);  // time on the cpu
  if (end == text) return -1;
  const char *delay = end;
  const long long ns = std::strtoll(delay, &end, 10);
  return end == delay || ns < 0 ? -1 : ns;
}

ContentionWatch &contention() noexcept {
  static constinit thread_local ContentionWatch watch;
  return watch;
}

Asleep::Asleep() noexcept {
  Seat::stand();
}

Asleep::~Asleep() {
  if (mode() != Mode::kAuto) return;
  (void)Seat::sit();
  contention().observe(run_delay_ns(), std::chrono::steady_clock::now());
}

bool cpu_is_shared() noexcept {
  return mode() == Mode::kAuto && Seat::others_here() > 0;
}

}  // namespace rocl::impl::wait
