// directory.cpp - the directory queries every part of the layer makes,
// with rocl's C++ exceptions turned into "not found".
#include <cstdlib>

#include "pvm_impl.hpp"

namespace rpvm {

std::string decimal(long long value) {
  return std::to_string(value);
}

std::optional<rocl::Found> find_first(const rocl::Attributes &pattern) {
  try {
    return rocl::query(pattern);
  } catch (const rocl::Error &) {
    return std::nullopt;
  }
}

std::vector<rocl::Found> find_all(const rocl::Attributes &pattern) {
  try {
    return rocl::query_all(pattern);
  } catch (const rocl::Error &) {
    return {};
  }
}

std::int64_t register_entry(const rocl::Attributes &attributes) {
  try {
    return rocl_register(attributes.to_c().get());
  } catch (const rocl::Error &e) {
    return e.code();
  }
}

int attribute_int(const rocl::Found &found, const char *name, int otherwise) {
  const std::optional<std::string> v = found.attributes.get(name);
  return v ? int(std::strtol(v->c_str(), nullptr, 10)) : otherwise;
}

}  // namespace rpvm
