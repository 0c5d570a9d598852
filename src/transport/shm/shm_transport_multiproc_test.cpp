// The shared-memory transport between real processes: a forked child sends
// to its parent, a child killed while its ring is full makes the parent's
// send fail with ROCL_EPEER instead of hanging, and a lent message is read
// in place by a child that can read our memory, copied for one that cannot.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/transport_test_util.hpp"

namespace rocl::impl {
namespace {

using namespace std::chrono_literals;
using transport_test::checksum;
using transport_test::make_message;
using transport_test::RecordingSink;

bool write_all(int fd, const std::string &s) {
  const std::uint32_t n = static_cast<std::uint32_t>(s.size());
  return ::write(fd, &n, 4) == 4 && ::write(fd, s.data(), n) == static_cast<ssize_t>(n);
}
std::string read_all(int fd) {
  std::uint32_t n = 0;
  if (::read(fd, &n, 4) != 4 || n > 4096) return {};
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, s.data() + got, n - got);
    if (r <= 0) return {};
    got += static_cast<std::size_t>(r);
  }
  return s;
}

// A child forked with two pipes: the parent writes to[1] and the child
// reads to[0]; the child writes from[1] and the parent reads from[0].
struct Forked {
  int to[2] = {-1, -1};
  int from[2] = {-1, -1};
  pid_t pid = -1;  // 0 in the child; < 0 if a pipe or the fork failed
};
Forked fork_with_pipes() {
  Forked f;
  if (::pipe(f.to) == 0 && ::pipe(f.from) == 0) f.pid = ::fork();
  return f;
}

// The exit code of a child once it ended (the children's checks name
// themselves by it); -1 if it did not exit normally.
int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(ShmMultiproc, ForkedChildSendsToItsParent) {
  const JobSecret secret = JobSecret::generate();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[1]);
    const std::string addr = read_all(p[0]);
    BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
    RecordingSink sink;
    sink.pool = &pool;
    auto t = make_shm_transport_with(TransportEnv{&sink, 9, &pool, &secret}, {}, nullptr);
    if (!t || addr.empty()) ::_exit(2);
    for (int i = 0; i < 100; ++i) {
      const std::size_t n = i == 50 ? (3u << 20) : 100u + i;
      Message *m = make_message(pool, n, static_cast<std::uint64_t>(i), 77, i);
      if (m == nullptr || t->send(1, addr, 11, m) != ROCL_OK) ::_exit(3);
    }
    t.reset();
    ::_exit(0);
  }
  ::close(p[0]);
  BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
  RecordingSink sink;
  sink.pool = &pool;
  auto t = make_shm_transport_with(TransportEnv{&sink, 1, &pool, &secret}, {}, nullptr);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(write_all(p[1], t->address()));
  ::close(p[1]);
  EXPECT_EQ(exit_code_of(child), 0);
  ASSERT_TRUE(sink.wait_for(100));
  auto g = sink.snapshot();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(g[i].first8, static_cast<std::uint64_t>(i));
    EXPECT_EQ(g[i].length, i == 50 ? (3u << 20) : 100u + i);
    EXPECT_EQ(g[i].source, 77u);
    EXPECT_EQ(g[i].tag, i);
  }
}

// Blocks the child's progress thread forever on the first arrival.
struct StuckSink : MessageSink {
  int deliver(rocl_gid_t, Message *, const Waiter *) noexcept override {
    for (;;) ::pause();
  }
};

