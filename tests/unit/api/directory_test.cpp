// directory_test.cpp - attribute lists (table 2) and the directory: register,
// delete, single- and multi-answer queries (tables 1 and 3).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "rocl/rocl.hpp"
#include "test_util.hpp"

using namespace apitest;

namespace {

// ---- attribute lists ---------------------------------------------------------------

TEST(AttrList, AddAndGet) {
  AttrlHolder l;
  ASSERT_NE(l.get(), nullptr);
  ASSERT_EQ(l.add("type", "server"), ROCL_OK);
  const unsigned char bin[5] = {0, 1, 0xff, 0, 7};
  ASSERT_EQ(rocl_add_attr(l.get(), "bin", bin, sizeof bin), ROCL_OK);

  int len = -1;
  void *v = rocl_get_attr(l.get(), "type", &len);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(len, 6);
  EXPECT_EQ(std::memcmp(v, "server", 6), 0);

  v = rocl_get_attr(l.get(), "bin", &len);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(len, 5);
  EXPECT_EQ(std::memcmp(v, bin, 5), 0) << "values are bytes, zeros included";

  EXPECT_NE(rocl_get_attr(l.get(), "type", nullptr), nullptr) << "len may be NULL";
  EXPECT_EQ(rocl_get_attr(l.get(), "absent", &len), nullptr);
  EXPECT_EQ(rocl_get_attr(l.get(), "typ", &len), nullptr) << "names match exactly";
}

TEST(AttrList, ValuesAreCopied) {
  AttrlHolder l;
  char src[8] = "abcdefg";
  ASSERT_EQ(rocl_add_attr(l.get(), "k", src, 7), ROCL_OK);
  std::fill(src, src + 7, 'X');
  EXPECT_EQ(l.value("k"), "abcdefg");
  std::string name = "dyn";
  ASSERT_EQ(l.add(name.c_str(), "v"), ROCL_OK);
  name = "zzz";
  EXPECT_EQ(l.value("dyn"), "v") << "the name is copied too";
}

TEST(AttrList, EmptyValueIsSpecified) {
  AttrlHolder l;
  ASSERT_EQ(rocl_add_attr(l.get(), "empty", "", 0), ROCL_OK);
  int len = -1;
  void *v = rocl_get_attr(l.get(), "empty", &len);
  EXPECT_NE(v, nullptr) << "a specified value of 0 bytes is neither absent nor unspecified";
  EXPECT_EQ(len, 0);
}

TEST(AttrList, UnspecifiedValueReadsAsNull) {
  AttrlHolder l;
  ASSERT_EQ(l.ask("pid", 16), ROCL_OK);
  int len = -1;
  EXPECT_EQ(rocl_get_attr(l.get(), "pid", &len), nullptr);
  ASSERT_EQ(l.ask("zero", 0), ROCL_OK) << "reserving 0 bytes is allowed (len >= 0)";
  EXPECT_EQ(rocl_get_attr(l.get(), "zero", &len), nullptr);
}

TEST(AttrList, DuplicateNamesAreRejected) {
  AttrlHolder l;
  ASSERT_EQ(l.add("type", "a"), ROCL_OK);
  EXPECT_EQ(l.add("type", "b"), ROCL_EINVAL);
  EXPECT_EQ(l.ask("type", 8), ROCL_EINVAL);
  EXPECT_EQ(l.value("type"), "a") << "a failing add changes nothing";
  ASSERT_EQ(l.ask("q", 8), ROCL_OK);
  EXPECT_EQ(l.add("q", "x"), ROCL_EINVAL) << "duplicate of an unspecified attribute";
  EXPECT_EQ(l.ask("q", 8), ROCL_EINVAL);
}

TEST(AttrList, BadNames) {
  AttrlHolder l(4096);
  EXPECT_EQ(l.add("", "v"), ROCL_EINVAL) << "empty name";
  EXPECT_EQ(rocl_add_attr(l.get(), nullptr, "v", 1), ROCL_EINVAL) << "NULL name";
  std::string n255(255, 'n');
  std::string n256(256, 'm');
  EXPECT_EQ(l.add(n256.c_str(), "v"), ROCL_EINVAL) << "256-byte name";
  EXPECT_EQ(l.value(n256.c_str()), "<absent>");
  EXPECT_EQ(l.add(n255.c_str(), "v"), ROCL_OK) << "255-byte name is the longest allowed";
  EXPECT_EQ(l.value(n255.c_str()), "v");
}

TEST(AttrList, NegativeLengthAndNullList) {
  AttrlHolder l;
  EXPECT_EQ(rocl_add_attr(l.get(), "a", "v", -1), ROCL_EINVAL);
  EXPECT_EQ(rocl_add_attr(l.get(), "b", nullptr, -1), ROCL_EINVAL);
  EXPECT_EQ(l.value("a"), "<absent>");
  EXPECT_EQ(rocl_add_attr(nullptr, "a", "v", 1), ROCL_EINVAL);
  int len = 0;
  EXPECT_EQ(rocl_get_attr(nullptr, "a", &len), nullptr);
  ASSERT_EQ(l.add("c", "v"), ROCL_OK);
  EXPECT_EQ(rocl_get_attr(l.get(), nullptr, &len), nullptr);
}

TEST(AttrList, KillNullIsIgnored) {
  rocl_kill_attrl(nullptr);
  rocl_attrl_t *l = rocl_new_attrl(100);
  ASSERT_NE(l, nullptr);
  rocl_kill_attrl(l);
}

// Encoded size = names + values + 8 bytes per attribute. Three attributes
// "nX" with 8-byte values take 3 * (2 + 8 + 8) = 54 bytes (57 counting the
// names' NULs), a fourth 72 (76): with maxlen 64 exactly three fit.
TEST(AttrList, MaxlenExhaustionGivesENOSPC) {
  AttrlHolder l(64);
  ASSERT_NE(l.get(), nullptr);
  EXPECT_EQ(l.add("n0", "01234567"), ROCL_OK);
  EXPECT_EQ(l.add("n1", "01234567"), ROCL_OK);
  EXPECT_EQ(l.add("n2", "01234567"), ROCL_OK);
  EXPECT_EQ(l.add("n3", "01234567"), ROCL_ENOSPC);
  EXPECT_EQ(l.value("n3"), "<absent>") << "a failing add changes nothing";
  for (const char *n : {"n0", "n1", "n2"}) EXPECT_EQ(l.value(n), "01234567") << n;
  EXPECT_EQ(l.add("big", "0123456789"), ROCL_ENOSPC) << "3 + 10 + 8 more bytes do not fit";
}

TEST(AttrList, ReservedSpaceCountsTowardsMaxlen) {
  AttrlHolder l(64);
  EXPECT_EQ(l.ask("x", 1000), ROCL_ENOSPC);
  EXPECT_EQ(l.ask("x", 16), ROCL_OK);
}

TEST(AttrList, DefaultMaxlenIs4096) {
  for (int maxlen : {0, -1}) {
    AttrlHolder l(maxlen);
    ASSERT_NE(l.get(), nullptr);
    EXPECT_EQ(l.add("v", std::string(4000, 'x')), ROCL_OK) << "maxlen " << maxlen;
    EXPECT_EQ(l.add("w", std::string(100, 'y')), ROCL_ENOSPC) << "maxlen " << maxlen;
    EXPECT_EQ(l.add("w", std::string(10, 'y')), ROCL_OK) << "maxlen " << maxlen;
  }
}

// ---- directory -------------------------------------------------------------------

using Directory = ContextTest;

TEST_F(Directory, RegisterReturnsPositiveGid) {
  std::int64_t g = register_resource({{"type", "server"}});
  EXPECT_GT(g, 0) << rocl_last_error();
  std::int64_t h = register_resource({{"type", "server"}});
  EXPECT_GT(h, 0);
  EXPECT_NE(g, h);
}

TEST_F(Directory, RegisterNeedsEveryValueSpecified) {
  AttrlHolder l;
  ASSERT_EQ(l.add("type", "half"), ROCL_OK);
  ASSERT_EQ(l.ask("port", 4), ROCL_OK);
  EXPECT_EQ(rocl_register(l.get()), ROCL_EINVAL);
  EXPECT_EQ(rocl_register(nullptr), ROCL_EINVAL);

  // Nothing was registered.
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "half"), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND);
}

