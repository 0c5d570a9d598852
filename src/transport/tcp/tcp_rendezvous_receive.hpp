// tcp_rendezvous_receive.hpp - rendezvous over TCP, the receiver's side
// (design: "Rendezvous" in tcp_transport.hpp; frames: docs/protocol.md,
// "TCP connections"). On the driver, a request becomes a stub delivered to
// the sink and is recorded by {connection, cookie}; a pull on the
// receiving thread registers its memory there, replies "send it" and
// waits (driving the transport itself a while) until the driver has read
// the data straight into that memory; discard() replies "drop".
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable;
class Driver;
class Outbox;
class PausedReads;
class Poller;

// What a stub's payload holds. `transport` first, as rendezvous_transport()
// expects.
struct Stub {
  Transport *transport;
  std::uint64_t conn;    // Conn::id of the connection the request came on
  std::uint64_t cookie;  // the request's cookie
  char peer[40];         // the sender's "ip:port", for sentences
};

// A pull waiting for its data. Lives on the pulling thread's stack; the
// driver reads the data into `into` (straight from the socket, but for what
// its connection's stage already held), then sets state (under the
// receiver's lock) as its last touch.
struct Pull {
  Pull(BlockHeader *b, std::byte *to) : block(b), into(to) {}
  BlockHeader *block;         // nullptr: a pull into the caller's memory (pull_into)
  std::byte *into;            // where the data goes: block's payload, or that memory
  std::atomic<int> state{0};  // 0 waiting, 1 done, -1 the connection died
};

// A request received, from its stub's delivery until its data is in or its
// stub is discarded (or the connection dies).
struct InRndv {
  wire::MessageHeader request;  // validated: source, destination, tag, domain, total_length
  std::weak_ptr<Conn> conn;
  Pull *pull = nullptr;  // registered by pull(): the data may come
  bool reading = false;  // the driver reads the data into pull's block
};

class RendezvousReceiver {
 public:
  RendezvousReceiver(Shared &shared, ConnTable &table, Outbox &outbox, Driver &driver,
                     Poller &poller, PausedReads &paused)
      : shared_(shared),
        table_(table),
        outbox_(outbox),
        driver_(driver),
        poller_(poller),
        paused_(paused) {}

  // ---- The driver ----------------------------------------------------------
  // A request's header (validated: a 16-byte body at offset 0) is in c.h,
  // no message in progress: its body is read next. False: a bad one
  // (logged: drop the connection).
  bool on_request(Conn &c);
  // The request's body: checked; then its stub needs a block (kNeedBlock),
  // or, for a message that can never fit the pool, the sender is told to
  // drop it at once.
  Step on_request_body(Conn &c, const wire::RendezvousBody &body);
  // A block for the stub of the request in c.h.
  Take take_stub(Conn &c);
  // The stub of the request in c.h, which is recorded (c is back in
  // kHeader); nullptr if it could not be (logged, the sender let go).
  Message *stub_for(Conn &c);
  // A message's first kFragment frame is in c.h. If its message_id is the
  // cookie of a request received on c, it is that request's data: accepted
  // only for a registered pull and with the request's length and ids, and
  // read straight into the pull's memory. 0: not rendezvous data (a
  // fragmented message of its own); 1: reading into the pull's memory; -1:
  // a bad frame (logged: drop the connection).
  int start_data(Conn &c);
  // The pull's data is all in: complete it.
  void finish_pull(Conn &c);
  // c is closing (under c.mu): forgets the requests received on it; the
  // pulls waiting for their data fail.
  void fail_pulls(Conn &c);

  // ---- The receiving thread (Transport::pull, pull_into, discard) -------
  int pull(Message *stub, Message **out);
  int pull_into(Message *stub, void *dst, std::size_t cap);
  void discard(Message *stub);

 private:
  static Stub stub_of(Message *stub);
  void release_stub(Message *stub);
  int reply(Conn &c, const wire::MessageHeader &request, std::uint64_t total);
  void let_go(const Stub &st);
  int pull_data(const Stub &st, std::size_t len, Pull &p);
  void wait_pull(Pull &p, const Stub &st, std::size_t len);
  void drive_until_done(Pull &p);
  bool spin_until_done(Pull &p);
  void sleep_until_done(Pull &p, const Stub &st, std::size_t len);

  Shared &shared_;
  ConnTable &table_;
  Outbox &outbox_;
  Driver &driver_;
  Poller &poller_;
  PausedReads &paused_;
  std::mutex mu_;               // in_ and every Pull::state
  std::condition_variable cv_;  // a Pull::state changed
  std::map<RndvKey, InRndv> in_;
};

}  // namespace rocl::impl::tcp::detail
