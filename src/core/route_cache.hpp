// route_cache.hpp - RoCL's two caches (section 4.1): resource -> context
// and context -> (transport, address), so that a send to a resource of
// another process asks the directory only the first time. Entries go stale
// when a process exits; the sender drops them on a transport error and asks
// again once.
#pragma once

#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "rocl/rocl.h"

namespace rocl::impl {

class Transport;

struct Route {
  rocl_gid_t context = ROCL_NULL_GID;
  Transport *transport = nullptr;
  std::string address;
};

class RouteCache {
 public:
  // The cached route to resource gid, if any.
  bool find(rocl_gid_t gid, Route *out) const;
  void store(rocl_gid_t gid, const Route &route);
  // Forgets every route through context (it went away or moved).
  void forget_context(rocl_gid_t context);

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<rocl_gid_t, Route> routes_;
};

}  // namespace rocl::impl
