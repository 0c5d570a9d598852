// messaging.cpp - the send and receive paths of the context.
//
// Send: turn what the user passed into a block the library owns (hand-off
// of a bftoret buffer, or a copy), then route it: the local hand-off first,
// then the transports that reach the destination's context.
// Receive: post an envelope on the resource's mailbox and wait on it.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/context.hpp"
#include "core/receive_op.hpp"
#include "core/stripe_wire.hpp"
#include "rocl/platform/cpu.hpp"
#include "rocl/platform/small_copy.hpp"
#include "status/status.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl {

struct Context::Outgoing {
  BlockHeader *block = nullptr;     // what travels, state kLibrary
  BlockHeader *original = nullptr;  // the caller's pool buffer when we copied it
  bool copied = false;
};

namespace {
unsigned long long ull(rocl_gid_t g) {
  return static_cast<unsigned long long>(g);
}

// A message to the context itself: a fragment of a striped message, or
// the acknowledgement of one we sent (stripe_wire.hpp).
int take_context_message(Router &router, StripeReassembly &stripes, BufferPool &pool,
                         Message *msg) noexcept {
  if (msg->rendezvous) return ROCL_EBADGID;  // both go eagerly: a stub is neither
  if (context_message_magic(msg->data, msg->length) != StripeAck::kMagic) {
    stripes.take_fragment(msg);
    return ROCL_OK;
  }
  StripeAck ack;
  if (msg->length == sizeof ack) {
    std::memcpy(&ack, msg->data, sizeof ack);
    router.stripe_acknowledged(ack.message_id);
  }
  BlockHeader *b = block_of(msg);
  end_message(b);
  pool.release(b, BlockState::kLibrary);
  return ROCL_OK;
}
}  // namespace

int Context::prepare_outgoing(const char *who, void *ptr, std::size_t len, Outgoing &out) noexcept {
  BlockHeader *b = ptr != nullptr ? pool_->find(ptr) : nullptr;
  if (b != nullptr) {
    if (len > payload_capacity(b)) {
      return fail(ROCL_ETOOBIG, "%s: length %zu exceeds the %zu bytes of buffer %p", who, len,
                  payload_capacity(b), ptr);
    }
    if (b->return_after_send) {
      BlockState expected = BlockState::kUser;
      if (!b->state.compare_exchange_strong(expected, BlockState::kLibrary)) {
        return fail(ROCL_EBUSY, "%s: buffer %p is already being sent", who, ptr);
      }
      out.block = b;
      return ROCL_OK;
    }
    if (b->send_status.load(std::memory_order_acquire) == SendStatus::kPending) {
      return fail(ROCL_EBUSY, "%s: buffer %p is still being sent by an earlier send", who, ptr);
    }
    out.original = b;
  } else if (ptr != nullptr && pool_->contains(ptr)) {
    return fail(ROCL_EBADBUF, "%s: %p points into the buffer pool but not at a live buffer", who,
                ptr);
  } else if (ptr == nullptr && len != 0) {
    return fail(ROCL_EINVAL, "%s: NULL data with length %zu", who, len);
  }
  BlockHeader *copy = pool_->allocate(len);
  if (copy == nullptr) return ROCL_ENOMEM;                             // the pool said why
  if (out.original != nullptr) copy->network = out.original->network;  // rocl_bfnet
  if (len != 0) std::memcpy(payload_of(copy), ptr, len);
  copy->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  copy->return_after_send = true;
  out.block = copy;
  out.copied = true;
  return ROCL_OK;
}

void Context::undo_outgoing(Outgoing &out) noexcept {
  end_message(out.block);
  if (out.copied) {
    pool_->release(out.block, BlockState::kLibrary);
  } else {
    out.block->state.store(BlockState::kUser, std::memory_order_release);
  }
}

int Context::check_send_args(rocl_gid_t ogid, int tag) noexcept {
  if (tag < 0)
    return fail(ROCL_EINVAL, "rocl_send: tag %d is negative (tags are 0..%d)", tag, ROCL_TAG_MAX);
  if (!resources_.contains(ogid)) {
    return fail(ROCL_EBADGID, "rocl_send: origin gid %#llx is not a resource of this context",
                ull(ogid));
  }
  return ROCL_OK;
}

int Context::send(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
                  std::size_t len) noexcept {
  if (int rc = check_send_args(ogid, tag); rc != ROCL_OK) return rc;
  return send_as(ogid, dgid, tag, domain_word, ptr, len);
}

