// local_directory_test.cpp - the in-process directory through the Directory
// interface: registration, removal, single- and multi-answer queries.
#include "directory/local_directory.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

std::string value_of(const AttrList &l, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = l.get(name, &len);
  if (v == nullptr) {
    return "<null>";
  }
  return std::string(reinterpret_cast<const char *>(v), len);
}

rocl_gid_t context_of(const AttrList &l) {
  std::size_t len = 0;
  const std::byte *v = l.get(kContextAttr, &len);
  EXPECT_NE(v, nullptr);
  EXPECT_EQ(len, 8u);
  if (v == nullptr || len != 8) {
    return 0;
  }
  return *reinterpret_cast<const rocl_gid_t *>(v);  // values are 8-aligned
}

std::vector<std::byte> copy_of(std::span<const std::byte> b) {
  return {b.begin(), b.end()};
}

bool contains(const char *text, const char *part) {
  return std::strstr(text, part) != nullptr;
}

class LocalDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = make_local_directory(3);
    ASSERT_NE(dir, nullptr);
    AttrList c;
    ASSERT_EQ(c.add("type", "context"), ROCL_OK);
    ctx = reg(c, ROCL_NULL_GID);
  }

  rocl_gid_t reg(const AttrList &attrs, rocl_gid_t context) {
    const std::int64_t g = dir->register_resource(attrs, context);
    EXPECT_GT(g, 0) << last_error();
    return static_cast<rocl_gid_t>(g);
  }

  rocl_gid_t reg_worker(const std::string &name, const std::string &kind = "worker") {
    AttrList a;
    EXPECT_EQ(a.add("type", kind), ROCL_OK);
    EXPECT_EQ(a.add("name", name), ROCL_OK);
    return reg(a, ctx);
  }

  std::unique_ptr<Directory> dir;
  rocl_gid_t ctx = 0;
};

TEST(GidLayout, ServerAndSerial) {
  constexpr rocl_gid_t g = make_gid(0x7fff, 42);
  static_assert(gid_server(g) == 0x7fff && gid_serial(g) == 42);
  static_assert(static_cast<std::int64_t>(make_gid(kMaxServerId, kMaxGidSerial)) > 0);
  static_assert(gid_server(ROCL_ANY_GID) > kMaxServerId);  // never issued
}

