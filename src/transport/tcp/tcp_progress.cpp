// tcp_progress.cpp - driving the TCP transport: the transport's own thread
// (epoll peek, parking while callers poll) and callers' progress() with
// poll_begin()/poll_end(), all under the one receive lock (see "Progress" in
// tcp_transport.hpp), and the dispatch of one epoll event.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>

#include "rocl/platform/futex.hpp"
#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

int TcpTransportImpl::progress_impl(const Waiter *waiter) noexcept {
  if (t_driving == this) return 0;  // from inside deliver: this thread is driving already
  // No connection: only the listening socket could be ready, and the thread
  // accepts (it stays in epoll_wait while there is no connection).
  if (conn_count_.load(std::memory_order_relaxed) == 0) return 0;
  std::unique_lock lock(rx_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  rx_waiter_ = waiter;
  const int n = drive_locked(true);
  rx_waiter_ = nullptr;
  caller_events_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
  return n;
}

void TcpTransportImpl::poll_begin_impl() noexcept {
  // seq_cst, paired with wait_until_ready(): either the thread sees the
  // count before its epoll_wait, or we see it inside and kick it out.
  // With no connection the thread stays in epoll_wait: only it accepts.
  if (pollers_.fetch_add(1) == 0 && in_epoll_.load() && conn_count_.load() != 0) kick();
}

void TcpTransportImpl::poll_end_impl(bool will_sleep) noexcept {
  // Lazy hand-back (the caller got what it waited for): no poll here. The
  // thread resumes within kParkMs, as it would for bytes arriving a moment
  // later; a last poll caught only what came in the last few hundred
  // nanoseconds, and cost an epoll_wait between each receive and the send
  // that answers it (a ping-pong's critical path).
  // Prompt hand-back: the last poller wakes the thread, which then polls
  // every descriptor (level-triggered: nothing ready is missed).
  if (pollers_.fetch_sub(1) == 1 && will_sleep) platform::futex_wake(&pollers_);
}

void TcpTransportImpl::run() {
  while (!stop_.load(std::memory_order_acquire)) {
    if (callers_drive()) {
      park();
      continue;
    }
    if (!wait_until_ready()) continue;
    {
      std::lock_guard lock(rx_mu_);
      thread_events_.fetch_add(static_cast<std::uint64_t>(drive_locked()),
                               std::memory_order_relaxed);
    }
    env_.sink->progressed();
  }
}

// Sleeps while callers poll (they handle arrivals), re-checking every
// kParkMs: poll_end(false) does not wake the thread.
void TcpTransportImpl::park() {
  const int n = pollers_.load();
  if (n > 0) platform::futex_wait_for(&pollers_, n, std::chrono::milliseconds(tcp::kParkMs));
}

// Waits, without the receive lock, until a descriptor is ready or a paused
// connection is due for a retry. False: do not drive now (callers began
// polling; EINTR). The event returned is discarded: by the time the lock
// is taken another driver may have handled it (or closed its connection),
// so drive_locked() polls afresh; level-triggered, the peek consumes nothing.
bool TcpTransportImpl::wait_until_ready() {
  in_epoll_.store(true);  // seq_cst: see poll_begin() and pause_reading()
  bool ready = false;
  if (!callers_drive()) {
    const int timeout = paused_n_.load() > 0 ? tcp::kRetryMs : -1;
    epoll_event ev;
    const int n = ::epoll_wait(thread_epoll_fd_, &ev, 1, timeout);
    if (n > 0 && ev.data.ptr == &wake_fd_) {
      std::uint64_t v;
      [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof v);
    }
    ready = n > 0 || (n == 0 && timeout >= 0);
  }
  in_epoll_.store(false);
  return ready && !callers_drive();
}

void TcpTransportImpl::kick() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_, &one, sizeof one);
}

// Under rx_mu_: handles what is ready now, without blocking; returns the
// number of events handled (counting a paused connection resumed as one).
// Re-entrant: a pull inside deliver drives again from within a drive (a
// nested drive); only the outermost one frees the connections dropped
// meanwhile, since the drives below it on the stack may still hold them.
// direct: with a single connection and nothing paused, a caller reads it
// straight away, in kEpollEvery - 1 drives out of kEpollEvery: a message
// then costs one system call (the read) instead of two (epoll_wait, then
// the read) between its arrival and its delivery; the epoll of every
// kEpollEvery-th drive sees the rest (a new connection, room to write).
int TcpTransportImpl::drive_locked(bool direct) {
  constexpr unsigned kEpollEvery = 16;
  const DrivingScope scope(this);
  const bool outermost = drive_depth_++ == 0;
  if (outermost) resumed_ = 0;
  Conn *solo = direct ? solo_.load(std::memory_order_acquire) : nullptr;
  int n = 0;
  if (solo != nullptr && outermost && paused_n_.load(std::memory_order_relaxed) == 0 &&
      ++direct_drives_ % kEpollEvery != 0) {
    n = read_solo(*solo);
  } else {
    std::array<epoll_event, kMaxEvents> evs;
    n = ::epoll_wait(epoll_fd_, evs.data(), kMaxEvents, 0);
    for (int i = 0; i < n; ++i) handle_event(evs[i]);
  }
  retry_paused_if_due();
  if (outermost) graveyard_.clear();
  --drive_depth_;
  return std::max(n, 0) + resumed_;
}

// The only connection, read as if epoll had said it is readable: 1 if
// bytes came (or it was dropped), 0 if none.
int TcpTransportImpl::read_solo(Conn &c) {
  if (c.rx == Rx::kNeedBlock) return 0;  // paused: retry_paused_if_due() reads it
  if (!receive(c)) {
    drop(&c);
    return 1;
  }
  return c.turn_read != 0 ? 1 : 0;
}

void TcpTransportImpl::handle_event(const epoll_event &ev) {
  void *p = ev.data.ptr;
  if (p == &listen_fd_) {
    accept_all();
  } else {
    on_conn(static_cast<Conn *>(p), ev.events);
  }
}

void TcpTransportImpl::on_conn(Conn *c, std::uint32_t events) {
  if (!is_live(c)) return;  // dropped earlier in this batch
  if (events & EPOLLOUT) {
    bool ok;
    {
      std::lock_guard lock(c->mu);
      ok = c->dead || flush(*c);
    }
    if (!ok) {
      drop(c);
      return;
    }
  }
  if (c->rx == Rx::kNeedBlock) {
    // Paused: only retry_paused_if_due() reads it. A hang-up is still
    // reported (and would repeat, level-triggered): the peer reset the
    // connection, so its unread bytes are gone anyway.
    if (events & (EPOLLHUP | EPOLLERR)) drop(c);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (!receive(*c)) drop(c);
  }
}

}  // namespace rocl::impl::tcp::detail
