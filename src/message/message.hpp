// message.hpp - a message as the core queues it and the transports carry
// it: an Envelope living in the owner area of the pool block that holds the
// payload, so that queuing, matching and handing a message to another
// thread never allocate or copy. The layer below the transports and the
// core: it knows blocks (buffer/) and the generic matching (rocl/generic),
// nothing above.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "buffer/block.hpp"
#include "rocl/generic/communicator.hpp"
#include "rocl/rocl.h"

namespace rocl::impl {

// The domain word a message carries (wire field `domain`): bits 0..23 are
// the domain, matched exactly; bits 24..31 are flags of the layer above
// (MPI: "synchronous send, acknowledge the match"), carried to the receiver
// and never matched, so that a flagged message is received by exactly the
// receives an unflagged one would be, in the same order.
inline constexpr std::uint32_t kDomainMask = ROCL_DOMAIN_MAX;
inline constexpr unsigned kFlagsShift = 24;
inline std::uint32_t domain_word(std::uint32_t domain, unsigned flags) {
  return (domain & kDomainMask) | (static_cast<std::uint32_t>(flags) << kFlagsShift);
}

// What a resource's receives match on. Source and tag take wildcards;
// the domain (message context) never does: a message sent in one domain is
// never received in another.
struct CoreHeader {
  rocl_gid_t source;
  std::int32_t tag;
  std::uint32_t domain;  // the domain word: domain | flags << kFlagsShift

  bool is_pattern() const { return source == ROCL_ANY_GID || tag == ROCL_ANY_TAG; }
  // Forced inline: GCC otherwise leaves it a call in the mailbox's
  // matching, on the path of every posted receive's match.
  [[gnu::always_inline]] bool operator==(const CoreHeader &o) const {
    return (source == o.source || source == ROCL_ANY_GID || o.source == ROCL_ANY_GID) &&
           (tag == o.tag || tag == ROCL_ANY_TAG || o.tag == ROCL_ANY_TAG) &&
           ((domain ^ o.domain) & kDomainMask) == 0;
  }
  bool operator<(const CoreHeader &o) const {
    if (source != o.source) return source < o.source;
    if (tag != o.tag) return tag < o.tag;
    return (domain & kDomainMask) < (o.domain & kDomainMask);
  }
  unsigned flags() const { return domain >> kFlagsShift; }
};

using Envelope = generic::Envelope<CoreHeader>;

// A queued message: the envelope in the block's owner area. data points at
// the payload, length is the message length.
struct Message : Envelope {};
static_assert(sizeof(Message) <= kOwnerAreaBytes, "message envelope must fit the owner area");
static_assert(std::is_trivially_destructible_v<Message>,
              "a block's message may be left in place when the block is released");

// The message envelope of a block about to be sent or just received,
// fresh. A block that carried a message before (a buffer passed back and
// forth, as a ping-pong's echo does, or one the pool hands out again from
// a thread cache) keeps its envelope, renewed (Envelope::renew): its first
// cache line only is written, the one the receiver reads anyway;
// constructing it anew would write the second line too, which would then
// move between the threads with every message. (A block goes back to the
// pool without its message ended, which needs nothing destroyed.)
inline Message *message_in(BlockHeader *block) {
  void *area = owner_area_of(block);
  if (block->has_message) {
    Message *m = std::launder(static_cast<Message *>(area));
    m->renew();
    return m;
  }
  block->has_message = true;
  return new (area) Message{};
}
// Ends the message of a block (before it goes back to the pool, or stays
// its owner's after a failed send).
inline void end_message(BlockHeader *block) {
  std::destroy_at(std::launder(static_cast<Message *>(owner_area_of(block))));
  block->has_message = false;
}
inline BlockHeader *block_of(Envelope *msg) {
  return reinterpret_cast<BlockHeader *>(reinterpret_cast<std::byte *>(msg) - kBlockHeaderBytes);
}
inline const BlockHeader *block_of(const Envelope *msg) {
  return reinterpret_cast<const BlockHeader *>(reinterpret_cast<const std::byte *>(msg) -
                                               kBlockHeaderBytes);
}
// A lent send (rocl_isendx_lend): msg->data is the application's memory,
// not the block's payload; the block carries only the envelope, and the
// request waits for the transport to finish it (Transport::send).
inline bool is_lent(const Envelope *msg) {
  return block_of(msg)->lent;
}

}  // namespace rocl::impl
