// mailbox_model_test.cpp - the core's mailbox (generic::Communicator and
// its lock-free hand-off) against a reference
// model: plain vectors searched linearly, which implement the matching rules
// in the most obvious way. Random operations (deliver, post_receive with
// exact and pattern headers, cancels of anything, probes, both rendezvous
// sides) are applied to both, and every outcome and queue size is compared;
// at the end close() must hand back exactly what the model still holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/mailbox.hpp"
#include "test_header.hpp"

namespace rocl::generic {
namespace {

using test_support::same;
using test_support::TestEnv;
using test_support::TestHeader;

using Env = Envelope<TestHeader>;

// The reference: four vectors in queue order, first match wins.
class Model {
 public:
  enum Where { kNowhere, kExpected, kUnexpected, kRequested, kUnrequested };
  struct Entry {
    int id;
    TestHeader header;
  };

  // Returns the id of the receive matched, or -1 if queued.
  int deliver(int id, const TestHeader &h) {
    return match_or_park(id, h, expected_, unexpected_,
                         [&](const TestHeader &posted) { return h == posted; });
  }
  int post_receive(int id, const TestHeader &h) {
    return match_or_park(id, h, unexpected_, expected_,
                         [&](const TestHeader &arrived) { return arrived == h; });
  }
  int post_rendezvous_send(int id, const TestHeader &h) {
    return match_or_park(id, h, requested_, unrequested_,
                         [&](const TestHeader &req) { return h == req; });
  }
  int request_arrived(int id, const TestHeader &h) {
    return match_or_park(id, h, unrequested_, requested_,
                         [&](const TestHeader &send) { return send == h; });
  }
  bool cancel_receive(int id) { return erase(expected_, id); }
  bool cancel_send(int id) { return erase(unrequested_, id); }
  std::optional<TestHeader> probe(const TestHeader &h) const {
    for (const Entry &e : unexpected_) {
      if (e.header == h) return e.header;
    }
    return std::nullopt;
  }

  const std::vector<Entry> &expected() const { return expected_; }
  const std::vector<Entry> &unexpected() const { return unexpected_; }
  const std::vector<Entry> &requested() const { return requested_; }
  const std::vector<Entry> &unrequested() const { return unrequested_; }

 private:
  template <class Match>
  static int match_or_park(int id, const TestHeader &h, std::vector<Entry> &search,
                           std::vector<Entry> &park, Match match) {
    for (auto it = search.begin(); it != search.end(); ++it) {
      if (match(it->header)) {
        const int other = it->id;
        search.erase(it);
        return other;
      }
    }
    park.push_back({id, h});
    return -1;
  }
  static bool erase(std::vector<Entry> &q, int id) {
    auto it = std::find_if(q.begin(), q.end(), [id](const Entry &e) { return e.id == id; });
    if (it == q.end()) return false;
    q.erase(it);
    return true;
  }

