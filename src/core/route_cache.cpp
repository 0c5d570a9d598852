// route_cache.cpp - see route_cache.hpp.
#include "core/route_cache.hpp"

#include <mutex>

namespace rocl::impl {

bool RouteCache::find(rocl_gid_t gid, Route *out) const {
  std::shared_lock lock(mutex_);
  auto it = routes_.find(gid);
  if (it == routes_.end()) return false;
  *out = it->second;
  return true;
}

void RouteCache::store(rocl_gid_t gid, const Route &route) {
  std::unique_lock lock(mutex_);
  routes_[gid] = route;
}

std::string_view RouteCache::intern(std::string address) {
  std::unique_lock lock(mutex_);
  return *addresses_.insert(std::move(address)).first;
}

void RouteCache::forget_context(rocl_gid_t context) {
  std::unique_lock lock(mutex_);
  std::erase_if(routes_, [context](const auto &kv) { return kv.second.context == context; });
}

}  // namespace rocl::impl
