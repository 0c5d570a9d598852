// shm_receive.cpp - the receive side of the shm transport, run by whoever
// holds rx_busy_ (the progress thread or a polling caller): callers' progress
// (progress, poll_begin/poll_end), the thread's poll-spin-sleep loop, the
// poll of the claimed slots, and poll_slot: checking a slot's Hello, decoding
// and validating each frame, reassembling fragments and delivering messages.
// Anything wrong in a slot poisons that slot only (design: shm_transport.hpp).
#include <sched.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

// Caller progress (contract in transport.hpp). The receive state (rx_) is
// guarded by rx_busy_, a try-lock: whoever holds it polls the rings.
//
// No shared counter of polling callers: a count raised in poll_begin and
// lowered in poll_end would cost two locked read-modify-writes per
// receive, one of them between a message's arrival and the receive's
// return. The thread tells instead from polls_, which every poll bumps with
// a plain store: it lowers `pollers` only after a whole lease period
// without one. Should it lower it just as a caller begins (seeing it still
// raised), that caller's next poll raises it again (t_spins: only a caller
// between poll_begin and poll_end does, not a lone rocl_test).
namespace {
thread_local int t_spins = 0;  // poll_begin()s of this thread not ended yet
}  // namespace

int ShmTransportImpl::progress_impl(const Waiter *waiter) noexcept {
  polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (t_spins != 0 && !raised_.load(std::memory_order_relaxed)) raise_pollers();
  // Freed buffers count as events: a sender waiting for lent sends to
  // complete spins on while they do (a window of them completes one by one,
  // and a sleep between two cost the window up to the sleep).
  const int reaped = reap_all();
  return reaped + poll_locked(false, waiter);
}

// The shortcut of a receive whose message waits at the front of a ring
// (contract in transport.hpp): a receiver behind a stream finds most of
// its messages so, and taking one here skips its delivery (the mailbox's
// lock, its queue, the receive's own lock to take it back out: rocl-bench
// bandwidth --transport shm of small messages shows it). Counts as a poll
// (the lease: senders do not wake the thread while receives keep taking).
Message *ShmTransportImpl::take_arrived_impl(rocl_gid_t destination, const CoreHeader &pattern,
                                             ReadyFn ready, const void *arg, bool *left) noexcept {
  if (rx_busy_.test(std::memory_order_relaxed) ||
      rx_busy_.test_and_set(std::memory_order_acquire)) {
    return nullptr;
  }
  polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  Message *m = nullptr;
  if (ready(arg)) {
    refresh_active();
    const std::size_t count = active_.size();
    for (std::size_t j = 0; j < count && m == nullptr; ++j) {
      std::size_t at = first_slot_ + j;
      if (at >= count) at -= count;
      m = take_front(active_[at], rx_[active_[at]], destination, pattern, left == nullptr);
    }
    // Asked after a miss only: a take's path stays as it was.
    if (m == nullptr && left != nullptr && anything_left()) *left = true;
    // Our own messages sent by rendezvous: their receivers' copy offers
    // and the buffers they hand back are progress()'s (reap_all), and a
    // receiver waits for the offer it made, which a sender that only
    // looked here would leave waiting (rocl-bench latency --transport shm
    // of 16-64 KiB shows it).
    if (left != nullptr && pending_total_.load(std::memory_order_relaxed) != 0) *left = true;
  } else if (left != nullptr) {
    *left = true;  // the mailbox first: the core's to say
  }
  rx_busy_.clear(std::memory_order_release);
  return m;
}

// After take_front missed on every slot, rx_busy_ held: whether one holds
// something for progress() (a frame at its front, which take_front left;
// a hello to check; a message half read; one waiting for a pool block).
bool ShmTransportImpl::anything_left() const {
  for (const std::uint32_t i : active_) {
    const RxSlot &s = rx_[i];
    if (s.state == RxSlot::kPoisoned) continue;
    if (s.state != RxSlot::kOk || s.paused || s.block != nullptr) return true;
    if (sealed_at(s, s.ring + (s.tail & (cfg_.ring_bytes - 1)))) return true;
  }
  return false;
}