TEST_F(Directory, EmptyAttributeListRegisters) {
  AttrlHolder l;
  std::int64_t g = rocl_register(l.get());
  ASSERT_GT(g, 0) << "no attribute is left unspecified: " << rocl_last_error();
  AttrlHolder q;
  ASSERT_EQ(q.ask("context", 8), ROCL_OK);
  rocl_gid_t gid = static_cast<rocl_gid_t>(g);
  ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK);
  EXPECT_NE(q.value("context"), "<absent>");
}

TEST_F(Directory, ContextAttributeIsAddedAutomatically) {
  rocl_gid_t r = must_register("auto-ctx", "alpha");
  AttrlHolder q;
  ASSERT_EQ(q.ask("context", 8), ROCL_OK);
  ASSERT_EQ(q.ask("type", 64), ROCL_OK);
  ASSERT_EQ(q.ask("name", 64), ROCL_OK);
  rocl_gid_t gid = r;
  ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(gid, r);
  int len = -1;
  void *v = rocl_get_attr(q.get(), "context", &len);
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(len, 8);
  rocl_gid_t c = 0;
  std::memcpy(&c, v, 8);
  EXPECT_EQ(c, rocl_context_gid());
  EXPECT_EQ(c, ctx_);
  EXPECT_EQ(q.value("type"), "auto-ctx");
  EXPECT_EQ(q.value("name"), "alpha");

  // And the resources of this context can be found by it.
  AttrlHolder byctx;
  ASSERT_EQ(rocl_add_attr(byctx.get(), "context", &c, 8), ROCL_OK);
  ASSERT_EQ(byctx.add("type", "auto-ctx"), ROCL_OK);
  gid = ROCL_NULL_GID;
  ASSERT_EQ(rocl_query(&gid, byctx.get()), ROCL_OK);
  EXPECT_EQ(gid, r);
}

