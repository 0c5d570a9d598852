// shm_frame_writer.cpp - writing a message into the peer's ring as one or
// more frames, waiting for room in the ring (the flow control), ending laps
// early, and publishing frames with the wake-up of a sleeping receiver (see
// shm_frame_writer.hpp; design: shm_transport.hpp).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>

#include "transport/shm/shm_frame_writer.hpp"

#include <optional>
#include <thread>

#include "status/status.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl::shm::detail {

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
void FrameWriter::put_frame(Conn &c, const void *header, std::uint64_t header_bytes,
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
// first, as put_frame does. The caller's unlock_and_wake fences and wakes. False
// (nothing written) if the frame would wrap.
bool FrameWriter::put_lines(Conn &c, const wire::ShortHeader &h, const std::byte *payload,
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
void FrameWriter::publish(Conn &c, std::byte *at, std::uint64_t bytes) {
  seal_frame(c, at, bytes);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_if_asleep(c);
}

void FrameWriter::seal_frame(Conn &c, std::byte *at, std::uint64_t bytes) {
  seal_at(at).store(c.seal_key ^ c.head, std::memory_order_release);
  c.head += bytes;
  // The next frame's first line, taken now (while the receiver reads this
  // frame) rather than when the next frame is written: in a stream, each
  // publish's fence would wait for that line to come from the receiver's
  // cache (rocl-bench bandwidth --transport shm of small messages shows it).
  platform::prefetch_for_write(c.ring + (c.head & (c.ring_bytes - 1)));
}

void FrameWriter::wake_if_asleep(const Conn &c) {
  if (c.hdr->wake_wanted.load(std::memory_order_relaxed) != 0 &&
      c.hdr->wake_wanted.exchange(0, std::memory_order_relaxed) != 0) {
    wake_inbox_sleepers(c.hdr);  // callers asleep on the word take the frame themselves
  } else if (c.hdr->sleeping.load(std::memory_order_relaxed) != 0 &&
             c.hdr->pollers.load(std::memory_order_relaxed) == 0) {
    wake_inbox_thread(c.hdr);
  }
}

// c stays mapped after the unlock: this thread's t_last_conn_keep (or the
// caller's reference) holds it, and a Conn unmaps only when destroyed.
void FrameWriter::unlock_and_wake(Conn &c, std::unique_lock<ConnMutex> &lk) {
  lk.unlock();
  platform::fence_after_locked_rmw();
  wake_if_asleep(c);
}

// wait_space past the room the tail seen last leaves.
int FrameWriter::wait_space_slow(Conn &c, std::uint64_t need) {
  // Spin first, as the waiting policy says (ROCL_SPIN_US; yielding when the
  // cpu is shared with other rocl threads, the receiver maybe among them):
  // a receiver that drains the ring frees a fragment's worth sooner than a
  // sleep ends (on a VM a sleep lasts far longer than it asks for), so
  // sleeping after a short spin would cost a stream much of its throughput
  // whenever the ring fills (rocl-bench bandwidth --transport shm of large
  // messages shows it). The spin starts over whenever the receiver's tail
  // moves, so that a receiver slowed down (a slow phase of the VM) costs a
  // stream its slowdown, not a sleep per ring's worth. Then sleep, backing
  // off.
  int sleep_us = 20;
  wait::SpinPhase phase(-1, std::chrono::microseconds(spin_us_));
  bool spinning = spin_us_ != 0;
  unsigned look = 0;
  auto next_check = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
  std::uint64_t last_tail = c.seen_tail;
  std::optional<wait::Asleep> asleep;
  for (;;) {
    const std::uint64_t tail = c.ctl->tail.load(std::memory_order_acquire);
    if (tail > c.head || c.head - tail > c.ring_bytes) {
      return fail(ROCL_EPEER, "shm: peer process %d corrupted the ring of slot %u", c.pid, c.slot);
    }
    c.seen_tail = tail;
    if (c.ring_bytes - (c.head - tail) >= need) return ROCL_OK;
    if (tail != last_tail && spin_us_ != 0) {
      last_tail = tail;
      spinning = phase.renew();
      asleep.reset();
      sleep_us = 20;
    }
    if (c.ctl->verdict.load(std::memory_order_relaxed) == kRefused) {
      return fail(ROCL_EPEER, "shm: peer process %d dropped slot %u", c.pid, c.slot);
    }
    if (spinning && (spinning = phase.next(++look))) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      if (!c.peer_alive()) {
        return fail(ROCL_EPEER, "shm: peer process %d died with its ring full", c.pid);
      }
      next_check = now + std::chrono::milliseconds(20);
    }
    if (!asleep) asleep.emplace();
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
// (unlock_and_wake). Short laps keep a stream of small messages on lines that
// stay in both cpus' caches (rocl-bench bandwidth --transport shm of 256 B
// to 1 KiB, with Config::hot_bytes 0, shows it).
void FrameWriter::wrap_early_slow(Conn &c, std::uint64_t need) {
  c.wrap_look_at = c.head + hot_bytes_;
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
  c.wrap_look_at = c.head + hot_bytes_;
  count(counters_.early_wraps);
}

void FrameWriter::copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n) {
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
void FrameWriter::own_ahead(const Conn &c, std::uint64_t bytes) {
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
std::uint64_t FrameWriter::fragment_bytes(const Conn &c, std::uint64_t total) const {
  constexpr std::uint64_t kMin = 8192, kMax = 32768;
  const std::uint64_t quarter = (total / 4 + kFrameAlign - 1) & ~(kFrameAlign - 1);
  const std::uint64_t want = std::clamp(quarter, kMin, kMax);
  return std::min({want, c.ring_bytes / 4, std::uint64_t{max_fragment_bytes_}});
}

int FrameWriter::write_message(Conn &c, rocl_gid_t destination, const CoreHeader &header,
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
    seal_frame(c, at, bytes);  // the caller's unlock_and_wake fences and wakes
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
  h.message_id = next_message_id();
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
