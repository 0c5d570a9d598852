// transport_conformance_test.cpp - the Transport interface's contract,
// checked on every transport in the registration table (a transport added
// to ROCL_TRANSPORT_LIST is tested here with no change to this file): its
// row, addresses and reach, messages of every size intact and in order,
// send_bytes, a refused destination (logged, counted, nothing lost
// besides it), flush, and each capability it declares: rendezvous stubs
// pulled, discarded and pulled into caller memory, takes at an input's
// front, lent memory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "transport/transport.hpp"
#include "transport/transport_test_util.hpp"

namespace rocl::impl {
namespace {

using namespace std::chrono_literals;
using transport_test::checksum;
using transport_test::make_message;
using transport_test::RecordingSink;

constexpr rocl_gid_t kDestination = 21;
constexpr rocl_gid_t kRefused = 404;  // RecordingSink refuses it
constexpr rocl_gid_t kSource = 11;

// One end-point: a pool, a recording sink and the transport.
struct End {
  End(const TransportEntry &entry, std::uint64_t instance, const JobSecret *secret,
      std::size_t rendezvous_threshold)
      : pool(PoolConfig{std::size_t{1} << 30, std::size_t{2} << 20}) {
    sink.pool = &pool;
    TransportEnv env{&sink, instance, &pool, secret};
    env.rendezvous_threshold = rendezvous_threshold;
    t = entry.make(env);
  }
  BufferPool pool;
  RecordingSink sink;
  std::unique_ptr<Transport> t;
};

struct Conformance : ::testing::TestWithParam<const TransportEntry *> {
  // A pair of end-points: b receives what a sends (for an in-process
  // transport, which reaches only itself, b is a).
  void make_pair(std::size_t rendezvous_threshold = 0) {
    const TransportEntry &entry = *GetParam();
    a = std::make_unique<End>(entry, 1, &secret, rendezvous_threshold);
    ASSERT_NE(a->t, nullptr) << last_error();
    if (entry.reach == Reach::kProcess) {
      b = a.get();
    } else {
      owned_b = std::make_unique<End>(entry, 2, &secret, rendezvous_threshold);
      ASSERT_NE(owned_b->t, nullptr) << last_error();
      b = owned_b.get();
    }
  }
  int send(std::size_t n, std::uint64_t seed, rocl_gid_t to = kDestination,
           std::uint64_t *sum = nullptr) {
    Message *m = make_message(a->pool, n, seed, kSource, 1, sum);
    if (m == nullptr) return ROCL_ENOMEM;
    const int rc = a->t->send(2, b->t->address(), to, m);
    if (rc != ROCL_OK) {
      BlockHeader *block = block_of(m);
      end_message(block);
      a->pool.release(block, BlockState::kLibrary);
    }
    return rc;
  }

  JobSecret secret = JobSecret::generate();
  std::unique_ptr<End> a, owned_b;
  End *b = nullptr;
};

TEST_P(Conformance, RowNamesTheTransportItMakes) {
  const TransportEntry &entry = *GetParam();
  EXPECT_EQ(find_transport(entry.name), &entry);
  EXPECT_EQ(find_transport("no-such-transport"), nullptr);
  make_pair();
  EXPECT_EQ(a->t->name(), entry.name);
  EXPECT_FALSE(a->t->address().empty());
  EXPECT_TRUE(a->t->reaches(b->t->address()));
  EXPECT_FALSE(a->t->reaches("no-such-transport:1"));
  EXPECT_EQ(a->t->register_memory(a->pool.region_base(), a->pool.region_bytes()), ROCL_OK);
  for (const OptionRow &row : entry.options) {
    EXPECT_EQ(std::string(row.name).rfind("ROCL_", 0), 0u) << row.name;
    EXPECT_NE(std::string(row.doc), "") << row.name;
  }
  // Its option rows parse at their defaults.
  EXPECT_NO_THROW(OptionValues{entry.options});
}

TEST_P(Conformance, MessagesOfEverySizeArriveIntactAndInOrder) {
  make_pair();
  const std::size_t sizes[] = {0, 1, 7, 8, 24, 64, 100, 1000, 4096, 65536, 1 << 20};
  std::vector<std::uint64_t> sums;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    std::uint64_t sum = 0;
    ASSERT_EQ(send(sizes[i], 1000 + i, kDestination, &sum), ROCL_OK) << last_error();
    sums.push_back(sum);
  }
  ASSERT_TRUE(b->sink.wait_for(std::size(sizes)));
  const auto got = b->sink.snapshot();
  ASSERT_EQ(got.size(), std::size(sizes));
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].length, sizes[i]) << "message " << i;
    EXPECT_EQ(got[i].sum, sums[i]) << "message " << i;
    EXPECT_EQ(got[i].source, kSource);
    EXPECT_EQ(got[i].destination, kDestination);
  }
  // The base counts what it handed over, once the sink has returned (the
  // in-process hand-off delivers inside send(), past the base).
  if (GetParam()->reach != Reach::kProcess) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (b->t->delivered() < std::size(sizes) && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(b->t->delivered(), std::size(sizes));
  }
}

