// tcp_driver.cpp - driving the TCP transport (tcp_driver.hpp): the
// transport's own thread, callers' progress() with poll_begin()/poll_end(),
// the dispatch of one epoll event, and dropping a connection.
#include "transport/tcp/tcp_driver.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>

#include "rocl/platform/futex.hpp"
#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_connect.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_outbox.hpp"
#include "transport/tcp/tcp_paused.hpp"
#include "transport/tcp/tcp_poller.hpp"
#include "transport/tcp/tcp_receive.hpp"
#include "transport/tcp/tcp_rendezvous_receive.hpp"
#include "transport/tcp/tcp_rendezvous_send.hpp"

namespace rocl::impl::tcp::detail {
namespace {
constexpr int kMaxEvents = 64;
}  // namespace

void Closer::close(Conn &c, bool count) {
  std::lock_guard lock(c.mu);
  if (c.dead) return;
  c.dead = true;
  paused_.release(c);
  poller_.remove(c.fd);
  ::close(c.fd);
  outbox_.fail_all(c, count);
  rndv_send_.fail_parked(c, count);
  reader_.release(c);
  rndv_receive_.fail_pulls(c);
}

void Driver::start() {
  thread_ = std::thread([this] { run(); });
}

void Driver::stop() {
  shared_.stop.store(true);
  poller_.kick();
  platform::futex_wake(&pollers_);
  thread_.join();
}

bool Driver::callers_drive() const noexcept {
  return pollers_.load() > 0 && table_.count() != 0;
}

int Driver::progress(const Waiter *waiter) {
  if (shared_.drives_here()) return 0;  // from inside deliver: this thread is driving already
  // No connection: only the listening socket could be ready, and the thread
  // accepts (it stays in epoll_wait while there is no connection).
  if (table_.count(std::memory_order_relaxed) == 0) return 0;
  std::unique_lock lock(rx_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  reader_.set_waiter(waiter);
  const int n = drive_locked(true);
  reader_.set_waiter(nullptr);
  shared_.counters.caller_events.fetch_add(static_cast<std::uint64_t>(n),
                                           std::memory_order_relaxed);
  return n;
}

void Driver::poll_begin() {
  // seq_cst, paired with wait_until_ready(): either the thread sees the
  // count before its epoll_wait, or we see it inside and kick it out.
  // With no connection the thread stays in epoll_wait: only it accepts.
  if (pollers_.fetch_add(1) == 0 && poller_.thread_waiting() && table_.count() != 0) {
    poller_.kick();
  }
}

void Driver::poll_end(bool will_sleep) {
  // Lazy hand-back (the caller got what it waited for): no poll here. The
  // thread resumes within kParkMs, as it would for bytes arriving a moment
  // later; a last poll caught only what came in the last few hundred
  // nanoseconds, and cost an epoll_wait between each receive and the send
  // that answers it (a ping-pong's critical path).
  // Prompt hand-back: the last poller wakes the thread, which then polls
  // every descriptor (level-triggered: nothing ready is missed).
  if (pollers_.fetch_sub(1) == 1 && will_sleep) platform::futex_wake(&pollers_);
}

void Driver::run() {
  while (!shared_.stop.load(std::memory_order_acquire)) {
    if (callers_drive()) {
      park();
      continue;
    }
    if (!wait_until_ready()) continue;
    {
      std::lock_guard lock(rx_mu_);
      shared_.counters.thread_events.fetch_add(static_cast<std::uint64_t>(drive_locked()),
                                               std::memory_order_relaxed);
    }
    shared_.env.sink->progressed();
  }
}

// Sleeps while callers poll (they handle arrivals), re-checking every
// kParkMs: poll_end(false) does not wake the thread.
void Driver::park() {
  const int n = pollers_.load();
  if (n > 0) platform::futex_wait_for(&pollers_, n, std::chrono::milliseconds(tcp::kParkMs));
}

// Waits, without the receive lock, until a descriptor is ready or a paused
// connection is due for a retry. False: do not drive now (callers began
// polling; EINTR).
bool Driver::wait_until_ready() {
  poller_.set_thread_waiting(true);  // seq_cst: see poll_begin() and PausedReads::pause()
  bool ready = false;
  if (!callers_drive()) ready = poller_.wait_for_thread(paused_.any() ? tcp::kRetryMs : -1);
  poller_.set_thread_waiting(false);
  return ready && !callers_drive();
}

// Only the outermost drive frees the connections dropped meanwhile, since
// the drives below it on the stack may still hold them. direct: with a
// single connection and nothing paused, a caller reads it straight away,
// in kEpollEvery - 1 drives out of kEpollEvery: a message then costs one
// system call (the read) instead of two (epoll_wait, then the read) between
// its arrival and its delivery; the epoll of every kEpollEvery-th drive
// sees the rest (a new connection, room to write).
int Driver::drive_locked(bool direct) {
  constexpr unsigned kEpollEvery = 16;
  const DrivingScope scope(&shared_.transport);
  const bool outermost = drive_depth_++ == 0;
  if (outermost) paused_.reset_resumed();
  Conn *solo = direct ? table_.solo() : nullptr;
  int n = 0;
  if (solo != nullptr && outermost && !paused_.any() && ++direct_drives_ % kEpollEvery != 0) {
    n = read_solo(*solo);
  } else {
    std::array<epoll_event, kMaxEvents> evs;
    n = poller_.ready(evs.data(), kMaxEvents);
    for (int i = 0; i < n; ++i) handle_event(evs[i]);
  }
  retry_paused();
  if (outermost) graveyard_.clear();
  --drive_depth_;
  return std::max(n, 0) + paused_.resumed();
}

// The paused connections due for a retry read again (one still without a
// block pauses itself again).
void Driver::retry_paused() {
  for (Conn *c : paused_.take_due()) {
    if (!reader_.receive(*c)) drop(c);
  }
}

// The only connection, read as if epoll had said it is readable: 1 if
// bytes came (or it was dropped), 0 if none.
int Driver::read_solo(Conn &c) {
  if (c.rx == Rx::kNeedBlock) return 0;  // paused: retry_paused() reads it
  if (!reader_.receive(c)) {
    drop(&c);
    return 1;
  }
  return c.turn_read != 0 ? 1 : 0;
}

void Driver::handle_event(const epoll_event &ev) {
  void *p = ev.data.ptr;
  if (connector_.is_listener(p)) {
    connector_.accept_all();
  } else {
    on_conn(static_cast<Conn *>(p), ev.events);
  }
}

void Driver::on_conn(Conn *c, std::uint32_t events) {
  if (!table_.contains(c)) return;  // dropped earlier in this batch
  if (events & EPOLLOUT) {
    bool ok;
    {
      std::lock_guard lock(c->mu);
      ok = c->dead || outbox_.flush(*c);
    }
    if (!ok) {
      drop(c);
      return;
    }
  }
  if (c->rx == Rx::kNeedBlock) {
    // Paused: only retry_paused() reads it. A hang-up is still reported
    // (and would repeat, level-triggered): the peer reset the connection,
    // so its unread bytes are gone anyway.
    if (events & (EPOLLHUP | EPOLLERR)) drop(c);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (!reader_.receive(*c)) drop(c);
  }
}

// Removes a connection (kept alive until the batch ends).
void Driver::drop(Conn *c) {
  paused_.forget(c);
  auto owner = table_.remove(c, [&](Conn &conn) { closer_.close(conn, true); });
  if (owner != nullptr) graveyard_.push_back(std::move(owner));
}

}  // namespace rocl::impl::tcp::detail
