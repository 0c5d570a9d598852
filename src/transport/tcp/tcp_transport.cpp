// tcp_transport.cpp - the TCP transport object (design: tcp_transport.hpp;
// its parts: tcp_internal.hpp): making its parts, send() over them,
// teardown (linger), the counters, the factories and the option rows.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "os/host.hpp"
#include "status/status.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_linger.hpp"

namespace rocl::impl {
namespace tcp::detail {

Shared::Shared(TcpTransportImpl &t, const TransportEnv &e, const tcp::Options &o)
    : transport(t), env(e), options(o) {
  if (options.max_queued_bytes == 0) options.max_queued_bytes = tcp::kDefaultMaxQueuedBytes;
  if (options.max_parked_bytes == 0) options.max_parked_bytes = tcp::kDefaultMaxParkedBytes;
  if (options.turn_bytes == 0) options.turn_bytes = tcp::kDefaultTurnBytes;
}

bool Shared::protocol_error(const std::string &what) {
  counters.dropped.fetch_add(1);
  log(what);
  return false;
}

std::string hex(std::uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%016" PRIx64, v);
  return s;
}

tcp::Stats TcpCounters::stats() const noexcept {
  tcp::Stats s;
  s.connects = connects.load();
  s.refused = refused.load();
  s.dropped_connections = dropped.load();
  s.failed_sends = failed_sends.load();
  s.paused_reads = paused_reads.load();
  s.send_waits = send_waits.load();
  s.peak_queued_bytes = peak_queued.load();
  s.thread_events = thread_events.load();
  s.caller_events = caller_events.load();
  s.rendezvous_sends = rndv_sends.load();
  s.rendezvous_waits = rndv_waits.load();
  s.rendezvous_eager = rndv_eager.load();
  s.peak_parked = peak_parked.load();
  s.rendezvous_stubs = rndv_stubs.load();
  s.rendezvous_pulls = rndv_pulls.load();
  s.rendezvous_discards = rndv_discards.load();
  s.congestion_refused = congestion_refused.load();
  return s;
}

TcpTransportImpl::TcpTransportImpl(const TransportEnv &env, tcp::LogFn log,
                                   const tcp::Options &options)
    : TcpTransport(env, "tcp", std::move(log)),
      shared_(*this, env_, options),
      handshake_(shared_, table_),
      connector_(shared_, table_, poller_, handshake_),
      outbox_(shared_, poller_),
      paused_(shared_, poller_),
      rndv_send_(shared_, outbox_),
      rndv_receive_(shared_, table_, outbox_, driver_, poller_, paused_),
      reader_(shared_, handshake_, paused_, rndv_send_, rndv_receive_),
      closer_(poller_, outbox_, paused_, reader_, rndv_send_, rndv_receive_),
      driver_(shared_, table_, poller_, connector_, outbox_, paused_, reader_, closer_) {
  TransportCaps caps;
  // Lent messages take the same path: their data is written straight from
  // the application's memory (eagerly, or once the receiver asks for it),
  // and the block is finished after the write, as any other.
  caps.takes_lent_memory = true;
  caps.makes_stubs = true;
  caps.pulls_into_memory = true;
  // An epoll_wait per call: polled once every 32 rounds next to shm.
  caps.progress_stride = 32;
  set_caps(caps);
}

int TcpTransportImpl::start() {
  if (const int rc = connector_.listen(); rc != ROCL_OK) return rc;
  driver_.start();
  return ROCL_OK;
}

TcpTransportImpl::~TcpTransportImpl() {
  const auto linger = std::chrono::milliseconds(env_.linger_ms);
  const auto deadline = Clock::now() + linger;
  if (driver_.running()) {
    // The thread drives meanwhile: it writes the queues on EPOLLOUT, queues
    // a parked message's data when its reply comes, and drops a connection
    // whose peer went away.
    for (unsigned round = 0;
         linger.count() > 0 && holds_accepted(table_, true) && Clock::now() < deadline; ++round) {
      back_off(round);
    }
    driver_.stop();
  }
  report_dropped(table_, shared_);
  if (linger.count() > 0) {
    const auto floor = std::min(linger, std::chrono::milliseconds(tcp::kCloseMs));
    close_gracefully(table_, std::max(deadline, Clock::now() + floor));
  }
  table_.clear([&](Conn &c) { closer_.close(c, false); });
  paused_.clear();
}

// Teardown's first step (transport.hpp): until the queues are written.
void TcpTransportImpl::flush_impl(Clock::time_point deadline) noexcept {
  if (!driver_.running()) return;
  // The thread writes the queues on EPOLLOUT (callers may be gone).
  for (unsigned round = 0; holds_accepted(table_, false) && Clock::now() < deadline; ++round) {
    back_off(round);
  }
}

tcp::Stats TcpTransportImpl::stats() const noexcept {
  tcp::Stats s = shared_.counters.stats();
  s.open_connections = table_.count();
  s.unknown_destination = refused_arrivals();
  return s;
}

bool TcpTransportImpl::reaches_impl(std::string_view address) const noexcept {
  if (address.substr(0, 4) != "tcp:") return false;
  const auto at = address.find('@');
  return at == std::string_view::npos || address.substr(at + 1) == os::host_id();
}

int TcpTransportImpl::send_impl(rocl_gid_t peer, std::string_view peer_address,
                                rocl_gid_t destination, Message *msg) noexcept {
  if (msg == nullptr) return fail(ROCL_EINVAL, "tcp: send of a null message");
  if (msg->length > shared_.limits.max_message_bytes) {
    return fail(ROCL_ETOOBIG, "tcp: message of %" PRIu64 " bytes exceeds the limit %" PRIu64,
                static_cast<std::uint64_t>(msg->length), shared_.limits.max_message_bytes);
  }
  const bool large = takes_rendezvous(*msg);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Conn> c = table_.find_peer(peer_address);
    if (c == nullptr) {
      try {
        c = connector_.connect(peer, peer_address);
      } catch (...) {
        return fail(ROCL_ENOMEM, "tcp: out of memory connecting to %.*s",
                    static_cast<int>(peer_address.size()), peer_address.data());
      }
      if (c == nullptr) return ROCL_EPEER;  // connect() said why
    }
    std::unique_lock lock(c->mu);
    if (c->dead) continue;             // reconnect once
    if (c->peer == 0) c->peer = peer;  // an accepted connection learns it here
    if (large) {
      // Rendezvous, unless the parking is full and waiting for it is not
      // allowed here (inside deliver on a driver, or by the options).
      if (rndv_send_.has_parking(*c, msg->length) ||
          (!shared_.drives_here() && !shared_.options.eager_when_parking_full)) {
        return rndv_send_.send(*c, lock, destination, msg, peer, peer_address);
      }
      shared_.counters.rndv_eager.fetch_add(1, std::memory_order_relaxed);
    }
    const OutMsg out = outbox_.frames_of(msg, destination);
    if (!outbox_.wait_for_room(*c, lock, out.cost)) {
      return fail(ROCL_EPEER,
                  "tcp: peer %.*s (context 0x%llx) went away while send() waited for room in "
                  "its queue",
                  static_cast<int>(peer_address.size()), peer_address.data(),
                  static_cast<unsigned long long>(peer));
    }
    return outbox_.enqueue(*c, out);
  }
  return fail(ROCL_EPEER, "tcp: peer %.*s (context 0x%llx) is gone",
              static_cast<int>(peer_address.size()), peer_address.data(),
              static_cast<unsigned long long>(peer));
}

// Whether msg goes by rendezvous: from env.rendezvous_threshold, and a
// message from the application's memory (lent, or the core's copy of it:
// msg->rendezvous) already from Options::rendezvous_threshold. Its receive
// most likely has memory of its own (MPI's do), which rendezvous lets read
// the socket straight into; a pool buffer is most likely received as a
// block, which eager fills as fast without the request's round trip
// (rocl-bench latency --transport tcp and compare's rocl-mpi-tcp latency
// rows at 1 MiB, with the thresholds moved, show it). (A request's 16-byte
// body must fit within total_length: docs/protocol.md.)
bool TcpTransportImpl::takes_rendezvous(const Message &msg) const {
  if (env_.rendezvous_threshold == 0) return false;
  std::size_t threshold = env_.rendezvous_threshold;
  if (shared_.options.rendezvous_threshold != 0 && (is_lent(&msg) || msg.rendezvous)) {
    threshold = std::min(threshold, shared_.options.rendezvous_threshold);
  }
  return msg.length >= std::max(threshold, sizeof(wire::RendezvousBody));
}

}  // namespace tcp::detail

