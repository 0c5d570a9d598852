// cor_domain_test.cpp - CoR domains (rocl.h, "CoR domains"): a tree of
// named domains, members with indices and local names unique in their
// domain, messages that never leave their domain's context, casts that
// reach every other member once, soft-ports refused for unknown networks.
// Threads of one process; tests/multiproc/cor_domains.c runs processes.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "rocl/rocl.hpp"
#include "test_util.hpp"

using namespace apitest;

namespace {

class CorDomains : public ContextTest {
 protected:
  rocl_gid_t create(const char *name, rocl_gid_t parent = ROCL_NULL_GID) {
    rocl_gid_t d = ROCL_NULL_GID;
    EXPECT_EQ(rocl_domain_create(parent, name, &d), ROCL_OK) << rocl_last_error();
    return d;
  }
  int join(rocl_gid_t domain, rocl_gid_t member, const char *name = nullptr) {
    int index = -100;
    EXPECT_EQ(rocl_domain_join(domain, member, name, &index), ROCL_OK) << rocl_last_error();
    return index;
  }
  // Sends text from `from` to the member at `to` in domain.
  int dsend(rocl_gid_t domain, rocl_gid_t from, int to, int tag, const std::string &text) {
    return rocl_dsend(domain, from, to, tag, const_cast<char *>(text.data()), text.size());
  }
  // The text of the next message on me in domain from `from` ("<code>" if
  // none came); its sender's index in *sender.
  std::string drecv(rocl_gid_t domain, rocl_gid_t me, int from, int *sender = nullptr,
                    int timeout = 2000) {
    void *p = nullptr;
    size_t len = 0;
    int index = -100, tag = -1;
    const int rc = rocl_drecv(domain, me, from, ROCL_ANY_TAG, &p, &index, &tag, &len, timeout);
    if (rc != ROCL_OK) return std::string("<") + rocl_strerror(rc) + ">";
    std::string out(static_cast<char *>(p), len);
    EXPECT_EQ(rocl_bfret(p), ROCL_OK);
    if (sender != nullptr) *sender = index;
    return out;
  }
};

TEST_F(CorDomains, CreateFindAndContextInTheReservedRange) {
  const rocl_gid_t d = create("alpha");
  ASSERT_NE(d, ROCL_NULL_GID);
  rocl_gid_t found = ROCL_NULL_GID;
  ASSERT_EQ(rocl_domain_find("alpha", ROCL_NULL_GID, 0, &found), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(found, d);
  uint32_t context = 0;
  ASSERT_EQ(rocl_domain_context(d, &context), ROCL_OK);
  EXPECT_GE(context, ROCL_COR_CONTEXT_FIRST);
  EXPECT_LE(context, ROCL_COR_CONTEXT_LAST);
  // A domain is a resource: the directory knows it by gid, with its type.
  AttrlHolder q;
  q.ask("type", 64);
  rocl_gid_t g = d;
  ASSERT_EQ(rocl_query(&g, q.get()), ROCL_OK);
  EXPECT_EQ(q.value("type"), "rocl-domain");
}

TEST_F(CorDomains, EveryDomainHasAContextOfItsOwn) {
  std::set<uint32_t> contexts;
  for (int i = 0; i < 16; ++i) {
    const rocl_gid_t d = create(("d" + std::to_string(i)).c_str());
    uint32_t c = 0;
    ASSERT_EQ(rocl_domain_context(d, &c), ROCL_OK);
    EXPECT_TRUE(contexts.insert(c).second) << "context " << c << " handed out twice";
  }
}

TEST_F(CorDomains, NamesAreUniqueWithinTheirParentOnly) {
  const rocl_gid_t top = create("tree");
  rocl_gid_t again = ROCL_NULL_GID;
  EXPECT_EQ(rocl_domain_create(ROCL_NULL_GID, "tree", &again), ROCL_EEXIST);
  EXPECT_TRUE(icontains(rocl_last_error(), "'tree'")) << rocl_last_error();
  // The same name under another parent is another domain.
  const rocl_gid_t child = create("tree", top);
  ASSERT_NE(child, ROCL_NULL_GID);
  EXPECT_NE(child, top);
  rocl_gid_t found = ROCL_NULL_GID;
  ASSERT_EQ(rocl_domain_find("tree", top, 0, &found), ROCL_OK);
  EXPECT_EQ(found, child);
  ASSERT_EQ(rocl_domain_find("tree", ROCL_NULL_GID, 0, &found), ROCL_OK);
  EXPECT_EQ(found, top);
  // A parent goes after its children.
  EXPECT_EQ(rocl_domain_delete(top), ROCL_EBUSY);
  EXPECT_TRUE(names_gid(rocl_last_error(), child)) << rocl_last_error();
  EXPECT_EQ(rocl_domain_delete(child), ROCL_OK);
  EXPECT_EQ(rocl_domain_delete(top), ROCL_OK);
  EXPECT_EQ(rocl_domain_find("tree", ROCL_NULL_GID, 0, &found), ROCL_ENOTFOUND);
  uint32_t c = 0;
  EXPECT_EQ(rocl_domain_context(top, &c), ROCL_EBADGID);
}

TEST_F(CorDomains, FindWaitsForTheDomainToAppear) {
  rocl_gid_t made = ROCL_NULL_GID;
  std::thread creator([&] {
    sleep_ms(100);
    EXPECT_EQ(rocl_domain_create(ROCL_NULL_GID, "later", &made), ROCL_OK) << rocl_last_error();
  });
  rocl_gid_t found = ROCL_NULL_GID;
  EXPECT_EQ(rocl_domain_find("later", ROCL_NULL_GID, 5000, &found), ROCL_OK) << rocl_last_error();
  creator.join();
  EXPECT_EQ(found, made);
  EXPECT_EQ(rocl_domain_find("never", ROCL_NULL_GID, 50, &found), ROCL_ENOTFOUND);
  EXPECT_TRUE(icontains(rocl_last_error(), "never")) << rocl_last_error();
}

TEST_F(CorDomains, BadArgumentsAreRefusedByName) {
  rocl_gid_t d = ROCL_NULL_GID;
  const rocl_gid_t plain = must_register("plain");
  EXPECT_EQ(rocl_domain_create(plain, "x", &d), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), plain)) << rocl_last_error();
  EXPECT_EQ(rocl_domain_create(ROCL_NULL_GID, "x", nullptr), ROCL_EINVAL);
  EXPECT_EQ(rocl_domain_create(ROCL_NULL_GID, std::string(201, 'n').c_str(), &d), ROCL_EINVAL);
  EXPECT_EQ(rocl_domain_find(nullptr, ROCL_NULL_GID, 0, &d), ROCL_EINVAL);
  int index = 0;
  EXPECT_EQ(rocl_domain_join(plain, plain, nullptr, &index), ROCL_EBADGID);
  const rocl_gid_t dom = create("args");
  EXPECT_EQ(rocl_domain_join(dom, kUnknownGid, nullptr, &index), ROCL_EBADGID);
  EXPECT_TRUE(names_gid(rocl_last_error(), kUnknownGid)) << rocl_last_error();
  rocl_gid_t g = ROCL_NULL_GID;
  EXPECT_EQ(rocl_domain_member(dom, -1, &g), ROCL_EINVAL);
  EXPECT_EQ(rocl_dsend(dom, plain, -1, 0, nullptr, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_dcast(dom, plain, -1, nullptr, 0), ROCL_EINVAL);
  void *p = nullptr;
  EXPECT_EQ(rocl_drecv(dom, plain, -2, 0, &p, nullptr, nullptr, nullptr, 0), ROCL_EINVAL);
  EXPECT_EQ(rocl_drecv(dom, plain, ROCL_ANY_INDEX, 0, nullptr, nullptr, nullptr, nullptr, 0),
            ROCL_EINVAL);
}

TEST_F(CorDomains, UnknownNamesAndIndicesAreNotFound) {
  const rocl_gid_t d = create("lookups");
  const rocl_gid_t a = must_register("m");
  EXPECT_EQ(join(d, a, "first"), 0);
  rocl_gid_t g = ROCL_NULL_GID;
  EXPECT_EQ(rocl_domain_lookup(d, "second", &g), ROCL_ENOTFOUND);
  EXPECT_TRUE(icontains(rocl_last_error(), "'second'")) << rocl_last_error();
  EXPECT_EQ(rocl_domain_member(d, 7, &g), ROCL_ENOTFOUND);
  EXPECT_TRUE(icontains(rocl_last_error(), "index 7")) << rocl_last_error();
  int index = 0;
  const rocl_gid_t outsider = must_register("m");
  EXPECT_EQ(rocl_domain_index(d, outsider, &index), ROCL_ENOTFOUND);
  EXPECT_TRUE(names_gid(rocl_last_error(), outsider)) << rocl_last_error();
  EXPECT_EQ(dsend(d, a, 7, 0, "x"), ROCL_ENOTFOUND);
  EXPECT_EQ(rocl_domain_leave(d, outsider), ROCL_ENOTFOUND);
  // A gid that is no domain is not one for every call.
  EXPECT_EQ(rocl_domain_member(a, 0, &g), ROCL_EBADGID);
  EXPECT_TRUE(icontains(rocl_last_error(), "not a domain")) << rocl_last_error();
  EXPECT_EQ(rocl_domain_size(kUnknownGid, &index), ROCL_EBADGID);
}

TEST_F(CorDomains, LocalNamesResolveOnlyInTheirOwnDomain) {
  const rocl_gid_t left = create("left"), right = create("right");
  const rocl_gid_t x = must_register("m"), y = must_register("m");
  join(left, x, "worker");
  join(right, y, "worker");
  join(right, x, "boss");
  rocl_gid_t g = ROCL_NULL_GID;
  ASSERT_EQ(rocl_domain_lookup(left, "worker", &g), ROCL_OK);
  EXPECT_EQ(g, x);
  ASSERT_EQ(rocl_domain_lookup(right, "worker", &g), ROCL_OK);
  EXPECT_EQ(g, y);
  EXPECT_EQ(rocl_domain_lookup(left, "boss", &g), ROCL_ENOTFOUND);
  // x is index 0 in left and index 1 in right.
  int index = -1;
  ASSERT_EQ(rocl_domain_index(right, x, &index), ROCL_OK);
  EXPECT_EQ(index, 1);
  ASSERT_EQ(rocl_domain_index(left, x, &index), ROCL_OK);
  EXPECT_EQ(index, 0);
}

TEST_F(CorDomains, ATakenNameIsRefusedWithASentence) {
  const rocl_gid_t d = create("names");
  const rocl_gid_t a = must_register("m"), b = must_register("m");
  join(d, a, "solo");
  int index = -1;
  EXPECT_EQ(rocl_domain_join(d, b, "solo", &index), ROCL_EEXIST);
  EXPECT_TRUE(icontains(rocl_last_error(), "'solo'")) << rocl_last_error();
  EXPECT_TRUE(names_gid(rocl_last_error(), d)) << rocl_last_error();
  int size = 0;
  ASSERT_EQ(rocl_domain_size(d, &size), ROCL_OK);
  EXPECT_EQ(size, 1);  // the refused join left nothing behind
  EXPECT_EQ(rocl_domain_join(d, a, "other", &index), ROCL_EEXIST);  // a member already
  EXPECT_TRUE(icontains(rocl_last_error(), "member")) << rocl_last_error();
  EXPECT_EQ(join(d, b, "duo"), 1);
}

TEST_F(CorDomains, EightThreadsJoiningAtOnceGetUniqueDenseIndices) {
  const rocl_gid_t d = create("crowd");
  // Each thread joins several members, so that joins overlap even where
  // one join takes less time than a thread's time slice.
  constexpr int kThreads = 8, kEach = 12, kMembers = kThreads * kEach;
  std::vector<rocl_gid_t> gids(kMembers);
  for (auto &g : gids) g = must_register("m");
  std::vector<int> indices(kMembers, -1);
  std::vector<int> codes(kMembers, ROCL_EINTERNAL);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int k = t * kEach; k < (t + 1) * kEach; ++k) {
        const std::string name = "m" + std::to_string(k);
        codes[k] = rocl_domain_join(d, gids[k], name.c_str(), &indices[k]);
      }
    });
  }
  for (auto &t : threads) t.join();
  std::set<int> seen;
  for (int k = 0; k < kMembers; ++k) {
    ASSERT_EQ(codes[k], ROCL_OK) << "member " << k;
    EXPECT_TRUE(seen.insert(indices[k]).second) << "index " << indices[k] << " given twice";
    rocl_gid_t g = ROCL_NULL_GID;
    ASSERT_EQ(rocl_domain_member(d, indices[k], &g), ROCL_OK) << rocl_last_error();
    EXPECT_EQ(g, gids[k]);
  }
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), kMembers - 1);  // dense: all distinct, in 0..kMembers-1
  int size = 0;
  ASSERT_EQ(rocl_domain_size(d, &size), ROCL_OK);
  EXPECT_EQ(size, kMembers);
}