int Context::send_as(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word,
                     void *ptr, std::size_t len) noexcept {
  if (int rc; router_.send_small(dgid, CoreHeader{ogid, tag, domain_word}, ptr, len, &rc)) {
    if (rc == ROCL_OK) progressed();
    return rc;
  }
  Outgoing out;
  if (int rc = prepare_outgoing("rocl_send", ptr, len, out); rc != ROCL_OK) return rc;
  Message *msg = message_in(out.block);
  msg->header = CoreHeader{ogid, tag, domain_word};
  msg->data = payload_of(out.block);
  msg->length = len;
  // Our copy of caller memory: by rendezvous the receive copies it once
  // into its own memory, instead of the ring's two copies and its own.
  const bool prefer_rendezvous =
      out.copied && options_.rndv_copy_threshold != 0 && len >= options_.rndv_copy_threshold;
  if (int rc = router_.route(dgid, msg, prefer_rendezvous); rc != ROCL_OK) {
    undo_outgoing(out);
    return rc;
  }
  if (out.original != nullptr) {
    out.original->send_status.store(SendStatus::kSent, std::memory_order_release);
  }
  // A local receive it matched (the in-process hand-off) may owe an acknowledgement.
  progressed();
  return ROCL_OK;
}

namespace {
// Completes a matched receive: the rocl_recv of the thread whose progress()
// brought the message (op: it is not asleep) without a locked instruction.
void signal_receive(Envelope *recv, const ReceiveOp *op) noexcept {
  if (op != nullptr && recv == op->own_receive) {
    recv->complete.signal_own();
  } else {
    recv->complete.signal();
  }
}
}  // namespace

// The destination of an arrival, without a reference: the resource the
// receive whose progress() brought it waits on (op), or a look in the table. What is done to its
// mailbox is checked under the mailbox's lock (still_mine: still
// `destination`'s), which is safe without a reference because Resource
// objects live as long as the context and their mailboxes are reopened,
// never rebuilt (Resource::start); a message queued there before a
// rocl_delete is dropped by the close, as it would be with a reference. So
// the resource's counters, on a line of their own, stay the receiver's:
// its receive takes and drops its reference there without waiting for the
// line a sender wrote (Resource).
Resource *Context::arrival_resource(rocl_gid_t destination, const ReceiveOp *op) const noexcept {
  return op != nullptr && op->gid == destination ? op->resource : resources_.peek(destination);
}

int Context::deliver(rocl_gid_t destination, Message *msg, const Waiter *waiter) noexcept {
  // Messages to the context itself are fragments of striped messages.
  if (destination == fragment_gid_.load(std::memory_order_relaxed)) [[unlikely]] {
    return take_context_message(router_, *stripes_, *pool_, msg);
  }
  if (stripes_->holding() && stripes_->hold(destination, msg)) [[unlikely]] {
    return ROCL_OK;
  }
  return deliver_now(destination, msg, waiter);
}

int Context::deliver_now(rocl_gid_t destination, Message *msg, const Waiter *waiter) noexcept {
  const ReceiveOp *op = ReceiveOp::of(waiter, this);
  Resource *r = arrival_resource(destination, op);
  if (r == nullptr) {
    // A peer may have found the resource in the directory before its
    // registration reached our table: wait for registrations in progress
    // (a directory round trip at most), then look once more.
    { std::shared_lock wait_for_registration(registering_); }
    r = resources_.peek(destination);
  }
  if (r == nullptr) return ROCL_EBADGID;
  const auto still_mine = still_of(r, destination);
  const CoreHeader header = msg->header;  // msg is the receiver's once matched
  // A receive spinning on r takes msg without the lock
  // (Communicator::hand_to_waiter: one swap on the line the receiver
  // watches). Not a rendezvous stub: it may have to go back to its mailbox
  // in its place (pull_if_rendezvous), and a handed message has none.
  if (!msg->rendezvous && r->mailbox().hand_to_waiter(msg, still_mine)) {
    note_match(destination, header, false);
    return ROCL_OK;
  }
  generic::Delivery d;
  try {
    Envelope *recv;
    d = r->mailbox().deliver(msg, &recv, still_mine);
    if (recv != nullptr) signal_receive(recv, op);
  } catch (const std::bad_alloc &) {  // a new header's index bin; nothing changed
    return fail(ROCL_ENOMEM, "out of memory queuing a message for %#llx", ull(destination));
  }
  if (d == generic::Delivery::kMatched) note_match(destination, header, false);
  return d == generic::Delivery::kClosed ? ROCL_EDELETED : ROCL_OK;
}

