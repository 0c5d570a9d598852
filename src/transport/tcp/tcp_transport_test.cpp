// The TCP transport between two end-points of one process: sizes, order,
// concurrency, the job-secret handshake, hostile peers, a dying peer, caller
// progress, flow control, rendezvous and the linger at shutdown.
#include "transport/tcp/tcp_transport.hpp"
#include "core/options.hpp"
#include "transport/transport_test_util.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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
#include "os/host.hpp"
#include "os/net.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "testing/fd_test_util.hpp"
#include "wire/message_header.hpp"
#include "wire/validate.hpp"

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

// "1.2.3.4:5" of "tcp:1.2.3.4:5[@<host id>]": how the log names a peer.
std::string ip_port(const std::string &address) {
  return address.substr(4, address.find('@') - 4);
}

struct Node {
  // rndv: the rendezvous threshold (0: never). linger: TransportEnv::linger_ms.
  // congestion: tcp::Options::congestion; tcp_rndv: its rendezvous_threshold.
  Node(std::uint64_t instance, const JobSecret *secret, const tcp::Options &options = {},
       std::size_t rndv = 0, std::uint32_t linger = 0, std::string congestion = "",
       std::size_t tcp_rndv = 0)
      : pool(PoolConfig{std::size_t{1} << 30, std::size_t{2} << 20}) {
    sink.pool = &pool;
    TransportEnv env{&sink, instance, &pool, secret};
    env.rendezvous_threshold = rndv;
    env.linger_ms = linger;
    tcp::Options with = options;
    with.congestion = split_list(congestion);
    with.rendezvous_threshold = tcp_rndv;
    t = make_tcp_transport_with_log(env, log.fn(), with);
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
  EXPECT_EQ(t->progress(nullptr), 0);
}

// A loopback address means this host: it carries the host id, and another
// host's loopback address is not reached (it would dial our own loopback).
TEST(TcpTransport, ALoopbackAddressReachesOnlyItsOwnHost) {
  RecordingSink sink;
  auto t = find_transport("tcp")->make(TransportEnv{&sink, 1});
  ASSERT_NE(t, nullptr);
  const std::string mine = t->address();
  EXPECT_EQ(mine.substr(mine.find('@') + 1), os::host_id()) << mine;
  EXPECT_TRUE(t->reaches(mine));
  EXPECT_TRUE(t->reaches("tcp:127.0.0.1:5@" + os::host_id()));
  EXPECT_FALSE(t->reaches("tcp:127.0.0.1:5@0123456789abcdef"));
  EXPECT_TRUE(t->reaches("tcp:10.201.0.2:5"));
}

// ROCL_TCP_BIND: an interface, an address, auto; a name that means nothing
// fails with a sentence naming the option.
TEST(TcpTransport, ListensWhereTheBindOptionSays) {
  const JobSecret secret = JobSecret::generate();
  tcp::Options on_lo;
  on_lo.bind_address = "lo";
  Node a(1, &secret, on_lo);
  ASSERT_TRUE(a.t);
  EXPECT_EQ(a.t->address().rfind("tcp:127.0.0.1:", 0), 0u) << a.t->address();
  tcp::Options automatic;
  automatic.bind_address = "auto";
  Node b(2, &secret, automatic);
  ASSERT_TRUE(b.t);
  in_addr expect{};
  ASSERT_TRUE(os::resolve_ipv4("auto", &expect));
  EXPECT_EQ(b.t->address().rfind("tcp:" + os::ipv4_text(expect) + ":", 0), 0u) << b.t->address();
  tcp::Options nowhere;
  nowhere.bind_address = "no-such-if0";
  Node c(3, &secret, nowhere);
  EXPECT_FALSE(c.t);
  EXPECT_NE(std::string(last_error()).find("ROCL_TCP_BIND='no-such-if0'"), std::string::npos)
      << last_error();
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

// The congestion control of every connected TCP socket of this process
// (listening ones and other descriptors skipped).
std::vector<std::string> connected_congestion() {
  std::vector<std::string> names;
  for (int fd = 0; fd < 4096; ++fd) {
    int type = 0, listening = 0, protocol = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof protocol;
    if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 ||
        protocol != IPPROTO_TCP) {
      continue;
    }
    len = sizeof listening;
    ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
    sockaddr_in peer{};
    socklen_t plen = sizeof peer;
    if (listening != 0 || ::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &plen) != 0) {
      continue;
    }
    char name[32] = {};
    len = sizeof name;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0) names.emplace_back(name);
  }
  return names;
}

// The system's default: what a new TCP socket starts with.
std::string system_congestion() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  char name[32] = {};
  socklen_t len = sizeof name;
  const bool got = fd >= 0 && ::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0;
  if (fd >= 0) ::close(fd);
  return got ? name : "";
}

TEST(TcpTransport, BothEndsOfAConnectionUseTheCongestionControlAsked) {
  // Not the system's default, so that a connection left alone would fail
  // the test; reno is always built in, cubic is Linux's default.
  const std::string want = system_congestion() == "reno" ? "cubic" : "reno";
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, 0, 0, want), b(2, &secret, {}, 0, 0, want);
  ASSERT_TRUE(a.t && b.t);
  Message *m = a.make(1000, 7);
  const std::uint64_t sum = checksum(m->data, m->length);
  ASSERT_EQ(a.t->send(2, b.t->address(), 100, m), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  EXPECT_EQ(b.sink.got[0].sum, sum);
  const std::vector<std::string> names = connected_congestion();
  ASSERT_EQ(names.size(), 2u) << "the connector's and the acceptor's socket";
  for (const std::string &n : names) EXPECT_EQ(n, want);
  EXPECT_EQ(a.t->stats().congestion_refused, 0u);
  EXPECT_EQ(b.t->stats().congestion_refused, 0u);
}

// A list: the first name the kernel accepts (an unprivileged process may
// be refused cubic where bbr is the default; reno is always allowed).
TEST(TcpTransport, TheFirstCongestionControlOfTheListTheKernelAcceptsIsUsed) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, 0, 0, "no-such-algo,,reno"), b(2, &secret, {}, 0, 0, "no-such-algo,,reno");
  ASSERT_TRUE(a.t && b.t);
  ASSERT_EQ(a.t->send(2, b.t->address(), 100, a.make(64, 1)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  const std::vector<std::string> names = connected_congestion();
  ASSERT_EQ(names.size(), 2u);
  for (const std::string &n : names) EXPECT_EQ(n, "reno");
  EXPECT_EQ(a.t->stats().congestion_refused + b.t->stats().congestion_refused, 0u);
  std::lock_guard lock(a.log.mu);
  for (const auto &l : a.log.lines)
    EXPECT_EQ(l.find("ROCL_TCP_CONGESTION"), std::string::npos) << l;
}

TEST(TcpTransport, ARefusedCongestionControlIsSaidOnceAndTheConnectionsWork) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, 0, 0, "no-such-algo"), b(2, &secret, {}, 0, 0, "no-such-algo");
  ASSERT_TRUE(a.t && b.t);
  for (std::uint32_t i = 0; i < 2; ++i) {
    Message *m = a.make(4096, i);
    ASSERT_EQ(a.t->send(2, b.t->address(), 100, m), ROCL_OK);
    Message *r = b.make(4096, i);
    ASSERT_EQ(b.t->send(1, a.t->address(), 200, r), ROCL_OK);
  }
  ASSERT_TRUE(b.sink.wait_for(2));
  ASSERT_TRUE(a.sink.wait_for(2));
  EXPECT_GE(a.t->stats().congestion_refused + b.t->stats().congestion_refused, 2u);
  EXPECT_TRUE(
      a.log.has("congestion control (ROCL_TCP_CONGESTION=no-such-algo) refused by the kernel: "
                "'no-such-algo': "));
  const std::string sys = system_congestion();
  for (const std::string &n : connected_congestion()) EXPECT_EQ(n, sys);
  std::lock_guard lock(a.log.mu);
  int said = 0;
  for (const auto &l : a.log.lines) said += l.find("ROCL_TCP_CONGESTION") != std::string::npos;
  EXPECT_EQ(said, 1) << "said once per transport";
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

