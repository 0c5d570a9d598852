// transport.hpp - the one interface every network of rocl implements, and
// what the core gives a transport. One folder per implementation
// (src/transport/<name>/), listed once in registry.cpp.
//
// Model (ToCL/RoCL): one end-point per process per transport, shared by all
// threads; connections to peer contexts are made lazily on the first send
// and kept; arrivals are handed to the core's MessageSink.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "config/options.hpp"
#include "message/message.hpp"

namespace rocl::impl {

class MessageSink;

// A thread that drives a transport while it waits for a receive (caller
// progress) says so: it passes a Waiter down progress(), and the transport
// hands it on to the MessageSink with every arrival of that call, so that
// both decide knowing whose wait this is. A transport's own thread, and a
// caller that waits for no receive (a send's completion, a probe), pass
// nullptr. Made and owned by the sink (the core), which may extend it; it
// lives for the duration of the call it is passed to.
struct Waiter {
  // The sink that made it: a sink reads what it added only in its own.
  const MessageSink *sink = nullptr;
  // The local resource the receive waits on.
  rocl_gid_t gid = ROCL_NULL_GID;
  // The receive takes its message's block (a zero-copy receive), so a
  // message for gid is best delivered as a block: the receive it meets
  // first is most likely this one, which declines bytes (deliver_bytes).
  bool takes_block = false;
  // The waiting thread's next receives take their messages at an input's
  // front themselves (Transport::take_arrived): progress() then stops at
  // the first whole message instead of also delivering those behind it
  // into the mailbox, where the next receives would take them back out
  // under its lock.
  bool takes_arrived = false;

  // Whether a message for `destination` is better left a block.
  bool wants_block_for(rocl_gid_t destination) const noexcept {
    return takes_block && destination == gid;
  }
};

// The core's side of a transport: where arrived messages go.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Takes an arrived message (its block in state kLibrary, msg->data and
  // msg->length set, header filled) for the local resource `destination`.
  // Returns ROCL_OK: ownership moved to the core. Otherwise the caller keeps
  // the message: ROCL_EBADGID no such resource here, ROCL_EDELETED it is
  // being deleted, ROCL_ENOMEM no memory to queue it (refusal() words it).
  // Thread safe; takes only the destination mailbox's lock; never blocks,
  // except for an unknown destination while a registration of this process
  // is in progress (at most one directory round trip), so that a message
  // for a resource a peer has just found in the directory is not refused.
  // `waiter`: the caller whose progress() brought msg, or nullptr.
  virtual int deliver(rocl_gid_t destination, Message *msg, const Waiter *waiter) noexcept = 0;
  // An arrived message whose `length` bytes are still where they arrived
  // (`bytes`, in the transport's memory): if the receive posted earliest at
  // the local resource `destination` that matches `header` has memory of
  // its own, copies the bytes there (cut to fit), completes that receive
  // and returns true: the message needs no block. Otherwise (none posted or
  // matching, a zero-copy receive first, an unknown or closing resource)
  // false and nothing changed: make a message and deliver() it. Thread
  // safe; never blocks (an unknown resource is left to deliver()).
  // (Not virtual, so that a message the waiter wants as a block costs no
  // indirect call on a zero-copy ping-pong's one-way path.)
  bool deliver_bytes(rocl_gid_t destination, const CoreHeader &header, const void *bytes,
                     std::size_t length, const Waiter *waiter) noexcept {
    if (waiter != nullptr && waiter->wants_block_for(destination)) return false;
    const ByteRange piece{bytes, length};
    return deliver_pieces(destination, header, &piece, 1, length, waiter);
  }
  // deliver_bytes for a message whose bytes lie in `count` pieces (in
  // order; their lengths add up to `length`), e.g. the fragments of a
  // message that is whole in a ring: copied one after the other into the
  // receive's memory, cut to fit. Same contract otherwise.
  struct ByteRange {
    const void *bytes;
    std::size_t length;
  };
  virtual bool deliver_pieces(rocl_gid_t destination, const CoreHeader &header,
                              const ByteRange *pieces, int count, std::size_t length,
                              const Waiter *waiter) noexcept {
    (void)destination, (void)header, (void)pieces, (void)count, (void)length, (void)waiter;
    return false;
  }
  // A hint, before a transport gathers the pieces of a message (which costs
  // reads of its ring): false if deliver_pieces() for `destination` would
  // most likely say no. Thread safe, cheap, never blocks.
  virtual bool may_take_pieces(rocl_gid_t destination, const Waiter *waiter) const noexcept {
    (void)destination, (void)waiter;
    return false;
  }
  // Called by a transport's own thread after a round of progress, outside
  // its locks: the core sends what deliver() could not send from under
  // them (acknowledgements of matched messages, ROCL_FLAG_ACK). Cheap when
  // there is nothing (one load).
  virtual void progressed() noexcept {}
};

