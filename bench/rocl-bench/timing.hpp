// timing.hpp - the clock of the benchmarks and how many iterations a
// measurement gets.
#pragma once

#include <algorithm>
#include <chrono>

namespace rocl_bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Warms up and calibrates a timed loop: runs run_timed(n) (which performs n
// iterations and returns the seconds they took) with n = 8, 32, 128, ...
// until one run lasts a tenth of target_seconds, then returns the count that
// should last target_seconds, between 1 and max_iterations. The calibration
// runs are the warm-up (first touch of buffers, pool growth, caches).
template <class RunTimed>
long plan_iterations(RunTimed &&run_timed, double target_seconds, long max_iterations) {
  long n = std::min(8L, max_iterations);
  double elapsed = run_timed(n);
  while (elapsed < target_seconds / 10 && n < max_iterations) {
    n = std::min(n * 4, max_iterations);
    elapsed = run_timed(n);
  }
  const double per_iteration = elapsed / static_cast<double>(n);
  if (per_iteration <= 0) return max_iterations;
  const double wanted = target_seconds / per_iteration;
  return std::clamp(static_cast<long>(wanted), 1L, max_iterations);
}

}  // namespace rocl_bench
