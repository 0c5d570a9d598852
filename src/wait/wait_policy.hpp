// wait_policy.hpp - how a rocl thread waits: spin, give its cpu away, or
// sleep in the kernel. Every wait of the library (a receive, a request, a
// send waiting for its receiver, a transport's idle thread) asks here.
//
// Why it matters: a thread that spins keeps its cpu, which pays off only
// while the thread it waits for runs on another one (a hop then costs a
// cache line's transfer, well under a microsecond); if that thread is
// queued behind the spinner on the same cpu, each hop waits for the
// spinner's time slice or budget to end (tens of microseconds to
// milliseconds). Sleeping in the kernel costs a wake-up of tens of
// microseconds on the other cpu. So:
//
//   auto (ROCL_WAIT=auto, the default): the first looks spin; then the
//     waiter seats itself on the node's cpu board (cpu_board.hpp) and
//     looks whether another rocl thread is runnable on its cpu. Alone, it
//     spins with PAUSE for ROCL_SPIN_US; not alone, it calls sched_yield
//     between its looks, so that the others on its cpu run at once, for ten
//     times as long (the time is mostly theirs). Should its yields switch
//     to nobody (the kernel's count of this thread's involuntary context
//     switches does not move over 32 of them: the board counted a thread
//     that is asleep elsewhere), it spins as if alone, and its waits trust
//     that count of the board for 10 ms. Then it sleeps in the kernel (and
//     stands up from the board) until a sender wakes it.
//   spin: spins with PAUSE until done or timed out; never yields, never
//     sleeps (for benchmarks on dedicated cpus).
//   block: looks 16 times (a microsecond or so), then sleeps (for
//     machines where cpus are scarce and latency does not matter).
//
// A thread that is not rocl's (a compute loop) is not on the board. What
// shows it is the kernel's own account of this thread: the time it spent
// runnable but not running (schedstat's run delay), read each time it
// wakes from a sleep. A spinner beside a compute loop has used its share
// of the cpu by the time it sleeps, so once woken it waits for the loop's
// slice (milliseconds) instead of running at once; a thread that slept
// without spinning runs at once. So a waiter that was kept from running
// for kContendedDelay since its last wake-up does not spin (its waits end
// their spin at the 16th look, as with ROCL_SPIN_US=0) for kContendedFor,
// and then tries spinning again. Yielding to rocl's own threads (the
// board) is not affected.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rocl::impl::wait {

enum class Mode : std::uint8_t { kAuto, kSpin, kBlock };

// "auto", "spin", "block" -> the mode; nullopt otherwise.
std::optional<Mode> parse_mode(std::string_view text) noexcept;
const char *mode_name(Mode mode) noexcept;

// The process's policy: ROCL_WAIT and ROCL_SPIN_US, set by each context as
// it starts (all contexts of a process read the same environment). Until
// then: auto, 100 us.
void configure(Mode mode, std::chrono::microseconds spin) noexcept;
Mode mode() noexcept;
// How long a wait spins before it sleeps: 0 in block mode, for ever
// (microseconds::max()) in spin mode, ROCL_SPIN_US in auto mode.
std::chrono::microseconds spin_budget() noexcept;

// One wait's spin: kept by the waiter between its looks at what it waits
// for, it says how to spend each empty look and when to stop spinning.
// Whether this thread's last wait found another rocl thread runnable on
// its cpu: its next wait then yields from its first look (a hop between
// two threads of one cpu is otherwise 16 looks longer).
inline constinit thread_local bool t_cpu_shared = false;

class SpinPhase {
 public:
  using Clock = std::chrono::steady_clock;

