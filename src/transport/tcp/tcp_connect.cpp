// tcp_connect.cpp - connections of the TCP transport: the listening socket,
// connecting to a peer (in the sending thread), accepting, the job-secret
// handshake on both sides (see "Handshake" in tcp_transport.hpp), and closing
// and dropping a connection.
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

std::string sockaddr_name(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// "tcp:1.2.3.4:5" -> sockaddr. False if malformed.
bool parse_address(std::string_view addr, sockaddr_in *out) {
  if (addr.substr(0, 4) != "tcp:") return false;
  addr.remove_prefix(4);
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= addr.size()) return false;
  const std::string host(addr.substr(0, colon));
  unsigned port = 0;
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + static_cast<unsigned>(c - '0');
    if (port > 65535) return false;
  }
  if (port == 0) return false;
  std::memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return ::inet_pton(AF_INET, host.c_str(), &out->sin_addr) == 1;
}

// An IPv4 literal, or the first IPv4 address of the interface so named.
bool resolve_bind(const std::string &what, in_addr *out) {
  if (what.empty()) {
    out->s_addr = htonl(INADDR_LOOPBACK);
    return true;
  }
  if (::inet_pton(AF_INET, what.c_str(), out) == 1) return true;
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET && what == i->ifa_name) {
      *out = reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr;
      found = true;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

// Blocking-with-deadline full read/write on a non-blocking socket.
bool io_full(int fd, void *buf, std::size_t len, bool writing, Clock::time_point deadline) {
  auto *p = static_cast<std::uint8_t *>(buf);
  while (len > 0) {
    const ssize_t n = writing ? ::send(fd, p, len, MSG_NOSIGNAL) : ::recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return false;  // EOF while reading
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    ::poll(&pfd, 1, static_cast<int>(left));
  }
  return true;
}

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
// between, never let it measure (ROCL_TCP_CONGESTION in options.cpp has the
// figures). The option is a list in order of preference: an unprivileged
// process may set only what net.ipv4.tcp_allowed_congestion_control lists
// (where bbr is the default, often "reno bbr": cubic is refused, reno is
// always allowed). If every name is refused, that is said once and costs
// nothing else: the connection works with the system's algorithm.
void TcpTransportImpl::tune_socket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const std::vector<std::string> &names = options_.congestion;
  if (names.empty()) return;
  std::vector<int> errors;  // why each name was refused, in order
  for (const std::string &name : names) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0) {
      return;
    }
    errors.push_back(errno);
  }
  if (congestion_refused_.fetch_add(1) != 0) return;
  std::string list;
  std::string refusals;
  for (std::size_t k = 0; k < names.size(); ++k) {
    list.append(k == 0 ? "" : ",").append(names[k]);
    refusals.append(k == 0 ? "'" : ", '").append(names[k]).append("': ");
    refusals.append(std::strerror(errors[k]));
    if (errors[k] == EPERM) refusals.append(" (not in net.ipv4.tcp_allowed_congestion_control)");
  }
  const std::string sys = system_congestion();
  log("tcp: congestion control (ROCL_TCP_CONGESTION=" + list +
      ") refused by the kernel: " + refusals + "; connections keep the system's" +
      (sys.empty() ? "" : " '" + sys + "'") + " (said once)");
}

