// tcp_linger.cpp - the TCP transport's shutdown over its connections
// (tcp_linger.hpp).
#include "transport/tcp/tcp_linger.hpp"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

bool holds_accepted(ConnTable &table, bool parked_too) {
  return table.any_of([&](Conn &c) {
    std::lock_guard conn_lock(c.mu);
    return !c.dead && (!c.q.empty() || (parked_too && c.parking.count > 0));
  });
}

void report_dropped(ConnTable &table, const Shared &shared) {
  table.for_each([&](Conn &conn) {
    std::lock_guard conn_lock(conn.mu);
    if (conn.dead) return;
    // A parked message is counted once: by its slot, whether its request or
    // its data is queued or it waits for the reply.
    std::uint64_t messages = conn.parking.count, bytes = conn.parking.bytes, requested = 0;
    for (const OutMsg &m : conn.q) {
      if (m.parked != nullptr) {
        ++requested;
      } else if (m.block != nullptr) {
        ++messages;
        bytes += m.total;
      }
    }
    if (messages == 0) return;
    const std::uint64_t waiting = conn.parking.count - requested;
    const std::string why =
        waiting == 0 ? "" : " (" + std::to_string(waiting) + " waiting for a receive at the peer)";
    char line[320];
    std::snprintf(line, sizeof line,
                  "tcp: dropped %" PRIu64 " message%s (%" PRIu64
                  " bytes) for peer %s (context 0x%016" PRIx64
                  ") at shutdown: not delivered within ROCL_LINGER_MS=%" PRIu32 " ms%s",
                  messages, messages == 1 ? "" : "s", bytes, conn.peer_name.c_str(), conn.peer,
                  shared.env.linger_ms, why.c_str());
    shared.log(line);
  });
}

void close_gracefully(ConnTable &table, Clock::time_point deadline) {
  std::vector<pollfd> open;
  table.for_each([&](Conn &c) {
    std::lock_guard conn_lock(c.mu);
    if (c.dead) return;
    ::shutdown(c.fd, SHUT_WR);
    open.push_back(pollfd{c.fd, POLLIN, 0});
  });
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

}  // namespace rocl::impl::tcp::detail
