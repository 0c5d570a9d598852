// route_cache_test.cpp - the route cache's removal epoch (route_cache.hpp):
// entries of an older epoch are misses; and, end to end, two contexts in one
// process (each with its own connection to an in-process node directory
// server, talking tcp) where a send over a cached route to a resource the
// other context deleted, or to a context that went away, fails with
// ROCL_EBADGID as rocl_delete promises.
#include "core/route_cache.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/context.hpp"
#include "directory/directory_server.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {

// Each thread keeps its last lookup (no lock on a repeated one): it must
// still see every change made since, by any thread, and never an entry of
// another cache.
TEST(RouteCache, ARepeatedLookupSeesEveryChange) {
  RouteCache cache, other;
  Route r;
  r.context = 0x10;
  r.address = cache.intern("here");
  cache.store(1, r, 1);
  Route out;
  ASSERT_TRUE(cache.find(1, 1, &out));  // now this thread's last lookup
  ASSERT_TRUE(cache.find(1, 1, &out));
  EXPECT_EQ(out.context, 0x10u);
  EXPECT_FALSE(other.find(1, 1, &out)) << "another cache's entry";
  Route moved = r;
  moved.context = 0x11;
  std::thread([&] { cache.store(1, moved, 2); }).join();
  EXPECT_EQ(cache.lookup(1, 1, &out), RouteCache::Lookup::kStale);
  ASSERT_TRUE(cache.find(1, 2, &out));
  EXPECT_EQ(out.context, 0x11u);
  std::thread([&] { cache.forget_context(0x11); }).join();
  EXPECT_EQ(cache.lookup(1, 2, &out), RouteCache::Lookup::kMiss);
  EXPECT_EQ(cache.lookup(1, 2, &out), RouteCache::Lookup::kMiss);  // a remembered miss
  std::thread([&] { cache.store(1, r, 3); }).join();
  ASSERT_TRUE(cache.find(1, 3, &out)) << "a remembered miss hid a route stored since";
  EXPECT_FALSE(cache.find(2, 3, &out));
  EXPECT_FALSE(cache.find(2, 3, &out));
  ASSERT_TRUE(cache.find(1, 3, &out));
  ASSERT_TRUE(cache.find(1, 3, &out));
  std::thread([&] { cache.forget(1); }).join();
  EXPECT_EQ(cache.lookup(1, 3, &out), RouteCache::Lookup::kMiss);
}

// A thread keeps several recent lookups (a collective's children, a
// ring's neighbours): each gives its own route, and a change by any thread
// to one of them is seen, while more destinations than slots still give
// the right routes.
TEST(RouteCache, RecentLookupsOfSeveralResourcesSeeEveryChange) {
  RouteCache cache;
  constexpr rocl_gid_t kCount = 9;  // more than a thread keeps
  for (rocl_gid_t g = 1; g <= kCount; ++g) {
    Route r;
    r.context = 0x100 + g;
    cache.store(g, r, 1);
  }
  Route out;
  for (int round = 0; round < 3; ++round) {
    for (rocl_gid_t g : {rocl_gid_t{1}, rocl_gid_t{2}, rocl_gid_t{3}, rocl_gid_t{4}}) {
      ASSERT_TRUE(cache.find(g, 1, &out));
      EXPECT_EQ(out.context, 0x100 + g);
    }
  }
  std::thread([&] { cache.forget(2); }).join();
  EXPECT_EQ(cache.lookup(2, 1, &out), RouteCache::Lookup::kMiss);
  for (rocl_gid_t g : {rocl_gid_t{1}, rocl_gid_t{3}, rocl_gid_t{4}}) {
    ASSERT_TRUE(cache.find(g, 1, &out));
    EXPECT_EQ(out.context, 0x100 + g);
  }
  Route moved;
  moved.context = 0x999;
  std::thread([&] { cache.store(3, moved, 2); }).join();
  EXPECT_EQ(cache.lookup(3, 1, &out), RouteCache::Lookup::kStale);
  ASSERT_TRUE(cache.find(3, 2, &out));
  EXPECT_EQ(out.context, 0x999u);
  for (rocl_gid_t g = 4; g <= kCount; ++g) {
    ASSERT_TRUE(cache.find(g, 1, &out)) << g;
    EXPECT_EQ(out.context, 0x100 + g);
  }
  ASSERT_TRUE(cache.find(1, 1, &out));
  EXPECT_EQ(out.context, 0x101u);
}

TEST(RouteCache, EntriesOfAnOlderEpochAreMisses) {
  RouteCache cache;
  Route r;
  r.context = 0x10;
  r.address = cache.intern("somewhere");
  cache.store(1, r, 5);
  Route out;
  ASSERT_TRUE(cache.find(1, 5, &out));
  EXPECT_EQ(out.context, 0x10u);
  EXPECT_EQ(out.address, "somewhere");
  EXPECT_FALSE(cache.find(2, 5, &out));
  // Something left the directory: the entry is not trusted any more, but
  // lookup still says what it was, to be checked.
  EXPECT_FALSE(cache.find(1, 6, &out));
  out = Route{};
  EXPECT_EQ(cache.lookup(1, 6, &out), RouteCache::Lookup::kStale);
  EXPECT_EQ(out.context, 0x10u);
  EXPECT_EQ(cache.lookup(1, 5, &out), RouteCache::Lookup::kHit);
  EXPECT_EQ(cache.lookup(2, 6, &out), RouteCache::Lookup::kMiss);
  // Asked again at epoch 6 and still there: cached again.
  cache.store(1, r, 6);
  EXPECT_TRUE(cache.find(1, 6, &out));
  // A slower sender's older answer does not replace a newer one.
  Route older = r;
  older.context = 0x20;
  cache.store(1, older, 5);
  ASSERT_TRUE(cache.find(1, 6, &out));
  EXPECT_EQ(out.context, 0x10u);
  cache.forget(1);
  EXPECT_FALSE(cache.find(1, 6, &out));
  // Without an epoch (a directory that has none) the value is always 0.
  EXPECT_EQ(RouteCache::epoch_now(nullptr), 0u);
  std::atomic<std::uint64_t> e{7};
  EXPECT_EQ(RouteCache::epoch_now(&e), 7u);
  cache.store(3, r, 0);
  cache.store(4, older, 0);
  cache.forget_context(0x10);
  EXPECT_FALSE(cache.find(3, 0, &out));
  EXPECT_TRUE(cache.find(4, 0, &out));
}

