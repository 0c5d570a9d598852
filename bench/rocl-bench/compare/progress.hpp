// progress.hpp - the progress display of a long comparison, on stderr: one
// line per run saying what runs, k of n, the time since the start, and how
// it ended.
//
//   [ 12/57  1:42] p2p round 1/3: ompi-vader ... ok, 3.2 s
#pragma once

#include <cstdio>
#include <string>

namespace rocl_bench::compare {

class Progress {
 public:
  explicit Progress(int total, std::FILE *out = stderr);
  // Starts run k of n: prints its line without the ending.
  void begin(const std::string &what);
  // Ends the line begun: "ok, 3.2 s" or "FAILED: why".
  void end(bool ok, const std::string &detail);
  // A line of its own (a warning, a stage header).
  void note(const std::string &text);
  int done() const { return done_; }

 private:
  std::string stamp() const;
  std::FILE *out_;
  int total_;
  int done_ = 0;
  double start_;
  double run_start_ = 0;
};

// "1:42", "12:03", "1:02:03".
std::string format_elapsed(double seconds);

}  // namespace rocl_bench::compare
