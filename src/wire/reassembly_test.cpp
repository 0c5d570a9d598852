// reassembly_test.cpp - Reassembly (order, duplicates, overlaps, bounds,
// overflow attempts) and ReassemblyTable (keys, consistency, limits, take,
// drop_peer).
#include "wire/reassembly.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "status/status.hpp"
#include "wire/validate.hpp"

namespace rocl::wire {
namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();

std::vector<std::byte> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::byte>((i * 131 + seed * 7) & 0xff);
  }
  return v;
}

MessageHeader frag(std::uint64_t total, std::uint64_t off, std::uint32_t len,
                   std::uint64_t id = 42) {
  MessageHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.kind = Kind::kFragment;
  h.source = 0x0001000000000007;
  h.destination = 0x0002000000000009;
  h.tag = 5;
  h.domain = 3;
  h.message_id = id;
  h.total_length = total;
  h.fragment_offset = off;
  h.fragment_length = len;
  return h;
}

std::span<const std::byte> slice(const std::vector<std::byte> &v, std::uint64_t off,
                                 std::uint32_t len) {
  return std::span<const std::byte>(v).subspan(off, len);
}

std::string why() {
  return impl::last_error();
}

#define EXPECT_WHY(words) \
  EXPECT_NE(why().find(words), std::string::npos) << "got: \"" << why() << "\"";

TEST(Reassembly, ZeroLengthMessageIsCompleteAtOnce) {
  Reassembly r(0, {});
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.received(), 0u);
  std::byte b{};
  EXPECT_EQ(r.add(frag(0, 0, 1), std::span<const std::byte>(&b, 1), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_offset 0 + fragment_length 1 exceeds total_length 0");
  EXPECT_EQ(r.add(frag(0, 0, 0), {}, "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_length 0 carries nothing");
  EXPECT_TRUE(r.complete());
}

TEST(Reassembly, FragmentsInRandomOrderRebuildTheMessage) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 50; ++round) {
    const std::uint64_t total = 1 + rng() % 5000;
    const auto src = pattern(total, round);
    // Cut into random pieces.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> pieces;
    for (std::uint64_t off = 0; off < total;) {
      const std::uint32_t len =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(1 + rng() % 700, total - off));
      pieces.emplace_back(off, len);
      off += len;
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    std::vector<std::byte> dst(total);
    Reassembly r(total, dst);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      auto [off, len] = pieces[i];
      EXPECT_FALSE(r.complete());
      ASSERT_EQ(r.add(frag(total, off, len), slice(src, off, len), "p"), ROCL_OK) << why();
      sum += len;
      EXPECT_EQ(r.received(), sum);
      EXPECT_LE(r.ranges(), pieces.size());
    }
    EXPECT_TRUE(r.complete());
    EXPECT_EQ(r.ranges(), 1u);  // adjacent ranges merge
    EXPECT_EQ(dst, src);
  }
}

