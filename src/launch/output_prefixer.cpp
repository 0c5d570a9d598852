// output_prefixer.cpp - see output_prefixer.hpp.
#include "launch/output_prefixer.hpp"

#include <utility>

namespace rocl::impl {

OutputPrefixer::OutputPrefixer(std::string prefix, std::size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line == 0 ? 1 : max_line) {}

void OutputPrefixer::emit(std::string_view tail, std::string *out) {
  out->append(prefix_);
  out->append(partial_);
  out->append(tail);
  out->push_back('\n');
  partial_.clear();
}

void OutputPrefixer::feed(std::string_view data, std::string *out) {
  while (!data.empty()) {
    const std::size_t nl = data.find('\n');
    const std::size_t line = nl == std::string_view::npos ? data.size() : nl;
    const std::size_t room = max_line_ - partial_.size();
    if (line > room) {  // too long: cut a full piece and go on
      emit(data.substr(0, room), out);
      data.remove_prefix(room);
      continue;
    }
    if (nl == std::string_view::npos) {  // unfinished: keep it
      partial_.append(data);
      return;
    }
    emit(data.substr(0, nl), out);
    data.remove_prefix(nl + 1);
  }
}

void OutputPrefixer::flush(std::string *out) {
  if (!partial_.empty()) emit({}, out);
}

}  // namespace rocl::impl
