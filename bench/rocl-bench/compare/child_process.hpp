// child_process.hpp - running the benchmark programs: each in a process
// group of its own, its output in a log file, under a time limit, and
// stopped with everything it started when the limit passes or the user
// interrupts compare.
//
// Why a process group per program: launchers (mpirun, mpiexec, roclrun,
// ucx_perftest's pair) start processes of their own; a signal to the group
// reaches them all. Stopping is SIGTERM to the group (roclrun and mpirun
// then stop their jobs themselves), then SIGKILL after a grace period.
// After a program exits, whatever of its group is left is killed too.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace rocl_bench::compare {

struct Invocation {
  std::vector<std::string> argv;                         // argv[0]: a path or a name in PATH
  std::vector<std::pair<std::string, std::string>> env;  // set on top of our environment
  std::string log;                                       // stdout and stderr go here
  double timeout_seconds = 120;
};

struct ChildResult {
  bool started = false;
  int status = 0;  // wait status
  bool timed_out = false;
  bool interrupted = false;
  std::string error;  // why it could not start
  double seconds = 0;
  // Exited with status 0.
  bool ok() const;
  // "exit status 3", "killed by signal 9", "timed out after 60 s", ...
  std::string describe() const;
};

// A started program. The destructor stops it if it still runs.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  ~ChildProcess();

  // Starts inv (its timeout is for wait()). False with result().error set
  // if it could not (program not found, log not writable, fork failed).
  bool start(const Invocation &inv);

  // Waits until it exits, its timeout passes or compare is interrupted
  // (then stops it); returns how it ended.
  const ChildResult &wait();

  // Whether it has exited (without waiting).
  bool exited();

  // Stops it now (SIGTERM to its group, SIGKILL after the grace period).
  void stop();

  const ChildResult &result() const { return result_; }

 private:
  // Stops what is left of the program's group (SIGTERM, then SIGKILL after
  // the grace period) and reaps the leader if it has not been.
  void reap_group();
  // Reaps what can be reaped; whether any process of the group is left.
  bool group_alive();
  pid_t pid_ = -1;
  bool leader_done_ = false;
  double started_at_ = 0;
  double timeout_ = 0;
  ChildResult result_;
};

// Runs inv to its end: start() + wait().
ChildResult run_child(const Invocation &inv);

// The full path of `name` if it is an executable in PATH (or a path to an
// executable), else "".
std::string find_program(const std::string &name);

// SIGINT, SIGTERM and SIGHUP set a flag instead of ending compare, so that
// the running program is stopped first; interrupted() reads it. Also makes
// this process the subreaper of what its programs leave behind.
void catch_interrupts();
bool interrupted();

// The whole file (empty if it cannot be read).
std::string read_file(const std::string &path);

// Seconds since some fixed point (CLOCK_MONOTONIC).
double monotonic_seconds();

}  // namespace rocl_bench::compare
