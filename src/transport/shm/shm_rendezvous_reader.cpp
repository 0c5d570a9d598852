// shm_rendezvous_reader.cpp - the receiver's side of a rendezvous once a
// receive matches its stub (see shm_rendezvous_reader.hpp): the pull, and
// the receiver's side of copy offers (the protocol: shm_copy_offer.hpp).

#include <sched.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_rendezvous_reader.hpp"

#include "status/status.hpp"
#include "transport/shm/shm_transport_impl.hpp"

namespace rocl::impl::shm::detail {

// Below these a message is read alone: the offer's round trip between the
// cpus and the sender's copy would cost more than half the copy saves. A
// part the sender writes with memcpy (into our pool, which it mapped) pays
// from 8 KiB (rocl-bench latency --transport shm shows it); one it writes
// with process_vm_writev (into other memory: MPI's receives) costs a
// system call more, and pays from 32 KiB (rocl-bench mpi's latency, lent,
// shows it).
constexpr std::size_t kShareMinBytes = 8 * 1024;
constexpr std::size_t kShareByCallMinBytes = 32 * 1024;
constexpr std::size_t kPage = 4096;

void RendezvousReader::open(std::uint32_t slots) {
  retired_offers_ = std::make_unique<std::atomic<std::uint8_t>[]>(slots);
}

// Rendezvous, receiver side (contract in transport.hpp): one copy from
// the sender's buffer straight into a block of ours, on the receiving
// thread, then the cookie goes back so the sender can free its buffer.
int RendezvousReader::pull(Message *stub, Message **out) noexcept {
  const Stub st = stub_of(stub);
  const CoreHeader header = stub->header;
  const std::size_t len = stub->length;
  BlockHeader *b = pool_->allocate(len);
  if (b == nullptr) {  // the stub stays, for the core to queue again
    *out = stub;
    return fail(ROCL_ENOMEM, "shm: no pool block for a %zu-byte message from pid %u: %s", len,
                st.pid, last_error());
  }
  release_stub(stub);
  const int rc = read_peer(st, payload_of(b), len);
  hand_back(st);
  if (rc != ROCL_OK) {
    pool_->release(b, BlockState::kLibrary);
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
int RendezvousReader::pull_into(Message *stub, void *dst, std::size_t cap) noexcept {
  const Stub st = stub_of(stub);
  const std::size_t len = std::min<std::size_t>(stub->length, cap);
  release_stub(stub);
  const int rc = len == 0 ? ROCL_OK : read_peer(st, static_cast<std::byte *>(dst), len);
  hand_back(st);
  return rc;
}

void RendezvousReader::discard(Message *stub) noexcept {
  const Stub st = stub_of(stub);
  release_stub(stub);
  hand_back(st);
}

Stub RendezvousReader::stub_of(Message *stub) {
  Stub st;
  std::memcpy(&st, payload_of(block_of(stub)), sizeof st);
  return st;
}

void RendezvousReader::release_stub(Message *stub) {
  BlockHeader *b = block_of(stub);
  std::destroy_at(stub);
  pool_->release(b, BlockState::kLibrary);
}

// Tells the sender it may free the buffer behind the cookie.
void RendezvousReader::hand_back(const Stub &st) {
  st.ctl->pulled.fetch_or(std::uint64_t{1} << st.cookie, std::memory_order_release);
}

// Copies the payload out of the sender's pool (or memory) into dst: the
// one copy (shared with the sender: copy offers, below). The offset comes
// from the other process: checked against the mapping (the kernel checks a
// lent address against the sender's).
int RendezvousReader::read_peer(const Stub &st, std::byte *dst, std::size_t len) {
  if (st.pool != nullptr && (st.offset > st.pool_bytes || len > st.pool_bytes - st.offset)) {
    return fail(ROCL_EPEER,
                "shm: rendezvous from pid %u (slot %u) names bytes %" PRIu64
                "+%zu outside its "
                "%" PRIu64 "-byte pool",
                st.pid, st.slot, st.offset, len, st.pool_bytes);
  }
  return read_shared(st, dst, len);
}

// Copies bytes [from, from + n) of a rendezvous payload to dst + from: from
// the sender's pool as mapped here (read_peer checked the bounds), or from
// its memory. process_vm_readv may stop short (at a page it cannot fault
// in): the rest is asked for again, so that the error, if any, is the one
// of the first byte it cannot read.
int RendezvousReader::read_range(const Stub &st, std::byte *dst, std::size_t from, std::size_t n) {
  if (st.pool != nullptr) {
    std::memcpy(dst + from, st.pool + st.offset + from, n);
    return ROCL_OK;
  }
  std::size_t done = 0;
  while (done < n) {
    iovec local{dst + from + done, n - done};
    iovec remote{reinterpret_cast<void *>(static_cast<std::uintptr_t>(st.offset + from + done)),
                 n - done};
    const ssize_t got = ::process_vm_readv(static_cast<pid_t>(st.pid), &local, 1, &remote, 1, 0);
    if (got > 0) {
      done += static_cast<std::size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return fail(ROCL_EPEER,
                "shm: reading the message lent by pid %u (slot %u) at 0x%" PRIx64
                " failed after %zu of its bytes: %s",
                st.pid, st.slot, st.offset, from + done,
                got < 0 ? std::strerror(errno) : "nothing read");
  }
  return ROCL_OK;
}

// A rendezvous payload, one part written by the sender if it takes the
// offer: the second, or the first when the sender holds it in its cache
// (Stub::sender_holds_first). What this cpu wrote is remembered for the
// hint of sending the message on (shm_written_parts.hpp).
int RendezvousReader::read_shared(const Stub &st, std::byte *dst, std::size_t len) {
  // The parts meet at a page of the sender's memory (the pool's offsets
  // are from a page too), so that the two never pin the same page.
  const std::size_t mid =
      ((st.offset + len / 2 + kPage - 1) & ~std::uint64_t{kPage - 1}) - st.offset;
  const bool first_to_sender = st.sender_holds_first;
  const std::size_t sender_from = first_to_sender ? 0 : mid;
  const std::size_t sender_n = first_to_sender ? mid : len - mid;
  const std::size_t own_from = first_to_sender ? mid : 0;
  CopyOffer *o = len >= share_min_bytes(dst) && mid < len
                     ? open_offer(st, dst, sender_from, sender_n)
                     : nullptr;
  if (o == nullptr) {
    written_.remember(dst, len, false);
    return read_range(st, dst, 0, len);
  }
  const int own = read_range(st, dst, own_from, len - sender_n);
  std::uint32_t s = kOffered;
  bool sender_copied = false;
  int senders = ROCL_OK;
  if (o->state.compare_exchange_strong(s, kReceiverTook, std::memory_order_acq_rel)) {
    close_offer(o);
    senders = read_range(st, dst, sender_from, sender_n);
  } else {
    sender_copied = await_sender(st, o);
    if (sender_copied) {
      counters_.parts_copied_by_senders.fetch_add(1, std::memory_order_relaxed);
      if (first_to_sender)
        counters_.first_parts_copied_by_senders.fetch_add(1, std::memory_order_relaxed);
    } else {
      senders = read_range(st, dst, sender_from, sender_n);
    }
  }
  written_.remember(dst, len, sender_copied && !first_to_sender);
  // The error of the first byte that could not be read, as read_range.
  if (first_to_sender) return senders != ROCL_OK ? senders : own;
  return own != ROCL_OK ? own : senders;
}

// Where [p, p + n) lies in our pool, or ~0 if not inside it (the offer's
// pool_offset: a sender that mapped our pool writes there with memcpy).
std::uint64_t RendezvousReader::offset_in_pool(const std::byte *p, std::size_t n) const {
  if (pool_ == nullptr || pool_->region_fd() < 0) return ~std::uint64_t{0};
  const auto *base = static_cast<const std::byte *>(pool_->region_base());
  const std::size_t bytes = pool_->region_bytes();
  const bool inside = p >= base && static_cast<std::size_t>(p - base) <= bytes && n <= bytes &&
                      static_cast<std::size_t>(p - base) <= bytes - n;
  return inside ? static_cast<std::uint64_t>(p - base) : ~std::uint64_t{0};
}

// Below how many bytes a message copied to dst is read alone.
std::size_t RendezvousReader::share_min_bytes(const std::byte *dst) const {
  return offset_in_pool(dst, 0) != ~std::uint64_t{0} ? kShareMinBytes : kShareByCallMinBytes;
}

// A free offer of st's slot filled for bytes [from, from + n) of the
// message, or nullptr (all in use by other receiving threads, or retired).
CopyOffer *RendezvousReader::open_offer(const Stub &st, std::byte *dst, std::size_t from,
                                        std::size_t n) {
  const std::uint8_t retired = retired_offers_[st.slot].load(std::memory_order_relaxed);
  for (int k = 0; k < kCopyOffers; ++k) {
    CopyOffer &o = st.ctl->offers[k];
    std::uint32_t s = kOfferFree;
    if ((retired >> k & 1u) != 0 ||
        !o.state.compare_exchange_strong(s, kOfferFilling, std::memory_order_acquire)) {
      continue;
    }
    constexpr auto kRelaxed = std::memory_order_relaxed;
    o.cookie.store(static_cast<std::uint32_t>(st.cookie), kRelaxed);
    o.dest.store(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(dst + from)),
                 kRelaxed);
    o.offset.store(from, kRelaxed);
    o.length.store(n, kRelaxed);
    o.pool_offset.store(offset_in_pool(dst + from, n), kRelaxed);
    o.state.store(kOffered, std::memory_order_release);
    return &o;
  }
  return nullptr;
}

// Frees the offer for the next message (before the cookie goes back: the
// sender then never sees an offer of a message it has reaped).
void RendezvousReader::close_offer(CopyOffer *o) {
  o->state.store(kOfferFree, std::memory_order_release);
}

// Waits while the sender copies its part; whether it copied it (false:
// it failed, died or took too long, and the receiver copies it itself).
// An offer the sender may still write to later is retired: never reused.
bool RendezvousReader::await_sender(const Stub &st, CopyOffer *o) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kYieldAfter = std::chrono::microseconds(50);
  constexpr auto kLivenessEvery = std::chrono::milliseconds(20);
  constexpr auto kGiveUpAfter = std::chrono::seconds(2);
  const Clock::time_point start = Clock::now();
  Clock::time_point next_liveness = start + kLivenessEvery;
  for (unsigned i = 1;; ++i) {
    const std::uint32_t s = o->state.load(std::memory_order_acquire);
    if (s != kSenderCopying) {
      close_offer(o);
      return s == kSenderDone;
    }
    cpu_relax();
    if ((i & 255u) != 0) continue;
    const Clock::time_point now = Clock::now();
    // The sender's thread may share our cpu (both pinned to one core).
    if (now - start > kYieldAfter) ::sched_yield();
    const bool gone =
        now >= next_liveness && ::kill(static_cast<pid_t>(st.pid), 0) != 0 && errno == ESRCH;
    if (now >= next_liveness) next_liveness = now + kLivenessEvery;
    if (gone || now - start > kGiveUpAfter) {
      retired_offers_[st.slot].fetch_or(static_cast<std::uint8_t>(1u << (o - st.ctl->offers)),
                                        std::memory_order_relaxed);
      char line[160];
      std::snprintf(line, sizeof line,
                    "shm: the sender pid %u (slot %u) took part of a lent message's copy and %s; "
                    "the receiver copies it",
                    st.pid, st.slot, gone ? "exited" : "did not finish it within 2 s");
      transport_.log(line);
      return false;
    }
  }
}

}  // namespace rocl::impl::shm::detail
