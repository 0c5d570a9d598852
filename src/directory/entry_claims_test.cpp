// entry_claims_test.cpp - claims over the in-process directory: a lone claim
// keeps its entry, a rival's claim is withdrawn naming the holder, and of
// many racing claimants exactly one keeps the value.
#include "directory/entry_claims.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "directory/local_directory.hpp"

namespace rocl::impl {
namespace {

class EntryClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = make_local_directory(5);
    ASSERT_NE(dir, nullptr);
    AttrList c;
    ASSERT_EQ(c.add("type", "context"), ROCL_OK);
    const std::int64_t g = dir->register_resource(c, ROCL_NULL_GID);
    ASSERT_GT(g, 0);
    context = static_cast<rocl_gid_t>(g);
    store = EntryStore{[this](const AttrList &a) { return dir->register_resource(a, context); },
                       [this](rocl_gid_t g) { return dir->remove(g); }};
  }
  static AttrList entry(const char *value, const char *name = nullptr) {
    AttrList a;
    a.add("type", "claim");
    a.add("value", value);
    if (name != nullptr) a.add("name", name);
    return a;
  }
  static AttrList key(const char *attr, const char *value) {
    AttrList a;
    a.add("type", "claim");
    a.add(attr, value);
    return a;
  }
  std::vector<rocl_gid_t> holders(const AttrList &pattern) {
    std::vector<rocl_gid_t> out;
    EXPECT_EQ(entries_matching(*dir, pattern, &out), ROCL_OK);
    return out;
  }

  std::unique_ptr<Directory> dir;
  rocl_gid_t context = ROCL_NULL_GID;
  EntryStore store;
};

TEST_F(EntryClaimsTest, ALoneClaimKeepsItsEntry) {
  const std::vector<AttrList> keys{key("value", "1")};
  const ClaimOutcome c = claim_entry(*dir, store, entry("1"), keys);
  ASSERT_GT(c.gid, 0);
  ASSERT_EQ(c.rivals.size(), 1u);
  EXPECT_TRUE(c.rivals[0].empty());
  EXPECT_EQ(holders(keys[0]), std::vector<rocl_gid_t>{static_cast<rocl_gid_t>(c.gid)});
}

TEST_F(EntryClaimsTest, AClaimOfAHeldValueIsWithdrawnNamingTheHolder) {
  const std::vector<AttrList> keys{key("value", "1"), key("name", "n")};
  const ClaimOutcome first = claim_entry(*dir, store, entry("1", "n"), keys);
  ASSERT_GT(first.gid, 0);
  // Same name, another value: only the name's key has a rival.
  const std::vector<AttrList> other_keys{key("value", "2"), key("name", "n")};
  const ClaimOutcome second = claim_entry(*dir, store, entry("2", "n"), other_keys);
  EXPECT_EQ(second.gid, 0);
  ASSERT_EQ(second.rivals.size(), 2u);
  EXPECT_TRUE(second.rivals[0].empty());
  EXPECT_EQ(second.rivals[1], std::vector<rocl_gid_t>{static_cast<rocl_gid_t>(first.gid)});
  // The withdrawn entry is gone; the holder's stays.
  EXPECT_TRUE(holders(key("value", "2")).empty());
  EXPECT_EQ(holders(key("name", "n")).size(), 1u);
  EXPECT_TRUE(share_a_gid(second.rivals[1], holders(key("name", "n"))));
}

TEST_F(EntryClaimsTest, OfManyRacingClaimantsExactlyOneKeepsTheValue) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 20; ++round) {
    const std::string value = std::to_string(round);
    const std::vector<AttrList> keys{key("value", value.c_str())};
    std::atomic<int> winners{0};
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        // Each tries until the value is someone's: its own, or held (a
        // rival seen after its own entry went).
        for (int attempt = 0; attempt < 1000; ++attempt) {
          const ClaimOutcome c = claim_entry(*dir, store, entry(value.c_str()), keys);
          if (c.gid > 0) {
            winners.fetch_add(1);
            return;
          }
          if (!holders(keys[0]).empty()) return;
          pause_before_reclaim();
        }
      });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(winners.load(), 1) << "round " << round;
    EXPECT_EQ(holders(keys[0]).size(), 1u) << "round " << round;
  }
}

}  // namespace
}  // namespace rocl::impl
