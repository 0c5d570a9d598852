// shm_rendezvous.cpp - the sender's side of rendezvous (its requests,
// reaping what receivers handed back, failing what dead ones were lent) and
// the senders' pools the receiver maps (see shm_rendezvous.hpp).
#include "transport/shm/shm_rendezvous.hpp"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_process.hpp"
#include "transport/shm/shm_transport_impl.hpp"

namespace rocl::impl::shm::detail {

// Sender: frees the buffers the receiver has copied. c.mu held.
int RendezvousSender::reap(Conn &c) {
  // A load first: a waiting sender reaps in a loop, and an exchange would
  // take the line from the receiver each time (it sets the bits there).
  if (c.pending_mask == 0 || c.ctl->pulled.load(std::memory_order_relaxed) == 0) return 0;
  const std::uint64_t done = c.ctl->pulled.exchange(0, std::memory_order_acq_rel) & c.pending_mask;
  copier_.acquire_copies();  // OfferCopier::run's copies are over
  for (std::uint64_t bits = done; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    BlockHeader *b = c.pending[i];
    c.pending[i] = nullptr;
    const Message *m = reinterpret_cast<const Message *>(owner_area_of(b));
    if (!is_lent(m)) c.pending_bytes -= m->length;
    transport_.finish_sent(b, true);  // a lent one's request completes now
  }
  c.pending_mask &= ~done;
  const int n = __builtin_popcountll(done);
  pending_total_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

// Sender: the peer is gone; its copies will never come. c.mu held.
void RendezvousSender::drop_pending(Conn &c) {
  for (std::uint64_t bits = c.pending_mask; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    transport_.finish_sent(c.pending[i], false);
    c.pending[i] = nullptr;
  }
  pending_total_.fetch_sub(__builtin_popcountll(c.pending_mask), std::memory_order_relaxed);
  c.pending_mask = 0;
  c.pending_bytes = 0;
}

// Frees copied buffers of every connection (progress, never blocks).
int RendezvousSender::reap_all() {
  if (pending_total_.load(std::memory_order_relaxed) == 0) return 0;
  std::unique_lock<std::mutex> g = peers_.try_lock();
  if (!g.owns_lock()) return 0;
  int n = 0;
  // Copy offers of our lent messages' receivers are taken here and copied
  // after the locks are released (a copy takes microseconds).
  TakenOffer taken[OfferCopier::kMaxTaken];
  int n_taken = 0;
  for (auto &[peer, c] : peers_.all()) {
    std::unique_lock<ConnMutex> lk(c->mu, std::try_to_lock);
    if (!lk.owns_lock()) continue;
    n += reap(*c);
    n_taken += OfferCopier::take(c, taken + n_taken, OfferCopier::kMaxTaken - n_taken);
  }
  drop_pending_of_dead_peers();
  g.unlock();
  return n + copier_.run(taken, n_taken);
}

// A receiver that died never hands back what it was lent: every
// kLivenessMs (reap_all, the peer table locked) the connections that wait for
// cookies ask whether their peer lives; a dead one's buffers fail (a lent
// send's request completes with ROCL_EPEER) and the connection is dead.
void RendezvousSender::drop_pending_of_dead_peers() {
  constexpr std::int64_t kLivenessMs = 20;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  if (now < next_liveness_ns_.load(std::memory_order_relaxed)) return;
  next_liveness_ns_.store(now + kLivenessMs * 1000000, std::memory_order_relaxed);
  for (auto &[peer, c] : peers_.all()) {
    std::unique_lock<ConnMutex> lk(c->mu, std::try_to_lock);
    if (!lk.owns_lock() || c->pending_mask == 0 || c->peer_alive()) continue;
    c->dead = true;
    drop_pending(*c);
    char line[160];
    std::snprintf(line, sizeof line,
                  "shm: peer process %d died before taking the messages it was lent; their "
                  "sends fail",
                  static_cast<int>(c->pid));
    transport_.log(line);
  }
}

// Whether msg may be lent now: a free cookie, and for a pool block within
// the pending bound (lent application memory takes none of our pool). When
// not, it goes eager through the ring: rocl_send never waits for a receive
// (rocl.h), and the ring's back-pressure (which waits only for the
// receiver's progress, not its application) bounds memory.
bool RendezvousSender::can_lend(Conn &c, const Message &msg) {
  reap(c);
  return c.pending_mask != ~std::uint64_t{0} &&
         (is_lent(&msg) || c.pending_mask == 0 ||
          c.pending_bytes + msg.length <= shm::kMaxPendingBytes);
}

// Sends a rendezvous request for msg; its block waits in c.pending.
int RendezvousSender::write_request(Conn &c, rocl_gid_t destination, Message *msg) {
  const int cookie = __builtin_ctzll(~c.pending_mask);
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = wire::Kind::kRendezvousRequest;
  h.source = msg->header.source;
  h.destination = destination;
  h.tag = msg->header.tag;
  h.domain = msg->header.domain;
  h.message_id = writer_.next_message_id();
  h.total_length = msg->length;
  h.fragment_length = sizeof(wire::RendezvousBody);
  h.flags = is_lent(msg) ? wire::kFlagCallerMemory : 0;
  if (written_.sender_holds_first(msg->data, msg->length)) {
    h.flags |= wire::kFlagSenderHoldsFirst;
  }
  const auto *base = static_cast<const std::byte *>(pool_->region_base());
  const auto *data = static_cast<const std::byte *>(msg->data);
  const auto address = is_lent(msg)
                           ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data))
                           : static_cast<std::uint64_t>(data - base);
  const wire::RendezvousBody body{address, static_cast<std::uint64_t>(cookie)};
  writer_.wrap_early(c, frame_bytes(sizeof h, sizeof body));
  if (const int rc = writer_.wait_space(c, frame_bytes(sizeof h, sizeof body)); rc != ROCL_OK) {
    return rc;
  }
  c.pending[cookie] = block_of(msg);
  c.pending_mask |= std::uint64_t{1} << cookie;
  if (!is_lent(msg)) c.pending_bytes += msg->length;
  pending_total_.fetch_add(1, std::memory_order_relaxed);
  writer_.put_frame(c, &h, sizeof h, reinterpret_cast<const std::byte *>(&body), sizeof body);
  return ROCL_OK;
}

PeerPools::~PeerPools() {
  for (const PeerPool &p : pools_) {
    if (p.base != nullptr) ::munmap(const_cast<std::byte *>(p.base), p.bytes);
  }
}

// Sealed against shrinking (map_memfd_of), so that it cannot make us fault.
bool PeerPools::map(std::uint32_t slot, std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes) {
  if (fd == ~0u || bytes == 0) return false;
  void *p = map_memfd_of(pid, fd, bytes, false);
  if (p == nullptr) return false;
  pools_[slot] = PeerPool{static_cast<const std::byte *>(p), bytes};
  return true;
}

}  // namespace rocl::impl::shm::detail
