// shm_slot_reader.cpp - taking the frames of a slot: checking its Hello,
// decoding and validating each frame, reassembling fragments, making stubs of
// rendezvous requests and delivering messages. Anything wrong in a slot
// poisons that slot only (see shm_slot_reader.hpp; design:
// shm_transport.hpp).
#include "transport/shm/shm_slot_reader.hpp"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "status/status.hpp"
#include "transport/shm/shm_handshake.hpp"
#include "transport/shm/shm_transport_impl.hpp"

namespace rocl::impl::shm::detail {

// Only a short frame (one message whole in one frame) of a slot in use,
// between messages, not paused: anything else is progress()'s, which also
// says what is wrong with a bad frame.
Message *SlotReader::take_front(RxSlot &s, SlotCtl *ctl, rocl_gid_t destination,
                                const CoreHeader &pattern, bool ahead) {
  if (s.state != RxSlot::kOk || s.paused || s.block != nullptr || pool_ == nullptr) {
    return nullptr;
  }
  const std::byte *at = s.at(s.tail);
  if (s.sealed_at(at) &&
      static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]) == wire::Kind::kWrap) {
    // The lap ends here: past it, as poll_slot goes (which says what is
    // wrong with a bad one).
    if (wire::check_wrap_header(at + kSealBytes, s.name) != ROCL_OK) return nullptr;
    s.skip_to_lap_end(ctl);
    at = s.ring;
  }
  if (!s.sealed_at(at) ||
      static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]) != wire::Kind::kShort) {
    return nullptr;
  }
  s.prefetch_frame(at);
  wire::ShortHeader h;
  if (wire::decode_short_header(at + kSealBytes, limits_, s.name, &h) != ROCL_OK) return nullptr;
  const CoreHeader header{h.source, h.tag, h.domain};
  if (h.destination != destination || !(header == pattern)) return nullptr;
  BlockHeader *b = pool_->allocate(h.length);
  if (b == nullptr) return nullptr;
  s.copy_short(at, h, b);
  s.consume(ctl, frame_bytes(sizeof h, h.length));
  // Found at the first look: the sender is ahead, so ask for the lines of
  // the next frames now (the next receive's look then finds them here).
  // Not for a receive that waited here: the sender writes those lines
  // next, and each one asked for now it would have to take back
  // (rocl-bench latency --transport shm of 2-4 KiB shows it).
  if (ahead) s.prefetch_ahead(1, kDrainPrefetchFrames);
  count(counters_.arrivals);
  transport_.count_delivered();
  return ShmTransportImpl::arrived(b, header, h.length);
}

void SlotReader::poison(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::string &why,
                        bool refusal) {
  s.state = RxSlot::kPoisoned;
  if (s.paused) resume(s);
  drop_partial(s);
  // Counted and said before the verdict is published: a sender that sees
  // it (and fails its send) finds both already there.
  (refusal ? counters_.refused : counters_.poisoned).fetch_add(1);
  transport_.log("shm: slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ") " +
                 (refusal ? "refused: " : "dropped: ") + why);
  ctl->verdict.store(kRefused, std::memory_order_release);
}

void SlotReader::drop_partial(RxSlot &s) {
  if (s.block != nullptr && pool_ != nullptr) {
    pool_->release(s.block, BlockState::kLibrary);
  }
  s.block = nullptr;
  s.done = 0;
}

// The sender's lap ends at the tail (a wrap frame, Config::hot_bytes): the
// rest of the ring is skipped, the next frame is at its beginning. Only
// between messages. False: the slot is poisoned, saying why.
bool SlotReader::take_wrap(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at) {
  if (wire::check_wrap_header(at + kSealBytes, s.name) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return false;
  }
  if (s.block != nullptr) {
    poison(i, s, ctl,
           "a wrap frame inside message " + std::to_string(s.first.message_id) + " at offset " +
               std::to_string(s.done),
           false);
    return false;
  }
  s.skip_to_lap_end(ctl);
  return true;
}

