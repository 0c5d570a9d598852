// worker.cpp - a worker thread's life: it registers a resource, finds every
// worker of the job, then takes part in each phase. Workers are numbered by
// (rank, thread); the ring visits them in that order, across processes.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "demo.hpp"

namespace demo {

namespace {

const char *const kNames[] = {"ada",      "alan", "grace", "edsger", "barbara", "donald",
                              "frances",  "ken",  "hedy",  "dennis", "radia",   "leslie",
                              "margaret", "john", "shafi", "tony"};
constexpr int kNameCount = sizeof kNames / sizeof kNames[0];

struct Peer {
  int rank = 0, thread = 0;
  std::string name;
  rocl::gid_t gid = ROCL_NULL_GID;
};

// The ring token: hops so far, how many of them crossed to another process,
// laps completed, and whether this is the last lap.
struct Token {
  std::uint64_t hops, crossings, laps, last;
};

class Worker {
 public:
  Worker(Shared &s, int thread)
      : s_(s),
        rank_(s.rank),
        thread_(thread),
        name_(worker_name(s.rank, thread, s.threads)),
        who_(name_ + " (thread " + std::to_string(thread) + ")") {}

  void run() {
    try {
      s_.sync.arrive_and_wait();
      register_itself();
      s_.sync.arrive_and_wait();
      for (Phase phase : s_.phases) {
        s_.sync.arrive_and_wait();
        switch (phase) {
          case Phase::find_others:
            find_others();
            break;
          case Phase::ring:
            ring();
            break;
          case Phase::ping_between:
            ping_between();
            break;
          case Phase::ping_inside:
            ping_inside();
            break;
          case Phase::rate:
            rate();
            break;
        }
        s_.sync.arrive_and_wait();
      }
      s_.sync.arrive_and_wait();  // every process is done: leave the directory
      me_.reset();
    } catch (const rocl::Error &e) {
      fail(who_, e);
    } catch (const std::exception &e) {
      fail(who_, e.what());
    }
  }

 private:
  rocl::Message receive(rocl::gid_t from, int tag, const std::string &what) {
    return demo::receive(*me_, from, tag, kReceiveTimeout, who_, what);
  }
  const Peer &at(int rank, int thread) const {
    return all_[static_cast<std::size_t>(rank * s_.threads + thread)];
  }
  const Peer &ring_neighbour(int step) const {
    const int n = static_cast<int>(all_.size());
    const int me = rank_ * s_.threads + thread_;
    return all_[static_cast<std::size_t>(((me + step) % n + n) % n)];
  }

  void register_itself() {
    const std::string rank = std::to_string(rank_), thread = std::to_string(thread_);
    me_.emplace(
        rocl::Attributes{{"type", "worker"}, {"rank", rank}, {"thread", thread}, {"name", name_}});
    std::string line = name_;
    line.resize(std::max<std::size_t>(line.size() + 1, 9), ' ');
    s_.lines[static_cast<std::size_t>(thread_)] = line + "gid " + hex(me_->gid()) +
                                                  "  {type=worker, rank=" + rank +
                                                  ", thread=" + thread + ", name=" + name_ + "}";
  }

  // Names found, sorted by rank and thread, a '|' between processes.
  static std::string names(const std::vector<Peer> &found) {
    std::string text;
    for (std::size_t i = 0; i < found.size(); ++i) {
      if (i > 0) text += found[i].rank != found[i - 1].rank ? " | " : " ";
      text += found[i].name;
    }
    return text;
  }

  // The multi-answer query of the paper's table 3 (rocl::query_all wraps
  // rocl_query_start / rocl_query_next / rocl_query_stop): unspecified
  // attributes are filled in by the directory, answers come in gid order.
  static std::vector<Peer> workers(rocl::Attributes pattern, double *micros) {
    for (const char *name : {"rank", "thread", "name"}) {
      if (!pattern.get(name)) pattern.ask(name, 64);  // not already in the pattern
    }
    const auto start = Clock::now();
    const std::vector<rocl::Found> found = rocl::query_all(pattern);
    *micros = seconds_since(start) * 1e6;
    std::vector<Peer> out;
    for (const rocl::Found &f : found) {
      out.push_back(Peer{std::atoi(f.attributes.get("rank").value_or("-1").c_str()),
                         std::atoi(f.attributes.get("thread").value_or("-1").c_str()),
                         f.attributes.get("name").value_or("?"), f.gid});
    }
    std::sort(out.begin(), out.end(), [](const Peer &a, const Peer &b) {
      return a.rank != b.rank ? a.rank < b.rank : a.thread < b.thread;
    });
    return out;
  }

