// shm_offer_copier.hpp - the sender's side of copy offers (the protocol is
// described in shm_rendezvous_reader.cpp and shm_layout.hpp: CopyOffer): a
// sender that spins anyway takes its receivers' offers to write part of a
// rendezvous message of ours into the receive's memory, and writes it.
//
// Contract: take() with the connection's mu held, which run() must not be
// (a copy takes microseconds); both by the thread that reaps (progress).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "transport/shm/shm_internal.hpp"

namespace rocl::impl::shm::detail {

// A receiver's copy offer the sender took: what to write where, once its
// locks are released.
struct TakenOffer {
  std::shared_ptr<Conn> conn;
  CopyOffer *offer;
  const std::byte *src;  // in our memory: the lent message's part
  std::uint64_t dest;    // in the receiver's
  std::uint64_t length;
  std::byte *mapped_dest;  // dest in our mapping of the receiver's pool, or nullptr
};

class OfferCopier {
 public:
  explicit OfferCopier(ShmCounters &counters) noexcept : counters_(counters) {}

  // The most offers one pass takes.
  static constexpr int kMaxTaken = 4;
  // Takes the offers of c's receiver for rendezvous messages of ours (up to
  // `room` of them, into `out`). How many it took.
  static int take(const std::shared_ptr<Conn> &c, TakenOffer *out, int room);
  // Copies the parts taken and tells each receiver. How many it copied.
  int run(const TakenOffer *taken, int n);
  // Called before the buffers of messages handed back are finished: the
  // copies run() made of them are over (an acquire of its releases).
  void acquire_copies() const noexcept { (void)finished_.load(std::memory_order_acquire); }

 private:
  ShmCounters &counters_;
  // Bumped (release) after each copy of run(): see acquire_copies().
  std::atomic<std::uint64_t> finished_{0};
};

}  // namespace rocl::impl::shm::detail