TEST_F(CorDomains, MessagesNeverCrossDomains) {
  const rocl_gid_t da = create("A"), db = create("B");
  const rocl_gid_t s = must_register("m"), r = must_register("m");
  // The same two resources, in the same order, in both domains.
  join(da, s);
  join(da, r);
  join(db, s);
  join(db, r);
  ASSERT_EQ(dsend(da, s, 1, 5, "in A"), ROCL_OK) << rocl_last_error();
  uint32_t cb = 0, ca = 0;
  ASSERT_EQ(rocl_domain_context(db, &cb), ROCL_OK);
  ASSERT_EQ(rocl_domain_context(da, &ca), ROCL_OK);
  rocl_status_t st{};
  EXPECT_EQ(rocl_probe(r, ROCL_ANY_GID, ROCL_ANY_TAG, cb, &st, 0), ROCL_ETIMEDOUT);
  EXPECT_EQ(drecv(db, r, ROCL_ANY_INDEX, nullptr, 50),
            "<" + std::string(rocl_strerror(ROCL_ETIMEDOUT)) + ">");
  void *p = nullptr;
  EXPECT_EQ(rocl_recv(r, ROCL_ANY_GID, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, 0),
            ROCL_ETIMEDOUT);
  // It is there, in A's context, from s.
  ASSERT_EQ(rocl_probe(r, ROCL_ANY_GID, ROCL_ANY_TAG, ca, &st, 0), ROCL_OK);
  EXPECT_EQ(st.origin, s);
  int sender = -100;
  EXPECT_EQ(drecv(da, r, ROCL_ANY_INDEX, &sender), "in A");
  EXPECT_EQ(sender, 0);
  // rocl_sendx with A's context and universal gids is the same thing.
  ASSERT_EQ(rocl_sendx(s, r, 9, ca, 0, const_cast<char *>("by gid"), 6), ROCL_OK);
  EXPECT_EQ(drecv(da, r, 0, &sender), "by gid");
  EXPECT_EQ(sender, 0);
  // A plain send is not received in a domain.
  ASSERT_EQ(rocl_send(s, r, 1, const_cast<char *>("plain"), 5), ROCL_OK);
  EXPECT_EQ(drecv(da, r, ROCL_ANY_INDEX, nullptr, 50),
            "<" + std::string(rocl_strerror(ROCL_ETIMEDOUT)) + ">");
  ASSERT_EQ(rocl_recv(r, s, 1, &p, nullptr, nullptr, nullptr, 0), ROCL_OK);
  rocl_bfret(p);
}

