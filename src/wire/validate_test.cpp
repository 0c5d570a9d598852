// validate_test.cpp - parse_header/validate_header: every rule of
// docs/protocol.md at its boundary value and one past it, and the sentence
// naming peer, field and value.
#include "wire/validate.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "status/status.hpp"

namespace rocl::wire {
namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();

MessageHeader fragment() {
  MessageHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.kind = Kind::kFragment;
  h.source = 0x0001000000000007;
  h.destination = 0x0002000000000009;
  h.tag = 5;
  h.domain = 3;
  h.message_id = 42;
  h.total_length = 8192;
  h.fragment_offset = 4096;
  h.fragment_length = 4096;
  return h;
}

MessageHeader eager(std::uint32_t length) {
  MessageHeader h = fragment();
  h.kind = Kind::kEager;
  h.total_length = length;
  h.fragment_offset = 0;
  h.fragment_length = length;
  return h;
}

// Validates h and returns the failure sentence ("" when accepted).
std::string check(const MessageHeader &h, const Limits &limits = {}) {
  impl::clear_error();
  const int rc = validate_header(h, limits, "node7:tcp");
  if (rc == ROCL_OK) {
    EXPECT_STREQ(impl::last_error(), "");
    return "";
  }
  EXPECT_EQ(rc, ROCL_EPEER);
  const std::string why = impl::last_error();
  EXPECT_NE(why.find("frame from node7:tcp: "), std::string::npos) << why;
  return why;
}

void expect_rejected(const MessageHeader &h, const std::string &words, const Limits &limits = {}) {
  const std::string why = check(h, limits);
  EXPECT_NE(why.find(words), std::string::npos) << "got: \"" << why << "\" wanted: " << words;
}

TEST(Validate, AcceptsWellFormedFramesOfEveryKind) {
  EXPECT_EQ(check(fragment()), "");
  EXPECT_EQ(check(eager(100)), "");
  EXPECT_EQ(check(eager(0)), "");  // a zero-length message
  MessageHeader h = fragment();
  h.kind = Kind::kRendezvousRequest;
  h.fragment_offset = 0;
  h.fragment_length = sizeof(RendezvousBody);
  EXPECT_EQ(check(h), "");
  h.kind = Kind::kRendezvousReply;
  h.fragment_length = 0;
  EXPECT_EQ(check(h), "");
}

TEST(Validate, RendezvousRequestCarriesExactlyItsBody) {
  MessageHeader h = fragment();
  h.kind = Kind::kRendezvousRequest;
  h.fragment_offset = 0;
  h.fragment_length = 0;
  expect_rejected(h, "rendezvous request carries a 16-byte body");
  h.fragment_length = sizeof(RendezvousBody);
  h.fragment_offset = 8;
  expect_rejected(h, "at offset 8");
}

TEST(Validate, RendezvousReplyCarriesNoBody) {
  MessageHeader h = fragment();
  h.kind = Kind::kRendezvousReply;
  h.fragment_offset = 0;
  h.fragment_length = 0;
  EXPECT_EQ(check(h), "");
  h.total_length = 0;  // a "drop" reply
  EXPECT_EQ(check(h), "");
  h.total_length = 8192;
  h.fragment_length = 16;
  expect_rejected(h, "a rendezvous reply carries no body, not 16 bytes at offset 0");
  h.fragment_length = 0;
  h.fragment_offset = 8;
  expect_rejected(h, "not 0 bytes at offset 8");
}

TEST(Validate, Magic) {
  MessageHeader h = fragment();
  h.magic = 0x524d;
  expect_rejected(h, "magic 0x524d is not 0x524c");
  h.magic = 0;
  expect_rejected(h, "magic 0x0000");
}

TEST(Validate, Version) {
  MessageHeader h = fragment();
  h.version = 0;
  expect_rejected(h, "version 0 is not supported");
  h.version = 2;
  expect_rejected(h, "version 2 is not supported");
}

TEST(Validate, KindMustBeKnown) {
  MessageHeader h = fragment();
  h.fragment_offset = 0;
  h.fragment_length = 8192;
  for (unsigned k : {0u, 6u, 255u}) {
    h.kind = static_cast<Kind>(k);
    expect_rejected(h, "kind " + std::to_string(k) + " is unknown");
  }
  // kShort belongs to the 32-byte header only.
  h.kind = Kind::kShort;
  expect_rejected(h, "kind 5 (short) in a 64-byte header");
  for (unsigned k = 1; k <= 4; ++k) {
    h.kind = static_cast<Kind>(k);
    h.fragment_length = k == 1 ? 8192 : k == 3 ? sizeof(RendezvousBody) : k == 4 ? 0 : 1;
    h.fragment_offset = 0;
    EXPECT_EQ(check(h), "") << k;
  }
}

TEST(Validate, FlagsAndReservedMustBeZero) {
  MessageHeader h = fragment();
  h.flags = 1;
  expect_rejected(h, "flags 0x00000001 must be 0");
  h.flags = 0x80000000u;
  expect_rejected(h, "flags 0x80000000 must be 0");
  h = fragment();
  h.reserved = 1;
  expect_rejected(h, "reserved 0x00000001 must be 0");
}

TEST(Validate, OnlyARendezvousRequestMayNameCallerMemoryOrAPart) {
  MessageHeader h = fragment();
  h.kind = Kind::kRendezvousRequest;
  h.fragment_offset = 0;
  h.fragment_length = sizeof(RendezvousBody);
  h.flags = kFlagCallerMemory;
  EXPECT_EQ(check(h), "");
  h.flags = kFlagCallerMemory | kFlagSenderHoldsFirst;
  EXPECT_EQ(check(h), "");
  h.flags = kFlagSenderHoldsFirst | 4;
  expect_rejected(h,
                  "flags 0x00000006 must be 0 (reserved) but for bits 0 and 1 (caller memory, "
                  "sender holds first part)");
  h = fragment();
  h.flags = kFlagCallerMemory;
  expect_rejected(h, "flags 0x00000001 must be 0 (reserved)");
  h.flags = kFlagSenderHoldsFirst;
  expect_rejected(h, "flags 0x00000002 must be 0 (reserved)");
}

TEST(Validate, SourceAndDestinationAreRealGids) {
  MessageHeader h = fragment();
  h.source = 0;
  expect_rejected(h, "source 0x0000000000000000 is not a resource gid");
  h.source = kMax64;
  expect_rejected(h, "source 0xffffffffffffffff is not a resource gid");
  h.source = 1;
  EXPECT_EQ(check(h), "");
  h.source = kMax64 - 1;
  EXPECT_EQ(check(h), "");
  h = fragment();
  h.destination = 0;
  expect_rejected(h, "destination 0x0000000000000000 is not a resource gid");
  h.destination = kMax64;
  expect_rejected(h, "destination 0xffffffffffffffff is not a resource gid");
  h.destination = 1;
  EXPECT_EQ(check(h), "");
}

TEST(Validate, TagIsNonNegative) {
  MessageHeader h = fragment();
  h.tag = 0;
  EXPECT_EQ(check(h), "");
  h.tag = ROCL_TAG_MAX;
  EXPECT_EQ(check(h), "");
  h.tag = -1;
  expect_rejected(h, "tag -1 of a fragment frame is negative");
  h.tag = std::numeric_limits<std::int32_t>::min();
  expect_rejected(h, "tag -2147483648");
}

TEST(Validate, TotalLengthLimit) {
  Limits limits;
  limits.max_message_bytes = 1000;
  MessageHeader h = fragment();
  h.fragment_offset = 0;
  h.fragment_length = 10;
  h.total_length = 1000;
  EXPECT_EQ(check(h, limits), "");
  h.total_length = 1001;
  expect_rejected(h, "total_length 1001 exceeds the limit 1000", limits);
  // The default limit: 2^34.
  h.total_length = 1ull << 34;
  EXPECT_EQ(check(h), "");
  h.total_length = (1ull << 34) + 1;
  expect_rejected(h, "total_length 17179869185 exceeds the limit 17179869184");
  h.total_length = kMax64;
  expect_rejected(h, "total_length 18446744073709551615 exceeds");
}

TEST(Validate, FragmentLengthLimit) {
  Limits limits;
  limits.max_fragment_bytes = 512;
  MessageHeader h = fragment();
  h.fragment_offset = 0;
  h.fragment_length = 512;
  EXPECT_EQ(check(h, limits), "");
  h.fragment_length = 513;
  expect_rejected(h, "fragment_length 513 exceeds the limit 512", limits);
  h = fragment();
  h.total_length = 1ull << 30;
  h.fragment_length = 1u << 26;
  EXPECT_EQ(check(h), "");
  h.fragment_length = (1u << 26) + 1;
  expect_rejected(h, "fragment_length 67108865 exceeds the limit 67108864");
}

TEST(Validate, FragmentRangeWithinTotal) {
  MessageHeader h = fragment();  // 4096 + 4096 == 8192: the last fragment
  EXPECT_EQ(check(h), "");
  h.fragment_offset = 4097;
  expect_rejected(h, "fragment_offset 4097 + fragment_length 4096 exceeds total_length 8192");
  h.fragment_offset = 4096;
  h.fragment_length = 4097;
  expect_rejected(h, "fragment_offset 4096 + fragment_length 4097 exceeds total_length 8192");
  h.fragment_offset = 8191;
  h.fragment_length = 1;
  EXPECT_EQ(check(h), "");
  h.fragment_offset = 8192;
  expect_rejected(h, "fragment_offset 8192 + fragment_length 1 exceeds total_length 8192");
}

TEST(Validate, FragmentRangeCannotWrapAround) {
  MessageHeader h = fragment();
  h.total_length = 1ull << 34;
  h.fragment_length = 4096;
  for (std::uint64_t off : {kMax64, kMax64 - 1, kMax64 - 4095, kMax64 - 4096}) {
    h.fragment_offset = off;
    expect_rejected(h, "fragment_offset " + std::to_string(off) + " + fragment_length 4096");
  }
  // Offset just inside a huge (limit-sized) total.
  Limits open;
  open.max_message_bytes = kMax64;
  h.total_length = kMax64;
  h.fragment_offset = kMax64 - 4096;
  EXPECT_EQ(check(h, open), "");
  h.fragment_offset = kMax64 - 4095;
  expect_rejected(h, "exceeds total_length 18446744073709551615", open);
}

TEST(Validate, EagerFrameCarriesTheWholeMessage) {
  MessageHeader h = eager(100);
  h.fragment_offset = 1;
  h.fragment_length = 99;
  expect_rejected(h, "fragment_offset 1 of an eager frame is not 0");
  h = eager(100);
  h.fragment_length = 99;
  expect_rejected(h, "fragment_length 99 of an eager frame differs from total_length 100");
  h = eager(100);
  h.total_length = 101;
  expect_rejected(h, "fragment_length 100 of an eager frame differs from total_length 101");
  // A message longer than any fragment cannot travel eagerly.
  h = eager(0);
  h.total_length = 1ull << 32;
  expect_rejected(h, "fragment_length 0 of an eager frame differs from total_length 4294967296");
}

TEST(Validate, FragmentFrameCarriesBytes) {
  MessageHeader h = fragment();
  h.fragment_length = 1;
  EXPECT_EQ(check(h), "");
  h.fragment_length = 0;
  expect_rejected(h, "fragment_length 0 of a fragment frame carries nothing");
  h.total_length = 0;
  h.fragment_offset = 0;
  expect_rejected(h, "fragment_length 0 of a fragment frame carries nothing");
}

TEST(Validate, LongPeerNamesAreCut) {
  const std::string peer(1000, 'p');
  MessageHeader h = fragment();
  h.magic = 1;
  EXPECT_EQ(validate_header(h, {}, peer), ROCL_EPEER);
  EXPECT_NE(std::string(impl::last_error()).find(std::string(200, 'p') + ": magic"),
            std::string::npos);
}

TEST(ParseHeader, CopiesSixtyFourUnalignedBytes) {
  const MessageHeader want = fragment();
  std::vector<std::byte> bytes(1 + sizeof want + 3);
  std::memcpy(bytes.data() + 1, &want, sizeof want);
  MessageHeader got{};
  ASSERT_TRUE(parse_header(std::span<const std::byte>(bytes).subspan(1), &got));
  EXPECT_EQ(std::memcmp(&got, &want, sizeof want), 0);
  // Field offsets as in docs/protocol.md (little-endian).
  EXPECT_EQ(bytes[1 + 0], std::byte{0x4c});
  EXPECT_EQ(bytes[1 + 1], std::byte{0x52});
  EXPECT_EQ(bytes[1 + 3], std::byte{2});
  EXPECT_EQ(bytes[1 + 40 + 1], std::byte{0x20});  // total_length 8192 = 0x2000
  EXPECT_EQ(bytes[1 + 56 + 1], std::byte{0x10});  // fragment_length 4096
}

TEST(ParseHeader, RejectsShortInput) {
  std::vector<std::byte> bytes(63);
  MessageHeader got{};
  EXPECT_FALSE(parse_header(bytes, &got));
  EXPECT_FALSE(parse_header({}, &got));
  bytes.resize(64);
  EXPECT_TRUE(parse_header(bytes, &got));
  EXPECT_FALSE(parse_header(bytes, nullptr));
}

TEST(DecodeHeader, ParsesAndValidates) {
  MessageHeader h = fragment();
  std::vector<std::byte> bytes(sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  MessageHeader got{};
  EXPECT_EQ(decode_header(bytes, {}, "peer", &got), ROCL_OK);
  EXPECT_EQ(got.message_id, 42u);
  EXPECT_EQ(decode_header(std::span<const std::byte>(bytes).first(10), {}, "peer", &got),
            ROCL_EPEER);
  EXPECT_STREQ(impl::last_error(), "frame from peer: 10 bytes are shorter than the 64-byte header");
  bytes[2] = std::byte{9};
  EXPECT_EQ(decode_header(bytes, {}, "peer", &got), ROCL_EPEER);
  EXPECT_STREQ(impl::last_error(), "frame from peer: version 9 is not supported (expected 1)");
}

ShortHeader short_eager(std::uint32_t length) {
  ShortHeader s{};
  s.magic = kMagic;
  s.version = kVersion;
  s.kind = Kind::kShort;
  s.length = length;
  s.source = 0x0001000000000007;
  s.destination = 0x0002000000000009;
  s.tag = 5;
  s.domain = 3;
  return s;
}

// decode_frame_header of a ShortHeader's bytes (plus `extra` trailing ones):
// the sentence of a rejection, "" when accepted (*out, *size filled).
std::string decode_short(const ShortHeader &s, const Limits &limits = {},
                         MessageHeader *out = nullptr, std::size_t *size = nullptr,
                         std::size_t extra = 0) {
  std::vector<std::byte> bytes(sizeof s + extra, std::byte{0x5a});
  std::memcpy(bytes.data(), &s, sizeof s);
  MessageHeader h{};
  std::size_t n = 0;
  impl::clear_error();
  const int rc = decode_frame_header(bytes, limits, "shm slot 3", &h, &n);
  if (out != nullptr) *out = h;
  if (size != nullptr) *size = n;
  if (rc == ROCL_OK) return "";
  EXPECT_EQ(rc, ROCL_EPEER);
  return impl::last_error();
}

TEST(DecodeFrameHeader, ShortHeaderIsAnEagerMessage) {
  MessageHeader h;
  std::size_t size = 0;
  ASSERT_EQ(decode_short(short_eager(24), {}, &h, &size, 24), "");
  EXPECT_EQ(size, 32u);
  EXPECT_EQ(h.kind, Kind::kEager);
  EXPECT_EQ(h.total_length, 24u);
  EXPECT_EQ(h.fragment_length, 24u);
  EXPECT_EQ(h.fragment_offset, 0u);
  EXPECT_EQ(h.source, 0x0001000000000007u);
  EXPECT_EQ(h.destination, 0x0002000000000009u);
  EXPECT_EQ(h.tag, 5);
  EXPECT_EQ(h.domain, 3u);
  EXPECT_EQ(check(h), "");  // what it stands for passes the 64-byte rules too
  ASSERT_EQ(decode_short(short_eager(0), {}, &h, &size), "");
  EXPECT_EQ(h.total_length, 0u);
}

TEST(DecodeFrameHeader, ShortHeaderRules) {
  auto bad = [](ShortHeader s, const std::string &words, const Limits &limits = {}) {
    const std::string why = decode_short(s, limits);
    EXPECT_NE(why.find("frame from shm slot 3: " + words), std::string::npos) << why;
  };
  ShortHeader s = short_eager(8);
  s.magic = 0x1234;
  bad(s, "magic 0x1234 is not 0x524c");
  s = short_eager(8);
  s.version = 2;
  bad(s, "version 2 is not supported");
  s = short_eager(8);
  s.source = 0;
  bad(s, "source 0x0000000000000000 is not a resource gid");
  s = short_eager(8);
  s.destination = kMax64;
  bad(s, "destination 0xffffffffffffffff is not a resource gid");
  s = short_eager(8);
  s.tag = -1;
  bad(s, "tag -1 of a short frame is negative");
  bad(short_eager(4097), "length 4097 of a short frame exceeds the limit 4096",
      Limits{.max_message_bytes = 1u << 20, .max_fragment_bytes = 4096});
  EXPECT_EQ(decode_short(short_eager(4096),
                         Limits{.max_message_bytes = 1u << 20, .max_fragment_bytes = 4096}),
            "");
}

// A wrap frame (shm): magic, version, kind 6 and nothing else; each rule
// broken is named.
TEST(CheckWrapHeader, AcceptsOnlyAnEmptyWrapHeader) {
  ShortHeader w{};
  w.magic = kMagic;
  w.version = kVersion;
  w.kind = Kind::kWrap;
  auto why = [](const ShortHeader &h) {
    std::byte bytes[sizeof h];
    std::memcpy(bytes, &h, sizeof h);
    return check_wrap_header(bytes, "shm slot 3") == ROCL_OK ? std::string()
                                                             : std::string(impl::last_error());
  };
  EXPECT_EQ(why(w), "");
  EXPECT_STREQ(kind_name(Kind::kWrap), "wrap");
  ShortHeader h = w;
  h.magic = 0x1234;
  EXPECT_NE(why(h).find("frame from shm slot 3: magic 0x1234 is not 0x524c"), std::string::npos);
  h = w;
  h.kind = Kind::kShort;
  EXPECT_NE(why(h).find("kind 5 is not 6 (wrap)"), std::string::npos) << why(h);
  h = w;
  h.length = 8;
  EXPECT_NE(why(h).find("a wrap frame with length 8"), std::string::npos) << why(h);
  h = w;
  h.source = 7;
  EXPECT_NE(why(h).find("source 0x7"), std::string::npos) << why(h);
  h = w;
  h.tag = 1;
  EXPECT_NE(why(h).find("(all must be 0)"), std::string::npos) << why(h);
}

TEST(DecodeFrameHeader, TooFewBytesForEitherHeader) {
  const ShortHeader s = short_eager(8);
  std::vector<std::byte> bytes(sizeof s);
  std::memcpy(bytes.data(), &s, sizeof s);
  MessageHeader h;
  std::size_t n = 0;
  EXPECT_EQ(decode_frame_header(std::span<const std::byte>(bytes).first(31), {}, "p", &h, &n),
            ROCL_EPEER);
  EXPECT_STREQ(impl::last_error(), "frame from p: 31 bytes are shorter than the 32-byte header");
  // 32 bytes of a 64-byte header are too few.
  const MessageHeader f = fragment();
  std::memcpy(bytes.data(), &f, sizeof s);
  EXPECT_EQ(decode_frame_header(bytes, {}, "p", &h, &n), ROCL_EPEER);
  EXPECT_STREQ(impl::last_error(), "frame from p: 32 bytes are shorter than the 64-byte header");
  EXPECT_EQ(decode_frame_header({}, {}, "p", &h, &n), ROCL_EPEER);
}

TEST(DecodeFrameHeader, LongHeaderIsDecodedAsBefore) {
  const MessageHeader f = fragment();
  std::vector<std::byte> bytes(sizeof f);
  std::memcpy(bytes.data(), &f, sizeof f);
  MessageHeader h;
  std::size_t n = 0;
  ASSERT_EQ(decode_frame_header(bytes, {}, "p", &h, &n), ROCL_OK);
  EXPECT_EQ(n, 64u);
  EXPECT_EQ(std::memcmp(&h, &f, sizeof f), 0);
}

}  // namespace
}  // namespace rocl::wire
