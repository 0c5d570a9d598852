// threads.hpp - where benchmark threads run: the usable cpus, pinning, and
// running a set of threads with a watchdog.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace rocl_bench {

// The cpus this process may run on (sched_getaffinity), ascending.
std::vector<int> usable_cpus();

// Where the threads of a benchmark go. Threads come in pairs (sender or
// ping side in slot 2k, receiver or echo side in slot 2k+1); pinning puts
// the two threads of a pair on different cpus.
struct Placement {
  bool pin = false;
  std::vector<int> cpus;  // usable cpus

  // The cpu of thread slot `slot`, or -1 when not pinning.
  int cpu_for(int slot) const {
    if (!pin || cpus.empty()) return -1;
    return cpus[static_cast<std::size_t>(slot) % cpus.size()];
  }
  // "ping thread on cpu 0, echo thread on cpu 1" or "threads not pinned".
  std::string describe_pair(const char *first, const char *second) const;
};

// Pins the calling thread to one cpu. False (errno set) if the kernel refused.
bool pin_this_thread(int cpu);

// Runs every task on its own thread, task i pinned to cpus[i] when that is
// >= 0 (a failed pin is reported once on stderr and the thread runs
// unpinned), and waits for all of them. If they have not all finished within
// limit_seconds the process dies naming `what`: a lost message must end a
// benchmark with an error, not hang it.
void run_threads(const char *what, const std::vector<std::function<void()>> &tasks,
                 const std::vector<int> &cpus, double limit_seconds);

}  // namespace rocl_bench