// kMessageDone: handled a frame that ended a message (delivered or
// dropped), 1: handled another frame, 0: nothing there, -1: slot poisoned.
int SlotReader::poll_slot(std::uint32_t i, RxSlot &s, SlotCtl *ctl) {
  // The seal (shm_layout.hpp): the frame at the tail is there once its
  // first word is the slot's key ^ the tail.
  const std::byte *at = s.at(s.tail);
  if (!s.sealed_at(at)) return 0;
  if (s.state == RxSlot::kNew) return take_hello(i, s, ctl);
  const auto kind = static_cast<wire::Kind>(at[kSealBytes + wire::kKindOffset]);
  if (kind == wire::Kind::kShort && s.block == nullptr) return take_short(i, s, ctl, at);
  if (kind == wire::Kind::kWrap) return take_wrap(i, s, ctl, at) ? 1 : -1;
  // The header's first 32 bytes, and the rest only if it is not a short
  // one: reading past a short frame would take the line the sender is
  // writing next from it.
  wire::MessageHeader h;
  std::byte raw[sizeof h];
  std::size_t got = sizeof(wire::ShortHeader);
  s.copy_out(s.tail + kSealBytes, raw, got);
  if (static_cast<wire::Kind>(raw[wire::kKindOffset]) != wire::Kind::kShort) {
    s.copy_out(s.tail + kSealBytes + got, raw + got, sizeof raw - got);
    got = sizeof raw;
  }
  std::size_t header_bytes = 0;
  if (wire::decode_frame_header(std::span<const std::byte>(raw, got), limits_, s.name, &h,
                                &header_bytes) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return -1;
  }
  // decode_frame_header bounded fragment_length by
  // limits_.max_fragment_bytes, so the frame fits the ring.
  const std::uint64_t frame = frame_bytes(header_bytes, h.fragment_length);
  if (h.kind == wire::Kind::kRendezvousRequest) return take_rendezvous(i, s, ctl, h, frame);
  if (h.kind != wire::Kind::kEager && h.kind != wire::Kind::kFragment) {
    poison(i, s, ctl, std::string("frame kind ") + wire::kind_name(h.kind) + " is not used by shm",
           false);
    return -1;
  }
  if (s.block == nullptr) {
    if (h.fragment_offset != 0) {
      poison(i, s, ctl,
             "fragment_offset " + std::to_string(h.fragment_offset) + " does not start a message",
             false);
      return -1;
    }
    if (h.kind == wire::Kind::kFragment && h.fragment_length < h.total_length &&
        deliver_whole_in_ring(s, ctl, h, header_bytes)) {
      return kMessageDone;
    }
    BlockHeader *b = receive_block(i, s, ctl, h.total_length);
    if (b == nullptr) return s.paused ? 0 : -1;  // paused: the frame waits in the ring
    b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
    s.block = b;
    s.first = h;
    s.done = 0;
  } else {
    const auto &f = s.first;
    if (h.kind != wire::Kind::kFragment || h.message_id != f.message_id ||
        h.total_length != f.total_length || h.fragment_offset != s.done || h.source != f.source ||
        h.destination != f.destination || h.tag != f.tag || h.domain != f.domain) {
      poison(i, s, ctl,
             "fragment of message " + std::to_string(h.message_id) + " at offset " +
                 std::to_string(h.fragment_offset) + " does not continue message " +
                 std::to_string(f.message_id) + " at offset " + std::to_string(s.done),
             false);
      return -1;
    }
  }
  if (h.fragment_length != 0) {
    s.copy_out(s.tail + kSealBytes + header_bytes, payload_of(s.block) + h.fragment_offset,
               h.fragment_length);
  }
  s.done += h.fragment_length;
  s.consume(ctl, frame);
  if (s.done < s.first.total_length) return 1;  // a fragment: more to come
  BlockHeader *b = s.block;
  s.block = nullptr;
  s.done = 0;
  return deliver_block(i, s, b, CoreHeader{s.first.source, s.first.tag, s.first.domain},
                       s.first.destination, s.first.total_length);
}