// Only a short frame (one message whole in one frame) of a slot in use,
// between messages, not paused: anything else is progress()'s, which also
// says what is wrong with a bad frame.
Message *ShmTransportImpl::take_front(std::uint32_t i, RxSlot &s, rocl_gid_t destination,
                                      const CoreHeader &pattern, bool ahead) {
  if (s.state != RxSlot::kOk || s.paused || s.block != nullptr || env_.pool == nullptr) {
    return nullptr;
  }
  const std::byte *at = s.ring + (s.tail & (cfg_.ring_bytes - 1));
  if (sealed_at(s, at) &&
      static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]) == wire::Kind::kWrap) {
    // The lap ends here: past it, as poll_slot goes (which says what is
    // wrong with a bad one).
    if (wire::check_wrap_header(at + kSealBytes, s.name) != ROCL_OK) return nullptr;
    skip_to_lap_end(s, slot_ctl(seg_, i));
    at = s.ring;
  }
  if (!sealed_at(s, at) ||
      static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]) != wire::Kind::kShort) {
    return nullptr;
  }
  prefetch_frame(s, at);
  wire::ShortHeader h;
  if (wire::decode_short_header(at + kSealBytes, limits_, s.name, &h) != ROCL_OK) return nullptr;
  const CoreHeader header{h.source, h.tag, h.domain};
  if (h.destination != destination || !(header == pattern)) return nullptr;
  BlockHeader *b = env_.pool->allocate(h.length);
  if (b == nullptr) return nullptr;
  copy_short(s, at, h, b);
  consume(s, slot_ctl(seg_, i), frame_bytes(sizeof h, h.length));
  // Found at the first look: the sender is ahead, so ask for the lines of
  // the next frames now (the next receive's look then finds them here).
  // Not for a receive that waited here: the sender writes those lines
  // next, and each one asked for now it would have to take back
  // (rocl-bench latency --transport shm of 2-4 KiB shows it).
  if (ahead) prefetch_ahead(s, 1, kDrainPrefetchFrames);
  count(arrivals_);
  count_delivered();
  return arrived(b, header, h.length);
}

void ShmTransportImpl::poll_begin_impl() noexcept {
  ++t_spins;
  if (!raised_.load(std::memory_order_acquire)) raise_pollers();
}

void ShmTransportImpl::poll_end_impl(bool will_sleep) noexcept {
  --t_spins;
  if (!will_sleep) return;  // the lease: `pollers` stays raised (run())
  hand_back_.store(true, std::memory_order_relaxed);
  wake(hdr_);  // the thread takes over at once (and lowers `pollers`)
}

// Once raised, senders stop waking the thread, and only the thread ends
// the lease: if it sleeps long (run() saw nobody polling), it is woken to
// sleep a lease period instead. Without that, a caller that got its
// message and then blocked elsewhere (a barrier, a lock) while its
// process's other threads slept in receives would stall them all for the
// thread's whole long sleep (rocl-bench mpi's mt_rate shows it).
// Dekker with run(): we store raised_ then load long_sleep_, the thread
// stores long_sleep_ then loads raised_.
void ShmTransportImpl::raise_pollers() noexcept {
  {
    std::lock_guard<std::mutex> g(lease_mu_);
    if (raised_.load(std::memory_order_relaxed)) return;
    hdr_->pollers.store(1, std::memory_order_seq_cst);
    raised_.store(true, std::memory_order_seq_cst);
  }
  if (long_sleep_.load(std::memory_order_seq_cst)) wake(hdr_);
}

