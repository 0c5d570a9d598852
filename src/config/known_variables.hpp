// known_variables.hpp - the ROCL_* environment variables that are not
// options but that rocl's launchers, layers, tools, scripts and tests set or
// read, and the check rocl_init makes with them and the options: every other
// ROCL_* variable is a mistake (ROCL_TRANSPORT for ROCL_TRANSPORTS) that
// would otherwise be ignored without a word.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl {

// One ROCL_* variable that is not an option: who sets or reads it, and what
// it carries (docs/options.md, "Other ROCL_* variables", shows the table).
struct VariableRow {
  const char *name;
  const char *user;  // who sets or reads it: "roclrun", "MPI layer", ...
  const char *doc;
};

// Every ROCL_* variable that is not an option row, in blocks by user. A new
// variable anywhere in the tree belongs here, or every process that has it
// in its environment warns (scripts/check-variables.py finds the missing).
std::span<const VariableRow> non_option_variables() noexcept;

// The name of `known` closest to `name` (compared in upper case): one at
// most two edits away (a letter added, dropped, changed or two swapped), else
// one that begins with `name` or that `name` begins with (a name cut short,
// or a suffix added), the fewest edits away; "" when none is that close.
std::string closest_name(std::string_view name, std::span<const std::string_view> known);

// The entries ("NAME=value") of `environment` (NULL-terminated, as environ)
// whose name begins with ROCL_ and is not in `known`, in their order.
std::vector<std::string> unknown_variables(const char *const *environment,
                                           std::span<const std::string_view> known);

// The warning for unknown entry "NAME=value", without a newline: the name,
// the value (cut at 64 characters) and the closest known name, or where the
// known ones are listed when none is close.
std::string unknown_variable_warning(std::string_view entry,
                                     std::span<const std::string_view> known);

}  // namespace rocl::impl