TEST(ShmMultiproc, ChildKilledWithItsRingFullFailsTheSend) {
  const JobSecret secret = JobSecret::generate();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[0]);
    BufferPool pool(PoolConfig{std::size_t{64} << 20, std::size_t{1} << 20});
    StuckSink sink;
    auto t = make_shm_transport_with(TransportEnv{&sink, 9, &pool, &secret},
                                     shm::Config{4, 64 * 1024}, nullptr);
    if (!t || !write_all(p[1], t->address())) ::_exit(2);
    for (;;) ::pause();
  }
  ::close(p[1]);
  const std::string addr = read_all(p[0]);
  ::close(p[0]);
  ASSERT_FALSE(addr.empty());
  BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
  RecordingSink sink;
  sink.pool = &pool;
  auto t = make_shm_transport_with(TransportEnv{&sink, 1, &pool, &secret}, {}, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->reaches(addr));
  std::atomic<int> sent{0};
  auto result = std::async(std::launch::async, [&]() -> std::pair<int, std::string> {
    for (int i = 0; i < 1000; ++i) {
      Message *m = make_message(pool, 8192, static_cast<std::uint64_t>(i), 11, 1);
      const int rc = t->send(9, addr, 21, m);
      if (rc != ROCL_OK) {
        pool.release(block_of(m), BlockState::kLibrary);
        return {rc, last_error()};
      }
      sent++;
    }
    return {ROCL_OK, ""};
  });
  // The ring takes some (however late the sender thread gets to run)...
  for (int i = 0; i < 2000 && sent.load() < 5; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_GE(sent.load(), 5);
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(sent.load(), 20);  // ...then the sender blocks
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(child, SIGKILL), 0);  // not reaped yet: a zombie
  if (result.wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "send still blocked 5 s after the peer died";
    std::_Exit(1);
  }
  const auto r = result.get();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(r.first, ROCL_EPEER);
  EXPECT_NE(r.second.find(std::to_string(child)), std::string::npos) << r.second;
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(t->reaches(addr));
  // Later sends to the dead peer fail at once too.
  Message *m = make_message(pool, 10, 1, 11, 1);
  EXPECT_EQ(t->send(9, addr, 21, m), ROCL_EPEER);
  pool.release(block_of(m), BlockState::kLibrary);
}

// A lent message (is_lent): the bytes stay in the parent's own memory and
// the block carries only the envelope.
constexpr std::size_t kLentBytes = 256 * 1024;
std::uint8_t lent_byte(std::size_t i) {
  return static_cast<std::uint8_t>(i * 7 + (i >> 9));
}

// One end of the lent-message tests: its pool, a sink, an shm transport.
struct ShmEnd {
  BufferPool pool{PoolConfig{std::size_t{64} << 20, std::size_t{1} << 20}};
  RecordingSink sink;
  std::unique_ptr<ShmTransport> t;
  ShmEnd(rocl_gid_t gid, const JobSecret &secret, bool keep_stubs) {
    sink.pool = &pool;
    sink.keep_stubs = keep_stubs;
    t = make_shm_transport_with(TransportEnv{&sink, gid, &pool, &secret}, {}, nullptr);
  }
};

// A lent message as the core makes one (Context::send_lent): an envelope
// block whose data is `data`, pending until the transport finishes it.
Message *lent_message(BufferPool &pool, void *data, std::size_t len, int tag) {
  BlockHeader *b = pool.allocate(0);
  if (b == nullptr) return nullptr;
  b->state.store(BlockState::kLibrary);
  b->lent = true;
  b->send_status.store(SendStatus::kPending);
  Message *m = message_in(b);
  m->header = CoreHeader{11, tag, 7};
  m->data = data;
  m->length = len;
  return m;
}

