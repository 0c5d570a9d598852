// net.cpp - the host's IPv4 addresses (net.hpp).
#include "os/net.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

namespace rocl::impl::os {

bool resolve_ipv4(const std::string &what, in_addr *out) {
  if (what.empty() || what == "loopback") {
    out->s_addr = htonl(INADDR_LOOPBACK);
    return true;
  }
  if (what == "any") {
    out->s_addr = htonl(INADDR_ANY);
    return true;
  }
  if (::inet_pton(AF_INET, what.c_str(), out) == 1) return true;
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  const bool any_up = what == "auto";
  bool found = false;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const bool usable = (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0;
    if (any_up ? usable : what == i->ifa_name) {
      *out = reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr;
      found = true;
      break;
    }
  }
  ::freeifaddrs(list);
  if (!found && any_up) {
    out->s_addr = htonl(INADDR_LOOPBACK);  // a host without a network
    return true;
  }
  return found;
}

bool broadcast_of(in_addr local, in_addr *out) {
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr != local.s_addr) continue;
    if ((i->ifa_flags & IFF_BROADCAST) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0) {
      in_addr b{};
      if (i->ifa_broadaddr != nullptr)
        b = reinterpret_cast<sockaddr_in *>(i->ifa_broadaddr)->sin_addr;
      // An address added without "brd" has none set: the subnet's own.
      if (b.s_addr == htonl(INADDR_ANY) && i->ifa_netmask != nullptr) {
        const in_addr mask = reinterpret_cast<sockaddr_in *>(i->ifa_netmask)->sin_addr;
        b.s_addr = local.s_addr | ~mask.s_addr;
      }
      found = b.s_addr != htonl(INADDR_ANY) && b.s_addr != local.s_addr;
      if (found) *out = b;
    }
    break;
  }
  ::freeifaddrs(list);
  return found;
}

bool interface_of(in_addr local, std::string *name) {
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs *i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr != local.s_addr) continue;
    *name = i->ifa_name;
    found = true;
  }
  ::freeifaddrs(list);
  return found;
}

std::string ipv4_text(in_addr a) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, ip, sizeof ip);
  return ip;
}

}  // namespace rocl::impl::os