// The Hello, the first frame of a slot: the sender proves the job secret.
int SlotReader::take_hello(std::uint32_t i, RxSlot &s, SlotCtl *ctl) {
  s.pid = ctl->owner.load(std::memory_order_relaxed);
  Hello h;
  s.copy_out(s.tail + kSealBytes, reinterpret_cast<std::byte *>(&h), sizeof h);
  if (!hello_ok(h, i, *secret_, segment_.challenge())) {
    poison(i, s, ctl, "job secret proof did not verify", true);
    return -1;
  }
  s.state = RxSlot::kOk;
  try {
    s.name = "shm slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ")";
  } catch (...) {  // only the sentences of later errors get poorer
  }
  s.pool_mapped = pool_ != nullptr && pools_.map(i, s.pid, h.pool_fd, h.pool_bytes);
  std::uint64_t probe = 0;
  s.copy_out(s.tail + kSealBytes + sizeof h, reinterpret_cast<std::byte *>(&probe), sizeof probe);
  s.reads_memory = probe_memory(s.pid, probe, s.seal_key);
  s.consume(ctl, frame_bytes(sizeof h, kHelloProbeBytes));
  const Verdict v = s.pool_mapped ? (s.reads_memory ? kAcceptedPoolMemory : kAcceptedPool)
                                  : (s.reads_memory ? kAcceptedMemory : kAccepted);
  ctl->verdict.store(v, std::memory_order_release);
  return 1;
}

// A message in one frame with a short header, the path of small messages:
// a frame starts at a multiple of kFrameAlign, so its seal and header never
// wrap, and one that fills a single line holds at most 24 payload bytes.
int SlotReader::take_short(std::uint32_t i, RxSlot &s, SlotCtl *ctl, const std::byte *at) {
  s.prefetch_frame(at);
  wire::ShortHeader h;
  if (wire::decode_short_header(at + kSealBytes, limits_, s.name, &h) != ROCL_OK) {
    poison(i, s, ctl, last_error(), false);
    return -1;
  }
  const std::uint64_t frame = frame_bytes(sizeof h, h.length);
  // A receive waiting with memory of its own takes the payload straight
  // from the ring (no block), when it does not wrap around the ring's end.
  if (s.fits_before_end(frame)) {
    // Counted before the hand-over (streams()); again by deliver_block if refused.
    count(counters_.arrivals);
    if (sink_->deliver_bytes(h.destination, CoreHeader{h.source, h.tag, h.domain},
                             at + kSealBytes + sizeof h, h.length, waiter_)) {
      s.consume(ctl, frame);
      transport_.count_delivered();
      return kMessageDone;
    }
  }
  BlockHeader *b = receive_block(i, s, ctl, h.length);
  if (b == nullptr) return s.paused ? 0 : -1;  // paused: the frame waits in the ring
  s.copy_short(at, h, b);
  s.consume(ctl, frame);
  return deliver_block(i, s, b, CoreHeader{h.source, h.tag, h.domain}, h.destination, h.length);
}