TEST(Reassembly, DuplicatesAndOverlapsAreRejectedAndChangeNothing) {
  const auto src = pattern(100);
  std::vector<std::byte> dst(100, std::byte{0xee});
  Reassembly r(100, dst);
  ASSERT_EQ(r.add(frag(100, 20, 10), slice(src, 20, 10), "peer-a"), ROCL_OK);
  ASSERT_EQ(r.add(frag(100, 50, 10), slice(src, 50, 10), "peer-a"), ROCL_OK);
  const auto before = dst;
  const auto junk = pattern(100, 99);
  struct Case {
    std::uint64_t off;
    std::uint32_t len;
  };
  // Duplicate, inside, covering, straddling either end, spanning two ranges.
  for (Case c : {Case{20, 10}, Case{22, 3}, Case{15, 20}, Case{15, 6}, Case{29, 2}, Case{25, 30},
                 Case{59, 1}, Case{0, 100}}) {
    impl::clear_error();
    EXPECT_EQ(r.add(frag(100, c.off, c.len), slice(junk, c.off, c.len), "peer-a"), ROCL_EPEER)
        << c.off << "+" << c.len;
    EXPECT_WHY("frame from peer-a: fragment_offset " + std::to_string(c.off) +
               " + fragment_length " + std::to_string(c.len) + " overlaps bytes [");
    EXPECT_WHY("already received of message_id 42");
  }
  EXPECT_EQ(dst, before);
  EXPECT_EQ(r.received(), 20u);
  EXPECT_EQ(r.ranges(), 2u);
  // Exactly adjacent on both sides is fine and joins the ranges.
  ASSERT_EQ(r.add(frag(100, 30, 20), slice(src, 30, 20), "peer-a"), ROCL_OK) << why();
  EXPECT_EQ(r.ranges(), 1u);
  ASSERT_EQ(r.add(frag(100, 19, 1), slice(src, 19, 1), "peer-a"), ROCL_OK) << why();
  ASSERT_EQ(r.add(frag(100, 60, 1), slice(src, 60, 1), "peer-a"), ROCL_OK) << why();
  EXPECT_EQ(r.ranges(), 1u);
  EXPECT_EQ(r.received(), 42u);
}

