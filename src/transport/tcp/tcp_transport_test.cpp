// The TCP transport between two end-points of one process: sizes, order,
// concurrency, the job-secret handshake, hostile peers, a dying peer, caller
// progress and flow control.
#include "transport/tcp/tcp_transport.hpp"
#include "transport/transport_test_util.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "wire/message_header.hpp"

namespace rocl::impl {
namespace {

using namespace std::chrono_literals;

constexpr rocl_gid_t kUnknown = 404;

using transport_test::Arrival;
using transport_test::checksum;
using transport_test::RecordingSink;

struct LogSink {
  std::mutex mu;
  std::vector<std::string> lines;
  tcp::LogFn fn() {
    return [this](const std::string &s) {
      std::lock_guard lock(mu);
      lines.push_back(s);
    };
  }
  bool has(const std::string &part, std::chrono::milliseconds t = 3000ms) {
    const auto end = std::chrono::steady_clock::now() + t;
    do {
      {
        std::lock_guard lock(mu);
        for (auto &l : lines) {
          if (l.find(part) != std::string::npos) return true;
        }
      }
      std::this_thread::sleep_for(2ms);
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }
};

struct Node {
  Node(std::uint64_t instance, const JobSecret *secret, const tcp::Options &options = {})
      : pool(PoolConfig{std::size_t{1} << 30, std::size_t{2} << 20}) {
    sink.pool = &pool;
    TransportEnv env{&sink, instance, &pool, secret, ""};
    t = make_tcp_transport_with_log(env, log.fn(), options);
  }
  // A message of len bytes, filled from seed; block marked return_after_send.
  Message *make(std::size_t len, std::uint32_t seed, std::int32_t tag = 1) {
    BlockHeader *b = pool.allocate(len);
    EXPECT_NE(b, nullptr);
    b->state.store(BlockState::kLibrary);
    b->return_after_send = true;
    auto *p = reinterpret_cast<std::uint8_t *>(payload_of(b));
    std::uint32_t x = seed * 2654435761u + 1;
    for (std::size_t i = 0; i < len; ++i) {
      x = x * 1664525u + 1013904223u;
      p[i] = static_cast<std::uint8_t>(x >> 24);
    }
    if (len >= 4) std::memcpy(p, &seed, 4);
    Message *m = message_in(b);
    m->header = CoreHeader{77, tag, 3};
    m->data = p;
    m->length = len;
    return m;
  }
  BufferPool pool;
  RecordingSink sink;
  LogSink log;
  std::unique_ptr<TcpTransport> t;
};

TEST(TcpTransport, IsInTheRegistrationTableAndListensOnLoopback) {
  const TransportEntry *e = find_transport("tcp");
  ASSERT_NE(e, nullptr);
  RecordingSink sink;
  auto t = e->make(TransportEnv{&sink, 1});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name(), "tcp");
  EXPECT_EQ(t->address().rfind("tcp:127.0.0.1:", 0), 0u) << t->address();
  EXPECT_TRUE(t->reaches("tcp:10.0.0.1:5"));
  EXPECT_FALSE(t->reaches("pid:1/2"));
  EXPECT_EQ(t->progress(), 0);
}

TEST(TcpTransport, SizesBothWaysWithChecksums) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  ASSERT_TRUE(a.t && b.t);
  const std::size_t sizes[] = {0, 1, 4096, 8u << 20};
  std::vector<std::uint64_t> sums;
  for (std::size_t i = 0; i < 4; ++i) {
    Message *m = a.make(sizes[i], static_cast<std::uint32_t>(i));
    sums.push_back(checksum(m->data, m->length));
    ASSERT_EQ(a.t->send(2, b.t->address(), 100 + i, m), ROCL_OK);
    Message *r = b.make(sizes[i], static_cast<std::uint32_t>(i));
    ASSERT_EQ(b.t->send(1, a.t->address(), 200 + i, r), ROCL_OK);
  }
  ASSERT_TRUE(b.sink.wait_for(4));
  ASSERT_TRUE(a.sink.wait_for(4));
  for (std::size_t i = 0; i < 4; ++i) {
    const Arrival &x = b.sink.got[i];
    EXPECT_EQ(x.destination, 100 + i);
    EXPECT_EQ(x.length, sizes[i]);
    EXPECT_EQ(x.sum, sums[i]);
    EXPECT_EQ(x.source, 77u);
    EXPECT_EQ(x.tag, 1);
    EXPECT_EQ(x.domain, 3u);
    EXPECT_EQ(a.sink.got[i].destination, 200 + i);
    EXPECT_EQ(a.sink.got[i].sum, sums[i]);
  }
  // Every sent block went back to its pool, every received one too.
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (a.pool.stats().in_use_buffers != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(a.pool.stats().in_use_buffers, 0u);
}

TEST(TcpTransport, MessagesOver64MiBTravelAsFragments) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  const std::size_t len = (std::size_t{65} << 20) + 5;
  Message *m = a.make(len, 7);
  const std::uint64_t sum = checksum(m->data, len);
  ASSERT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_OK);
  ASSERT_EQ(a.t->send(2, b.t->address(), 6, a.make(3, 8)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(2, 8000ms));
  EXPECT_EQ(b.sink.got[0].length, len);
  EXPECT_EQ(b.sink.got[0].sum, sum);
  EXPECT_EQ(b.sink.got[1].destination, 6u);
}

TEST(TcpTransport, TenThousandSmallMessagesInOrder) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  constexpr std::uint32_t kN = 10000;
  for (std::uint32_t i = 0; i < kN; ++i) {
    ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(16, i)), ROCL_OK);
  }
  ASSERT_TRUE(b.sink.wait_for(kN));
  for (std::uint32_t i = 0; i < kN; ++i) {
    ASSERT_EQ(static_cast<std::uint32_t>(b.sink.got[i].first8), i);
  }
}

