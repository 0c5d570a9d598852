// spawn.cpp - child processes for a server thread (spawn.hpp).
#include "os/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rocl::impl::os {
namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#else
  (void)pid;
#endif
  return -1;
}

}  // namespace

int start_child(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                Child *out) {
  if (argv.empty() || argv[0].empty()) return EINVAL;
  std::vector<char *> args, envp;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  const char *path = nullptr;
  for (const std::string &e : env) {
    envp.push_back(const_cast<char *>(e.c_str()));
    if (e.rfind("PATH=", 0) == 0) path = e.c_str() + 5;
  }
  envp.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  if (posix_spawnattr_init(&attr) != 0) return ENOMEM;
  if (posix_spawn_file_actions_init(&actions) != 0) {
    posix_spawnattr_destroy(&attr);
    return ENOMEM;
  }
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  pid_t pid = -1;
  int rc;
  if (argv[0].find('/') != std::string::npos || path == nullptr) {
    rc = argv[0].find('/') != std::string::npos
             ? posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data())
             : posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  } else {
    // The child's PATH decides where the program is, not ours.
    rc = ENOENT;
    std::string dirs = path;
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
      std::string dir = dirs.substr(start, colon - start);
      start = colon + 1;
      const std::string full = (dir.empty() ? std::string(".") : dir) + "/" + argv[0];
      if (::access(full.c_str(), X_OK) != 0) {
        if (errno == EACCES) rc = EACCES;
        continue;
      }
      rc = posix_spawn(&pid, full.c_str(), &actions, &attr, args.data(), envp.data());
      if (rc != ENOENT && rc != EACCES) break;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return rc;
  out->pid = pid;
  out->pidfd = open_pidfd(pid);
  return 0;
}

bool reap_child(Child *child, int *status) {
  if (child->pid <= 0) return false;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(child->pid, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  // r < 0 (ECHILD): someone else reaped it; it is gone either way.
  *status = r < 0 ? 0 : st;
  if (child->pidfd >= 0) ::close(child->pidfd);
  *child = Child{};
  return true;
}

void signal_child(const Child &child, int sig) {
  if (child.pid > 0) ::kill(-child.pid, sig);
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  return "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status);
}

}  // namespace rocl::impl::os