// A message in fragments that is whole in the ring already, as a receiver
// that lags behind a stream finds most: if a receive with memory of its
// own waits for it, the fragments are copied straight there
// (MessageSink::deliver_pieces): one copy instead of two (ring -> block ->
// receive), and no block. True if delivered (the frames consumed); false:
// take the usual path, nothing changed. Reads first the seal of the last
// fragment, where our sender (write_message: fragments of one size, in a
// row, under the connection's lock) puts it, and sealed last: its acquire
// makes the frames before it visible. Then each frame is checked as the
// usual path would (a frame that is not what it should be: false, and the
// usual path meets it and says why). At most kMaxWholeFragments fragments
// and half a ring.
//
// A miss (the message still arriving, or no receive with memory for it)
// skips the next kSkipAfterMiss messages of the slot: in a ping-pong the
// last fragment's first line is about to be written by the sender, and
// reading it then costs the sender one more transfer of it (rocl-bench
// latency --transport shm of 4 KiB shows it). A slot paused for want of a
// block always looks: its frames wait in the ring.
bool SlotReader::deliver_whole_in_ring(RxSlot &s, SlotCtl *ctl, const wire::MessageHeader &first,
                                       std::size_t header_bytes) {
  constexpr int kMaxWholeFragments = 32;
  constexpr std::uint32_t kSkipAfterMiss = 16;
  if (s.whole_skip != 0 && !s.paused) {
    --s.whole_skip;
    return false;
  }
  const std::uint64_t chunk = first.fragment_length, total = first.total_length;
  if (chunk == 0 || total > s.ring_bytes / 2 ||
      !sink_->may_take_pieces(first.destination, waiter_)) {
    return false;
  }
  const std::uint64_t n = (total + chunk - 1) / chunk;
  if (n > kMaxWholeFragments) return false;
  const std::uint64_t step = frame_bytes(header_bytes, chunk);
  const std::uint64_t last = s.tail + (n - 1) * step;
  if (seal_at(s.at(last)).load(std::memory_order_acquire) != (s.seal_key ^ last)) {
    s.whole_skip = kSkipAfterMiss;
    return false;  // still arriving: the usual path overlaps the copies
  }
  MessageSink::ByteRange pieces[2 * kMaxWholeFragments];
  int np = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t pos = s.tail + k * step;
    const std::uint64_t len = k + 1 < n ? chunk : total - k * chunk;
    if (k != 0 && !same_message_fragment(s, pos, first, k * chunk, len)) return false;
    const std::uint64_t from = (pos + kSealBytes + header_bytes) & (s.ring_bytes - 1);
    const std::uint64_t before_end = std::min(len, s.ring_bytes - from);
    pieces[np++] = {s.ring + from, before_end};
    if (len > before_end) pieces[np++] = {s.ring, len - before_end};
  }
  count(counters_.arrivals);
  if (!sink_->deliver_pieces(first.destination, CoreHeader{first.source, first.tag, first.domain},
                             pieces, np, total, waiter_)) {
    s.whole_skip = kSkipAfterMiss;
    return false;
  }
  s.consume(ctl, (n - 1) * step + frame_bytes(header_bytes, total - (n - 1) * chunk));
  transport_.count_delivered();
  return true;
}

// Whether the frame at ring position pos is sealed and is the fragment of
// `first`'s message at `offset`, `len` bytes long (the checks poll_slot
// makes of a continuing fragment).
bool SlotReader::same_message_fragment(const RxSlot &s, std::uint64_t pos,
                                       const wire::MessageHeader &first, std::uint64_t offset,
                                       std::uint64_t len) const {
  std::byte *at = s.at(pos);
  if (seal_at(at).load(std::memory_order_acquire) != (s.seal_key ^ pos)) return false;
  std::byte raw[sizeof(wire::MessageHeader)];
  s.copy_out(pos + kSealBytes, raw, sizeof raw);
  wire::MessageHeader h;
  std::size_t header_bytes = 0;
  if (wire::decode_frame_header(std::span<const std::byte>(raw, sizeof raw), limits_, s.name, &h,
                                &header_bytes) != ROCL_OK) {
    return false;
  }
  return header_bytes == sizeof raw && h.kind == wire::Kind::kFragment &&
         h.message_id == first.message_id && h.total_length == first.total_length &&
         h.fragment_offset == offset && h.fragment_length == len && h.source == first.source &&
         h.destination == first.destination && h.tag == first.tag && h.domain == first.domain;
}

