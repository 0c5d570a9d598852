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

struct Rank {
  pid_t pid = -1;  // also its process group
  bool running = false;
  Stream out, err;
};

class Job {
 public:
  Job(const LaunchOptions &opt, SignalScope &sigs) : opt_(opt), sigs_(sigs) {}

  int run(const JobInfo &info);

 private:
  int spawn(int rank, const JobInfo &info);
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

// Forks and execs one rank. ROCL_OK, or the exit code to end with (127/126)
// when the program cannot run (the child reports exec's errno through a
// close-on-exec pipe: EOF means exec worked).
int Job::spawn(int rank, const JobInfo &info) {
  std::vector<std::string> env = rank_environment(rank, info);
  std::vector<char *> envp, argv;
  for (std::string &s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = opt_.argv;
  for (std::string &s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int status_pipe[2], out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    say(opt_.err_fd, "pipe: %s", std::strerror(errno));
    return 1;
  }
  if (opt_.prefix_output &&
      (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    say(opt_.err_fd, "pipe: %s (too many ranks for the open-file limit?)", std::strerror(errno));
    for (int fd : {status_pipe[0], status_pipe[1], out_pipe[0], out_pipe[1]})
      if (fd >= 0) ::close(fd);
    return 1;
  }
  // stdin: rank 0 gets the launcher's unless it is a terminal (a rank in a
  // background process group reading the terminal would be stopped).
  const bool give_stdin = rank == 0 && !::isatty(0);
  // --bind-to core: rank i on the i-th cpu we may use (round robin),
  // chosen here because the child may only make async-signal-safe calls.
  cpu_set_t bind;
  const bool binding = opt_.bind_to_core && core_for(rank, &bind);

  const pid_t pid = ::fork();
  if (pid < 0) {
    say(opt_.err_fd, "fork: %s", std::strerror(errno));
    for (int fd :
         {status_pipe[0], status_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) ::close(fd);
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
    if (!give_stdin) {
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
  Rank &r = ranks_[static_cast<std::size_t>(rank)];
  r.pid = pid;
  r.running = true;
  if (opt_.prefix_output) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    const std::string prefix = "[" + std::to_string(rank) + "] ";
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
    say(opt_.err_fd, "cannot run '%s': %s", opt_.argv[0].c_str(), std::strerror(err));
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
    if (status != 0 && !stopping_) {
      say(opt_.err_fd, "rank %zu (pid %d) %s%s", i, static_cast<int>(r.pid),
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

int Job::run(const JobInfo &info) {
  ranks_.resize(static_cast<std::size_t>(info.size));
  for (int i = 0; i < info.size && !stopping_; ++i) {
    const int rc = spawn(i, info);
    if (rc != ROCL_OK) {
      ranks_.resize(static_cast<std::size_t>(i) + (ranks_[static_cast<std::size_t>(i)].pid > 0));
      begin_stop(rc);
      break;
    }
    handle_signals();
  }

  const auto start = Clock::now();
  const bool timed = opt_.timeout_s > 0;
  const auto timeout_at = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(opt_.timeout_s));
  std::optional<Clock::time_point> drain_until;  // set once every rank ended
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

  Job job(opt_, sigs);
  return job.run(info);
}

}  // namespace rocl::impl
