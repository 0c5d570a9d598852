// stress_test.cpp - many threads, each with its own resource, exchanging
// messages of random sizes and tags; deletion racing with sends; resource
// churn. Every message must arrive exactly once, intact and in per-pair order.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <latch>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.h"
#include "test_util.hpp"

using namespace apitest;

namespace {

// Collects failures from worker threads (reported by the main thread).
class Failures {
 public:
  void add(std::string what) {
    std::lock_guard l(m_);
    ++count_;
    if (list_.size() < 20) list_.push_back(std::move(what));
  }
  int count() const {
    std::lock_guard l(m_);
    return count_;
  }
  std::string text() const {
    std::lock_guard l(m_);
    std::string s;
    for (const auto &w : list_) s += "  " + w + "\n";
    return s;
  }

 private:
  mutable std::mutex m_;
  int count_ = 0;
  std::vector<std::string> list_;
};

enum class Kind { kBftoret, kUserMemory, kPlainBuffer };

struct Planned {
  int dest;
  int tag;
  std::size_t len;
  Kind kind;
  std::uint32_t seq;  // per (sender, dest) sequence number
};

// Header carried by messages of at least 16 bytes.
struct Header {
  std::uint32_t sender;
  std::uint32_t seq;
  std::uint64_t checksum;  // hash64 of the bytes after the header
};
static_assert(sizeof(Header) == 16);

std::uint64_t seed_of(int sender, int dest, std::uint32_t seq) {
  return (std::uint64_t(sender) << 40) ^ (std::uint64_t(dest) << 32) ^ seq;
}

// Writes the message for plan entry m of `sender` into dst (m.len bytes).
void compose(void *dst, int sender, const Planned &m) {
  auto *p = static_cast<unsigned char *>(dst);
  std::uint64_t seed = seed_of(sender, m.dest, m.seq);
  if (m.len < sizeof(Header)) {
    fill_pattern(p, m.len, seed);
    return;
  }
  fill_pattern(p + sizeof(Header), m.len - sizeof(Header), seed);
  Header h{static_cast<std::uint32_t>(sender), m.seq,
           hash64(p + sizeof(Header), m.len - sizeof(Header))};
  std::memcpy(p, &h, sizeof h);
}

// Checks a received message against the plan; "" if fine.
std::string check(const void *data, std::size_t len, int tag, int sender, int receiver,
                  const Planned &m, std::vector<unsigned char> &scratch) {
  std::string who = "message " + std::to_string(m.seq) + " from " + std::to_string(sender) +
                    " to " + std::to_string(receiver);
  if (len != m.len) return who + ": length " + std::to_string(len) + " != " + std::to_string(m.len);
  if (tag != m.tag) return who + ": tag " + std::to_string(tag) + " != " + std::to_string(m.tag);
  const auto *p = static_cast<const unsigned char *>(data);
  if (len >= sizeof(Header)) {
    Header h;
    std::memcpy(&h, p, sizeof h);
    if (h.sender != static_cast<std::uint32_t>(sender)) return who + ": wrong sender in header";
    if (h.seq != m.seq) {
      return who + ": sequence " + std::to_string(h.seq) + " (lost, duplicated or reordered)";
    }
    if (h.checksum != hash64(p + sizeof h, len - sizeof h)) return who + ": checksum mismatch";
  }
  scratch.resize(len);
  compose(scratch.data(), sender, m);
  if (len != 0 && std::memcmp(scratch.data(), p, len) != 0) return who + ": content differs";
  return "";
}

TEST(Stress, RandomTrafficBetweenSixteenThreads) {
  const int kThreads = 16;
  const int kPerThread = scaled(10000, 20);
  const std::uint64_t kSeed = 0x5eed2024;

  ASSERT_GT(rocl_init(), 0);
  std::vector<rocl_gid_t> gid(kThreads);
  for (int t = 0; t < kThreads; ++t) gid[t] = must_register("stress", std::to_string(t));
  rocl_pool_stats_t base = pool_stats();

  // The plan, computed before anything runs: who sends what to whom.
  std::vector<std::vector<Planned>> plan(kThreads);
  // pair[s][r]: the plan entries from s to r, in sending order.
  std::vector<std::vector<std::vector<Planned>>> pair(kThreads,
                                                      std::vector<std::vector<Planned>>(kThreads));
  std::vector<int> expected(kThreads, 0);
  std::mt19937_64 rng(kSeed);
  for (int s = 0; s < kThreads; ++s) {
    for (int i = 0; i < kPerThread; ++i) {
      Planned m{};
      m.dest = static_cast<int>(rng() % (kThreads - 1));
      if (m.dest >= s) ++m.dest;
      m.tag = static_cast<int>(rng() % 1000);
      unsigned roll = static_cast<unsigned>(rng() % 100);
      m.len = roll == 0 ? 65536 : static_cast<std::size_t>(rng() % 4097);
      unsigned k = static_cast<unsigned>(rng() % 3);
      m.kind = k == 0 ? Kind::kBftoret : k == 1 ? Kind::kUserMemory : Kind::kPlainBuffer;
      m.seq = static_cast<std::uint32_t>(pair[s][m.dest].size());
      pair[s][m.dest].push_back(m);
      plan[s].push_back(m);
      ++expected[m.dest];
    }
  }

  Failures failures;
  std::vector<std::vector<int>> got(kThreads, std::vector<int>(kThreads, 0));  // [r][s]
  std::latch start(kThreads);

  auto worker = [&](int me) {
    std::vector<unsigned char> scratch, user;
    std::vector<int> &next = got[me];
    int received = 0;
    auto take = [&](int timeout) -> bool {
      void *p = nullptr;
      rocl_gid_t origin = 0;
      int tag = -1;
      size_t len = 0;
      int rc = rocl_recv(gid[me], ROCL_ANY, ROCL_ANY, &p, &origin, &tag, &len, timeout);
      if (rc == ROCL_ETIMEDOUT) return false;
      if (rc != ROCL_OK) {
        failures.add("thread " + std::to_string(me) + ": rocl_recv: " + rocl_strerror(rc));
        return false;
      }
      int s = -1;
      for (int k = 0; k < kThreads; ++k) {
        if (gid[k] == origin) s = k;
      }
      if (s < 0) {
        failures.add("thread " + std::to_string(me) + ": message from unknown origin 0x" +
                     hex(origin));
      } else if (next[s] >= static_cast<int>(pair[s][me].size())) {
        failures.add("thread " + std::to_string(me) + ": more messages from " + std::to_string(s) +
                     " than sent (duplicate?)");
      } else {
        std::string err = check(p, len, tag, s, me, pair[s][me][next[s]], scratch);
        if (!err.empty()) failures.add(err);
        ++next[s];
      }
      if (rocl_bfret(p) != ROCL_OK) failures.add("bfret of a received buffer failed");
      ++received;
      return true;
    };

    start.arrive_and_wait();
    for (std::size_t i = 0; i < plan[me].size(); ++i) {
      const Planned &m = plan[me][i];
      int rc = ROCL_OK;
      switch (m.kind) {
        case Kind::kBftoret: {
          void *p = rocl_bfget(m.len);
          if (p == nullptr) {
            failures.add("bfget failed: " + std::string(rocl_last_error()));
            continue;
          }
          compose(p, me, m);
          rocl_bftoret(p);
          rc = rocl_send(gid[me], gid[m.dest], m.tag, p, m.len);
          if (rc != ROCL_OK) rocl_bfret(p);
          break;
        }
        case Kind::kUserMemory:
          user.resize(m.len);
          compose(user.data(), me, m);
          rc = rocl_send(gid[me], gid[m.dest], m.tag, user.data(), m.len);
          break;
        case Kind::kPlainBuffer: {
          void *p = rocl_bfget(m.len);
          if (p == nullptr) {
            failures.add("bfget failed: " + std::string(rocl_last_error()));
            continue;
          }
          compose(p, me, m);
          rc = rocl_send(gid[me], gid[m.dest], m.tag, p, m.len);
          if (rc == ROCL_OK && settled_bfstat(p) != ROCL_BF_SENT) {
            failures.add("plain buffer never became SENT");
          }
          if (rocl_bfret(p) != ROCL_OK) failures.add("bfret after send failed");
          break;
        }
      }
      if (rc != ROCL_OK) {
        failures.add("thread " + std::to_string(me) + ": send " + std::to_string(i) + ": " +
                     rocl_strerror(rc) + " " + rocl_last_error());
      }
      if (i % 4 == 0) {
        while (take(0)) {
        }
      }
    }
    while (received < expected[me]) {
      if (!take(10000)) {
        failures.add("thread " + std::to_string(me) + ": only " + std::to_string(received) +
                     " of " + std::to_string(expected[me]) + " messages arrived");
        break;
      }
    }
  };

  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &t : threads) t.join();
  long long took = ms_since(t0);
  std::printf("[   info   ] %d messages in %lld ms\n", kThreads * kPerThread, took);

