// compare_main.cpp - see compare.hpp: sets up, runs the stages, shows the
// results, and decides the exit status.
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "against.hpp"
#include "compare.hpp"
#include "goals.hpp"
#include "oversub.hpp"
#include "report.hpp"
#include "results.hpp"
#include "rocl_ranks.hpp"
#include "stages.hpp"

namespace rocl_bench::compare {

namespace {

std::vector<Config> configs_of(const std::string &stage, const CompareOptions &o,
                               const Programs &p) {
  if (stage == "p2p") return p2p_configs(o, p);
  if (stage == "threads") return thread_configs(o, p);
  if (stage == "ports") return port_configs(o, p);
  if (stage == "oversub") return oversub_configs(o, p);
  return sustain_configs(o, p);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown cpu";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "unknown";
}

}  // namespace

void print_machine(std::FILE *out, const Programs &p) {
  struct utsname u;
  uname(&u);
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  std::fprintf(out, "machine: %s, %zu usable cpu(s) of %ld online; %s %s; %s\n",
               cpu_model().c_str(), p.cpus.size(), sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
               u.release, when);
  std::fprintf(out, "load average before the run: %s\n", load_average().c_str());
}

namespace {

void print_settings(std::FILE *out, const CompareOptions &o) {
  std::fprintf(out,
               "settings: %d round(s), %d rep(s) of ~%g s per point; sizes %s; pairs %s; "
               "ports %s; sustainability phases of %g s with %zu B messages; %ld oversub "
               "collective calls per run%s\n",
               o.rounds, o.reps, o.seconds, join_sizes(o.sizes).c_str(), join_ints(o.pairs).c_str(),
               join_ints(o.ports).c_str(), o.sustain_seconds, o.sustain_size, o.oversub_iters,
               o.quick ? " (--quick)" : "");
}

void print_list(std::FILE *out, const std::vector<StageRun> &stages) {
  for (const auto &run : stages) {
    std::fprintf(out, "\n%s:\n", run.stage.c_str());
    for (const auto &c : run.configs) {
      std::fprintf(out, "  %-16s %-6s %s\n", c.name.c_str(), c.unavailable.empty() ? "ok" : "n/a",
                   c.unavailable.empty() ? c.about.c_str() : c.unavailable.c_str());
    }
  }
  for (const auto &[name, why] : not_measured()) {
    std::fprintf(out, "  %-16s %-6s %s\n", name.c_str(), "n/a", why.c_str());
  }
}

bool make_folder(const std::string &path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    std::fprintf(stderr, "rocl-bench compare: cannot make %s: %s\n", path.c_str(),
                 ec.message().c_str());
    return false;
  }
  return true;
}

// The warnings and failures that decide the exit status; prints them.
int verdict(const Results &results, const CompareOptions &o) {
  int failures = 0;
  for (const auto &run : results.stages) {
    for (const auto &c : run.configs) {
      if (!c.unavailable.empty()) {
        std::fprintf(stderr, "rocl-bench compare: warning: %s %s not measured: %s\n",
                     run.stage.c_str(), c.name.c_str(), c.unavailable.c_str());
      }
    }
    for (const auto &[name, why] : run.result.failed) {
      std::fprintf(stderr, "rocl-bench compare: %s %s failed: %s\n", run.stage.c_str(),
                   name.c_str(), why.c_str());
      ++failures;
    }
  }
  if (failures != 0) {
    std::fprintf(stderr, "rocl-bench compare: %d configuration(s) failed%s\n", failures,
                 o.quick ? " (--quick checks that every benchmark runs and gives positive, finite "
                           "figures)"
                         : "");
    return 1;
  }
  if (o.quick) {
    std::fprintf(stderr,
                 "rocl-bench compare --quick: every benchmark that can run here ran and gave "
                 "positive, finite figures\n");
  }
  return 0;
}

// The goals file, read before anything runs: a malformed file stops the
// run at once rather than after it. Returns "" or the error.
std::string read_goals(const CompareOptions &o, std::string &path, std::vector<Goal> &goals) {
  path = o.goals.empty() ? default_goals_path() : o.goals;
  if (path.empty()) return "";  // none installed: the goals are left out, said after the tables
  return load_goals(path, goals);
}

int run_comparison(const CompareOptions &o) {
  catch_interrupts();
  const Programs programs = locate_programs(o);
  std::string goals_path;
  std::vector<Goal> goals;
  if (const std::string why = read_goals(o, goals_path, goals); !why.empty()) {
    std::fprintf(stderr, "rocl-bench compare: %s\n", why.c_str());
    return 2;
  }
  std::shared_ptr<const Programs> other;
  if (!o.against.empty()) {
    Programs theirs = programs;
    if (const std::string why = locate_other_build(o.against, theirs); !why.empty()) {
      std::fprintf(stderr, "rocl-bench compare: --against %s: %s\n", o.against.c_str(),
                   why.c_str());
      return 2;
    }
    other = std::make_shared<const Programs>(std::move(theirs));
  }
  Results results;
  for (const char *stage : kStages) {
    if (!runs_stage(o, stage)) continue;
    auto configs = configs_of(stage, o, programs);
    if (other) {
      configs = with_other_build(std::move(configs), other, o.against_name,
                                 stage_missing_in(*other, stage));
    }
    results.stages.push_back({stage, std::move(configs), {}, {}});
  }
  if (o.list) {
    print_list(stdout, results.stages);
    return 0;
  }
  const std::string logs = o.out + "/logs";
  if (!make_folder(logs)) return 1;

  std::printf("rocl-bench compare: rocl next to the anchors, in interleaved rounds\n");
  print_machine(stdout, programs);
  print_settings(stdout, o);
  std::printf("outputs: %s/compare.csv, %s/*.png, logs in %s/\n", o.out.c_str(), o.out.c_str(),
              logs.c_str());
  if (other) {
    std::printf(
        "against: the build in %s (rocl-bench %s, roclrun %s): its systems are named "
        "<system>@%s\n",
        o.against.c_str(), other->self.c_str(), other->roclrun.path.c_str(),
        o.against_name.c_str());
  }
  std::fflush(stdout);

  int total = 0;
  for (const auto &run : results.stages) total += planned_runs(run.configs, o);
  Progress progress(total);
  for (auto &run : results.stages) {
    if (interrupted()) break;
    progress.note("== " + run.stage);
    run_stage(run.stage, run.configs, o, programs, logs, progress, run.result);
    run.summary = summarize_rounds(run.result.samples);
    drop_timed_out(run);
  }

  print_tables(stdout, results, o);
  print_cpu_probes(stdout, results);
  if (goals_path.empty()) {
    std::printf(
        "\ngoals: none judged (no goals.txt next to rocl-bench nor in the source tree; "
        "--goals FILE)\n");
  }
  print_goals(stdout, results, goals, goals_path, o.quick);
  std::vector<BuildRatio> ratios;
  if (other) {
    ratios = build_ratios(results, o.against_name);
    print_build_ratios(stdout, ratios, o.against_name, o.against);
  }
  const std::string csv = o.out + "/compare.csv";
  const std::string against_csv = o.out + "/against.csv";
  for (const std::string &path : {csv, other ? against_csv : std::string()}) {
    if (path.empty()) continue;
    if (!(path == csv ? write_results_csv(path, results) : write_build_ratios_csv(path, ratios))) {
      std::fprintf(stderr, "rocl-bench compare: cannot write %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::printf("\nCSV: %s%s\n", csv.c_str(), other ? (", " + against_csv).c_str() : "");
  if (o.plots && !interrupted()) {
    if (!programs.gnuplot.found()) {
      std::printf("plots: none, %s\n", programs.gnuplot.missing.c_str());
    } else {
      std::vector<std::string> pngs;
      const std::string why = write_plots(o.out, results, compare_plots(), "rocl-bench compare",
                                          programs.gnuplot.path, logs + "/gnuplot.log", pngs);
      if (!why.empty()) {
        std::printf("plots: failed, %s\n", why.c_str());
      } else {
        std::printf("plots:");
        for (const auto &png : pngs) std::printf(" %s", png.c_str());
        std::printf("%s\n",
                    pngs.empty() ? " none (no figures)" : " (data and plots.gp beside them)");
      }
    }
  }
  std::fflush(stdout);
  if (interrupted()) {
    std::fprintf(stderr, "rocl-bench compare: interrupted; the tables show what ran before\n");
    return 130;
  }
  return verdict(results, o);
}

}  // namespace

int compare_main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto &a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kCompareUsage, stdout);
      return 0;
    }
  }
  CompareOptions o;
  const std::string error = parse_compare_options(args, o);
  if (!error.empty()) {
    std::fprintf(stderr, "rocl-bench compare: %s (see rocl-bench compare --help)\n", error.c_str());
    return 2;
  }
  if (o.rank == "ports") return ports_rank_main(o);
  if (o.rank == "sustain") return sustain_rank_main(o);
  if (o.rank == "oversub-threads") return oversub_threads_main(o);
  if (o.rank == "oversub-ring") return oversub_ring_main(o);
  return run_comparison(o);
}

}  // namespace rocl_bench::compare
