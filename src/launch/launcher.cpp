// launcher.cpp - see launcher.hpp.
//
// One thread, one poll() loop: the ranks' output pipes plus a self-pipe that
// the signal handlers (SIGCHLD, SIGINT, SIGTERM, SIGHUP) write to. Nothing
// but write() happens in a handler.
#include "launch/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "launch/hosts.hpp"
#include "launch/output_prefixer.hpp"
#include "status/status.hpp"

extern char **environ;

namespace rocl::impl {
namespace {

// The rank-th cpu (round robin) of those this process may run on.
bool core_for(int rank, cpu_set_t *out) {
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  const int n = CPU_COUNT(&allowed);
  if (n == 0) return false;
  int want = rank % n;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || want-- != 0) continue;
    CPU_ZERO(out);
    CPU_SET(cpu, out);
    return true;
  }
  return false;
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- signals -------------------------------------------------------------

int g_wake_fd = -1;  // write end of the self-pipe, for the handlers

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  if (::write(g_wake_fd, &b, 1) < 0) {
    // pipe full: a wake-up is pending anyway
  }
  errno = saved;
}

constexpr int kSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE};

// Installs the handlers (SIGPIPE ignored: a closed stdout must not kill the
// launcher) and puts the old ones back when it goes.
class SignalScope {
 public:
  int install() {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      return fail(ROCL_EINTERNAL, "roclrun: pipe: %s", std::strerror(errno));
    }
    g_wake_fd = pipe_[1];
    for (std::size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction sa {};
      sa.sa_handler = kSignals[i] == SIGPIPE ? SIG_IGN : on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART | (kSignals[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
      ::sigaction(kSignals[i], &sa, &old_[i]);
    }
    installed_ = true;
    return ROCL_OK;
  }
  // In a forked child before exec: the dispositions the launcher found.
  void restore_in_child() const {
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
      ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  int read_fd() const { return pipe_[0]; }
  ~SignalScope() {
    if (installed_) {
      for (std::size_t i = 0; i < std::size(kSignals); ++i)
        ::sigaction(kSignals[i], &old_[i], nullptr);
      g_wake_fd = -1;
    }
    if (pipe_[0] >= 0) ::close(pipe_[0]);
    if (pipe_[1] >= 0) ::close(pipe_[1]);
  }

 private:
  int pipe_[2] = {-1, -1};
  struct sigaction old_[std::size(kSignals)]{};
  bool installed_ = false;
};

// ---- small helpers -------------------------------------------------------

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n > 0) {
      s.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {  // a non-blocking stdout: wait for room
      struct pollfd p {
        fd, POLLOUT, 0
      };
      ::poll(&p, 1, 100);
    } else {
      return;  // EPIPE and the like: the output is lost, the job goes on
    }
  }
}

void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say(int fd, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::string line = "roclrun: ";
  line += buf;
  line += '\n';
  write_all(fd, line);
}

std::string random_hex(std::size_t bytes) {
  unsigned char b[16] = {};
  bytes = std::min(bytes, sizeof b);
  if (::getrandom(b, bytes, 0) != static_cast<ssize_t>(bytes)) {
    // fall back on something that differs between calls
    const auto t = Clock::now().time_since_epoch().count();
    std::memcpy(b, &t, std::min(bytes, sizeof t));
  }
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < bytes; ++i) {
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

std::string describe_status(int status) {
  char buf[128];
  if (WIFSIGNALED(status)) {
    std::snprintf(buf, sizeof buf, "was killed by signal %d (%s)", WTERMSIG(status),
                  ::strsignal(WTERMSIG(status)));
  } else {
    std::snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(status));
  }
  return buf;
}

// Shell convention: exit status, or 128 + the signal that killed it.
int exit_code_of(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

const char *signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

// ---- the job -------------------------------------------------------------

constexpr int kReadChunk = 64 * 1024;
constexpr milliseconds kDrainWait{200};  // after the last rank: pipes still open?

struct Stream {
  int fd = -1;    // read end of the rank's pipe, -1 once closed
  int dest = -1;  // where its prefixed lines go
  std::optional<OutputPrefixer> prefixer;
};

// What to start: a rank, or a helper of the job (a host's directory
// server on a job of several hosts), which runs until the ranks are done.
struct ProcSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string label;        // "3", "h2:3", "h2:dir": the output prefix
  bool helper = false;      // not a rank: stopped by closing its stdin
  bool stdin_pipe = false;  // stdin is a pipe from the launcher (hosts)
  std::string stdin_first;  // written to it first (a helper's secret line)
};