TEST(Reassembly, RangeMustStayInsideTheMessage) {
  const auto src = pattern(64);
  std::vector<std::byte> dst(64);
  Reassembly r(64, dst);
  EXPECT_EQ(r.add(frag(64, 63, 1), slice(src, 63, 1), "p"), ROCL_OK);  // last byte
  EXPECT_EQ(r.add(frag(64, 64, 1), slice(src, 0, 1), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_offset 64 + fragment_length 1 exceeds total_length 64");
  EXPECT_EQ(r.add(frag(64, 60, 5), slice(src, 0, 5), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_offset 60 + fragment_length 5 exceeds total_length 64");
  // Overflow attempts: offset + length would wrap around 2^64.
  for (std::uint64_t off : {kMax64, kMax64 - 1, kMax64 - 2}) {
    EXPECT_EQ(r.add(frag(64, off, 4), slice(src, 0, 4), "p"), ROCL_EPEER);
    EXPECT_WHY("fragment_offset " + std::to_string(off) + " + fragment_length 4 exceeds");
  }
  EXPECT_EQ(r.received(), 1u);
}

TEST(Reassembly, OverflowAttemptAgainstAHugeTotal) {
  // A header that claims 2^64-1 bytes; the buffer is small, and no check may
  // wrap around.
  std::vector<std::byte> dst(16);
  Reassembly r(kMax64, dst);
  const auto src = pattern(16);
  EXPECT_EQ(r.add(frag(kMax64, kMax64 - 1, 2), slice(src, 0, 2), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_offset 18446744073709551614 + fragment_length 2 exceeds total_length");
  EXPECT_EQ(r.add(frag(kMax64, kMax64 - 1, 1), slice(src, 0, 1), "p"), ROCL_EINTERNAL);
  EXPECT_WHY("destination of 16 bytes is shorter than total_length");
  EXPECT_EQ(r.add(frag(kMax64, 0, 16), slice(src, 0, 16), "p"), ROCL_OK);
  EXPECT_EQ(r.received(), 16u);
}

TEST(Reassembly, PayloadMustMatchHeaderAndTotal) {
  const auto src = pattern(64);
  std::vector<std::byte> dst(64);
  Reassembly r(64, dst);
  EXPECT_EQ(r.add(frag(64, 0, 8), slice(src, 0, 7), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_length 8 but 7 payload bytes arrived");
  EXPECT_EQ(r.add(frag(65, 0, 8), slice(src, 0, 8), "p"), ROCL_EPEER);
  EXPECT_WHY("total_length 65 differs from 64");
  EXPECT_EQ(r.add(frag(64, 0, 0), {}, "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_length 0 carries nothing");
  EXPECT_EQ(r.received(), 0u);
}

TEST(Reassembly, DisjointRangeLimit) {
  const auto src = pattern(100);
  std::vector<std::byte> dst(100);
  Reassembly r(100, dst, 3);
  EXPECT_EQ(r.add(frag(100, 0, 1), slice(src, 0, 1), "p"), ROCL_OK);
  EXPECT_EQ(r.add(frag(100, 10, 1), slice(src, 10, 1), "p"), ROCL_OK);
  EXPECT_EQ(r.add(frag(100, 20, 1), slice(src, 20, 1), "p"), ROCL_OK);
  EXPECT_EQ(r.add(frag(100, 30, 1), slice(src, 30, 1), "p"), ROCL_EPEER);
  EXPECT_WHY("fragment_offset 30 + fragment_length 1 would be disjoint range 4");
  // Extending an existing range is still fine, and so is filling a gap.
  EXPECT_EQ(r.add(frag(100, 21, 9), slice(src, 21, 9), "p"), ROCL_OK);
  EXPECT_EQ(r.add(frag(100, 1, 9), slice(src, 1, 9), "p"), ROCL_OK);
  EXPECT_EQ(r.ranges(), 2u);
  EXPECT_EQ(r.add(frag(100, 40, 1), slice(src, 40, 1), "p"), ROCL_OK);
}

// ---- ReassemblyTable -------------------------------------------------------

constexpr std::uint64_t kCtxA = 0x0001000000000001;
constexpr std::uint64_t kCtxB = 0x0001000000000002;

TEST(ReassemblyTable, RebuildsInterleavedMessagesAndTakesThem) {
  ReassemblyTable t;
  const auto a = pattern(300, 1);
  const auto b = pattern(200, 2);
  EXPECT_EQ(t.add(kCtxA, frag(300, 100, 200, 1), slice(a, 100, 200), "A"), ROCL_OK);
  // Same message_id from another context is another message.
  EXPECT_EQ(t.add(kCtxB, frag(200, 0, 100, 1), slice(b, 0, 100), "B"), ROCL_OK);
  EXPECT_EQ(t.open_messages(), 2u);
  EXPECT_EQ(t.open_bytes(), 500u);
  ReassembledMessage m;
  EXPECT_EQ(t.take(kCtxA, 1, &m), ROCL_EBUSY);
  EXPECT_WHY("has 200 of 300 bytes");
  EXPECT_EQ(t.take(kCtxA, 2, &m), ROCL_ENOTFOUND);
  EXPECT_EQ(t.add(kCtxA, frag(300, 0, 100, 1), slice(a, 0, 100), "A"), kMessageComplete);
  ASSERT_NE(t.find(kCtxA, 1), nullptr);
  EXPECT_TRUE(t.find(kCtxA, 1)->complete());
  // A fragment after completion is refused.
  EXPECT_EQ(t.add(kCtxA, frag(300, 0, 1, 1), slice(a, 0, 1), "A"), ROCL_EPEER);
  EXPECT_WHY("which is complete already");
  ASSERT_EQ(t.take(kCtxA, 1, &m), ROCL_OK);
  EXPECT_EQ(m.length, 300u);
  EXPECT_EQ(m.header.message_id, 1u);
  EXPECT_EQ(std::vector<std::byte>(m.data.get(), m.data.get() + m.length), a);
  EXPECT_EQ(t.find(kCtxA, 1), nullptr);
  EXPECT_EQ(t.open_messages(), 1u);
  EXPECT_EQ(t.open_bytes(), 200u);
  EXPECT_EQ(t.add(kCtxB, frag(200, 100, 100, 1), slice(b, 100, 100), "B"), kMessageComplete);
  ASSERT_EQ(t.take(kCtxB, 1, &m), ROCL_OK);
  EXPECT_EQ(std::vector<std::byte>(m.data.get(), m.data.get() + m.length), b);
  EXPECT_EQ(t.open_bytes(), 0u);
}

TEST(ReassemblyTable, SingleFragmentMessageCompletesAtOnce) {
  ReassemblyTable t;
  const auto a = pattern(10);
  EXPECT_EQ(t.add(kCtxA, frag(10, 0, 10, 9), slice(a, 0, 10), "A"), kMessageComplete);
}

TEST(ReassemblyTable, FragmentsMustAgreeWithTheFirst) {
  ReassemblyTable t;
  const auto a = pattern(100);
  ASSERT_EQ(t.add(kCtxA, frag(100, 0, 10), slice(a, 0, 10), "A"), ROCL_OK);
  MessageHeader h = frag(100, 10, 10);
  h.source = 0x0001000000000099;
  EXPECT_EQ(t.add(kCtxA, h, slice(a, 10, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("source 0x0001000000000099 differs from 0x0001000000000007");
  h = frag(100, 10, 10);
  h.destination = 5;
  EXPECT_EQ(t.add(kCtxA, h, slice(a, 10, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("destination 0x0000000000000005 differs");
  h = frag(100, 10, 10);
  h.tag = 6;
  EXPECT_EQ(t.add(kCtxA, h, slice(a, 10, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("tag 6 differs from 5");
  h = frag(100, 10, 10);
  h.domain = 4;
  EXPECT_EQ(t.add(kCtxA, h, slice(a, 10, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("domain 4 differs from 3");
  EXPECT_EQ(t.add(kCtxA, frag(101, 10, 10), slice(a, 10, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("total_length 101 differs from 100");
  EXPECT_EQ(t.add(kCtxA, frag(100, 5, 10), slice(a, 5, 10), "A"), ROCL_EPEER);
  EXPECT_WHY("overlaps bytes [0, 10)");
  EXPECT_EQ(t.find(kCtxA, 42)->received(), 10u);
}

TEST(ReassemblyTable, OnlyFragmentFrames) {
  ReassemblyTable t;
  MessageHeader h = frag(10, 0, 10);
  h.kind = Kind::kEager;
  const auto a = pattern(10);
  EXPECT_EQ(t.add(kCtxA, h, slice(a, 0, 10), "A"), ROCL_EINVAL);
  EXPECT_EQ(t.open_messages(), 0u);
}

TEST(ReassemblyTable, RejectedFirstFragmentOpensNothing) {
  ReassemblyTable t;
  const auto a = pattern(10);
  EXPECT_EQ(t.add(kCtxA, frag(10, 5, 10), slice(a, 0, 10), "A"), ROCL_EPEER);
  EXPECT_EQ(t.open_messages(), 0u);
  EXPECT_EQ(t.open_bytes(), 0u);
}

TEST(ReassemblyTable, OpenMessageLimit) {
  TableLimits limits;
  limits.max_open_messages = 3;
  ReassemblyTable t(limits);
  const auto a = pattern(10);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(t.add(kCtxA, frag(10, 0, 5, id), slice(a, 0, 5), "A"), ROCL_OK);
  }
  EXPECT_EQ(t.add(kCtxB, frag(10, 0, 5, 4), slice(a, 0, 5), "B"), ROCL_ENOMEM);
  EXPECT_WHY("frame from B: message_id 4 would be open message 4, over the limit 3");
  // Open messages still take fragments.
  EXPECT_EQ(t.add(kCtxA, frag(10, 5, 5, 2), slice(a, 5, 5), "A"), kMessageComplete);
  ReassembledMessage m;
  ASSERT_EQ(t.take(kCtxA, 2, &m), ROCL_OK);
  EXPECT_EQ(t.add(kCtxB, frag(10, 0, 5, 4), slice(a, 0, 5), "B"), ROCL_OK);
}

TEST(ReassemblyTable, OpenBytesLimit) {
  TableLimits limits;
  limits.max_open_bytes = 1000;
  ReassemblyTable t(limits);
  const auto a = pattern(1000);
  EXPECT_EQ(t.add(kCtxA, frag(600, 0, 1, 1), slice(a, 0, 1), "A"), ROCL_OK);
  EXPECT_EQ(t.add(kCtxA, frag(401, 0, 1, 2), slice(a, 0, 1), "A"), ROCL_ENOMEM);
  EXPECT_WHY(
      "total_length 401 of message_id 2 would raise open reassembly bytes from 600 over "
      "the limit 1000");
  EXPECT_EQ(t.add(kCtxA, frag(400, 0, 1, 2), slice(a, 0, 1), "A"), ROCL_OK);  // exactly 1000
  EXPECT_EQ(t.open_bytes(), 1000u);
  EXPECT_EQ(t.add(kCtxB, frag(1, 0, 1, 3), slice(a, 0, 1), "B"), ROCL_ENOMEM);
  EXPECT_EQ(t.add(kCtxB, frag(kMax64, 0, 1, 3), slice(a, 0, 1), "B"), ROCL_ENOMEM);
  EXPECT_EQ(t.drop_peer(kCtxA), 2u);
  EXPECT_EQ(t.open_bytes(), 0u);
  EXPECT_EQ(t.add(kCtxB, frag(1000, 0, 1, 3), slice(a, 0, 1), "B"), ROCL_OK);
}

TEST(ReassemblyTable, DropPeerDiscardsOnlyThatPeer) {
  ReassemblyTable t;
  const auto a = pattern(10);
  for (std::uint64_t id : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, kMax64}) {
    EXPECT_EQ(t.add(kCtxA, frag(10, 0, 5, id), slice(a, 0, 5), "A"), ROCL_OK);
    EXPECT_EQ(t.add(kCtxB, frag(10, 0, 5, id), slice(a, 0, 5), "B"), ROCL_OK);
  }
  EXPECT_EQ(t.add(kCtxA - 1, frag(10, 0, 5, 3), slice(a, 0, 5), "A-"), ROCL_OK);
  EXPECT_EQ(t.drop_peer(kCtxA), 4u);
  EXPECT_EQ(t.drop_peer(kCtxA), 0u);
  EXPECT_EQ(t.open_messages(), 5u);
  EXPECT_EQ(t.open_bytes(), 50u);
  EXPECT_EQ(t.find(kCtxA, 1), nullptr);
  EXPECT_NE(t.find(kCtxB, 1), nullptr);
  EXPECT_NE(t.find(kCtxA - 1, 3), nullptr);
  // A later fragment of a dropped message opens it afresh.
  EXPECT_EQ(t.add(kCtxA, frag(10, 5, 5, 1), slice(a, 5, 5), "A"), ROCL_OK);
  EXPECT_EQ(t.find(kCtxA, 1)->received(), 5u);
}

TEST(ReassemblyTable, ValidatedFramesEndToEnd) {
  // Frames cut from one buffer, checked by validate_header, reassembled.
  ReassemblyTable t;
  const auto msg = pattern(10000, 3);
  std::vector<MessageHeader> frames;
  for (std::uint64_t off = 0; off < msg.size(); off += 1024) {
    frames.push_back(
        frag(msg.size(), off,
             static_cast<std::uint32_t>(std::min<std::uint64_t>(1024, msg.size() - off)), 77));
  }
  std::mt19937 rng(7);
  std::shuffle(frames.begin(), frames.end(), rng);
  int rc = ROCL_OK;
  for (const MessageHeader &h : frames) {
    ASSERT_EQ(validate_header(h, {}, "A"), ROCL_OK) << why();
    rc = t.add(kCtxA, h, slice(msg, h.fragment_offset, h.fragment_length), "A");
    ASSERT_GE(rc, 0) << why();
  }
  EXPECT_EQ(rc, kMessageComplete);
  ReassembledMessage m;
  ASSERT_EQ(t.take(kCtxA, 77, &m), ROCL_OK);
  EXPECT_EQ(std::vector<std::byte>(m.data.get(), m.data.get() + m.length), msg);
}

}  // namespace
}  // namespace rocl::wire
