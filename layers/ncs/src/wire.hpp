// wire.hpp - the NCS header that leads every message NCS carries, its
// check on arrival, and the end-to-end checksum (CRC32C) over a message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncs {

// What a message is for; receives match within one channel only, so that
// collectives and signals never meet a point-to-point receive.
enum class Channel : std::uint8_t {
  kPointToPoint = 0,
  kCollective = 1,
  kSignal = 2,
  kCredit = 3,  // credits returned to a sender; never queued
};

inline constexpr std::uint8_t kChecksummed = 1;      // checksum holds the CRC32C
inline constexpr std::uint8_t kCredited = 2;         // the receiver owes a credit back
inline constexpr std::uint32_t kMagic = 0x4e435331;  // "NCS1"

// 48 bytes, so that the payload behind it keeps a 16-byte alignment.
struct Header {
  std::uint32_t magic = kMagic;
  Channel channel = Channel::kPointToPoint;
  std::uint8_t flags = 0;
  std::uint16_t window = 0;  // the sender's credit window, with kCredited
  std::int32_t from_thread = 0;
  std::int32_t from_process = 0;
  std::int32_t to_thread = 0;
  std::uint32_t credits = 0;  // kCredit: how many credits come back
  std::uint64_t payload_size = 0;
  std::uint32_t checksum = 0;
  std::uint32_t unused = 0;
  std::uint64_t unused2 = 0;
};
static_assert(sizeof(Header) == 48);

// Checks the header at the front of a message of len bytes that arrived
// from a process of a job of `processes`: nullptr and *out if it
// describes the message (the magic, a channel and flags of this header,
// payload_size the rest of the message, thread ids 0..NCS_MAX_THREADS-1
// and the sending process 0..processes-1); otherwise what is wrong, *out
// untouched. Reads nothing past len.
const char *check_header(const void *message, std::size_t len, int processes, Header *out);

// CRC32C (Castagnoli) of n bytes, continuing from crc (0 to start).
std::uint32_t crc32c(std::uint32_t crc, const void *data, std::size_t n);

// The checksum of a message: CRC32C of its header (checksum field as 0)
// followed by its payload.
std::uint32_t message_checksum(const Header &header, const void *payload);

}  // namespace ncs
