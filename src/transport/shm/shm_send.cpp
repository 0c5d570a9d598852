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

int ShmTransportImpl::send_impl(rocl_gid_t peer, std::string_view peer_address,
                                rocl_gid_t destination, Message *msg) noexcept {
  if (msg == nullptr) return fail(ROCL_EINVAL, "shm: send of a null message");
  if (msg->length > limits_.max_message_bytes) {
    return fail(ROCL_ETOOBIG, "shm: message of %zu bytes exceeds the limit %" PRIu64,
                static_cast<std::size_t>(msg->length), limits_.max_message_bytes);
  }
  Conn *c = conn_to(peer);
  if (c == nullptr) return fail(ROCL_ENOMEM, "shm: out of memory");
  std::unique_lock<ConnMutex> lk(c->mu);
  if (const int rc = ready_locked(peer, peer_address, c, lk); rc != ROCL_OK) return rc;
  // A lent message (the core decided its size) goes by rendezvous if the
  // receiver reads our memory and it is not too small for that to pay
  // (ROCL_SHM_LEND_THRESHOLD), else it is copied through the ring now.
  // A pool buffer goes by rendezvous from ROCL_SHM_RNDV_THRESHOLD, or
  // from ROCL_SHM_STREAM_RNDV_THRESHOLD while it streams (streams()).
  bool rendezvous = is_lent(msg) ? c->lend_memory && msg->length >= cfg_.lend_threshold
                                 : c->rendezvous && env_.rendezvous_threshold != 0 &&
                                       (msg->length >= rendezvous_threshold() || msg->rendezvous ||
                                        streams(*c, msg->length)) &&
                                       in_pool(msg);
  if (rendezvous && !can_lend(*c, *msg)) {
    rendezvous = false;  // lent enough to this receiver: copy it through the ring
    lend_refused_.fetch_add(1, std::memory_order_relaxed);
  }
  const int rc = rendezvous ? write_rendezvous(*c, destination, msg)
                            : write_message(*c, destination, msg->header,
                                            static_cast<const std::byte *>(msg->data), msg->length);
  if (rc != ROCL_OK) return abandon(peer, c, lk, rc);
  send_unlock(*c, lk);
  // A rendezvous block stays ours until the receiver has copied it.
  if (!rendezvous) finish_sent(block_of(msg), true);
  return ROCL_OK;
}

int ShmTransportImpl::send_bytes_impl(rocl_gid_t peer, std::string_view peer_address,
                                      rocl_gid_t destination, const CoreHeader &header,
                                      const void *data, std::size_t length, bool in_pool) noexcept {
  if (length > (in_pool ? pool_send_limit_ : kBytesSendLimit)) return kNotTaken;
  Conn *c = conn_to(peer);
  if (c == nullptr) return fail(ROCL_ENOMEM, "shm: out of memory");
  std::unique_lock<ConnMutex> lk(c->mu);
  if (const int rc = ready_locked(peer, peer_address, c, lk); rc != ROCL_OK) return rc;
  if (length >= stream_from()) {
    if (in_pool && streaming(*c)) return kNotTaken;  // send() sends it by rendezvous
    streams(*c, length);  // a stream's first message: the next ones see whether it goes on
  }
  const int rc =
      write_message(*c, destination, header, static_cast<const std::byte *>(data), length);
  if (rc != ROCL_OK) return abandon(peer, c, lk, rc);
  send_unlock(*c, lk);
  return ROCL_OK;
}

// A write to c (locked by lk) failed with rc: the peer died or broke the
// ring. c is dead, what waits on it fails, and later sends make a new
// connection. Returns rc.
int ShmTransportImpl::abandon(rocl_gid_t peer, Conn *c, std::unique_lock<ConnMutex> &lk, int rc) {
  c->dead = true;
  drop_pending(*c);
  lk.unlock();
  drop_conn(peer, c);
  return rc;
}

int ShmTransportImpl::ready_locked(rocl_gid_t peer, std::string_view peer_address, Conn *c,
                                   std::unique_lock<ConnMutex> &lk) {
  if (c->dead) {
    const pid_t pid = c->pid;
    lk.unlock();
    drop_conn(peer, c);
    return fail(ROCL_EPEER, "shm: peer process %d is gone", static_cast<int>(pid));
  }
  if (c->connected) return ROCL_OK;
  const int rc = connect(*c, peer_address);
  if (rc != ROCL_OK) {
    c->dead = true;
    lk.unlock();
    drop_conn(peer, c);
  }
  return rc;
}

namespace {
// What keeps t_last_conn_'s Conn alive while it is cached.
thread_local std::shared_ptr<Conn> t_last_conn_keep;
}  // namespace

