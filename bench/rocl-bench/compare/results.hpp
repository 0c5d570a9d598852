// results.hpp - everything a comparison measured, stage by stage, and the
// three ways it is shown: the tables on the terminal (tables.cpp), the CSV
// (results_csv.cpp) and the plots (plots.cpp).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "stage.hpp"

namespace rocl_bench::compare {

// A figure for the tables: about three significant digits, never an
// exponent above 0.01 (rocl-bench's format_value), two digits below.
std::string format_figure(double v);

struct StageRun {
  std::string stage;             // p2p, threads, ports, sustain
  std::vector<Config> configs;   // column order, classes, n/a reasons
  StageResult result;            // samples and failures
  std::vector<Summary> summary;  // result.samples over the rounds

  // The summary of a point, or nullptr.
  const Summary *find(const std::string &metric, const std::string &system, std::size_t size,
                      int pairs = 1) const;
  // A table cell: the figure, or "timeout" (timed out in some round), "n/a"
  // (cannot run here), "failed" or "-".
  std::string cell(const std::string &metric, const std::string &system, std::size_t size,
                   int pairs = 1) const;
  const Config *config(const std::string &name) const;
};

// Whether a system is one of rocl's own (its name starts with "rocl-":
// rocl-shm, rocl-mpi-shm, ...): measured next to the anchors, never one.
bool is_rocl(const std::string &system);

// The anchors of p2p class `cls` (shm, tcp, ...): its systems that are not rocl's.
std::vector<std::string> anchors_in(const StageRun &run, const std::string &cls);

// rocl's systems of p2p class `cls`: `subject` (rocl-bench's, the buffer
// API) first, then the others (rocl-mpi-shm: rocl's MPI), in column order.
std::vector<std::string> rocl_systems_in(const StageRun &run, const std::string &cls,
                                         const std::string &subject);

// The anchors among `anchors` that `system`'s figures of p2p `metric` are
// set beside: all of them for latency; for bandwidth and rate only those
// whose stream waits for acks as `system`'s does (Config::stream_acks), so
// that a stream without acks (ucx_perftest's) is never set against one
// that pauses for them every window (rocl-bench's, the MPI anchors').
std::vector<std::string> anchors_like(const StageRun &run, const std::string &metric,
                                      const std::string &system,
                                      const std::vector<std::string> &anchors);

// rocl_systems_in that have figures of `metric` (not the stream-only
// systems in the latency table).
std::vector<std::string> rocl_systems_for(const StageRun &run, const std::string &cls,
                                          const std::string &subject, const std::string &metric);

// Leaves out of run.summary the points that timed out in some round: a
// median of the rounds that finished would hide that one did not, so such
// a point has no figure in the tables, the ratios and the goals (the rounds
// that finished stay in the CSV).
void drop_timed_out(StageRun &run);

struct Results {
  std::vector<StageRun> stages;
  const StageRun *find(const std::string &stage) const;
};

// The derived sustainability figures of one configuration.
struct Sustainability {
  std::string config;
  double compute_alone = 0, compute_with = 0, rtt_alone = 0, rtt_with = 0;
  double compute_ratio = 0;   // Ex_cs / Ex_0
  double rtt_ratio = 0;       // Rt_0 / Rt_cs
  double geomean = 0;         // of the two
  double rtt_best_ratio = 0;  // Rt_best0 / Rt_cs: against the best round trip alone of the run
  double geomean_best = 0;    // of compute_ratio and rtt_best_ratio (the paper's overall ratio)
};
std::vector<Sustainability> sustainability(const StageRun &run);

// The tables, with ratios rocl / best anchor, the sustainability ratios
// and what was not measured and why.
void print_tables(std::FILE *out, const Results &results, const CompareOptions &o);

// The cpu probes (CpuProbe in stage.hpp), stage by stage: each system's
// before/after per round, a probe over kSlowProbeFactor x the stage's
// median marked "*", and which systems had such a probe around a run.
void print_cpu_probes(std::FILE *out, const Results &results);
constexpr double kSlowProbeFactor = 2;
double probes_median(const std::vector<CpuProbe> &probes);  // of every before and after
bool slow_probe(double us, double median);
std::string probe_cell(const CpuProbe &p, double median);  // "0.034/0.16*"

// compare.csv: every run's samples, then the summaries and ratios. False
// (errno set) if it cannot be written.
bool write_results_csv(const std::string &path, const Results &results);

// One plot: a metric of a stage against the size or the thread pairs, a
// line per system, into <file>.png.
struct PlotSpec {
  const char *stage, *metric, *file, *xlabel, *ylabel;
  bool by_pairs;  // x = thread pairs, else the size
};
// compare's: latency, bandwidth, rate (p2p) and threads.
const std::vector<PlotSpec> &compare_plots();

// The plots of `plots` whose stage ran, as PNG in `folder` with gnuplot,
// their data and script beside them, titled "<title>: <ylabel>"; their
// paths go to `written`. Returns "" or what failed.
std::string write_plots(const std::string &folder, const Results &results,
                        const std::vector<PlotSpec> &plots, const std::string &title,
                        const std::string &gnuplot, const std::string &log,
                        std::vector<std::string> &written);

}  // namespace rocl_bench::compare