// What a transport's log says of a message deliver() refused with rc, before
// the destination gid: "for unknown resource 0x...".
inline const char *refusal(int rc) noexcept {
  switch (rc) {
    case ROCL_EDELETED:
      return "resource being deleted";
    case ROCL_ENOMEM:
      return "resource (out of memory queuing it)";
    default:
      return "unknown resource";
  }
}

class JobSecret;

// What a transport is constructed with. Everything outlives the transport.
struct TransportEnv {
  MessageSink *sink;
  std::uint64_t instance;             // unique per context instance in this process
  BufferPool *pool = nullptr;         // where arriving messages are received
  const JobSecret *secret = nullptr;  // proved on every connection (nullptr: no job)
  // Messages of at least this many bytes go by rendezvous where the
  // transport has a single-copy path (0: never). ROCL_RNDV_THRESHOLD.
  std::size_t rendezvous_threshold = 0;
  // Every option's value (the core's and each transport's rows; see
  // TransportEntry::options): a transport reads its own rows here when it
  // is made. nullptr: the defaults (a transport made alone, in a test).
  const OptionValues *options = nullptr;
  // Linger at shutdown (ROCL_LINGER_MS; the core passes it, 0 here so that
  // a bare transport closes at once): a transport whose accepted messages
  // may still be at the sender when it is destroyed (queued bytes, parked
  // rendezvous messages) keeps delivering them from its destructor until
  // its peers have them, are gone, or this many milliseconds have passed;
  // then it drops what is left and says so on its log (one sentence per
  // peer naming it, the messages and the bytes). 0: drop at once.
  std::uint32_t linger_ms = 0;
  // How long a thread of the transport that waits for its peer (a sender
  // waiting for room) spins before it sleeps, in microseconds
  // (ROCL_SPIN_US: 0 on oversubscribed machines, where a spinner takes the
  // cpu from the one it waits for).
  std::uint32_t spin_us = 100;
  // Which of the transport's rails this end-point is (TransportEntry::
  // rail_option): 0 for the first (and usually only) one, whose name is
  // the entry's; rail k > 0 is named "<name>.<k+1>" ("tcp.2"), and so is
  // the directory attribute of its address.
  unsigned rail = 0;
};