// The thread, every lease period while `pollers` is raised: lowers it if no
// caller polled since the last period (or one handed back before
// sleeping), then polls once (Dekker with the senders' wake check: a frame
// published while it was raised woke nobody). True if it lowered it.
bool ShmTransportImpl::lower_pollers_if_idle() noexcept {
  {
    std::lock_guard<std::mutex> g(lease_mu_);
    if (!raised_.load(std::memory_order_relaxed)) return false;
    const std::uint64_t polls = polls_.load(std::memory_order_relaxed);
    if (!hand_back_.load(std::memory_order_relaxed) && polls != seen_polls_) {
      seen_polls_ = polls;  // polled during this period: the lease runs on
      return false;
    }
    hand_back_.store(false, std::memory_order_relaxed);
    raised_.store(false, std::memory_order_seq_cst);
    hdr_->pollers.store(0, std::memory_order_seq_cst);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  poll_locked(true);
  return true;
}

// Polls the rings if nobody else does (or, with wait, once the current
// poller is done). Returns the frames handled.
//
// A waiting thread yields its cpu after a short spin: the poller it waits
// for may share that cpu (a process pinned to one core), and then a plain
// spin lasts until the scheduler preempts it, keeping the poller from its
// work (compare's rocl-mpi-shm streams, one core per rank, show it).
int ShmTransportImpl::poll_locked(bool wait, const Waiter *waiter) noexcept {
  constexpr int kSpinsBeforeYield = 64;
  // Test before test-and-set: many spinning callers must not keep
  // writing the flag's cache line while one of them polls.
  int spins = 0;
  while (rx_busy_.test(std::memory_order_relaxed) ||
         rx_busy_.test_and_set(std::memory_order_acquire)) {
    if (!wait) return 0;
    if (++spins < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      ::sched_yield();
    }
  }
  rx_waiter_ = waiter;
  const int n = poll_once(!wait);
  rx_waiter_ = nullptr;
  rx_busy_.clear(std::memory_order_release);
  return n;
}

// Rounds the progress thread spins before it sleeps: kIdleSpins if it may
// run on more than one cpu, a few if it shares a single cpu with the
// process's other threads (a process pinned to one core, as MPI-style jobs
// are). There a spinning progress thread takes the cpu from the thread that
// computes or receives (the scheduler hands the cpu over only after a slice
// of about a millisecond), and each wake-up then costs the pinned receiver
// several times its ping-pong latency (compare's rocl-mpi-shm latency rows
// show it). Read again after each wake-up: the affinity may change.
int ShmTransportImpl::idle_spins() noexcept {
  constexpr int kIdleSpins = 2000;
  // Pinned: just enough to catch the next fragment its sender is writing
  // (a 32 KiB copy) instead of sleeping between the fragments of a message.
  constexpr int kPinnedSpins = 200;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return kIdleSpins;
  return CPU_COUNT(&set) > 1 ? kIdleSpins : kPinnedSpins;
}

// The progress thread: polls while nobody else does, spins a little when
// idle (idle_spins), then sleeps until a sender wakes it. While callers
// poll it sleeps at once and senders leave it alone.
void ShmTransportImpl::run() {
  int idle = 0;
  int spins = idle_spins();
  while (!stop_.load(std::memory_order_relaxed)) {
    env_.sink->progressed();  // what the polls of the last round delivered
    if (!callers_poll() || lower_pollers_if_idle()) {
      lease_us_ = shm::kPollLeaseUs;  // nobody polls (now): the next lease starts short
      if (poll_locked(true) != 0) {
        idle = 0;
        continue;
      }
      if (++idle < spins) {
        cpu_relax();
        continue;
      }
    }
    hdr_->sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint32_t seq = hdr_->wake_seq.load(std::memory_order_acquire);
    reap_all();
    if ((callers_poll() || poll_locked(true) == 0) && !stop_.load()) {
      // Sleep long, unless senders' buffers wait to be reaped or a paused
      // slot waits for a pool block (kRetryMs), or callers poll: then wake
      // when their lease may have run out.
      const bool soon = pending_total_.load(std::memory_order_relaxed) != 0 ||
                        paused_slots_.load(std::memory_order_relaxed) != 0;
      long us = soon ? shm::kRetryMs * 1000L : 50000;
      if (us > lease_us_) long_sleep_.store(true, std::memory_order_seq_cst);
      if (callers_poll()) {
        long_sleep_.store(false, std::memory_order_relaxed);
        us = std::min<long>(us, lease_us_);
        lease_us_ = std::min(lease_us_ * 2, shm::kMaxPollLeaseUs);  // polled: the next is longer
      }
      timespec ts{0, us * 1000};
      sleep_on_inbox(&hdr_->wake_seq, seq, &ts);
      long_sleep_.store(false, std::memory_order_relaxed);
    }
    hdr_->sleeping.store(0, std::memory_order_relaxed);
    idle = 0;
    spins = idle_spins();
  }
}

// Rebuilds the list of claimed slots when a sender claimed one since we
// last looked, so that a poll reads only the slots in use.
void ShmTransportImpl::rebuild_active(std::uint32_t claims) {
  seen_claims_ = claims;
  active_.clear();
  for (std::uint32_t i = 0; i < cfg_.slots; ++i) {
    if (rx_[i].state == RxSlot::kPoisoned) continue;
    if (rx_[i].state != RxSlot::kNew ||
        slot_ctl(seg_, i)->owner.load(std::memory_order_acquire) != 0) {
      active_.push_back(i);
    }
  }
}

// A caller stops at the first whole message: it is likely the one it waits
// for, and looking at once at the next frame's place would fetch a cache
// line the sender still holds from its last lap, on the way back to it.
// Unless the slot's last message too was there at the first look (its
// sender is ahead, streaming): then the next frames are written already,
// and the caller drains them too (up to the round's bound), so that the
// receives after this one find their messages queued instead of each
// polling, waiting and being signalled for one; but not for a rocl_recv
// whose next receives take them from the ring
// themselves, at less cost than through the mailbox (take_arrived;
// Waiter::takes_arrived).
// The next poll then starts at the slot after that one, so that a sender
// that streams does not keep a caller from the others' messages.
int ShmTransportImpl::poll_once(bool caller) {
  int n = 0;
  refresh_active();
  const std::size_t count = active_.size();
  if (first_slot_ >= count) first_slot_ = 0;
  const bool retry = paused_slots_.load(std::memory_order_relaxed) != 0 && retry_due();
  for (std::size_t j = 0; j < count; ++j) {
    std::size_t at = first_slot_ + j;
    if (at >= count) at -= count;
    const std::uint32_t i = active_[at];
    RxSlot &s = rx_[i];
    if (s.state == RxSlot::kPoisoned || (s.paused && !retry)) continue;
    SlotCtl *ctl = slot_ctl(seg_, i);
    // Drain a bounded number of frames per slot per round for fairness.
    bool took_message = false;
    if (s.found_in_row >= 2) prefetch_ahead(s, 1, kDrainPrefetchFrames);
    for (int k = 0; k < kDrainFrames; ++k) {
      const int r = poll_slot(i, s, ctl);
      if (r <= 0) {
        if (r == 0) s.found_in_row = 0;
        break;
      }
      if (s.paused) resume(s);
      ++n;
      if (s.found_in_row >= 2) {
        // Behind a streaming sender: ask for the lines a few frames on now,
        // so that their transfers overlap this one's handling.
        prefetch_ahead(s, kDrainPrefetchFrames, kDrainPrefetchFrames);
      }
      if (caller && r == kMessageDone) {
        took_message = true;
        // Not behind a stream, or the caller takes its next messages
        // from the ring itself (Waiter::takes_arrived): stop at the first.
        if (++s.found_in_row < 2 || (rx_waiter_ != nullptr && rx_waiter_->takes_arrived)) break;
      }
    }
    if (took_message) {
      first_slot_ = at + 1;
      return n;
    }
  }
  return n;
}

// Asks for the ring's lines `from` to `to` frames of the smallest size
// past the tail.
void ShmTransportImpl::prefetch_ahead(const RxSlot &s, int from, int to) const {
  for (int f = from; f <= to; ++f) {
    platform::prefetch_for_read(s.ring + ((s.tail + f * kFrameAlign) & (cfg_.ring_bytes - 1)));
  }
}

void ShmTransportImpl::poison(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::string &why,
                              bool refusal) {
  s.state = RxSlot::kPoisoned;
  if (s.paused) resume(s);
  drop_partial(s);
  // Counted and said before the verdict is published: a sender that sees
  // it (and fails its send) finds both already there.
  (refusal ? refused_ : poisoned_).fetch_add(1);
  log("shm: slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ") " +
      (refusal ? "refused: " : "dropped: ") + why);
  ctl->verdict.store(kRefused, std::memory_order_release);
}