// Sends one lent message to a child that keeps rendezvous stubs until told
// to pull them. A child that can read our memory gets a stub and the block
// stays pending until it has pulled; one that dropped to another user
// (process_vm_readv: EPERM; nor can it map our pool) gets the bytes through
// the ring, and the block is finished before send() returns.
void send_lent_to_child(bool child_drops_to_nobody) {
  const JobSecret secret = JobSecret::generate();
  const Forked child = fork_with_pipes();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    if (child_drops_to_nobody && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
    ShmEnd end(9, secret, true);
    RecordingSink &sink = end.sink;
    ShmTransport *t = end.t.get();
    if (t == nullptr || !write_all(child.from[1], t->address())) ::_exit(3);
    if (read_all(child.to[0]) != "pull") ::_exit(4);
    if (child_drops_to_nobody) {  // the bytes came whole, no stub
      if (!sink.wait_for(1) || sink.stubs_seen.load() != 0) ::_exit(5);
      std::vector<std::uint8_t> want(kLentBytes);
      for (std::size_t i = 0; i < kLentBytes; ++i) want[i] = lent_byte(i);
      if (sink.snapshot()[0].sum != checksum(want.data(), want.size())) ::_exit(6);
      ::_exit(0);
    }
    for (int i = 0; i < 5000 && sink.stubs_seen.load() == 0; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    if (sink.stubs_seen.load() != 1 || sink.count() != 0) ::_exit(7);  // a stub, no bytes
    Message *stub = nullptr;
    {
      std::lock_guard<std::mutex> g(sink.mu);
      stub = sink.stubs.front();
    }
    std::vector<std::uint8_t> got(kLentBytes);
    if (t->pull_into(stub, got.data(), got.size()) != ROCL_OK) ::_exit(8);
    for (std::size_t i = 0; i < kLentBytes; ++i) {
      if (got[i] != lent_byte(i)) ::_exit(9);
    }
    if (!write_all(child.from[1], "pulled")) ::_exit(10);
    std::this_thread::sleep_for(200ms);  // the parent reaps before we go
    ::_exit(0);
  }
  const std::string addr = read_all(child.from[0]);
  ASSERT_FALSE(addr.empty());
  ShmEnd end(1, secret, false);
  BufferPool &pool = end.pool;
  ShmTransport *t = end.t.get();
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->caps().takes_lent_memory);
  std::vector<std::uint8_t> mine(kLentBytes);
  for (std::size_t i = 0; i < kLentBytes; ++i) mine[i] = lent_byte(i);
  Message *m = lent_message(pool, mine.data(), mine.size(), 3);
  ASSERT_NE(m, nullptr);
  BlockHeader *b = block_of(m);
  ASSERT_EQ(t->send(9, addr, 21, m), ROCL_OK) << last_error();
  if (child_drops_to_nobody) {
    EXPECT_EQ(b->send_status.load(), SendStatus::kSent) << "copied through the ring at once";
    ASSERT_TRUE(write_all(child.to[1], "pull"));
  } else {
    std::this_thread::sleep_for(100ms);
    t->progress(nullptr);
    EXPECT_EQ(b->send_status.load(), SendStatus::kPending) << "lent until the child pulls";
    ASSERT_TRUE(write_all(child.to[1], "pull"));
    EXPECT_EQ(read_all(child.from[0]), "pulled");
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (b->send_status.load() == SendStatus::kPending &&
           std::chrono::steady_clock::now() < deadline) {
      t->progress(nullptr);
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(b->send_status.load(), SendStatus::kSent);
  }
  EXPECT_EQ(exit_code_of(child.pid), 0) << "the child's check failed (exit code names which)";
  std::destroy_at(m);
  pool.release(b, BlockState::kLibrary);
}

// Copy offers (shm_copy_offer.cpp): while the sender drives its transport
// (as a sender waiting for its lent sends does), it writes the second half
// of each lent message into the receive's memory itself. A child pulls
// lent messages of distinct content into memory of its own as they arrive;
// every byte must be right, and the sender must have copied parts. Each
// offer goes to whichever of the two takes it first: on a loaded machine
// the sender may not run while the child copies its own half, so batches
// of kBatch messages go until the sender has copied a part (or 20 s).
TEST(ShmMultiproc, TheWaitingSenderCopiesPartOfALentMessage) {
  constexpr int kBatch = 40;
  auto byte_of = [](int msg, std::size_t i) {
    return static_cast<std::uint8_t>(i * 13 + (i >> 12) + static_cast<std::size_t>(msg) * 101);
  };
  const JobSecret secret = JobSecret::generate();
  const Forked child = fork_with_pipes();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    ShmEnd end(9, secret, true);
    RecordingSink &sink = end.sink;
    ShmTransport *t = end.t.get();
    if (t == nullptr || !write_all(child.from[1], t->address())) ::_exit(3);
    std::vector<std::uint8_t> got(kLentBytes);
    // Until a plain message (not lent) says stop.
    for (std::size_t k = 0;; ++k) {
      while (sink.stubs_seen.load() <= static_cast<int>(k) && sink.count() == 0) {
        std::this_thread::sleep_for(100us);
      }
      Message *stub = nullptr;
      {
        std::lock_guard<std::mutex> g(sink.mu);
        if (sink.stubs.size() > k) stub = sink.stubs[k];
      }
      if (stub == nullptr) break;  // the stop message
      std::fill(got.begin(), got.end(), std::uint8_t{0});
      if (t->pull_into(stub, got.data(), got.size()) != ROCL_OK) ::_exit(5);
      for (std::size_t i = 0; i < kLentBytes; ++i) {
        if (got[i] != byte_of(static_cast<int>(k % kBatch), i)) ::_exit(6);
      }
    }
    const shm::Stats st = t->stats();
    if (!write_all(child.from[1], std::to_string(st.parts_copied_by_senders))) ::_exit(7);
    (void)read_all(child.to[0]);  // the parent reaps before we go
    ::_exit(0);
  }
  const std::string addr = read_all(child.from[0]);
  ASSERT_FALSE(addr.empty());
  ShmEnd end(1, secret, false);
  BufferPool &pool = end.pool;
  ShmTransport *t = end.t.get();
  ASSERT_NE(t, nullptr);
  std::vector<std::vector<std::uint8_t>> mine(kBatch, std::vector<std::uint8_t>(kLentBytes));
  for (int k = 0; k < kBatch; ++k) {
    for (std::size_t i = 0; i < kLentBytes; ++i) mine[k][i] = byte_of(k, i);
  }
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  int batches = 0;
  while (t->stats().parts_copied_for_receivers == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    ++batches;
    std::vector<BlockHeader *> blocks;
    for (int k = 0; k < kBatch; ++k) {
      Message *m = lent_message(pool, mine[k].data(), kLentBytes, k);
      ASSERT_NE(m, nullptr);
      ASSERT_EQ(t->send(9, addr, 21, m), ROCL_OK) << k << ": " << last_error();
      blocks.push_back(block_of(m));
    }
    // Spin like a waiting sender until the child has taken every message.
    auto all_sent = [&] {
      for (BlockHeader *b : blocks) {
        if (b->send_status.load() == SendStatus::kPending) return false;
      }
      return true;
    };
    while (!all_sent() && std::chrono::steady_clock::now() < deadline) t->progress(nullptr);
    for (BlockHeader *b : blocks) {
      ASSERT_EQ(b->send_status.load(), SendStatus::kSent) << "batch " << batches;
      std::destroy_at(message_in(b));
      pool.release(b, BlockState::kLibrary);
    }
  }
  ASSERT_EQ(t->send(9, addr, 21, make_message(pool, 8, 0, 11, 1)), ROCL_OK);  // stop
  const std::string by_senders = read_all(child.from[0]);
  ASSERT_TRUE(write_all(child.to[1], "bye"));
  ASSERT_EQ(exit_code_of(child.pid), 0) << "the child's check failed (exit code names which)";
  const std::uint64_t copied = t->stats().parts_copied_for_receivers;
  EXPECT_GT(copied, 0u) << "the spinning sender copied no part of " << batches * kBatch
                        << " messages";
  EXPECT_EQ(std::to_string(copied), by_senders) << "both ends count the parts the sender copied";
}

