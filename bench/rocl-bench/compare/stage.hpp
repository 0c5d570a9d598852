// stage.hpp - what the four stages of a comparison share: a configuration
// (one system measured one way: "ompi-vader", "rocl-shm-thread"), how one
// run of it is asked for and what it gives back, and the loop that runs
// every configuration of a stage in interleaved rounds, the order rotating
// from round to round, so that the machine's slow spells hit all of them
// alike.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "compare_options.hpp"
#include "output_parse.hpp"
#include "programs.hpp"
#include "progress.hpp"
#include "stats.hpp"

namespace rocl_bench::compare {

// A point that a run could not measure within its time limit (stage
// oversub, where a slow waiting policy may take longer than any limit). It
// counts as a figure of its run, shows as "timeout", and is not run again
// in later rounds, as a configuration that failed is not.
struct TimedOut {
  std::string metric, system;
  std::size_t size = 0;
  int pairs = 1;
  int round = 1;
  double limit_seconds = 0;
  bool skipped = false;  // not run: it timed out in an earlier round
};

struct RunRequest {
  const CompareOptions &options;
  const Programs &programs;
  int round;
  std::string log;      // the program's output goes here
  std::string scratch;  // a path prefix for files the run writes (+ ".csv", ...)
  // The points of this stage that timed out in earlier rounds (none: nullptr).
  const std::vector<TimedOut> *timed_out = nullptr;
};

struct RunOutcome {
  bool ok = false;
  std::string why;  // when not ok: what failed, with the log's telling line
  std::vector<Sample> samples;
  std::vector<TimedOut> timeouts;  // with ok: points not measured within their limit
};

struct Config {
  std::string name;         // as in the tables and the CSV
  std::string cls;          // p2p: inproc, shm, tcp or limit; "" elsewhere
  std::string about;        // how it is measured, one line
  std::string unavailable;  // why it cannot run here; "" when it can
  std::function<RunOutcome(const RunRequest &)> run;
  std::size_t expected = 0;  // figures a run gives; fewer fail it
  // p2p: whether its bandwidth stream waits for an ack after every window
  // (rocl-bench's and the OSU-style anchors' way) or streams without
  // (ucx_perftest's tag_bw; rocl-bench --window 0). A stream's figure is
  // set beside those of the same kind only (results.hpp, anchors_like).
  bool stream_acks = true;
  bool stream_only = false;  // p2p: bandwidth and rate, no latency
};

// Where the two cpus were around one run. A virtual machine's cpus move
// between physical ones while it runs (on the AMD EPYC VM of
// docs/performance.md a cache line crosses between them in about 0.015 us
// as two threads of one core, 0.035 us on one die and 0.16 us across dies,
// changing every second or so), and every figure between the two cpus
// moves with them, 2-3x. A short hand-off just before and just after each
// run records it, so that the output can say which runs the machine may
// have slowed; no figure is dropped or retaken for it.
struct CpuProbe {
  std::string system;
  int round = 1;
  double before_us = 0, after_us = 0;  // one-way; 0: not measured
};

// What a stage leaves: every run's samples, the configurations that failed
// (name -> why; a configuration that fails is not run again), the cpu
// probes around its runs (none with fewer than two cpus), and the points
// that timed out.
struct StageResult {
  std::vector<Sample> samples;
  std::map<std::string, std::string> failed;
  std::vector<CpuProbe> cpu_probes;
  std::vector<TimedOut> timeouts;
};

// Seconds a run of `points` measured points may take before it is stopped.
double run_timeout(const CompareOptions &o, std::size_t points, double seconds_per_rep);

// Runs inv; on success parses the rows of `rows_file` (the log when empty)
// and turns them into samples. A run that exits 0 but gives no sample
// fails too ("printed no figures").
RunOutcome run_and_collect(
    const Invocation &inv, const std::string &rows_file,
    const std::function<std::vector<Sample>(const std::vector<CsvRow> &)> &to_samples);

// Runs the available configurations of `stage` o.rounds times, each round
// in a rotated order, reporting each run on `progress`; logs go to
// logs_dir/<round>-<stage>-<config>.log.
void run_stage(const std::string &stage, const std::vector<Config> &configs,
               const CompareOptions &o, const Programs &p, const std::string &logs_dir,
               Progress &progress, StageResult &result);

// The number of runs run_stage will make (for the progress display).
int planned_runs(const std::vector<Config> &configs, const CompareOptions &o);

// compare's own rocl job under roclrun (ports_rank.cpp, sustain_rank.cpp):
// roclrun --timeout -n 2 rocl-bench compare --rank ROLE ARGS...,
// ROCL_TRANSPORTS=transport, output in r.log.
Invocation rocl_job(const RunRequest &r, const std::string &role, const std::string &transport,
                    double timeout, std::vector<std::string> args);

// The configurations the --systems filters select, in their order.
std::vector<Config> keep_selected(const CompareOptions &o, std::vector<Config> all);

}  // namespace rocl_bench::compare
