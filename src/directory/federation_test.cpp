// federation_test.cpp - several directory servers of one job in one process,
// joined over loopback UDP (each lists the others as unicast peers: loopback
// has no broadcast): a resource registered at one server is found from
// another by gid and by pattern, a multi-answer query returns every match of
// every server exactly once and in increasing gid order, a miss is named, a
// stopped server is dropped, a packet without the secret or replayed is
// ignored, two servers with one id do not both issue gids, and a server
// that does not answer costs the asker nothing but that query.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "directory/directory_server.hpp"
#include "directory/peer_protocol.hpp"
#include "directory/remote_directory.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()> &cond, std::chrono::milliseconds limit = 5s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// A free UDP port on loopback (bound, read, closed: a small race the test
// accepts).
std::uint16_t free_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
  ::close(fd);
  EXPECT_TRUE(ok) << "no free udp port on loopback";
  return ntohs(a.sin_port);
}

AttrList named(std::string_view type, std::string_view name) {
  AttrList l(256);
  EXPECT_EQ(l.add("type", type), ROCL_OK);
  EXPECT_EQ(l.add("name", name), ROCL_OK);
  return l;
}

std::string value_of(const AttrList &l, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = l.get(name, &len);
  return v == nullptr ? "<null>" : std::string(reinterpret_cast<const char *>(v), len);
}

class Federation : public ::testing::Test {
 protected:
  // Servers with ids `ids`, each listing all the others as peers.
  void start(const std::vector<std::uint16_t> &ids) {
    char tmpl[] = "/tmp/rocl-fedtest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (std::size_t i = 0; i < ids.size(); ++i) ports_.push_back(free_udp_port());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto s = std::make_unique<DirectoryServer>(dir_ + "/s" + std::to_string(i) + ".sock", secret_,
                                                 ids[i]);
      s->set_log([this](const std::string &line) {
        std::lock_guard lock(log_mu_);
        log_ += line + "\n";
      });
      PeerConfig c;
      c.port = ports_[i];
      c.bind = "loopback";
      c.announce_every = 100ms;
      c.search_window = 30ms;
      for (std::size_t j = 0; j < ids.size(); ++j) {
        if (j != i) c.peers.push_back("127.0.0.1:" + std::to_string(ports_[j]));
      }
      s->set_peers(c);
      ASSERT_EQ(s->start(), ROCL_OK) << last_error();
      servers_.push_back(std::move(s));
    }
  }
  void TearDown() override {
    servers_.clear();
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      ::unlink((dir_ + "/s" + std::to_string(i) + ".sock").c_str());
    }
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  std::unique_ptr<Directory> client(std::size_t server) {
    auto d = connect_directory(servers_[server]->socket_path(), secret_);
    EXPECT_TRUE(d) << last_error();
    return d;
  }
  bool all_live() {
    for (auto &s : servers_) {
      if (s->live_peers() != servers_.size() - 1) return false;
    }
    return true;
  }
  std::string log() {
    std::lock_guard lock(log_mu_);
    return log_;
  }

  JobSecret secret_ = JobSecret::generate();
  std::string dir_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::unique_ptr<DirectoryServer>> servers_;
  std::mutex log_mu_;
  std::string log_;
};

