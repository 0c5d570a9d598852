// progress.cpp - see progress.hpp.
#include "progress.hpp"

#include "child_process.hpp"

namespace rocl_bench::compare {

std::string format_elapsed(double seconds) {
  const long s = static_cast<long>(seconds);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld", s / 60, s % 60);
  }
  return text;
}

Progress::Progress(int total, std::FILE *out)
    : out_(out), total_(total), start_(monotonic_seconds()) {}

std::string Progress::stamp() const {
  char text[64];
  const int width = total_ >= 100 ? 3 : total_ >= 10 ? 2 : 1;
  std::snprintf(text, sizeof text, "[%*d/%d %6s]", width, done_ + 1, total_,
                format_elapsed(monotonic_seconds() - start_).c_str());
  return text;
}

void Progress::begin(const std::string &what) {
  run_start_ = monotonic_seconds();
  std::fprintf(out_, "%s %s ... ", stamp().c_str(), what.c_str());
  std::fflush(out_);
}

void Progress::end(bool ok, const std::string &detail) {
  const double took = monotonic_seconds() - run_start_;
  if (ok) {
    std::fprintf(out_, "ok, %.1f s%s%s\n", took, detail.empty() ? "" : ", ", detail.c_str());
  } else {
    std::fprintf(out_, "FAILED after %.1f s: %s\n", took, detail.c_str());
  }
  std::fflush(out_);
  ++done_;
}

void Progress::note(const std::string &text) {
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace rocl_bench::compare
