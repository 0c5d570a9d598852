// shm_slot_reader.hpp - the frames of one slot of our inbox, as its reader
// takes them (design: shm_transport.hpp): the sender's Hello, short frames,
// fragments reassembled into a pool block or handed on whole from the ring,
// wrap frames, rendezvous requests made stubs; each checked, a bad one
// poisoning its slot only, and each message handed to the sink. A slot
// whose next message finds no pool block is paused (flow control).
//
// Contract: only the holder of the Inbox's try-lock calls it (set_waiter()
// included); paused_slots() from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "message/message.hpp"
#include "security/job_secret.hpp"
#include "transport/shm/shm_inbox_segment.hpp"
#include "transport/shm/shm_internal.hpp"
#include "transport/shm/shm_rendezvous.hpp"
#include "wire/validate.hpp"

namespace rocl::impl::shm::detail {

class ShmTransportImpl;

// Frames a poll handles per slot before it looks at the others (fairness),
// and how many frames ahead a drain behind a stream asks for the ring's
// lines (a few: more or none stream slower, as rocl-bench bandwidth
// --transport shm shows).
inline constexpr int kDrainFrames = 16;
inline constexpr int kDrainPrefetchFrames = 4;

class SlotReader {
 public:
  SlotReader(ShmTransportImpl &transport, const TransportEnv &env, const wire::Limits &limits,
             const JobSecret *secret, const InboxSegment &segment, PeerPools &pools,
             ShmCounters &counters) noexcept
      : transport_(transport),
        sink_(env.sink),
        pool_(env.pool),
        limits_(limits),
        secret_(secret),
        segment_(segment),
        pools_(pools),
        counters_(counters) {}

  // What poll_slot() returns when a frame ended a message (delivered or
  // dropped); otherwise 1: handled another frame, 0: nothing there (or
  // paused: the frame waits in the ring), -1: slot poisoned.
  static constexpr int kMessageDone = 2;
  int poll_slot(std::uint32_t i, RxSlot &s, SlotCtl *ctl);
  // The message at the front of slot s (its control ctl) if it is one short frame for
  // `destination` matching `pattern` (Transport::take_arrived), taken and
  // returned; otherwise nullptr, nothing changed but a wrap frame passed.
  // ahead: the receive did not wait for it (the sender is ahead of it).
  Message *take_front(RxSlot &s, SlotCtl *ctl, rocl_gid_t destination, const CoreHeader &pattern,
                      bool ahead);

  // The receive whose caller drives the inbox now, handed to the sink with
  // each arrival; nullptr while the transport's thread or a caller waiting
  // for no receive drives it.
  void set_waiter(const Waiter *waiter) noexcept { waiter_ = waiter; }
  const Waiter *waiter() const noexcept { return waiter_; }
  // Slots paused for want of a pool block (any thread; may be stale).
  std::uint32_t paused_slots() const noexcept {
    return paused_slots_.load(std::memory_order_relaxed);
  }
  // s's frame waiting for a block is taken: s reads on.
  void resume(RxSlot &s);
  // Releases the block of a message s was reassembling.
  void drop_partial(RxSlot &s);

 private:
  int take_hello(std::uint32_t i, RxSlot &s, SlotCtl *ctl);
  int take_short(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at);
  bool take_wrap(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at);
  int take_rendezvous(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const wire::MessageHeader &h,
                      std::uint64_t frame);
  // Out of line: poll_slot, on every message's path, stays small.
  [[gnu::noinline]] bool deliver_whole_in_ring(RxSlot &s, SlotCtl *ctl,
                                               const wire::MessageHeader &first,
                                               std::size_t header_bytes);
  bool same_message_fragment(const RxSlot &s, std::uint64_t pos, const wire::MessageHeader &first,
                             std::uint64_t offset, std::uint64_t len) const;
  BlockHeader *receive_block(std::uint32_t i, RxSlot &s, SlotCtl *ctl, std::uint64_t length);
  void pause(RxSlot &s, std::uint64_t length);
  void poison(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::string &why, bool refusal);
  int deliver_block(std::uint32_t i, RxSlot &s, BlockHeader *b, const CoreHeader &header,
                    rocl_gid_t destination, std::uint64_t length);

  ShmTransportImpl &transport_;  // hand_over, arrived, log; stubs name it
  MessageSink *sink_;
  BufferPool *pool_;
  const wire::Limits limits_;
  const JobSecret *secret_;
  const InboxSegment &segment_;  // its challenge
  PeerPools &pools_;
  ShmCounters &counters_;
  const Waiter *waiter_ = nullptr;
  // Written by the holder of the try-lock, read by anyone.
  std::atomic<std::uint32_t> paused_slots_{0};
};

}  // namespace rocl::impl::shm::detail