void ShmTransportImpl::drop_partial(RxSlot &s) {
  if (s.block != nullptr && env_.pool != nullptr) {
    env_.pool->release(s.block, BlockState::kLibrary);
  }
  s.block = nullptr;
  s.done = 0;
}

void ShmTransportImpl::copy_out(const RxSlot &s, std::uint64_t pos, std::byte *dst,
                                std::uint64_t n) const {
  const std::uint64_t off = pos & (cfg_.ring_bytes - 1);
  const std::uint64_t first = std::min(n, cfg_.ring_bytes - off);
  std::memcpy(dst, s.ring + off, first);
  if (n > first) std::memcpy(dst + first, s.ring, n - first);
}

void ShmTransportImpl::consume(RxSlot &s, SlotCtl *ctl, std::uint64_t bytes) {
  s.tail += bytes;
  ctl->tail.store(s.tail, std::memory_order_release);
}

// The sender's lap ends at the tail (a wrap frame, Config::hot_bytes): the
// rest of the ring is skipped, the next frame is at its beginning. Only
// between messages. False: the slot is poisoned, saying why.
bool ShmTransportImpl::take_wrap(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at) {
  if (wire::check_wrap_header(at + kSealBytes, s.name) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return false;
  }
  if (s.block != nullptr) {
    poison(i, s, ctl,
           "a wrap frame inside message " + std::to_string(s.first.message_id) + " at offset " +
               std::to_string(s.done),
           false);
    return false;
  }
  skip_to_lap_end(s, ctl);
  return true;
}

