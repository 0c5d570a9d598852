// spsc_anchor.cpp - see spsc_anchor.hpp.
#include "spsc_anchor.hpp"

#include <cstdio>
#include <memory>
#include <thread>

#include "check.hpp"
#include "threads.hpp"
#include "timing.hpp"

namespace rocl_bench {
namespace {

using Ring = SpscRing<std::uint64_t, 64>;
constexpr std::uint64_t kStop = ~std::uint64_t{0};
constexpr long kMaxRoundTrips = 20'000'000;

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until a value arrives. Yields now and then so that two threads that
// ended up on one cpu (pinning off or refused) still make progress.
std::uint64_t pop_spinning(Ring &ring) {
  std::uint64_t v = 0;
  for (unsigned spins = 1; !ring.try_pop(v); ++spins) {
    cpu_relax();
    if ((spins & 0xffff) == 0) std::this_thread::yield();
  }
  return v;
}

void push_spinning(Ring &ring, std::uint64_t v) {
  for (unsigned spins = 1; !ring.try_push(v); ++spins) {
    cpu_relax();
    if ((spins & 0xffff) == 0) std::this_thread::yield();
  }
}

struct Rings {
  Ring to_echo;
  Ring to_ping;
};

void ping(Rings &rings, const BenchOptions &o, std::vector<double> &samples) {
  std::uint64_t next = 0;
  auto round_trips = [&](long n) {
    const auto start = Clock::now();
    for (long i = 0; i < n; ++i, ++next) {
      push_spinning(rings.to_echo, next);
      if (pop_spinning(rings.to_ping) != next) die("anchor-spsc: the ring returned a wrong value");
    }
    return seconds_since(start);
  };
  const long n = plan_iterations(round_trips, o.seconds, kMaxRoundTrips);
  for (int rep = 0; rep < o.reps; ++rep) {
    samples.push_back(round_trips(n) / static_cast<double>(n) / 2 * 1e6);
  }
  push_spinning(rings.to_echo, kStop);
}

void echo(Rings &rings) {
  for (;;) {
    const std::uint64_t v = pop_spinning(rings.to_echo);
    if (v == kStop) return;
    push_spinning(rings.to_ping, v);
  }
}

}  // namespace

std::vector<Row> run_spsc_anchor(const BenchOptions &o) {
  std::printf("  %s\n", o.placement.describe_pair("ping", "echo").c_str());
  std::fflush(stdout);
  auto rings = std::make_unique<Rings>();
  std::vector<double> samples;
  run_threads("anchor-spsc", {[&] { ping(*rings, o, samples); }, [&] { echo(*rings); }},
              {o.placement.cpu_for(0), o.placement.cpu_for(1)}, 60 + 20 * o.seconds * o.reps);
  return {summarize("anchor-spsc", 8, 1, std::move(samples), "us")};
}

}  // namespace rocl_bench
