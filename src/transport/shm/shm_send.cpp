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
  if (!rendezvous) finish_sent_block(env_, block_of(msg), true);
  return ROCL_OK;
}

int ShmTransportImpl::send_bytes(rocl_gid_t peer, std::string_view peer_address,
                                 rocl_gid_t destination, const CoreHeader &header, const void *data,
                                 std::size_t length, bool in_pool) noexcept {
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
// copies of variable length (memcpy calls) took about 130 instructions of a
// 64-byte message's ~600 on the sending side, which is a stream's slower
// one, and 180 of a 256-byte message's. The lines after the first first,
// as put_frame does. The caller's send_unlock fences and wakes. False
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
  // publish's fence waited for that line to come from the receiver's cache
  // (8-byte stream: +8-12 % messages/s).
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
  // fragment's worth in tens of microseconds, while a sleep lasts 50-80 us
  // on a VM whatever it asks for; sleeping after a few hundred spins
  // halved a stream's throughput whenever the ring filled. The spin starts
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
// (send_unlock). rocl-bench shm stream, alternated 8 rounds with the build
// before: 1-64 B +3-4 %, 256 B +13 %, 1 KiB +26 %, 16-64 KiB even (laps of
// 16 KiB). Laps of 4 KiB, or four frames where that is longer, against
// 16 KiB (12 rounds): 256 B +23 %, 1 KiB +33 %, 1-64 B even; 1 KiB one-way
// 0.85x (2026-11-29).
void ShmTransportImpl::wrap_early_slow(Conn &c, std::uint64_t need) {
  c.wrap_look_at = c.head + cfg_.hot_bytes;
  const std::uint64_t off = c.head & (c.ring_bytes - 1);
  const std::uint64_t rest = c.ring_bytes - off;
  const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
  if (tail > c.head || c.head - tail > c.ring_bytes) return;  // wait_space says what is wrong
  c.seen_tail = tail;
  // What the lap leaves free after the wrap is off - lag: at least half the
  // lap, so that the sender does not wait for the receiver at the next
  // messages (a 16 KiB MPI stream with the receiver a message behind
  // waited for each: 0.44x).
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
// message's path, while now they come while we wait for the reply. 4 KiB
// one-way 0.70 -> 0.65 us (alternated, 14 of 15 rounds faster); 256 B to
// 64 KiB and streams unchanged.
// Not after a frame of 10 to 17 lines (a message of 513 B to 1 KiB): its
// receiver is reading that frame's lines from our cache right now, and our
// requests for the next frame's lines slowed those reads down (1 KiB
// one-way 0.30 -> 0.28 us and streams +7-11 % without them, with
// prefetch_frame()'s whole frame). After smaller frames they pay in
// streams (64 B and 256 B streams were 10 % slower without them), after
// larger ones in both (4 KiB above). 2026-11-28, builds alternated, cpus
// on one die.
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
// copies the next one in; a message of at most 8 KiB is one frame. Measured
// (ping-pong one-way, against one frame up to a quarter ring, AMD EPYC VM):
// 4 KiB 0.85 -> 0.73 us, 64 KiB 5.5 -> 4.6, 256 KiB 16.9 -> 13.0, 1 MiB
// 40.8 -> 37.8. The lower bound was 2 KiB then; on the Intel Xeon VM of
// 2026-11-26 fragments below 8 KiB lost more to the per-frame work than
// they overlapped (rocl-bench --transport shm, 2 runs each, 2 KiB -> 8 KiB:
// one-way 4 KiB 1.17 -> 1.06 us, 8 KiB 1.79 -> 1.55; stream 4 KiB 8.7 ->
// 10.2 GB/s, 8 KiB 11.1 -> 13.6; 16-64 KiB unchanged).
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