// Not when the waiter whose progress() brought the message waits on
// `destination` with a zero-copy receive (Waiter::takes_block): the receive
// a message there would meet first is most likely that one, which takes a
// block, so gathering the pieces first is wasted. (A hint: a wrong no only
// sends the message the usual way, deliver().)
bool Context::may_take_pieces(rocl_gid_t destination, const Waiter *waiter) const noexcept {
  return waiter == nullptr || !waiter->wants_block_for(destination);
}

// A blocking receive into caller memory posts its envelope with data = that
// memory and length = its capacity (receive_into), so that a transport may
// copy a message straight there from where it arrived (a short frame, or
// the fragments of a message whole in a ring: the pieces): no block is
// taken from the pool and given back, and the payload is copied once
// instead of twice. The receive learns it from matched == nullptr with
// status 0; `arrived` and length are then the message's header and length.
bool Context::deliver_pieces(rocl_gid_t destination, const CoreHeader &header,
                             const ByteRange *pieces, int count, std::size_t length,
                             const Waiter *waiter) noexcept {
  // This thread waits there with a zero-copy receive (may_take_pieces):
  // the receive the message meets first is most likely that one, which
  // declines the bytes, and finding that out took the mailbox's lock (on
  // the one-way path of a zero-copy ping-pong, and at the start of every
  // run a stream's receiver drains).
  if (!may_take_pieces(destination, waiter)) return false;
  // Behind a striped message of its pair: deliver() holds it.
  if (stripes_->holding() && stripes_->holds(header.source, destination)) return false;
  const ReceiveOp *op = ReceiveOp::of(waiter, this);
  Resource *r = arrival_resource(destination, op);
  if (r == nullptr) return false;
  auto &mailbox = r->mailbox();
  Envelope *recv = nullptr;
  if (mailbox.has_posted_receives()) {
    recv = mailbox.claim_receive(
        header, [](const Envelope &e) { return e.data != nullptr; }, still_of(r, destination));
  }
  if (recv != nullptr) {
    auto *to = static_cast<std::byte *>(recv->data);
    std::size_t room = recv->length;  // cut to fit
    if (count == 1 && pieces[0].length <= std::min<std::size_t>(room, 64)) {
      // A small message whole (a short frame): no call to memcpy.
      platform::copy_upto64(to, static_cast<const std::byte *>(pieces[0].bytes), pieces[0].length);
    } else {
      for (int k = 0; k < count && room != 0; ++k) {
        const std::size_t n = std::min(pieces[k].length, room);
        if (n != 0) std::memcpy(to, pieces[k].bytes, n);
        to += n;
        room -= n;
      }
    }
    recv->arrived = header;
    recv->length = length;
    recv->status = ROCL_OK;
    signal_receive(recv, op);  // the last touch of recv
    note_match(destination, header, false);
  }
  return recv != nullptr;
}

// ---- receive ---------------------------------------------------------------

namespace {

// What the directory says of a receive's origin: still there (or it
// cannot tell for now: a server that does not answer), gone, or never
// to be told again (this process's directory server is lost).
enum class Origin { kThere, kGone, kUnknowable };

Origin origin_state(rocl_gid_t origin, const ResourceTable &resources,
                    const std::vector<std::unique_ptr<Transport>> &transports,
                    Directory &directory) noexcept {
  if (origin == ROCL_ANY_GID || resources.contains(origin)) return Origin::kThere;
  // Input held back for want of pool blocks may hold the origin's last
  // messages, sent before its process exited: not gone until it is read.
  for (const auto &t : transports) {
    if (t->holds_unread_input()) return Origin::kThere;
  }
  try {
    rocl_gid_t gid = origin;
    AttrList none(64);
    const int rc = directory.query(&gid, none);
    if (rc == ROCL_ENOTFOUND) return Origin::kGone;
    // Without its directory server this process can never learn that the
    // origin died: waiting on could hang for ever. Its host is leaving the
    // job anyway (the other servers drop the silent one, and with it every
    // resource of this host), so nobody can reach this resource for long.
    if (rc == ROCL_EPEER && directory.lost()) return Origin::kUnknowable;
  } catch (const std::bad_alloc &) {
  }
  return Origin::kThere;
}

// The failure of a receive on r that stopped waiting for origin (kGone or
// kUnknowable), with its sentence.
int origin_failure(Origin state, rocl_gid_t origin, const Resource *r) noexcept {
  if (state == Origin::kUnknowable) {
    const std::string why = last_error();  // the directory's, from origin_state
    return fail(ROCL_EPEER,
                "rocl_recv: %#llx stopped waiting for origin %#llx: whether it still exists can no "
                "longer be told (%s)",
                ull(r->gid()), ull(origin), why.c_str());
  }
  return fail(ROCL_EPEER,
              "rocl_recv: origin %#llx no longer exists (its process exited or died, or it was "
              "deleted) while %#llx waited for it",
              ull(origin), ull(r->gid()));
}

}  // namespace

