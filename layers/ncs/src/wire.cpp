// wire.cpp - the check of a message's header on arrival, and CRC32C: the
// SSE4.2 instruction where the cpu has it (a few GB/s, so that checking
// costs little beside the copy), else a table.
#include "wire.hpp"

#include <array>
#include <cstring>

#include "ncs.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ncs {
namespace {

constexpr std::uint32_t kPolynomial = 0x82f63b78;  // reflected Castagnoli

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr auto kTable = make_table();

std::uint32_t crc32c_table(std::uint32_t crc, const unsigned char *p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc,
                                                             const unsigned char *p,
                                                             std::size_t n) {
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

const char *check_header(const void *message, std::size_t len, int processes, Header *out) {
  Header h;
  if (len < sizeof h) return "shorter than a header";
  std::memcpy(&h, message, sizeof h);
  if (h.magic != kMagic) return "not NCS's magic";
  // A message of no channel would wait for a receive forever; a sender
  // thread out of range would reach NCS_recv's caller as its source, and
  // key a credit route of its own.
  if (static_cast<std::uint8_t>(h.channel) > static_cast<std::uint8_t>(Channel::kCredit)) {
    return "an unknown channel";
  }
  if ((h.flags & ~(kChecksummed | kCredited)) != 0) return "unknown flags";
  if (len != sizeof h + h.payload_size) return "a payload_size other than the rest of the message";
  if (h.to_thread < 0 || h.to_thread >= NCS_MAX_THREADS) return "to_thread out of range";
  if (h.from_thread < 0 || h.from_thread >= NCS_MAX_THREADS) return "from_thread out of range";
  if (h.from_process < 0 || h.from_process >= processes) return "from_process out of range";
  *out = h;
  return nullptr;
}

std::uint32_t crc32c(std::uint32_t crc, const void *data, std::size_t n) {
  const auto *p = static_cast<const unsigned char *>(data);
  crc = ~crc;
#if defined(__x86_64__)
  crc = kHaveSse42 ? crc32c_sse42(crc, p, n) : crc32c_table(crc, p, n);
#else
  crc = crc32c_table(crc, p, n);
#endif
  return ~crc;
}

std::uint32_t message_checksum(const Header &header, const void *payload) {
  Header copy = header;
  copy.checksum = 0;
  const std::uint32_t crc = crc32c(0, &copy, sizeof copy);
  return crc32c(crc, payload, header.payload_size);
}

}  // namespace ncs
