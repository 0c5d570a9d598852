// router.cpp - where a message goes (router.hpp): the in-process hand-off,
// a cached route, or the directory asked; small messages copied by the
// transport, lent memory.
#include "core/router.hpp"

#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "core/stripe_wire.hpp"
#include "directory/attr_list.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {
unsigned long long ull(rocl_gid_t g) {
  return static_cast<unsigned long long>(g);
}

enum class Recheck { kSame, kGone, kUnsure };

// Whether resource dgid, cached as a resource of `context`, still is one:
// one directory query (a context's addresses never change while it lives,
// and its resources leave the directory with it).
Recheck recheck(Directory &directory, rocl_gid_t dgid, rocl_gid_t context) noexcept {
  try {
    rocl_gid_t gid = dgid;
    AttrList ask(256);
    ask.add_unspecified(kContextAttr, sizeof(rocl_gid_t));
    const int rc = directory.query(&gid, ask);
    if (rc == ROCL_ENOTFOUND) return Recheck::kGone;
    if (rc != ROCL_OK) return Recheck::kUnsure;
    std::size_t len = 0;
    const std::byte *ctx = ask.get(kContextAttr, &len);
    rocl_gid_t now = ROCL_NULL_GID;
    if (ctx == nullptr || len != sizeof now) return Recheck::kUnsure;
    std::memcpy(&now, ctx, sizeof now);
    return now == context ? Recheck::kSame : Recheck::kUnsure;
  } catch (const std::bad_alloc &) {
    return Recheck::kUnsure;
  }
}
// The address `context` published for transport t, if t reaches it.
bool peer_address(Directory &directory, rocl_gid_t context, const Transport &t,
                  std::string *address) {
  std::string name = "addr." + std::string(t.name());
  AttrList where(static_cast<int>(kMaxAddressBytes + 256));
  where.add_unspecified(name, static_cast<int>(kMaxAddressBytes));
  if (directory.query(&context, where) != ROCL_OK) return false;
  std::size_t len = 0;
  const std::byte *addr = where.get(name, &len);
  if (addr == nullptr) return false;
  address->assign(reinterpret_cast<const char *>(addr), len);
  return t.reaches(*address);
}

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// A resource of `context`, which is in the directory but which none of this
// context's transports reaches: says so (not "unknown resource"), naming
// the transports on each side, so that the user sees which to enable.
int fail_unreachable(Directory &directory, rocl_gid_t dgid, rocl_gid_t context, Transport *local,
                     const std::vector<Transport *> &remote, const std::string &option) noexcept {
  try {
    std::vector<std::string> here, there, both;
    if (local != nullptr) here.emplace_back(local->name());
    for (const Transport *t : remote) here.emplace_back(t->name());
    AttrList ask(static_cast<int>(4096 + transport_table().size() * (kMaxAddressBytes + 64)));
    ask.add_unspecified("host", 256);
    for (const TransportEntry *entry : transport_table()) {
      ask.add_unspecified("addr." + std::string(entry->name), static_cast<int>(kMaxAddressBytes));
    }
    rocl_gid_t gid = context;
    std::string host = "?";
    if (directory.query(&gid, ask) == ROCL_OK) {
      std::size_t len = 0;
      if (const std::byte *h = ask.get("host", &len); h != nullptr) {
        host.assign(reinterpret_cast<const char *>(h), len);
      }
      for (const TransportEntry *entry : transport_table()) {
        if (ask.get("addr." + std::string(entry->name), &len) == nullptr) continue;
        there.emplace_back(entry->name);
        for (const Transport *t : remote) {
          if (t->name() == entry->name) both.emplace_back(entry->name);
        }
      }
    }
    const std::string unreached =
        both.empty() ? std::string()
                     : "; " + joined(both) +
                           " enabled on both sides but not reaching its address (another host, "
                           "or a loopback address: ROCL_TCP_BIND)";
    return fail(ROCL_EPEER,
                "rocl_send: resource %#llx exists (context %#llx on host %s) but no transport "
                "enabled here reaches it: enabled here %s (ROCL_TRANSPORTS=%s), offered there "
                "%s%s",
                ull(dgid), ull(context), host.c_str(), joined(here).c_str(), option.c_str(),
                joined(there).c_str(), unreached.c_str());
  } catch (const std::bad_alloc &) {
    return fail(ROCL_EPEER, "rocl_send: resource %#llx exists but no enabled transport reaches it",
                ull(dgid));
  }
}
}  // namespace