// A pool block for a message of `length` bytes from slot i, or null: then
// the slot is paused if the pool is full for now (the caller leaves the
// frame in the ring; shm_transport.hpp: flow control), or poisoned if no
// block can ever hold the message (or there is no pool), said why.
BlockHeader *SlotReader::receive_block(std::uint32_t i, RxSlot &s, SlotCtl *ctl,
                                       std::uint64_t length) {
  if (pool_ == nullptr) {
    poison(i, s, ctl, "no buffer pool to receive into", false);
    return nullptr;
  }
  BlockHeader *b = pool_->allocate(length);
  if (b != nullptr) return b;
  if (!pool_->can_ever_hold(length)) {
    poison(i, s, ctl,
           "a message of " + std::to_string(length) +
               " bytes can never fit the buffer pool (ROCL_POOL_MAX): " + last_error(),
           false);
    return nullptr;
  }
  pause(s, length);
  return nullptr;
}

void SlotReader::pause(RxSlot &s, std::uint64_t length) {
  if (!s.paused) {
    s.paused = true;
    paused_slots_.fetch_add(1, std::memory_order_relaxed);
    count(counters_.paused_reads);
  }
  if (!s.pause_logged) {
    s.pause_logged = true;
    transport_.log(
        "shm: no buffer for a " + std::to_string(length) + "-byte message from " + s.name +
        " (pool full): reading the slot paused until blocks are released (logged once per "
        "slot)");
  }
}

void SlotReader::resume(RxSlot &s) {
  s.paused = false;
  paused_slots_.fetch_sub(1, std::memory_order_relaxed);
}

// Hands a received message (block b) to the sink.
int SlotReader::deliver_block(std::uint32_t i, RxSlot &s, BlockHeader *b, const CoreHeader &header,
                              rocl_gid_t destination, std::uint64_t length) {
  count(counters_.arrivals);
  transport_.hand_over(destination, ShmTransportImpl::arrived(b, header, length), waiter_, [&] {
    return "message from slot " + std::to_string(i) + " (pid " + std::to_string(s.pid) + ")";
  });
  return kMessageDone;
}

// Receiver: a rendezvous request becomes a stub in the destination's
// mailbox; the copy happens when a receive matches it (pull).
int SlotReader::take_rendezvous(std::uint32_t i, RxSlot &s, SlotCtl *ctl,
                                const wire::MessageHeader &h, std::uint64_t frame) {
  const bool lent = (h.flags & wire::kFlagCallerMemory) != 0;
  if (s.block != nullptr || !(lent ? s.reads_memory : s.pool_mapped)) {
    poison(i, s, ctl,
           s.block != nullptr ? "rendezvous request in the middle of a fragmented message"
           : lent ? "rendezvous request for lent memory, but the sender's memory is not "
                    "readable here"
                  : "rendezvous request, but the sender's pool is not mapped here",
           false);
    return -1;
  }
  wire::RendezvousBody body;
  s.copy_out(s.tail + kSealBytes + sizeof h, reinterpret_cast<std::byte *>(&body), sizeof body);
  if (body.cookie >= 64) {
    poison(i, s, ctl, "rendezvous cookie " + std::to_string(body.cookie) + " is not 0..63", false);
    return -1;
  }
  const bool holds_first = (h.flags & wire::kFlagSenderHoldsFirst) != 0;
  const Stub st =
      lent
          ? Stub{&transport_, ctl, nullptr, 0, body.address, body.cookie, s.pid, i, holds_first}
          : Stub{&transport_, ctl, pools_.of(i).base, pools_.of(i).bytes, body.address, body.cookie,
                 s.pid,       i,   holds_first};
  BlockHeader *b = receive_block(i, s, ctl, sizeof st);
  if (b == nullptr) return s.paused ? 0 : -1;  // paused: the request waits in the ring
  s.consume(ctl, frame);
  std::memcpy(payload_of(b), &st, sizeof st);
  count(counters_.arrivals);
  transport_.hand_over(
      h.destination,
      ShmTransportImpl::arrived_stub(b, CoreHeader{h.source, h.tag, h.domain}, h.total_length),
      waiter_, [&] { return "message from pid " + std::to_string(s.pid); });
  return kMessageDone;
}

}  // namespace rocl::impl::shm::detail
