// shm_process.hpp - what the shm transport asks the kernel about processes
// (through /proc and kill(pid, 0)): the tag naming our boot and pid
// namespace, a process's start time and liveness, and the parsing of shm
// addresses "shm:<pid>:<fd>:<size>:<host tag>".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocl::impl::shm::detail {

// "<boot id>:<pid ns inode>": equal for two processes iff they share kernel
// boot and pid namespace, i.e. their pids mean the same processes.
std::string host_tag();

// Start time (clock ticks since boot) of process pid, 0 if it is dead, a
// zombie or unknown.
std::uint64_t process_start(pid_t pid);

bool pid_alive(pid_t pid);

struct ParsedAddress {
  pid_t pid = 0;
  int fd = -1;
  std::uint64_t size = 0;
  std::string host;
};

std::optional<ParsedAddress> parse_address(std::string_view a);

}  // namespace rocl::impl::shm::detail
