// options.cpp - parsing and printing option values (options.hpp).
#include "config/options.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace rocl::impl {
namespace {

bool parse_uint(const char *text, std::uint32_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > 0xffffffffUL) {
    return false;
  }
  *out = static_cast<std::uint32_t>(v);
  return true;
}

}  // namespace

bool OptionValues::parse(const OptionRow &row, std::string_view text, Value *into) {
  const std::string copy(text);
  switch (row.type) {
    case OptionType::kSize:
      if (!parse_size(copy.c_str(), &into->size)) return false;
      break;
    case OptionType::kUint:
      if (!parse_uint(copy.c_str(), &into->uint)) return false;
      break;
    case OptionType::kString:
      break;
  }
  into->text = copy;
  return true;
}

void OptionValues::add(std::span<const OptionRow> rows) {
  for (const OptionRow &row : rows) {
    for (const Value &v : values_) {
      if (std::string_view(v.row->name) == row.name) {
        throw std::logic_error(std::string("option ") + row.name + " is declared twice");
      }
    }
    Value v{&row, {}};
    if (!parse(row, row.default_value, &v)) {
      throw std::logic_error(std::string("option ") + row.name + "'s default '" +
                             row.default_value + "' is not a value of its type");
    }
    values_.push_back(std::move(v));
  }
}

void OptionValues::read_environment() {
  for (Value &v : values_) {
    const char *text = std::getenv(v.row->name);
    if (text == nullptr || *text == '\0') continue;  // set but empty: the default, as unset
    Value parsed{v.row, {}};
    if (!parse(*v.row, text, &parsed)) {
      std::fprintf(stderr, "rocl: ignoring %s='%s': not a valid value; using %s\n", v.row->name,
                   text, v.row->default_value);
      continue;
    }
    parsed.from_environment = true;
    v = std::move(parsed);
  }
}

bool OptionValues::set(std::string_view name, std::string_view text) {
  for (Value &v : values_) {
    if (v.row->name != name) continue;
    Value parsed{v.row, {}};
    if (!parse(*v.row, text, &parsed)) return false;
    v = std::move(parsed);
    return true;
  }
  return false;
}

const OptionValues::Value &OptionValues::find(std::string_view name, OptionType type) const {
  for (const Value &v : values_) {
    if (v.row->name == name && v.row->type == type) return v;
  }
  throw std::logic_error("no option " + std::string(name) + " of the type asked for");
}

std::size_t OptionValues::size(std::string_view name) const {
  return find(name, OptionType::kSize).size;
}

std::uint32_t OptionValues::uint(std::string_view name) const {
  return find(name, OptionType::kUint).uint;
}

const std::string &OptionValues::text(std::string_view name) const {
  return find(name, OptionType::kString).text;
}

void OptionValues::print(std::FILE *out) const {
  for (const Value &v : values_) {
    std::fprintf(out, "%s=%s%s\n    %s\n", v.row->name, v.text.c_str(),
                 v.from_environment ? "  (from environment)" : "  (default)", v.row->doc);
  }
}

bool parse_size(const char *text, std::size_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  if (*end != '\0') return false;
  if (shift != 0 && v > (~0ull >> shift)) return false;
  *out = static_cast<std::size_t>(v << shift);
  return true;
}

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> names;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (!name.empty()) names.emplace_back(name);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return names;
}

}  // namespace rocl::impl
