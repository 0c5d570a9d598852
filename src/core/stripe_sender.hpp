// stripe_sender.hpp - the sending side of striped messages: a long
// message cut into fragments spread over every rail to its peer, each
// rail given as much as it drains.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "message/message.hpp"

namespace rocl::impl {

class Transport;

// One way to a peer context: a transport end-point and the peer's address
// there.
struct Rail {
  Transport *transport = nullptr;
  std::string_view address;  // interned by the route cache
};

// The rails to one peer context, the route's own transport first. The
// primary rail, which every message that is not striped takes and every
// striped one's head, is the first until it fails: then the next that
// works, for good (going back could let a later message overtake one
// still on its way over the other).
struct RailSet {
  std::vector<Rail> rails;
  mutable std::atomic<unsigned> primary{0};  // an index into rails

  RailSet() = default;
  RailSet(RailSet &&other) noexcept
      : rails(std::move(other.rails)), primary(other.primary.load(std::memory_order_relaxed)) {}
  const Rail &primary_rail() const noexcept {
    return rails[primary.load(std::memory_order_acquire)];
  }
};

class StripeSender {
 public:
  // Set-up before the first send: where fragments' blocks come from, and
  // what each fragment carries (ROCL_STRIPE_FRAGMENT, at least
  // FragmentHeader::kMinFragmentBytes).
  // resend_ms: how long to wait for the receiver's acknowledgement
  // (StripeAck) after the last fragment left before sending the message
  // again (ROCL_STRIPE_RESEND_MS).
  void start(BufferPool *pool, std::size_t fragment_bytes, std::uint32_t resend_ms) noexcept {
    pool_ = pool;
    fragment_bytes_ = fragment_bytes;
    resend_ms_ = resend_ms;
  }

  // Sends `length` bytes at `data` (more than one fragment) with `header`
  // to resource dgid of context `peer`, cut into fragments over `rails`:
  // the first on the primary rail, before any other, and each further one
  // on the rail with the fewest of this message's bytes still queued, at
  // most a window of them each, so that a rail gets fragments as fast as
  // it drains them. A rail whose send fails, or that fails a fragment it
  // took, gets no more of the message: its fragment goes over another.
  // A transport finishes a fragment once it is on its way, not once it
  // arrived, and a connection that breaks later loses what it held: so
  // the send returns once the receiver acknowledged the whole message
  // (acknowledged()), ROCL_OK. Without that acknowledgement within
  // resend_ms of the last fragment leaving, the message is sent again,
  // whole (the receiver drops what it has already), at most
  // kSends times in all; then, or when no rail is left, a failure naming
  // the peer (the receiver then has part of the message, which it never
  // delivers). The caller keeps data.
  int send(rocl_gid_t peer, const RailSet &rails, rocl_gid_t dgid, const CoreHeader &header,
           const std::byte *data, std::size_t length) noexcept;
  static constexpr int kSends = 3;

  // The receiver's StripeAck for message_id came (any thread). An ack of
  // no send waiting (a repeat) is ignored.
  void acknowledged(std::uint64_t message_id) noexcept;

  std::size_t fragment_bytes() const noexcept { return fragment_bytes_; }

 private:
  int send_once(rocl_gid_t peer, const RailSet &rails, rocl_gid_t dgid, const CoreHeader &header,
                const std::byte *data, std::size_t length, std::uint64_t id) noexcept;
  bool wait_for_ack(std::uint64_t id) noexcept;

  BufferPool *pool_ = nullptr;
  std::size_t fragment_bytes_ = 0;
  std::uint32_t resend_ms_ = 0;
  std::atomic<std::uint64_t> next_id_{1};
  std::mutex acks_mutex_;
  std::unordered_map<std::uint64_t, bool> waiting_;  // message id -> acknowledged
};

}  // namespace rocl::impl
