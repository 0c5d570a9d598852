// main.cpp - the rocl-bench command line: parses the options, prints what
// is in force, runs the selected benchmarks (between threads, or between two
// processes with --transport) and writes the table and CSV.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench_runner.hpp"
#include "check.hpp"
#include "compare.hpp"
#include "mpi_suite.hpp"
#include "ncs_suite.hpp"
#include "process_bench.hpp"
#include "report.hpp"
#include "rocl/rocl.h"

namespace {

using rocl_bench::BenchOptions;

const char kUsage[] =
    "usage: rocl-bench [BENCHMARK...] [OPTIONS]\n"
    "       rocl-bench compare [STAGE...] [OPTIONS]  (next to every anchor; compare --help)\n"
    "       rocl-bench mpi [OPTIONS]  (bench/mpi's suite under each MPI; mpi --help)\n"
    "       rocl-bench ncs [OPTIONS]  (NCS's user threads: switch, wake-up; ncs --help)\n"
    "Benchmarks between threads of one process (each thread is a rocl resource),\n"
    "or with --transport between two processes started under roclrun.\n"
    "\n"
    "BENCHMARK  all (default), anchor-spsc, latency, bandwidth, rate\n"
    "\n"
    "  --transport LIST  shm, tcp, ucx: run latency, bandwidth and rate between two\n"
    "                  processes (roclrun -n 2, ROCL_TRANSPORTS=<t>, rank 0 on the\n"
    "                  first cpu, rank 1 on the second), once per transport; rows\n"
    "                  are named <t>-latency, ...; inproc in the list also runs the\n"
    "                  thread benchmarks; anchor-spsc (if selected) runs between threads\n"
    "  --roclrun PATH  the roclrun to use [$ROCLRUN, next to rocl-bench,\n"
    "                  ../../tools/roclrun/ from it, PATH]\n"
    "  --sizes LIST    message sizes for latency and bandwidth, e.g. 8,1K,1M (K = 1024)\n"
    "                  [1,4,16,...,16M: powers of 4]\n"
    "  --bandwidth-sizes LIST  sizes for bandwidth only [--sizes; between\n"
    "                  processes the sizes >= 4K of --sizes]\n"
    "  --pairs LIST    thread pairs for rate [1,2,4,8]\n"
    "  --reps N        repetitions per point; the table shows median, min, max [5]\n"
    "  --time S        seconds per repetition [0.2]\n"
    "  --window N      messages between two acks in bandwidth and rate [64];\n"
    "                  0: next to no acks (one per 16 MiB of blocks: 65536\n"
    "                  small messages), as ucx_perftest's stream, which has none\n"
    "  --touch         bandwidth: also rows with the payload written and read\n"
    "  --cpu-pin       pin the two threads (processes) of a pair to different cpus\n"
    "                  [on when at least 2 cpus are usable]\n"
    "  --no-cpu-pin    do not pin\n"
    "  --csv FILE      CSV output [rocl-bench.csv]\n"
    "  --quick         a few seconds in all: sizes 8,64K, pairs 1,2, 1 rep of 0.02 s\n"
    "  --help          this text\n"
    "\n"
    "rocl options come from ROCL_* environment variables (printed at the top).\n";

[[noreturn]] void usage_error(const std::string &message) {
  std::fprintf(stderr, "rocl-bench: %s (see rocl-bench --help)\n", message.c_str());
  std::exit(2);
}

bool parse_count(std::string_view text, long long *out) {
  const auto v = rocl_bench::parse_count(text);
  if (v) *out = *v;
  return v.has_value();
}

template <class T>
std::vector<T> parse_list(const char *option, std::string_view text, long long min_value) {
  std::vector<T> values;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    long long v = 0;
    if (!parse_count(text.substr(0, comma), &v) || v < min_value) {
      usage_error(std::string(option) +
                  " wants a comma-separated list of numbers >= " + std::to_string(min_value) +
                  " (K, M, G suffixes allowed), not '" + std::string(text) + "'");
    }
    values.push_back(static_cast<T>(v));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  if (values.empty()) usage_error(std::string(option) + " wants at least one value");
  return values;
}

int parse_positive(const char *option, std::string_view text) {
  long long v = 0;
  if (!parse_count(text, &v) || v < 1 || v > 1'000'000) {
    usage_error(std::string(option) + " wants a positive integer, not '" + std::string(text) + "'");
  }
  return static_cast<int>(v);
}

// --window: a positive count, or 0 for next to no acks (window_for).
int parse_window(std::string_view text) {
  long long v = 0;
  if (!parse_count(text, &v) || v < 0 || v > 1'000'000) {
    usage_error("--window wants a count of messages (0: next to no acks), not '" +
                std::string(text) + "'");
  }
  return static_cast<int>(v);
}

double parse_seconds(const char *option, std::string_view text) {
  std::string s(text);
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v > 0) || v > 3600) {
    usage_error(std::string(option) + " wants seconds > 0, not '" + s + "'");
  }
  return v;
}