// What a transport can do beyond the required interface. Declared by the
// implementation while it is made (constructor or set-up, before its
// factory returns) and fixed after: the core reads it once, when it starts
// the transport or resolves a route, never per message.
struct TransportCaps {
  // send() takes lent messages (is_lent: the bytes stay in the
  // application's memory until the block is finished). Without it the
  // core copies them into a pool block first.
  bool takes_lent_memory = false;
  // The largest message send_bytes() takes (0: it takes none).
  std::size_t bytes_send_limit = 0;
  // Everything that arrives comes to an input's front where take_arrived
  // sees it, so a waiting receive may poll with take_arrived alone until
  // its *left says to call progress(); take_arrived is also worth a look
  // before a receive posts.
  bool takes_arrived = false;
  // Delivers rendezvous stubs (Message::rendezvous): pull() and discard()
  // then work.
  bool makes_stubs = false;
  // pull_into() works (a stub's payload straight into caller memory).
  bool pulls_into_memory = false;
  // How often a spinning caller that also polls other transports should
  // call progress() here: once every progress_stride rounds of its loop.
  // A transport whose progress() costs a system call (tcp: epoll_wait)
  // asks for a stride > 1 so that it does not delay arrivals on one
  // polled by reading memory (shm). Alone, it is polled every round.
  // Rounded up to a power of two.
  unsigned progress_stride = 1;
  // Where a caller whose spin is over may sleep itself instead of handing
  // arrivals to the transport's thread (poll_end(true)); null words:
  // nowhere. The caller ends polling with poll_end(false) (the lease stays:
  // the thread is not woken), raises *wanted (a seq_cst store), reads
  // *word, polls once more (progress(): what was published before it
  // raised the flag), then sleeps while *word keeps that value and its own
  // completion is pending (futex_waitv), and polls again once woken. A
  // peer that publishes for this end-point and finds *wanted raised lowers
  // it (exchange: one wake per sleep), bumps *word and wakes all that
  // sleep on it (Dekker with the flag). An arrival then wakes the caller
  // itself, with no thread of the transport in between. shared: the words
  // are in memory shared with the peers (a shared futex).
  struct CallerWake {
    std::atomic<std::uint32_t> *word = nullptr;
    std::atomic<std::uint32_t> *wanted = nullptr;
    bool shared = false;
  } caller_wake;
};

// The longest address a transport may publish (a UCX worker's address with
// several devices takes about a kilobyte as text).
constexpr std::size_t kMaxAddressBytes = 2048;

// One line of a transport's log (no newline), from any thread. Default:
// stderr with a "rocl: " prefix.
using TransportLog = std::function<void(const std::string &)>;

// The base of every transport (LCI's network style): public members are
// non-virtual and carry the contracts; an implementation overrides the
// protected *_impl hooks, of which address_impl, reaches_impl, send_impl
// and progress_impl are required and the others belong to a capability
// (TransportCaps) or have a sound default. The base owns what every
// transport shares: its environment, name, capabilities and log, the
// hand-over of arrivals to the sink (refusals logged, counted and dropped),
// the finish of sent blocks and the layout of rendezvous stubs.
class Transport {
 public:
  // Closes the end-point. Messages send() accepted are delivered first if
  // they can be (see TransportEnv::linger_ms): the destructor may block for
  // up to about linger_ms. The core destroys transports only after every
  // caller has left (no send/progress/pull runs concurrently).
  virtual ~Transport() = default;
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;

  // Short name as in ROCL_TRANSPORTS ("inproc", "shm", "tcp", "ucx").
  std::string_view name() const noexcept { return name_; }
  const TransportCaps &caps() const noexcept { return caps_; }

  // This end-point's address, published in the directory as the context
  // attribute "addr.<name>". Stable for the transport's life; at most
  // kMaxAddressBytes.
  std::string address() const { return address_impl(); }

  // Whether this transport can reach a context that published `address`
  // (e.g. inproc only reaches its own process, shm only its own host).
  bool reaches(std::string_view address) const noexcept { return reaches_impl(address); }

  // Posts a message to resource `destination` of peer context `peer` whose
  // address is `peer_address`, connecting on first use. Ownership of msg's
  // block (state kLibrary) moves to the transport on ROCL_OK; the transport
  // finishes it after transmission (finish_sent: back to the pool if the
  // block is marked return_after_send, else its send_status says
  // kSent/kFailed). msg->rendezvous set by the core: it prefers rendezvous
  // for this message (its own copy of caller memory,
  // ROCL_RNDV_COPY_THRESHOLD): a transport whose rendezvous lets a receive
  // copy straight into its memory takes it as if msg->length reached
  // rendezvous_threshold (unless that is 0); others ignore it.
  // is_lent(msg) (only with caps().takes_lent_memory): msg->data is the
  // application's memory, outside the pool, and the block
  // (return_after_send false) holds only the envelope. The bytes stay valid
  // and unchanged until the transport finishes the block, so it may let
  // the receiver read them there while the message is in flight, or copy
  // them before finishing. Either way it finishes the block exactly once,
  // also on failure after ROCL_OK. On failure (negative code) the caller
  // keeps msg and nothing was sent. Thread safe. A busy link queues the
  // message, but what one sender may queue or lend to one receiver is
  // bounded (flow control): beyond it send() waits until the receiver has
  // taken enough, and returns ROCL_EPEER naming the peer if the peer dies
  // meanwhile.
  int send(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
           Message *msg) noexcept {
    return send_impl(peer, peer_address, destination, msg);
  }

