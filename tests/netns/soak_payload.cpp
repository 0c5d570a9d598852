// soak_payload.cpp - what a soak message holds: its length, its mode and its
// bytes all follow from (seed, sender, receiver, sequence number), so the
// receiver can tell a lost, duplicated, misdelivered or damaged message
// from the right one without being told anything but the message.
#include <algorithm>
#include <cstring>

#include "soak.hpp"

namespace soak {

namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

std::uint64_t key_of(std::uint64_t seed, int from, int to, std::uint64_t seq) {
  const std::uint64_t pair = (static_cast<std::uint64_t>(from) << 32) | static_cast<unsigned>(to);
  return mix(seed ^ mix(pair + kGolden) ^ mix(seq * kGolden + 0x632BE59BD9B4E019ull));
}

// The i-th word of a message's stream.
std::uint64_t word(std::uint64_t key, std::size_t i) {
  return mix(key + (static_cast<std::uint64_t>(i) + 1) * kGolden);
}

void fill_stream(std::uint64_t key, unsigned char *p, std::size_t from, std::size_t len) {
  for (std::size_t i = from / 8; i * 8 < len; ++i) {
    const std::uint64_t w = word(key, i);
    const std::size_t at = i * 8, n = len - at < 8 ? len - at : 8;
    std::memcpy(p + at, &w, n);
  }
}

// The first offset from `from` on where p differs from the stream, or len.
std::size_t stream_mismatch(std::uint64_t key, const unsigned char *p, std::size_t from,
                            std::size_t len) {
  for (std::size_t i = from / 8; i * 8 < len; ++i) {
    const std::uint64_t w = word(key, i);
    const std::size_t at = i * 8, n = len - at < 8 ? len - at : 8;
    if (std::memcmp(p + at, &w, n) != 0) {
      for (std::size_t k = 0; k < n; ++k) {
        if (p[at + k] != reinterpret_cast<const unsigned char *>(&w)[k]) return at + k;
      }
    }
  }
  return len;
}

std::uint64_t hash_of(const unsigned char *p, std::size_t len) {
  std::uint64_t h = len * kGolden;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = ((h ^ w) << 27 | (h ^ w) >> 37) * kGolden + 0x632BE59BD9B4E019ull;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, p + i, len - i);
  return mix(h ^ tail);
}

constexpr std::size_t kHeader = 16;  // hash, sequence number

}  // namespace

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Plan plan_of(const Config &config, int from, int to, std::uint64_t seq) {
  const std::uint64_t h = mix(key_of(config.seed, from, to, seq) ^ 0x5eed);
  const std::uint64_t pick = h % 1000, v = mix(h);
  const std::size_t max = config.max_size;
  // Bands (lo, hi]: 0..1 KiB, 1..64 KiB, 64 KiB..max; one above max folds
  // into the band below.
  int band = pick < 900 ? 0 : pick < 990 ? 1 : 2;
  if (band == 2 && max <= (64u << 10)) band = 1;
  if (band == 1 && max <= (1u << 10)) band = 0;
  constexpr std::size_t kEdge[] = {0, 1u << 10, 64u << 10};
  const std::size_t lo = kEdge[band];
  const std::size_t hi = band == 2 ? max : std::min(kEdge[band + 1], max);
  return Plan{lo + 1 + static_cast<std::size_t>(v % (hi - lo)),
              static_cast<Mode>(1 + (h >> 40) % 4)};
}

void fill_payload(std::uint64_t seed, int from, int to, std::uint64_t seq, unsigned char *p,
                  std::size_t len) {
  const std::uint64_t key = key_of(seed, from, to, seq);
  fill_stream(key, p, 0, len);
  if (len < kHeader) return;
  std::memcpy(p + 8, &seq, 8);
  const std::uint64_t h = hash_of(p + 8, len - 8);
  std::memcpy(p, &h, 8);
}

std::string check_payload(std::uint64_t seed, int from, int to, std::uint64_t seq,
                          const unsigned char *p, std::size_t len) {
  const std::uint64_t key = key_of(seed, from, to, seq);
  if (len >= kHeader) {
    std::uint64_t carried = 0, carried_seq = 0;
    std::memcpy(&carried, p, 8);
    std::memcpy(&carried_seq, p + 8, 8);
    if (carried_seq != seq) return "it carries sequence number " + std::to_string(carried_seq);
    if (carried != hash_of(p + 8, len - 8)) return "its hash does not match its bytes";
  }
  const std::size_t at = stream_mismatch(key, p, len >= kHeader ? kHeader : 0, len);
  if (at != len) return "byte " + std::to_string(at) + " of " + std::to_string(len) + " differs";
  return "";
}

}  // namespace soak
