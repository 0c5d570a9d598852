// route_cache.hpp - RoCL's two caches (section 4.1): resource -> context
// and context -> (transport, address), so that a send to a resource of
// another process asks the directory only the first time.
//
// Staleness: each entry keeps the directory's removal epoch (directory.hpp)
// read before the directory was asked. Once the epoch has moved on (a
// resource was deleted, a process exited or died, anywhere in the job), the
// entry is stale, not a hit: the sender asks the directory again, which
// either answers "not found" (rocl_send's ROCL_EBADGID) or confirms the
// route, stored again with the new epoch. A directory without an epoch (0
// always) leaves only the transport error: the sender drops the context's
// routes and asks again once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/stripe_sender.hpp"
#include "rocl/rocl.h"

namespace rocl::impl {

class Transport;
struct RailSet;

struct Route {
  rocl_gid_t context = ROCL_NULL_GID;
  Transport *transport = nullptr;
  std::string_view address;  // interned by the cache: valid as long as it
  // transport->bytes_send_limit(), asked once when the route is resolved:
  // a small message's send checks it without an indirect call.
  std::size_t bytes_send_limit = 0;
  // Every rail to the context, transport first, when there are several
  // (stripe_sender.hpp); nullptr: transport is the only one. Interned by
  // the cache.
  const RailSet *rails = nullptr;
};

class RouteCache {
 public:
  // The value of a removal epoch now (0 without one): read it before asking
  // the directory, and to look routes up.
  static std::uint64_t epoch_now(const std::atomic<std::uint64_t> *epoch) noexcept {
    return epoch != nullptr ? epoch->load(std::memory_order_acquire) : 0;
  }

  enum class Lookup {
    kHit,    // *out is the route
    kStale,  // *out is the route cached before the latest removal: check it
    kMiss,   // nothing cached
  };
  // The cached route to resource gid, and whether it was stored at removal
  // epoch `epoch` (kHit) or before (kStale: something left the directory
  // since, maybe gid).
  // Inline, the thread's recent entries (Recent): a small message's send
  // looks its route up every time, and the call cost as much as the look.
  Lookup lookup(rocl_gid_t gid, std::uint64_t epoch, Route *out) const {
    // Seeing the generation an entry was copied at means no change since:
    // the lookup then takes effect at this load.
    const std::uint64_t generation = generation_.load(std::memory_order_acquire);
    Recent &recent = t_recent_;
    // The slot that answered last first: a thread sending to one resource
    // finds it at the first compare.
    for (unsigned n = 0, k = recent.hit; n < Recent::kSlots; ++n, k = (k + 1) % Recent::kSlots) {
      const Last &last = recent.slot[k];
      if (last.cache == id_ && last.gid == gid && last.generation == generation) {
        recent.hit = k;
        if (last.miss) return Lookup::kMiss;
        *out = last.entry.route;
        return last.entry.epoch == epoch ? Lookup::kHit : Lookup::kStale;
      }
    }
    return lookup_shared(gid, epoch, out);
  }
  // lookup() == kHit.
  bool find(rocl_gid_t gid, std::uint64_t epoch, Route *out) const {
    return lookup(gid, epoch, out) == Lookup::kHit;
  }
  // Caches the route the directory gave when its removal epoch was `epoch`
  // (read before asking it).
  void store(rocl_gid_t gid, const Route &route, std::uint64_t epoch);
  // Forgets the route to gid (the resource is gone).
  void forget(rocl_gid_t gid);
  // A copy of address that lives as long as the cache, so that a route is
  // copied on every send without allocating. Addresses are few (one per
  // peer context and transport) and kept.
  std::string_view intern(std::string address);
  // The same for a context's rails (which never change while it lives):
  // the copy made for it first, which lives as long as the cache.
  const RailSet *intern(rocl_gid_t context, RailSet rails);
  // Forgets every route through context (it went away or moved).
  void forget_context(rocl_gid_t context);

 private:
  struct Entry {
    Route route;
    std::uint64_t epoch;
  };
  // Each thread keeps the entries it looked up last (route_cache.cpp),
  // valid while generation_ has not moved: a thread sending to a few
  // resources again and again (one, the children of a collective's tree, a
  // ring's neighbours) then takes no lock (the shared lock's two atomic
  // operations on a line every sending thread writes).
  struct Last {
    std::uint64_t cache = 0;  // id_ of the cache the entry came from
    rocl_gid_t gid = ROCL_NULL_GID;
    std::uint64_t generation = 0;
    Entry entry;
    bool miss = false;  // gid was not cached (the entry is empty)
  };
  struct Recent {
    static constexpr unsigned kSlots = 4;
    Last slot[kSlots];
    unsigned next = 0;  // the slot a look-up past them fills: round robin
    unsigned hit = 0;   // the slot that answered last
  };
  // Constant-initialised (route_cache.cpp), trivially destroyed: read
  // without a guard or a wrapper call.
  static constinit thread_local Recent t_recent_;
  // lookup() past the thread's last entry: under the shared lock.
  Lookup lookup_shared(rocl_gid_t gid, std::uint64_t epoch, Route *out) const;
  static std::uint64_t next_id() noexcept;
  void bump() noexcept { generation_.fetch_add(1, std::memory_order_release); }

  const std::uint64_t id_ = next_id();        // never 0
  std::atomic<std::uint64_t> generation_{0};  // bumped by every change, under the lock
  mutable std::shared_mutex mutex_;
  std::unordered_map<rocl_gid_t, Entry> routes_;
  std::unordered_set<std::string> addresses_;  // node-based: stable storage
  std::unordered_map<rocl_gid_t, std::unique_ptr<RailSet>> rail_sets_;  // per peer context
};

}  // namespace rocl::impl