TEST(TcpTransport, FourThreadsOnOneConnectionKeepTheirOrder) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  constexpr std::uint32_t kPerThread = 2000;
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < kPerThread; ++i) {
        // Some large ones so that the socket fills and the queue is used.
        const std::size_t len = i % 100 == 0 ? 256 * 1024 : 32;
        ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(len, t << 24 | i, int(t))), ROCL_OK);
      }
    });
  }
  for (auto &th : threads) th.join();
  ASSERT_TRUE(b.sink.wait_for(4 * kPerThread));
  std::uint32_t next[4] = {};
  for (const Arrival &x : b.sink.got) {
    const auto v = static_cast<std::uint32_t>(x.first8);
    const std::uint32_t t = v >> 24;
    ASSERT_LT(t, 4u);
    ASSERT_EQ(x.tag, int(t));
    ASSERT_EQ(v & 0xffffff, next[t]++);
  }
}

TEST(TcpTransport, PeerWithAnotherSecretIsRefusedOnBothSides) {
  const JobSecret s1 = JobSecret::generate(), s2 = JobSecret::generate();
  Node a(1, &s1), b(2, &s2);
  Message *m = a.make(10, 1);
  EXPECT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("refused"), std::string::npos) << last_error();
  const std::string port = b.t->address().substr(4);
  EXPECT_TRUE(a.log.has("tcp: peer " + port + " refused: job secret proof did not verify"));
  EXPECT_TRUE(b.log.has("refused: job secret proof did not verify"));
  EXPECT_GE(a.t->stats().refused, 1u);
  EXPECT_GE(b.t->stats().refused, 1u);
  EXPECT_EQ(b.sink.count(), 0u);
  // The caller kept the message.
  a.pool.release(block_of(m), BlockState::kLibrary);
}