// A blocking receive posted alone spins on its mailbox's hand-off word
// (Communicator::post_spinning), where a sender of another thread leaves
// its message with one swap (deliver), sooner than through the lock and the
// completion (rocl-bench latency, between threads, shows it). Nothing within
// the spin: the receive withdraws its ticket and waits as any receive
// (await_receive, which sleeps), for what is left of the timeout.
int Context::await_hand_off(Resource *r, Envelope &env, std::uint64_t ticket, int timeout,
                            Envelope **msg, ReceiveOp &op) noexcept {
  Mailbox &mailbox = r->mailbox();
  const auto start =
      timeout > 0 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (!progress_.spin_for_hand_off(mailbox, ticket, timeout, &op) && mailbox.withdraw(ticket)) {
    int left = timeout;
    if (timeout > 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      left = static_cast<int>(std::max<long long>(timeout - spent.count(), 0));
    }
    return await_receive(r, env, left, msg, op, /*spun=*/true);
  }
  if (Envelope *handed = mailbox.take_handed(&env, ticket); handed != nullptr) {
    *msg = handed;
    return ROCL_OK;
  }
  // Claimed by a locked call (a delivery, or close()): its completion is
  // signalled or about to be.
  return await_receive(r, env, timeout, msg, op);
}

int Context::await_receive(Resource *r, Envelope &env, int timeout, Envelope **msg, ReceiveOp &op,
                           bool spun) noexcept {
  // No clock read unless there is a timeout: a receive waiting for ever
  // reads none before it spins (each read costs about one poll).
  const auto deadline = timeout > 0
                            ? std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout)
                            : std::chrono::steady_clock::time_point::max();
  // Spin first, reading the transports' rings and sockets ourselves; only
  // then sleep (and let the transports' threads wake us).
  bool done = spun ? env.complete.is_done() : progress_.spin_until_done(env.complete, timeout, &op);
  // The policy's spin is over (wait_policy.hpp): sleep from now on.
  std::optional<wait::Asleep> asleep;
  if (!done) asleep.emplace();
  // A receive from one origin also watches that the origin still exists:
  // when its process exits or dies the directory forgets it, and waiting on
  // would hang forever. Wildcard receives cannot tell whom they wait for.
  const int check_ms = static_cast<int>(options_.peer_check_ms);
  const bool watch = check_ms > 0 && env.header.source != ROCL_ANY_GID;
  while (!done) {
    int slice = timeout;
    if (timeout > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      slice = static_cast<int>(std::max<long long>(left.count(), 0));
    }
    if (watch && (slice < 0 || slice > check_ms)) slice = check_ms;
    done = progress_.sleep_until_done(env.complete, slice, &op);
    if (done || slice == timeout || timeout == 0) break;
    if (timeout > 0 && std::chrono::steady_clock::now() >= deadline) break;
    if (!watch) continue;
    if (const Origin state = origin_state(env.header.source, resources_, transports_, *directory_);
        state != Origin::kThere) {
      // What it sent before it went may still be arriving: a last grace.
      if (progress_.sleep_until_done(env.complete, check_ms / 4 + 1, &op)) {
        done = true;
        break;
      }
      if (r->mailbox().cancel_receive(&env)) return origin_failure(state, env.header.source, r);
      break;  // matched meanwhile
    }
  }
  if (!done && r->mailbox().cancel_receive(&env)) return ROCL_ETIMEDOUT;
  // Matched or closed while we gave up: the signal is on its way.
  env.complete.wait(-1, wait::kSignalOnItsWay);
  if (env.status != ROCL_OK) return env.status;
  *msg = env.matched;
  return ROCL_OK;
}

