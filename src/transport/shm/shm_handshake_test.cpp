// shm_handshake_test.cpp - the checks of what the processes of an shm
// connection read of each other, without shared memory: addresses, inbox
// headers (every ring inside the mapping), Hellos.
#include "transport/shm/shm_handshake.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "transport/shm/shm_transport.hpp"

namespace rocl::impl::shm::detail {
namespace {

TEST(ShmHandshake, AddressFieldsAreRead) {
  const auto a = parse_address("shm:4242:7:1118208:boot-1/pid-2/net-3");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pid, 4242);
  EXPECT_EQ(a->fd, 7);
  EXPECT_EQ(a->size, 1118208u);
  EXPECT_EQ(a->host, "boot-1/pid-2/net-3");
  const auto most = parse_address("shm:2147483647:2147483647:18446744073709551615:h");
  ASSERT_TRUE(most);
  EXPECT_EQ(most->size, UINT64_MAX);
  for (const char *bad : {"tcp:1:2:3:h", "shm:0:2:3:h", "shm:2147483648:2:3:h", "shm:1:x:3:h",
                          "shm:1::3:h", "shm:1:2:3", "shm:1:2:123456789012345678901:h"}) {
    EXPECT_FALSE(parse_address(bad)) << bad;
  }
}

// Found by tests/fuzz/shm_connect_fuzz.cpp: 20 digits past 2^64 - 1 wrapped
// around to a small size instead of being refused.
TEST(ShmHandshake, SizeBeyond64BitsIsRefused) {
  EXPECT_FALSE(parse_address("shm:1:2:18446744073709551616:h"));
  EXPECT_FALSE(parse_address("shm:1:2:47184467440737095517:h"));
  EXPECT_FALSE(parse_address("shm:1:2:99999999999999999999:h"));
}

SegShape shape(std::uint64_t slots, std::uint64_t ring_bytes) {
  return SegShape{kSegMagic, kSegVersion, slots, ring_bytes,
                  header_bytes_for(static_cast<std::uint32_t>(slots))};
}

TEST(ShmHandshake, InboxHeaderDescribesTheMapping) {
  const SegShape s = shape(4, 65536);
  const std::uint64_t mapped = s.header_bytes + 4 * 65536;
  EXPECT_TRUE(shape_ok(s, mapped));
  EXPECT_FALSE(shape_ok(s, mapped - 1));
  EXPECT_FALSE(shape_ok(s, mapped + 65536));
  SegShape bad = s;
  bad.magic ^= 1;
  EXPECT_FALSE(shape_ok(bad, mapped));
  bad = s;
  bad.version += 1;
  EXPECT_FALSE(shape_ok(bad, mapped));
  bad = s;
  bad.header_bytes += 4096;
  EXPECT_FALSE(shape_ok(bad, mapped));
  EXPECT_FALSE(shape_ok(shape(0, 65536), mapped));
  EXPECT_FALSE(shape_ok(shape(kMaxSlots + 1, 4096),
                        header_bytes_for(kMaxSlots + 1) + (kMaxSlots + 1) * std::uint64_t{4096}));
  EXPECT_FALSE(shape_ok(shape(1, 2048), header_bytes_for(1) + 2048));
  EXPECT_FALSE(shape_ok(shape(1, 12288), header_bytes_for(1) + 12288));
}

// Found by tests/fuzz/shm_connect_fuzz.cpp: slots * ring_bytes wrapped
// around, so that a header claiming 2 rings of 2^63 bytes passed for a
// mapping with no room for rings, and the connector put its ring outside.
TEST(ShmHandshake, RingsThatWrapAroundAreRefused) {
  const std::uint64_t huge = std::uint64_t{1} << 63;
  EXPECT_FALSE(shape_ok(shape(2, huge), header_bytes_for(2)));
  EXPECT_FALSE(shape_ok(shape(4, std::uint64_t{1} << 62), header_bytes_for(4)));
  EXPECT_FALSE(shape_ok(shape(3, huge), header_bytes_for(3) + huge));
  EXPECT_FALSE(shape_ok(shape(1, 4096), 4096));  // the header bigger than the mapping
}

TEST(ShmHandshake, HelloProvesTheSecretForItsSlot) {
  const JobSecret secret = JobSecret::generate();
  const JobSecret other = JobSecret::generate();
  const auto challenge = JobSecret::random_challenge();
  const Hello h = make_hello(secret, challenge, 99, 3, 7, 1 << 20);
  EXPECT_EQ(h.pid, 99u);
  EXPECT_EQ(h.pool_fd, 7u);
  EXPECT_EQ(h.pool_bytes, 1u << 20);
  EXPECT_TRUE(hello_ok(h, 3, secret, challenge));
  EXPECT_FALSE(hello_ok(h, 2, secret, challenge));
  EXPECT_FALSE(hello_ok(h, 3, other, challenge));
  auto wrong = challenge;
  wrong[31] ^= 1;
  EXPECT_FALSE(hello_ok(h, 3, secret, wrong));
  Hello bad = h;
  bad.magic ^= 1;
  EXPECT_FALSE(hello_ok(bad, 3, secret, challenge));
}

}  // namespace
}  // namespace rocl::impl::shm::detail
