// tcp_receive.cpp - the TCP transport's receive state machine
// (tcp_receive.hpp).
#include "transport/tcp/tcp_receive.hpp"

#include <errno.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "status/status.hpp"
#include "transport/tcp/tcp_handshake.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_paused.hpp"
#include "transport/tcp/tcp_rendezvous_receive.hpp"
#include "transport/tcp/tcp_rendezvous_send.hpp"
#include "transport/tcp/tcp_socket.hpp"

namespace rocl::impl::tcp::detail {

// A nested drive (a pull inside deliver) may have dropped c meanwhile: its
// turn then ends (c stays allocated until the outermost drive ends). Such a
// drive may also have moved c's state and stage on: this loop goes on from
// wherever it left them (no step holds stage bytes across a deliver).
bool FrameReader::receive(Conn &c) {
  c.turn_read = 0;
  c.drained = false;
  for (;;) {
    if (c.dead) return true;
    const Step s = step(c);
    if (s != Step::kMore) return s == Step::kIdle;
    if (c.turn_read >= shared_.options.turn_bytes && waits_for_bytes(c)) return true;
  }
}

void FrameReader::release(Conn &c) {
  if (c.rx_pull != nullptr) {
    c.rx_block = nullptr;  // the pull's: RendezvousReceiver::fail_pulls gives it back
    c.rx_at = nullptr;
    c.rx_pull = nullptr;
  }
  if (c.rx_block != nullptr) {
    shared_.env.pool->release(c.rx_block, BlockState::kLibrary);
    c.rx_block = nullptr;
    c.rx_at = nullptr;
  }
  if (c.stub_block != nullptr) {
    shared_.env.pool->release(c.stub_block, BlockState::kLibrary);
    c.stub_block = nullptr;
  }
  // Staged frames go with the connection, as unread socket bytes do.
  c.stage.reset();
}

// Whether c can only move on with more bytes from the socket (its stage
// does not hold what its state reads next), so that stopping its turn here
// is safe: level-triggered epoll reports the socket's bytes again, but never
// the staged ones. Stopping elsewhere (a frame staged or read but not
// delivered, a block not yet asked for) would leave it stuck once the peer
// goes quiet.
bool FrameReader::waits_for_bytes(const Conn &c) {
  switch (c.rx) {
    case Rx::kHeader:
      return c.stage.size() < kHeaderBytes;
    case Rx::kRequestBody:
      return c.stage.size() < sizeof(wire::RendezvousBody);
    case Rx::kPayload:
      return c.frame_left > 0 && c.stage.size() == 0;
    default:
      return false;
  }
}

// One read into c's stage, behind the bytes still staged (at most a partial
// header or request body, moved to its start first), for the `need` bytes
// the state reads next (a header or a request body) and, unless messages
// are large (c.direct), as many more as the stage holds. The stage is made
// on the first read after the handshake (a connection refused there never
// costs one).
Step FrameReader::fill_stage(Conn &c, std::size_t need) {
  if (c.drained) return Step::kIdle;
  if (c.stage.bytes == nullptr && !c.stage.make()) {
    shared_.protocol_error("tcp: out of memory for the receive buffer of the connection from " +
                           c.peer_name + "; connection dropped");
    return Step::kDrop;
  }
  c.stage.compact();
  const std::size_t have = c.stage.size();
  const std::size_t room = (c.direct ? need : c.stage.cap) - have;
  const ssize_t n = read_some(c.fd, c.stage.bytes.get() + have, room);
  if (n > 0) c.stage.end += static_cast<std::size_t>(n);
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
Step FrameReader::read_payload(Conn &c) {
  if (c.drained) return Step::kIdle;
  // The stage is empty (consume() put it back at its start), and made: a
  // header came through it.
  const std::size_t want =
      static_cast<std::size_t>(std::min<std::uint64_t>(c.frame_left, std::uint64_t{1} << 30));
  const std::size_t ahead = c.direct ? kHeaderBytes : c.stage.cap;
  iovec iov[2] = {{c.rx_at + c.rx_done, want}, {c.stage.bytes.get(), ahead}};
  const ssize_t n = read_vec(c.fd, iov, 2);
  if (n > 0) {
    const std::size_t into_block = std::min(static_cast<std::size_t>(n), want);
    c.rx_done += into_block;
    c.frame_left -= into_block;
    c.stage.pos = 0;
    c.stage.end = static_cast<std::size_t>(n) - into_block;
  }
  return after_read(c, n,
                    n >= static_cast<ssize_t>(want) && n < static_cast<ssize_t>(want + ahead));
}

// After a read that gave n (read_some's result). `drained`: it found the
// socket drained (fewer bytes than it asked for), so the turn ends at its
// next read (c.drained). kMore: bytes came. kIdle: none. kDrop: closed or
// failed.
Step FrameReader::after_read(Conn &c, ssize_t n, bool drained) {
  if (n == 0) return Step::kIdle;
  if (n < 0) {
    if (c.rx != Rx::kHeader || c.stage.size() != 0 || c.rx_at != nullptr) {
      shared_.protocol_error("tcp: peer " + c.peer_name + " closed in the middle of a frame");
    }
    return Step::kDrop;
  }
  c.turn_read += static_cast<std::uint64_t>(n);
  c.drained = drained;
  return Step::kMore;
}

Step FrameReader::step(Conn &c) {
  switch (c.rx) {
    case Rx::kHello:
    case Rx::kProof:
      return handshake_.accept_step(c);
    case Rx::kHeader:
      return header(c);
    case Rx::kNeedBlock:
      return need_block(c);
    case Rx::kPayload:
      return payload(c);
    case Rx::kRequestBody:
      return request_body(c);
  }
  return Step::kDrop;
}

// The next header, from the stage (filled first if it holds less). Its
// bytes stay in place until the next fill, after start_frame has decoded
// them.
Step FrameReader::header(Conn &c) {
  if (c.stage.size() < kHeaderBytes) return fill_stage(c, kHeaderBytes);
  const std::byte *bytes = c.stage.front();
  c.stage.consume(kHeaderBytes);
  return to_step(start_frame(c, bytes));
}

// A block for the message (or the stub of the request) in c.h; a stub is
// delivered at once (c is back in kHeader: a pull inside deliver may drive
// c further).
Step FrameReader::need_block(Conn &c) {
  const bool stub = c.h.kind == wire::Kind::kRendezvousRequest;
  switch (stub ? rndv_receive_.take_stub(c) : take_block(c)) {
    case Take::kGot:
      paused_.resume(c);
      if (stub) {
        const rocl_gid_t destination = c.h.destination;
        if (Message *m = rndv_receive_.stub_for(c)) {
          shared_.transport.hand_over(destination, m, waiter_,
                                      [&] { return "message from " + c.peer_name; });
        }
      }
      return Step::kMore;
    case Take::kWait:
      paused_.pause(c);
      return Step::kIdle;
    case Take::kNever:
      break;
  }
  shared_.protocol_error("tcp: a " + std::to_string(c.h.total_length) + "-byte message from " +
                         c.peer_name + " can never fit the buffer pool (ROCL_POOL_MAX); " +
                         "connection dropped");
  return Step::kDrop;
}

// The current frame's payload: what the stage holds of it is copied into
// the block, the rest read (read_payload).
Step FrameReader::payload(Conn &c) {
  if (c.frame_left == 0) return to_step(end_frame(c));
  if (c.stage.size() == 0) return read_payload(c);
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>(c.stage.size(), c.frame_left));
  std::memcpy(c.rx_at + c.rx_done, c.stage.front(), n);
  c.stage.consume(n);
  c.rx_done += n;
  c.frame_left -= n;
  return Step::kMore;
}

// A rendezvous request's body, from the stage (filled first if it holds
// less), checked by the rendezvous receiver.
Step FrameReader::request_body(Conn &c) {
  constexpr std::size_t kBody = sizeof(wire::RendezvousBody);
  if (c.stage.size() < kBody) return fill_stage(c, kBody);
  wire::RendezvousBody body;
  std::memcpy(&body, c.stage.front(), kBody);
  c.stage.consume(kBody);
  return rndv_receive_.on_request_body(c, body);
}

// A header's kHeaderBytes bytes are at `header`: validate them into c.h. A
// rendezvous reply (for a message we parked on c) is handled at once: it
// carries no body. A rendezvous request reads its body next; a message's
// first frame waits for its block (kNeedBlock), unless it is the data of a
// registered pull, which goes into the pull's block; a later fragment
// continues into the block.
bool FrameReader::start_frame(Conn &c, const std::byte *header) {
  wire::MessageHeader &h = c.h;
  if (wire::decode_header(std::span<const std::byte>(header, kHeaderBytes), shared_.limits,
                          c.peer_name, &h) != ROCL_OK) {
    return shared_.protocol_error(std::string("tcp: ") + last_error() + "; connection dropped");
  }
  if (h.kind == wire::Kind::kRendezvousReply) return rndv_send_.on_reply(c);
  if (c.rx_at == nullptr) {  // no message in progress
    if (h.fragment_offset != 0) {
      return shared_.protocol_error("tcp: frame from " + c.peer_name + ": fragment_offset " +
                                    std::to_string(h.fragment_offset) +
                                    " of a message's first frame is not 0; connection dropped");
    }
    if (h.kind == wire::Kind::kRendezvousRequest) return rndv_receive_.on_request(c);
    if (h.kind == wire::Kind::kFragment) {
      const int rc = rndv_receive_.start_data(c);
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
bool FrameReader::continues_message(Conn &c) {
  const auto &h = c.h;
  const auto &f = c.first;
  if (h.kind == wire::Kind::kFragment && h.message_id == f.message_id &&
      h.total_length == f.total_length && h.source == f.source && h.destination == f.destination &&
      h.tag == f.tag && h.domain == f.domain && h.fragment_offset == c.rx_done) {
    return true;
  }
  return shared_.protocol_error("tcp: frame from " + c.peer_name + ": fragment of message " +
                                std::to_string(h.message_id) + " at fragment_offset " +
                                std::to_string(h.fragment_offset) + " does not continue message " +
                                std::to_string(f.message_id) + " (expected offset " +
                                std::to_string(c.rx_done) + "); connection dropped");
}

// A block for the message whose first header is c.h.
Take FrameReader::take_block(Conn &c) {
  const std::uint64_t len = c.h.total_length;
  BlockHeader *b = shared_.env.pool != nullptr ? shared_.env.pool->allocate(len) : nullptr;
  if (b == nullptr) return shared_.can_ever_fit(len) ? Take::kWait : Take::kNever;
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

// The current frame is complete; deliver the message if it was the last (or
// complete the pull whose data it was). c is back in kHeader before deliver:
// a pull inside deliver may drive c further (a nested drive).
bool FrameReader::end_frame(Conn &c) {
  c.rx = Rx::kHeader;
  if (c.rx_done < c.first.total_length) return true;
  if (c.rx_pull != nullptr) {
    rndv_receive_.finish_pull(c);
    return true;
  }
  BlockHeader *b = c.rx_block;
  c.rx_block = nullptr;
  c.rx_at = nullptr;
  const wire::MessageHeader first = c.first;
  shared_.transport.hand_over(
      first.destination,
      TcpTransportImpl::arrived(b, CoreHeader{first.source, first.tag, first.domain},
                                first.total_length),
      waiter_, [&] { return "message from " + c.peer_name; });
  return true;
}

}  // namespace rocl::impl::tcp::detail
