// shm_layout.hpp - the layout of an shm inbox segment, shared by the two
// processes of a connection (the overview is in shm_transport.hpp): the magic
// numbers and limits, SegHeader, the per-slot SlotCtl, the Verdict a receiver
// gives a slot, the Hello a sender writes first, and the helpers that compute
// offsets in the segment. It is the protocol between the two processes: a
// change here wants a new kSegVersion.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rocl::impl::shm::detail {

inline constexpr std::uint64_t kSegMagic = 0x6d68536c636f5221ull;    // "!RoclShm"
inline constexpr std::uint64_t kHelloMagic = 0x6f6c6c65486d6853ull;  // "ShmHello"
// 2: pollers word; 3: frames sealed by their first word, 128-byte aligned;
// 4: positional seals (no zero ahead of each frame), 64-byte frames, short
// headers; 5: the Hello's memory probe
// 6: copy offers (SlotCtl::offers); 7: the receiver's pool in the header
// (SegHeader::pool_fd), offers name a place in it (CopyOffer::pool_offset)
inline constexpr std::uint32_t kSegVersion = 9;  // 9: wake_wanted
// Frames start at multiples of 64 bytes, so that a small message (a short
// header and up to 24 payload bytes after the seal) is one cache line: the
// sender takes it once and the receiver reads it once.
inline constexpr std::uint64_t kFrameAlign = 64;
inline constexpr std::uint64_t kSealBytes = 8;
// The largest header after a seal: wire::MessageHeader, or a Hello.
inline constexpr std::uint64_t kMaxHeaderBytes = 64;
inline constexpr std::uint32_t kMaxSlots = 1024;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint64_t>::required_alignment == 8);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint32_t>) == 4);

struct SegHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint64_t ring_bytes;
  std::uint64_t header_bytes;  // offset of the first ring
  std::uint8_t challenge[32];
  // The receiver's buffer pool (its memfd, /proc/<pid>/fd/<n>; ~0u: none):
  // a sender maps it to write the parts of copy offers that land there
  // with a plain copy (shm_copy_offer.cpp).
  std::uint32_t pool_fd;
  std::uint32_t pool_pid;
  std::uint64_t pool_bytes;
  alignas(64) std::atomic<std::uint32_t> wake_seq;  // futex word
  std::atomic<std::uint32_t> sleeping;              // receiver's thread announced it sleeps
  std::atomic<std::uint32_t> pollers;               // receiver's callers polling the rings
  std::atomic<std::uint32_t> wake_wanted;           // receiver's callers asleep on wake_seq
  alignas(64) std::atomic<std::uint32_t> claims;    // slots claimed so far (senders add 1)
};

// Enum of what the receiver decided about a slot (informational for the
// sender; the receiver trusts only its own local state).
// kAcceptedPool: accepted, and the receiver mapped the sender's buffer pool
// (read-only), so large messages may go by rendezvous. kAcceptedMemory:
// accepted, and the receiver read the sender's memory probe (the Hello's
// payload) with process_vm_readv, so lent sends may go by rendezvous;
// kAcceptedPoolMemory: both.
enum Verdict : std::uint32_t {
  kPending = 0,
  kAccepted = 1,
  kRefused = 2,
  kAcceptedPool = 3,
  kAcceptedMemory = 4,
  kAcceptedPoolMemory = 5,
};

