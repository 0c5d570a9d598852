// requests.cpp - immediate operations (CoR): isend/irecv return a handle
// that test/wait complete and cancel withdraws.
#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

#include "core/requests.hpp"

#include "core/context.hpp"
#include "core/receive_op.hpp"
#include "rocl/generic/recycled.hpp"
#include "status/status.hpp"
#include "wait/wait_policy.hpp"

// The handle behind rocl_request_t. A receive holds no reference to its
// resource (two locked read-modify-writes per message, which compare's
// rocl-mpi-shm streams show): its envelope is posted only while the resource
// is still its gid's (checked under the mailbox's lock), and a rocl_delete
// completes it (the mailbox's close) before the object can be recycled. What
// the request does with the resource afterwards is safe on a recycled one: a
// cancel finds its envelope in no queue there; a wait announces gid, which
// deliveries check under the lock; only a rendezvous stub put back after a
// failed pull needs the resource held, and takes a reference for that
// (complete_request).
struct rocl_request : rocl::generic::Recycled<rocl_request> {
  enum class Kind { kSend, kReceive };
  explicit rocl_request(Kind k) : kind(k) {}
  Kind kind;
  rocl::impl::Resource *resource = nullptr;
  rocl_gid_t gid = ROCL_NULL_GID;  // the resource's, when posted
  rocl::impl::Envelope env;
  rocl::impl::Envelope *message = nullptr;  // matched at post time
  void *into = nullptr;                     // receive into memory (rocl_irecvx), or hand over
  std::size_t cap = 0;
  rocl_status_t send_status{};
  // A lent send (rocl_isendx_lend): the block carrying its envelope, done
  // once the transport finished it (send_status kSent or kFailed).
  rocl::impl::BlockHeader *lent = nullptr;
};

namespace rocl::impl {

int Requests::isend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
                    std::size_t len, rocl_request **req, bool lend) noexcept {
  if (req == nullptr) return fail(ROCL_EINVAL, "rocl_isend: req is NULL");
  if (lend) return isend_lend(ogid, dgid, tag, domain_word, ptr, len, req);
  auto *r = new (std::nothrow) rocl_request(rocl_request::Kind::kSend);
  if (r == nullptr) return fail(ROCL_ENOMEM, "rocl_isend: out of memory for the request");
  // Sends are accepted (delivered or queued) before they return, so the
  // request is complete from the start.
  if (int rc = context_.send(ogid, dgid, tag, domain_word, ptr, len); rc != ROCL_OK) {
    delete r;
    return rc;
  }
  r->send_status = rocl_status_t{nullptr, dgid, tag, ROCL_OK, len, domain_word >> kFlagsShift};
  *req = r;
  return ROCL_OK;
}

// A lent send completes once the receiver has read the caller's memory;
// one that is copied instead needs no request at all (*req = nullptr).
int Requests::isend_lend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word,
                         void *ptr, std::size_t len, rocl_request **req) noexcept {
  if (int rc = context_.check_send_args(ogid, tag); rc != ROCL_OK) return rc;
  Route route;
  if (context_.router_.may_lend(dgid, ptr, len, &route)) {
    auto *r = new (std::nothrow) rocl_request(rocl_request::Kind::kSend);
    if (r == nullptr) return fail(ROCL_ENOMEM, "rocl_isendx_lend: out of memory for the request");
    if (context_.router_.send_lent(route, dgid, CoreHeader{ogid, tag, domain_word}, ptr, len,
                                   &r->lent)) {
      r->send_status = rocl_status_t{nullptr, dgid, tag, ROCL_OK, len, domain_word >> kFlagsShift};
      *req = r;
      return ROCL_OK;
    }
    delete r;
  }
  const int rc = context_.send(ogid, dgid, tag, domain_word, ptr, len);
  if (rc == ROCL_OK) *req = nullptr;
  return rc;
}

