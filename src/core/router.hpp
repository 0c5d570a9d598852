// router.hpp - where a message for a resource goes: the in-process
// hand-off for a resource of this process, else the transport of a route
// to the resource's context, cached (RouteCache) or found in the directory
// and checked against its removal epoch. Also the two fast paths that need
// a route: small messages the transport copies without a pool block
// (send_small) and application memory lent to the receiver (lent sends).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "core/options.hpp"
#include "core/route_cache.hpp"
#include "core/stripe_sender.hpp"
#include "directory/directory.hpp"
#include "message/message.hpp"
#include "transport/transport.hpp"

namespace rocl::impl {

class Router {
 public:
  // options: the context's (thresholds, ROCL_TRANSPORTS for sentences);
  // registering: held exclusively while a registration of this process is
  // between the directory and the resource table (a route to a resource
  // just found waits for it). Both outlive the router.
  Router(const Options &options, std::shared_mutex &registering)
      : options_(options), registering_(&registering) {}
  Router(const Router &) = delete;
  Router &operator=(const Router &) = delete;

  // Set-up, once the context has them: its pool and directory, its
  // in-process hand-off (nullptr: none) and the other transports in order
  // of preference with how far each reaches (reach[k] is remote[k]'s);
  // then its own gid once registered.
  //
  // Rails: a peer is reached first by the first of `remote` that reaches
  // it (the route's transport); every later one of the same reach that
  // also reaches it is a further rail (a second tcp network, tcp and ucx),
  // over which messages of at least ROCL_STRIPE_THRESHOLD bytes are
  // striped (stripe_sender.hpp).
  void start(BufferPool *pool, Directory *directory, Transport *local,
             std::vector<Transport *> remote, std::vector<Reach> reach);
  void set_context(rocl_gid_t gid) noexcept { gid_ = gid; }

  // Posts msg (a block the library owns) to resource dgid: Transport::send
  // of the transport that reaches it, asking the directory when no route
  // is cached or a cached one fails. prefer_rendezvous: msg->rendezvous
  // for a transport between processes (the EPOS policy flag). ROCL_OK, or
  // the failure with its sentence (ROCL_EBADGID: no such resource); on
  // failure the caller keeps msg.
  int route(rocl_gid_t dgid, Message *msg, bool prefer_rendezvous) noexcept;

  // A small message to a resource of another context whose route is
  // cached: the transport copies it from where it is (Transport::send_bytes),
  // from caller memory or from a pool buffer, and no pool block is taken
  // for it. A buffer marked rocl_bftoret is claimed for the copy (a second
  // send of it meanwhile is refused) and goes back to the pool after it; a
  // kept one's rocl_bfstat says sent. True if it was sent (*rc =
  // ROCL_OK); false: take the usual path (large, local or unknown
  // destinations, a buffer the usual path refuses, a pool buffer the
  // transport would rather send with its block, or a failure here, which
  // the usual path meets again and words, with the directory asked).
  // Routes per resource (CoR's soft-ports bound to a network): the
  // messages `source` sends to another process take the rail named
  // `network` ("tcp", "tcp.2", "ucx": a transport end-point of this
  // context), never striped, wherever that rail reaches the peer (else
  // their usual route); "" undoes it. ROCL_EINVAL naming the rails there
  // are if there is no such one. Messages sent while it changes may take
  // either way (and overtake each other).
  int bind(rocl_gid_t source, std::string_view network) noexcept;
  // The same for a buffer (rocl_bfnet): *network = what a block's
  // `network` field holds for that network (0 for ""); ROCL_EINVAL naming
  // the networks there are if there is no such one.
  int network_of(std::string_view network, std::uint8_t *out) const noexcept;

  // Striped messages' acknowledgements (stripe_wire.hpp, StripeAck):
  // sends one for message `id` from `source` to source's context (the
  // message's destination resource, `from`, as its origin); and takes one
  // that came for a send of ours.
  int send_stripe_ack(rocl_gid_t from, rocl_gid_t source, std::uint64_t id) noexcept;
  void stripe_acknowledged(std::uint64_t id) noexcept { stripes_.acknowledged(id); }

  bool send_small(rocl_gid_t dgid, const CoreHeader &header, void *ptr, std::size_t len,
                  int *rc) noexcept;

  // Whether len bytes at ptr may be lent to dgid (size, memory, a cached
  // route whose transport takes lent memory: *route).
  bool may_lend(rocl_gid_t dgid, const void *ptr, std::size_t len, Route *route) noexcept;
  // A lent send (is_lent) over route: *block carries its envelope, in
  // flight until the transport finishes it (send_status). False: send it
  // the usual way.
  bool send_lent(const Route &route, rocl_gid_t dgid, const CoreHeader &header, void *ptr,
                 std::size_t len, BlockHeader **block) noexcept;
  // A lent send's block, once its request completed (or its send failed
  // before it left).
  void release_lent(BlockHeader *block) noexcept;

 private:
  int route_remote(rocl_gid_t dgid, Message *msg, bool prefer_rendezvous, std::uint64_t epoch,
                   RouteCache::Lookup found, Route route) noexcept;
  int resolve(rocl_gid_t dgid, Route *route) noexcept;
  // The rails to route->context after its first transport, remote_[first]
  // (route->rails set when there are more).
  void add_rails(std::size_t first, Route *route);
  bool stripes(const Route &route, std::size_t length) const noexcept {
    return route.rails != nullptr && options_.stripe_threshold != 0 &&
           length >= options_.stripe_threshold && length > options_.stripe_fragment;
  }
  int send_on_rails(const Route &route, rocl_gid_t dgid, Message *msg) noexcept;
  // msg over route's rails (stripes()): its block finished as a transport
  // would once every fragment is out.
  int send_striped(const Route &route, rocl_gid_t dgid, Message *msg) noexcept;
  BlockHeader *claim_small(void *ptr, std::size_t len) noexcept;
  void finish_small(BlockHeader *b, bool ok) noexcept;

  // The rail bound to `source` (bind), or nullptr.
  Transport *bound_rail(rocl_gid_t source) const noexcept;

  const Options &options_;
  std::shared_mutex *registering_;
  BufferPool *pool_ = nullptr;
  Directory *directory_ = nullptr;
  Transport *local_ = nullptr;
  std::string local_address_;
  std::vector<Transport *> remote_;
  std::vector<Reach> reach_;  // remote_[k]'s
  StripeSender stripes_;
  // Routes per resource (bind): few, looked up only while there are any.
  mutable std::shared_mutex bound_mutex_;
  std::unordered_map<rocl_gid_t, Transport *> bound_;
  std::atomic<bool> any_bound_{false};
  rocl_gid_t gid_ = ROCL_NULL_GID;
  RouteCache routes_;  // resource -> (context, transport, address) of other processes
};

}  // namespace rocl::impl
