// tcp_rendezvous.cpp - rendezvous over TCP (design: "Rendezvous" in
// tcp_transport.hpp; frames: docs/protocol.md, "TCP connections").
//  - sender: send_rendezvous() parks a large message in its connection's
//    table of unrequested sends (a generic::Communicator keyed by {connection
//    id, cookie}: EPOS section 2) and writes a kRendezvousRequest; on_reply()
//    matches the receiver's kRendezvousReply with request_arrived() and
//    queues the data (kFragment frames, message_id = cookie), or releases the
//    block on a "drop" reply. Parking is bounded per connection (flow
//    control); the connection's death fails what is parked.
//  - receiver: a request becomes a stub delivered to the sink; pull() on the
//    receiving thread registers a block for (connection, cookie), replies
//    "send it" and waits (driving the transport itself) until the driver has
//    read the data straight into that block; discard() replies "drop".
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

#include "rocl/platform/cpu.hpp"
#include "transport/tcp/tcp_internal.hpp"

namespace rocl::impl::tcp::detail {
namespace {

// Queue cost of a request frame: header and body.
constexpr std::uint64_t kRequestCost = kHeaderBytes + sizeof(wire::RendezvousBody);

// How long a pulling thread keeps driving the transport itself while no data
// comes, before it sleeps and lets the transport's thread read the rest.
constexpr auto kPullSpin = std::chrono::microseconds(200);

// How long a pull waits while reading is paused for want of buffers before
// it says why it may wait on (wait_pull).
constexpr auto kPausedPullNotice = std::chrono::seconds(1);

wire::MessageHeader frame_header(wire::Kind kind) {
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = kind;
  return h;
}

std::string hex(std::uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%016" PRIx64, v);
  return s;
}

void note_max(std::atomic<std::uint64_t> &peak, std::uint64_t v) {
  std::uint64_t cur = peak.load(std::memory_order_relaxed);
  while (v > cur && !peak.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

// ---- Sender ------------------------------------------------------------------

// Under c.mu: whether one more message of len bytes may be parked on c. A
// message larger than the byte bound still goes when nothing is parked.
bool TcpTransportImpl::has_parking(const Conn &c, std::uint64_t len) const {
  return c.parked_n < kMaxParkedMessages &&
         (c.parked_n == 0 || c.parked_bytes + len <= options_.max_parked_bytes);
}

// Under c.mu (held through `lock`): parks msg on c and queues its request,
// first waiting (flow control) for parking room and for queue room for the
// request, except on a driver of this transport (inside deliver), where
// send() calls this only when there is parking room. ROCL_OK: the block is
// the transport's. Otherwise the caller keeps msg and nothing was sent.
int TcpTransportImpl::send_rendezvous(Conn &c, std::unique_lock<std::mutex> &lock,
                                      rocl_gid_t destination, Message *msg, rocl_gid_t peer,
                                      std::string_view peer_address) {
  const std::uint64_t len = msg->length;
  const auto room = [&] { return has_parking(c, len) && has_room(c, kRequestCost); };
  if (!room() && t_driving != this) {
    (has_parking(c, len) ? send_waits_ : rndv_waits_).fetch_add(1, std::memory_order_relaxed);
    if (!wait_until(c, lock, room)) {
      return fail(ROCL_EPEER,
                  "tcp: peer %.*s (context 0x%llx) went away while send() waited for it to take "
                  "the rendezvous messages parked for it",
                  static_cast<int>(peer_address.size()), peer_address.data(),
                  static_cast<unsigned long long>(peer));
    }
  }
  if (!c.slots) {
    c.slots.reset(new (std::nothrow) ParkedSend[kMaxParkedMessages]);
    if (!c.slots) return fail(ROCL_ENOMEM, "tcp: out of memory parking a rendezvous message");
  }
  static_assert(kMaxParkedMessages <= 64, "free_slots is a 64-bit mask");
  const int i = __builtin_ctzll(c.free_slots);  // has_parking: parked_n < 64, so a bit is set
  ParkedSend &p = c.slots[i];
  const std::uint64_t cookie = next_id_.fetch_add(1, std::memory_order_relaxed);
  p.header = RndvKey{c.id, cookie};
  p.block = block_of(msg);
  p.data = static_cast<const std::byte *>(msg->data);
  p.length = len;
  p.hdr = frame_header(wire::Kind::kRendezvousRequest);
  p.hdr.source = msg->header.source;
  p.hdr.destination = destination;
  p.hdr.tag = msg->header.tag;
  p.hdr.domain = msg->header.domain;
  p.hdr.message_id = cookie;
  p.hdr.total_length = len;
  p.hdr.fragment_length = sizeof(wire::RendezvousBody);
  p.body = wire::RendezvousBody{0, cookie};
  RndvEnvelope *early = nullptr;
  try {
    early = c.parked.post_rendezvous_send(&p);
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
  c.free_slots &= ~(std::uint64_t{1} << i);
  ++c.parked_n;
  c.parked_bytes += len;
  OutMsg out{};
  out.block = nullptr;  // the block waits in the slot, not in the queue
  out.hdr = p.hdr;
  out.data = reinterpret_cast<const std::byte *>(&p.body);
  out.total = sizeof p.body;
  out.cost = kRequestCost;
  if (const int rc = enqueue(c, out); rc != ROCL_OK) {
    c.parked.cancel_send(&p);
    free_slot(c, p);
    return rc;
  }
  rndv_sends_.fetch_add(1, std::memory_order_relaxed);
  note_max(peak_parked_, c.parked_n);
  return ROCL_OK;
}

// Under c.mu: p's message is written or dropped; its slot is free again.
void TcpTransportImpl::free_slot(Conn &c, ParkedSend &p) {
  const auto i = static_cast<unsigned>(&p - c.slots.get());
  c.free_slots |= std::uint64_t{1} << i;
  --c.parked_n;
  c.parked_bytes -= p.length;
  p.block = nullptr;
}

// Under c.mu, c closing: every parked send fails (its block is finished as
// failed); the table stays closed. Sends whose data was queued are failed
// with the queue.
void TcpTransportImpl::fail_parked(Conn &c, bool count) {
  c.parked.close(ROCL_EPEER, [&](RndvEnvelope *e) {
    if (e == &c.reply) return;  // a reply that matched nothing, parked as a request
    auto *p = static_cast<ParkedSend *>(e);
    finish_block(p->block, false);
    p->block = nullptr;
    if (count) failed_sends_.fetch_add(1);
  });
  c.free_slots = ~std::uint64_t{0};
  c.parked_n = 0;
  c.parked_bytes = 0;
}

// Driver: a rendezvous reply's header (validated: no
// body) is in c.h. Matches it with its parked send, checks that every field
// answers that request, then queues the data (total_length = the length) or
// releases the block (total_length 0: dropped by the receiver). False: drop
// the connection (logged).
bool TcpTransportImpl::on_reply(Conn &c) {
  const wire::MessageHeader h = c.h;
  const std::string what = "tcp: rendezvous reply from " + c.peer_name + " for cookie " +
                           std::to_string(h.message_id) + ": ";
  std::lock_guard lock(c.mu);
  c.reply.header = RndvKey{c.id, h.message_id};
  RndvEnvelope *e = nullptr;
  try {
    e = c.parked.request_arrived(&c.reply);
  } catch (const std::bad_alloc &) {
    return protocol_error(what + "out of memory matching it; connection dropped");
  }
  if (e == nullptr) {
    // c.reply is parked in the requested queue now: the connection's close
    // takes it out again (fail_parked).
    return protocol_error(what + "message_id " + std::to_string(h.message_id) +
                          " names no rendezvous request waiting on this connection; "
                          "connection dropped");
  }
  auto &p = *static_cast<ParkedSend *>(e);
  std::string bad;
  if (h.total_length != 0 && h.total_length != p.length) {
    bad = "total_length " + std::to_string(h.total_length) + " is neither 0 (drop) nor " +
          std::to_string(p.length) + " (the request's)";
  } else if (h.source != p.hdr.destination) {
    bad = "source " + hex(h.source) + " is not the request's destination " + hex(p.hdr.destination);
  } else if (h.destination != p.hdr.source) {
    bad = "destination " + hex(h.destination) + " is not the request's source " + hex(p.hdr.source);
  } else if (h.tag != p.hdr.tag) {
    bad = "tag " + std::to_string(h.tag) + " is not the request's " + std::to_string(p.hdr.tag);
  } else if (h.domain != p.hdr.domain) {
    bad = "domain " + std::to_string(h.domain) + " is not the request's " +
          std::to_string(p.hdr.domain);
  }
  if (!bad.empty()) {
    finish_block(p.block, false);
    failed_sends_.fetch_add(1);
    free_slot(c, p);
    return protocol_error(what + bad + "; connection dropped");
  }
  if (h.total_length == 0) {  // dropped: no receive will ever take it
    finish_block(p.block, true);
    free_slot(c, p);
    return true;
  }
  OutMsg out{};
  out.block = p.block;
  out.hdr = p.hdr;
  out.hdr.kind = wire::Kind::kFragment;  // message_id = cookie: the data of that request
  out.data = p.data;
  out.total = p.length;
  out.cost = p.length + kHeaderBytes;
  out.parked = &p;
  if (enqueue(c, out) != ROCL_OK) {
    finish_block(p.block, false);
    failed_sends_.fetch_add(1);
    free_slot(c, p);
    return protocol_error(what + "out of memory queueing its data; connection dropped");
  }
  return true;
}

// ---- Receiver: the driver ----------------------------------------------------

// A rendezvous request's header (validated: a 16-byte body at offset 0) is
// in c.h, on the side that accepted, no message in progress: read its body.
bool TcpTransportImpl::start_request(Conn &c) {
  if (c.h.total_length == 0) {
    return protocol_error("tcp: frame from " + c.peer_name +
                          ": a rendezvous request with total_length 0 asks for nothing; "
                          "connection dropped");
  }
  c.rx = Rx::kRequestBody;
  c.direct = false;  // requests are small, and often come in a row
  return true;
}

// Takes a request's body from the stage (filled first if it holds less),
// checks it, then asks for the stub's block.
Step TcpTransportImpl::rx_request_body(Conn &c) {
  constexpr std::size_t kBody = sizeof(wire::RendezvousBody);
  if (staged(c) < kBody) return fill_stage(c, kBody);
  wire::RendezvousBody body;
  std::memcpy(&body, c.stage.get() + c.stage_pos, kBody);
  consume(c, kBody);
  const std::string what = "tcp: frame from " + c.peer_name + ": rendezvous request ";
  if (body.cookie != c.h.message_id) {
    protocol_error(what + "cookie " + std::to_string(body.cookie) +
                   " differs from its message_id " + std::to_string(c.h.message_id) +
                   "; connection dropped");
    return Step::kDrop;
  }
  if (body.address != 0) {
    protocol_error(what + "address " + hex(body.address) +
                   " is not 0 (tcp lends no memory); connection dropped");
    return Step::kDrop;
  }
  bool in_use;
  {
    std::lock_guard lock(rndv_mu_);
    in_use = rndv_in_.find(RndvKey{c.id, body.cookie}) != rndv_in_.end();
  }
  if (in_use) {
    protocol_error(what + "cookie " + std::to_string(body.cookie) +
                   " is already in use on this connection; connection dropped");
    return Step::kDrop;
  }
  if (!can_ever_fit(c.h.total_length)) {
    // Nobody here could ever pull it: tell the sender to let it go.
    log("tcp: a " + std::to_string(c.h.total_length) + "-byte rendezvous message from " +
        c.peer_name + " can never fit the buffer pool (ROCL_POOL_MAX); dropped");
    reply(c, c.h, 0);
    rndv_discards_.fetch_add(1, std::memory_order_relaxed);
    c.rx = Rx::kHeader;
    return Step::kMore;
  }
  c.rx = Rx::kNeedBlock;
  return Step::kMore;
}

// A block for the stub of the request in c.h.
Take TcpTransportImpl::take_stub(Conn &c) {
  BlockHeader *b = env_.pool != nullptr ? env_.pool->allocate(sizeof(Stub)) : nullptr;
  if (b == nullptr) return can_ever_fit(sizeof(Stub)) ? Take::kWait : Take::kNever;
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  c.stub_block = b;
  c.rx = Rx::kHeader;
  return Take::kGot;
}

// Records the request in c.h and delivers its stub (c is back in kHeader: a
// pull inside deliver may drive c further).
bool TcpTransportImpl::deliver_stub(Conn &c) {
  const wire::MessageHeader h = c.h;
  BlockHeader *b = c.stub_block;
  c.stub_block = nullptr;
  Stub st{this, c.id, h.message_id, {}};
  c.peer_name.copy(st.peer, sizeof st.peer - 1);
  std::memcpy(payload_of(b), &st, sizeof st);
  std::shared_ptr<Conn> self;
  {
    std::lock_guard lock(mu_);
    const auto it = all_.find(&c);
    if (it != all_.end()) self = it->second;
  }
  try {
    std::lock_guard lock(rndv_mu_);
    rndv_in_.emplace(RndvKey{c.id, h.message_id}, InRndv{h, self, nullptr, false});
  } catch (const std::bad_alloc &) {
    env_.pool->release(b, BlockState::kLibrary);
    log("tcp: out of memory recording a rendezvous message from " + c.peer_name + "; dropped");
    reply(c, h, 0);
    return true;
  }
  rndv_stubs_.fetch_add(1, std::memory_order_relaxed);
  hand_over(h.destination, arrived_stub(b, CoreHeader{h.source, h.tag, h.domain}, h.total_length),
            rx_waiter_, [&] { return "message from " + c.peer_name; });
  return true;
}

// A message's first kFragment frame is in c.h. If its message_id is the
// cookie of a request received on c, it is that request's data: accepted only
// for a registered pull and with the request's length and ids, and read
// straight into the pull's block. 0: not rendezvous data (a fragmented
// message of its own); 1: reading into the pull's block; -1: a bad frame
// (logged: drop the connection).
int TcpTransportImpl::start_pull_data(Conn &c) {
  const wire::MessageHeader &h = c.h;
  Pull *p = nullptr;
  wire::MessageHeader req{};
  std::string bad;
  {
    std::lock_guard lock(rndv_mu_);
    const auto it = rndv_in_.find(RndvKey{c.id, h.message_id});
    if (it == rndv_in_.end()) return 0;
    p = it->second.pull;
    req = it->second.request;
    if (p == nullptr) {
      bad = "no pull has asked for it";
    } else if (h.total_length != req.total_length) {
      bad = "total_length " + std::to_string(h.total_length) + " differs from the request's " +
            std::to_string(req.total_length);
    } else if (h.source != req.source || h.destination != req.destination || h.tag != req.tag ||
               h.domain != req.domain) {
      bad = "source, destination, tag or domain differ from the request's";
    } else {
      it->second.reading = true;  // the pull must now wait for this driver
    }
  }
  if (!bad.empty()) {
    protocol_error("tcp: frame from " + c.peer_name + ": data for rendezvous cookie " +
                   std::to_string(h.message_id) + ": " + bad + "; connection dropped");
    return -1;
  }
  c.rx_pull = p;
  c.rx_block = p->block;
  c.rx_at = p->into;
  c.first = h;
  c.direct = h.total_length >= kDirectBytes;
  c.rx_done = 0;
  c.frame_left = h.fragment_length;
  c.rx = Rx::kPayload;
  return 1;
}

// The pull's data is all in its block: complete it.
void TcpTransportImpl::finish_pull(Conn &c) {
  Pull *p = c.rx_pull;
  c.rx_pull = nullptr;
  c.rx_block = nullptr;
  c.rx_at = nullptr;
  {
    std::lock_guard lock(rndv_mu_);
    rndv_in_.erase(RndvKey{c.id, c.first.message_id});
    p->state.store(1, std::memory_order_release);  // last touch of p
  }
  rndv_cv_.notify_all();
}

// c is closing (under c.mu): forgets the requests received on it; the pulls
// waiting for their data fail.
void TcpTransportImpl::fail_pulls(Conn &c) {
  bool woke = false;
  {
    std::lock_guard lock(rndv_mu_);
    auto it = rndv_in_.lower_bound(RndvKey{c.id, 0});
    while (it != rndv_in_.end() && it->first.conn == c.id) {
      if (it->second.pull != nullptr) {
        it->second.pull->state.store(-1, std::memory_order_release);  // last touch
        woke = true;
      }
      it = rndv_in_.erase(it);
    }
  }
  if (woke) rndv_cv_.notify_all();
}

// ---- Receiver: the receiving thread ------------------------------------------

Stub TcpTransportImpl::stub_of(Message *stub) {
  Stub st;
  std::memcpy(&st, payload_of(block_of(stub)), sizeof st);
  return st;
}

void TcpTransportImpl::release_stub(Message *stub) {
  BlockHeader *b = block_of(stub);
  std::destroy_at(stub);
  env_.pool->release(b, BlockState::kLibrary);
}

// Queues a rendezvous reply for `request` on c: total = its length asks for
// the data, 0 drops it. ROCL_EPEER (no sentence) if c is closed.
int TcpTransportImpl::reply(Conn &c, const wire::MessageHeader &request, std::uint64_t total) {
  OutMsg out{};
  out.block = nullptr;
  out.hdr = frame_header(wire::Kind::kRendezvousReply);
  out.hdr.source = request.destination;
  out.hdr.destination = request.source;
  out.hdr.tag = request.tag;
  out.hdr.domain = request.domain;
  out.hdr.message_id = request.message_id;
  out.hdr.total_length = total;
  out.data = nullptr;
  out.total = 0;
  out.cost = kHeaderBytes;
  std::lock_guard lock(c.mu);
  if (c.dead) return ROCL_EPEER;
  return enqueue(c, out);
}

// Forgets the request behind st and tells its sender to release the message
// (a drop reply). Nothing to do if its connection is gone: the sender failed
// the message itself.
void TcpTransportImpl::let_go(const Stub &st) {
  std::shared_ptr<Conn> c;
  wire::MessageHeader request{};
  {
    std::lock_guard lock(rndv_mu_);
    const auto it = rndv_in_.find(RndvKey{st.conn, st.cookie});
    if (it == rndv_in_.end() || it->second.pull != nullptr) return;
    request = it->second.request;
    c = it->second.conn.lock();
    rndv_in_.erase(it);
  }
  if (c == nullptr) return;
  rndv_discards_.fetch_add(1, std::memory_order_relaxed);
  reply(*c, request, 0);
}

void TcpTransportImpl::discard_impl(Message *stub) noexcept {
  const Stub st = stub_of(stub);
  release_stub(stub);
  let_go(st);
}

// Rendezvous, receiver side (contract in transport.hpp): the real block is
// allocated here, registered for (connection, cookie), the sender is asked
// for the data, and the driver reads it straight into the block.
int TcpTransportImpl::pull_impl(Message *stub, Message **out) noexcept {
  const Stub st = stub_of(stub);
  const CoreHeader header = stub->header;
  const std::size_t len = stub->length;
  BlockHeader *b = env_.pool != nullptr ? env_.pool->allocate(len) : nullptr;
  if (b == nullptr) {  // the stub stays, for the core to queue again
    const std::string why = last_error();
    *out = stub;
    return fail(ROCL_ENOMEM, "tcp: no pool block for a %zu-byte rendezvous message from %s: %s",
                len, st.peer, why.c_str());
  }
  release_stub(stub);
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  Pull p(b, payload_of(b));
  if (const int rc = pull_data(st, len, p); rc != ROCL_OK) {
    env_.pool->release(b, BlockState::kLibrary);
    return rc;
  }
  Message *m = message_in(b);
  m->header = header;
  m->data = payload_of(b);
  m->length = len;
  *out = m;
  return ROCL_OK;
}

// Straight into the receive's memory (the driver reads the socket there:
// no block, no second copy). A receive that cuts the message takes it
// whole into memory of its own first, then copies what fits.
int TcpTransportImpl::pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept {
  const std::size_t len = stub->length;
  const Stub st = stub_of(stub);
  release_stub(stub);
  if (cap >= len) {
    Pull p(nullptr, static_cast<std::byte *>(dst));
    return pull_data(st, len, p);
  }
  std::unique_ptr<std::byte[]> whole(new (std::nothrow) std::byte[len]);
  if (whole == nullptr) {
    let_go(st);
    return fail(ROCL_ENOMEM,
                "tcp: out of memory for a %zu-byte rendezvous message from %s cut to %zu", len,
                st.peer, cap);
  }
  Pull p(nullptr, whole.get());
  const int rc = pull_data(st, len, p);
  if (rc == ROCL_OK && cap != 0) std::memcpy(dst, whole.get(), cap);
  return rc;
}

// Registers p for the request behind st, asks the sender for its data and
// waits until the driver has read it to p.into. ROCL_OK, or the code of
// fail() naming the peer (p's memory is then the caller's again).
int TcpTransportImpl::pull_data(const Stub &st, std::size_t len, Pull &p) {
  std::shared_ptr<Conn> c;
  wire::MessageHeader request{};
  bool registered = false;
  {
    std::lock_guard lock(rndv_mu_);
    const auto it = rndv_in_.find(RndvKey{st.conn, st.cookie});
    if (it != rndv_in_.end() && it->second.pull == nullptr) {
      it->second.pull = &p;
      request = it->second.request;
      c = it->second.conn.lock();
      registered = true;
    }
  }
  if (!registered) {
    return fail(ROCL_EPEER,
                "tcp: peer %s went away before its %zu-byte rendezvous message could be pulled",
                st.peer, len);
  }
  // From here the driver completes or fails p, unless the reply cannot be
  // queued for want of memory: then p is taken back (no data can come).
  const int rc = c != nullptr ? reply(*c, request, request.total_length) : ROCL_ENOMEM;
  if (rc != ROCL_OK && rc != ROCL_EPEER) {
    bool took_back = false;
    {
      std::lock_guard lock(rndv_mu_);
      const auto it = rndv_in_.find(RndvKey{st.conn, st.cookie});
      if (it != rndv_in_.end() && it->second.pull == &p && !it->second.reading) {
        rndv_in_.erase(it);
        took_back = true;
      }
    }
    if (took_back) {
      return fail(rc, "tcp: could not ask %s for a %zu-byte rendezvous message: out of memory",
                  st.peer, len);
    }
  }
  c.reset();
  wait_pull(p, st, len);
  if (p.state.load(std::memory_order_acquire) != 1) {
    return fail(ROCL_EPEER,
                "tcp: peer %s went away while its %zu-byte rendezvous message was being pulled",
                st.peer, len);
  }
  rndv_pulls_.fetch_add(1, std::memory_order_relaxed);
  return ROCL_OK;
}

// Waits until the driver has read p's data or failed p. Inside deliver on a
// driver of this transport, this thread holds the receive lock, so it reads
// the data itself (nested drives). Elsewhere it drives the transport itself
// while data comes (poll_begin/progress/poll_end, as a waiting receiver
// does), then sleeps until the driver (the transport's thread) signals.
//
// A pull can wait for long: its data comes on its connection behind what
// the sender wrote before it, and if the pool has no block for one of those
// messages (the application holds its buffers, ROCL_POOL_MAX), reading is
// paused until buffers come back. If they never do (every buffer is in an
// unexpected message that only a later receive takes), nothing moves: say
// so once, naming the cure, rather than wait in silence.
void TcpTransportImpl::wait_pull(Pull &p, const Stub &st, std::size_t len) {
  const auto done = [&p] { return p.state.load(std::memory_order_acquire) != 0; };
  if (t_driving == this) {
    while (!done()) {
      if (drive_locked() == 0 && !done()) {
        epoll_event ev;
        ::epoll_wait(epoll_fd_, &ev, 1, 1);  // a peek: sleep until something is ready
      }
    }
    return;
  }
  poll_begin();
  auto idle_since = Clock::now();
  bool busy = false;
  for (unsigned i = 1; !done(); ++i) {
    if (progress(nullptr) > 0) {
      busy = true;
    } else {
      platform::cpu_relax();
    }
    // Reading the clock costs about as much as a poll; check now and then.
    if ((i & 15u) == 0) {
      const auto now = Clock::now();
      if (busy) {
        idle_since = now;
        busy = false;
      } else if (now - idle_since > kPullSpin) {
        break;
      }
    }
  }
  const bool got = done();
  poll_end(!got);
  if (got) return;
  const auto since = Clock::now();
  bool told = false;
  std::unique_lock lock(rndv_mu_);
  while (!done()) {
    rndv_cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (told || done() || held_.load(std::memory_order_relaxed) == 0 ||
        Clock::now() - since < kPausedPullNotice) {
      continue;
    }
    told = true;
    lock.unlock();
    log("tcp: a receive has waited 1 s for the data of a " + std::to_string(len) +
        "-byte rendezvous message from " + st.peer +
        " while reading is paused for want of buffers (the pool is full, ROCL_POOL_MAX): "
        "that data may come behind messages no receive has taken yet, and then waits until "
        "the application returns buffers or takes those messages; raise ROCL_POOL_MAX if "
        "neither happens");
    lock.lock();
  }
}

}  // namespace rocl::impl::tcp::detail
