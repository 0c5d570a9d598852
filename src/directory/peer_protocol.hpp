// peer_protocol.hpp - the datagrams the directory servers of one job send
// each other over UDP (broadcast on the host network, and unicast): the
// packet codec (seal / open) and the replay guard. Pure code, no sockets:
// directory_server.cpp owns those.
//
// ---- Packet (one UDP datagram; all integers little-endian) ----------------------
//
//   header, 64 bytes:
//     off  0 u32 magic        kMagic = bytes "RPER"
//     off  4 u16 version      kVersion (1; both sides must speak the same one)
//     off  6 u16 op           Op below
//     off  8 u16 server       the sender's directory server id, 1..kMaxServerId
//     off 10 u16 flags        ANSWER: kMore (more matches follow this one at that
//                             server), kNone (no match: gid 0 and no body), not
//                             both; QUERY: kMulti (the start of a multi-answer
//                             query, by pattern only); SPAWNED: kMore (still
//                             starting), kNone (failed), not both; no other
//                             bit, and no bit for the other ops
//     off 12 u32 body_len     bytes of body between the header and the MAC
//     off 16 u64 incarnation  the sender's random id for this start of the
//                             server, != 0
//     off 24 u64 seq          per (server, incarnation): 1 for the first packet
//                             sent, +1 per packet (any destination), != 0
//     off 32 u64 sent_ms      the sender's CLOCK_REALTIME in milliseconds
//     off 40 u64 query        QUERY/NEXT/SPAWN: the asker's request id, != 0;
//                             ANSWER/SPAWNED: the id echoed (!= 0); ANNOUNCE/BYE: 0
//     off 48 u64 gid          QUERY: the gid looked up (a unicast QUERY by gid,
//                             1..INT64_MAX), or 0 for a search by pattern;
//                             NEXT: `after`, 1..INT64_MAX (answers have a gid
//                             above it); ANSWER: the answer's gid, 1..INT64_MAX,
//                             or 0 with kNone; SPAWNED done: the new process's
//                             context gid, 1..INT64_MAX; ANNOUNCE/BYE/SPAWN and
//                             SPAWNED with kMore or kNone: 0
//     off 56 u64 aux          ANNOUNCE: the server's start time (CLOCK_REALTIME
//                             ms), != 0; QUERY by pattern: `after`,
//                             0..INT64_MAX (0: from the start); ANSWER: its
//                             place in the reply's batch, total << 16 | index
//                             (total 1..kMaxBatch, index < total; one request
//                             may be answered by a batch of datagrams, each an
//                             answer, in increasing gid), 0 with kNone; QUERY
//                             by gid, NEXT (its `after` is gid), BYE: 0;
//                             SPAWN: its time limit in ms, 0..kMaxSpawnLimitMs
//                             (0: none); SPAWNED with kNone: minus the ROCL_E*
//                             code, 1..kMaxSpawnError; other SPAWNED: 0
//   body, body_len bytes:
//     ANNOUNCE  8 bytes: u16 the directory's TCP port (0: none), u16 the
//               server's peer UDP port (!= 0), u32 its removal count (how
//               many times resources left it, mod 2^32: a peer that sees it
//               change knows routes to that server's resources may be stale)
//     BYE       empty
//     QUERY     an AttrList encoding (attr_list.hpp): the pattern (a QUERY by
//               pattern, may be the empty list) or the names of the
//               attributes the asker wants (a QUERY by gid, may be empty)
//     NEXT      an AttrList encoding: the pattern
//     ANSWER    the resource's whole AttrList encoding; empty with kNone
//     SPAWN     an AttrList encoding: the spawn request (spawn_request.hpp)
//     SPAWNED   with kNone an AttrList encoding {why: the sentence}; else empty
//   MAC, 32 bytes: JobSecret::prove(kMacLabel, header bytes + body bytes)
//   (HMAC-SHA256 with the job secret).
//
// A datagram is at most kMaxDatagram (65507, the largest UDP payload over
// IPv4) bytes, so body_len <= kMaxBody = 65507 - 64 - 32 = 65411.
//
// open() checks the header fields first (they are all in the first 64
// bytes: length, magic, version, op, server, flags for the op, incarnation,
// seq, query/gid/aux rules for the op, body_len against the datagram's
// length and the op's body size), then the MAC in constant time, and only
// then decodes the body, so no attribute list of a packet that is not the
// job's is ever parsed. seal() refuses to build what open() would refuse.
//
// ---- Replay protection ----------------------------------------------------------
//
// The MAC proves a member of the job made a packet, not that this is the
// first time it arrives: anyone on the host network can record a datagram
// and send it again later (the same QUERY asked twice, a BYE replayed after
// the server came back, an old ANNOUNCE with a port since reused). A
// receiver refuses what it has seen with two cheap checks that need no
// state on disk and no handshake (a broadcast has no single peer to shake
// hands with):
//   - freshness: sent_ms within kMaxSkewMs (30 s) of the receiver's
//     CLOCK_REALTIME. A recorded packet is useless after 30 s, whatever the
//     receiver remembers. (The hosts' clocks must agree within 30 s: NTP.)
//   - a sequence window per (server, incarnation): the receiver keeps the
//     highest seq it accepted and a 64-bit mask of which of the last 64
//     seqs (that one included) arrived, as IPsec and WireGuard do: a
//     duplicate is refused, a packet reordered by the network is still
//     accepted once, and anything older than the window is refused. The
//     incarnation, a random id drawn at each start of a server, lets a
//     restarted sender begin again at seq 1 without remembering its last
//     seq anywhere, and gives the old run's packets a window of their own.
// Neither is enough alone: freshness leaves 30 s in which a packet can be
// replayed at will, and a window only knows the incarnations the receiver
// has heard from and still remembers (a receiver takes the first packet of
// an incarnation it does not know, whatever its seq), which is where
// freshness takes over.
// The state is bounded (ReplayGuard below): 4 incarnations per server (a
// server that restarted has one live incarnation; the others die out), at
// most kMaxServers servers.
//
// What this does NOT stop:
//   - a packet replayed within 30 s of its sending to a server that never
//     saw that incarnation before (that server just started, or forgot the
//     incarnation: evicted as the least recently used of 5, or the server
//     restarted) is accepted once: nothing tells it from the original.
//   - the header names no destination, so a unicast packet (a QUERY by gid,
//     an ANSWER) recorded on its way to one server can be sent to another
//     within 30 s, and is new there if that server has not seen its seq
//     (the seqs of an incarnation are spread over all its destinations).
//     An asker must match an ANSWER to the (server, query) it asked.
//   - dropping, delaying (by less than 30 s) or reordering packets, and
//     reading them: packets are signed, not encrypted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "directory/attr_list.hpp"
#include "security/job_secret.hpp"

