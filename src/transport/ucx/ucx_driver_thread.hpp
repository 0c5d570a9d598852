// ucx_driver_thread.hpp - the ucx transport's own thread: it drives the
// worker when the worker's event descriptor says there is something, and
// stays parked while callers drive it themselves (caller progress,
// transport.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace rocl::impl::ucx {

class DriverThread {
 public:
  // One look: drives the worker (and arms it where events will do) and
  // says how long the thread may then sleep on `event_fd` (zero: look again
  // at once). Called on the thread only.
  using Look = std::function<std::chrono::microseconds()>;

  // Starts the thread. Throws std::runtime_error if it cannot.
  DriverThread(int event_fd, Look look);
  // Stops and joins it.
  ~DriverThread();
  DriverThread(const DriverThread &) = delete;
  DriverThread &operator=(const DriverThread &) = delete;

  // A caller begins driving the worker: the thread parks.
  void begin_polling() noexcept { pollers_.fetch_add(1); }
  // A caller stops. The thread takes over at once if `now` (the caller is
  // about to sleep, or work is left that needs polling); otherwise it
  // resumes by itself within kParkMs, so that a receive's end costs no
  // wake-up.
  void end_polling(bool now) noexcept {
    if (pollers_.fetch_sub(1) == 1 && now) wake_parked();
  }

 private:
  static constexpr int kParkMs = 1;

  void run() noexcept;
  void nap(std::chrono::microseconds most) noexcept;
  void wake_parked() noexcept;

  const int event_fd_;
  const Look look_;
  int wake_fd_ = -1;
  std::atomic<int> pollers_{0};
  std::atomic<bool> stop_{false};
  std::mutex park_mu_;
  std::condition_variable park_cv_;
  std::thread thread_;
};

}  // namespace rocl::impl::ucx
