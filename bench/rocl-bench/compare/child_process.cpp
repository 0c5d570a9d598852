// child_process.cpp - see child_process.hpp.
#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

namespace rocl_bench::compare {
namespace {

constexpr double kGraceSeconds = 3;  // roclrun's own grace is 2 s

volatile sig_atomic_t g_interrupted = 0;

void on_signal(int) {
  g_interrupted = 1;
}

void sleep_seconds(double s) {
  struct timespec ts = {static_cast<time_t>(s),
                        static_cast<long>((s - static_cast<double>(static_cast<time_t>(s))) * 1e9)};
  nanosleep(&ts, nullptr);
}

bool is_executable(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Our environment with inv.env set on top.
std::vector<std::string> environment(const Invocation &inv) {
  std::vector<std::string> env;
  for (char **e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto &[name, value] : inv.env) {
      if (entry.starts_with(name + "=")) replaced = true;
    }
    if (!replaced) env.push_back(entry);
  }
  for (const auto &[name, value] : inv.env) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

double monotonic_seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

bool ChildResult::ok() const {
  return started && !timed_out && !interrupted && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string ChildResult::describe() const {
  char text[256];
  if (!started) return error;
  if (interrupted) return "interrupted";
  if (timed_out) {
    std::snprintf(text, sizeof text, "timed out after %.0f s (stopped)", seconds);
  } else if (WIFEXITED(status)) {
    std::snprintf(text, sizeof text, "exit status %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    std::snprintf(text, sizeof text, "killed by signal %d (%s)", WTERMSIG(status),
                  strsignal(WTERMSIG(status)));
  } else {
    std::snprintf(text, sizeof text, "ended with wait status %d", status);
  }
  return text;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited()) stop();
}

bool ChildProcess::start(const Invocation &inv) {
  result_ = ChildResult{};
  timeout_ = inv.timeout_seconds;
  if (inv.argv.empty()) {
    result_.error = "nothing to run";
    return false;
  }
  const std::string path = find_program(inv.argv[0]);
  if (path.empty()) {
    result_.error = inv.argv[0] + " not found";
    return false;
  }
  const int log = ::open(inv.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    result_.error = "cannot write " + inv.log + ": " + std::strerror(errno);
    return false;
  }
  // Everything the child needs, made before fork (no allocation after it).
  std::vector<std::string> env_text = environment(inv), argv_text = inv.argv;
  std::vector<char *> envp, argv;
  for (auto &s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto &s : argv_text) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    result_.error = std::string("fork failed: ") + std::strerror(errno);
    ::close(log);
    return false;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(path.c_str(), argv.data(), envp.data());
    const char *why = std::strerror(errno);
    (void)!::write(2, "cannot execute: ", 16);
    (void)!::write(2, why, std::strlen(why));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with a signal sent right after
  ::close(log);
  pid_ = pid;
  leader_done_ = false;
  started_at_ = monotonic_seconds();
  result_.started = true;
  return true;
}

bool ChildProcess::exited() {
  if (pid_ <= 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    result_.status = status;
    result_.seconds = monotonic_seconds() - started_at_;
    leader_done_ = true;
    reap_group();
    pid_ = -1;
    return true;
  }
  return false;
}

bool ChildProcess::group_alive() {
  int status = 0;
  for (;;) {  // members orphaned to us (we are a subreaper) and the leader
    const pid_t r = ::waitpid(-pid_, &status, WNOHANG);
    if (r <= 0) break;
    if (r == pid_) {
      result_.status = status;
      leader_done_ = true;
    }
  }
  return ::kill(-pid_, 0) == 0;
}

void ChildProcess::reap_group() {
  if (!group_alive()) return;
  ::kill(-pid_, SIGTERM);
  const double until = monotonic_seconds() + kGraceSeconds;
  while (monotonic_seconds() < until && group_alive()) sleep_seconds(0.01);
  if (group_alive()) ::kill(-pid_, SIGKILL);
  if (!leader_done_) {
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) result_.status = status;
    leader_done_ = true;
  }
  for (int i = 0; i < 100 && group_alive(); ++i) sleep_seconds(0.01);
}

const ChildResult &ChildProcess::wait() {
  while (pid_ > 0 && !exited()) {
    if (interrupted()) {
      result_.interrupted = true;
      stop();
      break;
    }
    if (monotonic_seconds() - started_at_ > timeout_) {
      result_.timed_out = true;
      stop();
      result_.seconds = timeout_;
      break;
    }
    sleep_seconds(0.005);
  }
  return result_;
}

void ChildProcess::stop() {
  if (pid_ <= 0) return;
  reap_group();  // SIGTERM to the group, SIGKILL after the grace period
  pid_ = -1;
}

ChildResult run_child(const Invocation &inv) {
  ChildProcess child;
  if (!child.start(inv)) return child.result();
  return child.wait();
}

std::string find_program(const std::string &name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  const char *path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/bin:/bin";
  while (true) {
    const std::size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (is_executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    rest.remove_prefix(colon + 1);
  }
}

void catch_interrupts() {
  // Processes our programs leave behind become ours, so that they can be
  // reaped and their group emptied.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

bool interrupted() {
  return g_interrupted != 0;
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace rocl_bench::compare
