// stripe_reassembly_test.cpp - the receiving side of striped messages
// (stripe_reassembly.hpp): fragments in any order make one message, a
// pair's messages leave in the order they were sent, repeats and bad
// fragments are dropped and said, and nothing is left in the pool.
#include "core/stripe_reassembly.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace rocl::impl {
namespace {

constexpr std::uint32_t kFragment = FragmentHeader::kMinFragmentBytes;
constexpr rocl_gid_t kSource = 0x1001, kDestination = 0x2002;

struct Delivered {
  rocl_gid_t destination;
  CoreHeader header;
  std::vector<std::byte> bytes;
};

class StripeReassemblyTest : public ::testing::Test {
 protected:
  StripeReassemblyTest()
      : stripes_(std::make_unique<StripeReassembly>(
            pool_,
            [this](rocl_gid_t d, Message *m) {
              if (refuse_) return ROCL_EBADGID;
              const auto *p = static_cast<const std::byte *>(m->data);
              delivered_.push_back(Delivered{d, m->header, {p, p + m->length}});
              BlockHeader *b = block_of(m);
              end_message(b);
              pool_.release(b, BlockState::kLibrary);
              return ROCL_OK;
            },
            [this](const std::string &line) { log_.push_back(line); })) {}

  ~StripeReassemblyTest() override {
    stripes_.reset();
    EXPECT_EQ(pool_.stats().in_use_buffers, 0u);
  }

  // A message block as a transport hands it over.
  Message *message(const CoreHeader &header, const void *bytes, std::size_t n) {
    BlockHeader *b = pool_.allocate(n);
    std::memcpy(payload_of(b), bytes, n);
    Message *m = message_in(b);
    m->header = header;
    m->data = payload_of(b);
    m->length = n;
    b->state.store(BlockState::kLibrary);
    return m;
  }
  // Fragment `index` of message `id` (total bytes, each byte its offset's low bits + id).
  Message *fragment(std::uint64_t id, std::uint64_t total, std::uint64_t index, int tag = 7) {
    FragmentHeader h;
    h.fragment_bytes = kFragment;
    h.destination = kDestination;
    h.header = CoreHeader{kSource, tag, 3};
    h.message_id = id;
    h.offset = index * kFragment;
    h.total = total;
    const std::size_t n = std::min<std::uint64_t>(kFragment, total - h.offset);
    std::vector<std::byte> bytes(sizeof h + n);
    std::memcpy(bytes.data(), &h, sizeof h);
    for (std::size_t k = 0; k < n; ++k) bytes[sizeof h + k] = pattern(id, h.offset + k);
    return message(CoreHeader{kSource, 0, 0}, bytes.data(), bytes.size());
  }
  static std::byte pattern(std::uint64_t id, std::uint64_t offset) {
    return static_cast<std::byte>((offset * 7 + id) & 0xff);
  }
  void expect_whole(const Delivered &d, std::uint64_t id, std::uint64_t total, int tag) {
    EXPECT_EQ(d.destination, kDestination);
    EXPECT_EQ(d.header.source, kSource);
    EXPECT_EQ(d.header.tag, tag);
    ASSERT_EQ(d.bytes.size(), total);
    for (std::uint64_t k = 0; k < total; ++k) {
      if (d.bytes[k] != pattern(id, k)) FAIL() << "byte " << k << " of message " << id;
    }
  }