// The acceptor answers on the connection its peer made: one connection
// carries both directions (and each answer the TCP acknowledgement of the
// message it answers), eager and rendezvous messages alike.
TEST(TcpTransport, OneConnectionCarriesBothDirections) {
  const JobSecret secret = JobSecret::generate();
  constexpr std::size_t kLarge = 256 * 1024;
  Node a(1, &secret, {}, 64 * 1024), b(2, &secret, {}, 64 * 1024);
  ASSERT_TRUE(a.t && b.t);
  ASSERT_EQ(a.t->send(2, b.t->address(), 100, a.make(8, 0)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  std::vector<std::uint64_t> to_a, to_b;
  for (std::uint32_t i = 1; i <= 40; ++i) {
    const std::size_t len = i % 4 == 0 ? kLarge : i;  // every 4th by rendezvous
    Message *m = b.make(len, i);
    to_a.push_back(checksum(m->data, m->length));
    ASSERT_EQ(b.t->send(1, a.t->address(), i, m), ROCL_OK);
    Message *r = a.make(len, i + 100);
    to_b.push_back(checksum(r->data, r->length));
    ASSERT_EQ(a.t->send(2, b.t->address(), i, r), ROCL_OK);
  }
  ASSERT_TRUE(a.sink.wait_for(40));
  ASSERT_TRUE(b.sink.wait_for(41));
  // (By destination: a stub pulled inside deliver lets the messages behind
  // it be recorded first.)
  std::vector<std::uint64_t> got_a(40), got_b(40);
  for (const Arrival &x : a.sink.got) got_a.at(x.destination - 1) = x.sum;
  for (std::size_t i = 1; i < b.sink.got.size(); ++i) {
    got_b.at(b.sink.got[i].destination - 1) = b.sink.got[i].sum;
  }
  EXPECT_EQ(got_a, to_a);
  EXPECT_EQ(got_b, to_b);
  EXPECT_EQ(a.t->stats().connects, 1u);
  EXPECT_EQ(b.t->stats().connects, 0u);
  EXPECT_EQ(a.t->stats().open_connections, 1u);
  EXPECT_EQ(b.t->stats().open_connections, 1u);
  EXPECT_EQ(b.t->stats().rendezvous_sends, 10u);
  EXPECT_EQ(a.t->stats().rendezvous_pulls, 10u);
}

// Both sides connect at once, from several threads each: every sender's
// messages still arrive in its order, and at most one connection per side.
TEST(TcpTransport, SimultaneousFirstSendsKeepEachSendersOrder) {
  const JobSecret secret = JobSecret::generate();
  for (int round = 0; round < 5; ++round) {
    Node a(1, &secret), b(2, &secret);
    ASSERT_TRUE(a.t && b.t);
    constexpr int kThreads = 2, kEach = 500;
    std::atomic<int> go{0};
    std::vector<std::thread> senders;
    for (int t = 0; t < kThreads; ++t) {
      for (Node *from : {&a, &b}) {
        Node *to = from == &a ? &b : &a;
        senders.emplace_back([&, from, to, t] {
          go.fetch_add(1);
          while (go.load() < 2 * kThreads) {
          }
          for (int i = 0; i < kEach; ++i) {
            // destination = thread + 1, first 4 bytes = sequence number
            Message *m = from->make(16, static_cast<std::uint32_t>(i));
            ASSERT_EQ(from->t->send(to == &a ? 1 : 2, to->t->address(), t + 1, m), ROCL_OK);
          }
        });
      }
    }
    for (auto &th : senders) th.join();
    ASSERT_TRUE(a.sink.wait_for(kThreads * kEach));
    ASSERT_TRUE(b.sink.wait_for(kThreads * kEach));
    for (Node *n : {&a, &b}) {
      std::vector<std::uint32_t> next(kThreads, 0);
      std::lock_guard lock(n->sink.mu);
      for (const Arrival &x : n->sink.got) {
        ASSERT_TRUE(x.destination >= 1 && x.destination <= static_cast<rocl_gid_t>(kThreads));
        EXPECT_EQ(static_cast<std::uint32_t>(x.first8), next[x.destination - 1]++)
            << "round " << round << ": thread " << x.destination << "'s messages out of order";
      }
      EXPECT_LE(n->t->stats().connects, 1u);
    }
  }
}

TEST(TcpTransport, PeerWithAnotherSecretIsRefusedOnBothSides) {
  const JobSecret s1 = JobSecret::generate(), s2 = JobSecret::generate();
  Node a(1, &s1), b(2, &s2);
  Message *m = a.make(10, 1);
  EXPECT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("refused"), std::string::npos) << last_error();
  const std::string port = ip_port(b.t->address());
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

using rocl::testing::read_exactly;

// Whether the other side closed fd (EOF) within 3 s.
bool closed_by_peer(int fd) {
  char c;
  const ssize_t r = ::recv(fd, &c, 1, 0);
  return r == 0 || (r < 0 && errno == ECONNRESET);
}

// Runs the connector's handshake by hand.
bool raw_handshake(int fd, const JobSecret &secret) {
  tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, 99, {}};
  if (::send(fd, &hello, sizeof hello, MSG_NOSIGNAL) != sizeof hello) return false;
  JobSecret::Challenge ch;
  if (!read_exactly(fd, ch.data(), ch.size())) return false;
  const auto proof = secret.prove(tcp::kConnectLabel, ch);
  const auto mine = JobSecret::random_challenge();
  std::uint8_t answer[64];
  std::memcpy(answer, proof.data(), 32);
  std::memcpy(answer + 32, mine.data(), 32);
  if (::send(fd, answer, 64, MSG_NOSIGNAL) != 64) return false;
  std::uint8_t verdict[33];
  if (!read_exactly(fd, verdict, 33) || verdict[0] != 0) return false;
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

TEST(TcpTransport, HelloWithABadAddressIsRefused) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret);
  const int fd = raw_connect(*b.t);
  tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, 99, {}};
  std::strcpy(hello.address, "tcp:nowhere");
  ASSERT_EQ(::send(fd, &hello, sizeof hello, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof hello));
  EXPECT_TRUE(b.log.has("hello address is not tcp:<ipv4>:<port>"));
  EXPECT_TRUE(closed_by_peer(fd));  // without a challenge
  ::close(fd);
}

// A recorder on the path sees one connection's proof; replayed on a new
// connection it answers the wrong challenge and is refused, and nothing of
// what follows it is taken.
TEST(TcpTransport, AReplayedProofIsRefused) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret);
  const tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, 99, {}};

  int fd = raw_connect(*b.t);
  ASSERT_EQ(::send(fd, &hello, sizeof hello, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof hello));
  JobSecret::Challenge first;
  ASSERT_TRUE(read_exactly(fd, first.data(), first.size()));
  const auto recorded = secret.prove(tcp::kConnectLabel, first);
  ::close(fd);

  fd = raw_connect(*b.t);
  ASSERT_EQ(::send(fd, &hello, sizeof hello, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof hello));
  JobSecret::Challenge second;
  ASSERT_TRUE(read_exactly(fd, second.data(), second.size()));
  EXPECT_NE(second, first);
  std::uint8_t answer[64];
  std::memcpy(answer, recorded.data(), 32);
  const auto mine = JobSecret::random_challenge();
  std::memcpy(answer + 32, mine.data(), 32);
  ASSERT_EQ(::send(fd, answer, 64, MSG_NOSIGNAL), 64);
  const wire::MessageHeader h = good_header(3);
  ::send(fd, &h, sizeof h, MSG_NOSIGNAL);
  ::send(fd, "abc", 3, MSG_NOSIGNAL);
  std::uint8_t verdict = 0;
  ASSERT_TRUE(read_exactly(fd, &verdict, 1));
  EXPECT_EQ(verdict, 1);  // refused
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(b.log.has("refused: job secret proof did not verify"));
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
    t.progress(nullptr);
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

// Connects a to b (seed 0 delivered by b's thread, which makes the
// handshake), then makes the test thread b's polling caller and waits until
// b's thread, kicked out of epoll_wait, has parked. Returns b's
// thread_events then: they must not grow while the caller drives.
std::uint64_t connect_then_poll(Node &a, Node &b) {
  send_range(a, b, 0, 1);
  EXPECT_TRUE(b.sink.wait_for(1));
  EXPECT_EQ(b.t->stats().open_connections, 1u);
  b.t->poll_begin();
  std::this_thread::sleep_for(20ms);
  return b.t->stats().thread_events;
}

TEST(TcpTransport, APollingCallerReceivesWhileTheThreadStaysOffTheSockets) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  const std::uint64_t thread_before = connect_then_poll(a, b);
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

// With one connection a polling caller reads it without epoll (one system
// call per message instead of two); every kEpollEvery-th drive still
// polls epoll, so a second peer's connection is accepted and served by the
// caller while the thread stays parked, and the first connection works on.
TEST(TcpTransport, APollingCallerOnOneConnectionStillAcceptsASecond) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret), c(3, &secret);
  const std::uint64_t thread_before = connect_then_poll(a, b);
  constexpr std::uint32_t kN = 200;
  std::thread sender([&] { send_range(c, b, 1, kN); });
  EXPECT_TRUE(progress_until(*b.t, b.sink, kN));
  sender.join();
  EXPECT_EQ(b.t->stats().open_connections, 2u);
  send_range(a, b, kN, kN + 50);
  EXPECT_TRUE(progress_until(*b.t, b.sink, kN + 50));
  EXPECT_EQ(b.t->stats().thread_events, thread_before) << "the thread touched the sockets";
  b.t->poll_end(false);
  expect_seeds_in_order(b.sink, kN + 50);
}

// Without a connection a polling caller has nothing to poll (no system call
// per round, which would slow shm polled next to tcp): progress() returns
// at once and the thread, left in epoll_wait, accepts the first connection.
// From then on the caller drives it.
TEST(TcpTransport, APollingCallerWithNoConnectionLeavesAcceptingToTheThread) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret), b(2, &secret);
  b.t->poll_begin();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(b.t->progress(nullptr), 0);
  EXPECT_EQ(b.t->stats().thread_events, 0u);
  std::thread sender([&] { send_range(a, b, 0, 100); });
  EXPECT_TRUE(progress_until(*b.t, b.sink, 100));
  sender.join();
  EXPECT_GT(b.t->stats().thread_events, 0u) << "the thread did not accept";
  EXPECT_GT(b.t->stats().caller_events, 0u);
  b.t->poll_end(false);
  expect_seeds_in_order(b.sink, 100);
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
    while (!drivers.done) b.t->progress(nullptr);
  });
  for (int k = 0; k < 2; ++k) {
    drivers.threads.emplace_back([&, k] {
      for (unsigned cycle = 0; !drivers.done; ++cycle) {
        b.t->poll_begin();
        for (int i = 0; i < 200; ++i) b.t->progress(nullptr);
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
  std::size_t released = 0;  // got[0, released) are complete

  int deliver(rocl_gid_t destination, Message *msg, const Waiter *) noexcept override {
    std::lock_guard lock(mu);
    held.push_back(msg);
    got.push_back(Arrival{destination, 0, 0, 0, 0, 0, 0});  // completed at release
    cv.notify_all();
    return ROCL_OK;
  }

  // Releases n more arrivals (false if the time is up first).
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
      const std::size_t k = released++;
      a.destination = got[k].destination;
      got[k] = a;
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
    t = make_tcp_transport_with_log(TransportEnv{&sink, instance, &pool, secret}, log.fn());
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

// A connection paused by a polling caller is retried by the thread once the
// caller stops polling. The thread sat in epoll_wait without a timeout (no
// connection paused then); the caller's poll_begin() and its pause kicked it,
// and before the kicks had a set of the thread's own, the caller's next drive
// read them first: the thread slept on, nobody retried, and the message
// stayed unread after the pool freed up (CI: exit_while_paused_tcp hung).
TEST(TcpTransport, APauseSeenByAPollingCallerIsRetriedByTheThreadLater) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret);
  SlowNode b(2, &secret, std::size_t{4} << 20);
  ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(8, 0)), ROCL_OK);  // connects
  ASSERT_TRUE(b.sink.drain(1, 0us, 5000ms));
  {  // and b to a: with two connections a caller's every drive asks epoll
    BlockHeader *blk = b.pool.allocate(8);
    ASSERT_NE(blk, nullptr);
    blk->state.store(BlockState::kLibrary);
    blk->return_after_send = true;
    Message *m = message_in(blk);
    m->header = CoreHeader{78, 1, 3};
    m->data = payload_of(blk);
    m->length = 8;
    ASSERT_EQ(b.t->send(1, a.t->address(), 6, m), ROCL_OK);
    ASSERT_TRUE(a.sink.wait_for(1, 5000ms));
  }
  // The thread wins the race for a kick now and then: ten rounds (the bug
  // showed in about one round in five).
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<BlockHeader *> taken;  // every block a 24 KiB message could use
    while (BlockHeader *blk = b.pool.allocate(24 << 10)) taken.push_back(blk);
    ASSERT_FALSE(taken.empty());
    std::this_thread::sleep_for(20ms);  // b's thread now waits in epoll_wait
    const std::uint64_t paused = b.t->stats().paused_reads;
    b.t->poll_begin();
    (void)b.t->progress(nullptr);  // what would have read the kick of poll_begin()
    ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(24 << 10, 1)), ROCL_OK);
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (b.t->stats().paused_reads == paused && std::chrono::steady_clock::now() < end) {
      (void)b.t->progress(nullptr);
    }
    ASSERT_GT(b.t->stats().paused_reads, paused) << "the caller never paused the connection";
    for (int i = 0; i < 100; ++i) (void)b.t->progress(nullptr);  // and would have read that kick
    b.t->poll_end(true);
    for (BlockHeader *blk : taken) b.pool.release(blk, BlockState::kUser);
    b.pool.flush_thread_cache();
    ASSERT_TRUE(b.sink.drain(1, 0us, 5000ms)) << "the paused connection was never retried";
  }
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
}

