// shm_transport.hpp - the shared-memory transport between processes of one
// node (same user). Each end-point owns an inbox: a memfd segment
// (memfd_create + mmap MAP_SHARED) holding a header and kSlots
// single-producer/single-consumer byte rings, one per sending end-point.
//
// Address: "shm:<pid>:<memfd number>:<segment bytes>:<boot id>:<pid ns>".
// A sender opens /proc/<pid>/fd/<n> (only the same uid may: the kernel's
// ptrace-read check on /proc/<pid>/fd) and maps it. The boot id
// (/proc/sys/kernel/random/boot_id) and the pid-namespace inode were added to
// the "shm:<pid>:<fd>:<size>" form so that reaches() never mistakes a process
// of another node or container with the same pid for a local one.
// reaches(addr): boot id and pid namespace equal ours and the pid is alive
// (kill(pid, 0) == 0 or EPERM).
//
// Segment layout (docs: see the structs in shm_layout.hpp):
//   SegHeader (magic, version, slot count, ring bytes, the receiver's 32-byte
//   random challenge, a futex word + "receiver sleeps" flag), then kSlots
//   SlotCtl (owner pid, verdict, seal key, tail, rendezvous cookies: each on
//   its own cache line, std::atomic<uint64_t>/<uint32_t>, lock-free), then
//   the rings. A ring has no head index: frames are sealed (shm_layout.hpp).
//
// Connection: made lazily by the first send() to a peer context (gid) and
// kept: the sender claims a free slot by CAS(owner 0 -> its pid), writes a
// 64-byte Hello carrying JobSecret::prove("rocl-shm", receiver's challenge)
// and waits (at most kHandshakeTimeoutMs) for the receiver's verdict. The
// receiver verifies the proof before accepting any frame from the slot;
// otherwise it logs "shm: slot N (pid P) refused: job secret proof did not
// verify", poisons the slot (ignores it for good) and publishes the verdict,
// so the sender's send() returns ROCL_EPEER. Without a job secret
// (env.secret == nullptr) a random one is made: only this end-point's own
// sends then verify. Slots are never reused within one receiver's life: an
// end-point accepts at most kSlots distinct sending end-points.
// As with tcp, send() must not be called from inside MessageSink::deliver for
// a peer not yet connected to (the handshake waits for a progress thread).
//
// Frames: a seal, a header (wire::ShortHeader for a message in one frame,
// wire::MessageHeader for fragments and rendezvous requests), the payload,
// padded to 64 bytes (a message of up to 24 bytes is one cache line),
// published by the seal, key ^ position, written last. A
// message larger than 8 KiB goes as consecutive kFragment frames of about a
// quarter of it, 8-32 KiB (same message_id, increasing offsets), so that
// the two copies overlap (shm_frame_writer.cpp: fragment_bytes); one slot has one
// producer, so fragments arrive in order and are copied straight into the
// pool block allocated for the message.
// Every header read from shared memory goes through wire::decode_frame_header
// (or decode_short_header) and
// the sequencing checks; a bad frame is logged (naming
// slot, pid and field) and poisons that slot only; the progress thread keeps
// running. The other process is treated as possibly hostile.
//
// Sending: send() copies the frame into the slot's ring (one copy), waiting
// with a bounded spin then sleeps while the ring is full: that is the flow
// control, shared memory stays bounded (kSlots x ring bytes per inbox). Sends
// of several threads to one peer share its slot and are serialised by a
// per-connection mutex, so per-thread order is kept. If the peer process died
// (ESRCH, a zombie, or its pid reused) while we wait, send() returns
// ROCL_EPEER naming the pid. Block contract as tcp: on ROCL_OK the block is
// released to env.pool if marked return_after_send (what the core always
// hands over), otherwise its send_status is set to kSent.
//
// Receiving: one progress thread per end-point polls the claimed slots, spins
// briefly, then sleeps on the futex word (senders bump it and FUTEX_WAKE,
// non-private as it is cross-process, when the receiver announced it sleeps;
// the sleep also times out every 50 ms). Caller progress (transport.hpp): a
// receiving thread of this process that spins calls poll_begin(), which
// raises the segment's `pollers` word; while it is non-zero the progress
// thread sleeps and senders do not wake it, and the caller's progress()
// reads the rings itself, so a message costs no thread wake-up at all.
// A caller whose spin is over may sleep on the futex word itself instead of
// handing back (TransportCaps::caller_wake): it raises `wake_wanted`, polls
// once more and sleeps on the word and its completion (futex_waitv); a
// sender that publishes and finds `wake_wanted` raised lowers it, bumps the
// word and wakes those callers (FUTEX_WAKE_BITSET with kCallerBits: the
// progress thread sleeps with kThreadBits and stays asleep).
// The receive state is guarded by a try-lock, so one thread polls at a time.
// `pollers` is written only when polling starts and ends, not per receive:
// poll_end(false) of the last polling caller leaves it raised for 1-2
// lease periods (the lease), so a thread that receives again soon, as in a
// ping-pong, writes no cache line its senders read (writing it per receive
// cost a cross-core transfer on each message's path). The progress thread
// lowers it when a whole period went by without a poll (a caller between
// poll_begin and poll_end that stops calling progress() that long, being
// descheduled say, gets the thread back; its next progress() raises it
// again), and polls once (a sender that saw it raised did not wake anyone:
// Dekker); poll_end(true)
// lowers it at once and wakes the thread. The period starts at
// kPollLeaseUs and doubles, up to kMaxPollLeaseUs, each time the thread
// finds that callers polled: its checks are timer wake-ups, which on a
// process pinned to one cpu take that cpu from the polling caller
// (rocl-bench latency --transport shm shows it). So a message that arrives
// while no caller polls waits at most two periods (at most 2 x
// kMaxPollLeaseUs after a long stretch of polling) for the thread, unless a
// caller polls before.
// A caller that raises `pollers` while the thread sleeps long (nobody
// polled) wakes it, so that its lease is checked after a period
// (PollLease).
// Each message gets a block of total_length bytes from env.pool (payload
// copied ring -> block once), state kLibrary, and goes to
// env.sink->deliver; ROCL_EBADGID is logged and the block released.
// Flow control on the receiving side (a receiver slower than its senders
// loses nothing): when env.pool has no block for a message (its cap is
// reached: the application holds the buffers), the slot is paused: the
// frame stays in the ring, which then fills and holds its sender back
// (send() waits for room), while the other slots go on; the allocation is
// retried about every kRetryMs. Logged once per slot ("... reading the
// slot paused ..."), counted in Stats::paused_reads. While a slot is paused
// holds_unread_input() is true (the core then takes no origin for gone:
// its messages may still be in the ring). Only a message that can never
// fit the pool (ROCL_POOL_MAX) poisons the slot.
// progress() returns the frames handled.
//
// Cleanup: memfd segments vanish with their last mapping and descriptor;
// nothing is ever left in /dev/shm or the file system, even after a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace rocl::impl {

