// limits.cpp - see limits.hpp.
#include "limits.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "report.hpp"
#include "spsc_anchor.hpp"
#include "threads.hpp"
#include "timing.hpp"

namespace rocl_bench::compare {
namespace {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using Block = std::unique_ptr<unsigned char, FreeDeleter>;

Block aligned_block(std::size_t bytes) {
  void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (p == nullptr) return nullptr;
  std::memset(p, 0x5a, bytes);  // written once: no zero-page reads
  return Block(static_cast<unsigned char *>(p));
}

// n copies of `size` bytes; the seconds they took.
double copy_run(unsigned char *dst, const unsigned char *src, std::size_t size, long n) {
  const auto start = Clock::now();
  for (long i = 0; i < n; ++i) {
    std::memcpy(dst, src, size);
    asm volatile("" : : "r"(dst) : "memory");  // the copy must happen every time
  }
  return seconds_since(start);
}

std::vector<Sample> measure_memcpy(const CompareOptions &o, int round) {
  const std::size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  Block src = aligned_block(largest), dst = aligned_block(largest);
  if (!src || !dst) return {};
  std::vector<Sample> out;
  for (std::size_t size : o.sizes) {
    auto run = [&](long n) { return copy_run(dst.get(), src.get(), size, n); };
    const long n = plan_iterations(run, o.seconds, 100'000'000L);
    std::vector<double> us, gbs;
    for (int rep = 0; rep < o.reps; ++rep) {
      const double t = run(n);
      us.push_back(t / static_cast<double>(n) * 1e6);
      gbs.push_back(static_cast<double>(size) * static_cast<double>(n) / t / 1e9);
    }
    const Row time = summarize("memcpy", size, 1, us, "us");
    const Row rate = summarize("memcpy", size, 1, gbs, "GB/s");
    out.push_back({"latency", "memcpy", size, 1, round, time.median, time.min, time.max, "us"});
    out.push_back({"bandwidth", "memcpy", size, 1, round, rate.median, rate.min, rate.max, "GB/s"});
  }
  return out;
}

// One cache line that two threads hand back and forth: the pinging side
// writes an odd value and waits for the next even one, the echo side waits
// for the odd value and writes the even one.
struct alignas(kCacheLine) Line {
  std::atomic<std::uint64_t> value{0};
};

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::uint64_t wait_for(const Line &line, std::uint64_t expected) {
  std::uint64_t v;
  for (unsigned spins = 1; (v = line.value.load(std::memory_order_acquire)) < expected; ++spins) {
    cpu_relax();
    if ((spins & 0xffff) == 0) std::this_thread::yield();  // if both share a cpu after all
  }
  return v;
}

constexpr std::uint64_t kStop = ~std::uint64_t{0} - 1;

// `reps` one-way times (us) of a cache line handed back and forth between
// cpus[0] and cpus[1], each over about `seconds`.
std::vector<double> cacheline_reps(const std::vector<int> &cpus, double seconds, int reps) {
  auto line = std::make_unique<Line>();
  std::vector<double> us;
  auto ping = [&] {
    std::uint64_t next = 0;
    auto round_trips = [&](long n) {
      const auto start = Clock::now();
      for (long i = 0; i < n; ++i, next += 2) {
        line->value.store(next + 1, std::memory_order_release);
        wait_for(*line, next + 2);
      }
      return seconds_since(start);
    };
    const long n = plan_iterations(round_trips, seconds, 50'000'000L);
    for (int rep = 0; rep < reps; ++rep) {
      us.push_back(round_trips(n) / static_cast<double>(n) / 2 * 1e6);
    }
    line->value.store(kStop, std::memory_order_release);
  };
  auto echo = [&] {
    for (std::uint64_t expected = 1;; expected += 2) {
      if (wait_for(*line, expected) == kStop) return;
      line->value.store(expected + 1, std::memory_order_release);
    }
  };
  run_threads("cache-line ping-pong", {ping, echo}, {cpus[0], cpus[1]},
              60 + 20 * seconds * (reps + 1));
  return us;
}

std::vector<Sample> measure_cacheline(const CompareOptions &o, const std::vector<int> &cpus,
                                      int round) {
  const Row row = summarize("cacheline", 64, 1, cacheline_reps(cpus, o.seconds, o.reps), "us");
  return {{"latency", "cacheline", 64, 1, round, row.median, row.min, row.max, "us"}};
}

}  // namespace

double probe_cpus(const std::vector<int> &cpus) {
  if (cpus.size() < 2) return 0;
  return median_of(cacheline_reps(cpus, kCpuProbeSeconds, 3));
}

RunOutcome run_limits(const RunRequest &r) {
  const CompareOptions &o = r.options;
  const std::vector<int> &cpus = r.programs.cpus;
  RunOutcome outcome;
  std::vector<Sample> samples;
  run_threads("memcpy", {[&] { samples = measure_memcpy(o, r.round); }},
              {cpus.empty() ? -1 : cpus[0]},
              60 + 20.0 * static_cast<double>(o.sizes.size()) * (o.reps + 1) * o.seconds);
  if (samples.empty()) {
    outcome.why = "cannot allocate the memcpy buffers";
    return outcome;
  }
  if (cpus.size() >= 2) {
    for (auto &s : measure_cacheline(o, cpus, r.round)) samples.push_back(std::move(s));
  }
  outcome.samples = std::move(samples);
  outcome.ok = true;
  return outcome;
}

}  // namespace rocl_bench::compare
