// cases_load.cpp - many threads with random traffic, and a slow receiver.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cases.hpp"

namespace conf {

// ---- 6. threads ---------------------------------------------------------------------------
// 16 threads per rank, each a resource; 32 resources in all, numbered
// 0..15 (rank 0) and 16..31 (rank 1). Every thread sends kPerThread
// messages to random resources (itself included) with random sizes, the
// tag being the sequence number of the (origin, destination) pair, while
// draining its own resource. Then it sends a "done" with the number of
// messages it sent to each resource, and receives until it has every
// resource's "done". A receiver replays every sender's schedule (same seed)
// so it knows the length of each message; the bytes are a pattern seeded by
// (origin, destination, sequence). Every message must arrive exactly once,
// in order per pair, with the right length and bytes; no data after a
// "done"; the count in each "done" must match. Every receive has a timeout:
// a lost message fails the case with the counts, it cannot hang.

namespace {
constexpr int kThreadsPerRank = 16;
constexpr int kResources = 2 * kThreadsPerRank;
constexpr int kPerThread = 2000;
constexpr int kDoneTag = 0x7fff0000;

std::size_t traffic_size(Rng &g) {
  const std::uint64_t r = g.below(10);
  if (r < 5) return g.below(257);           // 0..256 B
  if (r < 8) return 257 + g.below(3840);    // ..4 KiB
  return 4097 + g.below(65536 - 4096 + 1);  // ..64 KiB
}

struct Schedule {
  std::vector<int> dst;
  std::vector<std::size_t> len;
};
Schedule schedule_of(std::uint64_t seed, int index) {
  Schedule s;
  Rng g(mix(seed, 6, index));
  for (int i = 0; i < kPerThread; ++i) {
    s.dst.push_back(static_cast<int>(g.below(kResources)));
    s.len.push_back(traffic_size(g));
  }
  return s;
}

struct Worker {
  int index = 0;  // 0..31
  rocl_gid_t gid = 0;
  const std::vector<rocl_gid_t> *all = nullptr;
  const std::map<rocl_gid_t, int> *index_of = nullptr;
  std::vector<std::vector<std::size_t>> expect_len;  // [origin][seq]
  std::vector<std::uint32_t> got;                    // [origin] next sequence number
  std::vector<int> done_count;                       // [origin] announced count, -1: none yet
  int dones = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t messages_in = 0;
  // For the watchdog (read from its thread).
  std::atomic<int> sent_n{0};       // messages sent so far
  std::atomic<int> in_send{0};      // 1 while inside rocl_send
  std::atomic<int> dones_seen{0};   // "done"s received
  std::atomic<long> received_n{0};  // data messages received

  std::string progress() const {
    char buf[128];
    std::snprintf(buf, sizeof buf, "w%d: sent %d/%d%s, received %ld, dones %d/%d", index,
                  sent_n.load(), kPerThread + kResources,
                  in_send.load() ? " (inside rocl_send)" : "", received_n.load(), dones_seen.load(),
                  kResources);
    return buf;
  }

