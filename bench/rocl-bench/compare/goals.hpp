// goals.hpp - the goals rocl-bench judges, read from a data file
// (bench/rocl-bench/goals.txt, whose header says the format), and their
// verdicts on a run's figures: ok or MISS with the points that met each,
// or "not judged" when a side was not measured.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace rocl_bench::compare {

// The metrics of stage mpi (mpi_bench's rows), in the order its tables
// show them (mpi_suite.cpp).
extern const char *const kMpiMetrics[22];

struct Results;

// One condition of a goal's AT field: size=V|V, size>=V, pairs=V|V.
struct PointCondition {
  bool on_size = true;    // size, else pairs
  bool at_least = false;  // >= values[0], else one of values
  std::vector<std::size_t> values;
  bool holds(std::size_t size, int pairs) const;
};

struct Goal {
  int line = 0;  // in its file
  std::string stage, metric;
  std::string subject;  // a system, or a family's prefix when `family`
  bool family = false;  // SUBJECT ended in '*': the best of the family
  bool lower = true;    // OP <=: lower is better
  double factor = 1;
  std::string anchor_class;              // ANCHORS class:NAME
  bool anchor_others = false;            // ANCHORS others
  std::vector<std::string> anchor_list;  // ANCHORS a,b,c (or those of METRIC:a,b/...)
  // ANCHORS METRIC:a,b/COND/COND: the best of those systems' figures of
  // another metric of the stage, at the points the conditions select (all
  // when none), one figure every point of SUBJECT is set against.
  std::string anchor_metric;
  std::vector<PointCondition> anchor_at;
  std::vector<PointCondition> at;  // empty: all
  bool best_round = false;         // FIGURES median,best
  std::string label;
};

// The goals of `text` (the file at `path`, named in errors). Returns "" or
// the first error as "PATH:LINE: what is wrong", and then `out` is empty.
std::string parse_goals(std::string_view text, const std::string &path, std::vector<Goal> &out);

// Reads and parses the file at `path`; "" or the error (unreadable file
// or the parse error).
std::string load_goals(const std::string &path, std::vector<Goal> &out);

// Where the goals are when --goals does not say: goals.txt next to this
// rocl-bench (CMake copies it there), else the source tree's, whose path
// is compiled in. "" when neither exists.
std::string default_goals_path();

// The goals of the stages in `results`, each printed with its verdict.
// Goals with FIGURES median,best are judged on the medians of the rounds,
// then, when a stage had more than one round, on each system's best round;
// the others after them, on the medians. `quick` says that the figures
// are --quick ones; `source` names the file in the header.
void print_goals(std::FILE *out, const Results &results, const std::vector<Goal> &goals,
                 const std::string &source, bool quick);

}  // namespace rocl_bench::compare
