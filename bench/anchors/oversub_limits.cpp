// oversub_limits.cpp - the limits of the oversub stage (rocl-bench compare
// oversub): what the kernel alone gives two threads that hand a turn back
// and forth when they share cpus. Plain C++, no rocl.
//
//   futex/pingpong-onecpu  two threads on the first cpu, each waits with
//                          FUTEX_WAIT on a shared word and wakes the other
//                          with FUTEX_WAKE (point 2: two threads on a cpu)
//   futex/pingpong         the same on the first two cpus (point 1)
//   yield/pingpong-onecpu  two threads on the first cpu that spin on the
//                          word with sched_yield between looks
//   futex/pingpong-busy    the two-cpu futex ping-pong with B busy loops
//                          (busy_loops.hpp) pinned to each of the two cpus
//                          (point B, from --busy)
//
// Each point: a warm-up of a tenth of --time, then --reps repetitions of
// round trips for --time seconds each; one-way = round trip / 2, in us.
// Output on stdout: rocl-bench's rows benchmark,size_bytes,pairs,median,
// min,max,unit, the benchmark named SYSTEM/METRIC, size 0 (no payload).
//
//   oversub_limits --cpus 0,1 [--reps N] [--time S] [--busy 1,2]
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "busy_loops.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// The turn: odd when the pinging side has handed it over, even when the
// echo side has handed it back; kStop ends the echo side.
constexpr std::uint32_t kStop = 0x80000000u;
constexpr std::uint32_t kMask = 0x7fffffffu;

enum class Wait { kFutex, kYield };

struct Turn {
  alignas(64) std::atomic<std::uint32_t> word{0};
};

long futex(std::atomic<std::uint32_t> *word, int op, std::uint32_t value) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(word), op, value, nullptr, nullptr,
                   0);
}

// Waits until the word is `expected` or kStop; returns what it is.
std::uint32_t wait_for(Turn &t, std::uint32_t expected, Wait how) {
  for (;;) {
    const std::uint32_t v = t.word.load(std::memory_order_acquire);
    if (v == expected || v == kStop) return v;
    if (how == Wait::kYield) {
      sched_yield();
    } else {
      futex(&t.word, FUTEX_WAIT_PRIVATE, v);  // returns at once if it moved on
    }
  }
}

void hand_over(Turn &t, std::uint32_t value, Wait how) {
  t.word.store(value, std::memory_order_release);
  if (how == Wait::kFutex) futex(&t.word, FUTEX_WAKE_PRIVATE, 1);
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct Options {
  std::vector<int> cpus;
  std::vector<int> busy = {1, 2};
  int reps = 3;
  double seconds = 0.1;
};

struct Figures {
  double median, min, max;
};

// One point: the ping side on cpu `a`, the echo side on cpu `b`.
Figures pingpong(const Options &o, int a, int b, Wait how) {
  Turn turn;
  std::vector<double> us;
  std::thread echo([&] {
    pin(b);
    for (std::uint32_t expected = 1;; expected = (expected + 2) & kMask) {
      if (wait_for(turn, expected, how) == kStop) return;
      hand_over(turn, (expected + 1) & kMask, how);
    }
  });
  pin(a);
  std::uint32_t next = 0;
  auto run_for = [&](double seconds) {
    long trips = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      for (int i = 0; i < 16; ++i, ++trips) {
        hand_over(turn, (next + 1) & kMask, how);
        wait_for(turn, (next + 2) & kMask, how);
        next = (next + 2) & kMask;
      }
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds);
    return elapsed / static_cast<double>(trips) / 2 * 1e6;
  };
  run_for(o.seconds / 10);
  for (int rep = 0; rep < o.reps; ++rep) us.push_back(run_for(o.seconds));
  hand_over(turn, kStop, how);
  echo.join();
  std::sort(us.begin(), us.end());
  const std::size_t n = us.size();
  return {n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2, us.front(), us.back()};
}

void print_row(const char *name, int point, Figures f) {
  std::printf("%s,0,%d,%.9g,%.9g,%.9g,us\n", name, point, f.median, f.min, f.max);
  std::fflush(stdout);
}

std::vector<int> int_list(const char *text) {
  std::vector<int> v;
  for (const char *p = text; *p != '\0';) {
    char *end = nullptr;
    const long x = std::strtol(p, &end, 10);
    if (end == p || x < 0 || x > 4096) return {};
    v.push_back(static_cast<int>(x));
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return {};
  }
  return v;
}

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "oversub_limits: %s\nusage: oversub_limits --cpus A,B [--reps N] [--time S] "
               "[--busy LIST]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) usage(("a value after " + a).c_str());
    ++i;
    if (a == "--cpus") {
      o.cpus = int_list(v);
    } else if (a == "--busy") {
      o.busy = int_list(v);
    } else if (a == "--reps") {
      o.reps = std::atoi(v);
      if (o.reps < 1 || o.reps > 1000) usage("--reps takes 1 to 1000");
    } else if (a == "--time") {
      o.seconds = std::atof(v);
      if (!(o.seconds > 0) || o.seconds > 3600) usage("--time takes seconds > 0");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (o.cpus.size() != 2 || o.cpus[0] == o.cpus[1]) usage("--cpus wants two different cpus");
  return o;
}

}  // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  const int a = o.cpus[0], b = o.cpus[1];
  std::printf("# oversub_limits: cpus %d,%d; %d rep(s) of %g s per point\n", a, b, o.reps,
              o.seconds);
  std::printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  print_row("futex/pingpong-onecpu", 2, pingpong(o, a, a, Wait::kFutex));
  print_row("futex/pingpong", 1, pingpong(o, a, b, Wait::kFutex));
  print_row("yield/pingpong-onecpu", 2, pingpong(o, a, a, Wait::kYield));
  for (int busy : o.busy) {
    rocl_anchors::BusyLoops competitors({a, b}, busy);
    print_row("futex/pingpong-busy", busy, pingpong(o, a, b, Wait::kFutex));
  }
  return 0;
}