// Teardown's first step (transport.hpp: flush) waits while bytes are queued
// for a receiver that does not read, until its deadline; once the receiver
// drains, it returns.
//
// The sender sends until the drainer starts, not a fixed count: loopback's
// receive buffer grows up to net.ipv4.tcp_rmem's maximum (32 MiB on Debian
// 12), and a fixed 32 MiB sometimes all fit in the two sockets with the
// queue never full (CI under TSan: "no backlog"); stopping at the first
// wait instead let the growing buffers take the queue before the flush.
TEST(TcpTransport, FlushWaitsWhileBytesAreQueued) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, tcp::Options{std::size_t{3} << 20});
  SlowNode b(2, &secret, std::size_t{4} << 20);
  constexpr std::uint32_t kMax = 256;  // 256 MiB: more than any socket buffers hold
  std::atomic<std::uint32_t> sent{0};
  std::atomic<bool> sender_done{false}, draining{false};
  std::thread sender([&] {
    // A send that waits returns only once the drainer below makes room.
    while (sent.load() < kMax && !draining.load()) {
      ASSERT_EQ(a.t->send(2, b.t->address(), 5, a.make(std::size_t{1} << 20, sent.load())),
                ROCL_OK);
      sent.fetch_add(1);
    }
    sender_done.store(true);
  });
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (a.t->stats().send_waits == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GT(a.t->stats().send_waits, 0u) << "no backlog after " << sent.load() << " MiB sent";
  // Let the socket buffers settle (they may still grow and take the queue
  // for a moment, which the sender refills); then the sender waits on a
  // queue that cannot drain.
  std::this_thread::sleep_for(200ms);
  auto t0 = std::chrono::steady_clock::now();
  a.t->flush(t0 + 200ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms) << "returned with bytes queued";
  draining.store(true);
  std::thread drainer([&] {  // until every message sent was released
    const auto limit = std::chrono::steady_clock::now() + 60s;
    std::size_t released = 0;
    while (!sender_done.load() || released < sent.load()) {
      if (std::chrono::steady_clock::now() > limit) {
        ADD_FAILURE() << released << " of " << sent.load() << " messages arrived in 60 s";
        return;
      }
      released += b.sink.drain(1, 0ms, 100ms) ? 1 : 0;  // re-checks sender_done
    }
  });
  sender.join();
  t0 = std::chrono::steady_clock::now();
  a.t->flush(t0 + 60s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s) << "did not return once drained";
  drainer.join();
  EXPECT_EQ(b.sink.count(), sent.load());
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

// ---- Rendezvous ------------------------------------------------------------

constexpr std::size_t kRndv = 32 * 1024;  // the threshold of the nodes below

// Waits until pool's bytes in use are back to `baseline`.
bool pool_back_to(BufferPool &pool, std::size_t baseline,
                  std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pool.flush_thread_cache();
    if (pool.stats().in_use_bytes <= baseline) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
}

// Waits until pred() holds (5 s at most).
template <class Pred>
bool eventually(Pred pred) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Waits until sink has seen n stubs.
bool stubs_seen(RecordingSink &sink, int n, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (sink.stubs_seen.load() < n) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The oldest kept stub (nullptr if none).
Message *take_stub(RecordingSink &sink) {
  std::lock_guard lock(sink.mu);
  if (sink.stubs.empty()) return nullptr;
  Message *m = sink.stubs.front();
  sink.stubs.erase(sink.stubs.begin());
  return m;
}

// Pulls stub; returns the message's seed (its first 4 bytes) and checksum.
struct Pulled {
  int rc;
  std::uint32_t seed = 0;
  std::uint64_t sum = 0;
  std::size_t length = 0;
};
Pulled pull_and_free(Message *stub, BufferPool &pool) {
  Message *real = nullptr;
  Pulled r{rendezvous_transport(stub)->pull(stub, &real)};
  if (r.rc != ROCL_OK) return r;
  EXPECT_EQ(block_of(real)->state.load(), BlockState::kLibrary);
  std::memcpy(&r.seed, real->data, 4);
  r.sum = checksum(real->data, real->length);
  r.length = real->length;
  BlockHeader *b = block_of(real);
  std::destroy_at(real);
  pool.release(b, BlockState::kLibrary);
  return r;
}

void discard_all(RecordingSink &sink) {
  while (Message *m = take_stub(sink)) rendezvous_transport(m)->discard(m);
}

TEST(TcpRendezvous, LargeMessagesArePulledWithChecksums) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  a.pool.flush_thread_cache();
  const std::size_t baseline = a.pool.stats().in_use_bytes;
  // Rendezvous from 32 KiB, up to 64 MiB (one data frame) and past it (two);
  // below the threshold and empty: eager.
  const std::size_t sizes[] = {kRndv,
                               100000,
                               std::size_t{1} << 20,
                               std::size_t{8} << 20,
                               std::size_t{64} << 20,
                               kRndv - 1,
                               (std::size_t{65} << 20) + 5,
                               0};
  constexpr int kStubs = 6;
  std::vector<std::uint64_t> sums;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    Message *m = a.make(sizes[i], static_cast<std::uint32_t>(i), static_cast<std::int32_t>(i));
    sums.push_back(checksum(m->data, m->length));
    ASSERT_EQ(a.t->send(2, b.t->address(), 100 + i, m), ROCL_OK) << last_error();
  }
  // The sink pulls each stub at once, inside deliver on b's driver.
  ASSERT_TRUE(b.sink.wait_for(std::size(sizes), 30000ms));
  EXPECT_EQ(b.sink.stubs_seen.load(), kStubs);
  std::vector<int> seen(std::size(sizes), 0);
  for (const Arrival &x : b.sink.snapshot()) {
    ASSERT_GE(x.destination, 100u);
    const std::size_t i = x.destination - 100;
    ASSERT_LT(i, std::size(sizes));
    ++seen[i];
    EXPECT_EQ(x.length, sizes[i]) << i;
    EXPECT_EQ(x.sum, sums[i]) << i;
    EXPECT_EQ(x.tag, static_cast<int>(i));
    EXPECT_EQ(x.source, 77u);
    EXPECT_EQ(x.domain, 3u);
  }
  for (std::size_t i = 0; i < std::size(sizes); ++i) EXPECT_EQ(seen[i], 1) << i;
  const tcp::Stats as = a.t->stats(), bs = b.t->stats();
  EXPECT_EQ(as.rendezvous_sends, std::uint64_t{kStubs});
  EXPECT_EQ(as.failed_sends, 0u);
  EXPECT_EQ(bs.rendezvous_stubs, std::uint64_t{kStubs});
  EXPECT_EQ(bs.rendezvous_pulls, std::uint64_t{kStubs});
  EXPECT_EQ(bs.dropped_connections, 0u);
  EXPECT_TRUE(pool_back_to(a.pool, baseline)) << "the sender never got its buffers back";
  EXPECT_EQ(b.pool.stats().in_use_buffers, 0u);  // stubs and messages all released
}

// With the core's thresholds (rendezvous 4M, tcp's own 1M): a 1 MiB pool
// buffer goes eagerly, the same from the application's memory (the core's
// copy, msg->rendezvous) by rendezvous; from 4 MiB both do.
TEST(TcpRendezvous, TcpsOwnThresholdAppliesToMessagesFromTheApplicationsMemory) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, 4u << 20, 0, "", 1u << 20), b(2, &secret, {}, 4u << 20, 0, "", 1u << 20);
  ASSERT_TRUE(a.t && b.t);
  struct Case {
    std::size_t len;
    bool from_app;
    std::uint64_t rendezvous_after;
  };
  const Case cases[] = {{1u << 20, false, 0}, {1u << 20, true, 1}, {4u << 20, false, 2}};
  std::size_t arrived = 0;
  for (const Case &c : cases) {
    Message *m = a.make(c.len, static_cast<std::uint32_t>(c.len) + c.from_app);
    m->rendezvous = c.from_app;
    const std::uint64_t sum = checksum(m->data, m->length);
    ASSERT_EQ(a.t->send(2, b.t->address(), 100, m), ROCL_OK);
    ASSERT_TRUE(b.sink.wait_for(++arrived));
    EXPECT_EQ(b.sink.got[arrived - 1].sum, sum) << c.len << " bytes, from_app " << c.from_app;
    EXPECT_EQ(a.t->stats().rendezvous_sends, c.rendezvous_after)
        << c.len << " bytes, from_app " << c.from_app;
  }
}

