// report.cpp - see report.hpp.
#include "report.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace rocl_bench {

Row summarize(std::string benchmark, std::size_t size_bytes, int pairs, std::vector<double> samples,
              std::string unit) {
  Row row;
  row.benchmark = std::move(benchmark);
  row.size_bytes = size_bytes;
  row.pairs = pairs;
  row.unit = std::move(unit);
  if (samples.empty()) return row;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  row.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  row.min = samples.front();
  row.max = samples.back();
  return row;
}

std::string format_size(std::size_t bytes) {
  static const char kSuffix[] = {'K', 'M', 'G'};
  std::string text = std::to_string(bytes);
  std::size_t value = bytes;
  for (char suffix : kSuffix) {
    if (value == 0 || value % 1024 != 0) break;
    value /= 1024;
    text = std::to_string(value) + suffix;
  }
  return text;
}

std::optional<long long> parse_count(std::string_view text) {
  const std::string s(text);
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || v < 0) return std::nullopt;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  if (*end != '\0' || v > (1ll << 40) >> shift) return std::nullopt;
  return v << shift;
}

std::string join_sizes(const std::vector<std::size_t> &sizes) {
  std::string text;
  for (std::size_t s : sizes) {
    if (!text.empty()) text += ',';
    text += format_size(s);
  }
  return text;
}

std::string join_ints(const std::vector<int> &values) {
  std::string text;
  for (int v : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(v);
  }
  return text;
}

std::string format_value(double v) {
  char text[64];
  const double a = v < 0 ? -v : v;
  const char *format = a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f";
  std::snprintf(text, sizeof text, format, v);
  return text;
}

void Report::add(std::vector<Row> rows) {
  for (auto &r : rows) rows_.push_back(std::move(r));
}

const Row *Report::anchor() const {
  for (const auto &r : rows_) {
    if (r.benchmark == "anchor-spsc" && r.size_bytes == 8 && r.median > 0) return &r;
  }
  return nullptr;
}

namespace {

// "latency", or a transport's "shm-latency".
bool is_latency(const std::string &name) {
  return name == "latency" || (name.size() > 8 && name.ends_with("-latency"));
}

}  // namespace

void Report::print_table(std::FILE *out) const {
  const Row *spsc = anchor();
  int width = 16;
  for (const auto &r : rows_) width = std::max(width, static_cast<int>(r.benchmark.size()));
  std::fprintf(out, "%-*s %6s %5s %10s %10s %10s  %-8s %7s\n", width, "benchmark", "size", "pairs",
               "median", "min", "max", "unit", "x spsc");
  for (const auto &r : rows_) {
    std::string ratio;
    if (spsc != nullptr && (is_latency(r.benchmark) || &r == spsc)) {
      ratio = format_value(r.median / spsc->median);
    }
    std::fprintf(out, "%-*s %6s %5d %10s %10s %10s  %-8s %7s\n", width, r.benchmark.c_str(),
                 format_size(r.size_bytes).c_str(), r.pairs, format_value(r.median).c_str(),
                 format_value(r.min).c_str(), format_value(r.max).c_str(), r.unit.c_str(),
                 ratio.c_str());
  }
  if (spsc != nullptr) {
    std::fprintf(out,
                 "x spsc: a latency median over the 8 B anchor-spsc median (%s us), the "
                 "floor on this machine\n",
                 format_value(spsc->median).c_str());
  }
}

bool Report::write_csv(const std::string &path) const {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "benchmark,size_bytes,pairs,median,min,max,unit\n");
  for (const auto &r : rows_) {
    std::fprintf(f, "%s,%zu,%d,%.9g,%.9g,%.9g,%s\n", r.benchmark.c_str(), r.size_bytes, r.pairs,
                 r.median, r.min, r.max, r.unit.c_str());
  }
  return std::fclose(f) == 0;
}

bool Report::read_csv(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  std::vector<Row> rows;
  char line[1024];
  bool ok = true, header = true;
  while (ok && std::fgets(line, sizeof line, f) != nullptr) {
    std::string_view text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (header) {  // benchmark,size_bytes,pairs,median,min,max,unit
      header = false;
      ok = text.starts_with("benchmark,");
      continue;
    }
    std::vector<std::string> fields;
    while (true) {
      const std::size_t comma = text.find(',');
      fields.emplace_back(text.substr(0, comma));
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
    if (fields.size() != 7 || fields[0].empty()) {
      ok = false;
      break;
    }
    Row r;
    char *end = nullptr;
    r.benchmark = fields[0];
    r.size_bytes = std::strtoull(fields[1].c_str(), &end, 10);
    ok = ok && *end == '\0';
    r.pairs = static_cast<int>(std::strtol(fields[2].c_str(), &end, 10));
    ok = ok && *end == '\0';
    double *values[] = {&r.median, &r.min, &r.max};
    for (int i = 0; i < 3; ++i) {
      *values[i] = std::strtod(fields[3 + static_cast<std::size_t>(i)].c_str(), &end);
      ok = ok && *end == '\0';
    }
    r.unit = fields[6];
    rows.push_back(std::move(r));
  }
  const bool read_error = std::ferror(f) != 0;
  std::fclose(f);
  if (read_error) return false;
  if (!ok || header) {
    errno = EINVAL;
    return false;
  }
  add(std::move(rows));
  return true;
}

}  // namespace rocl_bench