void Router::start(BufferPool *pool, Directory *directory, Transport *local,
                   std::vector<Transport *> remote, std::vector<Reach> reach) {
  pool_ = pool;
  directory_ = directory;
  local_ = local;
  local_address_ = local != nullptr ? local->address() : std::string();
  remote_ = std::move(remote);
  reach_ = std::move(reach);
  stripes_.start(pool, options_.stripe_fragment, options_.stripe_resend_ms);
}

int Router::route(rocl_gid_t dgid, Message *msg, bool prefer_rendezvous) noexcept {
  // A route cached before the directory's latest removal (the removal epoch,
  // one load of a line that changes only on removals) is not trusted: the
  // resource may be the one deleted, so rocl_delete's "later sends fail with
  // ROCL_EBADGID" holds across processes too. Read before asking again.
  const std::uint64_t epoch = RouteCache::epoch_now(directory_->removal_epoch());
  Route cached;
  const RouteCache::Lookup found = routes_.lookup(dgid, epoch, &cached);
  // A destination with a current route to another context is not in our
  // table (a gid names one resource for good; a removal anywhere makes the
  // route stale): skip the local hand-off, whose misses cost two table
  // lookups and the registration lock, each twice (a fair share of a small
  // message's send between processes).
  const bool elsewhere = found == RouteCache::Lookup::kHit && cached.context != gid_;
  if (local_ != nullptr && !elsewhere) {
    int rc = local_->send(gid_, local_address_, dgid, msg);
    if (rc == ROCL_EDELETED) rc = ROCL_EBADGID;  // being deleted: as good as gone
    if (rc != ROCL_EBADGID) return rc;
    // Not (yet) in the table: a registration may be between the directory
    // and the table; wait for it to finish, then look once more.
    { std::shared_lock wait_for_registration(*registering_); }
    rc = local_->send(gid_, local_address_, dgid, msg);
    if (rc != ROCL_EBADGID) return rc;
  }
  return route_remote(dgid, msg, prefer_rendezvous, epoch, found, cached);
}

int Router::resolve(rocl_gid_t dgid, Route *route) noexcept {
  // Read before asking: if anything leaves the directory meanwhile, the
  // route stored below is already stale and will be asked for again.
  const std::uint64_t epoch = RouteCache::epoch_now(directory_->removal_epoch());
  try {
    rocl_gid_t gid = dgid;
    AttrList ask(256);
    ask.add_unspecified(kContextAttr, sizeof(rocl_gid_t));
    if (const int rc = directory_->query(&gid, ask); rc != ROCL_OK) {
      // The directory could not say (its server is lost, or the server of
      // dgid did not answer): not the same as "no such resource".
      if (rc == ROCL_EPEER) {
        const std::string why = last_error();
        return fail(ROCL_EPEER, "rocl_send: cannot look up destination gid %#llx: %s", ull(dgid),
                    why.c_str());
      }
      return fail(ROCL_EBADGID, "rocl_send: destination gid %#llx is not a registered resource",
                  ull(dgid));
    }
    std::size_t len = 0;
    const std::byte *ctx = ask.get(kContextAttr, &len);
    if (ctx == nullptr || len != sizeof(rocl_gid_t)) {
      return fail(ROCL_EINTERNAL, "rocl_send: resource %#llx has no context attribute", ull(dgid));
    }
    std::memcpy(&route->context, ctx, sizeof route->context);
    if (route->context == gid_ && local_ != nullptr) {  // ours, and being deleted
      return fail(ROCL_EBADGID, "rocl_send: destination gid %#llx is not a registered resource",
                  ull(dgid));
    }
    for (std::size_t k = 0; k < remote_.size(); ++k) {
      std::string address;
      if (!peer_address(*directory_, route->context, *remote_[k], &address)) continue;
      route->transport = remote_[k];
      route->address = routes_.intern(std::move(address));
      route->bytes_send_limit = remote_[k]->caps().bytes_send_limit;
      add_rails(k, route);
      routes_.store(dgid, *route, epoch);
      return ROCL_OK;
    }
  } catch (const std::bad_alloc &) {
    return fail(ROCL_ENOMEM, "rocl_send: out of memory resolving %#llx", ull(dgid));
  }
  return fail_unreachable(*directory_, dgid, route->context, local_, remote_, options_.transports);
}

