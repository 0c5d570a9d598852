// registry_lookup.cpp - finding a row of the registration table by name.
#include "transport/transport.hpp"

namespace rocl::impl {

const TransportEntry *find_transport(std::string_view name) noexcept {
  for (const TransportEntry *entry : transport_table()) {
    if (name == entry->name) return entry;
  }
  return nullptr;
}

}  // namespace rocl::impl
