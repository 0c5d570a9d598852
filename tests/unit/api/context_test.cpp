// context_test.cpp - contexts (rocl_init/rocl_exit/rocl_context_gid), the
// "needs a context" rule, rocl_strerror and rocl_last_error.
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

const int kAllCodes[] = {ROCL_OK,    ROCL_EINVAL,    ROCL_ENOINIT,  ROCL_ENOMEM,    ROCL_EBADBUF,
                         ROCL_EBUSY, ROCL_ETOOBIG,   ROCL_EBADGID,  ROCL_ETIMEDOUT, ROCL_ENOTFOUND,
                         ROCL_EEND,  ROCL_ENOSPC,    ROCL_EDELETED, ROCL_ECANCELED, ROCL_EALREADY,
                         ROCL_EPEER, ROCL_EINTERNAL, ROCL_EEXIST};

TEST(Context, InitReturnsPositiveGidAndContextGidMatches) {
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  std::int64_t g = rocl_init();
  ASSERT_GT(g, 0) << rocl_last_error();
  EXPECT_EQ(rocl_context_gid(), static_cast<rocl_gid_t>(g));
  EXPECT_EQ(rocl_exit(), ROCL_OK);
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
}

TEST(Context, ReferenceCounted) {
  std::int64_t g1 = rocl_init();
  ASSERT_GT(g1, 0) << rocl_last_error();
  std::int64_t g2 = rocl_init();
  ASSERT_GT(g2, 0) << rocl_last_error();
  EXPECT_EQ(g1, g2) << "a second rocl_init only takes a reference on the same context";

  EXPECT_EQ(rocl_exit(), ROCL_OK);
  // One reference left: the context still works.
  EXPECT_EQ(rocl_context_gid(), static_cast<rocl_gid_t>(g1));
  rocl_gid_t r = must_register("refcount");
  EXPECT_NE(r, ROCL_NULL_GID);
  void *p = rocl_bfget(10);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(rocl_bfret(p), ROCL_OK);

  EXPECT_EQ(rocl_exit(), ROCL_OK);
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  EXPECT_EQ(rocl_exit(), ROCL_ENOINIT);
  EXPECT_STRNE(rocl_last_error(), "");
}

TEST(Context, ReinitAfterExitWorks) {
  for (int i = 0; i < 3; ++i) {
    std::int64_t g = rocl_init();
    ASSERT_GT(g, 0) << rocl_last_error();
    rocl_gid_t r = must_register("reinit");
    EXPECT_NE(r, ROCL_NULL_GID);
    EXPECT_EQ(rocl_exit(), ROCL_OK);
  }
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
}

TEST(Context, ExitWithoutInitIsENOINIT) {
  EXPECT_EQ(rocl_exit(), ROCL_ENOINIT);
  EXPECT_STRNE(rocl_last_error(), "");
}

TEST(Context, InitAndExitFromDifferentThreads) {
  std::int64_t g = 0;
  std::thread t([&] { g = rocl_init(); });
  t.join();
  ASSERT_GT(g, 0);
  EXPECT_EQ(rocl_context_gid(), static_cast<rocl_gid_t>(g));
  int rc = 1;
  std::thread u([&] { rc = rocl_exit(); });
  u.join();
  EXPECT_EQ(rc, ROCL_OK);
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
}

