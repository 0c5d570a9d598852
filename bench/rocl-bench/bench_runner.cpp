// bench_runner.cpp - see bench_runner.hpp.
#include "bench_runner.hpp"

#include <algorithm>
#include <cstdio>

#include "spsc_anchor.hpp"
#include "thread_bench.hpp"

namespace rocl_bench {
namespace {

const Benchmark kBenchmarks[] = {
    {"anchor-spsc",
     "the physical floor: a bare lock-free single-producer/single-consumer ring, ping-pong of "
     "8 B between two spinning threads (one-way = round trip / 2)",
     &run_spsc_anchor},
    {"latency",
     "ping-pong between two resources on two threads, one-way = round trip / 2; the echo side "
     "sends the received buffer straight back (bftoret + send: zero-copy)",
     &run_latency},
    {"bandwidth",
     "one-way stream between two threads: bfget + bftoret + send, the receiver recv + bfret, "
     "an ack every window; the payload is NOT touched, so this measures the hand-off, not "
     "memory bandwidth (--touch adds rows with the payload written and read)",
     &run_bandwidth},
    {"rate",
     "message rate of 8 B messages, P sender->receiver thread pairs at once, an ack every "
     "window; total over all pairs",
     &run_rate},
};

}  // namespace

BenchOptions default_options() {
  BenchOptions o;
  for (std::size_t s = 1; s <= (std::size_t{16} << 20); s *= 4) o.sizes.push_back(s);
  o.pairs = {1, 2, 4, 8};
  o.placement.cpus = usable_cpus();
  o.placement.pin = o.placement.cpus.size() >= 2;
  return o;
}

void make_quick(BenchOptions &o) {
  o.sizes = {8, std::size_t{64} << 10};
  o.pairs = {1, 2};
  o.reps = 1;
  o.seconds = 0.02;
}

const std::vector<std::size_t> &bandwidth_sizes(const BenchOptions &o) {
  return o.bandwidth_sizes.empty() ? o.sizes : o.bandwidth_sizes;
}

std::span<const Benchmark> benchmarks() {
  return kBenchmarks;
}

const Benchmark *find_benchmark(std::string_view name) {
  for (const auto &b : kBenchmarks) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

void run_benchmarks(const std::vector<const Benchmark *> &selected, const BenchOptions &o,
                    Report &report) {
  for (const auto &b : kBenchmarks) {
    if (std::find(selected.begin(), selected.end(), &b) == selected.end()) continue;
    std::printf("\n[%s] %s\n", b.name, b.summary);
    std::fflush(stdout);
    report.add(b.run(o));
  }
}

}  // namespace rocl_bench
