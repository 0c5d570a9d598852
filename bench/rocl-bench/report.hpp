// report.hpp - the results of a run: one row per measured point, printed as
// a table on stdout and written as CSV.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocl_bench {

// One measured point: the median, min and max of its repetitions.
struct Row {
  std::string benchmark;  // "latency", "bandwidth", "rate", "anchor-spsc", ...; between
                          // processes prefixed by the transport: "shm-latency", ...
  std::size_t size_bytes = 0;
  int pairs = 1;
  double median = 0;
  double min = 0;
  double max = 0;
  std::string unit;  // "us", "MB/s", "M msg/s"
};

// A row from the per-repetition samples (at least one).
Row summarize(std::string benchmark, std::size_t size_bytes, int pairs, std::vector<double> samples,
              std::string unit);

// "8", "1K", "64K", "16M" (powers of 1024 when exact), else the byte count.
std::string format_size(std::size_t bytes);
// The other way: "8", "64K", "1m", "2G" (K, M, G = powers of 1024) -> the
// count; nullopt unless a number >= 0 (at most 2^40) with at most a suffix.
std::optional<long long> parse_count(std::string_view text);
// Comma-separated, as the command lines take them: "8,64K,1M", "1,2,4".
std::string join_sizes(const std::vector<std::size_t> &sizes);
std::string join_ints(const std::vector<int> &values);

// About three significant digits, never an exponent: "0.153", "42.1", "57864".
std::string format_value(double v);

class Report {
 public:
  void add(std::vector<Row> rows);
  const std::vector<Row> &rows() const noexcept { return rows_; }

  // The table: benchmark, size, pairs, median, min, max, unit, and for
  // latency rows ("latency", "shm-latency", ...) "x spsc": the row's median
  // over the 8 B anchor-spsc median, when the anchor ran in the same run.
  void print_table(std::FILE *out) const;

  // CSV with the header benchmark,size_bytes,pairs,median,min,max,unit.
  // False (errno set) if the file cannot be written.
  bool write_csv(const std::string &path) const;

  // Adds the rows of a CSV that write_csv wrote. False if the file cannot
  // be read (errno set) or a line is not such a row (errno = EINVAL).
  bool read_csv(const std::string &path);

 private:
  const Row *anchor() const;
  std::vector<Row> rows_;
};

}  // namespace rocl_bench
