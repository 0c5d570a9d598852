// tcp_conn.hpp - one connection of the TCP transport and what it holds: its
// send queue (OutMsg), its parked rendezvous sends (Parking), its receive
// stage (Stage) and where its receive state machine stands (Rx). A Conn is
// data: the parts of the transport (tcp_internal.hpp) act on it, under the
// locks its members name.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "buffer/buffer_pool.hpp"
#include "rocl/generic/communicator.hpp"
#include "security/job_secret.hpp"
#include "transport/tcp/tcp_transport.hpp"
#include "wire/message_header.hpp"

namespace rocl::impl::tcp::detail {

using Clock = std::chrono::steady_clock;
inline constexpr std::size_t kHeaderBytes = sizeof(wire::MessageHeader);

// A connection's receive stage (Conn::stage): one recv() takes up to this
// many bytes, so that the small frames already there (headers, payloads,
// request bodies) cost no system call each.
inline constexpr std::size_t kStageBytes = std::size_t{64} << 10;
// Messages of at least this many bytes are "large" (Conn::direct): copying
// one through the stage would cost more than the system call it saves, so
// while they come, reads look ahead by one header only and each payload is
// read straight into its block.
inline constexpr std::size_t kDirectBytes = std::size_t{16} << 10;

// What the sender's table of unrequested sends matches on: the connection
// and the cookie (the request's message_id). Never a pattern.
struct RndvKey {
  std::uint64_t conn;    // Conn::id
  std::uint64_t cookie;  // from the sender's message id counter

  bool is_pattern() const { return false; }
  bool operator==(const RndvKey &o) const { return conn == o.conn && cookie == o.cookie; }
  bool operator<(const RndvKey &o) const {
    return conn != o.conn ? conn < o.conn : cookie < o.cookie;
  }
};
using RndvEnvelope = generic::Envelope<RndvKey>;
using RndvTable = generic::Communicator<RndvKey>;

// Sender: a large message parked until its receiver replies, then until its
// data is written. One of a connection's kMaxParkedMessages slots.
struct ParkedSend : RndvEnvelope {
  BlockHeader *block = nullptr;  // the message's block (state kLibrary)
  const std::byte *data = nullptr;
  std::uint64_t length = 0;
  wire::MessageHeader hdr{};    // the request's header; the data frames' template
  wire::RendezvousBody body{};  // the request's body, written from here
};

// Queue cost of a rendezvous request frame: header and body.
inline constexpr std::uint64_t kRequestCost = kHeaderBytes + sizeof(wire::RendezvousBody);

// A frame header of `kind` with nothing but the wire's constants filled.
inline wire::MessageHeader frame_header(wire::Kind kind) {
  wire::MessageHeader h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.kind = kind;
  return h;
}

// Sender: the rendezvous messages parked on one connection, from send()
// until their data is written or they are dropped; guarded by Conn::mu.
struct Parking {
  RndvTable table;                               // unrequested sends, by {id, cookie}
  std::unique_ptr<ParkedSend[]> slots;           // kMaxParkedMessages, made on first use
  std::uint64_t free_slots = ~std::uint64_t{0};  // bit i: slots[i] is free
  std::size_t count = 0;                         // slots taken
  std::uint64_t bytes = 0;                       // their messages' bytes

  // Whether one more message of len bytes may be parked. A message larger
  // than max_bytes still goes when nothing is parked.
  bool has_room(std::uint64_t len, std::uint64_t max_bytes) const {
    return count < kMaxParkedMessages && (count == 0 || bytes + len <= max_bytes);
  }
  // The slot the next parked message takes (has_room() said yes), the
  // slots made on first use; nullptr: no memory for them.
  ParkedSend *next_slot();
  // p, filled and in the table, counts as parked.
  void occupy(ParkedSend &p);
  // p's message is written or dropped: its slot is free again.
  void release(ParkedSend &p);
  // Every slot is free (the table was closed with the connection).
  void clear();
};

// Receiver: a pull waiting for its data (tcp_rendezvous_receive.hpp).
struct Pull;

// One message queued for sending, with how far it got.
struct OutMsg {
  BlockHeader *block;       // nullptr: a rendezvous request or reply (no block)
  wire::MessageHeader hdr;  // template: kind, ids, total_length
  const std::byte *data;
  std::uint64_t total;
  std::uint64_t cost;            // counted against Options::max_queued_bytes
  std::uint64_t frame_off = 0;   // payload offset of the current frame
  std::uint64_t frame_sent = 0;  // bytes of the current frame (header + payload) written
  ParkedSend *parked = nullptr;  // rendezvous data: its slot is freed once written
};

// The bytes read from a connection's socket ahead of its receive state
// machine, made on the first read after the handshake (kStageBytes) and
// freed with the connection. [pos, end) is read but not yet parsed; it only
// ever starts with a partial header or request body when a read is due,
// and a payload's rest beyond it is read straight into its block. Epoll
// never reports these bytes: a turn may only end where the state needs more
// than the stage holds (FrameReader::waits_for_bytes), or paused (the retry
// parses the stage first).
struct Stage {
  std::unique_ptr<std::byte[]> bytes;
  std::size_t cap = 0;
  std::size_t pos = 0;
  std::size_t end = 0;

