// envelope.hpp - the Header concept and the Envelope of the EPOS generic
// communication system (Sanches, Secco, Froehlich, sections 4.1-4.2): the unit
// a generic::Communicator queues and matches, generic in the header of the
// protocol above it.
//
// Envelopes are intrusive: the links that put them in the Communicator's
// queues live inside them, so queuing never allocates. The owner (core
// message, MPI request, a stack object of a blocking receive...) keeps the
// memory; the Communicator only borrows it while the envelope is queued.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rocl/generic/completion.hpp"

namespace rocl::generic {

// What the Communicator needs from a protocol header (EPOS's Header
// interface: ==, < and cheap copies).
//  - a == b: the match relation, wildcard-aware: true if every field is equal
//    or a wildcard on either side. Must be symmetric.
//  - a < b: a strict weak order over all headers (patterns included), used
//    only to index concrete headers; on headers without wildcards its
//    equivalence (!(a<b) && !(b<a)) must be exactly ==.
//  - a.is_pattern(): true if the header holds any wildcard.
// Trivially copyable because headers are copied by value into queues,
// probe results and across threads.
template <class H>
concept Header = std::is_trivially_copyable_v<H> && requires(const H &a, const H &b) {
  { a == b } -> std::convertible_to<bool>;
  { a < b } -> std::convertible_to<bool>;
  { a.is_pattern() } -> std::convertible_to<bool>;
};

namespace detail {

// Which of a Communicator's queues an envelope is in.
enum class QueueKind : std::uint8_t { kNone, kExpected, kUnexpected, kRequested, kUnrequested };

// Head and tail of an intrusive FIFO of envelopes.
template <class E>
struct EnvelopeList {
  E *head = nullptr;
  E *tail = nullptr;
};

template <Header H>
class EnvelopeQueue;

}  // namespace detail

// A message, a posted receive, a rendezvous send or a rendezvous request.
// Usable as a base class (the core derives its message from it). Not
// copyable or movable: the Communicator links to it by address.
//
// Ownership: the envelope always belongs to whoever created it. While it is
// queued in a Communicator (between a post/deliver call that queued it and
// the match, cancel or close that unqueues it) the owner must not modify
// header or destroy it; the public fields other than header stay the
// owner's business, except those the Communicator sets as documented below.
template <Header H>
struct Envelope {
  // Concrete for messages and sends; may be a pattern for receives and
  // requests.
  H header{};
  // The owner's payload; the Communicator never reads or writes these two.
  void *data = nullptr;
  std::size_t length = 0;
  // Set by the Communicator, on both sides, when a receive meets a message
  // (or a send meets a request): the envelope it was matched with. Cleared
  // when an envelope is posted or queued.
  Envelope *matched = nullptr;
  // 0, or the status given to Communicator::close() when the envelope was
  // completed by the close instead of a match. Cleared when posted.
  int status = 0;
  // Signalled by the Communicator when a posted receive is matched or
  // completed by close() (and when a rendezvous post is refused because the
  // Communicator is closed). Once it is done the Communicator never touches
  // the envelope again, so the waiter may destroy it right away.
  Completion complete;
  // Policy flag of the layer above (EPOS: the upper layer decides whether a
  // message goes rendezvous). Never read by the Communicator.
  bool rendezvous = false;

 private:
  friend class detail::EnvelopeQueue<H>;
  // Which queue holds it (kNone when not queued), and when it was queued or
  // matched (increasing per Communicator, shared by its queues). Here, on
  // the first cache line with the fields above: a delivery to a waiting
  // receive and renew() then write one line of each envelope.
  detail::QueueKind queue_ = detail::QueueKind::kNone;
  std::uint64_t order_ = 0;

 public:
  // A receive claimed without an envelope (the rocl core's
  // Mailbox::claim_receive): the header of the message that completed it,
  // set by the claimer before it signals (not `header`, which the waiting
  // owner may read meanwhile). Never read by the Communicator.
  H arrived{};

  // Makes an envelope that is not queued anywhere as a fresh one for the
  // fields that matter outside a queue (all but `arrived` and the queue
  // links, which are written when it is queued), writing only its first
  // cache line: an envelope reused for every message of a buffer (a pool
  // block's) then moves one line between the threads that pass it on,
  // instead of every line a fresh one writes.
  void renew() noexcept {
    header = H{};
    data = nullptr;
    length = 0;
    matched = nullptr;
    status = 0;
    complete.reset();
    rendezvous = false;
    queue_ = detail::QueueKind::kNone;
  }

 private:
  // Bookkeeping owned by the Communicator while the envelope is queued;
  // meaningless otherwise. Kept private so that owners cannot corrupt a
  // queue by touching it.
  //
  // Links in the queue's FIFO of everything, in queuing order.
  Envelope *all_prev_ = nullptr;
  Envelope *all_next_ = nullptr;
  // Links in the FIFO of its header bin, or of the queue's patterns, and
  // that list itself (so that leaving it is O(1)).
  Envelope *sub_prev_ = nullptr;
  Envelope *sub_next_ = nullptr;
  detail::EnvelopeList<Envelope> *sub_list_ = nullptr;
};

}  // namespace rocl::generic
