// thread_bench.cpp - see thread_bench.hpp.
//
// The two threads of a pair talk with these tags:
//   kTagData    a measured message
//   kTagConfig  (streams) window and touch mode for the data that follows
//   kTagAck     receiver -> sender after every `window` data messages: the
//               window bounds what a fast sender can queue at the receiver
//   kTagStop    the pair is done; the receiving side returns
#include "thread_bench.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "check.hpp"
#include "rocl/rocl.h"
#include "threads.hpp"
#include "timing.hpp"

namespace rocl_bench {
namespace {

constexpr int kTagData = 1;
constexpr int kTagAck = 2;
constexpr int kTagConfig = 3;
constexpr int kTagStop = 4;

// Latency iterations: at most this many round trips per repetition, and at
// most kMaxVolume bytes' worth: in-process a big message costs what a small
// one does (no byte moves), but other transports will move them.
constexpr long kMaxRoundTrips = 5'000'000;
constexpr double kMaxVolume = 64.0 * (1ull << 30);

// Streams keep at most this many bytes of pool blocks in flight: the
// window shrinks for big messages (16 MiB messages use 32 MiB blocks).
constexpr std::size_t kMaxBytesInFlight = std::size_t{256} << 20;

// The receivers' sums of touched payloads end here, so that the reads
// cannot be optimised away.
std::atomic<std::uint64_t> g_sink{0};

// A resource registered for the benchmark, deleted when it goes.
class BenchResource {
 public:
  BenchResource(const char *role, int index) {
    rocl_attrl_t *attrs = rocl_new_attrl(0);
    if (attrs == nullptr) die("rocl_new_attrl: out of memory");
    const std::string number = std::to_string(index);
    add(attrs, "type", "rocl-bench");
    add(attrs, "role", role);
    add(attrs, "index", number.c_str());
    gid_ = static_cast<rocl_gid_t>(check(rocl_register(attrs), "rocl_register"));
    rocl_kill_attrl(attrs);
  }
  BenchResource(BenchResource &&o) noexcept : gid_(std::exchange(o.gid_, ROCL_NULL_GID)) {}
  BenchResource(const BenchResource &) = delete;
  BenchResource &operator=(const BenchResource &) = delete;
  BenchResource &operator=(BenchResource &&) = delete;
  ~BenchResource() {
    if (gid_ != ROCL_NULL_GID) check(rocl_delete(gid_), "rocl_delete");
  }
  rocl_gid_t gid() const noexcept { return gid_; }

