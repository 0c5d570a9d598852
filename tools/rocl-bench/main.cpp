// main.cpp - the rocl-bench command line: parses the options, prints what
// is in force, runs the selected benchmarks and writes the table and CSV.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench_runner.hpp"
#include "check.hpp"
#include "report.hpp"
#include "rocl/rocl.h"

namespace {

using rocl_bench::BenchOptions;

const char kUsage[] =
    "usage: rocl-bench [BENCHMARK...] [OPTIONS]\n"
    "Benchmarks between threads of one process (each thread is a rocl resource).\n"
    "\n"
    "BENCHMARK  all (default), anchor-spsc, latency, bandwidth, rate\n"
    "\n"
    "  --sizes LIST    message sizes for latency and bandwidth, e.g. 8,1K,1M (K = 1024)\n"
    "                  [1,4,16,...,16M: powers of 4]\n"
    "  --pairs LIST    thread pairs for rate [1,2,4,8]\n"
    "  --reps N        repetitions per point; the table shows median, min, max [5]\n"
    "  --time S        seconds per repetition [0.2]\n"
    "  --window N      messages between two acks in bandwidth and rate [64]\n"
    "  --touch         bandwidth: also rows with the payload written and read\n"
    "  --cpu-pin       pin the two threads of a pair to different cpus\n"
    "                  [on when at least 2 cpus are usable]\n"
    "  --no-cpu-pin    do not pin\n"
    "  --csv FILE      CSV output [rocl-bench.csv]\n"
    "  --quick         a few seconds in all: sizes 8,64K, pairs 1,2, 1 rep of 0.02 s\n"
    "  --help          this text\n"
    "\n"
    "rocl options come from ROCL_* environment variables (printed at the top).\n";

[[noreturn]] void usage_error(const std::string &message) {
  std::fprintf(stderr, "rocl-bench: %s\n(rocl-bench --help lists the options)\n", message.c_str());
  std::exit(2);
}

bool parse_count(std::string_view text, long long *out) {
  std::string s(text);
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || v < 0) return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  if (*end != '\0' || v > (1ll << 40) >> shift) return false;
  *out = v << shift;
  return true;
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
};

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
    } else if (arg == "--sizes") {
      cl.options.sizes = parse_list<std::size_t>("--sizes", take_value(), 1);
      sizes_set = true;
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
      cl.options.window = parse_positive("--window", take_value());
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
      usage_error("unknown argument '" + std::string(argv[i]) + "'");
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
  return cl;
}

std::string join_sizes(const std::vector<std::size_t> &sizes) {
  std::string text;
  for (std::size_t s : sizes) {
    if (!text.empty()) text += ',';
    text += rocl_bench::format_size(s);
  }
  return text;
}

std::string join_pairs(const std::vector<int> &pairs) {
  std::string text;
  for (int p : pairs) {
    if (!text.empty()) text += ',';
    text += std::to_string(p);
  }
  return text;
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
  std::printf("rocl-bench: benchmarks between threads of one process\n");
  std::printf("cpus: %zu usable of %ld online; cpu pinning %s\n", o.placement.cpus.size(),
              sysconf(_SC_NPROCESSORS_ONLN), o.placement.pin ? "on" : "off");
  const double load = load_average();
  if (load >= 0) {
    const bool busy = load > 0.5 * static_cast<double>(o.placement.cpus.size());
    std::printf("load average before the run: %.2f%s\n", load,
                busy ? " (other work competes for the cpus: expect noisy, slower figures)" : "");
  }
  std::printf("points: %d rep(s) of ~%.3g s each; sizes %s; pairs %s; window %d%s\n", o.reps,
              o.seconds, join_sizes(o.sizes).c_str(), join_pairs(o.pairs).c_str(), o.window,
              o.touch ? "; touch on" : "");
  std::printf("rocl options in force:\n");
  std::fflush(stdout);
  rocl_print_options(stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
  CommandLine cl = parse(argc, argv);
  print_settings(cl);

  rocl_bench::check(rocl_init(), "rocl_init");
  rocl_bench::Report report;
  rocl_bench::run_benchmarks(cl.selected, cl.options, report);
  rocl_bench::check(rocl_exit(), "rocl_exit");

  std::printf("\n");
  report.print_table(stdout);
  if (!report.write_csv(cl.csv)) {
    std::fprintf(stderr, "rocl-bench: cannot write %s: %s\n", cl.csv.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("\nCSV written to %s\n", cl.csv.c_str());
  return 0;
}