TEST_F(Directory, ContextIsFoundAsTypeContext) {
  must_register("other");
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "context"), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(gid, rocl_context_gid());

  // Looked up by its gid, it says it is a context.
  AttrlHolder byid;
  ASSERT_EQ(byid.ask("type", 32), ROCL_OK);
  gid = ctx_;
  ASSERT_EQ(rocl_query(&gid, byid.get()), ROCL_OK);
  EXPECT_EQ(byid.value("type"), "context");
}

TEST_F(Directory, QueryByGid) {
  rocl_gid_t a = must_register("bygid", "a");
  rocl_gid_t b = must_register("bygid", "b");
  for (auto [g, name] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
    AttrlHolder q;
    ASSERT_EQ(q.ask("name", 16), ROCL_OK);
    rocl_gid_t gid = g;
    ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK);
    EXPECT_EQ(gid, g);
    EXPECT_EQ(q.value("name"), name);
  }
  AttrlHolder q;
  rocl_gid_t gid = kUnknownGid;
  EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND);
}

TEST_F(Directory, QueryByAttributesFillsUnspecified) {
  const unsigned char port[2] = {0x12, 0x34};
  AttrlHolder reg;
  ASSERT_EQ(reg.add("type", "svc-fill"), ROCL_OK);
  ASSERT_EQ(reg.add("name", "alpha"), ROCL_OK);
  ASSERT_EQ(rocl_add_attr(reg.get(), "port", port, 2), ROCL_OK);
  std::int64_t r = rocl_register(reg.get());
  ASSERT_GT(r, 0);

  AttrlHolder q;
  ASSERT_EQ(q.add("type", "svc-fill"), ROCL_OK);
  ASSERT_EQ(q.ask("name", 32), ROCL_OK);
  ASSERT_EQ(q.ask("port", 2), ROCL_OK);  // exactly the room needed
  ASSERT_EQ(q.ask("missing", 16), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(gid, static_cast<rocl_gid_t>(r));
  EXPECT_EQ(q.value("type"), "svc-fill");
  EXPECT_EQ(q.value("name"), "alpha");
  int len = -1;
  void *v = rocl_get_attr(q.get(), "port", &len);
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(len, 2);
  EXPECT_EQ(std::memcmp(v, port, 2), 0);
  EXPECT_EQ(rocl_get_attr(q.get(), "missing", &len), nullptr)
      << "an attribute the resource lacks stays unspecified";
}

TEST_F(Directory, MatchingComparesExactBytes) {
  must_register("exact", "abc");
  for (const char *name : {"abcd", "ab", "ABC"}) {
    AttrlHolder q;
    ASSERT_EQ(q.add("type", "exact"), ROCL_OK);
    ASSERT_EQ(q.add("name", name), ROCL_OK);
    rocl_gid_t gid = ROCL_NULL_GID;
    EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND) << name;
  }
  // A specified attribute the resource lacks does not match.
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "exact"), ROCL_OK);
  ASSERT_EQ(q.add("color", "red"), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND);
}