TEST(TcpRendezvous, StubsPulledByReceivingThreadsInOrderAndConcurrently) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  constexpr std::uint32_t kN = 48, kInOrder = 16;
  std::vector<std::uint64_t> sums(kN);
  std::vector<std::size_t> lens(kN);
  for (std::uint32_t i = 0; i < kN; ++i) {
    lens[i] = kRndv + i * 40000;
    Message *m = a.make(lens[i], i);
    sums[i] = checksum(m->data, m->length);
    ASSERT_EQ(a.t->send(2, b.t->address(), 5, m), ROCL_OK) << last_error();
  }
  ASSERT_TRUE(stubs_seen(b.sink, kN));
  EXPECT_EQ(b.sink.count(), 0u) << "a message came without being pulled";
  // The test thread pulls the first ones: stubs keep the order sent.
  for (std::uint32_t i = 0; i < kInOrder; ++i) {
    Message *stub = take_stub(b.sink);
    ASSERT_NE(stub, nullptr);
    EXPECT_TRUE(stub->rendezvous);
    EXPECT_EQ(stub->length, lens[i]);
    const Pulled p = pull_and_free(stub, b.pool);
    ASSERT_EQ(p.rc, ROCL_OK) << last_error();
    EXPECT_EQ(p.seed, i);
    EXPECT_EQ(p.sum, sums[i]) << i;
  }
  // Four threads pull the rest at once.
  std::mutex mu;
  std::vector<int> seen(kN, 0);
  std::vector<std::thread> pullers;
  for (int t = 0; t < 4; ++t) {
    pullers.emplace_back([&] {
      while (Message *stub = take_stub(b.sink)) {
        const Pulled p = pull_and_free(stub, b.pool);
        ASSERT_EQ(p.rc, ROCL_OK) << last_error();
        ASSERT_LT(p.seed, kN);
        EXPECT_EQ(p.sum, sums[p.seed]) << p.seed;
        std::lock_guard lock(mu);
        ++seen[p.seed];
      }
    });
  }
  for (auto &t : pullers) t.join();
  for (std::uint32_t i = kInOrder; i < kN; ++i) EXPECT_EQ(seen[i], 1) << i;
  EXPECT_EQ(b.t->stats().rendezvous_pulls, std::uint64_t{kN});
  EXPECT_EQ(a.t->stats().peak_parked, std::uint64_t{kN});
  EXPECT_EQ(a.t->stats().rendezvous_waits, 0u);
}

TEST(TcpRendezvous, DiscardedStubGivesTheSenderItsBufferBack) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  a.pool.flush_thread_cache();
  const std::size_t baseline = a.pool.stats().in_use_bytes;
  ASSERT_EQ(a.t->send(2, b.t->address(), 21, a.make(std::size_t{1} << 20, 1)), ROCL_OK);
  ASSERT_TRUE(stubs_seen(b.sink, 1));
  EXPECT_GT(a.pool.stats().in_use_bytes, baseline) << "the payload must wait at the sender";
  Message *stub = take_stub(b.sink);
  ASSERT_NE(stub, nullptr);
  EXPECT_EQ(stub->length, std::size_t{1} << 20);
  rendezvous_transport(stub)->discard(stub);
  EXPECT_TRUE(pool_back_to(a.pool, baseline)) << "a discard must release the sender's buffer";
  EXPECT_EQ(b.t->stats().rendezvous_discards, 1u);
  EXPECT_EQ(a.t->stats().failed_sends, 0u);
  EXPECT_EQ(b.pool.stats().in_use_buffers, 0u);  // the stub's block too
  EXPECT_EQ(b.sink.count(), 0u);
  // The connection goes on.
  b.sink.keep_stubs = false;
  ASSERT_EQ(a.t->send(2, b.t->address(), 21, a.make(std::size_t{1} << 20, 2)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  EXPECT_EQ(b.sink.snapshot()[0].length, std::size_t{1} << 20);
}

TEST(TcpRendezvous, UnknownDestinationIsLoggedAndTheSenderLetGo) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  a.pool.flush_thread_cache();
  const std::size_t baseline = a.pool.stats().in_use_bytes;
  ASSERT_EQ(a.t->send(2, b.t->address(), kUnknown, a.make(kRndv, 1)), ROCL_OK);
  EXPECT_TRUE(b.log.has("rendezvous message from 127.0.0.1:"));
  EXPECT_TRUE(b.log.has("for unknown resource 0x0000000000000194"));
  EXPECT_TRUE(pool_back_to(a.pool, baseline));
  EXPECT_EQ(b.t->stats().unknown_destination, 1u);
  EXPECT_EQ(b.t->stats().rendezvous_discards, 1u);
}

// Waiting instead of going eager (not the default: rocl_send never waits
// for a receive): a receiver that pulls nothing holds at most 64 stubs of
// one sender; the next send waits for a pull.
const tcp::Options kWaitWhenParkingFull{tcp::kDefaultMaxQueuedBytes, 0, false};

TEST(TcpRendezvous, DefaultGoesEagerWhenTheParkingIsFull) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  for (std::uint32_t i = 0; i <= tcp::kMaxParkedMessages; ++i) {
    ASSERT_EQ(a.t->send(2, b.t->address(), 21, a.make(64 * 1024, i)), ROCL_OK);
  }
  ASSERT_TRUE(stubs_seen(b.sink, 64));
  ASSERT_TRUE(b.sink.wait_for(1));  // the 65th came whole
  EXPECT_EQ(a.t->stats().rendezvous_eager, 1u);
  EXPECT_EQ(a.t->stats().rendezvous_waits, 0u);
  discard_all(b.sink);
}

TEST(TcpRendezvous, SenderWaitsWhenTheReceiverPullsNothing) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, kWaitWhenParkingFull, kRndv), b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  for (std::uint32_t i = 0; i < tcp::kMaxParkedMessages; ++i) {
    ASSERT_EQ(a.t->send(2, b.t->address(), 21, a.make(64 * 1024, i)), ROCL_OK);
  }
  std::atomic<bool> sent{false};
  std::thread late([&] {
    EXPECT_EQ(a.t->send(2, b.t->address(), 21, a.make(64 * 1024, 64)), ROCL_OK);
    sent = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(sent.load()) << "65 messages parked at once: no flow control";
  ASSERT_TRUE(stubs_seen(b.sink, 64));
  EXPECT_EQ(a.t->stats().peak_parked, 64u);
  EXPECT_EQ(a.t->stats().rendezvous_waits, 1u);
  Message *first = take_stub(b.sink);
  ASSERT_NE(first, nullptr);
  const Pulled p = pull_and_free(first, b.pool);
  ASSERT_EQ(p.rc, ROCL_OK) << last_error();
  EXPECT_EQ(p.seed, 0u);  // the first one sent
  late.join();
  EXPECT_TRUE(sent.load());
  ASSERT_TRUE(stubs_seen(b.sink, 65));
  EXPECT_EQ(a.t->stats().peak_parked, 64u);
  discard_all(b.sink);
}

// The byte bound, and the option to go eager instead of waiting.
TEST(TcpRendezvous, ParkedBytesAreBoundedTooOrGoEagerWhenAsked) {
  const JobSecret secret = JobSecret::generate();
  constexpr std::size_t kLen = 256 * 1024;
  for (const bool eager : {false, true}) {
    SCOPED_TRACE(eager ? "eager when full" : "wait when full");
    Node a(1, &secret, tcp::Options{tcp::kDefaultMaxQueuedBytes, 4 * kLen, eager}, kRndv);
    Node b(2, &secret, {}, kRndv);
    b.sink.keep_stubs = true;
    for (std::uint32_t i = 0; i < 4; ++i) {
      ASSERT_EQ(a.t->send(2, b.t->address(), 21, a.make(kLen, i)), ROCL_OK);
    }
    std::atomic<bool> sent{false};
    std::thread late([&] {
      EXPECT_EQ(a.t->send(2, b.t->address(), 21, a.make(kLen, 4)), ROCL_OK);
      sent = true;
    });
    ASSERT_TRUE(stubs_seen(b.sink, 4));
    if (eager) {
      late.join();
      ASSERT_TRUE(b.sink.wait_for(1));  // a whole message, not a stub
      EXPECT_EQ(b.sink.snapshot()[0].length, kLen);
      EXPECT_EQ(a.t->stats().rendezvous_eager, 1u);
      EXPECT_EQ(a.t->stats().rendezvous_waits, 0u);
    } else {
      std::this_thread::sleep_for(150ms);
      EXPECT_FALSE(sent.load()) << "more than max_parked_bytes parked";
      const Pulled p = pull_and_free(take_stub(b.sink), b.pool);
      EXPECT_EQ(p.rc, ROCL_OK);
      late.join();
      ASSERT_TRUE(stubs_seen(b.sink, 5));
      EXPECT_EQ(a.t->stats().rendezvous_waits, 1u);
    }
    EXPECT_EQ(a.t->stats().peak_parked, 4u);
    discard_all(b.sink);
  }
}

TEST(TcpRendezvous, SendWaitingForParkingGetsEpeerWhenThePeerDies) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, kWaitWhenParkingFull, kRndv);
  auto b = std::make_unique<Node>(2, &secret, tcp::Options{}, kRndv);
  b->sink.keep_stubs = true;
  const std::string addr = b->t->address();
  for (std::uint32_t i = 0; i < tcp::kMaxParkedMessages; ++i) {
    ASSERT_EQ(a.t->send(2, addr, 21, a.make(kRndv, i)), ROCL_OK);
  }
  int rc = ROCL_OK;
  std::string why;
  Message *m = a.make(kRndv, 64);
  std::thread late([&] {
    rc = a.t->send(2, addr, 21, m);
    if (rc != ROCL_OK) why = last_error();
  });
  ASSERT_TRUE(stubs_seen(b->sink, 64));
  std::this_thread::sleep_for(50ms);
  b.reset();
  late.join();
  EXPECT_EQ(rc, ROCL_EPEER);
  EXPECT_NE(why.find(addr), std::string::npos) << why;
  a.pool.release(block_of(m), BlockState::kLibrary);  // the caller kept it
  EXPECT_TRUE(pool_back_to(a.pool, 0)) << "the parked messages must be failed and released";
  EXPECT_TRUE(eventually([&] { return a.t->stats().failed_sends == 64; }));
}