  // Handles one received message; returns false on a "done".
  void handle(void *p, rocl_gid_t from, int tag, std::size_t len) {
    auto it = index_of->find(from);
    CHECK(it != index_of->end(), "worker %d: message from unknown origin %s", index,
          hex(from).c_str());
    const int o = it->second;
    if (tag == kDoneTag) {
      std::uint32_t count = 0;
      CHECK(len == sizeof count, "worker %d: done from %d has %zu bytes", index, o, len);
      std::memcpy(&count, p, sizeof count);
      CHECK(done_count[o] < 0, "worker %d: a second done from %d", index, o);
      CHECK(count == expect_len[o].size(),
            "worker %d: resource %d says it sent %u, its schedule says %zu", index, o, count,
            expect_len[o].size());
      CHECK(got[o] == count,
            "worker %d: resource %d sent %u messages but %u arrived before its done", index, o,
            count, got[o]);
      done_count[o] = static_cast<int>(count);
      ++dones;
      dones_seen.store(dones);
    } else {
      CHECK(done_count[o] < 0, "worker %d: data (tag %d) from %d after its done", index, tag, o);
      CHECK(tag >= 0 && static_cast<std::size_t>(tag) < expect_len[o].size(),
            "worker %d: tag %d from %d: %zu messages expected from it", index, tag, o,
            expect_len[o].size());
      CHECK(static_cast<std::uint32_t>(tag) == got[o],
            "worker %d: from %d sequence %d, expected %u (lost, duplicated or reordered)", index, o,
            tag, got[o]);
      CHECK(len == expect_len[o][tag], "worker %d: from %d seq %d: %zu bytes, expected %zu", index,
            o, tag, len, expect_len[o][tag]);
      const long long bad = check_pattern(p, len, mix(o, index, tag));
      CHECK(bad < 0, "worker %d: from %d seq %d (%zu B): bytes differ at %lld", index, o, tag, len,
            bad);
      ++got[o];
      bytes_in += len;
      ++messages_in;
      received_n.store(static_cast<long>(messages_in));
    }
    CHECK_RC(rocl_bfret(p), ROCL_OK);
  }

  // Receives with the given timeout; returns false if nothing came.
  bool receive_one(int timeout) {
    void *p = nullptr;
    rocl_gid_t from = 0;
    int tag = -1;
    std::size_t len = 0;
    const int rc = rocl_recv(gid, ROCL_ANY_GID, ROCL_ANY_TAG, &p, &from, &tag, &len, timeout);
    if (rc == ROCL_ETIMEDOUT) return false;
    CHECK_RC(rc, ROCL_OK);
    handle(p, from, tag, len);
    return true;
  }

  std::string missing() const {
    std::string s;
    for (int o = 0; o < kResources; ++o) {
      if (done_count[o] < 0) {
        s += " " + std::to_string(o) + "(" + std::to_string(got[o]) + "/" +
             std::to_string(expect_len[o].size()) + ")";
      }
    }
    return s;
  }

