// small_copy_test.cpp - the fixed-move copies of small_copy.hpp copy exactly
// n bytes, whatever n and the alignment of either side: every byte of the
// destination up to n is the source's, and nothing after it is touched.
#include "rocl/platform/small_copy.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rocl::platform {
namespace {

constexpr std::byte kGuard{0xa5};

// Copies n bytes with `copy` from src + src_off to dst + dst_off and checks
// the copy and the guard bytes around it.
template <class Copy>
void check_copy(Copy copy, std::size_t n, std::size_t src_off, std::size_t dst_off) {
  std::vector<std::byte> src(n + 128), dst(n + 128, kGuard);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 131 + 7);
  copy(dst.data() + dst_off, src.data() + src_off, n);
  for (std::size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], kGuard) << "before, n " << n;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(dst[dst_off + i], src[src_off + i]) << "byte " << i << " of " << n;
  }
  for (std::size_t i = dst_off + n; i < dst.size(); ++i) {
    ASSERT_EQ(dst[i], kGuard) << "byte " << i - dst_off << " after " << n << " was written";
  }
}

TEST(SmallCopy, CopySmallCopiesUpTo24BytesExactly) {
  for (std::size_t n = 0; n <= 24; ++n) check_copy(copy_small, n, 3, 5);
}

TEST(SmallCopy, CopyUpTo64CopiesExactly) {
  for (std::size_t n = 0; n <= 64; ++n) check_copy(copy_upto64, n, 1, 0);
}

TEST(SmallCopy, CopyUpTo1KCopiesEveryLengthExactlyAtAnyAlignment) {
  for (std::size_t n = 0; n <= 1100; ++n) {
    for (const auto [s, d] :
         std::array<std::array<std::size_t, 2>, 3>{{{0, 0}, {7, 24}, {33, 1}}}) {
      check_copy(copy_upto1k, n, s, d);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace rocl::platform
