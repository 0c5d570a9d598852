// tcp_transport.hpp - the TCP transport: one listening socket per transport
// (loopback by default, tcp::Options::bind_address to choose an IPv4 address
// or an interface name), one system thread per transport running epoll over
// the listener, every connection and an eventfd for wake-ups.
//
// Address: "tcp:<ipv4>:<port>" (the kernel picks the port). IPv4 only.
//
// Connections: one per pair of peer contexts, made lazily by the first send()
// of either side and kept (map peer address -> connection), carrying messages
// both ways: the connector says its own listening address in its Hello, and
// the acceptor sends its messages for that address on the same connection,
// so that each answer carries the TCP acknowledgement of the message it
// answers (a connection per direction costs each message a bare ACK
// segment: rocl-bench latency --transport tcp shows it). When both sides
// connect at once, each keeps sending on the connection it registered first
// and the other one carries the other direction only: the connection a side
// sends to a peer on never changes while it lives, so the messages of one
// sender stay in order. The connect and the handshake run in the calling
// thread, blocking at most kHandshakeTimeoutMs (loopback/LAN: microseconds),
// so that a refusal is reported by that very send() (ROCL_EPEER naming the
// peer). Consequently send() must not be called from inside
// MessageSink::deliver for a peer not yet connected to (it would wait for the
// progress thread, which is the caller). Concurrent sends to a peer being
// connected wait for that one handshake.
//
// Handshake (before any frame, both sides prove the job secret):
//   connector -> acceptor: Hello {kHelloMagic, kHandshakeVersion, instance,
//                                 the connector's listening address}
//   acceptor  -> connector: 32-byte challenge cA
//   connector -> acceptor: prove("rocl-tcp", cA) + 32-byte challenge cC
//   acceptor  -> connector: verdict byte (0 ok, 1 refused) +
//                           prove("rocl-tcp-accept", cC)
// A side whose check fails logs "tcp: peer <ip:port> refused: ..." and closes
// the connection. Without a job secret (env.secret == nullptr) the transport
// makes a random one: only its own connections then succeed.
//
// Frames: wire::MessageHeader + payload, written with sendmsg (an iovec per
// header and per payload: the payload is never copied). A message longer than
// Limits::max_fragment_bytes (64 MiB) is sent as consecutive kFragment frames
// sharing one message_id; the receiver reassembles them in place (a
// connection's frames are never interleaved). Every received header goes
// through wire::decode_header; a bad frame is logged (naming the peer and the
// field) and drops that connection only.
//
// Block contract of send(): ownership of msg's block (state kLibrary) moves
// to the transport on ROCL_OK. After its last byte is written (or when the
// connection dies with it still queued) the block is released to env.pool if
// it is marked return_after_send (what the core always hands over; env.pool
// must be the pool the block came from), otherwise its send_status is set to
// kSent / kFailed and the block is left to its owner. A rendezvous message's
// block is finished likewise once its data is written, or at once when its
// receiver discarded it (ok), or when the connection dies (failed).
//
// Receiving: each connection reads through a stage (64 KiB, made after the
// handshake): one recv() takes what is there, up to the stage's size, and
// the frames are parsed out of it, so that a small message costs one recv()
// or a share of one. A read that gets fewer bytes than it asked for ends the
// connection's turn (no read that would only say EAGAIN: epoll,
// level-triggered, reports what comes later), unless it is the rest of a
// payload still streaming in. A block of total_length bytes
// is allocated from env.pool; what the stage holds of the payload is copied
// into it, the rest read straight into it (one recvmsg whose second buffer
// is the stage, for what follows). While messages are large (16 KiB and
// more) reads look ahead by one header only, so that their payloads are
// read straight into their blocks, not copied. The message is then handed to
// env.sink->deliver.
//
// Rendezvous (messages of at least env.rendezvous_threshold bytes, when it is
// not 0, and of at least 16; from the application's memory, lent or
// msg->rendezvous, already from tcp::Options::rendezvous_threshold if lower:
// TcpTransportImpl::takes_rendezvous in tcp_transport.cpp): receiver-driven,
// so that a large message waits at its sender until a receive takes it and
// then lands straight in the receiver's block.
//  - sender: send() writes a kRendezvousRequest frame (message_id = body
//    cookie = a fresh id from the same counter as message ids, body address
//    0) and parks the message in the connection's table of unrequested sends,
//    a generic::Communicator keyed by {connection id, cookie}
//    (post_rendezvous_send). What is parked per connection, from send() until
//    its data is written, is bounded by kMaxParkedMessages (64) and
//    Options::max_parked_bytes (256 MiB; one larger message still goes
//    alone). Beyond it the message goes eager (the default,
//    Options::eager_when_parking_full): rocl_send never waits for a receive
//    (rocl.h), and the eager queue's flow control still bounds memory; the
//    receiver still gets the messages in order (the stubs hold their places
//    in the mailbox). With the option off, send() waits instead until the
//    receiving application pulls a parked message (ROCL_EPEER naming the
//    peer if the connection dies meanwhile); a send() from inside deliver on
//    a driver of this transport never waits.
//  - receiver: the request becomes a stub (Message with rendezvous = true,
//    length = total_length; its block holds the Transport*, the connection id,
//    the cookie and the peer's name) delivered to the sink. pull() on the
//    receiving thread allocates the real block, registers it for
//    (connection, cookie), sends a kRendezvousReply (total_length = the
//    length: "send it") back on the same connection and waits, driving the
//    transport itself (poll_begin/progress/poll_end, then sleeping on a
//    completion the driver signals; from inside deliver on a driver it
//    drives re-entrantly) until the data frames (kFragment, message_id =
//    cookie) have been read into that block (straight from the socket, but
//    for what the connection's stage already held). discard() sends a reply
//    with total_length 0 ("drop": release the buffer). If the connection dies
//    first, pull() fails with ROCL_EPEER naming the peer; if env.pool has no
//    block for the message, with ROCL_ENOMEM (the sender is let go). A
//    request for a message that can never fit env.pool is logged and
//    answered "drop" at once, without a stub.
//  - sender, on a reply: request_arrived() matches the parked send (an unknown
//    cookie, or a reply whose fields do not answer the request, is logged and
//    drops the connection); its payload is queued as kFragment frames with
//    message_id = cookie and its block finished after the last byte (or at
//    once for a drop reply).
//  Every field of these frames is checked before use (docs/protocol.md, "TCP
//  connections"): data is accepted only for a registered pull, with the
//  request's length, source, destination, tag and domain.
//
// Flow control (a receiver slower than its sender loses nothing and neither
// side's memory grows without bound):
//  - receiver: when env.pool cannot give a block for an arriving message, the
//    transport stops reading that connection (its EPOLLIN interest is
//    removed) and retries the allocation about every kRetryMs (the frames
//    already in its stage wait too); the kernel's TCP window then stops the
//    sender. Logged once per connection ("... reading paused ..."), counted
//    in Stats::paused_reads. Only a message
//    that can never fit the pool (its block exceeds the pool cap) drops the
//    connection.
//  - sender: the bytes queued in user space per peer connection (payload
//    plus one header per message) are bounded by Options::max_queued_bytes
//    (default kDefaultMaxQueuedBytes, 4 MiB). A message is queued if it fits
//    under the bound or the queue is empty (so one larger message still
//    goes). Otherwise send() waits (so, unlike the general "a busy link
//    queues" of Transport::send, a link whose queue is full blocks the
//    sender), flushing the socket itself between rounds: it yields briefly,
//    then sleeps with a backoff (10 us doubling to 1 ms), as long as the
//    peer is alive; ROCL_EPEER naming the peer if the connection dies
//    meanwhile (the caller keeps msg). A peer that stays alive but never
//    reads keeps the sender waiting (no timeout). Exception: a send()
//    made from inside MessageSink::deliver on a thread driving this
//    transport never waits (the bound is then exceeded), since waiting there
//    would stop this end-point's own receiving.
//  - rendezvous: a large message waits at its sender, parked, until the
//    receiver pulls it; what is parked per connection is bounded (see
//    "Rendezvous" above), so a receiver that takes nothing holds at most
//    kMaxParkedMessages stubs (a small block each) per sender.
//
// Progress: all receiving, accepting and EPOLLOUT flushing ("driving") is
// done under one receive lock, by whichever thread holds it: the
// transport's own thread or a caller in progress(). Every descriptor is
// level-triggered, and every epoll_wait that handles events runs under that
// lock with a zero timeout, so no event is handled twice at once and a
// readiness not handled by one driver is still reported to the next. Epoll
// never reports bytes already in a connection's stage, so a connection's
// turn ends only where it needs bytes from its socket, or when it pauses
// (the retry parses its stage first).
//  - the thread: while no caller polls, it waits in epoll_wait WITHOUT the
//    lock (a peek: the event it returns is discarded), then takes the lock
//    and polls again with timeout 0 to handle what is ready then. While
//    callers poll (poll_begin() count > 0) it sleeps on a futex on that
//    count instead, timing out every kParkMs to re-check, so arrivals wake
//    no thread. poll_begin() kicks it out of epoll_wait (an eventfd in a set
//    of the thread's own, beside the drivers' set, so that no driver reads
//    a kick meant for it) when it is there; poll_end(true) by the last poller wakes it at once;
//    poll_end(false) lets it resume within kParkMs.
//  - progress(): try-locks the receive lock (0 if another thread drives, or
//    if called from inside deliver), polls with timeout 0 and handles the
//    events exactly as the thread does; returns the number handled. With
//    a single connection and none paused it reads that connection at once
//    instead, 15 polls out of 16 (a message then costs one system call,
//    the read, instead of epoll_wait and the read); the 16th polls epoll
//    for the rest (a new connection, room to write). May
//    call MessageSink::deliver on the calling thread, and may set the
//    calling thread's last_error (e.g. a pool allocation that failed).
//  - pull() called from inside deliver on a driver (a sink that pulls at
//    once) already holds the receive lock: it drives re-entrantly (a nested
//    drive; connections dropped meanwhile are freed only when the outermost
//    drive ends, and a connection's receive turn stops once it is dropped).
//    Messages read meanwhile are delivered before the pulled one.
//
// Shutdown (linger, like SO_LINGER; env.linger_ms: ROCL_LINGER_MS from the
// core, 0 for a bare transport): send() returning ROCL_OK promises delivery,
// so the destructor does not just close connections that still hold
// accepted messages. While the transport's thread keeps driving (flushing
// on EPOLLOUT, queueing a parked message's data when its reply comes), the
// destructor waits until no live connection has bytes queued or rendezvous
// messages parked (each pulled or dropped by its receiver), or its peer is
// gone (the connection was dropped), or linger_ms has passed. Then it stops
// the thread and logs one sentence per peer for what is left ("tcp: dropped
// N messages (B bytes) for peer ip:port ... at shutdown"), which is
// dropped. Unless linger_ms is 0, each connection is then closed
// gracefully: shutdown(SHUT_WR) (the peer reads every byte, then EOF, and
// its driver drops and closes the connection), then read (discarding) until
// the peer's EOF, so that close() with unread input does not send a RST
// that could destroy bytes the peer has not read yet; bounded by the same
// deadline, but given at least min(linger_ms, kCloseMs). The receiving side
// needs nothing: a receiver's deleted resources discard their stubs (drop
// replies, written during its own linger).
//
// Source files: tcp_internal.hpp lists the parts the transport is made of,
// each in its own tcp_<part>.hpp/.cpp; tcp_transport.cpp holds the
// transport object itself, its factories and its option rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace rocl::impl {

