// little_endian.hpp - integers in the directory's wire formats (the client
// protocol, dir_protocol.hpp, and the servers' datagrams, peer_protocol.hpp)
// are little-endian whatever the host: written and read a byte at a time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rocl::impl::le {

template <typename T>
void put(std::byte *p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    p[i] = static_cast<std::byte>(static_cast<std::uint64_t>(v) >> (8 * i));
  }
}

template <typename T>
T get(const std::byte *p) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  }
  return static_cast<T>(v);
}

}  // namespace rocl::impl::le