TEST(TcpTransport, UnknownDestinationIsLoggedAndFreed) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  ASSERT_EQ(a.t->send(2, b.t->address(), kUnknown, a.make(100, 1)), ROCL_OK);
  ASSERT_EQ(a.t->send(2, b.t->address(), 9, a.make(100, 2)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  EXPECT_TRUE(b.log.has("for unknown resource 0x0000000000000194"));
  EXPECT_EQ(b.t->stats().unknown_destination, 1u);
}

// A raw client socket connected to t's listener.
int raw_connect(const Transport &t) {
  const std::string addr = t.address();
  const auto colon = addr.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(addr.substr(colon + 1))));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool raw_read(int fd, void *p, std::size_t n) {
  auto *b = static_cast<std::uint8_t *>(p);
  while (n > 0) {
    const ssize_t r = ::recv(fd, b, n, 0);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Whether the other side closed fd (EOF) within 3 s.
bool closed_by_peer(int fd) {
  char c;
  const ssize_t r = ::recv(fd, &c, 1, 0);
  return r == 0 || (r < 0 && errno == ECONNRESET);
}

// Runs the connector's handshake by hand.
bool raw_handshake(int fd, const JobSecret &secret) {
  tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, 99, 0};
  if (::send(fd, &hello, sizeof hello, MSG_NOSIGNAL) != sizeof hello) return false;
  JobSecret::Challenge ch;
  if (!raw_read(fd, ch.data(), ch.size())) return false;
  const auto proof = secret.prove(tcp::kConnectLabel, ch);
  const auto mine = JobSecret::random_challenge();
  std::uint8_t answer[64];
  std::memcpy(answer, proof.data(), 32);
  std::memcpy(answer + 32, mine.data(), 32);
  if (::send(fd, answer, 64, MSG_NOSIGNAL) != 64) return false;
  std::uint8_t verdict[33];
  if (!raw_read(fd, verdict, 33) || verdict[0] != 0) return false;
  JobSecret::Digest theirs;
  std::memcpy(theirs.data(), verdict + 1, 32);
  return secret.verify(tcp::kAcceptLabel, mine, theirs);
}

wire::MessageHeader good_header(std::uint32_t len) {
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = wire::Kind::kEager;
  h.source = 5;
  h.destination = 6;
  h.tag = 0;
  h.message_id = 1;
  h.total_length = len;
  h.fragment_length = len;
  return h;
}

TEST(TcpTransport, GarbageBeforeTheHandshakeIsDropped) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret);
  const int fd = raw_connect(*b.t);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_GT(::send(fd, junk, sizeof junk, MSG_NOSIGNAL), 0);
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(b.log.has("refused: hello magic"));
  EXPECT_EQ(b.sink.count(), 0u);
}

