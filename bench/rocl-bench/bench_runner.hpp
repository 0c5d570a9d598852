// bench_runner.hpp - what a benchmark is (a name, a one-line summary and a
// function from options to rows), the table of benchmarks, and the runner.
// A new thread benchmark is one more entry in the table; the benchmarks
// between processes (process_bench.hpp) reuse the names latency, bandwidth
// and rate.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "report.hpp"
#include "threads.hpp"

namespace rocl_bench {

struct BenchOptions {
  std::vector<std::size_t> sizes;            // latency (and bandwidth) message sizes
  std::vector<std::size_t> bandwidth_sizes;  // bandwidth sizes; empty: `sizes`
  std::vector<int> pairs;                    // rate: numbers of thread pairs
  int reps = 5;                              // repetitions per point
  double seconds = 0.2;                      // target duration of one repetition
  int window = 64;                           // messages between two acks (bandwidth, rate)
  bool touch = false;                        // bandwidth: also with the payload written and read
  Placement placement;                       // cpus and pinning
};

// Defaults: sizes 1 B .. 16 MiB in powers of 4, pairs 1,2,4,8, 5 reps of
// 0.2 s, window 64, pinning on when at least 2 cpus are usable.
BenchOptions default_options();

// --quick: sizes 8 and 64K, pairs 1 and 2, 1 rep of 0.02 s.
void make_quick(BenchOptions &o);

// The sizes the bandwidth benchmark runs: o.bandwidth_sizes, or o.sizes.
const std::vector<std::size_t> &bandwidth_sizes(const BenchOptions &o);

struct Benchmark {
  const char *name;
  const char *summary;  // printed before it runs
  std::vector<Row> (*run)(const BenchOptions &);
};

// Every benchmark, in the order `all` runs them (the anchor first, so that
// the latency rows can be compared with it).
std::span<const Benchmark> benchmarks();
const Benchmark *find_benchmark(std::string_view name);

// Runs the selected benchmarks in table order, each once, printing each
// summary on stdout before it runs, and adds their rows to the report.
void run_benchmarks(const std::vector<const Benchmark *> &selected, const BenchOptions &o,
                    Report &report);

}  // namespace rocl_bench