int TcpTransportImpl::start() {
  in_addr ip{};
  if (!resolve_bind(options_.bind_address, &ip)) {
    return fail(ROCL_EINVAL, "tcp: bind address '%s' is neither an IPv4 address nor an interface",
                options_.bind_address.c_str());
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = ip;
  a.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    return fail(ROCL_EPEER, "tcp: bind/listen on %s: %s", options_.bind_address.c_str(),
                std::strerror(errno));
  }
  socklen_t alen = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen);
  address_ = "tcp:" + sockaddr_name(a);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  thread_epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || thread_epoll_fd_ < 0 || wake_fd_ < 0) {
    return fail(ROCL_EPEER, "tcp: epoll/eventfd failed: %s", std::strerror(errno));
  }
  // Level-triggered (no EPOLLET) everywhere: the thread's unlocked
  // epoll_wait is only a peek, and a readiness one driver leaves is
  // reported again to the next (see "Progress" in the header).
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  // The kicks go to the thread's own set, beside the drivers' one: in the
  // drivers' set a caller's drive could read a kick meant for the thread
  // (which then slept on in epoll_wait with a connection paused; CI saw a
  // receive hang so, 1 run in ~100 under load).
  ev.data.ptr = &epoll_fd_;
  ::epoll_ctl(thread_epoll_fd_, EPOLL_CTL_ADD, epoll_fd_, &ev);
  ev.data.ptr = &wake_fd_;
  ::epoll_ctl(thread_epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { run(); });
  return ROCL_OK;
}

std::shared_ptr<Conn> TcpTransportImpl::find_peer(std::string_view peer_address) {
  std::lock_guard lock(mu_);
  auto it = peers_.find(peer_address);
  if (it == peers_.end()) return nullptr;
  if (it->second->dead) {
    it->second->peer_address.clear();
    peers_.erase(it);
    return nullptr;
  }
  return it->second;
}

// Connects and runs the connector's handshake in the calling thread.
std::shared_ptr<Conn> TcpTransportImpl::connect_peer(rocl_gid_t peer,
                                                     std::string_view peer_address) {
  std::lock_guard connect_lock(connect_mu_);
  const std::string pa(peer_address);
  if (auto c = find_peer(pa)) return c;  // connected meanwhile, or accepted from it
  sockaddr_in a{};
  if (!parse_address(peer_address, &a)) {
    fail(ROCL_EPEER, "tcp: peer address '%s' is not tcp:<ipv4>:<port>", pa.c_str());
    return nullptr;
  }
  const std::string who = sockaddr_name(a);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(ROCL_EPEER, "tcp: socket: %s", std::strerror(errno));
    return nullptr;
  }
  tune_socket(fd);  // before connect: the handshake starts under the chosen algorithm
  const auto deadline = Clock::now() + std::chrono::milliseconds(tcp::kHandshakeTimeoutMs);
  auto bail = [&](const std::string &why) -> std::shared_ptr<Conn> {
    ::close(fd);
    fail(ROCL_EPEER, "tcp: peer %s %s", who.c_str(), why.c_str());
    return nullptr;
  };
  if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) return bail(std::string("unreachable: ") + std::strerror(errno));
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, tcp::kHandshakeTimeoutMs) <= 0) return bail("unreachable: timed out");
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return bail(std::string("unreachable: ") + std::strerror(err));
  }
  tcp::Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, env_.instance, {}};
  address_.copy(hello.address, sizeof hello.address - 1);
  JobSecret::Challenge theirs{};
  if (!io_full(fd, &hello, sizeof hello, true, deadline) ||
      !io_full(fd, theirs.data(), theirs.size(), false, deadline)) {
    refused_.fetch_add(1);
    log("tcp: peer " + who + " refused: closed the connection during the handshake");
    return bail("refused the connection during the handshake");
  }
  std::array<std::uint8_t, 64> answer{};
  const auto proof = secret_->prove(tcp::kConnectLabel, theirs);
  const auto mine = JobSecret::random_challenge();
  std::memcpy(answer.data(), proof.data(), 32);
  std::memcpy(answer.data() + 32, mine.data(), 32);
  std::array<std::uint8_t, 33> verdict{};
  if (!io_full(fd, answer.data(), answer.size(), true, deadline) ||
      !io_full(fd, verdict.data(), 1, false, deadline)) {
    refused_.fetch_add(1);
    log("tcp: peer " + who + " refused: closed the connection during the handshake");
    return bail("refused the connection during the handshake");
  }
  if (verdict[0] != 0) {
    refused_.fetch_add(1);
    log("tcp: peer " + who + " refused: job secret proof did not verify");
    return bail("refused: job secret proof did not verify");
  }
  JobSecret::Digest their_proof{};
  if (!io_full(fd, their_proof.data(), their_proof.size(), false, deadline)) {
    refused_.fetch_add(1);
    log("tcp: peer " + who + " refused: closed the connection during the handshake");
    return bail("refused the connection during the handshake");
  }
  if (!secret_->verify(tcp::kAcceptLabel, mine, their_proof)) {
    refused_.fetch_add(1);
    log("tcp: peer " + who + " refused: job secret proof did not verify");
    return bail("refused: job secret proof did not verify");
  }
  auto c = std::make_shared<Conn>(next_conn_.fetch_add(1), fd, peer, who);
  c->rx = Rx::kHeader;
  connects_.fetch_add(1);
  std::shared_ptr<Conn> use = c;
  {
    std::lock_guard lock(mu_);
    all_.emplace(c.get(), c);
    count_conns_locked();
    // The peer may have connected to us meanwhile, and we may have sent on
    // its connection already: keep sending there (order), c carries the
    // peer's messages only.
    auto [it, fresh] = peers_.try_emplace(pa, c);
    if (fresh) {
      c->peer_address = pa;
    } else {
      use = it->second;
    }
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = c.get();
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  return use;
}