TEST(TcpTransport, BadFramesAfterAGoodHandshakeDropOnlyThatConnection) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  ASSERT_EQ(a.t->send(2, b.t->address(), 9, a.make(10, 1)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));

  // Bad magic.
  int fd = raw_connect(*b.t);
  ASSERT_TRUE(raw_handshake(fd, secret));
  wire::MessageHeader h = good_header(4);
  h.magic = 0x1234;
  ASSERT_EQ(::send(fd, &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(b.log.has("magic 0x1234 is not"));

  // Oversize fragment_length.
  fd = raw_connect(*b.t);
  ASSERT_TRUE(raw_handshake(fd, secret));
  h = good_header(4);
  h.total_length = 1u << 30;
  h.fragment_length = 1u << 30;
  ASSERT_EQ(::send(fd, &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(b.log.has("fragment_length 1073741824 exceeds the limit"));

  // A good frame from the raw client is delivered.
  fd = raw_connect(*b.t);
  ASSERT_TRUE(raw_handshake(fd, secret));
  h = good_header(3);
  ASSERT_EQ(::send(fd, &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
  ASSERT_EQ(::send(fd, "abc", 3, MSG_NOSIGNAL), 3);
  ASSERT_TRUE(b.sink.wait_for(2));
  ::close(fd);

  // The good connection keeps working.
  ASSERT_EQ(a.t->send(2, b.t->address(), 9, a.make(10, 2)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(3));
  EXPECT_EQ(b.t->stats().dropped_connections, 2u);
}

TEST(TcpTransport, DestroyedPeerGivesEpeerWithoutHanging) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret);
  auto b = std::make_unique<Node>(2, &secret);
  const std::string addr = b->t->address();
  ASSERT_EQ(a.t->send(2, addr, 9, a.make(10, 1)), ROCL_OK);
  ASSERT_TRUE(b->sink.wait_for(1));
  std::atomic<bool> done{false};
  std::string why;
  std::thread sender([&] {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < end) {
      Message *m = a.make(1024, 2);
      const int rc = a.t->send(2, addr, 9, m);
      if (rc == ROCL_EPEER) {
        a.pool.release(block_of(m), BlockState::kLibrary);
        why = last_error();
        done = true;
        return;
      }
      ASSERT_EQ(rc, ROCL_OK);
      std::this_thread::sleep_for(100us);
    }
  });
  std::this_thread::sleep_for(20ms);
  b.reset();
  sender.join();
  EXPECT_TRUE(done.load());
  EXPECT_NE(why.find("127.0.0.1"), std::string::npos) << why;
}

// ---- Caller progress -------------------------------------------------------

// Polls t until sink holds n arrivals or the time is up.
bool progress_until(TcpTransport &t, RecordingSink &sink, std::size_t n,
                    std::chrono::milliseconds limit = 8000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (sink.count() < n) {
    if (std::chrono::steady_clock::now() > end) return false;
    t.progress();
  }
  return true;
}

// Sends seeds [from, to) from a to b's resource 5 (some large, so that frames
// span several reads).
void send_range(Node &a, const Node &b, std::uint32_t from, std::uint32_t to) {
  for (std::uint32_t i = from; i < to; ++i) {
    const std::size_t len = i % 16 == 0 ? 300 * 1024 : 64;
    ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(len, i)), ROCL_OK);
  }
}

void expect_seeds_in_order(RecordingSink &sink, std::uint32_t n) {
  const auto got = sink.snapshot();
  ASSERT_EQ(got.size(), n);
  for (std::uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(static_cast<std::uint32_t>(got[i].first8), i) << "arrival " << i;
  }
}

TEST(TcpTransport, APollingCallerReceivesWhileTheThreadStaysOffTheSockets) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  // Connect first: the handshake needs a driver on b, the test thread below.
  send_range(a, b, 0, 1);
  ASSERT_TRUE(b.sink.wait_for(1));

  b.t->poll_begin();
  std::this_thread::sleep_for(20ms);  // the thread, kicked out of epoll_wait, parks
  const std::uint64_t thread_before = b.t->stats().thread_events;
  constexpr std::uint32_t kN = 300;
  std::thread sender([&] { send_range(a, b, 1, kN); });
  EXPECT_TRUE(progress_until(*b.t, b.sink, kN));
  sender.join();
  EXPECT_EQ(b.t->stats().thread_events, thread_before) << "the thread touched the sockets";
  EXPECT_GT(b.t->stats().caller_events, 0u);

  // Hand back before sleeping: the thread takes over, nobody calls progress().
  b.t->poll_end(true);
  send_range(a, b, kN, 2 * kN);
  ASSERT_TRUE(b.sink.wait_for(2 * kN));
  EXPECT_GT(b.t->stats().thread_events, thread_before);
  expect_seeds_in_order(b.sink, 2 * kN);
}

TEST(TcpTransport, LazyHandBackStillDelivers) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  send_range(a, b, 0, 1);
  ASSERT_TRUE(b.sink.wait_for(1));
  for (std::uint32_t round = 1; round < 50; ++round) {
    b.t->poll_begin();
    std::thread sender([&] { send_range(a, b, round * 2 - 1, round * 2); });
    EXPECT_TRUE(progress_until(*b.t, b.sink, round * 2));
    sender.join();
    b.t->poll_end(false);  // the thread resumes within kParkMs, unwoken
    send_range(a, b, round * 2, round * 2 + 1);
    ASSERT_TRUE(b.sink.wait_for(round * 2 + 1)) << "round " << round;
  }
  expect_seeds_in_order(b.sink, 99);
}

// Threads that drive a transport until `done`; joined on destruction (also
// when an assertion returns early).
struct Drivers {
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  ~Drivers() {
    done = true;
    for (auto &t : threads) t.join();
  }
};