std::unique_ptr<Transport> make_shm_transport(const TransportEnv &env);

namespace shm {

inline constexpr const char *kProofLabel = "rocl-shm";
inline constexpr int kHandshakeTimeoutMs = 5000;
// Bytes of rendezvous messages one sender lends one receiver (beyond one
// message; and at most 64 messages); above it a large message is copied
// through the ring like a small one, so send() never waits for a receive.
inline constexpr std::uint64_t kMaxPendingBytes = std::uint64_t{256} << 20;
// The poll lease (shm_poll_lease.hpp): the `pollers` word is lowered once a
// whole period went by without a caller's poll, so it stays raised 1-2
// periods after the last polling caller got its message. The period starts
// at kPollLeaseUs and doubles while callers keep polling, up to
// kMaxPollLeaseUs: with a short period throughout, the thread's timer
// wake-ups and context switches would slow a ping-pong (rocl-bench latency
// --transport shm of 8 B against a build with kMaxPollLeaseUs =
// kPollLeaseUs shows it).
inline constexpr std::int64_t kPollLeaseUs = 500;
inline constexpr std::int64_t kMaxPollLeaseUs = 4000;
// A slot paused for want of a pool block retries its allocation this often.
inline constexpr int kRetryMs = 1;

struct Config {
  std::uint32_t slots = 64;                           // sending end-points per inbox (<= 1024)
  std::uint64_t ring_bytes = std::uint64_t{1} << 20;  // per slot, power of two >= 4096
  // The shortest lap. A sender whose next message is one frame of at most
  // 4 KiB (detail::kMaxWrapFrame), whose head is this far into the ring
  // and at least four such frames, with its receiver at most half the lap
  // behind, ends the lap there (a wrap frame) and starts over at the ring's
  // beginning: a stream of small messages then keeps reusing the same
  // lines, which stay in the two cpus' caches, instead of sweeping the
  // whole ring. Only if at most a quarter of the ring; 0: never.
  std::uint64_t hot_bytes = 4096;
  // Pool buffers of at least this many bytes go by rendezvous (or from
  // TransportEnv::rendezvous_threshold, if lower; ROCL_SHM_RNDV_THRESHOLD).
  // 0: from TransportEnv::rendezvous_threshold alone.
  std::size_t rendezvous_threshold = 0;
  // Pool buffers of at least this many bytes (below the thresholds above)
  // go by rendezvous too while they stream to a process, i.e. when nothing
  // arrived over shm since the sender's last such message to it
  // (ROCL_SHM_STREAM_RNDV_THRESHOLD). 0: never.
  std::size_t stream_rendezvous_threshold = 0;
  // Lent messages (the core's ROCL_LEND_THRESHOLD chose them) below this
  // many bytes are copied through the ring instead of read from the
  // sender's memory (ROCL_SHM_LEND_THRESHOLD). 0: every lent message is read.
  std::size_t lend_threshold = 0;
  // The poll lease's first period (kPollLeaseUs); it doubles up to
  // kMaxPollLeaseUs or this, whichever is longer. A test that must keep
  // the rings to its own polls while the machine may deschedule it for
  // milliseconds lengthens it.
  std::int64_t poll_lease_us = kPollLeaseUs;
};

// The shm transport's option rows (ROCL_SHM_*), and the Config they give.
std::span<const OptionRow> option_rows() noexcept;
Config config_from(const OptionValues &options);

struct Stats {
  std::uint64_t refused = 0;              // slots whose job secret proof failed
  std::uint64_t poisoned = 0;             // slots dropped for a protocol error
  std::uint64_t unknown_destination = 0;  // arrivals the sink refused with ROCL_EBADGID
  std::uint64_t delivered = 0;            // messages handed to the sink
  std::uint64_t lend_refused = 0;         // large sends copied eagerly: enough lent already
  std::uint64_t paused_reads = 0;         // times a slot was paused: no pool block (pool full)
  std::uint64_t early_wraps = 0;          // laps our senders ended early (Config::hot_bytes)
  // Copy offers (shm_copy_offer.cpp): parts of lent messages this process
  // wrote into its receivers' memory, and parts its senders wrote into ours.
  std::uint64_t parts_copied_for_receivers = 0;
  std::uint64_t parts_copied_by_senders = 0;
  // ... of which first parts, copied by senders that held them in their
  // cache (wire::kFlagSenderHoldsFirst: the message was sent back).
  std::uint64_t first_parts_copied_by_senders = 0;
  // Parts this process wrote into its receivers' pools through its mapping
  // of them (memcpy, no system call), of parts_copied_for_receivers.
  std::uint64_t parts_copied_into_mapped_pools = 0;
};

using LogFn = TransportLog;

}  // namespace shm

class ShmTransport : public Transport {
 public:
  using Transport::Transport;
  virtual shm::Stats stats() const noexcept = 0;
};

// Like make_shm_transport with a configuration and a log hook (one sentence
// per call, any thread; default stderr with "rocl: "). nullptr with fail()
// when the segment cannot be made.
std::unique_ptr<ShmTransport> make_shm_transport_with(const TransportEnv &env,
                                                      const shm::Config &config, shm::LogFn log);

}  // namespace rocl::impl
