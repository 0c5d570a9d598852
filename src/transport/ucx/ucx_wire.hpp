// ucx_wire.hpp - the header of every active message the ucx transport
// sends (docs/protocol.md, "UCX"), and its check. The payload is the
// message's bytes, sent by UCX as they are (eager or rendezvous: UCX's
// choice by size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "message/message.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl::ucx {

enum class AmKind : std::uint32_t {
  kMessage = 1,  // a rocl message for `destination`
  kHello = 2,    // the first message on an end-point: the job secret's proof
};

constexpr std::uint32_t kAmMagic = 0x31585552;  // "RUX1" in memory order

struct AmHeader {
  std::uint32_t magic;
  AmKind kind;
  rocl_gid_t destination;  // kMessage: the local resource it is for
  CoreHeader header;       // kMessage: source, tag, domain word
};
static_assert(sizeof(AmHeader) == 32);

// A hello's payload: a fresh nonce and the proof, under the job secret,
// that the sender knows it, bound to the receiver's address and the nonce
// (hello_challenge). A receiver accepts each nonce once.
struct Hello {
  std::uint8_t nonce[32];
  JobSecret::Digest proof;
};

// What the proof of a hello to the worker whose address is
// `receiver_address` (hex) with `nonce` is computed over.
inline std::vector<std::uint8_t> hello_challenge(std::string_view receiver_address,
                                                 const std::uint8_t (&nonce)[32]) {
  std::vector<std::uint8_t> c(receiver_address.begin(), receiver_address.end());
  c.insert(c.end(), nonce, nonce + sizeof nonce);
  return c;
}

// The header of an arrived active message, or a sentence saying what is
// wrong with it (a header of another length, another magic, an unknown
// kind, a hello whose payload is not a Hello's size).
inline const char *check_header(const void *bytes, std::size_t length, std::size_t payload,
                                AmHeader *out) noexcept {
  if (length != sizeof(AmHeader)) return "header of the wrong size";
  std::memcpy(out, bytes, sizeof *out);
  if (out->magic != kAmMagic) return "bad magic";
  if (out->kind == AmKind::kMessage) return nullptr;
  if (out->kind != AmKind::kHello) return "unknown kind";
  return payload == sizeof(Hello) ? nullptr : "hello of the wrong size";
}

}  // namespace rocl::impl::ucx