 private:
  static void add(rocl_attrl_t *attrs, const char *name, const char *value) {
    check(rocl_add_attr(attrs, name, value, static_cast<int>(std::strlen(value))), "rocl_add_attr");
  }
  rocl_gid_t gid_ = ROCL_NULL_GID;
};

void send_stop(rocl_gid_t from, rocl_gid_t to) {
  check(rocl_send(from, to, kTagStop, nullptr, 0), "rocl_send (stop)");
}

void print_point(const Row &r) {
  std::printf("  %-16s %6s  pairs %d: median %s %s\n", r.benchmark.c_str(),
              format_size(r.size_bytes).c_str(), r.pairs, format_value(r.median).c_str(),
              r.unit.c_str());
  std::fflush(stdout);
}

// ---- latency -----------------------------------------------------------------

// Sends the received buffer straight back until kTagStop.
void echo(rocl_gid_t self, rocl_gid_t peer) {
  for (;;) {
    void *p = nullptr;
    int tag = 0;
    std::size_t len = 0;
    check(rocl_recv(self, peer, ROCL_ANY_TAG, &p, nullptr, &tag, &len, -1), "rocl_recv");
    if (tag == kTagStop) {
      check(rocl_bfret(p), "rocl_bfret");
      return;
    }
    check(rocl_bftoret(p), "rocl_bftoret");
    check(rocl_send(self, peer, tag, p, len), "rocl_send");
  }
}

struct LatencyPoint {
  std::vector<double> one_way_us;  // one per repetition
  long round_trips = 0;            // per repetition
  long copies = 0;                 // echoes that came back in another buffer
};

LatencyPoint ping(rocl_gid_t self, rocl_gid_t peer, std::size_t size, const BenchOptions &o) {
  LatencyPoint point;
  void *buf = check_buffer(rocl_bfget(size), "rocl_bfget");
  std::size_t len = size;
  auto round_trips = [&](long n) {
    const auto start = Clock::now();
    for (long i = 0; i < n; ++i) {
      void *sent = buf;
      check(rocl_bftoret(buf), "rocl_bftoret");
      check(rocl_send(self, peer, kTagData, buf, size), "rocl_send");
      check(rocl_recv(self, peer, kTagData, &buf, nullptr, nullptr, &len, -1), "rocl_recv");
      if (buf != sent) ++point.copies;
    }
    return seconds_since(start);
  };
  const long cap =
      std::clamp(static_cast<long>(kMaxVolume / static_cast<double>(size)), 1000L, kMaxRoundTrips);
  point.round_trips = plan_iterations(round_trips, o.seconds, cap);
  point.copies = 0;  // count the measured repetitions only
  for (int rep = 0; rep < o.reps; ++rep) {
    const double t = round_trips(point.round_trips);
    point.one_way_us.push_back(t / static_cast<double>(point.round_trips) / 2 * 1e6);
  }
  if (len != size) die("latency: sent %zu bytes, %zu came back", size, len);
  check(rocl_bfret(buf), "rocl_bfret");
  return point;
}

// ---- streams (bandwidth, rate) -------------------------------------------------

struct StreamConfig {
  std::uint32_t window;
  std::uint32_t touch;
};

struct StreamCount {
  long messages = 0;
  double seconds = 0;
};

std::size_t block_bytes(std::size_t size) {
  std::size_t block = 256;
  while (block < size + ROCL_BUFFER_OVERHEAD) block *= 2;
  return block;
}

int window_for(std::size_t size, int window) {
  const std::size_t fit = std::max<std::size_t>(1, kMaxBytesInFlight / block_bytes(size));
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(window), fit));
}

void send_config(rocl_gid_t from, rocl_gid_t to, int window, bool touch) {
  StreamConfig config{static_cast<std::uint32_t>(window), touch ? 1u : 0u};
  check(rocl_send(from, to, kTagConfig, &config, sizeof config), "rocl_send (config)");
}

// Sends windows of `window` messages of `size` bytes, waiting for the ack
// after each, until `seconds` have passed (at least one window). The
// payload is written only when touching.
StreamCount stream(rocl_gid_t self, rocl_gid_t peer, std::size_t size, int window, bool touch,
                   double seconds) {
  StreamCount count;
  unsigned char pattern = 0;
  const auto start = Clock::now();
  do {
    for (int i = 0; i < window; ++i) {
      void *buf = check_buffer(rocl_bfget(size), "rocl_bfget");
      if (touch) std::memset(buf, ++pattern, size);
      check(rocl_bftoret(buf), "rocl_bftoret");
      check(rocl_send(self, peer, kTagData, buf, size), "rocl_send");
    }
    count.messages += window;
    void *ack = nullptr;
    check(rocl_recv(self, peer, kTagAck, &ack, nullptr, nullptr, nullptr, -1), "rocl_recv (ack)");
    check(rocl_bfret(ack), "rocl_bfret");
    count.seconds = seconds_since(start);
  } while (count.seconds < seconds);
  return count;
}

std::uint64_t read_all(const void *p, std::size_t len) {
  const auto *bytes = static_cast<const unsigned char *>(p);
  std::uint64_t sum = 0;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    sum += word;
  }
  for (; i < len; ++i) sum += bytes[i];
  return sum;
}