bool Context::pull_into_caller(Envelope *msg, void *into, std::size_t cap, rocl_status_t *status,
                               int *rc) noexcept {
  if (!msg->rendezvous || into == nullptr) return false;
  auto *stub = static_cast<Message *>(msg);
  Transport *t = rendezvous_transport(stub);
  if (!t->caps().pulls_into_memory) return false;
  const CoreHeader header = stub->header;
  const std::size_t len = stub->length;
  *rc = t->pull_into(stub, into, cap);
  *status = rocl_status_t{into, header.source, header.tag, *rc, len, header.flags()};
  return true;
}

// A matched rendezvous stub becomes the message here, on the receiving
// thread: the transport copies the payload from the sender once. If our
// pool has no block for it, the stub goes back to r's mailbox, in its
// place: the message is not lost, a later receive can take it.
int Context::pull_if_rendezvous(Resource *r, Envelope **msg) noexcept {
  if (!(*msg)->rendezvous) return ROCL_OK;
  auto *stub = static_cast<Message *>(*msg);
  Transport *t = rendezvous_transport(stub);
  Message *m = nullptr;
  const int rc = t->pull(stub, &m);
  if (rc == ROCL_OK) {
    *msg = m;
    return ROCL_OK;
  }
  if (m != stub) return rc;  // the transport said why
  const std::string why = last_error();
  // Its match was acknowledged (ROCL_FLAG_ACK): the next one must not be.
  stub->header.domain &= ~(std::uint32_t{ROCL_FLAG_ACK} << kFlagsShift);
  bool kept = false;
  try {
    kept = r != nullptr && r->mailbox().requeue(stub);
  } catch (const std::bad_alloc &) {  // a new header's index bin
  }
  if (!kept) {
    t->discard(stub);
    return fail(rc, "%s; the message is dropped (its resource is closing, or out of memory)",
                why.c_str());
  }
  return fail(rc,
              "%s; the message stays queued: receive it again once buffers are returned "
              "(rocl_bfret) or with a larger ROCL_POOL_MAX",
              why.c_str());
}

// Hands the message over: its buffer to the caller (into == nullptr), or
// its payload copied into (into, cap) and its block back to the pool.
int Context::finish_receive(Envelope *msg, void *into, std::size_t cap,
                            rocl_status_t *status) noexcept {
  BlockHeader *b = block_of(msg);
  status->ptr = into != nullptr ? into : msg->data;
  status->origin = msg->header.source;
  status->tag = msg->header.tag;
  status->len = msg->length;
  status->flags = msg->header.flags();
  status->error = ROCL_OK;
  if (into != nullptr) {
    if (msg->length != 0 && cap != 0) std::memcpy(into, msg->data, std::min(cap, msg->length));
    free_message(msg);
    return ROCL_OK;
  }
  std::destroy_at(static_cast<Message *>(msg));
  b->return_after_send = false;
  b->send_status.store(SendStatus::kIdle, std::memory_order_relaxed);
  b->state.store(BlockState::kUser, std::memory_order_release);
  return ROCL_OK;
}

// A receive whose message waits queued already (a stream's receiver finds
// most of them so) takes it without a reference to its resource: the
// mailbox's lock and a check of the gid under it make the take safe
// against a concurrent rocl_delete (Communicator::take_queued,
// Resource::start), and the reference's two locked read-modify-writes per
// message go (with the unsignalled take of take_or_post_receive: rocl-bench
// bandwidth --transport shm of small messages shows both). Not a rendezvous
// stub: the usual path may have to put it back, which needs the resource
// held. True if it took one (*rc the outcome).
bool Context::take_waiting(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                           std::size_t cap, rocl_status_t *status, int *rc) noexcept {
  if (!r->mailbox().has_queued_messages()) return false;
  Envelope *msg = r->mailbox().take_queued(pattern, still_of(r, dgid),
                                           [](const Envelope &m) { return !m.rendezvous; });
  if (msg == nullptr) return false;
  note_match(dgid, msg->header, true);
  progressed();  // the match may owe an acknowledgement (ROCL_FLAG_ACK)
  *rc = finish_receive(msg, into, cap, status);
  return true;
}

namespace {
// What a take past the mailbox asks, under the transport's input
// (Transport::take_arrived's ready): nothing waits in the mailbox that the
// receive should match first, and the resource is still dgid's.
struct TakeCheck {
  Resource *r;
  rocl_gid_t gid;
  static bool ready(const void *arg) noexcept {
    const auto *c = static_cast<const TakeCheck *>(arg);
    return c->r->mailbox().nothing_waits() && c->r->gid() == c->gid;
  }
};
}  // namespace

