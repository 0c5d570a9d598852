// stripe_sender.hpp - the sending side of striped messages: a long
// message cut into fragments spread over every rail to its peer, each
// rail given as much as it drains.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
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

// The rails to one peer context, the route's own transport first (the
// primary: every message that is not striped takes it).
struct RailSet {
  std::vector<Rail> rails;
};

class StripeSender {
 public:
  // Set-up before the first send: where fragments' blocks come from, and
  // what each fragment carries (ROCL_STRIPE_FRAGMENT, at least
  // FragmentHeader::kMinFragmentBytes).
  void start(BufferPool *pool, std::size_t fragment_bytes) noexcept {
    pool_ = pool;
    fragment_bytes_ = fragment_bytes;
  }

  // Sends `length` bytes at `data` (more than one fragment) with `header`
  // to resource dgid of context `peer`, cut into fragments over `rails`:
  // the first on the primary rail, before any other, and each further one
  // on the rail with the fewest of this message's bytes still queued, at
  // most a window of them each, so that a rail gets fragments as fast as
  // it drains them. A rail whose send fails, or that fails a fragment it
  // took, gets no more of the message: its fragment goes over another.
  // Returns once every fragment has left (its transport finished it):
  // ROCL_OK, or, when no rail is left, a failure naming the peer (the
  // receiver then has part of the message, which it never delivers). The
  // caller keeps data.
  int send(rocl_gid_t peer, const RailSet &rails, rocl_gid_t dgid, const CoreHeader &header,
           const std::byte *data, std::size_t length) noexcept;

  std::size_t fragment_bytes() const noexcept { return fragment_bytes_; }

 private:
  BufferPool *pool_ = nullptr;
  std::size_t fragment_bytes_ = 0;
  std::atomic<std::uint64_t> next_id_{1};
};

}  // namespace rocl::impl
