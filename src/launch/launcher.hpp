// launcher.hpp - roclrun's engine: starts the N processes of a job on this
// machine, gives each its rank, the job's secret and the directory's
// address, merges their output, and ends the job as a whole.
//
// One job = one private folder /tmp/rocl-<uid>/job-<pid>-<random> (0700)
// holding the job secret file `secret` (0600) and the job's sockets. Each
// rank runs `argv` (execvp) in a process group of its own, with
//   ROCL_RANK=i  ROCL_SIZE=N  ROCL_JOB_DIR=<folder>
//   ROCL_SECRET_FILE=<folder>/secret  ROCL_DIRECTORY=unix:<folder>/dir.sock
// The secret itself is never in argv or in the environment.
//
// Ending: the first rank that fails (status != 0, or killed) stops the job:
// every other rank's process group gets SIGTERM, then SIGKILL after
// grace_ms. SIGINT/SIGTERM/SIGHUP to the launcher do the same (a second one
// goes straight to SIGKILL). The folder is removed on every exit path; the
// folders of launchers that died without cleaning up are removed at start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launch/hosts.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl {

// What a job service (e.g. the node directory server) needs to know.
struct JobInfo {
  int size = 0;                       // number of ranks
  std::string job_dir;                // private folder, 0700
  std::string secret_file;            // job_dir + "/secret", 0600
  std::string directory_socket;       // job_dir + "/dir.sock" (not created yet)
  std::string directory_address;      // "unix:" + directory_socket (ROCL_DIRECTORY)
  const JobSecret *secret = nullptr;  // valid from start() until stop() returns
  int grace_ms = 2000;                // SIGTERM -> SIGKILL delay when stopping
};

// Something the launcher runs for the job's lifetime, in its own process:
// start() after the folder and secret exist and before any rank starts
// (returns ROCL_OK, or a negative code after fail(): the job does not
// start); stop() after every rank has ended, before the folder is removed.
// start() must not block: a service runs on its own threads.
struct JobServices {
  virtual ~JobServices() = default;
  virtual int start(const JobInfo &job) = 0;
  virtual void stop() = 0;
};

struct LaunchOptions {
  int nprocs = 0;                 // 1..kMaxProcs
  std::vector<std::string> argv;  // program (looked up in PATH) and arguments
  bool prefix_output = true;      // false: ranks inherit stdout/stderr
  bool bind_to_core = false;      // rank i pinned to the (i mod n)-th allowed cpu
  int grace_ms = 2000;            // SIGTERM -> SIGKILL delay
  double timeout_s = 0;           // > 0: stop everything after it, exit 124
  std::string tmp_root = "/tmp";  // where rocl-<uid>/ lives
  JobServices *services = nullptr;
  // A job on several hosts (hosts.hpp); empty: every rank on this machine.
  // Each host runs the job's own directory server and its ranks through
  // roclrun's agent (`agent`: the roclrun binary as the hosts run it),
  // reached through `shell`; the servers find each other on UDP port
  // peer_port (0: one picked from the job's name). Output lines are
  // prefixed [host:rank].
  std::vector<HostSlots> hosts;
  const RemoteShell *shell = nullptr;
  std::string agent;
  std::uint16_t peer_port = 0;
  int out_fd = 1;  // where prefixed stdout lines go
  int err_fd = 2;  // prefixed stderr lines and the launcher's own messages

  static constexpr int kMaxProcs = 1024;
};

class Launcher {
 public:
  explicit Launcher(LaunchOptions options);
  // Runs the job to its end. Exit code: 0 if every rank exited 0; else the
  // first failure's status (128+S for a rank killed by signal S), 124 on
  // timeout, 128+S when the launcher got signal S, 127 (126) when the
  // program cannot be found (run), 1 when the job cannot be set up.
  // Installs signal handlers for its duration: one run() at a time per process.
  int run();

 private:
  LaunchOptions opt_;
};

// Pieces of run(), public for the tests.

// <tmp_root>/rocl-<uid>, made 0700 if missing; refused (fail()) when it is
// not a directory of ours closed to others. ROCL_OK or a negative code.
int make_user_dir(const std::string &tmp_root, std::string *out);
// A new <user_dir>/job-<pid>-<random> (0700). ROCL_OK or a negative code.
int make_job_dir(const std::string &user_dir, std::string *out);
// Removes <user_dir>/job-<pid>-* whose pid no longer runs. Returns how many.
int clean_stale_job_dirs(const std::string &user_dir);
// Removes a job folder and everything in it (quietly).
void remove_job_dir(const std::string &dir);

}  // namespace rocl::impl