// The first stub of `sink` after the k-th, or nullptr once a plain
// message (the stop) came instead.
Message *wait_stub(RecordingSink &sink, std::size_t k) {
  while (sink.stubs_seen.load() <= static_cast<int>(k) && sink.count() == 0) {
    std::this_thread::sleep_for(50us);
  }
  std::lock_guard<std::mutex> g(sink.mu);
  return sink.stubs.size() > k ? sink.stubs[k] : nullptr;
}

// Drives t like a sender waiting for its lent message (taking its
// receiver's copy offers) until the message is sent or 10 s passed.
SendStatus spin_until_sent(ShmTransport *t, Message *m) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  BlockHeader *b = block_of(m);
  while (b->send_status.load() == SendStatus::kPending &&
         std::chrono::steady_clock::now() < deadline) {
    t->progress(nullptr);
  }
  return b->send_status.load();
}

// A message sent back where it came from (a ping-pong of lent memory): the
// receiver that copied its first part while the sender wrote the rest sends
// it on with kFlagSenderHoldsFirst, and its receiver offers it that first
// part (shm_written_parts.hpp). Parent and child bounce messages of distinct
// content; every byte must be right each way, and the parent must have had
// a first part copied by the child (offers go to whichever end takes them
// first, so rounds go on until one was, or 20 s).
TEST(ShmMultiproc, AMessageSentBackLetsEachCpuCopyThePartItWrote) {
  auto byte_of = [](std::size_t round, std::size_t i) {
    return static_cast<std::uint8_t>(i * 11 + (i >> 10) + round * 37);
  };
  const JobSecret secret = JobSecret::generate();
  const Forked child = fork_with_pipes();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    ShmEnd end(9, secret, true);
    ShmTransport *t = end.t.get();
    if (t == nullptr || !write_all(child.from[1], t->address())) ::_exit(3);
    const std::string parent = read_all(child.to[0]);
    std::vector<std::uint8_t> got(kLentBytes);
    for (std::size_t k = 0;; ++k) {
      Message *stub = wait_stub(end.sink, k);
      if (stub == nullptr) break;  // the stop message
      if (t->pull_into(stub, got.data(), got.size()) != ROCL_OK) ::_exit(5);
      for (std::size_t i = 0; i < kLentBytes; ++i) {
        if (got[i] != byte_of(k, i)) ::_exit(6);
      }
      Message *back = lent_message(end.pool, got.data(), got.size(), static_cast<int>(k));
      if (back == nullptr || t->send(1, parent, 9, back) != ROCL_OK) ::_exit(7);
      if (spin_until_sent(t, back) != SendStatus::kSent) ::_exit(8);
      std::destroy_at(back);
      end.pool.release(block_of(back), BlockState::kLibrary);
    }
    if (!write_all(child.from[1], std::to_string(t->stats().parts_copied_for_receivers))) {
      ::_exit(9);
    }
    (void)read_all(child.to[0]);  // the parent reaps before we go
    ::_exit(0);
  }
  const std::string addr = read_all(child.from[0]);
  ASSERT_FALSE(addr.empty());
  ShmEnd end(1, secret, true);
  ShmTransport *t = end.t.get();
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(write_all(child.to[1], t->address()));
  std::vector<std::uint8_t> mine(kLentBytes), back(kLentBytes);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  std::size_t rounds = 0;
  for (;
       t->stats().first_parts_copied_by_senders == 0 && std::chrono::steady_clock::now() < deadline;
       ++rounds) {
    for (std::size_t i = 0; i < kLentBytes; ++i) mine[i] = byte_of(rounds, i);
    Message *m = lent_message(end.pool, mine.data(), mine.size(), static_cast<int>(rounds));
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(t->send(9, addr, 21, m), ROCL_OK) << last_error();
    ASSERT_EQ(spin_until_sent(t, m), SendStatus::kSent) << "round " << rounds;
    std::destroy_at(m);
    end.pool.release(block_of(m), BlockState::kLibrary);
    Message *stub = wait_stub(end.sink, rounds);
    ASSERT_NE(stub, nullptr);
    std::fill(back.begin(), back.end(), std::uint8_t{0});
    ASSERT_EQ(t->pull_into(stub, back.data(), back.size()), ROCL_OK) << last_error();
    for (std::size_t i = 0; i < kLentBytes; ++i) {
      ASSERT_EQ(back[i], byte_of(rounds, i)) << "round " << rounds << ", byte " << i;
    }
  }
  ASSERT_EQ(t->send(9, addr, 21, make_message(end.pool, 8, 0, 11, 1)), ROCL_OK);  // stop
  const std::string child_copied = read_all(child.from[0]);
  ASSERT_TRUE(write_all(child.to[1], "bye"));
  ASSERT_EQ(exit_code_of(child.pid), 0) << "the child's check failed (exit code names which)";
  const std::uint64_t first = t->stats().first_parts_copied_by_senders;
  EXPECT_GT(first, 0u) << "no first part was copied by its holder in " << rounds << " rounds";
  EXPECT_GE(std::stoull(child_copied), first) << "the child counts every part it copied";
}

