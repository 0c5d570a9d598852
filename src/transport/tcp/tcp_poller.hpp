// tcp_poller.hpp - the epoll sets of the TCP transport. The drivers' set
// holds the listening socket and every connection, all level-triggered:
// the thread's unlocked wait is only a peek, and a readiness one driver
// leaves is reported again to the next (see "Progress" in
// tcp_transport.hpp). The thread's own set holds the drivers' set and an
// eventfd that kicks the thread out of its wait: in the drivers' set a
// caller's drive could read a kick meant for the thread, which would then
// sleep on in epoll_wait with a connection paused.
#pragma once

#include <sys/epoll.h>

#include <atomic>

#include "transport/tcp/tcp_conn.hpp"

namespace rocl::impl::tcp::detail {

class Poller {
 public:
  Poller() = default;
  ~Poller();  // closes the sets and the eventfd
  Poller(const Poller &) = delete;
  Poller &operator=(const Poller &) = delete;

  // Makes the sets and the eventfd, and watches the listening socket
  // (reported with data.ptr = listen_tag). ROCL_OK, or fail()'s code.
  int open(int listen_fd, void *listen_tag);

  // Connections in the drivers' set (data.ptr = &c). add: reading (and
  // hang-ups); set_interest, under c.mu: reading unless c.rx_paused,
  // writing while c.want_out; remove: before its fd is closed.
  void add(Conn &c);
  void set_interest(Conn &c);
  void remove(int fd);

  // Drivers, under the receive lock: what is ready now (no wait).
  int ready(epoll_event *events, int max);
  // A driver with nothing to do that must wait for its own data (a nested
  // pull): sleeps until something is ready, at most a millisecond.
  void wait_briefly();

  // The thread, without the receive lock: waits until the drivers' set
  // has something ready, a kick comes, or timeout_ms passes (-1: no
  // timeout). True if the thread should drive now.
  bool wait_for_thread(int timeout_ms);
  // Whether the thread is in (or about to enter) wait_for_thread: set by
  // the thread around it (seq_cst, paired with the loads of its wakers).
  void set_thread_waiting(bool waiting) noexcept { thread_waiting_.store(waiting); }
  bool thread_waiting() const noexcept { return thread_waiting_.load(); }
  // Takes the thread out of wait_for_thread (or makes its next one return).
  void kick();

 private:
  int drivers_fd_ = -1;
  int thread_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> thread_waiting_{false};
};

}  // namespace rocl::impl::tcp::detail
