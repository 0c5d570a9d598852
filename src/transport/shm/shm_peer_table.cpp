// shm_peer_table.cpp - finding, making and forgetting connections (see
// shm_peer_table.hpp).
#include "transport/shm/shm_peer_table.hpp"

namespace rocl::impl::shm::detail {

namespace {
// What keeps t_last_conn_'s Conn alive while it is cached.
thread_local std::shared_ptr<Conn> t_last_conn_keep;
}  // namespace

Conn *PeerTable::conn_to_shared(rocl_gid_t peer) noexcept {
  try {
    std::lock_guard<std::mutex> g(mu_);
    auto &slot = peers_[peer];
    if (!slot) slot = std::make_shared<Conn>();
    t_last_conn_keep = slot;
    t_last_conn_ = LastConn{instance_, peer, slot.get()};
  } catch (...) {
    return nullptr;
  }
  return t_last_conn_.conn;
}

void PeerTable::drop(rocl_gid_t peer, Conn *c) noexcept {
  std::shared_ptr<Conn> keep;  // destroyed last, after the map's lock
  if (t_last_conn_.conn == c) {
    keep = std::move(t_last_conn_keep);
    t_last_conn_ = LastConn{};
  }
  std::lock_guard<std::mutex> g(mu_);
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.get() == c) peers_.erase(it);
}

}  // namespace rocl::impl::shm::detail
