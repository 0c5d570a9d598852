// spsc_anchor.hpp - the physical anchor of the latency figures: a bare
// lock-free single-producer/single-consumer ring. A ping-pong over two of
// them costs what moving a cache line between two cores costs, and nothing
// else; rocl's latency is reported next to it ("x spsc").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench_runner.hpp"

namespace rocl_bench {

inline constexpr std::size_t kCacheLine = 64;

// A bounded ring for one producer thread and one consumer thread. The
// producer's index and the consumer's index live on separate cache lines
// (with each side's cached copy of the other's index beside its own), so
// that the line holding an index only moves when the other side must look.
template <class T, std::size_t N>
class SpscRing {
  static_assert(N >= 2 && (N & (N - 1)) == 0, "capacity must be a power of two");

 public:
  // Producer only. False if the ring is full.
  bool try_push(const T &value) noexcept {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_seen_ == N) {
      tail_seen_ = tail_.load(std::memory_order_acquire);
      if (head - tail_seen_ == N) return false;
    }
    slots_[head & (N - 1)] = value;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // Consumer only. False if the ring is empty.
  bool try_pop(T &out) noexcept {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_seen_) {
      head_seen_ = head_.load(std::memory_order_acquire);
      if (tail == head_seen_) return false;
    }
    out = slots_[tail & (N - 1)];
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

 private:
  alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};  // written by the producer
  std::uint64_t tail_seen_ = 0;                             // producer's copy of tail_
  alignas(kCacheLine) std::atomic<std::uint64_t> tail_{0};  // written by the consumer
  std::uint64_t head_seen_ = 0;                             // consumer's copy of head_
  alignas(kCacheLine) T slots_[N];
};

// Benchmark "anchor-spsc": 8 B ping-pong over two rings, one-way latency in
// us (round trip / 2), median/min/max of o.reps repetitions.
std::vector<Row> run_spsc_anchor(const BenchOptions &o);

}  // namespace rocl_bench