  BufferPool pool_{PoolConfig{}};
  bool refuse_ = false;
  std::vector<Delivered> delivered_;
  std::vector<std::string> log_;
  std::unique_ptr<StripeReassembly> stripes_;
};

TEST_F(StripeReassemblyTest, FragmentsInAnyOrderMakeOneMessage) {
  const std::uint64_t total = 3 * kFragment + 100;
  for (std::uint64_t index : {2, 3, 0}) stripes_->take_fragment(fragment(1, total, index));
  EXPECT_TRUE(delivered_.empty());
  EXPECT_EQ(stripes_->in_progress(), 1u);
  stripes_->take_fragment(fragment(1, total, 1));
  ASSERT_EQ(delivered_.size(), 1u);
  expect_whole(delivered_[0], 1, total, 7);
  EXPECT_FALSE(stripes_->holding());
  EXPECT_EQ(stripes_->counts().messages, 1u);
  EXPECT_EQ(stripes_->counts().fragments, 4u);
}

// A message of the pair that arrives on the primary rail after a head was
// sent after that striped message: it waits behind it, and behind the
// next striped one if that one's head came before it.
TEST_F(StripeReassemblyTest, APairsMessagesLeaveInTheOrderSent) {
  const std::uint64_t total = 2 * kFragment;
  const char small[] = "after";
  Message *other_pair = message(CoreHeader{kSource + 1, 9, 3}, small, sizeof small);
  stripes_->take_fragment(fragment(1, total, 0, 11));  // head of message 1
  EXPECT_TRUE(stripes_->holding());
  EXPECT_TRUE(stripes_->holds(kSource, kDestination));
  Message *held = message(CoreHeader{kSource, 12, 3}, small, sizeof small);
  ASSERT_TRUE(stripes_->hold(kDestination, held));
  // Another source's message is not held.
  EXPECT_FALSE(stripes_->hold(kDestination, other_pair));
  stripes_->take_fragment(fragment(2, total, 1, 13));  // message 2's tail, before its head
  stripes_->take_fragment(fragment(2, total, 0, 13));  // complete, but behind message 1
  EXPECT_TRUE(delivered_.empty());
  stripes_->take_fragment(fragment(1, total, 1, 11));
  ASSERT_EQ(delivered_.size(), 3u);
  expect_whole(delivered_[0], 1, total, 11);
  EXPECT_EQ(delivered_[1].header.tag, 12);
  expect_whole(delivered_[2], 2, total, 13);
  EXPECT_FALSE(stripes_->holding());
  EXPECT_EQ(stripes_->counts().held, 1u);
  BlockHeader *b = block_of(other_pair);
  end_message(b);
  pool_.release(b, BlockState::kLibrary);
}

TEST_F(StripeReassemblyTest, RepeatsAreDroppedQuietlyBadFragmentsSaid) {
  const std::uint64_t total = 2 * kFragment;
  stripes_->take_fragment(fragment(1, total, 0));
  stripes_->take_fragment(fragment(1, total, 0));  // a repeat (a resend's)
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(stripes_->counts().repeats, 1u);
  // Bad headers, each named.
  const char junk[] = "not a fragment at all, just some bytes that are long enough to parse!";
  stripes_->take_fragment(message(CoreHeader{kSource, 0, 0}, junk, sizeof junk));
  EXPECT_NE(log_.back().find("bad magic"), std::string::npos) << log_.back();
  stripes_->take_fragment(message(CoreHeader{kSource, 0, 0}, junk, 8));
  EXPECT_NE(log_.back().find("shorter"), std::string::npos) << log_.back();
  Message *wrong = fragment(1, total, 1);
  FragmentHeader h;
  std::memcpy(&h, wrong->data, sizeof h);
  h.offset = 5;  // not at a fragment's start
  std::memcpy(wrong->data, &h, sizeof h);
  stripes_->take_fragment(wrong);
  EXPECT_NE(log_.back().find("offset"), std::string::npos) << log_.back();
  EXPECT_TRUE(delivered_.empty());
  stripes_->take_fragment(fragment(1, total, 1));
  ASSERT_EQ(delivered_.size(), 1u);
  expect_whole(delivered_[0], 1, total, 7);
  EXPECT_EQ(stripes_->counts().dropped, 3u);
}

// A fragment cut at another size than its message's first would overlap
// or leave a gap; it is refused by name and the message still completes.
TEST_F(StripeReassemblyTest, AFragmentCutAtAnotherSizeIsRefused) {
  const std::uint64_t total = 4 * kFragment;
  stripes_->take_fragment(fragment(1, total, 0));
  FragmentHeader h;
  h.fragment_bytes = 2 * kFragment;
  h.destination = kDestination;
  h.header = CoreHeader{kSource, 7, 3};
  h.message_id = 1;
  h.offset = 2 * kFragment;  // index 1 at twice the size: the message's second half
  h.total = total;
  std::vector<std::byte> bytes(sizeof h + h.fragment_bytes);
  std::memcpy(bytes.data(), &h, sizeof h);
  stripes_->take_fragment(message(CoreHeader{kSource, 0, 0}, bytes.data(), bytes.size()));
  ASSERT_FALSE(log_.empty());
  EXPECT_NE(log_.back().find("does not match"), std::string::npos) << log_.back();
  EXPECT_EQ(stripes_->counts().dropped, 1u);
  for (std::uint64_t index : {1, 2, 3}) {
    EXPECT_TRUE(delivered_.empty());
    stripes_->take_fragment(fragment(1, total, index));
  }
  ASSERT_EQ(delivered_.size(), 1u);
  expect_whole(delivered_[0], 1, total, 7);
}

// Whole messages are acknowledged to their sender, and again for every
// fragment a resend brings after; the message is delivered once.
TEST_F(StripeReassemblyTest, AWholeMessageIsAckedAndAResendOnlyAckedAgain) {
  std::vector<std::pair<rocl_gid_t, std::uint64_t>> acks;
  stripes_ = std::make_unique<StripeReassembly>(
      pool_,
      [this](rocl_gid_t d, Message *m) {
        delivered_.push_back(Delivered{d, m->header, {}});
        BlockHeader *b = block_of(m);
        end_message(b);
        pool_.release(b, BlockState::kLibrary);
        return ROCL_OK;
      },
      [this](const std::string &line) { log_.push_back(line); },
      [&acks](rocl_gid_t source, std::uint64_t id) { acks.emplace_back(source, id); });
  const std::uint64_t total = 2 * kFragment;
  stripes_->take_fragment(fragment(5, total, 0));
  EXPECT_TRUE(acks.empty());
  stripes_->take_fragment(fragment(5, total, 1));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0], std::make_pair(kSource, std::uint64_t{5}));
  for (std::uint64_t index : {0, 1}) stripes_->take_fragment(fragment(5, total, index));
  EXPECT_EQ(acks.size(), 3u);
  EXPECT_EQ(delivered_.size(), 1u);
  EXPECT_EQ(stripes_->in_progress(), 0u);
  EXPECT_TRUE(log_.empty());
}

TEST_F(StripeReassemblyTest, AMessageItsResourceRefusesIsDroppedAndSaid) {
  refuse_ = true;
  const std::uint64_t total = 2 * kFragment;
  stripes_->take_fragment(fragment(1, total, 0));
  stripes_->take_fragment(fragment(1, total, 1));
  EXPECT_TRUE(delivered_.empty());
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("unknown resource"), std::string::npos) << log_[0];
}

TEST_F(StripeReassemblyTest, WhatIsIncompleteGoesBackToThePoolAtTheEnd) {
  stripes_->take_fragment(fragment(1, 4 * kFragment, 0));
  const char small[] = "held";
  ASSERT_TRUE(stripes_->hold(kDestination, message(CoreHeader{kSource, 1, 3}, small, 4)));
  EXPECT_GT(pool_.stats().in_use_buffers, 0u);
  stripes_.reset();
  EXPECT_EQ(pool_.stats().in_use_buffers, 0u);
}

}  // namespace
}  // namespace rocl::impl
