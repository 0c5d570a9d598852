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

// The connection a thread sent on last, per table (PeerTable::conn_to): a
// thread that sends to one peer again and again then takes no shared lock
// and touches no reference count (the map's mutex and a shared_ptr copy
// would cost every send four locked read-modify-writes, a fair part of a
// small message's cost: rocl-bench bandwidth --transport shm of small
// messages shows it). A plain pointer, so that the thread-local needs no
// guard: the shared_ptr that keeps the Conn alive meanwhile is kept beside
// it (shm_peer_table.cpp).
struct LastConn {
  std::uint64_t instance = 0;  // PeerTable::instance_, never 0
  rocl_gid_t peer = 0;
  Conn *conn = nullptr;
};
inline constinit thread_local LastConn t_last_conn_{};

class PeerTable {
 public:
  using Map = std::map<rocl_gid_t, std::shared_ptr<Conn>>;

  // The connection to peer, made (not yet connected) if need be; nullptr:
  // out of memory. Inline, the one this thread sent on last (LastConn): no
  // lock, no reference count, no call.
  Conn *conn_to(rocl_gid_t peer) noexcept {
    const LastConn &last = t_last_conn_;
    if (last.instance == instance_ && last.peer == peer && last.conn != nullptr) return last.conn;
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
