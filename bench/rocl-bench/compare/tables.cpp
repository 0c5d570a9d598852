// tables.cpp - the terminal tables of a comparison (see results.hpp).
#include <algorithm>
#include <cstdio>
#include <set>

#include "oversub.hpp"
#include "report.hpp"
#include "results.hpp"
#include "stages.hpp"
#include "text_table.hpp"

namespace rocl_bench::compare {
namespace {

struct MetricText {
  const char *metric;
  const char *title;
  const char *ratio_note;
};

const MetricText kP2pMetrics[] = {
    {"latency", "one-way latency, us (lower is better)",
     "rocl/best < 1: rocl is faster than the best anchor"},
    {"bandwidth", "one-way bandwidth, GB/s = 1e9 B/s (higher is better)",
     "rocl/best > 1: rocl moves more than the best anchor"},
    {"rate", "message rate of the bandwidth stream, M msg/s (higher is better)",
     "rocl/best > 1: rocl sends more messages than the best anchor"},
};

// The sizes at which any of `systems` has a figure of `metric`.
std::vector<std::size_t> sizes_of(const StageRun &run, const std::string &metric,
                                  const std::vector<std::string> &systems) {
  std::set<std::size_t> sizes;
  for (const auto &s : run.summary) {
    if (s.metric == metric &&
        std::find(systems.begin(), systems.end(), s.system) != systems.end()) {
      sizes.insert(s.size);
    }
  }
  return {sizes.begin(), sizes.end()};
}

// rocl / best and the best's name, or "n/a".
std::pair<std::string, std::string> ratio_cell(const StageRun &run, const std::string &metric,
                                               const std::string &subject,
                                               const std::vector<std::string> &anchors,
                                               std::size_t size, int pairs) {
  const Summary *mine = run.find(metric, subject, size, pairs);
  const Summary *best = best_of(run.summary, metric, anchors, size, pairs);
  if (mine == nullptr || best == nullptr) return {"n/a", best != nullptr ? best->system : ""};
  return {format_figure(mine->median / best->median), best->system};
}

// The ratio column of one of rocl's systems: "rocl/best" for the class's
// subject (rocl-bench), "rocl-mpi/best" for rocl-mpi-shm (the name without
// its class), "rocl-noack/best" for rocl-shm-noack.
std::string ratio_label(const std::string &system, const P2pClass &cls) {
  if (system == cls.subject) return "rocl/best";
  const std::string variant = std::string(cls.subject) + "-";
  if (system.rfind(variant, 0) == 0) return "rocl-" + system.substr(variant.size()) + "/best";
  const std::string suffix = "-" + std::string(cls.name);
  const bool has_suffix = system.size() > suffix.size() &&
                          system.compare(system.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? system.substr(0, system.size() - suffix.size()) : system) + "/best";
}

void print_p2p(std::FILE *out, const StageRun &run) {
  for (const auto &m : kP2pMetrics) {
    for (const auto &cls : p2p_classes()) {
      const auto mine = rocl_systems_for(run, cls.name, cls.subject, m.metric);
      const auto anchors = anchors_in(run, cls.name);
      if (mine.empty() && anchors.empty()) continue;
      std::vector<std::string> header = {"size"};
      header.insert(header.end(), mine.begin(), mine.end());
      header.insert(header.end(), anchors.begin(), anchors.end());
      for (const auto &r : mine) header.push_back(ratio_label(r, cls));
      if (!mine.empty()) header.emplace_back("best anchor");
      TextTable table(header);
      std::vector<std::string> systems = anchors;
      systems.insert(systems.end(), mine.begin(), mine.end());
      for (std::size_t size : sizes_of(run, m.metric, systems)) {
        std::vector<std::string> row = {format_size(size)};
        for (const auto &r : mine) row.push_back(run.cell(m.metric, r, size));
        for (const auto &a : anchors) row.push_back(run.cell(m.metric, a, size));
        std::string best_names;  // each ratio's, once: "ompi-ucx, ucx-shm"
        for (const auto &r : mine) {
          const auto [ratio, best] =
              ratio_cell(run, m.metric, r, anchors_like(run, m.metric, r, anchors), size, 1);
          row.push_back(ratio);
          if (!best.empty() && best_names.find(best) == std::string::npos) {
            best_names += (best_names.empty() ? "" : ", ") + best;
          }
        }
        if (!mine.empty()) row.push_back(best_names);
        table.add(row);
      }
      std::fprintf(out, "\n%s, %s\n", m.title, cls.title);
      table.print(out);
    }
    std::fprintf(out, "  (%s%s)\n", m.ratio_note,
                 std::string(m.metric) == "latency"
                     ? ""
                     : "; each stream beside those of its kind: ucx_perftest's has no acks, and "
                       "is set beside rocl's -noack stream only, the others pause for an ack "
                       "every window as rocl-bench's");
  }
  // The limits.
  TextTable limits({"size", "memcpy us", "memcpy GB/s"});
  for (std::size_t size : sizes_of(run, "bandwidth", {"memcpy"})) {
    limits.add({format_size(size), run.cell("latency", "memcpy", size),
                run.cell("bandwidth", "memcpy", size)});
  }
  const Summary *line = run.find("latency", "cacheline", 64);
  std::fprintf(out,
               "\nphysical limits: a cache line between the two cpus %s us one-way; one "
               "memcpy on one cpu:\n",
               line != nullptr ? format_figure(line->median).c_str() : "n/a");
  limits.print(out);
}

void print_scaling(std::FILE *out, const StageRun &run, const char *metric, const char *what,
                   const char *title, const std::string &subject) {
  std::vector<std::string> names, anchors;
  for (const auto &c : run.configs) {
    names.push_back(c.name);
    if (!is_rocl(c.name)) anchors.push_back(c.name);
  }
  std::set<int> points;
  for (const auto &s : run.summary) {
    if (s.metric == metric) points.insert(s.pairs);
  }
  std::vector<std::string> header = {what};
  header.insert(header.end(), names.begin(), names.end());
  if (!anchors.empty()) {
    header.emplace_back(subject + "/best");
    header.emplace_back("best anchor");
  }
  TextTable table(header);
  for (int k : points) {
    std::vector<std::string> row = {std::to_string(k)};
    for (const auto &n : names) row.push_back(run.cell(metric, n, 8, k));
    if (!anchors.empty()) {
      const auto [ratio, best] = ratio_cell(run, metric, subject, anchors, 8, k);
      row.push_back(ratio);
      row.push_back(best);
    }
    table.add(row);
  }
  std::fprintf(out, "\n%s\n", title);
  table.print(out);
}

void print_sustain(std::FILE *out, const StageRun &run) {
  TextTable table({"configuration", "Ex_0", "Ex_cs", "Ex_cs/Ex_0", "Rt_0 us", "Rt_cs us",
                   "Rt_0/Rt_cs", "geomean", "Rt_best0/Rt_cs", "paper geomean"});
  for (const auto &s : sustainability(run)) {
    table.add({s.config, format_figure(s.compute_alone), format_figure(s.compute_with),
               format_figure(s.compute_ratio), format_figure(s.rtt_alone),
               format_figure(s.rtt_with), format_figure(s.rtt_ratio), format_figure(s.geomean),
               format_figure(s.rtt_best_ratio), format_figure(s.geomean_best)});
  }
  const auto figures = sustainability(run);
  for (const auto &c : run.configs) {
    if (std::any_of(figures.begin(), figures.end(),
                    [&](const Sustainability &s) { return s.config == c.name; })) {
      continue;
    }
    table.add({c.name, !c.unavailable.empty()                 ? "n/a"
                       : run.result.failed.count(c.name) != 0 ? "failed"
                                                              : "-"});
  }
  std::fprintf(out,
               "\nsustainability (RoCL 5.2): Ex = compute loop, M units/s of both ranks, alone "
               "(_0) and beside a ping-pong (_cs); Rt = ping-pong round trip, us, alone (_0) and "
               "beside the compute loop (_cs); each process on its own cpu, its compute thread "
               "next to the communicating one\n");
  table.print(out);
  std::fprintf(out,
               "  (1 = no interference; geomean = sqrt(Ex_cs/Ex_0 x Rt_0/Rt_cs); the paper's "
               "overall ratio uses the best round trip alone of the run, Rt_best0)\n");
}

// What was not measured, and why: n/a (cannot run here) and failures.
void print_notes(std::FILE *out, const Results &results) {
  std::vector<std::string> lines;
  for (const auto &[name, why] : not_measured()) lines.push_back(name + ": n/a, " + why);
  for (const auto &run : results.stages) {
    for (const auto &c : run.configs) {
      if (!c.unavailable.empty())
        lines.push_back(run.stage + " " + c.name + ": n/a, " + c.unavailable);
    }
    for (const auto &[name, why] : run.result.failed) {
      lines.push_back(run.stage + " " + name + ": FAILED, " + why);
    }
    for (const auto &t : run.result.timeouts) {
      if (t.skipped) continue;
      lines.push_back(run.stage + " " + t.system + " " + t.metric + " at point " +
                      std::to_string(t.pairs) + ": timeout in round " + std::to_string(t.round) +
                      " (limit " + format_figure(t.limit_seconds) + " s; not run in later rounds)");
    }
  }
  if (lines.empty()) return;
  std::fprintf(out, "\nnot measured or failed:\n");
  for (const auto &line : lines) std::fprintf(out, "  %s\n", line.c_str());
}

}  // namespace

void print_tables(std::FILE *out, const Results &results, const CompareOptions &o) {
  std::fprintf(out,
               "\n== rocl-bench compare: median of %d round(s), each point %d rep(s) of ~%g s\n",
               o.rounds, o.reps, o.seconds);
  if (const StageRun *run = results.find("p2p")) print_p2p(out, *run);
  if (const StageRun *run = results.find("threads")) {
    print_scaling(out, *run, "threads", "pairs",
                  "thread scaling: message rate of 8 B messages, P thread pairs between two "
                  "processes, M msg/s (higher is better)",
                  "rocl-shm");
  }
  if (const StageRun *run = results.find("ports")) {
    print_scaling(out, *run, "ports", "ports",
                  "port scaling: message rate from one resource to R resources of the other "
                  "process, M msg/s",
                  "rocl-shm");
  }
  if (const StageRun *run = results.find("sustain")) print_sustain(out, *run);
  if (const StageRun *run = results.find("oversub")) print_oversub(out, *run);
  print_notes(out, results);
}

}  // namespace rocl_bench::compare
