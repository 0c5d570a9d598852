// tcp_transport.cpp - the TCP transport object (design: tcp_transport.hpp;
// shared declarations: tcp_internal.hpp): construction, teardown, the
// counters, and the factories.
#include <unistd.h>

#include <cstdio>

#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl {
namespace tcp::detail {

TcpTransportImpl::TcpTransportImpl(const TransportEnv &env, tcp::LogFn log,
                                   const tcp::Options &options)
    : env_(env), log_(std::move(log)), options_(options) {
  if (env_.secret == nullptr) {
    own_secret_ = JobSecret::generate();
    secret_ = &*own_secret_;
  } else {
    secret_ = env_.secret;
  }
  if (!log_) {
    log_ = [](const std::string &s) { std::fprintf(stderr, "rocl: %s\n", s.c_str()); };
  }
  if (options_.max_queued_bytes == 0) options_.max_queued_bytes = tcp::kDefaultMaxQueuedBytes;
  if (options_.max_parked_bytes == 0) options_.max_parked_bytes = tcp::kDefaultMaxParkedBytes;
}

TcpTransportImpl::~TcpTransportImpl() {
  if (thread_.joinable()) {
    stop_.store(true);
    kick();
    futex_wake_all(pollers_);
    thread_.join();
  }
  std::lock_guard lock(mu_);
  for (auto &[c, sp] : all_) close_conn(*sp, false);
  all_.clear();
  peers_.clear();
  paused_.clear();
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

tcp::Stats TcpTransportImpl::stats() const noexcept {
  tcp::Stats s;
  s.refused = refused_.load();
  s.dropped_connections = dropped_.load();
  s.failed_sends = failed_sends_.load();
  s.unknown_destination = unknown_.load();
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
  return make_tcp_transport_with_log(env, nullptr);
}

}  // namespace rocl::impl