  std::vector<Entry> expected_, unexpected_, requested_, unrequested_;
};

struct Params {
  int sources;
  int tags;
  int contexts;
  int operations;
  double pattern_source;  // probability a receive/request/probe has source ANY
  double pattern_tag;     // ... tag ANY
};

// Keeps gtest from dumping the bytes of Params into every test line.
void PrintTo(const Params &p, std::ostream *os) {
  *os << p.sources << " sources, " << p.tags << " tags, " << p.contexts << " contexts, "
      << p.operations << " operations";
}

class ModelTest : public ::testing::TestWithParam<Params> {};

TEST_P(ModelTest, RandomOperationsAgreeWithReference) {
  const Params prm = GetParam();
  std::uint64_t seed = 12345;
  if (const char *s = std::getenv("ROCL_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed + static_cast<std::uint64_t>(prm.sources));
  auto uniform = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };

  impl::MailboxOf<TestHeader> comm;
  Model model;
  // Envelopes by id; ids are reused (the same envelope object serves many
  // operations) to exercise the resets done on posting.
  std::deque<TestEnv> envs;
  std::vector<int> state;  // Model::Where of each id
  std::vector<int> free_ids;
  // The receive that spins (post_spinning gave it a ticket), at most one at
  // a time: a message for it comes through the hand-off word.
  int spinning = -1;
  std::uint64_t spin_ticket = 0;

  auto concrete = [&] {
    return TestHeader{uniform(prm.sources), uniform(prm.tags),
                      static_cast<std::uint32_t>(uniform(prm.contexts)), 0};
  };
  auto maybe_pattern = [&] {
    TestHeader h = concrete();
    if (chance(prm.pattern_source)) h.source = TestHeader::kAny;
    if (chance(prm.pattern_tag)) h.tag = TestHeader::kAny;
    return h;
  };
  auto take_env = [&](const TestHeader &h) -> int {
    int id;
    if (!free_ids.empty() && chance(0.7)) {
      const int k = uniform(static_cast<int>(free_ids.size()));
      id = free_ids[k];
      free_ids[k] = free_ids.back();
      free_ids.pop_back();
    } else {
      id = static_cast<int>(envs.size());
      envs.emplace_back();
      envs.back().id = id;
      state.push_back(Model::kNowhere);
    }
    envs[id].header = h;
    return id;
  };
  auto release = [&](int id) {
    if (id == spinning) spinning = -1;
    state[id] = Model::kNowhere;
    free_ids.push_back(id);
  };
  // Any envelope at all, queued or not: cancels must sort them out.
  auto any_env = [&]() -> int {
    return envs.empty() ? -1 : uniform(static_cast<int>(envs.size()));
  };

  std::uint64_t matches = 0, cancels = 0, pattern_posts = 0, hand_offs = 0, withdrawn = 0;
  for (int op = 0; op < prm.operations; ++op) {
    SCOPED_TRACE(::testing::Message() << "operation " << op);
    int kind = uniform(100);
    // Keep the queues from drifting too long, so that the model stays fast.
    if (model.unexpected().size() > 300) kind = 35;
    if (model.expected().size() > 300) kind = 5;
    if (kind < 30) {  // deliver
      TestHeader h = concrete();
      if (spinning >= 0 && chance(0.3)) {  // often one for the spinning receive
        const TestHeader &spin = envs[spinning].header;
        if (spin.source != TestHeader::kAny) h.source = spin.source;
        if (spin.tag != TestHeader::kAny) h.tag = spin.tag;
        h.context = spin.context;
      }
      const int id = take_env(h);
      const int want = model.deliver(id, h);
      const bool to_spinner = want >= 0 && want == spinning;
      // Half the messages try the hand-off without the lock first, as the
      // rocl core's senders do: it takes exactly the spinning receive's.
      const bool tried = chance(0.5);
      if (tried) ASSERT_EQ(comm.hand_to_waiter(&envs[id], [] { return true; }), to_spinner);
      // The others go by deliver(), which hands them over under its lock.
      const Delivery got = tried && to_spinner ? Delivery::kMatched : comm.deliver(&envs[id]);
      if (to_spinner) {
        ASSERT_EQ(got, Delivery::kMatched);
        ASSERT_FALSE(comm.waiting_on(spin_ticket));
        ASSERT_FALSE(envs[want].complete.is_done());
        ASSERT_EQ(comm.take_handed(&envs[want], spin_ticket), &envs[id]);
        ASSERT_EQ(envs[want].matched, &envs[id]);
        ASSERT_EQ(envs[id].matched, &envs[want]);
        release(want);
        release(id);
        ++matches;
        ++hand_offs;
      } else if (want < 0) {
        ASSERT_EQ(got, Delivery::kQueued);
        ASSERT_EQ(envs[id].matched, nullptr);
        state[id] = Model::kUnexpected;
      } else {
        ASSERT_EQ(got, Delivery::kMatched);
        ASSERT_EQ(envs[id].matched, &envs[want]);
        ASSERT_EQ(envs[want].matched, &envs[id]);
        ASSERT_TRUE(envs[want].complete.is_done());
        ASSERT_EQ(envs[want].status, 0);
        release(want);
        release(id);
        ++matches;
      }
    } else if (kind < 60) {  // post_receive
      const TestHeader h = chance(0.5) ? concrete() : maybe_pattern();
      pattern_posts += h.is_pattern() ? 1 : 0;
      const int id = take_env(h);
      const bool alone = model.expected().empty();
      const int want = model.post_receive(id, h);
      // Some receives spin (the rocl core's rocl_recv): a ticket when
      // posted alone, and a message found queued comes back unsignalled.
      const bool spins = chance(0.4);
      std::uint64_t ticket = 0;
      Env *got = spins ? comm.post_spinning(&envs[id], &ticket) : comm.post_receive(&envs[id]);
      if (want < 0) {
        ASSERT_EQ(got, nullptr);
        ASSERT_FALSE(envs[id].complete.is_done());
        ASSERT_EQ(envs[id].matched, nullptr);
        ASSERT_EQ(ticket != 0, spins && alone);
        if (ticket != 0) {
          ASSERT_TRUE(comm.waiting_on(ticket));
          spinning = id;
          spin_ticket = ticket;
        }
        state[id] = Model::kExpected;
      } else {
        ASSERT_EQ(got, &envs[want]);
        ASSERT_EQ(ticket, 0u);
        ASSERT_EQ(envs[id].matched, &envs[want]);
        ASSERT_EQ(envs[want].matched, &envs[id]);
        ASSERT_EQ(envs[id].complete.is_done(), !spins);
        release(want);
        release(id);
        ++matches;
      }
    } else if (kind < 70) {  // cancel_receive of a random envelope, usually a queued receive
      if (spinning >= 0 && chance(0.2)) {  // or the spinning one stops spinning
        ASSERT_TRUE(comm.withdraw(spin_ticket));
        ASSERT_FALSE(comm.waiting_on(spin_ticket));
        spinning = -1;  // an ordinary posted receive from now on
        ++withdrawn;
        continue;
      }
      if (chance(0.1)) {  // or every posted receive goes, so that the next one posted is alone
        while (!model.expected().empty()) {
          const int gone = model.expected().front().id;
          ASSERT_TRUE(model.cancel_receive(gone));
          ASSERT_TRUE(comm.cancel_receive(&envs[gone]));
          if (gone == spinning) ASSERT_FALSE(comm.waiting_on(spin_ticket));  // idle again
          release(gone);
          ++cancels;
        }
        continue;
      }
      int id = -1;
      if (!model.expected().empty() && chance(0.7)) {
        id = model.expected()[uniform(static_cast<int>(model.expected().size()))].id;
      } else {
        id = any_env();
      }
      if (id < 0) continue;
      const bool want = model.cancel_receive(id);
      ASSERT_EQ(comm.cancel_receive(&envs[id]), want);
      if (want) {
        release(id);
        ++cancels;
      }
    } else if (kind < 78) {  // probe
      const TestHeader h = chance(0.3) ? concrete() : maybe_pattern();
      const std::optional<TestHeader> want = model.probe(h);
      const std::optional<TestHeader> got = comm.probe(h);
      ASSERT_EQ(got.has_value(), want.has_value());
      if (want) {
        ASSERT_TRUE(same(*got, *want));
      }
    } else if (kind < 86) {  // post_rendezvous_send
      const TestHeader h = concrete();
      const int id = take_env(h);
      const int want = model.post_rendezvous_send(id, h);
      Env *got = comm.post_rendezvous_send(&envs[id]);
      if (want < 0) {
        ASSERT_EQ(got, nullptr);
        state[id] = Model::kUnrequested;
      } else {
        ASSERT_EQ(got, &envs[want]);
        ASSERT_EQ(envs[id].matched, &envs[want]);
        ASSERT_EQ(envs[want].matched, &envs[id]);
        ASSERT_FALSE(envs[id].complete.is_done());
        release(want);
        release(id);
        ++matches;
      }
      ASSERT_FALSE(envs[id].complete.is_done());
    } else if (kind < 94) {  // request_arrived
      const TestHeader h = chance(0.5) ? concrete() : maybe_pattern();
      const int id = take_env(h);
      const int want = model.request_arrived(id, h);
      Env *got = comm.request_arrived(&envs[id]);
      if (want < 0) {
        ASSERT_EQ(got, nullptr);
        state[id] = Model::kRequested;
      } else {
        ASSERT_EQ(got, &envs[want]);
        ASSERT_EQ(envs[id].matched, &envs[want]);
        ASSERT_EQ(envs[want].matched, &envs[id]);
        release(want);
        release(id);
        ++matches;
      }
    } else {  // cancel_send of a random envelope, usually a parked send
      int id = -1;
      if (!model.unrequested().empty() && chance(0.7)) {
        id = model.unrequested()[uniform(static_cast<int>(model.unrequested().size()))].id;
      } else {
        id = any_env();
      }
      if (id < 0) continue;
      const bool want = model.cancel_send(id);
      ASSERT_EQ(comm.cancel_send(&envs[id]), want);
      if (want) {
        release(id);
        ++cancels;
      }
    }
    ASSERT_EQ(comm.expected_size(), model.expected().size());
    ASSERT_EQ(comm.unexpected_size(), model.unexpected().size());
    ASSERT_EQ(comm.requested_size(), model.requested().size());
    ASSERT_EQ(comm.unrequested_size(), model.unrequested().size());
  }
  // The run must actually have exercised the interesting paths.
  EXPECT_GT(matches, static_cast<std::uint64_t>(prm.operations / 5));
  EXPECT_GT(cancels, 100u);
  EXPECT_GT(pattern_posts, 1000u);
  EXPECT_GT(hand_offs, static_cast<std::uint64_t>(prm.operations / 5000));
  EXPECT_GT(withdrawn, 2u);

  // close() hands back exactly what the model still holds, each once, and
  // completes the outstanding receives.
  std::vector<int> dropped;
  comm.close(-7, [&](Env *e) { dropped.push_back(static_cast<TestEnv *>(e)->id); });
  std::vector<int> want_dropped;
  for (const auto *q : {&model.unexpected(), &model.unrequested(), &model.requested()}) {
    for (const Model::Entry &e : *q) want_dropped.push_back(e.id);
  }
  std::sort(dropped.begin(), dropped.end());
  std::sort(want_dropped.begin(), want_dropped.end());
  EXPECT_EQ(dropped, want_dropped);
  if (spinning >= 0) {  // close() settles the spinning receive: completed, nothing handed
    EXPECT_FALSE(comm.waiting_on(spin_ticket));
    EXPECT_EQ(comm.take_handed(&envs[spinning], spin_ticket), nullptr);
  }
  for (const Model::Entry &e : model.expected()) {
    EXPECT_TRUE(envs[e.id].complete.is_done());
    EXPECT_EQ(envs[e.id].status, -7);
    EXPECT_FALSE(comm.cancel_receive(&envs[e.id]));
  }
}

INSTANTIATE_TEST_SUITE_P(Generic, ModelTest,
                         ::testing::Values(
                             // Few headers: lots of matching, bins stay cached.
                             Params{3, 3, 2, 100000, 0.3, 0.3},
                             // 2 x 12 x 12 = 288 headers: more than 64 bins come and go.
                             Params{12, 12, 2, 100000, 0.25, 0.25},
                             // Mostly wildcards.
                             Params{4, 6, 1, 30000, 0.7, 0.7}),
                         [](const ::testing::TestParamInfo<Params> &info) {
                           return "sources" + std::to_string(info.param.sources) + "_tags" +
                                  std::to_string(info.param.tags) + "_ops" +
                                  std::to_string(info.param.operations);
                         });

}  // namespace
}  // namespace rocl::generic