// kMessageDone: handled a frame that ended a message (delivered or
// dropped), 1: handled another frame, 0: nothing there, -1: slot poisoned.
int ShmTransportImpl::poll_slot(std::uint32_t i, RxSlot &s, SlotCtl *ctl) {
  // The seal (shm_layout.hpp): the frame at the tail is there once its
  // first word is the slot's key ^ the tail.
  const std::byte *at = s.ring + (s.tail & (cfg_.ring_bytes - 1));
  if (!sealed_at(s, at)) return 0;
  if (s.state == RxSlot::kNew) return take_hello(i, s, ctl);
  const auto kind = static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]);
  if (kind == wire::Kind::kShort && s.block == nullptr) return take_short(i, s, ctl, at);
  if (kind == wire::Kind::kWrap) return take_wrap(i, s, ctl, at) ? 1 : -1;
  // The header's first 32 bytes, and the rest only if it is not a short
  // one: reading past a short frame would take the line the sender is
  // writing next from it.
  wire::MessageHeader h;
  std::byte raw[sizeof h];
  std::size_t got = sizeof(wire::ShortHeader);
  copy_out(s, s.tail + kSealBytes, raw, got);
  if (static_cast<wire::Kind>(raw[wire::kKindOffset]) != wire::Kind::kShort) {
    copy_out(s, s.tail + kSealBytes + got, raw + got, sizeof raw - got);
    got = sizeof raw;
  }
  std::size_t header_bytes = 0;
  if (wire::decode_frame_header(std::span<const std::byte>(raw, got), limits_, s.name, &h,
                                &header_bytes) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return -1;
  }
  // decode_frame_header bounded fragment_length by
  // limits_.max_fragment_bytes, so the frame fits the ring.
  const std::uint64_t frame = frame_bytes(header_bytes, h.fragment_length);
  if (h.kind == wire::Kind::kRendezvousRequest) return take_rendezvous(i, s, ctl, h, frame);
  if (h.kind != wire::Kind::kEager && h.kind != wire::Kind::kFragment) {
    poison(i, s, ctl, std::string("frame kind ") + wire::kind_name(h.kind) + " is not used by shm",
           false);
    return -1;
  }
  if (s.block == nullptr) {
    if (h.fragment_offset != 0) {
      poison(i, s, ctl,
             "fragment_offset " + std::to_string(h.fragment_offset) + " does not start a message",
             false);
      return -1;
    }
    if (h.kind == wire::Kind::kFragment && h.fragment_length < h.total_length &&
        deliver_whole_in_ring(s, ctl, h, header_bytes)) {
      return kMessageDone;
    }
    BlockHeader *b = receive_block(i, s, ctl, h.total_length);
    if (b == nullptr) return s.paused ? 0 : -1;  // paused: the frame waits in the ring
    b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
    s.block = b;
    s.first = h;
    s.done = 0;
  } else {
    const auto &f = s.first;
    if (h.kind != wire::Kind::kFragment || h.message_id != f.message_id ||
        h.total_length != f.total_length || h.fragment_offset != s.done || h.source != f.source ||
        h.destination != f.destination || h.tag != f.tag || h.domain != f.domain) {
      poison(i, s, ctl,
             "fragment of message " + std::to_string(h.message_id) + " at offset " +
                 std::to_string(h.fragment_offset) + " does not continue message " +
                 std::to_string(f.message_id) + " at offset " + std::to_string(s.done),
             false);
      return -1;
    }
  }
  if (h.fragment_length != 0) {
    copy_out(s, s.tail + kSealBytes + header_bytes, payload_of(s.block) + h.fragment_offset,
             h.fragment_length);
  }
  s.done += h.fragment_length;
  consume(s, ctl, frame);
  if (s.done < s.first.total_length) return 1;  // a fragment: more to come
  BlockHeader *b = s.block;
  s.block = nullptr;
  s.done = 0;
  return deliver_block(i, s, b, CoreHeader{s.first.source, s.first.tag, s.first.domain},
                       s.first.destination, s.first.total_length);
}

