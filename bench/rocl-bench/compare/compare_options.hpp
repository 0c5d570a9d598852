// compare_options.hpp - the command line of `rocl-bench compare`: what to
// run (stages, systems), how much (sizes, rounds, repetitions, time) and
// where the results go. Parsing is separate from running so that it can be
// unit-tested (compare_test.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocl_bench::compare {

// The parts of a comparison, in the order they run; all of them run when
// none is named.
inline constexpr const char *kStages[] = {"p2p", "threads", "ports", "sustain", "oversub"};

struct CompareOptions {
  std::vector<std::string> stages;   // among kStages; all when none is named
  std::vector<std::string> systems;  // --systems: name filters; empty = every system
  std::vector<std::size_t> sizes;    // p2p message sizes
  std::vector<int> pairs;            // threads: thread pairs
  std::vector<int> ports;            // ports: destination resources
  // Interleaved rounds. 5: this VM has slow phases of seconds in which
  // every cross-core figure is 2-4x higher; they hit a run of one system,
  // and with 3 rounds two slow ones of 3 (seen) decided a median.
  int rounds = 5;
  int reps = 3;                            // repetitions per point inside a run
  double seconds = 0.1;                    // per repetition
  double sustain_seconds = 0.2;            // per sustainability phase
  std::size_t sustain_size = 8;            // sustainability ping-pong message bytes
  long oversub_iters = 1000;               // oversub: MPI collective calls per run (fixed)
  std::string out = "rocl-bench-compare";  // folder for the CSV, plots, logs
  std::string anchors;                     // folder of the anchor programs ("": next to us)
  std::string roclrun;                     // roclrun to use ("": found as rocl-bench does)
  std::string goals;                       // the goals file ("": default_goals_path())
  std::string against;                     // another build's folder to alternate with ("": none)
  std::string against_name = "base";       // the suffix of its systems: rocl-shm@base
  bool quick = false;
  bool plots = true;
  bool list = false;  // --list: print the systems and whether they can run

  // Hidden: a rank of one of compare's own rocl jobs under roclrun, or
  // (oversub-threads) the process of an oversub point between threads.
  std::string rank;     // "ports", "sustain", "oversub-threads" or "oversub-ring"
  std::string oversub;  // the oversub point such a rank measures: "ring:2"
};

// Defaults: sizes 1 B .. 16 MiB in powers of 4, pairs 1,2,4,8,16, ports
// 1,4,16,64, 5 rounds of 3 reps of 0.1 s.
CompareOptions default_compare_options();

// "8,4K,1M" -> {8, 4096, 1048576} (K, M, G = powers of 1024); nullopt if a
// value is not a positive number or the list is empty.
std::optional<std::vector<std::size_t>> parse_size_list(std::string_view text);

// The arguments after "compare". Returns "" on success, else the sentence
// that says what is wrong (the caller prints it and exits 2). --quick means
// sizes 8 and 64K, pairs 1,2, ports 1,4, 1 round of 1 rep of 0.02 s,
// sustainability phases of 0.05 s and 50 oversub collective calls; options
// given explicitly still win.
std::string parse_compare_options(const std::vector<std::string> &args, CompareOptions &out);

// Whether a system or configuration named `name` is selected by the
// --systems filters: a filter selects the name itself and every name that
// starts with it followed by '-' ("rocl" selects rocl-shm and
// rocl-shm-poll; "rocl-shm" selects rocl-shm-poll, not rocl-shmx).
bool selected(const CompareOptions &o, std::string_view name);

bool runs_stage(const CompareOptions &o, std::string_view stage);

// "a,b,,c" -> {"a", "b", "c"}: the names of a list option, empty ones left out.
std::vector<std::string> split_list(std::string_view text);

extern const char kCompareUsage[];

}  // namespace rocl_bench::compare
