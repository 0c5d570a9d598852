// shm_process.hpp - what the shm transport asks the kernel about processes
// (through /proc, kill(pid, 0) and process_vm_readv): the tag naming our boot
// and pid namespace, a process's start time and liveness, mapping another
// process's memfd and probing whether its memory can be read. (The shm
// addresses are parsed in shm_handshake.hpp.)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "os/process.hpp"

namespace rocl::impl::shm::detail {

// os::host_tag(): equal for two processes iff they share kernel boot, pid
// namespace (their pids mean the same processes) and network namespace (a
// test host of its own is another host, though it could map our memory).
std::string host_tag();

// A process's start time: os::process_start.
using os::process_start;

bool pid_alive(pid_t pid);

// Another process's memfd (a buffer pool) mapped here, read-only or
// writable, if it is `bytes` long and sealed against shrinking (it cannot
// make us fault); nullptr if anything does not check out.
void *map_memfd_of(std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes, bool writable);

// Whether process_vm_readv reads `expect` at `address` in process pid: may
// a lent send's memory be read there (the Hello's probe).
bool probe_memory(std::uint32_t pid, std::uint64_t address, std::uint64_t expect);

}  // namespace rocl::impl::shm::detail
