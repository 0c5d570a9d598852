// shm_rendezvous.hpp - large messages by rendezvous: the sender writes only
// a request naming the payload's offset in its buffer pool, which the
// receiver has mapped read-only at the handshake (PeerPools); the receiver
// delivers a stub, and the copy happens once a receive matches it
// (RendezvousReader), straight into a block or memory of the receive. A lent
// send (Message::lent) names the application's own memory instead, which the
// receiver reads with process_vm_readv (cross-memory attach): one copy from
// the sender's memory to the receive's. Here: which sends go by rendezvous
// (RendezvousPolicy), the sender's requests and the blocks it lends until
// they are handed back (RendezvousSender), and the senders' pools mapped by
// the receiver (PeerPools).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "message/message.hpp"
#include "transport/shm/shm_copy_offer.hpp"
#include "transport/shm/shm_frame_writer.hpp"
#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_peer_table.hpp"
#include "transport/shm/shm_written_parts.hpp"

namespace rocl::impl::shm::detail {

class ShmTransportImpl;

// Which sends go by rendezvous. Pure but for streams(), which remembers
// (under the Conn's mu) what it saw; any thread.
class RendezvousPolicy {
 public:
  RendezvousPolicy(const shm::Config &cfg, const TransportEnv &env,
                   const ShmCounters &counters) noexcept
      : env_threshold_(env.rendezvous_threshold),
        cfg_threshold_(cfg.rendezvous_threshold),
        stream_threshold_(cfg.stream_rendezvous_threshold),
        lend_threshold_(cfg.lend_threshold),
        pool_(env.pool),
        arrivals_(counters.arrivals),
        pool_send_limit_(env_threshold_ == 0 ? kBytesSendLimit
                                             : std::min(kBytesSendLimit, threshold() - 1)) {}

  // Whether send() should send msg to c (locked) by rendezvous, if the
  // lending bound leaves room (RendezvousSender::can_lend). A lent message
  // (the core decided its size) goes by rendezvous if the receiver reads
  // our memory and it is not too small for that to pay
  // (ROCL_SHM_LEND_THRESHOLD). A pool buffer goes by rendezvous from
  // ROCL_SHM_RNDV_THRESHOLD, or from ROCL_SHM_STREAM_RNDV_THRESHOLD while
  // it streams (streams()).
  bool prefers(Conn &c, const Message *msg) noexcept {
    return is_lent(msg)
               ? c.lend_memory && msg->length >= lend_threshold_
               : c.rendezvous && env_threshold_ != 0 &&
                     (msg->length >= threshold() || msg->rendezvous || streams(c, msg->length)) &&
                     in_pool(msg);
  }
  // The largest pool buffer send_bytes() takes: below the size send()
  // would send by rendezvous.
  std::size_t pool_send_limit() const noexcept { return pool_send_limit_; }
  // Whether a pool buffer of `length` bytes to c streams, and so goes by
  // rendezvous from Config::stream_rendezvous_threshold: nothing arrived
  // over shm since our last message of such a size to c. A ping-pong's
  // reply arrives in between; its messages stay in the ring, whose copy
  // answers sooner. Remembers the count for the next one (c locked).
  bool streams(Conn &c, std::uint64_t length) noexcept {
    if (length < stream_from()) return false;
    const std::uint64_t now = arrivals_.load(std::memory_order_relaxed);
    const bool same = c.arrivals_at_stream_send == now;
    c.arrivals_at_stream_send = now;
    return same;
  }
  // What streams() would say, without remembering anything.
  bool streaming(const Conn &c) const noexcept {
    return arrivals_.load(std::memory_order_relaxed) == c.arrivals_at_stream_send;
  }
  // The smallest pool buffer streams() may send by rendezvous (no limit: never).
  std::size_t stream_from() const noexcept {
    return stream_threshold_ == 0 ? ~std::size_t{0} : stream_threshold_;
  }