struct Rank {
  pid_t pid = -1;  // also its process group
  bool running = false;
  bool helper = false;
  std::string label;
  int stdin_fd = -1;  // write end of its stdin pipe, -1 if none or closed
  Stream out, err;
};

class Job {
 public:
  Job(const LaunchOptions &opt, SignalScope &sigs) : opt_(opt), sigs_(sigs) {}

  // Starts specs in order (helpers first) and runs the job to its end.
  int run(const std::vector<ProcSpec> &specs);

 private:
  int spawn(std::size_t slot, const ProcSpec &spec);
  bool any_rank_running() const;
  void release_helpers();
  void pump_output(const std::vector<pollfd> &fds, const std::vector<Stream *> &slots);
  void kill_groups(int sig);
  void read_stream(Stream &s);
  void close_stream(Stream &s);
  void reap();
  void stop_all(int sig);
  void begin_stop(int code);
  void handle_signals();
  bool any_running() const;
  bool any_open() const;

  const LaunchOptions &opt_;
  SignalScope &sigs_;
  std::vector<Rank> ranks_;
  int exit_code_ = 0;
  bool stopping_ = false;  // SIGTERM sent
  bool killed_ = false;    // SIGKILL sent
  Clock::time_point kill_at_{};
  std::vector<char> buf_ = std::vector<char>(kReadChunk);
};

bool Job::any_running() const {
  for (const Rank &r : ranks_)
    if (r.running) return true;
  return false;
}

bool Job::any_rank_running() const {
  for (const Rank &r : ranks_)
    if (r.running && !r.helper) return true;
  return false;
}

// The ranks are done: helpers see their stdin close and stop.
void Job::release_helpers() {
  for (Rank &r : ranks_) {
    if (r.stdin_fd >= 0) {
      ::close(r.stdin_fd);
      r.stdin_fd = -1;
    }
  }
}

bool Job::any_open() const {
  for (const Rank &r : ranks_)
    if (r.out.fd >= 0 || r.err.fd >= 0) return true;
  return false;
}

// Environment of a rank: the launcher's minus any stale ROCL_ job variable.
std::vector<std::string> rank_environment(int rank, const JobInfo &info) {
  static const char *const kOwn[] = {
      "ROCL_RANK=", "ROCL_SIZE=", "ROCL_JOB_DIR=", "ROCL_SECRET_FILE=", "ROCL_DIRECTORY="};
  std::vector<std::string> env;
  for (char **e = environ; e && *e; ++e) {
    bool own = false;
    for (const char *k : kOwn) own = own || std::strncmp(*e, k, std::strlen(k)) == 0;
    if (!own) env.emplace_back(*e);
  }
  env.push_back("ROCL_RANK=" + std::to_string(rank));
  env.push_back("ROCL_SIZE=" + std::to_string(info.size));
  env.push_back("ROCL_JOB_DIR=" + info.job_dir);
  env.push_back("ROCL_SECRET_FILE=" + info.secret_file);
  env.push_back("ROCL_DIRECTORY=" + info.directory_address);
  return env;
}

// The launcher's environment without the job variables of a job it may
// itself run in.
std::vector<std::string> plain_environment() {
  static const char *const kOwn[] = {"ROCL_RANK=",        "ROCL_SIZE=",      "ROCL_JOB_DIR=",
                                     "ROCL_SECRET_FILE=", "ROCL_DIRECTORY=", "ROCL_HOST_NAME="};
  std::vector<std::string> env;
  for (char **e = environ; e && *e; ++e) {
    bool own = false;
    for (const char *k : kOwn) own = own || std::strncmp(*e, k, std::strlen(k)) == 0;
    if (!own) env.emplace_back(*e);
  }
  return env;
}

