// shm_internal.hpp - what the shm transport's source files share (internal to
// src/transport/shm/; the design is described in shm_transport.hpp, the
// segment layout in shm_layout.hpp): the waiting primitives, a sender's
// connection (Conn), a receiver's private slot state (RxSlot), the rendezvous
// stub and mapped peer pool, and the declaration of ShmTransportImpl, whose
// members are defined by responsibility:
//   shm_transport.cpp   the counters and the factories
//   shm_connect.cpp     the inbox's life (segment creation, teardown) and
//                       connecting to a peer's inbox (the handshake)
//   shm_send.cpp        send(), writing frames into a peer's ring, waking it
//   shm_receive.cpp     the progress thread, callers' progress, reading and
//                       validating the rings, reassembly and delivery
//   shm_rendezvous.cpp  large messages copied straight out of the sender's
//                       pool: requests, stubs, pull/discard, reaping
#pragma once

#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "rocl/platform/cpu.hpp"
#include "rocl/platform/futex.hpp"
#include "rocl/platform/locks.hpp"
#include "rocl/platform/small_copy.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/shm/shm_written_parts.hpp"
#include "wire/message_header.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::shm::detail {

// ---- Waiting ----------------------------------------------------------------

using platform::cpu_relax;
using platform::FutexScope;

// The inbox's wake-up word is shared between processes.
inline void wake_inbox(std::atomic<std::uint32_t> *word) {
  platform::futex_wake(word, 1, FutexScope::kShared);
}
inline void sleep_on_inbox(std::atomic<std::uint32_t> *word, std::uint32_t seen,
                           const timespec *timeout) {
  platform::futex_wait(word, seen, timeout, FutexScope::kShared);
}

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

// The lock of a connection's senders: uncontended, one atomic instruction
// each way, inline; it may be held while a sender waits for ring space, so
// contended it sleeps.
using ConnMutex = platform::FutexMutex;

// ---- Connections and slots -------------------------------------------------

// Our side of a connection to a peer's inbox: a mapping and a claimed slot.
// Aligned to a cache line so that no other object of the heap (another
// thread's) shares the line of the lock every send takes.
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
  // Our arrivals_ count at our last send of a streaming-size pool buffer
  // to this peer (ShmTransportImpl::streams): unchanged at the next one,
  // nothing came back in between. (Under mu.)
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
  // The receiver's pool mapped writable (map_receiver_pool), or nullptr:
  // the parts of its copy offers that land there are copied with memcpy.
  std::byte *receiver_pool = nullptr;
  std::uint64_t receiver_pool_bytes = 0;

  ~Conn() {
    if (seg != nullptr) ::munmap(seg, seg_bytes);
    if (receiver_pool != nullptr) ::munmap(receiver_pool, receiver_pool_bytes);
  }
};

// The receiver's private state of one slot (never in shared memory).
struct RxSlot {
  enum State { kNew, kOk, kPoisoned } state = kNew;
  std::uint64_t tail = 0;
  std::uint64_t seal_key = 0;  // the key of the frames' seals (shm_layout.hpp)
  std::byte *ring = nullptr;   // our own layout's, not the shared header's
  std::uint32_t pid = 0;
  bool pool_mapped = false;      // pools_[slot] maps the sender's pool
  bool reads_memory = false;     // process_vm_readv read the sender's probe
  BlockHeader *block = nullptr;  // message being reassembled
  wire::MessageHeader first{};
  std::uint64_t done = 0;
  std::string name;     // "shm slot N (pid P)", for error sentences
  bool paused = false;  // no pool block for its next message: retried every kRetryMs
  // Messages in fragments to take the usual way before the next look for
  // one whole in the ring (deliver_whole_in_ring backs off after a miss).
  std::uint32_t whole_skip = 0;
  // Messages found one after the other, no empty look between them (a
  // receiver behind a streaming sender): poll_once's callers drain on.
  std::uint32_t found_in_row = 0;
  bool pause_logged = false;  // said so once
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

// A receiver's copy offer the sender took (shm_copy_offer.cpp): what to
// write where, once its locks are released.
struct TakenOffer {
  std::shared_ptr<Conn> conn;
  CopyOffer *offer;
  const std::byte *src;  // in our memory: the lent message's part
  std::uint64_t dest;    // in the receiver's
  std::uint64_t length;
  std::byte *mapped_dest;  // dest in our mapping of the receiver's pool, or nullptr
};

// A sender's buffer pool as mapped here, once per slot, kept until we end.
struct PeerPool {
  const std::byte *base = nullptr;
  std::size_t bytes = 0;
};

// ---- The transport -------------------------------------------------------------

// The connection a thread sent on last, per transport instance
// (ShmTransportImpl::conn_to): a thread that sends to one peer again and
// again then takes no shared lock and touches no reference count (the map's
// mutex and a shared_ptr copy would cost every send four locked
// read-modify-writes, a fair part of a small message's cost: rocl-bench
// bandwidth --transport shm of small messages shows it). A plain pointer, so
// that the thread-local needs no guard: the shared_ptr that keeps the Conn
// alive meanwhile is kept beside it (shm_send.cpp).
struct LastConn {
  std::uint64_t instance = 0;  // ShmTransportImpl::instance_, never 0
  rocl_gid_t peer = 0;
  Conn *conn = nullptr;
};
inline constinit thread_local LastConn t_last_conn_{};

class ShmTransportImpl final : public ShmTransport {
 public:
  // shm_connect.cpp
  ShmTransportImpl(const TransportEnv &env, const shm::Config &cfg, shm::LogFn log);
  ~ShmTransportImpl() override;
  int init();
  bool reaches_impl(std::string_view address) const noexcept override;
  std::string address_impl() const override { return address_; }

