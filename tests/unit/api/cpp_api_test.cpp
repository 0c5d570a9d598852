// cpp_api_test.cpp - the C++ API of rocl.hpp: Context, Resource, Buffer,
// Request, query/query_all and rocl::Error.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.hpp"
#include "test_util.hpp"

using namespace apitest;
using namespace std::chrono_literals;

namespace {

class CppApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.emplace();
    base_ = pool_stats();
  }
  void TearDown() override { ctx_.reset(); }
  void expect_pool_at_baseline() {
    rocl_pool_stats_t s = pool_stats();
    EXPECT_EQ(s.in_use_buffers, base_.in_use_buffers);
    EXPECT_EQ(s.in_use_bytes, base_.in_use_bytes);
  }
  std::optional<rocl::Context> ctx_;
  rocl_pool_stats_t base_{};
};

// ---- Context ---------------------------------------------------------------------------

TEST(CppContext, RaiiInitAndExit) {
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  {
    rocl::Context c;
    EXPECT_GT(c.gid(), 0u);
    EXPECT_EQ(rocl_context_gid(), c.gid());
    {
      rocl::Context d;  // shares the reference-counted context
      EXPECT_EQ(d.gid(), c.gid());
    }
    EXPECT_EQ(rocl_context_gid(), c.gid()) << "one Context still alive";
  }
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  EXPECT_EQ(rocl_exit(), ROCL_ENOINIT) << "every Context released its reference";
}

TEST(CppContext, ResourceWithoutContextThrowsENOINIT) {
  try {
    rocl::Resource r(rocl::Attributes{{"type", "no-context"}});
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_ENOINIT);
    EXPECT_STRNE(e.what(), "");
  }
}

// rocl.hpp: "what means the program or the set-up is wrong (rocl not
// initialised, ...) throws rocl::Error, which carries the ROCL_E* code".
TEST(CppContext, BufferWithoutContextThrowsENOINIT) {
  try {
    rocl::Buffer b = rocl::Buffer::get(10);
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_ENOINIT) << e.what();
  }
}

// ---- messaging -------------------------------------------------------------------------

TEST_F(CppApi, SendBufferIsZeroCopy) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}, {"name", "a"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}, {"name", "b"}});
  rocl::Buffer buf = rocl::Buffer::get(100);
  ASSERT_TRUE(buf);
  std::memcpy(buf.data(), "zero-copy", 9);
  buf.resize(9);
  const std::byte *sent = buf.data();
  a.send(b.gid(), 3, std::move(buf));
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is what is tested
  EXPECT_FALSE(buf) << "the buffer moved into the library";

  std::optional<rocl::Message> m = b.recv(rocl::any_gid, rocl::any_tag, 2s);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->buffer.data(), sent) << "same pointer: no copy";
  EXPECT_EQ(m->buffer.view(), "zero-copy");
  EXPECT_EQ(m->buffer.size(), 9u);
  EXPECT_EQ(m->origin, a.gid());
  EXPECT_EQ(m->tag, 3);
  m.reset();
  expect_pool_at_baseline();
}

TEST_F(CppApi, SendStringViewCopies) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  std::string text = "copied text";
  a.send(b.gid(), 1, std::string_view(text));
  text = "changed";
  auto m = b.recv(a.gid(), 1, 2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "copied text");
  EXPECT_EQ(m->origin, a.gid());
  EXPECT_EQ(m->tag, 1);

  a.send(b.gid(), 2, std::as_bytes(std::span<const char>("bytes", 5)));
  auto n = b.recv(rocl::any_gid, 2, 2s);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->buffer.view(), "bytes");
}

TEST_F(CppApi, RecvTimeoutGivesNullopt) {
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  auto t0 = Clock::now();
  EXPECT_FALSE(b.recv(rocl::any_gid, rocl::any_tag, rocl::poll).has_value());
  auto t1 = Clock::now();
  EXPECT_FALSE(b.recv(rocl::any_gid, rocl::any_tag, 50ms).has_value());
  EXPECT_GE(ms_since(t1), 50);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count(), 100);
}

TEST_F(CppApi, RecvForeverWaitsForASend) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  std::thread t([&] {
    sleep_ms(50);
    a.send(b.gid(), 0, std::string_view("late"));
  });
  auto m = b.recv();
  t.join();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "late");
}

