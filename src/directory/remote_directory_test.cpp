// remote_directory_test.cpp - a DirectoryServer and several RemoteDirectory
// clients in one process (threads): registration, queries and multi-answer
// queries across clients, gid uniqueness, job secret refusal, a closed
// connection taking its contexts' resources along, a lost server.
#include "directory/remote_directory.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "directory/dir_protocol.hpp"
#include "directory/directory_server.hpp"
#include "status/status.hpp"
#include "testing/fd_test_util.hpp"

namespace rocl::impl {
namespace {

using rocl::testing::read_exactly;

std::string value_of(const AttrList &l, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = l.get(name, &len);
  return v == nullptr ? "<null>" : std::string(reinterpret_cast<const char *>(v), len);
}

AttrList named(std::string_view type, std::string_view name) {
  AttrList l(256);
  EXPECT_EQ(l.add("type", type), ROCL_OK);
  EXPECT_EQ(l.add("name", name), ROCL_OK);
  return l;
}

// A server on a fresh socket path, its log lines kept.
class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rocl-dirtest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/dir.sock";
    server_ = std::make_unique<DirectoryServer>(path_, secret_, 3);
    server_->set_log([this](const std::string &line) {
      std::lock_guard lock(log_mu_);
      log_.push_back(line);
    });
    ASSERT_EQ(server_->start(), ROCL_OK) << last_error();
  }
  void TearDown() override {
    server_.reset();
    rmdir(dir_.c_str());
  }
  std::string log_text() {
    std::lock_guard lock(log_mu_);
    std::string all;
    for (const auto &l : log_) {
      all += l + "\n";
    }
    return all;
  }
  bool wait_for(const std::function<bool()> &cond, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
      if (std::chrono::steady_clock::now() > end) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  JobSecret secret_ = JobSecret::generate();
  std::string dir_;
  std::string path_;
  std::unique_ptr<DirectoryServer> server_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(ServerFixture, ClientsRegisterAndQueryEachOther) {
  constexpr int kClients = 3;
  constexpr int kPerClient = 5;
  std::vector<std::unique_ptr<Directory>> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(connect_directory(path_, secret_));
    ASSERT_NE(clients.back(), nullptr) << last_error();
  }
  std::vector<std::vector<std::int64_t>> gids(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Directory &d = *clients[c];
      const std::int64_t ctx = d.register_resource(named("context", "ctx"), ROCL_NULL_GID);
      gids[c].push_back(ctx);
      for (int i = 0; i < kPerClient && ctx > 0; ++i) {
        const std::string name = "w-" + std::to_string(c) + "-" + std::to_string(i);
        gids[c].push_back(d.register_resource(named("worker", name), ctx));
      }
    });
  }
  for (auto &t : threads) {
    t.join();
  }
  std::set<std::int64_t> unique;
  for (const auto &g : gids) {
    ASSERT_EQ(g.size(), 1u + kPerClient);
    for (std::int64_t gid : g) {
      ASSERT_GT(gid, 0);
      EXPECT_EQ(gid_server(static_cast<rocl_gid_t>(gid)), 3);
      unique.insert(gid);
    }
  }
  EXPECT_EQ(unique.size(), std::size_t{kClients * (1 + kPerClient)});
  EXPECT_EQ(server_->resources(), std::size_t{kClients * (1 + kPerClient)});

  // Multi-answer: client 0 sees every worker, in increasing gid order.
  AttrList pattern(64);
  ASSERT_EQ(pattern.add("type", std::string_view("worker")), ROCL_OK);
  auto cur = clients[0]->query_start(pattern);
  ASSERT_NE(cur, nullptr) << last_error();
  AttrList ask(256);
  ASSERT_EQ(ask.add_unspecified("name", 32), ROCL_OK);
  ASSERT_EQ(ask.add_unspecified("context", 8), ROCL_OK);
  std::set<std::string> names;
  std::int64_t last = 0;
  for (;;) {
    const std::int64_t g = cur->next(ask);
    if (g == ROCL_EEND) {
      break;
    }
    ASSERT_GT(g, last) << last_error();
    last = g;
    names.insert(value_of(ask, "name"));
  }
  EXPECT_EQ(names.size(), std::size_t{kClients * kPerClient});
  EXPECT_TRUE(names.count("w-2-4"));
  cur.reset();

  // Single answer by gid across clients, and by attributes.
  rocl_gid_t gid = static_cast<rocl_gid_t>(gids[2][3]);
  AttrList q(64);
  ASSERT_EQ(q.add_unspecified("name", 32), ROCL_OK);
  ASSERT_EQ(clients[1]->query(&gid, q), ROCL_OK) << last_error();
  EXPECT_EQ(value_of(q, "name"), "w-2-2");
  AttrList q2(128);
  ASSERT_EQ(q2.add("name", std::string_view("w-0-1")), ROCL_OK);
  gid = ROCL_NULL_GID;
  ASSERT_EQ(clients[2]->query(&gid, q2), ROCL_OK) << last_error();
  EXPECT_EQ(gid, static_cast<rocl_gid_t>(gids[0][2]));

  // Remove through one client, gone for the others, with the server's sentence.
  ASSERT_EQ(clients[1]->remove(static_cast<rocl_gid_t>(gids[0][2])), ROCL_OK) << last_error();
  gid = ROCL_NULL_GID;
  EXPECT_EQ(clients[2]->query(&gid, q2), ROCL_ENOTFOUND);
  EXPECT_NE(std::string(last_error()).find("no resource has all"), std::string::npos)
      << last_error();
  EXPECT_EQ(clients[0]->remove(static_cast<rocl_gid_t>(gids[0][2])), ROCL_EBADGID);
  EXPECT_EQ(server_->resources(), std::size_t{kClients * (1 + kPerClient) - 1});

  // remove_context through its own connection.
  EXPECT_EQ(clients[2]->remove_context(static_cast<rocl_gid_t>(gids[2][0])), 1 + kPerClient);
  EXPECT_EQ(server_->resources(), std::size_t{(kClients - 1) * (1 + kPerClient) - 1});
}

