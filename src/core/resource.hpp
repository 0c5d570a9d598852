// resource.hpp - a resource of this process as the core sees it: a gid and
// a mailbox. Receives on different resources never share a lock.
//
// Lifetime: Resource objects are type-stable (recycled, freed only with the
// context) and reference counted, so a sender that looked a gid up races
// safely with rocl_delete: it takes a reference only while the count is not
// zero and then checks that the gid is still the one it wanted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/mailbox.hpp"
#include "message/message.hpp"

namespace rocl::impl {

// Aligned to a cache line: the gid and the mailbox's lock, its waiting
// receive, that receive's header and the hand-off word share the first
// line (generic::Communicator), which is all a delivery touches (senders
// take no reference: Context::arrival_resource). The reference counts have
// a line of their own, which only the resource's receivers write.
class alignas(64) Resource {
 public:
  // Takes a reference if the resource is live and still has `gid`.
  bool acquire(rocl_gid_t gid) noexcept {
    std::uint64_t n = refs_.load(std::memory_order_relaxed);
    do {
      if (n == 0) return false;
    } while (!refs_.compare_exchange_weak(n, n + 1, std::memory_order_acquire));
    if (gid_.load(std::memory_order_acquire) == gid) return true;
    release();
    return false;
  }
  // Drops a reference; true if it was the last one (the caller recycles).
  bool release() noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  rocl_gid_t gid() const noexcept { return gid_.load(std::memory_order_acquire); }

  // How many of the next receives here skip the look at the transports'
  // input fronts (Context::take_arrived) after one missed: a hint kept with
  // the resource so that it follows what is received there (a ping-pong's
  // receives miss, a stream's find). Only its receivers touch it; a lost
  // update between two of them only costs a look.
  unsigned take_skip() const noexcept { return take_skip_.load(std::memory_order_relaxed); }
  void set_take_skip(unsigned n) noexcept {
    if (take_skip_.load(std::memory_order_relaxed) != n) {
      take_skip_.store(n, std::memory_order_relaxed);
    }
  }

  // References held by threads inside a call on this resource (immediate
  // receives hold none: Context::irecv).
  std::uint64_t callers() const noexcept { return refs_.load(std::memory_order_acquire); }
  Mailbox &mailbox() noexcept { return *mailbox_; }

  // Makes a fresh or recycled object live under gid with one reference
  // (the registration's).
  void start(rocl_gid_t gid) {
    check_layout();
    // The mailbox is made once and reopened after that (the last owner
    // closed it, emptying it): a receiver that looked the object up without
    // a reference (ResourceTable::peek) may still be about to lock it, and
    // then finds it open but with another gid (or none), never a lock
    // rebuilt under it.
    if (mailbox_) {
      mailbox_->reopen();
    } else {
      mailbox_.emplace();
    }
    gid_.store(gid, std::memory_order_release);
    refs_.store(1, std::memory_order_release);
  }
  void retire() noexcept { gid_.store(ROCL_NULL_GID, std::memory_order_release); }

 private:
  // The layout the comments above rely on: the gid, then the mailbox's hot
  // fields, on the first cache line; the receivers' counts on the next.
  static constexpr void check_layout() noexcept {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    static_assert(offsetof(Resource, gid_) == 0);
    static_assert(offsetof(Resource, mailbox_) == sizeof(rocl_gid_t),
                  "the mailbox's lock right after the gid");
    static_assert(sizeof(rocl_gid_t) + generic::hot_prefix_bytes<CoreHeader>() <= 64,
                  "a delivery to a waiting receive touches one cache line");
    static_assert(offsetof(Resource, refs_) % 64 == 0 && offsetof(Resource, refs_) >= 64,
                  "the receivers' counts on a line of their own");
    static_assert(offsetof(Resource, take_skip_) / 64 == offsetof(Resource, refs_) / 64);
#pragma GCC diagnostic pop
  }

  std::atomic<rocl_gid_t> gid_{ROCL_NULL_GID};
  // In place, right after the gid: a sender's check of the gid and the
  // mailbox's lock (or hand-off word) share a cache line, so delivering
  // moves one line, not two.
  std::optional<Mailbox> mailbox_;
  // Not on the senders' line: a receive that has taken its message drops
  // its reference without waiting for that line to come back (rocl-bench
  // latency, between threads, shows it).
  alignas(64) std::atomic<std::uint64_t> refs_{0};
  std::atomic<unsigned> take_skip_{0};  // on the receivers' line, with refs_
};

// For the mailbox's calls made without a reference to r (deliveries, a
// receive that finds its message queued, an immediate receive's post):
// checked under the mailbox's lock (or before the hand-off's swap), whether
// r still is gid's resource.
inline auto still_of(const Resource *r, rocl_gid_t gid) noexcept {
  return [r, gid] { return r->gid() == gid; };
}

}  // namespace rocl::impl