// Compact gids (ROCL_GID_BITS=31) fit an int, decode to their server and
// serial like wide ones, and a compact server's ids stop at 127.
TEST(GidLayout, CompactGidsFitAnIntAndDecode) {
  const rocl_gid_t c = make_compact_gid(127, kCompactSerialMask);
  EXPECT_LE(c, static_cast<rocl_gid_t>(INT32_MAX));
  EXPECT_TRUE(is_compact(c));
  EXPECT_EQ(gid_server(c), 127);
  EXPECT_EQ(gid_serial(c), kCompactSerialMask);
  const rocl_gid_t w = make_gid(1, 1);
  EXPECT_FALSE(is_compact(w));
  EXPECT_EQ(gid_server(w), 1);
  EXPECT_EQ(gid_serial(w), 1u);
  GidWidth width;
  EXPECT_TRUE(parse_gid_bits("31", &width));
  EXPECT_EQ(width, GidWidth::kCompact);
  EXPECT_TRUE(parse_gid_bits("", &width));
  EXPECT_EQ(width, GidWidth::kWide);
  EXPECT_FALSE(parse_gid_bits("32", &width));
  EXPECT_EQ(make_local_directory(128, GidWidth::kCompact), nullptr);
  auto dir = make_local_directory(77, GidWidth::kCompact);
  ASSERT_NE(dir, nullptr);
  AttrList l(64);
  ASSERT_EQ(l.add("type", std::string_view("x")), ROCL_OK);
  const std::int64_t ctx = dir->register_resource(l, ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  EXPECT_LE(ctx, INT32_MAX);
  EXPECT_EQ(gid_server(static_cast<rocl_gid_t>(ctx)), 77);
  const std::int64_t r = dir->register_resource(l, static_cast<rocl_gid_t>(ctx));
  rocl_gid_t found = static_cast<rocl_gid_t>(r);
  AttrList ask(64);
  EXPECT_EQ(dir->query(&found, ask), ROCL_OK);
}

TEST(MakeLocalDirectory, ChecksTheServerId) {
  EXPECT_EQ(make_local_directory(0), nullptr);
  EXPECT_TRUE(contains(last_error(), "server id 0")) << last_error();
  EXPECT_EQ(make_local_directory(0x8000), nullptr);
  EXPECT_NE(make_local_directory(1), nullptr);
  EXPECT_NE(make_local_directory(0x7fff), nullptr);
}

TEST(LocalDirectory, ALaterDirectoryWithTheSameIdIssuesNewGids) {
  AttrList c;
  ASSERT_EQ(c.add("type", "context"), ROCL_OK);
  std::set<rocl_gid_t> issued;
  for (int round = 0; round < 3; ++round) {
    auto dir = make_local_directory(7);
    const std::int64_t ctx = dir->register_resource(c, ROCL_NULL_GID);
    ASSERT_GT(ctx, 0) << last_error();
    EXPECT_TRUE(issued.insert(static_cast<rocl_gid_t>(ctx)).second);
    for (int i = 0; i < 3; ++i) {
      const std::int64_t g = dir->register_resource(AttrList(), static_cast<rocl_gid_t>(ctx));
      ASSERT_GT(g, 0) << last_error();
      EXPECT_TRUE(issued.insert(static_cast<rocl_gid_t>(g)).second) << "gid " << g << " reused";
    }
  }
  // Another server id has its own range.
  auto other = make_local_directory(8);
  const std::int64_t g = other->register_resource(c, ROCL_NULL_GID);
  EXPECT_EQ(gid_server(static_cast<rocl_gid_t>(g)), 8u);
}

TEST_F(LocalDirectoryTest, ContextGidAndAttribute) {
  EXPECT_EQ(gid_server(ctx), 3u);
  EXPECT_GE(gid_serial(ctx), 1u);
  AttrList q;
  ASSERT_EQ(q.add_unspecified("context", 8), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("type", 16), ROCL_OK);
  rocl_gid_t g = ctx;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK) << last_error();
  EXPECT_EQ(context_of(q), ctx);  // a context's "context" is its own gid
  EXPECT_EQ(value_of(q, "type"), "context");
}

TEST_F(LocalDirectoryTest, RegisterAddsContextAndIssuesIncreasingGids) {
  const rocl_gid_t a = reg_worker("a");
  const rocl_gid_t b = reg_worker("b");
  EXPECT_EQ(gid_server(a), 3u);
  EXPECT_EQ(a, ctx + 1);
  EXPECT_EQ(b, a + 1);

  AttrList q;
  ASSERT_EQ(q.add_unspecified("name", 8), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("context", 8), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("absent", 8), ROCL_OK);
  rocl_gid_t g = b;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK) << last_error();
  EXPECT_EQ(g, b);
  EXPECT_EQ(value_of(q, "name"), "b");
  EXPECT_EQ(context_of(q), ctx);
  EXPECT_EQ(value_of(q, "absent"), "<null>");  // not a resource attribute: stays unspecified
}

TEST_F(LocalDirectoryTest, RegisterValidation) {
  AttrList bad;
  ASSERT_EQ(bad.add("type", "x"), ROCL_OK);
  ASSERT_EQ(bad.add_unspecified("port", 4), ROCL_OK);
  EXPECT_EQ(dir->register_resource(bad, ctx), ROCL_EINVAL);
  EXPECT_TRUE(contains(last_error(), "'port' is unspecified")) << last_error();
  // A filled answer slot counts as a value.
  ASSERT_EQ(bad.fill("port", std::as_bytes(std::span("80", 2))), ROCL_OK);
  EXPECT_GT(dir->register_resource(bad, ctx), 0) << last_error();

  AttrList reserved;
  ASSERT_EQ(reserved.add("context", "12345678"), ROCL_OK);
  EXPECT_EQ(dir->register_resource(reserved, ctx), ROCL_EINVAL);
  EXPECT_TRUE(contains(last_error(), "'context' is a reserved attribute name")) << last_error();

  AttrList ok;
  ASSERT_EQ(ok.add("type", "x"), ROCL_OK);
  const rocl_gid_t unknown = make_gid(3, 999);
  EXPECT_EQ(dir->register_resource(ok, unknown), ROCL_EBADGID);
  EXPECT_TRUE(contains(last_error(), "serial 999")) << last_error();
  const rocl_gid_t worker = reg_worker("w");
  EXPECT_EQ(dir->register_resource(ok, worker), ROCL_EBADGID);
  EXPECT_TRUE(contains(last_error(), "not a context")) << last_error();

  // An empty list is a valid resource (it has only "context").
  EXPECT_GT(dir->register_resource(AttrList(), ctx), 0) << last_error();
}