TEST_F(ServerFixture, ServerErrorsComeBackWithTheirCodes) {
  auto d = connect_directory(path_, secret_);
  ASSERT_NE(d, nullptr) << last_error();
  auto other = connect_directory(path_, secret_);
  ASSERT_NE(other, nullptr) << last_error();
  const std::int64_t ctx = d->register_resource(named("context", "a"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  // Another connection's context may not be used to register.
  EXPECT_EQ(other->register_resource(named("worker", "x"), static_cast<rocl_gid_t>(ctx)),
            ROCL_EBADGID);
  EXPECT_NE(std::string(last_error()).find("not registered through this"), std::string::npos);
  // An unspecified attribute: EINVAL.
  AttrList bad(64);
  ASSERT_EQ(bad.add_unspecified("name", 8), ROCL_OK);
  EXPECT_EQ(d->register_resource(bad, static_cast<rocl_gid_t>(ctx)), ROCL_EINVAL);
  // ENOSPC from a cursor does not advance it; EEND at the end.
  const std::int64_t w = d->register_resource(named("worker", "a-long-name"), ctx);
  ASSERT_GT(w, 0);
  AttrList pattern(64);
  ASSERT_EQ(pattern.add("type", std::string_view("worker")), ROCL_OK);
  auto cur = d->query_start(pattern);
  ASSERT_NE(cur, nullptr);
  AttrList small(64);
  ASSERT_EQ(small.add_unspecified("name", 2), ROCL_OK);
  EXPECT_EQ(cur->next(small), ROCL_ENOSPC);
  AttrList big(64);
  ASSERT_EQ(big.add_unspecified("name", 32), ROCL_OK);
  EXPECT_EQ(cur->next(big), w);
  EXPECT_EQ(value_of(big, "name"), "a-long-name");
  EXPECT_EQ(cur->next(big), ROCL_EEND);
  // The connection is still fine after all those failures.
  rocl_gid_t gid = static_cast<rocl_gid_t>(w);
  EXPECT_EQ(other->query(&gid, big), ROCL_OK);
  EXPECT_EQ(other->query(nullptr, big), ROCL_EINVAL);
}

TEST_F(ServerFixture, WrongSecretIsRefusedOnBothSides) {
  const JobSecret wrong = JobSecret::generate();
  auto d = connect_directory(path_, wrong);
  EXPECT_EQ(d, nullptr);
  const std::string err = last_error();
  EXPECT_NE(err.find("directory refused: job secret proof did not verify"), std::string::npos)
      << err;
  EXPECT_NE(err.find(path_), std::string::npos) << err;
  EXPECT_TRUE(wait_for([&] { return log_text().find("refused") != std::string::npos; },
                       std::chrono::seconds(2)));
  EXPECT_NE(log_text().find("client " + std::to_string(getpid()) +
                            " refused: job secret proof did not verify"),
            std::string::npos)
      << log_text();
  // A client with no secret (the all-zero default) fares the same.
  EXPECT_EQ(connect_directory(path_, JobSecret{}), nullptr);
  EXPECT_NE(std::string(last_error()).find("did not verify"), std::string::npos);
  // The right secret still works.
  EXPECT_NE(connect_directory(path_, secret_), nullptr) << last_error();
}

TEST_F(ServerFixture, NoServerNamesThePath) {
  const std::string nowhere = dir_ + "/nobody.sock";
  EXPECT_EQ(connect_directory(nowhere, secret_), nullptr);
  EXPECT_NE(std::string(last_error()).find(nowhere), std::string::npos) << last_error();
  EXPECT_EQ(connect_directory(std::string(200, 'x'), secret_), nullptr);
}

TEST_F(ServerFixture, ClosedConnectionTakesItsContextsAlong) {
  auto a = connect_directory(path_, secret_);
  auto b = connect_directory(path_, secret_);
  ASSERT_TRUE(a && b) << last_error();
  for (int c = 0; c < 2; ++c) {
    const std::int64_t ctx = a->register_resource(named("context", "a"), ROCL_NULL_GID);
    ASSERT_GT(ctx, 0);
    ASSERT_GT(a->register_resource(named("worker", "a1"), ctx), 0);
    ASSERT_GT(a->register_resource(named("worker", "a2"), ctx), 0);
  }
  const std::int64_t bctx = b->register_resource(named("context", "b"), ROCL_NULL_GID);
  ASSERT_GT(b->register_resource(named("worker", "b1"), bctx), 0);
  EXPECT_EQ(server_->resources(), 8u);
  a.reset();
  EXPECT_TRUE(wait_for([&] { return server_->resources() == 2; }, std::chrono::seconds(5)))
      << server_->resources();
  AttrList q(64);
  ASSERT_EQ(q.add("name", std::string_view("b1")), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(b->query(&gid, q), ROCL_OK) << last_error();
  EXPECT_NE(log_text().find("removed 6 resources of its 2 contexts"), std::string::npos)
      << log_text();
}

TEST_F(ServerFixture, CursorOutlivesItsDirectory) {
  auto d = connect_directory(path_, secret_);
  ASSERT_NE(d, nullptr);
  const std::int64_t ctx = d->register_resource(named("context", "c"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  auto cur = d->query_start(AttrList(16));
  ASSERT_NE(cur, nullptr);
  d.reset();  // the cursor keeps the connection (and so the context) alive
  AttrList ask(64);
  ASSERT_EQ(ask.add_unspecified("name", 8), ROCL_OK);
  EXPECT_EQ(cur->next(ask), ctx);
  EXPECT_EQ(cur->next(ask), ROCL_EEND);
  cur.reset();
  EXPECT_TRUE(wait_for([&] { return server_->resources() == 0; }, std::chrono::seconds(5)));
}

TEST_F(ServerFixture, LostServerGivesEpeerOnEveryLaterCall) {
  auto d = connect_directory(path_, secret_);
  ASSERT_NE(d, nullptr);
  const std::int64_t ctx = d->register_resource(named("context", "c"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  server_->stop();
  EXPECT_EQ(d->register_resource(named("worker", "w"), ctx), ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find("connection lost"), std::string::npos) << last_error();
  rocl_gid_t gid = ROCL_NULL_GID;
  AttrList q(16);
  EXPECT_EQ(d->query(&gid, q), ROCL_EPEER);
  EXPECT_NE(std::string(last_error()).find(path_), std::string::npos) << last_error();
  EXPECT_EQ(d->query_start(q), nullptr);
  EXPECT_EQ(d->remove_context(ctx), ROCL_EPEER);
}

// ---- the removal epoch ---------------------------------------------------------------

TEST_F(ServerFixture, RemovalEpochAdvancesBeforeTheReply) {
  auto a = connect_directory(path_, secret_);
  auto b = connect_directory(path_, secret_);
  ASSERT_TRUE(a && b) << last_error();
  const std::atomic<std::uint64_t> *ea = a->removal_epoch();
  const std::atomic<std::uint64_t> *eb = b->removal_epoch();
  const std::atomic<std::uint64_t> *es = server_->removal_epoch();
  ASSERT_NE(es, nullptr);
  ASSERT_NE(ea, nullptr) << "the client did not map the server's removal epoch page";
  ASSERT_NE(eb, nullptr);
  EXPECT_NE(ea, es) << "a client's own mapping, not the server's";
  const std::uint64_t e0 = es->load();
  EXPECT_EQ(ea->load(), e0);
  EXPECT_EQ(eb->load(), e0);

  // Registration is no removal.
  const std::int64_t ctx = a->register_resource(named("context", "a"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  const std::int64_t w1 = a->register_resource(named("worker", "w1"), ctx);
  const std::int64_t w2 = a->register_resource(named("worker", "w2"), ctx);
  ASSERT_GT(w1, 0);
  ASSERT_GT(w2, 0);
  EXPECT_EQ(eb->load(), e0);

  // A removal is counted before its reply: whoever has the reply sees it,
  // in every client, without waiting.
  ASSERT_EQ(a->remove(static_cast<rocl_gid_t>(w1)), ROCL_OK) << last_error();
  EXPECT_EQ(ea->load(std::memory_order_acquire), e0 + 1);
  EXPECT_EQ(eb->load(std::memory_order_acquire), e0 + 1);
  // A removal that removed nothing is not counted.
  EXPECT_EQ(b->remove(static_cast<rocl_gid_t>(w1)), ROCL_EBADGID);
  EXPECT_EQ(eb->load(), e0 + 1);
  // remove_context counts once, however many resources it removed.
  EXPECT_EQ(a->remove_context(static_cast<rocl_gid_t>(ctx)), 2);
  EXPECT_EQ(eb->load(std::memory_order_acquire), e0 + 2);
  EXPECT_EQ(a->remove_context(static_cast<rocl_gid_t>(ctx)), 0);
  EXPECT_EQ(eb->load(), e0 + 2);
  // And what changed the epoch is gone for everyone.
  rocl_gid_t gid = static_cast<rocl_gid_t>(w2);
  AttrList q(64);
  EXPECT_EQ(b->query(&gid, q), ROCL_ENOTFOUND);
}

TEST_F(ServerFixture, RemovalEpochAdvancesWhenAConnectionCloses) {
  auto a = connect_directory(path_, secret_);
  auto b = connect_directory(path_, secret_);
  ASSERT_TRUE(a && b) << last_error();
  const std::atomic<std::uint64_t> *eb = b->removal_epoch();
  ASSERT_NE(eb, nullptr);
  const std::int64_t ctx = a->register_resource(named("context", "a"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  const std::int64_t w = a->register_resource(named("worker", "aw"), ctx);
  ASSERT_GT(w, 0);
  const std::uint64_t e0 = eb->load();

  a.reset();  // the process "exits": its connection closes
  ASSERT_TRUE(
      wait_for([&] { return eb->load(std::memory_order_acquire) != e0; }, std::chrono::seconds(5)));
  EXPECT_EQ(eb->load(), e0 + 1) << "one closed connection, one removal";
  // Counted after the resources left: once the epoch moved, they are gone.
  rocl_gid_t gid = static_cast<rocl_gid_t>(w);
  AttrList q(64);
  EXPECT_EQ(b->query(&gid, q), ROCL_ENOTFOUND);
  gid = static_cast<rocl_gid_t>(ctx);
  EXPECT_EQ(b->query(&gid, q), ROCL_ENOTFOUND);

  // A connection that closes with nothing registered removes nothing.
  auto c = connect_directory(path_, secret_);
  ASSERT_NE(c, nullptr);
  c.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time to see the close
  EXPECT_EQ(eb->load(), e0 + 1);
}

// A server speaking the protocol by hand: HELLO, PROVE, then a REPLY whose
// aux and version the test chooses (and never a descriptor).
class FakeServer {
 public:
  FakeServer(const std::string &path, const JobSecret &secret, std::uint64_t reply_aux,
             std::uint16_t version, std::vector<std::byte> request_reply = {})
      : path_(path) {
    listen_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.data(), path.size());
    EXPECT_EQ(bind(listen_, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    EXPECT_EQ(listen(listen_, 4), 0);
    thread_ = std::thread([this, secret, reply_aux, version, request_reply] {
      const int fd = accept(listen_, nullptr, nullptr);
      if (fd < 0) {
        return;
      }
      const JobSecret::Challenge mine = JobSecret::random_challenge();
      auto hello =
          dirproto::encode_message(dirproto::Op::kHello, 0, 0, 0, std::as_bytes(std::span(mine)));
      hello[4] = static_cast<std::byte>(version & 0xff);
      hello[5] = static_cast<std::byte>(version >> 8);
      if (write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()) &&
          version == dirproto::kVersion) {
        std::byte prove[dirproto::kHeaderBytes + 64];
        std::size_t got = 0;
        while (got < sizeof prove) {
          const ssize_t r = read(fd, prove + got, sizeof prove - got);
          if (r <= 0) {
            break;
          }
          got += static_cast<std::size_t>(r);
        }
        if (got == sizeof prove) {
          const auto proof = secret.prove(
              dirproto::kServerProveLabel,
              std::span(reinterpret_cast<const std::uint8_t *>(prove) + dirproto::kHeaderBytes + 32,
                        32));
          const auto reply = dirproto::encode_message(dirproto::Op::kReply, 0, 0, reply_aux,
                                                      std::as_bytes(std::span(proof)));
          [[maybe_unused]] ssize_t w = write(fd, reply.data(), reply.size());
          if (!request_reply.empty()) {  // the next request gets request_reply
            std::byte h[dirproto::kHeaderBytes];
            dirproto::Header hdr;
            std::string what;
            if (read_exactly(fd, h, sizeof h) &&
                dirproto::decode_header(h, &hdr, &what) == ROCL_OK) {
              last_aux_ = hdr.aux;
              std::vector<std::byte> body(hdr.body_len);
              if (read_exactly(fd, body.data(), body.size())) {
                w = write(fd, request_reply.data(), request_reply.size());
              }
            }
          }
        }
      }
      char c;
      while (read(fd, &c, 1) > 0) {
      }
      close(fd);
    });
  }
  std::atomic<std::uint64_t> last_aux_{0};  // aux of the request answered
  ~FakeServer() {
    thread_.join();
    close(listen_);
    unlink(path_.c_str());
  }

 private:
  std::string path_;
  int listen_ = -1;
  std::thread thread_;
};

TEST_F(ServerFixture, WithoutAnEpochPageTheClientWorksAndSaysSo) {
  const std::string fake = dir_ + "/fake.sock";
  for (std::uint64_t aux : {std::uint64_t{0}, dirproto::kEpochPageAttached}) {
    std::string said;
    {
      FakeServer server(fake, secret_, aux, dirproto::kVersion);
      auto d = connect_directory(fake, secret_, [&](const std::string &s) { said += s; });
      ASSERT_NE(d, nullptr) << last_error();
      EXPECT_EQ(d->removal_epoch(), nullptr);
    }
    EXPECT_NE(said.find("no removal epoch"), std::string::npos) << said;
    EXPECT_NE(said.find(fake), std::string::npos) << said;
    EXPECT_NE(said.find(aux == 0 ? "the server has no removal epoch page" : "no descriptor came"),
              std::string::npos)
        << said;
  }
  // The real server's clients have one and say nothing.
  std::string said;
  auto d = connect_directory(path_, secret_, [&](const std::string &s) { said += s; });
  ASSERT_NE(d, nullptr) << last_error();
  EXPECT_NE(d->removal_epoch(), nullptr);
  EXPECT_EQ(said, "");
}

TEST_F(ServerFixture, AnotherProtocolVersionIsNamed) {
  const std::string fake = dir_ + "/old.sock";
  FakeServer server(fake, secret_, 0, 1);
  EXPECT_EQ(connect_directory(fake, secret_), nullptr);
  const std::string err = last_error();
  EXPECT_NE(err.find("directory protocol version 1, but this side speaks version 3"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("same rocl release"), std::string::npos) << err;
}

// ---- batched multi-answer queries (protocol version 3) ------------------------------

// A fixture with one client that registered kMany workers ("i" = 0..kMany-1).
class BatchFixture : public ServerFixture {
 protected:
  static constexpr int kMany = 200;
  void SetUp() override {
    ServerFixture::SetUp();
    owner_ = connect_directory(path_, secret_);
    ASSERT_NE(owner_, nullptr) << last_error();
    ctx_ = owner_->register_resource(named("context", "owner"), ROCL_NULL_GID);
    ASSERT_GT(ctx_, 0) << last_error();
    for (int i = 0; i < kMany; ++i) {
      AttrList l(256);
      ASSERT_EQ(l.add("type", std::string_view("probe")), ROCL_OK);
      ASSERT_EQ(l.add("i", std::string_view(std::to_string(i))), ROCL_OK);
      const std::int64_t g = owner_->register_resource(l, static_cast<rocl_gid_t>(ctx_));
      ASSERT_GT(g, 0) << last_error();
      gids_.push_back(g);
    }
  }
  static AttrList probe_pattern() {
    AttrList p(64);
    EXPECT_EQ(p.add("type", std::string_view("probe")), ROCL_OK);
    return p;
  }
  static AttrList ask() {
    AttrList a(128);
    EXPECT_EQ(a.add_unspecified("i", 8), ROCL_OK);
    EXPECT_EQ(a.add_unspecified("context", 8), ROCL_OK);
    EXPECT_EQ(a.add_unspecified("absent", 8), ROCL_OK);
    return a;
  }
  // QUERY_START + QUERY_NEXT round trips served so far.
  std::uint64_t batches() const {
    return server_->requests(static_cast<std::uint16_t>(dirproto::Op::kQueryStart)) +
           server_->requests(static_cast<std::uint16_t>(dirproto::Op::kQueryNext));
  }
  std::uint64_t stops() const {
    return server_->requests(static_cast<std::uint16_t>(dirproto::Op::kQueryStop));
  }
  // Runs the probe query to its end through d; the indexes ("i") answered,
  // checking order, attributes and that the answers are the registered ones.
  std::vector<int> drain(Directory &d) {
    std::vector<int> got;
    auto cur = d.query_start(probe_pattern());
    EXPECT_NE(cur, nullptr) << last_error();
    if (!cur) {
      return got;
    }
    AttrList a = ask();
    std::int64_t last = 0;
    for (;;) {
      const std::int64_t g = cur->next(a);
      if (g == ROCL_EEND) {
        break;
      }
      EXPECT_GT(g, last) << last_error();
      if (g <= last) {
        break;
      }
      last = g;
      const int i = std::stoi(value_of(a, "i"));
      EXPECT_EQ(gids_.at(static_cast<std::size_t>(i)), g);
      std::size_t len = 0;
      const std::byte *c = a.get("context", &len);
      std::int64_t owner = 0;
      EXPECT_EQ(len, sizeof owner);
      if (c != nullptr && len == sizeof owner) {
        std::memcpy(&owner, c, sizeof owner);
      }
      EXPECT_EQ(owner, ctx_);
      EXPECT_EQ(a.get("absent"), nullptr);
      got.push_back(i);
    }
    return got;
  }

  std::unique_ptr<Directory> owner_;
  std::int64_t ctx_ = 0;
  std::vector<std::int64_t> gids_;
};

TEST_F(BatchFixture, ManyAnswersInFewRoundTrips) {
  auto d = connect_directory(path_, secret_);
  ASSERT_NE(d, nullptr) << last_error();
  const std::uint64_t b0 = batches();
  const std::uint64_t s0 = stops();
  const std::vector<int> got = drain(*d);
  ASSERT_EQ(got.size(), std::size_t{kMany});
  for (int i = 0; i < kMany; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
  }
  constexpr int kN = static_cast<int>(dirproto::kMaxBatchAnswers);
  EXPECT_EQ(batches() - b0, std::uint64_t{(kMany + kN - 1) / kN});  // ceil(200 / 64) = 4
  // The last batch freed the server's cursor: no QUERY_STOP.
  EXPECT_EQ(stops() - s0, 0u);
  // A query whose answers all fit one batch is one round trip.
  AttrList one(64);
  ASSERT_EQ(one.add("i", std::string_view("7")), ROCL_OK);
  const std::uint64_t b1 = batches();
  auto cur = d->query_start(one);
  ASSERT_NE(cur, nullptr) << last_error();
  AttrList a = ask();
  EXPECT_EQ(cur->next(a), gids_[7]);
  EXPECT_EQ(cur->next(a), ROCL_EEND);
  EXPECT_NE(std::string(last_error()).find("1 answers given"), std::string::npos) << last_error();
  cur.reset();
  EXPECT_EQ(batches() - b1, 1u);
}

TEST_F(BatchFixture, LargeAnswersAreBatchedByBytes) {
  // 10 resources of ~20 KiB: three fit a 64 KiB batch; one of ~100 KiB comes alone.
  std::vector<std::int64_t> big;
  for (int i = 0; i < 11; ++i) {
    AttrList l(200 * 1024);
    ASSERT_EQ(l.add("type", std::string_view("big")), ROCL_OK);
    ASSERT_EQ(l.add("blob", std::string(i == 5 ? 100000 : 20000, static_cast<char>('a' + i))),
              ROCL_OK);
    big.push_back(owner_->register_resource(l, static_cast<rocl_gid_t>(ctx_)));
    ASSERT_GT(big.back(), 0) << last_error();
  }
  AttrList pattern(64);
  ASSERT_EQ(pattern.add("type", std::string_view("big")), ROCL_OK);
  const std::uint64_t b0 = batches();
  auto cur = owner_->query_start(pattern);
  ASSERT_NE(cur, nullptr) << last_error();
  AttrList a(200 * 1024);
  ASSERT_EQ(a.add_unspecified("blob", 100000), ROCL_OK);
  for (int i = 0; i < 11; ++i) {
    ASSERT_EQ(cur->next(a), big[static_cast<std::size_t>(i)]) << last_error();
    const std::string v = value_of(a, "blob");
    EXPECT_EQ(v.size(), i == 5 ? 100000u : 20000u);
    EXPECT_EQ(v[0], static_cast<char>('a' + i));
  }
  EXPECT_EQ(cur->next(a), ROCL_EEND);
  // [0 1 2] [3 4] [5] [6 7 8] [9 10]
  EXPECT_EQ(batches() - b0, 5u);
}

TEST_F(BatchFixture, ThreadsQueryAtOnce) {
  auto other = connect_directory(path_, secret_);
  ASSERT_NE(other, nullptr) << last_error();
  std::atomic<int> complete{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      Directory &d = t % 2 == 0 ? *owner_ : *other;  // three threads per connection
      for (int r = 0; r < 15; ++r) {
        const std::vector<int> got = drain(d);
        bool in_order = got.size() == std::size_t{kMany};
        for (std::size_t i = 0; in_order && i < got.size(); ++i) {
          in_order = got[i] == static_cast<int>(i);
        }
        complete += in_order ? 1 : 0;
      }
    });
  }
  // One cursor shared by two threads: every answer exactly once, in total.
  auto shared = other->query_start(probe_pattern());
  ASSERT_NE(shared, nullptr) << last_error();
  std::vector<std::int64_t> seen[2];
  std::thread a([&] {
    AttrList l = ask();
    for (std::int64_t g; (g = shared->next(l)) > 0;) {
      seen[0].push_back(g);
    }
  });
  std::thread b([&] {
    AttrList l = ask();
    for (std::int64_t g; (g = shared->next(l)) > 0;) {
      seen[1].push_back(g);
    }
  });
  a.join();
  b.join();
  for (auto &t : threads) {
    t.join();
  }
  EXPECT_EQ(complete.load(), 6 * 15);
  std::set<std::int64_t> all(seen[0].begin(), seen[0].end());
  all.insert(seen[1].begin(), seen[1].end());
  EXPECT_EQ(all.size(), std::size_t{kMany});
  EXPECT_EQ(seen[0].size() + seen[1].size(), std::size_t{kMany});
  EXPECT_TRUE(std::is_sorted(seen[0].begin(), seen[0].end()));
  EXPECT_TRUE(std::is_sorted(seen[1].begin(), seen[1].end()));
}

TEST_F(BatchFixture, CursorStoppedEarly) {
  auto d = connect_directory(path_, secret_);
  ASSERT_NE(d, nullptr) << last_error();
  const std::uint64_t s0 = stops();
  {
    auto cur = d->query_start(probe_pattern());
    ASSERT_NE(cur, nullptr) << last_error();
    AttrList a = ask();
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(cur->next(a), gids_[static_cast<std::size_t>(i)]);
    }
    clear_error();
  }  // stopped with answers left: the server's cursor goes with QUERY_STOP
  EXPECT_EQ(stops() - s0, 1u);
  EXPECT_EQ(std::string(last_error()), "");  // the stop reported nothing
  // Unfinished cursors count against the connection's limit (256) ...
  std::vector<std::unique_ptr<QueryCursor>> open;
  for (int i = 0; i < 256; ++i) {
    open.push_back(d->query_start(probe_pattern()));
    ASSERT_NE(open.back(), nullptr) << i << ": " << last_error();
  }
  EXPECT_EQ(d->query_start(probe_pattern()), nullptr);
  EXPECT_NE(std::string(last_error()).find("queries are in progress"), std::string::npos)
      << last_error();
  // ... a query answered in one batch keeps no cursor, so it still works ...
  AttrList one(64);
  ASSERT_EQ(one.add("i", std::string_view("3")), ROCL_OK);
  auto small = d->query_start(one);
  ASSERT_NE(small, nullptr) << last_error();
  AttrList a = ask();
  EXPECT_EQ(small->next(a), gids_[3]);
  // ... and stopping them frees the slots.
  open.clear();
  EXPECT_EQ(drain(*d).size(), std::size_t{kMany});
}

TEST_F(BatchFixture, AnswerDeletedMidQueryIsSkipped) {
  // Documented behaviour (rocl.h, directory.hpp): a resource deleted before
  // the next() that would return it is skipped, even when the cursor holds
  // it in a batch already; resources of the batch that are still there
  // come in order.
  auto other = connect_directory(path_, secret_);
  ASSERT_NE(other, nullptr) << last_error();
  auto cur = other->query_start(probe_pattern());
  ASSERT_NE(cur, nullptr) << last_error();
  AttrList a = ask();
  ASSERT_EQ(cur->next(a), gids_[0]);
  ASSERT_EQ(cur->next(a), gids_[1]);
  const std::uint64_t b0 = batches();
  // Deleted by the owner's connection: 2 (the next answer, in the batch
  // held), 40 (later in it), 150 (a later batch).
  for (int i : {2, 40, 150}) {
    ASSERT_EQ(owner_->remove(static_cast<rocl_gid_t>(gids_[static_cast<std::size_t>(i)])), ROCL_OK);
  }
  std::vector<std::int64_t> rest;
  for (std::int64_t g; (g = cur->next(a)) > 0;) {
    rest.push_back(g);
    if (rest.size() == 10) {  // and one deleted through the cursor's own connection
      ASSERT_EQ(other->remove(static_cast<rocl_gid_t>(gids_[20])), ROCL_OK);
    }
  }
  EXPECT_EQ(cur->next(a), ROCL_EEND);
  std::vector<std::int64_t> want;
  for (int i = 2; i < kMany; ++i) {
    if (i != 2 && i != 20 && i != 40 && i != 150) {
      want.push_back(gids_[static_cast<std::size_t>(i)]);
    }
  }
  EXPECT_EQ(rest, want);
  // Each deletion made the cursor ask again at most once.
  EXPECT_LE(batches() - b0, 3u + 2u);
}

TEST_F(BatchFixture, DeletedThroughTheSameConnectionIsSkipped) {
  auto cur = owner_->query_start(probe_pattern());
  ASSERT_NE(cur, nullptr) << last_error();
  AttrList a = ask();
  std::vector<std::int64_t> got;
  for (std::int64_t g; (g = cur->next(a)) > 0;) {
    got.push_back(g);
    if (got.size() == 5) {
      ASSERT_EQ(owner_->remove(static_cast<rocl_gid_t>(gids_[5])), ROCL_OK);
      ASSERT_EQ(owner_->remove(static_cast<rocl_gid_t>(gids_[6])), ROCL_OK);
    }
  }
  ASSERT_EQ(got.size(), std::size_t{kMany - 2});
  EXPECT_EQ(got[4], gids_[4]);
  EXPECT_EQ(got[5], gids_[7]);
  // A resource deleted after the query ended all of its batches is not
  // looked at again: EEND stays EEND.
  EXPECT_EQ(cur->next(a), ROCL_EEND);
}

TEST_F(ServerFixture, MalformedBatchesAreErrorsNamingTheField) {
  AttrList list(64);
  ASSERT_EQ(list.add("type", std::string_view("w")), ROCL_OK);
  struct Case {
    std::vector<std::byte> body;
    std::uint64_t aux;
    const char *needle;
  };
  auto batch = [&](int n, bool more) {
    dirproto::BatchWriter w(dirproto::kMaxBatchAnswers);
    for (int i = 0; i < n; ++i) {
      w.add(static_cast<std::uint64_t>(i) + 1, list.bytes());
    }
    return w.finish(more);
  };
  std::vector<Case> cases;
  auto overlong = batch(2, false);
  overlong[0] = std::byte{65};  // count 65 > 64 asked for
  cases.push_back({overlong, 0, "'count' of 65 answers"});
  auto cut = batch(1, false);
  cut.resize(cut.size() - 8);
  cases.push_back({cut, 0, "list 'len'"});
  cases.push_back({batch(1, true), 0, "cursor id 0 (with more answers)"});
  cases.push_back({batch(1, false), 9, "cursor id 9 (without more answers)"});
  for (const Case &c : cases) {
    const std::string fake = dir_ + "/bad.sock";
    FakeServer server(fake, secret_, 0, dirproto::kVersion,
                      dirproto::encode_message(dirproto::Op::kReply, ROCL_OK, 0, c.aux, c.body));
    auto d = connect_directory(fake, secret_, [](const std::string &) {});
    ASSERT_NE(d, nullptr) << last_error();
    EXPECT_EQ(d->query_start(list), nullptr);
    const std::string err = last_error();
    EXPECT_NE(err.find(c.needle), std::string::npos) << err;
    EXPECT_NE(err.find("rocl_query_start: directory server at"), std::string::npos) << err;
    // Without an epoch page the client asks for one answer at a time.
    EXPECT_EQ(server.last_aux_.load(), 1u);
    d.reset();
  }
}

}  // namespace
}  // namespace rocl::impl

namespace rocl::impl {
namespace {

// A server that also listens on tcp: clients over tcp and over the Unix
// socket see one directory; a tcp client gets no removal epoch; a wrong
// secret is refused over tcp too; a tcp client's contexts leave with its
// connection; a name that does not resolve is named.
class TcpServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rocl-dirtest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/dir.sock";
    server_ = std::make_unique<DirectoryServer>(path_, secret_, 4);
    server_->set_log([this](const std::string &line) {
      std::lock_guard lock(log_mu_);
      log_ += line + "\n";
    });
    ASSERT_EQ(server_->listen_tcp("127.0.0.1:0"), ROCL_OK);
    ASSERT_EQ(server_->start(), ROCL_OK) << last_error();
    ASSERT_NE(server_->tcp_port(), 0);
    tcp_ = "tcp:127.0.0.1:" + std::to_string(server_->tcp_port());
  }
  void TearDown() override {
    server_.reset();
    rmdir(dir_.c_str());
  }
  std::string log() {
    std::lock_guard lock(log_mu_);
    return log_;
  }
  JobSecret secret_ = JobSecret::generate();
  std::string dir_, path_, tcp_;
  std::unique_ptr<DirectoryServer> server_;
  std::mutex log_mu_;
  std::string log_;
};

TEST_F(TcpServerFixture, TcpAndUnixClientsShareOneDirectory) {
  std::string said;
  auto over_tcp = connect_directory(tcp_, secret_, [&](const std::string &s) { said += s; });
  auto local = connect_directory(path_, secret_);
  ASSERT_TRUE(over_tcp && local) << last_error();
  EXPECT_EQ(over_tcp->removal_epoch(), nullptr);
  EXPECT_TRUE(said.empty()) << said;  // no epoch over tcp is the contract, not news
  EXPECT_NE(local->removal_epoch(), nullptr);
  const std::int64_t ctx = over_tcp->register_resource(named("context", "t"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0) << last_error();
  EXPECT_EQ(gid_server(static_cast<rocl_gid_t>(ctx)), 4);
  const std::int64_t w = over_tcp->register_resource(named("worker", "tw"), ctx);
  ASSERT_GT(w, 0);
  AttrList q(256);
  ASSERT_EQ(q.add("name", std::string_view("tw")), ROCL_OK);
  q.add_unspecified("type", 32);
  rocl_gid_t gid = ROCL_NULL_GID;
  ASSERT_EQ(local->query(&gid, q), ROCL_OK) << last_error();
  EXPECT_EQ(gid, static_cast<rocl_gid_t>(w));
  EXPECT_EQ(value_of(q, "type"), "worker");
  over_tcp.reset();  // its context and worker leave with the connection
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server_->resources() != 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(server_->resources(), 0u);
  EXPECT_NE(log().find("client 127.0.0.1:"), std::string::npos) << log();
}

TEST_F(TcpServerFixture, AWrongSecretIsRefusedOverTcp) {
  EXPECT_EQ(connect_directory(tcp_, JobSecret::generate()), nullptr);
  EXPECT_NE(std::string(last_error()).find("127.0.0.1:" + std::to_string(server_->tcp_port())),
            std::string::npos)
      << last_error();
}

TEST_F(TcpServerFixture, BadTcpAddressesAreNamed) {
  EXPECT_EQ(connect_directory("tcp:no-such-host.invalid:7", secret_), nullptr);
  EXPECT_NE(std::string(last_error()).find("cannot resolve 'no-such-host.invalid:7'"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(connect_directory("tcp:127.0.0.1", secret_), nullptr);
  EXPECT_NE(std::string(last_error()).find("not tcp:HOST:PORT"), std::string::npos) << last_error();
  DirectoryServer other(dir_ + "/other.sock", secret_, 5);
  EXPECT_EQ(other.listen_tcp("nowhere0:1"), ROCL_OK);
  EXPECT_NE(other.start(), ROCL_OK);
  EXPECT_NE(std::string(last_error()).find("'nowhere0:1'"), std::string::npos) << last_error();
}

}  // namespace
}  // namespace rocl::impl