  // What send_bytes() returns for a message it does not take: nothing was
  // sent and nothing changed; send() it instead.
  static constexpr int kNotTaken = 1;
  // Like send(), for a message (length <= caps().bytes_send_limit) that
  // needs no block: the transport copies `length` bytes from `data` before
  // it returns (the send then takes none from the pool and gives none
  // back, and copies its payload once). `in_pool`: `data` is a pool block's
  // payload, which the transport may prefer to send with its block:
  // kNotTaken from the size at which send() does better with the block
  // itself (shm: rendezvous, or while a stream of such blocks goes on).
  // One call that may decline, rather than a question before it: the
  // question would be a second indirect call and a second look for the
  // connection on every small message. Otherwise the same results as
  // send(); on failure the message was not delivered (a connection that
  // failed part-way is dropped, and the receiver discards what it had of
  // the message).
  int send_bytes(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                 const CoreHeader &header, const void *data, std::size_t length,
                 bool in_pool) noexcept {
    return send_bytes_impl(peer, peer_address, destination, header, data, length, in_pool);
  }

  // Caller progress. Every transport with a progress thread also lets a
  // waiting caller drive it: a thread about to wait for an arrival calls
  // poll_begin(), then progress() in a loop while it spins, then
  // poll_end(will_sleep) exactly once. While at least one caller polls, the
  // transport's own thread should stay asleep and leave arrivals to the
  // caller (waking a sleeping thread costs tens of microseconds; a spinning
  // caller sees a message at once), and peers should not need to wake it.
  // poll_end(true) means the caller is about to sleep: the transport's
  // thread must take over at once (nothing published before may be left
  // unseen). poll_end(false) means the caller got what it waited for: the
  // thread may resume lazily, but an arrival published concurrently must
  // still be handled within the transport's usual bound (e.g. a final poll
  // after announcing the end, Dekker-style with the peers' wake check).
  // Thread safe; several callers may poll at once.
  void poll_begin() noexcept { poll_begin_impl(); }
  void poll_end(bool will_sleep) noexcept { poll_end_impl(will_sleep); }

  // True while a caller's progress() could find nothing at all (tcp: no
  // connection yet; its thread accepts). A waiting caller then neither
  // begins nor ends polling it (poll_begin/poll_end cost locked
  // instructions on every receive's path); it may still call progress().
  bool idle() const noexcept { return idle_impl(); }

  // Drives arrivals and completions from the calling thread; returns how
  // many events it handled. Never blocks: if another thread is already
  // driving this transport it returns 0 at once (a try-lock). May call
  // MessageSink::deliver and its kin, passing them `waiter` (the caller's
  // receive, or nullptr: see Waiter). Called by the transport's thread or
  // by a waiting caller between poll_begin() and poll_end().
  int progress(const Waiter *waiter) noexcept { return progress_impl(waiter); }