Conn *ShmTransportImpl::conn_to_shared(rocl_gid_t peer) noexcept {
  try {
    std::lock_guard<std::mutex> g(peers_mu_);
    auto &slot = peers_[peer];
    if (!slot) slot = std::make_shared<Conn>();
    t_last_conn_keep = slot;
    t_last_conn_ = LastConn{instance_, peer, slot.get()};
  } catch (...) {
    return nullptr;
  }
  return t_last_conn_.conn;
}

// Forgets a dead connection (called without c->mu): later sends to the peer
// make a new one.
void ShmTransportImpl::drop_conn(rocl_gid_t peer, Conn *c) noexcept {
  std::shared_ptr<Conn> keep;  // destroyed last, after the map's lock
  if (t_last_conn_.conn == c) {
    keep = std::move(t_last_conn_keep);
    t_last_conn_ = LastConn{};
  }
  std::lock_guard<std::mutex> g(peers_mu_);
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.get() == c) peers_.erase(it);
}

// Writes one frame at c.head and publishes it; wait_space(c,
// frame_bytes(header_bytes, len)) must have said yes. The header (a
// wire::ShortHeader or MessageHeader, or a Hello) and the payload first,
// then the seal (shm_layout.hpp). Then wakes the receiver's thread only if
// it sleeps and no caller of the receiver is polling (that caller will see
// the frame; poll_end makes sure of it). Dekker pairing: we store the seal
// then load sleeping/pollers; the receiver stores sleeping/pollers then
// loads the seal.
//
// The frame's first line, the one the receiver polls, is written last, in
// one burst with the seal: had it been written first, a poll between that
// write and the seal (while the lines after it are being written) would
// take the line back, and the seal would have to fetch it once more.
void ShmTransportImpl::put_frame(Conn &c, const void *header, std::uint64_t header_bytes,
                                 const std::byte *payload, std::uint64_t len) {
  constexpr std::uint64_t kFirstLine = kFrameAlign - kSealBytes;  // bytes after the seal
  const auto *h = static_cast<const std::byte *>(header);
  const std::uint64_t h_first = std::min(header_bytes, kFirstLine);
  const std::uint64_t p_first = std::min(len, kFirstLine - h_first);
  if (header_bytes > h_first) copy_in(c, c.head + kFrameAlign, h + h_first, header_bytes - h_first);
  if (len > p_first) {
    copy_in(c, c.head + kSealBytes + header_bytes + p_first, payload + p_first, len - p_first);
  }
  std::byte *at = c.ring + (c.head & (c.ring_bytes - 1));  // a frame's first line never wraps
  std::memcpy(at + kSealBytes, h, h_first);
  if (p_first != 0) std::memcpy(at + kSealBytes + h_first, payload, p_first);
  publish(c, at, frame_bytes(header_bytes, len));
}

// put_frame for a short frame of 2 to 17 lines (25 B to 1 KiB of payload,
// kPrefetchFrameBytes) that does not wrap, with fixed-size moves: put_frame's
// copies of variable length (memcpy calls) are a fair part of a small message's
// cost on the sending side, which is a stream's slower one (rocl-bench
// bandwidth --transport shm of 64-256 B shows it). The lines after the first
// first, as put_frame does. The caller's send_unlock fences and wakes. False
// (nothing written) if the frame would wrap.
bool ShmTransportImpl::put_lines(Conn &c, const wire::ShortHeader &h, const std::byte *payload,
                                 std::uint64_t len, std::uint64_t bytes) {
  const std::uint64_t off = c.head & (c.ring_bytes - 1);
  if (off + bytes > c.ring_bytes) return false;
  std::byte *at = c.ring + off;
  platform::copy_upto1k(at + kFrameAlign, payload + kFirstLinePayload, len - kFirstLinePayload);
  std::memcpy(at + kSealBytes, &h, sizeof h);
  std::memcpy(at + kSealBytes + sizeof h, payload, kFirstLinePayload);
  seal_frame(c, at, bytes);
  return true;
}

// Seals the frame of `bytes` bytes written at c.head (its place in the ring
// is `at`) and wakes the receiver if it must (put_frame).
void ShmTransportImpl::publish(Conn &c, std::byte *at, std::uint64_t bytes) {
  seal_frame(c, at, bytes);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_if_asleep(c);
}

void ShmTransportImpl::seal_frame(Conn &c, std::byte *at, std::uint64_t bytes) {
  seal_at(at).store(c.seal_key ^ c.head, std::memory_order_release);
  c.head += bytes;
  // The next frame's first line, taken now (while the receiver reads this
  // frame) rather than when the next frame is written: in a stream, each
  // publish's fence would wait for that line to come from the receiver's
  // cache (rocl-bench bandwidth --transport shm of small messages shows it).
  platform::prefetch_for_write(c.ring + (c.head & (c.ring_bytes - 1)));
}

