// compare_options.cpp - see compare_options.hpp.
#include "compare_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "report.hpp"

namespace rocl_bench::compare {

const char kCompareUsage[] =
    "usage: rocl-bench compare [STAGE...] [OPTIONS]\n"
    "rocl next to every anchor installed (Open MPI, MPICH, UCX, ZeroMQ, NNG) and\n"
    "the physical limits, in interleaved rounds, in one run.\n"
    "\n"
    "STAGE  p2p      one-way latency, bandwidth and message rate per size\n"
    "       threads  message rate with 1..16 thread pairs between two processes\n"
    "       ports    message rate as the destination resources grow\n"
    "       sustain  compute loop and ping-pong sharing the cpus (RoCL 5.2)\n"
    "       oversub  more threads and processes than cpus: ping-pong, token ring\n"
    "                and rate at 1, 2, 4 per cpu, with busy competitors, next to\n"
    "                futex and sched_yield hand-offs; MPI collectives at 2 and 4\n"
    "                ranks per cpu (rocl's MPI, Open MPI, MPICH)\n"
    "       (all five when none is named)\n"
    "\n"
    "  --systems LIST    only these systems (a name selects the names that start\n"
    "                    with it and '-': rocl, ompi, ucx-tcp, ...); --list shows them\n"
    "  --sizes LIST      p2p sizes, e.g. 8,4K,1M [1,4,16,...,16M: powers of 4]\n"
    "  --pairs LIST      thread pairs [1,2,4,8,16]\n"
    "  --ports LIST      destination resources [1,4,16,64]\n"
    "  --rounds N        interleaved rounds, the order rotating [5]\n"
    "  --reps N          repetitions per point inside a run [3]\n"
    "  --time S          seconds per repetition [0.1]\n"
    "  --sustain-time S  seconds per sustainability phase [0.2]\n"
    "  --sustain-size N  sustainability ping-pong bytes [8]\n"
    "  --oversub-iters N oversub: MPI collective calls per run, after N/10 untimed\n"
    "                    ones [1000]; a run that passes its time limit shows 'timeout'\n"
    "  --out DIR         compare.csv, the plots and logs/ [rocl-bench-compare]\n"
    "  --anchors DIR     the anchor programs [compare/anchors next to rocl-bench]\n"
    "  --roclrun PATH    the roclrun to use [as rocl-bench --transport finds it]\n"
    "  --goals FILE      the goals judged after the tables [goals.txt next to rocl-bench]\n"
    "  --against DIR     also run rocl's own systems from the build in DIR (an older\n"
    "                    commit's), alternated with this build's in each round, named\n"
    "                    SYSTEM@base; prints this/other ratios with their spread\n"
    "  --against-name N  the suffix of the other build's systems [base]\n"
    "  --no-plots        no gnuplot\n"
    "  --list            list the systems, whether each can run and why not; run nothing\n"
    "  --quick           a check that everything runs (< 1 min): sizes 8,64K, pairs 1,2,\n"
    "                    ports 1,4, 1 round of 1 rep of 0.02 s, 50 oversub collective\n"
    "                    calls; exit 1 naming what\n"
    "                    failed or printed a figure that is not a positive number\n"
    "  --help            this text\n"
    "\n"
    "Progress goes to stderr, the tables to stdout. An anchor that is not installed\n"
    "is shown as n/a with the reason. Exit status: 0, 1 if a run failed, 2 for a\n"
    "bad command line.\n";

namespace {

std::optional<std::vector<int>> parse_int_list(std::string_view text, int most) {
  auto sizes = parse_size_list(text);
  if (!sizes) return std::nullopt;
  std::vector<int> values;
  for (std::size_t v : *sizes) {
    if (v > static_cast<std::size_t>(most)) return std::nullopt;
    values.push_back(static_cast<int>(v));
  }
  return values;
}

std::optional<double> parse_seconds(std::string_view text) {
  std::string s(text);
  char *end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 3600) {
    return std::nullopt;
  }
  return v;
}

// Which options the command line set, so that --quick leaves them alone.
struct Given {
  bool sizes = false, pairs = false, ports = false, rounds = false, reps = false, time = false,
       sustain_time = false, oversub_iters = false;
};

void apply_quick(CompareOptions &o, const Given &g) {
  if (!g.sizes) o.sizes = {8, std::size_t{64} << 10};
  if (!g.pairs) o.pairs = {1, 2};
  if (!g.ports) o.ports = {1, 4};
  if (!g.rounds) o.rounds = 1;
  if (!g.reps) o.reps = 1;
  if (!g.time) o.seconds = 0.02;
  if (!g.sustain_time) o.sustain_seconds = 0.05;
  if (!g.oversub_iters) o.oversub_iters = 50;
}

}  // namespace

CompareOptions default_compare_options() {
  CompareOptions o;
  for (std::size_t s = 1; s <= (std::size_t{16} << 20); s *= 4) o.sizes.push_back(s);
  o.pairs = {1, 2, 4, 8, 16};
  o.ports = {1, 4, 16, 64};
  return o;
}

