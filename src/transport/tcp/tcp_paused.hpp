// tcp_paused.hpp - flow control on the TCP transport's receive side: a
// connection whose next message gets no block from the pool stops being
// read (its EPOLLIN interest removed: the kernel's TCP window then holds
// the sender back) and is retried about every kRetryMs (see "Flow control"
// in tcp_transport.hpp). The list is the drivers' (under the receive
// lock); the counts may be read by any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class Poller;

class PausedReads {
 public:
  PausedReads(Shared &shared, Poller &poller) : shared_(shared), poller_(poller) {}

  // Driver: no block for the message announced in c.h; c waits for a
  // retry (said once per connection on the log).
  void pause(Conn &c);
  // Driver: c got its block; reading it goes on (counted in resumed()).
  void resume(Conn &c);
  // Driver: the paused connections, taken off the list, if a retry is due
  // (at most every kRetryMs: a failing allocation is not free, the pool
  // reclaims its caches first). Each is to be read again: one still
  // without a block pauses itself again; one that gets it goes on with the
  // frames its stage holds (epoll would never report those).
  std::vector<Conn *> take_due();
  // Driver: c is being dropped.
  void forget(Conn *c);
  // c is closing (under c.mu): its unread bytes go with it.
  void release(Conn &c);
  // Teardown: nothing waits any more.
  void clear() { list_.clear(); }

  // Whether a connection waits for a retry (the thread's wait then has a
  // timeout). seq_cst, paired with Poller::thread_waiting().
  bool any() const noexcept { return count_.load() > 0; }
  // Live connections paused now (any thread; may be momentarily stale).
  std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  // Driver: paused connections that got their block since reset_resumed().
  int resumed() const noexcept { return resumed_; }
  void reset_resumed() noexcept { resumed_ = 0; }

 private:
  Shared &shared_;
  Poller &poller_;
  std::vector<Conn *> list_;
  Clock::time_point next_retry_{};
  int resumed_ = 0;
  std::atomic<std::size_t> count_{0};  // list_.size()
  std::atomic<std::size_t> held_{0};   // live connections with rx_paused set
};

}  // namespace rocl::impl::tcp::detail
