// shm_peer_table.hpp - our connections, one per peer context, made on the
// first send to it and kept until it is found dead or the transport ends.
//
// Contract: conn_to() and drop() from any thread; a Conn found stays alive
// while the thread that found it uses it (the table's reference, or this
// thread's cache of it), even if another thread drops it meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

// The connections a thread sent on last, per table (PeerTable::conn_to): a
// thread that sends to a few peers again and again (one, or the children
// of a collective's tree, a ring's neighbours) then takes no shared lock
// and touches no reference count (the map's mutex and a shared_ptr copy
// would cost every send four locked read-modify-writes, a fair part of a
// small message's cost: rocl-bench bandwidth --transport shm of small
// messages and rocl-bench compare oversub's MPI bcast show it). Plain
// pointers, so that the thread-local needs no guard: the shared_ptrs that
// keep the Conns alive meanwhile are kept beside them (shm_peer_table.cpp).
struct LastConn {
  std::uint64_t instance = 0;  // PeerTable::instance_, never 0
  rocl_gid_t peer = 0;
  Conn *conn = nullptr;
};
struct RecentConns {
  static constexpr unsigned kSlots = 4;
  LastConn slot[kSlots];
  unsigned next = 0;  // the slot a miss fills: round robin
  unsigned hit = 0;   // the slot that answered last
};
inline constinit thread_local RecentConns t_recent_conns_{};

class PeerTable {
 public:
  using Map = std::map<rocl_gid_t, std::shared_ptr<Conn>>;

  // The connection to peer, made (not yet connected) if need be; nullptr:
  // out of memory. Inline, one this thread sent on lately (RecentConns): no
  // lock, no reference count, no call.
  Conn *conn_to(rocl_gid_t peer) noexcept {
    RecentConns &recent = t_recent_conns_;
    // The slot that answered last first: a thread sending to one peer
    // finds it at the first compare.
    for (unsigned n = 0, k = recent.hit; n < RecentConns::kSlots;
         ++n, k = (k + 1) % RecentConns::kSlots) {
      const LastConn &last = recent.slot[k];
      if (last.instance == instance_ && last.peer == peer && last.conn != nullptr) {
        recent.hit = k;
        return last.conn;
      }
    }
    return conn_to_shared(peer);
  }
  // Forgets a dead connection (called without c->mu): later sends to the
  // peer make a new one.
  void drop(rocl_gid_t peer, Conn *c) noexcept;

  // A pass over every connection (all()) under the table's lock: lock()
  // blocks, try_lock() does not (progress never blocks).
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }
  std::unique_lock<std::mutex> try_lock() {
    return std::unique_lock<std::mutex>(mu_, std::try_to_lock);
  }
  Map &all() noexcept { return peers_; }

 private:
  Conn *conn_to_shared(rocl_gid_t peer) noexcept;
  // Unique among the tables this process ever made (the thread cache of
  // conn_to must not take one transport's connection for another's).
  static std::uint64_t next_instance() noexcept {
    static std::atomic<std::uint64_t> n{0};
    return n.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  const std::uint64_t instance_ = next_instance();
  std::mutex mu_;
  Map peers_;
};

}  // namespace rocl::impl::shm::detail