// ---- two contexts, one node server ---------------------------------------------------

class TwoContexts : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rocl-routes-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    secret_file_ = dir_ + "/secret";
    ASSERT_EQ(secret_.write_file(secret_file_), ROCL_OK) << last_error();
    server_ = std::make_unique<DirectoryServer>(dir_ + "/dir.sock", secret_);
    server_->set_log([](const std::string &) {});
    ASSERT_EQ(server_->start(), ROCL_OK) << last_error();
    ASSERT_NE(server_->removal_epoch(), nullptr);
    Options o = load_options();
    o.directory = "unix:" + dir_ + "/dir.sock";
    o.secret_file = secret_file_;
    o.transports = "tcp";
    o.pool_max = std::size_t{64} << 20;
    try {
      a_ = std::make_unique<Context>(o);
      b_ = std::make_unique<Context>(o);
    } catch (const std::exception &e) {
      FAIL() << e.what();
    }
    ASSERT_NE(a_->directory().removal_epoch(), nullptr);
  }
  void TearDown() override {
    b_.reset();
    a_.reset();
    server_.reset();
    unlink(secret_file_.c_str());
    rmdir(dir_.c_str());
  }

  static rocl_gid_t reg(Context &c, const char *name) {
    AttrList l(128);
    EXPECT_EQ(l.add("name", std::string_view(name)), ROCL_OK);
    const std::int64_t g = c.register_resource(l);
    EXPECT_GT(g, 0) << last_error();
    return static_cast<rocl_gid_t>(g);
  }
  static int send(Context &c, rocl_gid_t from, rocl_gid_t to) {
    char text[] = "hello";
    return c.send(from, to, 1, 0, text, sizeof text - 1);
  }
  static void expect_message(Context &c, rocl_gid_t at, rocl_gid_t from) {
    char got[16];
    rocl_status_t st;
    ASSERT_EQ(c.recv(at, from, 1, 0, got, sizeof got, &st, 5000), ROCL_OK) << last_error();
    EXPECT_EQ(std::string(got, st.len), "hello");
  }

  JobSecret secret_ = JobSecret::generate();
  std::string dir_;
  std::string secret_file_;
  std::unique_ptr<DirectoryServer> server_;
  std::unique_ptr<Context> a_;
  std::unique_ptr<Context> b_;
};

TEST_F(TwoContexts, SendOverACachedRouteToADeletedResourceFails) {
  const rocl_gid_t x = reg(*a_, "x");
  const rocl_gid_t y = reg(*a_, "y");
  const rocl_gid_t s = reg(*b_, "s");
  // Resolved once, then over the cached routes.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(send(*b_, s, x), ROCL_OK) << last_error();
    expect_message(*a_, x, s);
    ASSERT_EQ(send(*b_, s, y), ROCL_OK) << last_error();
    expect_message(*a_, y, s);
  }
  ASSERT_EQ(a_->delete_resource(x), ROCL_OK);
  // At once (the epoch moved before rocl_delete returned), and again.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(send(*b_, s, x), ROCL_EBADGID);
    const std::string why = last_error();
    EXPECT_NE(why.find("is not a registered resource"), std::string::npos) << why;
  }
  // The other resource of that context is asked for again and still works.
  ASSERT_EQ(send(*b_, s, y), ROCL_OK) << last_error();
  expect_message(*a_, y, s);
}

TEST_F(TwoContexts, SendOverACachedRouteToAContextThatWentAwayFails) {
  const rocl_gid_t y = reg(*a_, "y");
  const rocl_gid_t s = reg(*b_, "s");
  ASSERT_EQ(send(*b_, s, y), ROCL_OK) << last_error();
  expect_message(*a_, y, s);
  const std::uint64_t e0 = server_->removal_epoch()->load();
  a_.reset();  // rocl_exit of the other "process"
  EXPECT_GT(server_->removal_epoch()->load(), e0);
  EXPECT_EQ(send(*b_, s, y), ROCL_EBADGID);
  EXPECT_NE(std::string(last_error()).find("is not a registered resource"), std::string::npos)
      << last_error();
}

// A destination the directory cannot look up (here: its server is gone)
// is not "no such resource": the send fails with ROCL_EPEER saying why.
TEST_F(TwoContexts, ADestinationTheDirectoryCannotLookUpIsNamedAsSuch) {
  const rocl_gid_t y = reg(*a_, "y");
  const rocl_gid_t s = reg(*b_, "s");
  server_->stop();
  EXPECT_EQ(send(*b_, s, y), ROCL_EPEER);
  const std::string why = last_error();
  EXPECT_NE(why.find("cannot look up destination gid"), std::string::npos) << why;
  EXPECT_NE(why.find("directory server"), std::string::npos) << why;
}

}  // namespace
}  // namespace rocl::impl