// The processes of a job on several hosts (opt.hosts, through opt.shell):
// per host the job's directory server (roclrun's agent, server id = the
// host's index + 1, so no two hosts of the job issue the same gid), then
// every rank, each started by an agent on its host. Agents stop what they
// started when their stdin closes (the launcher ended, or the connection
// to the host broke). A directory agent gets the job secret as the first
// line of its stdin: never on a command line.
std::vector<ProcSpec> host_specs(const LaunchOptions &opt, const JobInfo &info,
                                 const std::string &job) {
  std::string secret_hex;
  {
    std::FILE *f = std::fopen(info.secret_file.c_str(), "r");
    char buf[80] = {};
    if (f != nullptr) {
      if (std::fgets(buf, sizeof buf, f) != nullptr) secret_hex = buf;
      std::fclose(f);
    }
  }
  while (!secret_hex.empty() && (secret_hex.back() == '\n' || secret_hex.back() == ' ')) {
    secret_hex.pop_back();
  }
  std::uint16_t port = opt.peer_port;
  if (port == 0) {
    std::uint32_t h = 2166136261u;
    for (char c : job) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    port = static_cast<std::uint16_t>(40000 + h % 20000);
  }
  std::vector<std::string> forwarded;  // ROCL_* options, for hosts ssh reaches
  for (const std::string &e : plain_environment()) {
    if (e.rfind("ROCL_", 0) == 0) forwarded.push_back(e);
  }
  const std::vector<std::string> env = plain_environment();
  std::vector<ProcSpec> specs;
  for (std::size_t h = 0; h < opt.hosts.size(); ++h) {
    const std::string &host = opt.hosts[h].name;
    ProcSpec dir;
    std::vector<std::string> agent = {opt.agent,
                                      "--agent",
                                      "directory",
                                      "--job",
                                      job,
                                      "--host",
                                      host,
                                      "--server-id",
                                      std::to_string(h + 1),
                                      "--peer-port",
                                      std::to_string(port)};
    if (const char *bits = std::getenv("ROCL_GID_BITS"); bits != nullptr && *bits != '\0') {
      agent.push_back("--gid-bits");  // as every server of the job must be
      agent.push_back(bits);
    }
    dir.argv = opt.shell->wrap(host, agent);
    dir.env = env;
    dir.label = host + ":dir";
    dir.helper = true;
    dir.stdin_pipe = true;
    dir.stdin_first = secret_hex + "\n";
    specs.push_back(std::move(dir));
  }
  const std::vector<int> where = place_ranks(opt.hosts, opt.nprocs);
  for (int r = 0; r < opt.nprocs; ++r) {
    const std::string &host =
        opt.hosts[static_cast<std::size_t>(where[static_cast<std::size_t>(r)])].name;
    std::vector<std::string> agent = {opt.agent,
                                      "--agent",
                                      "rank",
                                      "--job",
                                      job,
                                      "--host",
                                      host,
                                      "--rank",
                                      std::to_string(r),
                                      "--size",
                                      std::to_string(opt.nprocs)};
    for (const std::string &e : forwarded) {
      agent.push_back("--env");
      agent.push_back(e);
    }
    agent.push_back("--");
    agent.insert(agent.end(), opt.argv.begin(), opt.argv.end());
    ProcSpec rank;
    rank.argv = opt.shell->wrap(host, agent);
    rank.env = env;
    rank.label = host + ":" + std::to_string(r);
    rank.stdin_pipe = true;
    specs.push_back(std::move(rank));
  }
  return specs;
}

