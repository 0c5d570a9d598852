// tcp_connect.hpp - how the TCP transport's connections are made: the
// listening socket and its accepts, and connecting to a peer in the
// sending thread (the handshake included, so that a refusal is reported by
// that very send()). Every socket is tuned alike (SocketTuner).
#pragma once

#include <netinet/in.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable;
class Handshake;
class Poller;

// The options every connection's socket gets: no Nagle, and the first
// congestion control of ROCL_TCP_CONGESTION the kernel accepts.
class SocketTuner {
 public:
  explicit SocketTuner(Shared &shared) : shared_(shared) {}
  void tune(int fd);

 private:
  [[gnu::cold]] void say_refused(const std::vector<int> &errors);

  Shared &shared_;
};

class Connector {
 public:
  Connector(Shared &shared, ConnTable &table, Poller &poller, Handshake &handshake);
  ~Connector();  // closes the listening socket
  Connector(const Connector &) = delete;
  Connector &operator=(const Connector &) = delete;

  // Binds and listens (tcp::Options::bind_address, a port the kernel
  // picks) and opens the poller on it. ROCL_OK, or fail()'s code.
  int listen();
  // "tcp:<ipv4>:<port>", once listening.
  const std::string &address() const noexcept { return address_; }
  // Whether an epoll event with this data.ptr is the listening socket's.
  bool is_listener(const void *tag) const noexcept { return tag == &listen_fd_; }

  // Driver: accepts every pending connection (its handshake then runs on
  // the driver, Handshake::accept_step).
  void accept_all();
  // The connection to send on to the peer listening at peer_address: one
  // made now, in the calling thread (blocking up to kHandshakeTimeoutMs),
  // or the one that appeared meanwhile. nullptr with fail() naming the peer.
  // Concurrent calls run one handshake at a time.
  std::shared_ptr<Conn> connect(rocl_gid_t peer, std::string_view peer_address);

 private:
  // A socket connected to a, handshake done; -1 with fail() said.
  int dial(const sockaddr_in &a, const std::string &who);

  Shared &shared_;
  ConnTable &table_;
  Poller &poller_;
  Handshake &handshake_;
  SocketTuner tuner_;
  std::mutex connect_mu_;  // one handshake at a time
  int listen_fd_ = -1;
  std::string address_;
};

}  // namespace rocl::impl::tcp::detail
