// shm_copy_offer.hpp - copy offers, and the sender's side of them
// (OfferCopier; the receiver's is RendezvousReader's).
//
// Two cpus copy one rendezvous message: the receiver reads the first part
// from the sender's memory (process_vm_readv) or pool (mapped) while the
// sender, which spins anyway (waiting for its lent send to complete, or for
// a reply), writes the rest into the receive's memory (process_vm_writev). Alone, the receiver
// would copy at the speed of one cpu's cross-memory copy while the sender's cpu idles (compare's
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