TEST_F(CppApi, UnknownGidThrowsEBADGID) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  try {
    a.send(kUnknownGid, 0, std::string_view("lost"));
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EBADGID);
    EXPECT_TRUE(names_gid(e.what(), kUnknownGid)) << e.what();
  }
  // A Buffer&& send that fails leaves the buffer with the caller.
  rocl::Buffer buf = rocl::Buffer::get(10);
  const std::byte *p = buf.data();
  EXPECT_THROW(a.send(kUnknownGid, 0, std::move(buf)), rocl::Error);
  // NOLINTNEXTLINE(bugprone-use-after-move): a failed send leaves the buffer owned
  EXPECT_TRUE(buf) << "still owned after the failed send";
  EXPECT_EQ(buf.data(), p);
  buf = rocl::Buffer();
  expect_pool_at_baseline();

  try {
    a.send(a.gid(), -1, std::string_view("bad tag"));
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EINVAL);
  }
}

TEST_F(CppApi, RecvOnDeletedResourceThrows) {
  std::optional<rocl::Resource> r;
  r.emplace(rocl::Attributes{{"type", "cpp-del"}});
  rocl::gid_t g = r->gid();
  rocl::Resource other(rocl::Attributes{{"type", "cpp"}});
  r.reset();  // deletes it
  try {
    other.send(g, 0, std::string_view("x"));
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EBADGID);
  }
  EXPECT_FALSE(rocl::query(rocl::Attributes{{"type", "cpp-del"}}).has_value());
}

// ---- Request -----------------------------------------------------------------------------------

TEST_F(CppApi, RequestTestWaitCancel) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});

  rocl::Request r = b.irecv();
  EXPECT_TRUE(r.pending());
  EXPECT_FALSE(r.test());
  EXPECT_FALSE(r.wait(20ms).has_value()) << "timed out: nullopt, still pending";
  EXPECT_TRUE(r.pending());
  a.send(b.gid(), 4, std::string_view("req"));
  auto m = r.wait(2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "req");
  EXPECT_EQ(m->origin, a.gid());
  EXPECT_EQ(m->tag, 4);
  EXPECT_FALSE(r.pending());

  rocl::Request c = b.irecv(a.gid(), 9);
  EXPECT_TRUE(c.cancel());
  EXPECT_FALSE(c.pending());
  a.send(b.gid(), 9, std::string_view("after cancel"));
  auto n = b.recv(a.gid(), 9, 2s);
  ASSERT_TRUE(n) << "the cancelled request did not take the message";
  EXPECT_EQ(n->buffer.view(), "after cancel");

  rocl::Request d = b.irecv();
  a.send(b.gid(), 1, std::string_view("done"));
  sleep_ms(50);
  EXPECT_FALSE(d.cancel()) << "too late to cancel";
  rocl::Message out;
  EXPECT_TRUE(d.test(&out));
  EXPECT_EQ(out.buffer.view(), "done");
}

TEST_F(CppApi, RequestTestCompletes) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  rocl::Request r = b.irecv();
  a.send(b.gid(), 2, std::string_view("polled"));
  rocl::Message out;
  bool done = false;
  for (int i = 0; i < 2000 && !done; ++i) {
    done = r.test(&out);
    if (!done) sleep_ms(1);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(out.buffer.view(), "polled");
  EXPECT_TRUE(r.test()) << "a completed request stays complete";
}

TEST_F(CppApi, IsendBufferAndSpan) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  rocl::Buffer buf = rocl::Buffer::get(16);
  std::memcpy(buf.data(), "isend-buf", 9);
  buf.resize(9);
  const std::byte *p = buf.data();
  rocl::Request s1 = a.isend(b.gid(), 1, std::move(buf));
  auto done1 = s1.wait(2s);
  ASSERT_TRUE(done1);
  EXPECT_FALSE(done1->buffer) << "a send's result carries no buffer";

  const char text[] = "isend-span";
  rocl::Request s2 = a.isend(b.gid(), 2, std::as_bytes(std::span<const char>(text, 10)));
  EXPECT_TRUE(s2.wait(2s).has_value());

  auto m1 = b.recv(a.gid(), 1, 2s);
  ASSERT_TRUE(m1);
  EXPECT_EQ(m1->buffer.data(), p);
  EXPECT_EQ(m1->buffer.view(), "isend-buf");
  auto m2 = b.recv(a.gid(), 2, 2s);
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->buffer.view(), "isend-span");
}

TEST_F(CppApi, DestroyingPendingRequestCancelsIt) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  { rocl::Request r = b.irecv(); }
  a.send(b.gid(), 0, std::string_view("not for the dead request"));
  auto m = b.recv(rocl::any_gid, rocl::any_tag, 2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "not for the dead request");
}

