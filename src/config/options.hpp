// options.hpp - options as declarative rows (name, default, doc, type) and
// the values in force, read from ROCL_* environment variables. Every layer
// that has tunables declares its rows beside its code (the core's in
// core/options.cpp, each transport's in its folder); the context gathers
// them into one OptionValues, which rocl-info prints with their docs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl {

enum class OptionType {
  kSize,    // bytes, with K/M/G suffixes: "64K"
  kUint,    // a 32-bit unsigned count
  kString,  // free text (a list, a path, an address)
};

// One option: its environment variable, its default (as text, parsed as
// the type says), what it does for the user.
struct OptionRow {
  const char *name;
  const char *default_value;
  const char *doc;
  OptionType type;
};

// The values in force of a set of options. Cheap to copy; not thread safe
// to change (it is filled once, before the context starts).
class OptionValues {
 public:
  OptionValues() = default;
  // The defaults of `rows`.
  explicit OptionValues(std::span<const OptionRow> rows) { add(rows); }

  // Adds rows at their defaults. A name that is there already is an
  // internal error (std::logic_error).
  void add(std::span<const OptionRow> rows);

  // Each option whose variable is set (and not empty) takes its value; a
  // malformed value keeps the default and says so on stderr, naming the
  // variable.
  void read_environment();

  // Sets option `name` to `text`. False, changing nothing, if there is no
  // such option or the text is not a value of its type.
  bool set(std::string_view name, std::string_view text);

  // The value of option `name`, which must exist with that type (else
  // std::logic_error: a row is missing, a programming error).
  std::size_t size(std::string_view name) const;
  std::uint32_t uint(std::string_view name) const;
  const std::string &text(std::string_view name) const;

  // Prints name, value in force (and whether from the environment), and
  // doc of every option, in the order they were added.
  void print(std::FILE *out) const;

 private:
  struct Value {
    const OptionRow *row;
    std::string text;
    std::size_t size = 0;
    std::uint32_t uint = 0;
    bool from_environment = false;
  };
  const Value &find(std::string_view name, OptionType type) const;
  static bool parse(const OptionRow &row, std::string_view text, Value *into);

  std::vector<Value> values_;
};

// Parses "64K", "2M", "4G", "1048576"; false if malformed.
bool parse_size(const char *text, std::size_t *out);

// The names of a comma-separated option value ("shm,tcp"), in order; empty
// ones ("a,,b", a trailing comma) are skipped.
std::vector<std::string> split_list(std::string_view list);

}  // namespace rocl::impl
