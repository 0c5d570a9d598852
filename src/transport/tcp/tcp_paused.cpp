// tcp_paused.cpp - pausing and retrying the TCP transport's reads for want
// of pool blocks (tcp_paused.hpp).
#include "transport/tcp/tcp_paused.hpp"

#include <algorithm>
#include <string>

#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_poller.hpp"

namespace rocl::impl::tcp::detail {

void PausedReads::pause(Conn &c) {
  {
    std::lock_guard lock(c.mu);
    if (!c.rx_paused) {
      c.rx_paused = true;
      held_.fetch_add(1, std::memory_order_relaxed);
      poller_.set_interest(c);
      shared_.counters.paused_reads.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!c.pause_logged) {
    c.pause_logged = true;
    const bool stub = c.h.kind == wire::Kind::kRendezvousRequest;
    shared_.log("tcp: no buffer for a " + std::string(stub ? "rendezvous stub of a " : "") +
                std::to_string(c.h.total_length) + "-byte message from " + c.peer_name +
                " (pool full): reading from it paused until blocks are released " +
                "(logged once per connection)");
  }
  list_.push_back(&c);
  count_.store(list_.size());  // seq_cst, then thread_waiting: see Driver::wait_until_ready
  // The thread may be waiting with no timeout: make it take the retry one.
  if (list_.size() == 1 && poller_.thread_waiting()) poller_.kick();
}

void PausedReads::resume(Conn &c) {
  std::lock_guard lock(c.mu);
  if (!c.rx_paused) return;
  c.rx_paused = false;
  held_.fetch_sub(1, std::memory_order_relaxed);
  poller_.set_interest(c);
  ++resumed_;
}

std::vector<Conn *> PausedReads::take_due() {
  std::vector<Conn *> due;
  if (list_.empty()) return due;
  const auto now = Clock::now();
  if (now < next_retry_) return due;
  next_retry_ = now + std::chrono::milliseconds(tcp::kRetryMs);
  due.swap(list_);
  count_.store(0);
  return due;
}

void PausedReads::forget(Conn *c) {
  std::erase(list_, c);
  count_.store(list_.size());
}

void PausedReads::release(Conn &c) {
  if (!c.rx_paused) return;
  c.rx_paused = false;
  held_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace rocl::impl::tcp::detail