namespace rocl::impl::peerproto {

inline constexpr std::uint32_t kMagic = 0x52455052;  // bytes "RPER"
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 64;
inline constexpr std::size_t kMacBytes = 32;
inline constexpr std::size_t kMaxDatagram = 65507;
inline constexpr std::size_t kMaxBody = kMaxDatagram - kHeaderBytes - kMacBytes;
inline constexpr std::size_t kAnnounceBodyBytes = 8;
inline constexpr std::string_view kMacLabel = "rocl-dir-peer";
inline constexpr std::uint16_t kMaxServerId = 0x7fff;
// Most answers in the batch replying to one request (aux of ANSWER).
inline constexpr std::size_t kMaxBatch = 64;

// flags
inline constexpr std::uint16_t kMore = 1;   // ANSWER
inline constexpr std::uint16_t kNone = 2;   // ANSWER
inline constexpr std::uint16_t kMulti = 4;  // QUERY

enum class Op : std::uint16_t {
  kAnnounce = 1,
  kBye = 2,
  kQuery = 3,
  kAnswer = 4,
  kNext = 5,
  kSpawn = 6,
  kSpawned = 7,
};
inline constexpr std::uint16_t kMaxOp = 7;
// SPAWN's aux: its time limit in ms, at most this (0: none).
inline constexpr std::uint64_t kMaxSpawnLimitMs = 0x7fffffff;
// SPAWNED with kNone: aux is minus a ROCL_E* code, 1..this.
inline constexpr std::uint64_t kMaxSpawnError = 1000;

// "ANNOUNCE", ..., "NEXT"; "an unknown op" for anything else.
const char *op_name(std::uint16_t op) noexcept;

// One packet's contents (header fields by name; see the top of the file for
// which op uses which). list: the body of QUERY, NEXT and ANSWER (empty, with
// any capacity, for the other ops and a kNone ANSWER); tcp_port, udp_port,
// removals: the body of ANNOUNCE (0 for the other ops).
struct Packet {
  Op op = Op::kAnnounce;
  std::uint16_t server = 0;
  std::uint16_t flags = 0;
  std::uint64_t incarnation = 0;
  std::uint64_t seq = 0;
  std::uint64_t sent_ms = 0;
  std::uint64_t query = 0;
  std::uint64_t gid = 0;
  std::uint64_t aux = 0;
  AttrList list;
  std::uint16_t tcp_port = 0;
  std::uint16_t udp_port = 0;
  std::uint32_t removals = 0;  // ANNOUNCE
};

// Builds the datagram of p, signed with secret: ROCL_OK and *out (replaced);
// ROCL_ENOSPC when p's list does not fit a datagram (the sentence, in
// last_error(), names its size and the limit); ROCL_EINVAL when a field
// breaks the rules above (what open() would refuse, named in the sentence).
// *out is unchanged on failure. May throw bad_alloc.
int seal(const Packet &p, const JobSecret &secret, std::vector<std::byte> *out);

// Checks one received datagram (everything above, MAC included; nothing is
// read outside it): ROCL_OK and *out, or ROCL_EINVAL with a sentence naming
// the field and its bad value in *what ("a bad MAC (not signed with this
// job's secret)", "an unknown op 9 ...", "body_len 12 but 40 bytes lie
// between the header and the MAC", ...); *out is untouched then. An accepted
// packet seals again to the same bytes. May throw bad_alloc.
int open(std::span<const std::byte> datagram, const JobSecret &secret, Packet *out,
         std::string *what);

// Which authenticated packets are new (see "Replay protection" above). Not
// thread safe: one server thread owns it.
class ReplayGuard {
 public:
  static constexpr std::uint64_t kMaxSkewMs = 30000;
  static constexpr std::uint64_t kWindow = 64;  // seqs remembered: the newest and 63 before
  static constexpr std::size_t kIncarnationsPerServer = 4;
  static constexpr std::size_t kMaxServers = kMaxServerId;

