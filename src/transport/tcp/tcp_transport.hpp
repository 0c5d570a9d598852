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
// payload read straight into it. If the pool is full the connection is
// dropped with a log line (no flow control yet).
//
// progress() returns 0: the transport's own thread does all the work.
#pragma once

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
};

using LogFn = std::function<void(const std::string &)>;

}  // namespace tcp

class TcpTransport;

// Like make_tcp_transport, with a log hook (one sentence per call, no newline,
// called from any thread; default: stderr with a "rocl: " prefix). nullptr
// with fail() when the socket cannot be set up.
std::unique_ptr<TcpTransport> make_tcp_transport_with_log(const TransportEnv &env, tcp::LogFn log);

class TcpTransport : public Transport {
 public:
  virtual tcp::Stats stats() const noexcept = 0;
};

}  // namespace rocl::impl
