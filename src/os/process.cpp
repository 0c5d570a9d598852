// process.cpp - process facts from /proc (process.hpp).
#include "os/process.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rocl::impl::os {

std::uint64_t process_start(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command (field 2) may hold spaces and parentheses: fields are
  // counted from the last ')'.
  const char *rp = std::strrchr(buf, ')');
  if (rp == nullptr || rp[1] == '\0' || rp[2] == '\0') return 0;
  const char state = rp[2];
  if (state == 'Z' || state == 'X' || state == 'x') return 0;
  const char *p = rp + 2;  // field 3, the state
  for (int field = 3; field < 22; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return 0;
    ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

std::uint64_t pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

}  // namespace rocl::impl::os
