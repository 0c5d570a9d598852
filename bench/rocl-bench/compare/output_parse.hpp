// output_parse.hpp - reading what the benchmark programs print, and turning
// it into samples of one metric and unit each.
//
// Most programs (rocl-bench's CSV, mpi_pingpong, mpi_bench, zmq_pingpong,
// nng_pingpong, mpi_sustain, compare's own rocl ranks) print rows in
// rocl-bench's columns benchmark,size_bytes,pairs,median,min,max,unit,
// between '#' comments and a header, possibly behind roclrun's "[rank] "
// prefix; ucx_perftest prints its own CSV (-f -v).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stats.hpp"

namespace rocl_bench::compare {

struct CsvRow {
  std::string benchmark;
  std::size_t size = 0;
  int pairs = 1;
  double median = 0, min = 0, max = 0;
  std::string unit;
};

// Every line of text that is such a row (7 fields, numbers where numbers
// go); other lines are skipped. A leading "[N] " is removed first.
std::vector<CsvRow> parse_rows(std::string_view text);

// One result line of `ucx_perftest -f -v` (batch mode: the first field is
// the line's label).
struct UcxLine {
  std::string label;
  long iterations = 0;
  double latency_us = 0;     // overall_lat: one-way for *_lat tests, per message for *_bw
  double bandwidth_mib = 0;  // overall_bw, MiB/s (2^20 B/s)
  double rate = 0;           // overall_mr, messages/s
};
std::vector<UcxLine> parse_ucx_perftest(std::string_view text);

// The point-to-point samples of one run of `system`: rows named latency or
// <t>-latency with unit us become "latency" (us); bandwidth rows in MB/s
// (1e6 B/s) or GB/s (1e9 B/s) become "bandwidth" (GB/s) and "rate"
// (M msg/s = bytes per second / size / 1e6). Other rows are left out.
std::vector<Sample> p2p_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                int round);

// Thread scaling samples: rocl-bench's <t>-rate rows (M msg/s) and
// mpi_bench's mt_rate rows (Mmsg/s) become "threads", pairs = thread pairs.
std::vector<Sample> thread_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                   int round);

// Rows kept as they are, metric = benchmark name (ports, sustainability).
std::vector<Sample> plain_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                  int round);

// The first line of a log that says what went wrong (it has "error",
// "failed", "cannot", ... in it), else its last non-empty line; at most
// `width` characters.
std::string failure_line(std::string_view log, std::size_t width = 160);

}  // namespace rocl_bench::compare
