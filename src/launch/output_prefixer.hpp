// output_prefixer.hpp - splits a child's output stream into lines and puts
// its rank in front of each ("[3] "), for roclrun's merged output.
//
// Bytes arrive in arbitrary pieces (whatever read() returned): a partial
// line is kept until its newline (or the end of the stream, flush()) comes.
// A line longer than max_line bytes is cut into pieces of max_line bytes,
// each printed as a line of its own, so memory stays bounded whatever the
// child writes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rocl::impl {

class OutputPrefixer {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  explicit OutputPrefixer(std::string prefix, std::size_t max_line = kMaxLine);

  // Appends to *out every line that data completes, each prefixed and
  // ended by '\n'; keeps the unfinished rest for the next call.
  void feed(std::string_view data, std::string *out);
  // End of the stream: appends the unfinished line, if any, prefixed and
  // ended by '\n' (so the next writer starts on a fresh line).
  void flush(std::string *out);

  // Bytes of the unfinished line held back.
  std::size_t pending() const { return partial_.size(); }
  const std::string &prefix() const { return prefix_; }

 private:
  void emit(std::string_view tail, std::string *out);

  std::string prefix_;
  std::string partial_;
  std::size_t max_line_;
};

}  // namespace rocl::impl