void Router::add_rails(std::size_t first, Route *route) {
  RailSet set;
  set.rails.push_back(Rail{route->transport, route->address});
  for (std::size_t k = first + 1; k < remote_.size(); ++k) {
    std::string address;
    if (reach_[k] != reach_[first] ||
        !peer_address(*directory_, route->context, *remote_[k], &address)) {
      continue;
    }
    set.rails.push_back(Rail{remote_[k], routes_.intern(std::move(address))});
  }
  route->rails = set.rails.size() > 1 ? routes_.intern(route->context, std::move(set)) : nullptr;
}

// Over the primary rail; if that fails, the next rails in turn, and the
// first that takes the message becomes the primary (RailSet).
int Router::send_on_rails(const Route &route, rocl_gid_t dgid, Message *msg) noexcept {
  const RailSet &set = *route.rails;
  const unsigned first = set.primary.load(std::memory_order_acquire);
  int rc = ROCL_EPEER;
  for (unsigned k = first; k < set.rails.size(); ++k) {
    rc = set.rails[k].transport->send(route.context, set.rails[k].address, dgid, msg);
    if (rc == ROCL_OK) {
      if (k != first) {
        unsigned expected = first;
        set.primary.compare_exchange_strong(expected, k, std::memory_order_acq_rel);
      }
      return ROCL_OK;
    }
    if (rc == ROCL_ETOOBIG || rc == ROCL_EINVAL) return rc;  // the message's fault, not the rail's
  }
  return rc;
}

int Router::network_of(std::string_view network, std::uint8_t *out) const noexcept {
  *out = 0;
  if (network.empty()) return ROCL_OK;
  std::string names;
  for (std::size_t k = 0; k < remote_.size(); ++k) {
    if (remote_[k]->name() == network && k < 255) *out = static_cast<std::uint8_t>(k + 1);
    names += (names.empty() ? "" : ", ") + std::string(remote_[k]->name());
  }
  if (*out != 0) return ROCL_OK;
  return fail(
      ROCL_EINVAL, "this context has no network '%.*s' (its networks to other processes: %s)",
      static_cast<int>(network.size()), network.data(), names.empty() ? "none" : names.c_str());
}

int Router::bind(rocl_gid_t source, std::string_view network) noexcept {
  std::uint8_t index = 0;
  if (int rc = network_of(network, &index); rc != ROCL_OK) return rc;
  Transport *rail = index != 0 ? remote_[index - 1] : nullptr;
  try {
    std::unique_lock lock(bound_mutex_);
    if (rail != nullptr) {
      bound_[source] = rail;
    } else {
      bound_.erase(source);
    }
    any_bound_.store(!bound_.empty(), std::memory_order_release);
  } catch (const std::bad_alloc &) {
    return fail(ROCL_ENOMEM, "rocl_route: out of memory");
  }
  return ROCL_OK;
}

Transport *Router::bound_rail(rocl_gid_t source) const noexcept {
  std::shared_lock lock(bound_mutex_);
  const auto it = bound_.find(source);
  return it != bound_.end() ? it->second : nullptr;
}

int Router::send_stripe_ack(rocl_gid_t from, rocl_gid_t source, std::uint64_t id) noexcept {
  const std::uint64_t epoch = RouteCache::epoch_now(directory_->removal_epoch());
  Route route;
  if (routes_.lookup(source, epoch, &route) != RouteCache::Lookup::kHit) {
    if (int rc = resolve(source, &route); rc != ROCL_OK) return rc;
  }
  BlockHeader *b = pool_->allocate(sizeof(StripeAck));
  if (b == nullptr) return ROCL_ENOMEM;
  StripeAck ack;
  ack.source = source;
  ack.message_id = id;
  std::memcpy(payload_of(b), &ack, sizeof ack);
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  b->return_after_send = true;
  Message *msg = message_in(b);
  msg->header = CoreHeader{from, 0, 0};
  msg->data = payload_of(b);
  msg->length = sizeof ack;
  const int rc = route.rails != nullptr
                     ? send_on_rails(route, route.context, msg)
                     : route.transport->send(route.context, route.address, route.context, msg);
  if (rc != ROCL_OK) {
    end_message(b);
    pool_->release(b, BlockState::kLibrary);
  }
  return rc;
}