TEST_F(Directory, QueryReturnsLowestGid) {
  std::vector<rocl_gid_t> gids;
  for (int i = 0; i < 5; ++i) gids.push_back(must_register("dup", std::to_string(i)));
  rocl_gid_t lowest = *std::min_element(gids.begin(), gids.end());
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "dup"), ROCL_OK);
  ASSERT_EQ(q.ask("name", 8), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK);
  EXPECT_EQ(gid, lowest);
  EXPECT_EQ(q.value("name"),
            std::to_string(std::find(gids.begin(), gids.end(), lowest) - gids.begin()));

  // After deleting the lowest, the next one answers.
  ASSERT_EQ(rocl_delete(lowest), ROCL_OK);
  gids.erase(std::find(gids.begin(), gids.end(), lowest));
  AttrlHolder q2;
  ASSERT_EQ(q2.add("type", "dup"), ROCL_OK);
  gid = ROCL_NULL_GID;
  ASSERT_EQ(rocl_query(&gid, q2.get()), ROCL_OK);
  EXPECT_EQ(gid, *std::min_element(gids.begin(), gids.end()));
}

TEST_F(Directory, NotFound) {
  must_register("present");
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "nonexistent"), ROCL_OK);
  ASSERT_EQ(q.ask("name", 8), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND);
  EXPECT_EQ(rocl_get_attr(q.get(), "name", nullptr), nullptr);
}

TEST_F(Directory, QueryInvalidArguments) {
  AttrlHolder q;
  ASSERT_EQ(q.add("type", "x"), ROCL_OK);
  EXPECT_EQ(rocl_query(nullptr, q.get()), ROCL_EINVAL);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, nullptr), ROCL_EINVAL);
  EXPECT_EQ(rocl_query_start(nullptr), nullptr);
  EXPECT_STRNE(rocl_last_error(), "");
  EXPECT_EQ(rocl_query_next(nullptr, q.get()), ROCL_EINVAL);
  rocl_handler_t *h = rocl_query_start(q.get());
  ASSERT_NE(h, nullptr) << rocl_last_error();
  EXPECT_EQ(rocl_query_next(h, nullptr), ROCL_EINVAL);
  EXPECT_EQ(rocl_query_stop(h), ROCL_OK);
}

TEST_F(Directory, AnswerLongerThanReservedIsENOSPCAndLeavesListUnchanged) {
  const std::string blob(100, 'b');
  ASSERT_GT(register_resource({{"type", "long"}, {"short", "s"}, {"blob", blob}}), 0);

  AttrlHolder q;
  ASSERT_EQ(q.add("type", "long"), ROCL_OK);
  ASSERT_EQ(q.ask("short", 8), ROCL_OK);  // fits, but the list must stay unchanged
  ASSERT_EQ(q.ask("blob", 10), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOSPC);
  EXPECT_EQ(q.value("type"), "long");
  EXPECT_EQ(rocl_get_attr(q.get(), "blob", nullptr), nullptr) << "attrs is left unchanged";
  EXPECT_EQ(rocl_get_attr(q.get(), "short", nullptr), nullptr) << "attrs is left unchanged";

  AttrlHolder ok;
  ASSERT_EQ(ok.add("type", "long"), ROCL_OK);
  ASSERT_EQ(ok.ask("blob", 100), ROCL_OK);
  gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, ok.get()), ROCL_OK);
  EXPECT_EQ(ok.value("blob"), blob);
}

