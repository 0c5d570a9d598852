// report.cpp - see report.hpp.
#include "report.hpp"

#include <algorithm>
#include <string>
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

void Report::print_table(std::FILE *out) const {
  const Row *spsc = anchor();
  std::fprintf(out, "%-16s %6s %5s %10s %10s %10s  %-8s %7s\n", "benchmark", "size", "pairs",
               "median", "min", "max", "unit", "x spsc");
  for (const auto &r : rows_) {
    std::string ratio;
    if (spsc != nullptr && (r.benchmark == "latency" || &r == spsc)) {
      ratio = format_value(r.median / spsc->median);
    }
    std::fprintf(out, "%-16s %6s %5d %10s %10s %10s  %-8s %7s\n", r.benchmark.c_str(),
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

}  // namespace rocl_bench