TEST_F(CorDomains, ReceiveFromOneIndexLeavesTheOthers) {
  const rocl_gid_t d = create("order");
  const rocl_gid_t a = must_register("m"), b = must_register("m"), me = must_register("m");
  join(d, a);
  join(d, b);
  join(d, me);
  ASSERT_EQ(dsend(d, a, 2, 1, "from a"), ROCL_OK);
  ASSERT_EQ(dsend(d, b, 2, 1, "from b"), ROCL_OK);
  int sender = -100;
  EXPECT_EQ(drecv(d, me, 1, &sender), "from b");
  EXPECT_EQ(sender, 1);
  EXPECT_EQ(drecv(d, me, ROCL_ANY_INDEX, &sender), "from a");
  EXPECT_EQ(sender, 0);
  // A sender that is no member is reported as ROCL_ANY_INDEX.
  const rocl_gid_t stranger = must_register("m");
  uint32_t c = 0;
  ASSERT_EQ(rocl_domain_context(d, &c), ROCL_OK);
  ASSERT_EQ(rocl_sendx(stranger, me, 1, c, 0, const_cast<char *>("?"), 1), ROCL_OK);
  EXPECT_EQ(drecv(d, me, ROCL_ANY_INDEX, &sender), "?");
  EXPECT_EQ(sender, ROCL_ANY_INDEX);
}

