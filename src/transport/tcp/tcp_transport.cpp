// tcp_transport.cpp - the TCP transport object (design: tcp_transport.hpp;
// shared declarations: tcp_internal.hpp): construction, teardown, the
// counters, and the factories.
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "rocl/platform/futex.hpp"
#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl {
namespace tcp::detail {

TcpTransportImpl::TcpTransportImpl(const TransportEnv &env, tcp::LogFn log,
                                   const tcp::Options &options)
    : TcpTransport(env, "tcp", std::move(log)), options_(options) {
  if (env_.secret == nullptr) {
    own_secret_ = JobSecret::generate();
    secret_ = &*own_secret_;
  } else {
    secret_ = env_.secret;
  }
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
  if (options_.max_queued_bytes == 0) options_.max_queued_bytes = tcp::kDefaultMaxQueuedBytes;
  if (options_.max_parked_bytes == 0) options_.max_parked_bytes = tcp::kDefaultMaxParkedBytes;
  if (options_.turn_bytes == 0) options_.turn_bytes = tcp::kDefaultTurnBytes;
}

// Linger first, then close (see "Shutdown" in tcp_transport.hpp).
TcpTransportImpl::~TcpTransportImpl() {
  const auto linger = std::chrono::milliseconds(env_.linger_ms);
  const auto deadline = Clock::now() + linger;
  if (thread_.joinable()) {
    // The thread drives meanwhile: it writes the queues on EPOLLOUT, queues
    // a parked message's data when its reply comes, and drops a connection
    // whose peer went away.
    for (unsigned round = 0; linger.count() > 0 && holds(true) && Clock::now() < deadline;
         ++round) {
      back_off(round);
    }
    stop_.store(true);
    kick();
    platform::futex_wake(&pollers_);
    thread_.join();
  }
  std::lock_guard lock(mu_);
  report_dropped();
  if (linger.count() > 0) {
    const auto floor = std::min(linger, std::chrono::milliseconds(tcp::kCloseMs));
    close_gracefully(std::max(deadline, Clock::now() + floor));
  }
  for (auto &[c, sp] : all_) close_conn(*sp, false);
  all_.clear();
  count_conns_locked();
  peers_.clear();
  paused_.clear();
  for (int fd : {listen_fd_, thread_epoll_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

// Teardown's first step (transport.hpp): until the queues are written.
void TcpTransportImpl::flush_impl(Clock::time_point deadline) noexcept {
  if (!thread_.joinable()) return;
  // The thread writes the queues on EPOLLOUT (callers may be gone).
  for (unsigned round = 0; holds(false) && Clock::now() < deadline; ++round) back_off(round);
}

// Whether a live connection still holds something send() accepted: bytes
// queued (a message's, or a rendezvous request's or reply's, which a peer
// waits for) or, with `parked_too`, a parked rendezvous message.
bool TcpTransportImpl::holds(bool parked_too) {
  std::lock_guard lock(mu_);
  for (auto &[c, sp] : all_) {
    std::lock_guard conn_lock(sp->mu);
    if (!sp->dead && (!sp->q.empty() || (parked_too && sp->parked_n > 0))) return true;
  }
  return false;
}

// Under mu_, no driver left: one sentence per peer whose messages are still
// here (queued, or parked until their receiver takes them); they are dropped
// with the connection.
void TcpTransportImpl::report_dropped() {
  for (auto &[c, sp] : all_) {
    Conn &conn = *sp;
    std::lock_guard conn_lock(conn.mu);
    if (conn.dead) continue;
    // A parked message is counted once: by its slot, whether its request or
    // its data is queued or it waits for the reply.
    std::uint64_t messages = conn.parked_n, bytes = conn.parked_bytes, requested = 0;
    for (const OutMsg &m : conn.q) {
      if (m.parked != nullptr) {
        ++requested;
      } else if (m.block != nullptr) {
        ++messages;
        bytes += m.total;
      }
    }
    if (messages == 0) continue;
    const std::uint64_t waiting = conn.parked_n - requested;
    const std::string why =
        waiting == 0 ? "" : " (" + std::to_string(waiting) + " waiting for a receive at the peer)";
    char line[320];
    std::snprintf(line, sizeof line,
                  "tcp: dropped %" PRIu64 " message%s (%" PRIu64
                  " bytes) for peer %s (context 0x%016" PRIx64
                  ") at shutdown: not delivered within ROCL_LINGER_MS=%" PRIu32 " ms%s",
                  messages, messages == 1 ? "" : "s", bytes, conn.peer_name.c_str(), conn.peer,
                  env_.linger_ms, why.c_str());
    log(line);
  }
}

// Under mu_, no driver left: shuts down the sending side of every live
// connection (the peer reads all we wrote, then EOF), then reads and
// discards until each peer closes too, or until deadline: closing with
// unread input would send a RST, and a RST may destroy bytes the peer has
// not read yet.
void TcpTransportImpl::close_gracefully(Clock::time_point deadline) {
  std::vector<pollfd> open;
  for (auto &[c, sp] : all_) {
    std::lock_guard conn_lock(sp->mu);
    if (sp->dead) continue;
    ::shutdown(sp->fd, SHUT_WR);
    open.push_back(pollfd{sp->fd, POLLIN, 0});
  }
  std::vector<std::byte> scratch(std::size_t{64} << 10);
  while (!open.empty()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return;
    const int n =
        ::poll(open.data(), open.size(), static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) return;
    if (n <= 0) continue;
    std::size_t kept = 0;
    for (pollfd &p : open) {
      bool closed = false;
      if (p.revents != 0) {
        for (;;) {
          const ssize_t r = ::recv(p.fd, scratch.data(), scratch.size(), MSG_DONTWAIT);
          if (r > 0 && Clock::now() < deadline) continue;
          if (r < 0 && errno == EINTR) continue;
          closed = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
      }
      if (!closed) open[kept++] = pollfd{p.fd, POLLIN, 0};
    }
    open.resize(kept);
  }
}

tcp::Stats TcpTransportImpl::stats() const noexcept {
  tcp::Stats s;
  s.open_connections = conn_count_.load();
  s.connects = connects_.load();
  s.refused = refused_.load();
  s.dropped_connections = dropped_.load();
  s.failed_sends = failed_sends_.load();
  s.unknown_destination = refused_arrivals();
  s.paused_reads = paused_reads_.load();
  s.send_waits = send_waits_.load();
  s.peak_queued_bytes = peak_queued_.load();
  s.thread_events = thread_events_.load();
  s.caller_events = caller_events_.load();
  s.rendezvous_sends = rndv_sends_.load();
  s.rendezvous_waits = rndv_waits_.load();
  s.rendezvous_eager = rndv_eager_.load();
  s.peak_parked = peak_parked_.load();
  s.rendezvous_stubs = rndv_stubs_.load();
  s.rendezvous_pulls = rndv_pulls_.load();
  s.rendezvous_discards = rndv_discards_.load();
  s.congestion_refused = congestion_refused_.load();
  return s;
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
};
}  // namespace

std::span<const OptionRow> option_rows() noexcept {
  return kOptions;
}

Options options_from(const OptionValues &values) {
  Options o;
  o.rendezvous_threshold = values.size("ROCL_TCP_RNDV_THRESHOLD");
  o.congestion = split_list(values.text("ROCL_TCP_CONGESTION"));
  return o;
}
}  // namespace tcp

// Constant-initialised, so that the table is whole before any code runs.
extern constinit const TransportEntry transport_entry_tcp = {
    "tcp", "TCP/IPv4 sockets: epoll progress thread, one connection per peer, writev without copy",
    Reach::kNetwork, tcp::kOptions, &make_tcp_transport};

}  // namespace rocl::impl
