// shm_rendezvous_reader.hpp - the receiver's side of rendezvous once a stub
// is delivered (design: shm_rendezvous.hpp): pulling the payload from the
// sender's pool or memory when a receive matches the stub (one copy, shared
// with the sender through a copy offer), or discarding it, and handing the
// cookie back so the sender can finish its buffer.
//
// Contract: pull(), pull_into() and discard() are Transport's (contracts in
// transport.hpp), from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "message/message.hpp"
#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_written_parts.hpp"

namespace rocl::impl::shm::detail {

class ShmTransportImpl;

class RendezvousReader {
 public:
  RendezvousReader(ShmTransportImpl &transport, BufferPool *pool, WrittenParts &written,
                   ShmCounters &counters) noexcept
      : transport_(transport), pool_(pool), written_(written), counters_(counters) {}

  // Ready for an inbox of `slots` slots; once, before any stub is made.
  void open(std::uint32_t slots);

  int pull(Message *stub, Message **out) noexcept;
  int pull_into(Message *stub, void *dst, std::size_t cap) noexcept;
  void discard(Message *stub) noexcept;

 private:
  static Stub stub_of(Message *stub);
  void release_stub(Message *stub);
  static void hand_back(const Stub &st);
  int read_peer(const Stub &st, std::byte *dst, std::size_t len);
  int read_shared(const Stub &st, std::byte *dst, std::size_t len);
  static int read_range(const Stub &st, std::byte *dst, std::size_t from, std::size_t n);
  CopyOffer *open_offer(const Stub &st, std::byte *dst, std::size_t from, std::size_t n);
  static void close_offer(CopyOffer *o);
  std::uint64_t offset_in_pool(const std::byte *p, std::size_t n) const;
  std::size_t share_min_bytes(const std::byte *dst) const;
  bool await_sender(const Stub &st, CopyOffer *o);

  ShmTransportImpl &transport_;  // its log
  BufferPool *pool_;
  WrittenParts &written_;
  ShmCounters &counters_;
  // Offers of a slot (bit k: offers[k]) a sender may still write to after
  // the receiver gave up waiting: never used again.
  std::unique_ptr<std::atomic<std::uint8_t>[]> retired_offers_;
};

}  // namespace rocl::impl::shm::detail
