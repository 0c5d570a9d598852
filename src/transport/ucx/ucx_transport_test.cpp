// ucx_transport_test.cpp - what the ucx transport adds to the Transport
// contract (the conformance suite checks the contract itself): the job
// secret's hello, UCX's rendezvous landing in pool blocks, lent memory,
// a peer that is gone, and ROCL_UCX_BIND's errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/transport.hpp"
#include "transport/transport_test_util.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace rocl::impl {
namespace {

using transport_test::make_message;
using transport_test::RecordingSink;

constexpr rocl_gid_t kDestination = 21;
constexpr rocl_gid_t kSource = 11;

struct End {
  explicit End(const JobSecret *secret, OptionValues *options = nullptr)
      : pool(PoolConfig{std::size_t{1} << 30, std::size_t{2} << 20}) {
    sink.pool = &pool;
    TransportEnv env{&sink, 1, &pool, secret};
    env.options = options;
    t = make_ucx_transport(env);
    if (t) t->register_memory(pool.region_base(), pool.region_bytes());
  }
  BufferPool pool;
  RecordingSink sink;
  std::unique_ptr<Transport> t;
};

int send(End &from, End &to, std::size_t n, std::uint64_t seed, std::uint64_t *sum = nullptr) {
  Message *m = make_message(from.pool, n, seed, kSource, 1, sum);
  if (m == nullptr) return ROCL_ENOMEM;
  const int rc = from.t->send(2, to.t->address(), kDestination, m);
  if (rc != ROCL_OK) {
    BlockHeader *b = block_of(m);
    end_message(b);
    from.pool.release(b, BlockState::kLibrary);
  }
  return rc;
}

TEST(UcxTransport, MessagesOfEverySizeArriveWholeAndInOrder) {
  const JobSecret secret = JobSecret::generate();
  End a(&secret), b(&secret);
  ASSERT_NE(a.t, nullptr) << last_error();
  ASSERT_NE(b.t, nullptr) << last_error();
  EXPECT_TRUE(a.t->address().starts_with("ucx:"));
  EXPECT_TRUE(a.t->reaches(b.t->address()));
  EXPECT_FALSE(a.t->reaches("tcp:127.0.0.1:5"));
  // Eager and rendezvous sizes interleaved: the rendezvous ones must not
  // be overtaken by the small ones behind them.
  const std::vector<std::size_t> sizes = {0, 1, 8, 4096, 65536, 1 << 20, 7, 8 << 20, 3, 100000};
  std::vector<std::uint64_t> sums(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(send(a, b, sizes[i], 1000 + i, &sums[i]), ROCL_OK) << last_error();
  }
  ASSERT_TRUE(b.sink.wait_for(sizes.size()));
  const auto got = b.sink.snapshot();
  ASSERT_EQ(got.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(got[i].length, sizes[i]) << "message " << i;
    EXPECT_EQ(got[i].sum, sums[i]) << "message " << i;
    EXPECT_EQ(got[i].destination, kDestination);
    EXPECT_EQ(got[i].source, kSource);
  }
}

TEST(UcxTransport, SmallBytesGoWithoutABlockOrAreDeclined) {
  const JobSecret secret = JobSecret::generate();
  End a(&secret), b(&secret);
  ASSERT_NE(a.t, nullptr) << last_error();
  ASSERT_NE(b.t, nullptr) << last_error();
  const char text[] = "twelve bytes";
  const CoreHeader header{kSource, 5, 7};
  // Declined while the end-point is being wired up; taken once it is.
  int taken = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (taken < 10 && std::chrono::steady_clock::now() < deadline) {
    const int rc =
        a.t->send_bytes(2, b.t->address(), kDestination, header, text, sizeof text, false);
    ASSERT_TRUE(rc == ROCL_OK || rc == Transport::kNotTaken) << rc;
    if (rc == ROCL_OK) ++taken;
    a.t->progress(nullptr);
  }
  EXPECT_EQ(taken, 10);
  ASSERT_TRUE(b.sink.wait_for(static_cast<std::size_t>(taken)));
  std::vector<char> big(a.t->caps().bytes_send_limit + 1);
  EXPECT_EQ(a.t->send_bytes(2, b.t->address(), kDestination, header, big.data(), big.size(), false),
            Transport::kNotTaken);
}

TEST(UcxTransport, AWrongJobSecretIsRefusedAndDeliversNothing) {
  const JobSecret mine = JobSecret::generate(), theirs = JobSecret::generate();
  End a(&theirs), b(&mine);
  ASSERT_NE(a.t, nullptr) << last_error();
  ASSERT_NE(b.t, nullptr) << last_error();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(send(a, b, 100, i), ROCL_OK) << last_error();
  a.t->flush(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  // Give b's thread time to see them; none may arrive.
  EXPECT_FALSE(b.sink.wait_for(1, std::chrono::milliseconds(500)));
  EXPECT_EQ(b.sink.count(), 0u);
}

TEST(UcxTransport, AMalformedAddressOrADeadPeerFailsNamingIt) {
  const JobSecret secret = JobSecret::generate();
  End a(&secret);
  ASSERT_NE(a.t, nullptr) << last_error();
  Message *m = make_message(a.pool, 10, 1, kSource, 1);
  EXPECT_EQ(a.t->send(0x77, "ucx:zz", kDestination, m), ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("0x0000000000000077"), std::string::npos)
      << last_error();
  BlockHeader *b = block_of(m);
  end_message(b);
  a.pool.release(b, BlockState::kLibrary);
}

TEST(UcxTransport, ABadBindSaysWhatItNamed) {
  const JobSecret secret = JobSecret::generate();
  OptionValues options(ucx::option_rows());
  ASSERT_TRUE(options.set("ROCL_UCX_BIND", "no-such-interface0"));
  End a(&secret, &options);
  EXPECT_EQ(a.t, nullptr);
  EXPECT_NE(std::string(last_error()).find("no-such-interface0"), std::string::npos)
      << last_error();
}

TEST(UcxTransport, LentMemoryIsSentFromWhereItIs) {
  const JobSecret secret = JobSecret::generate();
  End a(&secret), b(&secret);
  ASSERT_NE(a.t, nullptr) << last_error();
  ASSERT_NE(b.t, nullptr) << last_error();
  std::vector<std::uint8_t> user(3 << 20);
  for (std::size_t i = 0; i < user.size(); ++i) user[i] = static_cast<std::uint8_t>(i * 7);
  BlockHeader *envelope = a.pool.allocate(0);
  ASSERT_NE(envelope, nullptr);
  envelope->lent = true;
  envelope->return_after_send = false;
  envelope->state.store(BlockState::kLibrary);
  Message *m = message_in(envelope);
  m->header = CoreHeader{kSource, 1, 7};
  m->data = user.data();
  m->length = user.size();
  ASSERT_EQ(a.t->send(2, b.t->address(), kDestination, m), ROCL_OK) << last_error();
  ASSERT_TRUE(b.sink.wait_for(1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (envelope->send_status.load() != SendStatus::kSent &&
         std::chrono::steady_clock::now() < deadline) {
    a.t->progress(nullptr);
  }
  EXPECT_EQ(envelope->send_status.load(), SendStatus::kSent);
  EXPECT_EQ(b.sink.snapshot()[0].sum, transport_test::checksum(user.data(), user.size()));
  end_message(envelope);
  envelope->lent = false;
  a.pool.release(envelope, BlockState::kLibrary);
}

}  // namespace
}  // namespace rocl::impl