  void run(std::uint64_t seed) {
    // What everyone sends to us.
    expect_len.assign(kResources, {});
    for (int o = 0; o < kResources; ++o) {
      Schedule s = schedule_of(seed, o);
      for (int i = 0; i < kPerThread; ++i)
        if (s.dst[i] == index) expect_len[o].push_back(s.len[i]);
    }
    got.assign(kResources, 0);
    done_count.assign(kResources, -1);
    const Schedule mine = schedule_of(seed, index);
    std::vector<std::uint32_t> sent(kResources, 0);
    std::vector<unsigned char> user(65536);
    for (int i = 0; i < kPerThread; ++i) {
      const int d = mine.dst[i];
      const std::size_t n = mine.len[i];
      const std::uint32_t seq = sent[d]++;
      void *p = user.data();
      if (i % 2 == 0) {
        p = rocl_bfget(n);
        CHECK(p != nullptr, "worker %d: rocl_bfget(%zu)", index, n);
      }
      fill_pattern(p, n, mix(index, d, seq));
      if (p != user.data()) CHECK_RC(rocl_bftoret(p), ROCL_OK);
      in_send.store(1);
      const int rc = rocl_send(gid, (*all)[d], static_cast<int>(seq), p, n);
      in_send.store(0);
      sent_n.store(i + 1);
      CHECK(rc == ROCL_OK, "worker %d: send %d to %d (%zu B): %s", index, i, d, n,
            rc_text(rc).c_str());
      if (i % 8 == 7) {
        for (int k = 0; k < 64 && receive_one(0); ++k) {
        }
      }
    }
    for (int d = 0; d < kResources; ++d) {
      in_send.store(1);
      const int rc = rocl_send(gid, (*all)[d], kDoneTag, &sent[d], sizeof sent[d]);
      in_send.store(0);
      sent_n.store(kPerThread + d + 1);
      CHECK(rc == ROCL_OK, "worker %d: done to %d: %s", index, d, rc_text(rc).c_str());
    }
    while (dones < kResources) {
      CHECK(receive_one(kLongMs), "worker %d: nothing arrived for %d ms; waiting for:%s", index,
            kLongMs, missing().c_str());
    }
  }
};
}  // namespace

void case_threads(Rank &r) {
  const std::uint64_t seed = mix(suite_seed(), 66);
  note("seed %llu (set CONF_SEED to change)", static_cast<unsigned long long>(suite_seed()));
  std::vector<rocl_gid_t> all(kResources, 0);
  for (int k = 0; k < kThreadsPerRank; ++k) {
    all[r.rank * kThreadsPerRank + k] = reg(("w" + std::to_string(k)).c_str());
  }
  // Swap the gid lists over the control channel.
  ctl_send(1, &all[r.rank * kThreadsPerRank], kThreadsPerRank * sizeof(rocl_gid_t));
  std::vector<unsigned char> theirs = ctl_recv(1);
  CHECK(theirs.size() == kThreadsPerRank * sizeof(rocl_gid_t), "gid list of %zu bytes",
        theirs.size());
  std::memcpy(&all[r.peer() * kThreadsPerRank], theirs.data(), theirs.size());
  std::map<rocl_gid_t, int> index_of;
  for (int i = 0; i < kResources; ++i) index_of[all[i]] = i;
  CHECK(index_of.size() == kResources, "the 32 gids are not distinct");
  barrier("registered");

  std::vector<Worker> workers(kThreadsPerRank);
  for (int k = 0; k < kThreadsPerRank; ++k) workers[k].index = r.rank * kThreadsPerRank + k;
  set_status([&workers] {
    std::string s;
    for (const Worker &w : workers) s += (s.empty() ? "      " : "\n      ") + w.progress();
    return s;
  });
  std::vector<std::thread> threads;
  const double t0 = now_ms();
  step("threads: traffic");
  for (int k = 0; k < kThreadsPerRank; ++k) {
    Worker &w = workers[k];
    w.index = r.rank * kThreadsPerRank + k;
    w.gid = all[w.index];
    w.all = &all;
    w.index_of = &index_of;
    threads.emplace_back([&r, &w, seed] {
      RankScope scope(r);
      w.run(seed);
    });
  }
  for (auto &t : threads) t.join();
  set_status(nullptr);
  const double t1 = now_ms();
  std::uint64_t msgs = 0, bytes = 0;
  for (const Worker &w : workers) {
    msgs += w.messages_in;
    bytes += w.bytes_in;
  }
  note("%d threads: %llu messages (%.1f MiB) received exactly once, in order, in %.0f ms",
       kThreadsPerRank, static_cast<unsigned long long>(msgs), bytes / 1048576.0, t1 - t0);
  barrier("all done");
}

// ---- 7. slow receiver ---------------------------------------------------------------------
// Rank 0 sends 2000 x 64 KiB (125 MiB) from user memory as fast as it can;
// rank 1 starts receiving only after kStartPauseMs and then receives slowly
// (1 ms sleep every 50 messages). Everything arrives in order, and the
// sender's resident memory (VmRSS, sampled every 50 sends and until the
// receiver is done) grows by less than the bound: whatever it buffers for a
// slow peer must be bounded (flow control). The bound is 64 MiB between
// processes - half the stream, so a sender that keeps what the receiver has
// not taken yet fails (a bound above 125 MiB could never fail) - and
// 256 MiB with --threads, where both ranks are one process and the stream
// legitimately waits in the receiver's mailbox (then it only catches gross
// leaks). CONF_RSS_BOUND_MIB overrides it. Peak RSS is printed for both.

void case_slow_receiver(Rank &r) {
  constexpr int kCount = 2000;
  constexpr std::size_t kLen = 64 * 1024;
  constexpr int kStartPauseMs = 300;
  long bound_mib = r.threaded ? 256 : 64;
  if (const char *b = std::getenv("CONF_RSS_BOUND_MIB")) bound_mib = std::atol(b);
  rocl_gid_t s = 0, rr = 0;
  if (r.rank == 0) {
    s = reg("S");
    rr = find("R", 1);
  } else {
    rr = reg("R");
    s = find("S", 0);
  }
  barrier("registered");
  const long rss0 = rss_kib("VmRSS");
  long peak = rss0;
  const double t0 = now_ms();
  if (r.rank == 0) {
    std::vector<unsigned char> user(kLen);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      if (i % 100 == 0) step("slow receiver: sent %u", i);
      fill_pattern(user.data(), kLen, mix(7, i));
      std::memcpy(user.data(), &i, sizeof i);
      const int rc = rocl_send(s, rr, 1, user.data(), kLen);
      CHECK(rc == ROCL_OK, "send %u: %s", i, rc_text(rc).c_str());
      if (i % 50 == 49) peak = std::max(peak, rss_kib("VmRSS"));
    }
    const double sent_ms = now_ms() - t0;
    peak = std::max(peak, rss_kib("VmRSS"));
    // Keep sampling until the receiver has everything.
    for (;;) {
      void *p = nullptr;
      const int rc = rocl_recv(r.ctl, r.peer_ctl, 2, &p, nullptr, nullptr, nullptr, 20);
      peak = std::max(peak, rss_kib("VmRSS"));
      if (rc == ROCL_OK) {
        CHECK_RC(rocl_bfret(p), ROCL_OK);
        break;
      }
      CHECK(rc == ROCL_ETIMEDOUT, "waiting for the receiver: %s", rc_text(rc).c_str());
      CHECK(now_ms() - t0 < 60000, "the receiver did not finish within 60 s");
    }
    const long grew = peak - rss0;
    note(
        "sender: %d x 64 KiB sent in %.0f ms; VmRSS start %ld KiB, peak %ld KiB (+%.1f MiB), "
        "VmHWM %ld KiB; bound +%ld MiB",
        kCount, sent_ms, rss0, peak, grew / 1024.0, rss_kib("VmHWM"), bound_mib);
    CHECK(grew < bound_mib * 1024,
          "the sender's RSS grew by %.1f MiB (bound %ld MiB) while the receiver was slow",
          grew / 1024.0, bound_mib);
  } else {
    std::vector<unsigned char> want(kLen);
    step("slow receiver: pause before receiving");
    usleep(kStartPauseMs * 1000);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      if (i % 100 == 0) step("slow receiver: received %u", i);
      void *p = nullptr;
      std::size_t len = 0;
      const int rc = rocl_recv(rr, s, 1, &p, nullptr, nullptr, &len, kLongMs);
      CHECK(rc == ROCL_OK, "receive %u: %s", i, rc_text(rc).c_str());
      std::uint32_t seq = 0;
      CHECK(len == kLen, "message %u: %zu bytes", i, len);
      std::memcpy(&seq, p, sizeof seq);
      CHECK(seq == i, "message %u carries sequence number %u", i, seq);
      // The bytes: the pattern, with the sequence number in the first 4.
      fill_pattern(want.data(), kLen, mix(7, i));
      std::memcpy(want.data(), &i, sizeof i);
      CHECK(std::memcmp(p, want.data(), kLen) == 0, "message %u: bytes differ", i);
      CHECK_RC(rocl_bfret(p), ROCL_OK);
      if (i % 50 == 49) {
        peak = std::max(peak, rss_kib("VmRSS"));
        usleep(1000);
      }
    }
    ctl_send(2, "all", 3);
    note(
        "receiver: %d x 64 KiB received in order in %.0f ms; VmRSS start %ld KiB, peak %ld KiB "
        "(+%.1f MiB)",
        kCount, now_ms() - t0, rss0, peak, (peak - rss0) / 1024.0);
  }
  barrier("done");
}

