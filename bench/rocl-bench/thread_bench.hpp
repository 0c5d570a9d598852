// thread_bench.hpp - rocl benchmarks between threads of one process. Every
// thread is a rocl resource; messages go through the in-process hand-off.
// Each needs rocl_init() to have been called, and dies (check.hpp) on any
// rocl error.
#pragma once

#include <vector>

#include "bench_runner.hpp"

namespace rocl_bench {

// "latency": one-way latency (us) per size, ping-pong, zero-copy echo.
std::vector<Row> run_latency(const BenchOptions &o);

// "bandwidth" (and "bandwidth-touch" with o.touch): MB/s and msg/s per size.
std::vector<Row> run_bandwidth(const BenchOptions &o);

// "rate": total M msg/s of 8 B messages for each number of pairs.
std::vector<Row> run_rate(const BenchOptions &o);

}  // namespace rocl_bench
