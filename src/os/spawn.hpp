// spawn.hpp - starting a program as a child process that a server thread
// can watch without signals: posix_spawn (safe from a multithreaded
// process: no fork of the caller's heap) plus a pidfd that becomes
// readable when the child exits.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rocl::impl::os {

struct Child {
  pid_t pid = -1;
  int pidfd = -1;  // readable when the child has exited; -1 if the kernel has no pidfd_open
};

// Starts argv[0] (looked up in the PATH of env, else of the caller) with
// argv and exactly the environment env ("KEY=VALUE" each), in a process
// group of its own (so that the whole group can be stopped), with every
// signal at its default disposition and none blocked, stdin from /dev/null
// and stdout/stderr the caller's. Returns 0 and *out, or the errno of what
// failed (ENOENT: no such program; EACCES: not executable; ...).
int start_child(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                Child *out);

// Reaps the child if it has exited: true and its wait status in *status
// (then the pidfd is closed and *child reset); false while it runs.
bool reap_child(Child *child, int *status);

// Sends sig to the child's process group (its own; see start_child).
void signal_child(const Child &child, int sig);

// "exited with status N" / "was killed by signal S (SIGNAME)" for a wait status.
std::string describe_wait_status(int status);

}  // namespace rocl::impl::os
