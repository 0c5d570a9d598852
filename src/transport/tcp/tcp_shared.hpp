// tcp_shared.hpp - what every part of the TCP transport reads or counts
// (Shared: the environment, the options, the wire limits, the counters,
// the stop flag, the message id counter and the base's services) and how a
// thread knows that it drives the transport (DrivingScope).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "transport/tcp/tcp_transport.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::tcp::detail {

class TcpTransportImpl;

// "0x" and 16 hex digits, for sentences.
std::string hex(std::uint64_t v);

// The transport's counters (tcp::Stats), bumped by every part, any thread.
struct TcpCounters {
  std::atomic<std::uint64_t> connects{0}, refused{0}, dropped{0}, failed_sends{0};
  std::atomic<std::uint64_t> paused_reads{0}, send_waits{0}, peak_queued{0};
  std::atomic<std::uint64_t> thread_events{0}, caller_events{0};
  std::atomic<std::uint64_t> rndv_sends{0}, rndv_waits{0}, rndv_eager{0}, peak_parked{0};
  std::atomic<std::uint64_t> rndv_stubs{0}, rndv_pulls{0}, rndv_discards{0};
  std::atomic<std::uint64_t> congestion_refused{0};

  // Raises the high-water mark `peak` to v if v is higher.
  static void raise(std::atomic<std::uint64_t> &peak, std::uint64_t v) {
    std::uint64_t cur = peak.load(std::memory_order_relaxed);
    while (v > cur && !peak.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  // The counters as Stats (open_connections and unknown_destination are
  // the caller's to fill: they are not counted here).
  tcp::Stats stats() const noexcept;
};

// The transport whose receive lock the calling thread holds (nullptr: none),
// so that send() and progress() called from inside MessageSink::deliver know
// they run on a driver: progress() must not try-lock a mutex its thread owns,
// and send() must not wait for room, as that would stall its own receiving.
inline thread_local const void *t_driving = nullptr;

class DrivingScope {
 public:
  explicit DrivingScope(const void *transport) : saved_(t_driving) { t_driving = transport; }
  ~DrivingScope() { t_driving = saved_; }
  DrivingScope(const DrivingScope &) = delete;
  DrivingScope &operator=(const DrivingScope &) = delete;

 private:
  const void *saved_;
};

// What the parts of one transport share. Made first and destroyed last;
// the parts hold it by reference.
struct Shared {
  Shared(TcpTransportImpl &t, const TransportEnv &e, const tcp::Options &o);

  TcpTransportImpl &transport;  // the base's services: log, finish_sent, hand_over
  const TransportEnv &env;
  tcp::Options options;  // defaults filled in for the 0s
  wire::Limits limits{};
  TcpCounters counters;
  std::atomic<bool> stop{false};          // the transport is closing: waits for room give up
  std::atomic<std::uint64_t> next_id{1};  // message ids and rendezvous cookies

  // Whether the calling thread drives this transport (inside deliver).
  bool drives_here() const noexcept { return t_driving == &transport; }
  std::uint64_t next_message_id() noexcept {
    return next_id.fetch_add(1, std::memory_order_relaxed);
  }
  // Whether waiting for the pool can help: its cap holds a block for len.
  bool can_ever_fit(std::uint64_t len) const {
    return env.pool != nullptr && env.pool->can_ever_hold(static_cast<std::size_t>(len));
  }
  // One line on the transport's log.
  void log(const std::string &line) const noexcept;
  // A peer broke the protocol or a connection cannot go on: logs `what`
  // (which names the peer and what was wrong), counts the connection as
  // dropped and returns false, for the caller to drop it.
  bool protocol_error(const std::string &what);
  // Transport::finish_sent: the block's bytes are out (ok) or failed.
  void finish_sent(BlockHeader *block, bool ok) const noexcept;
};

}  // namespace rocl::impl::tcp::detail
