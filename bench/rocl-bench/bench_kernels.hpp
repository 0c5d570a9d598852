// bench_kernels.hpp - the message loops that the thread benchmarks
// (thread_bench.cpp) and the process benchmarks (process_bench.cpp) share:
// the ping-pong, the windowed stream and its receiving side. Each side of a
// pair is a rocl resource; whether the peer is a thread of this process or
// a resource of another process only changes how its gid was found.
//
// The two sides of a pair talk with these tags:
//   kTagData    a measured message
//   kTagConfig  (streams) window and touch mode for the data that follows
//   kTagAck     receiver -> sender after every `window` data messages: the
//               window bounds what a fast sender can queue at the receiver
//   kTagStop    the pair is done; the receiving side returns
// Every rocl call goes through check() (check.hpp): an error ends the
// process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_runner.hpp"
#include "report.hpp"
#include "rocl/rocl.h"

namespace rocl_bench {

inline constexpr int kTagData = 1;
inline constexpr int kTagAck = 2;
inline constexpr int kTagConfig = 3;
inline constexpr int kTagStop = 4;

// Streams keep at most this many bytes of pool blocks in flight: the
// window shrinks for big messages (16 MiB messages use 32 MiB blocks).
inline constexpr std::size_t kMaxBytesInFlight = std::size_t{256} << 20;

// --window 0: a stream next to without acks, as ucx_perftest's tag_bw
// (which has none): an ack only every kNoAckBytes of blocks (65536
// messages of up to 64 bytes, about 4 ms of them here), so that a
// sender of small messages never waits for one in practice, and at least
// every kNoAckMinWindow messages (the default window: from 256 KiB on the
// same stream as with acks), so that a sender of big messages does not
// cycle through more memory than the acked stream does.
inline constexpr std::size_t kNoAckBytes = std::size_t{16} << 20;
inline constexpr int kNoAckMinWindow = 64;

// A resource registered for the benchmark ({type=rocl-bench, role, index}),
// deleted when it goes.
class BenchResource {
 public:
  BenchResource(const char *role, int index);
  BenchResource(BenchResource &&o) noexcept;
  BenchResource(const BenchResource &) = delete;
  BenchResource &operator=(const BenchResource &) = delete;
  BenchResource &operator=(BenchResource &&) = delete;
  ~BenchResource();
  rocl_gid_t gid() const noexcept { return gid_; }

  // The gid of the resource {type=rocl-bench, role, index} registered by
  // any process of the job, asking the directory until it appears; dies
  // after timeout_seconds.
  static rocl_gid_t find(const char *role, int index, double timeout_seconds);

 private:
  rocl_gid_t gid_ = ROCL_NULL_GID;
};

void send_stop(rocl_gid_t from, rocl_gid_t to);

// "  latency  8  pairs 1: median 0.157 us", flushed.
void print_point(const Row &r);

// ---- latency -------------------------------------------------------------

// Sends every received buffer straight back (bftoret + send) until kTagStop.
void echo(rocl_gid_t self, rocl_gid_t peer);

struct LatencyPoint {
  std::vector<double> one_way_us;  // one per repetition
  long round_trips = 0;            // per repetition
  long copies = 0;                 // echoes that came back in another buffer
};

// Ping-pong of `size` bytes with an echo(): warm-up and calibration
// (plan_iterations), then o.reps timed repetitions; one-way = round trip / 2.
LatencyPoint ping(rocl_gid_t self, rocl_gid_t peer, std::size_t size, const BenchOptions &o);

// ---- streams (bandwidth, rate) ---------------------------------------------

struct StreamCount {
  long messages = 0;
  double seconds = 0;
};

// The pool block a message of `size` bytes uses (a power of two >= 256).
std::size_t block_bytes(std::size_t size);

// `window` (for 0 as many as kNoAckBytes of blocks), or fewer so that at most
// kMaxBytesInFlight of blocks are in flight.
int window_for(std::size_t size, int window);

// "window 64 (8 for 16M, to keep <= 256 MiB of blocks in flight)" for
// the streams of `sizes`; window 0 says it means next to no acks.
std::string describe_window(int window, const std::vector<std::size_t> &sizes);

// Tells the drain() at `to` the window and touch mode of the data that follows.
void send_config(rocl_gid_t from, rocl_gid_t to, int window, bool touch);

// Sends windows of `window` messages of `size` bytes (bfget + bftoret +
// send), waiting for the ack after each, until `seconds` have passed (at
// least one window). The payload is written only when touching.
StreamCount stream(rocl_gid_t self, rocl_gid_t peer, std::size_t size, int window, bool touch,
                   double seconds);

// Million messages per second of streams that ran at once: all their
// messages over the longest one's time.
double total_rate(const std::vector<StreamCount> &counts);

// The receiving side of streams: recv + bfret (reading the payload when
// touching), an ack after every window, until kTagStop.
void drain(rocl_gid_t self, rocl_gid_t peer);

// Seconds a watchdog allows for `points` measured points.
double time_limit(const BenchOptions &o, std::size_t points);

}  // namespace rocl_bench
