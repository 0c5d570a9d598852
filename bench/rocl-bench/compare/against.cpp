// against.cpp - see against.hpp.
#include "against.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "child_process.hpp"
#include "report.hpp"
#include "results.hpp"
#include "text_table.hpp"

namespace rocl_bench::compare {
namespace {

std::string first_executable(const std::vector<std::string> &paths) {
  for (const auto &p : paths) {
    if (!find_program(p).empty()) return p;
  }
  return "";
}

// The median of each round of one point of one system.
std::map<int, const Sample *> rounds_of(const StageRun &run, const std::string &metric,
                                        const std::string &system, std::size_t size, int pairs) {
  std::map<int, const Sample *> by_round;
  for (const auto &s : run.result.samples) {
    if (s.metric == metric && s.system == system && s.size == size && s.pairs == pairs) {
      by_round[s.round] = &s;
    }
  }
  return by_round;
}

std::string verdict_of(const std::string &metric, double lo, double hi, int rounds) {
  // One round of one repetition measures no noise: nothing to judge by.
  if (rounds < 2 && lo == hi) return "?";
  const bool lower = lower_is_better(metric);
  if (lo > 1) return lower ? "worse" : "better";
  if (hi < 1) return lower ? "better" : "worse";
  return "~";
}

std::string point_of(const BuildRatio &r) {
  if (r.stage == "threads") return std::to_string(r.pairs) + " pairs";
  if (r.stage == "ports") return std::to_string(r.pairs) + " ports";
  if (r.stage == "sustain") return "-";
  if (r.stage == "oversub") return std::to_string(r.pairs) + "/cpu";
  return format_size(r.size);
}

}  // namespace

std::string locate_other_build(const std::string &dir, Programs &mine) {
  // This layout first, then the one before rocl-bench moved under bench/.
  const std::string bench = first_executable(
      {dir + "/bench/rocl-bench/rocl-bench", dir + "/tools/rocl-bench/rocl-bench"});
  if (bench.empty()) {
    return "no rocl-bench in " + dir + "/bench/rocl-bench/ or " + dir +
           "/tools/rocl-bench/ (build it there: ninja rocl-bench)";
  }
  const std::string roclrun = dir + "/tools/roclrun/roclrun";
  if (find_program(roclrun).empty()) return "no roclrun in " + dir + "/tools/roclrun/";
  mine.self = bench;
  mine.roclrun = {roclrun, ""};
  mine.anchors = bench.substr(0, bench.rfind('/')) + "/compare/anchors";
  for (auto [program, name] : {std::pair{&mine.mpi_pingpong_rocl, "/mpi_pingpong.rocl"},
                               std::pair{&mine.mpi_bench_rocl, "/mpi_bench.rocl"}}) {
    const std::string path = mine.anchors + name;
    *program = find_program(path).empty() ? Program{"", "the other build has no " + path}
                                          : Program{path, ""};
  }
  return "";
}

std::vector<Config> with_other_build(std::vector<Config> configs,
                                     std::shared_ptr<const Programs> other,
                                     const std::string &suffix, const std::string &why_not) {
  std::vector<Config> out;
  for (auto &c : configs) {
    const bool twin = is_rocl(c.name);
    out.push_back(c);
    if (!twin) continue;
    Config t = std::move(c);
    t.name += "@" + suffix;
    if (t.unavailable.empty() && t.name.starts_with("rocl-mpi-")) {
      t.unavailable = other->mpi_pingpong_rocl.missing;
    }
    if (t.unavailable.empty() && t.name.starts_with("rocl-mpi@")) {
      t.unavailable = other->mpi_bench_rocl.missing;
    }
    if (t.unavailable.empty()) t.unavailable = why_not;
    t.about = "the other build's: " + t.about;
    t.run = [run = std::move(t.run), other, name = t.name,
             base = out.back().name](const RunRequest &r) {
      // The twin's own earlier timeouts, under the name its run gives them.
      std::vector<TimedOut> before;
      for (const auto &late : r.timed_out != nullptr ? *r.timed_out : std::vector<TimedOut>{}) {
        if (late.system != name) continue;
        before.push_back(late);
        before.back().system = base;
      }
      const RunRequest theirs{r.options, *other, r.round, r.log, r.scratch, &before};
      RunOutcome outcome = run(theirs);
      for (auto &s : outcome.samples) s.system = name;
      for (auto &late : outcome.timeouts) late.system = name;
      return outcome;
    };
    out.push_back(std::move(t));
  }
  return out;
}

std::string stage_missing_in(const Programs &other, const std::string &stage) {
  // The stages every rocl-bench with compare had.
  if (stage == "p2p" || stage == "threads" || stage == "ports" || stage == "sustain") return "";
  char log[] = "/tmp/rocl-bench-help-XXXXXX";
  const int fd = ::mkstemp(log);
  if (fd < 0) return "cannot ask the other build's rocl-bench for its stages";
  ::close(fd);
  const ChildResult r = run_child({{other.self, "compare", "--help"}, {}, log, 30});
  const std::string help = read_file(log);
  std::remove(log);
  if (r.ok() && help.find(" " + stage + " ") != std::string::npos) return "";
  return "the other build's rocl-bench (" + other.self + ") has no compare stage " + stage;
}

std::vector<BuildRatio> build_ratios(const Results &results, const std::string &suffix) {
  std::vector<BuildRatio> ratios;
  for (const auto &run : results.stages) {
    const std::size_t first = ratios.size();
    std::vector<std::string> metrics;  // in the order they first appear
    for (const auto &s : run.summary) {
      if (std::find(metrics.begin(), metrics.end(), s.metric) == metrics.end()) {
        metrics.push_back(s.metric);
      }
    }
    for (const auto &s : run.summary) {
      const std::string twin = s.system + "@" + suffix;
      const Summary *t = run.find(s.metric, twin, s.size, s.pairs);
      if (t == nullptr || !is_sane(s.median) || !is_sane(t->median)) continue;
      BuildRatio r;
      r.stage = run.stage;
      r.metric = s.metric;
      r.system = s.system;
      r.size = s.size;
      r.pairs = s.pairs;
      r.mine = s.median;
      r.other = t->median;
      r.ratio = s.median / t->median;
      const auto mine = rounds_of(run, s.metric, s.system, s.size, s.pairs);
      const auto theirs = rounds_of(run, s.metric, twin, s.size, s.pairs);
      std::vector<double> per_round;
      for (const auto &[round, sample] : mine) {
        const auto other = theirs.find(round);
        if (other != theirs.end()) per_round.push_back(sample->median / other->second->median);
      }
      r.rounds = static_cast<int>(per_round.size());
      if (per_round.size() >= 2) {
        const auto [lo, hi] = std::minmax_element(per_round.begin(), per_round.end());
        r.spread_min = *lo;
        r.spread_max = *hi;
      } else {
        r.spread_min = s.min / t->max;
        r.spread_max = s.max / t->min;
      }
      r.verdict = verdict_of(s.metric, r.spread_min, r.spread_max, r.rounds);
      ratios.push_back(std::move(r));
    }
    // one table per metric: the stage's points grouped by it
    auto rank = [&](const BuildRatio &r) {
      return std::find(metrics.begin(), metrics.end(), r.metric) - metrics.begin();
    };
    std::stable_sort(ratios.begin() + static_cast<long>(first), ratios.end(),
                     [&](const BuildRatio &a, const BuildRatio &b) { return rank(a) < rank(b); });
  }
  return ratios;
}

void print_build_ratios(std::FILE *out, const std::vector<BuildRatio> &ratios,
                        const std::string &suffix, const std::string &dir) {
  std::fprintf(out,
               "\n== this build / the other (@%s: %s), the medians of the rounds; spread: the "
               "lowest and highest ratio of one round's figures (one round: of the repetitions' "
               "extremes); worse / better: the whole spread on one side of 1, ~: within it\n",
               suffix.c_str(), dir.c_str());
  int worse = 0, unjudged = 0;
  std::vector<std::string> worse_points;
  for (std::size_t i = 0; i < ratios.size();) {
    const std::string stage = ratios[i].stage, metric = ratios[i].metric;
    TextTable table({"system", "point", "this", suffix, "this/" + suffix, "spread", "rounds", ""});
    for (; i < ratios.size() && ratios[i].stage == stage && ratios[i].metric == metric; ++i) {
      const BuildRatio &r = ratios[i];
      table.add({r.system, point_of(r), format_figure(r.mine), format_figure(r.other),
                 format_figure(r.ratio),
                 r.verdict == "?" ? "none"
                                  : format_figure(r.spread_min) + "-" + format_figure(r.spread_max),
                 std::to_string(r.rounds), r.verdict});
      if (r.verdict == "?") ++unjudged;
      if (r.verdict == "worse") {
        ++worse;
        std::string point = stage + " " + metric + " " + r.system;
        if (r.stage != "sustain") point.append(" ").append(point_of(r));
        worse_points.push_back(std::move(point));
      }
    }
    std::fprintf(out, "\n%s %s (%s is better)\n", stage.c_str(), metric.c_str(),
                 lower_is_better(metric) ? "lower" : "higher");
    table.print(out);
  }
  std::fprintf(out, "\n%d of %zu point(s) worse beyond the noise", worse, ratios.size());
  if (unjudged != 0) {
    std::fprintf(out, " (%d not judged: one round of one repetition has no spread; use --rounds)",
                 unjudged);
  }
  std::fprintf(out, "%s", worse == 0 ? "\n" : ":");
  for (std::size_t k = 0; k < worse_points.size(); ++k) {
    std::fprintf(out, "%s %s", k == 0 ? "" : ",", worse_points[k].c_str());
  }
  if (worse != 0) std::fprintf(out, "\n");
  // The verdict is a sign test: where the builds do not differ, each
  // round's ratio is as likely above 1 as below, so all N on one side
  // happens by chance 2 x 2^-N of the time.
  int rounds = 0;
  for (const auto &r : ratios) rounds = std::max(rounds, r.rounds);
  if (rounds >= 2) {
    const double chance = std::ldexp(1.0, 1 - rounds);
    std::fprintf(out,
                 "(with %d rounds a point where the builds do not differ falls wholly on one side "
                 "of 1 by chance %.2g %% of the time, half of it on the worse side: about %.1f of "
                 "these %zu points; more rounds, fewer such)\n",
                 rounds, 100 * chance, chance / 2 * static_cast<double>(ratios.size()),
                 ratios.size());
  }
}

bool write_build_ratios_csv(const std::string &path, const std::vector<BuildRatio> &ratios) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f,
               "stage,metric,system,size_bytes,pairs,this,other,ratio,spread_min,spread_max,"
               "rounds,verdict\n");
  for (const auto &r : ratios) {
    std::fprintf(f, "%s,%s,%s,%zu,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%d,%s\n", r.stage.c_str(),
                 r.metric.c_str(), r.system.c_str(), r.size, r.pairs, r.mine, r.other, r.ratio,
                 r.spread_min, r.spread_max, r.rounds, r.verdict.c_str());
  }
  return std::fclose(f) == 0;
}

}  // namespace rocl_bench::compare