// The Hello, the first frame of a slot: the sender proves the job secret.
int ShmTransportImpl::take_hello(std::uint32_t i, RxSlot &s, SlotCtl *ctl) {
  s.pid = ctl->owner.load(std::memory_order_relaxed);
  Hello h;
  copy_out(s, s.tail + kSealBytes, reinterpret_cast<std::byte *>(&h), sizeof h);
  JobSecret::Digest proof;
  std::memcpy(proof.data(), h.proof, 32);
  if (h.magic != kHelloMagic || h.slot != i ||
      !secret_->verify(shm::kProofLabel, challenge_, proof)) {
    poison(i, s, ctl, "job secret proof did not verify", true);
    return -1;
  }
  s.state = RxSlot::kOk;
  try {
    s.name = "shm slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ")";
  } catch (...) {  // only the sentences of later errors get poorer
  }
  s.pool_mapped = map_peer_pool(i, s.pid, h.pool_fd, h.pool_bytes);
  std::uint64_t probe = 0;
  copy_out(s, s.tail + kSealBytes + sizeof h, reinterpret_cast<std::byte *>(&probe), sizeof probe);
  s.reads_memory = probe_memory(s.pid, probe, s.seal_key);
  consume(s, ctl, frame_bytes(sizeof h, kHelloProbeBytes));
  const Verdict v = s.pool_mapped ? (s.reads_memory ? kAcceptedPoolMemory : kAcceptedPool)
                                  : (s.reads_memory ? kAcceptedMemory : kAccepted);
  ctl->verdict.store(v, std::memory_order_release);
  return 1;
}

// A message in one frame with a short header, the path of small messages:
// a frame starts at a multiple of kFrameAlign, so its seal and header never
// wrap, and one that fills a single line holds at most 24 payload bytes.
//
// The frame's other lines are asked for at once, before the header is
// checked and a block found: the sender wrote them just now, so each comes
// from its cache, and asked together they come in one cross-core round trip
// instead of the two or three a copy's loads make (the cpu's own prefetcher
// fetches lines in pairs and learns a stream only after a few misses).
// Up to 17 lines (kPrefetchFrameBytes), the whole frame of a 1 KiB message,
// after which its sender skips own_ahead(); asking for all the lines of a
// larger frame at once is slower (rocl-bench latency --transport shm of
// 256 B to 4 KiB shows it). The length is read
// unchecked: a prefetch of a wrong line is only wasted.
void ShmTransportImpl::prefetch_frame(const RxSlot &s, const std::byte *at) const {
  std::uint32_t claimed;  // ShortHeader::length
  std::memcpy(&claimed, at + kSealBytes + offsetof(wire::ShortHeader, length), sizeof claimed);
  const std::uint64_t end =
      std::min(frame_bytes(sizeof(wire::ShortHeader), claimed), kPrefetchFrameBytes);
  for (std::uint64_t off = kFrameAlign; off < end; off += kFrameAlign) {
    platform::prefetch_for_read(s.ring + ((s.tail + off) & (cfg_.ring_bytes - 1)));
  }
}

// The payload of the short frame at `at` (s's tail, header h) into b.
void ShmTransportImpl::copy_short(const RxSlot &s, const std::byte *at, const wire::ShortHeader &h,
                                  BlockHeader *b) const {
  const std::uint64_t frame = frame_bytes(sizeof h, h.length);
  const std::byte *payload = at + kSealBytes + sizeof h;
  if (frame == kFrameAlign) {
    platform::copy_small(payload_of(b), payload, h.length);
  } else if (frame <= kPrefetchFrameBytes &&
             (s.tail & (cfg_.ring_bytes - 1)) + frame <= cfg_.ring_bytes) {
    // 25 B to 1 KiB, not wrapped: fixed-size moves (copy_out calls memcpy).
    // One copy: the payload lies whole after the header (the sender splits
    // it only to write the first line last).
    platform::copy_upto1k(payload_of(b), payload, h.length);
  } else {
    copy_out(s, s.tail + kSealBytes + sizeof h, payload_of(b), h.length);
  }
}