  // timeout_ms: the waiter's own bound (< 0: none), counted from the first
  // clock read (the 16th look), which the phase never passes. budget: how
  // long to spin before sleeping (spin_budget(), or more for a waiter that
  // knows its event takes longer). busy_looks: looks that do not pause the
  // cpu (a look that polls a transport already takes a while).
  explicit SpinPhase(int timeout_ms, std::chrono::microseconds budget = spin_budget(),
                     unsigned busy_looks = 0) noexcept
      : timeout_ms_(timeout_ms),
        budget_(budget),
        busy_looks_(busy_looks),
        yielding_(t_cpu_shared && budget != std::chrono::microseconds::zero() &&
                  mode() == Mode::kAuto) {}

  // After look number `look` (1, 2, ...) found nothing: pauses the cpu or
  // yields it, and every 16 looks reads the clock and the board. False
  // when the spin is over: the budget is spent (the caller sleeps now; a
  // budget of 0 ends at the 16th look, where a reply that comes within a
  // few microseconds is still caught) or the timeout passed (timed_out()).
  bool next(unsigned look) noexcept {
    if (yielding_) {
      yield();
    } else if (look > busy_looks_) {
      pause();
    }
    if ((look & 15u) != 0) return true;
    return check(Clock::now());
  }
  // The waiter handled something that was not yet what it waits for (a
  // fragment of its message, another receive's): the budget starts again.
  // False if the timeout passed.
  bool renew() noexcept;

  // Whether the spin ended because the timeout passed.
  bool timed_out() const noexcept { return timed_out_; }
  // Whether it gives its cpu away between looks (another rocl thread is
  // runnable on its cpu).
  bool yielding() const noexcept { return yielding_; }

 private:
  static void pause() noexcept;
  void yield() noexcept;
  bool check(Clock::time_point now) noexcept;
  void start(Clock::time_point now) noexcept;
  void extend_from(Clock::time_point now) noexcept;

  int timeout_ms_;
  std::chrono::microseconds budget_;
  unsigned busy_looks_;
  bool started_ = false;
  bool yielding_;
  bool alone_learned_ = false;  // yields switched to nobody: spin as if alone
  bool timed_out_ = false;
  unsigned yields_ = 0;
  long switches_at_ = 0;  // involuntary context switches when yields_ was 0
  Clock::time_point limit_{};
  Clock::time_point end_{};
};

// How long a waiter spins for a signal it knows is on its way (a
// receive that found its envelope matched as it withdrew it) before it
// sleeps: the signaller is between two of its instructions.
inline constexpr std::chrono::microseconds kSignalOnItsWay{20};

// Held while the calling thread sleeps in the kernel for a wait: it stops
// counting as runnable on its cpu, and counts again once woken (it runs
// then, and a waiter beside it must not take it for gone).
class Asleep {
 public:
  Asleep() noexcept;
  ~Asleep();
  Asleep(const Asleep &) = delete;
  Asleep &operator=(const Asleep &) = delete;
};

// Whether the calling thread was kept from running by another thread of
// its cpu lately (the run delay above), so that spinning would cost it
// the other thread's time slice.
class ContentionWatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kContendedDelay{200};
  static constexpr std::chrono::milliseconds kContendedFor{50};

  // A reading of the thread's run delay (ns, cumulative; < 0: unknown)
  // at `now`: contended for kContendedFor if it grew by kContendedDelay or
  // more since the last reading.
  void observe(std::int64_t run_delay_ns, Clock::time_point now) noexcept;
  bool contended(Clock::time_point now) const noexcept { return now < until_; }

 private:
  std::int64_t last_ns_ = -1;
  Clock::time_point until_{};
};

// The calling thread's cumulative run delay in nanoseconds
// (/proc/thread-self/schedstat, second field); -1 if the kernel does not
// say.
std::int64_t run_delay_ns() noexcept;

// The calling thread's watch, fed by Asleep as it wakes.
ContentionWatch &contention() noexcept;

// Whether another rocl thread is runnable on the calling thread's cpu (a
// transport's thread asks before it spins idle).
bool cpu_is_shared() noexcept;

}  // namespace rocl::impl::wait
