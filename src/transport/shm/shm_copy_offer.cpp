// shm_copy_offer.cpp - two cpus copy one rendezvous message: the receiver
// reads the first part from the sender's memory (process_vm_readv) or pool
// (mapped) while the sender, which spins anyway (waiting for its lent send
// to complete, or for a reply), writes the rest into the receive's memory
// (process_vm_writev). Alone, the receiver would copy at the speed of one
// cpu's cross-memory copy while the sender's cpu idles (compare's
// rocl-mpi-shm bandwidth rows from 256 KiB, beside ompi-vader's, show it).
//
// The handshake is the CopyOffer of the slot (shm_layout.hpp): the receiver
// fills a free offer and publishes it, copies its own part, then takes the
// sender's part back with a compare-and-swap unless the sender took it
// first; then it waits for the sender to say done (or failed: it copies the
// part itself). A sender that does not spin (it computes) costs the
// receiver one compare-and-swap. The receiver reads back only the state;
// the sender checks that the part lies inside the message it lent.
//
// Which part the sender gets: the second, unless its rendezvous request
// says it holds the first in its cache (wire::kFlagSenderHoldsFirst; it
// received the message through an offer and copied that part itself). A
// message sent back and forth then never has a cpu read lines dirty in the
// other's cache (shm_written_parts.hpp).
#include <sched.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "transport/shm/shm_internal.hpp"

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

// Copies bytes [from, from + n) of a rendezvous payload to dst + from: from
// the sender's pool as mapped here (read_peer checked the bounds), or from
// its memory. process_vm_readv may stop short (at a page it cannot fault
// in): the rest is asked for again, so that the error, if any, is the one
// of the first byte it cannot read.
int ShmTransportImpl::read_range(const Stub &st, std::byte *dst, std::size_t from, std::size_t n) {
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
int ShmTransportImpl::read_shared(const Stub &st, std::byte *dst, std::size_t len) {
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
    written_parts_.remember(dst, len, false);
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
      parts_copied_by_senders_.fetch_add(1, std::memory_order_relaxed);
      if (first_to_sender) first_parts_copied_by_senders_.fetch_add(1, std::memory_order_relaxed);
    } else {
      senders = read_range(st, dst, sender_from, sender_n);
    }
  }
  written_parts_.remember(dst, len, sender_copied && !first_to_sender);
  // The error of the first byte that could not be read, as read_range.
  if (first_to_sender) return senders != ROCL_OK ? senders : own;
  return own != ROCL_OK ? own : senders;
}

// Where [p, p + n) lies in our pool, or ~0 if not inside it (the offer's
// pool_offset: a sender that mapped our pool writes there with memcpy).
std::uint64_t ShmTransportImpl::offset_in_pool(const std::byte *p, std::size_t n) const {
  if (env_.pool == nullptr || env_.pool->region_fd() < 0) return ~std::uint64_t{0};
  const auto *base = static_cast<const std::byte *>(env_.pool->region_base());
  const std::size_t bytes = env_.pool->region_bytes();
  const bool inside = p >= base && static_cast<std::size_t>(p - base) <= bytes && n <= bytes &&
                      static_cast<std::size_t>(p - base) <= bytes - n;
  return inside ? static_cast<std::uint64_t>(p - base) : ~std::uint64_t{0};
}

// Below how many bytes a message copied to dst is read alone.
std::size_t ShmTransportImpl::share_min_bytes(const std::byte *dst) const {
  return offset_in_pool(dst, 0) != ~std::uint64_t{0} ? kShareMinBytes : kShareByCallMinBytes;
}

// A free offer of st's slot filled for bytes [from, from + n) of the
// message, or nullptr (all in use by other receiving threads, or retired).
CopyOffer *ShmTransportImpl::open_offer(const Stub &st, std::byte *dst, std::size_t from,
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
void ShmTransportImpl::close_offer(CopyOffer *o) {
  o->state.store(kOfferFree, std::memory_order_release);
}

// Waits while the sender copies its part; whether it copied it (false:
// it failed, died or took too long, and the receiver copies it itself).
// An offer the sender may still write to later is retired: never reused.
bool ShmTransportImpl::await_sender(const Stub &st, CopyOffer *o) {
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
      log(line);
      return false;
    }
  }
}