// A request frame for a message of len bytes, as a peer's transport writes it.
void raw_request(int fd, std::uint64_t len, std::uint64_t cookie, std::uint64_t address = 0) {
  wire::MessageHeader h = good_header(0);
  h.kind = wire::Kind::kRendezvousRequest;
  h.message_id = cookie;
  h.total_length = len;
  h.fragment_length = sizeof(wire::RendezvousBody);
  const wire::RendezvousBody body{address, cookie};
  ASSERT_EQ(::send(fd, &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
  ASSERT_EQ(::send(fd, &body, sizeof body, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof body));
}

// The first data frame header of a pulled message (its payload follows).
wire::MessageHeader data_header(std::uint64_t len, std::uint64_t cookie, std::uint32_t first) {
  wire::MessageHeader h = good_header(0);
  h.kind = wire::Kind::kFragment;
  h.message_id = cookie;
  h.total_length = len;
  h.fragment_length = first;
  return h;
}

TEST(TcpRendezvous, PullGetsEpeerNamingThePeerWhenItDiesMidway) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  const std::size_t baseline = b.pool.stats().in_use_bytes;
  const int fd = raw_connect(*b.t);
  ASSERT_TRUE(raw_handshake(fd, secret));
  sockaddr_in me{};
  socklen_t mlen = sizeof me;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&me), &mlen);
  const std::string who = "127.0.0.1:" + std::to_string(ntohs(me.sin_port));
  constexpr std::uint64_t kLen = 1 << 20, kCookie = 77;
  raw_request(fd, kLen, kCookie);
  ASSERT_TRUE(stubs_seen(b.sink, 1));
  Message *stub = take_stub(b.sink);
  ASSERT_NE(stub, nullptr);
  Pulled p{ROCL_OK};
  std::string why;
  std::thread puller([&] {
    p = pull_and_free(stub, b.pool);
    why = last_error();
  });
  // The pull asks for the data with a reply naming the request.
  wire::MessageHeader r{};
  ASSERT_TRUE(read_exactly(fd, &r, sizeof r));
  EXPECT_EQ(r.kind, wire::Kind::kRendezvousReply);
  EXPECT_EQ(r.message_id, kCookie);
  EXPECT_EQ(r.total_length, kLen);
  EXPECT_EQ(r.fragment_length, 0u);
  EXPECT_EQ(r.source, 6u);  // the request's destination
  EXPECT_EQ(r.destination, 5u);
  EXPECT_EQ(wire::validate_header(r, wire::Limits{}, "test"), ROCL_OK) << last_error();
  // Part of the data, then the peer dies.
  const wire::MessageHeader d = data_header(kLen, kCookie, kLen);
  ASSERT_EQ(::send(fd, &d, sizeof d, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof d));
  std::vector<char> part(1000, 'x');
  ASSERT_EQ(::send(fd, part.data(), part.size(), MSG_NOSIGNAL), 1000);
  std::this_thread::sleep_for(50ms);
  ::close(fd);
  puller.join();
  EXPECT_EQ(p.rc, ROCL_EPEER);
  EXPECT_NE(why.find("tcp: peer " + who + " went away while its 1048576-byte rendezvous message"),
            std::string::npos)
      << why;
  EXPECT_TRUE(pool_back_to(b.pool, baseline)) << "the pull's block must be released";
}

