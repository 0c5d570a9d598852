// tcp_conn_table.cpp - the TCP transport's table of connections
// (tcp_conn_table.hpp).
#include "transport/tcp/tcp_conn_table.hpp"

namespace rocl::impl::tcp::detail {

std::shared_ptr<Conn> ConnTable::make(int fd, rocl_gid_t peer, std::string name) {
  return std::make_shared<Conn>(next_id_.fetch_add(1), fd, peer, std::move(name));
}

std::shared_ptr<Conn> ConnTable::find_peer(std::string_view peer_address) {
  std::lock_guard lock(mu_);
  auto it = peers_.find(peer_address);
  if (it == peers_.end()) return nullptr;
  if (it->second->dead) {
    it->second->peer_address.clear();
    peers_.erase(it);
    return nullptr;
  }
  return it->second;
}

void ConnTable::add(const std::shared_ptr<Conn> &c) {
  std::lock_guard lock(mu_);
  all_.emplace(c.get(), c);
  recount();
}

std::shared_ptr<Conn> ConnTable::add_connected(const std::shared_ptr<Conn> &c,
                                               const std::string &peer_address) {
  std::lock_guard lock(mu_);
  all_.emplace(c.get(), c);
  recount();
  auto [it, fresh] = peers_.try_emplace(peer_address, c);
  if (!fresh) return it->second;
  c->peer_address = peer_address;
  return c;
}

void ConnTable::adopt(Conn &c, const std::string &peer_address) {
  std::lock_guard lock(mu_);
  auto it = all_.find(&c);
  if (it == all_.end()) return;
  if (peers_.try_emplace(peer_address, it->second).second) c.peer_address = peer_address;
}

bool ConnTable::contains(Conn *c) {
  std::lock_guard lock(mu_);
  return all_.find(c) != all_.end();
}

std::shared_ptr<Conn> ConnTable::share(Conn &c) {
  std::lock_guard lock(mu_);
  const auto it = all_.find(&c);
  return it != all_.end() ? it->second : nullptr;
}

void ConnTable::recount() noexcept {
  count_.store(all_.size());
  solo_.store(all_.size() == 1 ? all_.begin()->first : nullptr, std::memory_order_release);
}

}  // namespace rocl::impl::tcp::detail