TEST_F(CppApi, DestroyingCompletedRequestFreesTheMessage) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  {
    rocl::Request r = b.irecv();
    a.send(b.gid(), 0, std::string_view("dropped"));
    sleep_ms(20);
  }
  EXPECT_FALSE(b.recv(rocl::any_gid, rocl::any_tag, rocl::poll).has_value())
      << "the message went to the request";
  expect_pool_at_baseline();
}

TEST_F(CppApi, RequestMoveTransfersOwnership) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  rocl::Request r = b.irecv();
  rocl::Request s = std::move(r);
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is what is tested
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(s.pending());
  a.send(b.gid(), 0, std::string_view("moved"));
  auto m = s.wait(2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "moved");
}

// ---- directory -------------------------------------------------------------------------------

TEST_F(CppApi, QueryAndQueryAll) {
  std::vector<rocl::Resource> rs;
  rs.reserve(5);
  for (int i = 0; i < 5; ++i) {
    rs.emplace_back(rocl::Attributes{{"type", "cpp-svc"}, {"name", "n" + std::to_string(i)}});
  }
  rocl::Resource other(rocl::Attributes{{"type", "cpp-other"}});

  auto f = rocl::query(rocl::Attributes{{"type", "cpp-svc"}, {"name", "n3"}}.ask("context", 8));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->gid, rs[3].gid());
  auto ctx = f->attributes.get("context");
  ASSERT_TRUE(ctx);
  ASSERT_EQ(ctx->size(), 8u);
  rocl::gid_t cg = 0;
  std::memcpy(&cg, ctx->data(), 8);
  EXPECT_EQ(cg, ctx_->gid());

  auto first = rocl::query(rocl::Attributes{{"type", "cpp-svc"}}.ask("name"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->gid,
            std::min({rs[0].gid(), rs[1].gid(), rs[2].gid(), rs[3].gid(), rs[4].gid()}));

  EXPECT_FALSE(rocl::query(rocl::Attributes{{"type", "cpp-none"}}).has_value());

  auto all = rocl::query_all(rocl::Attributes{{"type", "cpp-svc"}}.ask("name"));
  ASSERT_EQ(all.size(), 5u);
  std::set<std::string> names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(all[i].gid, all[i - 1].gid);
    }
    auto n = all[i].attributes.get("name");
    ASSERT_TRUE(n);
    names.insert(*n);
  }
  EXPECT_EQ(names, (std::set<std::string>{"n0", "n1", "n2", "n3", "n4"}));
  EXPECT_TRUE(rocl::query_all(rocl::Attributes{{"type", "cpp-none"}}).empty());

  auto c = rocl::query(rocl::Attributes{{"type", "context"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gid, ctx_->gid());
}

TEST_F(CppApi, ResourceDestructorDeletes) {
  rocl::gid_t g;
  {
    rocl::Resource r(rocl::Attributes{{"type", "cpp-scoped"}});
    g = r.gid();
    EXPECT_TRUE(rocl::query(rocl::Attributes{{"type", "cpp-scoped"}}).has_value());
  }
  EXPECT_FALSE(rocl::query(rocl::Attributes{{"type", "cpp-scoped"}}).has_value());
  EXPECT_EQ(rocl_delete(g), ROCL_EBADGID);
}

TEST_F(CppApi, DuplicateAttributeNameThrowsEINVAL) {
  rocl::Attributes attrs{{"type", "a"}};
  attrs.set("type", "b");
  try {
    rocl::Resource r(attrs);
    FAIL() << "no exception";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EINVAL);
  }
}

// ---- Buffer ------------------------------------------------------------------------------------

TEST_F(CppApi, BufferMoveSemanticsAndAutomaticReturn) {
  {
    rocl::Buffer a = rocl::Buffer::get(100);
    ASSERT_TRUE(a);
    EXPECT_EQ(a.size(), 100u);
    EXPECT_GE(a.capacity(), 100u);
    EXPECT_EQ(a.capacity(), rocl_bfsize(a.data()));
    std::byte *p = a.data();

    rocl::Buffer b = std::move(a);
    // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.capacity(), 0u);
    EXPECT_EQ(b.data(), p);

    rocl::Buffer c = rocl::Buffer::get(10);
    c = std::move(b);  // c's old buffer goes back to the pool
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(pool_stats().in_use_buffers, base_.in_use_buffers + 1);

    c.resize(c.capacity());
    EXPECT_THROW(c.resize(c.capacity() + 1), rocl::Error);
    try {
      c.resize(c.capacity() + 1);
    } catch (const rocl::Error &e) {
      EXPECT_EQ(e.code(), ROCL_ETOOBIG);
    }

    rocl::Buffer d = rocl::Buffer::get(0);
    EXPECT_TRUE(d);
    EXPECT_EQ(d.size(), 0u);
    void *raw = d.release();
    EXPECT_FALSE(d);
    EXPECT_EQ(rocl_bfret(raw), ROCL_OK) << "release hands the buffer to C code";
  }
  expect_pool_at_baseline();
}