// A message taken past the mailbox (take_arrived, spin_take): matched here.
int Context::finish_take(rocl_gid_t dgid, Message *msg, void *into, std::size_t cap,
                         rocl_status_t *status) noexcept {
  note_match(dgid, msg->header, true);
  progressed();  // the match may owe an acknowledgement (ROCL_FLAG_ACK)
  return finish_receive(msg, into, cap, status);
}

// A receive whose message waits at the front of a transport's input takes
// it from there (Transport::take_arrived), without a reference to its
// resource, as take_waiting, once the transport holds its input and
// nothing waits in the mailbox (no receive posted before this one, no
// message queued that it should take first), and the resource is still
// dgid's. A miss costs a look at every polled transport's inputs, which a
// ping-pong's receive makes for nothing (its message is not there yet):
// after one, the next kSkipAfterMiss receives on the resource do not look
// here (spin_take, where it applies, looks at once instead), unless one of
// them finds its message at its first poll (recv_posted) or look
// (spin_take).
bool Context::take_arrived(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                           std::size_t cap, rocl_status_t *status, int *rc) noexcept {
  constexpr unsigned kSkipAfterMiss = 16;
  if (const unsigned skip = r->take_skip(); skip != 0) {
    r->set_take_skip(skip - 1);
    return false;
  }
  const TakeCheck check{r, dgid};
  for (Transport *t : progress_.polled()) {
    if (Message *msg = t->take_arrived(dgid, pattern, &TakeCheck::ready, &check, nullptr);
        msg != nullptr) {
      *rc = finish_take(dgid, msg, into, cap, status);
      return true;
    }
  }
  r->set_take_skip(kSkipAfterMiss);
  return false;
}

// A blocking receive from a resource of another process, whose message can
// only come through transports that take arrivals themselves
// (Transport::takes_arrived: shm), waits by looking at their inputs'
// fronts (take_arrived), without posting, once its first look (above)
// missed. Its message, when it comes, is taken there as a stream's
// receive takes it, without what a posted receive waits through (the
// poll's delivery, the mailbox's hand-off word, the spin's end): a
// ping-pong's receive paid that on every message. The look ends with
// anything else: a message queued in the mailbox meanwhile (another
// thread's, or one the transport's thread delivered: taken here), or
// something only progress() handles (at a front: another resource's
// message, a large one; a receive posted before this one; this side's
// own rendezvous sends in flight: take_arrived's *left), or after
// kSpinTakeRounds empty looks (a few microseconds; fewer with a
// ROCL_SPIN_US below 8, none with 0: the looks are part of the receive's
// spin): the receive then posts and waits as before (recv_posted), its
// spin polling as usual. Not for a message that may come otherwise: from
// this process or from anyone (the in-process hand-off), or while a
// transport that does not take arrivals may bring something (tcp, not
// idle). Nor into caller memory of more than kSpinTakeIntoBytes, which a
// posted receive has the transport copy straight into (deliver_pieces; a
// take copies into a pool block first).
bool Context::spin_take(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                        std::size_t cap, rocl_status_t *status, int *rc) noexcept {
  constexpr unsigned kSpinTakeRounds = 256;
  constexpr unsigned kLooksPerSpinUs = 32;  // an empty look takes less than 1/32 us
  constexpr std::size_t kSpinTakeIntoBytes = 256;
  // Part of the receive's spin (wait::spin_budget; 0: callers sleep at once).
  const auto spin = wait::spin_budget();
  const auto budget =
      static_cast<std::uint64_t>(std::min<std::int64_t>(spin.count(), kSpinTakeRounds));
  const auto rounds =
      static_cast<unsigned>(std::min<std::uint64_t>(kSpinTakeRounds, budget * kLooksPerSpinUs));
  if (rounds == 0 || (into != nullptr && cap > kSpinTakeIntoBytes) ||
      pattern.source == ROCL_ANY_GID || resources_.contains(pattern.source)) {
    return false;
  }
  std::array<Transport *, CallerProgress::kMaxPolled> looked;
  std::size_t n = 0;
  for (Transport *t : progress_.polled()) {
    if (t->idle()) continue;
    if (!t->caps().takes_arrived || n == looked.size()) return false;
    looked[n++] = t;
  }
  if (n == 0) return false;
  const TakeCheck check{r, dgid};
  // The lease (transport.hpp): senders leave the transport's thread asleep.
  for (std::size_t k = 0; k < n; ++k) looked[k]->poll_begin();
  Message *msg = nullptr;
  bool queued = false;
  unsigned round = 0;
  // Looks back to back, unless the thread shares its cpu with others of
  // ours: then it yields between them (the sender may be one of those).
  wait::SpinPhase phase(-1, spin, rounds);
  for (; round < rounds; ++round) {
    bool left = false;
    for (std::size_t k = 0; k < n && msg == nullptr; ++k) {
      msg = looked[k]->take_arrived(dgid, pattern, &TakeCheck::ready, &check, &left);
    }
    if (msg != nullptr) break;
    if ((queued = take_waiting(r, dgid, pattern, into, cap, status, rc))) break;
    if (left || !phase.next(round + 1)) break;
  }
  for (std::size_t k = 0; k < n; ++k) looked[k]->poll_end(/*will_sleep=*/false);
  // There at the first look (take_arrived's was skipped): the sender is
  // ahead, as in a stream, and the next receive looks first again.
  if (round == 0 && (msg != nullptr || queued)) r->set_take_skip(0);
  if (msg != nullptr) *rc = finish_take(dgid, msg, into, cap, status);
  return queued || msg != nullptr;
}