int ShmTransportImpl::take_short(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at) {
  prefetch_frame(s, at);
  wire::ShortHeader h;
  if (wire::decode_short_header(at + kSealBytes, limits_, s.name, &h) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return -1;
  }
  const std::uint64_t frame = frame_bytes(sizeof h, h.length);
  // A receive waiting with memory of its own takes the payload straight
  // from the ring (no block), when it does not wrap around the ring's end.
  if ((s.tail & (cfg_.ring_bytes - 1)) + frame <= cfg_.ring_bytes) {
    count(arrivals_);  // before the hand-over (streams()); again by deliver_block if refused
    if (env_.sink->deliver_bytes(h.destination, CoreHeader{h.source, h.tag, h.domain},
                                 at + kSealBytes + sizeof h, h.length, rx_waiter_)) {
      consume(s, ctl, frame);
      count_delivered();
      return kMessageDone;
    }
  }
  BlockHeader *b = receive_block(i, s, ctl, h.length);
  if (b == nullptr) return s.paused ? 0 : -1;  // paused: the frame waits in the ring
  copy_short(s, at, h, b);
  consume(s, ctl, frame);
  return deliver_block(i, s, b, CoreHeader{h.source, h.tag, h.domain}, h.destination, h.length);
}

// A message in fragments that is whole in the ring already, as a receiver
// that lags behind a stream finds most: if a receive with memory of its
// own waits for it, the fragments are copied straight there
// (MessageSink::deliver_pieces): one copy instead of two (ring -> block ->
// receive), and no block. True if delivered (the frames consumed); false:
// take the usual path, nothing changed. Reads first the seal of the last
// fragment, where our sender (write_message: fragments of one size, in a
// row, under the connection's lock) puts it, and sealed last: its acquire
// makes the frames before it visible. Then each frame is checked as the
// usual path would (a frame that is not what it should be: false, and the
// usual path meets it and says why). At most kMaxWholeFragments fragments
// and half a ring.
//
// A miss (the message still arriving, or no receive with memory for it)
// skips the next kSkipAfterMiss messages of the slot: in a ping-pong the
// last fragment's first line is about to be written by the sender, and
// reading it then costs the sender one more transfer of it (rocl-bench
// latency --transport shm of 4 KiB shows it). A slot paused for want of a
// block always looks: its frames wait in the ring.
bool ShmTransportImpl::deliver_whole_in_ring(RxSlot &s, SlotCtl *ctl,
                                             const wire::MessageHeader &first,
                                             std::size_t header_bytes) {
  constexpr int kMaxWholeFragments = 32;
  constexpr std::uint32_t kSkipAfterMiss = 16;
  if (s.whole_skip != 0 && !s.paused) {
    --s.whole_skip;
    return false;
  }
  const std::uint64_t chunk = first.fragment_length, total = first.total_length;
  if (chunk == 0 || total > cfg_.ring_bytes / 2 ||
      !env_.sink->may_take_pieces(first.destination, rx_waiter_)) {
    return false;
  }
  const std::uint64_t n = (total + chunk - 1) / chunk;
  if (n > kMaxWholeFragments) return false;
  const std::uint64_t step = frame_bytes(header_bytes, chunk);
  const std::uint64_t last = s.tail + (n - 1) * step;
  if (seal_at(s.ring + (last & (cfg_.ring_bytes - 1))).load(std::memory_order_acquire) !=
      (s.seal_key ^ last)) {
    s.whole_skip = kSkipAfterMiss;
    return false;  // still arriving: the usual path overlaps the copies
  }
  MessageSink::ByteRange pieces[2 * kMaxWholeFragments];
  int np = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t pos = s.tail + k * step;
    const std::uint64_t len = k + 1 < n ? chunk : total - k * chunk;
    if (k != 0 && !same_message_fragment(s, pos, first, k * chunk, len)) return false;
    const std::uint64_t from = (pos + kSealBytes + header_bytes) & (cfg_.ring_bytes - 1);
    const std::uint64_t before_end = std::min(len, cfg_.ring_bytes - from);
    pieces[np++] = {s.ring + from, before_end};
    if (len > before_end) pieces[np++] = {s.ring, len - before_end};
  }
  count(arrivals_);
  if (!env_.sink->deliver_pieces(first.destination,
                                 CoreHeader{first.source, first.tag, first.domain}, pieces, np,
                                 total, rx_waiter_)) {
    s.whole_skip = kSkipAfterMiss;
    return false;
  }
  consume(s, ctl, (n - 1) * step + frame_bytes(header_bytes, total - (n - 1) * chunk));
  count_delivered();
  return true;
}

