// block.hpp - layout of one pool block, shared by the pool and the core.
//
// Every rocl buffer handed to a user is the payload of a block:
//
//   | BlockHeader (64 B, pool) | owner area (128 B, core) | payload ...     |
//   ^ block start, aligned to its power-of-two size        ^ user pointer
//
// The owner area belongs to whoever holds the block (the core keeps a
// message's envelope and wire header there) so that queuing or sending a
// message never allocates.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rocl::impl {

inline constexpr std::size_t kBlockHeaderBytes = 64;
inline constexpr std::size_t kOwnerAreaBytes = 128;
inline constexpr std::size_t kControlBytes = kBlockHeaderBytes + kOwnerAreaBytes;  // 192
inline constexpr unsigned kMinBlockOrder = 8;                                      // 256 B

// Who holds a block. Transitions are CAS'd so misuse (double return, return
// while sending) is detected instead of corrupting the pool.
enum class BlockState : std::uint32_t {
  kFree = 0,     // in the pool (a free list or a thread cache)
  kUser = 1,     // owned by the application
  kLibrary = 2,  // owned by the library: queued, in flight or being delivered
};

// Send status reported by rocl_bfstat (values equal ROCL_BF_*).
enum class SendStatus : std::uint32_t { kIdle = 0, kPending = 1, kSent = 2, kFailed = 3 };

struct alignas(64) BlockHeader {
  std::uint64_t magic;                  // kBlockMagic ^ block address, set by the pool
  std::atomic<BlockState> state;        // see BlockState
  std::atomic<SendStatus> send_status;  // see SendStatus
  std::uint8_t order;                   // block size is 2^order bytes
  bool return_after_send;               // rocl_bftoret was called
  bool lent;                            // its message is a lent send (core/message.hpp)
  // Its owner area holds a Message (core/message.hpp: message_in): set
  // there, cleared when the message ends or the pool or its buddy allocator
  // put their own links in the owner area. A block handed out again keeps
  // it, and its next message renews that envelope.
  bool has_message;
  // The network its messages take (rocl_bfnet): 0 for the usual route,
  // else 1 + the index of a transport among the router's remote ones.
  std::uint8_t network;
  std::uint8_t pad0[3];
  BlockHeader *free_next;  // free-list link, pool use only
  std::uint64_t pad1[4];
};
static_assert(sizeof(BlockHeader) == kBlockHeaderBytes);

inline constexpr std::uint64_t kBlockMagic = 0x726f636c426c6b21ull;  // "roclBlk!"

inline std::byte *payload_of(BlockHeader *b) {
  return reinterpret_cast<std::byte *>(b) + kControlBytes;
}
inline void *owner_area_of(BlockHeader *b) {
  return reinterpret_cast<std::byte *>(b) + kBlockHeaderBytes;
}
inline const void *owner_area_of(const BlockHeader *b) {
  return reinterpret_cast<const std::byte *>(b) + kBlockHeaderBytes;
}
// Whether a send the block's owner waits for is over (kSent or kFailed).
inline bool send_finished(const BlockHeader *b) {
  return b->send_status.load(std::memory_order_acquire) != SendStatus::kPending;
}
inline std::size_t payload_capacity(const BlockHeader *b) {
  return (std::size_t{1} << b->order) - kControlBytes;
}

}  // namespace rocl::impl