// Forks and execs one process (slot: its index in ranks_). ROCL_OK, or the
// exit code to end with (127/126) when the program cannot run (the child
// reports exec's errno through a close-on-exec pipe: EOF means exec worked).
int Job::spawn(std::size_t slot, const ProcSpec &spec) {
  std::vector<std::string> env = spec.env;
  std::vector<char *> envp, argv;
  for (std::string &s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (std::string &s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int status_pipe[2], out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {status_pipe[0], status_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0],
                   err_pipe[1], in_pipe[0], in_pipe[1]})
      if (fd >= 0) ::close(fd);
  };
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    say(opt_.err_fd, "pipe: %s", std::strerror(errno));
    return 1;
  }
  if ((opt_.prefix_output &&
       (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) ||
      (spec.stdin_pipe && ::pipe2(in_pipe, O_CLOEXEC) != 0)) {
    say(opt_.err_fd, "pipe: %s (too many ranks for the open-file limit?)", std::strerror(errno));
    close_all();
    return 1;
  }
  // stdin: rank 0 gets the launcher's unless it is a terminal (a rank in a
  // background process group reading the terminal would be stopped).
  const bool give_stdin = slot == 0 && !spec.stdin_pipe && !spec.helper && !::isatty(0);
  // --bind-to core: rank i on the i-th cpu we may use (round robin),
  // chosen here because the child may only make async-signal-safe calls.
  cpu_set_t bind;
  const bool binding = opt_.bind_to_core && core_for(static_cast<int>(slot), &bind);

  const pid_t pid = ::fork();
  if (pid < 0) {
    say(opt_.err_fd, "fork: %s", std::strerror(errno));
    close_all();
    return 1;
  }
  if (pid == 0) {  // child: async-signal-safe calls only
    ::setpgid(0, 0);
    if (binding) ::sched_setaffinity(0, sizeof bind, &bind);
    sigs_.restore_in_child();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (opt_.prefix_output) {
      ::dup2(out_pipe[1], 1);
      ::dup2(err_pipe[1], 2);
    }
    if (spec.stdin_pipe) {
      ::dup2(in_pipe[0], 0);
    } else if (!give_stdin) {
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0 && devnull != 0) {
        ::dup2(devnull, 0);
        ::close(devnull);
      }
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    if (::write(status_pipe[1], &err, sizeof err) < 0) {
      // nothing more to do
    }
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with a stop_all() right after
  ::close(status_pipe[1]);
  Rank &r = ranks_[slot];
  r.pid = pid;
  r.running = true;
  r.helper = spec.helper;
  r.label = spec.label;
  if (spec.stdin_pipe) {
    ::close(in_pipe[0]);
    r.stdin_fd = in_pipe[1];
    // A line far below the pipe's capacity: never blocks.
    if (!spec.stdin_first.empty()) write_all(r.stdin_fd, spec.stdin_first);
  }
  if (opt_.prefix_output) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    const std::string prefix = "[" + spec.label + "] ";
    r.out = {out_pipe[0], opt_.out_fd, OutputPrefixer(prefix)};
    r.err = {err_pipe[0], opt_.err_fd, OutputPrefixer(prefix)};
  }
  int err = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    say(opt_.err_fd, "cannot run '%s': %s", spec.argv[0].c_str(), std::strerror(err));
    return err == ENOENT || err == ENOTDIR ? 127 : 126;
  }
  return ROCL_OK;
}

void Job::close_stream(Stream &s) {
  if (s.fd < 0) return;
  std::string out;
  s.prefixer->flush(&out);
  write_all(s.dest, out);
  ::close(s.fd);
  s.fd = -1;
}

void Job::read_stream(Stream &s) {
  const ssize_t n = ::read(s.fd, buf_.data(), buf_.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close_stream(s);
    return;
  }
  std::string out;
  s.prefixer->feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)), &out);
  write_all(s.dest, out);
}

// slots[i]: the stream polled by fds[i] (nullptr for the signal pipe).
void Job::pump_output(const std::vector<pollfd> &fds, const std::vector<Stream *> &slots) {
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0 && slots[i] != nullptr) read_stream(*slots[i]);
  }
}

// Every started rank's process group, running or not (what a rank started
// may outlive it).
void Job::kill_groups(int sig) {
  for (const Rank &r : ranks_)
    if (r.pid > 0) ::kill(-r.pid, sig);
}

// Sends sig to every rank's process group (the rank and what it started).
void Job::stop_all(int sig) {
  for (const Rank &r : ranks_)
    if (r.running && r.pid > 0) ::kill(-r.pid, sig);
}

// First reason to end the job: it decides the exit code.
void Job::begin_stop(int code) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = code;
  stop_all(SIGTERM);
  kill_at_ = Clock::now() + milliseconds(opt_.grace_ms);
}

void Job::reap() {
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    Rank &r = ranks_[i];
    if (!r.running) continue;
    int status = 0;
    const pid_t p = ::waitpid(r.pid, &status, WNOHANG);
    if (p == 0 || (p < 0 && errno == EINTR)) continue;
    r.running = false;
    if (p < 0) continue;  // not ours any more (ECHILD): nothing to report
    if (r.helper && !stopping_ && any_rank_running()) {
      say(opt_.err_fd, "%s (pid %d) %s before the ranks were done; stopping them", r.label.c_str(),
          static_cast<int>(r.pid), describe_status(status).c_str());
      begin_stop(status != 0 ? exit_code_of(status) : 1);
    } else if (!r.helper && status != 0 && !stopping_) {
      say(opt_.err_fd, "rank %s (pid %d) %s%s", r.label.c_str(), static_cast<int>(r.pid),
          describe_status(status).c_str(), any_running() ? "; stopping the others" : "");
      begin_stop(exit_code_of(status));
    }
  }
}