// Whether the frame at ring position pos is sealed and is the fragment of
// `first`'s message at `offset`, `len` bytes long (the checks poll_slot
// makes of a continuing fragment).
bool ShmTransportImpl::same_message_fragment(const RxSlot &s, std::uint64_t pos,
                                             const wire::MessageHeader &first, std::uint64_t offset,
                                             std::uint64_t len) const {
  std::byte *at = s.ring + (pos & (cfg_.ring_bytes - 1));
  if (seal_at(at).load(std::memory_order_acquire) != (s.seal_key ^ pos)) return false;
  std::byte raw[sizeof(wire::MessageHeader)];
  copy_out(s, pos + kSealBytes, raw, sizeof raw);
  wire::MessageHeader h;
  std::size_t header_bytes = 0;
  if (wire::decode_frame_header(std::span<const std::byte>(raw, sizeof raw), limits_, s.name, &h,
                                &header_bytes) != ROCL_OK) {
    return false;
  }
  return header_bytes == sizeof raw && h.kind == wire::Kind::kFragment &&
         h.message_id == first.message_id && h.total_length == first.total_length &&
         h.fragment_offset == offset && h.fragment_length == len && h.source == first.source &&
         h.destination == first.destination && h.tag == first.tag && h.domain == first.domain;
}

// A pool block for a message of `length` bytes from slot i, or null: then
// the slot is paused if the pool is full for now (the caller leaves the
// frame in the ring; shm_transport.hpp: flow control), or poisoned if no
// block can ever hold the message (or there is no pool), said why.
BlockHeader *ShmTransportImpl::receive_block(std::uint32_t i, RxSlot &s, SlotCtl *ctl,
                                             std::uint64_t length) {
  if (env_.pool == nullptr) {
    poison(i, s, ctl, "no buffer pool to receive into", false);
    return nullptr;
  }
  BlockHeader *b = env_.pool->allocate(length);
  if (b != nullptr) return b;
  if (!env_.pool->can_ever_hold(length)) {
    poison(i, s, ctl,
           "a message of " + std::to_string(length) +
               " bytes can never fit the buffer pool (ROCL_POOL_MAX): " + last_error(),
           false);
    return nullptr;
  }
  pause(s, length);
  return nullptr;
}

void ShmTransportImpl::pause(RxSlot &s, std::uint64_t length) {
  if (!s.paused) {
    s.paused = true;
    paused_slots_.fetch_add(1, std::memory_order_relaxed);
    count(paused_reads_);
  }
  if (!s.pause_logged) {
    s.pause_logged = true;
    log("shm: no buffer for a " + std::to_string(length) + "-byte message from " + s.name +
        " (pool full): reading the slot paused until blocks are released (logged once per "
        "slot)");
  }
}

void ShmTransportImpl::resume(RxSlot &s) {
  s.paused = false;
  paused_slots_.fetch_sub(1, std::memory_order_relaxed);
}

// Whether paused slots are due for another try (every kRetryMs: a failing
// allocation is not free, the pool reclaims its caches first).
bool ShmTransportImpl::retry_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_retry_) return false;
  next_retry_ = now + std::chrono::milliseconds(shm::kRetryMs);
  return true;
}

// Hands a received message (block b) to the sink.
int ShmTransportImpl::deliver_block(std::uint32_t i, RxSlot &s, BlockHeader *b,
                                    const CoreHeader &header, rocl_gid_t destination,
                                    std::uint64_t length) {
  count(arrivals_);
  hand_over(destination, arrived(b, header, length), rx_waiter_, [&] {
    return "message from slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ")";
  });
  return kMessageDone;
}

}  // namespace rocl::impl::shm::detail