TEST_F(LocalDirectoryTest, RemoveAndQueryByGid) {
  const rocl_gid_t a = reg_worker("a");
  ASSERT_EQ(dir->remove(a), ROCL_OK);
  EXPECT_EQ(dir->remove(a), ROCL_EBADGID);
  EXPECT_TRUE(contains(last_error(), "rocl_delete")) << last_error();
  EXPECT_EQ(dir->remove(ROCL_NULL_GID), ROCL_EBADGID);

  AttrList q;
  ASSERT_EQ(q.add_unspecified("name", 8), ROCL_OK);
  rocl_gid_t g = a;
  EXPECT_EQ(dir->query(&g, q), ROCL_ENOTFOUND);
  EXPECT_TRUE(contains(last_error(), "no resource has gid")) << last_error();
  EXPECT_EQ(g, a);
  EXPECT_EQ(dir->query(nullptr, q), ROCL_EINVAL);

  // Removed resources leave the index: an attribute query does not find them.
  AttrList byname;
  ASSERT_EQ(byname.add("name", "a"), ROCL_OK);
  g = ROCL_NULL_GID;
  EXPECT_EQ(dir->query(&g, byname), ROCL_ENOTFOUND);
  EXPECT_TRUE(contains(last_error(), "(name)")) << last_error();
}

TEST_F(LocalDirectoryTest, QueryByAttributesLowestGidFirst) {
  const rocl_gid_t w1 = reg_worker("one");
  const rocl_gid_t s1 = reg_worker("two", "server");
  const rocl_gid_t w2 = reg_worker("three");
  const rocl_gid_t s2 = reg_worker("one", "server");

  // One specified attribute + one to fill.
  AttrList q;
  ASSERT_EQ(q.add("type", "server"), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("name", 16), ROCL_OK);
  rocl_gid_t g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK) << last_error();
  EXPECT_EQ(g, s1);
  EXPECT_EQ(value_of(q, "name"), "two");

  // Two specified attributes.
  AttrList q2;
  ASSERT_EQ(q2.add("name", "one"), ROCL_OK);
  ASSERT_EQ(q2.add("type", "server"), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q2), ROCL_OK);
  EXPECT_EQ(g, s2);
  AttrList q3;
  ASSERT_EQ(q3.add("name", "one"), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q3), ROCL_OK);
  EXPECT_EQ(g, w1);

  // Specified values must match byte for byte (no prefixes).
  AttrList q4;
  ASSERT_EQ(q4.add("type", "serve"), ROCL_OK);
  g = ROCL_NULL_GID;
  EXPECT_EQ(dir->query(&g, q4), ROCL_ENOTFOUND);
  EXPECT_TRUE(contains(last_error(), "all 1 given attributes (type)")) << last_error();

  // Filtering on the automatic "context" attribute.
  AttrList q5;
  ASSERT_EQ(q5.add("context", std::as_bytes(std::span(&ctx, 1))), ROCL_OK);
  ASSERT_EQ(q5.add("type", "worker"), ROCL_OK);
  ASSERT_EQ(q5.add_unspecified("name", 16), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q5), ROCL_OK);
  EXPECT_EQ(g, w1);

  // No specified attribute: every resource matches, the lowest gid (the context) first.
  AttrList q6;
  ASSERT_EQ(q6.add_unspecified("type", 16), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q6), ROCL_OK);
  EXPECT_EQ(g, ctx);
  EXPECT_EQ(value_of(q6, "type"), "context");
  g = ROCL_NULL_GID;
  AttrList empty;
  ASSERT_EQ(dir->query(&g, empty), ROCL_OK);
  EXPECT_EQ(g, ctx);

  // After removing the lowest match the next one answers.
  ASSERT_EQ(dir->remove(w1), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q3), ROCL_OK);
  EXPECT_EQ(g, s2);
  AttrList q7;
  ASSERT_EQ(q7.add("type", "worker"), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q7), ROCL_OK);
  EXPECT_EQ(g, w2);
}