struct CommandLine {
  BenchOptions options = rocl_bench::default_options();
  std::vector<const rocl_bench::Benchmark *> selected;
  std::string csv = "rocl-bench.csv";
  bool threads = true;                  // run the thread benchmarks
  std::vector<std::string> transports;  // --transport: process runs, in order
  bool bandwidth_sizes_set = false;
  std::string roclrun;       // --roclrun
  std::string process_rank;  // --process-rank <t> (a rank under roclrun)
  std::string rows_out;      // --rows-out (rank 0's rows)
};

// "shm,tcp" -> {"shm", "tcp"}; inproc stands for the thread benchmarks.
// Exits with a usage error on any other name.
std::vector<std::string> parse_transports(std::string_view text) {
  std::vector<std::string> names;
  while (true) {
    const std::size_t comma = text.find(',');
    std::string name(text.substr(0, comma));
    if (name != "inproc" && !rocl_bench::is_process_transport(name)) {
      usage_error("--transport takes a list of inproc, shm, tcp, ucx, not '" + name + "'");
    }
    names.push_back(std::move(name));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return names;
}

CommandLine parse(int argc, char **argv) {
  CommandLine cl;
  bool quick = false, sizes_set = false, pairs_set = false, reps_set = false, time_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    auto take_value = [&]() -> std::string_view {
      if (has_value) return value;
      if (i + 1 >= argc) usage_error(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--transport") {  // may be repeated; each transport runs once
      for (auto &t : parse_transports(take_value())) {
        if (std::find(cl.transports.begin(), cl.transports.end(), t) == cl.transports.end()) {
          cl.transports.push_back(std::move(t));
        }
      }
    } else if (arg == "--roclrun") {
      cl.roclrun = std::string(take_value());
    } else if (arg == "--process-rank") {
      cl.process_rank = std::string(take_value());
    } else if (arg == "--rows-out") {
      cl.rows_out = std::string(take_value());
    } else if (arg == "--sizes") {
      cl.options.sizes = parse_list<std::size_t>("--sizes", take_value(), 1);
      sizes_set = true;
    } else if (arg == "--bandwidth-sizes") {
      cl.options.bandwidth_sizes = parse_list<std::size_t>("--bandwidth-sizes", take_value(), 1);
      cl.bandwidth_sizes_set = true;
    } else if (arg == "--pairs") {
      cl.options.pairs = parse_list<int>("--pairs", take_value(), 1);
      pairs_set = true;
    } else if (arg == "--reps") {
      cl.options.reps = parse_positive("--reps", take_value());
      reps_set = true;
    } else if (arg == "--time") {
      cl.options.seconds = parse_seconds("--time", take_value());
      time_set = true;
    } else if (arg == "--window") {
      cl.options.window = parse_window(take_value());
    } else if (arg == "--touch") {
      cl.options.touch = true;
    } else if (arg == "--cpu-pin") {
      cl.options.placement.pin = true;
    } else if (arg == "--no-cpu-pin") {
      cl.options.placement.pin = false;
    } else if (arg == "--csv") {
      cl.csv = std::string(take_value());
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "all") {
      for (const auto &b : rocl_bench::benchmarks()) cl.selected.push_back(&b);
    } else if (const auto *b = rocl_bench::find_benchmark(arg)) {
      cl.selected.push_back(b);
    } else {
      usage_error((arg.starts_with("-") ? "unknown option '" : "no benchmark named '") +
                  std::string(argv[i]) + "'");
    }
  }
  if (quick) {
    BenchOptions q = cl.options;
    rocl_bench::make_quick(q);
    if (!sizes_set) cl.options.sizes = q.sizes;
    if (!pairs_set) cl.options.pairs = q.pairs;
    if (!reps_set) cl.options.reps = q.reps;
    if (!time_set) cl.options.seconds = q.seconds;
  }
  if (cl.selected.empty()) {
    for (const auto &b : rocl_bench::benchmarks()) cl.selected.push_back(&b);
  }
  if (!cl.transports.empty()) {
    cl.threads =
        std::find(cl.transports.begin(), cl.transports.end(), "inproc") != cl.transports.end();
    std::erase(cl.transports, "inproc");
  }
  return cl;
}

// The benchmarks of a process run: the selected ones that run between processes.
std::vector<std::string> process_benchmarks(const CommandLine &cl) {
  std::vector<std::string> names;
  for (const auto *b : cl.selected) {
    if (rocl_bench::is_process_benchmark(b->name)) names.emplace_back(b->name);
  }
  return names;
}

// The options of the process runs: bandwidth, unless told its sizes, runs
// the sizes >= 4K (below that a stream measures the message rate, which
// `rate` does).
BenchOptions process_options(const CommandLine &cl) {
  BenchOptions o = cl.options;
  if (!cl.bandwidth_sizes_set) {
    o.bandwidth_sizes.clear();
    for (std::size_t s : o.sizes) {
      if (s >= 4096) o.bandwidth_sizes.push_back(s);
    }
    if (o.bandwidth_sizes.empty()) o.bandwidth_sizes = o.sizes;
  }
  return o;
}

// The 1-minute load average, or -1 if unknown.
double load_average() {
  double load = -1;
  if (std::FILE *f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

void print_settings(const CommandLine &cl) {
  const BenchOptions &o = cl.options;
  if (cl.transports.empty()) {
    std::printf("rocl-bench: benchmarks between threads of one process\n");
  } else {
    std::string list;
    for (const auto &t : cl.transports) {
      if (!list.empty()) list += ", ";
      list += t;
    }
    std::printf("rocl-bench: benchmarks between two processes over %s%s\n", list.c_str(),
                cl.threads ? ", and between threads of one process" : "");
  }
  std::printf("cpus: %zu usable of %ld online; cpu pinning %s\n", o.placement.cpus.size(),
              sysconf(_SC_NPROCESSORS_ONLN), o.placement.pin ? "on" : "off");
  const double load = load_average();
  if (load >= 0) {
    const bool busy = load > 0.5 * static_cast<double>(o.placement.cpus.size());
    std::printf("load average before the run: %.2f%s\n", load,
                busy ? " (other work competes for the cpus: expect noisy, slower figures)" : "");
  }
  std::printf("points: %d rep(s) of ~%.3g s each; sizes %s; pairs %s; window %d%s\n", o.reps,
              o.seconds, rocl_bench::join_sizes(o.sizes).c_str(),
              rocl_bench::join_ints(o.pairs).c_str(), o.window, o.touch ? "; touch on" : "");
  if (!cl.transports.empty()) {
    std::printf("bandwidth sizes between processes: %s\n",
                rocl_bench::join_sizes(rocl_bench::bandwidth_sizes(process_options(cl))).c_str());
  } else if (cl.bandwidth_sizes_set) {
    std::printf("bandwidth sizes: %s\n", rocl_bench::join_sizes(o.bandwidth_sizes).c_str());
  }
  if (cl.threads) {
    std::printf("rocl options in force%s:\n", cl.transports.empty() ? "" : " (threads)");
    std::fflush(stdout);
    rocl_print_options(stdout);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char **argv) {
  // rocl next to every anchor: a command of its own (compare/compare.hpp).
  if (argc >= 2 && std::string_view(argv[1]) == "compare") {
    return rocl_bench::compare::compare_main(argc - 1, argv + 1);
  }
  // bench/mpi's suite under each MPI (compare/mpi_suite.hpp).
  if (argc >= 2 && std::string_view(argv[1]) == "mpi") {
    return rocl_bench::compare::mpi_main(argc - 1, argv + 1);
  }
  // NCS's user threads (compare/ncs_suite.hpp).
  if (argc >= 2 && std::string_view(argv[1]) == "ncs") {
    return rocl_bench::compare::ncs_main(argc - 1, argv + 1);
  }
  CommandLine cl = parse(argc, argv);
  if (!cl.process_rank.empty()) {  // one of the two ranks of a process run
    if (!rocl_bench::is_process_transport(cl.process_rank)) {
      usage_error("--process-rank takes shm or tcp, not '" + cl.process_rank + "'");
    }
    rocl_bench::ProcessRun run{cl.process_rank, process_benchmarks(cl), cl.options, ""};
    return rocl_bench::process_rank_main(run, cl.rows_out);
  }
  std::string roclrun;
  if (!cl.transports.empty() && !process_benchmarks(cl).empty()) {
    roclrun = rocl_bench::find_roclrun(cl.roclrun);  // before anything runs
  }
  print_settings(cl);

  // Between threads: everything selected, or with --transport only the
  // anchor (unless inproc is in the list). The anchor does not need rocl.
  std::vector<const rocl_bench::Benchmark *> in_threads;
  for (const auto *b : cl.selected) {
    if (cl.threads || std::string_view(b->name) == "anchor-spsc") in_threads.push_back(b);
  }
  rocl_bench::Report report;
  if (cl.threads) rocl_bench::check(rocl_init(), "rocl_init");
  rocl_bench::run_benchmarks(in_threads, cl.options, report);
  if (cl.threads) rocl_bench::check(rocl_exit(), "rocl_exit");

  bool failed = false;
  if (!roclrun.empty()) {
    for (const auto &transport : cl.transports) {
      rocl_bench::ProcessRun run{transport, process_benchmarks(cl), process_options(cl), roclrun};
      std::vector<rocl_bench::Row> rows;
      if (!rocl_bench::run_in_processes(run, rows)) failed = true;
      report.add(std::move(rows));  // after a failure: what finished before it
    }
  }

  std::printf("\n");
  report.print_table(stdout);
  if (!report.write_csv(cl.csv)) {
    std::fprintf(stderr, "rocl-bench: cannot write %s: %s\n", cl.csv.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("\nCSV written to %s\n", cl.csv.c_str());
  if (failed) std::fprintf(stderr, "rocl-bench: a process run failed (see above)\n");
  return failed ? 1 : 0;
}
