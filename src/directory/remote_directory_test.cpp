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

namespace rocl::impl {
namespace {

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
             std::uint16_t version)
      : path_(path) {
    listen_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.data(), path.size());
    EXPECT_EQ(bind(listen_, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    EXPECT_EQ(listen(listen_, 4), 0);
    thread_ = std::thread([this, secret, reply_aux, version] {
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
        }
      }
      char c;
      while (read(fd, &c, 1) > 0) {
      }
      close(fd);
    });
  }
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
  EXPECT_NE(err.find("directory protocol version 1, but this side speaks version 2"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("same rocl release"), std::string::npos) << err;
}

}  // namespace
}  // namespace rocl::impl
