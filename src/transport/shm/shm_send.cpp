// shm_send.cpp - the send side of the shm transport: send() (finding or
// making the connection, choosing eager frames or rendezvous), writing a
// message into the peer's ring as one or more frames, waiting for room in the
// ring (the flow control), and publishing frames with the wake-up of a
// sleeping receiver (design: shm_transport.hpp).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

int ShmTransportImpl::send(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                           Message *msg) noexcept {
  if (msg == nullptr) return fail(ROCL_EINVAL, "shm: send of a null message");
  if (msg->length > limits_.max_message_bytes) {
    return fail(ROCL_ETOOBIG, "shm: message of %zu bytes exceeds the limit %" PRIu64,
                static_cast<std::size_t>(msg->length), limits_.max_message_bytes);
  }
  std::shared_ptr<Conn> c;
  try {
    std::lock_guard<std::mutex> g(peers_mu_);
    auto &slot = peers_[peer];
    if (!slot) slot = std::make_shared<Conn>();
    c = slot;
  } catch (...) {
    return fail(ROCL_ENOMEM, "shm: out of memory");
  }
  std::unique_lock<std::mutex> lk(c->mu);
  if (c->dead) {
    forget(peer, c);
    return fail(ROCL_EPEER, "shm: peer process %d is gone", static_cast<int>(c->pid));
  }
  if (!c->connected) {
    const int rc = connect(*c, peer_address);
    if (rc != ROCL_OK) {
      c->dead = true;
      lk.unlock();
      forget(peer, c);
      return rc;
    }
  }
  bool rendezvous = c->rendezvous && env_.rendezvous_threshold != 0 &&
                    msg->length >= env_.rendezvous_threshold && in_pool(msg);
  if (rendezvous && !can_lend(*c, msg->length)) {
    rendezvous = false;  // lent enough to this receiver: copy it through the ring
    lend_refused_.fetch_add(1, std::memory_order_relaxed);
  }
  const int rc =
      rendezvous ? write_rendezvous(*c, destination, msg) : write_message(*c, destination, msg);
  if (rc != ROCL_OK) {
    c->dead = true;
    drop_pending(*c);
    lk.unlock();
    forget(peer, c);
    return rc;
  }
  lk.unlock();
  // A rendezvous block stays ours until the receiver has copied it.
  if (!rendezvous) finish_sent_block(env_, block_of(msg), true);
  return ROCL_OK;
}

// Makes the frames up to `head` visible, then wakes the receiver's thread
// only if it sleeps and no caller of the receiver is polling (that caller
// will see the frame; poll_end makes sure of it). Dekker pairing: we store
// head then load sleeping/pollers; the receiver stores sleeping/pollers
// then loads head.
void ShmTransportImpl::publish(Conn &c, std::uint64_t head) {
  c.head = head;
  c.ctl->head.store(head, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (c.hdr->sleeping.load(std::memory_order_relaxed) != 0 &&
      c.hdr->pollers.load(std::memory_order_relaxed) == 0) {
    wake(c.hdr);
  }
}

void ShmTransportImpl::wake(SegHeader *h) {
  h->wake_seq.fetch_add(1, std::memory_order_release);
  futex(&h->wake_seq, FUTEX_WAKE, 1, nullptr);
}

// Waits until `need` bytes are free in c's ring. ROCL_OK or ROCL_EPEER.
int ShmTransportImpl::wait_space(Conn &c, std::uint64_t need) {
  // The tail we saw last is a lower bound of the receiver's: if it leaves
  // room, do not touch the receiver's cache line at all.
  if (c.ring_bytes - (c.head - c.seen_tail) >= need) return ROCL_OK;
  int spins = 0;
  int sleep_us = 20;
  auto next_check = std::chrono::steady_clock::now();
  for (;;) {
    const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
    if (tail > c.head || c.head - tail > c.ring_bytes) {
      return fail(ROCL_EPEER, "shm: peer process %d corrupted the ring of slot %u", c.pid, c.slot);
    }
    c.seen_tail = tail;
    if (c.ring_bytes - (c.head - tail) >= need) return ROCL_OK;
    if (c.ctl->verdict.load(std::memory_order_relaxed) == kRefused) {
      return fail(ROCL_EPEER, "shm: peer process %d dropped slot %u", c.pid, c.slot);
    }
    if (++spins < 500) {
      cpu_relax();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      if (!peer_alive(c)) {
        return fail(ROCL_EPEER, "shm: peer process %d died with its ring full", c.pid);
      }
      next_check = now + std::chrono::milliseconds(20);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 1000);
  }
}

void ShmTransportImpl::copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n) {
  const std::uint64_t off = pos & (c.ring_bytes - 1);
  const std::uint64_t first = std::min(n, c.ring_bytes - off);
  std::memcpy(c.ring + off, src, first);
  if (n > first) std::memcpy(c.ring, src + first, n - first);
}

int ShmTransportImpl::write_message(Conn &c, rocl_gid_t destination, Message *msg) {
  const std::uint64_t total = msg->length;
  const std::uint64_t chunk = std::min<std::uint64_t>(c.ring_bytes / 4, limits_.max_fragment_bytes);
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = total > chunk ? wire::Kind::kFragment : wire::Kind::kEager;
  h.source = msg->header.source;
  h.destination = destination;
  h.tag = msg->header.tag;
  h.domain = msg->header.domain;
  h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
  h.total_length = total;
  const auto *data = static_cast<const std::byte *>(msg->data);
  std::uint64_t off = 0;
  do {
    const std::uint64_t len = std::min(total - off, chunk);
    h.fragment_offset = off;
    h.fragment_length = static_cast<std::uint32_t>(len);
    const std::uint64_t frame = sizeof h + pad64(len);
    if (const int rc = wait_space(c, frame); rc != ROCL_OK) return rc;
    std::memcpy(c.ring + (c.head & (c.ring_bytes - 1)), &h, sizeof h);
    if (len != 0) copy_in(c, c.head + sizeof h, data + off, len);
    publish(c, c.head + frame);
    off += len;
  } while (off < total);
  return ROCL_OK;
}

}  // namespace rocl::impl::shm::detail
