// stripe_wire.hpp - the header at the front of every fragment of a striped
// message (docs/protocol.md, "Striped messages"), and its check.
//
// A message of at least ROCL_STRIPE_THRESHOLD bytes to a peer reached over
// several rails is cut into fragments, each sent as a message of its own
// to the peer's context gid (never a resource's: the receiving core knows
// fragments by that) with this header before its bytes. Both ends run the
// same build on hosts of one byte order, as every rocl wire format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "message/message.hpp"

namespace rocl::impl {

struct FragmentHeader {
  static constexpr std::uint32_t kMagic = 0x52535452;  // "RTSR"
  // The most fragments one message may have: bounds what a receiver
  // keeps per message, whatever a header claims.
  static constexpr std::uint64_t kMaxFragments = std::uint64_t{1} << 22;
  // The smallest fragment a sender may cut.
  static constexpr std::uint32_t kMinFragmentBytes = 4096;

  std::uint32_t magic = kMagic;
  // Every fragment but the last carries this many of the message's bytes.
  std::uint32_t fragment_bytes = 0;
  rocl_gid_t destination = ROCL_NULL_GID;  // the resource the message is for
  CoreHeader header{};                     // the message's own header
  std::uint64_t message_id = 0;  // unique per sending context; with header.source, in the job
  std::uint64_t offset = 0;      // of this fragment's bytes in the message
  std::uint64_t total = 0;       // the message's length
};
static_assert(sizeof(FragmentHeader) == 56);

// What the receiver sends the sending context once a striped message is
// whole (again for every repeat of a fragment of it): the sender's send
// returns then, and resends the message if it does not come.
struct StripeAck {
  static constexpr std::uint32_t kMagic = 0x52535441;  // "ATSR"
  std::uint32_t magic = kMagic;
  std::uint32_t reserved = 0;
  rocl_gid_t source = ROCL_NULL_GID;  // the message's source
  std::uint64_t message_id = 0;
};
static_assert(sizeof(StripeAck) == 24);

// The first word of a message to a context: which of the two it is.
inline std::uint32_t context_message_magic(const void *bytes, std::size_t length) noexcept {
  std::uint32_t magic = 0;
  if (length >= sizeof magic) std::memcpy(&magic, bytes, sizeof magic);
  return magic;
}

// The fragment count of a message of `total` bytes cut at fragment_bytes.
inline std::uint64_t fragment_count(std::uint64_t total, std::uint32_t fragment_bytes) noexcept {
  return (total + fragment_bytes - 1) / fragment_bytes;
}

// Reads the header of a fragment of `length` bytes at `bytes` into *out
// and checks it: nullptr if it is one, else what is wrong (a phrase). The
// fragment's own bytes follow the header: length - sizeof(FragmentHeader).
inline const char *parse_fragment(const void *bytes, std::size_t length,
                                  FragmentHeader *out) noexcept {
  if (length < sizeof(FragmentHeader)) return "shorter than a fragment header";
  std::memcpy(out, bytes, sizeof *out);
  if (out->magic != FragmentHeader::kMagic) return "not a fragment (bad magic)";
  if (out->fragment_bytes < FragmentHeader::kMinFragmentBytes) return "fragment size too small";
  if (out->total <= out->fragment_bytes) return "a message of one fragment";
  if (fragment_count(out->total, out->fragment_bytes) > FragmentHeader::kMaxFragments) {
    return "too many fragments";
  }
  if (out->offset >= out->total || out->offset % out->fragment_bytes != 0) {
    return "offset out of range";
  }
  const std::uint64_t expected = out->total - out->offset < out->fragment_bytes
                                     ? out->total - out->offset
                                     : out->fragment_bytes;
  if (length - sizeof(FragmentHeader) != expected) return "length does not match its offset";
  if (out->destination == ROCL_NULL_GID || out->header.source == ROCL_NULL_GID) {
    return "no destination or source";
  }
  if (out->header.is_pattern()) return "a receive's pattern as the message's header";
  return nullptr;
}

}  // namespace rocl::impl