TEST_F(CorDomains, CastReachesEveryOtherMemberOnce) {
  const rocl_gid_t d = create("cast");
  constexpr int kMembers = 5;
  std::vector<rocl_gid_t> m(kMembers);
  for (auto &g : m) {
    g = must_register("m");
    join(d, g);
  }
  const rocl_gid_t outsider = must_register("m");
  const std::string text = "to all";
  EXPECT_EQ(rocl_dcast(d, m[2], 4, const_cast<char *>(text.data()), text.size()), kMembers - 1)
      << rocl_last_error();
  for (int i = 0; i < kMembers; ++i) {
    int sender = -100;
    if (i == 2) {
      EXPECT_EQ(drecv(d, m[i], ROCL_ANY_INDEX, nullptr, 0),
                "<" + std::string(rocl_strerror(ROCL_ETIMEDOUT)) + ">");
      continue;
    }
    EXPECT_EQ(drecv(d, m[i], ROCL_ANY_INDEX, &sender), text) << "member " << i;
    EXPECT_EQ(sender, 2);
    EXPECT_EQ(drecv(d, m[i], ROCL_ANY_INDEX, nullptr, 0),
              "<" + std::string(rocl_strerror(ROCL_ETIMEDOUT)) + ">")
        << "member " << i << " got it twice";
  }
  void *p = nullptr;
  EXPECT_EQ(rocl_recv(outsider, ROCL_ANY_GID, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, 0),
            ROCL_ETIMEDOUT);
  // A buffer handed over is copied to each member and then returned.
  const rocl_pool_stats_t before = pool_stats();
  void *buf = rocl_bfget(text.size());
  std::memcpy(buf, text.data(), text.size());
  ASSERT_EQ(rocl_bftoret(buf), ROCL_OK);
  EXPECT_EQ(rocl_dcast(d, m[0], 4, buf, text.size()), kMembers - 1);
  for (int i = 1; i < kMembers; ++i) EXPECT_EQ(drecv(d, m[i], 0), text);
  EXPECT_EQ(pool_stats().in_use_buffers, before.in_use_buffers);
}