TEST_P(Conformance, SendBytesTakesWhatItsCapsSayOrDeclines) {
  make_pair();
  const std::size_t limit = a->t->caps().bytes_send_limit;
  const char text[] = "small message";
  const int rc = a->t->send_bytes(2, b->t->address(), kDestination, CoreHeader{kSource, 3, 7}, text,
                                  sizeof text, false);
  if (limit < sizeof text) {
    EXPECT_EQ(rc, Transport::kNotTaken);
    return;
  }
  ASSERT_EQ(rc, ROCL_OK) << last_error();
  ASSERT_TRUE(b->sink.wait_for(1));
  const auto got = b->sink.snapshot();
  EXPECT_EQ(got[0].length, sizeof text);
  EXPECT_EQ(got[0].sum, checksum(text, sizeof text));
  EXPECT_EQ(got[0].tag, 3);
}

TEST_P(Conformance, ARefusedDestinationIsCountedAndTheNextMessageArrives) {
  make_pair();
  const int rc = send(64, 5, kRefused);
  if (GetParam()->reach == Reach::kProcess) {
    EXPECT_EQ(rc, ROCL_EBADGID) << "a synchronous hand-off says so to the sender";
  } else {
    ASSERT_EQ(rc, ROCL_OK) << last_error();
  }
  ASSERT_EQ(send(64, 6), ROCL_OK) << last_error();
  ASSERT_TRUE(b->sink.wait_for(1));
  EXPECT_EQ(b->sink.snapshot()[0].destination, kDestination);
  if (GetParam()->reach != Reach::kProcess) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (b->t->refused_arrivals() == 0 && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(b->t->refused_arrivals(), 1u);
  }
}

