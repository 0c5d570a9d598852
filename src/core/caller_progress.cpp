// caller_progress.cpp - a waiting thread drives the transports itself
// (caller_progress.hpp).
#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "core/caller_progress.hpp"

#include <bit>

#include "core/receive_op.hpp"
#include "rocl/platform/cpu.hpp"

namespace rocl::impl {
namespace {
// The cpus this process may run on (its affinity mask, as roclrun
// --bind-to or taskset set it), at least 1.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}
}  // namespace

CallerProgress::CallerProgress(MessageSink &sink, const AckQueue &acks, std::uint32_t spin_us,
                               std::uint32_t sharers)
    : sink_(sink),
      acks_(acks),
      spin_(spin_us),
      sharers_(static_cast<int>(std::max<std::uint32_t>(1, sharers))),
      cpus_(usable_cpus()) {}

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

// More spinners than cpus: the thread that would send or read what we wait
// for may be queued behind us on our cpu, and would get it only at the end
// of our time slice (milliseconds): give the cpu away (Open MPI yields alike
// when oversubscribed). The spin then lasts kCrowdedSpinFactor times longer:
// most of its wall time is the others' work, and giving up into a sleep
// would make every message window pay a wake-up (rocl-bench mpi's mt_rate
// with more threads per rank than cpus shows it).
void CallerProgress::yield_crowded_cpu(std::chrono::microseconds *spin,
                                       std::chrono::steady_clock::time_point *end,
                                       std::chrono::steady_clock::time_point limit) const noexcept {
  constexpr int kCrowdedSpinFactor = 10;
  ::sched_yield();
  if (*spin != spin_) return;  // extended (or cut) already
  *end = std::min(*end + *spin * (kCrowdedSpinFactor - 1), limit);
  *spin *= kCrowdedSpinFactor;
}

// Rounds polled back to back before each empty one also pauses the cpu:
// a PAUSE may take longer than an empty round's poll, so a waiter that
// pauses from the start sees an arrival about half a PAUSE later on
// average (rocl-bench latency --transport shm of small messages shows it).
constexpr unsigned kBusyRounds = 2048;

bool CallerProgress::spin_until_done(const generic::Completion &done, int timeout_ms,
                                     ReceiveOp *op) noexcept {
  return spin_until([&done] { return done.is_done(); }, timeout_ms, spin_, op);
}

// A receive spinning on its mailbox's hand-off word (post_spinning): as
// spin_with_progress; with no transport to drive, a plain spin of
// ROCL_SPIN_US on the word (as Completion::wait spins on its own).
bool CallerProgress::spin_for_hand_off(const Mailbox &mailbox, std::uint64_t ticket, int timeout_ms,
                                       ReceiveOp *op) noexcept {
  const auto changed = [&mailbox, ticket] { return !mailbox.waiting_on(ticket); };
  auto spin = spin_;
  if (!polled_.empty() || timeout_ms == 0) return spin_until(changed, timeout_ms, spin, op);
  if (timeout_ms > 0) spin = std::min(spin, std::chrono::microseconds(timeout_ms * 1000LL));
  // The clock is first read after 64 looks (a clock read costs more than a
  // look, and a ping-pong's reply often comes sooner): the spin runs that
  // much longer.
  std::chrono::steady_clock::time_point end;
  for (unsigned i = 1;; ++i) {
    if (changed()) return true;
    platform::cpu_relax();
    if ((i & 63u) != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (i == 64) {
      end = now + spin;
    } else if (now >= end) {
      return changed();
    }
  }
}

bool CallerProgress::spin_until_sent(const BlockHeader *block, int timeout_ms,
                                     std::chrono::microseconds spin) noexcept {
  return spin_until([block] { return send_finished(block); }, timeout_ms, spin, nullptr);
}

// Spins for `spin` (and at most timeout_ms) driving the transports until
// done() says so; whether it did. op: the receive that waits (nullptr:
// none), passed to the transports and told whether it was done at the
// first look.
template <class Done>
bool CallerProgress::spin_until(Done done, int timeout_ms, std::chrono::microseconds spin,
                                ReceiveOp *op) noexcept {
  using Clock = std::chrono::steady_clock;
  if (done()) {
    if (op != nullptr) op->done_at_first_look = true;
    return true;
  }
  if (polled_.empty() || timeout_ms == 0) {
    if (timeout_ms == 0) progress_all(op);
    return done();
  }
  if (timeout_ms > 0) spin = std::min(spin, std::chrono::microseconds(timeout_ms * 1000LL));
  // The clock is first read after 16 empty rounds (or the first frame), not
  // before the first poll: a reply that comes at once (a ping-pong) is then
  // seen one clock read earlier. The spin runs that much longer.
  bool timed = false;
  Clock::time_point limit;  // never past the caller's timeout
  Clock::time_point end;
  auto read_clock = [&] {  // the first read starts the spin and the timeout
    const Clock::time_point now = Clock::now();
    if (!timed) {
      timed = true;
      limit =
          timeout_ms > 0 ? now + std::chrono::milliseconds(timeout_ms) : Clock::time_point::max();
      end = now + spin;
    }
    return now;
  };
  // The transports this caller polls (not idle ones: transport.hpp).
  std::array<Transport *, kMaxPolled> begun;
  std::size_t n_begun = 0;
  for (Transport *t : polled_) {
    if (n_begun < begun.size() && !t->idle()) {
      t->poll_begin();
      begun[n_begun++] = t;
    }
  }
  // Counted among the spinners from the first clock read on: a reply that
  // comes within 16 rounds pays no locked instruction for it.
  bool counted = false;
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
    if (handled == 0) {
      if (i > kBusyRounds) platform::cpu_relax();
      // Reading the clock costs about as much as a poll; check now and then.
      if ((i & 15u) == 0) {
        const Clock::time_point now = read_clock();
        if (!counted) {
          spinners_.fetch_add(1, std::memory_order_relaxed);
          counted = true;
        }
        if (spinners_.load(std::memory_order_relaxed) * sharers_ > cpus_) {
          yield_crowded_cpu(&spin, &end, limit);
        }
        if (now >= end) break;
      }
    } else {
      // Frames keep coming (the fragments of a large message, say): spin on
      // rather than hand each of them to a thread that must be woken, or a
      // message whose fragments take longer than the spin to arrive puts
      // both ends into a mode where every fragment pays a wake-up
      // (rocl-bench latency --transport shm of 1 MiB shows it).
      const Clock::time_point now = read_clock();
      if (now >= limit) break;
      end = std::min(now + spin, limit);
    }
  }
  if (counted) spinners_.fetch_sub(1, std::memory_order_relaxed);
  for (std::size_t k = 0; k < n_begun; ++k) begun[k]->poll_end(!ok);
  return ok || done();
}

}  // namespace rocl::impl