void TcpTransportImpl::accept_all() {
  for (;;) {
    sockaddr_in a{};
    socklen_t alen = sizeof a;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &alen,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    tune_socket(fd);
    auto c = std::make_shared<Conn>(next_conn_.fetch_add(1), fd, 0, sockaddr_name(a));
    {
      std::lock_guard lock(mu_);
      all_.emplace(c.get(), c);
      count_conns_locked();
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c.get();
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

bool TcpTransportImpl::is_live(Conn *c) {
  std::lock_guard lock(mu_);
  return all_.find(c) != all_.end();
}

// Closes c: fails its queue and its parked rendezvous sends, frees a
// half-received block and the stage, fails the pulls waiting for data from
// it. Caller holds mu_ and drives (rx_mu_), or is the only thread left: only
// a driver may close, since a driver may be reading c.fd without c.mu.
void TcpTransportImpl::close_conn(Conn &c, bool count) {
  std::lock_guard lock(c.mu);
  if (c.dead) return;
  c.dead = true;
  if (c.rx_paused) {  // its unread bytes go with it
    c.rx_paused = false;
    held_.fetch_sub(1, std::memory_order_relaxed);
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  for (auto &m : c.q) {
    if (m.block == nullptr) continue;  // a rendezvous request or reply
    finish_block(m.block, false);
    if (count) failed_sends_.fetch_add(1);
  }
  c.q.clear();
  c.queued = 0;
  fail_parked(c, count);
  if (c.rx_pull != nullptr) {
    c.rx_block = nullptr;  // the pull's: fail_pulls() gives it back to its thread
    c.rx_at = nullptr;
    c.rx_pull = nullptr;
  }
  if (c.rx_block != nullptr) {
    env_.pool->release(c.rx_block, BlockState::kLibrary);
    c.rx_block = nullptr;
    c.rx_at = nullptr;
  }
  if (c.stub_block != nullptr) {
    env_.pool->release(c.stub_block, BlockState::kLibrary);
    c.stub_block = nullptr;
  }
  // Staged frames go with the connection, as unread socket bytes do.
  c.stage.reset();
  c.stage_cap = c.stage_pos = c.stage_end = 0;
  fail_pulls(c);
}

// Driver: removes a connection (kept alive until the batch ends).
void TcpTransportImpl::drop(Conn *c) {
  std::erase(paused_, c);
  paused_n_.store(paused_.size());
  std::lock_guard lock(mu_);
  auto it = all_.find(c);
  if (it == all_.end()) return;
  graveyard_.push_back(it->second);
  close_conn(*c, true);
  if (!c->peer_address.empty()) {
    auto p = peers_.find(c->peer_address);
    if (p != peers_.end() && p->second.get() == c) peers_.erase(p);
    c->peer_address.clear();
  }
  all_.erase(it);
  count_conns_locked();
}

Step TcpTransportImpl::rx_handshake(Conn &c) {
  const std::size_t want = c.rx == Rx::kHello ? sizeof(tcp::Hello) : 64;
  const ssize_t n = read_some(c.fd, c.buf.data() + c.got, want - c.got);
  if (n == 0) return Step::kIdle;
  if (n < 0) return to_step(refuse(c, "closed the connection during the handshake"));
  c.got += static_cast<std::size_t>(n);
  // A stranger's bytes are refused on its first 4, not after 56.
  if (c.rx == Rx::kHello && c.got >= 4 && c.got < want) {
    std::uint32_t magic;
    std::memcpy(&magic, c.buf.data(), 4);
    if (magic != tcp::kHelloMagic) return to_step(on_hello(c));
  }
  if (c.got < want) return Step::kMore;
  c.got = 0;
  return to_step(c.rx == Rx::kHello ? on_hello(c) : on_proof(c));
}

// A Hello is in c.buf: check it, send our challenge.
bool TcpTransportImpl::on_hello(Conn &c) {
  tcp::Hello hello;
  std::memcpy(&hello, c.buf.data(), sizeof hello);
  if (hello.magic != tcp::kHelloMagic) {
    char m[64];
    std::snprintf(m, sizeof m, "hello magic 0x%08x is not 0x%08x", hello.magic, tcp::kHelloMagic);
    return refuse(c, m);
  }
  if (hello.version != tcp::kHandshakeVersion) {
    return refuse(c, "hello version " + std::to_string(hello.version) + " is not supported");
  }
  const std::size_t alen = ::strnlen(hello.address, sizeof hello.address);
  sockaddr_in ignored{};
  if (alen == sizeof hello.address ||
      (alen != 0 && !parse_address(std::string_view(hello.address, alen), &ignored))) {
    return refuse(c, "hello address is not tcp:<ipv4>:<port>");
  }
  c.hello_address.assign(hello.address, alen);
  c.challenge = JobSecret::random_challenge();
  if (!io_full(c.fd, c.challenge.data(), c.challenge.size(), true,
               Clock::now() + std::chrono::milliseconds(100))) {
    return refuse(c, "could not send the challenge");
  }
  c.rx = Rx::kProof;
  return true;
}

// The connector's proof and challenge are in c.buf: verify, answer.
bool TcpTransportImpl::on_proof(Conn &c) {
  JobSecret::Digest proof;
  JobSecret::Challenge theirs;
  std::memcpy(proof.data(), c.buf.data(), 32);
  std::memcpy(theirs.data(), c.buf.data() + 32, 32);
  std::array<std::uint8_t, 33> verdict{};
  if (!secret_->verify(tcp::kConnectLabel, c.challenge, proof)) {
    verdict[0] = 1;
    io_full(c.fd, verdict.data(), 1, true, Clock::now() + std::chrono::milliseconds(100));
    return refuse(c, "job secret proof did not verify");
  }
  const auto mine = secret_->prove(tcp::kAcceptLabel, theirs);
  std::memcpy(verdict.data() + 1, mine.data(), 32);
  if (!io_full(c.fd, verdict.data(), verdict.size(), true,
               Clock::now() + std::chrono::milliseconds(100))) {
    return refuse(c, "could not send the handshake answer");
  }
  c.rx = Rx::kHeader;
  if (!c.hello_address.empty()) adopt(c, c.hello_address);
  return true;
}

// Driver: c, accepted and proved, becomes the connection we send on to the
// peer listening at peer_address, unless we have one already (it keeps that
// role: the order of what we sent on it).
void TcpTransportImpl::adopt(Conn &c, const std::string &peer_address) {
  std::lock_guard lock(mu_);
  auto it = all_.find(&c);
  if (it == all_.end()) return;
  if (peers_.try_emplace(peer_address, it->second).second) c.peer_address = peer_address;
}

bool TcpTransportImpl::refuse(Conn &c, const std::string &why) {
  refused_.fetch_add(1);
  log("tcp: peer " + c.peer_name + " refused: " + why);
  return false;
}

}  // namespace rocl::impl::tcp::detail
