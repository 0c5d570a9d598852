// process.hpp - what rocl asks the kernel about processes through /proc:
// a process's start time (with its pid, a name that is never reused) and
// the pid namespace the caller lives in. Used by the cpu board (which
// process left counts behind) and the shm transport (is a peer still the
// process it connected to; may two processes' pids be compared).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace rocl::impl::os {

// Start time (clock ticks since boot, /proc/PID/stat field 22) of process
// pid, 0 if it is dead, a zombie or unknown.
std::uint64_t process_start(pid_t pid);

// The inode of the caller's pid namespace (/proc/self/ns/pid), 0 if
// unknown: equal for two processes iff their pids mean the same processes.
std::uint64_t pid_namespace();

}  // namespace rocl::impl::os
