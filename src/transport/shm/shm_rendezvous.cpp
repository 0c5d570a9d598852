// shm_rendezvous.cpp - large messages by rendezvous: the sender writes only
// a request naming the payload's offset in its buffer pool, which the receiver
// has mapped read-only at the handshake; the receiver delivers a stub, and the
// copy happens once a receive matches it (pull), straight into a block of
// ours. A lent send (Message::lent) names the application's own memory
// instead, which the receiver reads with process_vm_readv (cross-memory
// attach): one copy from the sender's memory to the receive's. Here: the
// sender's side (can_lend: whether the lending bound leaves room,
// write_rendezvous, reaping the buffers copied), the receiver's side
// (map_peer_pool, probe_memory, take_rendezvous, pull, discard) and the
// stub helpers.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

// Rendezvous, receiver side (contract in transport.hpp): one copy from
// the sender's buffer straight into a block of ours, on the receiving
// thread, then the cookie goes back so the sender can free its buffer.
int ShmTransportImpl::pull_impl(Message *stub, Message **out) noexcept {
  const Stub st = stub_of(stub);
  const CoreHeader header = stub->header;
  const std::size_t len = stub->length;
  BlockHeader *b = env_.pool->allocate(len);
  if (b == nullptr) {  // the stub stays, for the core to queue again
    *out = stub;
    return fail(ROCL_ENOMEM, "shm: no pool block for a %zu-byte message from pid %u: %s", len,
                st.pid, last_error());
  }
  release_stub(stub);
  const int rc = read_peer(st, payload_of(b), len);
  hand_back(st);
  if (rc != ROCL_OK) {
    env_.pool->release(b, BlockState::kLibrary);
    return rc;
  }
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  Message *m = message_in(b);
  m->header = header;
  m->data = payload_of(b);
  m->length = len;
  *out = m;
  return ROCL_OK;
}

// One copy from the sender's mapped pool into the receiver's memory: a
// large MPI receive does not go through a pool block and a second copy.
int ShmTransportImpl::pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept {
  const Stub st = stub_of(stub);
  const std::size_t len = std::min<std::size_t>(stub->length, cap);
  release_stub(stub);
  const int rc = len == 0 ? ROCL_OK : read_peer(st, static_cast<std::byte *>(dst), len);
  hand_back(st);
  return rc;
}

void ShmTransportImpl::discard_impl(Message *stub) noexcept {
  const Stub st = stub_of(stub);
  release_stub(stub);
  hand_back(st);
}

bool ShmTransportImpl::in_pool(const Message *msg) const {
  const auto *base = static_cast<const std::byte *>(env_.pool->region_base());
  const auto *p = static_cast<const std::byte *>(msg->data);
  return p >= base && msg->length <= env_.pool->region_bytes() &&
         static_cast<std::size_t>(p - base) <= env_.pool->region_bytes() - msg->length;
}

Stub ShmTransportImpl::stub_of(Message *stub) {
  Stub st;
  std::memcpy(&st, payload_of(block_of(stub)), sizeof st);
  return st;
}

void ShmTransportImpl::release_stub(Message *stub) {
  BlockHeader *b = block_of(stub);
  std::destroy_at(stub);
  env_.pool->release(b, BlockState::kLibrary);
}

// Tells the sender it may free the buffer behind the cookie.
void ShmTransportImpl::hand_back(const Stub &st) {
  st.ctl->pulled.fetch_or(std::uint64_t{1} << st.cookie, std::memory_order_release);
}

// Copies the payload out of the sender's pool (or memory) into dst: the
// one copy (shared with the sender: shm_copy_offer.cpp). The offset comes
// from the other process: checked against the mapping (the kernel checks a
// lent address against the sender's).
int ShmTransportImpl::read_peer(const Stub &st, std::byte *dst, std::size_t len) {
  if (st.pool != nullptr && (st.offset > st.pool_bytes || len > st.pool_bytes - st.offset)) {
    return fail(ROCL_EPEER,
                "shm: rendezvous from pid %u (slot %u) names bytes %" PRIu64
                "+%zu outside its "
                "%" PRIu64 "-byte pool",
                st.pid, st.slot, st.offset, len, st.pool_bytes);
  }
  return read_shared(st, dst, len);
}

// Whether process_vm_readv reads `expect` at `address` in process pid: may
// a lent send's memory be read there (the Hello's probe).
bool ShmTransportImpl::probe_memory(std::uint32_t pid, std::uint64_t address,
                                    std::uint64_t expect) {
  std::uint64_t got = 0;
  iovec local{&got, sizeof got};
  iovec remote{reinterpret_cast<void *>(static_cast<std::uintptr_t>(address)), sizeof got};
  return ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof got) &&
         got == expect;
}