TEST(TcpTransport, ConcurrentProgressDeliversEachMessageOnceInOrder) {
  const JobSecret secret = JobSecret::generate();
  Node a1(1, &secret), a2(3, &secret), b(2, &secret);
  constexpr std::uint32_t kSenders = 4, kPerSender = 1500;
  std::vector<std::vector<std::uint64_t>> sums(kSenders, std::vector<std::uint64_t>(kPerSender));
  Drivers drivers;
  // One caller calls progress() bare; two run poll_begin/progress/poll_end
  // cycles, ending awake or about to sleep in turn. The thread drives too.
  drivers.threads.emplace_back([&] {
    while (!drivers.done) b.t->progress();
  });
  for (int k = 0; k < 2; ++k) {
    drivers.threads.emplace_back([&, k] {
      for (unsigned cycle = 0; !drivers.done; ++cycle) {
        b.t->poll_begin();
        for (int i = 0; i < 200; ++i) b.t->progress();
        b.t->poll_end((cycle + k) % 2 == 0);
      }
    });
  }
  std::vector<std::thread> senders;
  for (std::uint32_t s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      Node &a = s < 2 ? a1 : a2;
      for (std::uint32_t i = 0; i < kPerSender; ++i) {
        const std::size_t len = i % 64 == 0 ? 256 * 1024 : 16 + i % 200;
        Message *m = a.make(len, s << 24 | i, static_cast<std::int32_t>(s));
        sums[s][i] = checksum(m->data, m->length);
        ASSERT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_OK);
      }
    });
  }
  for (auto &t : senders) t.join();
  ASSERT_TRUE(b.sink.wait_for(kSenders * kPerSender, 30000ms));
  std::this_thread::sleep_for(20ms);  // a duplicate would show up now
  const auto got = b.sink.snapshot();
  ASSERT_EQ(got.size(), kSenders * kPerSender);
  std::uint32_t next[kSenders] = {};
  for (const Arrival &x : got) {
    const auto v = static_cast<std::uint32_t>(x.first8);
    const std::uint32_t s = v >> 24;
    ASSERT_LT(s, kSenders);
    ASSERT_EQ(x.tag, static_cast<std::int32_t>(s));
    ASSERT_EQ(v & 0xffffff, next[s]) << "sender " << s;
    ASSERT_EQ(x.sum, sums[s][next[s]]) << "sender " << s << " message " << next[s];
    ++next[s];
  }
  EXPECT_GT(b.t->stats().caller_events, 0u);
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
}

// ---- Flow control ----------------------------------------------------------

// A slow application: arrivals are held, and drain() releases them one at a
// time after a delay, recording each (checksum taken at release, so a block
// overwritten while held would show).
struct SlowSink : MessageSink {
  BufferPool *pool = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Message *> held;
  std::vector<Arrival> got;

  int deliver(rocl_gid_t destination, Message *msg) noexcept override {
    std::lock_guard lock(mu);
    held.push_back(msg);
    got.push_back(Arrival{destination, 0, 0, 0, 0, 0, 0});  // completed at release
    cv.notify_all();
    return ROCL_OK;
  }

  // Releases arrivals until n were released or the time is up.
  bool drain(std::size_t n, std::chrono::microseconds delay, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (std::size_t i = 0; i < n; ++i) {
      Message *m = nullptr;
      {
        std::unique_lock lock(mu);
        if (!cv.wait_until(lock, end, [&] { return !held.empty(); })) return false;
        m = held.front();
        held.pop_front();
      }
      std::this_thread::sleep_for(delay);
      Arrival a{0, 0, 0, 0, m->length, checksum(m->data, m->length), 0};
      std::memcpy(&a.first8, m->data, std::min<std::size_t>(8, m->length));
      BlockHeader *b = block_of(m);
      std::destroy_at(m);
      pool->release(b, BlockState::kLibrary);
      std::lock_guard lock(mu);
      a.destination = got[i].destination;
      got[i] = a;
    }
    return true;
  }

  std::size_t count() {
    std::lock_guard lock(mu);
    return got.size();
  }
};

