// tcp_rendezvous_receive.cpp - rendezvous over TCP, the receiver's side
// (tcp_rendezvous_receive.hpp).
#include "transport/tcp/tcp_rendezvous_receive.hpp"

#include <cstring>
#include <new>

#include "rocl/platform/cpu.hpp"
#include "status/status.hpp"
#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_driver.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_outbox.hpp"
#include "transport/tcp/tcp_paused.hpp"
#include "transport/tcp/tcp_poller.hpp"

namespace rocl::impl::tcp::detail {
namespace {

// How long a pulling thread keeps driving the transport itself while no data
// comes, before it sleeps and lets the transport's thread read the rest.
constexpr auto kPullSpin = std::chrono::microseconds(200);

// How long a pull waits while reading is paused for want of buffers before
// it says why it may wait on (sleep_until_done).
constexpr auto kPausedPullNotice = std::chrono::seconds(1);

}  // namespace

// ---- The driver ----------------------------------------------------------------

bool RendezvousReceiver::on_request(Conn &c) {
  if (c.h.total_length == 0) {
    return shared_.protocol_error("tcp: frame from " + c.peer_name +
                                  ": a rendezvous request with total_length 0 asks for nothing; "
                                  "connection dropped");
  }
  c.rx = Rx::kRequestBody;
  c.direct = false;  // requests are small, and often come in a row
  return true;
}

Step RendezvousReceiver::on_request_body(Conn &c, const wire::RendezvousBody &body) {
  const std::string what = "tcp: frame from " + c.peer_name + ": rendezvous request ";
  if (body.cookie != c.h.message_id) {
    shared_.protocol_error(what + "cookie " + std::to_string(body.cookie) +
                           " differs from its message_id " + std::to_string(c.h.message_id) +
                           "; connection dropped");
    return Step::kDrop;
  }
  if (body.address != 0) {
    shared_.protocol_error(what + "address " + hex(body.address) +
                           " is not 0 (tcp lends no memory); connection dropped");
    return Step::kDrop;
  }
  bool in_use;
  {
    std::lock_guard lock(mu_);
    in_use = in_.find(RndvKey{c.id, body.cookie}) != in_.end();
  }
  if (in_use) {
    shared_.protocol_error(what + "cookie " + std::to_string(body.cookie) +
                           " is already in use on this connection; connection dropped");
    return Step::kDrop;
  }
  if (!shared_.can_ever_fit(c.h.total_length)) {
    // Nobody here could ever pull it: tell the sender to let it go.
    shared_.log("tcp: a " + std::to_string(c.h.total_length) + "-byte rendezvous message from " +
                c.peer_name + " can never fit the buffer pool (ROCL_POOL_MAX); dropped");
    reply(c, c.h, 0);
    shared_.counters.rndv_discards.fetch_add(1, std::memory_order_relaxed);
    c.rx = Rx::kHeader;
    return Step::kMore;
  }
  c.rx = Rx::kNeedBlock;
  return Step::kMore;
}

Take RendezvousReceiver::take_stub(Conn &c) {
  BlockHeader *b = shared_.env.pool != nullptr ? shared_.env.pool->allocate(sizeof(Stub)) : nullptr;
  if (b == nullptr) return shared_.can_ever_fit(sizeof(Stub)) ? Take::kWait : Take::kNever;
  b->state.store(BlockState::kLibrary, std::memory_order_relaxed);
  c.stub_block = b;
  c.rx = Rx::kHeader;
  return Take::kGot;
}

Message *RendezvousReceiver::stub_for(Conn &c) {
  const wire::MessageHeader h = c.h;
  BlockHeader *b = c.stub_block;
  c.stub_block = nullptr;
  Stub st{&shared_.transport, c.id, h.message_id, {}};
  c.peer_name.copy(st.peer, sizeof st.peer - 1);
  std::memcpy(payload_of(b), &st, sizeof st);
  std::shared_ptr<Conn> self = table_.share(c);
  try {
    std::lock_guard lock(mu_);
    in_.emplace(RndvKey{c.id, h.message_id}, InRndv{h, self, nullptr, false});
  } catch (const std::bad_alloc &) {
    shared_.env.pool->release(b, BlockState::kLibrary);
    shared_.log("tcp: out of memory recording a rendezvous message from " + c.peer_name +
                "; dropped");
    reply(c, h, 0);
    return nullptr;
  }
  shared_.counters.rndv_stubs.fetch_add(1, std::memory_order_relaxed);
  return TcpTransportImpl::arrived_stub(b, CoreHeader{h.source, h.tag, h.domain}, h.total_length);
}

int RendezvousReceiver::start_data(Conn &c) {
  const wire::MessageHeader &h = c.h;
  Pull *p = nullptr;
  wire::MessageHeader req{};
  std::string bad;
  {
    std::lock_guard lock(mu_);
    const auto it = in_.find(RndvKey{c.id, h.message_id});
    if (it == in_.end()) return 0;
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
    shared_.protocol_error("tcp: frame from " + c.peer_name + ": data for rendezvous cookie " +
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

void RendezvousReceiver::finish_pull(Conn &c) {
  Pull *p = c.rx_pull;
  c.rx_pull = nullptr;
  c.rx_block = nullptr;
  c.rx_at = nullptr;
  {
    std::lock_guard lock(mu_);
    in_.erase(RndvKey{c.id, c.first.message_id});
    p->state.store(1, std::memory_order_release);  // last touch of p
  }
  cv_.notify_all();
}

void RendezvousReceiver::fail_pulls(Conn &c) {
  bool woke = false;
  {
    std::lock_guard lock(mu_);
    auto it = in_.lower_bound(RndvKey{c.id, 0});
    while (it != in_.end() && it->first.conn == c.id) {
      if (it->second.pull != nullptr) {
        it->second.pull->state.store(-1, std::memory_order_release);  // last touch
        woke = true;
      }
      it = in_.erase(it);
    }
  }
  if (woke) cv_.notify_all();
}

// ---- The receiving thread ------------------------------------------------------

Stub RendezvousReceiver::stub_of(Message *stub) {
  Stub st;
  std::memcpy(&st, payload_of(block_of(stub)), sizeof st);
  return st;
}

void RendezvousReceiver::release_stub(Message *stub) {
  BlockHeader *b = block_of(stub);
  std::destroy_at(stub);
  shared_.env.pool->release(b, BlockState::kLibrary);
}

// Queues a rendezvous reply for `request` on c: total = its length asks for
// the data, 0 drops it. ROCL_EPEER (no sentence) if c is closed.
int RendezvousReceiver::reply(Conn &c, const wire::MessageHeader &request, std::uint64_t total) {
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
  return outbox_.enqueue(c, out);
}

// Forgets the request behind st and tells its sender to release the message
// (a drop reply). Nothing to do if its connection is gone: the sender failed
// the message itself.
void RendezvousReceiver::let_go(const Stub &st) {
  std::shared_ptr<Conn> c;
  wire::MessageHeader request{};
  {
    std::lock_guard lock(mu_);
    const auto it = in_.find(RndvKey{st.conn, st.cookie});
    if (it == in_.end() || it->second.pull != nullptr) return;
    request = it->second.request;
    c = it->second.conn.lock();
    in_.erase(it);
  }
  if (c == nullptr) return;
  shared_.counters.rndv_discards.fetch_add(1, std::memory_order_relaxed);
  reply(*c, request, 0);
}

void RendezvousReceiver::discard(Message *stub) {
  const Stub st = stub_of(stub);
  release_stub(stub);
  let_go(st);
}

// The real block is allocated here, registered for (connection, cookie),
// the sender is asked for the data, and the driver reads it straight into
// the block.
int RendezvousReceiver::pull(Message *stub, Message **out) {
  const Stub st = stub_of(stub);
  const CoreHeader header = stub->header;
  const std::size_t len = stub->length;
  BlockHeader *b = shared_.env.pool != nullptr ? shared_.env.pool->allocate(len) : nullptr;
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
    shared_.env.pool->release(b, BlockState::kLibrary);
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
int RendezvousReceiver::pull_into(Message *stub, void *dst, std::size_t cap) {
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
int RendezvousReceiver::pull_data(const Stub &st, std::size_t len, Pull &p) {
  std::shared_ptr<Conn> c;
  wire::MessageHeader request{};
  bool registered = false;
  {
    std::lock_guard lock(mu_);
    const auto it = in_.find(RndvKey{st.conn, st.cookie});
    if (it != in_.end() && it->second.pull == nullptr) {
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
      std::lock_guard lock(mu_);
      const auto it = in_.find(RndvKey{st.conn, st.cookie});
      if (it != in_.end() && it->second.pull == &p && !it->second.reading) {
        in_.erase(it);
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
  shared_.counters.rndv_pulls.fetch_add(1, std::memory_order_relaxed);
  return ROCL_OK;
}

// Waits until the driver has read p's data or failed p. Inside deliver on a
// driver of this transport, this thread holds the receive lock, so it reads
// the data itself (nested drives). Elsewhere it drives the transport itself
// while data comes (poll_begin/progress/poll_end, as a waiting receiver
// does), then sleeps until the driver (the transport's thread) signals.
void RendezvousReceiver::wait_pull(Pull &p, const Stub &st, std::size_t len) {
  if (shared_.drives_here()) {
    drive_until_done(p);
    return;
  }
  if (!spin_until_done(p)) sleep_until_done(p, st, len);
}

void RendezvousReceiver::drive_until_done(Pull &p) {
  const auto done = [&p] { return p.state.load(std::memory_order_acquire) != 0; };
  while (!done()) {
    if (driver_.drive_locked() == 0 && !done()) poller_.wait_briefly();
  }
}

// Drives the transport while data comes; true if p is done. Gives up after
// kPullSpin without progress.
bool RendezvousReceiver::spin_until_done(Pull &p) {
  const auto done = [&p] { return p.state.load(std::memory_order_acquire) != 0; };
  driver_.poll_begin();
  auto idle_since = Clock::now();
  bool busy = false;
  for (unsigned i = 1; !done(); ++i) {
    if (driver_.progress(nullptr) > 0) {
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
  driver_.poll_end(!got);
  return got;
}

// Sleeps until the driver signals p. A pull can wait for long: its data
// comes on its connection behind what the sender wrote before it, and if
// the pool has no block for one of those messages (the application holds
// its buffers, ROCL_POOL_MAX), reading is paused until buffers come back.
// If they never do (every buffer is in an unexpected message that only a
// later receive takes), nothing moves: say so once, naming the cure, rather
// than wait in silence.
void RendezvousReceiver::sleep_until_done(Pull &p, const Stub &st, std::size_t len) {
  const auto done = [&p] { return p.state.load(std::memory_order_acquire) != 0; };
  const auto since = Clock::now();
  bool told = false;
  std::unique_lock lock(mu_);
  while (!done()) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (told || done() || paused_.held() == 0 || Clock::now() - since < kPausedPullNotice) {
      continue;
    }
    told = true;
    lock.unlock();
    shared_.log("tcp: a receive has waited 1 s for the data of a " + std::to_string(len) +
                "-byte rendezvous message from " + st.peer +
                " while reading is paused for want of buffers (the pool is full, "
                "ROCL_POOL_MAX): that data may come behind messages no receive has taken yet, "
                "and then waits until the application returns buffers or takes those messages; "
                "raise ROCL_POOL_MAX if neither happens");
    lock.lock();
  }
}

}  // namespace rocl::impl::tcp::detail
