// wire_test.cpp - the NCS header's check on arrival and the checksum: a
// message a sender builds passes, each field another process can get
// wrong is refused, and a changed byte changes the checksum.
#include "wire.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ncs.h"

namespace ncs {
namespace {

std::vector<char> message(const Header &h, const char *payload) {
  std::vector<char> m(sizeof h + std::strlen(payload));
  std::memcpy(m.data(), &h, sizeof h);
  std::memcpy(m.data() + sizeof h, payload, std::strlen(payload));
  return m;
}

Header sample(const char *payload) {
  Header h;
  h.channel = Channel::kPointToPoint;
  h.flags = kCredited;
  h.window = 8;
  h.from_thread = 2;
  h.from_process = 1;
  h.to_thread = 3;
  h.payload_size = std::strlen(payload);
  return h;
}

TEST(NcsWire, BuiltMessagePasses) {
  const auto m = message(sample("hello"), "hello");
  Header h;
  EXPECT_EQ(check_header(m.data(), m.size(), 4, &h), nullptr);
  EXPECT_EQ(h.to_thread, 3);
  EXPECT_EQ(h.payload_size, 5u);
}

TEST(NcsWire, EachBadFieldIsRefused) {
  Header out;
  out.to_thread = 77;
  const auto m = message(sample("hello"), "hello");
  EXPECT_NE(check_header(m.data(), sizeof(Header) - 1, 4, &out), nullptr);
  EXPECT_NE(check_header(m.data(), m.size() - 1, 4, &out), nullptr);
  EXPECT_NE(check_header(m.data(), m.size(), 1, &out), nullptr);  // from process 1 of 1
  const auto refused = [&](void (*change)(Header &)) {
    Header h = sample("hello");
    change(h);
    const auto bad = message(h, "hello");
    return check_header(bad.data(), bad.size(), 4, &out) != nullptr;
  };
  EXPECT_TRUE(refused([](Header &h) { h.magic ^= 1; }));
  EXPECT_TRUE(refused([](Header &h) { h.payload_size += 1; }));
  EXPECT_TRUE(refused([](Header &h) { h.to_thread = -1; }));
  EXPECT_TRUE(refused([](Header &h) { h.to_thread = NCS_MAX_THREADS; }));
  EXPECT_TRUE(refused([](Header &h) { h.from_process = -1; }));
  EXPECT_EQ(out.to_thread, 77) << "a refusal set *out";
}

// Found by tests/fuzz/ncs_wire_fuzz.cpp: a sender thread out of range, an
// unknown channel or unknown flags passed the check; such a message would
// reach a receive with a source no thread has, or wait for a receive that
// no channel makes.
TEST(NcsWire, UnknownChannelFlagsAndSenderAreRefused) {
  Header out;
  const auto refused = [&](void (*change)(Header &)) {
    Header h = sample("x");
    change(h);
    const auto bad = message(h, "x");
    return check_header(bad.data(), bad.size(), 4, &out) != nullptr;
  };
  EXPECT_TRUE(refused([](Header &h) { h.from_thread = -1; }));
  EXPECT_TRUE(refused([](Header &h) { h.from_thread = NCS_MAX_THREADS; }));
  EXPECT_TRUE(refused([](Header &h) { h.channel = static_cast<Channel>(4); }));
  EXPECT_TRUE(refused([](Header &h) { h.flags = 4; }));
  EXPECT_FALSE(refused([](Header &h) { h.channel = Channel::kCredit; }));
  EXPECT_FALSE(refused([](Header &h) { h.flags = kChecksummed | kCredited; }));
}

TEST(NcsWire, ChecksumCoversHeaderAndPayload) {
  char payload[] = "some payload bytes";
  Header h = sample(payload);
  const std::uint32_t crc = message_checksum(h, payload);
  h.checksum = crc;
  EXPECT_EQ(message_checksum(h, payload), crc) << "the checksum field is not covered";
  payload[3] ^= 1;
  EXPECT_NE(message_checksum(h, payload), crc);
  payload[3] ^= 1;
}

}  // namespace
}  // namespace ncs