  // shm_transport.cpp
  shm::Stats stats() const noexcept override;

  // shm_send.cpp
  int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                Message *msg) noexcept override;
  // Declines a pool buffer from the size send() would send by rendezvous
  // (set by init), or from stream_from() while such buffers stream to
  // `peer` (streams()).
  int send_bytes_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                      const CoreHeader &header, const void *data, std::size_t length,
                      bool in_pool) noexcept override;

  // shm_receive.cpp
  int progress_impl(const Waiter *waiter) noexcept override;
  Message *take_arrived_impl(rocl_gid_t destination, const CoreHeader &pattern, ReadyFn ready,
                             const void *arg, bool *left) noexcept override;
  void poll_begin_impl() noexcept override;
  void poll_end_impl(bool will_sleep) noexcept override;

  // shm_rendezvous.cpp
  int pull_impl(Message *stub, Message **out) noexcept override;
  void discard_impl(Message *stub) noexcept override;
  int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept override;
  bool holds_unread_input_impl() const noexcept override {
    return paused_slots_.load(std::memory_order_relaxed) != 0;
  }

 private:
  // ---- Connecting (shm_connect.cpp) -------------------------------------------
  static bool peer_alive(const Conn &c);
  int connect(Conn &c, std::string_view peer_address);

  // ---- Sending (shm_send.cpp) -------------------------------------------------
  // The connection to peer, made if need be (nullptr: out of memory).
  // Inline, the one this thread sent on last (LastConn): no lock, no
  // reference count, no call.
  Conn *conn_to(rocl_gid_t peer) noexcept {
    const LastConn &last = t_last_conn_;
    if (last.instance == instance_ && last.peer == peer && last.conn != nullptr) return last.conn;
    return conn_to_shared(peer);
  }
  Conn *conn_to_shared(rocl_gid_t peer) noexcept;
  void drop_conn(rocl_gid_t peer, Conn *c) noexcept;
  static bool put_lines(Conn &c, const wire::ShortHeader &h, const std::byte *payload,
                        std::uint64_t len, std::uint64_t bytes);
  void put_frame(Conn &c, const void *header, std::uint64_t header_bytes, const std::byte *payload,
                 std::uint64_t len);
  void publish(Conn &c, std::byte *at, std::uint64_t bytes);
  // publish() without its fence and wake check: the caller unlocks c->mu
  // and then calls wake_if_asleep (send_unlock).
  static void seal_frame(Conn &c, std::byte *at, std::uint64_t bytes);
  // Wakes c's receiver if it sleeps and none of its callers polls; after
  // a full fence between the seals' stores and this.
  static void wake_if_asleep(const Conn &c);
  // Unlocks c (lk) after a write, then wakes the receiver if it must: the
  // unlock's exchange is the fence a one-line frame's seal_frame left out.
  static void send_unlock(Conn &c, std::unique_lock<ConnMutex> &lk);
  static void wake(SegHeader *h);
  // Waits until `need` bytes are free in c's ring. ROCL_OK or ROCL_EPEER.
  // The tail we saw last is a lower bound of the receiver's: if it leaves
  // room, the receiver's cache line is not touched at all (inline: a small
  // message's send asks every time).
  int wait_space(Conn &c, std::uint64_t need) {
    if (c.ring_bytes - (c.head - c.seen_tail) >= need) return ROCL_OK;
    return wait_space_slow(c, need);
  }
  int wait_space_slow(Conn &c, std::uint64_t need);
  // Before a message of one frame of `need` bytes: ends the lap early with
  // a wrap frame if need is at most kMaxWrapFrame, the head is
  // cfg_.hot_bytes and four times need or more into the ring, and the
  // receiver at most half the lap behind (Config::hot_bytes). Inline: a
  // small message's send asks every time.
  void wrap_early(Conn &c, std::uint64_t need) {
    const std::uint64_t off = c.head & (c.ring_bytes - 1);
    if (c.head < c.wrap_look_at || off < cfg_.hot_bytes || off < 4 * need || need > kMaxWrapFrame ||
        cfg_.hot_bytes == 0 || cfg_.hot_bytes > c.ring_bytes / 4) {
      return;
    }
    wrap_early_slow(c, need);
  }
  void wrap_early_slow(Conn &c, std::uint64_t need);
  void copy_in(Conn &c, std::uint64_t pos, const std::byte *src, std::uint64_t n);
  static void own_ahead(const Conn &c, std::uint64_t bytes);
  std::uint64_t fragment_bytes(const Conn &c, std::uint64_t total) const;
  // Up to this size a message from caller memory is copied straight into
  // the ring (in fragments above 8 KiB) rather than into a pool block
  // first; larger ones are rare below the rendezvous threshold.
  static constexpr std::size_t kBytesSendLimit = 65536;
  // c locked: connects it if need be. ROCL_OK, or why not (c then dropped
  // and `lk` unlocked).
  int ready_locked(rocl_gid_t peer, std::string_view peer_address, Conn *c,
                   std::unique_lock<ConnMutex> &lk);
  int abandon(rocl_gid_t peer, Conn *c, std::unique_lock<ConnMutex> &lk, int rc);
  // Writes a message as frames into c (locked). A one-line frame is sealed
  // without publish()'s fence: the caller unlocks with send_unlock.
  int write_message(Conn &c, rocl_gid_t destination, const CoreHeader &header,
                    const std::byte *data, std::uint64_t total);

  // ---- Receiving (shm_receive.cpp; whoever holds rx_busy_: the thread or a
  // polling caller) -------------------------------------------------------------
  int poll_locked(bool wait, const Waiter *waiter = nullptr) noexcept;
  // Whether `pollers` is raised: callers poll, or their lease runs.
  bool callers_poll() const noexcept { return raised_.load(std::memory_order_acquire); }
  void raise_pollers() noexcept;
  bool lower_pollers_if_idle() noexcept;
  void run();
  static int idle_spins() noexcept;
  void refresh_active() {
    const std::uint32_t claims = hdr_->claims.load(std::memory_order_acquire);
    if (claims != seen_claims_) rebuild_active(claims);
  }
  void rebuild_active(std::uint32_t claims);
  int poll_once(bool caller);
  // Frames a poll handles per slot before it looks at the others (fairness),
  // and how many frames ahead a drain behind a stream asks for the ring's
  // lines (a few: more or none stream slower, as rocl-bench bandwidth
  // --transport shm shows).
  static constexpr int kDrainFrames = 16;
  static constexpr int kDrainPrefetchFrames = 4;
  // The most of a short frame prefetch_frame() asks for at once: the whole
  // frame of a 1 KiB message. own_ahead() skips frames of more than
  // kOwnAheadSkipFrom bytes up to this (10-17 lines: 513 B to 1 KiB), whose
  // receiver asks for all their lines while the sender would ask for the
  // next frame's.
  static constexpr std::uint64_t kPrefetchFrameBytes = 17 * kFrameAlign;
  static constexpr std::uint64_t kOwnAheadSkipFrom = 9 * kFrameAlign;
  void prefetch_ahead(const RxSlot &s, int from, int to) const;
  void poison(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::string &why, bool refusal);
  void drop_partial(RxSlot &s);
  void copy_out(const RxSlot &s, std::uint64_t pos, std::byte *dst, std::uint64_t n) const;
  void consume(RxSlot &s, SlotCtl *ctl, std::uint64_t bytes);
  static constexpr int kMessageDone = 2;  // poll_slot: a frame ended a message
  bool take_wrap(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at);
  // Past a wrap frame at the tail: the rest of the lap is consumed.
  void skip_to_lap_end(RxSlot &s, SlotCtl *ctl) {
    consume(s, ctl, cfg_.ring_bytes - (s.tail & (cfg_.ring_bytes - 1)));
  }
  // Whether the frame at `at`, s's tail, is there (its seal: shm_layout.hpp).
  static bool sealed_at(const RxSlot &s, const std::byte *at) {
    return seal_at(const_cast<std::byte *>(at)).load(std::memory_order_acquire) ==
           (s.seal_key ^ s.tail);
  }
  int poll_slot(std::uint32_t i, RxSlot &s, SlotCtl *ctl);
  int take_hello(std::uint32_t i, RxSlot &s, SlotCtl *ctl);
  int take_short(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at);
  // Asks for the lines of the short frame at `at` (s's tail) past its first.
  void prefetch_frame(const RxSlot &s, const std::byte *at) const;
  void copy_short(const RxSlot &s, const std::byte *at, const wire::ShortHeader &h,
                  BlockHeader *b) const;
  // take_arrived's look at slot i's front frame, rx_busy_ held; ahead:
  // the receive did not wait for it (the sender is ahead of it).
  Message *take_front(std::uint32_t i, RxSlot &s, rocl_gid_t destination, const CoreHeader &pattern,
                      bool ahead);
  bool anything_left() const;
  // Out of line: poll_slot, on every message's path, stays small.
  [[gnu::noinline]] bool deliver_whole_in_ring(RxSlot &s, SlotCtl *ctl,
                                               const wire::MessageHeader &first,
                                               std::size_t header_bytes);
  bool same_message_fragment(const RxSlot &s, std::uint64_t pos, const wire::MessageHeader &first,
                             std::uint64_t offset, std::uint64_t len) const;
  BlockHeader *receive_block(std::uint32_t i, RxSlot &s, SlotCtl *ctl, std::uint64_t length);
  void pause(RxSlot &s, std::uint64_t length);
  void resume(RxSlot &s);
  bool retry_due();
  int deliver_block(std::uint32_t i, RxSlot &s, BlockHeader *b, const CoreHeader &header,
                    rocl_gid_t destination, std::uint64_t length);
  // Counters only the holder of rx_busy_ adds to: a plain load and store
  // (a locked add per delivered message would be a fair part of its cost).
  static void count(std::atomic<std::uint64_t> &c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // ---- Rendezvous (shm_rendezvous.cpp) ------------------------------------------
  bool in_pool(const Message *msg) const;
  static Stub stub_of(Message *stub);
  void release_stub(Message *stub);
  static void hand_back(const Stub &st);
  int read_peer(const Stub &st, std::byte *dst, std::size_t len);
  static bool probe_memory(std::uint32_t pid, std::uint64_t address, std::uint64_t expect);
  void drop_pending_of_dead_peers();
  bool map_peer_pool(std::uint32_t slot, std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes);
  static void *map_memfd_of(std::uint32_t pid, std::uint32_t fd, std::uint64_t bytes,
                            bool writable);
  static void map_receiver_pool(Conn &c);
  int reap(Conn &c);  // how many buffers it freed
  void drop_pending(Conn &c);
  int reap_all();  // how many buffers it freed
  bool can_lend(Conn &c, const Message &msg);
  int write_rendezvous(Conn &c, rocl_gid_t destination, Message *msg);
  // Pool buffers from this size go by rendezvous (ROCL_SHM_RNDV_THRESHOLD,
  // or ROCL_RNDV_THRESHOLD if lower; nonzero: the caller checked that).
  // Whether a pool buffer of `length` bytes to c streams, and so goes by
  // rendezvous from cfg_.stream_rendezvous_threshold
  // (ROCL_SHM_STREAM_RNDV_THRESHOLD): nothing arrived over shm since our
  // last message of such a size to c. A ping-pong's reply arrives in
  // between; its messages stay in the ring, whose copy answers sooner.
  // Remembers the count for the next one (c locked).
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
    const std::size_t from = cfg_.stream_rendezvous_threshold;
    return from == 0 ? ~std::size_t{0} : from;
  }
  std::size_t rendezvous_threshold() const noexcept {
    return cfg_.rendezvous_threshold != 0
               ? std::min(env_.rendezvous_threshold, cfg_.rendezvous_threshold)
               : env_.rendezvous_threshold;
  }
  int take_rendezvous(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const wire::MessageHeader &h,
                      std::uint64_t frame);

  // ---- Copy offers (shm_copy_offer.cpp) -------------------------------------------
  int read_shared(const Stub &st, std::byte *dst, std::size_t len);
  static int read_range(const Stub &st, std::byte *dst, std::size_t from, std::size_t n);
  CopyOffer *open_offer(const Stub &st, std::byte *dst, std::size_t from, std::size_t n);
  static void close_offer(CopyOffer *o);
  std::uint64_t offset_in_pool(const std::byte *p, std::size_t n) const;
  std::size_t share_min_bytes(const std::byte *dst) const;
  bool await_sender(const Stub &st, CopyOffer *o);
  static constexpr int kMaxTakenOffers = 4;  // per reap_all
  static int take_offers(const std::shared_ptr<Conn> &c, TakenOffer *out, int room);
  int run_offers(const TakenOffer *taken, int n);
  // Offers of a slot (bit k: offers[k]) a sender may still write to after
  // the receiver gave up waiting: never used again.
  std::unique_ptr<std::atomic<std::uint8_t>[]> retired_offers_;
  // Which part of the latest copy-offer receives this cpu wrote: the hint
  // write_rendezvous gives when one is sent on.
  WrittenParts written_parts_;

  shm::Config cfg_;
  std::optional<JobSecret> own_secret_;
  const JobSecret *secret_ = nullptr;
  wire::Limits limits_;
  std::string address_;

  int fd_ = -1;
  std::byte *seg_ = nullptr;
  std::size_t seg_bytes_ = 0;
  SegHeader *hdr_ = nullptr;
  JobSecret::Challenge challenge_{};
  std::vector<RxSlot> rx_;             // only by the holder of rx_busy_ (as the two below)
  std::vector<std::uint32_t> active_;  // claimed slots, in index order
  std::size_t first_slot_ = 0;         // where in active_ a caller's poll starts
  // Senders' pools by slot: written once at the handshake (before any stub
  // of that slot exists), read by pull() on any thread, unmapped at the end.
  std::vector<PeerPool> pools_;
  std::uint32_t seen_claims_ = 0;
  std::size_t pool_send_limit_ = 0;  // the largest pool buffer send_bytes() takes
  // Slots paused for want of a pool block (written by the holder of
  // rx_busy_, read by anyone), and when poll_once retries them next.
  std::atomic<std::uint32_t> paused_slots_{0};
  std::chrono::steady_clock::time_point next_retry_{};
  std::atomic_flag rx_busy_ = ATOMIC_FLAG_INIT;
  // The receive whose caller drives the input now (rx_busy_ held), handed
  // to the sink with each arrival; nullptr while the transport's thread or
  // a caller waiting for no receive drives it. Set and cleared under
  // rx_busy_ only.
  const Waiter *rx_waiter_ = nullptr;
  // The poll lease (shm_transport.hpp): whether hdr_->pollers is raised
  // (changed under lease_mu_), callers' polls (the thread's copy of it from
  // the last period, under lease_mu_), and whether a caller handed back.
  std::atomic<bool> raised_{false};
  std::atomic<std::uint64_t> polls_{0};
  std::uint64_t seen_polls_ = 0;
  std::atomic<bool> hand_back_{false};
  // The thread sleeps longer than a lease period (nobody polled when it
  // went to sleep): raise_pollers() must wake it, or the lease it starts
  // would be checked only when that sleep ends.
  std::atomic<bool> long_sleep_{false};
  std::mutex lease_mu_;
  // The current lease period (the thread's own: run() only).
  std::int64_t lease_us_ = shm::kPollLeaseUs;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Unique among the transports this process ever made (the thread cache of
  // conn_to must not take one transport's connection for another's).
  const std::uint64_t instance_ = next_instance();
  static std::uint64_t next_instance() noexcept {
    static std::atomic<std::uint64_t> n{0};
    return n.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::mutex peers_mu_;
  std::map<rocl_gid_t, std::shared_ptr<Conn>> peers_;
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::int64_t> pending_total_{0};  // rendezvous buffers not yet reaped
  // When reap_all next asks whether the receivers of lent buffers live (a
  // dead one never hands them back; a lent send would wait for ever).
  std::atomic<std::int64_t> next_liveness_ns_{0};
  // process_vm_readv works in this process (init: a read of our own
  // memory); whether a peer may read ours is probed per slot (Hello).
  bool cross_memory_ = false;

  std::atomic<std::uint64_t> refused_{0}, poisoned_{0};
  // Messages handed (or about to be handed) to the sink or to a receive,
  // counted before the hand-over so that a reply is counted before its
  // receiver can answer it (streams()).
  std::atomic<std::uint64_t> arrivals_{0};
  std::atomic<std::uint64_t> lend_refused_{0}, paused_reads_{0}, early_wraps_{0};
  std::atomic<std::uint64_t> parts_copied_for_receivers_{0}, parts_copied_by_senders_{0};
  std::atomic<std::uint64_t> first_parts_copied_by_senders_{0}, parts_copied_into_mapped_pools_{0};
  std::atomic<std::uint64_t> offers_finished_{0};  // run_offers -> reap (shm_copy_offer.cpp)
};

}  // namespace rocl::impl::shm::detail
