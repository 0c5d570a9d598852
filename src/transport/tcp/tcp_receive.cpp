// tcp_receive.cpp - the receive side of the TCP transport (driver only):
// the per-connection receive state machine reading frames through the
// connection's stage (one recv() for every small frame already there),
// validating every header (and which kinds each side of a connection may
// send), reassembling fragments in place into a pool block, delivering to
// the sink, and pausing a connection whose message gets no block (flow
// control on the receive side; see tcp_transport.hpp). The rendezvous frames
// are handed to tcp_rendezvous.cpp.
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {

// No block for the message announced in c.h: stops reading c (the kernel's
// TCP window then holds the sender back) until a retry gets one.
void TcpTransportImpl::pause_reading(Conn &c) {
  {
    std::lock_guard lock(c.mu);
    if (!c.rx_paused) {
      c.rx_paused = true;
      held_.fetch_add(1, std::memory_order_relaxed);
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
  held_.fetch_sub(1, std::memory_order_relaxed);
  update_interest(c);
  ++resumed_;
}

// Gives paused connections another try, at most every kRetryMs (a failing
// allocation is not free: the pool reclaims its caches first). A connection
// still without a block pauses itself again. One that gets it goes on with
// the frames its stage holds (epoll would never report those), then reads.
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

// read_some into n buffers in turn (one recvmsg).
ssize_t TcpTransportImpl::read_vec(int fd, iovec *iov, int n) {
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = static_cast<std::size_t>(n);
  for (;;) {
    const ssize_t r = ::recvmsg(fd, &mh, 0);
    if (r > 0) return r;
    if (r == 0) return -1;
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

// Reads what is there, up to about Options::turn_bytes (then level-triggered
// epoll reports the rest on the next turn). False: drop the connection.
// A nested drive (a pull inside deliver) may have dropped c meanwhile: its
// turn then ends (c stays allocated until the outermost drive ends). Such a
// drive may also have moved c's state and stage on: this loop goes on from
// wherever it left them (no step holds stage bytes across a deliver).
bool TcpTransportImpl::receive(Conn &c) {
  c.turn_read = 0;
  c.drained = false;
  for (;;) {
    if (c.dead) return true;
    const Step s = rx_step(c);
    if (s != Step::kMore) return s == Step::kIdle;
    if (c.turn_read >= options_.turn_bytes && waits_for_bytes(c)) return true;
  }
}

// Whether c can only move on with more bytes from the socket (its stage
// does not hold what its state reads next), so that stopping its turn here
// is safe: level-triggered epoll reports the socket's bytes again, but never
// the staged ones. Stopping elsewhere (a frame staged or read but not
// delivered, a block not yet asked for) would leave it stuck once the peer
// goes quiet.
bool TcpTransportImpl::waits_for_bytes(const Conn &c) {
  switch (c.rx) {
    case Rx::kHeader:
      return staged(c) < kHeaderBytes;
    case Rx::kRequestBody:
      return staged(c) < sizeof(wire::RendezvousBody);
    case Rx::kPayload:
      return c.frame_left > 0 && staged(c) == 0;
    default:
      return false;
  }
}

// n staged bytes are parsed. An empty stage starts over at its beginning, so
// that the next read has all of it.
void TcpTransportImpl::consume(Conn &c, std::size_t n) {
  c.stage_pos += n;
  if (c.stage_pos == c.stage_end) c.stage_pos = c.stage_end = 0;
}

// c's stage, made on its first read after the handshake (a connection
// refused there never costs one). False: no memory (logged: drop c).
bool TcpTransportImpl::make_stage(Conn &c) {
  const std::size_t cap = kStageBytes;
  c.stage.reset(new (std::nothrow) std::byte[cap]);
  if (c.stage == nullptr) {
    return protocol_error("tcp: out of memory for the receive buffer of the connection from " +
                          c.peer_name + "; connection dropped");
  }
  c.stage_cap = cap;
  return true;
}

// One read into c's stage, behind the bytes still staged (at most a partial
// header or request body, moved to its start first), for the `need` bytes
// the state reads next (a header or a request body) and, unless messages
// are large (c.direct), as many more as the stage holds.
Step TcpTransportImpl::fill_stage(Conn &c, std::size_t need) {
  if (c.drained) return Step::kIdle;
  if (c.stage == nullptr && !make_stage(c)) return Step::kDrop;
  const std::size_t have = staged(c);
  if (c.stage_pos != 0) {
    std::memmove(c.stage.get(), c.stage.get() + c.stage_pos, have);
    c.stage_pos = 0;
    c.stage_end = have;
  }
  const std::size_t room = (c.direct ? need : c.stage_cap) - have;
  const ssize_t n = read_some(c.fd, c.stage.get() + have, room);
  if (n > 0) c.stage_end += static_cast<std::size_t>(n);
  return after_read(c, n, n < static_cast<ssize_t>(room));
}

// The rest of the current frame's payload, none of it staged: one recvmsg
// reads it straight into the block (no copy for a large payload) and what
// follows it into the stage: the next frames, or only the next header while
// messages are large (c.direct), so that the next payload is not copied
// either. Only a short look-ahead means that the socket is drained: a
// payload that came in part is still streaming in, and reading its rest at
// once rather than in a later turn keeps the sender's window open
// (rocl-bench latency --transport tcp of 1 MiB shows it).
Step TcpTransportImpl::read_payload(Conn &c) {
  if (c.drained) return Step::kIdle;
  // The stage is empty (consume() put it back at its start), and made: a
  // header came through it.
  const std::size_t want =
      static_cast<std::size_t>(std::min<std::uint64_t>(c.frame_left, std::uint64_t{1} << 30));
  const std::size_t ahead = c.direct ? kHeaderBytes : c.stage_cap;
  iovec iov[2] = {{c.rx_at + c.rx_done, want}, {c.stage.get(), ahead}};
  const ssize_t n = read_vec(c.fd, iov, 2);
  if (n > 0) {
    const std::size_t into_block = std::min(static_cast<std::size_t>(n), want);
    c.rx_done += into_block;
    c.frame_left -= into_block;
    c.stage_pos = 0;
    c.stage_end = static_cast<std::size_t>(n) - into_block;
  }
  return after_read(c, n,
                    n >= static_cast<ssize_t>(want) && n < static_cast<ssize_t>(want + ahead));
}

// After a read that gave n (read_some's result). `drained`: it found the
// socket drained (fewer bytes than it asked for), so the turn ends at its
// next read (c.drained). kMore: bytes came. kIdle: none. kDrop: closed or
// failed.
Step TcpTransportImpl::after_read(Conn &c, ssize_t n, bool drained) {
  if (n == 0) return Step::kIdle;
  if (n < 0) {
    if (c.rx != Rx::kHeader || staged(c) != 0 || c.rx_at != nullptr) {
      protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
    }
    return Step::kDrop;
  }
  c.turn_read += static_cast<std::uint64_t>(n);
  c.drained = drained;
  return Step::kMore;
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

// The next header, from the stage (filled first if it holds less). Its
// bytes stay in place until the next fill, after start_frame has decoded
// them.
Step TcpTransportImpl::rx_header(Conn &c) {
  if (staged(c) < kHeaderBytes) return fill_stage(c, kHeaderBytes);
  const std::byte *header = c.stage.get() + c.stage_pos;
  consume(c, kHeaderBytes);
  return to_step(start_frame(c, header));
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

// The current frame's payload: what the stage holds of it is copied into
// the block, the rest read (read_payload).
Step TcpTransportImpl::rx_payload(Conn &c) {
  if (c.frame_left == 0) return to_step(end_frame(c));
  if (staged(c) == 0) return read_payload(c);
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(staged(c), c.frame_left));
  std::memcpy(c.rx_at + c.rx_done, c.stage.get() + c.stage_pos, n);
  consume(c, n);
  c.rx_done += n;
  c.frame_left -= n;
  return Step::kMore;
}

// A header's kHeaderBytes bytes are at `header`: validate them into c.h. A
// rendezvous reply (for a message we parked on c) is handled at once: it
// carries no body. A rendezvous request reads its body next; a message's first frame waits for its
// block (kNeedBlock), unless it is the data of a registered pull, which goes into the pull's block;
// a later fragment continues into the block.
bool TcpTransportImpl::start_frame(Conn &c, const std::byte *header) {
  wire::MessageHeader &h = c.h;
  if (wire::decode_header(std::span<const std::byte>(header, kHeaderBytes), limits_, c.peer_name,
                          &h) != ROCL_OK) {
    return protocol_error(std::string("tcp: ") + last_error() + "; connection dropped");
  }
  if (h.kind == wire::Kind::kRendezvousReply) return on_reply(c);
  if (c.rx_at == nullptr) {  // no message in progress
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
  c.rx_at = payload_of(b);
  c.first = c.h;
  c.direct = len >= kDirectBytes;
  c.rx_done = 0;
  c.frame_left = c.h.fragment_length;
  c.rx = Rx::kPayload;
  return Take::kGot;
}

// Whether waiting for the pool can help: its cap holds a block for len.
bool TcpTransportImpl::can_ever_fit(std::uint64_t len) const {
  return env_.pool != nullptr && env_.pool->can_ever_hold(static_cast<std::size_t>(len));
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
  c.rx_at = nullptr;
  const wire::MessageHeader first = c.first;
  hand_over(first.destination,
            arrived(b, CoreHeader{first.source, first.tag, first.domain}, first.total_length),
            rx_waiter_, [&] { return "message from " + c.peer_name; });
  return true;
}

}  // namespace rocl::impl::tcp::detail
