// shm_frame_writer.hpp - writing frames into a peer's ring, the sender's
// half of the protocol (shm_layout.hpp): a message as one short frame or as
// fragments, waiting for room (the flow control), ending a lap early, and
// publishing frames with the wake-up of a sleeping receiver.
//
// Contract: every member but next_message_id() is called with the Conn's
// mu held, by the one thread that holds it; the writer keeps no state of
// its own beyond its settings (the ring's is in the Conn).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "message/message.hpp"
#include "transport/shm/shm_internal.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::shm::detail {

class FrameWriter {
 public:
  FrameWriter(const shm::Config &cfg, const TransportEnv &env, const wire::Limits &limits,
              ShmCounters &counters) noexcept
      : hot_bytes_(cfg.hot_bytes),
        spin_us_(env.spin_us),
        max_fragment_bytes_(limits.max_fragment_bytes),
        counters_(counters) {}

  // Writes a message as frames into c. ROCL_OK, or ROCL_EPEER (the peer
  // died or broke the ring; what was written of the message is left for
  // the receiver to discard). A one-line frame is sealed without a fence:
  // the caller unlocks with unlock_and_wake.
  int write_message(Conn &c, rocl_gid_t destination, const CoreHeader &header,
                    const std::byte *data, std::uint64_t total);
  // Writes one frame at c.head and publishes it (fenced, receiver woken if
  // it must be); wait_space(c, frame_bytes(header_bytes, len)) must have
  // said yes.
  void put_frame(Conn &c, const void *header, std::uint64_t header_bytes, const std::byte *payload,
                 std::uint64_t len);
  // Waits until `need` bytes are free in c's ring. ROCL_OK or ROCL_EPEER.
  // The tail we saw last is a lower bound of the receiver's: if it leaves
  // room, the receiver's cache line is not touched at all (inline: a small
  // message's send asks every time).
  int wait_space(Conn &c, std::uint64_t need) {
    if (c.ring_bytes - (c.head - c.seen_tail) >= need) return ROCL_OK;
    return wait_space_slow(c, need);
  }
  // Before a message of one frame of `need` bytes: ends the lap early with
  // a wrap frame if need is at most kMaxWrapFrame, the head is hot_bytes
  // and four times need or more into the ring, and the receiver at most
  // half the lap behind (Config::hot_bytes). Inline: a small message's
  // send asks every time.
  void wrap_early(Conn &c, std::uint64_t need) {
    const std::uint64_t off = c.head & (c.ring_bytes - 1);
    if (c.head < c.wrap_look_at || off < hot_bytes_ || off < 4 * need || need > kMaxWrapFrame ||
        hot_bytes_ == 0 || hot_bytes_ > c.ring_bytes / 4) {
      return;
    }
    wrap_early_slow(c, need);
  }
  // Unlocks c (lk) after a write, then wakes the receiver if it must: the
  // unlock's exchange is the fence a one-line frame's seal left out.
  static void unlock_and_wake(Conn &c, std::unique_lock<ConnMutex> &lk);
  // A message id unique among this transport's messages (any thread).
  std::uint64_t next_message_id() noexcept {
    return next_id_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  static bool put_lines(Conn &c, const wire::ShortHeader &h, const std::byte *payload,
                        std::uint64_t len, std::uint64_t bytes);
  static void publish(Conn &c, std::byte *at, std::uint64_t bytes);
  // publish() without its fence and wake check: the caller unlocks c->mu
  // and then calls wake_if_asleep (unlock_and_wake).
  static void seal_frame(Conn &c, std::byte *at, std::uint64_t bytes);
  // Wakes c's receiver if it sleeps and none of its callers polls; after
  // a full fence between the seals' stores and this.
  static void wake_if_asleep(const Conn &c);
  int wait_space_slow(Conn &c, std::uint64_t need);
  void wrap_early_slow(Conn &c, std::uint64_t need);
  static void copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n);
  static void own_ahead(const Conn &c, std::uint64_t bytes);
  std::uint64_t fragment_bytes(const Conn &c, std::uint64_t total) const;

  const std::uint64_t hot_bytes_;           // Config::hot_bytes
  const std::uint32_t spin_us_;             // TransportEnv::spin_us
  const std::uint32_t max_fragment_bytes_;  // wire::Limits::max_fragment_bytes
  std::atomic<std::uint64_t> next_id_{1};
  ShmCounters &counters_;
};

}  // namespace rocl::impl::shm::detail
