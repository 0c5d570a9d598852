// threads.cpp - see threads.hpp.
#include "threads.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "check.hpp"

namespace rocl_bench {

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string Placement::describe_pair(const char *first, const char *second) const {
  if (cpu_for(0) < 0) return "threads not pinned";
  return std::string(first) + " thread on cpu " + std::to_string(cpu_for(0)) + ", " + second +
         " thread on cpu " + std::to_string(cpu_for(1));
}

bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) errno = rc;
  return rc == 0;
}

void run_threads(const char *what, const std::vector<std::function<void()>> &tasks,
                 const std::vector<int> &cpus, double limit_seconds) {
  static std::atomic<bool> pin_warning_given{false};
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t finished = 0;

  std::vector<std::thread> threads;
  threads.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const int cpu = i < cpus.size() ? cpus[i] : -1;
    threads.emplace_back([&, i, cpu] {
      if (cpu >= 0 && !pin_this_thread(cpu) && !pin_warning_given.exchange(true)) {
        char reason[128];
        std::fprintf(stderr,
                     "rocl-bench: warning: cannot pin a thread to cpu %d (%s); running unpinned\n",
                     cpu, strerror_r(errno, reason, sizeof reason));
      }
      tasks[i]();
      std::lock_guard lock(mutex);
      ++finished;
      all_done.notify_one();
    });
  }

  std::unique_lock lock(mutex);
  const auto limit = std::chrono::duration<double>(limit_seconds);
  if (!all_done.wait_for(lock, limit, [&] { return finished == tasks.size(); })) {
    die("%s: %zu of %zu threads did not finish within %.0f s (a lost message or a stuck "
        "receive?)",
        what, tasks.size() - finished, tasks.size(), limit_seconds);
  }
  lock.unlock();
  for (auto &t : threads) t.join();
}

}  // namespace rocl_bench
