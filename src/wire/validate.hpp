// validate.hpp - the one gate every received frame header passes before any
// of its fields is used: parse_header copies the 64 untrusted bytes out,
// validate_header checks every field against docs/protocol.md ("Validation")
// and names the peer, the field and its value when it rejects a frame.
// Only parse_header and validate_header touch untrusted header bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "wire/message_header.hpp"

namespace rocl::wire {

// Per-transport bounds on what a peer may announce.
struct Limits {
  std::uint64_t max_message_bytes = 1ull << 34;  // total_length
  std::uint32_t max_fragment_bytes = 1u << 26;   // fragment_length
};

// Copies a header out of untrusted bytes (no alignment needed). False if
// bytes holds fewer than sizeof(MessageHeader) bytes; extra bytes are ignored.
// Checks nothing else: follow with validate_header.
bool parse_header(std::span<const std::byte> bytes, MessageHeader *out) noexcept;

// ROCL_OK if h obeys every rule of docs/protocol.md, else ROCL_EPEER with a
// sentence (rocl::impl::last_error) such as "frame from <peer>: fragment_offset
// 4096 + fragment_length 8192 exceeds total_length 8192". Checks the rules in
// roughly field order and reports the first one broken.
int validate_header(const MessageHeader &h, const Limits &limits, std::string_view peer);

// parse_header + validate_header in one call: ROCL_OK with *out filled, or
// ROCL_EPEER (a frame shorter than a header included).
int decode_header(std::span<const std::byte> bytes, const Limits &limits, std::string_view peer,
                  MessageHeader *out);

// Says which rule of docs/protocol.md "Short headers" h breaks (ROCL_EPEER
// and the sentence), or ROCL_OK if none: decode_short_header's slow half.
int reject_short_header(const ShortHeader &h, const Limits &limits, std::string_view peer);

// Copies a ShortHeader out of 32 untrusted bytes and checks it: ROCL_OK, or
// ROCL_EPEER with the sentence of reject_short_header. Inline, for the path
// of every small message: the common case is a handful of compares.
inline int decode_short_header(const std::byte *bytes, const Limits &limits, std::string_view peer,
                               ShortHeader *out) {
  std::memcpy(out, bytes, sizeof *out);
  const ShortHeader &h = *out;
  constexpr std::uint64_t kAllOnes = ~std::uint64_t{0};
  if (h.magic == kMagic && h.version == kVersion && h.kind == Kind::kShort && h.source != 0 &&
      h.source != kAllOnes && h.destination != 0 && h.destination != kAllOnes && h.tag >= 0 &&
      h.length <= limits.max_fragment_bytes && h.length <= limits.max_message_bytes) {
    return 0;  // ROCL_OK
  }
  return reject_short_header(h, limits, peer);
}

// The one entry for a transport that sends both header kinds (shm): the
// header at the start of `bytes` is a ShortHeader if its kind byte says
// kShort, else a MessageHeader. Either is validated (a short one by the
// rules of docs/protocol.md "Short headers") and returned as the
// MessageHeader it stands for (a short header: an eager frame of `length`
// bytes, message_id 0); *header_bytes is the header's size (32 or 64).
// ROCL_EPEER with a sentence if bytes is shorter than the header or a rule
// is broken.
int decode_frame_header(std::span<const std::byte> bytes, const Limits &limits,
                        std::string_view peer, MessageHeader *out, std::size_t *header_bytes);

// Checks the 32 untrusted bytes of a wrap frame's header (shm: the
// sender's lap of the ring ends there, docs/protocol.md "Wrap frames"):
// magic, version, kind kWrap, and every other field 0. ROCL_OK, or
// ROCL_EPEER with the rule it breaks.
int check_wrap_header(const std::byte *bytes, std::string_view peer);

// Name of a kind for messages ("eager", ...), "unknown" for others.
const char *kind_name(Kind k) noexcept;

}  // namespace rocl::wire
