// busy_loops.hpp - the competitors of the oversub stage (rocl-bench compare
// oversub): plain CPU-bound loops, `per_cpu` of them pinned to each cpu of
// a list, running from construction to destruction. Shared by
// oversub_limits.cpp (the futex anchor) and compare's own rocl threads, so
// that both meet the same competitors. No rocl in here.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace rocl_anchors {

class BusyLoops {
 public:
  BusyLoops(const std::vector<int> &cpus, int per_cpu) {
    for (int k = 0; k < per_cpu; ++k) {
      for (int cpu : cpus) threads_.emplace_back([this, cpu] { spin(cpu); });
    }
    // Started before the measured run: each loop is on its cpu before it begins.
    while (running_.load(std::memory_order_acquire) != threads_.size()) std::this_thread::yield();
  }
  BusyLoops(const BusyLoops &) = delete;
  BusyLoops &operator=(const BusyLoops &) = delete;
  ~BusyLoops() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto &t : threads_) t.join();
  }

 private:
  void spin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    running_.fetch_add(1, std::memory_order_release);
    std::uint64_t work = 0;
    // Never yields nor sleeps: a competitor that wants its whole time slice.
    while (!stop_.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 1024; ++i) {
        work = work * 6364136223846793005u + 1442695040888963407u;
        asm volatile("" : "+r"(work));
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> running_{0};
  std::vector<std::thread> threads_;
};

}  // namespace rocl_anchors
