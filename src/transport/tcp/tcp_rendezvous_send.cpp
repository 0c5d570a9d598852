// tcp_rendezvous_send.cpp - rendezvous over TCP, the sender's side
// (tcp_rendezvous_send.hpp).
#include "transport/tcp/tcp_rendezvous_send.hpp"

#include <cinttypes>
#include <cstdio>
#include <new>

#include "status/status.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_outbox.hpp"

namespace rocl::impl::tcp::detail {

int RendezvousSender::send(Conn &c, std::unique_lock<std::mutex> &lock, rocl_gid_t destination,
                           Message *msg, rocl_gid_t peer, std::string_view peer_address) {
  const std::uint64_t len = msg->length;
  const auto room = [&] { return has_parking(c, len) && outbox_.has_room(c, kRequestCost); };
  if (!room() && !shared_.drives_here()) {
    auto &waits = has_parking(c, len) ? shared_.counters.send_waits : shared_.counters.rndv_waits;
    waits.fetch_add(1, std::memory_order_relaxed);
    if (!outbox_.wait_until(c, lock, room)) {
      return fail(ROCL_EPEER,
                  "tcp: peer %.*s (context 0x%llx) went away while send() waited for it to take "
                  "the rendezvous messages parked for it",
                  static_cast<int>(peer_address.size()), peer_address.data(),
                  static_cast<unsigned long long>(peer));
    }
  }
  ParkedSend *slot = c.parking.next_slot();
  if (slot == nullptr) return fail(ROCL_ENOMEM, "tcp: out of memory parking a rendezvous message");
  ParkedSend &p = *slot;
  fill(p, c, destination, msg);
  RndvEnvelope *early = nullptr;
  try {
    early = c.parking.table.post_rendezvous_send(&p);
  } catch (const std::bad_alloc &) {  // a bin for the new key; nothing changed
    return fail(ROCL_ENOMEM, "tcp: out of memory parking a rendezvous message");
  }
  if (early != nullptr || p.status != 0) {
    // A reply for this cookie came before its request (a forged one: the
    // driver drops the connection for it), or the table is closed.
    return fail(ROCL_EPEER,
                "tcp: peer %.*s (context 0x%llx) answered a rendezvous request "
                "before it was sent; connection dropped",
                static_cast<int>(peer_address.size()), peer_address.data(),
                static_cast<unsigned long long>(peer));
  }
  c.parking.occupy(p);
  OutMsg out{};
  out.block = nullptr;  // the block waits in the slot, not in the queue
  out.hdr = p.hdr;
  out.data = reinterpret_cast<const std::byte *>(&p.body);
  out.total = sizeof p.body;
  out.cost = kRequestCost;
  if (const int rc = outbox_.enqueue(c, out); rc != ROCL_OK) {
    c.parking.table.cancel_send(&p);
    c.parking.release(p);
    return rc;
  }
  shared_.counters.rndv_sends.fetch_add(1, std::memory_order_relaxed);
  TcpCounters::raise(shared_.counters.peak_parked, c.parking.count);
  return ROCL_OK;
}

// p, a free slot, as the parked send of msg with a fresh cookie: its
// request's header and body are written from here.
void RendezvousSender::fill(ParkedSend &p, const Conn &c, rocl_gid_t destination, Message *msg) {
  const std::uint64_t cookie = shared_.next_message_id();
  p.header = RndvKey{c.id, cookie};
  p.block = block_of(msg);
  p.data = static_cast<const std::byte *>(msg->data);
  p.length = msg->length;
  p.hdr = frame_header(wire::Kind::kRendezvousRequest);
  p.hdr.source = msg->header.source;
  p.hdr.destination = destination;
  p.hdr.tag = msg->header.tag;
  p.hdr.domain = msg->header.domain;
  p.hdr.message_id = cookie;
  p.hdr.total_length = msg->length;
  p.hdr.fragment_length = sizeof(wire::RendezvousBody);
  p.body = wire::RendezvousBody{0, cookie};
}

void RendezvousSender::fail_parked(Conn &c, bool count) {
  c.parking.table.close(ROCL_EPEER, [&](RndvEnvelope *e) {
    if (e == &c.reply) return;  // a reply that matched nothing, parked as a request
    auto *p = static_cast<ParkedSend *>(e);
    shared_.finish_sent(p->block, false);
    p->block = nullptr;
    if (count) shared_.counters.failed_sends.fetch_add(1);
  });
  c.parking.clear();
}

bool RendezvousSender::on_reply(Conn &c) {
  const wire::MessageHeader h = c.h;
  const std::string what = "tcp: rendezvous reply from " + c.peer_name + " for cookie " +
                           std::to_string(h.message_id) + ": ";
  std::lock_guard lock(c.mu);
  c.reply.header = RndvKey{c.id, h.message_id};
  RndvEnvelope *e = nullptr;
  try {
    e = c.parking.table.request_arrived(&c.reply);
  } catch (const std::bad_alloc &) {
    return shared_.protocol_error(what + "out of memory matching it; connection dropped");
  }
  if (e == nullptr) {
    // c.reply is parked in the requested queue now: the connection's close
    // takes it out again (fail_parked).
    return shared_.protocol_error(what + "message_id " + std::to_string(h.message_id) +
                                  " names no rendezvous request waiting on this connection; "
                                  "connection dropped");
  }
  auto &p = *static_cast<ParkedSend *>(e);
  if (const std::string bad = mismatch(h, p); !bad.empty()) {
    shared_.finish_sent(p.block, false);
    shared_.counters.failed_sends.fetch_add(1);
    c.parking.release(p);
    return shared_.protocol_error(what + bad + "; connection dropped");
  }
  if (h.total_length == 0) {  // dropped: no receive will ever take it
    shared_.finish_sent(p.block, true);
    c.parking.release(p);
    return true;
  }
  return queue_data(c, p, what);
}

// What in `reply` does not answer p's request ("" if it all does).
std::string RendezvousSender::mismatch(const wire::MessageHeader &h, const ParkedSend &p) {
  if (h.total_length != 0 && h.total_length != p.length) {
    return "total_length " + std::to_string(h.total_length) + " is neither 0 (drop) nor " +
           std::to_string(p.length) + " (the request's)";
  }
  if (h.source != p.hdr.destination) {
    return "source " + hex(h.source) + " is not the request's destination " +
           hex(p.hdr.destination);
  }
  if (h.destination != p.hdr.source) {
    return "destination " + hex(h.destination) + " is not the request's source " +
           hex(p.hdr.source);
  }
  if (h.tag != p.hdr.tag) {
    return "tag " + std::to_string(h.tag) + " is not the request's " + std::to_string(p.hdr.tag);
  }
  if (h.domain != p.hdr.domain) {
    return "domain " + std::to_string(h.domain) + " is not the request's " +
           std::to_string(p.hdr.domain);
  }
  return "";
}

// Under c.mu: queues p's data (kFragment frames, message_id = cookie: the
// data of that request); its slot is freed once written. False: no memory
// (logged: drop the connection, p failed).
bool RendezvousSender::queue_data(Conn &c, ParkedSend &p, const std::string &what) {
  OutMsg out{};
  out.block = p.block;
  out.hdr = p.hdr;
  out.hdr.kind = wire::Kind::kFragment;
  out.data = p.data;
  out.total = p.length;
  out.cost = p.length + kHeaderBytes;
  out.parked = &p;
  if (outbox_.enqueue(c, out) == ROCL_OK) return true;
  shared_.finish_sent(p.block, false);
  shared_.counters.failed_sends.fetch_add(1);
  c.parking.release(p);
  return shared_.protocol_error(what + "out of memory queueing its data; connection dropped");
}

}  // namespace rocl::impl::tcp::detail
