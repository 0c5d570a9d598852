// caller_progress.cpp - a waiting thread drives the transports itself
// (caller_progress.hpp).
#include <time.h>
#include <algorithm>

#include <array>
#include <chrono>

#include "core/caller_progress.hpp"

#include <bit>

#include "core/receive_op.hpp"
#include "rocl/platform/futex.hpp"
#include "wait/wait_policy.hpp"

namespace rocl::impl {

CallerProgress::CallerProgress(MessageSink &sink, const AckQueue &acks)
    : sink_(sink), acks_(acks) {}

void CallerProgress::set_transports(std::vector<Transport *> polled) {
  polled_ = std::move(polled);
  poll_masks_.clear();
  for (Transport *t : polled_) {
    const unsigned stride = polled_.size() == 1 ? 1u : std::max(1u, t->caps().progress_stride);
    poll_masks_.push_back(std::bit_ceil(stride) - 1);
  }
}

int CallerProgress::progress_all(const ReceiveOp *op) noexcept {
  int n = 0;
  for (Transport *t : polled_) n += t->progress(op);
  after_round();
  return n;
}

// One round of a spinning caller's loop: the transports due this round.
int CallerProgress::progress_round(unsigned round, const ReceiveOp *op) noexcept {
  int n = 0;
  for (std::size_t k = 0; k < polled_.size(); ++k) {
    if ((round & poll_masks_[k]) == 0) n += polled_[k]->progress(op);
  }
  after_round();
  return n;
}

// Rounds polled back to back before each empty one also pauses the cpu:
// a PAUSE may take longer than an empty round's poll, so a waiter that
// pauses from the start sees an arrival about half a PAUSE later on
// average (rocl-bench latency --transport shm of small messages shows it).
constexpr unsigned kBusyRounds = 2048;

bool CallerProgress::spin_until_done(const generic::Completion &done, int timeout_ms,
                                     ReceiveOp *op) noexcept {
  return spin_until([&done] { return done.is_done(); }, timeout_ms, wait::spin_budget(), op,
                    /*sleeps_on_words=*/true);
}

bool CallerProgress::spin_for_hand_off(const Mailbox &mailbox, std::uint64_t ticket, int timeout_ms,
                                       ReceiveOp *op) noexcept {
  return spin_until([&mailbox, ticket] { return !mailbox.waiting_on(ticket); }, timeout_ms,
                    wait::spin_budget(), op, /*sleeps_on_words=*/true);
}

bool CallerProgress::spin_until_sent(const BlockHeader *block, int timeout_ms,
                                     std::chrono::microseconds spin) noexcept {
  return spin_until([block] { return send_finished(block); }, timeout_ms, spin, nullptr,
                    /*sleeps_on_words=*/false);
}

Transport *CallerProgress::waking_transport() const noexcept {
  if (!platform::futex_waitv_available()) return nullptr;  // the threads deliver then
  for (Transport *t : polled_) {
    if (t->caps().caller_wake.word != nullptr && !t->idle()) return t;
  }
  return nullptr;
}

// Whether a caller that stops spinning now sleeps on t's word
// (TransportCaps::caller_wake) rather than handing back to t's thread: not
// while t holds input it could not read (a paused slot, which its thread
// retries).
bool CallerProgress::sleeps_on(const Transport *t) const noexcept {
  return t->caps().caller_wake.word != nullptr && t == waking_transport() &&
         !t->holds_unread_input();
}

bool CallerProgress::sleep_until_done(generic::Completion &done, int timeout_ms,
                                      ReceiveOp *op) noexcept {
  Transport *t = waking_transport();
  if (t == nullptr || t->holds_unread_input()) {
    return done.wait(timeout_ms, std::chrono::nanoseconds(0));
  }
  if (done.is_done()) return true;
  if (timeout_ms == 0) {
    progress_all(op);
    return done.is_done();
  }
  const TransportCaps::CallerWake &w = t->caps().caller_wake;
  timespec until{};
  const timespec *limit = nullptr;
  if (timeout_ms > 0) {
    ::clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += static_cast<long>(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_nsec -= 1000000000L;
      ++until.tv_sec;
    }
    limit = &until;
  }
  for (;;) {
    w.wanted->store(1, std::memory_order_seq_cst);
    const std::uint32_t seen = w.word->load(std::memory_order_acquire);
    progress_all(op);  // what was published before the flag went up
    if (done.is_done() || done.sleep_or(w.word, seen, w.shared, limit)) return true;
    progress_all(op);  // what woke us
    if (done.is_done()) return true;
    if (limit != nullptr) {
      timespec now{};
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
        return false;
    }
  }
}

// Looks at done() between the policy's pauses or yields (wait_policy.hpp),
// with no transport to drive.
template <class Done>
bool CallerProgress::spin_on(Done done, int timeout_ms, std::chrono::microseconds spin) noexcept {
  wait::SpinPhase phase(timeout_ms, spin);
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    if (!phase.next(i)) return done();
  }
}

// Spins as the waiting policy says (and at most timeout_ms) driving the
// transports until done() says so; whether it did. op: the receive that
// waits (nullptr: none), passed to the transports and told whether it was
// done at the first look.
template <class Done>
bool CallerProgress::spin_until(Done done, int timeout_ms, std::chrono::microseconds spin,
                                ReceiveOp *op, bool sleeps_on_words) noexcept {
  if (done()) {
    if (op != nullptr) op->done_at_first_look = true;
    return true;
  }
  if (timeout_ms == 0) {
    if (!polled_.empty()) progress_all(op);
    return done();
  }
  if (polled_.empty()) return spin_on(done, timeout_ms, spin);
  // The transports this caller polls (not idle ones: transport.hpp).
  std::array<Transport *, kMaxPolled> begun;
  std::size_t n_begun = 0;
  for (Transport *t : polled_) {
    if (n_begun < begun.size() && !t->idle()) {
      t->poll_begin();
      begun[n_begun++] = t;
    }
  }
  // The clock is first read after 16 empty rounds (or the first frame), not
  // before the first poll: a reply that comes at once (a ping-pong) is then
  // seen one clock read earlier. The spin runs that much longer.
  wait::SpinPhase phase(timeout_ms, spin, kBusyRounds);
  bool ok = false;
  for (unsigned i = 1;; ++i) {
    if (done()) {
      ok = true;
      break;
    }
    const int handled = progress_round(i, op);
    if (handled != 0 && done()) {  // the common end: no clock read
      if (op != nullptr) op->done_at_first_look = i == 1;
      ok = true;
      break;
    }
    // Frames that keep coming (the fragments of a large message, say)
    // renew the spin rather than hand each of them to a thread that must
    // be woken, or a message whose fragments take longer than the spin to
    // arrive puts both ends into a mode where every fragment pays a
    // wake-up (rocl-bench latency --transport shm of 1 MiB shows it).
    if (handled == 0 ? !phase.next(i) : !phase.renew()) break;
  }
  // A caller about to sleep hands arrivals back to the transports' threads,
  // unless it sleeps on a transport's word (sleep_until_done).
  for (std::size_t k = 0; k < n_begun; ++k) {
    begun[k]->poll_end(!ok && !(sleeps_on_words && sleeps_on(begun[k])));
  }
  return ok || done();
}

}  // namespace rocl::impl
