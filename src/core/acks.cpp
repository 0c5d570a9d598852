// acks.cpp - acknowledgements of matched messages (ROCL_FLAG_ACK, the
// synchronous sends of MPI): sent when a receive matches the message, on
// whichever thread matches it. A match inside a transport's progress
// (deliver) happens under the transport's receive lock, where sending could
// wait for ring room that only that lock's holder can make: there the
// acknowledgement is queued (AckQueue) and sent once the progress round is
// over (progressed(), or the caller's own progress loop). The receiver may
// be deleted by then (its receive completed as the match signalled it, and
// its thread went on): an acknowledgement still goes, from the gid that
// matched (send_as), since its synchronous sender waits for it.

#include "core/context.hpp"

namespace rocl::impl {

// `h` is a copy: a message matched in deliver() belongs to its receiver
// from that moment, who may have freed it already.
void Context::acknowledge(rocl_gid_t receiver, const CoreHeader &h, bool may_send_now) noexcept {
  const AckQueue::Ack ack{receiver, h.source, h.tag, (h.domain & kDomainMask) | ROCL_ACK_DOMAIN};
  // Sent now if it may be, or if there is nowhere to keep it; a peer gone
  // is not our failure.
  if (may_send_now || !acks_.push(ack)) {
    send_as(ack.from, ack.to, ack.tag, ack.domain, nullptr, 0);
  }
}

void Context::send_acks() noexcept {
  for (const AckQueue::Ack &a : acks_.take()) {
    if (a.stripe_id != 0) {
      router_.send_stripe_ack(a.from, a.to, a.stripe_id);  // a sender gone needs none
    } else {
      send_as(a.from, a.to, a.tag, a.domain, nullptr, 0);
    }
  }
}

}  // namespace rocl::impl