// Every function but rocl_init, rocl_strerror, rocl_last_error and the
// attribute-list functions needs a context.
void expect_everything_needs_init(const char *when) {
  SCOPED_TRACE(when);
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  AttrlHolder attrs;
  ASSERT_NE(attrs.get(), nullptr) << "attribute lists need no context";
  ASSERT_EQ(attrs.add("type", "x"), ROCL_OK);

  EXPECT_EQ(rocl_register(attrs.get()), ROCL_ENOINIT);
  EXPECT_STRNE(rocl_last_error(), "");
  EXPECT_EQ(rocl_delete(1), ROCL_ENOINIT);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, attrs.get()), ROCL_ENOINIT);
  EXPECT_EQ(rocl_query_start(attrs.get()), nullptr);
  EXPECT_STRNE(rocl_last_error(), "");

  EXPECT_EQ(rocl_bfget(16), nullptr);
  EXPECT_STRNE(rocl_last_error(), "");
  char stack[64] = {0};
  EXPECT_EQ(rocl_bfret(stack), ROCL_ENOINIT);
  EXPECT_EQ(rocl_bftoret(stack), ROCL_ENOINIT);
  EXPECT_EQ(rocl_bfstat(stack), ROCL_ENOINIT);
  EXPECT_EQ(rocl_bfsize(stack), 0u);

  EXPECT_EQ(rocl_send(1, 2, 0, stack, sizeof stack), ROCL_ENOINIT);
  EXPECT_STRNE(rocl_last_error(), "");
  void *ptr = nullptr;
  EXPECT_EQ(rocl_recv(1, ROCL_ANY, ROCL_ANY, &ptr, nullptr, nullptr, nullptr, 0), ROCL_ENOINIT);
  EXPECT_EQ(rocl_recv(1, ROCL_ANY, ROCL_ANY, &ptr, nullptr, nullptr, nullptr, -1), ROCL_ENOINIT)
      << "a blocking receive without a context must fail at once";
  EXPECT_EQ(ptr, nullptr);

  rocl_request_t req = ROCL_REQUEST_NULL;
  EXPECT_EQ(rocl_isend(1, 2, 0, stack, sizeof stack, &req), ROCL_ENOINIT);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  EXPECT_EQ(rocl_irecv(1, ROCL_ANY, ROCL_ANY, &req), ROCL_ENOINIT);
  EXPECT_EQ(req, ROCL_REQUEST_NULL);
  int done = 0;
  rocl_status_t st{};
  EXPECT_EQ(rocl_test(&req, &done, &st), ROCL_ENOINIT);
  EXPECT_EQ(rocl_wait(&req, &st, 0), ROCL_ENOINIT);
  EXPECT_EQ(rocl_cancel(&req), ROCL_ENOINIT);

  rocl_pool_stats_t ps{};
  EXPECT_EQ(rocl_pool_stats(&ps), ROCL_ENOINIT);
}

TEST(Context, EveryFunctionNeedsInitBeforeInit) {
  expect_everything_needs_init("before init");
}

TEST(Context, EveryFunctionNeedsInitAfterLastExit) {
  ASSERT_GT(rocl_init(), 0);
  ASSERT_GT(rocl_init(), 0);
  ASSERT_EQ(rocl_exit(), ROCL_OK);
  ASSERT_EQ(rocl_exit(), ROCL_OK);
  expect_everything_needs_init("after the last rocl_exit");
}

// rocl_query_next/rocl_query_stop take a handler that only a context gives,
// but the rule holds for them too.
TEST(Context, QueryHandlerFunctionsNeedInit) {
  AttrlHolder attrs;
  EXPECT_EQ(rocl_query_next(nullptr, attrs.get()), ROCL_ENOINIT);
  EXPECT_EQ(rocl_query_stop(nullptr), ROCL_ENOINIT);
}

TEST(Context, AttributeListsNeedNoContext) {
  AttrlHolder attrs(128);
  ASSERT_NE(attrs.get(), nullptr);
  EXPECT_EQ(attrs.add("name", "value"), ROCL_OK);
  EXPECT_EQ(attrs.value("name"), "value");
}

TEST(Context, PrintOptionsWorksWithoutContext) {
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  rocl_print_options(f);
  long size = std::ftell(f);
  std::fclose(f);
  EXPECT_GT(size, 0) << "rocl_print_options printed nothing";
}

// ---- error texts ---------------------------------------------------------------

TEST(Errors, StrerrorNamesEveryCodeDistinctly) {
  std::set<std::string> seen;
  for (int code : kAllCodes) {
    const char *s = rocl_strerror(code);
    ASSERT_NE(s, nullptr) << "code " << code;
    EXPECT_STRNE(s, "") << "code " << code;
    EXPECT_STRNE(s, "unknown error") << "code " << code << " is a known code";
    EXPECT_TRUE(seen.insert(s).second) << "code " << code << " shares its text '" << s << "'";
  }
  EXPECT_EQ(seen.size(), sizeof kAllCodes / sizeof kAllCodes[0]);
}