int Requests::irecv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain, void *into,
                    std::size_t cap, rocl_request **req) noexcept {
  if (req == nullptr) return fail(ROCL_EINVAL, "rocl_irecv: req is NULL");
  if (int rc = check_receive_args("rocl_irecv", tag, domain); rc != ROCL_OK) return rc;
  const auto not_here = [dgid] {
    return fail(ROCL_EBADGID, "rocl_irecv: gid %#llx is not a resource of this context",
                static_cast<unsigned long long>(dgid));
  };
  Resource *res = context_.resources_.peek(dgid);  // no reference: rocl_request
  if (res == nullptr) return not_here();
  auto *r = new (std::nothrow) rocl_request(rocl_request::Kind::kReceive);
  if (r == nullptr) return fail(ROCL_ENOMEM, "rocl_irecv: out of memory for the request");
  r->resource = res;
  r->gid = dgid;
  r->env.header = CoreHeader{ogid, tag, domain};
  r->env.data = into;  // deliver_bytes may copy a message straight there
  r->env.length = into != nullptr ? cap : 0;
  r->into = into;
  r->cap = cap;
  bool gone = false;
  try {
    r->message = res->mailbox().take_or_post_receive(&r->env, still_of(res, dgid), &gone);
    if (r->message != nullptr) context_.note_match(dgid, r->message->header, true);
  } catch (const std::bad_alloc &) {  // a new header's index bin; nothing changed
    delete r;
    return fail(ROCL_ENOMEM, "rocl_irecv: out of memory posting a receive");
  }
  if (gone) {  // deleted (and its object reused) since the look: nothing posted
    delete r;
    return not_here();
  }
  *req = r;
  return ROCL_OK;
}

namespace {
bool receive_done(const rocl_request *r) {
  return r->message != nullptr || r->env.complete.is_done();
}
bool send_done(const rocl_request *r) {
  return r->lent == nullptr || send_finished(r->lent);
}
bool done(const rocl_request *r) {
  return r->kind == rocl_request::Kind::kReceive ? receive_done(r) : send_done(r);
}
}  // namespace

// Nothing wakes a sender when its receiver has read what it lent (the
// transport marks it in shared memory; shm's thread reaps it within its
// retry period), so the sender spins: ROCL_SPIN_US plus as long as the
// receiver's copy may take (at kSlowestCopyBytesPerUs), so that a receive
// already under way ends the spin; a sleep there would delay the sender's next
// step by up to the sleep (rocl-bench mpi's latency of 1 MiB shows it). Then
// it sleeps backing off and drives the transports between sleeps: a sender
// waits that long only while its receiver has not posted the receive.
bool Requests::wait_sent(const BlockHeader *block, int timeout_ms) noexcept {
  using Clock = std::chrono::steady_clock;
  constexpr std::size_t kSlowestCopyBytesPerUs = 2000;  // 2 GB/s
  const auto *msg = static_cast<const Message *>(owner_area_of(block));
  const auto budget = wait::spin_budget();
  const auto copy = std::chrono::microseconds(msg->length / kSlowestCopyBytesPerUs);
  const auto spin = budget == std::chrono::microseconds::max() ? budget : budget + copy;
  if (context_.progress_.spin_until_sent(block, timeout_ms, spin)) return true;
  if (timeout_ms == 0) return false;
  const auto deadline = timeout_ms > 0 ? Clock::now() + std::chrono::milliseconds(timeout_ms)
                                       : Clock::time_point::max();
  int sleep_us = 20;
  const wait::Asleep asleep;
  for (;;) {
    context_.progress_.progress_all(nullptr);
    if (send_finished(block)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 500);
  }
}

// pull_if_rendezvous for a receive's matched message: a stub whose pull
// fails goes back to the resource's mailbox, which needs the resource held
// (the request holds no reference): taken here, only for a stub. If the
// resource was deleted meanwhile, such a stub is dropped.
int Requests::pull_rendezvous_of(rocl_request *r, Envelope **msg) noexcept {
  if (!(*msg)->rendezvous) return ROCL_OK;
  Resource *held = r->resource->acquire(r->gid) ? r->resource : nullptr;
  const int rc = context_.pull_if_rendezvous(held, msg);
  if (held != nullptr) context_.resources_.put(held);
  return rc;
}

// Completes a finished request: fills status, frees it, nulls the handle.
// The status is written where the caller wants it (no copy of a local).
inline int Requests::complete_request(rocl_request **req, rocl_status_t *status) noexcept {
  rocl_request *r = *req;
  rocl_status_t unwanted;
  rocl_status_t &st = status != nullptr ? *status : unwanted;
  int rc = ROCL_OK;
  if (r->kind == rocl_request::Kind::kSend) {
    st = r->send_status;
    if (r->lent != nullptr) {
      if (r->lent->send_status.load(std::memory_order_acquire) == SendStatus::kFailed) {
        rc = ROCL_EPEER;  // the transport said why, on its log
        st.error = rc;
      }
      context_.router_.release_lent(r->lent);
    }
  } else if (r->message == nullptr && r->env.status != ROCL_OK) {  // deleted, cancelled
    st = rocl_status_t{};
    rc = r->env.status;
    st.error = rc;
  } else if (r->message == nullptr && r->env.matched == nullptr) {
    // Copied into r->into by deliver_bytes: how a small receive ends.
    const CoreHeader &h = r->env.arrived;
    st = rocl_status_t{r->into, h.source, h.tag, ROCL_OK, r->env.length, h.flags()};
  } else {
    st = rocl_status_t{};
    Envelope *msg = r->message != nullptr ? r->message : r->env.matched;
    if (context_.pull_into_caller(msg, r->into, r->cap, &st, &rc)) {
      // pulled straight into the caller's memory (or failed: st.error says)
    } else if (rc = pull_rendezvous_of(r, &msg); rc != ROCL_OK) {
      st.error = rc;
    } else {
      context_.finish_receive(msg, r->into, r->cap, &st);
    }
  }
  delete r;
  *req = nullptr;
  context_.progressed();  // a pull drives its transport, which may have matched others
  return rc;
}