TEST_F(CppApi, ReceivedMessagesReturnTheirBuffers) {
  rocl::Resource a(rocl::Attributes{{"type", "cpp"}});
  rocl::Resource b(rocl::Attributes{{"type", "cpp"}});
  for (int i = 0; i < 50; ++i) {
    if (i % 2 == 0) {
      rocl::Buffer buf = rocl::Buffer::get(static_cast<std::size_t>(i) * 100);
      a.send(b.gid(), i, std::move(buf));
    } else {
      a.send(b.gid(), i, std::string_view("text"));
    }
  }
  for (int i = 0; i < 50; ++i) {
    auto m = b.recv(a.gid(), rocl::any_tag, 2s);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->tag, i);
  }
  expect_pool_at_baseline();
}

// A thread spawned in this very process: it runs with its own resource
// and the argument's bytes, answers a message, and its resource leaves
// the directory when it returns; names not exported are named errors.
TEST_F(CppApi, SpawnedThreadRunsWithItsResourceAndArgument) {
  rocl::export_thread("echo-once", [](rocl::gid_t self, std::span<const std::byte> arg) {
    void *msg = nullptr;
    rocl_gid_t from = ROCL_NULL_GID;
    if (rocl_recv(self, ROCL_ANY_GID, 1, &msg, &from, nullptr, nullptr, 10000) != ROCL_OK) return;
    rocl_bfret(msg);
    std::string reply(reinterpret_cast<const char *>(arg.data()), arg.size());
    rocl_send(self, from, 2, reply.data(), reply.size());
  });
  EXPECT_THROW(rocl::export_thread("echo-once", [](rocl::gid_t, std::span<const std::byte>) {}),
               rocl::Error);
  rocl::Resource me({{"type", "spawner"}});
  const std::string arg = "argument";
  const rocl::gid_t t =
      rocl::spawn_thread(rocl_context_gid(), "echo-once", std::as_bytes(std::span(arg)));
  me.send(t, 1, std::string_view("go"));
  auto reply = me.recv(t, 2, std::chrono::seconds(10));
  ASSERT_TRUE(reply);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(reply->buffer.data()), reply->buffer.size()),
            arg);
  bool gone = false;
  for (int k = 0; k < 500 && !gone; ++k) {
    rocl_gid_t g = t;
    rocl_attrl_t *none = rocl_new_attrl(0);
    gone = rocl_query(&g, none) == ROCL_ENOTFOUND;
    rocl_kill_attrl(none);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(gone) << "the returned thread's resource is still registered";
  try {
    rocl::spawn_thread(rocl_context_gid(), "not-exported");
    ADD_FAILURE() << "spawned a function nobody exported";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_ENOTFOUND);
    EXPECT_NE(std::string(e.what()).find("does not export 'not-exported'"), std::string::npos)
        << e.what();
  }
}

// A process alone (no node directory server): no host takes spawns, and
// a spawn next to itself says why.
TEST_F(CppApi, SpawningWithoutADirectoryServerIsANamedError) {
  EXPECT_EQ(rocl::parent(), 0u);
  try {
    rocl::spawn("any", {"/bin/true"});
    ADD_FAILURE() << "spawned with no host that takes spawns";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_ENOTFOUND);
    EXPECT_NE(std::string(e.what()).find("no host of this job takes spawns"), std::string::npos)
        << e.what();
  }
  try {
    rocl::spawn_at(rocl_context_gid(), {"/bin/true"});
    ADD_FAILURE() << "spawned with no directory server";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EPEER);
    EXPECT_NE(std::string(e.what()).find("no node directory server"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(rocl::spawn("any", {}), rocl::Error);
}

TEST_F(CppApi, ErrorCarriesCodeAndText) {
  rocl::Error e(ROCL_EBUSY, "busy here");
  EXPECT_EQ(e.code(), ROCL_EBUSY);
  EXPECT_STREQ(e.what(), "busy here");
  const std::runtime_error &base = e;
  EXPECT_STREQ(base.what(), "busy here");
}

}  // namespace