TEST_F(CorDomains, ALeftIndexIsTakenAgainAndSendsFollowIt) {
  const rocl_gid_t d = create("churn");
  const rocl_gid_t a = must_register("m"), b = must_register("m"), c = must_register("m");
  join(d, a, "a");
  join(d, b);
  ASSERT_EQ(dsend(d, b, 0, 1, "to a"), ROCL_OK);  // index 0 now kept by this process
  EXPECT_EQ(drecv(d, a, 1), "to a");
  ASSERT_EQ(rocl_domain_leave(d, a), ROCL_OK);
  EXPECT_EQ(rocl_domain_leave(d, a), ROCL_ENOTFOUND);
  rocl_gid_t g = ROCL_NULL_GID;
  EXPECT_EQ(rocl_domain_member(d, 0, &g), ROCL_ENOTFOUND);
  EXPECT_EQ(rocl_domain_lookup(d, "a", &g), ROCL_ENOTFOUND);
  EXPECT_EQ(join(d, c, "a"), 0);  // the lowest free index, and the name, again
  ASSERT_EQ(dsend(d, b, 0, 1, "to c"), ROCL_OK);
  EXPECT_EQ(drecv(d, c, 1), "to c");
  void *p = nullptr;
  EXPECT_EQ(rocl_drecv(d, a, ROCL_ANY_INDEX, ROCL_ANY_TAG, &p, nullptr, nullptr, nullptr, 0),
            ROCL_ETIMEDOUT);
}