  void find_others() {
    double micros = 0;
    all_ = workers(rocl::Attributes{{"type", "worker"}}, &micros);
    s_.query_us[static_cast<std::size_t>(thread_)] = micros;
    const int expected = s_.processes * s_.threads;
    bool complete = static_cast<int>(all_.size()) == expected;
    for (int k = 0; complete && k < expected; ++k) {
      const Peer &p = all_[static_cast<std::size_t>(k)];
      complete = p.rank == k / s_.threads && p.thread == k % s_.threads;
    }
    if (!complete) {
      fail(who_, "the directory knows " + std::to_string(all_.size()) + " workers (" + names(all_) +
                     "), not the " + std::to_string(expected) + " of this demo");
    }
    std::string padded = name_;
    padded.resize(std::max<std::size_t>(padded.size(), 8), ' ');
    s_.lines[static_cast<std::size_t>(thread_)] = padded + " found " + std::to_string(all_.size()) +
                                                  " workers: " + names(all_) + "  (query " +
                                                  number(micros) + " us)";
    if (rank_ != 0 || thread_ != 0) return;
    // One more question: who lives in the last process? (alone: where is
    // the last worker?)
    const std::string attr = s_.processes > 1 ? "rank" : "name";
    const std::string value = s_.processes > 1 ? std::to_string(s_.processes - 1)
                                               : worker_name(0, s_.threads - 1, s_.threads);
    const auto there = workers(rocl::Attributes{{"type", "worker"}, {attr, value}}, &micros);
    std::string answer;
    for (const Peer &p : there) answer += " " + p.name + " (gid " + hex(p.gid) + ")";
    s_.extra_line = name_ + " asked for {type=worker, " + attr + "=" + value + "}:" + answer +
                    "  (query " + number(micros) + " us)";
  }

  void ring() {
    const auto start = Clock::now();
    const Peer &right = ring_neighbour(1), &left = ring_neighbour(-1);
    const bool home = rank_ == 0 && thread_ == 0;
    if (home) {
      rocl::Buffer token = rocl::Buffer::get(sizeof(Token));
      const Token first{0, 0, 0, 0};
      std::memcpy(token.data(), &first, sizeof first);
      me_->send(right.gid, kTagToken, std::move(token));
    }
    const std::string what = "ring token from " + left.name;
    for (;;) {
      rocl::Message m = receive(left.gid, kTagToken, what);
      Token t{};
      if (m.buffer.size() != sizeof t)
        fail(who_, "a ring token of " + std::to_string(m.buffer.size()) + " bytes");
      std::memcpy(&t, m.buffer.data(), sizeof t);
      ++t.hops;
      if (left.rank != rank_) ++t.crossings;  // this hop came from another process
      if (home) {
        ++t.laps;
        if (t.last != 0) {  // back home for the last time
          s_.ring_hops = static_cast<long>(t.hops);
          s_.ring_crossings = static_cast<long>(t.crossings);
          s_.ring_laps = static_cast<long>(t.laps);
          s_.ring_seconds = seconds_since(start);
          return;  // the token's buffer returns to the pool with m
        }
        if (static_cast<long>(t.laps) + 1 >= s_.settings.ring_laps ||
            seconds_since(start) >= s_.settings.ring_seconds) {
          t.last = 1;
        }
      }
      std::memcpy(m.buffer.data(), &t, sizeof t);
      me_->send(right.gid, kTagToken, std::move(m.buffer));  // the same buffer goes on
      if (t.last != 0 && !home) return;
    }
  }

  // Round trips of `size` bytes with `peer` (which echoes), for
  // ping_seconds after a warm-up; checks that the payload came back intact.
  PingResult ping(const Peer &peer, std::size_t size) {
    rocl::Buffer buf = rocl::Buffer::get(size);
    for (std::size_t i = 0; i < size; ++i) buf.data()[i] = static_cast<std::byte>(i * 7 + size);
    const std::string what = "echo of a " + size_text(size) + " ping from " + peer.name;
    auto run = [&](long n) {
      for (long k = 0; k < n; ++k) {
        me_->send(peer.gid, kTagPing, std::move(buf));
        buf = receive(peer.gid, kTagPing, what).buffer;
      }
    };
    const double seconds = s_.settings.ping_seconds;
    auto start = Clock::now();
    for (long warm = 0; warm < 2000 && seconds_since(start) < seconds / 5; warm += 4) run(4);
    start = Clock::now();
    long n = 0;
    double elapsed = 0;
    do {
      run(16);
      n += 16;
    } while ((elapsed = seconds_since(start)) < seconds);
    bool intact = buf.size() == size;
    for (std::size_t i = 0; intact && i < size; ++i) {
      intact = buf.data()[i] == static_cast<std::byte>(i * 7 + size);
    }
    if (!intact) fail(who_, "the " + what + " came back changed");
    return PingResult{size, n, elapsed / static_cast<double>(n) / 2 * 1e6};
  }