void ShmTransportImpl::wake_if_asleep(const Conn &c) {
  if (c.hdr->sleeping.load(std::memory_order_relaxed) != 0 &&
      c.hdr->pollers.load(std::memory_order_relaxed) == 0) {
    wake(c.hdr);
  }
}

// c stays mapped after the unlock: this thread's t_last_conn_keep (or the
// caller's reference) holds it, and a Conn unmaps only when destroyed.
void ShmTransportImpl::send_unlock(Conn &c, std::unique_lock<ConnMutex> &lk) {
  lk.unlock();
  platform::fence_after_locked_rmw();
  wake_if_asleep(c);
}

void ShmTransportImpl::wake(SegHeader *h) {
  h->wake_seq.fetch_add(1, std::memory_order_release);
  wake_inbox(&h->wake_seq);
}

// wait_space past the room the tail seen last leaves.
int ShmTransportImpl::wait_space_slow(Conn &c, std::uint64_t need) {
  // Spin first, for ROCL_SPIN_US: a receiver that drains the ring frees a
  // fragment's worth sooner than a sleep ends (on a VM a sleep lasts far
  // longer than it asks for), so sleeping after a short spin would cost a
  // stream much of its throughput whenever the ring fills (rocl-bench
  // bandwidth --transport shm of large messages shows it). The spin starts
  // over whenever the receiver's tail moves, so that a receiver slowed
  // down (a slow phase of the VM) costs a stream its slowdown, not a sleep
  // per ring's worth. Then sleep, backing off.
  int spins = 0;
  int sleep_us = 20;
  const auto spin_for = std::chrono::microseconds(env_.spin_us);
  auto spin_end = std::chrono::steady_clock::now() + spin_for;
  bool spinning = env_.spin_us != 0;
  auto next_check = spin_end;
  std::uint64_t last_tail = c.seen_tail;
  for (;;) {
    const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
    if (tail > c.head || c.head - tail > c.ring_bytes) {
      return fail(ROCL_EPEER, "shm: peer process %d corrupted the ring of slot %u", c.pid, c.slot);
    }
    c.seen_tail = tail;
    if (c.ring_bytes - (c.head - tail) >= need) return ROCL_OK;
    if (tail != last_tail && env_.spin_us != 0) {
      last_tail = tail;
      spin_end = std::chrono::steady_clock::now() + spin_for;
      spinning = true;
      sleep_us = 20;
    }
    if (c.ctl->verdict.load(std::memory_order_relaxed) == kRefused) {
      return fail(ROCL_EPEER, "shm: peer process %d dropped slot %u", c.pid, c.slot);
    }
    if (spinning) {
      cpu_relax();
      if ((++spins & 63) != 0 || std::chrono::steady_clock::now() < spin_end) continue;
      spinning = false;
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

// The lap ends early (Config::hot_bytes): a one-line wrap frame at the
// head says so, and the head moves on to the ring's beginning. Only before
// a message of one frame of at most kMaxWrapFrame (fragmented messages
// want the whole ring to run ahead in), at least four such frames into the
// lap, and only if the receiver has read all but at most half the lap, so
// that what the lap skips and the message after it are free at once. The
// tail is read here once per hot window's worth of frames, and after a look
// that says no not again for another window. The wrap frame is sealed like
// a one-line message, fenced and announced with the message after it
// (send_unlock). Short laps keep a stream of small messages on lines that
// stay in both cpus' caches (rocl-bench bandwidth --transport shm of 256 B
// to 1 KiB, with Config::hot_bytes 0, shows it).
void ShmTransportImpl::wrap_early_slow(Conn &c, std::uint64_t need) {
  c.wrap_look_at = c.head + cfg_.hot_bytes;
  const std::uint64_t off = c.head & (c.ring_bytes - 1);
  const std::uint64_t rest = c.ring_bytes - off;
  const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
  if (tail > c.head || c.head - tail > c.ring_bytes) return;  // wait_space says what is wrong
  c.seen_tail = tail;
  // What the lap leaves free after the wrap is off - lag: at least half the
  // lap, so that the sender does not wait for the receiver at the next
  // messages (an MPI stream with its receiver a message behind would wait
  // at each: rocl-bench mpi's bw shows it).
  if (c.head - tail > off / 2 || c.ring_bytes - (c.head - tail) < rest + need) return;
  wire::ShortHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = wire::Kind::kWrap;
  std::byte *at = c.ring + off;  // a frame's first line never wraps
  std::memcpy(at + kSealBytes, &h, sizeof h);
  seal_frame(c, at, rest);
  c.wrap_look_at = c.head + cfg_.hot_bytes;
  count(early_wraps_);
}

void ShmTransportImpl::copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n) {
  const std::uint64_t off = pos & (c.ring_bytes - 1);
  const std::uint64_t first = std::min(n, c.ring_bytes - off);
  std::memcpy(c.ring + off, src, first);
  if (n > first) std::memcpy(c.ring, src + first, n - first);
}

// Asks for ownership of the ring lines after c.head that the next message
// will probably fill (as many as the last one took, at most 32 KiB, and
// only free ones), except the first line, which the receiver is about to
// poll. Written one lap ago, those lines have left the caches by now (a
// ring is 1 MiB) or sit in the receiver's as it read them; had the next
// send asked for each of them as it wrote, it would wait for them on the
// message's path, while now they come while we wait for the reply
// (rocl-bench latency --transport shm of 4 KiB shows it).
// Not after a frame of 10 to 17 lines (a message of 513 B to 1 KiB): its
// receiver is reading that frame's lines from our cache right now
// (prefetch_frame() asks for the whole frame), and our requests for the
// next frame's lines would slow those reads down. After smaller frames
// they pay in streams, after larger ones in ping-pongs (rocl-bench latency
// and bandwidth --transport shm of 64 B to 4 KiB show it).
void ShmTransportImpl::own_ahead(const Conn &c, std::uint64_t bytes) {
  constexpr std::uint64_t kMost = 32768;
  if (bytes > kOwnAheadSkipFrom && bytes <= kPrefetchFrameBytes) return;
  const std::uint64_t free = c.ring_bytes - (c.head - c.seen_tail);
  const std::uint64_t n = std::min({bytes, kMost, free});
  for (std::uint64_t off = kFrameAlign; off < n; off += kFrameAlign) {
    platform::prefetch_for_write(c.ring + ((c.head + off) & (c.ring_bytes - 1)));
  }
}

// The size of a message's fragments: about a quarter of the message, 8 to
// 32 KiB, so that the receiver copies one out of the ring while the sender
// copies the next one in; a message of at most 8 KiB is one frame, as
// smaller fragments lose more to the per-frame work than they overlap
// (rocl-bench latency and bandwidth --transport shm from 4 KiB show it).
std::uint64_t ShmTransportImpl::fragment_bytes(const Conn &c, std::uint64_t total) const {
  constexpr std::uint64_t kMin = 8192, kMax = 32768;
  const std::uint64_t quarter = (total / 4 + kFrameAlign - 1) & ~(kFrameAlign - 1);
  const std::uint64_t want = std::clamp(quarter, kMin, kMax);
  return std::min({want, c.ring_bytes / 4, std::uint64_t{limits_.max_fragment_bytes}});
}

int ShmTransportImpl::write_message(Conn &c, rocl_gid_t destination, const CoreHeader &header,
                                    const std::byte *data, std::uint64_t total) {
  // One frame (a short header): one cache line up to 24 bytes, asked
  // first, before the fragment size, which such a message does not need.
  const std::uint64_t bytes = frame_bytes(sizeof(wire::ShortHeader), total);
  if (bytes == kFrameAlign || total <= fragment_bytes(c, total)) {
    wire::ShortHeader h;
    h.magic = wire::kMagic;
    h.version = wire::kVersion;
    h.kind = wire::Kind::kShort;
    h.length = static_cast<std::uint32_t>(total);
    h.source = header.source;
    h.destination = destination;
    h.tag = header.tag;
    h.domain = header.domain;
    wrap_early(c, bytes);
    if (const int rc = wait_space(c, bytes); rc != ROCL_OK) return rc;
    if (bytes != kFrameAlign) {
      if (bytes > kPrefetchFrameBytes || !put_lines(c, h, data, total, bytes)) {
        put_frame(c, &h, sizeof h, data, total);
      }
      own_ahead(c, bytes);
      return ROCL_OK;
    }
    // One line, which never wraps: written with fixed-size moves.
    std::byte *at = c.ring + (c.head & (c.ring_bytes - 1));
    std::memcpy(at + kSealBytes, &h, sizeof h);
    platform::copy_small(at + kSealBytes + sizeof h, data, total);
    seal_frame(c, at, bytes);  // the caller's send_unlock fences and wakes
    return ROCL_OK;
  }
  const std::uint64_t chunk = fragment_bytes(c, total);
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = wire::Kind::kFragment;
  h.source = header.source;
  h.destination = destination;
  h.tag = header.tag;
  h.domain = header.domain;
  h.message_id = next_id_.fetch_add(1, std::memory_order_relaxed);
  h.total_length = total;
  const std::uint64_t start = c.head;
  std::uint64_t off = 0;
  do {
    const std::uint64_t len = std::min(total - off, chunk);
    h.fragment_offset = off;
    h.fragment_length = static_cast<std::uint32_t>(len);
    if (const int rc = wait_space(c, frame_bytes(sizeof h, len)); rc != ROCL_OK) return rc;
    put_frame(c, &h, sizeof h, data + off, len);
    off += len;
  } while (off < total);
  own_ahead(c, c.head - start);
  return ROCL_OK;
}

}  // namespace rocl::impl::shm::detail