TEST(Errors, StrerrorOfUnknownCodes) {
  for (int code : {1, 42, -18, -100, INT_MIN, INT_MAX}) {
    EXPECT_STREQ(rocl_strerror(code), "unknown error") << "code " << code;
  }
}

TEST(Errors, StrerrorNeedsNoContextAndIsStatic) {
  const char *a = rocl_strerror(ROCL_EBADGID);
  ASSERT_GT(rocl_init(), 0);
  const char *b = rocl_strerror(ROCL_EBADGID);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
  EXPECT_STREQ(a, b);
}

TEST(Errors, LastErrorEmptyInFreshThread) {
  std::string text = "<not run>";
  std::thread t([&] { text = rocl_last_error(); });
  t.join();
  EXPECT_EQ(text, "");
}

TEST_F(ContextTest, LastErrorNamesTheBadGid) {
  rocl_gid_t a = must_register("lasterr");
  char data[4] = {1, 2, 3, 4};

  EXPECT_EQ(rocl_send(a, kUnknownGid, 0, data, sizeof data), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid))
      << "rocl_last_error() = '" << rocl_last_error() << "' does not name 0x" << hex(kUnknownGid);

  EXPECT_EQ(rocl_send(kUnknownGid, a, 0, data, sizeof data), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid))
      << "rocl_last_error() = '" << rocl_last_error() << "'";

  EXPECT_EQ(rocl_delete(kUnknownGid), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid))
      << "rocl_last_error() = '" << rocl_last_error() << "'";

  void *ptr = nullptr;
  EXPECT_EQ(rocl_recv(kUnknownGid, ROCL_ANY, ROCL_ANY, &ptr, nullptr, nullptr, nullptr, 0),
            ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid))
      << "rocl_last_error() = '" << rocl_last_error() << "'";
}

TEST_F(ContextTest, LastErrorNamesTheTag) {
  rocl_gid_t a = must_register("lasterr-tag");
  char data[4] = {1, 2, 3, 4};
  EXPECT_EQ(rocl_send(a, a, -5, data, sizeof data), ROCL_EINVAL);
  EXPECT_TRUE(icontains(rocl_last_error(), "tag"))
      << "rocl_last_error() = '" << rocl_last_error() << "'";
}

TEST_F(ContextTest, LastErrorIsPerThread) {
  EXPECT_EQ(rocl_delete(kUnknownGid), ROCL_EBADGID);
  std::string mine = rocl_last_error();
  EXPECT_NE(mine, "");
  std::string other = "<not run>";
  std::thread t([&] { other = rocl_last_error(); });
  t.join();
  EXPECT_EQ(other, "") << "a failure in one thread showed in another";
}

TEST_F(ContextTest, ContextGidIsStableAndPositive) {
  EXPECT_EQ(rocl_context_gid(), ctx_);
  EXPECT_GT(ctx_, 0u);
  EXPECT_NE(ctx_, ROCL_ANY_GID);
  rocl_gid_t seen = ROCL_NULL_GID;
  std::thread t([&] { seen = rocl_context_gid(); });
  t.join();
  EXPECT_EQ(seen, ctx_) << "the context is the process's, not the thread's";
}

TEST_F(ContextTest, ResourceGidsAreDistinctAndNotTheContext) {
  std::set<rocl_gid_t> gids{ctx_};
  for (int i = 0; i < 20; ++i) {
    rocl_gid_t g = must_register("distinct");
    EXPECT_NE(g, ROCL_NULL_GID);
    EXPECT_NE(g, ROCL_ANY_GID);
    EXPECT_TRUE(gids.insert(g).second) << "gid 0x" << hex(g) << " issued twice";
  }
}

