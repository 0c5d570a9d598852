// route_cache.hpp - RoCL's two caches (section 4.1): resource -> context
// and context -> (transport, address), so that a send to a resource of
// another process asks the directory only the first time. Entries go stale
// when a process exits; the sender drops them on a transport error and asks
// again once.
#pragma once

#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "rocl/rocl.h"

namespace rocl::impl {

class Transport;

struct Route {
  rocl_gid_t context = ROCL_NULL_GID;
  Transport *transport = nullptr;
  std::string_view address;  // interned by the cache: valid as long as it
};

class RouteCache {
 public:
  // The cached route to resource gid, if any.
  bool find(rocl_gid_t gid, Route *out) const;
  void store(rocl_gid_t gid, const Route &route);
  // A copy of address that lives as long as the cache, so that a route is
  // copied on every send without allocating. Addresses are few (one per
  // peer context and transport) and kept.
  std::string_view intern(std::string address);
  // Forgets every route through context (it went away or moved).
  void forget_context(rocl_gid_t context);

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<rocl_gid_t, Route> routes_;
  std::unordered_set<std::string> addresses_;  // node-based: stable storage
};

}  // namespace rocl::impl
