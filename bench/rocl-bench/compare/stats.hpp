// stats.hpp - the figures of a comparison: every run's samples, their
// summary over the rounds, the best anchor of a point, ratios, the
// geometric mean, and what counts as a sane figure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocl_bench::compare {

// One point of one run: the median, min and max of its repetitions.
struct Sample {
  std::string metric;  // latency, bandwidth, rate, threads, ports, compute-alone, ...
  std::string system;  // rocl-shm, ompi-vader, ...
  std::size_t size = 0;
  int pairs = 1;  // thread pairs (threads), ports (ports), else 1
  int round = 1;
  double median = 0, min = 0, max = 0;
  std::string unit;  // us, GB/s, M msg/s, M units/s
};

// One point over all rounds: the median of the rounds' medians, the min
// and max over every repetition of every round, and the best of the
// rounds' medians (lowest for latency, highest otherwise): the figure of
// the system's fastest round, which a slow phase of the machine that hit
// some rounds only leaves out (on the AMD EPYC VM every cross-cpu figure
// moves 2-5x with the placement of its cpus, for seconds at a time).
struct Summary {
  std::string metric, system;
  std::size_t size = 0;
  int pairs = 1;
  double median = 0, min = 0, max = 0;
  int rounds = 0;
  std::string unit;
  double best_round = 0;
};

// Which figure of a Summary a comparison uses.
enum class Figure { kMedian, kBestRound };
double figure_of(const Summary &s, Figure f);

double median_of(std::vector<double> values);  // 0 for none

// The geometric mean; nullopt if a value is not positive or there is none.
std::optional<double> geometric_mean(const std::vector<double> &values);

// Finite and > 0: what every figure of a run must be.
bool is_sane(double v);
bool is_sane(const Sample &s);

// Latency, round-trip, hop and collective times (mpi_bench's mt_latency*,
// barrier, bcast, reduce, allreduce; oversub's pingpong* and ring*): lower
// is better; the others higher.
bool lower_is_better(std::string_view metric);

// Groups samples by (metric, system, size, pairs), in the order each group
// first appears.
std::vector<Summary> summarize_rounds(const std::vector<Sample> &samples);

// The summary of a point, or nullptr.
const Summary *find_summary(const std::vector<Summary> &all, std::string_view metric,
                            std::string_view system, std::size_t size, int pairs);

// The best of `systems` at a point (lowest for latency, highest otherwise)
// by figure `f`, or nullptr when none of them has the point.
const Summary *best_of(const std::vector<Summary> &all, std::string_view metric,
                       const std::vector<std::string> &systems, std::size_t size, int pairs,
                       Figure f = Figure::kMedian);

}  // namespace rocl_bench::compare