TEST(TcpRendezvous, PullOfAStubWhosePeerIsGoneFailsAtOnce) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  const int fd = raw_connect(*b.t);
  ASSERT_TRUE(raw_handshake(fd, secret));
  raw_request(fd, 100000, 5);
  ASSERT_TRUE(stubs_seen(b.sink, 1));
  ::close(fd);
  std::this_thread::sleep_for(50ms);  // the connection is dropped
  const Pulled p = pull_and_free(take_stub(b.sink), b.pool);
  EXPECT_EQ(p.rc, ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("went away before its 100000-byte rendezvous message"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(b.pool.stats().in_use_buffers, 0u);
}

TEST(TcpRendezvous, BadRendezvousFramesDropTheConnection) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  const auto expect_dropped = [&](const std::string &words, auto &&send_frames) {
    const int fd = raw_connect(*b.t);
    ASSERT_TRUE(raw_handshake(fd, secret));
    send_frames(fd);
    EXPECT_TRUE(closed_by_peer(fd)) << words;
    ::close(fd);
    EXPECT_TRUE(b.log.has(words)) << words;
  };
  expect_dropped("rendezvous request address 0x0000000000000007 is not 0",
                 [](int fd) { raw_request(fd, 100000, 1, 7); });
  expect_dropped("rendezvous request cookie 3 differs from its message_id 4", [](int fd) {
    wire::MessageHeader h = good_header(0);
    h.kind = wire::Kind::kRendezvousRequest;
    h.message_id = 4;
    h.total_length = 100000;
    h.fragment_length = sizeof(wire::RendezvousBody);
    const wire::RendezvousBody body{0, 3};
    ::send(fd, &h, sizeof h, MSG_NOSIGNAL);
    ::send(fd, &body, sizeof body, MSG_NOSIGNAL);
  });
  // (wire validation: the 16-byte body does not fit a 0-byte message)
  expect_dropped("fragment_offset 0 + fragment_length 16 exceeds total_length 0",
                 [](int fd) { raw_request(fd, 0, 1); });
  // Data before any pull asked for it (the stub is kept, not pulled).
  expect_dropped("data for rendezvous cookie 9: no pull has asked for it", [&](int fd) {
    raw_request(fd, 100000, 9);
    ASSERT_TRUE(stubs_seen(b.sink, 1));
    const wire::MessageHeader d = data_header(100000, 9, 100000);
    ::send(fd, &d, sizeof d, MSG_NOSIGNAL);
  });
  // A second request with a cookie in use.
  expect_dropped("cookie 11 is already in use", [&](int fd) {
    raw_request(fd, 100000, 11);
    raw_request(fd, 100000, 11);
  });
  // A reply for nothing we parked on that connection.
  expect_dropped("names no rendezvous request waiting on this connection", [](int fd) {
    wire::MessageHeader h = good_header(0);
    h.kind = wire::Kind::kRendezvousReply;
    h.total_length = 100;
    ::send(fd, &h, sizeof h, MSG_NOSIGNAL);
  });
  EXPECT_EQ(b.t->stats().dropped_connections, 6u);
  // The stubs of dropped connections can only fail; the transport goes on.
  while (Message *s = take_stub(b.sink)) EXPECT_EQ(pull_and_free(s, b.pool).rc, ROCL_EPEER);
  Node a(1, &secret, {}, kRndv);
  b.sink.keep_stubs = false;
  ASSERT_EQ(a.t->send(2, b.t->address(), 9, a.make(kRndv, 1)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
}

// A fake peer: a listening socket whose connections run the acceptor's side
// of the handshake by hand, so that a test can answer a sender's
// rendezvous requests itself.
struct RawAcceptor {
  int lfd = -1;
  std::string address;
  RawAcceptor() {
    lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    EXPECT_EQ(::bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(lfd, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len);
    address = "tcp:127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  }
  ~RawAcceptor() { ::close(lfd); }

  // Accepts one connection and answers its handshake: the fd, or -1.
  int accept_one(const JobSecret &secret) {
    const int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return -1;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    tcp::Hello hello{};
    const auto mine = JobSecret::random_challenge();
    std::uint8_t answer[64];
    if (!read_exactly(fd, &hello, sizeof hello) || hello.magic != tcp::kHelloMagic ||
        ::send(fd, mine.data(), mine.size(), MSG_NOSIGNAL) != 32 || !read_exactly(fd, answer, 64)) {
      ::close(fd);
      return -1;
    }
    JobSecret::Digest proof;
    JobSecret::Challenge theirs;
    std::memcpy(proof.data(), answer, 32);
    std::memcpy(theirs.data(), answer + 32, 32);
    std::uint8_t verdict[33] = {};
    const auto back = secret.prove(tcp::kAcceptLabel, theirs);
    std::memcpy(verdict + 1, back.data(), 32);
    if (!secret.verify(tcp::kConnectLabel, mine, proof) ||
        ::send(fd, verdict, 33, MSG_NOSIGNAL) != 33) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  // Lets t connect and send msg (blocks in the handshake, answered here), then
  // reads the rendezvous request: the connection's fd, or -1.
  int connect_and_request(Node &a, const JobSecret &secret, Message *msg, wire::MessageHeader *req,
                          wire::RendezvousBody *body) {
    int fd = -1;
    std::thread acceptor([&] { fd = accept_one(secret); });
    const int rc = a.t->send(9, address, 5, msg);
    acceptor.join();
    EXPECT_EQ(rc, ROCL_OK) << last_error();
    if (fd < 0 || rc != ROCL_OK) return -1;
    if (!read_exactly(fd, req, sizeof *req) || !read_exactly(fd, body, sizeof *body)) return -1;
    return fd;
  }
};

wire::MessageHeader reply_to(const wire::MessageHeader &req, std::uint64_t total) {
  wire::MessageHeader h = req;
  h.kind = wire::Kind::kRendezvousReply;
  h.source = req.destination;
  h.destination = req.source;
  h.total_length = total;
  h.fragment_offset = 0;
  h.fragment_length = 0;
  return h;
}

TEST(TcpRendezvous, TheSenderChecksEveryReply) {
  const JobSecret secret = JobSecret::generate();
  Node a(1, &secret, {}, kRndv);
  RawAcceptor peer;
  a.pool.flush_thread_cache();
  const std::size_t baseline = a.pool.stats().in_use_bytes;
  wire::MessageHeader req{};
  wire::RendezvousBody body{};

  // The request: every field as documented.
  int fd = peer.connect_and_request(a, secret, a.make(kRndv, 1, 4), &req, &body);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(wire::validate_header(req, wire::Limits{}, "test"), ROCL_OK) << last_error();
  EXPECT_EQ(req.kind, wire::Kind::kRendezvousRequest);
  EXPECT_EQ(req.total_length, kRndv);
  EXPECT_EQ(req.source, 77u);
  EXPECT_EQ(req.destination, 5u);
  EXPECT_EQ(req.tag, 4);
  EXPECT_EQ(req.domain, 3u);
  EXPECT_EQ(body.address, 0u);
  EXPECT_EQ(body.cookie, req.message_id);

  // A forged reply for an unknown cookie: logged, the connection dropped, the
  // parked message failed (its block back in the pool).
  wire::MessageHeader forged = reply_to(req, kRndv);
  forged.message_id = req.message_id + 1000;
  ASSERT_EQ(::send(fd, &forged, sizeof forged, MSG_NOSIGNAL), 64);
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(a.log.has("tcp: rendezvous reply from " + peer.address.substr(4) + " for cookie " +
                        std::to_string(forged.message_id) + ": message_id " +
                        std::to_string(forged.message_id) +
                        " names no rendezvous request waiting on this connection"));
  EXPECT_TRUE(eventually([&] { return a.t->stats().failed_sends == 1; }));
  EXPECT_EQ(a.t->stats().dropped_connections, 1u);
  EXPECT_TRUE(pool_back_to(a.pool, baseline));

  // A reply whose length answers nothing: dropped too.
  fd = peer.connect_and_request(a, secret, a.make(kRndv, 2), &req, &body);
  ASSERT_GE(fd, 0);
  const wire::MessageHeader bad = reply_to(req, kRndv - 1);
  ASSERT_EQ(::send(fd, &bad, sizeof bad, MSG_NOSIGNAL), 64);
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  EXPECT_TRUE(a.log.has("total_length 32767 is neither 0 (drop) nor 32768"));
  EXPECT_TRUE(eventually([&] { return a.t->stats().dropped_connections == 2; }));
  EXPECT_TRUE(pool_back_to(a.pool, baseline));

  // A drop reply: the block is released, the connection stays.
  fd = peer.connect_and_request(a, secret, a.make(kRndv, 3), &req, &body);
  ASSERT_GE(fd, 0);
  const wire::MessageHeader drop = reply_to(req, 0);
  ASSERT_EQ(::send(fd, &drop, sizeof drop, MSG_NOSIGNAL), 64);
  EXPECT_TRUE(pool_back_to(a.pool, baseline));
  EXPECT_EQ(a.t->stats().dropped_connections, 2u);

  // A good reply: the data comes as one kFragment frame named by the cookie.
  Message *m = a.make(100000, 4);
  const std::uint64_t sum = checksum(m->data, m->length);
  ASSERT_EQ(a.t->send(9, peer.address, 5, m), ROCL_OK);
  ASSERT_TRUE(read_exactly(fd, &req, sizeof req));
  ASSERT_TRUE(read_exactly(fd, &body, sizeof body));
  const wire::MessageHeader go = reply_to(req, 100000);
  ASSERT_EQ(::send(fd, &go, sizeof go, MSG_NOSIGNAL), 64);
  wire::MessageHeader d{};
  ASSERT_TRUE(read_exactly(fd, &d, sizeof d));
  EXPECT_EQ(wire::validate_header(d, wire::Limits{}, "test"), ROCL_OK) << last_error();
  EXPECT_EQ(d.kind, wire::Kind::kFragment);
  EXPECT_EQ(d.message_id, body.cookie);
  EXPECT_EQ(d.total_length, 100000u);
  EXPECT_EQ(d.fragment_offset, 0u);
  ASSERT_EQ(d.fragment_length, 100000u);
  std::vector<std::uint8_t> data(100000);
  ASSERT_TRUE(read_exactly(fd, data.data(), data.size()));
  EXPECT_EQ(checksum(data.data(), data.size()), sum);
  EXPECT_TRUE(pool_back_to(a.pool, baseline));
  ::close(fd);

  // The process carries on: a real peer still gets a large message.
  Node b(2, &secret, {}, kRndv);
  ASSERT_EQ(a.t->send(2, b.t->address(), 9, a.make(std::size_t{2} << 20, 5)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  EXPECT_EQ(b.sink.snapshot()[0].length, std::size_t{2} << 20);
}

// Senders mixing eager and rendezvous messages to a receiver whose sink pulls
// inside deliver (nested drives) while callers and the thread drive it at
// once: each message arrives exactly once, intact.
TEST(TcpRendezvous, ConcurrentDriversAndNestedPullsDeliverEachMessageOnce) {
  const JobSecret secret = JobSecret::generate();
  Node a1(1, &secret, {}, kRndv), a2(3, &secret, {}, kRndv), b(2, &secret, {}, kRndv);
  constexpr std::uint32_t kSenders = 4, kPerSender = 300;
  std::vector<std::vector<std::uint64_t>> sums(kSenders, std::vector<std::uint64_t>(kPerSender));
  Drivers drivers;
  drivers.threads.emplace_back([&] {
    while (!drivers.done) b.t->progress(nullptr);
  });
  drivers.threads.emplace_back([&] {
    for (unsigned cycle = 0; !drivers.done; ++cycle) {
      b.t->poll_begin();
      for (int i = 0; i < 200; ++i) b.t->progress(nullptr);
      b.t->poll_end(cycle % 2 == 0);
    }
  });
  std::vector<std::thread> senders;
  for (std::uint32_t s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      Node &a = s < 2 ? a1 : a2;
      for (std::uint32_t i = 0; i < kPerSender; ++i) {
        const std::size_t len = i % 3 == 0 ? kRndv + i * 1000 : 16 + i;
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
  std::vector<std::vector<int>> seen(kSenders, std::vector<int>(kPerSender));
  for (const Arrival &x : got) {
    const auto v = static_cast<std::uint32_t>(x.first8);
    const std::uint32_t s = v >> 24, i = v & 0xffffff;
    ASSERT_LT(s, kSenders);
    ASSERT_LT(i, kPerSender);
    ASSERT_EQ(x.tag, static_cast<std::int32_t>(s));
    EXPECT_EQ(x.sum, sums[s][i]) << "sender " << s << " message " << i;
    ++seen[s][i];
  }
  for (std::uint32_t s = 0; s < kSenders; ++s) {
    for (std::uint32_t i = 0; i < kPerSender; ++i) ASSERT_EQ(seen[s][i], 1) << s << " " << i;
  }
  // Every large message was pulled, unless its sender's parking was full
  // and it went eager (the default).
  EXPECT_EQ(b.t->stats().rendezvous_pulls + a1.t->stats().rendezvous_eager +
                a2.t->stats().rendezvous_eager,
            std::uint64_t{kSenders * kPerSender / 3});
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
}

// ---- Shutdown (linger) -------------------------------------------------------

// The linger tests' nodes: 32 MiB goes eager (most of it still queued when
// send() returns: far more than the sockets' buffers), 33 MiB by rendezvous.
constexpr std::size_t kExitEager = std::size_t{32} << 20;
constexpr std::size_t kExitParked = std::size_t{33} << 20;
constexpr std::size_t kExitRndv = kExitEager + 1;

// a sends b (which keeps stubs) a rendezvous message, waits until b has its
// stub (the message is parked at a), then a 32 MiB eager one; returns their
// checksums.
std::pair<std::uint64_t, std::uint64_t> send_parked_then_eager(Node &a, Node &b) {
  b.sink.keep_stubs = true;
  Message *parked = a.make(kExitParked, 1, 1);
  const std::uint64_t parked_sum = checksum(parked->data, parked->length);
  EXPECT_EQ(a.t->send(2, b.t->address(), 5, parked), ROCL_OK) << last_error();
  EXPECT_TRUE(stubs_seen(b.sink, 1));
  Message *eager = a.make(kExitEager, 2, 2);
  const std::uint64_t eager_sum = checksum(eager->data, eager->length);
  EXPECT_EQ(a.t->send(2, b.t->address(), 6, eager), ROCL_OK) << last_error();
  return {parked_sum, eager_sum};
}

// Releases a kept stub's block without its transport (which may be gone).
void free_stub(Node &n, Message *stub) {
  BlockHeader *b = block_of(stub);
  std::destroy_at(stub);
  n.pool.release(b, BlockState::kLibrary);
}

TEST(TcpLinger, ASenderDestroyedRightAfterSendingDeliversQueuedAndParkedMessages) {
  const JobSecret secret = JobSecret::generate();
  auto a = std::make_unique<Node>(1, &secret, tcp::Options{}, kExitRndv, 10000);
  Node b(2, &secret, {}, kExitRndv);
  a->pool.flush_thread_cache();
  const std::size_t baseline = a->pool.stats().in_use_bytes;
  const auto [parked_sum, eager_sum] = send_parked_then_eager(*a, b);
  // a's owner exits now: rocl_send returned ROCL_OK for both.
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> destroyed{false};
  std::thread exiting([&] {
    a->t.reset();
    destroyed = true;
  });
  // The receiving application takes its time, then receives the large one.
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(destroyed.load()) << "the destructor did not wait for the parked message";
  Message *stub = take_stub(b.sink);
  ASSERT_NE(stub, nullptr);
  const Pulled p = pull_and_free(stub, b.pool);
  exiting.join();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(p.rc, ROCL_OK) << last_error();
  EXPECT_EQ(p.length, kExitParked);
  EXPECT_EQ(p.seed, 1u);
  EXPECT_EQ(p.sum, parked_sum);
  ASSERT_TRUE(b.sink.wait_for(1));
  const auto got = b.sink.snapshot();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].destination, 6u);
  EXPECT_EQ(got[0].length, kExitEager);
  EXPECT_EQ(got[0].sum, eager_sum);
  // Done once delivered, not after the whole linger (10 s; under TSan on a
  // loaded machine the delivery alone took 5.0 s once).
  EXPECT_LT(took, 8s);
  EXPECT_FALSE(a->log.has("dropped", 0ms));
  EXPECT_FALSE(b.log.has("closed in the middle", 0ms));
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
  EXPECT_TRUE(pool_back_to(a->pool, baseline)) << "the sender's blocks were not released";
}

TEST(TcpLinger, WithLingerZeroTheMessagesAreDroppedAndSaidSo) {
  const JobSecret secret = JobSecret::generate();
  auto a = std::make_unique<Node>(1, &secret, tcp::Options{}, kExitRndv, 0);
  Node b(2, &secret, {}, kExitRndv);
  a->pool.flush_thread_cache();
  const std::size_t baseline = a->pool.stats().in_use_bytes;
  send_parked_then_eager(*a, b);
  const auto t0 = std::chrono::steady_clock::now();
  a->t.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "linger 0 must not wait";
  const std::string sentence = "tcp: dropped 2 messages (" +
                               std::to_string(kExitParked + kExitEager) + " bytes) for peer " +
                               ip_port(b.t->address()) + " (context 0x0000000000000002)";
  EXPECT_TRUE(a->log.has(sentence, 0ms)) << sentence;
  EXPECT_TRUE(a->log.has("ROCL_LINGER_MS=0 ms (1 waiting for a receive at the peer)", 0ms));
  Message *stub = take_stub(b.sink);
  ASSERT_NE(stub, nullptr);
  const Pulled p = pull_and_free(stub, b.pool);
  EXPECT_EQ(p.rc, ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("went away"), std::string::npos) << last_error();
  EXPECT_TRUE(b.log.has("closed in the middle of a frame"));
  EXPECT_EQ(b.sink.count(), 0u) << "a message came whole although it was dropped";
  EXPECT_TRUE(pool_back_to(a->pool, baseline)) << "the dropped messages' blocks were not released";
}

TEST(TcpLinger, TheWaitIsBoundedWhenTheReceiverNeverTakesTheMessage) {
  const JobSecret secret = JobSecret::generate();
  auto a = std::make_unique<Node>(1, &secret, tcp::Options{}, kRndv, 300);
  Node b(2, &secret, {}, kRndv);
  b.sink.keep_stubs = true;
  ASSERT_EQ(a->t->send(2, b.t->address(), 5, a->make(std::size_t{1} << 20, 1)), ROCL_OK);
  ASSERT_TRUE(stubs_seen(b.sink, 1));
  const auto t0 = std::chrono::steady_clock::now();
  a->t.reset();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 3s);
  EXPECT_TRUE(a->log.has(
      "tcp: dropped 1 message (1048576 bytes) for peer " + ip_port(b.t->address()), 0ms));
  EXPECT_TRUE(a->log.has("ROCL_LINGER_MS=300 ms (1 waiting for a receive at the peer)", 0ms));
  Message *stub = take_stub(b.sink);
  ASSERT_NE(stub, nullptr);
  EXPECT_EQ(pull_and_free(stub, b.pool).rc, ROCL_EPEER);
}

TEST(TcpLinger, EndsWhenTheReceiverDiscardsOrGoesAway) {
  const JobSecret secret = JobSecret::generate();
  // A discarded stub lets the sender go at once.
  {
    auto a = std::make_unique<Node>(1, &secret, tcp::Options{}, kRndv, 10000);
    Node b(2, &secret, {}, kRndv);
    b.sink.keep_stubs = true;
    ASSERT_EQ(a->t->send(2, b.t->address(), 5, a->make(std::size_t{1} << 20, 1)), ROCL_OK);
    ASSERT_TRUE(stubs_seen(b.sink, 1));
    const auto t0 = std::chrono::steady_clock::now();
    std::thread exiting([&] { a->t.reset(); });
    std::this_thread::sleep_for(50ms);
    discard_all(b.sink);
    exiting.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_FALSE(a->log.has("dropped", 0ms));
  }
  // A receiver that goes away lets it go too (what it held is dropped).
  {
    auto a = std::make_unique<Node>(1, &secret, tcp::Options{}, kRndv, 10000);
    auto b = std::make_unique<Node>(2, &secret, tcp::Options{}, kRndv);
    b->sink.keep_stubs = true;
    ASSERT_EQ(a->t->send(2, b->t->address(), 5, a->make(std::size_t{1} << 20, 1)), ROCL_OK);
    ASSERT_TRUE(stubs_seen(b->sink, 1));
    const auto t0 = std::chrono::steady_clock::now();
    std::thread exiting([&] { a->t.reset(); });
    std::this_thread::sleep_for(50ms);
    Message *stub = take_stub(b->sink);
    b->t.reset();
    free_stub(*b, stub);
    exiting.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  }
}

// ---- The receive stage ------------------------------------------------------
// A connection reads through a stage: one recv() takes many frames, which
// are parsed out of it. Epoll never reports staged bytes: these tests end
// with the peer quiet and frames in the stage, where a turn that stops too
// early, or a pause that forgets them, shows as a message that never comes.

// A byte stream as a peer's transport writes it (after the handshake), and
// what the receiver must make of it.
struct RawStream {
  std::vector<std::uint8_t> bytes;
  std::vector<Arrival> messages;                                 // in order
  std::vector<std::pair<std::int32_t, std::uint64_t>> requests;  // stubs: tag, length
  std::uint64_t next_id = 1;
  rocl_gid_t destination = 6;  // of the next messages

  void frame(const wire::MessageHeader &h, const std::uint8_t *payload) {
    const auto *p = reinterpret_cast<const std::uint8_t *>(&h);
    bytes.insert(bytes.end(), p, p + sizeof h);
    bytes.insert(bytes.end(), payload, payload + h.fragment_length);
  }

  // A message of len bytes tagged `tag` (also its first 4 bytes, if it has
  // them): one eager frame, or kFragment frames of the lengths in pieces.
  void message(std::int32_t tag, std::size_t len, const std::vector<std::uint32_t> &pieces = {}) {
    std::vector<std::uint8_t> data(len);
    std::uint32_t x = static_cast<std::uint32_t>(tag) * 2654435761u + 7;
    for (auto &b : data) {
      x = x * 1664525u + 1013904223u;
      b = static_cast<std::uint8_t>(x >> 24);
    }
    if (len >= 4) std::memcpy(data.data(), &tag, 4);
    wire::MessageHeader h = good_header(0);
    h.destination = destination;
    h.tag = tag;
    h.message_id = next_id++;
    h.total_length = len;
    if (pieces.empty()) {
      h.fragment_length = static_cast<std::uint32_t>(len);
      frame(h, data.data());
    } else {
      h.kind = wire::Kind::kFragment;
      std::uint64_t off = 0;
      for (std::uint32_t piece : pieces) {
        h.fragment_offset = off;
        h.fragment_length = piece;
        frame(h, data.data() + off);
        off += piece;
      }
      EXPECT_EQ(off, len);
    }
    Arrival a{destination, 5, tag, 0, len, checksum(data.data(), len), 0};
    if (len > 0) std::memcpy(&a.first8, data.data(), std::min<std::size_t>(8, len));
    messages.push_back(a);
  }

  // A rendezvous request (header and body) for a message of len bytes.
  void request(std::int32_t tag, std::uint64_t len) {
    wire::MessageHeader h = good_header(0);
    h.kind = wire::Kind::kRendezvousRequest;
    h.tag = tag;
    h.message_id = next_id++;
    h.total_length = len;
    h.fragment_length = sizeof(wire::RendezvousBody);
    const wire::RendezvousBody body{0, h.message_id};
    frame(h, reinterpret_cast<const std::uint8_t *>(&body));
    requests.emplace_back(tag, len);
  }
};

// A raw connection to t that passed the handshake, sending without delay
// (so that small chunks leave one by one).
int raw_peer(const Transport &t, const JobSecret &secret) {
  const int fd = raw_connect(t);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  EXPECT_TRUE(raw_handshake(fd, secret));
  return fd;
}

bool raw_write(int fd, const std::uint8_t *p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Writes bytes in chunks whose sizes cycle through `sizes`; with `pause`,
// waits after each one so that the receiver mostly reads them one by one.
bool write_chunked(int fd, const std::vector<std::uint8_t> &bytes,
                   const std::vector<std::size_t> &sizes, bool pause) {
  std::size_t off = 0;
  for (std::size_t i = 0; off < bytes.size(); ++i) {
    const std::size_t n = std::min(sizes[i % sizes.size()], bytes.size() - off);
    if (!raw_write(fd, bytes.data() + off, n)) return false;
    off += n;
    if (pause) std::this_thread::sleep_for(50us);
  }
  return true;
}

void expect_arrivals(const std::vector<Arrival> &got, const std::vector<Arrival> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].tag, want[i].tag) << "arrival " << i;
    EXPECT_EQ(got[i].destination, want[i].destination) << "tag " << want[i].tag;
    EXPECT_EQ(got[i].source, want[i].source) << "tag " << want[i].tag;
    EXPECT_EQ(got[i].length, want[i].length) << "tag " << want[i].tag;
    EXPECT_EQ(got[i].sum, want[i].sum) << "tag " << want[i].tag;
    EXPECT_EQ(got[i].first8, want[i].first8) << "tag " << want[i].tag;
  }
}

// Headers, payloads and request bodies split at every kind of place
// (chunks of 1, 2, 3, 7, 63, 65, 4095 ... bytes, crossing the boundaries of
// headers, payloads and frames), then back to back (many frames per read,
// payloads larger than the stage, fragments): each message comes once, in
// order, intact, and each request gives its stub.
TEST(TcpStage, AStreamInOddChunksIsParsedIntoEveryMessageOnceInOrder) {
  const JobSecret secret = JobSecret::generate();
  Node b(2, &secret);
  b.sink.keep_stubs = true;
  // small: frames of at most 4 KiB; full: up to 300 KB, larger than the stage.
  RawStream small, full;
  const std::size_t sizes[] = {0,   1,    7,    8,    16,   48,    63,    64,    65,
                               100, 1000, 4095, 4096, 4097, 65535, 65536, 65537, 200000};
  std::int32_t tag = 0;
  for (RawStream *s : {&small, &full}) {
    for (int round = 0; round < 2; ++round) {
      for (const std::size_t len : sizes) {
        if (s == &small && len > 4097) continue;
        s->message(tag++, len);
        s->message(tag++, 3);  // small ones in between: several frames per read
        s->message(tag++, 40);
      }
      s->message(tag++, 5000, {1, 999, 3000, 1000});
      s->request(tag++, 100000);
      if (s == &full) s->message(tag++, 300000, {100000, 65536, 134464});
      s->request(tag++, std::uint64_t{1} << 20);
      s->message(tag++, 10);
    }
  }
  struct Pass {
    const char *what;
    const RawStream &stream;
    std::vector<std::size_t> chunks;
    bool pause;
  };
  const Pass passes[] = {
      {"shredded", small, {1, 2, 3, 5, 7, 11, 13, 17, 31, 63, 64, 65, 127, 1, 1}, true},
      {"odd chunks",
       full,
       {1, 7, 63, 65, 4095, 1, 64, 13, 65537, 2, 62, 1, 1, 1, 129, 100000, 3, 4096, 16, 17},
       true},
      {"back to back", full, {std::size_t{1} << 30}, false},
  };
  std::vector<Arrival> want;
  int stubs = 0;
  for (const Pass &pass : passes) {
    SCOPED_TRACE(pass.what);
    const int fd = raw_peer(*b.t, secret);
    ASSERT_TRUE(write_chunked(fd, pass.stream.bytes, pass.chunks, pass.pause));
    want.insert(want.end(), pass.stream.messages.begin(), pass.stream.messages.end());
    stubs += static_cast<int>(pass.stream.requests.size());
    ASSERT_TRUE(b.sink.wait_for(want.size()));
    ASSERT_TRUE(stubs_seen(b.sink, stubs));
    std::this_thread::sleep_for(20ms);  // a duplicate would show up now
    expect_arrivals(b.sink.snapshot(), want);
    for (const auto &[rtag, rlen] : pass.stream.requests) {
      Message *stub = take_stub(b.sink);
      ASSERT_NE(stub, nullptr);
      EXPECT_TRUE(stub->rendezvous);
      EXPECT_EQ(stub->header.tag, rtag);
      EXPECT_EQ(stub->length, rlen);
      rendezvous_transport(stub)->discard(stub);
    }
    EXPECT_EQ(take_stub(b.sink), nullptr);
    ::close(fd);
  }
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
  EXPECT_FALSE(b.log.has("closed in the middle", 0ms));
  EXPECT_TRUE(eventually([&] { return b.pool.stats().in_use_buffers == 0; }));
}

// The pool runs out while the stage holds the frames that follow (each round
// is one write of 60 frames, about 52 KB: one read): the connection pauses
// with them staged and its socket empty, and the peer stays quiet. Once
// blocks come back, the retry must deliver the staged frames first.
TEST(TcpStage, FramesStagedWhenThePoolRunsOutComeOnceBlocksAreReturned) {
  const JobSecret secret = JobSecret::generate();
  SlowNode b(2, &secret, 32 * 1024);  // 32 blocks of 1 KiB at most
  const int fd = raw_peer(*b.t, secret);
  constexpr int kRounds = 4, kPerRound = 60;
  constexpr std::size_t kLen = 800;  // a 1 KiB block
  std::vector<Arrival> want;
  std::int32_t tag = 0;
  for (int r = 0; r < kRounds; ++r) {
    SCOPED_TRACE("round " + std::to_string(r));
    RawStream s;
    for (int i = 0; i < kPerRound; ++i) s.message(tag++, kLen);
    const std::uint64_t paused = b.t->stats().paused_reads;
    ASSERT_TRUE(raw_write(fd, s.bytes.data(), s.bytes.size()));
    want.insert(want.end(), s.messages.begin(), s.messages.end());
    ASSERT_TRUE(eventually([&] { return b.t->stats().paused_reads > paused; }));
    std::this_thread::sleep_for(20ms);  // the driver is idle, the frames staged
    EXPECT_LT(b.sink.count(), want.size());
    EXPECT_TRUE(b.t->holds_unread_input());  // the core keeps the sender alive
    ASSERT_TRUE(b.sink.drain(kPerRound, 200us, 10000ms)) << "staged frames never came";
  }
  EXPECT_TRUE(eventually([&] { return !b.t->holds_unread_input(); }));
  std::this_thread::sleep_for(20ms);  // a duplicate would show up now
  ASSERT_EQ(b.sink.count(), want.size());
  {
    std::lock_guard lock(b.sink.mu);
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(static_cast<std::uint32_t>(b.sink.got[i].first8),
                static_cast<std::uint32_t>(want[i].first8))
          << "arrival " << i;
      EXPECT_EQ(b.sink.got[i].length, kLen);
      EXPECT_EQ(b.sink.got[i].sum, want[i].sum) << "arrival " << i;
    }
  }
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
  EXPECT_EQ(count_lines(b.log, "reading from it paused"), 1u);
  ::close(fd);
}

// With turn_bytes 1 every turn ends at the first place where it may: where
// the connection needs bytes from its socket. Each batch is one write, then
// the peer is quiet: a turn that ended with a frame (or a payload's rest)
// still in the stage would leave it there for good.
TEST(TcpStage, ATurnEndsOnlyWhereTheStageRunsDry) {
  const JobSecret secret = JobSecret::generate();
  tcp::Options one_byte_turns;
  one_byte_turns.turn_bytes = 1;
  Node b(2, &secret, one_byte_turns);
  b.sink.keep_stubs = true;
  const int fd = raw_peer(*b.t, secret);
  std::vector<Arrival> want;
  std::int32_t tag = 0;
  int stubs = 0;
  for (int batch = 0; batch < 3; ++batch) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    RawStream s;
    s.next_id = static_cast<std::uint64_t>(batch) * 1000 + 1;
    if (batch == 1) s.message(tag++, 100000);  // larger than the stage: read past it
    for (int i = 0; i < 150; ++i) {
      s.message(tag++, static_cast<std::size_t>(i * 37 % 300));
      if (i % 50 == 7) s.request(tag++, 100000);
      if (i % 50 == 9) s.message(tag++, 700, {100, 500, 100});
    }
    ASSERT_TRUE(raw_write(fd, s.bytes.data(), s.bytes.size()));
    want.insert(want.end(), s.messages.begin(), s.messages.end());
    stubs += static_cast<int>(s.requests.size());
    ASSERT_TRUE(b.sink.wait_for(want.size(), 3000ms)) << "staged frames never came";
    ASSERT_TRUE(stubs_seen(b.sink, stubs));
  }
  std::this_thread::sleep_for(20ms);  // a duplicate would show up now
  expect_arrivals(b.sink.snapshot(), want);
  discard_all(b.sink);
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
  ::close(fd);
}

// Deliveries to kGated wait while the gate is closed: the driver stalls in
// deliver and the peers' bytes pile up in the sockets.
constexpr rocl_gid_t kGated = 99;
struct GatedSink : RecordingSink {
  std::atomic<bool> closed{true};
  std::atomic<bool> stalled{false};
  int deliver(rocl_gid_t destination, Message *msg, const Waiter *) noexcept override {
    if (destination == kGated) stalled = true;
    while (destination == kGated && closed.load()) std::this_thread::sleep_for(1ms);
    return RecordingSink::deliver(destination, msg, nullptr);
  }
};

struct GatedNode {
  GatedNode(std::uint64_t instance, const JobSecret *secret, const tcp::Options &options)
      : pool(PoolConfig{std::size_t{1} << 30, std::size_t{2} << 20}) {
    sink.pool = &pool;
    t = make_tcp_transport_with_log(TransportEnv{&sink, instance, &pool, secret}, log.fn(),
                                    options);
  }
  BufferPool pool;
  GatedSink sink;
  LogSink log;
  std::unique_ptr<TcpTransport> t;
};

// One peer's burst (24 MB of small frames in one write, the first one to
// kGated) while another peer sends a few: when the gate opens, the busy
// connection's turn goes on with a full stage and a full socket, and must
// end at turn_bytes (64 KiB here), never with frames left in the stage, so
// that the other peer's messages come long before the end of the burst and
// the burst comes whole although its peer is quiet by then.
TEST(TcpStage, ABurstFromOnePeerDoesNotStarveAnotherAndEndsWhole) {
  const JobSecret secret = JobSecret::generate();
  Node a2(3, &secret);
  tcp::Options short_turns;
  short_turns.turn_bytes = 64 * 1024;
  GatedNode b(2, &secret, short_turns);
  // Connect both first: the handshakes need b's driver, stalled below.
  ASSERT_EQ(a2.t->send(2, b.t->address(), 5, a2.make(8, 0, 2)), ROCL_OK);
  ASSERT_TRUE(b.sink.wait_for(1));
  const int fd = raw_peer(*b.t, secret);
  // A warm-up stream, so that the kernel grows the socket's receive buffer:
  // then it holds megabytes of the burst while the driver is stalled.
  constexpr std::int32_t kWarm = 16000;
  {
    RawStream warm;
    warm.destination = 7;
    for (std::int32_t i = 0; i < kWarm; ++i) warm.message(i, 1000);
    ASSERT_TRUE(raw_write(fd, warm.bytes.data(), warm.bytes.size()));
    ASSERT_TRUE(b.sink.wait_for(1 + kWarm));
  }
  constexpr std::int32_t kBurst = 24000;
  constexpr std::uint32_t kOther = 50;
  RawStream s;
  s.destination = kGated;
  s.message(0, 1000);
  s.destination = 5;
  for (std::int32_t i = 1; i <= kBurst; ++i) s.message(i, 1000);
  std::thread burst([&] { EXPECT_TRUE(raw_write(fd, s.bytes.data(), s.bytes.size())); });
  ASSERT_TRUE(eventually([&] { return b.sink.stalled.load(); }));
  for (std::uint32_t i = 1; i <= kOther; ++i) {
    ASSERT_EQ(a2.t->send(2, b.t->address(), 5, a2.make(64, i, 2)), ROCL_OK);
  }
  std::this_thread::sleep_for(50ms);  // the sockets fill
  b.sink.closed = false;
  ASSERT_TRUE(b.sink.wait_for(1 + kWarm + kBurst + 1 + kOther, 30000ms));
  burst.join();
  std::this_thread::sleep_for(20ms);  // a duplicate would show up now
  auto got = b.sink.snapshot();
  ASSERT_EQ(got.size(), 1 + kWarm + kBurst + 1 + kOther);
  got.erase(got.begin() + 1, got.begin() + 1 + kWarm);
  std::vector<Arrival> burst_got;
  std::uint32_t next_other = 1;
  std::size_t last_other = 0;
  for (std::size_t k = 1; k < got.size(); ++k) {
    if (got[k].source == 5) {
      burst_got.push_back(got[k]);
    } else {
      ASSERT_EQ(got[k].tag, 2);
      ASSERT_EQ(static_cast<std::uint32_t>(got[k].first8), next_other++);
      last_other = k;
    }
  }
  expect_arrivals(burst_got, s.messages);
  EXPECT_EQ(next_other, kOther + 1);
  // When the gate opened, the other peer's messages were all in its socket:
  // they come after at most two turns of the burst (a turn ends once it read
  // 64 KiB and its stage ran dry: at most two stage fills, 123 frames), not
  // after whatever the burst's socket held (megabytes).
  EXPECT_LT(last_other, 300u) << "the other peer waited for the burst";
  EXPECT_EQ(b.t->stats().dropped_connections, 0u);
  ::close(fd);
}

}  // namespace
}  // namespace rocl::impl
