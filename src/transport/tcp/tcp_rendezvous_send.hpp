// tcp_rendezvous_send.hpp - rendezvous over TCP, the sender's side (design:
// "Rendezvous" in tcp_transport.hpp; frames: docs/protocol.md, "TCP
// connections"). send() parks a large message in its connection's table of
// unrequested sends (a generic::Communicator keyed by {connection id,
// cookie}) and writes a kRendezvousRequest; the receiver's
// kRendezvousReply is matched there (request_arrived) and either queues the
// data (kFragment frames, message_id = cookie) or, a "drop" reply,
// finishes the block. Parking is bounded per connection (flow control);
// the connection's death fails what is parked.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class Outbox;

class RendezvousSender {
 public:
  RendezvousSender(Shared &shared, Outbox &outbox) : shared_(shared), outbox_(outbox) {}

  // Under c.mu: whether one more message of len bytes may be parked on c.
  bool has_parking(const Conn &c, std::uint64_t len) const {
    return c.parking.has_room(len, shared_.options.max_parked_bytes);
  }
  // Under c.mu (held through `lock`): parks msg on c and queues its
  // request, first waiting (flow control) for parking room and for queue
  // room for the request, except on a driver of this transport (inside
  // deliver), where send() calls this only when there is parking room.
  // ROCL_OK: the block is the transport's. Otherwise the caller keeps msg
  // and nothing was sent (fail() names the peer).
  int send(Conn &c, std::unique_lock<std::mutex> &lock, rocl_gid_t destination, Message *msg,
           rocl_gid_t peer, std::string_view peer_address);
  // Driver: a rendezvous reply's header (validated: no body) is in c.h.
  // Queues the data of the parked send it answers, or finishes its block
  // (total_length 0: dropped by the receiver). False: a reply that names
  // no parked send or does not answer it (logged: drop the connection).
  bool on_reply(Conn &c);
  // Under c.mu, c closing: every parked send fails (its block finished as
  // failed; counted if `count`); the table stays closed. Sends whose data
  // was queued are failed with the queue.
  void fail_parked(Conn &c, bool count);

 private:
  void fill(ParkedSend &p, const Conn &c, rocl_gid_t destination, Message *msg);
  static std::string mismatch(const wire::MessageHeader &reply, const ParkedSend &p);
  bool queue_data(Conn &c, ParkedSend &p, const std::string &what);

  Shared &shared_;
  Outbox &outbox_;
};

}  // namespace rocl::impl::tcp::detail