  std::size_t size() const { return end - pos; }
  const std::byte *front() const { return bytes.get() + pos; }
  // n staged bytes are parsed. An empty stage starts over at its
  // beginning, so that the next read has all of it.
  void consume(std::size_t n) {
    pos += n;
    if (pos == end) pos = end = 0;
  }
  // Moves what is staged to the beginning, so that a read appends to it.
  void compact();
  // The buffer, made once. False: no memory.
  bool make();
  // Frees the buffer; what it held is gone.
  void reset() {
    bytes.reset();
    cap = pos = end = 0;
  }
};

// kNeedBlock: a first frame's header is validated and its message needs a
// block from the pool (a rendezvous request: a block for its stub); if the
// pool has none, reading the connection pauses in this state (see
// PausedReads). kRequestBody: reading a rendezvous request's body.
enum class Rx { kHello, kProof, kHeader, kNeedBlock, kPayload, kRequestBody };

// Where one step of the receive state machine leaves a connection.
enum class Step { kMore, kIdle, kDrop };

// What an allocation for an arriving message gave.
enum class Take { kGot, kWait, kNever };

inline Step to_step(bool ok) {
  return ok ? Step::kMore : Step::kDrop;
}

struct Conn {
  Conn(std::uint64_t i, int f, rocl_gid_t p, std::string name)
      : id(i), fd(f), peer(p), peer_name(std::move(name)) {}

  const std::uint64_t id;  // unique in this transport, never reused (RndvKey::conn)

  // Send side and epoll interest: guarded by mu.
  std::mutex mu;
  int fd;
  rocl_gid_t peer;              // peer context, once known (for sentences); guarded by mu
  const std::string peer_name;  // "127.0.0.1:PORT" (the socket's, not the listening one)
  // The peer's listening address, this connection's key in the ConnTable's
  // peers while we send on it ("" for neither); guarded by the table's lock.
  std::string peer_address;
  bool dead = false;
  bool want_out = false;
  bool rx_paused = false;  // EPOLLIN removed: waiting for a block
  std::deque<OutMsg> q;
  std::uint64_t queued = 0;  // sum of q's costs
  Parking parking;           // rendezvous, sender side; guarded by mu
  RndvEnvelope reply;        // an arriving reply, as the table's request (driver only)

  // Receive side: the driver only (whoever holds the receive lock).
  Rx rx = Rx::kHello;
  std::array<std::byte, 64> buf{};  // the handshake's messages
  std::size_t got = 0;              // bytes of buf read so far
  JobSecret::Challenge challenge{};
  std::string hello_address;  // acceptor: the connector's listening address, from its Hello
  wire::MessageHeader h{};
  BlockHeader *rx_block = nullptr;  // message being received (state kLibrary)
  std::byte *rx_at = nullptr;       // where its payload goes (rx_block's, or a pull's memory)
  wire::MessageHeader first{};      // first frame of the message being received
  std::uint64_t rx_done = 0;        // payload bytes of the message received so far
  std::uint64_t frame_left = 0;     // payload bytes of the current frame still to read
  std::uint64_t turn_read = 0;      // bytes read in the current turn (Options::turn_bytes)
  Stage stage;
  // A read this turn got fewer bytes than it asked for (past a payload's
  // end): the socket was drained, so the turn ends at the next read instead
  // of making it (it would say EAGAIN; level-triggered epoll reports bytes
  // that came since).
  bool drained = false;
  // The message being (or last) received is large (kDirectBytes): reads
  // ask for one header (or request body) beyond what the state needs, not
  // for a whole stage, as the next message is likely large too.
  bool direct = false;
  bool pause_logged = false;
  Pull *rx_pull = nullptr;            // rx_block is this pull's (rendezvous data)
  BlockHeader *stub_block = nullptr;  // a stub's block, between allocation and delivery
};

}  // namespace rocl::impl::tcp::detail