std::unique_ptr<TcpTransport> make_tcp_transport_with_log(const TransportEnv &env, tcp::LogFn log,
                                                          const tcp::Options &options) {
  auto t = std::make_unique<tcp::detail::TcpTransportImpl>(env, std::move(log), options);
  if (t->start() != ROCL_OK) return nullptr;
  return t;
}

std::unique_ptr<Transport> make_tcp_transport(const TransportEnv &env) {
  return make_tcp_transport_with_log(env, nullptr,
                                     read_options(env, tcp::option_rows(), tcp::options_from));
}

namespace tcp {
namespace {
constexpr OptionRow kOptions[] = {
    {"ROCL_TCP_RNDV_THRESHOLD", "1M",
     "Over tcp, messages from the application's memory (rocl_isendx_lend, as MPI sends; or "
     "copied from it, ROCL_RNDV_COPY_THRESHOLD) of at least this many bytes (or "
     "ROCL_RNDV_THRESHOLD, if lower) go by rendezvous: the receiver asks for the payload when "
     "a receive matches and reads it from the socket straight into the receive's memory. Pool "
     "buffers, most likely received as buffers, go eagerly up to ROCL_RNDV_THRESHOLD. "
     "Rendezvous pays where the receive has memory of its own, and below about 1 MiB the "
     "request's round trip costs more than it saves (compare's rocl-mpi-tcp and rocl-tcp "
     "rows with another value show both). ROCL_RNDV_THRESHOLD=0 turns it off too (0: "
     "ROCL_RNDV_THRESHOLD alone).",
     OptionType::kSize},
    {"ROCL_TCP_CONGESTION", "cubic,reno",
     "TCP congestion control of rocl's connections, the first of this comma-separated list "
     "the kernel accepts (the TCP_CONGESTION socket option; empty: the system's, "
     "net.ipv4.tcp_congestion_control). BBR, the default of some systems, paces a connection "
     "at its estimate of the path's bandwidth, which the bursts of a ping-pong never let it "
     "measure (rocl-bench latency --transport tcp from 1 MiB with this option empty shows the "
     "cost). An unprivileged process may set only what "
     "net.ipv4.tcp_allowed_congestion_control lists (reno always); if every name is refused, "
     "connections keep the system's, said once on stderr.",
     OptionType::kString},
    {"ROCL_TCP_USER_TIMEOUT_MS", "30000",
     "How long bytes sent over a connection may stay unacknowledged by the peer's host before "
     "the connection is dropped (TCP_USER_TIMEOUT; also the longest a connect tries): a peer "
     "host that became unreachable (its network down, its cable pulled) then fails the pair's "
     "sends with ROCL_EPEER within about twice this bound (a waiting send is tried once more "
     "over a new connection), and a striped message's fragments go over its other rails, "
     "instead of the kernel retrying for about 15 minutes. What the broken connection held "
     "is lost. A peer that is reachable but stops reading is not dropped (its host keeps "
     "answering). 0: the system's.",
     OptionType::kUint},
    {"ROCL_TCP_BIND", "loopback",
     "Where tcp listens: an IPv4 address, a network interface (its first IPv4 address), "
     "'auto' (the first interface that is up and not loopback, loopback if there is none) or "
     "'loopback' (127.0.0.1: processes of this host only). A job on several hosts needs a "
     "network address: roclrun --hosts sets 'auto' unless this is set. A loopback address "
     "carries the host's id, so that no other host takes it for its own loopback.",
     OptionType::kString},
};
}  // namespace

std::span<const OptionRow> option_rows() noexcept {
  return kOptions;
}

Options options_from(const OptionValues &values) {
  Options o;
  o.rendezvous_threshold = values.size("ROCL_TCP_RNDV_THRESHOLD");
  o.congestion = split_list(values.text("ROCL_TCP_CONGESTION"));
  o.bind_address = values.text("ROCL_TCP_BIND");
  o.user_timeout_ms = values.uint("ROCL_TCP_USER_TIMEOUT_MS");
  return o;
}
}  // namespace tcp

// Constant-initialised, so that the table is whole before any code runs.
extern constinit const TransportEntry transport_entry_tcp = {
    "tcp",
    "TCP/IPv4 sockets: epoll progress thread, one connection per peer, writev without copy",
    Reach::kNetwork,
    tcp::kOptions,
    &make_tcp_transport,
    true,
    "ROCL_TCP_BIND"};

}  // namespace rocl::impl