std::optional<std::vector<std::size_t>> parse_size_list(std::string_view text) {
  std::vector<std::size_t> values;
  while (true) {
    const std::size_t comma = text.find(',');
    const auto v = parse_count(text.substr(0, comma));
    if (!v || *v < 1) return std::nullopt;
    values.push_back(static_cast<std::size_t>(*v));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return values;
}

std::string parse_compare_options(const std::vector<std::string> &args, CompareOptions &out) {
  CompareOptions o = default_compare_options();
  Given given;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view value;
    bool has_value = false;
    if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    auto take = [&]() -> std::optional<std::string_view> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return std::nullopt;
      return std::string_view(args[++i]);
    };
    auto needs = [&](const char *what) { return std::string(arg) + " " + what; };
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--no-plots") {
      o.plots = false;
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--sizes") {
      const auto v = take();
      const auto sizes = v ? parse_size_list(*v) : std::nullopt;
      if (!sizes) return needs("wants a list of sizes > 0 such as 8,4K,1M");
      o.sizes = *sizes;
      given.sizes = true;
    } else if (arg == "--pairs" || arg == "--ports") {
      const auto v = take();
      const auto list = v ? parse_int_list(*v, arg == "--pairs" ? 256 : 4096) : std::nullopt;
      if (!list)
        return needs(arg == "--pairs" ? "wants a list of 1..256" : "wants a list of 1..4096");
      (arg == "--pairs" ? o.pairs : o.ports) = *list;
      (arg == "--pairs" ? given.pairs : given.ports) = true;
    } else if (arg == "--rounds" || arg == "--reps") {
      const auto v = take();
      const auto n = v ? parse_count(*v) : std::nullopt;
      if (!n || *n < 1 || *n > 1000) return needs("wants a number from 1 to 1000");
      (arg == "--rounds" ? o.rounds : o.reps) = static_cast<int>(*n);
      (arg == "--rounds" ? given.rounds : given.reps) = true;
    } else if (arg == "--time" || arg == "--sustain-time") {
      const auto v = take();
      const auto s = v ? parse_seconds(*v) : std::nullopt;
      if (!s) return needs("wants seconds > 0");
      (arg == "--time" ? o.seconds : o.sustain_seconds) = *s;
      (arg == "--time" ? given.time : given.sustain_time) = true;
    } else if (arg == "--sustain-size") {
      const auto v = take();
      const auto n = v ? parse_count(*v) : std::nullopt;
      if (!n || *n < 1 || *n > (1 << 26)) return needs("wants bytes from 1 to 64M");
      o.sustain_size = static_cast<std::size_t>(*n);
    } else if (arg == "--oversub-iters") {
      const auto v = take();
      const auto n = v ? parse_count(*v) : std::nullopt;
      if (!n || *n < 1 || *n > 10'000'000) return needs("wants a count from 1 to 10M");
      o.oversub_iters = static_cast<long>(*n);
      given.oversub_iters = true;
    } else if (arg == "--systems") {
      const auto v = take();
      if (!v || split_list(*v).empty()) return needs("wants a list of names");
      for (auto &name : split_list(*v)) o.systems.push_back(std::move(name));
    } else if (arg == "--out" || arg == "--anchors" || arg == "--roclrun" || arg == "--rank" ||
               arg == "--goals" || arg == "--against" || arg == "--against-name" ||
               arg == "--oversub") {
      const auto v = take();
      if (!v || v->empty()) return needs("wants a value");
      std::string &field = arg == "--out"       ? o.out
                           : arg == "--anchors" ? o.anchors
                           : arg == "--roclrun" ? o.roclrun
                           : arg == "--goals"   ? o.goals
                           : arg == "--against" ? o.against
                           : arg == "--rank"    ? o.rank
                           : arg == "--oversub" ? o.oversub
                                                : o.against_name;
      field = std::string(*v);
    } else if (std::find(std::begin(kStages), std::end(kStages), arg) != std::end(kStages)) {
      if (std::find(o.stages.begin(), o.stages.end(), arg) == o.stages.end()) {
        o.stages.emplace_back(arg);
      }
    } else {
      return "unknown argument '" + std::string(args[i]) + "'";
    }
  }
  if (!o.rank.empty() && o.rank != "ports" && o.rank != "sustain" && o.rank != "oversub-threads" &&
      o.rank != "oversub-ring") {
    return "--rank takes ports, sustain, oversub-threads or oversub-ring, not '" + o.rank + "'";
  }
  if (o.against_name.find_first_of("@,/ ") != std::string::npos) {
    return "--against-name wants a plain word, not '" + o.against_name + "'";
  }
  if (o.quick) apply_quick(o, given);
  if (o.stages.empty()) o.stages.assign(std::begin(kStages), std::end(kStages));
  out = std::move(o);
  return "";
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> parts;
  while (true) {
    const std::size_t comma = text.find(',');
    if (!text.substr(0, comma).empty()) parts.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

bool selected(const CompareOptions &o, std::string_view name) {
  if (o.systems.empty()) return true;
  for (const auto &filter : o.systems) {
    if (name == filter) return true;
    if (name.size() > filter.size() && name.starts_with(filter) && name[filter.size()] == '-') {
      return true;
    }
  }
  return false;
}

bool runs_stage(const CompareOptions &o, std::string_view stage) {
  return std::find(o.stages.begin(), o.stages.end(), stage) != o.stages.end();
}

}  // namespace rocl_bench::compare
