// results.cpp - see results.hpp (the lookups and the sustainability figures).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report.hpp"
#include "results.hpp"

namespace rocl_bench::compare {

std::string format_figure(double v) {
  if (v != 0 && std::fabs(v) < 0.01) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2g", v);
    return text;
  }
  return format_value(v);
}

const Summary *StageRun::find(const std::string &metric, const std::string &system,
                              std::size_t size, int pairs) const {
  return find_summary(summary, metric, system, size, pairs);
}

const Config *StageRun::config(const std::string &name) const {
  for (const auto &c : configs) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string StageRun::cell(const std::string &metric, const std::string &system, std::size_t size,
                           int pairs) const {
  for (const auto &t : result.timeouts) {
    if (t.metric == metric && t.system == system && t.size == size && t.pairs == pairs) {
      return "timeout";
    }
  }
  if (const Summary *s = find(metric, system, size, pairs)) return format_figure(s->median);
  const Config *c = config(system);
  if (c != nullptr && !c->unavailable.empty()) return "n/a";
  if (c != nullptr && result.failed.count(system) != 0) return "failed";
  return "-";
}

bool is_rocl(const std::string &system) {
  return system.rfind("rocl-", 0) == 0;
}

std::vector<std::string> anchors_in(const StageRun &run, const std::string &cls) {
  std::vector<std::string> names;
  for (const auto &c : run.configs) {
    if (c.cls == cls && !is_rocl(c.name)) names.push_back(c.name);
  }
  return names;
}

std::vector<std::string> rocl_systems_in(const StageRun &run, const std::string &cls,
                                         const std::string &subject) {
  std::vector<std::string> names;
  if (run.config(subject) != nullptr) names.push_back(subject);
  for (const auto &c : run.configs) {
    if (c.cls == cls && is_rocl(c.name) && c.name != subject) names.push_back(c.name);
  }
  return names;
}

std::vector<std::string> anchors_like(const StageRun &run, const std::string &metric,
                                      const std::string &system,
                                      const std::vector<std::string> &anchors) {
  if (metric != "bandwidth" && metric != "rate") return anchors;
  const Config *mine = run.config(system);
  const bool acks = mine == nullptr || mine->stream_acks;
  std::vector<std::string> like;
  for (const auto &a : anchors) {
    const Config *c = run.config(a);
    if ((c == nullptr || c->stream_acks) == acks) like.push_back(a);
  }
  return like;
}

std::vector<std::string> rocl_systems_for(const StageRun &run, const std::string &cls,
                                          const std::string &subject, const std::string &metric) {
  std::vector<std::string> names;
  for (const auto &name : rocl_systems_in(run, cls, subject)) {
    const Config *c = run.config(name);
    if (metric == "latency" && c != nullptr && c->stream_only) continue;
    names.push_back(name);
  }
  return names;
}

void drop_timed_out(StageRun &run) {
  std::erase_if(run.summary, [&](const Summary &s) {
    return std::any_of(run.result.timeouts.begin(), run.result.timeouts.end(),
                       [&](const TimedOut &t) {
                         return t.metric == s.metric && t.system == s.system && t.size == s.size &&
                                t.pairs == s.pairs;
                       });
  });
}

const StageRun *Results::find(const std::string &stage) const {
  for (const auto &s : stages) {
    if (s.stage == stage) return &s;
  }
  return nullptr;
}

std::vector<Sustainability> sustainability(const StageRun &run) {
  std::vector<Sustainability> out;
  double best_alone = 0;
  for (const auto &c : run.configs) {
    auto value = [&](const char *metric) -> double {
      for (const auto &s : run.summary) {
        if (s.metric == metric && s.system == c.name) return s.median;
      }
      return 0;
    };
    Sustainability s;
    s.config = c.name;
    s.compute_alone = value("compute-alone");
    s.compute_with = value("compute-with-pingpong");
    s.rtt_alone = value("rtt-alone");
    s.rtt_with = value("rtt-with-compute");
    if (!is_sane(s.compute_alone) || !is_sane(s.compute_with) || !is_sane(s.rtt_alone) ||
        !is_sane(s.rtt_with)) {
      continue;
    }
    s.compute_ratio = s.compute_with / s.compute_alone;
    s.rtt_ratio = s.rtt_alone / s.rtt_with;
    s.geomean = std::sqrt(s.compute_ratio * s.rtt_ratio);
    if (best_alone == 0 || s.rtt_alone < best_alone) best_alone = s.rtt_alone;
    out.push_back(s);
  }
  for (auto &s : out) {
    s.rtt_best_ratio = best_alone / s.rtt_with;
    s.geomean_best = std::sqrt(s.compute_ratio * s.rtt_best_ratio);
  }
  return out;
}

}  // namespace rocl_bench::compare
