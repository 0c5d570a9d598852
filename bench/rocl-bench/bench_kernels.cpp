// bench_kernels.cpp - see bench_kernels.hpp.
#include "bench_kernels.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "check.hpp"
#include "timing.hpp"

namespace rocl_bench {
namespace {

// Latency iterations: at most this many round trips per repetition, and at
// most kMaxVolume bytes' worth: in-process a big message costs what a small
// one does (no byte moves), but other transports move them.
constexpr long kMaxRoundTrips = 5'000'000;
constexpr double kMaxVolume = 64.0 * (1ull << 30);

// The receivers' sums of touched payloads end here, so that the reads
// cannot be optimised away.
std::atomic<std::uint64_t> g_sink{0};

struct StreamConfig {
  std::uint32_t window;
  std::uint32_t touch;
};

void add_attr(rocl_attrl_t *attrs, const char *name, const char *value) {
  check(rocl_add_attr(attrs, name, value, static_cast<int>(std::strlen(value))), "rocl_add_attr");
}

// {type=rocl-bench, role, index}, every value specified.
rocl_attrl_t *bench_attrs(const char *role, int index) {
  rocl_attrl_t *attrs = rocl_new_attrl(0);
  if (attrs == nullptr) die("rocl_new_attrl: out of memory");
  const std::string number = std::to_string(index);
  add_attr(attrs, "type", "rocl-bench");
  add_attr(attrs, "role", role);
  add_attr(attrs, "index", number.c_str());
  return attrs;
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

}  // namespace

BenchResource::BenchResource(const char *role, int index) {
  rocl_attrl_t *attrs = bench_attrs(role, index);
  gid_ = static_cast<rocl_gid_t>(check(rocl_register(attrs), "rocl_register"));
  rocl_kill_attrl(attrs);
}

BenchResource::BenchResource(BenchResource &&o) noexcept
    : gid_(std::exchange(o.gid_, ROCL_NULL_GID)) {}

BenchResource::~BenchResource() {
  if (gid_ != ROCL_NULL_GID) check(rocl_delete(gid_), "rocl_delete");
}

rocl_gid_t BenchResource::find(const char *role, int index, double timeout_seconds) {
  const auto start = Clock::now();
  for (;;) {
    rocl_attrl_t *attrs = bench_attrs(role, index);
    rocl_gid_t gid = ROCL_NULL_GID;
    const int rc = rocl_query(&gid, attrs);
    rocl_kill_attrl(attrs);
    if (rc == ROCL_OK) return gid;
    if (rc != ROCL_ENOTFOUND) die_rocl("rocl_query", rc);
    if (seconds_since(start) > timeout_seconds) {
      die("no resource {type=rocl-bench, role=%s, index=%d} registered within %.0f s (did the "
          "other process start?)",
          role, index, timeout_seconds);
    }
    usleep(2000);
  }
}

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

std::size_t block_bytes(std::size_t size) {
  std::size_t block = 256;
  while (block < size + ROCL_BUFFER_OVERHEAD) block *= 2;
  return block;
}

namespace {
std::size_t wanted_window(std::size_t size, int window) {
  if (window != 0) return static_cast<std::size_t>(window);
  return std::max<std::size_t>(kNoAckMinWindow, kNoAckBytes / block_bytes(size));
}
}  // namespace

int window_for(std::size_t size, int window) {
  const std::size_t fit = std::max<std::size_t>(1, kMaxBytesInFlight / block_bytes(size));
  return static_cast<int>(std::min<std::size_t>(wanted_window(size, window), fit));
}

std::string describe_window(int window, const std::vector<std::size_t> &sizes) {
  if (window == 0) {
    std::string text = "window 0: next to no acks, one every " + std::to_string(kNoAckBytes >> 20) +
                       " MiB of blocks (";
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      text += (i != 0 ? ", " : "") + std::to_string(window_for(sizes[i], 0)) + " for " +
              format_size(sizes[i]);
    }
    return text + ")";
  }
  std::string text = "window " + std::to_string(window);
  for (std::size_t size : sizes) {
    if (window_for(size, window) < window) {
      text += " (" + std::to_string(window_for(size, window)) + " for " + format_size(size) +
              ", to keep <= " + std::to_string(kMaxBytesInFlight >> 20) +
              " MiB of blocks in flight)";
      break;
    }
  }
  return text;
}

void send_config(rocl_gid_t from, rocl_gid_t to, int window, bool touch) {
  StreamConfig config{static_cast<std::uint32_t>(window), touch ? 1u : 0u};
  check(rocl_send(from, to, kTagConfig, &config, sizeof config), "rocl_send (config)");
}

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

double total_rate(const std::vector<StreamCount> &counts) {
  long total = 0;
  double longest = 0;
  for (const auto &c : counts) {
    total += c.messages;
    longest = std::max(longest, c.seconds);
  }
  return static_cast<double>(total) / longest / 1e6;
}

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

double time_limit(const BenchOptions &o, std::size_t points) {
  return 60 + 20 * o.seconds * (o.reps + 1) * static_cast<double>(points);
}

}  // namespace rocl_bench