  EXPECT_EQ(failures.count(), 0) << failures.text();
  for (int r = 0; r < kThreads; ++r) {
    for (int s = 0; s < kThreads; ++s) {
      EXPECT_EQ(got[r][s], static_cast<int>(pair[s][r].size())) << "from " << s << " to " << r;
    }
    void *p = nullptr;
    EXPECT_EQ(rocl_recv(gid[r], ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0),
              ROCL_ETIMEDOUT)
        << "resource " << r << " has extra messages";
  }
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

// Senders race with the deletion of their destination: every send either
// succeeds or fails with ROCL_EBADGID, sends after the delete fail, and no
// buffer is lost.
TEST(Stress, DeleteRacesWithSenders) {
  ASSERT_GT(rocl_init(), 0);
  const int kSenders = 4;
  std::vector<rocl_gid_t> senders;
  for (int i = 0; i < kSenders; ++i) senders.push_back(must_register("race-sender"));
  rocl_gid_t victim = must_register("race-victim");
  rocl_pool_stats_t base = pool_stats();

  Failures failures;
  std::atomic<bool> deleted{false};
  std::atomic<int> accepted{0};
  std::atomic<int> received{0};
  std::latch start(kSenders + 2);

  std::vector<std::thread> ts;
  for (int i = 0; i < kSenders; ++i) {
    ts.emplace_back([&, i] {
      start.arrive_and_wait();
      for (int k = 0; k < scaled(20000, 10); ++k) {
        bool was_deleted = deleted.load();
        int rc;
        if (k % 2 == 0) {
          void *p = rocl_bfget(static_cast<std::size_t>(k % 700));
          if (p == nullptr) {
            failures.add("bfget failed");
            continue;
          }
          rocl_bftoret(p);
          rc = rocl_send(senders[static_cast<std::size_t>(i)], victim, k, p,
                         static_cast<std::size_t>(k % 700));
          if (rc != ROCL_OK && rocl_bfret(p) != ROCL_OK) {
            failures.add("a bftoret buffer was not owned after a failed send");
          }
        } else {
          char data[100] = {0};
          rc = rocl_send(senders[static_cast<std::size_t>(i)], victim, k, data, sizeof data);
        }
        if (rc == ROCL_OK) {
          ++accepted;
          if (was_deleted) failures.add("a send after rocl_delete returned succeeded");
        } else if (rc != ROCL_EBADGID) {
          failures.add(std::string("send: ") + rocl_strerror(rc));
        }
        if (was_deleted && k > 50) break;
      }
    });
  }
  ts.emplace_back([&] {
    start.arrive_and_wait();
    for (;;) {
      void *p = nullptr;
      int rc = rocl_recv(victim, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 5000);
      if (rc == ROCL_OK) {
        ++received;
        rocl_bfret(p);
        continue;
      }
      if (rc != ROCL_EDELETED && rc != ROCL_EBADGID) {
        failures.add(std::string("victim recv: ") + rocl_strerror(rc));
      }
      break;
    }
  });
  start.arrive_and_wait();
  sleep_ms(30);
  ASSERT_EQ(rocl_delete(victim), ROCL_OK);
  deleted = true;
  for (auto &t : ts) t.join();

  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_LE(received.load(), accepted.load());
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers) << "undelivered messages were not freed";
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

// Threads register, look up, message and delete their own short-lived
// resources while others do the same.
TEST(Stress, ResourceChurn) {
  ASSERT_GT(rocl_init(), 0);
  rocl_pool_stats_t base = pool_stats();
  Failures failures;
  const int kThreads = 4, kRounds = scaled(300, 5);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        std::string name = std::to_string(t) + "/" + std::to_string(i);
        std::int64_t g = register_resource({{"type", "churn"}, {"name", name}});
        if (g <= 0) {
          failures.add("register failed");
          continue;
        }
        rocl_gid_t gid = static_cast<rocl_gid_t>(g);
        AttrlHolder q;
        q.add("type", "churn");
        q.add("name", name);
        rocl_gid_t found = ROCL_NULL_GID;
        if (rocl_query(&found, q.get()) != ROCL_OK || found != gid) {
          failures.add("query by name did not find " + name);
        }
        if (rocl_send(gid, gid, i, name.data(), name.size()) != ROCL_OK) failures.add("send");
        if (i % 2 == 0) {  // leave every other message for rocl_delete to free
          void *p = nullptr;
          size_t len = 0;
          if (rocl_recv(gid, gid, i, &p, nullptr, nullptr, &len, 2000) != ROCL_OK) {
            failures.add("recv");
          } else {
            if (std::string(static_cast<char *>(p), len) != name) failures.add("content");
            rocl_bfret(p);
          }
        }
        if (rocl_delete(gid) != ROCL_OK) failures.add("delete");
        found = gid;
        AttrlHolder none;
        if (rocl_query(&found, none.get()) != ROCL_ENOTFOUND) failures.add("deleted still found");
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();

  AttrlHolder pattern;
  ASSERT_EQ(pattern.add("type", "churn"), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(rocl_query(&gid, pattern.get()), ROCL_ENOTFOUND);
  rocl_pool_stats_t end = pool_stats();
  EXPECT_EQ(end.in_use_buffers, base.in_use_buffers);
  EXPECT_EQ(end.in_use_bytes, base.in_use_bytes);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

// A receive on a gid whose resource was deleted fails with ROCL_EBADGID,
// and never takes a message of the resource that reuses the object: a
// receive that finds its message waiting takes no reference (it checks the
// gid under the mailbox's lock), while another thread registers, fills and
// deletes resources as fast as it can.
TEST(Stress, ReceivesOnDeletedGidsNeverTakeTheNextResourcesMessages) {
  ASSERT_GT(rocl_init(), 0);
  const int kRounds = scaled(3000, 50);
  const long kMinStaleReceives = 1000;
  std::atomic<rocl_gid_t> deleted{ROCL_NULL_GID};
  std::atomic<bool> receiving{false};
  std::atomic<bool> done{false};
  Failures failures;
  std::thread churn([&] {
    while (!receiving.load()) std::this_thread::yield();  // overlap the two loops
    for (int i = 0; i < kRounds; ++i) {
      const std::int64_t g = register_resource({{"type", "stale"}});
      if (g <= 0) {
        failures.add("register failed");
        continue;
      }
      const auto gid = static_cast<rocl_gid_t>(g);
      for (int k = 0; k < 3; ++k) {
        if (rocl_send(gid, gid, i, &i, sizeof i) != ROCL_OK) failures.add("send");
      }
      void *p = nullptr;
      std::size_t len = 0;
      int tag = -1;
      if (rocl_recv(gid, gid, ROCL_ANY, &p, nullptr, &tag, &len, 2000) != ROCL_OK) {
        failures.add("recv of a live resource's message");
      } else {
        if (tag != i || len != sizeof i) failures.add("the live resource got another's message");
        rocl_bfret(p);
      }
      if (rocl_delete(gid) != ROCL_OK) failures.add("delete");
      deleted.store(gid, std::memory_order_release);
    }
    done.store(true);
  });
  long stale_receives = 0;
  receiving.store(true);
  // Until the churn is over, and then on its last gid for a while more
  // (on a busy machine the churn may run while this thread waits for a cpu).
  while (!done.load() || stale_receives < kMinStaleReceives) {
    const rocl_gid_t gid = deleted.load(std::memory_order_acquire);
    if (gid == ROCL_NULL_GID) {
      std::this_thread::yield();
      continue;
    }
    void *p = nullptr;
    const int rc = rocl_recv(gid, ROCL_ANY, ROCL_ANY, &p, nullptr, nullptr, nullptr, 0);
    ++stale_receives;
    if (rc != ROCL_EBADGID) {
      failures.add("a receive on deleted gid returned " + std::to_string(rc));
      if (rc == ROCL_OK) rocl_bfret(p);
    }
  }
  churn.join();
  EXPECT_EQ(failures.count(), 0) << failures.text();
  EXPECT_EQ(rocl_exit(), ROCL_OK);
}

}  // namespace
