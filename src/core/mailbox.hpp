// mailbox.hpp - a resource's mailbox: the generic Communicator's queues and
// matching, plus the entry points the rocl core needs on top of them.
//
// The core's senders and some of its receivers do not hold the resource
// they deliver to or take from alive (a reference costs two locked
// read-modify-writes per message). Their calls therefore carry a
// still_mine() check, made under the mailbox's lock (or, for the lock-free
// hand-off, after the ticket was read), that the resource is still the
// one they meant (Resource::still_of); a mailbox is reopened for the next
// owner of its resource rather than rebuilt, so that such a caller always
// finds a valid lock. Transports that copy into a receive's memory claim
// the receive first; a receive that cannot pull its rendezvous message
// requeues it.
#pragma once

#include <cstdint>
#include <mutex>

#include "message/message.hpp"
#include "rocl/generic/communicator.hpp"

namespace rocl::impl {

template <generic::Header H, class Lock = generic::SpinLock>
class MailboxOf : public generic::Communicator<H, Lock> {
  using Base = generic::Communicator<H, Lock>;

 public:
  using Env = typename Base::Env;
  using Base::deliver;
  using Base::take_or_post_receive;

  // As deliver(msg, to_signal), for a caller that may not hold the
  // endpoint alive: under the lock, still_mine() must say the endpoint is
  // still the one the caller meant, else kClosed and nothing changed.
  template <class StillMine>
  generic::Delivery deliver(Env *msg, Env **to_signal, StillMine still_mine) {
    return this->deliver_if(msg, to_signal, still_mine);
  }

  // A message has arrived (msg->header concrete): if a spinning receive
  // waits (post_spinning), matches it and still_mine() says the endpoint is
  // still the one the caller meant (checked after the ticket was read, so
  // a ticket still there at the swap proves the answer current), msg is
  // handed to it and true returned; the owner of the receive has msg from
  // then on. Otherwise false and nothing changed: deliver() it. Never
  // locks: the sender writes one word on the lock's line, once. A message
  // handed so has no place in the arrival order: it must never be
  // requeue()d (the core hands no rendezvous stubs).
  template <class StillMine>
  bool hand_to_waiter(Env *msg, StillMine still_mine) {
    std::uint64_t seen = this->handoff_.load(std::memory_order_acquire);
    if ((seen & Base::kTagMask) != Base::kWaitingTag) return false;
    if (!bool(msg->header == this->waiter_header_.load()) || !still_mine()) return false;
    return this->handoff_.compare_exchange_strong(
        seen, Base::handed_word(msg), std::memory_order_release, std::memory_order_relaxed);
  }

  // For a message that has no envelope (its bytes are still where they
  // arrived, header concrete): if the receive posted earliest among those
  // matching `header` satisfies accepts(const Env &) (it can take the bytes
  // into memory of its own) and still_mine(), it is unqueued and returned
  // with matched = nullptr, not signalled: the caller fills it in and then
  // signals recv->complete as its last touch. Otherwise (no match, the
  // earliest declines, not the caller's, or closed) nothing changes and
  // nullptr is returned: make an envelope and deliver() it. Never blocks.
  // A spinning receive (post_spinning) declines unasked: it waits for an
  // envelope through the hand-off word, and a sender without the lock may
  // hand it one at any moment, after which its owner returns and reuses
  // its memory, so nothing of it may be read here.
  template <class Accepts, class StillMine>
  Env *claim_receive(const H &header, Accepts accepts, StillMine still_mine) {
    std::lock_guard<Lock> guard(this->lock_);
    if (this->closed_ || !still_mine()) return nullptr;
    Env *recv;
    do {
      recv = this->find_posted(header);
      if (recv == nullptr || this->spins(recv)) return nullptr;
      if (!accepts(static_cast<const Env &>(*recv))) return nullptr;
    } while (!this->unpost(recv, Base::kSettled));  // a hand-off took it meanwhile: look again
    ++this->next_order_;  // the message's arrival, as deliver() would count it
    recv->matched = nullptr;
    return recv;
  }
  template <class Accepts>
  Env *claim_receive(const H &header, Accepts accepts) {
    return claim_receive(header, accepts, [] { return true; });
  }

  // As take_or_post_receive, for a caller that may not hold the endpoint
  // alive: under the lock, if open but not still_mine(), nothing changes,
  // *gone is set and nullptr is returned (recv untouched past the resets,
  // not signalled: the caller still owns it).
  template <class StillMine>
  Env *take_or_post_receive(Env *recv, StillMine still_mine, bool *gone) {
    return this->post_or_take(recv, /*signal_taken=*/false, nullptr, still_mine, gone);
  }

  // For a receive that finds its message waiting and holds no reference
  // to its resource: under the lock, if open and still_mine(), the earliest
  // queued message matching `pattern` is taken if accepts(const Env &)
  // says so: unqueued and returned, its `matched` nullptr (the receive has
  // no envelope: none is made, posted or signalled). Otherwise nullptr and
  // nothing changed. Never blocks.
  template <class StillMine, class Accepts>
  Env *take_queued(const H &pattern, StillMine still_mine, Accepts accepts) {
    std::lock_guard<Lock> guard(this->lock_);
    if (this->closed_ || !still_mine()) return nullptr;
    Env *msg = this->take_unexpected(pattern, accepts);
    if (msg != nullptr) msg->matched = nullptr;
    return msg;
  }

  // Puts back a message a receive was matched with but cannot take after
  // all (its owner could not pull it in: no memory), as if it had never
  // been matched: into the unexpected queue at its place in arrival order,
  // so that the next matching receive takes it first and messages with
  // its header still never overtake each other. Returns false if the
  // mailbox was closed meanwhile: the caller keeps msg (and drops it as
  // close() would have). Allocates as deliver does.
  bool requeue(Env *msg) {
    std::lock_guard<Lock> guard(this->lock_);
    if (this->closed_) return false;
    msg->matched = nullptr;
    this->unexpected_.reinsert(msg);
    this->note_queued();
    return true;
  }

  // Opens a closed mailbox again for a new owner, as if new (every queue
  // is empty since close()). The object itself stays: a thread that still
  // holds its address from before finds it open but not its (still_mine()
  // says no), instead of a lock being rebuilt under it. Does nothing if it
  // is open.
  void reopen() {
    std::lock_guard<Lock> guard(this->lock_);
    this->closed_ = false;
    this->close_status_ = 0;
  }

  // Whether receives are posted here (no lock: a hint that may be stale by
  // the time it is used; claim_receive decides; a receive taken by
  // hand_to_waiter counts until the next locked call notices it).
  bool has_posted_receives() const noexcept {
    return this->posted_.load(std::memory_order_relaxed);
  }
  // Whether messages wait in the unexpected queue (no lock: a hint, as
  // has_posted_receives).
  bool has_queued_messages() const noexcept {
    return this->queued_.load(std::memory_order_relaxed);
  }
  // Whether no receive is posted and no message queued: without the lock
  // while the two hints say so, else under it, settling a spinning receive
  // that was handed its message (which the hints count until a locked call
  // notices; this one refreshes them, so the next call is lock-free again).
  // For a caller that takes a message past the mailbox (a transport's
  // input front) and must overtake nothing it would have matched first.
  bool nothing_waits() {
    if (!has_posted_receives() && !has_queued_messages()) return true;
    std::lock_guard<Lock> guard(this->lock_);
    this->sync_waiter();
    return this->waiter_ == nullptr && this->expected_.size() == 0 && this->unexpected_.size() == 0;
  }
};

using Mailbox = MailboxOf<CoreHeader>;

}  // namespace rocl::impl
