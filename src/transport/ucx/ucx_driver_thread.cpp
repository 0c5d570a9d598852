// ucx_driver_thread.cpp - see ucx_driver_thread.hpp.
#include "transport/ucx/ucx_driver_thread.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rocl::impl::ucx {

DriverThread::DriverThread(int event_fd, Look look) : event_fd_(event_fd), look_(std::move(look)) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error("ucx: eventfd: " + std::string(strerror(errno)));
  thread_ = std::thread([this] { run(); });
}

DriverThread::~DriverThread() {
  stop_.store(true);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  wake_parked();
  thread_.join();
  ::close(wake_fd_);
}

void DriverThread::wake_parked() noexcept {
  std::lock_guard<std::mutex> lock(park_mu_);
  park_cv_.notify_one();
}

void DriverThread::run() noexcept {
  while (!stop_.load()) {
    if (pollers_.load() > 0) {
      std::unique_lock<std::mutex> lock(park_mu_);
      park_cv_.wait_for(lock, std::chrono::milliseconds(kParkMs),
                        [this] { return pollers_.load() == 0 || stop_.load(); });
      continue;
    }
    const std::chrono::microseconds sleep = look_();
    if (sleep.count() > 0) nap(sleep);
  }
}

// Sleeps until the worker's event descriptor or the wake-up descriptor is
// readable, or `most` has passed.
void DriverThread::nap(std::chrono::microseconds most) noexcept {
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const timespec timeout{static_cast<time_t>(most.count() / 1000000),
                         static_cast<long>(most.count() % 1000000) * 1000};
  ::ppoll(fds, 2, &timeout, nullptr);
  if ((fds[1].revents & POLLIN) != 0) {
    std::uint64_t n;
    [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &n, sizeof n);
  }
}

}  // namespace rocl::impl::ucx
