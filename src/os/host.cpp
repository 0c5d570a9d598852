// host.cpp - the host's identity (host.hpp).
#include "os/host.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "os/process.hpp"

namespace rocl::impl::os {
namespace {

std::string read_line(const char *path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return {};
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string make_tag() {
  std::string boot = read_line("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) boot = "noboot";
  return boot + ":" + std::to_string(pid_namespace()) + ":" + std::to_string(net_namespace());
}

std::string make_id(const std::string &tag) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : tag) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

const std::string &host_tag() {
  static const std::string tag = make_tag();
  return tag;
}

const std::string &host_id() {
  static const std::string id = make_id(host_tag());
  return id;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::uint64_t net_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/net", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

}  // namespace rocl::impl::os