  // A receive's shortcut past the mailbox (caps().takes_arrived; caller
  // progress, as progress()). If no other thread drives this transport
  // now, and then ready(arg) holds, the message at the front of one of its
  // inputs, if it is whole there in one small frame, is for `destination`
  // and matches `pattern` (CoreHeader ==): taken into a pool block and
  // returned as deliver() would have got it (block in state kLibrary,
  // msg->data its payload), not delivered. Otherwise nullptr, nothing
  // changed (a frame that is bad, or needs a block the pool has not, is
  // left to progress()). ready() is asked while this transport's input is
  // held, so that nothing it delivers can slip in between: the core says
  // there that no receive and no message wait in the destination's
  // mailbox, so the message overtakes nothing the mailbox would have
  // matched first. If `left` is not null, *left is set when something
  // waits that this call did not take and only progress() handles (a frame
  // at a front that is another destination's or pattern's, not a small
  // message whole, bad, or blocked for want of a pool block; an input half
  // read, or not yet accepted; this side's sends that need progress() to
  // finish, such as shm's rendezvous sends with their copy offers; or
  // ready() said no) and left as it was otherwise (nothing arrived, or
  // another thread drives the input). A caller that passes `left` waits
  // and looks again: a message it takes was not there before it waited,
  // and the transport readies nothing for messages behind it.
  using ReadyFn = bool (*)(const void *arg) noexcept;
  Message *take_arrived(rocl_gid_t destination, const CoreHeader &pattern, ReadyFn ready,
                        const void *arg, bool *left) noexcept {
    return take_arrived_impl(destination, pattern, ready, arg, left);
  }

  // Teardown, first step, while this process's resources are still in the
  // directory: waits until the messages send() accepted that need nothing
  // from the peer's application (tcp: bytes queued for a socket) have
  // reached the peer's transport, the peer is gone, or `deadline` passes.
  // Messages that wait for the peer's receive (parked for rendezvous) are
  // not waited for here: the destructor lingers for those once our
  // resources are deleted (TransportEnv::linger_ms). Why two steps: a
  // receiver that waits for a message from one of our resources gives up
  // when the resource leaves the directory, so a slow transfer must end
  // before; but two processes that exit while each holds a rendezvous
  // message for the other must not wait for each other's receive. Thread
  // safe.
  void flush(std::chrono::steady_clock::time_point deadline) noexcept { flush_impl(deadline); }

  // True while input that has arrived is held back unread because the
  // buffer pool has no block for it (flow control: the application holds
  // the buffers). The core then takes no origin for gone when its process
  // has exited: its last messages may be in that input (in a ring, or in
  // the kernel's socket buffer), to be delivered once blocks are released.
  // Any thread; may be momentarily stale.
  bool holds_unread_input() const noexcept { return holds_unread_input_impl(); }

  // Rendezvous, receiver side (caps().makes_stubs). A transport may deliver
  // a stub instead of a large message: a Message with rendezvous = true
  // and length = the message's length, whose block holds only the
  // transport's bookkeeping (its payload starts with the Transport* that
  // made it: rendezvous_transport). The payload stays at the sender until
  // a receive matches the stub; then the core calls pull(stub) on the
  // receiving thread, which allocates the real block, copies the payload
  // straight from the sender's buffer (one copy), lets the sender release
  // its buffer, releases the stub and returns the message in *out (state
  // kLibrary, as any arrival) with ROCL_OK. If the pool has no block for
  // the payload it changes nothing (the stub stays as it was, the sender
  // keeps its buffer), sets *out = stub and returns ROCL_ENOMEM from
  // fail(): the core puts the stub back in the mailbox, so nothing is
  // lost. On any other failure it releases the stub, lets the sender go
  // and returns the code of fail() naming the peer, leaving *out alone.
  // discard(stub) drops a stub nobody will receive (its resource was
  // deleted). Thread safe.
  int pull(Message *stub, Message **out) noexcept { return pull_impl(stub, out); }
  void discard(Message *stub) noexcept { discard_impl(stub); }
  // Rendezvous straight into the receiver's memory (rocl_recvx), for a
  // transport with caps().pulls_into_memory: the payload, cut to cap
  // bytes, lands at dst with no pool block in between; the stub is
  // released and the sender let go whatever the outcome. Returns ROCL_OK
  // or the code of fail() naming the peer. Thread safe.
  int pull_into(Message *stub, void *dst, std::size_t cap) noexcept {
    return pull_into_impl(stub, dst, cap);
  }