TEST_F(LocalDirectoryTest, ValuesWithZeroBytesAndSharedPrefixes) {
  AttrList a;
  ASSERT_EQ(a.add("k", std::string_view("a\0b", 3)), ROCL_OK);
  const rocl_gid_t ga = reg(a, ctx);
  AttrList b;
  ASSERT_EQ(b.add("k", std::string_view("a", 1)), ROCL_OK);
  const rocl_gid_t gb = reg(b, ctx);
  AttrList q;
  ASSERT_EQ(q.add("k", std::string_view("a", 1)), ROCL_OK);
  rocl_gid_t g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK);
  EXPECT_EQ(g, gb);
  AttrList q2;
  ASSERT_EQ(q2.add("k", std::string_view("a\0b", 3)), ROCL_OK);
  g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q2), ROCL_OK);
  EXPECT_EQ(g, ga);
}

TEST_F(LocalDirectoryTest, QueryNoSpaceLeavesListAndGidUnchanged) {
  AttrList r;
  ASSERT_EQ(r.add("type", "big"), ROCL_OK);
  ASSERT_EQ(r.add("blob", std::string(100, 'b')), ROCL_OK);
  ASSERT_EQ(r.add("small", "s"), ROCL_OK);
  const rocl_gid_t big = reg(r, ctx);

  AttrList q;
  ASSERT_EQ(q.add("type", "big"), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("small", 8), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("blob", 99), ROCL_OK);
  const auto before = copy_of(q.bytes());
  rocl_gid_t g = ROCL_NULL_GID;
  EXPECT_EQ(dir->query(&g, q), ROCL_ENOSPC);
  EXPECT_TRUE(contains(last_error(), "'blob' is 100 bytes but only 99")) << last_error();
  EXPECT_TRUE(contains(last_error(), "rocl_query: resource gid")) << last_error();
  EXPECT_EQ(g, ROCL_NULL_GID);
  EXPECT_EQ(copy_of(q.bytes()), before);
  EXPECT_EQ(q.get("small"), nullptr);

  g = big;
  EXPECT_EQ(dir->query(&g, q), ROCL_ENOSPC);
  EXPECT_EQ(copy_of(q.bytes()), before);
}

TEST_F(LocalDirectoryTest, CursorWalksInGidOrderSkippingDeletions) {
  constexpr int kN = 1000;
  std::vector<rocl_gid_t> gids;
  gids.reserve(kN);
  for (int i = 0; i < kN; ++i) {
    gids.push_back(reg_worker(std::to_string(i)));
  }
  reg_worker("not me", "server");

  AttrList pattern;
  ASSERT_EQ(pattern.add("type", "worker"), ROCL_OK);
  auto cursor = dir->query_start(pattern);
  ASSERT_NE(cursor, nullptr);
  // The pattern was copied: changing the list does not change the query.
  ASSERT_EQ(pattern.add("name", "0"), ROCL_OK);

  AttrList answer;
  ASSERT_EQ(answer.add_unspecified("name", 8), ROCL_OK);
  ASSERT_EQ(answer.add_unspecified("context", 8), ROCL_OK);
  std::set<rocl_gid_t> deleted;
  std::vector<rocl_gid_t> added;
  std::vector<rocl_gid_t> seen;
  rocl_gid_t last = 0;
  for (;;) {
    const std::int64_t r = cursor->next(answer);
    if (r == ROCL_EEND) {
      break;
    }
    ASSERT_GT(r, 0) << last_error();
    const auto g = static_cast<rocl_gid_t>(r);
    ASSERT_GT(g, last);
    last = g;
    ASSERT_FALSE(deleted.contains(g));
    seen.push_back(g);
    const auto idx =
        static_cast<std::size_t>(std::find(gids.begin(), gids.end(), g) - gids.begin());
    if (idx < gids.size()) {
      EXPECT_EQ(value_of(answer, "name"), std::to_string(idx));
      // Delete a resource ahead of the cursor every third step.
      if (idx % 3 == 0 && idx + 1 < gids.size()) {
        ASSERT_EQ(dir->remove(gids[idx + 1]), ROCL_OK);
        deleted.insert(gids[idx + 1]);
      }
      // And register a few new ones: their gids are larger, so they are seen.
      if (idx % 250 == 0) {
        added.push_back(reg_worker("late" + std::to_string(idx)));
      }
    } else {
      EXPECT_EQ(value_of(answer, "name").rfind("late", 0), 0u);
    }
    EXPECT_EQ(context_of(answer), ctx);
  }
  EXPECT_TRUE(contains(last_error(), "no more resources")) << last_error();
  EXPECT_EQ(cursor->next(answer), ROCL_EEND);  // stays at the end

  std::vector<rocl_gid_t> expected;
  for (rocl_gid_t g : gids) {
    if (!deleted.contains(g)) {
      expected.push_back(g);
    }
  }
  expected.insert(expected.end(), added.begin(), added.end());
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(deleted.size(), 333u);  // idx 0, 3, ..., 996 each deleted idx + 1
  EXPECT_EQ(added.size(), 3u);      // at idx 0, 500, 750 (250 was deleted before)
}