int Router::send_striped(const Route &route, rocl_gid_t dgid, Message *msg) noexcept {
  const int rc = stripes_.send(route.context, *route.rails, dgid, msg->header,
                               static_cast<const std::byte *>(msg->data), msg->length);
  if (rc != ROCL_OK) return rc;
  // Finished as a transport finishes what it sent (Transport::finish_sent).
  BlockHeader *b = block_of(msg);
  if (b->return_after_send) {
    end_message(b);
    pool_->release(b, BlockState::kLibrary);
  } else {
    b->send_status.store(SendStatus::kSent, std::memory_order_release);
  }
  return ROCL_OK;
}

// `found` and `route`: route()'s lookup of dgid at removal epoch `epoch`.
// prefer_rendezvous goes to the transport as msg->rendezvous (the EPOS
// policy flag: the layer above asks, a transport that can lend takes it;
// transport.hpp), never to the in-process hand-off, where it would make
// the message a stub.
int Router::route_remote(rocl_gid_t dgid, Message *msg, bool prefer_rendezvous, std::uint64_t epoch,
                         RouteCache::Lookup found, Route route) noexcept {
  msg->rendezvous = prefer_rendezvous;
  if (found == RouteCache::Lookup::kStale) {
    switch (recheck(*directory_, dgid, route.context)) {
      case Recheck::kSame:  // still there: the same route, under the new epoch
        routes_.store(dgid, route, epoch);
        found = RouteCache::Lookup::kHit;
        break;
      case Recheck::kGone:
        routes_.forget(dgid);
        return fail(ROCL_EBADGID, "rocl_send: destination gid %#llx is not a registered resource",
                    ull(dgid));
      case Recheck::kUnsure:  // the directory failed, or the answer changed: from scratch
        break;
    }
  }
  const bool cached = found == RouteCache::Lookup::kHit;
  if (!cached) {
    if (int rc = resolve(dgid, &route); rc != ROCL_OK) {
      routes_.forget(dgid);  // a stale entry of a resource that is gone
      return rc;
    }
  }
  // The buffer's network (rocl_bfnet), else the source's (rocl_route).
  const std::uint8_t network = block_of(msg)->network;
  if (network != 0 || any_bound_.load(std::memory_order_acquire)) {
    Transport *rail = network != 0 && network <= remote_.size() ? remote_[network - 1]
                                                                : bound_rail(msg->header.source);
    if (rail != nullptr) {
      // Its own network, where that reaches the peer: never striped.
      if (rail == route.transport) return rail->send(route.context, route.address, dgid, msg);
      if (route.rails != nullptr) {
        for (const Rail &r : route.rails->rails) {
          if (r.transport == rail) return rail->send(route.context, r.address, dgid, msg);
        }
      }
    }
  }
  if (stripes(route, msg->length) && !is_lent(msg)) return send_striped(route, dgid, msg);
  int rc = route.rails != nullptr ? send_on_rails(route, dgid, msg)
                                  : route.transport->send(route.context, route.address, dgid, msg);
  if (rc == ROCL_OK || !cached) return rc;
  // The cache may be stale although no removal was seen (the directory has
  // no epoch, or the peer died and its connection is not closed yet): ask
  // the directory once more.
  routes_.forget_context(route.context);
  if (int rc2 = resolve(dgid, &route); rc2 != ROCL_OK) return rc2;
  return route.rails != nullptr ? send_on_rails(route, dgid, msg)
                                : route.transport->send(route.context, route.address, dgid, msg);
}

// A small message to a resource of another context whose route is cached:
// the transport copies it from where it is (Transport::send_bytes), from
// caller memory or from a pool buffer, and no pool block is taken for it.
// A buffer marked rocl_bftoret is claimed for the copy (as the usual path
// claims it: a second send of it meanwhile is refused) and goes back to the
// pool after it; a kept one's rocl_bfstat says sent. (A pool buffer's usual
// path costs a small message the message's fill, the route's second look, the
// generic send's choices and the block's finish: rocl-bench bandwidth
// --transport shm of small messages shows it.) True if it was sent (*rc =
// ROCL_OK); false: take the usual path (large, local or unknown destinations,
// a buffer the usual path refuses, a pool buffer the transport would rather
// send with its block, or a failure here, which the usual path meets again
// and words, with the directory asked).
bool Router::send_small(rocl_gid_t dgid, const CoreHeader &header, void *ptr, std::size_t len,
                        int *rc) noexcept {
  if (ptr == nullptr && len != 0) return false;
  const std::uint64_t epoch = RouteCache::epoch_now(directory_->removal_epoch());
  Route route;
  if (routes_.lookup(dgid, epoch, &route) != RouteCache::Lookup::kHit || route.context == gid_ ||
      len > route.bytes_send_limit || route.bytes_send_limit == 0 ||
      any_bound_.load(std::memory_order_relaxed) ||
      (route.rails != nullptr && route.rails->primary.load(std::memory_order_relaxed) != 0)) {
    return false;  // the usual path (a primary rail other than the first: send_on_rails)
  }
  BlockHeader *b = nullptr;  // ptr's pool buffer
  if (pool_->contains(ptr) && (b = claim_small(ptr, len)) == nullptr) return false;
  *rc = route.transport->send_bytes(route.context, route.address, dgid, header, ptr, len,
                                    b != nullptr);
  if (b != nullptr) finish_small(b, *rc == ROCL_OK);
  return *rc == ROCL_OK;
}

