// caller_progress.hpp - the transports a waiting thread drives itself, and
// how it spins while it waits (caller progress).
//
// Why: each transport between processes has a progress thread, but waking a
// sleeping thread costs many times a small message's whole trip, and a
// message would pay it twice (the transport's thread, then the receiver;
// rocl-bench latency --transport shm with ROCL_SPIN_US=0 shows it). A
// receiver that spins anyway (ROCL_SPIN_US) can as well read the rings and
// sockets itself: the message then lands in its mailbox at once and no
// thread wakes. The transports' side of the bargain is in transport.hpp
// (poll_begin / progress / poll_end).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "core/ack_queue.hpp"
#include "core/mailbox.hpp"
#include "message/message.hpp"
#include "rocl/generic/completion.hpp"
#include "transport/transport.hpp"

namespace rocl::impl {

struct ReceiveOp;

class CallerProgress {
 public:
  // The most transports a spinning caller begins polling.
  static constexpr std::size_t kMaxPolled = 8;

  // `sink`: whose progressed() runs after a round when `acks` has
  // acknowledgements waiting. How long and how a caller spins is the
  // waiting policy's (wait/wait_policy.hpp).
  CallerProgress(MessageSink &sink, const AckQueue &acks);
  CallerProgress(const CallerProgress &) = delete;
  CallerProgress &operator=(const CallerProgress &) = delete;

  // Set-up, before any caller spins: the transports between processes, in
  // the order they were enabled. Each is polled as often as it asks
  // (TransportCaps::progress_stride), or every round when it is alone.
  void set_transports(std::vector<Transport *> polled);

  bool empty() const noexcept { return polled_.empty(); }
  std::span<Transport *const> polled() const noexcept { return polled_; }

  // One progress() of every transport, with the receive that waits (or
  // nullptr); returns the events handled. Never blocks.
  int progress_all(const ReceiveOp *op) noexcept;

  // Spins until `done` is, driving the transports, as the waiting policy
  // says (wait::SpinPhase; at most timeout_ms; 0: one look and one round).
  // Whether it is done; if not, the caller sleeps (wait::before_sleep
  // first). op: the receive that waits, told whether it was done at the
  // first look.
  bool spin_until_done(const generic::Completion &done, int timeout_ms, ReceiveOp *op) noexcept;
  // The same for a receive spinning on its mailbox's hand-off word
  // (Mailbox::post_spinning) until it leaves `ticket`; with no transport
  // to drive, the policy's spin on the word alone.
  bool spin_for_hand_off(const Mailbox &mailbox, std::uint64_t ticket, int timeout_ms,
                         ReceiveOp *op) noexcept;
  // The same until a lent send's block is finished, for `spin`; a caller
  // that then sleeps polls now and then itself (the transports' threads
  // took over).
  bool spin_until_sent(const BlockHeader *block, int timeout_ms,
                       std::chrono::microseconds spin) noexcept;

  // After spin_until_done or spin_for_hand_off failed: sleeps until `done`
  // is signalled or timeout_ms passes (< 0: no limit; 0: one look and one
  // round), whether done. Where a transport wakes sleeping callers
  // (TransportCaps::caller_wake: shm) the caller sleeps on its word too and
  // takes what arrives itself; otherwise the transports' threads deliver.
  bool sleep_until_done(generic::Completion &done, int timeout_ms, ReceiveOp *op) noexcept;

 private:
  template <class Done>
  bool spin_until(Done done, int timeout_ms, std::chrono::microseconds spin, ReceiveOp *op,
                  bool sleeps_on_words) noexcept;
  Transport *waking_transport() const noexcept;
  bool sleeps_on(const Transport *t) const noexcept;
  template <class Done>
  bool spin_on(Done done, int timeout_ms, std::chrono::microseconds spin) noexcept;
  int progress_round(unsigned round, const ReceiveOp *op) noexcept;
  void after_round() noexcept {
    if (acks_.waiting()) sink_.progressed();
  }
  MessageSink &sink_;
  const AckQueue &acks_;
  std::vector<Transport *> polled_;
  // polled_[i] is polled in the rounds r with (r & poll_masks_[i]) == 0:
  // its stride rounded up to a power of two, so that a round tests a mask
  // (a division per transport per round would be a fair part of a spinning
  // receive's time).
  std::vector<unsigned> poll_masks_;
};

}  // namespace rocl::impl
