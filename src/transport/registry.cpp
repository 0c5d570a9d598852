// registry.cpp - the one table of transports, switched by CMake options.
#include <array>

#include "transport/transport.hpp"

#ifdef ROCL_HAVE_INPROC
#include "transport/inproc/inproc_transport.hpp"
#endif
#ifdef ROCL_HAVE_SHM
#include "transport/shm/shm_transport.hpp"
#endif
#ifdef ROCL_HAVE_TCP
#include "transport/tcp/tcp_transport.hpp"
#endif

namespace rocl::impl {
namespace {

const TransportEntry kTransports[] = {
#ifdef ROCL_HAVE_INPROC
    {"inproc", "same process: hands the buffer pointer to the receiving resource, no copy",
     &make_inproc_transport},
#endif
#ifdef ROCL_HAVE_SHM
    {"shm",
     "same node: memfd inbox of per-sender lock-free rings, futex wake-ups, one copy each way",
     &make_shm_transport},
#endif
#ifdef ROCL_HAVE_TCP
    {"tcp", "TCP/IPv4 sockets: epoll progress thread, one connection per peer, writev without copy",
     &make_tcp_transport},
#endif
};

}  // namespace

std::span<const TransportEntry> transport_table() noexcept {
  return kTransports;
}

const TransportEntry *find_transport(std::string_view name) noexcept {
  for (const auto &entry : kTransports) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

}  // namespace rocl::impl
