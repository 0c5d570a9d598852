// tcp_transport.hpp - the TCP transport: one listening socket per transport
// (loopback by default, TransportEnv::bind_address to choose an IPv4 address
// or an interface name), one system thread per transport running epoll over
// the listener, every connection and an eventfd for wake-ups.
//
// Address: "tcp:<ipv4>:<port>" (the kernel picks the port). IPv4 only.
//
// Connections: one per peer context for sending, made lazily by the first
// send() to it and kept (map peer gid -> connection). Frames only flow from
// the connector to the acceptor; a peer's messages to us arrive on the
// connection it made. The connect and the handshake run in the calling
// thread, blocking at most kHandshakeTimeoutMs (loopback/LAN: microseconds),
// so that a refusal is reported by that very send() (ROCL_EPEER naming the
// peer). Consequently send() must not be called from inside
// MessageSink::deliver for a peer not yet connected to (it would wait for the
// progress thread, which is the caller). Concurrent sends to a peer being
// connected wait for that one handshake.
//
// Handshake (before any frame, both sides prove the job secret):
//   connector -> acceptor: Hello {kHelloMagic, kHandshakeVersion, instance}
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
// kSent / kFailed and the block is left to its owner.
//
// Receiving: a block of total_length bytes is allocated from env.pool and the
// payload read straight into it, then handed to env.sink->deliver.
//
// Flow control (a receiver slower than its sender loses nothing and neither
// side's memory grows without bound):
//  - receiver: when env.pool cannot give a block for an arriving message, the
//    transport stops reading that connection (its EPOLLIN interest is
//    removed) and retries the allocation about every kRetryMs; the kernel's
//    TCP window then stops the sender. Logged once per connection ("...
//    reading paused ..."), counted in Stats::paused_reads. Only a message
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
//
// Progress: all receiving, accepting and EPOLLOUT flushing ("driving") is
// done under one receive lock, by whichever thread holds it: the
// transport's own thread or a caller in progress(). Every descriptor is
// level-triggered, and every epoll_wait that handles events runs under that
// lock with a zero timeout, so no event is handled twice at once and a
// readiness not handled by one driver is still reported to the next.
//  - the thread: while no caller polls, it waits in epoll_wait WITHOUT the
//    lock (a peek: the event it returns is discarded), then takes the lock
//    and polls again with timeout 0 to handle what is ready then. While
//    callers poll (poll_begin() count > 0) it sleeps on a futex on that
//    count instead, timing out every kParkMs to re-check, so arrivals wake
//    no thread. poll_begin() kicks it out of epoll_wait (eventfd) when it is
//    there; poll_end(true) by the last poller wakes it at once;
//    poll_end(false) runs one last progress() and lets it resume within
//    kParkMs.
//  - progress(): try-locks the receive lock (0 if another thread drives, or
//    if called from inside deliver), polls with timeout 0 and handles the
//    events exactly as the thread does; returns the number handled. May
//    call MessageSink::deliver on the calling thread, and may set the
//    calling thread's last_error (e.g. a pool allocation that failed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace rocl::impl {

std::unique_ptr<Transport> make_tcp_transport(const TransportEnv &env);

namespace tcp {

inline constexpr std::uint32_t kHelloMagic = 0x50435452;  // "RTCP"
inline constexpr std::uint32_t kHandshakeVersion = 1;
inline constexpr int kHandshakeTimeoutMs = 5000;
inline constexpr const char *kConnectLabel = "rocl-tcp";
inline constexpr const char *kAcceptLabel = "rocl-tcp-accept";
inline constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{4} << 20;
inline constexpr int kRetryMs = 1;  // a paused connection retries its allocation
inline constexpr int kParkMs = 1;   // the thread re-checks the poller count

// Tunables of one transport.
struct Options {
  // Bound on the bytes queued per peer connection before send() waits (see
  // "Flow control" above). Must be > 0.
  std::size_t max_queued_bytes = kDefaultMaxQueuedBytes;
};

struct Hello {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t instance;
  std::uint64_t reserved;
};
static_assert(sizeof(Hello) == 24);

// Counters, for tests and diagnostics.
struct Stats {
  std::uint64_t refused = 0;              // handshakes that failed (either side)
  std::uint64_t dropped_connections = 0;  // connections closed on a protocol error
  std::uint64_t failed_sends = 0;         // queued messages dropped with their connection
  std::uint64_t unknown_destination = 0;  // arrivals the sink refused with ROCL_EBADGID
  std::uint64_t paused_reads = 0;         // times a connection stopped reading (pool full)
  std::uint64_t send_waits = 0;           // send() calls that waited for queue room
  std::uint64_t peak_queued_bytes = 0;    // most bytes ever queued on one connection
  std::uint64_t thread_events = 0;        // events handled by the transport's thread
  std::uint64_t caller_events = 0;        // events handled by callers' progress()
};

using LogFn = std::function<void(const std::string &)>;

}  // namespace tcp

class TcpTransport;

// Like make_tcp_transport, with a log hook (one sentence per call, no newline,
// called from any thread; default: stderr with a "rocl: " prefix) and
// options. nullptr with fail() when the socket cannot be set up.
std::unique_ptr<TcpTransport> make_tcp_transport_with_log(const TransportEnv &env, tcp::LogFn log,
                                                          const tcp::Options &options = {});

class TcpTransport : public Transport {
 public:
  virtual tcp::Stats stats() const noexcept = 0;
};

}  // namespace rocl::impl