TEST_F(Directory, MultiAnswerQueryInIncreasingGidOrder) {
  const int n = 50;
  std::map<rocl_gid_t, int> index;  // gid -> i
  for (int i = 0; i < n; ++i) {
    std::string idx = std::to_string(i);
    std::int64_t g = register_resource({{"type", "multi"}, {"idx", idx}});
    ASSERT_GT(g, 0);
    index[static_cast<rocl_gid_t>(g)] = i;
  }
  must_register("not-multi");  // must not be answered

  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "multi"), ROCL_OK);
  rocl_handler_t *h = rocl_query_start(pattern.get());
  ASSERT_NE(h, nullptr) << rocl_last_error();
  std::vector<rocl_gid_t> seen;
  for (int guard = 0; guard < n + 5; ++guard) {
    AttrlHolder answer;
    ASSERT_EQ(answer.add("type", "multi"), ROCL_OK);
    ASSERT_EQ(answer.ask("idx", 8), ROCL_OK);
    std::int64_t g = rocl_query_next(h, answer.get());
    if (g == ROCL_EEND) break;
    ASSERT_GT(g, 0) << rocl_strerror(static_cast<int>(g)) << ": " << rocl_last_error();
    rocl_gid_t gid = static_cast<rocl_gid_t>(g);
    ASSERT_EQ(index.count(gid), 1u) << "unexpected answer 0x" << hex(gid);
    EXPECT_EQ(answer.value("idx"), std::to_string(index[gid])) << "attrs filled for 0x" << hex(gid);
    if (!seen.empty()) {
      EXPECT_GT(gid, seen.back()) << "answers in increasing gid order";
    }
    seen.push_back(gid);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
  AttrlHolder after;
  EXPECT_EQ(rocl_query_next(h, after.get()), ROCL_EEND) << "EEND stays EEND";
  EXPECT_EQ(rocl_query_stop(h), ROCL_OK);
}

TEST_F(Directory, MultiAnswerQueryWithNoAnswer) {
  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "nobody"), ROCL_OK);
  rocl_handler_t *h = rocl_query_start(pattern.get());
  ASSERT_NE(h, nullptr);
  AttrlHolder answer;
  EXPECT_EQ(rocl_query_next(h, answer.get()), ROCL_EEND);
  EXPECT_EQ(rocl_query_stop(h), ROCL_OK);
}

TEST_F(Directory, MultiAnswerENOSPCDoesNotConsumeTheAnswer) {
  std::int64_t g1 = register_resource({{"type", "mspc"}, {"blob", std::string(50, 'x')}});
  std::int64_t g2 = register_resource({{"type", "mspc"}, {"blob", std::string(5, 'y')}});
  ASSERT_GT(g1, 0);
  ASSERT_GT(g2, 0);
  rocl_gid_t first = static_cast<rocl_gid_t>(std::min(g1, g2));
  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "mspc"), ROCL_OK);
  rocl_handler_t *h = rocl_query_start(pattern.get());
  ASSERT_NE(h, nullptr);

  if (first == static_cast<rocl_gid_t>(g1)) {
    AttrlHolder small;
    ASSERT_EQ(small.ask("blob", 10), ROCL_OK);
    EXPECT_EQ(rocl_query_next(h, small.get()), ROCL_ENOSPC);
    EXPECT_EQ(rocl_get_attr(small.get(), "blob", nullptr), nullptr);
  }
  // A failing call changes nothing: the answer is still the first one.
  AttrlHolder big;
  ASSERT_EQ(big.ask("blob", 64), ROCL_OK);
  EXPECT_EQ(rocl_query_next(h, big.get()), static_cast<std::int64_t>(first));
  EXPECT_EQ(rocl_query_stop(h), ROCL_OK);
}