// Sender, c.mu held: takes the offers of c's receiver for rendezvous
// messages of ours (up to `room` of them, into `out`); the copies run once
// the locks are released (run_offers). How many it took.
int ShmTransportImpl::take_offers(const std::shared_ptr<Conn> &c, TakenOffer *out, int room) {
  if (c->pending_mask == 0 || c->no_offers.load(std::memory_order_relaxed)) return 0;
  int n = 0;
  for (int k = 0; k < kCopyOffers && n < room; ++k) {
    CopyOffer &o = c->ctl->offers[k];
    if (o.state.load(std::memory_order_acquire) != kOffered) continue;
    constexpr auto kRelaxed = std::memory_order_relaxed;
    const std::uint32_t cookie = o.cookie.load(kRelaxed);
    const std::uint64_t offset = o.offset.load(kRelaxed), length = o.length.load(kRelaxed);
    const std::uint64_t dest = o.dest.load(kRelaxed), in_pool = o.pool_offset.load(kRelaxed);
    if (cookie >= 64 || (c->pending_mask >> cookie & 1u) == 0) continue;
    std::uint32_t s = kOffered;
    if (!o.state.compare_exchange_strong(s, kSenderCopying, std::memory_order_acq_rel)) continue;
    // Read again now that it is ours: the receiver filled it before kOffered.
    const Message *m = reinterpret_cast<const Message *>(owner_area_of(c->pending[cookie]));
    if (o.cookie.load(kRelaxed) != cookie || o.offset.load(kRelaxed) != offset ||
        o.length.load(kRelaxed) != length || o.dest.load(kRelaxed) != dest ||
        o.pool_offset.load(kRelaxed) != in_pool || offset > m->length ||
        length > m->length - offset || length == 0) {
      o.state.store(kSenderFailed, std::memory_order_release);
      continue;
    }
    // The receiver's pool as mapped here, if the part lies inside it.
    std::byte *mapped = c->receiver_pool != nullptr && in_pool <= c->receiver_pool_bytes &&
                                length <= c->receiver_pool_bytes - in_pool
                            ? c->receiver_pool + in_pool
                            : nullptr;
    out[n++] =
        TakenOffer{c, &o, static_cast<const std::byte *>(m->data) + offset, dest, length, mapped};
  }
  return n;
}

// Sender, no lock held: copies the parts taken. How many it copied.
int ShmTransportImpl::run_offers(const TakenOffer *taken, int n) {
  int copied = 0;
  for (int i = 0; i < n; ++i) {
    const TakenOffer &t = taken[i];
    std::size_t done = 0;
    int err = 0;
    if (t.mapped_dest != nullptr) {
      std::memcpy(t.mapped_dest, t.src, t.length);
      done = t.length;
      parts_copied_into_mapped_pools_.fetch_add(1, std::memory_order_relaxed);
    }
    while (done < t.length) {
      iovec local{const_cast<std::byte *>(t.src) + done, t.length - done};
      iovec remote{reinterpret_cast<void *>(static_cast<std::uintptr_t>(t.dest + done)),
                   t.length - done};
      const ssize_t put = ::process_vm_writev(t.conn->pid, &local, 1, &remote, 1, 0);
      if (put > 0) {
        done += static_cast<std::size_t>(put);
      } else if (put < 0 && errno == EINTR) {
        continue;
      } else {
        err = put < 0 ? errno : 0;
        break;
      }
    }
    // Release, acquired by reap(): our read of the lent memory happens
    // before its send completes. (It does anyway: the receiver hands the
    // cookie back only after kSenderDone; but that chain runs through the
    // other process, where ThreadSanitizer cannot see it.)
    offers_finished_.fetch_add(1, std::memory_order_release);
    if (done == t.length) {
      t.offer->state.store(kSenderDone, std::memory_order_release);
      parts_copied_for_receivers_.fetch_add(1, std::memory_order_relaxed);
      ++copied;
      continue;
    }
    // Not allowed (another user, Yama) or a bad address: the receiver
    // copies; we stop offering ourselves to this receiver after a refusal.
    if (err == EPERM) t.conn->no_offers.store(true, std::memory_order_relaxed);
    t.offer->state.store(kSenderFailed, std::memory_order_release);
  }
  return copied;
}

}  // namespace rocl::impl::shm::detail
