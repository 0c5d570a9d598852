// stage.cpp - see stage.hpp.
#include "stage.hpp"

#include <cstdio>

#include "limits.hpp"
#include "report.hpp"

namespace rocl_bench::compare {

double run_timeout(const CompareOptions &o, std::size_t points, double seconds_per_rep) {
  // Warm-up and calibration take about a third of a repetition per point;
  // slow transports and a busy machine may take several times the plan.
  const double planned = static_cast<double>(points) * (o.reps + 1) * seconds_per_rep;
  return 60 + 10 * planned;
}

RunOutcome run_and_collect(
    const Invocation &inv, const std::string &rows_file,
    const std::function<std::vector<Sample>(const std::vector<CsvRow> &)> &to_samples) {
  RunOutcome outcome;
  if (!rows_file.empty()) std::remove(rows_file.c_str());
  const ChildResult r = run_child(inv);
  if (!r.ok()) {
    const std::string line = r.started && !r.interrupted ? failure_line(read_file(inv.log)) : "";
    outcome.why = r.describe() + (line.empty() ? "" : ": " + line);
    return outcome;
  }
  outcome.samples = to_samples(parse_rows(read_file(rows_file.empty() ? inv.log : rows_file)));
  if (outcome.samples.empty()) {
    outcome.why = "printed no figures: " + failure_line(read_file(inv.log));
    return outcome;
  }
  outcome.ok = true;
  return outcome;
}

int planned_runs(const std::vector<Config> &configs, const CompareOptions &o) {
  int n = 0;
  for (const auto &c : configs) {
    if (c.unavailable.empty()) ++n;
  }
  return n * o.rounds;
}

void run_stage(const std::string &stage, const std::vector<Config> &configs,
               const CompareOptions &o, const Programs &p, const std::string &logs_dir,
               Progress &progress, StageResult &result) {
  std::vector<const Config *> active;
  for (const auto &c : configs) {
    if (c.unavailable.empty()) active.push_back(&c);
  }
  for (int round = 1; round <= o.rounds && !interrupted(); ++round) {
    for (std::size_t k = 0; k < active.size() && !interrupted(); ++k) {
      const Config &c = *active[(k + static_cast<std::size_t>(round) - 1) % active.size()];
      if (result.failed.count(c.name) != 0) {  // counted as done, not run again
        progress.begin(stage + " round " + std::to_string(round) + "/" + std::to_string(o.rounds) +
                       ": " + c.name);
        progress.end(false, "skipped (failed in an earlier round)");
        continue;
      }
      const std::string base = logs_dir + "/" + std::to_string(round) + "-" + stage + "-" + c.name;
      RunRequest request{o, p, round, base + ".log", base, &result.timeouts};
      progress.begin(stage + " round " + std::to_string(round) + "/" + std::to_string(o.rounds) +
                     ": " + c.name);
      CpuProbe probe{c.name, round, probe_cpus(p.cpus), 0};
      RunOutcome outcome = c.run(request);
      probe.after_us = probe_cpus(p.cpus);
      if (probe.before_us > 0 && probe.after_us > 0) result.cpu_probes.push_back(probe);
      const std::size_t figures = outcome.samples.size() + outcome.timeouts.size();
      if (outcome.ok && figures < c.expected) {
        outcome.ok = false;
        outcome.why = "gave " + std::to_string(figures) + " of the " + std::to_string(c.expected) +
                      " figures expected (see " + request.log + ")";
      }
      if (outcome.ok) {
        std::size_t bad = 0;
        for (const auto &s : outcome.samples) {
          if (!is_sane(s)) ++bad;
        }
        if (bad != 0) {
          outcome.ok = false;
          outcome.why = std::to_string(bad) + " figure(s) not a positive finite number (see " +
                        request.log + ")";
        }
      }
      if (outcome.ok) {
        const std::size_t late = outcome.timeouts.size();
        progress.end(true, std::to_string(outcome.samples.size()) + " figures" +
                               (late == 0 ? "" : ", " + std::to_string(late) + " timed out"));
        for (auto &s : outcome.samples) result.samples.push_back(std::move(s));
        for (auto &t : outcome.timeouts) result.timeouts.push_back(std::move(t));
      } else {
        progress.end(false, outcome.why + " (log: " + request.log + ")");
        result.failed[c.name] = outcome.why + " (log: " + request.log + ")";
      }
    }
  }
}

Invocation rocl_job(const RunRequest &r, const std::string &role, const std::string &transport,
                    double timeout, std::vector<std::string> args) {
  const Programs &p = r.programs;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%.0f", timeout);
  Invocation inv;
  inv.argv = {p.roclrun.path, "--timeout", limit, "-n", "2", p.self, "compare", "--rank", role};
  for (auto &a : args) inv.argv.push_back(std::move(a));
  inv.env = {{"ROCL_TRANSPORTS", transport}};
  inv.log = r.log;
  inv.timeout_seconds = timeout + 15;  // roclrun stops the job first
  return inv;
}

std::vector<Config> keep_selected(const CompareOptions &o, std::vector<Config> all) {
  std::vector<Config> chosen;
  for (auto &c : all) {
    if (selected(o, c.name)) chosen.push_back(std::move(c));
  }
  return chosen;
}

}  // namespace rocl_bench::compare