TEST_F(Directory, DeletedResourcesDisappear) {
  std::vector<rocl_gid_t> gids;
  for (int i = 0; i < 6; ++i) gids.push_back(must_register("del", std::to_string(i)));
  ASSERT_EQ(rocl_delete(gids[1]), ROCL_OK);
  ASSERT_EQ(rocl_delete(gids[4]), ROCL_OK);

  for (rocl_gid_t g : {gids[1], gids[4]}) {
    AttrlHolder q;
    rocl_gid_t gid = g;
    EXPECT_EQ(rocl_query(&gid, q.get()), ROCL_ENOTFOUND) << "deleted 0x" << hex(g);
  }
  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "del"), ROCL_OK);
  rocl_handler_t *h = rocl_query_start(pattern.get());
  ASSERT_NE(h, nullptr);

  // Deleted after start: skipped as well.
  ASSERT_EQ(rocl_delete(gids[5]), ROCL_OK);
  std::set<rocl_gid_t> seen;
  for (int guard = 0; guard < 10; ++guard) {
    AttrlHolder answer;
    std::int64_t g = rocl_query_next(h, answer.get());
    if (g == ROCL_EEND) break;
    ASSERT_GT(g, 0);
    seen.insert(static_cast<rocl_gid_t>(g));
  }
  EXPECT_EQ(rocl_query_stop(h), ROCL_OK);
  EXPECT_EQ(seen, (std::set<rocl_gid_t>{gids[0], gids[2], gids[3]}));
}

TEST_F(Directory, DeleteTwiceIsEBADGID) {
  rocl_gid_t g = must_register("twice");
  EXPECT_EQ(rocl_delete(g), ROCL_OK);
  EXPECT_EQ(rocl_delete(g), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), g)) << rocl_last_error();
  EXPECT_EQ(rocl_delete(ROCL_NULL_GID), ROCL_EBADGID);
  EXPECT_EQ(rocl_delete(kUnknownGid), ROCL_EBADGID);
}

TEST_F(Directory, ConcurrentRegistrationGivesUniqueGids) {
  const int threads = 4, per = scaled(50, 2);
  std::mutex m;
  std::vector<rocl_gid_t> all;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::vector<rocl_gid_t> mine;
      for (int i = 0; i < per; ++i) {
        std::int64_t g = register_resource({{"type", "conc"}, {"who", std::to_string(t)}});
        if (g > 0) mine.push_back(static_cast<rocl_gid_t>(g));
      }
      std::lock_guard l(m);
      all.insert(all.end(), mine.begin(), mine.end());
    });
  }
  for (auto &t : ts) t.join();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(threads * per));
  std::set<rocl_gid_t> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), all.size());
  for (rocl_gid_t g : all) {
    AttrlHolder q;
    ASSERT_EQ(q.ask("type", 8), ROCL_OK);
    rocl_gid_t gid = g;
    ASSERT_EQ(rocl_query(&gid, q.get()), ROCL_OK);
    EXPECT_EQ(q.value("type"), "conc");
  }
}

// rocl_query_wait: returns once enough match (resources registered by
// another thread meanwhile), counts no further than asked, times out naming
// how many matched, and refuses a count below 1.
TEST_F(Directory, QueryWaitReturnsOnceEnoughMatch) {
  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "late"), ROCL_OK);
  std::thread registrar([] {
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_GT(register_resource({{"type", "late"}}), 0);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(rocl_query_wait(pattern.get(), 3, 10000), 3) << rocl_last_error();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(55));
  registrar.join();
  EXPECT_EQ(rocl_query_wait(pattern.get(), 2, 0), 2) << "counts no further than asked";
  EXPECT_EQ(rocl_query_wait(pattern.get(), 4, 30), ROCL_ETIMEDOUT);
  EXPECT_NE(
      std::string(rocl_last_error()).find("3 of the 4 resources waited for match after 30 ms"),
      std::string::npos)
      << rocl_last_error();
  EXPECT_EQ(rocl_query_wait(pattern.get(), 0, 10), ROCL_EINVAL);
  EXPECT_EQ(rocl_query_wait(nullptr, 1, 10), ROCL_EINVAL);
}

TEST_F(Directory, QueryWaitInCxxGivesTheMatches) {
  ASSERT_GT(register_resource({{"type", "cxx-wait"}, {"name", "a"}}), 0);
  ASSERT_GT(register_resource({{"type", "cxx-wait"}, {"name", "b"}}), 0);
  const auto found = rocl::query_wait(rocl::Attributes{{"type", "cxx-wait"}}.ask("name", 8), 2,
                                      std::chrono::seconds(1));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].attributes.get("name").value_or(""), "a");
  EXPECT_EQ(found[1].attributes.get("name").value_or(""), "b");
  EXPECT_THROW(
      rocl::query_wait(rocl::Attributes{{"type", "cxx-wait"}}, 3, std::chrono::milliseconds(10)),
      rocl::Error);
}

}  // namespace