int Context::recv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain, void *into,
                  std::size_t cap, rocl_status_t *status, int timeout) noexcept {
  if (status == nullptr) return fail(ROCL_EINVAL, "rocl_recv: nowhere to put the message (NULL)");
  if (int rc = check_receive_args("rocl_recv", tag, domain); rc != ROCL_OK) return rc;
  const CoreHeader pattern{ogid, tag, domain};
  // One look in the table serves both: the take without a reference, then
  // the reference (ResourceTable::get's, without a second look).
  Resource *r = resources_.peek(dgid);
  if (int rc; r != nullptr && take_waiting(r, dgid, pattern, into, cap, status, &rc)) return rc;
  if (int rc; r != nullptr && timeout != 0 &&
              (take_arrived(r, dgid, pattern, into, cap, status, &rc) ||
               spin_take(r, dgid, pattern, into, cap, status, &rc))) {
    return rc;
  }
  return recv_posted(r, dgid, pattern, into, cap, status, timeout);
}

// The rest of recv, apart: its envelope, on a line of its own, made recv's
// frame align the stack, and its many calls save registers; a receive that
// takes a message waiting or arrived pays neither.
int Context::recv_posted(Resource *r, rocl_gid_t dgid, const CoreHeader &pattern, void *into,
                         std::size_t cap, rocl_status_t *status, int timeout) noexcept {
  if (r == nullptr || !r->acquire(dgid)) {
    return fail(ROCL_EBADGID, "rocl_recv: gid %#llx is not a resource of this context", ull(dgid));
  }
  // Made only now: a receive that finds its message queued needs none
  // (writing its two lines is a fair part of such a receive's cost). On a line
  // of its own: what a sender writes into it (matched, complete) then shares
  // one line (envelope.hpp).
  alignas(64) Envelope env;
  env.header = pattern;
  env.data = into;  // deliver_bytes may copy a message straight there
  env.length = into != nullptr ? cap : 0;
  Envelope *msg = nullptr;
  // A receive that may wait for a block spins on its mailbox's hand-off
  // word (await_hand_off). Not one into memory: what a transport copies
  // straight into it (deliver_pieces) comes through the lock and its
  // completion, and the ticket would only add a locked swap (compare's
  // rocl-mpi-shm latency rows show it).
  std::uint64_t ticket = 0;
  try {
    msg = timeout != 0 && into == nullptr ? r->mailbox().post_spinning(&env, &ticket)
                                          : r->mailbox().take_or_post_receive(&env);
  } catch (const std::bad_alloc &) {  // a new header's index bin; nothing changed
    resources_.put(r);
    return fail(ROCL_ENOMEM, "rocl_recv: out of memory posting a receive");
  }
  int rc = ROCL_OK;
  if (msg != nullptr) note_match(dgid, msg->header, true);
  if (msg == nullptr) {
    // Its next receives take their messages at the inputs' fronts
    // (take_arrived, spin_take): the transports stop at the first.
    ReceiveOp op(this, dgid, r, /*takes_block=*/into == nullptr, /*takes_arrived=*/true, &env);
    rc = ticket != 0 ? await_hand_off(r, env, ticket, timeout, &msg, op)
                     : await_receive(r, env, timeout, &msg, op);
    // Its message was there at the first poll: the sender is ahead (a
    // stream whose receiver caught up once, at the start of a window), and
    // the next receives take theirs from the ring again rather than post
    // and poll for each (the skip after a miss is for ping-pongs).
    if (op.done_at_first_look) r->set_take_skip(0);
  }
  if (msg != nullptr) {
    // The lines this receive (and a send of the same buffer) writes next:
    // the block's header, the envelope's first line, the resource's
    // counters, which the sender's thread had last. Asked for at once, they
    // come in about the time of one transfer instead of one each
    // (rocl-bench latency, between threads, shows it). Signalling the
    // receive only after the sender drops its reference would delay the
    // wake, which is the critical path.
    platform::prefetch_for_write(block_of(msg));
    platform::prefetch_for_write(msg);
    platform::prefetch_for_write(r);
  }
  if (rc != ROCL_OK) resources_.put(r);
  if (rc == ROCL_ETIMEDOUT) {
    if (timeout == 0) return rc;  // polling is normal: no sentence to format
    return fail(rc, "rocl_recv: no message on %#llx within %d ms", ull(dgid), timeout);
  }
  if (rc == ROCL_EPEER) return rc;  // origin_failure said why
  if (rc == ROCL_EDELETED) {
    return fail(rc, "rocl_recv: resource %#llx was deleted while waiting", ull(dgid));
  }
  if (rc != ROCL_OK) return fail(rc, "rocl_recv: %s", error_name(rc));
  if (msg == nullptr) {  // copied into `into` by deliver_bytes
    resources_.put(r);
    *status = rocl_status_t{into,    env.arrived.source, env.arrived.tag,
                            ROCL_OK, env.length,         env.arrived.flags()};
    progressed();
    return ROCL_OK;
  }
  if (int drc; pull_into_caller(msg, into, cap, status, &drc)) {
    resources_.put(r);
    progressed();
    return drc;
  }
  // r is still held: a stub the pool has no block for goes back to its mailbox.
  const int prc = pull_if_rendezvous(r, &msg);
  resources_.put(r);
  progressed();                    // a pull drives its transport, which may have matched others
  if (prc != ROCL_OK) return prc;  // pull said why
  return finish_receive(msg, into, cap, status);
}