  // Makes [base, base+len) usable for zero-copy sends/receives (pins or
  // registers it with the NIC where needed). Called once for the pool region.
  int register_memory(void *base, std::size_t len) noexcept {
    return register_memory_impl(base, len);
  }

  // Messages this transport delivered (to its sink, or taken at an
  // input's front), and arrivals the sink refused (no such resource:
  // logged and dropped).
  std::uint64_t delivered() const noexcept {
    return delivered_count_.load(std::memory_order_relaxed);
  }
  std::uint64_t refused_arrivals() const noexcept {
    return refused_count_.load(std::memory_order_relaxed);
  }

 protected:
  // `log`: nullptr for the default (stderr).
  Transport(const TransportEnv &env, std::string_view name, TransportLog log = nullptr);

  // Called by the implementation while it is made; fixed after.
  void set_caps(const TransportCaps &caps) noexcept { caps_ = caps; }

  // ---- The hooks ---------------------------------------------------------
  virtual std::string address_impl() const = 0;
  virtual bool reaches_impl(std::string_view address) const noexcept = 0;
  virtual int send_impl(rocl_gid_t peer, std::string_view peer_address, rocl_gid_t destination,
                        Message *msg) noexcept = 0;
  virtual int progress_impl(const Waiter *waiter) noexcept = 0;
  // caps().bytes_send_limit > 0. Default: kNotTaken.
  virtual int send_bytes_impl(rocl_gid_t peer, std::string_view peer_address,
                              rocl_gid_t destination, const CoreHeader &header, const void *data,
                              std::size_t length, bool in_pool) noexcept;
  // caps().takes_arrived. Default: nullptr, nothing left.
  virtual Message *take_arrived_impl(rocl_gid_t destination, const CoreHeader &pattern,
                                     ReadyFn ready, const void *arg, bool *left) noexcept;
  // caps().makes_stubs; pull_into_impl: caps().pulls_into_memory. Defaults:
  // ROCL_EINTERNAL with a sentence naming the transport (no stubs made).
  virtual int pull_impl(Message *stub, Message **out) noexcept;
  virtual void discard_impl(Message *stub) noexcept;
  virtual int pull_into_impl(Message *stub, void *dst, std::size_t cap) noexcept;
  // Defaults: nothing to do, never idle, never holding input, nothing to
  // wait for in flush, nothing to register.
  virtual void poll_begin_impl() noexcept {}
  virtual void poll_end_impl(bool will_sleep) noexcept { (void)will_sleep; }
  virtual bool idle_impl() const noexcept { return false; }
  virtual void flush_impl(std::chrono::steady_clock::time_point deadline) noexcept {
    (void)deadline;
  }
  virtual bool holds_unread_input_impl() const noexcept { return false; }
  virtual int register_memory_impl(void *base, std::size_t len) noexcept {
    (void)base, (void)len;
    return ROCL_OK;
  }

  // ---- What implementations share -----------------------------------------
  // One line on the transport's log; never throws.
  void log(const std::string &line) const noexcept;

  // Block b (from the pool, payload filled) as the message that arrived:
  // envelope in place, header, data and length set, state kLibrary.
  static Message *arrived(BlockHeader *b, const CoreHeader &header, std::uint64_t length) noexcept;
  // Block b as a rendezvous stub of a message of `length` bytes. The
  // implementation wrote its bookkeeping into b's payload first, starting
  // with this transport's address (what rendezvous_transport reads).
  static Message *arrived_stub(BlockHeader *b, const CoreHeader &header,
                               std::uint64_t length) noexcept;

