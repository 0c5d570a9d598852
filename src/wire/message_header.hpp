// message_header.hpp - the frame header every rocl message carries on a
// network. In-process hand-off never serialises it, but its fields are the
// ones the core matches on, so every transport speaks the same header.
// Layout and validation rules: docs/protocol.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rocl::wire {

inline constexpr std::uint16_t kMagic = 0x524c;  // "RL"
inline constexpr std::uint8_t kVersion = 1;

enum class Kind : std::uint8_t {
  kEager = 1,     // whole message follows the header
  kFragment = 2,  // one piece of a striped/fragmented message
  kRendezvousRequest = 3,
  kRendezvousReply = 4,
  kShort = 5,  // only in a ShortHeader: a whole message in one frame
  kWrap = 6,   // only in a ShortHeader, shm only: the ring's lap ends here
};

// A rendezvous request carries, after its header, a body of this many bytes
// (fragment_offset 0, fragment_length 16): where the sender's payload is and
// a cookie the receiver hands back once it copied it. total_length is the
// message's length.
struct RendezvousBody {
  std::uint64_t address;  // where the payload is at the sender (shm: offset in its pool)
  std::uint64_t cookie;   // sender's bookkeeping, 0..63 for shm
};
static_assert(sizeof(RendezvousBody) == 16);

// The flags a frame may carry (MessageHeader::flags), on a rendezvous
// request only. kFlagCallerMemory: its `address` is a virtual address in the sending
// process, the memory of the application's send (lent until the cookie
// comes back), read with cross-memory attach (shm: process_vm_readv),
// not an offset in the sender's buffer pool.
inline constexpr std::uint32_t kFlagCallerMemory = 1;

// A hint a shared-memory rendezvous request may carry: the sending cpu
// wrote the payload's first part last (it received the message through a
// copy offer and copied that part itself), so that part sits in its cache
// and the rest in the receiver's. A receiver that offers the sender part of
// the copy offers it that part (shm_copy_offer.cpp): each cpu then reads
// lines of its own cache instead of lines dirty in the other's.
inline constexpr std::uint32_t kFlagSenderHoldsFirst = 2;

// 64 bytes, little-endian on the wire, naturally aligned fields.
struct MessageHeader {
  std::uint16_t magic;
  std::uint8_t version;
  Kind kind;
  std::uint32_t flags;
  std::uint64_t source;        // origin resource gid
  std::uint64_t destination;   // destination resource gid
  std::int32_t tag;            // >= 0
  std::uint32_t domain;        // message context (CoR domain, MPI communicator)
  std::uint64_t message_id;    // per origin context; fragments of one message share it
  std::uint64_t total_length;  // payload bytes of the whole message
  std::uint64_t fragment_offset;
  std::uint32_t fragment_length;
  std::uint32_t reserved;
};
static_assert(sizeof(MessageHeader) == 64);

// 32 bytes: the header of a message that travels whole in one frame, for
// transports that want small messages small (shm: a message of up to 24
// bytes and its header fill one cache line with the frame's seal). It
// starts as MessageHeader does, so the kind byte (offset 3) tells the two
// apart; decode_frame_header reads either.
struct ShortHeader {
  std::uint16_t magic;
  std::uint8_t version;
  Kind kind;             // kShort
  std::uint32_t length;  // payload bytes after the header
  std::uint64_t source;  // origin resource gid
  std::uint64_t destination;
  std::int32_t tag;  // >= 0
  std::uint32_t domain;
};
static_assert(sizeof(ShortHeader) == 32);

// Byte offset of `kind` in both headers.
inline constexpr std::size_t kKindOffset = 3;

}  // namespace rocl::wire
