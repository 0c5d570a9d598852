// shm_handshake.cpp - the checks of what one process of an shm connection
// reads of the other (see shm_handshake.hpp).
#include "transport/shm/shm_handshake.hpp"

#include <cstring>

#include "transport/shm/shm_transport.hpp"

namespace rocl::impl::shm::detail {

std::optional<ParsedAddress> parse_address(std::string_view a) {
  if (a.substr(0, 4) != "shm:") return std::nullopt;
  a.remove_prefix(4);
  ParsedAddress out;
  std::uint64_t v[3];
  for (auto &x : v) {
    const auto colon = a.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 20) return std::nullopt;
    x = 0;
    for (char c : a.substr(0, colon)) {
      if (c < '0' || c > '9') return std::nullopt;
      const auto digit = static_cast<std::uint64_t>(c - '0');
      if (x > (UINT64_MAX - digit) / 10) return std::nullopt;  // 20 digits may not fit
      x = x * 10 + digit;
    }
    a.remove_prefix(colon + 1);
  }
  if (v[0] == 0 || v[0] > 0x7fffffff || v[1] > 0x7fffffff) return std::nullopt;
  out.pid = static_cast<pid_t>(v[0]);
  out.fd = static_cast<int>(v[1]);
  out.size = v[2];
  out.host = std::string(a);
  return out;
}

SegShape read_shape(const SegHeader &h) {
  return SegShape{h.magic, h.version, h.slots, h.ring_bytes, h.header_bytes};
}

bool shape_ok(const SegShape &s, std::uint64_t mapped) {
  const std::uint64_t rb = s.ring_bytes;
  if (s.magic != kSegMagic || s.version != kSegVersion || s.slots == 0 || s.slots > kMaxSlots ||
      rb < 4096 || (rb & (rb - 1)) != 0 ||
      s.header_bytes != header_bytes_for(static_cast<std::uint32_t>(s.slots)) ||
      s.header_bytes > mapped) {
    return false;
  }
  // The rings fill the rest, one per slot. Divided, not multiplied: slots *
  // ring_bytes may wrap around (2 rings of 2^63 bytes "fit" in none), and
  // the connector would then place its ring outside the mapping.
  const std::uint64_t rings = mapped - s.header_bytes;
  return rings % s.slots == 0 && rings / s.slots == rb;
}

Hello make_hello(const JobSecret &secret, const JobSecret::Challenge &challenge, std::uint32_t pid,
                 std::uint32_t slot, std::uint32_t pool_fd, std::uint64_t pool_bytes) {
  Hello h{};
  h.magic = kHelloMagic;
  h.pid = pid;
  h.slot = slot;
  const auto proof = secret.prove(shm::kProofLabel, challenge);
  std::memcpy(h.proof, proof.data(), sizeof h.proof);
  h.pool_fd = pool_fd;
  h.pool_bytes = pool_bytes;
  return h;
}

bool hello_ok(const Hello &h, std::uint32_t slot, const JobSecret &secret,
              const JobSecret::Challenge &challenge) {
  JobSecret::Digest proof;
  std::memcpy(proof.data(), h.proof, proof.size());
  return h.magic == kHelloMagic && h.slot == slot &&
         secret.verify(shm::kProofLabel, challenge, proof);
}

}  // namespace rocl::impl::shm::detail
