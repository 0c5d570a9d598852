// reassembly.hpp - rebuilding a message from fragments that arrive in any
// order, on possibly several rails. Reassembly copies the fragments of one
// message into the caller's buffer and refuses any fragment that falls
// outside the message or overlaps bytes already received. ReassemblyTable
// keeps the messages being rebuilt, keyed by (origin context gid,
// message_id), within bounds on their number and bytes.
// Headers passed in must have passed validate_header; the checks here are the
// ones that need the state of the message. Neither class is thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "wire/message_header.hpp"

namespace rocl::wire {

// One message being rebuilt in a caller-supplied buffer.
class Reassembly {
 public:
  // Disjoint received ranges one message may hold before fragments must join
  // up: bounds the bookkeeping a peer can make us allocate.
  static constexpr std::size_t kDefaultMaxRanges = 1 << 16;

  // destination must hold at least total_length bytes and outlive this
  // object; only destination[0, total_length) is written. A message of 0
  // bytes is complete at once.
  Reassembly(std::uint64_t total_length, std::span<std::byte> destination,
             std::size_t max_ranges = kDefaultMaxRanges);

  // Copies bytes (the payload of fragment) to destination[fragment_offset...].
  // ROCL_OK, or ROCL_EPEER naming peer and field when bytes.size() differs
  // from fragment_length, fragment_length is 0, total_length differs from the
  // message's, the range leaves [0, total_length), overlaps (or repeats)
  // bytes already received, or would be disjoint range max_ranges + 1.
  // A rejected fragment changes nothing.
  int add(const MessageHeader &fragment, std::span<const std::byte> bytes, std::string_view peer);

  bool complete() const noexcept { return received_ == total_; }
  std::uint64_t received() const noexcept { return received_; }
  std::uint64_t total_length() const noexcept { return total_; }
  // Disjoint received ranges (adjacent ones are merged).
  std::size_t ranges() const noexcept { return ranges_.size(); }

 private:
  std::uint64_t total_;
  std::span<std::byte> destination_;
  std::size_t max_ranges_;
  std::uint64_t received_ = 0;
  std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end, disjoint, not adjacent
};

// Bounds of a ReassemblyTable.
struct TableLimits {
  std::size_t max_open_messages = 1024;                    // messages open at once (all peers)
  std::uint64_t max_open_bytes = 1ull << 30;               // sum of their total_length
  std::size_t max_ranges = Reassembly::kDefaultMaxRanges;  // per message
};

// A rebuilt message handed out by ReassemblyTable::take.
struct ReassembledMessage {
  MessageHeader header{};             // the first fragment's header
  std::unique_ptr<std::byte[]> data;  // exactly header.total_length bytes
  std::uint64_t length = 0;           // header.total_length
};

// add() returns this (> 0) when the fragment completed its message.
inline constexpr int kMessageComplete = 1;

class ReassemblyTable {
 public:
  explicit ReassemblyTable(TableLimits limits = {}) : limits_(limits) {}

  // Adds a fragment frame (kind kFragment) that came from the context with
  // gid origin (known to the transport, not taken from the frame). The first
  // fragment of a message opens it, allocating exactly total_length bytes.
  // Returns ROCL_OK, kMessageComplete when the message is now complete (take
  // it), or: ROCL_EINVAL for a frame of another kind; ROCL_ENOMEM when
  // opening the message would pass max_open_messages or max_open_bytes (or
  // memory is short); ROCL_EPEER when source, destination, tag, domain or
  // total_length differ from the message's first fragment, the message is
  // complete already, or Reassembly::add rejects the fragment. A rejected
  // fragment changes nothing (a message it would have opened stays closed).
  int add(std::uint64_t origin, const MessageHeader &fragment, std::span<const std::byte> bytes,
          std::string_view peer);

  // Moves a complete message out and closes it: ROCL_OK, ROCL_ENOTFOUND if
  // (origin, message_id) is not open, ROCL_EBUSY if it is still incomplete.
  int take(std::uint64_t origin, std::uint64_t message_id, ReassembledMessage *out);

  // Discards every message of context origin (a dead peer); returns how many.
  std::size_t drop_peer(std::uint64_t origin);

  // The open message (origin, message_id), or nullptr.
  const Reassembly *find(std::uint64_t origin, std::uint64_t message_id) const;

  std::size_t open_messages() const noexcept { return open_.size(); }
  std::uint64_t open_bytes() const noexcept { return open_bytes_; }
  const TableLimits &limits() const noexcept { return limits_; }

 private:
  struct Open {
    MessageHeader header;
    std::unique_ptr<std::byte[]> data;
    Reassembly reassembly;
  };
  using Key = std::pair<std::uint64_t, std::uint64_t>;  // (origin, message_id)

  TableLimits limits_;
  std::uint64_t open_bytes_ = 0;
  std::map<Key, Open> open_;
};

}  // namespace rocl::wire
