// validate.cpp - frame header parsing and validation (docs/protocol.md).
#include "wire/validate.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstring>

#include "status/status.hpp"

namespace rocl::wire {

static_assert(std::endian::native == std::endian::little,
              "parse_header copies the little-endian wire header as is");

using impl::fail;

namespace {

constexpr std::uint64_t kAllOnes = ~std::uint64_t{0};

// printf("%.*s") arguments for a peer name, at most 200 characters.
int peer_len(std::string_view peer) {
  return static_cast<int>(peer.size() > 200 ? 200 : peer.size());
}
const char *peer_ptr(std::string_view peer) {
  return peer.empty() ? "" : peer.data();
}

// The rules both headers start with: magic and version.
int check_magic_version(std::uint16_t magic, std::uint8_t version, int pl, const char *p) {
  if (magic != kMagic) {
    return fail(ROCL_EPEER, "frame from %.*s: magic 0x%04x is not 0x%04x", pl, p, unsigned{magic},
                unsigned{kMagic});
  }
  if (version != kVersion) {
    return fail(ROCL_EPEER, "frame from %.*s: version %u is not supported (expected %u)", pl, p,
                unsigned{version}, unsigned{kVersion});
  }
  return ROCL_OK;
}

// The rules on the envelope both headers carry: real gids, a tag >= 0
// (every kind defined so far belongs to a user message and carries one).
int check_gids_and_tag(std::uint64_t source, std::uint64_t destination, std::int32_t tag, Kind kind,
                       int pl, const char *p) {
  if (source == 0 || source == kAllOnes) {
    return fail(ROCL_EPEER, "frame from %.*s: source 0x%016" PRIx64 " is not a resource gid", pl, p,
                source);
  }
  if (destination == 0 || destination == kAllOnes) {
    return fail(ROCL_EPEER, "frame from %.*s: destination 0x%016" PRIx64 " is not a resource gid",
                pl, p, destination);
  }
  if (tag < 0) {
    return fail(ROCL_EPEER, "frame from %.*s: tag %" PRId32 " of a %s frame is negative", pl, p,
                tag, kind_name(kind));
  }
  return ROCL_OK;
}

}  // namespace

const char *kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::kEager:
      return "eager";
    case Kind::kFragment:
      return "fragment";
    case Kind::kRendezvousRequest:
      return "rendezvous request";
    case Kind::kRendezvousReply:
      return "rendezvous reply";
    case Kind::kShort:
      return "short";
    case Kind::kWrap:
      return "wrap";
  }
  return "unknown";
}

bool parse_header(std::span<const std::byte> bytes, MessageHeader *out) noexcept {
  if (out == nullptr || bytes.size() < sizeof(MessageHeader)) {
    return false;
  }
  std::memcpy(out, bytes.data(), sizeof(MessageHeader));
  return true;
}

int validate_header(const MessageHeader &h, const Limits &limits, std::string_view peer) {
  const int pl = peer_len(peer);
  const char *p = peer_ptr(peer);
  if (const int rc = check_magic_version(h.magic, h.version, pl, p); rc != ROCL_OK) return rc;
  const auto kind = static_cast<std::uint8_t>(h.kind);
  if (h.kind == Kind::kShort) {
    return fail(ROCL_EPEER, "frame from %.*s: kind 5 (short) in a 64-byte header", pl, p);
  }
  if (kind < static_cast<std::uint8_t>(Kind::kEager) ||
      kind > static_cast<std::uint8_t>(Kind::kRendezvousReply)) {
    return fail(ROCL_EPEER, "frame from %.*s: kind %u is unknown", pl, p, unsigned{kind});
  }
  const std::uint32_t allowed =
      h.kind == Kind::kRendezvousRequest ? kFlagCallerMemory | kFlagSenderHoldsFirst : 0;
  if ((h.flags & ~allowed) != 0) {
    return fail(
        ROCL_EPEER, "frame from %.*s: flags 0x%08" PRIx32 " must be 0 (reserved)%s", pl, p, h.flags,
        allowed != 0 ? " but for bits 0 and 1 (caller memory, sender holds first part)" : "");
  }
  if (const int rc = check_gids_and_tag(h.source, h.destination, h.tag, h.kind, pl, p);
      rc != ROCL_OK) {
    return rc;
  }
  if (h.total_length > limits.max_message_bytes) {
    return fail(ROCL_EPEER, "frame from %.*s: total_length %" PRIu64 " exceeds the limit %" PRIu64,
                pl, p, h.total_length, limits.max_message_bytes);
  }
  if (h.fragment_length > limits.max_fragment_bytes) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_length %" PRIu32 " exceeds the limit %" PRIu32, pl, p,
                h.fragment_length, limits.max_fragment_bytes);
  }
  // Written so that no addition can wrap: offset <= total, then length <= rest.
  if (h.fragment_offset > h.total_length ||
      h.fragment_length > h.total_length - h.fragment_offset) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " + fragment_length %" PRIu32
                " exceeds total_length %" PRIu64,
                pl, p, h.fragment_offset, h.fragment_length, h.total_length);
  }
  if (h.kind == Kind::kEager) {
    if (h.fragment_offset != 0) {
      return fail(ROCL_EPEER,
                  "frame from %.*s: fragment_offset %" PRIu64 " of an eager frame is not 0", pl, p,
                  h.fragment_offset);
    }
    if (h.fragment_length != h.total_length) {
      return fail(ROCL_EPEER,
                  "frame from %.*s: fragment_length %" PRIu32
                  " of an eager frame differs from total_length %" PRIu64,
                  pl, p, h.fragment_length, h.total_length);
    }
  }
  if (h.kind == Kind::kRendezvousRequest &&
      (h.fragment_offset != 0 || h.fragment_length != sizeof(RendezvousBody))) {
    return fail(ROCL_EPEER,
                "frame from %.*s: a rendezvous request carries a %zu-byte body at offset 0, not "
                "%" PRIu32 " bytes at offset %" PRIu64,
                pl, p, sizeof(RendezvousBody), h.fragment_length, h.fragment_offset);
  }
  if (h.kind == Kind::kRendezvousReply && (h.fragment_offset != 0 || h.fragment_length != 0)) {
    return fail(ROCL_EPEER,
                "frame from %.*s: a rendezvous reply carries no body, not %" PRIu32
                " bytes at offset %" PRIu64,
                pl, p, h.fragment_length, h.fragment_offset);
  }
  if (h.kind == Kind::kFragment && h.fragment_length == 0) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_length 0 of a fragment frame carries nothing", pl, p);
  }
  if (h.reserved != 0) {
    return fail(ROCL_EPEER, "frame from %.*s: reserved 0x%08" PRIx32 " must be 0", pl, p,
                h.reserved);
  }
  return ROCL_OK;
}

