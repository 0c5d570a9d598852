// shm_internal.hpp - the small pieces the parts of the shm transport share
// (internal to src/transport/shm/; the design is described in
// shm_transport.hpp, the segment layout in shm_layout.hpp): waiting on an
// inbox, the frame sizes both sides tune to, the counters, a sender's
// connection (Conn), a receiver's private slot state (RxSlot) and what a
// rendezvous stub holds. The parts, one job each:
//   shm_transport_impl.hpp     ShmTransportImpl: the Transport; owns the
//                              parts below and forwards its hooks to them
//   shm_inbox_segment.hpp      InboxSegment: our memfd segment
//   shm_inbox.hpp              Inbox: the receive rings, polled under a
//                              try-lock
//   shm_slot_reader.hpp        SlotReader: the frames of one slot,
//                              validated and delivered
//   shm_poll_lease.hpp         PollLease: the `pollers` word and its lease
//   shm_peer_table.hpp         PeerTable: our connections by peer
//   shm_connect.hpp            Connector: mapping a peer's inbox, the
//                              handshake
//   shm_frame_writer.hpp       FrameWriter: frames into a peer's ring
//   shm_rendezvous.hpp         RendezvousPolicy: which sends go by
//                              rendezvous; RendezvousSender: their requests
//                              and lent blocks; PeerPools: senders' pools
//                              mapped here
//   shm_rendezvous_reader.hpp  RendezvousReader: pulling a stub's payload,
//                              the receiver's side of copy offers
//   shm_copy_offer.hpp         OfferCopier: the sender's side of copy offers
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "buffer/buffer_pool.hpp"
#include "rocl/platform/cpu.hpp"
#include "rocl/platform/futex.hpp"
#include "rocl/platform/locks.hpp"
#include "rocl/platform/small_copy.hpp"
#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_process.hpp"
#include "transport/shm/shm_transport.hpp"
#include "wire/message_header.hpp"

namespace rocl::impl::shm::detail {

// ---- Waiting ----------------------------------------------------------------

using platform::cpu_relax;
using platform::FutexScope;

// The inbox's wake-up word is shared between processes. The progress
// thread sleeps on it naming itself with kThreadBits, so that the wakes of
// callers asleep there (wake_inbox_sleepers, kCallerBits) leave it asleep;
// a wake of the thread (all bits) wakes those callers too, who look again.
inline constexpr std::uint32_t kThreadBits = 1;
inline constexpr std::uint32_t kCallerBits = 2;
inline void wake_inbox(std::atomic<std::uint32_t> *word) {
  platform::futex_wake(word, INT_MAX, FutexScope::kShared);
}
// Sleeps while *word == seen, at most `timeout` (relative; nullptr: no
// limit), as the inbox's thread.
inline void sleep_on_inbox(std::atomic<std::uint32_t> *word, std::uint32_t seen,
                           const timespec *timeout) {
  timespec until{};
  const timespec *limit = nullptr;
  if (timeout != nullptr) {
    ::clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout->tv_sec;
    until.tv_nsec += timeout->tv_nsec;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_nsec -= 1000000000L;
      ++until.tv_sec;
    }
    limit = &until;
  }
  platform::futex_wait_bits(word, seen, kThreadBits, limit, FutexScope::kShared);
}
// Wakes the thread of the inbox whose header is h.
inline void wake_inbox_thread(SegHeader *h) {
  h->wake_seq.fetch_add(1, std::memory_order_release);
  wake_inbox(&h->wake_seq);
}
// Wakes the callers asleep on the inbox's word (TransportCaps::caller_wake),
// not its thread.
inline void wake_inbox_sleepers(SegHeader *h) {
  h->wake_seq.fetch_add(1, std::memory_order_release);
  platform::futex_wake_bits(&h->wake_seq, INT_MAX, kCallerBits, FutexScope::kShared);
}

// ---- Frame sizes ------------------------------------------------------------

// Payload bytes a short frame's first line holds after the seal and the
// header (24): a message up to this size is one line, one up to 88 two.
inline constexpr std::uint64_t kFirstLinePayload =
    kFrameAlign - kSealBytes - sizeof(wire::ShortHeader);

// The largest frame before which a sender may end its lap early (a message
// of up to 4 KiB less its header; Config::hot_bytes). Its lap is then at
// least four frames long (16 KiB). Not more: the frames of MPI's 4 KiB
// messages stream far slower with wraps and laps that short (rocl-bench
// mpi's bw at 4 KiB shows it).
inline constexpr std::uint64_t kMaxWrapFrame = 4096;

// The most of a short frame RxSlot::prefetch_frame() asks for at once: the
// whole frame of a 1 KiB message. FrameWriter's own_ahead() skips frames of
// more than kOwnAheadSkipFrom bytes up to this (10-17 lines: 513 B to
// 1 KiB), whose receiver asks for all their lines while the sender would
// ask for the next frame's.
inline constexpr std::uint64_t kPrefetchFrameBytes = 17 * kFrameAlign;
inline constexpr std::uint64_t kOwnAheadSkipFrom = 9 * kFrameAlign;