TEST_F(LocalDirectoryTest, CursorWithoutPatternSeesEverything) {
  const rocl_gid_t a = reg_worker("a");
  const rocl_gid_t b = reg_worker("b", "server");
  auto cursor = dir->query_start(AttrList());
  ASSERT_NE(cursor, nullptr);
  AttrList answer;
  ASSERT_EQ(answer.add_unspecified("type", 16), ROCL_OK);
  EXPECT_EQ(cursor->next(answer), static_cast<std::int64_t>(ctx));
  EXPECT_EQ(value_of(answer, "type"), "context");
  EXPECT_EQ(cursor->next(answer), static_cast<std::int64_t>(a));
  EXPECT_EQ(cursor->next(answer), static_cast<std::int64_t>(b));
  EXPECT_EQ(value_of(answer, "type"), "server");
  EXPECT_EQ(cursor->next(answer), ROCL_EEND);
}

TEST_F(LocalDirectoryTest, CursorNoSpaceDoesNotAdvance) {
  AttrList r;
  ASSERT_EQ(r.add("type", "t"), ROCL_OK);
  ASSERT_EQ(r.add("v", "short"), ROCL_OK);
  const rocl_gid_t g1 = reg(r, ctx);
  AttrList r2;
  ASSERT_EQ(r2.add("type", "t"), ROCL_OK);
  ASSERT_EQ(r2.add("v", "a much longer value"), ROCL_OK);
  const rocl_gid_t g2 = reg(r2, ctx);

  AttrList pattern;
  ASSERT_EQ(pattern.add("type", "t"), ROCL_OK);
  auto cursor = dir->query_start(pattern);
  AttrList small;
  ASSERT_EQ(small.add_unspecified("v", 8), ROCL_OK);
  EXPECT_EQ(cursor->next(small), static_cast<std::int64_t>(g1));
  EXPECT_EQ(value_of(small, "v"), "short");
  const auto before = copy_of(small.bytes());
  EXPECT_EQ(cursor->next(small), ROCL_ENOSPC);
  EXPECT_TRUE(contains(last_error(), "rocl_query_next")) << last_error();
  EXPECT_EQ(copy_of(small.bytes()), before);
  EXPECT_EQ(cursor->next(small), ROCL_ENOSPC);  // still the same resource
  AttrList big;
  ASSERT_EQ(big.add_unspecified("v", 64), ROCL_OK);
  EXPECT_EQ(cursor->next(big), static_cast<std::int64_t>(g2));
  EXPECT_EQ(value_of(big, "v"), "a much longer value");
  EXPECT_EQ(cursor->next(big), ROCL_EEND);
}

TEST_F(LocalDirectoryTest, CursorOutlivesTheDirectory) {
  reg_worker("a");
  AttrList pattern;
  ASSERT_EQ(pattern.add("type", "worker"), ROCL_OK);
  auto cursor = dir->query_start(pattern);
  dir.reset();
  AttrList answer;
  EXPECT_EQ(cursor->next(answer), ROCL_EEND);
}