TEST_P(Conformance, FlushReturnsByItsDeadline) {
  make_pair();
  ASSERT_EQ(send(4096, 9), ROCL_OK);
  const auto start = std::chrono::steady_clock::now();
  a->t->flush(start + 2s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(b->sink.wait_for(1));
}

TEST_P(Conformance, RendezvousStubsArePulledDiscardedOrPulledIntoMemory) {
  make_pair(/*rendezvous_threshold=*/std::size_t{64} << 10);
  if (!a->t->caps().makes_stubs) {
    EXPECT_FALSE(a->t->caps().pulls_into_memory) << "pull_into needs stubs";
    GTEST_SKIP() << GetParam()->name << " makes no rendezvous stubs";
  }
  b->sink.keep_stubs = true;
  constexpr std::size_t kLen = std::size_t{1} << 20;
  std::uint64_t sums[3] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(send(kLen, 70 + i, kDestination, &sums[i]), ROCL_OK);
  const auto end = std::chrono::steady_clock::now() + 8s;
  while (b->sink.stubs_seen.load() < 3 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  std::vector<Message *> stubs;
  {
    std::lock_guard g(b->sink.mu);
    stubs = b->sink.stubs;
  }
  ASSERT_EQ(stubs.size(), 3u);
  for (Message *s : stubs) {
    EXPECT_TRUE(s->rendezvous);
    EXPECT_EQ(s->length, kLen);
    EXPECT_EQ(rendezvous_transport(s), b->t.get());
  }
  // The first pulled into a pool block, the second discarded, the third
  // (where the transport can) straight into caller memory.
  Message *real = nullptr;
  ASSERT_EQ(b->t->pull(stubs[0], &real), ROCL_OK) << last_error();
  EXPECT_EQ(real->length, kLen);
  EXPECT_EQ(checksum(real->data, real->length), sums[0]);
  BlockHeader *block = block_of(real);
  std::destroy_at(real);
  b->pool.release(block, BlockState::kLibrary);
  b->t->discard(stubs[1]);
  if (b->t->caps().pulls_into_memory) {
    std::vector<std::byte> into(kLen);
    ASSERT_EQ(b->t->pull_into(stubs[2], into.data(), into.size()), ROCL_OK) << last_error();
    EXPECT_EQ(checksum(into.data(), into.size()), sums[2]);
  } else {
    b->t->discard(stubs[2]);
  }
  // Every sender was let go: a later message still arrives.
  b->sink.keep_stubs = false;
  ASSERT_EQ(send(100, 99), ROCL_OK);
  EXPECT_TRUE(b->sink.wait_for(1));
}

TEST_P(Conformance, TakeArrivedFindsAMessageAtTheFrontOrLeavesItToProgress) {
  make_pair();
  if (!b->t->caps().takes_arrived) {
    bool left = false;
    EXPECT_EQ(b->t->take_arrived(
                  kDestination, CoreHeader{kSource, 1, 7},
                  [](const void *) noexcept { return true; }, nullptr, &left),
              nullptr);
    GTEST_SKIP() << GetParam()->name << " takes nothing at its inputs' fronts";
  }
  // The caller polls, so the transport's thread leaves the input alone;
  // the message comes through take_arrived or, if the thread had it first,
  // through the sink: exactly once either way.
  b->t->poll_begin();
  std::uint64_t sum = 0;
  ASSERT_EQ(send(40, 3, kDestination, &sum), ROCL_OK);
  Message *taken = nullptr;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (taken == nullptr && b->sink.count() == 0 && std::chrono::steady_clock::now() < end) {
    bool left = false;
    taken = b->t->take_arrived(
        kDestination, CoreHeader{kSource, 1, 7}, [](const void *) noexcept { return true; },
        nullptr, &left);
    if (taken == nullptr && left) b->t->progress(nullptr);
  }
  b->t->poll_end(false);
  if (taken != nullptr) {
    EXPECT_EQ(taken->length, 40u);
    EXPECT_EQ(checksum(taken->data, taken->length), sum);
    BlockHeader *block = block_of(taken);
    std::destroy_at(taken);
    b->pool.release(block, BlockState::kLibrary);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(b->sink.count(), 0u) << "taken and delivered";
  } else {
    EXPECT_EQ(b->sink.count(), 1u);
  }
}

TEST_P(Conformance, LentMemoryIsReadWhereItIsAndTheBlockFinishedOnce) {
  make_pair(/*rendezvous_threshold=*/std::size_t{64} << 10);
  if (!a->t->caps().takes_lent_memory) GTEST_SKIP() << GetParam()->name << " takes no lent memory";
  constexpr std::size_t kLen = std::size_t{1} << 20;
  std::vector<std::byte> mine(kLen);
  for (std::size_t i = 0; i < kLen; ++i) mine[i] = std::byte(i * 7 + 1);
  BlockHeader *block = a->pool.allocate(0);
  ASSERT_NE(block, nullptr);
  block->state.store(BlockState::kLibrary);
  block->return_after_send = false;
  block->lent = true;
  block->send_status.store(SendStatus::kPending);
  Message *m = message_in(block);
  m->header = CoreHeader{kSource, 1, 7};
  m->data = mine.data();
  m->length = kLen;
  ASSERT_EQ(a->t->send(2, b->t->address(), kDestination, m), ROCL_OK) << last_error();
  ASSERT_TRUE(b->sink.wait_for(1));
  EXPECT_EQ(b->sink.snapshot()[0].sum, checksum(mine.data(), kLen));
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (!send_finished(block) && std::chrono::steady_clock::now() < end) {
    a->t->progress(nullptr);
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(send_finished(block));
  EXPECT_EQ(block->send_status.load(), SendStatus::kSent);
  end_message(block);
  a->pool.release(block, BlockState::kLibrary);
}

std::string name_of(const ::testing::TestParamInfo<const TransportEntry *> &info) {
  return info.param->name;
}

INSTANTIATE_TEST_SUITE_P(EveryTransport, Conformance, ::testing::ValuesIn(transport_table()),
                         name_of);

}  // namespace
}  // namespace rocl::impl
