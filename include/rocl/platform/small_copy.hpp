// small_copy.hpp - copies of a few bytes without a call to memcpy, for the
// payloads of small messages, where the call and its size dispatch cost as
// much as the copy: fixed-size moves, which the compiler makes a register
// load and store each. Used by the shm transport (into and out of its
// rings) and by the core (a small message copied into a receive's memory).
#pragma once

#include <cstddef>
#include <cstring>

namespace rocl::platform {

// Copies n <= 24 bytes with at most two fixed-size moves of 1 to 16 bytes
// (overlapping).
inline void copy_small(std::byte *dst, const std::byte *src, std::size_t n) noexcept {
  if (n >= 8) {
    if (n > 16) {
      std::memcpy(dst, src, 16);
    } else {
      std::memcpy(dst, src, 8);
    }
    std::memcpy(dst + n - 8, src + n - 8, 8);  // overlaps what came before: fine
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n != 0) {
    dst[0] = src[0];
    if (n > 1) std::memcpy(dst + n - 2, src + n - 2, 2);
  }
}

// Copies n <= 64 bytes with at most two fixed-size moves of 16 or 32 bytes
// (overlapping), or copy_small's below 16.
inline void copy_upto64(std::byte *dst, const std::byte *src, std::size_t n) noexcept {
  if (n >= 32) {
    std::memcpy(dst, src, 32);
    std::memcpy(dst + n - 32, src + n - 32, 32);
  } else if (n >= 16) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else {
    copy_small(dst, src, n);
  }
}

// Copies n bytes (a short frame's payload, up to about 1 KiB) with 32-byte
// moves and an overlapping last one, or copy_upto64's at most 64: no call
// to memcpy, whose call and size dispatch cost about 30 instructions of a
// 256-byte message's path on each side.
inline void copy_upto1k(std::byte *dst, const std::byte *src, std::size_t n) noexcept {
  if (n <= 64) {
    copy_upto64(dst, src, n);
    return;
  }
  for (std::size_t i = 0; i < n - 32; i += 32) {
    std::memcpy(dst + i, src + i, 32);
    asm("" : "+r"(i));  // keeps GCC from turning the loop back into a memcpy call
  }
  std::memcpy(dst + n - 32, src + n - 32, 32);
}

}  // namespace rocl::platform