int Context::probe(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain,
                   rocl_status_t *status, int timeout) noexcept {
  if (status == nullptr) return fail(ROCL_EINVAL, "rocl_probe: status is NULL");
  if (int rc = check_receive_args("rocl_probe", tag, domain); rc != ROCL_OK) return rc;
  Resource *r = resources_.get(dgid);
  if (r == nullptr) {
    return fail(ROCL_EBADGID, "rocl_probe: gid %#llx is not a resource of this context", ull(dgid));
  }
  // Nothing to wait on (a probe posts no envelope): look, drive the
  // transports, look again; after the spin period back off to naps of up
  // to 1 ms, which the transports' threads fill meanwhile.
  const CoreHeader pattern{ogid, tag, domain};
  const auto start = std::chrono::steady_clock::now();
  wait::SpinPhase phase(-1);
  bool spinning = timeout != 0;
  std::optional<wait::Asleep> asleep;
  std::chrono::microseconds nap{1};
  int rc = ROCL_ETIMEDOUT;
  for (int round = 0;; ++round) {
    std::size_t length = 0;
    const std::optional<CoreHeader> found = r->mailbox().probe(pattern, &length);
    if (found) {
      *status = rocl_status_t{nullptr, found->source, found->tag, ROCL_OK, length, found->flags()};
      rc = ROCL_OK;
      break;
    }
    if (r->mailbox().closed()) {
      rc = fail(ROCL_EDELETED, "rocl_probe: resource %#llx was deleted while waiting", ull(dgid));
      break;
    }
    // A poll (timeout 0) drives the transports once and looks again: a
    // loop of polls is how a caller waits, and must see arrivals itself.
    if (timeout == 0 && round > 0) break;
    const auto waited = std::chrono::steady_clock::now() - start;
    if (timeout > 0 && waited >= std::chrono::milliseconds(timeout)) {
      rc = fail(ROCL_ETIMEDOUT, "rocl_probe: no message on %#llx within %d ms", ull(dgid), timeout);
      break;
    }
    if (progress_.progress_all(nullptr) == 0 && timeout != 0 &&
        !(spinning = spinning && phase.next(static_cast<unsigned>(round) + 1))) {
      if (!asleep) asleep.emplace();
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
  }
  resources_.put(r);
  return rc;
}

}  // namespace rocl::impl
