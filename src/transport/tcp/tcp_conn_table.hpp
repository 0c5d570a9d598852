// tcp_conn_table.hpp - the connections of the TCP transport: every open
// one (whichever side made it), and the one we send on to each peer, by
// the peer's listening address. Thread safe (one lock, taken briefly).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "transport/tcp/tcp_conn.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable {
 public:
  // A new connection on fd, with an id never used before; not yet listed.
  std::shared_ptr<Conn> make(int fd, rocl_gid_t peer, std::string name);

  // The live connection we send on to the peer listening at peer_address,
  // or nullptr (a dead one is forgotten here).
  std::shared_ptr<Conn> find_peer(std::string_view peer_address);
  // Lists an accepted connection (not yet one we send on).
  void add(const std::shared_ptr<Conn> &c);
  // Lists a connection we made to the peer at peer_address and returns
  // the one to send on: c, unless the peer connected to us meanwhile and
  // we may have sent on that one already (it keeps the role: order), in
  // which case c carries the peer's messages only.
  std::shared_ptr<Conn> add_connected(const std::shared_ptr<Conn> &c,
                                      const std::string &peer_address);
  // c, accepted and proved, becomes the connection we send on to the peer
  // listening at peer_address, unless we have one already.
  void adopt(Conn &c, const std::string &peer_address);

  // Whether c is listed (a driver's event may name one dropped earlier in
  // its batch).
  bool contains(Conn *c);
  // c's owner, or nullptr if c is no longer listed.
  std::shared_ptr<Conn> share(Conn &c);
  // Unlists c, calling close(c) under the table's lock first (so that a
  // walk of the table never meets it half closed); returns c's owner
  // (nullptr if c was not listed, and close was not called).
  template <class Close>
  std::shared_ptr<Conn> remove(Conn *c, Close &&close);

  // How many connections are open (read without the lock; with none, a
  // caller's progress() has nothing to poll).
  std::size_t count(std::memory_order order = std::memory_order_seq_cst) const noexcept {
    return count_.load(order);
  }
  // The connection when exactly one is open, else nullptr. A driver may
  // use it: only a driver drops a connection, so it stays alive while the
  // driver holds the receive lock.
  Conn *solo() const noexcept { return solo_.load(std::memory_order_acquire); }

  // f(Conn &) for every listed connection, under the table's lock (which
  // f must not take again). any_of stops at the first f that says true.
  template <class F>
  void for_each(F &&f);
  template <class F>
  bool any_of(F &&f);
  // Teardown: close(c) for every connection, then forgets them all.
  template <class Close>
  void clear(Close &&close);

 private:
  void recount() noexcept;  // under mu_

  // Looked up by string_view: no string made per send.
  struct AddressHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  std::mutex mu_;  // all_, peers_, Conn::peer_address
  std::unordered_map<Conn *, std::shared_ptr<Conn>> all_;
  std::unordered_map<std::string, std::shared_ptr<Conn>, AddressHash, std::equal_to<>> peers_;
  std::atomic<std::size_t> count_{0};  // all_.size()
  std::atomic<Conn *> solo_{nullptr};  // set with count_, under mu_
  std::atomic<std::uint64_t> next_id_{1};
};

template <class Close>
std::shared_ptr<Conn> ConnTable::remove(Conn *c, Close &&close) {
  std::lock_guard lock(mu_);
  auto it = all_.find(c);
  if (it == all_.end()) return nullptr;
  std::shared_ptr<Conn> owner = it->second;
  close(*c);
  if (!c->peer_address.empty()) {
    auto p = peers_.find(c->peer_address);
    if (p != peers_.end() && p->second.get() == c) peers_.erase(p);
    c->peer_address.clear();
  }
  all_.erase(it);
  recount();
  return owner;
}

template <class F>
void ConnTable::for_each(F &&f) {
  std::lock_guard lock(mu_);
  for (auto &[c, sp] : all_) f(*sp);
}

template <class F>
bool ConnTable::any_of(F &&f) {
  std::lock_guard lock(mu_);
  for (auto &[c, sp] : all_) {
    if (f(*sp)) return true;
  }
  return false;
}

template <class Close>
void ConnTable::clear(Close &&close) {
  std::lock_guard lock(mu_);
  for (auto &[c, sp] : all_) close(*sp);
  all_.clear();
  recount();
  peers_.clear();
}

}  // namespace rocl::impl::tcp::detail