void Job::handle_signals() {
  unsigned char sigs[64];
  ssize_t n;
  while ((n = ::read(sigs_.read_fd(), sigs, sizeof sigs)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      const int sig = sigs[i];
      if (sig == SIGCHLD) continue;  // reap() runs every turn
      if (!stopping_) {
        say(opt_.err_fd, "got %s; stopping all ranks", signal_name(sig));
        begin_stop(128 + sig);
      } else if (!killed_) {  // asked twice: no more patience
        stop_all(SIGKILL);
        killed_ = true;
      }
    }
  }
}

int Job::run(const std::vector<ProcSpec> &specs) {
  ranks_.resize(specs.size());
  for (std::size_t i = 0; i < specs.size() && !stopping_; ++i) {
    const int rc = spawn(i, specs[i]);
    if (rc != ROCL_OK) {
      ranks_.resize(i + (ranks_[i].pid > 0));
      begin_stop(rc);
      break;
    }
    handle_signals();
  }

  const auto start = Clock::now();
  const bool timed = opt_.timeout_s > 0;
  const auto timeout_at = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(opt_.timeout_s));
  std::optional<Clock::time_point> drain_until;    // set once every rank ended
  std::optional<Clock::time_point> helpers_until;  // set once the ranks are done
  bool stragglers_killed = false;

  std::vector<pollfd> fds;
  std::vector<Stream *> slots;
  for (;;) {
    reap();
    const auto now = Clock::now();
    if (timed && !stopping_ && now >= timeout_at) {
      say(opt_.err_fd, "timeout after %g s; stopping all ranks", opt_.timeout_s);
      begin_stop(124);
    }
    if (stopping_ && !killed_ && now >= kill_at_) {
      stop_all(SIGKILL);
      killed_ = true;
    }
    if (!helpers_until && !any_rank_running()) {
      release_helpers();
      helpers_until = now + milliseconds(opt_.grace_ms);
    }
    if (helpers_until && !killed_ && now >= *helpers_until && any_running()) {
      stop_all(SIGKILL);  // a helper that did not stop when its stdin closed
      killed_ = true;
    }
    if (!any_running()) {
      if (!any_open()) break;
      // Output still open: processes a rank left behind hold its pipe. Give
      // them a moment, then kill what is left of the ranks' groups.
      if (!drain_until) drain_until = now + kDrainWait;
      if (now >= *drain_until) {
        if (stragglers_killed) break;
        kill_groups(SIGKILL);
        stragglers_killed = true;
        drain_until = now + kDrainWait;
      }
    }

    // Wake up at the next deadline, if any.
    std::optional<Clock::time_point> next;
    auto consider = [&](Clock::time_point t) {
      if (!next || t < *next) next = t;
    };
    if (timed && !stopping_) consider(timeout_at);
    if (stopping_ && !killed_) consider(kill_at_);
    if (helpers_until && !killed_) consider(*helpers_until);
    if (drain_until) consider(*drain_until);
    int wait_ms = -1;
    if (next) {
      const auto ms = std::chrono::ceil<milliseconds>(*next - now).count();
      wait_ms = static_cast<int>(std::clamp<long long>(ms, 0, 60'000));
    }

    fds.clear();
    slots.clear();
    fds.push_back({sigs_.read_fd(), POLLIN, 0});
    slots.push_back(nullptr);
    for (Rank &r : ranks_) {
      for (Stream *s : {&r.out, &r.err}) {
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLIN, 0});
        slots.push_back(s);
      }
    }
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) {
      say(opt_.err_fd, "poll: %s", std::strerror(errno));
      begin_stop(1);
      continue;
    }
    if (n > 0) pump_output(fds, slots);
    handle_signals();
  }
  for (Rank &r : ranks_) {  // whatever is left (only after the break above)
    close_stream(r.out);
    close_stream(r.err);
  }
  release_helpers();
  // A stopped job goes as a whole, including what its ranks started.
  if (stopping_) kill_groups(SIGKILL);
  return exit_code_;
}