TEST_F(Federation, ARegistrationAtOneServerIsFoundFromAnother) {
  start({1, 2, 3});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  auto a = client(0), c = client(2);
  ASSERT_TRUE(a && c);
  const std::int64_t ctx = a->register_resource(named("context", "ctx-a"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0) << last_error();
  const std::int64_t w = a->register_resource(named("worker", "w1"), ctx);
  ASSERT_GT(w, 0);
  EXPECT_EQ(gid_server(static_cast<rocl_gid_t>(w)), 1);

  // By gid: server 3 asks server 1.
  rocl_gid_t gid = static_cast<rocl_gid_t>(w);
  AttrList ask(256);
  ask.add_unspecified("name", 32);
  ask.add_unspecified("context", 8);
  ASSERT_EQ(c->query(&gid, ask), ROCL_OK) << last_error();
  EXPECT_EQ(value_of(ask, "name"), "w1");
  rocl_gid_t owner = 0;
  std::memcpy(&owner, ask.get("context"), sizeof owner);
  EXPECT_EQ(owner, static_cast<rocl_gid_t>(ctx));

  // By pattern: a miss at server 3 goes to every server.
  AttrList pattern(256);
  ASSERT_EQ(pattern.add("name", std::string_view("w1")), ROCL_OK);
  pattern.add_unspecified("type", 32);
  gid = ROCL_NULL_GID;
  ASSERT_EQ(c->query(&gid, pattern), ROCL_OK) << last_error();
  EXPECT_EQ(gid, static_cast<rocl_gid_t>(w));
  EXPECT_EQ(value_of(pattern, "type"), "worker");
}

TEST_F(Federation, MissesAreNamed) {
  start({1, 2});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  auto a = client(0);
  ASSERT_TRUE(a);
  AttrList pattern(256);
  ASSERT_EQ(pattern.add("name", std::string_view("nobody")), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(a->query(&gid, pattern), ROCL_ENOTFOUND);
  EXPECT_NE(std::string(last_error()).find("no resource of the job matches"), std::string::npos)
      << last_error();
  gid = make_gid(2, 99);  // server 2's range, never issued
  AttrList none(64);
  EXPECT_EQ(a->query(&gid, none), ROCL_ENOTFOUND);
  EXPECT_NE(std::string(last_error()).find("its server 2 says so"), std::string::npos)
      << last_error();
  gid = make_gid(9, 1);  // no server 9 in the job
  EXPECT_EQ(a->query(&gid, none), ROCL_ENOTFOUND);
  const std::string why = last_error();
  EXPECT_NE(why.find("not among the live servers"), std::string::npos) << why;
  // The gid as the API's other sentences name it, once.
  EXPECT_NE(why.find(": gid 0x9000000000001 (server 9, serial 1) belongs"), std::string::npos)
      << why;
}

TEST_F(Federation, AMultiAnswerQueryReturnsEveryMatchOfEveryServerOnce) {
  start({4, 2, 7});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  std::vector<std::unique_ptr<Directory>> clients;
  std::set<rocl_gid_t> registered;
  for (std::size_t s = 0; s < 3; ++s) {
    clients.push_back(client(s));
    ASSERT_TRUE(clients.back());
    const std::int64_t ctx =
        clients.back()->register_resource(named("context", "c"), ROCL_NULL_GID);
    ASSERT_GT(ctx, 0);
    // More than one batch (64) at each server, and some that do not match.
    for (int i = 0; i < 70 + static_cast<int>(s); ++i) {
      const std::int64_t g = clients.back()->register_resource(
          named("worker", "w" + std::to_string(s) + "." + std::to_string(i)), ctx);
      ASSERT_GT(g, 0);
      registered.insert(static_cast<rocl_gid_t>(g));
      ASSERT_GT(clients.back()->register_resource(named("other", "o"), ctx), 0);
    }
  }
  for (std::size_t asker = 0; asker < 3; ++asker) {
    AttrList pattern(256);
    ASSERT_EQ(pattern.add("type", std::string_view("worker")), ROCL_OK);
    auto cursor = clients[asker]->query_start(pattern);
    ASSERT_TRUE(cursor) << last_error();
    std::vector<rocl_gid_t> got;
    for (;;) {
      AttrList answer(256);
      answer.add_unspecified("name", 64);
      const std::int64_t g = cursor->next(answer);
      if (g == ROCL_EEND) break;
      ASSERT_GT(g, 0) << last_error();
      EXPECT_EQ(value_of(answer, "name").substr(0, 1), "w");
      got.push_back(static_cast<rocl_gid_t>(g));
    }
    EXPECT_EQ(got.size(), registered.size()) << "asked at server index " << asker;
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
    EXPECT_EQ(std::set<rocl_gid_t>(got.begin(), got.end()), registered);
  }
}

TEST_F(Federation, AStoppedServerIsDroppedAndItsResourcesAreGone) {
  start({1, 2, 3});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  auto far = client(2);
  ASSERT_TRUE(far);
  const std::int64_t ctx = far->register_resource(named("context", "c3"), ROCL_NULL_GID);
  ASSERT_GT(far->register_resource(named("worker", "gone-soon"), ctx), 0);
  auto near = client(0);
  AttrList pattern(256);
  ASSERT_EQ(pattern.add("name", std::string_view("gone-soon")), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  ASSERT_EQ(near->query(&gid, pattern), ROCL_OK) << last_error();
  far.reset();
  servers_[2]->stop();  // says goodbye
  EXPECT_TRUE(eventually([&] { return servers_[0]->live_peers() == 1; })) << log();
  gid = ROCL_NULL_GID;
  EXPECT_EQ(near->query(&gid, pattern), ROCL_ENOTFOUND);
  EXPECT_NE(log().find("server 3 said goodbye; dropped"), std::string::npos) << log();
}

TEST_F(Federation, PacketsWithoutTheSecretOrReplayedAreIgnored) {
  start({1, 2});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(ports_[0]);
  auto send = [&](const std::vector<std::byte> &d) {
    ::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr *>(&to), sizeof to);
  };
  const std::uint64_t before = servers_[0]->ignored_peer_packets();
  peerproto::Packet p;
  p.op = peerproto::Op::kAnnounce;
  p.server = 9;
  p.incarnation = 77;
  p.seq = 1;
  p.sent_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  p.aux = p.sent_ms;
  p.udp_port = 9;
  std::vector<std::byte> foreign, ours;
  ASSERT_EQ(peerproto::seal(p, JobSecret::generate(), &foreign), ROCL_OK);
  ASSERT_EQ(peerproto::seal(p, secret_, &ours), ROCL_OK);
  send(foreign);
  EXPECT_TRUE(eventually([&] { return servers_[0]->ignored_peer_packets() == before + 1; }));
  send(ours);  // a new server 9: accepted
  EXPECT_TRUE(eventually([&] { return servers_[0]->live_peers() == 2; })) << log();
  send(ours);  // the same packet again: a replay
  EXPECT_TRUE(eventually([&] { return servers_[0]->ignored_peer_packets() == before + 2; }))
      << log();
  ::close(fd);
  EXPECT_NE(log().find("bad MAC"), std::string::npos) << log();
}

TEST_F(Federation, OfTwoServersWithOneIdTheYoungerIssuesNoGids) {
  start({5});
  std::this_thread::sleep_for(5ms);  // a later start time for the second
  // A second server with id 5, told about the first.
  const std::uint16_t port = free_udp_port();
  auto twin = std::make_unique<DirectoryServer>(dir_ + "/twin.sock", secret_, 5);
  twin->set_log([this](const std::string &line) {
    std::lock_guard lock(log_mu_);
    log_ += line + "\n";
  });
  PeerConfig c;
  c.port = port;
  c.bind = "loopback";
  c.announce_every = 100ms;
  c.peers = {"127.0.0.1:" + std::to_string(ports_[0])};
  twin->set_peers(c);
  ASSERT_EQ(twin->start(), ROCL_OK) << last_error();
  EXPECT_TRUE(eventually([&] { return log().find("is also used by") != std::string::npos; }))
      << log();
  auto d = connect_directory(twin->socket_path(), secret_);
  ASSERT_TRUE(d) << last_error();
  EXPECT_EQ(d->register_resource(named("context", "x"), ROCL_NULL_GID), ROCL_EBUSY);
  EXPECT_NE(std::string(last_error()).find("--server-id"), std::string::npos) << last_error();
  auto first = client(0);
  EXPECT_GT(first->register_resource(named("context", "y"), ROCL_NULL_GID), 0) << last_error();
  d.reset();
  twin.reset();
  ::unlink((dir_ + "/twin.sock").c_str());
}

// A lookup that another server does not answer fails with ROCL_EPEER and
// nothing else: the asker's connection stays, and with it its resources
// (a closed connection would take them out of the directory).
TEST_F(Federation, AServerThatDoesNotAnswerCostsTheAskerNothing) {
  start({1});
  auto a = client(0);
  ASSERT_TRUE(a);
  const std::int64_t ctx = a->register_resource(named("context", "asker"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0) << last_error();
  // Server 9 announces itself once and is silent from then on.
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(ports_[0]);
  peerproto::Packet p;
  p.op = peerproto::Op::kAnnounce;
  p.server = 9;
  p.incarnation = 5;
  p.seq = 1;
  p.sent_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  p.aux = p.sent_ms;
  p.udp_port = 9;  // where answers to it go: nobody listens
  std::vector<std::byte> packet;
  ASSERT_EQ(peerproto::seal(p, secret_, &packet), ROCL_OK);
  ::sendto(fd, packet.data(), packet.size(), 0, reinterpret_cast<sockaddr *>(&to), sizeof to);
  ::close(fd);
  ASSERT_TRUE(eventually([&] { return servers_[0]->live_peers() == 1; })) << log();

  rocl_gid_t gid = make_gid(9, 1);
  AttrList none(64);
  EXPECT_EQ(a->query(&gid, none), ROCL_EPEER);
  const std::string why = last_error();
  EXPECT_NE(why.find("directory server 9"), std::string::npos) << why;
  EXPECT_EQ(why.find("connection lost"), std::string::npos) << why;
  // The same connection goes on, and the asker is still in the directory.
  gid = static_cast<rocl_gid_t>(ctx);
  EXPECT_EQ(a->query(&gid, none), ROCL_OK) << last_error();
  EXPECT_GT(a->register_resource(named("worker", "after"), ctx), 0) << last_error();
  auto b = client(0);
  ASSERT_TRUE(b);
  gid = static_cast<rocl_gid_t>(ctx);
  EXPECT_EQ(b->query(&gid, none), ROCL_OK) << last_error();
}

// A removal at one server moves every server's removal epoch, so that
// routes cached anywhere to the removed resource are checked again.
TEST_F(Federation, ARemovalAnywhereMovesEveryServersRemovalEpoch) {
  start({1, 2, 3});
  ASSERT_TRUE(eventually([&] { return all_live(); })) << log();
  auto a = client(0);
  ASSERT_TRUE(a);
  const std::int64_t ctx = a->register_resource(named("context", "c"), ROCL_NULL_GID);
  const std::int64_t w = a->register_resource(named("worker", "w"), ctx);
  ASSERT_GT(w, 0);
  const std::atomic<std::uint64_t> *far = servers_[2]->removal_epoch();
  ASSERT_NE(far, nullptr);
  const std::uint64_t before = far->load();
  ASSERT_EQ(a->remove(static_cast<rocl_gid_t>(w)), ROCL_OK);
  EXPECT_TRUE(eventually([&] { return far->load() > before; }, 2s))
      << "server 3's epoch did not move after a removal at server 1";
  // And the resource is gone when asked again there.
  auto c = client(2);
  rocl_gid_t gid = static_cast<rocl_gid_t>(w);
  AttrList none(64);
  EXPECT_EQ(c->query(&gid, none), ROCL_ENOTFOUND);
}

}  // namespace
}  // namespace rocl::impl
