// resource.hpp - a resource of this process as the core sees it: a gid and
// a mailbox. Receives on different resources never share a lock.
//
// Lifetime: Resource objects are type-stable (recycled, freed only with the
// context) and reference counted, so a sender that looked a gid up races
// safely with rocl_delete: it takes a reference only while the count is not
// zero and then checks that the gid is still the one it wanted.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "core/message.hpp"

namespace rocl::impl {

class Resource {
 public:
  // Takes a reference if the resource is live and still has `gid`.
  bool acquire(rocl_gid_t gid) noexcept {
    std::int32_t n = refs_.load(std::memory_order_relaxed);
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

  // References held by pending immediate receives (counted apart so that
  // context teardown can wait for the other holders: threads in a call).
  void note_request(int delta) noexcept {
    request_refs_.fetch_add(delta, std::memory_order_acq_rel);
  }
  // References held by threads inside a call on this resource.
  std::int32_t callers() const noexcept {
    return refs_.load(std::memory_order_acquire) - request_refs_.load(std::memory_order_acquire);
  }
  Mailbox &mailbox() noexcept { return *mailbox_; }

  // Makes a fresh or recycled object live under gid with one reference
  // (the registration's).
  void start(rocl_gid_t gid) {
    mailbox_.emplace();  // a fresh one: the last owner closed the old one
    gid_.store(gid, std::memory_order_release);
    request_refs_.store(0, std::memory_order_relaxed);
    refs_.store(1, std::memory_order_release);
  }
  void retire() noexcept { gid_.store(ROCL_NULL_GID, std::memory_order_release); }

 private:
  std::atomic<std::int32_t> refs_{0};
  std::atomic<std::int32_t> request_refs_{0};
  std::atomic<rocl_gid_t> gid_{ROCL_NULL_GID};
  // In place, right after the counters: a sender's reference and the
  // mailbox lock share a cache line, so delivering moves one line, not two.
  std::optional<Mailbox> mailbox_;
};

}  // namespace rocl::impl
