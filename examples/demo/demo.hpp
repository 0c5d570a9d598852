// demo.hpp - rocl-demo's parts. Under roclrun (`roclrun -n 2 rocl-demo`)
// every process of the job starts worker threads; alone, one process does.
// Every worker is a rocl resource; the workers find each other through the
// directory, pass a token round a ring, play ping-pong (between processes,
// then inside one) and stream small messages; rank 0 tells the story and
// ends it with a table of figures.
//
//   util.cpp    formatting, errors, receives with a timeout, options in force
//   job.cpp     the processes: each main thread's resource, finding the
//               others, a barrier and a gather between processes
//   worker.cpp  what a worker thread does in each phase
//   story.cpp   the phases as rank 0 tells them, and the table of figures
//   main.cpp    the command line, the introduction, the threads
#pragma once

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "rocl/rocl.hpp"

namespace demo {

using Clock = std::chrono::steady_clock;

// Every receive waits at most this long: a lost message ends the demo with
// an error naming who waited for what, instead of a hang.
inline constexpr std::chrono::milliseconds kReceiveTimeout{5000};   // between workers
inline constexpr std::chrono::milliseconds kControlTimeout{10000};  // between main threads
// A process still running after this long ends with an error naming the
// phase under way (a last resort: something inside rocl did not return).
inline constexpr std::chrono::seconds kWatchdog{45};
inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kPingSizes[] = {8, 4096, 64 * 1024, kMiB};
inline constexpr int kRateBatch = 64;

// Worker tags (main threads use their own, in job.cpp).
inline constexpr int kTagToken = 1;
inline constexpr int kTagPing = 2;
inline constexpr int kTagStop = 3;
inline constexpr int kTagRate = 4;
inline constexpr int kTagRateLast = 5;  // a worker's last message of the rate phase

// From the command line.
struct Settings {
  int threads = 0;  // worker threads per process
  bool quick = false;
  long ring_laps = 1000;       // the ring stops after this many laps...
  double ring_seconds = 1.0;   // ...or this long, whichever comes first
  double ping_seconds = 0.25;  // timed part of each ping-pong size
  double rate_seconds = 0.5;
};

// ---- util.cpp ----
// Who this process is, for error messages ("rank 1" or "" when alone).
void set_process_label(std::string label);
// Ends the demo (exit status 1) with "rocl-demo: error in <who>: <why>".
// _Exit: other threads may be inside rocl or waiting at a barrier.
[[noreturn]] void fail(const std::string &who, const std::string &why);
// fail() with a rocl::Error's sentence and code name.
[[noreturn]] void fail(const std::string &who, const rocl::Error &e);
// me->recv with a timeout; fail()s naming `who` and `what` when nothing comes.
rocl::Message receive(rocl::Resource &me, rocl::gid_t from, int tag,
                      std::chrono::milliseconds timeout, const std::string &who,
                      const std::string &what);
double seconds_since(Clock::time_point start);
std::string hex(rocl::gid_t gid);
std::string number(double v);              // three significant digits: "0.415", "38.2", "1234"
std::string per_second(double v);          // with a k or M prefix: "38.2 k", "3.47 M"
std::string size_text(std::size_t bytes);  // "8 B", "4 KiB", "1 MiB"
std::string seconds_text(double seconds);  // "0.5 s"
// The value in force of a ROCL_* option (as rocl_print_options shows it).
std::string option_in_force(const char *name);
// The transports this process's context enabled, in preference order
// ("inproc,shm,tcp"): its "addr.<name>" attributes in the directory.
std::string enabled_transports();
int usable_cpus();  // sched_getaffinity's count
double memcpy_gb_per_s();

// ---- job.cpp ----
// The processes of the job, seen from one of them. Each main thread
// registers {type=demo-main, rank=R, pid=..., transports=...} and finds the
// others' the same way the workers find each other. Alone: size 1.
class Job {
 public:
  struct Process {
    int rank = 0;
    long pid = 0;
    rocl::gid_t main = ROCL_NULL_GID;     // its main thread's resource
    rocl::gid_t context = ROCL_NULL_GID;  // its rocl context
    std::string transports;               // "inproc,shm,tcp"
  };

  Job(int rank, int size);
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::vector<Process> &processes() const { return processes_; }
  // Seconds the main threads took to find each other.
  double discovery_seconds() const { return discovery_seconds_; }

  // Returns once every process has called it.
  void barrier();
  // Rank 0 gets every rank's text (its own first); the others get {}.
  std::vector<std::string> gather(const std::string &text);
  // The last word: rank 0 lets the others go; they wait for it.
  void finish();

 private:
  int rank_, size_;
  std::string who_;
  rocl::Resource me_;
  std::vector<Process> processes_;
  double discovery_seconds_ = 0;
};

// The transport rank 0's context picks to reach rank 1's: the first one
// of ROCL_TRANSPORTS (auto: inproc, shm, tcp) other than inproc that both
// enabled, as src/core's route lookup does. "" when none.
std::string transport_between(const Job &job);

// ---- worker.cpp ----
struct PingResult {
  std::size_t size = 0;
  long round_trips = 0;
  double one_way_us = 0;
};

enum class Phase { find_others, ring, ping_between, ping_inside, rate };

// What a process's workers and its main thread share. The workers write
// their lines and figures during a phase; main reads them after it (the
// barrier orders the two).
struct Shared {
  Shared(const Settings &set, const Job &job);

  const Settings settings;
  const int rank, processes, threads;
  std::vector<Phase> phases;       // what the workers run, in order
  std::barrier<> sync;             // workers + main: start and end of a phase
  std::vector<std::string> lines;  // one line per worker per phase
  std::string extra_line;          // rank 0's worker 0: one more query
  std::vector<double> query_us;    // each worker's discovery query
  std::atomic<bool> stop_rate{false};
  std::atomic<const char *> now{"start-up"};  // the phase under way (a literal)

  long ring_hops = 0, ring_crossings = 0, ring_laps = 0;
  double ring_seconds = 0;
  std::vector<PingResult> between, inside;  // ping-pong, rank 0's worker 0
  std::vector<long> received;               // rate phase, per worker
  std::vector<double> busy;
};

// A fun name for worker `thread` of process `rank`: ada, alan, grace, ...
std::string worker_name(int rank, int thread, int threads);

// Runs the life of worker `thread` of this process (the body of its thread).
void run_worker(Shared &s, int thread);

// ---- story.cpp ----
// The main thread's part of every phase, in step with the workers and the
// other processes; rank 0 prints the story and, at the end, the table.
void tell_story(Shared &s, Job &job);

}  // namespace demo
