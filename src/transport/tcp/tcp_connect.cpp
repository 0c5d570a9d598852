// tcp_connect.cpp - making the TCP transport's connections
// (tcp_connect.hpp): the listening socket, accepting, connecting to a peer
// in the sending thread, and the socket options of each.
#include "transport/tcp/tcp_connect.hpp"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "os/host.hpp"
#include "status/status.hpp"
#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_handshake.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_poller.hpp"
#include "transport/tcp/tcp_socket.hpp"

namespace rocl::impl::tcp::detail {

namespace {
// The system's congestion control, for a sentence ("" if unreadable).
std::string system_congestion() {
  std::FILE *f = std::fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
  if (f == nullptr) return "";
  char name[64] = {};
  const bool got = std::fgets(name, sizeof name, f) != nullptr;
  std::fclose(f);
  std::string s = got ? name : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

// The congestion control is set on every connection rather than left to
// the system: BBR (the default of some systems) paces a connection at its
// estimate of the path's bandwidth, which a ping-pong's bursts, idle in
// between, never let it measure (ROCL_TCP_CONGESTION's doc says where the
// benchmark shows it). The option is a list in order of preference: an
// unprivileged process may set only what
// net.ipv4.tcp_allowed_congestion_control lists (where bbr is the default,
// often "reno bbr": cubic is refused, reno is always allowed). If every
// name is refused, that is said once and costs nothing else: the
// connection works with the system's algorithm.
void SocketTuner::tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (const unsigned ms = shared_.options.user_timeout_ms; ms != 0) {
    ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
  }
  const std::vector<std::string> &names = shared_.options.congestion;
  if (names.empty()) return;
  std::vector<int> errors;  // why each name was refused, in order
  for (const std::string &name : names) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0) {
      return;
    }
    errors.push_back(errno);
  }
  if (shared_.counters.congestion_refused.fetch_add(1) != 0) return;
  say_refused(errors);
}

void SocketTuner::say_refused(const std::vector<int> &errors) {
  const std::vector<std::string> &names = shared_.options.congestion;
  std::string list;
  std::string refusals;
  for (std::size_t k = 0; k < names.size(); ++k) {
    list.append(k == 0 ? "" : ",").append(names[k]);
    refusals.append(k == 0 ? "'" : ", '").append(names[k]).append("': ");
    refusals.append(std::strerror(errors[k]));
    if (errors[k] == EPERM) refusals.append(" (not in net.ipv4.tcp_allowed_congestion_control)");
  }
  const std::string sys = system_congestion();
  shared_.log("tcp: congestion control (ROCL_TCP_CONGESTION=" + list +
              ") refused by the kernel: " + refusals + "; connections keep the system's" +
              (sys.empty() ? "" : " '" + sys + "'") + " (said once)");
}

Connector::Connector(Shared &shared, ConnTable &table, Poller &poller, Handshake &handshake)
    : shared_(shared), table_(table), poller_(poller), handshake_(handshake), tuner_(shared) {}

Connector::~Connector() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int Connector::listen() {
  const std::string &bind_address = shared_.options.bind_address;
  in_addr ip{};
  if (!resolve_bind(bind_address, &ip)) {
    return fail(ROCL_EINVAL,
                "tcp: ROCL_TCP_BIND='%s' is neither an IPv4 address, an interface with one, "
                "'auto' nor 'loopback'",
                bind_address.c_str());
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = ip;
  a.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    return fail(ROCL_EPEER, "tcp: bind/listen on %s: %s", bind_address.c_str(),
                std::strerror(errno));
  }
  socklen_t alen = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen);
  address_ = "tcp:" + sockaddr_name(a);
  // A loopback address means "this host" only: the host id keeps a peer
  // on another host from dialling its own loopback (reaches_impl).
  if ((ntohl(a.sin_addr.s_addr) >> 24) == 127) address_ += "@" + os::host_id();
  return poller_.open(listen_fd_, &listen_fd_);
}

void Connector::accept_all() {
  for (;;) {
    sockaddr_in a{};
    socklen_t alen = sizeof a;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    tuner_.tune(fd);
    auto c = table_.make(fd, 0, sockaddr_name(a));
    table_.add(c);
    poller_.add(*c);
  }
}

std::shared_ptr<Conn> Connector::connect(rocl_gid_t peer, std::string_view peer_address) {
  std::lock_guard connect_lock(connect_mu_);
  const std::string pa(peer_address);
  if (auto c = table_.find_peer(pa)) return c;  // connected meanwhile, or accepted from it
  sockaddr_in a{};
  if (!parse_address(peer_address, &a)) {
    fail(ROCL_EPEER, "tcp: peer address '%s' is not tcp:<ipv4>:<port>", pa.c_str());
    return nullptr;
  }
  const std::string who = sockaddr_name(a);
  const int fd = dial(a, who);
  if (fd < 0) return nullptr;
  auto c = table_.make(fd, peer, who);
  c->rx = Rx::kHeader;
  shared_.counters.connects.fetch_add(1);
  std::shared_ptr<Conn> use = table_.add_connected(c, pa);
  poller_.add(*c);
  return use;
}

int Connector::dial(const sockaddr_in &a, const std::string &who) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
    return -1;
  }
  tuner_.tune(fd);  // before connect: the handshake starts under the chosen algorithm
  const auto deadline = Clock::now() + std::chrono::milliseconds(tcp::kHandshakeTimeoutMs);
  auto bail = [&](const std::string &why) {
    ::close(fd);
    fail(ROCL_EPEER, "tcp: peer %s %s", who.c_str(), why.c_str());
    return -1;
  };
  if (::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) return bail(std::string("unreachable: ") + std::strerror(errno));
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, tcp::kHandshakeTimeoutMs) <= 0) return bail("unreachable: timed out");
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return bail(std::string("unreachable: ") + std::strerror(err));
  }
  const std::string refused = handshake_.connect(fd, who, address_, deadline);
  if (!refused.empty()) return bail(refused);
  return fd;
}

}  // namespace rocl::impl::tcp::detail
