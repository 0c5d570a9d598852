// tcp_receive.cpp - the receive side of the TCP transport (driver only):
// the per-connection receive state machine reading frames, validating every
// header (and which kinds each side of a connection may send), reassembling
// fragments in place into a pool block, delivering to the sink, and pausing
// a connection whose message gets no block (flow control on the receive
// side; see tcp_transport.hpp). The rendezvous frames are handed to
// tcp_rendezvous.cpp.
#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

// No block for the message announced in c.h: stops reading c (the kernel's
// TCP window then holds the sender back) until a retry gets one.
void TcpTransportImpl::pause_reading(Conn &c) {
  {
    std::lock_guard lock(c.mu);
    if (!c.rx_paused) {
      c.rx_paused = true;
      update_interest(c);
      paused_reads_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!c.pause_logged) {
    c.pause_logged = true;
    const bool stub = c.h.kind == wire::Kind::kRendezvousRequest;
    log("tcp: no buffer for a " + std::string(stub ? "rendezvous stub of a " : "") +
        std::to_string(c.h.total_length) + "-byte message from " + c.peer_name +
        " (pool full): reading from it paused until blocks are released " +
        "(logged once per connection)");
  }
  paused_.push_back(&c);
  paused_n_.store(paused_.size());  // seq_cst, then in_epoll_: see wait_until_ready()
  // The thread may be waiting with no timeout: make it take the retry one.
  if (paused_.size() == 1 && in_epoll_.load()) kick();
}

void TcpTransportImpl::resume_reading(Conn &c) {
  std::lock_guard lock(c.mu);
  if (!c.rx_paused) return;
  c.rx_paused = false;
  update_interest(c);
  ++resumed_;
}

// Gives paused connections another try, at most every kRetryMs (a failing
// allocation is not free: the pool reclaims its caches first). A connection
// still without a block pauses itself again.
void TcpTransportImpl::retry_paused_if_due() {
  if (paused_.empty()) return;
  const auto now = Clock::now();
  if (now < next_retry_) return;
  next_retry_ = now + std::chrono::milliseconds(tcp::kRetryMs);
  std::vector<Conn *> list;
  list.swap(paused_);
  paused_n_.store(0);
  for (Conn *c : list) {
    if (!receive(*c)) drop(c);
  }
}

// Reads into [p, p+len): bytes read, 0 would block, -1 closed or failed.
ssize_t TcpTransportImpl::read_some(int fd, void *p, std::size_t len) {
  for (;;) {
    const ssize_t n = ::recv(fd, p, len, 0);
    if (n > 0) return n;
    if (n == 0) return -1;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

bool TcpTransportImpl::protocol_error(const std::string &what) {
  dropped_.fetch_add(1);
  log(what);
  return false;
}

// Reads what is there, up to about kTurnBytes. False: drop the connection.
// A nested drive (a pull inside deliver) may have dropped c meanwhile: its
// turn then ends (c stays allocated until the outermost drive ends).
bool TcpTransportImpl::receive(Conn &c) {
  c.turn_read = 0;
  for (;;) {
    if (c.dead) return true;
    const Step s = rx_step(c);
    if (s != Step::kMore) return s == Step::kIdle;
    if (c.turn_read >= kTurnBytes && waits_for_bytes(c)) return true;
  }
}

// Whether c can only move on with more bytes from the socket, so that
// stopping its turn here is safe: level-triggered epoll reports the bytes
// again. Stopping elsewhere (a frame read but not delivered, a block not yet
// asked for) would leave it stuck once the peer goes quiet.
bool TcpTransportImpl::waits_for_bytes(const Conn &c) {
  return c.rx == Rx::kHeader || c.rx == Rx::kRequestBody ||
         (c.rx == Rx::kPayload && c.frame_left > 0);
}

Step TcpTransportImpl::rx_step(Conn &c) {
  switch (c.rx) {
    case Rx::kHello:
    case Rx::kProof:
      return rx_handshake(c);
    case Rx::kHeader:
      return rx_header(c);
    case Rx::kNeedBlock:
      return rx_need_block(c);
    case Rx::kPayload:
      return rx_payload(c);
    case Rx::kRequestBody:
      return rx_request_body(c);
  }
  return Step::kDrop;
}

Step TcpTransportImpl::rx_header(Conn &c) {
  const ssize_t n = read_some(c.fd, c.buf.data() + c.got, kHeaderBytes - c.got);
  if (n == 0) return Step::kIdle;
  if (n < 0) {
    if (c.got != 0 || c.rx_block != nullptr) {
      protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
    }
    return Step::kDrop;
  }
  c.turn_read += static_cast<std::uint64_t>(n);
  c.got += static_cast<std::size_t>(n);
  if (c.got < kHeaderBytes) return Step::kMore;
  c.got = 0;
  return to_step(start_frame(c));
}

Step TcpTransportImpl::rx_need_block(Conn &c) {
  const bool stub = c.h.kind == wire::Kind::kRendezvousRequest;
  switch (stub ? take_stub(c) : take_block(c)) {
    case Take::kGot:
      resume_reading(c);
      return stub ? to_step(deliver_stub(c)) : Step::kMore;
    case Take::kWait:
      pause_reading(c);
      return Step::kIdle;
    case Take::kNever:
      break;
  }
  protocol_error("tcp: a " + std::to_string(c.h.total_length) + "-byte message from " +
                 c.peer_name + " can never fit the buffer pool (ROCL_POOL_MAX); " +
                 "connection dropped");
  return Step::kDrop;
}

Step TcpTransportImpl::rx_payload(Conn &c) {
  if (c.frame_left == 0) return to_step(end_frame(c));
  std::byte *dst = payload_of(c.rx_block) + c.rx_done;
  const std::size_t want =
      static_cast<std::size_t>(std::min<std::uint64_t>(c.frame_left, std::uint64_t{1} << 30));
  const ssize_t n = read_some(c.fd, dst, want);
  if (n == 0) return Step::kIdle;
  if (n < 0) {
    protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
    return Step::kDrop;
  }
  c.turn_read += static_cast<std::uint64_t>(n);
  c.rx_done += static_cast<std::uint64_t>(n);
  c.frame_left -= static_cast<std::uint64_t>(n);
  return Step::kMore;
}

// A header is in c.buf: validate it. On the side that connected only
// rendezvous replies may come (handled at once: they carry no body). On the
// side that accepted: a rendezvous request reads its body next; a message's
// first frame waits for its block (kNeedBlock), unless it is the data of a
// registered pull, which goes straight into the pull's block; a later
// fragment continues into the block.
bool TcpTransportImpl::start_frame(Conn &c) {
  wire::MessageHeader &h = c.h;
  if (wire::decode_header(std::span<const std::byte>(c.buf.data(), kHeaderBytes), limits_,
                          c.peer_name, &h) != ROCL_OK) {
    return protocol_error(std::string("tcp: ") + last_error() + "; connection dropped");
  }
  if (c.outgoing != (h.kind == wire::Kind::kRendezvousReply)) {
    return protocol_error("tcp: frame from " + c.peer_name + ": kind " + wire::kind_name(h.kind) +
                          " is not sent by the side that " +
                          (c.outgoing ? "accepted" : "connected") + "; connection dropped");
  }
  if (c.outgoing) return on_reply(c);
  if (c.rx_block == nullptr) {
    if (h.fragment_offset != 0) {
      return protocol_error("tcp: frame from " + c.peer_name + ": fragment_offset " +
                            std::to_string(h.fragment_offset) +
                            " of a message's first frame is not 0; connection dropped");
    }
    if (h.kind == wire::Kind::kRendezvousRequest) return start_request(c);
    if (h.kind == wire::Kind::kFragment) {
      const int rc = start_pull_data(c);
      if (rc != 0) return rc > 0;  // the data of a pull (or a bad one)
    }
    c.rx = Rx::kNeedBlock;
    return true;
  }
  if (!continues_message(c)) return false;
  c.frame_left = h.fragment_length;
  c.rx = Rx::kPayload;
  return true;
}

// Continuing a fragmented message: same message, next piece in order.
bool TcpTransportImpl::continues_message(Conn &c) {
  const auto &h = c.h;
  const auto &f = c.first;
  if (h.kind == wire::Kind::kFragment && h.message_id == f.message_id &&
      h.total_length == f.total_length && h.source == f.source && h.destination == f.destination &&
      h.tag == f.tag && h.domain == f.domain && h.fragment_offset == c.rx_done) {
    return true;
  }
  return protocol_error("tcp: frame from " + c.peer_name + ": fragment of message " +
                        std::to_string(h.message_id) + " at fragment_offset " +
                        std::to_string(h.fragment_offset) + " does not continue message " +
                        std::to_string(f.message_id) + " (expected offset " +
                        std::to_string(c.rx_done) + "); connection dropped");
}

// A block for the message whose first header is c.h.
Take TcpTransportImpl::take_block(Conn &c) {
  const std::uint64_t len = c.h.total_length;
  BlockHeader *b = env_.pool != nullptr ? env_.pool->allocate(len) : nullptr;
  if (b == nullptr) return can_ever_fit(len) ? Take::kWait : Take::kNever;
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  c.rx_block = b;
  c.first = c.h;
  c.rx_done = 0;
  c.frame_left = c.h.fragment_length;
  c.rx = Rx::kPayload;
  return Take::kGot;
}

// Whether waiting for the pool can help: its cap holds a block for len.
bool TcpTransportImpl::can_ever_fit(std::uint64_t len) const {
  if (env_.pool == nullptr) return false;
  const unsigned order = BufferPool::order_for(static_cast<std::size_t>(len));
  return order < 64 && (std::size_t{1} << order) <= env_.pool->stats().cap_bytes;
}

// The current frame is complete; deliver the message if it was the last (or
// complete the pull whose data it was). c is back in kHeader before deliver:
// a pull inside deliver may drive c further (a nested drive).
bool TcpTransportImpl::end_frame(Conn &c) {
  c.rx = Rx::kHeader;
  if (c.rx_done < c.first.total_length) return true;
  if (c.rx_pull != nullptr) {
    finish_pull(c);
    return true;
  }
  BlockHeader *b = c.rx_block;
  c.rx_block = nullptr;
  const wire::MessageHeader first = c.first;
  Message *m = message_in(b);
  m->header = CoreHeader{first.source, first.tag, first.domain};
  m->data = payload_of(b);
  m->length = first.total_length;
  b->state.store(BlockState::kLibrary, std::memory_order_release);
  if (env_.sink->deliver(first.destination, m) != ROCL_OK) {
    unknown_.fetch_add(1);
    char line[160];
    std::snprintf(line, sizeof line, "tcp: message from %s for unknown resource 0x%016" PRIx64,
                  c.peer_name.c_str(), first.destination);
    log(line);
    std::destroy_at(m);
    env_.pool->release(b, BlockState::kLibrary);
  }
  return true;
}

}  // namespace rocl::impl::tcp::detail