TEST_F(LocalDirectoryTest, RemoveContext) {
  AttrList c2attrs;
  ASSERT_EQ(c2attrs.add("type", "context"), ROCL_OK);
  const rocl_gid_t ctx2 = reg(c2attrs, ROCL_NULL_GID);
  std::vector<rocl_gid_t> mine;
  mine.reserve(10);
  for (int i = 0; i < 10; ++i) {
    mine.push_back(reg_worker("w" + std::to_string(i)));
  }
  AttrList other;
  ASSERT_EQ(other.add("type", "worker"), ROCL_OK);
  const rocl_gid_t theirs = reg(other, ctx2);
  ASSERT_EQ(dir->remove(mine[4]), ROCL_OK);

  EXPECT_EQ(dir->remove_context(ctx), 10);  // 9 workers + the context itself
  for (rocl_gid_t g : mine) {
    EXPECT_EQ(dir->remove(g), ROCL_EBADGID);
  }
  EXPECT_EQ(dir->remove(ctx), ROCL_EBADGID);
  AttrList q;
  ASSERT_EQ(q.add("type", "worker"), ROCL_OK);
  ASSERT_EQ(q.add_unspecified("context", 8), ROCL_OK);
  rocl_gid_t g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK);
  EXPECT_EQ(g, theirs);
  EXPECT_EQ(context_of(q), ctx2);
  EXPECT_EQ(dir->remove_context(ctx), 0);
  EXPECT_EQ(dir->remove_context(ROCL_NULL_GID), ROCL_EINVAL);
  // The context is gone: it can no longer register resources.
  EXPECT_EQ(dir->register_resource(other, ctx), ROCL_EBADGID);
  EXPECT_EQ(static_cast<LocalDirectory &>(*dir).size(), 2u);
}

TEST_F(LocalDirectoryTest, ConcurrentRegistrationGivesUniqueGids) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  std::vector<std::vector<rocl_gid_t>> got(kThreads);
  std::atomic<bool> stop{false};
  std::atomic<int> query_failures{0};
  // A reader queries and walks cursors while the writers register.
  std::thread reader([&] {
    AttrList q;
    (void)q.add("type", "worker");
    (void)q.add_unspecified("name", 16);
    while (!stop.load()) {
      rocl_gid_t g = ROCL_NULL_GID;
      const int rc = dir->query(&g, q);
      if (rc != ROCL_OK && rc != ROCL_ENOTFOUND) {
        query_failures++;
      }
      auto c = dir->query_start(q);
      rocl_gid_t last = 0;
      for (std::int64_t r; (r = c->next(q)) > 0;) {
        if (static_cast<rocl_gid_t>(r) <= last) {
          query_failures++;
        }
        last = static_cast<rocl_gid_t>(r);
      }
    }
  });
  std::vector<std::thread> writers;
  writers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        AttrList a;
        (void)a.add("type", "worker");
        (void)a.add("name", std::to_string(t) + "/" + std::to_string(i));
        const std::int64_t g = dir->register_resource(a, ctx);
        if (g > 0) {
          got[static_cast<std::size_t>(t)].push_back(static_cast<rocl_gid_t>(g));
        }
      }
    });
  }
  for (auto &w : writers) {
    w.join();
  }
  stop = true;
  reader.join();
  EXPECT_EQ(query_failures.load(), 0);

  std::set<rocl_gid_t> all;
  for (int t = 0; t < kThreads; ++t) {
    const auto &v = got[static_cast<std::size_t>(t)];
    ASSERT_EQ(v.size(), static_cast<std::size_t>(kPerThread));
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(*all.begin(), ctx + 1);  // the gids issued form one run
  EXPECT_EQ(*all.rbegin(), ctx + kThreads * kPerThread);

  // Every registered resource can be found by its name.
  AttrList q;
  ASSERT_EQ(q.add("name", "5/123"), ROCL_OK);
  rocl_gid_t g = ROCL_NULL_GID;
  ASSERT_EQ(dir->query(&g, q), ROCL_OK);
  EXPECT_EQ(g, got[5][123]);
  EXPECT_EQ(dir->remove_context(ctx), kThreads * kPerThread + 1);
}

}  // namespace
}  // namespace rocl::impl