// Up to this size a message from caller memory is copied straight into
// the ring (in fragments above 8 KiB) rather than into a pool block
// first; larger ones are rare below the rendezvous threshold.
inline constexpr std::size_t kBytesSendLimit = 65536;

// ---- Counters ---------------------------------------------------------------

// What shm::Stats reports (besides the base's delivered and refused
// counts), and arrivals, which RendezvousPolicy::streams() reads.
struct ShmCounters {
  std::atomic<std::uint64_t> refused{0}, poisoned{0};
  // Messages handed (or about to be handed) to the sink or to a receive,
  // counted before the hand-over so that a reply is counted before its
  // receiver can answer it (streams()).
  std::atomic<std::uint64_t> arrivals{0};
  std::atomic<std::uint64_t> lend_refused{0}, paused_reads{0}, early_wraps{0};
  std::atomic<std::uint64_t> parts_copied_for_receivers{0}, parts_copied_by_senders{0};
  std::atomic<std::uint64_t> first_parts_copied_by_senders{0}, parts_copied_into_mapped_pools{0};
};

// Adds one to a counter only one thread adds to (the holder of the inbox's
// try-lock): a plain load and store (a locked add per delivered message
// would be a fair part of its cost).
inline void count(std::atomic<std::uint64_t> &c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// ---- A sender's connection ---------------------------------------------------

// The lock of a connection's senders: uncontended, one atomic instruction
// each way, inline; it may be held while a sender waits for ring space, so
// contended it sleeps.
using ConnMutex = platform::FutexMutex;

// Our side of a connection to a peer's inbox: a mapping and a claimed slot,
// the state of our ring in it (FrameWriter), the rendezvous blocks the peer
// has yet to hand back (RendezvousSender) and its copy offers
// (OfferCopier). Everything but no_offers under mu. Aligned to a cache line
// so that no other object of the heap (another thread's) shares the line of
// the lock every send takes.
struct alignas(64) Conn {
  ConnMutex mu;  // serialises the senders of this process to the peer
  bool connected = false;
  bool dead = false;
  std::byte *seg = nullptr;
  std::size_t seg_bytes = 0;
  SegHeader *hdr = nullptr;
  SlotCtl *ctl = nullptr;
  std::byte *ring = nullptr;
  std::uint64_t ring_bytes = 0;
  std::uint64_t head = 0;          // where our next frame starts (ring position)
  std::uint64_t seen_tail = 0;     // the receiver's tail when we last read it
  std::uint64_t wrap_look_at = 0;  // head from which wrap_early reads the tail again
  // Our arrivals count at our last send of a streaming-size pool buffer
  // to this peer (RendezvousPolicy::streams): unchanged at the next one,
  // nothing came back in between.
  std::uint64_t arrivals_at_stream_send = ~std::uint64_t{0};
  std::uint64_t seal_key = 0;  // the slot's (shm_layout.hpp: SlotCtl)
  std::uint32_t slot = 0;
  pid_t pid = 0;
  std::uint64_t start_time = 0;
  // Rendezvous (only if the receiver can read our memory): blocks whose
  // payload the receiver will copy, by cookie, until it sets the bit.
  bool rendezvous = false;   // the receiver mapped our pool
  bool lend_memory = false;  // the receiver reads our memory (process_vm_readv)
  std::uint64_t pending_mask = 0;
  std::uint64_t pending_bytes = 0;  // of pool blocks (lent memory is not counted)
  BlockHeader *pending[64] = {};
  // process_vm_writev into the receiver was refused: take no more of its
  // copy offers (shm_copy_offer.cpp).
  std::atomic<bool> no_offers{false};
  // The receiver's pool mapped writable (Connector::map_receiver_pool), or
  // nullptr: the parts of its copy offers that land there are copied with
  // memcpy.
  std::byte *receiver_pool = nullptr;
  std::uint64_t receiver_pool_bytes = 0;

  ~Conn() {
    if (seg != nullptr) ::munmap(seg, seg_bytes);
    if (receiver_pool != nullptr) ::munmap(receiver_pool, receiver_pool_bytes);
  }

  // Whether the peer is still the process we connected to.
  bool peer_alive() const {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
    const std::uint64_t st = process_start(pid);
    return st != 0 && st == start_time;
  }
};

// ---- A receiver's slot -------------------------------------------------------

// The receiver's private state of one slot (never in shared memory), and
// the reading of its ring at and past the tail.
struct RxSlot {
  enum State { kNew, kOk, kPoisoned } state = kNew;
  std::uint64_t tail = 0;
  std::uint64_t seal_key = 0;  // the key of the frames' seals (shm_layout.hpp)
  std::byte *ring = nullptr;   // our own layout's, not the shared header's
  std::uint64_t ring_bytes = 0;
  std::uint32_t pid = 0;
  bool pool_mapped = false;      // PeerPools maps the sender's pool
  bool reads_memory = false;     // process_vm_readv read the sender's probe
  BlockHeader *block = nullptr;  // message being reassembled
  wire::MessageHeader first{};
  std::uint64_t done = 0;
  std::string name;     // "shm slot N (pid P)", for error sentences
  bool paused = false;  // no pool block for its next message: retried every kRetryMs
  // Messages in fragments to take the usual way before the next look for
  // one whole in the ring (SlotReader backs off after a miss).
  std::uint32_t whole_skip = 0;
  // Messages found one after the other, no empty look between them (a
  // receiver behind a streaming sender): Inbox's polls drain on.
  std::uint32_t found_in_row = 0;
  bool pause_logged = false;  // said so once

  // Where ring position pos is in the ring.
  std::byte *at(std::uint64_t pos) const { return ring + (pos & (ring_bytes - 1)); }
  // Whether a frame of `bytes` at the tail lies whole before the ring's end.
  bool fits_before_end(std::uint64_t bytes) const {
    return (tail & (ring_bytes - 1)) + bytes <= ring_bytes;
  }
  // Whether the frame at `at`, the tail, is there (its seal: shm_layout.hpp).
  bool sealed_at(const std::byte *at) const {
    return seal_at(const_cast<std::byte *>(at)).load(std::memory_order_acquire) ==
           (seal_key ^ tail);
  }
  void copy_out(std::uint64_t pos, std::byte *dst, std::uint64_t n) const {
    const std::uint64_t off = pos & (ring_bytes - 1);
    const std::uint64_t first_n = std::min(n, ring_bytes - off);
    std::memcpy(dst, ring + off, first_n);
    if (n > first_n) std::memcpy(dst + first_n, ring, n - first_n);
  }
  // Hands `bytes` at the tail back to the sender.
  void consume(SlotCtl *ctl, std::uint64_t bytes) {
    tail += bytes;
    ctl->tail.store(tail, std::memory_order_release);
  }
  // Past a wrap frame at the tail: the rest of the lap is consumed.
  void skip_to_lap_end(SlotCtl *ctl) { consume(ctl, ring_bytes - (tail & (ring_bytes - 1))); }
  // Asks for the ring's lines `from` to `to` frames of the smallest size
  // past the tail.
  void prefetch_ahead(int from, int to) const {
    for (int f = from; f <= to; ++f) platform::prefetch_for_read(at(tail + f * kFrameAlign));
  }
  // Asks for the lines of the short frame at `at` (the tail) past its
  // first, before its header is checked and a block found: the sender
  // wrote them just now, so each comes from its cache, and asked together
  // they come in one cross-core round trip instead of the two or three a
  // copy's loads make (the cpu's own prefetcher fetches lines in pairs and
  // learns a stream only after a few misses). Up to 17 lines
  // (kPrefetchFrameBytes), the whole frame of a 1 KiB message, after which
  // its sender skips own_ahead(); asking for all the lines of a larger
  // frame at once is slower (rocl-bench latency --transport shm of 256 B to
  // 4 KiB shows it). The length is read unchecked: a prefetch of a wrong
  // line is only wasted.
  void prefetch_frame(const std::byte *at) const {
    std::uint32_t claimed;  // ShortHeader::length
    std::memcpy(&claimed, at + kSealBytes + offsetof(wire::ShortHeader, length), sizeof claimed);
    const std::uint64_t end =
        std::min(frame_bytes(sizeof(wire::ShortHeader), claimed), kPrefetchFrameBytes);
    for (std::uint64_t off = kFrameAlign; off < end; off += kFrameAlign) {
      platform::prefetch_for_read(this->at(tail + off));
    }
  }
  // The payload of the short frame at `at` (the tail, header h) into b.
  void copy_short(const std::byte *at, const wire::ShortHeader &h, BlockHeader *b) const {
    const std::uint64_t frame = frame_bytes(sizeof h, h.length);
    const std::byte *payload = at + kSealBytes + sizeof h;
    if (frame == kFrameAlign) {
      platform::copy_small(payload_of(b), payload, h.length);
    } else if (frame <= kPrefetchFrameBytes && fits_before_end(frame)) {
      // 25 B to 1 KiB, not wrapped: fixed-size moves (copy_out calls
      // memcpy). One copy: the payload lies whole after the header (the
      // sender splits it only to write the first line last).
      platform::copy_upto1k(payload_of(b), payload, h.length);
    } else {
      copy_out(tail + kSealBytes + sizeof h, payload_of(b), h.length);
    }
  }
};

// ---- Rendezvous --------------------------------------------------------------

// What a stub's payload holds. `transport` first: rendezvous_transport().
struct Stub {
  Transport *transport;
  SlotCtl *ctl;
  const std::byte *pool;     // the sender's pool, mapped read-only; nullptr:
                             // the payload is in the sender's memory (lent)
  std::uint64_t pool_bytes;  // its size
  std::uint64_t offset;      // the payload's offset in it, or its address there
  std::uint64_t cookie;
  std::uint32_t pid;
  std::uint32_t slot;
  bool sender_holds_first = false;  // wire::kFlagSenderHoldsFirst
};

}  // namespace rocl::impl::shm::detail