 private:
  // Pool buffers from this size go by rendezvous (ROCL_SHM_RNDV_THRESHOLD,
  // or ROCL_RNDV_THRESHOLD if lower; nonzero: the caller checked that).
  std::size_t threshold() const noexcept {
    return cfg_threshold_ != 0 ? std::min(env_threshold_, cfg_threshold_) : env_threshold_;
  }
  bool in_pool(const Message *msg) const noexcept {
    const auto *base = static_cast<const std::byte *>(pool_->region_base());
    const auto *p = static_cast<const std::byte *>(msg->data);
    return p >= base && msg->length <= pool_->region_bytes() &&
           static_cast<std::size_t>(p - base) <= pool_->region_bytes() - msg->length;
  }

  const std::size_t env_threshold_;     // TransportEnv::rendezvous_threshold
  const std::size_t cfg_threshold_;     // Config::rendezvous_threshold
  const std::size_t stream_threshold_;  // Config::stream_rendezvous_threshold
  const std::size_t lend_threshold_;    // Config::lend_threshold
  const BufferPool *pool_;
  const std::atomic<std::uint64_t> &arrivals_;
  const std::size_t pool_send_limit_;
};

// The sender's side: rendezvous requests, and the blocks lent to each
// receiver (Conn::pending, by cookie) until it hands them back.
// Contract: members taking a Conn are called with its mu held; reap_all()
// and has_pending() from any thread, never blocking.
class RendezvousSender {
 public:
  RendezvousSender(ShmTransportImpl &transport, PeerTable &peers, FrameWriter &writer,
                   WrittenParts &written, ShmCounters &counters, const BufferPool *pool) noexcept
      : transport_(transport),
        peers_(peers),
        writer_(writer),
        written_(written),
        pool_(pool),
        copier_(counters) {}

  // Whether msg may be lent to c now (reaps first).
  bool can_lend(Conn &c, const Message &msg);
  // Sends a rendezvous request for msg; its block waits in c.pending, and
  // is finished when the receiver hands it back. ROCL_OK or ROCL_EPEER.
  int write_request(Conn &c, rocl_gid_t destination, Message *msg);
  // Finishes the blocks c's receiver handed back; how many.
  int reap(Conn &c);
  // Fails every block lent to c: the peer is gone, its copies will never come.
  void drop_pending(Conn &c);
  // Progress: reaps every connection, takes and runs its receivers' copy
  // offers, fails what dead receivers were lent. Events handled.
  int reap_all();
  // Whether anything lent waits to be handed back.
  bool has_pending() const noexcept { return pending_total_.load(std::memory_order_relaxed) != 0; }

 private:
  void drop_pending_of_dead_peers();

  ShmTransportImpl &transport_;  // finish_sent, log
  PeerTable &peers_;
  FrameWriter &writer_;
  WrittenParts &written_;
  const BufferPool *pool_;
  OfferCopier copier_;
  std::atomic<std::int64_t> pending_total_{0};  // blocks lent, not yet reaped
  // When reap_all next asks whether the receivers of lent buffers live (a
  // dead one never hands them back; a lent send would wait for ever).
  std::atomic<std::int64_t> next_liveness_ns_{0};
};

// A sender's buffer pool as mapped here, once per slot, kept until we end.
struct PeerPool {
  const std::byte *base = nullptr;
  std::size_t bytes = 0;
};

// The receiver's side: senders' pools by slot, written once at the
// handshake (before any stub of that slot exists), read by any thread.
class PeerPools {
 public:
  PeerPools() = default;
  PeerPools(const PeerPools &) = delete;
  PeerPools &operator=(const PeerPools &) = delete;
  ~PeerPools();  // unmaps them

  void open(std::uint32_t slots) { pools_.resize(slots); }
  // Maps the pool of slot's sender (pid, its memfd fd, `bytes` long)
  // read-only. False if anything does not check out: the slot then works
  // without rendezvous of pool buffers.
  bool map(std::uint32_t slot, std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes);
  const PeerPool &of(std::uint32_t slot) const { return pools_[slot]; }

 private:
  std::vector<PeerPool> pools_;
};

}  // namespace rocl::impl::shm::detail
