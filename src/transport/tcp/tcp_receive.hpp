// tcp_receive.hpp - the receive side of the TCP transport's connections
// (driver only): the receive state machine reading frames through each
// connection's stage (one recv() for every small frame already there),
// validating every header (wire::decode_header, and which kinds each side
// of a connection may send) with a sentence naming the peer and the field
// for a bad one, reassembling fragments in place into a pool block and
// handing the message to the sink. The handshake's steps go to Handshake,
// rendezvous frames to RendezvousSender (replies) and RendezvousReceiver
// (requests, the data of pulls); a message without a block to PausedReads.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class Handshake;
class PausedReads;
class RendezvousSender;
class RendezvousReceiver;

class FrameReader {
 public:
  FrameReader(Shared &shared, Handshake &handshake, PausedReads &paused,
              RendezvousSender &rndv_send, RendezvousReceiver &rndv_receive)
      : shared_(shared),
        handshake_(handshake),
        paused_(paused),
        rndv_send_(rndv_send),
        rndv_receive_(rndv_receive) {}

  // The receive whose caller drives now, handed to the sink with each
  // arrival; nullptr while the transport's thread or a caller waiting for
  // no receive drives. Set and cleared under the receive lock only.
  void set_waiter(const Waiter *waiter) noexcept { waiter_ = waiter; }

  // Reads what is there, up to about Options::turn_bytes (then
  // level-triggered epoll reports the rest on the next turn). False: drop
  // the connection (logged).
  bool receive(Conn &c);
  // c is closing (under c.mu): gives back the block of a message half
  // received and of a stub not yet delivered, and the stage.
  void release(Conn &c);

 private:
  static bool waits_for_bytes(const Conn &c);
  Step fill_stage(Conn &c, std::size_t need);
  Step read_payload(Conn &c);
  Step after_read(Conn &c, ssize_t n, bool drained);
  Step step(Conn &c);
  Step header(Conn &c);
  Step need_block(Conn &c);
  Step payload(Conn &c);
  Step request_body(Conn &c);
  bool start_frame(Conn &c, const std::byte *header);
  bool continues_message(Conn &c);
  Take take_block(Conn &c);
  bool end_frame(Conn &c);

  Shared &shared_;
  Handshake &handshake_;
  PausedReads &paused_;
  RendezvousSender &rndv_send_;
  RendezvousReceiver &rndv_receive_;
  const Waiter *waiter_ = nullptr;
};

}  // namespace rocl::impl::tcp::detail