// Raises the soft open-file limit to fit N ranks' pipes (2 per rank), never
// above the hard limit. The ranks inherit the raised soft limit.
void raise_fd_limit(int nprocs) {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = 2 * static_cast<rlim_t>(nprocs) + 64;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

// ---- job folder ------------------------------------------------------------

int make_user_dir(const std::string &tmp_root, std::string *out) {
  const std::string dir = tmp_root + "/rocl-" + std::to_string(::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail(ROCL_EINVAL, "roclrun: cannot make '%s': %s", dir.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return fail(ROCL_EINVAL, "roclrun: '%s': %s", dir.c_str(), std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
    return fail(ROCL_EINVAL,
                "roclrun: '%s' is not a private directory of this user (mode %03o, owner %u): "
                "refusing to put job secrets there",
                dir.c_str(), static_cast<unsigned>(st.st_mode & 0777),
                static_cast<unsigned>(st.st_uid));
  }
  *out = dir;
  return ROCL_OK;
}

int make_job_dir(const std::string &user_dir, std::string *out) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string dir = user_dir + "/job-" + std::to_string(::getpid()) + "-" + random_hex(6);
    if (::mkdir(dir.c_str(), 0700) == 0) {
      *out = dir;
      return ROCL_OK;
    }
    if (errno != EEXIST) {
      return fail(ROCL_EINVAL, "roclrun: cannot make '%s': %s", dir.c_str(), std::strerror(errno));
    }
  }
  return fail(ROCL_EINTERNAL, "roclrun: no free job folder name in '%s'", user_dir.c_str());
}

int clean_stale_job_dirs(const std::string &user_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(user_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("job-", 0) != 0) continue;
    char *rest = nullptr;
    const long pid = std::strtol(name.c_str() + 4, &rest, 10);
    if (pid <= 0 || rest == name.c_str() + 4 || *rest != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

void remove_job_dir(const std::string &dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// ---- Launcher ----------------------------------------------------------------

Launcher::Launcher(LaunchOptions options) : opt_(std::move(options)) {}

int Launcher::run() {
  if (opt_.nprocs < 1 || opt_.nprocs > LaunchOptions::kMaxProcs || opt_.argv.empty()) {
    say(opt_.err_fd, "need 1 to %d processes and a program", LaunchOptions::kMaxProcs);
    return 2;
  }
  SignalScope sigs;
  if (sigs.install() != ROCL_OK) {
    write_all(opt_.err_fd, std::string(last_error()) + "\n");
    return 1;
  }
  raise_fd_limit(opt_.nprocs);

  std::string user_dir, job_dir;
  if (make_user_dir(opt_.tmp_root, &user_dir) != ROCL_OK ||
      (clean_stale_job_dirs(user_dir), make_job_dir(user_dir, &job_dir)) != ROCL_OK) {
    write_all(opt_.err_fd, std::string(last_error()) + "\n");
    return 1;
  }
  struct DirGuard {
    std::string dir;
    ~DirGuard() { remove_job_dir(dir); }
  } dir_guard{job_dir};

  const JobSecret secret = JobSecret::generate();
  JobInfo info;
  info.size = opt_.nprocs;
  info.job_dir = job_dir;
  info.secret_file = job_dir + "/secret";
  info.directory_socket = job_dir + "/dir.sock";
  info.directory_address = "unix:" + info.directory_socket;
  info.secret = &secret;
  info.grace_ms = opt_.grace_ms;
  if (secret.write_file(info.secret_file) != ROCL_OK) {
    say(opt_.err_fd, "%s", last_error());
    return 1;
  }

  if (opt_.services != nullptr && opt_.services->start(info) != ROCL_OK) {
    say(opt_.err_fd, "job services failed to start: %s", last_error());
    return 1;
  }
  struct ServicesGuard {
    JobServices *s;
    ~ServicesGuard() {
      if (s) s->stop();
    }
  } services_guard{opt_.services};

  std::vector<ProcSpec> specs;
  if (opt_.hosts.empty()) {
    for (int i = 0; i < info.size; ++i) {
      ProcSpec spec;
      spec.argv = opt_.argv;
      spec.env = rank_environment(i, info);
      spec.label = std::to_string(i);
      specs.push_back(std::move(spec));
    }
  } else {
    specs = host_specs(opt_, info, job_dir.substr(job_dir.rfind('/') + 1));
  }
  Job job(opt_, sigs);
  return job.run(specs);
}

}  // namespace rocl::impl
