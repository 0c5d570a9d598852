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
#include <string>
#include <vector>

#include "compare.hpp"
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

void print_settings(std::FILE *out, const CompareOptions &o) {
  std::fprintf(out,
               "settings: %d round(s), %d rep(s) of ~%g s per point; sizes %s; pairs %s; "
               "ports %s; sustainability phases of %g s with %zu B messages%s\n",
               o.rounds, o.reps, o.seconds, join_sizes(o.sizes).c_str(), join_ints(o.pairs).c_str(),
               join_ints(o.ports).c_str(), o.sustain_seconds, o.sustain_size,
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

int run_comparison(const CompareOptions &o) {
  catch_interrupts();
  const Programs programs = locate_programs(o);
  Results results;
  for (const char *stage : kStages) {
    if (runs_stage(o, stage))
      results.stages.push_back({stage, configs_of(stage, o, programs), {}, {}});
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
  std::fflush(stdout);

  int total = 0;
  for (const auto &run : results.stages) total += planned_runs(run.configs, o);
  Progress progress(total);
  for (auto &run : results.stages) {
    if (interrupted()) break;
    progress.note("== " + run.stage);
    run_stage(run.stage, run.configs, o, programs, logs, progress, run.result);
    run.summary = summarize_rounds(run.result.samples);
  }

  print_tables(stdout, results, o);
  print_cpu_probes(stdout, results);
  print_goals(stdout, results, o.quick);
  const std::string csv = o.out + "/compare.csv";
  if (!write_results_csv(csv, results)) {
    std::fprintf(stderr, "rocl-bench compare: cannot write %s: %s\n", csv.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("\nCSV: %s\n", csv.c_str());
  if (o.plots && !interrupted()) {
    if (!programs.gnuplot.found()) {
      std::printf("plots: none, %s\n", programs.gnuplot.missing.c_str());
    } else {
      std::vector<std::string> pngs;
      const std::string why =
          write_plots(o.out, results, programs.gnuplot.path, logs + "/gnuplot.log", pngs);
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
    std::fprintf(stderr, "rocl-bench compare: %s\n(rocl-bench compare --help lists the options)\n",
                 error.c_str());
    return 2;
  }
  if (o.rank == "ports") return ports_rank_main(o);
  if (o.rank == "sustain") return sustain_rank_main(o);
  return run_comparison(o);
}

}  // namespace rocl_bench::compare