TEST(Context, ExitDeletesResourcesAndFreesMessages) {
  ASSERT_GT(rocl_init(), 0);
  rocl_gid_t a = must_register("exit-a");
  rocl_gid_t b = must_register("exit-b");
  char data[100] = {0};
  for (int i = 0; i < 10; ++i) ASSERT_EQ(rocl_send(a, b, i, data, sizeof data), ROCL_OK);
  void *p = rocl_bfget(1000);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(rocl_bftoret(p), ROCL_OK);
  ASSERT_EQ(rocl_send(a, b, 0, p, 1000), ROCL_OK);
  EXPECT_EQ(rocl_exit(), ROCL_OK);  // leak checkers see what was not freed

  // A fresh context works after the old one went with its messages.
  ASSERT_GT(rocl_init(), 0);
  rocl_gid_t c = must_register("exit-c");
  EXPECT_NE(c, ROCL_NULL_GID);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

// gids are unique across the whole job: a later context of the same process
// must not issue a gid that an earlier one issued (stale gids would reach
// the wrong resource).
TEST(Context, GidsOfALaterContextAreNew) {
  std::int64_t c1 = rocl_init();
  ASSERT_GT(c1, 0);
  std::set<rocl_gid_t> first{static_cast<rocl_gid_t>(c1)};
  for (int i = 0; i < 5; ++i) first.insert(must_register("gen1"));
  ASSERT_EQ(rocl_exit(), ROCL_OK);

  std::int64_t c2 = rocl_init();
  ASSERT_GT(c2, 0);
  EXPECT_EQ(first.count(static_cast<rocl_gid_t>(c2)), 0u)
      << "context gid 0x" << hex(c2) << " reused";
  for (int i = 0; i < 5; ++i) {
    rocl_gid_t g = must_register("gen2");
    EXPECT_EQ(first.count(g), 0u) << "gid 0x" << hex(g) << " reused by a later context";
  }
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

}  // namespace

// A transport this build does not have is the user's configuration
// mistake: ROCL_EINVAL naming it, not an internal error; nothing is left
// initialised.
TEST(Context, UnknownTransportIsInvalidAndNamed) {
  ASSERT_EQ(setenv("ROCL_TRANSPORTS", "carrier-pigeon", 1), 0);
  std::int64_t rc = rocl_init();
  unsetenv("ROCL_TRANSPORTS");
  ASSERT_EQ(rc, ROCL_EINVAL);
  EXPECT_NE(std::string(rocl_last_error()).find("carrier-pigeon"), std::string::npos)
      << rocl_last_error();
  EXPECT_EQ(rocl_context_gid(), ROCL_NULL_GID);
  EXPECT_EQ(rocl_exit(), ROCL_ENOINIT);
  ASSERT_GT(rocl_init(), 0);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

// A process on its own (no node directory) starts only the in-process
// hand-off; naming transports starts those.
TEST(Context, TransportsFollowTheJob) {
  auto has_address = [](const char *name) {
    rocl_attrl_t *q = rocl_new_attrl(0);
    rocl_add_attr(q, "type", "context", 7);
    rocl_add_attr(q, name, nullptr, 256);
    rocl_gid_t gid = rocl_context_gid();
    EXPECT_EQ(rocl_query(&gid, q), ROCL_OK);
    bool found = rocl_get_attr(q, name, nullptr) != nullptr;
    rocl_kill_attrl(q);
    return found;
  };
  ASSERT_GT(rocl_init(), 0);
  EXPECT_TRUE(has_address("addr.inproc"));
  EXPECT_FALSE(has_address("addr.tcp"));
  EXPECT_FALSE(has_address("addr.shm"));
  ASSERT_EQ(rocl_exit(), ROCL_OK);

  ASSERT_EQ(setenv("ROCL_TRANSPORTS", "inproc,tcp", 1), 0);
  ASSERT_GT(rocl_init(), 0);
  unsetenv("ROCL_TRANSPORTS");
  EXPECT_TRUE(has_address("addr.inproc"));
  EXPECT_TRUE(has_address("addr.tcp"));
  EXPECT_FALSE(has_address("addr.shm"));
  ASSERT_EQ(rocl_exit(), ROCL_OK);
}

// An option set to the empty string (`ROCL_TRANSPORTS= prog`) means its
// default, as if unset; it is not a configuration mistake.
TEST(Context, AnEmptyOptionMeansItsDefault) {
  ASSERT_EQ(setenv("ROCL_TRANSPORTS", "", 1), 0);
  const std::int64_t rc = rocl_init();
  unsetenv("ROCL_TRANSPORTS");
  ASSERT_GT(rc, 0) << rocl_last_error();
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}
