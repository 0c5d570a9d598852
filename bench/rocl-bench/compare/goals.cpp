// goals.cpp - see goals.hpp: the goals file's parser, and each goal judged
// on a run's summaries.
#include "goals.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "compare_options.hpp"
#include "report.hpp"
#include "results.hpp"

#ifndef ROCL_BENCH_SOURCE_GOALS
#define ROCL_BENCH_SOURCE_GOALS ""
#endif

namespace rocl_bench::compare {
namespace {

// ---- the file ----------------------------------------------------------------

struct StageMetrics {
  const char *stage;
  std::vector<std::string> metrics;
};

const std::vector<StageMetrics> &stage_metrics() {
  static const std::vector<StageMetrics> all = {
      {"p2p", {"latency", "bandwidth", "rate"}},
      {"threads", {"threads"}},
      {"ports", {"ports"}},
      {"sustain",
       {"geomean", "compute-alone", "compute-with-pingpong", "rtt-alone", "rtt-with-compute"}},
      {"oversub",
       {"pingpong", "pingpong-onecpu", "ring", "rate", "pingpong-busy", "ring-busy", "barrier",
        "bcast", "reduce", "allreduce"}},
      {"mpi", std::vector<std::string>(std::begin(kMpiMetrics), std::end(kMpiMetrics))},
  };
  return all;
}

std::string joined(const std::vector<std::string> &names, const char *separator = ", ") {
  std::string text;
  for (const auto &n : names) text += (text.empty() ? "" : separator) + n;
  return text;
}

std::vector<std::string> split_on(std::string_view text, char separator) {
  std::vector<std::string> parts;
  while (true) {
    const std::size_t at = text.find(separator);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

std::string parse_stage_metric(const std::string &stage, const std::string &metric) {
  std::vector<std::string> stages;
  for (const auto &s : stage_metrics()) {
    stages.emplace_back(s.stage);
    if (stage != s.stage) continue;
    if (std::find(s.metrics.begin(), s.metrics.end(), metric) != s.metrics.end()) return "";
    return "stage " + stage + " has no metric '" + metric + "' (" + joined(s.metrics) + ")";
  }
  return "unknown stage '" + stage + "' (" + joined(stages) + ")";
}

std::string parse_condition(const std::string &text, PointCondition &c);

// METRIC:a,b/COND/COND (see Goal::anchor_metric).
std::string parse_row_anchors(const std::string &text, Goal &g) {
  const std::size_t colon = text.find(':');
  g.anchor_metric = text.substr(0, colon);
  if (const std::string why = parse_stage_metric(g.stage, g.anchor_metric); !why.empty()) {
    return "ANCHORS '" + text + "': " + why;
  }
  if (lower_is_better(g.anchor_metric) != lower_is_better(g.metric)) {
    return "ANCHORS '" + text + "': " + g.anchor_metric + " and " + g.metric +
           " are not better the same way (a time beside a rate)";
  }
  const auto parts = split_on(text.substr(colon + 1), '/');
  g.anchor_list = split_on(parts.front(), ',');
  for (const auto &name : g.anchor_list) {
    if (name.empty()) return "ANCHORS '" + text + "' has an empty name";
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    PointCondition c;
    if (const std::string why = parse_condition(parts[i], c); !why.empty()) {
      return "ANCHORS '" + text + "': " + why;
    }
    g.anchor_at.push_back(std::move(c));
  }
  return "";
}

std::string parse_anchors(const std::string &text, Goal &g) {
  if (text.find(':') != std::string::npos && !text.starts_with("class:")) {
    return parse_row_anchors(text, g);
  }
  if (text == "others") {
    g.anchor_others = true;
  } else if (text.starts_with("class:")) {
    g.anchor_class = text.substr(6);
    if (g.stage != "p2p") return "ANCHORS class:NAME is for stage p2p only";
    if (g.anchor_class != "inproc" && g.anchor_class != "shm" && g.anchor_class != "tcp") {
      return "ANCHORS class:" + g.anchor_class + ": the classes are inproc, shm, tcp";
    }
  } else {
    g.anchor_list = split_on(text, ',');
    for (const auto &name : g.anchor_list) {
      if (name.empty()) return "ANCHORS '" + text + "' has an empty name";
    }
  }
  return "";
}

std::string parse_condition(const std::string &text, PointCondition &c) {
  const std::size_t op = text.find_first_of("=>");
  const std::string key = text.substr(0, op);
  if (op == std::string::npos || (key != "size" && key != "pairs")) {
    return "AT '" + text + "': a condition is size=V|V, size>=V or pairs=V|V";
  }
  c.on_size = key == "size";
  c.at_least = text.compare(op, 2, ">=") == 0;
  if (!c.at_least && text[op] != '=') return "AT '" + text + "': '=' or '>=' after " + key;
  const std::string values = text.substr(op + (c.at_least ? 2 : 1));
  for (const auto &v : split_on(values, '|')) {
    const auto parsed = parse_size_list(v);
    if (!parsed) return "AT '" + text + "': '" + v + "' is not a number > 0 (K, M, G allowed)";
    c.values.push_back(parsed->front());
  }
  if (c.at_least && c.values.size() != 1) return "AT '" + text + "': >= takes one value";
  return "";
}

std::string parse_at(const std::string &text, Goal &g) {
  if (text == "all") return "";
  for (const auto &part : split_on(text, ',')) {
    PointCondition c;
    const std::string why = parse_condition(part, c);
    if (!why.empty()) return why;
    g.at.push_back(std::move(c));
  }
  return "";
}

std::string parse_line(std::string_view line, Goal &g) {
  std::istringstream words{std::string(line)};
  std::string f[8];
  int n = 0;
  while (n < 8 && words >> f[n]) ++n;
  std::string label;
  std::getline(words, label);
  label.erase(0, label.find_first_not_of(" \t"));
  label.erase(label.find_last_not_of(" \t\r") + 1);
  if (n < 8 || label.empty()) {
    return "wants 9 fields, STAGE METRIC SUBJECT OP FACTOR ANCHORS AT FIGURES LABEL (the label "
           "is the rest of the line); found " +
           std::to_string(n + (label.empty() ? 0 : 1));
  }
  g.stage = f[0];
  g.metric = f[1];
  std::string why = parse_stage_metric(g.stage, g.metric);
  if (!why.empty()) return why;
  g.family = f[2].ends_with('*');
  g.subject = g.family ? f[2].substr(0, f[2].size() - 1) : f[2];
  if (g.subject.empty() || g.subject.find('*') != std::string::npos) {
    return "SUBJECT '" + f[2] + "': a system, or a family ending in one '*'";
  }
  if (f[3] != "<=" && f[3] != ">=") return "OP '" + f[3] + "': <= or >=";
  g.lower = f[3] == "<=";
  if (g.lower != lower_is_better(g.metric)) {
    return "OP " + f[3] + " does not fit " + g.metric + ", where " +
           (lower_is_better(g.metric) ? "lower is better: use <=" : "higher is better: use >=");
  }
  char *end = nullptr;
  g.factor = std::strtod(f[4].c_str(), &end);
  if (end == f[4].c_str() || *end != '\0' || !std::isfinite(g.factor) || g.factor <= 0) {
    return "FACTOR '" + f[4] + "': a number > 0";
  }
  if (!(why = parse_anchors(f[5], g)).empty()) return why;
  if (!(why = parse_at(f[6], g)).empty()) return why;
  if (f[7] != "median" && f[7] != "median,best") {
    return "FIGURES '" + f[7] + "': median or median,best";
  }
  g.best_round = f[7] == "median,best";
  g.label = label;
  return "";
}

// ---- the verdicts -------------------------------------------------------------

struct Verdict {
  int met = 0, points = 0;
  std::string worst;  // the point furthest from the goal
};

void print_verdict(std::FILE *out, const std::string &goal, const Verdict &v) {
  if (v.points == 0) {
    std::fprintf(out, "  %-5s %s (not judged: a side was not measured)\n", "-", goal.c_str());
    return;
  }
  std::fprintf(out, "  %-5s %s (%d of %d point(s)%s%s)\n", v.met == v.points ? "ok" : "MISS",
               goal.c_str(), v.met, v.points, v.worst.empty() ? "" : "; worst: ", v.worst.c_str());
}

// The summaries a goal may name: the stage's, and for sustain the
// derived geomean of each configuration.
std::vector<Summary> figures_of(const StageRun &run) {
  std::vector<Summary> all = run.summary;
  if (run.stage == "sustain") {
    for (const auto &s : sustainability(run)) {
      all.push_back({"geomean", s.config, 0, 1, s.geomean, s.geomean, s.geomean, 1, "", s.geomean});
    }
  }
  return all;
}

bool in_family(const Goal &g, const std::string &system) {
  // another build's systems (rocl-shm-poll@base) are never in this build's family
  return system.starts_with(g.subject) && system.find('@') == std::string::npos;
}

std::vector<std::string> subjects_of(const Goal &g, const std::vector<Summary> &all) {
  if (!g.family) return {g.subject};
  std::vector<std::string> names;
  for (const auto &s : all) {
    if (s.metric == g.metric && in_family(g, s.system) &&
        std::find(names.begin(), names.end(), s.system) == names.end()) {
      names.push_back(s.system);
    }
  }
  return names;
}

std::vector<std::string> anchors_of(const Goal &g, const StageRun &run) {
  std::vector<std::string> list = g.anchor_list;
  if (!g.anchor_metric.empty()) return list;
  if (!g.anchor_class.empty()) list = anchors_in(run, g.anchor_class);
  if (g.anchor_others) {
    for (const auto &c : run.configs) {
      const bool subject = g.family ? in_family(g, c.name) : c.name == g.subject;
      if (!subject && !is_rocl(c.name)) list.push_back(c.name);
    }
  }
  return g.family ? list : anchors_like(run, g.metric, g.subject, list);
}

// How a point is named in a verdict: by its size where the stage's points
// are sizes (mpi_bench's threaded ones by threads), else not at all.
std::string point_text(const Goal &g, std::size_t size, int pairs) {
  if (g.stage == "p2p") return format_size(size) + " ";
  if (g.stage == "oversub") return std::to_string(pairs) + "/cpu ";
  if (g.stage != "mpi") return "";
  if (g.metric.starts_with("mt_")) return std::to_string(pairs) + " threads ";
  if (g.metric.starts_with("mbw_mr")) return std::to_string(pairs) + "p " + format_size(size) + " ";
  return size == 0 ? "" : format_size(size) + " ";  // barrier: no size
}

// The figure of ANCHORS METRIC:... (see Goal::anchor_metric): the best of
// its systems at the points its conditions select, or nullptr.
const Summary *row_anchor(const Goal &g, const std::vector<Summary> &all, Figure f) {
  const Summary *best = nullptr;
  for (const auto &s : all) {
    if (s.metric != g.anchor_metric ||
        std::find(g.anchor_list.begin(), g.anchor_list.end(), s.system) == g.anchor_list.end() ||
        !std::all_of(g.anchor_at.begin(), g.anchor_at.end(),
                     [&](const PointCondition &c) { return c.holds(s.size, s.pairs); })) {
      continue;
    }
    const double v = figure_of(s, f);
    if (best == nullptr || (g.lower ? v < figure_of(*best, f) : v > figure_of(*best, f))) best = &s;
  }
  return best;
}

Verdict judge(const Goal &g, const StageRun &run, Figure f) {
  const std::vector<Summary> all = figures_of(run);
  const auto subjects = subjects_of(g, all);
  const auto anchors = anchors_of(g, run);
  std::set<std::pair<std::size_t, int>> points;
  for (const auto &s : all) {
    if (s.metric != g.metric ||
        std::find(subjects.begin(), subjects.end(), s.system) == subjects.end()) {
      continue;
    }
    if (std::all_of(g.at.begin(), g.at.end(),
                    [&](const PointCondition &c) { return c.holds(s.size, s.pairs); })) {
      points.emplace(s.size, s.pairs);
    }
  }
  const std::string who = g.subject.starts_with("rocl") ? "rocl" : g.subject;
  const bool with_unit = g.stage == "threads" || g.stage == "ports";
  Verdict v;
  double worst = -1;
  for (const auto &[size, pairs] : points) {
    const Summary *mine = best_of(all, g.metric, subjects, size, pairs, f);
    const Summary *best = g.anchor_metric.empty() ? best_of(all, g.metric, anchors, size, pairs, f)
                                                  : row_anchor(g, all, f);
    if (mine == nullptr || best == nullptr) continue;
    ++v.points;
    const double m = figure_of(*mine, f), b = figure_of(*best, f);
    const double gap = g.lower ? m * g.factor / b : b * g.factor / m;  // > 1 misses
    if (gap <= 1) ++v.met;
    if (gap > worst) {
      worst = gap;
      const std::string theirs = g.anchor_metric.empty() ? best->system
                                                         : best->system + " " + best->metric + " " +
                                                               std::to_string(best->pairs) + "/cpu";
      v.worst = point_text(g, size, pairs) + who + " " + format_figure(m) + " vs " + theirs + " " +
                format_figure(b) + (with_unit && !best->unit.empty() ? " " + best->unit : "");
    }
  }
  return v;
}

// The most rounds a point of `run` was measured in.
int rounds_of(const StageRun &run) {
  int n = 0;
  for (const auto &s : run.summary) n = std::max(n, s.rounds);
  return n;
}

std::string self_folder() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  const std::string self(path, static_cast<std::size_t>(n));
  return self.substr(0, self.rfind('/'));
}

}  // namespace

bool PointCondition::holds(std::size_t size, int pairs) const {
  const std::size_t v = on_size ? size : static_cast<std::size_t>(pairs);
  if (at_least) return v >= values.front();
  return std::find(values.begin(), values.end(), v) != values.end();
}

std::string parse_goals(std::string_view text, const std::string &path, std::vector<Goal> &out) {
  out.clear();
  int number = 0;
  for (const auto &line : split_on(text, '\n')) {
    ++number;
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    Goal g;
    g.line = number;
    const std::string why = parse_line(line, g);
    if (!why.empty()) {
      out.clear();
      return path + ":" + std::to_string(number) + ": " + why;
    }
    out.push_back(std::move(g));
  }
  return "";
}

std::string load_goals(const std::string &path, std::vector<Goal> &out) {
  std::ifstream in(path);
  if (!in) return "cannot read the goals file " + path;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_goals(text.str(), path, out);
}

std::string default_goals_path() {
  for (const std::string &path :
       {self_folder() + "/goals.txt", std::string(ROCL_BENCH_SOURCE_GOALS)}) {
    if (!path.empty() && ::access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

void print_goals(std::FILE *out, const Results &results, const std::vector<Goal> &goals,
                 const std::string &source, bool quick) {
  std::vector<std::pair<const Goal *, const StageRun *>> twice, once;
  int rounds = 0;
  for (const auto &g : goals) {
    const StageRun *run = results.find(g.stage);
    const auto measured = [&](const Summary &s) { return s.metric == g.metric; };
    // A stage that ran without the goal's metric at all (rocl-bench mpi
    // --mt-mode tag has no mt_rate_comm) leaves the goal out.
    if (run == nullptr ||
        (run->stage == "mpi" && std::none_of(run->summary.begin(), run->summary.end(), measured))) {
      continue;
    }
    (g.best_round ? twice : once).emplace_back(&g, run);
    if (g.best_round) rounds = std::max(rounds, rounds_of(*run));
  }
  if (twice.empty() && once.empty()) return;
  std::fprintf(out, "\ngoals (%s)%s:\n", source.c_str(),
               quick ? ", judged on --quick figures (one short repetition: not a verdict)" : "");
  const bool judged_twice = rounds > 1;
  if (judged_twice) std::fprintf(out, "  on the medians of the rounds (the tables' figures):\n");
  for (const auto &[g, run] : twice) print_verdict(out, g->label, judge(*g, *run, Figure::kMedian));
  if (judged_twice) {
    // On a machine whose slow phases hit some rounds of some systems only,
    // the medians say which system the phases hit most; the best rounds
    // compare each system at its fastest.
    std::fprintf(out, "  on each system's best round (its fastest of the %d):\n", rounds);
    for (const auto &[g, run] : twice) {
      print_verdict(out, g->label, judge(*g, *run, Figure::kBestRound));
    }
    if (!once.empty()) std::fprintf(out, "  on the medians of the rounds:\n");
  }
  for (const auto &[g, run] : once) print_verdict(out, g->label, judge(*g, *run, Figure::kMedian));
}

}  // namespace rocl_bench::compare
