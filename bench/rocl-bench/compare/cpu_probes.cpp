// cpu_probes.cpp - the cpu probes of a comparison on the terminal and in
// the CSV (see CpuProbe in stage.hpp and results.hpp).
#include <algorithm>
#include <cstdio>

#include "results.hpp"
#include "text_table.hpp"

namespace rocl_bench::compare {

double probes_median(const std::vector<CpuProbe> &probes) {
  std::vector<double> all;
  for (const auto &p : probes) {
    all.push_back(p.before_us);
    all.push_back(p.after_us);
  }
  return median_of(std::move(all));
}

bool slow_probe(double us, double median) {
  return median > 0 && us > kSlowProbeFactor * median;
}

std::string probe_cell(const CpuProbe &p, double median) {
  auto one = [&](double us) { return format_figure(us) + (slow_probe(us, median) ? "*" : ""); };
  return one(p.before_us) + "/" + one(p.after_us);
}

namespace {

// How many of a run's two probes are slow: 0, 1 or 2.
int slow_ends(const CpuProbe &p, double median) {
  return (slow_probe(p.before_us, median) ? 1 : 0) + (slow_probe(p.after_us, median) ? 1 : 0);
}

// "rocl-shm 2 of 5, ompi-vader 1 of 5": the systems with a slow probe
// around at least one of their runs, in column order.
std::string systems_with_slow_runs(const StageRun &run, double median) {
  std::string text;
  for (const auto &c : run.configs) {
    int runs = 0, slow = 0;
    for (const auto &p : run.result.cpu_probes) {
      if (p.system != c.name) continue;
      ++runs;
      if (slow_ends(p, median) != 0) ++slow;
    }
    if (slow == 0) continue;
    text += (text.empty() ? "" : ", ") + c.name + " " + std::to_string(slow) + " of " +
            std::to_string(runs);
  }
  return text.empty() ? "none" : text;
}

void print_stage_probes(std::FILE *out, const StageRun &run) {
  const auto &probes = run.result.cpu_probes;
  const double median = probes_median(probes);
  int rounds = 0;
  for (const auto &p : probes) rounds = std::max(rounds, p.round);
  std::vector<std::string> header = {run.stage};
  for (int r = 1; r <= rounds; ++r) header.push_back("round " + std::to_string(r));
  TextTable table(header);
  for (const auto &c : run.configs) {
    std::vector<std::string> row = {c.name};
    bool any = false;
    for (int r = 1; r <= rounds; ++r) {
      auto it = std::find_if(probes.begin(), probes.end(),
                             [&](const CpuProbe &p) { return p.system == c.name && p.round == r; });
      any = any || it != probes.end();
      row.push_back(it != probes.end() ? probe_cell(*it, median) : "-");
    }
    if (any) table.add(row);
  }
  int slow = 0;
  for (const auto &p : probes) slow += slow_ends(p, median);
  std::fprintf(out,
               "\n%s: median probe %s us; %d of %zu probes over %gx it; runs next to one: %s\n",
               run.stage.c_str(), format_figure(median).c_str(), slow, 2 * probes.size(),
               kSlowProbeFactor, systems_with_slow_runs(run, median).c_str());
  table.print(out);
}

}  // namespace

void print_cpu_probes(std::FILE *out, const Results &results) {
  bool header = false;
  for (const auto &run : results.stages) {
    if (run.result.cpu_probes.empty()) continue;
    if (!header) {
      std::fprintf(
          out,
          "\nthe two cpus around each run: a cache line's one-way time between them "
          "just before / just after the run, us (* = over %gx the stage's median: "
          "the cpus had moved further apart, and that run's figures between them may "
          "be slower for it; a virtual machine's cpus may move between physical ones as it runs)\n",
          kSlowProbeFactor);
      header = true;
    }
    print_stage_probes(out, run);
  }
}

}  // namespace rocl_bench::compare
