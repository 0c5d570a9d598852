// acks.cpp - acknowledgements of matched messages (ROCL_FLAG_ACK, the
// synchronous sends of MPI): sent when a receive matches the message, on
// whichever thread matches it. A match inside a transport's progress
// (deliver) happens under the transport's receive lock, where sending could
// wait for ring room that only that lock's holder can make: there the
// acknowledgement is queued and sent once the progress round is over
// (progressed(), or the caller's own progress loop).
#include <utility>

#include "core/context.hpp"

namespace rocl::impl {

// `h` is a copy: a message matched in deliver() belongs to its receiver
// from that moment, who may have freed it already.
void Context::acknowledge(rocl_gid_t receiver, const CoreHeader &h, bool may_send_now) noexcept {
  const Ack ack{receiver, h.source, h.tag, (h.domain & kDomainMask) | ROCL_ACK_DOMAIN};
  if (may_send_now) {
    send(ack.from, ack.to, ack.tag, ack.domain, nullptr, 0);  // a peer gone is not our failure
    return;
  }
  try {
    std::lock_guard<std::mutex> guard(acks_mu_);
    acks_.push_back(ack);
  } catch (const std::bad_alloc &) {
    // Nowhere to keep it: send it from here after all.
    send(ack.from, ack.to, ack.tag, ack.domain, nullptr, 0);
    return;
  }
  acks_waiting_.store(true, std::memory_order_release);
}

void Context::send_acks() noexcept {
  std::vector<Ack> batch;
  {
    std::lock_guard<std::mutex> guard(acks_mu_);
    batch.swap(acks_);
    acks_waiting_.store(false, std::memory_order_relaxed);
  }
  for (const Ack &a : batch) send(a.from, a.to, a.tag, a.domain, nullptr, 0);
}

}  // namespace rocl::impl