TEST_F(CorDomains, AnUnknownNetworkIsRefusedListingTheOthers) {
  const rocl_gid_t d = create("ports");
  EXPECT_EQ(rocl_domain_port(d, "no-such-network"), ROCL_EINVAL);
  EXPECT_TRUE(icontains(rocl_last_error(), "no-such-network")) << rocl_last_error();
  EXPECT_TRUE(icontains(rocl_last_error(), "rocl_domain_port")) << rocl_last_error();
  EXPECT_TRUE(icontains(rocl_last_error(), "networks")) << rocl_last_error();
  EXPECT_EQ(rocl_domain_port(d, nullptr), ROCL_OK);  // undoing is always fine
  EXPECT_EQ(rocl_domain_port(kUnknownGid, nullptr), ROCL_EBADGID);
}

TEST_F(CorDomains, DeletingADomainEndsItsMemberships) {
  const rocl_gid_t d = create("short-lived");
  const rocl_gid_t a = must_register("m");
  join(d, a, "a");
  ASSERT_EQ(rocl_domain_delete(d), ROCL_OK);
  int size = 0;
  EXPECT_EQ(rocl_domain_size(d, &size), ROCL_EBADGID);
  EXPECT_EQ(dsend(d, a, 0, 0, "x"), ROCL_EBADGID);
  EXPECT_EQ(rocl_domain_leave(d, a), ROCL_ENOTFOUND);
  EXPECT_EQ(rocl_domain_delete(d), ROCL_EBADGID);
  // The name is free again, with a context of its own.
  EXPECT_NE(create("short-lived"), d);
}

TEST_F(CorDomains, CppDomainWrapsTheCalls) {
  rocl::Domain d = rocl::Domain::create("cpp");
  rocl::Resource a({{"type", "m"}}), b({{"type", "m"}});
  EXPECT_EQ(d.join(a.gid(), "a"), 0);
  EXPECT_EQ(d.join(b.gid()), 1);
  EXPECT_EQ(d.lookup("a"), a.gid());
  EXPECT_EQ(d.lookup("zz"), std::nullopt);
  EXPECT_EQ(d.member(1), b.gid());
  EXPECT_EQ(d.size(), 2);
  d.send(a.gid(), 1, 3, std::string_view("hi"));
  std::optional<rocl::DomainMessage> m = d.recv(b.gid());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->buffer.view(), "hi");
  EXPECT_EQ(m->from_index, 0);
  EXPECT_EQ(m->tag, 3);
  EXPECT_EQ(d.cast(b.gid(), 1, std::string_view("all")), 1);
  EXPECT_EQ(d.recv(a.gid(), 1)->buffer.view(), "all");
  EXPECT_FALSE(d.recv(a.gid(), rocl::any_index, rocl::any_tag, rocl::poll));
  try {
    d.join(b.gid(), "a");
    ADD_FAILURE() << "a taken name was accepted";
  } catch (const rocl::Error &e) {
    EXPECT_EQ(e.code(), ROCL_EEXIST);
  }
  std::optional<rocl::Domain> found = rocl::Domain::find("cpp");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->gid(), d.gid());
  EXPECT_EQ(found->context(), d.context());
  d.leave(a.gid());
  EXPECT_EQ(d.size(), 1);
}

}  // namespace