// Pool buffers by rendezvous into a receiver whose pool the sender mapped
// at the handshake: the sender writes its part of each copy offer with
// memcpy through that mapping. A child sends messages of 8-256 KiB from its
// pool and drives its transport until each is sent; the parent's sink
// pulls each into a block of its pool. Every checksum must match, and the
// child must have written parts through the mapping (rounds go on until
// it has, or 20 s: an offer goes to whichever end takes it first).
TEST(ShmMultiproc, ASenderWritesItsPartIntoTheReceiversPoolThroughItsMapping) {
  auto size_of = [](int k) { return std::size_t{8192} << (k % 6); };  // 8 KiB .. 256 KiB
  const JobSecret secret = JobSecret::generate();
  const Forked child = fork_with_pipes();  // before the parent's transport starts its thread
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    BufferPool pool(PoolConfig{std::size_t{64} << 20, std::size_t{1} << 20});
    RecordingSink sink;
    sink.pool = &pool;
    TransportEnv env{&sink, 9, &pool, &secret};
    env.rendezvous_threshold = 8192;  // every message by rendezvous
    auto t = make_shm_transport_with(env, {}, nullptr);
    const std::string parent = read_all(child.to[0]);
    if (!t || parent.empty()) ::_exit(2);
    int sent = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    for (int k = 0; t->stats().parts_copied_into_mapped_pools == 0 ||
                    (k < 64 && std::chrono::steady_clock::now() < deadline);
         ++k) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      Message *m = make_message(pool, size_of(k), static_cast<std::uint64_t>(k), 11, k);
      if (m == nullptr) ::_exit(3);
      BlockHeader *b = block_of(m);
      b->return_after_send = false;  // kept, to see when it is sent
      b->send_status.store(SendStatus::kPending);
      if (t->send(1, parent, 21, m) != ROCL_OK) ::_exit(4);
      if (spin_until_sent(t.get(), m) != SendStatus::kSent) ::_exit(5);
      std::destroy_at(m);
      pool.release(b, BlockState::kLibrary);
      ++sent;
    }
    if (!write_all(child.from[1], std::to_string(t->stats().parts_copied_into_mapped_pools)) ||
        !write_all(child.from[1], std::to_string(sent))) {
      ::_exit(6);
    }
    (void)read_all(child.to[0]);
    ::_exit(0);
  }
  ShmEnd end(1, secret, false);
  ASSERT_NE(end.t, nullptr);
  ASSERT_TRUE(write_all(child.to[1], end.t->address()));
  const std::string mapped = read_all(child.from[0]);
  const std::string sent = read_all(child.from[0]);
  ASSERT_TRUE(write_all(child.to[1], "bye"));
  ASSERT_EQ(exit_code_of(child.pid), 0) << "the child's check failed (exit code names which)";
  ASSERT_FALSE(sent.empty() || mapped.empty());
  const int n = std::stoi(sent);
  ASSERT_GT(n, 0);
  ASSERT_TRUE(end.sink.wait_for(static_cast<std::size_t>(n)));
  const auto got = end.sink.snapshot();
  for (int k = 0; k < n; ++k) {  // the contents make_message gave message k
    BufferPool scratch(PoolConfig{std::size_t{1} << 20, std::size_t{1} << 20});
    std::uint64_t want = 0;
    Message *m = make_message(scratch, size_of(k), static_cast<std::uint64_t>(k), 11, k, &want);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(got[k].sum, want) << "message " << k << " of " << got[k].length << " bytes";
    std::destroy_at(m);
    scratch.release(block_of(m), BlockState::kLibrary);
  }
  EXPECT_GT(std::stoull(mapped), 0u)
      << "no part was written through the mapped pool in " << n << " messages";
}

TEST(ShmMultiproc, ALentMessageIsReadWhereItLiesByAReceiverThatCan) {
  send_lent_to_child(false);
}

TEST(ShmMultiproc, ALentMessageIsCopiedForAReceiverThatCannotReadOurMemory) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root, to fork a child that drops to another user";
  send_lent_to_child(true);
}

}  // namespace
}  // namespace rocl::impl
