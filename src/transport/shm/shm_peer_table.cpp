// shm_peer_table.cpp - finding, making and forgetting connections (see
// shm_peer_table.hpp).
#include "transport/shm/shm_peer_table.hpp"

namespace rocl::impl::shm::detail {

namespace {
// What keeps each of t_recent_conns_'s Conns alive while it is cached.
thread_local std::shared_ptr<Conn> t_recent_conns_keep[RecentConns::kSlots];
}  // namespace

Conn *PeerTable::conn_to_shared(rocl_gid_t peer) noexcept {
  RecentConns &recent = t_recent_conns_;
  const unsigned k = recent.next;
  try {
    std::lock_guard<std::mutex> g(mu_);
    auto &slot = peers_[peer];
    if (!slot) slot = std::make_shared<Conn>();
    t_recent_conns_keep[k] = slot;
    recent.slot[k] = LastConn{instance_, peer, slot.get()};
  } catch (...) {
    return nullptr;
  }
  recent.next = (k + 1) % RecentConns::kSlots;
  recent.hit = k;
  return recent.slot[k].conn;
}

void PeerTable::drop(rocl_gid_t peer, Conn *c) noexcept {
  std::shared_ptr<Conn> keep[RecentConns::kSlots];  // destroyed last, after the map's lock
  RecentConns &recent = t_recent_conns_;
  for (unsigned k = 0; k < RecentConns::kSlots; ++k) {
    if (recent.slot[k].conn == c) {
      keep[k] = std::move(t_recent_conns_keep[k]);
      recent.slot[k] = LastConn{};
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.get() == c) peers_.erase(it);
}

}  // namespace rocl::impl::shm::detail