  // now_ms: the receiver's CLOCK_REALTIME in ms. Refuses (false, a sentence
  // in *why) a packet whose sent_ms is more than kMaxSkewMs away from
  // now_ms, whose server is outside 1..kMaxServerId, or whose (server,
  // incarnation, seq) was accepted before or is older than the newest
  // kWindow seqs of that incarnation; otherwise records it and returns true.
  // A fifth incarnation of a server makes it forget the one it accepted a
  // packet from least recently.
  bool accept(const Packet &p, std::uint64_t now_ms, std::string *why);

  // Packets refused so far.
  std::uint64_t refused() const { return refused_; }
  // Incarnations remembered now (all servers).
  std::size_t tracked() const { return tracked_; }

 private:
  struct Incarnation {
    std::uint64_t id = 0;    // 0: a free slot
    std::uint64_t top = 0;   // the newest seq accepted
    std::uint64_t mask = 0;  // bit i: seq top - i was accepted
    std::uint64_t last_use = 0;
  };
  using Server = std::array<Incarnation, kIncarnationsPerServer>;

  bool refuse(std::string *why, std::string sentence);

  std::unordered_map<std::uint16_t, Server> servers_;
  std::uint64_t uses_ = 0;  // the clock of last_use
  std::uint64_t refused_ = 0;
  std::size_t tracked_ = 0;
};

}  // namespace rocl::impl::peerproto