int Requests::test(rocl_request **req, int *done, rocl_status_t *status) noexcept {
  if (req == nullptr || done == nullptr) return fail(ROCL_EINVAL, "rocl_test: req or done is NULL");
  if (*req == nullptr) {
    *done = 1;
    if (status != nullptr) *status = rocl_status_t{};
    return ROCL_OK;
  }
  rocl_request *r = *req;
  if (!impl::done(r)) {
    context_.progress_.progress_all(nullptr);  // a test loop is a poll loop: drive the transports
    if (!impl::done(r)) {
      *done = 0;
      return ROCL_OK;
    }
  }
  *done = 1;
  return finish(req, status, "rocl_test");
}

// Small, so that it is inlined into rocl_wait and its callers (the rest,
// with its spin and its many saved registers, is wait_pending).
int Requests::wait(rocl_request **req, rocl_status_t *status, int timeout) noexcept {
  // Done already (a wait loop over a window of receives finds most of them
  // so, their messages delivered by its earlier waits' polls): no spin to
  // set up, no waiting thread to announce.
  if (req != nullptr && *req != nullptr && impl::done(*req)) [[likely]] {
    return finish(req, status, "rocl_wait");
  }
  return wait_pending(req, status, timeout);
}

int Requests::wait_pending(rocl_request **req, rocl_status_t *status, int timeout) noexcept {
  if (req == nullptr) return fail(ROCL_EINVAL, "rocl_wait: req is NULL");
  if (*req == nullptr) {
    if (status != nullptr) *status = rocl_status_t{};
    return ROCL_OK;
  }
  rocl_request *r = *req;  // not done when wait() looked
  if (r->kind == rocl_request::Kind::kReceive && r->message == nullptr) {
    // Announced by gid: what our own polls deliver to the resource while we
    // wait needs no reference (ReceiveOp); the mailbox's calls check under
    // its lock that it still is gid's (the request holds none).
    ReceiveOp op(&context_, r->gid, r->resource, /*takes_block=*/r->env.data == nullptr,
                 /*takes_arrived=*/false, /*own_receive=*/nullptr);
    if (!context_.progress_.spin_until_done(r->env.complete, timeout, &op)) {
      const wait::Asleep asleep;
      if (!context_.progress_.sleep_until_done(r->env.complete, timeout, &op)) {
        if (timeout == 0) return ROCL_ETIMEDOUT;
        return fail(ROCL_ETIMEDOUT, "rocl_wait: the operation did not complete within %d ms",
                    timeout);
      }
    }
  } else if (!send_done(r) && !wait_sent(r->lent, timeout)) {
    if (timeout == 0) return ROCL_ETIMEDOUT;
    return fail(ROCL_ETIMEDOUT,
                "rocl_wait: the lent send was not taken by its receiver within %d ms", timeout);
  }
  return finish(req, status, "rocl_wait");
}

inline int Requests::finish(rocl_request **req, rocl_status_t *status, const char *who) noexcept {
  const auto kind = (*req)->kind;  // named only if it failed: r is gone by then
  int rc = complete_request(req, status);
  if (rc == ROCL_OK) [[likely]]
    return rc;
  return fail(rc, "%s: the %s failed: %s", who,
              kind == rocl_request::Kind::kReceive ? "receive" : "send", error_name(rc));
}

int Requests::cancel(rocl_request **req) noexcept {
  if (req == nullptr || *req == nullptr) return fail(ROCL_EINVAL, "rocl_cancel: no request");
  rocl_request *r = *req;
  if (r->kind == rocl_request::Kind::kSend) {
    return fail(ROCL_EALREADY, "rocl_cancel: a send cannot be cancelled; test or wait it");
  }
  if (r->message != nullptr || !r->resource->mailbox().cancel_receive(&r->env)) {
    return fail(ROCL_EALREADY, "rocl_cancel: the operation has already completed; test or wait it");
  }
  delete r;
  *req = nullptr;
  return ROCL_OK;
}

}  // namespace rocl::impl