  // Sends every message straight back, in its own buffer, until told to stop.
  void echo(const Peer &peer) {
    const std::string what = "ping from " + peer.name;
    for (;;) {
      rocl::Message m = receive(peer.gid, rocl::any_tag, what);
      if (m.tag == kTagStop) return;
      me_->send(peer.gid, m.tag, std::move(m.buffer));
    }
  }

  void ping_pong(const Peer &peer, std::vector<PingResult> *results) {
    for (std::size_t size : kPingSizes) results->push_back(ping(peer, size));
    me_->send(peer.gid, kTagStop, std::string_view());
  }

  // Rank 0's worker 0 with worker 0 of rank 1.
  void ping_between() {
    if (thread_ != 0) return;
    if (rank_ == 0) ping_pong(at(1, 0), &s_.between);
    if (rank_ == 1) echo(at(0, 0));
  }

  // Rank 0's workers 0 and 1.
  void ping_inside() {
    if (rank_ != 0) return;
    if (thread_ == 0) ping_pong(at(0, 1), &s_.inside);
    if (thread_ == 1) echo(at(0, 0));
  }

  // Batches of kRateBatch messages to the partner, then one batch from the
  // other side, until main says stop; the last message of the last batch
  // carries kTagRateLast so that the receiver knows when to stop. A worker
  // is never more than one batch ahead. Partners: the worker of the same
  // thread number in the next process (and from the previous one); alone,
  // the ring neighbours.
  void rate() {
    const bool alone = s_.processes == 1;
    const Peer &right = alone ? ring_neighbour(1) : at((rank_ + 1) % s_.processes, thread_);
    const Peer &left =
        alone ? ring_neighbour(-1) : at((rank_ + s_.processes - 1) % s_.processes, thread_);
    const auto start = Clock::now();
    long received = 0;
    bool left_done = false;
    const std::string what = "rate-phase message from " + left.name;
    auto receive_batch = [&] {
      for (int k = 0; k < kRateBatch; ++k) {
        if (receive(left.gid, rocl::any_tag, what).tag == kTagRateLast) {
          left_done = true;
        }
        ++received;
      }
    };
    for (bool last = false; !last;) {
      last = s_.stop_rate.load(std::memory_order_acquire);
      for (int k = 0; k < kRateBatch; ++k) {
        rocl::Buffer b = rocl::Buffer::get(8);
        const std::uint64_t payload = static_cast<std::uint64_t>(k);
        std::memcpy(b.data(), &payload, sizeof payload);
        me_->send(right.gid, last && k == kRateBatch - 1 ? kTagRateLast : kTagRate, std::move(b));
      }
      if (!left_done) receive_batch();
    }
    while (!left_done) receive_batch();
    s_.received[static_cast<std::size_t>(thread_)] = received;
    s_.busy[static_cast<std::size_t>(thread_)] = seconds_since(start);
  }

  Shared &s_;
  const int rank_, thread_;
  const std::string name_, who_;
  std::optional<rocl::Resource> me_;
  std::vector<Peer> all_;  // every worker of the job, by (rank, thread)
};

}  // namespace

std::string worker_name(int rank, int thread, int threads) {
  const int k = rank * threads + thread;
  return kNames[k % kNameCount] + (k >= kNameCount ? std::to_string(k / kNameCount + 1) : "");
}

Shared::Shared(const Settings &set, const Job &job)
    : settings(set),
      rank(job.rank()),
      processes(job.size()),
      threads(set.threads),
      sync(set.threads + 1),
      lines(static_cast<std::size_t>(set.threads)),
      query_us(static_cast<std::size_t>(set.threads)),
      received(static_cast<std::size_t>(set.threads)),
      busy(static_cast<std::size_t>(set.threads)) {
  phases = {Phase::find_others, Phase::ring};
  if (processes > 1) phases.push_back(Phase::ping_between);
  phases.push_back(Phase::ping_inside);
  phases.push_back(Phase::rate);
}

void run_worker(Shared &s, int thread) {
  Worker(s, thread).run();
}

}  // namespace demo
