// stats.cpp - see stats.hpp.
#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace rocl_bench::compare {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<double> geometric_mean(const std::vector<double> &values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!is_sane(v)) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

bool is_sane(double v) {
  return std::isfinite(v) && v > 0;
}

bool is_sane(const Sample &s) {
  return is_sane(s.median) && is_sane(s.min) && is_sane(s.max) && s.min <= s.median &&
         s.median <= s.max;
}

bool lower_is_better(std::string_view metric) {
  return metric.find("latency") != std::string_view::npos || metric.starts_with("rtt") ||
         metric == "barrier" || metric == "bcast" || metric == "reduce" || metric == "allreduce" ||
         metric.starts_with("pingpong") || metric.starts_with("ring");
}

std::vector<Summary> summarize_rounds(const std::vector<Sample> &samples) {
  std::vector<Summary> out;
  std::vector<std::vector<double>> medians;
  for (const auto &s : samples) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Summary &x) {
      return x.metric == s.metric && x.system == s.system && x.size == s.size && x.pairs == s.pairs;
    });
    if (it == out.end()) {
      out.push_back({s.metric, s.system, s.size, s.pairs, 0, s.min, s.max, 0, s.unit});
      medians.emplace_back();
      it = out.end() - 1;
    }
    const auto k = static_cast<std::size_t>(it - out.begin());
    medians[k].push_back(s.median);
    it->min = std::min(it->min, s.min);
    it->max = std::max(it->max, s.max);
    ++it->rounds;
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k].median = median_of(medians[k]);
    const auto [lowest, highest] = std::minmax_element(medians[k].begin(), medians[k].end());
    out[k].best_round = lower_is_better(out[k].metric) ? *lowest : *highest;
  }
  return out;
}

double figure_of(const Summary &s, Figure f) {
  return f == Figure::kBestRound ? s.best_round : s.median;
}

const Summary *find_summary(const std::vector<Summary> &all, std::string_view metric,
                            std::string_view system, std::size_t size, int pairs) {
  for (const auto &s : all) {
    if (s.metric == metric && s.system == system && s.size == size && s.pairs == pairs) return &s;
  }
  return nullptr;
}

const Summary *best_of(const std::vector<Summary> &all, std::string_view metric,
                       const std::vector<std::string> &systems, std::size_t size, int pairs,
                       Figure f) {
  const Summary *best = nullptr;
  for (const auto &name : systems) {
    const Summary *s = find_summary(all, metric, name, size, pairs);
    if (s == nullptr) continue;
    const double v = figure_of(*s, f);
    if (!is_sane(v)) continue;
    const double b = best != nullptr ? figure_of(*best, f) : 0;
    if (best == nullptr || (lower_is_better(metric) ? v < b : v > b)) best = s;
  }
  return best;
}

}  // namespace rocl_bench::compare
