// shm_process.cpp - process helpers of the shm transport (see
// shm_process.hpp): reading /proc for the host tag and start times, kill(pid,
// 0) for liveness, other processes' memfds and memory.
#include "transport/shm/shm_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "os/host.hpp"
#include "os/process.hpp"

namespace rocl::impl::shm::detail {

std::string host_tag() {
  return os::host_tag();
}

bool pid_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) == 0) return true;
  return errno == EPERM;
}

void *map_memfd_of(std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes, bool writable) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd);
  const int f = ::open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (f < 0) return nullptr;
  struct stat st {};
  const int seals = ::fcntl(f, F_GET_SEALS);
  void *p = MAP_FAILED;
  if (::fstat(f, &st) == 0 && static_cast<std::uint64_t>(st.st_size) == bytes && seals >= 0 &&
      (seals & F_SEAL_SHRINK) != 0) {
    p = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
               MAP_SHARED | MAP_NORESERVE, f, 0);
  }
  ::close(f);
  return p == MAP_FAILED ? nullptr : p;
}

bool probe_memory(std::uint32_t pid, std::uint64_t address, std::uint64_t expect) {
  std::uint64_t got = 0;
  iovec local{&got, sizeof got};
  iovec remote{reinterpret_cast<void *>(static_cast<std::uintptr_t>(address)), sizeof got};
  return ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof got) &&
         got == expect;
}

}  // namespace rocl::impl::shm::detail