// send_small's pool buffer at ptr, if it may be copied from there (len
// bytes fit, it is not being sent): marked rocl_bftoret, it is claimed as
// the usual path claims it (a second send of it meanwhile is refused).
// nullptr leaves all as it was, for the usual path to send it or say why
// not.
BlockHeader *Router::claim_small(void *ptr, std::size_t len) noexcept {
  BlockHeader *b = pool_->find(ptr);
  // A buffer with a network of its own (rocl_bfnet) takes the usual path,
  // which honours it.
  if (b == nullptr || len > payload_capacity(b) || b->network != 0) return nullptr;
  if (!b->return_after_send) {
    return b->send_status.load(std::memory_order_acquire) == SendStatus::kPending ? nullptr : b;
  }
  BlockState expected = BlockState::kUser;
  return b->state.compare_exchange_strong(expected, BlockState::kLibrary) ? b : nullptr;
}

// After send_small's copy of b's payload (sent: ok): a claimed buffer goes
// back to the pool, or to its owner if it failed (as the usual path's
// undo_outgoing does); a kept one says sent.
void Router::finish_small(BlockHeader *b, bool ok) noexcept {
  if (!b->return_after_send) {
    if (ok) b->send_status.store(SendStatus::kSent, std::memory_order_release);
  } else if (ok) {
    pool_->release_held(b);
  } else {
    b->state.store(BlockState::kUser, std::memory_order_release);
  }
}

// Lending needs a cached route to another context over a transport that
// takes lent memory (shm: the receiver reads it with process_vm_readv;
// tcp: writes it into the socket from there);
// the first send to a destination, which resolves its route, is copied.
//
// A large send is lent even while another lent send is in flight: the
// sender copies part of each lent message itself (shm copy offers), so a
// stream lent beats one copied (rocl-bench mpi's bw from 1 MiB, against
// ROCL_LEND_THRESHOLD=0, shows it).
bool Router::may_lend(rocl_gid_t dgid, const void *ptr, std::size_t len, Route *route) noexcept {
  if (options_.lend_threshold == 0 || options_.rndv_threshold == 0 ||
      any_bound_.load(std::memory_order_relaxed) || len < options_.lend_threshold ||
      ptr == nullptr || pool_->contains(ptr)) {
    return false;
  }
  const std::uint64_t epoch = RouteCache::epoch_now(directory_->removal_epoch());
  return routes_.lookup(dgid, epoch, route) == RouteCache::Lookup::kHit && route->context != gid_ &&
         route->transport->caps().takes_lent_memory && !stripes(*route, len) &&
         (route->rails == nullptr || route->rails->primary.load(std::memory_order_relaxed) == 0);
}

// A failure here is met again, and worded, by the usual path.
bool Router::send_lent(const Route &route, rocl_gid_t dgid, const CoreHeader &header, void *ptr,
                       std::size_t len, BlockHeader **block) noexcept {
  BlockHeader *b = pool_->allocate(0);  // for the envelope only
  if (b == nullptr) return false;
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  b->return_after_send = false;  // the transport finishes it: send_status
  b->lent = true;
  b->send_status.store(SendStatus::kPending, std::memory_order_relaxed);
  Message *msg = message_in(b);
  msg->header = header;
  msg->data = ptr;
  msg->length = len;
  if (route.transport->send(route.context, route.address, dgid, msg) != ROCL_OK) {
    release_lent(b);
    return false;
  }
  *block = b;
  return true;
}

// A lent send's request completed (or its send failed before it left).
void Router::release_lent(BlockHeader *block) noexcept {
  end_message(block);
  pool_->release(block, BlockState::kLibrary);
}

}  // namespace rocl::impl
