// results_csv.cpp - compare.csv (see results.hpp). Columns:
//   stage,metric,system,class,size_bytes,pairs,round,median,min,max,unit
// round is the round number for a run's own figures, "all" for the summary
// over the rounds; ratio rows of each of rocl's systems against the best
// anchor (system "rocl-shm/ompi-vader", "rocl-mpi-shm/ucx-shm", unit "ratio")
// and the sustainability ratios (metric compute-ratio, rtt-ratio, geomean,
// rtt-best-ratio, geomean-best) follow with round "all"; then the cpu
// probes around each run (metric cpu-before and cpu-after, size 64, us);
// then the points that timed out (oversub), one row per round with the
// figures empty and unit "timeout" (or "timeout-skipped": not run again).
// The oversub stage's ratio rows: rocl-inproc and rocl-shm over futex's
// ping-pong on one cpu (system "rocl-inproc/futex-onecpu"), rocl-mpi over
// the better of ompi-vader and mpich.
#include <algorithm>
#include <cstdio>
#include <set>

#include "results.hpp"
#include "stages.hpp"

namespace rocl_bench::compare {
namespace {

std::string class_of(const StageRun &run, const std::string &system) {
  if (system == "memcpy" || system == "cacheline" || system == "futex" || system == "yield") {
    return "limit";
  }
  const Config *c = run.config(system);
  return c != nullptr ? c->cls : "";
}

void row(std::FILE *f, const std::string &stage, const std::string &metric,
         const std::string &system, const std::string &cls, std::size_t size, int pairs,
         const std::string &round, double median, double min, double max, const std::string &unit) {
  std::fprintf(f, "%s,%s,%s,%s,%zu,%d,%s,%.9g,%.9g,%.9g,%s\n", stage.c_str(), metric.c_str(),
               system.c_str(), cls.c_str(), size, pairs, round.c_str(), median, min, max,
               unit.c_str());
}

void ratio_rows(std::FILE *f, const StageRun &run) {
  if (run.stage == "p2p") {
    for (const auto &cls : p2p_classes()) {
      const auto anchors = anchors_in(run, cls.name);
      const auto mine = rocl_systems_in(run, cls.name, cls.subject);
      for (const auto &s : run.summary) {
        if (std::find(mine.begin(), mine.end(), s.system) == mine.end()) continue;
        const Summary *best = best_of(
            run.summary, s.metric, anchors_like(run, s.metric, s.system, anchors), s.size, s.pairs);
        if (best == nullptr) continue;
        const double r = s.median / best->median;
        row(f, run.stage, s.metric, s.system + "/" + best->system, cls.name, s.size, s.pairs, "all",
            r, r, r, "ratio");
      }
    }
  }
  if (run.stage == "threads") {
    for (const auto &s : run.summary) {
      if (s.system != "rocl-shm") continue;
      const Summary *best =
          best_of(run.summary, s.metric, {"ompi-vader", "ompi-ucx", "mpich"}, s.size, s.pairs);
      if (best == nullptr) continue;
      const double r = s.median / best->median;
      row(f, run.stage, s.metric, s.system + "/" + best->system, "", s.size, s.pairs, "all", r, r,
          r, "ratio");
    }
  }
  if (run.stage == "oversub") {
    const Summary *futex1 = find_summary(run.summary, "pingpong-onecpu", "futex", 0, 2);
    for (const auto &s : run.summary) {
      if ((s.system == "rocl-inproc" || s.system == "rocl-shm") && futex1 != nullptr &&
          s.unit == "us") {
        const double r = s.median / futex1->median;
        row(f, run.stage, s.metric, s.system + "/futex-onecpu", "", s.size, s.pairs, "all", r, r, r,
            "ratio");
      }
      if (s.system == "rocl-mpi") {
        const Summary *best =
            best_of(run.summary, s.metric, {"ompi-vader", "mpich"}, s.size, s.pairs);
        if (best == nullptr) continue;
        const double r = s.median / best->median;
        row(f, run.stage, s.metric, s.system + "/" + best->system, "", s.size, s.pairs, "all", r, r,
            r, "ratio");
      }
    }
  }
  if (run.stage == "sustain") {
    for (const auto &s : sustainability(run)) {
      const std::pair<const char *, double> derived[] = {{"compute-ratio", s.compute_ratio},
                                                         {"rtt-ratio", s.rtt_ratio},
                                                         {"geomean", s.geomean},
                                                         {"rtt-best-ratio", s.rtt_best_ratio},
                                                         {"geomean-best", s.geomean_best}};
      for (const auto &[metric, v] : derived) {
        row(f, run.stage, metric, s.config, "", 0, 1, "all", v, v, v, "ratio");
      }
    }
  }
}

}  // namespace

bool write_results_csv(const std::string &path, const Results &results) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "stage,metric,system,class,size_bytes,pairs,round,median,min,max,unit\n");
  for (const auto &run : results.stages) {
    for (const auto &s : run.result.samples) {
      row(f, run.stage, s.metric, s.system, class_of(run, s.system), s.size, s.pairs,
          std::to_string(s.round), s.median, s.min, s.max, s.unit);
    }
  }
  for (const auto &run : results.stages) {
    for (const auto &s : run.summary) {
      row(f, run.stage, s.metric, s.system, class_of(run, s.system), s.size, s.pairs, "all",
          s.median, s.min, s.max, s.unit);
    }
    ratio_rows(f, run);
  }
  for (const auto &run : results.stages) {
    for (const auto &p : run.result.cpu_probes) {
      const std::string cls = class_of(run, p.system), round = std::to_string(p.round);
      row(f, run.stage, "cpu-before", p.system, cls, 64, 1, round, p.before_us, p.before_us,
          p.before_us, "us");
      row(f, run.stage, "cpu-after", p.system, cls, 64, 1, round, p.after_us, p.after_us,
          p.after_us, "us");
    }
  }
  for (const auto &run : results.stages) {
    for (const auto &t : run.result.timeouts) {
      std::fprintf(f, "%s,%s,%s,%s,%zu,%d,%d,,,,%s\n", run.stage.c_str(), t.metric.c_str(),
                   t.system.c_str(), class_of(run, t.system).c_str(), t.size, t.pairs, t.round,
                   t.skipped ? "timeout-skipped" : "timeout");
    }
  }
  return std::fclose(f) == 0;
}

}  // namespace rocl_bench::compare
