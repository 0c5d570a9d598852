// shm_copy_offer.cpp - the sender's side of copy offers: taking them and
// writing the parts (see shm_copy_offer.hpp).
#include "transport/shm/shm_copy_offer.hpp"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "message/message.hpp"

namespace rocl::impl::shm::detail {

// The copies run once the locks are released (run()).
int OfferCopier::take(const std::shared_ptr<Conn> &c, TakenOffer *out, int room) {
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

int OfferCopier::run(const TakenOffer *taken, int n) {
  int copied = 0;
  for (int i = 0; i < n; ++i) {
    const TakenOffer &t = taken[i];
    std::size_t done = 0;
    int err = 0;
    if (t.mapped_dest != nullptr) {
      std::memcpy(t.mapped_dest, t.src, t.length);
      done = t.length;
      counters_.parts_copied_into_mapped_pools.fetch_add(1, std::memory_order_relaxed);
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
    // Release, acquired by acquire_copies(): our read of the lent memory happens
    // before its send completes. (It does anyway: the receiver hands the
    // cookie back only after kSenderDone; but that chain runs through the
    // other process, where ThreadSanitizer cannot see it.)
    finished_.fetch_add(1, std::memory_order_release);
    if (done == t.length) {
      t.offer->state.store(kSenderDone, std::memory_order_release);
      counters_.parts_copied_for_receivers.fetch_add(1, std::memory_order_relaxed);
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