std::unique_ptr<Transport> make_tcp_transport(const TransportEnv &env);

namespace tcp {

inline constexpr std::uint32_t kHelloMagic = 0x50435452;  // "RTCP"
inline constexpr std::uint32_t kHandshakeVersion = 2;
inline constexpr int kHandshakeTimeoutMs = 5000;
inline constexpr const char *kConnectLabel = "rocl-tcp";
inline constexpr const char *kAcceptLabel = "rocl-tcp-accept";
inline constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{4} << 20;
inline constexpr int kRetryMs = 1;  // a paused connection retries its allocation
inline constexpr int kParkMs = 1;   // the thread re-checks the poller count
// Shutdown: the graceful close waits at least min(linger_ms, kCloseMs) for
// the peers' EOF, even when the linger itself used up linger_ms.
inline constexpr int kCloseMs = 100;
// Rendezvous: messages parked per connection (waiting for their receiver's
// reply, or being written) at most, and their default byte bound.
inline constexpr std::size_t kMaxParkedMessages = 64;
inline constexpr std::size_t kDefaultMaxParkedBytes = std::size_t{256} << 20;
inline constexpr std::size_t kDefaultTurnBytes = std::size_t{4} << 20;

// Tunables of one transport.
struct Options {
  // Bound on the bytes queued per peer connection before send() waits (see
  // "Flow control" above). Must be > 0.
  std::size_t max_queued_bytes = kDefaultMaxQueuedBytes;
  // Bound on the bytes of rendezvous messages parked per connection (see
  // "Rendezvous" above). 0: the default.
  std::size_t max_parked_bytes = kDefaultMaxParkedBytes;
  // When the parking bound is reached, send the message eagerly instead of
  // waiting for the receiver to take parked ones (so that send() never waits
  // for a receive; the eager bounds still apply).
  bool eager_when_parking_full = true;
  // Bytes a driver reads from one connection in one turn before it moves on
  // (fairness: one busy peer cannot keep a driver, maybe a caller in
  // progress(), for long); a turn may end only where the connection needs
  // bytes from its socket. 0: the default.
  std::size_t turn_bytes = kDefaultTurnBytes;
  // Messages from the application's memory (lent, or msg->rendezvous) go
  // by rendezvous from min(this, TransportEnv::rendezvous_threshold),
  // unless that is 0 (never); pool buffers from rendezvous_threshold.
  // ROCL_TCP_RNDV_THRESHOLD. 0: TransportEnv::rendezvous_threshold alone.
  std::size_t rendezvous_threshold = 0;
  // The congestion control of every connection, the first of these names
  // (ROCL_TCP_CONGESTION, for the TCP_CONGESTION socket option) the kernel
  // accepts. None: the system's.
  std::vector<std::string> congestion{};
  // What to listen on (ROCL_TCP_BIND; resolve_bind in tcp_socket.hpp).
  std::string bind_address{};
  // How long sent bytes may stay unacknowledged before the kernel drops
  // the connection (TCP_USER_TIMEOUT; ROCL_TCP_USER_TIMEOUT_MS). 0: the
  // system's (minutes).
  std::uint32_t user_timeout_ms = 0;
};

// The tcp transport's option rows (ROCL_TCP_*), and the Options they give.
std::span<const OptionRow> option_rows() noexcept;
Options options_from(const OptionValues &values);

// The connector's first message. `address` is the connector's own listening
// address ("tcp:<ipv4>:<port>", NUL-padded), so that the acceptor can send
// its messages for the connector on this connection too; all zero: a
// connector that takes no messages back (tools, tests).
inline constexpr std::size_t kHelloAddressBytes = 40;
struct Hello {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t instance;
  char address[kHelloAddressBytes];
};
static_assert(sizeof(Hello) == 56);

// Counters, for tests and diagnostics.
struct Stats {
  std::uint64_t open_connections = 0;     // connections open now (either side made them)
  std::uint64_t connects = 0;             // connections this transport made
  std::uint64_t refused = 0;              // handshakes that failed (either side)
  std::uint64_t dropped_connections = 0;  // connections closed on a protocol error
  std::uint64_t failed_sends = 0;         // queued messages dropped with their connection
  std::uint64_t unknown_destination = 0;  // arrivals the sink refused with ROCL_EBADGID
  std::uint64_t paused_reads = 0;         // times a connection stopped reading (pool full)
  std::uint64_t send_waits = 0;           // send() calls that waited for queue room
  std::uint64_t peak_queued_bytes = 0;    // most bytes ever queued on one connection
  std::uint64_t thread_events = 0;        // events handled by the transport's thread
  std::uint64_t caller_events = 0;        // events handled by callers' progress()
  // Rendezvous.
  std::uint64_t rendezvous_sends = 0;     // requests written (messages parked)
  std::uint64_t rendezvous_waits = 0;     // send() calls that waited for parking room
  std::uint64_t rendezvous_eager = 0;     // large messages sent eagerly (parking full)
  std::uint64_t peak_parked = 0;          // most messages ever parked on one connection
  std::uint64_t rendezvous_stubs = 0;     // stubs delivered to the sink
  std::uint64_t rendezvous_pulls = 0;     // pulls completed (data read into the block)
  std::uint64_t rendezvous_discards = 0;  // stubs dropped (drop replies sent)
  // Connections left with the system's congestion control because the
  // kernel refused tcp::Options::congestion (said once on the log).
  std::uint64_t congestion_refused = 0;
};

using LogFn = TransportLog;

}  // namespace tcp

class TcpTransport;

// Like make_tcp_transport, with a log hook (one sentence per call, no newline,
// called from any thread; default: stderr with a "rocl: " prefix) and
// options. nullptr with fail() when the socket cannot be set up.
std::unique_ptr<TcpTransport> make_tcp_transport_with_log(const TransportEnv &env, tcp::LogFn log,
                                                          const tcp::Options &options = {});

class TcpTransport : public Transport {
 public:
  using Transport::Transport;
  virtual tcp::Stats stats() const noexcept = 0;
};

}  // namespace rocl::impl