// The receiving side of streams: recv + bfret (reading the payload when
// touching), an ack after every window, until kTagStop.
void drain(rocl_gid_t self, rocl_gid_t peer) {
  StreamConfig config{1, 0};
  std::uint32_t unacked = 0;
  std::uint64_t sum = 0;
  for (;;) {
    void *p = nullptr;
    int tag = 0;
    std::size_t len = 0;
    check(rocl_recv(self, peer, ROCL_ANY_TAG, &p, nullptr, &tag, &len, -1), "rocl_recv");
    if (tag == kTagData && config.touch != 0) sum += read_all(p, len);
    if (tag == kTagConfig) {
      if (len != sizeof config) die("stream: a config message of %zu bytes", len);
      std::memcpy(&config, p, sizeof config);
      unacked = 0;
    }
    check(rocl_bfret(p), "rocl_bfret");
    if (tag == kTagStop) break;
    if (tag == kTagData && ++unacked == config.window) {
      unacked = 0;
      check(rocl_send(self, peer, kTagAck, nullptr, 0), "rocl_send (ack)");
    }
  }
  g_sink.fetch_add(sum, std::memory_order_relaxed);
}

// Seconds the watchdog of run_threads allows for `points` measured points.
double time_limit(const BenchOptions &o, std::size_t points) {
  return 60 + 20 * o.seconds * (o.reps + 1) * static_cast<double>(points);
}

}  // namespace

std::vector<Row> run_latency(const BenchOptions &o) {
  BenchResource pinger("ping", 0);
  BenchResource echoer("echo", 0);
  std::printf("  %s; warm-up and calibration, then %d rep(s) of ~%.2g s per size\n",
              o.placement.describe_pair("ping", "echo").c_str(), o.reps, o.seconds);
  std::fflush(stdout);
  std::vector<Row> rows;
  long copies = 0;
  auto ping_all = [&] {
    // The threads have just started (cold caches, idle cpus clocked down):
    // a short untimed ping-pong first, so that the first size is not the
    // one that pays for it.
    BenchOptions warm_up = o;
    warm_up.reps = 1;
    warm_up.seconds = std::min(o.seconds, 0.05);
    ping(pinger.gid(), echoer.gid(), 8, warm_up);
    for (std::size_t size : o.sizes) {
      LatencyPoint p = ping(pinger.gid(), echoer.gid(), size, o);
      copies += p.copies;
      rows.push_back(summarize("latency", size, 1, std::move(p.one_way_us), "us"));
      print_point(rows.back());
    }
    send_stop(pinger.gid(), echoer.gid());
  };
  run_threads("latency", {ping_all, [&] { echo(echoer.gid(), pinger.gid()); }},
              {o.placement.cpu_for(0), o.placement.cpu_for(1)}, time_limit(o, o.sizes.size()));
  if (copies == 0) {
    std::printf("  zero-copy check: every echo came back in the buffer that was sent\n");
  } else {
    std::printf("  zero-copy check FAILED: %ld echoes came back in another buffer (copied)\n",
                copies);
  }
  return rows;
}

std::vector<Row> run_bandwidth(const BenchOptions &o) {
  BenchResource sender("sender", 0);
  BenchResource receiver("receiver", 0);
  std::printf("  %s; window %d", o.placement.describe_pair("sender", "receiver").c_str(), o.window);
  for (std::size_t size : o.sizes) {
    if (window_for(size, o.window) < o.window) {
      std::printf(" (%d for %s, to keep <= %zu MiB of blocks in flight)",
                  window_for(size, o.window), format_size(size).c_str(), kMaxBytesInFlight >> 20);
      break;
    }
  }
  std::printf("; 1 MB = 1e6 B\n");
  std::fflush(stdout);

  std::vector<bool> modes{false};
  if (o.touch) modes.push_back(true);
  std::vector<Row> rows;
  auto send_all = [&] {
    for (bool touch : modes) {
      const char *name = touch ? "bandwidth-touch" : "bandwidth";
      for (std::size_t size : o.sizes) {
        const int window = window_for(size, o.window);
        send_config(sender.gid(), receiver.gid(), window, touch);
        stream(sender.gid(), receiver.gid(), size, window, touch, o.seconds / 10);  // warm-up
        std::vector<double> megabytes, messages;
        for (int rep = 0; rep < o.reps; ++rep) {
          StreamCount c = stream(sender.gid(), receiver.gid(), size, window, touch, o.seconds);
          const double per_second = static_cast<double>(c.messages) / c.seconds;
          megabytes.push_back(per_second * static_cast<double>(size) / 1e6);
          messages.push_back(per_second);
        }
        rows.push_back(summarize(name, size, 1, std::move(megabytes), "MB/s"));
        print_point(rows.back());
        rows.push_back(summarize(name, size, 1, std::move(messages), "msg/s"));
      }
    }
    send_stop(sender.gid(), receiver.gid());
  };
  run_threads("bandwidth", {send_all, [&] { drain(receiver.gid(), sender.gid()); }},
              {o.placement.cpu_for(0), o.placement.cpu_for(1)},
              time_limit(o, o.sizes.size() * modes.size()));
  return rows;
}

