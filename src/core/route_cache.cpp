// route_cache.cpp - see route_cache.hpp.
#include "core/route_cache.hpp"

#include <mutex>

namespace rocl::impl {

constinit thread_local RouteCache::Recent RouteCache::t_recent_{};

std::uint64_t RouteCache::next_id() noexcept {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

RouteCache::Lookup RouteCache::lookup_shared(rocl_gid_t gid, std::uint64_t epoch,
                                             Route *out) const {
  Recent &recent = t_recent_;
  // The slot gid had, if it is there with an older generation; else the
  // next in turn.
  unsigned k = 0;
  while (k < Recent::kSlots && !(recent.slot[k].cache == id_ && recent.slot[k].gid == gid)) ++k;
  if (k == Recent::kSlots) {
    k = recent.next;
    recent.next = (k + 1) % Recent::kSlots;
  }
  recent.hit = k;
  Last &last = recent.slot[k];
  std::shared_lock lock(mutex_);
  auto it = routes_.find(gid);
  if (it == routes_.end()) {
    // Remembered too: a thread sending to a resource of its own process
    // asks on every send whether it is routed elsewhere (Context::route).
    last = Last{id_, gid, generation_.load(std::memory_order_relaxed), Entry{}, true};
    return Lookup::kMiss;
  }
  last = Last{id_, gid, generation_.load(std::memory_order_relaxed), it->second};
  *out = it->second.route;
  return it->second.epoch == epoch ? Lookup::kHit : Lookup::kStale;
}

void RouteCache::store(rocl_gid_t gid, const Route &route, std::uint64_t epoch) {
  std::unique_lock lock(mutex_);
  auto [it, added] = routes_.try_emplace(gid, Entry{route, epoch});
  // Of two senders resolving at once, the one that asked later wins.
  if (!added && it->second.epoch <= epoch) it->second = Entry{route, epoch};
  bump();
}

void RouteCache::forget(rocl_gid_t gid) {
  std::unique_lock lock(mutex_);
  routes_.erase(gid);
  bump();
}

std::string_view RouteCache::intern(std::string address) {
  std::unique_lock lock(mutex_);
  return *addresses_.insert(std::move(address)).first;
}

const RailSet *RouteCache::intern(rocl_gid_t context, RailSet rails) {
  std::unique_lock lock(mutex_);
  auto &kept = rail_sets_[context];
  if (!kept) kept = std::make_unique<RailSet>(std::move(rails));
  return kept.get();
}

void RouteCache::forget_context(rocl_gid_t context) {
  std::unique_lock lock(mutex_);
  std::erase_if(routes_, [context](const auto &kv) { return kv.second.route.context == context; });
  bump();
}

}  // namespace rocl::impl
