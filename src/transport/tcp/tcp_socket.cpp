// tcp_socket.cpp - socket helpers of the TCP transport (tcp_socket.hpp).
#include "transport/tcp/tcp_socket.hpp"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>

#include "os/net.hpp"

namespace rocl::impl::tcp::detail {

using Clock = std::chrono::steady_clock;

std::string sockaddr_name(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

bool parse_address(std::string_view addr, sockaddr_in *out) {
  if (addr.substr(0, 4) != "tcp:") return false;
  addr.remove_prefix(4);
  addr = addr.substr(0, addr.find('@'));  // a loopback address's host id
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

bool resolve_bind(const std::string &what, in_addr *out) {
  return what != "any" && os::resolve_ipv4(what, out);
}

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

ssize_t read_some(int fd, void *p, std::size_t len) {
  for (;;) {
    const ssize_t n = ::recv(fd, p, len, 0);
    if (n > 0) return n;
    if (n == 0) return -1;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

ssize_t read_vec(int fd, iovec *iov, int n) {
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = static_cast<std::size_t>(n);
  for (;;) {
    const ssize_t r = ::recvmsg(fd, &mh, 0);
    if (r > 0) return r;
    if (r == 0) return -1;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

void back_off(unsigned round) {
  constexpr unsigned kYieldRounds = 16;
  if (round < kYieldRounds) {
    std::this_thread::yield();
    return;
  }
  const unsigned shift = std::min(round - kYieldRounds, 7u);
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(10u << shift, 1000u)));
}

}  // namespace rocl::impl::tcp::detail