// The ring of a slot has no head index: a frame is published by its seal,
// its first 8 bytes, which the sender stores last (release), after the
// header and payload. The seal of the frame at ring position `pos` (counted
// from the slot's first frame, never wrapped) is seal_key ^ pos: what lies
// at the receiver's tail from an earlier lap (an older seal, payload bytes)
// matches the expected seal only by a 1 in 2^64 chance, so the sender need
// not clear the word where its next frame will start (a third cache line
// to take from the receiver per message, before version 4). The receiver
// polls the word at its tail, reading one cache line: the frame's own.
// seal_key is random per slot, odd (a seal is never 0, the ring's initial
// content), made by the receiver and read by the sender once it owns the
// slot; the receiver trusts only its own copy.
// A receiver's offer to the sender of a lent message to copy part of it
// into the receive's memory itself, while the receiver reads the rest: the
// two cpus copy at once (shm_copy_offer.cpp). The receiver fills an offer
// that is kOfferFree and publishes it with kOffered; one of the two then
// takes the part with a compare-and-swap (kSenderCopying or kReceiverTook).
// The sender ends with kSenderDone or kSenderFailed (the receiver then
// copies the part itself); the receiver frees the offer before it hands
// the cookie back. The receiver reads back nothing but `state`.
enum OfferState : std::uint32_t {
  kOfferFree = 0,
  kOfferFilling = 1,
  kOffered = 2,
  kSenderCopying = 3,
  kSenderDone = 4,
  kSenderFailed = 5,
  kReceiverTook = 6,
};
// The fields are atomics (read and written relaxed, ordered by `state`):
// a sender may read them while the receiver fills the offer for the next
// message, and checks them again once its compare-and-swap has won.
struct CopyOffer {
  alignas(64) std::atomic<std::uint32_t> state;
  std::atomic<std::uint32_t> cookie;  // the lent message's rendezvous cookie
  std::atomic<std::uint64_t> dest;    // where the part goes, in the receiver's memory
  std::atomic<std::uint64_t> offset;  // of the part in the message
  std::atomic<std::uint64_t> length;  // of the part
  // Where dest is in the receiver's pool (SegHeader::pool_fd), ~0: not in
  // it. A sender that mapped the pool copies there without a system call.
  std::atomic<std::uint64_t> pool_offset;
};
static_assert(sizeof(CopyOffer) == 64);
// Messages of one slot whose copy can be shared at once (one per receiving
// thread that pulls from the slot at the same time; more read alone).
inline constexpr int kCopyOffers = 4;

struct SlotCtl {
  alignas(64) std::atomic<std::uint32_t> owner;  // sender pid, 0 = free
  std::atomic<std::uint32_t> verdict;
  alignas(64) std::atomic<std::uint64_t> seal_key;
  alignas(64) std::atomic<std::uint64_t> tail;  // written by the receiver
  // Rendezvous cookies the receiver is done with (bit i: cookie i); the
  // receiver sets bits, the sender takes them.
  alignas(64) std::atomic<std::uint64_t> pulled;
  CopyOffer offers[kCopyOffers];
};
static_assert(sizeof(SlotCtl) == 512);

struct Hello {
  std::uint64_t magic;
  std::uint32_t pid;
  std::uint32_t slot;
  std::uint8_t proof[32];
  std::uint32_t pool_fd;  // the sender's pool memfd (/proc/<pid>/fd/<n>), ~0u: none
  std::uint32_t pad;
  std::uint64_t pool_bytes;  // its size
};
static_assert(sizeof(Hello) == 64);
// The Hello's payload: the address, in the sender's process, of its copy of
// the slot's seal key, which the receiver reads with process_vm_readv to
// learn whether it can read the sender's memory (cross-memory attach is
// refused across users, by Yama's ptrace_scope, by seccomp filters).
constexpr std::uint64_t kHelloProbeBytes = 8;

constexpr std::uint64_t header_bytes_for(std::uint32_t slots) {
  const std::uint64_t raw = 4096 + std::uint64_t{slots} * sizeof(SlotCtl);
  return (raw + 4095) & ~std::uint64_t{4095};
}

inline SlotCtl *slot_ctl(std::byte *seg, std::uint32_t i) {
  return reinterpret_cast<SlotCtl *>(seg + 4096) + i;
}

// Bytes a frame takes: the seal, a header of `header` bytes, `payload`.
constexpr std::uint64_t frame_bytes(std::uint64_t header, std::uint64_t payload) {
  return (kSealBytes + header + payload + kFrameAlign - 1) & ~(kFrameAlign - 1);
}

// The seal word of the frame at `at` (8-aligned, in shared memory).
inline std::atomic_ref<std::uint64_t> seal_at(std::byte *at) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t *>(at));
}

}  // namespace rocl::impl::shm::detail