// ---- 12. sends that nobody receives yet ---------------------------------------------------
// rocl.h, rocl_send: "Returns ROCL_OK once the message is accepted
// (delivered or queued; never waits for a receive)". Rank 0 sends 500 x
// 64 KiB (half zero-copy buffers, half user memory) while rank 1 receives
// nothing until rank 0 says it is done; then rank 1 receives them all, in
// order. If rocl_send waited for receives, rank 0 would never get there:
// rank 1 reports it after kLongMs. (Where the data waits meanwhile is the
// library's choice; the RSS of both ranks is printed.)

void case_unreceived(Rank &r) {
  constexpr int kCount = 500;
  constexpr std::size_t kLen = 64 * 1024;
  rocl_gid_t s = 0, rr = 0;
  if (r.rank == 0) {
    s = reg("S");
    rr = find("R", 1);
  } else {
    rr = reg("R");
    s = find("S", 0);
  }
  barrier("registered");
  const long rss0 = rss_kib("VmRSS");
  const double t0 = now_ms();
  if (r.rank == 0) {
    std::vector<unsigned char> user(kLen);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      step("unreceived: inside rocl_send of message %u of %d (rank 1 receives nothing yet)", i,
           kCount);
      void *p = user.data();
      if (i % 2 == 0) {
        p = rocl_bfget(kLen);
        CHECK(p != nullptr, "rocl_bfget");
      }
      fill_pattern(p, kLen, mix(12, i));
      std::memcpy(p, &i, sizeof i);
      if (i % 2 == 0) CHECK_RC(rocl_bftoret(p), ROCL_OK);
      const int rc = rocl_send(s, rr, 1, p, kLen);
      CHECK(rc == ROCL_OK, "send %u: %s", i, rc_text(rc).c_str());
    }
    const double sent_ms = now_ms() - t0;
    ctl_send(1, "sent", 4);
    note("sender: %d x 64 KiB accepted in %.0f ms with nothing received; VmRSS +%.1f MiB", kCount,
         sent_ms, (rss_kib("VmRSS") - rss0) / 1024.0);
  } else {
    step("unreceived: waiting for rank 0 to finish its sends");
    void *p = nullptr;
    const int rc = rocl_recv(r.ctl, r.peer_ctl, 1, &p, nullptr, nullptr, nullptr, kLongMs);
    CHECK(rc == ROCL_OK,
          "rank 0 did not finish sending %d x 64 KiB within %d ms while this rank received none "
          "of them (%s): rocl_send waits for a receive, but rocl.h says it never does",
          kCount, kLongMs, rc_text(rc).c_str());
    CHECK_RC(rocl_bfret(p), ROCL_OK);
    const long rss_before = rss_kib("VmRSS");
    std::vector<unsigned char> want(kLen);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      step("unreceived: receiving %u", i);
      std::size_t len = 0;
      const int rc2 = rocl_recv(rr, s, 1, &p, nullptr, nullptr, &len, kLongMs);
      CHECK(rc2 == ROCL_OK, "receive %u: %s", i, rc_text(rc2).c_str());
      fill_pattern(want.data(), kLen, mix(12, i));
      std::memcpy(want.data(), &i, sizeof i);
      CHECK(len == kLen && std::memcmp(p, want.data(), kLen) == 0,
            "message %u: %zu bytes, content %s (sequence number %u)", i, len,
            len == kLen && std::memcmp(p, want.data(), kLen) == 0 ? "ok" : "differs",
            *static_cast<std::uint32_t *>(p));
      CHECK_RC(rocl_bfret(p), ROCL_OK);
    }
    note("receiver: VmRSS +%.1f MiB while the %d messages waited; all received in order",
         (rss_before - rss0) / 1024.0, kCount);
  }
  barrier("done");
}

}  // namespace conf