// Maps the sender's pool read-only (its memfd, sealed against shrinking so
// that it cannot make us fault). False if anything does not check out:
// the slot then works without rendezvous.
bool ShmTransportImpl::map_peer_pool(std::uint32_t slot, std::uint32_t pid, std::uint32_t fd,
                                     std::uint64_t bytes) {
  if (fd == ~0u || bytes == 0 || env_.pool == nullptr) return false;
  void *p = map_memfd_of(pid, fd, bytes, false);
  if (p == nullptr) return false;
  pools_[slot] = PeerPool{static_cast<const std::byte *>(p), bytes};
  return true;
}

// Another process's memfd (a buffer pool) mapped here, read-only or
// writable, if it is `bytes` long and sealed against shrinking (it cannot
// make us fault); nullptr if anything does not check out.
void *ShmTransportImpl::map_memfd_of(std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes,
                                     bool writable) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd);
  const int f = ::open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (f < 0) return nullptr;
  struct stat st {};
  const int seals = ::fcntl(f, F_GET_SEALS);
  void *p = MAP_FAILED;
  if (::fstat(f, &st) == 0 && static_cast<std::uint64_t>(st.st_size) == bytes && seals >= 0 &&
      (seals & F_SEAL_SHRINK) != 0) {
    p = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
               MAP_SHARED | MAP_NORESERVE, f, 0);
  }
  ::close(f);
  return p == MAP_FAILED ? nullptr : p;
}

// Sender: frees the buffers the receiver has copied. c.mu held.
int ShmTransportImpl::reap(Conn &c) {
  // A load first: a waiting sender reaps in a loop, and an exchange would
  // take the line from the receiver each time (it sets the bits there).
  if (c.pending_mask == 0 || c.ctl->pulled.load(std::memory_order_relaxed) == 0) return 0;
  const std::uint64_t done = c.ctl->pulled.exchange(0, std::memory_order_acq_rel) & c.pending_mask;
  (void)offers_finished_.load(std::memory_order_acquire);  // run_offers' copies are over
  for (std::uint64_t bits = done; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    BlockHeader *b = c.pending[i];
    c.pending[i] = nullptr;
    const Message *m = reinterpret_cast<const Message *>(owner_area_of(b));
    if (!is_lent(m)) c.pending_bytes -= m->length;
    finish_sent(b, true);  // a lent one's request completes now
  }
  c.pending_mask &= ~done;
  const int n = __builtin_popcountll(done);
  pending_total_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

// Sender: the peer is gone; its copies will never come. c.mu held.
void ShmTransportImpl::drop_pending(Conn &c) {
  for (std::uint64_t bits = c.pending_mask; bits != 0; bits &= bits - 1) {
    const int i = __builtin_ctzll(bits);
    finish_sent(c.pending[i], false);
    c.pending[i] = nullptr;
  }
  pending_total_.fetch_sub(__builtin_popcountll(c.pending_mask), std::memory_order_relaxed);
  c.pending_mask = 0;
  c.pending_bytes = 0;
}

// Frees copied buffers of every connection (progress, never blocks).
int ShmTransportImpl::reap_all() {
  if (pending_total_.load(std::memory_order_relaxed) == 0) return 0;
  std::unique_lock<std::mutex> g(peers_mu_, std::try_to_lock);
  if (!g.owns_lock()) return 0;
  int n = 0;
  // Copy offers of our lent messages' receivers are taken here and copied
  // after the locks are released (a copy takes microseconds).
  TakenOffer taken[kMaxTakenOffers];
  int n_taken = 0;
  for (auto &[peer, c] : peers_) {
    std::unique_lock<ConnMutex> lk(c->mu, std::try_to_lock);
    if (!lk.owns_lock()) continue;
    n += reap(*c);
    n_taken += take_offers(c, taken + n_taken, kMaxTakenOffers - n_taken);
  }
  drop_pending_of_dead_peers();
  g.unlock();
  return n + run_offers(taken, n_taken);
}

// A receiver that died never hands back what it was lent: every
// kLivenessMs (reap_all, peers_mu_ held) the connections that wait for
// cookies ask whether their peer lives; a dead one's buffers fail (a lent
// send's request completes with ROCL_EPEER) and the connection is dead.
void ShmTransportImpl::drop_pending_of_dead_peers() {
  constexpr std::int64_t kLivenessMs = 20;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  if (now < next_liveness_ns_.load(std::memory_order_relaxed)) return;
  next_liveness_ns_.store(now + kLivenessMs * 1000000, std::memory_order_relaxed);
  for (auto &[peer, c] : peers_) {
    std::unique_lock<ConnMutex> lk(c->mu, std::try_to_lock);
    if (!lk.owns_lock() || c->pending_mask == 0 || peer_alive(*c)) continue;
    c->dead = true;
    drop_pending(*c);
    char line[160];
    std::snprintf(line, sizeof line,
                  "shm: peer process %d died before taking the messages it was lent; their "
                  "sends fail",
                  static_cast<int>(c->pid));
    log(line);
  }
}

// Whether msg may be lent now: a free cookie, and for a pool block within
// the pending bound (lent application memory takes none of our pool). When
// not, it goes eager through the ring: rocl_send never waits for a receive
// (rocl.h), and the ring's back-pressure (which waits only for the
// receiver's progress, not its application) bounds memory.
bool ShmTransportImpl::can_lend(Conn &c, const Message &msg) {
  reap(c);
  return c.pending_mask != ~std::uint64_t{0} &&
         (is_lent(&msg) || c.pending_mask == 0 ||
          c.pending_bytes + msg.length <= shm::kMaxPendingBytes);
}

// Sends a rendezvous request for msg; its block waits in c.pending.
int ShmTransportImpl::write_rendezvous(Conn &c, rocl_gid_t destination, Message *msg) {
  const int cookie = __builtin_ctzll(~c.pending_mask);
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = wire::Kind::kRendezvousRequest;
  h.source = msg->header.source;
  h.destination = destination;
  h.tag = msg->header.tag;
  h.domain = msg->header.domain;
  h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
  h.total_length = msg->length;
  h.fragment_length = sizeof(wire::RendezvousBody);
  h.flags = is_lent(msg) ? wire::kFlagCallerMemory : 0;
  if (written_parts_.sender_holds_first(msg->data, msg->length)) {
    h.flags |= wire::kFlagSenderHoldsFirst;
  }
  const auto *base = static_cast<const std::byte *>(env_.pool->region_base());
  const auto *data = static_cast<const std::byte *>(msg->data);
  const auto address = is_lent(msg)
                           ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data))
                           : static_cast<std::uint64_t>(data - base);
  const wire::RendezvousBody body{address, static_cast<std::uint64_t>(cookie)};
  wrap_early(c, frame_bytes(sizeof h, sizeof body));
  if (const int rc = wait_space(c, frame_bytes(sizeof h, sizeof body)); rc != ROCL_OK) {
    return rc;
  }
  c.pending[cookie] = block_of(msg);
  c.pending_mask |= std::uint64_t{1} << cookie;
  if (!is_lent(msg)) c.pending_bytes += msg->length;
  pending_total_.fetch_add(1, std::memory_order_relaxed);
  put_frame(c, &h, sizeof h, reinterpret_cast<const std::byte *>(&body), sizeof body);
  return ROCL_OK;
}