int decode_header(std::span<const std::byte> bytes, const Limits &limits, std::string_view peer,
                  MessageHeader *out) {
  if (!parse_header(bytes, out)) {
    return fail(ROCL_EPEER, "frame from %.*s: %zu bytes are shorter than the %zu-byte header",
                peer_len(peer), peer_ptr(peer), bytes.size(), sizeof(MessageHeader));
  }
  return validate_header(*out, limits, peer);
}

// The rules of a short header (docs/protocol.md "Short headers"), the same
// as decode_short_header's test, one by one.
int reject_short_header(const ShortHeader &h, const Limits &limits, std::string_view peer) {
  const int pl = peer_len(peer);
  const char *p = peer_ptr(peer);
  if (const int rc = check_magic_version(h.magic, h.version, pl, p); rc != ROCL_OK) return rc;
  if (h.kind != Kind::kShort) {
    return fail(ROCL_EPEER, "frame from %.*s: kind %u in a 32-byte header is not 5 (short)", pl, p,
                unsigned{static_cast<std::uint8_t>(h.kind)});
  }
  if (const int rc = check_gids_and_tag(h.source, h.destination, h.tag, h.kind, pl, p);
      rc != ROCL_OK) {
    return rc;
  }
  const std::uint64_t limit =
      std::min<std::uint64_t>(limits.max_fragment_bytes, limits.max_message_bytes);
  if (h.length > limit) {
    return fail(ROCL_EPEER,
                "frame from %.*s: length %" PRIu32 " of a short frame exceeds the limit %" PRIu64,
                pl, p, h.length, limit);
  }
  return ROCL_OK;
}

int check_wrap_header(const std::byte *bytes, std::string_view peer) {
  ShortHeader h;
  std::memcpy(&h, bytes, sizeof h);
  const int pl = peer_len(peer);
  const char *p = peer_ptr(peer);
  if (const int rc = check_magic_version(h.magic, h.version, pl, p); rc != ROCL_OK) return rc;
  if (h.kind != Kind::kWrap) {
    return fail(ROCL_EPEER, "frame from %.*s: kind %u is not 6 (wrap)", pl, p,
                unsigned{static_cast<std::uint8_t>(h.kind)});
  }
  if (h.length != 0 || h.source != 0 || h.destination != 0 || h.tag != 0 || h.domain != 0) {
    return fail(ROCL_EPEER,
                "frame from %.*s: a wrap frame with length %" PRIu32 ", source %#" PRIx64
                ", destination %#" PRIx64 ", tag %" PRId32 ", domain %#" PRIx32 " (all must be 0)",
                pl, p, h.length, h.source, h.destination, h.tag, h.domain);
  }
  return ROCL_OK;
}

int decode_frame_header(std::span<const std::byte> bytes, const Limits &limits,
                        std::string_view peer, MessageHeader *out, std::size_t *header_bytes) {
  if (bytes.size() > kKindOffset && static_cast<Kind>(bytes[kKindOffset]) == Kind::kShort) {
    ShortHeader s;
    if (bytes.size() < sizeof s) {
      return fail(ROCL_EPEER, "frame from %.*s: %zu bytes are shorter than the %zu-byte header",
                  peer_len(peer), peer_ptr(peer), bytes.size(), sizeof s);
    }
    if (const int rc = decode_short_header(bytes.data(), limits, peer, &s); rc != ROCL_OK) {
      return rc;
    }
    *out = MessageHeader{};
    out->magic = s.magic;
    out->version = s.version;
    out->kind = Kind::kEager;
    out->source = s.source;
    out->destination = s.destination;
    out->tag = s.tag;
    out->domain = s.domain;
    out->total_length = s.length;
    out->fragment_length = s.length;
    *header_bytes = sizeof s;
    return ROCL_OK;
  }
  *header_bytes = sizeof(MessageHeader);
  return decode_header(bytes, limits, peer, out);
}

}  // namespace rocl::wire
