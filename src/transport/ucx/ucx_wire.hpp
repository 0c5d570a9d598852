// ucx_wire.hpp - the header of every active message the ucx transport
// sends (docs/protocol.md, "UCX"), and its check. The payload is the
// message's bytes, sent by UCX as they are (eager or rendezvous: UCX's
// choice by size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

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

// A ucx transport's address: "ucx:<host id>:<pid>.<start>:<worker>", the
// host id as os::host_id() gives it, the process's pid and start time
// (os::process_start: with the pid, a name never reused), and UCX's worker
// address in hex. Peers of one host are told apart from others by it:
// their end-points go without UCX's peer error handling (which UCX's shared
// memory lacks) and their liveness is the process's.
struct Address {
  std::string host_id;
  long pid = 0;
  std::uint64_t start = 0;
  std::string worker_hex;
};

inline std::string format_address(const Address &a) {
  return "ucx:" + a.host_id + ":" + std::to_string(a.pid) + "." + std::to_string(a.start) + ":" +
         a.worker_hex;
}

// False on anything not of that form (the worker part is checked as hex
// when it is decoded).
inline bool parse_address(std::string_view text, Address *out) {
  if (!text.starts_with("ucx:")) return false;
  text.remove_prefix(4);
  const auto c1 = text.find(':');
  if (c1 == std::string_view::npos || c1 == 0 || c1 > 32) return false;
  out->host_id = std::string(text.substr(0, c1));
  text.remove_prefix(c1 + 1);
  const auto c2 = text.find(':');
  if (c2 == std::string_view::npos) return false;
  const std::string_view process = text.substr(0, c2);
  const auto dot = process.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == process.size() || dot > 10 ||
      process.size() - dot - 1 > 20) {
    return false;
  }
  std::uint64_t v[2] = {0, 0};
  const std::string_view parts[2] = {process.substr(0, dot), process.substr(dot + 1)};
  for (int i = 0; i < 2; ++i) {
    for (char ch : parts[i]) {
      if (ch < '0' || ch > '9') return false;
      v[i] = v[i] * 10 + static_cast<std::uint64_t>(ch - '0');
    }
  }
  out->pid = static_cast<long>(v[0]);
  out->start = v[1];
  out->worker_hex = std::string(text.substr(c2 + 1));
  return !out->worker_hex.empty();
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