// Receiver: a rendezvous request becomes a stub in the destination's
// mailbox; the copy happens when a receive matches it (pull).
int ShmTransportImpl::take_rendezvous(std::uint32_t i, RxSlot &s, SlotCtl *ctl,
                                      const wire::MessageHeader &h, std::uint64_t frame) {
  const bool lent = (h.flags & wire::kFlagCallerMemory) != 0;
  if (s.block != nullptr || !(lent ? s.reads_memory : s.pool_mapped)) {
    poison(i, s, ctl,
           s.block != nullptr ? "rendezvous request in the middle of a fragmented message"
           : lent ? "rendezvous request for lent memory, but the sender's memory is not "
                    "readable here"
                  : "rendezvous request, but the sender's pool is not mapped here",
           false);
    return -1;
  }
  wire::RendezvousBody body;
  copy_out(s, s.tail + kSealBytes + sizeof h, reinterpret_cast<std::byte *>(&body), sizeof body);
  if (body.cookie >= 64) {
    poison(i, s, ctl, "rendezvous cookie " + std::to_string(body.cookie) + " is not 0..63", false);
    return -1;
  }
  const bool holds_first = (h.flags & wire::kFlagSenderHoldsFirst) != 0;
  const Stub st =
      lent ? Stub{this, ctl, nullptr, 0, body.address, body.cookie, s.pid, i, holds_first}
           : Stub{this,  ctl, pools_[i].base, pools_[i].bytes, body.address, body.cookie,
                  s.pid, i,   holds_first};
  BlockHeader *b = receive_block(i, s, ctl, sizeof st);
  if (b == nullptr) return s.paused ? 0 : -1;  // paused: the request waits in the ring
  consume(s, ctl, frame);
  std::memcpy(payload_of(b), &st, sizeof st);
  count(arrivals_);
  hand_over(h.destination, arrived_stub(b, CoreHeader{h.source, h.tag, h.domain}, h.total_length),
            rx_waiter_, [&] { return "message from pid " + std::to_string(s.pid); });
  return kMessageDone;
}

}  // namespace rocl::impl::shm::detail