  // Hands an arrived message (arrived or arrived_stub) to the sink for
  // `destination`, with the waiter that drives the input (progress()'s).
  // True if the sink took it. Otherwise the sink refused it (no such
  // resource, one being deleted, no memory to queue it): one line on the
  // log names from() (a std::string saying where the message came from,
  // made only then: an arrival must not format a sentence) and the
  // destination, the refusal is counted and the
  // message dropped (its block back to the pool; a stub discarded, which
  // lets its sender go). Only the thread driving the input calls it, so
  // the counts are single-writer.
  template <class From>
  bool hand_over(rocl_gid_t destination, Message *msg, const Waiter *waiter, From &&from) noexcept {
    const int rc = env_.sink->deliver(destination, msg, waiter);
    if (rc == ROCL_OK) [[likely]] {
      count_delivered();
      return true;
    }
    std::string where;
    try {
      where = from();
    } catch (...) {  // no memory for the sentence: the drop still happens
    }
    drop_refused(rc, destination, msg, where);
    return false;
  }

  // A message delivered past the sink's deliver() (deliver_bytes, a take
  // at an input's front). By the thread driving the input only.
  void count_delivered() noexcept {
    delivered_count_.store(delivered_count_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  }

  // What every transport does with a block once its bytes are out (ok) or
  // the send failed after being accepted: the block goes back to the pool
  // if the core marked it return_after_send, otherwise its owner learns
  // the outcome through send_status (rocl_bfstat).
  void finish_sent(BlockHeader *block, bool ok) const noexcept;

  const TransportEnv env_;

 private:
  [[gnu::cold]] void drop_refused(int rc, rocl_gid_t destination, Message *msg,
                                  std::string_view from) noexcept;

  std::string name_;
  TransportCaps caps_;
  TransportLog log_;
  std::atomic<std::uint64_t> delivered_count_{0};
  std::atomic<std::uint64_t> refused_count_{0};
};

// The transport that made a rendezvous stub (Transport::pull): the first
// bytes of the stub's payload.
inline Transport *rendezvous_transport(Envelope *stub) {
  Transport *t;
  __builtin_memcpy(&t, payload_of(block_of(stub)), sizeof t);
  return t;
}

// Which peers a transport can reach at most: the core's choices depend on
// it, never on a transport's name.
enum class Reach {
  kProcess,  // its own process only: a synchronous hand-off (send() delivers
             // before it returns), nothing to progress, no address to publish
             // but its own; enabled alone when no other process can find us
  kHost,     // processes of its own host (shm)
  kNetwork,  // processes of other hosts too (tcp, ucx)
};

// One row of the registration table. Each transport's folder defines its
// row (transport_entry_<name>); the table lists the built ones in the
// order of ROCL_TRANSPORT_LIST (src/transport/CMakeLists.txt), which is the
// default order of preference.
struct TransportEntry {
  const char *name;  // as in ROCL_TRANSPORTS
  const char *doc;   // one line, for rocl-info
  Reach reach;
  // The transport's own options (ROCL_<NAME>_*), gathered by the core into
  // TransportEnv::options and printed by rocl-info.
  std::span<const OptionRow> options;
  std::unique_ptr<Transport> (*make)(const TransportEnv &env);
  // Enabled by ROCL_TRANSPORTS=auto. False for a transport that only
  // duplicates the others on a machine without its hardware (ucx over
  // shared memory and tcp): named explicitly to be used.
  bool in_auto = true;
  // The option that chooses the network (ROCL_TCP_BIND), or nullptr. A
  // comma-separated list there makes one end-point per entry, the rails of
  // this transport (TransportEnv::rail), each made with the option set to
  // its entry alone.
  const char *rail_option = nullptr;
};

// read(values) on the values of a transport's options: env.options, or
// the defaults of `rows` when the transport is made without them (no copy
// of the context's values either way).
template <class Read>
auto read_options(const TransportEnv &env, std::span<const OptionRow> rows, Read read) {
  if (env.options != nullptr) return read(*env.options);
  return read(OptionValues(rows));
}

// The transports built into this library, in default order of preference.
std::span<const TransportEntry *const> transport_table() noexcept;

// The row named `name`, or nullptr.
const TransportEntry *find_transport(std::string_view name) noexcept;

}  // namespace rocl::impl
