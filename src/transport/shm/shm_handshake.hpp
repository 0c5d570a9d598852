// shm_handshake.hpp - what the two processes of an shm connection read of
// each other before trusting it (design: shm_transport.hpp), checked apart
// from shared memory and /proc: the address a receiver publishes, the
// header of its inbox that a connector maps, and the Hello a connector
// writes first in the slot it claimed. Free functions: no state, no system
// call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "security/job_secret.hpp"
#include "transport/shm/shm_layout.hpp"

namespace rocl::impl::shm::detail {

// "shm:<pid>:<fd>:<size>:<host tag>", as ShmTransportImpl publishes it.
struct ParsedAddress {
  pid_t pid = 0;
  int fd = -1;
  std::uint64_t size = 0;
  std::string host;
};

// The fields of an address, or nullopt if it is not one (pid 1..2^31-1, fd
// 0..2^31-1, each number of 1..20 decimal digits and at most 2^64 - 1).
std::optional<ParsedAddress> parse_address(std::string_view a);

// The fields of an inbox's SegHeader that place its slots and rings, read
// once: the receiver may change its header after they were checked, so
// the connector uses these copies only.
struct SegShape {
  std::uint64_t magic = 0;
  std::uint32_t version = 0;
  std::uint64_t slots = 0;
  std::uint64_t ring_bytes = 0;
  std::uint64_t header_bytes = 0;
};
SegShape read_shape(const SegHeader &h);

// Whether `s` describes the inbox mapped as `mapped` bytes: the magic and
// version, 1..kMaxSlots slots whose controls fit the header
// (header_bytes_for), rings of a power of two from 4096 bytes, one per
// slot, right after the header and ending where the mapping ends.
bool shape_ok(const SegShape &s, std::uint64_t mapped);

// The connector's Hello for slot `slot`: the proof of `secret` on the
// inbox's challenge, and its pool (pool_fd ~0u, pool_bytes 0: none).
Hello make_hello(const JobSecret &secret, const JobSecret::Challenge &challenge, std::uint32_t pid,
                 std::uint32_t slot, std::uint32_t pool_fd, std::uint64_t pool_bytes);

// Whether a Hello read from slot `slot` of the inbox whose challenge is
// `challenge` is one: the magic, the slot, and the proof of `secret`.
bool hello_ok(const Hello &h, std::uint32_t slot, const JobSecret &secret,
              const JobSecret::Challenge &challenge);

}  // namespace rocl::impl::shm::detail
