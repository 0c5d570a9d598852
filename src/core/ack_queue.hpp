// ack_queue.hpp - acknowledgements of matched messages (ROCL_FLAG_ACK, the
// synchronous sends of MPI) that could not be sent where the match
// happened: a match inside a transport's progress happens under its
// receive lock, where sending could wait for ring room that only that
// lock's holder can make. They wait here until the progress round is over.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "rocl/rocl.h"

namespace rocl::impl {

class AckQueue {
 public:
  struct Ack {
    rocl_gid_t from, to;
    int tag;
    std::uint32_t domain;
    // Nonzero: not a match's acknowledgement but a striped message's
    // (StripeAck): message stripe_id from `to` arrived whole at `from`.
    std::uint64_t stripe_id = 0;
  };

  // Keeps `ack` for the next take(). False if there is no memory for it:
  // the caller sends it itself. Thread safe; never blocks but on the
  // queue's own mutex.
  bool push(const Ack &ack) noexcept {
    try {
      std::lock_guard<std::mutex> guard(mu_);
      acks_.push_back(ack);
    } catch (const std::bad_alloc &) {
      return false;
    }
    waiting_.store(true, std::memory_order_release);
    return true;
  }

  // Whether acknowledgements wait: one load, on the path of every progress
  // round and receive.
  bool waiting() const noexcept { return waiting_.load(std::memory_order_acquire); }

  // The waiting acknowledgements, in the order they were pushed; the queue
  // is empty after.
  std::vector<Ack> take() noexcept {
    std::vector<Ack> batch;
    std::lock_guard<std::mutex> guard(mu_);
    batch.swap(acks_);
    waiting_.store(false, std::memory_order_relaxed);
    return batch;
  }

 private:
  std::mutex mu_;
  std::vector<Ack> acks_;
  std::atomic<bool> waiting_{false};
};

}  // namespace rocl::impl
