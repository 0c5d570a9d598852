// output_parse.cpp - see output_parse.hpp.
#include "output_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace rocl_bench::compare {
namespace {

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  while (true) {
    const std::size_t at = line.find(separator);
    fields.push_back(line.substr(0, at));
    if (at == std::string_view::npos) break;
    line.remove_prefix(at + 1);
  }
  return fields;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> to_double(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char *end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::optional<long long> to_integer(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char *end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

// Lines of text, without "\r" and without roclrun's "[N] " prefix.
template <class Fn>
void for_each_line(std::string_view text, Fn &&fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with('[')) {
      const std::size_t close = line.find("] ");
      if (close != std::string_view::npos && close > 1 &&
          std::all_of(line.begin() + 1, line.begin() + static_cast<long>(close),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
        line.remove_prefix(close + 2);
      }
    }
    fn(line);
  }
}

bool ends_with_word(std::string_view name, std::string_view word) {
  return name == word || (name.size() > word.size() && name.ends_with(word) &&
                          name[name.size() - word.size() - 1] == '-');
}

Sample make(const CsvRow &r, const std::string &metric, const std::string &system, int round,
            double scale, std::string unit) {
  return {metric,           system,        r.size,        r.pairs,        round,
          r.median * scale, r.min * scale, r.max * scale, std::move(unit)};
}

}  // namespace

std::vector<CsvRow> parse_rows(std::string_view text) {
  std::vector<CsvRow> rows;
  for_each_line(text, [&](std::string_view line) {
    if (line.empty() || line.starts_with('#')) return;
    const auto f = split(line, ',');
    if (f.size() != 7 || trim(f[0]).empty()) return;
    const auto size = to_integer(f[1]);
    const auto pairs = to_integer(f[2]);
    const auto median = to_double(f[3]), min = to_double(f[4]), max = to_double(f[5]);
    if (!size || !pairs || !median || !min || !max || *size < 0) return;
    rows.push_back({std::string(trim(f[0])), static_cast<std::size_t>(*size),
                    static_cast<int>(*pairs), *median, *min, *max, std::string(trim(f[6]))});
  });
  return rows;
}

std::vector<UcxLine> parse_ucx_perftest(std::string_view text) {
  // label,iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
  std::vector<UcxLine> lines;
  for_each_line(text, [&](std::string_view line) {
    const auto f = split(line, ',');
    if (f.size() != 9) return;
    const auto iterations = to_integer(f[1]);
    const auto latency = to_double(f[4]), bandwidth = to_double(f[6]), rate = to_double(f[8]);
    if (!iterations || !latency || !bandwidth || !rate) return;
    lines.push_back(
        {std::string(trim(f[0])), static_cast<long>(*iterations), *latency, *bandwidth, *rate});
  });
  return lines;
}

std::vector<Sample> p2p_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                int round) {
  std::vector<Sample> out;
  for (const auto &r : rows) {
    if (ends_with_word(r.benchmark, "latency") && r.unit == "us") {
      out.push_back(make(r, "latency", system, round, 1, "us"));
      continue;
    }
    if (!ends_with_word(r.benchmark, "bandwidth") || r.size == 0) continue;
    double bytes_per_unit = 0;
    if (r.unit == "MB/s") bytes_per_unit = 1e6;
    if (r.unit == "GB/s") bytes_per_unit = 1e9;
    if (bytes_per_unit == 0) continue;  // msg/s rows: the rate comes from the bytes
    out.push_back(make(r, "bandwidth", system, round, bytes_per_unit / 1e9, "GB/s"));
    out.push_back(make(r, "rate", system, round, bytes_per_unit / static_cast<double>(r.size) / 1e6,
                       "M msg/s"));
  }
  return out;
}

std::vector<Sample> thread_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                   int round) {
  std::vector<Sample> out;
  for (const auto &r : rows) {
    const bool rocl = ends_with_word(r.benchmark, "rate") && r.unit == "M msg/s";
    const bool mpi = r.benchmark == "mt_rate" && r.unit == "Mmsg/s";
    if (rocl || mpi) out.push_back(make(r, "threads", system, round, 1, "M msg/s"));
  }
  return out;
}

std::vector<Sample> plain_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                  int round) {
  std::vector<Sample> out;
  for (const auto &r : rows) out.push_back(make(r, r.benchmark, system, round, 1, r.unit));
  return out;
}

std::string failure_line(std::string_view log, std::size_t width) {
  static const char *const kWords[] = {"error",     "failed",  "abort",  "cannot", "not found",
                                       "timed out", "refused", "killed", "usage",  "unknown"};
  std::string first, last;
  for_each_line(log, [&](std::string_view line) {
    line = trim(line);
    if (line.empty() || line.starts_with('#') || !first.empty()) {
      if (!line.empty()) last = std::string(line);
      return;
    }
    std::string lower(line);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (std::any_of(std::begin(kWords), std::end(kWords),
                    [&](const char *w) { return lower.find(w) != std::string::npos; })) {
      first = std::string(line);
    }
    last = std::string(line);
  });
  std::string line = first.empty() ? last : first;
  if (line.size() > width) line = line.substr(0, width - 3) + "...";
  return line;
}

}  // namespace rocl_bench::compare