namespace {

void describe_rate_placement(const BenchOptions &o) {
  const int most = o.pairs.empty() ? 1 : *std::max_element(o.pairs.begin(), o.pairs.end());
  std::string text;
  for (int k = 0; k < most && o.placement.cpu_for(0) >= 0; ++k) {
    if (k > 0) text += ", ";
    text += std::to_string(k) + ": cpu " + std::to_string(o.placement.cpu_for(2 * k)) + "->" +
            std::to_string(o.placement.cpu_for(2 * k + 1));
  }
  std::printf(
      "  window %d; %s\n", o.window,
      text.empty() ? "threads not pinned" : ("pairs pinned (sender->receiver) " + text).c_str());
  if (2 * static_cast<std::size_t>(most) > o.placement.cpus.size()) {
    std::printf(
        "  note: %d pairs are %d threads on %zu cpus: threads take turns, and a waiting "
        "receiver sleeps after ROCL_SPIN_US\n",
        most, 2 * most, o.placement.cpus.size());
  }
  std::fflush(stdout);
}

// One repetition with `pairs` pairs: total messages per second over all.
double rate_once(const std::vector<BenchResource> &senders,
                 const std::vector<BenchResource> &receivers, const BenchOptions &o) {
  const std::size_t pairs = senders.size();
  const int window = window_for(8, o.window);
  std::barrier start(static_cast<std::ptrdiff_t>(pairs));
  std::vector<StreamCount> counts(pairs);
  std::vector<std::function<void()>> tasks;
  std::vector<int> cpus;
  for (std::size_t k = 0; k < pairs; ++k) {
    const rocl_gid_t s = senders[k].gid();
    const rocl_gid_t r = receivers[k].gid();
    tasks.emplace_back([&, k, s, r] {
      send_config(s, r, window, false);
      stream(s, r, 8, window, false, 0);  // warm-up: one window
      start.arrive_and_wait();
      counts[k] = stream(s, r, 8, window, false, o.seconds);
      send_stop(s, r);
    });
    tasks.emplace_back([s, r] { drain(r, s); });
    cpus.push_back(o.placement.cpu_for(static_cast<int>(2 * k)));
    cpus.push_back(o.placement.cpu_for(static_cast<int>(2 * k + 1)));
  }
  run_threads("rate", tasks, cpus, time_limit(o, 1));
  long total = 0;
  double longest = 0;
  for (const auto &c : counts) {
    total += c.messages;
    longest = std::max(longest, c.seconds);
  }
  return static_cast<double>(total) / longest / 1e6;
}

}  // namespace

std::vector<Row> run_rate(const BenchOptions &o) {
  describe_rate_placement(o);
  std::vector<Row> rows;
  for (int pairs : o.pairs) {
    std::vector<BenchResource> senders, receivers;
    for (int k = 0; k < pairs; ++k) {
      senders.emplace_back("sender", k);
      receivers.emplace_back("receiver", k);
    }
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(o.reps));
    for (int rep = 0; rep < o.reps; ++rep) samples.push_back(rate_once(senders, receivers, o));
    rows.push_back(summarize("rate", 8, pairs, std::move(samples), "M msg/s"));
    print_point(rows.back());
  }
  return rows;
}

}  // namespace rocl_bench