// A receiver with a pool of cap_bytes and a SlowSink.
struct SlowNode {
  SlowNode(std::uint64_t instance, const JobSecret *secret, std::size_t cap_bytes)
      : pool(PoolConfig{cap_bytes, std::size_t{64} << 10}) {
    sink.pool = &pool;
    t = make_tcp_transport_with_log(TransportEnv{&sink, instance, &pool, secret, ""}, log.fn());
  }
  BufferPool pool;
  SlowSink sink;
  LogSink log;
  std::unique_ptr<TcpTransport> t;
};

std::size_t count_lines(LogSink &log, const std::string &part) {
  std::lock_guard lock(log.mu);
  std::size_t n = 0;
  for (auto &l : log.lines) n += l.find(part) != std::string::npos;
  return n;
}

TEST(TcpTransport, SlowReceiverPausesReadingAndTheSendQueueStaysBounded) {
  const JobSecret secret = JobSecret::generate();
  constexpr std::size_t kBound = std::size_t{3} << 20;
  Node a(1, &secret, tcp::Options{kBound});
  SlowNode b(2, &secret, std::size_t{4} << 20);  // two blocks for 1 MiB messages
  constexpr std::uint32_t kN = 64;
  constexpr std::size_t kLen = std::size_t{1} << 20;
  std::vector<std::uint64_t> sums(kN);
  std::thread sender([&] {
    for (std::uint32_t i = 0; i < kN; ++i) {
      Message *m = a.make(kLen, i);
      sums[i] = checksum(m->data, m->length);
      ASSERT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_OK);
    }
  });
  // Let the backlog build up: reading pauses, the socket buffers and the
  // sender's queue fill, send() waits.
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (a.t->stats().send_waits == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(b.sink.drain(kN, 2ms, 60000ms));
  sender.join();
  std::this_thread::sleep_for(20ms);  // a duplicate would show up now
  ASSERT_EQ(b.sink.count(), kN);
  for (std::uint32_t i = 0; i < kN; ++i) {
    EXPECT_EQ(b.sink.got[i].length, kLen);
    EXPECT_EQ(static_cast<std::uint32_t>(b.sink.got[i].first8), i);
    EXPECT_EQ(b.sink.got[i].sum, sums[i]) << "message " << i;
  }
  const tcp::Stats as = a.t->stats(), bs = b.t->stats();
  EXPECT_GT(as.send_waits, 0u);
  EXPECT_GT(as.peak_queued_bytes, 0u);
  EXPECT_LE(as.peak_queued_bytes, kBound);
  EXPECT_EQ(as.failed_sends, 0u);
  EXPECT_GT(bs.paused_reads, 0u);
  EXPECT_EQ(bs.dropped_connections, 0u);
  EXPECT_EQ(count_lines(b.log, "reading from it paused"), 1u);
  EXPECT_EQ(b.pool.stats().in_use_buffers, 0u);
}

TEST(TcpTransport, SendWaitingForRoomGetsEpeerWhenThePeerDies) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, tcp::Options{std::size_t{2} << 20});
  auto b = std::make_unique<SlowNode>(2, &secret, std::size_t{4} << 20);  // never drained
  const std::string addr = b->t->address();
  int rc = ROCL_OK;
  std::string why;
  std::thread sender([&] {
    for (std::uint32_t i = 0; rc == ROCL_OK && i < 1000; ++i) {
      Message *m = a.make(std::size_t{1} << 20, i);
      rc = a.t->send(2, addr, 5, m);
      if (rc != ROCL_OK) {
        why = last_error();
        a.pool.release(block_of(m), BlockState::kLibrary);  // the caller kept it
      }
    }
  });
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (a.t->stats().send_waits == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);  // the sender is now stuck waiting for room
  EXPECT_GT(b->t->stats().paused_reads, 0u);
  b.reset();
  sender.join();
  EXPECT_EQ(rc, ROCL_EPEER);
  EXPECT_NE(why.find(addr.substr(4)), std::string::npos) << why;
}

}  // namespace
}  // namespace rocl::impl
