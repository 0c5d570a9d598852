// stripe_reassembly.hpp - the receiving side of striped messages: the
// fragments of each message gathered into one block, and the messages of
// a (source, destination) pair kept in the order they were sent.
//
// Order: the sender puts a message's first fragment (offset 0, the head)
// on its primary rail, the one every message of the pair that is not
// striped takes, and sends it before the rest. The primary rail keeps its
// order, so a message that arrives on it after a head was sent after that
// striped message: while any striped message of its pair is incomplete, it
// waits behind it here (hold). Complete messages leave in the order their
// heads arrived, and held ones between them where they came.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "core/stripe_wire.hpp"
#include "message/message.hpp"

namespace rocl::impl {

class StripeReassembly {
 public:
  // deliver(destination, msg): hands a message on to its mailbox (the
  // core's deliver, without the hold); ROCL_OK, or the caller keeps msg.
  // Called under this object's lock, so that a pair's messages reach their
  // mailbox in order. log: one line, no newline.
  using Deliver = std::function<int(rocl_gid_t, Message *)>;
  using Log = std::function<void(const std::string &)>;
  // ack(source, message_id): tell the sender the message is whole (queued
  // by the core and sent after the progress round: StripeAck). Called
  // under this object's lock; must not block.
  using Ack = std::function<void(rocl_gid_t, std::uint64_t)>;
  StripeReassembly(BufferPool &pool, Deliver deliver, Log log, Ack ack = nullptr);
  StripeReassembly(const StripeReassembly &) = delete;
  StripeReassembly &operator=(const StripeReassembly &) = delete;
  // Drops what is incomplete or held (its blocks back to the pool).
  ~StripeReassembly();

  // A fragment arrived (a message to the context itself). Always takes it:
  // its bytes are copied into their message's block and its own block goes
  // back to the pool. A bad fragment (stripe_wire.hpp's check), a repeated
  // one, or one of a message the pool had no block for is dropped with a
  // line on the log naming why and whose it was; a fragment of a message
  // completed lately (a sender's resend) is dropped quietly and acked
  // again. Thread safe.
  void take_fragment(Message *fragment) noexcept;

  // Whether any pair has a striped message in progress (a hint, one load:
  // hold() decides).
  bool holding() const noexcept { return open_pairs_.load(std::memory_order_acquire) != 0; }
  // A message that is not a fragment, for `destination`: if a striped
  // message of its pair (msg->header.source, destination) is ahead of it,
  // it is queued behind that one and true returned (taken); else false and
  // nothing changed: deliver it. Thread safe.
  bool hold(rocl_gid_t destination, Message *msg) noexcept;
  // Whether hold() would take a message of this pair now.
  bool holds(rocl_gid_t source, rocl_gid_t destination) noexcept;

  struct Counts {
    std::uint64_t messages = 0;   // reassembled and handed on
    std::uint64_t fragments = 0;  // taken into a message
    std::uint64_t dropped = 0;    // fragments dropped (bad, no memory)
    std::uint64_t held = 0;       // messages that waited behind a striped one
    std::uint64_t repeats = 0;    // fragments that came again (resends), dropped quietly
  };
  Counts counts() const;
  // Messages being reassembled now (complete ones waiting for their turn
  // among them).
  std::size_t in_progress() const;

 private:
  struct Assembly {
    rocl_gid_t destination;
    CoreHeader header;
    BlockHeader *block;  // nullptr: the pool had none; its fragments are dropped
    std::uint64_t total;
    std::uint32_t fragment_bytes;  // its fragments' index is offset / fragment_bytes
    std::uint64_t received = 0;    // bytes, of fragments taken or dropped for want of a block
    std::vector<bool> have;        // per fragment
    bool head_seen = false;
  };
  using AssemblyKey = std::pair<rocl_gid_t, std::uint64_t>;  // (source, message id)
  using PairKey = std::pair<rocl_gid_t, rocl_gid_t>;         // (source, destination)
  // In a pair's queue: a striped message (by key) or a held message.
  struct Slot {
    AssemblyKey assembly{};
    Message *held = nullptr;
  };

  Assembly *assembly_for(const FragmentHeader &h);
  void release_ready(const PairKey &pair);
  void hand_on(rocl_gid_t destination, Message *msg);
  void drop(Message *msg) noexcept;
  void log_line(const std::string &line) noexcept;

  // The messages completed lately, oldest first: a resend's fragments are
  // known for repeats by them (a bounded memory: a resend comes within
  // seconds, after few others).
  static constexpr std::size_t kRecentCompleted = 4096;
  bool completed_lately(const AssemblyKey &key) const { return recent_set_.contains(key); }
  void note_completed(const AssemblyKey &key);

  BufferPool &pool_;
  Deliver deliver_;
  Log log_;
  Ack ack_;
  std::deque<AssemblyKey> recent_;
  std::set<AssemblyKey> recent_set_;
  mutable std::mutex mutex_;
  std::map<AssemblyKey, std::unique_ptr<Assembly>> assemblies_;
  std::map<PairKey, std::deque<Slot>> pairs_;  // only pairs with something queued
  std::atomic<std::size_t> open_pairs_{0};     // pairs_.size()
  Counts counts_;
};

}  // namespace rocl::impl
