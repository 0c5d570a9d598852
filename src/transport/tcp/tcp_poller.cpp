// tcp_poller.cpp - the epoll sets of the TCP transport (tcp_poller.hpp).
#include "transport/tcp/tcp_poller.hpp"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "status/status.hpp"

namespace rocl::impl::tcp::detail {

Poller::~Poller() {
  for (int fd : {thread_fd_, drivers_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

int Poller::open(int listen_fd, void *listen_tag) {
  drivers_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  thread_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (drivers_fd_ < 0 || thread_fd_ < 0 || wake_fd_ < 0) {
    return fail(ROCL_EPEER, "tcp: epoll/eventfd failed: %s", std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = listen_tag;
  ::epoll_ctl(drivers_fd_, EPOLL_CTL_ADD, listen_fd, &ev);
  ev.data.ptr = &drivers_fd_;
  ::epoll_ctl(thread_fd_, EPOLL_CTL_ADD, drivers_fd_, &ev);
  ev.data.ptr = &wake_fd_;
  ::epoll_ctl(thread_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return ROCL_OK;
}

void Poller::add(Conn &c) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = &c;
  ::epoll_ctl(drivers_fd_, EPOLL_CTL_ADD, c.fd, &ev);
}

void Poller::set_interest(Conn &c) {
  if (c.dead) return;
  epoll_event ev{};
  ev.events = (c.rx_paused ? 0u : std::uint32_t{EPOLLIN | EPOLLRDHUP}) |
              (c.want_out ? std::uint32_t{EPOLLOUT} : 0u);
  ev.data.ptr = &c;
  ::epoll_ctl(drivers_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void Poller::remove(int fd) {
  ::epoll_ctl(drivers_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

int Poller::ready(epoll_event *events, int max) {
  return ::epoll_wait(drivers_fd_, events, max, 0);
}

void Poller::wait_briefly() {
  epoll_event ev;
  ::epoll_wait(drivers_fd_, &ev, 1, 1);  // a peek: what is ready stays ready
}

// The event returned is discarded: by the time the receive lock is taken
// another driver may have handled it (or closed its connection), so the
// drive polls afresh; level-triggered, the peek consumes nothing.
bool Poller::wait_for_thread(int timeout_ms) {
  epoll_event ev;
  const int n = ::epoll_wait(thread_fd_, &ev, 1, timeout_ms);
  if (n > 0 && ev.data.ptr == &wake_fd_) {
    std::uint64_t v;
    [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof v);
  }
  return n > 0 || (n == 0 && timeout_ms >= 0);
}

void Poller::kick() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace rocl::impl::tcp::detail
